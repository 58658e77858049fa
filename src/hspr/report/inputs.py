"""Report input: reading and checking replay results (run records), shared constants."""

from __future__ import annotations

import json
import os
import re
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from ..data.banks import BANK_ORDER
from ..errors import HsprError, shorten
from ..fileio import read_json, readable_name
from ..harness import is_session_file
from ..methods import current_label

#: bank label of the equal-weight macro rows in :func:`comparison_table`
MACRO = "macro"
#: label of the pooled-over-banks rows in :func:`paired_analysis`
POOLED = "pooled"
#: the main budget fraction of the protocol (HSPR_SPEC section 7); figures (b), (c) use the closest one
MAIN_FRACTION = 0.10
#: half-width of the band in the estimate-vs-truth figure, pp
BAND_PP = 2.0
#: columns every run record needs
REQUIRED_COLUMNS = ("bank", "method", "seed", "target", "budget", "budget_fraction", "estimate", "truth")
#: estimates and interval ends outside this range are not scores on the 0-1 scale (a method may
#: step a little outside [0, 1], e.g. an inverse-probability-weighted estimate)
SCALE_RANGE = (-1.0, 2.0)
#: a run is identified by these; a later file's run replaces an earlier one with the same key
RUN_KEY = ("bank", "method", "budget_fraction", "target", "seed")
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

#: run-record fields and what each must hold (checked per run by :func:`runs_frame`)
_TEXT_FIELDS = ("bank", "method", "target")
_NUMBER_FIELDS = ("estimate", "truth", "budget_fraction")
_INTEGER_FIELDS = ("budget", "seed")
#: optional text fields of a run (replay writes them; a report reads them)
_OPTIONAL_TEXT_FIELDS = ("protocol", "settings", "matrix_digest")
#: interval columns: ``lower`` / ``upper`` and the ``lower_<pct>`` / ``upper_<pct>`` pairs
_INTERVAL_COLUMN = re.compile(r"^(?:lower|upper)(_\d+(?:\.\d+)?)?$")

#: integers beyond this lose precision as floats
_MAX_INT = 2 ** 53
_FROM_REPLAY = "the file should come from `hspr replay --out` (fix the run or write the file again)"


def _show(value) -> str:
    """A field value as JSON (null, true, "x"), cut to 40 characters for the error message."""
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    return shorten(text)


def _refuse(source: str, runs: list[dict], bad, field: str, need: str) -> None:
    """Raise :class:`ReportError` naming the file, the first run flagged in ``bad`` (0-based), ``field`` and what it needs."""
    bad = np.asarray(bad, dtype=bool)
    if not bad.any():
        return
    i = int(np.flatnonzero(bad)[0])
    got = "it is missing" if field not in runs[i] else f"it is {_show(runs[i][field])}"
    more = f" ({int(bad.sum()) - 1} more run(s) like it)" if bad.sum() > 1 else ""
    raise ReportError(f"{source}: run {i}: {field!r} must be {need}, but {got}{more}; {_FROM_REPLAY}")


def _number(value) -> float:
    """A JSON number as a float; NaN for null, a missing field, booleans, text, lists or an overflowing integer."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        return np.nan
    try:
        return float(value)
    except OverflowError:
        return np.nan


def _is_null(value) -> bool:
    """JSON null (None) or a NaN float, both read as 'no value'."""
    return value is None or (isinstance(value, float) and np.isnan(value))


def _numbers(runs: list[dict], field: str) -> np.ndarray:
    """Float values of ``field`` over the runs (NaN where it is not a JSON number)."""
    return np.array([_number(r.get(field)) for r in runs], dtype=float)


def _check_fields(runs: list[dict], df: pd.DataFrame, source: str) -> None:
    """Every run has a non-empty string bank / method / target, finite numbers estimate / truth /
    budget_fraction and integer budget / seed; the numeric columns of ``df`` are set to their types."""
    for field in _TEXT_FIELDS:
        ok = np.array([isinstance(r.get(field), str) and r[field].strip() != "" for r in runs], dtype=bool)
        _refuse(source, runs, ~ok, field, "a non-empty string")
    for field in _NUMBER_FIELDS:
        x = _numbers(runs, field)
        _refuse(source, runs, ~np.isfinite(x), field, "a finite number")
        df[field] = x
    for field in _INTEGER_FIELDS:
        x = _numbers(runs, field)
        ok = np.isfinite(x)
        ok[ok] = x[ok] == np.round(x[ok])
        _refuse(source, runs, ~ok, field, "an integer")
        _refuse(source, runs, x < 0, field, "an integer >= 0")
        # a hostile trial was told that 2**80 is not an integer
        _refuse(source, runs, x > _MAX_INT, field, f"an integer of at most {_MAX_INT} (2^53, the largest a JSON reader "
                "keeps exactly)")
        df[field] = x.astype(np.int64)
    # optional fields a hand edit can break (an audit: a list here gave a TypeError traceback)
    for field in _OPTIONAL_TEXT_FIELDS:
        if field in df.columns:
            ok = np.array([_is_null(r.get(field)) or isinstance(r.get(field), str) for r in runs], dtype=bool)
            _refuse(source, runs, ~ok, field, "a string or null")
    if "n_queried" in df.columns:
        x = _numbers(runs, "n_queried")
        given = np.array([not _is_null(r.get("n_queried")) for r in runs], dtype=bool)
        ok = ~given | (np.isfinite(x) & (x >= 0) & (np.abs(x) <= _MAX_INT))
        ok[ok & given] = x[ok & given] == np.round(x[ok & given])
        _refuse(source, runs, ~ok, "n_queried", "an integer >= 0 or null")
        df["n_queried"] = x


def _check_intervals(runs: list[dict], df: pd.DataFrame, source: str) -> None:
    """``lower`` / ``upper`` (and each ``lower_<pct>`` / ``upper_<pct>`` pair): numbers or null, and in
    every run both present or both absent; the columns of ``df`` are set to floats (NaN = no interval)."""
    suffixes = dict.fromkeys(m.group(1) or "" for m in map(_INTERVAL_COLUMN.match, map(str, df.columns)) if m)
    for suffix in suffixes:
        lo, hi = f"lower{suffix}", f"upper{suffix}"
        x = {}
        for field in (lo, hi):
            x[field] = _numbers(runs, field)
            given = np.array([not _is_null(r.get(field)) for r in runs], dtype=bool)
            _refuse(source, runs, given & np.isnan(x[field]), field, "a number or null")
        for field, other in ((lo, hi), (hi, lo)):
            _refuse(source, runs, ~np.isnan(x[other]) & np.isnan(x[field]), field,
                    f"a number too, since the run has {other!r} (an interval needs both ends or neither)")
        _refuse(source, runs, x[lo] > x[hi], lo, f"at most {hi!r} (an interval's lower end)")
        df[lo], df[hi] = x[lo], x[hi]


def _note_odd_estimates(runs: list[dict], df: pd.DataFrame, source: str) -> None:
    """ReportWarning naming the first run (0-based) whose estimate lies outside [0, 1], or outside its own 90 %
    interval: no shipped method's does (a test asserts it across a replay), so such a run is hand-edited or a method of
    one's own misbehaving. A hostile trial: an estimate edited to 1.7 moved a method's MaxErr to 135 pp, said nowhere.
    Both are taken as they are (:data:`SCALE_RANGE` refuses what cannot be a score)."""
    est = df["estimate"].to_numpy(dtype=float)
    lo = df["lower"].to_numpy(dtype=float) if "lower" in df.columns else np.full(len(df), np.nan)
    hi = df["upper"].to_numpy(dtype=float) if "upper" in df.columns else np.full(len(df), np.nan)
    for bad, what in (((est < -1e-9) | (est > 1 + 1e-9), "outside [0, 1]"),  # as the interval's: 1 + 1e-12 is 1
                      (~np.isnan(lo) & ((est < lo - 1e-9) | (est > hi + 1e-9)), "outside its own 90 % interval")):
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            more = f" ({int(bad.sum()) - 1} more run(s) like it)" if bad.sum() > 1 else ""
            interval = "" if np.isnan(lo[i]) else f" [{lo[i]:.4g}, {hi[i]:.4g}]"
            warnings.warn(f"{source}: run {i} ({runs[i].get('method')!r}, target {runs[i].get('target')!r}): estimate "
                          f"{est[i]:.4g}{interval} lies {what}{more}; no method hspr ships gives that: check whether the "
                          "file was edited, or the method that wrote it", ReportWarning, stacklevel=3)


def runs_frame(obj, source: str = "<runs>") -> pd.DataFrame:
    """Validate one parsed results object and return its runs as a DataFrame.

    Parameters
    ----------
    obj : dict or list of dict
        A parsed ``hspr replay --out`` file: ``{"runs": [record, ...], "summary": [...], ...}``, or
        the list of run records :func:`hspr.replay.replay` returns.
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
        When the object has no ``runs``, an unknown layout or missing columns, or naming the run
        (0-based) and field when a run lacks a field or holds the wrong type: bank / method /
        target must be non-empty strings, estimate / truth / budget_fraction finite numbers
        (truth in [0, 1], estimate and interval ends in :data:`SCALE_RANGE`, budget_fraction in
        (0, 1]), budget / seed integers, lower / upper (and each lower_<pct> / upper_<pct>
        pair) both numbers or both absent / null, and ``queried`` (when a list) distinct ids, at
        most ``budget`` of them.
    """
    expect = "expected the JSON object written by `hspr replay --out` (keys 'runs' and 'summary')"
    if isinstance(obj, list) and obj and all(isinstance(r, dict) and "method" in r for r in obj):
        obj = {"runs": obj}  # hspr.replay.replay's records, in memory (an API trial: refused as 'a JSON list')
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
    _check_fields(runs, df, source)
    _check_intervals(runs, df, source)
    _refuse(source, runs, (df["truth"] < 0) | (df["truth"] > 1), "truth",
            "on the 0-1 scale, in [0, 1] (not %)")
    # a method may step a little outside [0, 1] (an inverse-probability-weighted estimate can),
    # but not by a whole score: such a value is a percentage or a broken record
    for col in ["estimate"] + [c for c in df.columns if _INTERVAL_COLUMN.match(str(c))]:
        _refuse(source, runs, (df[col] < SCALE_RANGE[0]) | (df[col] > SCALE_RANGE[1]), col,
                f"a score on the 0-1 scale (between {SCALE_RANGE[0]:g} and {SCALE_RANGE[1]:g}; not %)")
    _refuse(source, runs, (df["budget_fraction"] <= 0) | (df["budget_fraction"] > 1), "budget_fraction",
            "a share of the tasks, in (0, 1]")
    _note_odd_estimates(runs, df, source)
    if "queried" in df.columns:  # a hostile trial: one id eight times, or more ids than the budget, passed
        q = [r.get("queried") for r in runs]
        _refuse(source, runs, [isinstance(x, list) and len(set(map(str, x))) < len(x) for x in q], "queried",
                "a list of distinct task ids (each task is queried once)")
        _refuse(source, runs, [isinstance(x, list) and len(x) > b for x, b in zip(q, df["budget"])], "queried",
                "a list of at most 'budget' task ids")
    df["budget_fraction"] = df["budget_fraction"].round(6)
    df["method"] = df["method"].map(current_label)
    if "protocol" in df.columns:  # an audit: `replay(..., targets=...)`'s runs keep the plain bank label (the CLI
        # names them bank/...), so a report pooled them into the bank's own row and its macro MAE
        proto = df["protocol"]
        own = proto.notna() & (proto != "folds") & ~df["bank"].str.contains("/", regex=False)
        df.loc[own, "bank"] = df.loc[own, "bank"] + "/" + proto[own].astype(str)
    df["source_file"] = source
    return df


def _first_line(p: Path) -> str:
    """The first line of text file ``p`` ('' when it cannot be read: the reader's own error says why)."""
    try:
        with open(p, encoding="utf-8-sig", errors="replace") as fh:
            return fh.readline(1 << 16).strip()
    except OSError:
        return ""


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
        last; a :class:`ReportWarning` says how many were replaced, and another names each bank
        and budget whose methods ran on different targets.

    Raises
    ------
    ReportError
        Naming the file that cannot be read, is not JSON, or has no usable ``runs``; naming the
        files whose runs of one bank come from different matrices; or naming the files and
        methods where one target of a bank has different true scores.
    """
    if isinstance(paths, (str, Path)):
        paths = [paths]
    paths = list(paths)
    if not paths:
        raise ReportError("no results file given")
    bad = next((p for p in paths if not isinstance(p, (str, Path))), None)
    if bad is not None:  # an API trial: replay()'s records given here failed inside pathlib
        raise ReportError(f"read_results takes paths of results files, got a {type(bad).__name__}"
                          + (": for replay()'s records in memory use runs_frame(records)" if isinstance(bad, dict) else ""))
    # the same file given twice adds nothing (its runs are copies of themselves), and made the one-file check
    # count the two copies as one file (a re-trial): keep each file's last place
    last = {os.path.realpath(p): k for k, p in enumerate(paths)}
    paths = [p for k, p in enumerate(paths) if last[os.path.realpath(p)] == k]
    frames, envs = [], {}
    for p in map(Path, paths):
        if is_session_file(p):  # a trial: "invalid JSON at line 2, column 1 (Extra data)"
            raise ReportError(f"{p}: this is an hspr live session file, not the results of `hspr replay --out`; "
                              f"`hspr live status --session {p}` shows its estimate")
        expected = "expected the file written by `hspr replay --out`"
        if p.suffix.lower() in (".csv", ".tsv"):  # a hostile trial: a replay --csv summary was 'invalid JSON at line 1'
            kind = ("a table of seed-averaged metrics (replay --csv, or a report's comparison.csv)"
                    if _first_line(p).startswith("budget_fraction,") else "a bank, or another table")
            raise ReportError(f"{p}: a CSV, {kind}, not the results of `hspr replay --out`: give the JSON file that "
                              "--out wrote (results.json by default); the report needs its per-run records")
        obj = read_json(p, ReportError, hint=expected, fix=expected)
        frames.append(runs_frame(obj, str(p)))
        envs[str(p)] = obj.get("environment") if isinstance(obj, dict) else None
        cut = obj.get("interrupted") if isinstance(obj, dict) else None
        if isinstance(cut, dict):  # a re-trial: a kept file's partial runs were reported as "all targets of 4 folds"
            jobs = (f" ({cut.get('jobs_done')} of the {cut.get('jobs')} jobs of {cut.get('label')})"
                    if cut.get("jobs") is not None else "")
            warnings.warn(f"{p} holds the runs an interrupted replay had finished{jobs}: a bank it had not reached is "
                          "absent, and the one it was replaying covers only the targets, folds and seeds of the jobs "
                          "done; replay again for the whole table", ReportWarning, stacklevel=2)
    runs = pd.concat(frames, ignore_index=True, sort=False)
    for col in ("bank", "method", "target"):  # a label made from a file name that is no UTF-8 (a trial: a traceback)
        if col in runs.columns:
            runs[col] = runs[col].map(lambda v: readable_name(v) if isinstance(v, str) else v)
    _check_one_matrix(runs)
    _warn_one_matrix_two_labels(runs)
    _check_one_truth(runs)
    _refuse_other_settings(runs)
    _refuse_differing_copies_in_one_file(runs)
    dup = runs.duplicated(list(RUN_KEY), keep="last")
    if dup.any():
        every = runs[runs.duplicated(list(RUN_KEY), keep=False)]
        files = ", ".join(dict.fromkeys(every["source_file"]))
        differing = _differing(every, list(RUN_KEY))
        differ = int(differing.sum())
        # the files holding a run whose copies differ (a re-trial: a file holding none of them was named too)
        keys = set(differing[differing].index)
        holding = list(dict.fromkeys(f for f, *k in every[["source_file", *RUN_KEY]].itertuples(index=False)
                                     if tuple(k) in keys))
        what = (f"; {differ} of them differ between copies (estimate, intervals or queried tasks), so the table depends on the order "
                "of the files: report one copy" + _environments_differ(envs, holding) if differ else "; the copies are identical")
        warnings.warn(f"{int(dup.sum())} run(s) appear in more than one place (same bank, method, budget, target, "
                      f"seed; in {files}); the copy from the file given last is used{what}", ReportWarning, stacklevel=2)
        runs = runs.loc[~dup].reset_index(drop=True)
    _warn_unequal_targets(runs)
    _warn_uneven_seeds(runs)
    _warn_one_budget_two_fractions(runs)
    _warn_partial_intervals(runs)
    return runs


#: the ``environment`` fields of a results file that can change a run (hspr, the libraries, the processor and its BLAS)
_RUN_ENVIRONMENT = ("hspr", "numpy", "scipy", "scikit-learn", "processor", "blas")


def _environments_differ(envs: dict[str, dict | None], files: list[str]) -> str:
    """'; the files holding them record different ...' naming the ``environment`` fields of :data:`_RUN_ENVIRONMENT` on which
    ``files`` disagree (each file's value, cut to 60 characters), or '' (a hostile trial: copies that differed because
    they were made on two processors were only said to differ). A file without a field (older than it) is left out of
    that field."""
    said = []
    for key in _RUN_ENVIRONMENT:
        have = {f: shorten(str(envs[f][key]), 60) for f in files
                if isinstance(envs.get(f), dict) and envs[f].get(key) is not None}
        if len(set(have.values())) > 1:
            said.append(f"{key} " + ", ".join(f"{v!r} in {f}" for f, v in have.items()))
    if not said:
        return ""
    return ("; the files holding them record different " + "; ".join(said) + ", which can move the runs of the methods fitted by "
            "an optimiser (docs/replay.md, 'The same runs elsewhere')")


#: the values of a run that two copies of it may not disagree on (a re-trial: copies that differed only in
#: the 50 % interval were called identical, and the 50 % coverage then depended on the order of the runs)
RUN_VALUES = ("estimate", "lower", "upper", "lower_50", "upper_50", "mean", "median", "truth", "queried", "budget")


def _same_form(value) -> str:
    """A run value as text two copies of one value share: a missing value (None, or NaN where a file
    whose column also holds numbers was concatenated: a trial's identical copies of a method without a
    median were told they differ) is one text, and a number is its float's repr whatever its type."""
    if value is None or (isinstance(value, (float, np.floating)) and np.isnan(value)):
        return "missing"
    if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
        return repr(float(value))
    return repr(list(value)) if isinstance(value, (list, tuple, np.ndarray)) else repr(value)


def _differing(runs: pd.DataFrame, key: list[str]) -> pd.Series:
    """Per group of ``key``, whether its rows differ in any of :data:`RUN_VALUES` (:func:`_same_form`)."""
    cols = [c for c in RUN_VALUES if c in runs.columns]
    vals = runs[cols].apply(lambda c: c.map(_same_form) if c.dtype == object else c)
    return vals.groupby([runs[k] for k in key], sort=False, dropna=False).nunique(dropna=False).gt(1).any(axis=1)


def _refuse_differing_copies_in_one_file(runs: pd.DataFrame) -> None:
    """ReportError for a run (bank, method, budget, target, seed) that one file holds twice with
    different values (:data:`RUN_VALUES`): no file order decides which copy counts, and keeping one by row
    order made the tables depend on the order of the runs (a hostile trial: hspr's MAE 3.677 or 2.236
    for the same file reversed). Identical copies, and copies in different files (the file given
    last wins: a re-run), are handled by :func:`read_results`."""
    key = ["source_file", *RUN_KEY]
    twice = runs[runs.duplicated(key, keep=False)]
    if twice.empty:
        return
    differ = _differing(twice, key)
    if not differ.any():
        return
    file, bank, method, frac, target, seed = first_key = differ[differ].index[0]
    rows = twice.groupby(key, sort=False, dropna=False).groups[first_key]
    first = runs.loc[runs["source_file"] == file].index.min()
    where = " and ".join(f"runs[{i - first}]" for i in rows)
    raise ReportError(f"{file}: {where} are the same run ({method!r} on {bank!r}, budget {frac:g}, target {target!r}, "
                      f"seed {seed}) with different values (estimate, intervals or queried tasks; {int(differ.sum())} such "
                      "run(s) in all), so the tables would depend on which copy is read: delete the wrong copies, or "
                      "report each experiment from its own file")


def _warn_partial_intervals(runs: pd.DataFrame) -> None:
    """ReportWarning for a method, bank and budget where some runs have a 90 % interval and some
    none (a hand edit, or files of two versions): coverage and width are over the runs that have
    one. A trial: one run without an interval had blanked the method's coverage, and the legend
    then said the method gives no interval."""
    if "lower" not in runs or "upper" not in runs:
        return
    has = runs["lower"].notna() & runs["upper"].notna()
    share = has.groupby([runs["bank"], runs["method"], runs["budget_fraction"]], sort=False).agg(["sum", "size"])
    for (bank, method, frac), (n_with, n) in share.iterrows():
        if 0 < n_with < n:
            warnings.warn(f"{method!r} on bank {bank!r} at budget {frac:g}: {n - n_with} of {n} runs have no 90 % "
                          f"interval; its coverage and width are over the other {n_with}", ReportWarning, stacklevel=3)


def _refuse_other_settings(runs: pd.DataFrame) -> None:
    """ReportError when runs of one bank and method label were made with different settings
    (their ``settings`` digests, written by replay since 2026-12-04, differ): two experiments
    under one label, which the report would average in one row, or of which it would keep one
    where the runs overlap (hostile trials: two ``--config cfg.json`` of different folders, both
    labelled ``hspr[config=cfg]``, with the same query seeds and then with other seeds)."""
    if "settings" not in runs.columns:
        return
    known = runs[runs["settings"].notna() & (runs["settings"] != "")]
    kinds = known.groupby(["bank", "method"], sort=False)["settings"].nunique()
    clash = kinds[kinds > 1]
    if clash.empty:
        return
    bank, method = clash.index[0]
    rows = known[(known["bank"] == bank) & (known["method"] == method)]
    files = ", ".join(f"{f} (settings {d})" for f, d in
                      rows[["source_file", "settings"]].drop_duplicates().itertuples(index=False, name=None))
    raise ReportError(f"runs of {method!r} on {bank!r} in {files} share their label but were made with different "
                      "settings (another config file of the same name, another --stop-min-tasks, ...): the report "
                      "would mix two experiments in one row. Give them distinct labels (rename the config file, or "
                      "--bank LABEL), or report them separately")


def _warn_unequal_targets(runs: pd.DataFrame) -> None:
    """ReportWarning for each bank and budget whose methods were replayed on different target sets.

    Their MAEs average over different agents (e.g. one run before a bank gained rows, one after),
    so the table's ranking of them is not a comparison; the paired analysis uses the common targets.
    """
    sets = runs.groupby(["bank", "budget_fraction", "method"], sort=False)["target"].agg(frozenset)
    for (bank, frac), per_method in sets.groupby(level=[0, 1], sort=False):
        if per_method.nunique() > 1:
            counts = ", ".join(f"{m} {len(t)}" for (_, _, m), t in per_method.items())
            every = frozenset().union(*per_method)
            # a hostile trial: with equal counts the note did not say which target differs
            lacking = next((f"; e.g. {m} has no run on {min(every - t)!r}" for (_, _, m), t in per_method.items()
                            if every - t), "")
            warnings.warn(f"bank {bank!r} at budget {frac:g}: the methods were replayed on different targets ({counts} "
                          f"targets{lacking}): their MAEs average over different agents, so the table does not compare "
                          "them; replay them on the same bank and folds", ReportWarning, stacklevel=3)


def _warn_uneven_seeds(runs: pd.DataFrame) -> None:
    """ReportWarning for a method, bank and budget whose targets were replayed on different query seeds, in
    number or not (a run lost from a file, or an interrupted replay): the per-seed metrics of a seed some
    targets lack are over fewer targets (a hostile trial: one seed's run removed for one target passed without
    a word; a re-trial: seed 0 removed for half the targets and seed 2 for the rest, as many seeds each)."""
    sets = runs.groupby(["bank", "budget_fraction", "method", "target"], sort=False)["seed"].agg(frozenset)
    for (bank, frac, method), per_target in sets.groupby(level=[0, 1, 2], sort=False):
        if per_target.nunique() < 2:
            continue
        n = per_target.map(len)
        if n.nunique() > 1:
            few = n[n < n.max()]
            which = (f"{len(few)} of {len(n)} targets have fewer query seeds than the others ({few.index[0][3]!r}: "
                     f"{few.iloc[0]} of {n.max()})")
        else:  # as many seeds each, not the same ones (a re-trial: seed 0 dropped for half the targets, 2 for the rest)
            first, other = per_target.iloc[0], next(s for s in per_target if s != per_target.iloc[0])
            which = (f"its targets were replayed on different query seeds ({per_target.index[0][3]!r}: "
                     f"{', '.join(map(str, sorted(first)))}; another: {', '.join(map(str, sorted(other)))})")
        warnings.warn(f"{method!r} on bank {bank!r} at budget {frac:g}: {which}; a run is missing from the results, so "
                      "the per-seed MAE and MaxErr of the seeds some targets lack are over fewer targets, and the bank's "
                      "methods are not ranked: replay them again, or report the complete files", ReportWarning,
                      stacklevel=3)


def _warn_one_budget_two_fractions(runs: pd.DataFrame) -> None:
    """ReportWarning for a bank whose runs of one task budget B carry several budget fractions (0.1 and
    0.1001 of 80 tasks are both 8): the tables are per fraction, so one experiment is split over two
    tables and its seeds are not pooled (a hostile trial: three tables, each 'B = 8 on b')."""
    fracs = runs.groupby(["bank", "budget"], sort=False)["budget_fraction"].unique()
    for (bank, budget), f in fracs.items():
        if len(f) > 1:
            shown = " and ".join(f"{100 * x:g} %" for x in sorted(f))
            warnings.warn(f"bank {bank!r}: budgets {shown} are all B = {budget} tasks there, and the tables keep them "
                          f"apart (one per budget fraction), so their runs are not pooled; replay them with one "
                          "--budget to compare them in one table", ReportWarning, stacklevel=3)


def _check_one_matrix(runs: pd.DataFrame) -> None:
    """ReportError when the runs of one bank label come from different matrices (their
    ``matrix_digest`` differs; runs written before it was recorded are not checked, and a
    ReportWarning says so when the label also holds runs with a digest). A re-trial
    pooled ``m1.csv`` and ``sub/m1.csv``, two matrices of one file name with no agent in common, as
    one bank: no truth differed, so :func:`_check_one_truth` could not see it."""
    if "matrix_digest" not in runs.columns:
        return
    n = runs.dropna(subset=["matrix_digest"]).groupby("bank", sort=False)["matrix_digest"].nunique()
    if not (n > 1).any():
        # a hostile trial: runs stripped of their digest were pooled with another matrix's under one label
        bare = runs["matrix_digest"].isna()
        mixed = [b for b in n.index if bare[runs["bank"] == b].any()]
        if mixed:
            files = ", ".join(dict.fromkeys(runs.loc[bare & runs["bank"].isin(mixed), "source_file"].astype(str)))
            warnings.warn(f"bank {mixed[0]!r} holds runs with a matrix digest and {int(bare[runs['bank'] == mixed[0]].sum())} "
                          f"without (in {files}: written before digests were recorded, or edited), so they cannot be "
                          "checked to come from the same matrix; report them apart if they may not", ReportWarning,
                          stacklevel=3)
        return
    bank = n[n > 1].index[0]
    sub = runs[runs["bank"] == bank].dropna(subset=["matrix_digest"]).drop_duplicates("matrix_digest")
    where = "; ".join(f"{r.matrix_digest} in {r.source_file}" for r in sub.itertuples())
    raise ReportError(f"bank {bank!r} holds runs of different matrices (matrix digests {where}): give one of them "
                      "another label (replay --matrix FILE --bank LABEL), or report them apart")


def _warn_one_matrix_two_labels(runs: pd.DataFrame) -> None:
    """ReportWarning when two bank labels hold runs of one matrix and protocol for the same target,
    method and budget: the macro MAE and the pooled paired analysis count those runs once per label
    (a trial: a copy of a matrix with its rows shuffled, replayed under its own file name, moved the
    macro MAE from 2.54 to 2.65 pp with no word; a re-trial: labels of other budgets or methods, which
    nothing counts twice, were warned about). Runs written before ``matrix_digest`` was recorded are
    not checked."""
    if "matrix_digest" not in runs.columns:
        return
    cols = ["matrix_digest", "protocol", "target", "method", "budget_fraction"]
    # only labels the macro MAE and the pooled rows count: a shift protocol or variant ('lite[stop 10 pp]') is left
    # out of both (a hostile trial was told to relabel such runs, which nothing counted twice), unless there are only
    # shift protocols, which the pooled paired rows then pool (but for run variants of one of them: pooled_banks)
    counted = runs[runs.groupby("budget_fraction")["bank"].transform(lambda b: b.isin(pooled_banks(b)))]
    known = counted.dropna(subset=["matrix_digest"]).reindex(columns=["bank", *cols]).drop_duplicates()
    known = known.assign(protocol=known["protocol"].fillna("folds"))
    shared = known[known.duplicated(cols, keep=False)]  # a run of the same matrix, protocol, target, method, budget
    for digest, g in shared.groupby("matrix_digest", sort=True):
        same = sorted(set(g["bank"]))
        if len(same) > 1:
            names = " and ".join(map(repr, same[:2])) + (f" (and {len(same) - 2} more)" if len(same) > 2 else "")
            warnings.warn(f"banks {names} hold runs of one matrix (its digest begins {digest}) and protocol for the "
                          f"same targets, methods and budgets ({g.drop_duplicates(cols).shape[0]} of them): the macro "
                          "MAE and the pooled paired analysis count them once per label; report one of them, or "
                          "replay both under one label (--bank LABEL)", ReportWarning, stacklevel=3)


def _check_one_truth(runs: pd.DataFrame) -> None:
    """ReportError unless every target of a bank has one true score over all runs, methods and files.

    Runs of one (bank, target) with different true scores come from different data under one
    bank label (another matrix, or a task subset): their errors cannot be compared, and the
    paired statistics would pair unlike things. Truths equal to 12 decimals count as one.
    """
    key = ["bank", "target"]
    n = runs.assign(_t=runs["truth"].round(12)).groupby(key, sort=False)["_t"].nunique()
    if not (n > 1).any():
        return
    bank, target = n[n > 1].index[0]
    sub = runs[(runs["bank"] == bank) & (runs["target"] == target)]
    seen = sub.assign(pp=(100 * sub["truth"]).round(3)).drop_duplicates("pp")
    where = "; ".join(f"{r.pp:g} % in {r.source_file} (method {r.method}, seed {r.seed})" for r in seen.itertuples())
    subset = "[" in str(bank) and "tasks]" in str(bank)  # 'verified[40 tasks]': two subsets of one size
    fix = ("two task subsets of the same size: report them apart (each subset's runs in its own report)" if subset
           else "give one of them another label (replay --matrix FILE --bank LABEL), or report them apart")
    raise ReportError(f"target {target!r} of bank {bank!r} has different true scores: {where}. The runs come from "
                      f"different data under one bank label (another matrix or task subset): {fix}")


def _check_runs(runs: pd.DataFrame, source: str = "runs") -> pd.DataFrame:
    """The runs as a DataFrame; ReportError for missing columns, no runs, or runs of one bank and
    budget fraction that disagree on the budget (a hand edit: the row showed the first run's)."""
    if not isinstance(runs, pd.DataFrame):
        runs = pd.DataFrame(list(runs))
    missing = [c for c in REQUIRED_COLUMNS if c not in runs.columns]
    if missing:
        raise ReportError(f"{source}: lacks column(s) {missing}; needs {list(REQUIRED_COLUMNS)}")
    if runs.empty:
        raise ReportError(f"{source}: no runs")
    # in-memory runs get the scale check a results file gets (an API trial: estimates x 100 gave MAE 3291.6 pp)
    for col, (lo, hi) in (("truth", (0.0, 1.0)), ("estimate", SCALE_RANGE)):
        x = pd.to_numeric(runs[col], errors="coerce")
        bad = ~x.between(lo, hi)
        if bad.any():
            r = runs[bad].iloc[0]
            raise ReportError(f"{source}: {col} {r[col]!r} of method {r['method']!r}, bank {r['bank']!r}, target "
                              f"{r['target']!r} is not a score on the 0-1 scale (in [{lo:g}, {hi:g}]; not %)")
    taken = sorted({MACRO, POOLED} & set(runs["bank"].astype(str)))
    if taken:  # a hostile trial: such runs collided with the aggregate rows (the CLI refuses the labels)
        rows = runs[runs["bank"].astype(str) == taken[0]]
        where = rows["source_file"].iloc[0] if "source_file" in rows and isinstance(rows["source_file"].iloc[0], str) \
            else source  # the file that holds them (a hostile trial was told 'runs:')
        raise ReportError(f"{where}: runs labelled bank {taken[0]!r}, a name the report gives its aggregate rows; "
                          "replay them under another label")
    n = runs.groupby(["bank", "budget_fraction"], sort=False)["budget"].nunique()
    if (n > 1).any():
        bank, frac = n[n > 1].index[0]
        sub = runs[(runs["bank"] == bank) & (runs["budget_fraction"] == frac)]
        seen = sub.drop_duplicates("budget")
        where = "; ".join(f"{int(r.budget)} in {getattr(r, 'source_file', source)} (method {r.method}, target "
                          f"{r.target}, seed {r.seed})" for r in seen.head(3).itertuples())
        raise ReportError(f"bank {bank!r} at budget fraction {frac:g} has runs of different budgets: {where}. One "
                          "fraction of one bank is one task count; a run was edited or comes from another bank under "
                          "this label")
    return runs


def is_shift_protocol(banks: pd.Series) -> pd.Series:
    """True for labels outside the macro MAE, which averages the plain 4-fold banks only: shift
    protocols and targets files (``bank/protocol``, e.g. ``verified/bash-only``), runs with missing
    cells kept (``bank/missing-kept``) and run variants (``bank[300 tasks]``, ``bank[stop 5 pp]``).
    They are shown as rows of their own."""
    text = banks.astype(str)
    return text.str.contains("/", regex=False) | text.str.contains("[", regex=False)


#: the last bracket of a bank label that marks a run variant of the label before it: ``hspr replay --batch K``'s
#: ``[batch K]`` and ``--stop-width W``'s ``[stop W pp]`` (not a ``--tasks`` subset's ``[150 tasks]``: other tasks)
_VARIANT_SUFFIX = re.compile(r"\[(?:batch \d+|stop [^\]]+ pp)\]$")


def plain_label(bank: str) -> str | None:
    """The bank label a run variant ``bank`` varies (``lite[batch 5]`` -> ``lite``, ``lite[150 tasks][batch 5]`` ->
    ``lite[150 tasks]``, ``lite[stop 5 pp][batch 10]`` -> ``lite[stop 5 pp]``: its last variant bracket
    removed), or None for a label that is no run variant. A hostile re-trial: a ``--tasks`` subset
    (``lite[150 tasks]``) was taken for a variant of ``lite`` and the report refused the pair."""
    m = _VARIANT_SUFFIX.search(str(bank))
    return None if m is None or m.start() == 0 else str(bank)[:m.start()]


def pooled_banks(banks: Iterable[str]) -> list[str]:
    """The banks the pooled paired rows pool: :func:`macro_banks`, else (shift protocols only) those that
    are no run variant of another of ``banks`` (``verified/bash-only[batch 10]`` beside
    ``verified/bash-only``: the same targets again, which :func:`~hspr.report.stats.variant_analysis`
    pairs with them; :func:`plain_label`), else every label. In :func:`bank_order`."""
    ordered = bank_order(banks)
    there = set(ordered)
    return macro_banks(ordered) or [b for b in ordered if plain_label(b) not in there] or ordered


def macro_banks(banks: Iterable[str]) -> list[str]:
    """The banks the macro MAE averages and the pooled paired rows pool: the paper's four banks
    (lite, verified, full, pro) among ``banks`` when any is there, else every plain bank (a
    user's own matrices); never a shift protocol or variant (:func:`is_shift_protocol`). A trial
    saw Pro, Multimodal and Terminal-Bench (a pass-rate bank) averaged into one macro MAE, which
    the README says covers the four paper banks only. In :func:`bank_order`."""
    ordered = pd.Series(bank_order(banks), dtype=object)
    plain = ordered[~is_shift_protocol(ordered)].tolist()
    paper = [b for b in plain if b in BANK_ORDER]
    return paper or plain


def bank_order(banks: Iterable[str]) -> list[str]:
    """Banks in the paper's order (lite, verified, full, pro), each followed by its protocols and
    variants (``verified/bash-only``, ``lite[300 tasks]``) by name, numbers in it by value
    (``lite[batch 5]`` before ``lite[batch 10]``), then other banks by name: the same order whatever
    the order of the files and runs."""
    def key(b) -> tuple:
        base = re.split(r"[/\[]", str(b), maxsplit=1)[0]
        # text and numbers alternate from a text part (maybe empty), so the lists compare part by part
        natural = [int(t) if k % 2 else t for k, t in enumerate(re.split(r"(\d+)", str(b)))]
        return (BANK_ORDER.index(base) if base in BANK_ORDER else len(BANK_ORDER), base, str(b) != base, natural, str(b))

    return sorted(dict.fromkeys(banks), key=key)


def default_baseline(runs: pd.DataFrame, baseline: str | None = None) -> str:
    """``baseline``, or when None the runs' first method label in :func:`_methods`' order (registry
    order of the base name: ``hspr`` when it ran), as ``hspr report`` without ``--baseline``."""
    if baseline is not None:
        return baseline
    found = _methods(runs)
    if not found:
        raise ReportError("no runs: nothing to compare, so no baseline")
    return found[0]


def _methods(runs: pd.DataFrame) -> list[str]:
    """The runs' method labels in one order whatever the order of the files and runs (a trial: rows
    and figure colours followed first appearance): registry order of the base name (the label
    before ``[``), then the label; labels of unregistered methods after them, by name."""
    from ..methods import method_names

    rank = {m: k for k, m in enumerate(method_names())}
    labels = dict.fromkeys(runs["method"])
    return sorted(labels, key=lambda m: (rank.get(str(m).split("[")[0], len(rank)), str(m)))


def _dense_rank(values: pd.Series, higher_is_better: bool) -> pd.Series:
    """1 = best; equal values at the shown precision share a rank; NaN stays NaN."""
    v = values.astype(float).round(DECIMALS)
    return v.rank(method="dense", ascending=not higher_is_better)


def _closest_fraction(runs: pd.DataFrame, target: float = MAIN_FRACTION) -> float:
    fr = np.array(sorted(runs["budget_fraction"].unique()))
    return float(fr[np.argmin(np.abs(fr - target))])


def widened_notes(runs: Iterable[Mapping] | pd.DataFrame) -> list[str]:
    """One sentence per bank, method and budget some of whose runs' intervals missed their own point and were
    extended to reach it (a record's ``interval_widened``: :attr:`hspr.session.ScoreEstimate.widened`), which no
    table column shows (an extension trial: a method of one's own had all 84 of its intervals repaired, unsaid);
    ``hspr replay``, ``hspr report`` and comparison.md give them.

    Parameters
    ----------
    runs : iterable of run records (dicts), or the DataFrame of :func:`read_results`
        A record without ``interval_widened`` (files written before it, or a run whose interval held its
        point) counts as not widened.

    Returns
    -------
    list of str
        Sorted by bank, method and budget (the same for the runs in any order); empty when no run was widened.
    """
    return [f"{bank} {method} at {budget} tasks: on {k} of {n} runs the method's 90 % interval missed its own point and "
            "was extended to reach it (the point always lies in its interval; ScoreEstimate.widened)"
            for bank, method, budget, k, n in _counted_runs(runs, lambda r: r.get("interval_widened") is True)]


def _counted_runs(runs: Iterable[Mapping] | pd.DataFrame, flagged: Callable[[Mapping], bool]) -> list[tuple]:
    """(bank, method, budget, k, n) per bank, method and budget some of whose ``n`` runs (records, or the DataFrame
    of :func:`read_results`) are ``flagged`` (``k`` of them), sorted by bank, method and budget: the same for the
    runs in any order. The counts behind :func:`pass_rate_notes` and :func:`widened_notes`."""
    records = runs.to_dict("records") if isinstance(runs, pd.DataFrame) else runs
    counts: dict[tuple, list[int]] = {}
    for r in records:
        c = counts.setdefault((r.get("bank"), r.get("method"), r.get("budget")), [0, 0])
        c[0] += 1
        c[1] += bool(flagged(r))
    return [(bank, method, budget, k, n)
            for (bank, method, budget), (n, k) in sorted(counts.items(), key=lambda kv: (str(kv[0][0]), str(kv[0][1]),
                                                                                        kv[0][2] or 0)) if k]


def pass_rate_notes(runs: Iterable[Mapping] | pd.DataFrame) -> list[str]:
    """One sentence per bank, method and budget whose estimates came from the outcomes seen plus the sources'
    pass rates (a run's ``shift.pass_rate_maes`` is not empty; ``hspr_robust`` step 6), which no table column
    shows (a hostile trial: two of four folds switched with no word); ``hspr replay``, ``hspr report`` and
    comparison.md give them.

    Parameters
    ----------
    runs : iterable of run records (dicts), or the DataFrame of :func:`read_results`
        A record without a ``shift`` dict counts as a run that did not switch.

    Returns
    -------
    list of str
        Sorted by bank, method and budget (the same for the runs in any order); empty when no run switched.
    """
    def switched(r: Mapping) -> bool:
        return isinstance(r.get("shift"), Mapping) and bool(r["shift"].get("pass_rate_maes"))
    return [f"{bank} {method} at {budget} tasks: {k} of {n} runs were estimated from the outcomes seen plus the "
            "sources' pass rates, because its replays of the source agents found that their history predicts nothing "
            "(each run's shift.message says more; docs/shift-protocols.md)"
            for bank, method, budget, k, n in _counted_runs(runs, switched)]
