"""PTA-IRT port (outcome-only): 4PL bank, Fisher information at the source abilities,
information-ranked selection within pass-rate strata, MAP ability, p-IRT score.

HSPR_SPEC section 8 and the PTA-IRT paper (``seeds/002``, sections 3.3-3.4):

1. A 4PL item bank is fitted on the source agents (:func:`hspr.irt.fourpl.fit_4pl_cached`,
   shared with ATLAS; abilities rescaled to mean 0, sd 1).
2. Each task's information is its Fisher information summed over the source abilities,
   ``Info(j) = sum_s I_j(theta_s)`` (paper Eq. 4-5 with all quality weights 1).
3. Tasks are split into ``n_strata`` equal-width bins of their source pass rate
   (``min(floor(r_j * K), K - 1)``; the paper's "difficulty bins by r_j"); the budget is
   allocated to the bins in proportion to their sizes (largest remainder, ties to the lower
   bin), and each bin contributes its highest-information tasks (ties to the lower column).
   The calibration set is deterministic: one path per budget.
4. The target's ability is the MAP under a N(0, 1) prior on the observed outcomes
   (L-BFGS-B, :func:`hspr.irt.fourpl.map_abilities`); the score is
   ``(successes + sum_unqueried E[p_j(theta)]) / N`` with the expectation over the Laplace
   posterior ``N(theta_hat, 1/precision)`` (21-point Gauss-Hermite; ``posterior_average=False``
   plugs in ``theta_hat``). The 90 % interval is the normal-mixture predictive over those nodes
   (Bernoulli variance of the unqueried tasks given theta), as in :mod:`hspr.methods.atlas`.
   On a bank of repeated trials every outcome is a task's pass rate, a fractional outcome of the
   same likelihood (as in ATLAS), and the pass-rate strata are those of the sources' mean rates.

Free settings, chosen on the source agents only (never on target rows): the number of strata
(not given by the paper; ``strata_grid``) and the sd of the 4PL's log-discrimination prior
(``log_a_sd_grid``, as in :mod:`hspr.methods.atlas`). Leave-source-agents-out validation: the
source rows are split into ``inner_folds`` groups (:func:`hspr.irt.fourpl.inner_split`); for each
group and prior candidate the 4PL is refitted without it (:func:`hspr.irt.fourpl.inner_banks`,
shared with ATLAS through the fit cache); every (prior, n_strata) pair selects its calibration
set on the inner bank and estimates each held-out source agent's score; the pair with the lowest
MAE wins (ties: lower max error, then grid order, prior-major). The choice depends on the
budget, so it is made (and cached on the fitted model) the first time a budget is started.

Trajectory features. The paper's trajectory-aware scorer and LUPI teacher need per-cell
trajectory summaries; the public response matrices bundled here have none, so with
``features=None`` (the default, and the only case the replay exercises) the method is
outcome-only, which is the HSPR_SPEC "PTA-IRT (outcome-only)" baseline. ``fit`` accepts an
optional ``features`` array of shape ``(n_sources, n_tasks, k)`` (rows of NaN = no usable summary
for that cell). It enters only through the paper's reliability factor: with features,
``Info(j) = mean_{s usable} I_j(theta_s) * log(1 + ESS(j))``, ``ESS(j)`` = number of sources with
a usable summary on task j (Eq. 5 with quality weights 1). The summary encoder and the
teacher-student distillation are not ported (they need the paper's learned encoders).
Sessions accept the target's own features (shape ``(n_tasks, k)``) and keep them on the session
for callers, but, as in the paper's student at test time, estimation uses outcomes only.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
from numpy.polynomial.hermite_e import hermegauss

from ..data.matrix import ResponseMatrix
from ..irt.fourpl import FourPLBank, FourPLSettings, fit_4pl_cached, inner_banks, map_abilities, prob_4pl
from ..params import build_dataclass, plain, settings_with
from ..session import NOMINAL_LEVEL, FittedModel, FixedOrderSession, Method, ScoreEstimate, check_budget
from .atlas import mixture_score_summary

__all__ = ["PTAIRT", "PTAIRTSession", "PTASettings", "FittedPTAIRT", "allocate", "calibration_set",
           "pass_rate_bins", "pta_estimate", "task_information"]


@dataclass(frozen=True)
class PTASettings:
    """Settings of the PTA-IRT port.

    Attributes
    ----------
    n_strata : int or None
        Fixed number of pass-rate strata; None chooses it on the sources from ``strata_grid``.
    strata_grid : tuple of int
        Candidates for the source-only choice, in tie-break order.
    inner_folds : int
        Leave-source-agents-out groups for that choice (capped at the number of sources).
    posterior_average : bool
        Average predictions over the Laplace ability posterior (True) or plug in the MAP.
    n_quad : int
        Gauss-Hermite nodes for that average.
    level : float
        Credible level of the reported interval.
    fourpl : FourPLSettings
        Item-bank fit settings (shared cache key with ATLAS when equal).
    log_a_sd_grid : tuple of float or None
        Candidates for ``fourpl.prior_log_a_sd``, chosen on the sources jointly with the number
        of strata; None keeps ``fourpl`` as given.
    """

    n_strata: int | None = None
    strata_grid: tuple[int, ...] = (1, 2, 3, 4, 5, 6, 8, 10)
    inner_folds: int = 4
    posterior_average: bool = True
    n_quad: int = 21
    level: float = NOMINAL_LEVEL
    fourpl: FourPLSettings = field(default_factory=FourPLSettings)
    log_a_sd_grid: tuple[float, ...] | None = (0.5, 1.0)

    def __post_init__(self) -> None:
        if self.log_a_sd_grid is not None:
            if not self.log_a_sd_grid or any(v <= 0 for v in self.log_a_sd_grid):
                raise ValueError(f"log_a_sd_grid needs positive values, got {self.log_a_sd_grid!r}")
            object.__setattr__(self, "log_a_sd_grid", tuple(float(v) for v in self.log_a_sd_grid))
        if self.n_strata is not None and (int(self.n_strata) != self.n_strata or self.n_strata < 1):
            raise ValueError(f"n_strata must be a whole number >= 1 or None, got {self.n_strata!r}")
        if not self.strata_grid or any(int(k) != k or k < 1 for k in self.strata_grid):
            raise ValueError(f"strata_grid needs whole numbers >= 1, got {self.strata_grid!r}")
        object.__setattr__(self, "strata_grid", tuple(int(k) for k in self.strata_grid))
        if self.inner_folds < 2:
            raise ValueError(f"inner_folds must be >= 2, got {self.inner_folds}")
        if self.n_quad < 1 or not 0 < self.level < 1:
            raise ValueError("need n_quad >= 1 and 0 < level < 1")


# ----------------------------------------------------------------------------- selection
def _check_features(features, n_agents: int, n_tasks: int, what: str) -> np.ndarray | None:
    if features is None:
        return None
    f = np.asarray(features, dtype=float)
    if f.ndim != 3 or f.shape[:2] != (n_agents, n_tasks):
        raise ValueError(f"{what} must have shape ({n_agents}, {n_tasks}, k), got {f.shape}")
    return f


def task_information(bank: FourPLBank, features: np.ndarray | None = None) -> np.ndarray:
    """Selection score of every task, shape (n_tasks,).

    Outcome-only (``features is None``): ``sum_s I_j(theta_s)`` over the bank's source abilities.
    With features of shape (n_sources, n_tasks, k): the paper's
    ``mean_{s usable} I_j(theta_s) * log(1 + ESS_j)`` (a cell is usable when its feature
    vector is finite; ESS_j counts usable cells).
    """
    I = bank.info(bank.theta)  # (n_sources, n_tasks)
    if features is None:
        return I.sum(axis=0)
    usable = np.isfinite(features).all(axis=2).astype(float)
    ess = usable.sum(axis=0)
    fisher = (usable * I).sum(axis=0) / np.maximum(ess, 1.0)
    return fisher * np.log1p(ess)


def pass_rate_bins(rate: np.ndarray, n_strata: int) -> np.ndarray:
    """Equal-width pass-rate bins (PTA-IRT's strata, module docstring step 3).

    Parameters
    ----------
    rate : array of float, shape (n_tasks,)
        Source pass rates, 0-1 scale.
    n_strata : int
        K, the number of bins of width 1/K.

    Returns
    -------
    ndarray of int, shape (n_tasks,)
        Label ``min(floor(r * K), K - 1)`` of each task (a rate of 1 joins the top bin).
    """
    return np.minimum(np.floor(np.asarray(rate) * n_strata), n_strata - 1).astype(int)


def allocate(sizes: np.ndarray, budget: int) -> np.ndarray:
    """Proportional allocation of ``budget`` to strata of the given sizes (largest remainder,
    ties to the lower stratum; a stratum never gets more than its size).

    Parameters
    ----------
    sizes : array of int, shape (n_strata,)
        Tasks per stratum; their sum must be > 0.
    budget : int
        Tasks to allocate, 0 <= budget <= sizes.sum().

    Returns
    -------
    ndarray of int, shape (n_strata,)
        Tasks per stratum, summing to ``budget``.
    """
    sizes = np.asarray(sizes, dtype=int)
    total = int(sizes.sum())
    quota = budget * sizes / total
    alloc = np.floor(quota).astype(int)
    left = budget - int(alloc.sum())
    if left > 0:
        frac = quota - alloc
        frac[alloc >= sizes] = -1.0
        order = np.argsort(-frac, kind="stable")
        alloc[order[:left]] += 1
    return alloc


def calibration_set(info: np.ndarray, rate: np.ndarray, budget: int, n_strata: int) -> np.ndarray:
    """PTA-IRT calibration set: top-information tasks within pass-rate strata.

    Parameters
    ----------
    info : array, shape (n_tasks,)
        Selection scores (:func:`task_information`).
    rate : array, shape (n_tasks,)
        Source pass rates (0-1).
    budget : int
        Number of tasks to select, 0 <= budget <= n_tasks.
    n_strata : int

    Returns
    -------
    int array, shape (budget,)
        Column indices, ordered by decreasing information (ties by column index).
    """
    labels = pass_rate_bins(rate, n_strata)
    sizes = np.bincount(labels, minlength=n_strata)
    alloc = allocate(sizes, budget)
    order = np.argsort(-info, kind="stable")
    chosen = []
    for h in range(n_strata):
        if alloc[h]:
            members = order[labels[order] == h]
            chosen.append(members[: alloc[h]])
    sel = np.concatenate(chosen) if chosen else np.zeros(0, dtype=int)
    return sel[np.argsort(-info[sel], kind="stable")].astype(int)


# ----------------------------------------------------------------------------- estimation
def pta_estimate(bank: FourPLBank, idx, Y, posterior_average: bool = True, n_quad: int = 21,
                 level: float | None = None):
    """p-IRT score estimates of agents observed on columns ``idx``: step 4 of the module's summary
    (HSPR_SPEC section 8; PTA-IRT paper, ``seeds/002``, section 3.4), the MAP ability under a N(0, 1)
    prior and ``(successes + sum_unobserved E[p_j(theta)]) / N`` over its Laplace posterior.

    Parameters
    ----------
    bank : FourPLBank
    idx : int array, shape (n_obs,)
        Observed columns (the same for every agent).
    Y : array of 0/1 outcomes or pass rates, shape (n_agents, n_obs)
    posterior_average : bool
        Average over the Laplace posterior (Gauss-Hermite) or plug in the MAP ability.
    n_quad : int
        Gauss-Hermite nodes.
    level : float, optional
        If given, also return (median, lower, upper) of the mixture predictive per agent.

    Returns
    -------
    mean : array, shape (n_agents,), 0-1 scale
        ``(successes + sum_unobserved E[p_j(theta)]) / N``.
    summary : array, shape (n_agents, 3) or None
        Median, lower, upper (only when ``level`` is given).

    Raises
    ------
    IndexError
        For a column of ``idx`` >= the bank's number of tasks.
    """
    idx = np.asarray(idx, dtype=int)
    Y = np.atleast_2d(np.asarray(Y, dtype=float))
    N = bank.n_tasks
    unobs = np.ones(N, dtype=bool)
    unobs[idx] = False
    theta, prec = map_abilities(bank, idx, Y)
    if posterior_average and n_quad > 1:
        x, w = hermegauss(n_quad)
        w = w / w.sum()
        nodes = theta[:, None] + x[None, :] / np.sqrt(prec)[:, None]  # (n_agents, n_quad)
    else:
        w = np.ones(1)
        nodes = theta[:, None]
    ua, ub, uc, ud = bank.a[unobs], bank.b[unobs], bank.c[unobs], bank.d[unobs]
    P = prob_4pl(nodes.ravel(), ua, ub, uc, ud)  # (n_agents * n_q, n_unobs)
    ssum = P.sum(axis=1).reshape(nodes.shape)
    succ = Y.sum(axis=1)
    comp_mean = (succ[:, None] + ssum) / N
    mean = comp_mean @ w
    if level is None:
        return mean, None
    var = (P * (1 - P)).sum(axis=1).reshape(nodes.shape) / N ** 2
    n_unobs = int(unobs.sum())
    out = np.empty((Y.shape[0], 3))
    for r in range(Y.shape[0]):
        _, med, lo, hi = mixture_score_summary(w, comp_mean[r], var[r], succ[r] / N, (succ[r] + n_unobs) / N, level)
        out[r] = (med, lo, hi)
    return mean, out


# ----------------------------------------------------------------------------- session
class PTAIRTSession(FixedOrderSession):
    """One PTA-IRT run: asks the budget's calibration set, then estimates (see module docstring).

    Parameters
    ----------
    tasks : tuple of str, length n_tasks
    budget : int
        Whole number in [0, n_tasks]; 0 gives the prior estimate.
    seed : int
        Unused (the path is deterministic); kept for the protocol.
    bank : FourPLBank
        The item bank chosen for this budget.
    settings : PTASettings
    order : int array, shape (n_tasks,)
        Calibration set first, then the other tasks by decreasing information (asked only if the
        caller told outcomes outside the set).
    features : array, shape (n_tasks, k), optional
        The target's trajectory features; stored as ``self.features`` and not used by the
        outcome-only estimator.
    """

    has_prior_estimate = True

    def __init__(self, tasks, budget, seed, bank: FourPLBank, settings: PTASettings, order: np.ndarray,
                 features=None) -> None:
        super().__init__(tasks, budget, seed, order)
        self._bank = bank
        self._st = settings
        if features is not None:
            features = _check_features(np.asarray(features, float)[None], 1, self.n_tasks, "session features")[0]
        self.features = features

    def estimate(self) -> ScoreEstimate:
        """p-IRT estimate (0-1 scale) from every outcome told so far; exact at full budget."""
        st = self._st
        y = np.asarray(self.outcomes, dtype=float)[None, :]
        mean, summ = pta_estimate(self._bank, np.asarray(self._cols, dtype=int), y, st.posterior_average,
                                  st.n_quad, level=st.level)
        mu = float(mean[0])
        med, lo, hi = (float(v) for v in summ[0])
        return ScoreEstimate(point=mu, mean=mu, median=med, lower=lo, upper=hi, n_queried=self.n_queried,
                             budget=self.budget, level=st.level)


@dataclass(frozen=True)
class _Candidate:
    """One item-bank candidate: the outer bank and its source-only validation folds."""

    bank: FourPLBank
    info: np.ndarray
    inner: tuple  # of (bank, info, pass_rate, held-out rows (n_held, n_tasks) float)


class FittedPTAIRT(FittedModel):
    """PTA-IRT fitted on source agents.

    Attributes
    ----------
    pass_rate_ : array, shape (n_tasks,)
        Source pass rates.
    log_a_sds_ : tuple of float
        Discrimination-prior candidates (one 4PL bank each).
    choice_ : dict budget -> (log_a_sd, n_strata)
        The setting used for each budget started so far: a memo filled by :meth:`start`, not a
        state; the choice depends on the sources and the budget only, so a copy of the model in
        another process (a joblib worker) fills its own with the same choices.
    cv_table_ : dict budget -> list of (log_a_sd, n_strata, mae, max_err)
        Source-only validation results behind each choice (0-1 scale errors), memoised likewise.
    """

    nested_budgets = False

    def __init__(self, candidates: list[tuple[float, _Candidate]], pass_rate: np.ndarray,
                 settings: PTASettings) -> None:
        self._cands = candidates
        self.log_a_sds_ = tuple(sd for sd, _ in candidates)
        self.tasks = tuple(candidates[0][1].bank.tasks)
        self.pass_rate_ = pass_rate
        self.settings = settings
        self.choice_: dict[int, tuple[float, int]] = {}
        self.cv_table_: dict[int, list[tuple[float, int, float, float]]] = {}

    def _choose(self, budget: int) -> tuple[int, int]:
        """(candidate index, n_strata) for ``budget``: fixed, or chosen on the sources (cached)."""
        st = self.settings
        grid = (st.n_strata,) if st.n_strata is not None else st.strata_grid
        if budget in self.choice_:
            sd, K = self.choice_[budget]
            return self.log_a_sds_.index(sd), K
        if len(self._cands) == 1 and len(grid) == 1:
            self.choice_[budget] = (self.log_a_sds_[0], int(grid[0]))
            return 0, int(grid[0])
        table, keys = [], []
        for ci, (sd, cand) in enumerate(self._cands):
            for K in grid:
                errs = []
                for bank, info, rate, rows in cand.inner:
                    S = calibration_set(info, rate, budget, K)
                    est, _ = pta_estimate(bank, S, rows[:, S], st.posterior_average, st.n_quad)
                    errs.append(np.abs(est - rows.mean(axis=1)))
                e = np.concatenate(errs) if errs else np.zeros(1)
                table.append((sd, int(K), float(e.mean()), float(e.max())))
                keys.append((ci, int(K)))
        best = min(range(len(table)), key=lambda i: (round(table[i][2], 12), round(table[i][3], 12), i))
        self.cv_table_[budget] = table
        self.choice_[budget] = table[best][:2]
        return keys[best]

    def bank_for(self, budget: int) -> FourPLBank:
        """The 4PL bank used at ``budget``."""
        return self._cands[self._choose(check_budget(budget, len(self.tasks)))[0]][1].bank

    def n_strata_for(self, budget: int) -> int:
        """The number of strata used at ``budget``."""
        return self._choose(check_budget(budget, len(self.tasks)))[1]

    def calibration(self, budget: int) -> np.ndarray:
        """The calibration set (column indices, shape (budget,)) for ``budget``."""
        b = check_budget(budget, len(self.tasks))
        ci, K = self._choose(b)
        return calibration_set(self._cands[ci][1].info, self.pass_rate_, b, K)

    def start(self, budget, seed=0, features=None) -> PTAIRTSession:
        """A new session; BudgetError for a budget that is not a whole number in [0, n_tasks].

        ``features`` (shape (n_tasks, k), optional): the target's trajectory features, stored on
        the session (see the module docstring)."""
        b = check_budget(budget, len(self.tasks))
        ci, K = self._choose(b)
        cand = self._cands[ci][1]
        cal = calibration_set(cand.info, self.pass_rate_, b, K)
        rest = np.argsort(-cand.info, kind="stable")
        rest = rest[~np.isin(rest, cal)]
        return PTAIRTSession(self.tasks, b, seed, cand.bank, self.settings, np.concatenate([cal, rest]), features)


class PTAIRT(Method):
    """Outcome-only PTA-IRT (HSPR_SPEC section 8; PTA-IRT paper sections 3.3-3.4).

    Parameters
    ----------
    settings : PTASettings or dict, optional
        The defaults when None; a dict of its fields (nested settings as dicts, as
        :meth:`get_params` gives them).
    **kwargs
        Overrides of :class:`PTASettings` fields (e.g. ``n_strata=5``). A nested settings group
        (``fourpl``) may be a dict of its fields.

    Raises
    ------
    ValueError
        From :class:`PTASettings` for an invalid setting (``n_strata`` < 1, ``inner_folds`` < 2,
        non-positive prior sds, ...), naming it.
    """

    name = "pta_irt"
    seed_kind = "deterministic"
    accepts_pass_rates = True

    def __init__(self, settings: PTASettings | None = None, **kwargs) -> None:
        self.settings = settings_with(PTASettings, settings, kwargs, self.name)

    def get_params(self) -> dict:
        """The settings dataclass as JSON values (nested settings as objects)."""
        return plain(self.settings)

    @classmethod
    def from_params(cls, params: dict) -> PTAIRT:
        """From :meth:`get_params` output; raises ValueError naming an unknown setting."""
        return cls(build_dataclass(PTASettings, params, cls.name))

    def fit(self, source: ResponseMatrix, features=None) -> FittedPTAIRT:
        """Fit on ``source`` (shape (n_sources, n_tasks)).

        One 4PL bank per discrimination-prior candidate (shared with ATLAS through
        :func:`hspr.irt.fourpl.fit_4pl_cached`), plus, when a setting is to be chosen, the
        banks of the leave-source-agents-out folds (:func:`hspr.irt.fourpl.inner_banks`).

        Parameters
        ----------
        source : ResponseMatrix
        features : array, shape (n_sources, n_tasks, k), optional
            Per-cell trajectory features (NaN rows = unusable); None = outcome-only.

        Raises
        ------
        ValueError
            If ``features`` has the wrong shape.
        """
        st = self.settings
        feats = _check_features(features, source.n_agents, source.n_tasks, "features")
        sds = st.log_a_sd_grid if st.log_a_sd_grid is not None else (st.fourpl.prior_log_a_sd,)
        n_choices = len(sds) * (1 if st.n_strata is not None else len(st.strata_grid))
        validate = n_choices > 1 and source.n_agents >= 2
        cands = []
        for sd in sds:
            four = replace(st.fourpl, prior_log_a_sd=sd)
            bank = fit_4pl_cached(source, four)
            inner = []
            if validate:
                for held, ib in inner_banks(source, four, st.inner_folds):
                    keep = np.setdiff1d(np.arange(source.n_agents), held)
                    inner.append((ib, task_information(ib, None if feats is None else feats[keep]),
                                  _pass_rate(source.rows(keep)), np.asarray(source.rates()[held], dtype=float)))
            cands.append((sd, _Candidate(bank, task_information(bank, feats), tuple(inner))))
        return FittedPTAIRT(cands, _pass_rate(source), st)


def _pass_rate(source: ResponseMatrix) -> np.ndarray:
    W = np.ones(source.shape) if source.missing is None else (~source.missing).astype(float)
    return (source.rates() * W).sum(axis=0) / np.maximum(W.sum(axis=0), 1.0)
