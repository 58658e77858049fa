"""Source-only configuration selection for HSPR (HSPR_SPEC section 6; paper section 3.6, Appendix A).

Staged leave-one-source-agent-out (LOO) validation on the source rows only. Each source agent in
turn is held out: its row is removed, the prior, items, factors and signature groups are refitted
on the remaining rows (:func:`fit_source`), and the held-out agent is replayed as a target at one
budget ``B = round(f N)``. Its absolute score error is the validation error.

1. Global: 11 (rank, gamma) settings x acquisition {score, latent} x lambda {0, .5} = 44 settings,
   group-free model (``group_uncertainty=False``), posterior-mean decision, one deterministic
   query path per agent (within the chosen group the lowest unqueried column is taken). The best
   rank and gamma are kept.
2. Hierarchical: kappa {.25, 1, 4, 16} x {score, latent} x posterior-mean lambda {0, .5}, query
   seeds 0, 1, 2. The best kappa and acquisition are kept.
3. Median calibration lambda {0, .5} on the query paths of stage 2's choice (seeds 0, 1, 2).

Source MAE = mean over held-out agents of |S_hat - S|, averaged over seeds; ties (equal to 1e-12 on
the 0-1 scale) break on the largest per-agent error (per seed, then averaged over seeds, as in the
replay's MaxErr), then on grid order. The grid order is the order of the lists below.

Conventions where the paper is silent (documented here, see also the CLI help):

- Stage 1's decision is the analytic posterior mean (the median is only chosen in stage 3).
- "Deterministic query path": the group-free model treats the tasks of a group as exchangeable, so
  the acquisition chooses a group and the lowest unqueried column of that group is queried (no RNG).

Speed: one source fit per held-out agent is shared by every grid point (a rank only slices the
loadings, :meth:`FittedHSPR.with_config`); lambda does not change the query path, so both lambda
values are scored from one path with the closed form of Eq. 16; the posterior-mean decision is
analytic; stage 3 re-runs only the 3 chosen paths and draws once per path; when a seed-0 path never
had a choice within a group (:func:`seed_free`), seeds 1 and 2 reuse it. Held-out agents run in
joblib workers (one BLAS thread each).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import numpy as np

from ...data.matrix import DataError, ResponseMatrix
from ...parallel import QUIET_ENV, streaming_parallel, workers
from ...params import is_number
from ...progress import Progress, log_progress, resumable
from ...session import BudgetError, Method, budget_from_fraction
from .config import HSPRConfig, selection_table
from .decision import calibrate, calibration_residual
from .method import HSPR, FittedHSPR, HSPRSession
from .source_fit import SourceFit, fit_source

log = logging.getLogger(__name__)

#: stage 1 (rank, gamma) settings, in grid order
RANK_GAMMA: tuple[tuple[int, float], ...] = (
    (1, 1.0), (1, 4.0), (1, 8.0), (2, 1.0), (2, 4.0), (2, 8.0), (4, 1.0), (4, 4.0), (4, 8.0), (0, 0.25), (0, 1.0),
)
ACQUISITIONS: tuple[str, ...] = ("score", "latent")
LAMBDAS: tuple[float, ...] = (0.0, 0.5)
KAPPAS: tuple[float, ...] = (0.25, 1.0, 4.0, 16.0)
QUERY_SEEDS: tuple[int, ...] = (0, 1, 2)
STAGE1_DECISION = "mean"
TIE_TOL = 1e-12

SHIPPED_FILE = "selected_configs.json"
#: ``hspr select --fast``: importance nodes and predictive draws inside selection only (the
#: settings the shipped Verified folds 1-3 and Full folds were selected with)
FAST_EVAL_NODES = 2048
FAST_EVAL_DRAWS = 32768


# ----------------------------------------------------------------------------- sessions
class _FirstCandidate:
    """Stands in for the session's query RNG: always the first (lowest-column) candidate."""

    def integers(self, n, *args, **kwargs) -> int:
        return 0


class DeterministicSession(HSPRSession):
    """HSPR session whose within-group pick is the lowest unqueried column (stage 1's query path)."""

    def __init__(self, model: FittedHSPR, budget: int, seed: int = 0) -> None:
        super().__init__(model, budget, seed)
        self.rng = _FirstCandidate()


def _run_path(model: FittedHSPR, row: np.ndarray, budget: int, seed: int, deterministic: bool) -> HSPRSession:
    """Replay one held-out row (0/1 or pass rates, shape (n_tasks,)) on ``model`` up to ``budget`` outcomes."""
    sess = DeterministicSession(model, budget) if deterministic else HSPRSession(model, budget, seed)
    index = {t: j for j, t in enumerate(model.tasks)}
    while not sess.done:
        t = sess.ask()
        sess.tell(t, row[index[t]])  # Session.tell keeps 0/1 as ints (floats on a bank of trials) and a pass rate as a float
    return sess


def path_estimates(sess: HSPRSession, decision: str, lams: Sequence[float] = LAMBDAS) -> np.ndarray:
    """Estimates (0-1 scale) of one finished session for each lambda, shape (len(lams),).

    Eq. 16 with the session's base (analytic posterior mean or predictive median) and the
    calibration residual R_B of the same posterior; equals ``sess.estimate().point`` under a
    config with that lambda and decision.
    """
    if decision == "mean":
        base = sess.posterior_mean()
    else:
        base = sess.estimate().median
    resid = calibration_residual(sess.w, sess.M, sess.n, sess.s)
    return np.array([calibrate(base, resid, lam, sess.n_queried, sess.n_tasks) for lam in lams])


# ----------------------------------------------------------------------------- stages
@dataclass(frozen=True)
class StageSpec:
    """One stage: path settings (configs; lambda ignored) x query seeds x lambdas (grid order:
    path setting, then lambda)."""

    number: int
    paths: tuple[HSPRConfig, ...]
    seeds: tuple[int, ...]
    deterministic: bool
    decision: str

    def settings(self) -> list[HSPRConfig]:
        """The grid points in grid order (configs with lambda set)."""
        return [c.replace(lam=lam) for c in self.paths for lam in LAMBDAS]


def stage1(base: HSPRConfig) -> StageSpec:
    """Stage 1 of HSPR_SPEC section 6: every (rank, gamma) of :data:`RANK_GAMMA` x acquisition, the
    group-free model, the analytic posterior mean, one deterministic query path (seed 0)."""
    paths = tuple(base.replace(rank=r, gamma=g, acquisition=a, decision=STAGE1_DECISION, group_uncertainty=False)
                  for r, g in RANK_GAMMA for a in ACQUISITIONS)
    return StageSpec(1, paths, (0,), True, STAGE1_DECISION)


def stage2(base: HSPRConfig, rank: int, gamma: float) -> StageSpec:
    """Stage 2 of HSPR_SPEC section 6: stage 1's (rank, gamma), every kappa x acquisition with
    group uncertainty, the posterior mean, query seeds 0-2."""
    paths = tuple(base.replace(rank=rank, gamma=gamma, kappa=k, acquisition=a, decision="mean", group_uncertainty=True)
                  for k in KAPPAS for a in ACQUISITIONS)
    return StageSpec(2, paths, QUERY_SEEDS, False, "mean")


def stage3(chosen2: HSPRConfig) -> StageSpec:
    """Stage 3 of HSPR_SPEC section 6: stage 2's choice with the calibrated median (each lambda),
    on the same query paths (seeds 0-2)."""
    return StageSpec(3, (chosen2.replace(decision="median", group_uncertainty=True),), QUERY_SEEDS, False, "median")


def _agent_stage(values: np.ndarray, i: int, tasks: tuple[str, ...], budget: int, spec: StageSpec,
                 eval_overrides: dict, fit: SourceFit | None,
                 missing: np.ndarray | None = None) -> tuple[SourceFit, np.ndarray]:
    """Errors of held-out source row ``i`` under every path setting, seed and lambda.

    The row is removed before the source fit (unless the fit of that reduced matrix is given).
    ``missing`` (bool, values' shape): cells left out of the fit; the held-out row's own
    missing cells are stored as 0 and count as unresolved (as a replay target's).
    Returns the fit and |estimate - truth| of shape (n_paths, n_seeds, n_lambdas).
    """
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):
        if fit is None:
            fit = fit_source(np.delete(values, i, axis=0),
                             missing=None if missing is None else np.delete(missing, i, axis=0),
                             item_prior_scale=spec.paths[0].item_prior_scale)  # the base config's, shared
        row = values[i]
        truth = float(row.mean())
        err = np.empty((len(spec.paths), len(spec.seeds), len(LAMBDAS)))
        for p, cfg in enumerate(spec.paths):
            model = FittedHSPR(fit, tasks, cfg.replace(**eval_overrides))
            for k, seed in enumerate(spec.seeds):
                sess = _run_path(model, row, budget, seed, spec.deterministic)
                err[p, k] = np.abs(path_estimates(sess, spec.decision) - truth)
                if k == 0 and seed_free(sess, fit):
                    err[p, 1:] = err[p, 0]  # every seed gives this same path and estimate
                    break
    return fit, err


def seed_free(sess: HSPRSession, fit: SourceFit) -> bool:
    """True if every query of ``sess`` was the only unqueried task left in its group.

    Then the query seed never mattered: the pick ``cand[rng.integers(len(cand))]`` had one
    candidate each time, and numpy's ``Generator.integers(1)`` returns 0 without advancing the
    stream, so every seed replays the same path (and the draws use their own fixed seed). Common
    on banks whose groups are mostly single tasks (Lite), rare on Pro (large groups).
    """
    # The first query in a group of size s had s candidates, so every group queried must be a single task.
    index = {t: j for j, t in enumerate(sess.tasks)}
    groups = fit.labels[[index[t] for t in sess.queried]]
    return bool(np.all(fit.group_size[groups] == 1))


def stage_table(spec: StageSpec, err: np.ndarray) -> list[dict]:
    """Rows (grid order) from errors of shape (n_agents, n_paths, n_seeds, n_lambdas).

    mae: mean over agents and seeds; max_err: per-seed max over agents, averaged over seeds.
    """
    rows = []
    for p, cfg in enumerate(spec.paths):
        for li, lam in enumerate(LAMBDAS):
            e = err[:, p, :, li]  # (n_agents, n_seeds)
            rows.append({"stage": spec.number, "setting": _setting(cfg.replace(lam=lam), spec.number),
                         "mae": float(e.mean(axis=0).mean()), "max_err": float(e.max(axis=0).mean()),
                         "agent_err": e.mean(axis=1).tolist()})
    return rows


def _setting(cfg: HSPRConfig, stage: int) -> dict:
    keys = {1: ("rank", "gamma", "acquisition", "lam"),
            2: ("rank", "gamma", "kappa", "acquisition", "lam"),
            3: ("rank", "gamma", "kappa", "acquisition", "lam")}[stage]
    d = {k: getattr(cfg, k) for k in keys}
    d["decision"] = cfg.decision
    d["group_uncertainty"] = cfg.group_uncertainty
    return d


def best_row(rows: Sequence[dict]) -> int:
    """Index of the best row: lowest MAE; ties (within 1e-12) on the lowest max_err (same
    tolerance), then the first in grid order."""
    best = 0
    for j in range(1, len(rows)):
        a, b = rows[j], rows[best]
        if a["mae"] < b["mae"] - TIE_TOL:
            best = j
        elif abs(a["mae"] - b["mae"]) <= TIE_TOL and a["max_err"] < b["max_err"] - TIE_TOL:
            best = j
    return best


# ----------------------------------------------------------------------------- result
@dataclass(frozen=True)
class SelectionResult:
    """Outcome of :func:`select_config`.

    Attributes
    ----------
    config : HSPRConfig
        The chosen setting (decision 'median', group uncertainty on), on ``base_config``'s
        numerical constants.
    stages : list of 3 lists of dict
        Per stage, every grid point in grid order: ``setting`` (dict), ``mae`` and ``max_err``
        (0-1 scale), ``agent_err`` (per held-out agent, seed-averaged).
    chosen : tuple of 3 ints
        Index of the chosen row in each stage table.
    source_digest : str
        ``source.digest()`` of the matrix selected on.
    budget, n_sources, n_tasks : int
    eval_overrides : dict
        Numerical settings used inside selection only (e.g. fewer nodes), empty by default.
    seconds : float
        Wall time.
    default : dict or None
        With ``compare_default``: the default configuration's row (``setting``, ``mae``,
        ``max_err``, ``agent_err``), scored on the same held-out agents and query seeds as stage 3.
    """

    config: HSPRConfig
    stages: list
    chosen: tuple
    source_digest: str
    budget: int
    n_sources: int
    n_tasks: int
    eval_overrides: dict = field(default_factory=dict)
    seconds: float = 0.0
    default: dict | None = None

    def versus_default(self) -> tuple[float, float] | None:
        """(chosen - default) source MAE and the standard error of the paired per-agent difference
        (0-1 scale), or None without ``default``. The chosen MAE is the minimum over the grid, so
        it is optimistic: a difference within about one standard error is no evidence that the
        chosen setting beats the default (a new-user trial: on a 38-agent bank the chosen
        settings replayed 1.5 pp worse than the defaults)."""
        if self.default is None:
            return None
        d = np.asarray(self.stages[2][self.chosen[2]]["agent_err"]) - np.asarray(self.default["agent_err"])
        se = float(d.std(ddof=1) / np.sqrt(len(d))) if len(d) > 1 else float("inf")
        return float(d.mean()), se

    @property
    def source_mae(self) -> float:
        """Source-LOO MAE (0-1 scale) of the chosen configuration (stage 3)."""
        return self.stages[2][self.chosen[2]]["mae"]

    def to_dict(self, agent_errors: bool = True) -> dict:
        """Plain JSON-ready dict (the ``hspr select --out`` record). ``source_mae_pp`` and
        ``source_max_err_pp`` are in percentage points; inside ``stages`` (one list of rows per
        stage) each row's ``mae`` and ``max_err`` stay on the 0-1 scale. ``agent_errors=False``
        leaves out each row's per-agent errors (``agent_err``)."""
        stages = [[{k: v for k, v in r.items() if agent_errors or k != "agent_err"} for r in st] for st in self.stages]
        return {"config": self.config.to_dict(), "source_digest": self.source_digest,
                "source_mae_pp": 100 * self.source_mae,
                "source_max_err_pp": 100 * self.stages[2][self.chosen[2]]["max_err"],
                "budget": self.budget, "n_sources": self.n_sources, "n_tasks": self.n_tasks,
                "eval_overrides": dict(self.eval_overrides), "seconds": self.seconds,
                "chosen": list(self.chosen), "stages": stages,
                **({} if self.default is None else {"default": {
                    **{k: v for k, v in self.default.items() if agent_errors or k != "agent_err"},
                    "source_mae_pp": 100 * self.default["mae"]}})}


def eval_overrides(n_nodes: int | None, n_draws: int | None) -> dict:
    """The HSPRConfig fields a selection evaluates its candidates with (``hspr select --eval-nodes /
    --eval-draws``): ``{"n_nodes": ..., "n_draws": ...}`` for those given, ``{}`` for none.

    Raises
    ------
    ValueError naming the field, for a value HSPRConfig refuses (e.g. ``n_nodes`` below 1).
    """
    out = {}
    if n_nodes is not None:
        out["n_nodes"] = int(n_nodes)
    if n_draws is not None:
        out["n_draws"] = int(n_draws)
    HSPRConfig(**out)  # validate
    return out


def select_config(source: ResponseMatrix, fraction: float = 0.10, n_jobs: int = 1, progress: Progress | None = None,
                  base_config: HSPRConfig | None = None, eval_nodes: int | None = None,
                  eval_draws: int | None = None, backend: str | None = None,
                  compare_default: bool = False) -> SelectionResult:
    """Choose an HSPR configuration by staged leave-one-source-agent-out validation (spec 6).

    Parameters
    ----------
    source : ResponseMatrix, shape (n_sources, n_tasks)
        0/1 source matrix, or pass rates over repeated trials (each cell one fractional outcome,
        as in HSPR); no target row may be in it. Needs at least 3 agents (each held-out
        fit keeps 2). Missing cells are left out of each held-out fit; a held-out row's own
        missing cells count as unresolved (its truth), as a replay target's.
    fraction : float
        Budget fraction f; ``B = round(f * n_tasks)`` (one budget).
    n_jobs : int
        joblib workers over held-out agents.
    progress : callable(done, total), optional
        Called after each (stage, held-out agent) unit run by this call (``total``: those still to run).
    base_config : HSPRConfig, optional
        Numerical constants (nodes, draws, refresh, seeds) of the returned config and of the
        evaluation; the grid settings are overwritten. Default: spec constants.
    eval_nodes, eval_draws : int, optional
        Use fewer importance nodes / predictive draws inside selection only; the returned config
        keeps ``base_config``'s values.
    backend : str, optional
        joblib backend of the held-out-agent jobs ('loky' default, 'threading', 'dask', 'ray';
        for dask / ray connect first with :func:`hspr.parallel.cluster`). The result does not
        depend on it.
    compare_default : bool
        Also score ``base_config`` (the defaults) on stage 3's held-out agents and query seeds
        (one more pass, about a quarter more time), for :meth:`SelectionResult.versus_default`.
        The choice does not depend on it.

    Returns
    -------
    SelectionResult
        Its ``seconds`` are this call's (a resumed selection's: since it resumed).

    The finished units are kept in a :class:`~hspr.fitcache.Checkpoint` (a scale trial: the first stage
    on 300 agents x 3,000 tasks would take about 12 h on one core, and a stop kept nothing), written every
    :data:`~hspr.fitcache.CHECKPOINT_SECONDS` and when the selection is stopped: a selection of the same
    source and settings resumes with them, to the same result (the units are deterministic), and the
    checkpoint is deleted when it ends (inside :func:`cached_select_config`, once its result is stored).

    Raises
    ------
    DataError (a ValueError)
        For fewer than 3 source agents.
    BudgetError (a ValueError)
        For a budget fraction outside (0, 1] or one that gives no task.
    ValueError
        For ``eval_nodes`` or ``eval_draws`` outside the sizes :class:`HSPRConfig` allows.
    """
    from joblib import delayed

    from ...fitcache import Checkpoint

    t0 = time.perf_counter()
    missing = source.missing  # None when no cell is missing (ResponseMatrix normalises it)
    if source.n_agents < 3:
        raise DataError(f"selection holds out one of {source.n_agents} source agents and needs at least 3")
    base = base_config or HSPRConfig()
    over = eval_overrides(eval_nodes, eval_draws)
    budget = budget_from_fraction(fraction, source.n_tasks)
    if budget < 1:
        raise BudgetError(f"budget fraction {fraction} gives no task out of {source.n_tasks}; give a larger fraction")
    values = np.asarray(source.rates())  # 0/1, or pass rates over repeated trials
    tasks = source.tasks
    m = source.n_agents
    digest = source.digest()  # the checkpoint's key, the lines' label and the result's record
    checkpoint = Checkpoint(digest, "hspr selection units",
                            {"fraction": fraction, "budget": budget, "base_config": base.to_dict(), "eval_overrides": over,
                             "compare_default": compare_default})
    kept = len(checkpoint.load())
    units = (4 if compare_default else 3) * m
    what = f"hspr selection on {source.source} ({m} agents x {source.n_tasks} tasks, digest {digest[:12]})"
    total = units - kept  # the units still to run
    done = passes = 0
    fits: list[SourceFit | None] = [None] * m

    def run(spec: StageSpec) -> np.ndarray:
        nonlocal done, passes
        # the pass and its whole grid (the defaults' pass may repeat stage 3's grid, and counts as its own units)
        tag = (passes, hashlib.sha256(repr(spec).encode()).hexdigest()[:16])
        passes += 1
        todo = [i for i in range(m) if (tag, i) not in checkpoint.done]
        jobs = (delayed(_agent_stage)(values, i, tasks, budget, spec, over, fits[i], missing) for i in todo)
        with workers(backend, n_jobs):
            for i, (fit, e) in zip(todo, streaming_parallel()(jobs)):
                fits[i] = fit
                checkpoint.add((tag, i), e)
                done += 1
                if progress:
                    progress(done, total)
        return np.stack([checkpoint.done[(tag, i)] for i in range(m)])

    with resumable(log, what, checkpoint, units, "(stage, held-out agent) units"):
        return _staged(run, base, compare_default, source, digest, budget, over, t0)


def _staged(run: Callable[[StageSpec], np.ndarray], base: HSPRConfig, compare_default: bool, source: ResponseMatrix,
            digest: str, budget: int, over: dict, t0: float) -> SelectionResult:
    """:func:`select_config`'s three stages (and the defaults' pass), ``run(spec)`` giving a stage's errors
    of every held-out agent (n_sources, n_paths, n_seeds, n_lambdas)."""
    m = source.n_agents
    stages, chosen = [], []
    spec = stage1(base)
    rows = stage_table(spec, run(spec))
    stages.append(rows)
    chosen.append(best_row(rows))
    s1 = spec.settings()[chosen[0]]

    spec = stage2(base, s1.rank, s1.gamma)
    rows = stage_table(spec, run(spec))
    stages.append(rows)
    chosen.append(best_row(rows))
    s2 = spec.settings()[chosen[1]]

    spec = stage3(s2)
    rows = stage_table(spec, run(spec))
    stages.append(rows)
    chosen.append(best_row(rows))
    s3 = spec.settings()[chosen[2]]

    config = base.replace(rank=s3.rank, gamma=s3.gamma, kappa=s3.kappa, acquisition=s3.acquisition, lam=s3.lam,
                          decision="median", group_uncertainty=True)
    default = None
    if compare_default:  # the defaults as shipped (median, group uncertainty), scored like stage 3
        spec = stage3(base)
        rows = stage_table(spec, run(spec))
        default = rows[LAMBDAS.index(base.lam)] if base.lam in LAMBDAS else None
    return SelectionResult(config, stages, tuple(chosen), digest, budget, m, source.n_tasks, over,
                           time.perf_counter() - t0, default)


def cached_select_config(source: ResponseMatrix, fraction: float = 0.10, n_jobs: int = 1,
                         progress: Progress | None = None, base_config: HSPRConfig | None = None,
                         eval_nodes: int | None = None, eval_draws: int | None = None,
                         on_run: Callable[[], None] | None = None) -> tuple[SelectionResult, bool]:
    """:func:`select_config`, kept in the fit cache (:func:`hspr.fitcache.cached_result`).

    The selection is deterministic given the source (in its row and column order), the budget
    fraction and the numerical settings, whatever the number of workers; a replay of a bank
    with no shipped configuration ran it again for every fold of every replay (minutes each).
    Same parameters and errors as :func:`select_config`; ``on_run()``, if given, is called just
    before a selection runs (not when it is read from the cache).

    Returns
    -------
    (SelectionResult, from_cache)
        ``from_cache`` is True when the result was read from the cache (its ``seconds`` are
        then those of the run that made it).
    """
    from ...fitcache import cached_result

    settings = {"fraction": fraction, "base_config": None if base_config is None else base_config.to_dict(),
                "eval_nodes": eval_nodes, "eval_draws": eval_draws}

    def build() -> SelectionResult:
        if on_run is not None:
            on_run()
        return select_config(source, fraction, n_jobs, progress=progress, base_config=base_config,
                             eval_nodes=eval_nodes, eval_draws=eval_draws)

    return cached_result(source.digest(), "hspr selection", settings, SelectionResult, build)


def loo_setting_errors(source: ResponseMatrix, config: HSPRConfig, fraction: float = 0.10,
                       seeds: Sequence[int] = QUERY_SEEDS, deterministic: bool = False,
                       fits: Sequence[SourceFit] | None = None) -> np.ndarray:
    """Brute-force LOO errors of one grid point, with no shortcut: per held-out agent and seed,
    ``|HSPR(config) session estimate().point - truth|``, shape (n_sources, n_seeds).

    ``fits[i]`` may give the source fit without row i (else it is computed). Used to check
    :func:`select_config` against an independent evaluation of the same grid.
    """
    budget = budget_from_fraction(fraction, source.n_tasks)
    values = np.asarray(source.rates())
    out = np.empty((source.n_agents, len(seeds)))
    for i in range(source.n_agents):
        fit = fits[i] if fits is not None else fit_source(
            np.delete(values, i, axis=0), missing=None if source.missing is None else np.delete(source.missing, i, axis=0),
            item_prior_scale=config.item_prior_scale)
        model = FittedHSPR(fit, source.tasks, config)
        for k, seed in enumerate(seeds):
            sess = _run_path(model, values[i], budget, seed, deterministic)
            out[i, k] = abs(sess.estimate().point - values[i].mean())
    return out


# ----------------------------------------------------------------------------- shipped results
def shipped_table_path() -> Path:
    """Where the shipped selection table lies in an installed package (``hspr select --record`` writes
    there to regenerate it; ``hspr replay --config auto`` reads it through :func:`shipped_configs`)."""
    return Path(__file__).resolve().parent / SHIPPED_FILE


def shipped_configs() -> dict:
    """The shipped selection results: ``{bank: {fold: {"config", "source_digest", ...}}}`` plus
    metadata keys (``generated_by``, ...)."""
    path = resources.files("hspr").joinpath("methods", "hspr", SHIPPED_FILE)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}


def lookup_shipped(digest: str, table: dict | None = None) -> tuple[str, str, HSPRConfig] | None:
    """(bank, fold, config) of the shipped entry whose source digest matches, else None."""
    table = shipped_configs() if table is None else table
    for bank, folds in table.items():
        if not isinstance(folds, dict):
            continue
        for fold, entry in folds.items():
            if isinstance(entry, dict) and entry.get("source_digest") == digest:
                return bank, fold, HSPRConfig.from_dict(entry["config"])
    return None


def table_entries_for(table: dict, sources) -> list[dict]:
    """The entries of a table of selections that ``sources`` (source matrices) would use, as
    ``{"source_digest", "config"}`` sorted by digest: what decides a replay's runs with that table
    (:meth:`hspr.session.Method.settings_for`); other banks' entries and each entry's timing and
    command are left out."""
    digests = {m.canonical().digest() for m in sources}
    used = [{"source_digest": e["source_digest"], "config": HSPRConfig.from_dict(e["config"]).to_dict()}
            for folds in table.values() if isinstance(folds, dict)
            for e in folds.values() if isinstance(e, dict) and e.get("source_digest") in digests]
    return sorted(used, key=lambda e: e["source_digest"])


def params_for_sources(params: dict, table: dict | None, sources) -> dict:
    """``params`` (a method's :meth:`~hspr.session.Method.get_params`) with its ``table`` cut to the
    entries ``sources`` use (:func:`table_entries_for`): ``hspr_auto``'s and ``hspr_robust``'s
    :meth:`~hspr.session.Method.settings_for`."""
    return params if table is None else {**params, "table": table_entries_for(table, sources)}


def unrecorded_folds(table: dict, matrix: ResponseMatrix, folds: list[list[str]] | None) -> list[int | None]:
    """The folds of a replay whose sources no entry of ``table`` matches (:func:`lookup_shipped`
    on the digest of the sources as a method is fitted on them, sorted by id): fold indices, or
    ``[None]`` when ``folds`` is None and ``matrix`` itself (every row a source, as with
    ``--targets``) has no entry. A replay given such a table would select those folds first, at
    the default settings (a trial: minutes, with ``--fast`` unavailable in a replay)."""
    from ...data.folds import fold_indices

    if folds is None:
        return [] if lookup_shipped(matrix.canonical().digest(), table) is not None else [None]
    return [k for k, idx in enumerate(fold_indices(matrix.agents, folds))
            if lookup_shipped(matrix.drop_rows(idx).canonical().digest(), table) is None]


class HSPRAuto(Method):
    """HSPR with its configuration chosen on the source agents only (spec section 6).

    ``fit(source)`` uses the shipped configuration whose source digest equals
    ``source.digest()`` (the bundled banks' folds); otherwise it runs :func:`select_config` on
    the source (slow: minutes to hours) and logs a warning. Then it fits HSPR with that config.

    Parameters
    ----------
    fraction : float
        Budget fraction of the selection's validation replays when selection has to run (the
        shipped table was selected at 0.10). It is the selection budget, not the run budget: a
        replay at 5 % keeps the 10 % choice. Selecting at the run budget measured worse
        (2026-12-04, 4 folds, query seeds 0-4, MAE pp at 5 %, ``hspr select --budget 0.05 --fast``
        per fold against the shipped 10 % choice): Verified 2.41 against 2.19, Lite 3.74 against
        3.30, Pro 3.19 against 2.60.
    n_jobs : int
        Workers for that selection.
    base_config : HSPRConfig, optional
        Numerical constants for a selection that has to run (and for tests).
    table : dict, optional
        Table of selections (``hspr select --record``) to search instead of the packaged file;
        every entry is checked (and the table copied) here. ValueError names a damaged entry.
    overrides : dict, optional
        HSPRConfig fields set on top of the chosen config (ablations, e.g. ``{"decision": "mean"}``).
    """

    name = "hspr_auto"
    accepts_pass_rates = True
    setting_groups = (("overrides", HSPRConfig),)  # get_method("hspr_auto", decision="mean") points to overrides
    in_all = False  # hspr under --config auto; its own runs in `--methods all` would repeat hspr's fits

    def __init__(self, fraction: float = 0.10, n_jobs: int = 1, base_config: HSPRConfig | None = None,
                 table: dict | None = None, overrides: dict | None = None) -> None:
        if not is_number(fraction) or not 0 < fraction <= 1:
            # an API trial: fraction=0 was refused only at fit, after the 'running source-only selection' line
            raise ValueError(f"fraction must be the budget fraction the selection replays, in (0, 1], got {fraction!r}")
        self.fraction = fraction
        self.overrides = dict(overrides or {})
        if self.overrides:  # checked now (a re-trial: an unknown one was refused at fit, after the minutes of selection)
            HSPRConfig().replace(**self.overrides)
        self.n_jobs = n_jobs
        self.base_config = base_config
        self.table = None if table is None else selection_table(table, "hspr_auto table")

    def settings_for(self, sources) -> dict:
        """:meth:`get_params`, its ``table`` cut to the entries ``sources`` use (:func:`params_for_sources`)."""
        return params_for_sources(self.get_params(), self.table, sources)

    @classmethod
    def from_params(cls, params: dict) -> HSPRAuto:
        """From :meth:`get_params` output (``base_config`` as a dict of HSPR settings)."""
        params = dict(params)
        if isinstance(params.get("base_config"), dict):
            params["base_config"] = HSPRConfig.from_dict(params["base_config"])
        return super().from_params(params)

    @property
    def seed_kind(self) -> str:
        """'deterministic' when an override puts HSPR on the Mid-Range query path, else 'adaptive'."""
        return "deterministic" if self.overrides.get("acquisition") == "midrange" else "adaptive"

    def fit(self, source: ResponseMatrix) -> FittedHSPR:
        """HSPR fitted on ``source`` with the shipped or freshly selected configuration.

        The returned model's ``shipped`` is the (bank, fold) whose shipped entry was used, or
        None; its ``selection`` the :class:`SelectionResult` when selection ran, or None. The
        method object itself is not changed, so one instance fits every fold (also in parallel).

        Raises :class:`~hspr.data.matrix.DataError` when selection has to run on fewer than 3
        source agents.
        """
        digest = source.digest()
        hit = lookup_shipped(digest, self.table)
        shipped, selection = None, None
        quiet = bool(os.environ.get(QUIET_ENV))  # replay -q: a hostile trial saw these lines once per fold
        # a trial: a replay's four folds of one file read alike; the digest tells them apart (as `hspr bank validate`)
        what = f"source {source.source} ({source.n_agents} agents x {source.n_tasks} tasks, digest {digest[:12]})"
        if hit is not None:
            bank, fold, cfg = hit
            shipped = (bank, fold)
        else:
            if source.n_agents < 3:  # refuse before announcing a long selection
                raise DataError(f"hspr_auto selects its settings on the source agents and needs at least 3, got "
                                 f"{source.n_agents}")

            def announce() -> None:
                log.warning("hspr_auto: %s for %s; running source-only selection, which can take long (then kept "
                            "in the fit cache)", "no shipped configuration" if self.table is None else
                            "its table has no configuration", what)

            selection, cached = cached_select_config(
                source, self.fraction, self.n_jobs, base_config=self.base_config, on_run=None if quiet else announce,
                progress=log_progress(log, f"hspr_auto selection on {source.source} (digest {digest[:12]})",
                                      "held-out runs"))
            if cached and not quiet:
                log.warning("hspr_auto: the source-only selection for %s was read from the fit cache (it took "
                            "%.0f s)", what, selection.seconds)
            cfg = selection.config
        if self.overrides:
            cfg = cfg.replace(**self.overrides)
        model = HSPR(cfg).fit(source)
        model.shipped, model.selection = shipped, selection
        model.fitted_settings = cfg.changed()
        if selection is not None and not quiet:  # a trial: which settings it chose was said nowhere
            log.warning("hspr_auto: chose %s on %s", json.dumps(model.fitted_settings) if model.fitted_settings else
                        "the defaults", what)
        return model
