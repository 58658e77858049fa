"""The benchmark scripts refuse bad options before any work: argparse's usage and one error line
naming the option, exit 2 (a hostile trial found tracebacks, and failures after the whole run)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.mark.parametrize("script, args, message", [
    ("shift_table.py", ["--protocols", "bash-only, nosuch"], "--protocols: unknown 'nosuch'"),
    ("shift_table.py", ["--methods", "uniform,"], "--methods 'uniform,': an empty name between commas"),
    ("shift_table.py", ["--seeds", "2-0"], "seed range '2-0' runs backwards"),
    ("batch_vs_sequential.py", ["--batch", "0"], "--batch 0: give a whole number >= 1"),
    ("bench_hspr.py", ["--banks", "nosuch"], "--banks: unknown 'nosuch'"),
    ("bench_live.py", ["--method", "foo"], "--method 'foo': give one registered method"),
    # a trial of the scripts: each of these ended in a traceback
    ("bench_hspr.py", ["--banks", "terminal-bench"], "terminal-bench holds pass rates over repeated trials"),
    ("bench_selection.py", ["--nodes", "0"], "--nodes 0: give a whole number >= 16"),
    ("bench_selection.py", ["--banks", "multimodal", "--agents", "10"], "fold 0 of multimodal has 9 source agents"),
    ("item_prior_check.py", ["--scales", "abc"], "--scales: 'abc' is not a number"),
    ("item_prior_check.py", ["--scales", "1,0"], "--scales: 0 is outside"),
    ("width_forecast.py", ["--config", "nofile.json"], "--config nofile.json: no such file"),
    ("speed_vs_base.py", ["--base", "nosuchcommit"], "--base nosuchcommit: not a commit"),
    ("batch_vs_sequential.py", ["--bank", "pro", "--budget", "1e-9"], "rounds to 0 tasks"),
    ("width_forecast.py", ["--bank", "pro", "--budget", "1e-9"], "rounds to 0 tasks"),
    ("width_forecast.py", ["--method", "atlas"], "invalid choice: 'atlas'"),
    ("batch_vs_sequential.py", ["--config", "nofile.json"], "--config nofile.json: no such file"),
    # a trial of the benchmarks: tracebacks, exit 1, an option taken and ignored, a folder left behind
    ("bench_live.py", ["--method", "hspr,atlas"], "--method 'hspr,atlas': give one registered method"),
    ("bench_estimate.py", ["--ref-draws", "1000"], "--ref-draws 1000: give a whole number >= 131072"),
    ("bench_estimate.py", ["--ref-draws", "200000"], "--ref-draws: give a multiple of 131072"),
    ("shift_table.py", ["--protocols", "forward", "--newest", "1000"], "--newest must be a whole number from 1 to 112"),
    ("shift_table.py", ["--protocols", "strongest", "--strongest", "114"], "--strongest"),
    ("item_prior_check.py", ["--scales", "1,1"], "--scales: 1 given twice"),
    ("shift_table.py", ["--protocols", "bash-only", "--newest", "5"], "--newest is used only by the forward protocol"),
    ("shift_table.py", ["--methods", "hspr_robust", "--protocols", "forward", "--newest", "111", "--workers", "1"],
     "hspr_robust needs at least 4 source agents"),
    ("bench_selection.py", ["--shipped", "--json", "x.json"], "--json: timing options, not used with --shipped"),
    ("width_forecast.py", ["--out", "nd/x.json", "--config", "nofile.json"], "--config nofile.json: no such file"),
    ("bench_bank_cache.py", ["--form", "folder"], "--form 'folder': give one of long, trials, wide"),
    ("bench_bank_cache.py", ["--tasks", "10"], "--tasks 10: give a whole number >= 11"),
    ("bench_bank_cache.py", ["--missing", "1"], "--missing 1.0: a share of the cells in [0, 1)"),
])
def test_bad_options_are_refused_before_any_work(tmp_path, script, args, message):
    res = subprocess.run([sys.executable, str(BENCH / script), *args], capture_output=True, text=True, cwd=tmp_path,
                         timeout=120)
    assert res.returncode == 2, res.stderr
    assert message in res.stderr and "Traceback" not in res.stderr
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_an_out_file_under_a_file_is_refused_up_front(tmp_path):
    (tmp_path / "afile").write_text("")
    res = subprocess.run([sys.executable, str(BENCH / "shift_table.py"), "--out", "afile/x.json"], capture_output=True,
                         text=True, cwd=tmp_path, timeout=120)
    assert res.returncode == 2 and "afile is a file, not a folder" in res.stderr


def test_compare_refuses_a_file_that_is_not_a_selection(tmp_path):
    """A trial gave bench_selection.py --compare its own --json output: KeyError 'stages'."""
    (tmp_path / "bs.json").write_text('{"machine": "x", "rows": []}')
    res = subprocess.run([sys.executable, str(BENCH / "bench_selection.py"), "--compare", "bs.json", "bs.json"],
                         capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert res.returncode == 2 and "bs.json is not the output of `hspr select --out`" in res.stderr, res.stderr
    assert "Traceback" not in res.stderr


def test_batch_script_refuses_a_bad_config_and_an_out_file_of_another_kind(tmp_path):
    """A hostile trial: a JSON list as --config, and a replay's results.json as --out, ended in tracebacks;
    shift_table with every method skipped ended in a KeyError."""
    (tmp_path / "list.json").write_text("[1, 2]")
    (tmp_path / "results.json").write_text('{"runs": []}\n\n')
    for args, message in ((["--config", "list.json"], "--config: "), (["--out", "results.json"], "line 1 is not a run")):
        res = subprocess.run([sys.executable, str(BENCH / "batch_vs_sequential.py"), "--bank", "pro", *args],
                             capture_output=True, text=True, cwd=tmp_path, timeout=300)
        assert res.returncode == 2 and message in res.stderr and "Traceback" not in res.stderr, res.stderr
