"""Write a bank (response matrix) as a wide CSV, and merge new runs into a bank (`hspr bank build` / `merge`);
reading any input form is :func:`hspr.data.io.load_matrix`'s."""

from __future__ import annotations

import csv
import io
import warnings
from pathlib import Path

import numpy as np

from ..errors import InputWarning
from ..fileio import write_text_durable
from .io import fold_id
from .matrix import DataError, ResponseMatrix


def write_wide_csv(matrix: ResponseMatrix, out: str | Path) -> Path:
    """Write ``matrix`` as a wide CSV (``agent,<task ids...>``; empty cell = missing run); a
    bank of repeated trials (``matrix.trials``) as the long CSV ``agent,task_id,successes,trials``
    instead (one line per cell that ran), the form :func:`hspr.data.io.read_trials_csv` reads.

    Written by :func:`hspr.fileio.write_text_durable`: atomically (a temporary file moved into
    place), through a symbolic link, and into ``/dev/stdout`` or a named pipe.

    Parameters
    ----------
    matrix : ResponseMatrix
        Shape (n_agents, n_tasks); missing cells are written empty.
    out : str or Path
        Destination file (missing folders are created).

    Returns
    -------
    Path
        ``out``.

    Raises
    ------
    OSError
        If the folder is not writable (no partial file is left behind).
    """
    out = Path(out)
    cells = matrix.values.astype(str)
    if matrix.missing is not None:
        cells = np.where(matrix.missing, "", cells)
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    if matrix.trials is None:
        writer.writerow(["agent", *matrix.tasks])
        writer.writerows([agent, *row] for agent, row in zip(matrix.agents, cells.tolist()))
    else:
        writer.writerow(["agent", "task_id", "successes", "trials"])
        ran = np.ones(matrix.shape, bool) if matrix.missing is None else ~matrix.missing
        writer.writerows([matrix.agents[i], matrix.tasks[j], int(matrix.values[i, j]), matrix.trials]
                         for i, j in zip(*np.nonzero(ran)))
    write_text_durable(buf.getvalue(), out)  # through a symlink, into /dev/stdout or a pipe (fileio)
    return out


def merge_banks(base: ResponseMatrix, new: ResponseMatrix, prefer: str = "refuse") -> ResponseMatrix:
    """The union of two banks: every agent and task of either, cells from both (issue 12, item 5).

    New agents are appended rows; new tasks are appended columns; a cell neither bank has is
    missing (no run). Where both banks have the same cell with different outcomes, ``prefer``
    decides: ``'refuse'`` (DataError naming the first conflicts), ``'new'`` or ``'base'``.

    Parameters
    ----------
    base, new : ResponseMatrix
        Shapes (n_a, m_a) and (n_b, m_b).
    prefer : {'refuse', 'new', 'base'}

    Returns
    -------
    ResponseMatrix
        Shape (|agents of base or new|, |tasks of base or new|), canonical order (sorted ids).

    Raises
    ------
    DataError
        On a conflict with ``prefer='refuse'``, when the banks share no task and no agent, or
        when their cells differ in form (0/1 outcomes against success counts, or another
        number of trials).
    ValueError
        For an unknown ``prefer``.

    Warns
    -----
    InputWarning
        Naming the cells that differ, with ``prefer`` 'new' or 'base'; new agents when the
        banks share no task; and new agent or task ids that differ from one of ``base`` only in
        letter case, white space, invisible characters or Unicode compatibility forms.
    """
    if prefer not in ("refuse", "new", "base"):
        raise ValueError(f"prefer must be 'refuse', 'new' or 'base', got {prefer!r}")
    if base.trials != new.trials:
        def kind(m):
            return "one 0/1 outcome per task" if m.trials is None else f"{m.trials} trials per task"
        raise DataError(f"cannot merge {new.source} ({kind(new)}) into {base.source} ({kind(base)}): both banks need "
                        "the same number of trials per task")
    shared_tasks = set(base.tasks) & set(new.tasks)
    if not shared_tasks and not set(base.agents) & set(new.agents):
        raise DataError(f"{new.source} shares no task id and no agent id with {base.source} (e.g. task "
                        f"{new.tasks[0]!r} against {base.tasks[0]!r}): merged, every agent would have no run on the "
                        "other bank's tasks. Check that both are of one split and spell task ids the same way")
    agents = list(base.agents) + [a for a in new.agents if a not in set(base.agents)]
    tasks = list(base.tasks) + [t for t in new.tasks if t not in set(base.tasks)]
    for kind, old_ids, new_ids in (("agent", base.agents, new.agents), ("task", base.tasks, new.tasks)):
        # a hostile trial: 'C' beside 'c', 'b\u200b' beside 'b', a task 'T1' beside 't1' made half-blank rows and
        # columns, and the same cell under two spellings escaped the conflict check (a later one: the message said
        # 'with the other's cells blank' of rows that had none)
        folded, old = {fold_id(x): x for x in old_ids}, set(old_ids)
        alike = [(x, folded[f]) for x in new_ids if x not in old and (f := fold_id(x)) in folded]
        if alike:
            shown = "; ".join(f"{ascii(x)} / {ascii(y)}" for x, y in alike[:3])
            warnings.warn(f"{len(alike)} {kind} id(s) of {new.source} differ from {base.source}'s only in letter case, "
                          f"white space, invisible characters or Unicode compatibility forms (ß / ss, ² / 2, full-width "
                          f"letters) ({shown}{' ...' if len(alike) > 3 else ''}): each is merged "
                          f"as another {kind}, {'a row' if kind == 'agent' else 'a column'} of its own beside the first; if they "
                          f"are one {kind}, "
                          "spell it the same way in both banks", InputWarning, stacklevel=2)
    ai = {a: i for i, a in enumerate(agents)}
    ti = {t: j for j, t in enumerate(tasks)}
    vals = np.zeros((len(agents), len(tasks)), dtype=np.int8)
    have = np.zeros_like(vals, dtype=bool)
    layers = [base, new] if prefer != "base" else [new, base]
    placed = []
    for m in layers:
        r = np.array([ai[a] for a in m.agents])
        c = np.array([ti[t] for t in m.tasks])
        known = np.ones(m.values.shape, bool) if m.missing is None else ~m.missing
        placed.append((r, c, known, m.values))
    (r0, c0, k0, v0), (r1, c1, k1, v1) = placed
    vals[np.ix_(r0, c0)] = np.where(k0, v0, 0)
    have[np.ix_(r0, c0)] = k0
    old_v, old_h = vals[np.ix_(r1, c1)], have[np.ix_(r1, c1)]
    clash = old_h & k1 & (old_v != v1)
    if clash.any():
        rr, cc = np.nonzero(clash)
        top = layers[1]  # the bank whose outcome wins (new, unless prefer='base')
        first = [f"{top.agents[i]} / {top.tasks[j]} ({layers[0].source}: {old_v[i, j]}, {top.source}: {v1[i, j]})"
                 for i, j in zip(rr[:3], cc[:3])]
        if prefer == "refuse":
            raise DataError(f"{int(clash.sum())} cell(s) differ between the banks, e.g. {'; '.join(first)}; "
                            "pass --prefer new or --prefer base to choose")
        warnings.warn(f"{int(clash.sum())} cell(s) differ between the banks and take the {prefer} bank's outcome "
                      f"({top.source}), e.g. {'; '.join(first)}", InputWarning, stacklevel=2)
    vals[np.ix_(r1, c1)] = np.where(k1, v1, old_v)
    have[np.ix_(r1, c1)] = old_h | k1
    added = [a for a in new.agents if a not in set(base.agents)]
    if added and not shared_tasks:
        warnings.warn(f"{len(added)} new agent(s) ({', '.join(map(repr, added[:3]))}{' ...' if len(added) > 3 else ''}) "
                      f"ran none of {base.source}'s {base.n_tasks} tasks: they have no run on those tasks (counted as "
                      "unresolved where missing runs count as 0)",
                      InputWarning, stacklevel=2)
    missing = None if have.all() else ~have
    return ResponseMatrix(agents, tasks, vals, missing, source=f"{base.source} + {new.source}",
                          trials=base.trials).canonical()
