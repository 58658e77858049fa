"""Option checks shared by the commands: output paths, worker counts, cluster connection.

Each check runs before any long computation, so a bad option fails in a second with a message
naming the option, never after an hour of replay or selection.
"""

from __future__ import annotations

import contextlib
import copy
import errno
import os
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType

import click

from .._entry import started_closed
from ..data.io import bank_dir_of
from ..fileio import (
    OS_FIXES,
    blocking_flag,
    dangling_link,
    dangling_words,
    descriptor_of,
    is_descriptor_path,
    names_stdout,
)
from ..parallel import BACKENDS, cluster
from .meta import say_warning, to_null_device

#: the largest query seed: a results file or a session is JSON, whose readers may hold numbers as doubles
#: (``hspr report`` refuses more)
MAX_SEED = 2 ** 53 - 1

#: pip extra that provides each cluster backend
EXTRAS = MappingProxyType({"dask": "hspr[dask]", "ray": "hspr[ray]"})


class CliError(click.ClickException):
    """A user error found before the work starts: printed without traceback, exit code 2."""

    exit_code = 2


def command_line() -> str:
    """This command as a user runs it again, written into a results file: ``hspr`` and its arguments,
    quoted for a shell (a path with a space). The same for ``hspr ...`` and ``python -m hspr ...`` (a trial:
    replay recorded the venv's full path of the executable, select ``hspr``)."""
    import shlex

    return shlex.join(["hspr", *sys.argv[1:]])


def argv_text(ctx: click.Context | None, param: click.Parameter | None, value: str | None) -> str | None:
    """A click callback: a command-line argument as the user typed it. Under a C/POSIX locale without
    UTF-8 mode (``LC_ALL=C PYTHONUTF8=0``) Python decodes the command line as ASCII with surrogate escapes,
    so the task id ``tâche_3`` arrives as ``t\\udcc3\\udca2che_3`` and was not found in a bank read as UTF-8
    (a trial); such an argument is decoded as UTF-8 from its bytes, as files are. Others are returned as
    given."""
    if isinstance(value, str) and any("\udc80" <= c <= "\udcff" for c in value):
        try:
            return os.fsencode(value).decode("utf-8")
        except UnicodeError:  # not UTF-8 either: left as typed, and named as such where it is not found
            return value
    return value


def _writable_ancestor(p: Path, option: str, folder: bool = False) -> None:
    """Check, before any work, that ``p`` can be written as the writers of :mod:`hspr.fileio` write it (a
    temporary file beside it, moved over it): click.BadParameter naming ``option`` and the fix otherwise.

    A descriptor path (``/dev/stdout``, ``/dev/fd/3``) is written into, and must be open for writing, and not
    a standard stream that was closed as hspr started (``>&-``: the stream then holds the null device, and
    the output would be lost); an existing device or pipe is written in place. A link is checked at its
    target, as it is written there. Then: no folder on the way may be a link to nothing, the first existing
    folder above ``p`` must be a folder that ``os.access`` calls writable (on a read-only file system: said),
    neither the folder that will hold ``p`` nor an existing ``p`` may carry the immutable or append-only
    flag (``chattr +i`` / ``+a``: an append-only folder takes a new file but not the move over the old one;
    an ancestor only matters when immutable, as new folders are made in it), and a one-byte temporary file
    must be made (and removed) in it: as root, ``os.access`` says yes to ``/sys`` (a trial: `select --out`
    failed after the selection). ``folder``: ``p`` is a folder to make, whose files go inside it, so no
    existing folder holds them."""
    fd = descriptor_of(p)
    if fd is not None:
        _check_descriptor(p, fd, option)
        return
    if p.exists() and not p.is_file() and not p.is_dir():  # a device or a pipe: written in place
        return
    shown = str(p)
    if p.is_symlink():  # a re-trial: a link into a read-only folder was refused after the whole replay
        _refuse_broken_link(p, option)
        target = Path(os.path.realpath(p))
        p, shown = target, f"{p} (a link to {target})"
    dangling = dangling_link(p.parent)
    if dangling is not None:  # a re-trial: "File exists; free space" after a whole replay
        raise click.BadParameter(f"cannot create {shown}: the folder {dangling_words(dangling)}; make that folder or "
                                 "fix the link, or choose another path", param_hint=option)
    a = p.parent
    while not a.exists():
        if a == a.parent:
            break
        a = a.parent
    if not a.is_dir():
        raise click.BadParameter(f"cannot create {shown}: {a} is a file, not a folder; choose another path",
                                 param_hint=option)
    refuse_in_dev(p, option, a, shown)
    _takes_files(a, p, shown, option, holds_file=a == p.parent and not folder)


def _takes_files(a: Path, p: Path, shown: str, option: str, holds_file: bool) -> None:
    """The checks every output shares once ``a``, the existing folder that will hold ``p`` (or the new folders on
    the way to it), is known: no immutable or append-only flag where it matters, writable to ``os.access``, and a
    one-byte temporary file made in it (click.BadParameter naming ``shown``, ``option`` and the fix otherwise).
    ``p`` may be ``a`` itself: an existing folder whose files go inside it."""
    existing = p if p.is_file() else None
    # before os.access, which says no without why; an append-only ancestor takes the new folders (a re-trial)
    _refuse_flags(a, existing, shown, option, holds_file=holds_file)
    if not os.access(a, os.W_OK):  # a trial: 'replace' for a file that exists (it is replaced whole, through its folder)
        verb = "replace" if existing is not None else "write into" if p == a else "create"
        raise click.BadParameter(f"cannot {verb} {shown}: the folder {a} is not writable"
                                 + (" (a file is written beside it and moved over it, so that it is never half-written)"
                                    if existing is not None else "")
                                 + ("; it is on a read-only file system" if _read_only(a) else "")
                                 + "; choose another path", param_hint=option)
    _probe_folder(a, shown, option)


_DEV_WORDS = "/dev holds devices, not files (standard output is /dev/stdout); choose another folder"


def refuse_in_dev(p: Path, option: str, existing: Path | None = None, shown: str | None = None) -> None:
    """click.BadParameter naming ``option`` when ``p`` does not exist and would be made in ``/dev`` (as a file, or
    inside new folders there): ``existing`` is the first existing folder above ``p`` (found when None), ``shown``
    how ``p`` is named. A re-trial, as root: `--out /dev/stdout.svg` and `live start --session /dev/s.hspr` made
    files there; ``/dev/shm`` and an existing device (``/dev/null``) are not refused."""
    if p.exists() or p.is_symlink():
        return
    a = existing if existing is not None else p.parent
    while existing is None and not a.exists() and a != a.parent:
        a = a.parent
    if os.path.realpath(a) == "/dev":
        raise click.BadParameter(f"cannot create {shown or p}: {_DEV_WORDS}", param_hint=option)



def _read_only(folder: Path) -> bool:
    """Whether ``folder`` lies on a file system mounted read-only (False where that cannot be read)."""
    try:
        return bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except (OSError, AttributeError):  # pragma: no cover - no statvfs (Windows)
        return False


def _refuse_broken_link(p: Path, option: str) -> None:
    """click.BadParameter when link ``p`` leads to no folder a file can go in: a loop of links, or a target
    whose folder does not exist (a re-trial: both ran the whole replay, then failed)."""
    try:
        os.stat(p)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise click.BadParameter(f"{p} is a loop of symbolic links (or leads through one); remove or fix the "
                                     "link, or choose another path", param_hint=option) from None
    target = Path(os.path.realpath(p))
    if not target.parent.is_dir():
        raise click.BadParameter(f"cannot write {p}: it is a link to {target}, whose folder does not exist; make "
                                 "that folder, or choose another path", param_hint=option)


def _check_descriptor(p: Path, fd: int, option: str) -> None:
    """click.BadParameter when descriptor path ``p`` (descriptor ``fd``) cannot take the output: not open, open
    for reading only, or a standard stream that was closed as hspr started (a re-trial: each ran the whole
    replay and then failed, or wrote the results to the null device and said it wrote them)."""
    name = {0: "stdin", 1: "stdout", 2: "stderr"}.get(fd)
    if name is not None and started_closed(name):
        raise click.BadParameter(f"{p}: standard {'input' if fd == 0 else 'output' if fd == 1 else 'error'} was "
                                 "closed when hspr started, so what is written there would be lost; give a file, or "
                                 "run the command with that stream open", param_hint=option)
    try:
        import fcntl
    except ImportError:  # pragma: no cover - no fcntl (Windows): the write says what went wrong
        return
    try:
        mode = fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE
    except OSError:
        raise click.BadParameter(f"{p}: descriptor {fd} is not open; open it for writing in the shell (e.g. "
                                 f"{fd}>file), or give a file", param_hint=option) from None
    if mode == os.O_RDONLY:
        raise click.BadParameter(f"{p}: descriptor {fd} is open for reading only; open it for writing (e.g. "
                                 f"{fd}>file), or give a file", param_hint=option)


def _refuse_flags(a: Path, existing: Path | None, shown: str, option: str, holds_file: bool = True) -> None:
    """click.BadParameter (naming ``shown`` and ``option``) when folder ``a``, or ``existing`` (the file a write
    replaces, or None), carries the immutable flag, or the append-only flag where it matters: on ``existing``, and
    on ``a`` when it will hold the file (``holds_file``; an append-only ancestor takes the new folders a write
    makes in it). A write goes to a temporary file beside its target and is moved over it, which those flags
    forbid (a re-trial: such folders and files passed, and the write failed after the work, leaving its
    temporary file). The fix names the real path of a folder reached through a link."""
    for where in (a, *((existing,) if existing is not None else ())):
        flag = blocking_flag(where, append_matters=where != a or holds_file)
        if flag is None:
            continue
        words, fix = flag
        kind = "folder" if where == a else "file"
        if words.startswith("immutable"):
            raise click.BadParameter(f"cannot write {shown}: the {kind} {where} is {words}; clear the flag ({fix}) or "
                                     "choose another path", param_hint=option)
        raise click.BadParameter(f"cannot write {shown}: the {kind} {where} is {words}, and a file is written beside its "
                                 f"target and moved over it, which that flag forbids; clear it ({fix}) or choose "
                                 "another path", param_hint=option)


def _probe_folder(a: Path, shown: str, option: str) -> None:
    """click.BadParameter (naming ``shown`` and ``option``) unless a one-byte temporary file can be made (and is
    removed) in folder ``a``: as root, ``os.access`` says yes to /sys (a trial: `select --out` failed after
    minutes of selection)."""
    try:
        # its real path: on a link Python cannot make an unnamed file (O_NOFOLLOW) and makes a named one, which an
        # append-only folder keeps (a re-trial)
        with tempfile.TemporaryFile(dir=os.path.realpath(a)) as fh:
            fh.write(b"\0")
    except OSError as exc:
        # os.access called the folder writable: a refusal by permission is the file system's (sysfs, procfs)
        fix = ("this folder takes no files (a system folder such as /proc or /sys?): choose another path"
               if exc.errno in (errno.EACCES, errno.EPERM, errno.ENOENT) else
               f"{OS_FIXES.get(exc.errno, 'fix the permissions')}, or choose another path")
        raise click.BadParameter(f"cannot write {shown}: a test file could not be made in the folder {a} "
                                 f"({exc.strerror or exc}); {fix}", param_hint=option) from None


#: file suffixes of the formats hspr writes, and of the inputs a user keeps (a bank, a session, a figure)
_SUFFIXES = MappingProxyType({"json": (".json",), "csv": (".csv",)})
_DATA_SUFFIXES = (".json", ".jsonl", ".ndjson", ".csv", ".tsv", ".txt", ".hspr", ".png", ".svg", ".parquet", ".xlsx")


def check_output_suffix(path: str | os.PathLike | None, option: str, kind: str) -> None:
    """click.BadParameter naming ``option`` when output file ``path``, written as ``kind``
    (``"json"``, ``"csv"``), is named with the suffix of another format: ``select --out bank.csv``
    wrote JSON over a bank. A name without a known suffix (``/dev/stdout``, ``out``) passes; None passes.
    """
    if path is None:
        return
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix in _DATA_SUFFIXES and suffix not in _SUFFIXES[kind]:
        raise click.BadParameter(f"{p}: {option} is written as {kind.upper()}, and the name ends in {p.suffix}, the "
                                 f"suffix of another format (a bank, a session, a figure?): name it "
                                 f"{p.with_suffix(_SUFFIXES[kind][0]).name}", param_hint=option)


def refuse_folder_name(path: str | os.PathLike | None, option: str) -> None:
    """click.BadParameter when the text of output file ``path`` names a folder: ``x/``, ``x/.`` or ``x/..``.
    Check the text as given: ``Path`` drops a final ``/`` or ``/.``, and 'keep.txt/' or 'k.txt/.' then
    wrote over keep.txt (a hostile trial, two re-trials)."""
    if path is not None and (str(path).endswith(("/", os.sep)) or os.path.basename(str(path)) in (".", "..")):
        raise click.BadParameter(f"{path} names a folder (it ends with '/', '/.' or '/..'); give a file name",
                                 param_hint=option)


def check_output_file(path: str | os.PathLike | None, option: str) -> Path | None:
    """Check that file ``path`` can be written (missing folders are created when it is); None passes.

    Nothing is left behind (a one-byte temporary file tests the folder). Raises click.BadParameter naming
    ``option`` when ``path`` is a folder, or when the first existing folder above it is a file or not writable.
    """
    if path is None:
        return None
    if not str(path).strip():  # an unset shell variable: Path('') is the current folder
        raise click.BadParameter("an empty path; give a file name", param_hint=option)
    if str(path).strip() == "-":  # a hostile trial: `replay --out -` wrote a file named '-'
        raise click.BadParameter("'-' is not stdout here: it would write a file named '-'; give a file name (or "
                                 "/dev/stdout to print it)", param_hint=option)
    p = Path(path)
    if p.is_dir():
        raise click.BadParameter(f"{p} is a folder; give a file name", param_hint=option)
    refuse_folder_name(path, option)
    refuse_session_target(p, option)
    _writable_ancestor(p, option)
    return p


def _resolved(p: Path) -> Path:
    try:
        return p.resolve()
    except (OSError, RuntimeError):  # a symlink loop: its own error comes later
        return p


def refuse_session_target(path: str | os.PathLike | None, option: str) -> None:
    """click.BadParameter when output file ``path`` is an existing hspr live session file (of any
    name; :func:`hspr.harness.is_session_file`): its outcomes are a user's paid-for runs, and
    no other command's output may replace them. None or a missing file passes."""
    from ..harness import is_session_file

    if path is not None and is_session_file(path):
        raise click.BadParameter(f"{path} is an hspr live session file (its recorded outcomes would be lost); "
                                 "choose another file", param_hint=option)
    refuse_session_sidecar(path, option)


def refuse_session_sidecar(path: str | os.PathLike | None, option: str) -> None:
    """click.BadParameter when output file ``path`` (through symlinks) is a live session's lock file or the
    kept bytes of its torn record (``<session>.lock`` / ``.torn`` beside a session file). A re-trial:
    another session's lock file was replaced, by ``next --out`` and by ``start --force``, and a new
    inode there lets two commands change that session at once."""
    from ..harness import is_session_file

    p = None if path is None else _resolved(Path(path))
    if p is not None and p.suffix in (".lock", ".torn") and is_session_file(p.with_suffix("")):
        what = "lock file" if p.suffix == ".lock" else "kept bytes of a torn record"
        raise click.BadParameter(f"{path} is the {what} of the session {p.with_suffix('')}; choose another file",
                                 param_hint=option)


def is_results_doc(doc) -> bool:
    """Whether parsed JSON ``doc`` is an ``hspr replay --out`` results file (a ``runs`` list)."""
    return isinstance(doc, dict) and isinstance(doc.get("runs"), list)


def is_select_result(doc) -> bool:
    """Whether parsed JSON ``doc`` is an ``hspr select --out`` result."""
    return isinstance(doc, dict) and {"fold", "command", "stages"} <= set(doc)


def _json_kind(doc) -> str:
    """What the JSON ``doc`` is, as :func:`refuse_replacing_other_json` names it."""
    from ..methods.hspr.config import is_selection_table

    if is_results_doc(doc):
        return "an `hspr replay` results file"
    if is_select_result(doc):
        return "an `hspr select` result"
    if is_selection_table(doc):
        return "a table of selections (`hspr select --record`)"
    if doc and is_config_doc(doc):  # a hostile trial: a --config-out file was called foreign JSON
        return "a configuration file of HSPR settings (`hspr select --config-out`)"
    return "JSON that no hspr command writes there"


def is_config_doc(doc) -> bool:
    """Whether JSON ``doc`` reads as an HSPRConfig (what ``hspr select --config-out`` writes; ``{}`` too:
    every setting at its default, as ``replay --config`` reads it)."""
    from ..methods.hspr import HSPRConfig

    try:
        return isinstance(doc, dict) and HSPRConfig.from_dict(doc) is not None
    except (ValueError, TypeError):
        return False


def _existing_file(path: str | os.PathLike | None) -> Path | None:
    """``path`` as a Path when it names an existing regular file (a link to one included) that a write would
    replace, else None: a descriptor path (``/dev/stdout >> log.txt``) is written into, not replaced (a re-trial:
    appending the results to a log was refused as replacing a file that is not JSON)."""
    return None if path is None or is_descriptor_path(path) or not Path(path).is_file() else Path(path)


def refuse_replacing_other_json(path: str | os.PathLike | None, option: str, is_kind, kind: str) -> object | None:
    """click.BadParameter, before any work, when the file at ``path`` exists, holds more than white
    space and is not a ``kind`` (``is_kind(parsed JSON)`` false, or not JSON at all): a command's
    JSON output replaces an earlier output of its own kind, not another of the user's files (a hostile
    trial: `replay --out table.json` replaced a `select --record` table, `select --out` a replay's
    results). None, a missing or blank file pass; of a file over 64 MB only the head is read (an hspr
    output begins with its ``hspr_version``; a budget sweep's results on Verified are 70 MB). A UTF-8
    byte-order mark is read as hspr's readers read it. Returns the file's parsed JSON when it is a
    ``kind`` (the earlier output, read once), else None (no file, a blank one, one over 64 MB)."""
    p = _existing_file(path)
    if p is None:
        return None
    try:
        if p.stat().st_size > 64 * 2**20:  # not read whole (a 500,000-run file took 7 s and 1 GB): its head
            with open(p, encoding="utf-8-sig", errors="replace") as fh:
                head = fh.read(4096)
            if head.lstrip().startswith("{") and '"hspr_version"' in head:  # a large results file (a sweep: 70 MB)
                return None
            what = "over 64 MB and does not begin as an hspr output"
        else:
            import json

            text = p.read_text(encoding="utf-8-sig")
            if not text.strip():
                return None
            doc = json.loads(text)
            if is_kind(doc):
                return doc
            what = _json_kind(doc)
    except (OSError, UnicodeDecodeError, ValueError):
        what = "not JSON"
    raise click.BadParameter(f"{p} exists and is {what}; this command replaces only {kind}: give another file name "
                             "(or move that file)", param_hint=option)


def refuse_replacing_other_csv(path: str | os.PathLike | None, option: str, header: str, kind: str,
                               others: Mapping[str, str] = MappingProxyType({})) -> None:
    """click.BadParameter, before any work, when the file at ``path`` exists, holds more than white
    space and its first line does not begin with ``header`` (how a ``kind`` begins), or names a column
    of ``others`` (column -> the kind of file it marks, one that begins alike): as
    :func:`refuse_replacing_other_json`, for a CSV output (a re-trial: `replay --csv bank.csv` replaced
    a response matrix with a summary table; a hostile trial: it replaced a report's comparison.csv)."""
    p = _existing_file(path)
    if p is None:
        return
    try:
        with open(p, encoding="utf-8-sig", errors="replace") as fh:
            first = fh.readline(1 << 16).strip()
            if not first and not fh.read(1 << 16).strip():
                return
    except OSError:
        return  # the write names the problem
    other = next((what for col, what in others.items() if col in first.split(",")), None)
    if first.startswith(header) and other is None:
        return
    said = f"is {other}, not {kind}" if other else f"is not {kind} (its first line is {first[:60]!r})"
    raise click.BadParameter(f"{p} exists and {said}; this command replaces only its own: give another file name (or "
                             "move that file)", param_hint=option)


def os_error_message(exc: OSError, where: str | os.PathLike | None = None) -> str:
    """One line for an OSError (full disk, lost permission, vanished folder): the file, the reason, the fix.

    ``where`` names the file or folder being written when the error itself carries no file name
    (a failed ``write`` of an open file: a full disk or the size limit)."""
    name = exc.filename or where
    fix = OS_FIXES.get(exc.errno, "free space, fix the permissions or choose another path")
    if name and os.path.isdir(name):  # a trial: a folder it could not read was called a file
        fix = fix.replace("the file's", "the folder's")
    elif name and exc.errno == errno.EACCES and not os.access(os.path.dirname(os.path.abspath(name)), os.X_OK):
        # a re-trial: a file in a folder that could not be entered was told to fix the file's permissions
        fix = f"fix the permissions of its folder {os.path.dirname(os.path.abspath(name))} (it cannot be entered)"
    # a crash-safety trial: a full disk under stdout was reported as if the session's disk were full
    what = f"{name}: " if name else "writing this command's output (stdout, or its --out file): "
    return f"{what}{exc.strerror or exc}; {fix}, then run the command again"


def spare_copy(payload: dict | bytes, prefix: str, suffix: str = ".json") -> str | None:
    """Write ``payload`` (a dict as JSON, bytes as they are) to a new file in the temporary folder, when
    the output it was meant for could not be written (full disk, lost permission), so the work is not
    lost; returns that file's path, or None when it cannot be written either."""
    import tempfile

    from ..fileio import write_bytes_durable, write_json_durable

    try:
        fd, spare = tempfile.mkstemp(prefix=prefix, suffix=suffix)
        os.close(fd)
        if isinstance(payload, bytes):
            write_bytes_durable(payload, Path(spare))
        else:
            write_json_durable(payload, Path(spare))
        return spare
    except OSError:
        return None


def os_fix(exc: OSError) -> str:
    """The fix an OSError calls for (:data:`OS_FIXES`), as the start of a sentence."""
    fix = OS_FIXES.get(exc.errno, "free space, fix the permissions")
    return fix[0].upper() + fix[1:]


def same_file(a: str | os.PathLike, b: str | os.PathLike) -> bool:
    """True when paths ``a`` and ``b`` name the same file (through links, ``..``, case-folding file systems)."""
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist yet
        try:
            return Path(a).resolve() == Path(b).resolve()
        except (OSError, RuntimeError):  # a symlink loop: no file, so not an input
            return False


def refuse_overwriting_inputs(out: str | os.PathLike | None, option: str,
                              inputs: dict[str, str | os.PathLike | None]) -> None:
    """click.BadParameter when output file ``out`` (given by ``option``) is one of the ``inputs``,
    or lies inside an input that is a folder (a bank folder's ``matrix.csv`` or ``metadata.json``).

    ``inputs`` maps a description (an option name such as ``--matrix``, or "the session file")
    to a path or None. Writing there would destroy the input, so nothing is written.
    """
    if out is None:
        return
    for what, p in inputs.items():
        if p is None:
            continue
        if same_file(out, p):
            raise click.BadParameter(f"{option} {out} is also {what}; writing there would overwrite it: choose "
                                     "another file", param_hint=option)
        folder = bank_dir_of(p) or Path(p)  # a bank folder given by its matrix.csv: the folder is the input
        if folder.is_dir() and Path(out).resolve().is_relative_to(folder.resolve()):
            raise click.BadParameter(f"{option} {out} is inside {what} ({p}); writing there could overwrite a file "
                                     "of that input: choose a file outside it", param_hint=option)


def console(stderr: bool = False, **kwargs):
    """A rich Console whose closed pipe (``hspr banks | head -1``) is the CLI's quiet exit 0.

    rich's own answer to a reader that stopped reading is exit status 1, which fails a script
    under ``set -o pipefail`` although the command did its work; here the BrokenPipeError goes
    on to the CLI's handler (:meth:`hspr.cli.LazyGroup.invoke`) instead.
    """
    from rich.console import Console

    class _Console(Console):
        def on_broken_pipe(self) -> None:
            self.quiet = True
            raise BrokenPipeError

    return _Console(stderr=stderr, **kwargs)


def table_console(err, *outputs):
    """The console a command prints its result table on: ``err`` (stderr) when one of
    ``outputs`` (paths, or None) names stdout, so that stdout holds the file alone
    (``--out /dev/stdout > r.json``), else a new stdout console, 160 columns wide when piped.
    """
    if any(names_stdout(p) for p in outputs):
        return err
    return console(width=None if sys.stdout.isatty() else 160)


def _layout(out, table) -> tuple[list[tuple[int, int]], int]:
    """Per column of ``table`` its (narrowest, natural) content width on ``out``, and the width of
    the borders and padding: the narrowest rendering wraps headers and cells at spaces, except in
    a ``no_wrap`` column and a ``no_wrap`` Text cell."""
    from rich.measure import Measurement
    from rich.text import Text

    wide = out.options.update_width(10_000)  # rich clamps a measure to the console's width
    cols = []
    for c in table.columns:
        ms = [Measurement.get(out, wide, x) for x in (c.header, *c.cells)]
        hi = max(m.maximum for m in ms)
        # a cell that must stay on one line (a Text with no_wrap: a number and its mark, an interval) at its width
        lo = max(m.maximum if isinstance(x, Text) and x.no_wrap else m.minimum for m, x in zip(ms, (c.header, *c.cells)))
        cols.append((hi if c.no_wrap else lo, hi))
    return cols, out.measure(table, options=wide).maximum - sum(hi for _, hi in cols)


def _print_whole(out, table) -> None:
    """Print ``table`` with no cell cut short: where its natural width exceeds the console's, each
    column gets a fixed width, its narrowest rendering plus a share of the spare columns, left to
    right; a table whose narrowest rendering is wider than the console is printed uncropped at
    that width (the terminal wraps its lines).

    rich's own fitting shrinks the widest columns first, past their narrowest rendering, and
    crops what no longer fits: "Kendall τ_b" became "Kenda…" (a trial).
    """
    cols, extra = _layout(out, table)
    if sum(hi for _, hi in cols) + extra <= out.width:
        out.print(table)
        return
    spare = out.width - sum(lo for lo, _ in cols) - extra
    fixed = copy.copy(table)
    fixed.columns = []
    for (lo, hi), c in zip(cols, table.columns):
        c = copy.copy(c)
        give = min(max(spare, 0), hi - lo)
        spare -= give
        c.width = lo + give
        fixed.columns.append(c)
    total = sum(c.width for c in fixed.columns) + extra
    if total > out.width:  # rich would fit it to the console by cropping
        fixed.width = total
    out.print(fixed, crop=False)


def _min_width(out, table) -> int:
    cols, extra = _layout(out, table)
    return sum(lo for lo, _ in cols) + extra


def print_table(out, table, keep: int = 2) -> None:
    """Print a rich Table on ``out`` (a rich Console) without cutting any cell short.

    rich fits a table wider than the console by cropping cells, so on an 80-column terminal
    `hspr report` printed MAE "3…" (a trial). When the table's narrowest rendering (headers
    wrapped at spaces, no cell cut) is wider than the console, its columns after the first
    ``keep`` (the labels, e.g. bank and method) are printed in blocks, each repeating those
    ``keep`` columns, as pandas prints a wide frame; the title goes above the first block and the
    caption below the last. A block that cannot fit even one more column beside the labels gets
    it anyway (the terminal then wraps the lines; no cell is cut).

    Parameters
    ----------
    out : rich.console.Console
    table : rich.table.Table
    keep : int
        Leading columns repeated in every block.
    """
    if _min_width(out, table) <= out.width or len(table.columns) <= keep + 1:
        _print_whole(out, table)
        return

    from rich.text import Text

    def part(cols: list[int], first: bool, last: bool):
        sub = copy.copy(table)
        sub.columns = [table.columns[i] for i in cols]
        sub.title = table.title if first else None
        sub.caption = table.caption if last else None
        return sub

    rest = list(range(keep, len(table.columns)))
    blocks: list[list[int]] = []
    while rest:
        take = 1
        while take < len(rest) and _min_width(out, part(list(range(keep)) + rest[:take + 1], True, True)) <= out.width:
            take += 1
        blocks.append(rest[:take])
        rest = rest[take:]
    for k, cols in enumerate(blocks):
        sub = part(list(range(keep)) + cols, k == 0, k == len(blocks) - 1)
        if k and table.title:  # a new-user trial: a later block had no title to say what it belonged to
            sub.title = Text.assemble(table.title if isinstance(table.title, Text) else Text(str(table.title)),
                                      " (continued)")
        _print_whole(out, sub)


def _counts(task) -> str:
    """``done/total`` as rich's MofNCompleteColumn prints it (``?`` for an unknown total)."""
    return f"{int(task.completed)}/{'?' if task.total is None else int(task.total)}"


def _fit_columns(width: int, tasks) -> list:
    """The columns of :func:`progress_bar` for a console ``width`` columns wide: the counts always;
    the time elapsed from 40 columns, the bar from 40 (8-40 characters, as the longest description
    leaves room) and the time left from 70; the description gets the rest and is cut ("...") last."""
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn
    from rich.table import Column

    counts = max((len(_counts(t)) for t in tasks), default=3)
    tail = counts + 1 + (8 if width >= 40 else 0) + (8 if width >= 70 else 0)  # ' 0:00:00', ' -:--:--'
    longest = max((len(t.description) for t in tasks), default=0)
    bar = 0 if width < 40 else min(40, max(8, width - tail - longest - 1))
    room = max(4, width - tail - (bar + 1 if bar else 0))
    whole = Column(no_wrap=True)
    columns = [TextColumn("{task.description}", table_column=Column(no_wrap=True, overflow="ellipsis", max_width=room))]
    columns += [BarColumn(bar_width=bar)] if bar else []
    columns += [MofNCompleteColumn(table_column=whole)]
    columns += [TimeElapsedColumn(table_column=whole)] if width >= 40 else []
    columns += [TimeRemainingColumn(table_column=whole)] if width >= 70 else []
    return columns


def progress_bar(out, disable: bool = False, log_every: float = 30.0, clock: Callable[[], float] | None = None):
    """A rich ``Progress`` for a long job (description, bar, done/total, time elapsed, time left) that
    keeps its counts and times whole on a narrow terminal, laid out again at every refresh (a
    resized terminal too; :func:`_fit_columns`). rich's default cut them to "1..." and "0:..." at 50
    columns (a trial of ``hspr select``). ``out``: the rich Console it draws on.

    On a console that is no terminal (a CI log, ``2> log``), where rich draws the bar only once at the
    end, a plain line such as ``replay lite: 30/120 (25 %), 70 s`` is printed at an advance at least
    ``log_every`` seconds after the previous line (or the start): a scripting trial's 20-minute replay
    was otherwise silent in its log until it ended. With the real clock (``clock`` None) the line is also
    printed when no advance came for ``log_every`` seconds, from a thread that ends with the bar (a new-user
    trial's replay of ``hspr_robust`` sat at 0 of 12 for 112 s, its log silent, while the first fit's
    calibration ran). ``clock``: the time in seconds (default ``time.monotonic``)."""
    import threading
    import time

    from rich.progress import Progress

    now = clock or time.monotonic
    beats = clock is None and not disable and not out.is_terminal and log_every > 0

    class _Fitted(Progress):
        logged = now()
        _beat: tuple[threading.Thread, threading.Event] | None = None  # the thread of the plain lines, its stop

        def start(self) -> None:
            super().start()
            if beats and self._beat is None:
                self._beat = (threading.Thread(target=self._beat_lines, args=(quiet := threading.Event(),),
                                               name="hspr-progress-log", daemon=True), quiet)
                self._beat[0].start()

        def stop(self) -> None:
            if self._beat is not None:
                self._beat[1].set()
                self._beat[0].join()
                self._beat = None
            super().stop()

        def _beat_lines(self, quiet: threading.Event) -> None:
            while not quiet.wait(log_every / 4):
                for task in list(self.tasks):
                    if not task.finished:
                        self._log(task.id)

        def make_tasks_table(self, tasks):
            self.columns = tuple(_fit_columns(out.width, tasks))  # (self.console: not yet set on the first call)
            return super().make_tasks_table(tasks)

        def advance(self, task_id, advance: float = 1) -> None:
            super().advance(task_id, advance)
            self._log(task_id)

        def update(self, task_id, **kwargs) -> None:
            super().update(task_id, **kwargs)
            self._log(task_id)

        def _log(self, task_id) -> None:
            t = now()
            if self.disable or out.is_terminal or t - self.logged < log_every:
                return
            task = next((x for x in self.tasks if x.id == task_id), None)
            if task is None or not task.total:
                return
            self.logged = t
            out.print(f"{task.description}: {task.completed:g}/{task.total:g} ({100 * task.completed / task.total:.0f} %), "
                      f"{task.elapsed or 0:.0f} s", highlight=False, soft_wrap=True)

    return _Fitted(*_fit_columns(out.width, ()), console=out, disable=disable)


def _middle_cut(text: str, limit: int) -> str:
    """``text`` with its middle replaced by "…" to at most ``limit`` terminal cells (a path keeps its
    start and its last folders; a wide character such as 数 takes two cells: a re-trial lost the
    line's end to them)."""
    from rich.cells import cell_len

    if cell_len(text) <= limit:
        return text
    head_cells = max(limit - 1, 2) // 3
    head = ""
    for ch in text:
        if cell_len(head + ch) > head_cells:
            break
        head += ch
    tail = ""
    for ch in reversed(text):
        if cell_len(head + "…" + ch + tail) > limit:
            break
        tail = ch + tail
    return head + "…" + tail


#: cells of a :func:`busy` line besides its text: the spinner and ' 0:00:00'
_SPINNER_CELLS = 12


@contextlib.contextmanager
def busy(text: str, tail: str = "") -> Iterator[None]:
    """Say on stderr that a long step runs: a spinner with the time elapsed on a terminal, else one
    line before and one with the time taken after (a script's log or a CI job then shows what the
    command waited for, and how long).

    On a terminal the line keeps its spinner and time: ``text`` is cut in the middle to fit (a
    hostile trial: a long path froze the line, the time gone), ``tail`` (e.g. "(Ctrl-C stops)")
    kept whole; warnings raised inside are shown after the spinner is cleared (one printed meanwhile
    was glued to a spinner frame)."""
    import time

    from rich.markup import escape
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
    from rich.table import Column

    from ..errors import held_warnings

    err = console(stderr=True)
    if err.is_terminal:
        room = max(err.width - _SPINNER_CELLS, 8)
        if room - len(tail) - 1 < 12:  # too narrow for both: the text, not the tail (a re-trial: '… (Ctrl-C …')
            tail = ""
        line = _middle_cut(text, room - (len(tail) + 1 if tail else 0)) + (f" {tail}" if tail else "")
        columns = (SpinnerColumn(), TextColumn("{task.description}", table_column=Column(
            no_wrap=True, overflow="ellipsis", max_width=room)), TimeElapsedColumn(table_column=Column(no_wrap=True)))
        # said after the spinner, also when the step fails (through the caller's handler: a --json object's list)
        with held_warnings(), Progress(*columns, console=err, transient=True) as progress:
            progress.add_task(escape(line), total=None)  # an agent id such as 'x[bash-only]' is text, not markup
            yield
    else:
        def say(line: str) -> None:
            # a reader that stopped reading stderr (`hspr live start ... 2>&1 | head -1`) must not stop the work:
            # a trial's session was never written, with exit status 0; later lines go to the null device
            try:
                err.print(line, highlight=False, soft_wrap=True)
            except BrokenPipeError:
                import sys

                to_null_device(sys.stderr)

        say(f"{escape(text + (f' {tail}' if tail else ''))} ...")
        start = time.perf_counter()
        yield
        say(f"... done in {time.perf_counter() - start:.0f} s")


@contextlib.contextmanager
def reading(path: str | os.PathLike | None) -> Iterator[None]:
    """A spinner (:func:`busy`) while the folder ``path`` is searched for result files, on a terminal
    only: a whole tree is walked (a user's home folder takes minutes, and said nothing before); a
    file, no path, or stderr that is not a terminal (a script's log stays as it was) show nothing."""
    err = console(stderr=True)
    if path is not None and os.fspath(path) != "" and Path(path).is_dir() and err.is_terminal:
        tail = "(Ctrl-C stops)"
        room = err.width - _SPINNER_CELLS - 1 - len(tail)  # the spinner, the time, a space and the tail
        if room < 8 + 12:  # narrow: what is done, and where, before the tail
            tail, room = "", err.width - _SPINNER_CELLS
        # the words shorten before the path is cut to nothing (a re-trial: 'read…elow …lb' at 50 columns)
        what = "reading every result file below " if room >= 32 + 20 else "reading " if room >= 8 + 6 else ""
        shown = os.fspath(path).replace("\n", "\\n").replace("\r", "\\r")  # one line, whatever the name
        with busy(what + _middle_cut(shown, max(room - len(what), 8)), tail):
            yield
    else:
        yield


@contextlib.contextmanager
def input_warnings() -> Iterator[list[str]]:
    """Collect the :class:`~hspr.errors.InputWarning` messages raised inside, for a ``--json``
    object (``input_warnings``), and print every warning on stderr as one ``warning:`` line
    (each message once, :func:`say_warning`) as it is raised: before an error that follows it (a
    re-trial: held to the end, the warning came after the error it explains)."""
    import warnings

    from ..errors import InputWarning

    found: list[str] = []

    def show(message, category, filename, lineno, file=None, line=None):
        text = str(message)
        if issubclass(category, InputWarning) and text not in found:
            found.append(text)
        say_warning(text)

    with warnings.catch_warnings():
        warnings.simplefilter("always", InputWarning)
        warnings.showwarning = show
        yield found


#: characters a label of a user's matrix may not hold: '/' marks a shift protocol (verified/bash-only),
#: '[' a variant of a run ([stop 5 pp], [300 tasks]), '|' and line breaks break the report's tables
LABEL_FORBIDDEN = "/[]|\n\r"


def _names_bundled_bank(text: str) -> bool:
    """Whether ``text`` is a bundled bank's name (any letter case, surrounding spaces ignored) or 'all'."""
    from ..data.banks import BANKS

    return text.strip().lower() in (*BANKS, "all")


def label_problem(text: str, reserved: bool = True) -> str | None:
    """Why ``text`` cannot label a user's results, or None: empty, a reserved name (with
    ``reserved``: a bundled bank's name in any letter case, 'all', the report's 'macro' / 'pooled'),
    or a character of :data:`LABEL_FORBIDDEN`."""
    from ..report.inputs import MACRO, POOLED

    if not text.strip():
        return "is empty"
    if reserved and (_names_bundled_bank(text) or text.strip().lower() in (MACRO, POOLED)):
        return "is reserved (a bundled bank, 'all', or a row of the report)"
    bad = sorted({c for c in text if c in LABEL_FORBIDDEN})
    if bad:
        return f"holds {', '.join(map(repr, bad))} ('/' marks a protocol, '[' a run variant)"
    return None


def check_matrix_label(label: str | None, matrix: str | os.PathLike | None = None) -> None:
    """click.BadParameter when the label of a user's matrix could be confused with another result
    (:func:`label_problem`). ``label`` is ``--bank`` given with ``--matrix``; None means the label
    is the file name of ``matrix``, checked the same way."""
    if label is not None and (why := label_problem(label)):
        raise click.BadParameter(f"the label {label!r} {why}; with --matrix, --bank is a label for your results: "
                                 "choose another (or leave --bank out to use the file name)", param_hint="--bank")
    if label is None and matrix is not None and (why := label_problem(Path(matrix).stem)):
        raise click.BadParameter(f"{matrix}: results are labelled by its file name {Path(matrix).stem!r}, which {why}; "
                                 "give a label with --bank LABEL", param_hint="--matrix")


def check_session_bank_label(label: str | None) -> None:
    """click.BadParameter when ``--bank`` given with ``--matrix`` to ``live start`` names a bundled
    bank (any letter case) or 'all': the session would then read as one on that bank. A session is
    never pooled in a report, so other labels are free."""
    if label is not None and _names_bundled_bank(label):
        raise click.BadParameter(f"the label {label!r} names a bundled bank; with --matrix, --bank is a label for your "
                                 "matrix: choose another (or leave --bank out to use the file name)",
                                 param_hint="--bank")


def check_output_dir(path: str | os.PathLike, option: str) -> Path:
    """Check that folder ``path`` exists and is writable, or can be created (click.BadParameter).

    An empty name is refused (it meant the current folder, where the outputs could replace a
    user's files of the same names)."""
    if not str(path).strip():
        raise click.BadParameter("the folder name is empty; give a folder, e.g. report (use . for the current one)",
                                 param_hint=option)
    p = Path(path)
    if p.is_symlink() and not p.exists():  # a re-trial: told 'could not be created (File exists)'
        _refuse_broken_link(p, option)
        raise click.BadParameter(f"{p} is a link to {os.path.realpath(p)}, which does not exist; make that folder, or "
                                 "give another", param_hint=option)
    if p.exists() and not p.is_dir():
        raise click.BadParameter(f"{p} is a file; give a folder", param_hint=option)
    if p.is_dir():
        if os.path.realpath(p) == "/dev":  # as root every check below passes, and the outputs were written among devices
            shown = f"{p} (a link to /dev)" if p.is_symlink() else str(p)
            raise click.BadParameter(f"cannot write into {shown}: {_DEV_WORDS}", param_hint=option)
        _takes_files(p, p, str(p), option, holds_file=True)  # a re-trial: as root, /sys/kernel passed, and the report failed
        return p
    _writable_ancestor(p, option, folder=True)  # (a re-trial: a new report folder in an append-only one was refused)
    return p


def check_workers(ctx, param, value: int) -> int:
    """click callback: joblib worker count, a positive integer or -1 (all cores).

    Raises
    ------
    click.BadParameter for 0 or below -1, naming the fix.
    """
    if value == 0 or value < -1:
        raise click.BadParameter(f"{value}: give a positive number of workers, or -1 for all cores")
    return value


def environment(methods: Sequence[str] = ()) -> dict:
    """Versions a result depends on (the optimiser-based peers' numbers move with scipy and
    scikit-learn releases), for the ``environment`` field of replay and select outputs; with
    ``methods``, ``method_packages``: each method an installed package registers, with that package
    and its version (a trial: a results file did not say where its method came from)."""
    import platform
    from importlib import metadata

    from ..methods import method_package

    out = {"hspr": __import__("hspr").__version__, "python": platform.python_version(),
           "machine": platform.machine(), "cpus": os.cpu_count()}
    for dist in ("numpy", "scipy", "scikit-learn", "pandas", "joblib"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = None
    out["processor"], out["blas"] = _processor(), _blas()
    theirs = {m: p for m in methods if (p := method_package(m)) is not None}
    return {**out, "method_packages": theirs} if theirs else out


def _processor() -> str | None:
    """The processor's model name (Linux ``/proc/cpuinfo``; else :func:`platform.processor`), None when unknown."""
    import platform

    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip() or None
    except OSError:
        pass
    return platform.processor() or None


def _blas() -> str | None:
    """numpy's BLAS library, its version and the kernels it chose for this processor (threadpoolctl, installed
    with scikit-learn), e.g. 'openblas 0.3.31 (Haswell kernels)'; None when unknown. The kernels decide the last
    bits of sums, which can move an optimiser's stopping point (docs/replay.md, "The same runs elsewhere")."""
    try:
        import numpy  # noqa: F401  (loads its BLAS, which threadpoolctl then finds)
        from threadpoolctl import threadpool_info

        lib = next((i for i in threadpool_info() if i.get("user_api") == "blas"), None)
    except Exception:  # pragma: no cover - threadpoolctl missing or failing: the field is informative only
        return None
    if lib is None:
        return None
    kernels = f" ({lib['architecture']} kernels)" if lib.get("architecture") else ""
    return f"{lib.get('internal_api')} {lib.get('version')}{kernels}"


def local_workers(workers: int, scheduler: str | None, console) -> int:
    """``workers``, or this machine's core count when more were asked for and no remote cluster
    (``--scheduler``) runs them: more local processes than cores only add start-up and switching
    (1,000 workers made a one-second replay take three minutes). The cap is noted on ``console``."""
    cores = os.cpu_count() or 1
    if scheduler is None and workers > cores:
        console.print(f"note: --workers {workers} is more than this machine's {cores} core(s); using {cores}",
                      highlight=False)
        return cores
    return workers


def check_backend(backend: str | None, scheduler: str | None) -> None:
    """--scheduler needs --backend dask or ray (click.UsageError otherwise)."""
    if scheduler and backend not in ("dask", "ray"):
        raise click.UsageError("--scheduler needs --backend dask or --backend ray (it names that cluster's address)")


def backend_options(f):
    """The --backend and --scheduler options shared by `hspr replay` and `hspr select`."""
    f = click.option("--scheduler", default=None, help="Address of an existing dask scheduler or ray cluster.")(f)
    return click.option("--backend", default=None, type=click.Choice(list(BACKENDS)),
                        help="joblib backend (default loky, local processes). dask / ray need their extras "
                             "(pip install \"hspr[dask]\" or \"hspr[ray]\"); without --scheduler a local cluster "
                             "of --workers is started.")(f)


def completer(words, files: bool = False, comma: bool = False, alone: tuple[str, ...] = (),
              prefer_files: bool = False):
    """A click ``shell_complete`` callback: the ``words`` that start with what is typed, and file
    names too with ``files`` (a bundled bank's name or a matrix file); with ``comma`` each item of
    a comma-separated list (``--methods hspr,uni<TAB>``), leaving out the items already in the list
    and the ``alone`` words (``all``), which stand alone. ``words``: strings, or a callable giving
    them (read when the shell asks). Shell completion: README, "Shell completion".

    In bash, where a word matches, file names are not offered beside it: click's bash script clears
    the words for a file item (a trial: ``hspr bank agents ver<TAB>`` gave ``verified_copy.csv``, and
    ``--targets ba<TAB>`` nothing); typing on past every word (``./``, ``verified_``) gives the files.
    With ``prefer_files`` (an option whose value is usually a file, ``replay --config``) it is the
    other way round in bash: the files while any name starts with what is typed, else the words."""
    def complete(ctx, param, incomplete: str):
        from click.shell_completion import CompletionItem

        head, sep, last = incomplete.rpartition(",") if comma else ("", "", incomplete)
        listed = set(head.split(",")) if head else set()
        out = [] if listed & set(alone) else [  # nothing goes with a word that stands alone
            CompletionItem(head + sep + w) for w in (words() if callable(words) else words)
            if w.startswith(last) and w not in listed and not (listed and w in alone)]
        bash = os.environ.get("_HSPR_COMPLETE", "").startswith("bash")  # click's variable for the `hspr` command
        if bash and out and files and prefer_files and _names_start(incomplete):
            return [CompletionItem(incomplete, type="file")]  # a re-trial: `--config <TAB>` wrote `auto` at once
        return out + ([CompletionItem(incomplete, type="file")] if files and not (out and bash) else [])

    return complete


def _names_start(typed: str) -> bool:
    """Whether a file or folder name starts with ``typed`` (a path as typed, ``~`` expanded; hidden
    names only when ``typed`` names a dot), for shell completion."""
    folder, _, start = os.path.expanduser(typed).rpartition("/")
    try:
        with os.scandir(folder + "/" if folder else (".", "/")[typed.startswith("/")]) as it:
            return any(e.name.startswith(start) and (start.startswith(".") or not e.name.startswith(".")) for e in it)
    except OSError:  # an unreadable or missing folder: no names
        return False


class LazyHelpOption(click.Option):
    """A click option whose help text is made when help is shown (``help_text``, a callable): text
    that imports modules to be written (every method class, for ``--methods``) costs nothing on the
    other runs of the command, shell completion's among them (a trial: 1.3 s per TAB)."""

    def __init__(self, *args, help_text: Callable[[], str], **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._help_text = help_text

    def get_help_record(self, ctx: click.Context):
        self.help = self._help_text()
        return super().get_help_record(ctx)


def print_error(console, exc) -> None:
    """Print ``error: <message>`` on ``console`` unwrapped, with no rich markup read in the message."""
    from rich.markup import escape  # here only: importing rich.markup costs 20-40 ms of every live command

    console.print(f"[red]error:[/red] {escape(str(exc))}", highlight=False, soft_wrap=True)


@contextlib.contextmanager
def connected(backend: str | None, scheduler: str | None, n_workers: int) -> Iterator[str | None]:
    """:func:`hspr.parallel.cluster` with connection failures turned into click errors.

    A missing extra or an unreachable scheduler raises :class:`CliError` (exit 2 with a
    message naming --backend / --scheduler and the fix) before any work starts.
    """
    with contextlib.ExitStack() as stack:
        try:
            name = stack.enter_context(cluster(backend, scheduler, n_workers))
        except ImportError:
            raise CliError(f"--backend {backend} needs its extra: pip install \"{EXTRAS.get(backend, 'hspr')}\"") from None
        except (OSError, TimeoutError, ValueError, RuntimeError, MemoryError) as exc:
            where = f"--scheduler {scheduler}" if scheduler else f"a local {backend} cluster"
            raise CliError(f"could not connect to {where} ({type(exc).__name__}: {exc}); check the address "
                           "(dask: tcp://host:8786; ray: auto or ray://host:10001) and that the cluster runs") from None
        yield name
