"""Checks of output paths, made before any long computation: a file or folder the command will write must be
writable as :mod:`hspr.fileio` writes it (a temporary file moved over it), must not replace a file of another kind
(a session, a results file, an input of the same command), and an error writing it is said in words with the fix.
"""

from __future__ import annotations

import errno
import os
import tempfile
from collections.abc import Mapping
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
)


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
    if in_dev(a):
        raise click.BadParameter(f"cannot create {shown or p}: {_DEV_WORDS}", param_hint=option)


def in_dev(folder: Path) -> bool:
    """Whether existing folder ``folder`` (through links) is ``/dev`` or a folder under it (``/dev/net``, ``/dev/cpu/0``),
    where files are not made: a hostile trial wrote reports and sessions into existing folders there, as root. The
    shared-memory folder ``/dev/shm`` (and its folders) takes files."""
    real = os.path.realpath(folder)
    return (real == "/dev" or real.startswith("/dev/")) and not (real == "/dev/shm" or real.startswith("/dev/shm/"))


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
        raise click.BadParameter("an empty path (an unset shell variable?); give a file name", param_hint=option)
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


def refuse_unfit_session(path: str | os.PathLike, option: str) -> None:
    """click.BadParameter, naming ``option``, when ``path``, given for a new session, cannot be one
    (:func:`hspr.live.session.refuse_unfit_session_path`), before the bank is fitted. A hostile trial: ``start
    --force`` opened a named pipe and hung, left a lock and a link to a device beside it, and turned the file standard
    output was redirected to into a session."""
    from ..journal import LiveSessionError
    from ..live.session import refuse_unfit_session_path

    try:
        refuse_unfit_session_path(path)
    except LiveSessionError as exc:
        raise click.BadParameter(str(exc), param_hint=option) from None


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


def is_select_result(doc) -> bool:
    """Whether parsed JSON ``doc`` is an ``hspr select --out`` result."""
    return isinstance(doc, dict) and {"fold", "command", "stages"} <= set(doc)


def _json_kind(doc) -> str:
    """What the JSON ``doc`` is, as :func:`refuse_replacing_other_json` names it."""
    from ..methods.hspr.config import is_selection_table
    from ..replay import is_results_doc

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
    if p.exists() and not p.is_dir():  # a re-trial: /dev/null was called a file
        kind = "a file" if p.is_file() else "a device, named pipe or socket"
        raise click.BadParameter(f"{p} is {kind}, not a folder; give a folder", param_hint=option)
    if p.is_dir():
        if in_dev(p):  # as root every check below passes, and the outputs were written among devices
            shown = f"{p} (a link to {os.path.realpath(p)})" if p.is_symlink() else str(p)
            raise click.BadParameter(f"cannot write into {shown}: {_DEV_WORDS}", param_hint=option)
        _takes_files(p, p, str(p), option, holds_file=True)  # a re-trial: as root, /sys/kernel passed, and the report failed
        return p
    _writable_ancestor(p, option, folder=True)  # (a re-trial: a new report folder in an append-only one was refused)
    return p
