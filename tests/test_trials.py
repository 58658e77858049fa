"""Repeated trials per task (Terminal-Bench style): banks of success counts, pass-rate outcomes."""

from __future__ import annotations

import json
import os
import re
import warnings

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from scipy import optimize, special, stats

from hspr.cli import main
from hspr.data import ResponseMatrix
from hspr.data.banks import load_bank
from hspr.data.io import load_matrix, read_trials_csv
from hspr.data.matrix import DataError
from hspr.live import LiveSession, LiveSessionError, parse_outcome
from hspr.methods import get_method
from hspr.methods.hspr import HSPR, HSPRConfig
from hspr.methods.hspr.posterior import outcome_log_terms
from hspr.methods.hspr.source_fit import fit_zib_prior
from hspr.replay import replay
from hspr.session import Method

FAST = HSPRConfig(n_nodes=256, n_draws=2048)


def simulate_trials(n_agents: int, n_tasks: int, trials: int, seed: int = 0) -> ResponseMatrix:
    """Success counts from a 2PL: agent ability + task difficulty, ``trials`` Bernoulli draws per cell."""
    rng = np.random.default_rng(seed)
    theta = rng.normal(0, 1.2, n_agents)
    b = rng.normal(0, 1.5, n_tasks)
    p = 1 / (1 + np.exp(-(theta[:, None] - b[None, :])))
    counts = rng.binomial(trials, p)
    return ResponseMatrix([f"a{i:02d}" for i in range(n_agents)], [f"t{j:03d}" for j in range(n_tasks)], counts,
                          trials=trials)


def test_trials_csv_reader_and_bundled_bank(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("agent,task_id,successes,trials\nb,x,3,5\na,x,5,5\na,y,0,5\n")
    m = load_matrix(p)
    assert m.trials == 5 and m.agents == ("a", "b") and m.tasks == ("x", "y")
    np.testing.assert_allclose(m.rates()[0], [1.0, 0.0])
    assert m.missing is not None and m.missing[1, 1]  # b never ran y
    tb = load_bank("terminal-bench")
    assert tb.shape == (25, 80) and tb.trials == 5
    # SOURCE.md: per-agent mean pass rate min 0.128, max 0.643; 524 cells neither 0 nor 1
    assert tb.scores().min() == pytest.approx(0.1275) and tb.scores().max() == pytest.approx(0.6425)
    assert int(((tb.values > 0) & (tb.values < 5)).sum()) == 524


@pytest.mark.parametrize("body,match", [
    ("a,x,6,5\n", "successes 6 of 5 trials"),
    ("a,x,1,5\na,y,1,4\n", "line 3: 4 trials where line 2 has 5"),
    ("a,x,1,5\na,y,1,4\n", "or delete the line of a pair with fewer trials: a pair with no line is a missing cell"),
    ("a,x,1.5,5\n", "column successes: '1.5' is not a whole number"),
    ("a,x,1,5\na,x,2,5\n", "lines 2 and 3 both give agent 'a', task_id 'x'"),
    ("a,x,-1,5\n", "column successes: '-1' is negative"),
    ("a,x,\u00b2,5\n", "is not a whole number"),
    ("a,x,3," + "1" * 30 + "\n", "is too large"),
])
def test_trials_csv_errors_name_the_line(tmp_path, body, match):
    p = tmp_path / "bad.csv"
    p.write_text("agent,task_id,successes,trials\n" + body)
    with pytest.raises(DataError, match=match):
        read_trials_csv(p)


def test_matrix_with_trials_validates_counts_and_keeps_trials_through_transforms():
    with pytest.raises(DataError, match=r"success count in 0..3"):
        ResponseMatrix(["a"], ["x", "y"], [[1, 4]], trials=3)
    m = simulate_trials(8, 10, 4, seed=1)
    assert m.rows([0, 1]).trials == m.canonical().trials == m.select_tasks(["t001"]).trials == 4
    assert m.digest() != ResponseMatrix(m.agents, m.tasks, (m.values > 0).astype(int)).digest()
    assert ResponseMatrix(["a"], ["x"], [[1]], trials=1).trials is None  # one trial is a plain 0/1 bank
    class ZeroOne(Method):  # every registered method takes pass rates; a method of one's own may not
        name = "zero_one"

        def fit(self, source):
            raise AssertionError("refused before the fit")

    with pytest.raises(DataError, match="pass rates over 4 trials; zero_one takes one 0/1 outcome"):
        ZeroOne().fit(m)


def _zib_nll(x, h, n):
    """The ZIB marginal likelihood written out independently: scipy's pmf at whole counts, the
    gamma-function continuation at fractional ones."""
    pi, a, b = x
    k = np.asarray(h, float)
    ll = (special.gammaln(n + 1) - special.gammaln(k + 1) - special.gammaln(n - k + 1)
          + special.betaln(k + a, n - k + b) - special.betaln(a, b))
    whole = k == np.round(k)
    ll[whole] = stats.betabinom.logpmf(k[whole], np.broadcast_to(n, k.shape)[whole], a, b)
    terms = np.log1p(-pi) + ll
    return -np.where(k == 0, np.logaddexp(np.log(pi), terms), terms).sum()


@pytest.mark.parametrize("h, n", [
    (np.array([0.0, 2.4, 3.0, 5.6, 0.0, 1.2, 8.0, 0.0, 4.5]), 8),  # sums of pass rates over 8 sources
    (np.random.default_rng(3).binomial(12, np.random.default_rng(4).beta(0.8, 1.5, 300)), 12),
    (np.array([0, 0, 1, 3, 2, 0, 5, 4]), np.array([5, 3, 4, 6, 2, 1, 5, 6])),  # per-task runs
])
def test_zib_prior_is_the_marginal_likelihood_optimum(h, n):
    prior = fit_zib_prior(h, n)
    x = np.array([prior.pi, prior.alpha, prior.beta])
    best = _zib_nll(x, h, n)
    tol = 1e-7 * abs(best)  # L-BFGS-B stops at a relative change of about 2e-9 per step
    # no nearby point (each coordinate moved by 1 % in logit / log space) has a higher likelihood
    for d in np.vstack([np.eye(3), -np.eye(3)]) * 0.01:
        lp, la, lb = special.logit(x[0]) + d[0], np.log(x[1]) + d[1], np.log(x[2]) + d[2]
        if -15 < lp < 15:
            assert _zib_nll([special.expit(lp), np.exp(la), np.exp(lb)], h, n) >= best - tol
    # and a derivative-free search from the fit finds nothing better
    nm = optimize.minimize(lambda y: _zib_nll([special.expit(y[0]), np.exp(y[1]), np.exp(y[2])], h, n),
                           [special.logit(x[0]), np.log(x[1]), np.log(x[2])], method="Nelder-Mead",
                           options={"xatol": 1e-8, "fatol": 1e-10})
    assert nm.fun >= best - tol


def test_source_pass_rates_are_rates_not_success_counts():
    # a docstring audit: on a bank of 5 trials the per-task "pass rate" was the mean success count
    # (2.76 for a task passed in about half of the trials), and Mid-Range ordered tasks by it
    from hspr.methods.orders import midrange_order
    from hspr.methods.stratified import source_pass_rates

    counts = np.array([[5, 0, 3, 1], [5, 1, 2, 0], [4, 0, 3, 2]])
    m = ResponseMatrix(("a", "b", "c"), ("t1", "t2", "t3", "t4"), counts, trials=5)
    rates = source_pass_rates(m)
    np.testing.assert_allclose(rates, [14 / 15, 1 / 15, 8 / 15, 3 / 15])
    assert midrange_order(rates).tolist() == [2, 3, 0, 1]  # t3 (0.53) is the mid-range task, not t2
    binary = ResponseMatrix(("a", "b"), ("t1", "t2"), np.array([[1, 0], [1, 1]]))
    np.testing.assert_allclose(source_pass_rates(binary), [1.0, 0.5])


def test_pass_rate_outcome_is_the_quasi_likelihood():
    rng = np.random.default_rng(0)
    p = rng.uniform(0.1, 0.9, (4, 3))
    q = 1 - p
    ps, pf = np.array([0.0, 1.0, 2.4]), np.array([0.0, 2.0, 0.6])
    y = np.array([0.4, 1.0, 0.0])
    got = outcome_log_terms(p, q, 1.0, ps, pf, y)
    one = outcome_log_terms(p, q, 1.0, ps, pf, np.ones(3))
    zero = outcome_log_terms(p, q, 1.0, ps, pf, np.zeros(3))
    np.testing.assert_allclose(got, y * one + (1 - y) * zero, rtol=1e-12)


def test_hspr_on_pass_rates_exact_at_full_budget_and_tracks_scores():
    m = simulate_trials(40, 60, 5, seed=2)
    src, tgt = m.drop_rows(range(8)), m.rows(range(8))
    model = HSPR(FAST).fit(src)
    s = model.start(60, 0)
    while not s.done:
        t = s.ask()
        s.tell(t, float(tgt.rates()[0, tgt.task_index(t)]))
    e = s.estimate()
    # the paper's HSPR sums its outcomes in float (HSPR_SPEC section 5), the exact score divides the successes
    # once: equal to the last bit or two (the methods kept within the outcomes' range are exact, below)
    assert e.point == pytest.approx(tgt.scores()[0], abs=1e-15)
    assert e.lower == pytest.approx(e.point, abs=1e-15) and e.upper == pytest.approx(e.point, abs=1e-15)
    runs = pd.DataFrame(replay("sim", m, {"hspr": HSPR(FAST), "uniform": get_method("uniform")}, fractions=(0.2,),
                               seeds={"hspr": (0, 1), "uniform": range(10)},
                               folds=[list(m.agents[i::4]) for i in range(4)]))
    truth = dict(zip(m.agents, m.scores()))
    assert runs["truth"].to_numpy() == pytest.approx(runs["target"].map(truth).to_numpy())
    mae = runs.assign(e=(runs["estimate"] - runs["truth"]).abs()).groupby("method")["e"].mean()
    assert mae["hspr"] < mae["uniform"]  # the source fit on pass rates carries information
    assert (runs["lower"] <= runs["estimate"] + 1e-12).all() and (runs["estimate"] <= runs["upper"] + 1e-12).all()


@pytest.mark.parametrize("name", ["uniform", "stratified", "rsl", "atlas", "faq", "hspr_robust"])
@pytest.mark.filterwarnings("ignore::hspr.errors.UnaskedTaskWarning")  # it tells tasks not asked, on purpose
def test_full_budget_on_pass_rates_is_the_score_bit_for_bit_in_any_telling_order(name):
    """An API trial: at full budget on a bank of repeated trials the estimate was the sum of the told
    pass rates in telling order, so two orders gave scores one unit in the last place apart, and
    neither always equalled ResponseMatrix.scores()."""
    from fractions import Fraction

    m = simulate_trials(14, 37, 3, seed=1)
    src, rates = m.drop_rows([0]), m.rates()[0]
    truth = float(Fraction(int(m.values[0].sum()), 3 * 37))  # the successes over trials x tasks, rounded once
    assert m.scores()[0] == truth
    model = get_method(name, **({"config": FAST} if name == "hspr_robust" else {})).fit(src)
    for order in (np.arange(37), np.arange(37)[::-1], np.random.default_rng(5).permutation(37)):
        s = model.start(37, 0)
        for j in order:
            s.tell(m.tasks[j], float(rates[j]))
        e = s.estimate()
        assert e.point == e.lower == e.upper == truth, (name, e)


def test_hspr_robust_on_pass_rates_calibrates_and_widens_hspr():
    from hspr.methods.hspr.robust import HSPRRobust, ShiftSettings
    from hspr.methods.hspr.shift_stats import nearest_disagreement, widened

    # a cell's disagreement with a pass rate is |rate - y|: source 0 is 0.6 from y on task 1, 0.2 on task 0
    src = np.array([[0.2, 1.0], [1.0, 0.4]])
    assert nearest_disagreement(src, np.array([0, 1]), np.array([0.0, 0.4])) == pytest.approx((0.2 + 0.6) / 2)
    m = simulate_trials(40, 60, 5, seed=4)
    srcm, tgt = m.drop_rows(range(4)), m.rows(range(4))
    shift = ShiftSettings(max_held_out=8, n_nodes=256, n_draws=2048, min_held_out=4)
    rob = HSPRRobust(config=FAST, shift=shift).fit(srcm)
    base = HSPR(FAST).fit(srcm)
    c = rob.calibration_.factor
    assert shift.min_factor <= c <= shift.max_factor and len(rob.calibration_.errors) >= 8
    for r in range(tgt.n_agents):
        s0, s1 = base.start(12, 1), rob.start(12, 1)
        while not s0.done:
            t = s0.ask()
            assert s1.ask() == t
            y = float(tgt.rates()[r, tgt.task_index(t)])
            s0.tell(t, y)
            s1.tell(t, y)
        e0, e1 = s0.estimate(), s1.estimate()
        assert e1.point == e0.point
        assert (e1.lower, e1.upper) == pytest.approx(widened(e0.point, e0.lower, e0.upper, c))
        # a new-user trial read "0 of its queried tasks differ" for pass rates: the statistic is a mean difference
        assert e1.shift.unit.startswith("mean difference in pass rate") and "of its queried tasks differ" not in \
            e1.shift.message


def test_source_selection_and_hspr_auto_on_pass_rates():
    from hspr.methods.hspr import selection as sel
    from hspr.methods.hspr.source_fit import fit_source

    m = simulate_trials(7, 30, 5, seed=6)
    tiny = HSPRConfig(n_nodes=64, n_draws=512)
    res = sel.select_config(m, base_config=tiny)
    rates = m.rates()
    fits = [fit_source(np.delete(rates, i, axis=0)) for i in range(m.n_agents)]
    for row, cfg in zip(res.stages[0][:4], sel.stage1(tiny).settings()[:4]):
        e = sel.loo_setting_errors(m, cfg, seeds=(0,), deterministic=True, fits=fits)
        assert row["mae"] == pytest.approx(e.mean(), abs=1e-12)  # held-out truths are mean pass rates
    assert np.all(np.isfinite([r["mae"] for r in res.stages[2]]))
    auto = get_method("hspr_auto", base_config=tiny).fit(m)
    assert auto.config.rank == res.config.rank and auto.config.kappa == res.config.kappa
    s = auto.start(6, 0)
    s.tell(s.ask(), 0.6)  # its sessions take pass rates


def test_session_refuses_a_pass_rate_where_it_takes_bits():
    m = simulate_trials(12, 20, 5, seed=3)
    s = get_method("uniform").fit(m).start(5, 0)
    s.tell(s.ask(), 0.6)
    b = ResponseMatrix(m.agents, m.tasks, (m.values == 5).astype(int))
    with pytest.raises(ValueError, match="must be 0 or 1, got 0.6"):
        get_method("atlas").fit(b).start(5, 0).tell(m.tasks[0], 0.6)


def test_parse_outcome_k_of_trials():
    assert parse_outcome("3/5", 5) == pytest.approx(0.6)
    assert parse_outcome("5/5", 5) == 1 and parse_outcome(" 0 / 5 ", 5) == 0
    for bad in ("6/5", "3/4", "x/5", "resolved", "\u0663/5", "\u00b2/5", "-1/5", "3/5/1"):
        with pytest.raises(LiveSessionError, match="k/5"):
            parse_outcome(bad, 5)
    with pytest.raises(LiveSessionError, match="not one of"):
        parse_outcome("3/5")
    # a new-user trial: every refused form got the same words; the command line's text now gets its fix
    with pytest.raises(LiveSessionError, match=r"write the pass rate 0\.6 as 3/5$"):
        parse_outcome("0.6", 5)
    for word in ("resolved", "1", "0"):
        with pytest.raises(LiveSessionError, match=r"ambiguous with 5 trials per task .* e\.g\. 5/5 or 0/5$"):
            parse_outcome(word, 5)
    for rate, fix in (("1.0", "5/5"), ("0.0", "0/5"), ("1e0", "5/5")):  # a new-user trial: 1.0 was told it is a word
        with pytest.raises(LiveSessionError, match=rf"write the pass rate {re.escape(rate)} as {fix}$"):
            parse_outcome(rate, 5)
    for bad in ("0.65", "1e400", "nan", "\u0663/5"):
        with pytest.raises(LiveSessionError, match=r"trials\)$"):
            parse_outcome(bad, 5)
    # a re-trial: '60%', '3 of 5', '8/10', '3/4' and '6/5' got the bare message
    for bad, fix in (("60%", "write the pass rate 60% as 3/5"), ("3 of 5", "write it as 3/5"),
                     ("3 out of 5", "write it as 3/5"), ("6/5", "at most 5 of the 5 trials can succeed"),
                     ("8/10", "the bank has 5 trials per task: record the successes of 5 trials"),
                     ("3/4", "the bank has 5 trials per task")):
        with pytest.raises(LiveSessionError, match=re.escape(fix)):
            parse_outcome(bad, 5)


def test_parse_outcome_takes_a_pass_rate_given_as_a_number_as_tell_does():
    """A hostile trial: LiveSession.record(t, 0.6) and record(t, np.float32(0.6)) were refused on a
    5-trial bank where Session.tell takes them, and np.ma.masked was recorded as 0."""
    for v in (0.6, np.float32(0.6), np.array(0.6), np.float64(0.6)):
        assert parse_outcome(v, 5) == 0.6
    assert parse_outcome(np.float32(1.0), 5) == 1 and parse_outcome(0, 5) == 0
    for bad in (0.5, np.float32(1 / 3), 1.2, -0.2, float("nan"), "0.6"):  # text stays k/T (the CLI's form)
        with pytest.raises(LiveSessionError, match="k/5"):
            parse_outcome(bad, 5)
    for trials in (None, 5):
        with pytest.raises(LiveSessionError, match="masked \\(a missing outcome\\)"):
            parse_outcome(np.ma.masked, trials)
        with pytest.raises(LiveSessionError, match="masked"):
            parse_outcome(np.ma.array([1, 0], mask=[True, False])[0], trials)


@pytest.mark.filterwarnings("ignore::hspr.errors.UnaskedTaskWarning")  # it tells tasks not asked, on purpose
def test_a_float32_pass_rate_is_read_exactly_on_a_bank_of_many_trials():
    """float32 rounding of 27/100 is 1.07e-6 trials off 27: it was refused (a tolerance in trials,
    not in the rate); every k/100 now reads back as exactly k/100, and 0.275 (27.5/100) does not."""
    sess = get_method("uniform").fit(simulate_trials(12, 101, 100)).start(101, 0)
    for k, t in enumerate(sess.tasks):
        sess.tell(t, np.float32(k / 100))
    assert sess.outcomes == [k / 100 if 0 < k < 100 else k // 100 for k in range(101)]
    sess = get_method("uniform").fit(simulate_trials(12, 30, 100)).start(5, 0)
    with pytest.raises(ValueError, match="not a pass rate over the bank's 100 trials"):
        sess.tell(sess.tasks[0], 0.275)


def test_live_records_k_of_trials_and_reopens_the_same_state(tmp_path):
    path = tmp_path / "tb.hspr"
    live = LiveSession.create(path, bank="terminal-bench", budget=6, method="hspr")
    t1, t2 = live.next(2)
    assert live.record(t1, "3/5") and live.record(t2, "0/5")
    assert not live.record(t1, "3/5")
    with pytest.raises(LiveSessionError, match="already recorded as 3/5"):
        live.record(t1, "4/5")
    est = live.status().estimate
    again = LiveSession.open(path)
    assert again.recorded == {t1: 0.6, t2: 0}
    assert again.status().estimate.point == est.point
    res = CliRunner().invoke(main, ["live", "record", "--session", str(path), again.next(1)[0], "2/5", "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["recorded"][0]["outcome"] == pytest.approx(0.4)


def test_a_trials_session_carries_over_into_a_new_one_on_its_bank_also_from_before_trials_were_stored(tmp_path):
    """A review: a terminal-bench session written before headers stored `trials` could no longer be
    ingested, even into a session on the same bank or into itself."""
    from hspr import journal

    fast = {"n_nodes": 512, "n_draws": 4096}
    old = LiveSession.create(tmp_path / "old.hspr", bank="terminal-bench", budget=6, method="hspr", config=fast)
    t1, t2 = old.next(2)
    old.record(t1, "3/5")
    old.record(t2, "5/5")
    lines = (tmp_path / "old.hspr").read_text().splitlines()
    head = json.loads(lines[0])
    del head["bank"]["trials"], head["crc"]  # as an earlier hspr wrote it (no trials, no checksums)
    (tmp_path / "older.hspr").write_text("\n".join([json.dumps(head), *lines[1:]]) + "\n")
    assert "trials" not in journal.read(tmp_path / "older.hspr").doc["bank"]
    for src in ("old.hspr", "older.hspr"):
        new = LiveSession.create(tmp_path / f"new_{src}", bank="terminal-bench", budget=6, method="hspr", config=fast)
        new.ingest(tmp_path / src)
        assert new.recorded == {t1: 0.6, t2: 1}
    again = LiveSession.open(tmp_path / "older.hspr")
    assert again.ingest(tmp_path / "older.hspr").unchanged == [t1, t2]  # itself: nothing new
    lite = LiveSession.create(tmp_path / "lite.hspr", bank="lite", budget=6, method="hspr", config=fast)
    with pytest.raises(DataError, match="holds pass rates over 5 trials per task, but this bank has one 0/1"):
        lite.ingest(tmp_path / "older.hspr")  # known from the bundled bank's name


def test_cli_replay_terminal_bench_and_refusal(tmp_path, monkeypatch):
    out = tmp_path / "r.json"
    res = CliRunner().invoke(main, ["replay", "--bank", "terminal-bench", "--methods", "uniform", "--seeds", "0",
                                    "-q", "--out", str(out)])
    assert res.exit_code == 0, res.output
    runs = json.loads(out.read_text())["runs"]
    assert len(runs) == 25 and {r["budget"] for r in runs} == {8}
    from hspr.methods.faq import FAQ

    monkeypatch.setattr(FAQ, "accepts_pass_rates", False)  # as a method that takes only 0/1 outcomes
    res = CliRunner().invoke(main, ["replay", "--bank", "terminal-bench", "--methods", "faq", "--seeds", "0", "-q",
                                    "--out", str(out)])
    assert res.exit_code == 2 and "faq takes one 0/1 outcome per task" in res.output
    # the methods named as alternatives are the registry's that take pass rates
    from hspr.methods import REGISTRY, method_class

    takes = [n for n in REGISTRY if method_class(n).accepts_pass_rates]
    assert "uniform" in takes and "faq" not in takes
    assert f"Use a method that takes pass rates ({', '.join(takes)})" in " ".join(res.output.split())


def test_ingest_per_trial_lines_and_counts(tmp_path):
    path = tmp_path / "tb.hspr"
    live = LiveSession.create(path, bank="terminal-bench", budget=8, method="hspr")
    t1, t2, t3 = live.next(3)
    per_trial = tmp_path / "trials.csv"
    per_trial.write_text("task_id,trial,resolved\n" + "".join(f"{t1},{k},{int(k < 2)}\n" for k in range(5))
                         + "".join(f"{t2},{k},1\n" for k in range(5)))
    res = live.ingest(per_trial)
    assert [(t, y) for t, y, _ in res.recorded] == [(t1, 0.4), (t2, 1)]
    counts = tmp_path / "counts.csv"
    counts.write_text(f"task_id,successes,trials\n{t3},3,5\n{t1},2,5\n")
    res = live.ingest(counts)
    assert [(t, y) for t, y, _ in res.recorded] == [(t3, 0.6)] and res.unchanged == [t1]
    short = tmp_path / "short.csv"
    short.write_text("task_id,resolved\n" + "".join(f"{live.next(1)[0]},1\n" for _ in range(3)))
    with pytest.raises(DataError, match="has 3 trial line"):
        live.ingest(short)
    res = CliRunner().invoke(main, ["live", "ingest", str(counts), "--session", str(path)])
    assert res.exit_code == 0 and "0 outcome(s)" in res.output and "2 unchanged" in res.output
    more = tmp_path / "more.csv"
    t4, t5 = live.next(2)
    more.write_text(f"task_id,successes,trials\n{t4},5,5\n{t5},2,5\n")
    res = CliRunner().invoke(main, ["live", "ingest", str(more), "--session", str(path)])
    assert "recorded 2 outcome(s) (1 passing all 5 trials, 0 none, 1 some)" in res.output  # was '1 resolved'
    # a hostile trial: an id of another bank with 2 trial lines was blamed on its trial count, by the CLI too
    other = tmp_path / "other.csv"
    other.write_text("task_id,resolved\nnot-a-tb-task,1\nnot-a-tb-task,0\n")
    res = CliRunner().invoke(main, ["live", "ingest", str(other), "--session", str(path)])
    assert res.exit_code == 2 and "none of its 1 instance id(s) is a task of the bank" in res.output
    assert "trial line" not in res.output
    res = CliRunner().invoke(main, ["live", "ingest", str(short), "--session", str(path)])
    assert res.exit_code == 2 and "has 3 trial line" in res.output  # a known task's count is still checked


def test_trials_csv_task_column_may_be_named_instance_id(tmp_path):
    # a new-user trial: a long CSV takes instance_id, a trials CSV refused it ("lacks column(s) task_id")
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    a.write_text("agent,task_id,successes,trials\nb,x,3,5\na,x,5,5\na,y,0,5\n")
    b.write_text("agent,instance_id,successes,trials\nb,x,3,5\na,x,5,5\na,y,0,5\n")
    ma, mb = load_matrix(a), load_matrix(b)
    assert mb.trials == 5 and mb.tasks == ma.tasks and mb.agents == ma.agents
    np.testing.assert_array_equal(mb.values, ma.values)
    assert ma.canonical().digest() == mb.canonical().digest()
    b.write_text("agent,instance_id,successes,trials\na,x,7,5\n")
    with pytest.raises(DataError, match="successes 7 of 5 trials"):
        load_matrix(b)
    b.write_text("agent,instance_id,successes,trials\na,,1,5\n")
    with pytest.raises(DataError, match="empty instance_id"):
        load_matrix(b)


def test_pass_rates_in_a_wide_csv_point_to_the_trials_form(tmp_path):
    p = tmp_path / "pass_rate.csv"
    p.write_text("agent,x,y\na,0.2,1\nb,1,0\n")
    with pytest.raises(DataError, match=r"non-binary value '0.2'.*Pass rates over repeated trials are read from "
                                        r"counts: a CSV with the header 'agent,task_id,successes,trials'"):
        load_matrix(p)
    p.write_text("agent,x,y\na,2,1\nb,1,0\n")  # not a rate: no pointer
    with pytest.raises(DataError) as exc:
        load_matrix(p)
    assert "non-binary value '2'" in str(exc.value) and "Pass rates" not in str(exc.value)


def test_trials_header_typo_is_named(tmp_path):
    p = tmp_path / "typo.csv"
    p.write_text("agent,taskid,successes,trials\na,x,1,5\n")
    with pytest.raises(DataError, match="lacks column.*task_id"):
        load_matrix(p)
    p.write_text("agent,task,successes,trials\na,x,1,5\n")  # 'task' names the task column, as in a long CSV
    assert load_matrix(p).tasks == ("x",) and load_matrix(p).trials == 5


def test_trials_bank_merge_write_and_targets_keep_their_form(tmp_path):
    from hspr.data.build import merge_banks, write_wide_csv
    from hspr.replay import align_targets

    m = simulate_trials(6, 8, 5, seed=4)
    a, b = m.rows([0, 1, 2]), m.rows([3, 4, 5])
    merged = merge_banks(a, b)
    assert merged.trials == 5 and merged.digest() == m.digest()
    out = write_wide_csv(merged, tmp_path / "m.csv")
    assert load_matrix(out).digest() == m.digest()
    binary = ResponseMatrix(m.agents, m.tasks, (m.values == 5).astype(int))
    with pytest.raises(DataError, match="same number of trials"):
        merge_banks(a, binary)
    assert align_targets(b, a).trials == 5
    with pytest.raises(DataError, match="success counts of 5 trials"):
        align_targets(binary, a)


@pytest.mark.filterwarnings("ignore::hspr.errors.UnaskedTaskWarning")  # it tells tasks not asked, on purpose
def test_trajectory_keeps_pass_rates():
    from hspr.session import trajectory

    m = simulate_trials(20, 30, 5, seed=5)
    model = get_method("uniform").fit(m.drop_rows([0]))
    y = m.rates()[0]
    traj = trajectory(model, 3, 0, [(m.tasks[j], float(y[j])) for j in range(3)])
    assert traj[-1]["point"] == pytest.approx(y[:3].mean())


def test_live_start_refuses_a_0_1_method_on_a_trials_bank_before_announcing_a_fit(tmp_path, monkeypatch):
    """`live start --bank terminal-bench --method atlas` said 'fitting atlas ... can take minutes' and then refused
    (ATLAS takes pass rates since; here it plays a method that takes only 0/1 outcomes)."""
    from hspr.methods.atlas import ATLAS

    monkeypatch.setattr(ATLAS, "accepts_pass_rates", False)
    res = CliRunner().invoke(main, ["live", "start", "--bank", "terminal-bench", "--method", "atlas", "--budget", "10",
                                    "--session", str(tmp_path / "s.hspr")])
    assert res.exit_code == 2 and "atlas takes one 0/1 outcome per task" in res.output
    assert "fitting" not in res.output and not (tmp_path / "s.hspr").exists()


def test_a_json_result_on_a_trials_bank_gets_the_csv_it_needs(tmp_path):
    """A trial: a Harbor result.json for a terminal-bench session got the list of SWE-bench forms."""
    from hspr.harness import HarnessFormatError, read_outcomes

    p = tmp_path / "result.json"
    p.write_text(json.dumps({"id": "job-1", "trial_results": [{"task_name": "hello-world", "reward": 1.0}]}))
    with pytest.raises(HarnessFormatError, match="the bank has 5 trials per task; give a CSV 'task_id,successes,trials'"):
        read_outcomes(p, trials=5)
    with pytest.raises(HarnessFormatError, match="not a harness output"):  # a 0/1 bank: the SWE-bench forms
        read_outcomes(p)


def test_errored_trials_make_a_harness_error_not_a_pass_rate(tmp_path):
    """A trial: five errored trial lines (1,0,1,1,1 under error=true) were recorded as a pass rate of 4/5."""
    from hspr.harness import ERROR, HarnessFormatError, read_trials_outcomes

    p = tmp_path / "err.csv"
    p.write_text("task_id,resolved,error\n" + "".join(f"a,{y},true\n" for y in (1, 0, 1, 1, 1))
                 + "".join(f"b,{y},false\n" for y in (1, 0, 1, 0, 0)) + "c,1,\n" * 4 + "c,1,true\n")
    read = {o.instance_id: o for o in read_trials_outcomes(p, 5).outcomes}
    assert read["a"].status == ERROR and read["a"].outcome is None and "5 line(s) marked as a harness error" in read["a"].detail
    assert read["b"].outcome == pytest.approx(0.4)
    assert read["c"].status == ERROR  # 4 good trials and 1 errored: not a pass rate of 4/4 or 4/5
    assert read["c"].detail.endswith("(from line 16)")  # the errored line, not the task's first (a re-trial)
    # a re-trial: a re-run of an errored trial (trial column) or task (counts form) stands, in either order
    p.write_text("task_id,trial,resolved,error\n" + "".join(f"a,t{k},1,\n" for k in range(4)) + "a,t4,,true\na,t4,0,\n"
                 + "b,t0,1,\nb,t0,,true\n" + "".join(f"b,t{k},0,\n" for k in range(1, 5)))
    read = {o.instance_id: o for o in read_trials_outcomes(p, 5).outcomes}
    assert read["a"].outcome == pytest.approx(0.8) and read["b"].outcome == pytest.approx(0.2)
    # another trial graded makes 5 graded trials: the error beside them was re-run, as in a Harbor job (a new-user
    # trial: the CSV kept such a task as an error to re-run on every ingest where a Harbor job recorded it)
    p.write_text("task_id,trial,resolved,error\n" + "".join(f"a,t{k},1,\n" for k in range(4)) + "a,t4,,true\na,t9,1,\n")
    (only,) = read_trials_outcomes(p, 5).outcomes
    assert only.outcome == pytest.approx(1.0)
    assert only.detail.endswith("; 1 harness error(s) beside them, superseded by the graded trials")
    p.write_text("task_id,successes,trials,error\na,,,true\na,3,5,\nb,2,5,\nb,,,true\n")
    read = {o.instance_id: o for o in read_trials_outcomes(p, 5).outcomes}
    assert read["a"].outcome == pytest.approx(0.6) and read["b"].outcome == pytest.approx(0.4)
    counts = tmp_path / "counts.csv"
    counts.write_text("task_id,successes,trials,error\na,4,5,true\nb,2,5,\n")
    read = {o.instance_id: o for o in read_trials_outcomes(counts, 5).outcomes}
    assert read["a"].status == ERROR and read["b"].outcome == pytest.approx(0.4)
    # a re-trial: an error column holding the harness's message was read as no error here too, and the trial scored
    counts.write_text("task_id,successes,trials,error_message\na,0,5,Timeout after 1800s\nb,2,5,ok\n")
    read = {o.instance_id: o for o in read_trials_outcomes(counts, 5).outcomes}
    assert read["a"].status == ERROR and read["b"].outcome == pytest.approx(0.4)
    p.write_text("task_id,resolved,trial,exception\na,0,1,DockerError\n" + "".join(f"a,0,{k},\n" for k in range(2, 6))
                 + "".join(f"b,1,{k},-\n" for k in range(1, 6)))
    read = {o.instance_id: o for o in read_trials_outcomes(p, 5).outcomes}
    assert read["a"].status == ERROR and read["b"].outcome == pytest.approx(1.0)
    # its second re-trial: with two error columns only one was read, and the errored trial was scored
    counts.write_text("task_id,successes,trials,exception,error\na,4,5,Timeout,\nb,2,5,,0\n")
    read = {o.instance_id: o for o in read_trials_outcomes(counts, 5).outcomes}
    assert read["a"].status == ERROR and read["b"].outcome == pytest.approx(0.4)
    assert read["a"].detail == "1 line(s) marked as a harness error: column 'exception' marks a harness error " \
        "('Timeout') (from line 2)"
    more = tmp_path / "more.csv"
    more.write_text("task_id,resolved\n" + "a,1\n" * 6)
    with pytest.raises(HarnessFormatError, match="a trial given twice, or trials of two runs in one file"):
        read_trials_outcomes(more, 5)
    more.write_text("task_id,resolved,error\n" + "a,1,\n" * 6 + "a,0,DockerError\n")  # 6 graded: still too many
    with pytest.raises(HarnessFormatError, match="a trial given twice, or trials of two runs in one file"):
        read_trials_outcomes(more, 5)


def test_per_trial_csv_errors_follow_the_harbor_rule(tmp_path):
    """A new-user trial: 5 passing lines and an errored one (a re-run appended), or 3 passing and an errored one,
    were both recorded as 0 of 5 under errors_as_unresolved. Now, as in a Harbor job: all trials graded stand
    beside errors; fewer graded with errors making up the rest is an error whose rate counts the rest failed
    (rate_if_unresolved); some graded and fewer lines than trials is refused; error lines only are an error
    whose trials all count failed."""
    from hspr.harness import ERROR, PARTIAL, RESOLVED, HarnessFormatError, read_trials_outcomes

    p = tmp_path / "t.csv"
    head = "task_id,resolved,error\n"

    def one(text):
        p.write_text(head + text)
        (o,) = read_trials_outcomes(p, 5).outcomes
        return o

    for text in ("a,1,\n" * 5 + "a,0,DockerError\n", "a,0,DockerError\n" + "a,1,\n" * 5):  # either order
        o = one(text)
        assert (o.status, o.outcome, o.rate_if_unresolved) == (RESOLVED, 1.0, None)
    o = one("a,1,\n" * 3 + "a,0,\n" + "a,0,DockerError\n")  # 3 of the 4 graded passed; 1 errored
    assert (o.status, o.outcome) == (ERROR, None) and o.rate_if_unresolved == pytest.approx(0.6)
    o = one("a,1,\n" * 2 + "a,0,\n" * 2 + "a,,X\n" * 2)  # 4 graded (2 passed) and 2 errors: 1 trial counted failed
    assert o.status == ERROR and o.rate_if_unresolved == pytest.approx(0.4)
    o = one("a,1,\n" * 4 + "a,0,\n" + "a,,X\n")  # 4 of the 5 graded passed
    assert (o.status, o.outcome) == (PARTIAL, pytest.approx(0.8))
    with pytest.raises(HarnessFormatError, match="task 'a' has 3 graded trial line[(]s[)] and 1 line[(]s[)] marked as a harness error "
                       "[(]from line 2[)]; the bank has 5 trials per task: record a task once all its trials ran"):
        one("a,1,\n" * 3 + "a,0,DockerError\n")
    o = one("a,,DockerError\n")
    assert o.status == ERROR and o.rate_if_unresolved == 0.0
    # with a trial column an errored trial is counted once, however many lines say so (a re-trial)
    head = "task_id,trial,resolved,error\n"
    o = one("a,1,1,\na,2,1,\na,3,,Timeout\na,4,0,\na,3,,Timeout\na,5,1,\n")
    assert o.rate_if_unresolved == pytest.approx(0.6) and o.detail.startswith("1 trial(s) marked as a harness error")
    # the counts form: a line marked as an error keeps the successes it gives under errors_as_unresolved, the
    # trials it lacks counted failed (a re-trial: 3,5 and 5,5 with an error message were counted 0/5)
    head = "task_id,successes,trials,error\n"
    for counts, rate in (("5,5", 1.0), ("3,5", 0.6), ("3,4", 0.6), (",", 0.0), ("3,6", 0.0), ("3.0,4.0", 0.6)):
        o = one(f"a,{counts},Timeout\n")
        assert o.status == ERROR and o.rate_if_unresolved == pytest.approx(rate), counts


@pytest.mark.parametrize("zero_one", [(), ("tinybench", "faq")])
def test_cli_replay_methods_all_on_a_trials_bank_skips_the_0_1_methods(tmp_path, monkeypatch, zero_one):
    """A trial: `--methods all` on terminal-bench stopped at the first refusing method, with no results.
    Every registered method takes pass rates now: all run; methods that take only 0/1 outcomes (played
    by two of them) are skipped with a note."""
    from hspr.data.build import write_wide_csv
    from hspr.methods import REGISTRY, method_class

    for name in zero_one:
        monkeypatch.setattr(method_class(name), "accepts_pass_rates", False)

    tb = load_bank("terminal-bench")
    small = tb.rows(np.arange(10)).select_tasks(list(tb.tasks[:20]))
    write_wide_csv(small, tmp_path / "tb_small.csv")
    out = tmp_path / "r.json"
    res = CliRunner().invoke(main, ["replay", "--matrix", str(tmp_path / "tb_small.csv"), "--methods", "all", "--seeds",
                                    "0", "-q", "--out", str(out)])
    assert res.exit_code == 0, res.output
    note = "--methods all skips the methods that take one 0/1 outcome per task"
    assert (f"{note} (tinybench, faq)" in " ".join(res.output.split())) if zero_one else note not in res.output
    takes = {n for n in REGISTRY if method_class(n).in_all and n not in zero_one}
    assert {r["method"] for r in json.loads(out.read_text())["runs"]} == takes


def test_trial_counts_written_with_a_zero_decimal_part_are_read():
    """A trial: pandas writes counts as 3.0 / 5.0 when the column has a blank, and ingest refused
    '3.0' successes of '5.0' trials without saying the decimal point was the problem."""
    from hspr.outcomes import trial_successes

    assert trial_successes("3.0", "5.0", 5) == 3 and trial_successes(" 0.00 ", "5", 5) == 0
    assert trial_successes("3.5", "5", 5) is None and trial_successes("6.0", "5.0", 5) is None
    assert trial_successes(".0", "5", 5) is None and trial_successes("3.0", "4.0", 5) is None


def test_whole_count_takes_the_form_trial_successes_reads_at_any_size():
    from hspr.outcomes import trial_successes, whole_count

    for text in ("3", " 3.0 ", "0.00", "12345"):
        assert whole_count(text)
    for text in ("3.", "3e0", "-1", ".0", "3.5", "", "²", "1,000"):
        assert not whole_count(text)
    # within the bank's range, whole_count and trial_successes agree on every form above
    for text in ("3", " 3.0 ", "0.00", "00003", "3.", "3e0", "-1", ".0", "3.5", "", "²"):
        assert whole_count(text) == (trial_successes(text, "5", 5) is not None)
    assert trial_successes("00003", "00005", 5) == 3  # a hostile trial: "successes in 0..5" for 3 of 5


def test_a_per_trial_ingest_names_every_line_of_a_task(tmp_path):
    """A trial: the detail of a task read from 5 trial lines said '(line 2)'."""
    from hspr.harness import read_trials_outcomes

    path = tmp_path / "t.csv"
    path.write_text("task_id,resolved\n" + "a,1\na,0\na,1\na,1\na,0\n" + "b,1\nc,0\nb,1\nc,0\nb,1\nc,0\nb,1\nc,0\nb,0\nc,0\n")
    got = {o.instance_id: o.detail for o in read_trials_outcomes(path, 5).outcomes}
    assert got == {"a": "3/5 trials (lines 2-6)", "b": "4/5 trials (lines 7, 9, 11, 13, 15)",
                   "c": "0/5 trials (lines 8, 10, 12, 14, 16)"}


def test_trial_counts_in_another_number_format_are_refused_with_the_format_named(tmp_path):
    """A hostile trial: '3.' successes of '5.' trials was refused with 'successes in 0..5', which 3 is."""
    from hspr.harness import HarnessFormatError, read_trials_outcomes

    path = tmp_path / "c.csv"
    for k, t, message in (("3.", "5.", "write both as whole numbers"), ("3e0", "5", "write both as whole numbers"),
                          ("6", "5", "successes in 0..5")):
        path.write_text(f"task_id,successes,trials\na,{k},{t}\n")
        with pytest.raises(HarnessFormatError, match=message):
            read_trials_outcomes(path, 5)


def test_errors_as_unresolved_fail_the_errored_trials_and_keep_the_graded_ones(tmp_path):
    """A trial: 4 passing trials and 1 errored, with --errors-as-unresolved, were recorded as 0/5; and
    an error of a task the session never asked was listed as needing a re-run that never came."""
    path = tmp_path / "tb.hspr"
    live = LiveSession.create(path, bank="terminal-bench", budget=8, method="hspr")
    t1, t2 = live.next(2)
    other = next(t for t in live.tasks if t not in (t1, t2))
    csv = tmp_path / "e.csv"
    csv.write_text("task_id,resolved,error\n" + f"{t1},1,false\n" * 4 + f"{t1},,true\n" + f"{other},,true\n"
                   + f"{t2},1,\n" * 5)
    res = live.ingest(csv, errors_as_unresolved=True)
    assert sorted((t, y) for t, y, _ in res.recorded) == sorted([(t1, 0.8), (t2, 1), (other, 0)])
    outcomes = sorted(live.status().to_dict()["outcomes"], key=lambda o: o["task"])  # with the successes of 5 trials
    assert {o.pop("source") for o in outcomes} == {str(csv.resolve())} and all(o.pop("detail") for o in outcomes)
    assert outcomes == sorted([{"task": t1, "outcome": 0.8, "asked": True, "successes": 4},
                               {"task": t2, "outcome": 1, "asked": True, "successes": 5},
                               {"task": other, "outcome": 0, "asked": False, "successes": 0}], key=lambda o: o["task"])
    counts = tmp_path / "c.csv"  # the counts form gives no graded trials beside the error: the task fails
    live2 = LiveSession.create(tmp_path / "tb2.hspr", bank="terminal-bench", budget=8, method="hspr")
    (u,) = live2.next(1)
    counts.write_text(f"task_id,successes,trials,error\n{u},,,true\n{other},,,true\n")
    live2.ingest(counts)
    assert live2.needs_rerun.keys() == {u, other} and live2.pending == [u]  # the unasked one is listed, not pending
    text = " ".join(CliRunner().invoke(main, ["live", "status", "--session", str(tmp_path / "tb2.hspr")]).output.split())
    assert f"{other} (" in text and "not asked by this session: next will not offer it" in text
    assert text.count("not asked by this session") == 1
    assert [(t, y) for t, y, _ in live2.ingest(counts, errors_as_unresolved=True).recorded] == [(u, 0), (other, 0)]


def tb_results(trials: dict) -> dict:
    """A `tb run` results.json (BenchmarkResults): ``trials`` maps task id -> is_resolved values (one
    per trial; a (value, failure_mode) pair sets the mode). Its computed id lists are included, as tb
    writes them, so the form is told from a SWE-bench run summary."""
    results = []
    for task, values in trials.items():
        for k, v in enumerate(values):
            v, mode = v if isinstance(v, tuple) else (v, "none" if v else "unset")
            results.append({"id": f"00000000-0000-4000-8000-{len(results):012d}", "trial_name": f"{task}.{k}-of-{len(values)}",
                            "task_id": task, "instruction": "...", "is_resolved": v, "failure_mode": mode})
    return {"id": "run", "results": results, "n_resolved": sum(bool(r["is_resolved"]) for r in results),
            "resolved_ids": [r["task_id"] for r in results if r["is_resolved"]],
            "unresolved_ids": [r["task_id"] for r in results if not r["is_resolved"]], "accuracy": 0.5}


def test_a_tb_run_results_json_is_ingested_as_pass_rates(tmp_path):
    """A live-loop trial: Terminal-Bench's own run output could not be ingested; only a hand-made CSV."""
    from hspr.harness import RESOLVED, UNRESOLVED, read_outcomes

    path = tmp_path / "tb.hspr"
    live = LiveSession.create(path, bank="terminal-bench", budget=8, method="hspr")
    t1, t2, t3 = live.next(3)
    run = tmp_path / "results.json"
    run.write_text(json.dumps(tb_results({t1: [True, False, (False, "agent_timeout"), (None, "unknown_agent_error"), True],
                                          t2: [True] * 5, t3: [False] * 5})))
    res = live.ingest(run)
    assert res.form == "tb_run" and [(t, y) for t, y, _ in res.recorded] == [(t1, 0.4), (t2, 1), (t3, 0)]
    assert "2/5 trials (results.json; failed: agent_timeout, tests failed, unknown_agent_error)" in dict(
        (t, d) for t, _, d in res.recorded)[t1]
    t4 = live.next(1)[0]
    short = tmp_path / "short.json"
    short.write_text(json.dumps(tb_results({t4: [True] * 4})))
    with pytest.raises(DataError, match=f"task '{t4}' has 4 trial\\(s\\) in 'results'; the bank has 5"):
        live.ingest(short)
    res = CliRunner().invoke(main, ["live", "ingest", str(short), "--session", str(path)])
    assert res.exit_code == 2 and "has 4 trial(s)" in res.output
    # on a 0/1 bank each task is one trial; a null is a failure, named 'not graded'
    one = tmp_path / "one.json"
    one.write_text(json.dumps(tb_results({"a": [True], "b": [(None, "unset")], "c": [(False, "test_timeout")]})))
    read = read_outcomes(one)
    assert read.form == "tb_run" and [(o.instance_id, o.status, o.outcome) for o in read.outcomes] == [
        ("a", RESOLVED, 1), ("b", UNRESOLVED, 0), ("c", UNRESOLVED, 0)]
    assert [o.detail for o in read.outcomes] == ["results.json", "results.json, failed: not graded",
                                                 "results.json, failed: test_timeout"]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"results": [{"task_id": "a", "is_resolved": "yes"}]}))
    with pytest.raises(DataError, match=r"results\[0\] \('a'\): 'is_resolved' must be true, false or null"):
        read_outcomes(bad)


def test_tb_run_output_folder_and_one_trial_s_file_as_a_harness_trial_gave_them(tmp_path):
    """A harness trial: `tb run`'s output folder (runs/, one level above the run) was refused although the run
    was found inside it, and one trial's results.json was called a broken Harbor file."""
    live = LiveSession.create(tmp_path / "tb.hspr", bank="terminal-bench", budget=8, method="hspr")
    t1 = live.next(1)[0]
    run = tmp_path / "runs" / "2026-12-07__10-00-00"
    trial = run / t1 / f"{t1}.1-of-5.2026-12-07__10-00-00"
    trial.mkdir(parents=True)
    doc = tb_results({t1: [True, True, False, False, False]})
    (run / "results.json").write_text(json.dumps(doc))
    (trial / "results.json").write_text(json.dumps(doc["results"][0]))
    with pytest.raises(DataError, match=r"one Terminal-Bench trial's results.json .* ingest the run's own results.json "
                                        r"\(runs/<run_id>/results.json\) or its folder"):
        live.ingest(trial / "results.json")
    assert [(t, y) for t, y, _ in live.ingest(tmp_path / "runs").recorded] == [(t1, 0.4)]
    second = tmp_path / "runs" / "2026-12-08__10-00-00"
    second.mkdir()
    (second / "results.json").write_text(json.dumps(doc))
    with pytest.raises(DataError, match=r"runs: holds 2 Terminal-Bench runs \(2026-12-07__10-00-00, "
                                        r"2026-12-08__10-00-00\); ingest one run's folder at a time"):
        live.ingest(tmp_path / "runs")


def test_tb_run_results_refused_or_read_as_a_hostile_trial_found_them(tmp_path):
    from hspr.harness import read_outcomes, read_tb_run

    path = tmp_path / "tb.hspr"
    live = LiveSession.create(path, bank="terminal-bench", budget=8, method="hspr")
    t1 = live.next(1)[0]
    twice = tb_results({t1: [True] * 5})
    twice["results"][4]["trial_name"] = twice["results"][0]["trial_name"]  # one resolved trial given twice: was 5/5
    (tmp_path / "twice.json").write_text(json.dumps(twice))
    with pytest.raises(DataError, match=rf"results\[4\]: trial '{t1}.0-of-5' of '{t1}' again \(results\[0\]\)"):
        live.ingest(tmp_path / "twice.json")
    cut = json.dumps(tb_results({t1: [True] * 5}))[:200]  # a truncated file was told to be a results.json
    (tmp_path / "cut.json").write_text(cut)
    res = CliRunner().invoke(main, ["live", "ingest", str(tmp_path / "cut.json"), "--session", str(path)])
    assert res.exit_code == 2 and "invalid JSON" in res.output and "give a CSV" not in res.output, res.output
    folder = tmp_path / "runs" / "2026-12-04__10-00-00"  # the run folder instead of its results.json
    folder.mkdir(parents=True)
    (folder / "results.json").write_text(json.dumps(tb_results({t1: [True, True, False, False, False]})))
    res = live.ingest(folder)
    assert res.form == "tb_run" and [(t, y) for t, y, _ in res.recorded] == [(t1, 0.4)]
    for doc, match in (({"resolved_ids": []}, "'results'"), ([], "'results' is a list"),
                       ({"results": None}, "'results' is a list"),
                       ({"results": [{"task_id": "a", "is_resolved": True, "id": "u1"}, {"task_id": "a"}]},
                        "has no 'is_resolved'"),
                       # a re-trial: unnamed copies of one resolved trial read as 5/5
                       ({"results": [{"task_id": "a", "is_resolved": True, "trial_name": 7}]}, "no 'trial_name' or 'id'")):
        (tmp_path / "odd.json").write_text(json.dumps(doc))
        with pytest.raises(DataError, match=match):
            read_tb_run(tmp_path / "odd.json")
    with pytest.raises(ValueError, match="trials must be a whole number"):
        read_tb_run(tmp_path / "odd.json", trials=-5)
    # a 0/1 bank: a task of another bank with several trials is 'not in the bank', and --skip-unknown skips it
    pro = tmp_path / "pro.hspr"
    LiveSession.create(pro, bank="pro", budget=5, method="hspr")
    mine = LiveSession.open(pro).next(1)[0]
    (tmp_path / "mixed.json").write_text(json.dumps(tb_results({mine: [True], "other-task": [True, False]})))
    res = CliRunner().invoke(main, ["live", "ingest", str(tmp_path / "mixed.json"), "--session", str(pro)])
    assert res.exit_code == 2 and "1 instance id(s) not in the bank" in res.output and "trial(s)" not in res.output
    res = CliRunner().invoke(main, ["live", "ingest", str(tmp_path / "mixed.json"), "--session", str(pro), "--skip-unknown"])
    assert res.exit_code == 0 and LiveSession.open(pro).recorded == {mine: 1}, res.output
    assert read_outcomes(tmp_path / "mixed.json", known=lambda _: False).outcomes == []


def harbor_job(root, trials: dict, agent: str = "terminus-2", model: str = "m1", summary: bool = True, first: int = 0):
    """A Harbor job folder ``root`` (jobs/<job_name>/): ``trials`` maps task -> one reward per trial (a
    ``(None, exception type)`` pair: a trial without a verifier result); one <trial_name>/result.json
    each (Harbor's TrialResult; trial names <task>__<k>, k from ``first``), and the job's own summary
    result.json when ``summary``."""
    root.mkdir(parents=True, exist_ok=True)
    for task, rewards in trials.items():
        for k, r in enumerate(rewards, start=first):
            r, exc = r if isinstance(r, tuple) else (r, None)
            trial = root / f"{task}__{k}"
            trial.mkdir()
            doc = {"id": f"u{k}", "task_name": task, "trial_name": trial.name, "trial_uri": trial.as_uri(),
                   "task_checksum": "x", "config": {}, "agent_info": {"name": agent, "version": "1",
                                                                       "model_info": {"name": model, "provider": "p"}},
                   "verifier_result": None if r is None else {"rewards": {"reward": r}},
                   "exception_info": None if exc is None else {"exception_type": exc, "exception_message": "",
                                                               "exception_traceback": "", "occurred_at": "2026-12-04"}}
            (trial / "result.json").write_text(json.dumps(doc))
    if summary:
        (root / "result.json").write_text(json.dumps({"id": "job", "n_total_trials": 5, "stats": {}}))
    return root


def test_a_harbor_job_folder_is_ingested_as_pass_rates(tmp_path):
    """Harbor (Terminal-Bench 2.0's harness) job folders were not read: users had to write a CSV."""
    from hspr.harness import RESOLVED, UNRESOLVED, read_outcomes

    path = tmp_path / "tb.hspr"
    live = LiveSession.create(path, bank="terminal-bench", budget=8, method="hspr")
    t1, t2, t3 = live.next(3)
    job = harbor_job(tmp_path / "jobs" / "2026-12-04__10-00-00",
                     {t1: [1, 0, (None, "AgentTimeoutError"), 1.0, 0], t2: [1] * 5,
                      t3: [0, 0, 0, 0, (None, "RewardFileNotFoundError")]})
    (job / f"{t1}__0" / "agent").mkdir()
    (job / f"{t1}__0" / "agent" / "result.json").write_text('{"an agent log": true}')  # not a trial: not read
    res = live.ingest(job)
    assert res.form == "harbor_job" and [(t, y) for t, y, _ in res.recorded] == [(t1, 0.4), (t2, 1), (t3, 0)]
    details = {t: d for t, _, d in res.recorded}
    assert "2/5 trials (result.json; failed: AgentTimeoutError, tests failed x2)" in details[t1]
    assert "0/5 trials (result.json; failed: RewardFileNotFoundError, tests failed x4)" in details[t3]
    # the job's summary given instead of its folder reads the folder; a trial of the old form (one 'reward') too
    again = LiveSession.create(tmp_path / "tb2.hspr", bank="terminal-bench", budget=8, method="hspr")
    assert [(t, y) for t, y, _ in again.ingest(job / "result.json").recorded] == [(t1, 0.4), (t2, 1), (t3, 0)]
    one = harbor_job(tmp_path / "one", {"a": [1], "b": [0], "c": [(None, "AgentSafetyRefusalError")]}, summary=False)
    old = json.loads((one / "a__0" / "result.json").read_text())
    old["verifier_result"] = {"reward": 1.0}
    (one / "a__0" / "result.json").write_text(json.dumps(old))
    read = read_outcomes(one)  # a 0/1 bank: one trial per task
    assert read.form == "harbor_job" and [(o.instance_id, o.status, o.outcome) for o in read.outcomes] == [
        ("a", RESOLVED, 1), ("b", UNRESOLVED, 0), ("c", UNRESOLVED, 0)]
    assert [o.detail for o in read.outcomes] == ["result.json", "result.json, failed: tests failed",
                                                 "result.json, failed: AgentSafetyRefusalError"]
    assert [o.outcome for o in read_outcomes(one / "b__0" / "result.json").outcomes] == [0]  # one trial's file


def test_a_harbor_job_of_another_agent_than_the_session_s_label_is_noted(tmp_path):
    """A session labelled with ``--agent``: a Harbor job whose agent / model is neither within the label nor holds
    it is noted (a file ingested into another agent's session); its outcomes are recorded, as the label is free text."""
    live = LiveSession.create(tmp_path / "tb.hspr", bank="terminal-bench", budget=8, method="uniform", agent="opus-4")
    t1, t2 = live.next(2)
    res = live.ingest(harbor_job(tmp_path / "j1", {t1: [1, 0, 1, 1, 1]}, agent="terminus-2", model="gpt-5"))
    assert [t for t, _, _ in res.recorded] == [t1]
    said = [n for n in res.notes if "(its --agent at start)" in n]
    assert len(said) == 1 and said[0].startswith("j1: its trials are of agent 'terminus-2") and "gpt-5" in said[0]
    assert "this session scores 'opus-4'" in said[0]
    named = LiveSession.create(tmp_path / "tb2.hspr", bank="terminal-bench", budget=8, method="uniform",
                               agent="terminus-2")  # the label within the job's agent name: no note
    named.next(2)
    assert not any("--agent" in n for n in named.ingest(tmp_path / "j1").notes)
    # words, not text: 'gpt-5' is within 'terminus-2 / gpt-5o' as text (a hostile re-trial), not as words
    near = LiveSession.create(tmp_path / "tb3.hspr", bank="terminal-bench", budget=8, method="uniform", agent="GPT-5")
    near.next(2)
    job = harbor_job(tmp_path / "j2", {t1: [1, 0, 1, 1, 1]}, agent="terminus-2", model="gpt-5o")
    assert any("this session scores 'GPT-5'" in n for n in near.ingest(job).notes)
    # a name that extends the label's by a word it lacks is another model (the session-58 re-trial's gpt-4-turbo)
    four = LiveSession.create(tmp_path / "tb4.hspr", bank="terminal-bench", budget=8, method="uniform", agent="gpt-4")
    four.next(2)
    job = harbor_job(tmp_path / "j3", {t1: [1, 0, 1, 1, 1]}, agent="terminus-2", model="openai/gpt-4-turbo")
    assert any("this session scores 'gpt-4'" in n for n in four.ingest(job).notes)


@pytest.mark.parametrize(("mine", "theirs", "differ"), [
    ("opus-4", "terminus-2 / gpt-5", True),  # no word in common but the scaffold's
    ("terminus-2", "terminus-2 / gpt-5", False), ("Claude Code", "claude-code / claude-opus-4-1-20250805", False),  # harness
    ("GPT-5", "terminus-2 / gpt-5o", True),  # words, not text
    ("gpt-4", "gpt-4-turbo", True), ("gpt-4", "gpt-4.1", True), ("claude-3-sonnet", "claude-3.5-sonnet", True),
    ("claude-4-sonnet", "claude-4-opus", True), ("o3", "o3-mini", True), ("o3", "o4-mini", True), ("gpt-5", "gpt-5-codex", True),
    ("deepseek-v3", "deepseek-v3.1", True), ("qwen3-coder", "qwen3-coder-480b-a35b-instruct", True),
    # the session-59 re-trial: the model after the harness in the label; a label without the vendor's word
    ("terminus-2 gpt-5", "terminus-2 / openai/gpt-5-mini", True), ("Terminus 2 + GPT-5", "terminus-2 / openai/gpt-5-mini", True),
    ("terminus-2 claude-sonnet-4", "terminus-2 / anthropic/claude-sonnet-4-5-20250929", True),
    ("Sonnet 4", "anthropic/claude-sonnet-4-5-20250929", True), ("Opus 4", "claude-code / claude-opus-4-1-20250805", True),
    ("gpt-4o", "openai.gpt-4o-mini", True), ("swe-agent", "mini-swe-agent / gpt-5", True), ("🤖", "👾", True),
    ("claude-4-sonnet", "terminus-2 / anthropic/Claude-4-Sonnet", False), ("claude", "anthropic/claude-4-sonnet", False),
    ("claude-sonnet-4", "terminus-2 / anthropic/claude-sonnet-4-20250514", False),  # a snapshot date is no other model
    ("gpt-4o", "openai/gpt-4o-2024-08-06", False), ("gemini-2.5-pro", "gemini-2.5-pro-preview-06-05", False),
    ("claude-opus-4-1", "claude-code / claude-opus-4-1-20250805", False), ("kimi-k2-0905", "kimi-k2-0905-preview", False),
    ("gemini-2.5-pro", "gemini-cli / gemini/gemini-2.5-pro", False), ("DeepSeek V3.1", "deepseek-chat-v3.1", False),
    ("Claude 4 Sonnet", "claude-4-sonnet", False), ("terminus-2 gpt-5", "terminus-2 / gpt-5", False), ("ＧＰＴ-５", "gpt-5", False),
    ("20250522_sweagent_claude-4-sonnet", "20250522_SWEagent_Claude-4-sonnet", False), ("🤖", "🤖", False),
])
def test_agents_differ_by_words_and_names(mine, theirs, differ):
    """:func:`agents_differ`, hand-checked pairs, both ways round (the relation is symmetric)."""
    from hspr.live.text import agents_differ

    assert agents_differ(mine, theirs) is differ and agents_differ(theirs, mine) is differ


def test_harbor_jobs_refused_with_the_reason(tmp_path):
    from hspr.harness import read_harbor_job, read_outcomes

    live = LiveSession.create(tmp_path / "tb.hspr", bank="terminal-bench", budget=8, method="hspr")
    t1 = live.next(1)[0]
    over = harbor_job(tmp_path / "over", {t1: [1, 1, 0, 0, 0, 1]})
    with pytest.raises(DataError, match=f"task '{t1}' has 6 graded trial\\(s\\) in result.json files; the bank has 5"):
        live.ingest(over)
    res = CliRunner().invoke(main, ["live", "ingest", str(over), "--session", str(tmp_path / "tb.hspr")])
    assert res.exit_code == 2 and "has 6 graded trial(s)" in res.output and "Traceback" not in res.output
    cases = {  # a hostile trial: a text or true/false was called a partial reward; Harbor's mean refuses {} too
        "partial": ({"a": [0.5]}, "has reward 0.5; hspr's banks hold pass/fail outcomes"),
        "bool": ({"a": [True]}, "has reward True; a reward is the number 0 or 1"),
        "text": ({"a": ["1"]}, "has reward '1'; a reward is the number 0 or 1"),
        "empty": ({"a": [{}]}, r"has 0 rewards \(\) and none named 'reward'"),
    }
    for name, (trials, match) in cases.items():
        job = harbor_job(tmp_path / name, {k: [0] for k in trials})
        doc = json.loads((job / "a__0" / "result.json").read_text())
        value = trials["a"][0]
        doc["verifier_result"] = {"rewards": value if isinstance(value, dict) else {"reward": value}}
        (job / "a__0" / "result.json").write_text(json.dumps(doc))
        with pytest.raises(DataError, match=match):
            read_outcomes(job)
        assert read_outcomes(job, known=lambda t: t != "a").outcomes == []  # a skipped task is not checked (a trial)
    two = harbor_job(tmp_path / "two", {"a": [1]})
    harbor_job(two, {"b": [0]}, model="m2", summary=False)  # two models' trials in one folder
    with pytest.raises(DataError, match=r"holds the trials of 2 agents or models \(terminus-2 / m1 .*terminus-2 / m2"):
        read_outcomes(two)
    many = harbor_job(tmp_path / "many", {"a": [1]})
    doc = json.loads((many / "a__0" / "result.json").read_text())
    doc["verifier_result"] = {"rewards": {"tests": 1, "style": 0}}
    (many / "a__0" / "result.json").write_text(json.dumps(doc))
    with pytest.raises(DataError, match=r"has 2 rewards \(tests, style\) and none named 'reward'"):
        read_outcomes(many)
    copy = harbor_job(tmp_path / "copy", {"a": [1]})
    (copy / "a__copy").mkdir()
    (copy / "a__copy" / "result.json").write_text((copy / "a__0" / "result.json").read_text())
    with pytest.raises(DataError, match="trial 'a__0' of 'a' again"):
        read_outcomes(copy)
    stray = harbor_job(tmp_path / "stray", {"a": [1]})
    (stray / "notes").mkdir()
    (stray / "notes" / "result.json").write_text('{"score": 1}')  # another tool's result.json: not a trial, not read
    assert [o.outcome for o in read_outcomes(stray).outcomes] == [1]
    (stray / "notes" / "result.json").write_text('{"task_name": "b", "verifier_result": null}')
    with pytest.raises(DataError, match="a Harbor trial's result.json without 'trial_name'; hspr reads"):
        read_outcomes(stray)
    (stray / "notes" / "result.json").write_text('{"score": ')  # a trial caught mid-write: left out, with a note
    read = read_outcomes(stray)
    assert [o.outcome for o in read.outcomes] == [1] and any("1 trial result.json file(s) could not be read" in n
                                                             and "invalid JSON" in n for n in read.notes)
    with pytest.raises(DataError, match="invalid JSON"):  # given alone, or the only trial
        read_outcomes(stray / "notes" / "result.json")
    started = tmp_path / "started"  # a job just started: its config.json, no trial finished
    (started / "t1__abc").mkdir(parents=True)
    (started / "config.json").write_text(json.dumps({"job_name": "started", "n_attempts": 5, "agents": []}))
    for trials in (None, 5):
        with pytest.raises(DataError, match="no Harbor trial result.json found \\(no trial has finished yet\\?\\)"):
            read_outcomes(started, trials)
    (tmp_path / "lone").mkdir()  # a job's summary alone, under another name and as the only file of its job
    (tmp_path / "lone" / "summary.json").write_text(json.dumps({"n_total_trials": 3}))
    for trials in (None, 5):
        with pytest.raises(DataError, match="a Harbor job's summary"):
            read_outcomes(tmp_path / "lone" / "summary.json", trials)
        (tmp_path / "lone" / "result.json").write_text(json.dumps({"n_total_trials": 3}))
        with pytest.raises(DataError, match="no Harbor trial result.json found"):
            read_outcomes(tmp_path / "lone", trials)
    with pytest.raises(ValueError, match="trials must be a whole number"):
        read_harbor_job(two, trials=0)


def test_harbor_jobs_running_interrupted_or_with_harness_errors(tmp_path):
    """A hostile trial: a cancelled trial was a failure, an environment error too, and a job still
    running could not be ingested at all; now they are left out, a re-run, and a note."""
    path = tmp_path / "tb.hspr"
    live = LiveSession.create(path, bank="terminal-bench", budget=8, method="hspr")
    t1, t2, t3 = live.next(3)
    job = harbor_job(tmp_path / "job", {t1: [1, 1, 1, (None, "CancelledError"), (None, "CancelledError")],
                                        t2: [1, 0, 0, 0, 0], t3: [1, 1, 0, 0, (None, "EnvironmentStartTimeoutError")]})
    read_notes = live.ingest(job)
    assert [(t, y) for t, y, _ in read_notes.recorded] == [(t2, 0.2)]
    assert any(f"1 task(s) without all 5 trial(s) yet (running, cancelled or not run), left out: '{t1}'" in n
               for n in read_notes.notes)
    assert set(live.needs_rerun) == {t3} and "1 trial(s) ended in a harness error (EnvironmentStartTimeoutError) in " \
        f"result.json of {t3}__4; 2 of the other 4 passed" in live.needs_rerun[t3]  # the trial folder: a trial
    assert [(t, y) for t, y, _ in live.ingest(job, errors_as_unresolved=True).recorded] == [(t3, 0.4)]
    for k in (3, 4):  # `harbor jobs resume` ran the cancelled trials again
        trial = job / f"{t1}__{k}" / "result.json"
        doc = json.loads(trial.read_text())
        doc.update(verifier_result={"rewards": {"reward": 1}}, exception_info=None)
        trial.write_text(json.dumps(doc))
    assert [(t, y) for t, y, _ in live.ingest(job).recorded] == [(t1, 1.0)]
    # a re-trial: a trial not graded (no reward, no exception; verification disabled) was a failure; it says nothing
    # about the agent
    (t4,) = live.next(1)
    quiet = harbor_job(tmp_path / "quiet", {t4: [1, 1, 1, (None, None), (None, None)]})
    doc = json.loads((quiet / f"{t4}__4" / "result.json").read_text())
    doc["config"] = {"verifier": {"disable": True}}
    (quiet / f"{t4}__4" / "result.json").write_text(json.dumps(doc))
    res = live.ingest(quiet)
    assert res.recorded == [] and "2 trial(s) ended in a harness error (not graded, verification disabled) " \
        f"in result.json of {t4}__3, {t4}__4; 3 of the other 3 passed" in live.needs_rerun[t4]
    one = LiveSession.create(tmp_path / "v.hspr", bank="verified", budget=5, method="hspr")
    v1 = one.next(1)[0]
    one.ingest(harbor_job(tmp_path / "v", {v1: [(None, "DockerDaemonError")]}))
    assert one.needs_rerun[v1].endswith(f"1 trial(s) ended in a harness error (DockerDaemonError) in result.json of {v1}__0")


def test_harbor_folders_that_mix_forms_or_link_trials(tmp_path):
    """A hostile trial: one report.json inside a trial switched the job to the SWE-bench reader (a 0
    recorded as 1, the other trials dropped), a tb run beside a job or a job inside a log folder read
    one of the two unseen, and a link from one trial into another hid the second."""
    from hspr.harness import read_outcomes

    job = harbor_job(tmp_path / "job", {"astropy__astropy-12907": [0], "sympy__sympy-20801": [1]})
    (job / "astropy__astropy-12907__0" / "agent" / "x").mkdir(parents=True)
    (job / "astropy__astropy-12907__0" / "agent" / "x" / "report.json").write_text(
        json.dumps({"astropy__astropy-12907": {"resolved": True, "patch_is_None": False}}))
    read = read_outcomes(job)
    assert read.form == "harbor_job" and [(o.instance_id, o.outcome) for o in read.outcomes] == [
        ("astropy__astropy-12907", 0), ("sympy__sympy-20801", 1)]
    linked = job / "astropy__astropy-12907__0" / "agent" / "link"
    linked.symlink_to(job / "sympy__sympy-20801__0", target_is_directory=True)
    assert [o.instance_id for o in read_outcomes(job).outcomes] == ["astropy__astropy-12907", "sympy__sympy-20801"]
    (job / "results.json").write_text(json.dumps(tb_results({"hello-world": [True]})))
    with pytest.raises(DataError, match=r"holds outputs of 2 kinds \(Harbor job folder .*Terminal-Bench run"):
        read_outcomes(job)
    (job / "results.json").unlink()
    logs = tmp_path / "logs" / "run1" / "model"
    (logs / "django__django-1").mkdir(parents=True)
    (logs / "django__django-1" / "report.json").write_text(json.dumps({"django__django-1": {"resolved": True}}))
    (tmp_path / "logs" / "harbor").symlink_to(job, target_is_directory=True)
    with pytest.raises(DataError, match=r"holds outputs of 2 kinds"):
        read_outcomes(tmp_path / "logs")
    assert read_outcomes(job).datasets == []


def test_harbor_trial_folders_are_not_searched_and_names_are_cleaned(tmp_path):
    """A re-trial: links in an agent's folder were followed (another job's trials recorded, a link to /
    walked for 32 s), a dangling one failed the ingest, a truncated job summary (Harbor rewrites it
    after every trial) blocked a running job, a copied trial at the job root hid the job, and control
    characters in an agent's name reached the terminal; Terminal-Bench 2.0 trials went into the 1.0 bank."""
    from hspr.harness import read_outcomes

    other = harbor_job(tmp_path / "other", {"fibonacci-server": [1]})
    job = harbor_job(tmp_path / "job", {"crack-7z-hash": [0]})
    agent_dir = job / "crack-7z-hash__0" / "agent"
    agent_dir.mkdir()
    (agent_dir / "workspace").symlink_to(other, target_is_directory=True)
    (agent_dir / "rootfs").symlink_to("/", target_is_directory=True)
    (agent_dir / "result.json").symlink_to(tmp_path / "nowhere.json")
    (agent_dir / "report.json").symlink_to(tmp_path / "nowhere.json")
    (job / "result.json").write_text('{"n_total_trials": ')  # the summary mid-write
    read = read_outcomes(job)
    assert read.form == "harbor_job" and [(o.instance_id, o.outcome) for o in read.outcomes] == [("crack-7z-hash", 0)]
    copy = harbor_job(tmp_path / "copy", {"a": [1], "b": [0]})
    (copy / "result.json").write_text((copy / "a__0" / "result.json").read_text())
    with pytest.raises(DataError, match="trial 'a__0' of 'a' again"):
        read_outcomes(copy)
    assert [o.outcome for o in read_outcomes(copy / "b__0").outcomes] == [0]  # one trial's folder
    evil = harbor_job(tmp_path / "evil", {"a": [1]}, agent="\x1b[31mEVIL\x1b[0m\nerror: fake", model="m\x07")
    harbor_job(evil, {"b": [1]}, agent="x", summary=False)
    with pytest.raises(DataError) as exc:
        read_outcomes(evil)
    assert "\x1b" not in str(exc.value) and "\n" not in str(exc.value) and "?[31mEVIL?[0m?error: fake / m?" in str(exc.value)
    live = LiveSession.create(tmp_path / "tb.hspr", bank="terminal-bench", budget=8, method="hspr")
    task = live.next(1)[0]
    tb2 = harbor_job(tmp_path / "tb2", {task: [1] * 5})
    for trial in tb2.glob("*/result.json"):
        trial.write_text(json.dumps({**json.loads(trial.read_text()), "source": "terminal-bench@2.0"}))
    with pytest.raises(LiveSessionError, match=r"dataset 'terminal-bench@2.0', whose tasks are not those of the "
                                               r"terminal-bench bank \(Terminal-Bench 1.0, 25 agents"):
        live.ingest(tb2)
    res = CliRunner().invoke(main, ["live", "ingest", str(tb2), "--session", str(tmp_path / "tb.hspr"), "--skip-unknown"])
    assert res.exit_code == 2 and "nothing was recorded" in res.output and LiveSession.open(tmp_path / "tb.hspr").recorded == {}
    for trial in tb2.glob("*/result.json"):
        trial.write_text(json.dumps({**json.loads(trial.read_text()), "source": "terminal-bench-core==0.1.1"}))
    res = live.ingest(tb2)
    assert res.recorded[0][:2] == (task, 1) and "trials of dataset 'terminal-bench-core==0.1.1'" in res.notes


@pytest.mark.filterwarnings("ignore::hspr.errors.UnaskedTaskWarning")  # it tells tasks not asked, on purpose
def test_terminal_bench_2_trials_are_refused_on_a_copy_of_the_1_0_bank(tmp_path):
    """A trial: the docs' hidden-agent recipe (a --matrix copy of the terminal-bench bank less one row)
    recorded Terminal-Bench 2.0 trials under 1.0's task names with only a note. A re-trial: a rule on task
    ids alone missed a copy with tasks of the user's own and refused a 2.0 bank whose tasks all had 1.0
    names, a merge with the jobs as BASE took them in, and dataset names with a suffix slipped by. A matrix
    holding the bank's rows (a copy, a subset of its tasks, one with more tasks) refuses them in a session and
    in a merge either way round; a bank of other agents' runs under the same task names takes them."""
    from hspr.data.banks import BANKS, foreign_datasets
    from hspr.data.build import write_wide_csv

    named = ["terminal-bench@2.0", "Terminal Bench 2.0 (Harbor)", "terminal_bench==2.0.1", "terminal-bench@2.0.0-rc1",
             "tbench@2.0", "terminal-bench@2.0/", "terminal-bench-core==0.1.1", "terminal-bench", "terminal-bench@12.0"]
    assert foreign_datasets(BANKS["terminal-bench"], named) == named[:6]
    bank = load_bank("terminal-bench")
    copy = tmp_path / "tb_others.csv"
    assert CliRunner().invoke(main, ["bank", "build", "terminal-bench", "--out", str(copy)]).exit_code == 0
    lines = copy.read_text().splitlines(keepends=True)
    copy.write_text("".join(line for line in lines if not line.startswith(bank.agents[0] + ",")))
    assert len(copy.read_text().splitlines()) == len(lines) - bank.n_tasks  # one line per cell
    task = bank.tasks[3]
    tb2 = harbor_job(tmp_path / "tb2", {task: [1] * 5})
    for trial in tb2.glob("*/result.json"):
        trial.write_text(json.dumps({**json.loads(trial.read_text()), "source": "terminal-bench@2.0"}))
    more = bank.values[:, :5].copy()  # five tasks of the user's own beside the bank's
    plus = ResponseMatrix(bank.agents, (*bank.tasks, *(f"own-{k}" for k in range(5))), np.hstack([bank.values, more]),
                          trials=5)
    matrices = {"copy": copy, "subset": write_wide_csv(bank.select_tasks(bank.tasks[:12]), tmp_path / "s.csv"),
                "plus": write_wide_csv(plus, tmp_path / "p.csv")}
    for name, matrix in matrices.items():
        live = LiveSession.create(tmp_path / f"{name}.hspr", budget=8, matrix=matrix, method="uniform")
        with pytest.raises(LiveSessionError, match=r"dataset 'terminal-bench@2.0', whose tasks are not those of this "
                                                   r"session's matrix, which holds rows of the terminal-bench bank"):
            live.ingest(tb2)
        assert LiveSession.open(tmp_path / f"{name}.hspr").recorded == {}
        for base, new in ((str(matrix), str(tb2)), (str(tb2), str(matrix))):  # nor merged, either way round
            res = CliRunner().invoke(main, ["bank", "merge", base, new, "--out", str(tmp_path / "m.csv")])
            assert res.exit_code == 2 and f"{tb2}: its trials are of dataset 'terminal-bench@2.0', whose tasks are not " \
                f"those of {matrix}, which holds rows of the terminal-bench bank" in " ".join(res.output.split()), res.output
            assert not (tmp_path / "m.csv").exists()
    res = CliRunner().invoke(main, ["bank", "merge", "terminal-bench", str(tb2), "--out", str(tmp_path / "m.csv")])
    assert res.exit_code == 2 and "which holds rows of the terminal-bench bank" in " ".join(res.output.split())
    # other agents' runs of 2.0 under 1.0's task names: a 2.0 bank, whose new rows are welcome
    rng = np.random.default_rng(0)
    other = ResponseMatrix([f"mine-{k}" for k in range(6)], bank.tasks[:45], rng.integers(0, 6, (6, 45)), trials=5)
    mine = write_wide_csv(other, tmp_path / "tb2_bank.csv")
    live = LiveSession.create(tmp_path / "mine.hspr", budget=8, matrix=mine, method="uniform")
    res = live.ingest(tb2)
    assert res.recorded[0][:2] == (task, 1) and "trials of dataset 'terminal-bench@2.0'" in res.notes
    res = CliRunner().invoke(main, ["bank", "merge", str(mine), str(tb2), "--out", str(tmp_path / "m.csv")])
    assert res.exit_code == 0 and load_matrix(tmp_path / "m.csv").n_agents == 7, res.output
    for trial in tb2.glob("*/result.json"):  # 1.0's own dataset name
        trial.write_text(json.dumps({**json.loads(trial.read_text()), "source": "terminal-bench-core==0.1.1"}))
    res = CliRunner().invoke(main, ["bank", "merge", str(copy), str(tb2), "--out", str(tmp_path / "m2.csv")])
    assert res.exit_code == 0 and load_matrix(tmp_path / "m2.csv").n_agents == bank.n_agents, res.output


def test_a_bank_is_built_from_harbor_jobs(tmp_path):
    """Harbor jobs of several agents -> one row per agent and model, successes over the trials of a
    cell; a matrix simulated from a 2PL round-trips exactly, and a live session runs on the bank."""
    from hspr.data.io import detect_form

    truth = simulate_trials(6, 12, 3, seed=1)
    jobs = tmp_path / "jobs"
    for i, agent in enumerate(truth.agents):
        for j, task in enumerate(truth.tasks):
            k = int(truth.values[i, j])  # successes of 3 trials: the first k pass
            # two jobs per agent (trials of one agent add up over jobs)
            harbor_job(jobs / f"{agent}-a", {task: [1] * min(k, 2) + [0] * (2 - min(k, 2))}, agent="terminus",
                       model=agent, summary=False)
            harbor_job(jobs / f"{agent}-b", {task: [int(k == 3)]}, agent="terminus", model=agent, summary=False, first=2)
    assert detect_form(jobs) == "harbor_jobs"
    m = load_matrix(jobs)
    assert m.trials == 3 and m.agents == tuple(f"terminus / {a}" for a in truth.agents) and m.tasks == truth.tasks
    np.testing.assert_array_equal(m.values, truth.values)
    out = tmp_path / "bank.csv"
    res = CliRunner().invoke(main, ["bank", "build", str(jobs), "--out", str(out)])
    assert res.exit_code == 0, res.output
    np.testing.assert_array_equal(load_matrix(out).values, truth.values)
    live = LiveSession.create(tmp_path / "s.hspr", matrix=str(out), budget=4, method="hspr")
    task = live.next(1)[0]
    mine = harbor_job(tmp_path / "mine", {task: [1, 0, (None, "AgentTimeoutError")]}, agent="new", model="agent")
    assert [(t, y) for t, y, _ in live.ingest(mine).recorded] == [(task, pytest.approx(1 / 3))]


def test_harbor_bank_cells_missing_or_refused(tmp_path):
    from hspr.errors import InputWarning

    jobs = tmp_path / "jobs"
    harbor_job(jobs / "j1", {"t1": [1, 0], "t2": [1, 1], "t3": [0, (None, "CancelledError")]}, agent="a", model="m")
    harbor_job(jobs / "j2", {"t1": [0, 0], "t2": [1, (None, "DockerDaemonError")], "t3": [1, 1]}, agent="b", model="m")
    with pytest.warns(InputWarning, match=r"the bank has 2 trial\(s\) per cell; 2 missing cell\(s\) \(fewer graded "
                                          r"trials, or not run\), e.g. 'a / m' on 't3', 'b / m' on 't2'; run them"):
        m = load_matrix(jobs)
    assert m.trials == 2 and m.agents == ("a / m", "b / m")
    np.testing.assert_array_equal(m.missing, [[False, False, True], [False, True, False]])
    np.testing.assert_array_equal(np.where(m.missing, -1, m.values), [[1, 2, -1], [0, -1, 2]])
    # a re-trial: the errored trial re-run in a job of its own was refused as a third trial; now it completes the cell
    harbor_job(jobs / "j2-rerun", {"t2": [0]}, agent="b", model="m", summary=False, first=7)
    with pytest.warns(InputWarning, match=r"1 missing cell\(s\)"):
        assert np.where(load_matrix(jobs).missing, -1, load_matrix(jobs).values).tolist() == [[1, 2, -1], [0, 1, 2]]
    harbor_job(jobs / "j3", {"t1": [1, 1, 1]}, agent="a", model="m", summary=False, first=2)
    with pytest.raises(DataError, match=r"agent 'a / m' has 5 graded trials of task 't1', where most cells have 2"):
        load_matrix(jobs)
    nameless = harbor_job(tmp_path / "nameless", {"t1": [1]}, agent="", model="")
    with pytest.raises(DataError, match="names no agent or model"):
        load_matrix(nameless)
    one = harbor_job(tmp_path / "one", {"t1": [1], "t2": [0]}, agent="a")  # one trial per cell: a 0/1 bank
    harbor_job(one, {"t1": [0], "t2": [0]}, agent="b", summary=False, first=1)
    m = load_matrix(one)
    assert m.trials is None and m.values.tolist() == [[1, 0], [0, 0]]
    assert load_matrix(one / "t1__0" / "result.json").values.tolist() == [[1]]  # one trial's file: its own bank
    mixed = harbor_job(tmp_path / "mixed", {"t1": [1]}, agent="a")
    for f in mixed.glob("*/result.json"):
        f.write_text(json.dumps({**json.loads(f.read_text()), "source": "terminal-bench@2.0"}))
    harbor_job(mixed, {"t1": [0]}, agent="b", summary=False, first=1)
    f = mixed / "t1__1" / "result.json"
    f.write_text(json.dumps({**json.loads(f.read_text()), "source": "swebench-verified"}))
    with pytest.raises(DataError, match=r"trials of 2 datasets \('swebench-verified', 'terminal-bench@2.0'\)"):
        load_matrix(mixed)


def test_a_harbor_bank_drops_empty_rows_and_round_trips(tmp_path):
    """A re-trial: an agent or task with no complete cell was a row (column) of missing cells: scored as an
    agent failing everything, and dropped by the repeated-trials CSV writer, so the file's digest was not the
    printed one. A tie between two trial counts is said."""
    from hspr.errors import InputWarning

    jobs = tmp_path / "jobs"
    harbor_job(jobs / "x", {"t1": [1, 1, 0], "t2": [0, 0, 1], "t9": [(None, "DockerDaemonError")] * 3}, agent="x")
    harbor_job(jobs / "y", {"t1": [1, 0, 0], "t2": [1, 1, 1]}, agent="y")
    harbor_job(jobs / "z", {"t1": [1, 1], "t2": [1, 1]}, agent="z")  # 2 trials each: no complete cell
    harbor_job(jobs / "w", {"t1": [1, 1]}, agent="w", model="café")  # and the NFD form of the same name: one row
    harbor_job(jobs / "w2", {"t1": [0]}, agent="w", model="cafe\u0301", first=2)
    with pytest.warns(InputWarning) as seen:
        m = load_matrix(jobs)
    text = " ".join(str(w.message) for w in seen)
    assert m.trials == 3 and m.agents == ("w / café", "x / m1", "y / m1") and m.tasks == ("t1", "t2")
    assert m.missing.tolist() == [[False, True], [False, False], [False, False]] and m.values[0, 0] == 2
    assert "1 missing cell(s) (fewer graded trials, or not run)" in text and "dropped 1 agent(s) with no such cell ('z / m1')" in text
    assert "dropped 1 task(s) with no such cell ('t9')" in text
    out = tmp_path / "bank.csv"
    res = CliRunner().invoke(main, ["bank", "build", str(jobs), "--out", str(out)])
    assert res.exit_code == 0 and "3 agents x 2 tasks x 3 trials, 1 missing cell" in res.output, res.output
    assert load_matrix(out).fill_missing(0).digest() == m.fill_missing(0).digest()
    tie = tmp_path / "tie"
    harbor_job(tie / "a", {"t1": [1, 1, 0]}, agent="a")
    harbor_job(tie / "b", {"t1": [1, 0]}, agent="b")
    with pytest.warns(InputWarning, match=r"\(1 cells had 3, as many as had 2: the larger count was taken\)"):
        assert load_matrix(tie).agents == ("a / m1",)


def test_a_session_takes_harbor_trials_of_one_agent(tmp_path):
    """A hostile trial: two Harbor jobs of different agents were ingested into one session."""
    live = LiveSession.create(tmp_path / "tb.hspr", bank="terminal-bench", budget=8, method="hspr")
    t1, t2 = live.next(2)
    live.ingest(harbor_job(tmp_path / "a", {t1: [1] * 5}, agent="terminus-2", model="m1"))
    other = harbor_job(tmp_path / "b", {t2: [0] * 5}, agent="claude-code", model="m2")
    with pytest.raises(LiveSessionError, match=r"of agent 'claude-code / m2', but this session's outcomes from .* are "
                                               r"of agent 'terminus-2 / m1'"):
        live.ingest(other)
    reopened = LiveSession.open(tmp_path / "tb.hspr")  # the agent is kept in the session file
    assert reopened.recorded == {t1: 1}
    with pytest.raises(LiveSessionError, match="a session estimates one agent"):
        reopened.ingest(other)
    same = harbor_job(tmp_path / "c", {t2: [0] * 5}, agent="terminus-2", model="m1")
    assert [(t, y) for t, y, _ in reopened.ingest(same).recorded] == [(t2, 0)]


def test_an_integer_one_is_refused_on_a_bank_of_trials_as_the_cli_refuses_it():
    """A trial: tell(t, 1), tell(t, True) and tell(t, np.int64(1)) recorded 5/5 silently where `hspr live
    record t 1` is refused as ambiguous (every trial, or one run?); and a second tell named the outcome '1'."""
    from hspr.errors import HsprError

    m = simulate_trials(6, 8, 5, seed=1)
    session = get_method("hspr").fit(m).start(4, 0)
    t0, t1, t2 = m.tasks[:3]
    for one in (1, True, np.int64(1), np.bool_(True), np.array(1)):
        with pytest.raises(HsprError, match=r"an integer or boolean\) on a bank of 5 trials per task: every trial, "
                                            r"or one run that passed\? Tell the pass rate as a float, successes / 5 "
                                            r"\(e.g. 5/5 = 1.0, 1/5 = 0.2\)"):
            session.tell(t0, one)
    assert session.queried == []
    session.tell(t0, 1.0)  # the pass rate 5/5
    session.tell(t1, 0)  # the pass rate 0, whichever it meant
    session.tell(t2, 0.4)
    assert session.outcomes == [1, 0, 0.4]
    with pytest.raises(HsprError, match=r"was already recorded \(as 5/5\)"):
        session.tell(t0, 1.0)
    with pytest.raises(HsprError, match=r"was already recorded \(as 2/5\)"):
        session.tell(t2, 0.4)


@pytest.mark.filterwarnings("ignore::hspr.errors.UnaskedTaskWarning")  # it tells tasks not asked, on purpose
def test_a_trials_session_reopens_with_its_logged_outcomes_and_retells_them(tmp_path):
    """The refusal of an integer 1 must not reach a session's own log, which writes 5/5 as 1: a uniform
    session of the terminal-bench bank recorded 5/5 and then could not be reopened. Outcomes read
    back from a session (floats on such a bank) can be told to another."""
    for method in ("uniform", "hspr"):
        path = tmp_path / f"{method}.hspr"
        live = LiveSession.create(path, bank="terminal-bench", budget=6, method=method)
        t1, t2 = live.next(2)
        live.record(t1, "5/5")  # logged as 1, an integer, as `hspr live record t1 5/5` logs it
        live.record(t2, 0.4)
        again = LiveSession.open(path)
        assert again.session.trials == 5 and again.session.outcomes == [1.0, 0.4]
        assert [type(y) for y in again.session.outcomes] == [float, float]
        assert again.status().estimate.point == live.status().estimate.point
        fresh = again.model.start(6, 0)
        for t, y in zip(again.session.queried, again.session.outcomes):
            fresh.tell(t, y)
        assert fresh.estimate().point == pytest.approx(again.session.estimate().point)
        # a hostile re-trial: `live plot` replays the logged 1 too, and refused it
        assert [p["task"] for p in again.trajectory()][-2:] == [t1, t2]
        with pytest.raises(LiveSessionError, match=r"outcome 1 \(an integer or boolean\) is ambiguous with 5 trials"):
            again.record(live.next(1)[0], 1)  # the live API as Session.tell: 1 is not 5/5


def test_pass_rates_over_every_task_keep_the_estimate_within_its_bounds():
    """A re-trial: a session of repeated trials that recorded every task refused every estimate, its
    upper bound (s + N) - N having rounded below s (0.0666...66 against 0.0666...67)."""
    from hspr.session import feasible_bounds

    rates = [0, 0, 0, 0, 1 / 3]
    s = float(np.sum(rates))
    lo, hi = feasible_bounds(s, 5, 5)
    assert lo == hi == s / 5
    m = simulate_trials(4, 5, 3, seed=2)
    fitted = get_method("hspr_robust").fit(m)
    session = fitted.start(5, 0)
    for t, y in zip(m.tasks, rates):
        session.tell(t, y)
    est = session.estimate()
    assert est.point == est.lower == est.upper == pytest.approx(s / 5, abs=1e-15)


def test_harbor_trials_of_two_datasets_or_mostly_errored_cells(tmp_path):
    """A re-trial: trials of two datasets were recorded into one session (in one folder, or one job at a
    time); where most cells had one errored trial the build refused the clean cells; two long model names
    differing after 80 characters became one row; a named pipe given as the path hung."""
    from hspr.errors import InputWarning
    from hspr.harness import read_outcomes

    def tag(job, dataset):
        for f in job.glob("*/result.json"):
            f.write_text(json.dumps({**json.loads(f.read_text()), "source": dataset}))
        return job

    two = tag(harbor_job(tmp_path / "two", {"a": [1]}), "terminal-bench@2.0")
    tag(harbor_job(tmp_path / "two-b", {"b": [0]}, first=1), "swebench-verified")
    (two / "b__1").symlink_to(tmp_path / "two-b" / "b__1", target_is_directory=True)
    with pytest.raises(DataError, match=r"trials of 2 datasets \('terminal-bench@2.0', 'swebench-verified'\)"):
        read_outcomes(two)
    live = LiveSession.create(tmp_path / "v.hspr", bank="verified", budget=5, method="hspr")
    t1, t2 = live.next(2)
    live.ingest(tag(harbor_job(tmp_path / "j1", {t1: [1]}), "swebench-verified"))
    with pytest.raises(LiveSessionError, match=r"of dataset 'swebench-lite', but this session's outcomes from .* are of "
                                               r"dataset 'swebench-verified'"):
        live.ingest(tag(harbor_job(tmp_path / "j2", {t2: [0]}), "swebench-lite"))
    jobs = tmp_path / "jobs"  # 3 of 4 cells have a harness error beside 1 graded trial; the clean cell has 2
    harbor_job(jobs / "a", {"t1": [1, 1], "t2": [1, (None, "DaytonaError")]}, agent="a")
    harbor_job(jobs / "b", {"t1": [0, (None, "DaytonaError")], "t2": [1, (None, "DaytonaError")]}, agent="b")
    with pytest.warns(InputWarning, match=r"the bank has 2 trial\(s\) per cell; dropped 1 agent"):  # no '0 missing'
        assert load_matrix(jobs).agents == ("a / m1",)
    every = tmp_path / "every"  # every cell has 2 graded trials and 1 errored: no clean cell to count from
    harbor_job(every / "a", {"t1": [1, 1, (None, "DaytonaError")], "t2": [0, 1, (None, "DaytonaError")]}, agent="a")
    harbor_job(every / "b", {"t1": [0, 0, (None, "DaytonaError")], "t2": [1, 1, (None, "DaytonaError")]}, agent="b")
    with pytest.warns(InputWarning, match=r"every cell has a harness error or a cancelled trial beside its graded "
                                          r"trials and no job config.json gives a number of trials the jobs agree on, so the bank's "
                                          r"count is the most common number of graded trials, 2: if the jobs ran "
                                          r"--n-attempts 2, .* if more, re-run them") as seen:
        m = load_matrix(every)
    assert len(seen) == 1 and m.trials == 2 and m.missing is None and m.values.tolist() == [[2, 1], [0, 2]]
    # a hostile trial: the same with cancelled trials was a 2-trial bank with no word; with a few complete cells
    # beside them, the complete cells' count is the bank's and the others are missing
    cancelled = tmp_path / "cancelled"
    harbor_job(cancelled / "a", {"t1": [1, 1, (None, "CancelledError")], "t2": [0, 1, (None, "CancelledError")]}, agent="a")
    with pytest.warns(InputWarning, match=r"every cell has a harness error or a cancelled trial"):
        assert load_matrix(cancelled).trials == 2
    harbor_job(cancelled / "b", {"t1": [1, 1, 0], "t2": [0, 0, 1]}, agent="b")
    with pytest.warns(InputWarning, match=r"the bank has 3 trial\(s\) per cell; dropped 1 agent\(s\) with no such cell "
                                          r"\('a / m1'\)"):
        assert load_matrix(cancelled).agents == ("b / m1",)
    # a re-trial: most cells 5 graded + 1 cancelled (re-run) and one clean cell of 4 was refused as "most cells have
    # 4"; the jobs' config.json (n_attempts) settles the count where some cell has that many graded trials
    planned = tmp_path / "planned"
    harbor_job(planned / "a", {f"t{i}": [1, 0, 1, 0, 1, (None, "CancelledError")] for i in range(4)}, agent="a")
    harbor_job(planned / "b", {"t0": [1, 1, 1, 1], **{f"t{i}": [0] * 5 + [(None, "DaytonaError")] for i in (1, 2, 3)}},
               agent="b")
    with pytest.raises(DataError, match="where most cells have 4"):
        load_matrix(planned)  # no config: the one clean cell decides
    for job in ("a", "b"):
        (planned / job / "config.json").write_text(json.dumps({"job_name": job, "n_attempts": 5}))
    with pytest.warns(InputWarning) as seen:
        m = load_matrix(planned)
    assert m.trials == 5 and m.missing.sum() == 1 and m.missing[1, 0] and m.values[0].tolist() == [3, 3, 3, 3]
    assert len(seen) == 1 and "1 missing cell(s) (fewer graded trials, or not run), e.g. 'b / m1' on 't0'" in str(seen[0].message)
    # a second re-trial: jobs one folder deeper (jobs/<group>/<job>/config.json) were not read
    nested = tmp_path / "nested"
    nested.mkdir()
    planned.rename(nested / "group")
    with pytest.warns(InputWarning, match=r"1 missing cell"):
        assert load_matrix(nested).trials == 5
    (nested / "group" / "b" / "config.json").write_text(json.dumps({"job_name": "b", "n_attempts": 10}))
    with pytest.raises(DataError, match="where most cells have 4"):
        load_matrix(nested)  # jobs of 5 and 10 attempts: no count of the jobs', the cells' own counts instead
    (nested / "group" / "b" / "config.json").write_text(json.dumps({"job_name": "b", "n_attempts": 1}))
    with pytest.warns(InputWarning, match=r"1 missing cell"):
        assert load_matrix(nested).trials == 5  # a re-run job of one attempt beside jobs of 5
    short = tmp_path / "short"  # the jobs ran 5 and every cell has 4 graded trials: said, with what to do
    harbor_job(short / "a", {"t1": [1, 0, 1, 0], "t2": [0, 0, 0, 1]}, agent="a")
    (short / "a" / "config.json").write_text(json.dumps({"job_name": "a", "n_attempts": 5}))
    with pytest.warns(InputWarning, match=r"the jobs ran --n-attempts 5 \(their config.json\), but no cell has 5 graded "
                                          r"trials .* the most common number of graded trials, 4") as seen:
        assert load_matrix(short).trials == 4
    assert len(seen) == 1
    # a third re-trial: jobs of one attempt each add up (no count from their configs); an interrupted job of 5 whose
    # cells stand at 4 + 1 cancelled and at 2 was refused as "one job read twice"; more trials than the configs' 3
    # (an extra job of one on every task) were said to be short of them
    ones = tmp_path / "ones"
    for k in range(3):
        harbor_job(ones / f"j{k}", {"t1": [1], "t2": [(None, "DaytonaError")] if k == 0 else [0]}, agent="a", first=k)
        harbor_job(ones / f"j{k}", {"t1": [0], "t2": [1]}, agent="b", summary=False, first=k + 10)
        (ones / f"j{k}" / "config.json").write_text(json.dumps({"job_name": f"j{k}", "n_attempts": 1}))
    with pytest.warns(InputWarning, match=r"1 missing cell\(s\) .* 'a / m1' on 't2'"):
        m = load_matrix(ones)
    assert m.trials == 3 and m.values.tolist()[1] == [0, 3]
    stopped = tmp_path / "stopped"
    harbor_job(stopped / "a", {"t1": [1, 1, 0, 0, (None, "CancelledError")], "t2": [1, 0, 1, 0, (None, "CancelledError")],
                               "t3": [1, 0], "t4": [0, 0]}, agent="a")
    (stopped / "a" / "config.json").write_text(json.dumps({"job_name": "a", "n_attempts": 5}))
    with pytest.warns(InputWarning) as seen:
        m = load_matrix(stopped)
    assert m.trials == 4 and m.tasks == ("t1", "t2")  # the tie 2 : 2 goes to the larger count, as without configs
    said = [str(w.message) for w in seen]
    assert len(said) == 2 and "the jobs ran --n-attempts 5 (their config.json), but no cell has 5 graded trials" in said[0]
    assert "dropped 2 task(s) with no such cell ('t3', 't4')" in said[1]
    extra = tmp_path / "extra"
    harbor_job(extra / "a", {"t1": [1, 0, 1], "t2": [0, 0, 1]}, agent="a")
    harbor_job(extra / "b", {"t1": [1], "t2": [0]}, agent="a", summary=False, first=5)
    (extra / "a" / "config.json").write_text(json.dumps({"job_name": "a", "n_attempts": 3}))
    (extra / "b" / "config.json").write_text(json.dumps({"job_name": "b", "n_attempts": 1}))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # 4 trials in every cell, more than the configs' 3: nothing to warn of
        assert load_matrix(extra).trials == 4
    # following the advice for one cell only: the count of the others stands, and the error says what to do
    harbor_job(every / "a-rerun", {"t1": [0]}, agent="a", summary=False, first=7)
    with pytest.raises(DataError, match=r"has 3 graded trials of task 't1', where most cells have 2: .* or, if the jobs "
                                        r"ran --n-attempts 3: every cell has a harness error or a cancelled trial"):
        load_matrix(every)
    long = tmp_path / "long"
    stem = "openrouter/anthropic/" + "x" * 80
    harbor_job(long / "a", {"t1": [1]}, agent="t", model=stem + "-a")
    harbor_job(long / "b", {"t1": [0]}, agent="t", model=stem + "-b", first=1)
    assert load_matrix(long).n_agents == 2
    os.mkfifo(tmp_path / "pipe.json")
    with pytest.raises(DataError, match="not a regular file"):
        load_matrix(tmp_path / "pipe.json")
    with pytest.raises(DataError, match="not a regular file"):
        read_outcomes(tmp_path / "pipe.json")


def test_rerun_advice_on_a_trials_bank_keeps_the_graded_trials(tmp_path):
    """A new-user trial: a task with a harness error on a bank of 5 trials was told `hspr live record TASK 0`,
    which that bank refuses and which would drop the trials that passed."""
    live = LiveSession.create(tmp_path / "tb.hspr", bank="terminal-bench", budget=8, method="hspr")
    t1 = live.next(1)[0]
    live.ingest(harbor_job(tmp_path / "j", {t1: [1, 1, 0, 0, (None, "DockerDaemonError")]}))
    out = " ".join(CliRunner().invoke(main, ["live", "status", "--session", str(tmp_path / "tb.hspr")]).output.split())
    where = f"--session {tmp_path / 'tb.hspr'}"  # a new-user trial: without it the command went to run.hspr
    assert f"`hspr live record {where} {t1} K/5` with K the trials that passed" in out and " 0`" not in out
    assert "bank terminal-bench (80 tasks x 5 trials; the score is the mean pass rate)" in out  # a new-user trial
    res = CliRunner().invoke(main, ["live", "record", "--session", str(tmp_path / "tb.hspr"), t1, "2/5"])
    assert res.exit_code == 0 and LiveSession.open(tmp_path / "tb.hspr").recorded == {t1: 0.4}


def test_a_harbor_trial_lacking_a_key_is_named(tmp_path):
    """A new-user trial: a hand-made trial result.json without 'verifier_result' was "an unknown folder layout" to
    `bank build`, "give a CSV" to `live ingest` on a trials bank, and "not a subject record" as a single file."""
    from hspr.harness import HarnessFormatError, read_outcomes

    job = harbor_job(tmp_path / "jobs" / "j1", {"t1": [1], "t2": [0]})
    trial = job / "t2__0" / "result.json"
    trial.write_text(json.dumps({"task_name": "t2", "trial_name": "t2__0", "reward": 1}))
    want = rf"{re.escape(str(trial))}: a Harbor trial's result.json without 'verifier_result'; hspr reads 'task_name'"
    for path in (tmp_path / "jobs", job, trial):
        with pytest.raises(DataError, match=want):
            load_matrix(path)
        for trials in (None, 5):
            with pytest.raises(HarnessFormatError, match=want):
                read_outcomes(path, trials=trials)
    res = CliRunner().invoke(main, ["bank", "build", str(tmp_path / "jobs"), "--out", str(tmp_path / "b.csv")])
    assert res.exit_code == 2 and "without 'verifier_result'" in res.output and not (tmp_path / "b.csv").exists()
    trial.write_text(json.dumps({"trial_name": "t2__0", "verifier_result": None}))
    with pytest.raises(DataError, match=r"without 'task_name'; hspr reads"):
        load_matrix(job)
    trial.write_text(json.dumps({"id": "x", "n_total_trials": 2, "stats": {}}))  # not a trial's keys: a job summary
    assert load_matrix(job).values.tolist() == [[1]]
    # a hostile trial: another tool's result.json naming a task_name beside SWE-bench logs was refused, and so was
    # the agent's own result.json inside a trial still running (its config.json, no result yet)
    from .test_harness import instance_report, write_instance

    for iid, ok in (("astropy__astropy-12907", True), ("astropy__astropy-13033", False)):
        d = write_instance(tmp_path / "swe", iid, instance_report(iid, ok))
    (d / "result.json").write_text(json.dumps({"task_name": iid, "duration": 3.5}))
    root = tmp_path / "swe" / "logs" / "run_evaluation" / "run1"
    assert sorted((o.instance_id, o.outcome) for o in read_outcomes(root).outcomes) == [
        ("astropy__astropy-12907", 1), ("astropy__astropy-13033", 0)]
    running = job / "t3__0"
    (running / "agent").mkdir(parents=True)
    (running / "config.json").write_text(json.dumps({"task": {"path": "t3"}, "trial_name": "t3__0",
                                                     "trials_dir": str(job), "agent": {}}))
    (running / "agent" / "result.json").write_text(json.dumps({"task_name": "t3", "steps": 4}))
    trial.write_text(json.dumps({"task_name": "t2", "trial_name": "t2__0", "verifier_result": {"rewards": {"reward": 0}},
                                 "agent_info": {"name": "terminus-2", "model_info": {"name": "m1"}}}))
    assert load_matrix(job).values.tolist() == [[1, 0]] and load_matrix(job).tasks == ("t1", "t2")
    assert [o.instance_id for o in read_outcomes(job).outcomes] == ["t1", "t2"]
    with pytest.raises(DataError, match="no Harbor trial result.json found"):  # the running trial's folder itself
        load_matrix(running)
    with pytest.raises(HarnessFormatError, match="no Harbor trial result.json found"):
        read_outcomes(running)
    # a re-trial: with its own result.json caught mid-write, the running trial's folder was searched all the same
    (running / "result.json").write_text('{"task_name": "t3", "trial_na')
    with pytest.raises(DataError, match=r"t3__0/result.json.*could not be read"):  # a bank is built from finished jobs
        load_matrix(job)
    read = read_outcomes(job)
    assert [o.instance_id for o in read.outcomes] == ["t1", "t2"] and "could not be read" in " ".join(read.notes)


def test_a_harbor_bank_refuses_unreadable_trials_and_names_a_started_job(tmp_path):
    """A re-trial: a finished job whose result.json files were all damaged dropped its agent from the built bank
    under a warning that only counted them; a job folder holding only its config.json was an 'unknown folder'."""
    jobs = tmp_path / "jobs"
    harbor_job(jobs / "a", {"t1": [1], "t2": [0]}, agent="a")
    harbor_job(jobs / "b", {"t1": [0], "t2": [1]}, agent="b", first=1)
    for f in (jobs / "b").glob("*/result.json"):
        f.write_text(f.read_text()[:40])
    with pytest.raises(DataError, match=r"\(2 trial result.json file\(s\) could not be read\); a bank is built from "
                                        r"finished jobs"):
        load_matrix(jobs)
    started = tmp_path / "started"
    started.mkdir()
    (started / "config.json").write_text(json.dumps({"job_name": "started", "n_attempts": 5}))
    with pytest.raises(DataError, match=r"no Harbor trial result.json found \(no trial has finished yet\?\)"):
        load_matrix(started)


def test_live_start_without_bank_says_it_took_the_default(tmp_path):
    # a new-user trial: a Terminal-Bench user forgot --bank; the session was on Verified without a word, and
    # `record TASK 3/5` then failed on the outcome
    res = CliRunner().invoke(main, ["live", "start", "--budget", "3", "--method", "uniform",
                                    "--session", str(tmp_path / "a.hspr")])
    assert res.exit_code == 0, res.output
    assert "no --bank given: the session is on the bundled bank verified" in res.stderr
    assert "terminal-bench" in res.stderr
    res = CliRunner().invoke(main, ["live", "record", "--session", str(tmp_path / "a.hspr"), "hello-world", "3/5"])
    assert res.exit_code == 2 and "'hello-world' is not in the bank (verified" in res.output
    res = CliRunner().invoke(main, ["live", "start", "--bank", "terminal-bench", "--budget", "3", "--method", "uniform",
                                    "--session", str(tmp_path / "b.hspr")])
    assert res.exit_code == 0 and "no --bank given" not in res.stderr
    res = CliRunner().invoke(main, ["live", "start", "--budget", "3", "--method", "uniform",  # a re-trial: said on failure
                                    "--session", str(tmp_path / "a.hspr")])
    assert res.exit_code == 2 and "already exists" in res.output and "no --bank given" not in res.output
    res = CliRunner().invoke(main, ["bank", "build", "terminal-bench", "--out", ""])
    assert res.exit_code == 2 and "--out: an empty path" in res.output


def test_a_folder_that_cannot_be_listed_is_named(tmp_path, monkeypatch):
    """A hostile trial: an unreadable agent folder (chmod 000) left its agent out of the bank without a
    word (os.walk skips what it cannot list). Root reads any folder, so listing one fails here by hand."""
    import os

    from hspr.errors import InputWarning, UnreadableFolderWarning
    from hspr.harness import read_outcomes

    job = harbor_job(tmp_path / "job", {"a": [1], "b": [0], "c": [1]}, summary=False)
    locked, scandir = job / "b__0", os.scandir

    def refusing(path="."):
        if os.fspath(path) == str(locked):
            raise PermissionError(13, "Permission denied", str(locked))
        return scandir(path)

    monkeypatch.setattr(os, "scandir", refusing)
    with pytest.warns(InputWarning, match=rf"{re.escape(str(job))}: 1 folder\(s\) below it could not be read \("
                                          rf"{re.escape(str(locked))}: Permission denied\); results inside them are left out"):
        read = read_outcomes(job)
    assert sorted(o.instance_id for o in read.outcomes) == ["a", "c"]
    with pytest.warns(UnreadableFolderWarning):  # its own category: a live session reads it as a changed bank's cause
        read_outcomes(job)
    monkeypatch.setattr(os, "scandir", scandir)
    with warnings.catch_warnings():
        warnings.simplefilter("error", InputWarning)
        assert sorted(o.instance_id for o in read_outcomes(job).outcomes) == ["a", "b", "c"]  # readable: no warning


def test_an_unreadable_agent_folder_is_named_once_and_by_a_session_on_the_bank(tmp_path, monkeypatch):
    """A re-trial: `bank validate` said the warning 4 times (the folder is walked more than once), and a
    session on a folder bank, once an agent folder could not be read, said 'another bank: start a new
    session' without the cause."""
    import os

    truth = simulate_trials(6, 12, 3, seed=1)
    jobs = _harbor_bank(tmp_path / "jobs", truth)
    live = LiveSession.create(tmp_path / "s.hspr", matrix=str(jobs), budget=4, method="uniform")
    locked, scandir = jobs / f"{truth.agents[2]}-a", os.scandir
    monkeypatch.setattr(os, "scandir", lambda path=".": _refuse(path, locked, scandir))
    res = CliRunner().invoke(main, ["bank", "validate", str(jobs)])
    said = f"warning: {jobs}: 1 folder(s) below it could not be read ({locked}: Permission denied)"
    assert res.exit_code == 0 and res.stderr.count(said) == 1, res.stderr
    assert "5 agents" in res.stdout
    res = CliRunner().invoke(main, ["live", "next", "--session", str(live.path)])
    assert res.exit_code == 2 and f"reading it: {jobs}: 1 folder(s) below it could not be read ({locked}" in res.stderr
    assert "start a new session" not in res.stderr


def _harbor_bank(jobs, truth: ResponseMatrix):
    """A folder of Harbor jobs, one per agent of ``truth`` (a bank of 3 trials), whose bank is ``truth``."""
    for i, agent in enumerate(truth.agents):
        for j, task in enumerate(truth.tasks):
            k = int(truth.values[i, j])
            harbor_job(jobs / f"{agent}-a", {task: [1] * k + [0] * (3 - k)}, agent="terminus", model=agent, summary=False)
    return jobs


def _refuse(path, locked, scandir):
    """``os.scandir``, refusing ``locked`` as a folder without read permission does."""
    if os.fspath(path) == str(locked):
        raise PermissionError(13, "Permission denied", str(locked))
    return scandir(path)


def test_ingest_json_lists_an_unreadable_trial_folder(tmp_path, monkeypatch):
    """A re-trial: `live ingest FOLDER --json` left out a trial it could not read with `"warnings": []`; the
    warning said on stderr is in the object's `input_warnings` too."""
    import os

    live = LiveSession.create(tmp_path / "tb.hspr", bank="terminal-bench", budget=8, method="hspr")
    t1, t2 = live.next(2)
    job = harbor_job(tmp_path / "job", {t1: [1] * 5, t2: [0] * 5})
    locked, scandir = job / f"{t2}__0", os.scandir
    monkeypatch.setattr(os, "scandir", lambda path=".": _refuse(path, locked, scandir))
    res = CliRunner().invoke(main, ["live", "ingest", str(job), "--session", str(live.path), "--json"])
    got = json.loads(res.stdout.strip().splitlines()[-1])
    said = f"{job}: 1 folder(s) below it could not be read ({locked}: Permission denied)"
    assert [w for w in got["input_warnings"] if w.startswith(said)] and res.stderr.count(said) == 1, res.output
    assert [r["task"] for r in got["recorded"]][:1] == [t1]


@pytest.mark.parametrize("slow", [False, True])
def test_a_slow_folder_bank_says_to_build_a_bank_file(tmp_path, monkeypatch, slow):
    """A hostile trial: every command of a session on a large folder bank walked it again (8.6 s each),
    unsaid. `start` says so, with the build command, when the read took SLOW_FOLDER_S or more."""
    import hspr.cli.live as cli_live

    jobs = _harbor_bank(tmp_path / "my jobs", simulate_trials(6, 12, 3, seed=1))
    if slow:
        monkeypatch.setattr(cli_live, "SLOW_FOLDER_S", 0.0)
    monkeypatch.chdir(tmp_path)
    args = ["live", "start", "--matrix", "my jobs", "--budget", "4", "--method", "uniform", "--session", "s.hspr"]
    res = CliRunner().invoke(main, [a if a != "4" else "999" for a in args])  # a re-trial: said before the refusal
    assert res.exit_code == 2 and "--budget '999'" in res.stderr and "every command of this session" not in res.stderr
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    s = tmp_path / "s.hspr"
    csv = tmp_path / f"s.hspr.bank-{LiveSession.open(s).doc['bank']['digest'][:12]}.csv"
    said = (f"every command of this session reads it again (to check the bank is unchanged), where a bank file is read "
            f"once and then kept parsed in the fit cache: `hspr bank build '{jobs}' --out {csv} && hspr live relink "
            f"--matrix {csv} --session {s}` (the same bank: the session keeps its outcomes)")
    assert (said in res.stderr) == slow, res.stderr
    if slow:  # the commands run as printed, and the session is then on the file
        cmd = said.split("`")[1]
        import shlex

        first, second = (shlex.split(c) for c in cmd.split(" && "))
        assert CliRunner().invoke(main, first[1:]).exit_code == 0
        res = CliRunner().invoke(main, second[1:])
        assert res.exit_code == 0 and LiveSession.open(s).doc["bank"]["matrix"] == str(csv), res.output


def test_a_changed_folder_bank_names_its_cause(tmp_path, monkeypatch):
    """A re-trial: a session started while an agent folder could not be read was refused as 'another
    bank' once the folder was readable again, the cause unsaid; `relink` to a copy with an unreadable
    folder said 'holds another bank' alone; and a warning came after the error it explains."""
    import os
    import shutil

    from hspr.errors import InputWarning

    truth = simulate_trials(6, 12, 3, seed=1)
    jobs = _harbor_bank(tmp_path / "jobs", truth)
    locked, scandir = jobs / f"{truth.agents[2]}-a", os.scandir
    monkeypatch.setattr(os, "scandir", lambda path=".": _refuse(path, locked, scandir))
    with pytest.warns(InputWarning, match="could not be read"):
        live = LiveSession.create(tmp_path / "s.hspr", matrix=str(jobs), budget=4, method="uniform")
    monkeypatch.setattr(os, "scandir", scandir)  # readable again: one agent more than the session's bank
    res = CliRunner().invoke(main, ["live", "next", "--session", str(live.path)])
    assert res.exit_code == 2 and "it has 1 agent(s) more than when the session started (results added since, or a " \
                                  "folder that could not be read then is readable now)" in res.stderr, res.stderr
    copy = tmp_path / "copy"
    shutil.copytree(jobs, copy)
    monkeypatch.setattr(os, "scandir", lambda path=".": _refuse(path, copy / f"{truth.agents[4]}-a", scandir))
    res = CliRunner().invoke(main, ["live", "relink", "--matrix", str(copy), "--session", str(live.path)])
    unread = f"{copy}: 1 folder(s) below it could not be read ({copy / f'{truth.agents[4]}-a'}: Permission denied)"
    assert res.exit_code == 2 and "holds another bank" in res.stderr and f"reading it: {unread}" in res.stderr
    assert res.stderr.index(f"warning: {unread}") < res.stderr.index("error:")  # the warning first, once
    assert res.stderr.count(f"warning: {unread}") == 1


def test_a_harbor_jobs_folder_is_walked_once_per_load(tmp_path, monkeypatch):
    """A scale trial: every live command on a jobs folder of 10,000 trials parsed each result.json twice (the
    form's detection, then the reader): 2.7 s a command. The bank is the same with one walk."""
    import hspr.data.harbor as harbor
    from hspr.data.io import load_matrix

    harbor_job(tmp_path / "jobs" / "j1", {"t1": [1, 0], "t2": [1, 1], "t3": [0, 0]})
    harbor_job(tmp_path / "jobs" / "j2", {"t1": [0, 0], "t2": [1, 0], "t3": [1, 1]}, agent="other")
    walks = []
    scan = harbor.scan
    monkeypatch.setattr(harbor, "scan", lambda *a, **k: walks.append(a[0]) or scan(*a, **k))
    m = load_matrix(tmp_path / "jobs")
    assert walks == [tmp_path / "jobs"]
    assert load_matrix(tmp_path / "jobs").digest() == m.digest() and walks == [tmp_path / "jobs"] * 2  # once more
    for cmd in (["validate", str(tmp_path / "jobs")], ["build", str(tmp_path / "jobs"), "--out", str(tmp_path / "b.csv")]):
        walks.clear()  # bank validate and build walked it a second time for the form they name
        res = CliRunner().invoke(main, ["bank", *cmd])
        assert res.exit_code == 0, res.output
        assert walks == [tmp_path / "jobs"], cmd
    assert m.agents == ("other / m1", "terminus-2 / m1") and m.tasks == ("t1", "t2", "t3") and m.trials == 2
    np.testing.assert_array_equal(m.values, [[0, 1, 2], [1, 2, 0]])


def test_files_beside_a_harbor_jobs_folder_are_named(tmp_path):
    """A hostile trial: a folder of a Harbor job, a CSV and a SWE-bench report was read as the job's one agent
    without a word of the other two."""
    from hspr.errors import InputWarning

    root = tmp_path / "mixed"
    harbor_job(root / "job", {"a": [1, 0], "b": [0, 0]})
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing beside the job: no warning
        assert load_matrix(root).shape == (1, 2)
    (root / "plain.csv").write_text("agent,a\nx,1\n")
    (root / "report.json").write_text("{}")
    (root / "notes.txt").write_text("not a matrix")
    with pytest.warns(InputWarning, match=r"mixed: read as a Harbor jobs folder; 2 file\(s\) beside it were not read "
                                          r"\(plain.csv, report.json\)"):
        assert load_matrix(root).shape == (1, 2)
