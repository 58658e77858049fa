"""Durable file writes shared by replay results, selection outputs and live sessions."""

from __future__ import annotations

import contextlib
import csv
import errno
import io
import json
import os
import re
import stat
import sys
import tempfile
import time
from pathlib import Path
from types import MappingProxyType

import numpy as np

from .errors import HsprError, shorten

#: the fix an OSError calls for, by errno (others: the generic advice), for the messages of every writer
OS_FIXES = MappingProxyType({
    errno.ENOSPC: "free space on that disk",
    errno.EDQUOT: "free space within your disk quota",
    errno.EFBIG: "free space, or raise the file size limit (ulimit -f)",
    errno.EACCES: "fix the file's permissions",
    errno.EPERM: "fix the file's permissions (or clear its immutable or append-only flag: lsattr, chattr -i / -a)",
    errno.EROFS: "choose a path on a writable disk",
    errno.ENOENT: "check that the file or folder exists (it may have been moved)",
    errno.ELOOP: "fix the symbolic link that points to itself",
    errno.ENAMETOOLONG: "use a shorter path",
    errno.EISDIR: "give a file, not a folder",
    errno.ENOTDIR: "a part of the path is a file, not a folder: fix the path",
    errno.EBADF: "open that descriptor first (a shell redirection such as 5>file opens /dev/fd/5), or give a file",
})


def _json_default(x):
    """numpy scalars and arrays -> plain JSON values."""
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, np.ndarray):
        return x.tolist()
    raise TypeError(f"{type(x).__name__} is not JSON serialisable")


def finite_json(obj):
    """A copy of ``obj`` in which every NaN or infinite float is ``None`` (valid, standard JSON).

    Walks dicts, lists and tuples; numpy scalars and arrays become plain values first.
    """
    if isinstance(obj, dict):
        return {k: finite_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite_json(v) for v in obj]
    if isinstance(obj, (np.generic, np.ndarray)):
        return finite_json(_json_default(obj))
    if isinstance(obj, float) and not np.isfinite(obj):
        return None
    return obj


@contextlib.contextmanager
def signals_held():
    """Hold Ctrl-C, SIGTERM and SIGHUP back while a short run of file operations that belong together
    runs (a report's files moved in, a session replaced with its old copy kept, a bank file written):
    one that arrives then is handled as soon as the run is done, so it never stops half-way (a trial: an
    interrupted report left three new tables beside an old one, and a session replaced by ``--force``
    could leave its kept copy with nothing replaced). The signals' handlers are swapped for one that
    notes them, not blocked: a signal sent to the process may be delivered to any of its threads, and
    a re-trial found blocking the main thread's alone did not hold it. A signal ignored stays ignored; a
    noted one is then passed to the handler it had (its default action when that is the default).
    No-op outside the main thread, where handlers cannot be set."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending: list[int] = []

    def note(signum, frame) -> None:
        pending.append(signum)

    saved = {}
    for sig in (signal.SIGINT, signal.SIGTERM, getattr(signal, "SIGHUP", None)):
        if sig is not None and signal.getsignal(sig) not in (signal.SIG_IGN, None):
            saved[sig] = signal.signal(sig, note)
    try:
        yield
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)
        if pending:
            handler = saved[pending[0]]
            if callable(handler):
                handler(pending[0], None)
            else:  # the default action: the signal again, now that it is no longer held
                signal.raise_signal(pending[0])


def stamped_beside(path: Path, tag: str, suffix: str = "") -> Path:
    """A name beside ``path`` that no file has yet: ``<name>.<tag>-<YYYYmmddTHHMMSS><suffix>``, with
    ``-1``, ``-2``, ... before ``suffix`` when that second's name is taken (two commands in one second
    never write over an earlier file): a session's kept copy (``replaced``), its piped input (``stdin``)."""
    stamp, n = time.strftime("%Y%m%dT%H%M%S"), 0
    out = path.with_name(f"{path.name}.{tag}-{stamp}{suffix}")
    while out.exists():
        n += 1
        out = path.with_name(f"{path.name}.{tag}-{stamp}-{n}{suffix}")
    return out


def write_text_durable(text: str, path: Path) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically and durably (:func:`write_bytes_durable`)."""
    write_bytes_durable(text.encode("utf-8"), path)


def descriptor_of(path, _hops: int = 40) -> int | None:
    """The file descriptor a path such as ``/dev/stdout`` or ``/dev/fd/3`` names (open or not), else None; the
    path is read as :func:`os.path.abspath` gives it (``/dev/../dev/stdout``, ``//dev/stdout``, or ``stdout`` typed
    in ``/dev``, are ``/dev/stdout``; a trial), through links: a link to ``/dev/stdout``, or ``fd/1`` under a link to
    ``/proc/self/fd`` (``/proc/<this process>/fd/1`` once resolved), names descriptor 1 (a hostile trial: with
    standard output closed, such a link took the results to the null device)."""
    text = os.fspath(path)
    try:
        text = os.path.abspath(text)
    except OSError:  # the working folder was removed: a relative path is then not /dev's
        text = os.path.normpath(text)
    text = re.sub(r"^/{2,}", "/", text)
    named = {"/dev/stdin": 0, "/dev/stdout": 1, "/dev/stderr": 2}  # stdin: refused as an output, by its mode
    if text in named:
        return named[text]
    m = re.fullmatch(rf"/dev/fd/(\d+)|/proc/(?:self|{os.getpid()})/fd/(\d+)", text)
    if m is not None:
        return int(m.group(1) or m.group(2))
    if _hops <= 0:
        return None
    folder, name = os.path.split(text)
    try:
        real = os.path.join(os.path.realpath(folder), name)  # links among the folders on the way
    except OSError:  # a relative path in a removed working folder
        return None
    if real != text:
        return descriptor_of(real, _hops - 1)
    try:
        target = os.readlink(text)  # the path itself a link: one step at a time, as /dev/stdout is one too
    except OSError:  # not a link, or not there
        return None
    return descriptor_of(os.path.join(folder, target), _hops - 1)


def is_descriptor_path(path) -> bool:
    """Whether ``path`` is ``/dev/stdin``, ``/dev/stdout``, ``/dev/stderr``, ``/dev/fd/N`` or ``/proc/self/fd/N``
    (:func:`descriptor_of`): the writers here write into that open descriptor (the stream a shell connected),
    never replace it."""
    return descriptor_of(path) is not None


#: Linux inode flags (``chattr``) that stop hspr's writes: an immutable file or folder takes no change, and an
#: append-only folder takes new files but no rename over or removal of one (each write goes to a temporary file
#: beside its target and is moved over it), nor does an append-only file get replaced
IMMUTABLE_FLAG, APPEND_FLAG = 0x10, 0x20


def inode_flags(path) -> int:
    """The Linux inode flags (``lsattr``) of the existing regular file or folder ``path`` (following links),
    e.g. :data:`IMMUTABLE_FLAG`, :data:`APPEND_FLAG`; 0 where they cannot be read (another system, a file
    system without them, no permission, a device or pipe, which is not opened)."""
    try:
        import fcntl
        import struct

        st = os.stat(path)
        if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
            return 0
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except (ImportError, OSError, ValueError):
        return 0
    try:  # FS_IOC_GETFLAGS, _IOR('f', 1, long); the kernel fills an int
        got = fcntl.ioctl(fd, 0x80006601 | (struct.calcsize("l") << 16), bytes(8))
        return struct.unpack("i", got[:4])[0]
    except OSError:
        return 0
    finally:
        os.close(fd)


def blocking_flag(path, append_matters: bool = True) -> tuple[str, str] | None:
    """The flag of ``path`` (:func:`inode_flags`) that stops a write through it, as ``(words, fix)``, e.g.
    ``("immutable (chattr +i)", "chattr -i /real/path")``, the fix naming the real path (a folder reached through a
    link: a re-trial's ``chattr -i LINK`` failed); None when there is none. The append-only flag counts where
    ``append_matters`` (a folder that only takes new folders is not stopped by it)."""
    import shlex

    flags = inode_flags(path)
    for bit, words, letter in ((IMMUTABLE_FLAG, "immutable (chattr +i)", "i"), (APPEND_FLAG, "append-only (chattr +a)", "a")):
        if flags & bit and (bit == IMMUTABLE_FLAG or append_matters):
            return words, f"chattr -{letter} {shlex.quote(os.path.realpath(path))}"
    return None


def names_stdout(path) -> bool:
    """Whether ``path`` (None: no) names standard output (``/dev/stdout``, ``/dev/fd/1``): a command writing
    its output there prints its own lines on stderr, so that the stream holds the output alone."""
    return path is not None and descriptor_of(path) == 1


def special_file_kind(path) -> str | None:
    """What ``path`` (through links) is when it names a named pipe, socket or device in the file system:
    ``"a named pipe"``, ``"a socket"`` or ``"a device"``; None for a regular file, a folder or a missing path."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    return "a named pipe" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else "a device"


def not_a_regular_file(path) -> bool:
    """Whether ``path`` names a named pipe, socket or device in the file system, whose read would wait
    for a writer for ever (a hostile trial: `hspr report FIFO`, `live status --session FIFO`). An open
    descriptor's path (``/dev/fd/N``, ``/proc/self/fd/N``, ``/dev/stdin``: a shell's ``<(...)``, which has
    its writer) and a missing path or folder are not (their readers say so)."""
    return descriptor_of(path) is None and special_file_kind(path) is not None


def write_bytes_durable(data: bytes, path: Path) -> None:
    """Write ``data`` to ``path`` atomically and durably.

    A temporary file in the same folder is written, flushed and fsync'ed, moved over ``path``
    with ``os.replace`` and the folder is fsync'ed; on any failure the temporary file is
    removed and ``path`` is left as it was. A new file follows the umask; a replaced one keeps
    its mode, and one the user may not write (read-only) is refused with PermissionError, as
    writing it in place would be. A symbolic link is written through (its target is replaced, the link kept).
    ``/dev/stdout``, ``/dev/stderr`` and ``/dev/fd/N`` are written to the open descriptor (into
    the pipe or file the shell connected, appending where it appends), and any other path that
    is not a regular file (a named pipe, a device) is opened and written: such a file cannot be
    replaced, only written.
    """
    fd = descriptor_of(path)
    if fd is not None:
        for stream in (sys.stdout, sys.stderr):  # what Python buffered for the descriptor goes first
            if stream is not None and hasattr(stream, "fileno"):
                try:
                    if stream.fileno() == fd:
                        stream.flush()
                except (OSError, ValueError):  # no real descriptor (captured output)
                    pass
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        return
    path = Path(path)
    try:
        st = os.stat(path)  # follows links
    except (FileNotFoundError, NotADirectoryError):
        st = None
    if st is not None and not stat.S_ISREG(st.st_mode) and not stat.S_ISDIR(st.st_mode):
        with open(path, "wb") as fh:
            fh.write(data)
        return
    if path.is_symlink():
        path = Path(os.path.realpath(path))
        if not path.parent.is_dir():  # a hostile trial: a dangling link made its target's folders, at the root too
            raise FileNotFoundError(errno.ENOENT, "a link to a file whose folder does not exist", str(path))
    if st is not None and stat.S_ISREG(st.st_mode) and not os.access(path, os.W_OK):
        # os.replace needs only the folder writable: a file made read-only would be replaced (a hostile
        # trial); refuse as opening it for writing would
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    # the start of the name only: a whole name near the file system's limit (255 bytes) made the temporary one too long
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name[:48]}.", suffix=".tmp")
    try:
        if path.exists():
            mode = path.stat().st_mode & 0o777
        else:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.chmod(tmp, mode)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    if hasattr(os, "O_DIRECTORY"):
        dfd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)


def write_json_durable(obj, path: Path) -> None:
    """Write ``obj`` as standard JSON to ``path`` atomically and durably (:func:`write_text_durable`).

    NaN and infinite floats are written as ``null`` (:func:`finite_json`), never as the
    non-standard ``NaN`` / ``Infinity`` tokens.
    """
    write_text_durable(json.dumps(finite_json(obj), indent=1, allow_nan=False) + "\n", path)


#: byte-order marks of the Unicode encodings other than UTF-8 (a spreadsheet's 'Unicode text' is UTF-16 LE);
#: UTF-32 first, as its LE mark begins with UTF-16 LE's
_UTF16_32_BOMS = ((b"\xff\xfe\x00\x00", "UTF-32"), (b"\x00\x00\xfe\xff", "UTF-32"),
                  (b"\xff\xfe", "UTF-16"), (b"\xfe\xff", "UTF-16"))


def unicode_bom(raw: bytes) -> str | None:
    """'UTF-16' or 'UTF-32' when ``raw`` starts with that encoding's byte-order mark, else None."""
    return next((name for mark, name in _UTF16_32_BOMS if raw.startswith(mark)), None)


#: the first bytes of packed files a user may give for a text file, and what to do with each
_PACKED = ((b"\x1f\x8b", "gzip-compressed data: decompress it first (gunzip)"),
           (b"PK\x03\x04", "a zip archive (an .xlsx workbook is one): extract the file, or export the sheet as CSV"),
           (b"BZh", "bzip2-compressed data: decompress it first (bunzip2)"),
           (b"\xfd7zXZ\x00", "xz-compressed data: decompress it first (unxz)"),
           (b"\xd0\xcf\x11\xe0", "an Excel workbook (.xls): export the sheet as CSV"),
           (b"PAR1", "a Parquet file: convert it to CSV (pandas: pd.read_parquet(path).to_csv(...))"))


def _packed(path) -> str | None:
    """What a packed file is and what to do (:data:`_PACKED`), or None (a hostile trial: a gzip file was
    told "not UTF-8 text ... after '\\x1f'; save the file as UTF-8")."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(8)
    except OSError:
        return None
    return next((what for magic, what in _PACKED if head.startswith(magic)), None)


def _where_byte(path, exc: UnicodeDecodeError) -> str:
    """'line L, byte N: <the line's start>' for a byte that is not UTF-8 (a trial: the byte offset
    alone named no line, agent or task), or the encoding a UTF-16 or UTF-32 byte-order mark names.
    ``exc.start`` counts from the text after a byte-order mark; the byte named counts from the file's start."""
    try:
        raw = Path(path).read_bytes()
    except OSError:
        return f"byte {exc.start}"
    bom = unicode_bom(raw)
    if bom:  # a trial: "line 1, byte 0 of the file, after ''" named nothing of the cause
        return f"the file starts with the byte-order mark of {bom}"
    start = exc.start + (3 if raw.startswith(b"\xef\xbb\xbf") else 0)
    line = raw.count(b"\n", 0, start) + 1
    begin = raw.rfind(b"\n", 0, start) + 1
    shown = raw[begin:start].decode("utf-8", errors="replace")[-40:]
    return f"line {line}, byte {start} of the file, after {shown!r}"


def read_text(path, error: type[Exception] = HsprError, what: str = "", raise_missing: bool = False,
              fix: str = "") -> str:
    """The text of a UTF-8 file (a byte-order mark is dropped): the one text reader of the package.

    ``fix`` replaces the advice given for a file that is not UTF-8 (by default: save it as UTF-8,
    e.g. a spreadsheet's 'CSV UTF-8' format), e.g. which file was expected.

    Raises
    ------
    error
        ``"<what> <path>: not UTF-8 text (byte N); save the file as UTF-8"`` or ``"... cannot
        read (reason)"``, or ``"... not a regular file"`` for a named pipe or a device (whose read
        would wait for a writer); ``error`` is the caller's class (DataError, HarnessFormatError, ...).
    FileNotFoundError
        Only with ``raise_missing`` (callers that word that case themselves).
    """
    where = f"{what} {path}" if what else str(path)
    p = Path(path)
    if not_a_regular_file(p):  # a hostile trial: `hspr report FIFO` waited for ever
        raise error(f"{where}: not a regular file (a named pipe or a device?); give a file")
    try:
        return p.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        if packed := _packed(p):
            raise error(f"{where}: not text but {packed}") from None
        sheet = p.suffix.lower() in (".csv", ".tsv", ".txt")  # a re-trial: a JSON file was told of 'CSV UTF-8'
        raise error(f"{where}: not UTF-8 text ({_where_byte(path, exc)}: {exc.reason}); "
                    + (fix or "save the file as UTF-8" + (" (e.g. a spreadsheet's 'CSV UTF-8' format)" if sheet else ""))
                    ) from None
    except FileNotFoundError:
        if raise_missing:
            raise
        raise error(f"{where}: no such file") from None
    except OSError as exc:
        raise error(f"{where}: cannot read ({exc.strerror or exc})") from None


class DuplicateKeyError(ValueError):
    """A JSON object names one key twice with different values."""


def _same(a, b) -> bool:
    """Whether two parsed JSON values are the same value: booleans apart from numbers (``true`` is not
    ``1``), numbers by value (``1`` is ``1.0``, ``-0.0`` is ``0``), NaN the same as NaN, objects and
    arrays item by item."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b or (a != a and b != b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def _unique_keys(pairs: list) -> dict:
    """``object_pairs_hook`` of :func:`loads`: a key given twice must carry the same value
    (:func:`_same`; the plain parser keeps the last one silently: a report listing a task as resolved
    and then as unresolved is ambiguous, and ``true`` then ``1`` made the result depend on the key
    order)."""
    out: dict = {}
    for key, value in pairs:
        if key in out and not _same(out[key], value):
            raise DuplicateKeyError(f"key {key!r} appears twice in one object with different values "
                                    f"({shorten(json.dumps(out[key]))}, then {shorten(json.dumps(value))}): keep one")
        out[key] = value
    return out


def loads(text: str):
    """``json.loads`` for every JSON text hspr reads. Raises :class:`DuplicateKeyError` (a
    ValueError) for an object that gives one key twice with different values, which the plain
    parser would resolve silently to the last one."""
    return json.loads(text, object_pairs_hook=_unique_keys)


#: the start of a JSON literal or number, all a cut-off file may hold after the last whole value
_LITERAL_START = re.compile(r"t(r(ue?)?)?|f(a(l(se?)?)?)?|n(u(ll?)?)?|-?[0-9]*\.?[0-9]*([eE][+-]?[0-9]*)?")


def _cut_off(text: str, exc: json.JSONDecodeError) -> bool:
    """Whether JSON ``text`` fails because it ends early: nothing but white space or NUL bytes (space a
    crash left unwritten) after the error, the start of a literal (``tr``, ``-``, ``1e``), or a string
    never closed (a hostile trial and its re-trial: a cut results file was only 'invalid JSON at line 191')."""
    if exc.msg == "Extra data":  # a whole document, and more after it (its re-trial: called cut off)
        return False
    if exc.msg.startswith("Invalid \\uXXXX escape"):  # cut inside an escape such as \u00e9 (its re-trial)
        return '"' not in text[exc.pos:]
    tail = text[exc.pos:].strip("\0 \t\r\n")
    return exc.msg.startswith("Unterminated string") or _LITERAL_START.fullmatch(tail) is not None


def dangling_link(path: Path) -> Path | None:
    """``path`` or the first of its parents that is a symbolic link to nothing (its target missing, or a loop of
    links), else None: a folder to write in that is such a link was made at the link's target (for a disk not
    mounted, on the wrong disk) or refused as "File exists"."""
    return next((p for p in (path, *path.parents) if p.is_symlink() and not p.exists()), None)


def dangling_words(link: Path) -> str:
    """What is wrong with a :func:`dangling_link`: ``<link> is a symbolic link to <target>, which does not exist
    (a disk not mounted?)``, or, for a loop, ``... which leads back to itself``."""
    target = os.readlink(link)
    try:
        os.stat(link)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # a re-trial: a loop was said to point to a folder that 'does not exist'
            return f"{link} is a symbolic link to {target}, which leads back to itself (a loop of links)"
    return f"{link} is a symbolic link to {target}, which does not exist (a disk not mounted?)"


def readable_name(text: str) -> str:
    """``text`` (a file name, or a label made from one) as valid Unicode: the bytes a file name's undecoded
    characters stand for (Python's ``surrogateescape``: a name that is no UTF-8, or any non-ASCII name under
    ``PYTHONUTF8=0 LC_ALL=C``) are read as UTF-8, and what is no UTF-8 becomes U+FFFD. Results labelled
    ``caf\\udce9`` could not be reported (a trial: a traceback writing the tables, and in a figure's title), and
    one file got two labels in two locales. Text without such characters is returned as it is."""
    if not any("\udc80" <= c <= "\udcff" for c in text):
        return text
    try:
        raw = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # another lone surrogate (from JSON): no bytes behind it
        raw = text.encode("utf-8", "replace")
    return raw.decode("utf-8", "replace")


def json_kind(value: object) -> str:
    """The JSON name of a parsed value's kind, with its article: 'an object', 'an array', 'a string', 'a boolean',
    'a number' or 'null' (messages name what a file holds in its own terms, not Python's list / dict / NoneType);
    for a value no JSON parser gives (from Python), its type's name."""
    kinds = ((dict, "an object"), (list, "an array"), (str, "a string"), (bool, "a boolean"), ((int, float), "a number"))
    return next((name for t, name in kinds if isinstance(value, t)),
                "null" if value is None else f"a Python {type(value).__name__}")


def read_json(path, error: type[Exception] = HsprError, what: str = "", text: str | None = None, hint: str = "",
              raise_missing: bool = False, fix: str = ""):
    """Parse a JSON file (or its already read ``text``): the one JSON reader of the package.

    Raises
    ------
    error
        As :func:`read_text` (``fix`` its advice for a file that is not UTF-8), ``"<what>
        <path>: the file is empty"`` or ``"<what> <path>: invalid JSON at line L, column C
        (reason)"``, each followed by ``hint``, or naming a key that one object gives twice with
        different values.
    """
    where = f"{what} {path}" if what else str(path)
    if text is None:
        text = read_text(path, error, what, raise_missing, fix=fix)
    if not text.strip():  # a trial: an empty file read as "invalid JSON at line 1, column 1 (Expecting value)"
        raise error(f"{where}: the file is empty" + (f"; {hint}" if hint else ""))
    try:
        return loads(text)
    except DuplicateKeyError as exc:
        raise error(f"{where}: {exc}") from None
    except json.JSONDecodeError as exc:
        joined = (" (a second JSON document follows the first: files joined into one? give each file on its own)"
                  if exc.msg == "Extra data" and text[exc.pos:].lstrip().startswith(("{", "[")) else
                  " (the text ends inside the JSON: the file was cut off, e.g. by a full disk or a killed writer)"
                  if _cut_off(text, exc) else "")
        raise error(f"{where}: invalid JSON at line {exc.lineno}, column {exc.colno} ({exc.msg}){joined}"
                    + (f"; {hint}" if hint else "")) from None
    except (RecursionError, ValueError) as exc:  # nested too deeply; an integer too long
        raise error(f"{where}: invalid JSON ({exc})" + (f"; {hint}" if hint else "")) from None


def csv_error_message(path, line: int, exc: csv.Error) -> str:
    """The error for a line the csv module cannot read: a field over its size limit (a hostile trial: a
    131,073-character id was blamed on the quoting alone), or malformed quoting."""
    if "field limit" in str(exc):
        return (f"{path}: line {line}: a field longer than {csv.field_size_limit():,} characters; no id or outcome "
                "is that long: check the quoting (a quote opened on this line may never be closed) or shorten that field")
    return f"{path}: line {line}: malformed CSV ({exc}); check the quoting (a quote opened on this line may never be closed)"


#: where a line of a CSV text ends, as ``csv.reader`` over ``io.StringIO(text, newline="")`` ends it
_LINE_END = re.compile(r"\r\n|\r|\n")


def csv_records(path, error: type[Exception] = HsprError) -> list[tuple[int, list[str]]]:
    """Non-blank records of a UTF-8 CSV file as (line number where the record starts, fields): the one CSV reader.

    Quoting is read strictly (``csv.reader(strict=True)``): a quote that is never closed or
    text after a closing quote is an error, not a cell that swallows the rest of the file. A text with
    no quote character is split at its line ends and commas directly, as ``csv.reader`` splits it (a
    scale trial: 2.1 million lines took 6.9 s through the reader and its blank-line filter, 3.1-3.8 s so;
    ``tests/test_data_io.py`` checks the two agree on random texts).

    Raises
    ------
    error
        Naming the line of malformed CSV (quoting) or of a NUL character, or the byte that is not UTF-8.
    """
    try:
        with Path(path).open(newline="", encoding="utf-8-sig") as fh:
            text = fh.read()
    except UnicodeDecodeError as exc:
        if packed := _packed(path):
            raise error(f"{path}: not text but {packed}") from None
        raise error(f"{path}: not UTF-8 text ({_where_byte(path, exc)}); save the file as UTF-8 (e.g. a "
                    "spreadsheet's 'CSV UTF-8' format)") from None
    except OSError as exc:
        raise error(f"{path}: cannot read ({exc.strerror or exc})") from None
    nul = text.find("\0")
    if nul >= 0 and (packed := _packed(path)):  # packed data that happens to decode as UTF-8 (a Parquet file's)
        raise error(f"{path}: not text but {packed}")
    if nul >= 0:  # numpy text arrays drop trailing NULs: '1\0' would read as 1
        head = text[:200]  # UTF-16 (ASCII letters) read as UTF-8: every other character is NUL (a hostile trial)
        wide = len(head) >= 4 and any(set(head[k::2]) == {"\0"} and "\0" not in head[1 - k::2] for k in (0, 1))
        line = len(_LINE_END.findall(text, 0, nul)) + 1  # every line end csv knows (a re-trial: '\r' ones were not counted)
        raise error(f"{path}: line {line}: a NUL character (byte 0) in the text; "
                    + ("every other byte is 0: UTF-16 text without its byte-order mark; save the file as UTF-8 (e.g. "
                       "a spreadsheet's 'CSV UTF-8' format)" if wide else "the file is damaged or not a CSV text file"))
    if '"' not in text:  # no quoting: a record is a line (\r\n, \r or \n end one, as in csv.reader)
        lines = _LINE_END.split(text)
        if lines and lines[-1] == "":
            lines.pop()
        if max(map(len, lines), default=0) <= csv.field_size_limit():  # else the reader's own error, below
            return [(k, line.split(",")) for k, line in enumerate(lines, 1) if line.replace(",", "").strip()]
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    recs, start = [], 1
    try:
        for rec in reader:
            recs.append((start, rec))
            start = reader.line_num + 1
    except csv.Error as exc:
        raise error(csv_error_message(path, start, exc)) from None
    return [(n, r) for n, r in recs if "".join(r).strip()]


def fill_header_tail(header: list[str], body: list[tuple[int, list[str]]]) -> tuple[list[tuple[int, list[str]]], int]:
    """``body`` with the empty fields the header ends with added to each row that has at least the header's named
    fields but not its empty tail (a spreadsheet's trailing separators on the header line alone, ``agent,t1,t2,`` over
    ``a1,1,0``: a hostile trial saw it refused as ragged), and the number of named fields (up to the last name).
    Other rows are left as they are, for the reader's width check to name (the wide and long CSV readers of
    :mod:`hspr.data.io`, ``hspr live ingest``'s outcome CSV)."""
    named = [j for j, h in enumerate(header) if h.strip()]
    least = named[-1] + 1 if named else len(header)
    if least == len(header):
        return body, least
    width = len(header)
    return [(n, r + [""] * (width - len(r)) if least <= len(r) < width else r) for n, r in body], least


def read_json_file(path, what: str = ""):
    """Parse a JSON settings or session file: :func:`read_json` with ``what`` (e.g. the option)
    named, and FileNotFoundError left to the caller to word."""
    return read_json(path, HsprError, what, raise_missing=True)


def find_below(folder: Path, names: tuple[str, ...], prune=None) -> list[list[Path]]:
    """For each of ``names``, every file of that name below ``folder``, sorted; one walk that follows
    links to folders (an instance folder linked in from elsewhere was skipped by ``Path.rglob`` before
    Python 3.13: a trial lost 6 of 8 outcomes unseen); each real folder is visited once, so a link
    loop ends. ``prune(folder, file_names, subfolder_names)``, when given, is called on each folder
    visited (in sorted order) and returns True to leave its subfolders unvisited. A folder that
    cannot be listed is named in an :class:`~hspr.errors.UnreadableFolderWarning` (a hostile trial:
    an unreadable agent folder left its agent out of the bank without a word)."""
    seen: set[str] = set()
    out: list[list[Path]] = [[] for _ in names]
    unread: list[OSError] = []
    for root, dirs, files in os.walk(folder, followlinks=True, onerror=unread.append):
        real = os.path.realpath(root)
        if real in seen:
            dirs[:] = []
            continue
        seen.add(real)
        dirs.sort()  # which path reaches a folder linked twice does not depend on the listing order
        for found, name in zip(out, names):
            if name in files:
                found.append(Path(root) / name)
        if prune is not None and prune(Path(root), files, dirs):
            dirs[:] = []
    if unread:
        import warnings

        from .errors import UnreadableFolderWarning

        named = "; ".join(f"{e.filename}: {e.strerror or e}" for e in unread[:3]) + ("; ..." if len(unread) > 3 else "")
        warnings.warn(f"{folder}: {len(unread)} folder(s) below it could not be read ({named}); results inside them "
                      "are left out: make them readable and run the command again", UnreadableFolderWarning, stacklevel=2)
    return [sorted(found) for found in out]
