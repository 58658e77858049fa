"""Hostile inputs: hand-edited results files, pathological JSONL, huge HSPR settings, the
``agent,task_id,resolved`` long CSV and banks with no observed cell. Each is refused with an
error naming the file, line / run, field or option, never a traceback."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest
from click.testing import CliRunner

from hspr.cli import main
from hspr.data.io import detect_form, load_matrix, read_jsonl
from hspr.data.matrix import DataError, ResponseMatrix
from hspr.errors import InputWarning
from hspr.methods.hspr.config import MAX_DRAWS, MAX_NODES, HSPRConfig
from hspr.report import ReportError, read_results

from .conftest import simulate_matrix


def write_wide(m: ResponseMatrix, path):
    lines = ["agent," + ",".join(m.tasks)] + [f"{a}," + ",".join(map(str, row)) for a, row in zip(m.agents, m.values)]
    path.write_text("\n".join(lines) + "\n")
    return path


# ---------------------------------------------------------------------------------- results files


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """The parsed output of a real `hspr replay --out` run (uniform, one seed, 12 targets)."""
    d = tmp_path_factory.mktemp("replay")
    m, _ = simulate_matrix(12, 40, seed=5)
    out = d / "r.json"
    res = CliRunner().invoke(main, ["replay", "--matrix", str(write_wide(m, d / "toy.csv")), "--methods", "uniform",
                                    "--seeds", "0", "--out", str(out)])
    assert res.exit_code == 0, res.output
    obj = json.loads(out.read_text())
    assert len(obj["runs"]) == 12 and obj["runs"][0]["upper"] is not None
    return obj


def test_a_replay_says_when_it_replaces_a_results_file(tmp_path):
    """A new-user trial: a second replay without --out replaced the first one's results.json with no word."""
    m, _ = simulate_matrix(8, 30, seed=5)
    csv, out = write_wide(m, tmp_path / "toy.csv"), tmp_path / "r.json"
    args = ["replay", "--matrix", str(csv), "--methods", "uniform", "--seeds", "0", "-q", "--out", str(out)]
    first = CliRunner().invoke(main, args)
    assert first.exit_code == 0 and "replaced" not in first.output
    assert len(json.loads(out.read_text())["runs"]) == 8
    second = CliRunner().invoke(main, [*args, "--seeds", "0-1"])
    said = " ".join(second.output.split())
    assert second.exit_code == 0 and f"wrote {out} (16 runs); it replaced the earlier {out} of 8 runs (give each " \
        "replay its own --out FILE" in said
    out.write_text("{")  # not a results file (another tool's, or damaged): refused, kept (it was replaced, and said)
    third = CliRunner().invoke(main, args)
    assert third.exit_code == 2 and "r.json exists and is not JSON" in " ".join(third.output.split())
    assert out.read_text() == "{"
    # a hostile trial: --csv replaced another replay's summary without a word, while --out said so
    out.unlink()
    csv_out = tmp_path / "s.csv"
    said = [" ".join(CliRunner().invoke(main, [*args, "--csv", str(csv_out)]).output.split()) for _ in range(2)]
    assert "replaced" not in said[0] and f"(8 runs); the summary to {csv_out}" in said[0]  # named (a new-user trial)
    assert f"the summary to {csv_out} (it replaced the earlier one)" in said[1]
    out.write_text("")  # an empty file (a shell's redirection made it): nothing was replaced
    fourth = CliRunner().invoke(main, args)
    assert fourth.exit_code == 0 and "replaced" not in fourth.output and len(json.loads(out.read_text())["runs"]) == 8


def _pop(field, runs=None):
    def edit(rs):
        for i in (range(len(rs)) if runs is None else runs):
            rs[i].pop(field)
    return edit


def _set(i, **changes):
    def edit(rs):
        rs[i].update(changes)
    return edit


HOSTILE_RUNS = [
    ("no_upper", _pop("upper"), 0, "upper", "an interval needs both ends or neither"),
    ("no_lower", _pop("lower"), 0, "lower", "an interval needs both ends or neither"),
    ("upper_null_in_one", _set(4, upper=None), 4, "upper", "an interval needs both ends or neither"),
    ("lower_text", _set(2, lower="0.1"), 2, "lower", "must be a number or null"),
    ("budget_text", _set(3, budget="x"), 3, "budget", "must be an integer, but it is \"x\""),
    ("budget_fraction", _set(3, budget_fraction=True), 3, "budget_fraction", "must be a finite number"),
    ("seed_fraction", _set(6, seed=1.5), 6, "seed", "must be an integer, but it is 1.5"),
    ("seed_huge", _set(6, seed=2**80), 6, "seed", "must be an integer of at most 9007199254740992"),  # not 'no integer'
    ("method_null", _set(5, method=None), 5, "method", "must be a non-empty string, but it is null"),
    ("method_removed", _pop("method", [5]), 5, "method", "must be a non-empty string, but it is missing"),
    ("method_list", _set(5, method=["hspr"]), 5, "method", "must be a non-empty string"),
    ("bank_removed", _pop("bank", [7]), 7, "bank", "it is missing"),
    ("target_number", _set(9, target=3), 9, "target", "must be a non-empty string, but it is 3"),
    ("estimate_text", _set(11, estimate="high"), 11, "estimate", "must be a finite number"),
    ("truth_percent", _set(1, truth=37.5), 1, "truth", r"in \[0, 1\] \(not %\)"),
    ("budget_negative", _set(3, budget=-3), 3, "budget", "must be an integer >= 0, but it is -3"),
    ("interval_inverted", _set(2, lower=0.9, upper=0.1), 2, "lower", "must be at most 'upper'"),
]


@pytest.mark.parametrize("name, edit, run, field, pattern", HOSTILE_RUNS, ids=[h[0] for h in HOSTILE_RUNS])
def test_hand_edited_results_name_file_run_and_field(tmp_path, results, name, edit, run, field, pattern):
    obj = copy.deepcopy(results)
    edit(obj["runs"])
    p = tmp_path / f"{name}.json"
    p.write_text(json.dumps(obj))
    with pytest.raises(ReportError, match=pattern) as exc:
        read_results(p)
    msg = str(exc.value)
    assert msg.startswith(f"{p}: run {run}: {field!r} must be "), msg
    assert "hspr replay --out" in msg
    res = CliRunner().invoke(main, ["report", str(p), "--out-dir", str(tmp_path / "rep"), "--no-figures"])
    assert res.exit_code == 2, res.output
    assert "error:" in res.output and f"run {run}" in res.output and "Traceback" not in res.output
    assert not (tmp_path / "rep").exists()


def test_intact_and_interval_free_results_still_report(tmp_path, results):
    obj = copy.deepcopy(results)
    p = tmp_path / "r.json"
    p.write_text(json.dumps(obj))
    runs = read_results(p)
    assert len(runs) == 12 and runs["budget"].dtype == np.int64 and runs["seed"].dtype == np.int64
    assert runs["upper"].notna().all()
    for r in obj["runs"]:  # no interval at all (both ends null), integral floats for the integers
        r.update(lower=None, upper=None, budget=float(r["budget"]), seed=0.0)
    p.write_text(json.dumps(obj))
    runs = read_results(p)
    assert runs["lower"].isna().all() and runs["upper"].isna().all()
    assert (runs["budget"] == obj["runs"][0]["budget"]).all() and runs["budget"].dtype == np.int64
    res = CliRunner().invoke(main, ["report", str(p), "--out-dir", str(tmp_path / "rep"), "--no-figures",
                                    "--n-resamples", "200"])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "rep" / "comparison.csv").is_file()


def test_extra_level_intervals_need_both_ends(tmp_path, results):
    obj = copy.deepcopy(results)
    for r in obj["runs"]:
        r["lower_50"], r["upper_50"] = r["estimate"], r["estimate"]
    del obj["runs"][8]["upper_50"]
    p = tmp_path / "r.json"
    p.write_text(json.dumps(obj))
    with pytest.raises(ReportError, match=r"run 8: 'upper_50' must be a number too, since the run has 'lower_50'"):
        read_results(p)


# ---------------------------------------------------------------------------------- JSONL


def test_jsonl_nested_too_deeply_is_a_data_error(tmp_path):
    p = tmp_path / "deep.jsonl"
    p.write_text('{"subject_id": "a", "responses": {"t1": 1}}\n' + "[" * 100_000 + "\n")
    with pytest.raises(DataError, match=r"line 2: nested too deeply to be a py-irt record") as exc:
        load_matrix(p)
    assert str(p) in str(exc.value)
    res = CliRunner().invoke(main, ["bank", "validate", str(p)])
    assert res.exit_code == 2 and "line 2: nested too deeply" in res.output and "Traceback" not in res.output


def test_jsonl_overlong_integer_and_huge_value_are_named(tmp_path):
    p = tmp_path / "big.jsonl"
    p.write_text('{"subject_id": "a", "responses": {"t1": ' + "1" * 5000 + "}}\n")
    with pytest.raises(DataError, match=r"big.jsonl: line 1: invalid JSON \(Exceeds the limit"):
        read_jsonl(p)
    p.write_text('{"subject_id": "a", "responses": {"t1": ' + "[" * 500 + "]" * 500 + "}}\n")
    with pytest.raises(DataError, match=r"task 't1': non-binary response \[\[\[") as exc:
        read_jsonl(p)
    assert len(str(exc.value)) < 300  # the value is cut, not printed in full


# ---------------------------------------------------------------------------------- HSPR settings


@pytest.mark.parametrize("field, value, pattern", [
    ("n_nodes", 1_000_000_000, r"n_nodes must be at most 262,144 \(allowed: 16 to 262,144, i.e. 2\*\*18\), got 1,000,000,000"),
    ("n_nodes", MAX_NODES + 1, r"n_nodes must be at most 262,144"),
    ("n_draws", MAX_DRAWS + 1, r"n_draws must be at most 4,194,304 \(allowed: 16 to 4,194,304, i.e. 2\*\*22\)"),
    ("n_draws", 8, r"n_draws must be >= 16"),
])
def test_hspr_config_bounds_name_field_range_and_reason(field, value, pattern):
    with pytest.raises(ValueError, match=pattern) as exc:
        HSPRConfig(**{field: value})
    assert "memory" in str(exc.value) or "unstable" in str(exc.value)
    with pytest.raises(ValueError, match=field):
        HSPRConfig.from_dict({field: value})


def test_hspr_config_bounds_keep_defaults_and_limits():
    cfg = HSPRConfig()
    assert 16 <= cfg.n_nodes <= MAX_NODES and 16 <= cfg.n_draws <= MAX_DRAWS
    assert (MAX_NODES, MAX_DRAWS) == (2 ** 18, 2 ** 22)
    edge = HSPRConfig(n_nodes=MAX_NODES, n_draws=MAX_DRAWS)
    assert (edge.n_nodes, edge.n_draws) == (MAX_NODES, MAX_DRAWS)


def test_cli_refuses_huge_n_nodes_in_config_file(tmp_path):
    m, _ = simulate_matrix(8, 20, seed=2)
    cfg = tmp_path / "cfg.json"
    cfg.write_text('{"n_nodes": 1000000000}')
    res = CliRunner().invoke(main, ["replay", "--matrix", str(write_wide(m, tmp_path / "m.csv")), "--methods", "hspr",
                                    "--seeds", "0", "--config", str(cfg), "--out", str(tmp_path / "r.json")])
    assert res.exit_code == 2 and "n_nodes must be at most 262,144" in res.output and "Traceback" not in res.output


# ---------------------------------------------------------------------------------- long CSV with task_id


def _long(m: ResponseMatrix, path, task_col: str):
    rows = [f"{a},{t},{m.values[i, j]}" for i, a in enumerate(m.agents) for j, t in enumerate(m.tasks)]
    path.write_text(f"agent,{task_col},resolved\n" + "\n".join(rows) + "\n")
    return path


def test_long_csv_accepts_task_id_like_instance_id(tmp_path):
    m, _ = simulate_matrix(6, 9, seed=4)
    a = _long(m, tmp_path / "inst.csv", "instance_id")
    b = _long(m, tmp_path / "task.csv", "task_id")
    assert detect_form(b) == "long_csv"
    ma, mb = load_matrix(a), load_matrix(b)
    assert mb.agents == ma.agents and mb.tasks == ma.tasks
    np.testing.assert_array_equal(mb.values, ma.values)
    assert mb.digest() == ma.digest() == m.canonical().digest()
    res = CliRunner().invoke(main, ["bank", "validate", str(b)])
    assert res.exit_code == 0 and "6 agents x 9 tasks" in res.output, res.output


def test_long_csv_task_id_errors_name_task_id(tmp_path):
    p = tmp_path / "conflict.csv"
    p.write_text("agent,task_id,resolved\na0,t1,1\na0,t1,0\n")
    with pytest.raises(DataError, match=r"agent 'a0', task_id 't1': line 2 says 1, line 3 says 0"):
        load_matrix(p)
    p.write_text("agent,task_id,resolved\na0,,1\n")
    with pytest.raises(DataError, match=r"line 2: empty task_id; every line needs agent, task_id and resolved"):
        load_matrix(p)
    trials = tmp_path / "trials.csv"  # the repeated-trials header is still read as such
    trials.write_text("agent,task_id,successes,trials\na0,t1,2,3\n")
    assert detect_form(trials) == "trials_csv" and load_matrix(trials).trials == 3
    task = tmp_path / "task.csv"  # a new-user trial's export: 'task' names the task column as well
    task.write_text("agent,task,resolved\na0,t1,1\na0,t2,0\na1,t1,0\n")
    named = tmp_path / "named.csv"
    named.write_text("agent,instance_id,resolved\na0,t1,1\na0,t2,0\na1,t1,0\n")
    assert detect_form(task) == "long_csv" and load_matrix(task).digest() == load_matrix(named).digest()
    other = tmp_path / "other.csv"  # another task column name: read as wide, and the error leads with what to do
    other.write_text("agent,problem,resolved\na0,t1,1\na0,t2,0\n")
    with pytest.raises(DataError, match=r"other.csv: With 3 columns this looks like a long CSV.*agent,instance_id,"
                                        r"resolved.*Read as a wide CSV \(one row per agent\), duplicate agent id 'a0'"):
        load_matrix(other)
    cut = tmp_path / "cut.csv"  # a trial: rows cut from a repeated-trials CSV by grep, header and all lost
    cut.write_text("a0,t1,3,5\na0,t2,0,5\na0,t3,5,5\n")
    with pytest.raises(DataError, match=r"Its first line \('a0,t1,3,5'\) is a row like the others, not a header.*"
                                        r"agent,task_id,successes,trials.*duplicate agent id 'a0'"):
        load_matrix(cut)


# ---------------------------------------------------------------------------------- no observed cell


@pytest.mark.parametrize("name, text", [
    ("null.jsonl", '{"subject_id": "a", "responses": {"t1": null, "t2": null}}\n{"subject_id": "b", "responses": {"t1": null}}\n'),
    ("blank.csv", "agent,t1,t2\na,,\nb,,\n"),
])
def test_bank_without_any_observed_cell_is_refused(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    with pytest.raises(DataError, match=r"every cell is missing") as exc:
        load_matrix(p)
    assert str(exc.value).startswith(f"no observed outcome in {p}: every cell is missing")
    res = CliRunner().invoke(main, ["bank", "validate", str(p)])
    assert res.exit_code == 2 and f"no observed outcome in {p}" in res.output and "Traceback" not in res.output
    session = tmp_path / "s.hspr"
    res = CliRunner().invoke(main, ["live", "start", "--matrix", str(p), "--budget", "1", "--session", str(session),
                                    "--missing-as-zero"])
    assert res.exit_code == 2 and "every cell is missing" in res.output and not session.exists()


@pytest.mark.filterwarnings("ignore:.*no agent ran")  # the blank task is the point of the test
def test_one_observed_cell_is_enough(tmp_path):
    p = tmp_path / "sparse.csv"
    p.write_text("agent,t1,t2\na,1,\nb,,\n")
    with pytest.warns(InputWarning, match="every cell is 1"):  # one cell says nothing about which tasks separate
        m = load_matrix(p)
    assert m.n_missing == 3 and m.values[0, 0] == 1
