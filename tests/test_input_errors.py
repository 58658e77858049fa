"""Bad input gets exit 2 and a message naming the cause, never a traceback; files we write are
standard JSON (issue 13: defects 2, 3 and 4 of the hostile trial)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from hspr import journal
from hspr.cli import main
from hspr.report.stats import summarize

from .conftest import simulate_matrix


def write_csv(m, path):
    pd.DataFrame(m.values, index=pd.Index(m.agents, name="agent"), columns=m.tasks).to_csv(path)
    return path


# -- valid JSON (issue 13, defect 3) --------------------------------------------------------------
def test_results_json_has_no_nan_or_infinity_when_truths_tie(tmp_path):
    import warnings

    from hspr.fileio import write_json_durable

    rows = [dict(bank="b", method="m", seed=0, target=f"t{t}", budget=5, budget_fraction=0.1, estimate=0.4 + 0.1 * t,
                 truth=0.5) for t in range(3)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning either
        s = summarize(pd.DataFrame(rows))
    assert np.isnan(s["kendall_tau_b"].item())
    path = tmp_path / "r.json"
    write_json_durable({"summary": s.to_dict(orient="records"), "x": [float("inf"), np.float64("nan"), 1.5]}, path)
    text = path.read_text()
    assert "NaN" not in text and "Infinity" not in text
    d = json.loads(text)
    assert d["summary"][0]["kendall_tau_b"] is None and d["x"] == [None, None, 1.5]


def test_live_refuses_infinite_stop_width(tmp_path):
    from hspr.live import LiveSession, LiveSessionError

    m = simulate_matrix(12, 30, seed=6)[0]
    path = tmp_path / "m.csv"
    write_csv(m, path)
    for bad in (float("inf"), float("nan"), 0.0, -1.0):
        with pytest.raises(LiveSessionError, match="finite number > 0"):
            LiveSession.create(tmp_path / "s.hspr", 5, matrix=path, method="uniform", stop_width=bad)
    live = LiveSession.create(tmp_path / "s.hspr", 5, matrix=path, method="uniform", stop_width=5.0)
    with pytest.raises(LiveSessionError, match="finite number > 0"):
        live.set_stop_width(float("inf"))
    assert LiveSession.open(live.path).stop_width == 5.0
    res = CliRunner().invoke(main, ["live", "status", "--session", str(live.path), "--stop-width", "inf"])
    assert res.exit_code == 2 and "finite number > 0" in res.output and "Traceback" not in res.output


# -- issue 13, defect 2 (the inputs a hostile trial found): exit 2, a message, no traceback --------
def test_bad_session_inputs_exit_2_without_traceback(tmp_path):
    m = simulate_matrix(12, 30, seed=6)[0]
    csv = write_csv(m, tmp_path / "m.csv")
    (tmp_path / "afile").write_text("x")
    good = tmp_path / "s.hspr"
    start = ["live", "start", "--matrix", str(csv), "--budget", "5", "--method", "uniform"]
    assert CliRunner().invoke(main, [*start, "--session", str(good)]).exit_code == 0
    doc = journal.read(good).doc
    edits = {"no-digest": lambda d: d["bank"].pop("digest"), "bank-string": lambda d: d.update(bank="verified"),
             "events-null": lambda d: d.update(events=None), "stop-abc": lambda d: d.update(stop_width_pp="abc")}
    cases = [([*start, "--session", ""], "session path is empty"),
             ([*start, "--session", str(tmp_path / "afile" / "s.hspr")], "is a file, not a folder"),
             (["live", "status", "--session", ""], "session path is empty")]
    for name, edit in edits.items():
        d = json.loads(json.dumps(doc))
        edit(d)
        (tmp_path / f"{name}.hspr").write_text(json.dumps({**d, "version": 1}))  # one-object form
        field = {"no-digest": "'bank'", "bank-string": "'bank'", "events-null": "'events'",
                 "stop-abc": "the session's stop width must be"}[name]
        cases.append((["live", "status", "--session", str(tmp_path / f"{name}.hspr")], field))
    pd.DataFrame(m.values[:1], index=pd.Index(m.agents[:1], name="agent"), columns=m.tasks).to_csv(tmp_path / "one.csv")
    pd.DataFrame(m.values[1:3], index=pd.Index(m.agents[1:3], name="agent"), columns=m.tasks).to_csv(tmp_path / "t.csv")
    cases.append((["replay", "--matrix", str(tmp_path / "one.csv"), "--targets", str(tmp_path / "t.csv"), "--methods",
                   "hspr", "-q", "--out", str(tmp_path / "o.json")], "at least 2 source agents"))
    one_start = ["live", "start", "--matrix", str(tmp_path / "one.csv"), "--budget", "5", "--session",
                 str(tmp_path / "one.hspr")]
    cases.append(([*one_start, "--method", "hspr"],
                  f"{tmp_path / 'one.csv'} (1 agents x 30 tasks): HSPR needs at least 2 source agents, got 1"))
    cases.append((one_start, "hspr_robust needs at least 4 source agents for its leave-cluster-out calibration, got 1; "
                             "with 2 or 3, use method hspr (the paper's HSPR; no calibration)"))
    cases.append(([*one_start, "--method", "hspr_auto"], "hspr_auto selects its settings on the source agents and "
                                                          "needs at least 3, got 1"))
    locked = tmp_path / "locked.hspr"
    assert CliRunner().invoke(main, [*start, "--session", str(locked)]).exit_code == 0
    (tmp_path / "locked.hspr.lock").unlink(missing_ok=True)
    (tmp_path / "locked.hspr.lock").mkdir()
    cases.append((["live", "next", "--session", str(locked)], "locked.hspr.lock is a folder"))
    for args, match in cases:
        res = CliRunner().invoke(main, args)
        text = " ".join(res.output.split())
        assert res.exit_code == 2, (args, res.output, res.exception)
        assert match in text, (args, text)
        assert "Traceback" not in res.output



def test_hand_edited_events_and_settings_files_are_named(tmp_path):
    m = simulate_matrix(12, 30, seed=6)[0]
    csv = write_csv(m, tmp_path / "m.csv")
    good = tmp_path / "s.hspr"
    start = ["live", "start", "--matrix", str(csv), "--budget", "5", "--method", "uniform"]
    assert CliRunner().invoke(main, [*start, "--session", str(good)]).exit_code == 0
    task = json.loads(CliRunner().invoke(main, ["live", "next", "--session", str(good), "--json"]).output)["tasks"][0]
    doc = journal.read(good).doc
    for name, ev, match in [("half", {"type": "tell", "task": task, "outcome": 0.7}, "outcome 0.7"),
                            ("notask", {"type": "error", "reason": "x"}, "names no task")]:
        d = json.loads(json.dumps(doc))
        d["events"].append(ev)
        (tmp_path / f"{name}.hspr").write_text(json.dumps({**d, "version": 1}))  # one-object form
        res = CliRunner().invoke(main, ["live", "status", "--session", str(tmp_path / f"{name}.hspr")])
        assert res.exit_code == 2 and match in res.output and "Traceback" not in res.output
    (tmp_path / "latin.hspr").write_bytes(good.read_bytes().replace(b'"uniform"', '"uniformé"'.encode("latin-1")))
    (tmp_path / "bad.json").write_text("{bad")
    (tmp_path / "latin.json").write_bytes('{"x": "é"}'.encode("latin-1"))
    cases = [(["live", "status", "--session", str(tmp_path / "latin.hspr")], "not UTF-8"),
             ([*start, "--seed", "-1", "--session", str(tmp_path / "a.hspr")], "--seed"),
             ([*start, "--config", str(tmp_path / "bad.json"), "--session", str(tmp_path / "b.hspr")],
              "--config " + str(tmp_path / "bad.json") + ": invalid JSON at line 1, column 2"),
             ([*start, "--config", str(tmp_path / "latin.json"), "--session", str(tmp_path / "c.hspr")],
              "--config " + str(tmp_path / "latin.json") + ": not UTF-8 text"),
             (["replay", "--bank", "pro", "--methods", "hspr", "--config", str(tmp_path / "bad.json"), "-q"],
              "--config " + str(tmp_path / "bad.json") + ": invalid JSON")]
    for args, match in cases:
        res = CliRunner().invoke(main, args)
        assert res.exit_code == 2, (args, res.output)
        assert match in " ".join(res.output.split()), (args, res.output)
        assert "Traceback" not in res.output


# -- issue 13: one outcome vocabulary, one root error ------------------------------------------
def test_one_outcome_vocabulary_everywhere(tmp_path):
    from hspr.data.io import read_wide_csv
    from hspr.harness import read_outcome_csv
    from hspr.live import parse_outcome
    from hspr.outcomes import RESOLVED, UNRESOLVED

    spellings = [(t, 1) for t in ("1", "1.0", "True", " yes", "PASS", "passed", "resolved")] + \
                [(t, 0) for t in ("0", "0.0", "false", "No", "fail", "FAILED", "unresolved ")]
    assert {t.strip().lower() for t, y in spellings if y} == RESOLVED
    assert {t.strip().lower() for t, y in spellings if not y} == UNRESOLVED
    for i, (text, y) in enumerate(spellings):
        wide = tmp_path / f"m{i}.csv"
        wide.write_text(f"agent,t1\na,{text}\n")
        assert read_wide_csv(wide).values[0, 0] == y, text
        run = tmp_path / f"r{i}.csv"
        run.write_text(f"instance_id,resolved\nt1,{text}\n")
        assert read_outcome_csv(run).outcomes[0].status == ("resolved" if y else "unresolved"), text
        assert parse_outcome(text) == y
    assert parse_outcome(1.0) == 1 and parse_outcome(np.int64(0)) == 0 and parse_outcome(True) == 1
    for bad in ("maybe", "0.7", 2, 0.5):
        with pytest.raises(ValueError, match="resolved/unresolved"):
            parse_outcome(bad)


def test_every_user_error_is_an_hspr_error_and_exits_2(tmp_path):
    from hspr.data.matrix import DataError
    from hspr.errors import HsprError
    from hspr.harness import HarnessFormatError
    from hspr.live import LiveSessionError
    from hspr.report import ReportError
    from hspr.session import BudgetError

    for cls in (DataError, HarnessFormatError, BudgetError, LiveSessionError, ReportError):
        assert issubclass(cls, HsprError) and issubclass(cls, ValueError)
    bad = tmp_path / "bad.csv"
    bad.write_text("agent,t1\na,maybe\n")
    res = CliRunner().invoke(main, ["bank", "validate", str(bad)])
    assert res.exit_code == 2 and "'maybe'" in res.output and "Traceback" not in res.output


def test_targets_that_are_also_source_rows_are_told_apart_by_outcomes(tmp_path):
    """A --targets row equal to a source row (same id, same outcomes) is warned about; a row that
    only shares the id is noted as scored as given."""
    m = simulate_matrix(12, 30, seed=6)[0]
    csv = write_csv(m, tmp_path / "m.csv")
    vals = m.values[[0, 1]].copy()
    vals[1] = 1 - vals[1]  # same id as source row 1, other outcomes
    pd.DataFrame(vals, index=pd.Index(m.agents[:2], name="agent"), columns=m.tasks).to_csv(tmp_path / "t.csv")
    res = CliRunner().invoke(main, ["replay", "--matrix", str(csv), "--targets", str(tmp_path / "t.csv"), "--methods",
                                    "uniform", "--seeds", "0", "-q", "--out", str(tmp_path / "o.json")])
    text = " ".join(res.output.split())
    assert res.exit_code == 0, res.output
    assert f"1 --targets row(s) are also source rows of m, same id and outcomes ({m.agents[0]})" in text
    assert f"1 --targets id(s) also name source rows of m with other outcomes ({m.agents[1]})" in text
    # a hostile trial: a target one run away from its own source row was only noted; its errors are optimistic
    assert "warning: 1 --targets id(s) also name" in text and "so their errors are likely optimistic" in text
    assert "target id(s) also name source rows (" not in text  # the library's shorter warning is not repeated


def test_replay_api_warns_on_targets_that_name_source_rows_and_refuses_overlapping_folds():
    """A library user gets the warning the CLI gives (an API trial: nothing was said), and folds
    that name an agent twice are refused instead of scoring it twice."""
    from hspr.errors import HsprError, InputWarning
    from hspr.methods import get_method
    from hspr.replay import replay

    m = simulate_matrix(12, 30, seed=6)[0]
    methods = {"uniform": get_method("uniform")}
    with pytest.warns(InputWarning, match=rf"1 target id\(s\) also name source rows \({m.agents[3]}\)"):
        runs = replay("m", m, methods, fractions=(0.2,), seeds={"uniform": [0]}, targets=m.rows([3]))
    assert [r["target"] for r in runs] == [m.agents[3]]
    a = m.agents
    with pytest.raises(HsprError, match=rf"agent '{a[0]}' is in fold 0 and fold 1"):
        replay("m", m, methods, fractions=(0.2,), folds=[[a[0], a[1]], [a[2], a[0]]])
    with pytest.raises(HsprError, match=rf"agent '{a[1]}' is twice in fold 0"):
        replay("m", m, methods, fractions=(0.2,), folds=[[a[1], a[1]], [a[2]]])


def test_targets_that_copy_source_rows_under_new_ids_are_warned_about(tmp_path):
    """A new-user trial replayed exact copies of Verified rows under new names as --targets and got
    MAE 0.76 with no word. Copies are named from 50 shared tasks on; other rows are not."""
    m = simulate_matrix(12, 60, seed=6)[0]
    csv = write_csv(m, tmp_path / "m.csv")
    vals = m.values[[3, 7, 2]].copy()
    vals[2, 0] = 1 - vals[2, 0]  # one outcome differs: not a copy
    pd.DataFrame(vals, index=pd.Index(["new_a", "new_b", "new_c"], name="agent"), columns=m.tasks).to_csv(tmp_path / "t.csv")
    res = CliRunner().invoke(main, ["replay", "--matrix", str(csv), "--targets", str(tmp_path / "t.csv"), "--methods",
                                    "uniform", "--seeds", "0", "-q", "--out", str(tmp_path / "o.json")])
    text = " ".join(res.output.split())
    assert res.exit_code == 0, res.output
    assert (f"2 --targets row(s) have exactly the outcomes of a source row of m under another id "
            f"(new_a = {m.agents[3]}, new_b = {m.agents[7]})") in text
    assert "new_c =" not in text
    # a targets file's runs carry a label of their own, never pooled with the bank's folds in a report
    assert {r["bank"] for r in json.loads((tmp_path / "o.json").read_text())["runs"]} == {"m/targets:t"}


@pytest.mark.parametrize("label, expect", [(None, "m"), ("mine", "mine"), ("my run 2", "my run 2"), ("verified", None),
                                           ("Verified", None), ("all", None), ("macro", None), ("Pooled", None),
                                           ("verified/bash-only", None), ("x[stop 5 pp]", None), ("a|b", None),
                                           ("  ", None)])
def test_replay_matrix_label_follows_select_rule(tmp_path, label, expect):
    """--bank with --matrix is a label; a bundled bank's name (any case) is refused, as by select (a
    new-user trial saw 'verified' ignored silently and 'Verified' used as the label)."""
    m = simulate_matrix(12, 30, seed=6)[0]
    csv = write_csv(m, tmp_path / "m.csv")
    extra = [] if label is None else ["--bank", label]
    res = CliRunner().invoke(main, ["replay", "--matrix", str(csv), *extra, "--methods", "uniform", "--seeds", "0",
                                    "-q", "--out", str(tmp_path / "o.json")])
    if expect is None:
        assert res.exit_code == 2 and f"the label {label!r} " in res.output, res.output
        assert not (tmp_path / "o.json").exists()
    else:
        assert res.exit_code == 0, res.output
        assert {r["bank"] for r in json.loads((tmp_path / "o.json").read_text())["runs"]} == {expect}


def write_fast_config(folder):
    path = folder / "fast.json"
    path.write_text(json.dumps({"n_nodes": 512, "n_draws": 4096}))
    return path


def test_a_matrix_file_named_like_a_bundled_bank_needs_a_label(tmp_path):
    """The file name was the unchecked fallback label (a review: --matrix vv/verified.csv ran as
    'verified'); live start applies the same rule."""
    m = simulate_matrix(12, 30, seed=6)[0]
    csv = write_csv(m, tmp_path / "Verified.csv")
    res = CliRunner().invoke(main, ["replay", "--matrix", str(csv), "--methods", "uniform", "--seeds", "0", "-q",
                                    "--out", str(tmp_path / "o.json")])
    assert res.exit_code == 2 and "results are labelled by its file name 'Verified', which is reserved" in \
        " ".join(res.output.split())
    res = CliRunner().invoke(main, ["replay", "--matrix", str(csv), "--bank", "mine", "--methods", "uniform",
                                    "--seeds", "0", "-q", "--out", str(tmp_path / "o.json")])
    assert res.exit_code == 0, res.output
    res = CliRunner().invoke(main, ["live", "start", "--matrix", str(csv), "--bank", "LITE", "--budget", "4",
                                    "--session", str(tmp_path / "s.hspr")])
    assert res.exit_code == 2 and "the label 'LITE' names a bundled bank" in " ".join(res.output.split())
    assert not (tmp_path / "s.hspr").exists()
    # a session is never pooled in a report: other labels stay free there, an empty one is the file name
    for label, name in (("team/x [v2]", "team/x [v2]"), ("", "Verified")):
        res = CliRunner().invoke(main, ["live", "start", "--matrix", str(csv), "--bank", label, "--budget", "4",
                                        "--config", str(write_fast_config(tmp_path)), "--session",
                                        str(tmp_path / f"s{len(label)}.hspr"), "--json"])
        assert res.exit_code == 0, res.output
        assert journal.read(tmp_path / f"s{len(label)}.hspr").doc["bank"]["name"] == name
    # a --targets file names its runs' label: characters that break a report are refused
    pd.DataFrame(m.values[:2], index=pd.Index(["n1", "n2"], name="agent"), columns=m.tasks).to_csv(tmp_path / "x|y.csv")
    res = CliRunner().invoke(main, ["replay", "--matrix", str(csv), "--bank", "mine", "--targets", str(tmp_path / "x|y.csv"),
                                    "--methods", "uniform", "--seeds", "0", "-q", "--out", str(tmp_path / "o2.json")])
    assert res.exit_code == 2 and "the runs are labelled by its file name 'x|y', which holds '|'" in \
        " ".join(res.output.split())


def test_refused_options_still_answer_in_json(tmp_path):
    """An option click itself refuses (before the command runs) gives the JSON error object with --json."""
    res = CliRunner().invoke(main, ["live", "relink", "--matrix", str(tmp_path / "nope.csv"), "--session",
                                    str(tmp_path / "s.hspr"), "--json"])
    assert res.exit_code == 2
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert out["ok"] is False and "--matrix" in out["error"] and "does not exist" in out["error"]
    res = CliRunner().invoke(main, ["live", "status", "--stop-width", "abc"])
    assert res.exit_code == 2 and not res.stdout.strip()  # without --json: click's usage text only, on stderr


def test_json_error_objects_carry_the_warnings_said_before_them(tmp_path, monkeypatch):
    """A --json error object had only the message; a warning that explains it (a file read oddly) reached
    stderr alone. It now lists the warnings said before the error, in order; none, no key."""
    m, _ = simulate_matrix(6, 20, seed=1)
    csv = tmp_path / "m.csv"
    write_csv(m, csv)
    csv.write_text("task_id" + csv.read_text()[len("agent"):])  # read as agents, with a warning
    said = f"{csv}: the first column is named 'task_id', but a wide CSV has one row per agent"
    runs = {"live": ["live", "start", "--matrix", str(csv), "--budget", "500", "--session", str(tmp_path / "s.hspr")],
            "bank": ["bank", "merge", str(csv), str(tmp_path / "other.csv"), "--out", str(tmp_path / "b.csv")]}
    other = m.values.copy()
    other[0, 0] = 1 - other[0, 0]  # a cell the two banks give differently: merge refuses it
    pd.DataFrame(other, index=pd.Index(m.agents, name="agent"), columns=m.tasks).to_csv(tmp_path / "other.csv")
    for name, args in runs.items():
        res = CliRunner().invoke(main, [*args, "--json"])
        assert res.exit_code in (1, 2), (name, res.output)
        out = json.loads(res.stdout)
        assert out["ok"] is False and len(out["warnings"]) == 1 and out["warnings"][0].startswith(said), (name, out)
        assert res.stderr.index("warning: ") < res.stderr.index("error: ")  # stderr says the same, in that order
    res = CliRunner().invoke(main, [*runs["live"][:3], str(tmp_path / "plain.csv"), *runs["live"][4:], "--json"])
    assert "warnings" not in json.loads(res.stdout)  # a missing file: refused, no warning
    # a re-trial: the more-agents-than-tasks warning of `bank build` was echoed, not said, so not listed; and an
    # OSError reaching the group (a name too long) printed no object at all
    wide = tmp_path / "wide.csv"
    pd.DataFrame(m.values[:, :4], index=pd.Index(m.agents, name="agent"), columns=m.tasks[:4]).to_csv(wide)
    with monkeypatch.context() as mp:  # the write fails after the warning (a full disk as the file is moved in)
        mp.setattr("os.replace", lambda *a, **k: (_ for _ in ()).throw(OSError(28, "No space left on device")))
        res = CliRunner().invoke(main, ["bank", "build", str(wide), "--out", str(tmp_path / "b.csv"), "--json"])
    out = json.loads(res.stdout)
    assert res.exit_code == 2 and out["ok"] is False and "more agents (6) than tasks (4)" in out["warnings"][0], out
    assert "No space left on device" in out["error"]
    res = CliRunner().invoke(main, ["bank", "agents", "a" * 300, "--json"])
    out = json.loads(res.stdout)  # one object
    assert res.exit_code == 2 and out["ok"] is False and "File name too long" in out["error"], out


@pytest.mark.filterwarnings("ignore::hspr.errors.UnaskedTaskWarning")  # it tells tasks not asked, on purpose
def test_api_input_errors_are_hspr_errors_and_keep_their_builtin_kind():
    """A script trial: an unknown task or method raised a bare KeyError and a bad outcome a bare
    ValueError, against errors.py's rule that every user error is an HsprError."""
    from hspr.errors import HsprError, UnknownIdError
    from hspr.methods import get_method

    m, _ = simulate_matrix(10, 20, seed=0, rank=1)
    s = get_method("uniform").fit(m).start(3, 0)
    with pytest.raises(UnknownIdError, match=r"^task id 'nope' is not in the bank \(20 tasks\)$") as exc:
        s.tell("nope", 1)
    assert isinstance(exc.value, KeyError) and isinstance(exc.value, HsprError)
    with pytest.raises(HsprError, match="must be 0 or 1"):
        s.tell(m.tasks[0], 2)
    s.tell(m.tasks[0], 1)
    with pytest.raises(HsprError, match="already recorded"):
        s.tell(m.tasks[0], 1)
    with pytest.raises(UnknownIdError, match="unknown method 'nosuch'"):
        get_method("nosuch")


def test_rows_that_resolved_none_of_the_tasks_are_not_called_copies():
    """On a hard task subset several agents resolve nothing; their identical all-zero rows were
    warned about as copies of a source agent (a hostile trial)."""
    from hspr.cli.replay_cmd import _copied_rows
    from hspr.data.matrix import ResponseMatrix

    tasks = [f"t{j:02d}" for j in range(60)]  # COPY_MIN_TASKS: 50
    rng = np.random.default_rng(0)
    src = rng.integers(0, 2, (5, 60))
    src[0] = 0
    bank = ResponseMatrix([f"s{i}" for i in range(5)], tasks, src)
    targets = ResponseMatrix(["zero", "copy", "own"], tasks, np.vstack([np.zeros(60, int), src[3], 1 - src[3]]))
    assert _copied_rows(targets, bank) == [("copy", "s3")]


def test_a_config_file_name_with_label_characters_is_refused(tmp_path):
    """It named the runs hspr[config=x|y], which broke the report's markdown table (a hostile trial)."""
    cfg = tmp_path / "x|y.json"
    cfg.write_text("{}")
    res = CliRunner().invoke(main, ["replay", "--bank", "pro", "--methods", "hspr", "--config", str(cfg), "--seeds", "0",
                                    "--out", str(tmp_path / "r.json")])
    assert res.exit_code == 2 and "file name holds '|'" in res.output and "rename the file" in res.output
    assert not (tmp_path / "r.json").exists()
    # a hostile trial: a replay's results file as --config got a long list of unknown HSPR settings
    (tmp_path / "results.json").write_text('{"runs": [], "summary": []}')
    res = CliRunner().invoke(main, ["replay", "--bank", "pro", "--methods", "hspr", "--config",
                                    str(tmp_path / "results.json"), "--seeds", "0", "--out", str(tmp_path / "r.json")])
    assert res.exit_code == 2 and not (tmp_path / "r.json").exists()
    assert f"--config {tmp_path / 'results.json'} is an `hspr replay` results file, not settings: give a JSON file of " \
        "HSPR settings" in " ".join(res.output.split()) and "unknown" not in res.output
    # its re-trial: `live start --config results.json` still got the list of unknown settings
    res = CliRunner().invoke(main, ["live", "start", "--bank", "pro", "--budget", "3", "--config",
                                    str(tmp_path / "results.json"), "--session", str(tmp_path / "s.hspr")])
    assert res.exit_code == 2 and not (tmp_path / "s.hspr").exists()
    assert f"--config {tmp_path / 'results.json'} is an `hspr replay` results file, not settings" in \
        " ".join(res.output.split()) and "unknown" not in res.output


def test_replay_names_a_targets_folder_and_an_unused_stop_min_tasks(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "fold").mkdir()
    res = CliRunner().invoke(main, ["replay", "--bank", "pro", "--methods", "uniform", "--targets", "fold", "--seeds", "0"])
    assert res.exit_code == 2 and "fold is a folder; --targets takes one matrix file" in res.output
    res = CliRunner().invoke(main, ["replay", "--bank", "pro", "--methods", "uniform", "--seeds", "0", "--stop-min-tasks",
                                    "3", "--out", "r.json", "-q"])
    # refused before any work (it ran the full-budget replay before: a new-user trial)
    assert res.exit_code == 2 and "--stop-min-tasks is used only with --stop-width: add --stop-width" in res.output
    assert not (tmp_path / "r.json").exists()


# -- hints for a bank name given as a path, and for a bank name misspelt -------------------------
def test_a_bundled_bank_name_given_as_a_path_gets_the_load_bank_hint_and_another_name_does_not(tmp_path, monkeypatch):
    from hspr.data import DataError, load_bank, load_matrix

    monkeypatch.chdir(tmp_path)  # no file named 'lite' here
    with pytest.raises(DataError, match=r"lite: no such file or directory \(a bundled bank is loaded by name: "
                                        r"hspr.data.load_bank\('lite'\)"):
        load_matrix("lite")
    with pytest.raises(DataError, match=r"my_results: no such file or directory$"):
        load_matrix("my_results")  # extensionless, but no bank of that name: no hint (a review)
    with pytest.raises(DataError, match=r"unknown bank 'Lite' \(did you mean 'lite'\?\); choose one of lite, verified, .* "
                                        r"give your own matrix \(--matrix PATH"):
        load_bank("Lite")


def test_item_prior_scale_outside_its_range_is_refused_at_both_ends():
    from hspr.methods.hspr import HSPRConfig

    for bad in (1e-7, 2e6):
        with pytest.raises(ValueError, match=r"item_prior_scale must be in \[1e-06, 1e\+06\]"):
            HSPRConfig(item_prior_scale=bad)
    assert HSPRConfig(item_prior_scale=1e-6).item_prior_scale == 1e-6


def test_replay_config_takes_a_table_of_selections_and_sets_hspr_robust(tmp_path, monkeypatch):
    """A trial: `--config table.json` (hspr select --record) was refused as 'unknown HSPR settings',
    and `--config cfg.json` was refused for hspr_robust although `live start --config` applies it.
    A table giving every fold rank 1 must replay exactly as a config file of rank 1."""
    from hspr.data.folds import fold_indices, make_folds
    from hspr.data.io import load_matrix

    m = simulate_matrix(16, 40, seed=3)[0]
    csv = write_csv(m, tmp_path / "m.csv")
    cfg = {"rank": 1, "n_nodes": 512, "n_draws": 4096}
    (tmp_path / "cfg.json").write_text(json.dumps(cfg))
    mat = load_matrix(csv)
    folds = make_folds(mat.agents)
    table = {"generated_by": "test", "m": {str(k): {"config": cfg, "source_digest": mat.drop_rows(idx).canonical().digest()}
                                           for k, idx in enumerate(fold_indices(mat.agents, folds))}}
    (tmp_path / "tab.json").write_text(json.dumps(table))

    def runs(config, methods):
        out = tmp_path / f"{Path(config).stem}_{methods}.json"
        res = CliRunner().invoke(main, ["replay", "--matrix", str(csv), "--methods", methods, "--config", config,
                                        "--seeds", "0", "--budget", "0.25", "-q", "--out", str(out)])
        assert res.exit_code == 0, res.output
        return {(r["method"], r["target"]): r["estimate"] for r in json.loads(out.read_text())["runs"]}

    by_table = runs(str(tmp_path / "tab.json"), "hspr")
    by_file = runs(str(tmp_path / "cfg.json"), "hspr")
    assert {k[0] for k in by_table} == {"hspr_auto[table=tab]"} and {k[0] for k in by_file} == {"hspr[config=cfg]"}
    assert sorted(by_table.values()) == sorted(by_file.values()) and len(by_table) == 16
    robust = runs(str(tmp_path / "cfg.json"), "hspr_robust")
    assert {k[0] for k in robust} == {"hspr_robust[config=cfg]"} and len(robust) == 16
    # hspr_robust takes the table too (it was refused): each fold's rank-1 entry, run for run as the rank-1 file
    robust_table = runs(str(tmp_path / "tab.json"), "hspr_robust")
    assert {k[0] for k in robust_table} == {"hspr_robust[table=tab]"}
    assert {k[1]: v for k, v in robust_table.items()} == {k[1]: v for k, v in robust.items()}
    res = CliRunner().invoke(main, ["live", "start", "--matrix", str(csv), "--config", str(tmp_path / "tab.json"),
                                    "--budget", "4", "--session", str(tmp_path / "s.hspr")])
    assert res.exit_code == 2 and "is a table of selections" in res.output, res.output
    # a new-user trial: a fold missing from the table ran a selection at the default settings inside the replay
    del table["m"]["3"]
    (tmp_path / "tab3.json").write_text(json.dumps(table))
    res = CliRunner().invoke(main, ["replay", "--matrix", str(csv), "--methods", "hspr", "--config",
                                    str(tmp_path / "tab3.json"), "--seeds", "0", "-q", "--out", str(tmp_path / "o.json")])
    text = " ".join(res.output.split())
    assert res.exit_code == 2 and "has no selection for the sources of fold(s) 3 of m" in text, res.output
    suggested = f"hspr select --matrix {csv} --fold 3 --fast --out sel_3.json --record {tmp_path / 'tab3.json'}"
    assert suggested in text
    assert not (tmp_path / "o.json").exists()
    # a hostile trial: a damaged entry failed only when its fold came up, and a note beside the banks hid the table
    bad = json.loads((tmp_path / "tab.json").read_text())
    bad["note"] = "my selections"
    bad["m"]["2"]["config"]["rank"] = 99
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    res = CliRunner().invoke(main, ["replay", "--matrix", str(csv), "--methods", "hspr", "--config",
                                    str(tmp_path / "bad.json"), "--seeds", "0", "-q", "--out", str(tmp_path / "o.json")])
    assert res.exit_code == 2 and "bad.json: entry m/2: rank must be" in " ".join(res.output.split()), res.output
    twin = json.loads((tmp_path / "tab.json").read_text())
    twin["mine"] = {"0": dict(twin["m"]["0"], config=dict(cfg, rank=2))}  # the same sources selected twice
    (tmp_path / "twin.json").write_text(json.dumps(twin))
    res = CliRunner().invoke(main, ["replay", "--matrix", str(csv), "--methods", "hspr", "--config",
                                    str(tmp_path / "twin.json"), "--seeds", "0", "-q", "--out", str(tmp_path / "o.json")])
    assert res.exit_code == 2 and "entries m/0 and mine/0 are selections on the same sources" in \
        " ".join(res.output.split()), res.output
    # hspr_robust's own form {config, shift}, which live start takes, is taken by replay too
    (tmp_path / "rob.json").write_text(json.dumps({"config": cfg, "shift": {"max_held_out": 8}}))
    assert {k[0] for k in runs(str(tmp_path / "rob.json"), "hspr_robust")} == {"hspr_robust[config=rob]"}
    for method in ("hspr_auto", "uniform"):  # named its bank labels as unknown settings
        res = CliRunner().invoke(main, ["live", "start", "--matrix", str(csv), "--method", method, "--config",
                                        str(tmp_path / "tab.json"), "--budget", "4", "--session", str(tmp_path / "u.hspr")])
        text = " ".join(res.output.split())  # the message named no file
        assert res.exit_code == 2 and f"--config {tmp_path / 'tab.json'} is a table of selections" in text, res.output


    def refused(*args):
        res = CliRunner().invoke(main, ["replay", "--matrix", str(csv), "--seeds", "0", "-q", "--out",
                                        str(tmp_path / "o.json"), *args])
        assert res.exit_code == 2 and not (tmp_path / "o.json").exists(), res.output
        return " ".join(res.output.split())

    # a hostile trial of hspr_robust's table: hspr_auto beside it ignored the table and selected on every fold
    assert "which hspr_auto does not read" in refused("--methods", "hspr_robust,hspr_auto", "--config",
                                                      str(tmp_path / "tab.json"))
    # the missing-fold message offered --config auto, which hspr_robust refuses
    text = refused("--methods", "hspr_robust", "--config", str(tmp_path / "tab3.json"))
    assert "fold(s) 3 of m" in text and "--config auto" not in text
    # a select --fold K cannot record the sources of --targets, a --split or --tasks: it was suggested
    text = refused("--methods", "hspr", "--config", str(tmp_path / "tab.json"), "--targets", str(csv))
    assert "these sources (the whole matrix with --targets" in text and "hspr select --matrix" not in text
    assert "with --config auto (hspr selects" in text
    # a --tasks subset is folds of a smaller matrix: the missing fold is named, recorded on a matrix of those tasks
    (tmp_path / "all.txt").write_text("\n".join(mat.tasks))
    text = refused("--methods", "hspr_robust", "--config", str(tmp_path / "tab3.json"), "--tasks", str(tmp_path / "all.txt"))
    assert "fold(s) 3 of m[40 tasks]" in text and "--matrix <a matrix of the --tasks tasks only" in text
    # --config was named as an option without hspr although hspr_robust takes it
    text = refused("--methods", "hspr_robust", "--config", str(tmp_path / "tab.json"), "--decision", "mean")
    assert "--decision set(s) HSPR options" in text and "--config set" not in text
    # a new-user trial ran the suggested select command as printed: 'Missing option --out'
    monkeypatch.chdir(tmp_path)  # (not click's isolated_filesystem: deprecated in click 8.5, a 3.13 trial)
    res = CliRunner().invoke(main, [*suggested.split()[1:], "-q"])
    assert res.exit_code == 0 and (tmp_path / "sel_3.json").is_file(), res.output
    assert {k[0] for k in runs(str(tmp_path / "tab3.json"), "hspr_robust")} == {"hspr_robust[table=tab3]"}


def test_a_table_recorded_with_missing_cells_kept_says_so_when_asked_the_other_way(tmp_path):
    """A hostile trial: selections recorded with --no-missing-as-zero, then a replay without it, were
    'no selection for the sources' and the suggested `select` was refused as 'another matrix' with
    no word of the missing cells; and the label generated_by (the table's note) gave a traceback
    after the whole selection."""
    from hspr.data.folds import fold_indices, make_folds
    from hspr.data.io import load_matrix

    sim = simulate_matrix(16, 40, seed=4)[0]
    m = pd.DataFrame(sim.values.astype(float), index=pd.Index(sim.agents, name="agent"), columns=sim.tasks)
    m.iloc[1, 3] = m.iloc[5, 7] = np.nan
    csv = tmp_path / "mm.csv"
    m.to_csv(csv)
    mat = load_matrix(csv)  # missing cells kept
    assert mat.n_missing == 2
    cfg = {"rank": 1, "n_nodes": 512, "n_draws": 4096}
    table = {"generated_by": "test", "mm": {str(k): {"config": cfg, "source_digest": mat.drop_rows(idx).canonical().digest(),
                                                     "matrix_digest": mat.digest()}
                                            for k, idx in enumerate(fold_indices(mat.agents, make_folds(mat.agents)))}}
    tab = tmp_path / "tab.json"
    tab.write_text(json.dumps(table))
    runner = CliRunner()

    def replay(*extra):
        return runner.invoke(main, ["replay", "--matrix", str(csv), "--methods", "hspr", "--config", str(tab), "--seeds", "0",
                                    "--budget", "0.25", "-q", "--out", str(tmp_path / "o.json"), *extra])
    res = replay()
    text = " ".join(res.output.split())
    assert res.exit_code == 2 and "has no selection for the sources of fold(s) 0, 1, 2, 3" in text
    assert "of mm as replayed here, with its 2 missing cell(s) counted as unresolved; its entries are for the missing " \
           "cells read the other way: replay with --no-missing-as-zero" in text
    assert replay("--no-missing-as-zero").exit_code == 0  # the table's entries are found
    # a re-trial: the hint came for a fold never recorded, where the other reading fails too
    full = dict(table["mm"])
    del table["mm"]["3"]
    tab.write_text(json.dumps(table))
    for extra in ((), ("--no-missing-as-zero",)):
        text = " ".join(replay(*extra).output.split())
        assert "has no selection for the sources of fold(s)" in text and "read the other way" not in text, text
    assert "fold(s) 3 of mm/missing-kept" in text and "--fold 3 --no-missing-as-zero --fast" in text
    table["mm"] = full
    tab.write_text(json.dumps(table))
    res = runner.invoke(main, ["select", "--matrix", str(csv), "--fold", "0", "--fast", "--out", str(tmp_path / "s.json"),
                               "--record", str(tab)])
    text = " ".join(res.output.split())
    assert res.exit_code == 2 and "selected on another matrix than this one (or on this one with its missing cells read " \
                                  "otherwise: were they recorded with --no-missing-as-zero?)" in text, text
    res = runner.invoke(main, ["select", "--matrix", str(csv), "--bank", "generated_by", "--fold", "0", "--fast",
                               "--out", str(tmp_path / "s.json"), "--record", str(tmp_path / "new.json")])
    assert res.exit_code == 2 and "'generated_by' is a note of the --record table, not a label" in res.output
    assert not (tmp_path / "s.json").exists() and not (tmp_path / "new.json").exists()  # refused before any work
    # a hostile trial: a note of the user's own ("note": text), which replay's reader takes, was refused by select
    from hspr.cli.select import check_record_table

    noted = tmp_path / "noted.json"
    noted.write_text(json.dumps({**table, "note": "hello"}))
    assert check_record_table(noted)["note"] == "hello"
    res = runner.invoke(main, ["select", "--matrix", str(csv), "--bank", "note", "--fold", "0", "--fast",
                               "--out", str(tmp_path / "s.json"), "--record", str(noted)])
    assert res.exit_code == 2 and "'note' is a note of the --record table, not a label" in res.output


def test_the_settings_digest_of_a_table_replay_is_that_of_the_entries_it_used(tmp_path):
    """A re-trial: a table that gained an entry for another matrix (or a new 'seconds' / 'command' text) gave its
    replays another settings digest, and `hspr report` refused two replays of one table as two experiments; and a
    config's {"kappa": 1} and {"kappa": 1.0} did the same."""
    from hspr import report
    from hspr.data.folds import fold_indices, make_folds
    from hspr.data.io import load_matrix

    m = simulate_matrix(16, 40, seed=3)[0]
    csv = write_csv(m, tmp_path / "m.csv")
    mat = load_matrix(csv)
    cfg = {"rank": 1, "n_nodes": 512, "n_draws": 4096}
    table = {"generated_by": "test", "m": {str(k): {"config": cfg, "source_digest": mat.drop_rows(idx).canonical().digest(),
                                                    "seconds": 1.0, "command": "hspr select ..."}
                                           for k, idx in enumerate(fold_indices(mat.agents, make_folds(mat.agents)))}}
    tab = tmp_path / "tab.json"

    def replay(seed, config=tab, methods="hspr,hspr_robust"):
        out = tmp_path / f"r{seed}.json"
        res = CliRunner().invoke(main, ["replay", "--matrix", str(csv), "--methods", methods, "--config", str(config),
                                        "--seeds", str(seed), "--budget", "0.25", "-q", "--out", str(out)])
        assert res.exit_code == 0, res.output
        return out
    tab.write_text(json.dumps(table))
    first = replay(0)
    table["other"] = {"0": {"config": {"rank": 3}, "source_digest": "f" * 64}}
    table["m"]["0"].update(seconds=99.0, command="hspr select --fast ...")
    tab.write_text(json.dumps(table))
    second = replay(1)
    runs = report.read_results([first, second])  # one experiment: the entries used are the same
    assert set(runs["method"]) == {"hspr_auto[table=tab]", "hspr_robust[table=tab]"} and set(runs["seed"]) == {0, 1}
    table["m"]["0"]["config"] = {**cfg, "rank": 2}  # an entry used changed: another experiment
    tab.write_text(json.dumps(table))
    with pytest.raises(report.ReportError, match="share their label but were made with different settings"):
        report.read_results([first, replay(2)])
    (tmp_path / "c1").mkdir()
    (tmp_path / "c2").mkdir()
    (tmp_path / "c1" / "cfg.json").write_text(json.dumps({**cfg, "kappa": 1}))
    (tmp_path / "c2" / "cfg.json").write_text(json.dumps({**cfg, "kappa": 1.0}))
    a, b = replay(3, tmp_path / "c1" / "cfg.json", "hspr"), replay(4, tmp_path / "c2" / "cfg.json", "hspr")
    assert set(report.read_results([a, b])["seed"]) == {3, 4}  # 1 and 1.0: one setting
    # a whole number written with a point (pandas' to_json) for an int setting was refused: "rank must be an integer"
    (tmp_path / "c2" / "cfg.json").write_text(json.dumps({"rank": 1.0, "n_nodes": 512.0, "n_draws": 4096.0, "kappa": 1}))
    c = replay(5, tmp_path / "c2" / "cfg.json", "hspr")
    assert set(report.read_results([a, c])["seed"]) == {3, 5}  # 512 and 512.0: one setting


def test_a_whole_number_with_a_point_is_read_as_the_int_setting_and_a_fraction_is_not():
    from hspr.methods.hspr import HSPRConfig
    from hspr.methods.hspr.robust import ShiftSettings
    from hspr.params import build_dataclass

    cfg = HSPRConfig.from_dict({"rank": 3.0, "refresh_every": 4.0})
    assert cfg == HSPRConfig(rank=3, refresh_every=4) and type(cfg.rank) is int
    for bad in (2.5, float("nan"), 2.0**60):
        with pytest.raises(ValueError, match="rank must be an integer"):
            HSPRConfig.from_dict({"rank": bad})
    ints = [f.name for f in __import__("dataclasses").fields(ShiftSettings) if f.type in ("int", int)]
    assert ints, "ShiftSettings has int fields"
    built = build_dataclass(ShiftSettings, {ints[0]: float(getattr(ShiftSettings(), ints[0]))}, "shift")
    assert built == ShiftSettings() and type(getattr(built, ints[0])) is int


def test_replay_checks_a_targets_file_against_every_bank_before_any_work(tmp_path, monkeypatch):
    """A hostile trial: `--bank all --targets` ran Lite to the end, then failed on Verified's tasks and wrote
    nothing; an empty --targets (an unset shell variable) ran the folds instead; a targets file lacking tasks of
    --tasks was said to lack them from "the bank"."""
    from hspr.data import load_bank

    monkeypatch.chdir(tmp_path)
    lite = load_bank("lite")
    write_csv(lite.rows(np.arange(2)), tmp_path / "lite_tg.csv")
    res = CliRunner().invoke(main, ["replay", "--bank", "all", "--targets", "lite_tg.csv", "--methods", "uniform",
                                    "--seeds", "0", "--out", "r.json", "-q"])
    assert res.exit_code == 2 and "(with --bank all the file is scored against 4 banks; its tasks are those of lite: " \
        "give --bank lite)" in " ".join(res.output.split())
    assert not (tmp_path / "r.json").exists()
    res = CliRunner().invoke(main, ["replay", "--bank", "pro", "--targets", "", "--methods", "uniform", "--out", "r.json"])
    assert res.exit_code == 2 and "--targets: an empty path" in " ".join(res.output.split()).replace("'", "")
    assert not (tmp_path / "r.json").exists()
    m = simulate_matrix(10, 30, seed=3)[0]
    write_csv(m, tmp_path / "bank.csv")
    write_csv(m.rows(np.arange(2)).select_tasks(m.tasks[2:]), tmp_path / "tg.csv")  # lacks task0000, task0001
    (tmp_path / "tasks.txt").write_text("task0000\ntask0001\ntask0005\n")
    res = CliRunner().invoke(main, ["replay", "--matrix", "bank.csv", "--targets", "tg.csv", "--tasks", "tasks.txt",
                                    "--methods", "uniform", "--out", "r.json"])
    assert res.exit_code == 2 and "the --targets rows (tg.csv) have no column for 2 task(s) of the subset, e.g. " \
        "'task0000', 'task0001'" in " ".join(res.output.split())


def test_a_packed_file_is_named_as_such(tmp_path):
    """A hostile trial: a gzip file given as a bank was told "not UTF-8 text ... after '\\x1f'; save the file as UTF-8"."""
    import gzip
    import zipfile

    from hspr.data.io import load_matrix
    from hspr.data.matrix import DataError

    body = b"agent,t1,t2\na,1,0\nb,0,1\n"
    (tmp_path / "g.csv").write_bytes(gzip.compress(body))
    with zipfile.ZipFile(tmp_path / "z.csv", "w") as z:
        z.writestr("bank.csv", body)
    (tmp_path / "p.parquet").write_bytes(b"PAR1\x15\x04\x15\x00" + body)  # a hostile trial: "a NUL character" (valid UTF-8)
    for name, said in (("g.csv", "not text but gzip-compressed data: decompress it first (gunzip)"),
                       ("z.csv", "not text but a zip archive (an .xlsx workbook is one): extract the file"),
                       ("p.parquet", "not text but a Parquet file: convert it to CSV")):
        with pytest.raises(DataError, match=f"{name}: {said}".replace("(", r"\(").replace(")", r"\)")):
            load_matrix(tmp_path / name)
        res = CliRunner().invoke(main, ["bank", "validate", str(tmp_path / name)])
        assert res.exit_code == 2 and said in " ".join(res.output.split())
    (tmp_path / "plain.csv").write_bytes(body)
    assert load_matrix(tmp_path / "plain.csv").n_agents == 2
    # a hostile trial: a loop of symbolic links was told "no such file or folder"
    (tmp_path / "loop1").symlink_to(tmp_path / "loop2")
    (tmp_path / "loop2").symlink_to(tmp_path / "loop1")
    for cmd in (["bank", "validate"], ["replay", "--methods", "uniform", "--matrix"], ["live", "start", "--budget", "5",
                                                                                   "--matrix"], ["report"]):
        res = CliRunner().invoke(main, [*cmd, str(tmp_path / "loop1")])  # its re-trial: --matrix said "does not exist"
        assert res.exit_code == 2 and "which leads back to itself (a loop of links)" in " ".join(res.output.split()), cmd


def test_long_values_are_shortened_and_whole_counts_with_zero_decimals_are_read(tmp_path):
    """A hostile trial: a 100,000-digit cell came back whole in the error (a 100 KB line), and a trials CSV refused
    the counts '2.0' / '5.0' a spreadsheet writes, which a wide CSV's '1.0' is not."""
    from hspr.data.io import load_matrix
    from hspr.data.matrix import DataError

    (tmp_path / "huge.csv").write_text("agent,t1,t2\na,1," + "9" * 100_000 + "\nb,0,1\n")
    with pytest.raises(DataError) as exc:
        load_matrix(tmp_path / "huge.csv")
    assert len(str(exc.value)) < 400 and "non-binary value '999" in str(exc.value)
    (tmp_path / "big.csv").write_text("agent,task_id,successes,trials\na,t1," + "7" * 5000 + ",5\n")
    with pytest.raises(DataError) as exc:
        load_matrix(tmp_path / "big.csv")
    assert len(str(exc.value)) < 400 and "is too large" in str(exc.value)
    (tmp_path / "a.csv").write_text("agent,task_id,successes,trials\na,t1,2.0,5.0\na,t2,5,5\nb,t1,0,5\nb,t2,3.00,5\n")
    (tmp_path / "b.csv").write_text("agent,task_id,successes,trials\na,t1,2,5\na,t2,5,5\nb,t1,0,5\nb,t2,3,5\n")
    assert load_matrix(tmp_path / "a.csv").digest() == load_matrix(tmp_path / "b.csv").digest()
    (tmp_path / "na.csv").write_text("agent,t1,t2\na,1,#N/A\nb,0,1\n")  # a spreadsheet's no-value marker: no run
    assert load_matrix(tmp_path / "na.csv").n_missing == 1


def test_a_folder_whose_matrix_csv_has_a_header_points_to_the_file(tmp_path):
    """A docs audit: `hspr bank validate` on a bundled bank's folder asked for a metadata.json, which a
    wide CSV with a header does not need; a header-less matrix.csv still gets that request."""
    from hspr.data import DataError, load_matrix

    (tmp_path / "matrix.csv").write_text("agent,t1,t2\na,1,0\nb,0,1\n")
    with pytest.raises(DataError, match=r"matrix.csv has a header row, so it is a wide CSV.*pass the file itself: "
                                        + re.escape(str(tmp_path / "matrix.csv"))):
        load_matrix(tmp_path)
    assert load_matrix(tmp_path / "matrix.csv").values.tolist() == [[1, 0], [0, 1]]
    (tmp_path / "matrix.csv").write_text("1,0\n0,1\n")
    with pytest.raises(DataError, match="matrix.csv has no metadata.json next to it; add metadata.json"):
        load_matrix(tmp_path)


def test_one_agent_s_harness_output_given_as_a_bank_points_to_live_ingest(tmp_path):
    """A harness trial: `hspr bank build` of a run summary was told about JSON Lines, and of a SWE-bench log
    folder got 'unknown folder layout' alone; both are one agent's run, which a live session ingests."""
    from hspr.data import DataError, load_matrix

    summary = tmp_path / "m.run1.json"
    summary.write_text(json.dumps({"schema_version": 2, "resolved_ids": ["a"], "unresolved_ids": ["b"],
                                   "error_ids": []}, indent=2))
    with pytest.raises(DataError, match=r"one agent's run \(a harness run summary, .*\), not a bank of agents: "
                                        r"`hspr live ingest FILE --session S` reads it"):
        load_matrix(summary)
    logs = tmp_path / "logs" / "run_evaluation" / "r1" / "m" / "a"
    logs.mkdir(parents=True)
    (logs / "report.json").write_text(json.dumps({"a": {"resolved": True}}))
    with pytest.raises(DataError, match=r"unknown folder layout; .*; it holds one agent's harness output \(SWE-bench "
                                        r"logs or a tb run\), which `hspr live ingest FOLDER --session S` reads"):
        load_matrix(tmp_path / "logs")
