"""The persistent live session: estimate a real new agent's full score while it runs.

A live session wraps one method session (:class:`hspr.session.Session`) in a file, so the
caller can run tasks for hours or days, in parallel, across process restarts:

* :meth:`LiveSession.create` fits the method on every row of a bank (bundled, or the user's
  matrix) and writes the session file;
* :meth:`LiveSession.next` says which task(s) to run next (``k`` > 1 chooses a batch jointly);
* :meth:`LiveSession.record` and :meth:`LiveSession.ingest` take outcomes (one by hand, or
  from the SWE-bench harness's outputs, read by :mod:`hspr.harness`);
* :meth:`LiveSession.status` gives the estimate, its 90 % interval, the counts, the expected
  interval width after the remaining budget and the stop flag.

The package: :mod:`hspr.live.session` (the session file and :class:`LiveSession`),
:mod:`hspr.live.setup` (what a session is built from: its bank and its fitted method),
:mod:`hspr.live.text` (an outcome or an id as a user types it) and :mod:`hspr.live.status`
(what a session reports). The names below are importable from ``hspr.live`` itself.

The session file
----------------
An append-only journal in JSON Lines (:mod:`hspr.journal`): a header line, then one line per
event, each appended and ``fsync``'ed before the command returns, so an outcome is durable
once ``record`` / ``ingest`` returns and a process killed at any moment leaves at most an
incomplete last line, which readers ignore. The header holds the bank (name or matrix path,
and :meth:`ResponseMatrix.digest`), the method and its settings (for HSPR,
:meth:`HSPRConfig.to_dict`), budget, seed, stop width, the absolute paths of the files ``start``
read (``--tasks``, ``--config``: outputs never overwrite them), the agent's label when ``start``
was given one (``--agent``), a random session id, and the hspr version and code digest that
wrote it. A command appends only to the session it opened: if the
file was replaced meanwhile (``start --force``; another id), it writes nothing and says so. The events:

``{"type": "ask", "k": K, "tasks": [...]}``
    a call of ``ask_batch(K)`` that chose new tasks (re-asking pending tasks is not logged:
    it changes nothing);
``{"type": "tell", "task": ..., "outcome": 0/1, "source": ..., "detail": ..., "asked": bool}``
(on a bank of repeated trials ``outcome`` may be a pass rate, successes / trials)
    an outcome, where it came from, and whether the session had asked for it;
``{"type": "error", "task": ..., "source": ..., "detail": ...}``
    a harness error for the task: no outcome, it needs a re-run;
``{"type": "correct", "task": ..., "outcome": ..., "previous": ..., "source": ..., "detail": ...}``
    a recorded outcome replaced (``hspr live record ID OUTCOME --correct``: a typo, a re-run
    of the harness). The session is then rebuilt as if the task had been told the corrected
    outcome where it was first told; the tasks asked since stay as asked (they were what the
    user was told to run), later choices use the corrected posterior. The first outcome stays
    in the file. A method whose estimate weights each outcome by its draw probability (FAQ)
    refuses a correction once tasks were asked after the outcome; an ingested file that still
    holds a replaced outcome keeps the correction (noted);
``{"type": "withdraw", "task": ..., "previous": ..., "source": ..., "detail": ...}``
    a recorded outcome taken back (``hspr live withdraw ID``: recorded under the wrong id). The
    session is rebuilt as if the task had been neither told nor asked (the other asks stay as
    asked); it may be recorded again (then as an extra outcome), and an ingested file that
    still holds the withdrawn outcome does not bring it back (noted). FAQ refuses to withdraw
    a task it asked.

Opening a file takes the fitted method from the user's cache (:mod:`hspr.fitcache`; it is
refitted, deterministically, when absent) and restores the session from the events in the
order they happened (:meth:`hspr.session.Session.restore`), so the method session, its random
state and its pending tasks are exactly those of the process that wrote the file. A file
written by this very code is trusted: its asks are not re-chosen. Otherwise, should a replayed ask
choose other tasks than the logged ones (the method's code, or the numerics of another
machine, changed), the logged tasks are kept as the pending ones (they are what the user
was told to run) and :attr:`LiveStatus.warnings` says so. A file made for another bank
digest is refused.

Several processes may use one session file at once (e.g. workers recording outcomes as they
finish): every change takes an exclusive lock (``<file>.lock``, POSIX ``flock``), first
replays the events other processes appended, then appends its own.

Expected width after the remaining budget
-----------------------------------------
``status`` reports :meth:`hspr.session.Session.expected_width`: the 90 % interval width
forecast for when the remaining budget is spent. HSPR forecasts it from its own posterior (a
linearised design calculation, :meth:`hspr.methods.hspr.method.HSPRSession._variance_forecast`);
other methods scale the current width as the standard error of a simple random sample's mean
from the n outcomes seen to the B of the whole budget (see that method).
"""

from ..harness import HarnessFormatError
from ..journal import LiveSessionError
from .session import CUT_WARNING, LOST_WARNING, SESSION_FORMAT, SESSION_VERSION, TORN_WARNING, UNREACHABLE_STOP, LiveSession, relink_matrix
from .setup import changed_settings, check_agent_label, check_stop_width, fit_model, hide_agent, load_session_bank
from .status import IngestResult, LiveStatus
from .text import batch_note, did_you_mean, parse_outcome, random_draws_caveat, task_argument

__all__ = ["CUT_WARNING", "LOST_WARNING", "SESSION_FORMAT", "SESSION_VERSION", "TORN_WARNING", "UNREACHABLE_STOP",
           "HarnessFormatError", "IngestResult", "LiveSession", "LiveSessionError", "LiveStatus", "batch_note", "changed_settings",
           "check_agent_label", "check_stop_width", "did_you_mean", "fit_model", "hide_agent", "load_session_bank", "parse_outcome",
           "random_draws_caveat", "relink_matrix", "task_argument"]
