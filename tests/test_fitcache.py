"""The on-disk fit cache: a valid entry is reused, anything else is rebuilt (issue 11)."""

from __future__ import annotations

import os
import pickle

import numpy as np
import pytest

from hspr import fitcache
from hspr.methods import get_method

from .conftest import simulate_matrix


@pytest.fixture()
def bank():
    return simulate_matrix(20, 40, seed=3)[0]


@pytest.fixture()
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv(fitcache.ENV_VAR, str(tmp_path / "c"))
    return tmp_path / "c"


def fit_counter(bank, calls):
    def fit():
        calls.append(1)
        return get_method("hspr", n_nodes=256).fit(bank)
    return fit


def run(model, row, budget=8):
    s = model.start(budget, 0)
    while not s.done:
        t = s.ask()
        s.tell(t, int(row[model.tasks.index(t)]))
    return s.queried, s.estimate()


def test_second_fit_comes_from_the_cache_and_gives_the_same_session(bank, cache):
    calls = []
    settings = {"n_nodes": 256}
    a = fitcache.cached_fit(bank.digest(), "hspr", settings, bank.tasks, fit_counter(bank, calls))
    b = fitcache.cached_fit(bank.digest(), "hspr", settings, bank.tasks, fit_counter(bank, calls))
    assert len(calls) == 1 and len(list(cache.glob("*.pkl"))) == 1
    assert run(a, bank.values[0]) == run(b, bank.values[0])


def test_key_depends_on_bank_method_and_settings(bank):
    k = fitcache.cache_key(bank.digest(), "hspr", {"rank": 2})
    assert k == fitcache.cache_key(bank.digest(), "hspr", {"rank": 2})
    assert k != fitcache.cache_key(bank.digest(), "hspr", {"rank": 1})
    assert k != fitcache.cache_key(bank.digest(), "atlas", {"rank": 2})
    assert k != fitcache.cache_key(bank.rows(np.arange(1, bank.n_agents)).digest(), "hspr", {"rank": 2})


def _signed(body: bytes) -> bytes:
    """An entry file as _store writes it: magic, SHA-256 of the pickle, the pickle."""
    import hashlib

    return fitcache._MAGIC + hashlib.sha256(body).digest() + body


@pytest.mark.parametrize("bad", ["garbage", "foreign_key", "other_tasks", "not_a_model", "flipped_byte", "unsigned",
                                 "torn"])
def test_corrupt_or_foreign_entries_are_rebuilt(bank, cache, bad):
    calls = []
    settings = {"n_nodes": 256}
    key = fitcache.cache_key(bank.digest(), "hspr", settings)
    path = cache / f"{key}.pkl"
    cache.mkdir(parents=True)
    good = get_method("hspr", n_nodes=256).fit(bank)
    from hspr.data import ResponseMatrix

    sub = ResponseMatrix(bank.agents, bank.tasks[:30], bank.values[:, :30])
    other = get_method("hspr", n_nodes=256).fit(sub)
    valid = pickle.dumps({"key": key, "model": good})
    flipped = bytearray(_signed(valid))
    flipped[len(flipped) // 2] ^= 0x40  # a hostile trial: one flipped byte still unpickled, and gave NaN estimates
    files = {"garbage": _signed(b"\x80\x04not a pickle"),
             "foreign_key": _signed(pickle.dumps({"key": "0" * 64, "model": good})),
             "other_tasks": _signed(pickle.dumps({"key": key, "model": other})),
             "not_a_model": _signed(pickle.dumps({"key": key, "model": [1, 2]})),
             "flipped_byte": bytes(flipped),
             "unsigned": valid,  # the format before the checksum
             "torn": _signed(valid)[:-100]}
    path.write_bytes(files[bad])
    with pytest.warns(UserWarning, match=r"the fit-cache entry .*\.pkl was damaged \(or not hspr's\); it was deleted"):
        model = fitcache.cached_fit(bank.digest(), "hspr", settings, bank.tasks, fit_counter(bank, calls))
    assert len(calls) == 1
    assert model.tasks == bank.tasks
    data = path.read_bytes()
    assert data.startswith(fitcache._MAGIC) and data == _signed(data[len(fitcache._MAGIC) + 32:])  # rewritten, signed
    assert pickle.loads(data[len(fitcache._MAGIC) + 32:])["key"] == key  # with the fresh fit
    calls2 = []
    again = fitcache.cached_fit(bank.digest(), "hspr", settings, bank.tasks, fit_counter(bank, calls2))
    assert calls2 == [] and again.tasks == bank.tasks  # and the rewritten entry is trusted


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_unwritable_cache_is_skipped(bank, cache):
    cache.mkdir(parents=True)
    cache.chmod(0o500)
    try:
        calls = []
        for _ in range(2):
            with pytest.warns(UserWarning, match="cannot write the fit cache .*the next command will fit again"):
                fitcache.cached_fit(bank.digest(), "hspr", {}, bank.tasks, fit_counter(bank, calls))
        assert len(calls) == 2
    finally:
        cache.chmod(0o700)


def test_cache_under_a_file_is_skipped(bank, tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    monkeypatch.setenv(fitcache.ENV_VAR, str(blocker / "c"))
    calls = []
    # a hostile trial: every command refitted without a word (while saying 'then cached')
    # a hostile trial: the reason was the errno's ('Not a directory', 'File exists'), and the fix to free space
    for where in (blocker / "c", blocker):
        monkeypatch.setenv(fitcache.ENV_VAR, str(where))
        with pytest.warns(UserWarning, match=rf"cannot write the fit cache in {where} \({blocker} is a file, not a "
                                             r"folder\); the next command will fit again: set HSPR_CACHE_DIR to a "
                                             "folder, or move that file"):
            fitcache.cached_fit(bank.digest(), "hspr", {}, bank.tasks, fit_counter(bank, calls))
    assert len(calls) == 2


def test_a_cache_under_a_folder_that_cannot_be_entered_is_skipped(bank, tmp_path, monkeypatch):
    """A hostile trial: with HSPR_CACHE_DIR under a folder the user cannot enter (or a name too long), the store's
    own diagnosis (Path.exists of each parent) raised PermissionError, and a replay failed at its first checkpoint,
    losing its finished runs. The store is skipped with a warning giving the error, as for any unwritable cache."""
    import errno
    from pathlib import Path

    where = tmp_path / "locked" / "cache"
    monkeypatch.setenv(fitcache.ENV_VAR, str(where))
    real_exists = Path.exists

    def denied(self, *args, **kwargs):
        if str(self).startswith(str(tmp_path / "locked")):
            raise PermissionError(errno.EACCES, "Permission denied", str(self))
        return real_exists(self, *args, **kwargs)

    monkeypatch.setattr(Path, "exists", denied)
    monkeypatch.setattr(Path, "mkdir", lambda self, *a, **k: denied(self))
    calls = []
    with pytest.warns(UserWarning, match=rf"cannot write the fit cache in {where} \(Permission denied\); the next "
                                         "command will fit again"):
        fitcache.cached_fit(bank.digest(), "hspr", {}, bank.tasks, fit_counter(bank, calls))
    assert len(calls) == 1
    with pytest.warns(UserWarning, match="cannot write the fit cache"):
        assert fitcache.keep_result("", "x", {}, 1, "compute it again") is False


def test_use_cache_false_always_fits(bank, cache):
    calls = []
    for _ in range(2):
        fitcache.cached_fit(bank.digest(), "hspr", {}, bank.tasks, fit_counter(bank, calls), use_cache=False)
    assert len(calls) == 2 and not cache.exists()


def test_entries_unused_for_a_month_are_pruned(bank, cache):
    old = cache / ("0" * 64 + ".pkl")
    cache.mkdir(parents=True)
    old.write_bytes(b"stale")
    recent = cache / ("1" * 64 + ".pkl")
    recent.write_bytes(b"recent")
    mine = cache / "my_trained_model.pkl"  # a hostile trial: HSPR_CACHE_DIR set to a folder of the user's own
    mine.write_bytes(b"a user's pickle")
    month = fitcache.MAX_AGE_DAYS * 86400
    for p in (old, mine):
        os.utime(p, (os.stat(p).st_atime - month - 10, os.stat(p).st_mtime - month - 10))
    fitcache.cached_fit(bank.digest(), "hspr", {}, bank.tasks, fit_counter(bank, []))
    assert not old.exists() and recent.exists() and len(list(cache.glob("[0-9a-f]*.pkl"))) == 2
    assert mine.read_bytes() == b"a user's pickle"


def test_key_depends_on_the_numerical_libraries(bank, monkeypatch):
    """A hostile trial: a selection's best two settings differed by 1e-6 pp, so a numpy or scipy
    upgrade may change a fit; a warm cache must not keep the fit the old libraries made."""
    k = fitcache.cache_key(bank.digest(), "hspr", {})
    versions = fitcache.library_versions()
    assert set(versions) == {"numpy", "scipy", "scikit-learn"} and versions["numpy"] == np.__version__
    monkeypatch.setattr(fitcache, "library_versions", lambda: {**versions, "scipy": "0.0.1"})
    assert fitcache.cache_key(bank.digest(), "hspr", {}) != k


def test_a_damaged_entry_that_cannot_be_deleted_is_said_so(bank, cache, monkeypatch):
    """A hostile trial: in a locked folder the warning said 'it was deleted' on every run, the file still there."""
    settings = {"n_nodes": 256}
    path = cache / f"{fitcache.cache_key(bank.digest(), 'hspr', settings)}.pkl"
    cache.mkdir(parents=True)
    path.write_bytes(b"damaged")

    def refuse(self, *a, **k):
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(type(path), "unlink", refuse)
    monkeypatch.setattr(fitcache, "_store", lambda *a, **k: None)  # the locked folder takes no new entry either
    calls = []
    with pytest.warns(UserWarning, match=r"damaged \(or not hspr's\); it could not be deleted \(Operation not permitted; "
                                         r"delete it by hand\) and the model is fitted again"):
        fitcache.cached_fit(bank.digest(), "hspr", settings, bank.tasks, fit_counter(bank, calls))
    assert calls == [1] and path.read_bytes() == b"damaged"


def test_an_interrupted_store_leaves_no_temporary_file(tmp_path, monkeypatch):
    """A signals trial: Ctrl-C while a fit was written left its temporary file, which `cache purge` then left alone
    for an hour as a write in progress; the interrupt itself goes on."""
    monkeypatch.setenv(fitcache.ENV_VAR, str(tmp_path / "fits"))
    bank = simulate_matrix(12, 30, seed=2)[0]

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(fitcache.os, "replace", interrupted)  # the entry written, not yet moved in
    with pytest.raises(KeyboardInterrupt):
        fitcache.cached_fit(bank.digest(), "uniform", {}, bank.tasks, lambda: get_method("uniform").fit(bank))
    assert list((tmp_path / "fits").iterdir()) == []


def test_held_signals_are_handled_once_the_held_run_is_done(default_signals):
    """A signals trial: an interrupt between two moves of a report left it half old, half new."""
    import signal

    from hspr.fileio import signals_held

    done = []
    with pytest.raises(KeyboardInterrupt):
        with signals_held():
            signal.raise_signal(signal.SIGINT)
            done.append("first")
            done.append("second")  # not stopped half-way
    assert done == ["first", "second"]
    with pytest.raises(KeyboardInterrupt):  # and nothing is left held: the next one is handled at once
        signal.raise_signal(signal.SIGINT)
        done.append("never")
    assert done == ["first", "second"]
    # a signal the process ignores (nohup's SIGHUP) stays ignored, inside and after
    before = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        with signals_held():
            signal.raise_signal(signal.SIGHUP)
            done.append("third")
        assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN and done[-1] == "third"
    finally:
        signal.signal(signal.SIGHUP, before)
    # held by swapping the handler, not by blocking the main thread's signals (a re-trial: a signal the process
    # got was delivered to another of its threads, and not held): here one another thread sends
    import threading

    seen = []
    with pytest.raises(KeyboardInterrupt):
        with signals_held():
            t = threading.Thread(target=lambda: signal.pthread_kill(threading.main_thread().ident, signal.SIGINT))
            t.start()
            t.join()
            seen.append(signal.getsignal(signal.SIGINT) is not signal.default_int_handler)
    assert seen == [True]


def test_a_model_that_cannot_be_pickled_is_named_not_the_folder(tmp_path):
    """A method-writer's trial: a fitted model holding a lock was reported as 'cannot write the fit cache in
    <folder>' with the advice to set HSPR_CACHE_DIR to a writable folder; the folder was fine."""
    import threading

    class Holding:
        def __init__(self):
            self.lock = threading.Lock()

    path = tmp_path / ("a" * 64 + ".pkl")
    with pytest.warns(UserWarning, match=r"the fitted model of .*Holding cannot be pickled \((TypeError|AttributeError): .*\), so it is "
                                         r"not kept in the fit cache: every command fits it again"):
        fitcache._store(path, "a" * 64, Holding())
    assert list(tmp_path.iterdir()) == []  # no entry, no temporary file
