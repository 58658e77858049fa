"""The statistics of ``hspr_robust``'s calibration and shift diagnostic (:mod:`hspr.methods.hspr.robust`):
the nearest-source disagreement (step 4), the split-conformal quantiles that widen the interval (step 2;
Vovk, Gammerman and Shafer 2005; Lei et al. 2018), the one-standard-error rule (steps 1, 3 and 6) and the
pass-rate point (step 6). Functions of arrays; the leave-cluster-out replays that feed them are in
:mod:`hspr.methods.hspr.calibration`.
"""

from __future__ import annotations

import math

import numpy as np

from ...numerics import Z90

STATISTIC = "nearest-source disagreement"
#: what its value (a share, 0-1) measures, in the shift message
STATISTIC_UNIT = "of its queried tasks differ from the closest source agent"
#: the same on a bank of repeated trials, where it is a mean difference of pass rates (a new-user trial read
#: "0 of its queried tasks differ" on Terminal-Bench)
STATISTIC_UNIT_RATES = "mean difference in pass rate from the closest source agent on its queried tasks"
#: the shift diagnostic compares a target with the sources from this many outcomes on (or the
#: calibration budget, if smaller)
MIN_OUTCOMES = 10


def nearest_disagreement(source: np.ndarray, cols: np.ndarray, y: np.ndarray,
                         missing: np.ndarray | None = None) -> float:
    """Smallest fraction of the queried columns on which a source row differs from ``y``.

    Parameters
    ----------
    source : (n_sources, n_tasks) 0/1, or pass rates in [0, 1] (repeated trials: a cell then
        differs from the target's by ``|rate - y|``); cols : (B,) queried column indices;
        y : (B,) outcomes (0/1 or pass rates).
    missing : (n_sources, n_tasks) bool, optional
        Cells no source run exists for: each source is compared on the queried tasks it ran
        only; a source that ran none of them counts as disagreeing everywhere.

    Returns
    -------
    float in [0, 1]; 0.0 when nothing was queried. The last element of
    :func:`nearest_disagreement_path`, so that a target's value and the held-out runs' distances
    (taken from their paths) are the same sums, and ties between them stay ties on pass rates too.
    """
    path = nearest_disagreement_path(source, cols, y, missing)
    return float(path[-1]) if len(path) else 0.0


def twin_sources(source: np.ndarray, cols: np.ndarray, y: np.ndarray, missing: np.ndarray | None = None) -> list[int]:
    """The rows of ``source`` that agree with ``y`` on every queried column they ran (disagreement 0, as
    :func:`nearest_disagreement` counts it), in row order; [] when nothing was queried. Same parameters.
    A new-user trial: the shift message said the outcomes equal 'a source agent's' and did not say whose."""
    cols = np.asarray(cols, dtype=int)
    if len(cols) == 0:
        return []
    differ = np.abs(source[:, cols] - np.asarray(y, float)[None, :])  # (n_sources, B)
    if missing is not None:
        ran = ~np.asarray(missing, bool)[:, cols]
        return np.flatnonzero(((differ * ran).sum(axis=1) == 0) & ran.any(axis=1)).tolist()  # one that ran none: 1.0
    return np.flatnonzero(differ.sum(axis=1) == 0).tolist()


def nearest_disagreement_path(source: np.ndarray, cols: np.ndarray, y: np.ndarray,
                              missing: np.ndarray | None = None) -> np.ndarray:
    """:func:`nearest_disagreement` on the first n queried columns, for n = 1..B: shape (B,).

    Same parameters; element n - 1 is the statistic on ``cols[:n]``, ``y[:n]`` (each source's
    disagreements over the queried tasks it ran, smallest share over the sources). Cumulative sums
    over the queries, no loop over n.
    """
    cols = np.asarray(cols, dtype=int)
    if len(cols) == 0:
        return np.zeros(0)
    differ = np.abs(source[:, cols] - np.asarray(y, float)[None, :])  # (n_sources, B)
    if missing is None:
        frac = np.cumsum(differ, axis=1) / np.arange(1, len(cols) + 1)[None, :]
        return frac.min(axis=0)
    ran = ~np.asarray(missing, bool)[:, cols]
    n_ran = np.cumsum(ran, axis=1)
    frac = np.where(n_ran > 0, np.cumsum(differ * ran, axis=1) / np.maximum(n_ran, 1), 1.0)
    return frac.min(axis=0)


def hamming_distances(M: np.ndarray, missing: np.ndarray | None = None) -> np.ndarray:
    """Pairwise disagreement counts between source rows, shape (m, m), on the scale of all tasks.

    Complete 0/1 rows: the Hamming distance (pass rates: the expected number of tasks on which
    one trial of each disagrees). With ``missing`` (bool, M's shape) each pair is compared
    on the tasks both ran and the count is scaled to all ``n_tasks`` (pairs that share no task:
    ``n_tasks``, the largest distance).
    """
    Mf = np.asarray(M, np.float32)
    if missing is None:
        dist = Mf @ (1 - Mf).T
        return dist + dist.T
    O = (~np.asarray(missing, bool)).astype(np.float32)
    X = Mf * O
    dist = X @ (O - X).T
    both = O @ O.T
    return np.where(both > 0, (dist + dist.T) * M.shape[1] / np.maximum(both, 1), float(M.shape[1]))


def shrunk_quantile(ratios: np.ndarray, level: float, prior_n: int) -> float:
    """Finite-sample quantile of held-out ratios ``|error| / half-width``, shrunk toward 1.

    The ``prior_n`` quantiles of a calibrated model's ratios (``|Z| / Phi^-1((1 + level)/2)``,
    ``Z`` standard normal, at ``(i - 0.5)/prior_n``) are pooled with the observed ratios, and
    the ``ceil((n + 1) level)``-th smallest of the ``n`` pooled values is returned (split-conformal
    rule: Vovk, Gammerman and Shafer 2005; Lei et al. 2018, JASA 113:1094). With 10-20 sources
    the plain 90 % quantile is the largest ratio; the pseudo-values keep it stable and equal to 1
    for a calibrated model. ``ratios`` (n,); returns a float >= 0.
    """
    return _conformal_quantile(np.concatenate([np.asarray(ratios, float), _calibrated_ratios(prior_n, level)]), level)


def _calibrated_ratios(prior_n: int, level: float) -> np.ndarray:
    """(prior_n,) quantiles of a calibrated model's ratios ``|Z| / Phi^-1((1 + level)/2)`` at ``(i - 0.5)/prior_n``."""
    from scipy import special  # fit time only: a restored session does not import scipy

    if not prior_n:
        return np.empty(0)
    return special.ndtri(0.5 + 0.5 * (np.arange(prior_n) + 0.5) / prior_n) / special.ndtri(0.5 + level / 2)


def _conformal_quantile(values: np.ndarray, level: float) -> float:
    """The ``ceil((n + 1) level)``-th smallest of the ``n`` values (the split-conformal rule), capped at the largest."""
    pooled = np.sort(values)
    return float(pooled[min(len(pooled), math.ceil((len(pooled) + 1) * level)) - 1])


def side_shares(ratios: np.ndarray, errors: np.ndarray, level: float, prior_n: int) -> tuple[float, float]:
    """Multipliers ``(s_lower, s_upper)`` of the widening factor for each side of the interval, averaging 1.

    A two-sided ``level`` interval leaves ``(1 - level) / 2`` outside each side. On each side the
    one-sided ratio of a held-out run is its ``|error| / half-width`` when its error lies on that
    side (the point above the truth: the lower side) and 0 otherwise; ``q`` is its ``(1 + level) / 2``
    split-conformal quantile, pooled with ``prior_n`` pseudo-values of a calibrated model (half 0,
    half ``|Z| / Phi^-1((1 + level) / 2)``; ``q = 1`` for that model, as :func:`shrunk_quantile`).
    The multipliers are ``2 q_lower / (q_lower + q_upper)`` and ``2 q_upper / (q_lower + q_upper)``:
    the interval's width is shared out as the sides miss, its mean width unchanged (for equal
    half-widths). Calibrating each side at ``(1 - level) / 2`` is the asymmetric split-conformal
    rule (Romano, Patterson and Candes 2019, "Conformalized quantile regression", Theorem 2);
    here only the shares are taken from it, the overall factor stays :func:`shrunk_quantile`'s.

    ``ratios``, ``errors`` : (n,) arrays, errors signed ``S_hat - S``; empty gives (1, 1).
    """
    pseudo = np.concatenate([np.zeros(prior_n - prior_n // 2), _calibrated_ratios(prior_n, level)[1::2]])
    ratios, errors = np.asarray(ratios, float), np.asarray(errors, float)
    q = [_conformal_quantile(np.concatenate([np.where(side, ratios, 0.0), pseudo]), 0.5 + level / 2)
         for side in (errors > 0, errors < 0)]
    total = q[0] + q[1]
    return (1.0, 1.0) if total <= 0 else (2 * q[0] / total, 2 * q[1] / total)


def one_se_choice(errors: np.ndarray) -> int:
    """Index of the configuration to use: 0 (the default) unless another beats it clearly.

    ``errors`` (n_configs, n_held_out) are signed held-out errors, row 0 the default. A row
    replaces the default only when its mean absolute error is lower by more than one standard
    error of the paired per-agent difference of absolute errors (the one-standard-error rule of
    Breiman et al. 1984, Classification and Regression Trees, section 3.4.3; here toward the
    default); among such rows the lowest mean wins, ties going to the earlier row.
    """
    a = np.abs(np.asarray(errors, float))
    d = a - a[0]
    n = a.shape[1]
    se = d.std(axis=1, ddof=1) / np.sqrt(n) if n > 1 else np.zeros(len(a))
    clear = -d.mean(axis=1) > se
    clear[0] = True
    means = np.where(clear, a.mean(axis=1), np.inf)
    return int(np.argmin(np.round(means, 12)))


def side_multipliers(factor: float, sides: tuple[float, float]) -> tuple[float, float]:
    """The multipliers ``(m_lower, m_upper)`` of the two half-widths for a factor ``>= 1`` and side
    shares averaging 1 (:func:`side_shares`).

    ``m_lower = factor * sides[0]`` held within ``[1, 2 factor - 1]`` and ``m_upper = 2 factor -
    m_lower``: they average ``factor`` (the mean width stays), and neither side is made narrower
    than the interval being widened (HSPR's own). A hostile trial found a share of 0 (no
    pseudo-values) putting the interval's end on the point; with the clip, a factor of 1 widens
    neither side, and the Lite folds' largest share (1.43 at ``factor`` 1.25) gives 1.5 and 1.0.
    """
    m_lower = min(max(factor * sides[0], 1.0), 2 * factor - 1.0)
    return m_lower, 2 * factor - m_lower


def widened(point: float, lower: float, upper: float, factor: float,
            sides: tuple[float, float] = (1.0, 1.0)) -> tuple[float, float]:
    """Interval with each half-width around ``point`` multiplied by ``factor`` (``factor >= 1``),
    shared between the lower and the upper side by ``sides`` (:func:`side_multipliers`), clipped to
    [0, 1] (module docstring, step 2).

    Returns
    -------
    (lower, upper) : tuple of float
        The widened interval's bounds on the 0-1 scale.
    """
    m_lo, m_hi = side_multipliers(factor, sides)
    lo = point - m_lo * max(point - lower, 0.0)
    hi = point + m_hi * max(upper - point, 0.0)
    return float(max(lo, 0.0)), float(min(hi, 1.0))


def unresolved_rates(values: np.ndarray, missing: np.ndarray | None) -> np.ndarray:
    """Each task's mean over the sources with a missing cell counted as unresolved (0), shape (n_tasks,):
    the convention of a replay target's true score, which the pass-rate point estimates (step 6).
    ``values`` (n_sources, n_tasks) 0/1 or pass rates; ``missing`` the same shape, or None."""
    values = np.asarray(values, dtype=float)
    return (values if missing is None else np.where(missing, 0.0, values)).mean(axis=0)


def pass_rate_estimate(rate: np.ndarray, cols: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """The pass-rate point and its 90 % half-width, 0-1 scale (module docstring, step 6).

    Point: ``(sum(y) + sum of rate over the other tasks) / n_tasks``, every unqueried task at its
    source rate (:func:`unresolved_rates`): the source mean score with no outcome, the exact score
    with every one. Half-width: ``z_.95 * sqrt(sum over the other tasks of rate (1 - rate)) / n_tasks``,
    the spread of independent outcomes at those rates, which the calibration widens or narrows by its
    held-out misses. ``rate`` (n_tasks,), ``cols`` (B,) distinct queried columns, ``y`` (B,) their outcomes.
    """
    cols = np.asarray(cols, dtype=int)
    y = np.asarray(y, dtype=float)
    other = np.ones(len(rate), dtype=bool)
    other[cols] = False
    n = len(rate)
    half = Z90 * math.sqrt(float(np.sum(rate[other] * (1.0 - rate[other])))) / n
    return float((y.sum() + rate[other].sum()) / n), half


def miss_ratios(points: np.ndarray, runs: np.ndarray) -> np.ndarray:
    """``|point - truth| / half-width`` on the side of the error; ``runs`` (n, 4) as returned by
    :func:`hspr.methods.hspr.calibration._replay_held_out` (the interval moves with the point)."""
    err = points - runs[:, 3]
    half = np.where(err < 0, runs[:, 2], runs[:, 1])
    return np.abs(err) / np.maximum(half, 1e-4)
