"""Readers of every supported form, their error messages, write_wide_csv and the bank CLI."""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import click
import numpy as np
import pytest
from click.testing import CliRunner

from hspr.cli.bank import register
from hspr.data.build import write_wide_csv
from hspr.data.io import (
    detect_form,
    load_matrix,
    read_jsonl,
    read_leaderboard,
    read_long_csv,
    read_task_list,
    read_wide_csv,
)
from hspr.data.matrix import DataError, ResponseMatrix
from hspr.errors import HsprError, InputWarning

# The matrix every fixture encodes: 3 agents x 4 tasks, two missing cells (-1).
AGENTS = ["a1", "a2", "a3"]
TASKS = ["t1", "t2", "t3", "t4"]
GRID = np.array([[1, 0, -1, 1], [0, 0, 1, 1], [1, -1, 0, 0]])


def assert_matrix(m: ResponseMatrix, grid: np.ndarray = GRID, agents=AGENTS, tasks=TASKS) -> None:
    assert list(m.agents) == agents
    assert list(m.tasks) == tasks
    np.testing.assert_array_equal(m.values, np.where(grid < 0, 0, grid))
    miss = grid < 0
    if miss.any():
        np.testing.assert_array_equal(m.missing, miss)
    else:
        assert m.missing is None


def reorder(tasks: list[str]) -> dict:
    """assert_matrix arguments for GRID with its columns in the order ``tasks``."""
    return {"grid": GRID[:, [TASKS.index(t) for t in tasks]], "tasks": tasks}


FIRST_SEEN = ["t1", "t2", "t4", "t3"]  # long CSV / JSONL columns follow first appearance


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def assert_error(path, *fragments: str, reader=load_matrix) -> str:
    """The reader raises DataError whose message contains every fragment."""
    with pytest.raises(DataError) as info:
        reader(path)
    msg = str(info.value)
    for frag in fragments:
        assert frag in msg, f"{frag!r} not in {msg!r}"
    return msg


# ---------------------------------------------------------------------- fixtures per form
WIDE = "agent,t1,t2,t3,t4\na1,1,0,,1\na2,0,0,1,1\na3,true,,False,0.0\n"
LONG = (
    "agent,instance_id,resolved\n"
    "a1,t1,1\na1,t2,0\na1,t4,true\n"
    "a2,t1,0\na2,t2,0\na2,t3,1\na2,t4,1\n"
    "a3,t1,1\na3,t3,0\na3,t4,false\n"
    "a1,t1,1\n"  # consistent repeat: merged
)


def jsonl_text() -> str:
    rows = [
        {"subject_id": "a1", "responses": {"t1": 1, "t2": 0, "t4": 1}},
        {"subject_id": "a2", "responses": {"t1": 0, "t2": 0, "t3": 1, "t4": 1}},
        {"subject_id": "a3", "responses": {"t1": True, "t3": 0, "t4": 0.0, "t2": None}},
    ]
    return "\n".join(json.dumps(r) for r in rows) + "\n\n"


def make_bank_dir(folder: Path, grid=None, agents=None, ids=None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    grid = np.array([[1, 0, 0, 1], [0, 0, 1, 1], [1, 0, 0, 0]]) if grid is None else grid
    agents = agents if agents is not None else [{"folder": "a1", "name": "A one"}, {"name": "a2"}, {"folder": "a3"}]
    ids = ids if ids is not None else TASKS
    meta = {"instance_ids": ids, "agents": agents, "n_agents": len(agents)}
    write(folder / "metadata.json", json.dumps(meta))
    write(folder / "matrix.csv", "\n".join(",".join(f"{float(v):.1f}" for v in row) for row in grid) + "\n")
    return folder


def make_leaderboard(root: Path, split: str = "verified", extra: dict | None = None) -> Path:
    subs = {
        "20240101_alpha": {"resolved": ["t1", "t4"], "no_generation": ["t3"]},
        "20240202_beta": {"resolved": ["t3", "t4"], "no_logs": [], "applied": ["t2", "t3", "t4"]},
        "20240303_gamma": {"resolved": ["t1"], "generated": ["t1", "t2", "t5"]},
    }
    subs.update(extra or {})
    for name, res in subs.items():
        d = root / "evaluation" / split / name / "results"
        d.mkdir(parents=True)
        write(d / "results.json", json.dumps(res, indent=2))
    return root


LB_AGENTS = ["20240101_alpha", "20240202_beta", "20240303_gamma"]
LB_GRID = np.array([[1, 0, 0, 1, 0], [0, 0, 1, 1, 0], [1, 0, 0, 0, 0]])


# ---------------------------------------------------------------------- readers: good files
def test_wide_csv(tmp_path):
    p = write(tmp_path / "m.csv", WIDE)
    assert detect_form(p) == "wide_csv"
    m = load_matrix(p)
    assert_matrix(m)
    assert m.source == str(p)


def test_wide_csv_plain_cells_read_as_the_general_parser(tmp_path):
    """Plain 0/1 cells take a fast path; the same matrix spelled otherwise takes the general one."""
    rng = np.random.default_rng(3)
    grid = rng.integers(0, 2, size=(7, 11))
    head = "agent," + ",".join(f"t{j}" for j in range(11)) + "\n"
    plain = head + "".join(f"a{i}," + ",".join(map(str, row)) + "\n" for i, row in enumerate(grid))
    spelled = head + "".join(f"a{i}," + ",".join(" TRUE" if v else "false " for v in row) + "\n"
                             for i, row in enumerate(grid))
    a, b = read_wide_csv(write(tmp_path / "a.csv", plain)), read_wide_csv(write(tmp_path / "b.csv", spelled))
    assert a.values.dtype == b.values.dtype == np.int8
    np.testing.assert_array_equal(a.values, grid)
    np.testing.assert_array_equal(b.values, grid)
    assert a.missing is None and b.missing is None and a.digest() == b.digest()


def test_long_csv(tmp_path):
    p = write(tmp_path / "runs.csv", LONG)
    assert detect_form(p) == "long_csv"
    with pytest.warns(InputWarning, match="repeat an earlier"):  # LONG's last line repeats its first
        assert_matrix(read_long_csv(p), **reorder(FIRST_SEEN))  # the reader keeps first-seen order
    with pytest.warns(InputWarning, match="repeat an earlier"):
        assert_matrix(load_matrix(p))  # the loader sorts agents and tasks by id (canonical order)


def test_long_csv_extra_columns_and_order(tmp_path):
    text = "resolved,model_note,instance_id,agent\n1,x,t2,b\n0,y,t1,a\n"
    with pytest.warns(InputWarning, match="no task separates any two agents"):  # each task ran by one agent
        m = load_matrix(write(tmp_path / "runs.csv", text))
    assert_matrix(m, np.array([[0, -1], [-1, 1]]), agents=["a", "b"], tasks=["t1", "t2"])


def test_a_long_csv_with_both_task_columns_says_which_it_reads(tmp_path):
    """A re-trial: 'agent,instance_id,task_id,resolved' was read from instance_id without a word."""
    text = "agent,instance_id,task_id,resolved\na,t1,x9,1\na,t2,x8,0\nb,t1,x9,0\nb,t2,x8,1\n"
    with pytest.warns(InputWarning, match="has both 'instance_id' and 'task_id'; the task ids are read from 'instance_id'"):
        m = read_long_csv(write(tmp_path / "runs.csv", text))
    assert list(m.tasks) == ["t1", "t2"]


def test_jsonl(tmp_path):
    p = write(tmp_path / "responses.jsonl", jsonl_text())
    assert detect_form(p) == "jsonl"
    assert_matrix(load_matrix(p))


def test_jsonl_detected_by_content(tmp_path):
    p = write(tmp_path / "responses.txt", jsonl_text())
    assert_matrix(load_matrix(p))


def test_bank_dir(tmp_path):
    folder = make_bank_dir(tmp_path / "swe_lite_summary")
    grid = np.array([[1, 0, 0, 1], [0, 0, 1, 1], [1, 0, 0, 0]])
    assert detect_form(folder) == "bank_dir"
    assert_matrix(load_matrix(folder), grid)
    assert_matrix(load_matrix(folder / "matrix.csv"), grid)  # the file itself, too


def test_data_root_points_to_bank_folders(tmp_path):
    make_bank_dir(tmp_path / "data" / "swe_lite_summary")
    make_bank_dir(tmp_path / "data" / "swe_pro_summary")
    assert_error(tmp_path / "data", "swe_lite_summary", "swe_pro_summary", "pass one of them")


def test_leaderboard_union_universe(tmp_path):
    root = make_leaderboard(tmp_path / "experiments")
    with pytest.warns(UserWarning, match="has 5 ids but SWE-bench verified has 500"):
        m = read_leaderboard(root, "verified")
    assert_matrix(m, LB_GRID, agents=LB_AGENTS, tasks=["t1", "t2", "t3", "t4", "t5"])
    assert detect_form(root) == "leaderboard"


def test_leaderboard_task_file_extends_columns_sorted_in_any_order(tmp_path):
    """A trial: the task file's order was kept, so the built digest differed from the written file's."""
    root = make_leaderboard(tmp_path / "experiments", split="lite")
    ids = write(tmp_path / "ids.txt", "t4\nt1\n\nt3\nt2\nt5\nt6\n")
    m = read_leaderboard(root, "lite", ids)
    assert_matrix(m, np.hstack([LB_GRID, np.zeros((3, 1), int)]), agents=LB_AGENTS,
                  tasks=["t1", "t2", "t3", "t4", "t5", "t6"])
    plain = write(tmp_path / "plain.txt", "t1\nt2\nt3\nt4\nt5\nt6\n")
    assert read_leaderboard(root, "lite", plain).digest() == m.digest()
    # a one-column CSV's header line is not a task
    header = write(tmp_path / "hdr.csv", "instance_id\nt4\nt1\nt3\nt2\nt5\nt6\n")
    assert read_task_list(header) == ["t4", "t1", "t3", "t2", "t5", "t6"]
    assert read_leaderboard(root, "lite", header).digest() == m.digest()
    # the header of a wide CSV works as a task list too
    wide = write(tmp_path / "ref.csv", "agent,t4,t1,t3,t2,t5,t6\nx,1,1,1,1,1,1\n")
    assert read_task_list(wide) == ["t4", "t1", "t3", "t2", "t5", "t6"]


def test_leaderboard_names_ids_beyond_the_split_size_and_refuses_a_null_resolved(tmp_path, monkeypatch):
    from hspr.data import io

    monkeypatch.setattr(io, "SPLIT_SIZES", {**io.SPLIT_SIZES, "mysplit": 4})
    root = make_leaderboard(tmp_path / "experiments", split="mysplit")
    with pytest.warns(UserWarning, match=r"has 5 ids but SWE-bench mysplit has 4: some ids are not tasks of the split "
                                         r"\(a typo\?\); 1 id\(s\) only one submission mentions: 't5' \(20240303_gamma\)"):
        read_leaderboard(root, "mysplit")
    bad = make_leaderboard(tmp_path / "b", extra={"20240404_null": {"resolved": None}})
    assert_error(bad, "20240404_null", "'resolved' must be a list of instance ids, got null",
                 reader=lambda p: read_leaderboard(p, "verified"))


def test_a_leaderboard_folder_inside_the_checkout_names_the_checkout(tmp_path):
    root = make_leaderboard(tmp_path / "experiments", split="lite")
    assert_error(root / "evaluation" / "lite", f"pass the checkout itself: {root.resolve()} --split lite")
    assert_error(root / "evaluation", f"pass the checkout itself: {root.resolve()} (with --split NAME)")


def test_cli_bank_build_names_the_split_folder_it_read(tmp_path):
    from hspr.cli import main

    root = make_leaderboard(tmp_path / "experiments", split="lite")
    make_leaderboard(root, split="verified")
    res = CliRunner().invoke(main, ["bank", "build", str(root), "--out", str(tmp_path / "b.csv"), "--json"])
    assert res.exit_code == 0, res.output
    got = json.loads(res.stdout.strip().splitlines()[-1])
    assert got["built_from"] == str(root / "evaluation" / "verified")


def test_a_checkout_s_look_alike_ids_are_warned_about_once(tmp_path):
    """A hostile trial: a checkout whose submissions spell one task two ways was warned about twice, once of the
    split folder (by read_leaderboard) and once of the checkout (by load_matrix); the universe's warning named
    'results.json files' where one was a per_instance_details.json."""
    import warnings

    from hspr.data.io import load_matrix_and_form, read_leaderboard

    root = make_leaderboard(tmp_path / "experiments", extra={"20240404_delta": {"resolved": ["T1"]}})
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        m, form = load_matrix_and_form(root)
    alike = [str(w.message) for w in got if "differ only in case" in str(w.message)]
    assert form == "leaderboard" and m.n_agents == 4 and len(alike) == 1 and alike[0].startswith(f"{root}: ")
    assert any("(union of ids in 4 submissions' result files)" in str(w.message) for w in got)
    with warnings.catch_warnings(record=True) as got:  # the reader alone still warns of it, for a direct caller
        warnings.simplefilter("always")
        read_leaderboard(root, None)
    assert sum("differ only in case" in str(w.message) for w in got) == 1


def test_suspect_banks_are_warned_about(tmp_path):
    """A trial of bank building: a blank task column, a task id with a zero-width space and an agent
    copied under another name each built a wrong bank without a word."""
    rng = np.random.default_rng(0)
    grid = rng.integers(0, 2, size=(4, 60))
    tasks = [f"t{j}" for j in range(60)]
    rows = [",".join(["agent", *tasks])] + [",".join([f"a{i}", *map(str, r)]) for i, r in enumerate(grid)]
    rows.append(",".join(["a_copy", *map(str, grid[1])]))
    good = write(tmp_path / "good.csv", "\n".join(rows[:-1]) + "\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error", InputWarning)
        load_matrix(good)  # a clean bank: no warning
    copy = write(tmp_path / "copy.csv", "\n".join(rows) + "\n")
    with pytest.warns(InputWarning, match=r"1 group\(s\) of agents with the same outcome on every one of the 60 tasks "
                                          r"\('a1' = 'a_copy'\)"):
        load_matrix(copy)
    blank = write(tmp_path / "blank.csv", "agent,t1,t2,ghost\na,1,0,\nb,0,1,\n")
    with pytest.warns(InputWarning, match=r"1 task\(s\) no agent ran, every cell blank \('ghost'\)"):
        load_matrix(blank)
    zw = write(tmp_path / "long.csv", "agent,instance_id,resolved\na,t1,1\na,t2,0\nb,t1,0\nb,t2\u200b,1\n")
    with pytest.warns(InputWarning, match=r"task ids differ only in case, white space or invisible characters "
                                          r"\('t2' / 't2\\u200b'\)"), \
            pytest.warns(InputWarning, match=r"1 task id\(s\) hold an invisible character \('t2\\u200b'\)"):
        load_matrix(zw)
    # a hostile trial: one line for 'agent_00' and the rest for 'Agent_00' validated OK (agent_00 would score 0)
    cased = write(tmp_path / "cased.csv", "agent,instance_id,resolved\nAgent_00,t1,1\nagent_00,t2,0\nb,t1,0\nb,t2,1\n")
    with pytest.warns(InputWarning, match=r"1 group\(s\) of agent ids differ only in case, white space or invisible "
                                          r"characters \('Agent_00' / 'agent_00'\): one agent spelled two ways splits its "
                                          r"runs over two rows"):
        load_matrix(cased)
    cyr = write(tmp_path / "cyr.csv", "agent,instance_id,resolved\na,django-1,1\nb,django-1,0\nb,dj\u0430ngo-1,0\n")
    with pytest.warns(InputWarning, match=r"1 task id\(s\) mix letters of several alphabets \('dj\\u0430ngo-1' "
                                          r"\(Cyrillic \+ Latin\)\)"):
        load_matrix(cyr)
    # a hostile trial: one id with a zero-width space and no twin validated OK; `live record` could not find it
    hid = write(tmp_path / "hid.csv", "agent,instance_id,resolved\na,t1,1\na,\u0437\u0430\u0434\u200b,0\nb,t1,0\n")
    with pytest.warns(InputWarning, match=r"1 task id\(s\) hold an invisible character \('\u0437\u0430\u0434\\u200b'\)"):
        load_matrix(hid)


@pytest.mark.filterwarnings("ignore:.*the task universe")  # a 5-task toy split: its size warning is not the point
def test_a_results_json_that_contradicts_itself_is_warned_about(tmp_path):
    root = make_leaderboard(tmp_path / "experiments", extra={"20240404_odd": {"resolved": ["t1", "t2"],
                                                                             "no_generation": ["t2"]}})
    with pytest.warns(InputWarning, match=r"20240404_odd/results/results.json: resolved id\(s\) the file also lists as "
                                          r"not run: 1 also in 'no_generation' \('t2'\); counted as resolved"):
        m = read_leaderboard(root, "verified")
    assert m.values[m.agent_index("20240404_odd"), m.task_index("t2")] == 1


def test_leaderboard_skips_folders_without_results(tmp_path):
    root = make_leaderboard(tmp_path / "experiments", split="mysplit")
    (root / "evaluation" / "mysplit" / "20240404_empty").mkdir()
    with pytest.warns(UserWarning, match="20240404_empty"):
        m = read_leaderboard(root, None)
    assert list(m.agents) == LB_AGENTS


def test_leaderboard_reads_per_instance_details_where_results_json_is_absent(tmp_path):
    """A harness trial: the mini-SWE-agent baselines of the experiments repository give
    per_instance_details.json and no results/results.json, and were skipped (47 of 180 Verified entries)."""
    root = make_leaderboard(tmp_path / "experiments", split="mysplit")
    mini = root / "evaluation" / "mysplit" / "20260217_mini-v2.0.0_x"
    mini.mkdir()
    write(mini / "per_instance_details.json", json.dumps(
        {"t2": {"cost": 0.7, "api_calls": 32, "resolved": True}, "t5": {"cost": 0.1, "api_calls": 3, "resolved": False},
         "t6": {"resolved": True}}))
    m = read_leaderboard(root, None)  # t6: a task only this submission names
    assert list(m.agents) == [*LB_AGENTS, "20260217_mini-v2.0.0_x"] and list(m.tasks) == [f"t{i}" for i in range(1, 7)]
    assert m.values[-1].tolist() == [0, 1, 0, 0, 0, 1] and m.values[0].tolist() == [1, 0, 0, 1, 0, 0]
    write(mini / "per_instance_details.json", json.dumps({"t2": {"resolved": "yes"}}))
    with pytest.raises(DataError, match=r"per_instance_details.json: instance 't2': expected an object with "
                                        r"\"resolved\": true or false, got \{'resolved': 'yes'\}"):
        read_leaderboard(root, None)


def test_leaderboard_errors(tmp_path):
    root = make_leaderboard(tmp_path / "experiments", split="lite")
    assert_error(root, "no split 'verified'", "lite", reader=lambda p: read_leaderboard(p, "verified"))
    ids = write(tmp_path / "ids.txt", "t1\nt2\n")
    assert_error(root, "20240101_alpha", "results.json", "'t4'", "--tasks",
                 reader=lambda p: read_leaderboard(p, "lite", ids))
    dup = write(tmp_path / "dup.txt", "t1\nt2\nt1\n")
    assert_error(dup, str(dup), "duplicate task id 't1'", "line 1 and line 3", reader=read_task_list)
    assert_error(tmp_path, str(tmp_path), "not a regular file", reader=read_task_list)  # a folder, or /dev/null
    assert_error(tmp_path / "nope.txt", "no such task list file", reader=read_task_list)
    bad = root / "evaluation" / "lite" / "20240101_alpha" / "results" / "results.json"
    write(bad, '{"resolved": ["t1",\n "t2"')
    assert_error(root, str(bad), "line 2", "invalid JSON", reader=lambda p: read_leaderboard(p, "lite"))
    write(bad, '{"resolved": ["t1", 7]}')
    assert_error(root, str(bad), "'resolved'[1]", reader=lambda p: read_leaderboard(p, "lite"))
    write(bad, '{"no_generation": ["t1"]}')
    assert_error(root, str(bad), "'resolved' list", reader=lambda p: read_leaderboard(p, "lite"))
    assert_error(tmp_path, "unknown folder layout")


# ---------------------------------------------------------------------- readers: bad files
BAD_WIDE = [
    ("agent,t1,t2\na1,1,2\n", ["line 2, column 3", "'a1'", "'t2'", "non-binary value '2'"]),
    ("agent,t1,t2\na1,1,0\na2,0,maybe\n", ["line 3, column 3", "'maybe'", "yes/no"]),
    ("agent,t1,t2\na1,1,0\na2,0,1\na1,1,1\n", ["duplicate agent id 'a1'", "line 2 and line 4"]),
    ("agent,t1,t2,t1\na1,1,0,1\n", ["duplicate task id 't1'", "column 2 and column 4"]),
    ("agent,t1,t2\na1,1,0\na2,0\n", ["line 3", "'a2'", "2 fields", "header has 3"]),
    ("agent,t1,t2\na1,1,0,1\n", ["line 2", "4 fields"]),
    ("agent,t1,t2\n", ["no agent rows", "empty"]),
    ("agent,t1,,t3\na1,1,0,1\n", ["column 3", "empty task id"]),
    ("agent,t1\n,1\n", ["line 2", "empty agent id"]),
    ("agent\na1\n", ["header has 1 column"]),
    ("1,0,1\n0,0,1\n", ["line 1 has no header", "metadata.json"]),
    # as many characters as a plain 0/1 row ("10" and an empty cell): not read as 1, 0, 0
    ("agent,t1,t2,t3\na1,10,,0\n", ["line 2, column 2", "non-binary value '10'"]),
    # a NUL would vanish in numpy's text arrays ('1\0' read as 1): refused, naming its line
    ("agent,t1,t2\na1,1,0\na2,1\0,1\n", ["line 3", "NUL character", "damaged or not a CSV"]),
    # ... counting every line end csv knows (a re-trial: '\r' ones were not, and the NUL of line 5 was on 'line 1')
    ("agent,t1,t2\r\ra1,1,0\ra2,0\ra3,1,\x001\r", ["line 5", "NUL character"]),
    # a header with an empty tail names how many of its fields hold a name (a re-trial: 'the header has 4' of 3)
    ("agent,t1,t2,\na1,1\n", ["line 2", "2 fields, the header has 4 (3 named)"]),
    # UTF-16 without its byte-order mark, read as UTF-8 (a hostile trial: only "damaged or not a CSV text file")
    ("".join(c + "\0" for c in "agent,t1\na1,1\n"), ["line 1", "UTF-16 text without its byte-order mark", "UTF-8"]),
    ("".join("\0" + c for c in "agent,t1\na1,1\n"), ["line 1", "UTF-16 text without its byte-order mark"]),
    # a quote never closed would swallow the rest of the file into one cell
    ("agent,t1,t2\na1,1,0\na2,0,\"1\na3,1,1\n", ["line 3", "malformed CSV", "quote"]),
    ("agent,t1,t2\na1,\"1\"0,1\n", ["line 2", "malformed CSV"]),
]


@pytest.mark.parametrize("text,fragments", BAD_WIDE)
def test_wide_csv_errors(tmp_path, text, fragments):
    p = write(tmp_path / "bad.csv", text)
    assert_error(p, str(p), *fragments)


def test_empty_files(tmp_path):
    for name in ("empty.csv", "empty.jsonl", "empty.txt"):
        p = write(tmp_path / name, "\n  \n")
        assert_error(p, str(p), "empty")
    assert_error(tmp_path / "nope.csv", "no such file")


BAD_LONG = [
    ("agent,instance_id,resolved\na1,t1,1\na2,t1,0\na1,t1,0\n",
     ["conflicting outcomes", "agent 'a1'", "instance_id 't1'", "line 2 says 1", "line 4 says 0",
      # a re-trial: one line per trial got no word of the repeated-trials form
      "if the lines are trials of one task, count them into the form 'agent,task_id,successes,trials'"]),
    ("agent,instance_id,resolved\na1,t1,1\na1,t2,maybe\n", ["line 3", "non-binary value 'maybe'", "'t2'",
                                                         "a run that did not happen has no line"]),
    ("agent,instance_id,resolved\na1,t1,1\na1,t2,\n", ["line 3", "empty resolved value", "drop the line"]),
    # a re-trial: the later of two bad lines was named
    ("agent,instance_id,resolved\na1,t1,1\na1,t2,2\na1,t3,\n", ["line 3", "non-binary value '2'"]),
    ("agent,instance_id,resolved\na1,t1,1\n,t2,1\n", ["line 3", "empty agent"]),
    ("agent,instance_id,resolved\na1,t1,1,9\n", ["line 2", "4 fields"]),
    ("agent,instance_id,resolved\n", ["no data lines", "empty"]),
    # a hostile trial: the first of two 'resolved' (or 'agent', 'instance_id') columns was read, with no word
    ("agent,instance_id,resolved,Resolved\na1,t1,1,0\n", ["line 1", "names column 'resolved' 2 times (columns 3, 4)"]),
    ("agent,agent,instance_id,resolved\na1,a2,t1,1\n", ["names column 'agent' 2 times (columns 1, 2)"]),
    # a hostile trial: read as a wide CSV, it failed on "duplicate agent id 'a1'" alone; a wide CSV with such a
    # header and one row per agent is still read (a re-trial)
    ("agent,instance_id\na1,t1\na1,t2\n", ["duplicate agent id 'a1'", "but no 'resolved' column",
                                           "'agent,instance_id,resolved', 1 resolved"]),
    ("agent,task_id,score\na1,t1,1\na1,t2,0\n", ["'agent,task_id,resolved' (rename 'score' if it holds the outcomes)"]),
    ("agent,instance_id,score,cost\na1,t1,1,3\na1,t2,0,4\n", ["but no 'resolved' column"]),
    # a new-user trial: the missing trials column came after "duplicate agent id"; it is now the message
    ("agent,task_id,successes\na1,t1,1\na1,t2,0\n", ["line 1: the header has successes but lacks column(s) trials; "
                                                     "a repeated-trials CSV needs 'agent,task_id,successes,trials'"]),
    ("agent,successes,trials\na1,1,5\n", ["has successes and trials but lacks column(s) task_id (or instance_id)"]),
]


@pytest.mark.parametrize("text,fragments", BAD_LONG)
def test_long_csv_errors(tmp_path, text, fragments):
    p = write(tmp_path / "runs.csv", text)
    assert_error(p, str(p), *fragments)


BAD_JSONL = [
    ('{"subject_id": "a1", "responses": {"t1": 1}}\n{"subject_id": "a2", "responses": {"t1": 1,}\n',
     ["line 2", "invalid JSON"]),
    ('{"subject_id": "a1", "responses": {"t1": 2}}\n', ["line 1", "subject 'a1'", "task 't1'", "non-binary response 2"]),
    ('{"subject_id": "a1", "responses": {"t1": 1}}\n\n{"subject_id": "a2", "responses": {"t1": "maybe"}}\n',
     ["line 3", "subject 'a2'", "'maybe'"]),
    ('{"subject_id": "a1", "responses": {"t1": 1}}\n{"subject_id": "a1", "responses": {"t1": 0}}\n',
     ["duplicate subject id 'a1'", "line 1 and line 2"]),
    ('{"subject_id": "a1", "responses": [1, 0]}\n', ["line 1", "not a subject record: its 'responses' is an array"]),
    # a hostile trial: each of these was told only 'not a subject record'
    ('[{"subject_id": "a1"}]\n', ["line 1", "not a subject record: an array, not an object"]),
    ('{"subject_id": "a1", "responses": null}\n', ["line 1", "its 'responses' is null, not an object"]),
    ('{}\n', ["line 1", "not a subject record: an empty object"]),
    ('{"subject_id": null, "responses": {"t1": 1}}\n', ["line 1", "subject_id must be a string, got null"]),
    ('{"subject_id": true, "responses": {"t1": 1}}\n', ["line 1", "subject_id must be a string, got true"]),
    # its re-trial: a line lacking only its subject_id was called a whole object of agents
    ('{"responses": {"t1": 1}}\n', ["line 1", "no 'subject_id' key (its keys: responses)"]),
    ('{"subject_id": "a1", "responses": {"t1": 1}}\n{"subject": "a2", "responses": {"t1": 1}}\n',
     ["line 2", "no 'subject_id' key (its keys: subject, responses)"]),
    ('{"subject_id": "a1"}\n', ["line 1", "no 'responses' key"]),
    ('{"a1": {"t1": 1}, "a2": {"t1": 0}}\n', ["line 1", "an object of agents {agent: {task: 0/1}}: write one line per agent"]),
    ('{"subject_id": "a1", "responses": {}}\n', ["no subject has any response"]),
    # a hostile trial: a pretty-printed hspr output given as a matrix was told 'line 1, column 2: invalid JSON'
    ('{\n  "hspr_version": "0.1.0",\n  "runs": []\n}\n', ["an `hspr replay` results file, not a response matrix",
                                                          "per line"]),
    ('{"hspr_version": "0.1.0", "runs": []}\n', ["an `hspr replay` results file, not a response matrix"]),  # compact
    ('{\n  "config": {},\n  "stages": []\n}\n', ["an `hspr select` result, not a response matrix"]),
    ('{\n  "gamma": 4\n}\n', ["one JSON document over several lines, not a response matrix"]),
    ('{\n  "gamma": 4,\n}\n', ["line 1, column 2: invalid JSON"]),  # not JSON at all: line by line, as before
]


@pytest.mark.parametrize("text,fragments", BAD_JSONL)
def test_jsonl_errors(tmp_path, text, fragments):
    p = write(tmp_path / "r.jsonl", text)
    assert_error(p, str(p), *fragments)


def test_bank_dir_errors(tmp_path):
    f = make_bank_dir(tmp_path / "rows", grid=np.ones((2, 4), int))
    assert_error(f, "lists 3 agents", "matrix.csv has 2 rows")
    f = make_bank_dir(tmp_path / "cols", ids=TASKS + ["t5"])
    assert_error(f, "lists 5 instance_ids", "matrix.csv has 4 columns")
    f = make_bank_dir(tmp_path / "dupagent", agents=[{"folder": "x"}, {"name": "y"}, {"folder": "x", "name": "z"}])
    assert_error(f, "metadata.json", "duplicate agent id 'x'", "agents[0] and agents[2]")
    f = make_bank_dir(tmp_path / "duptask", ids=["t1", "t2", "t1", "t4"])
    assert_error(f, "metadata.json", "duplicate task id 't1'", "instance_ids[0] and instance_ids[2]")
    f = make_bank_dir(tmp_path / "noid", agents=[{"folder": "a"}, {"other": 1}, {"name": "c"}])
    assert_error(f, "agents[1]", "neither a 'folder' nor a 'name'")
    f = make_bank_dir(tmp_path / "value")
    write(f / "matrix.csv", "1,0,0,1\n0,0,1,1\n1,0,3,0\n")
    assert_error(f, str(f / "matrix.csv"), "line 3, column 3", "'a3'", "'t3'", "non-binary value '3'")
    write(f / "matrix.csv", "1,0,0,1\n0,0,1\n1,0,0,0\n")
    assert_error(f, "line 2", "3 fields")
    write(f / "metadata.json", '{"instance_ids": ["t1"], ')
    assert_error(f, str(f / "metadata.json"), "invalid JSON")
    (f / "metadata.json").unlink()
    assert_error(f / "matrix.csv", "line 1 has no header")


# ---------------------------------------------------------------------- build + write
def test_load_matrix_dispatch_with_split_and_tasks(tmp_path):
    p = write(tmp_path / "m.csv", WIDE)
    assert_matrix(load_matrix(p))
    assert_error(p, "only to a SWE-bench/experiments checkout", reader=lambda q: load_matrix(q, split="lite"))
    root = make_leaderboard(tmp_path / "exp", split="lite")
    ids = write(tmp_path / "ids.txt", "t1\nt2\nt3\nt4\nt5\n")
    assert_matrix(load_matrix(root, split="lite", tasks=ids), LB_GRID, agents=LB_AGENTS, tasks=["t1", "t2", "t3", "t4", "t5"])


def test_write_wide_csv_round_trip_with_missing(tmp_path):
    m = read_jsonl(write(tmp_path / "in.jsonl", jsonl_text()))
    out = write_wide_csv(m, tmp_path / "out.csv")
    assert out.read_text().splitlines()[:2] == ["agent,t1,t2,t4,t3", "a1,1,0,1,"]
    back = read_wide_csv(out)
    assert_matrix(back, **reorder(FIRST_SEEN))
    assert back.digest() == m.digest()
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_round_trip_from_leaderboard(tmp_path):
    root = make_leaderboard(tmp_path / "experiments", split="lite")
    # the fix names the command that takes the official ids (replay's --tasks scores a subset instead)
    with pytest.warns(UserWarning, match=rf"hspr bank build {re.escape(str(root))} --split lite --tasks FILE --out bank.csv"):
        m = load_matrix(root, split="lite")
    out = write_wide_csv(m, tmp_path / "bank.csv")
    back = load_matrix(out)
    assert back.agents == m.agents and back.tasks == m.tasks
    np.testing.assert_array_equal(back.values, m.values)
    assert back.missing is None


def test_write_wide_csv_quotes_odd_ids(tmp_path):
    m = ResponseMatrix(["agent, with comma", 'q"uote'], ["t,1", "t2"], np.array([[1, 0], [0, 1]]))
    back = load_matrix(write_wide_csv(m, tmp_path / "odd.csv"))
    assert back.agents == m.agents and back.tasks == m.tasks
    np.testing.assert_array_equal(back.values, m.values)


# ---------------------------------------------------------------------- CLI
@pytest.fixture
def cli():
    group = click.Group("hspr")
    register(group)
    runner = CliRunner()
    return lambda *args: runner.invoke(group, [str(a) for a in args])


def test_cli_build_and_validate(tmp_path, cli):
    root = make_leaderboard(tmp_path / "experiments", split="lite")
    out = tmp_path / "bank.csv"
    res = cli("bank", "build", root, "--split", "lite", "--out", out)
    assert res.exit_code == 0, res.output
    assert "3 agents x 5 tasks, 0 missing cells" in res.stdout
    # the README: build prints the digest a live session on the file records (a trial found it in --json only)
    from hspr.data.io import load_matrix

    assert f"digest {load_matrix(out).fill_missing(0).digest()} (what a live session on it records" in \
        " ".join(res.stdout.split())
    res = cli("bank", "validate", out)
    assert res.exit_code == 0
    assert "OK" in res.stdout and "wide CSV" in res.stdout and "3 agents x 5 tasks" in res.stdout
    # a trial: validate gave no digest in text, so a CSV could not be checked against a session's bank
    assert f"digest {load_matrix(out).fill_missing(0).digest()} (what a live session on it records" in \
        " ".join(res.stdout.split())
    res = cli("bank", "validate", root, "--split", "verified")
    assert res.exit_code == 2
    assert "no split 'verified'" in res.stderr


def test_cli_validate_error_exit_code(tmp_path, cli):
    p = write(tmp_path / "bad.csv", "agent,t1\na1,7\n")
    res = cli("bank", "validate", p)
    assert res.exit_code == 2
    assert res.stderr.startswith("error: ") and str(p) in res.stderr and "line 2, column 2" in res.stderr
    assert "Traceback" not in res.output
    res = cli("bank", "build", p, "--out", tmp_path / "x.csv")
    assert res.exit_code == 2 and not (tmp_path / "x.csv").exists()


def test_cli_validate_warns_when_agents_outnumber_tasks(tmp_path, cli):
    """A trial: a transposed matrix whose ids look like neither agents nor tasks (rows q0.., columns
    agent0..) passed `bank validate` without a word; its shape is the hint."""
    rows = "\n".join(f"q{i}," + ",".join(str((i + j) % 2) for j in range(3)) for i in range(5))
    p = write(tmp_path / "tr.csv", "agent,agent0,agent1,agent2\n" + rows + "\n")
    res = cli("bank", "validate", p, "--json")
    assert res.exit_code == 0
    want = f"{p} has more agents (5) than tasks (3): a response matrix has one row per agent"
    assert json.loads(res.stdout)["warnings"][0].startswith(want) and f"warning: {want}" in res.stderr
    long = write(tmp_path / "long.csv", "agent,instance_id,resolved\n" + "".join(
        f"q{i},agent{j},{(i + j) % 2}\n" for i in range(5) for j in range(3)))  # the two columns swapped
    res = cli("bank", "validate", long)
    assert "if the agent and task columns are swapped, swap their names in the header" in res.stderr
    assert "transpose" not in res.stderr
    ok = write(tmp_path / "ok.csv", "agent,t0,t1,t2\na0,1,0,1\na1,0,1,1\n")
    res = cli("bank", "validate", ok)
    assert res.exit_code == 0 and res.stderr == ""


def test_cli_help(cli):
    for args in (["bank", "--help"], ["bank", "build", "--help"], ["bank", "validate", "--help"], ["banks", "--help"]):
        res = cli(*args)
        assert res.exit_code == 0 and "Usage:" in res.stdout
    assert "--out" in cli("bank", "build", "--help").stdout


@pytest.mark.parametrize("text, message", [
    ("agent;t1;t2\na;1;0\n", "it holds semicolons: hspr reads comma-separated files"),
    ("agent\tt1\tt2\na\t1\t0\n", "it holds tabs"),
    ("model,instance_id,resolved\nm1,t1,1\n", "needs an 'agent' column; the header has 'model': rename"),
    # a hostile trial: both forms in one header were read as one or the other by the task column's name alone
    ("agent,task_id,resolved,successes,trials\na1,i1,1,1,5\n", "the header has 'resolved' and 'successes' and 'trials'"),
    ("agent,instance_id,resolved,successes,trials\na1,i1,1,1,5\n", "not both; drop the columns of the form it is not"),
    # a hostile trial: pandas' exports of several header lines, one taken for outcomes, one for an agent 'agent'
    (",resolved,resolved\ninstance_id,t1,t2\nagent,,\na1,1,0\n", "line 1 (an empty cell, then 'resolved' repeated over "
                                                                  "the columns) is the top of a header of several lines"),
    (",is_resolved,is_resolved\ninstance_id,t1,t2\nagent,,\na1,1,0\n", "then 'is_resolved' repeated over the columns"),
    (",django,django,sympy\n,t1,t2,t3\na1,1,0,1\n", "then 'django', 'sympy' repeated over the columns"),  # its re-trial
    # the last re-trial: named column levels, two value columns, and a header-less row of outcomes (not levels)
    ("metric,resolved,resolved\ntask,t1,t2\nagent,,\na1,1,0\n", "line 1 ('metric', then 'resolved' repeated over"),
    (",cost,cost,resolved,resolved\ninstance_id,t1,t2,t1,t2\nagent,,,,\n", "then 'cost', 'resolved' repeated over"),
    (",true,true,false\nfalse,true,true,true\n", "line 1 has no header (it holds outcome values)"),
    ('"SEP=;"\nagent;t1\na;1\n', "line 1 ('\"SEP=;\"') is a spreadsheet's line naming its separator"),
    ("task,t1,t2\nagent,,\na1,1,0\na2,0,1\n", "line 2 ('agent' and no value) is a second header line"),
    ("sep=,\r\nagent,t1,t2\r\na,1,0\r\n", "line 1 ('sep=,') is a spreadsheet's line naming its separator, not a header: "
                                           "delete line 1"),  # Excel's, told "column 2: empty task id"
])
def test_common_header_mistakes_get_a_hint(tmp_path, text, message):
    """Found by a hostile trial: a semicolon file said only 'header has 1 column(s)', and a long CSV
    whose agent column is called 'model' said 'non-binary value'."""
    path = tmp_path / "bank.csv"
    path.write_text(text)
    with pytest.raises(DataError, match=re.escape(message)):
        load_matrix(path)


@pytest.mark.parametrize("text, shape", [
    ("agent,t1,t2,t3\nmodel,,,\na1,1,0,1\n", (2, 3)),  # an agent named 'model' that ran nothing, under 'agent,...'
    ("agent,instance_id,resolved,trials\na1,t1,1,3\na2,t1,0,2\na1,t2,0,1\na2,t2,1,1\n", (2, 2)),  # attempts counted
    ("agent,task_id,successes,trials,trials_note\na1,t1,1,3,x\na2,t1,2,3,y\n", (2, 1)),
])
def test_files_near_the_refused_forms_are_still_read(tmp_path, text, shape):
    """The session-59 re-trial: the rules for a second header line and for two forms in one header refused valid
    files (an agent named 'model' with no run; a 'trials' column of attempts beside 'resolved')."""
    path = tmp_path / "bank.csv"
    path.write_text(text)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = load_matrix(path)
    assert (m.n_agents, m.n_tasks) == shape


def test_a_bank_folder_s_matrix_csv_whose_first_row_is_missing_cells_is_read_by_its_path(tmp_path):
    """The session-59 re-trial: a header-less matrix.csv starting ',nan,nan' was taken for a header of several lines."""
    (tmp_path / "bf").mkdir()
    (tmp_path / "bf" / "matrix.csv").write_text(",nan,nan\n0,0,1\n1,1,1\n")
    (tmp_path / "bf" / "metadata.json").write_text(json.dumps({"agents": ["x", "y", "z"], "instance_ids": ["t1", "t2", "t3"]}))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        by_file, by_folder = load_matrix(tmp_path / "bf" / "matrix.csv"), load_matrix(tmp_path / "bf")
    assert by_file.digest() == by_folder.digest() and by_file.missing[0].all()


def test_a_spreadsheet_s_empty_trailing_columns_are_left_out_with_a_warning(tmp_path):
    """A hostile trial: 'agent,t1,t2,t3,' (an Excel export's trailing separator) was refused as an empty task id. A
    column with no id and no value is left out, said; one with values under no id is still refused."""
    path = tmp_path / "bank.csv"
    path.write_text("agent,t1,t2,,\na1,1,0,,\na2,0,,,\n")
    with pytest.warns(InputWarning, match=r"column\(s\) 4, 5 hold nothing .* left out"):
        m = load_matrix(path)
    assert m.tasks == ("t1", "t2") and m.agents == ("a1", "a2") and m.missing is not None and m.missing.sum() == 1
    path.write_text("agent,t1,t2,\na1,1,0,1\na2,0,1,\n")
    with pytest.raises(DataError, match="column 4: empty task id"):
        load_matrix(path)
    path.write_text("agent,t1,t2,Unnamed: 3\na1,1,0,\na2,0,1,\n")  # pandas' name for an empty header cell
    with pytest.warns(InputWarning, match=r"column\(s\) 4 hold nothing"):
        assert load_matrix(path).tasks == ("t1", "t2")
    # a trailing comma on the header only (rows without one) was refused as ragged; a row short of a named task is not
    path.write_text("agent,t1,t2,,\na1,1,0\na2,0,,\n")
    with pytest.warns(InputWarning, match=r"column\(s\) 4, 5 hold nothing"):
        m = load_matrix(path)
    assert m.tasks == ("t1", "t2") and m.values.tolist() == [[1, 0], [0, 0]] and m.missing.tolist() == [[0, 0], [0, 1]]
    path.write_text("agent,t1,t2,\na1,1,0\na2,0\n")
    with pytest.raises(DataError, match=r"line 3 \(starting 'a2'\) has 2 fields, the header has 4"):
        load_matrix(path)
    path.write_text("agent,instance_id,resolved,\na1,t1,1\na1,t2,0\na2,t1,0\n")  # a long CSV too (a re-trial)
    long = load_matrix(path)
    assert long.tasks == ("t1", "t2") and long.values.tolist() == [[1, 0], [0, 0]] and long.missing.tolist() == [[0, 0], [0, 1]]


@pytest.mark.parametrize("name, text, sep", [("bank.tsv", "agent\tt1\tt2\na\t1\t0\nb\t0\t\n", "\t"),
                                             ("bank.csv", "agent;t1;t2\na;1;0\nb;0;\n", ";"),
                                             ("it's.tsv", "agent\tt1\tt2\na\t1\t0\nb\t0\t\n", "\t")])
def test_the_conversion_a_tab_or_semicolon_file_is_told_works(tmp_path, monkeypatch, name, text, sep):
    """A trial: a TSV was refused with no way to convert it. The command the message gives makes a file hspr reads
    with the same cells (an empty cell stays a missing run), and never replaces the input nor another file (a
    hostile trial: bank.tsv's was to write over bank.csv; its re-trial: over bank_comma.csv, and a quote in the
    name broke the command)."""
    import shlex
    import subprocess
    import sys

    path = tmp_path / name
    path.write_text(text)
    stem = name.rsplit(".", 1)[0]
    (tmp_path / f"{stem}_comma.csv").write_text("kept")
    with pytest.raises(DataError) as err:
        load_matrix(path)
    command = re.search(r"convert it, e\.g\. (python -c .+)\)$", str(err.value)).group(1)
    monkeypatch.chdir(tmp_path)
    subprocess.run([sys.executable, *shlex.split(command)[1:]], check=True)
    assert path.read_text() == text and (tmp_path / f"{stem}_comma.csv").read_text() == "kept"
    out = tmp_path / f"{stem}_comma_2.csv"
    m = load_matrix(out)
    assert (list(m.agents), list(m.tasks)) == (["a", "b"], ["t1", "t2"])
    assert m.values.tolist() == [[1, 0], [0, 0]] and m.missing.tolist() == [[False, False], [False, True]]


def test_a_long_csv_without_its_outcome_column_is_named_as_such(tmp_path):
    """A trial: 'agent,instance_id' with no resolved column was told "task 'instance_id': non-binary value 't1'"."""
    path = write(tmp_path / "long.csv", "agent,instance_id\na,t1\nb,t2\n")
    with pytest.raises(DataError, match=re.escape("The header has 'instance_id', a long CSV's task column, but no "
                                                  "'resolved' column: a long CSV's header is 'agent,instance_id,"
                                                  "resolved'") + ".*non-binary value 't1'.*n/a, #n/a, nan, null or none"):
        load_matrix(path)


def test_the_refusal_of_too_few_agents_names_the_file(tmp_path):
    """A trial: replay of a 1-agent matrix said "1 agents are too few" naming no file. (`bank validate` says
    nothing of it: one agent's file is what `hspr bank merge` takes as NEW.)"""
    from hspr.cli import main

    one = write(tmp_path / "one.csv", "agent,t1,t2\na,1,0\n")

    res = CliRunner().invoke(main, ["replay", "--matrix", str(one), "--seeds", "0"])
    assert res.exit_code == 2 and f"error: {one}: 1 agents are too few for 4 target folds" in res.stderr


@pytest.mark.parametrize("args, said", [(("bank", "check", "x.csv"), "'check'. Did you mean 'validate'?"),
                                        (("bank", "list"), "'list'. Did you mean 'agents'?"),
                                        (("cache", "clear"), "'clear'. Did you mean 'purge'?"),
                                        (("repaly",), "'repaly'. Did you mean 'replay'?"),
                                        (("live", "stauts"), "'stauts'. Did you mean 'status'?")])
def test_an_unknown_sub_command_gets_the_one_meant(args, said):
    """A trial: `hspr bank check` got "No such command 'check'" (too far from validate for click's suggestion)."""
    from hspr.cli import main

    res = CliRunner().invoke(main, list(args))
    assert res.exit_code == 2 and f"No such command {said}" in res.stderr


def test_ids_with_control_characters_are_refused_by_name():
    """A tab or newline in an id broke `hspr bank agents`' TSV and the one-id-per-line outputs (hostile trial)."""
    from hspr.data import ResponseMatrix

    for agents, tasks, what in ((["a", "b\tc"], ["t"], "agent id 'b\\tc' (row 2)"),
                                (["a", "b"], ["t\nu"], "task id 't\\nu' (column 1)")):
        with pytest.raises(DataError, match=re.escape(what)):
            ResponseMatrix(agents, tasks, np.zeros((len(agents), len(tasks)), int))


@pytest.mark.parametrize("first, warned", [("task", True), ("Instance_ID", True), ("agent", False), ("model", False)])
def test_wide_csv_with_a_task_column_first_is_flagged_as_transposed(tmp_path, first, warned):
    """A new-user trial's transposed matrix (header task,agent_00,...) validated silently."""
    import warnings

    path = write(tmp_path / "m.csv", f"{first},a1,a2\nt1,1,0\nt2,0,1\n")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        m = read_wide_csv(path)
    assert m.agents == ("t1", "t2")  # read as given: a warning, not a guess
    assert any("transpose the file" in str(w.message) for w in seen) == warned


def test_an_agent_row_without_any_run_is_warned_about_where_it_becomes_score_0(tmp_path):
    """A hostile trial's 'ghost,,,' row became a replay target with true score 0 without a word; a
    review then found the warning on every live call (tested in test_cli_safety)."""
    import warnings

    from click.testing import CliRunner

    from hspr.cli import main
    from hspr.data.io import load_matrix

    path = write(tmp_path / "m.csv", "agent," + ",".join(f"t{j}" for j in range(12)) + "\n"
                 + "".join(f"a{i}," + ",".join(str((i * j) % 2) for j in range(12)) + "\n" for i in range(8))
                 + "ghost" + "," * 12 + "\n")
    m = load_matrix(path)  # reading keeps the blank cells: nothing to say yet
    with pytest.warns(InputWarning, match="1 agent.s. have no run at all .every cell blank.: 'ghost'; counting "
                                          "missing cells as unresolved makes each an agent with score 0"):
        m.fill_missing(0)
    runner = CliRunner()
    for flag in ("--missing-as-zero", "--no-missing-as-zero"):  # a target's truth counts its blanks as 0 either way
        with warnings.catch_warnings():
            warnings.simplefilter("always")  # as in a fresh process: no registry of warnings already shown
            res = runner.invoke(main, ["replay", "--matrix", str(path), flag, "--methods", "uniform", "--seeds", "0",
                                       "--budget", "0.25", "-q", "--out", str(tmp_path / "o.json")])
        assert res.exit_code == 0, res.output
        lines = [ln for ln in res.output.splitlines() if "no run at all" in ln]
        assert len(lines) == 1 and lines[0].startswith("warning: "), res.output  # one line, no source location


def test_an_agent_that_ran_fewer_than_half_the_tasks_is_warned_about_where_blanks_are_filled(tmp_path):
    """A new-user trial: an agent with 1 run of 200 passed `bank validate` without a word and became an agent
    scoring 0.5 %. Exactly half is not warned about; below half is, naming the counts; no blank, no warning."""
    import warnings

    from click.testing import CliRunner

    from hspr.cli import main
    from hspr.data.io import load_matrix

    rows = [f"a{i}," + ",".join(str((i * j) % 2) for j in range(12)) for i in range(8)]
    rows += ["few,1" + "," * 11, "half," + ",".join(["1"] * 6 + [""] * 6), "five," + ",".join(["0"] * 5 + [""] * 7)]
    path = write(tmp_path / "m.csv", "agent," + ",".join(f"t{j}" for j in range(12)) + "\n" + "\n".join(rows) + "\n")
    with pytest.warns(InputWarning, match=r"2 agent\(s\) ran fewer than half the tasks: 'few' \(1 of 12\), 'five' "
                                          r"\(5 of 12\); counting missing cells as unresolved"):
        load_matrix(path).fill_missing(0)
    complete = load_matrix(path).rows(range(8))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        complete.fill_missing(0)
    res = CliRunner().invoke(main, ["bank", "validate", str(path)])
    assert res.exit_code == 0 and "warning: " in res.output and "'few' (1 of 12)" in res.output
    # a replay on a --tasks subset judges the runs on the subset: 'five' ran 5 of its 6 tasks (a trial: it was
    # warned of by the whole bank's count)
    write(tmp_path / "sub.txt", "\n".join(f"t{j}" for j in range(6)) + "\n")
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        res = CliRunner().invoke(main, ["replay", "--matrix", str(path), "--tasks", str(tmp_path / "sub.txt"), "--methods",
                                        "uniform", "--seeds", "0", "--budget", "0.5", "-q", "--out", str(tmp_path / "s.json")])
    said = " ".join(res.output.split())
    assert res.exit_code == 0 and "1 agent(s) ran fewer than half the tasks: 'few' (1 of 6);" in said, said
    with warnings.catch_warnings():  # and so does a live session on the subset
        warnings.simplefilter("always")
        res = CliRunner().invoke(main, ["live", "start", "--matrix", str(path), "--tasks", str(tmp_path / "sub.txt"),
                                        "--method", "uniform", "--budget", "3", "--session", str(tmp_path / "s.hspr")])
    said = " ".join(res.output.split())
    assert res.exit_code == 0 and "1 agent(s) ran fewer than half the tasks: 'few' (1 of 6);" in said, said
    assert "of 12)" not in said and said.count("fewer than half") == 1  # not judged on the whole bank (a re-trial)
    # a re-trial: replay --no-missing-as-zero said it once per fold that holds such a target; once now, for all
    rows += [f"few{i},0" + "," * 11 for i in range(6)]
    path = write(tmp_path / "m2.csv", "agent," + ",".join(f"t{j}" for j in range(12)) + "\n" + "\n".join(rows) + "\n")
    with warnings.catch_warnings():
        warnings.simplefilter("always")  # as in a fresh process
        res = CliRunner().invoke(main, ["replay", "--matrix", str(path), "--no-missing-as-zero", "--methods", "uniform",
                                        "--seeds", "0", "--budget", "0.25", "-q", "--out", str(tmp_path / "o.json")])
    assert res.exit_code == 0, res.output
    lines = [ln for ln in res.output.splitlines() if "fewer than half" in ln]
    assert len(lines) == 1 and "8 agent(s) ran fewer than half the tasks" in lines[0], res.output


@pytest.mark.parametrize("text, ok", [('{"a": 1, "a": 1}', True), ('{"a": NaN, "a": NaN}', True),
                                      ('{"a": 1, "a": 1.0}', True), ('{"a": -0.0, "a": 0}', True),
                                      ('{"a": [1, {"b": 2}], "a": [1.0, {"b": 2.0}]}', True),
                                      ('{"a": 1, "a": true}', False), ('{"a": false, "a": 0}', False),
                                      ('{"a": {"b": 1}, "a": {"b": 2}}', False), ('[{"a": 1}, {"a": 2}]', True)])
def test_one_json_loader_refuses_conflicting_duplicate_keys(text, ok):
    """true then 1 counted as one value, so the result depended on the key order (a hostile trial)."""
    from hspr.fileio import DuplicateKeyError, loads

    if ok:
        loads(text)
    else:
        with pytest.raises(DuplicateKeyError, match="key 'a' appears twice in one object with different values"):
            loads(text)


def test_live_start_json_lists_the_input_warnings(tmp_path):
    """`hspr live start --json` printed an input warning on stderr only: a script reading the JSON
    object never saw it. It is now in ``input_warnings`` too (and still one stderr line)."""
    from click.testing import CliRunner

    from hspr.cli import main

    path = write(tmp_path / "m.csv", "agent," + ",".join(f"t{j}" for j in range(12)) + "\n"
                 + "".join(f"a{i}," + ",".join(str((i * j) % 2) for j in range(12)) + "\n" for i in range(8))
                 + "ghost" + "," * 12 + "\n")
    res = CliRunner().invoke(main, ["live", "start", "--matrix", str(path), "--budget", "3", "--method", "uniform",
                                    "--session", str(tmp_path / "s.hspr"), "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert len(doc["input_warnings"]) == 1 and "'ghost'" in doc["input_warnings"][0]
    assert [ln for ln in res.stderr.splitlines() if "no run at all" in ln][0].startswith("warning: ")
    clean = write(tmp_path / "c.csv", "agent," + ",".join(f"t{j}" for j in range(12)) + "\n"
                  + "".join(f"a{i}," + ",".join(str((i * j) % 2) for j in range(12)) + "\n" for i in range(8)))
    res = CliRunner().invoke(main, ["live", "start", "--matrix", str(clean), "--budget", "3", "--method", "uniform",
                                    "--session", str(tmp_path / "c.hspr"), "--json"])
    assert res.exit_code == 0 and json.loads(res.stdout)["input_warnings"] == []
    assert json.loads(res.stdout)["bank_label"] == "c"  # the matrix's stem; the path is in "bank"
    res = CliRunner().invoke(main, ["live", "start", "--matrix", str(clean), "--bank", "mine", "--budget", "3",
                                    "--method", "uniform", "--session", str(tmp_path / "d.hspr"), "--json"])
    assert json.loads(res.stdout)["bank_label"] == "mine" and json.loads(res.stdout)["bank"] == str(clean.resolve())


@pytest.mark.parametrize("body, warned", [
    ("a0,0,0,0\na1,0,0,0\na2,0,0,0\n", "every cell is 0"),
    ("a0,1,0,1\na1,1,0,1\na2,1,0,1\n", "each task has one outcome for every agent"),
    # a hostile trial: sparse runs were said to have 'one outcome for every agent'
    ("a0,1,,1\na1,,0,\na2,1,0,\n", "the agents that ran a task all got the same outcome on it"),
    ("a0,1,0,1\na1,1,0,0\na2,1,0,1\n", None),
])
def test_a_matrix_in_which_no_task_separates_two_agents_is_warned_about(tmp_path, body, warned):
    """A hostile trial's all-zero matrix gave estimates with no word that the bank carries no
    information (RSL / DISCO intervals of width 0)."""
    import warnings

    from hspr.data.io import load_matrix

    path = write(tmp_path / "m.csv", "agent,t0,t1,t2\n" + body)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        load_matrix(path)
    said = [str(w.message) for w in seen if issubclass(w.category, InputWarning)]
    if warned is None:
        assert said == []
    else:
        assert len(said) == 1 and warned in said[0] and "no task separates any two agents" in said[0]


@pytest.mark.parametrize("rows, header, warned", [
    (["django__django-11099", "astropy__astropy-12907", "sympy__sympy-20590"], ["20240402_sweagent_gpt4", "a2"], True),
    (["20240402_sweagent_gpt4", "a2", "a3"], ["django__django-11099", "astropy__astropy-12907"], False),
    (["django__django-11099", "a2", "a3"], ["t1", "t2"], False),  # one of three rows: no
])
def test_rows_that_look_like_swe_bench_task_ids_are_flagged_as_transposed(tmp_path, rows, header, warned):
    """What pandas writes for ``df.T.to_csv()`` (first header cell blank) validated silently (a hostile trial)."""
    import warnings

    text = "," + ",".join(header) + "\n" + "".join(f"{r}," + ",".join(["1"] * len(header)) + "\n" for r in rows)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        m = read_wide_csv(write(tmp_path / "m.csv", text))
    assert m.agents == tuple(rows)
    assert any("the row ids look like task ids" in str(w.message) for w in seen) == warned


def test_one_outcome_vocabulary_for_csv_and_jsonl(tmp_path):
    """CSV took 1.0 but not 1.00, NA but not null or N/A; JSONL refused "resolved" and "1" that CSV
    took (a hostile trial). Both now read the same spellings."""
    csv = write(tmp_path / "m.csv", "agent,t1,t2,t3,t4\na,1.00,0.000,null,N/A\nb,resolved,None,1,0\n")
    with pytest.warns(InputWarning, match="no task separates any two agents"):  # no task both ran and differ on
        m = load_matrix(csv)
    assert m.values.tolist() == [[1, 0, 0, 0], [1, 0, 1, 0]]
    assert m.missing.tolist() == [[False, False, True, True], [False, True, False, False]]
    jl = write(tmp_path / "m.jsonl", '{"subject_id": "a", "responses": {"t1": "resolved", "t2": "1.00", "t3": null}}\n'
                                     '{"subject_id": "b", "responses": {"t1": "0", "t2": true, "t3": 1}}\n')
    m = load_matrix(jl)
    assert m.values.tolist() == [[1, 1, 0], [0, 1, 1]] and m.missing.tolist() == [[False, False, True], [False] * 3]
    for bad in ("1.5", "10", "01"):
        with pytest.raises(DataError, match=rf"non-binary value '{bad}'.*null or none = no run"):
            load_matrix(write(tmp_path / "b.csv", f"agent,t1,t2\na,{bad},1\nb,0,1\n"))


def test_a_bank_folder_matrix_with_two_decimal_cells_is_read_as_a_bank_folder(tmp_path):
    """With 1.00 in the vocabulary the header-less check still read 1.00 as an id: the file loaded
    as a wide CSV of the wrong shape (a review of the vocabulary change)."""
    folder = make_bank_dir(tmp_path / "bank")
    grid = np.array([[1, 0, 0, 1], [0, 0, 1, 1], [1, 0, 0, 0]])
    write(folder / "matrix.csv", "\n".join(",".join(f"{v:.2f}" for v in row) for row in grid) + "\n")
    assert detect_form(folder / "matrix.csv") == "bank_dir"
    m = load_matrix(folder / "matrix.csv")
    assert m.shape == (3, 4) and m.values.sum() == grid.sum()
    with pytest.raises(DataError, match="line 1 has no header"):
        load_matrix(write(tmp_path / "plain.csv", "1.00,0.00\n0.00,1.00\n"))


def test_jsonl_takes_the_no_run_spellings_too(tmp_path):
    with pytest.warns(InputWarning, match="no task separates any two agents"):
        m = load_matrix(write(tmp_path / "m.jsonl", '{"subject_id": "a", "responses": {"t1": "n/a", "t2": "", "t3": 1}}\n'
                                                    '{"subject_id": "b", "responses": {"t1": 1, "t2": 0, "t3": "NA"}}\n'))
    assert m.missing.tolist() == [[True, True, False], [False, False, True]]


@pytest.mark.parametrize("rows, warned", [
    (["openai__gpt-4", "anthropic__claude-3", "google__gemma-2"], False),  # model ids, not task ids
    (["instance_NodeBB__NodeBB-04998908ba6721d64eba79ae3b65a351dcfbc5b5-vnan",
      "instance_ansible__ansible-0ea40e09d1b35bcb69ff4d9cecf3d0defa4b36e8-v30a923fb5c164d6cd18280c02422f75e611e8fb2"], True),
])
def test_transposed_check_knows_model_ids_from_pro_task_ids(tmp_path, rows, warned):
    import warnings

    text = ",q1,q2\n" + "".join(f"{r},1,0\n" for r in rows)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        read_wide_csv(write(tmp_path / "m.csv", text))
    assert any("the row ids look like task ids" in str(w.message) for w in seen) == warned


def test_a_wide_csv_without_its_agent_column_is_named_so(tmp_path):
    """A hostile trial: pandas' to_csv(index=False) drops the agent ids; the file was refused for a
    duplicate agent id '0' with no word of the missing column."""
    path = write(tmp_path / "m.csv", "t1,t2,t3,t4\n0,1,1,0\n1,0,1,1\n0,0,1,1\n")
    with pytest.raises(DataError, match=r"duplicate agent id '0'.*is the agent column missing\? .*header 'agent,t1,"):
        load_matrix(path)
    named = write(tmp_path / "n.csv", "agent,t1,t2,t3\n0,1,1,0\n0,0,1,1\n")  # ids that are numbers, given twice
    with pytest.raises(DataError, match="duplicate agent id '0'") as err:
        load_matrix(named)
    assert "column missing" not in str(err.value)


def test_a_file_that_is_not_utf8_names_the_line(tmp_path):
    """A trial: only a byte offset was given (no line, agent or task)."""
    p = tmp_path / "cp1252.csv"
    p.write_bytes(b"agent,t1,t2\na,1,0\ncaf\xe9,0,1\n")
    assert_error(p, "not UTF-8 text (line 3, byte 21 of the file, after 'caf')", "save the file as UTF-8")
    q = tmp_path / "bom.csv"
    q.write_bytes(b"\xef\xbb\xbfagent,t1\nx\xff,1\n")
    assert_error(q, "(line 2, byte 13 of the file, after 'x')")
    for enc, name in [("utf-16", "UTF-16"), ("utf-16-be", None), ("utf-32", "UTF-32")]:  # a hostile trial: 'byte 0, after '''
        u = tmp_path / f"{enc}.csv"
        u.write_bytes(("\ufeff" if name is None else "").encode(enc) + "agent,t1\na,1\n".encode(enc))
        assert_error(u, f"not UTF-8 text (the file starts with the byte-order mark of {name or 'UTF-16'})",
                     "save the file as UTF-8")


def test_a_long_or_outcome_csv_as_a_task_list_gives_its_id_column(tmp_path):
    """A trial: a long CSV given as --tasks was read as the two ids 'instance_id' and 'resolved'."""
    long_csv = write(tmp_path / "long.csv", "agent,instance_id,resolved\na,t2,1\na,t1,0\nb,t2,0\nb,t3,1\n")
    assert read_task_list(long_csv) == ["t2", "t1", "t3"]
    outcome = write(tmp_path / "out.csv", "task_id,resolved\nt9,1\nt8,0\n")
    assert read_task_list(outcome) == ["t9", "t8"]
    bad = write(tmp_path / "bad.csv", "agent,instance_id,resolved\na\n")
    assert_error(bad, "line 2 has no 'instance_id' column", reader=read_task_list)
    # a hostile trial: a one-column list headed 'task' (a name the matrix readers take for the id column) was read as
    # the id 'task'; so were a long CSV's 'agent,task,resolved' header names
    assert read_task_list(write(tmp_path / "one.csv", "task\nt5\nt4\n")) == ["t5", "t4"]
    assert read_task_list(write(tmp_path / "quoted.csv", '"task"\nt5\nt4\n')) == ["t5", "t4"]  # its re-trial
    assert read_task_list(write(tmp_path / "lt.csv", "agent,task,resolved\na,t7,1\nb,t6,0\n")) == ["t7", "t6"]


def test_a_task_list_on_an_open_descriptor_is_read_once(tmp_path):
    """A hostile trial: `--tasks <(grep ... ids.txt)`, a shell idiom, was refused as 'not a regular file'. A pipe's
    descriptor path is read, once (its JSON too); a named pipe in the file system is still refused (it would wait)."""
    import os

    for text, want in (("t2\n# c\nt1\n", ["t2", "t1"]), ('["t3", "t1"]', ["t3", "t1"])):
        r, w = os.pipe()
        os.write(w, text.encode())
        os.close(w)
        try:
            assert read_task_list(f"/dev/fd/{r}") == want
        finally:
            os.close(r)
    os.mkfifo(tmp_path / "fifo")
    assert_error(tmp_path / "fifo", "not a regular file", reader=read_task_list)


def test_a_long_csv_of_trial_lines_points_to_the_trials_form(tmp_path):
    """A trial: per-trial lines that agreed were merged silently into one 0/1 outcome, others refused as conflicts."""
    p = write(tmp_path / "pt.csv", "agent,task_id,resolved,trial\na,t1,1,1\na,t1,1,2\nb,t1,0,1\nb,t1,0,2\n")
    assert_error(p, "a trial column: one line per trial", "'agent,task_id,successes,trials'")


@pytest.mark.parametrize("text, where", [
    ("agent,t1,t2,t\t4\nA,1,0,1\nB,0,1,1\n", "line 1 (header): column 4: task id 't\\t4'"),
    ("agent,t1,t2\nA,1,0\nB\tx,0,1\n", "line 3: agent id 'B\\tx'"),
    ("agent,instance_id,resolved\nA,t1,1\nA,t\x0b2,0\n", "line 3, column instance_id: id 't\\x0b2'"),
    ("agent,instance_id,resolved\nA,t1,1\nA\x01,t2,0\n", "line 3, column agent: id 'A\\x01'"),
    ("agent,task_id,successes,trials\nA,t1,1,5\nA,t\t2,0,5\n", "line 3, column task_id: id 't\\t2'"),  # a re-trial
    ('{"subject_id": "A", "responses": {"t1": 1}}\n{"subject_id": "B", "responses": {"t1": 0, "t\\t2": 1}}\n',
     "line 2: task id 't\\t2'"),  # a re-trial: JSONL tasks were named 'task #2'
])
def test_a_control_character_in_an_id_is_named_by_its_line_and_column_in_the_file(tmp_path, text, where):
    """A hostile trial: the matrix's check named its own row or column (0-based to the file: 'column 3' for the
    header's 4th), and the 3-column wide CSV got the long-CSV hint meant for duplicate ids."""
    p = tmp_path / ("b.jsonl" if text.startswith("{") else "b.csv")
    p.write_bytes(text.encode())
    msg = assert_error(p, where, "holds a tab, newline or other control character")
    assert "looks like a long CSV" not in msg


def test_a_field_over_the_csv_limit_is_named_as_such(tmp_path):
    """A hostile trial: a 131,073-character id was reported as malformed CSV, blamed on the quoting alone."""
    p = tmp_path / "huge.csv"
    p.write_text("agent,t1,t2\n" + "A" * 140_000 + ",1,0\nB,0,1\n")
    assert_error(p, "line 2: a field longer than 131,072 characters", "shorten that field")


def test_a_task_list_field_over_the_csv_limit_is_named_not_a_traceback(tmp_path):
    """A re-trial: `replay --tasks` / `live start --tasks` ended in _csv.Error."""
    from hspr.data.io import read_task_list

    p = tmp_path / "ids.csv"
    p.write_text("instance_id,resolved\n" + "A" * 140_000 + ",1\n")
    assert_error(p, "line 2: a field longer than 131,072 characters", reader=read_task_list)


def test_a_wide_csv_whose_task_is_named_like_a_long_csv_column_is_read(tmp_path):
    """A re-trial: refusing every 'agent,instance_id' header refused a wide CSV of one task so named."""
    m = load_matrix(write(tmp_path / "w.csv", "agent,instance_id,t2\nA,1,0\nB,0,1\nC,1,1\n"))
    assert m.agents == ("A", "B", "C") and m.tasks == ("instance_id", "t2")


@pytest.mark.parametrize("terminal", [True, False])
def test_a_folder_read_shows_a_spinner_on_a_terminal_only(tmp_path, monkeypatch, terminal):
    """A trial: `hspr bank agents /` walked the whole file system for 14 s without a word. On a
    terminal a folder read says so (and how to stop it); a script's stderr and a file read stay quiet."""
    from hspr.cli import main

    root = make_leaderboard(tmp_path / "experiments", split="lite")
    wide = tmp_path / "b.csv"
    res = CliRunner().invoke(main, ["bank", "build", str(root), "--out", str(wide)])
    assert res.exit_code == 0, res.output
    if terminal:
        monkeypatch.setenv("FORCE_COLOR", "1")  # rich then takes stderr for a terminal
        monkeypatch.setenv("TERM", "xterm")  # not a dumb one, which draws no spinner
    else:
        monkeypatch.delenv("FORCE_COLOR", raising=False)
    said = "reading every result file below"
    for path, spins in ((root, terminal), (wide, False)):
        res = CliRunner().invoke(main, ["bank", "agents", str(path)])
        assert res.exit_code == 0, res.output
        assert (said in res.stderr) == spins, res.stderr
        assert said not in res.stdout
        assert res.stdout.splitlines()[0] == "agent\tscore_pct"


@pytest.mark.parametrize("as_json", [False, True])
def test_ctrl_c_exits_130_and_a_json_reader_gets_its_object(monkeypatch, as_json):
    """A hostile trial: Ctrl-C during a long read exited 1 with click's "Aborted!" and left --json's
    stdout empty; a shell reports an interrupted command as 130 (128 + SIGINT)."""
    import hspr.cli.bank as cli_bank
    from hspr.cli import main

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli_bank, "load_bank", interrupted)
    res = CliRunner().invoke(main, ["bank", "agents", "verified", *(["--json"] if as_json else [])])
    assert res.exit_code == 130 and res.stderr.strip() == "interrupted" and "Aborted" not in res.output
    assert res.stdout == ('{"ok": false, "error": "interrupted"}\n' if as_json else "")


@pytest.mark.parametrize("first", ["", "Unnamed: 0", "index"])
def test_a_pandas_index_beside_the_agent_column_is_named_with_the_fix(tmp_path, first):
    """A hostile trial: df.reset_index().to_csv(path) was read with the row numbers as agents and 'agent' as a task:
    "non-binary value 'agent_00'", whose advice was wrong."""
    import pandas as pd

    p = tmp_path / "pd.csv"
    pd.DataFrame({"agent": ["a", "b"], "t1": [1, 0], "t2": [0, 1]}).rename_axis(first or None).to_csv(p)
    assert p.read_text().splitlines()[0] == f"{first},agent,t1,t2"
    said = "the column(s) before 'agent' hold row numbers and 'agent' holds ids: an index (pandas, R) written beside"
    assert_error(p, f"line 1: the header starts {first + ',agent'!r}, {said}", "df.to_csv(path, index=False)")
    twice = tmp_path / "twice.csv"  # reset_index twice: two columns of row numbers
    pd.read_csv(p).rename(columns={"Unnamed: 0": "index", first: "index"}).to_csv(twice)
    assert_error(twice, said)
    # re-trials: rows sorted after the reset, R's write.csv (quoted, from 1); agent ids in an unnamed first column
    # beside a task named 'agent' are a bank, and so are agent ids 0, 1, 2 beside a task 'agent' of outcomes
    assert_error(write(tmp_path / "sorted.csv", f"{first},agent,t1\n2,c,1\n0,a,0\n1,b,1\n"), said)
    assert_error(write(tmp_path / "r.csv", '"","agent","t1"\n"1","a","1"\n"2","b","0"\n'), said, "row.names = FALSE")
    legit = write(tmp_path / "legit.csv", f"{first},agent,t2\na0,1,0\na1,0,1\n")
    assert_matrix(load_matrix(legit), np.array([[1, 0], [0, 1]]), agents=["a0", "a1"], tasks=["agent", "t2"])
    # re-trials: row numbers repeated by pd.concat, three index columns; pass rates under a default index are no ids
    assert_error(write(tmp_path / "concat.csv", f"{first},agent,t1\n0,a,1\n1,b,0\n0,c,1\n"), said)
    assert_error(write(tmp_path / "three.csv", f"{first},level_0,index,agent,t1\n0,0,0,a,1\n1,1,1,b,0\n"),
                 "before 'agent' hold row numbers")
    rates = write(tmp_path / "rates.csv", f"{first},t1,t2\n0,0.6,0.2\n1,0.4,1\n2,1,0\n")
    assert "row numbers" not in assert_error(rates, "non-binary value '0.6'")
    model = write(tmp_path / "model.csv", f"{first},model,t1\n0,a,1\n1,b,0\n")  # another name for the id column
    assert_error(model, "the column(s) before 'model' hold row numbers and 'model' holds ids", "set_index('model')")
    numbered = write(tmp_path / "numbered.csv", f"{first},agent,t2\n0,1,0\n1,0,1\n2,1,1\n")
    assert_matrix(load_matrix(numbered), np.array([[1, 0], [0, 1], [1, 1]]), agents=["0", "1", "2"], tasks=["agent", "t2"])
    ok = tmp_path / "ok.csv"
    pd.DataFrame({"agent": ["a", "b"], "t1": [1, 0], "t2": [0, 1]}).to_csv(ok, index=False)
    assert_matrix(load_matrix(ok), np.array([[1, 0], [0, 1]]), agents=["a", "b"], tasks=["t1", "t2"])


def test_a_repeated_long_line_is_merged_with_a_warning_naming_both_lines(tmp_path):
    """A new-user trial: 20 lines appended twice were merged without a word; the count and the first pair of lines
    are named, and the matrix is the one without the repeats."""
    p = write(tmp_path / "long.csv", LONG)
    with pytest.warns(InputWarning, match=r"1 line\(s\) repeat an earlier \(agent, instance_id\) with the same outcome "
                                          r"\(first: line 12 repeats line 2, agent 'a1', instance_id 't1'\)"):
        m = load_matrix(p)
    once = write(tmp_path / "once.csv", LONG.replace("a1,t1,1\n", "", 1))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert load_matrix(once).digest() == m.digest()


def test_per_agent_result_files_point_to_the_recipe(tmp_path):
    """A re-trial: a harness's folder of per-agent `{task: outcome}` files got 'unknown folder layout', and one such file
    'not a subject record', with no word of the conversion recipe in banks.md."""
    folder = tmp_path / "results"
    folder.mkdir()
    for agent in ("a1", "a2"):
        (folder / f"{agent}.json").write_text(json.dumps({"t1": True, "t2": False, "t3": None}))
    (tmp_path / "a3.json").write_text(json.dumps({"t1": 1, "t2": 0}, indent=1))  # over several lines
    assert_error(folder, "unknown folder layout", "a folder of one result file per agent",
                 "docs/banks.md, 'Building a bank', has a recipe")
    for f in (folder / "a1.json", tmp_path / "a3.json"):
        assert_error(f, "one agent's results ({task: outcome}), not a bank of agents", "one long CSV 'agent,instance_id,resolved'")
    py_irt = write(tmp_path / "ok.jsonl", '{"subject_id": "a", "responses": {"t1": 1}}\n{"subject_id": "b", "responses": {"t1": 0}}\n')
    assert load_matrix(py_irt).shape == (2, 1)


def test_a_matrix_path_near_the_path_length_limit_is_read(tmp_path):
    """A trial: `replay --matrix` of a file whose path was 4090 bytes long (valid) was refused, 'File name too long',
    for the check whether it is a bank folder's matrix.csv ('<file>/matrix.csv' is longer than the limit)."""
    import os

    from hspr.data.io import bank_dir_of, load_matrix

    folder, goal = str(tmp_path), 4088 - len("/" + "m" * 100 + ".csv")
    while len(folder) < goal - 1:
        folder += "/" + "d" * min(200, goal - len(folder) - 1)
    os.makedirs(folder)
    path = folder + "/" + "m" * 100 + ".csv"
    assert len(os.fsencode(path)) > 4095 - len("/matrix.csv")
    with open(path, "w") as fh:
        fh.write("agent,t1,t2,t3\na,1,0,1\nb,0,1,1\nc,1,1,0\n")
    assert bank_dir_of(path) is None and load_matrix(path).n_agents == 3


def test_csv_records_splits_a_text_without_quotes_as_the_csv_reader_does(tmp_path):
    """A scale trial: 2.1 million lines took 6.9 s through ``csv.reader`` and the blank-line filter; a text with no
    quote is now split directly. On random texts of commas, blanks, every line end csv knows and characters
    ``str.splitlines`` also breaks at, the records and their line numbers are the reader's."""
    import csv
    import io

    from hspr.fileio import csv_records

    def reader(text: str) -> list[tuple[int, list[str]]]:  # the csv module's records, blank ones left out
        rows, start, out = csv.reader(io.StringIO(text, newline=""), strict=True), 1, []
        for rec in rows:
            out.append((start, rec))
            start = rows.line_num + 1
        return [(n, r) for n, r in out if any(x.strip() for x in r)]

    rng = np.random.default_rng(0)
    alphabet = ["a", "1", ",", " ", "\t", "\n", "\r", "\r\n", "é", "\x0b", "\x0c", "\x1c", "\x85", "\u2028", "\xa0"]
    path = tmp_path / "t.csv"
    for _ in range(3000):
        text = "".join(rng.choice(alphabet, size=rng.integers(0, 16)))
        path.write_bytes(text.encode("utf-8"))
        assert csv_records(path) == reader(text), repr(text)
    path.write_text("agent,t1\n" + "a," + "x" * (csv.field_size_limit() + 1) + "\n")  # the reader's limit still holds
    with pytest.raises(HsprError, match="a field longer than"):
        csv_records(path)
