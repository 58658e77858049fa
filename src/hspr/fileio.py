"""Durable file writes shared by replay results, selection outputs and live sessions."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import numpy as np


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


def write_json_durable(obj, path: Path) -> None:
    """Write ``obj`` as standard JSON to ``path`` atomically and durably.

    NaN and infinite floats are written as ``null`` (:func:`finite_json`), never as the
    non-standard ``NaN`` / ``Infinity`` tokens.

    A temporary file in the same folder is written, flushed and fsync'ed, moved over ``path``
    with ``os.replace`` and the folder is fsync'ed; on any failure the temporary file is
    removed and ``path`` is left as it was.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        if path.exists():
            mode = path.stat().st_mode & 0o777
        else:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.chmod(tmp, mode)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(finite_json(obj), fh, indent=1, allow_nan=False)
            fh.write("\n")
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


def read_json_file(path, what: str = ""):
    """Parse a JSON file; ValueError naming ``what`` (e.g. an option) and the path when it is not
    UTF-8 or not JSON.

    Raises
    ------
    FileNotFoundError
        When the file does not exist (callers word that case themselves).
    ValueError
        ``"<what> <path>: not UTF-8 text (...)"`` or ``"<what> <path>: not valid JSON (line L: ...)"``.
    """
    where = f"{what} {path}" if what else str(path)
    raw = Path(path).read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{where}: not UTF-8 text (byte {exc.start}: {exc.reason}); save it as UTF-8") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{where}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
