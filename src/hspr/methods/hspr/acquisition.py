"""HSPR acquisition rules (HSPR_SPEC section 4; paper section 3.4, Appendix B).

The gain functions take importance weights ``w`` (J,) and per-node group predictive means
``M`` (J, G) and return one gain per group (G,); the helpers they share return per-node arrays
(:func:`node_scores` (J,), :func:`within_node_variance` (J, G)) or a number
(:func:`score_variance`). All are pure numpy (no loops over nodes or groups).
"""

from __future__ import annotations

import numpy as np

VAR_FLOOR = 1e-15
#: where 1 - mbar_g is below this, Var(Y_g | D) = mbar (1 - mbar) takes 1 - mbar from a float64 sum
#: of 1 - m_gj: a float32 weighted mean of rates near 1 can round to exactly 1
NEAR_ONE = 1e-5


def _wsum(v: np.ndarray, A: np.ndarray) -> np.ndarray:
    """``v @ A`` for one node vector ``v`` (J,) and a node array ``A`` (J, G), in ``A``'s dtype, returned as float64 (G,).

    One matrix-vector product per vector: on the column-major (J, G) session arrays, OpenBLAS's
    gemv is about 1.5x faster per vector than one gemm with 2-5 stacked rows (measured on the
    (8,192, 447) float32 arrays of a Verified session: 0.47 ms per gemv, 2.6 ms for 2 rows).
    """
    return (v.astype(A.dtype) @ A).astype(float)


def bernoulli_variance(w: np.ndarray, M: np.ndarray, mbar: np.ndarray) -> np.ndarray:
    """Var(Y_g | D) = mbar_g (1 - mbar_g) of one unqueried task per group (the denominator of
    Eqs. 12-13), floored at 1e-15, shape (G,).

    ``mbar`` (G,) is ``w @ M`` as the acquisition computed it (in ``M``'s dtype). A float32 sum of
    rates close to 1 loses 1 - mbar (it can round to exactly 1, and the floored variance then
    makes a near-certain group look informative), so for groups with 1 - mbar < 1e-5 it is
    recomputed as ``w @ (1 - M[:, g])`` in float64 (a few columns; in float64 mode the same
    value up to rounding).
    """
    rest = 1 - mbar
    near = np.flatnonzero(rest < NEAR_ONE)
    if len(near):
        rest[near] = w @ (1 - M[:, near].astype(float))
    return np.maximum(mbar * rest, VAR_FLOOR)


def within_node_variance(M: np.ndarray, conc: np.ndarray, U: np.ndarray) -> np.ndarray:
    """m (1 - m) [1 + (U - 1)/(A + F + 1)] per node and group, shape like ``M``.

    It is Var(Y_g | z) + (U_g - 1) tau^2_g, tau^2 = m (1 - m)/(A + F + 1): the within-node
    covariance of one unqueried task of group g with the group's unqueried total (Eq. 23).
    ``conc`` = A + F (inf without group uncertainty).
    """
    return M * (1 - M) * (1 + (U[None, :] - 1) / (conc + 1))


def node_scores(M: np.ndarray, U: np.ndarray, s_total: float, n_tasks: int) -> np.ndarray:
    """mu_j = (sum_g s_g + sum_g U_g m_gj) / N, the predictive mean score at each node, shape (J,)
    (the S of Eq. 10, HSPR_SPEC section 4). ``M`` (J, G), ``U`` (G,) unqueried tasks per group."""
    return (s_total + (M @ np.asarray(U, dtype=M.dtype)).astype(float)) / n_tasks


def score_gains(w: np.ndarray, M: np.ndarray, Vw: np.ndarray, mu: np.ndarray, n_tasks: int) -> np.ndarray:
    """Score rule G^S_g = Cov(S, Y_g | D)^2 / Var(Y_g | D) (Eqs. 10, 12, 23).

    Cov(S, Y_g | D) = sum_j w_j Vw_gj / N + sum_j w_j (mu_j - mubar)(m_gj - mbar_g).

    Parameters
    ----------
    w : (J,) weights
    M : (J, G) predictive means; Vw : (J, G) :func:`within_node_variance`
    mu : (J,) :func:`node_scores`

    Returns
    -------
    (G,) gains; they equal the expected one-step drop in Var(S | D) (Eq. 11).
    """
    mbar = _wsum(w, M)
    between = _wsum(w * (mu - w @ mu), M)
    cov = _wsum(w, Vw) / n_tasks + between
    return cov**2 / bernoulli_variance(w, M, mbar)


def latent_gains(w: np.ndarray, M: np.ndarray, Z: np.ndarray) -> np.ndarray:
    """Latent rule G^z_g = sum_k Cov(z_k, Y_g | D)^2 / Var(Y_g | D) (Eq. 13). ``Z`` is (J, d); shape (G,)."""
    mbar = _wsum(w, M)
    Zc = Z - w @ Z
    cov = np.stack([_wsum(w * Zc[:, k], M) for k in range(Z.shape[1])])
    return (cov**2).sum(axis=0) / bernoulli_variance(w, M, mbar)


def score_variance(w: np.ndarray, M: np.ndarray, conc: np.ndarray, U: np.ndarray, s_total: float, n_tasks: int) -> float:
    """Var(S | D) under the weighted-node posterior: E_j[Var_j(S)] + Var_j(mu_j), on the 0-1 score
    scale squared (:meth:`HSPRSession.score_sd`). Var_j(S) sums the beta-binomial variances of the
    unqueried counts. Not in the spec: hspr's own addition, for the live width forecast and
    ``score_sd`` (the law of total variance over the nodes of the spec's posterior).

    Parameters
    ----------
    w : (J,) normalised node weights; M : (J, G) predictive group means per node; conc : (J, G)
    beta-binomial concentrations; U : (G,) unqueried tasks per group; s_total : successes seen;
    n_tasks : N.
    """
    mu = node_scores(M, U, s_total, n_tasks)
    within = (M * (1 - M) * U[None, :] * (1 + (U[None, :] - 1) / (conc + 1))).sum(axis=1) / n_tasks**2
    mbar = w @ mu
    return float(w @ within + w @ (mu - mbar) ** 2)
