"""Wall time and peak memory of a live command on a large bank file: read afresh against read from the fit cache.

Usage: python benchmarks/bench_bank_cache.py [--form long|trials|wide] [--agents 1000] [--tasks 3000]
       [--missing 0.3] [--repeat 3] [--json out.json]

Every ``hspr live`` command reads the session's bank again, to check it is unchanged; since session 61 a bank
file that took a second or more to read is kept parsed in the fit cache (``hspr.live.setup.read_bank_file``).
A synthetic bank (two-parameter logistic outcomes, seed 0; ``--missing`` of its cells left out, for the long
form) is written in a temporary folder, and a session (``--method uniform``, 10 tasks: the fit takes no time)
is started on it. Then ``hspr live status`` runs ``--repeat`` times with an empty fit cache each time (the bank
read afresh: the baseline) and ``--repeat`` times with the cache the session's start filled. Printed: the
median wall time and the largest peak memory of each (each a separate process, Python's start-up included),
and their ratios. Measured on this project's 2-core machine (2026-12-07), long form, 1,000 x 3,000 with 30 %
missing: see docs/speed.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _checks
import numpy as np

#: the CLI in a child process that writes its peak memory (resource.getrusage, KB on Linux) as its last stderr line
LAUNCH = [sys.executable, "-c", "import atexit, resource, sys; atexit.register(lambda: sys.stderr.write("
          "f'\\nMAXRSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}\\n')); from hspr.cli import main; main()"]
FORMS = ("long", "trials", "wide")


def write_bank(path: str | Path, form: str, n_agents: int, n_tasks: int, missing: float) -> None:
    """A synthetic bank of ``form`` at ``path``: dated agent ids, outcomes of a two-parameter logistic model (seed 0);
    ``missing`` of the cells left out of a long CSV; five trials per task for the trials form."""
    import pandas as pd

    rng = np.random.default_rng(0)
    theta, b = rng.normal(0, 1.2, n_agents), rng.normal(0.5, 1.5, n_tasks)
    a = rng.lognormal(0, 0.35, n_tasks)
    p = 1 / (1 + np.exp(-a[None, :] * (theta[:, None] - b[None, :])))
    agents = np.array([f"2024{1 + i // 28 % 12:02d}{1 + i % 28:02d}_agent{i:05d}" for i in range(n_agents)])
    tasks = np.array([f"proj__task-{j:05d}" for j in range(n_tasks)])
    if form == "wide":
        df = pd.DataFrame((rng.random(p.shape) < p).astype(np.int8), columns=tasks)
        df.insert(0, "agent", agents)
    elif form == "trials":
        df = pd.DataFrame({"agent": np.repeat(agents, n_tasks), "task_id": np.tile(tasks, n_agents),
                           "successes": rng.binomial(5, p).ravel(), "trials": 5})
    else:
        keep = rng.random(p.shape) >= missing
        keep[:, 0] = True  # every agent ran a task, and every task was run: no warning of an empty row or column
        keep[0, :] = True
        ai, ti = np.nonzero(keep)
        df = pd.DataFrame({"agent": agents[ai], "instance_id": tasks[ti],
                           "resolved": (rng.random(p.shape) < p)[ai, ti].astype(np.int8)})
    df.to_csv(path, index=False)


def _status(session: Path, cache: Path) -> tuple[float, int]:
    """Wall time (s) and peak memory (KB) of one ``hspr live status`` with the fit cache ``cache``."""
    env = dict(os.environ, HSPR_CACHE_DIR=str(cache))
    t = time.perf_counter()
    out = subprocess.run([*LAUNCH, "live", "status", "--session", str(session)], env=env, capture_output=True, text=True)
    dt = time.perf_counter() - t
    if out.returncode != 0:
        raise SystemExit(f"hspr live status failed: {out.stderr}")
    return dt, int(out.stderr.rsplit("MAXRSS ", 1)[1].split()[0])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--form", default="long", help=f"the bank file's form: {', '.join(FORMS)} (default long)")
    ap.add_argument("--agents", type=int, default=1000, help="agents (rows) of the bank (default 1000)")
    ap.add_argument("--tasks", type=int, default=3000, help="tasks of the bank (default 3000)")
    ap.add_argument("--missing", type=float, default=0.3, help="share of cells left out of a long CSV (default 0.3)")
    ap.add_argument("--repeat", type=int, default=3, help="`status` runs of each kind (default 3)")
    ap.add_argument("--json", default=None, help="also write the result to this JSON file")
    args = ap.parse_args()
    if args.form not in FORMS:
        ap.error(f"--form {args.form!r}: give one of {', '.join(FORMS)}")
    _checks.at_least(ap, "--agents", args.agents, 4)
    _checks.at_least(ap, "--tasks", args.tasks, 11)  # the session asks 10
    if not 0 <= args.missing < 1:
        ap.error(f"--missing {args.missing}: a share of the cells in [0, 1)")
    _checks.at_least(ap, "--repeat", args.repeat, 1)
    _checks.out_file(ap, "--json", args.json)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        bank, session, cache = tmp / f"bank-{args.form}.csv", tmp / "s.hspr", tmp / "cache"
        # written by a child process: a process started later inherits this one's peak memory as its own (Linux keeps
        # ru_maxrss across fork and exec), and the table of 2 million lines would count in every status measured
        subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); "
                        f"from bench_bank_cache import write_bank; write_bank({str(bank)!r}, {args.form!r}, {args.agents}, "
                        f"{args.tasks}, {args.missing})"], check=True)
        print(f"{args.form} bank of {args.agents} x {args.tasks}: {bank.stat().st_size / 1e6:.1f} MB", flush=True)
        env = dict(os.environ, HSPR_CACHE_DIR=str(cache))
        start = subprocess.run([*LAUNCH, "live", "start", "--matrix", str(bank), "--method", "uniform", "--budget", "10",
                                "--session", str(session)], env=env, capture_output=True, text=True)
        if start.returncode != 0:
            raise SystemExit(f"hspr live start failed: {start.stderr}")
        fresh = [_status(session, tmp / f"empty-{k}") for k in range(args.repeat)]
        kept = [_status(session, cache) for _ in range(args.repeat)]
        os.environ["HSPR_CACHE_DIR"] = str(cache)
        from hspr.fitcache import entry_path
        from hspr.live.setup import BANK_CACHE_SECONDS, _file_state

        if not entry_path("", "bank file", _file_state(bank)).exists():
            print(f"note: reading this bank took under {BANK_CACHE_SECONDS:g} s, so it was not kept and both rows read it "
                  "afresh; give a larger --agents or --tasks", flush=True)
    row = {"form": args.form, "agents": args.agents, "tasks": args.tasks, "missing": args.missing,
           "fresh_median_s": statistics.median(t for t, _ in fresh), "fresh_peak_kb": max(m for _, m in fresh),
           "cached_median_s": statistics.median(t for t, _ in kept), "cached_peak_kb": max(m for _, m in kept)}
    speed, memory = row["fresh_median_s"] / row["cached_median_s"], row["fresh_peak_kb"] / row["cached_peak_kb"]
    print(f"status, bank read afresh: {row['fresh_median_s']:.2f} s, {row['fresh_peak_kb'] / 1024:.0f} MB; from the fit "
          f"cache: {row['cached_median_s']:.2f} s, {row['cached_peak_kb'] / 1024:.0f} MB (x{speed:.1f} faster, "
          f"x{memory:.1f} less memory; medians and peaks of {args.repeat} runs each)", flush=True)
    if args.json:
        _checks.made(args.json).write_text(json.dumps(row, indent=1))


if __name__ == "__main__":
    main()
