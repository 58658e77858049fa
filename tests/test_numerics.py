"""hspr.numerics: the session path's logistic and normal functions, against scipy.special."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from scipy import special

from hspr import numerics
from hspr.data.build import write_wide_csv

from .conftest import simulate_matrix


def test_ndtr_within_1e12_of_scipy_everywhere():
    x = np.concatenate([np.linspace(-40, 40, 400_001), np.linspace(-8.6, 8.6, 100_003),
                        [-np.inf, np.inf, 0.0, -8.5, 8.5, 1e300, -1e300]])
    err = np.abs(numerics.ndtr(x) - special.ndtr(x))
    assert err.max() < 1e-12
    # the grid points themselves carry math.erfc's value
    assert numerics.ndtr(np.array([0.0]))[0] == 0.5
    # symmetry and monotonicity of the interpolant
    u = np.linspace(0, 9, 20_001)
    assert np.abs(numerics.ndtr(u) + numerics.ndtr(-u) - 1).max() < 1e-12
    # non-decreasing up to rounding next to 1 (a few ulp of 1, 1.1e-16 each)
    assert np.diff(numerics.ndtr(np.linspace(-9, 9, 200_001))).min() >= -5e-16


def test_ndtr_keeps_shape_and_nan():
    x = np.array([[np.nan, 1.0], [-1.0, 2.0]])
    out = numerics.ndtr(x)
    assert out.shape == (2, 2) and np.isnan(out[0, 0])
    np.testing.assert_allclose(out[1], special.ndtr(x[1]), atol=1e-12)


def test_expit_and_log_expit_equal_scipy_in_float64():
    x = np.linspace(-800, 800, 160_001)
    # numpy's vectorised exp and the C library's differ by a few ulp, by CPU (SIMD path): 2 ulp
    # on one machine, 3 at x = -37.03 on an AMD EPYC with numpy 2.4 and scipy 1.17
    np.testing.assert_array_max_ulp(numerics.expit(x), special.expit(x), maxulp=4)
    assert numerics.expit(-800.0) == 0.0 and numerics.expit(800.0) == 1.0
    assert isinstance(float(numerics.expit(0.25)), float)  # 0-d input, no out
    np.testing.assert_allclose(numerics.log_expit(x), special.log_expit(x), rtol=4e-16, atol=0)


def test_expit_in_place_keeps_float32():
    x = np.linspace(-100, 100, 20_001).astype(np.float32)
    ref = special.expit(x)
    buf = x.copy()
    out = numerics.expit(buf, out=buf)
    assert out is buf and buf.dtype == np.float32
    # numpy's vectorised float32 exp and the C library's expf differ by a few ulp
    np.testing.assert_array_max_ulp(buf, ref, maxulp=4)


def test_rates_equal_scipy_expit_within_a_few_ulp():
    """posterior.rates: p and q from one exponential, each within 4 ulp of scipy's expit(eta) and
    expit(-eta) (clipped to [1e-12, 1 - 1e-12]), finite for any finite eta, and q never 1 - p."""
    from hspr.methods.hspr.posterior import rates

    eta = np.concatenate([np.linspace(-40, 40, 40_000), [-1e308, -800.0, -700.0, -0.0, 0.0, 700.0, 800.0, 1e308]])
    p, q = rates(eta.reshape(8, -1))
    p, q = p.ravel(), q.ravel()
    want_p = np.clip(special.expit(eta), 1e-12, 1 - 1e-12)
    want_q = np.clip(special.expit(-eta), 1e-12, 1 - 1e-12)
    assert np.all(np.isfinite(p)) and np.all(np.isfinite(q))
    assert np.max(np.abs(p - want_p) / want_p) <= 4 * np.finfo(float).eps
    assert np.max(np.abs(q - want_q) / want_q) <= 4 * np.finfo(float).eps
    # where p is near 1, q keeps its relative precision (1 - p would be 0 or off by orders)
    assert q[np.argmin(np.abs(eta - 30.0))] == pytest.approx(special.expit(-30.0), rel=1e-15)


def test_rates_in_float32_keep_dtype_and_relative_precision():
    """posterior.rates on float32 logits (the refresh's observed groups): float32 out, finite
    for any finite eta (clipped at +-80, where float32 exp cannot overflow), p and q each within
    a few float32 ulp of scipy's float64 expit(+-eta) after the [1e-12, 1 - 1e-12] clip (whose
    upper end is 1 in float32), and q keeps its relative precision where p rounds to 1."""
    from hspr.methods.hspr.posterior import rates

    eta = np.concatenate([np.linspace(-40, 40, 40_001), [-3e38, -100.0, -80.0, 80.0, 100.0, 3e38]]).astype(np.float32)
    p, q = rates(eta)
    assert p.dtype == q.dtype == np.float32
    assert np.all(np.isfinite(p)) and np.all(np.isfinite(q))
    e64 = eta.astype(float)
    want_p = np.clip(special.expit(e64), 1e-12, 1.0)
    want_q = np.clip(special.expit(-e64), 1e-12, 1.0)
    eps = float(np.finfo(np.float32).eps)  # a Python float: pytest 9.2 refuses a float32 tolerance
    assert np.max(np.abs(p - want_p) / want_p) <= 4 * eps
    assert np.max(np.abs(q - want_q) / want_q) <= 4 * eps
    at20 = np.argmin(np.abs(e64 - 20.0))
    assert p[at20] == 1.0 and q[at20] == pytest.approx(special.expit(-e64[at20]), rel=4 * eps)


def test_ndtri_matches_scipy():
    p = np.array([1e-10, 0.05, 0.5, 0.9, 0.95, 1 - 1e-10])
    np.testing.assert_allclose([numerics.ndtri(v) for v in p], special.ndtri(p), rtol=1e-14)


ROBUST_FAST = {"config": {"n_nodes": 256, "n_draws": 1024},
               "shift": {"max_held_out": 6, "n_nodes": 256, "n_draws": 1024, "blend_weights": [1.0],
                         "min_held_out": 2}}


@pytest.mark.parametrize("method, config", [("hspr", {"n_nodes": 256, "n_draws": 1024}),
                                            ("hspr_robust", ROBUST_FAST)])
def test_restored_live_session_does_not_import_scipy(tmp_path, method, config):
    """The point of the module: next / record / status on a cached fit never import scipy
    (hspr_robust's blend weight 1 keeps its 4PL p-IRT model in the fit)."""
    m, _ = simulate_matrix(20, 40, seed=3, rank=1)
    write_wide_csv(m.rows(np.arange(1, 20)), tmp_path / "bank.csv")
    env_cache = str(tmp_path / "cache")
    script = f"""
import json, os, sys
os.environ["HSPR_CACHE_DIR"] = {env_cache!r}
from hspr.live import LiveSession
path = {str(tmp_path / 's.hspr')!r}
if sys.argv[1] == "start":
    s = LiveSession.create(path, 6, matrix={str(tmp_path / 'bank.csv')!r}, method={method!r}, config={config!r})
    for t in s.next(2):
        s.record(t, 1)
else:
    s = LiveSession.open(path)
    s.record(s.next(1)[0], 0)
    s.status()
print(json.dumps(sorted(k for k in sys.modules if k == "scipy" or k.startswith("scipy."))))
"""
    run = [sys.executable, "-c", script]
    first = subprocess.run([*run, "start"], capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr
    assert "scipy" in json.loads(first.stdout)  # the source fit needs scipy
    again = subprocess.run([*run, "resume"], capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout) == []


@pytest.mark.parametrize("n", [1, 7])
def test_ndtr_broadcasts_like_scipy(n):
    x = np.random.default_rng(n).normal(scale=4, size=(n, 5))
    assert numerics.ndtr(x).shape == x.shape
