"""Stopping rules shared by the live loop and replay (issue 13)."""

from __future__ import annotations

import numpy as np
import pytest

from hspr.methods import get_method
from hspr.replay import HiddenRow, run_session
from hspr.session import ScoreEstimate
from hspr.stopping import MIN_TASKS, AnyOf, BudgetSpent, WidthBelow, live_rule

from .conftest import simulate_matrix


class _Sess:
    def __init__(self, n, b):
        self.n_queried, self.budget = n, b


def test_rules_give_a_reason_exactly_when_they_fire():
    narrow = ScoreEstimate(point=0.5, lower=0.48, upper=0.52)  # 4 pp
    wide = ScoreEstimate(point=0.5, lower=0.4, upper=0.6)  # 20 pp
    assert BudgetSpent().check(_Sess(3, 5), None) is None
    assert "budget spent (5 of 5" in BudgetSpent().check(_Sess(5, 5), None)
    assert WidthBelow(5).check(_Sess(1, 5), narrow).startswith("90 % interval 4.00 pp")
    assert WidthBelow(5).check(_Sess(1, 5), wide) is None and WidthBelow(5).check(_Sess(1, 5), None) is None
    # a new-user trial: status said "stop" beside a shift flag saying "run more tasks"; the reason now says both
    from dataclasses import replace

    from hspr.shift_report import ShiftReport
    flag = ShiftReport("nearest-source disagreement", 0.4, 99.0, 114, 1.25, 95.0, n_outcomes=50, n_reference=57)
    calm = replace(flag, source_percentile=50.0)
    assert flag.unlike_history and not calm.unlike_history
    flagged = WidthBelow(5).check(_Sess(1, 5), replace(narrow, shift=flag))
    assert flagged.startswith("90 % interval 4.00 pp is narrower than the stop width 5 pp; the shift check flags this "
                              "agent as unlike the history")
    assert flagged.endswith("budget is the safer choice: more tasks lower the error, though not the interval's misses "
                            "(remove the stop width to go on)")  # replay: no command
    # a new-user trial: the live session's command named its session as a literal 'FILE'
    go_on = "hspr live next --stop-width none --session 'my run.hspr'"
    assert WidthBelow(5, go_on=go_on).check(_Sess(1, 5), replace(narrow, shift=flag)).endswith(f"go on: `{go_on}`)")
    assert WidthBelow(5).check(_Sess(1, 5), replace(narrow, shift=calm)) == WidthBelow(5).check(_Sess(1, 5), narrow)
    assert WidthBelow(5).check(_Sess(1, 5), replace(wide, shift=flag)) is None  # the flag never makes it stop
    # a trial: once the budget was spent, the flag's "run more tasks" had no command to do it
    more = "hspr live ingest 'my run.hspr' --session 'my run-more.hspr'"
    spent = BudgetSpent(more).check(_Sess(5, 5), replace(wide, shift=flag))
    assert spent.startswith("budget spent (5 of 5 tasks recorded); the shift check flags")
    # a trial: the new session was named as "the file named last in this command"
    assert spent.endswith(f"with a larger --budget and --session 'my run-more.hspr', then carry these outcomes into it: "
                          f"`{more}`")
    assert BudgetSpent(more).check(_Sess(5, 5), replace(wide, shift=calm)) == "budget spent (5 of 5 tasks recorded)"
    assert BudgetSpent().check(_Sess(5, 5), replace(wide, shift=flag)) == "budget spent (5 of 5 tasks recorded)"  # replay
    assert BudgetSpent().check(_Sess(6, 5), None) == "budget spent (6 tasks recorded, 1 over the budget of 5)"  # a late record
    assert BudgetSpent().check(_Sess(4, 5), None) is None
    assert BudgetSpent(more).check(_Sess(4, 5), replace(wide, shift=flag)) is None
    assert live_rule(5, more=more).check(_Sess(5, 5), replace(narrow, shift=flag)) == spent
    # an interval exactly as wide as the stop width is not narrower, although 0.61 - 0.53 < 0.08 in floats
    on_lattice = ScoreEstimate(point=0.57, lower=0.53, upper=0.61)
    assert 100 * on_lattice.width < 8 and WidthBelow(8).check(_Sess(47, 50), on_lattice) is None
    assert WidthBelow(8.01).check(_Sess(47, 50), on_lattice).startswith("90 % interval 8.00 pp")
    rule = live_rule(5)
    # the estimate is computed only where a rule reads it: the width once MIN_TASKS outcomes are told,
    # the budget (with a carry-over command) once it is spent (an audit: plain `next` lost that advice)
    assert isinstance(rule, AnyOf) and rule.needs_estimate(_Sess(MIN_TASKS, 50))
    assert not rule.needs_estimate(_Sess(MIN_TASKS - 1, 50)) and not live_rule(None).needs_estimate(_Sess(3, 50))
    assert live_rule(None, more=more).needs_estimate(_Sess(5, 5)) and not live_rule(None, more=more).needs_estimate(_Sess(4, 5))
    assert not BudgetSpent().needs_estimate(_Sess(5, 5))  # replay: no advice, no estimate needed
    assert "budget" in rule.check(_Sess(5, 5), narrow)  # the first rule's reason
    for bad in (0, -1, float("inf"), float("nan"), True, 100.5):
        with pytest.raises(ValueError, match="stop width"):
            WidthBelow(bad)
    # a session saved by an older version with a width above 100 pp still opens and stops as at 100
    assert live_rule(500).check(_Sess(MIN_TASKS, 50), wide).startswith("90 % interval 20.00 pp is narrower than the stop width 100")
    # live: no stop on the width before MIN_TASKS outcomes, however wide the stop width
    assert rule.check(_Sess(MIN_TASKS - 1, 50), narrow) is None
    assert rule.check(_Sess(MIN_TASKS, 50), narrow).startswith("90 % interval 4.00 pp")


@pytest.mark.filterwarnings("ignore::hspr.errors.UnaskedTaskWarning")  # it tells tasks not asked, on purpose
def test_replay_stops_at_the_same_point_as_the_rule_says():
    m = simulate_matrix(30, 80, seed=3)[0]
    model = get_method("uniform").fit(m.rows(np.arange(1, 30)))
    full = run_session(model, HiddenRow(m, 0), [40], 0)[0]
    rec = run_session(model, HiddenRow(m, 0), [40], 0, stop=WidthBelow(30.0))[0]
    assert rec["stop_reason"] is not None and rec["n_queried"] < 40
    assert rec["queried"] == full["queried"][: rec["n_queried"]]  # the same path, cut short
    assert 100 * (rec["upper"] - rec["lower"]) < 30.0
    # one task fewer and the interval was not yet narrow enough
    s = model.start(40, 0)
    for t in rec["queried"][:-1]:
        s.tell(t, HiddenRow(m, 0).reveal(t))
    assert 100 * s.estimate().width >= 30.0


def test_cli_replay_with_a_stop_width_labels_its_runs_apart(tmp_path):
    """Runs that may end early carry '[stop W pp]' in their bank label, so a report never mixes
    them with full-budget runs of the same bank (found by a hostile trial)."""
    import json

    from click.testing import CliRunner

    from hspr.cli import main
    from hspr.data.build import write_wide_csv

    write_wide_csv(simulate_matrix(16, 40, seed=5)[0], tmp_path / "m.csv")
    res = CliRunner().invoke(main, ["replay", "--matrix", str(tmp_path / "m.csv"), "--methods", "uniform", "--seeds", "0",
                                    "--budget", "0.5", "--stop-width", "60", "-q", "--out", str(tmp_path / "r.json")])
    assert res.exit_code == 0, res.output
    out = json.loads((tmp_path / "r.json").read_text())
    runs = out["runs"]
    assert {r["bank"] for r in runs} == {"m[stop 60 pp]"}
    assert out["environment"]["numpy"] == np.__version__ and out["environment"]["hspr"] == out["hspr_version"]
    # the BLAS and its kernels, which decide the last bits of sums (ATLAS moved on another processor)
    from threadpoolctl import threadpool_info

    blas = [i for i in threadpool_info() if i["user_api"] == "blas"]  # which one: test_the_recorded_blas_is_numpy_s
    assert any(out["environment"]["blas"] == f"{i['internal_api']} {i['version']}"
               + (f" ({i['architecture']} kernels)" if i.get("architecture") else "") for i in blas)
    assert "processor" in out["environment"]
    assert any(r["n_queried"] < 20 for r in runs) and all(r["n_queried"] >= 5 for r in runs)
    # the summary and the printed table say how many tasks were run on average (a hostile trial: no way to tell)
    assert out["summary"][0]["mean_tasks_run"] == pytest.approx(np.mean([r["n_queried"] for r in runs]))
    assert out["summary"][0]["stopped_early"] == pytest.approx(np.mean([r["n_queried"] < 20 for r in runs]))
    res = CliRunner().invoke(main, ["replay", "--matrix", str(tmp_path / "m.csv"), "--methods", "uniform", "--seeds", "0",
                                    "--budget", "0.5", "--stop-width", "60", "--out", str(tmp_path / "r2.json")])
    assert "tasks run" in res.output


@pytest.mark.parametrize("mean, early, text", [
    (49.96, 0.002, "50.0 (<1 % early)"), (40.0, 0.5, "40.0 (50 % early)"), (50.0, 0.0, "50.0"),
    (float("nan"), float("nan"), "–"), (49.9, 0.996, "49.9 (>99 % early)"), (40.0, 1.0, "40.0 (100 % early)"),
    (45.0, 0.994, "45.0 (99 % early)"),
])
def test_tasks_run_text_never_hides_an_early_stop(mean, early, text):
    from hspr.report.stats import tasks_run_text

    assert tasks_run_text(mean, early) == text


def test_cli_replay_notes_sweep_budgets_below_the_stop_minimum(tmp_path):
    """A trial: --stop-min-tasks above the smaller budget of a sweep passed silently (those runs never stop)."""
    from click.testing import CliRunner

    from hspr.cli import main
    from hspr.data.build import write_wide_csv

    write_wide_csv(simulate_matrix(16, 40, seed=5)[0], tmp_path / "m.csv")
    args = ["replay", "--matrix", str(tmp_path / "m.csv"), "--methods", "uniform", "--seeds", "0", "--budget", "0.25,0.5",
            "--stop-width", "60", "-q", "--out", str(tmp_path / "r.json"), "--stop-min-tasks"]
    res = CliRunner().invoke(main, [*args, "15"])
    assert res.exit_code == 0, res.output
    assert "budget(s) of 10 tasks are below --stop-min-tasks 15, so their runs never stop early" in " ".join(res.output.split())
    res = CliRunner().invoke(main, [*args, "10"])
    assert res.exit_code == 0 and "never stop early" not in res.output
