"""Shift protocols (bundled target set, time-forward split), hspr_robust and the interval rules."""

from __future__ import annotations

import dataclasses
import json
import re
import warnings
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from scipy import stats

from hspr.cli import main
from hspr.data import ResponseMatrix
from hspr.data.banks import TARGET_SETS, load_bank, load_target_set
from hspr.data.folds import forward_cut_tie, forward_split, strongest_cut_tie, strongest_split
from hspr.data.matrix import DataError
from hspr.methods import REGISTRY, get_method
from hspr.methods.hspr import HSPR, HSPRConfig
from hspr.methods.hspr.calibration import _plan_chunks, choose_blend, held_out_rows, leave_cluster_out
from hspr.methods.hspr.robust import HSPRRobust, ShiftSettings
from hspr.methods.hspr.shift_stats import (
    hamming_distances,
    nearest_disagreement,
    nearest_disagreement_path,
    pass_rate_estimate,
    shrunk_quantile,
    side_multipliers,
    side_shares,
    unresolved_rates,
    widened,
)
from hspr.replay import replay
from hspr.report import MACRO, comparison_table
from hspr.report.stats import summarize
from hspr.session import ScoreEstimate
from hspr.shift_report import ShiftReport

from .conftest import simulate_matrix

FAST = HSPRConfig(n_nodes=256, n_draws=2048)
FAST_SHIFT = ShiftSettings(max_held_out=8, n_nodes=256, n_draws=2048, min_held_out=4, blend_weights=(0.0,))


def dated(m: ResponseMatrix) -> ResponseMatrix:
    """The same matrix with ids that start with a date: agent k is dated 2024-01-(k+1)."""
    agents = [f"202401{k + 1:02d}_{a}" for k, a in enumerate(m.agents)]
    return ResponseMatrix(agents, m.tasks, m.values)


# -- data --------------------------------------------------------------------------------------
def test_bash_only_target_set_matches_verified_tasks():
    t = load_target_set("bash-only")
    v = load_bank("verified")
    assert t.shape == (28, 500)
    assert set(t.tasks) == set(v.tasks)
    assert not set(t.agents) & set(v.agents)
    assert TARGET_SETS["bash-only"].bank == "verified"
    # SOURCE.md says: resolve rate min 0.090, max 0.744
    assert t.scores().min() == pytest.approx(0.090)
    assert t.scores().max() == pytest.approx(0.744)
    with pytest.raises(DataError, match="unknown target set"):
        load_target_set("nope")


def test_forward_split_takes_newest_by_date_in_any_row_order():
    agents = ["20240105_b", "20231201_a", "20240105_a", "20240301_z", "20230101_q"]
    got = [agents[i] for i in forward_split(agents, 2)]
    assert sorted(got) == ["20240105_b", "20240301_z"]  # same-day tie broken by id
    rng = np.random.default_rng(0)
    for _ in range(5):
        perm = list(rng.permutation(agents))
        assert sorted(perm[i] for i in forward_split(perm, 2)) == sorted(got)


def test_forward_split_reads_iso_dates_too_and_orders_both_forms_by_the_date():
    """A new-user trial named its agents '2025-03-01_myagent-v3' and was refused."""
    from hspr.data.folds import dated

    agents = ["2024-01-05_b", "20231201_a", "20240105_a", "2024-03-01_z", "2023-01-01_q", "20240106_c"]
    assert dated(agents) and not dated([*agents, "2024-1-05_x"]) and not dated(["2024-02-30_x"])
    got = sorted(agents[i] for i in forward_split(agents, 3))
    assert got == sorted(["2024-03-01_z", "20240106_c", "20240105_a"])  # the 01-05 tie breaks by id: '-' < '0'
    tie = forward_cut_tie(agents, forward_split(agents, 3))
    assert "inside 2024-01-05: 1 of the 2 agents" in tie  # one day in either form
    with pytest.raises(ValueError, match=r"no calendar date .*2024-02-30_x"):
        forward_split([*agents, "2024-02-30_x"], 1)


def test_forward_cut_tie_names_the_day_and_the_clean_cuts():
    agents = ["20240105_b", "20231201_a", "20240105_a", "20240301_z", "20230101_q", "20240105_c"]
    tie = forward_cut_tie(agents, forward_split(agents, 2))  # z, then c of the three 2024-01-05 agents
    assert "inside 2024-01-05: 1 of the 3 agents" in tie and "2 sources" in tie
    assert "--newest 1 or --newest 4 cuts between days" in tie
    assert forward_cut_tie(agents, forward_split(agents, 1)) is None
    assert forward_cut_tie(agents, forward_split(agents, 4)) is None


def test_cli_forward_split_warns_when_the_cut_splits_a_day(tmp_path):
    m = simulate_matrix(8, 20, seed=1)[0]
    days = ["20240101", "20240102", "20240103", "20240104", "20240105", "20240105", "20240105", "20240106"]
    m = ResponseMatrix([f"{d}_a{i}" for i, d in enumerate(days)], m.tasks, m.values)
    path = tmp_path / "m.csv"
    pd.DataFrame(m.values, index=pd.Index(m.agents, name="agent"), columns=m.tasks).to_csv(path)
    args = ["replay", "--matrix", str(path), "--bank", "sim", "--split", "forward", "--methods", "uniform",
            "--seeds", "0", "-q", "--out", str(tmp_path / "r.json"), "--newest"]
    res = CliRunner().invoke(main, [*args, "2"])
    assert res.exit_code == 0, res.output
    assert "inside 2024-01-05: 1 of the 3 agents" in " ".join(res.output.split())
    res = CliRunner().invoke(main, [*args, "4"])
    assert res.exit_code == 0 and "warning" not in res.output, res.output


def test_forward_split_on_verified_is_the_newest_20():
    v = load_bank("verified")
    new = forward_split(v.agents, 20)
    newest = sorted(v.agents)[-20:]
    assert sorted(v.agents[i] for i in new) == newest


@pytest.mark.parametrize("agents,newest,match", [
    (["20240101_a", "b_undated", "20240102_c"], 1, "start with a date"),
    (["20240101_a", "20240102_b", "20240103_c"], 2, "at least 2 sources"),
    (["20240101_a", "20240102_b", "20240103_c"], 0, "--newest"),
    (["20240101_a", "20240102_b", "20251301_c", "99999999_d"], 1, "no calendar date .*20251301_c"),
])
def test_forward_split_refuses(agents, newest, match):
    with pytest.raises(ValueError, match=match):
        forward_split(agents, newest)


@pytest.mark.parametrize("settings,match", [
    ({"config": 5}, "'config' must be an object of HSPRConfig fields, got a number \\(5\\)"),
    ({"config": [1]}, "'config' must be an object of HSPRConfig fields, got an array"),
    ({"shift": 5}, "'shift' must be an object of ShiftSettings fields, got a number \\(5\\)"),
    # an API trial passed `hspr select --config-out`'s file name
    ({"config": "cfg.json"}, r"got a string \('cfg.json'\); a file's settings are read first: config=json.load\(open\('cfg.json'\)\)"),
])
def test_robust_settings_of_the_wrong_shape_are_refused(settings, match):
    """A re-trial: a --config file {"config": 5} gave an AttributeError traceback (int has no to_dict)."""
    with pytest.raises(ValueError, match=match):
        HSPRRobust(**settings)


def test_strongest_split_takes_the_highest_scores_ties_by_id_in_any_row_order():
    agents = ["c", "a", "b", "d", "e"]
    scores = [0.5, 0.7, 0.7, 0.1, 0.3]
    got = [agents[i] for i in strongest_split(agents, scores, 2)]
    assert sorted(got) == ["a", "b"]
    assert [agents[i] for i in strongest_split(agents, scores, 1)] == ["a"]  # the tie at 0.7 broken by id
    # a hostile trial: that cut inside a tie was silent (the forward split warns of its same-day cut)
    tie = strongest_cut_tie(agents, scores, strongest_split(agents, scores, 1))
    assert tie == ("the strongest-score cut falls inside a tie: 1 of the 2 agents scoring 70.00 % is a target and 1 "
                   "a source (ties break by id), so not every target scores above every source; --strongest 2 cuts "
                   "between scores")
    assert all(strongest_cut_tie(agents, scores, strongest_split(agents, scores, k)) is None for k in (2, 3))
    rng = np.random.default_rng(0)
    for _ in range(5):
        p = rng.permutation(len(agents))
        perm, ps = [agents[i] for i in p], [scores[i] for i in p]
        assert sorted(perm[i] for i in strongest_split(perm, ps, 3)) == ["a", "b", "c"]
    v = load_bank("verified")
    top = strongest_split(v.agents, v.scores(), 20)
    rest = np.setdiff1d(np.arange(v.n_agents), top)
    assert v.scores()[top].min() >= v.scores()[rest].max()  # every target at least as strong as every source
    for bad in (0, 4, True, 2.5):
        with pytest.raises(ValueError, match="--strongest"):
            strongest_split(agents, scores, bad)


# -- intervals ---------------------------------------------------------------------------------
def test_score_estimate_extends_interval_to_hold_its_point():
    e = ScoreEstimate(point=0.0, lower=0.003, upper=0.147)
    assert (e.lower, e.upper) == (0.0, 0.147)
    e = ScoreEstimate(point=0.9, lower=0.5, upper=0.8)
    assert (e.lower, e.upper) == (0.5, 0.9)
    e = ScoreEstimate(point=0.4, lower=0.3, upper=0.5)
    assert (e.lower, e.upper) == (0.3, 0.5)


def test_widened_closed_form():
    assert widened(0.5, 0.4, 0.55, 2.0) == pytest.approx((0.3, 0.6))
    assert widened(0.05, 0.0, 0.1, 2.0) == pytest.approx((0.0, 0.15))  # clipped at 0
    assert widened(0.5, 0.4, 0.55, 1.0) == pytest.approx((0.4, 0.55))


def test_widened_by_side_closed_form():
    assert widened(0.5, 0.4, 0.55, 2.0, (1.5, 0.5)) == pytest.approx((0.2, 0.55))
    assert widened(0.5, 0.4, 0.6, 1.25, (1.2, 0.8)) == pytest.approx((0.35, 0.6))  # 1.5 below, 1.0 above
    # a hostile trial: a share of 0 put the interval's end on the point; a side is never narrower than given,
    # and the two multipliers still average the factor (1.5 and 1.0 for 1.25)
    assert widened(0.5, 0.4, 0.6, 1.25, (2.0, 0.0)) == pytest.approx((0.35, 0.6))
    assert widened(0.5, 0.4, 0.6, 1.25, (0.0, 2.0)) == pytest.approx((0.4, 0.65))
    assert widened(0.5, 0.4, 0.6, 1.0, (1.4, 0.6)) == pytest.approx((0.4, 0.6))  # a factor of 1 widens neither side
    assert widened(0.5, 0.4, 0.55, 1.0, (1.0, 1.0)) == widened(0.5, 0.4, 0.55, 1.0)


def test_side_shares_closed_forms():
    # a calibrated model: the 90 % interval's half-width is 1.645 sd, each side misses 5 %: both sides alike
    z = stats.norm.ppf((np.arange(4000) + 0.5) / 4000)
    ratios = np.abs(z) / stats.norm.ppf(0.95)
    assert side_shares(ratios, z, 0.90, 10) == pytest.approx((1.0, 1.0), abs=0.02)
    # over-estimates twice as far as under-estimates: the 95 % one-sided quantiles are 2 and 1
    skew = np.where(z > 0, 2 * z, z)
    s = side_shares(np.abs(skew) / stats.norm.ppf(0.95), skew, 0.90, 10)
    assert s == pytest.approx((4 / 3, 2 / 3), abs=0.02) and sum(s) == pytest.approx(2.0)
    # no held-out run: the pseudo-values alone, both sides alike; mirrored errors swap the shares
    assert side_shares(np.empty(0), np.empty(0), 0.90, 10) == pytest.approx((1.0, 1.0))
    assert side_shares(np.abs(skew) / 1.645, -skew, 0.90, 10) == pytest.approx(s[::-1])
    # hand-checked, no pseudo-values: 20 runs; below-side ratios 3 (once) and 0.5, above-side 1 (once) and 0.2
    errs = np.array([1.0] + [0.1] * 9 + [-1.0] + [-0.1] * 9)
    r = np.array([3.0] + [0.5] * 9 + [1.0] + [0.2] * 9)
    # the ceil(21 * 0.95) = 20th smallest of the 20 one-sided values, the largest: 3 below, 1 above
    assert side_shares(r, errs, 0.90, 0) == pytest.approx((1.5, 0.5))


def test_shrunk_quantile_closed_forms():
    # pseudo-values alone: the 10th of 10 is Phi^-1(0.975) / Phi^-1(0.95) = 1.96 / 1.645
    assert shrunk_quantile(np.empty(0), 0.90, 10) == pytest.approx(stats.norm.ppf(0.975) / stats.norm.ppf(0.95))
    # a calibrated model's ratios give a factor near 1
    z = np.abs(np.random.default_rng(0).normal(size=20000)) / stats.norm.ppf(0.95)
    assert shrunk_quantile(z, 0.90, 10) == pytest.approx(1.0, abs=0.03)
    # errors twice as large as the model says give twice the factor
    assert shrunk_quantile(2 * z, 0.90, 10) == pytest.approx(2.0, abs=0.06)
    # no prior: the split-conformal rank ceil((n + 1) 0.9) of 1..9 is the 9th
    assert shrunk_quantile(np.arange(1, 10), 0.90, 0) == 9


def test_nearest_disagreement_hand_checked():
    src = np.array([[1, 1, 0, 0], [0, 1, 1, 1]])
    assert nearest_disagreement(src, np.array([0, 1, 2]), np.array([1, 1, 1])) == pytest.approx(1 / 3)
    assert nearest_disagreement(src, np.array([2, 3]), np.array([1, 1])) == 0.0
    assert nearest_disagreement(src, np.array([], dtype=int), np.array([])) == 0.0


def test_nearest_disagreement_path_is_the_statistic_on_each_prefix():
    rng = np.random.default_rng(3)
    M = (rng.random((7, 40)) < 0.5).astype(float)
    cols, y = rng.permutation(40)[:25], (rng.random(25) < 0.5).astype(float)
    holes = rng.random(M.shape) < 0.3
    rates = rng.integers(0, 6, M.shape) / 5  # pass rates over 5 trials
    def by_hand(src, c, v, miss):  # the definition, one prefix at a time: each source's share of differing tasks it ran
        differ = np.abs(src[:, c] - v[None, :])
        ran = np.ones_like(differ, bool) if miss is None else ~miss[:, c]
        n_ran = ran.sum(axis=1)
        return float(np.where(n_ran > 0, (differ * ran).sum(axis=1) / np.maximum(n_ran, 1), 1.0).min())

    for src, miss in ((M, None), (M, holes), (rates, None), (rates, holes)):
        path = nearest_disagreement_path(src, cols, y, miss)
        want = [by_hand(src, cols[:n], y[:n], miss) for n in range(1, 26)]
        if src is M:  # 0/1: a whole count over n in both, so equal bit for bit (ties in the percentile stay ties)
            assert path.tolist() == want
        else:
            np.testing.assert_allclose(path, want, rtol=0, atol=1e-14)
        assert nearest_disagreement(src, cols, y, miss) == path[-1]  # the scalar is the path's last element
    assert nearest_disagreement_path(M, np.array([], dtype=int), np.array([])).shape == (0,)


def test_shift_verdict_compares_at_the_targets_own_count_of_outcomes(small_bank):
    """A hostile trial: Lite's own agents were flagged 4 % of the time at 30 outcomes (the calibration budget)
    and 30 % at 60, the statistic at 60 being compared with the held-out runs' at 30. Below the budget the target
    is compared with the runs' first n outcomes; beyond it, on its own first ``budget`` outcomes."""
    src, tgt = small_bank.drop_rows(range(2)), small_bank.rows(range(1))
    rob = HSPRRobust(config=FAST, shift=FAST_SHIFT).fit(src)
    cal = rob.calibration_
    B = cal.budget
    assert cal.distance_paths.shape == (len(cal.held_out), B)
    assert np.array_equal(cal.distance_paths[:, -1], cal.distances)
    assert cal.percentile(0.2, B) == cal.percentile(0.2)
    d = cal.distance_paths[:, 4]
    assert cal.percentile(0.2, 5) == 100 * ((d < 0.2).sum() + 0.5 * (d == 0.2).sum()) / len(d)
    with pytest.raises(ValueError, match=f"n must be in 1..{B}"):
        cal.percentile(0.2, B + 1)
    s = rob.start(min(2 * B, src.n_tasks), 0)
    values = rob.source_values_
    while not s.done:
        t = s.ask()
        s.tell(t, int(tgt.values[0, tgt.task_index(t)]))
        rep = s.estimate().shift
        cols, y = s.told()
        n = min(len(cols), B)
        assert rep.value == nearest_disagreement(values, cols[:n], y[:n])
        assert rep.source_percentile == cal.percentile(rep.value, n)
        assert rep.n_compared == (B if len(cols) > B else None)
        k = round(rep.value * n)  # one differing task fewer, on the held-out runs' grid of k / n
        assert rep.value == k / n and rep.percentile_one_fewer == cal.percentile(max(k - 1, 0) / n, n)
    assert len(cols) > B and f"on its first {B} queried tasks" in rep.message and rep.to_dict()["n_compared"] == B


def test_the_twin_note_names_the_source_agent_whose_outcomes_the_target_s_equal(small_bank):
    """A leaderboard trial: 'its outcomes equal a source agent's' did not say whose. Answered from a source row,
    the report names that agent (and how many others also match); a target unlike every source names none."""
    from hspr.methods.hspr.shift_stats import twin_sources

    M = np.array([[1, 0, 1, 1], [1, 0, 1, 0], [0, 0, 0, 0], [1, 1, 1, 1]], float)
    assert twin_sources(M, np.array([0, 1, 2]), np.array([1, 0, 1])) == [0, 1]
    assert twin_sources(M, np.array([0, 3]), np.array([1, 0])) == [1] and twin_sources(M, np.array([], int), []) == []
    miss = np.zeros_like(M, bool)
    miss[2, :2] = miss[0, 3] = True  # row 2 ran neither queried task: it does not count as a twin
    assert twin_sources(M, np.array([0, 1]), np.array([1, 0]), miss) == [0, 1]
    assert twin_sources(M, np.array([0, 1]), np.array([0, 0]), miss) == []
    assert twin_sources(M, np.array([3]), np.array([0]), miss) == [1, 2]  # row 0 did not run task 3
    src = small_bank.drop_rows(range(2))
    rob = HSPRRobust(config=FAST, shift=FAST_SHIFT).fit(src)
    s = rob.start(12, 0)
    who = src.agents[3]
    while not s.done:
        t = s.ask()
        s.tell(t, int(src.values[3, src.task_index(t)]))
    rep = s.estimate().shift
    cols, y = s.told()
    rows = twin_sources(rob.source_values_, cols, y)
    assert rep.value == 0 and who in rep.twins and list(rep.twins) == [src.agents[i] for i in rows]
    assert rep.twins == tuple(sorted(rep.twins)) and rep.to_dict()["twins"] == list(rep.twins)
    others = f" (and {len(rep.twins) - 1} other" if len(rep.twins) > 1 else " on every"
    judged = dataclasses.replace(rep, n_reference=50)  # this small bank's held-out runs are too few for a verdict
    assert f"equal source agent {rep.twins[0]}'s{others}" in judged.message
    far = _finished(rob, small_bank.rows(range(1)), 0, 12).estimate().shift
    assert far.twins == () or far.value == 0


def _finished(model, tgt, r: int, budget: int, seed: int = 0):
    """A session of ``model`` run to ``budget`` on target row ``r`` of ``tgt``."""
    s = model.start(budget, seed)
    while not s.done:
        t = s.ask()
        s.tell(t, int(tgt.values[r, tgt.task_index(t)]))
    return s


def test_nearest_disagreement_and_distances_skip_missing_cells():
    src = np.array([[1, 1, 0, 0], [0, 1, 1, 1]])
    miss = np.array([[False, False, True, True], [True, True, True, True]])
    # source 0 ran tasks 0, 1 only: it disagrees on 0 of them; source 1 ran nothing: 1.0
    assert nearest_disagreement(src, np.array([0, 1, 2]), np.array([1, 1, 1]), miss) == 0.0
    assert nearest_disagreement(src, np.array([2, 3]), np.array([1, 1]), miss) == 1.0
    rng = np.random.default_rng(0)
    M = (rng.random((6, 30)) < 0.5).astype(int)
    assert np.array_equal(hamming_distances(M), hamming_distances(M, None))
    holes = rng.random(M.shape) < 0.3
    D = hamming_distances(np.where(holes, 0, M), holes)
    for i in range(6):
        for j in range(6):
            both = ~holes[i] & ~holes[j]
            assert D[i, j] == pytest.approx((M[i, both] != M[j, both]).sum() * 30 / both.sum(), rel=1e-6)


def test_robust_fits_with_missing_source_cells_left_out(small_bank):
    src, tgt = small_bank.drop_rows(range(4)), small_bank.rows(range(4))
    holes = np.random.default_rng(1).random(src.values.shape) < 0.15
    robust = HSPRRobust(config=FAST, shift=FAST_SHIFT)
    kept = robust.fit(ResponseMatrix(src.agents, src.tasks, src.values, holes))
    zero = robust.fit(ResponseMatrix(src.agents, src.tasks, np.where(holes, 0, src.values)))
    # an all-False mask is the complete matrix, bit for bit
    none = robust.fit(ResponseMatrix(src.agents, src.tasks, src.values, np.zeros_like(holes)))
    full = robust.fit(src)
    np.testing.assert_array_equal(none.calibration_.errors, full.calibration_.errors)
    assert not np.array_equal(kept.calibration_.errors, zero.calibration_.errors)  # the holes are left out, not zeros
    for r in range(tgt.n_agents):
        e = _finished(kept, tgt, r, 12).estimate()
        assert e.lower <= e.point <= e.upper and 0 <= e.shift.source_percentile <= 100


def test_held_out_rows_spread_over_scores_and_order_free():
    m = simulate_matrix(30, 40, seed=3)[0]
    rows = held_out_rows(m.values, m.agents, 6)
    assert len(rows) == 6
    picked = {m.agents[i] for i in rows}
    perm = np.random.default_rng(1).permutation(30)
    p = m.rows(perm)
    assert {p.agents[i] for i in held_out_rows(p.values, p.agents, 6)} == picked
    s = m.scores()
    assert s[list(rows)].min() == s.min() and s[list(rows)].max() == s.max()


def test_hspr_interval_holds_its_calibrated_point(small_bank):
    """HSPR's interval moves with the Eq. 16 shift: same width unless clipped, holds the point."""
    src, tgt = small_bank.drop_rows(range(8)), small_bank.rows(range(8))
    model = HSPR(FAST).fit(src)
    for r in range(tgt.n_agents):
        s = _finished(model, tgt, r, 12)
        e = s.estimate()
        lo, hi = s.quantiles([0.05, 0.95])
        assert e.lower <= e.point <= e.upper
        if 0 < e.lower and e.upper < 1:
            assert e.upper - e.lower == pytest.approx(hi - lo, abs=1e-12)
            assert e.lower - lo == pytest.approx(e.point - e.median, abs=1e-12)


# -- every method: point inside its interval across a replay -----------------------------------
def test_every_method_point_inside_interval_across_replay(monkeypatch):
    """Each method's own interval holds its point. ScoreEstimate extends an interval that does not
    (its safety net), so the check sees the interval each method gives *before* that net: a test
    of the records alone could not fail (a code audit)."""
    from hspr.session import ScoreEstimate

    outside = []
    net = ScoreEstimate.__post_init__

    def watched(self):
        if self.lower is not None and not (self.lower <= self.point + 1e-12 and self.point <= self.upper + 1e-12):
            outside.append((self.point, self.lower, self.upper))
        net(self)

    monkeypatch.setattr(ScoreEstimate, "__post_init__", watched)
    m = simulate_matrix(24, 60, seed=5)[0]
    names = [n for n in REGISTRY if n not in ("hspr_auto", "hspr", "hspr_robust")]
    methods = {n: get_method(n) for n in names}
    methods["hspr"] = HSPR(FAST)
    methods["hspr_robust"] = HSPRRobust(config=FAST, shift=FAST_SHIFT)
    folds = [list(m.agents[i::2]) for i in range(2)]  # 2 folds: every agent a target, half the fits of 4
    runs = replay("sim", m, methods, fractions=(0.1, 0.3), seeds={n: (0,) for n in methods}, folds=folds)
    df = pd.DataFrame(runs)
    assert set(df["method"]) == set(methods)
    has = df["lower"].notna()
    assert has.any()
    bad = df[has & ~((df["lower"] <= df["estimate"] + 1e-12) & (df["estimate"] <= df["upper"] + 1e-12))]
    assert bad.empty, bad[["method", "target", "estimate", "lower", "upper"]]
    assert not outside, outside[:5]
    # and the net works: an interval given without its point is extended to reach it
    assert (ScoreEstimate(0.5, lower=0.6, upper=0.7).lower, ScoreEstimate(0.8, lower=0.6, upper=0.7).upper) == (0.5, 0.8)
    assert len(outside) == 2


def test_every_method_but_the_papers_stays_within_the_range_its_outcomes_leave(monkeypatch):
    """s resolved and u unresolved of N tasks leave the score in [s/N, (N-u)/N]; a hostile trial saw
    estimates and interval ends below that floor (an agent with 8 of 50 resolved estimated at 1.1 %
    of 500). Every method but the paper's HSPR (HSPR_SPEC section 5) is kept in that range; at full
    budget that is the exact score with zero width."""
    from hspr.session import ScoreEstimate

    m = simulate_matrix(24, 60, seed=5)[0]
    rng = np.random.default_rng(0)
    weak, strong = np.zeros(60, dtype=int), np.ones(60, dtype=int)
    weak[rng.choice(60, 3, replace=False)] = 1
    strong[rng.choice(60, 3, replace=False)] = 0
    tgt = ResponseMatrix(["weak", "strong"], m.tasks, np.vstack([weak, strong]))
    names = [n for n in REGISTRY if n not in ("hspr_auto", "hspr", "hspr_robust")]
    methods = {n: get_method(n) for n in names}
    methods["hspr_robust"] = HSPRRobust(config=FAST, shift=FAST_SHIFT)
    methods["hspr"] = HSPR(FAST)
    clipped = []
    real = ScoreEstimate.within

    def watched(self, lo, hi):
        out = real(self, lo, hi)
        if out != self:
            clipped.append(type(self))
        return out

    monkeypatch.setattr(ScoreEstimate, "within", watched)
    for name, method in methods.items():
        fitted = method.fit(m)
        for r, truth in enumerate(tgt.values.mean(axis=1)):
            for budget in (12, 60):
                sess = fitted.start(budget, 0)
                while not sess.done:
                    sess.tell(t := sess.ask(), int(tgt.values[r, tgt.task_index(t)]))
                    if name == "hspr" or sess.n_queried not in (3, 12):
                        continue
                    e, (lo, hi) = sess.estimate(), sess.outcome_bounds()
                    ends = [v for v in (e.point, e.lower, e.upper, e.mean, e.median) if v is not None]
                    assert all(lo <= v <= hi for v in ends), (name, r, sess.n_queried, e, lo, hi)
                if name != "hspr":
                    e = sess.estimate()
                    if budget == 60:
                        assert e.point == pytest.approx(truth, abs=1e-12), name
                        assert e.lower is None or e.upper - e.lower == pytest.approx(0, abs=1e-12), name
    assert len(clipped) > 0  # the range binds on these targets: without it the test would fail
    # the paper's HSPR is not bounded: its session says so, and its estimate is the spec's
    assert not methods["hspr"].fit(m).start(12, 0).bounded_by_outcomes
    assert ScoreEstimate(0.01, lower=0.0, upper=0.05).within(0.02, 0.9) == ScoreEstimate(0.02, lower=0.02, upper=0.05)


# -- hspr_robust ---------------------------------------------------------------------------------
def test_robust_keeps_hspr_point_and_widens_interval(small_bank):
    src, tgt = small_bank.drop_rows(range(6)), small_bank.rows(range(6))
    base = HSPR(FAST).fit(src)
    rob = HSPRRobust(config=FAST, shift=FAST_SHIFT).fit(src)
    c = rob.calibration_.factor
    assert c >= FAST_SHIFT.min_factor
    for r in range(tgt.n_agents):
        s0, s1 = base.start(15, 2), rob.start(15, 2)
        while not s0.done:
            t = s0.ask()
            assert s1.ask() == t  # the same query path
            y = int(tgt.values[r, tgt.task_index(t)])
            s0.tell(t, y)
            s1.tell(t, y)
        e0, e1 = s0.estimate(), s1.estimate()
        assert e1.point == e0.point
        assert (e1.lower, e1.upper) == pytest.approx(widened(e0.point, e0.lower, e0.upper, c, rob.calibration_.sides))
        assert isinstance(e1.shift, ShiftReport)
        assert 0 <= e1.shift.source_percentile <= 100
        assert e1.shift.widening == c
        assert e1.shift.n_sources == src.n_agents


def test_sided_widening_shares_the_factor_as_the_held_out_runs_miss(small_bank):
    """ShiftSettings.sided (off by default, docs/shift.md direction 18): the calibration's side shares are
    side_shares of its own held-out runs, and the interval is HSPR's widened by side_multipliers."""
    src, tgt = small_bank.drop_rows(range(6)), small_bank.rows(range(6))
    base = HSPR(FAST).fit(src)
    rob = HSPRRobust(config=FAST, shift=dataclasses.replace(FAST_SHIFT, sided=True)).fit(src)
    cal = rob.calibration_
    assert cal.sides == pytest.approx(side_shares(cal.ratios, cal.errors, 0.9, FAST_SHIFT.prior_n))
    assert cal.sides != (1.0, 1.0) and sum(cal.sides) == pytest.approx(2.0)
    assert HSPRRobust(config=FAST, shift=FAST_SHIFT).fit(src).calibration_.sides == (1.0, 1.0)  # the default
    s0, s1 = base.start(15, 2), rob.start(15, 2)
    while not s0.done:
        t = s0.ask()
        y = int(tgt.values[0, tgt.task_index(t)])
        s0.tell(t, y)
        s1.tell(s1.ask(), y)
    e0, e1 = s0.estimate(), s1.estimate()
    assert not e1.shift.above_history and e1.point == e0.point
    assert (e1.lower, e1.upper) == pytest.approx(widened(e0.point, e0.lower, e0.upper, cal.factor, cal.sides))
    assert e1.shift.sides[0] * cal.factor == pytest.approx(side_multipliers(cal.factor, cal.sides)[0])


def test_robust_blend_moves_point_and_interval_by_the_weighted_4pl_difference(small_bank):
    """A single candidate weight 0.5 is the default, so it is used: the point is the average
    of HSPR's point and the 4PL p-IRT estimate on the same outcomes, and HSPR's interval moves
    with it before widening."""
    from hspr.methods.atlas import pirt_point

    src, tgt = small_bank.drop_rows(range(4)), small_bank.rows(range(4))
    base = HSPR(FAST).fit(src)
    shift = ShiftSettings(max_held_out=8, n_nodes=256, n_draws=2048, min_held_out=4, blend_weights=(0.5,),
                          log_a_sds=(1.0,))
    rob = HSPRRobust(config=FAST, shift=shift).fit(src)
    cal = rob.calibration_
    assert (cal.weight, cal.log_a_sd) == (0.5, 1.0) and rob.pirt_ is not None
    assert len(cal.blend_table) == 1
    assert np.abs(cal.errors).mean() == pytest.approx(cal.blend_table[0][2])
    moved = 0
    for r in range(tgt.n_agents):
        s0, s1 = base.start(15, 1), rob.start(15, 1)
        while not s0.done:
            t = s0.ask()
            assert s1.ask() == t
            y = int(tgt.values[r, tgt.task_index(t)])
            s0.tell(t, y)
            s1.tell(t, y)
        e0, e1 = s0.estimate(), s1.estimate()
        cols = np.array([tgt.task_index(t) for t in s0.queried])
        p4 = pirt_point(rob.pirt_, cols, tgt.values[r, cols])
        assert e1.point == pytest.approx(0.5 * e0.point + 0.5 * p4, abs=1e-12)
        move = e1.point - e0.point
        moved += abs(move) > 1e-6
        lo, hi = widened(e1.point, e0.lower + move, e0.upper + move, cal.factor, cal.sides)
        # ... and extended to hold both estimates the point averages
        assert (e1.lower, e1.upper) == pytest.approx((min(lo, e0.point, p4), max(hi, e0.point, p4)))
        assert e1.lower <= min(e0.point, p4) <= e1.point <= max(e0.point, p4) <= e1.upper
    assert moved == tgt.n_agents  # the two estimates differ on every target


def test_robust_interval_is_not_a_point_apart_from_hsprs_posterior():
    """Found by a hostile trial: on an all-zero source matrix HSPR's interval is [0, 0]; the
    blend moved the point to the 4PL's estimate and the interval with it, width 0, missing the
    only score the outcomes support. It now reaches back to HSPR's point and holds the truth."""
    values = np.zeros((6, 8), int)
    values[1, 7] = 1  # one success among the sources: all-0 sources (one score) are refused
    zeros = ResponseMatrix([f"a{i}" for i in range(6)], [f"t{j}" for j in range(8)], values)
    # fallback off: on all zeros the sources' pass rates (0) beat the model on its replays (robust step 6),
    # and this checks the blended interval
    shift = ShiftSettings(max_held_out=6, n_nodes=256, n_draws=2048, min_held_out=4, blend_weights=(0.5,),
                          fallback=False)
    rob = HSPRRobust(config=FAST, shift=shift).fit(zeros.drop_rows([0]))
    s = _finished(rob, zeros, 0, 3)
    e, hspr_point = s.estimate(), super(type(s), s).estimate().point
    assert hspr_point == 0.0 and e.point > 0  # the 4PL's estimate is above 0
    assert e.lower == 0.0 <= e.point <= e.upper and e.upper - e.lower >= e.point


def test_choose_blend_takes_a_clearly_better_estimate_and_keeps_the_default_on_noise():
    rng = np.random.default_rng(0)
    truth = rng.uniform(0.2, 0.8, 60)
    hspr = truth + rng.normal(0, 0.03, 60)
    exact = np.stack([truth + rng.normal(0, 0.03, 60), truth])  # second sd: the exact score
    k, w, table = choose_blend(hspr, exact, truth, (0.5, 1.0), (0.0, 0.5, 1.0))
    assert (k, w) == (1, 1.0)
    assert [(sd, wt) for sd, wt, _ in table] == [(0.5, 0.0), (0.5, 0.5), (0.5, 1.0), (1.0, 0.5), (1.0, 1.0)]
    assert table[-1][2] == 0.0
    noisy = np.stack([truth + rng.normal(0, 0.10, 60)] * 2)
    assert choose_blend(hspr, noisy, truth, (0.5, 1.0), (0.0, 0.5, 1.0))[1] == 0.0
    # too few held-out runs to move from the default, however clear the gain: the table is still made
    k, w, few = choose_blend(hspr, exact, truth, (0.5, 1.0), (0.0, 0.5, 1.0), min_held_out=61)
    assert (k, w) == (0, 0.0) and few == table


def test_robust_blend_is_off_for_pass_rates():
    m = simulate_matrix(16, 40, seed=4)[0]
    trials = ResponseMatrix(m.agents, m.tasks, m.values * 3, trials=3)
    cal = leave_cluster_out(trials, [FAST], ShiftSettings(max_held_out=6, n_nodes=256, n_draws=2048))[0]
    assert (cal.weight, cal.log_a_sd, cal.blend_table) == (0.0, None, ())
    np.testing.assert_array_equal(cal.errors, cal.hspr_errors)


def test_robust_exact_at_full_budget(small_bank):
    src, tgt = small_bank.drop_rows(range(2)), small_bank.rows(range(1))
    rob = HSPRRobust(config=FAST, shift=replace(FAST_SHIFT, blend_weights=(0.5,))).fit(src)
    assert rob.calibration_.weight == 0.5
    s = rob.start(tgt.n_tasks, 0)
    while not s.done:
        t = s.ask()
        s.tell(t, int(tgt.values[0, tgt.task_index(t)]))
    e = s.estimate()
    assert e.point == pytest.approx(tgt.values[0].mean())
    assert e.lower == e.upper == e.point


def test_robust_calibration_uses_forward_runs_when_ids_are_dated():
    m = dated(simulate_matrix(20, 50, seed=2)[0])
    m = m.rows(np.random.default_rng(0).permutation(20))  # the dates decide, not the row order
    cal = leave_cluster_out(m, [FAST], ShiftSettings(max_held_out=5, n_nodes=256, n_draws=2048, forward_fraction=0.2))[0]
    fwd = [n for n in cal.held_out if n.endswith("(forward)")]
    assert len(fwd) == 4  # round(0.2 * 20)
    assert sorted(fwd) == [f"{a} (forward)" for a in sorted(m.agents)[16:]]  # the newest 4 dates
    assert len(cal.ratios) == len(cal.errors) == len(cal.distances) == 9
    cal0 = leave_cluster_out(m, [FAST], ShiftSettings(max_held_out=5, n_nodes=256, n_draws=2048, forward_fraction=0))[0]
    assert len(cal0.held_out) == 5
    # a re-trial: one date with a slip turned the forward runs off without a word; an id like 'ob1-09-10-25' is no slip
    from hspr.errors import InputWarning

    slip = ResponseMatrix([*m.agents[:-1], "2024-02-30_x"], m.tasks, m.values)
    with pytest.warns(InputWarning, match=r"1 of 20 source id\(s\) do not start with a calendar date .*'2024-02-30_x'"):
        cal1 = leave_cluster_out(slip, [FAST], ShiftSettings(max_held_out=5, n_nodes=256, n_draws=2048,
                                                             forward_fraction=0.2))[0]
    assert not [n for n in cal1.held_out if n.endswith("(forward)")]
    other = ResponseMatrix([*m.agents[:-1], "ob1-09-10-25"], m.tasks, m.values)
    with warnings.catch_warnings():
        warnings.simplefilter("error", InputWarning)
        leave_cluster_out(other, [FAST], ShiftSettings(max_held_out=5, n_nodes=256, n_draws=2048, forward_fraction=0.2))


def test_calibration_is_the_same_on_any_number_of_workers(tmp_path, monkeypatch):
    """leave_cluster_out's held-out runs are joblib jobs (``parallel_config(n_jobs=...)``, `hspr live start -j`):
    one worker and two give the same calibration, the 4PL blend, forward and strongest runs included (each in a
    fit cache of its own, so the second computes its runs)."""
    from joblib import parallel_config

    m = dated(simulate_matrix(20, 40, seed=6)[0])
    settings = ShiftSettings(max_held_out=5, n_nodes=256, n_draws=2048, forward_fraction=0.2, strongest_fraction=0.2,
                             min_held_out=4)
    monkeypatch.setenv("HSPR_CACHE_DIR", str(tmp_path / "one"))
    one = leave_cluster_out(m, [FAST, replace(FAST, rank=1)], settings)
    monkeypatch.setenv("HSPR_CACHE_DIR", str(tmp_path / "two"))
    with parallel_config(n_jobs=2):
        two = leave_cluster_out(m, [FAST, replace(FAST, rank=1)], settings)
    assert len(one[0].held_out) == 9 and len(one[0].above_ratios) == 4  # 5 + round(0.2 * 20) forward; 4 strongest
    _same_calibrations(one, two)


def _same_calibrations(one, two) -> None:
    for a, b in zip(one, two, strict=True):
        for f in dataclasses.fields(a):
            x, y = getattr(a, f.name), getattr(b, f.name)
            if isinstance(x, np.ndarray):
                np.testing.assert_array_equal(x, y, err_msg=f.name)
            else:
                assert x == y, f.name


def test_a_stopped_calibration_resumes_with_the_runs_it_finished(tmp_path, monkeypatch, caplog):
    """A scale trial: a calibration on 295 x 3,000 ran over 45 min and a stop kept nothing. Each finished
    held-out run is checkpointed in the fit cache; a stopped calibration (here Ctrl-C in the third of its
    jobs) resumes with the runs it finished, computes only the others (on two workers, another chunking), gives
    what an unstopped one gives, and leaves no entry behind."""
    import logging

    from joblib import parallel_config

    import hspr.fitcache
    from hspr.fitcache import cache_entries
    from hspr.methods.hspr import calibration

    monkeypatch.setenv("HSPR_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(hspr.fitcache, "CHECKPOINT_SECONDS", 1e9)  # no write until the stop saves them
    m = dated(simulate_matrix(20, 40, seed=6)[0])
    settings = ShiftSettings(max_held_out=5, n_nodes=256, n_draws=2048, forward_fraction=0.2, strongest_fraction=0.2,
                             min_held_out=4)
    cfgs = [FAST, replace(FAST, rank=1)]
    whole = leave_cluster_out(m, cfgs, settings)
    kept = cache_entries(tmp_path / "cache")  # an ended calibration keeps its runs and deletes its checkpoint
    assert len(kept) == 1 and not kept[0].name.endswith(".part.pkl")
    kept[0].unlink()  # so that the next calibration runs
    real, ran = calibration._held_out_runs, []

    def stops_third(source, runs, *args):
        if len(ran) == 2:
            raise KeyboardInterrupt
        ran.append([a for a, _ in runs])
        return real(source, runs, *args)

    monkeypatch.setattr(calibration, "_held_out_runs", stops_third)
    with caplog.at_level(logging.WARNING, "hspr.methods.hspr.calibration"), pytest.raises(KeyboardInterrupt):
        leave_cluster_out(m, cfgs, settings)
    assert len(cache_entries(tmp_path / "cache")) == 1
    assert "stopped; the 2 of 13 held-out runs it finished are kept in the fit cache" in caplog.text
    caplog.clear()
    first = [a for rows in ran for a in rows]  # the two leave-cluster-out runs finished before the stop
    assert len(first) == 2

    def counts(source, runs, *args):
        ran.append([a for a, _ in runs])
        return real(source, runs, *args)

    ran.clear()
    monkeypatch.setattr(calibration, "_held_out_runs", counts)
    # two workers (threads: the count must reach this process), so the remaining runs are chunked otherwise
    with caplog.at_level(logging.WARNING, "hspr.methods.hspr.calibration"), parallel_config("threading", n_jobs=2):
        resumed = leave_cluster_out(m, cfgs, settings)
    _same_calibrations(whole, resumed)
    again = sorted(a for rows in ran for a in rows)
    assert len(again) == 3 + 4 + 4 and not set(first) & set(again[:3])  # 5 + 4 forward + 4 strongest, less 2 kept
    assert "resumed with the 2 of 13 held-out runs a stopped run finished" in caplog.text
    assert [p.name for p in cache_entries(tmp_path / "cache")] == [kept[0].name]  # its runs, no checkpoint


def test_a_calibration_of_the_same_runs_is_read_from_the_fit_cache(tmp_path, monkeypatch, caplog):
    """A replay and `hspr live start` on the same sources (a scale trial: 6.5 min each on 200 x 2,000) calibrate
    once between them: the second calibration reads the held-out runs from the fit cache, computes none, gives the
    same calibration and says so when they had taken PROGRESS_AFTER seconds or more; other runs (another seed)
    are computed, and no cache folder at all costs only the time."""
    import logging

    from hspr.fitcache import cache_entries
    from hspr.methods.hspr import calibration

    monkeypatch.setenv("HSPR_CACHE_DIR", str(tmp_path / "cache"))
    m = dated(simulate_matrix(20, 40, seed=6)[0])
    settings = ShiftSettings(max_held_out=5, n_nodes=256, n_draws=2048, forward_fraction=0.2, min_held_out=4)
    first = leave_cluster_out(m, [FAST], settings)
    real, ran = calibration._held_out_runs, []

    def counts(source, runs, *args):
        ran.extend(a for a, _ in runs)
        return real(source, runs, *args)

    monkeypatch.setattr(calibration, "_held_out_runs", counts)
    monkeypatch.setattr(calibration, "PROGRESS_AFTER", 0.0)
    with caplog.at_level(logging.WARNING, "hspr.methods.hspr.calibration"):
        again = leave_cluster_out(m, [FAST], settings)
    assert ran == []
    _same_calibrations(first, again)
    said = [r.getMessage() for r in caplog.records if "fit cache" in r.getMessage()]
    assert len(said) == 1 and f"digest {m.digest()[:12]}): its 12 held-out runs were read from the fit cache (they took" \
        in said[0]
    other = leave_cluster_out(m, [FAST], dataclasses.replace(settings, seed=1))
    assert len(ran) == 12 and len(cache_entries(tmp_path / "cache")) == 2
    assert not np.array_equal(other[0].hspr_errors, first[0].hspr_errors)
    monkeypatch.setenv("HSPR_CACHE_DIR", str(tmp_path / "file"))
    (tmp_path / "file").write_text("not a folder")
    with pytest.warns(UserWarning, match="compute it again"):
        _same_calibrations(first, leave_cluster_out(m, [FAST], settings))
    assert len(ran) == 24


def test_checkpoint_writes_at_most_every_checkpoint_seconds_and_reads_back(tmp_path, monkeypatch):
    import hspr.fitcache
    from hspr.fitcache import Checkpoint, cache_entries

    monkeypatch.setenv("HSPR_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(hspr.fitcache, "CHECKPOINT_SECONDS", 0.0)
    first = Checkpoint("bank", "units", {"a": 1})
    assert first.load() == {} and not first.save()  # nothing finished: nothing kept
    first.add(3, np.arange(2))
    assert len(cache_entries(tmp_path)) == 1 and first.save()
    later = Checkpoint("bank", "units", {"a": 1})
    kept = later.load()
    assert list(kept) == [3] and kept[3].tolist() == [0, 1]
    assert Checkpoint("bank", "units", {"a": 2}).load() == {}  # other settings: another computation
    later.clear()
    assert cache_entries(tmp_path) == []
    monkeypatch.setattr(hspr.fitcache, "CHECKPOINT_SECONDS", 1e9)
    slow = Checkpoint("bank", "units", {"a": 1})
    slow.add(1, 1.0)
    assert cache_entries(tmp_path) == [] and slow.save() and len(cache_entries(tmp_path)) == 1
    (tmp_path / "sub").write_text("a file")
    monkeypatch.setenv("HSPR_CACHE_DIR", str(tmp_path / "sub"))  # a cache that cannot be written: quietly nothing
    blocked = Checkpoint("bank", "units", {"a": 1})
    blocked.add(1, 1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not blocked.save()


def test_a_cached_computation_keeps_its_checkpoint_until_its_result_is_stored(tmp_path, monkeypatch):
    """A hostile trial: a stop in the seconds between a calibration's last held-out run and the stored fit (the final
    source fit, pickling) lost every run, the checkpoint deleted already. Inside a cached result a finished
    checkpoint is written whole and deleted only once the result is stored."""
    import hspr.fitcache
    from hspr.fitcache import Checkpoint, cache_entries, cached_result

    monkeypatch.setenv("HSPR_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(hspr.fitcache, "CHECKPOINT_SECONDS", 1e9)  # no periodic write

    def build():
        part = Checkpoint("bank", "units", {})
        part.add(0, 1.5)
        part.finished()
        assert len(cache_entries(tmp_path)) == 1  # written whole, not deleted yet
        return {"result": 1}

    real = hspr.fitcache._store

    def stopped(path, key, model, *args, **kwargs):
        if "result" in model:
            raise KeyboardInterrupt  # a stop while the result is stored
        return real(path, key, model, *args, **kwargs)

    monkeypatch.setattr(hspr.fitcache, "_store", stopped)
    with pytest.raises(KeyboardInterrupt):
        cached_result("bank", "whole", {}, dict, build)
    assert Checkpoint("bank", "units", {}).load() == {0: 1.5}  # kept for the next run
    monkeypatch.setattr(hspr.fitcache, "_store", real)
    assert cached_result("bank", "whole", {}, dict, build) == ({"result": 1}, False)
    assert len(cache_entries(tmp_path)) == 1 and Checkpoint("bank", "units", {}).load() == {}  # the result alone
    outside = Checkpoint("bank", "units", {})
    outside.add(0, 1.5)
    outside.save()
    outside.finished()  # no cached result around it: deleted at once
    assert len(cache_entries(tmp_path)) == 1


def test_stop_and_resume_lines_say_what_was_kept_and_keep_quiet_under_q(tmp_path, monkeypatch, caplog):
    import logging

    import hspr.fitcache
    from hspr.fitcache import Checkpoint
    from hspr.parallel import QUIET_ENV
    from hspr.progress import save_on_stop, say_resumed

    logger = logging.getLogger("hspr.test_progress")
    monkeypatch.setattr(hspr.fitcache, "CHECKPOINT_SECONDS", 1e9)
    (tmp_path / "file").write_text("x")
    monkeypatch.setenv("HSPR_CACHE_DIR", str(tmp_path / "file"))  # a fit cache that cannot be written
    blocked = Checkpoint("bank", "units", {})
    blocked.add(0, 1.0)
    with caplog.at_level(logging.WARNING, "hspr.test_progress"):
        save_on_stop(logger, "x", blocked, 5, "runs")
        say_resumed(logger, "x", 0, 5, "runs")  # nothing kept: nothing said
    assert [r.getMessage() for r in caplog.records] == [
        "x: stopped; the 1 of 5 runs it finished could not be kept (the fit cache cannot be written), so the same run "
        "starts over"]
    caplog.clear()
    # a hostile trial: a full disk after an earlier write; that write's units are still kept, and the line said so
    monkeypatch.setenv("HSPR_CACHE_DIR", str(tmp_path / "cache"))
    full = Checkpoint("bank", "units", {})
    full.add(0, 1.0)
    assert full.save() and full.kept() == 1
    full.add(1, 2.0)
    full.add(2, 3.0)
    monkeypatch.setattr(hspr.fitcache, "_store", lambda *a, **k: False)  # the disk is full now
    with caplog.at_level(logging.WARNING, "hspr.test_progress"):
        save_on_stop(logger, "x", full, 5, "runs")
    assert [r.getMessage() for r in caplog.records] == [
        "x: stopped; the 3 of 5 runs it finished could not all be kept (the fit cache cannot be written), so the same "
        "run resumes from the 1 an earlier write kept"]
    assert Checkpoint("bank", "units", {}).load() == {0: 1.0}
    caplog.clear()
    monkeypatch.setenv(QUIET_ENV, "1")  # `hspr replay -q`
    with caplog.at_level(logging.WARNING, "hspr.test_progress"):
        save_on_stop(logger, "x", blocked, 5, "runs")
        say_resumed(logger, "x", 1, 5, "runs")
    assert caplog.records == []


def test_calibration_progress_is_logged_only_when_it_runs_long(monkeypatch, caplog):
    """Lines at each further tenth (and the end), and at a run done a minute or more after the last line (a scale
    trial: 160 runs of a minute each said their first count after 16 minutes), with the time left, once
    PROGRESS_AFTER seconds have passed; a calibration as short as the bundled banks' says nothing; none under
    ``replay -q``."""
    import logging

    from hspr.parallel import QUIET_ENV
    from hspr.progress import log_progress

    logger = logging.getLogger("hspr.test_progress")
    clock = iter([0.0, 30, 61, 62, 100, 130, 200, 400, 500, 600, 700, 800])
    tick = log_progress(logger, "calibration on x", "held-out runs", after=60, clock=lambda: float(next(clock)))
    with caplog.at_level(logging.WARNING, "hspr.test_progress"):
        for done in range(1, 12):
            tick(done, 11)
    lines = [r.getMessage() for r in caplog.records]
    assert lines[0] == "calibration on x: 2 of 11 held-out runs (18 %), 61 s; about 5 min left"  # 61 * 9 / 2 = 274.5 s
    # tenths at 2, 4 and 6; from 7 on (400, 500, ... s) each run comes a minute or more after the last line
    assert [ln.split(" (")[0] for ln in lines] == [f"calibration on x: {k} of 11 held-out runs"
                                                   for k in (2, 4, 6, 7, 8, 9, 10, 11)]
    caplog.clear()
    slow = log_progress(logger, "slow", "runs", after=60, clock=iter([0.0, 61.0, 125.0, 150.0, 190.0]).__next__)
    with caplog.at_level(logging.WARNING, "hspr.test_progress"):
        for done in range(1, 5):
            slow(done, 160)
    assert [r.getMessage() for r in caplog.records] == ["slow: 1 of 160 runs (1 %), 61 s; about 2.7 h left",
                                                        "slow: 2 of 160 runs (1 %), 125 s; about 2.7 h left",
                                                        "slow: 4 of 160 runs (2 %), 190 s; about 2.1 h left"]  # not 3
    assert lines[-1] == "calibration on x: 11 of 11 held-out runs (100 %), 800 s"
    caplog.clear()
    short = log_progress(logger, "short", "runs", after=60, clock=iter([0.0] + [5.0] * 11).__next__)
    with caplog.at_level(logging.WARNING, "hspr.test_progress"):
        for done in range(1, 12):
            short(done, 11)
    assert caplog.records == []
    monkeypatch.setenv(QUIET_ENV, "1")
    assert log_progress(logger, "quiet", "runs") is None


def test_plan_chunks_keep_the_order_and_split_a_shared_source_set_among_the_workers():
    a, b = np.arange(3), np.arange(5)
    plan = [(0, np.array([1, 2]), "x"), (1, np.array([0, 2]), "y")] + [(i, a, f"f{i}") for i in range(5)] + \
        [(i, b, f"s{i}") for i in range(3)]
    serial = _plan_chunks(plan, 1)
    assert [len(c) for c in serial] == [1, 1, 5, 3]  # a shared source set is one job: one fit
    two = _plan_chunks(plan, 2)
    assert [len(c) for c in two] == [1, 1, 2, 3, 2, 1]  # split among the workers: a fit each
    assert [run[2] for c in two for run in c] == [run[2] for run in plan]
    assert [len(c) for c in _plan_chunks(plan, 8)] == [1] * 10
    # a large bank: at most max_runs runs per job (each job is kept whole on a stop), whatever the workers
    assert [len(c) for c in _plan_chunks(plan, 1, 2)] == [1, 1, 2, 1, 2, 2, 1]
    assert [run[2] for c in _plan_chunks(plan, 1, 2) for run in c] == [run[2] for run in plan]


def test_strongest_sources_set_the_factor_above_the_history_and_nothing_else():
    m = simulate_matrix(30, 60, seed=3)[0]
    base = dict(max_held_out=6, n_nodes=256, n_draws=2048, blend_weights=(0.0,), min_held_out=4)
    cal = leave_cluster_out(m, [FAST], ShiftSettings(**base, strongest_fraction=0.2, min_strongest=5))[0]
    off = leave_cluster_out(m, [FAST], ShiftSettings(**base, strongest_fraction=0.0))[0]
    few = leave_cluster_out(m, [FAST], ShiftSettings(**base, strongest_fraction=0.2))[0]  # 6 runs < min_strongest 10
    np.testing.assert_array_equal(few.above_ratios, cal.above_ratios)
    assert few.above_factor == few.factor  # one or two agents do not decide
    assert len(cal.above_ratios) == 6 and len(off.above_ratios) == 0  # round(0.2 * 30)
    # the strongest runs set above_factor only: the factor, errors and percentiles are unchanged
    np.testing.assert_array_equal(cal.errors, off.errors)
    assert cal.factor == off.factor and cal.held_out == off.held_out and off.above_factor == off.factor
    assert cal.source_max == m.scores().max()
    expect = np.clip(shrunk_quantile(cal.above_ratios, 0.9, 10), cal.factor, 3.0)
    assert cal.above_factor == pytest.approx(expect) and cal.factor <= cal.above_factor <= 3.0


def test_a_target_above_every_source_gets_the_strongest_sources_factor():
    """Sources are the weaker 24 agents; the strongest target is estimated above all of them."""
    full = simulate_matrix(30, 80, seed=4)[0]
    order = np.argsort(full.scores())
    src, tgt = full.rows(order[:24]), full.rows(order[24:])
    base = dict(max_held_out=8, n_nodes=256, n_draws=2048, blend_weights=(0.0,), min_held_out=4)
    on = HSPRRobust(config=FAST, shift=ShiftSettings(**base, strongest_fraction=0.25, min_factor=1.0,
                                                     min_strongest=5)).fit(src)
    off = HSPRRobust(config=FAST, shift=ShiftSettings(**base, strongest_fraction=0.0, min_factor=1.0)).fit(src)
    cal = on.calibration_
    assert cal.factor == off.calibration_.factor and cal.source_max == src.scores().max()
    top = tgt.n_agents - 1
    e, e_off = _finished(on, tgt, top, 16).estimate(), _finished(off, tgt, top, 16).estimate()
    assert e.point == e_off.point > cal.source_max
    assert e.shift.above_history and e.shift.widening == cal.above_factor
    assert e.shift.sides == (1.0, 1.0)  # the side shares were measured on the other runs: both sides alike here
    assert "above every source agent's score" in e.shift.message and e.shift.to_dict()["above_history"]
    # the widening itself: with a larger factor above the history the interval grows by its ratio
    assert e.shift.n_strongest == len(cal.above_ratios) == 6 and e.shift.strongest_widened == (cal.above_factor > cal.factor)
    on.calibration_ = dataclasses.replace(cal, above_factor=2 * cal.factor)
    s2 = _finished(on, tgt, top, 16)
    e2, (lo, hi) = s2.estimate(), s2.outcome_bounds()
    assert e2.point == e.point and e2.shift.widening == 2 * cal.factor and e2.shift.strongest_widened
    # (an end at the range the 16 outcomes leave the score is clipped there)
    assert e2.upper - e2.point == pytest.approx(2 * (e_off.upper - e_off.point)) or e2.upper == hi
    assert e2.point - e2.lower == pytest.approx(2 * (e_off.point - e_off.lower)) or e2.lower == lo
    low = _finished(on, src, 0, 16).estimate()  # the weakest source itself: in range
    assert not low.shift.above_history and low.shift.widening == cal.factor
    exact = _finished(on, tgt, top, src.n_tasks).estimate()  # full budget: the exact score, no verdict
    assert exact.point > cal.source_max and not exact.shift.above_history
    on.calibration_ = dataclasses.replace(cal, above_factor=0.5)  # never below the usual factor
    assert _finished(on, tgt, top, 16).estimate().shift.widening == cal.factor


def test_calibration_fits_each_item_prior_once_and_matches_single_runs():
    """Configurations with different item-prior scales get their own source fit per held-out
    agent: calibrating both together equals calibrating each alone, and the scales differ."""
    m = simulate_matrix(20, 60, seed=5)[0]
    loose = FAST.replace(item_prior_scale=0.3)
    both = leave_cluster_out(m, [FAST, loose], FAST_SHIFT)
    for cfg, cal in zip((FAST, loose), both):
        alone = leave_cluster_out(m, [cfg], FAST_SHIFT)[0]
        np.testing.assert_array_equal(cal.errors, alone.errors)
        assert cal.config == cfg
    assert not np.array_equal(both[0].errors, both[1].errors)

def test_robust_covers_a_shifted_population_better_than_hspr():
    """Simulated shift: targets fail 25 % of the tasks the history finds easy (a 'slip')."""
    rng = np.random.default_rng(11)
    full, _ = simulate_matrix(60, 100, seed=11)
    src = full.drop_rows(range(20))
    Y = full.values[:20].copy()
    slip = (rng.random(Y.shape) < 0.25) & (full.values[20:].mean(0) > 0.6)[None, :]
    Y[slip] = 0
    tgt = ResponseMatrix(full.agents[:20], full.tasks, Y)
    methods = {"hspr": HSPR(FAST), "hspr_robust": HSPRRobust(config=FAST, shift=FAST_SHIFT)}
    runs = pd.DataFrame(replay("sim", src, methods, fractions=(0.15,), seeds={n: (0, 1) for n in methods},
                               targets=tgt))
    s = summarize(runs).set_index("method")
    assert s.loc["hspr_robust", "mae_pp"] == pytest.approx(s.loc["hspr", "mae_pp"])
    assert s.loc["hspr_robust", "coverage_90"] > s.loc["hspr", "coverage_90"]
    assert s.loc["hspr_robust", "mean_width_pp"] > s.loc["hspr", "mean_width_pp"]


def test_shift_settings_refuse_bad_values():
    for bad in ({"neighbour_fraction": 0.9}, {"max_held_out": 1}, {"level": 1.0}, {"level": 0.5}, {"min_factor": 0.5},
                {"max_factor": 1.1},
                {"prior_n": -1}, {"forward_fraction": 0.7}, {"strongest_fraction": 0.6},
                {"max_above_factor": float("inf")}, {"max_factor": float("inf")}, {"max_above_factor": float("nan")},
                {"min_strongest": 0}, {"min_strongest": float("inf")}, {"seed": float("inf")},
                {"threshold": 101}, {"blend_weights": (1.5,)},
                {"blend_weights": ()}, {"log_a_sds": (0.0,)}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            ShiftSettings(**bad)
    with pytest.raises(ValueError, match="at least 4 source agents"):
        HSPRRobust(config=FAST).fit(simulate_matrix(3, 20)[0])
    with pytest.raises(ValueError, match="not both"):
        HSPRRobust(config=FAST, table={})
    with pytest.raises(ValueError, match="expected a table of selections"):
        HSPRRobust(table=["rank", 1])
    # a hostile trial: damaged tables were accepted and failed in fit (a bare KeyError), or found no entry silently
    with pytest.raises(ValueError, match="hspr_robust table: entry b/0 needs a 'config' object"):
        HSPRRobust(table={"b": {"0": {"source_digest": "x"}}})
    with pytest.raises(ValueError, match="hspr_robust table: entry b/0: rank must be"):
        HSPRRobust(table={"b": {"0": {"config": {"rank": "x"}, "source_digest": "x"}}})
    with pytest.raises(ValueError, match="settings without folds"):
        get_method("hspr_auto", table={"rank": 1})
    # a re-trial: one list or null entry made the whole table 'settings without folds'; an empty digest never matches
    for bad in ([1, 2], None, {"config": {}, "source_digest": " "}):
        with pytest.raises(ValueError, match="entry b/2 needs a 'config' object and a non-empty 'source_digest'"):
            HSPRRobust(table={"b": {"0": {"config": {}, "source_digest": "x"}, "2": bad}})
    with pytest.raises(ValueError, match="this is one bank's entries"):
        HSPRRobust(table={"0": {"config": {}, "source_digest": "x"}})
    with pytest.raises(ValueError, match="hspr_robust's settings form"):
        HSPRRobust(table={"config": {"rank": 1}})


def test_robust_table_uses_the_entry_of_its_sources_and_round_trips(caplog):
    """A table of selections (hspr select --record) sets the configuration found by the sources'
    digest; sources it has no entry for compare ranks instead, and say so."""
    m = simulate_matrix(12, 30, seed=4)[0]
    cfg = FAST.replace(rank=1)
    table = {"mine": {"0": {"config": cfg.to_dict(), "source_digest": m.digest()}}}
    method = HSPRRobust(table=table, shift={"max_held_out": 6, "ranks": (2,)})
    assert method.fit(m).config.rank == 1
    again = type(method).from_params(method.get_params())
    assert again.table == table and again.shift == method.shift
    table["mine"]["0"]["config"]["rank"] = 4  # the caller's dict, changed later, does not change the method
    method.get_params()["table"]["mine"]["0"]["config"]["rank"] = 8
    assert method.table["mine"]["0"]["config"]["rank"] == 1
    assert "table" not in HSPRRobust().get_params()  # runs without a table keep their settings digest
    with caplog.at_level("WARNING"):
        fitted = method.fit(m.drop_rows([0]))
    assert fitted.config.rank == 2 and "its table has no configuration" in caplog.text


def test_settings_accept_a_large_max_factor_and_cap_above_it():
    """max_factor 3.5 was refused because the default max_above_factor (3) was below it (a hostile trial)."""
    s = ShiftSettings(min_factor=3.5, max_factor=3.5)
    assert s.max_above_factor == 3.0  # acts as 3.5: the factor above the history is never below the usual one


def test_above_history_messages_say_where_the_widening_came_from():
    base = dict(statistic="nearest-source disagreement", value=0.1, source_percentile=50.0, n_sources=94,
                above_history=True, source_max=0.682)
    widened = ShiftReport(**base, widening=2.24, n_strongest=14, strongest_widened=True)
    assert "widened by x2.24, the miss measured on the 14 strongest source agents" in widened.message
    usual = ShiftReport(**base, widening=1.25, n_strongest=14)
    assert "x1.25, as for every agent scored against these sources" in usual.message
    assert "called for no more than that" in usual.message
    none = ShiftReport(**base, widening=1.25)
    assert "no replays of the strongest source agents" in none.message and "0 strongest" not in none.message
    d = widened.to_dict()
    assert (d["above_history"], d["source_max"], d["n_strongest"], d["strongest_widened"]) == (True, 0.682, 14, True)
    no_max = ShiftReport("s", 0.1, 50.0, 10, 1.3, above_history=True)  # crashed on source_max None
    assert "above every source agent's score;" in no_max.message and no_max.to_dict()["source_max"] is None


def test_strongest_sources_are_ranked_on_the_tasks_they_ran():
    """With missing cells left missing, a strong agent that ran half the tasks is the strongest
    source, not a weak one (its missing cells counted as failures; a hostile trial)."""
    full = simulate_matrix(20, 60, seed=5)[0]
    order = np.argsort(full.scores())
    src = full.rows(order)  # weakest first, the strongest last
    miss = np.zeros(src.values.shape, bool)
    miss[-1, 30:] = True
    holey = ResponseMatrix(src.agents, src.tasks, src.values, miss)
    cal = leave_cluster_out(holey, [FAST], ShiftSettings(max_held_out=6, n_nodes=256, n_draws=2048, blend_weights=(0.0,),
                                                         strongest_fraction=0.1, min_held_out=4))[0]
    ran_rate = src.values[-1, :30].mean()
    assert cal.source_max == pytest.approx(max(ran_rate, src.values[:-1].mean(axis=1).max()))
    assert src.agents[-1] in cal.strongest and len(cal.strongest) == 2  # replayed as one of the 2 strongest (0.1 x 20)
    assert cal.source_max > holey.values[-1].mean()  # not the rate with its missing cells as 0 (ResponseMatrix stores 0)


def test_shift_report_message_names_the_bank_size_and_widening():
    r = ShiftReport("nearest-source disagreement", 0.4, 99.0, 114, 1.25)
    assert r.unlike_history
    assert "unlike the 114 source agents" in r.message and "x1.25" in r.message
    assert "is higher than 99 % of the held-out source agents'" in r.message
    # a new-user trial: a coin-flip agent (a harness grading at random) was flagged with no hint of that cause
    assert "harness fault (outcomes unrelated to the tasks): check a few by hand" in r.message
    # a new-user trial read an ordinary bank agent's flag as alarming, and 'widened ..., as for every agent' as the flag's
    # doing: the message says the flag widens nothing and how often agents like the sources are flagged (100 - 95 %)
    assert "as for every agent" in r.message and "and the flag does not widen it further" in r.message
    assert r.message.endswith("The check also flags about 5 % of agents like the sources.")
    assert "about 10 % of agents" in ShiftReport("d", 0.4, 99.0, 114, 1.25, threshold=90.0).message
    # a new-user trial: 'above 100 % of held-out sources'
    assert "is higher than every held-out source agent's;" in ShiftReport("d", 0.4, 100.0, 114, 1.25).message
    d = r.to_dict()
    assert d["unlike_history"] is True and json.loads(json.dumps(d)) == d
    assert not ShiftReport("x", 0.1, 50.0, 114, 1.0).unlike_history
    calm = ShiftReport("x", 0.1, 50.0, 114, 1.25, n_outcomes=40)
    assert calm.enough_outcomes and "within the range of the 114 source agents" in calm.message
    # a new-user trial read "this agent is within the range" as reassurance: the caveat leads
    assert calm.message.startswith("not flagged, and the check is a warning light, not a promise: this agent is within")
    told = ShiftReport("share", 0.1, 50.0, 114, 1.25, n_outcomes=40, unit="of its queried tasks differ")
    assert "(0.1 of its queried tasks differ; source percentile 50)" in told.message
    # a new-user trial read "(0.0156 of its queried tasks differ ...)" as a count: hspr_robust's share is in %
    share = ShiftReport("share", 0.0156, 50.0, 114, 1.25, n_outcomes=40, unit="of its queried tasks differ", percent=True)
    assert "(1.6 % of its queried tasks differ; source percentile 50)" in share.message and share.to_dict()["percent"]
    assert told.to_dict()["unit"] == "of its queried tasks differ" and "(0.1; source" in calm.message
    # the same trial: the paragraph after every record was noisy; in range, one clause; otherwise the whole message
    assert share.brief == ("not flagged: within the range of the 114 source agents (share 1.6 %, source percentile 50); interval "
                           "widened x1.25, as for every agent on these sources (`hspr live status` says more)")
    assert r.brief == r.message
    assert ShiftReport("x", 0.1, 50.0, 114, 1.25, n_outcomes=3).brief == (
        "too few outcomes (3 of 10) to compare with the sources yet; interval widened x1.25, as for every agent on these "
        "sources (`hspr live status` says more)")
    assert ShiftReport("x", 0.1, 50.0, 6, 1.25, n_outcomes=40, n_reference=6).brief.startswith(
        "too few source agents for a verdict (6 held-out source run(s), a verdict needs 19); interval widened")
    assert "interval not widened" in ShiftReport("x", 0.1, 50.0, 114, 1.0, n_outcomes=40).brief
    # a new-user trial answered from a bank row and read 'within the range' as reassurance
    twin = ShiftReport("share", 0.0, 0.0, 114, 1.25, n_outcomes=12, percent=True)
    note = ("its 12 outcomes so far equal a source agent's on every queried task: if it is an agent of the bank, it is "
            "scored against itself (with few outcomes a close source agent can also match by chance)")
    # said first (a new-user trial: last in a 700-character paragraph, it went unread)
    assert twin.message.startswith(note + ". Otherwise: not flagged, and the check is a warning light, not a promise: "
                                   "this agent is within the range of the 114 source agents")
    assert twin.brief.startswith(note + "; otherwise not flagged: within the range of the 114 source agents")
    named = ShiftReport("share", 0.0, 0.0, 114, 1.25, n_outcomes=12, percent=True, twins=("a_x", "b_y", "c_z"))
    assert named.message.startswith("its 12 outcomes so far equal source agent a_x's (and 2 others') on every queried")
    assert "equal source agent a_x's on every" in ShiftReport("s", 0.0, 0.0, 9, 1.0, n_outcomes=12, twins=("a_x",)).message
    assert "scored against itself" not in share.message + share.brief
    # the widening shared between the sides: the message gives each side's factor and which side misses more
    sided = ShiftReport("x", 0.1, 50.0, 114, 1.25, n_outcomes=40, sides=(1.2, 0.8))
    assert "widened by x1.50 below the estimate and x1.00 above it" in sided.message
    assert "more often below it than above" in sided.message and sided.to_dict()["sides"] == [1.2, 0.8]
    assert "more often above it than below" in ShiftReport("x", 0.1, 50.0, 114, 1.25, sides=(0.9, 1.1)).message
    # a hostile trial: a factor of 1 with unequal sides was reported as "not widened"
    one = ShiftReport("x", 0.1, 50.0, 114, 1.0, n_outcomes=40, sides=(1.2, 1.0))
    assert "widened by x1.20 below the estimate and x1.00 above it" in one.message and "not widened" not in one.message


def test_a_flag_one_task_would_lift_is_called_borderline():
    """A new-user trial: the same agent was flagged at percentile 96 on one set of tasks and passed at 89 on
    another; a flag one differing task fewer would lift now says it is a borderline case."""
    edge = ShiftReport("share", 0.34, 95.6, 113, 1.25, n_outcomes=50, percent=True, percentile_one_fewer=89.5)
    assert edge.unlike_history and edge.borderline and edge.to_dict()["borderline"]
    assert ("higher than 96 % of the held-out source agents' (a borderline case: with one differing task fewer it would "
            "lie at source percentile 90, within the range);") in edge.message
    clear = ShiftReport("share", 0.5, 99.0, 113, 1.25, n_outcomes=50, percent=True, percentile_one_fewer=97.0)
    assert clear.unlike_history and not clear.borderline and "borderline" not in clear.message
    calm = ShiftReport("share", 0.2, 60.0, 113, 1.25, n_outcomes=50, percent=True, percentile_one_fewer=40.0)
    assert not calm.borderline and calm.to_dict()["percentile_one_fewer"] == 40.0


def test_shift_report_withholds_a_verdict_on_too_few_outcomes():
    early = ShiftReport("nearest-source disagreement", 0.0, 99.0, 84, 1.25, n_outcomes=3, min_outcomes=10)
    assert not early.enough_outcomes and not early.unlike_history
    assert "too few outcomes (3)" in early.message and "84 source agents" in early.message
    assert "within the range" not in early.message and "unlike" not in early.message
    assert early.to_dict()["enough_outcomes"] is False and early.to_dict()["n_outcomes"] == 3
    assert ShiftReport("x", 0.4, 99.0, 84, 1.25, n_outcomes=10, min_outcomes=10).unlike_history


def test_robust_session_reports_too_few_outcomes_then_compares(small_bank):
    src, tgt = small_bank.drop_rows(range(2)), small_bank.rows(range(1))
    rob = HSPRRobust(config=FAST, shift=FAST_SHIFT).fit(src)
    s = rob.start(20, 0)
    seen = []
    while not s.done:
        t = s.ask()
        s.tell(t, int(tgt.values[0, tgt.task_index(t)]))
        rep = s.estimate().shift
        seen.append((rep.n_outcomes, rep.enough_outcomes))
    need = min(10, rob.calibration_.budget)
    assert seen == [(n, n >= need) for n in range(1, 21)]


# -- CLI and report ------------------------------------------------------------------------------
def test_cli_bash_only_protocol_labels_runs(tmp_path):
    out = tmp_path / "r.json"
    res = CliRunner().invoke(main, ["replay", "--targets", "bash-only", "--methods", "uniform", "--seeds", "0",
                                    "-q", "--out", str(out)])
    assert res.exit_code == 0, res.output
    d = json.loads(out.read_text())
    assert {r["bank"] for r in d["runs"]} == {"verified/bash-only"}
    assert {r["protocol"] for r in d["runs"]} == {"bash-only"}
    assert {r["target"] for r in d["runs"]} == set(load_target_set("bash-only").agents)
    assert d["summary"][0]["n_targets"] == 28


@pytest.mark.parametrize("split", ["forward", "strongest"])
def test_cli_forward_and_strongest_splits(tmp_path, split):
    m = dated(simulate_matrix(12, 30, seed=4)[0])
    path = tmp_path / "m.csv"
    pd.DataFrame(m.values, index=pd.Index(m.agents, name="agent"), columns=m.tasks).to_csv(path)
    out = tmp_path / "r.json"
    res = CliRunner().invoke(main, ["replay", "--matrix", str(path), "--bank", "sim", "--split", split,
                                    "--newest" if split == "forward" else "--strongest", "3", "--methods", "uniform",
                                    "--seeds", "0", "-q", "--out", str(out)])
    assert res.exit_code == 0, res.output
    d = json.loads(out.read_text())
    want = (set(sorted(m.agents)[-3:]) if split == "forward"
            else {m.agents[i] for i in np.argsort(-np.asarray(m.scores()), kind="stable")[:3]})
    assert {r["target"] for r in d["runs"]} == want
    assert {r["bank"] for r in d["runs"]} == {f"sim/{split}-3"} and {r["protocol"] for r in d["runs"]} == {f"{split}-3"}


@pytest.mark.parametrize("args,match", [
    (["--targets", "bash-only", "--split", "forward"], "not both"),
    (["--targets", "bash-only", "--split", "strongest"], "not both"),
    (["--bank", "pro", "--split", "strongest", "--strongest", "13"], "pro: --strongest must be a whole number from 1 to 12"),
    # a hostile trial: told to drop a --matrix it had not given
    (["--targets", "bash-only", "--bank", "lite"], "scored against the 'verified' bank: use --bank verified"),
    (["--targets", "no-such-set"], "neither a file nor a bundled target set"),
    (["--bank", "pro", "--split", "forward"], "pro: a time-forward split needs agent ids that start with a date"),
    (["--bank", "all", "--split", "forward"], "pro: a time-forward split"),
    (["--bank", "all", "--split", "forward"], "the dated ones are lite, verified, full: give them one at a time"),
    # a hostile trial: each bank's range in turn (20: pro's 12; 80: full's 20; ...)
    (["--bank", "all", "--split", "strongest"], "(--strongest 20, the default, must suit every bank of --bank all: give "
                                                "one from 1 to 12)"),
    (["--bank", "all", "--split", "strongest", "--strongest", "80"], "(--strongest 80 must suit every bank"),
])
def test_cli_shift_protocol_errors(tmp_path, args, match):
    res = CliRunner().invoke(main, ["replay", "--methods", "uniform", "-q", "--out", str(tmp_path / "r.json"), *args])
    assert res.exit_code == 2
    assert match in " ".join(res.output.split())
    assert "Traceback" not in res.output and "without --matrix" not in res.output  # none given here
    if "all" in args:  # a re-trial: Full's tie warning came before Pro's error; every bank's cut is checked first
        assert "warning" not in res.output


def test_cli_split_error_says_how_many_sources_the_split_left(tmp_path):
    res = CliRunner().invoke(main, ["replay", "--bank", "pro", "--split", "strongest", "--strongest", "12", "--methods",
                                    "hspr_auto", "--seeds", "0", "-q", "--out", str(tmp_path / "r.json")])
    assert res.exit_code == 2
    text = " ".join(res.output.split())
    assert "needs at least 3, got 2" in text
    assert "--strongest 12 leaves 2 of 14 agents as sources; a smaller --strongest leaves more" in text


def test_report_keeps_shift_protocols_out_of_the_macro():
    rows = []
    for bank, err in (("lite", 0.01), ("verified", 0.02), ("verified/bash-only", 0.10)):
        for t in range(3):
            rows.append(dict(bank=bank, method="m", seed=0, target=f"t{t}", budget=10, budget_fraction=0.1,
                             estimate=0.5 + 0.1 * t + err * (t - 1), truth=0.5 + 0.1 * t, lower=0.3, upper=0.9))
    table = comparison_table(pd.DataFrame(rows))
    macro = table[table["bank"] == MACRO]
    assert macro["mae_pp"].item() == pytest.approx((100 * 0.02 / 3 + 100 * 0.04 / 3) / 2)
    assert "verified/bash-only" in set(table["bank"])


def test_one_se_choice_keeps_the_default_unless_clearly_better():
    from hspr.methods.hspr.shift_stats import one_se_choice

    rng = np.random.default_rng(0)
    base = rng.normal(0, 0.02, size=50)
    noisy = base + rng.normal(0, 0.01, size=50)  # same accuracy, different noise
    assert one_se_choice(np.array([base, noisy])) == 0
    better = base * 0.5  # every |error| halved: clearly better
    assert one_se_choice(np.array([base, noisy, better])) == 2
    # two clearly better rows: the lower mean wins
    assert one_se_choice(np.array([base, base * 0.6, base * 0.3])) == 2
    # hand-checked: differences (-1, -1, -1, -1) have sd 0, so any mean drop is clear
    assert one_se_choice(np.array([[2.0, 2, 2, 2], [1.0, 1, 1, 1]])) == 1


def test_report_without_hspr_uses_a_method_in_the_results(tmp_path):
    """A shift-only results file without plain hspr still gets its tables (no --baseline needed)."""
    out = tmp_path / "r.json"
    res = CliRunner().invoke(main, ["replay", "--targets", "bash-only", "--methods", "uniform,rsl", "--seeds", "0",
                                    "-q", "--out", str(out)])
    assert res.exit_code == 0, res.output
    rep = CliRunner().invoke(main, ["report", str(out), "--out-dir", str(tmp_path / "rep"), "--no-figures"])
    assert rep.exit_code == 0, rep.output
    md = (tmp_path / "rep" / "comparison.md").read_text()
    assert "verified/bash-only" in md
    assert "Macro MAE" not in md  # shift protocols only: no macro table
    paired = pd.read_csv(tmp_path / "rep" / "paired.csv")
    assert set(paired["method"]) == {"rsl"}  # compared with the first method, uniform


def test_strongest_split_with_a_task_subset_ranks_by_the_subset_score(tmp_path):
    """A trial: with --tasks, --split strongest chose targets by the full-bank score, so a target
    could score below a source on the subset its truth is measured on."""
    m = simulate_matrix(12, 30, seed=4)[0]
    path = tmp_path / "m.csv"
    pd.DataFrame(m.values, index=pd.Index(m.agents, name="agent"), columns=m.tasks).to_csv(path)
    subset = list(m.tasks[:10])
    (tmp_path / "sub.txt").write_text("\n".join(subset) + "\n")
    out = tmp_path / "r.json"
    res = CliRunner().invoke(main, ["replay", "--matrix", str(path), "--bank", "sim", "--split", "strongest",
                                    "--strongest", "3", "--tasks", str(tmp_path / "sub.txt"), "--methods", "uniform",
                                    "--seeds", "0", "-q", "--out", str(out)])
    assert res.exit_code == 0, res.output
    d = json.loads(out.read_text())
    sub = m.select_tasks(subset).scores()
    targets = {r["target"] for r in d["runs"]}
    assert min(sub[m.agents.index(t)] for t in targets) >= max(sub[i] for i, a in enumerate(m.agents)
                                                               if a not in targets)
    # an explicit --strongest or --newest without its split is refused before any work, even at the
    # default value (it ran the 4-fold replay: a new-user trial)
    out.unlink()
    for opt, split in (("--strongest", "strongest"), ("--newest", "forward")):
        res = CliRunner().invoke(main, ["replay", "--matrix", str(path), opt, "20", "--methods", "uniform",
                                        "--seeds", "0", "-q", "--out", str(out)])
        assert res.exit_code == 2 and f"{opt} is used only with --split {split}: add --split {split}" in res.output
        assert not out.exists()


def test_robust_fit_calibrates_with_one_blas_thread(monkeypatch):
    """A library user's fit runs its calibration with BLAS limited to one thread, as the CLI does
    (a trial measured 237 s with the threaded default against 41 s limited, Lite sources), and
    the caller's limits are back afterwards."""
    from threadpoolctl import threadpool_info

    import hspr.methods.hspr.robust as robust

    def blas_threads():
        return {d["num_threads"] for d in threadpool_info() if d["user_api"] == "blas"}

    if not blas_threads():
        pytest.skip("no BLAS library seen by threadpoolctl")
    seen = []

    def spy(*args, **kwargs):
        seen.append(blas_threads())
        raise RuntimeError("stop after the check")

    before = blas_threads()
    monkeypatch.setattr(robust, "leave_cluster_out", spy)
    with pytest.raises(RuntimeError, match="stop after"):
        get_method("hspr_robust").fit(simulate_matrix(8, 30, seed=0)[0])
    assert seen == [{1}]
    assert blas_threads() == before


def test_no_shift_verdict_with_too_few_held_out_sources():
    """A new-user trial: with 6 sources, 24 of 60 runs of agents like them were called unlike the history;
    an agent like n held-out sources lies above all of them with probability 1/(n + 1)."""
    from hspr.shift_report import ShiftReport

    def report(n_reference, threshold=95.0):
        return ShiftReport("nearest-source disagreement", 0.4, 100.0, 6, 1.25, threshold, n_outcomes=20,
                           n_reference=n_reference)

    assert report(None).min_reference == 19 and report(None, 90.0).min_reference == 9
    assert [report(n).unlike_history for n in (6, 18, 19, None)] == [False, False, True, True]
    assert report(10, 90.0).unlike_history and not report(8, 90.0).unlike_history
    msg = report(6).message
    assert "too few source agents to tell" in msg and "6 held-out source run(s)" in msg and "needs 19" in msg
    assert report(6).to_dict()["enough_reference"] is False
    # a new-user trial: before any outcome it said "too few outcomes", as if a verdict would come with more
    early = ShiftReport("nearest-source disagreement", 0.0, 0.0, 6, 1.25, 95.0, n_outcomes=0, n_reference=6).message
    assert early.startswith("too few source agents to tell whether this agent is unlike them: there are 6 held-out "
                            "source run(s), and a verdict needs 19, so this bank gives none") and "outcomes" not in early
    assert "so this bank gives none" in msg


def test_replay_warns_of_a_strongest_cut_inside_a_tie_naming_the_subset(tmp_path):
    """A hostile trial: `--split strongest` said nothing when its cut fell inside a tie of scores (the forward split
    warns); a re-trial: with --tasks the warning named the bank without the subset whose scores it ranks."""
    rng = np.random.default_rng(0)
    y = (rng.random((12, 40)) < 0.4).astype(int)
    y[3], y[7] = 0, 0
    y[3, :30] = y[7, :30] = 1  # the two strongest, tied at 30 of 40 and at 30 of the first 30
    csv = tmp_path / "m.csv"
    pd.DataFrame(y, index=[f"a{i:02d}" for i in range(12)], columns=[f"t{j}" for j in range(40)]).rename_axis(
        "agent").to_csv(csv)
    (tmp_path / "sub.txt").write_text("\n".join(f"t{j}" for j in range(30)))
    for extra, label in (((), "m"), (("--tasks", str(tmp_path / "sub.txt")), "m[30 tasks]")):
        res = CliRunner().invoke(main, ["replay", "--matrix", str(csv), "--split", "strongest", "--strongest", "1",
                                        "--methods", "uniform", "--seeds", "0", "-q", "--out", str(tmp_path / "o.json"),
                                        *extra])
        said = " ".join(res.output.split())
        assert res.exit_code == 0 and f"warning: {label}: the strongest-score cut falls inside a tie: 1 of the 2 agents" \
            in said and "--strongest 2 cuts between scores" in said, said


def test_pass_rate_estimate_is_the_outcomes_plus_the_source_rates():
    rate = np.array([0.2, 0.5, 0.9, 0.4])
    point, half = pass_rate_estimate(rate, np.array([1, 3]), np.array([1.0, 0.0]))
    assert point == pytest.approx((1 + 0.2 + 0.9) / 4)
    assert half == pytest.approx(stats.norm.ppf(0.95) * np.sqrt(0.2 * 0.8 + 0.9 * 0.1) / 4)  # the unseen tasks 0, 2
    assert pass_rate_estimate(rate, np.array([], int), np.array([]))[0] == pytest.approx(rate.mean())  # no outcome
    assert pass_rate_estimate(rate, np.arange(4), np.array([1.0, 0, 1, 1])) == pytest.approx((0.75, 0.0))  # exact
    # a missing cell counts as unresolved, as in a replay target's true score (a hostile trial: filled from the
    # sources that ran the task, the point sat 7.5 pp above the truths of a bank with 15 % missing cells)
    values = np.array([[1.0, 1.0], [1.0, 1.0], [1.0, 0.0]])  # the cell at (1, 0) is missing, whatever it holds
    missing = np.array([[False, False], [True, False], [False, False]])
    np.testing.assert_allclose(unresolved_rates(values, missing), [2 / 3, 2 / 3])
    np.testing.assert_allclose(unresolved_rates(values, None), [1.0, 2 / 3])


def _coin_and_model_banks():
    """A 40 x 120 bank of fair coin flips (the shift issue's no-structure case) and a structured one."""
    coin = np.random.default_rng(0).integers(0, 2, (40, 120))
    names = [f"a{i:02d}" for i in range(40)], [f"t{j:03d}" for j in range(120)]
    return ResponseMatrix(*names, coin), simulate_matrix(40, 120, seed=3)[0]


def test_a_history_of_coin_flips_falls_back_to_the_source_pass_rates():
    """Robust step 6: on coin flips the held-out source runs find the model clearly worse than the outcomes seen
    plus the sources' pass rates, which then give the point and its own interval; on a bank from a factor
    model, or below a calibration budget of 10 tasks, they do not."""
    coin, structured = _coin_and_model_banks()
    shift = ShiftSettings(max_held_out=30, n_nodes=256, n_draws=2048, min_held_out=20)
    rob = HSPRRobust(config=FAST, shift=shift).fit(coin.drop_rows(range(10)))
    cal = rob.calibration_
    assert cal.fallback and cal.fallback_maes[1] < cal.fallback_maes[0]
    rate = coin.drop_rows(range(10)).values.mean(axis=0)
    for target in range(3):
        s = _finished(rob, coin, target, 12)
        e = s.estimate()
        cols, y = s.told()
        point, half = pass_rate_estimate(rate, cols, y)
        assert e.point == pytest.approx(point, abs=1e-12)
        if not e.shift.above_history:  # its own half-width times the factor of its held-out misses
            assert (e.lower, e.upper) == pytest.approx((point - cal.factor * half, point + cal.factor * half), abs=1e-12)
        assert e.shift.to_dict()["pass_rate_maes"] == list(cal.fallback_maes)
        assert e.shift.to_dict()["pass_rate_budget"] == 12
        for text in (e.shift.message, e.shift.brief):  # the verdict after the note starts a sentence
            assert "does not predict" in text and "with 12 tasks each" in text
            assert re.search(r"at its source pass rate\. [A-Z]", text), text
            assert "as for every agent" not in text  # its interval is its own, not the model's widened
    # the width forecast follows the pass-rate spread: before any outcome, the interval's width times
    # sqrt(share of the unseen tasks still unseen after the budget)
    fresh = rob.start(12, 0)
    w0 = fresh.estimate().width
    assert fresh.expected_width() == pytest.approx(w0 * np.sqrt(108 / 120), rel=1e-9)
    full = _finished(rob, coin, 0, 120).estimate()
    assert full.point == pytest.approx(coin.values[0].mean(), abs=1e-12) and full.upper - full.lower < 1e-12
    assert "does not predict" not in full.shift.message  # every task recorded: no other task to fill in
    off = HSPRRobust(config=FAST, shift=replace(shift, fallback=False)).fit(coin.drop_rows(range(10)))
    assert not off.calibration_.fallback and off.calibration_.fallback_maes == ()
    on_model = HSPRRobust(config=FAST, shift=shift).fit(structured.drop_rows(range(10))).calibration_
    assert not on_model.fallback and on_model.fallback_maes[0] < on_model.fallback_maes[1]
    # a calibration budget below 10 tasks (10 % of 80) decides nothing: too few outcomes to judge either point
    small = HSPRRobust(config=FAST, shift=shift).fit(coin.drop_rows(range(10)).select_tasks(coin.tasks[:80]))
    assert small.calibration_.budget == 8 and not small.calibration_.fallback and small.calibration_.fallback_maes == ()


def test_replay_notes_the_runs_estimated_from_the_pass_rates():
    from hspr.report import pass_rate_notes

    runs = [{"bank": "coin", "method": "hspr_robust", "budget": 12, "shift": {"pass_rate_maes": [0.05, 0.04]}},
            {"bank": "coin", "method": "hspr_robust", "budget": 12, "shift": {"pass_rate_maes": []}},
            {"bank": "coin", "method": "hspr", "budget": 12},
            {"bank": "lite", "method": "hspr_robust", "budget": 50, "shift": {"pass_rate_maes": []}}]
    notes = pass_rate_notes(runs)
    assert len(notes) == 1 and notes[0].startswith("coin hspr_robust at 12 tasks: 1 of 2 runs were estimated")
    assert pass_rate_notes(runs[::-1]) == notes == pass_rate_notes(pd.DataFrame(runs))  # NaN where a run has no shift
    two = runs + [{"bank": "a", "method": "hspr_robust", "budget": 5, "shift": {"pass_rate_maes": [0.1, 0.05]}}]
    assert [n.split(" at ")[0] for n in pass_rate_notes(two)] == ["a hspr_robust", "coin hspr_robust"]


def test_shift_messages_print_the_percentile_on_its_side_of_the_threshold_and_name_what_was_compared():
    """A trial of the shift flag: 94.74 was printed '95 ... within the range' (the threshold is 95); 'of its queried
    tasks' was said of the first 50 of 100; the percentile's reference runs were not named; the flagged message
    said 'run more tasks', which did not make the interval hold."""
    unit = "of its queried tasks differ from the closest source agent"
    near = ShiftReport("nearest-source disagreement", 0.3, 94.74, 114, 1.25, n_reference=57, unit=unit, percent=True)
    assert not near.unlike_history
    assert "(30.0 % of its queried tasks differ from the closest source agent; source percentile 94.7 among 57 " \
           "held-out source runs)" in near.message
    assert "percentile 35 among 57" in ShiftReport("s", 0.1, 35.2, 114, 1.25, n_reference=57).message  # whole, far off
    flagged = ShiftReport("nearest-source disagreement", 0.4, 95.3, 114, 1.25, n_reference=57, unit=unit, percent=True,
                          n_compared=50, n_outcomes=100)
    said = flagged.message
    assert flagged.unlike_history and "is higher than 95.3 % of the held-out source agents' (57 held-out runs)" in said
    assert "on its first 50 queried tasks (40.0 % of those tasks differ" in said
    assert "run more tasks" not in said and "more tasks lower the error but do not make the interval hold more often" in said
    # a re-trial: the short line after each record rounded too; 94.96 read 95.0; 99.6 was 'every' source agent's
    assert "source percentile 94.7)" in near.brief
    assert "source percentile 94.96 among 57" in ShiftReport("s", 0.3, 94.96, 114, 1.25, n_reference=57).message
    assert "higher than 99.6 % of the held-out" in ShiftReport("s", 0.3, 99.6, 114, 1.25, n_reference=57).message
    assert "higher than every held-out" in ShiftReport("s", 0.3, 100.0, 114, 1.25, n_reference=57).message
