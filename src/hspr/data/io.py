"""Readers for response matrices on disk.

``load_matrix(path)`` picks the reader from the file's form; each reader validates as it
reads and raises :class:`~hspr.data.matrix.DataError` naming the file, row and column.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from .matrix import DataError, ResponseMatrix

_TRUE = {"1", "1.0", "true", "True", "TRUE", "resolved"}
_FALSE = {"0", "0.0", "false", "False", "FALSE", "unresolved"}


def parse_outcome(text: str, where: str) -> int | None:
    """Parse one cell: 1/0 (also true/false, 1.0/0.0); empty means missing (None)."""
    t = text.strip()
    if t == "" or t.lower() in {"na", "nan"}:
        return None
    if t in _TRUE:
        return 1
    if t in _FALSE:
        return 0
    raise DataError(f"{where}: non-binary value {text!r}; outcomes must be 0 or 1 (empty = no run)")


def read_wide_csv(path: str | Path) -> ResponseMatrix:
    """Read a wide CSV: header ``agent,<task_1>,...,<task_N>``, one row per agent.

    Empty cells are missing runs. Raises DataError on ragged rows, non-binary values,
    duplicate ids or an empty file, naming the line and column.
    """
    path = Path(path)
    with path.open(newline="", encoding="utf-8-sig") as fh:
        reader = csv.reader(fh)
        try:
            header = next(reader)
        except StopIteration:
            raise DataError(f"{path}: file is empty; expected a header 'agent,<task ids...>'") from None
        if len(header) < 2:
            raise DataError(f"{path}: header has {len(header)} column(s); expected 'agent,<task ids...>'")
        tasks = [h.strip() for h in header[1:]]
        for j, t in enumerate(tasks):
            if not t:
                raise DataError(f"{path}: line 1, column {j + 2}: empty task id in header")
        agents: list[str] = []
        rows: list[list[int]] = []
        miss: list[list[bool]] = []
        for lineno, rec in enumerate(reader, start=2):
            if not rec or all(not x.strip() for x in rec):
                continue
            if len(rec) != len(header):
                raise DataError(
                    f"{path}: line {lineno} (agent {rec[0]!r}) has {len(rec)} fields, header has {len(header)}; "
                    f"every row needs one value per task column"
                )
            agents.append(rec[0].strip())
            vals, ms = [], []
            for j, cell in enumerate(rec[1:]):
                v = parse_outcome(cell, f"{path}: line {lineno}, column {j + 2} (agent {rec[0]!r}, task {tasks[j]!r})")
                vals.append(0 if v is None else v)
                ms.append(v is None)
            rows.append(vals)
            miss.append(ms)
    if not rows:
        raise DataError(f"{path}: no agent rows under the header; the matrix is empty")
    values = np.array(rows, dtype=np.int8)
    mask = np.array(miss, dtype=bool)
    return ResponseMatrix(agents, tasks, values, mask if mask.any() else None, source=str(path))


def load_matrix(path: str | Path) -> ResponseMatrix:
    """Load a response matrix from ``path``, choosing the reader from its form.

    Supported: wide CSV (``agent,<task>...``). Raises DataError for unknown forms.
    """
    path = Path(path)
    if not path.exists():
        raise DataError(f"{path}: no such file or directory")
    if path.suffix.lower() == ".csv":
        return read_wide_csv(path)
    raise DataError(f"{path}: unknown matrix format; expected a wide CSV 'agent,<task ids...>'")
