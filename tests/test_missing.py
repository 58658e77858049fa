"""HSPR fitted on a source matrix with missing cells (no run): the likelihood skips them."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from scipy import special

from hspr.cli import main
from hspr.data import ResponseMatrix
from hspr.data.matrix import DataError
from hspr.methods import get_method
from hspr.methods.hspr import HSPR, HSPRConfig
from hspr.methods.hspr.source_fit import fit_items, fit_source, fit_zib_prior, initial_intercepts
from hspr.replay import replay

from .conftest import simulate_matrix

FAST = HSPRConfig(n_nodes=256, n_draws=2048)


def with_missing(m: ResponseMatrix, share: float, seed: int = 0) -> ResponseMatrix:
    rng = np.random.default_rng(seed)
    miss = rng.random(m.shape) < share
    return ResponseMatrix(m.agents, m.tasks, np.where(miss, 0, m.values), miss)


def test_complete_mask_is_the_spec_fit_exactly():
    M = simulate_matrix(20, 60, seed=1)[0].values
    a, b = fit_source(M), fit_source(M, missing=np.zeros(M.shape, bool))
    for f in ("theta", "b", "a", "v", "labels", "pass_rate"):
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f))
    assert a.prior == b.prior


def test_prior_with_per_task_runs_equals_the_histogram_form():
    M = simulate_matrix(15, 80, seed=2)[0].values
    h = M.sum(0)
    p1, p2 = fit_zib_prior(h, 15), fit_zib_prior(h, np.full(80, 15))
    assert (p1.pi, p1.alpha, p1.beta) == pytest.approx((p2.pi, p2.alpha, p2.beta), rel=1e-5, abs=1e-7)


def test_item_fit_skips_missing_cells_column_by_column():
    """The per-item Newton fit with a mask equals the fit on that item's observed rows only."""
    m = with_missing(simulate_matrix(25, 30, seed=3)[0], 0.3, seed=4)
    obs = ~m.missing
    theta = np.linspace(-1.5, 1.5, 25)
    b0 = np.zeros(30)
    b, a = fit_items(m.values, theta, b0, obs=obs)
    for j in range(30):
        r = obs[:, j]
        bj, aj = fit_items(m.values[r, j:j + 1], theta[r], b0[j:j + 1])
        assert (b[j], a[j]) == pytest.approx((bj[0], aj[0]), abs=1e-12)


def test_values_under_missing_cells_do_not_matter():
    m = with_missing(simulate_matrix(20, 50, seed=5)[0], 0.2, seed=6)
    flipped = np.where(m.missing, 1 - m.values, m.values)
    f1, f2 = fit_source(m.values, missing=m.missing), fit_source(flipped, missing=m.missing)
    for f in ("theta", "b", "a", "v", "labels", "pass_rate"):
        np.testing.assert_allclose(getattr(f1, f), getattr(f2, f), atol=1e-12)


def test_task_no_source_ran_keeps_the_prior_and_its_own_group():
    m = simulate_matrix(20, 40, seed=7)[0]
    miss = np.zeros(m.shape, bool)
    miss[:, 5] = True
    fit = fit_source(np.where(miss, 0, m.values), missing=miss)
    pr = fit.prior
    assert fit.b[5] == pytest.approx(special.logit((1 - pr.pi) * pr.alpha / (pr.alpha + pr.beta)))
    assert fit.a[5] == pytest.approx(1.0)
    assert np.allclose(fit.v[5], 0.0)
    assert (fit.labels == fit.labels[5]).sum() == 1
    h, runs = m.values.sum(0), np.full(40, 20)
    runs[5], h[5] = 0, 0
    assert initial_intercepts(h, runs, pr)[5] == pytest.approx(fit.b[5])


def test_replay_keeps_missing_source_cells_and_scores_targets_with_them_unresolved():
    full = simulate_matrix(24, 60, seed=8)[0]
    m = with_missing(full, 0.1, seed=9)
    folds = [list(m.agents[i::4]) for i in range(4)]
    runs = pd.DataFrame(replay("sim", m, {"hspr": HSPR(FAST), "uniform": get_method("uniform")}, fractions=(0.2,),
                               seeds={"hspr": (0,), "uniform": (0,)}, folds=folds))
    truth = dict(zip(m.agents, m.fill_missing(0).scores()))
    assert runs["truth"].to_numpy() == pytest.approx(runs["target"].map(truth).to_numpy())
    assert set(runs["method"]) == {"hspr", "uniform"} and len(runs) == 48
    with pytest.raises(DataError, match=r"missing cell\(s\) among the"):
        replay("sim", m, {"rsl": get_method("rsl")}, folds=folds, seeds={"rsl": (0,)})


def test_hspr_with_missing_cells_recovers_scores_on_a_simulated_bank():
    """20 % of source cells missing at random: HSPR with the mask stays close to the complete fit,
    and counting those cells as failures (zero-filling) biases the item fit and the estimates."""
    full = simulate_matrix(60, 120, seed=10)[0]
    src_full, tgt = full.drop_rows(range(15)), full.rows(range(15))
    src = with_missing(src_full, 0.2, seed=11)
    fits = {"complete": HSPR(FAST).fit(src_full), "masked": HSPR(FAST).fit(src),
            "zero-filled": HSPR(FAST).fit(src.fill_missing(0))}
    err = {}
    for name, model in fits.items():
        e = []
        for r in range(tgt.n_agents):
            s = model.start(24, 0)
            while not s.done:
                t = s.ask()
                s.tell(t, int(tgt.values[r, tgt.task_index(t)]))
            e.append(s.estimate().point - tgt.values[r].mean())
        err[name] = np.asarray(e)
    mae = {k: np.abs(v).mean() for k, v in err.items()}
    assert mae["masked"] < mae["zero-filled"]
    assert mae["masked"] < mae["complete"] + 0.02


def test_cli_replay_notes_target_cells_without_a_run(tmp_path):
    """A trial: a --targets row's blank cells lowered its true score (0.38 against 0.405) without a word."""
    from hspr.data.build import write_wide_csv

    m = simulate_matrix(14, 30, seed=2)[0]
    write_wide_csv(m.rows(np.arange(10)), tmp_path / "src.csv")
    tgt = m.rows(np.arange(10, 14))
    vals = np.asarray(tgt.values, dtype=float)
    vals[0, :3] = np.nan
    pd.DataFrame(vals, index=pd.Index(tgt.agents, name="agent"), columns=tgt.tasks).to_csv(tmp_path / "tgt.csv")
    res = CliRunner().invoke(main, ["replay", "--matrix", str(tmp_path / "src.csv"), "--targets", str(tmp_path / "tgt.csv"),
                                    "--methods", "uniform", "--seeds", "0", "-q", "--out", str(tmp_path / "r.json")])
    assert res.exit_code == 0, res.output
    assert "3 cell(s) of its rows have no run; they count as unresolved" in " ".join(res.output.split())
    # a trial: with one target row, its blank cell was also warned about as a task "no agent ran" that "lowers every
    # score" (the bank's wording); the note above says what it does
    pd.DataFrame(vals[:1], index=pd.Index(tgt.agents[:1], name="agent"), columns=tgt.tasks).to_csv(tmp_path / "one.csv")
    res = CliRunner().invoke(main, ["replay", "--matrix", str(tmp_path / "src.csv"), "--targets", str(tmp_path / "one.csv"),
                                    "--methods", "uniform", "--seeds", "0", "-q", "--out", str(tmp_path / "r.json")])
    assert res.exit_code == 0 and "3 cell(s) of its rows have no run" in " ".join(res.output.split()), res.output
    assert "no agent ran" not in res.output
    assert "have no run; they count as unresolved, in the fit" not in res.output  # the bank has none
    # a scale trial: 30 % of a --matrix bank's cells counted as failures without a word (only --targets' were named)
    src = np.asarray(m.rows(np.arange(10)).values, dtype=float)
    src[:2, :6] = np.nan
    pd.DataFrame(src, index=pd.Index(m.agents[:10], name="agent"), columns=m.tasks).to_csv(tmp_path / "holes.csv")
    res = CliRunner().invoke(main, ["replay", "--matrix", str(tmp_path / "holes.csv"), "--targets", str(tmp_path / "one.csv"),
                                    "--methods", "uniform", "--seeds", "0", "-q", "--out", str(tmp_path / "r.json")])
    said = " ".join(res.output.split())
    assert res.exit_code == 0 and f"note: {tmp_path / 'holes.csv'}: 12 cell(s) (4 %) have no run; they count as " \
        "unresolved, in the fit and in the targets' true scores (the leaderboard convention); --no-missing-as-zero keeps " \
        "them out of the fit, for the methods that take missing cells (hspr, " in said, res.output


def test_accepts_missing_says_which_methods_fit_with_missing_cells_and_replay_refuses_the_others_first(tmp_path):
    """A new-user trial: `replay --no-missing-as-zero --methods hspr,rsl` failed at rsl's first fit (the hspr runs
    lost), naming a count of missing cells that was the fold's, not the file's."""
    import warnings

    import pandas as pd

    from hspr.data.io import load_matrix
    from hspr.data.matrix import DataError
    from hspr.errors import InputWarning
    from hspr.methods import REGISTRY, get_method, method_class

    rng = np.random.default_rng(1)
    y = (rng.random((12, 30)) < 0.5).astype(float)
    y[rng.random(y.shape) < 0.1] = np.nan
    csv = tmp_path / "miss.csv"
    pd.DataFrame(y, index=[f"a{i:02d}" for i in range(12)], columns=[f"t{j}" for j in range(30)]).rename_axis(
        "agent").to_csv(csv)
    m = load_matrix(csv)
    for name in REGISTRY:  # the flag is what fit does
        if name == "hspr_auto":
            continue  # hspr under --config auto: its selection is slow, and its fit is hspr's
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", InputWarning)
                get_method(name).fit(m)
            fitted = True
        except DataError as exc:
            assert f"{m.n_missing} missing cell(s) among the 12 agents it was given" in str(exc)
            fitted = False
        assert method_class(name).accepts_missing == fitted, name
    res = CliRunner().invoke(main, ["replay", "--matrix", str(csv), "--methods", "hspr,rsl,faq", "--no-missing-as-zero",
                                    "--seeds", "0", "-q", "--out", str(tmp_path / "o.json")])
    said = " ".join(res.output.split())
    assert res.exit_code == 2 and f"keeps its {m.n_missing} missing cell(s) (--no-missing-as-zero), and rsl, faq need(s) " \
        "a complete matrix" in said and not (tmp_path / "o.json").exists()


def test_bank_validate_prints_the_digest_a_no_missing_as_zero_session_records(tmp_path):
    """A hostile trial: a --no-missing-as-zero session's bank_digest was printed by no command, so the
    documented check (validate's digest against status --json's) could not be made."""
    p = tmp_path / "m.csv"
    p.write_text("agent,t1,t2,t3\na,1,,0\nb,0,1,1\nc,1,1,\n")
    doc = json.loads(CliRunner().invoke(main, ["bank", "validate", str(p), "--json"]).stdout)
    assert doc["digest"] != doc["digest_missing_kept"]
    for flag, key in (("--missing-as-zero", "digest"), ("--no-missing-as-zero", "digest_missing_kept")):
        s = tmp_path / f"{key}.hspr"
        res = CliRunner().invoke(main, ["live", "start", "--matrix", str(p), flag, "--budget", "2", "--method", "uniform",
                                        "--session", str(s)])
        assert res.exit_code == 0, res.output
        st = json.loads(CliRunner().invoke(main, ["live", "status", "--session", str(s), "--json"]).stdout)
        assert st["bank_digest"] == doc[key]
    text = CliRunner().invoke(main, ["bank", "validate", str(p)]).stdout
    assert f"a session started with --no-missing-as-zero records {doc['digest_missing_kept']}" in text
    full = tmp_path / "full.csv"
    full.write_text("agent,t1,t2\na,1,0\nb,0,1\n")
    doc = json.loads(CliRunner().invoke(main, ["bank", "validate", str(full), "--json"]).stdout)
    assert doc["digest"] == doc["digest_missing_kept"]


def test_a_missing_mask_of_text_or_fractions_is_refused_not_cast():
    """An audit: a mask of 'False' strings or of 0.2 was cast to True, so cells became missing and the
    true scores changed without a word; booleans and 0/1 (also as objects, a pandas column) are taken."""
    vals = [[1, 0], [0, 1]]
    for bad, shown in (([["False", "False"], ["0", "0"]], "'False' (at (0, 0))"), ([[0, 0.2], [0, 0]], "0.2 (at (0, 1))"),
                       ([[0, 0], [None, 0]], "None (at (1, 0))")):
        with pytest.raises(DataError, match=re.escape(f"the missing mask holds {shown}; give True / False")):
            ResponseMatrix(["a", "b"], ["t1", "t2"], vals, bad)
    for good in ([[0, 1], [0, 0]], np.array([[False, True], [False, False]]),
                 np.array([[False, True], [False, False]], dtype=object), [[0.0, 1.0], [0.0, 0.0]]):
        m = ResponseMatrix(["a", "b"], ["t1", "t2"], vals, good)
        assert m.n_missing == 1 and m.missing[0, 1] and m.scores().tolist() == [0.5, 0.5]  # missing = unresolved
