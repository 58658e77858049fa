"""The shared source-fitted ridge score map of RSL and Mid-Range + Ridge (HSPR_SPEC section 8).

A ridge regression (scikit-learn ``RidgeCV``, alphas ``(0.1, 1, 10)``, efficient leave-one-out
choice of alpha, with intercept) is fitted on the *source* agents only: its features are the
source outcomes on the target's observed task columns, its response the source agents' full
scores. Applied to the target's outcomes on the same columns, it gives the score estimate.

Conventions settled here (the paper is silent on them):

- The map is fitted at estimate time on exactly the columns the target has outcomes for, so
  outcomes told for tasks that were never asked are used like the others.
- Fits are cached per column set (an LRU of ``cache_size`` entries): in a replay, every target
  of a fold that shares a query set (same seed, or Mid-Range's fixed path) reuses one fit.
- No columns: the intercept-only model, i.e. the source mean score. This is the methods' prior
  estimate, so the ridge sessions accept budget 0.
- All columns observed (``B = N``): the raw mean, which is then the exact score; the ridge
  prediction is not used.
- Every estimate is clipped to the scores still possible given the outcomes seen,
  ``[s/N, (s + N - n)/N]`` (``s`` successes among ``n`` outcomes), a sub-interval of ``[0, 1]``.
- On a bank of repeated trials the features and outcomes are pass rates (successes / trials)
  and ``s`` their sum; the map is the same regression.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ..data.matrix import DataError, ResponseMatrix
from ..session import NOMINAL_LEVEL, ScoreEstimate, feasible_bounds

#: RidgeCV penalties of the RSL port (HSPR_SPEC section 8)
DEFAULT_ALPHAS: tuple[float, ...] = (0.1, 1.0, 10.0)


@dataclass(frozen=True)
class RidgeFit:
    """One ridge fit on a fixed set of task columns.

    Attributes
    ----------
    columns : ndarray of int, shape (k,)
        Task columns (sorted ascending) the map reads.
    coef : ndarray of float, shape (k,)
        Coefficient per column (score per success, 0-1 scale).
    intercept : float
        Intercept (0-1 scale).
    alpha : float or None
        Penalty chosen by leave-one-out; None for the intercept-only fit (``k = 0``).
    loo_abs_q : float
        Quantile (at the interval level) of the absolute leave-one-source-out residuals of the
        chosen alpha, 0-1 scale; the half-width of the approximate interval.
    """

    columns: np.ndarray
    coef: np.ndarray
    intercept: float
    alpha: float | None
    loo_abs_q: float

    def predict(self, y: np.ndarray) -> float:
        """Unclipped score prediction for outcomes ``y`` (shape (k,), aligned with ``columns``)."""
        return float(self.intercept + np.dot(self.coef, np.asarray(y, dtype=float)))


def observed_outcomes(columns: Sequence[int], y: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    """``columns`` as an int array and ``y`` as a float array, both shape (k,).

    Raises ValueError if they differ in length or ``columns`` repeats a column.
    """
    cols = np.asarray(columns, dtype=int)
    y = np.asarray(y, dtype=float)
    if cols.shape != y.shape:
        raise ValueError(f"{cols.size} columns but {y.size} outcomes")
    if np.unique(cols).size != cols.size:
        raise ValueError("columns must be distinct")
    return cols, y


class ColumnFitCache:
    """Fits keyed by a set of task columns, least recently used dropped first (an LRU).

    Shared by the score maps that fit at estimate time on the columns a target has outcomes
    for (:class:`RidgeScoreMap`, :class:`hspr.methods.disco.SignatureMap`).

    Parameters
    ----------
    n_tasks : int
        Number of task columns of the source matrix.
    size : int
        Number of fits kept.
    """

    def __init__(self, n_tasks: int, size: int) -> None:
        self.n_tasks = int(n_tasks)
        self.size = int(size)
        self._fits: OrderedDict[bytes, object] = OrderedDict()

    def columns(self, columns: Sequence[int]) -> np.ndarray:
        """Distinct columns, ascending, shape (k,); IndexError for a column outside the matrix."""
        cols = np.unique(np.asarray(columns, dtype=int))
        if cols.size and (cols[0] < 0 or cols[-1] >= self.n_tasks):
            raise IndexError(f"task columns must be in [0, {self.n_tasks}), got {cols[0]}..{cols[-1]}")
        return cols

    def get(self, cols: np.ndarray, make: Callable[[np.ndarray], object]):
        """The cached fit for exactly ``cols`` (in that order), made with ``make(cols)`` on a miss."""
        key = cols.tobytes()
        hit = self._fits.get(key)
        if hit is not None:
            self._fits.move_to_end(key)
            return hit
        fit = make(cols)
        self._fits[key] = fit
        if len(self._fits) > self.size:
            self._fits.popitem(last=False)
        return fit

    def __len__(self) -> int:
        return len(self._fits)


class RidgeScoreMap:
    """Source-fitted ridge maps from outcomes on a column subset to the full score.

    Parameters
    ----------
    source : ResponseMatrix, shape (n_sources, n_tasks)
        Complete source response matrix (0/1, or pass rates over repeated trials).
    alphas : sequence of float
        RidgeCV penalties; default ``(0.1, 1, 10)`` (HSPR_SPEC section 8).
    level : float
        Level of the approximate interval reported by :func:`ridge_score_estimate`.
    cache_size : int
        Number of column-set fits kept (least recently used dropped first).

    Raises
    ------
    DataError
        If the source matrix has missing cells, fewer than 2 agents (leave-one-out needs 2), or
        agents that all have the same score (:func:`refuse_constant_scores`).
    ValueError
        For an empty or non-positive ``alphas``, or ``level`` outside (0, 1).
    """

    def __init__(self, source: ResponseMatrix, alphas: Sequence[float] = DEFAULT_ALPHAS, level: float = NOMINAL_LEVEL,
                 cache_size: int = 128) -> None:
        source.require_complete("the ridge score map")
        if source.n_agents < 2:
            raise DataError(f"{source.source}: the ridge score map needs at least 2 source agents, got {source.n_agents}")
        refuse_constant_scores(source, "the ridge score map")
        alphas = check_alphas(alphas)
        if not 0 < level < 1:
            raise ValueError(f"level must be in (0, 1), got {level}")
        self.alphas = alphas
        self.level = float(level)
        self.cache_size = int(cache_size)
        self.values_ = np.asarray(source.rates(), dtype=float)  # 0/1, or pass rates over repeated trials
        self.scores_ = self.values_.mean(axis=1)
        self.n_sources_, self.n_tasks_ = self.values_.shape
        self._cache = ColumnFitCache(self.n_tasks_, self.cache_size)

    def fit_columns(self, columns: Sequence[int]) -> RidgeFit:
        """The (cached) ridge fit for a set of task columns (order and duplicates ignored).

        Parameters
        ----------
        columns : sequence of int
            Column indices in ``[0, n_tasks)``.

        Returns
        -------
        RidgeFit

        Raises
        ------
        IndexError
            For a column outside the matrix.
        """
        return self._cache.get(self._cache.columns(columns), self._fit)

    def _fit(self, cols: np.ndarray) -> RidgeFit:
        s = self.scores_
        if cols.size == 0:
            resid = (s - s.mean()) * self.n_sources_ / (self.n_sources_ - 1)  # leave-one-out residuals of the mean
            return RidgeFit(cols, np.zeros(0), float(s.mean()), None, float(np.quantile(np.abs(resid), self.level)))
        from sklearn.linear_model import RidgeCV  # imported where fitted: `--help` lists methods without it

        X = self.values_[:, cols]
        # an array: scikit-learn writes into a one-penalty alphas in place (a tuple raised TypeError)
        model = RidgeCV(alphas=np.array(self.alphas), store_cv_results=True).fit(X, s)
        k = int(np.flatnonzero(np.isclose(self.alphas, model.alpha_))[0])
        loo = np.sqrt(np.maximum(model.cv_results_[:, k], 0.0))  # squared LOO errors -> |residual|
        return RidgeFit(cols, np.asarray(model.coef_, dtype=float), float(model.intercept_), float(model.alpha_),
                        float(np.quantile(loo, self.level)))

    def predict(self, columns: Sequence[int], y: Sequence[int]) -> float:
        """Unclipped ridge prediction of the full score (0-1 scale).

        Parameters
        ----------
        columns : sequence of int, length k
            Observed task columns (distinct).
        y : sequence of {0, 1} (or pass rates in [0, 1]), length k
            The target's outcomes on ``columns``, in the same order.

        Raises
        ------
        ValueError
            If ``columns`` and ``y`` differ in length or ``columns`` repeats a column.
        """
        cols, y = observed_outcomes(columns, y)
        fit = self.fit_columns(cols)
        order = np.argsort(cols)  # the fit's columns are sorted
        return fit.predict(y[order])


def check_alphas(alphas) -> tuple[float, ...]:
    """``alphas`` as a tuple of floats; ValueError unless a non-empty sequence of finite positive
    ridge penalties (RSL and Mid-Range + Ridge check it when built, not at their first estimate)."""
    if isinstance(alphas, (str, bytes)) or (isinstance(alphas, Sequence) and any(isinstance(a, (bool, np.bool_, str, bytes))
                                                                                for a in alphas)):
        # an API trial: alphas='1' was read as [1.0] (a string's characters) and '10' refused as [1, 0]; True as 1.0
        raise ValueError(f"alphas must be a non-empty sequence of positive penalties (numbers), got {alphas!r}")
    try:
        out = tuple(float(a) for a in alphas)
    except (TypeError, ValueError):
        raise ValueError(f"alphas must be a non-empty sequence of positive penalties, got {alphas!r}") from None
    if not out or not all(0 < a < float("inf") for a in out):
        raise ValueError(f"alphas must be a non-empty sequence of positive penalties, got {alphas!r}")
    return out


def refuse_constant_scores(source: ResponseMatrix, method: str) -> None:
    """DataError when every source agent has the same score: a map from a target's outcomes to
    its score, learned from those agents, predicts that score whatever the outcomes, with a
    leave-one-out error of 0 (a zero-width interval at any budget). Used by the ridge map and
    DISCO."""
    scores = source.scores()
    if scores.size and np.ptp(scores) <= 1e-12:  # pass rates summed in another order differ in the last bit
        raise DataError(f"{source.source}: all {source.n_agents} source agents have the same score "
                        f"({100 * scores[0]:.1f} %), so {method} would predict that score whatever a target's outcomes, "
                        "with an interval of width 0; give source agents whose scores differ, or use a method that "
                        "reads the outcomes directly (uniform, stratified)")


def ridge_score_estimate(score_map: RidgeScoreMap, columns: Sequence[int], y: Sequence[int], budget: int) -> ScoreEstimate:
    """The ridge estimate of RSL / Mid-Range + Ridge from a target's observed outcomes.

    Parameters
    ----------
    score_map : RidgeScoreMap
        Fitted on the source agents.
    columns : sequence of int, length n
        Distinct task columns with a target outcome (any order).
    y : sequence of {0, 1} (or pass rates in [0, 1]), length n
        The outcomes on ``columns``.
    budget : int
        The session's budget, copied into the result.

    Returns
    -------
    ScoreEstimate
        ``point``: the ridge prediction clipped to the feasible scores (see :func:`feasible_bounds`);
        the raw mean (the exact score) when every column is observed; the source mean score
        (clipped likewise) with no outcomes. ``lower``/``upper``: an approximate 90 % interval,
        the point plus/minus the quantile of the absolute leave-one-source-out residuals, clipped
        to the feasible scores (a width of 0 at full budget).
    """
    y = np.asarray(y, dtype=float)
    n, N = y.size, score_map.n_tasks_
    s = float(y.sum())
    if n == N:
        exact = s / N
        return ScoreEstimate(point=exact, lower=exact, upper=exact, n_queried=n, budget=budget, level=score_map.level)
    lo, hi = feasible_bounds(s, n, N)
    cols = np.asarray(columns, dtype=int)
    fit_point = score_map.predict(cols, y)
    half = score_map.fit_columns(cols).loo_abs_q
    point = float(np.clip(fit_point, lo, hi))
    return ScoreEstimate(point=point, lower=float(np.clip(point - half, lo, hi)), upper=float(np.clip(point + half, lo, hi)),
                         n_queried=n, budget=budget, level=score_map.level)
