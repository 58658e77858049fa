"""``hspr cache``: where the fit cache is, what it holds, and emptying it (as ``pip cache``).

The cache (:mod:`hspr.fitcache`) keeps source fits for ``hspr live`` and ``hspr_auto``'s
source-only selections; nothing in it is a user's data, and a command whose entry is gone fits
(or selects) again. A trial of the selection cache: a user who wanted a fresh selection, or its
time, had to find the folder and delete files by hand.
"""

from __future__ import annotations

import json
import time

import click

from .. import fitcache
from .meta import say_warning


def _size(n: int) -> str:
    """Bytes as B / KB / MB / GB (powers of 1000, as ``du --si``)."""
    for unit in ("B", "KB", "MB"):
        if n < 1000:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} GB"


def _ago(t: float | None) -> str:
    if t is None:
        return "-"
    days = (time.time() - t) / 86400
    return f"{days:.1f} days ago" if days >= 1 else f"{days * 24:.1f} hours ago"


def register(group: click.Group) -> None:
    @group.group("cache")
    def cache_group() -> None:
        """The fit cache: source fits of `hspr live` and hspr_auto's selections, so a command does not
        refit (or select) the same sources again.

        \b
          hspr cache dir           # the folder ($HSPR_CACHE_DIR when set)
          hspr cache info --json   # entries, size, last use
          hspr cache purge         # delete every entry: the next commands fit again

        Entries are keyed by the bank's digest, the method and its settings, the hspr code and the
        numpy, scipy and scikit-learn versions, and checked by SHA-256 before use; those unused for
        30 days are deleted whenever a new one is stored. Only files named as hspr names its entries
        are listed or deleted.
        """

    @cache_group.command("dir")
    def dir_cmd() -> None:
        """Print the cache folder (it may not exist yet)."""
        click.echo(str(fitcache.cache_dir()))

    @cache_group.command("info")
    @click.option("--json", "as_json", is_flag=True,
                  help="Print one JSON object: folder, entries, unfinished (temporary files of writes that never "
                       "finished), bytes, oldest_use and newest_use (seconds since the epoch, or null), max_age_days.")
    def info_cmd(as_json: bool) -> None:
        """The cache folder, its entries, their total size and when they were last used."""
        info = fitcache.cache_summary()
        folder = fitcache.cache_dir()
        if folder.exists() and not folder.is_dir():  # a hostile trial of the live cache set HSPR_CACHE_DIR to a file
            say_warning(f"{folder} is not a folder, so nothing can be cached there: set {fitcache.ENV_VAR} to a folder")
        if as_json:
            click.echo(json.dumps(info))
            return
        click.echo(f"folder: {info['folder']}")
        unfinished = f" (and {info['unfinished']} unfinished write(s))" if info["unfinished"] else ""
        click.echo(f"entries: {info['entries']}{unfinished}, {_size(info['bytes'])}")
        if info["entries"] or info["unfinished"]:
            click.echo(f"last used: newest {_ago(info['newest_use'])}, oldest {_ago(info['oldest_use'])}; entries "
                       f"unused for {info['max_age_days']} days are deleted when a new one is stored")

    @cache_group.command("purge")
    @click.option("--json", "as_json", is_flag=True,
                  help="Print one JSON object: folder, deleted (files), bytes (freed).")
    def purge_cmd(as_json: bool) -> None:
        """Delete every cache entry (never another file of the folder); the next commands fit, and select,
        again. Live sessions keep their outcomes: they are in the session files, not here."""
        folder = fitcache.cache_dir()
        n, freed = fitcache.purge_cache(folder)
        if as_json:
            click.echo(json.dumps({"folder": str(folder), "deleted": n, "bytes": freed}))
            return
        click.echo(f"deleted {n} file(s), {_size(freed)}, from {folder}" if n else f"nothing to delete in {folder}")
