"""How good is the live session's forecast of the final 90 % interval width?

``hspr live status`` reports the interval width expected once the remaining budget is spent
(:meth:`hspr.session.Session.expected_width`). This replays every target of a bank (4 folds, HSPR fitted
on the other folds) sequentially at budget round(f * N) and, at checkpoints n = 0, B/4, B/2,
3B/4, compares the forecast with the width actually reached at n = B.

Usage::

    python benchmarks/width_forecast.py --bank verified --budget 0.10 --seed 0 --workers 2

It prints the summary (the committed one is benchmarks/results/width_forecast.summary.json) and
writes the summary and every run to --out (default width_forecast.json in the current folder).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import _checks
import numpy as np
from joblib import Parallel, delayed

from hspr.data import bank_folds, load_bank
from hspr.data.folds import fold_indices
from hspr.methods import get_method
from hspr.methods.hspr import HSPR, HSPRConfig
from hspr.replay import HiddenRow
from hspr.session import budget_from_fraction


def one_target(model, targets, r: int, budget: int, seed: int) -> dict:
    row = HiddenRow(targets, r)
    checkpoints = sorted({0, budget // 4, budget // 2, 3 * budget // 4})
    sess = model.start(budget, seed)
    forecasts = {}
    while True:
        if sess.n_queried in checkpoints:
            forecasts[sess.n_queried] = sess.expected_width()
        if sess.done:
            break
        t = sess.ask()
        sess.tell(t, row.reveal(t))
    return {"target": targets.agents[r], "seed": seed, "budget": budget, "final_width": sess.estimate().width,
            "forecasts": {str(k): v for k, v in forecasts.items()}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bank", default="verified", help="bundled bank to replay (default verified)")
    ap.add_argument("--budget", type=float, default=0.10, help="budget fraction f (default 0.10)")
    ap.add_argument("--seed", type=int, default=0, help="query seed (default 0)")
    ap.add_argument("--workers", type=int, default=2, help="joblib worker processes (default 2)")
    ap.add_argument("--method", default="hspr", choices=("hspr", "hspr_robust"),
                    help="method whose forecast is checked (default hspr; hspr_robust is hspr live's default)")
    ap.add_argument("--config", default=None, help="HSPRConfig JSON (default settings if omitted)")
    ap.add_argument("--out", default="width_forecast.json", help="JSON file of the summary and every run (default width_forecast.json)")
    args = ap.parse_args()
    _checks.banks(ap, "--bank", args.bank)
    _checks.fraction(ap, "--budget", args.budget)
    _checks.at_least(ap, "--seed", args.seed, 0)
    _checks.workers(ap, args.workers)
    _checks.out_file(ap, "--out", args.out)

    if args.config and not Path(args.config).is_file():
        ap.error(f"--config {args.config}: no such file (a JSON file of HSPRConfig fields)")
    try:  # a trial: a missing or non-JSON file ended in a traceback
        cfg = HSPRConfig.from_json(args.config) if args.config else HSPRConfig()
        method = HSPR(cfg) if args.method == "hspr" else get_method(args.method, **({"config": cfg} if args.config else {}))
    except (OSError, ValueError) as exc:
        ap.error(f"--config: {exc}")
    matrix = load_bank(args.bank)
    budget = budget_from_fraction(args.budget, matrix.n_tasks)
    if budget < 1:  # a hostile trial: ran with budget 0 and exited 0
        ap.error(f"--budget {args.budget:g}: {args.budget:g} of {matrix.n_tasks} tasks rounds to 0 tasks")
    t0 = time.perf_counter()
    jobs = []
    for idx in fold_indices(matrix.agents, bank_folds(args.bank)):
        model = method.fit(matrix.drop_rows(idx))
        targets = matrix.rows(idx)
        jobs += [delayed(one_target)(model, targets, r, budget, args.seed) for r in range(targets.n_agents)]
    rows = []
    for r in Parallel(n_jobs=args.workers, return_as="generator")(jobs):  # in order: the summary keeps it
        rows.append(r)
        if len(rows) % 10 == 0 or len(rows) == len(jobs):  # a trial waited 138 s on a silent script
            print(f"{len(rows)}/{len(jobs)} targets, {time.perf_counter() - t0:.0f} s", flush=True)
    final = np.array([r["final_width"] for r in rows])
    summary = {"method": args.method, "bank": args.bank, "budget": budget, "seed": args.seed, "n_targets": len(rows),
               "mean_final_width_pp": 100 * float(final.mean()), "checkpoints": {}}
    for k in rows[0]["forecasts"]:
        f = np.array([r["forecasts"][k] for r in rows])
        summary["checkpoints"][k] = {
            "mean_forecast_pp": 100 * float(f.mean()),
            "mean_abs_error_pp": 100 * float(np.abs(f - final).mean()),
            "median_ratio_forecast_to_final": float(np.median(f / np.maximum(final, 1e-12))),
            "share_forecast_at_least_final": float(np.mean(f >= final - 1e-12)),
        }
    summary["wall_seconds"] = time.perf_counter() - t0
    out = _checks.made(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"summary": summary, "runs": rows}, indent=1))
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
