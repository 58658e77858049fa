"""Report figures: budget curves, estimate against truth, interval coverage (PNG + SVG)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import shorten
from .inputs import BAND_PP, MACRO, ReportError, _check_runs, _closest_fraction, _methods, bank_order, default_baseline
from .runplot import FIGURE_METADATA, PLAIN_TEXT
from .stats import coverage_table
from .tables import _pct, comparison_table

# --------------------------------------------------------------------------------------------
# 3. figures


def _colors(methods: Sequence[str]) -> dict:
    """One colour per method: matplotlib's default cycle, or tab20 beyond its 10 colours (with
    12 methods, the default cycle drew two of them alike)."""
    if len(methods) <= 10:
        return {m: f"C{i}" for i, m in enumerate(methods)}
    from matplotlib import colormaps

    tab = colormaps["tab20"]
    return {m: tab(i % 20) for i, m in enumerate(methods)}


def _legend(label: str) -> str:
    """``label`` as a legend entry: matplotlib leaves out every label that starts with '_', so such a
    label (a method or run label of one's own, ``_test``) gets a leading space (a hostile trial)."""
    return " " + label if label.startswith("_") else label


#: the file names (without suffix) :func:`make_figures` writes, in its order
FIGURE_STEMS = ("budget_curves", "estimate_vs_truth", "coverage")
#: the suffixes :func:`make_figures` writes by default
FIGURE_FORMATS = ("png", "svg")


def _save(fig, out_dir: Path, stem: str, formats: Sequence[str]) -> list[Path]:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)
    paths = []
    for ext in formats:
        p = out_dir / f"{stem}.{ext}"
        meta = dict(FIGURE_METADATA[ext]) if ext in FIGURE_METADATA else None
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


#: one marker per method in the budget curves (cycled), so that lines on top of each other stay apart
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "h", "*", "p", "d", "8")


def bank_budgets(runs: pd.DataFrame, budget_fraction: float | None = None) -> dict[str, float]:
    """Bank -> ``budget_fraction`` when given, else the budget closest to 0.10 among the bank's runs
    (a trial: a 5 % Verified file and a 10 % bash-only file gave figures of the bash-only rows
    alone, without a word); :func:`figure_budgets` takes them from the baseline's runs."""
    return {b: float(budget_fraction) if budget_fraction is not None else _closest_fraction(g)
            for b, g in runs.groupby("bank", sort=False)}


def figure_budgets(runs: pd.DataFrame, baseline: str | None, budget_fraction: float | None = None) -> dict[str, float]:
    """Bank -> the budget of its estimate-vs-truth and coverage panels: :func:`bank_budgets` of the
    ``baseline``'s runs (the budget closest to 0.10 it was replayed at on that bank), and of all
    runs for a bank without the baseline (a hostile re-trial: a bank whose other method alone had
    10 % runs was left out of one figure and drawn at another budget in the other)."""
    budgets = bank_budgets(runs, budget_fraction)
    if baseline is not None:
        budgets.update(bank_budgets(runs[runs["method"] == baseline], budget_fraction))
    return budgets


def has_budget_sweep(runs: pd.DataFrame) -> bool:
    """True when some bank and method was replayed at two or more budgets (the budget-curves figure
    draws nothing else: with one budget per bank each panel held isolated points)."""
    return bool(len(runs)) and int(runs.groupby(["bank", "method"])["budget_fraction"].nunique().max()) > 1


def at_budgets(runs: pd.DataFrame, budgets: Mapping[str, float]) -> pd.DataFrame:
    """The runs of each bank at its budget in ``budgets`` (bank -> budget fraction, e.g. :func:`figure_budgets`'s:
    the runs the estimate-vs-truth and coverage figures draw)."""
    return runs[runs["budget_fraction"] == runs["bank"].map(budgets)]


def _budget_words(budgets: Sequence[float]) -> str:
    """'budget 10 %' when the panels share one budget, else what differs (named in each panel)."""
    fracs = sorted(set(budgets))
    return f"budget {_pct(fracs[0])}" if len(fracs) == 1 else "budget closest to 10 % per bank"


def figure_budget_curves(runs: pd.DataFrame, baseline: str | None = None, table: pd.DataFrame | None = None):
    """Figure (a): MAE (top) and MaxErr (bottom) in pp against the budget, one column per bank.

    Returns a matplotlib Figure, or None when no bank and method has two budgets
    (:func:`has_budget_sweep`). Log y scale when a row's values span more than a factor 10 (e.g.
    with raw Mid-Range).
    """
    from matplotlib.figure import Figure

    if not has_budget_sweep(runs):
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
            for k, m in enumerate(methods):
                g = per[(per["bank"] == b) & (per["method"] == m)].sort_values("budget_fraction")
                if g.empty:
                    continue
                strong = m == baseline
                # the baseline thick and beneath, each method its own marker: a method equal to the baseline
                # (an ablation that changes nothing on a bank) stays visible on it (a new-user trial)
                ax.plot(100 * g["budget_fraction"], g[metric], marker=_MARKERS[k % len(_MARKERS)],
                        ms=6 if strong else 4, lw=2.6 if strong else 1.2, color=col[m], label=_legend(m),
                        zorder=2 if strong else 3, alpha=0.75 if strong else 1.0)
            if log:
                _plain_log_axis(ax)
            ax.grid(True, which="major", alpha=0.3)
            if row == 0:
                ax.set_title(b)
            if row == 1:
                ax.set_xlabel("budget (% of tasks)")
            if j == 0:
                ax.set_ylabel(label + (" (log scale)" if log else ""))
    xs = [100 * f for f in sorted(per["budget_fraction"].unique())]
    # budgets crowded at one end (0.2, 0.4, 1, 2 %) print their labels over each other on a linear axis
    # (a trial): the axis, linear or log, that leaves the smallest gap between two budgets widest wins
    def smallest_gap(v):
        v = np.asarray(v, dtype=float)
        return float(np.min(np.diff(v)) / (v[-1] - v[0])) if len(v) > 1 else 1.0

    crowded = xs[0] > 0 and smallest_gap(np.log(xs)) > smallest_gap(xs)
    from matplotlib.ticker import NullLocator

    for ax in axes.ravel():
        if crowded:
            ax.set_xscale("log")
            ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xticks(xs, [f"{x:g}" for x in xs])
    handles, labels = axes[0, 0].get_legend_handles_labels()
    seen = dict(zip(labels, handles))
    for ax in axes.ravel():
        h, lab = ax.get_legend_handles_labels()
        seen.update({k: v for k, v in zip(lab, h) if k not in seen})
    shown = [_legend(m) for m in methods if _legend(m) in seen]
    fig.legend([seen[m] for m in shown], shown, loc="outside lower center", ncol=min(len(shown), 6), frameon=False)
    fig.suptitle("Score-recovery error against budget (seed-averaged)")
    return fig


def figure_estimate_vs_truth(runs: pd.DataFrame, baseline: str, also: str | Mapping[str, str | None] | None = None,
                             budget_fraction: float | None = None):
    """Figure (b): estimate against true score per target (%), ±2 pp band, one panel per bank.

    Points are seed-averaged estimates; with several seeds a thin bar spans their min-max. Each
    panel's note, below its x label, gives the MAE of the comparison table (per seed over the
    targets, then averaged over seeds), not that of the seed-averaged points, and the share of runs
    within ±2 pp.
    ``also`` adds a second method as hollow markers: one method for every panel, or a mapping
    bank -> method (:func:`best_other_methods`: each bank's best other method).

    Parameters
    ----------
    runs : pandas.DataFrame, run records (:func:`hspr.report.read_results`)
    baseline : str, the method drawn as filled markers
    also : str or mapping bank -> str or None, optional
    budget_fraction : float, optional
        Default: each bank at the baseline's budget closest to 0.10 there (:func:`figure_budgets`),
        named in the panel's title when the banks' budgets differ.

    Returns
    -------
    matplotlib.figure.Figure (no pyplot state)

    Raises
    ------
    ReportError
        When ``baseline`` (or ``also``) has no runs at that budget.
    """
    from matplotlib.figure import Figure

    budgets = figure_budgets(runs, baseline, budget_fraction)
    sub = at_budgets(runs, budgets)
    per_bank = dict(also) if isinstance(also, Mapping) else None
    methods = [baseline] + ([m for m in dict.fromkeys(per_bank.values()) if m is not None] if per_bank is not None
                            else [also] if also is not None else [])
    for m in methods:
        if m not in set(sub["method"]):  # named at the figure's budgets (a re-trial was told of 10 % for a 5 % figure)
            fracs = sorted(set(budgets.values()))
            at = (_pct(fracs[0]) if len(fracs) == 1 else
                  "per bank " + ", ".join(f"{b} {_pct(budgets[b])}" for b in bank_order(budgets)))
            why = "the one given" if budget_fraction is not None else "the baseline's budget closest to 10 %"
            raise ReportError(f"method {m!r} has no runs at the figure's budget, {at} ({why}; methods there: "
                              f"{', '.join(_methods(sub))})")
    col = _colors(_methods(runs))
    banks = bank_order(sub.loc[sub["method"] == baseline, "bank"])
    mixed = len({budgets[b] for b in banks}) > 1
    nrow, ncol = _grid(len(banks))
    fig = Figure(figsize=(3.3 * ncol + 0.4, 3.5 * nrow + 0.6), layout="constrained")
    axes = fig.subplots(nrow, ncol, squeeze=False).ravel()
    for ax, b in zip(axes, banks):
        lo_all, hi_all, notes = [], [], []
        second = per_bank.get(b) if per_bank is not None else also
        for k, m in enumerate([baseline] + ([second] if second is not None else [])):
            g = sub[(sub["bank"] == b) & (sub["method"] == m)]
            if g.empty:
                continue
            a = g.groupby("target").agg(truth=("truth", "mean"), est=("estimate", "mean"),
                                        emin=("estimate", "min"), emax=("estimate", "max"))
            t, e = 100 * a["truth"].to_numpy(), 100 * a["est"].to_numpy()
            if g["seed"].nunique() > 1:
                ax.vlines(t, 100 * a["emin"], 100 * a["emax"], color=col[m], lw=0.7, alpha=0.5)
            ax.scatter(t, e, s=16, color=col[m] if k == 0 else "none", edgecolors=col[m], lw=0.9,
                       marker="o" if k == 0 else "s", label=_legend(m), zorder=3 - k)
            lo_all += [t.min(), e.min()]
            hi_all += [t.max(), e.max()]
            # the table's MAE (per seed over the targets, then averaged over seeds; HSPR_SPEC 7) and the
            # share of runs within the band, not the seed-mean points' (a trial: uniform's 3.09 against 4.79)
            err = 100 * (g["estimate"] - g["truth"]).abs()
            mae, within = err.groupby(g["seed"]).mean().mean(), np.mean(err <= BAND_PP + 1e-9)
            # two lines: one was as wide as the panel and covered the strongest agents' points (a new-user trial)
            # a long variant name made the note wider than the panel, which shrank to a thumbnail (a re-trial)
            # to 3 decimals, as the tables (a new-user trial: 1.685 and 1.676 both read 1.68)
            notes.append(f"{shorten(m, 28)}: MAE {mae:.3f} pp,\n{within:.0%} of runs within ±{BAND_PP:g} pp")
        lo, hi = min(lo_all) - 3, max(hi_all) + 3
        x = np.array([lo, hi])
        ax.fill_between(x, x - BAND_PP, x + BAND_PP, color="0.85", lw=0, label=f"±{BAND_PP:g} pp", zorder=1)
        ax.plot(x, x, color="0.4", lw=0.8, zorder=2)
        ax.set_xlim(lo, hi)
        ax.set_ylim(lo, hi)
        ax.set_aspect("equal")
        ax.set_title(f"{b} ({_pct(budgets[b])})" if mixed else b)
        ax.set_xlabel("true score (%)")
        ax.set_ylabel("estimate (%)")
        ax.grid(True, alpha=0.3)
        # below the panel, under its x label: inside it, even placed as a legend is (loc="best"), it covered points
        # (a new-user trial: the strongest agents; re-trials: an outlier, and 8 of 80 points of a crowded panel)
        ax.annotate("\n".join(notes), xy=(0.5, 0), xycoords=ax.xaxis.label, xytext=(0, -3), textcoords="offset points",
                    ha="center", va="top", fontsize=7, linespacing=1.15)
    for ax in axes[len(banks):]:
        ax.set_visible(False)
    legend = {}  # every panel's methods (each bank's second method may differ), once each
    for ax in axes[:len(banks)]:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            legend.setdefault(lab, h)
    legend = {k: legend[k] for k in sorted(legend, key=lambda k: k.startswith("±"))}  # the methods, then the band
    fig.legend(list(legend.values()), list(legend), loc="outside lower center", ncol=len(legend), frameon=False)
    # on one column of panels, a line each: one line was wider than the panel (a trial: a blank strip beside it)
    sep = "\n" if ncol == 1 else ", "
    fig.suptitle(f"Estimate against true score per target{sep}{_budget_words([budgets[b] for b in banks])}"
                 + (f"{sep if ncol == 1 else ' '}(seed mean; bars: min–max over seeds)" if sub["seed"].nunique() > 1 else ""))
    return fig




def _yerr(g: pd.DataFrame) -> np.ndarray:
    """Error-bar lengths below / above the coverage; >= 0 (Wilson bounds can round past 0 or 1)."""
    return np.clip(np.vstack([g["coverage"] - g["ci_low"], g["ci_high"] - g["coverage"]]), 0.0, None)


def figure_coverage(runs: pd.DataFrame, budget_fraction: float | None = None, baseline: str | None = None):
    """Figure (c): empirical interval coverage against the nominal level, per bank.

    With only the 90 % interval: one point per bank and method with a Wilson 95 % bar and a
    dashed line at 0.90. With more levels: one panel per bank, coverage against nominal level.
    Each bank at ``budget_fraction``, by default at the budget closest to 0.10 of ``baseline``'s
    runs there, or of all its runs (:func:`figure_budgets`, as the estimate-vs-truth figure; named
    beside the bank when the banks' budgets differ). Returns None when no method has intervals.
    """
    from matplotlib.colors import to_rgb
    from matplotlib.figure import Figure

    budgets = figure_budgets(runs, baseline, budget_fraction)
    parts = [coverage_table(g, budgets[b]) for b, g in at_budgets(runs, budgets).groupby("bank", sort=False)]
    cov = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
    if cov.empty:
        return None
    col = _colors(_methods(runs))
    present = set(cov["method"])
    methods = [m for m in _methods(runs) if m in present]  # the tables' order, whatever the files' order
    banks = bank_order(cov["bank"])
    mixed = len({budgets[b] for b in banks}) > 1
    names = [f"{b} ({_pct(budgets[b])})" if mixed else b for b in banks]
    title = f"Interval coverage, {_budget_words([budgets[b] for b in banks])}"
    if cov["level"].nunique() == 1:
        level = float(cov["level"].iloc[0])
        fig = Figure(figsize=(1.3 * len(banks) + 4.0, 3.6), layout="constrained")
        ax = fig.subplots()
        width = 0.6 / max(1, len(methods))
        above = ax.get_xaxis_transform()  # x in data, y in axes fractions: a row of labels above the plot
        for k, m in enumerate(methods):
            g = cov[cov["method"] == m].set_index("bank").reindex(banks)
            x = np.arange(len(banks)) + (k - (len(methods) - 1) / 2) * width
            yerr = _yerr(g)
            ax.errorbar(x, g["coverage"], yerr=yerr, fmt="o", color=col[m], capsize=3, label=_legend(m))
            for xi, c, w in zip(x, g["coverage"], g["mean_width_pp"]):
                # vertical, each in its bar's column above the plot: placed on the bars they crossed the
                # neighbouring bars (a new-user trial)
                if not pd.isna(c):  # the bar's colour, darkened: the light ones are hard to read as text
                    ax.text(xi, 1.01, f"{w:.1f}", transform=above, fontsize=6, rotation=90, ha="center",
                            va="bottom", color=0.6 * np.array(to_rgb(col[m])), clip_on=False)
        ax.axhline(level, ls="--", color="0.4", lw=1, label=f"nominal {level:.2f}")
        ax.set_xticks(np.arange(len(banks)), names)
        ax.set_xlim(-0.6, len(banks) - 0.4)
        ax.set_ylim(max(0.0, min(cov["ci_low"].min(), level) - 0.05), 1.02)
        lo, _ = ax.get_ylim()
        ax.set_yticks([t for t in ax.get_yticks() if lo - 1e-9 <= t <= 1.0 + 1e-9])  # no coverage above 1 to mark
        ax.set_ylabel(f"empirical coverage of the {level:.0%} interval")
        ax.grid(True, axis="y", alpha=0.3)
        fig.legend(*ax.get_legend_handles_labels(), fontsize=8, frameon=False, loc="outside right upper")
        # short lines: clear of the legend; the padding lifts it over the row of widths
        ax.set_title(title + "\nbars: Wilson 95 % (n = targets)\nnumbers above: mean width (pp)", fontsize=8, pad=24)
        return fig
    nrow, ncol = _grid(len(banks))
    fig = Figure(figsize=(3.2 * ncol + 1.6, 3.3 * nrow + 0.5), layout="constrained")
    axes = fig.subplots(nrow, ncol, squeeze=False).ravel()
    for ax, b, name in zip(axes, banks, names):
        for m in methods:
            g = cov[(cov["bank"] == b) & (cov["method"] == m)].sort_values("level")
            if g.empty:
                continue
            ax.errorbar(g["level"], g["coverage"], yerr=_yerr(g),
                        fmt="o-", color=col[m], capsize=3, ms=4, lw=1, label=_legend(m))
        ax.plot([0, 1], [0, 1], color="0.4", ls="--", lw=0.8)
        ax.set_xlim(0, 1.02)
        ax.set_ylim(0, 1.02)
        ax.set_aspect("equal")
        ax.set_title(name)
        ax.set_xlabel("nominal level")
        ax.set_ylabel("empirical coverage")
        ax.grid(True, alpha=0.3)
    for ax in axes[len(banks):]:
        ax.set_visible(False)
    h, lab = axes[0].get_legend_handles_labels()
    fig.legend(h, lab, loc="outside right upper", frameon=False, title="method")
    fig.suptitle(title + " (bars: Wilson 95 %, n = targets)")
    return fig


def best_other_method(runs: pd.DataFrame, baseline: str, budget_fraction: float) -> str | None:
    """The method other than ``baseline`` with the lowest MAE at ``budget_fraction`` over the
    (bank, target, seed) runs it shares with ``baseline`` (ties: first in registry order, whatever
    the order of the files); None if
    there is none. The estimate-vs-truth figure draws it beside the baseline."""
    sub = runs[runs["budget_fraction"] == budget_fraction]
    key = ["bank", "target", "seed"]
    base = sub.loc[sub["method"] == baseline, key].drop_duplicates()
    best, best_mae = None, np.inf
    for m in _methods(sub):
        if m == baseline:
            continue
        g = sub[sub["method"] == m].merge(base, on=key) if len(base) else sub[sub["method"] == m]
        if len(g):
            mae = float(np.mean(np.abs(g["estimate"] - g["truth"])))
            if mae < best_mae:
                best, best_mae = m, mae
    return best


def best_other_methods(runs: pd.DataFrame, baseline: str, budget_fraction: float | None = None,
                       budgets: Mapping[str, float] | None = None) -> dict[str, str | None]:
    """:func:`best_other_method` per bank, bank -> method (None where the bank has no other
    method): the estimate-vs-truth figure's default second method, so that each panel shows
    the best method run on that bank (one method for all banks left out those run on a few).
    Each bank at ``budgets[bank]`` when given, else at ``budget_fraction``, by default at its own
    budget closest to 0.10 (:func:`bank_budgets`)."""
    budgets = bank_budgets(runs, budget_fraction) if budgets is None else budgets
    return {b: best_other_method(g, baseline, budgets[b]) for b, g in runs.groupby("bank", sort=False)}


def make_figures(runs: pd.DataFrame, out_dir: str | Path, baseline: str | None = None, also: str | None = None,
                 budget_fraction: float | None = None, formats: Sequence[str] = FIGURE_FORMATS) -> list[Path]:
    """Write the report figures as PNG and SVG (matplotlib, Agg canvas; no pyplot state).

    - ``budget_curves``: MAE and MaxErr against budget per bank and method (only when some bank
      and method has more than one budget);
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
    baseline, also : methods for the estimate-vs-truth figure (baseline None: the first method in
        registry order, :func:`~hspr.report.inputs.default_baseline`); ``also`` defaults to each bank's
        :func:`best_other_method` (:func:`best_other_methods`; none for a bank with one method).
    budget_fraction : float, optional
        Budget of figures (b) and (c); default per bank the budget closest to 0.10 of the
        baseline's runs there (:func:`figure_budgets`).
    formats : file extensions.

    Returns
    -------
    list of pathlib.Path
        The written files.

    Raises
    ------
    ReportError
        When ``baseline`` (or ``also``) has no runs at that budget, no run has
        ``budget_fraction``, or matplotlib fails to load.
    """
    runs = _check_runs(runs)
    baseline = default_baseline(runs, baseline)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    if budget_fraction is not None and budget_fraction not in set(runs["budget_fraction"]):
        raise ReportError(f"no runs at budget fraction {budget_fraction} "
                          f"(have {sorted(runs['budget_fraction'].unique())})")
    try:
        import matplotlib
    except (ImportError, ValueError) as exc:  # e.g. MPLBACKEND naming no backend
        raise ReportError(f"the figures need matplotlib, which failed to load ({exc}); fix that (e.g. unset "
                          "MPLBACKEND) or leave the figures out (--no-figures)") from None

    if also is None:
        also = best_other_methods(runs, baseline, budgets=figure_budgets(runs, baseline, budget_fraction))
    paths: list[Path] = []
    with matplotlib.rc_context({"svg.hashsalt": "hspr-report", "font.size": 9, **PLAIN_TEXT}):
        makers = (lambda: figure_budget_curves(runs, baseline),
                  lambda: figure_estimate_vs_truth(runs, baseline, also, budget_fraction),
                  lambda: figure_coverage(runs, budget_fraction, baseline))
        for stem, make in zip(FIGURE_STEMS, makers, strict=True):
            fig = make()
            if fig is not None:
                paths += _save(fig, out_dir, stem, formats)
    return paths
