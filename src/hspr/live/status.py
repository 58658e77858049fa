"""What a live session reports: its status (:class:`LiveStatus`) and what an ingest read
(:class:`IngestResult`), as data for ``hspr live status`` and scripts."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..session import ScoreEstimate


# ---------------------------------------------------------------------- results
@dataclass(frozen=True)
class LiveStatus:
    """A snapshot of a live session (values on the 0-1 scale unless the name ends in ``_pp``).

    Attributes
    ----------
    session : str
        The session file.
    bank : str
        Bank name or matrix path.
    method : str
    n_tasks, budget, seed : int
    bank_label : str
        The bank's name: a bundled bank's, or the ``--bank`` label of a matrix (its file stem by
        default).
    estimate : ScoreEstimate or None
        None while the method has no estimate (no outcomes and no prior estimate).
    n_recorded : int
        Distinct outcomes conditioned on (asked and extra).
    extra : tuple of str
        Recorded tasks the session had not asked for (counted against the budget).
    pending : tuple of str
        Asked and not yet recorded, in the order asked.
    needs_rerun : tuple of (task, detail)
        Tasks whose evaluation errored in the harness and that have no outcome yet.
    expected_width : float or None
        Forecast 90 % interval width once the remaining budget is spent (see module docstring).
    stop_width_pp : float or None
    stop : bool
        True once the budget is spent or the interval is narrower than ``stop_width_pp``.
    stop_reason : str or None
    warnings : tuple of str
        Problems met while replaying the event log (e.g. a replayed ask that chose other tasks).
    trials : int or None
        Trials per task of the bank (None: one 0/1 run), for how an outcome is written.
    settings : dict
        The method's settings that differ from its defaults (``--config``), nested keys joined with
        dots (``{"config.rank": 1}``; a group of settings whose default is None, such as
        ``hspr_robust``'s per-fold ``config``, is kept whole); empty at the defaults. A new-user
        trial found no command said which configuration a session ran.
    config_file : str or None
        The ``--config`` file the session was started with (absolute path), if any.
    bank_digest : str or None
        The digest of the bank matrix the session runs on (as ``hspr bank build`` / ``validate``
        print it for a file used whole), to check a file against the session's bank.
    outcomes : tuple of (task, outcome)
        Every recorded outcome in the order recorded (a pass rate over the bank's trials, or 0/1);
        ``to_dict`` lists them under ``outcomes`` (a trial had to read the session file to check
        what its ingests recorded).
    provenance : dict
        Task -> (source, detail) of each recorded outcome, as the journal's tell (or its latest
        correct) event gives them: ``"record"`` or the absolute path of the ingested file, and what
        the harness output said (a trial had to read the journal to find which file gave a task).
    agent : str or None
        The label of the agent the session scores (``hspr live start --agent``), or None.
    hidden_agent : str or None
        The bank agent a trial session hides from the fit (``hspr live start --hide``).
    hidden_score : float or None
        That agent's true score over the session's tasks (0-1), to compare the estimate with.
    random_draws : bool
        Whether the method averages every recorded task as one of its own random draws
        (:attr:`hspr.session.Session.random_draws`), so that the text says how it used the tasks it did not ask.
    """

    session: str
    bank: str
    method: str
    n_tasks: int
    budget: int
    seed: int
    estimate: ScoreEstimate | None
    n_recorded: int
    extra: tuple[str, ...]
    pending: tuple[str, ...]
    needs_rerun: tuple[tuple[str, str], ...]
    expected_width: float | None
    stop_width_pp: float | None
    stop: bool
    stop_reason: str | None
    warnings: tuple[str, ...] = ()
    bank_label: str | None = None
    trials: int | None = None
    settings: dict = field(default_factory=dict)
    config_file: str | None = None
    outcomes: tuple[tuple[str, float], ...] = ()
    bank_digest: str | None = None
    provenance: dict = field(default_factory=dict)
    hidden_agent: str | None = None
    hidden_score: float | None = None
    random_draws: bool = False
    agent: str | None = None

    @property
    def budget_left(self) -> int:
        """Tasks the budget still allows beyond those recorded (pending ones included)."""
        return max(self.budget - self.n_recorded, 0)

    def to_dict(self) -> dict:
        """Plain JSON-ready dict; percentages (``*_pp``, rounded to 1e-10 pp so that 0.468 prints as
        46.8, not 46.800000000000004) next to the 0-1 ``estimate`` object (full precision)."""
        est = self.estimate
        extra = set(self.extra)

        def pp(x):
            return None if x is None else round(100.0 * x, 10)

        return {
            "session": self.session,
            "agent": self.agent,
            "bank": self.bank,
            "bank_label": self.bank_label,
            "bank_digest": self.bank_digest,
            "method": self.method,
            "settings_changed": dict(self.settings),
            "config_file": self.config_file,
            "n_tasks": self.n_tasks,
            "budget": self.budget,
            "seed": self.seed,
            "estimate": None if est is None else est.to_dict(),
            "estimate_pp": None if est is None else pp(est.point),
            "lower_pp": None if est is None else pp(est.lower),
            "upper_pp": None if est is None else pp(est.upper),
            "width_pp": None if est is None or est.width is None else pp(est.width),
            "n_recorded": self.n_recorded,
            "n_asked_recorded": self.n_recorded - len(self.extra),
            "n_extra": len(self.extra),
            "extra": list(self.extra),
            "n_pending": len(self.pending),
            "pending": list(self.pending),
            "needs_rerun": [{"task": t, "detail": d} for t, d in self.needs_rerun],
            "budget_left": self.budget_left,
            "expected_width_pp": pp(self.expected_width),
            "stop_width_pp": self.stop_width_pp,
            "stop": self.stop,
            "stop_reason": self.stop_reason,
            "warnings": list(self.warnings),
            "trials": self.trials,
            "hidden_agent": self.hidden_agent,
            "hidden_score_pp": pp(self.hidden_score),
            # each recorded outcome, in order: 0/1, or the pass rate with its successes of the bank's trials, and
            # where it came from
            "outcomes": [{"task": t, "outcome": y, "asked": t not in extra,
                          **({} if self.trials is None else {"successes": round(y * self.trials)}),
                          **dict(zip(("source", "detail"), self.provenance.get(t, (None, None))))}
                         for t, y in self.outcomes],
        }


@dataclass
class IngestResult:
    """What :meth:`LiveSession.ingest` did with one harness output.

    Attributes
    ----------
    source, form : str
        The path read and its form (see :data:`hspr.harness.FORMS`).
    recorded : list of (task, outcome, detail)
        New outcomes, in the order told.
    unchanged : list of str
        Tasks already recorded with the same outcome (no-ops).
    needs_rerun : list of (task, detail)
        Harness errors: no outcome recorded; run these tasks again.
    notes : list of str
        What the reader skipped (e.g. incomplete ids).
    skipped : list of str
        Ids that are not tasks of the session, skipped with ``skip_unknown``.
    errors_counted : list of str
        Tasks among ``recorded`` whose harness error was counted unresolved
        (``errors_as_unresolved``): their 0 is not a graded failure.
    withdrawn : list of str
        Tasks the file grades with an outcome the session withdrew (``hspr live withdraw``):
        not recorded again.
    """

    source: str
    form: str
    recorded: list[tuple[str, int, str]] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    needs_rerun: list[tuple[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    errors_counted: list[str] = field(default_factory=list)
    withdrawn: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        """Plain JSON-ready dict of what an ingest did: ``recorded`` (task, outcome, detail),
        ``unchanged``, ``needs_rerun_new``, ``skipped``, ``errors_counted_unresolved``,
        ``withdrawn_not_recorded`` and ``notes``."""
        return {
            "source": self.source,
            "form": self.form,
            "recorded": [{"task": t, "outcome": y, "detail": d} for t, y, d in self.recorded],
            "unchanged": list(self.unchanged),
            "needs_rerun_new": [{"task": t, "detail": d} for t, d in self.needs_rerun],
            "skipped": list(self.skipped),
            "errors_counted_unresolved": list(self.errors_counted),
            "withdrawn_not_recorded": list(self.withdrawn),
            "notes": list(self.notes),
        }
