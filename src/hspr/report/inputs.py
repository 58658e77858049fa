"""Report input: reading and checking replay results (run records), shared constants."""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from ..data.banks import BANK_ORDER
from ..errors import HsprError
from ..fileio import read_json

#: bank label of the equal-weight macro rows in :func:`comparison_table`
MACRO = "macro"
#: label of the pooled-over-banks rows in :func:`paired_analysis`
POOLED = "pooled"
#: the main budget fraction of the protocol (HSPR_SPEC section 7); figures (b), (c) use the closest one
MAIN_FRACTION = 0.10
#: nominal level of the ``lower`` / ``upper`` interval stored by ``hspr replay``
NOMINAL_LEVEL = 0.90
#: half-width of the band in the estimate-vs-truth figure, pp
BAND_PP = 2.0
#: columns every run record needs
REQUIRED_COLUMNS = ("bank", "method", "seed", "target", "budget", "budget_fraction", "estimate", "truth")
#: a run is identified by these; a later file's run replaces an earlier one with the same key
RUN_KEY = ["bank", "method", "budget_fraction", "target", "seed"]
#: Wilcoxon signed-rank zero handling: 'wilcox' drops zero differences before ranking
ZERO_METHOD = "wilcox"
#: decimals shown (and used for best / second-best ties) for pp errors and tau_b
DECIMALS = 3

_EXTRA_LEVEL = re.compile(r"^lower_(\d+(?:\.\d+)?)$")



class ReportError(HsprError):
    """A results file or runs table the report cannot use; the message names the file."""


class ReportWarning(UserWarning):
    """Something the report changed or skipped (e.g. duplicate runs across files)."""





# --------------------------------------------------------------------------------------------
# input


def runs_frame(obj, source: str = "<runs>") -> pd.DataFrame:
    """Validate one parsed results object and return its runs as a DataFrame.

    Parameters
    ----------
    obj : dict
        A parsed ``hspr replay --out`` file: ``{"runs": [record, ...], "summary": [...], ...}``.
    source : str
        Name used in error messages (the file path).

    Returns
    -------
    pandas.DataFrame
        One row per run with at least :data:`REQUIRED_COLUMNS` (``estimate``, ``truth``,
        ``lower``, ``upper`` on the 0-1 scale) and ``source_file``.

    Raises
    ------
    ReportError
        When the object has no ``runs``, an unknown layout, missing columns or non-numeric scores.
    """
    expect = "expected the JSON object written by `hspr replay --out` (keys 'runs' and 'summary')"
    if not isinstance(obj, dict):
        raise ReportError(f"{source}: unknown layout: the top level is a JSON {type(obj).__name__}; {expect}")
    if "runs" not in obj:
        keys = ", ".join(map(repr, list(obj)[:8])) or "none"
        hint = " (a summary alone cannot give paired statistics)" if "summary" in obj else ""
        raise ReportError(f"{source}: no 'runs' in the results file (keys found: {keys}){hint}; {expect}")
    runs = obj["runs"]
    if not isinstance(runs, list) or not all(isinstance(r, dict) for r in runs):
        raise ReportError(f"{source}: unknown layout: 'runs' must be a list of run records (objects); {expect}")
    if not runs:
        raise ReportError(f"{source}: 'runs' is empty; nothing to report")
    df = pd.DataFrame(runs)
    missing = [c for c in REQUIRED_COLUMNS if c not in df.columns]
    if missing:
        raise ReportError(f"{source}: run records lack {missing} (the first has keys {sorted(runs[0])}); {expect}")
    for col in ("estimate", "truth", "budget_fraction", "lower", "upper"):
        if col in df.columns:
            vals = pd.to_numeric(df[col], errors="coerce")
            bad = vals.isna() & df[col].notna()
            if bad.any() or (col in ("estimate", "truth", "budget_fraction") and vals.isna().any()):
                row = int(np.flatnonzero(bad | vals.isna())[0])
                raise ReportError(f"{source}: run {row} has a non-numeric or missing {col!r}: {df[col].iloc[row]!r}")
            df[col] = vals.astype(float)
    if ((df["truth"] < 0) | (df["truth"] > 1)).any():
        raise ReportError(f"{source}: 'truth' outside [0, 1]; runs must be on the 0-1 scale (not %)")
    df["budget_fraction"] = df["budget_fraction"].round(6)
    df["source_file"] = source
    return df


def read_results(paths: str | Path | Sequence[str | Path]) -> pd.DataFrame:
    """Read and concatenate the runs of one or more results files.

    Parameters
    ----------
    paths : path or sequence of paths
        ``hspr replay --out`` files, e.g. a budget sweep and a main run.

    Returns
    -------
    pandas.DataFrame
        The runs of every file (see :func:`runs_frame`). A run (same bank, method,
        budget_fraction, target and seed) present in several files is kept from the file given
        last; a :class:`ReportWarning` says how many were replaced.

    Raises
    ------
    ReportError
        Naming the file that cannot be read, is not JSON, or has no usable ``runs``.
    """
    if isinstance(paths, (str, Path)):
        paths = [paths]
    if not paths:
        raise ReportError("no results file given")
    frames = []
    for p in map(Path, paths):
        obj = read_json(p, ReportError, hint="expected the file written by `hspr replay --out`")
        frames.append(runs_frame(obj, str(p)))
    runs = pd.concat(frames, ignore_index=True, sort=False)
    dup = runs.duplicated(RUN_KEY, keep="last")
    if dup.any():
        warnings.warn(f"{int(dup.sum())} run(s) appear in more than one place (same bank, method, budget, target, "
                      "seed); the copy from the file given last is used", ReportWarning, stacklevel=2)
        runs = runs.loc[~dup].reset_index(drop=True)
    return runs


def _check_runs(runs: pd.DataFrame, source: str = "runs") -> pd.DataFrame:
    if not isinstance(runs, pd.DataFrame):
        runs = pd.DataFrame(list(runs))
    missing = [c for c in REQUIRED_COLUMNS if c not in runs.columns]
    if missing:
        raise ReportError(f"{source}: lacks column(s) {missing}; needs {list(REQUIRED_COLUMNS)}")
    if runs.empty:
        raise ReportError(f"{source}: no runs")
    return runs


def is_shift_protocol(banks: pd.Series) -> pd.Series:
    """True for shift-protocol labels (``bank/protocol``, e.g. ``verified/bash-only``): shown, but
    left out of the macro MAE, which averages the 4-fold banks only."""
    return banks.astype(str).str.contains("/", regex=False)


def bank_order(banks: Iterable[str]) -> list[str]:
    """Banks in the paper's order (lite, verified, full, pro), then others by first appearance."""
    seen = list(dict.fromkeys(banks))
    return [b for b in BANK_ORDER if b in seen] + [b for b in seen if b not in BANK_ORDER]


def _methods(runs: pd.DataFrame) -> list[str]:
    return list(dict.fromkeys(runs["method"]))


def _dense_rank(values: pd.Series, higher_is_better: bool) -> pd.Series:
    """1 = best; equal values at the shown precision share a rank; NaN stays NaN."""
    v = values.astype(float).round(DECIMALS)
    return v.rank(method="dense", ascending=not higher_is_better)


def _closest_fraction(runs: pd.DataFrame, target: float = MAIN_FRACTION) -> float:
    fr = np.array(sorted(runs["budget_fraction"].unique()))
    return float(fr[np.argmin(np.abs(fr - target))])
