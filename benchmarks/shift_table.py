"""Print the shift-protocol table of the shift issue: MAE / MaxErr / 90 % coverage / mean width
per protocol and method, for hspr_robust, hspr and the peers, in one run.

Protocols (10 % budget):
- ``verified/bash-only``: all 114 Verified rows as sources, the 28 bash-only rows as targets;
- ``verified/forward-20``: the oldest 94 Verified rows as sources, the newest 20 as targets;
- ``verified/strongest-20`` (only when asked for): the 20 highest-scoring Verified rows as targets,
  the other 94 as sources (agents better than the whole history);
- ``folds`` (only when asked for): the 4-fold replays of the ``--banks`` (default lite, verified,
  full, pro), the in-distribution rows of the same issue table.

    python benchmarks/shift_table.py --seeds 0-4 --workers 2 --out shift.json
    python benchmarks/shift_table.py --protocols bash-only,forward,folds --out issue_table.json   # the whole table

Every method runs on the same seeds (default 0-4). Writes the runs and summary as JSON (the
format of ``hspr replay --out``, so ``hspr report shift.json`` works) and prints a markdown table.
"""

from __future__ import annotations

import argparse
import time

import _checks

from hspr.data import DataError
from hspr.data.banks import load_bank, load_target_set
from hspr.data.folds import bank_folds, forward_split, strongest_split
from hspr.fileio import write_json_durable
from hspr.methods import REGISTRY

DEFAULT_METHODS = [n for n in REGISTRY if n != "hspr_auto"]  # hspr_auto would run selection (slow)
PROTOCOLS = ("bash-only", "forward", "strongest", "folds")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--methods", default=",".join(DEFAULT_METHODS),
                    help="comma-separated registered methods (default: hspr_robust, hspr and the peers)")
    ap.add_argument("--seeds", default="0-4", help="query seeds of every method, as '0-4' or '0,1,2' (default 0-4)")
    ap.add_argument("--newest", type=int, default=None, help="targets of the forward protocol: the newest K Verified rows (default 20)")
    ap.add_argument("--strongest", type=int, default=None, help="targets of the strongest protocol: the K best Verified rows (default 20)")
    ap.add_argument("--workers", type=int, default=2, help="joblib worker processes (default 2)")
    ap.add_argument("--protocols", default="bash-only,forward", help="comma-separated: bash-only, forward, strongest, folds")
    ap.add_argument("--banks", default="lite,verified,full,pro", help="banks of the folds protocol")
    ap.add_argument("--out", default=None, help="write the runs and summary as a results JSON (`hspr report` reads it)")
    args = ap.parse_args()
    seeds = _checks.seeds(ap, args.seeds)
    protocols = _checks.choices(ap, "--protocols", args.protocols, PROTOCOLS)
    banks = _checks.banks(ap, "--banks", args.banks, trials_ok=True) if "folds" in protocols else []
    for option, proto in (("newest", "forward"), ("strongest", "strongest")):  # a re-trial: ignored without a word
        if getattr(args, option) is not None and proto not in protocols:
            ap.error(f"--{option} is used only by the {proto} protocol: add {proto} to --protocols (or drop --{option})")
        setattr(args, option, 20 if getattr(args, option) is None else getattr(args, option))
    _checks.at_least(ap, "--newest", args.newest, 1)
    _checks.at_least(ap, "--strongest", args.strongest, 1)
    _checks.workers(ap, args.workers)
    _checks.out_file(ap, "--out", args.out)
    bank = load_bank("verified")
    try:  # the splits before any work (a trial: --newest 1000 failed with a traceback after the bash-only replay)
        new = forward_split(bank.agents, args.newest) if "forward" in protocols else None
        top = strongest_split(bank.agents, bank.scores(), args.strongest) if "strongest" in protocols else None
    except ValueError as exc:
        ap.error(str(exc))
    methods = _checks.methods(ap, args.methods)  # last: it imports every method's libraries (scikit-learn: 2 s)
    seed_map = {n: (seeds[:1] if m.seed_kind == "deterministic" else seeds) for n, m in methods.items()}
    import pandas as pd  # imported after the option checks: a bad option is refused in 0.5 s, not 3.7 s

    from hspr.replay import replay
    from hspr.report import comparison_markdown, comparison_table
    from hspr.report.stats import summarize

    runs = []
    t0 = time.perf_counter()
    try:
        for proto in protocols:
            t_proto = time.perf_counter()
            if proto == "bash-only":
                runs += replay("verified/bash-only", bank, methods, seeds=seed_map, targets=load_target_set("bash-only"),
                               n_jobs=args.workers, protocol="bash-only")
            elif proto == "forward":
                runs += replay(f"verified/forward-{args.newest}", bank.drop_rows(new), methods, seeds=seed_map,
                               targets=bank.rows(new), n_jobs=args.workers, protocol=f"forward-{args.newest}")
            elif proto == "strongest":
                runs += replay(f"verified/strongest-{args.strongest}", bank.drop_rows(top), methods, seeds=seed_map,
                               targets=bank.rows(top), n_jobs=args.workers, protocol=f"strongest-{args.strongest}")
            elif proto == "folds":
                for name in banks:
                    m = load_bank(name)
                    use = methods if m.trials is None else {n: x for n, x in methods.items() if x.accepts_pass_rates}
                    if len(use) < len(methods):  # as `hspr replay --methods all` does (a trial got a traceback)
                        print(f"note: {name} holds pass rates over {m.trials} trials; skipped the methods that take one "
                              f"0/1 outcome per task ({', '.join(n for n in methods if n not in use)})", flush=True)
                    if use:
                        runs += replay(name, m, use, seeds={n: seed_map[n] for n in use}, folds=bank_folds(name),
                                       n_jobs=args.workers)
            print(f"{proto}: {time.perf_counter() - t_proto:.0f} s", flush=True)
    except DataError as exc:  # e.g. too few source agents for a method (a trial: a traceback)
        ap.error(str(exc))
    if not runs:  # a hostile trial: every method skipped ended in a KeyError
        raise SystemExit("shift_table.py: error: no runs: every method was skipped (see the notes above); give "
                         "methods that take the banks' outcomes")
    frame = pd.DataFrame(runs)
    summary = summarize(frame)
    if args.out:
        write_json_durable({"runs": runs, "summary": summary.to_dict(orient="records"),
                            "wall_seconds": time.perf_counter() - t0}, _checks.made(args.out))
    print(f"all protocols: {time.perf_counter() - t0:.0f} s\n")
    print(comparison_markdown(comparison_table(frame)))


if __name__ == "__main__":
    main()
