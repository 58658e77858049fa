"""The root of hspr's user errors (issue 13).

Every error caused by what a user gave us (a file, a setting, a session, a budget) is an
:class:`HsprError`; its message names the file, row, column, task id or option and the fix.
The command line turns any of them into ``error: <message>`` and exit status 2, never a
traceback. Subclasses: :class:`hspr.data.matrix.DataError` (and the harness's
``HarnessFormatError``), :class:`hspr.session.BudgetError`, :class:`hspr.journal.LiveSessionError`,
:class:`hspr.report.ReportError`, :class:`UnknownIdError` (also a KeyError), :class:`RowIndexError`
(also an IndexError), :class:`MethodError` (a method's own code broke the protocol; also a
RuntimeError). It is a ValueError, so
``except ValueError`` still catches it.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable, Iterator


class HsprError(ValueError):
    """A refused input; the message says what, where and how to fix it."""


class UnknownIdError(HsprError, KeyError):
    """An id (task, method) that is not known. Also a KeyError, so ``except KeyError`` still
    catches it; its message is printed as given (a KeyError's own ``str`` adds quotes)."""

    __str__ = BaseException.__str__


class RowIndexError(HsprError, IndexError):
    """A row index or mask that does not select rows of a matrix (out of range, another length,
    agent ids where indices are expected). Also an IndexError, as numpy indexing raises."""


class MethodError(HsprError, RuntimeError):
    """A method's own code broke the ask / tell / estimate protocol (docs/python-api.md, 'Your own method'):
    a task index out of range or asked twice, an outcome told and not recorded, an estimate off the 0-1
    scale. An HsprError, so the command line shows the message, not a traceback (a method-writer's trial);
    also a RuntimeError, as these checks raised before."""


class InputWarning(UserWarning):
    """A suspicious but readable input (a matrix that looks transposed, an agent with no run). The
    command that is given the input shows it; commands that reopen an input already accepted
    (every ``hspr live`` call after ``start``) do not repeat it."""


class UnaskedTaskWarning(InputWarning):
    """An outcome told to a session whose estimate stands on its own random draws of tasks
    (:attr:`hspr.session.Session.random_draws`: uniform and stratified sampling) for a task it did not
    ask: tasks chosen another way (the ones an agent passed, say) can bias that estimate. Once per
    session; a log restored (:meth:`~hspr.session.Session.restore`, ``hspr live``) does not repeat it."""


class UnreadableFolderWarning(InputWarning):
    """Folders below an input folder that could not be listed (permissions), their results left out
    (:func:`hspr.fileio.find_below`); a live session whose folder bank then reads as another bank
    names them as the cause."""


@contextlib.contextmanager
def held_warnings(reissue: Callable[[type], bool] = lambda category: True) -> Iterator[list]:
    """Record the warnings raised inside (the filters in force still apply) and yield their list of
    ``warnings.WarningMessage``; on leaving, also after an error, issue again those whose category
    ``reissue`` accepts, through the caller's filters and handler. For a step whose warnings must come
    after a spinner, or that reads them (a changed bank's cause) before saying them."""
    held: list = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            try:
                yield caught
            finally:
                held = list(caught)
    finally:
        for w in held:
            if reissue(w.category):
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno, registry={})


def shorten(text: str, limit: int = 40) -> str:
    """``text`` cut to ``limit`` characters (ending in "...") for an error message: a hostile
    file's value can be huge."""
    return text if len(text) <= limit else text[:limit - 3] + "..."


def brief(value, limit: int = 40) -> str:
    """``repr(value)`` for an error message, cut to ``limit`` characters; an int too long for
    ``repr`` (Python refuses more than 4300 digits) or for the message is named by its size."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value).bit_length() > 3.33 * limit:
        return f"<a{' negative' if value < 0 else 'n'} integer of about {round(abs(value).bit_length() * 0.30103)} digits>"
    return shorten(repr(value), limit)
