"""The terminal side of the commands: consoles, tables fitted to the terminal's width, progress bars and
spinners, and the one-line error print; no computation.
"""

from __future__ import annotations

import contextlib
import copy
import io
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

from ..fileio import (
    names_stdout,
)
from ..progress import time_left
from .meta import say_warning, to_null_device


def console(stderr: bool = False, **kwargs):
    """A rich Console whose closed pipe (``hspr banks | head -1``) is the CLI's quiet exit 0.

    rich's own answer to a reader that stopped reading is exit status 1, which fails a script
    under ``set -o pipefail`` although the command did its work; here the BrokenPipeError goes
    on to the CLI's handler (:meth:`hspr.cli.LazyGroup.invoke`) instead.
    """
    from rich.console import Console

    class _Console(Console):
        def on_broken_pipe(self) -> None:
            self.quiet = True
            raise BrokenPipeError

    return _Console(stderr=stderr, **kwargs)


def table_console(err, *outputs):
    """The console a command prints its result table on: ``err`` (stderr) when one of
    ``outputs`` (paths, or None) names stdout, so that stdout holds the file alone
    (``--out /dev/stdout > r.json``), else a new stdout console, 160 columns wide when piped.
    """
    if any(names_stdout(p) for p in outputs):
        return err
    return console(width=None if sys.stdout.isatty() else 160)


def _layout(out, table) -> tuple[list[tuple[int, int]], int]:
    """Per column of ``table`` its (narrowest, natural) content width on ``out``, and the width of
    the borders and padding: the narrowest rendering wraps headers and cells at spaces, except in
    a ``no_wrap`` column and a ``no_wrap`` Text cell."""
    from rich.measure import Measurement
    from rich.text import Text

    wide = out.options.update_width(10_000)  # rich clamps a measure to the console's width
    cols = []
    for c in table.columns:
        ms = [Measurement.get(out, wide, x) for x in (c.header, *c.cells)]
        hi = max(m.maximum for m in ms)
        # a cell that must stay on one line (a Text with no_wrap: a number and its mark, an interval) at its width
        lo = max(m.maximum if isinstance(x, Text) and x.no_wrap else m.minimum for m, x in zip(ms, (c.header, *c.cells)))
        cols.append((hi if c.no_wrap else lo, hi))
    return cols, out.measure(table, options=wide).maximum - sum(hi for _, hi in cols)


def _print_whole(out, table) -> None:
    """Print ``table`` with no cell cut short: where its natural width exceeds the console's, each
    column gets a fixed width, its narrowest rendering plus a share of the spare columns, left to
    right; a table whose narrowest rendering is wider than the console is printed uncropped at
    that width (the terminal wraps its lines).

    rich's own fitting shrinks the widest columns first, past their narrowest rendering, and
    crops what no longer fits: "Kendall τ_b" became "Kenda…" (a trial).
    """
    cols, extra = _layout(out, table)
    natural = sum(hi for _, hi in cols) + extra
    if natural <= out.width:
        _print_framed(out, table, natural, out.print)
        return
    spare = out.width - sum(lo for lo, _ in cols) - extra
    fixed = copy.copy(table)
    fixed.columns = []
    for (lo, hi), c in zip(cols, table.columns):
        c = copy.copy(c)
        give = min(max(spare, 0), hi - lo)
        spare -= give
        c.width = lo + give
        fixed.columns.append(c)
    total = sum(c.width for c in fixed.columns) + extra
    if total > out.width:  # rich would fit it to the console by cropping
        fixed.width = total
    _print_framed(out, fixed, total, lambda t: out.print(t, crop=False))


def _print_framed(out, table, width: int, show: Callable) -> None:
    """Show ``table`` (``width`` columns wide) by ``show``, its title above and caption below.

    rich wraps a title or caption to the table's width, so under a narrow table (a report's last
    block of columns) a long caption took four lines, the last holding one word ("errors.").
    One longer than the table is printed apart, left-aligned and wrapped at the console's width,
    in the style rich gives it (``table.title``, ``table.caption``).
    """
    from rich.text import Text

    def text(x, style: str) -> Text:
        t = x.copy() if isinstance(x, Text) else Text.from_markup(str(x))
        t.style = style
        return t

    title = caption = None
    if table.title is not None and text(table.title, "").cell_len > width:
        table, title = copy.copy(table), text(table.title, table.title_style or "table.title")
        table.title = None
    if table.caption is not None and text(table.caption, "").cell_len > width:
        table, caption = copy.copy(table), text(table.caption, table.caption_style or "table.caption")
        table.caption = None
    if title is not None:
        out.print(title)
    show(table)
    if caption is not None:
        out.print(caption)


def _min_width(out, table) -> int:
    cols, extra = _layout(out, table)
    return sum(lo for lo, _ in cols) + extra


def print_table(out, table, keep: int = 2) -> None:
    """Print a rich Table on ``out`` (a rich Console) without cutting any cell short.

    rich fits a table wider than the console by cropping cells, so on an 80-column terminal
    `hspr report` printed MAE "3…" (a trial). When the table's narrowest rendering (headers
    wrapped at spaces, no cell cut) is wider than the console, its columns after the first
    ``keep`` (the labels, e.g. bank and method) are printed in blocks, each repeating those
    ``keep`` columns, as pandas prints a wide frame; the title goes above the first block and the
    caption below the last. A block that cannot fit even one more column beside the labels gets
    it anyway (the terminal then wraps the lines; no cell is cut).

    Parameters
    ----------
    out : rich.console.Console
    table : rich.table.Table
    keep : int
        Leading columns repeated in every block.
    """
    if _min_width(out, table) <= out.width or len(table.columns) <= keep + 1:
        _print_whole(out, table)
        return

    from rich.text import Text

    def part(cols: list[int], first: bool, last: bool):
        sub = copy.copy(table)
        sub.columns = [table.columns[i] for i in cols]
        sub.title = table.title if first else None
        sub.caption = table.caption if last else None
        return sub

    rest = list(range(keep, len(table.columns)))
    blocks: list[list[int]] = []
    while rest:
        take = 1
        while take < len(rest) and _min_width(out, part(list(range(keep)) + rest[:take + 1], True, True)) <= out.width:
            take += 1
        blocks.append(rest[:take])
        rest = rest[take:]
    for k, cols in enumerate(blocks):
        sub = part(list(range(keep)) + cols, k == 0, k == len(blocks) - 1)
        if k and table.title:  # a new-user trial: a later block had no title to say what it belonged to
            sub.title = Text.assemble(table.title if isinstance(table.title, Text) else Text(str(table.title)),
                                      " (continued)")
        _print_whole(out, sub)


def _counts(task) -> str:
    """``done/total`` as rich's MofNCompleteColumn prints it (``?`` for an unknown total)."""
    return f"{int(task.completed)}/{'?' if task.total is None else int(task.total)}"


def _fit_columns(width: int, tasks) -> list:
    """The columns of :func:`progress_bar` for a console ``width`` columns wide: the counts always;
    the time elapsed from 40 columns, the bar from 40 (8-40 characters, as the longest description
    leaves room) and the time left from 70; the description gets the rest and is cut ("...") last."""
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn
    from rich.table import Column

    counts = max((len(_counts(t)) for t in tasks), default=3)
    tail = counts + 1 + (8 if width >= 40 else 0) + (8 if width >= 70 else 0)  # ' 0:00:00', ' -:--:--'
    longest = max((len(t.description) for t in tasks), default=0)
    bar = 0 if width < 40 else min(40, max(8, width - tail - longest - 1))
    room = max(4, width - tail - (bar + 1 if bar else 0))
    whole = Column(no_wrap=True)
    columns = [TextColumn("{task.description}", table_column=Column(no_wrap=True, overflow="ellipsis", max_width=room))]
    columns += [BarColumn(bar_width=bar)] if bar else []
    columns += [MofNCompleteColumn(table_column=whole)]
    columns += [TimeElapsedColumn(table_column=whole)] if width >= 40 else []
    columns += [TimeRemainingColumn(table_column=whole)] if width >= 70 else []
    return columns


class _Ticker:
    """Calls ``fn`` every ``seconds`` on a daemon thread named ``name``, from :meth:`start` until :meth:`stop` (which
    waits for the thread): the plain lines a log gets while a long step runs (:func:`progress_bar`, :func:`busy`)."""

    def __init__(self, seconds: float, fn: Callable[[], None], name: str) -> None:
        import threading

        self._quiet = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(seconds, fn), name=name, daemon=True)

    def _run(self, seconds: float, fn: Callable[[], None]) -> None:
        while not self._quiet.wait(seconds):
            fn()

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._quiet.set()
        self._thread.join()


def progress_bar(out, disable: bool = False, log_every: float = 30.0, clock: Callable[[], float] | None = None):
    """A rich ``Progress`` for a long job (description, bar, done/total, time elapsed, time left) that
    keeps its counts and times whole on a narrow terminal, laid out again at every refresh (a
    resized terminal too; :func:`_fit_columns`). rich's default cut them to "1..." and "0:..." at 50
    columns (a trial of ``hspr select``). ``out``: the rich Console it draws on.

    On a console that is no terminal (a CI log, ``2> log``), where rich would draw the bar only once, at
    the end (it is drawn on a console that keeps nothing instead), a plain line such as
    ``replay lite: 30/120 (25 %), 70 s; about 210 s left`` (the time left in proportion to the time so far; the
    task's ``unit`` field after the counts, if it has one; the
    description alone while its total is None) is printed at an advance at least
    ``log_every`` seconds after the previous line (or the start): a scripting trial's 20-minute replay
    was otherwise silent in its log until it ended. With the real clock (``clock`` None) the line is also
    printed when no advance came for ``log_every`` seconds, from a thread that ends with the bar (a new-user
    trial's replay of ``hspr_robust`` sat at 0 of 12 for 112 s, its log silent, while the first fit's
    calibration ran). ``clock``: the time in seconds (default ``time.monotonic``)."""
    import time

    from rich.progress import Progress

    now = clock or time.monotonic
    beats = clock is None and not disable and not out.is_terminal and log_every > 0

    class _Fitted(Progress):
        logged = now()
        _beat: _Ticker | None = None  # the thread of the plain lines

        def start(self) -> None:
            super().start()
            if beats and self._beat is None:
                self._beat = _Ticker(log_every / 4, self._beat_lines, "hspr-progress-log")
                self._beat.start()

        def stop(self) -> None:
            if self._beat is not None:
                self._beat.stop()
                self._beat = None
            super().stop()

        def _beat_lines(self) -> None:
            for task in list(self.tasks):
                if not task.finished:
                    self._log(task.id)

        def make_tasks_table(self, tasks):
            self.columns = tuple(_fit_columns(out.width, tasks))  # (self.console: not yet set on the first call)
            return super().make_tasks_table(tasks)

        def advance(self, task_id, advance: float = 1) -> None:
            super().advance(task_id, advance)
            self._log(task_id)

        def update(self, task_id, **kwargs) -> None:
            super().update(task_id, **kwargs)
            self._log(task_id)

        def _log(self, task_id) -> None:
            t = now()
            if self.disable or out.is_terminal or t - self.logged < log_every:
                return
            task = next((x for x in self.tasks if x.id == task_id), None)
            if task is None or (task.total is not None and not task.total):
                return
            self.logged = t
            if task.total is None:  # no count yet (replay's fits: a new-user trial's log was silent for their 65 s)
                out.print(f"{task.description}, {task.elapsed or 0:.0f} s", highlight=False, soft_wrap=True)
                return
            unit = task.fields.get("unit")  # what is counted (a new-user trial: "4/8" named no unit)
            spent = task.elapsed or 0
            # a scale trial: `select` at 4/900 after 870 s gave no idea of the 12 h to come (a terminal's bar shows it)
            left = time_left(spent, task.completed, task.total)
            out.print(f"{task.description}: {task.completed:g}/{task.total:g}{f' {unit}' if unit else ''} "
                      f"({100 * task.completed / task.total:.0f} %), {spent:.0f} s{left}", highlight=False,
                      soft_wrap=True)

    # in a log, the plain lines say it all: rich's one drawing of the bar at the end (its counts without their unit,
    # times of 0:00:00) goes to a console that keeps nothing (a re-trial; transient left a blank line instead)
    from rich.console import Console

    drawn = out if out.is_terminal else Console(file=io.StringIO(), width=out.width)
    return _Fitted(*_fit_columns(out.width, ()), console=drawn, disable=disable)


def _middle_cut(text: str, limit: int) -> str:
    """``text`` with its middle replaced by "…" to at most ``limit`` terminal cells (a path keeps its
    start and its last folders; a wide character such as 数 takes two cells: a re-trial lost the
    line's end to them)."""
    from rich.cells import cell_len

    if cell_len(text) <= limit:
        return text
    head_cells = max(limit - 1, 2) // 3
    head = ""
    for ch in text:
        if cell_len(head + ch) > head_cells:
            break
        head += ch
    tail = ""
    for ch in reversed(text):
        if cell_len(head + "…" + ch + tail) > limit:
            break
        tail = ch + tail
    return head + "…" + tail


#: cells of a :func:`busy` line besides its text: the spinner and ' 0:00:00'
_SPINNER_CELLS = 12


@contextlib.contextmanager
def busy(text: str, tail: str = "", log_every: float = 30.0) -> Iterator[None]:
    """Say on stderr that a long step runs: a spinner with the time elapsed on a terminal, else one
    line before, ``... 30 s`` every ``log_every`` seconds meanwhile, and one with the time taken after
    (a script's log or a CI job then shows what the command waited for, and how long).

    On a terminal the line keeps its spinner and time: ``text`` is cut in the middle to fit (a
    hostile trial: a long path froze the line, the time gone), ``tail`` (e.g. "(Ctrl-C stops)")
    kept whole; warnings raised inside are shown after the spinner is cleared (one printed meanwhile
    was glued to a spinner frame)."""
    import time

    from rich.markup import escape
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
    from rich.table import Column

    from ..errors import held_warnings

    err = console(stderr=True)
    if err.is_terminal:
        room = max(err.width - _SPINNER_CELLS, 8)
        if room - len(tail) - 1 < 12:  # too narrow for both: the text, not the tail (a re-trial: '… (Ctrl-C …')
            tail = ""
        line = _middle_cut(text, room - (len(tail) + 1 if tail else 0)) + (f" {tail}" if tail else "")
        columns = (SpinnerColumn(), TextColumn("{task.description}", table_column=Column(
            no_wrap=True, overflow="ellipsis", max_width=room)), TimeElapsedColumn(table_column=Column(no_wrap=True)))
        # said after the spinner, also when the step fails (through the caller's handler: a --json object's list)
        with held_warnings(), Progress(*columns, console=err, transient=True) as progress:
            progress.add_task(escape(line), total=None)  # an agent id such as 'x[bash-only]' is text, not markup
            yield
    else:
        def say(line: str) -> None:
            # a reader that stopped reading stderr (`hspr live start ... 2>&1 | head -1`) must not stop the work:
            # a trial's session was never written, with exit status 0; later lines go to the null device
            try:
                err.print(line, highlight=False, soft_wrap=True)
            except BrokenPipeError:
                import sys

                to_null_device(sys.stderr)

        say(f"{escape(text + (f' {tail}' if tail else ''))} ...")
        start = time.perf_counter()
        # a line every log_every seconds while it runs, as a replay's log (a new-user trial: a 42 s fit said nothing)
        beat = _Ticker(log_every, lambda: say(f"... {time.perf_counter() - start:.0f} s"), "hspr-busy-log")
        beat.start()
        try:
            yield
        finally:
            beat.stop()
        say(f"... done in {time.perf_counter() - start:.0f} s")


@contextlib.contextmanager
def reading(path: str | os.PathLike | None) -> Iterator[None]:
    """A spinner (:func:`busy`) while the folder ``path`` is searched for result files, on a terminal
    only: a whole tree is walked (a user's home folder takes minutes, and said nothing before); a
    file, no path, or stderr that is not a terminal (a script's log stays as it was) show nothing."""
    err = console(stderr=True)
    if path is not None and os.fspath(path) != "" and Path(path).is_dir() and err.is_terminal:
        tail = "(Ctrl-C stops)"
        room = err.width - _SPINNER_CELLS - 1 - len(tail)  # the spinner, the time, a space and the tail
        if room < 8 + 12:  # narrow: what is done, and where, before the tail
            tail, room = "", err.width - _SPINNER_CELLS
        # the words shorten before the path is cut to nothing (a re-trial: 'read…elow …lb' at 50 columns)
        what = "reading every result file below " if room >= 32 + 20 else "reading " if room >= 8 + 6 else ""
        shown = os.fspath(path).replace("\n", "\\n").replace("\r", "\\r")  # one line, whatever the name
        with busy(what + _middle_cut(shown, max(room - len(what), 8)), tail):
            yield
    else:
        yield


@contextlib.contextmanager
def input_warnings() -> Iterator[list[str]]:
    """Collect the :class:`~hspr.errors.InputWarning` messages raised inside, for a ``--json``
    object (``input_warnings``), and print every warning on stderr as one ``warning:`` line
    (each message once, :func:`say_warning`) as it is raised: before an error that follows it (a
    re-trial: held to the end, the warning came after the error it explains)."""
    import warnings

    from ..errors import InputWarning

    found: list[str] = []

    def show(message, category, filename, lineno, file=None, line=None):
        text = str(message)
        if issubclass(category, InputWarning) and text not in found:
            found.append(text)
        say_warning(text)

    with warnings.catch_warnings():
        warnings.simplefilter("always", InputWarning)
        warnings.showwarning = show
        yield found


def print_error(console, exc) -> None:
    """Print ``error: <message>`` on ``console`` unwrapped, with no rich markup read in the message."""
    from rich.markup import escape  # here only: importing rich.markup costs 20-40 ms of every live command

    console.print(f"[red]error:[/red] {escape(str(exc))}", highlight=False, soft_wrap=True)
