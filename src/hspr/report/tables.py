"""Report tables: the comparison and paired tables as DataFrames, Markdown and rich tables."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from ..data.banks import BANK_ORDER
from .inputs import DECIMALS, MACRO, POOLED, ZERO_METHOD, _check_runs, _dense_rank, _methods, bank_order, is_shift_protocol, macro_banks
from .stats import _summary, tasks_run_text

# --------------------------------------------------------------------------------------------
# 1. comparison table


def comparison_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Seed-averaged per-bank metrics per budget and method, with ranks and macro MAE rows.

    Metrics come from :func:`hspr.report.stats.summarize` (per seed over all targets of the folds,
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
        MAE over :func:`~hspr.report.inputs.macro_banks` (the paper's four banks when any is
        there, else every plain bank; only for methods present on every such bank of that
        budget; shift protocols, labelled ``bank/protocol`` such as ``verified/bash-only``, and
        other banks beside paper ones, such as multimodal, are shown but left out of the macro).
        Columns:

        - ``budget_fraction`` (float), ``budget`` (Int64 tasks; NA on macro rows)
        - ``bank``, ``method``
        - ``mae_pp``, ``maxerr_pp`` (pp), ``kendall_tau_b``
        - ``coverage_90`` (fraction of runs whose 90 % interval holds the truth; NaN without
          intervals), ``coverage_ci_low`` / ``coverage_ci_high`` (its Wilson 95 % interval with n =
          targets: :func:`summarize`), ``mean_width_pp`` (pp)
        - ``n_targets``, ``n_seeds`` (per-bank rows), ``n_banks`` (macro rows)
        - ``mae_rank``, ``maxerr_rank``, ``tau_rank``: dense rank within (budget, bank), 1 = best
          (lower error, higher tau), ties at the shown precision of 3 decimals share a rank.
        - ``ranked`` (bool): False where the bank's methods at that budget were replayed on
          different targets, or a method's targets on different query seeds (their
          metrics average over different agents): no rank, no mark; the budget's macro rows too
          when such a bank counts in the macro.
        - ``mean_tasks_run`` (only for runs of a stopping rule, ``hspr replay --stop-width``):
          the tasks actually run, averaged over the runs, and ``stopped_early``, the share (0-1) of
          runs that ran fewer tasks than their budget; NaN for methods without the rule.
    """
    runs = _check_runs(runs)
    s = _summary(runs)
    for col in ("coverage_90", "mean_width_pp", "coverage_ci_low", "coverage_ci_high"):
        s[col] = pd.to_numeric(s[col], errors="coerce").astype(float)
    banks = bank_order(s["bank"])
    methods = _methods(runs)
    s["_b"] = s["bank"].map({b: i for i, b in enumerate(banks)})
    s["_m"] = s["method"].map({m: i for i, m in enumerate(methods)})
    s = s.sort_values(["budget_fraction", "_b", "_m"]).drop(columns=["_b", "_m"])
    s["n_banks"] = pd.NA

    macro = []
    for frac, g in s.groupby("budget_fraction", sort=True):
        g = g[g["bank"].isin(macro_banks(g["bank"]))]
        n_banks = g["bank"].nunique()
        if n_banks < 2:  # a macro of one bank would repeat it (a trial read one in the CSV as a macro)
            continue
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
    # methods replayed on different targets of a bank are not ranked there (nor in that budget's macro
    # rows, when the bank counts in the macro): a trial found MaxErr over 10 targets marked best against 14
    sets = runs.groupby(["budget_fraction", "bank", "method"], sort=False)["target"].agg(frozenset)
    unequal = {k for k, per in sets.groupby(level=[0, 1], sort=False) if per.nunique() > 1}
    # and where a method's targets were replayed on different sets of seeds (in number or not): its per-seed metrics
    # then average over different targets (a hostile trial: a MAE of 3.4 against 5.7 over every target, ranked as any
    # other; a re-trial dropped seed 0 for half the targets and seed 2 for the rest); _warn_uneven_seeds says which
    seeds = runs.groupby(["budget_fraction", "bank", "method", "target"], sort=False)["seed"].agg(frozenset)
    unequal |= {k[:2] for k, per in seeds.groupby(level=[0, 1, 2], sort=False) if per.nunique() > 1}
    in_macro = {f: set(macro_banks(g["bank"])) for f, g in s.groupby("budget_fraction", sort=False)}
    macro_off = {f for f, b in unequal if b in in_macro.get(f, ())}
    table["ranked"] = [not ((f, b) in unequal or (b == MACRO and f in macro_off))
                       for f, b in zip(table["budget_fraction"], table["bank"])]
    for rank in ("mae_rank", "maxerr_rank", "tau_rank"):
        table[rank] = table[rank].where(table["ranked"])
    table["_b"] = table["bank"].map({b: i for i, b in enumerate(banks + [MACRO])})
    table["_m"] = table["method"].map({m: i for i, m in enumerate(methods)})
    table = table.sort_values(["budget_fraction", "_b", "_m"]).drop(columns=["_b", "_m"])
    cols = ["budget_fraction", "budget", "bank", "method", "mae_pp", "maxerr_pp", "kendall_tau_b", "coverage_90",
            "coverage_ci_low", "coverage_ci_high", "mean_width_pp", "n_targets", "n_seeds", "n_banks", "mae_rank",
            "maxerr_rank", "tau_rank", "ranked"]
    if "mean_tasks_run" in table:  # runs of a stopping rule: the tasks actually run, the point of the rule
        cols += ["mean_tasks_run", "stopped_early"]
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
    """A Markdown table; a ``|`` inside a cell or a header is escaped (hostile trials: a hand-edited label
    with one broke the table's columns; the macro table's header names the banks)."""
    def line(cells) -> str:
        return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"

    return "\n".join([line(header), "|" + "|".join("--:" if r else ":--" for r in right) + "|", *map(line, rows)])


_CMP_HEADER = ("bank", "method", "MAE (pp)", "MaxErr (pp)", "Kendall τ_b", "90 % coverage (95 % CI)", "mean width (pp)",
               "targets", "seeds")


def _partial_macro_note(banks: Sequence[str], shown) -> str | None:
    """The sentence for a macro MAE over fewer than the paper's four banks, or None. A bank run only
    with its missing cells kept (``pro/missing-kept``, ``--no-missing-as-zero``) is named as such: an
    audit found it reported as "not run"."""
    absent = [b for b in BANK_ORDER if b not in banks]
    if not absent or not set(banks) <= set(BANK_ORDER):
        return None
    labels = set(map(str, shown))
    kept = [b for b in absent if f"{b}/missing-kept" in labels]
    parts = [f"{b} ran only as {b}/missing-kept, which the macro leaves out: replay it without "
             "--no-missing-as-zero to include it" for b in kept]
    if len(kept) < len(absent):
        parts.append(f"{', '.join(b for b in absent if b not in kept)} not run")
    return (f"This macro averages {len(banks)} of the paper's four banks ({'; '.join(parts)}): it is not "
            "comparable with a four-bank macro MAE.")


def _variant_note(shown) -> str | None:
    """The sentence naming the run variants and task subsets (``lite[batch 10]``, ``verified[stop 5 pp]``,
    ``lite[150 tasks]``: a bank label with a bracket and no protocol) among the labels ``shown``, which the
    macro MAE and the pooled paired rows leave out, or None. The header names the bank/protocol rows as
    outside the macro MAE; a session-57 review found a ``[batch K]`` bank left out of it with no word."""
    text = pd.Series(list(dict.fromkeys(map(str, shown))), dtype=object)
    variants = text[is_shift_protocol(text) & ~text.str.contains("/", regex=False)].tolist()
    if not variants:
        return None
    return (f"Not in the macro MAE nor in the pooled paired rows: {', '.join(variants)} (run variants or task subsets: "
            "both take each bank's plain runs only).")


def _cmp_header(table: pd.DataFrame) -> list[str]:
    """The comparison columns, with "tasks run" when the runs had a stopping rule."""
    return [*_CMP_HEADER, *(["tasks run"] if _has_tasks_run(table) else [])]


def _has_tasks_run(table: pd.DataFrame) -> bool:
    return "mean_tasks_run" in table and bool(table["mean_tasks_run"].notna().any())


def _coverage_text(r) -> str:
    """'0.94 (0.88–0.97)': a row's coverage and its Wilson 95 % interval (n = targets); '–' without intervals."""
    if r.coverage_90 is None or pd.isna(r.coverage_90):
        return "–"
    return f"{r.coverage_90:.2f} ({r.coverage_ci_low:.2f}–{r.coverage_ci_high:.2f})"


def _cmp_cells(r, tasks_run: bool = False) -> list[tuple[str, float | None]]:
    """(text, rank) per comparison-table cell; rank None = never marked."""
    return [(r.bank, None), (r.method, None), (_fmt(r.mae_pp), r.mae_mark), (_fmt(r.maxerr_pp), r.maxerr_mark),
            (_fmt(r.kendall_tau_b), r.tau_mark), (_coverage_text(r), None), (_fmt(r.mean_width_pp, 2), None),
            (str(r.n_targets), None), (str(r.n_seeds), None)] + (
                [(tasks_run_text(r.mean_tasks_run, r.stopped_early), None)] if tasks_run else [])


def _macro_wide(g: pd.DataFrame) -> tuple[list[str], list[str], list[list[tuple[str, float | None]]]]:
    """Rows = methods, columns = per-bank MAE and the macro MAE; cells as (text, rank)."""
    per = g[g["bank"].isin(macro_banks(g.loc[g["bank"] != MACRO, "bank"]))]
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


def comparison_markdown(table: pd.DataFrame, notes: Sequence[str] = ()) -> str:
    """Markdown for :func:`comparison_table`: per budget a per-bank table and a macro-MAE table, then
    ``notes`` (sentences, e.g. :func:`~hspr.report.inputs.pass_rate_notes`) under a Notes heading.

    Best per bank and column in **bold**, second best in *italic* (see :func:`_with_marks`).
    """
    out = ["# Score recovery: comparison", "",
           "Seed-averaged metrics over all targets of a bank's 4 folds, or of a shift protocol (bank/protocol rows, "
           "outside the macro MAE) (HSPR_SPEC section 7); errors in percentage points (pp). Per bank: **bold** = best, "
           "*italic* = second best, each marked only when some entry "
           "ranks below it (MAE, MaxErr: lower is better; Kendall τ_b: higher is better). 90 % coverage: "
           "fraction of runs (target × seed) whose 90 % interval holds the true score, its ends included (– = the "
           "method gives no interval); in brackets its Wilson 95 % interval with n = targets (a target's seeds are not "
           "independent runs, so this errs wide where they differ). MAE and MaxErr differences between methods are "
           "tested in paired.md, not by the marks.", ""]
    for _, g in _with_marks(table).groupby("budget_fraction", sort=True):
        out += [f"## {_budget_heading(g)}", ""]
        header, tr = _cmp_header(table), _has_tasks_run(table)
        rows = [[_mark_md(t, k) for t, k in _cmp_cells(r, tr)] for r in g[g["bank"] != MACRO].itertuples()]
        out += [_md_table(header, rows, [False, False] + [True] * (len(header) - 2)), ""]
        off = list(dict.fromkeys(g.loc[~g["ranked"].astype(bool) & (g["bank"] != MACRO), "bank"]))
        if off:
            out += [f"Not ranked: {', '.join(off)} (the methods were replayed on different targets, or some targets "
                    "of a method on other query seeds than the others, so their metrics average over different agents; "
                    "see the targets column and the notes of `hspr report`).", ""]
        banks, _, wide = _macro_wide(g)
        shown = g.loc[g["bank"] != MACRO, "bank"]
        left = [b for b in dict.fromkeys(shown[~is_shift_protocol(shown)]) if b not in banks]
        if len(banks) < 2:  # one bank, or shift protocols only: no macro MAE (it would repeat the bank's)
            if left:
                out += [f"No macro MAE: {', '.join(banks)} is the only paper bank here, and the other banks "
                        f"({', '.join(left)}) are not averaged with paper banks.", ""]
            continue
        out += ["### Macro MAE (equal weight over banks, pp)", ""]
        rows = [[_mark_md(t, k) for t, k in cells] for cells in wide]
        out += [_md_table(["method"] + [f"{b} MAE" for b in banks] + ["macro MAE"], rows,
                          [False] + [True] * (len(banks) + 1)), ""]
        if any(c[-1][0] == "–" for c in wide):
            out += ["– in the macro column: the method was not run on every bank.", ""]
        if left:
            out += [f"Not in the macro MAE: {', '.join(left)} (it averages the paper's four banks).", ""]
        for note in (_variant_note(shown), _partial_macro_note(banks, shown)):
            if note:  # a trial took a 3-bank macro for the paper's
                out += [note, ""]
    if notes:
        out += ["## Notes", ""] + [f"- {n}" for n in notes] + [""]
    return "\n".join(out)


def _rich_cell(text: str, rank):
    from rich.text import Text

    # no_wrap: a mark on a line of its own read as a row of stars (a re-trial at 60-80 columns)
    if text == "–" or rank is None or pd.isna(rank) or rank > 2:
        return Text(text + "  ", no_wrap=True)
    return Text(text + (" *" if rank == 1 else " '"), style="bold" if rank == 1 else "italic", no_wrap=True)


def comparison_rich(table: pd.DataFrame) -> list:
    """rich Tables for the terminal: best per bank marked * (bold), second best ' (italic); after a
    macro table of fewer than the paper's four banks, a line saying so (a rich Text)."""
    from rich.table import Table
    from rich.text import Text

    out = []
    for _, g in _with_marks(table).groupby("budget_fraction", sort=True):
        # Text: a bank label such as 'base[stop 45 pp]' is not rich markup (its '[...]' was dropped)
        t = Table(title=Text(_budget_heading(g)), caption="errors in pp; * best, ' second best per bank")
        for h in _cmp_header(table):
            t.add_column(h, justify="left" if h in ("bank", "method") else "right", no_wrap=h in ("bank", "method"))
        per, tr = g[g["bank"] != MACRO], _has_tasks_run(table)
        last = per["bank"].ne(per["bank"].shift(-1)).to_numpy()
        for r, end in zip(per.itertuples(), last):
            t.add_row(*[_rich_cell(x, k) for x, k in _cmp_cells(r, tr)], end_section=bool(end))
        out.append(t)
        banks, _, wide = _macro_wide(g)
        if len(banks) < 2:  # one bank, or shift protocols only: no macro MAE (it would repeat the bank's)
            continue
        mt = Table(title=f"Macro MAE (equal weight over banks), budget {_pct(g['budget_fraction'].iloc[0])}",
                   caption="MAE in pp; * best, ' second best per column; – not run on every bank")
        mt.add_column("method")
        for b in banks:
            mt.add_column(Text(f"{b} MAE"), justify="right")
        mt.add_column("macro MAE", justify="right")
        for cells in wide:
            mt.add_row(*[_rich_cell(x, k) if i else Text(x) for i, (x, k) in enumerate(cells)])
        out.append(mt)
        shown = g.loc[g["bank"] != MACRO, "bank"]
        for note in (_variant_note(shown), _partial_macro_note(banks, shown)):
            if note:  # as comparison.md says it (a trial: only the file did)
                out.append(Text(note))
    return out


def _fmt_p(p) -> str:
    if p is None or pd.isna(p):
        return "–"
    return f"{p:.2e}" if p < 1e-3 else f"{p:.3f}"


def _pair_header(base: str) -> list[str]:
    """The paired table's header; the count column names the baseline (a new-user trial: 'baseline
    better / worse' under a title that named it only as the method after the minus sign)."""
    return ["budget", "method", "bank", "targets", "mean Δ (pp)", "95 % CI (pp)", "median Δ (pp)",
            f"targets {base} better / worse", "p (Wilcoxon; macro: sign-flip)", "Holm p"]


def _pair_cells(r) -> list[str]:
    return [_pct(r.budget_fraction), r.method, r.bank, str(r.n_targets), f"{r.mean_diff_pp:+.3f}",
            f"[{r.ci_low_pp:+.3f}, {r.ci_high_pp:+.3f}]" if not pd.isna(r.ci_low_pp) else "–",
            "–" if pd.isna(r.median_diff_pp) else f"{r.median_diff_pp:+.3f}", f"{r.n_baseline_better} / {r.n_method_better}",
            _fmt_p(r.p_value),
            _fmt_p(r.p_holm)]


def _comparisons(n: int) -> str:
    """'the 1 comparison' or 'all n comparisons'."""
    return "the 1 comparison" if n == 1 else f"all {n} comparisons"


def _paired_note(paired: pd.DataFrame, n_resamples: int | None, seed: int | None) -> str:
    base = paired["baseline"].iloc[0] if len(paired) else "the baseline"
    boot = f"{n_resamples:,} resamples, seed {seed}" if n_resamples is not None else "see --n-resamples"
    return (f"Δ = seed-averaged absolute error of the method − that of {base} on the same target, in pp; "
            f"positive = {base} better. Mean Δ with a 95 % percentile bootstrap interval ({boot}) that resamples "
            "the targets and each method's query seeds (a seed's random draw of tasks is shared by every target: "
            "resampling the targets alone left its spread out; one draw of seeds for both methods where they ran the "
            "same seeds; both factors resampled, the interval errs wide), not "
            "adjusted for the number of comparisons; two-sided "
            f"Wilcoxon signed-rank test of the targets' differences (zero_method='{ZERO_METHOD}': zero differences "
            "dropped, though the targets column counts them; it tests the differences' pseudo-median, not the mean Δ); "
            f"Holm correction over {_comparisons(len(paired))} in this table (Holm p below 0.05 in bold). '{POOLED}' "
            "rows put the targets of the banks of the macro MAE together (the paper's four banks when any is here, "
            "else every plain bank; shift protocols only when nothing else is here; each target weighs the same, "
            f"unlike the macro MAE's equal weight per bank, and an agent on two banks counts twice). '{MACRO}' rows "
            "give the difference of the comparison table's macro MAEs (the mean over its banks of each bank's mean Δ) "
            "and count agents, not targets (an agent on two banks is one; better / worse: the agents whose share of "
            "the difference is positive / negative); their interval resamples the agents, an agent's rows on every "
            "bank together, and each method's query seeds; their p is a two-sided sign-flip test's of the macro "
            "difference (each agent's share changes sign as one, in as many random draws as the bootstrap's "
            "resamples, so p is at least 1 / (1 + resamples), a floor Holm then multiplies), not Wilcoxon's, and "
            "they have no median. The tests treat "
            "the targets (macro rows: the agents) as independent: a method that asks every target the same tasks (a fixed set, or a query "
            "seed's random draw) gives errors that share those tasks, so its p-values are too small, the more so "
            "with fewer seeds; and neither the interval nor the test includes the spread of a method's fit over "
            "other source agents." + _few_pairs(paired))


#: the fewest non-zero paired differences whose two-sided exact Wilcoxon p can fall below 0.05 (2 / 2**6 = 0.031)
MIN_WILCOXON_PAIRS = 6


def _few_pairs(paired: pd.DataFrame) -> str:
    """A sentence for the rows of :func:`paired_analysis` with fewer than :data:`MIN_WILCOXON_PAIRS` targets whose
    errors differ, whose Wilcoxon p cannot fall below 0.05 (a hostile trial: with 1 or 2 targets p = 1.000 was printed
    with no word); '' when there is none."""
    n = (paired["n_baseline_better"] + paired["n_method_better"]).to_numpy()
    few = (n < MIN_WILCOXON_PAIRS) & (paired["bank"] != MACRO).to_numpy()  # a macro row's p is a sign-flip test's
    if not few.any():
        return ""
    first = paired[few].iloc[0]  # a re-trial: the note named no row
    return (f" {int(few.sum())} row(s) rest on fewer than {MIN_WILCOXON_PAIRS} targets whose errors differ (e.g. "
            f"{first['method']} on {first['bank']} at {100 * first['budget_fraction']:g} %): there Wilcoxon's p "
            "cannot fall below 0.05 (its least value is 2/2^n for n such targets), whatever the errors.")


def paired_markdown(paired: pd.DataFrame, n_resamples: int | None = None, seed: int | None = None) -> str:
    """Markdown for :func:`paired_analysis`; Holm p < 0.05 in bold."""
    out = ["# Paired comparison against the baseline", ""]
    if paired.empty:
        return "\n".join(out + ["No method other than the baseline in the results.", ""])
    out += [_paired_note(paired, n_resamples, seed), ""]
    out += [_md_table(_pair_header(paired["baseline"].iloc[0]), _pair_rows_md(paired), [False, False, False] + [True] * 7), ""]
    return "\n".join(out)


def _pair_rows_md(frame: pd.DataFrame) -> list[list[str]]:
    """The Markdown cells of each row of a :func:`paired_analysis` (or variant) frame, Holm p < 0.05 in bold."""
    rows = []
    for r in frame.itertuples():
        cells = _pair_cells(r)
        if not pd.isna(r.p_holm) and r.p_holm < 0.05:
            cells[-1] = f"**{cells[-1]}**"
        rows.append(cells)
    return rows


#: the first line of variants.md (:func:`variant_markdown`)
VARIANT_TITLE = "# Run variants against the plain runs"


def _variant_header() -> list[str]:
    """:func:`_pair_header`'s columns for :func:`_pair_cells` of a variant row (its method is the variant's label)."""
    return ["budget", "variant", "bank", "targets", "mean Δ (pp)", "95 % CI (pp)", "median Δ (pp)",
            "targets plain better / worse", "p (Wilcoxon)", "Holm p"]


def _unchanged_text(variants: pd.DataFrame) -> str:
    """'uniform, faq (in lite[batch 5], lite[batch 10])' or 'lite[batch 5]: uniform; lite[batch 10]: uniform, faq': the methods
    whose errors a variant changed on no target (``attrs["unchanged"]`` of :func:`~hspr.report.stats.variant_analysis`);
    '' for none."""
    unchanged = variants.attrs.get("unchanged") or {}
    lists = {tuple(ms) for ms in unchanged.values()}
    if not unchanged:
        return ""
    if len(lists) == 1 and len(unchanged) > 1:
        return f"{', '.join(next(iter(lists)))} (in {', '.join(unchanged)})"
    return "; ".join(f"{v}: {', '.join(ms)}" for v, ms in unchanged.items())


def _variants_intro(variants: pd.DataFrame, n_resamples: int | None, seed: int | None) -> str:
    boot = f"{n_resamples:,} resamples, seed {seed}" if n_resamples is not None else "see --n-resamples"
    unchanged = _unchanged_text(variants)
    return ("Each run variant (a bank label `B[batch K]` or `B[stop W pp]`: `hspr replay --batch K`, `--stop-width W`) "
            "against the same "
            "method's runs on the plain bank B, on the targets both ran. Δ = seed-averaged absolute error of the "
            "variant − that of the plain runs on the same target, in pp; positive = the plain runs better. Mean Δ "
            f"with a 95 % percentile bootstrap interval ({boot}) over the targets and the query seeds, and a two-sided "
            f"Wilcoxon signed-rank test (zero_method='{ZERO_METHOD}'), as in paired.md; Holm's correction over "
            f"{_comparisons(len(variants))} here (a family of its own: paired.md's Holm p do not count these)."
            + (f" No row where the variant changed no target's error (in rounds, a method whose tasks do not depend "
               f"on the outcomes; with a stop width, runs that never reached it): {unchanged}." if unchanged else "")
            + _few_pairs(variants))


def variant_markdown(variants: pd.DataFrame, n_resamples: int | None = None, seed: int | None = None) -> str:
    """Markdown for :func:`~hspr.report.stats.variant_analysis`; Holm p < 0.05 in bold."""
    out = [VARIANT_TITLE, "", _variants_intro(variants, n_resamples, seed), ""]
    if len(variants):
        out += [_md_table(_variant_header(), _pair_rows_md(variants), [False, False, False] + [True] * 7), ""]
    return "\n".join(out)


def variant_rich(variants: pd.DataFrame):
    """rich Table for :func:`~hspr.report.stats.variant_analysis`; Holm p < 0.05 in bold."""
    from rich.table import Table
    from rich.text import Text

    unchanged = _unchanged_text(variants)
    # Text: '[batch 10]' is no rich markup
    t = Table(title="Run variants against the same method's plain runs: |error| difference (pp; + = plain better)",
              caption=Text("95 % percentile bootstrap CI; Wilcoxon signed-rank; Holm over these rows"
                           + (f"; no row where the variant changed no error: {unchanged}" if unchanged else "") + "."
                           + _few_pairs(variants)))
    for h in _variant_header():
        t.add_column(h, justify="left" if h in ("variant", "bank") else "right", no_wrap=h in ("bank", "variant"))
    for r in variants.itertuples():
        cells = [Text(c, no_wrap=k == 5) for k, c in enumerate(_pair_cells(r))]
        cells[-1].stylize("bold" if not pd.isna(r.p_holm) and r.p_holm < 0.05 else "")
        t.add_row(*cells)
    return t


def paired_rich(paired: pd.DataFrame):
    """rich Table for :func:`paired_analysis`; Holm p < 0.05 in bold."""
    from rich.markup import escape
    from rich.table import Table
    from rich.text import Text

    base = escape(paired["baseline"].iloc[0] if len(paired) else "baseline")
    header = _pair_header(base)
    ci = header.index("95 % CI (pp)")
    t = Table(title=f"Paired per-target |error| difference: method − {base} (pp; + = {base} better)",
              caption=f"95 % percentile bootstrap CI; Wilcoxon signed-rank (zero_method='{ZERO_METHOD}'); {MACRO}: the "
                      "difference of macro MAEs, agents resampled across banks, sign-flip p; Holm over all rows; better / "
                      "worse leave out targets with equal errors." + _few_pairs(paired))
    for h in header:
        t.add_column(h, justify="left" if h in ("method", "bank") else "right", no_wrap=h in ("bank", "method"))
    last = (paired["method"].ne(paired["method"].shift(-1))
            | paired["budget_fraction"].ne(paired["budget_fraction"].shift(-1))).to_numpy()
    for r, end in zip(paired.itertuples(), last):
        cells = [Text(c, no_wrap=k == ci) for k, c in enumerate(_pair_cells(r))]  # an interval on one line
        sig = not pd.isna(r.p_holm) and r.p_holm < 0.05
        cells[-1].stylize("bold" if sig else "")
        t.add_row(*cells, end_section=bool(end))
    return t
