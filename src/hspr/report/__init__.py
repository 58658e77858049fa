"""Replay reports: the comparison table, paired statistics against a baseline, and figures.

The input is the ``runs`` list of one or more ``hspr replay --out`` results files (one record
per bank, method, fold, target, seed and budget; scores on the 0-1 scale). Everything this
module reports is in percentage points (pp) of the bank's tasks.

Library entry points (no CLI needed)::

    runs = read_results(["sweep.json", "main.json"])
    table = comparison_table(runs)            # per bank MAE / MaxErr / tau_b, macro MAE, coverage
    paired = paired_analysis(runs, "hspr")    # method - baseline, bootstrap CI, Wilcoxon, Holm
    variants = variant_analysis(runs)         # 'lite[batch 10]' runs - the same method's 'lite' runs
    paths = make_figures(runs, "report/")     # PNG + SVG
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

import pandas as pd

from ..fileio import OS_FIXES, blocking_flag, signals_held
from ..session import NOMINAL_LEVEL
from .figures import (
    FIGURE_FORMATS,
    FIGURE_STEMS,
    figure_budget_curves,
    figure_coverage,
    figure_estimate_vs_truth,
    has_budget_sweep,
    make_figures,
)
from .inputs import (
    BAND_PP,
    DECIMALS,
    MACRO,
    MAIN_FRACTION,
    POOLED,
    REQUIRED_COLUMNS,
    RUN_KEY,
    ZERO_METHOD,
    ReportError,
    ReportWarning,
    _check_runs,
    _methods,
    bank_order,
    default_baseline,
    is_shift_protocol,
    macro_banks,
    pass_rate_notes,
    read_results,
    runs_frame,
    widened_notes,
)
from .stats import (
    coverage_table,
    holm,
    paired_analysis,
    paired_stats,
    per_target_errors,
    seed_metrics,
    shift_flag_notes,
    summarize,
    variant_analysis,
)
from .tables import (
    VARIANT_TITLE,
    comparison_markdown,
    comparison_rich,
    comparison_table,
    paired_markdown,
    paired_rich,
    variant_markdown,
    variant_rich,
)

__all__ = ["BAND_PP", "DECIMALS", "MACRO", "MAIN_FRACTION", "NOMINAL_LEVEL", "POOLED", "REQUIRED_COLUMNS", "RUN_KEY", "TABLE_FILES",
           "VARIANT_FILES", "ZERO_METHOD", "ReportError", "ReportWarning", "bank_order", "comparison_markdown", "comparison_rich",
           "comparison_table", "coverage_table", "default_baseline", "figure_budget_curves", "figure_coverage",
           "figure_estimate_vs_truth", "holm", "is_report_file", "is_shift_protocol", "macro_banks", "make_figures", "paired_analysis",
           "paired_markdown", "paired_rich", "paired_stats", "pass_rate_notes", "per_target_errors", "read_results", "report_files",
           "runs_frame", "seed_metrics", "shift_flag_notes", "summarize", "variant_analysis", "variant_markdown", "variant_rich",
           "widened_notes", "write_report"]



# --------------------------------------------------------------------------------------------
# everything


#: the tables :func:`write_report` writes
TABLE_FILES = ("comparison.md", "comparison.csv", "paired.md", "paired.csv")
#: the tables :func:`write_report` writes when the runs hold run variants of a plain bank (:func:`variant_analysis`)
VARIANT_FILES = ("variants.md", "variants.csv")


def report_files(figures: bool = True) -> tuple[str, ...]:
    """The names of the files :func:`write_report` may write in its folder (a figure that has
    nothing to show, e.g. budget curves of one budget, is not written): the CLI checks that none
    of them would replace a file it must not."""
    return TABLE_FILES + VARIANT_FILES + (tuple(f"{s}.{e}" for s in FIGURE_STEMS for e in FIGURE_FORMATS) if figures
                                          else ())


#: how the first line of each table file :func:`write_report` writes starts, and text it holds (an empty file counts
#: as one too); a `replay --csv` summary is not a report's comparison.csv (it has no ranks: a re-trial)
_TABLE_HEADS = {"comparison.md": ("# Score recovery: comparison", ""),
                "paired.md": ("# Paired comparison against the baseline", ""),
                "comparison.csv": ("budget_fraction,budget,bank,method,", ",mae_rank,"),
                "paired.csv": ("budget_fraction,method,baseline,", ""),
                "variants.md": (VARIANT_TITLE, ""),
                "variants.csv": ("budget_fraction,method,baseline,", "")}


def is_report_file(path: str | Path) -> bool:
    """Whether the existing file ``path``, named as one of :func:`report_files`, holds what a report writes
    under that name (a table by its first line, a figure by :func:`~hspr.report.runplot.is_figure_file`; an
    empty file counts as one), so that a report replaces an earlier report's file and not a user's notes
    named ``comparison.md`` (a hostile trial: three such files were replaced without a word). A figure is
    taken for an earlier report's when hspr drew it, by its layout and metadata (a PNG of `hspr live plot`
    copied there passes; a screenshot does not)."""
    from .runplot import is_figure_file

    path = Path(path)
    if path.name not in _TABLE_HEADS:
        return is_figure_file(path)
    with open(path, "rb") as fh:
        line = fh.readline(4096).lstrip(b"\xef\xbb\xbf")
    start, holds = _TABLE_HEADS[path.name]
    return not line or (line.startswith(start.encode()) and holds.encode() in line)


#: the staging folders of :func:`write_report` in its ``out_dir``: ``.hspr-report-<pid>-<random>``
STAGING_PREFIX = ".hspr-report-"


def _remove_orphans(out_dir: Path) -> None:
    """Delete the staging folders that a report killed before its cleanup left in ``out_dir`` (a
    hostile trial: SIGTERM, SIGHUP or SIGKILL during a report): those whose process is gone. A
    running report's folder (another process writing into the same folder) is kept."""
    for d in out_dir.glob(f"{STAGING_PREFIX}*-*"):
        pid = d.name[len(STAGING_PREFIX):].split("-", 1)[0]
        if not pid.isdigit() or not d.is_dir():
            continue
        try:
            os.kill(int(pid), 0)  # no signal: only whether the process exists
        except ProcessLookupError:
            shutil.rmtree(d, ignore_errors=True)
        except (OverflowError, OSError):  # another user's process (PermissionError), or no such pid number
            continue


def _move_in(staged: list[Path], out_dir: Path) -> list[Path]:
    """Move the staged files into ``out_dir`` (``os.replace``, atomic per file); return their new paths.

    Raises ReportError when one cannot be moved, naming it and the files already replaced (the
    others keep an earlier report's content)."""
    done: list[Path] = []
    with signals_held():  # all moved in, or (an OSError) those named: never part of them for a Ctrl-C
        for f in staged:
            try:
                os.replace(f, out_dir / f.name)
            except OSError as exc:
                replaced = (f"{', '.join(p.name for p in done)} {'was' if len(done) == 1 else 'were'} replaced by this "
                            "report's; the others were not" if done else "no file of the folder was replaced")
                raise ReportError(f"{out_dir / f.name}: {exc.strerror or exc}; the report is not complete ({replaced}): "
                                  "make that file writable or use another --out-dir, then run the command again") from exc
            done.append(out_dir / f.name)
    return done


def _unwritten(out_dir: Path, exc: OSError) -> str:
    """The message of a report that could not be written into ``out_dir``: the reason and its fix (a hostile
    trial: a folder where writing is not permitted was told to free space)."""
    fix = OS_FIXES.get(exc.errno, "free space there, fix the folder's permissions")
    return (f"{out_dir}: the report could not be written ({exc.strerror or exc}); no file of the folder was "
            f"replaced: {fix}, or use another --out-dir")


@contextlib.contextmanager
def _removed_if_left_empty(made: list[Path]) -> Iterator[None]:
    """On an error inside, remove the folders of ``made`` (deepest first) that are still empty: a trial's
    failed reports each left an empty --out-dir behind."""
    try:
        yield
    except BaseException:
        for folder in made:
            with contextlib.suppress(OSError):
                folder.rmdir()
        raise


def write_report(runs: pd.DataFrame, out_dir: str | Path, baseline: str | None = None, n_resamples: int = 10_000,
                 seed: int = 0, figures: bool = True, also: str | None = None, notes: Sequence[str] = ()) -> dict:
    """Compute the comparison and paired tables, write Markdown / CSV (and figures) to ``out_dir``.

    Parameters
    ----------
    runs : pandas.DataFrame
        Run records (see :func:`read_results`).
    out_dir : path
        Created if needed.
    baseline, n_resamples, seed : see :func:`paired_analysis` (baseline None: the first method in
        registry order, as ``hspr report`` without ``--baseline``).
    figures : bool
        Also write the figures (:func:`make_figures`).
    also : str, optional
        A second method for the estimate-vs-truth figure.
    notes : sequence of str
        Sentences for comparison.md's Notes, first (``hspr report`` gives the :class:`ReportWarning` messages of
        :func:`read_results`: a file of an interrupted replay's runs, an estimate outside its interval, ...; a
        re-trial found them on the terminal only, and the written report read as whole).

    Returns
    -------
    dict
        ``comparison``, ``paired`` and ``variants`` (:func:`variant_analysis`) DataFrames, ``paths``: the
        written files (comparison.md, comparison.csv, paired.md, paired.csv, variants.md and variants.csv
        when the runs hold run variants of a plain bank, then the figures), and ``stale``:
        figure files of those names already in ``out_dir`` that this report did not write
        (from an earlier report; left in place).

    Raises
    ------
    ReportError
        When ``baseline`` or ``also`` is not among the runs' methods, or ``also`` is ``baseline``,
        or a folder has the name of a file it writes, or a file that is not an earlier report's
        (:func:`is_report_file`) does (each before anything is written); for an
        ``n_resamples`` below 1 (:func:`paired_analysis`);
        from :func:`make_figures` when the figures cannot be drawn; when a file cannot be written
        (then no file in ``out_dir`` is replaced: every file is written in a staging folder there
        first) or moved into place (naming the files already replaced).
    OSError
        When ``out_dir`` cannot be created.
    """
    runs = _check_runs(runs)
    methods = _methods(runs)
    baseline = default_baseline(runs, baseline)
    for role, m in (("baseline", baseline), ("--also method", also)):
        if m is not None and m not in methods:
            raise ReportError(f"{role} {m!r} is not in the results (methods: {', '.join(methods)}); choose one of them")
    if also is not None and also == baseline:
        raise ReportError(f"--also {also!r} is the baseline: the figure's second method is another one "
                          "(drop --also: it then takes the method other than the baseline with the lowest MAE)")
    out_dir = Path(out_dir)
    made = [p for p in (out_dir, *out_dir.parents) if not p.exists()]  # the folders mkdir makes, deepest first
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # a hostile trial: --out-dir /proc/x was told to check that the folder exists
        fix = ("its file system takes no new folders" if exc.errno == errno.ENOENT  # parents=True: the path is there
               else OS_FIXES.get(exc.errno, "fix the permissions of the folder above it"))
        raise ReportError(f"{out_dir}: the --out-dir folder could not be created ({exc.strerror or exc}): {fix}; "
                          "use another --out-dir") from exc
    with _removed_if_left_empty(made):
        # a hostile trial: a folder named paired.csv stopped the moves half-way, after three tables were replaced
        folder = next((out_dir / n for n in report_files(figures) if (out_dir / n).is_dir()), None)
        if folder is not None:
            raise ReportError(f"{folder} is a folder, where the report writes its file {folder.name}; nothing was written: "
                              "move that folder away or use another --out-dir")
        # a hostile trial: a user's files named like the report's were replaced without a word; checked for the
        # files this report writes (a re-trial: a budget_curves.png of one's own was refused by a report of one budget)
        variants = variant_analysis(runs, n_resamples, seed)  # first: whether variants.md / .csv are written
        with_variants = bool(len(variants) or variants.attrs["unchanged"])  # a variant that changed nothing: said
        writes = [n for n in report_files(figures) if (not n.startswith("budget_curves.") or has_budget_sweep(runs))
                  and (n not in VARIANT_FILES or with_variants)]
        foreign = next((out_dir / n for n in writes if (out_dir / n).is_file() and not is_report_file(out_dir / n)), None)
        if foreign is not None:
            raise ReportError(f"{foreign} exists and is not the {foreign.name} of an hspr report; it is not replaced "
                              "(nothing was written): choose another --out-dir, or move that file")
        # a re-trial: an append-only coverage.png was found after the work, with half the report replaced
        flagged = next(((out_dir / n, flag) for n in writes if (out_dir / n).is_file()
                        and (flag := blocking_flag(out_dir / n)) is not None), None)
        if flagged is not None:
            (path, (words, fix)) = flagged
            raise ReportError(f"{path} is {words}, so the report cannot replace it (nothing was written): clear the "
                              f"flag ({fix}), or choose another --out-dir")
        table = comparison_table(runs)
        paired = paired_analysis(runs, baseline, n_resamples, seed)
        # every file is written in a staging folder first and then moved in: a trial's refused write (one
        # read-only file) left a folder of new tables beside an earlier report's paired.csv, without a word
        _remove_orphans(out_dir)
        try:
            staging = Path(tempfile.mkdtemp(prefix=f"{STAGING_PREFIX}{os.getpid()}-", dir=out_dir))
        except OSError as exc:  # no inode left: named by the folder, not the staging name
            raise ReportError(_unwritten(out_dir, exc)) from exc
        try:
            try:
                texts = [("comparison.md", comparison_markdown(table, [*notes, *pass_rate_notes(runs), *widened_notes(runs)])),
                         ("paired.md", paired_markdown(paired, n_resamples, seed))]
                if with_variants:
                    texts.append(("variants.md", variant_markdown(variants, n_resamples, seed)))
                    variants.to_csv(staging / "variants.csv", index=False)
                for name, text in texts:
                    (staging / name).write_text(text, encoding="utf-8")
                table.to_csv(staging / "comparison.csv", index=False)
                paired.to_csv(staging / "paired.csv", index=False)
                staged = [staging / n for n in TABLE_FILES + (VARIANT_FILES if with_variants else ())]
                if figures:
                    staged += make_figures(runs, staging, baseline, also)
            except OSError as exc:  # e.g. a full disk: named by the folder, not the staging file
                raise ReportError(_unwritten(out_dir, exc)) from exc
            paths = _move_in(staged, out_dir)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        # figures of an earlier report in this folder that this one did not replace (a trial: budget curves of a
        # sweep stayed beside the tables of a one-budget report); never deleted here, the caller says so
        stale = [out_dir / n for n in report_files(True)
                 if (out_dir / n).is_file() and out_dir / n not in paths and is_report_file(out_dir / n)]
    return {"comparison": table, "paired": paired, "variants": variants, "paths": paths, "stale": stale}

