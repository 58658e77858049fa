"""Where replay and selection jobs run: local joblib workers or a cluster (dask / ray), and
how many BLAS threads a fit uses.

joblib's ``parallel_config`` selects the backend; this module only connects to the cluster
first, so the replay code itself never special-cases a backend.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from functools import cache

from threadpoolctl import ThreadpoolController

BACKENDS = ("loky", "threading", "dask", "ray")


@cache
def _controller() -> ThreadpoolController:
    """The process's threadpool controller, built once (its library scan costs ~40 ms)."""
    return ThreadpoolController()


def single_thread_blas():
    """Context limiting BLAS to one thread (threadpoolctl), for fits made of many small matrix
    products: L-BFGS-B's tiny BLAS calls ran up to 30x slower with a threaded OpenBLAS on a busy
    machine, and ``hspr_robust``'s calibration 5-10x slower when called from Python (the CLI
    limits BLAS for every command; a library user got the threaded default). Entering the limit
    costs microseconds; the previous limits are restored on exit.
    """
    return _controller().limit(limits=1, user_api="blas")


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
