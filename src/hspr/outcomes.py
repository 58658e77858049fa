"""The outcome vocabulary: the one set of spellings every reader accepts for a task's result.

=============  ==========================================================================
resolved       ``1``, ``1.0``, ``1.00``, ..., ``true``, ``yes``, ``pass``, ``passed``, ``resolved``
unresolved     ``0``, ``0.0``, ``0.00``, ..., ``false``, ``no``, ``fail``, ``failed``, ``unresolved``
no run         (matrix cells only) empty, ``na``, ``n/a``, ``nan``, ``null``, ``none``
=============  ==========================================================================

Case and surrounding spaces are ignored. Python values ``True``/``False`` and numbers equal
to 1 or 0 (numpy scalars too) are accepted as well. Used by the matrix readers
(:mod:`hspr.data.io`), the harness readers (:mod:`hspr.harness`), ``hspr live record`` and
the session file (:mod:`hspr.live`).
"""

from __future__ import annotations

import numbers
import re

import numpy as np

from .params import TIME_TYPES

RESOLVED = frozenset({"1", "1.0", "true", "yes", "pass", "passed", "resolved"})
UNRESOLVED = frozenset({"0", "0.0", "false", "no", "fail", "failed", "unresolved"})
MISSING = frozenset({"", "na", "n/a", "#n/a", "nan", "null", "none"})  # "#N/A": a spreadsheet's (a hostile trial)
#: how messages describe the vocabulary
SPELLINGS = "resolved/unresolved, 1/0, true/false, yes/no, pass/fail"
#: how messages describe a cell with no run
NO_RUN = "empty, na, n/a, #n/a, nan, null or none = no run"
_DECIMAL = re.compile(r"([01])\.0+")  # 1.00, 0.000: a spreadsheet's formatting of 1 and 0
_COUNT = re.compile(r"0*[0-9]{1,4}")  # ASCII digits only (str.isdigit also takes superscripts); 00003 is 3
#: a zero decimal part of a whole number ("3.0", "5.00"), dropped before the count is read
_ZERO_DECIMALS = re.compile(r"(?<=[0-9])\.0+$")
_CELLS = RESOLVED | UNRESOLVED | MISSING


def normalise(text: str) -> str:
    """A cell's text as the vocabulary spells it: stripped, lower case, ``1.00`` as ``1``."""
    t = text.strip().lower()
    m = _DECIMAL.fullmatch(t)
    return m.group(1) if m else t


def is_cell(text: str) -> bool:
    """True for the text of a matrix cell: an outcome or a no-run marker in any spelling of the
    vocabulary (used to tell a header-less matrix or a bank file from a list of ids)."""
    return normalise(text) in _CELLS


def outcome(value) -> int | None:
    """1 or 0 for a value in the vocabulary, else None (the caller names where it was found).

    ``value`` may be text, a bool or a number; a missing marker (:data:`MISSING`) and numpy's
    masked constant (``np.ma.masked``) are None too: readers that allow missing cells test
    :func:`is_missing` first.
    """
    if isinstance(value, bool):
        return int(value)
    if type(value).__module__.startswith("numpy") and np.ma.is_masked(value):  # a missing cell: its .item() reads 0
        return None
    if isinstance(value, np.ndarray) and value.ndim == 0:  # its numpy scalar, not .item()'s: a time span's is an int
        return outcome(value[()])
    if isinstance(value, TIME_TYPES):  # a numpy time span or date (a re-trial: np.timedelta64(1) read as 1)
        return None
    if isinstance(value, numbers.Real):  # not Number: 0j == 0, and int(0j) raised TypeError (a mypy triage)
        return int(value) if value in (0, 1) else None
    if isinstance(value, numbers.Complex):
        return None
    if hasattr(value, "item") and not isinstance(value, str):  # numpy scalars
        return outcome(value.item())
    if isinstance(value, str):
        t = normalise(value)
        if t in RESOLVED:
            return 1
        if t in UNRESOLVED:
            return 0
    return None


def is_missing(text: str) -> bool:
    """True for a matrix cell that marks no run (:data:`MISSING`: empty, na, n/a, #n/a, nan, null, none)."""
    return isinstance(text, str) and text.strip().lower() in MISSING


def drop_zero_decimals(text: str) -> str:
    """``text`` without the zero decimal part of a whole number (``"3.0"`` -> ``"3"``, as a
    spreadsheet or pandas writes a count); other text unchanged."""
    return _ZERO_DECIMALS.sub("", text)


def trial_successes(k, t, trials: int) -> int | None:
    """The successes ``k`` of a task's ``t`` repeated trials, as an int, or None unless ``k`` and
    ``t`` are whole numbers in ASCII digits, ``t`` is the bank's ``trials`` and ``k <= trials``.
    A whole number written with a zero decimal part (``3.0``: pandas writes counts so when the
    column has a blank) is that number.

    Used by ``hspr live record TASK k/t`` (:func:`hspr.live.parse_outcome`) and the
    repeated-trials CSV of ``hspr live ingest`` (:func:`hspr.harness.read_trials_outcomes`).
    """
    k, t = (_ZERO_DECIMALS.sub("", str(v).strip()) for v in (k, t))
    if _COUNT.fullmatch(k) and _COUNT.fullmatch(t) and int(t) == trials and int(k) <= trials:
        return int(k)
    return None


def graded_successes(k, t, trials: int) -> int | None:
    """The successes ``k`` of ``t`` graded trials when some of a task's ``trials`` did not grade (a counts line
    marked as a harness error): an int when ``k`` and ``t`` are whole numbers (as :func:`trial_successes` reads
    them) with ``k <= t <= trials``, else None (empty cells, too many trials)."""
    k, t = (_ZERO_DECIMALS.sub("", str(v).strip()) for v in (k, t))
    if _COUNT.fullmatch(k) and _COUNT.fullmatch(t) and int(k) <= int(t) <= trials:
        return int(k)
    return None


def whole_count(text) -> bool:
    """True when ``text`` is a whole number >= 0 in ASCII digits, a zero decimal part allowed
    (``3``, ``3.0``; not ``3.``, ``3e0`` or ``-1``), of any size: the form :func:`trial_successes`
    reads, so a message can say whether a refused count was out of range or not a count."""
    return bool(re.fullmatch(r"[0-9]+", _ZERO_DECIMALS.sub("", str(text).strip())))


def is_whole_outcome(value) -> bool:
    """Whether ``value`` is given as an integer or a boolean (``1``, ``True``, ``np.int64(1)``, ``np.bool_``),
    not a float: on a bank of repeated trials such a 1 is ambiguous (every trial, or one run?), while a
    session's own log writes the pass rate T/T as ``1`` (:meth:`hspr.session.Session.logged_outcome`)."""
    return isinstance(value, (bool, np.bool_, numbers.Integral)) and not isinstance(value, TIME_TYPES)


def is_ambiguous_one(value, trials: int | None) -> bool:
    """Whether ``value`` is an integer or boolean 1 (:func:`is_whole_outcome`) given on a bank of ``trials``
    > 1 trials per task, where it is ambiguous (every trial, or one run that passed?):
    :meth:`hspr.session.Session.tell` and :func:`hspr.live.parse_outcome` refuse it."""
    return trials is not None and trials > 1 and is_whole_outcome(value) and value == 1


def describe_outcome(y: float, trials: int | None = None) -> str:
    """``resolved`` / ``unresolved``, or ``k/trials`` for a pass rate of a repeated-trials bank."""
    if trials is not None:
        return f"{round(y * trials)}/{trials}"
    return ("unresolved", "resolved")[int(y)]


def snap_pass_rate(rate: float, trials: int) -> float | None:
    """``rate`` as the pass rate ``k / trials`` it stands for, or None when it is not one.

    ``rate`` is a finite number in [0, 1]; it may carry float32 rounding (``np.float32(0.6)``):
    within 1e-6 of ``k / trials`` it is that rate, exactly (:func:`pass_rate`). Used by
    :meth:`hspr.session.Session.tell` and :func:`hspr.live.parse_outcome`.
    """
    k = round(rate * trials)
    return pass_rate(k, trials) if abs(rate - k / trials) <= 1e-6 else None


def pass_rate(successes: int, trials: int) -> float:
    """``successes / trials``, given as the int 0 or 1 when every trial failed or passed (so a
    session file keeps those outcomes as the integers a 0/1 bank has)."""
    y = successes / trials
    return int(y) if y in (0, 1) else y
