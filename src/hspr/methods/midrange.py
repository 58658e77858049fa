"""Mid-Range selection (HSPR_SPEC section 8; Ndzomga 2026 as ported in the paper's section 4.1).

The query path is fixed by the sources: tasks sorted by ``|p_i - 0.5|`` (``p_i`` the source pass
rate) with ``np.argsort(..., kind='stable')``, so ties keep column order; a budget of B asks the
first B. Two estimators share that path:

- ``midrange``: the raw mean of the outcomes. It is biased by construction (mid-range tasks are
  not a sample of the bank); that is the method, not a bug (HSPR_SPEC section 10).
- ``midrange_ridge``: the source-fitted ridge score map of RSL (:mod:`hspr.methods.ridge_map`).

The path does not depend on the budget, so the fitted models declare ``nested_budgets``. On a bank
of repeated trials ``p_i`` is the sources' mean pass rate and the outcomes are pass rates.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..data.matrix import ResponseMatrix
from ..session import FittedModel, FixedOrderSession, Method, ScoreEstimate, Session, check_budget
from .orders import midrange_order
from .ridge_map import DEFAULT_ALPHAS, RidgeScoreMap, check_alphas
from .rsl import RidgeSession
from .stratified import source_pass_rates


class MidRangeSession(FixedOrderSession):
    """Mid-Range raw-mean session.

    Asks tasks in :func:`midrange_order`, skipping those already told or pending (outcomes of
    un-asked tasks are accepted and averaged like the others). The estimate is the raw mean of
    all outcomes told; no interval is reported (the mean is biased, so a sampling interval would
    mislead). Budget 0 is refused with BudgetError: the method has no prior estimate.
    """

    #: a trial: a live session printed 72.00 % for an agent of 53.2 % with no word of the bias
    caveat = ("midrange reports the raw mean of its tasks, those nearest a 50 % source pass rate: a baseline of "
              "the paper, biased by design (MAE 14-33 pp at 10 % on the shipped banks, docs/results/comparison.md), not an "
              "estimate of the full score; midrange_ridge maps the same outcomes to one")

    def __init__(self, tasks, budget, seed, order: np.ndarray) -> None:
        super().__init__(tasks, check_budget(budget, len(tasks), allow_zero=False), seed, order)

    def estimate(self) -> ScoreEstimate:
        """Raw mean of the outcomes told (0-1 scale); exact at full budget.

        Raises
        ------
        BudgetError
            Before any outcome.
        """
        self._require_outcomes()
        n = len(self.outcomes)
        mean = float(sum(self.outcomes)) / n
        return ScoreEstimate(point=mean, mean=mean, n_queried=n, budget=self.budget)


class FittedMidRange(FittedModel):
    """Mid-Range fitted on sources: the query order (and, with ``score_map``, the ridge map)."""

    nested_budgets = True

    def __init__(self, tasks: tuple[str, ...], order: np.ndarray, score_map: RidgeScoreMap | None = None) -> None:
        self.tasks = tasks
        self.order_ = order
        self.score_map_ = score_map

    def start(self, budget, seed=0) -> Session:
        """A new session (the seed is ignored: the path is deterministic).

        Raises
        ------
        BudgetError
            For a budget not a whole number in [0, n_tasks]; for budget 0 without the ridge map.
        """
        if self.score_map_ is None:
            return MidRangeSession(self.tasks, budget, seed, self.order_)
        return RidgeSession(self.tasks, budget, seed, self.order_, self.score_map_)


class MidRange(Method):
    """Mid-Range selection with the raw mean (HSPR_SPEC section 8, "Mid-Range").

    ``start(budget, seed)`` raises :class:`~hspr.session.BudgetError` for a budget outside 1..n_tasks.
    """

    name = "midrange"
    gives_interval = False  # a point only: no 90 % interval
    seed_kind = "deterministic"
    accepts_pass_rates = True

    def fit(self, source: ResponseMatrix) -> FittedMidRange:
        """Order tasks by the source pass rate's distance to 0.5 (source shape (n_sources, n_tasks))."""
        return FittedMidRange(source.tasks, midrange_order(source_pass_rates(source)))


class MidRangeRidge(Method):
    """Mid-Range selection with RSL's ridge score map (HSPR_SPEC section 8, "Mid-Range + Ridge").

    Budget 0 gives the source mean score (the intercept-only map); full budget gives the exact
    raw mean.

    Parameters
    ----------
    alphas : sequence of float
        RidgeCV penalties, default ``(0.1, 1, 10)``.

    Raises
    ------
    ValueError
        For ``alphas`` that is not a non-empty sequence of positive numbers.
    """

    name = "midrange_ridge"
    accepts_missing = False  # needs a complete source matrix (its fit calls require_complete)
    accepts_pass_rates = True
    seed_kind = "deterministic"

    def __init__(self, alphas: Sequence[float] = DEFAULT_ALPHAS) -> None:
        self.alphas = check_alphas(alphas)

    def fit(self, source: ResponseMatrix) -> FittedMidRange:
        """Mid-Range order and ridge map from ``source`` (shape (n_sources, n_tasks)).

        Raises
        ------
        DataError
            If ``source`` has missing cells, fewer than 2 agents, or agents that all have the
            same score (nothing for the map to learn).
        """
        order = midrange_order(source_pass_rates(source))
        return FittedMidRange(source.tasks, order, RidgeScoreMap(source, self.alphas))
