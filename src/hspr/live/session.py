"""The session file and :class:`LiveSession`: the journal of a live session, read and written
under a lock (the package docstring, :mod:`hspr.live`, describes the file)."""

from __future__ import annotations

import contextlib
import datetime as _dt
import errno
import glob
import json
import os
import re
import shlex
import shutil
import tempfile
import time
import warnings
from collections.abc import Callable
from contextlib import AbstractContextManager, contextmanager
from dataclasses import replace
from pathlib import Path

import numpy as np

from .. import __version__, journal
from ..data.banks import BANKS, bank_of_rows, foreign_datasets
from ..data.matrix import DataError, ResponseMatrix
from ..errors import InputWarning, brief, held_warnings, shorten
from ..fileio import OS_FIXES, dangling_link, dangling_words, descriptor_of, readable_name, signals_held, special_file_kind, stamped_beside
from ..fitcache import CacheLocationError, entry_path, method_code
from ..harness import HarnessRead, read_outcomes
from ..journal import LiveSessionError, session_lock
from ..methods import LIVE_DEFAULT
from ..outcomes import describe_outcome, outcome
from ..session import BudgetError, FittedModel, ScoreEstimate, check_budget, check_seed, defined_outside_hspr, trajectory, whole_number
from ..stopping import WidthBelow, live_rule
from .setup import (
    _changed_bank_cause,
    _check_interval,
    _hide_checked,
    _make_method,
    _method_settings,
    changed_settings,
    check_agent_label,
    check_stop_width,
    fit_model,
    hide_agent,
    load_session_bank,
)
from .status import IngestResult, LiveStatus
from .text import agents_differ, did_you_mean, near_matches, parse_outcome, random_draws_caveat, task_argument

SESSION_FORMAT = journal.FORMAT


SESSION_VERSION = journal.VERSION


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


def _identity(doc: dict) -> tuple:
    """What tells one session file from another written at the same path: its random id (files
    written before ids existed: none), creation time, bank digest, method, budget and seed."""
    return (doc.get("id"), doc.get("created"), doc["bank"].get("digest"), json.dumps(doc["method"], sort_keys=True),
            doc["budget"], doc["seed"])


def _real(path: Path) -> Path:
    """The file a session path names, symlinks followed: every process then locks and writes the
    same file, however it was reached."""
    return Path(os.path.realpath(path))


def _label_ok(label) -> bool:
    """Whether a session header's ``agent`` is a label ``start`` would take (:func:`check_agent_label`) and as
    it stores it: a hand-edited header put an escape sequence on the terminal through `status` (a hostile
    re-trial)."""
    try:
        return check_agent_label(label) == label
    except LiveSessionError:
        return False


def _read_doc(path: Path) -> journal.JournalFile:
    """Read and check a session file (journal or legacy, :mod:`hspr.journal`); the fields a hand
    edit can break are checked one by one, with a message that names the field."""
    jf = journal.read(path)
    for _ in range(20):  # a reader takes no lock: an end torn or cut may be another process's append in flight (a
        # trial saw 29 of 730 records); read again while the file grows, up to ~1 s
        if not (jf.torn or any(last for *_, last in jf.cut_changes)):
            break
        time.sleep(0.05)
        again = journal.read(path)
        if again.size == jf.size and again.torn == jf.torn:
            break
        jf = again
    doc = jf.doc
    for key in ("bank", "method", "budget", "seed", "events"):
        if key not in doc:
            raise LiveSessionError(f"{path}: session file lacks {key!r}")
    for key in ("budget", "seed"):  # a re-trial: 8.0 (a JSON tool's rewrite, which the checksum accepts) was refused
        if isinstance(doc[key], float) and doc[key].is_integer():
            doc[key] = int(doc[key])
    # hand-edited files: every field of the right kind, or a message that names it
    expect = [
        ("bank", isinstance(doc["bank"], dict) and isinstance(doc["bank"].get("digest"), str)
         and all(isinstance(doc["bank"].get(k), (str, type(None))) for k in ("name", "matrix"))
         and (doc["bank"].get("tasks") is None or (isinstance(doc["bank"]["tasks"], list)
                                                   and all(isinstance(t, str) for t in doc["bank"]["tasks"])))
         and isinstance(doc["bank"].get("missing_as_zero", True), bool)  # a hostile trial: [] gave a traceback
         and (doc["bank"].get("hidden") is None or isinstance(doc["bank"]["hidden"], str)),
         'an object with a "digest" string, "name" / "matrix" strings, "tasks" null or a list of ids, '
         '"missing_as_zero" true or false and "hidden" null or an agent id'),
        ("agent", doc.get("agent") is None or _label_ok(doc["agent"]),
         "a label of the agent (one line of visible text, at most 200 characters), or null"),
        ("method", isinstance(doc["method"], dict) and isinstance(doc["method"].get("name"), str),
         'an object with a "name" string'),
        ("events", isinstance(doc["events"], list), "a list of events"),
        ("budget", isinstance(doc["budget"], int) and not isinstance(doc["budget"], bool) and doc["budget"] >= 1,
         "a whole number >= 1"),
        ("seed", isinstance(doc["seed"], int) and not isinstance(doc["seed"], bool) and doc["seed"] >= 0,
         "a whole number >= 0"),
    ]
    for key, ok, what in expect:
        if not ok:
            raise LiveSessionError(f"{path}: session field {key!r} must be {what}, got {doc[key]!r}: the file is "
                                   "corrupt or hand-edited; restore it or start a new session")
    try:
        if doc.get("stop_width_pp") is not None:
            WidthBelow(doc["stop_width_pp"])
    except ValueError as exc:  # a re-trial: the advice ('give none to status') was refused by this same check
        raise LiveSessionError(f"{path}: the session's stop width{str(exc).removeprefix('stop width')}: the file is "
                               "hand-edited or damaged; set the last \"stop_width\" line's \"pp\" (or the header's "
                               "\"stop_width_pp\" when there is no such line) to a number of percentage points or "
                               "null, deleting that line's \"crc\" field") from None
    return jf


def relink_matrix(path: str | Path, matrix: str | Path) -> tuple[str, list[str]]:
    """Point a session at the new place of its bank matrix file.

    The file (or bank folder) must hold the same bank: its digest, after the session's
    missing-cell rule and task subset, must equal the one the session was made for. A
    ``matrix`` record is appended to the journal (:func:`hspr.journal.matrix_record`; a
    version-1 file is rewritten as a journal); nothing else changes, and nothing is written
    when the session already names that path.

    Returns
    -------
    (new absolute path, warnings): a torn last record moved aside by the append is named.

    Raises
    ------
    LiveSessionError
        The session uses a bundled bank, the file holds another bank, or the session file cannot
        be read or written.
    DataError, OSError
        The new matrix file cannot be read.
    """
    path = _real(Path(path))
    new = str(Path(matrix).resolve())
    _read_doc(path)  # a missing or broken session file is named before a lock file is made beside it
    if Path(new).is_file() and os.path.samefile(new, path):
        raise LiveSessionError(f"--matrix {matrix} is the session file itself; give the bank's matrix file (the "
                               "CSV or folder the session was started with, at its new place)")
    with session_lock(path):
        jf = _read_doc(path)
        b = jf.doc["bank"]
        if not b.get("matrix"):
            raise LiveSessionError(f"{path}: the session uses the bundled bank {b.get('name')!r}, which ships with "
                                   "hspr; relink is for a session made with --matrix")
        with held_warnings() as caught:  # said as before; read for the cause of a changed digest
            warnings.simplefilter("always", InputWarning)
            mat = load_session_bank(None, new, b.get("missing_as_zero", True), b.get("tasks"))
            if b.get("hidden") is not None:
                mat = _hide_checked(mat, b, f"{matrix}")[0]
        if mat.digest() != b["digest"]:
            raise LiveSessionError(
                f"{matrix}: holds another bank (digest {mat.digest()[:16]}..., {mat.n_agents} agents x "
                f"{mat.n_tasks} tasks) than the session's (digest {b['digest'][:16]}..., {b.get('n_agents')} x "
                f"{b.get('n_tasks')}){_changed_bank_cause(caught, mat, b)}; relink only to the moved or copied file of "
                "the same bank")
        if b["matrix"] == new:
            return new, []
        try:
            if jf.version == SESSION_VERSION:
                journal.append(path, [journal.matrix_record(new, _now())], jf.size)
            else:
                journal.write_new(path, dict(jf.doc, bank=dict(b, matrix=new)))
        except OSError as exc:
            raise LiveSessionError(f"{path}: cannot save the session ({exc.strerror or exc}); the file is unchanged") from None
    return new, [_torn_moved(jf, path)] if jf.torn and jf.version == SESSION_VERSION else []


#: start of the warning about a torn last record (:class:`LiveSession`)
TORN_WARNING = "the session file ended in"


#: how the warning that the stop width is below the forecast final width begins (start and status say it;
#: record and ingest do not repeat it after every outcome: a trial counted 24 copies in one run)
UNREACHABLE_STOP = "the stop width"


#: how the warning for a change the file holds only in part begins (:meth:`LiveSession._cut_warnings`)
CUT_WARNING = "a change to the session (from line"


#: how the warning for asked tasks whose records the file lost begins (:meth:`LiveSession._cut_warnings`)
LOST_WARNING = "tasks asked but neither recorded nor pending:"


def _torn_record(jf: journal.JournalFile) -> str:
    """How a warning names the file's torn last record: with its task id when that survived."""
    task, n = jf.torn_task, jf.torn_batch
    which = f"an incomplete record for task {task!r}" if task else "an incomplete record"
    return which + (f", the first of a change of {n} records (an ingest?), none of which is in the file" if n and n > 1
                    else "")


def _torn_moved(jf: journal.JournalFile, path: Path) -> str:
    """The warning once :func:`hspr.journal.append` has moved a torn last record's bytes aside."""
    return (f"{TORN_WARNING} {_torn_record(jf)}, which was ignored; its bytes were moved to "
            f"{journal.torn_path(path).name}")


# ---------------------------------------------------------------------- the session
#: the longest name suffix of a file kept beside a session (piped outcomes, `hspr live ingest -`; a replaced
#: session's copy and the lock are shorter): a session's name leaves room for it
_LONGEST_COMPANION = ".stdin-20261206T140747-99.json"


def _check_room(path: Path) -> None:
    """LiveSessionError, before any fit, when the session file cannot be written where ``path`` says:
    a read-only disk, a full one, a folder without write permission (re-trials: each was refused once
    the method had been fitted, minutes on a large bank, and a full disk left a lock file behind).
    Probed with a small temporary file (4 KiB, about a new session's size) in ``path``'s folder, or in
    its nearest existing parent when the folder is still to be made; nothing is left behind. An existing folder
    must also be readable, and the file's name short enough for the files kept beside it."""
    folder = next((p for p in path.parents if p.is_dir()), None)
    if folder is None:
        return
    try:
        name_max, path_max = os.pathconf(folder, "PC_NAME_MAX"), os.pathconf(folder, "PC_PATH_MAX") - 1
    except (OSError, ValueError, AttributeError):  # pragma: no cover - no pathconf (Windows) or no such limit
        name_max, path_max = 255, 4095
    extra = len(_LONGEST_COMPANION)
    if len(os.fsencode(path.name)) + extra > name_max:  # a trial: 251 characters were refused for the lock, after the fit
        raise LiveSessionError(f"{path}: the session file's name is {len(os.fsencode(path.name))} bytes long, and the "
                               f"files kept beside it add up to {extra} more (e.g. <name>{_LONGEST_COMPANION}), where "
                               f"this file system allows {name_max}: give a --session name of at most "
                               f"{name_max - extra} bytes")
    if len(os.fsencode(str(path))) + extra > path_max:  # a trial: `ingest -` then lost what was piped in
        raise LiveSessionError(f"{path}: the session file's path is {len(os.fsencode(str(path)))} bytes long, and the "
                               f"files kept beside it add up to {extra} more (e.g. <name>{_LONGEST_COMPANION}), where "
                               f"a path may have {path_max}: give a --session path of at most {path_max - extra} bytes")
    try:
        with tempfile.TemporaryFile(dir=folder) as fh:
            fh.write(b"\0" * 4096)
            fh.flush()
            os.fsync(fh.fileno())
    except OSError as exc:
        fix = ("the file system is read-only: give a --session in a writable folder" if exc.errno == errno.EROFS else
               "fix the folder's permissions, or give a --session in another folder" if exc.errno in (errno.EACCES,
                                                                                                     errno.EPERM) else
               f"{OS_FIXES.get(exc.errno, 'fix the permissions')}, or give a --session in another folder")
        raise LiveSessionError(f"{path}: cannot write a session in {folder} ({exc.strerror or exc}); {fix}") from None
    if folder == path.parent and not os.access(folder, os.R_OK | os.X_OK):
        # a trial: a folder that could be written but not read passed the probe, and the session was written after the
        # fit, then refused (its folder is opened to make each change durable)
        try:  # a re-trial: a folder of another owner was told `chmod u+rx`, which only its owner can run
            own = folder.stat().st_uid == os.getuid()
        except (OSError, AttributeError):  # pragma: no cover - no getuid (Windows)
            own = True
        fix = "fix the folder's permissions (chmod u+rx)" if own else "ask the folder's owner to let you read it"
        raise LiveSessionError(f"{path}: cannot read the folder {folder}, which a session needs (each change is made "
                               f"durable through it); {fix}, or give a --session in another folder")


def refuse_unfit_session_path(path: str | os.PathLike) -> None:
    """LiveSessionError when ``path`` cannot be a session file: ``-`` or a descriptor path (``/dev/stdout``: later
    calls open a session by its path), or an existing device, named pipe or socket (through links: opening a named
    pipe waits for a writer for ever; a hostile trial, through ``hspr live start --force`` and the API alike).
    ``hspr live start`` runs it before the bank is fitted, :meth:`LiveSession.create` before the file is made."""
    text = os.fspath(path)
    if text == "-" or descriptor_of(text) is not None:
        raise LiveSessionError(f"{text} is a stream, not a file: a session is a file that later commands open by its "
                               "path; give a file name such as agent.hspr")
    kind = special_file_kind(text)
    if kind is not None:
        if os.path.islink(text):  # the path given, and what it leads to
            text = f"{text} (a link to {os.path.realpath(text)})"
        raise LiveSessionError(f"{text} is {kind}, not a file: a session is a file; give another path (--force, or "
                               "overwrite=True from Python, replaces a session file, not this)")


def _refuse_other_file(path: Path) -> None:
    """Refuse to make a session where ``path`` is a file that holds something else than a session (a bank, a
    replay's results, notes): ``overwrite`` (``--force``) replaces a session, not another file (a hostile trial:
    ``start --force --session bank.csv`` made the bank a session). An empty file, or one of white space only (its
    re-trial), holds nothing and may be replaced.

    A named pipe, socket or device (through links) is refused too, ``overwrite`` or not: opening a named pipe waits
    for a writer for ever (a hostile trial, through ``hspr live start --force``; the API did the same).

    Raises LiveSessionError."""
    from ..harness import is_session_file

    refuse_unfit_session_path(path)
    try:
        if not path.is_file() or is_session_file(path):
            return
        with path.open("rb") as fh:
            head = fh.read(1 << 16)
            if not head.strip() and not fh.read(1):
                return
    except OSError:  # the caller's own open reports an unreadable path
        return
    text = head[:4096].decode("utf-8", errors="replace")
    # its first line that shows (a re-trial: a file of a no-break space, or blank lines first, showed '')
    first = next((line.strip() for line in text.splitlines() if line.strip()), text[:60])
    raise LiveSessionError(f"{path} exists and is not an hspr live session (its first line: {shorten(first, 60)!r}); "
                           "--force replaces a session file only: give another --session path")


class LiveSession:
    """A method session persisted in a file; see the module docstring.

    Create one with :meth:`create` or reopen one with :meth:`open`; do not call the
    constructor directly.

    Attributes
    ----------
    path : Path
        The session file.
    matrix : ResponseMatrix, shape (n_agents, n_tasks)
        The bank the method is fitted on (without the hidden agent's row, if any).
    hidden : ResponseMatrix or None, shape (1, n_tasks)
        The row of the agent the session hides from the fit (``create(hide=...)``, ``hspr live
        start --hide``), whose outcomes :meth:`simulate` records; None for a session of a real agent.
    model : FittedModel
    session : Session
        The method session, in the state the event log describes.
    on_save : callable or None
        Called with no argument the moment a change is saved in the file, before the call that made
        it returns (the command line notes it, so a Ctrl-C in between is told the change was saved).
    """

    def __init__(self, path: Path, file: journal.JournalFile, matrix: ResponseMatrix, model: FittedModel,
                 hidden: ResponseMatrix | None = None) -> None:
        self.path = Path(path)
        self.on_save: Callable[[], None] | None = None
        self.hidden = hidden
        self.replaced: Path | None = None  # where create(overwrite=True) moved the file it replaced
        self._file = file
        self.doc = file.doc
        self.matrix = matrix
        self.model = model
        self._task_set = frozenset(model.tasks)
        # the header never changes, so whether its log can be trusted is decided once
        self._trusted = self.doc.get("hspr_version") == __version__ and self.doc.get("code") == method_code(self.doc["method"]["name"])
        self._replay()

    # -- construction ---------------------------------------------------------------
    @classmethod
    def create(
        cls,
        path: str | Path,
        budget: int,
        *,
        bank: str | None = None,
        matrix: str | Path | None = None,
        method: str = LIVE_DEFAULT,
        config=None,
        seed: int = 0,
        stop_width: float | None = None,
        missing_as_zero: bool = True,
        overwrite: bool = False,
        tasks=None,
        input_files: dict[str, str | Path] | None = None,
        announce: Callable[[str], AbstractContextManager] | None = None,
        hide: str | None = None,
        on_save: Callable[[], None] | None = None,
        agent: str | None = None,
    ) -> LiveSession:
        """Fit ``method`` on every row of the bank (but ``hide``'s) and write a new session file.

        Parameters
        ----------
        path : str or Path
            The session file to write.
        budget : int
            Tasks to run at most (0 < budget <= n_tasks).
        bank : str, optional
            Bundled bank name (:data:`hspr.data.banks.BANKS`: ``lite``, ``verified``, ``full``,
            ``pro``, ``multimodal``, ``terminal-bench``); default ``verified`` unless ``matrix`` is
            given.
        matrix : str or Path, optional
            The path of the user's response matrix (any file or folder :func:`hspr.data.load_matrix`
            reads) instead. A path, not a ResponseMatrix: every :meth:`open` (each ``hspr live``
            command) reads it again (a slow file is kept parsed in the fit cache per version of the file:
            :func:`~hspr.live.setup.read_bank_file`) and refuses it once it changed; an open LiveSession keeps the
            bank it read (save one built in memory with :func:`hspr.data.build.write_wide_csv`).
        method : str
            A registered method name (default :data:`hspr.methods.LIVE_DEFAULT`, ``hspr_robust``).
        config : HSPRConfig or dict, optional
            The method's settings (for HSPR, :class:`HSPRConfig` fields); default settings if None.
        seed : int
            The session seed (tie-breaking among equally informative tasks).
        stop_width : float, optional
            Stop once the 90 % interval is narrower than this many percentage points.
        missing_as_zero : bool
            Fill missing cells of ``matrix`` with 0 (leaderboard convention).
        overwrite : bool
            Replace an existing file at ``path``; the old file is kept beside it as
            ``<name>.replaced-<YYYYmmddTHHMMSS>`` (:attr:`replaced`).
        tasks : list of str, optional
            Score over this subset of the bank's tasks only (e.g. the 484 of 500 Verified tasks
            a leaderboard evaluates); stored in the session file.
        input_files : dict, optional
            The files the session was started from, by option (e.g. ``{"--tasks": "subset.txt"}``);
            their absolute paths are stored so that later outputs never overwrite them
            (:meth:`input_paths`).
        announce : callable, optional
            A context manager factory wrapping the method's fit when it is not cached
            (:func:`fit_model`).
        hide : str, optional
            An agent id of the bank to leave out of the fit, for a trial of the loop without an
            agent: :meth:`simulate` answers each task from its row, and :meth:`status` gives its
            true score (:func:`hide_agent`). Stored in the session file.
        on_save : callable, optional
            Called with no argument once the file is written (as :attr:`on_save` for later changes).
        agent : str, optional
            A label for the agent the session scores (e.g. its leaderboard id), stored in the
            session file and shown by :meth:`status` (:func:`hspr.live.setup.check_agent_label`).

        Returns
        -------
        LiveSession

        Raises
        ------
        LiveSessionError
            If the file exists (and not ``overwrite``), the method / settings are unknown,
            ``hide`` is not an agent of the bank, or ``agent`` is not one line of text.
        DataError, BudgetError
            For an unreadable bank, a bank the method refuses (pass rates for a method that takes
            0/1 outcomes, missing cells for one that cannot fit them), or an invalid budget.
        HsprError
            For a seed that is not a whole number >= 0.
        """
        if not isinstance(path, (str, os.PathLike)) or not str(path).strip():
            raise LiveSessionError("the session path is empty or not a path; give a file name, e.g. --session run.hspr")
        if input_files is not None and not isinstance(input_files, dict):
            raise LiveSessionError(f"input_files is a dict of description -> path (e.g. {{'--config': 'c.json'}}), got "
                                   f"{type(input_files).__name__}")
        path = Path(path)
        blocker = next((p for p in path.parents if p.exists() and not p.is_dir()), None)
        if blocker is not None:
            raise LiveSessionError(f"{path}: {blocker} is a file, not a folder; choose a --session path in a folder")
        if path.is_dir():
            raise LiveSessionError(f"{path} is a folder; give a file name for --session, e.g. {path / 'run.hspr'}")
        dangling = dangling_link(path.parent)
        if dangling is not None:  # a trial: the link's target was made, which for a disk not mounted is the wrong disk
            raise LiveSessionError(f"{path}: the folder {dangling_words(dangling)}; make that folder or fix the link, or "
                                   "give another --session")
        if path.is_symlink() and not path.exists() and not Path(os.path.realpath(path)).parent.is_dir():
            # a re-trial: --session a link to /nonexistent/x.hspr made /nonexistent
            raise LiveSessionError(f"{path} is a symbolic link to {os.readlink(path)}, whose folder does not exist (a "
                                   "disk not mounted?); make that folder or fix the link, or give another --session")
        refuse_unfit_session_path(path)  # a re-trial: '/dev/stdout' piped was called a folder that does not exist
        path = _real(path)
        _refuse_other_file(path)
        if path.exists() and not overwrite:
            raise LiveSessionError(
                f"{path} already exists; choose another --session path or pass --force to replace it (from Python: "
                "another path, or overwrite=True)"
            )
        _check_room(path)
        agent = check_agent_label(agent, "agent")  # before the fit, as the seed
        seed = check_seed(seed)  # before the fit, as start() checks it (1.7 was stored as 1, -1 called the file corrupt)
        if matrix is None and bank is None:
            bank = "verified"
        if matrix is not None and not isinstance(matrix, (str, os.PathLike)):
            raise LiveSessionError(f"matrix must be the path of a response-matrix file, got {type(matrix).__name__}: a "
                                   "session reopens its bank on every call; save the matrix first, e.g. "
                                   "hspr.data.build.write_wide_csv(matrix, 'bank.csv'), and pass 'bank.csv'")
        if isinstance(tasks, (str, bytes, os.PathLike)):  # an API trial: one id was split into its characters
            raise LiveSessionError(f"tasks must be a list of task ids, got one {type(tasks).__name__} ({str(tasks)[:60]!r}): "
                                   "give [id] for one task, or read a task list file with hspr.data.io.read_task_list")
        try:
            settings = _method_settings(method, config)
            _make_method(method, settings)
        except (TypeError, ValueError) as exc:
            if isinstance(exc, LiveSessionError):
                raise
            where = (input_files or {}).get("--config")
            raise LiveSessionError(f"{f'--config {where}: ' if where else ''}settings for method {method!r}: {exc}") from None
        mat = load_session_bank(bank if matrix is None else None, matrix, missing_as_zero, tasks)
        hidden = None
        if isinstance(hide, str) and hide.strip() in mat.agents and hide not in mat.agents:
            hide = hide.strip()  # as `record` strips a task id (a trial: ' A' was refused, ' task' recorded)
        if hide is not None:
            mat, hidden = hide_agent(mat, hide)
        b = check_budget(budget, mat.n_tasks)
        if b == 0:
            raise BudgetError("budget 0: a live session needs at least 1 task")
        check_stop_width(stop_width, "--stop-width")
        _check_interval(method, stop_width)
        doc = {
            "format": SESSION_FORMAT,
            "version": SESSION_VERSION,
            "hspr_version": __version__,
            "code": method_code(method),
            "id": os.urandom(16).hex(),
            "created": _now(),
            "bank": {
                "name": bank if matrix is None else readable_name(bank or Path(matrix).stem),
                "matrix": None if matrix is None else str(Path(matrix).resolve()),
                "missing_as_zero": bool(missing_as_zero),
                "digest": mat.digest(),
                "n_agents": mat.n_agents,
                "n_tasks": mat.n_tasks,
                "tasks": None if tasks is None else list(mat.tasks),
                "trials": mat.trials,
                # a trial session only (a real agent's file is as before); the hidden row's digest: the bank's covers
                # the sources only, and a hostile trial changed the hidden row unseen (its outcomes, its true score)
                **({} if hide is None else {"hidden": hide, "hidden_digest": hidden.digest()}),
            },
            "method": {"name": method, "config": settings},
            **({} if agent is None else {"agent": agent}),  # a session without a label: the file is as before
            "budget": b,
            "seed": seed,
            "stop_width_pp": None if stop_width is None else float(stop_width),
            # a stream (`--tasks <(...)`) is no file to keep outputs off: its resolved path never existed (a re-trial)
            "input_files": {str(k): str(Path(v).resolve()) for k, v in (input_files or {}).items()
                            if v is not None and descriptor_of(v) is None},
            "events": [],
        }
        live = cls(path, journal.JournalFile(doc, SESSION_VERSION, 0), mat,
                   fit_model(method, settings, mat, announce=announce), hidden)
        path.parent.mkdir(parents=True, exist_ok=True)
        with session_lock(path):
            if path.exists() and not overwrite:  # made by another `start` while this one fitted
                raise LiveSessionError(f"{path} was created by another process while this one fitted the method; "
                                       "nothing was written: choose another --session path, or pass --force to "
                                       "replace it")
            _refuse_other_file(path)  # written by another process while this one fitted
            keep = None
            with signals_held():  # the old file kept and the new one written, or neither (a Ctrl-C waits)
                try:
                    if path.exists():  # --force: the old file is kept beside it (a hard link, else a copy), never deleted
                        keep = stamped_beside(path, "replaced")  # two --force in one second: never an earlier copy
                        try:
                            os.link(path, keep)
                        except OSError:
                            shutil.copy2(path, keep)
                        live.replaced = keep
                    journal.write_new(path, doc)  # atomic: on failure the old file is still at ``path``
                    if on_save is not None:  # said with the write, before a held interrupt is handled (a re-trial)
                        on_save()
                except OSError as exc:
                    if keep is not None:  # nothing was replaced: no copy left beside it (a trial on a full disk)
                        keep.unlink(missing_ok=True)
                        live.replaced = None
                    if exc.filename is None:
                        exc.filename = str(path)
                    raise
            live._file = journal.read(path)
        return live

    @classmethod
    def open(cls, path: str | Path, announce: Callable[[str], AbstractContextManager] | None = None,
             reading: Callable[[str | None], AbstractContextManager] | None = None) -> LiveSession:
        """Reopen a session file: refit on the bank (``announce``: as :func:`fit_model`'s, when the
        fit is not cached) and replay its events. ``reading``, given the bank's file or folder (None
        for a bundled bank), is entered while the bank is loaded (the CLI's spinner while a folder is
        walked again: a hostile trial waited 8.6 s on every `next` without a word).

        Raises
        ------
        LiveSessionError
            If the file is missing or not a session file, the bank cannot be loaded, its digest
            differs from the recorded one, or an event cannot be replayed (a corrupt file). A
            replayed ask that chooses other tasks than logged is not an error: the logged ones
            are kept and :attr:`LiveStatus.warnings` says so.
        """
        if not isinstance(path, (str, os.PathLike)) or not str(path).strip():
            raise LiveSessionError("the session path is empty or not a path; give the file `hspr live start` made, "
                                   "e.g. --session run.hspr")
        path = Path(path)
        path = _real(path)
        if path.is_dir():
            raise LiveSessionError(f"{path} is a folder, not a session file")
        jf = _read_doc(path)
        doc = jf.doc
        b = doc["bank"]
        try:
            # input warnings were said by `start`; here they are read only for the cause of a changed digest
            with held_warnings(lambda category: not issubclass(category, InputWarning)) as caught, \
                    (reading or (lambda _: contextlib.nullcontext()))(b.get("matrix")):
                warnings.simplefilter("always", InputWarning)
                mat = load_session_bank(b.get("name"), b.get("matrix"), b.get("missing_as_zero", True),
                                        b.get("tasks"))
            hidden = None
            if b.get("hidden") is not None:
                mat, hidden = _hide_checked(mat, b, str(path))
        except (DataError, OSError) as exc:
            moved = (f"; if the file moved, point the session at its new place: hspr live relink --matrix NEW "
                     f"--session {path}" if b.get("matrix") and not Path(b["matrix"]).exists() else "")
            if isinstance(exc, OSError):  # a trial: "([Errno 13] Permission denied: '...')", with no fix
                why = f"{exc.filename or b.get('matrix')}: {exc.strerror or exc}; {OS_FIXES.get(exc.errno, 'fix the path')}"
            else:
                why = str(exc)
            raise LiveSessionError(f"{path}: cannot load the session's bank ({why}){moved}") from None
        if mat.digest() != b["digest"]:
            where = b.get("matrix") or f"bundled bank {b.get('name')!r}"
            # a re-trial: a folder of the bank made unreadable read as another bank, its cause unsaid
            cause = _changed_bank_cause(caught, mat, b)
            raise LiveSessionError(
                f"{path}: the session was made for bank digest {b['digest'][:16]}... but {where} now has digest "
                f"{mat.digest()[:16]}... ({mat.n_agents} agents x {mat.n_tasks} tasks; the session had "
                f"{b.get('n_agents')} x {b.get('n_tasks')}){cause}"
                + ("" if cause.startswith("; reading it") else
                   "; a session for a different bank is refused: restore the original bank, or start a new session "
                   f"and carry this one's outcomes over: hspr live ingest {path} --session NEW")
            )
        try:
            model = fit_model(doc["method"]["name"], doc["method"].get("config") or {}, mat, announce=announce)
        except (TypeError, ValueError) as exc:
            raise LiveSessionError(f"{path}: cannot fit the session's method: {exc}") from None
        return cls(path, jf, mat, model, hidden)

    # -- event replay ----------------------------------------------------------------
    def _replay(self) -> None:
        """Rebuild the method session from the bank fit and the whole event log."""
        self.session = None
        self.warnings: list[str] = []
        if self._file.torn:
            task = self._file.torn_task
            n = self._file.torn_batch
            again = ("; if the ingest that wrote it had printed its result, ingest that input again" if n and n > 1 else
                     f"; if the command on {task} that wrote it (record, record --correct, withdraw or ingest) had "
                     "printed its result, run it again" if task else "")
            self.warnings.append(f"{TORN_WARNING} {_torn_record(self._file)} (a process killed while writing it, "
                                 "or a damaged file) and "
                                 f"it was ignored{again}; the next change moves its bytes to "
                                 f"{journal.torn_path(self.path).name}")
        if not self._trusted:  # a hostile trial: after an upgrade the interval moved without a word
            self.warnings.append(f"this session was written by other code ({self._code_change()}): its estimate and "
                                 "interval are computed by this code and can differ from what it showed before; the "
                                 "recorded outcomes are unchanged")
        self._tells: dict[str, dict] = {}
        self._errors: dict[str, dict] = {}
        self._corrected: dict[str, list] = {}  # task -> the outcomes `record --correct` replaced
        self._withdrawn: dict[str, list] = {}  # task -> the outcomes `live withdraw` took back
        self._replayed: list[tuple] = []  # the asks and tells the method session was restored from
        self._restore(self.doc["events"], 0)
        self.warnings += self._cut_warnings()
        if self.session.caveat:
            self.warnings.append(self.session.caveat)

    def _asked_in_log(self, before_line: int | None = None) -> dict[str, None]:
        """The tasks of the log's ask events, in order (an ordered set); with ``before_line``, only
        of the events on file lines before it."""
        lines = self._file.event_lines if before_line is not None else ()
        events = self.doc["events"] if before_line is None else [ev for ev, at in zip(self.doc["events"], lines)
                                                                   if at < before_line]
        return dict.fromkeys(t for ev in events if isinstance(ev, dict) and ev.get("type") == "ask"
                             for t in ev.get("tasks") or ())

    def _told_after(self, line: int, there: int) -> int:
        """How many tasks got an outcome after the change that starts on file ``line`` (its ``there`` records
        that are in the file) and had none before its end: the records that change lost, when its input
        was ingested again."""
        told = [(k, ev.get("task")) for k, (ev, at) in enumerate(zip(self.doc["events"], self._file.event_lines))
                if at >= line and isinstance(ev, dict) and ev.get("type") in ("tell", "correct", "error")]
        first = next((k for k, at in enumerate(self._file.event_lines) if at >= line), len(self._file.event_lines))
        end = first + there  # the change's own records: the first `there` events from its line
        before = {ev.get("task") for ev in self.doc["events"][:end] if isinstance(ev, dict)}
        return len({t for k, t in told if k >= end} - before)

    def _cut_warnings(self, after_change: bool = False) -> list[str]:
        """A warning for each change that is in the file only in part (cut at a line end inside an
        ingest: :attr:`hspr.journal.JournalFile.cut_changes`), while it is the last change or tasks
        asked before it still have no outcome (a trial: the warning miscounted later records, then
        vanished with the outcomes still missing; a later ask had dropped them from the pending
        list); and one for asked tasks that are neither recorded, pending nor withdrawn (records
        lost where no count shows it). ``after_change``: this object appended a change since it
        read the file, so no cut is the last change any more."""
        out, named = [], set()
        for line, wrote, there, last in self._file.cut_changes:
            if self._told_after(line, there) >= wrote - there:  # a crash-safety trial: the input was ingested again, but the
                # tasks still pending from an earlier `next` kept the warning for ever
                continue
            waiting = [t for t in self._asked_in_log(before_line=line) if t not in self._tells and t not in self._withdrawn]
            if not (last and not after_change or waiting):
                continue
            still = (f"; {len(waiting)} task(s) asked before it still have no outcome ({', '.join(waiting[:5])}"
                     f"{', ...' if len(waiting) > 5 else ''})" if waiting else "")
            out.append(f"{CUT_WARNING} {line}) wrote {wrote} records, but only {there} are in the "
                       f"file: it was cut (a damaged disk, a restored copy or an edit). The outcomes of the missing "
                       f"records were not recorded{still}: ingest that input again (recorded outcomes are no-ops)")
            named.update(waiting)
        # asked, no outcome, not pending (next re-offers every pending task, so only lost records leave a task so;
        # a re-trial cut the first record of an ingest, the one that counts the change, and nothing was said)
        pending = set(self.pending)
        lost = [t for t in self._asked_in_log()
                if t not in self._tells and t not in pending and t not in self._withdrawn and t not in named]
        if lost:
            out.append(f"{LOST_WARNING} {len(lost)} ({', '.join(lost[:5])}{', ...' if len(lost) > 5 else ''}): the "
                       "session file lost their records (a damaged disk, a restored copy or an edit), and `next` will "
                       "not offer them again; ingest the input that recorded them again, or record them")
        return out

    def _restore(self, events: list, start: int) -> None:
        """Check events ``start``, ``start + 1``, ... of the log and hand them to :meth:`Session.restore`.

        The log is trusted (the method does not re-choose its asks) when the file was written
        by this hspr version and code (:func:`hspr.fitcache.method_code`); otherwise every ask
        is re-chosen and compared with the log.
        """
        replay = []
        told = set(self._tells)
        first_tell: dict[str, str] = {}
        lines = self._file.event_lines

        def where(i: int) -> str:
            return f"event {i}" + (f" (line {lines[i]})" if i < len(lines) else "")

        def line(i: int) -> str:  # the line to fix or delete, as a refusal names it
            return f"line {lines[i]}" if i < len(lines) else "its line"

        # the way out a damaged id has (a hostile trial found none named)
        carry = (f"carry the session's other outcomes into a new one: `hspr live start` on the same bank with another "
                 f"--session NEW, then `hspr live ingest {self.path} --session NEW --skip-unknown`")

        def known(t) -> bool:
            return isinstance(t, str) and t in self._task_set

        def bad_outcome(y) -> str | None:
            """Why ``y`` cannot be an outcome of this bank, or None."""
            rate = self.matrix.trials is not None and isinstance(y, float) and 0 <= y <= 1
            if isinstance(y, (str, bool)) or not (y in (0, 1) or rate):
                return f"outcome {y!r} is not 0 or 1" + (" or a pass rate" if self.matrix.trials else "")
            return None

        for i, ev in enumerate(events, start):
            if not isinstance(ev, dict):
                raise LiveSessionError(f"{self.path}: {where(i)} is {type(ev).__name__} {ev!r}, not an event object: "
                                       f"the session file is corrupt")
            kind = ev.get("type")
            if kind == "ask":
                k, tasks = ev.get("k"), ev.get("tasks")
                if isinstance(k, bool) or not isinstance(k, int) or not isinstance(tasks, list) \
                        or any(not known(t) or t in told for t in tasks):
                    this = line(i)
                    raise LiveSessionError(f"{self.path}: {where(i)} cannot be replayed (ask of {k!r} for {tasks!r}): "
                                           f"the session file is corrupt: keep a copy of the file and delete {this} (an "
                                           "ask records no outcome: nothing is lost)")
                replay.append(("ask", k, tasks))
            elif kind == "tell":
                task, y = ev.get("task"), ev.get("outcome")
                why = "not in the bank" if not known(task) else "told twice" if task in told else bad_outcome(y)
                if why == "told twice":  # a trial: a line copied by hand got no way out
                    first = f", first at {first_tell[task]}" if task in first_tell else ""
                    this = line(i)
                    prev = self._tells.get(task, {}).get("outcome")
                    fix = (f"if {this} repeats the earlier one, delete it" if prev == y or task not in self._tells else
                           f"{this} gives another outcome ({y!r}, the earlier {prev!r}; a hand edit?): delete the wrong "
                           f"one (to change a recorded outcome, `hspr live record {task} <outcome> --correct`)")
                    raise LiveSessionError(f"{self.path}: {where(i)} cannot be replayed (task {task!r}: told twice{first}): "
                                           "the session file is corrupt. hspr never writes a second outcome for a task "
                                           f"(a replaced one is a 'correct' event): {fix}")
                if why:
                    this = line(i)
                    fix = (f"fix the id on {this} in a copy of the file, or {carry}" if why == "not in the bank" else
                           f"keep a copy of the file and fix or delete {this} (deleted, that one outcome is lost)")
                    raise LiveSessionError(f"{self.path}: {where(i)} cannot be replayed (task {task!r}: {why}): the "
                                           f"session file is corrupt: {fix}")
                told.add(task)
                first_tell[task] = where(i)
                replay.append(("tell", task, y))  # Session.tell takes the log's form (Session.logged_outcome: a trials bank's 1 is 1.0)
                self._tells[task] = ev
            elif kind == "correct":
                task, y = ev.get("task"), ev.get("outcome")
                at = next((k for k, r in enumerate(replay) if r[0] == "tell" and r[1] == task), None)
                why = "corrects a task not told before it" if at is None else bad_outcome(y)
                if why:
                    fix = (f"keep a copy of the file and fix or delete {line(i)}; or {carry}" if at is None else
                           f"keep a copy of the file and fix or delete {line(i)} (deleted, the outcome it replaced stays)")
                    raise LiveSessionError(f"{self.path}: {where(i)} cannot be replayed (task {task!r}: {why}): the "
                                           f"session file is corrupt: {fix}")
                replay[at] = ("tell", task, y)
                self._corrected.setdefault(task, []).append(self._tells[task]["outcome"])
                self._tells[task] = {**self._tells[task], "outcome": y, "source": ev.get("source"),
                                     "detail": ev.get("detail"), "corrected_from": ev.get("previous")}
            elif kind == "withdraw":
                task = ev.get("task")
                at = next((k for k, r in enumerate(replay) if r[0] == "tell" and r[1] == task), None)
                if at is None:
                    raise LiveSessionError(f"{self.path}: {where(i)} cannot be replayed (task {task!r}: withdraws a "
                                           f"task not told before it): the session file is corrupt: keep a copy of the "
                                           f"file and fix or delete {line(i)}; or {carry}")
                del replay[at]
                # as if never asked either: the task leaves the logged asks (a later ask's replay would
                # otherwise drop it from the pending tasks or not, by whether anything was asked since)
                replay = [r if r[0] != "ask" or task not in r[2] else ("ask", r[1] - 1, [t for t in r[2] if t != task])
                          for r in replay]
                replay = [r for r in replay if r[0] != "ask" or r[2]]
                told.discard(task)
                self._withdrawn.setdefault(task, []).append(self._tells.pop(task)["outcome"])
                self._corrected.pop(task, None)
            elif kind == "error":
                if not isinstance(ev.get("task"), str):
                    raise LiveSessionError(f"{self.path}: error {where(i)} names no task: the session file is corrupt")
                if not known(ev["task"]):
                    raise LiveSessionError(f"{self.path}: error {where(i)} names task {ev['task']!r}, which is not in "
                                           "the bank: the session file is corrupt")
                self._errors[ev["task"]] = ev
            else:
                this = line(i)
                raise LiveSessionError(f"{self.path}: unknown event type {kind!r} at {where(i)}: written by a newer "
                                       f"hspr? upgrade hspr (pip install -U hspr), or keep a copy of the file and "
                                       f"delete {this}")
        self._replayed.extend(replay)
        try:
            if self.session is None:
                self.session, warnings = self.model.resume(self.doc["budget"], self.doc["seed"], replay, self._trusted)
            else:
                warnings = self.session.restore(replay, trust_log=self._trusted)
        except (KeyError, ValueError, TypeError) as exc:  # BudgetError is a ValueError
            asked = sum(r[1] for r in replay if r[0] == "ask")
            if isinstance(exc, BudgetError) and asked > self.doc["budget"]:  # a hand-edited header
                raise LiveSessionError(f"{self.path}: the log asks {asked} tasks, more than the header's budget of "
                                       f"{self.doc['budget']}: the header's \"budget\" was edited? Put back the budget "
                                       f"the session was started with (at least {asked})") from None
            raise LiveSessionError(f"{self.path}: events {start}..{start + len(events) - 1} cannot be replayed "
                                   f"({exc}): the session file is corrupt") from None
        rewritten = journal.has_rewrite(events)
        if rewritten and self._trusted:
            warnings = []  # asks chosen before a correction or withdrawal are kept as asked: expected
        why = f"the method's code or numerics changed since the session was written ({self._code_change()})"
        if rewritten:
            why += ", or an outcome told before the ask was corrected or withdrawn since"
        self.warnings += [f"{w}: {why}; the logged tasks are kept as asked, later choices may differ"
                          for w in warnings]

    def _code_change(self) -> str:
        """What differs between the code that wrote this session and this code, in words: hspr's version, or
        (the same version) the installed code of hspr or of the package of the session's method (a method-writer
        trial: an edit of its own method was told 'hspr 0.1.0 then, 0.1.0 now')."""
        from ..methods import method_package

        then, name = self.doc.get("hspr_version") or "unknown", self.doc["method"]["name"]
        theirs = method_package(name)
        package = (f"the code of method {name!r} (its package {theirs.split()[0]} or one it builds on)" if theirs
                   else "")
        if then != __version__:
            return f"hspr {then} then, {__version__} now" + (f", or {package}" if package else "")
        return f"{package or 'the installed code of hspr'} changed; hspr {__version__} both times"

    def _sync(self) -> None:
        """Adopt events other processes appended to the file since this object last saw it."""
        if not self.path.exists():
            raise LiveSessionError(f"{self.path}: the session file was removed")
        self._file = _read_doc(self.path)
        disk = self._file.doc
        if _identity(disk) != _identity(self.doc):
            kept = self._replaced_copy()
            where = (f"the session this command opened was kept as {kept}: if the command was meant for that run, "
                     f"repeat it with --session {kept}; if for the new one, repeat it as is"
                     if kept is not None else "if the command was meant for the new session, repeat it")
            raise LiveSessionError(f"{self.path}: the session file was replaced (hspr live start --force?) after this "
                                   f"command opened it; nothing was written to either: {where}")
        mine, theirs = self.doc["events"], disk["events"]
        if theirs[: len(mine)] != mine:
            raise LiveSessionError(
                f"{self.path}: the file's events no longer extend this session's ({len(theirs)} vs {len(mine)}); "
                f"it was rewritten by another session: reopen it"
            )
        new = theirs[len(mine):]
        if journal.has_rewrite(new):
            mine.extend(new)  # a correction or withdrawal changes an outcome told before: rebuild from the start
            self._replay()
        elif new:
            self._restore(new, len(mine))
            mine.extend(new)
        self.doc["stop_width_pp"] = disk.get("stop_width_pp")
        self.doc["bank"] = disk["bank"]  # a relink (hspr live relink) may have moved the matrix

    def _replaced_copy(self) -> Path | None:
        """The ``<name>.replaced-<time>`` copy that ``start --force`` kept of the session this object
        opened (same :func:`_identity`), or None."""
        for kept in sorted(self.path.parent.glob(glob.escape(self.path.name) + ".replaced-*"), reverse=True):
            try:
                if _identity(journal.read(kept).doc) == _identity(self.doc):
                    return kept
            except (LiveSessionError, KeyError, TypeError):
                continue
        return None

    @contextmanager
    def _transaction(self):
        """Lock, catch up with the file, run the change, save; on failure restore from disk."""
        with session_lock(self.path):
            self._sync()
            n_before = len(self.doc["events"])
            stop_before = self.doc.get("stop_width_pp")
            try:
                yield
                records = list(self.doc["events"][n_before:])
                if self.doc.get("stop_width_pp") != stop_before:
                    records.append(journal.stop_record(self.doc.get("stop_width_pp")))
                if records:
                    try:
                        if self._file.version == SESSION_VERSION:
                            with signals_held():  # the change and its note together: an interrupt before them saved
                                # nothing, one during them is handled after both (a new-user trial: an interrupt that
                                # saved nothing could not say so)
                                journal.append(self.path, records, self._file.size)
                                if self.on_save is not None:
                                    self.on_save()
                            if self._file.torn:  # append moved the torn bytes aside: say where
                                self.warnings = [w for w in self.warnings if not w.startswith(TORN_WARNING)] + [
                                    _torn_moved(self._file, self.path)]
                            # said as of after this change (a trial: a repaired cut was still reported by the
                            # command that repaired it)
                            self.warnings = [w for w in self.warnings if not w.startswith((CUT_WARNING, LOST_WARNING))] \
                                + self._cut_warnings(after_change=True)
                        else:  # a version-1 file becomes a journal
                            with signals_held():
                                journal.write_new(self.path, self.doc)
                                if self.on_save is not None:
                                    self.on_save()
                    except journal.UnlockedWriteError as exc:  # the file on disk is unchanged
                        raise LiveSessionError(f"{self.path}: {exc}: another process wrote to the session without "
                                               "hspr's lock (a hard link or second name for the file? hspr locks by "
                                               "path); nothing was saved: reach the session by one path only, "
                                               "then repeat the command") from None
                    except OSError as exc:  # full disk, read-only folder: the file on disk is unchanged
                        fix = OS_FIXES.get(exc.errno, "free space or fix permissions")  # a trial: ulimit -f was 'free space'
                        raise LiveSessionError(f"{self.path}: cannot save the session ({exc.strerror or exc}); the "
                                               f"file is unchanged and nothing was saved (no outcome, no new ask): {fix}, "
                                               "then repeat the command") from None
            except BaseException:
                del self.doc["events"][n_before:]
                self.doc["stop_width_pp"] = stop_before
                self._replay()
                raise

    # -- protocol ----------------------------------------------------------------------
    @property
    def tasks(self) -> tuple[str, ...]:
        """Task ids of the bank, in column order."""
        return self.model.tasks

    @property
    def pending(self) -> list[str]:
        """Tasks asked and not yet recorded, in the order asked."""
        return self.session.pending

    def asked(self) -> tuple[str, ...]:
        """Every task this session has asked (``next``; in the order of the log's ask events), pending
        or recorded since, withdrawn or not. ``hspr live next --out`` writes only such ids, so it
        replaces only a file of them (:func:`hspr.idformat.is_id_text`)."""
        return tuple(self._asked_in_log())

    @property
    def recorded(self) -> dict[str, float]:
        """Outcomes recorded so far, task id -> 0/1 (a pass rate in [0, 1] on a bank of repeated
        trials), in the order told."""
        return {t: ev["outcome"] for t, ev in self._tells.items()}

    @property
    def needs_rerun(self) -> dict[str, str]:
        """Tasks whose last harness run errored and that have no outcome yet, task id -> the
        harness's detail. The ones the session asked stay pending and are asked again first; one it
        did not ask (an error in an ingested file, e.g. carried over from another session) is only
        listed here, for a re-run recorded by hand or ingested (a trial took it for pending)."""
        return {t: ev.get("detail", "") for t, ev in self._errors.items() if t not in self._tells}

    @property
    def budget(self) -> int:
        """The number of tasks the session may ask (its ``start``'s ``--budget``)."""
        return int(self.doc["budget"])

    @property
    def stop_width(self) -> float | None:
        """The stop width in percentage points (None: stop only when the budget is spent)."""
        return self.doc.get("stop_width_pp")

    def input_paths(self) -> dict[str, str]:
        """Files this session reads or was started from, by description -> path: the bank matrix
        (``--matrix``) and the files given to ``start`` (``--tasks``, ``--config``). An output
        must never overwrite one of them (the CLI refuses; it refuses any session's lock and
        torn-record files too: :func:`hspr.cli.outputs.refuse_session_sidecar`). Sessions written
        before this field existed give only the matrix."""
        out = {"the session's bank matrix": self.doc["bank"].get("matrix")}
        files = self.doc.get("input_files")
        if isinstance(files, dict):
            out.update({f"the session's {k} file": v for k, v in files.items() if isinstance(v, str)})
        return {k: v for k, v in out.items() if v is not None}

    def set_stop_width(self, pp: float | None) -> None:
        """Change the stop width (percentage points; None removes it) and save.

        Raises LiveSessionError for a width outside (0, 100], for a method that gives no
        interval, or when the session file cannot be written."""
        check_stop_width(pp, "--stop-width")
        _check_interval(self.doc["method"]["name"], pp)
        with self._transaction():
            self.doc["stop_width_pp"] = None if pp is None else float(pp)

    def _estimate(self) -> ScoreEstimate | None:
        """The session's estimate (None before a method without a prior estimate has an outcome).

        Raises LiveSessionError when it is not a number: a hostile trial's damaged fit-cache entry
        gave ``estimate nan %`` with exit status 0 (the cache now checks each entry's checksum; this
        is the last guard)."""
        try:
            est = self.session.estimate()
        except BudgetError:
            return None
        ends = [est.point] + [v for v in (est.lower, est.upper) if v is not None]
        if not np.all(np.isfinite(ends)):
            # the whole estimate, interval too (a method-writer's trial: a NaN lower end was shown as the fine point)
            shown = f"{est.point!r}" + ("" if est.lower is None else f" [{est.lower!r}, {est.upper!r}]")
            if defined_outside_hspr(self.session):  # a method-writer's trial: the cache was blamed
                raise LiveSessionError(f"{self.path}: the {self.doc['method']['name']} estimate is not a number "
                                       f"({shown}): {type(self.session).__qualname__}.estimate() returned it (a "
                                       "method of your own: fix its estimate; the recorded outcomes are safe in the "
                                       "session file)")
            raise LiveSessionError(f"{self.path}: the {self.doc['method']['name']} estimate is not a number "
                                   f"({shown}): its fitted model is damaged; delete its fit-cache entry "
                                   f"({self._cache_entry()}, if it is there) and run the command again (the recorded "
                                   "outcomes are safe in the session file)")
        return est

    def _cache_entry(self) -> Path:
        """The fit-cache file this session's model is kept in (:func:`hspr.fitcache.entry_path`): a
        trial followed a damaged model's advice to empty the cache in another shell, where
        ``$HSPR_CACHE_DIR`` named another folder, and lost every other fit."""
        try:
            return entry_path(self.matrix.digest(), self.doc["method"]["name"], self.doc["method"].get("config") or {})
        except CacheLocationError:  # no cache folder can be told: the model was not cached
            return Path("the fit cache")

    def stop_reason(self, estimate: ScoreEstimate | None = None) -> str | None:
        """Why the session says stop (as :attr:`LiveStatus.stop_reason`), or None to go on.

        ``estimate``: the current estimate when the caller has it; otherwise it is computed
        only when a stop width needs it, so this is cheaper than :meth:`status` (``hspr live
        next`` without ``--json`` prints nothing else).
        """
        path = shlex.quote(str(self.path))
        # a re-trial: the placeholder NEW.hspr, used as told, made the next session's advice ingest itself
        more = shlex.quote(str(self.path.with_name(f"{self.path.stem}-more{self.path.suffix or '.hspr'}")))
        rule = live_rule(self.stop_width, go_on=f"hspr live next --stop-width none --session {path}",
                         more=f"hspr live ingest {path} --session {more}")
        if estimate is None and rule.needs_estimate(self.session):
            estimate = self._estimate()
        why = rule.check(self.session, estimate)
        if why is not None and self.hidden_agent is not None and f"--session {more}`" in why:
            # a re-trial: 'as this one was started' left the --hide to memory, and without it the carry-over is refused
            why += f" (a trial: start it with --hide {shlex.quote(self.hidden_agent)}, as this one)"
        return why

    def next(self, k: int = 1) -> list[str]:
        """The task(s) to run next: ``k`` distinct ids, chosen jointly when ``k`` > 1.

        Pending tasks (asked, not recorded) come first, so calling again before recording
        returns the same tasks; never a recorded task. Fewer than ``k`` when the budget has
        less left; an empty list once the session says stop (see :meth:`status`).

        Raises
        ------
        LiveSessionError
            (a ValueError) For ``k`` < 1 or not a whole number, or when the session file cannot
            be written (the journal is then unchanged).
        """
        n = whole_number(k)
        if n is None or n < 1:
            raise LiveSessionError(f"batch size must be a whole number >= 1, got {brief(k)}")
        with self._transaction():
            if self.stop_reason() is not None:
                return []
            before = self.session.pending
            tasks = self.session.ask_batch(n)
            if self.session.pending != before:
                # k as the session took it (at most the budget left: 10**5000 is not a number to journal)
                self.doc["events"].append({"type": "ask", "k": len(tasks), "tasks": list(tasks), "time": _now()})
                self._replayed.append(("ask", len(tasks), list(tasks)))
        return tasks

    def _check_outcome(self, task: str, y: float) -> bool:
        """True if new, False if the same outcome is already recorded; refuses the rest."""
        if task not in self._task_set:
            subset = " of the session's --tasks subset" if self.doc["bank"].get("tasks") else ""
            # a new-user trial: an id cut short when copied got no hint. A bank id is named only by did_you_mean's
            # rules; the tasks waiting for their outcome are listed, none chosen (re-trials: a waiting task named for an
            # id it fitted was another task as often: 'sympy__sympy-1597' of the waiting '...-15976' and '...-16597',
            # 'eval-mteb.har' of the waiting 'eval-mteb', 'gpt-4' of 'gpt-4o')
            named = near_matches([task], self.tasks)
            hint = did_you_mean([task], self.tasks, named)
            waiting = list(self.pending)
            if hint and named and named[0][1] in waiting:
                hint = hint[:-1] + " (a task waiting for its outcome)?"
            elif not hint and waiting:
                hint = (f"; the task(s) waiting for their outcome: {', '.join(map(repr, waiting[:8]))}"
                        f"{f' and {len(waiting) - 8} more' if len(waiting) > 8 else ''}")
            where = "among the session's tasks" if subset else "in the bank"  # a re-trial: a bank task outside the
            # subset was said not to be in the bank
            raise LiveSessionError(
                f"task id {task!r} is not {where} ({self.doc['bank']['name']}, {self.session.n_tasks} tasks{subset})"
                + hint
            )
        prev = self._tells.get(task)
        if prev is None:
            return True
        if prev["outcome"] == y:
            return False
        tr = self.matrix.trials
        raise LiveSessionError(
            f"task {task!r} is already recorded as {describe_outcome(prev['outcome'], tr)} (from "
            f"{prev.get('source')}); refusing a second, different outcome ({describe_outcome(y, tr)}). If the first "
            f"was wrong, replace it with `hspr live record --correct --session {shlex.quote(str(self.path))} "
            f"{task_argument(task)} {describe_outcome(y, tr)}` (from Python: record(task, outcome, correct=True); both "
            "stay in the session file)"
        )

    def _tell(self, task: str, y: float, source: str, detail: str, agent: str | None = None,
              dataset: str | None = None) -> None:
        # asked: pending, or in an ask of the log whose record the file lost (a re-trial: a repaired cut counted
        # those tasks as extra)
        asked = task in self.session.pending or task not in self._withdrawn and task in self._asked_in_log()
        ev = {"type": "tell", "task": task, "outcome": y, "source": source, "detail": detail,
              "asked": asked, "time": _now()} | ({"agent": agent} if agent else {}) | ({"dataset": dataset} if dataset else {})
        self.session.tell(task, self.session.logged_outcome(y))  # '5/5' is read as 1, the pass rate
        self._tells[task] = ev
        self.doc["events"].append(ev)
        self._replayed.append(("tell", task, y))

    def record(self, task: str, outcome, source: str = "record", correct: bool = False) -> bool:
        """Record one outcome (``resolved``/``unresolved``, 1/0 or a bool) and save.

        A task the session did not ask for is accepted and conditioned on (an extra task).

        Parameters
        ----------
        task : str
            Task id of the bank.
        outcome : str, int, float or bool
            As :func:`parse_outcome` reads it (``K/T`` on a bank of repeated trials).
        source : str
            Where the outcome came from, kept in the event.
        correct : bool
            Replace the outcome already recorded for ``task`` (a typo, a harness re-run): a
            ``correct`` event is appended and the session rebuilt with the new outcome in place
            of the first (module docstring); the first stays in the file.

        Returns
        -------
        bool
            True if recorded (or corrected), False if the same outcome was already there (a no-op).

        Raises
        ------
        LiveSessionError
            For an id not in the bank, a non-binary outcome, a second, different outcome for a
            recorded task without ``correct``, or ``correct`` for a task not yet recorded.
        """
        task = str(task).strip()
        if task not in self._task_set:  # the id first: a task of another bank is named as such (a new-user trial)
            self._check_outcome(task, 0)
        try:
            y = parse_outcome(outcome, self.matrix.trials)
        except LiveSessionError as exc:
            kt = re.fullmatch(r"\s*\d+\s*/\s*(\d+)\s*", outcome) if isinstance(outcome, str) else None
            if self.matrix.trials is None and kt is not None and int(kt[1]) >= 2:  # not '1/0' (a re-trial)
                raise LiveSessionError(f"{exc}; this session's bank ({self.doc['bank']['name']}) has one 0/1 outcome per "
                                       "task: K/T (successes of T trials) needs a bank of repeated trials, e.g. a "
                                       "session started with --bank terminal-bench") from None
            raise
        with self._transaction():
            if correct:
                return self._rewrite(task, {"type": "correct", "outcome": y, "source": source,
                                            "detail": "corrected by hand" if source == "record" else source},
                                     ": record it without --correct")
            if not self._check_outcome(task, y):
                return False
            self._tell(task, y, source, "recorded by hand" if source == "record" else source)
        return True

    def _rewrite(self, task: str, event: dict, hint: str = "") -> bool:
        """Apply a :data:`hspr.journal.REWRITES` event to ``task``'s recorded outcome (inside a
        transaction): append ``event`` with the outcome it replaces as ``previous`` and rebuild the
        session from the whole log. False (nothing written) when ``event`` gives the outcome the
        task already has. Refuses a task without a recorded outcome (``hint``: what to do instead)
        and, for FAQ, a change its draw probabilities depend on (:meth:`_check_rewritable`)."""
        verb = event["type"]
        prev = self._tells.get(task)
        if prev is None:
            self._check_outcome(task, event.get("outcome", 0))  # an id not in the bank: its own message
            raise LiveSessionError(f"task {task!r} has no recorded outcome to {verb}{hint}")
        if "outcome" in event and event["outcome"] == prev["outcome"]:
            return False
        self._check_rewritable(task, {"correct": "corrected", "withdraw": "withdrawn"}[verb])
        self.doc["events"].append({**event, "task": task, "previous": prev["outcome"], "time": _now()})
        self._replay()
        return True

    def _check_rewritable(self, task: str, what: str) -> None:
        """Refuse to change ``task``'s outcome where the method's estimate weights later asks by draw
        probabilities computed from it (:attr:`hspr.session.Session.design_depends_on_outcomes`)."""
        if not self.session.design_depends_on_outcomes:
            return
        events = self.doc["events"]
        told_at = max(i for i, ev in enumerate(events) if isinstance(ev, dict) and ev.get("task") == task
                      and ev.get("type") == "tell")
        later = any(isinstance(ev, dict) and ev.get("type") == "ask" for ev in events[told_at + 1:])
        # a withdrawn task also leaves the asks, and with them the draw probability of its own ask
        drawn = what == "withdrawn" and any(isinstance(ev, dict) and ev.get("type") == "ask"
                                            and task in (ev.get("tasks") or ()) for ev in events)
        if later or drawn:
            why = "tasks were asked after this one" if later else "this task was one of its draws"
            raise LiveSessionError(
                f"task {task!r}: method {self.doc['method']['name']!r} weights each outcome by the probability with "
                f"which its task was drawn, computed from the outcomes before it, and {why}: "
                f"an outcome {what} now would leave those weights wrong, so nothing was changed. A new session can "
                f"take this one's outcomes (hspr live ingest {self.path} --session NEW) and be changed, but it counts "
                "them as known outcomes, not as weighted draws, so its estimate and interval differ from this "
                "method's own")

    def withdraw(self, task: str) -> None:
        """Take back the outcome recorded for ``task`` (e.g. recorded under the wrong id) and save.

        A ``withdraw`` event is appended and the session rebuilt without the outcome (module
        docstring); the outcome stays in the file, and the task may be recorded again.

        Raises
        ------
        LiveSessionError
            For an id not in the bank or without a recorded outcome, or (FAQ) once tasks were
            asked after the outcome.
        """
        task = str(task).strip()
        with self._transaction():
            self._rewrite(task, {"type": "withdraw", "source": "withdraw", "detail": "withdrawn by hand"})

    def simulate(self, max_tasks: int | None = None, batch: int = 1,
                 progress: Callable[[str, float], None] | None = None) -> list[tuple[str, float]]:
        """Play the agent a trial session hides (:meth:`create` with ``hide``): ask for tasks and record
        each one's outcome from the hidden agent's row of the bank, as a real agent's would be, until the
        session says stop or ``max_tasks`` are recorded (a new-user trial wrote a script of subprocess
        calls for this, 0.5 s a task).

        Parameters
        ----------
        max_tasks : int, optional
            Record at most this many outcomes (pending tasks first); None: until the session stops.
        batch : int
            Tasks asked at once (:meth:`next`'s ``k``), as an agent running that many in parallel.
        progress : callable, optional
            Called as ``progress(task, outcome)`` after each outcome is saved.

        Returns
        -------
        list of (task, outcome)
            The outcomes recorded, in order (0/1, or the pass rate on a bank of repeated trials).

        Raises
        ------
        LiveSessionError
            When the session hides no agent, ``max_tasks`` or ``batch`` is not a whole number >= 1,
            or the file cannot be written (what was recorded before stays saved). A missing cell of
            the hidden row is answered unresolved, as its true score and a replay count it.
        """
        if self.hidden is None:
            raise LiveSessionError(f"{self.path}: the session hides no agent, so there is no row to answer from; for a "
                                   "trial of the loop start one with a bank agent hidden from the fit: hspr live start "
                                   "--hide AGENT ...")
        for what, v in (("max_tasks", max_tasks), ("batch", batch)):
            n = None if v is None else whole_number(v)
            if v is not None and (n is None or n < 1):
                raise LiveSessionError(f"{what} must be a whole number >= 1, got {brief(v)}")
        agent = self.hidden_agent
        missing = None if self.hidden.missing is None else self.hidden.missing[0]
        done: list[tuple[str, float]] = []
        while max_tasks is None or len(done) < int(max_tasks):
            # the tasks left pending (an earlier --max-tasks cut a batch, or `next`) are answered alone first, then
            # whole batches: a run split by --max-tasks asks what one run would (a trial: 15.40 % against 16.15 %)
            pending = len(self.pending)
            tasks = self.next(pending or int(batch))
            if not tasks:
                break
            for t in tasks[:None if max_tasks is None else int(max_tasks) - len(done)]:
                y = self.hidden_outcome(t)
                cut = missing is not None and missing[self.hidden.task_index(t)]
                note = " (a missing cell of the bank: unresolved, as in its true score)" if cut else ""
                with self._transaction():
                    told = self._check_outcome(t, y)
                    if told:
                        self._tell(t, y, "simulate", f"the hidden agent {agent}'s outcome in the bank{note}")
                if told:  # another process may have recorded it meanwhile (a trial: counts summed to 197 of 120)
                    done.append((t, y))
                if progress is not None:
                    progress(t, y)
        return done

    @property
    def agent(self) -> str | None:
        """The label of the agent the session scores (``create(agent=...)``, ``hspr live start --agent``), or None."""
        label = self.doc.get("agent")
        return label if isinstance(label, str) else None

    def _label_note(self, path: Path, theirs: str | None, what: str) -> list[str]:
        """A note when an ingested file names an agent (``what``: how it names it) that is not this session's
        label (:func:`~hspr.live.text.agents_differ`: a label may be a short name of a harness's agent id,
        'claude-4-sonnet' for 'terminus-2 / anthropic/Claude-4-Sonnet', but 'gpt-4' is not 'gpt-4o' or
        'gpt-4-turbo'). A leaderboard trial scored several agents, one session each; a file ingested into the
        wrong one went in without a word."""
        mine = self.agent
        if mine is None or not theirs or not agents_differ(mine, theirs):
            return []
        return [f"{path.name}: {what} {theirs!r}, and this session scores {mine!r} (its --agent at start); if these are "
                f"two agents, take the file's outcomes out again (`hspr live withdraw --session "
                f"{shlex.quote(str(self.path))} TASK` for each task it recorded) and ingest it into that agent's session"]

    @property
    def hidden_agent(self) -> str | None:
        """The bank agent this trial session hides from the fit (None for a real agent's session)."""
        return self.doc["bank"].get("hidden")

    @property
    def hidden_score(self) -> float | None:
        """The hidden agent's true score over the session's tasks (0-1; a missing cell counts 0), or None."""
        return None if self.hidden is None else float(self.hidden.scores()[0])

    def hidden_outcome(self, task: str) -> float | None:
        """The hidden agent's outcome of ``task`` in the bank (an int 0/1, as `record` stores it, or on a bank
        of repeated trials its pass rate; a missing cell as 0, as :meth:`simulate` answers it), or None in a
        session that hides no agent or for a task not in the bank: a re-trial recorded an outcome by hand that
        contradicted the row, unwarned."""
        if self.hidden is None or task not in self._task_set:
            return None
        y = self.hidden.rates()[0, self.hidden.task_index(task)]  # a missing cell is stored as 0
        # an int on a 0/1 bank: simulate stored 1.0 where record stores 1 (a scripting trial read both)
        return float(y) if self.matrix.trials is not None else int(y)

    def _carried_over_notes(self, path: Path, theirs: dict | None) -> list[str]:
        """Notes on the session file ``path`` being ingested, whose method header is ``theirs``
        (:attr:`HarnessRead.method <hspr.harness.HarnessRead>`): that it is this session's own, or that it
        ran another method or other settings (a re-trial: outcomes carried into a new session started
        without the old one's ``--config`` went in without a word)."""
        if path.resolve() == self.path.resolve():  # a re-trial: "recorded 0 ... 60 unchanged" said nothing more
            return [f"{path} is this session's own file: its outcomes are recorded here already; to carry them into "
                    "another session, give that one's file to --session"]
        if not isinstance(theirs, dict) or not isinstance(theirs.get("name"), str):
            return []

        def said(m: dict) -> str:
            changed = changed_settings(m["name"], m.get("config") or {})
            return f"{m['name']} ({', '.join(f'{k}={v}' for k, v in changed.items()) or 'its defaults'})"
        old, new = said(theirs), said(self.doc["method"])
        if old == new:
            return []
        return [f"{path.name} ran {old}, this session runs {new}: its outcomes carry over, and the "
                "estimate is this session's method's (start a session with the other's --method / --config to "
                "continue it as it was)"]

    def ingest(self, path: str | Path, errors_as_unresolved: bool = False, skip_unknown: bool = False,
               read: HarnessRead | None = None) -> IngestResult:
        """Record every outcome in a SWE-bench harness output or CSV (see :mod:`hspr.harness`).

        All or nothing: the whole input is checked first (ids in the bank, no outcome that
        contradicts a recorded one), then the new outcomes are told in the order their tasks were
        asked (tasks never asked after them: by id, or from another session file in the order it
        recorded them), whatever the order of the file, and the session file is saved once.

        Parameters
        ----------
        path : str or Path
            A per-instance ``report.json``, a log folder, a run summary json, an sb-cli
            report or a CSV ``instance_id,resolved``; on a bank of repeated trials a CSV
            ``task_id,successes,trials`` or one line per trial ``task_id,resolved``
            (:func:`hspr.harness.read_trials_outcomes`).
        errors_as_unresolved : bool
            Count harness errors as unresolved (the leaderboard convention) instead of leaving
            them pending for a re-run. An error for a task that already has a recorded outcome
            leaves that outcome as it is (a note says so): an error is never a grade.
        skip_unknown : bool
            Skip ids that are not tasks of the session (a note lists them) instead of refusing
            the whole file.
        read : HarnessRead, optional
            ``path`` already read by :func:`hspr.harness.read_outcomes` with this session's
            bank's ``trials`` and digest (the CLI reads it before the fit); else it is read here.
            On a bank of repeated trials it is read here all the same, knowing the bank's ids.

        Returns
        -------
        IngestResult

        Raises
        ------
        LiveSessionError
            Naming the file and the offending ids for ids not in the bank or contradicting
            outcomes, and for a Harbor job of another agent or dataset than the session's earlier
            Harbor outcomes or of a dataset the bundled bank is not (:attr:`BankInfo.foreign_datasets
            <hspr.data.banks.BankInfo>`; on a matrix file, the bundled bank whose rows it holds:
            :func:`~hspr.data.banks.bank_of_rows`); HarnessFormatError (a DataError) for a malformed file.
        """
        if read is None or self.matrix.trials is not None or read.form in ("tb_run", "harbor_job"):  # knowing the bank's ids
            # (a trial count is checked per task: an id of another bank is named as such, or skipped)
            read = read_outcomes(path, self.matrix.trials, self.doc["bank"].get("digest"),
                                 keep=self._task_set.__contains__ if skip_unknown else None,
                                 known=self._task_set.__contains__)
        source = str(Path(path).resolve())
        res = IngestResult(source, read.form, notes=list(read.notes))
        on_matrix = bool(self.doc["bank"].get("matrix"))  # a file: the bundled bank whose rows it holds, if any
        bundled = ((bank_of_rows(self.matrix) if read.datasets else None) if on_matrix
                   else BANKS.get(self.doc["bank"].get("name")))
        foreign = foreign_datasets(bundled, read.datasets)
        if foreign:  # a re-trial: Terminal-Bench 2.0 trials under 1.0's task names were recorded
            whose = (f"this session's matrix, which holds rows of the {bundled.name} bank ({bundled.short_title})"
                     if on_matrix else f"the {bundled.name} bank ({bundled.short_title})")
            raise LiveSessionError(f"{path}: its trials are of dataset {foreign[0]!r}, whose tasks are not those of "
                                   f"{whose}, even where their names are the same; score it against a bank of other "
                                   "agents' runs of that dataset (hspr bank build JOBS_FOLDER --out FILE, from their "
                                   "Harbor jobs)" + (" and none of those rows" if on_matrix else "") + " (nothing was recorded)")
        if read.datasets:
            res.notes.append(f"trials of dataset {', '.join(map(repr, read.datasets))}")
        res.notes.extend(self._label_note(Path(path), read.agent, "its trials are of agent"))
        if read.form == "session":
            res.notes.extend(self._carried_over_notes(Path(path), read.method))
            res.notes.extend(self._label_note(Path(path), read.agent_label, "it is the session of agent"))
            them = read.hidden_agent  # a trial session's outcomes are that bank agent's (a hostile trial: carried into
            # a session with it among the sources, it was scored against itself; into one hiding another agent, the
            # outcomes of two agents were scored against the second's true score)
            if them is not None and them != self.hidden_agent and (them in self.matrix.agents or self.hidden is not None):
                why = (f"{them!r} is one of this session's source agents, so it would be scored against itself"
                       if them in self.matrix.agents else
                       f"this session plays another agent, {self.hidden_agent!r}, and would mix the two")
                raise LiveSessionError(f"{path}: its outcomes are those of bank agent {them!r}, hidden in that trial "
                                       f"session, and {why}; carry them into a session that hides {them!r} (hspr live "
                                       f"start ... --hide {shlex.quote(them)}); nothing was recorded")
        unknown = read.skipped + [o.instance_id for o in read.outcomes if o.instance_id not in self._task_set]
        header = ""
        if read.header_like is not None and read.outcomes and read.outcomes[0].instance_id in unknown:
            first, second = read.header_like[:2]  # a header-less line's outcome: it reads as 1 or 0
            line = shorten(",".join(read.header_like), 80)
            if outcome(second) == 0:  # re-trials: 'failed' renamed 'resolved', or --skip-unknown, turned them around
                raise LiveSessionError(f"{path}: line 1 {line} looks like a header whose outcome column {second!r} holds "
                                       "failures: read as outcomes, every task's would be turned around, so nothing was "
                                       f"recorded (with --skip-unknown too); rename {first!r} to instance_id and turn "
                                       f"{second!r}'s values around (1 - value) under the name resolved")
            # a re-trial: 'name,passed' renamed 'instance_id,passed' had no 'resolved'
            header = (f" (line 1 {line} may be a header: hspr reads the header 'instance_id,resolved' (or task_id); "
                      f"rename {first!r} to instance_id" + ("" if second.lower() == "resolved" else
                                                            f" and {second!r} to resolved") + ")")
        near = did_you_mean(unknown, self.tasks) if unknown else ""  # ids the bank has up to case or separators
        if unknown and skip_unknown:
            read = replace(read, outcomes=[o for o in read.outcomes if o.instance_id in self._task_set])
            if not read.outcomes:
                raise LiveSessionError(f"{path}: none of its {len(unknown)} id(s) is a task of the session "
                                       f"({', '.join(map(repr, unknown[:5]))}{' ...' if len(unknown) > 5 else ''}){header}: "
                                       "the wrong file or session? Nothing was recorded"
                                       + near)
            res.skipped = unknown
            res.notes.append(f"skipped {len(unknown)} id(s) that are not tasks of the session: "
                             f"{', '.join(map(repr, unknown[:10]))}{' ...' if len(unknown) > 10 else ''}{header}"
                             + near)
        elif unknown and not any(o.instance_id in self._task_set for o in read.outcomes) \
                and not near:
            # a harness trial: a run of Lite's dev split was told that --skip-unknown records the rest, which was none
            raise LiveSessionError(
                f"{path}: none of its {len(unknown)} instance id(s) is a task of the bank ({self.doc['bank']['name']}, "
                f"{self.session.n_tasks} tasks): {', '.join(map(repr, unknown[:5]))}{' ...' if len(unknown) > 5 else ''}"
                f"{header}; a run of another split or benchmark (SWE-bench Lite's dev split, say), or another session's "
                "file? Nothing was recorded")
        elif unknown:
            subset = (" of the session's --tasks subset; keep only the subset's ids in the file"
                      if self.doc["bank"].get("tasks") else "")
            raise LiveSessionError(
                f"{path}: {len(unknown)} instance id(s) not in the bank ({self.doc['bank']['name']}, "
                f"{self.session.n_tasks} tasks{subset}): {', '.join(map(repr, unknown[:10]))}"
                f"{' ...' if len(unknown) > 10 else ''}{header}; nothing was recorded (--skip-unknown records the rest)"
                + near
            )
        dataset = next(iter(read.datasets), None)  # one at most: a reader refuses trials of two
        # a hostile trial and its re-trial: Harbor jobs of two agents, or of two datasets, went into one session
        for key, mine, rule in (("agent", read.agent, "a session estimates one agent: start another session for this one"),
                                ("dataset", dataset, "a session scores one bank's tasks")):
            other = next(((ev[key], ev["source"]) for ev in self._tells.values() if mine and ev.get(key)
                          and ev[key] != mine), None)
            if other is not None:
                raise LiveSessionError(f"{path}: its trials are of {key} {mine!r}, but this session's outcomes from "
                                       f"{other[1]} are of {key} {other[0]!r}; {rule} (nothing was recorded)")
        with self._transaction():
            todo = []
            conflicts = []
            for o in read.outcomes:
                y = o.outcome
                detail = f"{o.status}: {o.detail}"
                if y is None and o.instance_id in self._tells:  # an old error beside a graded outcome: the grade stands
                    res.notes.append(f"{o.instance_id}: kept its recorded outcome "
                                     f"{describe_outcome(self._tells[o.instance_id]['outcome'], self.matrix.trials)};"
                                     f" the file's harness error ({o.detail}) is not a graded outcome")
                    res.unchanged.append(o.instance_id)
                    continue
                if y is None and errors_as_unresolved:  # errored trials fail; graded trials beside them stand (a trial)
                    y = o.rate_if_unresolved if o.rate_if_unresolved is not None else 0
                    detail = f"harness error counted unresolved: {o.detail}"
                if y is not None and o.instance_id not in self._tells and y in self._withdrawn.get(o.instance_id, ()) \
                        and o.instance_id not in self.session.pending:  # asked again since: a fresh result (a trial)
                    res.notes.append(f"{o.instance_id}: not recorded: its outcome "
                                     f"{describe_outcome(y, self.matrix.trials)} was withdrawn (`hspr live withdraw`); "
                                     "record it by hand to take it back")
                    res.withdrawn.append(o.instance_id)  # not 'unchanged': a script must tell them apart (a trial)
                    continue
                if y is None:
                    if self._errors.get(o.instance_id, {}).get("detail") == o.detail:  # the same error again
                        res.needs_rerun.append((o.instance_id, o.detail))
                        continue
                    todo.append((o, None, detail))
                    continue
                try:
                    new = self._check_outcome(o.instance_id, y)
                except LiveSessionError as exc:
                    if y in self._corrected.get(o.instance_id, ()):  # the file predates a `record --correct`
                        res.notes.append(f"{o.instance_id}: kept the corrected outcome "
                                         f"{describe_outcome(self._tells[o.instance_id]['outcome'], self.matrix.trials)}"
                                         f" over the file's {describe_outcome(y, self.matrix.trials)}, which it replaced")
                        res.unchanged.append(o.instance_id)
                        continue
                    conflicts.append(str(exc))
                    continue
                if new:
                    todo.append((o, y, detail))
                else:
                    res.unchanged.append(o.instance_id)
            if conflicts:
                raise LiveSessionError(f"{path}: {len(conflicts)} conflicting outcome(s), nothing was recorded: "
                                       + "; ".join(conflicts[:5]))
            # the order asked, not the file's: the estimate depends a little on the order outcomes are told in
            # (the importance proposal is refreshed every few outcomes; a hostile trial's twelve records in
            # reverse order moved it by 0.001 pp), and one file's lines in any order are the same data. Tasks not
            # asked follow by id; another session's in the order it recorded them (a new-user trial: carried into a
            # larger session by id, its shift check, on the first 50 outcomes, moved from percentile 78 to 92)
            asked = {t: k for k, t in enumerate(self.session.pending)}
            told = {o.instance_id: k for k, o in enumerate(read.outcomes)} if read.form == "session" else {}
            todo.sort(key=lambda item: (asked.get(item[0].instance_id, len(asked)), told.get(item[0].instance_id, 0),
                                        item[0].instance_id))
            for o, y, detail in todo:
                if y is None:
                    ev = {"type": "error", "task": o.instance_id, "source": source, "detail": o.detail, "time": _now()}
                    self._errors[o.instance_id] = ev
                    self.doc["events"].append(ev)
                    res.needs_rerun.append((o.instance_id, o.detail))
                else:
                    self._tell(o.instance_id, y, source, detail, read.agent, dataset)
                    res.recorded.append((o.instance_id, y, detail))
                    if o.outcome is None:  # a harness error counted unresolved
                        res.errors_counted.append(o.instance_id)
        if read.form == "log_dir":  # a harness trial: an empty patch gets no folder, and its task stayed pending unsaid
            seen = {o.instance_id for o in read.outcomes}
            absent = [t for t in self.session.pending if t not in seen]
            if absent:
                res.notes.append(f"{len(absent)} asked task(s) have no folder in these logs ({', '.join(absent[:5])}"
                                 f"{' ...' if len(absent) > 5 else ''}): the harness makes none for a prediction with "
                                 "an empty patch, which it does not run, nor for a task it was not given; ingest the "
                                 "run's summary <model>.<run_id>.json too (its empty_patch_ids count as unresolved), "
                                 "or run those tasks")
        unasked = [t for t, _, _ in res.recorded if not self._tells[t]["asked"]]
        name = self.doc["method"]["name"]
        if read.form == "session" and isinstance(read.method, dict) and read.method.get("name") == name:
            # another session of this method: its own random draws carry over, what it did not ask does not (a re-trial)
            unasked = [t for t in unasked if t in set(read.unasked)]
        if unasked and self.session.random_draws:  # as `record` warns (an API trial: UnaskedTaskWarning)
            res.notes.append(f"{len(unasked)} of these task(s) were not asked by this session "
                             f"({', '.join(unasked[:3])}{' ...' if len(unasked) > 3 else ''}): " + random_draws_caveat(name))
        return res

    def trajectory(self) -> list[dict]:
        """The estimate after each recorded outcome, in the order recorded (:func:`hspr.session.trajectory`),
        replayed with the session's asks, so that it ends at :meth:`status`'s estimate for every method."""
        return trajectory(self.model, self.budget, self.doc["seed"], self._replayed)

    def status(self) -> LiveStatus:
        """The current estimate, counts, expected final width and stop flag (nothing is written)."""
        est = self._estimate()
        why = self.stop_reason(est)
        stop = why is not None
        extra = tuple(t for t, ev in self._tells.items() if not ev.get("asked", True))
        rerun = tuple(self.needs_rerun.items())
        b = self.doc["bank"]
        expected = self.session.expected_width(est)
        warn = list(self.warnings)
        if not stop and self.stop_width is not None and expected is not None and 100 * expected > self.stop_width:
            warn.append(f"{UNREACHABLE_STOP} {self.stop_width:g} pp is below the forecast width after the rest of the "
                        f"budget (~{100 * expected:.2f} pp): expect to run the whole budget of {self.budget} (a "
                        "larger --stop-width or budget lets the width rule stop the run)")
        return LiveStatus(
            session=str(self.path), bank=b.get("matrix") or b.get("name"), method=self.doc["method"]["name"],
            n_tasks=self.session.n_tasks, budget=self.budget, seed=int(self.doc["seed"]), estimate=est,
            n_recorded=self.session.n_queried, extra=extra, pending=tuple(self.session.pending), needs_rerun=rerun,
            expected_width=expected, stop_width_pp=self.stop_width, stop=stop,
            stop_reason=why, warnings=tuple(warn), bank_label=b.get("name"), trials=self.matrix.trials,
            random_draws=self.session.random_draws,
            settings=changed_settings(self.doc["method"]["name"], self.doc["method"].get("config") or {}),
            config_file=(self.doc.get("input_files") or {}).get("--config"),
            outcomes=tuple(zip(self.session.queried, self.session.outcomes)), bank_digest=b.get("digest"),
            provenance={t: (ev.get("source"), ev.get("detail")) for t, ev in self._tells.items()},
            hidden_agent=b.get("hidden"), hidden_score=self.hidden_score, agent=self.agent,
        )

    def __repr__(self) -> str:
        return (f"LiveSession({str(self.path)!r}, method={self.doc['method']['name']!r}, "
                f"{self.session.n_queried}/{self.budget} recorded, {len(self.pending)} pending)")
