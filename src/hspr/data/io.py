"""Readers for response matrices on disk.

``load_matrix(path)`` picks the reader from the input's form (:func:`detect_form`); each
reader validates as it reads and raises :class:`~hspr.data.matrix.DataError` naming the file,
the line / row / column or id at fault, and how to fix it.

Supported forms
---------------
``wide_csv``
    Header ``agent,<task_1>,...,<task_N>``, one row per agent; empty cell = no run.
``long_csv``
    Header with the columns ``agent,instance_id,resolved`` (or ``task_id`` / ``task`` for
    ``instance_id``; extra columns are ignored), one line per (agent, task) run; pairs absent for an agent are
    missing cells.
``jsonl``
    py-irt style: one JSON object per line, ``{"subject_id": ..., "responses": {task: 0/1}}``;
    tasks absent for a subject are missing cells.
``bank_dir``
    The reference code's ``--data-root`` bank folder: header-less ``matrix.csv`` (rows =
    agents, comma-separated 0/1) plus ``metadata.json`` with ``instance_ids`` and ``agents``.
``leaderboard``
    A checkout of SWE-bench/experiments:
    ``evaluation/<split>/<submission>/results/results.json`` with a ``resolved`` id list.
``harbor_jobs``
    A folder of Harbor jobs (``jobs/``, or one job): every trial's ``result.json``
    (:mod:`hspr.data.harbor`), one row per agent and model, a task's trials counted per cell.
"""

from __future__ import annotations

import contextlib
import csv
import itertools
import json
import operator
import os
import re
import unicodedata
import warnings
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING

import numpy as np

from ..errors import InputWarning, brief, shorten
from ..fileio import (
    DuplicateKeyError,
    csv_error_message,
    csv_records,
    descriptor_of,
    fill_header_tail,
    json_kind,
    loads,
    read_json,
    read_text,
)
from ..outcomes import (
    MISSING,
    NO_RUN,
    RESOLVED,
    SPELLINGS,
    UNRESOLVED,
    drop_zero_decimals,
    is_cell,
    is_missing,
    normalise,
    outcome,
)
from . import harbor
from .matrix import CONTROL_CHARS, CONTROL_CHARS_FIX, DataError, ResponseMatrix

if TYPE_CHECKING:
    import pandas as pd


LONG_COLUMNS = ("agent", "instance_id", "resolved")
"""Required columns of the long CSV form (the task column may be named as in :data:`LONG_TASK_NAMES`)."""

LONG_TASK_NAMES = ("instance_id", "task_id", "task")
"""Accepted names of the long CSV's task column, the first one a header has winning (``task``: a new-user
trial's export, 'agent,task,resolved', was read as a wide CSV and refused for its repeated agent ids)."""

TRIALS_COLUMNS = ("agent", "task_id", "successes", "trials")
"""Required columns of the repeated-trials CSV form (Terminal-Bench style)."""

#: a wide CSV whose first header cell is one of these is probably transposed (one row per task)
TASK_COLUMN_NAMES = frozenset({"task", "tasks", "task_id", "instance_id", "instance"})
#: names of an agent (row id) column: one alone on a line with no value is a second header line (pandas' named index)
_ROW_ID_NAMES = frozenset({"agent", "agents", "agent_id", "model", "model_name", "name", "subject", "subject_id", "index"})

_ASCII_COUNT = re.compile(r"[0-9]+")

#: a SWE-bench instance id: ``owner__repo-<number>`` (e.g. ``django__django-11099``), or Pro's
#: ``instance_owner__repo-<commit sha>...``; model ids such as ``openai__gpt-4`` or ones ending in an
#: 8-digit date do not match (``openai__gpt-4-0613`` does: the warning says "if")
_INSTANCE_ID = re.compile(r"^(instance_)?[\w.-]+__[\w.-]+-(\d{3,5}|[0-9a-f]{40}.*)$")


def _share_like_instance_ids(ids: Sequence[str]) -> float:
    """Fraction of ``ids`` shaped like SWE-bench instance ids (a transposed-matrix hint)."""
    return sum(bool(_INSTANCE_ID.match(x)) for x in ids) / max(1, len(ids))

RESULT_ID_LISTS = (
    "resolved",
    "no_generation",
    "generated",
    "with_logs",
    "no_logs",
    "install_fail",
    "reset_failed",
    "no_apply",
    "applied",
    "test_errored",
    "test_timeout",
)
"""Instance-id lists a SWE-bench/experiments ``results.json`` may hold.

Only ``resolved`` scores 1. The others (no patch generated, no evaluation log, patch not
applied, tests errored / timed out, ...) are unresolved by the leaderboard convention, where
the denominator is the whole split; they only help to find the split's task universe.
"""

SPLIT_SIZES = MappingProxyType({"lite": 300, "verified": 500, "test": 2294, "multimodal": 510})
"""Official task counts of the SWE-bench splits, to flag an incomplete task universe."""

#: a first line of a one-id-per-line task list that is a column header, not a task (a one-column CSV export)
TASK_LIST_HEADERS = ("instance_id", "task_id", "task", "instance_ids", "task_ids", "tasks")

FORMS = MappingProxyType({
    "wide_csv": "wide CSV 'agent,<task ids...>'",
    "long_csv": "long CSV 'agent,instance_id|task_id|task,resolved'",
    "trials_csv": "repeated-trials CSV 'agent,task_id,successes,trials'",
    "jsonl": "py-irt JSONL {'subject_id': ..., 'responses': {task: 0/1}}",
    "bank_dir": "bank folder (header-less matrix.csv + metadata.json)",
    "leaderboard": "SWE-bench/experiments checkout (evaluation/<split>/<submission>/results/results.json)",
    "harbor_jobs": "Harbor jobs folder (jobs/<job_name>/<trial_name>/result.json, one per trial)",
})
"""Supported input forms, by the name :func:`detect_form` returns."""

_LAYOUTS = (
    "expected a wide CSV 'agent,<task ids...>', a long CSV 'agent,instance_id,resolved' (or task_id / task), "
    "a repeated-trials CSV 'agent,task_id,successes,trials', "
    "a py-irt .jsonl file, a folder with matrix.csv + metadata.json, a SWE-bench/experiments "
    "checkout (a folder holding evaluation/<split>/<submission>/results/results.json), or a folder of "
    "Harbor jobs (jobs/<job_name>/<trial_name>/result.json)"
)


# ---------------------------------------------------------------------- cell parsing
def parse_outcome(text: str, where: str) -> int | None:
    """Parse one cell with the outcome vocabulary (:mod:`hspr.outcomes`); empty, na or nan = None.

    Raises
    ------
    DataError
        For any other text; the message starts with ``where``.
    """
    if is_missing(text):
        return None
    y = outcome(text)
    if y is None:
        # a hostile trial: a 100,000-digit cell was echoed whole
        raise DataError(f"{where}: non-binary value {shorten(text)!r}; outcomes must be 0 or 1 ({SPELLINGS}; {NO_RUN})")
    return y


def _parse_cells(cells: np.ndarray, where: Callable[[int, int], str],
                 no_run: str = NO_RUN) -> tuple[np.ndarray, np.ndarray]:
    """Parse a 2-D array of cell strings into (values int8, missing bool), both ``cells.shape``.

    ``where(r, c)`` describes the location of cell (r, c) for the error message, ``no_run`` how the
    form writes a missing run (a long CSV leaves the line out: a new-user trial read "empty = no
    run" in its refusal, and an empty value was then refused).
    """
    # normalise each distinct cell text once (a bank has a handful), then map back
    uniq, inv = np.unique(cells.astype(str), return_inverse=True)
    inv = inv.reshape(cells.shape)
    norm = np.array([normalise(u) for u in uniq.tolist()], dtype=str)
    ones = np.isin(norm, list(RESOLVED))[inv]
    miss = np.isin(norm, list(MISSING))[inv]
    bad = ~(ones | miss | np.isin(norm, list(UNRESOLVED))[inv])
    if bad.any():
        r, c = np.argwhere(bad)[0]
        text = str(cells[r, c])
        rate = ""
        with contextlib.suppress(ValueError):
            if 0 < float(text) < 1:  # a pass rate (a new-user trial: Terminal-Bench's pass_rate.csv got no pointer)
                rate = (". Pass rates over repeated trials are read from counts: a CSV with the header "
                        f"'{','.join(TRIALS_COLUMNS)}', one line per agent and task")
        raise DataError(
            f"{where(int(r), int(c))}: non-binary value {shorten(text)!r}; outcomes must be 0 or 1 ({SPELLINGS}; {no_run}){rate}"
        )
    return ones.astype(np.int8), miss


def _plain_binary(rows: list[list[str]], width: int) -> np.ndarray | None:
    """The (len(rows), width) int8 matrix when every cell is exactly ``0`` or ``1``, else None.

    The common case (every bundled bank), read in one pass from the cells joined with a NUL
    between them: the text then alternates digit, NUL, digit only if each cell is one
    character. Any other spelling, padding or empty cell goes through :func:`_parse_cells`.
    """
    n = len(rows) * width
    text = "\0".join(itertools.chain.from_iterable(rows)).encode("utf-8")
    if n == 0 or len(text) != 2 * n - 1:
        return None
    codes = np.frombuffer(text, dtype=np.uint8)
    digits = codes[0::2] - np.uint8(48)
    if codes[1::2].any() or digits.max() > 1:
        return None
    return digits.astype(np.int8).reshape(len(rows), width)


# ---------------------------------------------------------------------- shared checks
def _check_ids(ids: Sequence[str], kind: str, prefix: str, where: Callable[[int], str]) -> None:
    """Raise DataError on the first empty or repeated id, or one holding a control character; ``where(i)``
    names position i in the file."""
    ids = list(ids)
    first: dict[str, int] = {}
    for j, x in enumerate(ids):
        if x == "":
            raise DataError(f"{prefix}: {where(j)}: empty {kind} id; every {kind} needs a non-empty id")
        if CONTROL_CHARS.search(x):  # a hostile trial: the matrix's own check named its row or column, not the file's
            raise DataError(f"{prefix}: {where(j)}: {kind} id {x!r} {CONTROL_CHARS_FIX}")
        if x in first:
            raise DataError(
                f"{prefix}: duplicate {kind} id {x!r} ({where(first[x])} and {where(j)}); "
                f"{kind} ids must be unique: rename or remove one of them"
            )
        first[x] = j


def _refuse_control_chars(path, ids: Sequence[str], lines: Sequence[int], column: str) -> None:
    """DataError naming the file's line and column of the first id holding a tab, newline or other
    control character (hostile trials: the matrix's own check named its 0-based row or column instead)."""
    if CONTROL_CHARS.search("".join(ids)):  # one pass; only then find the first offender
        r = next(r for r, x in enumerate(ids) if CONTROL_CHARS.search(x))
        raise DataError(f"{path}: line {lines[r]}, column {column}: id {ids[r]!r} {CONTROL_CHARS_FIX}")


def _long_csv_hint(header: Sequence[str], agents: Sequence[str] = ()) -> str:
    """Why a wide CSV whose agent ids repeat may be a long or repeated-trials CSV, from its ``header``: the
    column it lacks (a hostile trial: 'agent,instance_id' was told only "duplicate agent id"; a re-trial:
    'agent,task_id,successes' was told to rename successes to resolved), or, when the header's first field is
    one of the ``agents`` ids, that the file lost its header line (a trial: rows cut from a long CSV by grep);
    '' when the header looks like neither (a wide CSV with an id twice)."""
    names = [h.strip() for h in header]
    if names and names[0] in set(agents):
        return (f"Its first line ({','.join(names)[:80]!r}) is a row like the others, not a header: the file has lost its "
                f"header line. Put one first: 'agent,instance_id,resolved' for a long CSV, '{','.join(TRIALS_COLUMNS)}' "
                "for repeated trials")
    low = [n.lower() for n in names]
    task = next((n for n, x in zip(names, low) if x in LONG_TASK_NAMES), None)
    if {"successes", "trials"} & set(low):
        return f"A repeated-trials CSV needs the columns '{','.join(TRIALS_COLUMNS)}'"
    if task is None:
        return ("With 3 columns this looks like a long CSV: name its header 'agent,instance_id,resolved' (task_id or "
                "task may name the task column)" if len(names) == 3 else "")
    other = [n for n, x in zip(names, low) if n and x not in ("agent", task.lower())]
    rename = f" (rename {other[0]!r} if it holds the outcomes)" if len(other) == 1 else ""
    return (f"The header has {task!r}, a long CSV's task column, but no 'resolved' column: a long CSV's header is "
            f"'agent,{task},resolved'{rename}, 1 resolved, 0 not")


def _other_form(path: Path, hint: str, exc: DataError) -> DataError:
    """The error of a file read as a wide CSV that looks like another form: ``hint`` (:func:`_long_csv_hint`)
    first, then what reading it as a wide CSV found (``exc``)."""
    return DataError(f"{path}: {hint}. Read as a wide CSV (one row per agent), {str(exc).removeprefix(f'{path}: ')}")


def _check_widths(path: Path, recs: list[tuple[int, list[str]]], width: int, what: str, named: int | None = None) -> None:
    """Raise DataError naming the first record whose field count is not ``width`` (``named``: how many of the
    header's fields hold a name, said when fewer)."""
    lens = np.fromiter((len(r) for _, r in recs), dtype=int, count=len(recs))
    bad = np.flatnonzero(lens != width)
    if bad.size:
        n, rec = recs[int(bad[0])]
        raise DataError(
            f"{path}: line {n} (starting {rec[0]!r}) has {len(rec)} fields, {what} has {width}"
            f"{f' ({named} named)' if named is not None and named < width else ''}; every row needs the same number of "
            "comma-separated fields"
        )


# ---------------------------------------------------------------------- wide CSV
def _index_columns(header: Sequence[str], body: Sequence[tuple[int, list[str]]]) -> int | None:
    """The place (1 to 3) of the id column (named ``agent``, or the first after columns named as an index)
    that follows an index a data-frame library wrote (pandas' ``to_csv`` of a reset index, R's ``write.csv``),
    else None: every column before it holds whole numbers (row numbers, in any order, from any start, repeated
    after a ``pd.concat``) and it holds ids, not outcomes or other numbers. A hostile trial:
    ``df.reset_index().to_csv(path)`` was read with the row numbers as agents and 'agent' as a task; its re-trials:
    only ``0, 1, ...`` in order was recognised, and a task named 'agent' beside agent ids 0, 1, 2 was refused."""
    def index_name(h: str) -> bool:  # what pandas (unnamed, reset_index, twice) and R name an index column
        return h.strip().lower() in ("", "index", "level_0") or h.strip().lower().startswith("unnamed:")

    # the 'agent' column, or the first column after index-named ones (a re-trial: ',model,...' was missed)
    at = next((j for j in (1, 2, 3) if j < len(header) and (header[j].strip().lower() == "agent" or (
        all(index_name(h) for h in header[:j]) and not index_name(header[j])))), None)
    if at is None or not body or any(len(r) <= at for _, r in body):
        return None
    if not all(r[j].strip().isdigit() for _, r in body for j in range(at)):  # row numbers (pd.concat may repeat them)
        return None

    def number(text: str) -> bool:
        try:
            float(text)
        except ValueError:
            return False
        return True

    # ids, not outcomes nor pass rates (a re-trial: ',t1,t2' over pass rates 0.6, ... was called an index)
    return None if all(is_cell(r[at]) or number(r[at]) for _, r in body) else at


def _conversion(path: Path, sep: str) -> str:
    """A shell command that writes ``path``, a matrix separated by ``sep``, as a comma-separated
    ``<stem>_comma.csv`` (``_comma_2.csv``, ... when that exists): the input and any file already
    there are kept (a hostile trial: ``bank.tsv`` was to be written over ``bank.csv``; its re-trial:
    over an existing ``bank_comma.csv``, and a name with a quote made the command invalid)."""
    import shlex

    out, n = path.with_name(f"{path.stem}_comma.csv"), 1
    while out.exists() or out.is_symlink():  # a dangling link too: writing through it makes its target
        n += 1
        out = path.with_name(f"{path.stem}_comma_{n}.csv")
    code = (f"import pandas as pd; pd.read_csv({json.dumps(str(path))}, sep={json.dumps(sep)}, dtype=str)"
            f".to_csv({json.dumps(str(out))}, index=False)")  # JSON strings are Python literals too
    return f"python -c {shlex.quote(code)}"


def read_wide_csv(path: str | Path) -> ResponseMatrix:
    """Read a wide CSV: header ``agent,<task_1>,...,<task_N>``, one row per agent.

    Parameters
    ----------
    path : str or Path
        The CSV file. Cells are 0/1 (also true/false, 1.0/0.0); an empty cell is a missing run.

    Returns
    -------
    ResponseMatrix
        Shape (n_rows, n_task_columns), rows in file order; ``missing`` flags the empty cells.

    Raises
    ------
    DataError
        On an empty file, no agent rows, an empty or duplicate agent / task id, a ragged row or
        a non-binary value; the message names the line and column.
    """
    path = Path(path)
    recs = csv_records(path, DataError)
    if not recs:
        raise DataError(f"{path}: file is empty; expected a header 'agent,<task ids...>' and one row per agent")
    (hline, header), body = recs[0], recs[1:]
    if len(header) < 2:
        sep = next((f" (it holds {name}: hspr reads comma-separated files; convert it, e.g. {_conversion(path, c)})"
                    for c, name in ((";", "semicolons"), ("\t", "tabs"), ("|", "'|'")) if header and c in header[0]), "")
        # a hostile trial: a long file with semicolons was told the wide form's header; the conversion serves both
        raise DataError(f"{path}: line {hline}: header has {len(header)} column(s){sep}"
                        + ("" if sep else "; expected 'agent,<task ids...>'"))
    if (at := _index_columns(header, body)) is not None:
        name = header[at].strip()
        raise DataError(f"{path}: line {hline}: the header starts {','.join(header[:at + 1])!r}, the column(s) "
                        f"before {name!r} hold row numbers and {name!r} holds ids: an index (pandas, R) written "
                        f"beside the id column; drop the column(s) before {name!r} (pandas: df.to_csv(path, "
                        f"index=False) when {name!r} is a column, df.set_index({name!r}).to_csv(path) to make it the "
                        "index; R: write.csv(df, path, row.names = FALSE))")
    body, named = fill_header_tail(header, body)  # its empty columns are left out below, with a warning
    _check_widths(path, body, len(header), "the header", named)
    # no id (or pandas' name for none, 'Unnamed: 3': a re-trial converted an Excel file with the command hspr gives)
    blank = [j for j in range(1, len(header)) if (not header[j].strip() or re.fullmatch(r"Unnamed: \d+", header[j].strip()))
             and all(not r[j].strip() for _, r in body)]
    if blank:  # a hostile trial: a spreadsheet's trailing separators ('agent,t1,t2,') refused as "empty task id"
        warnings.warn(f"{path}: column(s) {', '.join(str(j + 1) for j in blank)} hold nothing (no task id in the header, "
                      "no value in any row; a spreadsheet's trailing separators): left out", InputWarning, stacklevel=2)
        keep = [j for j in range(len(header)) if j not in set(blank)]
        header, body = [header[j] for j in keep], [(n, [r[j] for j in keep]) for n, r in body]
    tasks = [h.strip() for h in header[1:]]
    if (levels := _levels_header(path, header, body[0][1] if body else [])) is not None:
        raise DataError(levels)
    _check_ids(tasks, "task", f"{path}: line {hline} (header)", lambda j: f"column {j + 2}")
    (n2, second) = body[0] if body else (0, [""])
    # the columns' name over the index's: 'task,...' (or nothing) over 'agent,,,'; not an agent of that name that ran
    # nothing under a header 'agent,...' (its re-trial: 'model,,,' refused, with the advice to name the column 'model')
    if (header[0].strip().lower() in TASK_COLUMN_NAMES or not header[0].strip()) and \
            second[0].strip().lower() in _ROW_ID_NAMES and not any(c.strip() for c in second[1:]):
        # a hostile trial: 'task,t1,..' over 'agent,,,' (pandas: a named index under named columns) made an agent
        # 'agent' with score 0 that never ran, a source and a target
        raise DataError(f"{path}: line {n2} ({second[0].strip()!r} and no value) is a second header line, as pandas "
                        f"writes the index's name under the columns' name ({header[0].strip()!r}): drop line {n2} and "
                        f"name the first column {second[0].strip()!r} in line {hline} (pandas: "
                        "df.rename_axis(columns=None).to_csv(path))")
    named_task_column = header[0].strip().lower() in TASK_COLUMN_NAMES
    if named_task_column:
        warnings.warn(f"{path}: the first column is named {header[0].strip()!r}, but a wide CSV has one row per agent "
                      "(header 'agent,<task ids...>'): its rows are read as agents and its header as task ids; if "
                      "each row is a task, transpose the file", InputWarning, stacklevel=2)
    if not body:
        raise DataError(f"{path}: no agent rows under the header; the matrix is empty (add one row per agent)")
    lines = [n for n, _ in body]
    agents = [r[0].strip() for _, r in body]
    # pandas' to_csv(index=False): the first task column is read as the agent ids
    outcome_ids = header[0].strip().lower() != "agent" and all(is_cell(a) for a in agents)
    no_agent_column = (f"is the agent column missing? A wide CSV's first column names the agent (header 'agent,"
                       f"{header[0].strip()},...'; pandas: df.to_csv(path) with the agent ids as the index, not "
                       "index=False)")
    try:
        _check_ids(agents, "agent", str(path), lambda i: f"line {lines[i]}")
    except DataError as exc:
        if outcome_ids:
            raise DataError(f"{exc}. Every row starts with an outcome ({agents[0]!r}, ...), not an agent id: "
                            f"{no_agent_column}") from None
        if "duplicate" in str(exc):
            raw, first = [r[0] for _, r in body], {}
            for k, a in enumerate(agents):  # the first repeated id: rows i and k
                if (i := first.setdefault(a, k)) != k:
                    break
            if raw[i] != raw[k]:  # a trial: 'a' and 'a ' were named as the one id 'a' twice
                raise DataError(f"{path}: line {lines[i]} and line {lines[k]}: agent ids {raw[i]!r} and {raw[k]!r} "
                                f"are one id once the spaces around them are removed ({agents[i]!r}); agent ids must "
                                "be unique: rename or remove one of them") from None
            hint = _long_csv_hint(header, agents)
            if not hint:
                raise
            # one row per (agent, task): a long CSV read as a wide one, and the form's hint comes first (a
            # new-user trial read "duplicate agent id" as the diagnosis)
            raise _other_form(path, hint, exc) from None
        raise
    if outcome_ids:  # 2 rows: their ids '1', '0' do not repeat
        raise DataError(f"{path}: every row starts with an outcome ({', '.join(map(repr, agents[:3]))}), not an agent "
                        f"id: {no_agent_column}")
    if not named_task_column and (example := _transposed_example(agents, tasks)):
        warnings.warn(f"{path}: the row ids look like task ids (e.g. {example!r}) and the header's do not, but a wide "
                      "CSV has one row per agent (header 'agent,<task ids...>'): if each row is a task, transpose the "
                      "file (pandas: df.T.to_csv(...))", InputWarning, stacklevel=2)
    values, miss = _plain_binary([r[1:] for _, r in body], len(tasks)), None
    if values is None:
        cells = np.array([r[1:] for _, r in body], dtype=str)
        try:
            values, miss = _parse_cells(
                cells, lambda r, c: f"{path}: line {lines[r]}, column {c + 2} (agent {agents[r]!r}, task {tasks[c]!r})"
            )
        except DataError as exc:
            if not any(t.lower() in LONG_TASK_NAMES for t in tasks):
                raise
            # a trial: 'agent,instance_id' and no outcome column was told "task 'instance_id': non-binary value 't1'"
            raise _other_form(path, _long_csv_hint(header), exc) from None
        miss = miss if miss.any() else None
    return ResponseMatrix(agents, tasks, values, miss, source=str(path))


# ---------------------------------------------------------------------- long CSV
def _long_columns(path: Path, columns: Sequence[str | tuple[str, ...]]) -> tuple[np.ndarray, list[int], list[str],
                                                                                list[str]]:
    """The named columns of a long CSV with a header, as text, each row's line number, the names used
    and the whole header (stripped, lower case).

    A column given as a tuple of names is the first of them the header has (e.g.
    ``("instance_id", "task_id")``). Returns an array of shape (n_rows, len(columns)) (cells as
    read), the rows' line numbers and the header name found for each column. Raises DataError
    naming the file (and line) for an empty file, a header without one of ``columns`` (the
    header may hold others, in any order and case) or with one of them twice, no data lines, or
    a line whose width differs from the header's.
    """
    options = [(c,) if isinstance(c, str) else tuple(c) for c in columns]
    want = ",".join(o[0] for o in options)
    recs = csv_records(path, DataError)
    if not recs:
        raise DataError(f"{path}: file is empty; expected a header '{want}'")
    (hline, header), body = recs[0], recs[1:]
    names = [h.strip().lower() for h in header]
    used = [next((c for c in o if c in names), None) for o in options]
    absent = [" or ".join(o) for o, u in zip(options, used) if u is None]
    if absent:
        raise DataError(f"{path}: line {hline}: header lacks column(s) {', '.join(absent)}; expected '{want}'")
    # a re-trial: 'agent,instance_id,task_id,resolved' was read from instance_id with no word
    for o, u in zip(options, used):
        also = [c for c in o if c in names and c != u]
        if also:
            warnings.warn(f"{path}: line {hline}: the header has both {u!r} and {also[0]!r}; the task ids are read from "
                          f"{u!r} (drop or rename the other column if that is wrong)", InputWarning, stacklevel=3)
    # a hostile trial: 'agent,instance_id,resolved,resolved' was read from the first of the two, with no word
    twice = [u for u in used if names.count(u) > 1]
    if twice:
        raise DataError(f"{path}: line {hline}: the header names column {twice[0]!r} {names.count(twice[0])} times "
                        f"(columns {', '.join(str(k + 1) for k, n in enumerate(names) if n == twice[0])}); which one "
                        "holds the data is not known: rename or drop the others")
    if not body:
        raise DataError(f"{path}: no data lines under the header; the matrix is empty")
    body, named = fill_header_tail(header, body)  # a re-trial: 'agent,instance_id,resolved,' over 'a1,t1,1' was refused
    _check_widths(path, body, len(header), "the header", named)
    # the named columns picked before the array is made (a scale trial: the whole rows' array and its indexed copy took
    # 3.9 s and twice 450 MB on 2.1 million lines, picked first 1.7 s)
    pick = operator.itemgetter(*[names.index(c) for c in used])
    arr = np.array([pick(r) for _, r in body], dtype=str).reshape(len(body), len(used))
    return arr, [n for n, _ in body], used, names


def read_long_csv(path: str | Path) -> ResponseMatrix:
    """Read a long CSV with columns ``agent,instance_id,resolved`` (one line per run).

    The task column may be named ``task_id`` or ``task`` instead (:data:`LONG_TASK_NAMES`); the
    file then loads exactly as with ``instance_id``. ``resolved`` is 0/1 or true/false. Repeated
    (agent, instance_id) pairs with the same value are merged, with an
    :class:`~hspr.errors.InputWarning` giving their count and the first two lines (a repeated line
    may be a run appended twice, or a trial of a bank of repeated trials); pairs absent for an agent
    become missing cells. Extra columns are ignored.

    Returns
    -------
    ResponseMatrix
        Shape (n_distinct_agents, n_distinct_instance_ids), both in order of first appearance.

    Raises
    ------
    DataError
        On an empty file, a missing required column, a ragged line, an empty id or value, a
        non-binary value, or a repeated pair with conflicting values (naming both lines).
    """
    path = Path(path)
    arr, lines, used, header = _long_columns(path, ("agent", LONG_TASK_NAMES, "resolved"))
    tid = used[1]
    if {"trial", "trial_id", "attempt"} & set(header):
        # a trial: per-trial lines were refused as conflicts, or merged silently into one 0/1 outcome
        raise DataError(f"{path}: a trial column: one line per trial of a bank of repeated trials, which hspr reads as "
                        f"'agent,task_id,successes,trials' (one line per agent and task: the successes of its trials); "
                        f"count each (agent, {tid})'s resolved lines into that form (pandas: "
                        f"df.groupby(['agent', '{tid}'])['resolved'].agg(successes='sum', trials='size'))")
    agent, task = np.char.strip(arr[:, 0]).tolist(), np.char.strip(arr[:, 1]).tolist()
    for k, col in enumerate((agent, task)):
        empty = np.flatnonzero(np.asarray(col, dtype=object) == "")
        if empty.size:
            raise DataError(f"{path}: line {lines[empty[0]]}: empty {used[k]}; every line needs agent, {tid} and resolved")
        _refuse_control_chars(path, col, lines, used[k])

    def values(rows: slice) -> np.ndarray:
        return _parse_cells(arr[rows, 2:3], lambda r, c: f"{path}: line {lines[r]}, column resolved (agent "
                            f"{agent[r]!r}, {tid} {task[r]!r})", "a run that did not happen has no line")[0]

    blank = np.flatnonzero(np.isin(np.char.lower(np.char.strip(arr[:, 2])), list(MISSING)))
    if blank.size:
        values(slice(0, blank[0]))  # a value before it that cannot be read is named first (a re-trial: line 5 was
        # named before line 3)
        raise DataError(
            f"{path}: line {lines[blank[0]]}: empty resolved value {str(arr[blank[0], 2])!r}; write 0 or 1, "
            f"or drop the line (pairs absent from the file are missing runs)"
        )
    vals = values(slice(None))
    import pandas as pd  # imported where used: loading a wide bank (every live command) does not need it

    df = pd.DataFrame({"agent": agent, "task": task, "v": vals[:, 0], "line": lines})
    _check_long_conflicts(path, df, tid)
    repeated = df.duplicated(["agent", "task"]).to_numpy()
    if repeated.any():  # a new-user trial: 20 lines appended twice were merged without a word
        j = int(np.flatnonzero(repeated)[0])
        first = int(df["line"].to_numpy()[(df["agent"].to_numpy() == agent[j]) & (df["task"].to_numpy() == task[j])][0])
        warnings.warn(f"{path}: {int(repeated.sum())} line(s) repeat an earlier (agent, {tid}) with the same outcome "
                      f"(first: line {lines[j]} repeats line {first}, agent {agent[j]!r}, {tid} {task[j]!r}); each pair "
                      "is counted once. If the lines are trials of one task, write the successes of each pair's trials "
                      f"instead: '{','.join(TRIALS_COLUMNS)}'", InputWarning, stacklevel=2)
    df = df.drop_duplicates(["agent", "task"])
    a_codes, agents = pd.factorize(df["agent"])
    t_codes, tasks = pd.factorize(df["task"])
    values = np.zeros((len(agents), len(tasks)), dtype=np.int8)
    values[a_codes, t_codes] = df["v"].to_numpy()
    miss = np.ones(values.shape, dtype=bool)
    miss[a_codes, t_codes] = False
    return ResponseMatrix(list(agents), list(tasks), values, miss if miss.any() else None, source=str(path))


def read_trials_csv(path: str | Path) -> ResponseMatrix:
    """Read repeated trials per task: columns ``agent,task_id,successes,trials`` (one line per
    agent and task; Terminal-Bench style, every task tried ``trials`` times). The task column may
    be named ``instance_id`` instead, as in a long CSV.

    Returns
    -------
    ResponseMatrix
        Shape (n_distinct_agents, n_distinct_task_ids), ``values`` the success counts and
        ``trials`` the number of trials per cell (the score is the mean pass rate); pairs absent
        for an agent become missing cells.

    Raises
    ------
    DataError
        On an empty file, a missing column, a ragged line, an empty id, a count that is not a
        whole number, successes outside 0..trials, trials that differ between lines (naming the
        line), or a repeated (agent, task_id) pair.
    """
    path = Path(path)
    want = ",".join(TRIALS_COLUMNS)
    arr, lines, used, _ = _long_columns(path, ("agent", ("task_id", "instance_id", "task"), "successes", "trials"))
    arr = np.char.strip(arr)
    for k in range(4):
        empty = np.flatnonzero(arr[:, k] == "")
        if empty.size:
            raise DataError(f"{path}: line {lines[empty[0]]}: empty {used[k]}; every line needs {want}")
    for k in (0, 1):
        _refuse_control_chars(path, arr[:, k].tolist(), lines, used[k])
    counts = np.zeros((len(arr), 2), dtype=int)
    for k in (2, 3):
        # '5.0' as a spreadsheet writes a whole number, as a wide CSV's '1.0' (a hostile trial: refused here only)
        col = [drop_zero_decimals(t) for t in arr[:, k].tolist()]
        for i, text in enumerate(col):
            if not _ASCII_COUNT.fullmatch(text):
                what = "is negative" if text.startswith("-") else "is not a whole number (digits 0-9)"
                raise DataError(f"{path}: line {lines[i]}, column {used[k]}: {shorten(text)!r} {what}")
            if len(text.lstrip("0")) > 3:
                raise DataError(f"{path}: line {lines[i]}, column {used[k]}: {shorten(text)} is too large (at most "
                                "127 trials per task)")
        counts[:, k - 2] = [int(t) for t in col]
    succ, tri = counts[:, 0], counts[:, 1]
    bad = np.flatnonzero((tri < 1) | (succ > tri))
    if bad.size:
        i = int(bad[0])
        raise DataError(f"{path}: line {lines[i]}: successes {succ[i]} of {tri[i]} trials; successes must be in "
                        "0..trials and trials at least 1")
    odd = np.flatnonzero(tri != tri[0])
    if odd.size:
        i = int(odd[0])
        raise DataError(f"{path}: line {lines[i]}: {tri[i]} trials where line {lines[0]} has {tri[0]}; every task "
                        "needs the same number of trials (drop the extra trials, rerun the short cells, or delete the "
                        "line of a pair with fewer trials: a pair with no line is a missing cell)")
    if tri[0] > 127:
        raise DataError(f"{path}: {tri[0]} trials per task; at most 127 are supported")
    import pandas as pd

    df = pd.DataFrame({"agent": arr[:, 0], "task": arr[:, 1], "line": lines})
    dup = np.flatnonzero(df.duplicated(["agent", "task"]).to_numpy())
    if dup.size:
        later = int(dup[0])
        a, t = str(df["agent"].iloc[later]), str(df["task"].iloc[later])
        first = int(np.flatnonzero((df["agent"] == a).to_numpy() & (df["task"] == t).to_numpy())[0])
        raise DataError(f"{path}: lines {lines[first]} and {lines[later]} both give agent {a!r}, task_id {t!r}; keep "
                        "one line per (agent, task_id): one run's successes of the bank's trials per task (two "
                        "runs' lines summed would count more trials than the other tasks have)")
    a_codes, agents = pd.factorize(df["agent"])
    t_codes, tasks = pd.factorize(df["task"])
    values = np.zeros((len(agents), len(tasks)), dtype=np.int8)
    values[a_codes, t_codes] = succ
    miss = np.ones(values.shape, dtype=bool)
    miss[a_codes, t_codes] = False
    return ResponseMatrix(list(agents), list(tasks), values, miss if miss.any() else None, source=str(path),
                          trials=int(tri[0]))


def _check_long_conflicts(path: Path, df: pd.DataFrame, tid: str = "instance_id") -> None:
    """Raise DataError on the first (agent, task) line contradicting an earlier line; ``tid`` names the task column."""
    groups = df.groupby(["agent", "task"], sort=False)
    first_v = groups["v"].transform("first").to_numpy()
    first_line = groups["line"].transform("first").to_numpy()
    bad = np.flatnonzero(df["v"].to_numpy() != first_v)
    if bad.size:
        j = int(bad[0])
        row = df.iloc[j]
        raise DataError(
            f"{path}: conflicting outcomes for agent {row['agent']!r}, {tid} {row['task']!r}: "
            f"line {int(first_line[j])} says {int(first_v[j])}, line {int(row['line'])} says {int(row['v'])}; "
            f"keep one line per (agent, {tid}), or, if the lines are trials of one task, count them into the form "
            f"'{','.join(TRIALS_COLUMNS)}' (pandas: df.groupby(['agent', '{tid}'])['resolved'].agg(successes='sum', "
            "trials='size'))"
        )


# ---------------------------------------------------------------------- py-irt JSONL
def read_jsonl(path: str | Path) -> ResponseMatrix:
    """Read py-irt style JSONL: one object ``{"subject_id": ..., "responses": {task: 0/1}}`` per line.

    Response values are 0/1 (JSON numbers) or true/false; ``null`` and tasks absent for a
    subject are missing cells. Blank lines are skipped.

    Returns
    -------
    ResponseMatrix
        Shape (n_subjects, n_tasks); subjects in file order, tasks in order of first appearance.

    Raises
    ------
    DataError
        On an empty file, a line that is not valid JSON or not such an object, an empty or
        duplicate subject id, or a non-binary response (naming the line, subject and task).
    """
    path = Path(path)
    subjects: list[str] = []
    responses: list[dict] = []
    lines: list[int] = []
    text = read_text(path, DataError)
    for n, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            if not subjects:
                _refuse_json_document(path, text, line)
            sid, resp = _jsonl_record(path, n, line)
            subjects.append(sid)
            responses.append(resp)
            lines.append(n)
    if not subjects:
        raise DataError(f"{path}: file is empty; expected one JSON object per line: {{\"subject_id\": ..., \"responses\": {{task: 0/1}}}}")
    _check_ids(subjects, "subject", str(path), lambda i: f"line {lines[i]}")
    import pandas as pd

    frame = pd.DataFrame.from_records(responses, index=range(len(subjects)))
    if frame.shape[1] == 0:
        raise DataError(f"{path}: no subject has any response; the matrix is empty")
    tasks = [str(t) for t in frame.columns]
    # named by the line where the task first appears (a re-trial: 'task #3' named no place in the file)
    _check_ids(tasks, "task", str(path),
               lambda j: f"line {lines[next(k for k, r in enumerate(responses) if frame.columns[j] in r)]}")
    isna = frame.isna().to_numpy().copy()  # may be a read-only view
    cells = frame.to_numpy(dtype=object, copy=True)
    other = ~(frame.isin([0, 1]).to_numpy() | isna)
    for r, c in np.argwhere(other):  # a spelling of the vocabulary ("resolved", "1", "n/a"), as the CSV readers take
        if is_missing(cells[r, c]):
            isna[r, c], cells[r, c] = True, 0
            continue
        y = outcome(cells[r, c]) if isinstance(cells[r, c], str) else None
        if y is None:
            raise DataError(
                f"{path}: line {lines[r]} (subject {subjects[r]!r}), task {tasks[c]!r}: non-binary response "
                f"{shorten(repr(_py(cells[r, c])))}; responses must be 0 or 1 ({SPELLINGS}; null = no run)"
            )
        cells[r, c] = y
    values = np.where(isna, 0, cells).astype(np.int8)
    return ResponseMatrix(subjects, tasks, values, isna if isna.any() else None, source=str(path))


def _py(x: object) -> object:
    """A numpy scalar as the plain Python value (for readable messages)."""
    return x.item() if isinstance(x, np.generic) else x


#: where a folder of per-agent result files is turned into a bank
_PER_AGENT_RECIPE = "docs/banks.md, 'Building a bank', has a recipe for a folder of such files"


def _one_agents_results(doc) -> bool:
    """Whether a parsed JSON document is one agent's outcomes by task (``{"task-1": true, ...}``, values
    booleans, 0/1 or null), as a harness of one's own may write per agent."""
    return (isinstance(doc, dict) and bool(doc) and "subject_id" not in doc
            and all(v is None or v in (0, 1) and isinstance(v, (bool, int)) for v in doc.values()))


def _refuse_json_document(path: Path, text: str, first: str) -> None:
    """DataError when the file is one JSON document over several lines rather than JSON Lines, or an hspr
    results file or select result on one line (a hostile trial: an hspr results file given as --matrix was
    told its line 1 is invalid JSON), naming what it looks like; otherwise nothing."""
    try:
        doc, whole = loads(first), False
    except (ValueError, RecursionError):
        try:
            doc, whole = loads(text), True
        except (ValueError, RecursionError):
            return  # not JSON at all: the line-by-line message says where
    if _one_agents_results(doc):  # a re-trial: a harness's per-agent file was 'not a subject record'
        raise DataError(f"{path}: one agent's results ({{task: outcome}}), not a bank of agents: put every "
                        f"agent's results into one long CSV 'agent,instance_id,resolved' ({_PER_AGENT_RECIPE})")
    from ..harness import run_form  # here: the harness module reads banks with this one

    if isinstance(doc, dict) and "subject_id" not in doc and run_form(doc) is not None:
        # a harness trial: one agent's run summary or sb-cli report / tb run was told about JSON Lines
        raise DataError(f"{path}: one agent's run (a harness run summary, sb-cli report or tb run results.json), not a "
                        "bank of agents: `hspr live ingest FILE --session S` reads it into a live session; a bank "
                        f"holds many agents' outcomes, one long CSV 'agent,instance_id,resolved' ({_PER_AGENT_RECIPE})")
    if not whole and not (isinstance(doc, dict) and "subject_id" not in doc and ("runs" in doc or "stages" in doc)):
        return  # a document of its own on the first line: JSON Lines, checked line by line
    what = ("an `hspr replay` results file" if isinstance(doc, dict) and "runs" in doc else
            "an `hspr select` result" if isinstance(doc, dict) and "stages" in doc else "one JSON document over several lines")
    raise DataError(f"{path}: {what}, not a response matrix: a py-irt matrix (.jsonl) has one "
                    "object {\"subject_id\": ..., \"responses\": {task: 0/1}} per line; give the bank's own file "
                    "(CSV, JSONL or a leaderboard folder; `hspr bank validate FILE` checks one)")


def _not_a_record(obj: object) -> str:
    """What keeps a parsed JSONL line from being a py-irt subject record (a hostile trial: an array, an
    array of responses and a whole ``{agent: {task: 0/1}}`` object were each told only 'not a subject
    record'; its re-trial: a line lacking only its subject_id was called a whole object of agents)."""
    if not isinstance(obj, dict):
        return f"{json_kind(obj)}, not an object"
    if not obj:
        return "an empty object"
    if "subject_id" not in obj:
        if "responses" not in obj and all(isinstance(v, dict) for v in obj.values()):
            return ("an object of agents {agent: {task: 0/1}}: write one line per agent, "
                    "{\"subject_id\": agent, \"responses\": {task: 0/1}}")
        return f"no 'subject_id' key (its keys: {shorten(', '.join(map(str, obj)), 60)})"
    if "responses" not in obj:
        return "no 'responses' key"
    return f"its 'responses' is {json_kind(obj['responses'])}, not an object {{task: 0/1}}"


def _jsonl_record(path: Path, n: int, line: str) -> tuple[str, dict]:
    """Parse and check one JSONL line; returns (subject id, responses dict)."""
    shape = "each line must be one object {\"subject_id\": ..., \"responses\": {task: 0/1}}"
    try:
        obj = loads(line)
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}: line {n}, column {exc.colno}: invalid JSON ({exc.msg}); {shape}") from None
    except DuplicateKeyError as exc:
        raise DataError(f"{path}: line {n}: {exc}") from None
    except RecursionError:
        raise DataError(f"{path}: line {n}: nested too deeply to be a py-irt record; {shape}") from None
    except ValueError as exc:  # an integer of more than 4300 digits
        raise DataError(f"{path}: line {n}: invalid JSON ({str(exc).split(';')[0]}); {shape}") from None
    if not isinstance(obj, dict) or "subject_id" not in obj or not isinstance(obj.get("responses"), dict):
        raise DataError(f"{path}: line {n}: not a subject record: {_not_a_record(obj)}; {shape}")
    sid = obj["subject_id"]
    if not isinstance(sid, (str, int)) or isinstance(sid, bool):
        raise DataError(f"{path}: line {n}: subject_id must be a string, got {shorten(json.dumps(sid), 40)}")
    responses: dict = {}
    given: dict = {}
    for key, value in obj["responses"].items():  # ids are stripped as the CSV readers strip them
        task = str(key).strip()
        if task in responses:
            raise DataError(f"{path}: line {n}: task ids {given[task]!r} and {key!r} are the same id once surrounding "
                            "spaces are removed; keep one of them")
        responses[task], given[task] = value, key
    return str(sid).strip(), responses


# ---------------------------------------------------------------------- bank folder
def read_bank_dir(folder: str | Path) -> ResponseMatrix:
    """Read a reference-code bank folder: header-less ``matrix.csv`` + ``metadata.json``.

    ``metadata.json`` holds ``instance_ids`` (list of task ids, one per matrix column) and
    ``agents`` (list of ``{"folder": ..., "name": ...}``, one per matrix row; the agent id is
    ``folder``, else ``name``). ``matrix.csv`` has one row per agent of 0/1 (also 0.0/1.0)
    values; an empty cell is a missing run.

    Returns
    -------
    ResponseMatrix
        Shape (len(agents), len(instance_ids)).

    Raises
    ------
    DataError
        If either file is absent or malformed, an agent entry has no id, ids repeat, a row is
        ragged, a value is non-binary, or the metadata counts differ from the matrix shape
        (stating both numbers).
    """
    folder = Path(folder)
    meta_path, mat_path = folder / "metadata.json", folder / "matrix.csv"
    for p in (meta_path, mat_path):
        if not p.is_file():
            raise DataError(f"{folder}: no {p.name}; a bank folder needs a header-less matrix.csv and metadata.json")
    tasks, agents = _read_bank_metadata(meta_path)
    recs = csv_records(mat_path, DataError)
    if not recs:
        raise DataError(f"{mat_path}: file is empty; expected one row of 0/1 values per agent in {meta_path.name}")
    _check_widths(mat_path, recs, len(recs[0][1]), f"line {recs[0][0]}")
    n_rows, n_cols = len(recs), len(recs[0][1])
    if n_rows != len(agents):
        raise DataError(
            f"{folder}: metadata.json lists {len(agents)} agents but matrix.csv has {n_rows} rows; "
            f"they must match one to one (row i = agents[i])"
        )
    if n_cols != len(tasks):
        raise DataError(
            f"{folder}: metadata.json lists {len(tasks)} instance_ids but matrix.csv has {n_cols} columns; "
            f"they must match one to one (column j = instance_ids[j])"
        )
    lines = [n for n, _ in recs]
    cells = np.array([r for _, r in recs], dtype=str)
    values, miss = _parse_cells(
        cells,
        lambda r, c: f"{mat_path}: line {lines[r]}, column {c + 1} (agent {agents[r]!r}, task {tasks[c]!r}; "
        f"matrix.csv is header-less)",
    )
    return ResponseMatrix(agents, tasks, values, miss if miss.any() else None, source=str(folder))


def _read_bank_metadata(path: Path) -> tuple[list[str], list[str]]:
    """(instance ids, agent ids) from a bank folder's metadata.json, checked."""
    meta = read_json(path, DataError)
    if not isinstance(meta, dict):
        raise DataError(f"{path}: expected a JSON object with 'instance_ids' and 'agents'")
    ids, entries = meta.get("instance_ids"), meta.get("agents")
    if not isinstance(ids, list) or not all(isinstance(t, (str, int)) for t in ids):
        raise DataError(f"{path}: 'instance_ids' must be a list of task ids (one per matrix.csv column)")
    if not isinstance(entries, list):
        raise DataError(f"{path}: 'agents' must be a list of {{\"folder\": ..., \"name\": ...}} (one per matrix.csv row)")
    agents = [_agent_id(path, i, e) for i, e in enumerate(entries)]
    tasks = [str(t).strip() for t in ids]
    _check_ids(tasks, "task", str(path), lambda j: f"instance_ids[{j}]")
    _check_ids(agents, "agent", str(path), lambda i: f"agents[{i}]")
    return tasks, agents


def _agent_id(path: Path, i: int, entry: object) -> str:
    if isinstance(entry, str):
        return entry.strip()
    if isinstance(entry, dict):
        for key in ("folder", "name"):
            if isinstance(entry.get(key), str) and entry[key].strip():
                return entry[key].strip()
    raise DataError(f"{path}: agents[{i}] = {entry!r} has neither a 'folder' nor a 'name'; give each agent an id")


# ---------------------------------------------------------------------- leaderboard checkout
def read_task_list(path: str | Path) -> list[str]:
    """Read a task universe: one id per line (``#`` starts a comment line; a first line
    ``instance_id``, ``task_id`` or ``task`` is a column header), a JSON list, a CSV with an
    ``instance_id`` / ``task_id`` / ``task`` column (its distinct values, in order: a long or outcome CSV, as
    the matrix readers name the column), or a wide CSV whose header gives the ids. ``path`` may be an open
    descriptor's (a shell's ``<(...)``, read once).

    Returns
    -------
    list of str
        The ids in file order.

    Raises
    ------
    DataError
        If the file is absent or empty, an id repeats (naming both lines / columns), a line holds
        several ids or an inline comment, or a JSON item is not an id.
    """
    path = Path(path)
    if not path.is_file() and descriptor_of(path) is None:  # a hostile trial: `--tasks <(...)` was refused
        raise DataError(f"{path}: no such task list file" if not path.exists() else
                        f"{path}: not a regular file; give a text file with one task id per line (or a JSON list)")
    text = read_text(path, DataError)
    head = text.lstrip()[:1]
    if head in ("[", "{"):
        raw = read_json(path, DataError, text=text)  # the text read: a pipe is read once
        raw = raw.get("instance_ids") if isinstance(raw, dict) else raw
        if not isinstance(raw, list):
            raise DataError(f"{path}: a JSON task list must be a list of ids (or an object with 'instance_ids')")
        bad = next((j for j, t in enumerate(raw) if not isinstance(t, (str, int)) or isinstance(t, bool)), None)
        if bad is not None:
            raise DataError(f"{path}: item {bad} of the JSON task list is {shorten(repr(raw[bad]))}; every item must "
                            "be one task id (a string)")
        ids = [str(t).strip() for t in raw]
        where = lambda j: f"item {j}"  # noqa: E731
    else:
        numbered = [(n, ln.strip()) for n, ln in enumerate(text.splitlines(), 1)
                    if ln.strip() and not ln.lstrip().startswith("#")]  # '# ...' lines are comments
        def parse(n: int, ln: str) -> list[str]:  # a re-trial: a field over the csv limit gave a traceback
            try:
                return next(csv.reader([ln]))
            except csv.Error as exc:
                raise DataError(csv_error_message(path, n, exc)) from None

        rows = [parse(n, ln) for n, ln in numbered[:50]]
        bank_rows = len(rows) >= 2 and len(rows[0]) > 1 and all(len(r) == len(rows[0]) for r in rows) \
            and all(is_cell(c) for r in rows[1:] for c in r[1:])
        agent_header = bool(rows) and len(rows[0]) > 1 and rows[0][0].strip().lower() == "agent"
        head = [c.strip().lower() for c in rows[0]] if rows else []
        id_col = next((head.index(c) for c in TASK_LIST_HEADERS if c in head), None) if len(head) > 1 else None
        if id_col is not None:  # a CSV with an id column (a long CSV, an outcome CSV): its distinct values, in order
            recs = [(n, parse(n, ln)) for n, ln in numbered[1:]]
            short = next(((n, r) for n, r in recs if len(r) <= id_col), None)
            if short is not None:
                raise DataError(f"{path}: line {short[0]} has no {rows[0][id_col].strip()!r} column (column "
                                f"{id_col + 1} of the header)")
            firsts: dict[str, int] = {}
            for n, r in recs:
                firsts.setdefault(r[id_col].strip(), n)
            ids = list(firsts)
            lines_of = list(firsts.values())
            where = lambda j: f"line {lines_of[j]}"  # noqa: E731
        elif bank_rows or agent_header:  # a wide CSV (whatever its first column is called), or its header alone
            ids = [h.strip() for h in rows[0][1:]]
            where = lambda j: f"line {numbered[0][0]}, column {j + 2}"  # noqa: E731
        else:
            # a one-column CSV's header, not a task (quoted too: '"task"', a re-trial)
            if numbered and numbered[0][1].strip("\"'").lower() in TASK_LIST_HEADERS:
                numbered = numbered[1:]
            ids = [t for _, t in numbered]
            where = lambda j: f"line {numbered[j][0]}"  # noqa: E731
            packed = next(((n, t) for n, t in numbered if any(c in t for c in "\t,;") or re.search(r"\s#", t)), None)
            if packed is not None:
                raise DataError(f"{path}: line {packed[0]} holds {shorten(repr(packed[1]))}: a task list has one id per "
                                "line and comments take a whole line starting with #; an id that holds a tab, comma, "
                                "semicolon or ' #' goes in a JSON list instead ([\"id1\", \"id2\"])")
    if not ids:
        raise DataError(f"{path}: task list is empty; give one instance id per line")
    _check_ids(ids, "task", str(path), where)
    return ids


def read_results_json(path: str | Path) -> dict[str, list[str]]:
    """Read one submission's ``results/results.json``: its instance-id lists by key.

    Only the keys in :data:`RESULT_ID_LISTS` are kept; ``resolved`` is required.

    Raises
    ------
    DataError
        On invalid JSON (naming line and column), a missing ``resolved`` list, or a list that
        is not a list of id strings.
    """
    path = Path(path)
    data = read_json(path, DataError)
    if not isinstance(data, dict) or "resolved" not in data:
        raise DataError(f"{path}: expected a JSON object with a 'resolved' list of instance ids")
    out: dict[str, list[str]] = {}
    for key in RESULT_ID_LISTS:
        ids = data.get(key)
        if ids is None and key == "resolved":  # present but null: a traceback in a trial
            raise DataError(f"{path}: 'resolved' must be a list of instance ids, got null (an empty list [] if the "
                            "submission resolved none)")
        if ids is None:
            continue
        if not isinstance(ids, list):
            raise DataError(f"{path}: '{key}' must be a list of instance ids, got {json_kind(ids)}")
        bad = [i for i, x in enumerate(ids) if not isinstance(x, str) or not x.strip()]
        if bad:
            raise DataError(f"{path}: '{key}'[{bad[0]}] = {ids[bad[0]]!r} is not an instance id string")
        out[key] = [x.strip() for x in ids]
    # resolved and also listed as never generated / never evaluated: the file contradicts itself (a trial)
    clash = {k: sorted(set(out["resolved"]) & set(out.get(k, ()))) for k in ("no_generation", "no_logs", "no_apply")}
    clash = {k: v for k, v in clash.items() if v}
    if clash:
        shown = "; ".join(f"{len(v)} also in '{k}' ({', '.join(map(repr, v[:3]))}{' ...' if len(v) > 3 else ''})"
                          for k, v in clash.items())
        warnings.warn(f"{path}: resolved id(s) the file also lists as not run: {shown}; counted as resolved, as the "
                      "leaderboard scores 'resolved'", InputWarning, stacklevel=3)
    return out


#: a submission's per-task outcomes in the SWE-bench/experiments layout of the mini-SWE-agent baselines
#: (evaluation/bash-only/<submission>/) and multilingual entries: {instance_id: {"resolved": bool, ...}}
PER_INSTANCE_DETAILS = "per_instance_details.json"


def read_per_instance_details(path: str | Path) -> dict[str, list[str]]:
    """Read one submission's ``per_instance_details.json`` (``{instance_id: {"resolved": true or
    false, "cost": ..., "api_calls": ...}}``) as :func:`read_results_json`'s lists: ``resolved``
    and ``unresolved`` (every other id it lists).

    Raises
    ------
    DataError
        On invalid JSON, a file that is not an object of per-instance objects, or an entry whose
        ``resolved`` is not true or false, naming the file and the instance id.
    """
    path = Path(path)
    data = read_json(path, DataError)
    if not isinstance(data, dict) or not data:
        raise DataError(f"{path}: expected a JSON object {{instance_id: {{\"resolved\": true or false, ...}}}}")
    out: dict[str, list[str]] = {"resolved": [], "unresolved": []}
    for iid, entry in data.items():
        flag = entry.get("resolved") if isinstance(entry, dict) else None
        if not isinstance(flag, bool) or not iid.strip():
            raise DataError(f"{path}: instance {iid!r}: expected an object with \"resolved\": true or false, got "
                            f"{brief(entry)}")
        out["resolved" if flag else "unresolved"].append(iid.strip())
    return out


def leaderboard_splits(root: str | Path) -> list[str]:
    """Split folder names under ``root/evaluation`` (sorted); DataError if there is none."""
    root = Path(root)
    eval_dir = root / "evaluation"
    if not eval_dir.is_dir():
        raise DataError(
            f"{root}: no evaluation/ folder; expected a SWE-bench/experiments checkout with "
            f"evaluation/<split>/<submission>/results/results.json"
        )
    splits = sorted(p.name for p in eval_dir.iterdir() if p.is_dir())
    if not splits:
        raise DataError(f"{eval_dir}: no split folders (e.g. lite, verified, test)")
    return splits


def _pick_split(root: Path, split: str | None) -> str:
    splits = leaderboard_splits(root)
    if split is None:
        if len(splits) == 1:
            return splits[0]
        if "verified" in splits:
            return "verified"
        raise DataError(f"{root}: several splits ({', '.join(splits)}); choose one with --split")
    if split not in splits:
        raise DataError(f"{root}: no split {split!r} under evaluation/; available: {', '.join(splits)}")
    return split


def read_leaderboard(root: str | Path, split: str | None, tasks: str | Path | Sequence[str] | None = None, *,
                     suspect: bool = True) -> ResponseMatrix:
    """Build a matrix from a SWE-bench/experiments checkout.

    Each ``evaluation/<split>/<submission>/results/results.json`` gives one agent row (id =
    submission folder name, rows sorted); a task is 1 if listed in ``resolved`` and 0 otherwise
    (leaderboard convention: no generation, no logs, not applied, errored all count as
    unresolved), so the matrix has no missing cells. A submission without a results.json may
    give its outcomes as ``per_instance_details.json`` (:func:`read_per_instance_details`: the
    mini-SWE-agent baselines under ``evaluation/bash-only/``). Submission folders with neither
    are skipped with a warning.

    Parameters
    ----------
    root : str or Path
        The checkout (the folder holding ``evaluation/``).
    split : str or None
        Split folder name (``lite``, ``verified``, ``test``, ...). None: the only split present,
        else ``verified``.
    tasks : path, sequence of str or None
        The task universe (columns, sorted as in every other form): a file for
        :func:`read_task_list` or a list of ids. None: the sorted union of every id in any id list of the split's
        results.json files (warns if that differs from the official split size, since a task
        that no submission mentions cannot be found that way).
    suspect : bool
        Warn of look-alike ids and the like (:func:`warn_suspect`); False for a caller that warns of the bank
        it returns itself (:func:`load_matrix`: a hostile trial was told of one look-alike pair twice).

    Returns
    -------
    ResponseMatrix
        Shape (n_submissions, n_tasks), complete.

    Raises
    ------
    DataError
        If the layout or split is absent, no submission has a results.json, a results.json is
        malformed, or (with ``tasks``) a ``resolved`` id is outside the task universe.
    """
    root = Path(root)
    split = _pick_split(root, split)
    split_dir = root / "evaluation" / split
    results, skipped = {}, []
    for sub in sorted(p for p in split_dir.iterdir() if p.is_dir()):
        f = sub / "results" / "results.json"
        if f.is_file():
            results[sub.name] = read_results_json(f)
        elif (sub / PER_INSTANCE_DETAILS).is_file():  # a harness trial: skipped with a warning only
            results[sub.name] = read_per_instance_details(sub / PER_INSTANCE_DETAILS)
        else:
            skipped.append(sub.name)
    if skipped:
        warnings.warn(
            f"{split_dir}: skipped {len(skipped)} submission folder(s) without results/results.json or "
            f"{PER_INSTANCE_DETAILS}: {', '.join(skipped[:5])}{' ...' if len(skipped) > 5 else ''}",
            InputWarning, stacklevel=2,
        )
    if not results:
        raise DataError(f"{split_dir}: no submission folder has results/results.json or {PER_INSTANCE_DETAILS}; "
                        "nothing to build")
    universe = _leaderboard_universe(split_dir, split, results, tasks)
    cols = np.asarray(universe, dtype=object)
    values = np.vstack([np.isin(cols, lists["resolved"]) for lists in results.values()]).astype(np.int8)
    m = ResponseMatrix(list(results), universe, values, None, source=str(split_dir))
    return warn_suspect(m, split_dir) if suspect else m


def _leaderboard_universe(split_dir: Path, split: str, results: dict, tasks) -> list[str]:
    if tasks is None:
        named = {n: set().union(*map(set, lists.values())) for n, lists in results.items()}  # every id a file names
        ids = sorted(set().union(*named.values()))
        if not ids:
            raise DataError(f"{split_dir}: the submissions' result files list no instance ids; build the bank with the "
                            f"official ids: hspr bank build {split_dir.parent.parent} --split {split} --tasks FILE "
                            "--out bank.csv")
        expected = SPLIT_SIZES.get(split)
        if expected is not None and len(ids) > expected:  # a trial: a typo'd resolved id became a task of its own
            mentions = Counter(t for got in named.values() for t in got)
            rare = sorted((t for t in ids if mentions[t] == 1), key=lambda t: (t.casefold(), t))
            who = {t: n for n, got in named.items() for t in got if mentions[t] == 1}
            shown = ", ".join(f"{t!r} ({who[t]})" for t in rare[:5])
            warnings.warn(
                f"{split_dir}: the task universe (union of ids in {len(results)} submissions' result files) has {len(ids)} ids "
                f"but SWE-bench {split} has {expected}: some ids are not tasks of the split (a typo?)"
                + (f"; {len(rare)} id(s) only one submission mentions: {shown}{' ...' if len(rare) > 5 else ''}"
                   if rare else "")
                + f". Build with the official ids: hspr bank build {split_dir.parent.parent} --split {split} --tasks "
                "FILE --out bank.csv (FILE: one id per line); an id outside it is then refused, naming its submission",
                InputWarning, stacklevel=3)
        elif expected is not None and len(ids) != expected:
            warnings.warn(
                f"{split_dir}: the task universe (union of ids in {len(results)} submissions' result files) has "
                f"{len(ids)} ids but SWE-bench {split} has {expected}; build the bank with the official ids, so "
                f"that tasks no submission mentions count as unresolved: hspr bank build "
                f"{split_dir.parent.parent} --split {split} --tasks FILE --out bank.csv (FILE: one id per line)",
                InputWarning, stacklevel=3,
            )
        return ids
    ids = read_task_list(tasks) if isinstance(tasks, (str, Path)) else [str(t) for t in tasks]
    known = set(ids)
    ids = sorted(ids)  # columns sorted as every other form: the digest a session records is the built one (a trial)
    for name, lists in results.items():
        foreign = [t for t in lists["resolved"] if t not in known]
        if foreign:
            raise DataError(
                f"{split_dir / name / 'results' / 'results.json'}: {len(foreign)} resolved id(s) not in the task "
                f"list (first: {foreign[0]!r}); check --split / --tasks, or remove that submission folder"
            )
    return ids


# ---------------------------------------------------------------------- dispatch
def _first_record(path: Path) -> list[str]:
    with path.open(newline="", encoding="utf-8-sig") as fh:
        try:
            for rec in csv.reader(fh):
                if any(x.strip() for x in rec):
                    return rec
        except (csv.Error, UnicodeDecodeError):
            return []
    return []


def _looks_like_bank_dir(folder: Path) -> bool:
    try:
        return (folder / "matrix.csv").is_file() and (folder / "metadata.json").is_file()
    except OSError:  # a trial: a file's path near the 4096-byte limit made '<file>/matrix.csv' too long, a fatal error
        return False


def bank_dir_of(path: str | Path) -> Path | None:
    """The bank folder (header-less ``matrix.csv`` + ``metadata.json``) that ``path`` is, or whose
    ``matrix.csv`` it is; None otherwise."""
    path = Path(path)
    folder = path.parent if path.name == "matrix.csv" else path
    return folder if _looks_like_bank_dir(folder) else None


def _detect_dir(path: Path, scans: list | None = None) -> str:
    """The form of the folder ``path``; the Harbor walk it made (:func:`hspr.data.harbor.scan`) is appended to
    ``scans`` when given, for the reader (a walk parses every ``result.json``: a live command on a jobs folder of
    10,000 trials read each twice, 2.7 s)."""
    if _looks_like_bank_dir(path):
        return "bank_dir"
    if (path / "evaluation").is_dir():
        return "leaderboard"
    results, other = harbor.scan(path, (harbor.CONFIG, "report.json", "run_instance.log", "results.json"))
    if scans is not None:
        scans.append((results, other))
    if any(harbor.is_trial(d) for _, d in results) or harbor.started(other[harbor.CONFIG]):
        return "harbor_jobs"  # a job or trial just started (its config.json only) too: its reader says no trial has ended
    banks = sorted(p.name for p in path.iterdir() if p.is_dir() and _looks_like_bank_dir(p))
    if banks:
        raise DataError(
            f"{path}: a data root holding {len(banks)} bank folders ({', '.join(banks)}); "
            f"pass one of them, e.g. {path / banks[0]}"
        )
    if (path / "matrix.csv").is_file():
        with open(path / "matrix.csv", "rb") as fh:
            first = fh.readline(4096).lstrip(b"\xef\xbb\xbf").split(b",")[0].strip()
        if first and not first.replace(b".", b"").isdigit():  # a header row: a wide CSV (a bundled bank's folder)
            raise DataError(f"{path}: matrix.csv has a header row, so it is a wide CSV, not the header-less matrix of a "
                            f"bank folder (which needs a metadata.json); pass the file itself: {path / 'matrix.csv'}")
        raise DataError(f"{path}: matrix.csv has no metadata.json next to it; add metadata.json with 'instance_ids' and 'agents'")
    resolved = path.resolve()
    if resolved.name == "evaluation" and resolved.parent.name:  # inside a leaderboard checkout: name its root
        raise DataError(f"{path}: the evaluation/ folder of a leaderboard checkout; pass the checkout itself: "
                        f"{resolved.parent} (with --split NAME)")
    if resolved.parent.name == "evaluation":
        raise DataError(f"{path}: a split folder of a leaderboard checkout; pass the checkout itself: "
                        f"{resolved.parent.parent} --split {resolved.name}")
    for f, d in results:  # a trial's file lacking a key: named, rather than an unknown layout (a new-user trial)
        harbor.refuse_partial_trial(d, f, DataError)
    from ..harness import run_form  # here: the harness module reads banks with this one

    per_agent = ""
    if other["report.json"] or other["run_instance.log"] or any(
            run_form(harbor.try_json(f, DataError)) == "tb_run" for f in other["results.json"][:20]):
        per_agent = ("; it holds one agent's harness output (SWE-bench logs or a tb run), which `hspr live ingest "
                     "FOLDER --session S` reads into a live session, not a bank of agents")
    elif any(p.suffix.lower() == ".json" for p in path.iterdir() if p.is_file()):  # a re-trial: no pointer to the recipe
        per_agent = (f"; a folder of one result file per agent, as a harness of your own writes, is turned into one long "
                     f"CSV first ({_PER_AGENT_RECIPE})")
    raise DataError(f"{path}: unknown folder layout; {_LAYOUTS}{per_agent}")


def detect_form(path: str | Path) -> str:
    """Name the form of ``path``: one of the keys of :data:`FORMS` (:func:`_detect`)."""
    return _detect(Path(path))


def _levels_header(path: Path, first: list[str], second: list[str] | None = None) -> str | None:
    """The message, naming ``path``, for a first CSV line that tops a header of several lines, as pandas writes
    columns of several levels (``pivot_table(values=['resolved'])``, ``unstack()``): names that repeat ('resolved'
    over every column, or 'django' over its tasks), not all numbers. Given the ``second`` line, it must hold names
    (the tasks), not only outcomes, and the first cell may name the level ('metric'); without it (the first line
    alone, all outcome words), the first cell must be empty and the repeated name one ('resolved': ',true,true,false'
    is a header-less row of outcomes). Else None. A hostile trial was told "no header (it holds outcome values)", or
    "duplicate task id 'is_resolved'"."""
    names = [x.strip() for x in first[1:] if x.strip()]
    if len(first) < 3 or len(set(names)) == len(names) or all(re.fullmatch(r"[0-9.]+", n) for n in names):
        return None
    if second is None:  # the first line alone (a file whose first line is all outcomes): an empty first cell and one
        # repeated name, not several outcomes (',true,true,false' is a header-less row: a re-trial)
        if first[0].strip() or all(is_cell(n) for n in names) and len(set(names)) > 1:
            return None
    else:  # over a line of names (the tasks), not outcomes; the first cell may name the level ('metric', 'repo')
        below = [x.strip() for x in second[1:] if x.strip()]
        if not below or all(is_cell(x) for x in below):
            return None
    lead = f"{first[0].strip()!r}" if first[0].strip() else "an empty cell"
    return (f"{path}: line 1 ({lead}, then {', '.join(map(repr, dict.fromkeys(names[:3])))} repeated over the columns) "
            "is the top of a header of several lines, as pandas writes columns of several levels: write one header "
            "line 'agent,<task ids...>' (pandas: df.columns = df.columns.get_level_values(-1); "
            "df.rename_axis(index='agent', columns=None).to_csv(path))")


def _detect(path: Path, scans: list | None = None) -> str:
    """Name the form of ``path``: one of the keys of :data:`FORMS`; a folder's Harbor walk is appended to
    ``scans`` when given (:func:`_detect_dir`).

    Directories: ``bank_dir`` (matrix.csv + metadata.json), ``leaderboard`` (has
    ``evaluation/``) or ``harbor_jobs`` (Harbor trial ``result.json`` files, or a job just
    started). Files: ``harbor_jobs`` for one Harbor trial's ``result.json``; ``jsonl`` by suffix
    (.jsonl/.ndjson) or a first character ``{``; otherwise CSV, ``long_csv`` if the header has
    agent, instance_id and resolved, ``trials_csv`` if it has agent, task_id, successes and
    trials, ``long_csv`` for agent, task_id and resolved, ``bank_dir`` for a header-less
    ``matrix.csv`` beside a metadata.json, else ``wide_csv``.

    Raises
    ------
    DataError
        If the path does not exist, is empty, or has no recognised form.
    """
    path = Path(path)
    if not path.exists():
        from .banks import BANKS  # imported here: banks reads its files with this module

        bare = str(path).strip().lower() in BANKS  # e.g. 'lite': a bundled bank's name given as a path
        raise DataError(f"{path}: no such file or directory"
                        + (f" (a bundled bank is loaded by name: hspr.data.load_bank({str(path)!r}), or --bank)" if bare else ""))
    if path.is_dir():
        return _detect_dir(path, scans)
    if not path.is_file():  # a re-trial: a named pipe blocked the read for ever
        raise DataError(f"{path}: not a regular file (a named pipe or a device?); give a file or a folder (output "
                        "piped in: save it first, `... > file`, or redirect a file: `< file`)")
    if path.suffix.lower() in (".jsonl", ".ndjson"):
        return "jsonl"
    with path.open("rb") as fh:
        head = fh.read(4096).lstrip(b"\xef\xbb\xbf \t\r\n")
    if not head:
        raise DataError(f"{path}: file is empty; {_LAYOUTS}")
    if sep := re.match(rb'"?sep=(.)"?\1*[ ]*\r?\n', head, re.IGNORECASE):  # a hostile trial: "column 2: empty task id"
        raise DataError(f"{path}: line 1 ({sep.group(0).decode('utf-8', 'replace').rstrip(chr(13) + chr(10))!r}) is a spreadsheet's line "
                        "naming its separator, not a header: delete line 1" + (
                            "" if sep.group(1) == b"," else " and convert the file to commas (the error after that "
                            "gives the command)"))
    if head[:1] == b"{" and path.suffix.lower() == ".json" and b"\n{" not in head.rstrip():
        data = harbor.try_json(path, DataError)
        harbor.refuse_partial_trial(data, path, DataError)
        if harbor.is_trial(data):  # one Harbor trial's result.json
            return "harbor_jobs"
    if head[:1] == b"{":
        return "jsonl"
    if path.suffix.lower() == ".json":
        raise DataError(f"{path}: a .json file must be py-irt JSONL (one {{\"subject_id\", \"responses\"}} object per line)")
    first = _first_record(path)
    names = {x.strip().lower() for x in first}
    if {"resolved", "successes", "trials"} <= names and ("agent" in names or names & set(LONG_TASK_NAMES)):
        # a hostile trial: read as trials or as 0/1 outcomes by the task column's name alone, the other ignored (a
        # 'trials' column alone beside 'resolved', a count of attempts, is no second form: its re-trial)
        raise DataError(f"{path}: line 1: the header has 'resolved' and 'successes' and 'trials': a long CSV "
                        "holds one run's outcome per line ('agent,instance_id,resolved') or the successes of repeated "
                        f"trials ('{','.join(TRIALS_COLUMNS)}'), not both; drop the columns of the form it is not")
    if set(LONG_COLUMNS) <= names:
        return "long_csv"
    if {"agent", "successes", "trials"} <= names and names & set(LONG_TASK_NAMES):
        return "trials_csv"
    if {"agent", "resolved"} <= names and names & set(LONG_TASK_NAMES):
        return "long_csv"
    if "resolved" in names and names & set(LONG_TASK_NAMES) and "agent" not in names:
        other = sorted(names - {"resolved"} - set(LONG_TASK_NAMES))
        fix = (f"the header has {', '.join(repr(x) for x in other)}: rename the agent column to 'agent'" if other
               else "add a column 'agent' naming the agent of each row")
        raise DataError(f"{path}: line 1: a long CSV needs an 'agent' column; {fix}")
    if {"successes", "trials"} <= names or {"successes", "trials"} & names and (
            "agent" in names or names & set(LONG_TASK_NAMES)):  # a new-user trial: without trials, "duplicate agent"
        absent = [c if c != "task_id" else "task_id (or instance_id)" for c in TRIALS_COLUMNS
                  if c not in names and not (c == "task_id" and names & set(LONG_TASK_NAMES))]
        have = " and ".join(c for c in ("successes", "trials") if c in names)
        raise DataError(f"{path}: line 1: the header has {have} but lacks column(s) "
                        f"{', '.join(absent)}; a repeated-trials CSV needs '{','.join(TRIALS_COLUMNS)}'")
    if first and all(is_cell(x) for x in first):
        if bank_dir_of(path) is not None:
            return "bank_dir"
        if (levels := _levels_header(path, first)) is not None:
            raise DataError(levels)
        raise DataError(
            f"{path}: line 1 has no header (it holds outcome values); add a header 'agent,<task ids...>', "
            f"or put a metadata.json with 'instance_ids' and 'agents' next to it as matrix.csv"
        )
    return "wide_csv"


def read_harbor_bank(path: str | Path, *, scanned: tuple | None = None) -> ResponseMatrix:
    """A response matrix from Harbor jobs: one row per agent and model (``agent_info.name /
    model_info.name``), one column per task, each cell the successes over that agent's graded
    trials of that task (:mod:`hspr.data.harbor` says how a trial is read; trials of one agent in
    several jobs add up, so a re-run in a job of its own completes a cell). A trial ``result.json``
    that cannot be read is refused (a bank is built from finished jobs).

    A bank has one number of trials per cell: the most common number of graded trials over the
    cells without a harness error or a cancelled trial (ties: the larger, said in the warning); when
    every cell has one, over all cells, with a warning that says so. When the jobs' ``config.json``
    agree on ``n_attempts`` (:func:`hspr.data.harbor.planned_attempts`) and some cell has that many
    graded trials, that is the count; when no cell has (the jobs are not done), the most common count
    over every cell below it, with a warning, and cells further along are missing, not refused. A cell with fewer graded trials (a job still
    running, cancelled trials, a harness error not yet re-run) is a missing cell; a harness error
    beside all the cell's graded trials is superseded by them. Agents and tasks left with no cell
    at all are dropped (a row of missing cells would be scored as an agent that fails everything).
    An :class:`~hspr.errors.InputWarning` counts the missing cells and names what was dropped. With
    one trial per cell the matrix is 0/1; otherwise ``trials`` is that count (a bank of repeated
    trials, as Terminal-Bench's). ``scanned``: the folder's walk, when the caller made it
    (:func:`hspr.data.harbor.read_trials`).

    Returns
    -------
    ResponseMatrix
        Shape (n_agents, n_tasks).

    Raises
    ------
    DataError
        As :func:`hspr.data.harbor.read_trials`; naming the trial for one without an agent name,
        the datasets when the trials are of more than one (``source``: tasks of one name in two
        datasets would share a column), the agent and task of a cell with more graded trials than
        the bank's, and the path when no cell has a graded trial.
    """
    path = Path(path)
    read, _, unreadable, planned = harbor.read_trials(path, DataError, scanned=scanned)
    if unreadable:  # a re-trial: a finished job whose files were all damaged lost its agent under a warning
        raise DataError(f"{unreadable[0]} ({len(unreadable)} trial {harbor.RESULT} file(s) could not be read); a bank "
                        "is built from finished jobs: build again once a running job has ended, or re-run the damaged "
                        "trials (or move their folders out)")
    datasets = sorted({t.source for t in read if t.source})
    if len(datasets) > 1:
        raise DataError(f"{path}: trials of {len(datasets)} datasets ({', '.join(map(repr, datasets[:4]))}): a task of "
                        "one name in two datasets would be one column; build one bank per dataset (a folder holding "
                        "that dataset's jobs)")
    cells: dict[tuple[str, str], list[str]] = {}
    for t in read:
        if not t.agent:
            raise DataError(f"{t.file}: the trial names no agent or model ('agent_info': name, model_info.name); a bank "
                            "has one row per agent: add them to its result.json, or leave its job out")
        cells.setdefault((t.agent, t.task), []).append(t.verdict)
    graded = {c: v.count(harbor.RESOLVED) + v.count(harbor.FAILED) for c, v in cells.items()}
    # the count the jobs ran (--n-attempts in their config.json) when some cell has that many graded trials: a
    # re-trial found every guess from the cells wrong in some mix of errored, cancelled and re-run trials
    # else the count of the cells without a harness error (a re-trial: where most cells had one errored trial,
    # their 4 graded of 5 outvoted the clean cells' 5) or a cancelled trial (a hostile trial: 4 graded + 1
    # cancelled everywhere was taken as a 4-trial bank), or of every cell when none is clean
    clean = Counter(k for c, k in graded.items() if k and harbor.ERROR not in cells[c] and harbor.NOT_YET not in cells[c])
    if planned in graded.values():
        counts = Counter({planned: sum(k == planned for k in graded.values())})
    elif planned is not None:  # the jobs are not done: the most common count over every cell (a third re-trial)
        counts = Counter(k for k in graded.values() if 0 < k < planned) or Counter(k for k in graded.values() if k)
    else:
        counts = clean or Counter(k for k in graded.values() if k)
    guessed = planned is None and not clean  # no count from the configs, and no clean cell to take one from
    if not counts:
        raise DataError(f"{path}: no task has a graded trial (every trial was cancelled or ended in a harness error)")
    trials = max(counts, key=lambda k: (counts[k], k))
    # without a clean cell, whether the errored or cancelled trials were re-run or still need one cannot be told
    ambiguous = (f"every cell has a harness error or a cancelled trial beside its graded trials and no job config.json "
                 f"gives a number of trials the jobs agree on, so the bank's count is the most common number of graded trials, "
                 f"{trials}: if the jobs ran --n-attempts {trials}, those trials were re-run and the cells are complete; "
                 "if more, re-run them (a job of their own, read with the others) or `harbor jobs resume`, then build "
                 "again")
    tie = [k for k in counts if counts[k] == counts[trials] and k != trials]
    # more graded trials than the bank's: refused, unless the jobs' count allows them (cells further along: missing)
    over = next((c for c, k in graded.items() if k > max(trials, planned or 0)), None)
    if over is not None:
        where = (f"the jobs ran --n-attempts {trials} (their config.json)" if planned == trials else
                 f"most cells have {trials}")
        raise DataError(f"{path}: agent {over[0]!r} has {graded[over]} graded trials of task {over[1]!r}, where {where}: "
                        f"jobs of another --n-attempts, or one job read twice under two names? a bank has one number "
                        f"of trials per task: leave out the jobs (or trial folders) beyond {trials}"
                        + (f"; or, if the jobs ran --n-attempts {graded[over]}: {ambiguous}" if guessed else ""))
    if planned is not None and trials < planned:  # a re-trial: config 5, every cell 4 graded, said nothing or the wrong thing
        warnings.warn(f"{path}: the jobs ran --n-attempts {planned} (their config.json), but no cell has {planned} graded "
                      f"trials (jobs still running, or errored or cancelled trials to re-run or `harbor jobs resume`), so "
                      f"the bank's count is the most common number of graded trials, {trials}: build again once they have "
                      "run", InputWarning, stacklevel=2)
    elif guessed:  # a re-trial: every cell 4 graded + 1 errored made a 4-trial bank with no word
        warnings.warn(f"{path}: {ambiguous}", InputWarning, stacklevel=2)
    keep = {c for c, k in graded.items() if k == trials}
    agents = sorted({a for a, _ in keep})
    tasks = sorted({t for _, t in keep})
    lost_agents = sorted({a for a, _ in cells} - set(agents))
    lost_tasks = sorted({t for _, t in cells} - set(tasks))
    ai, ti = {a: i for i, a in enumerate(agents)}, {t: j for j, t in enumerate(tasks)}
    values = np.zeros((len(agents), len(tasks)), dtype=np.int8)
    miss = np.ones(values.shape, dtype=bool)
    for a, t in keep:
        values[ai[a], ti[t]] = cells[a, t].count(harbor.RESOLVED)
        miss[ai[a], ti[t]] = False
    if miss.any() or lost_agents or lost_tasks:
        why = (f" ({counts[trials]} cells had {trials}, as many as had {' or '.join(map(str, sorted(tie)))}: the "
               "larger count was taken)" if tie else "")
        gaps = [f"{agents[i]!r} on {tasks[j]!r}" for i, j in zip(*np.nonzero(miss))][:3]  # a new-user trial: name them
        warnings.warn(f"{path}: the bank has {trials} trial(s) per cell{why}"
                      + (f"; {int(miss.sum())} missing cell(s) (fewer graded trials, or not run), e.g. {', '.join(gaps)}"
                         if gaps else "")
                      + (f"; dropped {len(lost_agents)} agent(s) with no such cell ({', '.join(map(repr, lost_agents[:3]))})"
                         if lost_agents else "")
                      + (f"; dropped {len(lost_tasks)} task(s) with no such cell ({', '.join(map(repr, lost_tasks[:3]))})"
                         if lost_tasks else "")
                      + "; run them to fill them", InputWarning, stacklevel=2)
    return ResponseMatrix(agents, tasks, values, miss if miss.any() else None, source=str(path),
                          trials=trials if trials > 1 else None)


_READERS: Mapping[str, Callable[[Path], ResponseMatrix]] = MappingProxyType({
    "wide_csv": read_wide_csv,
    "long_csv": read_long_csv,
    "trials_csv": read_trials_csv,
    "jsonl": read_jsonl,
    "bank_dir": lambda p: read_bank_dir(p if p.is_dir() else p.parent),
    "harbor_jobs": read_harbor_bank,
})


def load_matrix(path: str | Path, *, split: str | None = None,
                tasks: str | Path | Sequence[str] | None = None) -> ResponseMatrix:
    """Load a response matrix from ``path``, choosing the reader from its form (:func:`load_matrix_and_form`
    also names the form).

    Parameters
    ----------
    path : str or Path
        Any form of :data:`FORMS`: a wide CSV, long CSV, repeated-trials CSV
        (``agent,task_id,successes,trials``), py-irt JSONL file, a bank folder (or its
        matrix.csv), a Harbor jobs folder (or one trial's result.json), or a
        SWE-bench/experiments checkout.
    split : str, optional
        Leaderboard split folder (``lite``, ``verified``, ``test``, ...); only for a checkout.
        Default: the only split present, else ``verified``.
    tasks : path or sequence of str, optional
        Leaderboard task universe (see :func:`read_leaderboard`); only for a checkout. Default:
        the union of the listed ids.

    Returns
    -------
    ResponseMatrix
        Shape (n_agents, n_tasks), ``source`` = the path read, agents and tasks sorted by id
        (:meth:`ResponseMatrix.canonical`): the same data in any row or column order gives the
        same matrix, and so the same results. Blank cells stay missing; the command line counts
        them as unresolved unless ``--no-missing-as-zero``, as ``.fill_missing(0)`` does here.

    Raises
    ------
    DataError
        For a missing path, an unknown form, any validation failure of the reader, a matrix
        with no observed cell (every cell missing: nothing to fit or score), or ``split`` /
        ``tasks`` given for a form other than a leaderboard checkout.
    """
    return load_matrix_and_form(path, split=split, tasks=tasks)[0]


def load_matrix_and_form(path: str | Path, *, split: str | None = None, tasks: str | Path | Sequence[str] | None = None,
                         suspect: bool = True, targets: bool = False) -> tuple[ResponseMatrix, str]:
    """:func:`load_matrix`'s matrix and the form it was read as (a key of :data:`FORMS`), from one
    detection: ``hspr bank validate`` and ``build`` walked a Harbor jobs folder twice, once more for the form.
    ``suspect=False`` leaves out :func:`warn_suspect`'s warnings and the one on a bank where no task separates
    two agents, for a caller that checks the bank it makes from this one instead (``hspr bank merge``: a hostile
    trial was told a task of BASE no agent ran "lowers every score", where the merged bank had 27 runs of it,
    and a trial's NEW file of a few agents on a few tasks was told it "carries no information").
    ``targets=True`` reads target rows (``hspr replay --targets``), not a bank: a task blank in every row is
    not warned about as a task "no agent ran" that "lowers every score" (a trial; the caller says what a blank
    target cell does).

    Raises DataError as :func:`load_matrix`."""
    if not isinstance(path, (str, os.PathLike)):
        raise DataError(f"load_matrix takes the path of a file or folder, got {type(path).__name__}"
                        + ("; a ResponseMatrix is loaded already" if isinstance(path, ResponseMatrix) else ""))
    if not str(path).strip():  # an API trial: Path('') is '.', and the current folder was read as a bank
        raise DataError("load_matrix was given an empty path; give the path of a response-matrix file or folder")
    path = Path(path)
    scans: list = []  # a Harbor folder's walk, made by _detect and read once
    form = _detect(path, scans)
    if form != "leaderboard" and (split is not None or tasks is not None):
        raise DataError(f"{path}: --split / --tasks apply only to a SWE-bench/experiments checkout, "
                        f"but this is a {FORMS[form]}; drop those options")
    m = (read_leaderboard(path, split, tasks, suspect=False) if form == "leaderboard"
         else read_harbor_bank(path, scanned=scans[0]) if form == "harbor_jobs" and scans else _READERS[form](path))
    if form in ("leaderboard", "harbor_jobs") and path.is_dir():
        _warn_unread_files(path, form)
    m = _require_observed(m, path)
    return (warn_suspect(_warn_uninformative(m, path), path, blank_tasks=not targets) if suspect else m).canonical(), form


#: suffixes of files a user may mean as a matrix or harness output (named when a folder's reader skips them)
_MATRIX_SUFFIXES = (".csv", ".tsv", ".json", ".jsonl", ".ndjson")


def _warn_unread_files(path: Path, form: str) -> None:
    """InputWarning naming the matrix-like files (CSV, JSON) at the top of the folder ``path`` that its
    reader (``form``) did not read: a hostile trial's folder of a Harbor job, a CSV and a SWE-bench
    report was read as one agent of Harbor trials without a word of the other two."""
    try:
        names = sorted(p.name for p in path.iterdir() if p.is_file() and p.suffix.lower() in _MATRIX_SUFFIXES
                       and p.name not in (harbor.RESULT, harbor.CONFIG))
    except OSError:
        return
    if names:
        warnings.warn(f"{path}: read as a {FORMS[form].split(' (')[0]}; {len(names)} file(s) beside it were not read "
                      f"({', '.join(names[:5])}{', ...' if len(names) > 5 else ''}): give a file itself to read it, or "
                      "merge it in (hspr bank merge)", InputWarning, stacklevel=3)


def _transposed_example(agents: Sequence[str], tasks: Sequence[str]) -> str | None:
    """A row id that looks like a SWE-bench instance id when most row ids do and the column ids do
    not (a matrix with one row per task), else None."""
    if _share_like_instance_ids(agents) >= 0.5 > _share_like_instance_ids(tasks):
        return next(a for a in agents if _INSTANCE_ID.match(a))
    return None


def check_in_memory(m: ResponseMatrix, label: str) -> ResponseMatrix:
    """Return ``m`` with the warnings :func:`load_matrix` gives on a file, for a matrix built in
    memory (:meth:`ResponseMatrix.from_dataframe`; an API trial found a transposed frame loaded
    without a word): row ids that look like task ids, no task separating agents, and
    :func:`warn_suspect`."""
    if example := _transposed_example(m.agents, m.tasks):
        warnings.warn(f"{label}: the row ids look like task ids (e.g. {example!r}) and the column ids do not, but a "
                      "response matrix has one row per agent: if each row is a task, transpose it (df.T)",
                      InputWarning, stacklevel=3)
    return warn_suspect(_warn_uninformative(m, label), label)


def _warn_uninformative(m: ResponseMatrix, path: Path) -> ResponseMatrix:
    """Return ``m``; warn (:class:`~hspr.errors.InputWarning`) when no task separates any two agents.

    When every task has the same outcome for every agent that ran it (e.g. a matrix of zeros, or
    identical rows), the bank says nothing about which tasks a new agent solves: a method may then
    return the bank's one score, and an interval learned from the sources can be a single point.
    """
    r = np.asarray(m.rates(), dtype=float)
    if m.missing is not None:
        r = np.where(m.missing, np.nan, r)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a column with no run: all-NaN
        spread = np.nanmax(r, axis=0) - np.nanmin(r, axis=0)
    if m.n_agents > 1 and not np.any(spread > 0):
        values = np.unique(r[~np.isnan(r)])
        same = (f"every cell is {values[0]:g}" if len(values) == 1 else
                "the agents that ran a task all got the same outcome on it" if m.missing is not None and m.missing.any()
                else "each task has one outcome for every agent")
        warnings.warn(f"{path}: no task separates any two agents ({same}): the bank carries no information on which "
                      "tasks a new agent solves, so no estimate made from it can be trusted (it may repeat the "
                      "bank's one score with an interval of width 0); use a bank with real agents' runs",
                      InputWarning, stacklevel=3)
    return m


def fold_id(text: str) -> str:
    """``text`` (an agent or task id) in NFKC form (compatibility forms: ``²`` -> ``2``, full-width
    letters), case-folded (``ß`` -> ``ss``), with white space and invisible format characters
    (zero-width space, ...) taken out: two ids that fold alike are most likely one id mistyped
    (:func:`warn_suspect`, :func:`hspr.data.build.merge_banks`)."""
    text = unicodedata.normalize("NFKC", text)
    return "".join(c for c in text if not c.isspace() and unicodedata.category(c) != "Cf").casefold()


def _scripts(text: str) -> set[str]:
    """The alphabets of the letters of ``text`` among Latin, Cyrillic and Greek (the look-alike ones)."""
    out = set()
    for c in text:
        if c.isalpha() and not c.isascii():
            word = unicodedata.name(c, "").split(" ", 1)[0]
            if word in ("CYRILLIC", "GREEK", "LATIN"):
                out.add(word.title())
        elif c.isalpha():
            out.add("Latin")
    return out


def warn_suspect(m: ResponseMatrix, label, blank_tasks: bool = True) -> ResponseMatrix:
    """Return ``m``; warn (:class:`~hspr.errors.InputWarning`) on what builds a wrong bank without
    an error (a trial of bank building found each one silent):

    - tasks no agent ran (a column all blank): replay and live count them as unresolved for
      every agent, so every score shrinks;
    - task ids that differ only in case, white space or invisible characters (one outcome moved
      to a phantom column, the real cell left blank), and agent ids that do (one agent's runs
      split over two rows); task ids that hold an invisible (format) character
      such as a zero-width space (an id typed as it looks is not found), or that mix Latin,
      Cyrillic or Greek letters (a look-alike letter);
    - agents with identical outcomes on every task (the same submission under two names counts
      as two sources).

    Agents with no run at all are warned about where their blanks are filled
    (:meth:`ResponseMatrix.fill_missing`). ``blank_tasks=False`` leaves out the first warning (target rows,
    whose blanks are their own agents' missing runs).
    """
    if m.missing is not None and blank_tasks:
        blank = np.flatnonzero(m.missing.all(axis=0))
        if blank.size:
            shown = ", ".join(repr(m.tasks[j]) for j in blank[:5])
            warnings.warn(f"{label}: {blank.size} task(s) no agent ran, every cell blank ({shown}"
                          f"{' ...' if blank.size > 5 else ''}): replay and live count them as unresolved for every "
                          "agent, which lowers every score; drop those columns or add their runs", InputWarning,
                          stacklevel=3)
    for kind, ids, where in (("task", m.tasks, "outcomes over two columns"), ("agent", m.agents, "runs over two rows")):
        folded: dict[str, list[str]] = {}  # agents too: a hostile trial's 'agent_00' and 'Agent_00' passed silently
        for x in ids:
            folded.setdefault(fold_id(x), []).append(x)
        alike = [g for g in folded.values() if len(g) > 1]
        if alike:
            shown = "; ".join(" / ".join(map(ascii, g)) for g in alike[:3])
            warnings.warn(f"{label}: {len(alike)} group(s) of {kind} ids differ only in case, white space or invisible "
                          f"characters ({shown}{' ...' if len(alike) > 3 else ''}): one {kind} spelled two ways splits its "
                          f"{where}; fix the ids in the source", InputWarning, stacklevel=3)
    hidden = [t for t in m.tasks if any(unicodedata.category(c) == "Cf" for c in t)]
    if hidden:  # a hostile trial: 'task\u200b' validated OK, and `live record task` then said 'not in the bank'
        shown = ", ".join(repr(t) for t in hidden[:3])  # repr escapes the invisible characters only
        warnings.warn(f"{label}: {len(hidden)} task id(s) hold an invisible character ({shown}"
                      f"{' ...' if len(hidden) > 3 else ''}): an id typed as it looks is not found; fix the ids in the "
                      "source", InputWarning, stacklevel=3)
    mixed = [t for t in m.tasks if len(_scripts(t)) > 1]
    if mixed:
        shown = ", ".join(f"{ascii(t)} ({' + '.join(sorted(_scripts(t)))})" for t in mixed[:3])
        warnings.warn(f"{label}: {len(mixed)} task id(s) mix letters of several alphabets ({shown}"
                      f"{' ...' if len(mixed) > 3 else ''}): a look-alike letter (a Cyrillic 'а' for a Latin 'a') "
                      "makes another task of the same name; fix the ids in the source", InputWarning, stacklevel=3)
    if m.n_agents > 1 and m.n_tasks >= MIN_TASKS_FOR_COPIES:
        v = np.asarray(m.rates(), dtype=float)
        if m.missing is not None:
            v = np.where(m.missing, -1.0, v)
        _, inv, counts = np.unique(v, axis=0, return_inverse=True, return_counts=True)
        inv = np.ravel(inv)
        groups = [[m.agents[i] for i in np.flatnonzero(inv == g)] for g in np.flatnonzero(counts > 1)]
        if groups:
            shown = "; ".join(" = ".join(map(repr, g)) for g in groups[:3])
            warnings.warn(f"{label}: {len(groups)} group(s) of agents with the same outcome on every one of the "
                          f"{m.n_tasks} tasks ({shown}{' ...' if len(groups) > 3 else ''}): the same submission under "
                          "two names counts as two sources; keep one row of each", InputWarning, stacklevel=3)
    return m


#: identical rows are flagged only from this many tasks on (a toy matrix's agents may agree by chance)
MIN_TASKS_FOR_COPIES = 50


def _require_observed(m: ResponseMatrix, path: Path) -> ResponseMatrix:
    """Return ``m``, or raise DataError when every cell of it is missing (a bank with no outcome at all)."""
    if m.missing is not None and m.missing.all():
        raise DataError(f"no observed outcome in {path}: every cell is missing ({m.n_agents} agents x {m.n_tasks} "
                        "tasks, all blank or null); give at least one 0/1 outcome (a blank cell, null or absent "
                        "pair is a missing run)")
    return m
