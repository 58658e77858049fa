"""CLI commands for banks: ``hspr banks``, ``hspr bank build``, ``hspr bank validate``.

The root group (``hspr.cli``) calls :func:`register` to add them.
"""

from __future__ import annotations

import json
import os
import shutil
import warnings
from collections.abc import Callable
from pathlib import Path
from types import MappingProxyType
from typing import TypeVar

import click
import numpy as np

from hspr.cli.common import completer
from hspr.cli.display import reading
from hspr.cli.meta import SuggestingGroup, echo_json_error, note_saved, say_warning
from hspr.cli.outputs import check_output_file, os_fix, refuse_folder_name, refuse_overwriting_inputs, same_file
from hspr.data import harbor
from hspr.data.banks import BANKS, TARGET_SETS, bank_of_rows, bank_provenance, close_bank_name, foreign_datasets, load_bank, load_target_set
from hspr.data.build import merge_banks, write_wide_csv
from hspr.data.io import FORMS, bank_dir_of, check_in_memory, detect_form, load_matrix, load_matrix_and_form
from hspr.data.matrix import DataError, ResponseMatrix
from hspr.errors import InputWarning
from hspr.fileio import dangling_link, dangling_words, names_stdout, signals_held, stamped_beside

EXIT_ERROR = 2  # bad input or a file that cannot be written, as every hspr command (hspr.cli.LazyGroup)


def register(group: click.Group) -> None:
    """Add ``banks`` and ``bank`` (with ``build`` and ``validate``) to the CLI ``group``."""
    group.add_command(banks_cmd)
    group.add_command(bank_group)


# ---------------------------------------------------------------------- helpers
def bank_summary(name: str) -> dict:
    """Facts about one bundled bank, as printed by ``hspr banks --json``.

    Keys: name, title, agents, tasks, missing (cells in the default matrix), missing_raw
    (cells left blank in the raw matrix; differs only for 'pro'), score_min_pct / score_median_pct /
    score_max_pct (per-agent full score in %, to 2 decimals, missing counted as unresolved; the
    unit in the key, as in ``bank agents``: a trial read them beside 0-1 scores elsewhere).
    """
    m = load_bank(name)
    raw = load_bank(name, missing_as_zero=False) if BANKS[name].filename != "matrix.csv" else m
    scores = m.scores() * 100.0
    return {
        "name": name,
        "title": BANKS[name].title,
        "agents": m.n_agents,
        "tasks": m.n_tasks,
        "missing": m.n_missing,
        "missing_raw": raw.n_missing,
        "score_min_pct": round(float(scores.min()), 2),
        "score_median_pct": round(float(np.median(scores)), 2),
        "score_max_pct": round(float(scores.max()), 2),
    }


def summary_line(m: ResponseMatrix) -> str:
    """One-line description: agents, tasks (and trials per cell), missing cells."""
    def n(k: int, noun: str) -> str:
        return f"{k} {noun}{'' if k == 1 else 's'}"

    trials = f" x {m.trials} trials" if m.trials else ""  # a re-trial: a Harbor bank's count was only in --json
    return f"{n(m.n_agents, 'agent')} x {n(m.n_tasks, 'task')}{trials}, {n(m.n_missing, 'missing cell')}"


def summary_dict(m: ResponseMatrix) -> dict:
    """The ``--json`` summary of a bank: sizes, trials, the digest a live session sees (missing as 0), and
    ``digest_missing_kept``: the one a session started with ``--no-missing-as-zero`` records (the same
    when no cell is missing; a hostile trial found no command that printed it)."""
    with warnings.catch_warnings():  # said already, on stderr, by the command that loaded it
        warnings.simplefilter("ignore", InputWarning)
        digest = m.fill_missing(0).digest()
        kept = digest if m.missing is None or not m.missing.any() else m.digest()
    return {"agents": m.n_agents, "tasks": m.n_tasks, "missing": m.n_missing, "trials": m.trials, "digest": digest,
            "digest_missing_kept": kept}


def digest_note(m: ResponseMatrix) -> str:
    """The digest of :func:`summary_dict` in words, for the text output of build and validate."""
    d = summary_dict(m)
    kept = ("" if d["digest_missing_kept"] == d["digest"] else
            f"; a session started with --no-missing-as-zero records {d['digest_missing_kept']}")
    return f"digest {d['digest']} (what a live session on it records, missing cells counted as unresolved, the default{kept})"


_JSON_HELP = "Print one JSON object for scripts (ok, sizes, digest; on an error ok false and the message)."


_T = TypeVar("_T")


def _run(fn: Callable[[], _T], as_json: bool = False, seen: list[str] | None = None,
         path: str | os.PathLike | None = None) -> _T:
    """Call ``fn``; echo warnings to stderr (and add their messages to ``seen``, for a --json
    object's ``warnings``); on DataError print it (with ``as_json`` also as a ``{"ok": false,
    "error": ...}`` object on stdout) and exit with code 2. ``path``, the folder or file ``fn``
    reads, shows a spinner on a terminal while a folder is searched (:func:`~hspr.cli.display.reading`)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            with reading(path):
                result = fn()
        except BaseException as exc:  # the warnings first, whatever the error (a re-trial: an OSError lost them)
            _echo_warnings(caught)
            if not isinstance(exc, DataError):  # another error (an OSError, Ctrl-C) goes on to its handler
                raise
            if as_json:
                echo_json_error(str(exc))
            click.echo(f"error: {exc}", err=True)
            raise click.exceptions.Exit(EXIT_ERROR) from None
    _echo_warnings(caught)
    if seen is not None:
        seen.extend(m for m in dict.fromkeys(str(w.message) for w in caught) if m not in seen)
    return result


def _echo_warnings(caught: list) -> None:
    for w in caught:
        say_warning(str(w.message))


_SPLIT_HELP = (
    "Leaderboard checkouts only: the split folder under evaluation/ (lite, verified, test, ...). "
    "Default: the only split present, else verified."
)
_TASKS_HELP = (
    "Leaderboard checkouts only: the task universe, one instance id per line (or a JSON list, a CSV "
    "with an instance_id, task_id or task column, or a wide CSV whose header gives the ids). Default: every id named in "
    "the split's results.json files. "
    "Tasks not listed as resolved count as unresolved."
)
_PATH_HELP = (
    "PATH is a wide CSV (agent,<task ids...>), a long CSV (agent,instance_id,resolved; task_id or task may name the task column), a "
    "repeated-trials CSV (agent,task_id,successes,trials), a py-irt JSONL file, a bank folder "
    "(header-less matrix.csv + metadata.json: the reference code's --data-root layout), a SWE-bench/experiments "
    "checkout or a folder of Harbor "
    "jobs (jobs/<job_name>/<trial_name>/result.json: one row per agent and model); the form is "
    "detected from the suffix, content and folder layout."
)


# ---------------------------------------------------------------------- hspr banks
#: below this console width ``hspr banks`` prints one line per bank instead of a table
NARROW = 80


@click.command("banks")
@click.option("--json", "as_json", is_flag=True,
              help="Print a JSON list (one object per bank) for scripts: name, title, agents, tasks, missing, "
                   "missing_raw, score_min_pct, score_median_pct, score_max_pct (in %).")
@click.option("--source", "source", metavar="BANK",
              help="Print where BANK's data comes from instead (its SOURCE.md: the leaderboard or harness runs, how "
                   "the matrix was built, the licence); a target set such as bash-only too.")
def banks_cmd(as_json: bool, source: str | None) -> None:
    """List the bundled banks (SWE-bench splits, Terminal-Bench): agents, tasks, missing cells and score range.

    Missing cells are counted in the matrix the estimators use; for 'pro' the raw matrix's
    blank cells (runs absent from the source, counted as unresolved by the leaderboard) are
    shown too. Scores are per-agent full-bank scores in %: the resolve rate, or for a bank of
    repeated trials the mean pass rate.
    """
    if source is not None:
        if as_json:
            raise click.UsageError("--json lists the banks; --source prints one bank's SOURCE.md (Markdown): give one")
        try:
            text = bank_provenance(source)
        except DataError as exc:
            raise click.BadParameter(str(exc), param_hint="--source") from None
        click.echo(text.rstrip("\n"))
        return
    rows = [bank_summary(name) for name in BANKS]
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    from rich.table import Table

    from .display import console as make_console

    console = make_console()
    missing = [str(r["missing"]) if r["missing_raw"] == r["missing"] else f"{r['missing']} (raw {r['missing_raw']})"
               for r in rows]
    scores = [[f"{r[k]:.1f}" for k in ("score_min_pct", "score_median_pct", "score_max_pct")] for r in rows]
    if console.width < NARROW:  # a table would squash its numbers into ellipses: a few lines per bank
        for r, miss, sc in zip(rows, missing, scores):
            click.echo(f"{r['name']}: {r['agents']} agents x {r['tasks']} tasks")
            click.echo(f"  missing {miss}; scores {' / '.join(sc)} %")
            click.echo(f"  {r['title']}")
    else:
        wide = console.width >= 120  # the titles fit beside the numbers; else they follow the table
        table = Table(title="Bundled banks")
        for col in ("bank", "agents", "tasks", "missing", "min%", "med%", "max%"):
            table.add_column(col, justify="left" if col == "bank" else "right", no_wrap=True)
        if wide:
            table.add_column("title", ratio=1)
        for r, miss, sc in zip(rows, missing, scores):
            table.add_row(r["name"], str(r["agents"]), str(r["tasks"]), miss, *sc, *([r["title"]] if wide else []))
        console.print(table)
        if not wide:
            for r in rows:
                click.echo(f"{r['name']}: {r['title']}")
    click.echo("missing: cells without a run (raw: blanks in the source, counted as unresolved).")
    click.echo("min/med/max (scores): per-agent score over the whole bank, in %:")
    click.echo("  the resolve rate; for a bank of repeated trials, the mean pass rate.")
    # a new-user trial found the bash-only set only by browsing the package
    for s in TARGET_SETS.values():
        click.echo(f"target set {s.name}: agents unlike the {s.bank} bank's, scored against it by")
        click.echo(f"  `hspr replay --bank {s.bank} --targets {s.name}`")
        click.echo(f"  {s.title}")
    click.echo("hspr banks --source BANK: where a bank's (or a target set's) data comes from.")


def _path_arg(ctx, param, value: str | None) -> Path | None:
    """A path argument or option as a Path (None stays None); an empty one (an unset shell variable) is
    refused, where ``Path("")`` would read the current folder (a hostile trial: `bank validate ""` reported
    on '.'; a re-trial: `--tasks ''` and `--out ''` were named '.')."""
    if value is None:
        return None
    hint = param.opts[0] if isinstance(param, click.Option) else param.human_readable_name
    if hint == "--out":  # before Path drops a final '/' or '/.' (a re-trial: 'keep.csv/' replaced keep.csv)
        refuse_folder_name(value, hint)
    _refuse_empty(value, hint)
    return Path(value)


def _refuse_empty(value: str, hint: str) -> None:
    """click.BadParameter for an empty path given to ``hint`` (an option or argument name)."""
    if not value.strip():
        what = "a file name" if hint == "--out" else "a file" if hint == "--tasks" else "a file, a folder or a bundled bank name"
        raise click.BadParameter(f"an empty path (an unset shell variable?); give {what}", param_hint=hint)


# ---------------------------------------------------------------------- hspr bank ...
class BankGroup(SuggestingGroup):
    """``hspr bank``: ``check`` / ``verify`` name ``validate``, ``list`` names ``agents``."""

    synonyms = MappingProxyType({"check": "validate", "verify": "validate", "list": "agents"})


@click.group("bank", cls=BankGroup)
def bank_group() -> None:
    """Build, check or merge a response matrix (bank), or list a bundled bank's agents."""


def _note_shadowed(path: Path) -> None:
    """Say on stderr when ``path`` is both a bundled bank's name and a file or folder here, which
    the bank commands read (``replay --bank`` / ``live start --bank`` always read the bundled one)."""
    if str(path) in BANKS and path.exists():
        click.echo(f"note: {str(path)!r} is a bundled bank's name and also a {'folder' if path.is_dir() else 'file'} "
                   f"in this folder; this reads ./{path} (to read the bundled bank instead, run from another folder "
                   "or rename the file)", err=True)


def _note_shadowing(out: Path) -> None:
    """Say on stderr when the bank just written to ``out`` has a bundled bank's name (a hostile trial: `bank merge
    lite new.csv --out lite` read as if the bundled bank had changed)."""
    if str(out) in BANKS:
        click.echo(f"note: ./{out} has a bundled bank's name: the bank commands run in this folder (bank validate, "
                   f"agents, build, merge) now read it for '{out}'; `--bank {out}` still reads the bundled bank",
                   err=True)


def _bundled_name(path: Path) -> str | None:
    """'bank' when ``path`` is a bundled bank's name, 'targets' when a bundled target set's, and no file or folder of
    that name is here (then that is read, with :func:`_note_shadowed`'s note); else None."""
    if path.exists():
        return None
    return "bank" if str(path) in BANKS else "targets" if str(path) in TARGET_SETS else None


def _load_bundled(path: Path, kind: str) -> ResponseMatrix:
    """The bundled bank (its missing cells kept missing) or target set that ``path`` names (``kind`` from
    :func:`_bundled_name`)."""
    return load_target_set(str(path)) if kind == "targets" else load_bank(str(path), missing_as_zero=False)


def _require_input(path: Path, what: str, bundled_ok: bool = True, targets_ok: bool = False) -> None:
    """click.BadParameter naming ``what`` when ``path`` is neither a file or folder nor (where
    ``bundled_ok``) a bundled bank's name nor (where ``targets_ok``: build, validate, merge's NEW) a bundled target set's; it
    names the bundled bank or target set a misspelling means."""
    if path.exists() or (bundled_ok and str(path) in BANKS) or (targets_ok and str(path) in TARGET_SETS):
        _note_shadowed(path)
        return
    if str(path) in BANKS:
        hint = (f"; only BASE may be a bundled bank's name: merge the other way round "
                f"(hspr bank merge {path} <your bank> --out ...)")
    else:
        close = close_bank_name(str(path), BANKS, cutoff=0.6)  # difflib's default cutoff, as before
        hint = f"; the bundled bank is spelled {close!r}" if close and bundled_ok else ""
        sets = close_bank_name(str(path), TARGET_SETS, cutoff=0.6)
        if targets_ok and sets and not hint:  # a re-trial: 'bash-onyl' got no hint, where 'verifed' did
            hint = f"; the bundled target set is spelled {sets!r}"
    if (link := dangling_link(path)) is not None:  # a hostile trial: a loop of links was told "no such file or folder"
        raise click.BadParameter(dangling_words(link), param_hint=what)  # as ExistingPath says it
    raise click.BadParameter(f"{path}: no such file or folder{hint}", param_hint=what)


def _write(m: ResponseMatrix, out: Path, as_json: bool) -> None:
    """Write ``m`` as a bank CSV; an OSError is the error line (and the JSON error) and exit 2, as every
    command's (a hostile trial: build and merge alone exited 1 on a full disk)."""
    try:
        with signals_held():  # written and said so, or (an interrupt) neither: a trial's merge was told only
            # 'interrupted' after it had replaced --out, and a user would merge again
            write_wide_csv(m, out)
            note_saved(f"{out} is written ({m.n_agents} agents x {m.n_tasks} tasks)", None)
    except OSError as exc:
        msg = f"cannot write {out}: {exc.strerror or exc}. {os_fix(exc)}, or give another --out"
        if as_json:
            echo_json_error(msg)
        click.echo(f"error: {msg}", err=True)
        raise click.exceptions.Exit(EXIT_ERROR) from None


def _refuse_json_name(out: Path) -> None:
    """A wide CSV written under a .json/.jsonl/.ndjson name would be read back as JSONL: refuse it."""
    if out.suffix.lower() in (".json", ".jsonl", ".ndjson"):
        raise click.BadParameter(f"{out}: the bank is written as a CSV (wide, or repeated-trials for a bank of trials), "
                                 f"and hspr reads a {out.suffix} file as JSONL; name it .csv", param_hint="--out")


def _check_built(m: ResponseMatrix, path: Path, form: str, as_json: bool, seen: list[str]) -> None:
    """The warnings a loaded bank gets besides its reader's, said on stderr and added to ``seen``:
    an agent with no run at all (it would score 0 in replay and live), and more agents than tasks (a
    transposed wide CSV, or a long CSV whose agent and task columns are swapped). Shared by ``build``
    and ``validate`` (a hostile trial: ``build`` wrote both kinds of bank without a word)."""
    _run(lambda: m.fill_missing(0), as_json, seen)
    if m.n_agents > m.n_tasks and not any("transpose" in w for w in seen):
        # a trial: a transposed matrix whose ids look like neither agents nor tasks passed without a word
        # (only here: a bank with more agents than tasks is legitimate, so loading it does not warn)
        fix = ("if each row is a task, transpose the file (pandas: df.T.to_csv(...))" if form == "wide_csv" else
               "if the agent and task columns are swapped, swap their names in the header"
               if form in ("long_csv", "trials_csv") else "check that each row (record) is one agent")
        shape = (f"{path} has more agents ({m.n_agents}) than tasks ({m.n_tasks}): a response matrix has one row per "
                 f"agent and usually many more tasks than agents; {fix}")
        say_warning(shape)  # said, so a --json error object after it lists it (a re-trial)
        seen.append(shape)


def _earlier_bank(out: Path, option: str = "--out") -> tuple[ResponseMatrix | None, str | None]:
    """The bank already at ``out`` (None when there is no file there, or only white space), which this
    command will replace; click.BadParameter, before any work, when that file is not a bank hspr reads
    (a hostile trial: `bank build ... --out notes.txt` replaced a text file without a word), is a bank in a
    form this command does not write (a long CSV or JSONL: its form and any other columns would be lost), or is
    the header-less ``matrix.csv`` of a bank folder (a re-trial: a wide CSV written there broke the folder).
    Returns the bank and its form (a key of :data:`~hspr.data.io.FORMS`; see :func:`_refuse_form_change`), or
    (None, None): also for standard output (``/dev/stdout``: the file it points at is appended to or is the
    terminal, never replaced; a re-trial's log file was read as the earlier bank)."""
    if not out.is_file() or names_stdout(out):
        return None, None
    folder = bank_dir_of(out)
    if folder is not None:
        raise click.BadParameter(f"{out} is the matrix of the bank folder {folder} (header-less, beside its "
                                 "metadata.json); a wide CSV written there would break the folder: give another file "
                                 "name", param_hint=option)
    try:
        if not out.read_text(encoding="utf-8-sig", errors="replace").strip():
            return None, None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            earlier, form = load_matrix_and_form(out)
    except (DataError, OSError) as exc:
        raise click.BadParameter(f"{out} exists and is not a bank; this command replaces only a bank: give another "
                                 f"file name (or move that file). Read as a bank, it gave: {exc}",
                                 param_hint=option) from None
    if form not in ("wide_csv", "trials_csv"):  # a hostile trial: a long CSV with a column of comments was replaced
        # by the same bank as a wide CSV, the comments lost, and no note (the digests were equal); merge refuses
        # that for BASE
        raise click.BadParameter(f"{out} is a bank in another form, a {FORMS[form]}; this command writes a wide CSV "
                                 "(or a repeated-trials CSV), which would replace that form and any other columns "
                                 "it holds: give another file name", param_hint=option)
    return earlier, form


def _refuse_form_change(out: Path, form: str | None, m: ResponseMatrix) -> None:
    """click.BadParameter when ``out`` holds a bank of ``form`` other than the one ``m`` is written in (a wide CSV, or
    a repeated-trials CSV for a bank of trials): a re-trial's wide CSV became a repeated-trials CSV, and the other way
    round, with only a note that another bank was replaced."""
    written = "trials_csv" if m.trials is not None else "wide_csv"
    if form is not None and form != written:
        raise click.BadParameter(f"{out} holds a bank as a {FORMS[form]}, and this bank is written as a "
                                 f"{FORMS[written]}, which would replace that form: give another file name",
                                 param_hint="--out")


def _keep_unrelated(out: Path, earlier: ResponseMatrix | None, m: ResponseMatrix) -> Path | None:
    """A copy of ``out``, kept beside it (``<name>.replaced-<time>.csv``), when it holds a table with no task in
    common with ``m``: another table that merely reads as a bank (a hostile trial: `agent,open_weights,uses_tools`
    of 0/1 was replaced, with only a note), a bank of another benchmark, or this bank with its task ids renamed (its
    re-trial: refusing those left only `rm`); None otherwise (a bank replaced by its update shares its tasks).
    click.BadParameter when no copy can be made: nothing is replaced then."""
    if earlier is None or set(earlier.tasks) & set(m.tasks):
        return None
    kept = None
    try:  # the name too (a re-trial: a name too long for the stamp was said of the copy, not of --out)
        kept = stamped_beside(out, "replaced", ".csv")
        shutil.copyfile(out, kept)
    except OSError as exc:
        if kept is not None:
            kept.unlink(missing_ok=True)
        raise click.BadParameter(f"{out} holds a table with none of this bank's tasks, and no copy of it could be kept "
                                 f"beside it ({exc.strerror or exc}): give another file name", param_hint="--out") from None
    return kept


def _replace_out(m: ResponseMatrix, out: Path, earlier: ResponseMatrix | None, as_json: bool) -> tuple[str | None, Path | None]:
    """Write ``m`` to ``out`` (:func:`_write`), which held ``earlier`` (:func:`_earlier_bank`), and say what it
    replaced (:func:`_say_replaced`, or :func:`_say_kept` for a table kept beside it by :func:`_keep_unrelated`):
    ``build`` and ``merge``. The copy is deleted when ``out`` was not replaced (a re-trial: a read-only --out left a
    stray copy, unsaid). Returns (:func:`_replaced`'s digest, the kept copy or None)."""
    kept = _keep_unrelated(out, earlier, m)
    try:
        _write(m, out, as_json)
    except BaseException:
        if kept is not None:
            kept.unlink(missing_ok=True)
        raise
    replaced = _replaced(earlier, m)
    if kept is None:
        _say_replaced(out, replaced, as_json)
    else:
        _say_kept(out, kept, earlier, replaced, as_json)
    return replaced, kept


def _say_kept(out: Path, kept: Path, earlier: ResponseMatrix, digest: str | None, as_json: bool) -> None:
    """The note (in place of :func:`_say_replaced`'s) that ``out`` held a table with none of the bank's tasks (of
    live-session ``digest``), replaced and kept as ``kept``."""
    if not as_json:
        shown = ", ".join(repr(t) for t in earlier.tasks[:3]) + (", ..." if earlier.n_tasks > 3 else "")
        click.echo(f"note: {out} held a table of {earlier.n_agents} row(s) and {earlier.n_tasks} column(s) ({shown}), "
                   f"none of them this bank's tasks (digest {digest}); it was replaced, and is kept as {kept}", err=True)


def _replaced(earlier: ResponseMatrix | None, m: ResponseMatrix) -> str | None:
    """The live-session digest of the other bank ``earlier`` that writing ``m`` replaced; None when there
    was none, or it was this same bank (blank cells and 0s told apart: a re-trial's bank of 0s replaced by
    the same bank with blanks had no note)."""
    if earlier is None or earlier.digest() == m.digest():
        return None
    with warnings.catch_warnings():  # said already, of the bank written
        warnings.simplefilter("ignore", InputWarning)
        return earlier.fill_missing(0).digest()


def _refuse_json_on_stdout(out: Path, as_json: bool) -> None:
    """click.BadParameter for --json with --out /dev/stdout: the JSON summary would follow the bank's CSV on one
    stream (a hostile trial, of merge; a scripting trial, of build)."""
    if as_json and names_stdout(out):
        raise click.BadParameter("--json prints its summary on stdout, where --out /dev/stdout writes the bank: give "
                                 "--out a file, or leave out --json", param_hint="--out")


def _say_replaced(out: Path, digest: str | None, as_json: bool) -> None:
    """The note that ``out`` held another bank (of that live-session ``digest``) before."""
    if digest is not None and not as_json:
        click.echo(f"note: {out} held another bank before (digest {digest}); it was replaced", err=True)


@bank_group.command("build", epilog=_PATH_HELP)
@click.argument("path", type=click.Path(), callback=_path_arg,
                shell_complete=completer([*BANKS, *TARGET_SETS], files=True))
@click.option("--split", default=None, metavar="NAME", help=_SPLIT_HELP)
@click.option("--tasks", "tasks", default=None, type=click.Path(), callback=_path_arg, metavar="FILE", help=_TASKS_HELP)
@click.option("--out", required=True, type=click.Path(dir_okay=False), callback=_path_arg, metavar="FILE",
              help="Where to write the bank: a wide CSV (agent,<task ids...>; empty cell = no run), or for a bank "
                   "of repeated trials a CSV agent,task_id,successes,trials. A bank already there is replaced (a note "
                   "says so; one with none of this bank's tasks is kept beside it as FILE.replaced-<time>.csv); another "
                   "kind of file is refused.")
@click.option("--json", "as_json", is_flag=True, help=_JSON_HELP)
def build_cmd(path: Path, split: str | None, tasks: Path | None, out: Path, as_json: bool) -> None:
    """Build a bank from PATH and write it as a wide CSV (a bundled bank's name writes a copy of it,
    missing cells kept blank, and so does a bundled target set's, e.g. bash-only; a repeated-trials bank
    is written as a repeated-trials CSV).

    Prints one line: agents, tasks, missing cells and the digest (--json: one object with them, the
    trials, ``digest_missing_kept`` as validate's, ``replaced_digest``: the digest of another bank
    --out held before, else null, and ``kept_copy``: where that file was kept when it had none of this
    bank's tasks, else null). Exits
    with code 2 (message on stderr) if the input is invalid.
    """
    _require_input(path, "PATH", targets_ok=True)
    check_output_file(out, "--out")
    _refuse_json_on_stdout(out, as_json)
    # a bundled bank's name is no file (a re-trial: `build lite --out lite` was refused as overwriting PATH)
    refuse_overwriting_inputs(out, "--out", {"PATH": path if path.exists() else None, "--tasks": tasks})
    _refuse_json_name(out)
    earlier, earlier_form = _earlier_bank(out)
    # a bundled bank by name, or a bundled target set (a trial: playing a bash-only agent live needed its rows in a
    # file): written out as a copy
    kind = _bundled_name(path)
    bundled = kind is not None
    if bundled and (split is not None or tasks is not None):
        raise click.BadParameter(f"--split / --tasks read a leaderboard checkout; {path!s} is a bundled bank",
                                 param_hint="--split / --tasks")
    seen: list[str] = []
    m, form = _run(lambda: (_load_bundled(path, kind), None) if bundled else
                   load_matrix_and_form(path, split=split, tasks=tasks), as_json, seen,
                   None if bundled else path)
    if not bundled:
        _check_built(m, path, form, as_json, seen)
    _refuse_form_change(out, earlier_form, m)
    replaced, kept_copy = _replace_out(m, out, earlier, as_json)
    _note_shadowing(out)
    # a leaderboard checkout: the split folder read (a trial: with several splits, which one was silent)
    src = m.source if not bundled and Path(m.source) != path and Path(m.source).is_relative_to(path) else str(path)
    if as_json:
        click.echo(json.dumps({"ok": True, "out": str(out), "built_from": src, **summary_dict(m),
                               "replaced_digest": replaced, "kept_copy": None if kept_copy is None else str(kept_copy),
                               "warnings": seen}))
        return
    # a trial: the README says build prints the digest a live session records; only --json did
    # on stderr when the bank went to stdout (a scripting trial: pandas read the line as a row of the CSV)
    click.echo(f"{out}: {summary_line(m)} (built from {src}); {digest_note(m)}", err=names_stdout(out))


@bank_group.command("agents")
@click.argument("bank", shell_complete=completer(list(BANKS), files=True))
@click.option("--json", "as_json", is_flag=True,
              help="Print a JSON list of {agent, score, score_pct} objects (score on the 0-1 scale, full precision; "
                   "score_pct in %, to 2 decimals); an error is a {ok: false, error} object.")
def agents_cmd(bank: str, as_json: bool) -> None:
    """List the agent ids of BANK (a bundled bank name or a matrix file) with their scores (%).

    Prints tab-separated lines under the header "agent<TAB>score_pct" (the id is the first field); --json for scripts.

    These are the ids `hspr live plot --target`, `--targets` files and folds use.
    """
    _refuse_empty(bank, "BANK")
    kind = _bundled_name(Path(bank))  # a re-trial: `bank agents bash-only` was refused
    if kind is None and not Path(bank).exists():
        close = close_bank_name(bank, [*BANKS, *TARGET_SETS])  # a hostile trial: 'verifed' got no hint
        raise click.BadParameter(f"{bank!r} is neither a bundled bank ({', '.join(BANKS)}), a target set "
                                 f"({', '.join(TARGET_SETS)}) nor a file" + (f"; did you mean {close!r}?" if close else ""),
                                 param_hint="BANK")
    _note_shadowed(Path(bank))
    # a bundled bank read as `bank validate` reads it, its missing cells kept (they were filled before the note below,
    # which then never said that pro's 491 blank cells count as unresolved)
    m = _run(lambda: _load_bundled(Path(bank), kind) if kind else load_matrix(Path(bank)), as_json, path=bank)
    scores = m.scores()
    if m.n_missing:  # a hostile trial: blank cells were scored as failures without a word
        click.echo(f"note: {m.n_missing} missing cell(s) (runs that never happened) count as unresolved in these scores, "
                   "as in a live session by default", err=True)
    if as_json:  # the unit in the key, as in the table's header (it was 'score', in %, beside 0-1 scores elsewhere)
        # and the 0-1 score at full precision, as results.json's truth (a trial: 0.67 for 1/150 could not be joined)
        click.echo(json.dumps([{"agent": a, "score": float(v), "score_pct": round(100.0 * float(v), 2)}
                               for a, v in zip(m.agents, scores)]))
        return
    click.echo("agent\tscore_pct")  # tab-separated with a header, like any TSV
    for a, v in zip(m.agents, scores):
        click.echo(f"{a}\t{100.0 * v:.1f}")


def _refuse_foreign_trials(jobs: Path, form: str | None, other: Path, matrix: ResponseMatrix) -> None:
    """DataError when ``jobs``, read as ``form`` (None: a bundled bank's name), is a Harbor jobs folder of
    a dataset whose task ids overlap those of a bundled bank whose rows ``matrix`` (read from ``other``)
    holds, but name other tasks (Terminal-Bench 2.0 merged with Terminal-Bench 1.0's outcomes:
    :func:`~hspr.data.banks.bank_of_rows`); a trial found live sessions refused such trials and a merge
    took them in under 1.0's task names. The folder is walked again for its datasets only then."""
    if form != "harbor_jobs" or (info := bank_of_rows(matrix)) is None:
        return
    foreign = foreign_datasets(info, dict.fromkeys(t.source for t in harbor.read_trials(jobs, DataError)[0] if t.source))
    if foreign:
        raise DataError(f"{jobs}: its trials are of dataset {foreign[0]!r}, whose tasks are not those of {other}, which "
                        f"holds rows of the {info.name} bank ({info.short_title}), even where their names are the same; merge them "
                        "into a bank of other agents' runs of that dataset (hspr bank build JOBS_FOLDER --out FILE, from "
                        "their Harbor jobs) instead; nothing was written")


@bank_group.command("merge", epilog=_PATH_HELP.replace("PATH is", "BASE and NEW are each"))
@click.argument("base", type=click.Path(), callback=_path_arg, shell_complete=completer(list(BANKS), files=True))
@click.argument("new", type=click.Path(), callback=_path_arg)
@click.option("--out", required=True, type=click.Path(dir_okay=False), callback=_path_arg, metavar="FILE",
              help="Where to write the merged bank as a wide CSV (a repeated-trials CSV for trial banks); it may "
                   "be BASE itself when BASE has that form, never NEW. Another bank there is replaced (a note says "
                   "so; one with none of the merged bank's tasks is kept beside it as FILE.replaced-<time>.csv); a "
                   "file that is not a bank is refused.")
@click.option("--prefer", type=click.Choice(["refuse", "new", "base"]), default="refuse", show_default=True,
              help="A cell both banks have with different outcomes: refuse the merge, or keep NEW's or BASE's.")
@click.option("--json", "as_json", is_flag=True, help=_JSON_HELP)
def merge_cmd(base: Path, new: Path, out: Path, prefer: str, as_json: bool) -> None:
    """Append NEW's agents and tasks to the bank BASE (cells neither has stay empty: no run).

    BASE may be a bundled bank's name (e.g. verified).

    Prints both digests: a live session made on the old bank refuses the merged one (its
    digest changed) until a new session is started on it.
    """
    _require_input(base, "BASE")
    _require_input(new, "NEW", bundled_ok=False, targets_ok=True)  # a re-trial: NEW bash-only was "no such file"
    check_output_file(out, "--out")
    _refuse_json_on_stdout(out, as_json)
    new_set = _bundled_name(new) == "targets"  # a bundled target set's rows (its name is no file)
    refuse_overwriting_inputs(out, "--out", {"NEW": None if new_set else new, **({"BASE": base} if base.is_dir() else {})})
    _refuse_json_name(out)
    # BASE a file (a bundled bank's name is no file: `--out lite` of BASE lite is a new file, where same_file reads
    # the two equal names as one path; a hostile trial was told '... more than lite had', as if the bundled bank had
    # changed)
    in_place = base.exists() and same_file(out, base)
    earlier, earlier_form = (None, None) if in_place else _earlier_bank(out)  # in place: the digests line says so
    # the merged bank is written as a wide CSV, or as a repeated-trials CSV when it has trials: in place,
    # BASE keeps its form only if it is one of those
    if base.is_file() and in_place and _run(lambda: detect_form(base)) not in ("wide_csv", "trials_csv"):
        raise click.BadParameter(f"{out} is BASE, a {FORMS[detect_form(base)]}; the merged bank is written as a wide "
                                 "CSV, which would replace that form: give another file", param_hint="--out")
    bundled = _bundled_name(base) == "bank"  # a bundled bank by name, its missing cells kept missing
    seen: list[str] = []
    # the banks' own warnings (blank columns, copies, look-alike ids) are given of the merged bank, not of BASE and
    # NEW: a hostile trial was told a task of BASE no agent ran "lowers every score", where the merged bank ran it
    a, a_form = _run(lambda: (_load_bundled(base, "bank"), None) if bundled else
                     load_matrix_and_form(base, suspect=False), as_json, seen, None if bundled else base)
    b, b_form = _run(lambda: (_load_bundled(new, "targets"), None) if new_set else load_matrix_and_form(new, suspect=False),
                     as_json, seen, None if new_set else new)
    _run(lambda: (_refuse_foreign_trials(new, b_form, base, a), _refuse_foreign_trials(base, a_form, new, b)), as_json)
    m = _run(lambda: check_in_memory(merge_banks(a, b, prefer), str(out)), as_json, seen)
    if a_form == "trials_csv" and m.trials is None and base.is_file() and in_place:
        # a hostile trial: a 1-trial repeated-trials BASE, merged in place, came back a wide CSV
        raise click.BadParameter(f"{out} is BASE, a {FORMS['trials_csv']} with 1 trial per task, and the merged bank "
                                 "(0/1 outcomes) is written as a wide CSV, which would replace that form: give another "
                                 "file", param_hint="--out")
    _refuse_form_change(out, earlier_form, m)
    replaced, kept_copy = _replace_out(m, out, earlier, as_json)
    _note_shadowing(out)
    added_a = len(set(m.agents) - set(a.agents))
    added_t = len(set(m.tasks) - set(a.tasks))
    filled = kept = 0  # BASE's blank cells that NEW ran (a trial: '0 agent(s) and 0 task(s) more' for a merge that
    # filled one), and those still blank
    if a.missing is not None:
        ai = np.array([m.agent_index(x) for x in a.agents])
        ti = np.array([m.task_index(t) for t in a.tasks])
        now_missing = np.zeros((len(ai), len(ti)), bool) if m.missing is None else m.missing[np.ix_(ai, ti)]
        filled = int((a.missing & ~now_missing).sum())
        kept = int((a.missing & now_missing).sum())
    # the digests a live session sees: missing cells counted as unresolved (its default)
    with warnings.catch_warnings():  # said once, of the merged bank (below), not of BASE too
        warnings.simplefilter("ignore", InputWarning)
        old = a.fill_missing(0).digest()
    now = _run(lambda: m.fill_missing(0), as_json, seen).digest()
    if as_json:
        click.echo(json.dumps({"ok": True, "out": str(out), "base": str(base), "new": str(new), **summary_dict(m),
                               "agents_added": added_a, "tasks_added": added_t, "cells_filled": filled,
                               "digest_before": old, "replaced_digest": replaced,
                               "kept_copy": None if kept_copy is None else str(kept_copy), "warnings": seen}))
    else:
        into = "" if in_place else f", written to {out}; {'the bundled bank ' if bundled else ''}{base} is unchanged"
        more = f"{added_a} agent(s) and {added_t} task(s) more than {base}{' had' if in_place else ''}" + (
            f", {filled} of its empty cell(s) filled" if filled else "")
        click.echo(f"{out}: {summary_line(m)} ({more}{into}); digest {old} -> {now}", err=names_stdout(out))
    if m.n_missing:
        # a new-user trial: the advice blamed the merged agent for blanks BASE had before
        fresh = m.n_missing - kept
        whence = (f"all of them blank in {base} before" if not fresh else
                  f"{fresh} of them new with {new}: merge only agents that ran the whole bank, or run them on the tasks they lack"
                  + (f"; {kept} blank in {base} before" if kept else ""))
        click.echo(f"note: {m.n_missing} cell(s) no one ran stay empty ({whence}); `hspr live start` and `hspr replay` "
                   "count them as unresolved unless --no-missing-as-zero (HSPR then fits without them; most peers "
                   "refuse them)", err=True)


@bank_group.command("validate", epilog=_PATH_HELP)
@click.argument("path", type=click.Path(), callback=_path_arg, shell_complete=completer(list(BANKS), files=True))
@click.option("--split", default=None, metavar="NAME", help=_SPLIT_HELP)
@click.option("--tasks", "tasks", default=None, type=click.Path(), callback=_path_arg, metavar="FILE", help=_TASKS_HELP)
@click.option("--json", "as_json", is_flag=True, help=_JSON_HELP)
def validate_cmd(path: Path, split: str | None, tasks: Path | None, as_json: bool) -> None:
    """Load PATH (a file, folder or bundled bank name such as verified), check it, print its form, size and digest.

    Exits with code 2 and the error on stderr (file, line / column or id, and the fix) if the
    input is invalid. --json prints {"ok", "path", "form", "agents", "tasks", "missing",
    "trials", "digest", "digest_missing_kept", "warnings"} (the digest a live session records,
    missing cells as unresolved; the one a session started with --no-missing-as-zero records;
    the warnings said on stderr).
    """
    _require_input(path, "PATH", targets_ok=True)  # a re-trial: `bank validate bash-only` was "no such file"
    if (bundled := _bundled_name(path)) is not None:  # a bundled bank or target set: check the shipped files
        seen: list[str] = []
        m = _run(lambda: _load_bundled(path, bundled), as_json, seen)
        where, kind = (f"{bundled}:{path}", "bundled target set" if bundled == "targets" else "bundled bank")
        if as_json:
            click.echo(json.dumps({"ok": True, "path": where, "form": "bundled", **summary_dict(m),
                                   "warnings": seen}))
            return
        note = " (blank in the source; replay and live count them as unresolved unless --no-missing-as-zero)" \
            if m.n_missing else ""
        click.echo(f"{where}: OK, {kind}: {summary_line(m)}{note}; {digest_note(m)}")
        return
    seen = []
    m, form = _run(lambda: load_matrix_and_form(path, split=split, tasks=tasks), as_json, seen, path)
    _check_built(m, path, form, as_json, seen)
    if as_json:
        click.echo(json.dumps({"ok": True, "path": str(path), "form": form, **summary_dict(m), "warnings": seen}))
        return
    # a trial: only build and --json gave the digest, so a user could not check a CSV against a session's bank
    click.echo(f"{path}: OK, {FORMS[form]}: {summary_line(m)}; {digest_note(m)}")
