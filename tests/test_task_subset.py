"""Scoring over a subset of the bank's tasks (issue 12, item 3: --tasks)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from hspr.cli import main
from hspr.data.build import write_wide_csv
from hspr.data.matrix import DataError
from hspr.live import LiveSession

from .conftest import simulate_matrix


@pytest.fixture()
def files(tmp_path):
    m = simulate_matrix(16, 40, seed=4)[0]
    bank = write_wide_csv(m.rows(np.arange(1, 16)), tmp_path / "bank.csv")
    target = write_wide_csv(m.rows([0]), tmp_path / "target.csv")
    subset = [t for j, t in enumerate(m.tasks) if j % 3]  # 26 of 40 tasks
    (tmp_path / "subset.txt").write_text("\n".join(subset) + "\n")
    return {"m": m, "bank": bank, "target": target, "subset": subset, "list": tmp_path / "subset.txt"}


def test_select_tasks_keeps_the_subset_and_names_unknown_ids(files):
    m, subset = files["m"], files["subset"]
    s = m.select_tasks(reversed(subset))
    assert s.tasks == tuple(sorted(subset)) and s.n_agents == m.n_agents
    np.testing.assert_array_equal(s.scores(), m.values[:, [m.task_index(t) for t in subset]].mean(axis=1))
    with pytest.raises(DataError, match="not in the bank.*nope"):
        m.select_tasks(subset + ["nope"])


def test_replay_scores_the_subset(files, tmp_path):
    out = tmp_path / "r.json"
    res = CliRunner().invoke(main, ["replay", "--matrix", str(files["bank"]), "--targets", str(files["target"]),
                                    "--tasks", str(files["list"]), "--methods", "uniform,hspr", "--seeds", "0",
                                    "--budget", "0.2", "-q", "--out", str(out)])
    assert res.exit_code == 0, res.output
    runs = json.loads(out.read_text())["runs"]
    m, subset = files["m"], files["subset"]
    truth = float(m.values[0, [m.task_index(t) for t in subset]].mean())
    assert runs and all(r["truth"] == pytest.approx(truth) for r in runs)
    assert all(set(r["queried"]) <= set(subset) for r in runs)
    assert all(r["budget"] == round(0.2 * len(subset)) for r in runs)
    assert all(r["bank"].endswith(f"[{len(subset)} tasks]") for r in runs)


def test_a_one_task_subset_is_named_in_the_singular(files, tmp_path):
    (tmp_path / "one.txt").write_text(files["subset"][0] + "\n")
    res = CliRunner().invoke(main, ["replay", "--matrix", str(files["bank"]), "--targets", str(files["target"]),
                                    "--tasks", str(tmp_path / "one.txt"), "--methods", "uniform", "--seeds", "0",
                                    "--budget", "0.2", "-q", "--out", str(tmp_path / "r.json")])
    assert res.exit_code != 0
    text = " ".join(res.output.split())
    assert "0.2 of bank[1 task]'s 1 task rounds to 0 tasks" in text, text


def test_live_session_on_a_subset_reports_the_subset_score(files, tmp_path):
    m, subset = files["m"], files["subset"]
    s = tmp_path / "s.hspr"
    res = CliRunner().invoke(main, ["live", "start", "--matrix", str(files["bank"]), "--tasks", str(files["list"]),
                                    "--budget", "1.0", "--session", str(s)])
    assert res.exit_code == 0, res.output
    live = LiveSession.open(s)
    assert live.tasks == tuple(sorted(subset))
    for t in subset:  # every subset task recorded: the estimate is the exact subset score
        live.record(t, int(m.values[0, m.task_index(t)]))
    est = LiveSession.open(s).status().estimate
    assert est.point == pytest.approx(m.values[0, [m.task_index(t) for t in subset]].mean(), abs=1e-12)
    res = CliRunner().invoke(main, ["live", "record", m.tasks[0], "1", "--session", str(s)])  # not in the subset
    assert res.exit_code == 2 and "is not among the session's tasks" in res.output  # not "in the bank": it is the subset's


def test_task_lists_take_comment_lines_and_name_packed_or_nested_ids(tmp_path):
    from hspr.data.io import read_task_list

    p = tmp_path / "t.txt"
    p.write_text("# the hard ones\nt1\n\n  # another comment\nt2\n")
    assert read_task_list(p) == ["t1", "t2"]
    p.write_text("t1\tt2\nt3\n")
    with pytest.raises(DataError, match=r"line 1 holds 't1\\tt2': a task list has one id per line"):
        read_task_list(p)
    p.write_text("t1,t2\n")
    with pytest.raises(DataError, match="line 1 holds 't1,t2'.*goes in a JSON list instead"):
        read_task_list(p)
    p.write_text('["t1,t2", "t3"]')  # what the message says to do (a hostile trial: it said ids hold no comma)
    assert read_task_list(p) == ["t1,t2", "t3"]
    j = tmp_path / "t.json"
    j.write_text('[["a"], null]')
    with pytest.raises(DataError, match=r"item 0 of the JSON task list is \['a'\]; every item must be one task id"):
        read_task_list(j)


def test_replay_budget_with_an_empty_item_is_refused():
    import click

    from hspr.cli.replay_cmd import parse_budgets

    with pytest.raises(click.BadParameter, match="an empty budget between commas"):
        parse_budgets("0.1,,0.2")
    assert parse_budgets("0.05, 0.1") == [0.05, 0.1]


def test_task_lists_refuse_inline_comments_and_read_any_wide_csv_header(tmp_path):
    from hspr.data.io import read_task_list

    p = tmp_path / "t.txt"
    p.write_text("t1\nt2  # hard\n")  # a phantom task 't2  # hard' that every agent would fail
    with pytest.raises(DataError, match="comments take a whole line starting with #"):
        read_task_list(p)
    p.write_text("# from the bank\nmodel,t1,t2\na,1,0\nb,0,\n")  # a wide CSV whose first column is not 'agent'
    assert read_task_list(p) == ["t1", "t2"]
    p.write_text("t1,t2\nt3,t4\n")  # ids two to a line, not a bank
    with pytest.raises(DataError, match="line 1 holds 't1,t2'"):
        read_task_list(p)
