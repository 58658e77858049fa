"""ATLAS and PTA-IRT ports: selection rules, exact full-budget scores, budgets, prior estimate,
un-asked tells, features, registry."""

import numpy as np
import pytest

from hspr.data.matrix import ResponseMatrix
from hspr.errors import UnknownIdError
from hspr.irt.fourpl import fit_4pl_cache_clear, fit_4pl_cache_info, prob_4pl
from hspr.methods import get_method
from hspr.methods.atlas import ATLAS, AtlasSettings, top_information
from hspr.methods.pta_irt import PTAIRT, allocate, calibration_set, pass_rate_bins
from hspr.session import BudgetError


def synthetic(n_agents=24, n_tasks=30, seed=0):
    rng = np.random.default_rng(seed)
    theta = rng.normal(size=n_agents)
    a = rng.lognormal(0.3, 0.3, n_tasks)
    b = rng.normal(0, 1.2, n_tasks)
    P = prob_4pl(theta, a, b, np.full(n_tasks, 0.02), np.full(n_tasks, 0.98))
    Y = (rng.random(P.shape) < P).astype(int)
    Y[:, 0] = 0  # a task nobody solved
    return ResponseMatrix([f"a{i}" for i in range(n_agents)], [f"t{j:03d}" for j in range(n_tasks)], Y)


@pytest.fixture(scope="module")
def data():
    M = synthetic()
    src, tgt = M.rows(np.arange(20)), M.rows(np.arange(20, 24))
    return src, tgt


@pytest.fixture(scope="module")
def atlas_model(data):
    return ATLAS(log_a_sd_grid=(0.5, 1.0), inner_folds=2).fit(data[0])


@pytest.fixture(scope="module")
def pta_model(data):
    return PTAIRT(strata_grid=(1, 3), log_a_sd_grid=(0.5, 1.0), inner_folds=2).fit(data[0])


def run(model, row, budget, seed=0):
    s = model.start(budget, seed)
    while not s.done:
        t = s.ask()
        s.tell(t, int(row[s._index[t]]))
    return s


def test_registry_names():
    assert isinstance(get_method("atlas"), ATLAS)
    assert isinstance(get_method("pta_irt"), PTAIRT)
    assert get_method("atlas").seed_kind == "adaptive"
    assert get_method("pta_irt").seed_kind == "deterministic"


def test_top_information_matches_stable_sort():
    rng = np.random.default_rng(0)
    info = rng.integers(0, 5, 40).astype(float)  # many ties
    exclude = rng.random(40) < 0.3
    got = top_information(info, exclude, 5)
    allowed = np.flatnonzero(~exclude)
    want = allowed[np.argsort(-info[allowed], kind="stable")][:5]
    np.testing.assert_array_equal(got, want)
    assert top_information(info, np.ones(40, bool), 5).size == 0


def test_atlas_picks_among_top5_fisher_items(atlas_model, data):
    row = data[1].values[0]
    s = atlas_model.start(15, seed=3)
    bank = atlas_model.bank_
    for _ in range(15):
        exclude = s._observed.copy()
        info = bank.info(s.eap())
        allowed = np.flatnonzero(~exclude)
        top5 = allowed[np.argsort(-info[allowed], kind="stable")][:5]
        t = s.ask()
        assert s._index[t] in top5
        s.tell(t, int(row[s._index[t]]))


def test_atlas_seeds_differ_and_repeat(atlas_model, data):
    row = data[1].values[1]
    q0 = run(atlas_model, row, 10, seed=0).queried
    assert run(atlas_model, row, 10, seed=0).queried == q0
    assert any(run(atlas_model, row, 10, seed=s).queried != q0 for s in (1, 2, 3))


@pytest.mark.parametrize("which", ["atlas", "pta"])
def test_full_budget_gives_exact_score(which, atlas_model, pta_model, data):
    model = atlas_model if which == "atlas" else pta_model
    for row in data[1].values:
        est = run(model, row, len(row)).estimate()
        assert est.point == pytest.approx(row.mean(), abs=1e-12)
        assert est.lower == pytest.approx(row.mean(), abs=1e-12) and est.upper == pytest.approx(row.mean(), abs=1e-12)


@pytest.mark.parametrize("which", ["atlas", "pta"])
@pytest.mark.parametrize("budget", [31, -1, 2.5, "3", True])
def test_budget_errors(which, budget, atlas_model, pta_model):
    model = atlas_model if which == "atlas" else pta_model
    with pytest.raises(BudgetError):
        model.start(budget)


@pytest.mark.parametrize("which", ["atlas", "pta"])
def test_budget_zero_is_prior_estimate(which, atlas_model, pta_model):
    model = atlas_model if which == "atlas" else pta_model
    s = model.start(0)
    est = s.estimate()
    bank = atlas_model.bank_ if which == "atlas" else pta_model.bank_for(0)
    # prior predictive: E_{theta ~ N(0,1)} mean_i p_i(theta), by dense quadrature
    g = np.linspace(-8, 8, 4001)
    w = np.exp(-0.5 * g ** 2)
    prior_mean = float(w @ bank.prob(g).mean(axis=1) / w.sum())
    assert est.point == pytest.approx(prior_mean, abs=2e-3)
    assert est.n_queried == 0 and est.lower <= est.point <= est.upper
    with pytest.raises(BudgetError):
        s.ask()


@pytest.mark.parametrize("which", ["atlas", "pta"])
def test_tell_unasked_tasks(which, atlas_model, pta_model, data):
    model = atlas_model if which == "atlas" else pta_model
    row = data[1].values[2]
    s = model.start(6)
    for j in (4, 9):  # told without being asked
        s.tell(f"t{j:03d}", int(row[j]))
    while not s.done:
        t = s.ask()
        assert t not in ("t004", "t009")
        s.tell(t, int(row[s._index[t]]))
    est = s.estimate()
    assert est.n_queried == 6 and 0 <= est.point <= 1
    with pytest.raises(UnknownIdError, match=r"task id 'nope' is not in the bank \(30 tasks\)"):
        s.tell("nope", 1)


def test_estimates_track_truth(atlas_model, pta_model, data):
    for model in (atlas_model, pta_model):
        est = [run(model, r, 12).estimate().point for r in data[1].values]
        assert np.mean(np.abs(np.array(est) - data[1].values.mean(1))) < 0.15


def test_pta_calibration_set_follows_strata():
    rng = np.random.default_rng(1)
    rate = rng.random(50)
    info = rng.random(50)
    S = calibration_set(info, rate, 10, 5)
    assert len(set(S)) == 10
    labels = pass_rate_bins(rate, 5)
    alloc = allocate(np.bincount(labels, minlength=5), 10)
    assert alloc.sum() == 10
    np.testing.assert_array_equal(np.bincount(labels[S], minlength=5), alloc)
    for h in range(5):  # the chosen tasks are the most informative of their stratum
        members = np.flatnonzero(labels == h)
        chosen = np.intersect1d(S, members)
        if chosen.size:
            assert info[chosen].min() >= np.sort(info[members])[::-1][chosen.size - 1]
    assert calibration_set(info, rate, 0, 5).size == 0
    np.testing.assert_array_equal(np.sort(calibration_set(info, rate, 50, 3)), np.arange(50))


def test_pta_path_is_deterministic_and_budget_specific(pta_model, data):
    row = data[1].values[0]
    q1 = run(pta_model, row, 8).queried
    assert run(pta_model, row, 8, seed=5).queried == q1
    cal = pta_model.calibration(8)
    assert [f"t{j:03d}" for j in cal] == q1
    assert pta_model.n_strata_for(8) == 1  # chosen by its inner folds on these 20 sources (deterministic)
    assert pta_model.choice_[8] == (0.5, 1)


def test_pta_features_shape_checked(data):
    src = data[0]
    feats = np.random.default_rng(0).normal(size=(src.n_agents, src.n_tasks, 2))
    feats[0, :5] = np.nan  # unusable summaries
    m = PTAIRT(n_strata=2, log_a_sd_grid=None).fit(src, features=feats)
    s = m.start(4, features=np.zeros((src.n_tasks, 2)))
    assert s.features.shape == (src.n_tasks, 2)
    with pytest.raises(ValueError, match=r"features must have shape \(20, 30, k\), got \(2, 2, 2\)"):
        PTAIRT(n_strata=2, log_a_sd_grid=None).fit(src, features=np.zeros((2, 2, 2)))
    with pytest.raises(ValueError, match=r"session features must have shape \(1, 30, k\), got \(1, 3, 2\)"):
        m.start(4, features=np.zeros((3, 2)))


def test_bank_shared_between_methods(data):
    fit_4pl_cache_clear()
    src = data[0]
    PTAIRT(n_strata=2, log_a_sd_grid=None).fit(src)
    ATLAS(log_a_sd_grid=None).fit(src)
    info = fit_4pl_cache_info()
    assert info["misses"] == 1 and info["hits"] == 1


def test_settings_validation():
    with pytest.raises(ValueError, match="top_k must be >= 1, got 0"):
        AtlasSettings(top_k=0)
    with pytest.raises(ValueError, match="n_strata must be a whole number >= 1 or None, got 0"):
        PTAIRT(n_strata=0)
    with pytest.raises(ValueError, match=r"log_a_sd_grid needs positive values, got \(0.0,\)"):
        PTAIRT(log_a_sd_grid=(0.0,))


def test_pirt_point_equals_the_session_estimate_on_the_same_outcomes(atlas_model, data):
    """pirt_point on any outcome set equals an ATLAS session told those outcomes (order free),
    and is the exact score once every task is observed."""
    from hspr.methods.atlas import pirt_point

    src, tgt = data
    rng = np.random.default_rng(3)
    for r in range(tgt.n_agents):
        row = tgt.values[r]
        cols = rng.choice(tgt.n_tasks, 9, replace=False)
        sess = atlas_model.start(9, 0)
        for j in cols[::-1]:
            sess.tell(tgt.tasks[j], int(row[j]))
        assert pirt_point(atlas_model, cols, row[cols]) == pytest.approx(sess.estimate().point, abs=1e-12)
        every = np.arange(tgt.n_tasks)
        assert pirt_point(atlas_model, every, row) == pytest.approx(row.mean(), abs=1e-12)
    assert pirt_point(atlas_model, np.zeros(0, int), np.zeros(0)) == pytest.approx(
        atlas_model.start(0, 0).estimate().point, abs=1e-12)


@pytest.mark.parametrize("rates", [False, True])
def test_map_abilities_is_the_mode_of_the_posterior_it_states(atlas_model, rates):
    """An audit: on pass rates the MAP objective scored any rate above 0 as a success (its gradient used
    2y - 1), so PTA-IRT's ability on a bank of repeated trials missed the mode by 1-2 logits. Against a
    fine grid of log-likelihood (``loglik_theta``, which takes rates) plus the N(0, 1) prior."""
    from hspr.irt.fourpl import map_abilities

    bank = atlas_model.bank_
    rng = np.random.default_rng(4)
    idx = np.arange(20)
    Y = rng.integers(0, 6, size=(3, 20)) / 5 if rates else rng.integers(0, 2, size=(3, 20)).astype(float)
    theta, _ = map_abilities(bank, idx, Y)
    grid = np.linspace(-8, 8, 32001)
    for t, y in zip(theta, Y):
        assert t == pytest.approx(grid[np.argmax(bank.loglik_theta(grid, idx, y) - grid ** 2 / 2)], abs=2e-3)
