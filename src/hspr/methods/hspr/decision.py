"""HSPR decision (HSPR_SPEC section 5; paper section 3.5): predictive draws, median, calibration."""

from __future__ import annotations

import numpy as np

CHUNK = 8192


def predictive_draws(w: np.ndarray, M: np.ndarray, conc_multi: np.ndarray, multi: np.ndarray, U: np.ndarray,
                     s_total: float, n_tasks: int, n_draws: int, seed: int, group_uncertainty: bool = True) -> np.ndarray:
    """Posterior-predictive draws of the full score S (0-1 scale), shape (n_draws,).

    Each draw resamples a node by weight (``rng.choice(J, n_draws, p=w)`` with a fresh
    ``default_rng(seed)``), then for every group with unqueried tasks draws
    q_g ~ Beta(A_g, F_g) and K_g ~ Binomial(U_g, q_g) (Eq. 9); S = (sum s_g + sum K_g)/N.
    For U_g = 1 the beta-binomial is exactly Bernoulli(A/(A+F)) = Bernoulli(m_g), which is drawn
    directly (same distribution, far fewer random numbers). Without group uncertainty
    K_g ~ Binomial(U_g, p_g).

    Parameters
    ----------
    w : (J,) normalised weights; M : (J, G) predictive means m = A/(A+F)
    conc_multi : (J, len(multi)) A + F of the groups listed in ``multi`` (all groups with more
        than one task; groups with U_g > 1 must be among them)
    U : (G,) unqueried counts; s_total : observed successes; n_tasks : N
    """
    rng = np.random.default_rng(seed)
    idx = rng.choice(len(w), n_draws, p=w)
    single = U == 1
    big = U[multi] > 1
    many = multi[big]
    conc_many = conc_multi[:, big]
    Um = U[many].astype(np.int64)
    totals = np.full(n_draws, float(s_total))
    for lo in range(0, n_draws, CHUNK):
        rows = idx[lo:lo + CHUNK]
        Mr = M[rows]
        hits = rng.random(Mr.shape) < Mr
        hits &= single
        totals[lo:lo + len(rows)] += np.count_nonzero(hits, axis=1)
        if len(many):
            mm = Mr[:, many]
            if group_uncertainty:
                cc = conc_many[rows]
                q = rng.beta(mm * cc, (1 - mm) * cc)
            else:
                q = mm
            totals[lo:lo + len(rows)] += rng.binomial(Um[None, :], q).sum(axis=1)
    return totals / n_tasks


def calibration_residual(w: np.ndarray, M: np.ndarray, n: np.ndarray, s: np.ndarray) -> float:
    """R_B = (sum s_g - sum n_g qbar_g)/B with qbar_g = sum_j w_j m_gj (Eq. 15); 0 when B = 0."""
    B = n.sum()
    if B == 0:
        return 0.0
    qbar = w @ M
    return float((s.sum() - n @ qbar) / B)


def calibrate(base: float, residual: float, lam: float, n_queried: int, n_tasks: int) -> float:
    """S_hat = clip_[0,1](base + lam (1 - B/N) R_B) (Eq. 16); equals the exact score at B = N."""
    return float(np.clip(base + lam * (1 - n_queried / n_tasks) * residual, 0.0, 1.0))
