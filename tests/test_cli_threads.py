"""The CLI runs every command with one BLAS thread and restores the caller's setting; python -m hspr."""

from __future__ import annotations

import os

import numpy as np
from click.testing import CliRunner
from threadpoolctl import threadpool_info

from hspr.cli import LazyGroup


def _blas_threads() -> list[int]:
    return [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]


def test_commands_run_with_one_blas_thread_and_the_setting_is_restored():
    seen: list[list[int]] = []
    group = LazyGroup("hspr")

    @group.command("probe")
    def probe():
        seen.append(_blas_threads())

    before = _blas_threads()
    res = CliRunner().invoke(group, ["probe"])
    assert res.exit_code == 0, res.output
    assert seen and seen[0] and all(n == 1 for n in seen[0])
    assert _blas_threads() == before


def test_python_dash_m_hspr_is_the_same_command_line():
    """``python -m hspr`` (a new-user trial found no __main__) prints hspr's usage and version."""
    import subprocess
    import sys

    import hspr

    out = subprocess.run([sys.executable, "-m", "hspr", "--version"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == f"hspr, version {hspr.__version__}", out.stderr
    out = subprocess.run([sys.executable, "-m", "hspr", "--help"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.startswith("Usage: hspr ")


def _fresh_python(code: str) -> str:
    """Run ``code`` in a new interpreter (no numpy or scipy loaded yet) and return its stdout."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_a_library_loaded_inside_a_command_also_runs_one_blas_thread():
    """The CLI loads scipy when a command needs it, after the command's limit was set: scipy's own OpenBLAS
    (L-BFGS-B's) ran with two threads inside every `hspr live start` fit on a 2-core machine."""
    out = _fresh_python(
        "import os, sys\n"
        "from click.testing import CliRunner\n"
        "from hspr.cli import LazyGroup\n"
        "assert 'scipy' not in sys.modules\n"
        "group = LazyGroup('hspr')\n"
        "@group.command('probe')\n"
        "def probe():\n"
        "    import scipy.linalg\n"
        "    from threadpoolctl import threadpool_info\n"
        "    print(sorted({p['num_threads'] for p in threadpool_info() if p['user_api'] == 'blas'}))\n"
        "res = CliRunner().invoke(group, ['probe'])\n"
        "print(res.output.strip(), os.environ.get('OPENBLAS_NUM_THREADS'))\n")
    assert out.split() == ["[1]", "None"]  # one thread in every BLAS; the variable set for the command only


def test_single_thread_blas_limits_scipys_blas_when_entered_before_scipy_loads():
    """A library user's first fit entered the limit before scipy was loaded: the controller, built once,
    then never saw scipy's OpenBLAS (an hspr_robust fit on half of Lite: 48 s, 6 s once it did)."""
    out = _fresh_python(
        "import sys\n"
        "from hspr.parallel import single_thread_blas\n"
        "assert 'scipy' not in sys.modules\n"
        "with single_thread_blas():\n"
        "    import scipy.linalg\n"
        "    from threadpoolctl import threadpool_info\n"
        "    print(sorted({p['num_threads'] for p in threadpool_info() if p['user_api'] == 'blas'}))\n")
    assert out.split() == ["[1]"]


_MASK_PROBE = """
import os, signal, sys, time
from joblib import Parallel, delayed
from hspr.parallel import workers

def mask():
    time.sleep(0.2)  # both workers take a job
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    return os.getpid(), signal.SIGINT in blocked and signal.SIGHUP in blocked

def hup_blocked(pid):  # SIGHUP (signal 1) in the process's blocked set, from /proc (True where there is none)
    if not os.path.exists(f"/proc/{pid}/status"):
        return True
    with open(f"/proc/{pid}/status") as fh:
        return bool(int(next(x for x in fh if x.startswith("SigBlk:")).split()[1], 16) & 1)

def hung_up(signum, frame):
    raise KeyboardInterrupt

def reaches(sig):  # the command itself gets the signal at once
    try:
        os.kill(os.getpid(), sig)
        time.sleep(5)
        return False
    except KeyboardInterrupt:
        return True

signal.signal(signal.SIGHUP, hung_up)
with workers(None, 2):
    seen = dict(Parallel()(delayed(mask)() for _ in range(4)))
    from multiprocessing import resource_tracker
    from joblib.externals.loky.backend import resource_tracker as loky_tracker
    trackers = [t._pid for t in (resource_tracker._resource_tracker, loky_tracker._resource_tracker)]
    got = [reaches(signal.SIGINT), reaches(signal.SIGHUP)]
restored = not {signal.SIGINT, signal.SIGHUP} & signal.pthread_sigmask(signal.SIG_BLOCK, [])
print(len(seen), all(seen.values()), all(hup_blocked(p) for p in trackers if p), *got, restored)
"""


def test_worker_processes_ignore_ctrl_c_and_a_hang_up_and_the_command_still_gets_them(default_signals):
    """hspr.parallel.workers: a Ctrl-C reaches the whole process group, and a worker still importing
    printed its own traceback below the command's 'interrupted' (a trial of ``hspr replay --workers 2``).
    Workers start with SIGINT blocked, even past multiprocessing's resource tracker (which unblocks it
    in Python 3.11); the command itself is interrupted at once, and its mask is restored on exit.
    A hang-up (`timeout -s HUP 4 hspr replay --workers 2`; a closed terminal sends SIGHUP to every process of
    the group) printed "resource_tracker: process died unexpectedly" and about ten loky tracebacks: the resource
    trackers ignore SIGINT and SIGTERM but not SIGHUP. Workers and both trackers start with SIGHUP blocked too."""
    import signal
    import subprocess
    import sys

    if not hasattr(signal, "pthread_sigmask"):
        return
    out = subprocess.run([sys.executable, "-c", _MASK_PROBE], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["2", "True", "True", "True", "True", "True"]


_ORPHAN_PROBE = """
import os, signal, time
from joblib import Parallel, delayed
from hspr.parallel import workers

def pid():
    time.sleep(0.3)  # both workers take a job
    return os.getpid()

with workers(None, 2):
    print(*sorted(set(Parallel()(delayed(pid)() for _ in range(4)))), flush=True)
    os.kill(os.getpid(), signal.SIGKILL)  # as `kill -9` of a replay
"""


def test_workers_restores_joblib_s_settings_on_exit():
    """A full test run: `workers(None, 2)` once left joblib on two loky workers for the rest of the process (a second
    parallel_config made inside it, never exited), so a later calibration ran its jobs in other processes."""
    from joblib import effective_n_jobs, parallel_config
    from joblib.parallel import get_active_backend

    from hspr.parallel import workers

    before = (type(get_active_backend()[0]), effective_n_jobs(None))
    for backend in (None, "loky", "threading"):
        with workers(backend, 2):
            assert effective_n_jobs(None) == 2
        assert (type(get_active_backend()[0]), effective_n_jobs(None)) == before
    with parallel_config("threading", n_jobs=3):  # a caller's own choice stands inside, and after
        with workers(None, 2):
            assert type(get_active_backend()[0]).__name__ == "ThreadingBackend"
        assert effective_n_jobs(None) == 3


def test_worker_processes_end_when_the_command_is_killed():
    """A trial: after ``kill -9`` of ``hspr replay --workers 2`` the loky workers ran on (loky watches its parent on
    Windows only), one for joblib's 300 s idle timeout, one for good (blocked reading a job half written to its pipe).
    hspr.parallel.exit_with_parent ends each within about a second of its parent's death."""
    import subprocess
    import sys
    import time

    # timeout: a worker left running holds the probe's stdout open, so run() waits for it
    out = subprocess.run([sys.executable, "-c", _ORPHAN_PROBE], capture_output=True, text=True, timeout=60)
    pids = [int(p) for p in out.stdout.split()]
    assert out.returncode == -9 and len(pids) == 2, (out.returncode, out.stdout, out.stderr)

    def alive(p: int) -> bool:  # a zombie (State Z) has ended: only its reaping is left, to whoever adopted it
        try:
            with open(f"/proc/{p}/status") as fh:
                return next(x for x in fh if x.startswith("State:")).split()[1] != "Z"
        except (FileNotFoundError, ProcessLookupError):
            return False

    deadline = time.monotonic() + 15
    while any(map(alive, pids)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(map(alive, pids)), [p for p in pids if alive(p)]


def test_a_command_started_without_stdout_does_its_work(tmp_path):
    """A hostile trial: with stdout closed (`hspr replay ... >&-`; Python's sys.stdout is None) replay ended in a
    traceback, and with worker processes (joblib flushes stdout as they start) its results were never written.
    Every standard descriptor closed (its re-trial: with stdin closed too, the workers still lacked stderr): the
    replay with two workers writes its results and exits 0."""
    import os
    import subprocess
    import sys

    bank = tmp_path / "b.csv"
    bank.write_text("agent," + ",".join(f"t{j}" for j in range(12)) + "\n"
                    + "".join(f"a{i}," + ",".join(str(int(j < i + 2)) for j in range(12)) + "\n" for i in range(8)))
    out = tmp_path / "r.json"

    def close_streams():
        for fd in (0, 1, 2):
            os.close(fd)

    done = subprocess.run([sys.executable, "-m", "hspr", "replay", "--matrix", str(bank), "--methods", "uniform",
                           "--seeds", "0", "--workers", "2", "--out", str(out)], preexec_fn=close_streams, timeout=120,
                          env={**os.environ, "HSPR_CACHE_DIR": str(tmp_path / "cache")})
    assert done.returncode == 0 and len(__import__("json").loads(out.read_text())["runs"]) == 8


def test_a_stderr_that_cannot_be_written_does_not_stop_the_command(tmp_path):
    """A re-trial: with stderr into a pipe whose reader had gone (`hspr replay ... 2>&1 | head -c 10`) replay exited 0
    without writing its results (a progress bar's write raised the broken pipe), and with stderr on a full disk
    (`2>/dev/full`) it exited 1 with nothing written. stderr never holds the result: the replay writes it."""
    import json
    import os
    import subprocess
    import sys

    bank = tmp_path / "b.csv"
    bank.write_text("agent," + ",".join(f"t{j}" for j in range(12)) + "\n"
                    + "".join(f"a{i}," + ",".join(str(int(j < i + 2)) for j in range(12)) + "\n" for i in range(8)))
    env = {**os.environ, "HSPR_CACHE_DIR": str(tmp_path / "cache")}
    for name, stderr in (("pipe", subprocess.PIPE), ("full", "/dev/full")):
        out = tmp_path / f"{name}.json"
        args = [sys.executable, "-m", "hspr", "replay", "--matrix", str(bank), "--methods", "uniform", "--seeds", "0",
                "--out", str(out)]
        if name == "pipe":
            p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=stderr, env=env)
            p.stderr.close()  # the reader has gone before the first write
            code = p.wait(timeout=120)
        else:
            with open(stderr, "w") as full:
                code = subprocess.run(args, stdout=subprocess.DEVNULL, stderr=full, env=env, timeout=120).returncode
        assert code == 0 and len(json.loads(out.read_text())["runs"]) == 8, name


def test_a_locale_that_cannot_encode_the_output_does_not_end_in_a_traceback(tmp_path):
    """A trial: under `PYTHONIOENCODING=ascii` (an ASCII locale) the replay table's Kendall τ ended in a
    UnicodeEncodeError, and under `PYTHONIOENCODING=utf-8` so did a file name that is no UTF-8 (its undecodable
    byte). Now τ is written as its escape, and the file name's byte as it was."""
    import os
    import subprocess
    import sys

    rows = "".join(f"a{i}," + ",".join(str(int(j < i + 2)) for j in range(12)) + "\n" for i in range(8))
    bank = tmp_path / "b.csv"
    bank.write_text("agent," + ",".join(f"t{j}" for j in range(12)) + "\n" + rows)
    env = {**os.environ, "HSPR_CACHE_DIR": str(tmp_path / "cache"), "PYTHONIOENCODING": "ascii", "COLUMNS": "200"}
    done = subprocess.run([sys.executable, "-m", "hspr", "replay", "--matrix", str(bank), "--methods", "uniform",
                           "--seeds", "0", "--out", str(tmp_path / "r.json")], capture_output=True, env=env, timeout=120)
    assert done.returncode == 0 and b"Traceback" not in done.stderr, done.stderr[-300:]
    assert b"\\u03c4" in done.stdout and b"uniform" in done.stdout
    # its re-trial: in the C locale without UTF-8 mode stdout is ASCII with surrogateescape, and τ still ended in one
    c_locale = {**env, "PYTHONUTF8": "0", "LANG": "C", "LC_ALL": "C"}
    del c_locale["PYTHONIOENCODING"]
    done = subprocess.run([sys.executable, "-m", "hspr", "replay", "--matrix", str(bank), "--methods", "uniform",
                           "--seeds", "0", "--out", str(tmp_path / "r.json")], capture_output=True, env=c_locale,
                          timeout=120)
    assert done.returncode == 0 and b"\\u03c4" in done.stdout, done.stderr[-300:]
    odd = os.fsencode(tmp_path) + b"/\xffbank.csv"
    with open(odd, "wb") as f:
        f.write(bank.read_bytes())
    env["PYTHONIOENCODING"] = "utf-8"
    done = subprocess.run([sys.executable, "-m", "hspr", "bank", "validate", odd], capture_output=True, env=env, timeout=120)
    assert done.returncode == 0 and done.stdout.startswith(odd + b": OK"), (done.stdout[:200], done.stderr[-300:])
    # its re-trial: on stderr (Python's backslashreplace) the byte was written as the text \udce9
    done = subprocess.run([sys.executable, "-m", "hspr", "bank", "validate", odd + b".absent"], capture_output=True,
                          env=env, timeout=120)
    assert done.returncode == 2 and odd + b".absent" in done.stderr and b"\\udc" not in done.stderr, done.stderr


_WORKER_WARNING_PROBE = """
import warnings
from joblib import Parallel, delayed
from hspr.parallel import WithWarnings, warned_again, workers

def job(k):
    warnings.warn(f"cannot write the fit cache ({k})", UserWarning)
    return k * 10

with workers(None, 2), warnings.catch_warnings(record=True) as said:
    warnings.simplefilter("always")
    out = [warned_again(r) for r in Parallel()(delayed(WithWarnings(job))(k) for k in range(3))]
print(out, sorted(str(w.message) for w in said))
"""


def test_a_workers_warning_is_raised_again_in_the_command_also_under_pythonwarnings_error():
    """A re-trial: with --workers 2 a warning raised in a worker (the fit cache cannot be written) was printed in
    Python's format instead of as a `warning:` line, and under PYTHONWARNINGS=error (which workers inherit) ended the
    replay in a traceback with no results. hspr.parallel.WithWarnings carries it back to the command."""
    import os
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", _WORKER_WARNING_PROBE], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONWARNINGS": "error"})
    assert out.returncode == 0, out.stderr[-500:]
    assert out.stdout.strip() == ("[0, 10, 20] ['cannot write the fit cache (0)', 'cannot write the fit cache (1)', "
                                  "'cannot write the fit cache (2)']")
    assert "UserWarning" not in out.stderr


def test_quiet_methods_sets_the_variable_workers_read_and_restores_what_was_there(monkeypatch):
    """``replay -q`` tells methods (in workers too) through the environment; afterwards it is as it was:
    absent stays absent, a user's own value comes back, also after an error inside."""
    import os

    import pytest

    from hspr.parallel import QUIET_ENV, quiet_methods

    monkeypatch.delenv(QUIET_ENV, raising=False)
    with quiet_methods():
        assert os.environ[QUIET_ENV] == "1"
    assert QUIET_ENV not in os.environ
    with quiet_methods(False):
        assert QUIET_ENV not in os.environ
    monkeypatch.setenv(QUIET_ENV, "yes")
    with pytest.raises(RuntimeError), quiet_methods():
        assert os.environ[QUIET_ENV] == "1"
        raise RuntimeError("inside")
    assert os.environ[QUIET_ENV] == "yes"


def test_the_recorded_blas_is_numpy_s_whatever_order_threadpoolctl_lists_them(monkeypatch):
    """A trial: two identical replays recorded `openblas 0.3.30` (scipy's copy) and `openblas 0.3.31` (numpy's), as
    threadpoolctl listed either first, and `hspr report` then said their BLAS differed."""
    import threadpoolctl

    from hspr.cli.common import _blas

    home = os.path.dirname(os.path.realpath(np.__file__))
    numpy_s = {"user_api": "blas", "internal_api": "openblas", "version": "0.3.31", "architecture": "Haswell",
               "filepath": os.path.join(home + ".libs", "libscipy_openblas64_.so")}
    scipy_s = {"user_api": "blas", "internal_api": "openblas", "version": "0.3.30", "architecture": "Zen",
               "filepath": os.path.join(os.path.dirname(home), "scipy.libs", "libscipy_openblas.so")}
    openmp = {"user_api": "openmp", "internal_api": "openmp", "version": None, "filepath": "/x/libgomp.so"}
    for listed in ([scipy_s, numpy_s, openmp], [openmp, numpy_s, scipy_s]):
        monkeypatch.setattr(threadpoolctl, "threadpool_info", lambda listed=listed: listed)
        assert _blas() == "openblas 0.3.31 (Haswell kernels)"
    # not numpy's own (a system BLAS it links to): the first by path, whatever the order
    other = {**numpy_s, "filepath": "/usr/lib/libopenblas.so.0", "version": "0.3.20", "architecture": None}
    for listed in ([scipy_s, other], [other, scipy_s]):
        monkeypatch.setattr(threadpoolctl, "threadpool_info", lambda listed=listed: listed)
        assert _blas() == ("openblas 0.3.30 (Zen kernels)" if scipy_s["filepath"] < other["filepath"] else "openblas 0.3.20")
    monkeypatch.setattr(threadpoolctl, "threadpool_info", lambda: [openmp])
    assert _blas() is None
