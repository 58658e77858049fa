"""Fixed query orders shared by several methods (numpy only: HSPR's ablations use them too,
and a live HSPR command does not import the regressors' modules).

- :func:`uniform_order`: a simple random sample of B tasks, the query set of uniform raw, RSL,
  AIPW and HSPR's ``acquisition="uniform"`` ablation (HSPR_SPEC sections 8-9).
- :func:`midrange_order`: tasks by closeness of the source pass rate to one half, the path of
  Mid-Range and HSPR's ``acquisition="midrange"`` ablation (HSPR_SPEC section 8).
"""

from __future__ import annotations

import numpy as np


def uniform_order(n_tasks: int, budget: int, seed: int) -> np.ndarray:
    """Uniform raw's query order: ``default_rng(seed).choice(N, B, replace=False)``, then the
    other columns ascending (asked only if the caller told outcomes outside the chosen set).

    Returns
    -------
    ndarray of int, shape (n_tasks,)

    Raises
    ------
    ValueError
        From numpy, for ``budget > n_tasks`` (callers check the budget first: :func:`hspr.session.check_budget`).
    """
    chosen = np.random.default_rng(int(seed)).choice(n_tasks, budget, replace=False)
    rest = np.setdiff1d(np.arange(n_tasks), chosen)
    return np.concatenate([chosen, rest]).astype(int)


def midrange_order(pass_rate) -> np.ndarray:
    """Mid-Range's query order: tasks by ``|pass rate - 0.5|``, ties in column order.

    Parameters
    ----------
    pass_rate : ndarray of float, shape (n_tasks,), 0-1 scale

    Returns
    -------
    ndarray of int, shape (n_tasks,)
        ``np.argsort(np.abs(pass_rate - 0.5), kind='stable')``.
    """
    return np.argsort(np.abs(np.asarray(pass_rate, dtype=float) - 0.5), kind="stable").astype(int)
