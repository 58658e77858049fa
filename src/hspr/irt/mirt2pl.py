"""A small multidimensional 2PL (logistic factor) model: MAP fit on source agents and the
Laplace posterior of one new agent's ability vector.

Model (compensatory multidimensional 2PL, as in tinyBenchmarks, Polo et al. 2024, and the
logistic factor model of FAQ, Wu et al. 2026)::

    P(Y_si = 1) = sigmoid(a_i . theta_s - b_i)

with ``theta_s`` of shape ``(dim,)`` per agent, slope vector ``a_i`` of shape ``(dim,)`` and
difficulty ``b_i`` per task. Source fit: joint MAP with independent Gaussian priors
``theta ~ N(0, I)``, ``a_ik ~ N(0, sd_a^2)``, ``b_i ~ N(0, sd_b^2)``, by L-BFGS on the analytic
gradient (vectorised numpy). Identical task columns share their MAP parameters, so the fit runs
on the distinct columns weighted by multiplicity. After the fit the source abilities are
whitened (mean 0, identity covariance, population moments) and the item parameters transformed
so that every predicted probability is unchanged; the ``N(0, I)`` prior of a new agent then
matches the source population (HSPR_SPEC section 10, "rescale so the source abilities have
mean 0 and sd 1").

Target posterior: MAP by damped Newton on ``dim`` parameters, Laplace covariance, and the
probit approximation ``E[sigmoid(x)] ~ sigmoid(m / sqrt(1 + pi s^2 / 8))`` for predictive
probabilities averaged over the ability posterior (MacKay 1992).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["MIRT2PL", "fit_mirt2pl", "laplace_posterior", "predictive_probs", "unique_columns"]


@dataclass(frozen=True, eq=False)
class MIRT2PL:
    """A fitted multidimensional 2PL model (whitened source abilities).

    Attributes
    ----------
    a : ndarray, shape (n_tasks, dim)
        Slope (discrimination) vectors.
    b : ndarray, shape (n_tasks,)
        Difficulties; ``logit P = a_i . theta - b_i``.
    theta : ndarray, shape (n_agents, dim)
        Source abilities, whitened to mean 0 and identity covariance (ddof = 0).
    loss : float
        Final negative log posterior (unnormalised) of the fit.
    """

    a: np.ndarray
    b: np.ndarray
    theta: np.ndarray
    loss: float = float("nan")

    @property
    def dim(self) -> int:
        """Number of latent factors (columns of the task loadings)."""
        return self.a.shape[1]

    @property
    def n_tasks(self) -> int:
        """Number of tasks (rows of the loadings)."""
        return self.a.shape[0]

    def logits(self, theta: np.ndarray) -> np.ndarray:
        """Logits for abilities ``theta`` of shape (dim,) or (k, dim); returns (n_tasks,) or (k, n_tasks)."""
        theta = np.asarray(theta, float)
        return theta @ self.a.T - self.b

    def prob(self, theta: np.ndarray) -> np.ndarray:
        """Success probabilities (0-1) for abilities of shape (dim,) or (k, dim)."""
        from scipy.special import expit  # scipy is imported where used (see fit_mirt2pl)

        return expit(self.logits(theta))

    def embedding(self) -> np.ndarray:
        """Item embedding ``(a_i, b_i)`` of shape (n_tasks, dim + 1), as clustered by tinyBenchmarks."""
        return np.column_stack([self.a, self.b])


def unique_columns(Y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct columns of a response matrix (0/1 outcomes, or pass rates of repeated trials):
    tasks with identical source outcomes share one column, so a fit computes each once.

    Returns
    -------
    U : ndarray, shape (n_agents, n_unique)
        Distinct columns, in order of first occurrence.
    inverse : ndarray of int, shape (n_tasks,)
        ``Y[:, j] == U[:, inverse[j]]``.
    counts : ndarray of int, shape (n_unique,)
        Multiplicities.
    """
    Y = np.asarray(Y)
    _, first, inverse, counts = np.unique(Y.T, axis=0, return_index=True, return_inverse=True, return_counts=True)
    inverse = np.asarray(inverse).reshape(-1)
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return Y[:, first[order]], rank[inverse], counts[order]


def fit_mirt2pl(
    Y: np.ndarray,
    dim: int = 2,
    *,
    sd_a: float = 1.0,
    sd_b: float = 3.0,
    max_iter: int = 1000,
    tol: float = 1e-6,
    init: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
) -> MIRT2PL:
    """Joint MAP fit of a ``dim``-dimensional 2PL model to a binary matrix (or one of pass rates).

    Parameters
    ----------
    Y : array, shape (n_agents, n_tasks)
        Source outcomes (1 = resolved), or pass rates in [0, 1] over repeated trials (each a
        fractional outcome of the same Bernoulli likelihood, a quasi-likelihood). Complete: fill
        missing cells first.
    dim : int
        Latent dimension, ``1 <= dim <= n_agents - 1``.
    sd_a, sd_b : float
        Prior standard deviations of the slopes and difficulties (logit units).
    max_iter : int
        L-BFGS-B iteration limit.
    tol : float
        Convergence tolerance: L-BFGS-B stops when the relative decrease of the objective falls
        below ``tol * 1e-3`` (or the projected gradient below 1e-5).
    init : (theta, a, b), optional
        Warm start: abilities of shape (n_agents, dim), slopes (n_tasks, dim) and difficulties
        (n_tasks,), e.g. a fit on more agents restricted to these rows.

    Returns
    -------
    MIRT2PL
        Item parameters for every column of ``Y`` and whitened source abilities.

    Raises
    ------
    ValueError
        For a ``Y`` that is not 2-D or holds a value outside [0, 1], fewer than 2 agents, or ``dim`` outside
        ``[1, n_agents - 1]``.

    Notes
    -----
    Initialisation is deterministic: difficulties from smoothed column rates, abilities from
    the leading left singular vectors of the column-centred matrix. The objective is
    rotation-invariant in ``theta``; whitening fixes location and scale, not rotation.
    """
    Y = np.asarray(Y)
    if Y.ndim != 2:
        raise ValueError(f"Y must be 2-D (agents x tasks), got shape {Y.shape}")
    if not (np.isfinite(Y).all() and ((Y >= 0) & (Y <= 1)).all()):
        raise ValueError("Y must hold 0/1 outcomes or pass rates in [0, 1] (fill missing cells first)")
    m, n_tasks = Y.shape
    if m < 2:
        raise ValueError(f"need at least 2 source agents, got {m}")
    dim = int(dim)
    if not 1 <= dim <= m - 1:
        raise ValueError(f"dim must be in [1, n_agents - 1] = [1, {m - 1}], got {dim}")

    U, inverse, w = unique_columns(Y)
    U = U.astype(float)
    k = U.shape[1]
    w = w.astype(float)

    # deterministic start
    rate = (U.sum(0) + 0.5) / (m + 1.0)
    b0 = -np.log(rate / (1 - rate))
    Cu = U - U.mean(0)
    uu, _, _ = np.linalg.svd(Cu * np.sqrt(w), full_matrices=False)
    th0 = uu[:, :dim] * np.sqrt(m)  # unit-variance, orthogonal columns
    if th0.shape[1] < dim:  # fewer distinct columns than dimensions
        th0 = np.column_stack([th0, np.zeros((m, dim - th0.shape[1]))])
    a0 = np.clip(4.0 * (Cu.T @ th0) / m, -3.0, 3.0)  # linear regression, logistic slope ~ 4x
    if init is not None:
        th_i, a_i, b_i = (np.asarray(v, float) for v in init)
        if th_i.shape != (m, dim) or a_i.shape != (n_tasks, dim) or b_i.shape != (n_tasks,):
            raise ValueError(f"init shapes {th_i.shape}, {a_i.shape}, {b_i.shape} do not match "
                             f"({m}, {dim}), ({n_tasks}, {dim}), ({n_tasks},)")
        first = np.full(k, -1)
        first[inverse[::-1]] = np.arange(n_tasks)[::-1]
        th0, a0, b0 = th_i, a_i[first], b_i[first]
    x0 = np.concatenate([th0.ravel(), a0.ravel(), b0])
    inv_va, inv_vb = 1.0 / sd_a**2, 1.0 / sd_b**2
    n_th = m * dim
    n_a = k * dim
    # scipy is imported where used, here and below: `--help` lists FAQ and tinyBenchmarks without it (0.3 s)
    from scipy import optimize
    from scipy.special import expit

    def fg(x):
        th = x[:n_th].reshape(m, dim)
        a = x[n_th:n_th + n_a].reshape(k, dim)
        b = x[n_th + n_a:]
        Z = th @ a.T - b
        # -loglik = sum w * [log(1+e^z) - y z]
        nll = np.sum(w * (np.logaddexp(0.0, Z) - U * Z))
        f = nll + 0.5 * np.sum(th**2) + 0.5 * inv_va * np.sum(w[:, None] * a**2) + 0.5 * inv_vb * np.sum(w * b**2)
        R = (expit(Z) - U) * w
        g_th = R @ a + th
        g_a = R.T @ th + inv_va * w[:, None] * a
        g_b = -R.sum(0) + inv_vb * w * b
        return f, np.concatenate([g_th.ravel(), g_a.ravel(), g_b])

    res = optimize.minimize(fg, x0, jac=True, method="L-BFGS-B",
                            options={"maxiter": max_iter, "ftol": tol * 1e-3, "gtol": 1e-5, "maxcor": 20})
    x = res.x
    th = x[:n_th].reshape(m, dim)
    a = x[n_th:n_th + n_a].reshape(k, dim)
    b = x[n_th + n_a:]

    # whiten the source abilities: theta = L theta' + mu  =>  a' = L^T a, b' = b - a.mu
    mu = th.mean(0)
    cov = np.atleast_2d(np.cov(th, rowvar=False, ddof=0)) + 1e-9 * np.eye(dim)
    L = np.linalg.cholesky(cov)
    th_w = np.linalg.solve(L, (th - mu).T).T
    a_w = a @ L
    b_w = b - a @ mu
    return MIRT2PL(a=a_w[inverse].copy(), b=b_w[inverse].copy(), theta=th_w, loss=float(res.fun))


def laplace_posterior(
    a: np.ndarray,
    b: np.ndarray,
    y: np.ndarray,
    prior_prec: np.ndarray | float = 1.0,
    init: np.ndarray | None = None,
    max_iter: int = 50,
) -> tuple[np.ndarray, np.ndarray]:
    """Laplace approximation of one agent's ability posterior under ``theta ~ N(0, prior_prec^-1)``.

    Parameters
    ----------
    a : ndarray, shape (n_obs, dim)
        Slopes of the observed tasks.
    b : ndarray, shape (n_obs,)
        Difficulties of the observed tasks.
    y : ndarray, shape (n_obs,)
        Observed 0/1 outcomes.
    prior_prec : float or ndarray of shape (dim,) or (dim, dim)
        Prior precision (identity for the whitened model).
    init : ndarray, shape (dim,), optional
        Newton start (warm start); zeros by default.

    Raises
    ------
    ValueError
        If ``a`` is not 2-D.

    Returns
    -------
    mean : ndarray, shape (dim,)
        MAP ability.
    cov : ndarray, shape (dim, dim)
        Inverse Hessian of the negative log posterior at the MAP.

    Notes
    -----
    Damped Newton with backtracking on the strictly convex negative log posterior; with no
    observations it returns the prior.
    """
    a = np.asarray(a, float)
    if a.ndim != 2:
        raise ValueError(f"a must have shape (n_obs, dim), got {a.shape}")
    dim = a.shape[1]
    P0 = np.asarray(prior_prec, float)
    if P0.ndim == 0:
        P0 = P0 * np.eye(dim)
    elif P0.ndim == 1:
        P0 = np.diag(P0)
    b = np.asarray(b, float).reshape(-1)
    y = np.asarray(y, float).reshape(-1)
    th = np.zeros(dim) if init is None else np.asarray(init, float).copy()
    if len(y) == 0:
        return np.zeros(dim), np.linalg.inv(P0)
    from scipy.special import expit, log_expit

    def nlp(t):
        z = a @ t - b
        return -np.sum(y * log_expit(z) + (1 - y) * log_expit(-z)) + 0.5 * t @ P0 @ t

    f = nlp(th)
    for _ in range(max_iter):
        z = a @ th - b
        p = expit(z)
        g = a.T @ (p - y) + P0 @ th
        H = (a * (p * (1 - p))[:, None]).T @ a + P0
        step = np.linalg.solve(H, g)
        t = 1.0
        while True:
            cand = th - t * step
            fc = nlp(cand)
            if fc <= f + 1e-12 or t < 1e-6:
                break
            t *= 0.5
        th, f_old, f = cand, f, fc
        if np.max(np.abs(t * step)) < 1e-8 or abs(f_old - f) < 1e-12:
            break
    p = expit(a @ th - b)
    H = (a * (p * (1 - p))[:, None]).T @ a + P0
    return th, np.linalg.inv(H)


def predictive_probs(a: np.ndarray, b: np.ndarray, mean: np.ndarray, cov: np.ndarray | None = None) -> np.ndarray:
    """Success probabilities averaged over a Gaussian ability posterior (probit approximation).

    Parameters
    ----------
    a : ndarray, shape (n_tasks, dim)
    b : ndarray, shape (n_tasks,)
    mean : ndarray, shape (dim,)
    cov : ndarray, shape (dim, dim), optional
        ``None`` gives the plug-in probabilities ``sigmoid(a . mean - b)``.

    Returns
    -------
    ndarray, shape (n_tasks,), values in (0, 1).
    """
    from scipy.special import expit

    m = a @ mean - b
    if cov is None:
        return expit(m)
    s2 = np.einsum("ij,jk,ik->i", a, cov, a)
    return expit(m / np.sqrt(1.0 + np.pi * s2 / 8.0))
