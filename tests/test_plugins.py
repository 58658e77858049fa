"""Methods other packages register under the entry-point group ``hspr.methods``: found by name in the
Python API and on the command line, a broken or clashing entry named with its package, and a fit
cache keyed by the method's own code."""

from __future__ import annotations

import json
import sys
import warnings

import numpy as np
import pytest
from click.testing import CliRunner

from hspr import fitcache, get_method, method_names
from hspr.cli import main
from hspr.data.build import write_wide_csv
from hspr.data.folds import make_folds
from hspr.errors import HsprError, UnknownIdError
from hspr.methods import method_class, names_with

#: the method of docs/python-api.md, "Your own method": the tasks the sources disagree on most, in order
PLUGIN = '''
import numpy as np

from hspr.session import FittedModel, Method, ScoreEstimate, Session


class VarianceSession(Session):
    def __init__(self, tasks, budget, seed, order):
        super().__init__(tasks, budget, seed)
        self.order = order

    def _select(self, exclude):
        return int(self.order[~exclude[self.order]][0])

    def _update(self, j, y):
        pass

    def estimate(self):
        self._require_outcomes()
        y = np.asarray(self.outcomes, dtype=float)
        half = 1.645 * np.sqrt(max(y.var(), 0.01) / len(y))
        return ScoreEstimate(point=y.mean(), lower=y.mean() - half, upper=y.mean() + half,
                             n_queried=self.n_queried, budget=self.budget)


class FittedVariance(FittedModel):
    def __init__(self, tasks, order):
        self.tasks, self.order = tasks, order

    def start(self, budget, seed=0):
        return VarianceSession(self.tasks, budget, seed, self.order)


class Variance(Method):
    name = "variance"
    seed_kind = "deterministic"

    def fit(self, source):
        p = source.rates().mean(axis=0)
        return FittedVariance(source.tasks, np.argsort(-p * (1 - p), kind="stable"))


def helper():
    return None
'''

ENTRY_POINTS = """
[hspr.methods]
variance = myplug:Variance
hspr = myplug:Variance
bad-name = myplug:Variance
notmethod = myplug:helper
broken = myplug_missing:Variance
"""


@pytest.fixture()
def plugin(tmp_path, monkeypatch):
    """An installed package ``myplug`` (its module and its dist-info, as pip leaves them) on sys.path."""
    root = tmp_path / "site"
    (root / "myplug").mkdir(parents=True)
    (root / "myplug" / "__init__.py").write_text(PLUGIN)
    info = root / "myplug-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: myplug\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(ENTRY_POINTS)
    monkeypatch.syspath_prepend(str(root))
    sys.modules.pop("myplug", None)
    yield root
    sys.modules.pop("myplug", None)  # the next test's package is another folder's


def test_an_installed_method_runs_by_name_and_bad_entries_are_named(plugin):
    with pytest.warns(UserWarning) as caught:
        names = method_names()
    said = sorted(str(w.message) for w in caught)
    assert any(s.startswith("myplug: entry point 'hspr' of group 'hspr.methods' is hspr's own method") for s in said)
    assert any("entry point 'bad-name'" in s and "not a name of letters, digits and _" in s for s in said)
    # hspr's own first and unchanged, then the package's valid names in name order
    assert names[:3] == ["hspr", "hspr_auto", "hspr_robust"] and names[-3:] == ["broken", "notmethod", "variance"]
    assert method_class("hspr").__module__ == "hspr.methods.hspr.method"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert type(get_method("variance")).__module__ == "myplug"
        with pytest.raises(HsprError, match=r"method 'broken' of myplug \(hspr.methods entry point "
                                            r"'myplug_missing:Variance'\) does not load: ModuleNotFoundError"):
            method_class("broken")
        with pytest.raises(HsprError, match=r"method 'notmethod' of myplug .* is <function helper .*, not a subclass "
                                            r"of hspr.session.Method"):
            method_class("notmethod")
        with pytest.raises(UnknownIdError, match=r"unknown method 'Variance'; did you mean 'variance'\?"):
            method_class("Variance")
    with pytest.warns(UserWarning) as caught:  # 'all' leaves out the entries that do not load, and says so
        assert names_with("in_all")[-1] == "variance"
    said = sorted(str(w.message) for w in caught)
    assert len(said) == 2 and said[0].startswith("method 'broken' of myplug") and said[0].endswith("left out")
    assert said[1].startswith("method 'notmethod' of myplug")


def test_the_command_line_replays_and_scores_live_with_an_installed_method(plugin, tmp_path, small_bank):
    csv = tmp_path / "bank.csv"
    write_wide_csv(small_bank, csv)
    out = tmp_path / "r.json"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = CliRunner().invoke(main, ["replay", "--matrix", str(csv), "--methods", "variance,uniform", "--seeds", "0",
                                        "--out", str(out), "--quiet"])
    assert res.exit_code == 0, res.output
    runs = [r for r in json.loads(out.read_text())["runs"] if r["method"] == "variance"]
    assert len(runs) == small_bank.n_agents
    folds = make_folds(small_bank.agents)
    rates = small_bank.rates()
    for r in runs:  # the method's closed form: the B most disputed tasks of the fold's sources, their outcomes' mean
        src = np.array([a not in folds[r["fold"]] for a in small_bank.agents])
        p = rates[src].mean(axis=0)
        order = np.argsort(-p * (1 - p), kind="stable")[:len(r["queried"])]
        assert r["queried"] == [small_bank.tasks[j] for j in order]
        row = rates[small_bank.agents.index(r["target"])]
        assert r["estimate"] == pytest.approx(row[order].mean(), abs=1e-12)

    session = tmp_path / "run.hspr"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = CliRunner().invoke(main, ["live", "start", "--matrix", str(csv), "--method", "variance", "--budget", "3",
                                          "--session", str(session)])
        assert start.exit_code == 0, start.output
        nxt = CliRunner().invoke(main, ["live", "next", "--session", str(session), "--format", "space"])
    p = rates.mean(axis=0)
    assert nxt.output.split() == [small_bank.tasks[int(np.argsort(-p * (1 - p), kind="stable")[0])]]
    bad = CliRunner().invoke(main, ["live", "start", "--matrix", str(csv), "--method", "broken", "--budget", "3",
                                    "--session", str(tmp_path / "b.hspr")])
    assert bad.exit_code == 2 and "method 'broken' of myplug" in bad.output and "Traceback" not in bad.output


def test_a_cached_fit_of_an_installed_method_is_keyed_by_its_code(plugin):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        before = fitcache.cache_key("d" * 64, "variance", {})
        hspr_key = fitcache.cache_key("d" * 64, "hspr", {})
        assert fitcache.plugin_digest("hspr") is None and fitcache.method_code("hspr") == fitcache.code_digest()
        assert fitcache.cache_key("d" * 64, "variance", {}) == before  # the same code: the same key
        mod = plugin / "myplug" / "__init__.py"
        mod.write_text(mod.read_text() + "\n# an edit\n")
        assert fitcache.cache_key("d" * 64, "variance", {}) != before
        assert fitcache.cache_key("d" * 64, "hspr", {}) == hspr_key


def test_with_no_package_installed_the_names_are_hspr_s_own():
    from hspr.methods import REGISTRY

    assert method_names() == list(REGISTRY)
