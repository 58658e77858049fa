"""HSPR target posterior (HSPR_SPEC sections 2-3; paper section 3.3 and Appendix A).

Latent state z = (theta, u) in R^{1+r} with prior N(0, P^-1). Group g has baseline rate
p_g(z) = sigmoid(b_g + l_g' z) and success rate q_g | z ~ Beta(c p, c (1 - p)),
c = kappa / (p (1 - p)) (Eqs. 4-6). The posterior over z is represented by importance
weights on 8,192 scrambled-Sobol nodes drawn from a logistic-normal MAP proposal (Eq. 20).
"""

from __future__ import annotations

from types import MappingProxyType

import numpy as np

from ...numerics import expit, log_expit

P_EPS = 1e-12


def sobol_normal(dim: int, n: int, seed: int) -> np.ndarray:
    """Standard-normal QMC points: ``norm.ppf(Sobol(d, scramble=True, seed).random(n))``, shape (n, dim)
    (the importance nodes of HSPR_SPEC section 3 and Appendix A, Eq. 20; seed ``node_seed``, section 9).

    ``special.ndtri`` is ``norm.ppf`` (the same values). scipy is imported here, at fit time
    only: a session restored from a cached fit (whose nodes are stored) does not load it.
    """
    from scipy import special
    from scipy.stats import qmc

    u = qmc.Sobol(d=dim, scramble=True, seed=seed).random(n)
    return special.ndtri(np.clip(u, 1e-15, 1 - 1e-15))


#: |eta| beyond which :func:`rates` clips, per float size: exp(700) ~ 1e304 < the float64 maximum,
#: exp(80) ~ 6e34 < the float32 maximum (both far beyond the 1e-12 rate clip, |eta| ~ 27.6)
_ETA_MAX = MappingProxyType({8: 700.0, 4: 80.0})


def prior_precision(rank: int, gamma: float) -> np.ndarray:
    """Diagonal of P (Eq. 3), shape (1 + rank,): 0.25 on theta and gamma on each u_k if rank > 0, else
    gamma on theta (shape (1,))."""
    if rank == 0:
        return np.array([gamma], dtype=float)
    return np.concatenate([[0.25], np.full(rank, float(gamma))])


def rates(eta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """p = sigmoid(eta) and q = 1 - p = sigmoid(-eta), both clipped to [1e-12, 1 - 1e-12], from one exponential:
    the item model's success rates (Eq. 4) from its logits ``eta`` (any shape; p and q have that shape).

    With e = exp(-eta), p = 1/(1 + e) and q = e p, each within a few ulp of ``eta``'s float
    type (q is never formed as 1 - p, which would cancel). ``eta`` (float64 or float32; the
    rates keep its dtype) is first clipped to [-700, 700] (float32: [-80, 80]), where both
    rates are far beyond the clip and ``e`` cannot overflow. In float32 the upper clip
    1 - 1e-12 rounds to 1, while q keeps its relative accuracy down to 1e-12.
    """
    bound = _ETA_MAX[np.asarray(eta).dtype.itemsize]
    e = np.clip(eta, -bound, bound)
    np.negative(e, out=e)
    np.exp(e, out=e)
    p = e + 1
    np.reciprocal(p, out=p)
    e *= p
    return np.clip(p, P_EPS, 1 - P_EPS, out=p), np.clip(e, P_EPS, 1 - P_EPS, out=e)


def outcome_log_terms(p: np.ndarray, q: np.ndarray, kappa: float | None, prior_succ: np.ndarray,
                      prior_fail: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Log predictive probability of each outcome given the earlier ones of its group.

    The ordered product of these terms over a group's outcomes is the rising-factorial form of
    B(A_g, F_g) / B(c p, c (1 - p)) (Eq. 8). With ``c = kappa/(p q)`` a success after s' successes
    and f' failures has probability (c p + s')/(c + s' + f') = (p + s'/c)/(1 + n'/c), written
    with log1p so large concentrations stay exact. ``kappa=None`` is the no-group-uncertainty
    ablation (probability p or q).

    Parameters
    ----------
    p, q : arrays (J, T), the baseline rates of each outcome's group at every node
    prior_succ, prior_fail : (T,) successes / failures of the same group before each outcome
    y : (T,) outcomes 0/1, or pass rates in [0, 1] (repeated trials): a pass rate y enters as
        the quasi-likelihood ``y log P(success) + (1 - y) log P(failure)``, one fractional
        outcome per task (equal to the 0/1 term for y in {0, 1}).

    Returns
    -------
    (J, T) log probabilities, in the dtype of ``p`` (float64 or float32).
    """
    y = np.asarray(y, dtype=float)
    binary = bool(np.all((y == 0) | (y == 1)))
    dt = np.result_type(p.dtype, np.float32)
    prior_succ, prior_fail, yd = (np.asarray(v, dtype=dt) for v in (prior_succ, prior_fail, y))
    if kappa is None:
        if binary:
            return np.where(y[None, :] == 1, np.log(p), np.log(q))
        return yd[None, :] * np.log(p) + (1 - yd[None, :]) * np.log(q)
    inv_c = p * q / dt.type(kappa)
    norm = np.log1p((prior_succ + prior_fail)[None, :] * inv_c)
    succ, fail = p + prior_succ[None, :] * inv_c, q + prior_fail[None, :] * inv_c
    if binary:
        return np.log(np.where(y[None, :] == 1, succ, fail)) - norm
    return yd[None, :] * np.log(succ) + (1 - yd[None, :]) * np.log(fail) - norm


def observed_log_likelihood(p: np.ndarray, q: np.ndarray, kappa: float | None, pos: np.ndarray,
                            prior_succ: np.ndarray, prior_fail: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Log likelihood of all outcomes so far at every node: the sum of :func:`outcome_log_terms`, shape (J,).

    An outcome that is 0/1 and the only one of its group has term log p (success) or log q
    (failure), exactly: no earlier outcome of the group enters. Those terms are read off the
    group columns in one pass, log(where(success, p, q)) times a 0/1 column indicator; the
    other outcomes go through :func:`outcome_log_terms`. Equal to the per-outcome sum up to the
    order of the floating-point sum (the observed groups of a Full run are mostly single).

    Parameters
    ----------
    p, q : (J, G_obs) baseline rates of the observed groups; pos : (T,) column of each outcome
    prior_succ, prior_fail, y : (T,) as in :func:`outcome_log_terms`
    """
    pos = np.asarray(pos)
    y = np.asarray(y, dtype=float)
    counts = np.bincount(pos, minlength=p.shape[1])
    lone = (counts[pos] == 1) & ((y == 0) | (y == 1))
    total = np.zeros(p.shape[0])
    if lone.any():
        succ = np.zeros(p.shape[1], dtype=bool)
        succ[pos[lone]] = y[lone] == 1
        use = np.zeros(p.shape[1])
        use[pos[lone]] = 1.0
        logs = np.where(succ[None, :], p, q)
        np.log(logs, out=logs)
        total += logs.astype(float, copy=False) @ use  # summed in float64 (a mixed-dtype product is 5x slower)
    rest = ~lone
    if rest.any():
        cols = pos[rest]
        total += outcome_log_terms(p[:, cols], q[:, cols], kappa, np.asarray(prior_succ)[rest],
                                   np.asarray(prior_fail)[rest], y[rest]).sum(axis=1, dtype=float)
    return total


def predictive_means(p: np.ndarray, q: np.ndarray, kappa: float | None, n: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-node group predictive mean m = A/(A+F) and concentration A + F (Eq. 7).

    A = c p + s, F = c q + n - s, c = kappa/(p q). Shapes: p, q (J, G); n, s (G,).
    Returns m (J, G) and conc (J, G) (``inf`` without group uncertainty), in the dtype of ``p``.
    """
    if kappa is None:
        return p, np.full_like(p, np.inf)
    m = p * q
    np.divide(m.dtype.type(kappa), m, out=m)  # c, in place: these are (J, G_obs) passes
    conc = m + np.asarray(n, dtype=m.dtype)[None, :]
    m *= p
    m += np.asarray(s, dtype=m.dtype)[None, :]
    m /= conc
    return m, conc


def map_proposal(L: np.ndarray, b: np.ndarray, n: np.ndarray, s: np.ndarray, prec: np.ndarray,
                 kappa: float | None, max_iter: int = 100, tol: float = 1e-9) -> tuple[np.ndarray, np.ndarray]:
    """Logistic-normal MAP proposal N(mu, Sigma) over z (Appendix A).

    Each observed group gets a logit offset delta_g ~ N(0, 1/kappa); the joint posterior of
    (z, delta) under the Bernoulli likelihood of the observed outcomes is maximised by Newton
    with backtracking from 0. The delta block is diagonal, so each step solves through the
    Schur complement S = P + sum_g W_g kappa/(W_g + kappa) l_g l_g'. Sigma = S^-1 at the MAP.

    Parameters
    ----------
    L : (G_obs, d) loadings of the observed groups; b : (G_obs,) intercepts
    n, s : (G_obs,) observed counts and successes; prec : (d,) prior precision diagonal
    kappa : float, or None for no offsets (group-free model)

    Returns
    -------
    mu : (d,), Sigma : (d, d)

    Raises
    ------
    numpy.linalg.LinAlgError
        When S is singular, which needs a zero in ``prec`` (``HSPRConfig`` keeps gamma and the
        ability precision positive, so not from a validated configuration).
    """
    d = L.shape[1]
    z = np.zeros(d)
    delta = np.zeros(len(b))
    use_delta = kappa is not None

    def objective(z, delta):
        eta = b + L @ z + delta
        ll = s * log_expit(eta) + (n - s) * log_expit(-eta)
        val = ll.sum() - 0.5 * prec @ z**2
        if use_delta:
            val -= 0.5 * kappa * delta @ delta
        return val

    f = objective(z, delta)
    for _ in range(max_iter):
        eta = b + L @ z + delta
        sig = expit(eta)
        r = s - n * sig
        W = n * sig * (1 - sig)
        gz = L.T @ r - prec * z
        if use_delta:
            gd = r - kappa * delta
            shrink = W * kappa / (W + kappa)
            S = np.diag(prec) + (L * shrink[:, None]).T @ L
            rhs = gz - L.T @ (W * gd / (W + kappa))
            dz = np.linalg.solve(S, rhs)
            dd = (gd - W * (L @ dz)) / (W + kappa)
        else:
            S = np.diag(prec) + (L * W[:, None]).T @ L
            dz = np.linalg.solve(S, gz)
            dd = np.zeros_like(delta)
        step = 1.0
        while True:
            z_new, d_new = z + step * dz, delta + step * dd
            f_new = objective(z_new, d_new)
            if f_new >= f - 1e-12 or step < 1e-8:
                break
            step *= 0.5
        converged = step * (np.abs(dz).max(initial=0) + np.abs(dd).max(initial=0)) < tol
        z, delta, f = z_new, d_new, f_new
        if converged:
            break
    # precision at the MAP
    eta = b + L @ z + delta
    sig = expit(eta)
    W = n * sig * (1 - sig)
    shrink = W * kappa / (W + kappa) if use_delta else W
    S = np.diag(prec) + (L * shrink[:, None]).T @ L
    return z, np.linalg.inv(S)
