"""Replay (backtest) on archived response matrices: folds x targets x seeds x budgets.

For each target fold, every method is fitted on the other folds' agents (the sources), then
each target row is hidden behind :class:`HiddenRow` and revealed only through ``tell``. The
estimate and the queried ids are recorded before the full row is read (HSPR_SPEC section 7).
Work runs in parallel with joblib; ``backend`` selects loky (default), dask or ray.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import math
import numbers
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from joblib import delayed
from threadpoolctl import threadpool_limits

from .data.folds import fold_indices
from .data.matrix import DataError, ResponseMatrix
from .errors import HsprError, InputWarning, MethodError, UnknownIdError, brief
from .fitcache import CHECKPOINT_SECONDS, Checkpoint
from .parallel import WithWarnings, streaming_parallel, warned_again, workers
from .params import is_number
from .progress import log_progress, save_on_stop
from .session import (
    NOMINAL_LEVEL,
    SEEDS_BY_KIND,
    BudgetError,
    FittedModel,
    Method,
    budget_from_fraction,
    check_seed,
    defined_outside_hspr,
    whole_number,
)
from .stopping import StoppingRule


class HiddenRow:
    """A target's outcomes, revealed one task at a time; the score is read only on request.

    Attributes
    ----------
    agent : str
        The target's id (its row in the matrix).
    revealed : list of str
        The task ids revealed so far, in order (a task revealed twice is listed twice).
    """

    def __init__(self, matrix: ResponseMatrix, row: int) -> None:
        self._values = matrix.values[row] if matrix.trials is None else matrix.rates()[row]
        self._index = matrix.task_index  # UnknownIdError naming an id the matrix lacks
        self.agent = matrix.agents[row]
        self.revealed: list[str] = []

    def reveal(self, task_id: str) -> float:
        """The task's outcome: 0/1, or with repeated trials its pass rate (all trials at once).

        Raises
        ------
        UnknownIdError naming ``task_id``, if the matrix has no such task.
        """
        self.revealed.append(task_id)
        v = self._values[self._index(task_id)]
        return int(v) if self._values.dtype.kind in "iu" else float(v)

    def full_score(self) -> float:
        """The true score on the 0-1 scale: the row mean (pass rates with trials; a target's
        missing cells were filled with 0 before, the leaderboard convention)."""
        return float(self._values.mean())


@dataclass(frozen=True)
class ReplayJob:
    """One unit of parallel work: a fitted method, targets and one seed."""

    bank: str
    protocol: str
    method: str
    fold: int
    seed: int
    budgets: tuple[int, ...]
    fractions: tuple[float, ...]
    targets: ResponseMatrix = field(repr=False)
    stop: StoppingRule | None = None
    settings: str = ""
    batch: int = 1
    #: the digest of the sources the job's model was fitted on: its target runs are then kept in the fit cache
    #: (:func:`_job_checkpoint`); "" keeps none
    source_digest: str = ""
    #: the target runs a stopped replay of the same job finished, by target id (read from its checkpoint)
    kept: Mapping[str, list] = field(default_factory=dict, repr=False)


log = logging.getLogger(__name__)
#: a job running longer than this (seconds) logs its targets done, of how many, and the time left
#: (:func:`hspr.progress.log_progress`)
PROGRESS_AFTER = 60.0
#: the backends whose workers share this machine's fit cache (a dask or ray cluster's need not)
LOCAL_BACKENDS = (None, "loky", "threading", "multiprocessing", "sequential")


def _job_checkpoint(job: ReplayJob) -> Checkpoint | None:
    """The :class:`~hspr.fitcache.Checkpoint` of ``job``'s target runs (None when it keeps none), keyed by the
    targets, the sources, every label and setting of the job and the code, so that the same replay run again
    resumes from the runs a stopped one finished (a scale trial: one job of ``hspr`` on 400 x 5,000 ran for
    20 minutes, and an interrupt kept none of its targets)."""
    if not job.source_digest:
        return None
    return Checkpoint(job.targets.digest(), "replay target runs",
                      {"sources": job.source_digest, "bank": job.bank, "protocol": job.protocol, "method": job.method,
                       "settings": job.settings, "fold": job.fold, "seed": job.seed, "budgets": list(job.budgets),
                       "fractions": list(job.fractions), "batch": job.batch})


def _check_batch(batch) -> int:
    """``batch`` (tasks per round) as an int; HsprError unless a whole number >= 1."""
    n = whole_number(batch)
    if n is None or n < 1:
        raise HsprError(f"batch must be a whole number of tasks per round, >= 1, got {brief(batch)}")
    return n


def run_session(model: FittedModel, row: HiddenRow, budgets: Sequence[int], seed: int,
                stop: StoppingRule | None = None, batch: int = 1) -> list[dict]:
    """Run one target under each budget; returns one record per budget (estimate before truth).

    Parameters
    ----------
    model : FittedModel
        The method fitted on the sources.
    row : HiddenRow
        The target: its outcomes, revealed only for the tasks the session asks.
    budgets : sequence of int
        Task budgets, each at least 1 and at most the number of tasks.
    seed : int
        Query seed of the session.
    stop : StoppingRule, optional
        Ends the session early (``hspr replay --stop-width``).
    batch : int
        Tasks asked per round (:meth:`~hspr.session.Session.ask_batch`: chosen jointly before their outcomes are
        known, as ``hspr live next --batch K`` asks them); the last round of a budget is cut to what is left. 1: one
        task at a time (:meth:`~hspr.session.Session.ask`). A batch equal to the budget is a whole task list chosen
        up front.

    Returns
    -------
    list of dict
        One record per budget: ``budget``, ``estimate``, ``lower``, ``upper``, ``mean``, ``median``
        (0-1 scale; None where the method has none), ``queried`` (task ids in asking order),
        ``truth`` (the target's full score, read after every estimate), ``shift`` (the shift
        report's dict) where the method gives one, with ``stop``, ``n_queried`` and ``stop_reason``, with a
        ``batch`` above 1, ``batch``, and ``interval_widened`` (True) where the method's interval missed its
        point and was extended to it (:attr:`~hspr.session.ScoreEstimate.widened`).

    Raises
    ------
    HsprError
        When the method's estimate has another level than :data:`~hspr.session.NOMINAL_LEVEL` (replay measures
        90 % intervals), or an estimate or interval end that is not a finite number.
    BudgetError
        From the method's ``start`` for a budget outside 1..n_tasks.

    Models with ``nested_budgets = True`` (the query path does not depend on the budget) run
    once at the largest budget and are estimated at every checkpoint on the way. With a
    ``stop`` rule (:mod:`hspr.stopping`) the session stops asking as soon as the rule says so;
    the record's ``n_queried`` says how many tasks were run and ``stop_reason`` why. With a ``batch`` above 1 each
    budget runs a session of its own (its rounds end at its budget, not at a smaller one's).
    """
    n = _check_batch(batch)
    out = []
    if model.nested_budgets and n == 1:
        plan = [(max(budgets), sorted(budgets))]
    else:
        plan = [(b, [b]) for b in budgets]
    for budget, checkpoints in plan:
        sess = model.start(budget, seed)
        why = None
        for b in checkpoints:
            while sess.n_queried < b and why is None:
                if stop is not None and sess.n_queried:
                    why = stop.check(sess, sess.estimate() if stop.needs_estimate(sess) else None)
                    if why is not None:
                        break
                # the round's tasks, then their outcomes; a round of 1 is ask() (= ask_batch(1)[0])
                for t in sess.ask_batch(min(n, b - sess.n_queried)):
                    sess.tell(t, row.reveal(t))
            est = sess.estimate()
            if est.level != NOMINAL_LEVEL:  # a method-writer's trial: a 50 % interval's coverage was reported as 90 % coverage
                raise HsprError(f"{type(sess).__name__} gave a {100 * est.level:g} % interval; replay and report measure "
                                "90 % intervals (coverage, width): give the method level=0.9")
            ends = [v for v in (est.point, est.lower, est.upper) if v is not None]
            if not all(math.isfinite(v) for v in ends):  # the same trial: `hspr report` refused it, blaming the file
                raise HsprError(f"{type(sess).__name__} gave the estimate {est.point} [{est.lower}, {est.upper}] after "
                                f"{sess.n_queried} outcomes (seed {seed}); a method's estimate and interval ends must be "
                                "finite numbers on the 0-1 scale")
            rec = {"budget": b, "estimate": float(est.point), "mean": est.mean, "median": est.median,
                   "lower": est.lower, "upper": est.upper, "queried": list(sess.queried)}
            if stop is not None:
                rec.update(n_queried=sess.n_queried, stop_reason=why)
            if n > 1:
                rec["batch"] = n
            if est.widened:  # the method's interval missed its point and was extended to it (ScoreEstimate.widened)
                rec["interval_widened"] = True
            if est.shift is not None:
                rec["shift"] = est.shift.to_dict()
            out.append(rec)
    truth = row.full_score()  # read only after every estimate above is recorded
    for rec in out:
        rec["truth"] = truth
    return out


def settings_digest(method: Method, stop: StoppingRule | None = None,
                    sources: Sequence[ResponseMatrix] | None = None, batch: int = 1) -> str:
    """A short digest (12 hex digits) of what a run's label may not say: the method's class and
    settings (:meth:`~hspr.session.Method.get_params`, or :meth:`~hspr.session.Method.settings_for`
    ``sources``, the replay's source matrices) and the stopping rule with all its fields.
    Written into every replay record as ``settings``: ``hspr report`` refuses to let one run
    replace another of the same label made with other settings (two config files of one name,
    another ``--stop-min-tasks``), where it lets a re-run with the same settings replace the
    old one."""
    # a rule of the user's own need not be a dataclass (a mypy triage: asdict raised TypeError): its attributes
    fields = ({} if stop is None else dataclasses.asdict(stop) if dataclasses.is_dataclass(stop)
              else dict(getattr(stop, "__dict__", {})))
    rule = None if stop is None else {"rule": type(stop).__name__, **fields}
    try:
        params = method.get_params() if sources is None else method.settings_for(sources)
    except (AttributeError, TypeError, ValueError):  # a method of the user's own that cannot list them
        return ""  # unknown: the report then lets a re-run replace it, as before digests existed
    settings = {"method": type(method).__name__, "params": params, "stop": rule}
    if batch != 1:  # one task at a time keeps the digests of runs made before batches existed
        settings["batch"] = batch
    blob = json.dumps(settings, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def one_task_fraction(n_tasks: int) -> str:
    """1 / n_tasks as a budget fraction to print (4 significant digits; '1.0', not '1', a task count)."""
    one = f"{1 / n_tasks:.4g}"
    return one if "." in one or "e" in one else one + ".0"


def check_fractions(fractions: Sequence[float], n_tasks: int, label: str) -> tuple[int, ...]:
    """The budget of each fraction (``budget_from_fraction``), each a distinct count >= 1.

    Two fractions of one budget would be one run labelled twice. Used by :func:`replay` and by
    ``hspr replay --budget``.

    Raises
    ------
    BudgetError
        For a fraction outside (0, 1], one that rounds to 0 tasks (naming the fraction that
        gives one task) or two that give the same count, naming ``label`` and ``n_tasks``.
    """
    budgets = tuple(budget_from_fraction(f, n_tasks) for f in fractions)
    zero = [f for f, b in zip(fractions, budgets) if b < 1]
    if zero:
        tasks = f"{n_tasks} task{'' if n_tasks == 1 else 's'}"
        raise BudgetError(f"{', '.join(map(str, zero))} of {label}'s {tasks} rounds to 0 tasks; give a fraction of at least "
                          f"1/{n_tasks}: {one_task_fraction(n_tasks)} gives one task")
    seen: dict[int, float] = {}
    for f, b in zip(fractions, budgets):
        if b in seen:
            raise BudgetError(f"budget fractions {seen[b]} and {f} both give B = {b} of {n_tasks} tasks on {label}; "
                              "give each budget once")
        seen[b] = f
    return budgets


def _run_job(job: ReplayJob, model: FittedModel) -> list[dict]:
    with threadpool_limits(1):  # one BLAS thread per worker: parallelism comes from the jobs
        return _run_targets(job, model)


def _run_targets(job: ReplayJob, model: FittedModel) -> list[dict]:
    """The runs of every target of ``job``, in target order. Those its checkpoint kept (``job.kept``) are taken as
    they are; the others are run, and kept in the checkpoint as they finish (written every
    :data:`~hspr.fitcache.CHECKPOINT_SECONDS`, when the job is stopped, and at its end if it ran that long; the
    replay deletes them when it ends). A job running over :data:`PROGRESS_AFTER` seconds logs its progress."""
    runs = []
    frac = dict(zip(job.budgets, job.fractions))
    checkpoint = _job_checkpoint(job)
    if checkpoint is not None:
        checkpoint.done = dict(job.kept)
    n = job.targets.n_agents
    # the bank label names a shift protocol already ('verified/bash-only'), whose one target set is no fold
    what = f"replay of {job.method} on {job.bank} ({f'fold {job.fold}, ' if job.protocol == 'folds' else ''}seed {job.seed})"
    progress = log_progress(log, what, "targets", after=PROGRESS_AFTER)
    t0 = time.monotonic()
    try:
        for r in range(n):
            row = HiddenRow(job.targets, r)
            recs = job.kept.get(row.agent)
            if recs is None:
                try:
                    recs = run_session(model, row, job.budgets, job.seed, job.stop, job.batch)
                except HsprError as exc:  # an extension trial: 'SRange.estimate() gave 1.3' named no method, run or target
                    exc.args = (f"method {job.method!r} on {job.bank}, target {row.agent!r} (fold {job.fold}, seed "
                                f"{job.seed}): {exc.args[0] if exc.args else exc}", *exc.args[1:])
                    raise
                for rec in recs:
                    rec.update(bank=job.bank, protocol=job.protocol, method=job.method, fold=job.fold, target=row.agent,
                               seed=job.seed, budget_fraction=frac[rec["budget"]], settings=job.settings)
                if checkpoint is not None:
                    checkpoint.add(row.agent, recs)
            runs.extend(dict(rec) for rec in recs)
            if progress:
                progress(r + 1, n)
    except BaseException:  # Ctrl-C, a closed terminal, a failure: keep the targets finished since the last write
        if checkpoint is not None:
            save_on_stop(log, what, checkpoint, n, "targets")
        raise
    if checkpoint is not None and time.monotonic() - t0 >= CHECKPOINT_SECONDS:
        checkpoint.save()  # a long job is kept until its replay ends: an interrupt after it loses none of it
    return runs


def _fit(method: Method, source: ResponseMatrix) -> FittedModel:
    """``method.fit(source)`` with one BLAS thread. In a worker process the fitted model goes back to the
    command by pickle: a method of one's own whose model cannot be pickled is refused here, naming the method
    (a method-writer's trial: loky's remote traceback named none); hspr's own models pickle (tested), so they
    are not pickled twice."""
    import multiprocessing
    import pickle

    with threadpool_limits(1):
        model = method.fit(source)
    if multiprocessing.parent_process() is not None and defined_outside_hspr(model):
        try:
            pickle.dumps(model, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:
            raise MethodError(f"the fitted model of method {getattr(method, 'name', type(method).__name__)!r} "
                              f"({type(model).__qualname__}) cannot be pickled ({type(exc).__name__}: {exc}); with "
                              "--workers > 1 (n_jobs > 1) it goes back from a worker process by pickle: make it "
                              "picklable, or run with one worker") from None
    return model


def replay(
    bank: str,
    matrix: ResponseMatrix,
    methods: dict[str, Method],
    fractions: Sequence[float] = (0.10,),
    seeds: dict[str, Sequence[int]] | None = None,
    folds: list[list[str]] | None = None,
    targets: ResponseMatrix | None = None,
    n_jobs: int = 1,
    backend: str | None = None,
    progress: Callable[[int, int], None] | None = None,
    protocol: str | None = None,
    stop: StoppingRule | None = None,
    batch: int = 1,
    checkpoints: list | None = None,
) -> list[dict]:
    """Replay methods on one bank and return one record per (fold, target, method, seed, budget).

    Parameters
    ----------
    bank : str
        Label written into each record.
    matrix : ResponseMatrix, shape (n_agents, n_tasks)
        0/1 matrix, or success counts of repeated trials (pass rates; only for methods that take
        them, :func:`hspr.session.pass_rate_methods`). Missing cells stay missing in the source rows (methods that cannot fit with
        them raise DataError); a target row's missing cells count as unresolved, in its truth
        and in the outcomes it reveals (the leaderboard convention).
    methods : dict name -> Method
    fractions : budget fractions f; B = round(f * n_tasks).
    seeds : dict name -> seeds; default by each method's ``seed_kind`` (10 / 5 / 1 seeds).
    folds : list of lists of agent ids (target folds); ignored when ``targets`` is given, and one of the two is
        required (:func:`hspr.data.folds.make_folds` gives folds over every agent; HsprError without either).
        Agents in no fold are sources in every fold and never targets (an :class:`~hspr.errors.InputWarning` says so).
    targets : ResponseMatrix, optional
        Evaluate these rows as targets with every row of ``matrix`` as sources (same task ids;
        columns are reordered to ``matrix``'s order). A target id that also names a source row
        gives an :class:`~hspr.errors.InputWarning` (its errors are optimistic).
    n_jobs, backend : joblib workers and backend ('loky', 'dask', 'ray', ...).
    progress : callable(done, total), optional, called as steps finish: first the fits, one per split and
        method (one split with ``targets``, else one per fold), then the sessions, one job per fit and seed
        (``hspr replay``'s bar counts the two apart: a fit can take 300 times a job's time).
    stop : StoppingRule, optional
        End each target's session early when the rule says so (:func:`run_session`).
    batch : int
        Tasks asked per round, chosen jointly before their outcomes are known (:func:`run_session`; ``hspr replay
        --batch``); 1, the default, asks one task at a time. Part of the runs' ``settings`` digest.
    checkpoints : list, optional
        The jobs' checkpoints of their target runs (:func:`_run_targets`) are deleted when the replay ends; when a
        list is given, they are appended to it instead, for the caller to delete (``Checkpoint.clear()``) once its
        own work is done: ``hspr replay --bank all`` deletes them once ``--out`` is written, so the same command run
        again after an interrupt in a later bank resumes the long jobs of the banks it had finished.
    protocol : str, optional
        Label of the source -> target protocol written into each record: default ``"folds"``
        (4-fold replay) or ``"targets"`` (with ``targets``); e.g. ``"forward-20"`` or
        ``"bash-only"`` for a shift protocol.

    Returns
    -------
    list of dict with keys bank, protocol, method, fold, target, seed, budget, budget_fraction,
    estimate, mean, median, lower, upper, queried, truth (0-1 scale), settings
    (:func:`settings_digest`), matrix_digest (the first 16 hex digits of ``matrix``'s digest,
    sorted by id: the source matrix of the runs), plus ``shift`` (a dict) for methods whose
    estimate carries a shift diagnostic, and ``n_queried`` and ``stop_reason`` (None when the
    budget was spent) when ``stop`` is given, and ``batch`` when it is above 1.

    Raises
    ------
    KeyboardInterrupt
        On Ctrl-C (or SIGTERM / SIGHUP under the ``hspr`` command) while the sessions run: the exception
        carries ``runs``, the records of the jobs that had finished (as returned, each job's runs whole),
        and ``jobs``, (jobs finished, jobs in all), so that a caller can keep them, and ``kept_targets``, how
        many target runs of unfinished jobs the fit cache holds (:func:`_run_targets`: the same replay run again
        resumes from them).
    DataError
        For target task ids that differ from the bank's, targets of another trials form than the
        bank's, or a method that refuses missing source cells.
    BudgetError
        For a fraction that is not a number in (0, 1] or rounds to 0 tasks, or two fractions of one budget.
    UnknownIdError
        For a fold agent not in ``matrix``, or seeds keyed by a name not in ``methods``.
    HsprError
        When neither ``folds`` nor ``targets`` is given; for a ``bank`` label that is not a non-empty
        str; for folds that name an agent twice, an
        empty fold or one holding every agent; a seed that is not a whole number >= 0, a seeds
        entry that is not a list, a method that is not a :class:`~hspr.session.Method`, a
        matrix or targets that is not a ResponseMatrix, and an ``n_jobs`` of 0 or not a whole
        number.
    """
    if not isinstance(bank, str) or not bank.strip():  # an API trial: a matrix given first ran, its records unwritable
        raise HsprError(f"bank is the label written into each record, a non-empty str (e.g. 'verified'), got "
                        f"{type(bank).__name__}: the arguments are replay(bank_label, matrix, methods, ...)")
    if not isinstance(methods, Mapping) or not methods:
        raise HsprError(f"methods must be a non-empty dict of label -> Method, e.g. {{'hspr': get_method('hspr')}}, "
                        f"got {type(methods).__name__}")
    # an API trial: each of these failed deep inside (no attribute 'n_tasks', 'seed_kind', ...)
    bad = next((k for k, m in methods.items() if not isinstance(m, Method)), None)
    if bad is not None:
        raise HsprError(f"methods[{bad!r}] is {type(methods[bad]).__name__}, not a Method: give "
                        f"get_method({methods[bad]!r}) if that is a method's name" if isinstance(methods[bad], str) else
                        f"methods[{bad!r}] is {type(methods[bad]).__name__}, not a Method (hspr.methods.get_method)")
    for what, value in (("matrix", matrix), ("targets", targets)):
        if value is not None and not isinstance(value, ResponseMatrix):
            raise HsprError(f"{what} is {type(value).__name__}, not a ResponseMatrix: load a file with "
                            "hspr.data.io.load_matrix, or convert a DataFrame with ResponseMatrix.from_dataframe")
    if not is_number(n_jobs, numbers.Integral) or n_jobs == 0:
        raise HsprError(f"n_jobs must be a whole number of joblib workers, >= 1 (or negative: all cores but "
                        f"|n_jobs| - 1), got {n_jobs!r}")
    if isinstance(fractions, numbers.Real):  # replay(..., fractions=0.1): one budget
        fractions = (fractions,)
    if isinstance(fractions, (str, bytes)) or not hasattr(fractions, "__iter__"):  # an API trial: bare TypeErrors
        raise BudgetError(f"fractions must be a number or a list of numbers in (0, 1], e.g. [0.1], got {fractions!r}")
    fractions = tuple(fractions)
    if not fractions:  # an API trial: [] returned no records, and an empty summary
        raise BudgetError("fractions is empty: give at least one budget fraction, e.g. [0.1]")
    n_batch = _check_batch(batch)
    if stop is not None and not isinstance(stop, StoppingRule):
        raise HsprError(f"stop must be a StoppingRule (e.g. hspr.stopping.WidthBelow(5.0)), got {type(stop).__name__}")
    protocol = protocol or ("targets" if targets is not None else "folds")
    budgets = check_fractions(fractions, matrix.n_tasks, bank)
    if seeds is not None and not isinstance(seeds, Mapping):  # an API trial: a bare TypeError from dict()
        raise HsprError(f"seeds must be a dict of method label -> list of seeds, e.g. {{'hspr': [0, 1, 2]}}, got "
                        f"{type(seeds).__name__} {brief(seeds)}")
    seeds = dict(seeds or {})
    unknown = [k for k in seeds if k not in methods]
    if unknown:
        raise UnknownIdError(f"seeds are given for {unknown[0]!r}, which is not among the methods "
                             f"({', '.join(methods)}); key the seeds by the methods' names")
    single = next((k for k, v in seeds.items() if isinstance(v, (numbers.Integral, str)) or not hasattr(v, "__iter__")), None)
    if single is not None:
        raise HsprError(f"seeds[{single!r}] is {seeds[single]!r}: give a list of seeds, e.g. [{seeds[single]!r}]")
    seeds = {k: [check_seed(s) for s in v] for k, v in seeds.items()}
    for k, v in seeds.items():  # an API trial: [] gave no runs, [0, 0] counted each run twice in the summary
        if not v or len(set(v)) < len(v):
            raise HsprError(f"seeds[{k!r}] is {v!r}: give each seed once, and at least one (or leave {k!r} out for "
                            "its default seeds)")
    for name, m in methods.items():
        if m.seed_kind not in SEEDS_BY_KIND:  # a method-writer's trial: a bare KeyError
            # a method writer's mistake, named by its class (docs/python-api.md)
            raise MethodError(f"methods[{name!r}].seed_kind is {m.seed_kind!r} (class {type(m).__name__}); it must be "
                              f"one of {', '.join(map(repr, SEEDS_BY_KIND))} (the default seeds of replay: 10, 5 or 1 "
                              "path)")
        seeds.setdefault(name, SEEDS_BY_KIND[m.seed_kind])

    if targets is not None:
        targets = align_targets(targets, matrix).fill_missing(0)
        both = sorted(set(targets.agents) & set(matrix.agents))
        if both:  # an API trial: only the CLI said so
            warnings.warn(f"{len(both)} target id(s) also name source rows ({', '.join(both[:5])}"
                          f"{', ...' if len(both) > 5 else ''}): that agent's own row (the same outcomes, or another "
                          "run of it) is in the source fit, so their errors are likely optimistic; drop those rows "
                          "from the matrix for an honest test", InputWarning, stacklevel=2)
        splits = [(0, matrix, targets)]
    else:
        if folds is None:
            raise HsprError("give folds (lists of target agent ids, e.g. hspr.data.folds.make_folds(matrix.agents)) "
                            "or targets (a ResponseMatrix of target rows)")
        splits = []
        indices = fold_indices(matrix.agents, folds)
        left = sorted(set(matrix.agents) - {matrix.agents[i] for idx in indices for i in idx})
        if left:  # an audit: half of a bank's agents were scored as its whole (HSPR_SPEC 7: every agent a target once)
            warnings.warn(f"{len(left)} of {matrix.n_agents} agents are in no fold ({', '.join(left[:3])}"
                          f"{', ...' if len(left) > 3 else ''}): they are sources in every fold and never targets, so "
                          f"the results cover {matrix.n_agents - len(left)} agents; hspr.data.folds.make_folds("
                          "matrix.agents) gives folds over all of them", InputWarning, stacklevel=2)
        filled = matrix.fill_missing(0)  # once: a target's truth counts its blanks as unresolved (warned once, not per fold)
        for k, idx in enumerate(indices):
            splits.append((k, matrix.drop_rows(idx), filled.rows(idx)))

    fit_specs = [(k, name) for k, _, _ in splits for name in methods]
    source_of = {k: src for k, src, _ in splits}
    target_of = {k: tgt for k, _, tgt in splits}
    digests = {name: settings_digest(m, stop, list(source_of.values()), n_batch) for name, m in methods.items()}
    # target runs kept in the fit cache for a re-run of a stopped replay: only for hspr's own methods (a method of
    # one's own may change without the code digest seeing it), with settings it can list, on workers of this machine
    kept_by = {k: src.digest() for k, src in source_of.items()} if backend in LOCAL_BACKENDS else {}
    jobs = [ReplayJob(bank, protocol, name, k, int(s), budgets, tuple(fractions), target_of[k], stop, digests[name], n_batch,
                      kept_by.get(k, "") if digests[name] and not defined_outside_hspr(methods[name]) else "")
            for k, name in fit_specs for s in seeds[name]]
    kept = [_job_checkpoint(job) for job in jobs]  # None for a job that keeps none
    jobs = _resumed(jobs, kept)
    total = len(fit_specs) + len(jobs)
    done = 0
    with workers(backend, n_jobs):
        par = streaming_parallel()
        models = {}
        # one fit (a shift protocol, one method): made here, so a fit that runs jobs of its own (Method.parallel_fit:
        # hspr_robust's held-out replays) spreads them over the workers instead of running them in one
        fitted = ((_fit(methods[n], source_of[k]) for k, n in fit_specs) if len(fit_specs) == 1 else
                  map(warned_again, par(delayed(WithWarnings(_fit))(methods[n], source_of[k]) for k, n in fit_specs)))
        for spec, model in zip(fit_specs, fitted):
            models[spec] = model
            done += 1
            if progress:
                progress(done, total)
        runs: list[dict] = []
        try:
            for res in streaming_parallel(unordered=True)(
                delayed(WithWarnings(_run_job))(job, models[(job.fold, job.method)]) for job in jobs
            ):
                runs.extend(warned_again(res))
                done += 1
                if progress:
                    progress(done, total)
        except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM / SIGHUP (hspr._entry.Terminated)
            # a hostile trial: an interrupted `hspr replay` lost every finished run without a word; the caller may keep them
            exc.runs = _finished(runs, methods, models, matrix)
            exc.jobs = (done - len(fit_specs), len(jobs))
            ended = {(r["method"], r["fold"], r["seed"]) for r in runs}
            exc.kept_targets = sum(len(cp.load()) for job, cp in zip(jobs, kept)
                                   if cp is not None and (job.method, job.fold, job.seed) not in ended)
            raise
    for cp in filter(None, kept):  # the replay ended: a re-run computes its runs again (once the caller's work is done)
        if checkpoints is None:
            cp.clear()
        else:
            checkpoints.append(cp)
    return _finished(runs, methods, models, matrix)


def _resumed(jobs: list[ReplayJob], checkpoints: list[Checkpoint | None]) -> list[ReplayJob]:
    """``jobs`` with the target runs their ``checkpoints`` kept (a stopped replay of the same jobs), said in one
    line."""
    out, n_jobs, n_targets = [], 0, 0
    for job, cp in zip(jobs, checkpoints, strict=True):
        kept = {} if cp is None else cp.load()
        if kept:
            n_jobs, n_targets = n_jobs + 1, n_targets + len(kept)
            job = dataclasses.replace(job, kept=kept)
        out.append(job)
    if n_targets:
        log.warning("replay of %s: resumed with the runs of %d target(s) in %d of its %d job(s) that a stopped replay "
                    "of the same settings finished (kept in the fit cache)", jobs[0].bank, n_targets, n_jobs, len(jobs))
    return out


def _finished(runs: list[dict], methods: Mapping[str, Method], models: dict, matrix: ResponseMatrix) -> list[dict]:
    """``runs`` in :func:`replay`'s order (method as given, fold, target, seed, budget), each with the source matrix's
    digest and the settings its fit chose (``fitted_settings``, for methods that choose)."""
    order = {name: i for i, name in enumerate(methods)}
    runs.sort(key=lambda r: (order[r["method"]], r["fold"], r["target"], r["seed"], r["budget"]))
    digest = matrix.canonical().digest()[:16]  # a report refuses two matrices under one label (a re-trial)
    for r in runs:
        r["matrix_digest"] = digest
        chosen = getattr(models[(r["fold"], r["method"])], "fitted_settings", None)
        if chosen is not None:  # the settings the fit chose on this fold's sources (hspr_auto's selection)
            r["fitted_settings"] = chosen
    return runs


def is_results_doc(doc) -> bool:
    """Whether parsed JSON ``doc`` is a results file that ``hspr replay --out`` writes: an object with a ``runs``
    list (a session's ``--config`` and an output about to be replaced are checked with it)."""
    return isinstance(doc, dict) and isinstance(doc.get("runs"), list)


def align_targets(targets: ResponseMatrix, bank: ResponseMatrix) -> ResponseMatrix:
    """Reorder ``targets``' columns to ``bank``'s task order; DataError naming differing ids."""
    have, known = set(targets.tasks), set(bank.tasks)
    missing = [t for t in bank.tasks if t not in have]
    extra = [t for t in targets.tasks if t not in known]
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"{len(missing)} bank task(s) absent (e.g. {', '.join(map(repr, missing[:3]))})")
        if extra:
            parts.append(f"{len(extra)} task(s) not in the bank (e.g. {', '.join(map(repr, extra[:3]))})")
        fix = []
        if missing:
            # not 'add the absent tasks as empty cells': a target's empty cell counts as unresolved in its truth
            fix.append("score the subset the targets ran with --tasks FILE (their task ids)")
        if extra:
            fix.append("drop the tasks the bank does not have")
        raise DataError(f"{targets.source}: task ids differ from {bank.source}: {'; '.join(parts)}. Targets need the "
                        f"bank's task columns: {'; '.join(fix)}")
    if targets.trials != bank.trials:
        def kind(m):
            return "one 0/1 outcome per task" if m.trials is None else f"success counts of {m.trials} trials per task"
        raise DataError(f"{targets.source}: the targets have {kind(targets)} but {bank.source} has {kind(bank)}; "
                        "give targets of the bank's form")
    idx = np.array([targets.task_index(t) for t in bank.tasks])
    miss = None if targets.missing is None else targets.missing[:, idx]
    return ResponseMatrix(targets.agents, bank.tasks, targets.values[:, idx], miss, targets.source, targets.trials)
