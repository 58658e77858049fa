"""Tables printed on a narrow terminal keep every cell whole (cli.display.print_table)."""

import io
import re

import pytest
from rich.table import Table

from hspr.cli.display import console, print_table

NUMBERS = [["3.153", "11.151 *", "0.828", "0.79", "8.35", "28"],
           ["2.964", "9.354 '", "0.806", "–", "–", "28"],
           ["12.960", "21.200", "0.920", "0.95", "17.48", "20"]]
HEADERS = ["MAE (pp)", "MaxErr (pp)", "Kendall τ_b", "90 % coverage", "mean width (pp)", "targets"]


def _table() -> Table:
    t = Table(title="Budget 10 % of tasks", caption="errors in pp")
    t.add_column("bank", no_wrap=True)
    t.add_column("method", no_wrap=True)
    for h in HEADERS:
        t.add_column(h, justify="right")
    for i, row in enumerate(NUMBERS):
        t.add_row("verified/bash-only", ["hspr_robust", "tinybench", "midrange_ridge"][i], *row, end_section=i == 1)
    return t


def _printed(width: int, keep: int = 2) -> str:
    buf = io.StringIO()
    print_table(console(file=buf, width=width, color_system=None), _table(), keep=keep)
    return buf.getvalue()


def _cells(text: str) -> list[str]:
    """The non-border text of every line, its cells split on the box characters."""
    return [c.strip() for line in text.splitlines() for c in re.split(r"[│┃]", line) if c.strip()]


@pytest.mark.parametrize("width", [40, 60, 80, 100])
def test_no_cell_is_cut_on_a_narrow_console(width):
    out = _printed(width)
    assert "…" not in out
    cells = _cells(out)
    firsts = {c.split()[0] for c in cells}
    for row in NUMBERS:  # every number whole, first in its cell (a mark may wrap below its number)
        for x in row:
            assert x.split(" ")[0] in firsts
    for label in ("verified/bash-only", "hspr_robust", "midrange_ridge"):
        assert label in cells
    # headers wrap at spaces but no word is cut
    words = {w for c in cells for w in c.split()}
    assert {"Kendall", "coverage", "MaxErr", "width"} <= words
    # the caption once, below the last block; the title above each block, later ones marked (a new-user trial)
    assert out.count("errors in pp") == 1 and out.count("Budget 10 % of tasks") == out.count("┏")
    assert out.count("(continued)") == out.count("┏") - 1


@pytest.mark.parametrize("width", [60, 80])
def test_narrow_console_splits_columns_into_blocks_repeating_the_labels(width):
    out = _printed(width)
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= width
    blocks = out.count("┏")
    assert blocks >= 2
    assert _cells(out).count("bank") == blocks  # the label columns head every block
    assert _cells(out).count("hspr_robust") == blocks


def test_wide_console_prints_the_table_as_rich_does():
    buf = io.StringIO()
    console(file=buf, width=200, color_system=None).print(_table())
    assert _printed(200) == buf.getvalue()


@pytest.mark.parametrize("width", [60, 80, 120])
def test_a_caption_longer_than_its_table_wraps_at_the_console_width(width):
    """A report's last block of columns is narrow; rich wrapped its long caption to that width, leaving "errors."
    alone on the last line."""
    caption = ("95 % percentile bootstrap CI; Wilcoxon signed-rank (zero_method='wilcox'); Holm over all rows; "
               "better / worse leave out targets with equal errors.")
    t = Table(title="A paired table whose title is longer than its two narrow columns", caption=caption)
    t.add_column("bank", no_wrap=True)
    t.add_column("MAE", justify="right")
    t.add_row("lite", "2.081")
    buf = io.StringIO()
    print_table(console(file=buf, width=width, color_system=None), t)
    lines = buf.getvalue().splitlines()
    assert lines[0].startswith("A paired table whose title")  # above the table, not centred in its width
    tail = lines[lines.index(next(x for x in lines if x.startswith("└"))) + 1:]
    assert " ".join(x.strip() for x in tail) == caption  # the caption whole, after the table
    assert len(tail) == -(-len(caption) // width) or len(tail) == -(-len(caption) // width) + 1  # console-wide lines
    assert all(len(x.split()) > 1 for x in tail)  # no word alone on a line


def test_labels_wider_than_the_console_are_printed_whole():
    out = _printed(20)
    assert "…" not in out
    assert "verified/bash-only" in _cells(out) and "midrange_ridge" in _cells(out)


def test_a_no_wrap_text_cell_stays_on_one_line():
    """A re-trial: '5.706 *' broke before its mark at 60-80 columns (a row of stars), an interval over two lines."""
    from rich.text import Text

    t = Table()
    t.add_column("bank", no_wrap=True)
    t.add_column("method", no_wrap=True)
    for h in ("MAE (pp)", "95 % CI (pp)", "Holm p"):
        t.add_column(h, justify="right")
    t.add_row("verified/bash-only", "hspr_robust", Text("5.706 *", no_wrap=True), Text("[-0.079, +0.283]", no_wrap=True),
              "1.000")
    for width in (40, 50, 60):
        buf = io.StringIO()
        print_table(console(file=buf, width=width, color_system=None), t)
        cells = _cells(buf.getvalue())
        assert "5.706 *" in cells and "[-0.079, +0.283]" in cells, buf.getvalue()


def _last_line(buf: io.StringIO) -> str:
    return re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "", buf.getvalue()).replace("\r", "\n").strip().splitlines()[-1]


@pytest.mark.parametrize("width", [20, 40, 50, 60, 79, 80, 120])
def test_a_progress_bar_keeps_its_counts_whole_on_a_narrow_terminal(width):
    """A trial: at 50 columns `hspr select`'s bar printed its counts and times as '1…' and '0:…'; a
    re-trial: at 20 columns, and after a resize, they were cut again."""
    from hspr.cli.display import progress_bar

    label = "select verified fold 3 (86 sources)"
    for first in (width, 160):  # drawn at this width from the start, or after a resize from 160 columns
        buf = io.StringIO()
        out = console(file=buf, width=first, force_terminal=True, color_system=None)
        with progress_bar(out) as prog:
            task = prog.add_task(label, total=480)
            prog.update(task, completed=170)
            prog.refresh()
            out.width = width
            prog.refresh()
        line = _last_line(buf)
        assert len(line) <= width
        assert " 170/480" in line  # the counts whole
        assert ("170/480 0:00:0" in line) == (width >= 40)  # and the time elapsed, where there is room
        assert line.startswith("select" if width >= 40 else "sel")
        assert (label in line) == (width >= 60)  # cut ("…") only when it must be (79 and 80 columns alike)
        assert ("-:--:--" in line) == (width >= 70)  # the time left, where there is room


def test_a_progress_bar_in_a_log_prints_plain_lines_as_it_goes():
    """A scripting trial: with stderr no terminal (a CI log) a replay printed nothing until it ended, where rich
    draws its bar once. A plain line is printed at an advance ``log_every`` seconds after the last; none on a
    terminal, and none before that time has passed."""
    from hspr.cli.display import progress_bar

    clock = iter(range(0, 1000, 10))  # each call 10 s later: the start, then one call per advance
    buf = io.StringIO()
    out = console(file=buf, width=80, force_terminal=False, color_system=None)
    with progress_bar(out, log_every=15, clock=lambda: float(next(clock))) as prog:
        task = prog.add_task("replay lite", total=8)
        for _ in range(8):
            prog.advance(task)
    lines = [ln for ln in buf.getvalue().splitlines() if ln.startswith("replay lite: ")]
    assert [ln.split(",")[0] for ln in lines] == ["replay lite: 2/8 (25 %)", "replay lite: 4/8 (50 %)",
                                                  "replay lite: 6/8 (75 %)", "replay lite: 8/8 (100 %)"], buf.getvalue()
    # a scale trial: `select` said 4/900 after 870 s and nothing of the 12 h left; the last line has nothing left
    assert all(re.fullmatch(r".*, \d+ s; about \d+(\.\d)? (s|min|h) left", ln) for ln in lines[:3]), lines
    assert re.fullmatch(r"replay lite: 8/8 \(100 %\), \d+ s", lines[3]), lines
    from hspr.progress import duration

    assert [duration(x) for x in (44.6, 119, 120, 870 * 896 / 4 / 100, 7199, 7200, 870 * 896 / 4)] == [
        "45 s", "119 s", "2 min", "32 min", "120 min", "2.0 h", "54.1 h"]
    # a new-user trial: the counts named no unit, and nothing was said while a total was unknown (replay's fits)
    clock = iter(range(0, 1000, 10))
    buf = io.StringIO()
    out = console(file=buf, width=80, force_terminal=False, color_system=None)
    with progress_bar(out, log_every=15, clock=lambda: float(next(clock))) as prog:
        task = prog.add_task("replay lite", total=None, unit="jobs (fold x method x seed)")
        for k in range(2):
            prog.update(task, description=f"replay lite: fitting {k}/2")
        prog.update(task, description="replay lite", completed=0, total=4)
        for _ in range(4):
            prog.advance(task)
    lines = [ln.rsplit(",", 1)[0] for ln in buf.getvalue().splitlines() if ln.startswith("replay lite:")]
    assert lines == ["replay lite: fitting 1/2", "replay lite: 1/4 jobs (fold x method x seed) (25 %)",
                     "replay lite: 3/4 jobs (fold x method x seed) (75 %)"], buf.getvalue()
    buf = io.StringIO()
    term = console(file=buf, width=80, force_terminal=True, color_system=None)
    with progress_bar(term, log_every=0) as prog:
        task = prog.add_task("replay lite", total=8)
        prog.advance(task)
    assert "replay lite: " not in buf.getvalue()


def test_a_long_step_in_a_log_says_it_still_runs(capsys):
    """A new-user trial: with stderr no terminal, a 42 s fit of `hspr live start` printed one line, then nothing until
    it ended. A line with the time so far is printed every ``log_every`` seconds, and none once the step has ended."""
    import time

    from hspr.cli.display import busy

    with busy("fitting x", log_every=0.05):
        time.sleep(0.3)
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == "fitting x ..." and lines[-1].startswith("... done in ")
    assert len(lines) >= 4 and all(re.fullmatch(r"\.\.\. \d+ s", ln) for ln in lines[1:-1]), lines
    time.sleep(0.15)
    assert capsys.readouterr().err == ""


def test_a_spinner_keeps_its_time_and_shows_warnings_after_it(tmp_path, monkeypatch):
    """A hostile trial: a 55-character path froze the spinner line (glyph and time cut), and a warning
    raised meanwhile was glued to a spinner frame."""
    import warnings

    from hspr.cli import display
    from hspr.errors import InputWarning

    buf = io.StringIO()
    monkeypatch.setattr(display, "console", lambda stderr=False, **kw: console(
        file=buf, width=80, force_terminal=True, color_system=None))
    path = tmp_path / "home" / "alice" / "projects" / "swebench" / "experiments" / "evaluation"
    path.mkdir(parents=True)
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = lambda message, *args, **kw: buf.write(f"warning: {message}\n")  # as stderr would
        with display.reading(path):
            warnings.warn("a suspect cell", InputWarning, stacklevel=1)
            assert "suspect" not in buf.getvalue()  # held while the spinner runs
    text, shown = buf.getvalue().rsplit("\x1b[?25h", 1)  # the spinner's end (the cursor shown again), then the rest
    assert "warning: a suspect cell" in shown and "suspect" not in text
    frames = [f for f in re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "", text).replace("\r", "\n").splitlines() if f.strip()]
    assert frames and all(len(f) <= 80 for f in frames)
    assert all(f.rstrip().endswith("(Ctrl-C stops) 0:00:00") for f in frames), frames  # the tail and the time whole
    # the path cut in its middle, the words before it whole
    assert all("reading every result file below /tmp" in f and "…" in f and "/evaluation (" in f for f in frames)


@pytest.mark.parametrize("width", [30, 40, 50, 80, 120])
def test_a_spinner_line_fits_with_wide_characters_and_narrow_terminals(tmp_path, monkeypatch, width):
    """A re-trial: with a path of wide (CJK) characters the line lost '(Ctrl-C stops)' and was cut at its
    end; at 40-60 columns the words and the path were both cut to 'read…elow …lb'."""
    from rich.cells import cell_len

    from hspr.cli import display

    path = tmp_path / "数据集合测试宽字符显示问题" / "experiments"
    path.mkdir(parents=True)
    buf = io.StringIO()
    monkeypatch.setattr(display, "console", lambda stderr=False, **kw: console(
        file=buf, width=width, force_terminal=True, color_system=None))
    with display.reading(path):
        pass
    frame = re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "", buf.getvalue()).replace("\r", "\n").split("\n")
    frame = [f for f in frame if f.strip()][0].rstrip()
    assert cell_len(frame) <= width and frame.endswith(" 0:00:00")
    assert frame.endswith("(Ctrl-C stops) 0:00:00") == (width >= 50)  # the tail goes before the words
    assert frame[2:].startswith("reading every result file below /" if width >= 80 else "reading /")
    assert "experiments" in frame or "…" in frame


@pytest.mark.parametrize("width", [80, 100, 120, 160])
def test_replay_summary_cells_of_several_words_stay_on_one_line(width):
    """A docs audit: replay's 'tasks run' cell printed '36.6 (100' above '% early)' (and the budget '100 (20' above
    '%)'); such cells stay whole on one line at any width, their headers wrapping instead."""
    import pandas as pd

    from hspr.cli.replay_cmd import summary_table

    summary = pd.DataFrame([{"bank": "verified/bash-only[stop 10 pp]", "method": m, "budget": 100, "budget_fraction": 0.2,
                             "mae_pp": 3.933, "maxerr_pp": 11.406, "kendall_tau_b": 0.78, "coverage_90": 0.75,
                             "mean_width_pp": 9.7, "n_targets": 28, "n_seeds": 1, "mean_tasks_run": run,
                             "stopped_early": early} for m, run, early in (("hspr_robust", 36.6, 1.0),
                                                                           ("uniform", 98.2, 0.07))])
    buf = io.StringIO()
    print_table(console(file=buf, width=width, color_system=None), summary_table(summary, "t"), keep=3)
    cells = _cells(buf.getvalue())
    assert cells.count("36.6 (100 % early)") == 1 and cells.count("98.2 (7 % early)") == 1, cells
    assert cells.count("100 (20 %)") >= 2 and not any(c in ("%)", "% early)", "early)") for c in cells)


def test_a_progress_bar_in_a_log_says_it_runs_when_nothing_advances():
    """A new-user trial: a replay of hspr_robust sat at 0 of 12 for 112 s, its log silent while the first fit's
    calibration ran. With the real clock a plain line is printed every ``log_every`` seconds without an advance,
    from a thread that ends with the bar; none on a terminal."""
    import threading
    import time

    from hspr.cli.display import progress_bar

    buf = io.StringIO()
    out = console(file=buf, width=80, force_terminal=False, color_system=None)
    with progress_bar(out, log_every=0.2) as prog:
        prog.add_task("replay lite", total=8)
        time.sleep(0.9)
    lines = [ln for ln in buf.getvalue().splitlines() if ln.startswith("replay lite: 0/8 (0 %), ")]
    assert 2 <= len(lines) <= 5, buf.getvalue()  # about one per 0.2 s of the 0.9 s
    assert not any(t.name == "hspr-progress-log" for t in threading.enumerate())  # ended with the bar
    after = buf.getvalue()
    time.sleep(0.3)
    assert buf.getvalue() == after
    buf = io.StringIO()
    with progress_bar(console(file=buf, width=80, force_terminal=True, color_system=None), log_every=0.1) as prog:
        prog.add_task("replay lite", total=8)
        time.sleep(0.3)
    assert "replay lite: " not in buf.getvalue()
