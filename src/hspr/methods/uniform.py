"""Uniform sampling: the raw mean of B tasks drawn uniformly without replacement."""

from __future__ import annotations

import numpy as np
from scipy import stats

from ..data.matrix import ResponseMatrix
from ..session import FittedModel, FixedOrderSession, Method, ScoreEstimate, check_budget


class UniformSession(FixedOrderSession):
    """Query the tasks ``default_rng(seed).choice(N, B, replace=False)`` in that order
    (HSPR_SPEC section 9), so query sets are not nested across budgets (as in the paper).

    If the caller tells extra outcomes, the remaining tasks follow in column order after the
    chosen set. The estimate is the sample mean with a 90 % finite-population Wald interval
    (with repeated trials: the mean of the sampled tasks' pass rates).
    """

    accepts_pass_rates = True

    def __init__(self, tasks, budget, seed):
        n = len(tasks)
        b = check_budget(budget, n)
        chosen = np.random.default_rng(int(seed)).choice(n, b, replace=False)
        super().__init__(tasks, b, seed, np.concatenate([chosen, np.setdiff1d(np.arange(n), chosen)]))

    def estimate(self) -> ScoreEstimate:
        self._require_outcomes()
        y = np.asarray(self.outcomes, dtype=float)
        n, N = len(y), self.n_tasks
        mean = float(y.mean())
        # finite-population corrected standard error of a simple random sample mean
        var = y.var(ddof=1) if n > 1 else 0.25
        se = np.sqrt(max(var, 0.0) / n * (1 - n / N))
        z = stats.norm.ppf(0.95)
        return ScoreEstimate(point=mean, mean=mean, median=None, lower=max(0.0, mean - z * se),
                             upper=min(1.0, mean + z * se), n_queried=n, budget=self.budget)


class FittedUniform(FittedModel):
    def __init__(self, tasks):
        self.tasks = tasks

    def start(self, budget, seed=0):
        return UniformSession(self.tasks, budget, seed)


class Uniform(Method):
    """Uniform random sampling with the raw mean (HSPR_SPEC section 8, "Uniform raw")."""

    name = "uniform"
    seed_kind = "sampling"
    accepts_pass_rates = True

    def fit(self, source: ResponseMatrix) -> FittedUniform:
        return FittedUniform(source.tasks)
