"""The bundled real SWE-bench response matrices (see each bank's SOURCE.md)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from types import MappingProxyType

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


BANKS: Mapping[str, BankInfo] = MappingProxyType({
    "lite": BankInfo("lite", "matrix.csv", "SWE-bench Lite (test)"),
    "verified": BankInfo("verified", "matrix.csv", "SWE-bench Verified"),
    "full": BankInfo("full", "matrix.csv", "SWE-bench Full (test)"),
    "pro": BankInfo("pro", "matrix_missing_as_0.csv", "SWE-bench Pro (public), missing runs as unresolved"),
    "multimodal": BankInfo("multimodal", "matrix.csv", "SWE-bench Multimodal (test), 12 submissions"),
    "terminal-bench": BankInfo("terminal-bench", "trials.csv",
                               "Terminal-Bench 1.0, 25 agents x 80 tasks x 5 trials (score: mean pass rate)",
                               foreign_datasets=(r"terminal.?bench\D*2(\.\d+)*$",)),  # 2.0 reuses 1.0's task names
})
#: the four banks of the paper's tables (``--bank all``, the macro MAE); multimodal and
#: terminal-bench are bundled besides
BANK_ORDER = ("lite", "verified", "full", "pro")


def bank_of_tasks(tasks: Iterable[str]) -> BankInfo | None:
    """The bundled bank with foreign datasets (:attr:`BankInfo.foreign_datasets`) whose task ids
    include every one of ``tasks`` and at least half of its own are among them: a copy of it, a
    subset of it, or one merged with more rows; None otherwise. Trials of a foreign dataset are
    refused there as on the bank itself (a trial: the docs' hidden-agent recipe, a ``--matrix`` copy
    of Terminal-Bench 1.0, recorded Terminal-Bench 2.0 trials under 1.0's task names)."""
    ids = frozenset(tasks)
    for info in BANKS.values():
        if info.foreign_datasets:
            own = frozenset(load_bank(info.name).tasks)
            if ids <= own and 2 * len(ids) >= len(own):
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
        raise DataError(f"unknown bank {name!r}; choose one of {', '.join(BANKS)} or give your own matrix "
                        "(--matrix PATH on the command line; hspr.data.load_matrix in Python)")
    info = BANKS[name]
    if info.filename == "trials.csv":
        m = read_trials_csv(bank_dir(name) / info.filename)
    else:
        m = read_wide_csv(bank_dir(name) / (info.filename if missing_as_zero else "matrix.csv"))
    return ResponseMatrix(m.agents, m.tasks, m.values, m.missing, source=f"bank:{name}", trials=m.trials).canonical()


def bank_provenance(name: str) -> str:
    """The SOURCE.md text shipped with the bank."""
    return (bank_dir(name) / "SOURCE.md").read_text(encoding="utf-8")


@cache
def load_target_set(name: str) -> ResponseMatrix:
    """Load a bundled target set by name (see :data:`TARGET_SETS`), columns in its bank's task order.

    Raises DataError for an unknown name.
    """
    if name not in TARGET_SETS:
        raise DataError(f"unknown target set {name!r}; bundled sets: {', '.join(TARGET_SETS)} (or give a file path)")
    info = TARGET_SETS[name]
    m = read_wide_csv(bank_dir(info.folder) / "matrix.csv")
    return ResponseMatrix(m.agents, m.tasks, m.values, m.missing, source=f"targets:{name}").canonical()
