r"""Batch (K tasks asked jointly) versus sequential HSPR queries in replay.

For each of the bank's 4 target folds, HSPR is fitted on the other folds' agents; every target
row is then hidden and run twice per seed at the same budget (round(f * N)):

* sequential: the replay harness's own loop (:func:`hspr.replay.run_session`): ask one task,
  tell its outcome, repeat;
* batch: ``ask_batch(K)``, then tell the K outcomes (in the order asked), repeat; the last
  batch is smaller when K does not divide the budget (``run_session(..., batch=K)``, as ``hspr
  replay --batch K`` runs it). This is what ``hspr live next --batch K`` does when K workers run
  the tasks in parallel. This script adds the paired difference per target to what ``hspr replay
  --batch K`` and ``hspr report`` give.

MAE (pp) is computed per seed over all targets and averaged over seeds (as ``hspr replay``
does). Rows are appended to a JSON-lines file as they finish, so an interrupted run resumes.

Usage::

    python benchmarks/batch_vs_sequential.py --bank verified --budget 0.10 --batch 8 \
        --seeds 0-4 --workers 2 --out benchmarks/results/batch_vs_sequential.jsonl

Each row holds its settings (bank, budget, batch, config); a file holding rows of other settings
is refused rather than mixed into the summary.
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
from hspr.methods.hspr import HSPR, HSPRConfig
from hspr.replay import HiddenRow, run_session
from hspr.session import budget_from_fraction


def one_target(model, targets, r: int, budget: int, seeds: list[int], k: int, settings: dict) -> list[dict]:
    out = []
    for seed in seeds:
        row = HiddenRow(targets, r)
        seq = run_session(model, row, [budget], seed)[0]
        bat = run_session(model, HiddenRow(targets, r), [budget], seed, batch=k)[0]  # `hspr replay --batch K`'s runs
        truth = row.full_score()
        out.append({
            **settings, "target": targets.agents[r], "seed": seed, "budget": budget, "truth": truth,
            "seq_estimate": seq["estimate"], "batch_estimate": bat["estimate"],
            "seq_width": seq["upper"] - seq["lower"], "batch_width": bat["upper"] - bat["lower"],
            "overlap": len(set(seq["queried"]) & set(bat["queried"])),
        })
    return out


def summarize(rows: list[dict]) -> dict:
    seeds = sorted({r["seed"] for r in rows})
    per_seed = {}
    for s in seeds:
        rs = [r for r in rows if r["seed"] == s]
        t = np.array([r["truth"] for r in rs])
        per_seed[s] = {
            "n_targets": len(rs),
            "seq_mae_pp": 100 * float(np.mean(np.abs(np.array([r["seq_estimate"] for r in rs]) - t))),
            "batch_mae_pp": 100 * float(np.mean(np.abs(np.array([r["batch_estimate"] for r in rs]) - t))),
        }
    seq = float(np.mean([v["seq_mae_pp"] for v in per_seed.values()]))
    bat = float(np.mean([v["batch_mae_pp"] for v in per_seed.values()]))
    d = np.array([abs(r["batch_estimate"] - r["truth"]) - abs(r["seq_estimate"] - r["truth"]) for r in rows]) * 100
    return {
        "seeds": seeds, "per_seed": per_seed, "seq_mae_pp": seq, "batch_mae_pp": bat, "diff_pp": bat - seq,
        "paired_diff_se_pp": float(d.std(ddof=1) / np.sqrt(len(d))) if len(d) > 1 else None,
        "seq_mean_width_pp": 100 * float(np.mean([r["seq_width"] for r in rows])),
        "batch_mean_width_pp": 100 * float(np.mean([r["batch_width"] for r in rows])),
        "mean_query_overlap": float(np.mean([r["overlap"] for r in rows])),
        "n_runs": len(rows),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bank", default="verified", help="bundled bank to replay (default verified)")
    ap.add_argument("--budget", type=float, default=0.10, help="budget fraction f (default 0.10)")
    ap.add_argument("--batch", type=int, default=8, help="K, the tasks asked jointly per batch (default 8)")
    ap.add_argument("--seeds", default="0-4", help="query seeds, as '0-4' or '0,1,2' (default 0-4)")
    ap.add_argument("--workers", type=int, default=2, help="joblib worker processes (default 2)")
    ap.add_argument("--config", default=None, help="HSPRConfig JSON (default settings if omitted)")
    ap.add_argument("--out", default="batch_vs_sequential.jsonl",
                    help="JSON-lines file of the runs (resumed when it holds runs of the same settings); the "
                         "summary goes beside it as .summary.json")
    args = ap.parse_args()

    _checks.banks(ap, "--bank", args.bank, trials_ok=True)
    _checks.fraction(ap, "--budget", args.budget)
    _checks.at_least(ap, "--batch", args.batch, 1)
    _checks.workers(ap, args.workers)
    seeds = _checks.seeds(ap, args.seeds)
    out = _checks.out_file(ap, "--out", args.out)
    if args.config and not Path(args.config).is_file():
        ap.error(f"--config {args.config}: no such file (a JSON file of HSPRConfig fields)")
    try:
        cfg = HSPRConfig.from_json(args.config) if args.config else HSPRConfig()
    except (ValueError, OSError) as exc:  # a hostile trial: a JSON list or unknown keys ended in a traceback
        ap.error(f"--config: {exc}")
    matrix = load_bank(args.bank)
    budget = budget_from_fraction(args.budget, matrix.n_tasks)
    if budget < 1:
        ap.error(f"--budget {args.budget:g}: {args.budget:g} of {matrix.n_tasks} tasks rounds to 0 tasks")
    if args.batch > budget:  # a trial: --batch 100 on an 8-task budget was recorded as batch 100
        ap.error(f"--batch {args.batch}: the budget is {budget} tasks on {args.bank}; give --batch {budget} or less")
    # a run is resumed only under the same settings: other settings give other estimates
    settings = {"bank": args.bank, "budget": budget, "batch": args.batch, "config": cfg.to_dict()}
    out.parent.mkdir(parents=True, exist_ok=True)
    done = set()
    rows: list[dict] = []
    if out.exists():
        for n, line in enumerate(out.read_text().splitlines(), start=1):
            try:
                r = json.loads(line)
            except ValueError:
                r = None
            if not isinstance(r, dict) or "target" not in r:  # a hostile trial: a results.json ended in a traceback
                ap.error(f"--out {out}: line {n} is not a run of this script (one JSON object per line); give "
                         "another --out")
            if "bank" not in r:
                ap.error(f"--out {out}: line {n} is a run written before runs held their settings; give another --out")
            theirs = {k: r.get(k) for k in settings}
            if theirs != settings:
                ap.error(f"--out {out}: line {n} is a run of other settings "
                         f"({', '.join(f'{k} {theirs[k]!r}' for k in settings if theirs[k] != settings[k] and k != 'config')}"
                         f"{', another --config' if theirs['config'] != settings['config'] else ''}); give another --out")
            rows.append(r)
            done.add((r["target"], r["seed"]))
    t0 = time.perf_counter()
    jobs = []
    for idx in fold_indices(matrix.agents, bank_folds(args.bank)):
        model = HSPR(cfg).fit(matrix.drop_rows(idx))
        targets = matrix.rows(idx)
        for r in range(targets.n_agents):
            todo = [s for s in seeds if (targets.agents[r], s) not in done]
            if todo:
                jobs.append(delayed(one_target)(model, targets, r, budget, todo, args.batch, settings))
    print(f"{len(jobs)} targets to run ({len(done)} (target, seed) pairs already in {out})", flush=True)
    with _checks.made(out).open("a") as fh:
        for i, res in enumerate(Parallel(n_jobs=args.workers, return_as="generator_unordered")(jobs)):
            for r in res:
                fh.write(json.dumps(r) + "\n")
            fh.flush()
            rows.extend(res)
            if (i + 1) % 10 == 0:
                print(f"  {i + 1}/{len(jobs)} targets, {time.perf_counter() - t0:.0f} s", flush=True)
    rows = [r for r in rows if r["seed"] in seeds]
    summary = summarize(rows)
    summary.update(bank=args.bank, budget=budget, budget_fraction=args.budget, batch=args.batch,
                   wall_seconds=time.perf_counter() - t0, config=cfg.to_dict())
    out.with_suffix(".summary.json").write_text(json.dumps(summary, indent=1))
    print(json.dumps({k: v for k, v in summary.items() if k != "config"}, indent=1))


if __name__ == "__main__":
    main()
