"""DISCO (arXiv 2510.07959) and AIPW (arXiv 2506.07673) peers: selection, estimators, intervals."""

from __future__ import annotations

import itertools
import math
import pickle

import numpy as np
import pytest
from scipy import special, stats

from hspr.data.matrix import DataError, ResponseMatrix
from hspr.methods import get_method
from hspr.methods.aipw import AIPW, aipw_estimate, ridge_task_predictions
from hspr.methods.disco import DISCO, conformal_half_width, disagreement_order, knn_weights
from hspr.session import BudgetError

from .conftest import simulate_matrix

Z90 = stats.norm.ppf(0.95)


def make_matrix(values, tasks=None) -> ResponseMatrix:
    values = np.asarray(values)
    tasks = tasks or [f"t{j:02d}" for j in range(values.shape[1])]
    return ResponseMatrix([f"a{i:02d}" for i in range(values.shape[0])], tasks, values)


def run(sess, row, tasks) -> None:
    index = {t: j for j, t in enumerate(tasks)}
    while not sess.done:
        t = sess.ask()
        sess.tell(t, int(row[index[t]]))


# ----------------------------------------------------------------------------- DISCO
def test_disco_asks_the_max_disagreement_tasks_ties_by_task_id():
    counts = [4, 3, 5, 7, 1, 4, 6, 0]  # successes among 8 sources: |2c - 8| = 0 2 2 6 6 0 4 8
    values = np.array([[1 if s < c else 0 for c in counts] for s in range(8)])
    tasks = ["z", "m", "b", "c", "d", "a", "e", "f"]  # the two 0.5 tasks tie: id "a" (col 5) before "z" (col 0)
    assert disagreement_order(values, tasks).tolist() == [5, 0, 2, 1, 6, 3, 4, 7]
    src = make_matrix(values, tasks)
    sess = get_method("disco").fit(src).start(4, seed=3)
    run(sess, np.ones(8, dtype=int), src.tasks)
    assert sess.queried == ["a", "z", "b", "m"]  # entropy 1, 1, then p = 5/8 and 3/8 (ids "b" < "m")


def test_conformal_half_width_hand_checked():
    r = np.arange(1, 21) / 100 * np.where(np.arange(20) % 2, 1, -1)  # |r| = 0.01 .. 0.20
    assert conformal_half_width(r, 0.90) == 0.19  # ceil(21 * 0.9) = 19th smallest
    assert conformal_half_width(r[:9], 0.90) == 0.09  # ceil(10 * 0.9) = 9: exactly 9, not 10
    assert conformal_half_width(r[:5], 0.90) == math.inf  # ceil(6 * 0.9) = 6 > 5


def test_knn_weights_share_ties():
    d = np.array([[1.0, 2.0, 2.0, 3.0], [0.0, 0.0, 0.0, 5.0]])
    np.testing.assert_allclose(knn_weights(d, 2), [[1, 0.5, 0.5, 0], [2 / 3, 2 / 3, 2 / 3, 0]])


def test_disco_knn_loo_matches_brute_force_and_interval_is_conformal():
    m = simulate_matrix(21, 40, seed=4)[0]
    src, row = m.rows(range(20)), m.values[20]
    fitted = DISCO(ks=(3,), rf_leaves=()).fit(src)  # kNN only: the LOO residuals are exact
    cols = fitted.order_[:8]
    X, s = src.values[:, cols].astype(float), src.values.mean(1)
    brute = []
    for i in range(20):
        d = np.abs(X - X[i]).sum(1)
        d[i] = np.inf
        w = knn_weights(d[None, :], 3)[0]
        brute.append(s[i] - w @ s / 3)
    fit = fitted.signature_map_.fit_columns(cols)
    assert fit.kind == "knn" and fit.setting == (3,)
    np.testing.assert_allclose(fit.residuals, brute, atol=1e-12)
    half = np.sort(np.abs(brute))[18]  # ceil(21 * 0.9) = 19th smallest of 20
    assert fit.half_width == half
    sess = fitted.start(8)
    run(sess, row, src.tasks)
    d = np.abs(X - row[cols]).sum(1)
    pred = knn_weights(d[None, :], 3)[0] @ s / 3
    k = row[cols].sum()
    lo, hi = k / 40, (k + 32) / 40
    e = sess.estimate()
    assert e.point == pytest.approx(np.clip(pred, lo, hi))
    assert (e.lower, e.upper) == pytest.approx((max(lo, e.point - half), min(hi, e.point + half)))


def test_disco_exact_at_full_budget_prior_at_zero_and_deterministic():
    src = simulate_matrix(30, 25, seed=2)[0]
    fitted = DISCO().fit(src)
    row = simulate_matrix(31, 25, seed=2)[0].values[30]
    full = fitted.start(25, seed=0)
    run(full, row, src.tasks)
    e = full.estimate()
    assert e.point == e.lower == e.upper == row.mean()
    zero = fitted.start(0).estimate()
    assert zero.point == pytest.approx(src.values.mean()) and zero.lower < zero.point < zero.upper
    ests = []
    for seed in (0, 0, 7):
        s = fitted.start(6, seed=seed)
        run(s, row, src.tasks)
        ests.append((s.queried, s.estimate()))
    assert ests[0] == ests[1] == ests[2]  # the seed does not change the path or the forest
    again = pickle.loads(pickle.dumps(fitted))  # the fit cache is dropped, the refit is the same
    s = again.start(6)
    run(s, row, src.tasks)
    assert s.estimate() == ests[0][1]


def test_disco_uses_unasked_outcomes_and_refuses_missing_cells():
    src = simulate_matrix(30, 25, seed=3)[0]
    sess = DISCO().fit(src).start(5)
    first = sess.ask()
    other = next(t for t in src.tasks[::-1] if t != first)
    sess.tell(other, 1)
    run(sess, np.zeros(25, dtype=int), src.tasks)
    assert other in sess.queried and len(sess.queried) == 5
    assert 1 / 25 <= sess.estimate().point <= 21 / 25  # clipped to the feasible scores
    miss = np.zeros(src.values.shape, dtype=bool)
    miss[0, 0] = True
    with pytest.raises(DataError, match="disco"):
        DISCO().fit(ResponseMatrix(src.agents, src.tasks, src.values, missing=miss))


# ----------------------------------------------------------------------------- AIPW
def strong_target_bank(n_tasks=8, seed=0):
    """Sources plus one target stronger than every source (ability above all of theirs)."""
    rng = np.random.default_rng(seed)
    theta = np.append(rng.normal(-1.0, 1.0, size=15), 3.0)
    b = rng.normal(0.0, 1.5, size=n_tasks)
    Y = (rng.random((16, n_tasks)) < special.expit(theta[:, None] - b[None, :])).astype(int)
    Y[15, np.argmax(b)] = 0  # keep the target's score below 1
    src = make_matrix(Y[:15])
    assert Y[15].mean() > Y[:15].mean(1).max()
    return src, Y[15]


def test_aipw_is_exactly_unbiased_over_every_ordered_sample():
    """E over all ordered samples of 3 of 8 tasks (the random order the session draws) = the truth,
    for a target stronger than every source, whatever the ridge predicts."""
    src, y = strong_target_bank()
    F, prior = src.values.T.astype(float), src.values.mean(0)
    none = np.zeros(0, dtype=int)
    for n_folds, alphas in ((3, (10.0,)), (2, (0.5, 50.0))):
        ests = [aipw_estimate(F, prior, np.array(p), y[list(p)], none, none, n_folds, alphas)[0]
                for p in itertools.permutations(range(8), 3)]
        assert np.mean(ests) == pytest.approx(y.mean(), abs=1e-12)
        assert np.std(ests) > 0.01  # the estimates do vary; it is the average that is exact


def test_aipw_session_average_over_seeds_is_the_truth_for_a_strong_target():
    m = simulate_matrix(41, 120, seed=7)[0]
    order = np.argsort(m.values.mean(1))
    src, y = m.rows(order[:-1]), m.values[order[-1]]  # the target is the strongest agent
    fitted = AIPW().fit(src)
    ests = []
    for seed in range(300):
        s = fitted.start(12, seed=seed)
        run(s, y, src.tasks)
        ests.append(s.estimate().mean)
    ests = np.asarray(ests)
    se = ests.std(ddof=1) / np.sqrt(len(ests))
    assert abs(ests.mean() - y.mean()) < 3 * se + 1e-3


def test_aipw_exact_at_full_budget_and_interval_formula():
    src, y = strong_target_bank(n_tasks=30, seed=1)
    fitted = AIPW(n_folds=4).fit(src)
    full = fitted.start(30, seed=5)
    run(full, y, src.tasks)
    e = full.estimate()
    assert e.point == e.lower == e.upper == e.mean == y.mean()
    s = fitted.start(10, seed=5)
    run(s, y, src.tasks)
    cols = np.array([src.task_index(t) for t in s.queried])
    est, var, resid = aipw_estimate(fitted.features_, fitted.pass_rate_, cols, y[cols], np.zeros(0, int),
                                    np.zeros(0), 4, (10.0,))
    s2 = resid.var(ddof=1)
    if np.ptp(y[cols]) == 0:  # 10 agreeing outcomes (this strong agent resolved all): the Agresti-Coull floor
        p = (y[cols].sum() + 2) / 14
        s2 = max(s2, p * (1 - p))
    assert var == pytest.approx((1 - 10 / 30) * s2 / 10)
    e = s.estimate()
    assert e.mean == est
    assert (e.lower, e.upper) == pytest.approx((max(e.point - Z90 * np.sqrt(var), y[cols].sum() / 30),
                                                min(e.point + Z90 * np.sqrt(var), (y[cols].sum() + 20) / 30)))


def test_aipw_small_sample_variance_floor():
    """Fewer than 10 sampled outcomes: the variance is at least the Agresti-Coull Bernoulli one."""
    src, _ = strong_target_bank(n_tasks=30, seed=1)
    fitted = AIPW(n_folds=4).fit(src)
    cols = np.arange(4)
    est, var, resid = aipw_estimate(fitted.features_, fitted.pass_rate_, cols, np.ones(4), np.zeros(0, int),
                                    np.zeros(0), 4, (10.0,))
    p = 6 / 8
    assert var == pytest.approx((1 - 4 / 30) * max(resid.var(ddof=1), p * (1 - p)) / 4)
    assert var >= (1 - 4 / 30) * p * (1 - p) / 4 - 1e-15


def test_aipw_ridge_penalty_choice_is_scikit_learns_leave_one_out():
    # several penalties: the one of smallest leave-one-task-out error, as RidgeCV's efficient LOO chooses
    from sklearn.linear_model import RidgeCV
    rng = np.random.default_rng(3)
    F = (rng.random((120, 30)) < rng.random(120)[:, None]).astype(float)
    alphas = (0.1, 1.0, 10.0, 100.0)
    chosen = set()
    for m in (8, 20, 45, 90):
        train = rng.choice(120, m, replace=False)
        y = (rng.random(m) < F[train].mean(1)).astype(float)
        ref = RidgeCV(alphas=alphas).fit(F[train], y)
        chosen.add(ref.alpha_)
        np.testing.assert_allclose(ridge_task_predictions(F, train, y, alphas), np.clip(ref.predict(F), 0, 1), atol=1e-10)
    assert len(chosen) > 1  # the comparison covers more than one chosen penalty


def test_aipw_ridge_matches_closed_form_and_the_sample_is_uniform_raw():
    rng = np.random.default_rng(0)
    F = (rng.random((50, 12)) < 0.5).astype(float)
    train = np.arange(0, 50, 3)
    yt = (rng.random(train.size) < 0.5).astype(float)
    Xc = F[train] - F[train].mean(0)
    w = np.linalg.solve(Xc.T @ Xc + 10 * np.eye(12), Xc.T @ (yt - yt.mean()))  # primal ridge, free intercept
    want = np.clip(yt.mean() + (F - F[train].mean(0)) @ w, 0, 1)
    np.testing.assert_allclose(ridge_task_predictions(F, train, yt, (10.0,)), want, atol=1e-10)
    src = simulate_matrix(20, 40, seed=1)[0]
    a, u = get_method("aipw").fit(src).start(7, seed=4), get_method("uniform").fit(src).start(7, seed=4)
    assert a.ask_batch(7) == u.ask_batch(7)


def test_aipw_unasked_tells_are_exact_and_determinism():
    src, y = strong_target_bank(n_tasks=30, seed=2)
    fitted = AIPW(n_folds=3).fit(src)
    sess = fitted.start(6, seed=1)
    planned = sess.ask_batch(6)
    extra = next(t for t in src.tasks if t not in planned)
    sess.tell(extra, int(y[src.task_index(extra)]))  # outside the random sample: exact, trains every fold
    for t in planned[:5]:
        sess.tell(t, int(y[src.task_index(t)]))
    cols = np.array([src.task_index(t) for t in planned[:5]])
    k = np.array([src.task_index(extra)])
    est = aipw_estimate(fitted.features_, fitted.pass_rate_, cols, y[cols], k, y[k], 3, (10.0,))[0]
    assert sess.estimate().mean == est
    twin = fitted.start(6, seed=1)
    run(twin, y, src.tasks)
    again = fitted.start(6, seed=1)
    run(again, y, src.tasks)
    assert twin.queried == again.queried and twin.estimate() == again.estimate()
    with pytest.raises(BudgetError):
        fitted.start(0).estimate()


def test_aipw_settings_and_missing_cells():
    with pytest.raises(ValueError, match="n_folds"):
        AIPW(n_folds=1)
    with pytest.raises(ValueError, match="alphas"):
        AIPW(alphas=(0.0,))
    assert AIPW.from_params(AIPW(n_folds=3, alphas=(1, 10)).get_params()).alphas == (1.0, 10.0)
    src = simulate_matrix(10, 12, seed=1)[0]
    miss = np.zeros(src.values.shape, dtype=bool)
    miss[2, 3] = True
    with pytest.raises(DataError, match="aipw"):
        AIPW().fit(ResponseMatrix(src.agents, src.tasks, src.values, missing=miss))
