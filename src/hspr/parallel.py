"""Where replay and selection jobs run: local joblib workers or a cluster (dask / ray), and
how many BLAS threads a fit uses.

joblib's ``parallel_config`` selects the backend; this module only connects to the cluster
first, so the replay code itself never special-cases a backend.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator
from functools import cache
from typing import TYPE_CHECKING

from threadpoolctl import ThreadpoolController

if TYPE_CHECKING:
    from joblib import Parallel

BACKENDS = ("loky", "threading", "dask", "ray")


#: set (to anything but empty) by ``hspr replay --quiet``: a method's own progress lines (``hspr_auto``'s
#: selection inside a fit) are then not logged. An environment variable, as joblib workers inherit the
#: environment but not the command's logging.
QUIET_ENV = "HSPR_QUIET"

#: environment variables a BLAS library reads, when it is loaded, for its thread count
BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OMP_NUM_THREADS", "BLIS_NUM_THREADS",
                         "VECLIB_MAXIMUM_THREADS")


@cache
def _controller() -> ThreadpoolController:
    """The process's threadpool controller, built once (its library scan costs ~40 ms), after numpy and
    scipy.linalg are loaded: a scan sees only the BLAS libraries loaded before it, and scipy ships its own
    OpenBLAS (L-BFGS-B's), which a controller built before scipy loaded left threaded."""
    import numpy  # noqa: F401
    import scipy.linalg  # noqa: F401

    return ThreadpoolController()


def single_thread_blas():
    """Context limiting BLAS to one thread (threadpoolctl), for fits made of many small matrix
    products: L-BFGS-B's tiny BLAS calls ran up to 30x slower with a threaded OpenBLAS on a busy
    machine, and ``hspr_robust``'s calibration 5-10x slower when called from Python (the CLI
    limits BLAS for every command, :func:`one_blas_thread`; a library user got the threaded default).
    Entering the limit costs microseconds (the first call loads scipy.linalg); the previous limits are
    restored on exit.
    """
    return _controller().limit(limits=1, user_api="blas")


@contextlib.contextmanager
def one_blas_thread() -> Iterator[None]:
    """One BLAS thread for a whole command: the BLAS libraries loaded already are limited (threadpoolctl)
    and those loaded inside start with one thread (:data:`BLAS_THREAD_VARIABLES` set to 1 until exit, then
    restored). The command-line interface loads scipy when a command needs it, after the limit was set, and
    scipy's OpenBLAS then ran L-BFGS-B with two threads in every ``hspr live start`` fit (measured
    2026-12-05 with threadpoolctl inside the fit). Nothing heavy is imported here."""
    from threadpoolctl import threadpool_limits

    saved = {name: os.environ.get(name) for name in BLAS_THREAD_VARIABLES}
    os.environ.update(dict.fromkeys(BLAS_THREAD_VARIABLES, "1"))
    try:
        with threadpool_limits(1, user_api="blas"):
            yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@contextlib.contextmanager
def interrupts_spare_workers() -> Iterator[None]:
    """Workers started inside this context ignore Ctrl-C; the caller's main thread still gets it.

    A Ctrl-C at a terminal reaches every process of the foreground group, the joblib workers as
    well. A worker still starting up (importing numpy, scipy, hspr) then died with a traceback of
    its own on stderr, below the command's one-line "interrupted" (a trial of ``hspr replay
    --workers 2``, interrupts 2-5 s after the start). Here SIGINT is blocked in the calling thread,
    and a signal mask is inherited by every process forked from it, so a worker never receives
    SIGINT: the command stops its workers when it handles the interrupt (joblib terminates them).
    A helper thread, started before the mask, leaves SIGINT deliverable to this process, and
    Python runs its handler in the main thread as before (joblib's wait polls every 10 ms, so the
    interrupt is not held up). The bpo-33613 pattern, which multiprocessing's resource tracker uses.

    multiprocessing's resource tracker is started first: it unblocks SIGINT in the thread that
    starts it (Python 3.11, 3.12 and 3.13; a trial on each), and loky starts it with the first worker, so the first worker and the
    rest were started unmasked (measured: a worker's mask was empty, and the traceback stayed).

    SIGHUP (a closed terminal sends it to every process of the group; ``timeout -s HUP``) is blocked
    the same way, also while both resource trackers start: they ignore SIGINT and SIGTERM but not
    SIGHUP, and a trial's hang-up killed them and the workers ("resource_tracker: process died
    unexpectedly" and about ten loky tracebacks below "terminated (SIGHUP)"). The command handles
    its SIGHUP as an interrupt (:mod:`hspr._entry`), and joblib ends the workers with SIGKILL.

    No effect where ``signal.pthread_sigmask`` is missing (Windows) or off the main thread, and on
    workers started before the context (a reused joblib executor keeps its workers).

    Keep the body to joblib calls (hspr's is: replay's, selection's and a fit's jobs). A blocking call
    of the caller's own inside it (``time.sleep``, ``Event.wait``, ``subprocess.run``) is not woken by
    Ctrl-C: the KeyboardInterrupt comes when that call returns (a re-trial: 3 s late for a 3 s sleep),
    and a process it starts inherits the blocked SIGINT. Nested contexts must exit in the reverse order
    of entry (``with`` does that); the mask of the context exited last is the one restored.
    """
    if not hasattr(signal, "pthread_sigmask") or threading.current_thread() is not threading.main_thread():
        yield
        return
    from multiprocessing import resource_tracker

    stop = threading.Event()
    receiver = threading.Thread(target=stop.wait, name="hspr-sigint-receiver", daemon=True)
    receiver.start()  # before the mask: it keeps SIGINT and SIGHUP unblocked
    hangup = {signal.SIGHUP} if hasattr(signal, "SIGHUP") else set()
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, hangup)  # the resource tracker keeps it blocked (below)
    try:
        resource_tracker.ensure_running()
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
        stop.set()


class WithWarnings:
    """``fn`` run in a worker process, returning ``(result, warnings)``: the ``(text, category)`` of each
    warning it raised, for :func:`warned_again` to raise in the calling process. A re-trial: a worker's warning
    (the fit cache cannot be written) was printed in Python's own format, not as the command's ``warning:``
    line, and under ``PYTHONWARNINGS=error`` (which workers inherit) it ended the replay in a traceback. Inside,
    a ``UserWarning`` is recorded whatever the filters say; other categories keep them. Off a process's main thread
    (the threading backend, a dask worker's threads) nothing is recorded: ``warnings.catch_warnings`` is not
    thread-safe, and a thread's warnings reach its process's own handling anyway."""

    def __init__(self, fn) -> None:
        self.fn = fn

    def __call__(self, *args, **kwargs):
        import warnings

        if threading.current_thread() is not threading.main_thread():
            return self.fn(*args, **kwargs), []
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("default", UserWarning)
            result = self.fn(*args, **kwargs)
        return result, [(str(w.message), w.category) for w in caught]


def warned_again(outcome):
    """The result of a :class:`WithWarnings` call, its warnings raised again here (each as it was)."""
    import warnings

    result, caught = outcome
    for text, category in caught:
        warnings.warn(text, category, stacklevel=2)
    return result


@contextlib.contextmanager
def quiet_methods(quiet: bool = True) -> Iterator[None]:
    """Within, :data:`QUIET_ENV` is set (when ``quiet``): methods log no progress lines, in this process and in
    worker processes started from it. The variable's earlier value (or its absence) is restored on exit, so a
    command run in-process (a test, a notebook) leaves the environment as it was."""
    if not quiet:
        yield
        return
    before = os.environ.get(QUIET_ENV)
    os.environ[QUIET_ENV] = "1"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(QUIET_ENV, None)
        else:
            os.environ[QUIET_ENV] = before


def physical_memory() -> int | None:
    """The machine's physical memory in bytes (``os.sysconf``), or None where it cannot be read (Windows)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, OSError, ValueError):
        return None


def exit_with_parent() -> None:
    """A loky worker's initializer: a daemon thread ends the worker within a second of its parent's death.

    loky watches its parent on Windows only. After ``kill -9`` of ``hspr replay --workers 2`` (a trial), the
    workers ran on: one left after ~330 s (joblib's 300 s idle timeout, then loky's 30 s exit lock), the other
    never (blocked in read() on a job half-written to its pipe: a job with its fitted model is ~270 KB, more than
    a pipe holds, and the worker itself holds the pipe's write end, so no end of file comes), keeping both
    resource trackers alive; their blocked SIGHUP and SIGINT (:func:`interrupts_spare_workers`) meant neither a
    closed terminal nor Ctrl-C ended them."""
    import time

    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:  # the parent gone, the worker is reparented (to init or a subreaper)
            time.sleep(1.0)
        os._exit(1)  # its results have no reader left

    threading.Thread(target=watch, name="hspr-parent-watch", daemon=True).start()


@contextlib.contextmanager
def workers(backend: str | None = None, n_jobs: int | None = None) -> Iterator[None]:
    """joblib's ``parallel_config`` for ``backend`` (None: joblib's default, loky) and ``n_jobs``
    workers: the context every job of replay, selection and a live fit runs in. Local worker
    processes (loky, more than one job) are started with :func:`interrupts_spare_workers`, and end
    with this process (:func:`exit_with_parent`)."""
    from joblib import parallel_config
    from joblib.parallel import get_active_backend

    local_processes = backend in (None, "loky") and n_jobs not in (None, 1)
    params: dict = {}
    if local_processes:
        active = get_active_backend()[0] if backend is None else None  # joblib's default, or a caller's parallel_config
        if backend == "loky" or type(active).__name__ == "LokyBackend":
            kept = getattr(active, "backend_kwargs", None) or {}  # a caller's own loky settings (its initializer) stand
            backend, params = "loky", {"initializer": exit_with_parent, **kept}
    # one parallel_config, made as it is entered: joblib sets it when it is made, and restores at exit what was set
    # before it (a second one made here left the first set for good: later calls ran on two workers)
    with (parallel_config(backend=backend, n_jobs=n_jobs, **params) if backend else parallel_config(n_jobs=n_jobs)), \
            interrupts_spare_workers() if local_processes else contextlib.nullcontext():
        yield


def streaming_parallel(unordered: bool = False) -> Parallel:
    """A ``joblib.Parallel`` whose results come as each job ends (``return_as='generator'``, or
    ``'generator_unordered'``), for progress and for keeping finished runs on Ctrl-C; in one list at
    the end where the active backend cannot stream them. A determinism trial: joblib's ray backend
    (a multiprocessing backend) refuses generators, and every ``--backend ray`` replay and selection
    failed ("does not support return_as=generator")."""
    from joblib import Parallel
    from joblib.parallel import get_active_backend

    backend, _ = get_active_backend()
    streams = getattr(backend, "supports_return_generator", False)
    return Parallel(return_as=("generator_unordered" if unordered else "generator") if streams else "list")


@contextlib.contextmanager
def cluster(backend: str | None, scheduler: str | None = None, n_workers: int = 1) -> Iterator[str | None]:
    """Connect to (or start) the cluster a backend needs; yields the joblib backend name.

    Parameters
    ----------
    backend : 'loky' (default, local processes), 'threading', 'dask' or 'ray'
    scheduler : address of an existing cluster (dask scheduler 'tcp://host:8786', ray 'auto' or
        'ray://host:10001'); None starts a local one with ``n_workers`` workers.

    Raises
    ------
    ValueError for an unknown backend; ImportError naming the extra to install
    (``pip install "hspr[dask]"`` / ``"hspr[ray]"``).
    """
    if backend in (None, "loky", "threading"):
        yield backend
        return
    if backend == "dask":
        try:
            from dask.distributed import Client, LocalCluster
        except ImportError as exc:
            raise ImportError('the dask backend needs dask.distributed: pip install "hspr[dask]"') from exc
        if scheduler:
            client = Client(scheduler)
            local = None
        else:
            local = LocalCluster(n_workers=max(1, n_workers), threads_per_worker=1, processes=True,
                                 dashboard_address=None)
            client = Client(local)
        try:
            yield "dask"
        finally:
            client.close()
            if local is not None:
                local.close()
        return
    if backend == "ray":
        try:
            import ray
            from ray.util.joblib import register_ray
        except ImportError as exc:
            raise ImportError('the ray backend needs ray: pip install "hspr[ray]"') from exc
        register_ray()
        ray.init(address=scheduler, num_cpus=None if scheduler else max(1, n_workers), ignore_reinit_error=True)
        try:
            yield "ray"
        finally:
            ray.shutdown()
        return
    raise ValueError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
