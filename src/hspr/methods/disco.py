"""DISCO: the tasks the source agents disagree on most, and a signature regressor for the score.

Source: Rubinstein, Raible, Gubri and Oh, "DISCO: Diversifying Sample Condensation for
Efficient Model Evaluation", arXiv 2510.07959 (ICLR 2026); code ``arubique/disco-public``
(``selection.py``: ``pds``, ``jsd``, ``sample_by_disagreement``; ``acc.py``: ``compute_acc_knn``
and the fitted regressors, e.g. ``RandomForestRegressor_100``; ``experiments.py``:
``compute_embedding``, ``make_fitted_model``). The port:

1. Selection (from the sources only). DISCO ranks samples by the disagreement of the source
   models' predictive distributions and keeps the top B ("high" disagreement,
   ``sorted(..., reverse=True)[:number_item]``). With one binary outcome per agent and task the
   predictive distribution of agent m on task j is one-hot, so the generalised Jensen-Shannon
   divergence (their ``jsd``; Proposition 1: the mutual information between the agent's score and
   the ensemble-mean prediction) reduces to the binary entropy ``H(p_j)`` of the source pass rate
   ``p_j``, and their PDS (``sum_c max_m p^m_c``) to 1 + [0 < p_j < 1], which cannot rank. Tasks are
   therefore taken in decreasing ``H(p_j)``, i.e. increasing ``|2 c_j - n|`` (``c_j`` successes of
   ``n`` sources, exact integers), ties broken by task id. The seed is not used: the path is
   deterministic and does not depend on the budget (the same order as Mid-Range,
   :mod:`hspr.methods.midrange`, whose estimators differ). On a bank of repeated trials agent m's
   predictive distribution on task j is Bernoulli(``p^m_j``), its pass rate, and the generalised
   Jensen-Shannon divergence is ``H(mean_m p^m_j) - mean_m H(p^m_j)``; tasks are taken in
   decreasing divergence (rounded to 12 decimals), ties broken by task id.
2. Signature: the target's outcomes on the selected tasks (DISCO's "model signature", the
   concatenated outputs on the condensed set), here the outcomes on every task told so far, so
   outcomes of un-asked tasks are used like the others. With ``add_mean`` the signature's mean
   (the raw accuracy on it) is appended as one more feature of the random forest.
3. Regressor, fitted on the source agents' signatures on the same columns -> their full scores,
   chosen by source-only cross-validation (mean absolute error): kNN on the Hamming distance (on
   a bank of repeated trials, the L1 distance between pass-rate signatures)
   (their ``compute_acc_knn`` is 1-NN by cosine similarity; ``k`` is tuned here, and sources tied at
   the k-th distance share the last weight equally, so the result does not depend on row order),
   exact leave-one-source-out; or a scikit-learn ``RandomForestRegressor`` (their best fitted
   regressor has 100 trees) over a small grid of ``min_samples_leaf`` x ``max_features``, scored by
   its out-of-bag predictions (each source predicted by the trees that did not see it).
   Fits are made when an estimate is asked for and cached per column set (an LRU).
4. Interval (split-conformal on the cross-validation residuals): with ``r_i`` the held-out
   residuals of the chosen regressor on the ``n`` sources, the half-width is the
   ``ceil((n + 1) * 0.9)``-th smallest ``|r_i|`` (infinite if that rank exceeds ``n``); the point
   and ``point +/- half`` are clipped to the scores still possible given the outcomes seen
   (:func:`hspr.session.feasible_bounds`). Choosing the regressor on the same residuals
   makes them slightly optimistic.
5. Budget 0 (no outcome): the source mean score, interval from its leave-one-out residuals, as
   RSL does. Full budget: the raw mean, the exact score, with zero width.

The regressor predicts the full score, as DISCO's does, so its error shrinks little as the budget
grows (Verified folds 4.33 / 2.99 / 2.84 / 2.83 pp at 5 / 10 / 15 / 20 %): 86 source rows limit it,
not the outcomes. Predicting only the unqueried tasks' mean and adding the observed outcomes exactly
was measured (session 37, 4-fold replays): Verified 4.17 / 2.98 / 2.55 pp at 5 / 10 / 20 %, Full
1.81 / 1.71 / 1.19 against 2.05 / 1.55 / 1.51, better at 20 % but not at 10 % on Full; not adopted.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..data.matrix import DataError, ResponseMatrix
from ..params import check_count, check_flag, check_random_state
from ..session import NOMINAL_LEVEL, FittedModel, FixedOrderSession, Method, ScoreEstimate, check_budget, feasible_bounds
from .ridge_map import ColumnFitCache, observed_outcomes, refuse_constant_scores

if TYPE_CHECKING:  # scikit-learn is imported where a forest is fitted: `--help` lists methods without it
    from sklearn.ensemble import RandomForestRegressor


def disagreement_order(values: np.ndarray, tasks: Sequence[str]) -> np.ndarray:
    """All task columns, most disagreement first (highest binary entropy of the source pass rate).

    Parameters
    ----------
    values : ndarray, shape (n_sources, n_tasks)
        0/1 outcomes, or pass rates in [0, 1] over repeated trials.
    tasks : sequence of str, length n_tasks
        Task ids; ties in disagreement are broken by id (ascending), never by column position.

    Returns
    -------
    ndarray of int, shape (n_tasks,)
        Columns sorted by ``|2 c_j - n|`` ascending (``c_j`` source successes, ``n`` sources); with
        pass rates, by the generalised Jensen-Shannon divergence descending (module docstring,
        step 1), which orders 0/1 columns the same way.
    """
    vals = np.asarray(values)
    if np.isin(vals, (0, 1)).all():
        dist = np.abs(2 * vals.sum(axis=0).astype(np.int64) - vals.shape[0])
    else:
        dist = -np.round(_entropy(vals.mean(axis=0)) - _entropy(vals).mean(axis=0), 12)
    id_rank = np.argsort(np.argsort(np.asarray(tasks, dtype=object), kind="stable"), kind="stable")
    return np.lexsort((id_rank, dist)).astype(int)


def conformal_half_width(residuals: np.ndarray, level: float) -> float:
    """Split-conformal half-width: the ``ceil((n + 1) * level)``-th smallest ``|residual|`` (Vovk, Gammerman
    and Shafer 2005; Lei et al. 2018, JASA 113, section 2.2). With too few residuals it is infinite, as the
    rule gives; ``hspr_robust``'s widening caps that rank at ``n`` instead, by design
    (:func:`hspr.methods.hspr.shift_stats._conformal_quantile`).

    Parameters
    ----------
    residuals : ndarray of float, shape (n,)
        Held-out residuals (0-1 scale).
    level : float
        Coverage level in (0, 1).

    Returns
    -------
    float
        The half-width (0-1 scale); ``inf`` when the rank exceeds ``n`` (too few residuals).
    """
    r = np.sort(np.abs(np.asarray(residuals, dtype=float)))
    q = math.ceil((len(r) + 1) * level - 1e-9)
    return float(r[q - 1]) if 1 <= q <= len(r) else math.inf


def knn_weights(dist: np.ndarray, k: int) -> np.ndarray:
    """kNN weights with shared ties: the sources strictly nearer than the k-th distance weigh 1, those
    at the k-th distance share the rest of ``k`` equally; rows sum to ``k``.

    Parameters
    ----------
    dist : ndarray of float, shape (m, n)
        Distances from m queries to n sources (``inf`` excludes a source).
    k : int
        1 <= k <= number of finite distances per row.

    Returns
    -------
    ndarray of float, shape (m, n)
    """
    kth = np.sort(dist, axis=1)[:, k - 1 : k]
    less = dist < kth
    tie = dist == kth
    return less + tie * ((k - less.sum(axis=1, keepdims=True)) / tie.sum(axis=1, keepdims=True))


def _entropy(p: np.ndarray) -> np.ndarray:
    """Binary entropy in nats, elementwise (0 at p = 0 and p = 1)."""
    from scipy.special import entr

    p = np.asarray(p, dtype=float)
    return entr(p) + entr(1.0 - p)


def _l1_distances(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """L1 distances between the rows of A (m, k) and B (n, k): shape (m, n); for 0/1 rows the Hamming
    distances (whole numbers, exact), for pass rates the summed absolute differences."""
    from scipy.spatial.distance import cdist

    return cdist(A, B, metric="cityblock")


@dataclass(frozen=True)
class SignatureFit:
    """The cross-validated regressor for one set of task columns.

    Attributes
    ----------
    columns : ndarray of int, shape (k,)
        Task columns read, in the order of the features (ascending task id).
    kind : {'mean', 'knn', 'rf'}
        'mean': no columns, the source mean score.
    setting : tuple
        ``(k,)`` for kNN, ``(min_samples_leaf, max_features)`` for the forest, ``()`` for the mean.
    cv_mae : float
        Mean absolute held-out error on the sources (0-1 scale).
    residuals : ndarray of float, shape (n_sources,)
        Held-out residuals (score minus prediction) of this regressor.
    half_width : float
        Conformal half-width (:func:`conformal_half_width`), 0-1 scale, maybe ``inf``.
    model : RandomForestRegressor or None
    """

    columns: np.ndarray
    kind: str
    setting: tuple
    cv_mae: float
    residuals: np.ndarray
    half_width: float
    model: RandomForestRegressor | None = None


class SignatureMap:
    """Source-fitted regressors from the outcomes on a column set to the full score (steps 3-4).

    Parameters
    ----------
    values : ndarray, shape (n_sources, n_tasks)
        Source rows, 0/1 or pass rates (in a fixed order, e.g. sorted by agent id).
    id_rank : ndarray of int, shape (n_tasks,)
        Rank of each column's task id; features are ordered by it.
    ks, rf_leaves, rf_max_features, n_estimators, add_mean, random_state, level, cache_size :
        As in :class:`DISCO`.
    """

    def __init__(self, values: np.ndarray, id_rank: np.ndarray, ks: tuple[int, ...], rf_leaves: tuple[int, ...],
                 rf_max_features: tuple[float, ...], n_estimators: int, add_mean: bool, random_state: int,
                 level: float, cache_size: int = 64) -> None:
        self.values_ = np.asarray(values, dtype=float)
        self.scores_ = self.values_.mean(axis=1)
        self.n_sources_, self.n_tasks_ = self.values_.shape
        self.id_rank_ = np.asarray(id_rank)
        self.ks = tuple(k for k in ks if k <= self.n_sources_ - 1)
        self.rf_leaves = rf_leaves
        self.rf_max_features = rf_max_features
        self.n_estimators = n_estimators
        self.add_mean = add_mean
        self.random_state = random_state
        self.level = level
        self.cache_size = cache_size
        self._cache = ColumnFitCache(self.n_tasks_, cache_size)

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state["_cache"] = ColumnFitCache(self.n_tasks_, self.cache_size)  # fits are rebuilt on demand: small pickles
        return state

    def _features(self, X: np.ndarray) -> np.ndarray:
        return np.column_stack([X, X.mean(axis=1)]) if self.add_mean else X

    def fit_columns(self, columns: Sequence[int]) -> SignatureFit:
        """The (cached) cross-validated fit for a set of columns (order and duplicates ignored).

        Raises
        ------
        IndexError
            For a column outside the matrix.
        """
        cols = self._cache.columns(columns)
        return self._cache.get(cols[np.argsort(self.id_rank_[cols], kind="stable")], self._fit)

    def _fit(self, cols: np.ndarray) -> SignatureFit:
        s, n = self.scores_, self.n_sources_
        if cols.size == 0:
            return self._mean_fit(cols)
        X = self.values_[:, cols]
        cands = []  # (cv_mae, order, kind, setting, residuals, model)
        if self.ks:
            D = _l1_distances(X, X)
            np.fill_diagonal(D, np.inf)  # leave each source out of its own neighbours
            for k in self.ks:
                resid = s - knn_weights(D, k) @ s / k
                cands.append((float(np.abs(resid).mean()), len(cands), "knn", (k,), resid, None))
        from sklearn.ensemble import RandomForestRegressor

        F = self._features(X)
        for leaf in self.rf_leaves:
            for mf in self.rf_max_features:
                with warnings.catch_warnings():
                    warnings.filterwarnings("ignore", message="Some inputs do not have OOB scores")
                    rf = RandomForestRegressor(n_estimators=self.n_estimators, min_samples_leaf=leaf, max_features=mf,
                                               oob_score=True, random_state=self.random_state, n_jobs=1).fit(F, s)
                in_bag = np.zeros((len(rf.estimators_samples_), n), dtype=bool)
                for t, idx in enumerate(rf.estimators_samples_):
                    in_bag[t, idx] = True
                if in_bag.all(axis=0).any():  # a source in every bootstrap has no held-out prediction
                    continue
                resid = s - rf.oob_prediction_
                cands.append((float(np.abs(resid).mean()), len(cands), "rf", (leaf, mf), resid, rf))
        if not cands:
            return self._mean_fit(cols)
        mae, _, kind, setting, resid, model = min(cands, key=lambda c: (c[0], c[1]))
        return SignatureFit(cols, kind, setting, mae, resid, conformal_half_width(resid, self.level), model)

    def _mean_fit(self, cols: np.ndarray) -> SignatureFit:
        """The source mean score, with its leave-one-out residuals (no usable regressor or no columns)."""
        s, n = self.scores_, self.n_sources_
        resid = (s - s.mean()) * n / (n - 1)
        return SignatureFit(cols, "mean", (), float(np.abs(resid).mean()), resid, conformal_half_width(resid, self.level))

    def predict(self, columns: Sequence[int], y: Sequence[int]) -> tuple[float, SignatureFit]:
        """Score prediction (0-1 scale, unclipped) for a target's outcomes, and the fit used.

        Parameters
        ----------
        columns : sequence of int, length k
            Distinct observed task columns.
        y : sequence of {0, 1} (or pass rates in [0, 1]), length k
            The target's outcomes on ``columns``.

        Raises
        ------
        ValueError
            If ``columns`` and ``y`` differ in length or ``columns`` repeats a column.
        """
        cols, y = observed_outcomes(columns, y)
        fit = self.fit_columns(cols)
        if fit.kind == "mean":
            return float(self.scores_.mean()), fit
        x = y[np.argsort(cols)][np.searchsorted(np.sort(cols), fit.columns)][None, :]  # aligned with fit.columns
        if fit.kind == "knn":
            (k,) = fit.setting
            w = knn_weights(_l1_distances(x, self.values_[:, fit.columns]), k)
            return float(w[0] @ self.scores_ / k), fit
        return float(fit.model.predict(self._features(x))[0]), fit


class DISCOSession(FixedOrderSession):
    """Asks tasks in :func:`disagreement_order`; estimates with the signature regressor.

    Budget 0 is accepted (the source mean score); outcomes of un-asked tasks join the signature.
    """

    has_prior_estimate = True

    def __init__(self, tasks, budget, seed, order: np.ndarray, signature_map: SignatureMap) -> None:
        super().__init__(tasks, budget, seed, order)
        self._map = signature_map

    def estimate(self) -> ScoreEstimate:
        """Regressor prediction clipped to the feasible scores, with the conformal 90 % interval.

        Returns
        -------
        ScoreEstimate
            Exact (zero width) once every task is observed.
        """
        y = np.asarray(self.outcomes, dtype=float)
        N, n = self.n_tasks, y.size
        s = float(y.sum())
        level = self._map.level
        if n == N:
            exact = s / N
            return ScoreEstimate(point=exact, lower=exact, upper=exact, n_queried=n, budget=self.budget, level=level)
        lo, hi = feasible_bounds(s, n, N)
        pred, fit = self._map.predict(self._cols, y)
        point = float(np.clip(pred, lo, hi))
        half = fit.half_width
        return ScoreEstimate(point=point, lower=float(np.clip(point - half, lo, hi)),
                             upper=float(np.clip(point + half, lo, hi)), n_queried=n, budget=self.budget, level=level)


class FittedDISCO(FittedModel):
    """DISCO fitted on sources: the disagreement order and the signature regressors.

    Attributes
    ----------
    order_ : ndarray of int, shape (n_tasks,)
        Query order (:func:`disagreement_order`).
    signature_map_ : SignatureMap
    """

    nested_budgets = True  # the path does not depend on the budget

    def __init__(self, tasks: tuple[str, ...], order: np.ndarray, signature_map: SignatureMap) -> None:
        self.tasks = tasks
        self.order_ = order
        self.signature_map_ = signature_map

    def start(self, budget, seed=0) -> DISCOSession:
        """A new session; the seed is ignored (deterministic path). BudgetError for a bad budget."""
        b = check_budget(budget, len(self.tasks))
        return DISCOSession(self.tasks, b, seed, self.order_, self.signature_map_)


class DISCO(Method):
    """DISCO (arXiv 2510.07959): max-disagreement tasks, signature -> score by a CV-chosen kNN or forest.

    See the module docstring for the selection, regressors and interval.

    Parameters
    ----------
    ks : sequence of int
        kNN neighbour counts tried (those above ``n_sources - 1`` are dropped); empty: no kNN.
    rf_leaves : sequence of int
        Random-forest ``min_samples_leaf`` values tried; empty (with ``rf_max_features``): no forest.
    rf_max_features : sequence of float
        Random-forest ``max_features`` fractions tried, in (0, 1].
    n_estimators : int
        Trees per forest (DISCO's best: 100).
    add_mean : bool
        Append the signature's mean as a forest feature.
    random_state : int
        The forests' seed (fixed: estimates do not depend on the session seed).
    level : float
        Interval level, in (0, 1).

    Raises
    ------
    ValueError
        For settings outside their ranges or no candidate regressor at all.
    """

    name = "disco"
    accepts_missing = False  # needs a complete source matrix (its fit calls require_complete)
    accepts_pass_rates = True  # step 1's divergence and step 3's distance have their pass-rate forms
    seed_kind = "deterministic"

    def __init__(self, ks: Sequence[int] = (1, 2, 3, 5, 8, 13, 21), rf_leaves: Sequence[int] = (1, 3),
                 rf_max_features: Sequence[float] = (1.0, 0.33), n_estimators: int = 100, add_mean: bool = True,
                 random_state: int = 0, level: float = NOMINAL_LEVEL) -> None:
        ks, leaves, mfs = tuple(int(k) for k in ks), tuple(int(v) for v in rf_leaves), tuple(float(v) for v in rf_max_features)
        if any(k < 1 for k in ks) or any(v < 1 for v in leaves) or any(not 0 < v <= 1 for v in mfs):
            raise ValueError(f"need ks >= 1, rf_leaves >= 1 and rf_max_features in (0, 1], got {ks}, {leaves}, {mfs}")
        if not ks and not (leaves and mfs):
            raise ValueError("no candidate regressor: give ks or both rf_leaves and rf_max_features")
        if not 0 < level < 1:
            raise ValueError(f"level must be in (0, 1), got {level}")
        self.ks = ks
        self.rf_leaves = leaves
        self.rf_max_features = mfs
        self.n_estimators = check_count("n_estimators", n_estimators)
        self.add_mean = check_flag("add_mean", add_mean)
        self.random_state = check_random_state("random_state", random_state)
        self.level = float(level)

    def fit(self, source: ResponseMatrix) -> FittedDISCO:
        """Order the tasks and prepare the regressors (source shape (n_sources, n_tasks)).

        Source rows are put in agent-id order first, so the forests do not depend on row order.

        Raises
        ------
        DataError
            If ``source`` has missing cells, fewer than 2 agents, or agents that all have the same
            score (:func:`~hspr.methods.ridge_map.refuse_constant_scores`).
        """
        source.require_complete("disco")
        if source.n_agents < 2:
            raise DataError(f"{source.source}: disco needs at least 2 source agents, got {source.n_agents}")
        refuse_constant_scores(source, "disco")
        rows = np.argsort(np.asarray(source.agents, dtype=object), kind="stable")
        values = np.asarray(source.rates())[rows]  # 0/1, or pass rates over repeated trials
        id_rank = np.argsort(np.argsort(np.asarray(source.tasks, dtype=object), kind="stable"), kind="stable")
        smap = SignatureMap(values, id_rank, self.ks, self.rf_leaves, self.rf_max_features, self.n_estimators,
                            self.add_mean, self.random_state, self.level)
        return FittedDISCO(source.tasks, disagreement_order(values, source.tasks), smap)
