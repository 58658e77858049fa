"""Report: Holm, paired statistics, comparison table marking, macro MAE, figures, CLI."""

from __future__ import annotations

import json
import re
import warnings

import click
import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from scipy import stats

from hspr import report
from hspr.cli.report import register
from hspr.report import MACRO, POOLED, ReportError, ReportWarning

from .conftest import unread_fifo


def make_runs(errors: dict, truths: dict, fractions=(0.10,), intervals: dict | None = None) -> pd.DataFrame:
    """Runs with known errors.

    errors: {(bank, method): array (n_seeds, n_targets) of estimate - truth, 0-1 scale}
    truths: {bank: array (n_targets,)}
    intervals: {(bank, method): half-width} -> lower/upper = estimate -/+ half-width
    """
    rows = []
    for frac in fractions:
        for (bank, method), err in errors.items():
            err = np.atleast_2d(err)
            t = truths[bank]
            for s in range(err.shape[0]):
                for j in range(err.shape[1]):
                    est = t[j] + err[s, j] * (1 + frac)  # larger budgets -> different errors
                    hw = (intervals or {}).get((bank, method))
                    rows.append({"bank": bank, "method": method, "fold": j % 4, "target": f"{bank}_a{j:02d}",
                                 "seed": s, "budget": int(round(frac * 300)), "budget_fraction": frac,
                                 "estimate": est, "mean": None, "median": None,
                                 "lower": None if hw is None else est - hw, "upper": None if hw is None else est + hw,
                                 "queried": [], "truth": float(t[j])})
    return pd.DataFrame(rows)


@pytest.fixture()
def synth():
    rng = np.random.default_rng(3)
    truths = {"lite": np.linspace(0.3, 0.8, 12), "pro": np.linspace(0.05, 0.4, 5)}  # every estimate in [0, 1]
    errors = {
        ("lite", "hspr"): rng.normal(0, 0.01, (2, 12)),
        ("lite", "uniform"): rng.normal(0, 0.05, (3, 12)),
        ("lite", "atlas"): rng.normal(0, 0.02, (1, 12)),
        ("pro", "hspr"): rng.normal(0, 0.02, (2, 5)),
        ("pro", "uniform"): rng.normal(0, 0.04, (3, 5)),
    }
    return truths, errors


# ---------------------------------------------------------------------------------- Holm


def test_holm_hand_example():
    np.testing.assert_allclose(report.holm([0.01, 0.04, 0.03, 0.005]), [0.03, 0.06, 0.06, 0.02])


def test_holm_nan_and_bounds():
    adj = report.holm([0.5, np.nan, 0.01])  # family of 2
    np.testing.assert_allclose(adj[[0, 2]], [0.5, 0.02])
    assert np.isnan(adj[1])
    assert report.holm([0.9, 0.8]).max() <= 1.0
    assert report.holm([]).size == 0
    with pytest.raises(ValueError):
        report.holm([1.2])


# ---------------------------------------------------------------------------------- paired


def test_paired_mean_difference_equals_hand_computation(synth):
    truths, errors = synth
    runs = make_runs(errors, truths)
    paired = report.paired_analysis(runs, "hspr", n_resamples=500, seed=1)
    row = paired[(paired["method"] == "uniform") & (paired["bank"] == "lite")].iloc[0]
    f = 1.1  # the 0.10 budget scales the errors by (1 + 0.10)
    d = 100 * (np.abs(errors[("lite", "uniform")] * f).mean(0) - np.abs(errors[("lite", "hspr")] * f).mean(0))
    assert row["n_targets"] == 12
    assert row["mean_diff_pp"] == pytest.approx(d.mean())
    assert row["median_diff_pp"] == pytest.approx(np.median(d))
    assert row["n_baseline_better"] == (d > 0).sum()
    assert row["p_value"] == pytest.approx(stats.wilcoxon(d, zero_method="wilcox").pvalue)
    # pooled = every target of both banks together
    d_pro = 100 * (np.abs(errors[("pro", "uniform")] * f).mean(0) - np.abs(errors[("pro", "hspr")] * f).mean(0))
    pooled = paired[(paired["method"] == "uniform") & (paired["bank"] == POOLED)].iloc[0]
    assert pooled["mean_diff_pp"] == pytest.approx(np.concatenate([d, d_pro]).mean())
    # atlas only on lite: no pooled row; Holm over every row
    assert set(paired.loc[paired["method"] == "atlas", "bank"]) == {"lite"}
    np.testing.assert_allclose(paired["p_holm"], report.holm(paired["p_value"]))
    assert "hspr" not in set(paired["method"])


def test_bootstrap_interval_contains_mean_and_shrinks():
    rng = np.random.default_rng(0)
    small = report.paired_stats(rng.normal(1.0, 2.0, 20), n_resamples=2000, seed=0)
    large = report.paired_stats(rng.normal(1.0, 2.0, 2000), n_resamples=2000, seed=0)
    for r in (small, large):
        assert r["ci_low_pp"] < r["mean_diff_pp"] < r["ci_high_pp"]
    assert (large["ci_high_pp"] - large["ci_low_pp"]) < 0.5 * (small["ci_high_pp"] - small["ci_low_pp"])
    again = report.paired_stats(rng.normal(1.0, 2.0, 20), n_resamples=2000, seed=0)
    assert again["ci_low_pp"] != small["ci_low_pp"]  # different data
    same = report.paired_stats(np.arange(20.0), n_resamples=2000, seed=5)
    assert same == report.paired_stats(np.arange(20.0), n_resamples=2000, seed=5)  # seeded


def test_paired_degenerate_differences():
    zero = report.paired_stats(np.zeros(6), n_resamples=200)
    assert zero["p_value"] == 1.0 and zero["ci_low_pp"] == zero["ci_high_pp"] == 0.0
    one = report.paired_stats([2.5], n_resamples=200)
    assert one["mean_diff_pp"] == 2.5 and np.isnan(one["ci_low_pp"])


def test_paired_unknown_baseline(synth):
    truths, errors = synth
    with pytest.raises(ReportError, match="baseline 'tinybench'.*hspr, uniform, atlas"):
        report.paired_analysis(make_runs(errors, truths), "tinybench")


# ---------------------------------------------------------------------------------- comparison


def test_best_second_marking_and_macro():
    truths = {"lite": np.linspace(0.1, 0.6, 8), "pro": np.linspace(0.1, 0.4, 4)}
    const = lambda v, n: np.full((1, n), v)  # noqa: E731  constant error -> MAE = MaxErr = |v|
    errors = {("lite", "a"): const(0.03, 8), ("lite", "b"): const(0.01, 8), ("lite", "c"): const(0.02, 8),
              ("pro", "a"): const(0.01, 4), ("pro", "b"): const(0.05, 4), ("pro", "c"): const(0.01, 4),
              ("lite", "d"): const(0.001, 8)}  # d only on lite: best there, no macro row
    t = report.comparison_table(make_runs(errors, truths))
    lite = t[t["bank"] == "lite"].set_index("method")
    assert lite["mae_pp"].to_dict() == pytest.approx({"a": 3.3, "b": 1.1, "c": 2.2, "d": 0.11})
    assert lite["mae_rank"].to_dict() == {"a": 4, "b": 2, "c": 3, "d": 1}
    pro = t[t["bank"] == "pro"].set_index("method")
    assert pro["mae_rank"].to_dict() == {"a": 1, "c": 1, "b": 2}  # ties share the best rank
    macro = t[t["bank"] == MACRO].set_index("method")
    assert set(macro.index) == {"a", "b", "c"}
    # equal weight over banks (lite 8 targets, pro 4), not the pooled mean over 12 targets
    assert macro.loc["a", "mae_pp"] == pytest.approx((3.3 + 1.1) / 2)
    assert macro.loc["a", "mae_pp"] != pytest.approx((8 * 3.3 + 4 * 1.1) / 12)
    assert macro["mae_rank"].to_dict() == {"c": 1, "a": 2, "b": 3}  # c 1.65, a 2.2, b 3.3
    md = report.comparison_markdown(t)
    assert "| lite | d | **0.110** |" in md and "| lite | b | *1.100* |" in md and "| lite | a | 3.300 |" in md
    assert "| pro | a | **1.100** |" in md and "| pro | c | **1.100** |" in md
    assert "| pro | b | 5.500 |" in md  # second rank but last: not marked
    assert "| d | **0.110** | – | – |" in md and "| c | 2.200 | **1.100** | **1.650** |" in md
    assert "– in the macro column" in md
    # one bank: no macro table (it would repeat the bank's MAE)
    lite_only = make_runs({k: v for k, v in errors.items() if k[0] == "lite"}, {"lite": truths["lite"]})
    one = report.comparison_markdown(report.comparison_table(lite_only))
    assert "| lite | d | **0.110** |" in one and "Macro MAE" not in one


def test_macro_values_and_tau_higher_is_better():
    truths = {"lite": np.linspace(0.1, 0.6, 8), "pro": np.linspace(0.1, 0.4, 4)}
    rev = lambda t: (t[::-1] - t)[None, :]  # noqa: E731  estimate = reversed truth -> tau = -1
    errors = {("lite", "good"): np.full((1, 8), 0.01), ("lite", "bad"): rev(truths["lite"]) / 1.1,
              ("pro", "good"): np.full((1, 4), 0.02), ("pro", "bad"): np.full((1, 4), 0.03)}
    t = report.comparison_table(make_runs(errors, truths))
    lite = t[t["bank"] == "lite"].set_index("method")
    assert lite.loc["good", "kendall_tau_b"] == pytest.approx(1.0)
    assert lite.loc["bad", "kendall_tau_b"] == pytest.approx(-1.0)
    assert lite["tau_rank"].to_dict() == {"good": 1, "bad": 2}
    per = t[t["bank"] != MACRO]
    macro = t[t["bank"] == MACRO].set_index("method")["mae_pp"]
    expect = per.groupby("method")["mae_pp"].mean()
    assert macro.to_dict() == pytest.approx(expect.to_dict())
    md = report.comparison_markdown(t)  # two methods: best in bold, the other (last) not in italic
    assert "| lite | good | **1.100** | **1.100** | **1.000** |" in md
    assert "| lite | bad | 28.571 | 50.000 | -1.000 |" in md
    assert "| pro | good | **2.200** | **2.200** | 1.000 |" in md  # tied tau: nothing marked


def test_coverage_interval_is_wilson_over_targets_not_runs():
    """A statistics review: coverage had no interval. 22 of 28 targets covered on each of 2 seeds: scipy's own
    Wilson interval of 22 / 28 (n = targets, not the 56 runs), in comparison.csv and in the markdown cell."""
    from scipy import stats

    truths = {"lite": np.linspace(0.2, 0.8, 28)}
    runs = make_runs({("lite", "m"): np.zeros((2, 28))}, truths, intervals={("lite", "m"): 0.01})
    miss = runs["target"].isin([f"lite_a{j:02d}" for j in range(6)])  # 6 targets missed on both seeds
    runs.loc[miss, ["lower", "upper"]] = runs.loc[miss, ["estimate"]].to_numpy() + [[0.02, 0.03]]
    want = stats.binomtest(22, 28).proportion_ci(0.95, method="wilson")
    row = report.comparison_table(runs).iloc[0]
    assert row["coverage_90"] == pytest.approx(22 / 28)
    assert (row["coverage_ci_low"], row["coverage_ci_high"]) == pytest.approx((want.low, want.high), abs=1e-6)
    assert f"| {22 / 28:.2f} ({want.low:.2f}–{want.high:.2f}) |" in report.comparison_markdown(report.comparison_table(runs))
    assert report.summarize(runs)[["coverage_ci_low", "coverage_ci_high"]].iloc[0].tolist() == pytest.approx(
        [want.low, want.high], abs=1e-6)


def test_paired_interval_resamples_query_seeds_shared_by_the_targets():
    """A statistics review: a query seed that draws the same tasks for every target moves all their errors
    together, and a bootstrap over targets alone left that out. Simulated ground truth: errors 3 + seed effect
    (sd 2, shared by the 60 targets) + target effect (sd 1) + noise, 5 seeds, against a baseline of error 0: the
    two-way interval holds the true mean difference 3 in most of 60 draws, the targets' bootstrap in few."""
    from hspr.report.stats import _bootstrap_ci, two_way_ci

    rng = np.random.default_rng(1)
    two = one = 0
    for _ in range(60):
        a = 3 + rng.normal(0, 2, 5)[None, :] + rng.normal(0, 1, (60, 1)) + rng.normal(0, 0.5, (60, 5))
        lo, hi = two_way_ci(a, np.zeros((60, 1)), 1000, 0)
        two += lo <= 3 <= hi
        lo, hi = _bootstrap_ci(a.mean(1), 1000, 0)
        one += lo <= 3 <= hi
    assert two / 60 >= 0.7 and one / 60 <= 0.45, (two, one)
    # one seed on both sides: the targets' bootstrap of the differences, scipy's, bit for bit
    d = rng.normal(1, 2, (30, 2))
    assert two_way_ci(d[:, :1], d[:, 1:], 2000, 3) == _bootstrap_ci(d[:, 0] - d[:, 1], 2000, 3)
    a = rng.normal(2, 1, (40, 4))
    assert two_way_ci(a, np.zeros((40, 1)), 500, 0) == two_way_ci(a, np.zeros((40, 1)), 500, 0)  # seeded
    # a variant of a method on the same seeds shares each seed's effect: one draw of seeds for both sides cancels it
    # (an ablation, decision=mean against hspr on Full: [-0.13, +0.19] pp with a draw per side, [+0.008, +0.042] so)
    shared = rng.normal(0, 3, 4)[None, :] + rng.normal(0, 1, (40, 1))
    lo, hi = two_way_ci(shared + 0.5, shared, 2000, 0, same_seeds=True)
    assert lo == pytest.approx(0.5) and hi == pytest.approx(0.5)
    lo, hi = two_way_ci(shared + 0.5, shared, 2000, 0)
    assert hi - lo > 2
    assert all(np.isnan(two_way_ci(a[:1], np.zeros((1, 1)), 500, 0)))  # one target: no interval


def test_paired_analysis_seed_resampling_widens_only_a_method_whose_seeds_differ():
    """In paired_analysis: a method whose 4 seeds differ by a shared shift gets a wider interval than its
    seed-averaged differences' bootstrap; a one-seed method against a one-seed baseline keeps that bootstrap."""
    truths = {"lite": np.linspace(0.2, 0.8, 40)}
    rng = np.random.default_rng(2)
    shift = np.array([-0.04, 0.0, 0.02, 0.05])[:, None]  # one per seed, shared by every target
    errors = {("lite", "base"): np.full((1, 40), 0.01), ("lite", "seedy"): 0.01 + shift + rng.normal(0, 0.002, (4, 40)),
              ("lite", "fixed"): rng.normal(0.02, 0.01, (1, 40))}
    runs = make_runs(errors, truths)
    got = report.paired_analysis(runs, baseline="base", n_resamples=2000).set_index("method")
    err = report.per_target_errors(runs).pivot_table(index="target", columns="method", values="abs_err_pp")
    for m, wider in (("seedy", True), ("fixed", False)):
        ps = report.paired_stats((err[m] - err["base"]).to_numpy(), n_resamples=2000)
        lo, hi = ps["ci_low_pp"], ps["ci_high_pp"]
        width = got.loc[m, "ci_high_pp"] - got.loc[m, "ci_low_pp"]
        if wider:
            assert width > 5 * (hi - lo)
        else:
            assert (got.loc[m, "ci_low_pp"], got.loc[m, "ci_high_pp"]) == (lo, hi)
    twin = runs[runs["method"] == "seedy"].assign(method="twin")  # seedy's errors again, on the same 4 seeds
    twin["estimate"] = twin["estimate"] + np.sign(twin["estimate"] - twin["truth"]) * 0.001  # 0.1 pp worse everywhere
    both = report.paired_analysis(pd.concat([runs, twin]), baseline="seedy", n_resamples=2000).set_index("method")
    assert both.loc["twin", ["ci_low_pp", "ci_high_pp"]].tolist() == pytest.approx([0.1, 0.1], abs=1e-9)
    shuffled = runs.sample(frac=1.0, random_state=0)  # the same interval in any run order
    assert report.paired_analysis(shuffled, baseline="base", n_resamples=2000).set_index("method").loc[
        "seedy", "ci_low_pp"] == got.loc["seedy", "ci_low_pp"]


def test_macro_paired_test_flips_an_agent_on_two_banks_as_one():
    """The sign-flip p against its exact value over every sign vector (hand-enumerated): 3 agents on 2 banks
    have 2^3 sign vectors (p = 2/8), the same differences as 6 unrelated targets 2^6 (p = 8/64)."""
    import itertools

    from hspr.report.stats import macro_paired

    d1, d2 = np.array([1.0, 2.0, 0.5]), np.array([3.0, -1.0, 2.0])
    t = (d1.mean() + d2.mean()) / 2
    exact = np.mean([abs((np.dot(s, d1) + np.dot(s, d2)) / 6) >= t for s in itertools.product([-1, 1], repeat=3)])
    assert exact == 0.25
    zeros = np.zeros((3, 1))
    mean, (lo, hi), p, shares = macro_paired([(d1[:, None], zeros, "ABC"), (d2[:, None], zeros, "ABC")], 20_000, 0)
    assert mean == t == 1.25 and p == pytest.approx(0.25, abs=0.01) and lo <= t <= hi
    np.testing.assert_allclose(shares, (d1 + d2) / 6)  # each agent's share of the macro difference, A, B, C
    _, _, p_apart, _ = macro_paired([(d1[:, None], zeros, "ABC"), (d2[:, None], zeros, "DEF")], 20_000, 0)
    assert p_apart == pytest.approx(0.125, abs=0.01)
    assert macro_paired([(d1[:, None], zeros, "ABC"), (d2[:, None], zeros, "ABC")], 20_000, 0)[2] == p  # seeded


def test_macro_paired_interval_holds_the_true_macro_difference():
    """Simulated ground truth: 2 banks (40 and 8 targets), 30 agents on both, each agent's effect shared by its two
    rows; true bank differences 1 and 3, so the macro difference is 2 (the pooled mean is 1.33). The interval holds
    2 in most of 50 draws, and the sign-flip p is small."""
    from hspr.report.stats import macro_paired

    rng = np.random.default_rng(4)
    held = small = 0
    for _ in range(50):
        agent = rng.normal(0, 1.5, 40)
        big = 1 + agent + rng.normal(0, 0.5, 40)
        little = 3 + agent[:8] + rng.normal(0, 0.5, 8)
        ids = [f"a{k}" for k in range(40)]
        mean, (lo, hi), p, _ = macro_paired([(big[:, None], np.zeros((40, 1)), ids),
                                          (little[:, None], np.zeros((8, 1)), ids[:8])], 1000, 0)
        assert mean == pytest.approx((big.mean() + little.mean()) / 2)
        held += lo <= 2 <= hi
        small += p < 0.05
    assert held >= 43 and small >= 45, (held, small)


def test_paired_macro_row_is_the_difference_of_the_macro_maes():
    """The 'macro' row's mean Δ equals the comparison table's macro MAE of the method minus the baseline's, with
    the same agents on both banks and 3 query seeds; its median and Wilcoxon statistic are not given."""
    from hspr.report import MACRO, comparison_table

    rng = np.random.default_rng(5)
    truths = {"lite": np.linspace(0.2, 0.8, 12), "verified": np.linspace(0.1, 0.9, 30)}
    errors = {(b, m): rng.normal(0, sd, (3, len(truths[b]))) for b in truths for m, sd in (("hspr", 0.01), ("rsl", 0.03))}
    runs = make_runs(errors, truths)
    runs["target"] = runs["target"].str.replace(r"^[a-z]+_", "", regex=True)  # one agent on both banks
    paired = report.paired_analysis(runs, "hspr", n_resamples=500)
    row = paired[paired["bank"] == MACRO].iloc[0]
    t = comparison_table(runs).set_index(["bank", "method"])
    assert row["mean_diff_pp"] == pytest.approx(t.loc[(MACRO, "rsl"), "mae_pp"] - t.loc[(MACRO, "hspr"), "mae_pp"])
    assert row["n_targets"] == 30 and np.isnan(row["median_diff_pp"]) and np.isnan(row["wilcoxon_stat"])  # agents
    pooled = paired[paired["bank"] == "pooled"].iloc[0]
    assert pooled["n_targets"] == 42 and row["n_baseline_better"] + row["n_method_better"] <= 30
    assert row["ci_low_pp"] < row["mean_diff_pp"] < row["ci_high_pp"] and 0 < row["p_value"] <= 1
    np.testing.assert_allclose(paired["p_holm"], report.holm(paired["p_value"]))
    shuffled = runs.sample(frac=1.0, random_state=1)
    again = report.paired_analysis(shuffled, "hspr", n_resamples=500)
    assert again[again["bank"] == MACRO].iloc[0][["ci_low_pp", "ci_high_pp", "p_value"]].tolist() == \
        row[["ci_low_pp", "ci_high_pp", "p_value"]].tolist()  # any run order
    md = report.paired_markdown(paired, 500, 0)
    assert "| 10 % | rsl | macro | 30 |" in md and "sign-flip" in md
    # no macro MAE in the comparison table (one bank a variant of the other's label): no macro row either
    variant = runs.assign(bank=runs["bank"].where(runs["bank"] == "lite", "lite[batch 5]"))
    assert not (report.paired_analysis(variant, "hspr", n_resamples=99)["bank"] == MACRO).any()


def test_coverage_columns(synth):
    truths, errors = synth
    runs = make_runs(errors, truths, intervals={("lite", "hspr"): 0.5, ("pro", "hspr"): 1e-6})
    t = report.comparison_table(runs).set_index(["bank", "method"])
    assert t.loc[("lite", "hspr"), "coverage_90"] == 1.0
    assert t.loc[("pro", "hspr"), "coverage_90"] == 0.0
    assert t.loc[("lite", "hspr"), "mean_width_pp"] == pytest.approx(100.0)
    assert np.isnan(t.loc[("lite", "uniform"), "coverage_90"])
    assert np.isnan(t.loc[("lite", "uniform"), "coverage_ci_low"]) and np.isnan(t.loc[("lite", "uniform"), "coverage_ci_high"])
    cov = report.coverage_table(runs)
    assert set(cov["method"]) == {"hspr"} and (cov["level"] == 0.90).all()
    lite = cov[cov["bank"] == "lite"].iloc[0]
    assert lite["ci_low"] < 1.0 == lite["coverage"] and lite["n_targets"] == 12
    # draws-based quantiles at other levels, stored as lower_<pct> / upper_<pct>
    runs["lower_50"], runs["upper_50"] = runs["estimate"] - 1e-6, runs["estimate"] + 1e-6
    cov = report.coverage_table(runs)
    assert sorted(cov.loc[cov["method"] == "hspr", "level"].unique()) == [0.5, 0.9]
    assert (cov.loc[cov["level"] == 0.5, "coverage"] == 0).all()


# ---------------------------------------------------------------------------------- files and CLI


def _write(path, runs: pd.DataFrame, summary=True):
    obj = {"runs": json.loads(runs.to_json(orient="records"))}
    if summary:
        obj["summary"] = []
    path.write_text(json.dumps(obj))
    return path


def _cli():
    g = click.Group()
    register(g)
    return g


def test_cli_writes_tables_and_figures(tmp_path, synth):
    truths, errors = synth
    intervals = {("lite", "hspr"): 0.02, ("pro", "hspr"): 0.03}
    sweep = _write(tmp_path / "sweep.json", make_runs(errors, truths, (0.05, 0.10, 0.20), intervals))
    main = _write(tmp_path / "main.json", make_runs(errors, truths, (0.10,), intervals))
    out = tmp_path / "rep"
    res = CliRunner().invoke(_cli(), ["report", str(sweep), str(main), "--out-dir", str(out), "--n-resamples", "200",
                                      "--also", "uniform"])
    assert res.exit_code == 0, res.output
    names = {p.name for p in out.iterdir()}
    assert {"comparison.md", "comparison.csv", "paired.md", "paired.csv"} <= names
    for stem in ("budget_curves", "estimate_vs_truth", "coverage"):
        assert {f"{stem}.png", f"{stem}.svg"} <= names
        assert (out / f"{stem}.png").read_bytes()[:4] == b"\x89PNG"
        assert str(out / f"{stem}.png") in res.output
    assert "more than one place" in res.output  # 0.10 runs in both files: the later one kept
    csv = pd.read_csv(out / "comparison.csv")
    assert sorted(csv["budget_fraction"].unique()) == [0.05, 0.10, 0.20]
    assert len(csv[(csv["budget_fraction"] == 0.10) & (csv["bank"] != MACRO)]) == 5  # no double counting
    paired = pd.read_csv(out / "paired.csv")
    assert {"mean_diff_pp", "ci_low_pp", "ci_high_pp", "p_value", "p_holm"} <= set(paired.columns)
    assert "zero_method='wilcox'" in (out / "paired.md").read_text()
    assert "**" in (out / "comparison.md").read_text()


def test_a_refused_write_replaces_no_file_or_names_those_replaced(tmp_path, synth, monkeypatch):
    """A trial: one read-only file of an earlier report (paired.csv) stopped a report after it had
    rewritten comparison.md and paired.md, and the error did not say so."""
    import errno
    import os as _os
    from pathlib import Path

    truths, errors = synth
    out = tmp_path / "rep"
    report.write_report(make_runs(errors, truths, (0.10,)), out, n_resamples=50, figures=False)
    before = {f.name: f.read_bytes() for f in out.iterdir()}
    new = make_runs(errors, truths, (0.05,))

    def full_disk(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(pd.DataFrame, "to_csv", full_disk)
    with pytest.raises(report.ReportError, match=r"could not be written \(No space left on device\); no file of the folder "
                                                 r"was replaced: free space on that disk, or use another --out-dir"):
        report.write_report(new, out, n_resamples=50, figures=False)

    def not_permitted(*a, **k):  # a hostile trial: /sys/kernel was told to free space
        raise PermissionError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(pd.DataFrame, "to_csv", not_permitted)
    with pytest.raises(report.ReportError, match=r"\(Operation not permitted\); no file of the folder was replaced: fix "
                                                 r"the file's permissions"):
        report.write_report(new, out, n_resamples=50, figures=False)
    monkeypatch.undo()
    # a hostile trial: --out-dir /proc/x (its mkdir fails with ENOENT) was told to check that the folder exists
    monkeypatch.setattr(Path, "mkdir", lambda *a, **k: (_ for _ in ()).throw(FileNotFoundError(errno.ENOENT, "No such "
                                                                                                "file or directory")))
    with pytest.raises(report.ReportError, match=r"new: the --out-dir folder could not be created \(No such file or "
                                                 r"directory\): its file system takes no new folders; use another"):
        report.write_report(new, tmp_path / "new", n_resamples=50, figures=False)
    monkeypatch.undo()
    assert {f.name: f.read_bytes() for f in out.iterdir()} == before  # nothing replaced, no staging folder left

    real = _os.replace

    def refuse_paired_csv(src, dst):
        if Path(dst).name == "paired.csv":
            raise PermissionError(errno.EPERM, "Operation not permitted")
        return real(src, dst)

    monkeypatch.setattr(report.os, "replace", refuse_paired_csv)
    with pytest.raises(report.ReportError, match=r"paired.csv: Operation not permitted; the report is not complete "
                                                 r"\(comparison.md, comparison.csv, paired.md were replaced"):
        report.write_report(new, out, n_resamples=50, figures=False)
    assert sorted(f.name for f in out.iterdir()) == sorted(before)  # the staging folder is gone
    assert (out / "paired.csv").read_bytes() == before["paired.csv"]
    assert "5 %" in (out / "comparison.md").read_text()


def test_a_folder_named_as_a_report_file_is_refused_before_any_write(tmp_path, synth):
    """A hostile trial: a folder named paired.csv stopped the report after three tables were replaced,
    and the error said to make that file writable."""
    truths, errors = synth
    out = tmp_path / "rep"
    report.write_report(make_runs(errors, truths, (0.10,)), out, n_resamples=50, figures=False)
    (out / "paired.csv").unlink()
    (out / "paired.csv").mkdir()
    before = {f.name: f.read_bytes() for f in out.iterdir() if f.is_file()}
    with pytest.raises(report.ReportError, match=r"paired\.csv is a folder, where the report writes its file "
                                                 r"paired\.csv; nothing was written: move that folder away"):
        report.write_report(make_runs(errors, truths, (0.05,)), out, n_resamples=50, figures=False)
    assert {f.name: f.read_bytes() for f in out.iterdir() if f.is_file()} == before
    assert sorted(f.name for f in out.iterdir()) == sorted([*before, "paired.csv"])  # no staging folder

def test_a_report_removes_the_staging_folder_a_killed_report_left(tmp_path, synth):
    """A hostile re-trial: SIGTERM or SIGHUP during a report left its `.hspr-report-*` folder, and the next
    report neither removed it nor said so. A folder of a process that is gone is removed; one of a
    running process (a report writing into the same folder) is kept."""
    import subprocess
    import sys

    truths, errors = synth
    out = tmp_path / "rep"
    out.mkdir()
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead = out / f".hspr-report-{int(gone.stdout)}-abc"
    (dead / "sub").mkdir(parents=True)
    live = out / ".hspr-report-1-xyz"  # pid 1 is running
    live.mkdir()
    report.write_report(make_runs(errors, truths), out, n_resamples=50, figures=False)
    left = sorted(f.name for f in out.iterdir() if f.name.startswith("."))
    assert left == [live.name]


def test_cli_no_figures_single_budget(tmp_path, synth):
    truths, errors = synth
    f = _write(tmp_path / "r.json", make_runs(errors, truths))
    out = tmp_path / "rep"
    res = CliRunner().invoke(_cli(), ["report", str(f), "--out-dir", str(out), "--no-figures", "--n-resamples", "200",
                                      "--baseline", "uniform"])
    assert res.exit_code == 0, res.output
    assert sorted(p.name for p in out.iterdir()) == ["comparison.csv", "comparison.md", "paired.csv", "paired.md"]
    assert set(pd.read_csv(out / "paired.csv")["baseline"]) == {"uniform"}
    # replay --csv writes summarize(); a script trial found its columns in another order than comparison.csv's
    from hspr.report.stats import summarize

    cols = list(pd.read_csv(out / "comparison.csv").columns)
    assert list(summarize(make_runs(errors, truths)).columns) == cols[:len(summarize(make_runs(errors, truths)).columns)]
    # single budget, no intervals: figure (a) and (c) are skipped, (b) written
    paths = report.make_figures(make_runs(errors, truths), tmp_path / "figs", formats=("png",))
    assert [p.name for p in paths] == ["estimate_vs_truth.png"]
    # a hostile trial: the CLI left out the coverage figure, and a bank's panel, without a word
    runs = make_runs(errors, truths)
    f = _write(tmp_path / "noint.json", runs[~((runs["bank"] == "pro") & (runs["method"] == "hspr"))])
    res = CliRunner().invoke(_cli(), ["report", str(f), "--out-dir", str(tmp_path / "fig2"), "--n-resamples", "100",
                                      "--baseline", "hspr"])
    said = " ".join(res.output.split())
    assert res.exit_code == 0 and "no coverage figure: no run in the results has a 90 % interval" in said
    assert "the estimate_vs_truth figure has no panel for pro: the baseline 'hspr' has no runs there" in said
    # a hostile trial: pro's paired rows were left out without a word
    assert "note: no paired rows for pro: the baseline 'hspr' has no runs there" in said
    assert set(pd.read_csv(tmp_path / "fig2" / "paired.csv")["bank"]) == set(runs["bank"]) - {"pro"}
    res = CliRunner().invoke(_cli(), ["report", str(f), "--out-dir", str(tmp_path / "fig3"), "--n-resamples", "100",
                                      "--baseline", "uniform", "--also", "hspr"])
    said = " ".join(res.output.split())
    assert res.exit_code == 0 and "has no panel" not in said and "no paired rows" not in said
    assert "the estimate_vs_truth panel for pro shows 'uniform' alone: --also 'hspr' has no runs there" in said
    # a hostile trial: a method run at another budget only was left out of the coverage figure unsaid
    ten = make_runs({k: v for k, v in errors.items() if k[1] == "hspr"}, truths, intervals={("lite", "hspr"): 0.02})
    five = make_runs({("lite", "uniform"): errors[("lite", "uniform")]}, truths, fractions=(0.05,),
                     intervals={("lite", "uniform"): 0.05})
    f = _write(tmp_path / "split.json", pd.concat([ten, five], ignore_index=True))
    res = CliRunner().invoke(_cli(), ["report", str(f), "--out-dir", str(tmp_path / "fig4"), "--n-resamples", "100"])
    said = " ".join(res.output.split())
    assert res.exit_code == 0 and (tmp_path / "fig4" / "coverage.png").exists(), said
    assert "the coverage figure has no point for uniform: no run at the figure's budget" in said


@pytest.mark.parametrize("content, pattern", [
    ({"summary": [{"bank": "lite"}]}, r"no 'runs'.*summary alone"),
    ([{"bank": "lite"}], r"unknown layout: the top level is a JSON list"),
    ({"runs": {"a": 1}}, r"unknown layout: 'runs' must be a list"),
    ({"runs": []}, r"'runs' is empty"),
    ({"runs": [{"bank": "lite", "method": "hspr"}]}, r"run records lack \['seed'"),
    ("{not json", r"invalid JSON at line 1"),
    # a trial: "invalid JSON at line 1, column 1 (Expecting value)", and advice for a CSV
    (" \n", r"bad_results.json: the file is empty; expected the file written by `hspr replay --out`$"),
    (b"\xff\xfe\x00binary", r"not UTF-8 text \(.*\); expected the file written by `hspr replay --out`$"),
    # a trial: "invalid JSON at line 2, column 1 (Extra data)"
    ('{"format": "hspr-live-session", "version": 2}\n{"event": "ask"}\n',
     r"an hspr live session file, not the results of `hspr replay --out`; `hspr live status --session .*` shows"),
])
def test_bad_results_file(tmp_path, content, pattern):
    p = tmp_path / "bad_results.json"
    if isinstance(content, bytes):
        p.write_bytes(content)
    else:
        p.write_text(content if isinstance(content, str) else json.dumps(content))
    with pytest.raises(ReportError, match=pattern) as exc:
        report.read_results([p])
    assert str(p) in str(exc.value)
    res = CliRunner().invoke(_cli(), ["report", str(p), "--out-dir", str(tmp_path / "o")])
    assert res.exit_code == 2
    assert "error:" in res.output and "bad_results.json" in res.output
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("text, kind", [
    ("budget_fraction,budget,bank,method,mae_pp\n0.1,50,lite,hspr,2.1\n",
     "a table of seed-averaged metrics (replay --csv, or a report's comparison.csv)"),
    ("agent,t1,t2\na,1,0\n", "a bank, or another table"),
])
def test_a_csv_given_as_results_is_named_as_such(tmp_path, text, kind):
    """A hostile trial: a replay --csv summary (or a bank) given to `hspr report` was 'invalid JSON at line 1'."""
    p = tmp_path / "summary.csv"
    p.write_text(text)
    with pytest.raises(ReportError, match=re.escape(f"summary.csv: a CSV, {kind}, not the results of `hspr replay "
                                                    "--out`: give the JSON file that --out wrote")):
        report.read_results([p])


def test_cli_unknown_baseline(tmp_path, synth):
    truths, errors = synth
    f = _write(tmp_path / "r.json", make_runs(errors, truths))
    res = CliRunner().invoke(_cli(), ["report", str(f), "--out-dir", str(tmp_path / "o"), "--no-figures"])
    assert res.exit_code == 0  # hspr present
    res = CliRunner().invoke(_cli(), ["report", str(f), "--baseline", "rsl", "--out-dir", str(tmp_path / "o")])
    assert res.exit_code == 2 and "baseline 'rsl' is not in the results" in res.output
    res = CliRunner().invoke(_cli(), ["report", str(f), "--also", "rsl", "--out-dir", str(tmp_path / "o2")])
    assert res.exit_code == 2 and "--also method 'rsl'" in res.output and not (tmp_path / "o2").exists()
    res = CliRunner().invoke(_cli(), ["report", str(f), "--also", "hspr", "--out-dir", str(tmp_path / "o3")])
    assert res.exit_code == 2 and "--also 'hspr' is the baseline" in res.output and not (tmp_path / "o3").exists()


def test_duplicate_runs_keep_last(tmp_path, synth):
    truths, errors = synth
    a = make_runs(errors, truths)
    b = a.assign(estimate=a["truth"])  # perfect estimates in the later file
    with pytest.warns(ReportWarning, match=f"{len(a)} run.*in {tmp_path / 'a.json'}, {tmp_path / 'b.json'}"):
        runs = report.read_results([_write(tmp_path / "a.json", a), _write(tmp_path / "b.json", b)])
    assert len(runs) == len(a) and (runs["estimate"] == runs["truth"]).all()
    # the same run with another true score: other data under the same bank label, refused
    c = a.assign(truth=a["truth"] + 0.01)
    with pytest.raises(ReportError, match="different true scores: .* in .*a.json .*; .* in .*c.json"):
        report.read_results([_write(tmp_path / "a.json", a), _write(tmp_path / "c.json", c)])


def test_old_auto_label_reads_as_hspr_auto(tmp_path, synth):
    """`--config auto` runs were labelled hspr[auto], `--methods hspr_auto` runs hspr_auto: one
    method under two names, and `--baseline hspr_auto` refused the first (a new-user trial)."""
    truths, errors = synth
    a = make_runs(errors, truths)
    old = a.assign(method=a["method"].replace({"hspr": "hspr[auto]", "atlas": "hspr[auto,decision=mean]"}))
    runs = report.read_results(_write(tmp_path / "old.json", old))
    assert sorted(set(runs["method"])) == ["hspr_auto", "hspr_auto[decision=mean]", "uniform"]
    new = a.assign(method=a["method"].replace({"hspr": "hspr_auto"}))
    with pytest.warns(ReportWarning, match="appear in more than one place"):  # the same runs under both labels
        both = report.read_results([_write(tmp_path / "old.json", old), _write(tmp_path / "new.json", new)])
    assert (both["method"] == "hspr_auto").sum() == (a["method"] == "hspr").sum()
    # an old script's --baseline / --also with the old label still works
    res = CliRunner().invoke(_cli(), ["report", str(tmp_path / "old.json"), "--baseline", "hspr[auto]", "--also",
                                      "hspr[auto,decision=mean]", "--out-dir", str(tmp_path / "o"), "--no-figures"])
    assert res.exit_code == 0, res.output


def test_one_truth_per_target_across_methods_and_files(tmp_path, synth):
    """Two methods replayed on different matrices under one bank label were compared silently
    (a hostile trial); within one file too, a hand-edited truth moved one method's MAE."""
    truths, errors = synth
    a = make_runs(errors, truths)
    other = a[a["method"] != "hspr"].assign(truth=lambda d: d["truth"] + 0.02)
    mine = a[a["method"] == "hspr"]
    with pytest.raises(ReportError, match=r"target 'lite_a00' of bank 'lite' has different true scores: 30 % in "
                                          r".*hspr.json \(method hspr, seed 0\); 32 % in .*peers.json"):
        report.read_results([_write(tmp_path / "hspr.json", mine), _write(tmp_path / "peers.json", other)])
    one = a.copy()
    one.loc[3, "truth"] = 0.99
    with pytest.raises(ReportError, match="different true scores"):
        report.read_results(_write(tmp_path / "one.json", one))
    assert len(report.read_results(_write(tmp_path / "a.json", a))) == len(a)  # one truth per target: fine
    # a hostile trial: two --tasks subsets of a bundled bank were told to take another --bank label (impossible)
    sub = [x.assign(bank="verified[40 tasks]") for x in (mine, other)]
    with pytest.raises(ReportError, match=r"two task subsets of the same size: report them apart") as err:
        report.read_results([_write(tmp_path / "s1.json", sub[0]), _write(tmp_path / "s2.json", sub[1])])
    assert "--bank" not in str(err.value)


@pytest.mark.parametrize("field, value, needle", [
    ("estimate", 5.0, "'estimate' must be a score on the 0-1 scale"),
    ("estimate", -1.5, "'estimate' must be a score on the 0-1 scale (between -1 and 2; not %)"),
    ("lower", -3.0, "'lower' must be a score on the 0-1 scale"),
    ("upper", 37.0, "'upper' must be a score on the 0-1 scale"),
    ("budget_fraction", 7.0, "'budget_fraction' must be a share of the tasks, in (0, 1]"),
    ("budget_fraction", 0.0, "'budget_fraction' must be a share of the tasks"),
])
def test_impossible_numbers_are_refused_with_the_run(tmp_path, synth, field, value, needle):
    truths, errors = synth
    a = make_runs(errors, truths, intervals={k: 0.05 for k in errors})
    a[field] = a[field].astype(float)
    a.loc[3, field] = value
    with pytest.raises(ReportError, match=re.escape(f"run 3: {needle}")):
        report.read_results(_write(tmp_path / "a.json", a))


@pytest.mark.parametrize("queried, needle", [
    (["t1"] * 8, "'queried' must be a list of distinct task ids (each task is queried once)"),
    ([f"t{k}" for k in range(31)], "'queried' must be a list of at most 'budget' task ids"),
])
def test_impossible_query_lists_are_refused_with_the_run(tmp_path, synth, queried, needle):
    """A hostile trial: a hand-edited run that queried one task eight times, or more tasks than its budget (30), passed."""
    truths, errors = synth
    a = make_runs(errors, truths)
    a["queried"] = [list(map(str, range(30)))] * len(a)  # a full budget of distinct ids is fine
    assert len(report.read_results(_write(tmp_path / "ok.json", a))) == len(a)
    a.at[3, "queried"] = queried
    with pytest.raises(ReportError, match=re.escape(f"run 3: {needle}")):
        report.read_results(_write(tmp_path / "a.json", a))


def test_cli_default_baseline_is_an_hspr_variant_when_plain_hspr_is_absent(tmp_path, synth):
    truths, errors = synth
    runs = make_runs(errors, truths)
    runs["method"] = runs["method"].replace({"hspr": "hspr[no-group-uncertainty]"})
    f = _write(tmp_path / "r.json", runs)
    out = tmp_path / "o"
    res = CliRunner().invoke(_cli(), ["report", str(f), "--out-dir", str(out), "--no-figures", "--n-resamples", "200"])
    assert res.exit_code == 0, res.output
    assert set(pd.read_csv(out / "paired.csv")["baseline"]) == {"hspr[no-group-uncertainty]"}
    assert "hspr[no-group-uncertainty]" in res.output  # not eaten as rich markup


def test_coverage_figure_with_full_coverage(tmp_path):
    """Coverage 1.0 on 14 targets: the Wilson upper bound rounds just below 1.0, and the bar above
    the point must still not go negative (a regression: matplotlib refused the figure)."""
    assert report.stats._wilson(1.0, 14)[1] < 1.0  # the rounding that used to break the figure
    rng = np.random.default_rng(0)
    truths = {"pro": np.linspace(0.05, 0.4, 14)}
    runs = make_runs({("pro", "hspr"): rng.normal(0, 0.01, (2, 14))}, truths, intervals={("pro", "hspr"): 0.5})
    cov = report.coverage_table(runs, 0.10)
    assert (cov["coverage"] == 1.0).all()
    paths = report.make_figures(runs, tmp_path, formats=("png",))
    assert "coverage.png" in [p.name for p in paths]


def test_coverage_figure_lists_methods_in_the_tables_order_whatever_the_runs_order():
    """A trial: the legend and bars followed the order of the results files (uniform first when its file
    came first), not the tables' registry order."""
    truths = {"lite": np.linspace(0.1, 0.6, 8)}
    errors = {("lite", m): np.full((1, 8), 0.01) for m in ("uniform", "hspr_robust", "hspr")}
    runs = make_runs(errors, truths, intervals=dict.fromkeys(errors, 0.02))
    for order in (runs, runs.iloc[::-1]):
        fig = report.figures.figure_coverage(order)
        labels = [t.get_text() for t in fig.legends[0].get_texts()]
        assert [x for x in labels if not x.startswith("nominal")] == ["hspr", "hspr_robust", "uniform"]



def test_a_label_starting_with_an_underscore_keeps_its_legend_entry_in_every_figure():
    """matplotlib drops legend labels that start with '_': a run labelled `_test` had no entry (a hostile trial)."""
    truths = {"lite": np.linspace(0.1, 0.6, 8)}
    errors = {("lite", m): np.full((1, 8), 0.01) for m in ("_test", "hspr")}
    runs = make_runs(errors, truths, fractions=(0.05, 0.10), intervals=dict.fromkeys(errors, 0.02))
    figs = [report.figures.figure_coverage(runs), report.figures.figure_estimate_vs_truth(runs, "hspr", also="_test"),
            report.figures.figure_budget_curves(runs, "hspr")]
    for fig in figs:
        texts = [t.get_text() for leg in [*fig.legends, *(a.get_legend() for a in fig.axes)] if leg is not None
                 for t in leg.get_texts()]
        assert " _test" in texts and "hspr" in texts, texts

def test_coverage_figure_width_labels_do_not_overlap():
    """Eleven methods on two banks (the shift table): the mean-width labels stood side by side and
    ran into each other, and placed on the bars they crossed the neighbouring bars (a new-user trial):
    they stand in a row above the plot, each in its bar's column, clear of each other and of the title."""
    rng = np.random.default_rng(1)
    truths = {"verified/bash-only": np.linspace(0.1, 0.6, 10), "verified/forward-20": np.linspace(0.5, 0.7, 10)}
    methods = [f"method_{k}" for k in range(11)]
    errors = {(b, m): rng.normal(0, 0.03, (2, 10)) for b in truths for m in methods}
    runs = make_runs(errors, truths, intervals={(b, m): 0.02 + 0.01 * k for b in truths for k, m in enumerate(methods)})
    fig = report.figures.figure_coverage(runs)
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    ax = fig.axes[0]
    labels = list(ax.texts)
    assert len(labels) == 22 and all(float(t.get_text()) > 0 for t in labels)
    boxes = [t.get_window_extent(renderer) for t in labels]
    frame, title = ax.get_window_extent(renderer), ax.title.get_window_extent(renderer)
    assert "numbers above: mean width (pp)" in ax.get_title()
    for i, a in enumerate(boxes):
        assert frame.y1 <= a.y0 and a.y1 <= title.y0 and frame.x0 <= a.x0 and a.x1 <= frame.x1, labels[i].get_text()
        for b in boxes[i + 1:]:
            assert not a.overlaps(b)
    # each label names its own bar's width: the 2nd bank's labels in the tables' method order (unregistered
    # names by name: method_0, method_1, method_10, method_2, ...), at 2 * half-width
    second = sorted((t for t in labels if t.get_position()[0] > 0.5), key=lambda t: t.get_position()[0])
    by_name = sorted(range(11), key=lambda k: f"method_{k}")
    assert [t.get_text() for t in second] == [f"{200 * (0.02 + 0.01 * k):.1f}" for k in by_name]


def test_methods_replayed_on_different_targets_are_named(tmp_path, synth):
    """A method run before the bank gained rows and one after were ranked in one row without a word."""
    truths, errors = synth
    runs = make_runs(errors, truths)
    fewer = runs[~((runs["method"] == "uniform") & (runs["bank"] == "lite") & runs["target"].isin(["lite_a00", "lite_a01"]))]
    with pytest.warns(ReportWarning, match=r"bank 'lite' at budget 0\.1: the methods were replayed on different targets "
                                           r"\(hspr 12, uniform 10, atlas 12 targets; e\.g\. uniform has no run on 'lite_a00'\)"):
        report.read_results(_write(tmp_path / "r.json", fewer))
    # one seed's run lost for one target: the targets' errors average over different numbers of seeds
    lite_u = runs[(runs["method"] == "uniform") & (runs["bank"] == "lite")]
    lost = runs.drop(lite_u[(lite_u["target"] == "lite_a03") & (lite_u["seed"] == lite_u["seed"].max())].index)
    n_seeds = lite_u["seed"].nunique()
    with pytest.warns(ReportWarning, match=rf"'uniform' on bank 'lite' at budget 0\.1: 1 of 12 targets have fewer query "
                                           rf"seeds than the others \('lite_a03': {n_seeds - 1} of {n_seeds}\)"):
        lost_runs = report.read_results(_write(tmp_path / "lost.json", lost))
    # and lite's methods are not ranked (a hostile trial: such a MAE was ranked as any other); the other banks are
    table = report.comparison_table(lost_runs)
    assert set(table.loc[~table["ranked"], "bank"]) == {"lite", report.MACRO}
    assert table.loc[table["bank"] == "lite", "mae_rank"].isna().all()
    assert table.loc[~table["bank"].isin(["lite", report.MACRO]), "mae_rank"].notna().all()
    # as many seeds per target, not the same ones (a re-trial): seed 0 dropped for one half, seed 1 for the other
    two = runs[(runs["method"] == "hspr") & (runs["bank"] == "lite")]
    half = two["target"].isin(sorted(set(two["target"]))[:6])
    swapped = runs.drop(two[(half & (two["seed"] == 0)) | (~half & (two["seed"] == 1))].index)
    with pytest.warns(ReportWarning, match=r"'hspr' on bank 'lite' at budget 0\.1: its targets were replayed on different "
                                           r"query seeds \('lite_a\d\d': [01]; another: [01]\)"):
        table = report.comparison_table(report.read_results(_write(tmp_path / "swapped.json", swapped)))
    assert set(table.loc[~table["ranked"], "bank"]) == {"lite", report.MACRO}
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", ReportWarning)
        report.read_results(_write(tmp_path / "same.json", runs))  # the same targets: no warning


def test_cli_report_refuses_a_negative_seed_and_names_a_broken_matplotlib(tmp_path, synth, monkeypatch):
    truths, errors = synth
    f = _write(tmp_path / "r.json", make_runs(errors, truths))
    res = CliRunner().invoke(_cli(), ["report", str(f), "--out-dir", str(tmp_path / "o"), "--seed", "-1"])
    assert res.exit_code == 2 and "'--seed': -1 is not in the range" in res.output
    res = CliRunner().invoke(_cli(), ["report", str(f), "--out-dir", str(tmp_path / "o"), "--n-resamples", "100000000"])
    assert res.exit_code == 2 and "'--n-resamples'" in res.output
    import builtins

    real = builtins.__import__

    def broken(name, *args, **kw):
        if name == "matplotlib":
            raise ValueError("Key backend: 'nonsense' is not a valid value for backend")
        return real(name, *args, **kw)

    monkeypatch.setattr(builtins, "__import__", broken)
    res = CliRunner().invoke(_cli(), ["report", str(f), "--out-dir", str(tmp_path / "o"), "--n-resamples", "200"])
    assert res.exit_code == 2, res.output
    assert "the figures need matplotlib, which failed to load" in res.output and "--no-figures" in res.output
    assert not (tmp_path / "o").exists()  # all or nothing: no tables without their figures, no staging folder, and
    # no empty folder made for them


def test_cli_report_refuses_an_empty_out_dir(tmp_path, synth, monkeypatch):
    """--out-dir '' wrote the tables into the current folder."""
    truths, errors = synth
    f = _write(tmp_path / "r.json", make_runs(errors, truths))
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(_cli(), ["report", str(f), "--out-dir", "", "--no-figures"])
    assert res.exit_code == 2 and "the folder name is empty" in res.output
    assert not (tmp_path / "comparison.csv").exists()


def _notes(fig) -> list[str]:
    """The estimate-vs-truth figure's note of each panel (the text below its x label)."""
    return [t.get_text() for ax in fig.axes if ax.get_visible() for t in ax.texts]


def test_estimate_vs_truth_note_gives_the_tables_mae():
    """A trial: with 2 seeds the panel's note gave the MAE of the seed-mean points (uniform 3.09 pp)
    where the table gave 4.79. Errors +4 and -4 pp on every target: seed-mean points are exact."""
    truths = {"lite": np.linspace(0.1, 0.6, 8)}
    errors = {("lite", "hspr"): np.array([[0.04] * 8, [-0.04] * 8])}
    runs = make_runs(errors, truths)  # estimate = truth + err * 1.1 at 10 %: 4.4 pp in absolute value
    table = report.comparison_table(runs)
    mae = float(table.loc[(table["bank"] == "lite") & (table["method"] == "hspr"), "mae_pp"].iloc[0])
    assert mae == pytest.approx(4.4)
    fig = report.figures.figure_estimate_vs_truth(runs, "hspr")
    assert _notes(fig) == ["hspr: MAE 4.400 pp,\n0% of runs within ±2 pp"]


def _spread(n: int, low: float, high: float, rng) -> np.ndarray:
    return np.clip(rng.uniform(low, high, n), 0.0, 1.0)


@pytest.mark.parametrize("case", ["diagonal", "alike", "crowded"])
def test_estimate_vs_truth_note_covers_no_point(case):
    """A new-user trial: the note (one line per method, as wide as the panel) covered the strongest
    agents' points in the top right corner; re-trials: a note placed as a legend (loc="best") covered
    an outlier of agents all scoring about 50 %, and 8 of 80 points of a crowded panel. The note is now
    below the panel's x label: outside the axes, whatever the points, and clear of the label."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    rng = np.random.default_rng(3)
    if case == "diagonal":  # Verified-like: 0-77 %, the second method over- and under-estimating
        truths = {"verified": np.linspace(0.0, 0.77, 40)}
        errors = {("verified", "hspr"): np.full((1, 40), 0.01), ("verified", "uniform"): np.tile([0.05, -0.05], (1, 20))}
    elif case == "alike":  # 16 agents at about 50 %, one estimate 17 pp too high
        truths = {"verified": _spread(16, 0.45, 0.55, rng)}
        errors = {("verified", "hspr"): np.r_[0.17, np.zeros(15)][None], ("verified", "uniform"): rng.normal(0, 0.05, (1, 16))}
    else:  # two banks of 40 agents each, two seeds (min-max bars), errors everywhere
        truths = {b: rng.uniform(0, 1, 40) for b in ("lite", "verified")}
        errors = {(b, m): rng.normal(0, 0.1, (2, 40)) for b in truths for m in ("hspr", "uniform")}
    fig = report.figures.figure_estimate_vs_truth(make_runs(errors, truths), "hspr", also="uniform")
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    panels = [a for a in fig.axes if a.get_visible()]
    assert len(panels) == len(truths)
    for ax in panels:
        (note,) = ax.texts
        box, frame = note.get_window_extent(renderer), ax.get_window_extent(renderer)
        label = ax.xaxis.label.get_window_extent(renderer)
        assert box.y1 <= label.y0 + 0.5 and label.y1 <= frame.y0  # below the label, which is below the axes
        assert frame.x0 - 40 <= box.x0 and box.x1 <= frame.x1 + 40  # and about as wide as the panel at most
        assert note.get_text().count("\n") == 3  # two methods, two lines each


def test_figures_draw_each_bank_at_its_own_budget(tmp_path, synth):
    """A trial: a 5 % file of one bank and a 10 % file of another gave figures of the 10 % bank alone,
    without a word, and a budget-curves figure of isolated points."""
    truths, errors = synth
    five = make_runs({k: v for k, v in errors.items() if k[0] == "lite"}, truths, fractions=(0.05,),
                     intervals={("lite", "hspr"): 0.05, ("lite", "uniform"): 0.1})
    ten = make_runs({k: v for k, v in errors.items() if k[0] == "pro"}, truths, fractions=(0.10,),
                    intervals={("pro", "hspr"): 0.05})
    runs = pd.concat([five, ten], ignore_index=True)
    assert report.figures.bank_budgets(runs) == {"lite": 0.05, "pro": 0.10}
    assert not report.figures.has_budget_sweep(runs) and report.figures.figure_budget_curves(runs) is None
    fig = report.figures.figure_estimate_vs_truth(runs, "hspr")
    assert [ax.get_title() for ax in fig.axes if ax.get_visible()] == ["lite (5 %)", "pro (10 %)"]
    assert "budget closest to 10 % per bank" in fig.texts[0].get_text()
    assert report.figures.best_other_methods(runs, "hspr") == {"lite": "atlas", "pro": "uniform"}
    cov = report.figures.figure_coverage(runs)
    assert [t.get_text() for t in cov.axes[0].get_xticklabels()] == ["lite (5 %)", "pro (10 %)"]
    # a hostile re-trial: a bank whose baseline ran at 5 % and another method alone at 10 % was left out
    split = pd.concat([five[five["method"] == "hspr"], make_runs({("lite", "uniform"): errors[("lite", "uniform")]},
                                                                 truths, fractions=(0.10,)), ten], ignore_index=True)
    fig = report.figures.figure_estimate_vs_truth(split, "hspr", report.figures.best_other_methods(split, "hspr"))
    assert [ax.get_title() for ax in fig.axes if ax.get_visible()] == ["lite (5 %)", "pro (10 %)"]
    paths = report.make_figures(split[split["bank"] == "lite"], tmp_path / "one", formats=("png",))
    assert [p.name for p in paths] == ["estimate_vs_truth.png", "coverage.png"]  # it refused: hspr has no 10 % run
    assert report.figures.figure_budgets(split, "hspr") == {"lite": 0.05, "pro": 0.10}
    cov = report.figures.figure_coverage(split, baseline="hspr")  # the bank at the budget of the other figure
    assert [t.get_text() for t in cov.axes[0].get_xticklabels()] == ["lite (5 %)", "pro (10 %)"]
    one = report.figures.figure_estimate_vs_truth(ten, "hspr")  # one budget: the bank alone, the budget once
    assert [ax.get_title() for ax in one.axes if ax.get_visible()] == ["pro"]
    assert "budget 10 %" in one.texts[0].get_text()
    assert report.figures.has_budget_sweep(pd.concat([five, make_runs(errors, truths, fractions=(0.10,))]))


def test_estimate_vs_truth_draws_the_best_other_method_by_default(synth):
    """Only the baseline was drawn unless --also was given, so a new user thought a method was missing."""
    truths, errors = synth  # lite: hspr sd 0.01, uniform 0.05, atlas 0.02; pro: hspr and uniform
    runs = make_runs(errors, truths)
    assert report.figures.best_other_method(runs, "hspr", 0.10) == "atlas"
    assert report.figures.best_other_method(runs, "atlas", 0.10) == "hspr"
    assert report.figures.best_other_method(runs[runs["method"] == "hspr"], "hspr", 0.10) is None
    fig = report.figures.figure_estimate_vs_truth(runs, "hspr", report.figures.best_other_method(runs, "hspr", 0.10))
    assert "atlas" in [t.get_text() for t in fig.legends[0].get_texts()]
    fig = report.figures.figure_estimate_vs_truth(runs, "hspr", report.figures.best_other_methods(runs, "hspr", 0.10))
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["hspr", "atlas", "uniform", "±2 pp"]
    panels = {ax.get_title(): {c.get_label() for c in ax.collections} for ax in fig.axes if ax.get_visible()}
    assert {"hspr", "atlas"} <= panels["lite"] and "uniform" not in panels["lite"]
    assert {"hspr", "uniform"} <= panels["pro"] and "atlas" not in panels["pro"]


def test_make_figures_passes_the_best_other_method_when_also_is_not_given(tmp_path, synth, monkeypatch):
    truths, errors = synth
    seen = {}

    def spy(runs, baseline, also=None, budget_fraction=None):
        seen.update(baseline=baseline, also=also)
        return None

    monkeypatch.setattr(report.figures, "figure_estimate_vs_truth", spy)
    report.make_figures(make_runs(errors, truths), tmp_path, "hspr", formats=("png",))
    # a new-user trial: one method for all banks left a bank's best method out (atlas ran on lite only)
    assert seen == {"baseline": "hspr", "also": {"lite": "atlas", "pro": "uniform"}}
    report.make_figures(make_runs(errors, truths), tmp_path, "hspr", also="uniform", formats=("png",))
    assert seen["also"] == "uniform"


def test_runs_of_a_stopping_rule_keep_their_tasks_run_in_every_table(tmp_path, synth):
    """A hostile trial: `hspr report` dropped the tasks run of `[stop W pp]` rows (replay --csv showed them)."""
    truths, errors = synth
    runs = make_runs(errors, truths, (0.10,), {("lite", "hspr"): 0.02, ("pro", "hspr"): 0.03})
    stopped = runs[runs["method"] == "hspr"].assign(method="hspr[stop 2 pp]")
    stopped["n_queried"] = np.where(stopped["bank"] == "lite", 20, 12)
    runs = pd.concat([runs, stopped], ignore_index=True)
    table = report.comparison_table(runs)
    got = table.set_index(["bank", "method"])["mean_tasks_run"]
    assert got[("lite", "hspr[stop 2 pp]")] == 20 and got[("pro", "hspr[stop 2 pp]")] == 12
    assert np.isnan(got[("lite", "hspr")])
    md = report.comparison_markdown(table)
    assert "| tasks run |" in md and "| 20.0 (100 % early) |" in md  # budget 30, every run stopped at 20
    out = tmp_path / "rep"
    res = CliRunner().invoke(_cli(), ["report", str(_write(tmp_path / "r.json", runs)), "--out-dir", str(out),
                                      "--no-figures", "--n-resamples", "100"])
    assert res.exit_code == 0, res.output
    assert "tasks run" in res.output and "tasks run" in (out / "comparison.md").read_text()
    assert pd.read_csv(out / "comparison.csv").set_index(["bank", "method"]).loc[("pro", "hspr[stop 2 pp]"),
                                                                                  "mean_tasks_run"] == 12
    # one early stop among many runs: a mean of 29.98 printed as 30.0 had hidden it
    few = stopped.assign(n_queried=30)
    few.loc[few.index[0], "n_queried"] = 20
    row = report.comparison_table(few).set_index(["bank", "method"]).loc[(few["bank"].iloc[0], "hspr[stop 2 pp]")]
    n = int((few["bank"] == few["bank"].iloc[0]).sum())
    assert row["stopped_early"] == pytest.approx(1 / n) and row["mean_tasks_run"] == pytest.approx(30 - 10 / n)
    assert f"({100 / n:.0f} % early)" in report.comparison_markdown(report.comparison_table(few))
    plain = report.comparison_markdown(report.comparison_table(runs[runs["method"] != "hspr[stop 2 pp]"].drop(columns="n_queried")))
    assert "tasks run" not in plain


def test_figures_draw_a_dollar_in_a_label_as_text(tmp_path, synth):
    """A hostile trial: a bank label 'a$^{$b' (a --bank label, a file name) raised matplotlib's mathtext
    error in `hspr report` after the tables were written, and '$x$' was drawn as math; `live plot` too."""
    from hspr.report.runplot import figure_run, save_figure

    truths, errors = synth
    runs = make_runs(errors, truths, (0.05, 0.10), {("lite", "hspr"): 0.02})
    runs["bank"] = runs["bank"].replace({"lite": "a$^{$b", "pro": "$x$"})
    paths = report.make_figures(runs, tmp_path, "hspr", formats=("png", "svg"))
    assert len(paths) == 6
    svg = (tmp_path / "estimate_vs_truth.svg").read_text()
    assert "a$^{$b" in svg and "$x$" in svg  # the labels as typed, not parsed
    path = [{"n": 0, "point": 0.3, "lower": 0.1, "upper": 0.5}, {"n": 1, "point": 0.4, "lower": 0.2, "upper": 0.6}]
    save_figure(figure_run(path, "session x$^{$y.hspr", stop_width_pp=5.0), tmp_path / "run.svg")
    assert "x$^{$y" in (tmp_path / "run.svg").read_text()


def test_runs_of_one_label_made_with_other_settings_are_not_merged(tmp_path, synth):
    """A hostile trial: `--config cA/cfg.json` and `--config cB/cfg.json` both gave runs labelled
    hspr[config=cfg]; the report kept the second file's and dropped the first's with a note."""
    truths, errors = synth
    runs = make_runs(errors, truths)
    a = _write(tmp_path / "a.json", runs.assign(settings="aaaaaaaaaaaa"))
    b = _write(tmp_path / "b.json", runs.assign(settings="bbbbbbbbbbbb", estimate=runs["estimate"] + 0.01))
    with pytest.raises(ReportError, match=r"runs of 'hspr' on 'lite' in .*a\.json \(settings aaaaaaaaaaaa\), "
                                          r".*b\.json \(settings bbbbbbbbbbbb\) share their label"):
        report.read_results([a, b])
    again = _write(tmp_path / "again.json", runs.assign(settings="aaaaaaaaaaaa", estimate=runs["estimate"] + 0.01))
    with pytest.warns(report.ReportWarning, match="the copy from the file given last is used"):  # a re-run: replaces
        got = report.read_results([a, again])
    assert np.allclose(got.sort_values(list(report.RUN_KEY))["estimate"],
                       runs.sort_values(list(report.RUN_KEY))["estimate"] + 0.01)
    old = _write(tmp_path / "old.json", runs)  # results written before runs carried settings
    with pytest.warns(report.ReportWarning, match="the copy from the file given last is used"):
        report.read_results([old, b])
    # a second hostile trial: with other query seeds the runs do not overlap, and one row averaged the two
    c = _write(tmp_path / "c.json", runs.assign(settings="cccccccccccc", seed=runs["seed"] + 100))
    with pytest.raises(ReportError, match=r"a\.json \(settings aaaaaaaaaaaa\), .*c\.json \(settings cccccccccccc\) "
                                          "share their label .* would mix two experiments in one row"):
        report.read_results([a, c])
    lite = runs[runs["bank"] == "lite"]
    c_other_bank = _write(tmp_path / "d.json", lite.assign(settings="cccccccccccc", bank="other"))
    assert set(report.read_results([a, c_other_bank])["bank"]) == {*runs["bank"], "other"}  # per bank: no clash


def test_replay_records_carry_a_digest_of_the_settings():
    from hspr.methods import get_method
    from hspr.replay import settings_digest
    from hspr.stopping import StoppingRule, WidthBelow

    base = settings_digest(get_method("hspr", config={"n_nodes": 256}))
    assert base == settings_digest(get_method("hspr", config={"n_nodes": 256}))  # deterministic
    assert base != settings_digest(get_method("hspr", config={"n_nodes": 256, "rank": 1}))
    assert settings_digest(get_method("uniform"), WidthBelow(45.0)) != settings_digest(get_method("uniform"),
                                                                                         WidthBelow(45.0, min_tasks=5))
    assert len(base) == 12 and int(base, 16) >= 0

    class AfterN(StoppingRule):  # a rule of the user's own, not a dataclass (a mypy triage: asdict raised TypeError)
        def __init__(self, n):
            self.n = n

        def check(self, session, estimate):
            return "n" if session.n_queried >= self.n else None

    uniform = get_method("uniform")
    assert settings_digest(uniform, AfterN(3)) == settings_digest(uniform, AfterN(3)) != settings_digest(uniform, AfterN(4))


def test_terminal_tables_print_bank_labels_with_brackets_as_typed(synth):
    """A hostile trial: the heading read 'B = 6 on base, 6 on base' where the second bank is
    'base[stop 45 pp]': rich took '[stop 45 pp]' for a markup tag and dropped it."""
    from rich.console import Console

    truths, errors = synth
    runs = make_runs(errors, truths)
    runs["bank"] = runs["bank"].replace({"pro": "lite[stop 45 pp]"})
    console = Console(record=True, width=250)
    for t in report.comparison_rich(report.comparison_table(runs)):
        console.print(t)
    text = console.export_text()
    assert "on lite[stop 45 pp])" in text  # the heading
    assert "│ lite[stop 45 pp] " in text  # the rows


def test_run_variants_left_out_of_the_macro_mae_are_named(synth):
    """A session-57 review: a '[batch K]' bank was left out of the macro MAE and the pooled paired rows with no word
    (the header names only the bank/protocol rows); the file and the terminal now name it, and the macro and the
    pooled row are those of the plain banks."""
    from rich.console import Console

    truths, errors = synth  # lite and pro
    runs = make_runs(errors, truths)
    extra = runs[runs["bank"] == "pro"].assign(bank="pro[batch 5]", estimate=lambda d: 2 * d["estimate"] - d["truth"])
    shift = runs[runs["bank"] == "pro"].assign(bank="pro/strongest-3")
    both = pd.concat([runs, extra, shift], ignore_index=True)
    table = report.comparison_table(both)
    plain = report.comparison_table(runs)
    macro = lambda t: t[t["bank"] == MACRO].set_index("method")["mae_pp"]  # noqa: E731
    pd.testing.assert_series_equal(macro(table), macro(plain))
    said = ("Not in the macro MAE nor in the pooled paired rows: pro[batch 5] (run variants or task subsets: both take "
            "each bank's plain runs only).")
    assert said in report.comparison_markdown(table) and said not in report.comparison_markdown(plain)
    console = Console(record=True, width=250)
    for t in report.comparison_rich(table):
        console.print(t)
    assert said in " ".join(console.export_text().split())
    def pooled(r):  # Holm aside: its family grows by the variant's rows
        p = report.paired_analysis(r, "hspr", n_resamples=99)
        return p[p["bank"] == POOLED].drop(columns="p_holm").reset_index(drop=True)
    pd.testing.assert_frame_equal(pooled(both), pooled(runs))


def test_run_variants_are_paired_with_the_same_method_s_plain_runs(tmp_path):
    """A session-57 note: `hspr report` did not pair `[batch K]` runs with the one-task-at-a-time runs (only a
    benchmark did). Each variant is compared with the same method's plain runs on the same targets: a known
    difference of +1 pp on every target is recovered, a method the variant left unchanged has no row, Holm runs over
    these rows alone, and the answer does not depend on the order of the runs."""
    rng = np.random.default_rng(4)
    truths = np.linspace(0.2, 0.7, 12)
    plain = rng.uniform(0.01, 0.03, (2, 12))
    errors = {("lite", "hspr"): plain, ("lite[batch 5]", "hspr"): plain + 0.01 / 1.1,  # make_runs scales by 1.1
              ("lite", "uniform"): rng.normal(0, 0.04, (3, 12)), ("lite[batch 10]", "hspr"): plain - 0.005 / 1.1}
    errors[("lite[batch 5]", "uniform")] = errors[("lite", "uniform")]
    runs = make_runs(errors, {"lite": truths, "lite[batch 5]": truths, "lite[batch 10]": truths})
    runs["target"] = runs["target"].str.replace(r"^.*_a", "lite_a", regex=True)  # the same agents in every variant
    v = report.variant_analysis(runs, n_resamples=500)
    assert v["method"].tolist() == ["hspr[batch 5]", "hspr[batch 10]"]  # 5 before 10: numbers by value
    assert (v["baseline"] == "hspr").all() and (v["bank"] == "lite").all() and (v["n_targets"] == 12).all()
    np.testing.assert_allclose(v["mean_diff_pp"], [1.0, -0.5], atol=1e-9)
    np.testing.assert_allclose(v[["ci_low_pp", "ci_high_pp"]].to_numpy(), [[1.0, 1.0], [-0.5, -0.5]], atol=1e-9)
    assert v["n_baseline_better"].tolist() == [12, 0] and v["n_method_better"].tolist() == [0, 12]
    np.testing.assert_allclose(v["p_holm"], report.holm(v["p_value"]))
    assert v.attrs["unchanged"] == {"lite[batch 5]": ["uniform"]}
    again = report.variant_analysis(runs.sample(frac=1.0, random_state=2), n_resamples=500)
    pd.testing.assert_frame_equal(again, v)
    assert report.variant_analysis(runs[runs["bank"] == "lite"], n_resamples=500).empty
    with pytest.raises(ReportError, match="n_resamples must be a whole number"):
        report.variant_analysis(runs[runs["bank"] == "lite"], n_resamples=0)
    # the report writes variants.md / .csv with variants only, and calls one left from an earlier report stale
    rep = report.write_report(runs, tmp_path, n_resamples=200, figures=False)
    assert [p.name for p in rep["paths"]] == [*report.TABLE_FILES, *report.VARIANT_FILES]
    md = (tmp_path / "variants.md").read_text()
    assert md.startswith("# Run variants against the plain runs") and "| 10 % | hspr[batch 5] | lite | 12 | +1.000 |" in md
    assert "runs that never reached it): lite[batch 5]: uniform." in md
    assert pd.read_csv(tmp_path / "variants.csv")["method"].tolist() == ["hspr[batch 5]", "hspr[batch 10]"]
    rep = report.write_report(runs[runs["bank"] == "lite"], tmp_path, n_resamples=200, figures=False)
    assert [p.name for p in rep["paths"]] == list(report.TABLE_FILES)
    assert sorted(p.name for p in rep["stale"]) == sorted(report.VARIANT_FILES)
    # a hostile re-trial: a --tasks subset ('lite[150 tasks]', other tasks and budget) was paired with 'lite' and the
    # report refused both; a variant of the subset pairs with the subset
    from hspr.report.inputs import plain_label

    assert [plain_label(b) for b in ("lite[batch 5]", "lite[150 tasks]", "lite[150 tasks][batch 5]",
                                     "lite[stop 5 pp][batch 10]", "v/bash-only[stop 2.5 pp]", "[batch 5]")] == [
        "lite", None, "lite[150 tasks]", "lite[stop 5 pp]", "v/bash-only", None]
    sub = runs[runs["bank"].isin(["lite", "lite[batch 5]"])].assign(
        bank=lambda d: d["bank"].str.replace("lite", "lite[150 tasks]", regex=False), budget=15,
        truth=lambda d: d["truth"] / 2, estimate=lambda d: d["estimate"] / 2)
    both = pd.concat([runs[runs["bank"] == "lite"], sub], ignore_index=True)
    v2 = report.variant_analysis(both, n_resamples=200)
    assert v2["method"].tolist() == ["hspr[batch 5]"] and v2["bank"].tolist() == ["lite[150 tasks]"]
    np.testing.assert_allclose(v2["mean_diff_pp"], [0.5], atol=1e-9)
    # a variant with no plain run at its budget compares nothing: it names no method as unchanged
    other = runs[runs["bank"] == "lite[batch 5]"].assign(budget_fraction=0.05)
    none = report.variant_analysis(pd.concat([runs[runs["bank"] == "lite"], other]), n_resamples=200)
    assert none.empty and none.attrs["unchanged"] == {} and none.attrs["unpaired"] == ["lite[batch 5]"]
    assert v.attrs["unpaired"] == []


def test_per_target_errors_and_variants_have_the_same_bits_in_any_run_order():
    """An audit: a target's mean over 10 seeds summed in the runs' order, so files given in another order moved it by
    1e-16, and a variant identical to its plain runs got a row of 'changed' errors. And a variant that changed nothing
    at one budget of two lost that budget's row unsaid: it is named."""
    rng = np.random.default_rng(11)
    truths = np.linspace(0.2, 0.7, 40)
    err = rng.normal(0, 0.037, (10, 40))
    runs = make_runs({("lite", "uniform"): err, ("lite[batch 10]", "uniform"): err}, {"lite": truths,
                     "lite[batch 10]": truths})
    runs["target"] = runs["target"].str.replace(r"^.*_a", "lite_a", regex=True)
    keys = ["budget_fraction", "bank", "method", "target"]
    ref = report.per_target_errors(runs).sort_values(keys, ignore_index=True)
    for state in range(5):
        again = report.per_target_errors(runs.sample(frac=1.0, random_state=state)).sort_values(keys, ignore_index=True)
        assert (again["abs_err_pp"].to_numpy() == ref["abs_err_pp"].to_numpy()).all()  # to the bit
        v = report.variant_analysis(runs.sample(frac=1.0, random_state=state), n_resamples=200)
        assert v.empty and v.attrs["unchanged"] == {"lite[batch 10]": ["uniform"]}
    # unchanged at 5 %, changed at 10 %: the 10 % row, and 'uniform at 5 %' named
    two = make_runs({("lite", "uniform"): err}, {"lite": truths}, fractions=(0.05, 0.10))
    var = two.assign(bank="lite[batch 10]")
    var.loc[var["budget_fraction"] == 0.10, "estimate"] += 0.01
    both = pd.concat([two, var], ignore_index=True).assign(target=lambda d: d["target"].str.replace(r"^.*_a", "a", regex=True))
    v = report.variant_analysis(both, n_resamples=200)
    assert v["budget_fraction"].tolist() == [0.10] and v.attrs["unchanged"] == {"lite[batch 10]": ["uniform at 5 %"]}
    e10 = err * 1.1  # make_runs' errors at 10 %
    np.testing.assert_allclose(v["mean_diff_pp"], [100 * (np.abs(e10 + 0.01) - np.abs(e10)).mean()], rtol=1e-12)


def test_shift_protocols_pool_without_their_run_variants():
    """With shift protocols only, the pooled paired rows pool them; a run variant of one of them holds the same
    targets again and is not pooled (a batch study on bash-only pooled each agent four times, and was warned about)."""
    from hspr.report.inputs import pooled_banks

    assert pooled_banks(["verified/bash-only[batch 10]", "verified/forward-20", "verified/bash-only"]) == [
        "verified/bash-only", "verified/forward-20"]
    assert pooled_banks(["lite[batch 5]", "lite", "pro"]) == ["lite", "pro"]
    assert pooled_banks(["x[batch 5]"]) == ["x[batch 5]"]  # a variant alone: nothing else to pool
    assert report.bank_order(["lite[batch 10]", "pro", "lite[batch 5]", "lite"]) == [
        "lite", "lite[batch 5]", "lite[batch 10]", "pro"]


def test_terminal_macro_table_says_it_is_not_a_four_bank_macro(synth):
    """A trial: comparison.md said a two-bank macro is not comparable with the paper's, the terminal did not."""
    from rich.console import Console

    truths, errors = synth  # lite and pro
    console = Console(record=True, width=250)
    for t in report.comparison_rich(report.comparison_table(make_runs(errors, truths))):
        console.print(t)
    assert ("This macro averages 2 of the paper's four banks (verified, full not run): it is not comparable with a "
            "four-bank macro MAE.") in console.export_text()


def test_seed_metrics_refuses_arrays_it_would_broadcast():
    """A hostile trial: seed_metrics([0.5, 0.2], [0.4]) broadcast and returned an MAE; [] raised numpy's error."""
    from hspr.report.stats import seed_metrics

    for est, truth in (([0.5, 0.2], [0.4]), ([], []), ([[0.5]], [[0.5]])):
        with pytest.raises(ValueError, match="est and truth must be 1-D arrays of one length >= 1"):
            seed_metrics(est, truth)
    with pytest.raises(ValueError, match=r"truth must hold scores on the 0-1 scale; entry 1 is 45.0 \(a score in percent"):
        seed_metrics([0.5, 0.2], [0.4, 45.0])
    with pytest.raises(ValueError, match="est must hold scores on the 0-1 scale; entry 0 is nan"):
        seed_metrics([np.nan, 0.2], [0.4, 0.2])
    got = seed_metrics([0.5, 0.2, 0.9], [0.4, 0.2, 0.6])
    assert got["mae_pp"] == pytest.approx(100 * 0.4 / 3) and got["maxerr_pp"] == pytest.approx(30.0)
    assert got["kendall_tau_b"] == pytest.approx(1.0)


# ---------------------------------------------------------------------------------- order invariance, trial findings
def test_tables_are_the_same_bytes_in_any_file_or_run_order(tmp_path, synth):
    """A trial: row order and figure colours followed first appearance, and the last digit of a mean
    followed the run order; the tables now depend on the runs only."""
    truths, errors = synth
    runs = make_runs(errors, truths, (0.05, 0.10), {("lite", "hspr"): 0.02, ("pro", "hspr"): 0.03})
    a = report.comparison_table(runs)
    shuffled = runs.sample(frac=1.0, random_state=7).reset_index(drop=True)
    b = report.comparison_table(shuffled)
    pd.testing.assert_frame_equal(a, b, check_exact=True)
    assert report.comparison_markdown(a) == report.comparison_markdown(b)
    methods = list(dict.fromkeys(a["method"]))
    assert methods == ["hspr", "uniform", "atlas"]  # registry order, not the order of the runs
    one = _write(tmp_path / "one.json", runs[runs["method"] != "atlas"])
    two = _write(tmp_path / "two.json", runs[runs["method"] == "atlas"])
    texts = []
    for k, files in enumerate(([one, two], [two, one])):
        out = tmp_path / f"rep{k}"
        res = CliRunner().invoke(_cli(), ["report", *map(str, files), "--out-dir", str(out), "--no-figures",
                                          "--n-resamples", "100", "--baseline", "hspr"])
        assert res.exit_code == 0, res.output
        texts.append([(out / n).read_bytes() for n in ("comparison.md", "comparison.csv", "paired.md", "paired.csv")])
    assert texts[0] == texts[1]


def test_methods_on_different_targets_are_not_ranked_and_the_files_say_so(tmp_path, synth):
    """A trial: a MaxErr over 10 of 14 targets was marked best, and only stderr said the set differed."""
    truths, errors = synth
    runs = make_runs(errors, truths)
    runs = runs[~((runs["method"] == "uniform") & (runs["bank"] == "lite") & (runs["target"] == "lite_a00"))]
    table = report.comparison_table(runs)
    lite = table[(table["bank"] == "lite")]
    assert not lite["ranked"].any() and lite["mae_rank"].isna().all()
    assert table[table["bank"] == MACRO]["mae_rank"].isna().all()  # lite counts in the macro
    assert table[table["bank"] == "pro"]["ranked"].all() and table[table["bank"] == "pro"]["mae_rank"].notna().all()
    md = report.comparison_markdown(table)
    assert "Not ranked: lite (the methods were replayed on different targets" in md
    lite_rows = [line for line in md.splitlines() if line.startswith("| lite |")]
    assert lite_rows and not any("**" in line for line in lite_rows)
    assert report.comparison_table(make_runs(errors, truths))["ranked"].all()


def test_copies_that_differ_are_named_apart_from_identical_ones(tmp_path, synth):
    truths, errors = synth
    runs = make_runs(errors, truths)
    a = _write(tmp_path / "a.json", runs)
    same = _write(tmp_path / "same.json", runs)
    moved = _write(tmp_path / "moved.json", runs.assign(estimate=np.where(runs["method"] == "uniform",
                                                                          runs["estimate"] + 0.0005, runs["estimate"])))
    with pytest.warns(ReportWarning, match="the copies are identical"):
        report.read_results([a, same])
    n_uniform = int((runs["method"] == "uniform").sum())
    with pytest.warns(ReportWarning, match=f"{n_uniform} of them differ between copies .* depends on the order") as got:
        report.read_results([a, moved])
    assert "record different" not in str(got[0].message)
    # files made on two processors: the warning names the fields on which they differ (a hostile trial), and a file
    # without the field (older) is left out of it
    for path, env in ((a, {"numpy": "2.4.6", "processor": "AMD EPYC", "blas": "openblas 0.3.31 (Haswell kernels)"}),
                      (moved, {"numpy": "2.4.6", "processor": "Intel Xeon", "blas": "openblas 0.3.31 (SkylakeX kernels)"}),
                      (same, {"numpy": "2.4.6"})):
        path.write_text(json.dumps({**json.loads(path.read_text()), "environment": env}))
    with pytest.warns(ReportWarning) as got:
        report.read_results([a, moved, same])
    text = " ".join(str(w.message) for w in got)
    assert (f"; the files holding them record different processor 'AMD EPYC' in {a}, 'Intel Xeon' in {moved}; blas 'openblas 0.3.31 "
            f"(Haswell kernels)' in {a}, 'openblas 0.3.31 (SkylakeX kernels)' in {moved}, which can move") in text, text
    assert "numpy" not in text.split("record different")[1]
    # only the files that hold a differing run are compared (a re-trial: a file of other runs was named), and a long
    # value is cut
    other = _write(tmp_path / "other.json", runs[runs["method"] != "uniform"])
    other.write_text(json.dumps({**json.loads(other.read_text()), "environment": {"processor": "x" * 3000}}))
    with pytest.warns(ReportWarning) as got:
        report.read_results([a, moved, other])
    text = " ".join(str(w.message) for w in got)
    assert "record different processor 'AMD EPYC'" in text and str(other) not in text.split("record different")[1], text
    moved.write_text(json.dumps({**json.loads(moved.read_text()), "environment": {"processor": "y" * 3000}}))
    with pytest.warns(ReportWarning) as got:
        report.read_results([a, moved])
    text = " ".join(str(w.message) for w in got)
    assert "y" * 60 not in text and "y" * 50 in text, text
    # a method without a posterior mean replayed alone, and again beside one with it: its blank means are
    # None in one file and NaN once concatenated with a column of numbers, and its copies are the same (a trial
    # was told 84 of 84 identical runs differ)
    with_hspr = make_runs(errors, truths, intervals={("lite", "hspr"): 0.02, ("pro", "hspr"): 0.03})
    with_hspr["mean"] = [e if m == "hspr" else None for e, m in zip(with_hspr["estimate"], with_hspr["method"])]
    alone = _write(tmp_path / "alone.json", with_hspr[with_hspr["method"] == "uniform"])
    both = _write(tmp_path / "both.json", with_hspr)
    for order in ([alone, both], [both, alone]):
        with pytest.warns(ReportWarning, match=f"{n_uniform} run.* the copies are identical"):
            report.read_results(order)


def test_one_run_without_an_interval_keeps_the_others_coverage(tmp_path, synth):
    """A trial: one run's null interval blanked the method's coverage, and the legend said it gives none."""
    truths, errors = synth
    runs = make_runs(errors, truths, intervals={("lite", "hspr"): 0.02, ("pro", "hspr"): 0.03})
    full = report.comparison_table(runs).set_index(["bank", "method"])
    k = runs.index[(runs["method"] == "hspr") & (runs["bank"] == "lite")][0]
    edited = runs.copy()
    edited.loc[k, ["lower", "upper"]] = None
    with pytest.warns(ReportWarning, match=r"'hspr' on bank 'lite' at budget 0.1: 1 of 24 runs have no 90 % interval"):
        got = report.read_results([_write(tmp_path / "e.json", edited)])
    cov = report.comparison_table(got).set_index(["bank", "method"]).loc[("lite", "hspr"), "coverage_90"]
    rest = edited.drop(index=k)
    rest = rest[(rest["method"] == "hspr") & (rest["bank"] == "lite")]
    want = np.mean((rest["lower"] <= rest["truth"]) & (rest["truth"] <= rest["upper"]))
    assert cov == pytest.approx(want) and not np.isnan(full.loc[("lite", "hspr"), "coverage_90"])


def test_runs_of_one_bank_and_fraction_with_other_budgets_are_refused(synth):
    truths, errors = synth
    runs = make_runs(errors, truths)
    runs.loc[runs.index[3], "budget"] = 50
    with pytest.raises(ReportError, match=r"bank 'lite' at budget fraction 0.1 has runs of different budgets: 30 .*; 50 "):
        report.comparison_table(runs)


def test_a_report_names_figures_left_by_an_earlier_one(tmp_path, synth):
    truths, errors = synth
    out = tmp_path / "rep"
    sweep = _write(tmp_path / "sweep.json", make_runs(errors, truths, (0.05, 0.10)))
    one = _write(tmp_path / "one.json", make_runs(errors, truths))
    first = CliRunner().invoke(_cli(), ["report", str(sweep), "--out-dir", str(out), "--n-resamples", "100"])
    assert first.exit_code == 0, first.output
    assert (out / "budget_curves.png").exists()
    res = CliRunner().invoke(_cli(), ["report", str(one), "--out-dir", str(out), "--n-resamples", "100"])
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())
    assert "figure file(s) in" in text and "budget_curves.png, budget_curves.svg" in text
    assert (out / "budget_curves.png").exists()  # left in place, never deleted


def test_macro_and_pooled_rows_cover_the_paper_banks_only_when_one_is_there():
    """A trial: Pro, Multimodal and Terminal-Bench (a pass-rate bank) were averaged into one macro
    MAE, and pooled in the paired table; the README says the macro covers the four paper banks."""
    from hspr.report import MACRO, POOLED, comparison_markdown, comparison_table, paired_analysis
    from hspr.report.inputs import macro_banks

    rng = np.random.default_rng(0)
    rows = []
    for bank, err in (("pro", 0.01), ("verified", 0.02), ("multimodal", 0.05), ("terminal-bench", 0.10)):
        for m, scale in (("hspr", 1.0), ("uniform", 2.0)):
            for t in range(6):
                truth = 0.2 + 0.1 * t
                rows.append({"bank": bank, "method": m, "fold": 0, "target": f"{bank}-{t}", "seed": 0, "budget": 10,
                             "budget_fraction": 0.1, "estimate": truth + scale * err * rng.choice([-1, 1]),
                             "truth": truth})
    runs = pd.DataFrame(rows)
    assert macro_banks(runs["bank"]) == ["verified", "pro"]
    assert macro_banks(["mine", "multimodal", "verified/bash-only"]) == ["mine", "multimodal"]
    t = comparison_table(runs)
    macro = t[(t["bank"] == MACRO) & (t["method"] == "hspr")].iloc[0]
    assert macro["n_banks"] == 2 and macro["mae_pp"] == pytest.approx((1.0 + 2.0) / 2)
    assert "Not in the macro MAE: multimodal, terminal-bench" in comparison_markdown(t)
    pooled = paired_analysis(runs, "hspr", n_resamples=99)
    pooled = pooled[pooled["bank"] == POOLED].iloc[0]
    assert pooled["n_targets"] == 12  # verified and pro targets only
    # a new-user trial: a macro of 2 of the 4 paper banks was not flagged, and one of 1 bank sat in the CSV
    assert "averages 2 of the paper's four banks (lite, full not run)" in " ".join(comparison_markdown(t).split())
    one = comparison_table(runs[runs["bank"].isin(["verified", "multimodal"])])
    assert not (one["bank"] == MACRO).any()
    assert ("No macro MAE: verified is the only paper bank here, and the other banks (multimodal) are not averaged"
            in " ".join(comparison_markdown(one).split()))


def test_budget_curves_use_a_log_axis_when_budgets_crowd_one_end():
    """A trial: budgets 0.2, 0.4, 1 and 2 % printed their tick labels over each other."""
    from hspr.report import figure_budget_curves

    def runs(fracs):
        return pd.DataFrame([{"bank": "b", "method": m, "fold": 0, "target": f"t{t}", "seed": 0, "budget": int(1000 * f),
                              "budget_fraction": f, "estimate": 0.3 + 0.01 * t + (0.02 if m == "uniform" else 0.01) / f ** 0.5 / 30,
                              "truth": 0.3 + 0.01 * t} for f in fracs for m in ("hspr", "uniform") for t in range(5)])

    crowded = figure_budget_curves(runs([0.002, 0.004, 0.01, 0.02]))
    assert {ax.get_xscale() for ax in crowded.axes} == {"log"}
    assert [t.get_text() for t in crowded.axes[-1].get_xticklabels()] == ["0.2", "0.4", "1", "2"]
    sweep = figure_budget_curves(runs([0.05, 0.10, 0.15, 0.20]))
    assert {ax.get_xscale() for ax in sweep.axes} == {"linear"}
    # a hostile trial: an even sweep of 8 budgets, and budgets crowded at both ends, had turned log
    even = figure_budget_curves(runs([0.025 * k for k in range(1, 9)]))
    both = figure_budget_curves(runs([0.0125, 0.025, 0.15, 0.1625]))
    assert {ax.get_xscale() for ax in even.axes} == {ax.get_xscale() for ax in both.axes} == {"linear"}
    # a new-user trial: a method equal to the baseline was hidden under its line; each now has its own marker,
    # and the baseline is drawn beneath the others
    tied = runs([0.05, 0.10]).query("method == 'hspr'")
    lines = figure_budget_curves(pd.concat([tied, tied.assign(method="hspr[x]")]), baseline="hspr").axes[0].get_lines()
    by = {ln.get_label(): ln for ln in lines}
    assert by["hspr"].get_marker() != by["hspr[x]"].get_marker()
    assert by["hspr"].get_zorder() < by["hspr[x]"].get_zorder() and by["hspr"].get_linewidth() > by["hspr[x]"].get_linewidth()


def test_report_refuses_runs_labelled_like_its_aggregate_rows():
    """A hostile trial: library runs labelled 'macro' or 'pooled' collided with the aggregate rows."""
    from hspr.report import ReportError, comparison_table

    rows = [{"bank": b, "method": "uniform", "fold": 0, "target": "t", "seed": 0, "budget": 5, "budget_fraction": 0.1,
             "estimate": 0.5, "truth": 0.5} for b in ("pro", "macro")]
    with pytest.raises(ReportError, match="^runs: runs labelled bank 'macro', a name the report gives its aggregate rows"):
        comparison_table(pd.DataFrame(rows))
    # read from files: the file that holds them is named (a hostile trial was told 'runs:')
    with pytest.raises(ReportError, match="^b.json: runs labelled bank 'macro'"):
        comparison_table(pd.DataFrame(rows).assign(source_file=["a.json", "b.json"]))


def test_report_refuses_two_matrices_under_one_bank_label(tmp_path):
    """A re-trial: m1.csv and sub/m1.csv (no agent in common, the same task count) were pooled as one bank."""
    from hspr.cli import main
    from hspr.data.build import write_wide_csv

    from .conftest import simulate_matrix

    (tmp_path / "sub").mkdir()
    outs = []
    for k, path in enumerate((tmp_path / "m1.csv", tmp_path / "sub" / "m1.csv")):
        m = simulate_matrix(10, 30, seed=k)[0]
        write_wide_csv(m.__class__([f"x{k}_{a}" for a in m.agents], m.tasks, m.values), path)
        outs.append(tmp_path / f"r{k}.json")
        res = CliRunner().invoke(main, ["replay", "--matrix", str(path), "--methods", "uniform", "--seeds", "0",
                                        "--budget", "0.2", "-q", "--out", str(outs[-1])])
        assert res.exit_code == 0, res.output
        assert {r["matrix_digest"] for r in json.loads(outs[-1].read_text())["runs"]} != set()
    res = CliRunner().invoke(main, ["report", *map(str, outs), "--out-dir", str(tmp_path / "rep"), "--no-figures"])
    assert res.exit_code == 2 and "bank 'm1' holds runs of different matrices" in " ".join(res.output.split()), res.output
    # a hostile trial: one file stripped of its digests was pooled with the other matrix's runs without a word
    doc = json.loads(outs[0].read_text())
    for r in doc["runs"]:
        r.pop("matrix_digest")
    bare = tmp_path / "bare.json"
    bare.write_text(json.dumps(doc))
    with pytest.warns(report.ReportWarning, match=r"bank 'm1' holds runs with a matrix digest and 10 without \(in .*bare"
                                                  r"\.json: written before digests were recorded, or edited\)"):
        report.read_results([bare, outs[1]])
    with warnings.catch_warnings():  # every run without one (an old file): nothing to say
        warnings.simplefilter("error")
        report.read_results([bare])


def test_report_warns_of_one_matrix_under_two_bank_labels(tmp_path):
    """A trial: a copy of a matrix with its rows shuffled, replayed under its own file name, was counted
    as a second bank in the macro MAE (2.54 -> 2.65 pp) with no word. A re-trial: labels of other budgets,
    which nothing counts twice, were warned about too. Warned: runs of one matrix and protocol for the
    same target, method and budget under two labels."""
    from hspr.cli import main
    from hspr.data.build import write_wide_csv

    from .conftest import simulate_matrix

    m = simulate_matrix(10, 30, seed=0)[0]
    order = np.random.default_rng(1).permutation(m.n_agents)
    write_wide_csv(m, tmp_path / "base.csv")
    write_wide_csv(m.__class__([m.agents[i] for i in order], m.tasks, m.values[order]), tmp_path / "rows.csv")
    write_wide_csv(m.rows(range(7)), tmp_path / "src.csv")
    for k, rows in ((1, range(7, 9)), (2, range(8, 10)), (3, range(9, 10))):
        write_wide_csv(m.rows(rows), tmp_path / f"tg{k}.csv")
    outs = {}
    runs = [("base", "base.csv", [], "0.2"), ("rows", "rows.csv", [], "0.2"), ("rows40", "rows.csv", [], "0.4"),
            *((f"t{k}", "src.csv", ["--targets", str(tmp_path / f"tg{k}.csv")], "0.2") for k in (1, 2, 3)),
            ("stop", "base.csv", ["--stop-width", "30"], "0.2")]
    for name, matrix, extra, budget in runs:
        outs[name] = tmp_path / f"{name}.json"
        label = "base" if name == "stop" else name  # runs of a stopping rule are labelled 'base[stop 30 pp]'
        res = CliRunner().invoke(main, ["replay", "--matrix", str(tmp_path / matrix), *extra, "--bank", label, "--methods",
                                        "uniform", "--seeds", "0", "--budget", budget, "-q", "--out", str(outs[name])])
        assert res.exit_code == 0, res.output

    def report(*names):
        res = CliRunner().invoke(main, ["report", *(str(outs[n]) for n in names), "--out-dir", str(tmp_path / "rep"),
                                        "--no-figures"])
        assert res.exit_code == 0, res.output
        return " ".join(res.output.split())

    assert "banks 'base' and 'rows' hold runs of one matrix" in report("rows", "base") == report("base", "rows")
    assert "same targets, methods and budgets (10 of them)" in report("base", "rows")
    assert "banks 't1/targets:tg1' and 't2/targets:tg2' hold runs of one matrix" in report("t1", "t2")  # a shared target
    assert "same targets, methods and budgets (1 of them)" in report("t1", "t2")
    assert "hold runs of one matrix" not in report("t1", "t3")  # other targets
    assert "hold runs of one matrix" not in report("base", "rows40")  # another budget
    # a hostile trial: a variant label, which neither the macro MAE nor the pooled rows count, was warned about
    assert "hold runs of one matrix" not in report("base", "stop") and "base[stop 30 pp]" in report("base", "stop")


def test_in_memory_runs_get_the_checks_a_results_file_gets(synth):
    """An API trial: replay()'s records were refused by runs_frame as 'a JSON list', read_results failed inside
    pathlib, estimates x 100 gave MAE 3291.6 pp with no word, and n_resamples=0 failed inside scipy."""
    truths, errors = synth
    runs = make_runs(errors, truths)
    records = runs.to_dict("records")
    assert len(report.runs_frame(records)) == len(runs)  # replay()'s output reads as a results file's runs
    with pytest.raises(report.ReportError, match="read_results takes paths of results files, got a dict: .* runs_frame"):
        report.read_results(records)
    with pytest.raises(report.ReportError, match=r"estimate .* is not a score on the 0-1 scale \(in \[-1, 2\]; not %\)"):
        report.comparison_table(runs.assign(estimate=runs["estimate"] * 100))
    with pytest.raises(report.ReportError, match=r"truth .* is not a score on the 0-1 scale \(in \[0, 1\]"):
        report.comparison_table(records[:1] + [{**records[1], "truth": 42.0}])
    for bad in (0, -5, 2.5, True):
        with pytest.raises(report.ReportError, match="n_resamples must be a whole number of bootstrap resamples >= 1"):
            report.paired_analysis(runs, "hspr", n_resamples=bad)
    assert len(report.paired_analysis(runs, "hspr", n_resamples=100))  # a valid count still runs


def test_one_file_holding_two_different_copies_of_a_run_is_refused(tmp_path, synth):
    """A hostile trial: the same file reversed gave hspr MAE 3.677 or 2.236, with a note about file order."""
    truths, errors = synth
    runs = make_runs(errors, truths)
    twin = runs.iloc[[3]].assign(estimate=runs["estimate"].iloc[3] + 0.05)
    bad = _write(tmp_path / "bad.json", pd.concat([runs, twin], ignore_index=True))
    row = runs.iloc[3]
    with pytest.raises(ReportError, match=rf"bad\.json: runs\[3\] and runs\[{len(runs)}\] are the same run "
                                          rf"\('{row['method']}' on '{row['bank']}'.*delete the wrong copies"):
        report.read_results(bad)
    same = _write(tmp_path / "same.json", pd.concat([runs, runs.iloc[[3]]], ignore_index=True))
    with pytest.warns(ReportWarning, match="the copies are identical"):  # an identical copy is counted once
        got = report.read_results(same)
    assert len(got) == len(runs)
    res = CliRunner().invoke(_cli(), ["report", str(bad), "--out-dir", str(tmp_path / "o"), "--no-figures"])
    assert res.exit_code != 0 and "delete the wrong copies" in res.output and "Traceback" not in res.output
    # a re-trial: the same file given twice had its indices counted over both copies (runs[28] of 29 runs)
    with pytest.raises(ReportError, match=rf"runs\[3\] and runs\[{len(runs)}\] are the same run"):
        report.read_results([bad, bad])
    # ... and copies differing only in the 50 % interval were called identical
    half = runs.assign(lower_50=runs["estimate"] - 0.01, upper_50=runs["estimate"] + 0.01)
    twin50 = half.iloc[[3]].assign(lower_50=half["estimate"].iloc[3] - 0.2)
    with pytest.raises(ReportError, match="are the same run"):
        report.read_results(_write(tmp_path / "bad50.json", pd.concat([half, twin50], ignore_index=True)))


def test_a_named_pipe_given_as_results_is_refused_not_waited_on(tmp_path):
    """A hostile trial: `hspr report FIFO` waited for ever for a writer."""
    with unread_fifo(tmp_path / "r.json") as fifo:
        with pytest.raises(ReportError, match=r"r\.json: not a regular file \(a named pipe or a device\?\)"):
            report.read_results(fifo)


def test_a_bar_in_a_label_does_not_break_the_markdown_table(synth):
    """A hostile trial: a hand-edited bank label holding '|' added a column to comparison.md's rows."""
    truths, errors = synth
    runs = make_runs(errors, truths)
    runs["bank"] = runs["bank"].replace({"lite": "my|lite"})
    md = report.comparison_markdown(report.comparison_table(runs))
    rows = [line for line in md.splitlines() if line.startswith("| my\\|lite |")]
    assert rows and all(len(line.replace("\\|", "").split("|")) == 11 for line in rows)  # 9 cells, as every row
    own = runs.assign(bank=runs["bank"].replace({"pro": "my|pro"}))  # a user's own banks only: in the macro MAE
    md = report.comparison_markdown(report.comparison_table(own))
    macro = next(line for line in md.splitlines() if line.startswith("| method |") and "macro MAE" in line)
    assert "my\\|lite MAE" in macro and len(macro.replace("\\|", "").split("|")) == 6  # a re-trial: the header broke


def test_the_coverage_note_says_when_only_the_figure_budget_lacks_intervals(tmp_path, synth):
    """A re-trial: 'no run in the results has a 90 % interval' was said when the 5 % runs had them."""
    truths, errors = synth
    with_int = make_runs(errors, truths, (0.05,), intervals={k: 0.02 for k in errors})
    without = make_runs(errors, truths, (0.10,))
    f = _write(tmp_path / "r.json", pd.concat([with_int, without], ignore_index=True))
    res = CliRunner().invoke(_cli(), ["report", str(f), "--out-dir", str(tmp_path / "o"), "--n-resamples", "100"])
    said = " ".join(res.output.split())
    assert res.exit_code == 0 and "no coverage figure: no run at the figure's budget" in said
    assert "no run in the results has" not in said


def test_python_api_baseline_defaults_to_the_first_method_in_registry_order(synth, tmp_path):
    # a standards audit: paired_analysis / write_report defaulted to the name "hspr", refused runs without it
    truths, errors = synth
    no_hspr = {k: v for k, v in errors.items() if k[1] != "hspr"}
    runs = make_runs(no_hspr, truths)
    paired = report.paired_analysis(runs, n_resamples=200)
    assert set(paired["baseline"]) == {"uniform"}  # registry order: hspr, ..., uniform, ..., atlas
    assert set(paired["method"]) == {"atlas"}
    pd.testing.assert_frame_equal(paired, report.paired_analysis(runs, "uniform", n_resamples=200))
    rep = report.write_report(runs, tmp_path / "r", n_resamples=200, figures=False)
    pd.testing.assert_frame_equal(rep["paired"], paired)
    full = make_runs(errors, truths)
    assert set(report.paired_analysis(full, n_resamples=200)["baseline"]) == {"hspr"}


def test_estimate_vs_truth_note_cuts_a_long_variant_name():
    """A re-trial: `hspr[acquisition=latent,decision=mean,no-group-uncertainty]` made the note wider than the
    panel, which constrained layout then shrank to a thumbnail."""
    long = "hspr[acquisition=latent,decision=mean,no-group-uncertainty]"
    runs = make_runs({("lite", long): np.full((1, 8), 0.01)}, {"lite": np.linspace(0.1, 0.6, 8)})
    fig = report.figures.figure_estimate_vs_truth(runs, long)
    (note,) = _notes(fig)
    assert note.startswith("hspr[acquisition=latent,d...: MAE 1.100 pp,") and len(note.split("\n")[0]) <= 28 + 20


def test_report_notes_the_runs_estimated_from_the_pass_rates(tmp_path, synth):
    """`hspr replay` named the runs `hspr_robust` estimated from the sources' pass rates (step 6); the report of
    its results said nothing of them. It now prints the note and writes it into comparison.md, for those runs only."""
    truths, errors = synth
    runs = make_runs(errors, truths)
    switched = (runs["bank"] == "pro") & (runs["method"] == "hspr") & (runs["seed"] == 0)
    runs["shift"] = [{"pass_rate_maes": [0.05, 0.04]} if s else {"pass_rate_maes": []} for s in switched]
    f = _write(tmp_path / "r.json", runs)
    res = CliRunner().invoke(_cli(), ["report", str(f), "--out-dir", str(tmp_path / "rep"), "--no-figures",
                                      "--n-resamples", "100"])
    assert res.exit_code == 0, res.output
    note = f"pro hspr at 30 tasks: {switched.sum()} of {int(((runs['bank'] == 'pro') & (runs['method'] == 'hspr')).sum())} runs"
    assert switched.sum() == 5 and f"note: {note}" in " ".join(res.output.split())
    md = (tmp_path / "rep" / "comparison.md").read_text()
    assert "## Notes" in md and f"- {note} were estimated from the outcomes seen plus the sources' pass rates" in md
    assert md.count("were estimated from") == 1
    plain = _write(tmp_path / "p.json", runs.drop(columns="shift"))
    res = CliRunner().invoke(_cli(), ["report", str(plain), "--out-dir", str(tmp_path / "rep2"), "--no-figures",
                                      "--n-resamples", "100"])
    assert res.exit_code == 0 and "were estimated from" not in res.output
    assert "## Notes" not in (tmp_path / "rep2" / "comparison.md").read_text()


def test_two_results_files_joined_into_one_are_named_as_such(tmp_path, synth):
    """A re-trial: the help said 'results files, concatenated'; `cat a.json b.json > c.json` then gave only
    'invalid JSON ... (Extra data)'."""
    truths, errors = synth
    one = _write(tmp_path / "a.json", make_runs(errors, truths))
    joined = tmp_path / "c.json"
    joined.write_text(one.read_text() + "\n" + one.read_text())
    res = CliRunner().invoke(_cli(), ["report", str(joined), "--out-dir", str(tmp_path / "rep"), "--no-figures"])
    assert res.exit_code == 2 and "(Extra data) (a second JSON document follows the first: files joined into one? give " \
        "each file on its own)" in " ".join(res.output.split())
    assert "each given as its own argument" in " ".join(CliRunner().invoke(_cli(), ["report", "--help"]).output.split())


def test_a_results_file_cut_off_is_named_as_such(tmp_path, synth):
    """A hostile trial: a results file cut short was called invalid JSON at a line, with no word of why."""
    truths, errors = synth
    text = _write(tmp_path / "a.json", make_runs(errors, truths)).read_text()
    for n, cut in enumerate((len(text) // 2, text.index('"', len(text) // 2) + 3)):  # between values, inside a string
        short = tmp_path / f"cut{n}.json"
        short.write_text(text[:cut])
        res = CliRunner().invoke(_cli(), ["report", str(short), "--out-dir", str(tmp_path / "rep"), "--no-figures"])
        assert res.exit_code == 2 and "(the text ends inside the JSON: the file was cut off" in " ".join(res.output.split())
    # its re-trial: cut inside a literal, or padded with the NUL bytes a crash leaves, it was not said to be cut off
    for n, cut in enumerate(('{"runs": [{"a": tr', '{"runs": [{"a": -', '{"runs": [1e', '{"runs": [{"a": "x' + "\0" * 9,
                             '{"runs": [1,' + "\0" * 9)):
        short = tmp_path / f"lit{n}.json"
        short.write_text(cut)
        res = CliRunner().invoke(_cli(), ["report", str(short), "--out-dir", str(tmp_path / "rep"), "--no-figures"])
        assert res.exit_code == 2 and "the file was cut off" in " ".join(res.output.split()), (cut, res.output)
    short.write_text('{"runs": [{"agent": "caf\\u00')  # cut inside an escape (a second re-trial)
    res = CliRunner().invoke(_cli(), ["report", str(short), "--out-dir", str(tmp_path / "rep"), "--no-figures"])
    assert res.exit_code == 2 and "the file was cut off" in " ".join(res.output.split()), res.output
    # not cut off: a mistake inside the file, or a whole document with more after it (a second re-trial: 'cut off')
    for n, bad in enumerate(('{"runs" 1}', text + "0", text + "\0" * 5, '{"a": "\\u00zz", "b": 1}')):
        (tmp_path / f"bad{n}.json").write_text(bad)
        res = CliRunner().invoke(_cli(), ["report", str(tmp_path / f"bad{n}.json")])
        assert res.exit_code == 2 and "invalid JSON at line" in res.output and "cut off" not in res.output, bad[-20:]


@pytest.mark.parametrize("field, value, needle", [
    ("settings", [1], "'settings' must be a string or null"),
    ("protocol", {"a": 1}, "'protocol' must be a string or null"),
    ("matrix_digest", 7, "'matrix_digest' must be a string or null"),
    ("n_queried", "x", "'n_queried' must be an integer >= 0 or null"),
    ("n_queried", 2.5, "'n_queried' must be an integer >= 0 or null"),
])
def test_hand_edited_optional_fields_are_refused_with_the_run(tmp_path, synth, field, value, needle):
    """An audit: a list as `settings` or `protocol`, or text as `n_queried`, gave a TypeError traceback."""
    truths, errors = synth
    a = make_runs(errors, truths)
    a[field] = None
    a[field] = a[field].astype(object)
    a.at[3, field] = value
    with pytest.raises(ReportError, match=re.escape(f"run 3: {needle}")):
        report.read_results(_write(tmp_path / "a.json", a))


def test_runs_of_another_protocol_under_the_bank_s_own_label_get_a_row_of_their_own(synth):
    """An audit: `replay(..., targets=...)` keeps the plain bank label (only the CLI names it bank/...), and
    the report pooled those runs into the bank's row and its macro MAE."""
    truths, errors = synth
    folds = make_runs(errors, truths)
    shift = make_runs({("lite", "hspr"): np.full((1, 12), -0.2)}, truths).assign(protocol="bash-only")
    runs = report.runs_frame(pd.concat([folds.assign(protocol="folds"), shift]).to_dict("records"))
    table = report.comparison_table(runs)
    alone = report.comparison_table(report.runs_frame(folds.to_dict("records")))
    row = lambda t, b: t[(t["bank"] == b) & (t["method"] == "hspr")]["mae_pp"].item()  # noqa: E731
    assert row(table, "lite") == pytest.approx(row(alone, "lite"))
    assert row(table, "lite/bash-only") == pytest.approx(22.0)  # 0.2 x (1 + 0.1)
    assert row(table, MACRO) == pytest.approx(row(alone, MACRO))
    # a label the CLI already gave its protocol is kept
    named = report.runs_frame(shift.assign(bank="lite/bash-only").to_dict("records"))
    assert set(named["bank"]) == {"lite/bash-only"}


def test_wilcoxon_drops_zero_differences_before_the_exact_test():
    """An audit: scipy's method='auto' took the normal approximation whenever a zero was present, so
    the p-value of 20 differences moved from 0.0027 to 0.0040 when one zero was added."""
    rng = np.random.default_rng(1)
    d = rng.normal(0.4, 1.0, 20)
    exact = stats.wilcoxon(d, method="exact").pvalue
    for zeros in (0, 1, 5):
        got = report.paired_stats(np.concatenate([d, np.zeros(zeros)]), n_resamples=200)
        assert got["p_value"] == pytest.approx(exact, rel=1e-12)


def test_the_figure_s_second_method_does_not_depend_on_the_order_of_the_runs(synth):
    """An audit: two methods tied on MAE were picked by order of appearance in the files."""
    from hspr.report.figures import best_other_method

    truths, _ = synth
    same = np.full((1, 12), 0.01)
    runs = make_runs({("lite", "hspr"): same * 0, ("lite", "stratified"): same, ("lite", "midrange"): same}, truths)
    picks = {best_other_method(r, "hspr", 0.10) for r in (runs, runs.iloc[::-1])}
    assert picks == {"stratified"}  # registry order: stratified before midrange


def test_a_bank_run_only_with_missing_cells_kept_is_not_called_not_run():
    """An audit: `--bank all --no-missing-as-zero` labels Pro's runs pro/missing-kept, and the macro note
    said '(pro not run)', pointing the user the wrong way."""
    truths = {b: np.linspace(0.1, 0.5, 8) for b in ("lite", "verified", "full", "pro/missing-kept")}
    runs = make_runs({(b, m): np.full((1, 8), e) for b in truths for m, e in (("hspr", 0.01), ("uniform", 0.03))},
                     truths)
    text = " ".join(report.comparison_markdown(report.comparison_table(runs)).split())
    assert ("This macro averages 3 of the paper's four banks (pro ran only as pro/missing-kept, which the macro "
            "leaves out: replay it without --no-missing-as-zero to include it): it is not comparable") in text
    assert "pro not run" not in text


def test_summarize_refuses_scores_in_percent(synth):
    """An audit: `summarize` on runs in % gave MAE 350 pp, where `comparison_table` refused them."""
    truths, errors = synth
    runs = make_runs(errors, truths)
    runs[["estimate", "truth"]] *= 100
    with pytest.raises(ReportError, match="is not a score on the 0-1 scale"):
        report.summarize(runs)
    assert report.summarize(make_runs(errors, truths))["mae_pp"].notna().all()


def test_two_fractions_of_one_task_budget_are_said_to_stay_apart(tmp_path, synth):
    """A hostile trial: replays at 0.095, 0.1 and 0.1001 of an 80-task bank (all B = 8) gave three tables with no word."""
    truths, errors = synth
    a = make_runs(errors, truths, (0.10,))
    b = a.assign(budget_fraction=0.1001, seed=a["seed"] + 10)
    with pytest.warns(ReportWarning, match=r"bank '\w+': budgets 10 % and 10.01 % are all B = 30 tasks there, and the "
                                           r"tables keep them apart") as seen:
        report.read_results([_write(tmp_path / "a.json", a), _write(tmp_path / "b.json", b)])
    assert sorted(re.search(r"bank '(\w+)'", str(w.message)).group(1) for w in seen) == sorted(truths)  # one per bank
    with warnings.catch_warnings():
        warnings.simplefilter("error", ReportWarning)
        report.read_results([_write(tmp_path / "c.json", make_runs(errors, truths, (0.05, 0.10)))])  # other B: no word


def test_a_label_made_from_a_file_name_that_is_no_utf8_is_reported_and_drawn(tmp_path):
    """A trial: `replay --matrix caf<0xE9>.csv` labelled its runs 'caf\\udce9' (a lone surrogate, Python's stand-in for
    the undecodable byte), and `hspr report` then ended in a traceback writing its tables; `live plot` of a session
    on that file did the same in the figure's title. The label is now 'caf\\ufffd'; a file written before is read so."""
    import os

    from hspr.cli import main
    from hspr.data.build import write_wide_csv
    from hspr.live import LiveSession

    from .conftest import simulate_matrix

    odd = os.fsencode(tmp_path) + b"/caf\xe9.csv"
    write_wide_csv(simulate_matrix(10, 30, seed=0)[0], tmp_path / "plain.csv")
    os.rename(tmp_path / "plain.csv", odd)
    out = tmp_path / "r.json"
    res = CliRunner().invoke(main, ["replay", "--matrix", os.fsdecode(odd), "--methods", "uniform", "--seeds", "0",
                                    "--budget", "0.2", "-q", "--out", str(out)])
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    assert {r["bank"] for r in doc["runs"]} == {"caf\ufffd"}
    for r in doc["runs"]:
        r["bank"] = "caf\udce9"  # as the file of an earlier version
    out.write_text(json.dumps(doc))
    assert set(report.read_results(out)["bank"]) == {"caf\ufffd"}
    res = CliRunner().invoke(main, ["report", str(out), "--out-dir", str(tmp_path / "rep")])
    assert res.exit_code == 0 and "caf\ufffd" in (tmp_path / "rep" / "comparison.md").read_text(encoding="utf-8")
    live = LiveSession.create(os.fsdecode(os.fsencode(tmp_path) + b"/s\xe9.hspr"), 3, matrix=os.fsdecode(odd),
                              method="uniform")
    live.record(live.next()[0], 1)
    res = CliRunner().invoke(main, ["live", "plot", "--session", os.fsdecode(os.fsencode(tmp_path) + b"/s\xe9.hspr"),
                                    "--out", str(tmp_path / "s.png")])
    assert res.exit_code == 0 and (tmp_path / "s.png").stat().st_size > 0, res.output


def test_a_report_that_fails_leaves_no_empty_folder_it_made(synth, tmp_path, monkeypatch):
    """A trial: each failed `hspr report` left its (empty) --out-dir behind. The folders it made are removed when
    they are still empty; a folder that was there is kept."""
    truths, errors = synth
    runs = make_runs(errors, truths)

    def broken(*args, **kwargs):
        raise ReportError("cannot compute")

    monkeypatch.setattr(report, "paired_analysis", broken)
    with pytest.raises(ReportError, match="cannot compute"):
        report.write_report(runs, tmp_path / "new" / "deeper", figures=False)
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "kept").mkdir()
    with pytest.raises(ReportError, match="cannot compute"):
        report.write_report(runs, tmp_path / "kept", figures=False)
    assert (tmp_path / "kept").is_dir()
    monkeypatch.undo()
    assert len(report.write_report(runs, tmp_path / "new" / "deeper", figures=False)["paths"]) == 4


def test_the_bootstrap_draws_in_batches_with_the_same_draws_at_the_default():
    """A hostile trial: --n-resamples 100,000 took 454 MB for 198 targets (several GB at the allowed 1,000,000).
    Resamples are drawn 10,000 at a time; at the default 10,000 that is one batch, the same interval as before."""
    import inspect

    from scipy import stats

    from hspr.report.stats import BOOTSTRAP_BATCH, _bootstrap_ci

    d = np.random.default_rng(0).normal(size=198)
    seed = {"rng": 0} if "rng" in inspect.signature(stats.bootstrap).parameters else {"random_state": 0}
    whole = stats.bootstrap((d,), np.mean, n_resamples=BOOTSTRAP_BATCH, method="percentile", vectorized=True, **seed)
    assert _bootstrap_ci(d, BOOTSTRAP_BATCH, 0) == (whole.confidence_interval.low, whole.confidence_interval.high)
    low, high = _bootstrap_ci(d, 5 * BOOTSTRAP_BATCH, 0)  # five batches: the interval of the mean still
    se = d.std(ddof=1) / np.sqrt(d.size)
    assert low == pytest.approx(d.mean() - 1.96 * se, abs=0.2 * se) and high == pytest.approx(d.mean() + 1.96 * se, abs=0.2 * se)


def test_shift_flag_notes_count_the_flags_and_compare_the_flagged_runs_with_the_others():
    """A trial of the shift flag had to write a script to learn what a flag is worth: replay and report now say, per
    bank, method and budget, how often it was raised and the error and coverage of flagged runs against the others."""
    from hspr.report import shift_flag_notes

    def run(target, seed, est, truth, flag, lo=None, hi=None):
        return {"bank": "b", "method": "m", "budget": 10, "target": target, "seed": seed, "estimate": est, "truth": truth,
                "lower": lo, "upper": hi, "shift": {"unlike_history": flag}}

    runs = [run("a", 0, 0.50, 0.40, True, 0.45, 0.55), run("a", 1, 0.48, 0.40, True, 0.40, 0.60),
            run("b", 0, 0.30, 0.31, False, 0.25, 0.35), run("c", 0, 0.70, 0.60, False, 0.65, 0.75),
            {"bank": "b", "method": "other", "budget": 10, "target": "a", "seed": 0, "estimate": 0.5, "truth": 0.4}]
    [line] = shift_flag_notes(runs)
    assert line.startswith("b m at 10 tasks: the shift flag was raised on 2 of 4 runs (1 of 3 targets); their MAE 9.00 pp "
                           "against 5.50 for the others, and their 90 % interval held the true score in 1 of 2 runs "
                           "against 1 of 2"), line
    assert shift_flag_notes(runs[::-1]) == [line]  # any order
    assert shift_flag_notes([run("a", 0, 0.5, 0.4, False)]) == ["b m at 10 tasks: the shift flag was raised on 0 of 1 runs "
                                                                "(0 of 1 targets)"]
    assert shift_flag_notes(runs[-1:]) == []  # a method without the flag
    # runs with too few outcomes (or held-out source runs) got no verdict: not counted as unflagged (a re-trial)
    early = [{**r, "shift": {"unlike_history": False, "enough_outcomes": False}} for r in runs[:4]]
    assert shift_flag_notes(early) == ["b m at 10 tasks: the shift flag gave no verdict on its 4 runs (too few outcomes or "
                                       "held-out source runs)"]
    [mixed] = shift_flag_notes([*runs[:2], {**runs[2], "shift": {"unlike_history": False, "enough_reference": False}}])
    assert mixed == ("b m at 10 tasks: the shift flag was raised on 2 of 2 runs (1 of 1 targets), and gave no verdict on 1 "
                     "more (too few outcomes or held-out source runs)")


def test_an_also_method_missing_at_the_figure_s_budget_is_named_at_that_budget(synth):
    """A re-trial: hspr at 5 % only and --also uniform at 10 % only was told 'uniform has no runs at budget 10 %',
    where the figure is drawn at 5 % (the baseline's budget) and uniform has 10 % runs."""
    from hspr.report import ReportError, figure_estimate_vs_truth

    truths, errors = synth
    five = make_runs({k: v for k, v in errors.items() if k[1] == "hspr"}, truths, fractions=(0.05,))
    ten = make_runs({k: v for k, v in errors.items() if k[1] == "uniform"}, truths, fractions=(0.10,))
    with pytest.raises(ReportError, match=r"method 'uniform' has no runs at the figure's budget, 5 % \(the baseline's "
                                          r"budget closest to 10 %; methods there: hspr\)"):
        figure_estimate_vs_truth(pd.concat([five, ten], ignore_index=True), baseline="hspr", also="uniform")


def test_an_estimate_outside_0_1_or_its_own_interval_is_noted(tmp_path, synth):
    """A hostile trial: a run edited to an estimate of 1.7 moved uniform's MaxErr to 135 pp and nothing said so. The
    report still takes such runs (a method of one's own may step outside [0, 1]) and names the first of each kind."""
    truths, errors = synth
    runs = make_runs(errors, truths, intervals={("lite", "uniform"): 0.05})
    with warnings.catch_warnings():
        warnings.simplefilter("error", ReportWarning)
        report.read_results(_write(tmp_path / "clean.json", runs))  # every estimate in [0, 1] and in its interval
    first = int(np.flatnonzero(runs["method"] == "uniform")[0])
    edited = runs.copy()
    edited.loc[first, "estimate"] = 1.7  # also outside its interval
    edited.loc[first + 1, "estimate"] = edited.loc[first + 1, "upper"] + 0.01
    edited.loc[first + 2, ["estimate", "lower", "upper"]] = [1 + 1e-12, 0.9, 1.0]  # 1 up to rounding: no note (a re-trial)
    with pytest.warns(ReportWarning) as seen:
        report.read_results(_write(tmp_path / "edited.json", edited))
    said = [str(w.message) for w in seen if "lies outside" in str(w.message)]
    head = (f"{tmp_path / 'edited.json'}: run {first} ('uniform', target {edited.loc[first, 'target']!r}): estimate 1.7 "
            f"[{edited.loc[first, 'lower']:.4g}, {edited.loc[first, 'upper']:.4g}] lies outside")
    tail = "; no method hspr ships gives that: check whether the file was edited, or the method that wrote it"
    assert said == [f"{head} [0, 1]{tail}", f"{head} its own 90 % interval (1 more run(s) like it){tail}"]


def test_a_paired_row_on_too_few_differing_targets_says_its_p_cannot_reach_0_05(synth):
    """A hostile trial: with 1 or 2 targets the paired table printed Wilcoxon p = 1.000 with no word that so few
    targets can never give p < 0.05 (the exact two-sided p is at least 2/2^n for n non-zero differences)."""
    from hspr.report.tables import paired_markdown, paired_rich

    truths, errors = synth
    runs = report.runs_frame(make_runs(errors, truths).to_dict("records"))
    paired = report.paired_analysis(runs, "hspr", n_resamples=200)
    few = paired[(paired["n_baseline_better"] + paired["n_method_better"]) < 6]
    assert few[["method", "bank"]].values.tolist() == [["uniform", "pro"]]  # pro's 5 targets; lite 12, pooled 17
    assert few["p_value"].item() >= 2 / 2**5
    sentence = ("1 row(s) rest on fewer than 6 targets whose errors differ (e.g. uniform on pro at 10 %): there "
                "Wilcoxon's p cannot fall below 0.05 (its least value is 2/2^n for n such targets), whatever the errors.")
    assert sentence in paired_markdown(paired) and paired_rich(paired).caption.endswith(sentence)
    lite = report.runs_frame(runs[runs["bank"] == "lite"].to_dict("records"))
    plenty = report.paired_analysis(lite, "hspr", n_resamples=200)
    assert "rest on fewer" not in paired_markdown(plenty) and "rest on fewer" not in paired_rich(plenty).caption
