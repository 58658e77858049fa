"""``hspr report``: comparison table, paired statistics and figures from replay results."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import click
from rich.markup import escape
from rich.table import Table

from ..harness import is_session_file
from ..methods import current_label, method_names
from .common import ExistingPath, completer
from .display import console as make_console
from .display import print_error, print_table
from .outputs import check_output_dir, os_error_message, same_file


def register(group: click.Group) -> None:
    """Add ``report`` (tables, paired tests and figures from replay results files: :mod:`hspr.report`) to the CLI ``group``."""
    @group.command("report")
    @click.argument("results", nargs=-1, required=True, type=ExistingPath(exists=True, dir_okay=False))
    @click.option("--out-dir", type=click.Path(file_okay=False), default="report", show_default=True,
                  help="Folder for comparison.md/.csv, paired.md/.csv and the figures (created if needed).")
    @click.option("--baseline", default=None, shell_complete=completer(method_names),
                  help="Method every other method is compared with in the paired analysis (default: the first "
                       "in registry order, a variant such as hspr[...] after its method: hspr, hspr[...], hspr_auto, "
                       "hspr_robust, then the peers; the same whatever the order of the files).")
    @click.option("--n-resamples", type=click.IntRange(min=100, max=1_000_000), default=10_000, show_default=True,
                  help="Bootstrap resamples for the 95 % interval of the mean paired difference.")
    @click.option("--seed", type=click.IntRange(min=0, max=2**32 - 1), default=0, show_default=True,
                  help="Bootstrap seed.")
    @click.option("--figures/--no-figures", default=True, show_default=True, help="Write PNG and SVG figures.")
    @click.option("--also", default=None, shell_complete=completer(method_names),
                  help="The second method of the estimate-vs-truth figure, in every bank's panel (default: on "
                       "each bank, the method other than --baseline with the lowest MAE there).")
    def report_cmd(results, out_dir, baseline, n_resamples, seed, figures, also):
        """Tables, paired statistics and figures from `hspr replay --out` results.

        RESULTS: one or more results files, each given as its own argument, their runs pooled (e.g.
        a budget sweep and a main run; a run present in several files is taken from the one given
        last). Errors are in percentage points (pp).

        \b
        Writes to --out-dir:
          comparison.md / .csv  per budget and bank: MAE, MaxErr, Kendall tau_b (best and
                                second best marked), 90 % coverage and width; macro MAE
          paired.md / .csv      per method vs --baseline: mean per-target |error| difference
                                (pp, + = baseline better), 95 % bootstrap CI, Wilcoxon p, Holm p
          variants.md / .csv    with run variants (a bank replayed with --batch K or
                                --stop-width W beside its plain runs): each against the
                                same method's plain runs, as paired.md
          budget_curves (with 2+ budgets), estimate_vs_truth, coverage  (.png and .svg)
        """
        # here, not at the top: hspr.report loads scipy.stats and pandas, ~0.8 s of every TAB of shell completion
        from ..report import (
            VARIANT_FILES,
            ReportError,
            ReportWarning,
            bank_order,
            comparison_rich,
            paired_rich,
            pass_rate_notes,
            read_results,
            report_files,
            shift_flag_notes,
            variant_rich,
            widened_notes,
            write_report,
        )
        from ..report.figures import at_budgets, figure_budgets, has_budget_sweep
        from ..report.inputs import default_baseline

        out, err = make_console(width=None if sys.stdout.isatty() else 140), make_console(stderr=True)
        check_output_dir(out_dir, "--out-dir")
        for name in report_files(figures):  # a fixed name in the folder may be a session file or a results file
            target = Path(out_dir) / name
            what = ("an hspr live session file (its recorded outcomes would be lost)" if is_session_file(target) else
                    next((f"the results file {r} given to read" for r in results if same_file(target, r)), None))
            if what:
                raise click.BadParameter(f"{target} is {what}, and the report writes its {name} there: choose "
                                         "another --out-dir, or move that file", param_hint="--out-dir")
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", ReportWarning)
                runs = read_results(results)
            baseline, also = (None if x is None else current_label(x) for x in (baseline, also))  # old labels too
            # none given: the first in registry order (a label's base name, then the label), one order whatever
            # the order of the files (a trial: the baseline followed it)
            baseline = default_baseline(runs, baseline)
            for w in caught:
                err.print(f"[yellow]note:[/yellow] {escape(str(w.message))}", highlight=False, soft_wrap=True)
            rep = write_report(runs, out_dir, baseline=baseline, n_resamples=n_resamples, seed=seed,
                               figures=figures, also=also, notes=[str(w.message) for w in caught])
        except ReportError as exc:
            print_error(err, exc)
            sys.exit(2)
        except OSError as exc:  # a full disk while writing: name the output folder when the error names no file
            err.print(f"error: {escape(os_error_message(exc, out_dir))}", highlight=False, soft_wrap=True)
            sys.exit(2)
        for item in comparison_rich(rep["comparison"]):  # per budget a table, a macro table, a note (Text)
            if isinstance(item, Table):  # label columns: bank and method, or the macro table's method
                print_table(out, item, keep=2 if item.columns[0].header == "bank" else 1)
            else:
                out.print(item)
        for line in [*pass_rate_notes(runs), *widened_notes(runs)]:  # as `hspr replay` printed them: no column shows them
            out.print(f"note: {line}", markup=False, highlight=False, soft_wrap=True)
        for line in shift_flag_notes(runs):  # a trial of the flag: nothing said what a flag was worth
            out.print(f"note: {line}", markup=False, highlight=False, soft_wrap=True)
        based = set(runs.loc[runs["method"] == baseline, "bank"])
        if len(rep["paired"]):
            print_table(out, paired_rich(rep["paired"]), keep=3)
            unpaired = [b for b in bank_order(runs["bank"]) if b not in based]  # a hostile trial: left out without a word
            if unpaired:
                err.print(f"note: no paired rows for {', '.join(unpaired)}: the baseline {baseline!r} has no runs there "
                          "(--baseline another method to compare there)", markup=False, highlight=False, soft_wrap=True)
        else:
            # a re-trial: 'no method other than' was said of results whose other method ran on another bank
            other = set(runs["method"]) - {baseline}
            why = (f"no method other than {baseline!r} in the results" if not other else
                   f"no other method ran on the same bank, budget and targets as {baseline!r}")
            err.print(f"{why}: no paired analysis", markup=False, highlight=False)
        if len(rep["variants"]) or rep["variants"].attrs["unchanged"]:
            print_table(out, variant_rich(rep["variants"]), keep=3)
        if rep["variants"].attrs["unpaired"]:  # a re-trial: no variants.md, and no word why
            err.print(f"note: {', '.join(rep['variants'].attrs['unpaired'])}: no method ran the same budget and targets "
                      "on the plain label too, so nothing was paired (variants.md)", markup=False, highlight=False,
                      soft_wrap=True)
        if figures and not has_budget_sweep(runs):
            err.print("note: one budget per bank and method in the results, so no budget_curves figure (it needs a sweep, e.g. "
                      "`hspr replay --budget 0.05,0.10,0.15,0.20`)", markup=False, highlight=False)
        if figures:  # a hostile trial: a figure or a panel left out without a word
            names = {p.name for p in rep["paths"]}
            if not any(n.startswith("coverage.") for n in names):
                some = "lower" in runs and bool(runs["lower"].notna().any())  # a re-trial: only the 10 % runs lacked them
                err.print("note: no coverage figure: " + ("no run at the figure's budget (per bank, the one closest to "
                          "10 %) has a 90 % interval" if some else "no run in the results has a 90 % interval"),
                          markup=False, soft_wrap=True)
            else:  # a hostile trial: a method run at 5 % only was left out of the 10 % coverage figure unsaid
                at = at_budgets(runs, figure_budgets(runs, baseline))
                with_band = set(runs.loc[runs["lower"].notna(), "method"]) if "lower" in runs else set()
                missed = sorted(with_band - set(at["method"]))  # one order whatever the files' order
                if missed:
                    err.print(f"note: the coverage figure has no point for {', '.join(missed)}: no run at the figure's "
                              "budget (per bank, the one closest to 10 % of the baseline's runs); report those runs "
                              "alone to draw them", markup=False, highlight=False, soft_wrap=True)
            lacking = [b for b in bank_order(runs["bank"]) if b not in based]
            if lacking:
                err.print(f"note: the estimate_vs_truth figure has no panel for {', '.join(lacking)}: the baseline "
                          f"{baseline!r} has no runs there (--baseline another method to draw it)", markup=False, highlight=False,
                          soft_wrap=True)
            also_banks = set(runs.loc[runs["method"] == also, "bank"]) if also else set()
            alone = [b for b in bank_order(runs["bank"]) if also and b in based and b not in also_banks]
            if alone:
                err.print(f"note: the estimate_vs_truth panel for {', '.join(alone)} shows {baseline!r} alone: --also "
                          f"{also!r} has no runs there", markup=False, highlight=False, soft_wrap=True)
        out.print(f"wrote {len(rep['paths'])} files:")
        for p in rep["paths"]:
            out.print(str(p), highlight=False, soft_wrap=True)
        if rep["stale"]:
            kind = "file(s)" if any(p.name in VARIANT_FILES for p in rep["stale"]) else "figure file(s)"
            err.print(f"note: {len(rep['stale'])} {kind} in {out_dir} are from an earlier report, not made by "
                      f"this one ({', '.join(p.name for p in rep['stale'])}): they do not show these results; delete "
                      "them or use another --out-dir", markup=False, soft_wrap=True)
