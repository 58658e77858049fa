"""Does a looser item prior (HSPRConfig.item_prior_scale) show on source-only replays? (issue 10)

Usage: python benchmarks/item_prior_check.py [--banks lite,verified,full,pro] [--scales 1,0.3,0.1] [--workers 2]

For every fold of each bank, hspr_robust's leave-cluster-out replays (source rows only:
:func:`hspr.methods.hspr.calibration.leave_cluster_out`, its default ShiftSettings) are run with the
fold's shipped configuration at each item-prior scale (the default configuration on a fold with
none shipped, such as every multimodal and terminal-bench fold; on terminal-bench, a bank of
pass rates, the blended point is HSPR's, the 4PL taking 0/1 outcomes). Printed per fold, as each
fold finishes: the number of held-out
runs, their MAE (pp) with HSPR's point and with the blended point, and the scale the
one-standard-error rule would keep (the first listed is the default). Compare with the fold
targets' MAE from ``hspr replay --bank all --methods hspr --config cfg.json`` with
``{"item_prior_scale": s}`` in cfg.json.
"""

from __future__ import annotations

import argparse

import _checks
import numpy as np
from joblib import Parallel, delayed
from threadpoolctl import threadpool_limits

from hspr.data import bank_folds, load_bank
from hspr.data.folds import fold_indices
from hspr.methods.hspr import HSPRConfig
from hspr.methods.hspr.calibration import ShiftSettings, leave_cluster_out
from hspr.methods.hspr.selection import lookup_shipped
from hspr.methods.hspr.shift_stats import one_se_choice


def fold_row(bank: str, fold: int, scales: list[float]) -> dict:
    with threadpool_limits(1):
        m = load_bank(bank)
        src = m.drop_rows(fold_indices(m.agents, bank_folds(bank))[fold])
        hit = lookup_shipped(src.digest())
        cfg = hit[2] if hit is not None else HSPRConfig()
        cals = leave_cluster_out(src, [cfg.replace(item_prior_scale=s) for s in scales], ShiftSettings())
    hspr_err = np.array([c.hspr_errors for c in cals])
    blend_err = np.array([c.errors for c in cals])
    return {"bank": bank, "fold": fold, "n": hspr_err.shape[1],
            "hspr_mae": 100 * np.abs(hspr_err).mean(axis=1), "blend_mae": 100 * np.abs(blend_err).mean(axis=1),
            "kept": scales[one_se_choice(hspr_err)]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--banks", default="lite,verified,full,pro", help="comma-separated bundled banks")
    ap.add_argument("--scales", default="1,0.3,0.1", help="item-prior scales; the first is the default")
    ap.add_argument("--workers", type=int, default=2, help="joblib worker processes, one fold each (default 2)")
    args = ap.parse_args()
    args.banks = ",".join(_checks.banks(ap, "--banks", args.banks, trials_ok=True))
    _checks.workers(ap, args.workers)
    scales = _checks.float_list(ap, "--scales", args.scales, 1e-6, 1e6)  # HSPRConfig.item_prior_scale's range
    print(f"scales {scales}: held-out MAE (pp) with HSPR's point | with the blended point | kept by one-SE",
          flush=True)
    jobs = [(b, f) for b in args.banks.split(",") for f in range(4)]
    # each fold printed as it finishes (a trial waited minutes on a silent script)
    for r in Parallel(n_jobs=args.workers, return_as="generator_unordered")(
            delayed(fold_row)(b, f, scales) for b, f in jobs):
        print(f"{r['bank']:14s} fold {r['fold']}  n={r['n']:3d}  hspr {np.round(r['hspr_mae'], 3)}  "
              f"blend {np.round(r['blend_mae'], 3)}  kept {r['kept']}", flush=True)


if __name__ == "__main__":
    main()
