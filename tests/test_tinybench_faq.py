"""Tests for the multidimensional 2PL fit, the tinyBenchmarks port and the FAQ port.

Small synthetic matrices with known structure; the whole module runs in a few seconds.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import expit

from hspr.data.matrix import ResponseMatrix
from hspr.irt.mirt2pl import fit_mirt2pl, laplace_posterior, predictive_probs, unique_columns
from hspr.methods import get_method
from hspr.methods.faq import FAQ
from hspr.methods.tinybench import LAMBDA_GRID, TinyBench, anchor_points, tiny_estimates
from hspr.session import BudgetError


def _low_rank(n_agents=40, n_tasks=150, dim=2, seed=0):
    """Binary matrix from a known logistic factor model; returns (Y, P)."""
    rng = np.random.default_rng(seed)
    theta = rng.normal(size=(n_agents, dim))
    a = rng.normal(scale=1.2, size=(n_tasks, dim))
    b = rng.normal(scale=1.5, size=n_tasks)
    P = expit(theta @ a.T - b)
    return (rng.random(P.shape) < P).astype(int), P


def _matrix(Y, prefix="a"):
    return ResponseMatrix([f"{prefix}{i}" for i in range(Y.shape[0])], [f"t{j:03d}" for j in range(Y.shape[1])], Y)


@pytest.fixture(scope="module")
def bank():
    Y, P = _low_rank(n_agents=44, n_tasks=160, seed=1)
    Y[:, :12] = 0  # tasks nobody solved: one big cluster of identical embeddings
    return _matrix(Y[:36]), Y[36:], P


# -- mirt2pl ----------------------------------------------------------------------------------
def test_factor_fit_recovers_low_rank_structure():
    Y, P = _low_rank(n_agents=60, n_tasks=200, dim=2, seed=3)
    fit = fit_mirt2pl(Y, dim=2)
    Phat = fit.prob(fit.theta)
    assert Phat.shape == P.shape
    assert np.corrcoef(Phat.ravel(), P.ravel())[0, 1] > 0.9
    # whitened source abilities: mean 0, identity covariance (ddof 0)
    assert np.allclose(fit.theta.mean(0), 0, atol=1e-8)
    assert np.allclose(np.cov(fit.theta, rowvar=False, ddof=0), np.eye(2), atol=1e-6)


def test_identical_columns_share_parameters_and_fit_validates_input():
    Y, _ = _low_rank(n_agents=20, n_tasks=30, seed=4)
    Y = np.column_stack([Y, Y[:, :5]])
    U, inv, cnt = unique_columns(Y)
    assert np.array_equal(U[:, inv], Y) and cnt.sum() == Y.shape[1]
    fit = fit_mirt2pl(Y, dim=1)
    assert np.allclose(fit.a[30:], fit.a[:5]) and np.allclose(fit.b[30:], fit.b[:5])
    with pytest.raises(ValueError, match="dim"):
        fit_mirt2pl(Y, dim=20)
    with pytest.raises(ValueError, match="0/1"):
        fit_mirt2pl(Y * 2, dim=1)


def test_laplace_posterior_recovers_ability():
    rng = np.random.default_rng(5)
    a = rng.normal(size=(400, 2))
    b = rng.normal(size=400)
    true = np.array([0.8, -0.5])
    y = (rng.random(400) < expit(a @ true - b)).astype(float)
    mu, cov = laplace_posterior(a, b, y)
    assert np.linalg.norm(mu - true) < 0.3
    assert np.all(np.linalg.eigvalsh(cov) > 0)
    p = predictive_probs(a, b, mu, cov)
    assert np.all((p > 0) & (p < 1))
    mu0, cov0 = laplace_posterior(a[:0], b[:0], y[:0])
    assert np.allclose(mu0, 0) and np.allclose(cov0, np.eye(2))


# -- tinybench -------------------------------------------------------------------------------
def test_anchor_weights_sum_to_one_and_cover_clusters(bank):
    src, _, _ = bank
    fit = fit_mirt2pl(src.values, dim=2)
    for B in (5, 16, 40):
        anc = anchor_points(fit.embedding(), B, random_state=0)
        assert len(anc.order) == B == len(set(anc.order.tolist()))
        assert np.isclose(anc.weight.sum(), 1.0)
        assert np.isclose(anc.anchor_weights().sum(), 1.0)
        assert np.allclose(anc.weight, np.bincount(anc.label) / src.n_tasks)
        # the 12 never-solved tasks have one embedding, hence one cluster
        assert len(set(anc.label[:12].tolist())) == 1
    # budget above the number of distinct embeddings: extra anchors, still weights 1
    anc = anchor_points(fit.embedding(), src.n_tasks, random_state=0)
    assert sorted(anc.order.tolist()) == list(range(src.n_tasks))
    assert np.isclose(anc.anchor_weights().sum(), 1.0)


def test_gp_irt_with_lambda_one_is_the_anchor_weighted_mean(bank):
    src, targets, _ = bank
    fitted = TinyBench(dim=2, lam=1.0).fit(src)
    assert fitted.val_models[2] == []  # nothing to choose: no validation refits
    B = 20
    anc = fitted.anchors(B, 2)
    for row in targets[:3]:
        s = fitted.start(B)
        assert s.anchors is anc and s.lam == 1.0
        while not s.done:
            t = s.ask()
            s.tell(t, int(row[src.task_index(t)]))
        assert [src.task_index(t) for t in s.queried] == anc.order.tolist()
        expected = float(np.sum(anc.anchor_weights() * row[anc.order]))
        est = s.estimates()
        assert est["gp-irt"] == pytest.approx(expected)
        assert est["anchor"] == pytest.approx(expected)
        assert s.estimate().point == pytest.approx(expected)
        # p-IRT: observed outcomes plus predictions of the others
        e2, _ = tiny_estimates(fitted.model, anc, anc.order, row[anc.order])
        assert est["p-irt"] == pytest.approx(e2["p-irt"])


def test_tinybench_lambda_chosen_on_sources_and_deterministic(bank):
    src, targets, _ = bank
    m1 = get_method("tinybench").fit(src)
    m2 = get_method("tinybench").fit(src)
    s1, s2 = m1.start(16), m2.start(16)
    assert 0.0 <= s1.lam <= 1.0 and s1.lam in LAMBDA_GRID
    assert s1.lam == s2.lam and np.array_equal(s1.anchors.order, s2.anchors.order)
    dim, lam = m1.choice_[16]
    assert dim in (1, 2, 3) and lam == s1.lam and s1.model is m1.models[dim]
    # the choice minimises the source-validation curve over dimensions and the lambda grid
    best = min(float(c.min()) for (b, _), c in m1.lambda_curve_.items() if b == 16)
    assert float(m1.lambda_curve_[16, dim].min()) == best
    assert all(len(v) == 8 for v in m1.val_models.values())
    row = targets[0]
    while not s1.done:
        t = s1.ask()
        s1.tell(t, int(row[src.task_index(t)]))
    est = s1.estimates()
    assert est["gp-irt"] == pytest.approx(s1.lam * est["anchor"] + (1 - s1.lam) * est["p-irt"])
    assert 0 <= s1.estimate().point <= 1


def test_a_fitted_tinybench_does_not_follow_later_edits_of_its_method(bank):
    """An audit: the fitted model read its estimator through the method object, so setting
    ``method.estimator`` after ``fit`` changed the fitted model's estimates."""
    src, targets, _ = bank
    method = get_method("tinybench")
    model = method.fit(src)

    def point():
        s = model.start(16)
        while not s.done:
            t = s.ask()
            s.tell(t, int(targets[0][src.task_index(t)]))
        return s.estimate().point, s.estimates()

    before, parts = point()
    assert before == pytest.approx(parts["gp-irt"])
    method.estimator = "anchor"
    assert model.estimator == "gp-irt" and point()[0] == before


def test_tinybench_budget_errors_and_full_budget(bank):
    src, targets, _ = bank
    fitted = TinyBench(dim=2, lam=0.5).fit(src)
    for bad in (0, -1, 2.5, src.n_tasks + 1, "3", True):
        with pytest.raises(BudgetError):
            fitted.start(bad)
    s = fitted.start(5)
    with pytest.raises(BudgetError):
        s.estimate()  # no outcomes, no prior estimate
    row = targets[1]
    s = fitted.start(src.n_tasks)
    while not s.done:
        t = s.ask()
        s.tell(t, int(row[src.task_index(t)]))
    assert s.estimate().point == pytest.approx(row.mean())
    with pytest.raises(BudgetError):
        s.ask()


def test_tinybench_accepts_unasked_tells(bank):
    src, targets, _ = bank
    fitted = TinyBench(dim=2, lam=0.0).fit(src)
    row = targets[2]
    s = fitted.start(10)
    anchors = set(s.anchors.order.tolist())
    extra = [j for j in range(src.n_tasks) if j not in anchors][:3]
    for j in extra:  # told without being asked
        s.tell(src.tasks[j], int(row[j]))
    while not s.done:
        t = s.ask()
        assert src.task_index(t) in anchors
        s.tell(t, int(row[src.task_index(t)]))
    obs = np.array([src.task_index(t) for t in s.queried])
    e, _ = tiny_estimates(s.model, s.anchors, obs, row[obs])
    assert s.estimate().point == pytest.approx(e["p-irt"])
    assert len(s.queried) == 10


# -- faq ---------------------------------------------------------------------------------------
def test_faq_exact_at_full_budget_and_prior_at_zero(bank):
    src, targets, _ = bank
    fitted = FAQ(rank=2).fit(src)
    row = targets[0]
    s0 = fitted.start(0, seed=1)
    e0 = s0.estimate()
    assert e0.point == pytest.approx(fitted.prior_probs.mean())
    assert e0.lower < e0.point < e0.upper
    with pytest.raises(BudgetError):
        s0.ask()
    s = fitted.start(src.n_tasks, seed=1)
    while not s.done:
        t = s.ask()
        s.tell(t, int(row[src.task_index(t)]))
    e = s.estimate()
    assert e.point == pytest.approx(row.mean()) and e.lower == e.upper == e.point
    S, V = s.aipw_terms()
    assert V[-1] == 0 and S[-1] == pytest.approx(row.mean())  # the last draw is exact


def test_faq_budget_errors(bank):
    src, _, _ = bank
    fitted = get_method("faq").fit(src)
    for bad in (-1, 1.5, src.n_tasks + 1):
        with pytest.raises(BudgetError):
            fitted.start(bad)
    assert fitted.start(7.0).budget == 7


def test_faq_queries_without_replacement_seeded_and_interval(bank):
    src, targets, _ = bank
    fitted = FAQ(rank=2).fit(src)
    row = targets[3]

    def run(seed, B=40):
        s = fitted.start(B, seed=seed)
        while not s.done:
            t = s.ask()
            s.tell(t, int(row[src.task_index(t)]))
        return s

    a, b, c = run(0), run(0), run(1)
    assert a.queried == b.queried and a.queried != c.queried
    assert len(set(a.queried)) == 40
    e = a.estimate()
    lo_f = sum(a.outcomes) / src.n_tasks
    hi_f = lo_f + (src.n_tasks - 40) / src.n_tasks
    assert lo_f <= e.lower <= e.point <= e.upper <= hi_f
    S, V = a.aipw_terms()
    w = (1 / V) / np.sum(1 / V)
    assert e.point == pytest.approx(np.clip(w @ S, lo_f, hi_f))
    assert e.mean == pytest.approx(a.model_estimate()[0])


def test_faq_aipw_is_unbiased_for_a_fixed_row(bank):
    """Average over query seeds of the one-step AIPW term equals the true score (exactly, in
    expectation over the first draw): check with the exact expectation over the first query."""
    src, targets, _ = bank
    fitted = FAQ(rank=2).fit(src)
    row = targets[4].astype(float)
    s = fitted.start(1, seed=0)
    f = s._p
    q = s._policy(f * (1 - f), fitted.model.a)
    N = src.n_tasks
    terms = (f.sum() + (row - f) / q) / N
    assert float(q @ terms) == pytest.approx(row.mean())


def test_faq_accepts_unasked_tells_and_batches(bank):
    src, targets, _ = bank
    fitted = FAQ(rank=2).fit(src)
    row = targets[5]
    s = fitted.start(12, seed=2)
    s.tell(src.tasks[0], int(row[0]))  # not asked
    batch = s.ask_batch(4)
    assert len(set(batch)) == 4 and src.tasks[0] not in batch
    assert s.ask_batch(4) == batch  # pending asks are returned again
    for t in reversed(batch):
        s.tell(t, int(row[src.task_index(t)]))
    while not s.done:
        t = s.ask()
        s.tell(t, int(row[src.task_index(t)]))
    S, V = s.aipw_terms()
    assert len(S) == 11  # every asked task gives a term; the un-asked one does not
    e = s.estimate()
    assert 0 <= e.lower <= e.point <= e.upper <= 1
    model_only = FAQ(rank=2, estimator="model").fit(src).start(0).estimate()
    assert model_only.point == pytest.approx(fitted.prior_probs.mean())
