"""Replay reports: the comparison table, paired statistics against a baseline, and figures.

The input is the ``runs`` list of one or more ``hspr replay --out`` results files (one record
per bank, method, fold, target, seed and budget; scores on the 0-1 scale). Everything this
module reports is in percentage points (pp) of the bank's tasks.

Library entry points (no CLI needed)::

    runs = read_results(["sweep.json", "main.json"])
    table = comparison_table(runs)            # per bank MAE / MaxErr / tau_b, macro MAE, coverage
    paired = paired_analysis(runs, "hspr")    # method - baseline, bootstrap CI, Wilcoxon, Holm
    paths = make_figures(runs, "report/")     # PNG + SVG
"""

from __future__ import annotations

import inspect
import json
import math
import re
import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from .data.banks import BANK_ORDER
from .errors import HsprError
from .metrics import summarize

#: bank label of the equal-weight macro rows in :func:`comparison_table`
MACRO = "macro"
#: label of the pooled-over-banks rows in :func:`paired_analysis`
POOLED = "pooled"
#: the main budget fraction of the protocol (HSPR_SPEC section 7); figures (b), (c) use the closest one
MAIN_FRACTION = 0.10
#: nominal level of the ``lower`` / ``upper`` interval stored by ``hspr replay``
NOMINAL_LEVEL = 0.90
#: half-width of the band in the estimate-vs-truth figure, pp
BAND_PP = 2.0
#: columns every run record needs
REQUIRED_COLUMNS = ("bank", "method", "seed", "target", "budget", "budget_fraction", "estimate", "truth")
#: a run is identified by these; a later file's run replaces an earlier one with the same key
RUN_KEY = ["bank", "method", "budget_fraction", "target", "seed"]
#: Wilcoxon signed-rank zero handling: 'wilcox' drops zero differences before ranking
ZERO_METHOD = "wilcox"
#: decimals shown (and used for best / second-best ties) for pp errors and tau_b
DECIMALS = 3

_EXTRA_LEVEL = re.compile(r"^lower_(\d+(?:\.\d+)?)$")


class ReportError(HsprError):
    """A results file or runs table the report cannot use; the message names the file."""


class ReportWarning(UserWarning):
    """Something the report changed or skipped (e.g. duplicate runs across files)."""


# --------------------------------------------------------------------------------------------
# input


def runs_frame(obj, source: str = "<runs>") -> pd.DataFrame:
    """Validate one parsed results object and return its runs as a DataFrame.

    Parameters
    ----------
    obj : dict
        A parsed ``hspr replay --out`` file: ``{"runs": [record, ...], "summary": [...], ...}``.
    source : str
        Name used in error messages (the file path).

    Returns
    -------
    pandas.DataFrame
        One row per run with at least :data:`REQUIRED_COLUMNS` (``estimate``, ``truth``,
        ``lower``, ``upper`` on the 0-1 scale) and ``source_file``.

    Raises
    ------
    ReportError
        When the object has no ``runs``, an unknown layout, missing columns or non-numeric scores.
    """
    expect = "expected the JSON object written by `hspr replay --out` (keys 'runs' and 'summary')"
    if not isinstance(obj, dict):
        raise ReportError(f"{source}: unknown layout: the top level is a JSON {type(obj).__name__}; {expect}")
    if "runs" not in obj:
        keys = ", ".join(map(repr, list(obj)[:8])) or "none"
        hint = " (a summary alone cannot give paired statistics)" if "summary" in obj else ""
        raise ReportError(f"{source}: no 'runs' in the results file (keys found: {keys}){hint}; {expect}")
    runs = obj["runs"]
    if not isinstance(runs, list) or not all(isinstance(r, dict) for r in runs):
        raise ReportError(f"{source}: unknown layout: 'runs' must be a list of run records (objects); {expect}")
    if not runs:
        raise ReportError(f"{source}: 'runs' is empty; nothing to report")
    df = pd.DataFrame(runs)
    missing = [c for c in REQUIRED_COLUMNS if c not in df.columns]
    if missing:
        raise ReportError(f"{source}: run records lack {missing} (the first has keys {sorted(runs[0])}); {expect}")
    for col in ("estimate", "truth", "budget_fraction", "lower", "upper"):
        if col in df.columns:
            vals = pd.to_numeric(df[col], errors="coerce")
            bad = vals.isna() & df[col].notna()
            if bad.any() or (col in ("estimate", "truth", "budget_fraction") and vals.isna().any()):
                row = int(np.flatnonzero(bad | vals.isna())[0])
                raise ReportError(f"{source}: run {row} has a non-numeric or missing {col!r}: {df[col].iloc[row]!r}")
            df[col] = vals.astype(float)
    if ((df["truth"] < 0) | (df["truth"] > 1)).any():
        raise ReportError(f"{source}: 'truth' outside [0, 1]; runs must be on the 0-1 scale (not %)")
    df["budget_fraction"] = df["budget_fraction"].round(6)
    df["source_file"] = source
    return df


def read_results(paths: str | Path | Sequence[str | Path]) -> pd.DataFrame:
    """Read and concatenate the runs of one or more results files.

    Parameters
    ----------
    paths : path or sequence of paths
        ``hspr replay --out`` files, e.g. a budget sweep and a main run.

    Returns
    -------
    pandas.DataFrame
        The runs of every file (see :func:`runs_frame`). A run (same bank, method,
        budget_fraction, target and seed) present in several files is kept from the file given
        last; a :class:`ReportWarning` says how many were replaced.

    Raises
    ------
    ReportError
        Naming the file that cannot be read, is not JSON, or has no usable ``runs``.
    """
    if isinstance(paths, (str, Path)):
        paths = [paths]
    if not paths:
        raise ReportError("no results file given")
    frames = []
    for p in map(Path, paths):
        try:
            text = p.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ReportError(f"{p}: cannot read the results file ({exc})") from None
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ReportError(f"{p}: not valid JSON ({exc.msg}, line {exc.lineno}); "
                              "expected the file written by `hspr replay --out`") from None
        frames.append(runs_frame(obj, str(p)))
    runs = pd.concat(frames, ignore_index=True, sort=False)
    dup = runs.duplicated(RUN_KEY, keep="last")
    if dup.any():
        warnings.warn(f"{int(dup.sum())} run(s) appear in more than one place (same bank, method, budget, target, "
                      "seed); the copy from the file given last is used", ReportWarning, stacklevel=2)
        runs = runs.loc[~dup].reset_index(drop=True)
    return runs


def _check_runs(runs: pd.DataFrame, source: str = "runs") -> pd.DataFrame:
    if not isinstance(runs, pd.DataFrame):
        runs = pd.DataFrame(list(runs))
    missing = [c for c in REQUIRED_COLUMNS if c not in runs.columns]
    if missing:
        raise ReportError(f"{source}: lacks column(s) {missing}; needs {list(REQUIRED_COLUMNS)}")
    if runs.empty:
        raise ReportError(f"{source}: no runs")
    return runs


def is_shift_protocol(banks: pd.Series) -> pd.Series:
    """True for shift-protocol labels (``bank/protocol``, e.g. ``verified/bash-only``): shown, but
    left out of the macro MAE, which averages the 4-fold banks only."""
    return banks.astype(str).str.contains("/", regex=False)


def bank_order(banks: Iterable[str]) -> list[str]:
    """Banks in the paper's order (lite, verified, full, pro), then others by first appearance."""
    seen = list(dict.fromkeys(banks))
    return [b for b in BANK_ORDER if b in seen] + [b for b in seen if b not in BANK_ORDER]


def _methods(runs: pd.DataFrame) -> list[str]:
    return list(dict.fromkeys(runs["method"]))


def _dense_rank(values: pd.Series, higher_is_better: bool) -> pd.Series:
    """1 = best; equal values at the shown precision share a rank; NaN stays NaN."""
    v = values.astype(float).round(DECIMALS)
    return v.rank(method="dense", ascending=not higher_is_better)


# --------------------------------------------------------------------------------------------
# 1. comparison table


def comparison_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Seed-averaged per-bank metrics per budget and method, with ranks and macro MAE rows.

    Metrics come from :func:`hspr.metrics.summarize` (per seed over all targets of the folds,
    then averaged over seeds; HSPR_SPEC section 7).

    Parameters
    ----------
    runs : pandas.DataFrame
        Run records (columns :data:`REQUIRED_COLUMNS`, optionally ``lower`` / ``upper``).

    Returns
    -------
    pandas.DataFrame
        One row per (budget_fraction, bank, method), banks in paper order, plus for every budget
        one row per method with ``bank == MACRO`` holding the equal-weight mean of the per-bank
        MAE (only for methods present on every bank of that budget; shift protocols, labelled
        ``bank/protocol`` such as ``verified/bash-only``, are shown but left out of the macro).
        Columns:

        - ``budget_fraction`` (float), ``budget`` (Int64 tasks; NA on macro rows)
        - ``bank``, ``method``
        - ``mae_pp``, ``maxerr_pp`` (pp), ``kendall_tau_b``
        - ``coverage_90`` (fraction of runs whose 90 % interval holds the truth; NaN without
          intervals), ``mean_width_pp`` (pp)
        - ``n_targets``, ``n_seeds`` (per-bank rows), ``n_banks`` (macro rows)
        - ``mae_rank``, ``maxerr_rank``, ``tau_rank``: dense rank within (budget, bank), 1 = best
          (lower error, higher tau), ties at the shown precision of 3 decimals share a rank.
    """
    runs = _check_runs(runs)
    s = summarize(runs)
    for col in ("coverage_90", "mean_width_pp"):
        s[col] = pd.to_numeric(s[col], errors="coerce").astype(float)
    banks = bank_order(s["bank"])
    methods = _methods(runs)
    s["_b"] = s["bank"].map({b: i for i, b in enumerate(banks)})
    s["_m"] = s["method"].map({m: i for i, m in enumerate(methods)})
    s = s.sort_values(["budget_fraction", "_b", "_m"]).drop(columns=["_b", "_m"])
    s["n_banks"] = pd.NA

    macro = []
    for frac, g in s.groupby("budget_fraction", sort=True):
        g = g[~is_shift_protocol(g["bank"])]
        n_banks = g["bank"].nunique()
        for m in methods:
            gm = g[g["method"] == m]
            if len(gm) and gm["bank"].nunique() == n_banks:
                macro.append({"budget_fraction": frac, "budget": pd.NA, "bank": MACRO, "method": m,
                              "mae_pp": float(gm["mae_pp"].mean()), "n_banks": n_banks})
    table = pd.concat([s, pd.DataFrame(macro)], ignore_index=True, sort=False) if macro else s.copy()
    table["budget"] = table["budget"].astype("Int64")
    table["n_banks"] = table["n_banks"].astype("Int64")
    for col in ("n_targets", "n_seeds"):
        table[col] = table[col].astype("Int64")
    grp = table.groupby(["budget_fraction", "bank"], sort=False)
    for rank, metric, higher in [("mae_rank", "mae_pp", False), ("maxerr_rank", "maxerr_pp", False),
                                 ("tau_rank", "kendall_tau_b", True)]:
        table[rank] = grp[metric].transform(lambda v, h=higher: _dense_rank(v, h)).round().astype("Int64")
    table["_b"] = table["bank"].map({b: i for i, b in enumerate(banks + [MACRO])})
    table["_m"] = table["method"].map({m: i for i, m in enumerate(methods)})
    table = table.sort_values(["budget_fraction", "_b", "_m"]).drop(columns=["_b", "_m"])
    cols = ["budget_fraction", "budget", "bank", "method", "mae_pp", "maxerr_pp", "kendall_tau_b", "coverage_90",
            "mean_width_pp", "n_targets", "n_seeds", "n_banks", "mae_rank", "maxerr_rank", "tau_rank"]
    return table[cols].reset_index(drop=True)


def _fmt(x, nd: int = DECIMALS) -> str:
    return "–" if x is None or pd.isna(x) else f"{x:.{nd}f}"


def _pct(frac: float) -> str:
    return f"{100 * frac:g} %"


def _budget_heading(g: pd.DataFrame) -> str:
    per = g[g["bank"] != MACRO][["bank", "budget"]].drop_duplicates()
    return f"Budget {_pct(g['budget_fraction'].iloc[0])} of tasks (B = " + ", ".join(
        f"{int(r.budget)} on {r.bank}" for r in per.itertuples()) + ")"


def _with_marks(table: pd.DataFrame) -> pd.DataFrame:
    """Add mae_mark / maxerr_mark / tau_mark: 1 (best) or 2 (second best), else NA.

    Best is marked only when another entry of the (budget, bank) group ranks below it, second
    best only when something ranks below it too (so a lone or last entry is never marked).
    """
    out = table.copy()
    for rank in ("mae_rank", "maxerr_rank", "tau_rank"):
        r = out[rank]
        worst = out.groupby(["budget_fraction", "bank"], sort=False)[rank].transform("max")
        out[rank.replace("_rank", "_mark")] = r.where(((r == 1) & (worst > 1)) | ((r == 2) & (worst > 2)))
    return out


def _mark_md(text: str, rank) -> str:
    if text == "–" or rank is None or pd.isna(rank):
        return text
    return f"**{text}**" if rank == 1 else f"*{text}*" if rank == 2 else text


def _md_table(header: Sequence[str], rows: Sequence[Sequence[str]], right: Sequence[bool]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("--:" if r else ":--" for r in right) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


_CMP_HEADER = ["bank", "method", "MAE (pp)", "MaxErr (pp)", "Kendall τ_b", "90 % coverage", "mean width (pp)",
               "targets", "seeds"]


def _cmp_cells(r) -> list[tuple[str, float | None]]:
    """(text, rank) per comparison-table cell; rank None = never marked."""
    return [(r.bank, None), (r.method, None), (_fmt(r.mae_pp), r.mae_mark), (_fmt(r.maxerr_pp), r.maxerr_mark),
            (_fmt(r.kendall_tau_b), r.tau_mark), (_fmt(r.coverage_90, 2), None), (_fmt(r.mean_width_pp, 2), None),
            (str(r.n_targets), None), (str(r.n_seeds), None)]


def _macro_wide(g: pd.DataFrame) -> tuple[list[str], list[str], list[list[tuple[str, float | None]]]]:
    """Rows = methods, columns = per-bank MAE and the macro MAE; cells as (text, rank)."""
    per = g[(g["bank"] != MACRO) & ~is_shift_protocol(g["bank"])]
    banks = list(dict.fromkeys(per["bank"]))
    methods = list(dict.fromkeys(per["method"]))
    idx = {(r.bank, r.method): r for r in g.itertuples()}
    rows = []
    for m in methods:
        cells = [(m, None)]
        for b in banks + [MACRO]:
            r = idx.get((b, m))
            cells.append((_fmt(r.mae_pp), r.mae_mark) if r is not None else ("–", None))
        rows.append(cells)
    return banks, methods, rows


def comparison_markdown(table: pd.DataFrame) -> str:
    """Markdown for :func:`comparison_table`: per budget a per-bank table and a macro-MAE table.

    Best per bank and column in **bold**, second best in *italic* (see :func:`_with_marks`).
    """
    out = ["# Score recovery: comparison", "",
           "Seed-averaged metrics over all targets of the 4 folds, or of a shift protocol (bank/protocol rows, "
           "outside the macro MAE) (HSPR_SPEC section 7); errors in percentage points (pp). Per bank: **bold** = best, "
           "*italic* = second best, each marked only when some entry "
           "ranks below it (MAE, MaxErr: lower is better; Kendall τ_b: higher is better). 90 % coverage: "
           "fraction of runs whose 90 % interval holds the true score (– = the method gives no interval).", ""]
    for _, g in _with_marks(table).groupby("budget_fraction", sort=True):
        out += [f"## {_budget_heading(g)}", ""]
        rows = [[_mark_md(t, k) for t, k in _cmp_cells(r)] for r in g[g["bank"] != MACRO].itertuples()]
        out += [_md_table(_CMP_HEADER, rows, [False, False] + [True] * 7), ""]
        banks, _, wide = _macro_wide(g)
        if not banks:  # shift protocols only: no macro MAE
            continue
        out += ["### Macro MAE (equal weight over banks, pp)", ""]
        rows = [[_mark_md(t, k) for t, k in cells] for cells in wide]
        out += [_md_table(["method"] + [f"{b} MAE" for b in banks] + ["macro MAE"], rows,
                          [False] + [True] * (len(banks) + 1)), ""]
        if any(c[-1][0] == "–" for c in wide):
            out += ["– in the macro column: the method was not run on every bank.", ""]
    return "\n".join(out)


def _rich_cell(text: str, rank):
    from rich.text import Text

    if text == "–" or rank is None or pd.isna(rank) or rank > 2:
        return Text(text + "  ")
    return Text(text + (" *" if rank == 1 else " '"), style="bold" if rank == 1 else "italic")


def comparison_rich(table: pd.DataFrame) -> list:
    """rich Tables for the terminal: best per bank marked * (bold), second best ' (italic)."""
    from rich.table import Table
    from rich.text import Text

    out = []
    for _, g in _with_marks(table).groupby("budget_fraction", sort=True):
        t = Table(title=_budget_heading(g), caption="errors in pp; * best, ' second best per bank")
        for h in _CMP_HEADER:
            t.add_column(h, justify="left" if h in ("bank", "method") else "right", no_wrap=h in ("bank", "method"))
        per = g[g["bank"] != MACRO]
        last = per["bank"].ne(per["bank"].shift(-1)).to_numpy()
        for r, end in zip(per.itertuples(), last):
            t.add_row(*[_rich_cell(x, k) for x, k in _cmp_cells(r)], end_section=bool(end))
        out.append(t)
        banks, _, wide = _macro_wide(g)
        if not banks:  # shift protocols only: no macro MAE
            continue
        mt = Table(title=f"Macro MAE (equal weight over banks), budget {_pct(g['budget_fraction'].iloc[0])}",
                   caption="MAE in pp; * best, ' second best per column; – not run on every bank")
        mt.add_column("method")
        for b in banks:
            mt.add_column(f"{b} MAE", justify="right")
        mt.add_column("macro MAE", justify="right")
        for cells in wide:
            mt.add_row(*[_rich_cell(x, k) if i else Text(x) for i, (x, k) in enumerate(cells)])
        out.append(mt)
    return out


# --------------------------------------------------------------------------------------------
# 2. paired analysis


def holm(pvalues) -> np.ndarray:
    """Holm-Bonferroni step-down adjusted p-values.

    Parameters
    ----------
    pvalues : array_like, shape (m,)
        Raw p-values in [0, 1]; NaN entries are left out of the family and stay NaN.

    Returns
    -------
    numpy.ndarray, shape (m,)
        ``p_adj[(i)] = max_{j <= i} min(1, (m - j + 1) p_(j))`` in the original order.

    Examples
    --------
    >>> holm([0.01, 0.04, 0.03, 0.005]).round(3).tolist()
    [0.03, 0.06, 0.06, 0.02]
    """
    p = np.asarray(pvalues, dtype=float)
    if np.any((p < 0) | (p > 1)):
        raise ValueError("p-values must lie in [0, 1]")
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
    """
    runs = _check_runs(runs)
    e = runs.assign(abs_err_pp=100.0 * (runs["estimate"] - runs["truth"]).abs())
    g = e.groupby(["budget_fraction", "bank", "method", "target"], sort=False)
    return g.agg(abs_err_pp=("abs_err_pp", "mean"), n_seeds=("seed", "nunique")).reset_index()


_BOOTSTRAP_HAS_RNG = "rng" in inspect.signature(stats.bootstrap).parameters  # scipy >= 1.15


def _bootstrap_ci(d: np.ndarray, n_resamples: int, seed: int) -> tuple[float, float]:
    if d.size < 2:
        return math.nan, math.nan
    if np.ptp(d) == 0:
        return float(d[0]), float(d[0])
    kw = {"rng": seed} if _BOOTSTRAP_HAS_RNG else {"random_state": seed}
    res = stats.bootstrap((d,), np.mean, n_resamples=n_resamples, method="percentile", confidence_level=0.95,
                          vectorized=True, **kw)
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def _wilcoxon(d: np.ndarray) -> tuple[float, float]:
    if not np.any(d != 0):
        return math.nan, 1.0  # no non-zero difference: no evidence either way
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # small-sample / ties notes from scipy
        res = stats.wilcoxon(d, zero_method=ZERO_METHOD, alternative="two-sided")
    return float(res.statistic), float(res.pvalue)


def paired_stats(d, n_resamples: int = 10_000, seed: int = 0) -> dict:
    """Statistics of one vector of paired differences (pp).

    Parameters
    ----------
    d : array_like, shape (n_targets,)
        Per-target differences, method minus baseline, in pp.
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
    lo, hi = _bootstrap_ci(d, n_resamples, seed)
    stat, p = _wilcoxon(d)
    return {"n_targets": int(d.size), "mean_diff_pp": float(d.mean()) if d.size else math.nan,
            "ci_low_pp": lo, "ci_high_pp": hi, "median_diff_pp": float(np.median(d)) if d.size else math.nan,
            "n_baseline_better": int((d > 0).sum()), "n_method_better": int((d < 0).sum()),
            "wilcoxon_stat": stat, "p_value": p}


def paired_analysis(runs: pd.DataFrame, baseline: str = "hspr", n_resamples: int = 10_000,
                    seed: int = 0) -> pd.DataFrame:
    """Paired per-target comparison of every method against ``baseline``.

    For each budget, method and bank (and pooled over banks, when there are several), the
    difference ``d = err_method - err_baseline`` of the seed-averaged absolute errors of the
    same targets (pp; positive = the baseline is better) is summarised by its mean with a
    95 % percentile bootstrap interval (``scipy.stats.bootstrap`` on the differences,
    ``n_resamples`` resamples, ``rng``/``random_state = seed`` for every comparison) and a
    two-sided Wilcoxon signed-rank p-value (``zero_method='wilcox'``: zero differences are
    dropped). Holm's correction runs over all rows of the result (every budget, method, bank
    and pooled row). Pooled rows weight every target equally (large banks count more; the same
    agent on two banks counts twice), unlike the equal-weight macro MAE.

    Parameters
    ----------
    runs : pandas.DataFrame
        Run records (see :func:`comparison_table`).
    baseline : str
        Method every other method is compared with.
    n_resamples : int
        Bootstrap resamples.
    seed : int
        Bootstrap seed.

    Returns
    -------
    pandas.DataFrame
        Columns budget_fraction, method, baseline, bank (a bank or :data:`POOLED`), the keys
        of :func:`paired_stats`, and ``p_holm``. Empty (same columns) when only the baseline ran.

    Raises
    ------
    ReportError
        When ``baseline`` is not among the runs' methods.
    """
    runs = _check_runs(runs)
    methods = _methods(runs)
    if baseline not in methods:
        raise ReportError(f"baseline {baseline!r} is not in the results (methods: {', '.join(methods)}); "
                          "choose one of them")
    err = per_target_errors(runs)
    banks = bank_order(err["bank"])
    wide = err.pivot_table(index=["budget_fraction", "bank", "target"], columns="method", values="abs_err_pp",
                           aggfunc="mean")
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
            present = [b for b in banks if b in d.index.get_level_values("bank")]
            groups = [(b, d.xs(b, level="bank").to_numpy()) for b in present]
            if len(present) > 1:
                groups.append((POOLED, d.to_numpy()))
            for b, vals in groups:
                rows.append({"budget_fraction": frac, "method": m, "baseline": baseline, "bank": b,
                             **paired_stats(vals, n_resamples, seed)})
    cols = ["budget_fraction", "method", "baseline", "bank", "n_targets", "mean_diff_pp", "ci_low_pp", "ci_high_pp",
            "median_diff_pp", "n_baseline_better", "n_method_better", "wilcoxon_stat", "p_value", "p_holm"]
    out = pd.DataFrame(rows, columns=cols[:-1])
    out["p_holm"] = holm(out["p_value"].to_numpy(float)) if len(out) else []
    return out[cols]


def _fmt_p(p) -> str:
    if p is None or pd.isna(p):
        return "–"
    return f"{p:.2e}" if p < 1e-3 else f"{p:.3f}"


_PAIR_HEADER = ["budget", "method", "bank", "targets", "mean Δ (pp)", "95 % CI (pp)", "median Δ (pp)",
                "baseline better / worse", "Wilcoxon p", "Holm p"]


def _pair_cells(r) -> list[str]:
    return [_pct(r.budget_fraction), r.method, r.bank, str(r.n_targets), f"{r.mean_diff_pp:+.3f}",
            f"[{r.ci_low_pp:+.3f}, {r.ci_high_pp:+.3f}]" if not pd.isna(r.ci_low_pp) else "–",
            f"{r.median_diff_pp:+.3f}", f"{r.n_baseline_better} / {r.n_method_better}", _fmt_p(r.p_value),
            _fmt_p(r.p_holm)]


def _paired_note(paired: pd.DataFrame, n_resamples: int | None, seed: int | None) -> str:
    base = paired["baseline"].iloc[0] if len(paired) else "the baseline"
    boot = f"{n_resamples:,} resamples, seed {seed}" if n_resamples is not None else "see --n-resamples"
    return (f"Δ = seed-averaged absolute error of the method − that of {base} on the same target, in pp; "
            f"positive = {base} better. Mean Δ with a 95 % percentile bootstrap interval ({boot}); two-sided "
            f"Wilcoxon signed-rank test (zero_method='{ZERO_METHOD}': zero differences dropped); Holm correction "
            f"over all {len(paired)} comparisons in this table. '{POOLED}' rows put the targets of every bank "
            "together (each target weighs the same).")


def paired_markdown(paired: pd.DataFrame, n_resamples: int | None = None, seed: int | None = None) -> str:
    """Markdown for :func:`paired_analysis`; Holm p < 0.05 in bold."""
    out = ["# Paired comparison against the baseline", ""]
    if paired.empty:
        return "\n".join(out + ["No method other than the baseline in the results.", ""])
    out += [_paired_note(paired, n_resamples, seed), ""]
    rows = []
    for r in paired.itertuples():
        cells = _pair_cells(r)
        if not pd.isna(r.p_holm) and r.p_holm < 0.05:
            cells[-1] = f"**{cells[-1]}**"
        rows.append(cells)
    out += [_md_table(_PAIR_HEADER, rows, [False, False, False] + [True] * 7), ""]
    return "\n".join(out)


def paired_rich(paired: pd.DataFrame):
    """rich Table for :func:`paired_analysis`; Holm p < 0.05 in bold."""
    from rich.markup import escape
    from rich.table import Table
    from rich.text import Text

    base = escape(paired["baseline"].iloc[0] if len(paired) else "baseline")
    t = Table(title=f"Paired per-target |error| difference: method − {base} (pp; + = {base} better)",
              caption=f"95 % percentile bootstrap CI; Wilcoxon signed-rank (zero_method='{ZERO_METHOD}'); "
                      "Holm over all rows")
    for h in _PAIR_HEADER:
        t.add_column(h, justify="left" if h in ("method", "bank") else "right", no_wrap=h in ("bank", "method"))
    last = (paired["method"].ne(paired["method"].shift(-1))
            | paired["budget_fraction"].ne(paired["budget_fraction"].shift(-1))).to_numpy()
    for r, end in zip(paired.itertuples(), last):
        cells = [Text(c) for c in _pair_cells(r)]
        sig = not pd.isna(r.p_holm) and r.p_holm < 0.05
        cells[-1].stylize("bold" if sig else "")
        t.add_row(*cells, end_section=bool(end))
    return t


# --------------------------------------------------------------------------------------------
# 3. figures


def _closest_fraction(runs: pd.DataFrame, target: float = MAIN_FRACTION) -> float:
    fr = np.array(sorted(runs["budget_fraction"].unique()))
    return float(fr[np.argmin(np.abs(fr - target))])


def _colors(methods: Sequence[str]) -> dict[str, str]:
    return {m: f"C{i % 10}" for i, m in enumerate(methods)}


def _save(fig, out_dir: Path, stem: str, formats: Sequence[str]) -> list[Path]:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)
    paths = []
    for ext in formats:
        p = out_dir / f"{stem}.{ext}"
        meta = {"Date": None} if ext == "svg" else {"Software": None} if ext == "png" else None
        fig.savefig(p, dpi=150, bbox_inches="tight", metadata=meta)
        paths.append(p)
    return paths


def _grid(n: int, ncol_max: int = 4) -> tuple[int, int]:
    ncol = min(n, ncol_max)
    return math.ceil(n / ncol), ncol


def _plain_log_axis(ax) -> None:
    """Log y axis labelled 1, 2, 5, 10, 20, ... instead of 10^1-style mantissas."""
    from matplotlib.ticker import FuncFormatter

    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.yaxis.set_minor_formatter(FuncFormatter(
        lambda v, _: f"{v:g}" if v > 0 and round(v / 10 ** math.floor(math.log10(v) + 1e-9), 6) in (2, 5) else ""))


def figure_budget_curves(runs: pd.DataFrame, baseline: str | None = None, table: pd.DataFrame | None = None):
    """Figure (a): MAE (top) and MaxErr (bottom) in pp against the budget, one column per bank.

    Returns a matplotlib Figure, or None when the runs hold a single budget. Log y scale when a
    row's values span more than a factor 10 (e.g. with raw Mid-Range).
    """
    from matplotlib.figure import Figure

    if runs["budget_fraction"].nunique() < 2:
        return None
    table = comparison_table(runs) if table is None else table
    per = table[table["bank"] != MACRO]
    banks, methods = bank_order(per["bank"]), _methods(runs)
    col = _colors(methods)
    fig = Figure(figsize=(3.1 * len(banks) + 1.6, 5.6), layout="constrained")
    axes = fig.subplots(2, len(banks), sharex=True, squeeze=False)
    for row, (metric, label) in enumerate([("mae_pp", "MAE (pp)"), ("maxerr_pp", "MaxErr (pp)")]):
        vals = per[metric].to_numpy(float)
        vals = vals[np.isfinite(vals) & (vals > 0)]
        log = vals.size > 0 and vals.max() / vals.min() > 10
        for j, b in enumerate(banks):
            ax = axes[row, j]
            for m in methods:
                g = per[(per["bank"] == b) & (per["method"] == m)].sort_values("budget_fraction")
                if g.empty:
                    continue
                strong = m == baseline
                ax.plot(100 * g["budget_fraction"], g[metric], marker="o", ms=4 if not strong else 5,
                        lw=2.4 if strong else 1.3, color=col[m], label=m, zorder=3 if strong else 2)
            if log:
                _plain_log_axis(ax)
            ax.grid(True, which="major", alpha=0.3)
            if row == 0:
                ax.set_title(b)
            if row == 1:
                ax.set_xlabel("budget (% of tasks)")
            if j == 0:
                ax.set_ylabel(label + (" (log scale)" if log else ""))
    fr = sorted(per["budget_fraction"].unique())
    for ax in axes[1]:
        ax.set_xticks([100 * f for f in fr])
    handles, labels = axes[0, 0].get_legend_handles_labels()
    seen = dict(zip(labels, handles))
    for ax in axes.ravel():
        h, lab = ax.get_legend_handles_labels()
        seen.update({k: v for k, v in zip(lab, h) if k not in seen})
    shown = [m for m in methods if m in seen]
    fig.legend([seen[m] for m in shown], shown, loc="outside lower center", ncol=min(len(shown), 6), frameon=False)
    fig.suptitle("Score-recovery error against budget (seed-averaged)")
    return fig


def figure_estimate_vs_truth(runs: pd.DataFrame, baseline: str, also: str | None = None,
                             budget_fraction: float | None = None):
    """Figure (b): estimate against true score per target (%), ±2 pp band, one panel per bank.

    Points are seed-averaged estimates; with several seeds a thin bar spans their min-max.
    ``also`` adds a second method as hollow markers.
    """
    from matplotlib.figure import Figure

    frac = _closest_fraction(runs) if budget_fraction is None else budget_fraction
    sub = runs[runs["budget_fraction"] == frac]
    methods = [m for m in (baseline, also) if m is not None]
    for m in methods:
        if m not in set(sub["method"]):
            raise ReportError(f"method {m!r} has no runs at budget {_pct(frac)} (methods: "
                              f"{', '.join(_methods(sub))})")
    col = _colors(_methods(runs))
    banks = bank_order(sub.loc[sub["method"] == baseline, "bank"])
    nrow, ncol = _grid(len(banks))
    fig = Figure(figsize=(3.3 * ncol + 0.4, 3.5 * nrow + 0.6), layout="constrained")
    axes = fig.subplots(nrow, ncol, squeeze=False).ravel()
    for ax, b in zip(axes, banks):
        lo_all, hi_all, notes = [], [], []
        for k, m in enumerate(methods):
            g = sub[(sub["bank"] == b) & (sub["method"] == m)]
            if g.empty:
                continue
            a = g.groupby("target").agg(truth=("truth", "mean"), est=("estimate", "mean"),
                                        emin=("estimate", "min"), emax=("estimate", "max"))
            t, e = 100 * a["truth"].to_numpy(), 100 * a["est"].to_numpy()
            if g["seed"].nunique() > 1:
                ax.vlines(t, 100 * a["emin"], 100 * a["emax"], color=col[m], lw=0.7, alpha=0.5)
            ax.scatter(t, e, s=16, color=col[m] if k == 0 else "none", edgecolors=col[m], lw=0.9,
                       marker="o" if k == 0 else "s", label=m, zorder=3 - k)
            lo_all += [t.min(), e.min()]
            hi_all += [t.max(), e.max()]
            within = np.mean(np.abs(e - t) <= BAND_PP + 1e-9)
            notes.append(f"{m}: MAE {np.mean(np.abs(e - t)):.2f} pp, {within:.0%} within ±{BAND_PP:g} pp")
        lo, hi = min(lo_all) - 3, max(hi_all) + 3
        x = np.array([lo, hi])
        ax.fill_between(x, x - BAND_PP, x + BAND_PP, color="0.85", lw=0, label=f"±{BAND_PP:g} pp", zorder=1)
        ax.plot(x, x, color="0.4", lw=0.8, zorder=2)
        ax.set_xlim(lo, hi)
        ax.set_ylim(lo, hi)
        ax.set_aspect("equal")
        ax.set_title(b)
        ax.set_xlabel("true score (%)")
        ax.set_ylabel("estimate (%)")
        ax.grid(True, alpha=0.3)
        ax.text(0.03, 0.97, "\n".join(notes), transform=ax.transAxes, va="top", fontsize=7,
                bbox={"facecolor": "white", "alpha": 0.8, "lw": 0})
    for ax in axes[len(banks):]:
        ax.set_visible(False)
    h, lab = axes[0].get_legend_handles_labels()
    fig.legend(h, lab, loc="outside lower center", ncol=len(lab), frameon=False)
    fig.suptitle(f"Estimate against true score per target, budget {_pct(frac)}"
                 + (" (seed mean; bars: min–max over seeds)" if sub["seed"].nunique() > 1 else ""))
    return fig


def _wilson(p: float, n: float, z: float = 1.959964) -> tuple[float, float]:
    den = 1 + z * z / n
    c = (p + z * z / (2 * n)) / den
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return max(0.0, c - h), min(1.0, c + h)


def coverage_table(runs: pd.DataFrame, budget_fraction: float | None = None) -> pd.DataFrame:
    """Empirical interval coverage per bank, method and nominal level at one budget.

    Levels: the stored ``lower`` / ``upper`` (nominal 0.90) and any ``lower_<pct>`` /
    ``upper_<pct>`` column pairs (e.g. ``lower_50`` for a 50 % interval from the draws).

    Returns
    -------
    pandas.DataFrame
        Columns bank, method, level, coverage (fraction of runs whose interval holds the
        truth), ci_low / ci_high (Wilson 95 % binomial interval with n = number of targets,
        since the seeds of one target are not independent), n_runs, n_targets, mean_width_pp.
        Empty when no method carries intervals.
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
            cov = float(np.mean((lo.to_numpy() - 1e-12 <= t) & (t <= hi.to_numpy() + 1e-12)))
            nt = g["target"].nunique()
            cl, ch = _wilson(cov, nt)
            rows.append({"bank": b, "method": m, "level": level, "coverage": cov, "ci_low": cl, "ci_high": ch,
                         "n_runs": len(g), "n_targets": nt, "mean_width_pp": float(100 * np.mean(hi - lo))})
    cols = ["bank", "method", "level", "coverage", "ci_low", "ci_high", "n_runs", "n_targets", "mean_width_pp"]
    return pd.DataFrame(rows, columns=cols)


def _yerr(g: pd.DataFrame) -> np.ndarray:
    """Error-bar lengths below / above the coverage; >= 0 (Wilson bounds can round past 0 or 1)."""
    return np.clip(np.vstack([g["coverage"] - g["ci_low"], g["ci_high"] - g["coverage"]]), 0.0, None)


def figure_coverage(runs: pd.DataFrame, budget_fraction: float | None = None):
    """Figure (c): empirical interval coverage against the nominal level, per bank.

    With only the 90 % interval: one point per bank and method with a Wilson 95 % bar and a
    dashed line at 0.90. With more levels: one panel per bank, coverage against nominal level.
    Returns None when no method has intervals.
    """
    from matplotlib.figure import Figure

    frac = _closest_fraction(runs) if budget_fraction is None else budget_fraction
    cov = coverage_table(runs, frac)
    if cov.empty:
        return None
    col = _colors(_methods(runs))
    methods = list(dict.fromkeys(cov["method"]))
    banks = bank_order(cov["bank"])
    title = f"Interval coverage, budget {_pct(frac)} (bars: Wilson 95 %, n = targets)"
    if cov["level"].nunique() == 1:
        level = float(cov["level"].iloc[0])
        fig = Figure(figsize=(1.3 * len(banks) + 2.8, 3.6), layout="constrained")
        ax = fig.subplots()
        width = 0.6 / max(1, len(methods))
        for k, m in enumerate(methods):
            g = cov[cov["method"] == m].set_index("bank").reindex(banks)
            x = np.arange(len(banks)) + (k - (len(methods) - 1) / 2) * width
            ax.errorbar(x, g["coverage"], yerr=_yerr(g),
                        fmt="o", color=col[m], capsize=3, label=m)
            for xi, (c, w) in zip(x, zip(g["coverage"], g["mean_width_pp"])):
                if not pd.isna(c):
                    ax.annotate(f"{w:.1f} pp", (xi, c), xytext=(5, 0), textcoords="offset points", fontsize=6,
                                va="center", color="0.3")
        ax.axhline(level, ls="--", color="0.4", lw=1, label=f"nominal {level:.2f}")
        ax.set_xticks(np.arange(len(banks)), banks)
        ax.set_xlim(-0.6, len(banks) - 0.4)
        ax.set_ylim(max(0.0, min(cov["ci_low"].min(), level) - 0.05), 1.01)
        ax.set_ylabel(f"empirical coverage of the {level:.0%} interval")
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(fontsize=8, frameon=True, framealpha=0.9, loc="lower left")
        ax.set_title(title + "\nlabels: mean interval width", fontsize=9)
        return fig
    nrow, ncol = _grid(len(banks))
    fig = Figure(figsize=(3.2 * ncol + 1.6, 3.3 * nrow + 0.5), layout="constrained")
    axes = fig.subplots(nrow, ncol, squeeze=False).ravel()
    for ax, b in zip(axes, banks):
        for m in methods:
            g = cov[(cov["bank"] == b) & (cov["method"] == m)].sort_values("level")
            if g.empty:
                continue
            ax.errorbar(g["level"], g["coverage"], yerr=_yerr(g),
                        fmt="o-", color=col[m], capsize=3, ms=4, lw=1, label=m)
        ax.plot([0, 1], [0, 1], color="0.4", ls="--", lw=0.8)
        ax.set_xlim(0, 1.02)
        ax.set_ylim(0, 1.02)
        ax.set_aspect("equal")
        ax.set_title(b)
        ax.set_xlabel("nominal level")
        ax.set_ylabel("empirical coverage")
        ax.grid(True, alpha=0.3)
    for ax in axes[len(banks):]:
        ax.set_visible(False)
    h, lab = axes[0].get_legend_handles_labels()
    fig.legend(h, lab, loc="outside right upper", frameon=False, title="method")
    fig.suptitle(title)
    return fig


def make_figures(runs: pd.DataFrame, out_dir: str | Path, baseline: str = "hspr", also: str | None = None,
                 budget_fraction: float | None = None, formats: Sequence[str] = ("png", "svg")) -> list[Path]:
    """Write the report figures as PNG and SVG (matplotlib, Agg canvas; no pyplot state).

    - ``budget_curves``: MAE and MaxErr against budget per bank and method (only with more
      than one budget);
    - ``estimate_vs_truth``: estimate against true score per target, ±2 pp band, one panel per
      bank, for ``baseline`` (and ``also``);
    - ``coverage``: empirical coverage of the intervals against the nominal level (only when
      some method stores ``lower`` / ``upper``).

    Parameters
    ----------
    runs : pandas.DataFrame
        Run records.
    out_dir : path
        Created if needed.
    baseline, also : methods for the estimate-vs-truth figure.
    budget_fraction : float, optional
        Budget of figures (b) and (c); default the one closest to 0.10.
    formats : file extensions.

    Returns
    -------
    list of pathlib.Path
        The written files.

    Raises
    ------
    ReportError
        When ``baseline`` (or ``also``) has no runs at that budget.
    """
    runs = _check_runs(runs)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    if budget_fraction is not None and budget_fraction not in set(runs["budget_fraction"]):
        raise ReportError(f"no runs at budget fraction {budget_fraction} "
                          f"(have {sorted(runs['budget_fraction'].unique())})")
    import matplotlib

    paths: list[Path] = []
    with matplotlib.rc_context({"svg.hashsalt": "hspr-report", "font.size": 9}):
        for stem, make in [("budget_curves", lambda: figure_budget_curves(runs, baseline)),
                           ("estimate_vs_truth", lambda: figure_estimate_vs_truth(runs, baseline, also,
                                                                                  budget_fraction)),
                           ("coverage", lambda: figure_coverage(runs, budget_fraction))]:
            fig = make()
            if fig is not None:
                paths += _save(fig, out_dir, stem, formats)
    return paths


# --------------------------------------------------------------------------------------------
# everything


def write_report(runs: pd.DataFrame, out_dir: str | Path, baseline: str = "hspr", n_resamples: int = 10_000,
                 seed: int = 0, figures: bool = True, also: str | None = None) -> dict:
    """Compute the comparison and paired tables, write Markdown / CSV (and figures) to ``out_dir``.

    Parameters
    ----------
    runs : pandas.DataFrame
        Run records (see :func:`read_results`).
    out_dir : path
        Created if needed.
    baseline, n_resamples, seed : see :func:`paired_analysis`.
    figures : bool
        Also write the figures (:func:`make_figures`).
    also : str, optional
        A second method for the estimate-vs-truth figure.

    Returns
    -------
    dict
        ``comparison`` and ``paired`` DataFrames, and ``paths``: the written files
        (comparison.md, comparison.csv, paired.md, paired.csv, then the figures).

    Raises
    ------
    ReportError
        When ``baseline`` or ``also`` is not among the runs' methods (before anything is written).
    """
    runs = _check_runs(runs)
    methods = _methods(runs)
    for role, m in (("baseline", baseline), ("--also method", also)):
        if m is not None and m not in methods:
            raise ReportError(f"{role} {m!r} is not in the results (methods: {', '.join(methods)}); choose one of them")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    table = comparison_table(runs)
    paired = paired_analysis(runs, baseline, n_resamples, seed)
    paths = []
    for name, text in [("comparison.md", comparison_markdown(table)),
                       ("paired.md", paired_markdown(paired, n_resamples, seed))]:
        (out_dir / name).write_text(text, encoding="utf-8")
    table.to_csv(out_dir / "comparison.csv", index=False)
    paired.to_csv(out_dir / "paired.csv", index=False)
    paths += [out_dir / n for n in ("comparison.md", "comparison.csv", "paired.md", "paired.csv")]
    if figures:
        paths += make_figures(runs, out_dir, baseline, also)
    return {"comparison": table, "paired": paired, "paths": paths}
