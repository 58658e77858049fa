"""Replay harness, metrics and the replay CLI."""

from __future__ import annotations

import json
import os
import runpy
from pathlib import Path

import click
import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from hspr.cli import main
from hspr.data import load_bank, make_folds
from hspr.data.build import write_wide_csv
from hspr.methods import get_method
from hspr.methods.hspr import HSPRConfig
from hspr.replay import HiddenRow, replay, run_session
from hspr.report.stats import seed_metrics, summarize

from .conftest import simulate_matrix

FAST = HSPRConfig(n_nodes=512, n_draws=8192)


def test_seed_metrics_hand_checked():
    est = np.array([0.10, 0.50, 0.31])
    truth = np.array([0.12, 0.45, 0.30])
    m = seed_metrics(est, truth)
    assert m["mae_pp"] == pytest.approx((2 + 5 + 1) / 3)
    assert m["maxerr_pp"] == pytest.approx(5.0)
    assert m["kendall_tau_b"] == pytest.approx(1.0)


def test_exact_estimates_rank_perfectly_despite_float_noise_in_tied_truths():
    # two agents tied at 197/400, their truth reached by different floating-point sums
    truth = np.array([0.4925, 0.49250000000000005, 0.30, 0.70])
    assert truth[0] != truth[1]
    m = seed_metrics(truth[[1, 0, 2, 3]], truth)
    assert m["mae_pp"] == pytest.approx(0.0, abs=1e-12)
    assert m["kendall_tau_b"] == 1.0


def test_hidden_row_reveals_only_queried_cells(small_bank):
    model = get_method("hspr", config=FAST).fit(small_bank.rows(np.arange(5, 40)))
    row = HiddenRow(small_bank, 0)
    recs = run_session(model, row, [6, 12], seed=0)
    assert row.revealed == recs[-1]["queried"]  # nested: one path, estimated at 6 and at 12
    assert recs[0]["queried"] == recs[1]["queried"][:6]
    assert recs[0]["truth"] == pytest.approx(small_bank.values[0].mean())


def test_a_batch_asks_in_rounds_chosen_before_their_outcomes(small_bank):
    """--batch K: each round's tasks are the session's ask_batch(K) before any of their outcomes is told; a batch
    of the whole budget is one task list chosen up front, the same for every target (nothing is known of them
    yet), where one at a time the list follows the outcomes."""
    model = get_method("hspr", config=FAST).fit(small_bank.rows(np.arange(5, 40)))
    up_front = model.start(12, 0).ask_batch(12)
    whole = [run_session(model, HiddenRow(small_bank, r), [12], seed=0, batch=12)[0] for r in range(3)]
    assert all(rec["queried"] == up_front and rec["batch"] == 12 for rec in whole)
    one = [run_session(model, HiddenRow(small_bank, r), [12], seed=0)[0] for r in range(3)]
    assert len({tuple(rec["queried"]) for rec in one}) > 1 and "batch" not in one[0]
    assert run_session(model, HiddenRow(small_bank, 0), [12], seed=0, batch=1) == [one[0]]
    # rounds of 4: the second round is chosen after the first round's 4 outcomes are told
    sess = model.start(12, 0)
    first = sess.ask_batch(4)
    for t in first:
        sess.tell(t, HiddenRow(small_bank, 0).reveal(t))
    rounds = run_session(model, HiddenRow(small_bank, 0), [12], seed=0, batch=4)[0]["queried"]
    assert rounds[:4] == first and rounds[4:8] == sess.ask_batch(4)
    # each budget a session of its own: the 6-task run's last round is cut at 6, the 12-task run asks 12 from the start
    six, twelve = run_session(model, HiddenRow(small_bank, 0), [6, 12], seed=0, batch=12)
    assert six["queried"] == up_front[:6] == model.start(6, 0).ask_batch(12) and twelve["queried"] == up_front
    # a method whose path does not depend on the outcomes (uniform) asks the same tasks in any batch
    uni = get_method("uniform").fit(small_bank.rows(np.arange(5, 40)))
    assert run_session(uni, HiddenRow(small_bank, 1), [12], 3, batch=5)[0]["queried"] == \
        run_session(uni, HiddenRow(small_bank, 1), [12], 3)[0]["queried"]
    with pytest.raises(ValueError, match="batch must be a whole number"):
        run_session(model, HiddenRow(small_bank, 0), [12], seed=0, batch=0)


def test_replay_cli_batch_labels_its_runs(tmp_path, small_bank):
    from hspr.replay import settings_digest

    csv = tmp_path / "bank.csv"
    write_wide_csv(small_bank, csv)
    out = tmp_path / "r.json"
    res = CliRunner().invoke(main, ["replay", "--matrix", str(csv), "--methods", "uniform", "--seeds", "0",
                                    "--batch", "5", "--out", str(out), "--quiet"])
    assert res.exit_code == 0, res.output
    runs = json.loads(out.read_text())["runs"]
    assert {r["bank"] for r in runs} == {"bank[batch 5]"} and {r["batch"] for r in runs} == {5}
    m = get_method("uniform")
    assert settings_digest(m, batch=5) != settings_digest(m) == settings_digest(m, batch=1)
    assert {r["settings"] for r in runs} == {settings_digest(m, sources=[small_bank], batch=5)}
    bad = CliRunner().invoke(main, ["replay", "--matrix", str(csv), "--methods", "uniform", "--batch", "0"])
    assert bad.exit_code == 2 and "--batch" in bad.output
    big = CliRunner().invoke(main, ["replay", "--matrix", str(csv), "--methods", "uniform", "--batch", "13",
                                    "--out", str(tmp_path / "b.json")])  # 10 % of 120 tasks: 12
    assert big.exit_code == 2 and "13 is more than the largest budget on bank (12 tasks)" in " ".join(big.output.split())
    assert not (tmp_path / "b.json").exists()


def test_replay_folds_cover_every_agent_once(small_bank):
    folds = make_folds(small_bank.agents)
    runs = replay("sim", small_bank, {"uniform": get_method("uniform")}, fractions=(0.1,), seeds={"uniform": [0, 1]},
                  folds=folds)
    df = pd.DataFrame(runs)
    assert sorted(df.target.unique()) == sorted(small_bank.agents)
    assert len(df) == 2 * small_bank.n_agents
    # each target appears in exactly one fold
    assert (df.groupby("target").fold.nunique() == 1).all()
    s = summarize(df)
    assert s.loc[0, "n_targets"] == small_bank.n_agents and s.loc[0, "n_seeds"] == 2


def test_replay_is_parallel_deterministic(small_bank):
    folds = make_folds(small_bank.agents)
    kw = dict(fractions=(0.1,), seeds={"hspr": [0]}, folds=folds)
    a = replay("sim", small_bank, {"hspr": get_method("hspr", config=FAST)}, n_jobs=1, **kw)
    b = replay("sim", small_bank, {"hspr": get_method("hspr", config=FAST)}, n_jobs=2, **kw)
    assert [(r["target"], r["queried"], r["estimate"]) for r in a] == [(r["target"], r["queried"], r["estimate"]) for r in b]


def test_one_fit_spreads_its_own_jobs_over_the_workers(small_bank, monkeypatch):
    """A shift protocol with hspr_robust alone is one fit: it runs in this process, its held-out replays on the
    workers (it ran in one worker, its replays one after another); the runs are those of one worker."""
    import joblib

    import hspr.methods.hspr.robust as robust

    seen = []
    calibrate = robust.leave_cluster_out

    def spy(*args, **kwargs):
        seen.append(joblib.effective_n_jobs(None))
        return calibrate(*args, **kwargs)

    monkeypatch.setattr(robust, "leave_cluster_out", spy)
    src, tgt = small_bank.rows(np.arange(4, small_bank.n_agents)), small_bank.rows(np.arange(4))
    method = {"hspr_robust": get_method("hspr_robust", config=FAST, shift={"n_nodes": 256, "n_draws": 2048,
                                                                           "max_held_out": 6})}
    one = replay("sim", src, method, seeds={"hspr_robust": [0]}, targets=tgt, n_jobs=1)
    two = replay("sim", src, method, seeds={"hspr_robust": [0]}, targets=tgt, n_jobs=2)
    assert seen == [1, 2]
    key = ("target", "queried", "estimate", "lower", "upper")
    assert [tuple(r[k] for k in key) for r in one] == [tuple(r[k] for k in key) for r in two]


def test_replay_cli_writes_results(tmp_path, small_bank):
    csv = tmp_path / "bank.csv"
    write_wide_csv(small_bank, csv)
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps(FAST.to_dict()))
    out = tmp_path / "r.json"
    res = CliRunner().invoke(main, ["replay", "--matrix", str(csv), "--methods", "hspr,uniform", "--seeds", "0",
                                    "--config", str(cfg), "--out", str(out), "--quiet"])
    assert res.exit_code == 0, res.output
    data = json.loads(out.read_text())
    assert {r["method"] for r in data["summary"]} == {"hspr[config=cfg]", "uniform"}
    assert len(data["runs"]) == 2 * small_bank.n_agents
    assert "MAE" in res.output


def test_replay_cli_refuses_bad_input(tmp_path):
    res = CliRunner().invoke(main, ["replay", "--bank", "nonesuch", "--quiet"])
    assert res.exit_code == 2 and "unknown bank" in res.output
    res = CliRunner().invoke(main, ["replay", "--bank", "lite", "--budget", "1.5", "--quiet"])
    assert res.exit_code == 2 and "(0, 1]" in res.output
    res = CliRunner().invoke(main, ["replay", "--bank", "lite", "--methods", "hspr,magic", "--quiet"])
    assert res.exit_code == 2 and "magic" in res.output


def test_real_bank_smoke_hspr_beats_uniform():
    """Lite: 6 held-out agents scored against all other agents as sources, 10 % budget."""
    bank = load_bank("lite")
    rng = np.random.default_rng(0)
    tgt_idx = rng.choice(bank.n_agents, 6, replace=False)
    runs = replay("lite", bank.drop_rows(tgt_idx), {"hspr": get_method("hspr"), "uniform": get_method("uniform")},
                  seeds={"hspr": [0], "uniform": list(range(10))}, targets=bank.rows(tgt_idx), n_jobs=1)
    s = summarize(pd.DataFrame(runs)).set_index("method")
    assert s.loc["hspr", "mae_pp"] < 4.0
    assert s.loc["hspr", "mae_pp"] < s.loc["uniform", "mae_pp"]


def test_quickstart_example_runs():
    path = Path(__file__).resolve().parents[1] / "examples" / "quickstart.py"
    ns = runpy.run_path(str(path))
    est, truth = ns["main"]()
    assert est.n_queried == 20
    assert est.lower <= truth <= est.upper
    assert abs(est.point - truth) < 0.08


def test_dask_local_cluster_matches_local_backend(small_bank):
    pytest.importorskip("dask.distributed")
    from hspr.parallel import cluster

    folds = make_folds(small_bank.agents)
    kw = dict(fractions=(0.1, 0.2), seeds={"hspr": [0], "uniform": [0, 1]}, folds=folds)
    methods = {"hspr": get_method("hspr", config=FAST), "uniform": get_method("uniform")}
    local = replay("sim", small_bank, methods, n_jobs=1, **kw)
    with cluster("dask", None, 2) as backend:
        remote = replay("sim", small_bank, methods, n_jobs=2, backend=backend, **kw)
    assert local == remote


def test_a_backend_that_cannot_stream_results_gives_the_same_replay(small_bank):
    """A determinism trial: joblib's ray backend, a multiprocessing backend, refuses return_as='generator', and every
    --backend ray replay failed. joblib's own multiprocessing backend refuses it the same way: the replay now takes
    the results in one list there, the same runs as the local backend's."""
    from joblib._parallel_backends import MultiprocessingBackend

    assert not MultiprocessingBackend.supports_return_generator  # the case this covers
    folds = make_folds(small_bank.agents)
    kw = dict(fractions=(0.1,), seeds={"hspr": [0], "uniform": [0, 1]}, folds=folds)
    methods = {"hspr": get_method("hspr", config=FAST), "uniform": get_method("uniform")}
    assert replay("sim", small_bank, methods, n_jobs=2, backend="multiprocessing", **kw) == replay(
        "sim", small_bank, methods, n_jobs=1, **kw)


def test_unknown_backend_is_refused():
    from hspr.parallel import cluster

    with pytest.raises(ValueError, match="unknown backend"):
        with cluster("mpi"):
            pass


def test_replay_cli_labels_ablations(tmp_path, small_bank):
    from hspr.methods.hspr.replay_options import hspr_label

    assert hspr_label(None, {}) == "hspr"
    assert hspr_label("auto", {"decision": "mean"}) == "hspr_auto[decision=mean]"
    assert hspr_label("auto", {}) == "hspr_auto"  # the same label as --methods hspr_auto
    csv = tmp_path / "bank.csv"
    write_wide_csv(small_bank, csv)
    cfg = tmp_path / "fast.json"
    cfg.write_text(json.dumps(FAST.to_dict()))
    outs = {}
    # --acquisition score is the config's own rule: it changes nothing and is not in the label
    for flags in (["--acquisition", "score"], ["--no-group-uncertainty", "--acquisition", "uniform"]):
        out = tmp_path / f"r{len(flags)}.json"
        res = CliRunner().invoke(main, ["replay", "--matrix", str(csv), "--methods", "hspr", "--seeds", "0",
                                        "--config", str(cfg), "--out", str(out), "--quiet", *flags])
        assert res.exit_code == 0, res.output
        outs[len(flags)] = json.loads(out.read_text())
    assert {r["method"] for r in outs[2]["runs"]} == {"hspr[config=fast]"}
    assert {r["method"] for r in outs[3]["runs"]} == {"hspr[config=fast,acquisition=uniform,no-group-uncertainty]"}
    # the ablated estimator really ran on another path: uniform query paths differ from the score rule's
    assert [r["queried"] for r in outs[2]["runs"]] != [r["queried"] for r in outs[3]["runs"]]
    # the label survives the terminal table (no rich markup eaten)
    assert "hspr[config=fast]" in res.output or "hspr[config=fast," in res.output


@pytest.mark.parametrize("args, needle", [
    (["--budget", "0.10,0.104"], "both give B = 12"),
    (["--budget", "0.004"], "rounds to 0 tasks"),
    (["--workers", "0"], "--workers"),
    (["--scheduler", "tcp://127.0.0.1:1"], "--scheduler needs --backend"),
    (["--methods", "uniform", "--no-group-uncertainty"], "hspr is not in --methods"),
    (["--config", "{bad}"], "no such file"),
    # a hostile trial: an empty or folder --config was called an input that --out lies inside
    (["--config", ""], "'' is empty; give a JSON file of HSPR settings or 'auto'"),
    (["--config", "{dir}"], "is a folder; give a JSON file"),
    # a new-user trial: `--methods hspr,hspr_auto --config auto` dropped hspr's runs silently, and --config
    # with hspr_auto alone said 'add hspr'
    (["--methods", "hspr,hspr_auto", "--config", "auto"], "the two are one method"),
    (["--methods", "hspr_auto", "--config", "{bad}"], "hspr_auto chooses its own"),
    (["--stop-width", "30", "--stop-min-tasks", "100"], "more than the largest budget on bank (12 tasks)"),
    # a review: the refusal blamed --stop-min-tasks 5 the user never gave, and advised 'add hspr' for --config auto
    (["--stop-width", "30", "--budget", "0.03"], "5 (the default) is more than the largest budget on bank (4 tasks)"),
    (["--methods", "hspr_auto", "--config", "auto"], "--methods hspr --config auto): drop --config\n"),
    # a config file sets hspr_robust's HSPR settings too (as live start --config), so a missing one is named
    (["--methods", "hspr_robust,uniform", "--config", "{bad}"], "nope.json: no such file"),
    (["--methods", "hspr_robust,uniform", "--config", "auto"], "hspr_robust chooses its own on each fold's sources: drop"),
    (["--out", "{file}/x.json"], "--out"),
    (["--csv", "{file}/s.csv"], "--csv"),
    # a hostile trial: hspr's refusal of hspr_robust's form did not name hspr, and 'add hspr' led to that refusal
    (["--methods", "hspr,hspr_robust", "--config", "{robust}"], "which hspr, also in --methods, cannot take: replay "
                                                                "hspr_robust alone with this file"),
    (["--methods", "uniform", "--config", "{robust}"], "add hspr_robust, which takes this file's {\"config\", \"shift\"} "
                                                       "form (e.g. --methods hspr_robust,uniform)"),
    (["--methods", "uniform", "--config", "{plain}"], "add hspr or hspr_robust (the methods a --config file sets)"),
])
def test_replay_cli_refuses_bad_options_before_work(tmp_path, small_bank, args, needle):
    csv = tmp_path / "bank.csv"
    write_wide_csv(small_bank, csv)
    (tmp_path / "robust.json").write_text('{"config": {"rank": 1}, "shift": {"sided": false}}')
    (tmp_path / "plain.json").write_text('{"rank": 1}')
    args = [a.replace("{bad}", str(tmp_path / "nope.json")).replace("{file}", str(csv)).replace("{dir}", str(tmp_path))
            .replace("{robust}", str(tmp_path / "robust.json")).replace("{plain}", str(tmp_path / "plain.json")) for a in args]
    assert small_bank.n_tasks == 120
    out = ["--out", str(tmp_path / "r.json")] if "--out" not in args else []
    res = CliRunner().invoke(main, ["replay", "--matrix", str(csv), "--methods", "hspr,uniform", "--quiet", *out,
                                    *args])
    assert res.exit_code == 2, res.output
    assert needle in res.output
    assert "Traceback" not in res.output


def test_config_auto_stays_the_keyword_beside_a_folder_named_auto(tmp_path, small_bank, monkeypatch):
    """A review: with a folder 'auto' in the working folder, --config auto was called a folder."""
    csv = tmp_path / "bank.csv"
    write_wide_csv(small_bank, csv)
    (tmp_path / "auto").mkdir()
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(main, ["replay", "--matrix", str(csv), "--methods", "hspr_auto", "--config", "auto",
                                    "--quiet", "--out", "r.json"])
    assert res.exit_code == 2 and "is a folder" not in res.output and "drop --config" in res.output, res.output


@pytest.mark.parametrize("cfg, needle", [
    ({"group_uncertainty": "false"}, "group_uncertainty must be true or false"),
    ({"gamma": "4"}, "gamma must be a finite number"),
    ({"n_nodes": 256.5}, "n_nodes must be an integer"),
    ([1, 2], "expected a JSON object"),
    ({"item_prior_scale": 1e308}, "item_prior_scale must be in [1e-06, 1e+06]"),  # broke the fit (hostile trial)
    ({"gamma": 1e-100}, "gamma must be in [1e-06, 1e+06]"),  # NaN estimates with exit 0 (hostile trial)
])
def test_replay_cli_refuses_bad_config_values(tmp_path, small_bank, cfg, needle):
    csv = tmp_path / "bank.csv"
    write_wide_csv(small_bank, csv)
    path = tmp_path / "c.json"
    path.write_text(json.dumps(cfg))
    res = CliRunner().invoke(main, ["replay", "--matrix", str(csv), "--methods", "hspr", "--config", str(path),
                                    "--quiet", "--out", str(tmp_path / "r.json")])
    assert res.exit_code == 2, res.output
    assert needle in res.output and "--config" in res.output and "c.json" in res.output


def test_hspr_on_the_midrange_path_runs_one_path(small_bank):
    """The Mid-Range query path and HSPR's fixed node seeds make every query seed identical."""
    m = get_method("hspr", config=FAST.replace(acquisition="midrange"))
    assert m.seed_kind == "deterministic" and get_method("hspr").seed_kind == "adaptive"
    assert get_method("hspr_auto", overrides={"acquisition": "midrange"}).seed_kind == "deterministic"
    folds = make_folds(small_bank.agents)
    runs = replay("sim", small_bank, {"hspr": m}, seeds={"hspr": [0, 3]}, folds=folds)
    a = [r for r in runs if r["seed"] == 0]
    b = [r for r in runs if r["seed"] == 3]
    assert [r["estimate"] for r in a] == [r["estimate"] for r in b]
    assert [r["queried"] for r in a] == [r["queried"] for r in b]
    assert {r["seed"] for r in replay("sim", small_bank, {"hspr": m}, folds=folds)} == {0}


def test_results_json_command_is_shell_quoted(tmp_path, monkeypatch):
    """A path with a space was stored unquoted, so the command could not run again as given."""
    import shlex
    import sys

    from click.testing import CliRunner

    from hspr.cli import main

    out = tmp_path / "my results.json"
    # the executable's own path is not kept (a trial: replay recorded a venv's full path, select 'hspr')
    argv = ["/x/venv/bin/hspr", "replay", "--bank", "pro", "--methods", "uniform", "--seeds", "0", "--out", str(out), "-q"]
    monkeypatch.setattr(sys, "argv", argv)
    res = CliRunner().invoke(main, argv[1:])
    assert res.exit_code == 0, res.output
    stored = json.loads(out.read_text())["command"]
    assert shlex.split(stored) == ["hspr", *argv[1:]]


def test_methods_all_runs_every_method_once():
    from hspr.cli.replay_cmd import parse_methods
    from hspr.methods import REGISTRY

    assert parse_methods("all") == [n for n in REGISTRY if n != "hspr_auto"]  # hspr_auto is hspr under --config auto
    with pytest.raises(click.BadParameter, match="'all' runs every method and stands alone"):  # a hostile trial:
        parse_methods("all,uniform")  # it said "unknown name 'all'; known: ... or 'all'"


def test_seeds_beyond_what_a_results_file_keeps_are_refused():
    """A hostile trial: replay wrote seed 10^20, which `hspr report` then refused to read (JSON doubles)."""
    from hspr.cli.common import MAX_SEED
    from hspr.cli.replay_cmd import parse_seeds

    assert parse_seeds(f"{MAX_SEED}") == [2 ** 53 - 1]
    for bad in (f"{MAX_SEED + 1}", "99999999999999999999", f"0,{2 ** 60}"):
        with pytest.raises(click.BadParameter, match="from 0 to 9007199254740991"):
            parse_seeds(bad)
    assert parse_seeds(" 0 - 2 , 5") == [0, 1, 2, 5] and parse_seeds("7") == [7]
    for bad in ("0_1", "1_0", "+1", "１", "-1", "0-1-2"):  # int() reads '1_0' as 10 and '１' as 1 (a hostile trial)
        with pytest.raises(click.BadParameter, match="seeds are whole numbers from 0; give seeds as '0-4' or '0,1,2'"):
            parse_seeds(bad)


def test_replay_cli_decision_mean_makes_the_point_the_posterior_mean(tmp_path, small_bank):
    """``--decision mean`` reaches HSPR: its point is the posterior mean moved by the calibration shift (Eq. 16,
    HSPR_SPEC section 5) where the default moves the posterior predictive median, on the same queries, under a
    label of its own."""
    csv = tmp_path / "bank.csv"
    write_wide_csv(small_bank, csv)
    cfg = tmp_path / "fast.json"
    cfg.write_text(json.dumps(FAST.to_dict()))
    runs = {}
    for flags in ([], ["--decision", "mean"]):
        out = tmp_path / f"r{len(flags)}.json"
        res = CliRunner().invoke(main, ["replay", "--matrix", str(csv), "--methods", "hspr", "--seeds", "0",
                                        "--config", str(cfg), "--out", str(out), "--quiet", *flags])
        assert res.exit_code == 0, res.output
        runs[len(flags)] = json.loads(out.read_text())["runs"]
    median, mean = runs[0], runs[2]
    assert {r["method"] for r in mean} == {"hspr[config=fast,decision=mean]"}
    assert [r["queried"] for r in mean] == [r["queried"] for r in median]
    # the same posterior, so the same mean and the same calibration shift (Eq. 16), added to another base
    assert [r["mean"] for r in mean] == pytest.approx([r["mean"] for r in median], abs=1e-12)
    inside = [(a, b) for a, b in zip(mean, median) if 0 < a["estimate"] < 1 and 0 < b["estimate"] < 1]
    assert len(inside) >= 30
    assert [a["estimate"] - a["mean"] for a, b in inside] == pytest.approx([b["estimate"] - b["median"] for a, b in inside],
                                                                          abs=1e-9)
    assert max(abs(a["estimate"] - b["estimate"]) for a, b in inside) > 1e-3


def test_replay_refuses_budgets_and_seeds_it_would_mislabel(small_bank):
    """A hostile trial: fractions 0.10 and 0.11 of 40 tasks (both B = 4) gave every run twice, all
    labelled 0.11; seeds 0.0 and 0.9 were both seed 0; seeds keyed by an unknown name were ignored."""
    from hspr.data.folds import make_folds
    from hspr.errors import HsprError, UnknownIdError
    from hspr.session import BudgetError

    kw = {"folds": make_folds(small_bank.agents)}
    n = small_bank.n_tasks
    with pytest.raises(BudgetError, match=rf"budget fractions 0.1 and 0.10\d+ both give B = {round(0.1 * n)} of {n} tasks"):
        replay("sim", small_bank, {"uniform": get_method("uniform")}, fractions=(0.10, 0.10 + 0.4 / n), **kw)
    with pytest.raises(BudgetError, match=rf"rounds to 0 tasks; give a fraction of at least 1/{n}"):
        replay("sim", small_bank, {"uniform": get_method("uniform")}, fractions=(0.1 / n,), **kw)
    with pytest.raises(UnknownIdError, match="seeds are given for 'nope'"):
        replay("sim", small_bank, {"uniform": get_method("uniform")}, seeds={"nope": [0]}, **kw)
    with pytest.raises(HsprError, match="seed must be a whole number >= 0, got 0.9"):
        replay("sim", small_bank, {"uniform": get_method("uniform")}, seeds={"uniform": [0, 0.9]}, **kw)


def test_replay_names_arguments_of_the_wrong_kind(small_bank):
    """A hostile trial: methods as a list raised AttributeError, folds=None a bare ValueError, an
    unknown fold agent a bare KeyError, a fold given as a string was split into characters,
    fractions=0.1 raised TypeError and stop='x' a TypeError deep in a worker."""
    from hspr.data.folds import make_folds
    from hspr.errors import HsprError, UnknownIdError

    uni = {"uniform": get_method("uniform")}
    folds = make_folds(small_bank.agents)
    with pytest.raises(HsprError, match="methods must be a non-empty dict of label -> Method"):
        replay("sim", small_bank, [get_method("uniform")], folds=folds)
    with pytest.raises(HsprError, match="give folds"):
        replay("sim", small_bank, uni)
    with pytest.raises(UnknownIdError, match="fold 1 names agents not in the matrix: 'nobody'"):
        replay("sim", small_bank, uni, folds=[folds[0], ["nobody"]])
    with pytest.raises(HsprError, match="folds must be a non-empty list of lists of agent ids"):
        replay("sim", small_bank, uni, folds=[small_bank.agents[0]])
    with pytest.raises(HsprError, match="stop must be a StoppingRule"):
        replay("sim", small_bank, uni, folds=folds, stop="x")
    one = replay("sim", small_bank, uni, folds=folds, fractions=0.1, seeds={"uniform": [0]})
    assert one == replay("sim", small_bank, uni, folds=folds, fractions=(0.1,), seeds={"uniform": [0]})


def test_a_target_task_mismatch_is_not_advised_to_pad_with_empty_cells(small_bank):
    """A hostile trial: following 'add the absent tasks as empty cells' made the target's truth count
    the tasks it never ran as failures (0.30 where it resolved 0.60 of its tasks)."""
    from hspr.data.matrix import DataError, ResponseMatrix
    from hspr.replay import align_targets

    half = ResponseMatrix(["x"], small_bank.tasks[:10], small_bank.values[:1, :10])
    with pytest.raises(DataError, match="score the subset the targets ran with --tasks FILE") as err:
        align_targets(half, small_bank)
    assert "empty cells" not in str(err.value)


def test_a_long_csv_of_targets_without_a_task_s_lines_is_told_to_add_them(tmp_path, small_bank):
    """A scale trial: a --targets long CSV whose task had no line for any target was refused as a missing task
    column, where a wide CSV's blank cells were read as runs that did not happen: the message says what to add."""
    from hspr.data.build import write_wide_csv

    write_wide_csv(small_bank.rows(np.arange(1, small_bank.n_agents)), tmp_path / "src.csv")
    lines = [f"x,{t},{int(v)}" for t, v in zip(small_bank.tasks[1:], small_bank.values[0, 1:])]
    (tmp_path / "tgt.csv").write_text("agent,instance_id,resolved\n" + "\n".join(lines) + "\n")
    res = CliRunner().invoke(main, ["replay", "--matrix", str(tmp_path / "src.csv"), "--targets", str(tmp_path / "tgt.csv"),
                                    "--methods", "uniform", "--seeds", "0", "-q", "--out", str(tmp_path / "r.json")])
    said = " ".join(res.output.split())
    assert res.exit_code == 2 and "1 bank task(s) absent" in said, res.output
    assert said.endswith("in a long CSV a task is absent when none of its lines names it: if the targets ran it, add "
                         "their lines (resolved 0 for a failure)")
    write_wide_csv(small_bank.rows([0]).select_tasks(small_bank.tasks[1:]), tmp_path / "wide.csv")  # not for a wide one
    res = CliRunner().invoke(main, ["replay", "--matrix", str(tmp_path / "src.csv"), "--targets", str(tmp_path / "wide.csv"),
                                    "--methods", "uniform", "--seeds", "0", "-q", "--out", str(tmp_path / "r.json")])
    assert res.exit_code == 2 and "bank task(s) absent" in res.output and "long CSV" not in res.output


def test_only_ascii_digits_make_a_date_prefix():
    from hspr.data.folds import dated

    assert dated(["20240101_a", "20250202_b"])
    assert not dated(["20240101_a", "\uff12\uff10\uff12\uff10\uff10\uff11\uff10\uff11_old"])  # full-width digits


def test_replay_config_auto_on_a_bundled_bank_is_hspr_auto(tmp_path):
    """The README's `hspr replay --bank ... --methods hspr --config auto` (a final re-read caught the table check
    reading 'auto' as a file name): its runs are hspr_auto's, estimate for estimate."""
    def runs(*args):
        out = tmp_path / f"{len(list(tmp_path.iterdir()))}.json"
        res = CliRunner().invoke(main, ["replay", "--bank", "pro", "--seeds", "0", "--budget", "0.02", "-q", "--out",
                                        str(out), *args])
        assert res.exit_code == 0, res.output
        recs = json.loads(out.read_text())["runs"]
        # a trial: which settings hspr_auto ran was recorded nowhere; each run carries its fold's shipped entry
        from hspr.methods.hspr.config import HSPRConfig
        from hspr.methods.hspr.selection import shipped_configs

        assert all(HSPRConfig.from_dict(r["fitted_settings"]) == HSPRConfig.from_dict(shipped_configs()["pro"][str(r["fold"])]
                                                                                     ["config"]) for r in recs)
        return {(r["method"], r["target"]): r["estimate"] for r in recs}

    auto = runs("--methods", "hspr", "--config", "auto")
    assert auto == runs("--methods", "hspr_auto") and len(auto) == 14


def test_the_bar_counts_sessions_and_the_fits_apart():
    """A scale trial: replay's fits and sessions were one series of steps, and after three fits of ~290 s each the
    bar said 1 s was left of 15 minutes. The fits are counted in the description (no total: no time left)."""
    from hspr.cli.replay_cmd import fits_then_sessions

    calls = []

    class Bar:
        def update(self, task, **kw):
            calls.append((task, kw))

    tick = fits_then_sessions(Bar(), 7, "replay lite", 4)
    for done in (1, 3, 4, 5, 12):  # 4 fits, then 8 sessions
        tick(done, 12)
    assert calls == [(7, dict(description="replay lite: fitting 1/4", completed=0, total=None)),
                     (7, dict(description="replay lite: fitting 3/4", completed=0, total=None)),
                     (7, dict(description="replay lite", completed=0, total=8)),
                     (7, dict(description="replay lite", completed=1, total=8)),
                     (7, dict(description="replay lite", completed=8, total=8))]


@pytest.mark.parametrize("text", ["inf", "1e3", "nan"])
def test_a_budget_that_is_not_digits_is_not_called_a_count(text):
    """A hostile trial: --budget inf was refused as 'inf looks like a count'."""
    from hspr.cli.replay_cmd import parse_budgets

    with pytest.raises(click.BadParameter, match=r"budget fractions must be in \(0, 1\]"):
        parse_budgets(text)
    with pytest.raises(click.BadParameter, match="50 looks like a count"):
        parse_budgets("0.1,50")
    # a new-user trial on a 150-task bank of its own was told about Verified's 500 tasks
    with pytest.raises(click.BadParameter, match=r"15 looks like a count; e\.g\. 15 of a bank of 150 tasks is 0\.10"):
        parse_budgets("15")


def test_folds_that_leave_agents_out_are_said_so(small_bank):
    """An audit: folds over half the agents were replayed without a word (HSPR_SPEC 7: every agent is a
    target once); the agents left out are sources in every fold."""
    import warnings as w

    from hspr.errors import InputWarning

    folds = make_folds(small_bank.agents)
    uniform = {"uniform": get_method("uniform")}
    with pytest.warns(InputWarning, match=rf"{len(folds[2]) + len(folds[3])} of {small_bank.n_agents} agents are in "
                                          r"no fold \(.*\): they are sources in every fold and never targets"):
        runs = replay("sim", small_bank, uniform, folds=folds[:2], seeds={"uniform": [0]})
    assert {r["target"] for r in runs} == set(folds[0]) | set(folds[1])
    with w.catch_warnings():
        w.simplefilter("error", InputWarning)
        replay("sim", small_bank, uniform, folds=folds, seeds={"uniform": [0]})  # all covered: no warning


def test_replay_says_when_a_deterministic_method_runs_one_of_the_seeds(tmp_path, small_bank):
    """A new-user trial: `--seeds 0-4` for tinybench ran one seed, printed `seeds 1` and said nothing."""
    csv = tmp_path / "bank.csv"
    write_wide_csv(small_bank, csv)
    out = tmp_path / "r.json"
    res = CliRunner().invoke(main, ["replay", "--matrix", str(csv), "--methods", "midrange,uniform", "--seeds", "3-5",
                                    "--out", str(out), "--quiet"])
    assert res.exit_code == 0, res.output
    assert "note: midrange: deterministic (no seed decides the queries); run once, with seed 3" in " ".join(res.output.split())
    runs = json.loads(out.read_text())["runs"]
    assert sorted({(r["method"], r["seed"]) for r in runs}) == [("midrange", 3), ("uniform", 3), ("uniform", 4), ("uniform", 5)]
    res = CliRunner().invoke(main, ["replay", "--matrix", str(csv), "--methods", "midrange", "--seeds", "3",
                                    "--out", str(out), "--quiet"])
    assert res.exit_code == 0 and "deterministic" not in res.output


def test_an_interrupted_replay_keeps_its_finished_runs(tmp_path, monkeypatch):
    """A hostile trial: Ctrl-C at 8 of 24 jobs of `hspr replay` lost every finished run and said only "interrupted".
    The interrupt now carries the finished jobs' runs (API), and the command saves them beside --out, says where, and
    leaves --out as it was."""
    import hspr.replay as replay_module

    m, _ = simulate_matrix(12, 30, seed=3)
    folds = make_folds(m.agents, 3)
    real, calls = replay_module._run_job, []

    def cut_at_the_third(job, model):
        calls.append(job)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(job, model)

    monkeypatch.setattr(replay_module, "_run_job", cut_at_the_third)
    with pytest.raises(KeyboardInterrupt) as exc:
        replay("m", m, {"uniform": get_method("uniform")}, seeds={"uniform": [0, 1]}, folds=folds)
    # jobs run fold by fold, seed by seed: the first two are fold 0's seeds 0 and 1, each of its 4 targets
    assert exc.value.jobs == (2, 6)
    whole = replay("m", m, {"uniform": get_method("uniform")}, seeds={"uniform": [0, 1]}, folds=folds)
    assert exc.value.runs == [r for r in whole if r["fold"] == 0] and len(exc.value.runs) == 8

    write_wide_csv(m, tmp_path / "m.csv")
    (tmp_path / "r.json").write_text('{"runs": []}\n')
    calls.clear()
    res = CliRunner().invoke(main, ["replay", "--matrix", str(tmp_path / "m.csv"), "--methods", "uniform", "--seeds",
                                    "0,1", "--workers", "1", "-q", "--out", str(tmp_path / "r.json")])
    assert res.exit_code == 130, res.output
    kept = list(tmp_path.glob("r.interrupted-*.json"))
    assert len(kept) == 1 and (tmp_path / "r.json").read_text() == '{"runs": []}\n'
    doc = json.loads(kept[0].read_text())
    assert len(doc["runs"]) == 2 * 3 and doc["interrupted"] == {"label": "m", "jobs_done": 2, "jobs": 8}
    assert " ".join(res.output.split()).endswith(f"interrupted; the 6 runs finished before it (2 of the 8 jobs of m) are "
                                                 f"in {kept[0]} (`hspr report` reads them); {tmp_path / 'r.json'} was "
                                                 "not changed")
    calls.clear()  # a scale trial: cut in the first job, it said 'interrupted' alone and kept nothing
    monkeypatch.setattr(replay_module, "_run_job", lambda job, model: (_ for _ in ()).throw(KeyboardInterrupt()))
    res = CliRunner().invoke(main, ["replay", "--matrix", str(tmp_path / "m.csv"), "--methods", "uniform", "--seeds",
                                    "0", "--workers", "1", "-q", "--out", str(tmp_path / "none.json")])
    assert res.exit_code == 130 and not list(tmp_path.glob("none*.json"))
    assert " ".join(res.output.split()).endswith("interrupted; no job had finished, so no run is kept in a results "
                                                 "file (a job is one method and seed on one fold or target set, kept "
                                                 f"when it ends); {tmp_path / 'none.json'} was not written")
    monkeypatch.setattr(replay_module, "_run_job", cut_at_the_third)
    res = CliRunner().invoke(main, ["report", str(kept[0]), "--out-dir", str(tmp_path / "rep"), "--no-figures"])
    assert res.exit_code == 0, res.output  # and says the runs are partial (a re-trial: it called them every target's)
    assert f"{kept[0]} holds the runs an interrupted replay had finished (2 of the 8 jobs of m): a bank it had not " \
        "reached is absent, and the one it was replaying covers only the targets, folds and seeds of the jobs done" in \
        " ".join(res.output.split())
    # and the written report says it too, in its notes (a re-trial: only the terminal did, and comparison.md read as whole)
    md = (tmp_path / "rep" / "comparison.md").read_text()
    assert f"{kept[0]} holds the runs an interrupted replay had finished (2 of the 8 jobs of m)" in " ".join(md.split())

    # its re-trial: after the last job, before --out was written, every run was lost; just after it was written, an
    # earlier results file was replaced with only "interrupted" said
    import hspr.cli.replay_cmd as replay_cmd
    import hspr.report.stats as report_stats

    monkeypatch.setattr(replay_module, "_run_job", real)
    args = ["replay", "--matrix", str(tmp_path / "m.csv"), "--methods", "uniform", "--seeds", "0,1", "--workers", "1",
            "-q", "--out", str(tmp_path / "new.json")]
    with monkeypatch.context() as mp:
        mp.setattr(report_stats, "summarize", lambda *a, **k: (_ for _ in ()).throw(KeyboardInterrupt()))
        res = CliRunner().invoke(main, args)
    kept = list(tmp_path.glob("new.interrupted-*.json"))
    assert res.exit_code == 130 and len(kept) == 1 and not (tmp_path / "new.json").exists()
    assert len(json.loads(kept[0].read_text())["runs"]) == 24  # 8 jobs of 3 targets
    assert " ".join(res.output.split()).endswith(f"interrupted; the 24 runs finished before it (every job) are in "
                                                 f"{kept[0]} (`hspr report` reads them); {tmp_path / 'new.json'} was "
                                                 "not written")
    with monkeypatch.context() as mp:
        mp.setattr(replay_cmd, "print_table", lambda *a, **k: (_ for _ in ()).throw(KeyboardInterrupt()))
        res = CliRunner().invoke(main, args[:-1] + [str(tmp_path / "r.json"), "--csv", str(tmp_path / "s.csv")])
    assert res.exit_code == 130 and len(json.loads((tmp_path / "r.json").read_text())["runs"]) == 24
    assert " ".join(res.output.split()).endswith(f"interrupted; the 24 runs were written to {tmp_path / 'r.json'}; it "
                                                 f"replaced the earlier {tmp_path / 'r.json'} of 0 runs; the summary to "
                                                 f"{tmp_path / 's.csv'}")  # the CSV too (a second re-trial)
    assert len(list(tmp_path.glob("r.interrupted-*.json"))) == 1  # the first one's only


def test_a_stopped_replay_resumes_from_the_target_runs_it_finished(tmp_path, monkeypatch, caplog):
    """A scale trial: one job of `hspr` on 400 x 5,000 ran for 20 minutes, its progress counted jobs, and an interrupt
    kept none of its targets. A job's target runs are kept in the fit cache (at a stop, every CHECKPOINT_SECONDS, and
    at the end of a job that ran that long); the same replay run again reads them, runs only the others, gives the
    runs an unstopped replay gives and leaves no entry; a long job logs its targets done; the command says what is
    kept. A method of one's own keeps nothing."""
    import logging

    import hspr.replay as replay_module
    from hspr.fitcache import cache_entries

    monkeypatch.setenv("HSPR_CACHE_DIR", str(tmp_path / "cache"))
    m, _ = simulate_matrix(16, 40, seed=3)
    folds = make_folds(m.agents, 2)
    methods = {"hspr": get_method("hspr", config=HSPRConfig(n_nodes=256, n_draws=2048))}
    whole = replay("m", m, methods, seeds={"hspr": [0, 1]}, folds=folds)
    assert cache_entries(tmp_path / "cache") == []
    real, ran = replay_module.run_session, []

    def stops_at(k):
        def run(model, row, *args):
            if len(ran) == k:
                raise KeyboardInterrupt
            ran.append((row.agent, args[1]))
            return real(model, row, *args)
        return run

    # fold 0 seed 0 (8 targets) runs whole and is kept (it ran "long"); fold 0 seed 1 is stopped after 3 targets
    monkeypatch.setattr(replay_module, "CHECKPOINT_SECONDS", 0.0)
    monkeypatch.setattr(replay_module, "run_session", stops_at(11))
    with caplog.at_level(logging.WARNING, "hspr.replay"), pytest.raises(KeyboardInterrupt) as exc:
        replay("m", m, methods, seeds={"hspr": [0, 1]}, folds=folds)
    assert exc.value.jobs == (1, 4) and exc.value.kept_targets == 3 and len(cache_entries(tmp_path / "cache")) == 2
    assert "replay of hspr on m (fold 0, seed 1): stopped; the 3 of 8 targets it finished are kept" in caplog.text
    ran.clear()
    caplog.clear()
    monkeypatch.setattr(replay_module, "run_session", stops_at(10 ** 6))
    monkeypatch.setattr(replay_module, "PROGRESS_AFTER", 0.0)
    with caplog.at_level(logging.WARNING, "hspr.replay"):
        again = replay("m", m, methods, seeds={"hspr": [0, 1]}, folds=folds)
    assert again == whole and len(ran) == 32 - 8 - 3 and cache_entries(tmp_path / "cache") == []
    assert "replay of m: resumed with the runs of 11 target(s) in 2 of its 4 job(s) that a stopped replay" in caplog.text
    assert "replay of hspr on m (fold 1, seed 1): 8 of 8 targets (100 %)" in caplog.text

    class Own(type(methods["hspr"])):  # a method of one's own: its code is not in the cache key, so nothing is kept
        pass

    monkeypatch.setattr(Own, "__module__", "mine")
    monkeypatch.setattr(replay_module, "run_session", stops_at(len(ran) + 3))
    with pytest.raises(KeyboardInterrupt) as exc:
        replay("m", m, {"own": Own(config=HSPRConfig(n_nodes=256, n_draws=2048))}, seeds={"own": [0]}, folds=folds)
    assert exc.value.kept_targets == 0 and cache_entries(tmp_path / "cache") == []

    write_wide_csv(m, tmp_path / "m.csv")  # the command says what is kept, and the same command resumes
    monkeypatch.setattr(replay_module, "run_session", stops_at(len(ran) + 3))
    args = ["replay", "--matrix", str(tmp_path / "m.csv"), "--methods", "hspr", "--seeds", "0", "--workers", "1", "-q",
            "--out", str(tmp_path / "r.json")]
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 130 and " ".join(res.output.split()).endswith(
        "was not written; the runs of 3 target(s) of unfinished jobs are kept in the fit cache, and the same command "
        "resumes from them"), res.output
    monkeypatch.setattr(replay_module, "run_session", stops_at(10 ** 6))
    n = len(ran)
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0 and len(ran) == n + m.n_agents - 3, res.output


def test_replay_of_every_bank_resumes_the_banks_it_had_finished(tmp_path, monkeypatch):
    """`hspr replay --bank all` keeps the checkpoints of the banks it finished until --out is written: the same command
    run again after an interrupt in its second bank reads the first bank's long jobs and the second's finished targets,
    runs the rest, and leaves no checkpoint once it ends."""
    import hspr.replay as replay_module
    from hspr.fitcache import cache_entries

    monkeypatch.setenv("HSPR_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(replay_module, "CHECKPOINT_SECONDS", 0.0)  # every job "ran long": kept at its end
    real, ran = replay_module.run_session, []

    def stops_at(k):
        def run(model, row, *args):
            if len(ran) == k:
                raise KeyboardInterrupt
            ran.append(row.agent)
            return real(model, row, *args)
        return run

    args = ["replay", "--bank", "all", "--methods", "uniform", "--seeds", "0", "--workers", "1", "-q", "--out",
            str(tmp_path / "r.json")]
    monkeypatch.setattr(replay_module, "run_session", stops_at(84 + 5))  # lite's 84 targets, then 5 of verified's
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 130 and "the runs of 5 target(s) of unfinished jobs are kept" in res.output, res.output
    ran.clear()
    monkeypatch.setattr(replay_module, "run_session", stops_at(10 ** 6))
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0 and len(ran) == 84 + 114 + 22 + 14 - 84 - 5, res.output
    assert len(json.loads((tmp_path / "r.json").read_text())["runs"]) == 234
    assert cache_entries(tmp_path / "cache") == []


def test_a_second_ctrl_c_during_the_keep_still_says_where_the_runs_are(tmp_path, monkeypatch, default_signals):
    """A second re-trial: three quick Ctrl-C kept the finished runs but said only "interrupted": the signal held while
    the kept file was written was raised as the hold ended, before the message was noted."""
    import os
    import signal

    import hspr.cli.replay_cmd as replay_cmd
    import hspr.replay as replay_module

    m, _ = simulate_matrix(12, 30, seed=3)
    write_wide_csv(m, tmp_path / "m.csv")
    real_job, real_write, calls = replay_module._run_job, replay_cmd.write_json_durable, []

    def cut_at_the_third(job, model):
        calls.append(job)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real_job(job, model)

    def write_then_ctrl_c(doc, path):
        real_write(doc, path)
        os.kill(os.getpid(), signal.SIGINT)  # held by the keep, raised as its hold ends

    monkeypatch.setattr(replay_module, "_run_job", cut_at_the_third)
    monkeypatch.setattr(replay_cmd, "write_json_durable", write_then_ctrl_c)
    res = CliRunner().invoke(main, ["replay", "--matrix", str(tmp_path / "m.csv"), "--methods", "uniform", "--seeds",
                                    "0,1", "--workers", "1", "-q", "--out", str(tmp_path / "r.json")])
    kept = list(tmp_path.glob("r.interrupted-*.json"))
    assert res.exit_code == 130 and len(kept) == 1 and len(json.loads(kept[0].read_text())["runs"]) == 6
    assert f"the 6 runs finished before it (2 of the 8 jobs of m) are in {kept[0]}" in " ".join(res.output.split())


def test_replay_out_through_a_link_names_the_file_written(tmp_path):
    """A hostile trial: `--out link.json` (a link to base.json) replaced base.json and named only the link."""
    m, _ = simulate_matrix(8, 20, seed=2)
    write_wide_csv(m, tmp_path / "m.csv")
    (tmp_path / "link.json").symlink_to(tmp_path / "base.json")
    res = CliRunner().invoke(main, ["replay", "--matrix", str(tmp_path / "m.csv"), "--methods", "uniform", "--seeds", "0",
                                    "--workers", "1", "-q", "--out", str(tmp_path / "link.json")])
    assert res.exit_code == 0, res.output
    assert f"wrote {tmp_path / 'link.json'} (a link: written to {os.path.realpath(tmp_path / 'base.json')}) (8 runs)" in \
        " ".join(res.output.split())
    assert (tmp_path / "link.json").is_symlink() and len(json.loads((tmp_path / "base.json").read_text())["runs"]) == 8
