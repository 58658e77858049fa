"""On-disk cache of fitted models, so a live command does not refit the bank (issue 11).

It also keeps the outcome of ``hspr_auto``'s source-only selection (minutes on a bank with no
shipped configuration), so a second replay of the same sources does not select again
(:func:`cached_result`), and the finished units of a long computation that was stopped (a
calibration's held-out runs, a selection's held-out agents), which the same computation resumes
from (:class:`Checkpoint`).

A source fit is deterministic: the same bank, method, settings and code give the same fitted
model. The cache stores it as a pickle in the ``fits`` folder of the user's cache folder
(``platformdirs.user_cache_dir("hspr")``), or directly in ``$HSPR_CACHE_DIR`` when it is set,
under a key that hashes

* the bank's :meth:`~hspr.data.matrix.ResponseMatrix.digest` (agents, tasks, cells),
* the method name and its settings (JSON, sorted keys),
* the hspr version and a digest of the installed package's source files, so an upgrade or a
  local code change never reuses a fit made by other code;
* the installed versions of numpy, scipy and scikit-learn (an upgrade of those may change a fit).

An entry is trusted only if its bytes match the SHA-256 checksum written before them, it
unpickles, carries its own key and is a :class:`~hspr.session.FittedModel` whose task ids are
the bank's; anything else (a torn write, a corrupt or foreign file, another format) is deleted
and rebuilt. The checksum matters: a hostile trial flipped one byte of an entry, which still
unpickled, and the session then gave NaN estimates and asked tasks in file order. Entries are written
atomically (temporary file, ``os.replace``); a cache that cannot be written (read-only or full
disk) is skipped with a warning, never an error: it only costs the refit. Entries not used for
``MAX_AGE_DAYS`` days (fits made by older code, of banks no longer used) are deleted whenever a
new entry is stored; a used entry's modification time is renewed.
"""

from __future__ import annotations

import contextvars
import functools
import hashlib
import json
import os
import pickle
import re
import stat
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from . import __version__
from .errors import HsprError
from .fileio import dangling_link, dangling_words

#: bumped when the entry layout changes (2: a magic and a SHA-256 checksum before the pickle)
CACHE_FORMAT = 2
#: the first bytes of an entry, followed by the 32-byte SHA-256 digest of the pickle that follows
_MAGIC = b"HSPRFIT2\n"
ENV_VAR = "HSPR_CACHE_DIR"
MAX_AGE_DAYS = 30


class CacheLocationError(HsprError):
    """The cache folder cannot be told: no home folder for this user (a user id without a passwd entry, as
    ``docker --user`` or a service gives, and no ``HOME``), or ``~name`` in ``$HSPR_CACHE_DIR`` for no such
    user. A fit then goes on without the cache (:func:`_cached`, with a warning); ``hspr cache`` says it."""


def cache_dir() -> Path:
    """The cache folder: ``$HSPR_CACHE_DIR`` if set and not blank (``~`` expanded, made absolute, symlinks
    kept), else ``platformdirs.user_cache_dir("hspr")``/fits.

    Raises CacheLocationError when that folder cannot be told (a trial: platformdirs' and pathlib's own
    RuntimeError ended the command in a traceback)."""
    env = os.environ.get(ENV_VAR)
    fix = f"set {ENV_VAR} to a writable folder (e.g. {ENV_VAR}=/tmp/hspr-cache)"
    if env and env.strip():  # a trial: a relative folder was another cache in every working folder (`hspr cache purge`
        # missed it); a blank value is unset, as an empty one (a hostile trial: ' ' made a folder named ' ')
        try:
            return Path(env).expanduser().absolute()
        except RuntimeError:  # '~nosuchuser/x'
            raise CacheLocationError(f"{ENV_VAR}={env}: its '~' names no home folder (no such user, or no HOME for this "
                                     f"one); {fix}") from None
    import platformdirs

    try:
        return Path(platformdirs.user_cache_dir("hspr")) / "fits"
    except (RuntimeError, KeyError) as exc:  # no HOME and no passwd entry for this user id
        raise CacheLocationError(f"cannot tell where the fit cache goes: no home folder for this user ({exc}); "
                                 f"{fix}") from None


@functools.cache
def code_digest() -> str:
    """sha256 (hex) over the path and bytes of every ``.py`` file of the installed hspr package.

    Computed once per process (a live command asks twice: for the fit cache key and to decide
    whether the session's log was written by this code).
    """
    root = Path(__file__).resolve().parent
    h = hashlib.sha256()
    for p in sorted(root.rglob("*.py")):
        h.update(str(p.relative_to(root)).encode())
        h.update(p.read_bytes())
    return h.hexdigest()


def plugin_digest(method: str) -> str | None:
    """sha256 (hex) over the path and bytes of every ``.py`` file of the top-level packages that hold
    ``method``'s class and its base classes (hspr and the standard library left out) when it is an
    installed package's method (:data:`hspr.methods.ENTRY_POINT_GROUP`); None for hspr's own methods
    and for any name no package registers (a cached result's label). Read on every call: a method of
    one's own changes while hspr does not, and a fit made by its old code must not stand in for its new
    one (a trial: a method subclassing another package's kept that package's old fit)."""
    import sys

    from .methods import REGISTRY, method_class, registry

    if method in REGISTRY or method not in registry():
        return None
    tops = sorted({c.__module__.partition(".")[0] for c in method_class(method).__mro__}
                  - {"hspr", "builtins", *sys.stdlib_module_names})
    h = hashlib.sha256()
    for name in tops:
        top = sys.modules.get(name)
        roots = getattr(top, "__path__", None)
        files = (sorted(p for d in roots for p in Path(d).rglob("*.py")) if roots
                 else [Path(top.__file__)] if getattr(top, "__file__", None) else [])
        for p in files:
            h.update(f"{name}:{p.name if roots is None else p}".encode())
            h.update(p.read_bytes())
    return h.hexdigest()


def method_code(method: str) -> str:
    """The code a fit or a session of ``method`` depends on: :func:`code_digest`, with an installed
    package's method's own :func:`plugin_digest` folded in (hspr's methods: :func:`code_digest` alone)."""
    extra = plugin_digest(method)
    return code_digest() if extra is None else hashlib.sha256(f"{code_digest()}:{extra}".encode()).hexdigest()


@functools.cache
def library_versions() -> dict:
    """Versions of the numerical libraries a fit depends on (numpy, scipy, scikit-learn), read from
    the installed packages' metadata (importing scipy would cost a live command a third of a second).
    A hostile trial: a selection's best and second-best settings differed by 1e-6 pp, so a
    library upgrade may change a fit, and a cached one must not stand in for it."""
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for name in ("numpy", "scipy", "scikit-learn"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


def cache_key(bank_digest: str, method: str, settings: dict) -> str:
    """Hex key of one fit: bank digest, method, settings, hspr version, code digest (:func:`method_code`:
    with an installed package's method, its code too), the numerical libraries' versions
    (:func:`library_versions`), cache format."""
    blob = json.dumps({"format": CACHE_FORMAT, "version": __version__, "code": method_code(method), "bank": bank_digest,
                       "method": method, "settings": settings, "libraries": library_versions()}, sort_keys=True,
                      default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def _load(path: Path, key: str, tasks: tuple[str, ...] | None, kind: type | None = None, redo: str | None = None):
    """The entry's object, or None (a damaged or foreign entry is deleted, with a warning that ends with
    ``redo``, what is done instead; default: the model is fitted, or it is computed, again).
    ``kind`` is the type the entry must hold (default :class:`~hspr.session.FittedModel`, whose
    task ids must then be ``tasks``)."""
    from .session import FittedModel

    kind = FittedModel if kind is None else kind
    try:
        with open(path, "rb") as fh:
            blob = fh.read()
    except OSError:  # no entry, or a cache folder that cannot be read (under a file: its store warns)
        return None
    entry = None
    head = len(_MAGIC) + 32
    body = memoryview(blob)[head:]
    if blob[:len(_MAGIC)] == _MAGIC and hashlib.sha256(body).digest() == blob[len(_MAGIC):head]:
        try:
            entry = pickle.loads(body)
        except Exception:  # a foreign pickle under a valid checksum: never trusted
            entry = None
    ok = (isinstance(entry, dict) and entry.get("key") == key and isinstance(entry.get("model"), kind)
          and (tasks is None or tuple(entry["model"].tasks) == tuple(tasks)))
    if not ok:
        try:
            path.unlink()
            gone = "it was deleted"
        except OSError as exc:  # a trial: a locked folder kept it, and the warning said deleted on every run
            gone = f"it could not be deleted ({exc.strerror or exc}; delete it by hand)"
        # a re-trial: the refit after a damaged entry looked like any first fit
        redo = redo or f"{'the model is fitted' if kind is FittedModel else 'it is computed'} again"
        warnings.warn(f"the fit-cache entry {path} was damaged (or not hspr's); {gone} and {redo}", stacklevel=3)
        return None
    try:
        os.utime(path)  # in use: kept by the age-based clean-up
    except OSError:
        pass
    return entry["model"]


def _store(path: Path, key: str, model, again: str = "fit again", quiet: bool = False) -> bool:
    """Write the entry; a cache that cannot be written is skipped with a warning (each command
    then fits again, which a user of a 40 s fit should hear about: a hostile trial set
    HSPR_CACHE_DIR to a file and every command refitted, saying 'then cached'). ``again`` says
    what the next command will then do. ``quiet``: no warning at all (a :class:`Checkpoint`, which saves
    time only if its computation is stopped). Returns whether the entry was written."""
    def warn(text: str) -> None:
        if not quiet:
            warnings.warn(text, stacklevel=4)

    def skipped(why: str, fix: str = "set HSPR_CACHE_DIR to a writable folder (or free space)") -> None:
        warn(f"cannot write the fit cache in {path.parent} ({why}); the next command will {again}: {fix}")

    try:  # pickled before any file is made, so that a model that does not pickle leaves nothing to clean up
        body = pickle.dumps({"key": key, "model": model}, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as exc:  # a method-writer's trial: told the (writable) folder was the problem
        warn(f"the fitted model of {type(model).__qualname__} cannot be pickled ({type(exc).__name__}: {exc}), so it "
             "is not kept in the fit cache: every command fits it again (a method's fitted model must pickle to be "
             "cached, and to run in replay --workers > 1)")
        return False
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        # a hostile trial: a cache folder that is a file (or lies under one) was told to free space
        try:
            blocker = next((p for p in (path.parent, *path.parent.parents) if p.exists() and not p.is_dir()), None)
            dangling = dangling_link(path.parent)
        except OSError:  # a hostile trial: a parent that cannot be entered (or a name too long) made exists() raise,
            blocker = dangling = None  # and a replay failed at its first checkpoint, losing its finished runs
        if blocker is not None:
            skipped(f"{blocker} is a file, not a folder", "set HSPR_CACHE_DIR to a folder, or move that file")
        elif dangling is not None:  # a trial: told 'File exists' and to free space
            skipped(dangling_words(dangling),
                    "make that folder, fix the link, or set HSPR_CACHE_DIR to a writable folder")
        else:
            skipped(exc.strerror or str(exc))
        return False
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(_MAGIC + hashlib.sha256(body).digest())
            fh.write(body)
        os.replace(tmp, path)
    except FileNotFoundError:  # the cache was emptied meanwhile (`hspr cache purge`): nothing to fix in the folder
        warn(f"the fit cache in {path.parent} was emptied while an entry was written; the next command will {again}")
        return False
    except BaseException as exc:  # full disk, read-only folder: skip caching
        try:
            os.unlink(tmp)  # also on Ctrl-C (a trial: an interrupted store left its temporary file for an hour)
        except OSError:
            pass
        if not isinstance(exc, Exception):
            raise
        skipped(getattr(exc, "strerror", None) or str(exc) or type(exc).__name__)
        return False
    _prune(path.parent, keep=path)
    return True


#: the file name of a cache entry: its key (a SHA-256 hex digest) and .pkl
_ENTRY = re.compile(r"[0-9a-f]{64}(\.part)?\.pkl")
#: the file name of a :class:`Checkpoint`'s entry: a stopped computation's finished units
_PART = re.compile(r"[0-9a-f]{64}\.part\.pkl")
#: ``_store``'s temporary file (``tempfile.mkstemp``: 8 random characters): a write in progress,
#: or one a killed process never finished
_TEMP = re.compile(r"\.[0-9a-f]{64}(\.part)?\.pkl\.[a-z0-9_]{8}\.tmp")
#: a temporary file older than this (seconds) is a write that never finished (a write takes seconds)
STALE_TEMP_SECONDS = 3600


def _prune(folder: Path, keep: Path) -> None:
    """Delete cache entries not used for :data:`MAX_AGE_DAYS` days (never ``keep``) and temporary
    files of writes that never finished (older than :data:`STALE_TEMP_SECONDS`). Only files named
    as hspr names them are touched (:func:`cache_entries`): ``$HSPR_CACHE_DIR`` may be a folder that
    holds a user's own pickles (a hostile trial saw one deleted)."""
    now = time.time()
    try:
        entries = _entry_stats(folder)
    except OSError:  # a folder that can be written but not listed: nothing to prune (never the fit's failure)
        return
    for p, st in entries:
        limit = now - (STALE_TEMP_SECONDS if _TEMP.fullmatch(p.name) else MAX_AGE_DAYS * 86400)
        try:
            if p != keep and st.st_mtime < limit:
                p.unlink()
        except OSError:
            pass


def entry_path(bank_digest: str, method: str, settings: dict) -> Path:
    """The file :func:`cached_fit` keeps the fit of (bank, method, settings) in (it may not exist)."""
    return _entry(cache_key(bank_digest, method, settings))


def _entry(key: str) -> Path:
    """The file of the entry whose key is ``key``."""
    return cache_dir() / f"{key}.pkl"


def cached_fit(bank_digest: str, method: str, settings: dict, tasks: tuple[str, ...], fit: Callable[[], object],
               use_cache: bool = True):
    """The fitted model for (bank, method, settings): from the cache if a valid entry exists, else ``fit()``.

    Parameters
    ----------
    bank_digest : str
        :meth:`ResponseMatrix.digest` of the bank ``fit`` fits on.
    method : str
        Registered method name; ``settings`` its settings (JSON-serialisable dict).
    tasks : tuple of str
        The bank's task ids; a cached model for other tasks is not trusted.
    fit : callable
        Builds the model when the cache has none; its result is then stored.
    use_cache : bool
        False: always ``fit()`` and leave the cache alone.

    Returns
    -------
    FittedModel
    """
    if not use_cache:
        return fit()
    return _cached(cache_key(bank_digest, method, settings), tasks, None, fit, "fit again")[0]


def _cached(key: str, tasks: tuple[str, ...] | None, kind: type | None, build: Callable[[], object],
            again: str) -> tuple[object, bool]:
    """The entry of ``key`` (checked as :func:`_load` checks it), else ``build()`` stored under it;
    with whether it came from the cache. ``again``: what the next command does if it cannot be stored."""
    path = _entry_or_say(key, again, stacklevel=3)
    if path is None:
        return build(), False
    result = _load(path, key, tasks, kind)
    if result is not None:
        return result, True
    pending: list[Checkpoint] = []
    token = _FINISHED.set(pending)  # the checkpoints of build() stay until its result is stored (Checkpoint.finished)
    try:
        result = build()
        _store(path, key, result, again=again)
    finally:
        _FINISHED.reset(token)
    for checkpoint in pending:
        checkpoint.clear()
    return result, False


def cached_result(bank_digest: str, what: str, settings: dict, kind: type, build: Callable[[], object]) -> tuple[object, bool]:
    """Another deterministic result computed from a bank, cached as a fit is (same folder, key and checks).

    Parameters
    ----------
    bank_digest : str
        :meth:`ResponseMatrix.digest` of the bank ``build`` reads.
    what : str
        What is cached (e.g. ``"hspr selection"``); part of the key, as a method name is.
    settings : dict
        Every setting the result depends on (JSON-serialisable); not the number of workers.
    kind : type
        The result's type; an entry holding anything else is deleted and rebuilt.
    build : callable
        Computes the result when the cache has none; it is then stored.

    Returns
    -------
    (result, from_cache)
        ``from_cache`` is True when the result was read from the cache.
    """
    return _cached(cache_key(bank_digest, what, settings), None, kind, build, "compute it again")


def kept_result(bank_digest: str, what: str, settings: dict, kind: type, redo: str | None = None):
    """The result :func:`keep_result` (or :func:`cached_result`) kept for these, or None: no entry, no cache
    folder, or a damaged entry (deleted, with a warning ending in ``redo``, what is done instead; default "it is
    computed again"). For a caller that decides after computing whether a result is worth keeping. Same
    parameters as :func:`cached_result`."""
    key = cache_key(bank_digest, what, settings)
    try:
        path = _entry(key)
    except CacheLocationError:
        return None
    return _load(path, key, None, kind, redo)


def keep_result(bank_digest: str, what: str, settings: dict, value, again: str) -> bool:
    """Keep ``value`` where :func:`kept_result` reads it; a cache that cannot be written is skipped with a warning
    ending in ``again``, what the next command then does. Returns whether it was written."""
    key = cache_key(bank_digest, what, settings)
    path = _entry_or_say(key, again, stacklevel=2)
    return False if path is None else _store(path, key, value, again=again)


def _entry_or_say(key: str, again: str, stacklevel: int) -> Path | None:
    """:func:`_entry` of ``key``, or None with a warning when no cache folder can be told (the cache is a saving, not
    a need: the command goes on and will ``again``); ``stacklevel`` as its caller's own ``warnings.warn`` would
    give it."""
    try:
        return _entry(key)
    except CacheLocationError as exc:
        warnings.warn(f"{exc}; until then each command will {again}", stacklevel=stacklevel + 1)
        return None


#: a :class:`Checkpoint` is written at a finished unit of work at least this many seconds after its previous write
#: (or its start): a computation shorter than that writes nothing
CHECKPOINT_SECONDS = 30.0


class Checkpoint:
    """The finished units of a long deterministic computation, kept in the fit cache (same folder, key and
    checks as :func:`cached_result`) so that a stopped run resumes where it stopped.

    A scale trial: ``hspr live start`` with ``hspr_robust`` on a bank of 295 agents x 3,000 tasks was still
    calibrating after 45 minutes, and a stop (Ctrl-C, a killed process, a closed laptop) kept nothing.

    Parameters
    ----------
    bank_digest, what, settings
        As :func:`cached_result`: every setting the units' results depend on (not the number of workers).

    Attributes
    ----------
    done : dict
        The finished units, ``{unit id: result}``: those read by :meth:`load`, then those given to :meth:`add`.

    Writing is quiet: a cache that cannot be written costs nothing unless the computation is stopped. The units
    must be deterministic, so that a resumed computation gives what an unstopped one gives.
    """

    def __init__(self, bank_digest: str, what: str, settings: dict) -> None:
        self.what = what
        self._key = cache_key(bank_digest, what, settings)
        try:  # its own name (_PART): `hspr cache info` counts them apart from fits
            self._path: Path | None = _entry(self._key).with_suffix(".part.pkl")
        except CacheLocationError:  # no cache folder: nothing to resume from, nothing kept
            self._path = None
        self._every = CHECKPOINT_SECONDS
        self._written = time.monotonic()
        self._unsaved = False
        self.done: dict = {}

    def load(self) -> dict:
        """The units a stopped run finished (``{}`` when none were kept; a damaged entry is deleted, with a
        warning, as :func:`cached_result`'s), now in :attr:`done`."""
        kept = None if self._path is None else _load(self._path, self._key, None, dict,
                                                     f"the {self.what} it kept from a stopped run are computed again")
        self.done = dict(kept or {})
        return self.done

    def add(self, unit, result) -> None:
        """Record a finished unit; all finished units are written when :data:`CHECKPOINT_SECONDS` have passed
        since the previous write (atomically: a stop while writing keeps the previous entry)."""
        self.done[unit] = result
        self._unsaved = True
        if time.monotonic() - self._written >= self._every:
            self.save()

    def save(self) -> bool:
        """Write every finished unit now (a computation that is being stopped calls it); returns whether the
        cache holds them all (False: no cache folder, or it cannot be written)."""
        if self._unsaved and self._path is not None:
            self._unsaved = not _store(self._path, self._key, self.done, quiet=True)
            self._written = time.monotonic()
        return self._path is not None and bool(self.done) and not self._unsaved

    def kept(self) -> int:
        """How many finished units the cache holds for this computation now: those of its last write that
        succeeded, or of a stopped run's (0 when none, or no cache folder)."""
        if self._path is None:
            return 0
        return len(_load(self._path, self._key, None, dict, f"the {self.what} it kept are computed again") or {})

    def finished(self) -> None:
        """The computation ended: delete the entry. Inside :func:`cached_fit` or :func:`cached_result` the entry
        is written whole instead, and deleted only once their result is stored: a hostile trial's stop in the
        seconds between the last held-out run and the stored fit (the final source fit, pickling) lost every
        run."""
        pending = _FINISHED.get()
        if pending is None:
            self.clear()
        else:
            self.save()
            pending.append(self)

    def clear(self) -> None:
        """Delete the entry."""
        if self._path is not None:
            try:
                self._path.unlink(missing_ok=True)
            except OSError:
                pass


#: the checkpoints that finished inside the :func:`_cached` call of this context, to be deleted once its result is
#: stored (:meth:`Checkpoint.finished`); None outside one
_FINISHED: contextvars.ContextVar[list[Checkpoint] | None] = contextvars.ContextVar("hspr_finished_checkpoints",
                                                                                    default=None)


def cache_entries(folder: Path | None = None) -> list[Path]:
    """The cache's entries (regular files named as hspr names them: 64 hex digits, ``.pkl``) and its
    temporary files (:data:`_TEMP`), sorted by name. Other files, symbolic links (hspr makes none)
    and files gone while the folder is read are left out. ``folder`` defaults to :func:`cache_dir`.

    Raises OSError (naming the folder) when it exists but cannot be read.
    """
    return [p for p, _ in _entry_stats(folder)]


def _entry_stats(folder: Path | None) -> list[tuple[Path, os.stat_result]]:
    """:func:`cache_entries` with each file's ``lstat`` (read once: the listing, pruning, sizes and
    purging all use it)."""
    folder = cache_dir() if folder is None else Path(folder)
    try:
        names = list(folder.iterdir())
    except (FileNotFoundError, NotADirectoryError):
        return []
    out = []
    for p in names:
        if not (_ENTRY.fullmatch(p.name) or _TEMP.fullmatch(p.name)):
            continue
        try:
            st = p.lstat()
        except FileNotFoundError:  # deleted meanwhile (another command's write or purge)
            continue
        if stat.S_ISREG(st.st_mode):  # a trial: a link named as an entry was deleted, its target counted
            out.append((p, st))
    return sorted(out, key=lambda e: e[0].name)


def cache_summary(folder: Path | None = None) -> dict:
    """What :func:`cache_entries` holds: ``folder`` (str), ``entries`` (count of finished entries),
    ``stopped`` (how many of those are a stopped computation's finished units, :class:`Checkpoint`),
    ``unfinished`` (count of temporary files: writes in progress, or never finished), ``bytes``
    (their total size), ``oldest_use`` and ``newest_use`` (modification times, seconds since the
    epoch, or None when empty) and ``max_age_days`` (:data:`MAX_AGE_DAYS`: older entries are
    deleted when a new one is stored).

    Raises OSError when the folder exists but cannot be read.
    """
    folder = cache_dir() if folder is None else Path(folder)
    stats = _entry_stats(folder)
    times = [st.st_mtime for _, st in stats]
    return {"folder": str(folder), "entries": sum(bool(_ENTRY.fullmatch(p.name)) for p, _ in stats),
            "stopped": sum(bool(_PART.fullmatch(p.name)) for p, _ in stats),
            "unfinished": sum(bool(_TEMP.fullmatch(p.name)) for p, _ in stats),
            "bytes": int(sum(st.st_size for _, st in stats)), "oldest_use": min(times, default=None),
            "newest_use": max(times, default=None), "max_age_days": MAX_AGE_DAYS}


@dataclass(frozen=True)
class Purge:
    """What :func:`purge_cache` did: files ``deleted`` and the ``bytes`` they held; ``in_progress``,
    temporary files younger than :data:`STALE_TEMP_SECONDS` left alone (another command's write);
    ``failed``, (path, reason) of each file that could not be deleted; ``entries``, how many of the
    deleted files were fits (the others: temporary files a killed write left)."""

    deleted: int
    bytes: int
    in_progress: int
    failed: tuple[tuple[str, str], ...]
    entries: int = 0


def purge_cache(folder: Path | None = None, deleting: Callable[[int, int], None] | None = None) -> Purge:
    """Delete every file :func:`cache_entries` lists (never another file of the folder), except the
    temporary files of writes still in progress; the next command fits (and selects) again. A file
    that cannot be deleted is recorded in :attr:`Purge.failed` and the others are still deleted.
    ``deleting(files, bytes)`` is told the running totals after each deletion (the command line's note
    of what an interrupted purge had deleted).

    Raises OSError when the folder exists but cannot be read.
    """
    deleted = freed = in_progress = entries = 0
    failed = []
    now = time.time()
    for p, st in _entry_stats(folder):
        temp = bool(_TEMP.fullmatch(p.name))
        if temp and st.st_mtime > now - STALE_TEMP_SECONDS:
            in_progress += 1  # a trial: purging another command's write made it advise another cache folder
            continue
        try:
            p.unlink()
        except FileNotFoundError:
            continue
        except OSError as exc:
            failed.append((str(p), exc.strerror or str(exc)))
            continue
        deleted += 1
        entries += not temp
        freed += st.st_size
        if deleting is not None:
            deleting(deleted, freed)
    return Purge(deleted, freed, in_progress, tuple(failed), entries)
