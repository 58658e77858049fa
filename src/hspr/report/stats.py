"""Report statistics: replay metrics (HSPR_SPEC section 7, Eqs. 17-18), interval coverage, and the
paired analysis against a baseline (bootstrap CI, Wilcoxon, Holm)."""

from __future__ import annotations

import inspect
import math
import numbers
import warnings
from collections.abc import Iterable, Mapping

import numpy as np
import pandas as pd
from scipy import stats

from ..params import is_number
from ..session import NOMINAL_LEVEL
from .inputs import (
    _EXTRA_LEVEL,
    MACRO,
    POOLED,
    SCALE_RANGE,
    ZERO_METHOD,
    ReportError,
    _check_runs,
    _closest_fraction,
    _is_null,
    _methods,
    bank_order,
    default_baseline,
    macro_banks,
    plain_label,
    pooled_banks,
)


def covered(lower: np.ndarray, upper: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """Whether each interval holds its true score (0-1 scale, 1e-12 tolerance), bool like ``truth``.

    The one coverage rule of the package: :func:`summarize` and :func:`coverage_table` use it.
    """
    return (lower - 1e-12 <= truth) & (truth <= upper + 1e-12)


def seed_metrics(est: np.ndarray, truth: np.ndarray) -> dict:
    """Metrics over the targets of one (bank, method, budget, seed).

    Parameters
    ----------
    est, truth : arrays of shape (n_targets,), 0-1 scale.

    Returns
    -------
    dict with ``mae_pp`` (Eq. 17), ``maxerr_pp`` (Eq. 18) in percentage points and
    ``kendall_tau_b`` (ties counted; NaN when either side is constant).

    Raises
    ------
    ValueError
        Unless ``est`` and ``truth`` are 1-D of one length >= 1 (numpy would broadcast [0.5, 0.2]
        against [0.4]), ``truth`` in [0, 1] and ``est`` in :data:`~hspr.report.inputs.SCALE_RANGE`
        ([-1, 2]; scores in percent gave an MAE 100 times too large).
    """
    est = np.asarray(est, float)
    truth = np.asarray(truth, float)
    if est.ndim != 1 or est.shape != truth.shape or est.size == 0:
        raise ValueError(f"est and truth must be 1-D arrays of one length >= 1 (one entry per target), got shapes "
                         f"{est.shape} and {truth.shape}")
    # truth is a score; an estimate may stray a little outside [0, 1] (an unclipped linear map), not by 1
    for what, x, (lo, hi) in (("est", est, SCALE_RANGE), ("truth", truth, (0.0, 1.0))):
        bad = np.flatnonzero(~((x >= lo) & (x <= hi)))  # NaN fails both comparisons
        if bad.size:
            hint = " (a score in percent? divide by 100)" if np.all(np.isfinite(x)) and np.max(np.abs(x)) <= 100 else ""
            raise ValueError(f"{what} must hold scores on the 0-1 scale; entry {bad[0]} is {float(x[bad[0]])!r}{hint}")
    err = np.abs(est - truth)
    # rounded to 1e-12 so scores equal up to floating-point noise (0.4925 vs 0.49250000000000005,
    # k/N reached by different sums) count as the ties they are
    tau = stats.kendalltau(np.round(est, 12), np.round(truth, 12), variant="b").statistic if len(est) > 1 else np.nan
    return {"mae_pp": 100 * err.mean(), "maxerr_pp": 100 * err.max(), "kendall_tau_b": float(tau)}


#: columns of :func:`summarize`, in order
SUMMARY_COLUMNS = ("budget_fraction", "budget", "bank", "method", "mae_pp", "maxerr_pp", "kendall_tau_b",
                   "coverage_90", "coverage_ci_low", "coverage_ci_high", "mean_width_pp", "n_targets", "n_seeds")


def summarize(runs: pd.DataFrame) -> pd.DataFrame:
    """Seed-averaged metrics per (bank, method, budget).

    ``runs`` needs columns bank, method, budget_fraction, budget, seed, target, estimate, truth,
    and optionally lower/upper (the 90 % interval). Metrics are computed per seed over all
    targets of the 4 folds, then averaged over seeds (HSPR_SPEC section 7). Coverage is the
    fraction of runs whose interval holds the truth (its ends included: :func:`covered`), over the
    runs that have an interval, with ``coverage_ci_low`` / ``coverage_ci_high``, its Wilson 95 %
    interval with n = the targets that have one (a target's seeds are not independent runs: their
    share covered varies less than a coin's, so the interval errs wide); width is in pp. Columns
    :data:`SUMMARY_COLUMNS`, in the order of the report's ``comparison.csv``; with runs of a
    stopping rule (an ``n_queried`` column, ``hspr replay --stop-width``) also ``mean_tasks_run``,
    the tasks actually run, averaged over the runs, and ``stopped_early``, the share (0-1) of runs
    that ran fewer tasks than their budget (both NaN for runs without an ``n_queried``; a method
    that cannot stop early, having no interval, runs its whole budget: share 0).

    Raises
    ------
    ReportError
        For missing columns, no runs, or an estimate or truth not on the 0-1 scale (an audit:
        runs in % gave MAE 350 pp here, where :func:`comparison_table` refused them).
    """
    return _summary(_check_runs(runs))


def _summary(runs: pd.DataFrame) -> pd.DataFrame:
    """:func:`summarize` of runs :func:`~hspr.report.inputs._check_runs` has checked."""
    rows = []
    keys = ["bank", "method", "budget_fraction"]
    for key, g in runs.groupby(keys, sort=False):
        g = g.sort_values(["seed", "target"], kind="stable")  # sums in one order: the same bits in any run order
        per_seed = [seed_metrics(s["estimate"].to_numpy(), s["truth"].to_numpy()) for _, s in g.groupby("seed")]
        row = dict(zip(keys, key))
        row["budget"] = int(g["budget"].iloc[0])
        for m in ("mae_pp", "maxerr_pp", "kendall_tau_b"):
            vals = np.array([p[m] for p in per_seed], dtype=float)
            ok = np.isfinite(vals)  # tau_b is undefined (NaN) when every truth ties
            row[m] = float(vals[ok].mean()) if ok.any() else float("nan")
        row["n_targets"] = int(g["target"].nunique())
        row["n_seeds"] = int(g["seed"].nunique())
        with_interval = g[g["lower"].notna() & g["upper"].notna()] if "lower" in g and "upper" in g else g.iloc[:0]
        if len(with_interval):  # over the runs that have one (a report notes a method with some runs without)
            lo, hi, t = (with_interval[c].to_numpy(float) for c in ("lower", "upper", "truth"))
            row["coverage_90"] = float(np.mean(covered(lo, hi, t)))
            row["mean_width_pp"] = float(100 * np.mean(hi - lo))
            # a statistics review: a coverage of 0.79 over 28 agents was read against a goal of 0.85 with no interval
            row["coverage_ci_low"], row["coverage_ci_high"] = _wilson(row["coverage_90"], with_interval["target"].nunique())
        else:
            row["coverage_90"] = row["mean_width_pp"] = row["coverage_ci_low"] = row["coverage_ci_high"] = None
        if "n_queried" in g:
            row["mean_tasks_run"] = float(g["n_queried"].mean())  # NaN where no run had a stopping rule
            # the share, because a mean of 49.96 of 50 printed as 50.0 hid that a run stopped
            row["stopped_early"] = (float((g["n_queried"] < g["budget"]).mean()) if g["n_queried"].notna().all()
                                    else float("nan"))
        rows.append(row)
    # the column order of the report's comparison.csv, so replay --csv and report read alike
    stopped = "n_queried" in runs and runs["n_queried"].notna().any()
    return pd.DataFrame(rows, columns=[*SUMMARY_COLUMNS, *(["mean_tasks_run", "stopped_early"] if stopped else [])])


def tasks_run_text(mean: float, stopped_early: float) -> str:
    """The "tasks run" cell of a summary table: the mean and, when some runs stopped before
    their budget, their share, e.g. ``'49.8 (2 % early)'`` (2 % of the runs stopped early); ``'–'`` without a rule.
    A share below 1 % shows as ``<1 %``, never 0, and one below 100 % as ``>99 %`` at most, never 100."""
    if mean is None or pd.isna(mean):
        return "–"
    if stopped_early is None or pd.isna(stopped_early) or stopped_early == 0:
        return f"{mean:.1f}"
    share = "<1" if stopped_early < 0.01 else ">99" if 0.995 <= stopped_early < 1 else f"{100 * stopped_early:.0f}"
    return f"{mean:.1f} ({share} % early)"




# --------------------------------------------------------------------------------------------
# 2. paired analysis


def holm(pvalues) -> np.ndarray:
    """Holm-Bonferroni step-down adjusted p-values (Holm 1979, Scand. J. Statist. 6:65-70).

    Parameters
    ----------
    pvalues : array_like, shape (m,)
        Raw p-values in [0, 1]; NaN entries are left out of the family and stay NaN.

    Returns
    -------
    numpy.ndarray, shape (m,)
        ``p_adj[(i)] = max_{j <= i} min(1, (m - j + 1) p_(j))`` in the original order.

    Raises
    ------
    ValueError
        For a p-value outside [0, 1].

    Examples
    --------
    >>> holm([0.01, 0.04, 0.03, 0.005]).round(3).tolist()
    [0.03, 0.06, 0.06, 0.02]
    """
    p = np.asarray(pvalues, dtype=float)
    bad = (p < 0) | (p > 1)
    if np.any(bad):
        raise ValueError(f"p-values must lie in [0, 1], got {p[bad][0]:g} (entry {int(np.flatnonzero(bad)[0])})")
    out = np.full(p.shape, np.nan)
    ok = ~np.isnan(p)
    q = p[ok]
    order = np.argsort(q, kind="stable")
    adj = np.empty_like(q)
    adj[order] = np.minimum(1.0, np.maximum.accumulate((q.size - np.arange(q.size)) * q[order]))
    out[ok] = adj
    return out


def per_target_errors(runs: pd.DataFrame) -> pd.DataFrame:
    """Seed-averaged absolute error per (budget_fraction, bank, method, target).

    Returns
    -------
    pandas.DataFrame
        Columns budget_fraction, bank, method, target, ``abs_err_pp`` (mean over seeds of
        ``100 * |estimate - truth|``), ``n_seeds``.

    Raises
    ------
    ReportError
        For missing columns, no runs, or scores not on the 0-1 scale (as :func:`summarize`).
    """
    runs = _check_runs(runs)
    # a target's seeds in one order, so its mean has the same bits in any run or file order (an audit: 1e-16 apart,
    # which a variants table took for a changed error)
    e = runs.assign(abs_err_pp=100.0 * (runs["estimate"] - runs["truth"]).abs()).sort_values("seed", kind="stable")
    g = e.groupby(["budget_fraction", "bank", "method", "target"], sort=False)
    return g.agg(abs_err_pp=("abs_err_pp", "mean"), n_seeds=("seed", "nunique")).reset_index()


#: resamples :func:`scipy.stats.bootstrap` draws at once in the paired analysis (memory: batch x targets floats)
BOOTSTRAP_BATCH = 10_000

_BOOTSTRAP_HAS_RNG = "rng" in inspect.signature(stats.bootstrap).parameters  # scipy >= 1.15


def _bootstrap_ci(d: np.ndarray, n_resamples: int, seed: int) -> tuple[float, float]:
    if d.size < 2:
        return math.nan, math.nan
    if np.ptp(d) == 0:
        return float(d[0]), float(d[0])
    kw = {"rng": seed} if _BOOTSTRAP_HAS_RNG else {"random_state": seed}
    # in batches of 10,000 resamples (one batch at the default: the same draws as without): a hostile trial
    # measured 454 MB at 100,000 resamples of 198 targets, so several GB at the allowed 1,000,000
    res = stats.bootstrap((d,), np.mean, n_resamples=n_resamples, method="percentile", confidence_level=0.95,
                          vectorized=True, batch=BOOTSTRAP_BATCH, **kw)
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


#: resample x target cells :func:`two_way_ci` holds at once (each a float64 array of this size)
_TWO_WAY_CELLS = 4_000_000


def _seed_resampled(rng: np.random.Generator, a: np.ndarray, b: np.ndarray, same_seeds: bool, r: int) -> np.ndarray:
    """``r`` bootstrap draws of each row's seed-averaged difference ``a - b`` (shapes (n, k_a), (n, k_b)): each side's
    query seeds drawn with replacement, one draw for both with ``same_seeds``. Shape (r, n). A side with one seed
    draws nothing from ``rng`` (numpy's multinomial over one category uses no random numbers)."""
    out = np.zeros((r, a.shape[0]))
    for sign, e in (((1.0, a - b),) if same_seeds else ((1.0, a), (-1.0, b))):
        k = e.shape[1]
        out += sign * ((rng.multinomial(k, np.full(k, 1 / k), size=r) / k) @ e.T)  # (r, k): each seed's share
    return out


def two_way_ci(err_method: np.ndarray, err_baseline: np.ndarray, n_resamples: int, seed: int,
               same_seeds: bool = False) -> tuple[float, float]:
    """95 % percentile bootstrap interval of the mean paired difference of seed-averaged errors, resampling the
    targets and, independently for each side, its query seeds.

    A statistics review: a method whose query seed draws the same tasks for every target (uniform sampling: one
    random draw per seed) gives errors that move together from seed to seed, which a bootstrap of the targets
    alone leaves out (Lite, uniform against hspr: [3.65, 4.59] pp over targets, [2.70, 6.20] over targets and
    seeds). Each resample draws the targets with replacement (shared by both sides: the pairs stay pairs) and each
    side's seeds with replacement: one draw for both sides when they ran the same seeds (``same_seeds``: a variant
    of a method asks what the method asks on the same seed, and unrelated seed effects are resampled as well by
    index), else one per side; the statistic is the
    mean over the drawn targets of the method's mean error over its drawn seeds minus the baseline's. Resampling
    both factors of a crossed design counts their interaction twice, so the interval errs wide (Efron and
    Tibshirani 1993, ch. 8; Owen 2007, "The pigeonhole bootstrap", Ann. Appl. Stat. 1(2)).

    Parameters
    ----------
    err_method, err_baseline : arrays of shape (n_targets, n_seeds_method) and (n_targets, n_seeds_baseline)
        Absolute errors (pp) per target and seed, no NaN; the rows are the same targets in the same order.
    n_resamples, seed : bootstrap resamples and the seed of :func:`numpy.random.default_rng`.
    same_seeds : whether column j of both arrays is the same query seed (then both have as many columns).

    Returns
    -------
    (low, high) in pp; NaN for fewer than 2 targets. Where both sides have one seed, the interval of the
    targets' bootstrap (:func:`paired_stats`, scipy's) on the differences, so that rows of deterministic
    methods do not depend on this function.
    """
    a, b = np.asarray(err_method, float), np.asarray(err_baseline, float)
    if a.shape[1] == 1 and b.shape[1] == 1:
        return _bootstrap_ci(a[:, 0] - b[:, 0], n_resamples, seed)
    n = a.shape[0]
    if n < 2:
        return math.nan, math.nan
    rng = np.random.default_rng(seed)
    stats_ = np.empty(n_resamples)
    batch = max(1, min(BOOTSTRAP_BATCH, _TWO_WAY_CELLS // n))  # two (batch, n) arrays at a time: ~64 MB at most
    for start in range(0, n_resamples, batch):
        r = min(batch, n_resamples - start)
        targets = rng.multinomial(n, np.full(n, 1 / n), size=r)  # (r, n): how often each target is drawn
        per_target = _seed_resampled(rng, a, b, same_seeds, r)
        stats_[start:start + r] = np.einsum("rn,rn->r", targets, per_target) / n
    low, high = np.percentile(stats_, [2.5, 97.5])
    return float(low), float(high)


def macro_paired(parts: list[tuple[np.ndarray, np.ndarray, Iterable[str]]], n_resamples: int, seed: int,
                 same_seeds: bool = False) -> tuple[float, tuple[float, float], float, np.ndarray]:
    """The difference of two methods' macro MAE (equal weight per bank), its bootstrap interval and a sign-flip test,
    with an agent on several banks resampled and flipped as one.

    A statistics review: the pooled rows weigh every target the same (a bank of 114 targets counts eight times one
    of 14) and count an agent on two banks twice, while the headline number is the macro MAE. Here the statistic
    is the mean over banks of each bank's mean paired difference, which is exactly the difference of the two
    macro MAEs where every target ran every seed.

    - Interval: a 95 % percentile cluster bootstrap. Each resample draws the agents (the clusters: one id on
      Lite and on Verified is one agent) with replacement, every bank's rows of a drawn agent coming along, and
      each side's query seeds as :func:`two_way_ci` does; a resample that draws no agent of some bank (rare: a
      bank of 14 among 200 agents misses with probability about e^-14) is left out.
    - Test: a two-sided paired sign-flip (randomisation) test of the macro difference (Fisher 1935; Good 2005,
      "Permutation, Parametric and Bootstrap Tests of Hypotheses", ch. 3). The statistic T is the macro
      difference, the sum over agents of each agent's share of it (its differences, each divided by its bank's
      number of targets and by the number of banks). Under the null, which method of the pair had which error is
      exchangeable within an agent, so each agent's share changes sign as one; p = (1 + #{|T*| >= |T|}) / (1 +
      ``n_resamples``) over random sign draws (the smallest p is 1 / (1 + ``n_resamples``)). It treats the agents
      as independent, as the Wilcoxon test treats the targets.

    Parameters
    ----------
    parts : list of (err_method, err_baseline, ids), one per bank
        As :func:`two_way_ci`'s arrays (pp; shapes (n_b, k_m) and (n_b, k_b), the same seeds in the same columns
        on every bank) and the targets' agent ids, shape (n_b,).
    n_resamples, seed : bootstrap resamples (and sign draws) and the seed of :func:`numpy.random.default_rng`.
    same_seeds : as :func:`two_way_ci`.

    Returns
    -------
    (mean_diff_pp, (ci_low_pp, ci_high_pp), p_value, shares); the interval is NaN with fewer than 2 agents;
    ``shares``, shape (n_agents,), each agent's share of the macro difference (pp; they sum to it), agents in
    sorted id order.
    """
    a = np.vstack([np.asarray(em, float) for em, _, _ in parts])
    b = np.vstack([np.asarray(eb, float) for _, eb, _ in parts])
    bank = np.repeat(np.arange(len(parts)), [len(np.asarray(em)) for em, _, _ in parts])
    agents, cluster = np.unique(np.concatenate([np.asarray(list(ids), dtype=str) for _, _, ids in parts]),
                                return_inverse=True)
    n, n_agents, n_banks = a.shape[0], len(agents), len(parts)
    onehot = np.zeros((n, n_banks))
    onehot[np.arange(n), bank] = 1.0
    d = a.mean(axis=1) - b.mean(axis=1)
    per_bank = onehot / onehot.sum(axis=0)  # (n, n_banks): each row's weight in its bank's mean

    def macro(values: np.ndarray) -> np.ndarray:  # (r, n) -> (r,): the mean over banks of the banks' means
        return (values @ per_bank).mean(axis=1)

    observed = float(macro(d[None, :])[0])
    rng = np.random.default_rng(seed)
    batch = max(1, min(BOOTSTRAP_BATCH, _TWO_WAY_CELLS // max(n, n_agents)))
    boot = np.full(n_resamples, np.nan)
    flips = np.empty(n_resamples)
    for start in range(0, n_resamples, batch):
        r = min(batch, n_resamples - start)
        drawn = rng.multinomial(n_agents, np.full(n_agents, 1 / n_agents), size=r)[:, cluster]  # (r, n) row weights
        per_row = _seed_resampled(rng, a, b, same_seeds, r)
        counts = drawn @ onehot  # (r, n_banks): rows drawn per bank
        with np.errstate(invalid="ignore", divide="ignore"):
            boot[start:start + r] = ((drawn * per_row) @ onehot / counts).mean(axis=1)
        signs = rng.choice(np.array([-1.0, 1.0]), size=(r, n_agents))[:, cluster]
        flips[start:start + r] = macro(signs * d)
    shares = np.bincount(cluster, weights=d * (per_bank.sum(axis=1) / n_banks), minlength=n_agents)
    ok = boot[~np.isnan(boot)]
    ci = (float(np.percentile(ok, 2.5)), float(np.percentile(ok, 97.5))) if n_agents >= 2 and ok.size else (math.nan,
                                                                                                           math.nan)
    tol = 1e-12 * max(1.0, abs(observed))  # a flip that gives back |T| itself counts, whatever the rounding
    p = float((1 + np.count_nonzero(np.abs(flips) >= abs(observed) - tol)) / (1 + n_resamples))
    return observed, ci, p, shares


def _wilcoxon(d: np.ndarray) -> tuple[float, float]:
    if not np.any(d != 0):
        return math.nan, 1.0  # no non-zero difference: no evidence either way
    # zero differences are dropped here, as ZERO_METHOD says: scipy's method='auto' otherwise takes the normal
    # approximation whenever a zero is present, where the exact test of the non-zero ones applies (an audit:
    # 20 differences gave p 0.0027 alone and 0.0040 beside one zero)
    d = d[d != 0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # small-sample / ties notes from scipy
        res = stats.wilcoxon(d, zero_method=ZERO_METHOD, alternative="two-sided")
    return float(res.statistic), float(res.pvalue)


def paired_stats(d, n_resamples: int = 10_000, seed: int = 0) -> dict:
    """Statistics of one vector of paired differences (pp).

    Parameters
    ----------
    d : array_like, shape (n_targets,)
        Per-target differences, method minus baseline, in pp. NaN entries (a target one side
        has no run for) are left out: ``n_targets`` counts the rest.
    n_resamples, seed : bootstrap resamples and its seed.

    Returns
    -------
    dict
        ``n_targets``, ``mean_diff_pp``, ``ci_low_pp`` / ``ci_high_pp`` (95 % percentile
        bootstrap of the mean; NaN for one target), ``median_diff_pp``, ``n_baseline_better``
        (d > 0), ``n_method_better`` (d < 0), ``wilcoxon_stat`` and ``p_value`` (two-sided
        signed-rank test, zero_method :data:`ZERO_METHOD`; 1.0 when every difference is zero).
    """
    d = np.asarray(d, dtype=float)
    d = d[~np.isnan(d)]
    return _paired_stats(d, _bootstrap_ci(d, n_resamples, seed))


def _paired_stats(d: np.ndarray, ci: tuple[float, float]) -> dict:
    """:func:`paired_stats` of differences ``d`` (no NaN) with the interval ``ci`` (pp) given."""
    stat, p = _wilcoxon(d)
    return {"n_targets": int(d.size), "mean_diff_pp": float(d.mean()) if d.size else math.nan,
            "ci_low_pp": ci[0], "ci_high_pp": ci[1], "median_diff_pp": float(np.median(d)) if d.size else math.nan,
            "n_baseline_better": int((d > 0).sum()), "n_method_better": int((d < 0).sum()),
            "wilcoxon_stat": stat, "p_value": p}


def _seed_errors(by_seed: pd.DataFrame, method: str, targets: pd.Index) -> tuple[np.ndarray, tuple | None]:
    """Absolute errors (pp) of ``method`` on ``targets`` (rows of ``by_seed``), one column per query seed it
    ran: shape (n_targets, n_seeds), and those seeds in column order. Where its targets ran on different
    seeds, one column, the mean over each target's own seeds, and None (the seeds are then not one draw
    shared by the targets, and are not resampled)."""
    e = by_seed[method].loc[targets]
    e = e.loc[:, e.notna().any()]
    if e.isna().any().any():
        return e.mean(axis=1).to_numpy(float)[:, None], None
    return e.to_numpy(float), tuple(e.columns)


#: the columns of :func:`paired_analysis` and :func:`variant_analysis`, in order
PAIRED_COLUMNS = ("budget_fraction", "method", "baseline", "bank", "n_targets", "mean_diff_pp", "ci_low_pp", "ci_high_pp",
                  "median_diff_pp", "n_baseline_better", "n_method_better", "wilcoxon_stat", "p_value", "p_holm")


def _check_resamples(n_resamples) -> None:
    """ReportError unless ``n_resamples`` is a whole number >= 1 (an API trial: 0 failed inside scipy)."""
    if not is_number(n_resamples, numbers.Integral) or n_resamples < 1:
        raise ReportError(f"n_resamples must be a whole number of bootstrap resamples >= 1 (the CLI's default is "
                          f"10000), got {n_resamples!r}")


def paired_analysis(runs: pd.DataFrame, baseline: str | None = None, n_resamples: int = 10_000,
                    seed: int = 0) -> pd.DataFrame:
    """Paired per-target comparison of every method against ``baseline``.

    For each budget, method and bank (and pooled over banks, when there are several), the
    difference ``d = err_method - err_baseline`` of the seed-averaged absolute errors of the
    same targets (pp; positive = the baseline is better) is summarised by its mean with a
    95 % percentile bootstrap interval that resamples the targets and each side's query seeds, in one
    draw where both ran the same seeds (:func:`two_way_ci`, ``n_resamples`` resamples, the same ``seed`` for every comparison; where
    both sides ran one seed, ``scipy.stats.bootstrap`` on the differences, as :func:`paired_stats`) and a
    two-sided Wilcoxon signed-rank p-value (``zero_method='wilcox'``: zero differences are
    dropped). Holm's correction runs over all rows of the result (every budget, method, bank
    and pooled row). Pooled rows pool the banks of the macro MAE
    (:func:`~hspr.report.inputs.macro_banks`; shift protocols pool with each other only when no
    other bank is there) and weight every target equally (large banks count
    more; the same agent on two banks counts twice), unlike the equal-weight macro MAE. A
    :data:`~hspr.report.inputs.MACRO` row, where the comparison table has a macro MAE for both
    methods, gives the difference of the two macro MAEs, its agent-cluster bootstrap interval and
    sign-flip p (:func:`macro_paired`); its ``n_targets`` counts agents, its better / worse counts
    the agents whose share of the difference is positive / negative, and it has no median or
    Wilcoxon statistic.

    Parameters
    ----------
    runs : pandas.DataFrame
        Run records (see :func:`comparison_table`).
    baseline : str, optional
        Method every other method is compared with; None: the first of the runs' methods in
        registry order (:func:`~hspr.report.inputs.default_baseline`; ``hspr`` when it ran).
    n_resamples : int
        Bootstrap resamples.
    seed : int
        Bootstrap seed.

    Returns
    -------
    pandas.DataFrame
        Columns budget_fraction, method, baseline, bank (a bank, :data:`POOLED` or :data:`MACRO`), the keys
        of :func:`paired_stats`, and ``p_holm``. Empty (same columns) when only the baseline ran.

    Raises
    ------
    ReportError
        When ``baseline`` is not among the runs' methods, or ``n_resamples`` is not a whole number
        >= 1 (an API trial: 0 failed inside scipy).
    """
    _check_resamples(n_resamples)
    runs = _check_runs(runs)
    methods = _methods(runs)
    baseline = default_baseline(runs, baseline)
    if baseline not in methods:
        raise ReportError(f"baseline {baseline!r} is not in the results (methods: {', '.join(methods)}); "
                          "choose one of them")
    err = per_target_errors(runs)
    banks = bank_order(err["bank"])
    wide = err.pivot_table(index=["budget_fraction", "bank", "target"], columns="method", values="abs_err_pp",
                           aggfunc="mean")
    runs = runs.assign(abs_err_pp=100.0 * (runs["estimate"] - runs["truth"]).abs())
    by_seed = runs.pivot_table(index=["budget_fraction", "bank", "target"], columns=["method", "seed"],
                               values="abs_err_pp", aggfunc="mean").sort_index(axis=1)
    rows = []
    for frac, w in wide.groupby(level="budget_fraction", sort=True):
        if baseline not in w or w[baseline].isna().all():
            continue
        for m in methods:
            if m == baseline or m not in w:
                continue
            d = (w[m] - w[baseline]).dropna()
            if d.empty:
                continue
            bank_of = d.index.get_level_values("bank")
            present = [b for b in banks if b in bank_of]
            groups = [(b, d[bank_of == b]) for b in present]
            pool = pooled_banks(present)  # shift protocols only: they pool with each other, but for run variants
            if len(pool) > 1:
                groups.append((POOLED, d[bank_of.isin(pool)]))
            for b, sub in groups:
                (em, sm), (eb, sb) = _seed_errors(by_seed, m, sub.index), _seed_errors(by_seed, baseline, sub.index)
                ci = two_way_ci(em, eb, n_resamples, seed, same_seeds=sm is not None and sm == sb)
                rows.append({"budget_fraction": frac, "method": m, "baseline": baseline, "bank": b,
                             **_paired_stats(sub.to_numpy(float), ci)})
            macro_pool = macro_banks(w.index.get_level_values("bank").unique())  # the comparison table's macro banks
            if len(macro_pool) > 1 and set(macro_pool) <= set(present):  # where that table has a macro MAE for both
                pool = macro_pool  # its difference: equal weight per bank, an agent's banks resampled as one
                sub = d[bank_of.isin(pool)]
                (em, sm), (eb, sb) = _seed_errors(by_seed, m, sub.index), _seed_errors(by_seed, baseline, sub.index)
                in_bank = sub.index.get_level_values("bank")
                parts = [(em[in_bank == k], eb[in_bank == k], sub[in_bank == k].index.get_level_values("target"))
                         for k in pool]
                mean, ci, p, shares = macro_paired(parts, n_resamples, seed, same_seeds=sm is not None and sm == sb)
                row = _paired_stats(sub.to_numpy(float), ci)  # the unit is the agent: its share of the difference
                row.update(n_targets=len(shares), mean_diff_pp=mean, median_diff_pp=math.nan,
                           n_baseline_better=int((shares > 0).sum()), n_method_better=int((shares < 0).sum()),
                           wilcoxon_stat=math.nan, p_value=p)
                rows.append({"budget_fraction": frac, "method": m, "baseline": baseline, "bank": MACRO, **row})
    out = pd.DataFrame(rows, columns=list(PAIRED_COLUMNS[:-1]))
    out["p_holm"] = holm(out["p_value"].to_numpy(float)) if len(out) else []
    return out[list(PAIRED_COLUMNS)]


def variant_analysis(runs: pd.DataFrame, n_resamples: int = 10_000, seed: int = 0) -> pd.DataFrame:
    """Each run variant against the plain runs of the same method on the same targets.

    A run variant is a bank label ``B[batch K]`` (``hspr replay --batch K``) or ``B[stop W pp]`` (``--stop-width
    W``) whose plain label ``B`` (:func:`~hspr.report.inputs.plain_label`; itself perhaps ``lite[150 tasks]``) is among
    the runs; for every method that ran both, the variant's
    runs are compared with the plain runs as :func:`paired_analysis` compares a method with its baseline, on
    the targets both ran: ``d = err_variant - err_plain`` of the seed-averaged absolute errors (pp; positive =
    the plain runs are better), its mean with a 95 % percentile bootstrap interval over the targets and the
    query seeds (:func:`two_way_ci`; one draw of seeds where both ran the same), and a two-sided Wilcoxon
    signed-rank p. Holm's correction runs over these rows only (a family of their own: the rows of
    :func:`paired_analysis` are unchanged by them). Until session 58 only ``benchmarks/batch_vs_sequential.py``
    paired rounds with one task at a time.

    Parameters
    ----------
    runs : pandas.DataFrame
        Run records (see :func:`comparison_table`).
    n_resamples, seed : see :func:`paired_analysis`.

    Returns
    -------
    pandas.DataFrame
        :func:`paired_analysis`'s columns: ``method`` the variant's label (``hspr_robust[batch 10]``),
        ``baseline`` the method, ``bank`` the plain bank; no pooled or macro rows. A variant that changed
        no target's error (a method whose tasks do not depend on the outcomes, in rounds) has no row: its
        methods are in ``attrs["unchanged"]``, a dict: variant bank label -> methods (``'hspr at 5 %'`` for a
        method the variant left unchanged at some budgets only: that budget's row); the variants with no
        method, budget and target in common with their plain label are in ``attrs["unpaired"]``. Empty (same
        columns) when no variant has a plain bank among the runs.

    Raises
    ------
    ReportError
        As :func:`paired_analysis` (``n_resamples``).
    """
    _check_resamples(n_resamples)
    runs = _check_runs(runs)
    label = runs["bank"].astype(str)
    there = set(label)
    parts, unchanged, unpaired = [], {}, []
    for v in bank_order(b for b in there if plain_label(b) in there):
        base = plain_label(v)
        suffix = v[len(base):]
        of = runs[(label == base) | (label == v)]
        compared = False  # some method, budget and target in common with the plain label
        for m in _methods(of[of["bank"] == v]):
            pair = of[of["method"] == m]
            if not (pair["bank"] == base).any():
                continue
            moved = pair.assign(method=np.where(pair["bank"] == v, f"{m}{suffix}", m), bank=base)
            part = paired_analysis(moved, m, n_resamples, seed).drop(columns="p_holm")
            compared |= len(part) > 0  # (no row: no target and budget in common, nothing compared; a re-trial)
            same = (part["n_baseline_better"] == 0) & (part["n_method_better"] == 0)  # no error changed: no test
            if len(part) and same.all():
                unchanged.setdefault(v, []).append(m)
            elif same.any():  # unchanged at some budgets only: those rows named, not dropped unsaid (an audit)
                unchanged.setdefault(v, []).extend(f"{m} at {100 * f:g} %" for f in part.loc[same, "budget_fraction"])
            parts.append(part[~same])
        if not compared:
            unpaired.append(v)
    out = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=list(PAIRED_COLUMNS[:-1]))
    out["p_holm"] = holm(out["p_value"].to_numpy(float)) if len(out) else []
    out = out[list(PAIRED_COLUMNS)]
    out.attrs["unchanged"] = unchanged
    out.attrs["unpaired"] = unpaired
    return out


def _wilson(p: float, n: float, z: float = 1.959964) -> tuple[float, float]:
    """The Wilson score interval (Wilson 1927) of a proportion ``p`` observed over ``n`` trials, at the two-sided
    level of the normal quantile ``z`` (1.959964: 95 %), clipped to [0, 1]; for a coverage's uncertainty."""
    den = 1 + z * z / n
    c = (p + z * z / (2 * n)) / den
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return max(0.0, c - h), min(1.0, c + h)


def coverage_table(runs: pd.DataFrame, budget_fraction: float | None = None) -> pd.DataFrame:
    """Empirical interval coverage per bank, method and nominal level at one budget.

    Levels: the stored ``lower`` / ``upper`` (nominal 0.90) and any ``lower_<pct>`` /
    ``upper_<pct>`` column pairs (e.g. ``lower_50`` for a 50 % interval from the draws).

    Parameters
    ----------
    runs : pandas.DataFrame, run records (0-1 scale)
    budget_fraction : float, optional
        The budget to tabulate; default the one closest to 0.10.

    Returns
    -------
    pandas.DataFrame
        Columns bank, method, level, coverage (fraction of runs whose interval holds the
        truth), ci_low / ci_high (Wilson 95 % binomial interval with n = number of targets,
        since the seeds of one target are not independent), n_runs, n_targets, mean_width_pp.
        Empty when no method carries intervals.

    Raises
    ------
    ReportError
        For missing columns, no runs, or scores not on the 0-1 scale (as :func:`summarize`).
    """
    runs = _check_runs(runs)
    frac = _closest_fraction(runs) if budget_fraction is None else budget_fraction
    sub = runs[runs["budget_fraction"] == frac]
    pairs = []
    if "lower" in sub and "upper" in sub:
        pairs.append((NOMINAL_LEVEL, "lower", "upper"))
    for c in sub.columns:
        mt = _EXTRA_LEVEL.match(str(c))
        if mt and f"upper_{mt.group(1)}" in sub:
            pairs.append((float(mt.group(1)) / 100, c, f"upper_{mt.group(1)}"))
    rows = []
    for (b, m), g in sub.groupby(["bank", "method"], sort=False):
        for level, lc, uc in pairs:
            lo, hi = pd.to_numeric(g[lc], errors="coerce"), pd.to_numeric(g[uc], errors="coerce")
            if lo.isna().any() or hi.isna().any():
                continue
            t = g["truth"].to_numpy(float)
            cov = float(np.mean(covered(lo.to_numpy(float), hi.to_numpy(float), t)))
            nt = g["target"].nunique()
            cl, ch = _wilson(cov, nt)
            rows.append({"bank": b, "method": m, "level": level, "coverage": cov, "ci_low": cl, "ci_high": ch,
                         "n_runs": len(g), "n_targets": nt, "mean_width_pp": float(100 * np.mean(hi - lo))})
    cols = ["bank", "method", "level", "coverage", "ci_low", "ci_high", "n_runs", "n_targets", "mean_width_pp"]
    return pd.DataFrame(rows, columns=cols)


def shift_flag_notes(runs: Iterable[Mapping] | pd.DataFrame) -> list[str]:
    """One sentence per bank, method and budget whose runs carry the shift flag (a run's ``shift.unlike_history``;
    ``hspr_robust``): on how many runs and targets it was raised, and the error and 90 % coverage (:func:`covered`) of the
    flagged runs against the others, so that a user can see what a flag is worth (a trial of the flag had to write a script
    for it; on the bash-only agents at 10 % it is no forecast of a miss). ``hspr replay`` and ``hspr report`` print
    them.

    Parameters
    ----------
    runs : iterable of run records (dicts), or the DataFrame of :func:`~hspr.report.inputs.read_results`
        Records without a ``shift`` dict holding ``unlike_history`` are left out.

    Returns
    -------
    list of str
        Sorted by bank, method and budget (the same for the runs in any order); errors in pp.
    """
    records = runs.to_dict("records") if isinstance(runs, pd.DataFrame) else runs
    groups: dict[tuple, list[tuple]] = {}
    for r in records:
        shift = r.get("shift")
        if not isinstance(shift, Mapping) or "unlike_history" not in shift:
            continue
        lower, upper = r.get("lower"), r.get("upper")
        held = None if _is_null(lower) or _is_null(upper) else bool(covered(lower, upper, r["truth"]))
        # a run with too few outcomes or held-out source runs got no verdict (a re-trial: 'raised on 0 of 28 runs' at 5
        # tasks, where none could be)
        verdict = shift.get("enough_outcomes", True) is not False and shift.get("enough_reference", True) is not False
        groups.setdefault((r.get("bank"), r.get("method"), r.get("budget")), []).append(
            (bool(shift["unlike_history"]), r.get("target"), 100 * abs(r["estimate"] - r["truth"]), held, verdict))
    out = []
    for (bank, method, budget), rows in sorted(groups.items(), key=lambda kv: (str(kv[0][0]), str(kv[0][1]), kv[0][2] or 0)):
        judged = [x for x in rows if x[4]]
        flagged = [x for x in judged if x[0]]
        others = [x for x in judged if not x[0]]
        none = len(rows) - len(judged)
        head = f"{bank} {method} at {budget} tasks: the shift flag "
        if not judged:
            out.append(head + f"gave no verdict on its {len(rows)} runs (too few outcomes or held-out source runs)")
            continue
        head += (f"was raised on {len(flagged)} of {len(judged)} runs ({len({x[1] for x in flagged})} of "
                 f"{len({x[1] for x in judged})} targets)" + (f", and gave no verdict on {none} more (too few outcomes "
                                                              "or held-out source runs)" if none else ""))
        if not flagged or not others:
            out.append(head)
            continue

        def held(xs: list[tuple]) -> str:
            known = [x[3] for x in xs if x[3] is not None]
            return f"{sum(known)} of {len(known)}"

        mae = (float(np.mean([x[2] for x in flagged])), float(np.mean([x[2] for x in others])))
        out.append(f"{head}; their MAE {mae[0]:.2f} pp against {mae[1]:.2f} for the others, and their 90 % interval held "
                   f"the true score in {held(flagged)} runs against {held(others)} (docs/shift-protocols.md, 'The shift "
                   "diagnostic': what a flag is worth)")
    return out
