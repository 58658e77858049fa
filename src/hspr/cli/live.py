"""``hspr live``: a persistent session that estimates a real new agent while it runs.

Thin: parses arguments, calls :class:`hspr.live.LiveSession`, prints (text or ``--json``).
"""

from __future__ import annotations

import errno
import json
import os
import re
import shlex
import sys
import time
import warnings
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING

import click
from click.core import ParameterSource

from .._entry import started_closed
from ..data.banks import BANKS
from ..data.matrix import DataError
from ..errors import HsprError, UnaskedTaskWarning, shorten
from ..fileio import is_descriptor_path, read_json_file, read_text, write_text_durable
from ..idformat import FORMATS, NOTHING_FORMS, format_ids, is_id_text, read_predictions, subset_predictions
from ..live import (
    UNREACHABLE_STOP,
    LiveSession,
    LiveSessionError,
    LiveStatus,
    batch_note,
    check_agent_label,
    check_stop_width,
    did_you_mean,
    fit_model,
    random_draws_caveat,
    relink_matrix,
    task_argument,
)
from ..methods import LIVE_DEFAULT, known_methods_text, method_class, method_names
from ..outcomes import describe_outcome
from ..session import BudgetError
from ..stopping import MIN_TASKS
from .common import MAX_SEED, ExistingPath, LazyHelpOption, argv_text, check_session_bank_label, check_workers, completer, local_workers
from .display import busy, console, input_warnings, progress_bar, reading
from .meta import PIPED_KEY, SuggestingGroup, echo_json_error, note_saved, note_session, saved_note
from .outputs import (
    check_output_file,
    os_error_message,
    refuse_folder_name,
    refuse_in_dev,
    refuse_overwriting_inputs,
    refuse_session_sidecar,
    refuse_unfit_session,
    spare_copy,
)

if TYPE_CHECKING:
    from ..session import ScoreEstimate

#: seconds of reading a folder bank, or a bank file in a form slower to read than a wide CSV, at `live start` above
#: which the note on building a wide CSV of it is said
SLOW_FOLDER_S = 2.0

SESSION_HELP = "The session file (a JSON-lines journal). Default: run.hspr, or $HSPR_SESSION."


class _NumbersAreArguments(click.Command):
    """A command whose arguments may look like signed numbers (``record TASK -1``, ``-1/5``, a task
    id ``+2``): they are arguments, in their order, not click's "No such option: -1" (a trial). A
    mistyped option (``--corect``) is still an unknown option, and an option's value (``--session
    -5``) stays its value."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if "--" in args or not any(_SIGNED.fullmatch(a) for a in args):
            return super().parse_args(ctx, args)
        takes_value = {o for p in self.params if isinstance(p, click.Option) and not p.is_flag for o in p.opts}
        opts, pos, i = [], [], 0
        while i < len(args):
            a = args[i]
            if a in takes_value:  # the option and its value, whatever the value looks like
                opts += args[i:i + 2]
                i += 2
                continue
            (pos if _SIGNED.fullmatch(a) or not a.startswith("-") else opts).append(a)
            i += 1
        return super().parse_args(ctx, opts + ["--", *pos])


#: a token that looks like a signed number or count (-1, +2, -0.5, -1/5): an argument, not an option
_SIGNED = re.compile(r"[-+][0-9.][0-9./eE+-]*")


class _SessionPath(click.Path):
    """``click.Path(dir_okay=False)`` whose error names ``$HSPR_SESSION`` when the value came from it (a
    hostile trial: "File 'ro' is a directory" did not say where 'ro' came from)."""

    def convert(self, value, param, ctx):
        try:
            return super().convert(value, param, ctx)
        except click.BadParameter as exc:  # its source is set only after conversion: compare the value
            if os.environ.get("HSPR_SESSION") == os.fspath(value):
                exc.message = f"{exc.message} (the value of $HSPR_SESSION)"
            raise


def _session_option(f):
    return click.option("--session", "session_path", default="run.hspr", envvar="HSPR_SESSION",
                        type=_SessionPath(dir_okay=False), help=SESSION_HELP)(f)


def _json_option(f):
    return click.option("--json", "as_json", is_flag=True, help="Print one JSON object (for scripts).")(f)


def _after_stop(stopped: str, earlier: ScoreEstimate | None, st: LiveStatus, tasks: list[str], path: str) -> str:
    """The note on outcomes of ``tasks`` recorded after the session had stopped for the reason ``stopped``
    (``earlier``: the estimate then; ``st``: the status now; ``path``: the session file, quoted for a shell): a
    scripting trial's late record from a retried CI job moved the estimate already reported, without a word."""
    one = len(tasks) == 1
    they, what = ("it", "this outcome") if one else ("they", f"these {len(tasks)} outcomes")
    moved = (f" ({they} moved the estimate from {_fmt_pp(100 * earlier.point, 2)} % to "
             f"{_fmt_pp(100 * st.estimate.point, 2)} %)" if earlier is not None and st.estimate is not None
             and earlier.point != st.estimate.point else "")
    return (f"the session had stopped before {what} ({stopped.rstrip('.')}); {they} {'is' if one else 'are'} "
            f"conditioned on like the others{moved}; if {they} came late from {'a run' if one else 'runs'} already "
            f"reported, `hspr live withdraw --session {path} {task_argument(tasks[0]) if one else 'TASK'}` takes "
            f"{'it' if one else 'each'} back")


def _workers_option(f):
    """``--workers/-j`` of the commands that may fit a method (``start``; ``plot --target``, whose refit without
    the target's row had none: a scripting trial)."""
    return click.option("--workers", "-j", default=1, show_default=True, type=int, callback=check_workers,
                        help="Processes for the fit, when it is not cached (-1: all cores): hspr_robust replays "
                             "held-out source agents to calibrate its interval, a minute or more on a large bank; the "
                             "same fit on any number.")(f)


class StopWidth(click.ParamType):
    """A stop width in pp, or ``none`` / ``off`` (:data:`NO_STOP_WIDTH`) to remove the saved one."""

    name = "PP|none"

    def convert(self, value, param, ctx):
        if isinstance(value, (float, int)) or value is NO_STOP_WIDTH:
            return value
        if str(value).strip().lower() in ("none", "off"):
            return NO_STOP_WIDTH
        try:
            return float(value)
        except ValueError:
            self.fail(f"{value!r}: give a width in pp (e.g. 8) or 'none' to remove the saved one", param, ctx)


#: ``--stop-width none``: remove the saved stop width (stop only when the budget is spent)
NO_STOP_WIDTH = "none"


def _stop_width_option(f):
    return click.option("--stop-width", "stop_width", type=StopWidth(), default=None,
                        help="Change the stop width (pp) saved in the session: stop once the 90 % interval is "
                             "narrower than this; 'none' removes it (stop when the budget is spent).")(f)


def _fail(exc: Exception, as_json: bool) -> None:
    """Print ``exc`` as ``error: ...`` (and a JSON object with --json), exit 2."""
    msg = str(exc).strip("'\"") if isinstance(exc, KeyError) else str(exc)
    if isinstance(exc, click.BadParameter) and exc.param_hint and not msg.startswith(str(exc.param_hint)):
        # name the option: "--budget '0': ..." before its value, "--bank: the label ..." before words (a trial)
        msg = f"{exc.param_hint} {msg}" if msg[:1] in "'\"" else f"{exc.param_hint}: {msg}"
    if isinstance(exc, OSError) and not isinstance(exc, HsprError):
        msg = os_error_message(exc)
    ctx = click.get_current_context(silent=True)
    if ctx is not None and ctx.get_parameter_source("session_path") == ParameterSource.ENVIRONMENT:
        # a hostile trial: "File 'ro' is a directory" never said where 'ro' came from
        msg += f" (the session file is $HSPR_SESSION={ctx.params.get('session_path')})"
    msg += saved_note()
    if as_json:
        echo_json_error(msg)
    click.echo(f"error: {msg}", err=True)
    sys.exit(2)


def _fmt_pp(x: float | None, nd: int = 1) -> str:
    return "-" if x is None else f"{x:.{nd}f}"


def status_lines(st: LiveStatus, brief: bool = False) -> list[str]:
    """Human-readable lines for a status snapshot; ``brief``: the shift line in its short form
    (:attr:`~hspr.shift_report.ShiftReport.brief`: one clause unless the agent is unlike the history or
    above it), as printed after a change."""
    d = st.to_dict()
    # a new-user trial: on Terminal-Bench nothing said the score is a mean pass rate
    tasks = f"{st.n_tasks} tasks" + ("" if not st.trials else f" x {st.trials} trials; the score is the mean pass rate")
    # a leaderboard trial scored several agents, one session each, and only the path told them apart
    who = "" if st.agent is None else f" (agent {st.agent})"
    out = [f"session {st.session}{who}: bank {st.bank} ({tasks}), method {st.method}, budget {st.budget}, seed {st.seed}"
           + (f", settings {', '.join(f'{k}={v}' for k, v in st.settings.items()) or 'the defaults'}"
              + (f" (--config {st.config_file} at start)" if st.config_file else "")
              if st.settings or st.config_file else "")]
    if st.estimate is None:
        out.append("estimate: none yet (the method needs at least one outcome)")
    else:
        # estimate and bounds at the width's precision: upper - lower reads as the printed width, and a
        # point on a bound is printed on it
        if st.estimate.width is None:  # a trial: '90 % interval [-, -] % (width - pp)'
            out.append(f"estimate {_fmt_pp(d['estimate_pp'], 2)} % (no interval: method {st.method} gives a point only)")
        else:
            # the method's own level (a method-writer's trial: a 50 % interval was printed as a 90 % one)
            out.append(f"estimate {_fmt_pp(d['estimate_pp'], 2)} %, {100 * st.estimate.level:g} % interval "
                       f"[{_fmt_pp(d['lower_pp'], 2)}, "
                       f"{_fmt_pp(d['upper_pp'], 2)}] % (width {_fmt_pp(d['width_pp'], 2)} pp)"
                       # a new-user trial read a start's 46.80 % [0.00, 93.30] % as a result
                       + (" (the prior: no outcome yet)" if st.n_recorded == 0 else ""))
        if st.estimate.shift is not None:
            shift = st.estimate.shift
            # the session named in the pointer to status (a new-user trial: the bare command showed run.hspr)
            out.append("shift: " + (shift.brief if brief else shift.message).replace(
                "`hspr live status`", f"`hspr live status --session {shlex.quote(str(st.session))}`"))
    if st.hidden_agent is not None:  # a trial of the loop: the truth beside the estimate
        gap = None if st.estimate is None else round(d["estimate_pp"] - d["hidden_score_pp"], 2)
        # a new-user trial: "-1.15 pp off" read oddly; the side in words
        off = ("" if gap is None else "; the estimate is " + (f"{abs(gap):.2f} pp {'above' if gap > 0 else 'below'} it"
                                                              if gap else "equal to it to 0.01 pp")
               + ("" if st.estimate.width is None else
                  f", {'inside' if st.estimate.lower <= st.hidden_score <= st.estimate.upper else 'outside'} the interval"
                  # a new-user trial read "inside the interval" at start as a verdict; it is the prior's
                  + (" (the prior's: no outcome yet)" if st.n_recorded == 0 else "")))
        out.append(f"trial: the hidden agent {st.hidden_agent} scores {d['hidden_score_pp']:.2f} % over the session's "
                   f"{st.n_tasks} tasks{off}")
    ran = (f"run {st.n_recorded} of {st.budget} tasks" if st.n_recorded <= st.budget else
           f"run {st.n_recorded} tasks, {st.n_recorded - st.budget} over the budget of {st.budget}")
    out.append(f"{ran} ({d['n_asked_recorded']} of them asked by this session, {d['n_extra']} extra); "
               f"{len(st.pending)} pending; {st.budget_left} left in the budget")
    if st.extra:
        out.append(f"note: {len(st.extra)} outcome(s) this session did not ask for (recorded or ingested before it "
                   "asked them, after the budget was spent, again after a withdraw, or carried over from another session) "
                   # a re-trial: 'conditioned on' is the model-based methods'; uniform sampling averages them
                   + ("were averaged with its random draws (tasks chosen another way can bias that) "
                      if st.random_draws else "were conditioned on like the others ")
                   + f"and count against the budget: {', '.join(st.extra[:8])}{' ...' if len(st.extra) > 8 else ''}")
    if st.pending:
        out.append(f"pending (asked, not recorded): {', '.join(st.pending[:8])}{' ...' if len(st.pending) > 8 else ''}")
    if st.needs_rerun:
        pending = set(st.pending)  # a task the session did not ask is not offered by next (a trial took it so)
        out.append("needs a re-run (harness error, no outcome): "
                   + "; ".join(f"{t} ({why}{'' if t in pending else '; not asked by this session: next will not offer it'})"
                               for t, why in st.needs_rerun[:8])
                   + rerun_advice(st.trials, st.session, [t for t, _ in st.needs_rerun]))
    if st.expected_width is not None and st.budget_left > 0:  # with none left the interval above is final
        early_forecast = 4 * st.n_recorded < st.n_recorded + st.budget_left  # a trial set its stop width from 21.4 pp; 27.5 reached
        out.append(f"expected interval width after the remaining {st.budget_left} task(s): ~"
                   f"{_fmt_pp(d['expected_width_pp'], 2)} pp (a forecast from "
                   # a re-trial: 'from the outcomes so far' two lines under '(the prior: no outcome yet)'
                   + ("the prior" if st.n_recorded == 0 else "the outcomes so far") + ", which moves with each outcome"
                   + ("; before a quarter of the budget it is often too low: set a stop width by a later one, docs/live.md)"
                      if early_forecast else ")"))
    sw = "none" if st.stop_width_pp is None else f"{st.stop_width_pp:g} pp"
    early = (not st.stop and st.stop_width_pp is not None and st.estimate is not None and st.estimate.width is not None
             and 100 * st.estimate.width <= st.stop_width_pp and st.n_recorded < MIN_TASKS)
    # a trial: below the stop width and still 'continue', with no reason given
    why = f"; the width rule applies from {MIN_TASKS} recorded outcomes on, {st.n_recorded} so far" if early else ""
    out.append(f"stop: {st.stop_reason}" if st.stop else f"continue (stop width {sw}{why})")
    return out


def rerun_advice(trials: int | None, session: str, tasks: list[str]) -> str:
    """What to do with a task whose harness run keeps failing (a trial: `next` asked it forever, nothing
    said how out); on a bank of repeated trials its graded trials stand (a new-user trial was told to
    record 0, which such a bank refuses, and which would drop the trials that passed). The command names
    the ``session`` (a new-user trial: without it, it went to run.hspr, another session) and the task
    when there is one."""
    task = task_argument(tasks[0]) if len(tasks) == 1 else "TASK"
    where = f"--session {shlex.quote(str(session))}"
    if trials is None:
        return (". If a re-run fails the same way, count it as unresolved, as the leaderboard does: "
                f"`hspr live record {where} {task} 0`, or ingest the harness output again with --errors-as-unresolved")
    return (". If a re-run fails the same way, count the errored trials as failed, as tb and Harbor do: ingest the "
            f"harness output again with --errors-as-unresolved, or `hspr live record {where} {task} K/{trials}` with "
            "K the trials that passed")


def echo_warnings(warnings) -> None:
    """Each warning (a torn record set aside, an unreachable stop width) as a ``warning:`` line on
    stderr, so that a script reading stdout gets the result and a person still sees them."""
    for w in warnings:
        click.echo(f"warning: {w}", err=True)


def echo_status(st: LiveStatus, header: bool = True) -> None:
    """Print :func:`status_lines` on stdout (without the session line unless ``header``) and the
    status's warnings on stderr (:func:`echo_warnings`); after a change (``header`` False: record,
    withdraw, ingest) without the unreachable-stop-width forecast, which start and status say, and
    with the shift line in its short form where nothing calls for action."""
    click.echo("\n".join(status_lines(st, brief=not header)[0 if header else 1:]))
    echo_warnings(st.warnings if header else [w for w in st.warnings if not w.startswith(UNREACHABLE_STOP)])


def _replaced(live_s: LiveSession, kind: str, task: str):
    """The outcome the last ``kind`` event ('correct' / 'withdraw') of ``task`` replaced, as the
    event this command wrote under the lock holds it (None if there is none)."""
    return next((ev.get("previous") for ev in reversed(live_s.doc["events"])
                 if isinstance(ev, dict) and ev.get("type") == kind and ev.get("task") == task), None)


def _open(path: str, stop_width: float | None = None) -> LiveSession:
    live = LiveSession.open(path, announce=busy, reading=reading)  # a fit missing from the cache (cleared, new machine) is said
    # noted the moment a change is saved (a trial: Ctrl-C between the save and the command's own note said only
    # "interrupted"); the command's own note, made when the call returns, then says what the change was
    live.on_save = lambda: note_saved(f"this command's change is saved in {live.path}")
    note_session(live.path)
    _set_stop_width(live, stop_width)
    return live


def _set_stop_width(live: LiveSession, stop_width: float | None) -> None:
    """Apply ``--stop-width`` (None: leave it; NO_STOP_WIDTH: remove it) and say what changed."""
    was = live.stop_width
    if stop_width is NO_STOP_WIDTH:
        if was is not None:
            live.set_stop_width(None)
            click.echo(f"note: the session's stop width ({was:g} pp) is removed; it stops when the budget is spent",
                       err=True)
    elif stop_width is not None and stop_width != was:
        live.set_stop_width(stop_width)
        click.echo(f"note: the session's stop width is now {stop_width:g} pp"
                   + (f" (was {was:g} pp)" if was is not None else " (it had none)"), err=True)


def _save_piped(session_path: str) -> str:
    """What ``hspr live ingest -`` reads from standard input, saved beside the session as
    ``<session>.stdin-<time>.csv`` (``.json`` when it starts with ``{`` or ``[``), and that file's
    path: the outcomes' source named in the session is a file the user keeps (nothing given is
    lost), and the readers detect its form from it as from any file.

    Raises LiveSessionError for a terminal (nothing piped), a session file that does not exist (before
    the input is read), empty input, or input that cannot be saved beside the session (a full disk:
    the message names the spare copy in the temporary folder, when that could be written; a hostile
    trial saw the input lost and the error blamed on stdout)."""
    from ..fileio import stamped_beside, write_bytes_durable

    if sys.stdin is None or sys.stdin.isatty():
        raise LiveSessionError("- reads the outcomes from standard input, which is a terminal here: pipe them in "
                               "(`my-grader | hspr live ingest --session S -`) or give a file")
    session = Path(session_path)
    if not session.is_file():  # said before the input is read (and saved where no session is)
        raise LiveSessionError(f"{session_path}: no such session file; create one with `hspr live start`")
    data = sys.stdin.buffer.read()
    if not data.strip():
        raise LiveSessionError("- : standard input was empty; pipe a CSV (instance_id,resolved) or a harness JSON "
                               "into it, or give a file")
    suffix = ".json" if data.lstrip()[:1] in (b"{", b"[") else ".csv"
    dest = session.with_name(f"{session.name}.stdin-<time>{suffix}")  # named in a message if the next line fails
    try:
        dest = stamped_beside(session, "stdin", suffix)  # a re-trial: a name too long raised here, and lost the input
        write_bytes_durable(data, dest)
    except OSError as exc:
        spare = spare_copy(data, "hspr-stdin-", suffix)
        # piped in again, it is kept beside the session as usual (a re-trial: given as a file, the session named a
        # temporary file as its source; and the paths were not quoted)
        when = ("once the session has a shorter name or path (move it, or rename it with its .lock beside it)"
                if exc.errno == errno.ENAMETOOLONG else "once there is room")
        kept = (f"what was piped in is saved in {spare}: {when}, run `hspr live ingest --session "
                f"{shlex.quote(session_path)} - < {shlex.quote(spare)}`, then delete it" if spare else
                f"what was piped in could not be saved anywhere: pipe it in again {when}")
        raise LiveSessionError(f"cannot save the piped input as {dest}: {exc.strerror or exc}; nothing was recorded; "
                               f"{kept}") from None
    ctx = click.get_current_context(silent=True)
    if ctx is not None:
        ctx.meta[PIPED_KEY] = str(dest)
    return str(dest)


def _read_before_fit(path: str, session_path: str, skip_unknown: bool = False):
    """The outcomes of ``path`` read with the session header's bank settings, before the session
    is opened: a malformed file is refused at once, not after a fit the cache did not have (a
    review). None where the header cannot tell (the open then says why). For the forms that count
    trials per task (a bank of repeated trials, a tb run results.json, a Harbor job) only the file's form is
    checked here (a trial count is checked once the bank's task ids are known: an id of another
    bank is named as such), and the session reads it again. With ``skip_unknown`` every id is kept
    here (the session skips the unknown ones), and a session file is read leniently
    (:func:`hspr.harness.read_session_outcomes`)."""
    from .. import journal
    from ..harness import read_outcomes

    try:
        bank = journal.read(Path(session_path)).doc.get("bank")
    except LiveSessionError:
        return None
    if not isinstance(bank, dict):
        return None
    return read_outcomes(path, bank.get("trials"), bank.get("digest"), keep=(lambda _: True) if skip_unknown else None,
                         known=lambda _: False)


def _parse_budget(text: str, n_tasks: int, whose: str = "the bank's") -> int:
    """The budget in tasks from ``--budget`` text: a whole number of tasks, or a fraction below 1
    (or 1.0) of ``n_tasks`` (``whose``: the bank's, or the --tasks subset's). click.BadParameter
    otherwise, e.g. for 10.0 or 1e2 (a count written as a float: a trial found them taken as 10 and
    100 tasks, the help saying a point marks a fraction)."""
    try:
        v = float(text)
    except ValueError:
        raise click.BadParameter(f"{text!r}: give a number of tasks (50) or a fraction of the bank (0.10)",
                                 param_hint="--budget") from None
    if 0 < v < 1 or (v == 1 and "." in text.strip()):  # a fraction, as `hspr replay --budget` (1e-1 too): 1.0 = all
        b = int(round(v * n_tasks))
        if b < 1:
            raise click.BadParameter(f"{text!r} of the bank's {n_tasks} tasks rounds to 0 tasks; {1 / n_tasks:.4g} "
                                     "gives one (or give a number of tasks, e.g. 1)", param_hint="--budget")
        return b
    if not v.is_integer() or v < 1:
        raise click.BadParameter(f"{text!r}: give a whole number of tasks >= 1 (50) or a fraction in (0, 1] (0.10)",
                                 param_hint="--budget")
    if not text.strip().isdigit():
        raise click.BadParameter(f"{text!r}: a number of tasks is written as a whole number ({int(v)}), a fraction "
                                 "of the tasks below 1 (0.10; 1.0 = every task)", param_hint="--budget")
    if v > n_tasks:
        raise click.BadParameter(f"{text!r}: more tasks than {whose} {n_tasks}; give at most {n_tasks} (or 1.0 for "
                                 "all of them)", param_hint="--budget")
    return int(v)


def _agent_ids(ctx, param, incomplete: str):
    """Shell completion of ``--hide``: the agent ids of the bank given before it (``--bank``, default
    verified, or a ``--matrix`` file) that start with what is typed; none when it cannot be read (a
    re-trial: nothing was offered for an agent id)."""
    from click.shell_completion import CompletionItem

    try:
        from ..live import load_session_bank

        matrix = ctx.params.get("matrix")
        if matrix is not None and not Path(matrix).is_file():  # a folder is walked: too slow for a TAB
            return []
        agents = load_session_bank(ctx.params.get("bank") or ("verified" if matrix is None else None), matrix).agents
    except Exception:  # noqa: BLE001 - completion never fails the shell
        return []
    return [CompletionItem(a) for a in agents if a.startswith(incomplete)]


def _known_method(ctx, param, value):
    """``--method``: a name :func:`hspr.methods.method_class` knows (hspr's or an installed package's;
    click.BadParameter with a did-you-mean otherwise, or naming the package whose method does not load)."""
    try:
        method_class(value)
    except (KeyError, HsprError) as exc:
        raise click.BadParameter(exc.args[0], param=param) from None
    return value


def _existing_config(ctx, param, value):
    """``--config``'s file, which must exist; ``auto`` (replay's per-fold selection) is told what a live session
    takes instead (an API trial got "File 'auto' does not exist")."""
    if value is None or os.path.exists(value):
        return value
    if value == "auto":
        raise click.BadParameter("'auto' is replay's per-fold selection; a live session runs on every agent of the "
                                 "bank: give --method hspr_auto (it selects on them, which takes minutes), or a file "
                                 "from `hspr select --fold all --config-out cfg.json`", param=param)
    raise click.BadParameter(f"file {value!r} does not exist", param=param)


def _start(bank, matrix, budget, method, config_path, seed, stop_width, missing_as_zero, tasks_path, force,
           session_path, as_json, workers=1, hide=None, agent=None) -> tuple[LiveSession, LiveStatus]:
    """Create the session of ``hspr live start`` (exits with the error on bad input)."""
    try:
        check_stop_width(stop_width, "--stop-width")  # before the fit: a bad value is refused at once
        check_agent_label(agent)
        refuse_folder_name(session_path, "--session")  # a re-trial: 'z.hspr/' made a file z.hspr
        refuse_session_sidecar(session_path, "--session")
        refuse_unfit_session(session_path, "--session")  # before --force opens it (a named pipe hung for ever)
        refuse_in_dev(Path(session_path), "--session")  # a re-trial, as root: it made /dev/s.hspr and its lock
        refuse_overwriting_inputs(session_path, "--session", {"--matrix": matrix, "--tasks": tasks_path,
                                                              "--config": config_path})
        if matrix is not None:
            check_session_bank_label(bank)
            bank = bank if bank and bank.strip() else None  # an empty label: the file name, as before
        config = None
        if config_path:
            config = read_json_file(config_path, "--config")
            if not isinstance(config, dict):
                raise LiveSessionError(f"--config {config_path}: settings must be a JSON object, e.g. "
                                       '{"n_nodes": 2048}')
            from ..live.setup import refuse_other_hspr_output

            refuse_other_hspr_output(config, f"--config {config_path}")
        from ..data.io import read_task_list
        from ..live import load_session_bank

        tasks = None if tasks_path is None else read_task_list(tasks_path)
        t0 = time.perf_counter()
        with reading(matrix):  # to count the tasks: blanks kept, so the warnings about them are the session's own load's,
            # of the --tasks subset where there is one (a re-trial: the few-runs warning was judged on the whole bank here)
            whole = load_session_bank(bank or ("verified" if matrix is None else None), matrix, False, None)
        took = time.perf_counter() - t0
        try:
            n_tasks = whole.n_tasks if tasks is None else whole.select_tasks(tasks).n_tasks
        except DataError as exc:
            raise DataError(f"--tasks {tasks_path}: {exc}") from None
        b = _parse_budget(budget, n_tasks, "the bank's" if tasks is None else "the --tasks subset's")

        # a fit not yet in the cache is said on stderr (a spinner on a terminal, else one line): it
        # can take a minute or more (a calibrating or selecting method), and a silent wait looks hung
        # --workers: the fit's own jobs (hspr_robust's held-out source replays) run on that many processes; with one,
        # a fit that has such jobs says how to use every core while it runs (worded so that it does not read as
        # running on every core: a new-user trial with --workers 1)
        from ..parallel import workers as worker_pool

        cores = os.cpu_count() or 1
        parallel = method_class(method).parallel_fit
        hint = f"(on 1 core; --workers {cores} would use all {cores})" if parallel and workers == 1 and cores > 1 else ""
        replacing = force and Path(session_path).exists()
        with worker_pool(n_jobs=local_workers(workers, None, console(stderr=True))):
            live_s = LiveSession.create(session_path, b, bank=bank, matrix=matrix, method=method, config=config,
                                        seed=seed, stop_width=stop_width, missing_as_zero=missing_as_zero,
                                        overwrite=force, tasks=tasks, input_files={"--tasks": tasks_path,
                                                                                   "--config": config_path},
                                        announce=lambda text: busy(text, hint), hide=hide, agent=agent,
                                        on_save=lambda: note_saved(f"the session {session_path} is created" + (
                                            f" (the one it replaced is kept beside it as {Path(session_path).name}"
                                            ".replaced-<time>)" if replacing else "")))
        note_saved(f"the session {live_s.path} is created")
        if matrix is not None and took >= SLOW_FOLDER_S and Path(matrix).is_dir():
            # a hostile trial: every later command of a session on a folder walked it again (8.6 s each); said once the
            # session exists (a re-trial: said before a refusal), with absolute paths (a folder named '-slow'); a bank
            # file is kept parsed in the fit cache instead (live.setup.read_bank_file: a scale trial's long CSV of 2.1
            # million lines took 18 s and 1.9 GB each command); the wide CSV is named by the bank's digest: a session
            # started again with --force on another bank, its note followed, did not write over the file its kept copy
            # reads (a re-trial), nor can the name be the input's own
            csv = shlex.quote(f"{live_s.path}.bank-{live_s.doc['bank']['digest'][:12]}.csv")
            source = shlex.quote(str(Path(matrix).resolve()))
            click.echo(f"note: reading the folder {matrix} took {took:.0f} s, and every command of this session reads "
                       "it again (to check the bank is unchanged), where a bank file is read once and then kept parsed "
                       f"in the fit cache: `hspr bank build {source} --out {csv} && hspr live relink --matrix {csv} "
                       f"--session {shlex.quote(str(live_s.path))}` (the same bank: the session keeps its outcomes)",
                       err=True)
        if bank is None and matrix is None:  # a new-user trial: a Terminal-Bench user left the default unnoticed
            click.echo("note: no --bank given: the session is on the bundled bank verified (SWE-bench Verified); "
                       f"--bank names another ({', '.join(BANKS)}) and --matrix your own", err=True)
        st = live_s.status()
    except (LiveSessionError, DataError, BudgetError, ValueError, json.JSONDecodeError, click.BadParameter,
            OSError) as exc:
        _fail(exc, as_json)
    return live_s, st


#: ``next --out`` writes ids of the asked tasks only: a larger file at --out is not one it wrote
_MAX_ID_BYTES = 4 * 2 ** 20
#: a cut-down predictions file holds whole patches: larger, but a bound keeps the check quick
_MAX_PREDICTION_BYTES = 64 * 2 ** 20


def _refuse_replacing_other_output(out, live_s, predictions: bool) -> None:
    """click.BadParameter when ``next --out`` would replace a file it did not write: one that holds
    anything but ids of tasks this session asked (:meth:`LiveSession.asked`) in one of the id formats
    (:func:`hspr.idformat.is_id_text`), or with ``--predictions`` anything but predictions of such
    tasks. Re-running ``next --out`` on its own file replaces it as before; a hostile trial replaced
    a predictions file (``--predictions`` forgotten), an ingested harness CSV and another bank's CSV
    without a word, and a re-trial another run's whole predictions file and a curated id list."""
    # /dev/stdout, /dev/fd/N: written into the stream the shell connected (a file it redirects to is appended to, not
    # replaced), so not checked (a re-trial: any /dev/ or /proc/ prefix was let through, and /proc/self/cwd/x.csv
    # replaced x.csv)
    if out is None or is_descriptor_path(out) or not Path(out).is_file():
        return
    size = Path(out).stat().st_size
    if size == 0:
        return
    asked = set(live_s.asked())
    why = None
    if size > (_MAX_PREDICTION_BYTES if predictions else _MAX_ID_BYTES):
        why = f"is larger ({size:,} bytes) than anything `next --out` writes"
    else:
        text = None
        try:
            if predictions:
                ok = all(t in asked for t, _ in read_predictions(out).records)
            else:
                text = read_text(out)
                ok = is_id_text(text, asked)
        except (HsprError, OSError):  # not UTF-8, not a predictions file, unreadable: not ours
            ok = False
        if not ok:
            why = ("does not hold predictions of tasks this session asked only (what `next --predictions ... --out` "
                   "writes)" if predictions else
                   "does not hold ids of tasks this session asked only (what `next --out` writes)")
            if text is not None and is_id_text(text, set(live_s.tasks)):
                # a re-trial: an earlier session's own batch file was refused in words that said it was not one
                why = ("holds task ids of this bank that this session has not asked (an earlier session's "
                       "`next --out`, or a list of your own)")
    if why:
        raise click.BadParameter(f"{out} exists and {why}; it is not replaced: choose another file, or move that "
                                 "one away first", param_hint="--out")


#: the Python API's words for what `hspr live` sub-commands do: named in the error for such a command
API_WORDS = MappingProxyType({"tell": "record", "ask": "next", "estimate": "status"})


class LiveGroup(SuggestingGroup):
    """``hspr live``: an unknown sub-command that is a word of the Python API (``tell``, ``ask``, ``estimate``)
    is refused naming the sub-command that does it (a new-user trial: ``hspr live tell`` got no pointer)."""

    def resolve_command(self, ctx: click.Context, args: list[str]):
        if args and args[0] in API_WORDS and args[0] not in self.commands:
            raise click.UsageError(f"No such command {args[0]!r}: `{args[0]}` is the Python API's word; on the command "
                                   f"line it is `hspr live {API_WORDS[args[0]]}`.", ctx)
        name, cmd, rest = super().resolve_command(ctx, args)
        if cmd is not None:  # the usage line of the sub-command
            _refuse_repeated_options(cmd, rest, click.Context(cmd, info_name=name, parent=ctx))
        return name, cmd, rest


def _refuse_repeated_options(cmd: click.Command, args: list[str], ctx: click.Context) -> None:
    """click.UsageError when an option of ``cmd`` that takes one value is given twice with different values, or
    an on/off flag both ways: click takes the last, and a leaderboard trial's ``--session a.hspr ... --session
    b.hspr`` recorded into the second without a word (a re-trial: ``--no-missing-as-zero --missing-as-zero`` and
    ``-j1 -j2`` too). Args after ``--`` are arguments; ``--opt=value`` and ``-jVALUE`` count as ``--opt value``;
    values are compared as typed."""
    single = {o: p.name for p in cmd.params if isinstance(p, click.Option) and not (p.is_flag or p.multiple or p.count)
              for o in p.opts}
    # a flag with an --x / --no-x pair: each spelling is a value of its own
    single.update({o: p.name for p in cmd.params if isinstance(p, click.Option) and p.is_flag and p.secondary_opts
                   for o in (*p.opts, *p.secondary_opts)})
    pairs = {p.name for p in cmd.params if isinstance(p, click.Option) and p.is_flag and p.secondary_opts}
    given: dict[str, list[tuple[str, str]]] = {}
    i = 0
    while i < len(args) and args[i] != "--":
        opt, eq, value = args[i].partition("=") if args[i].startswith("--") else (args[i], "", "")
        if opt not in single and not opt.startswith("--") and opt[:2] in single and single[opt[:2]] not in pairs:
            opt, eq, value = opt[:2], "=", opt[2:]  # a short option with its value attached: -j2
        if opt in single:
            if single[opt] in pairs:
                value = opt
            elif not eq and i + 1 < len(args):
                value, i = args[i + 1], i + 1
            given.setdefault(single[opt], []).append((opt, value))
        i += 1
    for name, values in given.items():
        if len({v for _, v in values}) > 1:
            if name in pairs:
                raise click.UsageError(f"{' and '.join(dict.fromkeys(o for o, _ in values))} are both given; give one "
                                       "(click would take the last, silently)", ctx)
            shown = ", ".join(f"{o} {v}" for o, v in values)
            times = "twice" if len(values) == 2 else f"{len(values)} times"
            raise click.UsageError(f"{values[0][0]} is given {times} ({shown}); give it once (click would take the "
                                   "last, silently)", ctx)


def register(group: click.Group) -> None:
    """Add ``live`` and its subcommands (start, next, record, ingest, status, ...: :mod:`hspr.live`) to the CLI ``group``."""
    @group.group("live", cls=LiveGroup)
    def live() -> None:
        """Estimate a real new agent's full score while it runs (a persistent session).

        \b
        hspr live start --bank verified --budget 50 --session run.hspr
        hspr live next [--batch 8]            # which task(s) to run
        hspr live record <instance_id> resolved|unresolved [--correct]
        hspr live record <task_id> 3/5        # a bank of repeated trials: successes / trials
        hspr live withdraw <instance_id>      # take back an outcome recorded under the wrong id
        hspr live ingest <report.json | log folder | run summary | sb-cli report | Harbor job | tb run | CSV>
        hspr live status                      # estimate, 90 % interval, stop flag
        hspr live plot [--out run.png]        # the run as a figure
        hspr live relink --matrix NEW.csv     # the bank's matrix file moved
        hspr live start ... --hide AGENT      # no agent yet? hide a bank agent, then
        hspr live simulate                    # play it: next and record from its row
        """

    @live.command("start")
    @click.option("--bank", default=None, shell_complete=completer(list(BANKS)),
                  help=f"Bundled bank ({', '.join(BANKS)}); default verified. "
                                               "With --matrix, a label for it.")
    @click.option("--matrix", type=ExistingPath(exists=True), default=None,
                  help="Your own response matrix (any form `hspr bank validate` reads) instead of a bundled bank.")
    @click.option("--budget", required=True, help="Tasks to run: a whole number (50) or a fraction of the bank written with a point "
                       "(0.10; 1.0 = every task). No default: it is what the runs cost. The results tables measure "
                       "0.10; for a new model or scaffold (unlike the bank's agents) the README runs 0.20.")
    @click.option("--method", default=LIVE_DEFAULT, show_default=True, callback=_known_method,
                  shell_complete=completer(method_names), cls=LazyHelpOption,
                  help_text=lambda: "Method that picks the tasks and estimates the score, one of "
                  f"{known_methods_text()} (README, 'Live': why {LIVE_DEFAULT} is the default; hspr is the paper's "
                  "method; docs/python-api.md, 'Your own method': a method an installed package registers).")
    @click.option("--config", "config_path", type=click.Path(dir_okay=False), default=None, callback=_existing_config,
                  help="Method settings as JSON (for hspr and hspr_robust: HSPRConfig fields, e.g. {\"n_nodes\": 2048}; "
                       "for hspr_robust these fix its HSPR configuration and switch off its own choice of one, and "
                       "{\"config\": {...}, \"shift\": {...}} also sets its shift calibration, ShiftSettings fields).")
    @click.option("--seed", default=0, show_default=True, type=click.IntRange(min=0, max=MAX_SEED),
                  help=f"Query seed (tie-breaking among equally informative tasks), a whole number from 0 to {MAX_SEED} "
                       "(2^53 - 1, the largest a JSON reader keeps exactly; as replay's --seeds).")
    @click.option("--stop-width", "stop_width", type=StopWidth(), default=None,
                  help="Stop once the 90 % interval is narrower than this many percentage points ('none': only "
                       "when the budget is spent, the default).")
    @click.option("--missing-as-zero/--no-missing-as-zero", default=True, show_default=True,
                  help="Count missing cells of the bank as unresolved (leaderboard convention); --no-missing-as-zero "
                       "keeps them missing: HSPR fits without them, methods that cannot refuse.")
    @click.option("--tasks", "tasks_path", type=ExistingPath(exists=True, dir_okay=False), default=None,
                  help="Score over this subset of the bank's tasks only (one id per line, a JSON list, a CSV with an instance_id, "
                       "task_id or task column, or a wide CSV header), e.g. the tasks a leaderboard evaluates; a fractional "
                       "--budget is of the subset.")
    @click.option("--force", is_flag=True, help="Replace an existing session file.")
    @_workers_option
    @click.option("--hide", default=None, metavar="AGENT", shell_complete=_agent_ids, callback=argv_text,
                  help="Try the loop without an agent: leave this bank agent's row out of the fit, then play it with "
                       "`hspr live simulate` (or answer `next` from its row by hand); status gives its true score.")
    @click.option("--agent", default=None, metavar="LABEL", callback=argv_text,
                  help="A label for the agent this session scores (e.g. its leaderboard id), kept in the session file "
                       "and shown by status, --json and plot; an ingested file that names another agent is noted.")
    @_session_option
    @_json_option
    def start(bank, matrix, budget, method, config_path, seed, stop_width, missing_as_zero, tasks_path, force,
              workers, hide, agent, session_path, as_json):
        """Fit on every row of the bank (but --hide's) and create a session file.

        \b
        To try the loop without an agent, hide one bank agent and let hspr play it:
            hspr live start --bank verified --hide 20240820_honeycomb --budget 50 --session try.hspr
            hspr live simulate --session try.hspr
        """
        stop_width = None if stop_width is NO_STOP_WIDTH else stop_width
        with input_warnings() as warned:
            live_s, st = _start(bank, matrix, budget, method, config_path, seed, stop_width, missing_as_zero,
                                tasks_path, force, session_path, as_json, workers, hide, agent)
        if as_json:
            click.echo(json.dumps({"ok": True, "command": "start", **st.to_dict(), "input_warnings": warned,
                                   "replaced_kept_as": None if live_s.replaced is None else str(live_s.replaced)}))
        else:
            click.echo(f"created {session_path}")
            if live_s.replaced is not None:
                click.echo(f"note: the file it replaced was kept as {live_s.replaced}", err=True)
            echo_status(st)
            where = f"--session {shlex.quote(str(live_s.path))}"
            if hide is not None:
                click.echo(f"next: `hspr live simulate {where}` plays {live_s.hidden_agent} to the "
                           "end, or answer `hspr live next` from its row by hand (`--max-tasks N` plays N tasks)")
            else:  # a new-user trial: a trial session said what to run next, a real one did not
                trials = live_s.matrix.trials
                said = "resolved` (or unresolved)" if trials is None else f"K/{trials}` (K of its {trials} trials passed)"
                click.echo(f"next: `hspr live next {where}` prints the tasks to run; record each outcome with `hspr live "
                           f"record {where} TASK {said}, or ingest a harness's output")

    @live.command("next")
    @click.option("--batch", "k", default=1, show_default=True, type=click.IntRange(min=1),
                  help="Return K distinct tasks, chosen jointly, to run in parallel. Tasks asked before and not yet "
                       "recorded come first: with 8 pending, --batch 4 prints 4 of them again (all 8 stay pending), "
                       "--batch 10 those 8 and 2 new ones.")
    @click.option("--format", "form", type=click.Choice(FORMATS), default=None,
                  help="Print the ids for a harness: lines (id-list files), space (swebench run_evaluation -i), csv "
                       "(sb-cli --instance_ids), json, regex (mini-swe-agent --filter), harbor (harbor run -i options). The stop "
                       "line goes to stderr. Default: lines (with --out, json for a .json name).")
    @click.option("--out", "out", type=click.Path(dir_okay=False), default=None,
                  help="Write the ids (in --format; default json for a .json name, else lines) to this file "
                       "instead; with --predictions, the cut-down predictions file.")
    @click.option("--predictions", "predictions", type=ExistingPath(exists=True, dir_okay=False), default=None,
                  help="A predictions file (JSON Lines, or .json list / object keyed by instance id): with --out, "
                       "keep only the predictions of the asked tasks (--out FILE.json gets JSON, any other name "
                       "JSON Lines).")
    @click.option("--reveal", is_flag=True,
                  help="In a trial session (`start --hide`): print each id with the hidden agent's outcome in the "
                       "bank, to record by hand (`--json`: 'revealed').")
    @_stop_width_option
    @_session_option
    @_json_option
    def next_cmd(k, form, out, predictions, reveal, stop_width, session_path, as_json):
        """Print the next task id(s) to run (the same ones again until they are recorded)."""
        if form is None and out is not None and predictions is None and Path(out).suffix.lower() == ".json":
            form = "json"  # a hostile trial: `--out ids.json` got one id per line (with --predictions, --out's name
            # alone sets the form: a docs audit found `--predictions p.jsonl --out subset.json` refused)
        try:  # every refusal below prints a form's no-task text (the except clause)
            if predictions is not None and out is None:
                raise ValueError("--predictions needs --out FILE for the cut-down predictions")
            if out == "-":  # a hostile trial: a file named '-' was written
                raise ValueError("--out -: to print on stdout leave out --out (or give --out /dev/stdout)")
            if out is not None and str(out).strip():
                refuse_in_dev(Path(out), "--out")  # before the session's fit (a re-trial: refused after a 51 s fit)
            if out is None and started_closed("stdout"):  # a re-trial: `next >&-` asked, printed nothing, exit 0
                raise ValueError("standard output was closed as hspr started (`>&-`), so the task ids would be lost: "
                                 "give --out FILE, or run it with standard output open")
            if form is not None and as_json and out is None:  # a new-user trial: the format was ignored silently
                raise ValueError(f"--format {form} with --json: the JSON's 'tasks' list holds the ids; drop one of "
                                 "the two, or add --out FILE to write the ids in that format")
            if reveal and (form is not None or out is not None):  # ids beside outcomes are for a person, not a harness
                raise ValueError("--reveal prints each id beside the hidden agent's outcome for you to record; drop "
                                 f"{'--out' if out is not None else '--format'} (or --reveal)")
            if form is not None and predictions is not None:  # a hostile trial: it was ignored silently
                raise ValueError(f"--format {form} with --predictions: --out gets the cut-down predictions, in the "
                                 "form its name calls for (.json: JSON, any other name: JSON Lines); drop --format")
            live_s = _open(session_path)  # the stop width is saved once the outputs are known to be allowed
            if reveal and live_s.hidden is None:  # a re-trial: answering `next` by hand took a script over a wide CSV
                raise ValueError("--reveal shows the hidden agent's outcomes, and this session hides no agent; a trial "
                                 "session is started with `hspr live start --hide AGENT`")
            refuse_overwriting_inputs(out, "--out", {"the session file": session_path, "--predictions": predictions,
                                                     **live_s.input_paths()})
            # a session file, an empty path, a file where a folder should be: refused before anything is asked
            check_output_file(out, "--out")
            _refuse_replacing_other_output(out, live_s, predictions is not None)
            preds = None if predictions is None else read_predictions(predictions)  # a bad file: nothing asked
            if form is not None and preds is None:  # a form that refuses some bank id: refused before a batch is asked
                try:  # (a re-trial: the refused batch stayed pending, every `next` failed)
                    format_ids(live_s.tasks, form)
                except ValueError as exc:  # a hostile trial: it named an id the user had never been asked
                    raise ValueError(f"{exc} (tasks of this bank, all checked before any is asked: each may be asked "
                                     "later)") from None
            _set_stop_width(live_s, stop_width)
            before = tuple(live_s.session.pending)
            tasks = live_s.next(k)
            if tuple(live_s.session.pending) != before:  # a hostile trial: an unwritable --out after the ask, unsaid
                note_saved(f"the ask of {', '.join(tasks[:5])}{' ...' if len(tasks) > 5 else ''} is saved in "
                           f"{live_s.path} (`next` gives the same ids again)")
            st = live_s.status() if as_json else None  # the text output needs only the stop reason
            why = st.stop_reason if st is not None else live_s.stop_reason()
            missing = []
            if preds is not None:
                missing = subset_predictions(preds, tasks, out)
            elif out is not None:
                ids = format_ids(tasks, form or "lines")
                write_text_durable(ids + "\n" if ids else "", Path(out))  # no ids: an empty file, not one blank line
            elif form is not None:
                text = format_ids(tasks, form)
        except (HsprError, ValueError, OSError, click.BadParameter) as exc:
            if form in NOTHING_FORMS and out is None and not as_json:
                # a re-trial: a failed `next` printed nothing, and `harbor run ... $(hspr live next --format harbor)`
                # then ran every task (so would an empty mini-swe-agent --filter): print the form's "no task" instead
                click.echo(format_ids([], form))
            _fail(exc, as_json)
        if missing:
            click.echo(f"warning: {predictions} has no prediction for {', '.join(missing)}", err=True)
        if not as_json:  # a torn record set aside on opening, a log that no longer replays: said on every command
            echo_warnings(live_s.warnings)
        # a new-user trial: "1 of the 10 task(s) asked for: that is all ..." read awkwardly
        short = (f"only {len(tasks)} task(s) left in the budget of {live_s.budget} ({k} asked for)"
                 if why is None and 0 < len(tasks) < k else None)
        waiting = len(live_s.session.pending)  # a re-trial: --batch 5, 10, 15, 20 with no outcome between chose 20 unsaid
        rounds = batch_note(waiting if waiting > len(before) else 0, live_s.budget, live_s.session.adaptive_design)
        rerun = [t for t in tasks if t in live_s.needs_rerun]
        if rerun and not as_json:  # stdout keeps the ids only; JSON has needs_rerun
            click.echo(f"note: {', '.join(rerun[:8])}{' ...' if len(rerun) > 8 else ''} asked again after a harness "
                       f"error{rerun_advice(live_s.matrix.trials, live_s.path, rerun)}", err=True)
        tr = live_s.matrix.trials
        shown = {t: describe_outcome(live_s.hidden_outcome(t), tr) for t in tasks} if reveal else {}
        if as_json:
            click.echo(json.dumps({"ok": True, "command": "next", "tasks": tasks, "out": out,
                                   "missing_predictions": missing,  # the text's stop line too (a scripting trial)
                                   "notes": ([f"stop: {why}"] if why is not None else [short] if short else [])
                                   + ([rounds] if rounds else []),
                                   **({"revealed": shown} if reveal else {}), **st.to_dict()}))
            return
        if why is not None:
            click.echo(f"stop: {why}", err=not tasks or form is not None or out is not None)
        elif short:
            click.echo(f"note: {short}", err=True)
        if rounds:
            click.echo(f"note: {rounds}", err=True)
        if out is not None and predictions is not None:
            click.echo(f"wrote the predictions of {len(tasks) - len(missing)} of {len(tasks)} asked task(s) to {out}",
                       err=True)
        elif out is not None:
            click.echo(f"wrote {len(tasks)} task(s) to {out}", err=True)
        elif form is not None:
            if text:  # no ids (lines, space, csv): no blank line, which a `while read` loop would take for an id
                click.echo(text)
        else:
            for t in tasks:
                click.echo(f"{t}\t{shown[t]}" if reveal else t)

    @live.command("record", cls=_NumbersAreArguments)
    @click.argument("instance_id", callback=argv_text)
    @click.argument("outcome")
    @click.option("--correct", is_flag=True,
                  help="Replace the outcome already recorded for this task (a typo, a harness re-run); the session "
                       "is rebuilt as if it had been told this one, and the first stays in the file.")
    @_session_option
    @_json_option
    def record(instance_id, outcome, correct, session_path, as_json):
        """Record one task's outcome: resolved or unresolved (also 1/0, true/false, yes/no, pass/fail).

        On a bank of repeated trials (e.g. terminal-bench, 5 trials per task) give the successes
        of the task's trials as K/T, for example:

        \b
            hspr live record hello-world 3/5
            hspr live record hello-world 4/5 --correct   # it was 4 of 5
        """
        task = instance_id.strip()
        try:
            live_s = _open(session_path)
            stopped = live_s.stop_reason()  # a scripting trial: a late record after the stop moved the estimate unsaid
            earlier = live_s.status().estimate if stopped is not None else None
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UnaskedTaskWarning)  # said below, in the command's words
                new = live_s.record(instance_id, outcome, correct=correct)
            if new:  # "already recorded: no change" saves nothing
                note_saved(f"{task}'s outcome is recorded in {live_s.path}")
            st = live_s.status()
        except (HsprError, ValueError, OSError) as exc:
            _fail(exc, as_json)
        y = live_s.recorded[task]
        fixed = new and correct
        before = _replaced(live_s, "correct", task)
        tr = live_s.matrix.trials
        word = describe_outcome(y, tr)
        path = shlex.quote(str(live_s.path))
        notes = []  # on stderr, and in --json's "notes" (a scripting trial: --json dropped them all)
        row = live_s.hidden_outcome(task)
        if new and row is not None and row != y:  # a re-trial: a slip contradicting the row went unsaid
            notes.append(f"warning: the hidden agent {live_s.hidden_agent}'s outcome of {task} in the bank is "
                         f"{describe_outcome(row, tr)}, not {word}: this trial now scores another agent than the one "
                         f"its true score is of; `hspr live record --correct --session {path} {task_argument(task)} "
                         f"{describe_outcome(row, tr)}` puts it right")
        if new and not fixed and task in st.extra and st.pending:  # a new-user trial: 'x.easy' recorded for 'x'
            asked = ", ".join(st.pending[:3]) + (" ..." if len(st.pending) > 3 else "")
            notes.append(f"note: {task} is not one of the tasks this session asked and has pending ({asked}); if you "
                         f"meant one of those, take this back with `hspr live withdraw --session {path} "
                         f"{task_argument(task)}` and record that one")
        elif new and not fixed and stopped is not None:  # (a correction after the stop is the user's own fix)
            notes.append("note: " + _after_stop(stopped, earlier, st, [task], path))
        if new and not fixed and task in st.extra and live_s.session.random_draws:  # as the API's UnaskedTaskWarning
            notes.append(f"warning: {task} was not asked: " + random_draws_caveat(live_s.doc["method"]["name"]))
        if not as_json:
            click.echo(f"corrected {task}: {describe_outcome(before, tr)} -> {word}" if fixed
                       else f"recorded {task} {word}" if new else f"{task} already recorded {word}: no change")
        for line in notes:
            click.echo(line, err=True)
        if as_json:
            click.echo(json.dumps({"ok": True, "command": "record",
                                   "recorded": [{"task": task, "outcome": y}] if new and not fixed else [],
                                   "corrected": [{"task": task, "outcome": y, "previous": before}] if fixed else [],
                                   "unchanged": [] if new else [task], "notes": notes, **st.to_dict()}))
        else:
            echo_status(st, header=False)

    @live.command("withdraw")
    @click.argument("instance_id", callback=argv_text)
    @_session_option
    @_json_option
    def withdraw(instance_id, session_path, as_json):
        """Take back the outcome recorded for a task (one recorded under the wrong id, say).

        The session is rebuilt as if the task had been neither told nor asked (the other tasks
        asked stay as asked); the outcome stays in the session file. A later `next` may ask the
        task again, and then a fresh result is recorded as usual; otherwise it may be recorded by
        hand (as an outcome the session did not ask for), and a harness file ingested later does
        not bring the withdrawn outcome back. To change an outcome instead, use
        `hspr live record ID OUTCOME --correct`.
        """
        task = instance_id.strip()
        try:
            live_s = _open(session_path)
            live_s.withdraw(task)
            note_saved(f"{task}'s outcome is withdrawn in {live_s.path}")
            st = live_s.status()
        except (HsprError, ValueError, OSError) as exc:
            _fail(exc, as_json)
        previous = _replaced(live_s, "withdraw", task)
        if as_json:
            click.echo(json.dumps({"ok": True, "command": "withdraw", "withdrawn": [{"task": task,
                                   "previous": previous}], **st.to_dict()}))
        else:
            click.echo(f"withdrew {task} (was {describe_outcome(previous, live_s.matrix.trials)})")
            echo_status(st, header=False)

    @live.command("ingest")
    @click.argument("path", type=ExistingPath(exists=True, allow_dash=True))
    @click.option("--errors-as-unresolved", is_flag=True,
                  help="Count evaluations that errored in the harness as unresolved (leaderboard convention) "
                       "instead of leaving them pending for a re-run.")
    @click.option("--skip-unknown", is_flag=True,
                  help="Skip ids that are not tasks of the session (e.g. a harness run over all tasks, ingested into "
                       "a session on a --tasks subset) and record the rest; they are listed in a note. Without it "
                       "such a file is refused whole.")
    @_session_option
    @_json_option
    def ingest(path, errors_as_unresolved, skip_unknown, session_path, as_json):
        """Record outcomes from SWE-bench or Terminal-Bench harness output, or a CSV (instance_id,resolved;
        task_id,successes,trials on a bank of repeated trials).

        \b
        PATH is one of:
          a per-instance report.json (logs/run_evaluation/<run>/<model>/<id>/report.json),
          a log folder holding such reports,
          the harness's run summary <model>.<run_id>.json (schema_version 2),
          an sb-cli report (sb-cli-reports/<subset>__<split>__<run_id>.json),
          a CSV with columns instance_id,resolved (or task_id,resolved; the header may be left out:
            then the first column is the task id and the second the outcome; a cell that is true or
            an error's message in a column named error, errors, errored or exception, or with such a
            word (is_error, error_message, errorType, ...; false in no_error or error_free), makes the
            line a harness error),
          a Terminal-Bench run's results.json (tb run: runs/<run_id>/results.json, or that folder;
            one entry per trial, here one trial per task),
          a Harbor job folder (jobs/<job_name>/, one <trial_name>/result.json per trial), or one
            trial's result.json (reward 1 -> 1; 0, or no reward after an agent failure -> 0; an
            environment error is a harness error; cancelled trials are left out),
          another hspr live session file (its recorded outcomes: carries them into this session),
          or - for standard input (a CSV or JSON piped in; saved beside the session as
            <session>.stdin-<time>.csv or .json, which the session then names as its source).
        Resolved -> 1; unresolved and empty patches -> 0; harness errors stay pending and are
        listed as needing a re-run (unless --errors-as-unresolved).

        \b
        On a bank of repeated trials (e.g. terminal-bench) PATH is a CSV:
          task_id,successes,trials   one line per task, or
          task_id,resolved           one line per trial (a trial column catches a trial given twice;
                                     an error column's message marks a harness error: graded lines
                                     of all the trials stand beside it, fewer make the task a re-run,
                                     see docs/live.md);
          or a Terminal-Bench run's results.json (tb run --n-attempts equal to the bank's trials;
                                     an unresolved trial, timeouts included, is a failure, as tb counts it);
          or a Harbor job folder (harbor run --n-attempts equal to the bank's trials; a task
                                     without all its trials yet is left out with a note);
        or another session file of the bank. Every task of a CSV or tb run file needs all its
        trials (graded, or harness errors making up the rest), else nothing is recorded.
        """
        # a re-trial: a folder that could not be read was said on stderr only, not in the --json object
        with input_warnings() as warned:
            try:
                if path == "-":
                    path = _save_piped(session_path)
                    click.echo(f"standard input saved as {path}", err=True)
                with reading(path):
                    read = _read_before_fit(path, session_path, skip_unknown)
                live_s = _open(session_path)
                stopped = live_s.stop_reason()  # outcomes after the stop are noted, as by `record`
                earlier = live_s.status().estimate if stopped is not None else None
                with reading(path), warnings.catch_warnings():  # read again where the bank's ids or trials are needed
                    warnings.simplefilter("ignore", UnaskedTaskWarning)  # the ingest's notes say it, in its words
                    res = live_s.ingest(path, errors_as_unresolved=errors_as_unresolved, skip_unknown=skip_unknown,
                                        read=read)
                if res.recorded:  # a re-trial: "0 outcome(s) ... are recorded" was said of an ingest that changed nothing
                    note_saved(f"{len(res.recorded)} outcome(s) of {path} are recorded in {live_s.path}")
                st = live_s.status()
            except (HsprError, ValueError, OSError) as exc:
                _fail(exc, as_json)
        if res.recorded and stopped is not None:
            res.notes.append(_after_stop(stopped, earlier, st, [t for t, _, _ in res.recorded], shlex.quote(str(live_s.path))))
        off = [(t, y, row) for t, y, _ in res.recorded if (row := live_s.hidden_outcome(t)) is not None and row != y]
        if off:  # as `record` warns of one (a re-trial: an ingested file's slip against the hidden row went unsaid)
            tr = live_s.matrix.trials
            shown = ", ".join(f"{t} ({describe_outcome(y, tr)}, the row: {describe_outcome(row, tr)})" for t, y, row in off[:3])
            res.notes.append(f"{len(off)} outcome(s) differ from the hidden agent {live_s.hidden_agent}'s row in the bank: "
                             f"{shown}{' ...' if len(off) > 3 else ''}; this trial now scores another agent than the one "
                             f"its true score is of; `hspr live record --correct --session {shlex.quote(str(live_s.path))} "
                             "TASK OUTCOME` puts each right")
        if as_json:
            click.echo(json.dumps({"ok": True, "command": "ingest", **res.to_dict(), **st.to_dict(),
                                   "input_warnings": warned}))
        else:
            n1 = sum(y == 1 for _, y, _ in res.recorded)
            n0 = sum(y == 0 for _, y, _ in res.recorded)
            tr = live_s.matrix.trials
            if tr is None:
                split = f"{n1} resolved, {n0} unresolved"
                if res.errors_counted:  # a trial: 4 of 7 'unresolved' were errors (one still running), unsaid
                    split += f", of which {len(res.errors_counted)} harness error(s) counted unresolved"
            else:  # pass rates: 'resolved' would say too little (a new-user trial)
                split = (f"{n1} passing all {tr} trials, {n0} none, {len(res.recorded) - n1 - n0} some")
            if tr is not None and res.errors_counted:  # a re-trial: said on a 0/1 bank only
                split += f"; {len(res.errors_counted)} with harness errors counted as failed trials"
            click.echo(f"{path} ({res.form}): recorded {len(res.recorded)} outcome(s) ({split}), "
                       f"{len(res.unchanged)} unchanged, "
                       + (f"{len(res.withdrawn)} withdrawn before (not recorded), " if res.withdrawn else "") +
                       f"{len(res.needs_rerun)} harness error(s) needing a re-run")
            for t, why in res.needs_rerun:
                click.echo(f"  re-run {t}: {why}")
            for note in res.notes:
                click.echo(f"  note: {note}")
            echo_status(st, header=False)

    @live.command("plot")
    @click.option("--out", "out", type=click.Path(dir_okay=False), default=None,
                  help="The figure: a .png or .svg file. Default: the session file's name with .png (run.hspr: "
                       "run.png), and -replay.png with --target.")
    @click.option("--target", default=None, callback=argv_text,
                  help="Instead of the session's own outcomes: replay this agent of the session's bank (its row "
                       "hidden from the fit) with the session's method, budget and seed, and draw its true score. "
                       "The replay runs the whole budget; the stop width line shows where it would have stopped.")
    @_workers_option
    @_session_option
    def plot(out, target, workers, session_path):
        """Draw the estimate and its 90 % interval against tasks run (and the stop width, if set)."""
        from ..replay import HiddenRow

        if out is None:  # a re-trial: every session's figure was run.png, a second trial's replaced the first's
            out = str(Path(session_path).with_name(Path(session_path).stem + ("-replay" if target else "") + ".png"))
        from ..report.runplot import figure_format, figure_run, is_figure_file, save_figure
        from ..session import trajectory

        try:
            if is_descriptor_path(out) or str(out).strip() == "-":  # a re-trial: told to name a .png, it wrote
                # /dev/stdout.svg; before the fit ('-' was told to use /dev/stdout, which is refused here)
                raise click.BadParameter(f"{out}: a figure is written to a file, not to standard output or another open "
                                         "descriptor; give a file name ending in .png or .svg, e.g. run.png",
                                         param_hint="--out")
            refuse_in_dev(Path(out), "--out")  # before the fit (a re-trial: refused after a 53 s fit)
            refuse_overwriting_inputs(out, "--out", {"the session file": session_path})  # said first, as before
            figure_format(out)  # as that: /dev/zero was refused after the fit
            live_s = LiveSession.open(session_path, announce=busy, reading=reading)
            echo_warnings(live_s.warnings)  # a torn record set aside: said here too, as by every other command
            refuse_overwriting_inputs(out, "--out", live_s.input_paths())  # (the session file: checked above)
            check_output_file(out, "--out")  # a session file, a folder, 'x/' or a file where a folder should be
            if (not is_descriptor_path(out) and Path(out).is_file() and Path(out).suffix.lower() in (".png", ".svg")
                    and not is_figure_file(out)):
                raise click.BadParameter(f"{out} exists and is not {'a PNG' if Path(out).suffix.lower() == '.png' else 'an SVG'} figure "
                                         "drawn by hspr; it is not replaced: choose another file, or move that one away first",
                                         param_hint="--out")
            sw = live_s.stop_width
            if target is None:  # a trial session (--hide): the hidden agent's true score drawn beside its run
                # a trial: 5 s without a word (each estimate is recomputed with the session's asks)
                with busy(f"the estimate after each of the {len(live_s.recorded)} recorded outcome(s)"):
                    path = live_s.trajectory()
                truth = live_s.hidden_score
                title = (f"{shorten(Path(session_path).name, 40)}"
                         + ("" if live_s.agent is None else f" ({shorten(live_s.agent, 40)})")
                         + f": {live_s.doc['method']['name']} on "
                         f"{shorten(str(live_s.doc['bank']['name']), 40)}"
                         + ("" if live_s.hidden is None else f", {shorten(live_s.hidden_agent, 30)} hidden"))
            else:
                mat = live_s.matrix
                if target not in mat.agents and target.strip() in mat.agents:  # as record strips task ids
                    target = target.strip()
                if live_s.hidden_agent is not None and target.strip() == live_s.hidden_agent:
                    raise LiveSessionError(f"--target {target!r} is the agent this trial session hides, so it is not in "
                                           "the session's fit: `hspr live plot` without --target draws its run")
                if target not in mat.agents:
                    raise LiveSessionError(f"--target {target!r} is not an agent of the session's bank ({mat.n_agents} "
                                           f"agents, e.g. {mat.agents[0]!r})" + did_you_mean([target], mat.agents))
                r = mat.agents.index(target)
                name = live_s.doc["method"]["name"]

                with busy(f"replaying {target} ({live_s.budget} tasks, its row hidden from the fit; seconds to a "
                          "minute)"):
                    from ..parallel import workers as worker_pool

                    try:
                        with worker_pool(n_jobs=local_workers(workers, None, console(stderr=True))):
                            model = fit_model(name, live_s.doc["method"].get("config") or {}, mat.drop_rows([r]))
                    except ValueError as exc:  # a hostile trial: the bank file was blamed, not the hidden row
                        raise LiveSessionError(f"--target {target!r}: with its row hidden, the bank has "
                                               f"{mat.n_agents - 1} agent(s) to fit {name} on: {exc}") from None
                    row, sess = HiddenRow(mat, r), model.start(live_s.budget, live_s.doc["seed"])
                    events = []  # with its asks, so the path ends at the run's own estimate for every method
                    while not sess.done:
                        t = sess.ask()
                        y = row.reveal(t)
                        sess.tell(t, y)
                        events += [("ask", 1, [t]), ("tell", t, y)]
                    path = trajectory(model, live_s.budget, live_s.doc["seed"], events)
                truth = row.full_score()
                title = (f"replay of {shorten(target, 40)}: {name} on {shorten(str(live_s.doc['bank']['name']), 40)} "
                         "(its row hidden from the fit" + ("" if live_s.hidden is None else
                                                          f", as the trial's {shorten(live_s.hidden_agent, 30)}") + ")")
            if not path:  # a hostile trial: an empty figure with meaningless axes, exit 0
                raise LiveSessionError(f"nothing to plot yet: {live_s.doc['method']['name']} gives its first estimate "
                                       "after the first outcome; record one (or draw a bank agent's replay with --target)")
            # a hostile trial: a 200-character session name made a 2686 px wide figure, the plot squeezed in its middle
            # (the names are cut above, so the method and bank stay in the title)
            with busy(f"drawing {out}"):  # matplotlib's import alone takes seconds
                fig = figure_run(path, title, sw, truth, live_s.budget)
                try:
                    written = save_figure(fig, out)
                except OSError as exc:  # the message alone ('No space left on device') does not say where
                    raise OSError(f"cannot write {out}: {exc.strerror or exc}") from None
        except (HsprError, ValueError, OSError, click.BadParameter) as exc:
            _fail(exc, False)
        click.echo(f"wrote {written} ({len(path)} estimate{'' if len(path) == 1 else 's'})")
        if truth is not None and path:  # a new-user trial: the replay's numbers were only in the figure
            last = path[-1]
            band = "" if last["lower"] is None else f", 90 % interval [{100 * last['lower']:.2f}, {100 * last['upper']:.2f}] %"
            who = f"replay of {target}" if target is not None else f"hidden agent {live_s.hidden_agent}"
            click.echo(f"{who}: estimate {100 * last['point']:.2f} %{band} after {last['n']} tasks; "
                       f"true score {100 * truth:.2f} % (error {100 * (last['point'] - truth):+.2f} pp)")

    @live.command("simulate")
    @click.option("--batch", "k", default=1, show_default=True, type=click.IntRange(min=1),
                  help="Tasks asked at once, as an agent that runs K in parallel.")
    @click.option("--max-tasks", "max_tasks", default=None, type=click.IntRange(min=1),
                  help="Record at most N outcomes (default: until the session says stop).")
    @_session_option
    @_json_option
    def simulate(k, max_tasks, session_path, as_json):
        """Play the agent a trial session hides (`hspr live start --hide AGENT`): ask for tasks and
        record each one's outcome from that agent's row of the bank, as `next` then `record` would,
        until the session says stop; then print the status beside the agent's true score.

        \b
            hspr live start --bank verified --hide 20240820_honeycomb --budget 50 --session try.hspr
            hspr live simulate --session try.hspr [--batch 4] [--max-tasks 10]
        """
        try:
            live_s = _open(session_path)
            if live_s.hidden is None:
                live_s.simulate()  # refused, with the way to start a trial session, before a bar is drawn
            con = console(stderr=True)
            with progress_bar(con, disable=as_json) as prog:
                from rich.markup import escape  # here: shell completion loads this module, rich is slow to load

                # escaped: rich reads a description as markup ('gpt35[bold red]x' was drawn as 'gpt35x': a re-trial)
                bar = prog.add_task(f"simulate {escape(shorten(str(live_s.hidden_agent), 40))}",
                                    total=max_tasks or max(live_s.budget - live_s.session.n_queried, 0))
                done = live_s.simulate(max_tasks, k, progress=lambda t, y: prog.advance(bar))
            if done:
                note_saved(f"{len(done)} outcome(s) are recorded in {live_s.path}")
            st = live_s.status()
            if not done and not as_json and st.stop:  # a re-trial: 'recorded 0 outcome(s)' beside an empty bar
                click.echo(f"note: the session had already stopped ({st.stop_reason}); nothing was recorded", err=True)
            # rounds of k, as `next --batch k` would say (a re-trial: the command for trying the loop said nothing)
            rounds = (batch_note(min(k, live_s.budget), live_s.budget, live_s.session.adaptive_design, rounds=True)
                      if done else None)
            if rounds and not as_json:
                click.echo(f"note: {rounds}", err=True)
        except (HsprError, ValueError, OSError) as exc:
            _fail(exc, as_json)
        if as_json:
            click.echo(json.dumps({"ok": True, "command": "simulate",
                                   "recorded": [{"task": t, "outcome": y} for t, y in done], **st.to_dict()}))
        else:
            tr = live_s.matrix.trials
            click.echo(f"recorded {len(done)} outcome(s) of {live_s.hidden_agent}" +
                       (f" ({sum(y == 1 for _, y in done)} resolved)" if tr is None and done else ""))
            echo_status(st)

    @live.command("status")
    @_stop_width_option
    @_session_option
    @_json_option
    def status(stop_width, session_path, as_json):
        """Print the estimate (pp), its 90 % interval, counts, expected final width and stop flag."""
        try:
            st = _open(session_path, stop_width).status()
        except (HsprError, ValueError, OSError) as exc:
            _fail(exc, as_json)
        if as_json:
            click.echo(json.dumps({"ok": True, "command": "status", **st.to_dict()}))
        else:
            echo_status(st)

    @live.command("relink")
    @click.option("--matrix", required=True, type=ExistingPath(exists=True),
                  help="The new place of the session's bank matrix file or bank folder (the same bank: checked by "
                       "digest).")
    @_session_option
    @_json_option
    def relink(matrix, session_path, as_json):
        """Point the session at its bank matrix file after the file moved (nothing else changes)."""
        with input_warnings() as warned:  # the new file's warnings (a re-trial: on stderr only)
            try:
                with reading(matrix):
                    new, warnings = relink_matrix(session_path, matrix)
            except (HsprError, ValueError, OSError) as exc:
                _fail(exc, as_json)
        if as_json:
            click.echo(json.dumps({"ok": True, "command": "relink", "matrix": new, "warnings": warnings,
                                   "input_warnings": warned}))
        else:
            click.echo(f"{session_path}: bank matrix is now {new}")
            echo_warnings(warnings)
