"""``hspr select``: source-only HSPR configuration selection for one fold (HSPR_SPEC section 6)."""

from __future__ import annotations

import fcntl
import os
import sys
import time
from pathlib import Path

import click
from click.core import ParameterSource
from rich.table import Table

from ..data.banks import BANK_ORDER, BANKS, load_bank
from ..data.folds import N_FOLDS, bank_folds, fold_indices, make_folds
from ..data.io import load_matrix
from ..data.matrix import DataError, ResponseMatrix
from ..errors import HsprError
from ..fileio import loads, not_a_regular_file, readable_name
from ..fileio import write_json_durable as write_json_atomic
from ..session import BudgetError, budget_from_fraction
from .common import (
    CliError,
    ExistingPath,
    backend_options,
    check_backend,
    check_matrix_label,
    check_workers,
    command_line,
    completer,
    connected,
    environment,
    local_workers,
)
from .display import console as make_console
from .display import print_error, print_table, progress_bar, reading, table_console
from .outputs import (
    check_output_file,
    check_output_suffix,
    is_config_doc,
    is_select_result,
    os_fix,
    refuse_overwriting_inputs,
    refuse_replacing_other_json,
    spare_copy,
)

#: how the shipped table (src/hspr/methods/hspr/selected_configs.json) is regenerated, per bank and fold
GENERATED_BY = ("hspr select --bank {bank} --fold {fold} --workers 2 --out sel_{bank}_{fold}.json "
                "--record src/hspr/methods/hspr/selected_configs.json   (bank in lite verified full pro, fold in "
                "0 1 2 3; missing cells of pro counted as unresolved; each entry's 'command' is the exact call, "
                "and verified folds 1-3 and full used --eval-nodes 2048 --eval-draws 32768 inside selection)")


#: below this many source agents `hspr select` notes that its choice rests on few replays
FEW_SOURCES = 8


def fold_sources(matrix: ResponseMatrix, folds: list[list[str]], fold: int) -> ResponseMatrix:
    """The source rows of target fold ``fold``: every agent not in that fold (row order kept).

    Raises click.BadParameter for a fold number out of range.
    """
    if not 0 <= fold < len(folds):
        raise click.BadParameter(f"fold must be in 0..{len(folds) - 1}, got {fold}", param_hint="--fold")
    return matrix.drop_rows(fold_indices(matrix.agents, folds)[fold])


def check_record_table(path: Path) -> dict:
    """The --record file's table (``{}`` when it does not exist yet), read once for the checks
    below; refuse a file that is not a shipped-results table, before any work starts.

    Raises click.BadParameter naming the file and what is wrong.
    """
    if not path.exists():
        return {}
    if not_a_regular_file(path):  # a re-trial: select waited for ever on a named pipe
        raise click.BadParameter(f"{path}: not a regular file (a named pipe or a device?); give a new file name or a "
                                 "table written by --record", param_hint="--record")
    try:
        table = loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:  # JSONDecodeError, DuplicateKeyError
        raise click.BadParameter(f"{path}: not a readable JSON file ({exc}); give a new file name or a table "
                                 "written by --record", param_hint="--record") from None
    # a text value is a note (generated_by, or the user's own), as replay's reader takes it (a hostile trial)
    bad = (not isinstance(table, dict)) or [k for k, v in table.items()
                                            if not isinstance(v, str) and not (isinstance(v, dict) and all(
                                                isinstance(e, dict) for e in v.values()))]
    if bad:
        raise click.BadParameter(f"{path}: expected a table {{bank: {{fold: entry}}}} as written by --record; "
                                 "give a new file name", param_hint="--record")
    from ..methods.hspr.config import check_selection_table

    try:  # a damaged entry was kept, and replay refused the table only later (a hostile trial)
        return check_selection_table(table, str(path))
    except ValueError as exc:
        raise click.BadParameter(f"{exc}; fix or drop that entry, or give a new file name", param_hint="--record") from None


def check_record_matrix(path: Path, table: dict, bank: str, matrix_digest: str, missing_flag: str | None = None) -> None:
    """Refuse to record a selection under ``bank`` when the table's entries for that label were
    selected on another matrix (their ``matrix_digest`` differs): the label would name folds of
    two matrices. Entries without a matrix digest (written before it was kept) are not checked.
    ``missing_flag``: for a matrix with missing cells, the missing-cell option this call lacks
    (``--no-missing-as-zero`` or its default), which also changes the digest.

    Raises click.BadParameter naming the file, the label and the fix.
    """
    entries = table.get(bank, {})
    other = sorted(f for f, e in entries.items() if e.get("matrix_digest") not in (None, matrix_digest))
    if other:
        # a hostile trial: the same file, recorded with --no-missing-as-zero and asked again without it
        same = (f" (or on this one with its missing cells read otherwise: were they recorded {missing_flag}?)"
                if missing_flag else "")
        raise click.BadParameter(f"{path} holds {bank} fold(s) {', '.join(other)} selected on another matrix than this "
                                 f"one{same}: give another --bank label or another --record file", param_hint="--record")


def check_record_sources(path: Path, table: dict, bank: str, fold, source_digest: str) -> None:
    """Refuse, before any work, to record a selection on sources another entry of the table (another
    label or fold) was selected on: `hspr replay --config TABLE` finds an entry by its sources, and
    two for the same sources make the table ambiguous (a re-trial: select wrote it, replay refused it).

    Raises click.BadParameter naming the file, the other entry and the fix.
    """
    for b, folds in table.items():
        if not isinstance(folds, dict):
            continue
        for f, e in folds.items():
            if isinstance(e, dict) and e.get("source_digest") == source_digest and (b, f) != (bank, str(fold)):
                raise click.BadParameter(f"{path} holds {b}/{f}, a selection on the same sources: a second one "
                                         "(another label, fold or budget) would make the table ambiguous for `hspr "
                                         f"replay --config` (give --bank {b} --fold {f} to replace that entry, or "
                                         "another --record file)", param_hint="--record")


class RecordConflict(ValueError):
    """A ``--record`` table that, read again under its lock, holds an entry this selection contradicts
    (another matrix under the label, or the same sources under another entry), recorded by another process
    while this selection ran."""


def record_entry(path: Path, bank: str, fold: int, result, command: str, matrix_digest: str | None = None) -> None:
    """Merge one selection into a shipped-results JSON ``{bank: {fold: entry}}`` (file-locked, atomic).

    ``matrix_digest`` (the whole matrix's, sources and targets) lets :func:`check_record_matrix`
    keep one label to one matrix. The checks of :func:`check_record_matrix` and
    :func:`check_record_sources`, made before the selection, are made again under the lock
    (RecordConflict). A missing folder is created; a replaced table keeps its file mode.
    """
    path = Path(path).resolve()
    path.parent.mkdir(parents=True, exist_ok=True)  # as --out's folder is (a hostile trial: minutes of work, then ENOENT)
    # Lock the table's folder, not a lock file: nothing is left behind in the tree or in /tmp.
    folder = os.open(path.parent, os.O_RDONLY)
    try:
        fcntl.flock(folder, fcntl.LOCK_EX)
        table = loads(path.read_text(encoding="utf-8")) if path.exists() else {}
        # checked again under the lock: a selection recorded meanwhile by another process (a hostile trial: two
        # concurrent runs put folds of two matrices under one label, which every later --record then refused)
        try:
            if matrix_digest is not None:
                check_record_matrix(path, table, bank, matrix_digest)
            check_record_sources(path, table, bank, fold, result.source_digest)
        except click.BadParameter as exc:
            raise RecordConflict(f"another selection recorded in it while this one ran conflicts with it: "
                                 f"{exc.message}") from None
        # the shipped table's regeneration recipe only in the shipped table (a trial's own table got it)
        from ..methods.hspr.selection import shipped_table_path

        table.setdefault("generated_by", GENERATED_BY if path == shipped_table_path() else
                         "hspr select --record (each entry's 'command' is the exact call that made it)")
        entry = {"config": result.config.to_dict(), "source_digest": result.source_digest,
                 "source_mae_pp": round(100 * result.source_mae, 4),
                 "source_max_err_pp": round(100 * result.stages[2][result.chosen[2]]["max_err"], 4),
                 "n_sources": result.n_sources, "budget": result.budget,
                 "eval_overrides": result.eval_overrides, "seconds": round(result.seconds, 1), "command": command}
        if matrix_digest is not None:
            entry["matrix_digest"] = matrix_digest
        table.setdefault(bank, {})[str(fold)] = entry
        ordered = {k: table[k] for k in table if not isinstance(table[k], dict)}
        for b in sorted((k for k in table if isinstance(table[k], dict)),
                        key=lambda b: (BANK_ORDER.index(b) if b in BANK_ORDER else 99, b)):
            ordered[b] = dict(sorted(table[b].items(), key=lambda kv: int(kv[0]) if kv[0].isdigit() else kv[0]))
        write_json_atomic(ordered, path)  # a new table follows the umask, a replaced one keeps its mode
    finally:
        os.close(folder)  # closing releases the lock


def stage_summary(result) -> Table:
    """``hspr select``'s stages as a rich Table: per stage the chosen setting, its source MAE and
    largest agent error (pp), and the number of grid points tried."""
    table = Table(title="HSPR source-only selection (LOO over source agents; errors in pp)",
                  caption="Each stage keeps its best row. Stages 1-2 score the posterior mean, stage 3 the "
                          "shipped decision (the calibrated predictive median) on stage 2's query paths, so "
                          "its source MAE can be above stage 2's.")
    for col in ("stage", "chosen setting", "source MAE", "max agent err", "grid points"):
        table.add_column(col)
    for k, rows in enumerate(result.stages):
        r = rows[result.chosen[k]]
        s = ", ".join(f"{a}={b}" for a, b in r["setting"].items())
        table.add_row(str(k + 1), s, f"{100 * r['mae']:.3f}", f"{100 * r['max_err']:.3f}", str(len(rows)))
    return table


def _parse_fold(text) -> int | None:
    """``--fold``: a fold number (checked against the folds later), or None for 'all' (every agent)."""
    if str(text).strip().lower() == "all":
        return None
    try:
        return int(str(text).strip())
    except ValueError:
        raise click.BadParameter(f"{text!r}: give a fold number 0..{N_FOLDS - 1}, or 'all' for every agent of the "
                                 "bank", param_hint="--fold") from None


def versus_default_lines(result) -> list[str]:
    """What ``hspr select`` prints after its choice: the default configuration's source MAE on the
    same held-out agents, and a warning when the chosen setting is not lower by more than one
    standard error of the paired difference (:meth:`SelectionResult.versus_default`; the
    one-standard-error rule, as ``hspr_robust`` uses). A new-user trial: on a 38-agent bank the
    chosen settings replayed 1.5 pp worse than the defaults, and nothing had said so."""
    cmp = result.versus_default()
    if cmp is None:
        return []
    diff, se = cmp
    keys = ("rank", "gamma", "kappa", "acquisition", "lam")
    base = result.default["setting"]  # the row's own setting: the defaults selection started from
    lines = [f"default settings ({', '.join(f'{k}={base[k]}' for k in keys)}): source MAE "
             f"{100 * result.default['mae']:.3f} pp on the same {result.n_sources} held-out agents; chosen minus "
             f"default {100 * diff:+.3f} pp (standard error {100 * se:.3f} pp)"]
    same = all(getattr(result.config, k) == base[k] for k in keys)
    if not same and diff > 0:  # a hostile trial: 'lower by less than one standard error' when it was higher
        lines.append(f"warning: the chosen settings have a higher source MAE than the defaults on these held-out "
                     f"agents ({100 * diff:+.3f} pp; the stages choose on their own rules and query paths, not on this "
                     "comparison): keep the defaults (leave out --config) unless a replay shows otherwise")
    elif not same and not diff < -se:
        n_grid = sum(len(rows) for rows in result.stages)
        lines.append(f"warning: the chosen settings are not clearly better than the defaults on these sources (lower "
                     f"by less than one standard error, and the chosen MAE is the best of {n_grid} candidates, so it "
                     "is optimistic): keep the defaults (leave out --config) unless a replay shows otherwise")
    return lines


def write_outputs(payload: dict, result, out: str | None, config_out: str | None, record: str | None, record_it,
                  replaced: dict | None = None) -> None:
    """Write the --out result, the --config-out config and the --record entry (``record_it()``), in that
    order. If one cannot be written (full disk, lost permission, a --record table damaged meanwhile), the
    selection is not thrown away: the whole result goes to a file in the temporary folder, and the error
    (CliError, exit 2) names it, the files already written and what they replaced (``replaced``, path ->
    note, from :func:`replaced_notes`; a hostile trial: minutes of selection were lost to a read-only --record)."""
    done: list[str] = []
    steps = [(out, lambda: write_json_atomic(payload, Path(out)))] if out else []
    if config_out:
        steps.append((config_out, lambda: write_json_atomic(result.config.to_dict(), Path(config_out))))
    if record:
        steps.append((record, record_it))
    for path, write in steps:
        try:
            write()
        except (OSError, ValueError) as exc:  # ValueError: a --record table that is no longer JSON
            spare = spare_copy(payload, "hspr-select-")
            kept = (f"the selection was saved to {spare} (its 'config' holds the chosen settings)" if spare else
                    "the selection could not be saved anywhere else either")
            gone = [replaced[p] for p in done if p in (replaced or {})]
            wrote = (f"; {' and '.join(done)} {'was' if len(done) == 1 else 'were'} written" if done else "") + \
                (f" (replacing {'; '.join(gone)})" if gone else "")
            if isinstance(exc, OSError):
                why, fix = exc.strerror or exc, os_fix(exc)
            elif isinstance(exc, RecordConflict):
                why, fix = str(exc), "Record it with another --bank label or in another --record file"
            else:
                why, fix = f"it is no longer a table of selections ({exc})", "Restore that file"
            raise CliError(f"cannot write {path}: {why}{wrote}; {kept}. {fix}, or choose another file name") from None
        done.append(str(path))


def replaced_notes(out: str | None, earlier_out, config_out: str | None, earlier_cfg, record: str | None, recorded: dict,
                   bank: str, fold) -> dict[str, str]:
    """What each output will replace, by its path: an earlier --out result (its bank and fold), an earlier
    --config-out config, and the --record table's earlier entry for this bank and fold (its budget)."""
    notes = {}
    if isinstance(earlier_out, dict):
        notes[out] = f"the earlier {out} ({earlier_out.get('bank')} fold {earlier_out.get('fold')})"
    if earlier_cfg is not None:
        notes[config_out] = f"the earlier {config_out}"
    entry = recorded.get(bank, {}).get(str(fold)) if record else None
    if isinstance(entry, dict):
        notes[record] = f"the earlier {bank} fold {fold} entry of {record} (budget {entry.get('budget')})"
    return notes


def register(group: click.Group) -> None:
    """Add ``select`` (HSPR's settings chosen on source agents only: :mod:`hspr.methods.hspr.selection`) to the CLI ``group``."""
    @group.command("select")
    @click.option("--bank", default=None, shell_complete=completer(list(BANKS)),
                  help=f"Bundled bank ({', '.join(BANKS)}; default verified, as for replay and live). With --matrix, a label for your "
                       "matrix (default: its file name; a bundled bank's name is refused).")
    @click.option("--fold", required=True, metavar="K|all",
                  help=f"Target fold 0..{N_FOLDS - 1}: selection runs on the other folds' agents (its sources) only; "
                       "--record it in a table that `hspr replay --config table.json` reads per fold. 'all': on every "
                       "agent of the bank, for `hspr live start --config` (a new agent scored against the whole "
                       "bank); not with --record.")
    @click.option("--matrix", type=ExistingPath(exists=True), default=None,
                  help="Your own response matrix instead of a bundled bank; folds from the standard rule "
                       "(sorted agents, default_rng(0) shuffle, 4 parts).")
    @click.option("--missing-as-zero/--no-missing-as-zero", default=True, show_default=True,
                  help="Count missing cells as unresolved (leaderboard convention); otherwise leave them out of "
                       "each held-out fit (a held-out agent's own missing cells still count as unresolved).")
    @click.option("--budget", "--fraction", "fraction", default=0.10, show_default=True, type=float,
                  help="Budget of the validation replays as a fraction f of the bank's tasks (B = round(f N)), as "
                       "replay's --budget (one value, below 1); --fraction is its older name. The shipped table and "
                       "replay --config auto use 0.10 at every run budget (a 0.05 selection measured worse at 5 %).")
    @click.option("--workers", "-j", default=1, show_default=True, type=int, callback=check_workers,
                  help="joblib workers over held-out source agents (-1: all cores).")
    @backend_options
    @click.option("--fast", is_flag=True,
                  help="Shorthand for --eval-nodes 2048 --eval-draws 32768: about 4x faster (a Verified fold in "
                       "1.5 minutes with -j 2 on 2 cores). It chose the shipped setting on every Verified and Full "
                       "fold, and on Lite and Pro fold 0 a neighbouring one 0.01 / 0.05 pp worse on the sources.")
    @click.option("--eval-nodes", type=int, default=None,
                  help="Importance nodes inside selection only (default: the spec's 8,192). The chosen config "
                       "keeps 8,192.")
    @click.option("--eval-draws", type=int, default=None,
                  help="Predictive draws inside selection only (default: the spec's 131,072).")
    @click.option("--out", type=click.Path(dir_okay=False), default=None,
                  help="Needed unless --config-out or --record is given. JSON with the chosen config (HSPRConfig "
                       "fields under 'config'), every stage table (rows' mae and max_err on the 0-1 scale; "
                       "source_mae_pp in pp), 'fraction' (the budget fraction), the source digest, 'seconds' (the "
                       "selection itself), 'wall_seconds' (the whole command, loading and writing included) and "
                       "'default' (the default configuration's row, scored on "
                       "the same held-out agents: mae, max_err, agent_err on the 0-1 scale, source_mae_pp). Every "
                       "stage's rows hold each candidate's source MAE: the margin over the runner-up is read there.")
    @click.option("--config-out", type=click.Path(dir_okay=False), default=None,
                  help="Also write the chosen config alone (HSPRConfig fields), for `hspr live start --config` or "
                       "`hspr replay --targets new_agents.csv --config` (agents outside the bank). Not to replay the "
                       "bank's folds: `replay --config` applies one file to all 4, three of whose rows chose it (use "
                       "--record for a per-fold table).")
    @click.option("--record", type=click.Path(dir_okay=False), default=None,
                  help="Merge the result into a table of selections {bank: {fold: ...}} (e.g. table.json, one "
                       "entry per fold), which `hspr replay --config table.json` reads.")
    @click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
    def select_cmd(bank, fold, matrix, missing_as_zero, fraction, workers, backend, scheduler, fast, eval_nodes, eval_draws,
                   out, config_out, record, quiet):
        """Choose HSPR's configuration for one target fold from its source agents only.

        Staged leave-one-source-agent-out validation (HSPR_SPEC section 6; paper section 3.6):
        stage 1, 44 global settings (rank, gamma, acquisition, lambda) with the group-free model
        on deterministic query paths; stage 2, kappa x acquisition x posterior-mean lambda on
        query seeds 0-2; stage 3, median lambda on those paths. Each held-out source row is
        removed before the source fit. Target rows are never read.

        Runtime grows with the bank and the importance nodes: with -j 2 on 2 cores, about 6 minutes
        for a Verified fold at the defaults, 1.5 minutes with --fast; a Full fold 2-3 minutes with
        --fast.
        """
        from ..methods.hspr.selection import FAST_EVAL_DRAWS, FAST_EVAL_NODES, select_config

        if fast:
            if eval_nodes is not None or eval_draws is not None:
                raise click.BadParameter(f"--fast sets --eval-nodes {FAST_EVAL_NODES} and --eval-draws "
                                         f"{FAST_EVAL_DRAWS}; give either --fast or those two options", param_hint="--fast")
            eval_nodes, eval_draws = FAST_EVAL_NODES, FAST_EVAL_DRAWS

        console = make_console(stderr=True)
        check_backend(backend, scheduler)
        workers = local_workers(workers, scheduler, console)
        if bank is not None and not bank.strip():  # a hostile trial: '' ran a whole Verified selection
            raise click.BadParameter(f"an empty label; give a bundled bank ({', '.join(BANKS)}) or, with --matrix, a "
                                     "label of your own, or leave --bank out", param_hint="--bank")
        if not (out or config_out or record):  # a user wanting only the config had to write the whole result too
            raise click.BadParameter("give --out (the whole result as JSON), --config-out (the chosen configuration "
                                     "alone, for `hspr live start --config`) or --record (a table of selections)",
                                     param_hint="--out")
        check_output_file(out, "--out")
        check_output_file(config_out, "--config-out")
        check_output_file(record, "--record")  # '' named the current folder as an input (a hostile trial)
        refuse_overwriting_inputs(out, "--out", {"--matrix": matrix, "--record": record})
        refuse_overwriting_inputs(config_out, "--config-out", {"--matrix": matrix, "--record": record, "--out": out})
        recorded = check_record_table(Path(record)) if record else {}
        for path, option in ((out, "--out"), (config_out, "--config-out"), (record, "--record")):
            check_output_suffix(path, option, "json")
        # what the outputs will replace, said when they are written (a hostile trial: select replaced them silently)
        earlier_out = refuse_replacing_other_json(out, "--out", is_select_result, "an `hspr select` result")
        earlier_cfg = refuse_replacing_other_json(config_out, "--config-out", is_config_doc,
                                                  "a configuration file (HSPRConfig fields)")
        if not 0 < fraction <= 1:  # 1 (every task) is refused below, with why (a hostile trial: '(0, 1]', then 'below 1')
            raise click.BadParameter(f"{fraction}: a fraction of the tasks, above 0 and below 1 (e.g. 0.10)",
                                     param_hint="--budget")
        if matrix:
            check_matrix_label(bank, matrix)
            bank = readable_name(bank or Path(matrix).stem)
        bank = bank or "verified"
        fold = _parse_fold(fold)
        if fold is None and record:  # a --record table holds one entry per target fold, for replay --config
            raise click.BadParameter("--fold all chooses on every agent, for `hspr live start --config`; a --record "
                                     "table holds per-fold choices for `hspr replay --config`: give --config-out "
                                     "instead, or a fold number", param_hint="--fold")
        if record and (bank == "generated_by" or isinstance(recorded.get(bank), str)):  # a hostile trial: a traceback
            from_file = matrix and click.get_current_context().get_parameter_source("bank") == ParameterSource.DEFAULT
            raise click.BadParameter(f"{bank!r} is a note of the --record table, not a label: give another --bank "
                                     "label" + (" (or rename the matrix file)" if from_file else ""), param_hint="--bank")
        try:
            if matrix:
                with reading(matrix):
                    mat = load_matrix(matrix)
                try:
                    folds = None if fold is None else make_folds(mat.agents)
                except HsprError as exc:  # a hostile trial: the advice left out select's own way
                    if mat.n_agents < 3 or record:  # --fold all needs 3 agents, and is not for a --record table
                        raise HsprError(f"{matrix}: {exc}") from None
                    raise HsprError(f"{matrix}: {exc}; or select on every agent with --fold all (for `hspr live start --config`)") \
                        from None
            else:
                mat = load_bank(bank, missing_as_zero=False)
                folds = None if fold is None else bank_folds(bank)
            had_missing = mat.missing is not None
            if had_missing and missing_as_zero:
                mat = mat.fill_missing(0)
            src = mat if fold is None else fold_sources(mat, folds, fold)
            matrix_digest = mat.digest()  # recorded with the entry: one matrix per label in a --record table
            if record:
                flag = ("with" if missing_as_zero else "without") + " --no-missing-as-zero" if had_missing else None
                check_record_matrix(Path(record), recorded, bank, matrix_digest, flag)
                check_record_sources(Path(record), recorded, bank, fold, src.digest())
            if budget_from_fraction(fraction, src.n_tasks) < 1:  # the hint replay gives (a hostile trial)
                from ..replay import one_task_fraction

                raise click.BadParameter(f"{fraction} of {src.n_tasks} tasks rounds to 0 tasks; give a fraction of at least "
                                         f"1/{src.n_tasks}: {one_task_fraction(src.n_tasks)} gives one task",
                                         param_hint="--budget")
            if budget_from_fraction(fraction, src.n_tasks) >= src.n_tasks:  # every setting scores 0: grid order decides
                raise click.BadParameter(f"{fraction:g} runs all {src.n_tasks} tasks: every setting recovers each held-out "
                                         "score exactly, so nothing would be selected; give the fraction you will run "
                                         "at, below 1 (e.g. 0.10)", param_hint="--budget")
            from ..methods.hspr.selection import eval_overrides

            try:
                eval_overrides(eval_nodes, eval_draws)
            except ValueError as exc:
                raise click.BadParameter(str(exc), param_hint="--eval-nodes / --eval-draws") from None
        except (DataError, ValueError, KeyError) as exc:
            print_error(console, exc)
            sys.exit(2)
        which = "the bank has" if fold is None else f"fold {fold} leaves"
        if src.n_agents < 3:  # a trial: the note on a noisy choice came first, then this refusal
            print_error(console, f"{matrix or bank}: {which} {src.n_agents} source agent(s); a selection holds out one "
                                 "source agent at a time and needs at least 3")
            sys.exit(2)
        if src.n_agents < FEW_SOURCES:  # a trial: 3 sources chose rank 4 without a word
            console.print(f"note: {which} {src.n_agents} source agents, and each held-out fit keeps "
                          f"{src.n_agents - 1}: the source MAE of each setting rests on {src.n_agents} replays, so the "
                          "choice is noisy: replay it against the default configuration (plain hspr) before "
                          "relying on it", highlight=False, soft_wrap=True)

        t0 = time.perf_counter()
        with progress_bar(console, disable=quiet) as prog:
            described = f"select {bank} {'all agents' if fold is None else f'fold {fold}'} ({src.n_agents} sources"
            task = prog.add_task(f"{described})", total=4 * src.n_agents)

            def tick(done, total):
                # a resumed selection counts the units still to run (its first line says how many were kept)
                left = ")" if total == 4 * src.n_agents else "; the units left after a resume)"
                prog.update(task, completed=done, total=total, description=described + left)

            try:
                with connected(backend, scheduler, workers) as joblib_backend:
                    res = select_config(src, fraction=fraction, n_jobs=workers, progress=tick, eval_nodes=eval_nodes,
                                        eval_draws=eval_draws, backend=joblib_backend, compare_default=True)
            except (DataError, BudgetError, ValueError) as exc:
                print_error(console, exc)
                sys.exit(2)
        command = command_line()
        payload = {"bank": bank, "fold": "all" if fold is None else fold, "fraction": fraction, "command": command,
                   "hspr_version": __import__("hspr").__version__, "environment": environment(),
                   "wall_seconds": time.perf_counter() - t0,
                   **res.to_dict()}
        replaced = replaced_notes(out, earlier_out, config_out, earlier_cfg, record, recorded, bank, fold)
        write_outputs(payload, res, out, config_out, record, lambda: record_entry(Path(record), bank, fold, res, command,
                                                                                 matrix_digest), replaced)
        # a hostile trial: `--config-out /dev/stdout > cfg.json` got the stage table after the config
        print_table(table_console(console, out, config_out, record), stage_summary(res), keep=1)
        console.print(f"chosen: {res.config}  source MAE {100 * res.source_mae:.3f} pp; "
                      f"{res.seconds:.0f} s" + (f"; wrote {' and '.join(f for f in (out, config_out) if f)}"
                                                if out or config_out else "")
                      + (f"; recorded {bank} fold {fold} in {record}" if record else ""),
                      soft_wrap=True, highlight=False)  # one line a script can read, whatever the width
        if replaced:
            console.print(f"note: this replaced {'; '.join(replaced.values())}", soft_wrap=True, highlight=False)
        versus = versus_default_lines(res)
        for line in versus:
            console.print(line, soft_wrap=True, highlight=False)
        if config_out and fold is not None:  # a review: replaying it on every fold scores agents it was chosen on
            console.print(f"note: {config_out} was chosen on fold {fold}'s sources, which hold the other folds' "
                          f"targets: `hspr replay --config {config_out}` on every fold would score agents it was "
                          "chosen on; for a per-fold choice replay with --config auto (or --methods hspr_auto)")
