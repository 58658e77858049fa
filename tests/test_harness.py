"""Parsers of SWE-bench harness outputs (hspr.harness), on small files modelled on the real ones."""

from __future__ import annotations

import json
import re
import shutil

import pytest

from hspr.harness import (
    EMPTY_PATCH,
    ERROR,
    RESOLVED,
    UNRESOLVED,
    HarnessFormatError,
    detect_form,
    read_outcomes,
    read_trials_outcomes,
)


def instance_report(iid, resolved, patch_is_none=False, applied=True, infra=None):
    """A report.json as swebench.harness.grading.get_eval_report writes it (include_tests_status)."""
    rep = {
        "patch_is_None": patch_is_none,
        "patch_exists": not patch_is_none,
        "patch_successfully_applied": applied and not patch_is_none,
        "resolved": resolved,
    }
    if infra is not None:
        rep["infra_failure"] = True
        rep["infra_failure_reason"] = infra
    if applied and not patch_is_none:
        rep["tests_status"] = {
            "FAIL_TO_PASS": {"success": ["test_a"] if resolved else [], "failure": [] if resolved else ["test_a"]},
            "PASS_TO_PASS": {"success": ["test_b"], "failure": []},
            "FAIL_TO_FAIL": {"success": [], "failure": []},
            "PASS_TO_FAIL": {"success": [], "failure": []},
        }
    return {iid: rep}


def write_instance(root, iid, report=None, log=None, model="my__model", run="run1"):
    d = root / "logs" / "run_evaluation" / run / model / iid
    d.mkdir(parents=True)
    if report is not None:
        (d / "report.json").write_text(report if isinstance(report, str) else json.dumps(report, indent=4))
    (d / "run_instance.log").write_text(log or "2025-01-01 Container started\n>>>>> Applied Patch:\n")
    return d


def run_summary(**lists):
    """A run summary as swebench.harness.reporting.make_run_report writes it (schema_version 2)."""
    keys = ("completed_ids", "incomplete_ids", "empty_patch_ids", "submitted_ids", "resolved_ids", "unresolved_ids",
            "error_ids")
    ids = {k: sorted(lists.get(k, [])) for k in keys}
    rep = {
        "total_instances": 10,
        "submitted_instances": len(ids["submitted_ids"]),
        "completed_instances": len(ids["completed_ids"]),
        "resolved_instances": len(ids["resolved_ids"]),
        "unresolved_instances": len(ids["unresolved_ids"]),
        "empty_patch_instances": len(ids["empty_patch_ids"]),
        "error_instances": len(ids["error_ids"]),
        **ids,
        "schema_version": 2,
    }
    rep.update({k: v for k, v in lists.items() if k not in keys})
    return rep


def status_map(read):
    return {o.instance_id: o.status for o in read.outcomes}


# ---------------------------------------------------------------------- per-instance report.json
def test_instance_report_statuses(tmp_path):
    cases = {
        "a__a-1": (instance_report("a__a-1", True), RESOLVED, 1),
        "a__a-2": (instance_report("a__a-2", False), UNRESOLVED, 0),
        "a__a-3": (instance_report("a__a-3", False, patch_is_none=True), EMPTY_PATCH, 0),
        "a__a-4": (instance_report("a__a-4", False, applied=False), UNRESOLVED, 0),
        "a__a-5": (instance_report("a__a-5", False, applied=False, infra="out_of_memory"), ERROR, None),
    }
    for iid, (rep, status, y) in cases.items():
        p = write_instance(tmp_path, iid, rep) / "report.json"
        assert detect_form(p) == "instance_report"
        read = read_outcomes(p)
        assert read.form == "instance_report"
        [o] = read.outcomes
        assert (o.instance_id, o.status, o.outcome) == (iid, status, y)
        assert o.source == str(p)
    assert "out_of_memory" in read.outcomes[0].detail


def test_empty_instance_report_is_a_harness_error(tmp_path):
    p = write_instance(tmp_path, "x__x-1", "") / "report.json"
    [o] = read_outcomes(p).outcomes
    assert (o.instance_id, o.status) == ("x__x-1", ERROR)


@pytest.mark.parametrize("text, msg", [
    ('{"x__x-1": {"resolved": tru', "invalid JSON"),
    ('{"x__x-1": {"patch_exists": true}}', "no boolean 'resolved'"),
    ('{"x__x-1": {"resolved": "yes"}}', "no boolean 'resolved'"),
    ('{"x__x-1": {"resolved": true, "patch_is_None": "no"}}', "'patch_is_None' must be true/false"),
    ('{"x__x-1": {"resolved": true, "tests_status": []}}', "'tests_status' must be an object"),
    ('[1, 2]', "not a harness output"),
])
def test_malformed_instance_report_refused(tmp_path, text, msg):
    p = tmp_path / "report.json"
    p.write_text(text)
    with pytest.raises(HarnessFormatError, match=msg) as exc:
        read_outcomes(p)
    assert str(p) in str(exc.value)


# ---------------------------------------------------------------------- log folder
def test_log_dir(tmp_path):
    write_instance(tmp_path, "a__a-1", instance_report("a__a-1", True))
    write_instance(tmp_path, "a__a-2", instance_report("a__a-2", False))
    write_instance(tmp_path, "a__a-3", instance_report("a__a-3", False, patch_is_none=True))
    write_instance(tmp_path, "a__a-4", log="Container started\n>>>>> Patch Apply Failed:\nerror: corrupt patch\n")
    write_instance(tmp_path, "a__a-5", log="Container started\nTest timed out after 1800 seconds.\n")
    write_instance(tmp_path, "a__a-6", log="Container started\nError building image\n")
    root = tmp_path / "logs" / "run_evaluation" / "run1"
    assert detect_form(root) == "log_dir"
    read = read_outcomes(root)
    assert status_map(read) == {"a__a-1": RESOLVED, "a__a-2": UNRESOLVED, "a__a-3": EMPTY_PATCH,
                                "a__a-4": UNRESOLVED, "a__a-5": ERROR, "a__a-6": ERROR}
    assert "patch did not apply" in [o for o in read.outcomes if o.instance_id == "a__a-4"][0].detail


def test_log_dir_follows_linked_instance_folders_once(tmp_path):
    """A trial: instance folders linked into the model folder were skipped unseen (6 of 8 outcomes)."""
    write_instance(tmp_path, "a__a-1", instance_report("a__a-1", True))
    elsewhere = write_instance(tmp_path / "store", "a__a-2", instance_report("a__a-2", False))
    model = tmp_path / "logs" / "run_evaluation" / "run1" / "my__model"
    (model / "a__a-2").symlink_to(elsewhere, target_is_directory=True)
    (model / "loop").symlink_to(model, target_is_directory=True)  # a link loop ends
    assert status_map(read_outcomes(model.parent)) == {"a__a-1": RESOLVED, "a__a-2": UNRESOLVED}


def test_log_dir_reruns_and_conflicts(tmp_path):
    write_instance(tmp_path, "a__a-1", log="Error: container died\n", run="run1")
    write_instance(tmp_path, "a__a-1", instance_report("a__a-1", True), run="run2")
    assert status_map(read_outcomes(tmp_path)) == {"a__a-1": RESOLVED}  # the re-run supersedes the error
    write_instance(tmp_path, "a__a-1", instance_report("a__a-1", False), run="run3")
    with pytest.raises(HarnessFormatError, match="conflicting reports"):
        read_outcomes(tmp_path)


def test_log_dir_of_two_models_is_refused_and_a_nested_rerun_is_not(tmp_path):
    """A hostile trial: a run folder holding two models' instance folders was ingested as one agent."""
    write_instance(tmp_path, "a__a-1", instance_report("a__a-1", True), model="modelA")
    write_instance(tmp_path, "a__a-2", instance_report("a__a-2", False), model="modelB")
    run = tmp_path / "logs" / "run_evaluation" / "run1"
    with pytest.raises(HarnessFormatError, match=r"holds the logs of 2 models \(modelA, modelB\); a session records one agent"
                       r".*sibling folders: ingest them one at a time"):
        read_outcomes(run)
    assert status_map(read_outcomes(run / "modelA")) == {"a__a-1": RESOLVED}
    other = tmp_path / "two_runs"  # also across two runs
    write_instance(other, "a__a-1", instance_report("a__a-1", True), model="modelA", run="run1")
    write_instance(other, "a__a-3", instance_report("a__a-3", True), model="modelC", run="run2")
    with pytest.raises(HarnessFormatError, match=r"2 models \(run1/modelA, run2/modelC\)"):
        read_outcomes(other / "logs" / "run_evaluation")
    rerun = run / "modelA" / "rerun" / "a__a-4"  # one model's re-run kept in a subfolder: one agent
    rerun.mkdir(parents=True)
    (rerun / "report.json").write_text(json.dumps(instance_report("a__a-4", False)))
    assert status_map(read_outcomes(run / "modelA")) == {"a__a-1": RESOLVED, "a__a-4": UNRESOLVED}
    # a hostile trial: another model's logs at another depth (a backup copy) were merged as one agent
    mixed = tmp_path / "mixed"
    write_instance(mixed, "a__a-1", instance_report("a__a-1", True), model="modelA")
    write_instance(mixed / "backup", "a__a-2", instance_report("a__a-2", False), model="modelB")
    with pytest.raises(HarnessFormatError, match=r"2 models \(backup/logs/run_evaluation/run1/modelB, "
                                                 r"logs/run_evaluation/run1/modelA\)"):
        read_outcomes(mixed)
    write_instance(mixed / "backup", "a__a-2", instance_report("a__a-2", False), model="modelA", run="run9")
    shutil.rmtree(mixed / "backup" / "logs" / "run_evaluation" / "run1")  # the same model elsewhere: one agent
    assert status_map(read_outcomes(mixed)) == {"a__a-1": RESOLVED, "a__a-2": UNRESOLVED}


def test_outcome_csv_of_two_agents_is_refused(tmp_path):
    """A hostile trial: an `agent,instance_id,resolved` CSV of several agents was ingested as one."""
    p = tmp_path / "o.csv"
    p.write_text("agent,instance_id,resolved\nme,T1,1\nother,T2,0\nother,T3,1\n")
    with pytest.raises(HarnessFormatError, match=r"column 'agent' names 2 agents \('me', 'other'\)"):
        read_outcomes(p)
    p.write_text("agent,instance_id,resolved\nme,T1,1\nme,T2,0\n")
    assert status_map(read_outcomes(p)) == {"T1": RESOLVED, "T2": UNRESOLVED}
    p.write_text("model_name,instance_id,resolved\ngpt,T1,1\nclaude,T2,0\n")
    with pytest.raises(HarnessFormatError, match=r"column 'model_name' names 2 agents"):
        read_outcomes(p)
    # a blank cell names no agent; a case-only difference is one agent (a review found both refused)
    p.write_text("model,instance_id,resolved\nGPT-4,T1,1\n,T2,0\ngpt-4,T3,1\n")
    assert status_map(read_outcomes(p)) == {"T1": RESOLVED, "T2": UNRESOLVED, "T3": RESOLVED}
    # a hostile trial: a bank's long trials CSV of two agents was summed into one agent's trial lines
    p.write_text("agent,task_id,resolved\n" + "".join(f"{a},T1,{y}\n" for a in ("me", "you") for y in (1, 0, 1)))
    with pytest.raises(HarnessFormatError, match=r"column 'agent' names 2 agents \('me', 'you'\)"):
        read_trials_outcomes(p, 6)
    p.write_text("model,task_id,successes,trials\nA,T1,2,3\nB,T2,1,3\n")
    with pytest.raises(HarnessFormatError, match=r"column 'model' names 2 agents"):
        read_trials_outcomes(p, 3)
    p.write_text("model,task_id,successes,trials\nA,T1,2,3\na,T2,1,3\n")
    assert [o.outcome for o in read_trials_outcomes(p, 3).outcomes] == [2 / 3, 1 / 3]


def test_an_unknown_id_in_a_trials_csv_is_not_blamed_on_its_trial_count(tmp_path):
    """A hostile trial: an id of another bank with 2 trial lines was refused for its trial count."""
    p = tmp_path / "t.csv"
    p.write_text("task_id,resolved\n" + "".join(f"T1,{y}\n" for y in (1, 0, 1)) + "X9,1\nX9,0\n")
    with pytest.raises(HarnessFormatError, match="task 'X9' has 2 trial line"):
        read_trials_outcomes(p, 3)
    read = read_trials_outcomes(p, 3, known={"T1"}.__contains__)
    assert read.skipped == ["X9"] and [(o.instance_id, o.outcome) for o in read.outcomes] == [("T1", 2 / 3)]
    p.write_text("task_id,resolved\nT1,1\n")  # a known task still has its count checked
    with pytest.raises(HarnessFormatError, match="task 'T1' has 1 trial line"):
        read_trials_outcomes(p, 3, known={"T1"}.__contains__)


def test_empty_folder_refused(tmp_path):
    with pytest.raises(HarnessFormatError, match="no report.json"):
        read_outcomes(tmp_path)


# ---------------------------------------------------------------------- run summary (schema 2)
def test_run_summary(tmp_path):
    rep = run_summary(
        submitted_ids=["r1", "r2", "u1", "e1", "p1", "x_error"],
        completed_ids=["r1", "r2", "u1"],
        resolved_ids=["r1", "r2"], unresolved_ids=["u1"], error_ids=["e1", "x_error"], empty_patch_ids=["p1"],
        incomplete_ids=["i1", "i2", "i3"],
    )
    p = tmp_path / "my__model.run1.json"
    p.write_text(json.dumps(rep, indent=4))
    assert detect_form(p) == "run_summary"
    read = read_outcomes(p)
    assert status_map(read) == {"r1": RESOLVED, "r2": RESOLVED, "u1": UNRESOLVED, "e1": ERROR, "x_error": ERROR,
                                "p1": EMPTY_PATCH}
    assert [o.outcome for o in read.outcomes if o.instance_id in ("e1", "p1")] == [None, 0]
    assert any(n.startswith("3 incomplete id(s) (no prediction submitted) ignored: i1, i2, i3") for n in read.notes)
    assert read.counts() == {RESOLVED: 2, UNRESOLVED: 1, EMPTY_PATCH: 1, ERROR: 2}


def test_a_run_summary_saved_as_txt_is_read_as_json(tmp_path):
    """A trial: it was read as a CSV ('line 1 { is not a header')."""
    p = tmp_path / "summary.txt"
    p.write_text(json.dumps(run_summary(submitted_ids=["a", "b"], completed_ids=["a", "b"], resolved_ids=["a"],
                                        unresolved_ids=["b"]), indent=2))
    assert detect_form(p) == "run_summary"
    assert status_map(read_outcomes(p)) == {"a": RESOLVED, "b": UNRESOLVED}
    q = tmp_path / "ids.txt"
    q.write_text("a,1\nb,0\n")
    assert detect_form(q) == "csv"


def test_run_summary_ids_in_no_outcome_list_are_named(tmp_path):
    """A trial: completed/submitted ids missing from every outcome list were dropped without a word; a
    submitted id that no run graded is no fault (only a completed one is)."""
    p = tmp_path / "partial.json"
    p.write_text(json.dumps(run_summary(submitted_ids=["a", "b", "c", "d", "e"], completed_ids=["a", "b", "c"],
                                        resolved_ids=["a"])))
    read = read_outcomes(p)
    assert status_map(read) == {"a": RESOLVED}
    assert any(n.startswith("2 id(s) in 'completed_ids' are in no outcome list") and n.count(",") >= 1 and "b, c" in n
               for n in read.notes)
    # a harness trial: 'submitted_ids' holds every prediction of the file, also those run_evaluation -i left out
    assert any(n.startswith("2 submitted prediction(s) were not evaluated in this run (not read: d, e)")
               and "may be partial" not in n for n in read.notes)


def test_summaries_where_per_instance_reports_are_expected_are_named(tmp_path):
    """A harness trial: a run summary saved as report.json in a folder was read entry by entry ('entry
    'total_instances' must be an object'), a folder of sb-cli reports got 'no report.json found' alone, and
    SWE-bench 1.x's results.json was refused as listing only the resolved ids, which it does not."""
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "report.json").write_text(json.dumps(run_summary(resolved_ids=["a"], unresolved_ids=["b"])))
    from hspr.data.matrix import DataError

    with pytest.raises(DataError, match=r"out/report.json: a run summary \(id lists such as resolved_ids\), not one "
                                        r"instance's report.json; ingest that file itself"):
        read_outcomes(tmp_path / "out")
    assert status_map(read_outcomes(tmp_path / "out" / "report.json")) == {"a": RESOLVED, "b": UNRESOLVED}
    (tmp_path / "sb").mkdir()
    (tmp_path / "sb" / "swe-bench_lite__test__r1.json").write_text("{}")
    with pytest.raises(DataError, match=r"no report.json or run_instance.log found below this folder; .*; it holds "
                                        r"swe-bench_lite__test__r1.json: if that is a run summary or an sb-cli report, "
                                        r"ingest the file itself"):
        read_outcomes(tmp_path / "sb")
    old = tmp_path / "results.json"
    old.write_text(json.dumps({"no_generation": [], "generated": ["a", "b"], "with_logs": ["a", "b"], "applied": ["a", "b"],
                               "no_apply": [], "resolved": ["a"]}))
    with pytest.raises(DataError, match=r"a SWE-bench 1.x results.json .*\(each id of 'generated': 1 if it is in "
                                        r"'resolved', else 0"):
        read_outcomes(old)
    old.write_text(json.dumps({"no_generation": [], "no_logs": [], "resolved": ["a"]}))
    with pytest.raises(DataError, match=r"only the resolved ids; the tasks that were run are not listed"):
        read_outcomes(old)


def test_a_summary_with_no_outcome_says_so(tmp_path):
    """A run summary whose id lists are all empty was read as 'recorded 0 outcome(s)' with no word."""
    p = tmp_path / "empty.json"
    p.write_text(json.dumps(run_summary(submitted_ids=[], completed_ids=[], resolved_ids=[], unresolved_ids=[],
                                        error_ids=[], empty_patch_ids=[], incomplete_ids=[])))
    read = read_outcomes(p)
    assert read.outcomes == [] and read.notes == [f"{p}: it names no task with an outcome or a harness error "
                                                  "(nothing to record)"]


def test_run_summary_infra_failures(tmp_path):
    """Newer harnesses flag environment faults (advisory); they are harness errors, not agent failures."""
    rep = run_summary(resolved_ids=["r1"], unresolved_ids=["u1", "u2", "u3"], error_ids=["e1"],
                      infra_failure_ids=["u2"], ambiguous_failure_ids=["u3"],
                      failure_reasons={"u2": "display_unavailable", "u3": "tests_timed_out"})
    p = tmp_path / "s.json"
    p.write_text(json.dumps(rep))
    read = read_outcomes(p)
    assert status_map(read) == {"r1": RESOLVED, "u1": UNRESOLVED, "u2": ERROR, "u3": UNRESOLVED, "e1": ERROR}
    assert "display_unavailable" in [o for o in read.outcomes if o.instance_id == "u2"][0].detail
    assert any("ambiguous" in n for n in read.notes)


@pytest.mark.parametrize("change, msg", [
    ({"schema_version": 3}, "schema_version 3"),
    ({"resolved_ids": "r1"}, "'resolved_ids' must be a list"),
    ({"resolved_ids": ["r1", 7]}, r"'resolved_ids'\[1\]"),
    ({"resolved_ids": ["r1", "r1"]}, "more than once"),
    ({"unresolved_ids": ["r1"], "unresolved_instances": 1}, "both 'resolved_ids' and 'unresolved_ids'"),
    ({"resolved_instances": 5}, "'resolved_instances' is 5"),
    ({"infra_failure_ids": ["zz"]}, "in no outcome list"),
])
def test_malformed_run_summary_refused(tmp_path, change, msg):
    rep = run_summary(resolved_ids=["r1"], unresolved_ids=["u1"], error_ids=[])
    rep.update(change)
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(rep))
    with pytest.raises(HarnessFormatError, match=msg) as exc:
        read_outcomes(p)
    assert str(p) in str(exc.value)


def test_run_summary_without_id_lists_refused(tmp_path):
    p = tmp_path / "s.json"
    p.write_text(json.dumps({"schema_version": 2, "resolved_instances": 3, "total_instances": 10}))
    with pytest.raises(HarnessFormatError, match="resolved_ids, unresolved_ids, error_ids"):
        read_outcomes(p)


# ---------------------------------------------------------------------- sb-cli report
def sb_cli_report(**lists):
    rep = {
        "total_instances": 500, "submitted_instances": 6, "completed_instances": 4, "resolved_instances": 2,
        "unresolved_instances": 2, "empty_patch_instances": 0, "error_instances": 1, "pending_instances": 1,
        "failed_instances": 1,
        "resolved_ids": ["r1", "r2"], "unresolved_ids": ["u1", "u2"], "error_ids": ["e1"],
        "completed_ids": ["r1", "r2", "u1", "u2"], "submitted_ids": ["r1", "r2", "u1", "u2", "e1", "q1"],
        "schema_version": 2,
    }
    rep.update(lists)
    return rep


def test_sb_cli_report(tmp_path):
    p = tmp_path / "swe-bench_verified__test__run1.json"
    p.write_text(json.dumps(sb_cli_report(pending_ids=["q1"], failed_ids=["f1"]), indent=4))
    assert detect_form(p) == "sb_cli"
    read = read_outcomes(p)
    assert status_map(read) == {"r1": RESOLVED, "r2": RESOLVED, "u1": UNRESOLVED, "u2": UNRESOLVED, "e1": ERROR,
                                "f1": ERROR}
    assert any("pending" in n and "q1" in n for n in read.notes)
    assert not any("schema_version" in n for n in read.notes)  # sb-cli reports have none (a note on each, once)


def test_sb_cli_counts_only_refused(tmp_path):
    counts = {k: v for k, v in sb_cli_report().items() if not k.endswith("_ids")}
    p = tmp_path / "swe-bench_verified__test__run1.json"
    p.write_text(json.dumps(counts))
    with pytest.raises(HarnessFormatError, match="counts only"):
        read_outcomes(p)


def test_leaderboard_results_json_refused(tmp_path):
    p = tmp_path / "results.json"
    p.write_text(json.dumps({"resolved": ["a"], "no_generation": ["b"], "no_logs": []}))
    with pytest.raises(HarnessFormatError, match="experiments results.json"):
        read_outcomes(p)


# ---------------------------------------------------------------------- CSV
def test_csv_forms(tmp_path):
    p = tmp_path / "out.csv"
    p.write_text("instance_id,resolved,notes\na__a-1,1,x\na__a-2,false,\na__a-3,resolved,\na__a-1,1,dup ok\n")
    read = read_outcomes(p)
    assert read.form == "csv"
    assert [(o.instance_id, o.outcome) for o in read.outcomes] == [("a__a-1", 1), ("a__a-2", 0), ("a__a-3", 1)]
    q = tmp_path / "noheader.txt"
    q.write_text("a__a-1,0\na__a-2,unresolved\n")
    assert [(o.instance_id, o.outcome) for o in read_outcomes(q).outcomes] == [("a__a-1", 0), ("a__a-2", 0)]
    # a re-trial: a spreadsheet's trailing separator on the header alone was refused as ragged
    p.write_text("instance_id,resolved,\na__a-1,1\na__a-2,0,\n")
    assert [(o.instance_id, o.outcome) for o in read_outcomes(p).outcomes] == [("a__a-1", 1), ("a__a-2", 0)]
    p.write_text("instance_id,resolved,\na__a-1\n")
    with pytest.raises(HarnessFormatError, match=r"line 2 has 1 field\(s\); expected 3 as in the header \(2 named\)"):
        read_outcomes(p)


def test_csv_error_column_makes_a_line_a_harness_error(tmp_path):
    """A trial: 'id,False,True' under 'instance_id,resolved,error' was counted as a graded failure."""
    p = tmp_path / "out.csv"
    p.write_text("instance_id,resolved,error\na__a-1,False,True\na__a-2,False,False\na__a-3,True,\n")
    read = read_outcomes(p)
    assert status_map(read) == {"a__a-1": ERROR, "a__a-2": UNRESOLVED, "a__a-3": RESOLVED}
    assert [o.outcome for o in read.outcomes] == [None, 0, 1]
    assert "column 'error' marks a harness error" in read.outcomes[0].detail
    # a live-loop trial: a re-run appended after the errored line made the whole file refused
    p.write_text("instance_id,resolved,error\na__a-1,False,True\na__a-2,1,\na__a-1,True,False\na__a-2,0,yes\n")
    read = read_outcomes(p)
    assert status_map(read) == {"a__a-1": RESOLVED, "a__a-2": RESOLVED}
    assert [(o.instance_id, o.detail) for o in read.outcomes] == [("a__a-1", "csv line 4"), ("a__a-2", "csv line 3")]
    p.write_text("instance_id,resolved,error\na__a-1,,true\na__a-1,1,\n")  # an errored run has no outcome to give
    assert status_map(read_outcomes(p)) == {"a__a-1": RESOLVED}
    p.write_text("instance_id,resolved,error\na__a-1,,\n")  # without the error mark an empty outcome is refused
    with pytest.raises(HarnessFormatError, match="line 2: outcome '' for 'a__a-1'") as exc:
        read_outcomes(p)
    assert "error column" not in str(exc.value)  # the file has one
    # a new-user trial: 'ID,error' without an error column was refused with no word of how to give a harness error;
    # the way the message gives is read as one
    p.write_text("instance_id,resolved\na__a-1,error\n")
    with pytest.raises(HarnessFormatError, match=r"'error' for 'a__a-1' is not one of .*; a task the harness failed to run "
                                                 r"\(a harness error\) goes in an error column, header "
                                                 r"instance_id,resolved,error and line a__a-1,,<the error>"):
        read_outcomes(p)
    p.write_text("instance_id,resolved,error\na__a-1,,error\n")
    assert status_map(read_outcomes(p)) == {"a__a-1": ERROR}
    p.write_text("a__a-1,Timeout\na__a-2,1\n")  # its re-trial: header-less, the hint was missing
    with pytest.raises(HarnessFormatError, match=r"line 1 a__a-1,Timeout is not a header .*; a task the harness failed "
                                                 r"to run \(a harness error\) goes in an error column"):
        read_outcomes(p)
    p.write_text("task_id,resolved\nsolana-data,error\n")  # and on a bank of repeated trials
    with pytest.raises(HarnessFormatError, match=r"'error' for 'solana-data' is not one of .*; a task the harness "
                                                 r"failed to run"):
        read_outcomes(p, trials=5)


def test_csv_error_column_holding_the_message_is_a_harness_error(tmp_path):
    """A hostile trial: an error column holding the harness's message ('Timeout after 1800s') read as no
    error, and the run was recorded as the agent's failure; only false and no-value cells mean no error."""
    p = tmp_path / "out.csv"
    p.write_text("instance_id,resolved,error\na__a-1,false,Timeout after 1800s\na__a-2,0,DockerError: pull failed\n"
                 "a__a-3,true,\na__a-4,0,None\na__a-5,1,nan\na__a-6,0,no\na__a-7,0,0\na__a-8,1,failed\na__a-9,1,OK\n"
                 "a__b-1,0, - \n")
    read = read_outcomes(p)
    assert [(o.instance_id, o.outcome) for o in read.outcomes] == [
        ("a__a-1", None), ("a__a-2", None), ("a__a-3", 1), ("a__a-4", 0), ("a__a-5", 1), ("a__a-6", 0), ("a__a-7", 0),
        ("a__a-8", None), ("a__a-9", 1), ("a__b-1", 0)]  # a re-trial: 'failed' there meant no error
    assert read.outcomes[0].detail == "csv line 2: column 'error' marks a harness error ('Timeout after 1800s')"
    assert status_map(read)["a__a-2"] == ERROR
    # a re-trial: an error column under another common name was ignored, and its run scored
    for name in ("error_message", "error_msg", "errors", "exception", "Exception_Info", "error_type", "Harness Error"):
        p.write_text(f"instance_id,resolved,{name}\na__a-1,0,Timeout after 1800s\na__a-2,1,\n")
        assert [o.outcome for o in read_outcomes(p).outcomes] == [None, 1], name
    for name in ("terror", "errorless", "stderr_lines"):  # not an error column: the line is graded
        p.write_text(f"instance_id,resolved,{name}\na__a-1,0,x\n")
        assert [o.outcome for o in read_outcomes(p).outcomes] == [0], name
    # a third re-trial: camelCase and plural names were not read; '[]' in an 'errors' column marked an error; and a
    # column named as the opposite ('no_error': true is a clean run) was read the wrong way round
    for name in ("errorType", "errorMessage", "hasError", "exceptions", "error.type"):
        p.write_text(f"instance_id,resolved,{name}\na__a-1,0,AgentTimeoutError\na__a-2,1,[]\n")
        assert [o.outcome for o in read_outcomes(p).outcomes] == [None, 1], name
    for name in ("no_error", "error_free", "without_errors", "resolved_without_error", "NoError"):
        p.write_text(f"instance_id,resolved,{name}\na__a-1,1,true\na__a-2,0,false\na__a-3,0,\na__a-4,1,Timeout\n")
        assert [o.outcome for o in read_outcomes(p).outcomes] == [1, None, 0, None], name
    # its second re-trial: with two error columns only one was read; and an errored line whose resolved cell is no
    # outcome ('N/A') was refused whole
    p.write_text("instance_id,resolved,exception,error\na__a-1,1,Timeout,0\na__a-2,1,,1\na__a-3,N/A,,Timeout\n"
                 "a__a-4,1,-,\n")
    read = read_outcomes(p)
    assert [o.outcome for o in read.outcomes] == [None, None, None, 1]
    assert read.outcomes[0].detail == "csv line 2: column 'exception' marks a harness error ('Timeout')"
    assert read.outcomes[1].detail == "csv line 3: column 'error' marks a harness error"


@pytest.mark.parametrize("text, msg", [
    ("instance_id,resolved\na__a-1,maybe\n", "line 2: outcome 'maybe'"),
    ("instance_id,outcome\na__a-1,1\n", "no 'resolved' column"),
    ("instance_id,resolved\na__a-1,1\na__a-1,0\n", "line 3: 'a__a-1' listed again"),
    ("instance_id,resolved\na__a-1\n", "line 2 has 1 field"),
    ("hello world\n", "not a header"),
    ("", "empty"),
])
def test_malformed_csv_refused(tmp_path, text, msg):
    p = tmp_path / "bad.csv"
    p.write_text(text)
    with pytest.raises(HarnessFormatError, match=msg) as exc:
        read_outcomes(p)
    assert str(p) in str(exc.value)


def test_missing_path(tmp_path):
    with pytest.raises(HarnessFormatError, match="no such file"):
        read_outcomes(tmp_path / "nope.json")


# ---------------------------------------------------------------------- another session file
def _session_file(path, tells, legacy_sorted=False, trials="absent"):
    from hspr import journal

    bank = {"name": "b", "digest": "d", **({} if trials == "absent" else {"trials": trials})}
    doc = {"format": journal.FORMAT, "version": journal.VERSION, "bank": bank,
           "method": {"name": "hspr"}, "budget": 5, "seed": 0,
           "events": [{"type": "tell", "task": t, "outcome": y, "source": "record"} for t, y in tells]}
    if legacy_sorted:  # one object, keys sorted as `jq -S` writes them: 'format' after a long 'events'
        path.write_text(json.dumps({**doc, "version": 1}, sort_keys=True, indent=2))
    else:
        journal.write_new(path, doc)
    return path


@pytest.mark.parametrize("name, legacy", [("old.hspr", False), ("old.txt", False), ("old.json", True)])
def test_a_session_file_is_read_whatever_its_name_or_layout(tmp_path, name, legacy):
    tells = [(f"t{i:03d}", i % 2) for i in range(300)]  # long enough to push 'format' past the first 4 kB
    p = _session_file(tmp_path / name, tells, legacy_sorted=legacy)
    assert detect_form(p) == "session"
    read = read_outcomes(p)
    assert [(o.instance_id, o.outcome) for o in read.outcomes] == tells


@pytest.mark.parametrize("tells, theirs, trials, needle", [
    ([("a", 1 / 3)], "absent", None, "pass rate 0.333333, a session of repeated trials, but this bank has one 0/1"),
    ([("a", 1 / 3)], 5, 5, "not a count out of this bank's 5 trials"),
    ([("a", 1), ("a", 0)], None, None, "task 'a' is told twice with different outcomes (1 at line 2, 0 at line 3)"),
    # a hostile trial: 0/1 runs read as 5/5 or 0/5 pass rates, and 4-trial rates as 5-trial ones
    ([("a", 1)], None, 5, "holds one 0/1 outcome per task, but this bank has pass rates over 5 trials per task"),
    ([("a", 0.5)], 4, 5, "holds pass rates over 4 trials per task, but this bank has pass rates over 5"),
    ([("a", 1)], 5, None, "holds pass rates over 5 trials per task, but this bank has one 0/1 outcome per task"),
    ([("a", 1)], "absent", 5, "does not say how many trials its outcomes count"),
])
def test_session_outcomes_of_another_kind_are_refused(tmp_path, tells, theirs, trials, needle):
    """A review found 3-trial pass rates ingested into a 0/1 session, which then could not be opened."""
    p = _session_file(tmp_path / "old.hspr", tells, trials=theirs)
    with pytest.raises(HarnessFormatError, match=re.escape(needle)):
        read_outcomes(p, trials)


@pytest.mark.parametrize("line, got", [('{"task": "b", "outcome": 1}', "type None"), ("[1, 2]", "an array"),
                                       ('{"type": "undo", "task": "a"}', "type 'undo'")])
def test_session_records_its_own_reader_refuses_are_refused(tmp_path, line, got):
    """A hostile trial: ingest skipped records that `live status` calls corrupt, and said nothing."""
    p = _session_file(tmp_path / "old.hspr", [("a", 1)], trials=None)
    p.write_text(p.read_text() + line + "\n")
    with pytest.raises(HarnessFormatError, match=re.escape(f"line 3 is not an event of a session ({got})")):
        read_outcomes(p)


def test_a_torn_or_damaged_session_is_named(tmp_path):
    p = _session_file(tmp_path / "old.hspr", [("a", 1), ("b", 0)], trials=None)
    p.write_text(p.read_text()[:-12])  # the last record cut short, as by a killed process
    read = read_outcomes(p)
    assert [o.instance_id for o in read.outcomes] == ["a"] and "its last line is incomplete" in read.notes[-1]
    lines = p.read_text().splitlines()
    (tmp_path / "mid.txt").write_text("\n".join([lines[0], lines[1][:10], lines[1]]) + "\n")  # damage mid-file
    with pytest.raises(HarnessFormatError, match=r"line 2 \(not JSON.*is damaged.*with --skip-unknown"):
        read_outcomes(tmp_path / "mid.txt")


def test_session_pass_rates_of_the_bank_s_trials_are_read(tmp_path):
    p = _session_file(tmp_path / "old.hspr", [("a", 0.4), ("b", 1), ("a", 0.4)], trials=5)
    read = read_outcomes(p, 5)
    assert [(o.instance_id, o.status, o.outcome) for o in read.outcomes] == [("a", "partial", 0.4), ("b", "resolved", 1.0)]


@pytest.mark.parametrize("text,needle", [
    ("task_id,trial,resolved\nt1,0,1\nt1,1,0\nt1,1,0\nt1,2,1\nt1,3,1\n",
     r"line 4: trial '1' of 't1' again \(line 3\); each trial of a task is one line"),
    ("task_id,resolved,resolved\nt1,1,0\n", r"column 'resolved' 2 times \(columns 2, 3\)"),
    ("instance_id,task_id,resolved\nt1,t2,1\n", "both 'instance_id' and 'task_id'"),
    ("task_id,successes,trials,resolved\nt1,2,5,1\n", "'resolved' beside 'successes'/'trials'"),
    ("task_id,task_id,successes,trials\nt1,t2,2,5\n", "column 'task_id' 2 times"),
])
def test_trials_csv_with_copied_trials_or_ambiguous_columns_is_refused(tmp_path, text, needle):
    """A hostile trial: a trial line copied twice counted as another trial (the task then had its 5
    lines with one missing), and repeated or mixed header columns were picked silently."""
    p = tmp_path / "t.csv"
    p.write_text(text)
    with pytest.raises(HarnessFormatError, match=needle):
        read_trials_outcomes(p, 5)


def test_outcome_csv_with_ambiguous_columns_is_refused(tmp_path):
    p = tmp_path / "o.csv"
    for text, needle in (("instance_id,resolved,resolved\nT1,1,0\n", "column 'resolved' 2 times"),
                         ("instance_id,instance_id,resolved\nT1,T2,1\n", "column 'instance_id' 2 times"),
                         ("instance_id,task_id,resolved\nT1,T2,1\n", "both 'instance_id' and 'task_id'")):
        p.write_text(text)
        with pytest.raises(HarnessFormatError, match=needle):
            read_outcomes(p)
    p.write_text("instance_id,resolved,model\nT1,1,m\n")  # an extra column is still fine
    assert status_map(read_outcomes(p)) == {"T1": RESOLVED}
    p.write_text("instance_id,resolved,trials,trials\nT1,1,3,3\n")  # also columns only a trials CSV reads (a review)
    assert status_map(read_outcomes(p)) == {"T1": RESOLVED}
    p = tmp_path / "t.csv"  # distinct trials of one task, in any order, are five lines
    p.write_text("task_id,trial,resolved\n" + "".join(f"t1,{k},{k % 2}\n" for k in (4, 0, 3, 1, 2)))
    assert [o.outcome for o in read_trials_outcomes(p, 5).outcomes] == [0.4]


def test_inputs_of_a_near_miss_form_get_their_own_reason(tmp_path):
    """A hostile trial: JSON Lines was blamed on a truncated report, {"resolved": [...], "unresolved":
    [...]} was called a results.json without the tasks run, and a TSV or ';' CSV got no hint."""
    cases = {
        "o.jsonl": ('{"instance_id": "a", "resolved": true}\n{"instance_id": "b", "resolved": false}\n',
                    r"JSON Lines \(one object per line; the first has keys instance_id, resolved\)"),
        "p.json": ('{"instance_id": "a", "model_patch": "x"}\n{"instance_id": "b", "model_patch": "y"}\n',
                   "JSON Lines"),
        "l.json": ('{"resolved": ["a"], "unresolved": ["b"]}', r"rename the two keys and add \"error_ids\": \[\]"),
        # a live-loop trial: mini-swe-agent's preds.json got "has no boolean 'resolved' (got None)"
        "preds.json": ('{"a": {"model_name_or_path": "m", "instance_id": "a", "model_patch": "x"}}',
                       r"a predictions file \(entry 'a' holds a 'model_patch', no 'resolved'\)"),
        "t.tsv": ("instance_id\tresolved\na\t1\n", "separated by tabs: save it as comma-separated CSV"),
        "s.csv": ("instance_id;resolved\na;1\n", "separated by semicolons"),
    }
    for name, (text, needle) in cases.items():
        (tmp_path / name).write_text(text)
        with pytest.raises(HarnessFormatError, match=needle):
            read_outcomes(tmp_path / name)
    (tmp_path / "cut.json").write_text('{"resolved_ids": ["a"], "unresolved')  # a truncated report keeps its hint
    with pytest.raises(HarnessFormatError, match="a truncated report means the evaluation was interrupted"):
        read_outcomes(tmp_path / "cut.json")
    (tmp_path / "pretty.json").write_text(json.dumps(run_summary(resolved_ids=["a"], unresolved_ids=["b"]), indent=2))
    assert status_map(read_outcomes(tmp_path / "pretty.json")) == {"a": RESOLVED, "b": UNRESOLVED}


@pytest.mark.parametrize("change,needle", [
    ({"resolved_ids": ["a", " a"]}, "'resolved_ids' lists 'a' more than once"),
    ({"resolved_instances": True}, "'resolved_instances' must be a whole number >= 0, got True"),
    ({"pending_instances": "lots"}, "'pending_instances' must be a whole number >= 0, got 'lots'"),
    ({"incomplete_ids": ["b"]}, "'b' is in both 'unresolved_ids' and 'incomplete_ids'"),
])
def test_run_summary_gaps_are_refused(tmp_path, change, needle):
    """A hostile trial: ' a' beside 'a', a true count, 'lots' pending, and an id both graded and
    incomplete were read without a word."""
    rep = {**run_summary(resolved_ids=["a"], unresolved_ids=["b"], submitted_ids=["a", "b"]), **change}
    p = tmp_path / "model.run1.json"
    p.write_text(json.dumps(rep))
    with pytest.raises(HarnessFormatError, match=re.escape(needle)):
        read_outcomes(p)


def test_a_resolved_report_without_a_tested_patch_is_refused(tmp_path):
    """A hostile trial: resolved true beside patch_is_None true was read as an empty patch, silently."""
    p = tmp_path / "report.json"
    p.write_text(json.dumps(instance_report("a__a-1", True, patch_is_none=True)))
    with pytest.raises(HarnessFormatError, match="'a__a-1' is resolved with patch_is_None"):
        read_outcomes(p)
    p.write_text(json.dumps(instance_report("a__a-1", True, applied=False)))
    with pytest.raises(HarnessFormatError, match="resolved with patch_successfully_applied false"):
        read_outcomes(p)
    p.write_text(json.dumps(instance_report("a__a-1", True)))
    assert status_map(read_outcomes(p)) == {"a__a-1": RESOLVED}


def test_trial_counts_on_a_bank_of_one_outcome_per_task_are_named(tmp_path):
    # a new-user trial: "has no 'resolved' column" left a Terminal-Bench user thinking K/T was not supported
    p = tmp_path / "counts.csv"
    p.write_text("task_id,successes,trials\nhello-world,3,5\n")
    with pytest.raises(HarnessFormatError, match="no 'resolved' column; expected 'task_id,resolved'; it holds trial "
                                                 r"counts \(successes, trials\), the form of a bank of repeated trials"):
        read_outcomes(p)
    p.write_text("task_id,score\nhello-world,1\n")  # not counts: no such words
    with pytest.raises(HarnessFormatError) as exc:
        read_outcomes(p)
    assert "no 'resolved' column" in str(exc.value) and "trial counts" not in str(exc.value)



def test_a_report_of_the_wrong_shape_names_the_json_kind_not_pythons(tmp_path):
    """A hostile trial: messages said 'got list' / 'got dict' / 'got NoneType' (Python's names) of a JSON file."""
    from hspr.harness import parse_instance_report, read_outcomes

    with pytest.raises(HarnessFormatError, match=r"got an array$"):
        parse_instance_report([1], tmp_path / "report.json")
    with pytest.raises(HarnessFormatError, match=r"entry 'a' must be an object with a 'resolved' flag, got null$"):
        parse_instance_report({"a": None}, tmp_path / "report.json")
    summary = tmp_path / "run.json"
    summary.write_text('{"schema_version": 2, "resolved_ids": {"a": 1}, "unresolved_ids": [], "error_ids": []}')
    with pytest.raises(HarnessFormatError, match=r"'resolved_ids' must be a list of instance ids, got an object$"):
        read_outcomes(summary)
