"""HSPR source fit (HSPR_SPEC section 1): prior, item fit, residual factors, signature groups.

Everything here depends on the source response matrix only and is frozen during target
inference. Paper: seeds/000 section 3.1-3.2 and Appendix A; Eq. 19 for the loadings.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import special

P_CLIP = 1e-4
MAX_DIRECTIONS = 8


@dataclass(frozen=True)
class ZIBetaPrior:
    """Zero-inflated Beta prior on task success rates: pi * delta_0 + (1 - pi) * Beta(alpha, beta)."""

    pi: float
    alpha: float
    beta: float


def fit_zib_prior(h: np.ndarray, m: int) -> ZIBetaPrior:
    """Fit the zero-inflated Beta prior to per-task success counts by marginal likelihood.

    Parameters
    ----------
    h : int array, shape (n_tasks,)
        Number of source agents that resolved each task, in 0..m.
    m : int
        Number of source agents.

    Returns
    -------
    ZIBetaPrior. Parameters (logit pi, log alpha, log beta) by L-BFGS-B from fixed starts,
    alpha, beta in [1e-3, 1e3], logit pi in [-15, 15] (spec section 9).
    """
    from scipy import optimize, stats  # fit time only: a restored session does not import them

    counts = np.bincount(np.asarray(h, dtype=int), minlength=m + 1).astype(float)
    ks = np.arange(m + 1)

    def nll(x):
        lp, la, lb = x
        pi = special.expit(lp)
        ll = stats.betabinom.logpmf(ks, m, np.exp(la), np.exp(lb))
        l0 = np.logaddexp(np.log(pi), np.log1p(-pi) + ll[0])
        rest = np.log1p(-pi) + ll[1:]
        return -(counts[0] * l0 + counts[1:] @ rest)

    bounds = [(-15, 15), (np.log(1e-3), np.log(1e3)), (np.log(1e-3), np.log(1e3))]
    best = None
    for x0 in ([-2.0, 0.0, 0.0], [0.0, -1.0, 0.5], [-5.0, 0.5, 1.5], [1.0, -0.5, -0.5]):
        res = optimize.minimize(nll, np.array(x0), method="L-BFGS-B", bounds=bounds)
        if best is None or res.fun < best.fun:
            best = res
    lp, la, lb = best.x
    return ZIBetaPrior(float(special.expit(lp)), float(np.exp(la)), float(np.exp(lb)))


def initial_intercepts(h: np.ndarray, m: int, prior: ZIBetaPrior) -> np.ndarray:
    """b0_i = logit(p0_i), the posterior-mean success rate under the prior (spec 1.1, 9).

    For h_i = 0 the rate is shrunk by the posterior probability of the continuous component.
    Returns shape (n_tasks,).
    """
    from scipy import stats  # fit time only: a restored session does not import them

    a, b, pi = prior.alpha, prior.beta, prior.pi
    p0 = (h + a) / (m + a + b)
    bb0 = np.exp(stats.betabinom.logpmf(0, m, a, b))
    cont = (1 - pi) * bb0 / (pi + (1 - pi) * bb0)
    p0 = np.where(h == 0, a / (m + a + b) * cont, p0)
    return special.logit(np.clip(p0, P_CLIP, 1 - P_CLIP))


def source_abilities(M: np.ndarray) -> np.ndarray:
    """theta_s = logit((sum_i M_si + 0.5)/(N + 1)), standardised with the source mean and
    max(population sd, 0.25). Shape (n_sources,)."""
    n = M.shape[1]
    th = special.logit((M.sum(axis=1) + 0.5) / (n + 1))
    return (th - th.mean()) / max(th.std(), 0.25)


def fit_items(M: np.ndarray, theta: np.ndarray, b0: np.ndarray, n_steps: int = 16) -> tuple[np.ndarray, np.ndarray]:
    """Regularised 2PL item fit by clipped Newton steps, vectorised over items (spec 1.3).

    Minimises, per item, -loglik(sigmoid(b_i + a_i theta_s)) + (b_i - b0_i)^2 / 2 + (a_i - 1)^2
    from (b0, 1); each step component is clipped to +-0.5, then b in [-10, 10], a in [0.05, 5].

    Parameters
    ----------
    M : (n_sources, n_tasks) 0/1; theta : (n_sources,); b0 : (n_tasks,)

    Returns
    -------
    b, a : arrays of shape (n_tasks,)
    """
    M = M.astype(float)
    b = b0.astype(float).copy()
    a = np.ones_like(b)
    th = theta[:, None]
    th2 = th**2
    for _ in range(n_steps):
        p = special.expit(b[None, :] + th * a[None, :])
        r = p - M
        w = p * (1 - p)
        gb = r.sum(0) + (b - b0)
        ga = (r * th).sum(0) + 2 * (a - 1)
        hbb = w.sum(0) + 1
        hba = (w * th).sum(0)
        haa = (w * th2).sum(0) + 2
        det = hbb * haa - hba**2
        db = -(haa * gb - hba * ga) / det
        da = -(-hba * gb + hbb * ga) / det
        b = np.clip(b + np.clip(db, -0.5, 0.5), -10, 10)
        a = np.clip(a + np.clip(da, -0.5, 0.5), 0.05, 5)
    return b, a


def residual_loadings(M: np.ndarray, theta: np.ndarray, b: np.ndarray, a: np.ndarray,
                      k: int = MAX_DIRECTIONS) -> np.ndarray:
    """Residual factor loadings (Eq. 19), shape (n_tasks, k); directions beyond the rank of the
    centred residuals are zero.

    v_ik = V_ik S_kk / (sqrt(max(1, m - 1)) * max(dbar_i, 0.08)), dbar_i = mean_s p(1 - p).
    """
    m = M.shape[0]
    p = special.expit(b[None, :] + theta[:, None] * a[None, :])
    E = M - p
    E = E - E.mean(axis=0, keepdims=True)
    dbar = (p * (1 - p)).mean(axis=0)
    _, s, vt = np.linalg.svd(E, full_matrices=False)
    kk = min(k, len(s))
    v = np.zeros((M.shape[1], k))
    v[:, :kk] = vt[:kk].T * s[:kk] / (np.sqrt(max(1, m - 1)) * np.maximum(dbar, 0.08))[:, None]
    return v


def signature_groups(M: np.ndarray) -> tuple[np.ndarray, int]:
    """Group tasks with identical source columns; groups numbered by first occurrence.

    Returns ``labels`` (n_tasks,) in 0..G-1 and G.
    """
    _, first, inv = np.unique(M.T, axis=0, return_index=True, return_inverse=True)
    inv = inv.ravel()
    order = np.argsort(first, kind="stable")  # unique-row rank -> group number by first occurrence
    relabel = np.empty_like(order)
    relabel[order] = np.arange(len(order))
    return relabel[inv], len(first)


@dataclass(frozen=True, eq=False)
class SourceFit:
    """Everything HSPR learns from the source agents.

    Attributes (n = n_tasks, G = number of signature groups, K = 8 directions)
    ----------
    prior : ZIBetaPrior
    theta : (n_sources,) standardised source abilities
    b, a : (n,) item intercepts and slopes; v : (n, K) residual loadings
    labels : (n,) group of each task; group_b, group_a : (G,); group_v : (G, K); group_size : (G,)
    pass_rate : (n,) source pass rate of each task
    """

    prior: ZIBetaPrior
    theta: np.ndarray
    b: np.ndarray
    a: np.ndarray
    v: np.ndarray
    labels: np.ndarray
    group_b: np.ndarray
    group_a: np.ndarray
    group_v: np.ndarray
    group_size: np.ndarray
    pass_rate: np.ndarray

    @property
    def n_groups(self) -> int:
        return len(self.group_b)


def fit_source(M: np.ndarray) -> SourceFit:
    """Run HSPR_SPEC section 1 on a complete 0/1 source matrix of shape (n_sources, n_tasks).

    Raises ValueError for fewer than 2 source agents.
    """
    M = np.asarray(M)
    m, n = M.shape
    if m < 2:
        raise ValueError(f"HSPR needs at least 2 source agents, got {m}")
    h = M.sum(axis=0)
    prior = fit_zib_prior(h, m)
    b0 = initial_intercepts(h, m, prior)
    theta = source_abilities(M)
    b, a = fit_items(M, theta, b0)
    v = residual_loadings(M, theta, b, a)
    labels, G = signature_groups(M)
    size = np.bincount(labels, minlength=G).astype(float)

    def gmean(x):
        return np.stack([np.bincount(labels, weights=col, minlength=G) for col in np.atleast_2d(x.T)], -1) / size[:, None]

    return SourceFit(prior, theta, b, a, v, labels, gmean(b)[:, 0], gmean(a)[:, 0], gmean(v),
                     size.astype(int), h / m)
