"""`hspr cache dir / info / purge`: the fit cache's folder, contents and emptying; only hspr's files."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from click.testing import CliRunner

from hspr import fitcache
from hspr.cli import main
from hspr.cli.cache import _ago, _size
from hspr.methods import get_method

from .conftest import simulate_matrix


def _cli(*args):
    return CliRunner().invoke(main, ["cache", *args])


def _fill(folder: Path) -> list[Path]:
    bank = simulate_matrix(12, 30, seed=2)[0]
    fitcache.cached_fit(bank.digest(), "uniform", {}, bank.tasks, lambda: get_method("uniform").fit(bank))
    fitcache.cached_fit(bank.digest(), "atlas", {}, bank.tasks, lambda: get_method("atlas").fit(bank))
    return sorted(folder.glob("*.pkl"))


def test_cache_commands_list_and_delete_only_hspr_s_entries(tmp_path, monkeypatch):
    folder = tmp_path / "fits"
    monkeypatch.setenv(fitcache.ENV_VAR, str(folder))
    assert _cli("dir").output.strip() == str(folder)
    empty = json.loads(_cli("info", "--json").output)
    assert (empty["ok"], empty["folder"], empty["entries"], empty["bytes"], empty["newest_use"]) == (True, str(folder), 0, 0, None)
    entries = _fill(folder)
    stale = folder / f".{entries[0].name}.x1y2z3w4.tmp"  # a write a killed process left, two hours ago
    stale.write_bytes(b"123")
    os.utime(stale, (time.time() - 7200, time.time() - 7200))
    busy = folder / f".{entries[1].name}.a1b2c3d4.tmp"  # another command's write in progress
    busy.write_bytes(b"12345")
    mine = folder / "notes.pkl"  # a user's own files in the folder are not hspr's, nor a link named as an entry
    mine.write_bytes(b"keep")
    draft = folder / f".{entries[0].name}.mydraft.tmp"
    draft.write_bytes(b"keep too")
    outside = tmp_path / "thesis.pkl"
    outside.write_bytes(b"data")
    (folder / ("ab" * 32 + ".pkl")).symlink_to(outside)
    info = json.loads(_cli("info", "--json").output)
    size = sum(p.stat().st_size for p in entries) + 3 + 5
    assert (info["entries"], info["unfinished"], info["bytes"]) == (2, 2, size)
    assert info["max_age_days"] == fitcache.MAX_AGE_DAYS and info["oldest_use"] <= info["newest_use"]
    text = _cli("info").output
    assert f"entries: 2 (and 2 unfinished write(s)), {_size(size)}" in text
    assert f"unused for {fitcache.MAX_AGE_DAYS} days" in text and f"{fitcache.MAX_AGE_DAYS} days" in _cli("--help").output
    res = _cli("purge", "--json")
    assert res.exit_code == 0 and json.loads(res.output) == {"ok": True, "folder": str(folder), "deleted": 3,
                                                             "bytes": size - 5, "in_progress": 1, "warnings": []}
    left = sorted(p.name for p in folder.iterdir())
    assert left == sorted([busy.name, mine.name, draft.name, "ab" * 32 + ".pkl"]) and outside.read_bytes() == b"data"
    # a hostile trial: a killed write's leftover was 'in progress' with no word of when it goes
    busy_note = ("1 write(s) in progress left alone (temporary files of the last 60 minutes: another command may be "
                 "writing them; one a killed command left is deleted by a purge after that)")
    assert " ".join(_cli("purge").output.split()) == f"deleted 0 file(s), 0 B, from {folder}; {busy_note}"
    (folder / ("cd" * 32 + ".pkl")).write_bytes(b"x")
    assert " ".join(_cli("purge").output.split()) == (f"deleted 1 file(s), 1 B, from {folder}; {busy_note}; the next "
                                                      "command of each live session (and each hspr_auto replay) fits again")
    # only a stale leftover deleted: no fit is lost, so nothing is said of fitting again
    stale2 = folder / f".{'cd' * 32}.pkl.a1b2c3d4.tmp"
    stale2.write_bytes(b"12")
    os.utime(stale2, (time.time() - 7200, time.time() - 7200))
    done = fitcache.purge_cache(folder)
    assert (done.deleted, done.entries) == (1, 0)
    stale2.write_bytes(b"12")
    os.utime(stale2, (time.time() - 7200, time.time() - 7200))
    assert "fits again" not in _cli("purge").output
    busy.unlink()
    assert _cli("purge").output.strip() == f"nothing to delete in {folder}"
    # the next fit is made again, and cached again
    calls = []
    bank = simulate_matrix(12, 30, seed=2)[0]
    fitcache.cached_fit(bank.digest(), "uniform", {}, bank.tasks, lambda: calls.append(1) or get_method("uniform").fit(bank))
    assert calls == [1] and json.loads(_cli("info", "--json").output)["entries"] == 1


def test_purge_goes_on_past_a_file_it_cannot_delete_and_says_what_it_did(tmp_path, monkeypatch):
    """A trial: the first undeletable file stopped the purge, and the files already deleted went unsaid."""
    folder = tmp_path / "fits"
    monkeypatch.setenv(fitcache.ENV_VAR, str(folder))
    entries = _fill(folder)
    real = Path.unlink

    def unlink(self, *a, **k):
        if self == entries[0]:
            raise PermissionError(1, "Operation not permitted")
        return real(self, *a, **k)

    monkeypatch.setattr(Path, "unlink", unlink)
    res = _cli("purge")
    assert res.exit_code == 2 and not entries[1].exists() and entries[0].exists()
    assert "error: deleted 1 file(s)" in res.stderr and f"could not delete 1 file(s), e.g. {entries[0]}: Operation not " \
        "permitted" in res.stderr and "lsattr -d, chattr -i" in res.stderr
    res = _cli("purge", "--json")
    out = json.loads(res.stdout)
    assert res.exit_code == 2 and out["ok"] is False and "deleted 0 file(s)" in out["error"]
    assert "the change itself was saved" not in out["error"]  # said once, in the message itself


def test_an_interrupted_purge_says_what_it_had_deleted(tmp_path, monkeypatch):
    """A signals trial: a purge interrupted part-way said only 'interrupted'."""
    folder = tmp_path / "fits"
    monkeypatch.setenv(fitcache.ENV_VAR, str(folder))
    entries = _fill(folder)
    real = Path.unlink
    calls = []

    def unlink(self, *a, **k):
        if calls:  # the second deletion is interrupted
            raise KeyboardInterrupt
        calls.append(self)
        return real(self, *a, **k)

    monkeypatch.setattr(Path, "unlink", unlink)
    res = _cli("purge")
    assert res.exit_code == 130 and len(calls) == 1 and sum(p.exists() for p in entries) == len(entries) - 1
    assert "interrupted after the change was saved: at least 1 file(s), " in res.stderr
    assert f"deleted from {folder} (a purge again deletes the rest)" in " ".join(res.stderr.split())


def test_cache_folder_forms(tmp_path, monkeypatch):
    f = tmp_path / "file"
    f.write_text("x")
    monkeypatch.setenv(fitcache.ENV_VAR, str(f))
    res = _cli("info", "--json")
    warning = f"{f} is not a folder, so nothing can be cached there: set HSPR_CACHE_DIR to a folder"
    assert res.exit_code == 0 and json.loads(res.stdout)["warnings"] == [warning] and f"warning: {warning}" in res.stderr
    assert "warning: " in _cli("purge").stderr
    # a relative folder is one folder, whatever the working folder (a trial: each had its own cache)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(fitcache.ENV_VAR, "rel")
    assert fitcache.cache_dir() == tmp_path / "rel" and _cli("dir").output.strip() == str(tmp_path / "rel")
    monkeypatch.setenv(fitcache.ENV_VAR, "~/hspr-fits")
    assert fitcache.cache_dir() == Path.home() / "hspr-fits"


def test_no_home_folder_or_a_dangling_link_is_said_and_a_fit_goes_on_without_the_cache(tmp_path, monkeypatch):
    """A trial: a user id without a passwd entry and no HOME (docker --user) got platformdirs' RuntimeError as a
    traceback from `live start` and `hspr cache`; `~nosuchuser` in HSPR_CACHE_DIR got pathlib's; a cache folder
    that is a dangling symbolic link was told 'File exists' and to free space, and `cache info` said nothing."""
    import warnings

    import platformdirs

    def no_home(*args, **kwargs):
        raise RuntimeError("could not determine the home directory")

    monkeypatch.delenv(fitcache.ENV_VAR, raising=False)
    monkeypatch.setattr(platformdirs, "user_cache_dir", no_home)
    res = _cli("dir")
    assert res.exit_code == 2 and "error: cannot tell where the fit cache goes: no home folder" in res.output
    assert "set HSPR_CACHE_DIR to a writable folder" in res.output
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        assert fitcache.cached_fit("d" * 64, "uniform", {}, ("t",), lambda: "fitted") == "fitted"
    assert any("no home folder" in str(w.message) and "each command will fit again" in str(w.message) for w in said)
    monkeypatch.setenv(fitcache.ENV_VAR, "~no-such-user-hspr/x")
    assert "its '~' names no home folder (no such user" in _cli("info").output
    (tmp_path / "link").symlink_to(tmp_path / "gone")
    monkeypatch.setenv(fitcache.ENV_VAR, str(tmp_path / "link"))
    assert "link is a symbolic link to " in _cli("info").stderr
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        assert fitcache.cached_fit("d" * 64, "uniform", {}, ("t",), lambda: "fitted") == "fitted"
    assert any("which does not exist (a disk not mounted?)); the next command will fit again: make that folder" in str(w.message)
               for w in said) and not (tmp_path / "gone").exists()


def test_sizes_and_ages_read_as_a_person_would():
    assert [_size(n) for n in (0, 999, 1000, 999_949, 999_999, 5 * 10**12)] == \
        ["0 B", "999 B", "1.0 KB", "999.9 KB", "1.0 MB", "5.0 TB"]
    assert _ago(time.time() + 3600) == "0.0 hours ago" and _ago(time.time() - 3 * 86400) == "3.0 days ago"
    assert _ago(None) == "-"
    assert _ago(time.time() + 5 * 365 * 86400).startswith("in the future (the clock was set back")  # a trial: 2031


def test_a_blank_cache_variable_is_unset_and_purge_refuses_it(tmp_path, monkeypatch):
    """A hostile trial: `HSPR_CACHE_DIR=$X hspr cache purge` with $X unset would empty the user's own cache without a
    word, and HSPR_CACHE_DIR=' ' made a cache folder named ' ' in the working folder."""
    home = tmp_path / "home-cache"
    monkeypatch.setattr(fitcache, "cache_dir", lambda real=fitcache.cache_dir: real() if os.environ[fitcache.ENV_VAR].strip()
                        else home)
    for blank in ("", " "):
        monkeypatch.setenv(fitcache.ENV_VAR, blank)
        home.mkdir(exist_ok=True)
        (home / "keep.pkl").write_bytes(b"x")
        res = _cli("purge")
        assert res.exit_code == 2 and f"HSPR_CACHE_DIR is set but empty (an unset shell variable?), so this would purge the " \
            f"default cache {home}" in " ".join(res.output.split())
        assert (home / "keep.pkl").exists()
        res = _cli("info")  # shown, with a word of why it is the default folder (a trial: without one)
        assert res.exit_code == 0 and f"folder: {home}" in res.output
        assert f"HSPR_CACHE_DIR is set but empty (an unset shell variable?): this is the default cache {home}" in \
            " ".join(res.output.split())
    monkeypatch.undo()
    monkeypatch.setenv(fitcache.ENV_VAR, " ")
    assert fitcache.cache_dir() != Path(" ").absolute()  # blank is unset: the platform's cache folder


def test_cache_list_is_a_hidden_alias_of_info(tmp_path, monkeypatch):
    """A hostile trial: `hspr cache list` (as `pip cache list`) was 'No such command'."""
    monkeypatch.setenv(fitcache.ENV_VAR, str(tmp_path / "fits"))
    _fill(tmp_path / "fits")
    assert _cli("list", "--json").output == _cli("info", "--json").output
    assert json.loads(_cli("list", "--json").output)["entries"] == 2
    assert " list " not in _cli("--help").output  # not a second command in the help


def test_a_warning_stays_a_warning_line_under_pythonwarnings_error(tmp_path, monkeypatch):
    """A trial: under PYTHONWARNINGS=error the fit cache's warning (HSPR_CACHE_DIR a file) ended `live start` in a
    traceback after the fit, and no session was written."""
    import warnings

    from hspr.data.build import write_wide_csv

    write_wide_csv(simulate_matrix(12, 30, seed=2)[0], tmp_path / "b.csv")
    (tmp_path / "file").write_text("x")
    monkeypatch.setenv(fitcache.ENV_VAR, str(tmp_path / "file"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = CliRunner().invoke(main, ["live", "start", "--matrix", str(tmp_path / "b.csv"), "--budget", "3", "--method",
                                        "uniform", "--session", str(tmp_path / "s.hspr")])
    assert res.exit_code == 0 and "warning: cannot write the fit cache" in res.output, res.output
    assert (tmp_path / "s.hspr").is_file()


def test_cache_info_counts_a_stopped_runs_checkpoint_and_purge_deletes_it(tmp_path, monkeypatch):
    """A hostile trial: a stopped calibration's finished runs looked like any fit in `hspr cache info`."""
    monkeypatch.setenv(fitcache.ENV_VAR, str(tmp_path))
    _fill(tmp_path)
    part = fitcache.Checkpoint("bank", "hspr_robust calibration runs", {})
    part.add(0, 1.0)
    assert part.save() and len(list(tmp_path.glob("*.part.pkl"))) == 1
    info = json.loads(_cli("info", "--json").output)
    assert (info["entries"], info["stopped"]) == (3, 1)
    assert "of them 1 the finished runs of a stopped calibration, selection or replay" in _cli("info").output
    assert json.loads(_cli("purge", "--json").output)["deleted"] == 3 and list(tmp_path.iterdir()) == []
