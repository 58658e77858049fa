"""``hspr replay``: backtest methods on archived response matrices."""

from __future__ import annotations

import os
import re
import sys
import time
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

import click
import numpy as np
from click.core import ParameterSource
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from ..data.banks import BANK_ORDER, BANKS, TARGET_SETS, close_bank_name, load_bank, load_target_set
from ..data.folds import (
    bank_folds,
    dated,
    forward_cut_tie,
    forward_split,
    make_folds,
    strongest_cut_tie,
    strongest_split,
)
from ..data.io import load_matrix, load_matrix_and_form, read_task_list
from ..data.matrix import DataError, ResponseMatrix
from ..errors import HsprError, InputWarning, UnknownIdError
from ..fileio import is_descriptor_path, readable_name, signals_held, write_json_durable, write_text_durable
from ..methods import REPLAY_DEFAULT, known_methods_text, method_class, method_names, names_with
from ..methods.hspr.config import ACQUISITIONS, DECISIONS
from ..methods.hspr.replay_options import check_table_covers, replay_methods
from ..replay import align_targets, check_fractions, is_results_doc, replay
from ..session import BudgetError, budget_from_fraction
from ..stopping import MIN_TASKS, WidthBelow
from .common import (
    MAX_SEED,
    CliError,
    ExistingPath,
    LazyHelpOption,
    backend_options,
    check_backend,
    check_matrix_label,
    check_workers,
    command_line,
    completer,
    connected,
    environment,
    label_problem,
    local_workers,
)
from .display import console as make_console
from .display import print_error, print_table, progress_bar, reading, table_console
from .outputs import (
    check_output_file,
    check_output_suffix,
    os_fix,
    refuse_overwriting_inputs,
    refuse_replacing_other_csv,
    refuse_replacing_other_json,
    spare_copy,
)

if TYPE_CHECKING:
    import pandas as pd

#: more seeds than any replay needs (each seed replays every target of every fold)
MAX_SEEDS = 1000


def fits_then_sessions(prog, task, shown: str, n_fit: int):
    """The progress callback of :func:`hspr.replay.replay` for the bar ``task`` of ``prog``: replay counts its fits
    (``n_fit``: one per split and method, as its ``progress`` says) and then its sessions as one series of steps, but one fit can take 300
    times a session's time (a scale trial saw "0:00:01" left for 5 s of a 15-minute replay), so the fits are
    counted in the description, with no time left, and the bar counts the sessions."""
    def tick(done: int, total: int) -> None:
        if done < n_fit:
            prog.update(task, description=f"{shown}: fitting {done}/{n_fit}", completed=0, total=None)
        else:
            prog.update(task, description=shown, completed=done - n_fit, total=total - n_fit)

    return tick


def _runs_in(path: Path, earlier_runs: int | None) -> int | None:
    """The number of runs of the results file at ``path`` a replay replaces, said when it does:
    ``earlier_runs``, counted when the file was read before the replay
    (:func:`~hspr.cli.outputs.refuse_replacing_other_json`, which refused any other kind of file);
    -1 for a file that was not read (over 64 MB, or blank); None when there is no file or an empty one."""
    if earlier_runs is not None:
        return earlier_runs
    if is_descriptor_path(path):  # a re-trial: `--out /dev/stdout >> log.txt` appends, and was said to replace
        return None
    try:  # a hostile trial: `--out /dev/stdout > new.json` (an empty file) replaces nothing
        return -1 if path.is_file() and path.stat().st_size > 0 else None
    except OSError:
        return None


def _same_outcomes(a: ResponseMatrix, b: ResponseMatrix, agent: str) -> bool:
    """Whether ``agent`` has the same outcomes in both matrices on the tasks they share."""
    in_a = set(a.tasks)
    shared = [t for t in b.tasks if t in in_a]
    ia, ib = a.agent_index(agent), b.agent_index(agent)
    return bool(np.array_equal(a.values[ia, [a.task_index(t) for t in shared]],
                               b.values[ib, [b.task_index(t) for t in shared]]))


#: --targets rows under a new id with every outcome equal to a source row's are reported as copies
#: from this many shared tasks on (on fewer, equal rows happen by chance)
COPY_MIN_TASKS = 50


def _copied_rows(targets: ResponseMatrix, bank: ResponseMatrix) -> list[tuple[str, str]]:
    """(target id, source id) for target rows whose id is not a source id but whose outcomes (and
    missing cells) on the shared tasks equal a source row's; empty below :data:`COPY_MIN_TASKS`.
    A row that resolved all or none of the shared tasks is no copy (many agents solve none of a
    small hard subset)."""
    in_t = set(targets.tasks)
    shared = [t for t in bank.tasks if t in in_t]
    if len(shared) < COPY_MIN_TASKS:
        return []

    def cells(m: ResponseMatrix) -> np.ndarray:
        """The shared tasks' outcomes, NaN where a run is missing, shape (n_agents, len(shared))."""
        cols = [m.task_index(t) for t in shared]
        v = np.ascontiguousarray(m.values[:, cols], dtype=np.float64)
        if m.missing is not None:
            v[m.missing[:, cols]] = np.nan
        return v

    first = {}
    for a, row in zip(bank.agents, cells(bank)):
        first.setdefault(row.tobytes(), a)
    known = set(bank.agents)
    v = cells(targets)
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a row with no run: all-NaN, constant
        varies = np.nanmax(v, axis=1) > np.nanmin(v, axis=1)
    return [(a, first[row.tobytes()]) for a, row, vary in zip(targets.agents, v, varies)
            if a not in known and vary and row.tobytes() in first]


def parse_seeds(text: str | None) -> list[int] | None:
    """'0-4' -> [0..4]; '0,2,5' -> [0, 2, 5]; None -> None. Raises click.BadParameter."""
    if text is None:
        return None
    out: list[int] = []
    if not text.strip():
        raise click.BadParameter("no seeds given; give seeds as '0-4' or '0,1,2' (or leave --seeds out for each "
                                 "method's default)", param_hint="--seeds")
    try:
        for part in text.split(","):
            part = part.strip()
            if not part:
                raise click.BadParameter(f"{text!r}: an empty seed between commas; give seeds as '0-4' or '0,1,2'",
                                         param_hint="--seeds")
            if not re.fullmatch(r"[0-9]+(\s*-\s*[0-9]+)?", part):  # int() reads '1_0' as 10 (a hostile trial)
                raise ValueError(part)
            if "-" in part:
                lo, hi = part.split("-")
                if int(lo) > int(hi):
                    raise click.BadParameter(f"{text!r}: seed range {part!r} runs backwards; write it low-high",
                                             param_hint="--seeds")
                if int(hi) - int(lo) >= MAX_SEEDS:
                    raise click.BadParameter(f"{text!r}: {int(hi) - int(lo) + 1} seeds; at most {MAX_SEEDS} per replay "
                                             "(each seed replays every target)", param_hint="--seeds")
                out.extend(range(int(lo), int(hi) + 1))
            elif part:
                out.append(int(part))
    except ValueError:
        raise click.BadParameter(f"{text!r}: seeds are whole numbers from 0; give seeds as '0-4' or '0,1,2'",
                                 param_hint="--seeds") from None
    if not out or min(out) < 0 or max(out) > MAX_SEED:
        raise click.BadParameter(f"{text!r}: seeds must be whole numbers from 0 to {MAX_SEED} (2^53 - 1, the largest "
                                 "a results file keeps exactly)", param_hint="--seeds")
    if len(out) > MAX_SEEDS:
        raise click.BadParameter(f"{text!r}: {len(out)} seeds; at most {MAX_SEEDS} per replay", param_hint="--seeds")
    if len(set(out)) != len(out):
        twice = sorted({x for x in out if out.count(x) > 1})
        raise click.BadParameter(f"{text!r}: seed(s) {', '.join(map(str, twice[:5]))} given twice; each seed runs "
                                 "once", param_hint="--seeds")
    return out


def parse_budgets(text: str) -> list[float]:
    """``--budget``: comma-separated fractions of each bank's tasks, each in (0, 1]; click.BadParameter
    naming the text for an empty entry, a non-number, a task count (50) or a value outside (0, 1]."""
    if not text.strip():
        raise click.BadParameter("no budget given; give fractions like 0.10 or 0.05,0.10", param_hint="--budget")
    if any(not x.strip() for x in text.split(",")):
        raise click.BadParameter(f"{text!r}: an empty budget between commas; give fractions like 0.05,0.10",
                                 param_hint="--budget")
    try:
        vals = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise click.BadParameter(f"{text!r}: give budget fractions like 0.10 or 0.05,0.10,0.15,0.20",
                                 param_hint="--budget") from None
    # a count: digits without a point (not 'inf', 'nan' or '1e3', which the range check below refuses, a trial)
    whole = [x.strip() for x in text.split(",") if x.strip().isdigit() and float(x) >= 1]
    if whole:  # `hspr live --budget 50` is 50 tasks; here every bank has its own size
        raise click.BadParameter(f"{text!r}: replay budgets are fractions of each bank's tasks, not task counts "
                                 f"({whole[0]} looks like a count; e.g. {whole[0]} of a bank of {10 * int(whole[0])} "
                                 "tasks is 0.10, the whole bank is 1.0)", param_hint="--budget")
    if not vals or any(not 0 < v <= 1 for v in vals):
        raise click.BadParameter(f"{text!r}: budget fractions must be in (0, 1] (a fraction of the bank's tasks)",
                                 param_hint="--budget")
    return vals


def parse_methods(text: str) -> list[str]:
    """``--methods``: comma-separated registered names, or 'all' (each method whose class is
    ``in_all``); click.BadParameter naming unknown, empty or repeated names, or 'all' among others."""
    # 'all' = every method once (not those that are another under other settings: Method.in_all)
    known = method_names()
    names = names_with("in_all") if text.strip() == "all" else [x.strip() for x in text.split(",")]
    if "all" in names and len(names) > 1:
        raise click.BadParameter(f"{text!r}: 'all' runs every method and stands alone; give it alone, or list the "
                                 "names", param_hint="--methods")
    for n in dict.fromkeys(n for n in names if n not in known):
        try:  # a name two packages register: say so, not 'unknown' (a method-writer trial)
            method_class(n)
        except UnknownIdError:
            pass
        except HsprError as exc:
            raise click.BadParameter(f"{text!r}: {exc}", param_hint="--methods") from None
    unknown = [repr(n) for n in names if n not in known]
    repeated = sorted({n for n in names if n in known and names.count(n) > 1})
    if unknown or repeated:
        what = "; ".join(([f"unknown or empty name(s) {', '.join(unknown)}"] if unknown else [])
                         + ([f"given twice: {', '.join(repeated)}"] if repeated else []))
        raise click.BadParameter(f"{text!r}: {what}; known: {', '.join(known)} or 'all'", param_hint="--methods")
    return names


def summary_table(summary: pd.DataFrame, title: str) -> Table:
    """The replay summary as a rich Table: a row per bank, method and budget (errors in pp, coverage
    and mean width of the 90 % interval, targets and seeds; tasks run with a stopping rule)."""
    import pandas as pd

    from ..report.stats import tasks_run_text

    table = Table(title=title)
    stopped = "mean_tasks_run" in summary
    for col in ("bank", "method", "budget (tasks)", "MAE (pp)", "MaxErr (pp)", "Kendall τ_b", "90 % coverage", "mean width (pp)",
                "targets", "seeds") + (("tasks run",) if stopped else ()):
        if col in ("bank", "method"):  # never wrap a label: scripts and readers grep them
            longest = max([len(str(v)) for v in summary[col]] + [len(col)])
            table.add_column(col, justify="left", no_wrap=True, min_width=longest)
        else:
            table.add_column(col, justify="right")
    for r in summary.itertuples():
        cov = "-" if r.coverage_90 is None or pd.isna(r.coverage_90) else f"{r.coverage_90:.2f}"
        wid = "-" if r.mean_width_pp is None or pd.isna(r.mean_width_pp) else f"{r.mean_width_pp:.1f}"
        tau = "-" if pd.isna(r.kendall_tau_b) else f"{r.kendall_tau_b:.3f}"  # undefined for one target
        # cells of several words on one line (a docs audit: '36.6 (100' above '% early'); their headers may wrap
        run = (Text(tasks_run_text(r.mean_tasks_run, r.stopped_early), no_wrap=True),) if stopped else ()
        budget = Text(f"{r.budget} ({100 * r.budget_fraction:.3g} %)", no_wrap=True)
        table.add_row(Text(r.bank), Text(r.method), budget, f"{r.mae_pp:.3f}",
                      f"{r.maxerr_pp:.3f}", tau, cov, wid, str(r.n_targets), str(r.n_seeds), *run)
    return table


def check_unused_options(split: str, stop_width: float | None) -> None:
    """click.BadParameter for an option given without the option that uses it, before any work.

    ``--newest 5`` without ``--split forward`` would otherwise run the 4-fold replay the user did
    not ask for (minutes of work, exit 0; a new-user trial).
    """
    given = click.get_current_context().get_parameter_source
    for opt, used_by in (("newest", "forward"), ("strongest", "strongest")):
        if split != used_by and given(opt) not in (ParameterSource.DEFAULT, None):
            raise click.BadParameter(f"--{opt} is used only with --split {used_by}: add --split {used_by} "
                                     f"(or drop --{opt})", param_hint=f"--{opt}")
    if stop_width is None and given("stop_min_tasks") not in (ParameterSource.DEFAULT, None):
        raise click.BadParameter("--stop-min-tasks is used only with --stop-width: add --stop-width W "
                                 "(or drop --stop-min-tasks)", param_hint="--stop-min-tasks")


def _check_config_path(config_path: str) -> None:
    """ValueError for a --config file whose name cannot label runs or that does not exist."""
    if why := label_problem(Path(config_path).stem, reserved=False):
        raise ValueError(f"--config {config_path}: the runs are labelled <method>[config=<file name>], and the "
                         f"file name {why}: rename the file")
    if not Path(config_path).is_file():  # a re-trial: a named pipe was called 'no such file'
        what = ("a folder" if Path(config_path).is_dir() else "not a regular file (a named pipe or a device?)"
                if Path(config_path).exists() else "no such file")
        raise ValueError(f"--config {config_path}: {what} (give the path of a JSON file of HSPRConfig fields, or 'auto')")


def _config_doc(config_path: str):
    """The --config file's JSON (checked name and path); ValueError naming the file."""
    from ..fileio import read_json_file

    _check_config_path(config_path)
    try:
        doc = read_json_file(config_path)
    except ValueError as exc:
        raise ValueError(f"--config {exc}") from None
    if is_results_doc(doc):  # a hostile trial: a results file got a long list of 'unknown HSPR settings'
        raise ValueError(f"--config {config_path} is an `hspr replay` results file, not settings: give a JSON file of "
                         "HSPR settings (`hspr select --config-out` writes one), an `hspr select --record` table, or 'auto'")
    return doc


def refuse_missing_for(method_objs: dict, jobs: list) -> None:
    """click.BadParameter, before any run, when a job's source rows keep missing cells
    (``--no-missing-as-zero``) and a method needs a complete matrix (``accepts_missing`` False): the
    replay failed at that method's first fit, with the other methods' runs lost (a new-user trial)."""
    kept = [(label, mat) for label, mat, _, _ in jobs if mat.missing is not None]
    refusing = [n for n, m in method_objs.items() if not m.accepts_missing]
    if not kept or not refusing:
        return
    taking = names_with("accepts_missing")
    label, mat = kept[0]
    raise click.BadParameter(f"{label} keeps its {mat.n_missing} missing cell(s) (--no-missing-as-zero), and "
                             f"{', '.join(refusing)} need(s) a complete matrix: drop --no-missing-as-zero (missing cells "
                             f"count as unresolved), or run only methods that take missing cells ({', '.join(taking)})",
                             param_hint="--methods")


def _other_missing_reading(matrix: str | None, label: str, missing_as_zero: bool) -> ResponseMatrix | None:
    """The matrix of ``--matrix`` or of the bundled bank ``label`` with its missing cells read the other
    way than ``missing_as_zero`` says (kept, or counted as unresolved); None when it has none, or
    cannot be read again."""
    try:
        raw = load_matrix(matrix) if matrix else load_bank(label.split("/")[0], missing_as_zero=False)
    except (DataError, OSError):
        return None
    return None if raw.missing is None else raw if missing_as_zero else raw.fill_missing(0)


def _fill_missing(mat: ResponseMatrix, ids: list[str] | None) -> ResponseMatrix:
    """``mat`` with its missing cells counted as unresolved. With a ``--tasks`` subset ``ids``, the warning
    about agents that ran fewer than half the tasks judges them on the subset, which they are scored on (a
    trial: an agent that ran every task of the subset was warned of, by the whole bank's count)."""
    if ids is None:
        return mat.fill_missing(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InputWarning)
        filled = mat.fill_missing(0)
    try:
        mat.select_tasks(ids).fill_missing(0)  # for its warnings, on the subset
    except DataError:
        pass  # the subset's own error is raised where it is cut, naming --tasks
    return filled


def check_budgets(label: str, n_tasks: int, fractions: list[float]) -> None:
    """Every budget fraction must give a distinct task count >= 1 on this bank
    (:func:`hspr.replay.check_fractions`); raises click.BadParameter naming --budget."""
    try:
        check_fractions(fractions, n_tasks, label)
    except BudgetError as exc:
        raise click.BadParameter(str(exc), param_hint="--budget") from None


def save_results(payload: dict, out: Path, csv_text: str | None, csv_path: str | None) -> None:
    """Write the results JSON (and the summary CSV) atomically. If the JSON cannot be written (full
    disk, lost permission) the runs are not thrown away: they go to a file in the temporary folder,
    named in the error (CliError, exit 2)."""
    try:
        write_json_durable(payload, out)
    except OSError as exc:
        spare = spare_copy(payload, "hspr-results-")
        kept = (f"the {len(payload['runs'])} runs were saved to {spare} instead (`hspr report` reads it)" if spare else
                "the runs could not be saved anywhere else either")
        target = f" (-> {exc.filename})" if exc.filename and str(exc.filename) != str(out) else ""  # a link's target
        raise CliError(f"cannot write {out}{target}: {exc.strerror or exc}; {kept}. {os_fix(exc)}, or choose another "
                       "--out") from None
    if csv_text is not None:
        try:
            write_text_durable(csv_text, Path(csv_path))
        except OSError as exc:
            raise CliError(f"cannot write {csv_path}: {exc.strerror or exc}; the runs are in {out}, and "
                           f"`hspr report {out}` writes the tables") from None


class InterruptKeeper:
    """What an interrupted ``hspr replay`` (Ctrl-C, SIGTERM, SIGHUP) had done, kept and said when the interrupt ends
    the command, as a context manager around the replays and the writing of ``--out``. Hostile trials: Ctrl-C at 8 of
    24 jobs lost every finished run and said only "interrupted"; so did one after the last job, before ``--out`` was
    written; and one just after it was written replaced an earlier results file without a word.

    Before ``--out`` is written, the runs finished (``runs``, of the replays run whole, and ``cut``'s, of the one the
    interrupt cut short: :func:`hspr.replay.replay`'s KeyboardInterrupt carries them) go beside ``out``
    (``results.interrupted-<time>.json`` for ``results.json``; in the temporary folder when ``out`` is a stream or that
    cannot be written), with an ``interrupted`` key, and ``out`` is left as it was. After, ``written`` says what
    ``out`` now holds. Either is noted for the interrupt's message (:func:`hspr.cli.meta.note_saved`)."""

    def __init__(self, out: str, payload: dict) -> None:
        self.out, self.payload, self.t0 = out, payload, time.perf_counter()
        self.runs: list[dict] = []  # the runs of the replays finished whole
        self.cut: tuple[list[dict], tuple[int, int] | None, str] | None = None  # (runs, (jobs done, jobs), label)
        self.kept_targets = 0  # target runs of the cut replay's unfinished jobs kept in the fit cache (hspr.replay)
        self.written: str | None = None  # what --out holds, once written
        self.existed = not is_descriptor_path(out) and Path(out).exists()

    def __enter__(self) -> InterruptKeeper:
        return self

    def __exit__(self, kind, exc, tb) -> bool:
        if kind is None or not issubclass(kind, KeyboardInterrupt):
            return False
        from ..fileio import stamped_beside
        from .meta import note_saved

        if self.written is not None:
            note_saved(self.written, shown_by=None, kept=True)
            return False
        with signals_held():  # another Ctrl-C waits for the file: it is whole or not there (a re-trial lost it)
            runs, jobs, label = self.cut if self.cut is not None else ([], None, None)
            runs = self.runs + runs
            # a scale trial: a job ran for 20 minutes and an interrupt kept none of its targets
            resume = (f"; the runs of {self.kept_targets} target(s) of unfinished jobs are kept in the fit cache, and the "
                      "same command resumes from them" if self.kept_targets else "")
            if not runs:  # a scale trial: 'interrupted' alone after 130 s of work, no file written
                note_saved(f"no job had finished, so no run is kept in a results file (a job is one method and seed on one "
                           f"fold or target set, kept when it ends); {self.out} was not "
                           f"{'changed' if self.existed else 'written'}{resume}", shown_by=None, kept=True)
                return False
            doc = {**self.payload, "wall_seconds": time.perf_counter() - self.t0, "runs": runs,
                   "interrupted": {"label": label, "jobs_done": None if jobs is None else jobs[0],
                                   "jobs": None if jobs is None else jobs[1]}}
            where = None
            if not is_descriptor_path(self.out):
                path = Path(self.out)
                try:
                    where = stamped_beside(path.with_suffix("") if path.suffix.lower() == ".json" else path,
                                           "interrupted", ".json")
                    write_json_durable(doc, where)
                except OSError:
                    where = None
            if where is None:
                where = spare_copy(doc, "hspr-results-interrupted-")
            if where is None:
                return False
            if jobs is not None:
                part = f"{jobs[0]} of the {jobs[1]} jobs of {label}" + (", and every job before it" if self.runs else "")
            else:
                part = "every job" if self.cut is None else f"every job before {label}"
            # noted inside the held block: a signal held during the write is raised as it ends (a second re-trial: three
            # quick Ctrl-C kept the file and said only "interrupted")
            note_saved(f"the {len(runs)} runs finished before it ({part}) are in {where} (`hspr report` reads them); "
                       f"{self.out} was not {'changed' if self.existed else 'written'}{resume}", shown_by=None, kept=True)
        return False


def register(group: click.Group) -> None:
    """Add ``replay`` (backtests on the bundled banks or a matrix file: :func:`hspr.replay.replay`) to the CLI ``group``."""
    @group.command("replay")
    @click.option("--bank", "bank", default="verified", show_default=True, shell_complete=completer([*BANKS, "all"]),
                  help=f"Bundled bank ({', '.join(BANKS)}) or 'all' (the four paper banks: {', '.join(BANK_ORDER)}). "
                       "With --matrix, a label for it (default: its file name; a bundled bank's name, all, macro, "
                       "pooled, and labels holding / [ ] | are refused).")
    @click.option("--matrix", type=ExistingPath(exists=True, dir_okay=True), default=None,
                  help="Your own response matrix (any form `hspr bank validate` reads) instead of a bundled bank.")
    @click.option("--targets", default=None, shell_complete=completer(list(TARGET_SETS), files=True),
                  help="Evaluate these rows as targets, with every bank (or --matrix) row as a source, instead of "
                       f"folds: a matrix file, or a bundled target set ({', '.join(TARGET_SETS)}: scored against "
                       "its own bank, a shift protocol).")
    @click.option("--split", type=click.Choice(["folds", "forward", "strongest"]), default="folds", show_default=True,
                  help="folds: 4 target folds. forward: the --newest agents (by the YYYYMMDD_ or YYYY-MM-DD_ date that starts "
                       "their id) are targets, all older agents sources (a time-forward shift protocol). strongest: "
                       "the --strongest highest-scoring agents are targets, all others sources (agents better than "
                       "the whole history).")
    @click.option("--newest", default=20, show_default=True, type=int,
                  help="With --split forward: how many of the newest agents are targets (agents dated the day of the "
                       "cut break ties by id; a warning says so and names the counts that cut between days).")
    @click.option("--strongest", default=20, show_default=True, type=int,
                  help="With --split strongest: how many of the highest-scoring agents are targets.")
    @click.option("--methods", default=",".join(REPLAY_DEFAULT), show_default=True,
                  shell_complete=completer(lambda: [*method_names(), "all"], comma=True, alone=("all",)),
                  cls=LazyHelpOption, help_text=lambda: f"Comma-separated methods or 'all'. Known: "
                  f"{known_methods_text()}. 'all' is each method once, leaving out "
                  f"{', '.join(names_with('in_all', False)) or 'none'} "
                  "(another method under other settings; name it to run it).")
    @click.option("--budget", "budget", default="0.10", show_default=True,
                  help="Budget as a fraction of the bank's tasks (1.0: all; unlike `hspr live`, not a task count); "
                       "a list (0.05,0.10,0.15,0.20) sweeps: adaptive methods "
                       "(HSPR, ATLAS, FAQ) run one nested query path per seed, sampling methods draw each budget anew.")
    @click.option("--seeds", default=None, help="Seeds for every method, e.g. '0-4' or '0,1' (a deterministic method, "
                  "which takes no seed, runs the first only). Default: 10 seeds for sampling methods, 5 for HSPR/adaptive "
                  "ones, 1 path for deterministic ones.")
    @click.option("--workers", "-j", default=1, show_default=True, type=int, callback=check_workers,
                  help="Parallel joblib workers (-1: all cores).")
    @backend_options
    @click.option("--missing-as-zero/--no-missing-as-zero", default=True, show_default=True,
                  help="Count missing cells as unresolved (leaderboard convention). --no-missing-as-zero keeps them "
                       "missing in the sources (HSPR fits without them; methods that cannot, refuse) and counts a "
                       "target's missing cells as unresolved.")
    @click.option("--config", "config_path", default=None, shell_complete=completer(["auto"], files=True, prefer_files=True),
                  help="A JSON file of HSPR settings (HSPRConfig fields; used by hspr and hspr_robust, as `hspr "
                       "live start --config` does), or 'auto': the source-only selected "
                       "setting per fold (shipped for the bundled banks' standard folds; selected on the sources "
                       "otherwise, e.g. with --matrix or --targets, which takes minutes to hours). 'auto' selects at "
                       "a 10 % budget whatever --budget is (selecting at 5 % measured worse at 5 %; see the README). "
                       "A table written by `hspr select --record` runs hspr and hspr_robust with each fold's recorded setting "
                       "(found by the fold's source digest; a table without an entry for some fold is refused, "
                       "naming the select command that records it).")
    @click.option("--acquisition", type=click.Choice(ACQUISITIONS), default=None,
                  help="HSPR query rule (ablation: HSPR's estimator on another query path); default: the "
                       "method's configuration (score, HSPR_SPEC section 4, unless --config says otherwise).")
    @click.option("--decision", type=click.Choice(DECISIONS), default=None,
                  help="HSPR decision rule: the posterior median (the paper's Eq. 14) or mean; default: the method's "
                       "configuration (median unless --config says otherwise).")
    @click.option("--no-group-uncertainty", is_flag=True, default=False,
                  help="Ablation: each task group's success rate is its model rate exactly (q_g = p_g(z)), with no "
                       "uncertain per-group rate (HSPR_SPEC section 2).")
    @click.option("--out", type=click.Path(dir_okay=False), default="results.json", show_default=True,
                  help="Where to write runs and summary (JSON). Interrupted, a replay leaves it as it was and keeps "
                       "the runs it had finished beside it (results.interrupted-<time>.json for results.json).")
    @click.option("--csv", "csv_path", type=click.Path(dir_okay=False), default=None, help="Also write the summary as CSV.")
    @click.option("--tasks", "tasks_path", type=ExistingPath(exists=True, dir_okay=False), default=None,
                  help="Score over this subset of the bank's tasks only (one id per line, a JSON list, a CSV with an instance_id, "
                       "task_id or task column, or a wide CSV header); the bank label gets '[N tasks]'.")
    @click.option("--stop-width", "stop_width", type=click.FloatRange(min=0, min_open=True), default=None,
                  help="End each target's run early once its 90 % interval is narrower than this many pp, as "
                       "`hspr live` does (after at least --stop-min-tasks outcomes; live waits for 5); records then carry n_queried "
                       "and stop_reason, the summary the mean tasks run, and the bank label gets '[stop W pp]' "
                       "(so `hspr report` keeps them apart from full-budget runs).")
    @click.option("--stop-min-tasks", "stop_min_tasks", type=click.IntRange(min=1), default=MIN_TASKS, show_default=True,
                  help="With --stop-width: outcomes to see before the width can stop a run.")
    @click.option("--batch", "batch", type=click.IntRange(min=1), default=1, show_default=True,
                  help="Tasks asked per round, chosen jointly before their outcomes are known, as `hspr live next "
                       "--batch K` asks them (a leaderboard that needs a submission's task list up front: K = the "
                       "budget); the bank label gets '[batch K]' (so `hspr report` keeps them apart) and records "
                       "carry batch.")
    @click.option("--quiet", "-q", is_flag=True, help="No progress bar, and no announcement, progress, stop or "
                                                      "resume lines of the source-only selections of hspr_auto "
                                                      "(--config auto) or of hspr_robust's calibrations.")
    def replay_cmd(bank, matrix, targets, split, newest, strongest, methods, budget, seeds, workers, backend, scheduler,
                   missing_as_zero, config_path, acquisition, decision, no_group_uncertainty, out, csv_path, tasks_path,
                   stop_width, stop_min_tasks, batch, quiet):
        """Backtest score recovery on archived response matrices.

        For each of 4 deterministic target folds (or the --targets rows, or the newest agents
        with --split forward, or the strongest with --split strongest), every method is fitted
        on the source agents only, then each target's row is revealed one queried task at a time. Prints MAE / MaxErr in percentage
        points, Kendall tau_b, 90 % interval coverage and width per bank (and protocol) and
        method, and writes every run (estimate, interval, queried ids, truth) to --out.

        Shift protocols, where the targets are unlike the sources: `--bank verified --targets
        bash-only` (28 models in one minimal scaffold) and `--bank verified --split forward
        --newest 20` (the newest 20 submissions), and `--split strongest --strongest 20` (the
        20 highest-scoring agents against the weaker rest). Their runs carry the bank label
        `verified/bash-only`, `verified/forward-20` or `verified/strongest-20`.
        """
        console = make_console(stderr=True)
        check_backend(backend, scheduler)
        workers = local_workers(workers, scheduler, console)
        if config_path not in (None, "auto") and (not config_path.strip() or Path(config_path).is_dir()):  # missing: later
            what = "is empty" if not config_path.strip() else "is a folder"
            raise click.BadParameter(f"{config_path!r} {what}; give a JSON file of HSPR settings or 'auto'",
                                     param_hint="--config")
        if targets is not None and not targets.strip():  # a hostile trial: an unset $NEW ran the folds instead
            raise click.BadParameter("an empty path (an unset shell variable?); give a matrix file or a bundled target set "
                                     f"({', '.join(TARGET_SETS)})", param_hint="--targets")
        check_output_file(out, "--out")
        check_output_file(csv_path, "--csv")
        given = {"--matrix": matrix, "--tasks": tasks_path, "--config": config_path,
                 "--targets": targets if targets and Path(targets).is_file() else None}
        refuse_overwriting_inputs(out, "--out", given)
        refuse_overwriting_inputs(csv_path, "--csv", {**given, "--out": out})
        check_output_suffix(out, "--out", "json")
        check_output_suffix(csv_path, "--csv", "csv")
        earlier = refuse_replacing_other_json(out, "--out", is_results_doc, "a results file")
        earlier_runs = None if earlier is None else len(earlier["runs"])  # its count only: the parsed file is not kept
        del earlier
        refuse_replacing_other_csv(csv_path, "--csv", "budget_fraction,budget,bank,method,", "a replay's summary CSV",
                                   {"mae_rank": "a report's comparison table (`hspr report`)"})
        try:
            check_unused_options(split, stop_width)
            names = parse_methods(methods)
            fractions = parse_budgets(budget)
            seed_list = parse_seeds(seeds)
            ablations = {"acquisition": acquisition, "decision": decision,
                         "group_uncertainty": False if no_group_uncertainty else None}
            method_objs = replay_methods(names, config_path, ablations, _config_doc)
            if targets and split != "folds":
                raise click.BadParameter(f"give either --targets or --split {split}, not both", param_hint="--split")
            bundled = targets in TARGET_SETS and not Path(targets).exists()  # a file of that name wins
            ids = None if tasks_path is None else read_task_list(tasks_path)
            n_subset = 0 if ids is None else len(set(ids))
            subset_words = f"{n_subset} task{'' if n_subset == 1 else 's'}"  # a label's part: lite[50 tasks], small[1 task]
            jobs = []  # (label, source matrix, folds or None, target rows or None)
            if matrix:
                explicit = click.get_current_context().get_parameter_source("bank") != ParameterSource.DEFAULT
                check_matrix_label(bank if explicit else None, matrix)
                with reading(matrix):
                    mat = load_matrix(matrix)
                if mat.missing is not None and missing_as_zero:
                    # a scale trial: 30 % of a bank's cells counted as failures, unsaid (only --targets' cells were)
                    pct = 100 * mat.n_missing / (mat.n_agents * mat.n_tasks)  # 1 of 120,000: 0.00083, not 0.00 (a re-trial)
                    console.print(f"note: {matrix}: {mat.n_missing} cell(s) ({f'{pct:.0f}' if pct >= 1 else f'{pct:.2g}'} %) "
                                  "have no run; they count as unresolved, in the fit and in the targets' true scores "
                                  "(the leaderboard convention); --no-missing-as-zero keeps them out of the fit, for "
                                  f"the methods that take missing cells ({', '.join(names_with('accepts_missing'))})",
                                  highlight=False, soft_wrap=True)
                    mat = _fill_missing(mat, ids)
                label = readable_name(bank if explicit else Path(matrix).stem)
                if mat.missing is not None:
                    label += "/missing-kept"
                try:
                    folds = None if targets or split != "folds" else make_folds(mat.agents)
                except HsprError as exc:  # a trial: "1 agents are too few ..." named no file
                    raise HsprError(f"{matrix}: {exc}") from None
                jobs.append((label, mat, folds, None))
            else:
                if bundled and bank in ("verified", TARGET_SETS[targets].bank):
                    bank = TARGET_SETS[targets].bank
                banks = list(BANK_ORDER) if bank == "all" else [bank]
                for b in banks:
                    m = load_bank(b, missing_as_zero)
                    jobs.append((b if m.missing is None else f"{b}/missing-kept", m, bank_folds(b), None))
            tgt, protocol, tgt_form = None, None, None
            if bundled:
                if matrix or any(job[0] != TARGET_SETS[targets].bank for job in jobs):
                    raise click.BadParameter(f"the bundled target set {targets!r} is scored against the "
                                             f"{TARGET_SETS[targets].bank!r} bank: use --bank "
                                             f"{TARGET_SETS[targets].bank}" + (" without --matrix" if matrix else ""),
                                             param_hint="--targets")
                tgt, protocol = load_target_set(targets), targets
            elif targets:
                if Path(targets).is_dir():
                    raise click.BadParameter(f"{targets} is a folder; --targets takes one matrix file (build one from a "
                                             f"folder with `hspr bank build {targets} --out targets.csv`) or a bundled "
                                             f"target set ({', '.join(TARGET_SETS)})", param_hint="--targets")
                if not Path(targets).is_file():
                    close = close_bank_name(targets, TARGET_SETS)  # a re-trial: 'bash_only' got no hint
                    raise click.BadParameter(f"{targets!r} is neither a file nor a bundled target set "
                                             f"({', '.join(TARGET_SETS)})" + (f"; did you mean {close!r}?" if close else ""),
                                             param_hint="--targets")
                if why := label_problem(Path(targets).stem, reserved=False):  # it names the runs' label
                    raise click.BadParameter(f"{targets}: the runs are labelled by its file name "
                                             f"{Path(targets).stem!r}, which {why}: rename the file", param_hint="--targets")
                (tgt, tgt_form), protocol = load_matrix_and_form(targets, targets=True), "targets"
                if tgt.missing is not None and tgt.missing.any():  # a trial: they lowered the truth without a word
                    console.print(f"note: {targets}: {int(tgt.missing.sum())} cell(s) of its rows have no run; they "
                                  "count as unresolved in those agents' true scores and outcomes (the leaderboard "
                                  "convention)", highlight=False, soft_wrap=True)
                if tgt.missing is not None and missing_as_zero:
                    tgt = _fill_missing(tgt, ids)
            rows_word = "--targets" if targets else "target"  # a split's targets come from the bank itself
            if tgt is not None:
                jobs = [(label, mat, None, tgt) for label, mat, _, _ in jobs]
            elif split != "folds":  # a shift protocol: rows of the bank itself as targets
                protocol = f"{split}-{newest if split == 'forward' else strongest}"

                def target_rows(mat: ResponseMatrix) -> tuple[np.ndarray, str | None]:
                    """The split's target rows, and why its cut is not clean (a tie across it) or None."""
                    if split == "forward":
                        rows = forward_split(mat.agents, newest)
                        return rows, forward_cut_tie(mat.agents, rows)
                    # with --tasks, by the scores the targets are judged on: over the subset
                    scores = (mat if ids is None else mat.select_tasks(ids)).scores()
                    rows = strongest_split(mat.agents, scores, strongest)
                    return rows, strongest_cut_tie(mat.agents, scores, rows)  # a hostile trial: forward warned, this not

                split_jobs = []
                for label, mat, _, _ in jobs:
                    try:
                        rows, tie = target_rows(mat)
                    except DataError as exc:
                        raise DataError(f"--tasks {tasks_path}: {exc}") from None
                    except ValueError as exc:
                        ok = [lb for lb, m, _, _ in jobs if dated(m.agents)] if split == "forward" and len(jobs) > 1 else []
                        hint = f" (of these banks, the dated ones are {', '.join(ok)}: give them one at a time)" if ok else ""
                        if split == "strongest" and len(jobs) > 1:  # a hostile trial: one bank's range at a time
                            most = min(m.n_agents for _, m, _, _ in jobs) - 2
                            default = click.get_current_context().get_parameter_source("strongest") == ParameterSource.DEFAULT
                            hint = (f" (--strongest {strongest}{', the default,' if default else ''} must suit every bank "
                                    f"of --bank {bank}: give one from 1 to {most})")
                        raise ValueError(f"{label}: {exc}{hint}") from None
                    split_jobs.append((label, mat.drop_rows(rows), None, mat.rows(rows), tie))
                for label, _, _, _, tie in split_jobs:  # after every bank's cut was checked: no warning before an error
                    if tie:  # named as the results will be (the scores of a --tasks subset are over the subset)
                        shown = label if ids is None else f"{label}[{subset_words}]"
                        console.print(f"[yellow]warning:[/yellow] {escape(shown)}: {tie}.", highlight=False, soft_wrap=True)
                jobs = [job[:4] for job in split_jobs]
            if ids is not None:  # score over a subset of the tasks: cut sources and targets alike
                cut = []
                for label, mat, folds, t in jobs:
                    try:
                        sub = mat.select_tasks(ids)
                    except DataError as exc:
                        raise DataError(f"--tasks {tasks_path}: {exc}") from None
                    if t is not None:
                        has = set(t.tasks)
                        lacks = [i for i in dict.fromkeys(ids) if i not in has]
                        if lacks:  # a hostile trial: the targets file's gap was called the bank's
                            raise DataError(f"--tasks {tasks_path}: the {rows_word} rows ({t.source}) have no column for "
                                            f"{len(lacks)} task(s) of the subset, e.g. {', '.join(map(repr, lacks[:5]))}; "
                                            "list only tasks the targets ran")
                        t = t.select_tasks(ids)
                    cut.append((f"{label}[{subset_words}]", sub, folds, t))
                jobs = cut
            refuse_missing_for(method_objs, jobs)
            # the table an hspr_auto[table=...] or hspr_robust[table=...] method got from --config (read once)
            table = next((m.table for m in method_objs.values() if getattr(m, "table", None) is not None), None)
            for label, mat, job_folds, job_tgt in jobs:
                check_budgets(label, mat.n_tasks, fractions)
                if job_tgt is not None and targets and not bundled:  # a hostile trial: --bank all ran Lite, then
                    try:  # failed on Verified's tasks and wrote nothing; check every bank before any work
                        align_targets(job_tgt, mat)
                    except DataError as exc:
                        fits = [lb for lb, m, _, t in jobs if set(m.tasks) == set(t.tasks) and m.trials == t.trials]
                        hint = ("" if len(jobs) == 1 else
                                f" (with --bank {bank} the file is scored against {len(jobs)} banks; its tasks are "
                                + (f"those of {', '.join(fits)}: give --bank {fits[0]})" if fits else "those of none of them)"))
                        if tgt_form == "long_csv" and "absent" in str(exc):  # a scale trial: read as a missing column
                            hint += ("; in a long CSV a task is absent when none of its lines names it: if the targets "
                                     "ran it, add their lines (resolved 0 for a failure)")
                        raise DataError(f"{label}: {exc}{hint}") from None
                if table is not None:  # a trial: a fold missing from the table ran a slow selection, unasked
                    check_table_covers(config_path, table, label, mat, job_folds, matrix, names, subset=ids is not None,
                                       missing_as_zero=missing_as_zero,
                                       other_reading=lambda label=label: _other_missing_reading(matrix, label, missing_as_zero))
                top = max(budget_from_fraction(f, mat.n_tasks) for f in fractions)
                if stop_width is not None and stop_min_tasks > top:  # a hostile trial: accepted, and never stopped
                    default = click.get_current_context().get_parameter_source("stop_min_tasks") == ParameterSource.DEFAULT
                    raise click.BadParameter(f"{stop_min_tasks}{' (the default)' if default else ''} is more than the largest "
                                             f"budget on {label} ({top} tasks): the stop rule could never fire; give "
                                             f"--stop-min-tasks {top} or less, or a larger --budget", param_hint="--stop-min-tasks")
                if batch > top:  # a re-trial: --batch 100 on a 30-task budget ran as --batch 30 under a label of its own
                    raise click.BadParameter(f"{batch} is more than the largest budget on {label} ({top} tasks); give "
                                             f"--batch {top} to ask the whole budget in one round", param_hint="--batch")
                small = [] if stop_width is None else sorted(
                    b for b in (budget_from_fraction(f, mat.n_tasks) for f in fractions) if b < stop_min_tasks)
                if small:  # a sweep: those budgets always run to the end
                    console.print(f"note: {label}: budget(s) of {', '.join(map(str, small))} tasks are below "
                                  f"--stop-min-tasks {stop_min_tasks}, so their runs never stop early", highlight=False,
                                  soft_wrap=True)
                if job_tgt is not None:
                    both = sorted(set(job_tgt.agents) & set(mat.agents))
                    same = [a for a in both if _same_outcomes(job_tgt, mat, a)]
                    if same:
                        console.print(f"[yellow]warning:[/yellow] {len(same)} {rows_word} row(s) are also source "
                                      f"rows of {escape(label)}, same id and outcomes ({escape(', '.join(same[:5]))}"
                                      f"{', ...' if len(same) > 5 else ''}): their outcomes are in the source fit, "
                                      "so their errors are optimistic. Drop them from the bank for an honest test.",
                                      highlight=False, soft_wrap=True)
                    copies = _copied_rows(job_tgt, mat)
                    if copies:
                        shown = ", ".join(f"{t} = {a}" for t, a in copies[:5])
                        console.print(f"[yellow]warning:[/yellow] {len(copies)} {rows_word} row(s) have exactly the "
                                      f"outcomes of a source row of {escape(label)} under another id "
                                      f"({escape(shown)}{', ...' if len(copies) > 5 else ''}): copies of agents in the "
                                      "source fit, so their errors are optimistic. Drop them (or the source rows) for "
                                      "an honest test.", highlight=False, soft_wrap=True)
                    if len(same) < len(both):
                        other = [a for a in both if a not in same]
                        # a hostile trial: a target one run away from its own source row scored 0.3 pp against
                        # 4.4 pp with the row dropped, and only a note said so
                        console.print(f"[yellow]warning:[/yellow] {len(other)} {rows_word} id(s) also name source rows "
                                      f"of {escape(label)} with other outcomes ({escape(', '.join(other[:5]))}"
                                      f"{', ...' if len(other) > 5 else ''}): the target rows are scored as given, but "
                                      "the source fit holds that agent's own row (another run of it?), so their errors "
                                      "are likely optimistic. Drop those rows from the bank for an honest test.",
                                      highlight=False, soft_wrap=True)
        except (DataError, ValueError, KeyError) as exc:
            print_error(console, exc)
            sys.exit(2)
        seeds_map = {n: seed_list for n in method_objs if seed_list is not None}
        for n in method_objs:
            if seed_list is not None and method_objs[n].seed_kind == "deterministic":
                seeds_map[n] = seed_list[:1]
        one_path = [n for n in method_objs if seed_list is not None and len(seed_list) > 1
                    and method_objs[n].seed_kind == "deterministic"]
        if one_path:  # a new-user trial: `--seeds 0-4` for tinybench printed `seeds 1` and said nothing
            console.print(f"note: {', '.join(map(escape, one_path))}: deterministic (no seed decides the queries); run "
                          f"once, with seed {seed_list[0]}", highlight=False, soft_wrap=True)
        t0 = time.perf_counter()
        keeper = InterruptKeeper(out, {"hspr_version": __import__("hspr").__version__, "environment": environment(names),
                                       "command": command_line()})
        all_runs = keeper.runs
        # the checkpoints of the replays finished, deleted once --out is written: the same command run again after an
        # interrupt in a later bank (or protocol) resumes their long jobs instead of running them again
        finished_jobs: list = []
        with keeper:
            from ..parallel import quiet_methods

            with quiet_methods(quiet), connected(backend, scheduler, workers) as joblib_backend, \
                    progress_bar(console, disable=quiet) as prog:
                for label, mat, folds, job_targets in jobs:
                    # a shift protocol or a targets file gets a label of its own ('bank/...'), so its runs are never
                    # pooled with the bank's folds or with a bundled target set in a report
                    base, subset = re.fullmatch(r"(.*?)((?:\[\d+ tasks\])?)", label).groups()  # '[N tasks]' stays last
                    run_label = (base if not protocol else f"{base}/targets:{readable_name(Path(targets).stem)}" if protocol == "targets"
                                 else f"{base}/{protocol}") + subset
                    if stop_width is not None:  # runs that may end early are not comparable with full-budget ones
                        run_label += f"[stop {stop_width:g} pp]"
                    if batch > 1:  # nor runs that chose their tasks in rounds with runs that chose one at a time
                        run_label += f"[batch {batch}]"
                    shown = f"replay {escape(run_label)}"  # the label the table shows
                    # what the bar counts, named in a log's lines (a new-user trial: "4/8" named no unit)
                    task = prog.add_task(shown, total=None, unit="jobs (method x seed)" if job_targets is not None else
                                         "jobs (fold x method x seed)")
                    job_methods = method_objs
                    if methods.strip().lower() == "all" and mat.trials is not None:  # a trial: 'all' stopped at the first refusal
                        job_methods = {n: m for n, m in method_objs.items() if m.accepts_pass_rates}
                        off = [n for n in method_objs if n not in job_methods]
                        if off:
                            console.print(f"note: {escape(run_label)} holds pass rates over {mat.trials} trials; --methods "
                                          f"all skips the methods that take one 0/1 outcome per task ({', '.join(off)})",
                                          highlight=False, soft_wrap=True)
                    tick = fits_then_sessions(prog, task, shown, (1 if job_targets is not None else len(folds)) * len(job_methods))
                    try:
                        with warnings.catch_warnings():  # said above in more detail (same outcomes, another run)
                            warnings.filterwarnings("ignore", message=r".*target id\(s\) also name source rows",
                                                    category=InputWarning)
                            runs = replay(run_label, mat, job_methods, fractions=fractions,
                                          seeds={n: v for n, v in seeds_map.items() if n in job_methods}, folds=folds,
                                          targets=job_targets, n_jobs=workers, backend=joblib_backend, progress=tick,
                                          protocol=protocol, batch=batch, checkpoints=finished_jobs,
                                          stop=None if stop_width is None else WidthBelow(stop_width, stop_min_tasks))
                    except KeyboardInterrupt as exc:  # Ctrl-C, SIGTERM, SIGHUP: its finished runs kept by the keeper
                        keeper.cut = (getattr(exc, "runs", []), getattr(exc, "jobs", None), run_label)
                        keeper.kept_targets = getattr(exc, "kept_targets", 0)
                        raise
                    except ValueError as exc:  # DataError, BudgetError, or e.g. too few source agents for a method
                        prog.remove_task(task)  # no half-drawn bar above the message
                        prog.stop()
                        where = "" if mat.source == label or str(exc).startswith(f"{mat.source}:") else \
                            f" ({mat.source}: {mat.n_agents} agents x {mat.n_tasks} tasks)"  # not the file named twice
                        hint = ""
                        if split != "folds" and job_targets is not None and not targets:  # e.g. too few sources for hspr_auto
                            opt = "--newest" if split == "forward" else "--strongest"
                            hint = (f" (--split {split} {opt} {job_targets.n_agents} leaves {mat.n_agents} of "
                                    f"{mat.n_agents + job_targets.n_agents} agents as sources; a smaller {opt} leaves more)")
                        # the run's label, unless the message starts with it (a trial: "terminal-bench: bank:terminal-bench: ...")
                        said = str(exc).startswith((f"{run_label}:", f"bank:{run_label}:"))
                        print_error(console, f"{'' if said else f'{run_label}{where}: '}{exc}{hint}")
                        sys.exit(2)
                    all_runs.extend(runs)
            wall = time.perf_counter() - t0
            import pandas as pd

            from ..report.inputs import pass_rate_notes, widened_notes  # here: pandas costs every TAB of shell completion
            from ..report.stats import shift_flag_notes, summarize  # here: scipy.stats and pandas cost ~0.8 s of every TAB

            summary = summarize(pd.DataFrame(all_runs))
            payload = {
                "hspr_version": __import__("hspr").__version__,
                "environment": environment(names),
                "command": command_line(),
                "wall_seconds": wall,
                "runs": all_runs,
                "summary": summary.to_dict(orient="records"),
            }
            replaced = _runs_in(Path(out), earlier_runs)
            csv_replaced = (bool(csv_path) and not is_descriptor_path(csv_path) and Path(csv_path).is_file()
                            and Path(csv_path).stat().st_size > 0)
            # a hostile trial: through a link, the file replaced was the link's target, and only the link was named
            link = (f" (a link: written to {os.path.realpath(out)})"
                    if not is_descriptor_path(out) and Path(out).is_symlink() else "")
            earlier = "" if replaced is None else f"; it replaced the earlier {out}{'' if replaced < 0 else f' of {replaced} runs'}"
            with signals_held():  # --out written and the keeper told, or neither (a re-trial: an interrupt just after the
                # write replaced an earlier results file, said only "interrupted")
                save_results(payload, Path(out), summary.to_csv(index=False) if csv_path else None, csv_path)
                for checkpoint in finished_jobs:
                    checkpoint.clear()
                keeper.written = (f"the {len(all_runs)} runs were written to {out}{link}{earlier}"  # and the CSV (its re-trial)
                                  + (f"; the summary to {csv_path}{' (it replaced the earlier one)' if csv_replaced else ''}"
                                     if csv_path else ""))
            # a re-trial: `--out /dev/stdout > r.json` got the table after the JSON, which no reader could then parse
            out_console = table_console(console, out, csv_path)
            # labels: bank, method and budget (a re-trial: with two budgets, later blocks lost which row was which)
            print_table(out_console, summary_table(summary, f"Score recovery (replay, {wall:.0f} s); errors in pp"), keep=3)
            for line in [*pass_rate_notes(all_runs), *widened_notes(all_runs), *shift_flag_notes(all_runs)]:
                console.print(escape(f"note: {line}"), highlight=False, soft_wrap=True)
            # a new-user trial: a second replay without --out replaced the first one's results.json with no word
            console.print(f"wrote {out}{link} ({len(all_runs)} runs)" + ("" if replaced is None else
                          f"{earlier} (give each replay its own --out FILE to keep its runs, then `hspr report` them "
                          "together)")
                          # a new-user trial: the CSV was named only when it replaced one
                          + (f"; the summary to {csv_path}{' (it replaced the earlier one)' if csv_replaced else ''}"
                             if csv_path else ""), highlight=False,
                          soft_wrap=True)  # a hostile trial: --csv replaced another replay's summary without a word
