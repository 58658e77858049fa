"""Progress lines of long library computations (the source-only selection, ``hspr_robust``'s calibration).

They are logged (``logging.Logger.warning``; the command line shows them on stderr, also from a joblib
worker, where nothing can be drawn), not drawn as a bar: the computation runs inside a method's ``fit``,
which knows no console. The command line's own bars are in :mod:`hspr.cli.display`; both word the time
left with :func:`time_left`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Callable, Iterator

from .parallel import QUIET_ENV

#: a progress callback: ``progress(done, total)`` after each finished unit of work
Progress = Callable[[int, int], None]


def duration(seconds: float) -> str:
    """'45 s', '12 min' or '3.2 h': a time to come, at the precision a linear forecast of it deserves."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def time_left(spent: float, done: float, total: float) -> str:
    """``'; about T left'`` after ``done`` of ``total`` units in ``spent`` seconds, the rest forecast at the same
    pace (:func:`duration`); '' before the first unit, at the end, or with no time spent yet."""
    return f"; about {duration(spent * (total - done) / done)} left" if 0 < done < total and spent > 0 else ""


def log_progress(logger: logging.Logger, what: str, unit: str, step: float = 0.1, after: float = 0.0,
                 clock: Callable[[], float] | None = None, every: float = 60.0) -> Progress | None:
    """A :data:`Progress` callback that logs ``what: done of total unit (share %), t s; about T left``.

    A line is logged at each further ``step`` share of the work (and at the end), and at the first unit done
    ``every`` seconds or more after the last line (a scale trial: 160 held-out runs of about a minute each said
    their first count after 16 minutes), once ``after`` seconds have passed since the callback was made; the end
    is logged only if an earlier line was, so a computation shorter than ``after`` says nothing. The time left is
    in proportion to the time so far (a scale trial: ``hspr select --fast`` said 4 of 900 after 870 s and nothing
    of the 12 h to come). Such a computation inside a replay's fit runs for minutes with the replay's bar at 0 (a
    trial waited 98 s on '0/?' and stopped it).
    ``clock``: the time in seconds (default ``time.perf_counter``).

    Returns None (no progress) when :data:`hspr.parallel.QUIET_ENV` is set (``hspr replay -q``; a new-user
    trial: ``-q`` still printed 40 lines).
    """
    if os.environ.get(QUIET_ENV):
        return None
    now = clock or time.perf_counter
    t0 = now()
    shown, said, last = [0.0], [False], [t0]

    def tick(done: int, total: int) -> None:
        share = done / max(total, 1)
        at = now()
        spent = at - t0
        if spent < after or not (share >= shown[0] + step or at - last[0] >= every
                                 or (done == total and (said[0] or not after))):
            return
        shown[0], said[0], last[0] = share, True, at
        logger.warning("%s: %d of %d %s (%.0f %%), %.0f s%s", what, done, total, unit, 100 * share, spent,
                       time_left(spent, done, total))

    return tick


def say_resumed(logger: logging.Logger, what: str, kept: int, total: int, unit: str) -> None:
    """Log that a computation resumed with ``kept`` of its ``total`` units from a stopped run's checkpoint
    (:class:`hspr.fitcache.Checkpoint`); nothing when none were kept or :data:`~hspr.parallel.QUIET_ENV` is set."""
    if kept and not os.environ.get(QUIET_ENV):
        logger.warning("%s: resumed with the %d of %d %s a stopped run finished", what, kept, total, unit)


def save_on_stop(logger: logging.Logger, what: str, checkpoint, total: int, unit: str) -> None:
    """Write ``checkpoint`` (a :class:`hspr.fitcache.Checkpoint`) as its computation is stopped, and say what was
    kept: the finished units and that the same computation resumes from them, or that they could not be written
    (a hostile trial: on a full disk a stop said nothing, and the next run started over unannounced). Silent when
    :data:`~hspr.parallel.QUIET_ENV` is set."""
    saved = checkpoint.save()
    if os.environ.get(QUIET_ENV) or not checkpoint.done:
        return
    if saved:
        logger.warning("%s: stopped; the %d of %d %s it finished are kept in the fit cache, and the same run resumes "
                       "from them", what, len(checkpoint.done), total, unit)
    elif kept := checkpoint.kept():  # a hostile trial: an earlier write's units are still there (a full disk)
        logger.warning("%s: stopped; the %d of %d %s it finished could not all be kept (the fit cache cannot be "
                       "written), so the same run resumes from the %d an earlier write kept", what, len(checkpoint.done),
                       total, unit, kept)
    else:
        logger.warning("%s: stopped; the %d of %d %s it finished could not be kept (the fit cache cannot be written), so "
                       "the same run starts over", what, len(checkpoint.done), total, unit)


@contextlib.contextmanager
def resumable(logger: logging.Logger, what: str, checkpoint, total: int, unit: str) -> Iterator[None]:
    """The life of a :class:`hspr.fitcache.Checkpoint` around the work it keeps (the selection, ``hspr_robust``'s
    calibration): :func:`say_resumed` on entry, :func:`save_on_stop` when the work is stopped or fails (the
    exception goes on), and :meth:`~hspr.fitcache.Checkpoint.finished` when it ends. ``checkpoint`` must have
    been loaded."""
    say_resumed(logger, what, len(checkpoint.done), total, unit)
    try:
        yield
    except BaseException:  # Ctrl-C, a closed terminal, a failure: keep what finished since the last write
        save_on_stop(logger, what, checkpoint, total, unit)
        raise
    checkpoint.finished()
