"""The outcome vocabulary: the one set of spellings every reader accepts for a task's result.

=============  ==========================================================================
resolved       ``1``, ``1.0``, ``true``, ``yes``, ``pass``, ``passed``, ``resolved``
unresolved     ``0``, ``0.0``, ``false``, ``no``, ``fail``, ``failed``, ``unresolved``
no run         (matrix cells only) empty, ``na``, ``nan``
=============  ==========================================================================

Case and surrounding spaces are ignored. Python values ``True``/``False`` and numbers equal
to 1 or 0 (numpy scalars too) are accepted as well. Used by the matrix readers
(:mod:`hspr.data.io`), the harness readers (:mod:`hspr.harness`), ``hspr live record`` and
the session file (:mod:`hspr.live`).
"""

from __future__ import annotations

import numbers

RESOLVED = frozenset({"1", "1.0", "true", "yes", "pass", "passed", "resolved"})
UNRESOLVED = frozenset({"0", "0.0", "false", "no", "fail", "failed", "unresolved"})
MISSING = frozenset({"", "na", "nan"})
#: how messages describe the vocabulary
SPELLINGS = "resolved/unresolved, 1/0, true/false, yes/no, pass/fail"


def outcome(value) -> int | None:
    """1 or 0 for a value in the vocabulary, else None (the caller names where it was found).

    ``value`` may be text, a bool or a number; a missing marker (empty, na, nan) is None too:
    readers that allow missing cells test :func:`is_missing` first.
    """
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, numbers.Number):
        return int(value) if value in (0, 1) else None
    if hasattr(value, "item") and not isinstance(value, str):  # numpy scalars
        return outcome(value.item())
    if isinstance(value, str):
        t = value.strip().lower()
        if t in RESOLVED:
            return 1
        if t in UNRESOLVED:
            return 0
    return None


def is_missing(text: str) -> bool:
    """True for an empty, ``na`` or ``nan`` matrix cell (no run)."""
    return isinstance(text, str) and text.strip().lower() in MISSING
