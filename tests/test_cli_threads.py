"""The CLI runs every command with one BLAS thread and restores the caller's setting; python -m hspr."""

from __future__ import annotations

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
