"""The live session file: an append-only journal in JSON Lines (issue 11).

Line 1 is the header, one JSON object: ``format`` (``"hspr-live-session"``), ``version`` (2),
the hspr version and code digest that wrote it, the bank (name or matrix path, digest), the
method and its settings, budget, seed and the initial stop width. Every later line is one
record, appended and ``fsync``'ed before the command that made it returns:

``{"type": "ask" | "tell" | "error", ...}``
    a session event (see :mod:`hspr.live`);
``{"type": "stop_width", "pp": X}``
    a new stop width (``null`` removes it).

A command therefore reads the file and appends a few lines; it never rewrites what is
there. Should a process die in the middle of an append, the last line is incomplete: the
reader ignores a final line that has no newline or does not parse (it was never
acknowledged), and the next append cuts it off first. A failed append (full disk, read-only
folder) truncates the file back to its previous length, so the file is never left with a
partial record. Version 1 files (one JSON object with an ``events`` list, written atomically
as a whole) are read too and converted to a journal by the next write.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .fileio import finite_json

FORMAT = "hspr-live-session"
VERSION = 2
LEGACY_VERSION = 1
STOP = "stop_width"


class LiveSessionError(ValueError):
    """A live session cannot be created, opened or updated (the message names the file and the fix)."""


@dataclass
class JournalFile:
    """A session file as read: the document, and where the next append goes.

    Attributes
    ----------
    doc : dict
        Header fields plus ``events`` (list of event dicts, stop-width records excluded) and
        ``stop_width_pp`` (the latest stop width).
    version : int
        1 (a legacy single-object file) or 2 (a journal).
    size : int
        Bytes of complete lines: an append first truncates the file to this length.
    torn : bool
        The file ended in an incomplete line (ignored).
    """

    doc: dict
    version: int
    size: int
    torn: bool = False


def _dumps(obj) -> str:
    return json.dumps(finite_json(obj), allow_nan=False, separators=(",", ":"))


def header_of(doc: dict) -> dict:
    """The header line's object: ``doc`` without its events."""
    return {k: v for k, v in doc.items() if k != "events"}


def read(path: Path) -> JournalFile:
    """Read a session file (journal or legacy).

    Raises
    ------
    LiveSessionError
        Missing file, not UTF-8, invalid JSON (naming the line), not a session file, an
        unknown version, or a record that is not an object.
    """
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise LiveSessionError(f"{path}: no such session file; create one with `hspr live start`") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise LiveSessionError(f"{path}: not a session file (not UTF-8 text at byte {exc.start})") from None
    first = text.split("\n", 1)[0]
    try:
        head = json.loads(first)
    except json.JSONDecodeError:
        head = None
    if not (isinstance(head, dict) and head.get("version") == VERSION):
        return _read_legacy(path, text, len(raw))
    lines = text.split("\n")
    events, stop, size, torn = [], head.get("stop_width_pp"), len(first.encode()) + 1, False
    for i, line in enumerate(lines[1:], start=2):
        complete = i < len(lines)  # the last piece after the final newline is '' or a torn line
        if not complete:
            torn = line.strip() != ""
            break
        size += len(line.encode()) + 1
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            raise LiveSessionError(f"{path}: line {i} is not JSON ({exc.msg}): the session file is corrupt") from None
        if isinstance(rec, dict) and rec.get("type") == STOP:
            stop = rec.get("pp")
        else:
            events.append(rec)
    doc = dict(head, events=events, stop_width_pp=stop)
    return JournalFile(doc, VERSION, size, torn)


def _read_legacy(path: Path, text: str, n_bytes: int) -> JournalFile:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise LiveSessionError(f"{path}: not a session file (invalid JSON at line {exc.lineno}: {exc.msg})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise LiveSessionError(f"{path}: not an hspr live session file (no \"format\": \"{FORMAT}\")")
    if doc.get("version") != LEGACY_VERSION:
        raise LiveSessionError(f"{path}: session file version {doc.get('version')!r}; this hspr reads versions "
                               f"{LEGACY_VERSION} and {VERSION}")
    return JournalFile(doc, LEGACY_VERSION, n_bytes)


def write_new(path: Path, doc: dict) -> None:
    """Write the whole journal of ``doc`` atomically (temporary file, fsync, ``os.replace``, folder fsync).

    Used when a session is created and when a legacy file is converted. Raises OSError.
    """
    body = _dumps(dict(header_of(doc), version=VERSION)) + "\n" + "".join(_dumps(e) + "\n" for e in doc["events"])
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(body)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _fsync_dir(path.parent)


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # pragma: no cover  (platforms without directory fds)
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)


def append(path: Path, records: list[dict], size: int) -> int:
    """Append ``records`` (one JSON line each) after the first ``size`` bytes of ``path``, durably.

    A torn tail beyond ``size`` is cut off first. On failure the file is truncated back to
    ``size`` and the OSError propagates. Returns the new size.
    """
    data = "".join(_dumps(r) + "\n" for r in records).encode("utf-8")
    fd = os.open(path, os.O_WRONLY)
    try:
        os.ftruncate(fd, size)
        os.lseek(fd, size, os.SEEK_SET)
        try:
            view = memoryview(data)
            while view:
                n = os.write(fd, view)
                view = view[n:]
            os.fsync(fd)
        except OSError:
            try:
                os.ftruncate(fd, size)
                os.fsync(fd)
            except OSError:
                pass
            raise
    finally:
        os.close(fd)
    return size + len(data)


def stop_record(pp: float | None) -> dict:
    """The record that sets the stop width (percentage points; None removes it)."""
    return {"type": STOP, "pp": pp}
