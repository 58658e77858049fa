"""Four-parameter logistic (4PL) item bank, fitted by joint MAP on a source response matrix.

Model (PTA-IRT paper, ``seeds/002``, Eq. 2)::

    P(y_si = 1 | theta_s) = c_i + (d_i - c_i) * sigmoid(a_i * (theta_s - b_i))

with discrimination ``a_i > 0``, difficulty ``b_i``, guessing (lower asymptote) ``c_i`` and
feasibility ceiling (upper asymptote, ``1 - slip``) ``d_i``. Shared by the ATLAS and PTA-IRT
ports (HSPR_SPEC section 8); :func:`fit_4pl_cached` fits a bank once per source matrix
(keyed on :meth:`ResponseMatrix.digest`), so both methods reuse one fit per fold.

Parametrisation and priors (weak; the MAP objective is the negative log posterior in the
unconstrained coordinates below, so each prior is stated in those coordinates):

- ``theta_s ~ N(0, 1)``;
- ``b_i ~ N(prior_b_mean, prior_b_sd**2)`` (default N(0, 3^2));
- ``log a_i ~ N(prior_log_a_mean, prior_log_a_sd**2)`` (default N(0, 1));
- ``c_i = c_max * u_i`` with ``u_i = sigmoid(g_i)``, ``u_i ~ Beta(*c_prior)`` expressed in the
  logit coordinate ``g_i`` (log density ``alpha*log u + beta*log(1-u)``, mode ``alpha/(alpha+beta)``);
  default ``c_max = 0.5``, ``Beta(0.5, 20)``;
- ``d_i = 1 - slip_max * v_i``, ``v_i = sigmoid(h_i)``, ``v_i ~ Beta(*slip_prior)`` likewise
  (default ``slip_max = 0.5``, ``Beta(0.5, 20)``). Hence ``0 < c_i < 0.5 < d_i < 1``.

The priors keep every parameter finite for tasks that no source (or every source) solved: their
difficulty drifts a few prior sds past the sources' abilities and their asymptote shrinks toward
0 (or 1), which is what makes their predicted probabilities sane.

After the fit the abilities are rescaled to mean 0 and population sd 1 over the sources
(``theta' = (theta - mu)/sd``, ``b' = (b - mu)/sd``, ``a' = a*sd``; probabilities unchanged), so a
N(0, 1) prior on a target's ability matches the source population (HSPR_SPEC section 10: without
it one Full fold went from 1.57 to 3.45 pp for PTA-IRT).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from ..data.matrix import ResponseMatrix
from ..parallel import single_thread_blas

__all__ = [
    "FourPLBank",
    "FourPLSettings",
    "fisher_info_4pl",
    "fit_4pl_cache_clear",
    "fit_4pl_cache_info",
    "inner_banks",
    "inner_split",
    "map_abilities",
    "fit_4pl",
    "fit_4pl_cached",
    "prob_4pl",
]

_P_CLIP = 1e-12


@dataclass(frozen=True)
class FourPLSettings:
    """Priors and optimiser settings of the joint MAP 4PL fit (see the module docstring).

    Attributes
    ----------
    prior_b_mean, prior_b_sd : float
        Normal prior on difficulty ``b`` (ability units before rescaling).
    prior_log_a_mean, prior_log_a_sd : float
        Normal prior on ``log a``.
    c_max : float
        Upper bound of the guessing asymptote ``c`` (in (0, 1)).
    c_prior : (float, float)
        Beta(alpha, beta) prior on ``c / c_max`` (alpha, beta > 0).
    slip_max : float
        Upper bound of the slip ``1 - d`` (in (0, 1)); ``c_max + slip_max <= 1`` keeps ``c < d``.
    slip_prior : (float, float)
        Beta(alpha, beta) prior on ``(1 - d) / slip_max``.
    max_iter : int
        L-BFGS-B iteration cap.
    gtol, ftol : float
        L-BFGS-B projected-gradient and relative-decrease tolerances.
    rescale : bool
        Rescale source abilities to mean 0, sd 1 after the fit (keep True; see module docstring).
    """

    prior_b_mean: float = 0.0
    prior_b_sd: float = 3.0
    prior_log_a_mean: float = 0.0
    prior_log_a_sd: float = 1.0
    c_max: float = 0.5
    c_prior: tuple[float, float] = (0.5, 20.0)
    slip_max: float = 0.5
    slip_prior: tuple[float, float] = (0.5, 20.0)
    max_iter: int = 3000
    gtol: float = 1e-5
    ftol: float = 1e-9
    rescale: bool = True

    def __post_init__(self) -> None:
        for name in ("prior_b_sd", "prior_log_a_sd"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)!r}")
        if not (0 < self.c_max < 1 and 0 < self.slip_max < 1 and self.c_max + self.slip_max <= 1):
            raise ValueError(f"need 0 < c_max, slip_max < 1 and c_max + slip_max <= 1, got {self.c_max}, {self.slip_max}")
        for name in ("c_prior", "slip_prior"):
            al, be = getattr(self, name)
            if al <= 0 or be <= 0:
                raise ValueError(f"{name} Beta parameters must be > 0, got {(al, be)}")
            object.__setattr__(self, name, (float(al), float(be)))


# ----------------------------------------------------------------------------- model functions
def prob_4pl(theta, a, b, c, d) -> np.ndarray:
    """4PL success probability ``c + (d - c) * sigmoid(a (theta - b))``.

    Parameters
    ----------
    theta : float or array, shape (n_theta,)
        Abilities.
    a, b, c, d : arrays, shape (n_items,)
        Item parameters.

    Returns
    -------
    array of shape (n_items,) for a scalar ``theta``, else (n_theta, n_items); values in (0, 1).
    """
    from scipy.special import expit  # here, not at import: a restored session needs no scipy

    theta = np.asarray(theta, dtype=float)
    z = a * (theta[..., None] - b) if theta.ndim else a * (theta - b)
    return c + (d - c) * expit(z)


def fisher_info_4pl(theta, a, b, c, d) -> np.ndarray:
    """Item Fisher information of the 4PL at ``theta`` (closed form, PTA-IRT Eq. 4).

    ``I(theta) = a^2 (p - c)^2 (d - p)^2 / ((d - c)^2 p (1 - p))``, equivalently
    ``(dp/dtheta)^2 / (p (1 - p))`` with ``dp/dtheta = a (d - c) s (1 - s)``, ``s = sigmoid(a(theta - b))``.

    Parameters
    ----------
    theta : float or array, shape (n_theta,)
    a, b, c, d : arrays, shape (n_items,)

    Returns
    -------
    array of shape (n_items,) for a scalar ``theta``, else (n_theta, n_items); values >= 0.
    """
    from scipy.special import expit

    theta = np.asarray(theta, dtype=float)
    z = a * (theta[..., None] - b) if theta.ndim else a * (theta - b)
    s = expit(z)
    s1 = expit(-z)
    p = c + (d - c) * s
    q = (1 - d) + (d - c) * s1  # 1 - p, computed without cancellation
    dp = a * (d - c) * s * s1
    return dp * dp / np.maximum(p * q, _P_CLIP)


# ----------------------------------------------------------------------------- the bank
@dataclass(frozen=True, eq=False)
class FourPLBank:
    """A fitted 4PL item bank (picklable; arrays are read-only).

    Attributes
    ----------
    tasks : tuple of str, length n_tasks
    a, b, c, d : arrays, shape (n_tasks,)
        Discrimination, difficulty, guessing and ceiling, on the rescaled ability scale.
    theta : array, shape (n_sources,)
        Source abilities (mean 0, population sd 1 when ``settings.rescale``).
    agents : tuple of str, length n_sources
    settings : FourPLSettings
    neg_log_post : float
        Final value of the MAP objective.
    n_iter : int
        L-BFGS-B iterations used.
    converged : bool
        L-BFGS-B success flag.
    """

    tasks: tuple[str, ...]
    a: np.ndarray
    b: np.ndarray
    c: np.ndarray
    d: np.ndarray
    theta: np.ndarray
    agents: tuple[str, ...] = ()
    settings: FourPLSettings = field(default_factory=FourPLSettings)
    neg_log_post: float = float("nan")
    n_iter: int = 0
    converged: bool = True

    def __post_init__(self) -> None:
        for name in ("a", "b", "c", "d", "theta"):
            arr = np.array(getattr(self, name), dtype=float)
            arr.setflags(write=False)
            object.__setattr__(self, name, arr)
        n = len(self.tasks)
        if not (self.a.shape == self.b.shape == self.c.shape == self.d.shape == (n,)):
            raise ValueError(f"item parameter arrays must all have shape ({n},)")

    @property
    def n_tasks(self) -> int:
        """Number of tasks (items) of the bank."""
        return len(self.tasks)

    def prob(self, theta) -> np.ndarray:
        """Success probabilities at ``theta``: shape (n_tasks,) or (n_theta, n_tasks)."""
        return prob_4pl(theta, self.a, self.b, self.c, self.d)

    def info(self, theta) -> np.ndarray:
        """Fisher information at ``theta``: shape (n_tasks,) or (n_theta, n_tasks)."""
        return fisher_info_4pl(theta, self.a, self.b, self.c, self.d)

    def loglik_theta(self, theta, idx, y) -> np.ndarray:
        """Log-likelihood of outcomes ``y`` on task columns ``idx`` at each ability in ``theta``.

        Parameters
        ----------
        theta : array, shape (n_theta,)
        idx : int array, shape (n_obs,)
        y : array of 0/1 outcomes or pass rates, shape (n_obs,), or (n_agents, n_obs): every agent's at once

        Returns
        -------
        array, shape (n_theta,), or (n_agents, n_theta) for a 2-D ``y``
        """
        theta = np.atleast_1d(np.asarray(theta, float))
        idx = np.asarray(idx, dtype=int)
        y = np.asarray(y, dtype=float)
        if idx.size == 0:
            return np.zeros(y.shape[:-1] + theta.shape)
        p = np.clip(prob_4pl(theta, self.a[idx], self.b[idx], self.c[idx], self.d[idx]), _P_CLIP, 1 - _P_CLIP)
        if y.ndim == 2:  # one matrix product for many agents (map_abilities' start)
            return y @ np.log(p).T + (1 - y) @ np.log1p(-p).T
        return (y * np.log(p) + (1 - y) * np.log1p(-p)).sum(axis=-1)


# ----------------------------------------------------------------------------- the fit
def _unpack(x, m, n):
    return x[:m], x[m:m + n], x[m + n:m + 2 * n], x[m + 2 * n:m + 3 * n], x[m + 3 * n:]


def _cell_loglik(Y, c, dc, one_minus_d, s, s1, binary: bool, W=1.0) -> tuple[np.ndarray, np.ndarray]:
    """Each cell's log-likelihood and its derivative in the success probability p = c + dc * s,
    times the cell's weight ``W`` (the fit's: 0 for a missing cell, else the multiplicity of a
    distinct column; 1 for the abilities).

    ``Y`` holds 0/1 outcomes (``binary``) or pass rates in [0, 1]; ``c``, ``dc`` (= d - c) and
    ``one_minus_d`` (= 1 - d, passed as such so that q = 1 - p is formed without cancellation) are
    the items' asymptotes, broadcast against ``s`` = logistic(a (theta - b)) and ``s1`` = 1 - s,
    all of one shape (cells). A 0/1 cell contributes log of its outcome's own probability (p for a
    success, q for a failure), a pass rate ``y log p + (1 - y) log q`` (the Bernoulli
    quasi-likelihood; an audit found a rate above 0 once scored as a success while the gradient used
    2y - 1); probabilities are floored at ``_P_CLIP``. The one likelihood of the fit
    (:func:`_objective`) and of the abilities (:func:`map_abilities`); PTA-IRT (``seeds/002``, Eq. 2).
    """
    if binary:
        obs = np.maximum(np.where(Y > 0, c + dc * s, one_minus_d + dc * s1), _P_CLIP)
        return W * np.log(obs), W * (2.0 * Y - 1.0) / obs
    p = np.maximum(c + dc * s, _P_CLIP)
    q = np.maximum(one_minus_d + dc * s1, _P_CLIP)
    return W * (Y * np.log(p) + (1.0 - Y) * np.log(q)), W * (Y / p - (1.0 - Y) / q)


def _objective(x, Y, W, m, n, st: FourPLSettings, k=None, binary=True):
    """Negative log posterior and its gradient (vectorised over the (m, n) cells).

    ``k`` (shape (n,), optional) gives each column a multiplicity: column ``i`` stands for
    ``k[i]`` identical task columns sharing one parameter set (likelihood and item priors are
    multiplied by ``k[i]``; the result equals the full objective with those parameters tied).
    With ``binary`` False, ``Y`` holds pass rates in [0, 1] and each cell contributes
    ``y log p + (1 - y) log(1 - p)`` (the fractional outcome of the same likelihood).
    """
    from scipy.special import expit, log_expit

    if k is None:
        k = np.ones(n)
    theta, b, la, gc, gs = _unpack(x, m, n)
    a = np.exp(la)
    uc, us = expit(gc), expit(gs)
    c = st.c_max * uc
    one_minus_d = st.slip_max * us
    d = 1.0 - one_minus_d
    z = a * (theta[:, None] - b)
    s = expit(z)
    s1 = 1.0 - s
    dc = d - c
    ll, r = _cell_loglik(Y, c, dc, one_minus_d, s, s1, binary, W)
    gz = r * dc * s * s1  # d loglik / d z
    g_theta = (gz * a).sum(axis=1)
    gz_sum = gz.sum(axis=0)
    g_b = -a * gz_sum
    g_la = (gz * z).sum(axis=0)
    g_c = (r * s1).sum(axis=0)  # dp/dc = 1 - s
    g_d = (r * s).sum(axis=0)  # dp/dd = s
    g_gc = g_c * st.c_max * uc * (1 - uc)
    g_gs = -g_d * st.slip_max * us * (1 - us)

    # priors (log densities in the optimised coordinates)
    ac, bc = st.c_prior
    as_, bs = st.slip_prior
    lp = (-0.5 * (theta ** 2).sum()
          + np.dot(k, -0.5 * ((b - st.prior_b_mean) / st.prior_b_sd) ** 2
                   - 0.5 * ((la - st.prior_log_a_mean) / st.prior_log_a_sd) ** 2
                   + ac * log_expit(gc) + bc * log_expit(-gc)
                   + as_ * log_expit(gs) + bs * log_expit(-gs)))
    g_theta = g_theta - theta
    g_b = g_b - k * (b - st.prior_b_mean) / st.prior_b_sd ** 2
    g_la = g_la - k * (la - st.prior_log_a_mean) / st.prior_log_a_sd ** 2
    g_gc = g_gc + k * (ac * (1 - uc) - bc * uc)
    g_gs = g_gs + k * (as_ * (1 - us) - bs * us)
    f = -(ll.sum() + lp)
    grad = -np.concatenate([g_theta, g_b, g_la, g_gc, g_gs])
    return f, grad


def _logit(p):
    return np.log(p) - np.log1p(-p)


def fit_4pl(source: ResponseMatrix, settings: FourPLSettings | None = None,
            init: FourPLBank | None = None) -> FourPLBank:
    """Joint MAP fit of a 4PL item bank and the source abilities (L-BFGS-B, analytic gradient).

    Parameters
    ----------
    source : ResponseMatrix, shape (n_sources, n_tasks)
        Source agents' 0/1 outcomes, or pass rates over repeated trials (each a fractional outcome
        of the Bernoulli likelihood, a quasi-likelihood, as HSPR takes them); missing cells (if
        masked) are left out of the likelihood.
    settings : FourPLSettings, optional
        Priors and optimiser settings (defaults as documented in the module docstring).
    init : FourPLBank, optional
        Warm start: item parameters of a bank on the same tasks (abilities of agents it knows
        are reused, others start at their standardised logit score).

    Returns
    -------
    FourPLBank
        Item parameters on the rescaled ability scale (source abilities mean 0, sd 1).

    Raises
    ------
    ValueError
        If ``init`` has different tasks.

    Notes
    -----
    The objective is the negative log posterior of the model and priors in the module
    docstring; all work is vectorised over the ``(n_sources, n_distinct_columns)`` cells:
    task columns with identical source outcomes (e.g. the many tasks no source solved) share one
    parameter set, weighted by their multiplicity (their MAP is the same; on Full this cuts
    2294 columns to about 450). L-BFGS-B runs with BLAS limited to one thread (threadpoolctl,
    installed with scikit-learn). Source: PTA-IRT (``seeds/002``, Eq. 2) for the model;
    HSPR_SPEC section 10 for the rescaling.
    """
    from scipy.optimize import minimize
    from scipy.special import expit

    st = settings or FourPLSettings()
    Yfull = np.asarray(source.rates(), dtype=float)  # 0/1, or pass rates over repeated trials
    Wfull = np.ones_like(Yfull) if source.missing is None else (~source.missing).astype(float)
    m = Yfull.shape[0]
    # Identical source columns (same outcomes, same missing cells) have identical MAP
    # parameters: fit one parameter set per distinct column, weighted by its multiplicity.
    key = np.concatenate([Yfull, Wfull], axis=0).T
    _, first, inv, counts = np.unique(key, axis=0, return_index=True, return_inverse=True, return_counts=True)
    inv = inv.ravel()
    Y, W = Yfull[:, first], Wfull[:, first]
    k = counts.astype(float)
    n = Y.shape[1]
    # starting point: standardised logit scores, difficulty from smoothed pass rates
    score = ((Yfull * Wfull).sum(1) + 0.5) / (Wfull.sum(1) + 1.0)
    t0 = _logit(score)
    t0 = (t0 - t0.mean()) / max(t0.std(), 0.25)
    rate = ((Y * W).sum(0) + 0.5) / (W.sum(0) + 1.0)
    b0 = np.clip(-_logit(rate), -6, 6)
    la0 = np.full(n, st.prior_log_a_mean)
    ac, bc = st.c_prior
    as_, bs = st.slip_prior
    gc0 = np.full(n, _logit(min(max(ac / (ac + bc), 1e-3), 1 - 1e-3)))
    gs0 = np.full(n, _logit(min(max(as_ / (as_ + bs), 1e-3), 1 - 1e-3)))
    if init is not None:
        if tuple(init.tasks) != tuple(source.tasks):
            raise ValueError("init bank has different tasks from the source matrix")
        pos = {ag: r for r, ag in enumerate(init.agents)}
        t0 = np.array([init.theta[pos[ag]] if ag in pos else t0[r] for r, ag in enumerate(source.agents)])
        b0 = np.asarray(init.b, float)[first]
        la0 = np.log(np.asarray(init.a, float)[first])
        gc0 = _logit(np.clip(init.c[first] / st.c_max, 1e-9, 1 - 1e-9))
        gs0 = _logit(np.clip((1 - init.d[first]) / st.slip_max, 1e-9, 1 - 1e-9))
    x0 = np.concatenate([t0, b0, la0, gc0, gs0])
    lo = np.concatenate([np.full(m, -10.0), np.full(n, -30.0), np.full(n, np.log(1e-3)), np.full(2 * n, -30.0)])
    hi = np.concatenate([np.full(m, 10.0), np.full(n, 30.0), np.full(n, np.log(50.0)), np.full(2 * n, 30.0)])
    x0 = np.clip(x0, lo, hi)
    with single_thread_blas():
        res = minimize(_objective, x0, args=(Y, W * k, m, n, st, k, source.trials is None), jac=True, method="L-BFGS-B",
                       bounds=list(zip(lo, hi)),
                       options={"maxiter": st.max_iter, "gtol": st.gtol, "ftol": st.ftol, "maxcor": 10})
    theta, b, la, gc, gs = _unpack(res.x, m, n)
    a = np.exp(la)[inv]
    b = b[inv]
    c = (st.c_max * expit(gc))[inv]
    d = (1.0 - st.slip_max * expit(gs))[inv]
    if st.rescale:
        mu = theta.mean()
        sd = theta.std() if m > 1 else 1.0
        sd = sd if sd > 1e-8 else 1.0
        theta = (theta - mu) / sd
        b = (b - mu) / sd
        a = a * sd
    return FourPLBank(tasks=tuple(source.tasks), a=a, b=b, c=c, d=d, theta=theta, agents=tuple(source.agents),
                      settings=st, neg_log_post=float(res.fun), n_iter=int(res.nit), converged=bool(res.success))


# ----------------------------------------------------------------------------- shared cache
_CACHE_MAXSIZE = 32


@dataclass(frozen=True, eq=False)
class _FitKey:
    """A source matrix and settings, equal (and hashed) by the matrix's digest: the key of
    :func:`fit_4pl_cached` (functools.lru_cache needs a hashable argument)."""

    source: ResponseMatrix
    settings: FourPLSettings
    digest: str

    def __hash__(self) -> int:
        return hash((self.digest, self.settings))

    def __eq__(self, other) -> bool:
        return isinstance(other, _FitKey) and (self.digest, self.settings) == (other.digest, other.settings)


@lru_cache(maxsize=_CACHE_MAXSIZE)
def _fit_by_key(key: _FitKey) -> FourPLBank:
    return fit_4pl(key.source, key.settings)


def fit_4pl_cached(source: ResponseMatrix, settings: FourPLSettings | None = None) -> FourPLBank:
    """:func:`fit_4pl`, memoised per process on ``(source.digest(), settings)`` (LRU, 32 entries).

    ATLAS and PTA-IRT fitted on the same source fold in one process share one fit (and the
    fits of their source-only validation folds, :func:`inner_banks`). The fit is deterministic
    and the bank immutable, so a cached bank is the bank a new fit would give. 32 entries hold
    one fold's outer and inner fits for a few prior settings.
    """
    st = settings or FourPLSettings()
    return _fit_by_key(_FitKey(source, st, source.digest()))


def fit_4pl_cache_info() -> dict:
    """Hits, misses and current size of the :func:`fit_4pl_cached` cache."""
    info = _fit_by_key.cache_info()
    return {"hits": info.hits, "misses": info.misses, "size": info.currsize, "maxsize": info.maxsize}


def fit_4pl_cache_clear() -> None:
    """Empty the :func:`fit_4pl_cached` cache and reset its counters."""
    _fit_by_key.cache_clear()


# ----------------------------------------------------------------------------- target abilities
def map_abilities(bank: FourPLBank, idx, Y, prior_sd: float = 1.0, bound: float = 8.0) -> tuple[np.ndarray, np.ndarray]:
    """MAP abilities of agents observed on task columns ``idx`` (N(0, prior_sd^2) prior), by L-BFGS-B.

    The objective is separable over agents, so one L-BFGS-B call fits them all (a session
    passes a single agent). Each agent starts at the best point of a 41-point grid on
    [-5, 5], so L-BFGS-B refines the global mode of the (possibly multi-modal) 4PL posterior.

    Parameters
    ----------
    bank : FourPLBank
    idx : int array, shape (n_obs,)
        Observed task columns (the same for every agent).
    Y : array, shape (n_agents, n_obs)
        Observed outcomes: 0/1, or pass rates over repeated trials (each a fractional outcome of
        the Bernoulli likelihood, as :meth:`FourPLBank.loglik_theta` and the item fit take them).
    prior_sd : float
        Sd of the normal ability prior (1 matches the rescaled source abilities).
    bound : float
        Abilities are kept in [-bound, bound].

    Returns
    -------
    theta_hat : array, shape (n_agents,)
        MAP abilities.
    precision : array, shape (n_agents,)
        Laplace precision ``1/prior_sd^2 + sum_obs I_j(theta_hat)`` (expected Fisher information).
    """
    from scipy.optimize import minimize
    from scipy.special import expit

    idx = np.asarray(idx, dtype=int)
    Y = np.atleast_2d(np.asarray(Y, dtype=float))
    n_agents = Y.shape[0]
    prec0 = 1.0 / prior_sd ** 2
    if idx.size == 0:
        return np.zeros(n_agents), np.full(n_agents, prec0)
    a, b, c, d = bank.a[idx], bank.b[idx], bank.c[idx], bank.d[idx]
    binary = bool(np.all((Y == 0) | (Y == 1)))

    def f(theta):
        z = a * (theta[:, None] - b)
        s = expit(z)
        s1 = 1.0 - s
        cells, r = _cell_loglik(Y, c, d - c, 1 - d, s, s1, binary)  # as the fit takes them (pass rates too)
        g = (r * (d - c) * s * s1 * a).sum(axis=1)
        ll = cells.sum()
        val = -(ll - 0.5 * prec0 * (theta ** 2).sum())
        return val, -(g - prec0 * theta)

    grid = np.linspace(-5, 5, 41)
    ll = bank.loglik_theta(grid, idx, Y)  # every agent's log-likelihood on the grid at once: (n_agents, 41)
    start = grid[np.argmax(-0.5 * prec0 * grid[None, :] ** 2 + ll, axis=1)]
    with single_thread_blas():
        res = minimize(f, start, jac=True, method="L-BFGS-B", bounds=[(-bound, bound)] * n_agents,
                       options={"maxiter": 200, "gtol": 1e-8, "ftol": 1e-12})
    theta = res.x
    info = fisher_info_4pl(theta, a, b, c, d).sum(axis=1)
    return theta, prec0 + info


# ----------------------------------------------------------------------------- source-only validation
def inner_split(n_agents: int, n_folds: int = 4, seed: int = 0) -> list[np.ndarray]:
    """Held-out row groups for leave-source-agents-out validation.

    ``numpy.random.default_rng(seed).permutation(n_agents)`` cut into ``min(n_folds, n_agents)``
    near-equal parts (``numpy.array_split``); each part sorted. Returns a list of int arrays.
    """
    perm = np.random.default_rng(seed).permutation(n_agents)
    return [np.sort(part) for part in np.array_split(perm, max(1, min(n_folds, n_agents)))]


def inner_banks(source: ResponseMatrix, settings: FourPLSettings | None = None, n_folds: int = 4,
                seed: int = 0) -> list[tuple[np.ndarray, FourPLBank]]:
    """4PL banks fitted without each held-out group of source rows (:func:`inner_split`).

    Used to choose free settings on the source agents only (never on target rows). Fits go
    through :func:`fit_4pl_cached`, so ATLAS and PTA-IRT validating on the same source fold in
    one process share them.

    Returns
    -------
    list of (held_out_rows, bank)
        ``held_out_rows``: int array of row indices into ``source``; ``bank``: fitted on the
        other rows. Empty if ``source`` has fewer than 2 agents.
    """
    m = source.n_agents
    if m < 2:
        return []
    out = []
    for held in inner_split(m, n_folds, seed):
        keep = np.setdiff1d(np.arange(m), held)
        out.append((held, fit_4pl_cached(source.rows(keep), settings)))
    return out
