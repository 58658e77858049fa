"""Read task outcomes from the outputs of the official SWE-bench evaluation harness (and of Terminal-Bench's ``tb run`` and Harbor).

A live session (:mod:`hspr.live`) conditions on binary outcomes; this module turns what the
harness writes into per-instance outcomes, one :class:`HarnessOutcome` per instance id, and
says for each one *why* it got its status. It never imports ``swebench``: the formats below
were read off the harness's own code (``swebench/harness/grading.py::get_eval_report``,
``run_evaluation.py::run_instance`` and ``reporting.py::make_run_report``, swebench 4.x-5.x)
and off the ``sb-cli`` client (``sb_cli/get_report.py``).

Supported forms (:func:`detect_form` picks one)
-----------------------------------------------
``instance_report``
    One per-instance ``report.json`` as ``run_instance`` writes it under
    ``logs/run_evaluation/<run_id>/<model>/<instance_id>/``:
    ``{instance_id: {"patch_is_None", "patch_exists", "patch_successfully_applied",
    "resolved", ["infra_failure", "infra_failure_reason"], ["tests_status"]}}``.
``log_dir``
    A folder (the run's log folder or any folder above the instance folders): every
    ``report.json`` below it, plus instance folders that have a ``run_instance.log`` but no
    ``report.json`` (the harness raised before grading).
``run_summary``
    The run report ``<model>.<run_id>.json`` that ``make_run_report`` writes, with
    ``schema_version: 2`` and the id lists ``resolved_ids``, ``unresolved_ids``,
    ``error_ids``, ``empty_patch_ids``, ``completed_ids``, ``incomplete_ids``,
    ``submitted_ids`` (newer harnesses add the advisory ``infra_failure_ids``,
    ``ambiguous_failure_ids`` and ``failure_reasons``).
``sb_cli``
    The report ``sb-cli get-report`` / ``sb-cli submit`` saves
    (``sb-cli-reports/<subset>__<split>__<run_id>.json``): the counts the client prints
    (``total_instances``, ``submitted_instances``, ``completed_instances``,
    ``resolved_instances``, ``error_instances``, ``pending_instances``,
    ``failed_instances``) and the harness's id lists. The report is built server-side; the
    id lists are read under the harness's names, plus ``pending_ids`` / ``failed_ids`` if
    present. A report with counts only (no id lists) is refused: it does not say which task
    had which outcome.
``csv``
    A plain CSV ``instance_id,resolved`` (header optional, extra columns ignored); outcomes
    1/0, true/false, resolved/unresolved.
``tb_run``
    A Terminal-Bench 1.x run's ``results.json`` as ``tb run`` writes it under
    ``runs/<run_id>/`` (its ``BenchmarkResults``, ``terminal_bench/harness/models.py``): a
    ``results`` list with one entry per trial, ``{"task_id", "trial_name", "is_resolved":
    true/false/null, "failure_mode", ...}``. A task's trials are counted: on a bank of
    repeated trials it needs exactly the bank's number of them (``tb run --n-attempts``), and
    its pass rate is the share resolved; on a 0/1 bank, one trial. Every trial not resolved
    (a test or agent timeout, an agent error, ``is_resolved`` null) is a failure, as ``tb``'s own
    accuracy counts it; the detail names the failure modes.
``harbor_job``
    A Harbor job folder (``jobs/<job_name>/``; Harbor runs Terminal-Bench 2.0 and adapted
    benchmarks): one ``<trial_name>/result.json`` per trial (its ``TrialResult``: ``task_name``,
    ``trial_name``, ``agent_info``, ``verifier_result.rewards``, ``exception_info``), or one such
    file. A trial's reward is read as Harbor's mean reward reads it and must be 0 or 1; a trial
    without one failed (the agent's own failure), is a harness error (the environment or provider
    failed, or nothing graded it) or is not a trial yet (cancelled): :mod:`hspr.data.harbor`. A
    task needs the bank's number of graded trials (``harbor run --n-attempts``); one with fewer is
    left out with a note, or needs a re-run when harness errors make up the rest. The job's own
    summary ``result.json`` is not read (given alone, its folder is), nor a trial's own folders.
``session``
    Another ``hspr live`` session file: the outcomes recorded in it (its ``tell`` events). The
    way to carry outcomes into a new session when the old one can no longer be opened (its
    bank matrix changed) or was started with other settings.

What each harness category means for the estimate
-------------------------------------------------
=========================  ===========  =====================================================
harness category           status       reason
=========================  ===========  =====================================================
``resolved_ids`` /         resolved     the FAIL_TO_PASS and PASS_TO_PASS tests all pass.
``resolved: true``
``unresolved_ids`` /       unresolved   graded: the agent's patch ran and did not fix it
``resolved: false``                     (including a patch whose test log has no results).
``empty_patch_ids`` /      empty_patch  the agent produced no patch: a failure of the agent,
``patch_is_None``                       so it counts as unresolved (outcome 0).
``error_ids``, no          error        the harness raised before grading (container or
``report.json``                         image failure, timeout, crash): not evidence about
                                        the agent. Left pending; it needs a re-run. The
                                        leaderboard counts these as unresolved
                                        (``errors_as_unresolved`` in :mod:`hspr.live`).
``infra_failure: true`` /  error        the harness classified the failure as an environment
``infra_failure_ids``                   fault (browser/display/OOM/docker/network), "not
                                        plausibly caused by the patch"; like an error.
``ambiguous_failure_ids``  unchanged    advisory only (could be the patch or the
                                        environment): kept as the harness graded it.
patch did not apply        unresolved   (log folders only) ``run_instance.log`` says
(``>>>>> Patch Apply                    ``>>>>> Patch Apply Failed``: the agent's patch is
Failed``)                               broken, a failure of the agent. In a run summary
                                        these sit in ``error_ids`` and cannot be told apart.
``incomplete_ids``,        ignored      no prediction was submitted / not evaluated yet: no
``pending_ids``                         outcome exists.
=========================  ===========  =====================================================

Every reader validates as it reads and raises :class:`HarnessFormatError` naming the file
(and key, line or instance) for malformed input.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from .data import harbor
from .data.matrix import DataError
from .errors import shorten
from .fileio import csv_records, fill_header_tail, find_below, json_kind, loads, read_json, read_text
from .outcomes import SPELLINGS, graded_successes, is_missing, normalise, outcome, pass_rate, trial_successes, whole_count

RESOLVED, UNRESOLVED, EMPTY_PATCH, ERROR, PARTIAL = "resolved", "unresolved", "empty_patch", "error", "partial"
STATUSES = (RESOLVED, UNRESOLVED, EMPTY_PATCH, ERROR, PARTIAL)
"""Per-instance statuses; :attr:`HarnessOutcome.outcome` maps them to 1 / 0 / 0 / None."""

LOG_REPORT = "report.json"
TB_RESULTS = "results.json"  # what `tb run` writes in runs/<run_id>/
LOG_INSTANCE = "run_instance.log"
APPLY_PATCH_FAIL = ">>>>> Patch Apply Failed"
SUMMARY_SCHEMA_VERSION = 2
SUMMARY_ID_LISTS = ("resolved_ids", "unresolved_ids", "error_ids", "empty_patch_ids", "completed_ids",
                    "incomplete_ids", "submitted_ids", "infra_failure_ids", "ambiguous_failure_ids")
SB_CLI_ID_LISTS = ("pending_ids", "failed_ids")
SB_CLI_KEYS = ("pending_instances", "failed_instances")
"""Count keys only sb-cli's report has (the local harness writes neither)."""

FORMS = MappingProxyType({
    "instance_report": "per-instance report.json {instance_id: {'resolved': ..., 'patch_is_None': ...}}",
    "log_dir": "harness log folder (logs/run_evaluation/<run_id>/<model>/<instance_id>/report.json)",
    "run_summary": "harness run summary <model>.<run_id>.json (schema_version 2, resolved_ids/unresolved_ids/...)",
    "sb_cli": "sb-cli report <subset>__<split>__<run_id>.json",
    "csv": "CSV instance_id,resolved",
    "tb_run": "Terminal-Bench run results.json (tb run: runs/<run_id>/results.json, one entry per trial)",
    "harbor_job": "Harbor job folder (jobs/<job_name>/<trial_name>/result.json, one per trial) or one trial's result.json",
    "session": "another hspr live session file (its recorded outcomes)",
})



class HarnessFormatError(DataError):
    """A harness output that cannot be read; the message names the file and what is wrong."""


@dataclass(frozen=True)
class HarnessOutcome:
    """The harness's verdict on one instance.

    Attributes
    ----------
    instance_id : str
    status : {'resolved', 'unresolved', 'empty_patch', 'error', 'partial'}
        ('partial': some but not all of a task's repeated trials passed)
    detail : str
        Where the status came from (e.g. ``"error_ids"``, ``"report.json: patch_is_None"``,
        ``"infra_failure: out_of_memory"``).
    source : str
        The file it was read from.
    rate : float, optional
        Pass rate over the task's repeated trials (:func:`read_trials_outcomes`); None for
        one run.
    rate_if_unresolved : float, optional
        For a task of repeated trials with a harness error: its pass rate when the errored trials
        count as failed and its graded trials stand (``errors_as_unresolved``; None when the file
        does not give all its trials, e.g. the counts form: then the whole task fails).
    """

    instance_id: str
    status: str
    detail: str
    source: str
    rate: float | None = None
    rate_if_unresolved: float | None = None

    @property
    def outcome(self) -> float | None:
        """1 resolved, 0 unresolved or empty patch, None for a harness error (needs a re-run); the
        pass rate for repeated trials."""
        if self.rate is not None:
            return self.rate
        return {RESOLVED: 1, UNRESOLVED: 0, EMPTY_PATCH: 0}.get(self.status)


@dataclass
class HarnessRead:
    """All outcomes read from one input.

    Attributes
    ----------
    form : str
        One of :data:`FORMS`.
    source : str
        The path read.
    outcomes : list of HarnessOutcome
        One per instance id, in the order read (sorted ids for the summary forms).
    notes : list of str
        What was read but carries no outcome (e.g. incomplete ids), for the user.
    skipped : list of str
        Ids the reader was asked to skip (``keep``) before checking them, in the order read.
    agent : str, optional
        The agent (and model) the outcomes are of, where the form names it (a Harbor job).
    datasets : list of str
        The datasets the outcomes' tasks are of, where the form names them (a Harbor job's ``source``).
    header_like : tuple of str, optional
        The fields of a header-less outcome CSV's first line when its outcome is a word (``id,resolved``):
        perhaps a header whose id column is named otherwise than ``instance_id`` / ``task_id``, said when its
        id is no task.
    method : dict, optional
        Another session file's method header (``name``, ``config``), where the form is one
        (:func:`read_session_outcomes`), so that carrying its outcomes over can say when it ran other
        settings without reading the file again.
    hidden_agent : str, optional
        For a trial session's file (``hspr live start --hide``): the bank agent whose outcomes it
        holds, so that they are not carried into a session that has that agent among its sources.
    agent_label : str, optional
        For another session's file: the label it was started with (``hspr live start --agent``),
        so that carrying its outcomes into a session labelled otherwise is noted.
    unasked : tuple of str
        For another session's file: the tasks whose outcome it recorded without having asked them (its
        ``tell`` event's ``asked`` false), so that carrying them into a session of a method that averages
        its own random draws is noted (:class:`~hspr.errors.UnaskedTaskWarning`).
    """

    form: str
    source: str
    outcomes: list[HarnessOutcome] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    agent: str | None = None
    datasets: list[str] = field(default_factory=list)
    header_like: tuple[str, ...] | None = None
    method: dict | None = None
    hidden_agent: str | None = None
    agent_label: str | None = None
    unasked: tuple[str, ...] = ()

    def counts(self) -> dict[str, int]:
        """Number of outcomes per status ('partial' only when some task has it: repeated trials)."""
        n = {s: sum(o.status == s for o in self.outcomes) for s in STATUSES}
        return {s: k for s, k in n.items() if s != PARTIAL or k}


# ---------------------------------------------------------------------- helpers
def _read_text(path: Path) -> str:
    return read_text(path, HarnessFormatError)


def _load_json(path: Path, text: str | None = None):
    return read_json(path, HarnessFormatError, text=text,
                     hint="a truncated report means the evaluation was interrupted: re-run it")


def _id_list(path: Path, data: dict, key: str) -> list[str]:
    ids = data.get(key, [])
    if not isinstance(ids, list):
        raise HarnessFormatError(f"{path}: '{key}' must be a list of instance ids, got {json_kind(ids)}")
    for i, x in enumerate(ids):
        if not isinstance(x, str) or not x.strip():
            raise HarnessFormatError(f"{path}: '{key}'[{i}] = {x!r} is not an instance id string")
    ids = [x.strip() for x in ids]  # ' a' and 'a' are one id: twice in one list
    dup = sorted(x for x, c in Counter(ids).items() if c > 1)
    if dup:
        raise HarnessFormatError(f"{path}: '{key}' lists {dup[0]!r} more than once")
    return ids


def _count(path: Path, data: dict, key: str) -> int | None:
    """The whole number ``data[key]`` (absent: None); a bool, a float or a word is refused."""
    if key not in data:
        return None
    v = data[key]
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise HarnessFormatError(f"{path}: '{key}' must be a whole number >= 0, got {v!r}; the report is inconsistent")
    return v


# ---------------------------------------------------------------------- per-instance report.json
def parse_instance_report(data: object, path: Path) -> list[HarnessOutcome]:
    """Outcomes from one parsed per-instance ``report.json`` (see module docstring).

    Raises HarnessFormatError (a DataError) naming ``path`` for anything but an object of
    instance id -> object with a true/false ``resolved`` flag."""
    if not isinstance(data, dict) or not data:
        raise HarnessFormatError(
            f"{path}: expected a per-instance report {{instance_id: {{'resolved': true/false, ...}}}}, "
            f"got {json_kind(data) if not isinstance(data, dict) else 'an empty object'}"
        )
    out = []
    for iid, rep in data.items():
        if not isinstance(rep, dict):
            raise HarnessFormatError(
                f"{path}: entry {iid!r} must be an object with a 'resolved' flag, got {json_kind(rep)}"
            )
        if not isinstance(rep.get("resolved"), bool):
            if "resolved" not in rep and "model_patch" in rep:  # mini-swe-agent's preds.json (a live-loop trial)
                raise HarnessFormatError(
                    f"{path}: a predictions file (entry {iid!r} holds a 'model_patch', no 'resolved'): it says what the "
                    "agent answered, not whether the tests passed; run the SWE-bench harness (or sb-cli) on it and "
                    "ingest that run's report, log folder or a CSV instance_id,resolved")
            raise HarnessFormatError(
                f"{path}: entry {iid!r} has no boolean 'resolved' (got {rep.get('resolved')!r}); "
                f"is this a harness report.json?"
            )
        for key in ("patch_is_None", "patch_exists", "patch_successfully_applied", "infra_failure"):
            if key in rep and not isinstance(rep[key], bool):
                raise HarnessFormatError(f"{path}: entry {iid!r}: '{key}' must be true/false, got {rep[key]!r}")
        if "tests_status" in rep and not isinstance(rep["tests_status"], dict):
            raise HarnessFormatError(f"{path}: entry {iid!r}: 'tests_status' must be an object")
        if rep["resolved"] and (rep.get("patch_is_None") or rep.get("patch_successfully_applied") is False):
            flag = "patch_is_None" if rep.get("patch_is_None") else "patch_successfully_applied false"
            raise HarnessFormatError(f"{path}: entry {iid!r} is resolved with {flag} (no patch was tested); the "
                                     "report is inconsistent: re-run the evaluation of this instance")
        if rep.get("patch_is_None"):
            out.append(HarnessOutcome(iid, EMPTY_PATCH, f"{path.name}: patch_is_None (no patch)", str(path)))
        elif rep["resolved"]:
            out.append(HarnessOutcome(iid, RESOLVED, f"{path.name}: resolved", str(path)))
        elif rep.get("infra_failure"):
            reason = rep.get("infra_failure_reason", "environment")
            out.append(HarnessOutcome(iid, ERROR, f"{path.name}: infra_failure ({reason})", str(path)))
        else:
            why = "resolved false" if rep.get("patch_successfully_applied", True) else "no test results in the log"
            out.append(HarnessOutcome(iid, UNRESOLVED, f"{path.name}: {why}", str(path)))
    return out


def read_instance_report(path: str | Path) -> HarnessRead:
    """Read one per-instance ``report.json``.

    An empty file counts as a harness error for the instance named by its folder (as
    ``make_run_report`` does); invalid JSON or a wrong structure raises HarnessFormatError.
    """
    path = Path(path)
    text = _read_text(path)
    if not text.strip():
        return HarnessRead("instance_report", str(path),
                           [HarnessOutcome(path.parent.name, ERROR, "report.json is empty", str(path))])
    data = _load_json(path, text)
    if run_form(data) is not None:  # a harness trial: a run summary saved as report.json beside the logs was
        # read entry by entry
        raise HarnessFormatError(f"{path}: a run summary (id lists such as resolved_ids), not one instance's "
                                 f"{LOG_REPORT}; ingest that file itself, not the folder holding it")
    return HarnessRead("instance_report", str(path), parse_instance_report(data, path))


def read_log_dir(folder: str | Path) -> HarnessRead:
    """Every ``report.json`` below ``folder``, plus instance folders the harness left without one.

    An instance folder (one holding ``run_instance.log``) without ``report.json`` is an error
    (the harness raised before grading, or the evaluation is still running), except when its
    log says the agent's patch did not apply, which is unresolved. The same instance found in
    several folders (re-runs) must agree; an error is superseded by a graded outcome.

    Raises
    ------
    HarnessFormatError
        If nothing harness-like is found, a report is malformed, two reports of the same
        instance disagree, or the instance folders sit under more than one model folder (two
        agents' logs).
    """
    folder = Path(folder)
    found: dict[str, HarnessOutcome] = {}
    notes: list[str] = []

    def add(o: HarnessOutcome) -> None:
        prev = found.get(o.instance_id)
        if prev is None or (prev.status == ERROR and o.status != ERROR):
            found[o.instance_id] = o
        elif o.status != ERROR and prev.outcome != o.outcome:
            raise HarnessFormatError(
                f"{folder}: instance {o.instance_id!r} has conflicting reports: {prev.status} in {prev.source} "
                f"and {o.status} in {o.source}; keep one run's logs"
            )

    reports, logs = find_below(folder, (LOG_REPORT, LOG_INSTANCE))
    report_dirs = {p.parent for p in reports}
    # <run_id>/<model>/<instance_id>/: model folders of two names are two agents' logs, at any depth (a backup
    # copy kept elsewhere in the tree too); a model folder inside another one's tree is that model's re-run
    models = sorted({p.parent.parent for p in reports} | {p.parent.parent for p in logs})
    top = [m for m in models if not any(m != a and m.is_relative_to(a) for a in models)]
    names = sorted({m.name for m in top})
    if len(names) > 1:
        shown = ", ".join(str(m.relative_to(folder)) if m.is_relative_to(folder) else m.name for m in top[:4])
        raise HarnessFormatError(
            f"{folder}: holds the logs of {len(names)} models ({shown}{', ...' if len(top) > 4 else ''}); a "
            "session records one agent: ingest one model's folder (re-runs of one agent in sibling folders: "
            "ingest them one at a time; equal outcomes are no-ops)")
    for p in reports:
        for o in read_instance_report(p).outcomes:
            add(o)
    for log in logs:
        if log.parent in report_dirs:
            continue
        iid = log.parent.name
        text = log.read_text(encoding="utf-8", errors="replace")
        if APPLY_PATCH_FAIL in text:
            add(HarnessOutcome(iid, UNRESOLVED, "run_instance.log: patch did not apply", str(log)))
        elif "timed out" in text.lower():
            add(HarnessOutcome(iid, ERROR, "run_instance.log: tests timed out, no report.json", str(log)))
        else:
            why = "no report.json (harness error, or the evaluation is still running)"
            add(HarnessOutcome(iid, ERROR, why, str(log)))
    if not found:
        here = sorted(p.name for p in folder.glob("*.json"))[:3]  # a harness trial: an sb-cli report folder
        raise HarnessFormatError(
            f"{folder}: no {LOG_REPORT} or {LOG_INSTANCE} found below this folder; expected the harness's "
            f"logs/run_evaluation/<run_id>/<model>/<instance_id>/{LOG_REPORT}"
            + (f"; it holds {', '.join(here)}: if that is a run summary or an sb-cli report, ingest the file itself"
               if here else "")
        )
    return HarnessRead("log_dir", str(folder), [found[k] for k in sorted(found)], notes)


# ---------------------------------------------------------------------- run summary / sb-cli
def _check_count(path: Path, data: dict, count_key: str, ids: list[str], list_key: str) -> None:
    if _count(path, data, count_key) not in (None, len(ids)):
        raise HarnessFormatError(
            f"{path}: '{count_key}' is {data[count_key]!r} but '{list_key}' lists {len(ids)} ids; "
            f"the report is inconsistent"
        )


def parse_run_summary(data: dict, path: Path, form: str = "run_summary") -> HarnessRead:
    """Outcomes from a parsed run summary (harness schema 2) or sb-cli report (see module docstring).

    Raises HarnessFormatError (a DataError) naming ``path`` for another schema version, a missing
    or malformed id list, or an id listed as two outcomes."""
    sv = data.get("schema_version")
    notes: list[str] = []
    if sv is not None and sv != SUMMARY_SCHEMA_VERSION:
        raise HarnessFormatError(
            f"{path}: schema_version {sv!r}; this reader knows the harness's schema_version "
            f"{SUMMARY_SCHEMA_VERSION} (resolved_ids, unresolved_ids, error_ids, empty_patch_ids, ...)"
        )
    lists = {k: _id_list(path, data, k) for k in SUMMARY_ID_LISTS + SB_CLI_ID_LISTS}
    required = ("resolved_ids", "unresolved_ids", "error_ids")
    absent = [k for k in required if k not in data]
    if absent:
        what = "an sb-cli report with counts only" if form == "sb_cli" else "a run summary"
        raise HarnessFormatError(
            f"{path}: {what} without the id list(s) {', '.join(absent)}; per-instance outcomes need "
            f"resolved_ids, unresolved_ids and error_ids (the harness's schema_version 2 report)"
        )
    if sv is None and form == "run_summary":  # sb-cli reports have none (a harness trial: a note on every one)
        notes.append("no schema_version: read as the harness's schema 2 id lists")
    if form == "run_summary":  # sb-cli's counts are the service's own; only the harness's are len(list)
        for name in ("resolved", "unresolved", "error", "empty_patch"):
            _check_count(path, data, f"{name}_instances", lists[f"{name}_ids"], f"{name}_ids")

    status_of: dict[str, tuple[str, str]] = {}
    for key, status in (("resolved_ids", RESOLVED), ("unresolved_ids", UNRESOLVED),
                        ("empty_patch_ids", EMPTY_PATCH), ("error_ids", ERROR), ("failed_ids", ERROR)):
        for iid in lists[key]:
            if iid in status_of and status_of[iid][0] != status:
                raise HarnessFormatError(
                    f"{path}: instance {iid!r} is in both '{status_of[iid][1]}' and '{key}'; the report is inconsistent"
                )
            status_of.setdefault(iid, (status, key))
    reasons = data.get("failure_reasons") or {}
    if not isinstance(reasons, dict):
        raise HarnessFormatError(f"{path}: 'failure_reasons' must be an object {{instance_id: reason}}")
    for iid in lists["infra_failure_ids"]:
        if iid not in status_of:
            raise HarnessFormatError(f"{path}: 'infra_failure_ids' lists {iid!r}, which is in no outcome list")
        if status_of[iid][0] == UNRESOLVED:
            status_of[iid] = (ERROR, f"infra_failure_ids ({reasons.get(iid, 'environment')})")
    amb = [i for i in lists["ambiguous_failure_ids"] if status_of.get(i, (None,))[0] == UNRESOLVED]
    if amb:
        notes.append(f"{len(amb)} ambiguous failure(s) (environment or patch) kept as unresolved: {', '.join(amb[:5])}")
    pending = [i for i in lists["pending_ids"] if i not in status_of]
    n_pending = _count(path, data, "pending_instances")
    if pending:
        notes.append(f"{len(pending)} instance(s) still pending evaluation, not read: {', '.join(pending[:5])}")
    elif n_pending:
        notes.append(f"{n_pending} instance(s) still pending evaluation")
    both = next((i for i in lists["incomplete_ids"] if i in status_of), None)
    if both is not None:  # incomplete: no prediction was submitted, so there is no outcome to have
        raise HarnessFormatError(f"{path}: instance {both!r} is in both '{status_of[both][1]}' and 'incomplete_ids' "
                                 "(no prediction submitted); the report is inconsistent")
    if lists["incomplete_ids"]:  # named (a new-user trial: an asked task stayed pending with no hint why)
        inc = lists["incomplete_ids"]
        notes.append(f"{len(inc)} incomplete id(s) (no prediction submitted) ignored: {', '.join(inc[:5])}"
                     f"{' ...' if len(inc) > 5 else ''}")
    # a trial: completed/submitted ids in no outcome list were dropped unsaid (other inconsistencies are refused)
    accounted = set(status_of) | set(lists["incomplete_ids"]) | set(lists["pending_ids"])
    for key in ("completed_ids", "submitted_ids"):
        lost = [i for i in dict.fromkeys(lists[key]) if i not in accounted]
        if lost and key == "submitted_ids" and form == "run_summary":
            # a harness trial: the harness lists every prediction of the file there, also those `run_evaluation -i`
            # left out, so on the docs' own loop (a full preds file, -i the asked tasks) this is no sign of a fault
            notes.append(f"{len(lost)} submitted prediction(s) were not evaluated in this run (not read: "
                         f"{', '.join(lost[:5])}{' ...' if len(lost) > 5 else ''}); the harness lists every prediction "
                         "of its file in 'submitted_ids', also those run_evaluation -i left out")
        elif lost:
            notes.append(f"{len(lost)} id(s) in '{key}' are in no outcome list (resolved, unresolved, error, "
                         f"empty patch), not read: {', '.join(lost[:5])}{' ...' if len(lost) > 5 else ''}; the report "
                         "may be partial (re-run the harness's report step, or record them by hand)")
        accounted |= set(lost)
    outs = [HarnessOutcome(iid, st, key, str(path)) for iid, (st, key) in sorted(status_of.items())]
    return HarnessRead(form, str(path), outs, notes)


def read_run_summary(path: str | Path) -> HarnessRead:
    """Read the harness's run summary json (schema 2) or an sb-cli report json.

    Raises HarnessFormatError (a DataError) naming ``path`` when it is not JSON, not an object, or
    not a summary :func:`parse_run_summary` reads."""
    path = Path(path)
    data = _load_json(path)
    if not isinstance(data, dict):
        raise HarnessFormatError(f"{path}: expected a JSON object, got {json_kind(data)}")
    return parse_run_summary(data, path, _json_form(data, path))


# ---------------------------------------------------------------------- CSV
def _parse_cell(text: str) -> int | None:
    """1 / 0 by the outcome vocabulary (:mod:`hspr.outcomes`), else None."""
    return outcome(text)


def _line(fields: list[str]) -> str:
    """A CSV line's fields for an error message, cut (a bank's header lists hundreds of task ids)."""
    return shorten(",".join(fields), 80)


#: how a header column that flags a harness error is named: ``error``, ``errored``, ``errors``,
#: ``exception`` or ``exceptions`` as a word of it (``is_error``, ``harness_error``, ``error_message``,
#: ``errorType``, ``exception_info``, ...). A cell that is not :data:`NO_ERROR` in any such column makes
#: the line a harness error (no graded outcome, re-run or ``--errors-as-unresolved``) whatever its
#: 'resolved' cell says (re-trials: 'error_message', 'exception', 'error_type' and 'errorType' were
#: ignored, and with two error columns only one was read: their runs were scored)
ERROR_COLUMN = re.compile(r"(?:.*_)?(?:error|errored|errors|exception|exceptions)(?:_.*)?")
#: an error column named as its opposite (``no_error``, ``without_errors``, ``error_free``): there a
#: false cell marks the harness error, a true or empty one a clean run (a re-trial: they were read the
#: wrong way round)
NEGATED_ERROR_COLUMN = re.compile(r"(?:.*_)?(?:no|not|non|without)_(?:.*_)?(?:error|errors|exception|exceptions)|"
                                  r"(?:.*_)?(?:error|errors|exception|exceptions)_free(?:_.*)?")
#: an error column's cells that say "no error", besides the no-value markers (empty, none, nan, n/a, ...)
NO_ERROR = frozenset({"0", "false", "no", "f", "n", "-", "ok", "success", "no error", "no errors", "[]", "{}", '""',
                      "''"})


#: an outcome cell that names a harness error rather than an outcome ('error', 'Timeout', 'exception', ...)
_ERROR_WORD = re.compile(r"(?i)\s*(error|errored|errors|timeout|timed[ _-]?out|exception|crash(ed)?|harness[ _-]error)\s*")


def _error_column_hint(iid: str) -> str:
    """The clause an outcome error adds when a harness error was written as the outcome (a new-user trial:
    'ID,error' was refused with no word of how to give one)."""
    return (f"; a task the harness failed to run (a harness error) goes in an error column, header "
            f"instance_id,resolved,error and line {iid},,<the error>: its task is left for a re-run "
            "(--errors-as-unresolved counts it unresolved)")


def _error_cell(text: str, negated: bool = False) -> bool:
    """Whether an error column's cell marks a harness error: any text but :data:`NO_ERROR` or a
    no-value marker, a true cell or the error's own message, as harnesses write it (a hostile trial:
    ``Timeout after 1800s`` read as no error, and the run was recorded as the agent's failure; its
    re-trial: ``failed`` likewise). Unknown text errs on the side of a re-run, not of an outcome. In a
    ``negated`` column (:data:`NEGATED_ERROR_COLUMN`) anything but a true cell or a no-value marker."""
    if is_missing(text):
        return False
    return outcome(text) != 1 if negated else normalise(text) not in NO_ERROR


def _column_words(name: str) -> str:
    """A header name as lower-case words joined by ``_``: ``errorType`` and ``Error Type`` and
    ``error-type`` all read ``error_type``."""
    name = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name.strip())
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


def _error_columns(header: list[str]) -> list[tuple[int, bool]]:
    """(index, negated) of the error columns of a header as written (:data:`ERROR_COLUMN`,
    :data:`NEGATED_ERROR_COLUMN`), in header order."""
    words = [_column_words(c) for c in header]
    return [(k, NEGATED_ERROR_COLUMN.fullmatch(w) is not None) for k, w in enumerate(words) if ERROR_COLUMN.fullmatch(w)]


def _marked_error(head: list[str], rec: list[str], columns: list[tuple[int, bool]]) -> str | None:
    """The detail of a line's harness error, naming the first of ``columns`` (:func:`_error_columns`)
    that marks it (with its text when that is a message, not a true or false cell), or None when none does."""
    k = next((k for k, negated in columns if k < len(rec) and _error_cell(rec[k], negated)), None)
    if k is None:
        return None
    return (f"column {head[k]!r} marks a harness error"
            + ("" if outcome(rec[k]) is not None else f" ({shorten(rec[k].strip(), 60)!r})"))


#: header columns of an outcome CSV that name the agent: more than one value there is more than one agent
AGENT_COLUMNS = ("agent", "agent_id", "agent_name", "model", "model_name", "model_name_or_path")


def _separator_hint(fields: list[str]) -> str:
    """A hint for a first line that is one field holding a tab or ';' (a TSV, or a spreadsheet's
    CSV with semicolons): hspr reads comma-separated files."""
    if len(fields) == 1:
        sep = next((name for c, name in (("\t", "tabs"), (";", "semicolons")) if c in fields[0]), None)
        if sep:
            return f"; its fields are separated by {sep}: save it as comma-separated CSV"
    return ""


def _check_header(path: Path, head: list[str], raw: list[str], trials_form: bool = False) -> None:
    """Refuse a header whose columns hspr reads are ambiguous: one of them twice, both id columns,
    or (``trials_form``: a bank of repeated trials) the counts columns beside a per-trial
    ``resolved`` column (which would be picked silently). A 0/1 CSV ignores its other columns."""
    read = ("instance_id", "task_id", "resolved") + (("successes", "trials", "trial") if trials_form else ())
    twice = next((c for c in read if head.count(c) > 1), None)
    if twice is not None:
        where = [str(k + 1) for k, c in enumerate(head) if c == twice]
        raise HarnessFormatError(f"{path}: header {_line(raw)} has column {twice!r} {len(where)} times (columns "
                                 f"{', '.join(where)}); keep one, so that it is clear which is read")
    if "instance_id" in head and "task_id" in head:
        raise HarnessFormatError(f"{path}: header {_line(raw)} has both 'instance_id' and 'task_id'; keep the id "
                                 "column to read and rename or drop the other")
    if trials_form and "resolved" in head and ("successes" in head or "trials" in head):
        raise HarnessFormatError(f"{path}: header {_line(raw)} has 'resolved' beside 'successes'/'trials'; a file is "
                                 "either one line per task 'task_id,successes,trials' or one line per trial "
                                 "'task_id,resolved': keep the columns of one form")


def _check_one_agent(path: Path, head: list[str], recs: list[tuple[int, list[str]]]) -> None:
    """Refuse data lines ``recs`` whose column of :data:`AGENT_COLUMNS` names more than one agent
    (a bank's long CSV holds many): a blank cell names no agent, and names that differ in case
    only are one agent."""
    for col in (c for c in AGENT_COLUMNS if c in head):
        cells = {rec[head.index(col)].strip() for _, rec in recs if len(rec) > head.index(col)} - {""}
        names = sorted({c.casefold(): c for c in sorted(cells)}.values())
        if len(names) > 1:
            raise HarnessFormatError(
                f"{path}: column {col!r} names {len(names)} agents ({', '.join(map(repr, names[:3]))}"
                f"{', ...' if len(names) > 3 else ''}); a session records one agent: keep that agent's lines")


def read_outcome_csv(path: str | Path) -> HarnessRead:
    """Read a CSV ``instance_id,resolved`` (header optional, its id column ``instance_id`` or ``task_id``;
    with a header, extra columns are ignored but every line has the header's width, a column
    of :data:`AGENT_COLUMNS` must name one agent only, and a cell in a column of
    :data:`ERROR_COLUMN` that is true or an error's message (not :data:`NO_ERROR`, not empty)
    makes the line a harness error). An instance listed twice with the same outcome is one
    outcome; a harness-error line and a graded line of one instance (a re-run appended to the
    file) give the graded outcome, in either order.

    Raises
    ------
    HarnessFormatError
        Naming the line for a missing column, a non-binary outcome, or an instance listed twice
        with different graded outcomes.
    """
    path = Path(path)
    recs = csv_records(path, HarnessFormatError)
    if not recs:
        raise HarnessFormatError(f"{path}: empty CSV; expected lines 'instance_id,resolved'")
    head = [x.strip().lower() for x in recs[0][1]]
    id_col = next((c for c in ("instance_id", "task_id") if c in head), None)
    width = named = None  # with a header every line has its width (its named fields' and the empty tail added)
    if id_col is not None:
        _check_header(path, head, recs[0][1])
    if id_col is not None:
        if "resolved" not in head:
            counts = ("; it holds trial counts (successes, trials), the form of a bank of repeated trials (e.g. "
                      "terminal-bench), and the bank here has one 0/1 outcome per task"
                      if {"successes", "trials"} <= set(head) else "")  # a new-user trial
            failures = next((c for c in recs[0][1] if c.strip().lower() != id_col and _parse_cell(c) == 0), None)
            if failures and not counts:  # a re-trial: 'instance_id,failed' was told only of the missing name
                counts = (f"; its column {failures.strip()!r} reads as a column of failures: hspr reads 'resolved' "
                          "(1 = resolved), so turn its values around (1 - value) and name it resolved")
            raise HarnessFormatError(
                f"{path}: header {_line(recs[0][1])} has no 'resolved' column; expected '{id_col},resolved'{counts}"
            )
        ci, cr, width = head.index(id_col), head.index("resolved"), len(head)
        ces = _error_columns(recs[0][1])
        # a re-trial: 'instance_id,resolved,' (a spreadsheet's trailing separator on the header alone) over 'id,1' was
        # refused as ragged; its empty tail may be left off a line
        recs, named = fill_header_tail(head, recs[1:])
        if not recs:
            raise HarnessFormatError(f"{path}: no outcome lines under the header; nothing to record")
        _check_one_agent(path, head, recs)
    elif len(head) == 2 and _parse_cell(head[1]) is not None:
        ci, cr, ces = 0, 1, []
    else:
        first = recs[0][1]  # a re-trial: a header-less 'ID,error' first got no word of the error column
        hint = _error_column_hint(first[0].strip()) if len(first) == 2 and _ERROR_WORD.fullmatch(first[1]) else ""
        raise HarnessFormatError(f"{path}: line 1 {_line(first)} is not a header 'instance_id,resolved' nor a data line"
                                 + (hint or _separator_hint(first)))
    seen: dict[str, HarnessOutcome] = {}
    for n, rec in recs:
        if len(rec) <= max(ci, cr) or (width is not None and len(rec) != width):
            raise HarnessFormatError(f"{path}: line {n} has {len(rec)} field(s); expected "
                                     f"{width or 2} as in {'the header' if width else 'instance_id,resolved'}"
                                     + (f" ({named} named)" if width is not None and named < width else ""))
        iid, cell = rec[ci].strip(), rec[cr]
        y = _parse_cell(cell)
        if not iid:
            raise HarnessFormatError(f"{path}: line {n}: empty instance_id")
        error = _marked_error(head, rec, ces)
        if y is None and error is None:  # an errored run has no outcome to give (a trial: 'id,,true'; a re-trial:
            raise HarnessFormatError(  # 'id,N/A,Timeout' was refused whole)
                f"{path}: line {n}: outcome {cell!r} for {iid!r} is not one of {SPELLINGS}"
                + ("" if ces else _error_column_hint(iid))
            )
        if error is not None:  # a trial: 'id,False,True' was read as a graded failure
            o = HarnessOutcome(iid, ERROR, f"csv line {n}: {error}", str(path))
        else:
            o = HarnessOutcome(iid, RESOLVED if y else UNRESOLVED, f"csv line {n}", str(path))
        if iid in seen and seen[iid].status != o.status:
            if ERROR in (seen[iid].status, o.status):  # a re-run appended to the file (a trial): the graded line wins,
                if o.status != ERROR:  # as a graded report supersedes an errored one in a log folder
                    seen[iid] = o
                continue
            raise HarnessFormatError(
                f"{path}: line {n}: {iid!r} listed again with a different outcome ({seen[iid].detail})"
            )
        seen.setdefault(iid, o)
    # a header-less first line whose outcome is a word ('id,resolved') may be a header with another id column name:
    # the caller says so if its id is not a task (a hostile trial: "not in the bank: 'id'" and no more)
    header_like = tuple(x.strip() for x in recs[0][1]) if width is None and head[1].isalpha() else None
    return HarnessRead("csv", str(path), list(seen.values()), header_like=header_like)


def read_trials_outcomes(path: str | Path, trials: int, keep: Callable[[str], bool] | None = None,
                         known: Callable[[str], bool] | None = None) -> HarnessRead:
    """Read repeated-trial results for a bank of ``trials`` trials per task, as pass rates.

    Two CSV forms (header required; the id column is ``instance_id`` or ``task_id``):

    * counts, ``task_id,successes,trials``: one line per task;
    * one line per trial, ``task_id,resolved`` (an optional ``trial`` column names each
      trial: one task's trial twice is refused): the graded lines of a task are counted, and a
      task needs ``trials`` of them, or fewer with harness-error lines making up the rest.

    A cell in a column of :data:`ERROR_COLUMN` that is true or an error's message (not
    :data:`NO_ERROR`, not empty) marks a harness error.

    * In the counts form the task then has no pass rate (status ``error``: a re-run, or
      ``errors_as_unresolved``, which keeps the successes the line gives, ``k`` of ``t`` trials
      with ``t`` at most the bank's, and counts the other trials failed) unless a counts line of
      the task without the mark is in the file too, in either order (a re-run appended to the
      file, whose grade stands).
    * In the per-trial form, as in a Harbor job (:func:`read_harbor_job`): an error line of a
      trial that has a graded line too (``trial`` column) is superseded by it; a task with all
      ``trials`` graded lines gets its pass rate whatever error lines lie beside them (re-runs
      appended to the file); one with fewer graded lines and error lines making up the rest, or
      with error lines only (the task's run failed), has status ``error``, its
      ``rate_if_unresolved`` counting the trials not graded as failed; one with some graded
      lines and fewer lines in all than ``trials`` is refused. A new-user trial found its
      errored trial recorded as 0 of 5 passed under ``errors_as_unresolved`` when the task's
      lines were not the bank's count.

    Lines of an id for which ``keep(id)`` is false are skipped before any check (listed in
    :attr:`HarnessRead.skipped`): a file over more tasks than the session's. An id for which
    ``known(id)`` is false (not a task of the bank) is listed there too, with no check of its
    trial count: the caller names it as an unknown id, which is what is wrong with it.

    Raises
    ------
    HarnessFormatError
        Naming the line or task for a missing column, a count out of range, another number of
        trials than the bank's, a task listed twice (counts form), a trial listed twice, a task
        with too few or too many trial lines, a header column it reads given twice (or both
        forms' columns), or a column of :data:`AGENT_COLUMNS` that names more than one agent.
    """
    path = Path(path)
    recs = csv_records(path, HarnessFormatError)
    if not recs:
        raise HarnessFormatError(f"{path}: empty CSV; expected 'task_id,successes,trials' or 'task_id,resolved'")
    head = [x.strip().lower() for x in recs[0][1]]
    idcol = "instance_id" if "instance_id" in head else "task_id" if "task_id" in head else None
    if idcol is None or not ({"successes", "trials"} <= set(head) or "resolved" in head):
        raise HarnessFormatError(f"{path}: line 1 {_line(recs[0][1])} is not a header 'task_id,successes,trials' (counts) "
                                 "or 'task_id,resolved' (one line per trial)" + _separator_hint(recs[0][1]))
    _check_header(path, head, recs[0][1], trials_form=True)
    _check_one_agent(path, head, recs[1:])
    ci = head.index(idcol)
    counts = {"successes", "trials"} <= set(head)
    cols = [ci] + ([head.index("successes"), head.index("trials")] if counts else [head.index("resolved")])
    trial_col = head.index("trial") if "trial" in head and not counts else None
    ces = _error_columns(recs[0][1])
    # task -> {its trial (or ('line', n) without a trial name): line} of the lines its error column marks, a harness
    # fault, not an outcome; a graded line of the same trial (a counts line: of the task) supersedes it, either order
    err: dict[str, dict] = {}
    err_said: dict[str, str] = {}  # task -> the first of its error lines' detail (which column marked it)
    err_graded: dict[str, int] = {}  # counts form: task -> successes its errored line gives (k of t <= trials)
    succ: dict[str, int] = {}
    runs: dict[str, int] = {}
    first: dict[str, int] = {}
    trial_line: dict[tuple[str, str], int] = {}  # (task, trial) -> its line: a pair twice is one trial copied
    lines_of: dict[str, list[int]] = {}  # task -> the lines of its trials (one line per trial)
    skipped: dict[str, None] = {}  # an ordered set: a list's `in` is quadratic in the ids skipped (a trial)
    for n, rec in recs[1:]:
        if len(rec) <= max(cols):
            raise HarnessFormatError(f"{path}: line {n} has {len(rec)} field(s); expected {len(head)}")
        iid = rec[ci].strip()
        if not iid:
            raise HarnessFormatError(f"{path}: line {n}: empty {idcol}")
        if keep is not None and not keep(iid):
            skipped[iid] = None
            continue
        trial = rec[trial_col].strip() if trial_col is not None and len(rec) > trial_col else ""
        if (marked := _marked_error(head, rec, ces)) is not None:  # a trial: errored trials were scored
            if counts and iid in succ or trial and (iid, trial) in trial_line:
                continue  # a graded run of it is in the file: the grade stands (a re-trial)
            err.setdefault(iid, {}).setdefault(trial or ("line", n), n)
            err_said.setdefault(iid, marked)
            if counts:  # its graded successes stand under errors_as_unresolved, the other trials failed (a re-trial)
                if (k := graded_successes(rec[cols[1]], rec[cols[2]], trials)) is not None:
                    err_graded[iid] = max(err_graded.get(iid, 0), k)
            continue
        if counts:
            k, t = rec[cols[1]].strip(), rec[cols[2]].strip()
            successes = trial_successes(k, t, trials)
            if successes is None:
                # a hostile trial: '3.' and '3e0' were refused with a range that they were in
                whole = whole_count(k) and whole_count(t)
                raise HarnessFormatError(f"{path}: line {n}: {k!r} successes of {t!r} trials for {iid!r}; "
                                         + (f"the bank has {trials} trials per task (successes in 0..{trials})" if whole
                                            else "write both as whole numbers, e.g. 3,5"))
            if iid in first:
                raise HarnessFormatError(f"{path}: line {n}: {iid!r} listed again (line {first[iid]}); give one line "
                                         f"per task: one run's successes of its {trials} trials")
            succ[iid], runs[iid] = successes, trials
            err.pop(iid, None)  # a re-run of an errored task
        else:
            y = _parse_cell(rec[cols[1]])
            if y is None:
                raise HarnessFormatError(f"{path}: line {n}: outcome {rec[cols[1]]!r} for {iid!r} is not one of "
                                         f"{SPELLINGS}"
                                         + (_error_column_hint(iid) if _ERROR_WORD.fullmatch(rec[cols[1]]) else ""))
            if trial:
                key = (iid, trial)
                if key in trial_line:
                    raise HarnessFormatError(f"{path}: line {n}: trial {key[1]!r} of {iid!r} again (line "
                                             f"{trial_line[key]}); each trial of a task is one line: drop the copy")
                trial_line[key] = n
                if err.get(iid, {}).pop(trial, None) is not None and not err[iid]:  # a re-run of an errored trial
                    del err[iid]
            succ[iid] = succ.get(iid, 0) + y
            runs[iid] = runs.get(iid, 0) + 1
            lines_of.setdefault(iid, []).append(n)
        first.setdefault(iid, n)
    if known is not None:  # an id of another bank: its trial count is not the problem
        for iid in [i for i in {**succ, **err} if not known(i)]:
            skipped[iid] = None
            succ.pop(iid, None)
            err.pop(iid, None)
    superseded: dict[str, int] = {}  # per-trial form: task -> its error lines beside all its trials graded
    if not counts:
        for iid in [i for i in err if runs.get(i, 0) >= trials]:  # re-runs appended: the grades stand (more: refused)
            superseded[iid] = len(err.pop(iid))
        # some trials graded, but graded and errored lines fewer than the bank's trials: a trial is missing
        short = [i for i, lines in err.items() if 0 < runs.get(i, 0) and runs[i] + len(lines) < trials]
        if short:
            i = short[0]
            raise HarnessFormatError(f"{path}: task {i!r} has {runs.get(i, 0)} graded trial line(s) and {len(err[i])} "
                                     f"{'trial(s)' if trial_col is not None else 'line(s)'} marked as a harness error "
                                     f"(from line {min(first[i], *err[i].values())}); the bank has {trials} trials per "
                                     "task: record a task once all its trials ran")
    # errored trials counted as failed, the graded ones standing (errors_as_unresolved; a counts line marked as an
    # error: the successes it gives, else none)
    if_failed = {iid: pass_rate(err_graded.get(iid, 0) if counts else succ.get(iid, 0), trials) for iid in err}
    for iid in err:  # one errored trial makes the task's pass rate unknown: re-run it (or count it)
        succ.pop(iid, None)
    odd = [i for i in succ if runs[i] != trials]
    if odd:
        more = runs[odd[0]] > trials
        raise HarnessFormatError(f"{path}: task {odd[0]!r} has {runs[odd[0]]} trial line(s) (from line {first[odd[0]]}); "
                                 f"the bank has {trials} trials per task: "
                                 + ("a trial given twice, or trials of two runs in one file? keep one run's trials"
                                    if more else "record a task once all its trials ran"))
    def where(i: str) -> str:  # a trial: '(line 2)' for trials on lines 2-6
        ls = lines_of.get(i, [first[i]])
        return f"line {ls[0]}" if len(ls) == 1 else f"lines {', '.join(map(str, ls))}" if len(ls) <= 3 or \
            ls != list(range(ls[0], ls[-1] + 1)) else f"lines {ls[0]}-{ls[-1]}"

    out = [_trials_outcome(i, succ[i], trials, f"{succ[i]}/{trials} trials ({where(i)})"
                           + (f"; {superseded[i]} harness error(s) beside them, superseded by the graded trials"
                              if i in superseded else ""),
                           str(path)) for i in succ]
    out += [HarnessOutcome(i, ERROR, f"{len(lines)} {'trial(s)' if trial_col is not None else 'line(s)'} marked as a "
                                     f"harness error: {err_said[i]} (from line "
                                     f"{min(lines.values())})", str(path), rate_if_unresolved=if_failed.get(i))
            for i, lines in err.items()]
    return HarnessRead("trials_csv", str(path), out, skipped=list(skipped))


def _trials_outcome(task: str, successes: int, trials: int | None, detail: str, source: str) -> HarnessOutcome:
    """A task's outcome from its successes over the bank's ``trials`` trials: resolved (all),
    unresolved (none) or partial, with its pass rate; one 0/1 run when ``trials`` is None."""
    if trials is None:
        return HarnessOutcome(task, RESOLVED if successes else UNRESOLVED, detail, source)
    return HarnessOutcome(task, {0: UNRESOLVED, trials: RESOLVED}.get(successes, PARTIAL), detail, source,
                          pass_rate(successes, trials))


def _is_tb_run(data: dict) -> bool:
    """A ``tb run`` results.json: a ``results`` list of trial entries naming a ``task_id`` (its
    computed ``resolved_ids`` would otherwise read as a SWE-bench run summary)."""
    res = data.get("results")
    return isinstance(res, list) and (any(isinstance(r, dict) and "task_id" in r for r in res)
                                      or (not res and "accuracy" in data))


def run_form(data: object) -> str | None:
    """The form of one agent's whole run that a parsed JSON document is: ``"tb_run"`` (a ``tb run``
    results.json), ``"sb_cli"`` (an sb-cli report) or ``"run_summary"`` (the harness's run summary),
    in that order of precedence (tb writes ``resolved_ids`` too); None for anything else. The one
    test of these forms: :func:`read_outcomes` dispatches on it, and ``hspr bank build`` names such a
    file as one agent's run (:mod:`hspr.data.io`)."""
    if not isinstance(data, dict):
        return None
    if _is_tb_run(data):
        return "tb_run"
    if any(k in data for k in SB_CLI_KEYS + SB_CLI_ID_LISTS):
        return "sb_cli"
    if "schema_version" in data or any(k in data for k in SUMMARY_ID_LISTS):
        return "run_summary"
    return None


def read_tb_run(path: str | Path, trials: int | None = None, keep: Callable[[str], bool] | None = None,
                known: Callable[[str], bool] | None = None) -> HarnessRead:
    """Read a Terminal-Bench run's ``results.json`` (form ``tb_run``, module docstring).

    ``trials`` is the bank's trials per task (None: a 0/1 bank, one trial per task); ``keep``
    and ``known`` as in :func:`read_trials_outcomes`.

    Raises
    ------
    HarnessFormatError
        Naming the file and the entry for a file without a ``results`` list, an entry without a
        ``task_id`` or ``is_resolved`` (or one that is not true/false/null), without a
        ``trial_name`` or ``id`` (its ``trial_name``, else its ``id``, given twice for one task is
        a copied trial), and the task whose number of trials is not the bank's.
    ValueError
        For ``trials`` that is not None or a whole number >= 1.
    """
    path = Path(path)
    _check_trials(trials)
    data = _load_json(path)
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        raise HarnessFormatError(f"{path}: expected a tb run results.json, an object whose 'results' is a list of "
                                 "trials")
    runs: dict[str, list[str | None]] = {}  # task -> per trial: None if resolved, else the failure mode
    skipped: dict[str, None] = {}  # an ordered set: a list's `in` made 300k unknown ids take minutes (a trial)
    names: dict[tuple[str, str], int] = {}  # (task, trial_name) -> its entry: a trial given twice (a trial)
    for k, r in enumerate(data["results"]):
        iid = r.get("task_id") if isinstance(r, dict) else None
        if not isinstance(iid, str) or not iid.strip():
            raise HarnessFormatError(f"{path}: results[{k}] has no 'task_id' string; a tb run results.json has one "
                                     "entry per trial")
        iid = iid.strip()
        if keep is not None and not keep(iid) or known is not None and not known(iid):
            skipped[iid] = None  # before its other checks: a task the caller does not record (a trial)
            continue
        if "is_resolved" not in r:  # tb writes it on every trial (null when not graded)
            raise HarnessFormatError(f"{path}: results[{k}] ({iid!r}) has no 'is_resolved'; a tb run "
                                     "results.json gives it on every trial (true, false or null)")
        res = r["is_resolved"]
        if res is not None and not isinstance(res, bool):
            raise HarnessFormatError(f"{path}: results[{k}] ({iid!r}): 'is_resolved' must be true, false or null, "
                                     f"got {res!r}")
        name = next((v.strip() for v in (r.get("trial_name"), r.get("id")) if isinstance(v, str) and v.strip()), None)
        if name is None:  # tb names every trial (its trial_name and a uuid id): a copy could not be told (a re-trial)
            raise HarnessFormatError(f"{path}: results[{k}] ({iid!r}) has no 'trial_name' or 'id' text; a tb run "
                                     "results.json names every trial")
        if (iid, name) in names:
            raise HarnessFormatError(f"{path}: results[{k}]: trial {name!r} of {iid!r} again (results"
                                     f"[{names[iid, name]}]); each trial is one entry: drop the copy")
        names[iid, name] = k
        mode = str(r.get("failure_mode") or "").strip().lower()  # tb's failure mode when it names one
        runs.setdefault(iid, []).append(None if res else mode if mode not in ("", "none", "unset") else
                                        "tests failed" if res is False else "not graded")
    n = trials or 1
    odd = [i for i, r in runs.items() if len(r) != n]
    if odd:
        raise HarnessFormatError(
            f"{path}: task {odd[0]!r} has {len(runs[odd[0]])} trial(s) in 'results'; the bank has {n} trial(s) per task: "
            + ("a run of another --n-attempts, or two runs in one file? ingest a run whose every task has all its "
               "trials" if len(runs[odd[0]]) > n else "record a task once all its trials ran"))
    return HarnessRead("tb_run", str(path), _per_trial_outcomes(path, runs, trials, TB_RESULTS), skipped=list(skipped))


def _check_trials(trials) -> None:
    """ValueError unless ``trials`` (a bank's trials per task) is None or a whole number >= 1."""
    if trials is not None and (isinstance(trials, bool) or not isinstance(trials, int) or trials < 1):
        raise ValueError(f"trials must be a whole number >= 1 or None, got {trials!r}")


def _per_trial_outcomes(path: Path, runs: dict[str, list[str | None]], trials: int | None,
                        label: str) -> list[HarnessOutcome]:
    """One outcome per task from all its trials: ``runs`` maps a task to one entry per trial (as many
    as the bank's ``trials``; one on a 0/1 bank, ``trials`` None), None for a resolved trial, else why
    it failed; the detail names the file kind ``label`` and counts the failures by reason."""
    n = trials or 1

    def detail(i: str) -> str:
        failed = [m for m in runs[i] if m is not None]
        why = "; failed: " + ", ".join(f"{m} x{failed.count(m)}" if failed.count(m) > 1 else m
                                       for m in sorted(set(failed))) if failed else ""
        return f"{n - len(failed)}/{n} trials ({label}{why})" if trials else f"{label}{why.replace('; failed', ', failed')}"

    return [_trials_outcome(i, runs[i].count(None), trials, detail(i), str(path)) for i in runs]


# ---------------------------------------------------------------------- Harbor
def read_harbor_job(path: str | Path, trials: int | None = None, keep: Callable[[str], bool] | None = None,
                    known: Callable[[str], bool] | None = None) -> HarnessRead:
    """Read one agent's Harbor job folder, or one trial's ``result.json`` (form ``harbor_job``;
    the trials as :func:`hspr.data.harbor.read_trials` reads them).

    A task with all the bank's trials graded (``harbor run --n-attempts``; one on a 0/1 bank) gets
    its pass rate, whatever harness errors lie beside them (re-run: the grades stand); one with
    fewer graded trials and harness errors making up the rest needs a re-run (status ``error``;
    ``rate_if_unresolved`` counts the missing trials failed, as Harbor's mean reward does); one
    with fewer trials than that (a job still running, or stopped; cancelled trials do not count) is
    left out with a note, so a running job can be ingested again as it goes. ``keep`` and ``known`` as in
    :func:`read_trials_outcomes` (their ids are skipped before any other check). The trials' agent
    and datasets (``source``) are returned with them.

    Raises
    ------
    HarnessFormatError
        As :func:`hspr.data.harbor.read_trials`, and naming the agents for trials of more than one
        agent or model, and the task with more graded trials than the bank's.
    ValueError
        For ``trials`` that is not None or a whole number >= 1.
    """
    path = Path(path)
    _check_trials(trials)
    read, skipped, unreadable, _ = harbor.read_trials(path, HarnessFormatError, keep=lambda t: (keep is None or keep(t))
                                                   and (known is None or known(t)))
    agents: dict[str, Path] = {}  # each agent (and model) -> its first trial's file
    for t in read:
        agents.setdefault(t.agent, t.file)
    if len(agents) > 1:
        shown = "; ".join(f"{a or 'unnamed'} ({harbor.printable(f.parent.name)})" for a, f in list(agents.items())[:3])
        raise HarnessFormatError(f"{path}: holds the trials of {len(agents)} agents or models ({shown}); a session "
                                 "records one agent: copy that agent's trial folders (their result.json names it under "
                                 "'agent_info') into a folder of their own and ingest that")
    n = trials or 1
    runs: dict[str, list[str | None]] = {}  # task -> per graded trial: None if resolved, else why it failed
    errors: dict[str, list[tuple[str, str]]] = {}  # task -> (exception, trial folder) of its trials that are harness errors
    for t in read:
        runs.setdefault(t.task, [])
        if t.verdict == harbor.ERROR:
            errors.setdefault(t.task, []).append((t.reason, harbor.printable(t.file.parent.name)))
        elif t.verdict != harbor.NOT_YET:
            runs[t.task].append(t.reason)
    over = [i for i, r in runs.items() if len(r) > n]
    if over:
        raise HarnessFormatError(f"{path}: task {over[0]!r} has {len(runs[over[0]])} graded trial(s) in {harbor.RESULT} "
                                 f"files; the bank has {n} per task: a job of another --n-attempts, or trials of two "
                                 "jobs? ingest one job (its folder jobs/<job_name>/), or the jobs whose trials of a task "
                                 "add up to the bank's")
    datasets = list(dict.fromkeys(t.source for t in read if t.source))
    if len(datasets) > 1:  # a re-trial: one folder of two datasets' trials was recorded with a note
        raise HarnessFormatError(f"{path}: trials of {len(datasets)} datasets ({', '.join(map(repr, datasets[:4]))}); a "
                                 "session scores one bank's tasks: ingest the jobs of the bank's dataset")
    # a harness error beside all the task's graded trials was re-run: the grades stand (as in a log folder)
    done = {i: r for i, r in runs.items() if len(r) == n}
    failed = {i: e for i, e in errors.items() if i not in done and len(runs[i]) + len(e) >= n}
    short = [i for i in runs if i not in done and i not in failed]
    notes = [f"{path}: {len(short)} task(s) without all {n} trial(s) yet (running, cancelled or not run), left out: "
             f"{', '.join(map(repr, short[:5]))}{' ...' if len(short) > 5 else ''}; ingest the job again when they "
             "finish (or the folder holding every job with that agent's trials of them)"] if short else []
    if unreadable:  # a re-trial: one trial caught mid-write refused a running job's whole ingest
        notes.append(f"{len(unreadable)} trial {harbor.RESULT} file(s) could not be read, their trials left out (still "
                     f"being written? ingest again; a damaged file: re-run that trial): "
                     f"{'; '.join(map(str, unreadable[:3]))}{' ...' if len(unreadable) > 3 else ''}")
    out = _per_trial_outcomes(path, done, trials, harbor.RESULT)
    for i, excs in failed.items():
        k, rest = runs[i].count(None), len(runs[i])
        # a trial: with 5 trials per task the message named no trial folder to look in
        names = sorted(set(f for _, f in excs))
        out.append(HarnessOutcome(i, ERROR, f"{len(excs)} trial(s) ended in a harness error "
                                            f"({', '.join(sorted(set(e for e, _ in excs)))}) in {harbor.RESULT} of "
                                            f"{', '.join(names[:3])}{' ...' if len(names) > 3 else ''}"
                                            + (f"; {k} of the other {rest} passed" if rest else ""),
                                  str(path), rate_if_unresolved=pass_rate(k, trials) if trials else None))
    return HarnessRead("harbor_job", str(path), out, notes, skipped=skipped, agent=next(iter(agents), None) or None,
                       datasets=datasets)


def _folder_forms(folder: Path) -> dict[str, Path]:
    """The output forms found below ``folder`` (a key of :data:`FORMS` -> one file of it): Harbor
    trials or a Harbor job summary (``harbor_job``), a ``tb run`` results.json (``tb_run``), SWE-bench
    harness reports or instance logs (``log_dir``); a Harbor trial's own folders (its agent's logs)
    are not searched (:func:`hspr.data.harbor.scan`)."""
    results, other = harbor.scan(folder, (TB_RESULTS, LOG_REPORT, LOG_INSTANCE, harbor.CONFIG), HarnessFormatError)
    found: dict[str, Path] = {}
    for f, d in results:
        if harbor.is_trial(d) or harbor.is_job_summary(d):
            found.setdefault("harbor_job", f)
    if "harbor_job" not in found and (f := harbor.started(other[harbor.CONFIG], HarnessFormatError)):
        found["harbor_job"] = f  # a job (or trial) just started: its config.json, no result yet (a new-user trial)
    for f in other[TB_RESULTS]:
        if run_form(harbor.try_json(f, HarnessFormatError)) == "tb_run":
            found.setdefault("tb_run", f)
    for f in other[LOG_REPORT] + other[LOG_INSTANCE]:
        found.setdefault("log_dir", f)
    if not found:  # nothing else here: a trial's file lacking a key is named (another tool's file beside logs is not)
        for f, d in results:
            harbor.refuse_partial_trial(d, f, HarnessFormatError)
    return found


def _one_form(folder: Path) -> str | None:
    """The one output form found below ``folder`` (:func:`_folder_forms`), None for none;
    HarnessFormatError naming them when the folder mixes two (which one to read is a guess, and
    reading one drops the other's outcomes unseen)."""
    found = _folder_forms(folder)
    if len(found) > 1:
        shown = "; ".join(f"{FORMS[k].split(' (')[0]} ({v.relative_to(folder) if v.is_relative_to(folder) else v})"
                          for k, v in found.items())
        raise HarnessFormatError(f"{folder}: holds outputs of {len(found)} kinds ({shown}); ingest each one from a "
                                 "folder of its own")
    return next(iter(found), None)


# ---------------------------------------------------------------------- detection
def _json_form(data: object, path: Path) -> str:
    if isinstance(data, dict):
        form = run_form(data)
        if form == "tb_run":  # before Harbor's checks: tb writes resolved_ids / unresolved_ids too
            return "tb_run"
        _refuse_tb_trial(data, path)
        harbor.refuse_partial_trial(data, path, HarnessFormatError)
        if harbor.is_trial(data):
            return "harbor_job"
        if harbor.is_job_summary(data):
            raise HarnessFormatError(f"{path}: a Harbor job's summary (counts only); ingest the job folder that holds "
                                     f"it: each trial folder in it has the trial's {harbor.RESULT}")
        if form is not None:  # an sb-cli report or a run summary
            return form
        if data and (path.name == LOG_REPORT or all(isinstance(v, dict) for v in data.values())):
            return "instance_report"  # its reader checks each entry
        if isinstance(data.get("resolved"), list) and isinstance(data.get("unresolved"), list):
            raise HarnessFormatError(
                f"{path}: id lists named 'resolved' and 'unresolved'; the harness's run summary names them "
                "'resolved_ids', 'unresolved_ids' and 'error_ids': rename the two keys and add \"error_ids\": [] "
                "(or the ids that errored), or ingest a CSV instance_id,resolved"
            )
        if "resolved" in data and isinstance(data["resolved"], list):
            if isinstance(data.get("generated"), list):  # SWE-bench 1.x's report (a harness trial: 'not listed' was false)
                raise HarnessFormatError(
                    f"{path}: a SWE-bench 1.x results.json (id lists 'generated', 'applied', 'resolved', ...), which "
                    "a live session does not read; ingest a CSV instance_id,resolved made from it (each id of "
                    "'generated': 1 if it is in 'resolved', else 0), or the current harness's run summary"
                )
            raise HarnessFormatError(
                f"{path}: a SWE-bench/experiments results.json (only the resolved ids; the tasks that were run "
                f"are not listed), so unresolved tasks cannot be told from tasks never run; ingest the harness's "
                f"run summary, its log folder or a CSV instance_id,resolved instead"
            )
    raise HarnessFormatError(f"{path}: not a harness output; expected one of: {'; '.join(FORMS.values())}")


def _refuse_tb_trial(data: object, path: Path) -> None:
    """HarnessFormatError for one ``tb run`` trial's own results.json (a harness trial: it was called a
    broken Harbor trial, with Harbor's fix)."""
    if isinstance(data, dict) and "task_id" in data and "is_resolved" in data and "task_name" not in data:
        raise HarnessFormatError(f"{path}: one Terminal-Bench trial's results.json (tb run writes one per trial, "
                                 "runs/<run_id>/<task>/<trial>/results.json); ingest the run's own results.json "
                                 "(runs/<run_id>/results.json) or its folder runs/<run_id>, which hold every trial")


def _is_session(path: Path, text: str) -> bool:
    """Whether ``path`` is an hspr live session file: its first line names the session format (a
    journal; a damaged one too, so that its reader names the damage), or the whole text is one
    JSON object of that format (a legacy file, keys in any order)."""
    from .journal import FORMAT, LiveSessionError, read

    body = text.lstrip("\ufeff \t\r\n")
    if body[:1] != "{" or f'"{FORMAT}"' not in text:
        return False
    if f'"{FORMAT}"' in body.split("\n", 1)[0]:
        return True
    try:
        return read(path).doc.get("format") == FORMAT
    except LiveSessionError:
        return False


def is_session_file(path: str | Path) -> bool:
    """Whether ``path`` is an existing hspr live session file (any name; a damaged one too).
    Unreadable paths and folders are not: the caller's own open reports them."""
    p = Path(path)
    try:
        if not p.is_file():
            return False
        from .journal import FORMAT

        needle, found = f'"{FORMAT}"'.encode(), False
        with p.open("rb") as fh:
            head = fh.read(1 << 16)
            if head.decode("utf-8", errors="replace").lstrip("\ufeff \t\r\n")[:1] != "{":
                return False
            chunk = head  # JSON: a legacy session may name its format anywhere; search, do not parse
            while chunk and not found:
                found = needle in chunk
                more = fh.read(1 << 20)
                chunk = chunk[-len(needle):] + more if more else b""
        return found and _is_session(p, p.read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return False


def read_session_outcomes(path: str | Path, trials: int | None = None, digest: str | None = None,
                          lenient: bool = False) -> HarnessRead:
    """The outcomes recorded in another hspr live session file (:mod:`hspr.journal`), one per
    ``tell`` event (the last ``correct`` event of its task replaces it, a ``withdraw`` event removes
    it): 0/1, or on a bank of ``trials`` repeated trials a pass rate k / trials (status 'partial'
    unless 0 or 1).

    A session written before headers stored its trial count is taken as of this bank's count when
    its bank digest equals ``digest`` (the ingesting bank's) or it names a bundled bank; otherwise
    it is read only into a 0/1 bank.

    Raises HarnessFormatError naming the file (and the file line of the event) when it cannot be
    read as a session, tells one task twice with different outcomes, or holds outcomes of another
    kind than the bank's (pass rates for a 0/1 bank, or rates that are not k / trials). A
    ``correct`` or ``withdraw`` of a task no earlier line told (a damaged or edited id) is refused
    too, unless ``lenient`` (``ingest --skip-unknown``, the way out a damaged session's error names):
    then a ``correct`` counts as the task's outcome and a ``withdraw`` is left out, each with a note.
    """
    from .journal import DAMAGED_HEADER, EVENT_TYPES, LiveSessionError, read

    path = Path(path)
    try:
        jf = read(path, salvage=True)
    except LiveSessionError as exc:
        raise HarnessFormatError(str(exc)) from None
    skipped = "; ".join(f"line {n} ({why})" for n, why in jf.skipped_lines)
    if skipped and not lenient:  # a crash-safety trial: a damaged line in the middle blocked this way out
        raise HarnessFormatError(f"{path}: {skipped} is damaged: the file is corrupt; nothing was recorded (with "
                                 "--skip-unknown the other lines are read, the events of the damaged ones lost)")
    events = jf.doc.get("events") if isinstance(jf.doc.get("events"), list) else []
    bank = jf.doc.get("bank") if isinstance(jf.doc.get("bank"), dict) else {}
    header_damage = jf.doc.get(DAMAGED_HEADER)
    if header_damage is not None:  # its bank is unknown: each outcome is still checked against this bank's form
        bank = {"trials": trials}
    if "trials" not in bank:  # written before hspr stored it: known if it is this bank or a bundled one
        if digest is not None and bank.get("digest") == digest:
            bank = dict(bank, trials=trials)
        elif bank.get("matrix") is None and isinstance(bank.get("name"), str):
            from .data.banks import BANKS, load_bank

            if bank["name"] in BANKS:
                bank = dict(bank, trials=load_bank(bank["name"]).trials)
    if "trials" in bank:
        theirs = bank["trials"]
        if theirs != trials:
            def kind(k):
                return "one 0/1 outcome per task" if k is None else f"pass rates over {k} trials per task"
            raise HarnessFormatError(f"{path}: the session holds {kind(theirs)}, but this bank has {kind(trials)}; "
                                     "its outcomes do not carry over: nothing was recorded")
    elif trials is not None:
        raise HarnessFormatError(f"{path}: the session does not say how many trials its outcomes count (written "
                                 f"before hspr recorded it), and this bank has {trials} per task; give the outcomes "
                                 "as a CSV task_id,successes,trials instead: nothing was recorded")

    def where(i: int) -> str:
        return f"line {jf.event_lines[i]}" if i < len(jf.event_lines) else f"event {i}"

    seen = {}
    asked: dict[str, object] = {}  # each task's tell event's 'asked' (None in files written before it was kept)
    errors: dict[str, str] = {}
    lenient_notes: list[str] = [f"{path}: {skipped} is damaged; left out (its event is lost)"] if skipped else []

    def damaged(what: str, then: str = "left out") -> None:
        """Refuse a line no session writes; with --skip-unknown (``lenient``) note it and say ``then``."""
        if not lenient:
            raise HarnessFormatError(f"{path}: {what}: the file is damaged or hand-edited; nothing was recorded "
                                     "(with --skip-unknown the rest is read)")
        lenient_notes.append(f"{path}: {what}; {then}")

    for i, ev in enumerate(events):
        if not isinstance(ev, dict) or ev.get("type") not in EVENT_TYPES:  # as the session's reader
            got = f"type {ev.get('type')!r}" if isinstance(ev, dict) else f"{json_kind(ev)}"
            raise HarnessFormatError(f"{path}: {where(i)} is not an event of a session ({got}): the file is "
                                     "damaged or hand-edited; nothing was recorded")
        if ev["type"] == "withdraw":  # `live withdraw`: the task's outcome is taken back
            # a task id that is not text (a list) is told no earlier line; it was hashed first (a mypy triage)
            if not isinstance(ev.get("task"), str) or seen.pop(ev["task"], None) is None:
                damaged(f"{where(i)} withdraws task {ev.get('task')!r}, which no earlier line told")
            continue
        if ev["type"] == "error":  # a harness error waiting for a re-run
            if isinstance(ev.get("task"), str):
                errors[ev["task"]] = str(ev.get("detail", ""))
                continue
            # an id that is not text was left out without a word (a re-trial); the session's reader refuses it
            damaged(f"{where(i)} is an error line whose task {ev.get('task')!r} is not a task id")
            continue
        if ev["type"] not in ("tell", "correct"):
            continue
        task, y = ev.get("task"), ev.get("outcome")
        if not isinstance(task, str) or isinstance(y, bool) or not isinstance(y, (int, float)) or not 0 <= y <= 1:
            raise HarnessFormatError(f"{path}: {where(i)} is not a readable outcome (task {task!r}, outcome {y!r})")
        errors.pop(task, None)  # graded since
        if trials is None and y not in (0, 1):
            raise HarnessFormatError(f"{path}: {where(i)}: task {task!r} has pass rate {y:g}, a session of repeated "
                                     "trials, but this bank has one 0/1 outcome per task; nothing was recorded")
        if trials is not None and abs(y * trials - round(y * trials)) > 1e-9:
            raise HarnessFormatError(f"{path}: {where(i)}: task {task!r} has pass rate {y:g}, not a count out of "
                                     f"this bank's {trials} trials; nothing was recorded")
        if ev["type"] == "correct":  # `record --correct`: the later outcome replaces the told one
            if task not in seen:
                damaged(f"{where(i)} corrects task {task!r}, which no earlier line told",
                        "its corrected outcome is read as the task's outcome")
            seen[task] = (where(i), y, ev.get("source", "record"))
            continue
        if task in seen and seen[task][1] != y:
            raise HarnessFormatError(f"{path}: task {task!r} is told twice with different outcomes ({seen[task][1]:g} "
                                     f"at {seen[task][0]}, {y:g} at {where(i)}); keep one in a copy of the file, "
                                     "then ingest the copy; nothing was recorded")
        if task in seen:
            continue
        seen[task] = (where(i), y, ev.get("source", "record"))
        asked[task] = ev.get("asked")
    out = []
    for task, (_, y, source) in seen.items():  # in the order first told
        status = "resolved" if y == 1 else "unresolved" if y == 0 else "partial"
        detail = f"recorded in session {path.name} ({source})"
        out.append(HarnessOutcome(task, status, detail, str(path), float(y) if trials is not None else None))
    # a trial: the other session's tasks waiting for a re-run were dropped ('0 harness errors')
    out += [HarnessOutcome(t, ERROR, f"a harness error in session {path.name}: {d}", str(path))
            for t, d in errors.items() if t not in seen]
    notes = ([] if out else [f"{path}: the session has no recorded outcome"]) + lenient_notes
    if header_damage is not None:
        notes.append(f"{path}: its header (line 1) is damaged ({header_damage}), so which bank its outcomes are of was not "
                     "checked; they were read from its later lines: ingest it only into a session on the same bank")
    if jf.torn:
        notes.append(f"{path}: its last line is incomplete ({shorten(jf.torn_text)!r}), so an outcome written "
                     "there, if any, was not read")
    method, hidden, label = jf.doc.get("method"), bank.get("hidden"), jf.doc.get("agent")
    return HarnessRead("session", str(path), out, notes, method=method if isinstance(method, dict) else None,
                       hidden_agent=hidden if isinstance(hidden, str) else None,
                       agent_label=label if isinstance(label, str) else None,
                       unasked=tuple(t for t in seen if asked.get(t) is False))


def detect_form(path: str | Path) -> str:
    """Name of the form of ``path`` (a key of :data:`FORMS`); HarnessFormatError if none fits."""
    path = Path(path)
    if not path.exists():
        raise HarnessFormatError(f"{path}: no such file or folder")
    if path.is_dir():
        return "harbor_job" if _one_form(path) == "harbor_job" else "log_dir"
    if not path.is_file():  # a named pipe would block the read for ever
        raise HarnessFormatError(f"{path}: not a regular file (a named pipe or a device?); give a file or a folder (output "
                                 "piped in: give - for standard input, `... | hspr live ingest --session S -`, or save "
                                 "it first, `... > file`)")
    from .journal import FORMAT

    with path.open("rb") as fh:  # a session's header line, before decoding: its reader names a damaged byte (a trial)
        if f'"{FORMAT}"'.encode() in fh.readline(1 << 16):
            return "session"
    text = _read_text(path)
    if _is_session(path, text):  # before the suffix rule: a session file may have any name
        return "session"
    if path.suffix.lower() in (".csv", ".tsv") or (path.suffix.lower() == ".txt" and text.lstrip()[:1] not in "{["):
        return "csv"  # a .txt holding JSON (a run summary saved under another name) is read as JSON
    if not text.strip():
        if path.name == LOG_REPORT:
            return "instance_report"
        raise HarnessFormatError(f"{path}: empty file")
    if text.lstrip()[:1] not in "{[":
        return "csv"
    _refuse_json_lines(path, text)
    return _json_form(_load_json(path, text), path)


def _refuse_json_lines(path: Path, text: str) -> None:
    """HarnessFormatError for JSON Lines (one object per line, e.g. a predictions file or an
    exported outcome table): no harness report has that form, and parsing it as one JSON
    document would blame a truncated report."""
    lines = [x for x in text.splitlines() if x.strip()]
    if len(lines) < 2 and path.suffix.lower() != ".jsonl":
        return
    try:
        first = loads(lines[0])
    except ValueError:
        return  # one document over several lines (or a damaged one): the JSON reader names it
    if isinstance(first, dict):  # two lines or more, or a .jsonl name (the early return)
        keys = ", ".join(list(first)[:4])
        raise HarnessFormatError(
            f"{path}: JSON Lines (one object per line; the first has keys {keys}), which no harness report is "
            "(a predictions file?); ingest the harness's run summary, its log folder or a CSV instance_id,resolved")


def read_outcomes(path: str | Path, trials: int | None = None, digest: str | None = None,
                  keep: Callable[[str], bool] | None = None, known: Callable[[str], bool] | None = None) -> HarnessRead:
    """Read any supported harness output (see the module docstring); the form is detected.
    With ``trials`` (a bank of repeated trials) only the CSV forms of
    :func:`read_trials_outcomes`, a ``tb run`` results.json (:func:`read_tb_run`) and another
    session file are read. ``digest`` is the ingesting bank's digest
    (:func:`read_session_outcomes`); ``keep`` and ``known`` are passed to those two readers
    (the other forms check ids per outcome, not per task), and a ``keep`` (``ingest
    --skip-unknown``) makes the session reader lenient.

    Returns
    -------
    HarnessRead
        The outcomes with their status and where each came from.

    Raises
    ------
    HarnessFormatError
        Naming the file (and the key, line or instance) when the input is not a supported
        form or is malformed.
    """
    p = Path(path)
    if p.is_dir() and (p / TB_RESULTS).is_file() and _one_form(p) == "tb_run":  # `tb run`'s run folder (a trial)
        path = p / TB_RESULTS
    elif p.is_dir() and _one_form(p) == "tb_run":  # `tb run`'s output folder, runs/ (a harness trial: refused)
        _, other = harbor.scan(p, (TB_RESULTS,), HarnessFormatError)
        runs = [f for f in other[TB_RESULTS] if run_form(harbor.try_json(f, HarnessFormatError)) == "tb_run"]
        if len(runs) > 1:
            raise HarnessFormatError(f"{p}: holds {len(runs)} Terminal-Bench runs ("
                                     + ", ".join(str(f.parent.relative_to(p)) for f in sorted(runs)[:3])
                                     + f"{', ...' if len(runs) > 3 else ''}); ingest one run's folder at a time")
        path = runs[0]
    elif p.is_file() and p.name == harbor.RESULT and harbor.is_job_summary(harbor.try_json(p, HarnessFormatError)) and \
            _one_form(p.parent) == "harbor_job":
        path = p.parent  # a Harbor job's summary: read its job folder
    try:
        form = detect_form(path)
    except HarnessFormatError:
        # a trial: a Harbor result.json on a trials bank got the list of SWE-bench forms, not the CSV it needs;
        # JSON that does not parse keeps its own message (a truncated results.json was told to be one)
        if trials is None or not Path(path).is_file() or not (text := _read_text(Path(path))).strip():
            raise
        if text.lstrip()[:1] in "{[":
            data = _load_json(Path(path), text)  # JSON that does not parse: its own message too
            _refuse_tb_trial(data, Path(path))
            harbor.refuse_partial_trial(data, Path(path), HarnessFormatError)  # a trial's file lacking a key
            if harbor.is_job_summary(data):
                raise
        form = None
    if form == "session":
        read = read_session_outcomes(path, trials, digest, lenient=keep is not None)
    elif form == "tb_run":
        read = read_tb_run(path, trials, keep, known)
    elif form == "harbor_job":
        read = read_harbor_job(path, trials, keep, known)
    elif trials is not None:
        if form != "csv":
            raise HarnessFormatError(f"{path}: the bank has {trials} trials per task; give a CSV "
                                     "'task_id,successes,trials', one line per trial 'task_id,resolved', a "
                                     "Terminal-Bench run's results.json (tb run) or a Harbor job folder")
        read = read_trials_outcomes(path, trials, keep, known)
    elif form == "log_dir":
        read = read_log_dir(path)
    elif form == "csv":
        read = read_outcome_csv(path)
    elif form == "instance_report":
        read = read_instance_report(path)
    else:
        read = read_run_summary(path)
    if not read.outcomes and not read.notes:
        read.notes.append(f"{path}: it names no task with an outcome or a harness error (nothing to record)")
    return read
