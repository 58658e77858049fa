"""The bundled banks: documented shapes, missing cells, shipped folds and ``hspr banks``."""

from __future__ import annotations

import json
import shlex

import click
import numpy as np
import pytest
from click.testing import CliRunner

from hspr.cli.bank import register
from hspr.data.banks import BANK_ORDER, BANKS, load_bank, load_target_set
from hspr.data.folds import N_FOLDS, bank_folds, make_folds
from hspr.data.matrix import DataError
from hspr.errors import HsprError, UnknownIdError

SHAPES = {"lite": (84, 300), "verified": (114, 500), "full": (22, 2294), "pro": (14, 730), "multimodal": (12, 510),
          "terminal-bench": (25, 80)}


@pytest.mark.parametrize("name", BANK_ORDER)
def test_bank_shapes(name):
    m = load_bank(name)
    assert m.shape == SHAPES[name]
    assert m.n_missing == 0
    assert set(np.unique(m.values)) <= {0, 1}
    assert m.source == f"bank:{name}"


def test_pro_raw_missing():
    raw = load_bank("pro", missing_as_zero=False)
    assert raw.shape == SHAPES["pro"]
    assert raw.n_missing == 491
    filled = load_bank("pro")
    assert raw.agents == filled.agents and raw.tasks == filled.tasks
    np.testing.assert_array_equal(raw.fill_missing(0).values, filled.values)


def test_unknown_bank():
    with pytest.raises(DataError, match="unknown bank 'nope';") as exc:
        load_bank("nope")
    assert "did you mean" not in str(exc.value)
    # a hostile trial: a misspelt bank got no hint; a target set is named only where one is taken
    with pytest.raises(DataError, match=r"unknown bank 'verifed' \(did you mean 'verified'\?\)"):
        load_bank("verifed")
    with pytest.raises(DataError, match=r"unknown bank 'Lite ' \(did you mean 'lite'\?\)"):
        load_bank("Lite ")
    with pytest.raises(DataError, match=r"unknown bank 'bash-onl';"):
        load_bank("bash-onl")
    from hspr.data.banks import bank_provenance

    with pytest.raises(DataError, match=r"unknown bank 'bash-onl' \(did you mean 'bash-only'\?\)"):
        bank_provenance("bash-onl")
    res = _cli("bank", "agents", "verifed")
    assert res.exit_code == 2 and "nor a file; did you mean 'verified'?" in res.output
    # its re-trial: a target set named as a bank got no way to it; `bank agents` lists a target set's agents
    with pytest.raises(DataError, match=r"'bash-only' is a target set, not a bank: .*\(--bank verified --targets bash-only"):
        load_bank("bash-only")
    with pytest.raises(DataError, match=r"unknown target set 'bash_only' \(did you mean 'bash-only'\?\)"):
        load_target_set("bash_only")
    res = _cli("bank", "agents", "bash-only", "--json")
    assert res.exit_code == 0 and len(json.loads(res.stdout)) == load_target_set("bash-only").n_agents


@pytest.mark.parametrize("name", BANK_ORDER)
def test_shipped_folds_partition_agents(name):
    agents = load_bank(name).agents
    folds = bank_folds(name)
    assert len(folds) == N_FOLDS
    flat = [a for f in folds for a in f]
    assert len(flat) == len(set(flat)) == len(agents)  # disjoint, each agent once
    assert set(flat) == set(agents)
    assert all(folds[i] for i in range(N_FOLDS))
    assert folds == make_folds(agents)


def test_fold_errors_are_user_errors_naming_the_fix():
    # a docstring audit: bank_folds raised a bare KeyError, make_folds a plain ValueError
    with pytest.raises(UnknownIdError, match="no shipped folds for bank 'nope'.*make_folds"):
        bank_folds("nope")
    with pytest.raises(HsprError, match="4 agents are too few for 4 target folds"):
        make_folds(["a", "b", "c", "d"])
    assert make_folds(list("abcde")) == make_folds(list("edcba"))  # the order given does not matter


def _cli(*args):
    group = click.Group("hspr")
    register(group)
    return CliRunner().invoke(group, list(args))


def test_cli_banks_json():
    res = _cli("banks", "--json")
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout)
    assert [r["name"] for r in rows] == [*BANK_ORDER, "multimodal", "terminal-bench"]
    by = {r["name"]: r for r in rows}
    for name, (n_agents, n_tasks) in SHAPES.items():
        assert (by[name]["agents"], by[name]["tasks"], by[name]["missing"]) == (n_agents, n_tasks, 0)
        assert 0 <= by[name]["score_min_pct"] <= by[name]["score_median_pct"] <= by[name]["score_max_pct"] <= 100
        assert by[name]["title"]
    assert by["pro"]["missing_raw"] == 491
    assert by["lite"]["missing_raw"] == 0
    assert by["pro"]["score_max_pct"] == pytest.approx(319 / 730 * 100, abs=0.01)  # Claude Sonnet 4.5, SOURCE.md


def test_cli_banks_table():
    res = _cli("banks")
    assert res.exit_code == 0, res.output
    for name in BANK_ORDER:
        assert name in res.stdout
    assert "2294" in res.stdout and "491" in res.stdout
    # CliRunner's console is 80 columns: every title is printed in full below the table
    for name, spec in BANKS.items():
        assert f"{name}: {spec.title}" in res.stdout
    # a new-user trial found the bash-only target set only by browsing the package: each set is named with its bank
    from hspr.data.banks import TARGET_SETS, load_bank, load_target_set

    for name, info in TARGET_SETS.items():
        assert (f"target set {name}: agents unlike the {info.bank} bank's, scored against it by\n"
                f"  `hspr replay --bank {info.bank} --targets {name}`\n  {info.title}\n") in res.stdout
        assert load_target_set(name).tasks == load_bank(info.bank).tasks  # the command it prints can run


def test_cli_banks_source_prints_the_shipped_provenance():
    """``hspr banks --source BANK`` (bank_provenance was in the package and on no command): the file
    shipped beside the bank, byte for byte up to the final line end; an unknown name is refused."""
    from hspr.data.banks import TARGET_SETS, bank_dir

    folders = {**{n: n for n in BANKS}, **{n: t.folder for n, t in TARGET_SETS.items()}}  # bash-only too (a re-trial)
    for name, folder in folders.items():
        res = _cli("banks", "--source", name)
        assert res.exit_code == 0, res.output
        assert res.stdout == (bank_dir(folder) / "SOURCE.md").read_text(encoding="utf-8").rstrip("\n") + "\n"
    assert "bash-only" in _cli("banks", "--source", "bash-only").stdout.splitlines()[0]
    assert "2294" in _cli("banks", "--source", "full").stdout  # the Full bank's own file, not another's
    res = _cli("banks", "--source", "Verified")
    assert res.exit_code == 2 and "did you mean 'verified'?" in res.output and not res.stdout.strip().startswith("#")
    assert _cli("banks", "--source", "lite", "--json").exit_code == 2


def test_cli_banks_narrow_console_prints_one_line_per_bank(monkeypatch):
    monkeypatch.setenv("COLUMNS", "40")
    res = _cli("banks")
    assert res.exit_code == 0, res.output
    assert "…" not in res.stdout  # no squashed table cells
    assert "full: 22 agents x 2294 tasks\n  missing 0; scores " in res.stdout
    assert "pro: 14 agents x 730 tasks\n  missing 0 (raw 491); scores" in res.stdout
    assert max(len(line) for line in res.stdout.splitlines()) <= 80
    for spec in BANKS.values():
        assert f"  {spec.title}" in res.stdout


def test_cli_validate_takes_a_bundled_bank_name():
    res = _cli("bank", "validate", "pro")
    assert res.exit_code == 0, res.output
    assert "14 agents x 730 tasks, 491 missing cells" in res.stdout  # the raw matrix, blanks kept
    res = _cli("bank", "validate", "no-such-bank")
    assert res.exit_code == 2 and "no-such-bank" in res.output


def test_bank_agents_lists_ids_and_scores(tmp_path):
    res = _cli("bank", "agents", "multimodal", "--json")
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout)
    m = load_bank("multimodal")
    assert [r["agent"] for r in rows] == list(m.agents)
    assert [r["score_pct"] for r in rows] == [round(100 * v, 2) for v in m.scores()]
    # full precision, 0-1: each row's resolved count over the bank's 510 tasks (no missing cell there)
    assert [r["score"] for r in rows] == pytest.approx((np.asarray(m.values).sum(axis=1) / 510).tolist(), abs=1e-15)
    assert "missing cell" not in res.stderr
    blank = tmp_path / "blank.csv"  # a hostile trial: blank cells were scored as failures without a word
    blank.write_text("agent,t1,t2\na,1,\nb,0,1\n")
    res = _cli("bank", "agents", str(blank))
    assert res.exit_code == 0 and "a\t50.0" in res.stdout
    assert "note: 1 missing cell(s) (runs that never happened) count as unresolved" in res.stderr
    res = _cli("bank", "agents", "pro", "--json")  # a bundled bank's blank cells: its scores as before, and the note said
    raw = load_bank("pro", missing_as_zero=False)
    assert raw.n_missing == 491 and f"note: {raw.n_missing} missing cell(s)" in res.stderr
    assert [r["score"] for r in json.loads(res.stdout)] == load_bank("pro").scores().tolist()
    res = _cli("bank", "agents", "no-such-bank")
    assert res.exit_code == 2 and "no-such-bank" in res.output
    bad = tmp_path / "notes.md"
    bad.write_text("# not a matrix\n")
    res = _cli("bank", "agents", str(bad), "--json")  # a script trial: an unreadable file gave no JSON at all
    assert res.exit_code == 2 and json.loads(res.stdout)["ok"] is False and "notes.md" in json.loads(res.stdout)["error"]


def test_a_bundled_target_set_is_written_by_name_and_named_where_an_agent_to_hide_is_not_found(tmp_path):
    """A trial of the shift flag: `hspr live start --bank verified --hide "Kimi K2 Instruct"` said only that no such
    agent is in the bank, and `hspr bank build bash-only` failed, so a bash-only agent could not be played live.
    `bank build` writes a bundled target set by name, and the hide error gives the recipe, which works."""
    from hspr.cli import main
    from hspr.data.banks import load_target_set
    from hspr.data.io import load_matrix

    res = CliRunner().invoke(main, ["bank", "build", "bash-only", "--out", str(tmp_path / "bo.csv")])
    assert res.exit_code == 0, res.output
    typo = CliRunner().invoke(main, ["bank", "build", "bash-onyl", "--out", str(tmp_path / "t.csv")])
    assert typo.exit_code == 2 and "the bundled target set is spelled 'bash-only'" in typo.output  # a re-trial
    bo, want = load_matrix(tmp_path / "bo.csv"), load_target_set("bash-only")
    assert bo.agents == want.agents and bo.tasks == want.tasks and np.array_equal(bo.values, want.values)
    res = CliRunner().invoke(main, ["live", "start", "--bank", "verified", "--hide", "Kimi K2 Instruct", "--budget", "5",
                                    "--session", str(tmp_path / "k.hspr")])
    said = " ".join(res.output.split())
    assert res.exit_code == 2 and "it is an agent of the bundled target set 'bash-only'" in said, said
    assert "`hspr bank build bash-only --out bash-only.csv`, `hspr bank merge verified bash-only.csv --out " \
           "verified+bash-only.csv`, then `hspr live start --matrix verified+bash-only.csv --hide 'Kimi K2 Instruct'` with " \
           "this command's other options but --bank" in said
    # a slip or another letter case of such an agent's id gets the hint and the recipe, with the id as the set has it;
    # an id near an agent of the bank gets that agent only
    # (a re-trial: a letter-case miss of 'GPT-5 mini ...' was also near 'GPT-5 ...' and 'GPT-5 nano ...' by spelling,
    # one by one, and got nothing: the rules run over the whole set, the first that finds one wins)
    for typed, meant in (("kimi k2 instruct", "Kimi K2 Instruct"), ("Kimi K2 Instuct", "Kimi K2 Instruct"),
                         ("gpt-5 mini (2025-08-07) (medium reasoning)", "GPT-5 mini (2025-08-07) (medium reasoning)")):
        res = CliRunner().invoke(main, ["live", "start", "--bank", "verified", "--hide", typed, "--budget", "5",
                                        "--session", str(tmp_path / "k.hspr")])
        said = " ".join(res.output.split())
        assert res.exit_code == 2 and f"did you mean {meant!r}? It is an agent of the bundled target set " \
            "'bash-only'" in said and f"--hide {shlex.quote(meant)}` with" in said, said
    # a start shared by several ids (no rule of did_you_mean names one) lists them, the set's or the bank's (a trial)
    res = CliRunner().invoke(main, ["live", "start", "--bank", "verified", "--hide", "devstral", "--budget", "5",
                                    "--session", str(tmp_path / "k.hspr")])
    said = " ".join(res.output.split())
    assert res.exit_code == 2 and "the bundled target set 'bash-only' (scored against verified by `hspr replay --bank " \
        "verified --targets bash-only`) has the agents 'Devstral (2512)', 'Devstral small (2512)', whose id starts with " \
        "'devstral'" in said and "To play one live" in said and "--hide 'AGENT'` with" in said, said
    res = CliRunner().invoke(main, ["live", "start", "--bank", "verified", "--hide", "o3", "--budget", "5",
                                    "--session", str(tmp_path / "k.hspr")])
    said = " ".join(res.output.split())  # one agent starts so: the recipe names it (a re-trial)
    assert res.exit_code == 2 and "has the agent 'o3 (2025-04-16)', whose id starts with 'o3'. To play it live" in said \
        and "--hide 'o3 (2025-04-16)'` with" in said, said
    first = load_bank("verified").agents[0]
    res = CliRunner().invoke(main, ["live", "start", "--bank", "verified", "--hide", first[:9], "--budget", "5",
                                    "--session", str(tmp_path / "k.hspr")])
    said = " ".join(res.output.split())
    starts = [a for a in load_bank("verified").agents if a.startswith(first[:9])]
    assert res.exit_code == 2 and f"the bank has the agent{'s' if len(starts) > 1 else ''} {starts[0]!r}" in said, said
    assert "target set" not in said and len(starts) <= 5
    near_bank = load_bank("verified").agents[0].upper()
    res = CliRunner().invoke(main, ["live", "start", "--bank", "verified", "--hide", near_bank, "--budget", "5",
                                    "--session", str(tmp_path / "k.hspr")])
    said = " ".join(res.output.split())
    assert res.exit_code == 2 and f"did you mean {load_bank('verified').agents[0]!r}" in said and "target set" not in said
    res = CliRunner().invoke(main, ["bank", "merge", "verified", str(tmp_path / "bo.csv"), "--out", str(tmp_path / "vb.csv")])
    assert res.exit_code == 0, res.output
    res = CliRunner().invoke(main, ["live", "start", "--matrix", str(tmp_path / "vb.csv"), "--hide", "Kimi K2 Instruct",
                                    "--method", "uniform", "--budget", "5", "--session", str(tmp_path / "k.hspr")])
    assert res.exit_code == 0 and "Kimi K2 Instruct" in res.output, res.output
