"""4PL item bank: parameter recovery, rescaling, Fisher information, gradient, cache."""

import pickle

import numpy as np
import pytest
from scipy.optimize import approx_fprime
from scipy.stats import spearmanr

from hspr.data.matrix import ResponseMatrix
from hspr.irt.fourpl import (
    FourPLBank,
    FourPLSettings,
    _objective,
    fisher_info_4pl,
    fit_4pl,
    fit_4pl_cache_clear,
    fit_4pl_cache_info,
    fit_4pl_cached,
    map_abilities,
    prob_4pl,
)


def simulate(n_agents=200, n_items=40, seed=0):
    rng = np.random.default_rng(seed)
    theta = rng.normal(size=n_agents)
    a = rng.lognormal(0.2, 0.5, n_items)
    b = rng.normal(0, 1.2, n_items)
    c = rng.uniform(0.0, 0.1, n_items)
    d = rng.uniform(0.9, 1.0, n_items)
    P = prob_4pl(theta, a, b, c, d)
    Y = (rng.random(P.shape) < P).astype(int)
    M = ResponseMatrix([f"s{i}" for i in range(n_agents)], [f"t{j}" for j in range(n_items)], Y)
    return M, theta, a, b, c, d


@pytest.fixture(scope="module")
def simulated():
    M, theta, a, b, c, d = simulate()
    return M, theta, a, b, c, d, fit_4pl(M)


def test_recovers_difficulty_and_ability(simulated):
    M, theta, a, b, c, d, bank = simulated
    # tolerance: Pearson correlation of fitted vs true difficulty > 0.9 and abilities > 0.9;
    # discrimination is weakly identified with 200 agents (one item can run off), so its
    # Spearman rank correlation > 0.5
    assert np.corrcoef(bank.b, b)[0, 1] > 0.9
    assert np.corrcoef(bank.theta, theta)[0, 1] > 0.9
    assert spearmanr(bank.a, a).statistic > 0.5
    assert np.all((bank.c > 0) & (bank.c < bank.d) & (bank.d < 1))
    # predicted pass rates match observed pass rates within 0.05 on average
    assert np.abs(bank.prob(bank.theta).mean(0) - M.values.mean(0)).mean() < 0.05


def test_source_abilities_rescaled_exactly(simulated):
    bank = simulated[-1]
    assert abs(bank.theta.mean()) < 1e-12
    assert abs(bank.theta.std() - 1.0) < 1e-12


def test_rescaling_keeps_probabilities():
    M, *_ = simulate(60, 15, seed=5)
    raw = fit_4pl(M, FourPLSettings(rescale=False))
    bank = fit_4pl(M)
    np.testing.assert_allclose(raw.prob(raw.theta), bank.prob(bank.theta), atol=1e-10)


def test_degenerate_columns_stay_finite():
    rng = np.random.default_rng(1)
    Y = (rng.random((12, 9)) < 0.5).astype(int)
    Y[:, 0] = 0  # nobody solved
    Y[:, 1] = 1  # everybody solved
    Y[:, 2] = 0  # a duplicate of column 0 shares its parameters
    M = ResponseMatrix([f"s{i}" for i in range(12)], [f"t{j}" for j in range(9)], Y)
    bank = fit_4pl(M)
    for arr in (bank.a, bank.b, bank.c, bank.d, bank.theta):
        assert np.all(np.isfinite(arr))
    p = bank.prob(bank.theta)
    assert p[:, 0].max() < 0.1 and p[:, 1].min() > 0.9
    assert bank.b[0] == bank.b[2]


def test_missing_cells_are_ignored():
    """The fit is a stationary point of the objective with weight 0 on the missing cells, whatever lies under
    them, and not of the objective that reads them as 0 or as 1 (ResponseMatrix stores 0 under a missing cell,
    so comparing fits after flipping what lies under it would test nothing)."""
    from hspr.irt.fourpl import _logit, _objective

    M, *_ = simulate(30, 8, seed=3)
    miss = np.zeros(M.shape, dtype=bool)
    miss[0, :5] = True
    st = FourPLSettings(rescale=False)  # the objective's own scale
    bank = fit_4pl(ResponseMatrix(M.agents, M.tasks, M.values, miss), st)
    m, n = M.shape
    x = np.concatenate([bank.theta, bank.b, np.log(bank.a), _logit(bank.c / st.c_max),
                        _logit((1 - bank.d) / st.slip_max)])
    for fill in (0, 1):
        Y = M.values.astype(float)
        Y[miss] = fill
        grad_left_out = _objective(x, Y, (~miss).astype(float), m, n, st)[1]
        grad_read = _objective(x, Y, np.ones((m, n)), m, n, st)[1]
        assert np.abs(grad_left_out).max() < 0.02, fill  # 0.005 measured: the optimiser's tolerance
        assert np.abs(grad_read).max() > 1.0, fill  # 13.8 / 3.0 measured


def test_fisher_information_closed_form_and_finite_difference():
    rng = np.random.default_rng(2)
    a, b = rng.lognormal(0, 0.5, 7), rng.normal(size=7)
    c, d = rng.uniform(0, 0.2, 7), rng.uniform(0.8, 1, 7)
    for th in (-2.0, 0.3, 1.7):
        p = prob_4pl(th, a, b, c, d)
        closed = a ** 2 * (p - c) ** 2 * (d - p) ** 2 / ((d - c) ** 2 * p * (1 - p))  # PTA-IRT Eq. 4
        h = 1e-6
        dp = (prob_4pl(th + h, a, b, c, d) - prob_4pl(th - h, a, b, c, d)) / (2 * h)
        np.testing.assert_allclose(fisher_info_4pl(th, a, b, c, d), closed, rtol=1e-9)
        np.testing.assert_allclose(fisher_info_4pl(th, a, b, c, d), dp ** 2 / (p * (1 - p)), rtol=1e-6)
    grid = np.linspace(-3, 3, 5)
    assert fisher_info_4pl(grid, a, b, c, d).shape == (5, 7)


def test_objective_gradient_matches_finite_differences():
    rng = np.random.default_rng(0)
    m, n = 6, 8
    Y = (rng.random((m, n)) < 0.4).astype(float)
    W = np.ones_like(Y)
    W[0, 0] = 0
    k = rng.integers(1, 4, n).astype(float)
    st = FourPLSettings()
    x = rng.normal(size=m + 4 * n)
    f = lambda z: _objective(z, Y, W * k, m, n, st, k)[0]  # noqa: E731
    g = _objective(x, Y, W * k, m, n, st, k)[1]
    np.testing.assert_allclose(approx_fprime(x, f, 1e-6), g, atol=1e-4)


def test_bank_pickles_and_is_read_only(simulated):
    bank = simulated[-1]
    back = pickle.loads(pickle.dumps(bank))
    assert isinstance(back, FourPLBank)
    np.testing.assert_array_equal(back.b, bank.b)
    with pytest.raises(ValueError, match="read-only"):
        bank.b[0] = 1.0


def test_cached_fit_reuses_bank_per_source_digest():
    M, *_ = simulate(20, 8, seed=4)
    fit_4pl_cache_clear()
    b1 = fit_4pl_cached(M)
    same = ResponseMatrix(M.agents, M.tasks, M.values.copy())  # equal content, new object
    b2 = fit_4pl_cached(same)
    assert b1 is b2
    info = fit_4pl_cache_info()
    assert info["hits"] == 1 and info["misses"] == 1
    b3 = fit_4pl_cached(M, FourPLSettings(prior_b_sd=2.0))
    assert b3 is not b1


def test_map_abilities_track_source_abilities(simulated):
    M, *_, bank = simulated
    idx = np.arange(0, 40, 2)
    th, prec = map_abilities(bank, idx, M.values[:, idx])
    assert th.shape == prec.shape == (M.n_agents,)
    assert np.corrcoef(th, bank.theta)[0, 1] > 0.85
    assert np.all(prec >= 1.0)
    th0, prec0 = map_abilities(bank, np.zeros(0, int), np.zeros((3, 0)))
    np.testing.assert_array_equal(th0, 0.0)
    np.testing.assert_array_equal(prec0, 1.0)


def test_settings_validation():
    with pytest.raises(ValueError, match="c_max \\+ slip_max <= 1, got 0.7, 0.5"):
        FourPLSettings(c_max=0.7, slip_max=0.5)
    with pytest.raises(ValueError, match=r"c_prior Beta parameters must be > 0, got \(0.0, 1.0\)"):
        FourPLSettings(c_prior=(0.0, 1.0))
    with pytest.raises(ValueError, match="prior_b_sd must be > 0, got 0"):
        FourPLSettings(prior_b_sd=0)
    with pytest.raises(ValueError, match="prior_log_a_sd must be > 0, got nan"):
        FourPLSettings(prior_log_a_sd=float("nan"))
