"""HSPR source fit (HSPR_SPEC section 1): prior, item fit, residual factors, signature groups.

Everything here depends on the source response matrix only and is frozen during target
inference. Paper: seeds/000 section 3.1-3.2 and Appendix A; Eq. 19 for the loadings.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...data.matrix import DataError
from ...numerics import expit

P_CLIP = 1e-4
MAX_DIRECTIONS = 8
#: the spec's item-prior precisions (section 1.3): intercept toward b0, slope toward 1
PREC_B = 1.0
PREC_A = 2.0


@dataclass(frozen=True)
class ZIBetaPrior:
    """Zero-inflated Beta prior on task success rates: pi * delta_0 + (1 - pi) * Beta(alpha, beta)
    (HSPR_SPEC section 1; :func:`fit_zib_prior` fits it).

    Attributes
    ----------
    pi : float
        Weight of the point mass at rate 0 (tasks no agent can solve), in [0, 1].
    alpha, beta : float
        Parameters of the Beta part, each in [1e-3, 1e3] (the fit's bounds).
    """

    pi: float
    alpha: float
    beta: float


def fit_zib_prior(h: np.ndarray, m: int | np.ndarray) -> ZIBetaPrior:
    """Fit the zero-inflated Beta prior to per-task success counts by marginal likelihood.

    Parameters
    ----------
    h : int array, shape (n_tasks,)
        Number of source agents that resolved each task, in 0..m (or sums of pass rates over
        repeated trials, fractional).
    m : int, or int array of shape (n_tasks,)
        Number of source agents (that ran each task, when some cells are missing; tasks no
        source ran carry no information and are left out).

    Returns
    -------
    ZIBetaPrior. Parameters (logit pi, log alpha, log beta) by L-BFGS-B from fixed starts,
    alpha, beta in [1e-3, 1e3], logit pi in [-15, 15] (spec section 9), with the analytic
    gradient (digamma terms): with finite differences the 3-parameter fit took 70-300 ms, mostly
    the optimiser's own per-step cost times four evaluations per step.
    """
    from scipy import optimize, special  # fit time only: a restored session does not import scipy

    fractional = bool(np.any(np.asarray(h) != np.round(h)))  # sums of pass rates (repeated trials)
    if np.ndim(m) == 0 and not fractional:  # complete 0/1 matrix: the spec's histogram of counts over 0..m
        counts = np.bincount(np.asarray(h, dtype=int), minlength=int(m) + 1).astype(float)
        ks, ns = np.arange(int(m) + 1, dtype=float), np.full(int(m) + 1, float(m))
    else:  # per-task runs or fractional counts: one term per distinct (successes, runs) pair
        h = np.asarray(h, dtype=float)
        runs = np.broadcast_to(np.asarray(m), h.shape)
        ran = runs > 0
        pairs, counts = np.unique(np.column_stack([h[ran], runs[ran]]), axis=0, return_counts=True)
        ks, ns, counts = pairs[:, 0].astype(float), pairs[:, 1].astype(float), counts.astype(float)
    # a fractional count takes the beta-binomial log pmf continued to real k with gamma functions; a task
    # every source failed on every trial (k = 0) may still come from the point mass at 0
    zero = ks == 0
    c0, c1 = counts[zero], counts[~zero]
    k_term = special.gammaln(ns + 1) - special.gammaln(ks + 1) - special.gammaln(ns - ks + 1)

    def nll(x):
        """Negative log marginal likelihood and its gradient in (logit pi, log alpha, log beta)."""
        lp, la, lb = x
        pi, a, b = expit(lp), np.exp(la), np.exp(lb)
        ll = k_term + special.betaln(ks + a, ns - ks + b) - special.betaln(a, b)  # beta-binomial log pmf
        l_cont = np.log1p(-pi) + ll  # log of the continuous part's share of each term
        l_zero = np.logaddexp(np.log(pi), l_cont[zero])  # k = 0: point mass or continuous part
        share = np.ones_like(ll)  # d(term)/d(ll): the posterior share of the continuous part
        share[zero] = np.exp(l_cont[zero] - l_zero)
        psi_ab = special.digamma(a + b) - special.digamma(ns + a + b)
        d_a = a * (special.digamma(ks + a) - special.digamma(a) + psi_ab)
        d_b = b * (special.digamma(ns - ks + b) - special.digamma(b) + psi_ab)
        w = counts * share
        g_lp = c0 @ ((1 - pi) - share[zero]) - pi * c1.sum()  # d/d(logit pi) of log(pi + (1-pi)e^ll), log(1-pi)
        return -(c0 @ l_zero + c1 @ l_cont[~zero]), -np.array([g_lp, w @ d_a, w @ d_b])

    bounds = [(-15, 15), (np.log(1e-3), np.log(1e3)), (np.log(1e-3), np.log(1e3))]
    best = None
    for x0 in ([-2.0, 0.0, 0.0], [0.0, -1.0, 0.5], [-5.0, 0.5, 1.5], [1.0, -0.5, -0.5]):
        res = optimize.minimize(nll, np.array(x0), method="L-BFGS-B", jac=True, bounds=bounds)
        if best is None or res.fun < best.fun:
            best = res
    lp, la, lb = best.x
    return ZIBetaPrior(float(expit(lp)), float(np.exp(la)), float(np.exp(lb)))


def initial_intercepts(h: np.ndarray, m: int | np.ndarray, prior: ZIBetaPrior) -> np.ndarray:
    """b0_i = logit(p0_i), the posterior-mean success rate under the prior (spec 1.1, 9).

    For h_i = 0 the rate is shrunk by the posterior probability of the continuous component.
    ``m`` is the number of sources, or per task the number that ran it (a task no source ran
    gets the prior mean ``(1 - pi) alpha / (alpha + beta)``). ``h`` (n_tasks,) holds each task's
    source successes (pass rates summed), ``m`` an int or (n_tasks,); returns shape (n_tasks,).
    """
    from scipy import special, stats  # fit time only: a restored session does not import scipy

    a, b, pi = prior.alpha, prior.beta, prior.pi
    p0 = (h + a) / (m + a + b)
    bb0 = np.exp(stats.betabinom.logpmf(0, m, a, b))
    cont = (1 - pi) * bb0 / (pi + (1 - pi) * bb0)
    p0 = np.where(h == 0, a / (m + a + b) * cont, p0)
    return special.logit(np.clip(p0, P_CLIP, 1 - P_CLIP))


def source_abilities(M: np.ndarray, obs: np.ndarray | None = None) -> np.ndarray:
    """theta_s = logit((sum_i M_si + 0.5)/(N + 1)), standardised with the source mean and
    max(population sd, 0.25) (HSPR_SPEC section 1, step 2). ``M`` (n_sources, n_tasks) holds 0/1
    outcomes or pass rates; returns shape (n_sources,). With ``obs`` (bool, M's shape; False = no
    run), N is the number of tasks the agent ran and only those count."""
    from scipy import special  # fit time only

    n = M.shape[1] if obs is None else obs.sum(axis=1)
    th = special.logit(((M if obs is None else M * obs).sum(axis=1) + 0.5) / (n + 1))
    return (th - th.mean()) / max(th.std(), 0.25)


def fit_items(M: np.ndarray, theta: np.ndarray, b0: np.ndarray, n_steps: int = 16, prec_b: float = PREC_B,
              prec_a: float = PREC_A, obs: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Regularised 2PL item fit by clipped Newton steps, vectorised over items (spec 1.3).

    Minimises, per item, -loglik(sigmoid(b_i + a_i theta_s)) + prec_b (b_i - b0_i)^2 / 2
    + prec_a (a_i - 1)^2 / 2 from (b0, 1); each step component is clipped to +-0.5, then b in
    [-10, 10], a in [0.05, 5]. The spec's precisions are ``prec_b = 1``, ``prec_a = 2``.

    Parameters
    ----------
    M : (n_sources, n_tasks) 0/1; theta : (n_sources,); b0 : (n_tasks,)
    n_steps : int
        Newton steps (the spec's 16).
    prec_b, prec_a : float > 0
        Prior precisions of the intercept (toward ``b0``) and of the slope (toward 1).
    obs : bool array of M's shape, optional
        False where the source has no run on the task: the cell is left out of the likelihood
        (a task no source ran keeps its prior, b = b0 and a = 1).

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
        p = expit(b[None, :] + th * a[None, :])
        r = p - M
        w = p * (1 - p)
        if obs is not None:
            r, w = r * obs, w * obs
        gb = r.sum(0) + prec_b * (b - b0)
        ga = (r * th).sum(0) + prec_a * (a - 1)
        hbb = w.sum(0) + prec_b
        hba = (w * th).sum(0)
        haa = (w * th2).sum(0) + prec_a
        det = hbb * haa - hba**2
        db = -(haa * gb - hba * ga) / det
        da = -(-hba * gb + hbb * ga) / det
        b = np.clip(b + np.clip(db, -0.5, 0.5), -10, 10)
        a = np.clip(a + np.clip(da, -0.5, 0.5), 0.05, 5)
    return b, a


def residual_loadings(M: np.ndarray, theta: np.ndarray, b: np.ndarray, a: np.ndarray,
                      k: int = MAX_DIRECTIONS, obs: np.ndarray | None = None) -> np.ndarray:
    """Residual factor loadings (Eq. 19), shape (n_tasks, k); directions beyond the rank of the
    centred residuals are zero.

    v_ik = V_ik S_kk / (sqrt(max(1, m - 1)) * max(dbar_i, 0.08)), dbar_i = mean_s p(1 - p).
    With ``obs`` (False = no run) a missing residual is set to its column's mean over the runs
    before centring (it adds nothing to the column's spread).

    Parameters
    ----------
    M : (n_sources, n_tasks) 0/1 outcomes or pass rates; theta : (n_sources,) abilities
    b, a : (n_tasks,) fitted item intercepts and slopes
    k : int, directions kept; obs : bool array of M's shape, optional
    """
    m = M.shape[0]
    p = expit(b[None, :] + theta[:, None] * a[None, :])
    E = M - p
    if obs is None:
        E = E - E.mean(axis=0, keepdims=True)
    else:
        E = np.where(obs, E - (E * obs).sum(axis=0) / np.maximum(obs.sum(axis=0), 1), 0.0)
    dbar = (p * (1 - p)).mean(axis=0)
    _, s, vt = np.linalg.svd(E, full_matrices=False)
    kk = min(k, len(s))
    v = np.zeros((M.shape[1], k))
    v[:, :kk] = vt[:kk].T * s[:kk] / (np.sqrt(max(1, m - 1)) * np.maximum(dbar, 0.08))[:, None]
    return v


def signature_groups(M: np.ndarray) -> tuple[np.ndarray, int]:
    """Group tasks with identical source columns; groups numbered by first occurrence
    (HSPR_SPEC section 1, step 5, and section 9).

    ``M`` (n_sources, n_tasks); returns ``labels`` (n_tasks,) in 0..G-1 and G.
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

    def __post_init__(self) -> None:
        """The arrays are shared by every session of the fitted model (and by ``with_config``
        copies): read-only, so a stray in-place write fails instead of changing later runs (an audit)."""
        for name in ("theta", "b", "a", "v", "labels", "group_b", "group_a", "group_v", "group_size", "pass_rate"):
            arr = getattr(self, name)
            if isinstance(arr, np.ndarray):
                arr.setflags(write=False)

    @property
    def n_groups(self) -> int:
        """G, the number of signature groups (tasks with identical source outcomes)."""
        return len(self.group_b)


def fit_source(M: np.ndarray, prec_b: float = PREC_B, prec_a: float = PREC_A,
               missing: np.ndarray | None = None, item_prior_scale: float = 1.0) -> SourceFit:
    """Run HSPR_SPEC section 1 on a 0/1 source matrix of shape (n_sources, n_tasks).

    ``M`` may hold pass rates in [0, 1] (repeated trials, ``ResponseMatrix.rates()``): each
    cell is then one fractional outcome in every likelihood (quasi-likelihood; the item fit,
    abilities and residuals take it as is, the prior's success counts are sums of pass rates,
    tasks group by identical columns of rates).

    ``prec_b``, ``prec_a``: item-prior precisions of :func:`fit_items` (the spec's 1 and 2),
    both multiplied by ``item_prior_scale`` (:attr:`HSPRConfig.item_prior_scale`).
    ``missing`` (bool, M's shape, True = no run; None or all False = complete, the spec
    exactly): missing cells are left out of every likelihood: the prior is fitted on each
    task's runs, abilities on each agent's runs, the item fit skips them, residuals are
    centred over the runs, and a missing cell is its own value in the task signatures (tasks
    group only with tasks missing for the same sources). A task no source ran keeps the prior.

    Raises DataError (a ValueError) for fewer than 2 source agents.
    """
    M = np.asarray(M)
    m, n = M.shape
    if m < 2:
        raise DataError(f"HSPR needs at least 2 source agents, got {m}")
    obs = None if missing is None or not np.any(missing) else ~np.asarray(missing, dtype=bool)
    if obs is None:
        h, runs = M.sum(axis=0), m
    else:
        M = np.where(obs, M, 0)
        h, runs = M.sum(axis=0), obs.sum(axis=0)
    prior = fit_zib_prior(h, runs)
    b0 = initial_intercepts(h, runs, prior)
    theta = source_abilities(M, obs)
    b, a = fit_items(M, theta, b0, prec_b=prec_b * item_prior_scale, prec_a=prec_a * item_prior_scale, obs=obs)
    v = residual_loadings(M, theta, b, a, obs=obs)
    labels, G = signature_groups(M if obs is None else np.where(obs, M, 2))
    size = np.bincount(labels, minlength=G).astype(float)

    def gmean(x):
        return np.stack([np.bincount(labels, weights=col, minlength=G) for col in np.atleast_2d(x.T)], -1) / size[:, None]

    pass_rate = h / runs if obs is None else np.where(runs > 0, h / np.maximum(runs, 1), expit(b0))
    return SourceFit(prior, theta, b, a, v, labels, gmean(b)[:, 0], gmean(a)[:, 0], gmean(v),
                     size.astype(int), pass_rate)
