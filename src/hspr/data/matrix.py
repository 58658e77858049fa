"""The response matrix: agents x tasks binary outcomes, with an optional missing mask."""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field

import numpy as np

from ..errors import HsprError, RowIndexError, UnknownIdError, shorten
from ..outcomes import SPELLINGS, is_missing, outcome


class DataError(HsprError):
    """Raised for malformed response data; the message names the file, row/column and the fix."""



def _trials_hint(value, top: int) -> str:
    """The hint for a 0/1 matrix given success counts (4) or pass rates (0.2) of repeated trials:
    an API trial got 'outcomes must be 0 or 1' with no word of ``trials=``."""
    if top != 1 or not isinstance(value, (int, float)) or not math.isfinite(value):
        return ""
    if value > 1 and value == int(value):
        pct = "; if the cells are percentages (100 for resolved), divide by 100" if value == 100 else ""  # an API trial
        return f"{pct}; if the cells count the successes of repeated trials, pass trials=<trials per task>"
    if 0 < value < 1:
        return "; if the cells are pass rates of repeated trials, give success counts with trials=<trials per task>"
    return ""

@dataclass(frozen=True, eq=False)
class ResponseMatrix:
    """Binary agent x task outcomes (1 = resolved, 0 = unresolved).

    Parameters
    ----------
    agents : sequence of str, length n_agents
        Agent (configuration) ids, unique.
    tasks : sequence of str, length n_tasks
        Task (instance) ids, unique.
    values : array of shape (n_agents, n_tasks)
        0/1 outcomes. Cells flagged in ``missing`` are stored as 0.
    missing : bool array of shape (n_agents, n_tasks), optional
        True where the agent has no run on the task. ``None`` means complete.
    trials : int, optional
        Repeated trials per cell (Terminal-Bench style): ``values`` are then success counts in
        0..trials and a cell's outcome is its pass rate ``values / trials``
        (:meth:`rates`). ``None`` (one run per cell) means 0/1 outcomes.
    source : str
        Where the matrix came from (a path or a bank name), used in error messages.

    Raises
    ------
    DataError
        On an empty matrix, ids that are not a sequence (a set, one string), duplicate ids, an
        id that is empty, surrounded by white space or holds a control character, a shape
        mismatch, non-binary values, or ``trials`` outside 1..127 (with repeated trials, counts
        outside 0..trials).
    """

    agents: tuple[str, ...]
    tasks: tuple[str, ...]
    values: np.ndarray
    missing: np.ndarray | None = None
    source: str = "<memory>"
    trials: int | None = None
    _task_index: dict = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        for kind, ids in (("agents", self.agents), ("tasks", self.tasks)):
            if isinstance(ids, (str, bytes)):  # tuple('ab') would be the ids 'a' and 'b'
                raise DataError(f"{self.source}: {kind} must be a sequence of ids, got the string {ids!r}; "
                                f"for one id write [{ids!r}]")
            if isinstance(ids, AbstractSet):  # no order: ids would meet rows or columns in hash order
                raise DataError(f"{self.source}: {kind} must be a sequence of ids in the order of the values' "
                                f"{'rows' if kind == 'agents' else 'columns'}, got a {type(ids).__name__} (no order); "
                                "pass a list")
            try:
                ids = tuple(ids)  # once: a generator read by the checks below gave no ids at all (an API trial)
            except TypeError:
                raise DataError(f"{self.source}: {kind} must be a sequence of ids, got {type(ids).__name__}") from None
            object.__setattr__(self, kind, ids)
            # an API trial: None and NaN became the ids 'None' and 'nan' (from_dataframe refuses empty labels)
            k = next((k for k, i in enumerate(ids) if i is None or (isinstance(i, float) and i != i)), None)
            if k is not None:
                raise DataError(f"{self.source}: the {kind[:-1]} id at position {k} is {ids[k]!r}, not an id; "
                                f"give every {kind[:-1]} a name")
            # bytes and tuples became "b't00'" and "('t', 0)", which from_dataframe refuses (a re-trial)
            k = next((k for k, i in enumerate(ids) if isinstance(i, (bytes, tuple, list))), None)
            if k is not None:
                fix = "decode it (id.decode())" if isinstance(ids[k], bytes) else "join its parts into one string"
                raise DataError(f"{self.source}: the {kind[:-1]} id at position {k} is the {type(ids[k]).__name__} "
                                f"{ids[k]!r}, not a string; {fix}")
        agents = tuple(str(a) for a in self.agents)
        tasks = tuple(str(t) for t in self.tasks)
        object.__setattr__(self, "agents", agents)
        object.__setattr__(self, "tasks", tasks)
        vals = self.values
        src = self.source
        if type(vals).__module__.split(".")[0] == "pandas" and hasattr(vals, "columns"):
            # an API trial: a DataFrame's labels were ignored, its columns taken in their own order as ``tasks``
            rows, cols = tuple(map(str, vals.index)), tuple(map(str, vals.columns))
            if (rows, cols) != (agents, tasks):
                raise DataError(f"{src}: values is a pandas DataFrame whose {'index' if rows != agents else 'columns'} "
                                f"{'is' if rows != agents else 'are'} not the {'agents' if rows != agents else 'tasks'} "
                                "given, in that order, so its cells would meet the wrong ids; build the matrix with "
                                "ResponseMatrix.from_dataframe(df), which reads the labels")
        if hasattr(vals, "toarray") and hasattr(vals, "nnz"):  # scipy.sparse: np.asarray gives a 0-d object array
            raise DataError(f"{src}: values is a scipy sparse matrix; give a dense array (values.toarray())")
        masked = None
        if np.ma.isMaskedArray(vals):  # masked cells are missing runs (their stored values would count as runs)
            masked = np.ma.getmaskarray(vals)
            vals = vals.filled(0)
        try:
            vals = np.asarray(vals)
        except ValueError:  # numpy: 'inhomogeneous shape'
            raise DataError(f"{src}: values are not a rectangular agents x tasks array (rows of different "
                            "lengths?); give one row per agent, each with one entry per task") from None
        if vals.ndim != 2:
            raise DataError(f"{src}: response matrix must be 2-D (agents x tasks), got shape {vals.shape}")
        if vals.dtype.kind in "cmM":  # an API trial: complex values were taken with numpy's warning only
            raise DataError(f"{src}: values are {vals.dtype} numbers, not outcomes; give 0/1 (or success counts of "
                            "repeated trials) as integers, floats or booleans")
        if vals.dtype == object and vals.size:  # a re-trial: a time span among objects was read as its count
            spans = np.frompyfunc(lambda v: isinstance(v, (np.timedelta64, np.datetime64)), 1, 1)(vals).astype(bool)
            if spans.any():
                i, j = (int(k[0]) for k in np.nonzero(spans))
                raise DataError(f"{src}: values hold a numpy {type(vals[i, j]).__name__} at row {i}, column {j}, not an "
                                "outcome; give 0/1 (or success counts of repeated trials) as integers, floats or booleans")
        if vals.shape[0] == 0 or vals.shape[1] == 0:
            raise DataError(f"{src}: empty response matrix (shape {vals.shape}); it needs at least one agent row and one task column")
        if vals.shape != (len(agents), len(tasks)):
            raise DataError(
                f"{src}: values have shape {vals.shape} but there are {len(agents)} agent ids and {len(tasks)} task ids"
            )
        _check_unique(agents, "agent", src)
        _check_unique(tasks, "task", src)
        miss = None
        if self.missing is not None:
            raw = np.asarray(self.missing)
            if raw.dtype != bool:  # an audit: 'False' (text) and 0.2 read as True, a cell silently made missing
                flat = raw.ravel()
                if raw.dtype.kind in "iuf":
                    num = flat.astype(float)
                else:  # objects (e.g. a pandas column of booleans): bools and numbers only
                    num = np.array([float(v) if isinstance(v, (bool, np.bool_, int, float, np.number)) else np.nan
                                    for v in flat.tolist()], dtype=float)
                bad = ~np.isin(num, (0.0, 1.0))
                if bad.any():
                    k = int(np.flatnonzero(bad)[0])
                    where = tuple(int(i) for i in np.unravel_index(k, raw.shape)) if raw.ndim else ()
                    value = flat[k].item() if isinstance(flat[k], np.generic) else flat[k]
                    raise DataError(f"{src}: the missing mask holds {value!r} (at {where}); give True / False (or "
                                    "1 / 0) per cell, True where the agent has no run")
            miss = raw.astype(bool)
            if miss.shape != vals.shape:
                raise DataError(f"{src}: missing mask has shape {miss.shape}, values have {vals.shape}")
        if masked is not None:
            miss = masked if miss is None else miss | masked
        if miss is not None and not miss.any():
            miss = None
        check = vals if miss is None else np.where(miss, 0, vals)
        trials = self.trials
        if trials is not None:
            try:
                ok = not isinstance(trials, bool) and int(trials) == trials and 1 <= trials <= 127
            except (TypeError, ValueError, OverflowError):  # [3], NaN, inf
                ok = False
            if not ok:
                raise DataError(f"{src}: trials per cell must be a whole number in 1..127, got {trials!r}")
            trials = int(trials)
            object.__setattr__(self, "trials", None if trials == 1 else trials)
        top = trials or 1
        bad = ~np.isin(check, np.arange(top + 1))
        if bad.any():
            r, c = np.argwhere(bad)[0]
            want = "0 or 1" if top == 1 else f"a success count in 0..{top} (of {top} trials)"
            value = check[r, c]
            value = value.item() if isinstance(value, np.generic) else value  # plain in the message
            nan = isinstance(value, float) and value != value
            raise DataError(
                f"{src}: {'non-binary' if top == 1 else 'invalid'} value {value!r} for agent {agents[r]!r}, "
                f"task {tasks[c]!r} (row {r + 1}, column {c + 1}); outcomes must be {want}"
                + ("; for cells with no run pass missing=np.isnan(values) (values there are ignored), or fill "
                   "them first (leaderboards count a missing run as 0)" if nan else "")
                + _trials_hint(value, top)
            )
        vals = check.astype(np.int8)
        vals.setflags(write=False)
        if miss is not None:
            miss.setflags(write=False)
        object.__setattr__(self, "values", vals)
        object.__setattr__(self, "missing", miss)
        object.__setattr__(self, "_task_index", {t: j for j, t in enumerate(tasks)})

    def __reduce__(self):
        """Pickle by the constructor's arguments, so an unpickled matrix is validated and read-only
        again (numpy's pickle drops the arrays' read-only flag)."""
        return (type(self), (self.agents, self.tasks, self.values, self.missing, self.source, self.trials))

    @classmethod
    def from_dataframe(cls, df, source: str = "<DataFrame>", trials: int | None = None) -> ResponseMatrix:
        """A response matrix from a pandas DataFrame: one row per agent (the index holds the agent
        ids), one column per task id, cells 0/1 (or success counts of ``trials`` trials).

        Blank cells (NaN, None, ``pd.NA``, an empty or white-space string, or a no-run word such as
        ``"n/a"``) are missing runs (``missing``); every other cell must be an outcome: a number, a
        bool, or a word the file readers read (``"yes"``, ``"True"``, ``"resolved"``, ...;
        :data:`hspr.outcomes.SPELLINGS`). Row and column order do not matter to
        any method (:meth:`canonical`). The warnings :func:`hspr.load_matrix` gives on a file
        (a matrix that looks transposed, agents with identical rows, ...) are given here too.

        Raises
        ------
        DataError
            For something that is not a DataFrame, ids that are not unique or empty, labels of
            several levels (a MultiIndex), or a cell that is not an outcome (naming its agent and
            task).
        """
        import pandas as pd

        if not isinstance(df, pd.DataFrame):
            raise DataError(f"{source}: from_dataframe takes a pandas DataFrame, got {type(df).__name__}")
        if isinstance(df.index, pd.MultiIndex) and df.index.nlevels == 1 or \
                isinstance(df.columns, pd.MultiIndex) and df.columns.nlevels == 1:  # one level: its labels
            df = df.set_axis(df.index.get_level_values(0), axis=0).set_axis(df.columns.get_level_values(0), axis=1)
        for axis, labels in (("agent", df.index), ("task", df.columns)):  # an API trial: None became 'nan'
            if isinstance(labels, pd.MultiIndex):
                raise DataError(f"{source}: the {'index' if axis == 'agent' else 'columns'} have {labels.nlevels} levels; "
                                f"{axis} ids are one level (flatten them, e.g. with '_'.join)")
            odd = [i for i, v in enumerate(labels) if isinstance(v, (tuple, list, set, frozenset, dict, np.ndarray, bytes))]
            if odd:  # an Index of tuples became ids like "('a', 1)", bytes "b'a0'"; list columns gave a pandas TypeError
                v = labels[odd[0]]
                fix = "decode it, e.g. with .decode()" if isinstance(v, bytes) else "join its parts, e.g. '_'.join(map(str, parts))"
                raise DataError(f"{source}: {axis} id {odd[0] + 1} is a {type(v).__name__} ({v!r}), not text or a number: "
                                f"{fix}")
            null = pd.isna(labels)
            if null.any():
                at = int(np.flatnonzero(null)[0])
                raise DataError(f"{source}: {axis} id {at + 1} ({'row' if axis == 'agent' else 'column'} {at + 1}) "
                                f"is empty ({labels[at]!r}); every {axis} needs an id")
        for axis, labels in (("agent", df.index), ("task", df.columns)):  # an API trial: a repeated column of words
            _check_unique(tuple(str(v) for v in labels), axis, source)  # failed inside pandas on the assignment below
        odd = [c for c, t in df.dtypes.items() if getattr(t, "kind", "") in "cmM"]  # an API trial: timedeltas read as 0/1
        if odd:
            raise DataError(f"{source}: task column {odd[0]!r} holds {df.dtypes[odd[0]]} values, not outcomes; outcomes "
                            f"are 0/1 or {SPELLINGS} (blank: no run)")
        text = df.select_dtypes(include=["object", "string", "category"]).astype(object)
        if text.shape[1]:  # '' or ' ' is a blank cell, as in a CSV (also in a categorical column); the words a
            # file's cells may hold are read as the file readers read them (an API trial: 'yes' / 'True' were refused)
            def cell(v):
                if not isinstance(v, str):
                    return v
                if not v.strip() or is_missing(v):
                    return np.nan
                o = outcome(v)
                return v if o is None else o

            read = text.apply(lambda col: col.map(cell))
            if not read.equals(text):
                df = df.copy()
                df[text.columns] = read
        frame = df.apply(pd.to_numeric, errors="coerce")  # nullable dtypes and objects -> float with NaN
        bad = frame.isna() & df.notna()
        if bad.to_numpy().any():
            r, c = np.argwhere(bad.to_numpy())[0]
            ids = bad.iloc[:, c].all() and c == 0  # a first column of text: the agent ids, not set as the index
            raise DataError(f"{source}: value {df.iat[r, c]!r} for agent {df.index[r]!r}, task {df.columns[c]!r} "
                            f"(row {r + 1}, column {c + 1}) is not an outcome; outcomes are 0/1 or {SPELLINGS} "
                            "(blank: no run)"
                            + (f". If column {df.columns[c]!r} holds the agent ids, make it the index: "
                               f"from_dataframe(df.set_index({df.columns[c]!r})), or read the file with "
                               "hspr.load_matrix(path)" if ids else ""))
        values = frame.to_numpy(dtype=float)
        missing = np.isnan(values)
        from .io import check_in_memory  # here: io builds on this module

        return check_in_memory(cls(tuple(df.index), tuple(df.columns), np.where(missing, 0, values),
                                   missing if missing.any() else None, source=source, trials=trials), source)

    # ------------------------------------------------------------------ shape
    @property
    def n_agents(self) -> int:
        """The number of agents (rows)."""
        return len(self.agents)

    @property
    def n_tasks(self) -> int:
        """The number of tasks (columns)."""
        return len(self.tasks)

    @property
    def shape(self) -> tuple[int, int]:
        """``(n_agents, n_tasks)``, the shape of ``values``."""
        return self.values.shape

    @property
    def n_missing(self) -> int:
        """The number of cells without an outcome (0 for a complete matrix)."""
        return 0 if self.missing is None else int(self.missing.sum())

    def rates(self) -> np.ndarray:
        """Per-cell outcome on the 0-1 scale, shape (n_agents, n_tasks): the 0/1 values, or with
        repeated trials the pass rate ``successes / trials``."""
        return self.values if self.trials is None else self.values / self.trials

    def scores(self) -> np.ndarray:
        """Per-agent full score (missing cells count as 0), shape (n_agents,), 0-1 scale: the
        resolve rate, or with repeated trials the mean pass rate, computed as the successes over
        ``trials * n_tasks`` (one division: a session's full-budget estimate divides the same way,
        :meth:`hspr.session.Session.outcome_bounds`)."""
        if self.trials is None:
            return self.values.mean(axis=1)
        return self.values.sum(axis=1) / (self.trials * self.n_tasks)

    def require_binary(self, what: str = "this method", alternatives: Sequence[str] = ()) -> ResponseMatrix:
        """Return self, or raise DataError when cells are pass rates over repeated trials.

        ``alternatives`` (e.g. the methods that take pass rates) are named in the error.
        """
        if self.trials is not None:
            others = f" ({', '.join(alternatives)})" if alternatives else ""
            raise DataError(f"{self.source}: cells are pass rates over {self.trials} trials; {what} takes one "
                            f"0/1 outcome per task. Use a method that takes pass rates{others}, or "
                            "count a task resolved only when every trial passed and rebuild the bank.")
        return self

    def task_index(self, task_id: str) -> int:
        """Column index of ``task_id``; raises :class:`~hspr.errors.UnknownIdError` (a KeyError)
        naming the id if it is not in the matrix."""
        try:
            return self._task_index[task_id]
        except (KeyError, TypeError):  # TypeError: an unhashable id
            raise UnknownIdError(f"task id {task_id!r} is not in {self.source} ({self.n_tasks} tasks)") from None

    def agent_index(self, agent: str) -> int:
        """Row index of ``agent``; raises :class:`~hspr.errors.UnknownIdError` (a KeyError) naming
        the id if it is not in the matrix."""
        try:
            return self.agents.index(agent)
        except ValueError:
            raise UnknownIdError(f"agent {agent!r} is not in {self.source} ({self.n_agents} agents)") from None

    # ------------------------------------------------------------------ transforms
    def _row_indices(self, idx) -> np.ndarray:
        """``idx`` as 0-based row indices: a boolean mask of length n_agents, or integers (negative
        ones count from the end). Raises :class:`~hspr.errors.RowIndexError` (an IndexError) naming a
        bad index or mask length, or agent ids given where indices are expected."""
        try:
            arr = np.asarray(idx)
        except ValueError:  # ragged nested lists (a re-trial: numpy's 'inhomogeneous shape')
            raise RowIndexError(f"{self.source}: row indices are a flat list (or a boolean mask), got "
                                f"{shorten(repr(idx), 40)}") from None
        if arr.ndim == 0:  # rows(0): one row, as drop_rows(0) already took it (a hostile trial)
            arr = arr.reshape(1)
        if arr.ndim > 1:
            raise RowIndexError(f"{self.source}: row indices are a flat list (or a boolean mask), got shape {arr.shape}")
        if arr.dtype == bool:  # a mask: True selects the row (it was cast to the row numbers 0 and 1)
            if arr.shape != (self.n_agents,):
                raise RowIndexError(f"{self.source}: a boolean row mask has one entry per agent ({self.n_agents}), "
                                 f"got shape {arr.shape}")
            return np.flatnonzero(arr)
        if arr.size == 0:
            return np.zeros(0, dtype=int)
        if arr.dtype.kind in "USO" and all(isinstance(a, str) for a in arr.ravel()):  # an API trial: agent names
            raise RowIndexError(f"{self.source}: row indices are integers (or a boolean mask), got agent ids "
                                f"({', '.join(repr(str(a)) for a in arr.ravel()[:3])}{' ...' if arr.size > 3 else ''}); "
                                "turn ids into indices with [m.agent_index(a) for a in ids]")
        if not np.issubdtype(arr.dtype, np.integer):
            raise RowIndexError(f"{self.source}: row indices are integers (or a boolean mask), got {arr.dtype} values")
        bad = (arr < -self.n_agents) | (arr >= self.n_agents)
        if bad.any():
            raise RowIndexError(f"{self.source}: row index {int(arr[bad][0])} is out of range for {self.n_agents} agents")
        return arr.astype(int) % self.n_agents

    def rows(self, idx: Sequence[int] | np.ndarray) -> ResponseMatrix:
        """Sub-matrix with the given agent rows (in that order): 0-based indices (negative ones
        count from the end) or a boolean mask of length n_agents. Raises
        :class:`~hspr.errors.RowIndexError` (an IndexError) for an index out of range, a mask of
        another length, or agent ids (:meth:`agent_index` turns an id into its index)."""
        idx = self._row_indices(idx)
        twice = [int(i) for i, c in zip(*np.unique(idx, return_counts=True)) if c > 1]
        if twice:  # a re-trial: rows([0, 0]) was refused as a duplicate agent id at 'rows 1 and 2'
            raise RowIndexError(f"{self.source}: row {twice[0]} ({self.agents[twice[0]]!r}) is selected twice; give "
                                "each row once")
        return ResponseMatrix(
            agents=tuple(self.agents[i] for i in idx),
            tasks=self.tasks,
            values=self.values[idx],
            missing=None if self.missing is None else self.missing[idx],
            source=self.source,
            trials=self.trials,
        )

    def drop_rows(self, idx: Sequence[int] | np.ndarray) -> ResponseMatrix:
        """Sub-matrix without the given agent rows (the others keep their order): indices or a
        boolean mask as :meth:`rows` takes them (same errors)."""
        keep = np.setdiff1d(np.arange(self.n_agents), self._row_indices(idx))
        return self.rows(keep)

    def select_tasks(self, task_ids) -> ResponseMatrix:
        """The sub-bank of the given tasks (canonical order), shape (n_agents, len(set(task_ids))).

        Scores of the result are over these tasks only: a leaderboard that evaluates a subset of
        the benchmark is scored on that subset.

        Raises
        ------
        DataError
            Naming (up to 5 of) the ids that are not in the bank, for an empty list, or for one
            id given as a string (an API trial: split into its characters).
        """
        if isinstance(task_ids, (str, bytes)):
            raise DataError(f"{self.source}: select_tasks takes a list of task ids, got the string {task_ids!r}; for "
                            f"one task write [{task_ids!r}]")
        ids = list(dict.fromkeys(task_ids))
        if not ids:
            raise DataError(f"{self.source}: the task subset is empty; list at least one task id")
        unknown = [t for t in ids if t not in self._task_index]
        if unknown:
            raise DataError(f"{self.source}: {len(unknown)} task id(s) of the subset are not in the bank, e.g. "
                            f"{unknown[:5]}; check the list against the bank's ids")
        cols = np.array(sorted(self._task_index[t] for t in ids))
        return ResponseMatrix(self.agents, tuple(self.tasks[j] for j in cols), self.values[:, cols],
                              None if self.missing is None else self.missing[:, cols], source=self.source,
                              trials=self.trials).canonical()

    def canonical(self) -> ResponseMatrix:
        """Copy with agents and tasks sorted by id (code-point order), shape unchanged.

        Every loader returns this order, so results never depend on the row or column order of
        the file a bank came from (issue 13, defect 1). The bundled banks are stored in it.
        """
        rows = sorted(range(self.n_agents), key=self.agents.__getitem__)
        cols = sorted(range(self.n_tasks), key=self.tasks.__getitem__)
        if rows == list(range(self.n_agents)) and cols == list(range(self.n_tasks)):
            return self
        r, c = np.asarray(rows, dtype=int), np.asarray(cols, dtype=int)
        return ResponseMatrix(
            agents=tuple(self.agents[i] for i in r),
            tasks=tuple(self.tasks[j] for j in c),
            values=self.values[np.ix_(r, c)],
            missing=None if self.missing is None else self.missing[np.ix_(r, c)],
            source=self.source,
            trials=self.trials,
        )

    def fill_missing(self, value: int = 0) -> ResponseMatrix:
        """Copy with missing cells set to ``value`` (the leaderboard convention is 0).

        Warns (:class:`~hspr.errors.InputWarning`) about agents with no observed cell at all: filled
        with 0 each becomes an agent with score 0 that never ran; and about agents that ran fewer than
        half the tasks: their score is then mostly the fill (a new-user trial: an agent with 1 run of
        200 passed as an agent scoring 0.5 %)."""
        if self.missing is None:
            return self
        import warnings

        from ..errors import InputWarning

        runs = (~self.missing).sum(axis=1)
        fill = "unresolved" if value == 0 else value
        empty = [self.agents[i] for i in np.flatnonzero(runs == 0)]
        if empty:
            warnings.warn(f"{self.source}: {len(empty)} agent(s) have no run at all (every cell blank): "
                          f"{', '.join(map(repr, empty[:5]))}{' ...' if len(empty) > 5 else ''}; counting missing "
                          f"cells as {fill} makes each an agent with score "
                          f"{value} that never ran: drop the row if it never ran", InputWarning, stacklevel=2)
        few = np.flatnonzero((runs > 0) & (2 * runs < self.n_tasks))
        if few.size:
            shown = ", ".join(f"{self.agents[i]!r} ({runs[i]} of {self.n_tasks})" for i in few[:5])
            warnings.warn(f"{self.source}: {few.size} agent(s) ran fewer than half the tasks: {shown}"
                          f"{' ...' if few.size > 5 else ''}; counting missing cells as {fill} scores each mostly by "
                          "the tasks it did not run: add their runs, or drop those rows", InputWarning, stacklevel=2)
        vals = np.where(self.missing, value, self.values)
        return ResponseMatrix(self.agents, self.tasks, vals, None, self.source, self.trials)

    def require_complete(self, what: str = "this method") -> ResponseMatrix:
        """Return self, or raise DataError naming the first missing cell."""
        if self.missing is not None:
            r, c = np.argwhere(self.missing)[0]
            raise DataError(
                f"{self.source}: {self.n_missing} missing cell(s) among the {self.n_agents} agents it was given "
                f"(first: agent {self.agents[r]!r}, task "
                f"{self.tasks[c]!r}); {what} needs a complete matrix. Fill them with "
                f"ResponseMatrix.fill_missing(0) / --missing-as-zero (leaderboard convention) or drop those rows."
            )
        return self

    def digest(self) -> str:
        """SHA-256 (hex) over ids and values in this row and column order: identifies
        a bank version (live sessions, shipped configurations). The same data in another order
        has another digest; ``m.canonical().digest()`` is order-free (every file hspr reads is
        made canonical on loading; a matrix built in memory keeps the order it was given)."""
        h = hashlib.sha256()
        h.update("\x1f".join(self.agents).encode())
        h.update(b"\x1e")
        h.update("\x1f".join(self.tasks).encode())
        h.update(b"\x1e")
        h.update(np.ascontiguousarray(self.values).tobytes())
        if self.missing is not None:
            h.update(np.packbits(self.missing).tobytes())
        if self.trials is not None:
            h.update(f"trials={self.trials}".encode())
        return h.hexdigest()

    def __repr__(self) -> str:
        kind = "" if self.trials is None else f", trials={self.trials}"
        return f"ResponseMatrix({self.n_agents} agents x {self.n_tasks} tasks, missing={self.n_missing}{kind}, source={self.source!r})"


#: tabs, newlines and other control characters: an id holding one breaks every line- or tab-separated output
CONTROL_CHARS = re.compile(r"[\x00-\x1f\x7f]")
#: what an id holding one is told, after its name (every reader of ids says the same)
CONTROL_CHARS_FIX = ("holds a tab, newline or other control character; ids are written one per line and in tab-separated "
                     "lists: remove it")


def _check_unique(ids: tuple[str, ...], kind: str, src: str) -> None:
    where = "row" if kind == "agent" else "column"
    if CONTROL_CHARS.search("".join(ids)):  # one pass over all ids; only then find the first offender
        i, x = next((i, x) for i, x in enumerate(ids) if CONTROL_CHARS.search(x))
        raise DataError(f"{src}: {kind} id {x!r} ({where} {i + 1}) {CONTROL_CHARS_FIX}")
    odd = next(((i, x) for i, x in enumerate(ids) if not x or x != x.strip()), None)
    if odd is not None:  # files are read with ids stripped: the id would not survive write and read back
        i, x = odd
        raise DataError(f"{src}: {kind} id {x!r} ({where} {i + 1}) is " + ("empty" if not x.strip() else
                        "surrounded by white space") + "; every reader strips ids, so a bank written with it would "
                        "read back under another id: " + (f"give every {kind} a name" if not x.strip() else "strip it"))
    seen: dict[str, int] = {}
    for i, x in enumerate(ids):
        if x in seen:
            raise DataError(
                f"{src}: duplicate {kind} id {x!r} ({where}s {seen[x] + 1} and {i + 1}); {kind} ids must be unique"
            )
        seen[x] = i
