"""Shared fixtures: small simulated response matrices with a known generating model."""

from __future__ import annotations

import contextlib
import os
import threading

import numpy as np
import pytest
from scipy import special

from hspr.data import ResponseMatrix


@contextlib.contextmanager
def unread_fifo(path, after: float = 20.0):
    """Make a named pipe at ``path`` for a test that expects it refused, not read: were it read, a writer
    started after ``after`` seconds ends the wait, so the test fails instead of hanging for ever."""
    os.mkfifo(path)

    def unblock():
        with open(path, "w") as fh:
            fh.write("{}")

    writer = threading.Timer(after, unblock)
    writer.daemon = True
    writer.start()
    try:
        yield path
    finally:
        writer.cancel()


@pytest.fixture
def default_signals():
    """SIGINT and SIGHUP as a terminal starts a command (Python's KeyboardInterrupt handler, the default hang-up),
    restored after the test. `nohup` or a script's background job (`pytest &`) starts the run with them ignored;
    hspr leaves an ignored signal ignored, as nohup asks, so the tests of its signal handling, and the processes
    they start, would see no signal (a CI run started that way failed five of them)."""
    import signal

    names = [signal.SIGINT] + ([signal.SIGHUP] if hasattr(signal, "SIGHUP") else [])
    saved = {s: signal.getsignal(s) for s in names}
    signal.signal(signal.SIGINT, signal.default_int_handler)
    if hasattr(signal, "SIGHUP"):
        signal.signal(signal.SIGHUP, signal.SIG_DFL)
    try:
        yield
    finally:
        for s, handler in saved.items():
            signal.signal(s, signal.SIG_DFL if handler is None else handler)


def simulate_matrix(n_agents: int, n_tasks: int, seed: int = 0, rank: int = 1, spread: float = 1.5):
    """Logistic factor model: P(y=1) = sigmoid(b_i + a_i theta_s + v_i' u_s).

    Returns (ResponseMatrix, dict of true parameters).
    """
    rng = np.random.default_rng(seed)
    theta = rng.normal(size=n_agents)
    b = rng.normal(-0.5, spread, size=n_tasks)
    a = rng.uniform(0.5, 2.0, size=n_tasks)
    u = rng.normal(size=(n_agents, rank))
    v = rng.normal(0, 0.7, size=(n_tasks, rank))
    logits = b[None, :] + theta[:, None] * a[None, :] + u @ v.T
    Y = (rng.random((n_agents, n_tasks)) < special.expit(logits)).astype(int)
    m = ResponseMatrix([f"agent{i:03d}" for i in range(n_agents)], [f"task{j:04d}" for j in range(n_tasks)], Y)
    return m, {"theta": theta, "b": b, "a": a}


@pytest.fixture(scope="session")
def small_bank():
    """40 agents x 120 tasks, two latent factors."""
    return simulate_matrix(40, 120, seed=1, rank=1)[0]


@pytest.fixture(autouse=True, scope="session")
def _private_fit_cache(tmp_path_factory):
    """Fitted-model cache in a temporary folder: tests never read or fill the user's cache."""
    import os

    old = os.environ.get("HSPR_CACHE_DIR")
    os.environ["HSPR_CACHE_DIR"] = str(tmp_path_factory.mktemp("fit-cache"))
    yield
    if old is None:
        os.environ.pop("HSPR_CACHE_DIR", None)
    else:
        os.environ["HSPR_CACHE_DIR"] = old
