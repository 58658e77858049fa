"""The live session file: an append-only journal in JSON Lines (issue 11).

Line 1 is the header, one JSON object: ``format`` (``"hspr-live-session"``), ``version`` (2),
the hspr version and code digest that wrote it, the bank (name or matrix path, digest), the
method and its settings, budget, seed and the initial stop width. Every later line is one
record, appended and ``fsync``'ed before the command that made it returns:

``{"type": "ask" | "tell" | "error" | "correct" | "withdraw", ...}``
    a session event (see :mod:`hspr.live`);
``{"type": "stop_width", "pp": X}``
    a new stop width (``null`` removes it);
``{"type": "matrix", "path": P, "time": T}``
    the bank's matrix file moved to ``P`` (``hspr live relink``; the same bank, checked by digest).

Every line ends in a ``"crc"`` key (:data:`CHECKSUM`): the CRC-32 of the record without it, as
JSON with sorted keys (so white space, line ends, key order and ``5.0`` written as ``5`` do not
count: what a JSON tool may rewrite without changing a value). A line that does not match it was
changed after it was written (a disk error, or an edit that still parses) and is refused like a
line that is not JSON; a line without one (a file of an earlier hspr, a record added by hand) is
read unchecked.

A command therefore reads the file and appends a few lines; it never rewrites what is
there. Should a process die in the middle of an append, the last line is incomplete: the
reader ignores a final line that has no newline or does not parse (it was never
acknowledged), and the next append cuts it off first. A failed append (full disk, read-only
folder) truncates the file back to its previous length, so the file is never left with a
partial record. Version 1 files (one JSON object with an ``events`` list, written atomically
as a whole) are read too and converted to a journal by the next write.
"""

from __future__ import annotations

import codecs
import errno
import json
import os
import re
import zlib
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from .errors import HsprError, shorten
from .fileio import DuplicateKeyError, finite_json, loads, not_a_regular_file, unicode_bom, write_text_durable

try:  # POSIX advisory locks; elsewhere single-process use is assumed
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None

FORMAT = "hspr-live-session"
VERSION = 2
LEGACY_VERSION = 1
STOP = "stop_width"
MATRIX = "matrix"
#: the ``type`` of a session event (:mod:`hspr.live`), as opposed to a header change (STOP, MATRIX)
EVENT_TYPES = ("ask", "tell", "error", "correct", "withdraw")
#: events that change an outcome told before them: a reader rebuilds the session from the start
REWRITES = ("correct", "withdraw")
#: the key :func:`read` with ``salvage=True`` puts in the header it stands in for a damaged one (the reason)
DAMAGED_HEADER = "damaged_header"


def has_rewrite(events) -> bool:
    """Whether any of ``events`` (parsed records) is one of :data:`REWRITES`."""
    return any(isinstance(ev, dict) and ev.get("type") in REWRITES for ev in events)


class LiveSessionError(HsprError):
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
        1 (one JSON object: the legacy form, or a hand edit) or 2 (a journal).
    size : int
        Bytes of the records read: an append first cuts the file to this length.
    torn : bool
        The file ended in an incomplete record (ignored).
    event_lines : list of int
        File line (1-based) of each event, for messages (empty for a single object).
    torn_text : str
        The incomplete record's text ('' if none), for messages.
    skipped_lines : list of (line, why)
        With ``salvage`` only: damaged lines in the middle of the file (not JSON, not UTF-8) that were
        left out, each event on them lost.
    cut_changes : list of (line, written, present, last)
        Each change (an ingest, a record) that is in the file only in part — the file was cut at
        a line end, which no torn record shows, or lines were deleted by hand: the file line of its
        first record, how many records it wrote, how many are there, and whether it is the file's
        last change. A change is counted from the ``batch`` key of its first record (written on
        every change since 2026-12-04; before, only on changes of several records, and a file of
        that time counts later unmarked records into the change before them).
    """

    doc: dict
    version: int
    size: int
    torn: bool = False
    event_lines: list = field(default_factory=list)
    torn_text: str = ""
    cut_changes: list = field(default_factory=list)
    skipped_lines: list = field(default_factory=list)

    @property
    def torn_task(self) -> str | None:
        """The task id the incomplete record names, if its ``"task"`` field survived, else None."""
        m = re.search(r'"task"\s*:\s*"((?:[^"\\]|\\.)*)"', self.torn_text)
        if m is None:
            return None
        try:
            return _loads(f'"{m.group(1)}"')
        except ValueError:
            return m.group(1)

    @property
    def torn_batch(self) -> int | None:
        """How many records the change of the incomplete record wrote, when it is the first record of
        a change and its :data:`BATCH` count survived (written first in the record), else None."""
        m = re.match(r'\s*\{\s*"' + BATCH + r'"\s*:\s*([0-9]+)\s*[,}]', self.torn_text)
        return int(m.group(1)) if m else None


#: key of the first record of each change (an ingest, a record): how many records it wrote
BATCH = "batch"


def torn_path(path: Path) -> Path:
    """Where :func:`append` keeps the bytes of an incomplete last record it cuts off: ``<name>.torn``."""
    return path.with_name(path.name + ".torn")


def lock_path(path: Path) -> Path:
    """The lock file of session file ``path`` (:func:`session_lock`): ``<name>.lock``."""
    return path.with_name(path.name + ".lock")


def _dumps(obj) -> str:
    return json.dumps(finite_json(obj), allow_nan=False, separators=(",", ":"))


#: key of every line's checksum, written last: 8 hex digits of the record's CRC-32 without it (:func:`_crc`)
CHECKSUM = "crc"


def _whole(x):
    """``x`` (parsed JSON) with every float that is a whole number as an int (``5.0`` -> ``5``)."""
    if isinstance(x, float) and x.is_integer():
        return int(x)
    if isinstance(x, dict):
        return {k: _whole(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_whole(v) for v in x]
    return x


def _crc(rec: dict) -> int:
    """The checksum of ``rec`` (without its :data:`CHECKSUM`): CRC-32 of its JSON with sorted keys, no white
    space and whole floats as ints, so what a JSON tool may rewrite without changing a value (key order, spacing,
    ``5.0`` as ``5``: a re-trial's ``jq -c .``) does not count; not :func:`_dumps`, whose finite_json writes NaN
    or 1e999 as null (a re-trial: "pp":1e999 over null passed)."""
    rest = {k: v for k, v in rec.items() if k != CHECKSUM}
    return zlib.crc32(json.dumps(_whole(rest), separators=(",", ":"), sort_keys=True).encode())


def _line(obj: dict) -> str:
    """One record's line (without its newline), its :data:`CHECKSUM` last: a value changed later is noticed on read
    (a hostile trial: a task id or the budget edited in place still parsed, and the session went on with it). A
    checksum ``obj`` carries (a record read from a one-object file) is replaced."""
    text = _dumps({k: v for k, v in obj.items() if k != CHECKSUM})
    # the checksum of the record as a reader parses it back (finite_json may have turned NaN into null)
    return f'{text[:-1]},"{CHECKSUM}":"{_crc(loads(text)):08x}"}}' if len(text) > 2 else text


def _check_sum(rec) -> None:
    """Raise :class:`_Changed` when ``rec`` (one parsed line) does not match the checksum written with it
    (:func:`_crc`), so white space, line ends, key order or the checksum's place in the line do not count (a
    re-trial: a space after a comma was refused); a checksum that is not 8 hex digits counts as changed. A
    record without one (a file of an hspr before 2026-12-05, or a record added by hand) is not checked."""
    if not isinstance(rec, dict) or CHECKSUM not in rec:
        return
    crc = rec[CHECKSUM]
    if not (isinstance(crc, str) and re.fullmatch(r"[0-9a-fA-F]{8}", crc)) or int(crc, 16) != _crc(rec):
        raise _Changed(json.dumps({k: v for k, v in rec.items() if k != CHECKSUM}, separators=(",", ":")))


def _loads(text: str):
    """:func:`hspr.fileio.loads` (a key given twice with different values is refused); a value
    nested too deeply is a ValueError like any other bad JSON."""
    try:
        return loads(text)
    except RecursionError:
        raise ValueError("nested too deeply") from None


def _why_not_json(exc: ValueError) -> str:
    """What is wrong with a line that did not parse: bytes that are not UTF-8 (a damaged disk),
    or JSON that is not valid."""
    if isinstance(exc, UnicodeDecodeError):
        return f"not UTF-8 text (byte {exc.start + 1} of the line)"
    if isinstance(exc, _Changed):
        return CHANGED
    return f"not JSON ({exc})"


#: what a line that does not match its checksum is said to be
CHANGED = (f"changed after hspr wrote it (its checksum does not match: a disk error, or a hand edit; if you made that "
           f"edit, delete the line's \"{CHECKSUM}\" field to keep it)")


def _joined_records(piece: bytes, exc: ValueError) -> int | None:
    """The byte offset in ``piece`` (one line) of the single byte that stands between two whole,
    checksum-matching records, where a line end was (a durability trial: a flipped bit turned a line end
    into 0x0b, and the advice to delete the line lost two events); None when the line is not that."""
    if not isinstance(exc, json.JSONDecodeError) or not exc.msg.startswith("Extra data"):
        return None
    text = piece.decode("utf-8")  # it decoded, or exc would be a UnicodeDecodeError
    at = len(text[:exc.pos].encode("utf-8"))
    first, rest = piece[:at], piece[at:]
    if len(rest) < 2 or rest[:1] in (b"{", b"["):  # a record follows with nothing between: not a lost line end
        return None
    try:
        for part in (first, rest[1:]):
            rec = _loads(part.decode("utf-8"))
            if not isinstance(rec, dict) or CHECKSUM not in rec:  # only records hspr wrote, whole
                return None
            _check_sum(rec)
    except ValueError:
        return None
    return at


def _line_end_fix(path: Path, line: int, at: int) -> str:
    """A shell command that puts a line end back at byte ``at`` of line ``line`` (1-based) of ``path``."""
    import shlex

    code = (f'p = {json.dumps(str(path))}; L = open(p, "rb").read().split(b"\\n"); L[{line - 1}] = L[{line - 1}][:{at}] + '
            f'b"\\n" + L[{line - 1}][{at + 1}:]; open(p, "wb").write(b"\\n".join(L))')
    return f"keep a copy of the file, then run python -c {shlex.quote(code)}"


class _Changed(ValueError):
    """A line that parses but does not match the checksum written with it (:func:`_check_sum`); the message is the
    line as it now reads, without its checksum."""


def _utf16_without_mark(raw: bytes) -> str | None:
    """'UTF-16' when ``raw`` starts as ASCII text in UTF-16 (little- or big-endian) without a byte-order mark:
    every other byte of its first 40 is zero, the others not; else None."""
    head = raw[:40]
    if len(head) < 4:
        return None
    for text, zeros in ((head[0::2], head[1::2]), (head[1::2], head[0::2])):
        if not zeros.strip(b"\0") and b"\0" not in text:
            return "UTF-16"
    return None


def header_of(doc: dict) -> dict:
    """The header line's object: ``doc`` without its events."""
    return {k: v for k, v in doc.items() if k != "events"}


def read(path: Path, salvage: bool = False) -> JournalFile:
    """Read a session file: a journal, or one JSON object with an ``events`` list.

    A final record without a newline is kept if it parses (an editor may drop the newline)
    and ignored as torn if it does not. A UTF-8 byte-order mark is allowed. With ``salvage``
    (for ``hspr live ingest`` of another session file) a damaged header line is replaced by a
    bare one holding :data:`DAMAGED_HEADER` (why it is damaged) and no bank, so the events of the
    later lines can still be read: a hostile trial found a one-byte damage to line 1 left the
    outcomes with no way into a new session; and a damaged line in the middle is left out and
    listed in ``skipped_lines`` (a crash-safety trial: a garbage line blocked the way out the
    error message names).

    Raises
    ------
    LiveSessionError
        Missing or unreadable file, not UTF-8, invalid JSON (naming the line), not a session
        file, an unknown version.
    """
    if not_a_regular_file(path):  # a re-trial: every live command waited for ever on a named pipe
        raise LiveSessionError(f"{path}: not a regular file (a named pipe or a device?); give the session file "
                               "`hspr live start` wrote")
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise LiveSessionError(f"{path}: no such session file; create one with `hspr live start` (from Python: "
                               "LiveSession.create)") from None
    except OSError as exc:
        raise LiveSessionError(f"{path}: cannot read the session file ({exc.strerror or exc})") from None
    if (enc := unicode_bom(raw) or _utf16_without_mark(raw)) is not None:  # a re-trial: 'not a session file (not
        # UTF-8 text at byte 0)'; its re-trial: the same without a byte-order mark
        raise LiveSessionError(f"{path}: the file is {enc} text, not UTF-8: an editor saved it "
                               f"in another encoding; save it again as UTF-8 (nothing in it is lost)")
    if re.search(rb"\}[ \t\r]*\r(?!\n)[ \t\r]*\{", raw):  # a re-trial: 'nothing was recorded after it' of a file
        # with 3 outcomes; its re-trials: '}\r\r{' and '} \r{' too, and records after line 1 joined by CRs
        raise LiveSessionError(f"{path}: its lines end in a carriage return alone (CR, as some editors save), so it "
                               f"reads as one line; turn them into newlines (e.g. `tr '\\r' '\\n' < {path} > "
                               "fixed.hspr`, then use fixed.hspr): nothing in it is lost")
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        # a session header first: damaged bytes in one line (a torn last line is ignored, another one named)
        if f'"{FORMAT}"'.encode() not in raw.split(b"\n", 1)[0]:
            raise LiveSessionError(f"{path}: not a session file (not UTF-8 text at byte {exc.start})") from None
    if not raw.strip():
        raise LiveSessionError(f"{path}: the session file is empty; restore it or start a new session")
    bom = len(codecs.BOM_UTF8) if raw.startswith(codecs.BOM_UTF8) else 0
    try:
        whole = _loads(raw[bom:].decode("utf-8"))
    except DuplicateKeyError as exc:  # one object (a legacy or hand-edited file) naming a key twice
        if re.search(rb"\}\s*\n\s*\{", raw):  # a journal (a re-trial: its header could not be salvaged): by line
            whole = None
        else:
            raise LiveSessionError(f"{path}: {exc}; the session file is corrupt or hand-edited") from None
    except ValueError:
        whole = None
    if isinstance(whole, dict) and "events" in whole:  # one object: the legacy form, or a hand edit
        return _read_object(path, whole, len(raw))
    pieces = raw.split(b"\n")
    try:
        head = _loads(pieces[0][bom:].decode("utf-8"))
        _check_sum(head)
    except ValueError as exc:
        if pieces[0][bom:].strip() in (b"{", b"[") and f'"{FORMAT}"'.encode() in raw:  # a re-trial: a header re-saved
            # indented over several lines read as 'not a session file'
            raise LiveSessionError(f"{path}: line 1 is '{pieces[0][bom:].strip().decode()}' alone: the session header is "
                                   "spread over several lines (an editor or a JSON tool indented it); put it back on "
                                   "one line, as every record is (e.g. `jq -c .` of the header's lines)") from None
        if f'"{FORMAT}"'.encode() not in pieces[0]:
            raise LiveSessionError(f"{path}: not a session file (line 1 is {_why_not_json(exc)})") from None
        if not salvage:  # a header cut short or damaged: a session file all the same
            later = sum(1 for p in pieces[1:] if p.strip())
            raise LiveSessionError(
                f"{path}: the session header (line 1) is damaged, {_why_not_json(exc)}: restore the file from a copy"
                + (f"; or carry the outcomes of its {later} later line(s) into a new session: `hspr live start` on the "
                   f"same bank with another --session NEW, then `hspr live ingest {path} --session NEW`" if later else
                   "; nothing was recorded after it, so `hspr live start --force` with the same settings loses "
                   "nothing")) from None
        head = {"format": FORMAT, "version": VERSION, DAMAGED_HEADER: _why_not_json(exc)}
    if isinstance(head, dict):
        head.pop(CHECKSUM, None)
    _check_header(path, head, "line 1")
    events, lines, stop, torn, skipped = [], [], head.get("stop_width_pp"), False, []
    batch, n_records, cuts = None, 0, []  # batch: (line, records written, index of its first record) of the current change
    size = len(pieces[0]) + (1 if len(pieces) > 1 else 0)
    for i, piece in enumerate(pieces[1:], start=2):
        last = i == len(pieces)  # no newline after it: b'' when the file ends in one
        if not piece.strip():
            size += 0 if last else len(piece) + 1
            continue
        try:
            rec = _loads(piece.decode("utf-8"))
            _check_sum(rec)
        except ValueError as exc:
            if last and not isinstance(exc, (DuplicateKeyError, _Changed)):  # a record cut short (a killed process, a damaged
                # disk): ignored, its bytes kept; a complete record naming a key twice is refused like any line
                torn = piece.decode("utf-8", errors="replace")
                break
            now = f" (it now reads {shorten(str(exc), 300)})" if isinstance(exc, _Changed) else ""
            if salvage:  # a re-trial: a line naming a key twice was not left out, where the message said it would be
                skipped.append((i, _why_not_json(exc) + now))
                continue
            if piece.strip() in (b"{", b"["):  # a re-trial: a record indented over several lines was told to be deleted
                raise LiveSessionError(f"{path}: line {i} is '{piece.strip().decode()}' alone: a record spread over "
                                       "several lines (an editor or a JSON tool indented it); put it back on one line, "
                                       "as every record is (e.g. `jq -c .` of those lines): nothing is lost") from None
            if (joined := _joined_records(piece, exc)) is not None:
                raise LiveSessionError(f"{path}: line {i} holds two whole records joined where a line end was lost "
                                       f"(byte {joined + 1} of the line, {piece[joined:joined + 1]!r}, stands where the "
                                       "line end was: a disk error); nothing is lost once the line end is back: "
                                       f"{_line_end_fix(path, i, joined)}, then run the command again") from None
            intact = "Line 1 is" if i == 2 else f"Lines 1-{i - 1} are"
            raise LiveSessionError(f"{path}: line {i} is {_why_not_json(exc)}{now}: the session file is corrupt. {intact} "
                                   f"intact: keep a copy of the file, delete line {i} (that one event is lost) "
                                   "and run the command again; or carry the other lines' outcomes into a new session: "
                                   f"`hspr live start` on the same bank with another --session NEW, then `hspr live "
                                   f"ingest {path} --session NEW --skip-unknown`") from None
        size += len(piece) + (0 if last else 1)
        if isinstance(rec, dict):
            rec.pop(CHECKSUM, None)
        if isinstance(rec, dict) and BATCH in rec:  # kept apart: an event reads as it was made
            k = rec.pop(BATCH)
            k = int(k) if isinstance(k, float) and k.is_integer() else k  # 1.0: a JSON tool's rewrite (a re-trial)
            if isinstance(k, int) and not isinstance(k, bool):
                if batch is not None and n_records - batch[2] < batch[1]:  # the change before this one was cut
                    cuts.append((batch[0], batch[1], n_records - batch[2], False))
                batch = (i, k, n_records)
        n_records += 1
        if isinstance(rec, dict) and rec.get("type") == STOP:
            stop = rec.get("pp")
        elif isinstance(rec, dict) and rec.get("type") == MATRIX:
            if DAMAGED_HEADER in head:  # salvage: no bank to move
                continue
            if not isinstance(rec.get("path"), str) or not isinstance(head.get("bank"), dict):
                raise LiveSessionError(f"{path}: line {i} moves the bank matrix but names no path: the session file "
                                       "is corrupt or hand-edited")
            head = dict(head, bank=dict(head["bank"], matrix=rec["path"]))
        else:
            events.append(rec)
            lines.append(i)
    if batch is not None and n_records - batch[2] < batch[1]:
        cuts.append((batch[0], batch[1], n_records - batch[2], True))
    return JournalFile(dict(head, events=events, stop_width_pp=stop), VERSION, size, bool(torn), lines,
                       torn or "", cuts, skipped)


def _check_header(path: Path, head, where: str) -> None:
    if not isinstance(head, dict) or head.get("format") != FORMAT:
        raise LiveSessionError(f"{path}: not an hspr live session file ({where} has no \"format\": \"{FORMAT}\")")
    version = head.get("version")
    if version == LEGACY_VERSION and "events" not in head:  # a hostile trial: "version 1; this hspr reads 1 and 2"
        raise LiveSessionError(f"{path}: {where} says version {LEGACY_VERSION}, but a version-{LEGACY_VERSION} session "
                               f"file is one JSON object holding its events and this one is a version-{VERSION} journal "
                               f"(one record per line): the header was edited; set its \"version\" back to {VERSION}")
    if version not in (LEGACY_VERSION, VERSION):
        newer = (isinstance(version, int) and not isinstance(version, bool) and version > VERSION)
        raise LiveSessionError(f"{path}: session file version {version!r}; this hspr reads versions {LEGACY_VERSION} "
                               f"and {VERSION}" + ("; it was written by a newer hspr: upgrade hspr (pip install -U hspr)"
                                                   if newer else f": the header is damaged or hand-edited; restore the "
                                                   f"file from a copy, or set its \"version\" to {VERSION} (a journal: "
                                                   "one record per line)"))


def _read_object(path: Path, doc: dict, n_bytes: int) -> JournalFile:
    """A one-object session file (version 1, or a journal folded into one object by hand). Its checksums, if any,
    are checked (the header fields' and each event's) and then dropped, so a conversion writes new ones (a re-trial:
    copied from a journal's lines, they were written twice on conversion)."""
    _check_header(path, doc, "the object")
    events = doc["events"] if isinstance(doc["events"], list) else []
    for where, rec in [("its header fields", {k: v for k, v in doc.items() if k != "events"}),
                       *((f"event {i}", e) for i, e in enumerate(events, start=1))]:
        try:  # a re-trial: an outcome edited in such a file was read, and signed anew on conversion
            _check_sum(rec)
        except _Changed as exc:
            raise LiveSessionError(f"{path}: {where} {CHANGED} (it now reads {shorten(str(exc), 300)}); restore the "
                                   "file from a copy") from None
    doc = {k: v for k, v in doc.items() if k != CHECKSUM}
    if isinstance(doc["events"], list):
        doc["events"] = [{k: v for k, v in e.items() if k not in (CHECKSUM, BATCH)} if isinstance(e, dict) else e
                         for e in doc["events"]]
    return JournalFile(doc, LEGACY_VERSION, n_bytes)


def write_new(path: Path, doc: dict) -> None:
    """Write the whole journal of ``doc`` atomically (:func:`hspr.fileio.write_text_durable`).

    Used when a session is created and when a legacy file is converted. Raises OSError.
    """
    body = _line(dict(header_of(doc), version=VERSION)) + "\n" + "".join(_line(e) + "\n" for e in doc["events"])
    write_text_durable(body, path)


class UnlockedWriteError(OSError):
    """The file grew by complete lines after it was read under the lock: another writer did not take
    hspr's lock (a hard link to the session under another name, or a hand edit)."""


def append(path: Path, records: list[dict], size: int) -> int:
    """Append ``records`` (one JSON line each) after the first ``size`` bytes of ``path``, durably.

    A torn tail beyond ``size`` (no newline in it) is cut off first, its bytes appended to
    :func:`torn_path` so nothing read from the file is lost; a complete line beyond
    ``size`` means someone wrote without the lock, and is never cut (:class:`UnlockedWriteError`). A last record
    without its newline gets one. The file itself is locked (POSIX ``flock``) while this runs, so a
    writer under another name of it (a hard link) appends whole or is refused. On failure the file is
    truncated back to ``size`` and the OSError propagates. Returns the new size.
    """
    if records:  # the first record counts the change's records: a file cut inside it is noticed on read, and a
        # later change's records are not counted into it (a trial: "only 6", "only 7", then no warning). The count
        # goes first in the record, so a tear inside that record still shows it (a hostile trial: a torn first record
        # of a 6-record ingest was reported as one task)
        records = [{BATCH: len(records), **records[0]}, *records[1:]]
    data = "".join(_line(r) + "\n" for r in records).encode("utf-8")
    fd = os.open(path, os.O_RDWR)
    try:
        if fcntl is not None:  # the file itself too: a hard link's writer holds another name's lock file, and
            try:  # its cut-and-write could otherwise interleave with this one's; never wait on a foreign lock
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise UnlockedWriteError("another process holds a lock on the session file itself (not hspr's "
                                         "lock file)") from None
        end = os.fstat(fd).st_size
        tail = os.pread(fd, end - size, size) if end > size else b""
        if b"\n" in tail:
            raise UnlockedWriteError(f"{end - size} bytes were written after this session read the file, without "
                                     "the lock")
        if tail.strip():
            side = torn_path(path)
            try:
                with open(side, "ab") as fh:
                    fh.write(tail + b"\n")
                    fh.flush()
                    os.fsync(fh.fileno())
            except OSError as exc:  # a hostile trial: only the session file was named, whose permissions were fine
                raise OSError(exc.errno, f"{exc.strerror or exc}, writing {side}, where the incomplete last line "
                                         "of the session file is kept before the file is written; fix that file or "
                                         "folder (or move it away)") from None
        if size and os.pread(fd, 1, size - 1) != b"\n":
            data = b"\n" + data
        os.ftruncate(fd, size)
        try:
            view = memoryview(data)
            offset = size
            while view:
                n = os.pwrite(fd, view, offset)
                view, offset = view[n:], offset + n
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


def matrix_record(path: str, time: str) -> dict:
    """The record that points the session at its bank matrix's new place (an absolute path), with
    the time of the change (ISO 8601)."""
    return {"type": MATRIX, "path": path, "time": time}


def stop_record(pp: float | None) -> dict:
    """The record that sets the stop width (percentage points; None removes it)."""
    return {"type": STOP, "pp": pp}


def lock_holder(fd: int, table: str = "/proc/locks") -> int | None:
    """The id of the process holding the flock on the open file ``fd``, read from Linux's ``table`` of
    locks; None where there is no such table, no holder is listed, or the table cannot be read."""
    try:
        st = os.fstat(fd)
        with open(table, encoding="ascii", errors="replace") as fh:
            rows = fh.read().splitlines()
    except OSError:
        return None
    inode = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    for row in rows:  # '1: FLOCK  ADVISORY  WRITE 1234 00:2f:5678 0 EOF'; a waiter's row has '->' after the number
        f = row.split()
        if len(f) >= 6 and f[1] == "FLOCK" and f[5] == inode and f[4].isdigit():
            return int(f[4])
    return None


@contextmanager
def session_lock(path: Path):
    """Exclusive advisory lock on ``<path>.lock`` for one command's read-change-append of session
    file ``path`` (no-op where fcntl is unavailable); waits, with a log line, while another command
    holds it. Raises LiveSessionError when the lock file cannot be created."""
    if fcntl is None:  # pragma: no cover
        yield
        return
    lock = lock_path(path)
    try:
        fh = open(lock, "a")
    except IsADirectoryError:
        raise LiveSessionError(f"{path}: {lock} is a folder, but hspr keeps the session's lock file under that "
                               "name: move the folder away (nothing of the session is in it)") from None
    except OSError as exc:
        if exc.errno == errno.EROFS:  # a trial: told to fix the lock file's permissions on a read-only disk
            fix = (f"the file system is read-only, and a change needs the lock file beside the session: to go on with "
                   f"it, copy {path.name} to a writable folder and give the copy as --session (`hspr live status` works "
                   "where it is); to start anew, give a --session in a writable folder")
        elif lock.is_symlink() and not lock.exists():
            fix = f"{lock} is a link to a missing file: delete the link (it holds nothing of the session)"
        elif lock.exists():
            fix = (f"the lock file exists but cannot be opened for writing: fix its permissions, or delete {lock} "
                   "(it holds nothing of the session)")
        elif exc.errno in (errno.ENOSPC, errno.EDQUOT):  # a crash-safety trial: a disk out of inodes (df -i)
            fix = "the disk has no room for a new file (no free space, or no free inodes: df -h, df -i): free some"
        else:
            fix = "the session folder must be writable"
        raise LiveSessionError(f"{path}: cannot open the lock file {lock} ({exc.strerror}); {fix}") from None
    with fh:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:  # another command holds it: say so, then wait
            import logging  # here only: every command would pay for the import

            pid = lock_holder(fh.fileno())
            # a durability trial: a holder stopped by Ctrl-Z left the waiter waiting with no clue which process it was
            who = "" if pid is None else (f" (process {pid}; if it is stopped, e.g. by Ctrl-Z, resume it with `fg` or "
                                          f"`kill -CONT {pid}`, or end it)")
            logging.getLogger(__name__).warning("%s: another hspr command is using this session%s; waiting for it to "
                                                "finish", path, who)
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
