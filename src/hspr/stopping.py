"""When to stop asking: small stopping rules shared by the live loop and replay (catsim's pattern).

A rule looks at a session and its current estimate and returns the reason to stop, or None.
The live session stops on :func:`live_rule` (budget spent, or the 90 % interval narrower than
the user's stop width); replay can end each target early with the same width rule
(``hspr replay --stop-width``) and records how many tasks that took.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

from .session import ScoreEstimate, Session


class StoppingRule(ABC):
    """Decides whether a session should stop asking.

    A subclass implements :meth:`check`; the caller asks :meth:`needs_estimate` first and computes the
    session's estimate only when it says so (an estimate costs a posterior pass), then stops the session
    when :meth:`check` returns a reason.
    """

    def needs_estimate(self, session: Session) -> bool:
        """Whether :meth:`check` reads the estimate for ``session`` now (the caller computes one
        only then: replay per step, a live ``next``)."""
        return False

    @abstractmethod
    def check(self, session: Session, estimate: ScoreEstimate | None) -> str | None:
        """The reason to stop now (a sentence), or None to go on."""


@dataclass(frozen=True)
class BudgetSpent(StoppingRule):
    """Stop once the session's budget is spent (outcomes told). ``more``, when given, is the command
    that carries the outcomes into a new session with a larger budget (the live session's, with its
    path), named when the shift check flags the agent: its advice to run more tasks had no way to do
    so once the budget was spent (a trial)."""

    more: str | None = None

    def needs_estimate(self, session: Session) -> bool:
        """With ``more``, once the budget is spent: the shift flag decides whether ``more`` is named
        (an audit: plain ``hspr live next`` passed no estimate, so the advice never showed there)."""
        return self.more is not None and session.n_queried >= session.budget

    def check(self, session: Session, estimate: ScoreEstimate | None) -> str | None:
        n, b = session.n_queried, session.budget
        if n < b:
            return None
        # a new-user trial: a late record read "budget spent (21 of 20 tasks recorded)"
        why = (f"budget spent ({n} of {b} tasks recorded)" if n == b else
               f"budget spent ({n} tasks recorded, {n - b} over the budget of {b})")
        if self.more and estimate is not None and estimate.shift is not None and estimate.shift.unlike_history:
            import shlex

            new = shlex.quote(shlex.split(self.more)[-1])  # the command ends '--session NEW'
            why += ("; the shift check flags this agent as unlike the history (see shift): more tasks lower the error, "
                    "though not the interval's misses; to run more tasks, start a "
                    f"new session as this one was started but with a larger --budget and --session {new}, then carry "
                    f"these outcomes into it: `{self.more}`")
        return why


#: outcomes a live session or a replay run (``--stop-min-tasks``) records before a stop width can end it:
#: an interval from a handful of equal outcomes can be degenerate
MIN_TASKS = 5

#: the widest a 90 % interval of a score in [0, 100] % can be, so the largest stop width accepted (pp)
MAX_WIDTH_PP = 100.0

#: widths within this many pp of the stop width count as equal to it (float rounding of upper - lower)
WIDTH_TOL_PP = 1e-9


@dataclass(frozen=True)
class WidthBelow(StoppingRule):
    """Stop once the interval is narrower than ``width_pp`` percentage points, after at least
    ``min_tasks`` outcomes (an interval from a handful of equal outcomes can be degenerate).
    ``go_on``, when given, is the command that removes the stop width (the live session's, with
    its path), named when the shift check flags the agent.

    Raises
    ------
    ValueError
        For a width that is not a finite number > 0.
    """

    width_pp: float
    min_tasks: int = 1
    go_on: str | None = None

    def needs_estimate(self, session: Session) -> bool:
        """Once ``min_tasks`` outcomes are told (before that :meth:`check` says go on)."""
        return session.n_queried >= self.min_tasks

    def __post_init__(self) -> None:
        w = self.width_pp
        if isinstance(w, bool) or not isinstance(w, (int, float)) or not (0 < w < float("inf")):
            raise ValueError(f"stop width must be a finite number > 0 percentage points, got {w!r}")
        if w > MAX_WIDTH_PP:
            raise ValueError(f"stop width {w:g} pp: a 90 % interval of a score in [0, 100] % is at most "
                             f"{MAX_WIDTH_PP:g} pp wide; give a width of {MAX_WIDTH_PP:g} pp or less")

    def check(self, session: Session, estimate: ScoreEstimate | None) -> str | None:
        # narrower by more than float rounding: [0.53, 0.61] is 8 pp on the 1/500 lattice, but
        # 0.61 - 0.53 = 0.07999999999999996 in floats, and an 8 pp stop width must not fire on it
        if session.n_queried < self.min_tasks or estimate is None or estimate.width is None \
                or not 100 * estimate.width < self.width_pp - WIDTH_TOL_PP:
            return None
        why = f"90 % interval {100 * estimate.width:.2f} pp is narrower than the stop width {self.width_pp:g} pp"
        if estimate.shift is not None and estimate.shift.unlike_history:  # a new-user trial: "stop" beside "run more"
            # a new-user trial: the command named the session as a literal 'FILE'
            # (a re-trial: 'the safer choice' read as a promise about the interval, which more tasks do not keep)
            why += ("; the shift check flags this agent as unlike the history (see shift), so running more of the "
                    "budget is the safer choice: more tasks lower the error, though not the interval's misses (remove "
                    "the stop width to go on" + (f": `{self.go_on}`)" if self.go_on else ")"))
        return why


@dataclass(frozen=True)
class AnyOf(StoppingRule):
    """Stop when any of ``rules`` says so (the first reason is given)."""

    rules: tuple[StoppingRule, ...]

    def needs_estimate(self, session: Session) -> bool:
        """Whether any of ``rules`` reads it."""
        return any(r.needs_estimate(session) for r in self.rules)

    def check(self, session: Session, estimate: ScoreEstimate | None) -> str | None:
        for r in self.rules:
            why = r.check(session, estimate)
            if why is not None:
                return why
        return None


def live_rule(stop_width_pp: float | None, go_on: str | None = None, more: str | None = None) -> StoppingRule:
    """The live session's rule: budget spent, or (with a stop width) the interval narrow enough
    once :data:`MIN_TASKS` outcomes are recorded (before any outcome the interval is the prior's,
    and a session given a wide stop width stopped before running a task). ``go_on``: as
    :class:`WidthBelow`'s; ``more``: as :class:`BudgetSpent`'s."""
    if stop_width_pp is None:
        return BudgetSpent(more)
    # a width above 100 pp (refused now, saved by older versions) fires on every interval, as 100 does
    return AnyOf((BudgetSpent(more), WidthBelow(min(float(stop_width_pp), MAX_WIDTH_PP), min_tasks=MIN_TASKS, go_on=go_on)))
