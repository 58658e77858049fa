"""`hspr cache dir / info / purge`: the fit cache's folder, contents and emptying; only hspr's files."""

from __future__ import annotations

import json

from click.testing import CliRunner

from hspr import fitcache
from hspr.cli import main
from hspr.methods import get_method

from .conftest import simulate_matrix


def _cli(*args):
    return CliRunner().invoke(main, ["cache", *args])


def test_cache_commands_list_and_delete_only_hspr_s_entries(tmp_path, monkeypatch):
    folder = tmp_path / "fits"
    monkeypatch.setenv(fitcache.ENV_VAR, str(folder))
    assert _cli("dir").output.strip() == str(folder)
    empty = json.loads(_cli("info", "--json").output)
    assert (empty["folder"], empty["entries"], empty["bytes"], empty["newest_use"]) == (str(folder), 0, 0, None)
    bank = simulate_matrix(12, 30, seed=2)[0]
    fitcache.cached_fit(bank.digest(), "uniform", {}, bank.tasks, lambda: get_method("uniform").fit(bank))
    fitcache.cached_fit(bank.digest(), "atlas", {}, bank.tasks, lambda: get_method("atlas").fit(bank))
    entries = sorted(folder.glob("*.pkl"))
    torn = folder / f".{entries[0].name}.x1y2.tmp"  # a write a killed process left
    torn.write_bytes(b"123")
    mine = folder / "notes.pkl"  # a user's own file in the folder is not hspr's
    mine.write_bytes(b"keep")
    info = json.loads(_cli("info", "--json").output)
    size = sum(p.stat().st_size for p in entries) + 3
    assert (info["entries"], info["unfinished"], info["bytes"]) == (2, 1, size)
    assert info["max_age_days"] == fitcache.MAX_AGE_DAYS and info["oldest_use"] <= info["newest_use"]
    text = _cli("info").output
    assert f"entries: 2 (and 1 unfinished write(s)), {size / 1000:.1f} KB" in text
    assert f"unused for {fitcache.MAX_AGE_DAYS} days" in text and f"{fitcache.MAX_AGE_DAYS} days" in _cli("--help").output
    res = _cli("purge", "--json")
    assert res.exit_code == 0 and json.loads(res.output) == {"folder": str(folder), "deleted": 3, "bytes": size}
    assert [p.name for p in folder.iterdir()] == ["notes.pkl"] and mine.read_bytes() == b"keep"
    assert _cli("purge").output.strip() == f"nothing to delete in {folder}"
    # the next fit is made again, and cached again
    calls = []
    fitcache.cached_fit(bank.digest(), "uniform", {}, bank.tasks, lambda: calls.append(1) or get_method("uniform").fit(bank))
    assert calls == [1] and json.loads(_cli("info", "--json").output)["entries"] == 1


def test_cache_info_says_when_the_folder_is_a_file(tmp_path, monkeypatch):
    f = tmp_path / "file"
    f.write_text("x")
    monkeypatch.setenv(fitcache.ENV_VAR, str(f))
    res = _cli("info")
    assert res.exit_code == 0 and "entries: 0, 0 B" in res.output
    assert f"warning: {f} is not a folder, so nothing can be cached there: set HSPR_CACHE_DIR to a folder" in res.stderr
