"""HSPR decision (HSPR_SPEC section 5; paper section 3.5): predictive draws, median, calibration."""

from __future__ import annotations

import numpy as np

from ...numerics import ndtr
from .posterior import P_EPS

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
    multi : (n_multi,) int, the indices of the groups with more than one task
    U : (G,) unqueried counts; s_total : observed successes; n_tasks : N
    n_draws : int, draws (the spec's 131,072, HSPR_SPEC section 5); seed : int, the draws' seed
    group_uncertainty : bool, False for the no-group-uncertainty ablation (K_g ~ Binomial(U_g, p_g))
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
                # a float32 node rate within 1e-12 of 1 reads as 1.0, and Beta(a, 0) is refused (an audit:
                # `predictive="draws"` with a wide factor prior failed at its first estimate); the floor changes no
                # other parameter (1 - m is at least 2^-24 in float32 where m < 1), so earlier draws are unchanged
                q = rng.beta(mm * cc, np.maximum((1 - mm) * cc, P_EPS * cc))
            else:
                q = mm
            totals[lo:lo + len(rows)] += rng.binomial(Um[None, :], q).sum(axis=1)
    return totals / n_tasks


def count_cumulants(M: np.ndarray, conc_multi: np.ndarray, multi: np.ndarray, U: np.ndarray,
                    group_uncertainty: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean, variance and third cumulant of the unqueried success count at every node.

    Given node j, the unqueried count is K = sum_g K_g with independent K_g ~ BetaBinomial(U_g,
    A, F) (Eq. 9; A = c m, F = c (1 - m), c = A + F). Per group (closed forms of the beta-binomial):
    mean U m; variance U m (1 - m) (c + U) / (c + 1); third central moment
    U m (1 - m) (1 - 2 m) (c + U)(c + 2U) / ((c + 1)(c + 2)). Singleton groups and the no-group-
    uncertainty ablation have c = inf (binomial moments).

    Parameters
    ----------
    M : (J, G) predictive means m; conc_multi : (J, len(multi)) A + F of the groups ``multi``
    U : (G,) unqueried counts

    Returns
    -------
    mean, var, k3 : arrays (J,), in tasks (not divided by N).
    """
    U = np.asarray(U, dtype=float)
    v1 = M * (1 - M)
    mean = M @ U
    var = v1 @ U
    k3 = (v1 * (1 - 2 * M)) @ U
    if group_uncertainty and len(multi):
        Um = U[multi]
        live = Um > 1  # U = 1 is Bernoulli(m) whatever c is; U = 0 adds nothing
        if live.any():
            cols, Ul = multi[live], Um[live]
            c = conc_multi[:, live]
            vm = v1[:, cols] * Ul
            f2 = (c + Ul) / (c + 1)
            f3 = f2 * (c + 2 * Ul) / (c + 2)
            var = var + (vm * (f2 - 1)).sum(axis=1)
            k3 = k3 + (vm * (1 - 2 * M[:, cols]) * (f3 - 1)).sum(axis=1)
    return mean, var, k3


def mixture_cdf(t: np.ndarray, w: np.ndarray, mean: np.ndarray, var: np.ndarray, k3: np.ndarray) -> np.ndarray:
    """P(K <= t) for integer ``t`` (shape (Q,)) under the node mixture, shape (Q,); ``w``, ``mean``,
    ``var``, ``k3``: the nodes' weights and count cumulants, shape (J,) each (:func:`count_cumulants`).

    Each node's count is approximated by a one-term Edgeworth expansion with continuity
    correction, F_j(t) = Phi(x) - phi(x) gamma_j (x^2 - 1) / 6 with x = (t + 1/2 - mean_j) / sd_j
    and gamma_j = k3_j / sd_j^3 (Esseen's lattice expansion, Esseen 1945, Acta Math. 77; Petrov,
    *Sums of Independent Random Variables*, 1975, ch. VI: the lattice term vanishes at the
    half-integers), clipped to [0, 1]; a node with no variance is a step at its mean.
    """
    t = np.asarray(t, dtype=float)[:, None]
    sd = np.sqrt(np.maximum(var, 0.0))
    pos = sd > 0
    safe = np.where(pos, sd, 1.0)
    x = (t + 0.5 - mean[None, :]) / safe[None, :]
    gamma = np.where(pos, k3 / safe**3, 0.0)
    F = ndtr(x) - np.exp(-0.5 * x * x) * (gamma * (x * x - 1) / (6 * np.sqrt(2 * np.pi)))
    F = np.where(pos[None, :], np.clip(F, 0.0, 1.0), (t + 0.5 >= mean[None, :]).astype(float))
    return F @ w


def predictive_quantiles(w: np.ndarray, mean: np.ndarray, var: np.ndarray, k3: np.ndarray, s_total: float,
                         n_tasks: int, n_unqueried: int, probs) -> np.ndarray:
    """Quantiles of the posterior-predictive full score S (0-1 scale) without sampling, shape (len(probs),).

    S = (s_total + K)/N, K the unqueried success count, a mixture over nodes with weights
    ``w`` (J,) of per-node distributions with cumulants ``mean``, ``var``, ``k3`` (J,)
    (:func:`count_cumulants`): the distribution :func:`predictive_draws` samples. The
    p-quantile is the smallest count t in 0..``n_unqueried`` with P(K <= t) >= p
    (:func:`mixture_cdf`), found by bisection over the integers, so it lies on the same 1/N
    lattice as the draws' quantiles. It replaces the 131,072 draws of HSPR_SPEC section 5
    (``predictive='draws'`` keeps them); ``benchmarks/bench_estimate.py`` compares it with
    131,072 draws and with a 1,048,576-draw reference.
    """
    probs = np.atleast_1d(np.asarray(probs, dtype=float))
    lo = np.full(len(probs), -1.0)  # F(lo) < p since F(-1) = 0
    hi = np.full(len(probs), float(n_unqueried))  # F(hi) = 1 >= p
    while np.any(hi - lo > 1):
        mid = np.floor((lo + hi) / 2)
        below = mixture_cdf(mid, w, mean, var, k3) < probs
        lo = np.where(below, mid, lo)
        hi = np.where(below, hi, mid)
    return (s_total + hi) / n_tasks


def calibration_residual(w: np.ndarray, M: np.ndarray, n: np.ndarray, s: np.ndarray) -> float:
    """R_B = (sum s_g - sum n_g qbar_g)/B with qbar_g = sum_j w_j m_gj (Eq. 15); 0 when B = 0.

    ``w`` (J,) normalised weights, ``M`` (J, G) predictive means, ``n`` and ``s`` (G,) each group's
    queried count and successes; returns a float (0-1 scale).
    """
    B = n.sum()
    if B == 0:
        return 0.0
    qbar = (np.asarray(w, dtype=M.dtype) @ M).astype(float)  # summed in M's dtype (float32 node arrays)
    return float((s.sum() - n @ qbar) / B)


def moved_interval(lower: float, upper: float, shifts: tuple[float, ...], floor: float,
                   ceiling: float) -> tuple[float, float]:
    """The predictive interval ``[lower, upper]`` moved by ``shifts`` with the point it holds, within
    ``[floor, ceiling]`` (0-1 scale throughout).

    ``shifts`` is ``(S_hat - S_.5,)``, the calibration shift of Eq. 16, or for ``hspr_robust`` that
    and then its move to the blended point, added one after the other (so that the ends are the
    same floats as when each shift was added by its own step); ``floor`` and ``ceiling`` are the
    scores the recorded outcomes allow (:func:`hspr.session.feasible_bounds`: every unqueried task
    failed, or passed). An end that lies on one of them (within 1e-9) stays there: it is an atom of
    the predictive, the probability of at least 5 % that every unqueried task fails (or passes),
    which moving the point does not change; moved off it, the interval would leave out a score it
    gives that probability. This happens near full budget (a replay trial at 72 of 80 Terminal-Bench
    tasks: 15 of 25 ``hspr`` intervals missed their true score, each by at most 0.13 pp); at 5-20 % of
    a SWE-bench bank no end lies on an edge and the interval is the spec's quantiles moved by the
    shifts (clipped to the edges, where the point may lie beyond them).

    Returns
    -------
    (float, float)
        The moved ends, each clipped to ``[floor, ceiling]``.
    """
    lo, hi = float(lower), float(upper)
    stay_lo, stay_hi = lo <= floor + 1e-9, hi >= ceiling - 1e-9
    for shift in shifts:
        lo, hi = (lo if stay_lo else lo + shift), (hi if stay_hi else hi + shift)
    return float(min(max(lo, floor), ceiling)), float(min(max(hi, floor), ceiling))


def calibrate(base: float, residual: float, lam: float, n_queried: int, n_tasks: int) -> float:
    """The calibrated score S_hat = clip_[0,1](base + lam (1 - B/N) R_B) (paper Eq. 16; HSPR_SPEC
    section 5); equals the exact score at B = N.

    Parameters
    ----------
    base : float
        The decision's score, 0-1 (the posterior predictive median or mean).
    residual : float
        R_B (:func:`calibration_residual`, Eq. 15): the mean residual of the queried outcomes against
        their posterior predictive rates (0-1 units).
    lam : float
        lambda, the residual's weight (0: no calibration).
    n_queried, n_tasks : int
        B tasks queried of the bank's N.

    Returns
    -------
    float
        The calibrated score on the 0-1 scale.
    """
    return float(np.clip(base + lam * (1 - n_queried / n_tasks) * residual, 0.0, 1.0))
