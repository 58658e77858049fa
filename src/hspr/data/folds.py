"""Deterministic 4-fold target splits of a bank's agents (HSPR_SPEC section 7 / 9).

Rule: sort agent names, shuffle with ``numpy.random.default_rng(0)``, ``np.array_split`` into 4.
Each agent is a target exactly once; a fold's sources are the agents of the other folds.
The splits of the bundled banks are written to ``bundled/folds.json`` so results stay
comparable across versions; :func:`make_folds` re-derives them for any matrix.
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import Sequence

import numpy as np

N_FOLDS = 4


def make_folds(agents: Sequence[str], n_folds: int = N_FOLDS, seed: int = 0) -> list[list[str]]:
    """Split agent ids into ``n_folds`` disjoint target folds (lists of agent ids).

    Raises ValueError if there are fewer agents than folds + 1 (each fold needs sources).
    """
    names = sorted(agents)
    if len(names) < n_folds + 1:
        raise ValueError(f"{len(names)} agents are too few for {n_folds} target folds (at least {n_folds + 1} are "
                         "needed); add agents, or evaluate new agents against all of them with --targets")
    order = np.array(names, dtype=object)
    np.random.default_rng(seed).shuffle(order)
    return [list(map(str, part)) for part in np.array_split(order, n_folds)]


@lru_cache(maxsize=None)
def _bundled() -> dict:
    path = resources.files("hspr").joinpath("data", "bundled", "folds.json")
    return json.loads(path.read_text(encoding="utf-8"))


def bank_folds(name: str) -> list[list[str]]:
    """The shipped target folds of a bundled bank (list of 4 lists of agent ids)."""
    return [list(f) for f in _bundled()[name]]


def fold_indices(agents: Sequence[str], folds: list[list[str]]) -> list[np.ndarray]:
    """Row indices (into ``agents``) of each fold's targets. Raises KeyError for unknown ids."""
    pos = {a: i for i, a in enumerate(agents)}
    out = []
    for f in folds:
        missing = [a for a in f if a not in pos]
        if missing:
            raise KeyError(f"fold agents not in the matrix: {missing[:3]}")
        out.append(np.array([pos[a] for a in f], dtype=int))
    return out
