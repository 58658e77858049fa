"""Read the trials of Harbor jobs (the harness of Terminal-Bench 2.0 and its adapted benchmarks).

Harbor writes one folder per job, ``jobs/<job_name>/``, holding the job's summary
``result.json`` (counts; not read here) and one folder per trial, ``<trial_name>/result.json``:
its ``TrialResult`` (Harbor's ``harbor/models/trial/result.py``) with ``task_name``,
``trial_name``, ``source`` (the dataset), ``agent_info`` (``name``, ``model_info.name``),
``verifier_result`` (``rewards``, the values the task's tests wrote; older Harbor: ``reward``;
null when the trial was not graded) and ``exception_info`` (``exception_type``, ...). A trial's
reward is read as Harbor's ``Mean`` metric reads it (``harbor/metrics/mean.py``): the only value
of ``rewards``, else its ``reward`` key; a trial without one counts 0 there.

hspr takes pass/fail outcomes, so a reward must be the number 0 or 1, and a trial without one is
classified by the exception it ended in (:attr:`HarborTrial.verdict`): the agent's own failure
(:data:`AGENT_FAILURES`) fails; a cancelled trial (:data:`UNFINISHED`) is not a trial yet
(``harbor jobs resume`` runs it again); any other exception, or none (a trial that was not graded,
e.g. with verification disabled), is a harness error, as a SWE-bench harness error is: the outcome
says nothing about the agent, so the task needs a re-run (:mod:`hspr.harness`), or in a bank its
cell is missing. A trial folder's own subfolders (the agent's logs, its workspace and whatever
links in them point to) are not searched for trials.
Readers: :func:`hspr.harness.read_harbor_job` (one agent's outcomes for a live session) and
:func:`hspr.data.io.read_harbor_bank` (a response matrix of every agent in the jobs).
"""

from __future__ import annotations

import os
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..errors import shorten
from ..fileio import find_below, read_json
from .matrix import DataError

RESULT = "result.json"
"""The file Harbor writes in each trial folder (and the job's summary, in the job folder)."""

CONFIG = "config.json"
"""The job's settings (``JobConfig``), in the job folder from the start (each trial has its own too)."""

AGENT_FAILURES = frozenset({"AgentTimeoutError", "VerifierTimeoutError", "RewardFileNotFoundError",
                            "RewardFileEmptyError", "VerifierOutputParseError", "AgentSafetyRefusalError"})
"""Exceptions that end a trial without a reward through the agent's own doing (it ran out of time,
left no reward file or output the verifier could read, or refused the task): the trial failed.
The first five are the default ``RetryConfig.exclude_exceptions`` of the Harbor version read
(exceptions Harbor does not retry). A model provider's faults (an API usage limit, failed
authentication, an unknown model) mean the agent did not run: hspr takes them as harness errors."""

UNFINISHED = frozenset({"CancelledError"})
"""Exceptions of a trial that was interrupted (the job was stopped): not a trial yet."""

RESOLVED, FAILED, ERROR, NOT_YET = "resolved", "failed", "error", "unfinished"


TRIAL_KEYS = ("task_name", "trial_name", "verifier_result")
"""The keys that make a ``result.json`` a trial's (:func:`is_trial`)."""


def is_trial(data: object) -> bool:
    """A trial's ``result.json``: names its task and trial and holds a ``verifier_result`` (:data:`TRIAL_KEYS`)."""
    return isinstance(data, dict) and all(k in data for k in TRIAL_KEYS)


def refuse_partial_trial(data: object, path: Path, error: type[Exception]) -> None:
    """Raise ``error`` for a ``result.json`` that names a Harbor task or trial but lacks a key of
    :data:`TRIAL_KEYS` (hand-made, or another Harbor version), naming the keys missing and the ones
    hspr reads: it was reported as an unknown folder layout, or read as another form (a new-user
    trial)."""
    if not isinstance(data, dict) or is_trial(data) or not {"task_name", "trial_name"} & set(data):
        return
    lacks = ", ".join(repr(k) for k in TRIAL_KEYS if k not in data)
    raise error(f"{path}: a Harbor trial's {RESULT} without {lacks}; hspr reads 'task_name', 'trial_name', "
                "'verifier_result' ({\"rewards\": {\"reward\": 0 or 1}}, or null when the trial was not graded), "
                "'exception_info.exception_type', 'agent_info' ('name', 'model_info.name') and 'source': write the "
                "trial's result as Harbor does (harbor/models/trial/result.py), or move the file out if it is not a "
                "trial's")


def is_job_config(data: object) -> bool:
    """A job's ``config.json`` (its ``JobConfig``), written when the job starts."""
    return isinstance(data, dict) and "job_name" in data and "n_attempts" in data


def planned_attempts(configs: list[Path], error: type[Exception] = DataError) -> int | None:
    """The trials per task the jobs were started with, from their ``config.json`` files (``configs``; a
    trial's own config is not a job's and is passed over): their ``n_attempts`` when the jobs agree,
    jobs of one attempt aside (5 for jobs of 5 beside re-runs of 1); None for none, when every job ran
    one attempt (jobs of one attempt each add up: a third re-trial), for jobs of different counts (5
    and 10), or for values that are not whole numbers >= 1 (and a file that is not a regular one)."""
    counts = set()
    for f in configs:
        doc = try_json(f, error) if os.path.isfile(f) else None  # a named pipe would block (a third re-trial)
        n = doc.get("n_attempts") if is_job_config(doc) else None
        if isinstance(n, int) and not isinstance(n, bool) and n >= 1:
            counts.add(n)
    more = counts - {1}
    return next(iter(more)) if len(more) == 1 else None


def started(configs: list[Path], error: type[Exception] = DataError) -> Path | None:
    """The first of ``configs`` that is a job's or a trial's ``config.json`` (a job or trial just
    started, no result yet), None for none; read until one is found."""
    return next((f for f in configs if is_job_config(c := try_json(f, error)) or is_trial_config(c)), None)


def is_trial_config(data: object) -> bool:
    """A trial's own ``config.json`` (Harbor's ``TrialConfig``: ``task``, ``trial_name``, ``trials_dir``),
    written when the trial starts: a folder holding one and no ``result.json`` is a running trial."""
    return isinstance(data, dict) and {"task", "trial_name", "trials_dir"} <= set(data) and not is_job_config(data)


def is_job_summary(data: object) -> bool:
    """A job's own ``result.json`` (beside its trial folders): counts, no trial."""
    return isinstance(data, dict) and "n_total_trials" in data and "task_name" not in data


@dataclass(frozen=True)
class HarborTrial:
    """One trial of a Harbor job.

    Attributes
    ----------
    file : Path
        Its ``result.json``, as found below the path read.
    task, name : str
        ``task_name`` and ``trial_name``.
    agent : str
        ``agent_info.name / agent_info.model_info.name`` (either may be absent; '' for neither).
    reward : float or None
        0.0 or 1.0, None when the trial has no reward.
    exception : str or None
        The exception type it ended in (printable letters only, at most 60), None for none.
    source : str or None
        The dataset Harbor names (e.g. ``terminal-bench@2.0``).
    """

    file: Path
    task: str
    name: str
    agent: str
    reward: float | None
    exception: str | None
    source: str | None

    @property
    def verdict(self) -> str:
        """'resolved' (reward 1), 'failed' (reward 0, or none after an agent failure), 'unfinished'
        (cancelled) or 'error' (no reward after another exception or none: a harness error)."""
        if self.reward is not None:
            return RESOLVED if self.reward == 1 else FAILED
        if self.exception in UNFINISHED:
            return NOT_YET
        return FAILED if self.exception in AGENT_FAILURES else ERROR

    @property
    def reason(self) -> str | None:
        """Why it did not pass, for a message: 'tests failed', the exception, or 'not graded'."""
        if self.reward == 1:
            return None
        return "tests failed" if self.reward == 0 else self.exception or "not graded"


def _reward(path: Path, r: dict, error: type[Exception]) -> float | None:
    """A trial's reward as Harbor's ``Mean`` reads it; None for none. ``error`` for an empty
    ``rewards`` or several without a ``reward`` key (which that metric refuses too) and for a
    reward that is not the number 0 or 1."""
    task = r.get("task_name")
    v = r.get("verifier_result")
    if v is None:
        return None
    if not isinstance(v, dict):
        raise error(f"{path}: 'verifier_result' of {task!r} must be an object or null, got {shorten(repr(v))}")
    rewards = v.get("rewards")
    if isinstance(rewards, dict):
        if len(rewards) == 1:
            value = next(iter(rewards.values()))
        elif "reward" in rewards:
            value = rewards["reward"]
        else:
            raise error(f"{path}: task {task!r} has {len(rewards)} rewards ({shorten(', '.join(map(str, rewards)))}) "
                        "and none named 'reward'; Harbor's mean reward reads one value per trial, and so does hspr: "
                        "write the pass/fail reward as 'reward'")
    elif rewards is not None:
        raise error(f"{path}: 'verifier_result.rewards' of {task!r} must be an object, got {shorten(repr(rewards))}")
    else:
        value = v.get("reward")
    if value is None:
        return None
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not number or value not in (0, 1):
        why = ("hspr's banks hold pass/fail outcomes, so a partial reward cannot be recorded" if number and 0 < value < 1
               else "a reward is the number 0 or 1 (a text or true/false is not read as one)")
        raise error(f"{path}: task {task!r} has reward {shorten(repr(value))}; {why}")
    return float(value)


def _exception(r: dict) -> str | None:
    exc = r.get("exception_info")
    if not isinstance(exc, dict):
        return None
    name = "".join(c for c in str(exc.get("exception_type") or "") if c.isalnum() or c in "._-")[:60]
    return name or "exception"


def printable(text: object) -> str:
    """``text`` in Unicode NFC with every character that is not printable (an escape, a newline) as
    '?': names from a file go into messages, session files and bank rows (one name in two Unicode
    forms is one name; none is cut short, so two long model names stay two rows)."""
    return "".join(c if c.isprintable() else "?" for c in unicodedata.normalize("NFC", str(text).strip()))


def try_json(path: Path, error: type[Exception]) -> object:
    """The JSON of ``path``, or the ``error`` that names what is wrong with it."""
    try:
        return read_json(path, error, hint="a result.json cut short is being written (try again once the trial "
                                           "ends) or was interrupted (re-run the trial)")
    except error as e:
        return e


def scan(folder: Path, names: tuple[str, ...] = (), error: type[Exception] = DataError
         ) -> tuple[list[tuple[Path, object]], dict[str, list[Path]]]:
    """Walk ``folder`` for Harbor results: ([(a ``result.json`` as found, its JSON or the ``error``
    naming it), ...] sorted by path, {name: files of each of ``names`` found}).

    One walk that follows links to folders, each real folder once (as
    :func:`hspr.fileio.find_below`), but not into the subfolders of a trial (a folder whose
    ``result.json`` is a trial's, other than ``folder`` itself, or a trial still running: its own
    ``config.json`` is a ``TrialConfig`` and its ``result.json`` is absent or does not parse): they
    hold the agent's logs and workspace, whose files (and links, to anywhere) are not results. A ``result.json`` that does not
    parse in a folder with trial subfolders is the job's summary caught while Harbor rewrites it,
    and is left out.
    """
    results: list[tuple[Path, object]] = []
    jobs: set[Path] = set()  # folders holding a trial folder

    def trial(here: Path, files: list[str], dirs: list[str]) -> bool:  # a trial's folder: leave its own folders
        # a trial still running (its TrialConfig config.json; no result yet, or one caught mid-write): its agent's
        # logs are not results (a hostile trial and its re-trial); its config is read only then, not in every trial
        def running() -> bool:
            return CONFIG in files and os.path.isfile(here / CONFIG) and is_trial_config(try_json(here / CONFIG, error))

        if RESULT not in files or not os.path.isfile(here / RESULT):  # not a named pipe, which would block
            return running()
        doc = try_json(here / RESULT, error)
        results.append((here / RESULT, doc))
        # the folder given is a trial's unless trials sit below it (a trial's result copied to the job's root)
        if is_trial(doc) and (here != Path(folder) or not any(is_trial(try_json(here / d / RESULT, error))
                                                             for d in dirs if (here / d / RESULT).is_file())):
            jobs.add(here.parent)
            return True
        return isinstance(doc, error) and running()  # its unreadable result stays in the list, as a trial's

    found = dict(zip(names, find_below(Path(folder), names, trial)))
    results = [(f, d) for f, d in sorted(results, key=lambda x: x[0])
               if not (isinstance(d, Exception) and f.parent in jobs)]
    return results, found


def read_trials(path: str | Path, error: type[Exception] = DataError, keep: Callable[[str], bool] | None = None,
                scanned: tuple | None = None) -> tuple[list[HarborTrial], list[str], list[Exception], int | None]:
    """The trials below ``path`` (a job folder, a folder of jobs, or one trial's ``result.json``),
    in the order of their paths; the task ids ``keep`` rejected (skipped before any check of
    their trials, in order); in a folder, the errors naming each ``result.json`` that is not
    valid JSON (a trial of a running job caught while Harbor writes it, or a damaged file), whose
    trials are left out; and the trials per task the jobs were started with
    (:func:`planned_attempts` of the job ``config.json`` files found; None for a file).

    Each real folder is visited once (:func:`scan`: a folder linked in twice is read once);
    ``result.json`` files inside a trial's own folders (an agent's logs), job summaries and JSON
    naming neither a ``task_name`` nor a ``trial_name`` (another tool's file) are not trials.
    ``scanned``, the result of ``scan(path, (CONFIG,), error)`` when the caller has walked the
    folder already, is used instead of walking it again.

    Raises
    ------
    error
        (DataError by default) naming the file for a trial without ``task_name``, ``trial_name``
        or ``verifier_result`` or whose names are not text, a reward Harbor's mean cannot read or
        that is not 0 or 1, a trial name given twice for one agent's task (a copied trial), a file
        given alone that is not valid JSON, and a path with no trial (the first unreadable file's
        error when there are only such).
    """
    path = Path(path)
    if scanned is not None and path.is_dir():  # the caller's walk of this folder (:func:`scan`, with CONFIG)
        found, other = scanned
    else:
        found, other = scan(path, (CONFIG,), error) if path.is_dir() else ([(path, try_json(path, error))], {CONFIG: []})
    trial_dirs = {f.parent for f, d in found if is_trial(d)}  # their own config.json is no job's: not read again
    planned = planned_attempts([c for c in other[CONFIG] if c.parent not in trial_dirs], error)
    docs = {f: d for f, d in found
            if not is_job_summary(d) and (isinstance(d, error) or isinstance(d, dict) and ("task_name" in d or
                                                                                          "trial_name" in d))}
    unreadable = [d for d in docs.values() if isinstance(d, error)]
    if unreadable and (not path.is_dir() or len(unreadable) == len(docs)):
        raise unreadable[0]
    if not docs:
        raise error(f"{path}: no Harbor trial {RESULT} found (no trial has finished yet?); expected a job folder "
                    f"jobs/<job_name>/ whose trial folders each hold a {RESULT}")
    out: list[HarborTrial] = []
    skipped: dict[str, None] = {}  # an ordered set
    seen: dict[tuple[str, str, str], Path] = {}  # (agent, task, trial name) -> its file
    for f, r in docs.items():
        if isinstance(r, error):
            continue
        refuse_partial_trial(r, f, error)
        if not is_trial(r):
            raise error(f"{f}: not a Harbor trial result (it needs 'task_name', 'trial_name' and 'verifier_result'); "
                        "a job folder holds one trial folder per trial")
        task, name = r["task_name"], r["trial_name"]
        if not isinstance(task, str) or not task.strip() or not isinstance(name, str) or not name.strip():
            raise error(f"{f}: 'task_name' and 'trial_name' must be non-empty text, got {task!r} and {name!r}")
        task, name = task.strip(), name.strip()
        if keep is not None and not keep(task):
            skipped[task] = None
            continue
        info = r.get("agent_info") if isinstance(r.get("agent_info"), dict) else {}
        model = info.get("model_info") if isinstance(info.get("model_info"), dict) else {}
        agent = " / ".join(printable(x) for x in (info.get("name"), model.get("name")) if x is not None and printable(x))
        if (agent, task, name) in seen:
            raise error(f"{f}: trial {name!r} of {task!r} again ({seen[agent, task, name]}); each trial is one result: "
                        "drop the copy")
        seen[agent, task, name] = f
        source = printable(r["source"]) if isinstance(r.get("source"), str) and printable(r["source"]) else None
        reward, exc = _reward(f, r, error), _exception(r)
        verifier = (r.get("config") or {}).get("verifier") if isinstance(r.get("config"), dict) else None
        if reward is None and exc is None and isinstance(verifier, dict) and verifier.get("disable"):
            exc = "verification disabled"  # a harness error: the job ran without grading (a re-trial)
        out.append(HarborTrial(f, task, name, agent, reward, exc, source))
    return out, list(skipped), unreadable, planned
