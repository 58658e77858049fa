"""RSL (Random-Sampling-Learn) port: uniform query sets, source-fitted ridge score map.

HSPR_SPEC section 8 and the paper's section 4.1 / Appendix C: RSL shares Uniform raw's query
sets (``default_rng(seed).choice(N, B, replace=False)``, HSPR_SPEC section 9) and maps the
target's outcomes on them to the full score with a RidgeCV (alphas 0.1, 1, 10) fitted on the
source agents (:mod:`hspr.methods.ridge_map`). On a bank of repeated trials the outcomes are pass rates.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..data.matrix import ResponseMatrix
from ..session import FittedModel, FixedOrderSession, Method, ScoreEstimate, check_budget
from .orders import uniform_order
from .ridge_map import DEFAULT_ALPHAS, RidgeScoreMap, check_alphas, ridge_score_estimate


class RidgeSession(FixedOrderSession):
    """A session that queries a fixed task order and estimates with the ridge score map.

    Parameters
    ----------
    tasks : tuple of str, length n_tasks
    budget : int
        0 <= budget <= n_tasks. Budget 0 is accepted: the estimate is then the source mean
        score (the intercept-only ridge map).
    seed : int
    order : ndarray of int, shape (n_tasks,)
        A permutation of the task columns; tasks are asked in this order, skipping those
        already observed (outcomes told for un-asked tasks) or pending.
    score_map : RidgeScoreMap
        Fitted on the source agents.

    Raises
    ------
    BudgetError
        For a budget that is not a whole number in [0, n_tasks].
    """

    has_prior_estimate = True

    def __init__(self, tasks, budget, seed, order: np.ndarray, score_map: RidgeScoreMap) -> None:
        super().__init__(tasks, budget, seed, order)
        self._map = score_map

    def estimate(self) -> ScoreEstimate:
        """Ridge-mapped full score of every outcome told so far (0-1 scale); see
        :func:`hspr.methods.ridge_map.ridge_score_estimate` (exact at full budget)."""
        return ridge_score_estimate(self._map, self._cols, self.outcomes, self.budget)




class FittedRSL(FittedModel):
    """RSL fitted on source agents: the ridge score map; query sets depend on the budget."""

    nested_budgets = False

    def __init__(self, tasks: tuple[str, ...], score_map: RidgeScoreMap) -> None:
        self.tasks = tasks
        self.score_map_ = score_map

    def start(self, budget, seed=0) -> RidgeSession:
        """A session asking Uniform raw's tasks for ``(budget, seed)``; BudgetError for a bad budget."""
        b = check_budget(budget, len(self.tasks))
        return RidgeSession(self.tasks, b, seed, uniform_order(len(self.tasks), b, seed), self.score_map_)


class RSL(Method):
    """Random-Sampling-Learn port (HSPR_SPEC section 8, "RSL").

    Parameters
    ----------
    alphas : sequence of float
        RidgeCV penalties, default ``(0.1, 1, 10)``.

    Raises
    ------
    ValueError
        For ``alphas`` that is not a non-empty sequence of positive numbers.
    """

    name = "rsl"
    accepts_missing = False  # needs a complete source matrix (its fit calls require_complete)
    accepts_pass_rates = True  # the ridge map regresses pass rates as it does 0/1 outcomes
    seed_kind = "sampling"

    def __init__(self, alphas: Sequence[float] = DEFAULT_ALPHAS) -> None:
        self.alphas = check_alphas(alphas)

    def fit(self, source: ResponseMatrix) -> FittedRSL:
        """Fit the ridge score map on ``source`` (shape (n_sources, n_tasks), complete).

        Raises
        ------
        DataError
            If ``source`` has missing cells, fewer than 2 agents, or agents that all have the
            same score (nothing for the map to learn).
        """
        return FittedRSL(source.tasks, RidgeScoreMap(source, self.alphas))
