"""Source-only configuration selection (HSPR_SPEC section 6) and HSPRAuto, on tiny matrices."""

from __future__ import annotations

import json
import logging
import re

import numpy as np
import pytest
from click.testing import CliRunner

from hspr.data import ResponseMatrix, make_folds
from hspr.data.build import write_wide_csv
from hspr.data.io import load_matrix
from hspr.data.matrix import DataError
from hspr.methods import get_method
from hspr.methods.hspr import HSPR, HSPRConfig
from hspr.methods.hspr import selection as sel
from hspr.methods.hspr.source_fit import fit_source

from .conftest import simulate_matrix

TINY = HSPRConfig(n_nodes=64, n_draws=512)
_FITS: dict = {}


@pytest.fixture(autouse=True)
def _memoised_source_fit(monkeypatch):
    """The source fit is a pure function of the matrix: memoise it across tests (speed only)."""

    def cached(M, missing=None, item_prior_scale=1.0):
        M = np.ascontiguousarray(M)
        key = (M.shape, M.tobytes(), None if missing is None else np.asarray(missing, bool).tobytes(), item_prior_scale)
        if key not in _FITS:
            _FITS[key] = fit_source(M, missing=missing, item_prior_scale=item_prior_scale)
        return _FITS[key]

    monkeypatch.setattr(sel, "fit_source", cached)


def tiny_bank(n_agents=10, n_tasks=40, seed=2):
    """Simulated bank with a few duplicated columns (multi-task signature groups)."""
    m, _ = simulate_matrix(n_agents, n_tasks, seed=seed, rank=2)
    v = m.values.copy()
    v[:, n_tasks - 8:] = v[:, :8]
    return ResponseMatrix(m.agents, m.tasks, v)


@pytest.fixture(scope="module")
def bank():
    return tiny_bank(n_agents=8)


@pytest.fixture(scope="module")
def selected(bank):
    return sel.select_config(bank, base_config=TINY)


def _run(model, row, budget, seed=0, deterministic=False):
    return sel._run_path(model, row, budget, seed, deterministic)


def test_deterministic_path_takes_lowest_unqueried_column(bank):
    fit = fit_source(bank.values[1:])
    assert (fit.group_size > 1).any()
    model = HSPR(TINY.replace(group_uncertainty=False)).fit(bank.rows(np.arange(1, bank.n_agents)))
    sess = _run(model, bank.values[0], 20, deterministic=True)
    seen: set[int] = set()
    for t in sess.queried:
        j = bank.task_index(t)
        g = fit.labels[j]
        same = [k for k in np.flatnonzero(fit.labels == g) if k not in seen]
        assert j == min(same)
        seen.add(j)
    again = _run(model, bank.values[0], 20, deterministic=True)
    assert again.queried == sess.queried


@pytest.mark.parametrize("decision", ["mean", "median"])
def test_both_lambdas_from_one_path_equal_the_session_estimate(bank, decision):
    src = bank.rows(np.arange(1, bank.n_agents))
    for acqn in ("score", "latent"):
        base = TINY.replace(decision=decision, acquisition=acqn)
        model = HSPR(base).fit(src)
        sess = _run(model, bank.values[0], 6, seed=1)
        both = sel.path_estimates(sess, decision)
        for lam, est in zip(sel.LAMBDAS, both):
            ref = _run(model.with_config(base.replace(lam=lam)), bank.values[0], 6, seed=1)
            assert ref.queried == sess.queried  # lambda does not change the query path
            assert est == pytest.approx(ref.estimate().point, abs=1e-12)


def test_seed_free_paths_are_the_same_for_every_seed():
    rng = np.random.default_rng(5)
    rng.integers(1)
    assert rng.integers(10**9) == np.random.default_rng(5).integers(10**9)  # integers(1) draws nothing
    bank = tiny_bank(n_agents=14, seed=4)
    src = bank.rows(np.arange(1, bank.n_agents))
    fit = sel.fit_source(src.values)
    found = {True: 0, False: 0}
    for budget in (1, 2, 3, 4, 8, 16):
        for acqn in ("score", "latent"):
            model = HSPR(TINY.replace(acquisition=acqn, kappa=16.0)).fit(src)
            runs = [_run(model, bank.values[0], budget, seed=s) for s in sel.QUERY_SEEDS]
            free = sel.seed_free(runs[0], fit)
            found[free] += 1
            if free:
                assert all(r.queried == runs[0].queried for r in runs)
                assert all(r.estimate() == runs[0].estimate() for r in runs)
    assert found[True] and found[False]


def test_tie_rule():
    rows = [{"mae": 0.02, "max_err": 0.05}, {"mae": 0.01, "max_err": 0.09}, {"mae": 0.01, "max_err": 0.04},
            {"mae": 0.01 + 1e-15, "max_err": 0.04}, {"mae": 0.03, "max_err": 0.01}]
    assert sel.best_row(rows) == 2  # tie on MAE -> smaller max error; equal again -> grid order
    assert sel.best_row(rows[:2]) == 1
    assert sel.best_row([{"mae": 0.01, "max_err": 0.02}] * 3) == 0


def _brute_best(rows):
    """Independent argmin: sort by (MAE, max error, grid index) with the same 1e-12 tie tolerance."""
    key = [(round(r["mae"] / sel.TIE_TOL), round(r["max_err"] / sel.TIE_TOL), i) for i, r in enumerate(rows)]
    return min(key)[2]


def test_staged_selection_matches_brute_force_grid(bank, selected):
    """Every grid point re-scored with plain sessions (their own lambda/decision, estimate().point):
    same table values and the same choice as select_config at every stage."""
    fits = [sel.fit_source(np.delete(bank.values, i, axis=0)) for i in range(bank.n_agents)]
    base = TINY
    stage_cfgs = [
        ([base.replace(rank=r, gamma=g, acquisition=a, lam=lam, decision="mean", group_uncertainty=False)
          for r, g in sel.RANK_GAMMA for a in sel.ACQUISITIONS for lam in sel.LAMBDAS], (0,), True),
    ]
    chosen_cfg = None
    for stage in range(3):
        if stage == 1:
            stage_cfgs.append(([base.replace(rank=chosen_cfg.rank, gamma=chosen_cfg.gamma, kappa=k, acquisition=a,
                                             lam=lam, decision="mean", group_uncertainty=True)
                                for k in sel.KAPPAS for a in sel.ACQUISITIONS for lam in sel.LAMBDAS],
                               sel.QUERY_SEEDS, False))
        if stage == 2:
            stage_cfgs.append(([chosen_cfg.replace(lam=lam, decision="median") for lam in sel.LAMBDAS],
                               sel.QUERY_SEEDS, False))
        cfgs, seeds, det = stage_cfgs[stage]
        rows = []
        for cfg in cfgs:
            e = sel.loo_setting_errors(bank, cfg, seeds=seeds, deterministic=det, fits=fits)
            rows.append({"mae": e.mean(), "max_err": e.max(axis=0).mean()})
        got = selected.stages[stage]
        assert len(got) == len(rows) == {0: 44, 1: 16, 2: 2}[stage]
        for r_got, r_ref in zip(got, rows):
            assert r_got["mae"] == pytest.approx(r_ref["mae"], abs=1e-12)
            assert r_got["max_err"] == pytest.approx(r_ref["max_err"], abs=1e-12)
        best = _brute_best(rows)
        assert selected.chosen[stage] == best
        chosen_cfg = cfgs[best]
    want = chosen_cfg.replace(decision="median", group_uncertainty=True)
    assert selected.config == want
    assert selected.source_mae == pytest.approx(selected.stages[2][selected.chosen[2]]["mae"])


def test_selection_never_reads_target_rows(bank, selected, tmp_path):
    """Fold sources of two matrices that differ only in the target rows give the same selection."""
    big = tiny_bank(n_agents=9, seed=2)
    folds = make_folds(big.agents)
    from hspr.cli.select import fold_sources

    garbage = big.values.copy()
    tgt = [big.agent_index(a) for a in folds[1]]
    garbage[tgt] = np.random.default_rng(9).integers(0, 2, size=(len(tgt), big.n_tasks))
    other = ResponseMatrix(big.agents, big.tasks, garbage)
    a = sel.select_config(fold_sources(big, folds, 1), base_config=TINY)
    b = sel.select_config(fold_sources(other, folds, 1), base_config=TINY)
    assert a.source_digest == b.source_digest
    assert a.config == b.config and a.chosen == b.chosen
    assert a.to_dict()["stages"] == b.to_dict()["stages"]


def test_held_out_row_is_removed_before_the_source_fit(bank, monkeypatch):
    seen = []
    real = sel.fit_source

    def spy(M, missing=None, item_prior_scale=1.0):
        seen.append(np.array(M))
        assert missing is None  # a complete matrix takes the complete fit
        assert item_prior_scale == TINY.item_prior_scale  # the base configuration's item prior
        return real(M)

    monkeypatch.setattr(sel, "fit_source", spy)
    src = bank.rows(np.arange(5))
    sel.select_config(src, base_config=TINY)
    assert len(seen) == src.n_agents  # one fit per held-out agent, shared by all three stages
    for i, M in enumerate(seen):
        assert np.array_equal(M, np.delete(src.values, i, axis=0))


def test_selection_with_missing_cells_leaves_them_out_of_each_held_out_fit(bank, monkeypatch):
    src = bank.rows(np.arange(6))
    holes = np.random.default_rng(4).random(src.values.shape) < 0.15
    holed = ResponseMatrix(src.agents, src.tasks, src.values, holes)
    seen = []
    real = sel.fit_source

    def spy(M, missing=None, item_prior_scale=1.0):
        seen.append((np.array(M), None if missing is None else np.array(missing)))
        return real(M, missing=missing, item_prior_scale=item_prior_scale)

    monkeypatch.setattr(sel, "fit_source", spy)
    res = sel.select_config(holed, base_config=TINY)
    assert len(seen) == src.n_agents
    for i, (M, miss) in enumerate(seen):
        assert np.array_equal(miss, np.delete(holes, i, axis=0))
        assert np.array_equal(M, np.delete(holed.values, i, axis=0))
    # stage 1 of the table equals plain sessions on the same masked fits, held-out rows zero-filled
    fits = [real(np.delete(holed.values, i, axis=0), missing=np.delete(holes, i, axis=0)) for i in range(6)]
    for row, cfg in zip(res.stages[0][:4], sel.stage1(TINY).settings()[:4]):
        e = sel.loo_setting_errors(holed, cfg, seeds=(0,), deterministic=True, fits=fits)
        assert row["mae"] == pytest.approx(e.mean(), abs=1e-12)


def test_hspr_auto_uses_shipped_config_when_digest_matches(bank, monkeypatch):
    src = bank.rows(np.arange(8))
    cfg = TINY.replace(rank=1, gamma=8.0, kappa=16.0, acquisition="latent", lam=0.0)
    table = {"generated_by": "test", "toy": {"0": {"config": cfg.to_dict(), "source_digest": src.digest()}}}

    def boom(*a, **k):
        raise AssertionError("selection must not run when a shipped config matches")

    monkeypatch.setattr(sel, "select_config", boom)
    auto = sel.HSPRAuto(table=table)
    model = auto.fit(src)
    assert model.config == cfg and model.shipped == ("toy", "0") and model.selection is None
    # a trial: which settings hspr_auto ran was recorded nowhere; the differing ones, as --config takes them
    assert model.fitted_settings == {"rank": 1, "gamma": 8.0, "kappa": 16.0, "acquisition": "latent", "lam": 0.0,
                                     **{k: v for k, v in TINY.to_dict().items() if v != HSPRConfig().to_dict()[k]}}
    assert HSPRConfig.from_dict(model.fitted_settings) == cfg
    assert not hasattr(auto, "shipped_")  # the method object is not changed by fit
    ablated = sel.HSPRAuto(table=table, overrides={"decision": "mean"}).fit(src)
    assert ablated.config == cfg.replace(decision="mean")
    assert get_method("hspr_auto").name == "hspr_auto" and get_method("hspr_auto").seed_kind == "adaptive"


def test_hspr_auto_selects_when_no_entry_matches(bank, caplog, monkeypatch, tmp_path):
    monkeypatch.setenv("HSPR_CACHE_DIR", str(tmp_path / "cold"))  # the selection is cached: start from none
    src = bank.rows(np.arange(5))
    auto = sel.HSPRAuto(base_config=TINY, table={"toy": {"0": {"config": TINY.to_dict(), "source_digest": "x"}}})
    with caplog.at_level(logging.WARNING, logger=sel.__name__):
        model = auto.fit(src)
    assert any("its table has no configuration for source" in r.getMessage() for r in caplog.records)
    assert model.config == sel.select_config(src, base_config=TINY).config == model.selection.config
    assert model.shipped is None and HSPRConfig.from_dict(model.fitted_settings) == model.config
    chosen = [r.getMessage() for r in caplog.records if r.getMessage().startswith("hspr_auto: chose ")]
    assert chosen == [f"hspr_auto: chose {json.dumps(model.fitted_settings)} on source {src.source} (5 agents x "
                      f"{src.n_tasks} tasks, digest {src.digest()[:12]})"]
    # a trial: minutes of selection inside a replay's fit showed no progress; it is logged in tenths
    ticks = [r.getMessage() for r in caplog.records if "held-out runs" in r.getMessage()]
    assert 2 <= len(ticks) <= 11 and ticks[-1].startswith(f"hspr_auto selection on {src.source} (digest {src.digest()[:12]}): ")
    done, total = map(int, re.search(r": (\d+) of (\d+) held-out runs \(100 %\)", ticks[-1]).groups())
    assert done == total > 0
    caplog.clear()  # `replay --quiet` sets QUIET_ENV: a new-user trial still got 40 such lines
    monkeypatch.setenv("HSPR_CACHE_DIR", str(tmp_path / "cold-again"))  # so the selection runs again
    calls, real = [], sel.select_config
    monkeypatch.setattr(sel, "select_config", lambda *a, **k: calls.append(1) or real(*a, **k))
    with caplog.at_level(logging.WARNING, logger=sel.__name__):
        monkeypatch.setenv(sel.QUIET_ENV, "1")
        again = auto.fit(src)
    assert calls == [1] and again.selection is not None  # it ran, quietly
    assert again.config == model.config
    assert not [r for r in caplog.records if "held-out runs" in r.getMessage()]
    # nor the announcement: a hostile trial saw it once per fold of a `replay -q` (the help says no selection lines)
    assert not [r for r in caplog.records if "running source-only selection" in r.getMessage()]


def test_hspr_auto_keeps_its_selection_in_the_fit_cache(bank, caplog, monkeypatch, tmp_path):
    """A replay of a bank with no shipped configuration selected again for every fold of every replay."""
    monkeypatch.setenv("HSPR_CACHE_DIR", str(tmp_path))
    src = bank.rows(np.arange(5))
    first = sel.HSPRAuto(base_config=TINY).fit(src)
    assert len(list(tmp_path.glob("*.pkl"))) == 1

    def boom(*a, **k):
        raise AssertionError("a cached selection must not run again")

    caplog.clear()
    with monkeypatch.context() as m:
        m.setattr(sel, "select_config", boom)
        with caplog.at_level(logging.WARNING, logger=sel.__name__):
            second = sel.HSPRAuto(base_config=TINY, n_jobs=2).fit(src)  # workers are not part of the key
    assert second.config == first.config and second.selection.stages == first.selection.stages
    assert second.fitted_settings == first.fitted_settings
    said = [r.getMessage() for r in caplog.records]
    assert any(f"selection for source {src.source} (5 agents x {src.n_tasks} tasks, digest {src.digest()[:12]}) was read "
               "from the fit cache" in t
               for t in said) and not any("running source-only selection" in t for t in said)
    # another fraction, other numerical settings or other sources select again
    calls = []
    real = sel.select_config
    monkeypatch.setattr(sel, "select_config", lambda *a, **k: calls.append(1) or real(*a, **k))
    sel.HSPRAuto(base_config=TINY, fraction=0.2).fit(src)
    sel.HSPRAuto(base_config=TINY.replace(n_draws=TINY.n_draws + 8)).fit(src)
    sel.HSPRAuto(base_config=TINY).fit(bank.rows(np.arange(1, 6)))
    assert len(calls) == 3 and len(list(tmp_path.glob("*.pkl"))) == 4
    # a damaged entry is deleted and the selection runs again, to the same choice
    for p in tmp_path.glob("*.pkl"):
        p.write_bytes(p.read_bytes()[:-1] + b"x")
    with pytest.warns(UserWarning, match="damaged"):
        again = sel.HSPRAuto(base_config=TINY).fit(src)
    assert again.config == first.config and len(calls) == 4


def test_shipped_table_entries_are_valid():
    table = sel.shipped_configs()
    assert "generated_by" in table
    # every fold of every bundled bank ships, so `--config auto` never selects on a bundled bank
    assert {b: sorted(v) for b, v in table.items() if isinstance(v, dict)} == {
        b: ["0", "1", "2", "3"] for b in ("lite", "verified", "full", "pro")}
    from hspr.cli.select import fold_sources
    from hspr.data import load_bank
    from hspr.data.folds import bank_folds

    for bank_name, folds in table.items():
        if not isinstance(folds, dict):
            continue
        m = load_bank(bank_name)
        for fold, entry in folds.items():
            cfg = HSPRConfig.from_dict(entry["config"])
            assert cfg.decision == "median" and cfg.group_uncertainty
            assert (cfg.n_nodes, cfg.n_draws) == (8192, 131072)
            src = fold_sources(m, bank_folds(bank_name), int(fold))
            assert entry["source_digest"] == src.digest()
            assert sel.lookup_shipped(src.digest())[2] == cfg


def test_cli_select_writes_result_and_record(tmp_path):
    from hspr.cli import main

    m = tiny_bank(n_agents=9, seed=3)
    path = write_wide_csv(m, tmp_path / "toy.csv")
    rec = tmp_path / "shipped.json"
    out = tmp_path / "sel.json"
    res = CliRunner().invoke(main, ["select", "--matrix", str(path), "--bank", "toy", "--fold", "2", "--quiet",
                                    "--eval-nodes", "64", "--eval-draws", "512", "--out", str(out),
                                    "--config-out", str(tmp_path / "cfg.json"), "--record", str(rec)],
                            env={"COLUMNS": "400"})  # the note's long tmp path is not folded inside a word
    assert res.exit_code == 0, res.output
    assert "cfg.json was chosen on fold 2's sources" in " ".join(res.output.split())  # not for every fold's replay
    payload = json.loads(out.read_text())
    assert [len(s) for s in payload["stages"]] == [44, 16, 2]
    cfg = HSPRConfig.from_json(tmp_path / "cfg.json")
    assert cfg == HSPRConfig.from_dict(payload["config"]) and cfg.n_nodes == 8192
    table = json.loads(rec.read_text())
    assert "generated_by" in table and table["toy"]["2"]["source_digest"] == payload["source_digest"]
    from hspr.cli.select import fold_sources

    src = fold_sources(m, make_folds(m.agents), 2)
    assert sel.lookup_shipped(src.digest(), table)[2] == cfg
    assert sorted(f.name for f in tmp_path.iterdir()) == ["cfg.json", "sel.json", "shipped.json", "toy.csv"]
    assert "recorded toy fold 2 in" in " ".join(res.output.split())
    assert table["toy"]["2"]["matrix_digest"] == load_matrix(path).digest()
    bad = CliRunner().invoke(main, ["select", "--matrix", str(path), "--fold", "7", "--out", str(out)])
    assert bad.exit_code != 0
    # another matrix under the same label and table: refused before the selection runs
    other = write_wide_csv(tiny_bank(n_agents=9, seed=4), tmp_path / "other.csv")
    bad = CliRunner().invoke(main, ["select", "--matrix", str(other), "--bank", "toy", "--fold", "1", "--quiet",
                                    "--out", str(tmp_path / "sel2.json"), "--record", str(rec)])
    assert bad.exit_code == 2 and "holds toy fold(s) 2 selected on another matrix" in " ".join(bad.output.split())
    assert not (tmp_path / "sel2.json").exists() and json.loads(rec.read_text()) == table


def test_cli_select_on_every_agent_and_against_the_defaults(tmp_path):
    """A new-user trial: no way to choose on every agent for a live session, and nothing said the chosen
    settings were no better than the defaults (they replayed 1.5 pp worse on the trial's 38-agent bank)."""
    from hspr.cli import main
    from hspr.cli.select import versus_default_lines

    m = tiny_bank(n_agents=9, seed=3)
    path = write_wide_csv(m, tmp_path / "toy.csv")
    out = tmp_path / "all.json"
    res = CliRunner().invoke(main, ["select", "--matrix", str(path), "--fold", "all", "-q", "--eval-nodes", "64",
                                    "--eval-draws", "512", "--out", str(out), "--config-out", str(tmp_path / "c.json")])
    assert res.exit_code == 0, res.output
    payload = json.loads(out.read_text())
    assert payload["fold"] == "all" and payload["n_sources"] == 9 and payload["source_digest"] == m.digest()
    ticks = []
    direct = sel.select_config(m, eval_nodes=64, eval_draws=512, compare_default=True,
                               progress=lambda done, total: ticks.append((done, total)))
    assert ticks[-1] == (36, 36)  # 9 agents x 4 passes: the defaults' pass counts whatever grid it repeats
    assert payload["config"] == direct.config.to_dict()
    assert payload["default"]["mae"] == direct.default["mae"]
    # the defaults scored as stage 3 scores its candidates: the same number as a stage-3 run of the defaults
    dflt = sel.stage_table(sel.stage3(HSPRConfig()), np.zeros((9, 1, 3, 2)))  # the rows' layout
    assert dflt[1]["setting"]["lam"] == 0.5 == HSPRConfig().lam
    diff, se = direct.versus_default()
    chosen_err = np.asarray(direct.stages[2][direct.chosen[2]]["agent_err"])
    assert diff == pytest.approx(chosen_err.mean() - np.mean(direct.default["agent_err"]))
    assert se == pytest.approx(np.std(chosen_err - np.asarray(direct.default["agent_err"]), ddof=1) / 3)
    said = " ".join(res.output.split())
    assert f"default settings (rank=2, gamma=4.0, kappa=1.0, acquisition=score, lam=0.5): source MAE " \
           f"{100 * direct.default['mae']:.3f} pp on the same 9 held-out agents" in said
    assert "was chosen on fold" not in said
    # the warning follows the one-standard-error rule
    from types import SimpleNamespace

    def result(chosen, default, config):
        return SimpleNamespace(versus_default=lambda: (np.mean(np.subtract(chosen, default)),
                                                       np.std(np.subtract(chosen, default), ddof=1) / 2),
                               default={"mae": float(np.mean(default)), "setting": HSPRConfig().to_dict()},
                               n_sources=4, config=config,
                               stages=[[0] * 44, [0] * 16, [0] * 2])

    other = HSPRConfig(rank=1)
    assert len(versus_default_lines(result([1, 2, 3, 4], [1.1, 2.1, 3.1, 4.1], other))) == 1  # 0.1 lower, SE 0
    # 0.1 lower on average, all of it from one agent: SE 0.1, not clearly better
    assert "not clearly better than the defaults" in versus_default_lines(result([1, 2, 3, 4], [1, 2, 3, 4.4], other))[1]
    higher = versus_default_lines(result([1, 2, 3, 4], [0.9, 2, 3, 4], other))  # higher: warned as higher (a hostile
    assert len(higher) == 2 and "have a higher source MAE than the defaults" in higher[1]  # trial: 'lower by less')
    assert "lower by less" not in higher[1] and "+2.500 pp" in higher[1]
    assert len(versus_default_lines(result([1, 2, 3, 4], [1, 2, 3, 4.4], HSPRConfig()))) == 1  # it is the defaults
    bad = CliRunner().invoke(main, ["select", "--matrix", str(path), "--fold", "all", "-q", "--out", str(out),
                                    "--record", str(tmp_path / "t.json")])
    assert bad.exit_code == 2 and "--record table holds per-fold choices" in " ".join(bad.output.split())
    bad = CliRunner().invoke(main, ["select", "--matrix", str(path), "--fold", "every", "--out", str(out)])
    assert bad.exit_code == 2 and "give a fold number 0..3, or 'all'" in " ".join(bad.output.split())
    # --config-out alone: a user wanting only the configuration had to write the whole result too (session 33)
    alone = CliRunner().invoke(main, ["select", "--matrix", str(path), "--fold", "all", "-q", "--eval-nodes", "64",
                                      "--eval-draws", "512", "--config-out", str(tmp_path / "only.json")])
    assert alone.exit_code == 0, alone.output
    assert json.loads((tmp_path / "only.json").read_text()) == direct.config.to_dict()
    assert f"; wrote {tmp_path / 'only.json'}" in " ".join(alone.output.split())
    bad = CliRunner().invoke(main, ["select", "--matrix", str(path), "--fold", "all", "-q"])
    assert bad.exit_code == 2 and "give --out (the whole result as JSON), --config-out" in " ".join(bad.output.split())


def test_concurrent_records_keep_every_entry_and_leave_no_lock_file(tmp_path):
    from concurrent.futures import ThreadPoolExecutor
    from types import SimpleNamespace

    from hspr.cli.select import record_entry

    def result(k):
        return SimpleNamespace(config=HSPRConfig(), source_digest=f"d{k}", source_mae=0.01 * k,
                               stages=[[], [], [{"max_err": 0.02}]], chosen=[0, 0, 0], n_sources=10,
                               budget=5, eval_overrides={}, seconds=1.0)

    rec = tmp_path / "shipped.json"
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda k: record_entry(rec, "toy", k, result(k), f"cmd {k}"), range(16)))
    table = json.loads(rec.read_text())
    assert sorted(int(k) for k in table["toy"]) == list(range(16))
    assert [e["source_digest"] for e in table["toy"].values()] == [f"d{k}" for k in range(16)]
    assert [f.name for f in tmp_path.iterdir()] == ["shipped.json"]


def test_a_record_checks_the_table_again_under_its_lock_and_keeps_its_mode(tmp_path):
    """A hostile trial: two concurrent `select --record` runs on two matrices of one label both passed the checks
    made before the selection, and the table then held folds of two matrices; `--record` also made a private table
    world-readable (chmod 644), and a table in a missing folder failed after the selection."""
    import os
    import stat
    from types import SimpleNamespace

    from hspr.cli.select import RecordConflict, record_entry

    def result(k):
        return SimpleNamespace(config=HSPRConfig(), source_digest=f"d{k}", source_mae=0.01, stages=[[], [], [{"max_err": 0.02}]],
                               chosen=[0, 0, 0], n_sources=10, budget=5, eval_overrides={}, seconds=1.0)

    rec = tmp_path / "new" / "folder" / "t.json"  # a missing folder is made, as for --out
    record_entry(rec, "m", 0, result(0), "cmd 0", matrix_digest="a" * 64)
    before = rec.read_bytes()
    with pytest.raises(RecordConflict, match=r"another selection recorded in it while this one ran conflicts with it: .*"
                                             r"holds m fold\(s\) 0 selected on another matrix"):
        record_entry(rec, "m", 1, result(1), "cmd 1", matrix_digest="b" * 64)
    with pytest.raises(RecordConflict, match=r"holds m/0, a selection on the same sources"):
        record_entry(rec, "other", 0, result(0), "cmd 2", matrix_digest="c" * 64)
    assert rec.read_bytes() == before  # nothing recorded
    os.chmod(rec, 0o600)
    record_entry(rec, "m", 1, result(1), "cmd 1", matrix_digest="a" * 64)
    assert stat.S_IMODE(rec.stat().st_mode) == 0o600 and sorted(json.loads(rec.read_text())["m"]) == ["0", "1"]


def test_selection_on_dask_local_cluster_matches_local(bank, selected):
    pytest.importorskip("dask.distributed")
    from hspr.parallel import cluster

    with cluster("dask", None, 2) as backend:
        remote = sel.select_config(bank, base_config=TINY, n_jobs=2, backend=backend)
    assert remote.config == selected.config
    assert remote.chosen == selected.chosen
    for a, b in zip(remote.stages, selected.stages):
        np.testing.assert_array_equal([r["mae"] for r in a], [r["mae"] for r in b])


def test_a_stopped_selection_resumes_with_the_units_it_finished(bank, selected, tmp_path, monkeypatch, caplog):
    """A scale trial: `hspr select --fast` on 300 x 3,000 would run about 12 h for its first stage, and a stop
    kept nothing. The finished (stage, held-out agent) units are checkpointed in the fit cache: stopped by
    Ctrl-C in its 11th unit (the 3rd of stage 2), a selection resumes with the 10 it finished, runs only the
    others, chooses and scores as an unstopped one, and leaves no entry behind."""
    import hspr.fitcache
    from hspr.fitcache import cache_entries

    monkeypatch.setenv("HSPR_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(hspr.fitcache, "CHECKPOINT_SECONDS", 1e9)  # nothing written until the stop saves it
    real, ran = sel._agent_stage, []

    def stops(values, i, *args):
        if len(ran) == 10:
            raise KeyboardInterrupt
        ran.append(i)
        return real(values, i, *args)

    monkeypatch.setattr(sel, "_agent_stage", stops)
    with caplog.at_level(logging.WARNING, "hspr.methods.hspr.selection"), pytest.raises(KeyboardInterrupt):
        sel.select_config(bank, base_config=TINY)
    assert "stopped; the 10 of 24 (stage, held-out agent) units it finished are kept in the fit cache" in caplog.text
    assert len(cache_entries(tmp_path)) == 1
    caplog.clear()
    ran.clear()

    def counts(values, i, *args):
        ran.append(i)
        return real(values, i, *args)

    monkeypatch.setattr(sel, "_agent_stage", counts)
    ticks = []
    with caplog.at_level(logging.WARNING, "hspr.methods.hspr.selection"):
        resumed = sel.select_config(bank, base_config=TINY, progress=lambda done, total: ticks.append((done, total)))
    assert "resumed with the 10 of 24 (stage, held-out agent) units a stopped run finished" in caplog.text
    assert ran == [2, 3, 4, 5, 6, 7] + list(range(8)) and ticks[-1] == (14, 14)  # 8 agents x 3 stages, less 10
    assert resumed.config == selected.config and resumed.chosen == selected.chosen
    for a, b in zip(resumed.stages, selected.stages, strict=True):
        np.testing.assert_array_equal([r["mae"] for r in a], [r["mae"] for r in b])
    assert cache_entries(tmp_path) == []


def test_selection_on_a_backend_that_cannot_stream_results_matches_local(bank, selected):
    """As replay's: joblib's multiprocessing backend (ray's base) refuses return_as='generator'; selection takes
    the results in one list there, with the same choice and stage errors."""
    remote = sel.select_config(bank, base_config=TINY, n_jobs=2, backend="multiprocessing")
    assert remote.config == selected.config and remote.chosen == selected.chosen
    for a, b in zip(remote.stages, selected.stages):
        np.testing.assert_array_equal([r["mae"] for r in a], [r["mae"] for r in b])


@pytest.mark.parametrize("extra, needle", [
    (["--bank", "lite"], "the label 'lite' is reserved"),
    (["--record", "{corrupt}"], "not a readable JSON file"),
    (["--record", "{listy}"], "expected a table"),
    (["--record", "{dup}"], "key 'b' appears twice in one object with different values"),  # one copy was lost
    (["--workers", "0"], "--workers"),
    (["--scheduler", "tcp://127.0.0.1:1"], "--scheduler needs --backend"),
    (["--fraction", "0"], "--budget"),  # the older name of --budget
    (["--budget", "1.5"], "--budget"),
    (["--budget", "1"], "every setting recovers each held-out score exactly"),  # ties: grid order would decide
    (["--budget", "1e-9"], "rounds to 0 tasks; give a fraction of at least 1/"),  # replay's hint (a hostile trial)
    (["--eval-nodes", "8"], "n_nodes must be >= 16"),
    (["--fast", "--eval-nodes", "64"], "give either --fast"),
    (["--out", "{csv}/x.json"], "--out"),
])
def test_cli_select_refuses_bad_options_before_work(tmp_path, extra, needle):
    from hspr.cli import main

    m = tiny_bank(n_agents=9, seed=3)
    path = write_wide_csv(m, tmp_path / "toy.csv")
    (tmp_path / "corrupt.json").write_text("{\n")
    (tmp_path / "listy.json").write_text('{"lite": [1, 2]}')
    (tmp_path / "dup.json").write_text('{"b": {"0": {"x": 1}}, "b": {"1": {"x": 2}}}')
    subs = {"{corrupt}": str(tmp_path / "corrupt.json"), "{listy}": str(tmp_path / "listy.json"), "{csv}": str(path),
            "{dup}": str(tmp_path / "dup.json")}
    extra = [subs.get(a, a) for a in extra]
    extra = [a.replace("{csv}", str(path)) for a in extra]
    out = [] if "--out" in extra else ["--out", str(tmp_path / "sel.json")]
    res = CliRunner().invoke(main, ["select", "--matrix", str(path), "--fold", "0", "--quiet", *out, *extra])
    assert res.exit_code == 2, res.output
    assert needle in res.output and "Traceback" not in res.output
    assert not (tmp_path / "sel.json").exists()


def test_cli_select_labels_a_matrix_by_its_file_name(tmp_path):
    from hspr.cli import main

    m = tiny_bank(n_agents=9, seed=3)
    path = write_wide_csv(m, tmp_path / "toy.csv")
    rec = tmp_path / "shipped.json"
    res = CliRunner().invoke(main, ["select", "--matrix", str(path), "--fold", "1", "--quiet", "--eval-nodes", "64",
                                    "--eval-draws", "512", "--out", str(tmp_path / "s.json"), "--record", str(rec)])
    assert res.exit_code == 0, res.output
    assert json.loads((tmp_path / "s.json").read_text())["bank"] == "toy"
    assert set(json.loads(rec.read_text())) == {"generated_by", "toy"}


@pytest.mark.parametrize("flag, n_missing", [("--missing-as-zero", 0), ("--no-missing-as-zero", 255)])
def test_cli_select_on_a_bundled_bank_keeps_missing_cells_when_asked(tmp_path, monkeypatch, flag, n_missing):
    """Pro fold 0's 10 sources have 255 blank cells in the raw bank (SOURCE.md)."""
    from hspr.cli import main

    seen = []

    def fake(src, **kw):
        seen.append(src)
        raise DataError("stop here")  # the loaded sources are all this test needs

    monkeypatch.setattr(sel, "select_config", fake)
    res = CliRunner().invoke(main, ["select", "--bank", "pro", "--fold", "0", "-q", flag,
                                    "--out", str(tmp_path / "o.json")])
    assert res.exit_code == 2 and "stop here" in res.output
    assert seen[0].n_agents == 10 and seen[0].n_missing == n_missing


@pytest.mark.parametrize("extra, expect", [([], (None, None)), (["--fast"], (2048, 32768)),
                                           (["--eval-nodes", "64"], (64, None))])
def test_cli_select_fast_is_the_shipped_evaluation_settings(tmp_path, monkeypatch, extra, expect):
    from hspr.cli import main
    from hspr.methods.hspr import selection as sel

    seen = []

    def fake(src, **kw):
        seen.append((kw["eval_nodes"], kw["eval_draws"]))
        raise DataError("stop here")

    monkeypatch.setattr(sel, "select_config", fake)
    path = write_wide_csv(tiny_bank(n_agents=9, seed=3), tmp_path / "toy.csv")
    res = CliRunner().invoke(main, ["select", "--matrix", str(path), "--fold", "0", "-q", *extra,
                                    "--out", str(tmp_path / "o.json")])
    assert res.exit_code == 2 and "stop here" in res.output
    assert seen == [expect]


def test_a_select_output_given_as_config_names_the_config_out_file(tmp_path):
    """`--config sel.json` listed every select field as an unknown setting (a new-user trial)."""
    from hspr.cli import main

    sel = {"bank": "lite", "fold": 0, "fraction": 0.1, "config": HSPRConfig(rank=4).to_dict(), "stages": [[], [], []],
           "chosen": [0, 0, 0], "source_digest": "x"}
    path = tmp_path / "sel.json"
    path.write_text(json.dumps(sel))
    with pytest.raises(ValueError, match=r"output of `hspr select` \(bank 'lite', fold 0\), not a config: give the "
                                         r"file its --config-out option writes"):
        HSPRConfig.from_json(path)
    res = CliRunner().invoke(main, ["replay", "--bank", "lite", "--methods", "hspr", "--config", str(path), "-q"])
    assert res.exit_code == 2 and "--config-out" in res.output and "Traceback" not in res.output
    assert HSPRConfig.from_dict(sel["config"]) == HSPRConfig(rank=4)  # its 'config' object is a config


@pytest.mark.parametrize("bank", ["lite", "multimodal", "terminal-bench"])
def test_cli_select_takes_every_bundled_bank_with_its_shipped_folds(tmp_path, monkeypatch, bank):
    """A new-user trial: `select --bank terminal-bench` (and multimodal) said 'unknown bank', listing
    the bank among the known ones, though replay and live take both."""
    from hspr.cli import main
    from hspr.data import bank_folds, load_bank
    from hspr.methods.hspr import selection as sel

    seen = []

    def fake(src, **kw):
        seen.append(src)
        raise DataError("stop here")

    monkeypatch.setattr(sel, "select_config", fake)
    res = CliRunner().invoke(main, ["select", "--bank", bank, "--fold", "1", "-q", "--out", str(tmp_path / "o.json")])
    assert res.exit_code == 2 and "stop here" in res.output, res.output
    folds = bank_folds(bank)
    assert set(seen[0].agents) == set(load_bank(bank).agents) - set(folds[1])


def test_select_notes_a_fold_with_few_sources(tmp_path):
    """A trial: `hspr select` on a 5-agent matrix chose on 3 sources without a word."""
    from hspr.cli import main

    m = simulate_matrix(5, 20, seed=1)[0]
    write_wide_csv(m, tmp_path / "m.csv")
    res = CliRunner().invoke(main, ["select", "--matrix", str(tmp_path / "m.csv"), "--fold", "0", "--eval-nodes", "256",
                                    "--eval-draws", "2048", "--out", str(tmp_path / "s.json"), "-q"])
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())
    assert "note: fold 0 leaves 3 source agents, and each held-out fit keeps 2" in text


def test_select_refuses_to_record_a_second_selection_of_the_same_sources(tmp_path):
    """A re-trial: two labels' selections of one fold went into one table, which replay then refused."""
    from hspr.cli import main

    m = simulate_matrix(8, 20, seed=2)[0]
    write_wide_csv(m, tmp_path / "m.csv")
    base = ["select", "--matrix", str(tmp_path / "m.csv"), "--fold", "0", "--eval-nodes", "256", "--eval-draws",
            "2048", "-q", "--record", str(tmp_path / "t.json")]
    res = CliRunner().invoke(main, [*base, "--out", str(tmp_path / "a.json")])
    assert res.exit_code == 0, res.output
    res = CliRunner().invoke(main, [*base, "--bank", "other", "--out", str(tmp_path / "b.json")])
    text = " ".join(res.output.split())
    assert res.exit_code == 2 and "holds m/0, a selection on the same sources" in text, res.output
    assert not (tmp_path / "b.json").exists()
    res = CliRunner().invoke(main, [*base, "--out", str(tmp_path / "c.json")])  # the same label and fold replaces it
    assert res.exit_code == 0, res.output
    table = json.loads((tmp_path / "t.json").read_text())  # a hostile trial: a damaged entry was kept, unremarked
    table["m"]["1"] = dict(table["m"]["0"], config={"rank": "x"}, source_digest="y")
    (tmp_path / "t.json").write_text(json.dumps(table))
    res = CliRunner().invoke(main, [*base, "--out", str(tmp_path / "d.json")])
    text = " ".join(res.output.split())
    assert res.exit_code == 2 and "t.json: entry m/1: rank must be" in text and "fix or drop that entry" in text, res.output
    assert not (tmp_path / "d.json").exists()


def test_select_config_refuses_a_budget_of_no_task_as_a_budget_error():
    from hspr.session import BudgetError

    m = ResponseMatrix(("a", "b", "c"), tuple(f"t{i}" for i in range(8)), np.array([[1, 0] * 4, [1, 1] * 4, [0, 0] * 4]))
    with pytest.raises(BudgetError, match="budget fraction 0.01 gives no task out of 8"):
        sel.select_config(m, fraction=0.01)
    with pytest.raises(BudgetError, match=r"must be in \(0, 1\]"):
        sel.select_config(m, fraction=1.5)
    with pytest.raises(DataError, match="needs at least 3"):
        sel.select_config(m.rows([0, 1]), fraction=0.5)


def test_cli_select_keeps_its_result_when_an_output_fails_and_says_what_it_replaced(tmp_path, monkeypatch):
    """A hostile trial: a --config-out (or --record) that could not be written at the end threw the whole
    selection away; earlier outputs were replaced without a word; an empty --bank ran Verified's selection and
    an empty --record was called an input folder."""
    import errno
    import re
    from pathlib import Path

    from hspr.cli import main
    from hspr.cli import select as select_cli

    m = tiny_bank(n_agents=9, seed=3)
    path = write_wide_csv(m, tmp_path / "toy.csv")
    args = ["select", "--matrix", str(path), "--fold", "0", "-q", "--eval-nodes", "64", "--eval-draws", "512",
            "--out", str(tmp_path / "s.json")]
    for extra, needle in ((["--bank", " "], "--bank: an empty label"), (["--record", ""], "--record: an empty path")):
        res = CliRunner().invoke(main, args + extra)
        assert res.exit_code == 2 and needle in " ".join(res.output.split()).replace("'", ""), res.output
    three = write_wide_csv(m.rows(np.arange(3)), tmp_path / "three.csv")  # too few for folds: --fold all is named
    res = CliRunner().invoke(main, ["select", "--matrix", str(three), "--fold", "0", "--out", str(tmp_path / "x.json")])
    assert res.exit_code == 2 and "or select on every agent with --fold all" in " ".join(res.output.split())
    # ... but not where it cannot run: 2 agents, or with --record (a re-trial)
    two = write_wide_csv(m.rows(np.arange(2)), tmp_path / "two.csv")
    for extra in ([str(two)], [str(three), "--record", str(tmp_path / "t3.json")]):
        res = CliRunner().invoke(main, ["select", "--matrix", *extra, "--fold", "0", "--out", str(tmp_path / "x.json")])
        assert res.exit_code == 2 and "too few" in res.output and "--fold all" not in res.output, res.output
    real = select_cli.write_json_atomic

    def failing(obj, p):
        if Path(p).name == "c.json":
            raise OSError(errno.ENOSPC, "No space left on device", str(p))
        return real(obj, p)

    monkeypatch.setattr(select_cli, "write_json_atomic", failing)
    res = CliRunner().invoke(main, args + ["--config-out", str(tmp_path / "c.json")])
    said = " ".join(res.output.split())
    assert res.exit_code == 2 and f"cannot write {tmp_path / 'c.json'}: No space left on device; " \
        f"{tmp_path / 's.json'} was written; the selection was saved to " in said, said
    spare = Path(re.search(r"saved to (\S+\.json)", said).group(1))
    kept = json.loads(spare.read_text())
    spare.unlink()
    assert kept["config"] == json.loads((tmp_path / "s.json").read_text())["config"] and kept["fold"] == 0
    monkeypatch.setattr(select_cli, "write_json_atomic", real)
    res = CliRunner().invoke(main, args + ["--record", str(tmp_path / "t.json")])
    assert res.exit_code == 0 and "note: this replaced the earlier" in " ".join(res.output.split())
    res = CliRunner().invoke(main, args + ["--record", str(tmp_path / "t.json"), "--config-out", str(tmp_path / "c.json")])
    said = " ".join(res.output.split())
    assert res.exit_code == 0 and f"note: this replaced the earlier {tmp_path / 's.json'} (toy fold 0); the earlier " \
        f"toy fold 0 entry of {tmp_path / 't.json'} (budget " in said, said
    assert "the earlier c.json" not in said  # it did not exist
    # a re-trial: a failed --record did not say that --out and --config-out had replaced earlier files; and a
    # --record table damaged while the selection ran gave a traceback
    monkeypatch.setattr(select_cli, "record_entry", lambda *a, **k: json.loads("garbage{"))
    res = CliRunner().invoke(main, args + ["--record", str(tmp_path / "t.json"), "--config-out", str(tmp_path / "c.json")])
    said = " ".join(res.output.split())
    assert res.exit_code == 2 and f"cannot write {tmp_path / 't.json'}: it is no longer a table of selections (" in said
    assert f"{tmp_path / 's.json'} and {tmp_path / 'c.json'} were written (replacing the earlier {tmp_path / 's.json'} " \
        f"(toy fold 0); the earlier {tmp_path / 'c.json'}); the selection was saved to " in said, said
    assert "Traceback" not in res.output
    Path(re.search(r"saved to (\S+\.json)", said).group(1)).unlink()
    # a hostile trial: a conflicting entry recorded by another run meanwhile is named, and the selection kept

    def conflict(*a, **k):
        raise select_cli.RecordConflict("another selection recorded in it while this one ran conflicts with it: x")

    monkeypatch.setattr(select_cli, "record_entry", conflict)
    res = CliRunner().invoke(main, args + ["--record", str(tmp_path / "t.json")])
    said = " ".join(res.output.split())
    assert res.exit_code == 2 and (f"cannot write {tmp_path / 't.json'}: another selection recorded in it while this one "
                                   "ran conflicts with it: x") in said and "Record it with another --bank label" in said
    Path(re.search(r"saved to (\S+\.json)", said).group(1)).unlink()


def test_hspr_robust_select_runs_the_staged_selection_on_sources_with_no_shipped_entry(bank):
    """ShiftSettings.select (docs/shift.md, direction 24): hspr_robust uses the staged selection's choice,
    as `hspr select --fast` makes it, where no shipped entry matches; off, the ranks rule."""
    import dataclasses

    from hspr.methods.hspr.robust import HSPRRobust, ShiftSettings

    src = bank.rows(np.arange(7))
    shift = ShiftSettings(max_held_out=7, n_nodes=64, n_draws=512, min_held_out=4, blend_weights=(0.0,), select=True)
    chosen = sel.select_config(src, shift.fraction, eval_nodes=sel.FAST_EVAL_NODES, eval_draws=sel.FAST_EVAL_DRAWS).config
    assert chosen.replace(rank=HSPRConfig().rank) != HSPRConfig()  # not a rank of the default: the rules differ here
    selected = HSPRRobust(shift=shift).fit(src)
    assert selected.config == chosen
    # replay records the settings the fit chose (an audit: only hspr_auto's were), as --config takes them
    assert selected.fitted_settings and HSPRConfig.from_dict(selected.fitted_settings) == chosen
    ranks_model = HSPRRobust(shift=dataclasses.replace(shift, select=False)).fit(src)
    ranks = ranks_model.config
    assert ranks.replace(rank=HSPRConfig().rank) == HSPRConfig()
    assert ranks_model.fitted_settings == ({} if ranks == HSPRConfig() else {"rank": ranks.rank})
    given = HSPRRobust(shift=dataclasses.replace(shift, select=False), config=chosen).fit(src)
    assert given.config == chosen and given.fitted_settings is None  # the user's settings: nothing chosen
    with pytest.raises(ValueError, match="select must be true or false"):
        ShiftSettings(select="yes")


def test_cli_select_budget_range_is_stated_once(tmp_path):
    """A hostile trial: --budget 0 was told '(0, 1]', and --budget 1 then 'below 1'."""
    from hspr.cli import main

    path = write_wide_csv(tiny_bank(n_agents=9, seed=3), tmp_path / "toy.csv")
    for value in ("0", "-0.1", "1.5"):
        res = CliRunner().invoke(main, ["select", "--matrix", str(path), "--fold", "0", "--budget", value, "--out",
                                        str(tmp_path / "s.json")])
        assert res.exit_code == 2 and "a fraction of the tasks, above 0 and below 1 (e.g. 0.10)" in " ".join(res.output.split())
    res = CliRunner().invoke(main, ["select", "--matrix", str(path), "--fold", "0", "--budget", "1", "--out",
                                    str(tmp_path / "s.json")])
    assert res.exit_code == 2 and "every setting recovers each held-out score exactly" in " ".join(res.output.split())


def test_select_refuses_too_few_sources_before_its_note_on_a_noisy_choice(tmp_path):
    """A trial: `hspr select` on 2 agents first said the choice would be noisy, then refused."""
    from hspr.cli import main

    rng = np.random.default_rng(0)
    m = ResponseMatrix(["a", "b"], [f"t{j}" for j in range(40)], rng.integers(0, 2, (2, 40)))
    write_wide_csv(m, tmp_path / "two.csv")
    res = CliRunner().invoke(main, ["select", "--matrix", str(tmp_path / "two.csv"), "--fold", "all", "--out",
                                    str(tmp_path / "x.json")])
    assert res.exit_code == 2 and "noisy" not in res.output
    assert "two.csv: the bank has 2 source agent(s); a selection holds out one source agent at a time and needs at " \
           "least 3" in " ".join(res.output.split())
    assert not (tmp_path / "x.json").exists()


def test_the_shipped_table_path_is_the_table_replay_config_auto_reads():
    """``select --record`` compares its target with this path to write the regeneration recipe; it must be the
    file :func:`shipped_configs` reads (the CLI once built the path itself)."""
    import json

    from hspr.methods.hspr.selection import shipped_configs, shipped_table_path

    path = shipped_table_path()
    assert path.is_absolute() and path.name == "selected_configs.json"
    assert json.loads(path.read_text(encoding="utf-8")) == shipped_configs()
    assert set(shipped_configs()) >= {"lite", "verified", "full", "pro", "generated_by"}


def test_eval_overrides_names_the_given_fields_and_refuses_what_hsprconfig_refuses():
    from hspr.methods.hspr.selection import eval_overrides

    assert eval_overrides(None, None) == {}
    assert eval_overrides(2048, None) == {"n_nodes": 2048}
    assert eval_overrides(None, 32768.0) == {"n_draws": 32768}
    with pytest.raises(ValueError, match="n_nodes"):
        eval_overrides(0, None)
