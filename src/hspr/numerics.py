"""Elementwise logistic and normal functions in plain numpy, for the session path.

A restored session (``hspr live next / record / status``) evaluates only these four
functions. Importing ``scipy.special`` for them cost 0.33-0.37 s of every live command on this
project's machine (scipy 1.17 clones the numpy namespace on import, which loads numpy.f2py and
numpy.testing), more than the command's own work; source fits and calibrations, which need
the rest of scipy, import it where they run.

Agreement with scipy (asserted in ``tests/test_numerics.py``): :func:`expit` and
:func:`log_expit` use the same formulas as ``scipy.special`` (within a few ulp); :func:`ndtr`
is within 1e-12 of ``scipy.special.ndtr`` everywhere; :func:`ndtri` is the standard library's
``statistics.NormalDist.inv_cdf`` (scalar only).
"""

from __future__ import annotations

import math
from functools import cache

import numpy as np

#: the standard normal's 95 % quantile, ``scipy.stats.norm.ppf(0.95)``: a 90 % normal interval's half-width
#: in standard deviations (a literal, so a restored session need not import scipy)
Z90 = 1.6448536269514722

#: grid step and half-range of the normal CDF table (Phi(-8.5) = 9.5e-18, below float64's resolution near 1)
_STEP = 1.0 / 256
_LIMIT = 8.5


def expit(x, out: np.ndarray | None = None) -> np.ndarray:
    """Logistic sigmoid ``1 / (1 + exp(-x))`` elementwise, in ``x``'s float dtype; ``out`` may be ``x`` (in place).

    Large negative ``x`` gives 0 (``exp`` overflows to inf without a warning), as ``scipy.special.expit``.
    """
    x = np.asarray(x)
    if not np.issubdtype(x.dtype, np.floating):
        x = x.astype(float)
    if x.ndim == 0 and out is None:
        with np.errstate(over="ignore"):
            return 1 / (1 + np.exp(-x))
    out = np.negative(x, out=out)  # one buffer, updated in place: no temporaries on (nodes x groups) arrays
    with np.errstate(over="ignore"):
        np.exp(out, out=out)
    out += 1
    return np.reciprocal(out, out=out)


def log_expit(x) -> np.ndarray:
    """``log(expit(x)) = -log(1 + exp(-x))`` elementwise, accurate for large ``|x|`` (``numpy.logaddexp``)."""
    return -np.logaddexp(0.0, -np.asarray(x, dtype=float))


@cache
def _normal_table() -> tuple[np.ndarray, np.ndarray]:
    """Phi and phi times the step on the grid -LIMIT, -LIMIT + STEP, ..., LIMIT (4,353 points)."""
    grid = np.linspace(-_LIMIT, _LIMIT, int(round(2 * _LIMIT / _STEP)) + 1)
    cdf = np.array([0.5 * math.erfc(-v / math.sqrt(2.0)) for v in grid])
    pdf = np.exp(-0.5 * grid * grid) / math.sqrt(2.0 * math.pi) * _STEP
    for arr in (cdf, pdf):  # shared by every caller through the cache: read-only (an audit)
        arr.setflags(write=False)
    return cdf, pdf


def ndtr(x) -> np.ndarray:
    """Standard normal CDF Phi(x) elementwise, float64, absolute error below 1e-12.

    Cubic Hermite interpolation of Phi (``math.erfc``) and its derivative phi on a grid of
    step 1/256 over [-8.5, 8.5] (error bound h^4 / 384 * max|Phi''''| = 3.4e-13); 0 below and
    1 above the grid, where Phi is within 1e-17 of them; NaN stays NaN.
    """
    x = np.asarray(x, dtype=float)
    cdf, slope = _normal_table()
    s = (np.clip(x, -_LIMIT, _LIMIT) + _LIMIT) / _STEP
    k = np.minimum(np.floor(s), len(cdf) - 2)
    t = s - k
    k = np.nan_to_num(k).astype(np.intp)
    t2, u = t * t, 1 - t
    u2 = u * u
    f = ((1 + 2 * t) * u2 * cdf[k] + t * u2 * slope[k]
         + t2 * (3 - 2 * t) * cdf[k + 1] - t2 * u * slope[k + 1])
    return np.where(np.isnan(x), np.nan, f)


def ndtri(p: float) -> float:
    """Standard normal quantile Phi^-1(p) of one probability in (0, 1) (``statistics.NormalDist``).

    Raises
    ------
    statistics.StatisticsError
        When ``p`` is not in (0, 1).
    """
    from statistics import NormalDist  # here only: its import (fractions, random) costs every command 5 ms

    return NormalDist().inv_cdf(float(p))
