"""Build a bank (response matrix) from any supported input form and write it as a wide CSV."""

from __future__ import annotations

import csv
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .io import FORMS, detect_form, load_matrix, read_leaderboard
from .matrix import DataError, ResponseMatrix


def build_bank(
    path: str | Path, split: str | None = None, tasks: str | Path | Sequence[str] | None = None
) -> ResponseMatrix:
    """Read a response matrix from ``path`` in any form :func:`hspr.data.io.detect_form` knows.

    Parameters
    ----------
    path : str or Path
        Wide / long CSV, py-irt JSONL, a bank folder, or a SWE-bench/experiments checkout.
    split : str, optional
        Leaderboard split folder (``lite``, ``verified``, ``test``, ...); only for a checkout.
        Default: the only split present, else ``verified``.
    tasks : path or sequence of str, optional
        Leaderboard task universe (see :func:`hspr.data.io.read_leaderboard`); only for a checkout.

    Returns
    -------
    ResponseMatrix
        Shape (n_agents, n_tasks).

    Raises
    ------
    DataError
        If the input is invalid, or ``split`` / ``tasks`` is given for a form other than a
        leaderboard checkout.
    """
    path = Path(path)
    form = detect_form(path)
    if form == "leaderboard":
        return read_leaderboard(path, split, tasks)
    if split is not None or tasks is not None:
        raise DataError(
            f"{path}: --split / --tasks apply only to a SWE-bench/experiments checkout, "
            f"but this is a {FORMS[form]}; drop those options"
        )
    return load_matrix(path)


def write_wide_csv(matrix: ResponseMatrix, out: str | Path) -> Path:
    """Write ``matrix`` as a wide CSV (``agent,<task ids...>``; empty cell = missing run).

    The file is written to a temporary file in the same folder and moved into place with
    ``os.replace``, so readers never see a half-written file.

    Parameters
    ----------
    matrix : ResponseMatrix
        Shape (n_agents, n_tasks); missing cells are written empty.
    out : str or Path
        Destination file; its folder must exist.

    Returns
    -------
    Path
        ``out``.

    Raises
    ------
    OSError
        If the folder does not exist or is not writable (no partial file is left behind).
    """
    out = Path(out)
    cells = matrix.values.astype(str)
    if matrix.missing is not None:
        cells = np.where(matrix.missing, "", cells)
    fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent)
    try:
        with os.fdopen(fd, "w", newline="", encoding="utf-8") as fh:
            writer = csv.writer(fh, lineterminator="\n")
            writer.writerow(["agent", *matrix.tasks])
            writer.writerows([agent, *row] for agent, row in zip(matrix.agents, cells.tolist()))
        os.chmod(tmp, 0o644)
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return out
