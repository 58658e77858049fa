"""Uniform sampling: the raw mean of B tasks drawn uniformly without replacement."""

from __future__ import annotations

import numpy as np

from ..data.matrix import ResponseMatrix
from ..numerics import Z90
from ..session import FittedModel, FixedOrderSession, Method, ScoreEstimate, check_budget
from .orders import uniform_order


class UniformSession(FixedOrderSession):
    """Query the tasks ``default_rng(seed).choice(N, B, replace=False)`` in that order
    (HSPR_SPEC section 9), so query sets are not nested across budgets (as in the paper).

    If the caller tells extra outcomes, the remaining tasks follow in column order after the
    chosen set. The estimate is the sample mean with a 90 % finite-population Wald interval
    (with repeated trials: the mean of the sampled tasks' pass rates).
    """

    accepts_pass_rates = True
    generic_width_forecast = True  # a simple random sample's interval: the generic rule is its own
    random_draws = True  # its estimate stands on its own random draws: an unasked task told is warned of

    def __init__(self, tasks, budget, seed):
        b = check_budget(budget, len(tasks), allow_zero=False)  # no outcome, no estimate
        super().__init__(tasks, b, seed, uniform_order(len(tasks), b, seed))

    def estimate(self) -> ScoreEstimate:
        """Sample mean (0-1 scale) with its 90 % finite-population normal interval, the variance
        floored for small or unanimous samples (:func:`small_sample_variance`), clipped to [0, 1].
        Raises BudgetError with no outcomes."""
        self._require_outcomes()
        y = np.asarray(self.outcomes, dtype=float)
        n, N = len(y), self.n_tasks
        mean = float(y.mean())
        # finite-population corrected standard error of a simple random sample mean
        var = small_sample_variance(y, y.var(ddof=1) if n > 1 else 0.25)
        se = np.sqrt(max(var, 0.0) / n * (1 - n / N))
        return ScoreEstimate(point=mean, mean=mean, median=None, lower=max(0.0, mean - Z90 * se),
                             upper=min(1.0, mean + Z90 * se), n_queried=n, budget=self.budget)


#: below this many sampled outcomes the sample variance is floored (:func:`small_sample_variance`)
SMALL_SAMPLE = 10


def small_sample_variance(y: np.ndarray, s2: float) -> float:
    """Variance for a normal interval from ``n = len(y)`` sampled outcomes (0/1 or pass rates).

    Below :data:`SMALL_SAMPLE` outcomes, and at any ``n`` when every sampled outcome is the same,
    the sample variance ``s2`` is at least the Agresti-Coull Bernoulli variance p~ (1 - p~),
    p~ = (sum y + 2) / (n + 4): outcomes that agree (variance 0) would otherwise give an interval
    of width 0 with most of the bank unseen (30 unresolved draws gave [0, 0] % for an agent at
    4.3 %; 5 of 84 Lite targets at 10 %, each missed). Otherwise ``s2`` is returned unchanged (the
    Wald interval).
    """
    n = len(y)
    if n >= SMALL_SAMPLE and np.ptp(y) > 0:
        return float(s2)
    p = (float(np.sum(y)) + 2.0) / (n + 4.0)
    return float(max(s2, p * (1.0 - p)))


class FittedUniform(FittedModel):
    """Uniform sampling needs nothing from the sources but their task ids."""

    def __init__(self, tasks):
        self.tasks = tasks

    def start(self, budget, seed=0):
        sess = UniformSession(self.tasks, budget, seed)
        sess.accepts_pass_rates = not self.binary_outcomes
        return sess


class Uniform(Method):
    """Uniform random sampling with the raw mean (HSPR_SPEC section 8, "Uniform raw").

    ``start(budget, seed)`` raises :class:`~hspr.session.BudgetError` for a budget outside 1..n_tasks.
    """

    name = "uniform"
    seed_kind = "sampling"
    accepts_pass_rates = True

    def fit(self, source: ResponseMatrix) -> FittedUniform:
        """Keep the bank's task ids (shape ``(n_tasks,)``): uniform sampling learns nothing from the sources."""
        return FittedUniform(source.tasks)
