"""Peers that take pass rates over repeated trials (Terminal-Bench): every registered peer, checked against
closed forms and against the same bank written as 0/1 outcomes."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from hspr.data import ResponseMatrix
from hspr.errors import HsprError
from hspr.methods import get_method
from hspr.methods.disco import _l1_distances, disagreement_order

PEERS = ("stratified", "rsl", "midrange", "midrange_ridge", "aipw", "disco", "faq", "tinybench", "atlas", "pta_irt")


def trials_bank(n_agents: int, n_tasks: int, trials: int, seed: int, all_or_none: bool = False) -> ResponseMatrix:
    """Success counts from a 2PL (ability + difficulty); with ``all_or_none`` every cell is 0 or ``trials``."""
    rng = np.random.default_rng(seed)
    p = 1 / (1 + np.exp(-(rng.normal(0, 1.2, n_agents)[:, None] - rng.normal(0, 1.5, n_tasks)[None, :])))
    counts = trials * rng.binomial(1, p) if all_or_none else rng.binomial(trials, p)
    return ResponseMatrix([f"a{i:02d}" for i in range(n_agents)], [f"t{j:03d}" for j in range(n_tasks)], counts,
                          trials=trials)


def play(model, row: np.ndarray, tasks: tuple[str, ...], budget: int, seed: int = 0):
    """Run one session to its budget, telling ``row``'s outcome (a float pass rate) of each asked task."""
    pos = {t: j for j, t in enumerate(tasks)}
    sess = model.start(budget, seed)
    while not sess.done:
        t = sess.ask()
        sess.tell(t, float(row[pos[t]]))
    return sess


@pytest.mark.parametrize("name", PEERS)
def test_a_pass_rate_peer_is_exact_at_full_budget(name):
    bank = trials_bank(14, 30, 5, seed=2)
    model = get_method(name).fit(bank.rows(np.arange(12)))
    for row in bank.rows([12, 13]).rates():
        assert 0 < row.mean() < 1 and np.any((row > 0) & (row < 1))  # real pass rates, not only 0 and 1
        est = play(model, row, bank.tasks, 30).estimate()
        assert est.point == pytest.approx(row.mean(), abs=1e-12)
        if est.lower is not None:
            assert est.lower == pytest.approx(est.upper, abs=1e-12)


@pytest.mark.parametrize("name", PEERS)
def test_all_or_none_trials_give_the_estimates_of_the_0_1_bank(name):
    """A bank whose every cell passed all trials or none holds the same rates as its 0/1 bank: each
    peer's asks and estimates must be the same on both (the 0/1 path is unchanged by pass rates)."""
    rates = trials_bank(16, 40, 4, seed=5, all_or_none=True)
    binary = ResponseMatrix(rates.agents, rates.tasks, (rates.values > 0).astype(int))
    src = np.arange(13)
    fits = [get_method(name).fit(m.rows(src)) for m in (rates, binary)]
    for r in (13, 14, 15):
        row = binary.values[r].astype(float)
        a, b = (play(f, row, rates.tasks, 8, seed=3) for f in fits)
        assert a.queried == b.queried
        ea, eb = a.estimate(), b.estimate()
        assert (ea.point, ea.lower, ea.upper) == (eb.point, eb.lower, eb.upper)


def test_stratified_interval_uses_the_sample_variance_of_the_pass_rates():
    """One stratum: the point is the mean of the sampled pass rates and the half-width
    z_.95 * sqrt((1 - n/N) s^2 / n) with s^2 their sample variance (it used the 0/1 identity sum y^2 =
    sum y, which for rates 0.2, 0.4, ... overstates s^2)."""
    bank = trials_bank(10, 60, 5, seed=7)
    model = get_method("stratified", n_strata=1).fit(bank.rows(np.arange(9)))
    row = bank.rates()[9]
    sess = play(model, row, bank.tasks, 20, seed=1)
    y = np.array(sess.outcomes, float)
    assert np.any((y > 0) & (y < 1))
    est = sess.estimate()
    half = stats.norm.ppf(0.95) * math.sqrt((1 - 20 / 60) * y.var(ddof=1) / 20)
    assert est.point == pytest.approx(y.mean(), abs=1e-12)
    assert (est.lower, est.upper) == pytest.approx((y.mean() - half, y.mean() + half), abs=1e-12)


def test_disco_orders_pass_rates_by_the_jensen_shannon_divergence():
    # task columns: x every source at 0.5 (agree, JSD 0), y sources at 0 and 1 (JSD ln 2),
    # z sources at 0.2 and 0.6 (JSD H(0.4) - (H(0.2) + H(0.6)) / 2), w every source at 1 (JSD 0)
    def h(p):
        return -p * math.log(p) - (1 - p) * math.log(1 - p)

    assert h(0.4) - (h(0.2) + h(0.6)) / 2 == pytest.approx(0.0863, abs=1e-4)
    values = np.array([[0.5, 0.0, 0.2, 1.0], [0.5, 1.0, 0.6, 1.0]])
    # y, z, then the two JSD-0 columns by task id ('w' before 'x'), although x's mean rate is 0.5
    assert disagreement_order(values, ["x", "y", "z", "w"]).tolist() == [1, 2, 3, 0]
    # 0/1 columns keep the order by |2 c - n| (binary entropy of the pass rate), ties by id
    assert disagreement_order(np.array([[1, 0, 1], [1, 1, 0], [0, 1, 0]]), ["c", "b", "a"]).tolist() == [2, 1, 0]


def test_disco_distance_is_hamming_for_0_1_rows_and_l1_for_pass_rates():
    A = np.array([[1.0, 0.0, 1.0], [0.2, 0.4, 1.0]])
    B = np.array([[0.0, 0.0, 1.0], [1.0, 1.0, 1.0]])
    np.testing.assert_allclose(_l1_distances(A, B), [[1.0, 1.0], [0.6, 1.4]])


@pytest.mark.parametrize("name", PEERS)
def test_a_pass_rate_peer_takes_rates_of_the_bank_trials_only(name):
    bank = trials_bank(8, 20, 5, seed=9)
    sess = get_method(name).fit(bank.rows(np.arange(7))).start(5, 0)
    t1, t2 = sess.ask(), sess.ask()
    sess.tell(t1, 0.6)  # 3 of 5 trials
    with pytest.raises(HsprError, match="not a pass rate over the bank's 5 trials"):
        sess.tell(t2, 0.5)
    binary = ResponseMatrix(bank.agents, bank.tasks, (bank.values > 2).astype(int))
    sess = get_method(name).fit(binary.rows(np.arange(7))).start(5, 0)
    with pytest.raises(HsprError, match="must be 0 or 1"):
        sess.tell(sess.ask(), 0.6)  # fitted on 0/1 outcomes: a pass rate is a mistake


def test_the_4pl_objective_on_pass_rates_has_its_gradient_and_the_0_1_value():
    """The pass-rate branch of the 4PL fit's negative log posterior: its analytic gradient matches central
    differences, and on 0/1 cells it equals the 0/1 branch (y log p + (1 - y) log q is then log p or log q)."""
    from scipy.optimize import approx_fprime

    from hspr.irt.fourpl import FourPLSettings, _objective

    rng = np.random.default_rng(4)
    m, n = 6, 9
    x = np.concatenate([rng.normal(0, 1, m), rng.normal(0, 1, n), rng.normal(0, 0.3, n), rng.normal(-2, 1, 2 * n)])
    W = np.ones((m, n))
    st = FourPLSettings()
    Y = rng.integers(0, 6, (m, n)) / 5
    f, g = _objective(x, Y, W, m, n, st, binary=False)
    num = approx_fprime(x, lambda v: _objective(v, Y, W, m, n, st, binary=False)[0], 1e-6)
    np.testing.assert_allclose(g, num, rtol=1e-4, atol=1e-5)
    B = (Y > 0.5).astype(float)
    fb, gb = _objective(x, B, W, m, n, st, binary=True)
    fr, gr = _objective(x, B, W, m, n, st, binary=False)
    assert fr == pytest.approx(fb, rel=1e-12)
    np.testing.assert_allclose(gr, gb, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", ["rsl", "midrange_ridge", "disco"])
def test_sources_of_one_score_are_refused_on_pass_rates_too(name):
    """A trial: rows that reorder one row of thirds all score 60 %, but their means differed in the last bit,
    so the regressors fitted and answered 60 % [60, 60] whatever the target's outcomes. The scores are now
    the successes divided once, equal to the bit; the refusal keeps its tolerance for other sums."""
    from hspr.data.matrix import DataError

    rows = [[3, 3, 2, 1, 3, 3, 2, 1, 2, 2, 3, 1, 1, 0, 1, 3, 0, 2, 2, 1],  # the trial's bank: 36 of 60 trials each
            [2, 2, 1, 3, 1, 1, 1, 3, 1, 1, 2, 3, 0, 2, 3, 2, 0, 3, 2, 3],
            [2, 1, 1, 2, 1, 1, 3, 3, 3, 3, 2, 1, 0, 1, 3, 0, 2, 3, 2, 2],
            [3, 1, 1, 2, 2, 3, 1, 2, 2, 2, 1, 1, 3, 3, 0, 2, 3, 1, 0, 3]]
    bank = ResponseMatrix([f"a{i}" for i in range(4)], [f"t{j:02d}" for j in range(20)], np.array(rows), trials=3)
    assert np.ptp(bank.scores()) == 0 and np.ptp(bank.rates().mean(axis=1)) > 0  # float means of the rates differ
    with pytest.raises(DataError, match="all 4 source agents have the same score"):
        get_method(name).fit(bank)
