"""Replay metrics (HSPR_SPEC section 7, Eqs. 17-18): MAE, MaxErr, Kendall tau_b, interval coverage."""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats


def seed_metrics(est: np.ndarray, truth: np.ndarray) -> dict:
    """Metrics over the targets of one (bank, method, budget, seed).

    Parameters
    ----------
    est, truth : arrays of shape (n_targets,), 0-1 scale.

    Returns
    -------
    dict with ``mae_pp`` (Eq. 17), ``maxerr_pp`` (Eq. 18) in percentage points and
    ``kendall_tau_b`` (ties counted; NaN when either side is constant).
    """
    est = np.asarray(est, float)
    truth = np.asarray(truth, float)
    err = np.abs(est - truth)
    tau = stats.kendalltau(est, truth, variant="b").statistic if len(est) > 1 else np.nan
    return {"mae_pp": 100 * err.mean(), "maxerr_pp": 100 * err.max(), "kendall_tau_b": float(tau)}


def summarize(runs: pd.DataFrame) -> pd.DataFrame:
    """Seed-averaged metrics per (bank, method, budget).

    ``runs`` needs columns bank, method, budget_fraction, budget, seed, target, estimate, truth,
    and optionally lower/upper (the 90 % interval). Metrics are computed per seed over all
    targets of the 4 folds, then averaged over seeds (HSPR_SPEC section 7). Coverage is the
    fraction of runs whose interval holds the truth; width is in pp.
    """
    rows = []
    keys = ["bank", "method", "budget_fraction"]
    for key, g in runs.groupby(keys, sort=False):
        per_seed = [seed_metrics(s["estimate"].to_numpy(), s["truth"].to_numpy()) for _, s in g.groupby("seed")]
        row = dict(zip(keys, key))
        row["budget"] = int(g["budget"].iloc[0])
        for m in ("mae_pp", "maxerr_pp", "kendall_tau_b"):
            vals = np.array([p[m] for p in per_seed], dtype=float)
            ok = np.isfinite(vals)  # tau_b is undefined (NaN) when every truth ties
            row[m] = float(vals[ok].mean()) if ok.any() else float("nan")
        row["n_targets"] = int(g["target"].nunique())
        row["n_seeds"] = int(g["seed"].nunique())
        if "lower" in g and g["lower"].notna().all():
            lo, hi, t = g["lower"].to_numpy(float), g["upper"].to_numpy(float), g["truth"].to_numpy(float)
            row["coverage_90"] = float(np.mean((lo - 1e-12 <= t) & (t <= hi + 1e-12)))
            row["mean_width_pp"] = float(100 * np.mean(hi - lo))
        else:
            row["coverage_90"] = None
            row["mean_width_pp"] = None
        rows.append(row)
    return pd.DataFrame(rows)
