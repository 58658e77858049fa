"""``hspr cache``: where the fit cache is, what it holds, and emptying it (as ``pip cache``).

The cache (:mod:`hspr.fitcache`) keeps source fits for ``hspr live``, ``hspr_auto``'s source-only
selections, ``hspr_robust``'s calibration runs, live sessions' bank files that were slow to read (parsed),
and the finished units of a stopped calibration, selection or replay (:class:`~hspr.fitcache.Checkpoint`);
nothing in it is a user's data, and a command whose entry is gone fits (selects, calibrates, reads, runs)
again. A trial of the selection cache: a user who wanted a fresh selection, or its
time, had to find the folder and delete files by hand.
"""

from __future__ import annotations

import copy
import functools
import json
import os
import time
from types import MappingProxyType

import click

from .. import fitcache
from ..errors import HsprError
from ..fileio import dangling_link, dangling_words
from .meta import SuggestingGroup, note_saved, say_warning, warnings_said


def _size(n: float) -> str:
    """Bytes as B / KB / MB / GB / TB (powers of 1000, as ``du --si``), rounded before the unit is chosen."""
    if n < 1000:
        return f"{n:.0f} B"
    for unit in ("KB", "MB", "GB"):
        n /= 1000
        if round(n, 1) < 1000:
            return f"{n:.1f} {unit}"
    return f"{n / 1000:.1f} TB"


def _ago(t: float | None) -> str:
    if t is None:
        return "-"
    if t > time.time() + 3600:  # a trial: a file time in 2031 was "0.0 hours ago"
        return "in the future (the clock was set back, or the files were copied from a machine ahead of this one)"
    hours = max(0.0, time.time() - t) / 3600  # a clock set back a little: not "-3.0 hours ago"
    return f"{hours / 24:.1f} days ago" if hours >= 24 else f"{hours:.1f} hours ago"


def _check_folder() -> None:
    folder = fitcache.cache_dir()
    if folder.exists() and not folder.is_dir():  # a hostile trial of the live cache set HSPR_CACHE_DIR to a file
        say_warning(f"{folder} is not a folder, so nothing can be cached there: set {fitcache.ENV_VAR} to a folder")
    elif (dangling := dangling_link(folder)) is not None:  # a trial: 'entries: 0' without a word
        say_warning(f"{dangling_words(dangling)}, so nothing can be cached there: make that folder, fix the link, or "
                    f"set {fitcache.ENV_VAR} to a writable folder")


def _json_flag(fields: str):
    """The ``--json`` option of a cache command (``fields``: what its object holds); the command runs
    after the folder check (:func:`_check_folder`), so a warning reaches the object's ``warnings``."""
    def wrap(f):
        @functools.wraps(f)
        def checked(*args, **kwargs):
            _check_folder()
            return f(*args, **kwargs)

        return click.option("--json", "as_json", is_flag=True, help=f"Print one JSON object: {fields}")(checked)
    return wrap


class CacheGroup(SuggestingGroup):
    """``hspr cache``: ``clear`` / ``clean`` name ``purge``, ``path`` / ``where`` name ``dir``."""

    synonyms = MappingProxyType({"clear": "purge", "clean": "purge", "path": "dir", "where": "dir"})


def register(group: click.Group) -> None:
    """Add ``cache`` (``dir``, ``info``, ``purge``: the fitted-model cache, :mod:`hspr.fitcache`) to the CLI ``group``."""
    @group.group("cache", cls=CacheGroup)
    def cache_group() -> None:
        """The fit cache: source fits of `hspr live`, hspr_auto's selections and hspr_robust's calibration
        runs, so a command does not refit (select, calibrate) the same sources again; bank files of live
        sessions that took a second or more to read, parsed; and the finished runs of a stopped
        calibration, selection or replay, which the same command resumes from.

        \b
          hspr cache dir           # the folder ($HSPR_CACHE_DIR when set)
          hspr cache info --json   # entries, size, last use
          hspr cache purge         # delete every entry: the next commands fit again

        Entries are keyed by what they were computed from (the bank's digest, the method and its
        settings; for a bank file, its path, size and times), the hspr code and the numpy, scipy and
        scikit-learn versions, and checked by SHA-256 before use; those unused for
        30 days are deleted whenever a new one is stored. Only regular files named as hspr names its
        entries are listed or deleted.
        """

    @cache_group.command("dir")
    def dir_cmd() -> None:
        """Print the cache folder (it may not exist yet)."""
        click.echo(str(fitcache.cache_dir()))

    @cache_group.command("info")
    @_json_flag("ok, folder, entries, stopped (how many entries are the finished runs of a stopped calibration, "
                "selection or replay, which the same command resumes from), unfinished (temporary files: writes in progress or never "
                "finished), bytes, "
                "oldest_use and newest_use (seconds since the epoch, or null), max_age_days, warnings.")
    def info_cmd(as_json: bool) -> None:
        """The cache folder, its entries, their total size and when they were last used."""
        if fitcache.ENV_VAR in os.environ and not os.environ[fitcache.ENV_VAR].strip():
            # a trial: shown the default folder without a word, where purge refuses the same setting
            say_warning(f"{fitcache.ENV_VAR} is set but empty (an unset shell variable?): this is the default cache "
                        f"{fitcache.cache_dir()}")
        info = fitcache.cache_summary()
        if as_json:
            click.echo(json.dumps({"ok": True, **info, "warnings": warnings_said()}))
            return
        click.echo(f"folder: {info['folder']}")
        unfinished = f" (and {info['unfinished']} unfinished write(s))" if info["unfinished"] else ""
        click.echo(f"entries: {info['entries']}{unfinished}, {_size(info['bytes'])}")
        if info["stopped"]:  # a hostile trial: a stopped calibration's runs looked like any fit
            click.echo(f"of them {info['stopped']} the finished runs of a stopped calibration, selection or replay, "
                       "which the same command resumes from")
        if info["entries"] or info["unfinished"]:
            click.echo(f"last used: newest {_ago(info['newest_use'])}, oldest {_ago(info['oldest_use'])}; entries "
                       f"unused for {info['max_age_days']} days are deleted when a new one is stored")

    # a hostile trial: `hspr cache list` (as `pip cache list`) was "No such command"; a hidden alias of info
    alias = copy.copy(info_cmd)
    alias.hidden = True
    cache_group.add_command(alias, "list")

    @cache_group.command("purge")
    @_json_flag("ok, folder, deleted (files), bytes (freed), in_progress (another command's writes, left alone), "
                "warnings; a file that could not be deleted makes it an {ok: false, error} object (exit status 2) "
                "after deleting the others.")
    def purge_cmd(as_json: bool) -> None:
        """Delete every cache entry (never another file of the folder); the next commands fit, and select,
        again. Live sessions keep their outcomes: they are in the session files, not here."""
        if fitcache.ENV_VAR in os.environ and not os.environ[fitcache.ENV_VAR].strip():
            # a hostile trial: `HSPR_CACHE_DIR=$X hspr cache purge` with $X unset would empty the user's own cache
            raise HsprError(f"{fitcache.ENV_VAR} is set but empty (an unset shell variable?), so this would purge the "
                            f"default cache {fitcache.cache_dir()}: unset {fitcache.ENV_VAR} to purge that one, or set it "
                            "to the folder you mean")
        folder = fitcache.cache_dir()
        # a trial: a purge interrupted part-way said only 'interrupted', not what it had deleted
        done = fitcache.purge_cache(folder, lambda n, size: note_saved(f"at least {n} file(s), {_size(size)}, deleted "
                                                                      f"from {folder} (a purge again deletes the rest)",
                                                                      None))
        what = f"deleted {done.deleted} file(s), {_size(done.bytes)}, from {folder}"
        # a hostile trial: a killed command's leftover was 'in progress' with no word of when it goes
        busy = (f"; {done.in_progress} write(s) in progress left alone (temporary files of the last "
                f"{fitcache.STALE_TEMP_SECONDS // 60} minutes: another command may be writing them; one a killed "
                "command left is deleted by a purge after that)") if done.in_progress else ""
        if done.failed:  # a trial: the first failure stopped it, and the files already deleted went unsaid
            note_saved("", None)  # the message below says what was deleted
            first, why = done.failed[0]
            raise HsprError(f"{what}{busy}; could not delete {len(done.failed)} file(s), e.g. {first}: {why}. Check "
                            f"that you may change the folder {folder} and its files (permissions; an immutable flag: "
                            "lsattr -d, chattr -i)")
        if as_json:
            click.echo(json.dumps({"ok": True, "folder": str(folder), "deleted": done.deleted, "bytes": done.bytes,
                                   "in_progress": done.in_progress, "warnings": warnings_said()}))
            return
        if not (done.deleted or done.in_progress):
            click.echo(f"nothing to delete in {folder}")
            return
        # a new-user trial: the next `live status` took 26 s without a word of why
        click.echo(f"{what}{busy}" + ("; the next command of each live session (and each hspr_auto replay) fits again"
                                      if done.entries else ""))  # a hostile trial: said when only a leftover went
