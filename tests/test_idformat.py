"""Task ids in each harness's form, parsed back with the harness's own rule (issue 12)."""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import re
import shlex

import pytest
from click.testing import CliRunner

from hspr.cli import main
from hspr.data.matrix import DataError
from hspr.idformat import FORMATS, format_ids, subset_predictions

IDS = ["astropy__astropy-12907", "django__django-11099", "sympy__sympy-20590", "scikit-learn__scikit-learn-13142"]
# ids a loose rule would also pick: a longer id with the same prefix, and a dot that must not be a wildcard
UNIVERSE = IDS + ["django__django-110990", "xastropy__astropy-12907", "sympy__sympy-20590x", "scikit-learn__scikit-learn-13142.1"]


def swebench_parse(text: str) -> list[str]:
    """swebench/harness/run_evaluation.py: -i/--instance_ids, nargs='+', type=str, after shell splitting."""
    p = argparse.ArgumentParser()
    p.add_argument("-i", "--instance_ids", nargs="+", type=str)
    return p.parse_args(["--instance_ids", *shlex.split(text)]).instance_ids


def sbcli_parse(text: str) -> list[str]:
    """sb_cli/submit.py: --instance_ids callback ``lambda x: x.split(',') if x else None``."""
    return (lambda x: x.split(",") if x else None)(text)


def mini_swe_agent_select(pattern: str, instance_ids: list[str]) -> list[str]:
    """minisweagent/run/benchmarks/swebench.py filter_instances: ``re.match(filter_spec, instance_id)``."""
    return [i for i in instance_ids if re.match(pattern, i)]


def harbor_select(args: str, task_names: list[str]) -> list[str]:
    """``harbor run ... $(hspr live next --format harbor)``: the shell splits the unquoted substitution at
    white space and removes no quotes; Harbor takes ``-i/--include-task-name`` (repeatable, the next word
    its value) into ``DatasetConfig.task_names``, and ``_filter_task_ids`` keeps a task when ``fnmatch``
    matches one pattern; no match at all is an error."""
    words = args.split()
    assert words[::2] == ["-i"] * (len(words) // 2) and len(words) % 2 == 0
    patterns = words[1::2]
    kept = [t for t in task_names if any(fnmatch.fnmatch(t, pat) for pat in patterns)]
    if not kept:
        raise ValueError(f"No tasks matched the filter(s) {patterns}")
    return kept


def test_each_form_parses_back_to_the_ids():
    assert [x for x in format_ids(IDS, "lines").splitlines() if x.strip()] == IDS
    assert swebench_parse(format_ids(IDS, "space")) == IDS
    assert sbcli_parse(format_ids(IDS, "csv")) == IDS
    assert json.loads(format_ids(IDS, "json")) == IDS
    assert mini_swe_agent_select(format_ids(IDS, "regex"), UNIVERSE) == IDS
    assert mini_swe_agent_select(format_ids([], "regex"), UNIVERSE) == []
    assert harbor_select(format_ids(IDS, "harbor"), UNIVERSE) == IDS
    assert set(FORMATS) == {"lines", "space", "csv", "json", "regex", "harbor"}


def test_harbor_form_escapes_glob_and_shell_characters_and_never_means_every_task():
    # Terminal-Bench names are plain, but a dataset of one's own may hold glob or shell characters
    # (a hostile trial: shell-quoted ids reached Harbor with their quotes in an unquoted $(...) and matched nothing)
    odd = ["fix-[bug]", "a*b", "what?", "it's-$HOME", "hash#1", "ünïcödé", "-rf", "plain-task"]
    universe = odd + ["fix-b", "aXb", "what!", "it's-x", "hash#2", "plain-task-2"]
    assert harbor_select(format_ids(odd, "harbor"), universe) == odd
    assert harbor_select(format_ids(["fix-[bug]"], "harbor"), universe) == ["fix-[bug]"]
    with pytest.raises(ValueError, match="No tasks matched"):  # nothing asked: Harbor stops instead of running all
        harbor_select(format_ids([], "harbor"), universe)
    with pytest.raises(ValueError, match="white space"):  # the shell would split it into two words
        format_ids(["two words"], "harbor")


def test_separator_inside_an_id_is_refused():
    with pytest.raises(ValueError, match="separator"):
        format_ids(["a,b"], "csv")
    with pytest.raises(ValueError, match="separator"):
        format_ids(["a b"], "space")
    with pytest.raises(ValueError, match="unknown id format"):
        format_ids(IDS, "xml")


@pytest.mark.parametrize("form", ["jsonl", "list", "dict"])
def test_predictions_are_cut_to_the_asked_tasks_in_their_own_form(tmp_path, form):
    preds = [{"instance_id": i, "model_name_or_path": "m", "model_patch": f"diff {k}"} for k, i in enumerate(UNIVERSE)]
    src = tmp_path / ("preds.jsonl" if form == "jsonl" else "preds.json")
    if form == "jsonl":
        src.write_text("".join(json.dumps(p) + "\n" for p in preds))
    elif form == "list":
        src.write_text(json.dumps(preds))
    else:
        src.write_text(json.dumps({p["instance_id"]: p for p in preds}))
    out = tmp_path / ("sub" + src.suffix)
    missing = subset_predictions(src, IDS[:3] + ["nope__nope-1"], out)
    assert missing == ["nope__nope-1"]
    if form == "jsonl":
        got = [json.loads(x) for x in out.read_text().splitlines()]
    elif form == "list":
        got = json.loads(out.read_text())
    else:
        got = list(json.loads(out.read_text()).values())
    assert [p["instance_id"] for p in got] == IDS[:3] and got[0]["model_patch"] == "diff 0"


@pytest.mark.parametrize("form", ["jsonl", "list", "dict"])
@pytest.mark.parametrize("suffix", [".jsonl", ".json", ".txt"])
def test_the_cut_down_file_has_the_form_its_name_calls_for(tmp_path, form, suffix):
    """A hostile trial: preds.jsonl cut to sub.json stayed JSON Lines, which sb-cli and the harness
    then read as JSON (the .json rule) and refuse; each output is read back by that same rule."""
    preds = [{"instance_id": i, "model_patch": f"diff {k}"} for k, i in enumerate(UNIVERSE)]
    src = tmp_path / ("preds.jsonl" if form == "jsonl" else "preds.json")
    if form == "jsonl":
        src.write_text("".join(json.dumps(p) + "\n" for p in preds))
    elif form == "list":
        src.write_text(json.dumps(preds))
    else:  # keyed by id, the records without their own instance_id
        src.write_text(json.dumps({p["instance_id"]: {"model_patch": p["model_patch"]} for p in preds}))
    out = tmp_path / f"sub{suffix}"
    assert subset_predictions(src, IDS[:2], out) == []
    if suffix == ".json":
        data = json.loads(out.read_text())
        got = list(data.values()) if form == "dict" else data
        if form == "dict":
            assert list(data) == IDS[:2]
    else:
        got = [json.loads(x) for x in out.read_text().splitlines()]
    assert [p.get("instance_id", k) for k, p in zip(IDS[:2], got)] == IDS[:2]
    assert [p["model_patch"] for p in got] == ["diff 0", "diff 1"]
    if not (suffix == ".json" and form == "dict"):  # a list or JSON Lines record names its task
        assert [p["instance_id"] for p in got] == IDS[:2]


def test_bad_predictions_name_the_line(tmp_path):
    src = tmp_path / "p.jsonl"
    src.write_text('{"instance_id": "a"}\n{"model_patch": "x"}\n')
    with pytest.raises(DataError, match="line 2"):
        subset_predictions(src, ["a"], tmp_path / "o.jsonl")
    # two different predictions of an asked task are refused (hostile trial); the same one twice, or
    # a conflict on a task not asked, is not
    src.write_text('{"instance_id": "a", "model_patch": "x"}\n{"instance_id": "a", "model_patch": "y"}\n'
                   '{"instance_id": "b", "model_patch": "z"}\n')
    with pytest.raises(DataError, match="two different predictions for instance id 'a'"):
        subset_predictions(src, ["a"], tmp_path / "o.jsonl")
    assert subset_predictions(src, ["b"], tmp_path / "o.jsonl") == []
    src.write_text('{"instance_id": "a", "model_patch": "x"}\n{"instance_id":"a","model_patch":"x"} \n')
    assert subset_predictions(src, ["a"], tmp_path / "o.jsonl") == []  # the same record spelled otherwise
    assert len((tmp_path / "o.jsonl").read_text().splitlines()) == 1  # written once (a trial: 6 lines for 5 tasks)


def test_one_prediction_object_in_a_json_file_is_not_read_as_keyed_by_id(tmp_path):
    """A review: {"instance_id": "a", ...} in p.json was read as keyed by id, so every asked task 'had no prediction'."""
    src = tmp_path / "p.json"
    src.write_text('{"instance_id": "a", "model_patch": "x", "model_name_or_path": "m"}')
    with pytest.raises(DataError, match=r"holds one prediction object \(instance_id 'a'\).*wrap it in \[ \]"):
        subset_predictions(src, ["a"], tmp_path / "o.json")
    src.write_text('{"a": {"instance_id": "a", "model_patch": "x"}, "b": "oops"}')
    with pytest.raises(DataError, match="the value of key 'b' is str, not a prediction object"):
        subset_predictions(src, ["a"], tmp_path / "o.json")
    src.write_text('{"a": {"instance_id": "a", "model_patch": "x"}, "b": {"instance_id": "b"}}')
    assert subset_predictions(src, ["a", "c"], tmp_path / "o.json") == ["c"]
    assert json.loads((tmp_path / "o.json").read_text()) == {"a": {"instance_id": "a", "model_patch": "x"}}
    # a key naming one task over a prediction of another: the harness would run the inner id (a trial)
    src.write_text('{"a": {"instance_id": "z", "model_patch": "x"}}')
    with pytest.raises(DataError, match="key 'a' holds a prediction whose instance_id is 'z'"):
        subset_predictions(src, ["a"], tmp_path / "o.json")


def test_live_next_prints_and_writes_each_form(tmp_path):
    s = tmp_path / "s.hspr"
    runner = CliRunner()
    assert runner.invoke(main, ["live", "start", "--bank", "lite", "--budget", "6", "--session", str(s),
                                "--method", "hspr", "--config", _fast(tmp_path)]).exit_code == 0
    res = runner.invoke(main, ["live", "next", "--batch", "3", "--format", "space", "--session", str(s)])
    ids = swebench_parse(res.stdout.strip())
    assert len(ids) == 3 and res.exit_code == 0
    res = runner.invoke(main, ["live", "next", "--batch", "3", "--format", "csv", "--out", str(tmp_path / "ids.txt"),
                               "--session", str(s)])
    assert res.exit_code == 0 and sbcli_parse((tmp_path / "ids.txt").read_text().strip()) == ids
    preds = tmp_path / "all.jsonl"
    preds.write_text("".join(json.dumps({"instance_id": i, "model_patch": ""}) + "\n" for i in ids[:2]))
    res = runner.invoke(main, ["live", "next", "--batch", "3", "--predictions", str(preds), "--out",
                               str(tmp_path / "sub.jsonl"), "--session", str(s)])
    assert res.exit_code == 0 and f"no prediction for {ids[2]}" in res.output
    assert [json.loads(x)["instance_id"] for x in (tmp_path / "sub.jsonl").read_text().splitlines()] == ids[:2]
    res = runner.invoke(main, ["live", "next", "--batch", "3", "--predictions", str(preds), "--out",
                               str(tmp_path / "sub2.jsonl"), "--session", str(s), "--json"])
    assert json.loads(res.stdout)["missing_predictions"] == [ids[2]]  # a script reads it too (was stderr only)
    res = runner.invoke(main, ["live", "next", "--predictions", str(preds), "--session", str(s)])
    assert res.exit_code == 2 and "--out" in res.output
    # a new-user trial: --format with --json was ignored silently; with --out it is the file's format
    res = runner.invoke(main, ["live", "next", "--format", "space", "--json", "--session", str(s)])
    assert res.exit_code == 2 and "--format space with --json" in json.loads(res.stdout)["error"]
    res = runner.invoke(main, ["live", "next", "--format", "space", "--json", "--out", str(tmp_path / "sp.txt"),
                               "--session", str(s)])
    assert res.exit_code == 0 and (tmp_path / "sp.txt").read_text().split() == json.loads(res.stdout)["tasks"]
    # a hostile trial: `--out ids.json` got one id per line, and --format beside --predictions was ignored
    res = runner.invoke(main, ["live", "next", "--batch", "3", "--out", str(tmp_path / "ids.json"), "--session", str(s)])
    assert res.exit_code == 0 and json.loads((tmp_path / "ids.json").read_text()) == ids
    res = runner.invoke(main, ["live", "next", "--batch", "3", "--format", "csv", "--predictions", str(preds), "--out",
                               str(tmp_path / "sub3.jsonl"), "--session", str(s)])
    assert res.exit_code == 2 and "--format csv with --predictions" in res.output
    assert not (tmp_path / "sub3.jsonl").exists()
    # a docs audit: `--out subset.json` beside --predictions was taken for --format json, and refused
    res = runner.invoke(main, ["live", "next", "--batch", "3", "--predictions", str(preds), "--out",
                               str(tmp_path / "sub4.json"), "--session", str(s)])
    got = json.loads((tmp_path / "sub4.json").read_text())
    assert res.exit_code == 0 and sorted(p["instance_id"] for p in (got.values() if isinstance(got, dict) else got)) \
        == sorted(ids[:2])


def test_a_failed_live_next_never_means_every_task(tmp_path):
    """A re-trial: a failed `next --format harbor` printed nothing, so `harbor run ... $(...)` got no -i and ran
    every task; and an id the form refuses was found only after the batch was asked, so every later `next` failed."""
    import pandas as pd
    m = pd.DataFrame([[1, 0, 1, 0], [0, 1, 1, 0], [1, 1, 0, 0], [0, 0, 1, 1]], columns=["a", "has space", "c", "d"],
                     index=pd.Index(["x1", "x2", "x3", "x4"], name="agent"))
    bank = tmp_path / "m.csv"
    m.to_csv(bank)
    s = tmp_path / "s.hspr"
    runner = CliRunner()
    assert runner.invoke(main, ["live", "start", "--matrix", str(bank), "--budget", "4", "--session", str(s),
                                "--method", "uniform"]).exit_code == 0
    res = runner.invoke(main, ["live", "next", "--batch", "4", "--format", "harbor", "--session", str(s)])
    assert res.exit_code == 2 and "white space" in res.stderr
    assert res.stdout.strip() == "-i ''"  # Harbor stops: "No tasks matched"
    with pytest.raises(ValueError, match="No tasks matched"):
        harbor_select(res.stdout, ["a", "has space", "c", "d"])
    res = runner.invoke(main, ["live", "status", "--json", "--session", str(s)])
    assert json.loads(res.stdout)["pending"] == []  # nothing was asked
    res = runner.invoke(main, ["live", "next", "--format", "regex", "--session", str(tmp_path / "none.hspr")])
    assert res.exit_code == 2 and mini_swe_agent_select(res.stdout.strip(), UNIVERSE) == []
    # a new-user trial: a command line click refuses (a mistyped option, --batch 0) printed nothing
    import click

    from hspr.cli import LIVE_COMMANDS
    live_group = main.get_command(click.Context(main), "live")
    assert set(LIVE_COMMANDS) == set(live_group.list_commands(click.Context(live_group)))  # the list it reads is whole
    for bad in (["--sesion", str(s)], ["--batch", "0", "--session", str(s)], ["--session", str(s), "stray"]):
        for form, chosen in (("harbor", lambda out: harbor_select(out, ["a", "c", "d"])),
                             ("regex", lambda out: mini_swe_agent_select(out.strip(), UNIVERSE))):
            for spelled in (["--format", form], [f"--format={form}"]):
                res = runner.invoke(main, ["live", "next", *spelled, *bad])
                assert res.exit_code == 2 and res.stdout.strip() == format_ids([], form), (bad, spelled, res.stdout)
                if form == "harbor":
                    with pytest.raises(ValueError, match="No tasks matched"):
                        chosen(res.stdout)
                else:
                    assert chosen(res.stdout) == []
    # a hostile trial: a mistyped form or option name, a mistyped command, an option of the group, and a refusal
    # before the session was read each printed nothing
    (tmp_path / "p.jsonl").write_text("")
    for words in (["live", "next", "--format", "Harbor"], ["live", "next", "--format", "harbour"],
                  ["live", "next", "--form", "harbor"], ["live", "next", "--forma=harbor"],
                  ["live", "nxt", "--format", "harbor"], ["live", "--bogus", "next", "--format", "harbor"],
                  ["lve", "next", "--format", "harbor"], ["live", "next", "-f", "harbor"], ["live", "next", "--fmt", "harbor"],
                  ["live", "--session", "x.hspr", "next", "--format", "harbor"],  # a second re-trial: an option's value
                  # a third re-trial: a file name close to a command before the group, no group, a typo closer to ingest
                  ["--session", "report.hspr", "live", "next", "--format", "harbor"], ["next", "--format", "harbor"],
                  ["live", "nest", "--format", "harbor"],
                  ["--bogus", "live", "next", "--format", "harbor"],
                  ["live", "next", "--format", "harbor", "--predictions", str(tmp_path / "p.jsonl")],
                  # session 26: the value attached to -f, and a form's name begun
                  ["live", "next", "-fharbor"], ["live", "next", "--format", "har"], ["live", "next", "--format=harb"]):
        res = runner.invoke(main, [*words, "--session", str(s)])
        assert res.exit_code == 2 and res.stdout.strip() == "-i ''", (words, res.stdout)
    for words in (["live", "next", "-fre"], ["live", "next", "--format", "reg"]):
        res = runner.invoke(main, [*words, "--session", str(s)])
        assert res.exit_code == 2 and res.stdout.strip() == format_ids([], "regex"), (words, res.stdout)
    # a re-trial: other commands, other forms and a path like 'harbor' printed it too, where a script reads ids
    for words in (["live", "next", "--format", "lines", "--batch", "0"], ["bank", "build", "harbor", "--bogus"],
                  ["live", "start", "--format", "harbor", "--out", "x"], ["live", "ingest", "harbor_jobs"],
                  ["live", "next", "--session", "harbor.hspr", "--batch", "0"], ["live", "status", "next", "--bogus", "harbor"],
                  ["live", "next", "--format", "lines", "--stop-width", "harbor"],
                  # a second re-trial: a later --format, --json=1, a command close to another, values reading as commands
                  ["live", "next", "--format", "harbor", "--format", "lines", "--bogus"],
                  ["live", "next", "--format", "harbor", "--json=1", "--bogus"], ["live", "ngest", "j", "--format", "harbor"],
                  ["live", "--session", "next.hspr", "status", "--format", "harbor"],
                  ["select", "--bank", "verified", "--session", "live", "--tasks", "next.txt", "--format", "harbor"],
                  # a third re-trial: a later exact 'next' after a typed command, and -o / --ou for --out
                  ["live", "ingst", "next", "--format", "harbor"], ["live", "strat", "--tag", "next", "--format", "harbor"],
                  ["live", "next", "--format", "harbor", "-o", "ids.txt"], ["live", "next", "--format", "harbor", "--ou", "x"],
                  ["live", "next", "-flines", "--bogus"], ["live", "next", "--format", "h", "--bogus"]):
        res = runner.invoke(main, [*words, "--session", str(s)])
        assert res.exit_code == 2 and res.stdout == "", (words, res.stdout)
    res = runner.invoke(main, ["live", "next", "--format", "harbor", "--batch", "0", "--json", "--session", str(s)])
    assert res.exit_code == 2 and "error" in json.loads(res.stdout)  # --json: its JSON object, as for any refusal
    res = runner.invoke(main, ["--json", "live", "status", "--session", str(s)])  # --json before the command
    assert res.exit_code == 2 and "No such option '--json'" in json.loads(res.stdout)["error"]
    assert "put it after the command, e.g. hspr live status --json" in json.loads(res.stdout)["error"]
    res = runner.invoke(main, ["live", "next", "--format", "harbor", "--batch", "0", "--out", str(tmp_path / "o")])
    assert res.exit_code == 2 and res.stdout == "" and not (tmp_path / "o").exists()  # --out: nothing on stdout
    res = runner.invoke(main, ["live", "next", "--batch", "2", "--format", "json", "--session", str(s)])
    assert res.exit_code == 0 and len(json.loads(res.stdout)) == 2  # other forms take the id


def test_a_refused_live_next_changes_nothing_in_the_session(tmp_path):
    """A hostile trial: `next --stop-width 5 --out <the bank>` was refused but saved the stop width,
    and a malformed --predictions file was read only after the tasks were asked (and journaled)."""
    s = tmp_path / "s.hspr"
    runner = CliRunner()
    assert runner.invoke(main, ["live", "start", "--bank", "lite", "--budget", "6", "--session", str(s),
                                "--method", "hspr", "--config", _fast(tmp_path)]).exit_code == 0
    kept = s.read_bytes()
    res = runner.invoke(main, ["live", "next", "--stop-width", "5", "--out", str(s), "--session", str(s)])
    assert res.exit_code == 2 and "is also the session file" in res.output
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"instance_id": "x"}\nnot json\n')
    res = runner.invoke(main, ["live", "next", "--stop-width", "5", "--predictions", str(bad), "--out",
                               str(tmp_path / "sub.jsonl"), "--session", str(s)])
    assert res.exit_code == 2 and "line 2 is not JSON" in res.output
    assert s.read_bytes() == kept and not (tmp_path / "sub.jsonl").exists()


def test_a_form_refused_by_an_id_not_yet_asked_says_it_is_a_bank_task(tmp_path):
    """A hostile trial: `next --format space` named 'task with space' although the batch held other ids; every
    bank id is checked before any is asked (each may be asked later), and the message now says so."""
    bank = tmp_path / "b.csv"
    tasks = ["t1", "t2", "t3", "task with space"]
    bank.write_text("agent," + ",".join(tasks) + "\n" + "".join(f"a{i}," + ",".join(str((i + j) % 2) for j in range(4))
                                                              + "\n" for i in range(6)))
    s = tmp_path / "s.hspr"
    runner = CliRunner()
    assert runner.invoke(main, ["live", "start", "--matrix", str(bank), "--budget", "2", "--session", str(s),
                                "--method", "uniform"]).exit_code == 0
    kept = s.read_bytes()
    res = runner.invoke(main, ["live", "next", "--format", "space", "--session", str(s)])
    said = " ".join(res.output.split())
    assert res.exit_code == 2 and "task id(s) ['task with space'] contain the separator of --format space" in said
    assert "(tasks of this bank, all checked before any is asked: each may be asked later)" in said
    assert s.read_bytes() == kept


def _fast(tmp_path) -> str:
    cfg = tmp_path / "fast.json"
    cfg.write_text(json.dumps({"n_nodes": 256}))
    return str(cfg)


def test_id_text_is_recognised_in_every_form_and_nothing_else_is():
    """``next --out`` replaces only what it writes (a hostile trial: it replaced a predictions file, a
    harness CSV and another bank without a word): every form of every id list round-trips; other
    text, and ids of another bank, do not."""
    from hspr.idformat import is_id_text

    odd = ["a|b", "c\\d", "e[*]f", "g?h", "i$j^", "k(l)", "m'n\"o", "p.q+r"]
    known = set(IDS) | set(odd) | {"zz"}
    for ids in ([], IDS[:1], IDS, odd, IDS + odd):
        for form in FORMATS:
            try:
                text = format_ids(ids, form)
            except ValueError:  # an id with the form's separator
                continue
            assert is_id_text(text, known) and is_id_text(text + "\n", known), (form, ids)
            if ids:
                assert not is_id_text(text, known - {ids[-1]}), (form, ids)  # an id the bank lacks
    for other in (json.dumps({"instance_id": IDS[0], "model_patch": ""}) + "\n", f"instance_id,resolved\n{IDS[0]},1\n",
                  f"agent,{IDS[0]}\nx,1\n", "hello\n\nworld\n", f"{IDS[0]}\n\n", "-i", "^(?:)$x"):
        assert not is_id_text(other, known), other
    assert is_id_text("", known)


def test_live_next_out_replaces_its_own_output_only(tmp_path):
    """A hostile trial: `next --out` replaced a predictions file, an ingested harness CSV and another bank
    (and the session's lock file and kept torn record), and 'keep.txt/' wrote over keep.txt."""
    s = tmp_path / "s.hspr"
    runner = CliRunner()
    assert runner.invoke(main, ["live", "start", "--bank", "lite", "--budget", "6", "--session", str(s),
                                "--method", "uniform"]).exit_code == 0
    ids = tmp_path / "ids.txt"
    for form in ("lines", "harbor", "regex", "json"):  # its own output, in any form, is replaced
        res = runner.invoke(main, ["live", "next", "--batch", "2", "--format", form, "--out", str(ids), "--session", str(s)])
        assert res.exit_code == 0, res.output
    asked = json.loads(ids.read_text())
    others = {"preds.jsonl": "".join(json.dumps({"instance_id": i, "model_patch": ""}) + "\n" for i in asked),
              "harness.csv": f"instance_id,resolved\n{asked[0]},1\n", "notes.txt": "my notes\n",
              "bank.csv": f"agent,{asked[0]}\nx,1\n", "s.hspr.torn": '{"type": "tell", "ta'}
    for name, text in others.items():
        (tmp_path / name).write_text(text)
        res = runner.invoke(main, ["live", "next", "--out", str(tmp_path / name), "--session", str(s)])
        assert res.exit_code == 2 and (tmp_path / name).read_text() == text, (name, res.output)
        assert "it is not replaced" in res.output or "torn record" in res.output, res.output
    # a re-trial: a curated list of bank ids the session never asked, and any path under /proc/, were replaced
    from hspr.data import load_bank

    unasked = [t for t in load_bank("lite").tasks if t not in asked][:40]
    (tmp_path / "hard40.txt").write_text("\n".join(unasked) + "\n")
    for out in (tmp_path / "hard40.txt", f"/proc/{os.getpid()}/root{tmp_path / 'notes.txt'}"):
        res = runner.invoke(main, ["live", "next", "--out", str(out), "--session", str(s)])
        assert res.exit_code == 2 and "it is not replaced" in res.output, res.output
    assert (tmp_path / "notes.txt").read_text() == "my notes\n" and len((tmp_path / "hard40.txt").read_text().split()) == 40
    # a re-trial: 'x/.' wrote over x, and another session's lock file was replaced
    res = runner.invoke(main, ["live", "next", "--out", str(tmp_path / "notes.txt") + "/.", "--session", str(s)])
    assert res.exit_code == 2 and "names a folder" in res.output
    (tmp_path / "other.hspr").write_bytes(s.read_bytes())
    (tmp_path / "other.hspr.lock").write_text("")
    res = runner.invoke(main, ["live", "next", "--out", str(tmp_path / "other.hspr.lock"), "--session", str(s)])
    assert res.exit_code == 2 and "is the lock file of the session" in res.output
    # a second re-trial: through a symlink, and by `start --force` as a session file
    (tmp_path / "lk.txt").symlink_to(tmp_path / "other.hspr.lock")
    res = runner.invoke(main, ["live", "next", "--out", str(tmp_path / "lk.txt"), "--session", str(s)])
    assert res.exit_code == 2 and "is the lock file of the session" in res.output
    res = runner.invoke(main, ["live", "start", "--bank", "lite", "--budget", "6", "--method", "uniform", "--force",
                               "--session", str(tmp_path / "other.hspr.lock")])
    assert res.exit_code == 2 and "is the lock file of the session" in res.output
    res = runner.invoke(main, ["live", "start", "--bank", "lite", "--budget", "6", "--method", "uniform",
                               "--session", str(tmp_path / "z.hspr") + "/"])
    assert res.exit_code == 2 and "names a folder" in res.output and not (tmp_path / "z.hspr").exists()
    res = runner.invoke(main, ["bank", "build", "lite", "--out", str(tmp_path / "bank.csv") + "/"])
    assert res.exit_code == 2 and "names a folder" in res.output
    # a session started again: its earlier batch file is refused, in words that say what it holds
    (tmp_path / "old.txt").write_text("\n".join(unasked[:3]) + "\n")
    res = runner.invoke(main, ["live", "next", "--out", str(tmp_path / "old.txt"), "--session", str(s)])
    assert res.exit_code == 2 and "holds task ids of this bank that this session has not asked" in res.output
    (tmp_path / "s.hspr.lock").write_text("")
    res = runner.invoke(main, ["live", "next", "--out", str(tmp_path / "s.hspr.lock"), "--session", str(s)])
    assert res.exit_code == 2 and f"is the lock file of the session {s}" in res.output
    res = runner.invoke(main, ["live", "next", "--out", "-", "--session", str(s)])  # not a file named '-'
    assert res.exit_code == 2 and "--out -: to print on stdout leave out --out" in res.output
    res = runner.invoke(main, ["live", "next", "--out", str(tmp_path / "notes.txt") + "/", "--session", str(s)])
    assert res.exit_code == 2 and "names a folder" in res.output and (tmp_path / "notes.txt").read_text() == "my notes\n"
    # with --predictions: a cut-down predictions file of this session's tasks is replaced, another file is not
    sub = tmp_path / "sub.jsonl"
    for _ in range(2):
        res = runner.invoke(main, ["live", "next", "--batch", "2", "--predictions", str(tmp_path / "preds.jsonl"),
                                   "--out", str(sub), "--session", str(s)])
        assert res.exit_code == 0, res.output
    res = runner.invoke(main, ["live", "next", "--batch", "2", "--predictions", str(tmp_path / "preds.jsonl"),
                               "--out", str(tmp_path / "harness.csv"), "--session", str(s)])
    assert res.exit_code == 2 and "does not hold predictions of tasks this session asked only" in res.output
    # a re-trial: another run's whole predictions file (ids of the bank, most never asked) was cut to one line
    run2 = tmp_path / "preds_run2.jsonl"
    run2.write_text("".join(json.dumps({"instance_id": i, "model_patch": "x"}) + "\n" for i in asked + unasked))
    res = runner.invoke(main, ["live", "next", "--batch", "2", "--predictions", str(tmp_path / "preds.jsonl"),
                               "--out", str(run2), "--session", str(s)])
    assert res.exit_code == 2 and len(run2.read_text().splitlines()) == len(asked) + len(unasked)
