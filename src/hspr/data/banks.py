"""The bundled real SWE-bench response matrices (see each bank's SOURCE.md)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from types import MappingProxyType

import numpy as np

from .io import read_trials_csv, read_wide_csv
from .matrix import DataError, ResponseMatrix


@dataclass(frozen=True)
class BankInfo:
    """A bundled bank: short name, file inside the package, human title, and ``foreign_datasets``:
    regular expressions of dataset names (a Harbor trial's ``source``) whose task ids overlap the
    bank's but name other tasks, so their outcomes are refused."""

    name: str
    filename: str
    title: str
    foreign_datasets: tuple[str, ...] = ()

    @property
    def short_title(self) -> str:
        """The title without its parenthesised detail ("Terminal-Bench 1.0, 25 agents x 80 tasks x 5
        trials"), for a message that puts it in parentheses itself (a trial: nested ones)."""
        return self.title.split(" (")[0]


BANKS: Mapping[str, BankInfo] = MappingProxyType({
    "lite": BankInfo("lite", "matrix.csv", "SWE-bench Lite (test)"),
    "verified": BankInfo("verified", "matrix.csv", "SWE-bench Verified"),
    "full": BankInfo("full", "matrix.csv", "SWE-bench Full (test)"),
    "pro": BankInfo("pro", "matrix_missing_as_0.csv", "SWE-bench Pro (public), missing runs as unresolved"),
    "multimodal": BankInfo("multimodal", "matrix.csv", "SWE-bench Multimodal (test), 12 submissions"),
    "terminal-bench": BankInfo("terminal-bench", "trials.csv",
                               "Terminal-Bench 1.0, 25 agents x 80 tasks x 5 trials (score: mean pass rate)",
                               # 2.0 reuses 1.0's task names; 'terminal-bench@2.0', 'tbench@2.0.0-rc1', 'Terminal Bench
                               # 2.0 (Harbor)', not 'terminal-bench-core==0.1.1' (1.0); a re-trial: '$' let suffixes by
                               foreign_datasets=(r"t(?:erminal)?[\s_-]?bench\D*2(?:\.\d+)*(?!\d)",)),
})
#: the four banks of the paper's tables (``--bank all``, the macro MAE); multimodal and
#: terminal-bench are bundled besides
BANK_ORDER = ("lite", "verified", "full", "pro")


#: shared tasks a matrix row must equal a bundled bank's row on for :func:`bank_of_rows`
MIN_SHARED_TASKS = 10


def bank_of_rows(matrix: ResponseMatrix) -> BankInfo | None:
    """The bundled bank with foreign datasets (:attr:`BankInfo.foreign_datasets`) some of whose rows
    ``matrix`` holds: an agent of both whose outcomes are equal on every shared task both ran, at
    least :data:`MIN_SHARED_TASKS` of them (or all the bank's); None otherwise. Such a matrix is
    that bank's outcomes (a copy, a subset of tasks or agents, or one merged with more rows or tasks),
    so trials of a foreign dataset are refused there as on the bank itself (a trial: the docs'
    hidden-agent recipe, a ``--matrix`` copy of Terminal-Bench 1.0, recorded Terminal-Bench 2.0 trials
    under 1.0's task names); a bank built from the user's own runs of another dataset holds none of
    its rows (a re-trial: a rule on task ids alone refused a 2.0 bank whose tasks were all 1.0 names).
    """
    for info in BANKS.values():
        if not info.foreign_datasets:
            continue
        bank = load_bank(info.name, missing_as_zero=False)
        agents = sorted(set(matrix.agents) & set(bank.agents))
        tasks = sorted(set(matrix.tasks) & set(bank.tasks))
        if not agents or len(tasks) < min(MIN_SHARED_TASKS, bank.n_tasks) or matrix.trials != bank.trials:
            continue
        cells = [np.ix_([m.agent_index(a) for a in agents], [m.task_index(t) for t in tasks]) for m in (matrix, bank)]
        ran = np.ones((len(agents), len(tasks)), bool)  # cells both ran
        for m, ix in zip((matrix, bank), cells):
            if m.missing is not None:
                ran &= ~m.missing[ix]
        same = (matrix.values[cells[0]] == bank.values[cells[1]]) | ~ran
        if np.any(same.all(axis=1) & (ran.sum(axis=1) >= min(MIN_SHARED_TASKS, bank.n_tasks))):
            return info
    return None


def foreign_datasets(info: BankInfo | None, datasets: Iterable[str]) -> list[str]:
    """The names among ``datasets`` (Harbor trials' ``source``) that :attr:`BankInfo.foreign_datasets`
    of ``info`` matches (none for ``info`` None)."""
    return [d for d in datasets for pat in (info.foreign_datasets if info else ()) if re.search(pat, d, re.I)]


@dataclass(frozen=True)
class TargetSetInfo:
    """A bundled set of target rows scored against every row of one bank (a shift protocol)."""

    name: str
    bank: str
    folder: str
    title: str


#: target sets unlike their bank's history (see each folder's SOURCE.md); never tune on them
TARGET_SETS: Mapping[str, TargetSetInfo] = MappingProxyType({
    "bash-only": TargetSetInfo("bash-only", "verified", "verified_bash_only",
                               "SWE-bench Verified bash-only leaderboard: 28 models, one minimal scaffold"),
})


def bank_dir(name: str) -> Path:
    """The folder of a bundled bank inside the installed package (``hspr/data/bundled/<name>``);
    it is not checked to exist (:func:`load_bank` refuses an unknown name)."""
    return Path(str(resources.files("hspr").joinpath("data", "bundled", name)))


@cache
def load_bank(name: str, missing_as_zero: bool = True) -> ResponseMatrix:
    """Load a bundled bank by name (:data:`BANKS`: 'lite', 'verified', 'full', 'pro', 'multimodal',
    'terminal-bench'; ``hspr banks`` lists them with their sources).

    Returns
    -------
    ResponseMatrix
        Shape (n_agents, n_tasks), agents and tasks sorted by id; 0/1 outcomes, or success
        counts with ``trials`` set for a bank of repeated trials (Terminal-Bench).

    For 'pro', ``missing_as_zero=False`` loads the matrix with its 491 missing cells masked.
    Raises DataError for an unknown name.
    """
    if name not in BANKS:
        if isinstance(name, str) and name in TARGET_SETS:  # a re-trial: `replay --bank bash-only` named no way
            s = TARGET_SETS[name]
            raise DataError(f"{name!r} is a target set, not a bank: its agents are scored against the {s.bank} bank "
                            f"(--bank {s.bank} --targets {name} on the command line; load_target_set({name!r}) in "
                            "Python)")
        raise _unknown_bank(name, f"choose one of {', '.join(BANKS)} or give your own matrix "
                                  "(--matrix PATH on the command line; hspr.data.load_matrix in Python)")
    info = BANKS[name]
    if info.filename == "trials.csv":
        m = read_trials_csv(bank_dir(name) / info.filename)
    else:
        m = read_wide_csv(bank_dir(name) / (info.filename if missing_as_zero else "matrix.csv"))
    return ResponseMatrix(m.agents, m.tasks, m.values, m.missing, source=f"bank:{name}", trials=m.trials).canonical()


def close_bank_name(name, names: Iterable[str] = BANKS, cutoff: float = 0.75) -> str | None:
    """The one of ``names`` (default :data:`BANKS`) that ``name`` equals up to case and spaces, else the closest
    by spelling (``difflib``, similarity >= ``cutoff``: ``verifed`` for ``verified``; a hostile trial got no hint),
    else None."""
    import difflib

    if not isinstance(name, str):
        return None
    names = list(names)
    low = name.strip().lower()
    return next((b for b in names if b == low), None) or next(iter(difflib.get_close_matches(low, names, 1, cutoff)), None)


def _unknown_bank(name, advice: str, names: Iterable[str] = BANKS) -> DataError:
    """The error for bank ``name`` not in ``names``: the one it is close to (:func:`close_bank_name`), then
    ``advice``."""
    close = close_bank_name(name, names)
    return DataError(f"unknown bank {name!r}" + (f" (did you mean {close!r}?)" if close else "") + f"; {advice}")


def bank_provenance(name: str) -> str:
    """The SOURCE.md text shipped with bundled bank or target set ``name`` (:data:`BANKS`,
    :data:`TARGET_SETS`): where its outcomes come from, how the matrix was built and under what
    licence (``hspr banks --source NAME`` prints it).

    Raises DataError for an unknown name, naming the bundled banks and target sets.
    """
    if name in TARGET_SETS:
        return (bank_dir(TARGET_SETS[name].folder) / "SOURCE.md").read_text(encoding="utf-8")
    if name not in BANKS:
        raise _unknown_bank(name, f"the bundled banks are {', '.join(BANKS)}, and the target set(s) "
                                  f"{', '.join(TARGET_SETS)}", [*BANKS, *TARGET_SETS])
    return (bank_dir(name) / "SOURCE.md").read_text(encoding="utf-8")


@cache
def load_target_set(name: str) -> ResponseMatrix:
    """Load a bundled target set by name (see :data:`TARGET_SETS`), columns in its bank's task order.

    Raises DataError for an unknown name.
    """
    if name not in TARGET_SETS:
        close = close_bank_name(name, TARGET_SETS)  # a re-trial: 'bash_only' got no hint
        raise DataError(f"unknown target set {name!r}" + (f" (did you mean {close!r}?)" if close else "")
                        + f"; bundled sets: {', '.join(TARGET_SETS)} (or give a file path)")
    info = TARGET_SETS[name]
    m = read_wide_csv(bank_dir(info.folder) / "matrix.csv")
    return ResponseMatrix(m.agents, m.tasks, m.values, m.missing, source=f"targets:{name}").canonical()
