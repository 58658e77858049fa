"""Deterministic 4-fold target splits of a bank's agents (HSPR_SPEC section 7 / 9).

Rule: sort agent names, shuffle with ``numpy.random.default_rng(0)``, ``np.array_split`` into 4.
Each agent is a target exactly once; a fold's sources are the agents of the other folds.
The splits of the bundled banks are written to ``bundled/folds.json`` so results stay
comparable across versions; :func:`make_folds` re-derives them for any matrix.
"""

from __future__ import annotations

import json
import numbers
import re
from collections.abc import Mapping, Sequence
from functools import cache
from importlib import resources
from types import MappingProxyType

import numpy as np

from ..errors import HsprError, UnknownIdError, shorten
from ..params import is_number

N_FOLDS = 4
#: agent ids that start with a submission date, as on the SWE-bench leaderboard (YYYYMMDD_...), or with the
#: ISO form YYYY-MM-DD_ (a new-user trial named its own agents so and was refused)
DATE_PREFIX = re.compile(r"^([0-9]{8}|[0-9]{4}-[0-9]{2}-[0-9]{2})_")  # ASCII digits: \d took '２０２００１０１' as a date


def _day(agent: str) -> str | None:
    """The date that starts ``agent`` as YYYYMMDD (either form), or None when it starts with none."""
    m = DATE_PREFIX.match(agent)
    return None if m is None else m.group(1).replace("-", "")


def make_folds(agents: Sequence[str], n_folds: int = N_FOLDS, seed: int = 0) -> list[list[str]]:
    """Split agent ids into ``n_folds`` disjoint target folds (HSPR_SPEC section 7).

    Parameters
    ----------
    agents : sequence of str, the agent ids (n_agents,); their order does not matter (they are sorted)
    n_folds : int, number of folds (default 4)
    seed : int, seed of the shuffle (``numpy.random.default_rng(seed)``; default 0, the shipped folds)

    Returns
    -------
    list of ``n_folds`` lists of agent ids, sizes as ``numpy.array_split`` gives (differing by at most 1)

    Raises
    ------
    HsprError
        (a ValueError) With fewer agents than folds + 1 (each fold needs sources); for ``agents`` that
        are not a sequence of distinct string ids (a ResponseMatrix: pass its ``.agents``), ``n_folds``
        that is not a whole number >= 2, or ``seed`` that is not a whole number >= 0 (None would give
        other folds on every call).
    """
    if isinstance(agents, (str, bytes)) or not hasattr(agents, "__iter__"):  # an API trial: letters became folds
        what = "a ResponseMatrix: pass its .agents" if hasattr(agents, "agents") else f"a {type(agents).__name__}"
        raise HsprError(f"make_folds takes the agent ids (a list of str), got {what}")
    names = sorted(map(str, agents))
    if len(set(names)) != len(names):
        twice = sorted({a for a in names if names.count(a) > 1})
        raise HsprError(f"agent id(s) {', '.join(map(repr, twice[:5]))} given twice; each agent belongs to one fold")
    for name, value, least in (("n_folds", n_folds, 2), ("seed", seed, 0)):
        if not is_number(value, numbers.Integral) or value < least:
            raise HsprError(f"{name} must be a whole number >= {least}, got {value!r}"
                            + ("; the shipped folds use seed 0" if name == "seed" else ""))
    if len(names) < n_folds + 1:
        raise HsprError(f"{len(names)} agents are too few for {n_folds} target folds (at least {n_folds + 1} are "
                        "needed); add agents, or score new agents against all of them (hspr replay --targets, hspr live)")
    order = np.array(names, dtype=object)
    np.random.default_rng(seed).shuffle(order)
    return [list(map(str, part)) for part in np.array_split(order, n_folds)]


@cache
def _bundled() -> Mapping[str, tuple[tuple[str, ...], ...]]:
    """The shipped folds, read once: read-only (the cached object is shared by every caller)."""
    path = resources.files("hspr").joinpath("data", "bundled", "folds.json")
    raw = json.loads(path.read_text(encoding="utf-8"))
    return MappingProxyType({bank: tuple(map(tuple, folds)) for bank, folds in raw.items()})


def bank_folds(name: str) -> list[list[str]]:
    """The shipped target folds of a bundled bank (list of 4 lists of agent ids).

    Raises
    ------
    UnknownIdError
        (a KeyError) For a name that is not a bundled bank.
    """
    folds = _bundled()
    if name not in folds:
        raise UnknownIdError(f"no shipped folds for bank {name!r}; bundled banks: {', '.join(folds)} (for another "
                             "matrix, make_folds(matrix.agents) derives them by the same rule)")
    return [list(f) for f in folds[name]]


def fold_indices(agents: Sequence[str], folds: list[list[str]]) -> list[np.ndarray]:
    """Row indices (into ``agents``) of each fold's targets.

    Raises
    ------
    UnknownIdError
        (a KeyError) naming fold agents that are not in ``agents``.
    HsprError
        For folds that are not a list of lists (or arrays) of agent ids (a fold given as one
        string would be split into its characters), that name an agent twice, or a fold that is
        empty or holds every agent (no sources).
    """
    def listlike(x) -> bool:  # numpy arrays too (np.array_split's folds; a hostile trial), not a 0-d one
        return not isinstance(x, (str, bytes)) and (isinstance(x, Sequence) or
                                                     isinstance(x, np.ndarray) and x.ndim >= 1)

    if not listlike(folds) or not len(folds) or not all(listlike(f) for f in folds):
        raise HsprError(f"folds must be a non-empty list of lists of agent ids (one list per fold), got "
                        f"{shorten(repr(folds), 60)}")
    folds = [[str(a) if isinstance(a, np.str_) else a for a in f] for f in folds]
    bad = [a for f in folds for a in f if not isinstance(a, str)]
    if bad:
        raise HsprError(f"folds hold agent ids (strings), got {type(bad[0]).__name__} {shorten(repr(bad[0]), 40)}")
    empty = [k for k, f in enumerate(folds) if not len(f)]
    if empty:
        raise HsprError(f"fold {empty[0]} is empty: every fold needs at least one target agent")
    pos = {a: i for i, a in enumerate(agents)}
    for k, f in enumerate(folds):  # unknown ids first: a fold of 9 agents and a typo is not 'all 10 agents'
        missing = [a for a in f if a not in pos]
        if missing:
            raise UnknownIdError(f"fold {k} names agents not in the matrix: {', '.join(map(repr, missing[:3]))}"
                                 f"{' ...' if len(missing) > 3 else ''}")
    whole = next((k for k, f in enumerate(folds) if len(set(f)) >= len(agents)), None)
    if whole is not None:  # its sources, the agents outside it, would be none
        raise HsprError(f"fold {whole} holds all {len(agents)} agents: a fold's sources are the agents outside it, "
                        "so it needs fewer")
    first: dict[str, int] = {}
    for k, f in enumerate(folds):  # an API trial: an agent in two folds was scored twice without a word
        for a in f:
            if a in first:
                where = f"twice in fold {k}" if first[a] == k else f"in fold {first[a]} and fold {k}"
                raise HsprError(f"agent {a!r} is {where}: each agent is a target once, in one fold "
                                "(hspr.data.folds.make_folds builds such folds)")
            first[a] = k
    return [np.array([pos[a] for a in f], dtype=int) for f in folds]


def _valid_date(yyyymmdd: str) -> bool:
    """True for a calendar date in YYYYMMDD form (20251301 and 99999999 are not)."""
    import datetime

    try:
        datetime.date(int(yyyymmdd[:4]), int(yyyymmdd[4:6]), int(yyyymmdd[6:8]))
    except ValueError:
        return False
    return True


def dated(agents: Sequence[str]) -> bool:
    """True when every id starts with a calendar date ``YYYYMMDD_`` or ``YYYY-MM-DD_`` (a time-forward split can
    order them)."""
    return all((d := _day(a)) is not None and _valid_date(d) for a in agents)


def _check_targets(k, n_agents: int, option: str) -> None:
    """ValueError naming ``option`` unless ``k`` is a whole number of targets leaving at least 2 sources."""
    if isinstance(k, bool) or int(k) != k or not 1 <= k <= n_agents - 2:
        raise ValueError(f"{option} must be a whole number from 1 to {n_agents - 2} (the bank has {n_agents} agents "
                         f"and needs at least 2 sources), got {k!r}")


def forward_split(agents: Sequence[str], newest: int) -> np.ndarray:
    """Row indices of the ``newest`` agents by the date that starts their id (time-forward split).

    The targets are the newest ``newest`` rows; all older rows are sources. Agents are ordered
    by (date prefix, id), so ties within a day break by name and the split does not depend on
    the file's row order.

    Parameters
    ----------
    agents : sequence of str, ids of the form ``YYYYMMDD_name`` or ``YYYY-MM-DD_name`` (both forms may mix:
        they are ordered by the date)
    newest : int, number of targets, 1 <= newest <= n_agents - 2

    Returns
    -------
    numpy int array, shape (newest,), sorted row indices.

    Raises
    ------
    ValueError
        If an id does not start with a date in one of those forms or its date is not a calendar date
        (naming the first few), or ``newest`` leaves fewer than 2 sources.
    """
    undated = [a for a in agents if _day(a) is None]
    if undated:
        raise ValueError(f"a time-forward split needs agent ids that start with a date (YYYYMMDD_... or YYYY-MM-DD_...); "
                         f"{len(undated)} of {len(agents)} do not (e.g. {undated[:3]}); use the 4-fold split instead")
    bad = [a for a in agents if not _valid_date(_day(a))]
    if bad:
        raise ValueError(f"a time-forward split orders agents by the date that starts their id; {len(bad)} id(s) start "
                         f"with no calendar date (e.g. {bad[:3]}): fix the date prefix")
    _check_targets(newest, len(agents), "--newest")
    order = sorted(range(len(agents)), key=lambda i: (_day(agents[i]), agents[i]))
    return np.sort(np.array(order[len(agents) - int(newest):], dtype=int))


def _clean_cuts(option: str, k: int, inside: int, n_tied: int, n_agents: int) -> list[str]:
    """``option N`` for the target counts that cut just before and just after a group of ``n_tied``
    agents the cut of ``k`` targets falls inside (``inside`` of them targets), each leaving 2 sources."""
    return [f"{option} {n}" for n in (k - inside, k - inside + n_tied) if 1 <= n <= n_agents - 2]


def forward_cut_tie(agents: Sequence[str], targets: np.ndarray) -> str | None:
    """Why a time-forward cut is not clean, or None: the cut falls inside one day.

    When the oldest target and the newest source share their date prefix, agents of that day
    sit on both sides of the cut (ties break by id in :func:`forward_split`), so not every source
    is older than every target. The message names the day, how many of its agents are targets,
    and the ``--newest`` values that cut between days.

    Parameters
    ----------
    agents : sequence of str, ids of the form ``YYYYMMDD_name`` or ``YYYY-MM-DD_name``
    targets : int array, the row indices :func:`forward_split` returned
    """
    day = [_day(a) for a in agents]
    is_target = np.zeros(len(agents), dtype=bool)
    is_target[np.asarray(targets, dtype=int)] = True
    first = min(day[i] for i in np.flatnonzero(is_target))
    if max(day[i] for i in np.flatnonzero(~is_target)) < first:
        return None
    on_day = [i for i in range(len(agents)) if day[i] == first]
    inside = int(is_target[on_day].sum())
    options = _clean_cuts("--newest", int(is_target.sum()), inside, len(on_day), len(agents))
    return (f"the time-forward cut falls inside {first[:4]}-{first[4:6]}-{first[6:]}: {inside} of the {len(on_day)} "
            f"agents dated that day are targets and {len(on_day) - inside} sources (same-day ties break by id), so not "
            f"every source is older than every target" + (f"; {' or '.join(options)} cuts between days" if options else ""))


def strongest_cut_tie(agents: Sequence[str], scores, targets: np.ndarray) -> str | None:
    """Why a strongest-score cut is not clean, or None: the weakest target and the strongest
    source have the same score, so agents of that score sit on both sides (ties break by id in
    :func:`strongest_split`). The message names the score, how many of the agents with it are
    targets, and the ``--strongest`` values that cut between scores.

    Parameters
    ----------
    agents : sequence of str, the row ids
    scores : array, shape (n_agents,), each agent's score (0-1)
    targets : int array, the row indices :func:`strongest_split` returned
    """
    scores = np.asarray(scores, dtype=float)
    is_target = np.zeros(len(agents), dtype=bool)
    is_target[np.asarray(targets, dtype=int)] = True
    low = scores[is_target].min()
    if scores[~is_target].max() < low:
        return None
    tied = np.isclose(scores, low, rtol=0.0, atol=1e-12)
    inside = int((is_target & tied).sum())
    options = _clean_cuts("--strongest", int(is_target.sum()), inside, int(tied.sum()), len(agents))
    n_src = int(tied.sum()) - inside
    return (f"the strongest-score cut falls inside a tie: {inside} of the {int(tied.sum())} agents scoring "
            f"{100 * low:.2f} % {'is a target' if inside == 1 else 'are targets'} and {n_src} "
            f"{'a source' if n_src == 1 else 'sources'} (ties break by id), so not every "
            "target scores above every source" + (f"; {' or '.join(options)} cuts between scores" if options else ""))


def strongest_split(agents: Sequence[str], scores, strongest: int) -> np.ndarray:
    """Row indices of the ``strongest`` agents by score (a stronger-than-history split).

    The targets are the ``strongest`` highest-scoring rows; all others are sources, so every
    target scores at least as high as every source: the case of a new agent better than the
    whole history, where a model fitted on the sources must extrapolate. Ties break by id, so
    the split does not depend on the file's row order.

    Parameters
    ----------
    agents : sequence of str, the row ids
    scores : array, shape (n_agents,), each agent's score (0-1)
    strongest : int, number of targets, 1 <= strongest <= n_agents - 2

    Returns
    -------
    numpy int array, shape (strongest,), sorted row indices.

    Raises
    ------
    ValueError
        If ``strongest`` leaves fewer than 2 sources.
    """
    _check_targets(strongest, len(agents), "--strongest")
    scores = np.asarray(scores, dtype=float)
    order = sorted(range(len(agents)), key=lambda i: (-scores[i], agents[i]))
    return np.sort(np.asarray(order[: int(strongest)], dtype=int))
