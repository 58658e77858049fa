"""ATLAS port: 4PL item bank, sequential EAP ability, top-5 Fisher selection, p-IRT estimate.

HSPR_SPEC section 8 ("ATLAS-port"): a 4PL item bank is fitted on the source fold
(:func:`hspr.irt.fourpl.fit_4pl_cached`, shared with PTA-IRT); the target's ability has a
N(0, 1) prior (the source abilities are rescaled to mean 0, sd 1) and is tracked on a quadrature
grid (default 81 points on [-5, 5]). Each query picks, uniformly with
``numpy.random.default_rng(seed)``, one of the 5 unqueried tasks of largest Fisher information at
the current EAP ability. The estimate is p-IRT: observed successes plus the posterior-averaged
predicted probabilities of the unqueried tasks, divided by N. On a bank of repeated trials the
bank is fitted on pass rates (:func:`hspr.irt.fourpl.fit_4pl`) and a target's pass rate enters the
posterior as a fractional outcome; the successes are then the sum of the observed pass rates.

Free setting chosen on the sources: the sd of the 4PL's log-discrimination prior
(``log_a_sd_grid``, default 0.5 or 1; the fit is sensitive to it: steep items suit some banks,
flatter ones others). For each candidate the bank is refitted without each of ``inner_folds``
groups of source agents (:func:`hspr.irt.fourpl.inner_banks`), ATLAS is replayed (seed 0) on the
held-out source agents at ``round(select_fraction * N)`` tasks, and the candidate with the
lowest MAE wins (ties: lower max error, then grid order). Target rows are never used.

Interval: the predictive distribution of the score is the mixture, over the ability grid
weighted by the posterior, of normals with mean ``(successes + sum_u p_u(theta))/N`` and
variance ``sum_u p_u(theta)(1 - p_u(theta))/N^2`` (the Bernoulli variance of the unqueried tasks,
given theta). ``lower``/``upper`` are its 5 % and 95 % quantiles, ``median`` its median,
clipped to the attainable range.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from ..data.matrix import ResponseMatrix
from ..irt.fourpl import FourPLBank, FourPLSettings, fit_4pl_cached, inner_banks
from ..params import build_dataclass, plain, settings_with
from ..session import NOMINAL_LEVEL, FittedModel, Method, ScoreEstimate, Session

__all__ = ["ATLAS", "AtlasSettings", "AtlasSession", "FittedATLAS", "mixture_score_summary", "pirt_point",
           "top_information"]


@dataclass(frozen=True)
class AtlasSettings:
    """Settings of the ATLAS port.

    Attributes
    ----------
    n_grid : int
        Quadrature points for the ability posterior.
    grid_lo, grid_hi : float
        Ability grid range (rescaled source-ability units).
    top_k : int
        Selection draws uniformly among this many highest-information unqueried tasks.
    level : float
        Credible level of the reported interval.
    fourpl : FourPLSettings
        Item-bank fit settings (shared cache key with PTA-IRT when equal).
    log_a_sd_grid : tuple of float or None
        Candidates for ``fourpl.prior_log_a_sd``, chosen on the sources (tie-break order);
        None keeps ``fourpl`` as given.
    select_fraction : float
        Budget fraction of the source-only validation runs.
    inner_folds : int
        Groups of held-out source agents in that validation.
    """

    n_grid: int = 81
    grid_lo: float = -5.0
    grid_hi: float = 5.0
    top_k: int = 5
    level: float = NOMINAL_LEVEL
    fourpl: FourPLSettings = field(default_factory=FourPLSettings)
    log_a_sd_grid: tuple[float, ...] | None = (0.5, 1.0)
    select_fraction: float = 0.10
    inner_folds: int = 4

    def __post_init__(self) -> None:
        if self.n_grid < 2 or not self.grid_lo < self.grid_hi:
            raise ValueError("need n_grid >= 2 and grid_lo < grid_hi")
        if self.top_k < 1:
            raise ValueError(f"top_k must be >= 1, got {self.top_k}")
        if not 0 < self.level < 1:
            raise ValueError(f"level must be in (0, 1), got {self.level}")
        if self.log_a_sd_grid is not None:
            if not self.log_a_sd_grid or any(v <= 0 for v in self.log_a_sd_grid):
                raise ValueError(f"log_a_sd_grid needs positive values, got {self.log_a_sd_grid!r}")
            object.__setattr__(self, "log_a_sd_grid", tuple(float(v) for v in self.log_a_sd_grid))
        if not 0 < self.select_fraction <= 1 or self.inner_folds < 2:
            raise ValueError("need 0 < select_fraction <= 1 and inner_folds >= 2")


def mixture_score_summary(w: np.ndarray, mean: np.ndarray, var: np.ndarray, lo: float, hi: float,
                          level: float = NOMINAL_LEVEL) -> tuple[float, float, float, float]:
    """Mean, median and central interval of a normal mixture, clipped to ``[lo, hi]``.

    The 4PL ports' score posterior (ATLAS, PTA-IRT; HSPR_SPEC section 8): one component per ability grid point,
    the normal approximation of its score (observed successes plus the unqueried tasks' summed
    4PL probabilities and Bernoulli variances), weighted by the EAP posterior over the grid. The
    median and interval ends are found by root-finding on the mixture's cdf.

    Parameters
    ----------
    w : array, shape (G,)
        Mixture weights (sum to 1).
    mean, var : arrays, shape (G,)
        Component means and variances (0-1 score scale).
    lo, hi : float
        Attainable score range (the observed successes alone / plus every unqueried task).
    level : float
        Central credible level.

    Returns
    -------
    (mean, median, lower, upper) : floats on the 0-1 scale.
    """
    from scipy.optimize import brentq  # here, not at import: a restored hspr_robust session needs no scipy
    from scipy.special import ndtr

    mu = float(np.dot(w, mean))
    if hi - lo < 1e-12:
        return lo, lo, lo, hi
    sd = np.sqrt(np.maximum(var, 1e-18))

    def cdf(x):
        return float(np.dot(w, ndtr((x - mean) / sd)))

    def quantile(q):
        a, b = lo, hi
        if cdf(a) >= q:
            return a
        if cdf(b) <= q:
            return b
        return brentq(lambda x: cdf(x) - q, a, b, xtol=1e-9)

    alpha = (1 - level) / 2
    return min(max(mu, lo), hi), quantile(0.5), quantile(alpha), quantile(1 - alpha)


def top_information(info: np.ndarray, exclude: np.ndarray, k: int) -> np.ndarray:
    """The ``k`` allowed tasks of largest information, in decreasing order (ties: lower column).

    Parameters
    ----------
    info : array, shape (n_tasks,)
    exclude : bool array, shape (n_tasks,)
        Tasks that may not be chosen (observed or pending).
    k : int

    Returns
    -------
    int array of length ``min(k, number of allowed tasks)``; equals the first ``k`` of a stable
    descending sort of the allowed tasks, found with a partition instead of a full sort.
    """
    vals = np.where(exclude, -np.inf, info)
    n_ok = int((~exclude).sum())
    k = min(k, n_ok)
    if k <= 0:
        return np.zeros(0, dtype=int)
    kth = np.partition(vals, vals.size - k)[vals.size - k]
    cand = np.flatnonzero((vals >= kth) & ~exclude)
    return cand[np.argsort(-vals[cand], kind="stable")][:k]


def pirt_point(model: FittedATLAS, cols: np.ndarray, y: np.ndarray) -> float:
    """p-IRT point estimate from any set of observed outcomes (0-1 scale).

    ``(sum(y) + E_theta[sum_unobserved p_i(theta)]) / n_tasks``, the ability posterior on the
    model's grid (N(0, 1) prior times the 4PL likelihood of ``y``), as in
    :meth:`AtlasSession.estimate` but for outcomes chosen by another method (HSPR_SPEC section 8).

    Parameters
    ----------
    model : FittedATLAS
    cols : int array, shape (B,)
        Distinct observed task columns.
    y : array, shape (B,)
        Outcomes, 0/1 (a pass rate in [0, 1] enters the likelihood as a fractional outcome).

    Returns
    -------
    float in [sum(y) / n_tasks, (sum(y) + n_tasks - B) / n_tasks]; the exact score when B = n_tasks.
    """
    cols = np.asarray(cols, dtype=int)
    y = np.asarray(y, dtype=float)
    logpost = model.log_prior_ + model.logp_[:, cols] @ y + model.log1mp_[:, cols] @ (1 - y)
    w = np.exp(logpost - logpost.max())
    unobserved = model.psum_ - model.pgrid_[:, cols].sum(axis=1)  # (n_grid,)
    return float((y.sum() + np.dot(w, unobserved) / w.sum()) / model.pgrid_.shape[1])


class AtlasSession(Session):
    """One ATLAS run for a target agent (see the module docstring).

    Parameters
    ----------
    tasks : tuple of str, length n_tasks
    budget : int
        Whole number in [0, n_tasks]; 0 gives the prior estimate.
    seed : int
        Seeds ``numpy.random.default_rng`` for the top-k draws (one call per query).
    model : FittedATLAS

    Raises
    ------
    BudgetError
        For a budget that is negative, fractional or above n_tasks.
    """

    has_prior_estimate = True
    adaptive_design = True

    def __init__(self, tasks, budget, seed, model: FittedATLAS) -> None:
        super().__init__(tasks, budget, seed)
        self._m = model
        self._rng = np.random.default_rng(self.seed)
        self._logpost = model.log_prior_.copy()
        self._succ = 0

    # -- posterior over the ability grid -------------------------------------------------
    def posterior(self) -> np.ndarray:
        """Posterior weights over the ability grid, shape (n_grid,)."""
        w = np.exp(self._logpost - self._logpost.max())
        return w / w.sum()

    def eap(self) -> float:
        """Posterior mean ability (EAP)."""
        return float(np.dot(self.posterior(), self._m.grid_))

    def _select(self, exclude) -> int:
        top = top_information(self._m.bank_.info(self.eap()), exclude, self._m.settings.top_k)
        return int(top[self._rng.integers(len(top))])

    def _update(self, j, y):
        if y in (0, 1):
            self._logpost = self._logpost + (self._m.logp_[:, j] if y else self._m.log1mp_[:, j])
        else:  # a pass rate over repeated trials: a fractional outcome of the same likelihood
            self._logpost = self._logpost + y * self._m.logp_[:, j] + (1 - y) * self._m.log1mp_[:, j]
        self._succ += y

    def estimate(self) -> ScoreEstimate:
        """p-IRT estimate (0-1 scale): ``(successes + E_theta[sum_unqueried p_i(theta)]) / N``.

        ``point`` and ``mean`` are that posterior mean; ``median``, ``lower``, ``upper`` come from
        the mixture predictive described in the module docstring. Exact at full budget.
        """
        N = self.n_tasks
        w = self.posterior()
        unq = ~self._observed
        P = self._m.pgrid_[:, unq]
        ssum = P.sum(axis=1)
        var = (P * (1 - P)).sum(axis=1) / N ** 2
        mean_g = (self._succ + ssum) / N
        lo, hi = self._succ / N, (self._succ + int(unq.sum())) / N
        mu, med, low, up = mixture_score_summary(w, mean_g, var, lo, hi, self._m.settings.level)
        return ScoreEstimate(point=mu, mean=mu, median=med, lower=low, upper=up, n_queried=self.n_queried,
                             budget=self.budget, level=self._m.settings.level)


class FittedATLAS(FittedModel):
    """ATLAS fitted on source agents: the 4PL bank and its probabilities on the ability grid.

    Attributes
    ----------
    bank_ : FourPLBank
    selection_ : list of (log_a_sd, mae, max_err)
        Source-only validation of the discrimination prior (empty when not run).
    grid_ : array, shape (n_grid,)
    log_prior_ : array, shape (n_grid,)
        Log N(0, 1) density on the grid (unnormalised).
    pgrid_, logp_, log1mp_ : arrays, shape (n_grid, n_tasks)
        4PL success probabilities and their logs (and logs of failure) at each grid ability.
    psum_ : array, shape (n_grid,)
        Expected number of successes over all tasks at each grid ability.
    """

    nested_budgets = True  # the query path does not depend on the budget

    def __init__(self, bank: FourPLBank, settings: AtlasSettings, selection: list | None = None) -> None:
        self.tasks = tuple(bank.tasks)
        self.bank_ = bank
        self.settings = settings
        #: source-only validation behind the prior choice: list of (log_a_sd, mae, max_err)
        self.selection_ = selection or []
        self.grid_ = np.linspace(settings.grid_lo, settings.grid_hi, settings.n_grid)
        self.log_prior_ = -0.5 * self.grid_ ** 2
        p = np.clip(bank.prob(self.grid_), 1e-12, 1 - 1e-12)
        self.pgrid_ = p
        self.psum_ = p.sum(axis=1)
        self.logp_ = np.log(p)
        self.log1mp_ = np.log1p(-p)

    def start(self, budget, seed=0) -> AtlasSession:
        """A new session; BudgetError for a budget that is not a whole number in [0, n_tasks]."""
        return AtlasSession(self.tasks, budget, seed, self)


class ATLAS(Method):
    """ATLAS-style adaptive test on a source-fitted 4PL bank (HSPR_SPEC section 8).

    Parameters
    ----------
    settings : AtlasSettings or dict, optional
        The defaults when None; a dict of its fields (nested settings as dicts, as
        :meth:`get_params` gives them).
    **kwargs
        Overrides of :class:`AtlasSettings` fields (e.g. ``top_k=5``), applied to ``settings``. A
        nested settings group (``fourpl``) may be a dict of its fields.

    Raises
    ------
    ValueError
        From :class:`AtlasSettings` for an invalid setting (``top_k`` < 1, ``level`` outside (0, 1),
        a grid that is not increasing, ...), naming it.
    """

    name = "atlas"
    seed_kind = "adaptive"
    accepts_pass_rates = True

    def __init__(self, settings: AtlasSettings | None = None, **kwargs) -> None:
        self.settings = settings_with(AtlasSettings, settings, kwargs, self.name)

    def get_params(self) -> dict:
        """The settings dataclass as JSON values (nested settings as objects)."""
        return plain(self.settings)

    @classmethod
    def from_params(cls, params: dict) -> ATLAS:
        """From :meth:`get_params` output; raises ValueError naming an unknown setting."""
        return cls(build_dataclass(AtlasSettings, params, cls.name))

    def fit(self, source: ResponseMatrix) -> FittedATLAS:
        """Choose the discrimination prior on the sources, fit (or reuse from the per-process
        cache) the 4PL bank on ``source`` (shape (n_sources, n_tasks)) and tabulate it on the
        ability grid."""
        st = self.settings
        four = st.fourpl
        table = []
        rates = source.rates()  # 0/1, or pass rates over repeated trials
        if st.log_a_sd_grid is not None and len(st.log_a_sd_grid) > 1 and source.n_agents >= 4:
            budget = max(1, int(round(st.select_fraction * source.n_tasks)))
            for sd in st.log_a_sd_grid:
                cand = replace(four, prior_log_a_sd=sd)
                errs = []
                for held, bank in inner_banks(source, cand, st.inner_folds):
                    fm = FittedATLAS(bank, st)
                    fm.trials = source.trials  # its sessions take the held-out rows' pass rates
                    for r in held:
                        errs.append(_replay_row(fm, rates[r], budget) - rates[r].mean())
                e = np.abs(np.asarray(errs))
                table.append((sd, float(e.mean()), float(e.max())))
            best = min(range(len(table)), key=lambda i: (round(table[i][1], 12), round(table[i][2], 12), i))
            four = replace(four, prior_log_a_sd=table[best][0])
        elif st.log_a_sd_grid is not None:
            four = replace(four, prior_log_a_sd=st.log_a_sd_grid[0])
        return FittedATLAS(fit_4pl_cached(source, four), st, table)


def _replay_row(model: FittedATLAS, row: np.ndarray, budget: int, seed: int = 0) -> float:
    """Point estimate of one ATLAS run on a known row of 0/1 outcomes or pass rates (source-only validation)."""
    sess = model.start(budget, seed)
    while not sess.done:
        t = sess.ask()
        sess.tell(t, row[sess._index[t]].item())  # an int for 0/1 rows, a float pass rate otherwise
    return sess.estimate().point
