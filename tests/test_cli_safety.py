"""Nothing a user gave is overwritten or lost: outputs that name an input, --force, torn
records, full disks; and the refusals of repeated seeds / methods (found by a hostile trial)."""

from __future__ import annotations

import errno
import io
import json
import os
import re
import shlex
import shutil
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from hspr import journal
from hspr.cli import main, replay_cmd
from hspr.data.build import write_wide_csv

from .conftest import simulate_matrix, unread_fifo

FAST = {"n_nodes": 512, "n_draws": 4096}


@pytest.fixture()
def files(tmp_path):
    m, _ = simulate_matrix(12, 40, seed=3, rank=1)
    write_wide_csv(m, tmp_path / "bank.csv")
    (tmp_path / "cfg.json").write_text(json.dumps(FAST))
    return tmp_path


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def start(d, name="run.hspr", *extra):
    return run("live", "start", "--matrix", d / "bank.csv", "--config", d / "cfg.json", "--budget", 4,
               "--session", d / name, *extra)


def test_outputs_that_name_an_input_are_refused_and_the_input_is_kept(files):
    bank = (files / "bank.csv").read_bytes()
    res = run("replay", "--matrix", files / "bank.csv", "--methods", "uniform", "--seeds", 0, "--out", files / "bank.csv")
    assert res.exit_code == 2 and "is also --matrix" in res.output
    res = run("replay", "--matrix", files / "bank.csv", "--methods", "uniform", "--seeds", 0, "--out", files / "r.json",
              "--csv", files / "r.json")
    assert res.exit_code == 2 and "is also --out" in res.output
    res = run("live", "start", "--matrix", files / "bank.csv", "--budget", 4, "--session", files / "bank.csv", "--force")
    assert res.exit_code == 2 and "is also --matrix" in res.output
    assert (files / "bank.csv").read_bytes() == bank
    assert start(files).exit_code == 0
    session = (files / "run.hspr").read_bytes()
    for cmd in (["next", "--out"], ["plot", "--out"]):
        res = run("live", *cmd, files / "run.hspr", "--session", files / "run.hspr")
        assert res.exit_code == 2 and "is also the session file" in res.output, res.output
        assert (files / "run.hspr").read_bytes() == session
    res = run("live", "next", "--out", files / "bank.csv", "--session", files / "run.hspr")
    assert res.exit_code == 2 and "the session's bank matrix" in res.output
    assert (files / "bank.csv").read_bytes() == bank


def test_no_output_replaces_another_live_session_file_of_any_name(files):
    """A hostile trial: `live next --out other.hspr` and `replay --out live.json` replaced another
    session's journal (its paid-for outcomes) without a copy."""
    assert start(files).exit_code == 0
    assert start(files, "live.json").exit_code == 0
    other = files / "live.json"
    task = run("live", "next", "--session", other).output.split()[0]
    assert run("live", "record", task, "resolved", "--session", other).exit_code == 0
    kept = other.read_bytes()
    attempts = [
        ("live", "next", "--out", other, "--session", files / "run.hspr"),
        ("replay", "--matrix", files / "bank.csv", "--methods", "uniform", "--seeds", 0, "--out", other),
        ("replay", "--matrix", files / "bank.csv", "--methods", "uniform", "--seeds", 0, "--out", files / "r.json",
         "--csv", other),
        ("select", "--matrix", files / "bank.csv", "--fold", 0, "--out", other),
    ]
    for args in attempts:
        res = run(*args)
        assert res.exit_code == 2 and "is an hspr live session file" in res.output, (args, res.output)
        assert other.read_bytes() == kept
    legacy = files / "legacy.txt"  # an old one-object session, its format key last and far from the start
    legacy.write_text(json.dumps({"pad": "x" * 70000, "format": journal.FORMAT}))
    res = run("replay", "--matrix", files / "bank.csv", "--methods", "uniform", "--seeds", 0, "--out", legacy)
    assert res.exit_code == 2 and "is an hspr live session file" in res.output
    res = run("replay", "--matrix", files / "bank.csv", "--methods", "uniform", "--seeds", 0, "--out", files / "r.json")
    assert res.exit_code == 0, res.output
    res = run("replay", "--matrix", files / "bank.csv", "--methods", "uniform", "--seeds", 0, "--out", files / "r.json")
    assert res.exit_code == 0, res.output  # a replay's own results file may be replaced

    # a hostile trial: `report --out-dir` replaced a session file named like one of its tables
    rep = files / "rep"
    rep.mkdir()
    shutil.copy(other, rep / "paired.csv")
    res = run("report", files / "r.json", "--out-dir", rep, "--no-figures")
    assert res.exit_code == 2 and f"{rep / 'paired.csv'} is an hspr live session file" in " ".join(res.output.split())
    assert (rep / "paired.csv").read_bytes() == kept and not (rep / "comparison.md").exists()
    shutil.copy(other, rep / "coverage.svg")  # a figure's name, only when figures are written
    (rep / "paired.csv").unlink()
    assert run("report", files / "r.json", "--out-dir", rep, "--no-figures").exit_code == 0
    assert run("report", files / "r.json", "--out-dir", rep).exit_code == 2
    assert (rep / "coverage.svg").read_bytes() == kept
    res = run("report", rep / "comparison.csv", "--out-dir", rep, "--no-figures")  # the results file it reads
    assert res.exit_code == 2 and "is the results file" in res.output
    # a hostile trial: a user's files named like the report's were replaced without a word; an earlier report's are
    # replaced (the run above wrote the tables), an empty file too
    assert run("report", files / "r.json", "--out-dir", rep, "--no-figures").exit_code == 0
    (rep / "coverage.svg").unlink()
    for name, text in (("comparison.md", "# My hand-written notes\n"), ("paired.csv", "id,name\n"), ("coverage.png", "not a png")):
        before = {n.name: n.read_bytes() for n in rep.iterdir()}
        (rep / name).write_text(text)
        res = run("report", files / "r.json", "--out-dir", rep)
        assert res.exit_code == 2 and f"{rep / name} exists and is not the {name} of an hspr report; it is not replaced" \
            in " ".join(res.output.split()), res.output
        assert (rep / name).read_text() == text
        (rep / name).write_bytes(before.get(name, b""))
    # a re-trial: a `replay --csv` summary (no ranks) is not a report's comparison.csv
    (rep / "comparison.csv").unlink()
    res = run("replay", "--matrix", files / "bank.csv", "--methods", "uniform", "--seeds", 0, "--csv", rep / "comparison.csv")
    assert res.exit_code == 0, res.output
    res = run("report", files / "r.json", "--out-dir", rep)
    assert res.exit_code == 2 and "comparison.csv of an hspr report" in " ".join(res.output.split())
    (rep / "comparison.csv").unlink()
    # and a file of a figure this report does not write (budget curves of one budget) is neither refused nor called
    # an earlier report's
    (rep / "budget_curves.png").write_text("my own")
    res = run("report", files / "r.json", "--out-dir", rep)
    assert res.exit_code == 0 and "earlier report" not in res.output and (rep / "budget_curves.png").read_text() == "my own"
    assert (rep / "coverage.png").read_bytes().startswith(b"\x89PNG")
    # a real figure of another program under a figure's name (a screenshot, a matplotlib figure of one's own, an
    # Inkscape drawing) is refused; an hspr figure written before hspr named itself (no Software text) is replaced
    import io

    from matplotlib.figure import Figure

    from hspr.report.runplot import is_figure_file

    assert is_figure_file(rep / "coverage.png") and is_figure_file(rep / "coverage.svg")  # this report's, named
    theirs, older = io.BytesIO(), io.BytesIO()
    Figure().savefig(theirs, format="png")  # matplotlib names itself
    Figure().savefig(older, format="png", dpi=150, metadata={"Software": None})  # as hspr wrote its figures before
    inkscape = '<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg" xmlns:inkscape="x"><g/></svg>\n'
    # and (its re-trial) the program's name in a chunk after the image data, in a compressed or international text
    # chunk, one that starts with 'hspr'; a cut PNG; matplotlib's creator block in an Inkscape SVG's comment, a fork
    import struct
    import zlib

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    raw, end = older.getvalue(), older.getvalue().rindex(b"IEND") - 4
    svg = io.StringIO()
    Figure().savefig(svg, format="svg", metadata={"Date": None})
    cases = [("coverage.png", theirs.getvalue()), ("coverage.svg", inkscape.encode()),
             ("coverage.png", raw[:end] + chunk(b"tEXt", b"Software\0GIMP") + raw[end:]),
             ("coverage.png", raw[:33] + chunk(b"zTXt", b"Software\0\0" + zlib.compress(b"GIMP")) + raw[33:]),
             ("coverage.png", raw[:33] + chunk(b"iTXt", b"Software\0\0\0\0\0GIMP") + raw[33:]),
             ("coverage.png", raw[:33] + chunk(b"tEXt", b"Software\0hspr-like screenshot tool") + raw[33:]),
             ("coverage.png", raw[:30]),
             ("coverage.svg", svg.getvalue().replace("Matplotlib v", "Matplotlibby fork v").encode()),
             ("coverage.svg", inkscape.replace("<g/>", f"<!-- {svg.getvalue().split('<metadata>')[1]} --><g/>").encode())]
    # and (a second re-trial) a PNG with no program name but not laid out as hspr's (another resolution, text of
    # its own, EXIF, a chunk after IEND), and a matplotlib SVG saved with its defaults (dated)
    dpi100, dated = io.BytesIO(), io.BytesIO()
    Figure().savefig(dpi100, format="png", metadata={"Software": None})
    Figure().savefig(dated, format="svg")
    cases += [("coverage.png", dpi100.getvalue()),
              ("coverage.png", raw[:33] + chunk(b"tEXt", b"Title\0my plot") + raw[33:]),
              ("coverage.png", raw[:33] + chunk(b"eXIf", b"MM\0*\0\0\0\x08") + raw[33:]),
              ("coverage.png", raw + chunk(b"tEXt", b"Software\0GIMP")),
              ("coverage.svg", dated.getvalue())]
    for name, data in cases:
        before = (rep / name).read_bytes()
        (rep / name).write_bytes(data)
        res = run("report", files / "r.json", "--out-dir", rep)
        assert res.exit_code == 2 and f"{rep / name} exists and is not the {name} of an hspr report" \
            in " ".join(res.output.split()), res.output
        assert (rep / name).read_bytes() == data
        (rep / name).write_bytes(before)
    (rep / "coverage.png").write_bytes(older.getvalue())
    assert run("report", files / "r.json", "--out-dir", rep).exit_code == 0
    assert (rep / "coverage.png").read_bytes() != older.getvalue() and is_figure_file(rep / "coverage.png")


def test_outputs_never_overwrite_the_files_a_session_was_started_from(files):
    from hspr.data.io import load_matrix

    tasks = list(load_matrix(files / "bank.csv").tasks[:30])
    (files / "subset.txt").write_text("\n".join(tasks) + "\n")
    kept = {n: (files / n).read_bytes() for n in ("subset.txt", "cfg.json")}
    assert start(files, "run.hspr", "--tasks", files / "subset.txt").exit_code == 0
    for name, what in (("subset.txt", "--tasks"), ("cfg.json", "--config")):
        for cmd in ("next", "plot"):
            res = run("live", cmd, "--out", files / name, "--session", files / "run.hspr")
            # plot refuses a name that is no .png or .svg before it reads the session (and its inputs)
            why = f"the session's {what} file" if cmd == "next" else "the figure is written as .png or .svg"
            assert res.exit_code == 2 and why in res.output, res.output
            assert (files / name).read_bytes() == kept[name]
    assert run("live", "next", "--out", files / "ids.txt", "--session", files / "run.hspr").exit_code == 0
    assert (files / "ids.txt").read_text().split()[0] in tasks


def test_force_keeps_the_replaced_session_beside_the_new_one(files):
    assert start(files).exit_code == 0
    task = run("live", "next", "--session", files / "run.hspr").output.split()[0]
    assert run("live", "record", task, "resolved", "--session", files / "run.hspr").exit_code == 0
    old = (files / "run.hspr").read_bytes()
    res = start(files, "run.hspr", "--force")
    assert res.exit_code == 0, res.output
    kept = list(files.glob("run.hspr.replaced-*"))
    assert len(kept) == 1 and kept[0].read_bytes() == old and str(kept[0]) in res.output
    assert journal.read(files / "run.hspr").doc["events"] == []
    assert start(files, "run.hspr", "--force").exit_code == 0  # again, within the same second or not
    kept = sorted(files.glob("run.hspr.replaced-*"))
    assert len(kept) == 2 and old in [k.read_bytes() for k in kept]


def test_a_torn_last_record_is_named_and_its_bytes_kept(files):
    assert start(files).exit_code == 0
    path = files / "run.hspr"
    task = run("live", "next", "--session", path).output.split()[0]
    assert run("live", "record", task, "resolved", "--session", path).exit_code == 0
    raw = path.read_bytes()
    path.write_bytes(raw[:-10])  # the tell record loses its end
    status = run("live", "status", "--session", path, "--json")
    warning = json.loads(status.stdout.splitlines()[-1])["warnings"][0]
    assert f"incomplete record for task {task!r}" in warning and "had printed its result, run it again" in warning
    after = run("live", "record", task, "unresolved", "--session", path, "--json")
    assert after.exit_code == 0
    warning = json.loads(after.stdout.splitlines()[-1])["warnings"][0]
    assert f"for task {task!r}, which was ignored; its bytes were moved to run.hspr.torn" in warning
    torn = journal.torn_path(path).read_bytes()
    assert torn == raw[raw.rstrip(b"\n").rfind(b"\n") + 1:-10] + b"\n"  # the cut record, byte for byte



def test_plain_commands_say_a_torn_record_on_stderr_and_keep_stdout_for_the_result(files):
    """A hostile trial: plain `live next` moved a torn record aside without a word, and `status` /
    `record` printed their warnings on stdout among the status a script reads."""
    assert start(files).exit_code == 0
    path = files / "run.hspr"
    first, second = run("live", "next", "--batch", 2, "--session", path).output.split()
    assert run("live", "record", first, "resolved", "--session", path).exit_code == 0
    raw = path.read_bytes()
    path.write_bytes(raw[:-10])
    status = run("live", "status", "--session", path)
    assert status.exit_code == 0 and "warning" not in status.stdout
    assert f"warning: the session file ended in an incomplete record for task {first!r}" in status.stderr
    nxt = run("live", "next", "--session", path)
    assert nxt.exit_code == 0 and nxt.stdout.split() == [first]  # the torn tell is not an outcome: asked again
    assert "warning:" in nxt.stderr and f"{first!r}" in nxt.stderr
    rec = run("live", "record", first, "unresolved", "--session", path)
    assert rec.exit_code == 0 and "warning" not in rec.stdout
    assert "its bytes were moved to run.hspr.torn" in rec.stderr and journal.torn_path(path).exists()
    raw = path.read_bytes()
    path.write_bytes(raw[:-10])  # torn again: plot says so too (a review)
    plot = run("live", "plot", "--out", files / "p.png", "--session", path)
    assert plot.exit_code == 0 and "warning: the session file ended in an incomplete record" in plot.stderr


def test_a_failed_results_write_saves_the_runs_elsewhere(files, monkeypatch, tmp_path_factory):
    spare_dir = tmp_path_factory.mktemp("spare")
    monkeypatch.setenv("TMPDIR", str(spare_dir))
    monkeypatch.setattr("tempfile.tempdir", None)
    real = replay_cmd.write_json_durable

    def full_disk(obj, path):
        if path.name == "r.json":
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        real(obj, path)

    monkeypatch.setattr(replay_cmd, "write_json_durable", full_disk)
    res = run("replay", "--matrix", files / "bank.csv", "--methods", "uniform", "--seeds", 0, "--out", files / "r.json",
              "-q")
    assert res.exit_code == 2 and "No space left on device" in res.output and "r.json" in res.output
    spare = list(spare_dir.glob("hspr-results-*.json"))
    assert len(spare) == 1 and str(spare[0]) in res.output.replace("\n", "")
    runs = json.loads(spare[0].read_text())["runs"]
    assert len(runs) == 12 and all(r["method"] == "uniform" for r in runs)
    assert not (files / "r.json").exists()


def test_a_dangling_link_as_out_makes_no_folders(files, tmp_path, monkeypatch):
    """A hostile trial: `--out dang.json`, a link to a file in a folder that does not exist, created that folder
    (at the file system's root for /nonexistent/x.json) and wrote there; a link into a folder that exists is
    written through."""
    from hspr.fileio import write_text_durable

    target = tmp_path / "gone" / "deeper" / "x.json"
    link = tmp_path / "dang.json"
    link.symlink_to(target)
    with pytest.raises(FileNotFoundError, match="a link to a file whose folder does not exist"):
        write_text_durable("{}", link)
    assert not (tmp_path / "gone").exists() and link.is_symlink()
    (tmp_path / "spare").mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp_path / "spare"))  # where the runs went when it was refused after the replay
    monkeypatch.setattr("tempfile.tempdir", None)
    res = run("replay", "--matrix", files / "bank.csv", "--methods", "uniform", "--seeds", 0, "--out", link, "-q")
    said = " ".join(res.output.split())
    # refused before the replay since a re-trial (a link into a folder that takes no file was refused after it)
    assert res.exit_code == 2 and f"cannot write {link}: it is a link to {target}, whose folder does not exist" in said
    assert not (tmp_path / "gone").exists() and list((tmp_path / "spare").iterdir()) == []
    (tmp_path / "gone" / "deeper").mkdir(parents=True)
    write_text_durable("{}", link)
    assert target.read_text() == "{}" and link.is_symlink()


@pytest.mark.parametrize("option, value, message", [
    ("--seeds", "1,1", "given twice"),
    ("--seeds", "0,,1", "an empty seed between commas"),
    ("--seeds", " ", "no seeds given"),
    ("--seeds", "0-99999999999", "at most 1000"),
    ("--methods", "uniform,uniform", "given twice: uniform"),
    ("--budget", "50", "not task counts"),
])
def test_replay_refuses_repeats_and_counts_with_the_value_named(files, option, value, message):
    args = {"--seeds": "0", "--methods": "uniform", "--budget": "0.1", option: value}
    res = run("replay", "--matrix", files / "bank.csv", *np.ravel(list(args.items())))
    assert res.exit_code == 2 and message in res.output, res.output


def test_stop_width_none_removes_the_saved_width(files):
    assert start(files, "run.hspr", "--stop-width", "5").exit_code == 0
    res = run("live", "status", "--stop-width", "none", "--session", files / "run.hspr", "--json")
    assert res.exit_code == 0 and json.loads(res.stdout.splitlines()[-1])["stop_width_pp"] is None
    assert journal.read(files / "run.hspr").doc["stop_width_pp"] is None


def test_an_os_error_in_any_command_is_a_message_not_a_traceback():
    from hspr.cli import LazyGroup

    group = LazyGroup("hspr")

    @group.command("write")
    def write():
        raise OSError(errno.ENOSPC, "No space left on device", "rep/comparison.md")

    res = CliRunner().invoke(group, ["write"])
    assert res.exit_code == 2 and (res.exception is None or isinstance(res.exception, SystemExit))
    assert res.output.startswith("error: rep/comparison.md: No space left on device; free space")


@pytest.mark.parametrize("code, fix", [(errno.EACCES, "; fix the file's permissions, then"),
                                       (errno.EFBIG, "; free space, or raise the file size limit (ulimit -f), then"),
                                       (errno.ELOOP, "; fix the symbolic link"), (errno.EIO, "; free space, fix the")])
def test_an_os_error_message_gives_the_fix_its_cause_calls_for(code, fix):
    """A hostile trial: a permission-denied read was told to free space."""
    from hspr.cli.outputs import os_error_message

    msg = os_error_message(OSError(code, os.strerror(code), "in.csv"))
    assert msg.startswith(f"in.csv: {os.strerror(code)}") and fix in msg
    assert os_error_message(OSError(code, os.strerror(code)), "out_dir").startswith("out_dir: ")  # no file in it
    # a crash-safety trial: with no name at all (a full disk under stdout) it read as if the session's disk were full
    assert os_error_message(OSError(code, os.strerror(code))).startswith("writing this command's output (stdout, or")


def test_a_permission_error_on_a_folder_names_the_folder(tmp_path):
    """A trial: a folder that could not be read was told to 'fix the file's permissions'."""
    from hspr.cli.outputs import os_error_message

    assert "; fix the folder's permissions, then" in os_error_message(PermissionError(errno.EACCES, "no", str(tmp_path)))
    assert "; fix the file's permissions, then" in os_error_message(PermissionError(errno.EACCES, "no", "in.csv"))


def test_a_permission_error_in_a_folder_that_cannot_be_entered_names_that_folder(tmp_path, monkeypatch):
    """A re-trial (as a user without root): a session's bank in a folder it could not enter (chmod 700, another
    owner) was told to fix the file's permissions. Root enters any folder: the check is given the user's answer."""
    from hspr.cli import outputs

    monkeypatch.setattr(outputs.os, "access", lambda path, mode: path != str(tmp_path / "sub"))
    said = outputs.os_error_message(PermissionError(errno.EACCES, "Permission denied", str(tmp_path / "sub" / "b.csv")))
    assert said.endswith(f"Permission denied; fix the permissions of its folder {tmp_path / 'sub'} (it cannot be "
                         "entered), then run the command again")


def test_an_operation_not_permitted_names_the_immutable_flag():
    """A crash-safety trial: `start --force` over an immutable file (chattr +i) was told to fix its permissions,
    which root's chmod cannot."""
    from hspr.cli.outputs import os_error_message

    assert "chattr -i" in os_error_message(OSError(errno.EPERM, os.strerror(errno.EPERM), "run.hspr"))


def test_report_names_its_output_folder_when_a_write_fails_without_a_file_name(tmp_path, monkeypatch):
    """A hostile trial: `report` under `ulimit -f 1` said 'error: File too large' and named no file."""
    import hspr.report

    def full(*args, **kwargs):
        raise OSError(errno.EFBIG, "File too large")

    res_file = tmp_path / "r.json"
    res_file.write_text(json.dumps({"runs": [{"bank": "b", "method": "m", "fold": 0, "target": "a", "seed": 0,
                                              "budget": 1, "budget_fraction": 0.5, "estimate": 0.5, "truth": 0.5}]}))
    monkeypatch.setattr(hspr.report, "write_report", full)  # `hspr report` imports it when it runs
    res = CliRunner().invoke(main, ["report", str(res_file), "--out-dir", str(tmp_path / "rep")])
    assert res.exit_code == 2 and f"{tmp_path / 'rep'}: File too large; free space, or raise" in " ".join(res.output.split())


def test_ingest_csv_header_forms_and_widths(files):
    assert start(files).exit_code == 0
    session = files / "run.hspr"
    task = run("live", "next", "--session", session).output.split()[0]
    (files / "empty.csv").write_text("task_id,resolved\n")
    res = run("live", "ingest", files / "empty.csv", "--session", session)
    assert res.exit_code == 2 and "no outcome lines under the header" in res.output
    (files / "wide.csv").write_text(f"task_id,resolved\n{task},1,extra\n")
    res = run("live", "ingest", files / "wide.csv", "--session", session)
    assert res.exit_code == 2 and "line 2 has 3 field(s); expected 2 as in the header" in res.output
    (files / "ok.csv").write_text(f"task_id,resolved\n{task},1\n")  # task_id names the id column, like instance_id
    res = run("live", "ingest", files / "ok.csv", "--session", session, "--json")
    assert res.exit_code == 0, res.output
    assert journal.read(session).doc["events"][-1]["task"] == task


def test_an_unknown_task_in_the_tasks_file_names_the_file(files):
    (files / "tasks.txt").write_text("no-such-task\n")
    res = run("replay", "--matrix", files / "bank.csv", "--methods", "uniform", "--seeds", 0, "--tasks",
              files / "tasks.txt")
    assert res.exit_code == 2 and f"--tasks {files / 'tasks.txt'}" in res.output.replace("\n", "")
    res = run("live", "start", "--matrix", files / "bank.csv", "--budget", 2, "--tasks", files / "tasks.txt",
              "--session", files / "t.hspr")
    assert res.exit_code == 2 and "no-such-task" in res.output and not (files / "t.hspr").exists()


def test_a_closed_pipe_ends_the_command_quietly(tmp_path):
    import subprocess
    import sys

    # ~600 KB of output: far more than a pipe buffer holds, so the writer meets the closed pipe
    rows = "".join(f"{'agent-' + str(i).zfill(60)},{i % 2},1\n" for i in range(10_000))
    (tmp_path / "big.csv").write_text("agent,t1,t2\n" + rows)
    p = subprocess.Popen([sys.executable, "-c", "from hspr.cli import main; main()", "bank", "agents",
                          str(tmp_path / "big.csv")], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert p.stdout.readline().startswith(b"agent")
    p.stdout.close()  # as `| head -1` does
    assert p.wait(timeout=60) == 0
    assert p.stderr.read() == b""


def test_the_top_level_help_into_a_closed_pipe_or_a_full_disk_is_no_failure_or_traceback(tmp_path):
    """A scripting trial: `hspr --help | true` and `hspr --version | true` exited 1 (click's own handling of a
    closed pipe, where every command exits 0), and `hspr --help > /dev/full` ended in a traceback."""
    import subprocess
    import sys

    for flag in ("--help", "--version"):
        done = subprocess.run(f"{shlex.quote(sys.executable)} -m hspr {flag} | true; echo \"${{PIPESTATUS[0]}}\"",
                              shell=True, executable="/bin/bash", capture_output=True, text=True, timeout=60)
        assert done.stdout.split() == ["0"] and done.stderr == "", (flag, done)
        if Path("/dev/full").exists():
            with open("/dev/full", "w") as full:
                done = subprocess.run([sys.executable, "-m", "hspr", flag], stdout=full, stderr=subprocess.PIPE,
                                      text=True, timeout=60)
            assert done.returncode == 2 and done.stderr.startswith("error: writing this command's output") \
                and "Traceback" not in done.stderr, (flag, done.stderr)





def test_a_report_folder_holding_a_flagged_file_of_its_names_is_refused_before_anything_is_written(files, monkeypatch):
    """A second re-trial: an append-only coverage.png was found after the work, with half the report replaced. The
    flag is named with the fix on the file's real path, and nothing is written."""
    from hspr import fileio

    assert run("replay", "--matrix", files / "bank.csv", "--methods", "uniform", "--seeds", 0, "--out",
               files / "r.json").exit_code == 0
    rep = files / "rep"
    assert run("report", files / "r.json", "--out-dir", rep, "--no-figures").exit_code == 0
    before = {f.name: f.read_bytes() for f in rep.iterdir()}
    for bit, words, fix in ((fileio.APPEND_FLAG, "append-only (chattr +a)", "chattr -a"),
                            (fileio.IMMUTABLE_FLAG, "immutable (chattr +i)", "chattr -i")):
        monkeypatch.setattr(fileio, "inode_flags", lambda path, bit=bit: bit if Path(path).name == "paired.md" else 0)
        res = run("report", files / "r.json", "--out-dir", rep, "--no-figures", "--seed", 1)
        said = " ".join(res.output.split())
        assert res.exit_code == 2 and f"paired.md is {words}, so the report cannot replace it (nothing was written): " \
            f"clear the flag ({fix} {os.path.realpath(rep / 'paired.md')})" in said, said
        assert {f.name: f.read_bytes() for f in rep.iterdir()} == before

def test_output_checks_see_flags_links_existing_folders_and_a_closed_stdout(tmp_path, monkeypatch):
    """A re-trial of the folder test (as root): an append-only folder took the test file (O_TMPFILE) and the write
    failed after the work, leaving its temporary file; an immutable file passed; a link into a folder that takes no
    file was tested at the link's folder; an existing --out-dir was not tested; `--out /dev/stdout` with stdout
    closed (>&-) wrote the results to the null device and said it wrote them. Each is refused before any work; and
    /dev/stdout passes where os.access calls /dev not writable (any user but root)."""
    import subprocess
    import sys
    import tempfile

    import click

    from hspr import fileio
    from hspr.cli import outputs

    (tmp_path / "ap").mkdir()
    (tmp_path / "kept.json").write_text("{}")
    flagged = {str(tmp_path / "ap"): fileio.APPEND_FLAG, str(tmp_path / "kept.json"): fileio.IMMUTABLE_FLAG}
    monkeypatch.setattr(fileio, "inode_flags", lambda path: flagged.get(str(path), 0))
    with pytest.raises(click.BadParameter, match=r"the folder .*ap is append-only \(chattr \+a\).*chattr -a "):
        outputs.check_output_file(tmp_path / "ap" / "x.json", "--out")
    with pytest.raises(click.BadParameter, match=r"the folder .*ap is append-only"):
        outputs.check_output_dir(tmp_path / "ap", "--out-dir")
    with pytest.raises(click.BadParameter, match=r"the file .*kept.json is immutable \(chattr \+i\).*chattr -i "):
        outputs.check_output_file(tmp_path / "kept.json", "--out")
    assert list((tmp_path / "ap").iterdir()) == []

    (tmp_path / "sys").mkdir()
    (tmp_path / "link.json").symlink_to(tmp_path / "sys" / "new.json")
    real = tempfile.TemporaryFile

    def no_file_in_sys(*args, dir=None, **kwargs):
        if Path(dir) == tmp_path / "sys":
            raise PermissionError(errno.EACCES, "Permission denied")
        return real(*args, dir=dir, **kwargs)

    monkeypatch.setattr(tempfile, "TemporaryFile", no_file_in_sys)
    with pytest.raises(click.BadParameter, match=r"cannot write .*link.json \(a link to .*new.json\): a test file could "
                                                 r"not be made in the folder .*sys"):
        outputs.check_output_file(tmp_path / "link.json", "--out")
    with pytest.raises(click.BadParameter, match=r"a test file could not be made in the folder .*sys"):
        outputs.check_output_dir(tmp_path / "sys", "--out-dir")
    (tmp_path / "gone.json").symlink_to(tmp_path / "nowhere" / "x.json")
    with pytest.raises(click.BadParameter, match=r"it is a link to .*x.json, whose folder does not exist"):
        outputs.check_output_file(tmp_path / "gone.json", "--out")
    outputs.check_output_file(tmp_path / "fine.json", "--out")

    monkeypatch.setattr(outputs.os, "access", lambda path, mode: not str(path).startswith("/dev"))
    assert outputs.check_output_file("/dev/stdout", "--out") == Path("/dev/stdout")
    # spelled another way, still the descriptor, not a path whose folder is tested (a trial)
    assert outputs.check_output_file("/dev/../dev/stdout", "--out") == Path("/dev/../dev/stdout")
    from hspr.fileio import descriptor_of
    monkeypatch.chdir("/dev")
    assert [descriptor_of(p) for p in ("/dev/../dev/stdout", "//dev/stdout", "/dev//fd/7", "stdout", "fd/3", "/dev/x")] \
        == [1, 1, 7, 1, 3, None]
    monkeypatch.chdir(tmp_path)
    assert descriptor_of("stdout") is None
    (tmp_path / "gone").mkdir()
    monkeypatch.chdir(tmp_path / "gone")
    (tmp_path / "gone").rmdir()  # a working folder removed: no error, a relative path names no descriptor
    assert descriptor_of("stdout") is None and descriptor_of("/dev/stdout") == 1
    monkeypatch.chdir(tmp_path)

    done = subprocess.run(f"{shlex.quote(sys.executable)} -m hspr bank build terminal-bench --out /dev/stdout >&-",
                          shell=True, executable="/bin/bash", capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "standard output was closed when hspr started" in done.stderr, done.stderr
    # a re-trial: `live next >&-` asked and printed nothing with exit 0; `--out` then takes the ids
    sess = tmp_path / "n.hspr"
    subprocess.run([sys.executable, "-m", "hspr", "live", "start", "--bank", "terminal-bench", "--method", "uniform",
                    "--budget", "8", "--session", str(sess)], capture_output=True, check=True, timeout=120)
    done = subprocess.run(f"{shlex.quote(sys.executable)} -m hspr live next --session {shlex.quote(str(sess))} >&-",
                          shell=True, executable="/bin/bash", capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "standard output was closed as hspr started (`>&-`), so the task ids would be " \
        "lost: give --out FILE" in done.stderr, done.stderr
    status = subprocess.run([sys.executable, "-m", "hspr", "live", "status", "--session", str(sess), "--json"],
                            capture_output=True, text=True, timeout=120)
    assert json.loads(status.stdout)["pending"] == []  # refused before the ask
    done = subprocess.run(f"{shlex.quote(sys.executable)} -m hspr live next --session {shlex.quote(str(sess))} --out "
                          f"{shlex.quote(str(tmp_path / 'ids.txt'))} >&-", shell=True, executable="/bin/bash",
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and len((tmp_path / "ids.txt").read_text().split()) == 1, done.stderr
    # ... nor `live plot --out /dev/stdout` (a figure goes to a file), nor a new file in /dev (as root it was made)
    done = subprocess.run([sys.executable, "-m", "hspr", "live", "plot", "--session", str(sess), "--out", "/dev/stdout"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "a figure is written to a file, not to standard output" in done.stderr, done.stderr
    assert done.stdout == ""
    for out in ("/dev/stdout.svg", "/dev/hspr-x.csv"):
        with pytest.raises(click.BadParameter, match=r"/dev holds devices, not files"):
            outputs.check_output_file(out, "--out")
        assert not Path(out).exists()
    # a second re-trial: a session in /dev was made (with its lock), and plot's and next's --out in /dev were refused
    # only after the session's fit; plot's `--out -` was told to use /dev/stdout
    for args in (["start", "--bank", "terminal-bench", "--method", "uniform", "--budget", "8", "--session",
                  "/dev/hspr-s.hspr"], ["start", "--bank", "terminal-bench", "--method", "uniform", "--budget", "8",
                                        "--session", "/dev/hspr-d/s.hspr"],
                 ["plot", "--session", str(sess), "--out", "/dev/hspr-x.png"],
                 ["next", "--session", str(sess), "--out", "/dev/hspr-ids.txt"]):
        res = CliRunner().invoke(main, ["live", *args])
        assert res.exit_code == 2 and "/dev holds devices, not files" in res.output, (args, res.output)
        assert "fitting" not in res.output
    assert not [p for p in Path("/dev").iterdir() if p.name.startswith("hspr-")]
    # the final review: /dev itself (or a link to it) as --out-dir passed every check as root, and a report wrote there
    (tmp_path / "devlink").symlink_to("/dev")
    for out_dir in ("/dev", "/dev/", tmp_path / "devlink"):
        with pytest.raises(click.BadParameter, match=r"cannot write into (/dev|.*devlink \(a link to /dev\)): /dev holds devices"):
            outputs.check_output_dir(out_dir, "--out-dir")
    (tmp_path / "empty.json").write_text("{}")  # refused for the folder, before the results are read
    import posix
    monkeypatch.setattr(outputs.os, "access", posix.access)  # the real one: click's own check of --out-dir reads /dev
    res = CliRunner().invoke(main, ["report", str(tmp_path / "empty.json"), "--out-dir", "/dev"])
    assert res.exit_code == 2 and "/dev holds devices" in res.output and "no 'runs'" not in res.output, res.output
    res = CliRunner().invoke(main, ["live", "plot", "--session", str(sess), "--out", "-"])
    assert res.exit_code == 2 and "a figure is written to a file, not to standard output" in res.output, res.output
    # a second re-trial: a descriptor that is not open, or open for reading only, ran the whole replay; a link loop
    # too; appending the results to a log through `>>` was refused as replacing a file that is not JSON; an
    # append-only ancestor refused new folders it takes
    for redirect, said in (("", "descriptor 3 is not open"), ("3</dev/null", "descriptor 3 is open for reading only")):
        done = subprocess.run(f"{shlex.quote(sys.executable)} -m hspr bank build terminal-bench --out /dev/fd/3 {redirect}",
                              shell=True, executable="/bin/bash", capture_output=True, text=True, timeout=120)
        assert done.returncode == 2 and said in done.stderr, done.stderr
    (tmp_path / "loop_a").symlink_to(tmp_path / "loop_b")
    (tmp_path / "loop_b").symlink_to(tmp_path / "loop_a")
    with pytest.raises(click.BadParameter, match=r"loop_a is a loop of symbolic links"):
        outputs.check_output_file(tmp_path / "loop_a", "--out")
    with pytest.raises(click.BadParameter, match=r"loop_a is a loop of symbolic links"):
        outputs.check_output_dir(tmp_path / "loop_a", "--out-dir")
    outputs.check_output_file(tmp_path / "ap" / "new" / "deeper" / "x.json", "--out")  # new folders in it: allowed
    outputs.check_output_dir(tmp_path / "ap" / "report", "--out-dir")  # (a third re-trial) a new report folder too
    (tmp_path / "to_ap").symlink_to(tmp_path / "ap")
    probed = []
    monkeypatch.setattr(tempfile, "TemporaryFile", lambda *a, dir=None, **k: probed.append(dir) or real(*a, dir=dir, **k))
    outputs.check_output_file(tmp_path / "to_ap" / "new" / "x.json", "--out")
    assert probed == [os.path.realpath(tmp_path / "ap")]  # a link's real folder: no named temporary file is left
    done = subprocess.run(f"true | {shlex.quote(sys.executable)} -m hspr bank build terminal-bench --out /dev/stdin",
                          shell=True, executable="/bin/bash", capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "descriptor 0 is open for reading only" in done.stderr, done.stderr
    log = tmp_path / "log.txt"
    log.write_text("a log line\n")
    done = subprocess.run(f"{shlex.quote(sys.executable)} -m hspr replay --bank terminal-bench --methods uniform --seeds 0 "
                          f"-q --out /dev/stdout >> {shlex.quote(str(log))}", shell=True, executable="/bin/bash",
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and log.read_text().startswith("a log line\n{"), done.stderr
    assert "replaced" not in done.stderr  # (a third re-trial: it said it replaced the earlier /dev/stdout)

def test_every_help_text_is_the_same_under_python_OO():
    """A trial: under `python -OO` (PYTHONOPTIMIZE=2), which strips docstrings, `hspr --help` listed its commands
    with no words and every command's --help lost its description. Every command's help, rendered in a -OO
    process, equals this process's."""
    import subprocess
    import sys

    script = """
import json, sys
import click
from click.testing import CliRunner
from hspr.cli import main

def paths(group, prefix):
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        yield prefix + [name]
        cmd = group.get_command(ctx, name)
        if isinstance(cmd, click.Group):
            yield from paths(cmd, prefix + [name])

out = {" ".join(p): CliRunner().invoke(main, [*p, "--help"]).output for p in [[], *paths(main, [])]}
json.dump({"optimize": sys.flags.optimize, "help": out}, sys.stdout)
"""
    runs = [json.loads(subprocess.run([sys.executable, *flag, "-c", script], capture_output=True, text=True,
                                      timeout=120, check=True).stdout) for flag in ([], ["-OO"])]
    assert [r["optimize"] for r in runs] == [0, 2]
    plain, stripped = (r["help"] for r in runs)
    assert len(plain) > 20 and plain.keys() == stripped.keys()
    assert "Print the next task id(s) to run" in plain["live next"]
    for name in plain:
        assert stripped[name] == plain[name], name

def test_bank_build_refuses_to_overwrite_its_input_and_live_start_takes_stop_width_none(files):
    before = (files / "bank.csv").read_bytes()
    res = run("bank", "build", files / "bank.csv", "--out", files / "bank.csv")
    assert res.exit_code == 2 and "is also PATH" in res.output
    assert (files / "bank.csv").read_bytes() == before
    assert start(files, "run.hspr", "--stop-width", "none").exit_code == 0
    assert journal.read(files / "run.hspr").doc["stop_width_pp"] is None


def test_a_file_named_like_a_bundled_bank_is_read_with_a_note_on_stderr(files, monkeypatch):
    """`hspr bank build lite` with ./lite present reads ./lite: the bank commands say so."""
    monkeypatch.chdir(files)
    (files / "bank.csv").rename(files / "lite")
    res = CliRunner().invoke(main, ["bank", "build", "lite", "--out", "out.csv"])
    assert res.exit_code == 0, res.output
    assert "note: 'lite' is a bundled bank's name and also a file in this folder; this reads ./lite" in res.stderr
    assert (files / "out.csv").read_text() == (files / "lite").read_text()


def test_select_merge_and_folder_inputs_refuse_outputs_that_would_overwrite_an_input(files):
    """Found by a hostile trial: `select --out` replaced the --matrix file, outputs inside a bank
    folder replaced its metadata.json, and `bank merge` wrote over NEW or a JSONL BASE."""
    bank = files / "bank.csv"
    before = bank.read_bytes()
    res = run("select", "--matrix", bank, "--fold", 0, "--out", bank)
    assert res.exit_code == 2 and "is also --matrix" in res.output
    res = run("select", "--matrix", bank, "--fold", 0, "--out", files / "s.json", "--config-out", files / "s.json")
    assert res.exit_code == 2 and "is also --out" in res.output and not (files / "s.json").exists()
    folder = files / "f6"
    folder.mkdir()
    (folder / "metadata.json").write_text('{"agents": [], "instance_ids": []}')
    meta = (folder / "metadata.json").read_bytes()
    for args in (["replay", "--matrix", folder, "--methods", "uniform", "--out", folder / "metadata.json"],
                 ["select", "--matrix", folder, "--fold", 0, "--out", folder / "sub" / "s.json"],
                 ["bank", "build", folder, "--out", folder / "matrix.csv"]):
        res = run(*args)
        assert res.exit_code == 2 and "is inside" in res.output, (args, res.output)
    assert (folder / "metadata.json").read_bytes() == meta and not (folder / "matrix.csv").exists()
    new = files / "new.csv"
    new.write_bytes(before)
    res = run("bank", "merge", bank, new, "--out", new)
    assert res.exit_code == 2 and "is also NEW" in res.output and new.read_bytes() == before
    res = run("bank", "merge", bank, new, "--out", files / "merged.jsonl")
    assert res.exit_code == 2 and "name it .csv" in res.output and not (files / "merged.jsonl").exists()
    jl = files / "base.jsonl"
    jl.write_text('{"subject_id": "a", "responses": {"t1": 1}}\n')
    res = run("bank", "merge", jl, new, "--out", jl)
    assert res.exit_code == 2 and "name it .csv" in res.output and jl.read_text().startswith('{"subject_id"')
    long = files / "long.csv"
    long.write_text("agent,instance_id,resolved\na,t1,1\n")
    res = run("bank", "merge", long, new, "--out", long)
    assert res.exit_code == 2 and "is BASE, a long CSV" in " ".join(res.output.split())
    assert long.read_text() == "agent,instance_id,resolved\na,t1,1\n"
    assert bank.read_bytes() == before


def test_more_workers_than_cores_are_capped_with_a_note(files):
    """Found by a hostile trial: --workers 1000 started 1000 local processes (a one-second replay took minutes)."""
    import os

    res = run("replay", "--matrix", files / "bank.csv", "--methods", "uniform", "--seeds", 0, "-q", "--workers", 1000,
              "--out", files / "r.json")
    cores = os.cpu_count() or 1
    assert res.exit_code == 0 and f"--workers 1000 is more than this machine's {cores} core(s); using {cores}" in res.output
    assert "HSPR_QUIET" not in os.environ  # -q quiets hspr_auto's selections for the command only


def test_a_one_task_subset_suggests_a_budget_that_is_accepted(files):
    """The hint for a budget that rounds to 0 tasks must itself be a valid --budget (it said '1', a count)."""
    task = (files / "bank.csv").read_text().splitlines()[0].split(",")[1]
    (files / "one.txt").write_text(task + "\n")
    base = ["replay", "--matrix", files / "bank.csv", "--tasks", files / "one.txt", "--methods", "uniform", "--seeds", 0,
            "-q", "--out", files / "r.json"]
    res = run(*base, "--budget", "0.1")
    assert res.exit_code == 2 and "1.0 gives one task" in res.output
    assert run(*base, "--budget", "1.0").exit_code == 0
    # a hostile trial: a fraction in exponent notation was refused as not a whole number
    res = run("live", "start", "--matrix", files / "bank.csv", "--config", files / "cfg.json", "--budget", "1e-1",
              "--session", files / "e.hspr", "--json")
    assert res.exit_code == 0 and json.loads(res.stdout.splitlines()[-1])["budget"] == 4, res.output


def test_ingest_on_a_task_subset_session_names_the_subset(files):
    """An id of the bank outside the session's --tasks subset: the message says it is the subset that lacks it."""
    tasks = (files / "bank.csv").read_text().splitlines()[0].split(",")[1:]
    (files / "sub.txt").write_text("\n".join(tasks[:6]) + "\n")
    assert run("live", "start", "--matrix", files / "bank.csv", "--config", files / "cfg.json", "--budget", 2,
               "--tasks", files / "sub.txt", "--session", files / "s.hspr").exit_code == 0
    (files / "out.csv").write_text(f"instance_id,resolved\n{tasks[0]},1\n{tasks[10]},0\n")
    res = run("live", "ingest", "--session", files / "s.hspr", files / "out.csv")
    msg = " ".join(res.output.split())
    assert res.exit_code == 2 and "6 tasks of the session's --tasks subset" in msg and tasks[10] in msg
    assert "nothing was recorded" in msg and "--skip-unknown" in msg
    res = run("live", "record", "--session", files / "s.hspr", tasks[10], "1")  # a re-trial: "is not in the bank"
    msg = " ".join(res.output.split())
    assert res.exit_code == 2 and f"task id '{tasks[10]}' is not among the session's tasks" in msg
    assert "6 tasks of the session's --tasks subset" in msg
    # a harness run over every task, ingested into the subset session: --skip-unknown records the rest
    res = run("live", "ingest", "--session", files / "s.hspr", files / "out.csv", "--skip-unknown", "--json")
    doc = json.loads(res.stdout)
    assert res.exit_code == 0 and [r["task"] for r in doc["recorded"]] == [tasks[0]]
    assert doc["notes"] == [f"skipped 1 id(s) that are not tasks of the session: {tasks[10]!r}"]


def test_live_plot_on_a_full_disk_names_the_file(files, monkeypatch):
    """matplotlib's OSError on a full disk carried no file name (hostile trial)."""
    from hspr.report import runplot

    def full(fig, out):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(runplot, "save_figure", full)
    assert start(files).exit_code == 0
    res = run("live", "plot", "--session", files / "run.hspr", "--out", files / "run.png")
    assert res.exit_code == 2 and f"cannot write {files / 'run.png'}: No space left on device" in " ".join(res.output.split())


def test_live_next_failing_after_its_ask_is_saved_says_so(files, monkeypatch):
    """A hostile trial: `next --out` to a file that could not be written said only the error; the ask was saved."""
    from hspr.cli import live as live_cli

    def full(text, out):
        raise OSError(errno.ENOSPC, "No space left on device")

    assert start(files).exit_code == 0
    monkeypatch.setattr(live_cli, "write_text_durable", full)
    res = run("live", "next", "--batch", "2", "--session", files / "run.hspr", "--out", files / "ids.txt")
    msg = " ".join(res.output.split())
    assert res.exit_code == 2 and "No space left on device" in msg
    monkeypatch.undo()
    asked = json.loads(run("live", "status", "--session", files / "run.hspr", "--json").stdout)["pending"]
    assert len(asked) == 2 and f"the ask of {', '.join(asked)} is saved in" in msg, msg


def test_a_stop_width_above_100_is_refused_before_anything_is_written(files):
    """Review: the width was saved to the session before the stopping rule refused it, and every
    later command failed (record even after saving its outcome)."""
    res = start(files, "wide.hspr", "--stop-width", "150")
    assert res.exit_code == 2 and "at most 100 pp" in res.output and not (files / "wide.hspr").exists()
    assert start(files).exit_code == 0
    before = (files / "run.hspr").read_bytes()
    for cmd in ("status", "next"):
        res = run("live", cmd, "--stop-width", "150", "--session", files / "run.hspr")
        assert res.exit_code == 2 and "--stop-width 150 pp" in res.output
    assert (files / "run.hspr").read_bytes() == before


def test_a_bank_folder_given_by_its_matrix_csv_is_an_input_folder(files):
    folder = files / "bk"
    folder.mkdir()
    (folder / "matrix.csv").write_text("1,0\n0,1\n")
    (folder / "metadata.json").write_text('{"agents": ["a", "b"], "instance_ids": ["t1", "t2"]}')
    meta = (folder / "metadata.json").read_bytes()
    res = run("replay", "--matrix", folder / "matrix.csv", "--methods", "uniform", "--out", folder / "metadata.json")
    assert res.exit_code == 2 and "is inside --matrix" in res.output and (folder / "metadata.json").read_bytes() == meta


def test_an_input_warning_is_shown_by_start_and_not_by_every_later_call(files):
    """A review saw the no-run warning repeated by every live next / record / status."""
    text = (files / "bank.csv").read_text().splitlines()
    n_cols = text[0].count(",")
    (files / "ghost.csv").write_text("\n".join(text + ["ghost" + "," * n_cols]) + "\n")
    res = run("live", "start", "--matrix", files / "ghost.csv", "--config", files / "cfg.json", "--budget", 4,
              "--session", files / "g.hspr")
    assert res.exit_code == 0 and res.output.count("warning: ") == 1 and "'ghost'" in res.output, res.output
    for cmd in (["next"], ["status"]):
        res = run("live", *cmd, "--session", files / "g.hspr")
        assert res.exit_code == 0 and "no run at all" not in res.output, res.output


def test_an_output_through_a_symlink_or_into_a_pipe_is_written_there(files):
    """A script trial: `--out link.txt` replaced the link by a file (its target kept the old
    text), and `--out /dev/stdout` replaced the device by a file (as root) and sent nothing."""
    import os
    import threading

    assert start(files).exit_code == 0
    target = files / "target.txt"
    target.write_text("")  # (text other than task ids is not replaced: test_idformat)
    (files / "link.txt").symlink_to(target)
    res = run("live", "next", "--session", files / "run.hspr", "--batch", 2, "--out", files / "link.txt")
    assert res.exit_code == 0, res.output
    assert (files / "link.txt").is_symlink() and len(target.read_text().split()) == 2
    fifo = files / "ids.fifo"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()))
    reader.start()
    res = run("live", "next", "--session", files / "run.hspr", "--batch", 2, "--out", fifo)
    reader.join(timeout=30)
    assert res.exit_code == 0 and got == [target.read_text()]  # the same two pending ids, through the pipe
    assert not fifo.is_file() and not fifo.is_symlink()  # still a pipe


def test_a_read_only_output_is_refused_not_replaced(files, monkeypatch):
    """A hostile trial (without root's override): `replay --out keep.json`, `bank merge --out bank.csv`
    and `live plot --out p.png` replaced files made read-only (os.replace needs only the folder
    writable); they now fail as writing in place would. Root may write any file, so the test
    stands in for the permission check."""
    import os
    import tempfile

    import hspr.fileio as fileio

    monkeypatch.setattr(tempfile, "tempdir", str(files))  # where the runs are kept instead
    keep = files / "keep.json"
    keep.write_text('{"runs": []}\n')  # an earlier results file (any other file is refused before the replay)
    real = os.access
    monkeypatch.setattr(fileio.os, "access", lambda p, mode: real(p, mode) and not (os.fspath(p) == str(keep) and mode == os.W_OK))
    res = run("replay", "--matrix", files / "bank.csv", "--methods", "uniform", "--seeds", 0, "-q", "--out", keep)
    said = " ".join(res.output.split())
    assert res.exit_code == 2 and f"cannot write {keep}: Permission denied; the 12 runs were saved to" in said
    assert "Fix the file's permissions, or choose another --out" in said and "Free space" not in said
    assert keep.read_text() == '{"runs": []}\n' and not list(files.glob(".keep.json.*"))
    res = run("replay", "--matrix", files / "bank.csv", "--methods", "uniform", "--seeds", 0, "-q", "--out",
              files / "other.json")
    assert res.exit_code == 0, res.output


def test_the_command_line_loads_no_numerics_before_its_error_handling():
    """A crash-safety trial: Ctrl-C in the first 0.1 s of a command printed a traceback, since
    ``import hspr`` loaded numpy and pandas before the command's handlers were in place. The
    package's names load on first use (PEP 562), and a command's modules inside click's handling."""
    import subprocess
    import sys

    code = ("import sys, hspr.cli; heavy = [m for m in ('numpy', 'pandas', 'scipy', 'hspr.data') if m in sys.modules]; "
            "import hspr; assert hspr.load_bank.__module__ == 'hspr.data.banks'; "
            # a hostile re-trial: after a bare `import hspr`, hspr.data.folds and hspr.session were gone
            "assert hspr.data.folds.make_folds and hspr.session.trajectory and 'TYPE_CHECKING' not in dir(hspr); "
            "print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("args", [["banks"], ["bank", "agents", "lite", "--json"]])
def test_a_closed_pipe_after_rich_output_is_exit_0(args):
    """A script trial: `hspr banks | true` exited 1 (rich's answer to a closed pipe), failing a
    script under `set -o pipefail` although the command had done its work."""
    import subprocess
    import sys

    p = subprocess.Popen([sys.executable, "-c", "from hspr.cli import main; main()", *args],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdout.close()  # as `| true` does: nothing is read
    assert p.wait(timeout=60) == 0
    assert p.stderr.read() == b""


@pytest.mark.parametrize("cmd", [["status"], ["record", "t1", "resolved"], ["ingest", "bank.csv"], ["next"]])
def test_an_os_error_in_a_live_command_gives_the_json_error_object(files, cmd):
    """A script trial: status, record and ingest printed no JSON for an OS error (a file name
    longer than the file system takes), where next did."""
    res = run("live", *[files / c if c == "bank.csv" else c for c in cmd], "--session", files / ("x" * 300 + ".hspr"),
              "--json")
    assert res.exit_code == 2
    doc = json.loads(res.stdout)
    assert doc["ok"] is False and "File name too long" in doc["error"]


def test_a_stopped_session_prints_no_blank_id_line(files):
    """A script trial: once the session stopped, `next --format lines` printed one empty line (a
    `while read id` loop ran once with id='') and `--out` wrote a file holding a newline."""
    assert start(files).exit_code == 0
    for t in run("live", "next", "--batch", 4, "--session", files / "run.hspr").output.split():
        assert run("live", "record", t, "resolved", "--session", files / "run.hspr").exit_code == 0
    for form in ("lines", "space", "csv"):
        res = run("live", "next", "--format", form, "--session", files / "run.hspr")
        assert res.exit_code == 0 and res.stdout == "" and "stop: budget spent" in res.stderr
    assert run("live", "next", "--format", "json", "--session", files / "run.hspr").stdout == "[]\n"
    assert run("live", "next", "--out", files / "ids.txt", "--session", files / "run.hspr").exit_code == 0
    assert (files / "ids.txt").read_text() == ""


def test_out_dev_stdout_goes_into_the_stream_the_shell_connected(files, tmp_path):
    """A review: `--out /dev/stdout | cat` failed (the link resolved to 'pipe:[N]'), and with
    stdout redirected to a file the file was replaced (a header written before it was lost)."""
    import subprocess
    import sys

    assert start(files).exit_code == 0
    hspr = f"{sys.executable} -c 'from hspr.cli import main; main()'"
    sess = files / "run.hspr"
    piped = subprocess.run(f"{hspr} live next --session {sess} --batch 2 --out /dev/stdout | cat", shell=True,
                           capture_output=True, text=True, timeout=120)
    ids = piped.stdout.split()
    assert piped.returncode == 0 and len(ids) == 2, piped.stderr
    log = tmp_path / "log.txt"
    subprocess.run(f"{{ echo HEADER; {hspr} live next --session {sess} --batch 2 --out /dev/stdout; echo END; }} > {log}",
                   shell=True, check=True, timeout=120, executable="/bin/bash")
    assert log.read_text().split() == ["HEADER", *ids, "END"]
    (tmp_path / "loop_a").symlink_to(tmp_path / "loop_b")
    (tmp_path / "loop_b").symlink_to(tmp_path / "loop_a")
    res = run("live", "next", "--session", sess, "--out", tmp_path / "loop_a")
    assert res.exit_code == 2 and "error:" in res.output and "Traceback" not in res.output


def test_bank_build_writes_through_a_symlink_and_into_a_pipe(files, tmp_path):
    """A trial: `bank build --out /dev/stdout` replaced the machine's /dev/stdout link by a file
    (write_wide_csv had its own temporary-file-and-rename), as it did a symlink and a pipe."""
    import os
    import threading

    target = tmp_path / "real.csv"
    target.write_text("old\n")
    (tmp_path / "link.csv").symlink_to(target)
    res = run("bank", "build", files / "bank.csv", "--out", tmp_path / "link.csv")  # a file that is not a bank: kept
    assert res.exit_code == 2 and "exists and is not a bank" in res.output and target.read_text() == "old\n"
    target.write_text("agent,task0000\nA,1\nB,0\n")  # an earlier bank (of a task in common) is replaced, and noted
    res = run("bank", "build", files / "bank.csv", "--out", tmp_path / "link.csv")
    assert res.exit_code == 0 and f"{tmp_path / 'link.csv'} held another bank before" in res.output
    assert (tmp_path / "link.csv").is_symlink() and target.read_text() == (files / "bank.csv").read_text()
    fifo = tmp_path / "m.fifo"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()))
    reader.start()
    res = run("bank", "build", files / "bank.csv", "--out", fifo)
    reader.join(timeout=30)
    assert res.exit_code == 0 and got == [target.read_text()] and not fifo.is_file()


@pytest.mark.parametrize("args, option, name", [
    (["replay", "--bank", "lite", "--methods", "uniform", "--out", "bank.csv"], "--out", "bank.json"),
    (["replay", "--bank", "lite", "--methods", "uniform", "--csv", "summary.json"], "--csv", "summary.csv"),
    (["select", "--bank", "lite", "--fold", "0", "--out", "bank.csv"], "--out", "bank.json"),
    (["select", "--bank", "lite", "--fold", "0", "--out", "s.json", "--config-out", "run.hspr"], "--config-out", "run.json"),
])
def test_an_output_named_like_another_format_is_refused_before_any_work(tmp_path, monkeypatch, args, option, name):
    """`select --out mybank.csv` wrote JSON over the user's bank after minutes of work (a hostile trial)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bank.csv").write_text("agent,t1\na,1\n")
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 2, res.output
    assert f"{option} is written as" in res.output and f"name it {name}" in res.output
    assert (tmp_path / "bank.csv").read_text() == "agent,t1\na,1\n"


def test_a_negative_outcome_is_refused_as_an_outcome_not_as_an_option(files):
    """A trial: `hspr live record TASK -1` got click's "No such option '-1'"."""
    assert start(files).exit_code == 0
    task = run("live", "next", "--session", files / "run.hspr").output.split()[0]
    res = run("live", "record", "--session", files / "run.hspr", task, "-1")
    assert res.exit_code == 2 and "outcome '-1'" in res.output and "No such option" not in res.output, res.output
    # a hostile trial: letting every unknown option through made a mistyped option an argument
    res = run("live", "record", "--session", files / "run.hspr", task, "--corect", "1")
    assert res.exit_code == 2 and "No such option '--corect'" in res.output, res.output
    res = run("live", "record", "--sesion", files / "run.hspr", task, "1")
    assert res.exit_code == 2 and "No such option '--sesion'" in res.output, res.output
    res = run("live", "record", "--session", files / "run.hspr", task, "1")
    assert res.exit_code == 0, res.output


def test_signed_number_task_ids_and_option_values_keep_their_place(tmp_path):
    """A re-trial: task '+2' was swapped with its outcome, and `--session -5` lost its value."""
    import pandas as pd

    rng = np.random.default_rng(0)
    tasks = ["-1", "+2", "-0"] + [f"t{j}" for j in range(17)]
    pd.DataFrame(rng.integers(0, 2, (8, 20)), index=pd.Index([f"a{i}" for i in range(8)], name="agent"),
                 columns=tasks).to_csv(tmp_path / "neg.csv")
    session = tmp_path / "-5"
    res = run("live", "start", "--matrix", tmp_path / "neg.csv", "--method", "uniform", "--budget", 5,
              "--session", session)
    assert res.exit_code == 0, res.output
    res = run("live", "record", "+2", "1", "--session", session)
    assert res.exit_code == 0 and "recorded +2 resolved" in res.output, res.output
    res = run("live", "record", "--session", session, "-0", "-1")
    assert res.exit_code == 2 and "outcome '-1'" in res.output, res.output


def test_a_json_output_replaces_only_its_own_kind_of_file(files):
    """A hostile trial: `replay --out table.json` replaced a `select --record` table (saying it 'replaced the
    earlier table.json'), and `select --out` / `--config-out` replaced a replay's results file without a word."""
    runner = CliRunner()
    bank = str(files / "bank.csv")
    table = files / "table.json"
    table.write_text(json.dumps({"generated_by": "x", "bank": {"0": {"config": FAST, "source_digest": "a" * 64}}}))
    notes = files / "notes.json"
    notes.write_text("my notes, not JSON")
    kept = {p: p.read_bytes() for p in (table, notes)}
    for out, what in ((table, "is a table of selections (`hspr select --record`)"), (notes, "is not JSON")):
        res = runner.invoke(main, ["replay", "--matrix", bank, "--methods", "uniform", "--seeds", "0", "-q", "--out", str(out)])
        assert res.exit_code == 2 and f"{out.name} exists and {what}; this command replaces only a results file" in \
            " ".join(res.output.split()), res.output
    results = files / "r.json"
    res = runner.invoke(main, ["replay", "--matrix", bank, "--methods", "uniform", "--seeds", "0", "-q", "--out", str(results)])
    assert res.exit_code == 0
    res = runner.invoke(main, ["replay", "--matrix", bank, "--methods", "uniform", "--seeds", "1", "-q", "--out", str(results)])
    assert res.exit_code == 0 and "it replaced the earlier" in res.output  # its own kind: replaced, and said so
    kept[results] = results.read_bytes()
    # a re-trial: --csv replaced a response matrix; a results file with a byte-order mark was 'not JSON'
    other_bank = files / "other.csv"
    other_bank.write_bytes((files / "bank.csv").read_bytes())
    kept[other_bank] = other_bank.read_bytes()
    res = runner.invoke(main, ["replay", "--matrix", bank, "--methods", "uniform", "--seeds", "0", "-q", "--out",
                               str(files / "r2.json"), "--csv", str(other_bank)])
    assert res.exit_code == 2 and "other.csv exists and is not a replay's summary CSV (its first line is 'agent," in \
        " ".join(res.output.split())
    # a hostile trial: a report's comparison.csv (which begins as a summary does) was replaced
    comparison = files / "comparison.csv"
    comparison.write_text("budget_fraction,budget,bank,method,mae_pp,maxerr_pp,kendall_tau_b,coverage_90,mean_width_pp,"
                          "n_targets,n_seeds,n_banks,mae_rank,maxerr_rank,tau_rank,ranked\n0.1,50,b,uniform,5.2,13.0,0.8,0.9,"
                          "20.1,30,10,1,1,1,1,True\n")
    kept[comparison] = comparison.read_bytes()
    res = runner.invoke(main, ["replay", "--matrix", bank, "--methods", "uniform", "--seeds", "0", "-q", "--out",
                               str(files / "r2.json"), "--csv", str(comparison)])
    assert res.exit_code == 2 and ("comparison.csv exists and is a report's comparison table (`hspr report`), not a "
                                   "replay's summary CSV") in " ".join(res.output.split())
    res = runner.invoke(main, ["replay", "--matrix", bank, "--methods", "uniform", "--seeds", "0", "-q", "--out", "-"])
    assert res.exit_code == 2 and "'-' is not stdout here: it would write a file named '-'" in " ".join(res.output.split())
    summary = files / "summary.csv"
    for _ in range(2):  # its own kind: written, then replaced
        res = runner.invoke(main, ["replay", "--matrix", bank, "--methods", "uniform", "--seeds", "0", "-q", "--out",
                                   str(files / "r2.json"), "--csv", str(summary)])
        assert res.exit_code == 0 and summary.read_text().startswith("budget_fraction,budget,bank,method,")
    (files / "r2.json").write_bytes(b"\xef\xbb\xbf" + (files / "r2.json").read_bytes())
    res = runner.invoke(main, ["replay", "--matrix", bank, "--methods", "uniform", "--seeds", "0", "-q", "--out",
                               str(files / "r2.json")])
    assert res.exit_code == 0, res.output
    for option in ("--out", "--config-out"):
        args = {"--out": str(files / "s.json"), option: str(results)}
        res = runner.invoke(main, ["select", "--matrix", bank, "--fold", "0", "--fast", "-q", *sum(args.items(), ())])
        assert res.exit_code == 2 and "r.json exists and is an `hspr replay` results file" in " ".join(res.output.split())
    # a hostile trial: a --config-out file given as --out was 'JSON that no hspr command writes there'
    cfg = files / "cfg.json"  # the fixture's FAST settings, as --config-out writes them
    kept[cfg] = cfg.read_bytes()
    res = runner.invoke(main, ["select", "--matrix", bank, "--fold", "0", "--fast", "-q", "--out", str(cfg)])
    assert res.exit_code == 2 and ("cfg.json exists and is a configuration file of HSPR settings (`hspr select "
                                   "--config-out`)") in " ".join(res.output.split())
    assert all(p.read_bytes() == b for p, b in kept.items())


def test_a_reader_that_stops_reading_stderr_does_not_stop_a_start(files, tmp_path):
    """A re-trial: `hspr live start ... 2>&1 | head -1` exited 0 after the fit's first line, and the session
    was never written (the fit's closing line hit the closed pipe)."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "HSPR_CACHE_DIR": str(tmp_path / "cache"), "OPENBLAS_NUM_THREADS": "1"}
    proc = subprocess.Popen([sys.executable, "-c", "from hspr.cli import main; main()", "live", "start", "--matrix",
                             str(files / "bank.csv"), "--method", "hspr_robust", "--budget", "4", "--session",
                             str(files / "piped.hspr")], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    first = proc.stdout.readline()
    proc.stdout.close()  # as `head -1` does
    assert proc.wait(timeout=120) == 0
    assert first.startswith(b"fitting hspr_robust on 12 agents")
    assert (files / "piped.hspr").exists()  # written all the same


def test_a_named_pipe_is_refused_where_a_file_is_read_but_a_shell_pipe_is_read(tmp_path):
    """A re-trial: `live status --session FIFO` and `select --record FIFO` waited for ever for a writer; and
    refusing every non-regular file had refused `hspr report <(cat r.json)` (a pipe that has its writer)."""
    from hspr.fileio import read_text

    with unread_fifo(tmp_path / "p") as fifo:
        res = run("live", "status", "--session", fifo)
        assert res.exit_code == 2 and "not a regular file (a named pipe or a device?)" in res.output
        res = run("select", "--bank", "pro", "--fold", 0, "--record", fifo, "--out", tmp_path / "s.json")
        assert res.exit_code == 2 and "not a regular file" in res.output
        res = run("replay", "--bank", "pro", "--methods", "hspr", "--config", fifo, "--seeds", 0)  # was 'no such file'
        assert res.exit_code == 2 and "not a regular file" in res.output
    r, w = os.pipe()
    os.write(w, b"hello\n")
    os.close(w)
    try:
        assert read_text(f"/dev/fd/{r}") == "hello\n"
    finally:
        os.close(r)
    with unread_fifo(tmp_path / "m") as fifo:  # a matrix piped in is read twice (form, then rows): say how to give it
        res = run("bank", "validate", fifo)
        assert res.exit_code == 2 and "(output piped in: save it first, `... > file`, or redirect a file: `< file`)" \
            in " ".join(res.output.split())


@pytest.mark.parametrize("code, said", [(errno.ENOSPC, "no free inodes: df -h, df -i"),
                                        (errno.EACCES, "the session folder must be writable")])
def test_a_lock_file_that_cannot_be_made_names_the_cause(tmp_path, monkeypatch, code, said):
    """A crash-safety trial: a disk with no inode left was told the session folder must be writable."""
    import builtins

    real = builtins.open

    def refuse(file, *a, **k):
        if str(file).endswith(".lock"):
            raise OSError(code, os.strerror(code), str(file))
        return real(file, *a, **k)

    monkeypatch.setattr(builtins, "open", refuse)
    with pytest.raises(journal.LiveSessionError, match=rf"cannot open the lock file .*; .*{re.escape(said)}"):
        with journal.session_lock(tmp_path / "run.hspr"):
            pass


def test_errors_about_a_session_from_hspr_session_name_the_variable(files, monkeypatch):
    """A hostile trial: "File 'ro' is a directory" (and a missing session) never said the path came from
    $HSPR_SESSION."""
    (files / "ro").mkdir()
    monkeypatch.setenv("HSPR_SESSION", str(files / "ro"))
    res = run("live", "status")
    assert res.exit_code == 2 and "is a directory" in res.output and "(the value of $HSPR_SESSION)" in res.output
    monkeypatch.setenv("HSPR_SESSION", str(files / "nothere.hspr"))
    res = run("live", "status")
    assert res.exit_code == 2 and f"(the session file is $HSPR_SESSION={files / 'nothere.hspr'})" in res.output
    res = run("live", "status", "--session", files / "other.hspr")  # given on the command line: not named
    assert res.exit_code == 2 and "HSPR_SESSION" not in res.output


def test_sigterm_ends_a_command_as_ctrl_c_does_with_its_own_status(tmp_path, default_signals):
    """A durability trial: SIGTERM (timeout, a cancelled CI job) and SIGHUP ended `hspr` with no word, even after
    its change was saved; they now end it as Ctrl-C does, exiting 128 + the signal's number."""
    import signal
    import subprocess
    import sys
    import time

    env = {**os.environ, "HSPR_CACHE_DIR": str(tmp_path / "cache"), "MPLCONFIGDIR": str(tmp_path / "mpl")}
    for sig, status in ((signal.SIGTERM, 143), (signal.SIGHUP, 129)):
        proc = subprocess.Popen([sys.executable, "-m", "hspr", "replay", "--bank", "verified", "--methods", "hspr_robust",
                                 "--seeds", "0-4", "--out", str(tmp_path / "r.json")], cwd=tmp_path, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(2.0)  # past Python's start-up, where no handler can be in place yet
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=60)
        last = err.strip().splitlines()[-1]  # and, cut in its first job, that no run is kept
        assert proc.returncode == status and last.startswith(f"terminated ({sig.name})"), (proc.returncode, err)
        assert last in (f"terminated ({sig.name})", f"terminated ({sig.name}); no job had finished, so no run is kept in a "
                        f"results file (a job is one method and seed on one fold or target set, kept when it ends); "
                        f"{tmp_path / 'r.json'} was not written"), err
        assert "Traceback" not in err and not (tmp_path / "r.json").exists()


_SWALLOWED_PROBE = """
import sys, time
import hspr.cli
from hspr import _entry

class Dropped:
    def __del__(self):
        raise _entry.Terminated(15)  # as the signal's handler raises it inside a callback of the import lock

def main(**kwargs):
    Dropped()
    time.sleep(5)
    print("ran on")
    sys.exit(0)

hspr.cli.main = main
sys.argv = ["hspr"]
_entry.run()
"""


_LATE_SIGNAL_PROBE = """
import atexit, os, signal, sys, time
import hspr.cli
from hspr import _entry

def main(**kwargs):  # the command ends; a SIGTERM comes as the process shuts down (after loky's workers stop)
    print("done")
    atexit.register(lambda: (os.kill(os.getpid(), signal.SIGTERM), time.sleep(5)))
    sys.exit(int(sys.argv[1]))

hspr.cli.main = main
code = sys.argv[1]
sys.argv = ["hspr", code]
_entry.run()
"""


@pytest.mark.parametrize("code", [0, 2])
def test_a_signal_after_the_command_ended_is_said_and_keeps_a_failure_s_status(code):
    """A re-trial: a `live withdraw` that had saved and printed its change died of a SIGTERM as it shut down (status
    -15, no word). A finished command that succeeded now says so and exits 143; a failed one keeps its status."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", _LATE_SIGNAL_PROBE, str(code)], capture_output=True, text=True, timeout=60)
    assert out.stdout == "done\n", out
    if code == 0:
        assert out.returncode == 143 and out.stderr == "terminated (SIGTERM) as the command ended: its work is complete\n"
    else:
        assert out.returncode == 2 and out.stderr == ""


def test_a_signal_python_swallows_is_sent_again_and_ends_the_command():
    """This file's SIGTERM test once failed on a loaded machine: its signal, 2 s in, arrived while Python was still
    importing, inside a callback of the import lock where an exception cannot be passed on, and the replay ran on
    for minutes. Such a signal is now sent again a moment later, and ends the command."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", _SWALLOWED_PROBE], capture_output=True, text=True, timeout=60)
    assert out.returncode == 143 and "ran on" not in out.stdout and out.stderr.strip() == "terminated (SIGTERM)", out


_TWO_SIGNALS_PROBE = """
import atexit, os, signal, sys, time
import hspr.cli
from hspr import _entry

def unwinding(**kwargs):  # the second signal while the first one's interrupt unwinds the command
    try:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)
    finally:
        os.kill(os.getpid(), signal.SIGHUP)
        time.sleep(0.3)

def shutting_down(**kwargs):  # the second signal as the process shuts down (loky's workers stopped)
    try:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)
    except KeyboardInterrupt as exc:
        atexit.register(lambda: (os.kill(os.getpid(), signal.SIGHUP), time.sleep(0.5)))
        sys.stderr.write(_entry.interrupted_word(exc) + "\\n")  # as hspr's commands say it
        sys.exit(128 + exc.signum)

def printed(**kwargs):  # a compiled module prints the interrupt and drops it (Cython's unraisable path calls
    exc = _entry.Terminated(15)  # PyErr_PrintEx, which hands it to sys.excepthook)
    sys.excepthook(type(exc), exc, None)
    time.sleep(5)
    print("ran on")
    sys.exit(0)

hspr.cli.main = {"unwinding": unwinding, "shutting_down": shutting_down, "printed": printed}[sys.argv[1]]
sys.argv = ["hspr"]
_entry.run()
"""


@pytest.mark.parametrize("case", ["unwinding", "shutting_down", "printed"])
def test_the_first_signal_decides_the_status_and_no_traceback_is_printed(case, default_signals):
    """A trial: SIGTERM, then SIGHUP a moment later, printed "terminated (SIGTERM)" and exited 129 (killed by the
    SIGHUP as the process shut down), or "terminated (SIGHUP)" (a new interrupt replaced the one unwinding). And this
    file's SIGTERM test once saw scipy's traceback above "terminated (SIGHUP)": its signal came during scipy.stats'
    import, where Cython prints an exception it cannot pass on. The first signal decides; nothing else is printed."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", _TWO_SIGNALS_PROBE, case], capture_output=True, text=True, timeout=60)
    assert out.returncode == 143 and out.stderr.strip() == "terminated (SIGTERM)" and "ran on" not in out.stdout, out


def test_two_records_joined_by_a_lost_line_end_are_told_how_to_part_them_and_nothing_is_lost(files):
    """A durability trial: a flipped bit turned a line end into 0x0b; the advice was to delete the line, which lost
    two outcomes. The command the message gives puts the line end back."""
    import shlex
    import subprocess
    import sys

    assert start(files).exit_code == 0
    asked = run("live", "next", "--session", files / "run.hspr", "--batch", 2).stdout.split()
    for t in asked:
        assert run("live", "record", "--session", files / "run.hspr", t, "resolved").exit_code == 0
    path = files / "run.hspr"
    before = path.read_bytes()
    lines = before.split(b"\n")
    at = len(lines[0]) + len(lines[1]) + len(lines[2]) + 2  # the line end after line 3 (the first outcome)
    assert before[at:at + 1] == b"\n"
    path.write_bytes(before[:at] + b"\x0b" + before[at + 1:])
    res = run("live", "status", "--session", path)
    assert res.exit_code == 2
    said = " ".join(res.stderr.split())
    assert f"{path}: line 3 holds two whole records joined where a line end was lost (byte {len(lines[2]) + 1} of the line, " \
           "b'\\x0b', stands where the line end was" in said
    command = shlex.split(re.search(r"then run (python -c '.+'), then run the command again", said).group(1))
    subprocess.run([sys.executable, *command[1:]], check=True)
    assert path.read_bytes() == before
    status = json.loads(run("live", "status", "--session", path, "--json").stdout)
    assert status["n_recorded"] == 2


def test_an_interrupt_just_after_the_save_says_the_change_was_saved(files, monkeypatch):
    """A durability trial: Ctrl-C between the session's save and the command's own note said only 'interrupted',
    though the outcome was recorded. The session tells the command line the moment it saves."""
    import hspr.cli.live as cli_live

    assert start(files).exit_code == 0
    task = run("live", "next", "--session", files / "run.hspr").stdout.split()[0]
    original, noted = cli_live.note_saved, []

    def note_then_interrupt(what):  # the first note is the session's on_save, inside the save's transaction
        original(what)
        noted.append(what)
        raise KeyboardInterrupt

    with monkeypatch.context() as m:
        m.setattr(cli_live, "note_saved", note_then_interrupt)
        res = run("live", "record", "--session", files / "run.hspr", task, "resolved")
    assert noted == [f"this command's change is saved in {files / 'run.hspr'}"]
    assert res.exit_code == 130
    assert res.stderr.strip() == f"interrupted after the change was saved: this command's change is saved in {files / 'run.hspr'}"
    status = json.loads(run("live", "status", "--session", files / "run.hspr", "--json").stdout)
    assert status["n_recorded"] == 1


@pytest.mark.parametrize("when", ["before", "during"])
def test_an_interrupt_says_whether_the_session_changed(files, monkeypatch, when):
    """A new-user trial: an interrupted `ingest` that saved nothing said only 'interrupted'. Before the save the
    message says the session is unchanged; a Ctrl-C during the write is held until the write and its note are
    done, so the message never claims an unchanged file that holds the change."""
    import signal

    import hspr.journal

    assert start(files).exit_code == 0
    path = files / "run.hspr"
    task = run("live", "next", "--session", path).stdout.split()[0]
    before, append = path.read_bytes(), hspr.journal.append

    def interrupted(*args, **kwargs):
        if when == "before":
            raise KeyboardInterrupt
        append(*args, **kwargs)
        signal.raise_signal(signal.SIGINT)  # held: Python's handler runs after the session's note

    handler = signal.signal(signal.SIGINT, signal.default_int_handler)  # a test worker may ignore it
    try:
        with monkeypatch.context() as m:
            m.setattr(hspr.journal, "append", interrupted)
            res = run("live", "record", "--session", path, task, "resolved")
    finally:
        signal.signal(signal.SIGINT, handler)
    assert res.exit_code == 130
    status = json.loads(run("live", "status", "--session", path, "--json").stdout)
    if when == "before":
        assert res.stderr.strip() == f"interrupted: the session {path} is unchanged"
        assert path.read_bytes() == before and status["n_recorded"] == 0
    else:
        assert res.stderr.strip() == f"interrupted after the change was saved: this command's change is saved in {path}"
        assert status["n_recorded"] == 1


def test_an_interrupted_ingest_of_piped_input_names_the_copy_it_kept(files, monkeypatch):
    """A re-trial: `ingest -` interrupted before the session changed said it was unchanged, and left the copy of
    standard input beside it unsaid."""
    import hspr.cli.live as cli_live

    assert start(files).exit_code == 0
    path = files / "run.hspr"
    task = run("live", "next", "--session", path).stdout.split()[0]

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli_live, "_read_before_fit", interrupted)
    res = CliRunner().invoke(main, ["live", "ingest", "--session", str(path), "-"], input=f"instance_id,resolved\n{task},1\n")
    kept, = files.glob("run.hspr.stdin-*.csv")
    assert res.exit_code == 130 and res.stderr.strip().endswith(f"interrupted; what was piped in is kept as {kept}")
    assert kept.read_text() == f"instance_id,resolved\n{task},1\n"
    monkeypatch.setattr(cli_live, "_read_before_fit", lambda *a, **k: None)  # the session opened, then interrupted
    monkeypatch.setattr(cli_live.LiveSession, "ingest", interrupted)
    res = CliRunner().invoke(main, ["live", "ingest", "--session", str(path), "-"], input=f"{task},1\n")
    second = sorted(set(files.glob("run.hspr.stdin-*.csv")) - {kept})
    assert res.exit_code == 130 and len(second) == 1 and res.stderr.strip().endswith(
        f"interrupted: the session {path} is unchanged; what was piped in is kept as {second[0]}")


def _swallow(command):
    """Run ``command``, dropping a SIGTERM's exception as Python drops one raised in a callback."""
    import sys

    from hspr._entry import Terminated

    try:
        command()
    except Terminated:
        sys.exit(0)


def test_ctrl_c_outside_the_commands_handler_exits_130(monkeypatch, capsys, default_signals):
    """A hostile trial: Ctrl-C while the CLI loads printed a Python traceback, and in the last moment after the
    command ran ended the process by the signal; the `hspr` entry point (hspr._entry.run) exits 130 with
    `interrupted` as the command's own handler does. The KeyboardInterrupt is raised where either window would."""
    import signal
    import sys

    import hspr.cli
    from hspr._entry import run

    def interrupted(**kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(hspr.cli, "main", interrupted)
    with pytest.raises(SystemExit) as done:
        run()
    assert done.value.code == 130 and capsys.readouterr().err == "\ninterrupted\n"
    # once the command has finished (click's main ends in SystemExit), Ctrl-C is ignored while Python shuts down
    import hspr._entry

    handlers = []
    monkeypatch.setattr(hspr._entry.signal, "signal", lambda sig, handler: handlers.append((sig, handler)))
    monkeypatch.setattr(hspr.cli, "main", lambda **kwargs: sys.exit(0))
    with pytest.raises(SystemExit) as done:
        run()
    assert done.value.code == 0 and [(s, getattr(h, "__name__", h)) for s, h in handlers] == [
        (signal.SIGTERM, "terminate"), (signal.SIGHUP, "terminate"), (signal.SIGINT, signal.SIG_IGN),
        (signal.SIGTERM, "ended_late"), (signal.SIGHUP, "ended_late")]
    # started ignoring SIGHUP and SIGTERM (nohup): left ignored (a trial: a replay under nohup ended with its terminal)
    handlers.clear()
    monkeypatch.setattr(hspr._entry.signal, "getsignal", lambda sig: signal.SIG_IGN)
    with pytest.raises(SystemExit) as done:
        run()
    assert done.value.code == 0 and handlers == [(signal.SIGINT, signal.SIG_IGN)]
    monkeypatch.undo()
    # a SIGTERM Python swallowed (raised in a callback it cannot pass an exception on from): the command ran to its
    # end; it exits 143 all the same, saying its work is complete (a trial: a traceback, then exit 0)
    import hspr.cli

    def swallowed(**kwargs):
        signal.raise_signal(signal.SIGTERM)  # raises Terminated in this frame: caught here, as Python's callback does
        sys.exit(0)

    monkeypatch.setattr(hspr.cli, "main", lambda **kwargs: _swallow(swallowed))
    with pytest.raises(SystemExit) as done:
        run()
    assert done.value.code == 143 and capsys.readouterr().err == "terminated (SIGTERM) as the command ended: its work is complete\n"
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # the test process's own, as run() found them
    signal.signal(signal.SIGHUP, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.unraisablehook = sys.__unraisablehook__
    # and while click reads the command line (the command's module loads): 130, not click's "Aborted!" and 1
    import click

    def reading(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(click.Command, "make_context", reading)
    res = CliRunner().invoke(main, ["banks"])
    assert res.exit_code == 130 and res.stderr == "\ninterrupted\n" and "Aborted" not in res.output
    from pathlib import Path

    with open(Path(__file__).parents[1] / "pyproject.toml", encoding="utf-8") as f:  # the command is this function
        assert 'hspr = "hspr._entry:run"' in f.read()


def test_replay_results_on_stdout_are_the_json_alone(files, tmp_path):
    """A re-trial: `replay --out /dev/stdout > r.json` (the advice for '-') got the summary table after the JSON,
    so the stream could not be parsed; the table goes to stderr then."""
    import subprocess
    import sys

    res = subprocess.run([sys.executable, "-m", "hspr", "replay", "--matrix", str(files / "bank.csv"), "--methods", "uniform",
                          "--seeds", "0", "--workers", "1", "-q", "--out", "/dev/stdout"],
                         capture_output=True, text=True, cwd=tmp_path, env={**os.environ, "HSPR_CACHE_DIR": str(tmp_path / "c")})
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert len(doc["runs"]) == 12 and {r["method"] for r in doc["runs"]} == {"uniform"}
    assert "Score recovery" in res.stderr and "wrote /dev/stdout (12 runs)" in res.stderr


def test_a_bank_built_or_merged_on_stdout_is_the_csv_alone(files, tmp_path):
    """A scripting trial: `bank build lite --out /dev/stdout` ended the CSV with its summary line, which pandas
    read as a row; the line goes to stderr then (merge's too), and --json with it is refused (as merge's was)."""
    import subprocess
    import sys

    import pandas as pd

    env = {**os.environ, "HSPR_CACHE_DIR": str(tmp_path / "c")}
    for args in (["build", str(files / "bank.csv")], ["merge", str(files / "bank.csv"), str(files / "bank.csv")]):
        res = subprocess.run([sys.executable, "-m", "hspr", "bank", *args, "--out", "/dev/stdout"], capture_output=True,
                             text=True, cwd=tmp_path, env=env)
        assert res.returncode == 0, res.stderr
        assert res.stdout == (files / "bank.csv").read_text() and "/dev/stdout: " in res.stderr, (res.stdout, res.stderr)
        assert pd.read_csv(io.StringIO(res.stdout)).shape[0] == len((files / "bank.csv").read_text().splitlines()) - 1
        res = CliRunner().invoke(main, ["bank", *args, "--out", "/dev/stdout", "--json"])
        assert res.exit_code == 2 and "--json prints its summary on stdout, where --out /dev/stdout writes the bank" \
            in " ".join(res.output.split())


def test_a_selection_config_on_stdout_is_the_json_alone(files, tmp_path):
    """A hostile trial: `select --config-out /dev/stdout > cfg.json` wrote the stage table after the config."""
    import subprocess
    import sys

    res = subprocess.run([sys.executable, "-m", "hspr", "select", "--matrix", str(files / "bank.csv"), "--fold", "0",
                          "--fast", "-j", "1", "-q", "--config-out", "/dev/stdout"],
                         capture_output=True, text=True, cwd=tmp_path, env={**os.environ, "HSPR_CACHE_DIR": str(tmp_path / "c")})
    assert res.returncode == 0, res.stderr
    assert set(json.loads(res.stdout)) >= {"rank", "gamma", "kappa", "acquisition", "lam"}
    assert "HSPR source-only selection" in res.stderr


def test_an_out_file_in_a_folder_that_cannot_be_written_is_said_to_be_replaced_not_created(tmp_path, monkeypatch):
    """A trial (as a user without root): --out x.json, a file it may write in a folder it may not, was told 'cannot
    create'; the file exists, and is replaced through its folder. Root writes any folder: the check is told no."""
    import click

    from hspr.cli import outputs

    (tmp_path / "x.json").write_text("{}")
    monkeypatch.setattr(outputs.os, "access", lambda path, mode: False)
    with pytest.raises(click.BadParameter, match=r"cannot replace .*x.json: the folder .* is not writable \(a file is "
                                                 r"written beside it and moved over it"):
        outputs._writable_ancestor(tmp_path / "x.json", "--out")
    with pytest.raises(click.BadParameter, match=r"cannot create .*y.json: the folder .* is not writable; choose"):
        outputs._writable_ancestor(tmp_path / "y.json", "--out")
    with pytest.raises(click.BadParameter, match=r"cannot write into .*: the folder .* is not writable; choose"):
        outputs.check_output_dir(tmp_path, "--out-dir")


def test_a_folder_that_access_calls_writable_but_takes_no_file_is_refused_before_the_work(tmp_path, monkeypatch):
    """As root, os.access says yes to /sys, and `select --out /sys/x.json` failed after minutes of selection: the
    folder is tested with a temporary file (and nothing is left); a device such as /dev/stdout is not tested."""
    import tempfile

    import click

    from hspr.cli import outputs

    (tmp_path / "keep.json").write_text("{}")
    outputs.check_output_file(tmp_path / "new" / "x.json", "--out")  # a writable folder passes, and gets nothing
    assert sorted(q.name for q in tmp_path.iterdir()) == ["keep.json"]

    def refuse(*args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(tempfile, "TemporaryFile", refuse)
    with pytest.raises(click.BadParameter, match=r"cannot write .*x.json: a test file could not be made in the folder "
                                                 r".* \(Permission denied\); this folder takes no files"):
        outputs.check_output_file(tmp_path / "x.json", "--out")
    assert outputs.check_output_file("/dev/stdout", "--out") == Path("/dev/stdout")
    result = CliRunner().invoke(main, ["select", "--bank", "lite", "--fold", "0", "--fast", "--out",
                                       str(tmp_path / "sel.json")])
    assert result.exit_code == 2 and "a test file could not be made" in result.output
    assert "select lite" not in result.output  # refused before the selection started


def test_an_output_in_a_folder_that_is_a_dangling_link_is_refused_before_the_work(tmp_path):
    """A re-trial: `replay --out lnk/x.json`, lnk a symbolic link to nothing, ran the whole replay and then said
    "File exists; ... free space"; `report --out-dir lnk/sub` said the same. A loop of links is named as one."""
    import click

    from hspr.cli import outputs

    (tmp_path / "lnk").symlink_to(tmp_path / "nowhere")
    with pytest.raises(click.BadParameter, match=r"the folder .*lnk is a symbolic link to .*nowhere, which does not "
                                                 r"exist \(a disk not mounted\?\)"):
        outputs._writable_ancestor(tmp_path / "lnk" / "sub" / "x.json", "--out")
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    with pytest.raises(click.BadParameter, match=r"the folder .*/a is a symbolic link to .*/b, which leads back to itself"):
        outputs._writable_ancestor(tmp_path / "a" / "x.json", "--out")


def test_links_to_a_stream_existing_folders_under_dev_and_streams_or_devices_as_a_session_are_seen(tmp_path, monkeypatch):
    """A hostile trial, as root: a link to /dev/stdout (or ``fd/1`` under a link to /proc/self/fd) with standard output
    closed took the results to the null device ("wrote l_out"); an existing folder under /dev (/dev/net) took a report,
    a replay's results and a session; `live start --force` opened a named pipe and hung, left a lock and a link to a
    device beside /dev/null-like devices, and made the file standard output went to into a session."""
    import subprocess
    import sys

    import click

    from hspr.cli import outputs
    from hspr.fileio import descriptor_of

    (tmp_path / "l_out").symlink_to("/dev/stdout")
    (tmp_path / "l_chain").symlink_to(tmp_path / "l_out")
    (tmp_path / "l_fd").symlink_to("/proc/self/fd")
    (tmp_path / "plain.json").write_text("{}")
    (tmp_path / "l_plain").symlink_to(tmp_path / "plain.json")
    assert [descriptor_of(tmp_path / n) for n in ("l_out", "l_chain", "l_plain", "plain.json")] == [1, 1, None, None]
    assert descriptor_of(tmp_path / "l_fd" / "2") == 2 and descriptor_of(f"/proc/{os.getpid()}/fd/5") == 5
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    assert descriptor_of(loop) is None  # a loop of links ends, naming no descriptor
    done = subprocess.run(f"{shlex.quote(sys.executable)} -m hspr bank build terminal-bench --out "
                          f"{shlex.quote(str(tmp_path / 'l_out'))} >&-", shell=True, executable="/bin/bash",
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "standard output was closed when hspr started" in done.stderr, done.stderr

    # an existing folder under /dev, or a link to one, takes no output; /dev/shm does
    sub = next((d for d in ("/dev/pts", "/dev/net", "/dev/cpu", "/dev/mqueue") if os.path.isdir(d)), None)
    if sub is not None:
        (tmp_path / "l_sub").symlink_to(sub)
        for out_dir in (sub, tmp_path / "l_sub"):
            with pytest.raises(click.BadParameter, match=r"cannot write into .*: /dev holds devices"):
                outputs.check_output_dir(out_dir, "--out-dir")
        with pytest.raises(click.BadParameter, match=r"cannot create .*hspr-x.json: /dev holds devices"):
            outputs.check_output_file(f"{sub}/hspr-x.json", "--out")
    assert outputs.in_dev(Path("/dev")) and not outputs.in_dev(Path("/dev/shm")) and not outputs.in_dev(tmp_path)
    # (the same re-trial: /dev/null as --out-dir was called a file)
    with pytest.raises(click.BadParameter, match=r"/dev/null is a device, named pipe or socket, not a folder; give a folder"):
        outputs.check_output_dir("/dev/null", "--out-dir")
    with pytest.raises(click.BadParameter, match=r"plain.json is a file, not a folder; give a folder"):
        outputs.check_output_dir(tmp_path / "plain.json", "--out-dir")
    assert not outputs.in_dev(Path("/dev/shm/x")) and not outputs.in_dev(Path("/devices"))

    # a session is a file: not a stream, a device or a named pipe, with --force or without; nothing is left beside them
    monkeypatch.chdir(tmp_path)
    start = ["live", "start", "--bank", "terminal-bench", "--method", "uniform", "--budget", "8", "--force", "--session"]
    with unread_fifo(tmp_path / "pipe") as fifo:
        for session, what in ((str(fifo), "is a named pipe, not a file"), ("/dev/null", "is a device, not a file"),
                              ("/dev/stdout", "is a stream, not a file"), ("-", "is a stream, not a file"),
                              ("l_out", "is a stream, not a file")):
            res = CliRunner().invoke(main, [*start, session])
            assert res.exit_code == 2 and what in res.output and "fitting" not in res.output, (session, res.output)
    made = {"l_chain", "l_fd", "l_out", "l_plain", "loop", "plain.json", "pipe"} | ({"l_sub"} if sub else set())
    assert {p.name for p in tmp_path.iterdir()} == made
    assert not Path("/dev/null.lock").exists() and not list(tmp_path.glob("*.replaced-*"))
