"""hspr bank merge: keep a bank current without hand-editing CSVs (issue 12, item 5)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from hspr.cli import main
from hspr.data import ResponseMatrix, load_matrix
from hspr.data.build import merge_banks, write_wide_csv
from hspr.data.matrix import DataError

from .conftest import simulate_matrix


def test_new_agents_and_tasks_are_appended_and_unknown_cells_stay_missing():
    base = ResponseMatrix(["a", "b"], ["t1", "t2"], np.array([[1, 0], [0, 1]]))
    new = ResponseMatrix(["b", "c"], ["t2", "t3"], np.array([[1, 1], [0, 0]]))  # b/t2 agrees with base
    m = merge_banks(base, new)
    assert m.agents == ("a", "b", "c") and m.tasks == ("t1", "t2", "t3")
    expect = {("a", "t1"): 1, ("a", "t2"): 0, ("b", "t1"): 0, ("b", "t2"): 1, ("b", "t3"): 1, ("c", "t2"): 0,
              ("c", "t3"): 0}
    for i, a in enumerate(m.agents):
        for j, t in enumerate(m.tasks):
            if (a, t) in expect:
                assert not m.missing[i, j] and m.values[i, j] == expect[a, t]
            else:
                assert m.missing[i, j]  # a/t3, c/t1: neither bank ran them


def test_conflicting_cells_are_refused_or_resolved_by_choice():
    base = ResponseMatrix(["a"], ["t1", "t2"], np.array([[1, 0]]))
    new = ResponseMatrix(["a"], ["t1"], np.array([[0]]))
    with pytest.raises(DataError, match="1 cell.* differ.*a / t1.*--prefer"):
        merge_banks(base, new)
    from hspr.errors import InputWarning

    with pytest.warns(InputWarning, match="1 cell.s. differ between the banks and take the new bank's outcome"):
        assert merge_banks(base, new, "new").values[0, 0] == 0
    with pytest.warns(InputWarning, match="take the base bank's outcome"):
        assert merge_banks(base, new, "base").values[0, 0] == 1


def test_merge_cli_and_a_live_session_on_the_old_bank(tmp_path, monkeypatch):
    m = simulate_matrix(12, 30, seed=2)[0]
    bank = write_wide_csv(m.rows(np.arange(10)), tmp_path / "bank.csv")
    extra = write_wide_csv(m.rows([10, 11]), tmp_path / "new.csv")
    runner = CliRunner()
    assert runner.invoke(main, ["live", "start", "--matrix", str(bank), "--budget", "4", "--method", "uniform",
                                "--session", str(tmp_path / "s.hspr")]).exit_code == 0
    res = runner.invoke(main, ["bank", "merge", str(bank), str(extra), "--out", str(bank)])
    assert res.exit_code == 0 and f"2 agent(s) and 0 task(s) more than {bank} had);" in res.output and "digest" in res.output
    # into another file: the summary says where it went and that the base is unchanged (it said "added to" the base)
    res = runner.invoke(main, ["bank", "merge", str(bank), str(extra), "--out", str(tmp_path / "m2.csv")])
    assert res.exit_code == 0 and f"written to {tmp_path / 'm2.csv'}; {bank} is unchanged" in " ".join(res.output.split())
    # BASE itself under another spelling (relative --out, absolute BASE) is not "unchanged"
    monkeypatch.chdir(tmp_path)
    res = runner.invoke(main, ["bank", "merge", str(bank), str(extra), "--out", "bank.csv"])
    assert res.exit_code == 0 and "unchanged" not in res.output
    merged = load_matrix(bank)
    assert merged.n_agents == 12 and merged.digest() == m.canonical().digest()
    res = runner.invoke(main, ["live", "status", "--session", str(tmp_path / "s.hspr")])
    assert res.exit_code == 2 and "different bank is refused" in " ".join(res.output.split())
    bad = tmp_path / "bad.csv"
    bad.write_text("agent," + ",".join(m.tasks) + "\n" + m.agents[0] + "," + ",".join(
        str(1 - v) for v in m.values[0]) + "\n")
    res = runner.invoke(main, ["bank", "merge", str(bank), str(bad), "--out", str(tmp_path / "x.csv")])
    assert res.exit_code == 2 and "--prefer" in res.output and not (tmp_path / "x.csv").exists()


def test_merge_onto_a_bundled_bank_by_name_and_build_copies_it(tmp_path):
    """`bank validate lite` took a bundled name; merge and build said 'lite: no such file' (hostile trial)."""
    from hspr.data import load_bank

    pro = load_bank("pro", missing_as_zero=False)
    new = write_wide_csv(ResponseMatrix(["my_agent"], pro.tasks[:3], np.array([[1, 0, 1]])), tmp_path / "new.csv")
    res = CliRunner().invoke(main, ["bank", "merge", "pro", str(new), "--out", str(tmp_path / "m.csv")])
    assert res.exit_code == 0, res.output
    merged = load_matrix(tmp_path / "m.csv")
    assert merged.n_agents == pro.n_agents + 1 and merged.n_tasks == pro.n_tasks
    assert merged.missing.sum() == pro.missing.sum() + pro.n_tasks - 3  # Pro's missing cells stay missing
    # build with a bundled name writes a copy (a new-user trial found no way to export one); Pro's blanks stay
    res = CliRunner().invoke(main, ["bank", "build", "pro", "--out", str(tmp_path / "p.csv")])
    assert res.exit_code == 0, res.output
    copy = load_matrix(tmp_path / "p.csv")
    assert copy.digest() == pro.digest() and copy.n_missing == pro.n_missing > 0
    # a re-trial: the bundled target set (the README's way to add another scaffold's rows) was "no such file" as NEW
    # and to validate
    from hspr.data.banks import load_target_set

    res = CliRunner().invoke(main, ["bank", "merge", "verified", "bash-only", "--out", str(tmp_path / "vb.csv")])
    assert res.exit_code == 0, res.output
    both, rows = load_matrix(tmp_path / "vb.csv"), load_target_set("bash-only")
    assert both.n_agents == load_bank("verified").n_agents + rows.n_agents and set(rows.agents) <= set(both.agents)
    res = CliRunner().invoke(main, ["bank", "validate", "bash-only", "--json"])
    assert res.exit_code == 0 and json.loads(res.stdout)["path"] == "targets:bash-only"
    assert json.loads(res.stdout)["agents"] == rows.n_agents


def test_a_file_named_like_a_bundled_bank_is_read_with_a_note(tmp_path, monkeypatch):
    """A hostile trial: `bank merge lite new.csv --out lite` wrote ./lite, after which `bank validate
    lite` silently read that file (85 agents) while `replay --bank lite` read the bundled 84."""
    from hspr.data import load_bank

    lite = load_bank("lite")
    monkeypatch.chdir(tmp_path)
    new = write_wide_csv(ResponseMatrix(["my_agent"], lite.tasks[:3], np.array([[1, 0, 1]])), tmp_path / "new.csv")
    res = CliRunner().invoke(main, ["bank", "merge", "lite", str(new), "--out", "lite"])
    # its re-trial: the summary said '1 agent(s) ... more than lite had', as if the bundled bank had changed
    assert res.exit_code == 0 and "more than lite, written to lite; the bundled bank lite is unchanged" in res.stdout
    assert "note: ./lite has a bundled bank's name" in res.stderr and "had" not in res.stdout
    for args in (["bank", "validate", "lite"], ["bank", "agents", "lite"]):
        res = CliRunner().invoke(main, args)
        assert res.exit_code == 0 and "'lite' is a bundled bank's name and also a file in this folder" in res.stderr
    assert str(lite.n_agents + 1) in CliRunner().invoke(main, ["bank", "validate", "lite"]).stdout
    (tmp_path / "lite").unlink()
    res = CliRunner().invoke(main, ["bank", "validate", "lite"])
    assert res.exit_code == 0 and "note:" not in res.stderr and str(lite.n_agents) in res.stdout
    # a re-trial: `bank build lite --out lite`, with no ./lite, was refused as overwriting PATH, the bundled bank
    res = CliRunner().invoke(main, ["bank", "build", "lite", "--out", "lite"])
    assert res.exit_code == 0 and "note: ./lite has a bundled bank's name" in res.stderr
    assert load_matrix(tmp_path / "lite").digest() == lite.digest()


def test_a_repeated_trials_bank_merges_in_place_in_its_own_form(tmp_path):
    """Review: the in-place rule refused a trials CSV BASE, which is written back in its own form."""
    base = tmp_path / "tb.csv"
    base.write_text("agent,task_id,successes,trials\na,t1,2,3\na,t2,0,3\n")
    (tmp_path / "new.csv").write_text("agent,task_id,successes,trials\nb,t1,3,3\nb,t2,1,3\n")
    res = CliRunner().invoke(main, ["bank", "merge", str(base), str(tmp_path / "new.csv"), "--out", str(base)])
    assert res.exit_code == 0, res.output
    m = load_matrix(base)
    assert m.trials == 3 and m.agents == ("a", "b") and m.values.tolist() == [[2, 0], [3, 1]]
    # a hostile trial: with 1 trial per task the merged bank is 0/1, and in place it came back a wide CSV
    one = tmp_path / "one.csv"
    one.write_text(text := "agent,task_id,successes,trials\na,t1,1,1\na,t2,0,1\n")
    (tmp_path / "new1.csv").write_text("agent,task_id,successes,trials\nb,t1,1,1\nb,t2,1,1\n")
    res = CliRunner().invoke(main, ["bank", "merge", str(one), str(tmp_path / "new1.csv"), "--out", str(one)])
    assert res.exit_code == 2 and "with 1 trial per task, and the merged bank (0/1 outcomes) is written as a wide CSV, " \
        "which would replace that form" in " ".join(res.output.split())
    assert one.read_text() == text
    # a hostile trial: --json with --out /dev/stdout put the bank and the summary on one stream
    res = CliRunner().invoke(main, ["bank", "merge", str(base), str(tmp_path / "new.csv"), "--out", "/dev/stdout", "--json"])
    assert res.exit_code == 2 and "--json prints its summary on stdout, where --out /dev/stdout writes the bank" in \
        json.loads(res.stdout)["error"]


def test_a_row_without_any_run_is_named_once_by_validate_and_merge(tmp_path):
    """A hostile trial: validate never said it, merge said it twice."""
    base = tmp_path / "base.csv"
    base.write_text("agent,t1,t2\na,1,0\nghost,,\n")
    (tmp_path / "new.csv").write_text("agent,t1,t2\nb,0,1\n")
    res = CliRunner().invoke(main, ["bank", "validate", str(base)])
    assert res.exit_code == 0 and res.output.count("no run at all") == 1 and "'ghost'" in res.output, res.output
    res = CliRunner().invoke(main, ["bank", "merge", str(base), str(tmp_path / "new.csv"), "--out",
                                    str(tmp_path / "m.csv")])
    assert res.exit_code == 0 and res.output.count("no run at all") == 1, res.output


def test_a_new_file_of_alike_agents_is_not_called_uninformative_but_a_merged_bank_that_is_so_is(tmp_path):
    """A trial: NEW, two agents on one task both resolved, was told 'no task separates any two agents' though
    the merged bank is fine; the check belongs to the bank merge writes."""
    (tmp_path / "base.csv").write_text("agent,t1,t2\na,1,0\nb,0,1\n")
    (tmp_path / "new.csv").write_text("agent,t1\nc,1\nd,1\n")
    res = CliRunner().invoke(main, ["bank", "merge", str(tmp_path / "base.csv"), str(tmp_path / "new.csv"), "--out",
                                    str(tmp_path / "m.csv")])
    assert res.exit_code == 0 and "separates" not in res.output, res.output
    (tmp_path / "same.csv").write_text("agent,t1\na,1\nb,1\n")
    res = CliRunner().invoke(main, ["bank", "merge", str(tmp_path / "same.csv"), str(tmp_path / "new.csv"), "--out",
                                    str(tmp_path / "m2.csv")])
    assert res.exit_code == 0 and res.output.count("no task separates any two agents (every cell is 1)") == 1
    assert f"{tmp_path / 'm2.csv'}: no task separates" in res.output


def test_ids_that_differ_only_by_spaces_are_named_as_such(tmp_path):
    """A trial: agents 'a' and 'a ' were refused as "duplicate agent id 'a'", with a long-CSV hint."""
    (tmp_path / "ws.csv").write_text("agent,t1,t2\na,1,0\na ,0,1\n")
    with pytest.raises(DataError, match=r"line 2 and line 3: agent ids 'a' and 'a ' are one id once the spaces "
                                        r"around them are removed \('a'\)"):
        load_matrix(tmp_path / "ws.csv")
    (tmp_path / "d4.csv").write_text("agent,t1,t2,t3\na,1,0,1\na,0,1,1\n")
    with pytest.raises(DataError) as err:
        load_matrix(tmp_path / "d4.csv")
    assert str(err.value) == (f"{tmp_path / 'd4.csv'}: duplicate agent id 'a' (line 2 and line 3); agent ids must be "
                              "unique: rename or remove one of them")


def test_jsonl_task_ids_are_stripped_like_csv_ids_so_a_merge_writes_a_loadable_bank(tmp_path):
    """A JSONL response under 't1 ' became a second task beside the CSV's 't1', and `bank merge`
    wrote (over BASE) a CSV that `bank validate` then refused for a duplicate id (a hostile trial)."""
    base = tmp_path / "bank.csv"
    base.write_text("agent,t1,t2\na1,1,0\na2,0,1\n")
    new = tmp_path / "new.jsonl"
    new.write_text('{"subject_id": "a3", "responses": {"t1 ": 1, "t2": 0}}\n')
    res = CliRunner().invoke(main, ["bank", "merge", str(base), str(new), "--out", str(base)])
    assert res.exit_code == 0, res.output
    m = load_matrix(base)
    assert m.tasks == ("t1", "t2") and m.agents == ("a1", "a2", "a3")
    assert m.values[m.agent_index("a3")].tolist() == [1, 0]
    clash = tmp_path / "clash.jsonl"
    clash.write_text('{"subject_id": "a3", "responses": {"t1 ": 1, "t1": 0}}\n')
    with pytest.raises(DataError, match=r"line 1: task ids 't1 ' and 't1' are the same id"):
        load_matrix(clash)


def _m(text_rows, source):
    agents = [r[0] for r in text_rows[1:]]
    return ResponseMatrix(agents, text_rows[0][1:], np.array([r[1:] for r in text_rows[1:]], int), source=source)


def test_merge_names_overridden_cells_and_refuses_two_unrelated_banks():
    from hspr.errors import InputWarning

    base = _m([["agent", "t1", "t2"], ["a1", 1, 0], ["a2", 0, 1]], "b1.csv")
    new = _m([["agent", "t1", "t3"], ["a1", 0, 1], ["a3", 1, 1]], "b2.csv")
    with pytest.raises(DataError, match=r"1 cell\(s\) differ.*a1 / t1 \(b1\.csv: 1, b2\.csv: 0\)"):
        merge_banks(base, new)
    with pytest.warns(InputWarning, match=r"take the new bank's outcome \(b2\.csv\), e\.g\. a1 / t1 \(b1\.csv: 1, b2\.csv: 0\)"):
        m = merge_banks(base, new, prefer="new")
    assert m.values[m.agent_index("a1"), m.task_index("t1")] == 0
    with pytest.warns(InputWarning, match=r"take the base bank's outcome \(b1\.csv\), e\.g\. a1 / t1 \(b2\.csv: 0, b1\.csv: 1\)"):
        m = merge_banks(base, new, prefer="base")
    assert m.values[m.agent_index("a1"), m.task_index("t1")] == 1
    other = _m([["agent", "t8", "t9"], ["z1", 0, 1]], "b3.csv")
    with pytest.raises(DataError, match="shares no task id and no agent id with b1.csv"):
        merge_banks(base, other)
    more_tasks = _m([["agent", "t8", "t9"], ["a1", 0, 1], ["z1", 1, 1]], "b4.csv")  # a1 ran new tasks: a real merge
    with pytest.warns(InputWarning, match=r"1 new agent\(s\) \('z1'\) ran none of b1\.csv's 2 tasks"):
        m = merge_banks(base, more_tasks)
    assert m.shape == (3, 4)


def test_bank_commands_name_a_misspelt_bundled_bank_and_a_file_in_the_out_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "b1.csv").write_text("agent,t1,t2\na1,1,0\na2,0,1\n")
    run = CliRunner().invoke
    res = run(main, ["bank", "validate", "Verified"])
    assert res.exit_code == 2 and "Verified: no such file or folder; the bundled bank is spelled 'verified'" in res.output
    res = run(main, ["bank", "merge", "b1.csv", "lite", "--out", "m.csv"])
    assert res.exit_code == 2 and "only BASE may be a bundled bank's name" in res.output
    res = run(main, ["bank", "build", "b1.csv", "--out", "b1.csv/x.csv"])  # was "File exists", exit 1
    assert res.exit_code == 2 and "b1.csv is a file, not a folder" in res.output
    assert not (tmp_path / "m.csv").exists()


def test_bank_commands_print_json_for_scripts(tmp_path, monkeypatch):
    import json

    monkeypatch.chdir(tmp_path)
    (tmp_path / "b1.csv").write_text("agent,t1,t2\na1,1,0\na2,0,1\n")
    (tmp_path / "b2.csv").write_text("agent,t1,t3\na1,0,1\na3,1,1\n")
    run = CliRunner().invoke
    b1 = load_matrix(tmp_path / "b1.csv")
    res = run(main, ["bank", "validate", "b1.csv", "--json"])
    assert res.exit_code == 0
    assert json.loads(res.stdout) == {"ok": True, "path": "b1.csv", "form": "wide_csv", "agents": 2, "tasks": 2,
                                      "missing": 0, "trials": None, "digest": b1.digest(), "digest_missing_kept": b1.digest(),
                                      "warnings": []}
    res = run(main, ["bank", "build", "b1.csv", "--out", "c.csv", "--json"])
    assert json.loads(res.stdout)["out"] == "c.csv" and json.loads(res.stdout)["digest"] == b1.digest()
    res = run(main, ["bank", "merge", "b1.csv", "b2.csv", "--out", "m.csv", "--prefer", "new", "--json"])
    got = json.loads(res.stdout)
    # a hostile trial: the overridden cells were said on stderr only; --json now carries every warning
    assert len(got["warnings"]) == 1 and "differ" in got["warnings"][0] and got["warnings"][0] in res.stderr
    merged = load_matrix(tmp_path / "m.csv")
    assert (got["agents"], got["tasks"], got["missing"], got["agents_added"], got["tasks_added"]) == (3, 3, 2, 1, 1)
    assert got["digest"] == merged.fill_missing(0).digest() and got["digest_before"] == b1.digest()
    res = run(main, ["bank", "merge", "b1.csv", "b2.csv", "--out", "m2.csv", "--json"])  # a conflict: refused
    assert res.exit_code == 2 and json.loads(res.stdout)["ok"] is False and "differ" in json.loads(res.stdout)["error"]


def test_merge_cli_counts_the_empty_cells_it_filled(tmp_path):
    """A trial: a merge that filled a blank cell reported '0 agent(s) and 0 task(s) more' and nothing else."""
    import json

    (tmp_path / "base.csv").write_text("agent,t1,t2\na,1,\nb,0,1\n")
    (tmp_path / "new.csv").write_text("agent,t1,t2\na,1,0\n")
    args = ["bank", "merge", str(tmp_path / "base.csv"), str(tmp_path / "new.csv"), "--out"]
    res = CliRunner().invoke(main, [*args, str(tmp_path / "m.csv")])
    assert res.exit_code == 0 and "1 of its empty cell(s) filled" in " ".join(res.output.split()), res.output
    res = CliRunner().invoke(main, [*args, str(tmp_path / "m2.csv"), "--json"])
    assert json.loads(res.stdout.strip().splitlines()[-1])["cells_filled"] == 1


def test_merge_note_says_whose_empty_cells_they_are(tmp_path):
    """A new-user trial: merging an agent that ran every task was told to 'merge only agents that ran the whole
    bank', about blanks the base had before."""
    (tmp_path / "base.csv").write_text("agent,t1,t2,t3\na,1,,0\nb,0,1,1\n")
    (tmp_path / "full.csv").write_text("agent,t1,t2,t3\nc,1,0,1\n")
    (tmp_path / "part.csv").write_text("agent,t1,t2,t3\nd,1,,\n")
    args = ["bank", "merge", str(tmp_path / "base.csv")]
    res = CliRunner().invoke(main, [*args, str(tmp_path / "full.csv"), "--out", str(tmp_path / "m.csv")])
    said = " ".join(res.output.split())
    assert res.exit_code == 0 and f"1 cell(s) no one ran stay empty (all of them blank in {tmp_path / 'base.csv'} before)" in said
    assert "merge only agents" not in said
    res = CliRunner().invoke(main, [*args, str(tmp_path / "part.csv"), "--out", str(tmp_path / "m2.csv")])
    said = " ".join(res.output.split())
    assert (f"3 cell(s) no one ran stay empty (2 of them new with {tmp_path / 'part.csv'}: merge only agents that ran "
            f"the whole bank, or run them on the tasks they lack; 1 blank in {tmp_path / 'base.csv'} before)") in said


def test_ids_that_differ_only_in_case_or_invisible_characters_are_warned_about():
    """A hostile trial: 'C' beside 'c', 'b' + zero-width space beside 'b', a task 'T1' beside 't1' and the two Unicode
    spellings of 'café' were merged as other agents and tasks (half-blank rows and columns) with no word."""
    import warnings

    from hspr.errors import InputWarning

    base = ResponseMatrix(["b", "c", "caf\u00e9"], ["t1", "t2"], np.array([[1, 0], [0, 1], [1, 1]]))
    new = ResponseMatrix(["C", "b\u200b", "cafe\u0301", "d"], ["T1", "t2"], np.array([[1, 0], [0, 0], [1, 1], [0, 1]]))
    with pytest.warns(InputWarning) as seen:
        m = merge_banks(base, new)
    said = [str(w.message) for w in seen]
    agents = next(s for s in said if s.startswith("3 agent id(s)"))
    assert "'C' / 'c'" in agents and "'b\\u200b' / 'b'" in agents and "'cafe\\u0301' / 'caf\\xe9'" in agents
    assert any(s.startswith("1 task id(s)") and "'T1' / 't1'" in s for s in said)
    # a hostile trial: 'with the other's cells blank' was said of rows with none
    assert "each is merged as another agent, a row of its own beside the first" in agents
    assert any("each is merged as another task, a column of its own beside the first" in s for s in said)
    assert m.n_agents == 7 and m.n_tasks == 3  # merged as asked, each spelling its own id
    with warnings.catch_warnings():  # ids spelled alike: no warning
        warnings.simplefilter("error", InputWarning)
        merge_banks(base, ResponseMatrix(["c", "d"], ["t1", "t2"], np.array([[0, 1], [1, 1]])))


def test_build_gives_the_warnings_validate_gives(tmp_path):
    """A hostile trial: `bank build` wrote a long CSV with its agent and task columns swapped, and a bank with an
    agent that never ran, without the warnings `bank validate` gives for the same files."""
    swapped = tmp_path / "swapped.csv"
    swapped.write_text("agent,instance_id,resolved\n" + "".join(f"t{k},A,{k % 2}\nt{k},B,1\n" for k in range(6)))
    norun = tmp_path / "norun.csv"
    norun.write_text("agent,t1,t2,t3,t4\nA,1,0,1,0\nB,,,,\nC,0,1,1,0\n")
    for path, said in ((swapped, "more agents (6) than tasks (2)"), (norun, "have no run at all (every cell blank): 'B'")):
        shown = {}
        for cmd in (["bank", "validate", str(path)], ["bank", "build", str(path), "--out", str(tmp_path / f"o_{path.name}")]):
            res = CliRunner().invoke(main, cmd)
            assert res.exit_code == 0 and said in res.output, res.output
            shown[cmd[1]] = [w for w in res.output.splitlines() if w.startswith("warning:")]
        assert shown["build"] == shown["validate"]
    res = CliRunner().invoke(main, ["bank", "build", str(norun), "--out", str(tmp_path / "o_norun.csv"), "--json"])
    assert res.exit_code == 0 and any("no run at all" in w for w in json.loads(res.output.splitlines()[-1])["warnings"])


def test_build_and_merge_refuse_to_replace_a_file_that_is_not_a_bank(tmp_path):
    """A hostile trial: `--out notes.txt` replaced the user's text file without a word."""
    base = tmp_path / "base.csv"
    base.write_text("agent,t1,t2\nA,1,0\nB,0,1\n")
    new = tmp_path / "new.csv"
    new.write_text("agent,t1,t2\nC,1,1\n")
    notes = tmp_path / "notes.txt"
    notes.write_text("precious\n")
    # a hostile trial: a long CSV of the same bank with a column of comments was replaced by a wide CSV, no note
    long = tmp_path / "long.csv"
    long.write_text("agent,instance_id,resolved,comment\nA,t1,1,good run\nA,t2,0,timeout\nB,t1,0,x\nB,t2,1,y\n")
    assert load_matrix(long).digest() == load_matrix(base).digest()
    for cmd in (["bank", "build", str(base)], ["bank", "merge", str(base), str(new)]):
        res = CliRunner().invoke(main, [*cmd, "--out", str(notes)])
        assert res.exit_code == 2 and "notes.txt exists and is not a bank" in res.output
        assert notes.read_text() == "precious\n"
        before = long.read_text()
        res = CliRunner().invoke(main, [*cmd, "--out", str(long)])
        assert res.exit_code == 2 and "long.csv is a bank in another form, a long CSV" in res.output
        assert long.read_text() == before
    # its re-trial: a repeated-trials bank was replaced by a wide CSV, and the other way round, with a note only
    trials = tmp_path / "tr.csv"
    trials.write_text("agent,task_id,successes,trials\nA,t1,1,3\nA,t2,0,3\nB,t1,2,3\nB,t2,3,3\n")
    new_trials = tmp_path / "new_tr.csv"
    new_trials.write_text("agent,task_id,successes,trials\nC,t1,1,3\nC,t2,1,3\n")
    for cmd, kept, said in ((["build", str(base)], trials, "repeated-trials CSV"), (["build", str(trials)], new, "wide CSV"),
                            (["merge", str(trials), str(new_trials)], new, "wide CSV")):
        before = kept.read_bytes()
        res = CliRunner().invoke(main, ["bank", *cmd, "--out", str(kept)])
        assert res.exit_code == 2 and f"holds a bank as a {said}" in res.output and "would replace that form" in res.output
        assert kept.read_bytes() == before
    out = tmp_path / "out.csv"
    assert CliRunner().invoke(main, ["bank", "build", str(base), "--out", str(out)]).exit_code == 0
    res = CliRunner().invoke(main, ["bank", "build", str(base), "--out", str(out)])  # the same bank again: no note
    assert res.exit_code == 0 and "held another bank" not in res.output
    res = CliRunner().invoke(main, ["bank", "merge", str(base), str(new), "--out", str(out)])
    assert res.exit_code == 0 and f"{out} held another bank before (digest {load_matrix(base).digest()})" in res.output
    assert load_matrix(out).agents == ("A", "B", "C")
    merged = load_matrix(out).digest()  # no blank cell: the live-session digest too
    res = CliRunner().invoke(main, ["bank", "build", str(base), "--out", str(out), "--json"])
    assert res.exit_code == 0 and json.loads(res.output.splitlines()[-1])["replaced_digest"] == merged
    # a hostile trial: a table that reads as a bank, with none of the bank's tasks (agents' metadata), was replaced
    # and lost; it is kept beside the bank written (its re-trial: a refusal also stopped a bank whose ids were renamed)
    text = "agent,open_weights,uses_tools\ngpt-x,0,1\nllama-y,1,1\n"
    for k, cmd in enumerate((["build", str(base)], ["merge", str(base), str(new)])):
        meta = tmp_path / f"agents_meta{k}.csv"
        meta.write_text(text)
        res = CliRunner().invoke(main, ["bank", *cmd, "--out", str(meta), "--json"])
        [kept] = list(tmp_path.glob(f"agents_meta{k}.csv.replaced-*.csv"))
        assert res.exit_code == 0 and json.loads(res.output.splitlines()[-1])["kept_copy"] == str(kept)
        assert kept.read_text() == text and load_matrix(meta).agents[0] == "A"
    meta.write_text(text)
    res = CliRunner().invoke(main, ["bank", "build", str(base), "--out", str(meta)])
    assert res.exit_code == 0 and "held a table of 2 row(s) and 2 column(s) ('open_weights', 'uses_tools'), none of " \
        "them this bank's tasks" in " ".join(res.output.split()) and "held another bank" not in res.output
    assert len(list(tmp_path.glob("agents_meta1.csv.replaced-*.csv"))) == 2
    # its re-trial: a write that fails after the copy (a read-only --out) left the copy behind, unsaid
    import errno

    import hspr.cli.bank

    def refused(*args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied")

    meta.write_text(text)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(hspr.cli.bank, "write_wide_csv", refused)
        res = CliRunner().invoke(main, ["bank", "build", str(base), "--out", str(meta)])
    assert res.exit_code == 2 and "cannot write" in res.output and meta.read_text() == text
    assert len(list(tmp_path.glob("agents_meta1.csv.replaced-*.csv"))) == 2  # no third copy
    # a re-trial: the same bank with blank cells where the earlier file had 0s was replaced without a note
    zeros, blanks = tmp_path / "zeros.csv", tmp_path / "blanks.csv"
    zeros.write_text("agent,t1,t2\nA,1,0\nB,0,1\n")
    blanks.write_text("agent,t1,t2\nA,1,\nB,0,1\n")
    res = CliRunner().invoke(main, ["bank", "build", str(blanks), "--out", str(zeros)])
    assert res.exit_code == 0 and "held another bank before" in res.output
    # a re-trial: the header-less matrix.csv of a bank folder was overwritten with a wide CSV
    folder = tmp_path / "bf"
    assert CliRunner().invoke(main, ["bank", "build", str(base), "--out", str(tmp_path / "w.csv")]).exit_code == 0
    folder.mkdir()
    (folder / "matrix.csv").write_text("1,0\n0,1\n")
    (folder / "metadata.json").write_text(json.dumps({"agents": ["A", "B"], "instance_ids": ["t1", "t2"]}))
    assert CliRunner().invoke(main, ["bank", "validate", str(folder)]).exit_code == 0
    res = CliRunner().invoke(main, ["bank", "build", str(new), "--out", str(folder / "matrix.csv")])
    assert res.exit_code == 2 and "is the matrix of the bank folder" in " ".join(res.output.split())
    assert (folder / "matrix.csv").read_text() == "1,0\n0,1\n"


def test_an_unwritable_out_names_the_fix_and_merge_prints_whole_digests(tmp_path, monkeypatch):
    """A hostile trial: 'cannot write ro.csv: Permission denied' gave no fix, and merge printed 16-character
    digests where build, validate and live status print 64."""
    import errno

    import hspr.cli.bank as bank_cli

    base = tmp_path / "base.csv"
    base.write_text("agent,t1,t2\nA,1,0\nB,0,1\n")
    new = tmp_path / "new.csv"
    new.write_text("agent,t1,t2\nC,1,1\n")
    res = CliRunner().invoke(main, ["bank", "merge", str(base), str(new), "--out", str(tmp_path / "m.csv")])
    before, after = (load_matrix(base).digest(), load_matrix(tmp_path / "m.csv").digest())
    assert res.exit_code == 0 and f"digest {before} -> {after}" in " ".join(res.output.split())

    def refuse(*a, **k):
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(bank_cli, "write_wide_csv", refuse)
    res = CliRunner().invoke(main, ["bank", "build", str(base), "--out", str(tmp_path / "o.csv")])
    assert res.exit_code == 2 and "Permission denied. Fix the file's permissions, or give another --out" in res.output


def test_merge_warns_of_the_merged_bank_not_of_its_inputs(tmp_path):
    """A hostile trial: a task of BASE that no agent ran was said to lower every score though NEW's agents ran it in
    the merged bank, and a copy of an agent that only the merged bank holds got no word (validate gave one)."""
    base = tmp_path / "base.csv"
    base.write_text("agent,t1,t2,t3\na,1,0,\nb,0,1,\n")  # t3: no agent of BASE ran it
    new = tmp_path / "new.csv"
    new.write_text("agent,t1,t2,t3\nc,1,1,0\nd,0,0,1\n")
    res = CliRunner().invoke(main, ["bank", "merge", str(base), str(new), "--out", str(tmp_path / "m.csv")])
    assert res.exit_code == 0 and "no agent ran" not in res.output, res.output
    grid = np.array([[k % 2, (k // 2) % 2, k % 3 == 0] for k in range(60)], dtype=int).T  # 3 agents x 60 tasks
    tasks = [f"t{k}" for k in range(60)]
    write_wide_csv(ResponseMatrix(["a", "b", "c"], tasks, grid), tmp_path / "b60.csv")
    write_wide_csv(ResponseMatrix(["a_copy"], tasks, grid[:1]), tmp_path / "n60.csv")
    res = CliRunner().invoke(main, ["bank", "merge", str(tmp_path / "b60.csv"), str(tmp_path / "n60.csv"), "--out",
                                    str(tmp_path / "m60.csv")])
    said = " ".join(res.output.split())
    assert res.exit_code == 0 and "m60.csv: 1 group(s) of agents with the same outcome on every one of the 60 tasks " \
        "('a' = 'a_copy')" in said, said


def test_an_interrupt_after_the_bank_is_written_says_so(tmp_path, monkeypatch):
    """A signals trial: a merge interrupted just after it replaced --out said only 'interrupted', and the user would
    merge again."""
    import hspr.cli.bank as cli_bank

    (tmp_path / "base.csv").write_text("agent,t1,t2\na,1,0\nb,0,1\n")
    (tmp_path / "new.csv").write_text("agent,t1,t2\nc,1,1\n")
    original = cli_bank.note_saved

    def note_then_interrupt(*args):
        original(*args)
        raise KeyboardInterrupt

    monkeypatch.setattr(cli_bank, "note_saved", note_then_interrupt)
    res = CliRunner().invoke(main, ["bank", "merge", str(tmp_path / "base.csv"), str(tmp_path / "new.csv"), "--out",
                                    str(tmp_path / "base.csv")])
    assert res.exit_code == 130
    assert res.stderr.strip() == f"interrupted after the change was saved: {tmp_path / 'base.csv'} is written (3 agents x 2 tasks)"
    assert load_matrix(tmp_path / "base.csv").n_agents == 3
