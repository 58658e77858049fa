"""Leave-cluster-out calibration of ``hspr_robust`` (:mod:`hspr.methods.hspr.robust`, steps 1, 2, 5 and 6):
its settings (:class:`ShiftSettings`), the held-out source replays (each agent with its near neighbours left
out, the newest sources time-forward, the strongest against the rest; run with joblib) and their result
(:class:`ShiftCalibration`), from source rows only. The statistics they use are in
:mod:`hspr.methods.hspr.shift_stats`.
"""

from __future__ import annotations

import hashlib
import logging
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from joblib import delayed, effective_n_jobs

from ...data.folds import dated, forward_split
from ...data.matrix import DataError, ResponseMatrix
from ...irt.fourpl import FourPLSettings, fit_4pl
from ...parallel import single_thread_blas, streaming_parallel
from ...params import MAX_RANDOM_STATE, check_count, check_flag, is_number
from ...progress import duration, log_progress, resumable
from ...session import NOMINAL_LEVEL, budget_from_fraction
from ..atlas import AtlasSettings, FittedATLAS, pirt_point
from .config import MAX_DRAWS, MAX_NODES, HSPRConfig, check_size
from .method import FittedHSPR
from .shift_stats import (
    MIN_OUTCOMES,
    hamming_distances,
    miss_ratios,
    nearest_disagreement_path,
    one_se_choice,
    pass_rate_estimate,
    shrunk_quantile,
    side_shares,
    unresolved_rates,
)
from .source_fit import fit_source

log = logging.getLogger(__name__)

#: seconds after which a calibration logs its progress (:func:`_run_plan`): the bundled banks' take 4-45 s and
#: say nothing; a bank of thousands of tasks takes minutes to hours
PROGRESS_AFTER = 60.0
#: on a bank of at least LARGE_TASKS tasks a job holds at most LARGE_CHUNK of the held-out runs that share one source
#: fit (:func:`_plan_chunks`): each job is kept whole on a stop, and a hostile trial's 120 x 1,500 bank ran 18 such
#: runs in one job (minutes, lost whole on a stop before it ended) where a fit costs seconds; the bundled banks'
#: groups are smaller or their tasks fewer, so they are chunked as before
LARGE_TASKS = 1000
LARGE_CHUNK = 8


@dataclass(frozen=True)
class ShiftSettings:
    """Settings of the leave-cluster-out calibration (source rows only).

    Attributes
    ----------
    neighbour_fraction : float
        At most this share of the other sources is removed with each held-out agent (its
        nearest neighbours by Hamming distance over all tasks), in [0, 0.5]. 0 is plain
        leave-one-out.
    neighbour_quantile : float
        A source is a near neighbour of the held-out agent when their distance is at most this
        quantile of all pairwise source distances, in [0, 1] (near twins: same model or
        scaffold). With few sources few pairs are that close, so the fit keeps most sources.
    max_held_out : int
        At most this many source agents are held out, spread evenly over the sources ordered by
        score (then id), so the calibration covers weak and strong agents.
    forward_fraction : float
        Share of the sources, newest first, also replayed time-forward against a fit on the
        older sources (only when every source id starts with ``YYYYMMDD_`` or ``YYYY-MM-DD_``); 0 turns it off.
    strongest_fraction : float
        Share of the sources, highest score first, replayed against a fit on the others (agents
        better than the rest of the history): their misses give the interval factor of a target
        whose estimate lies above every source's score (:attr:`ShiftCalibration.above_factor`);
        0 turns it off. In [0, 0.5].
    max_above_factor : float
        Largest factor for such a target (a value below ``max_factor`` acts as ``max_factor``).
    min_strongest : int
        The strongest sources' runs set that factor only when there are at least this many
        (with fewer, the 90 % quantile is the largest of a handful of ratios: one agent would
        decide); otherwise such a target gets the usual factor.
    fraction : float
        Budget fraction of the calibration runs, in (0, 1]; the factor is used at every budget.
    level : float
        Coverage the factor targets on the held-out agents: the interval's level, 0.90 (the
        only value: the interval it widens, and every interval hspr reports, is a 90 % one).
    n_nodes, n_draws : int
        Importance nodes and predictive draws of the calibration runs (fewer than the target
        run's, for speed; the ratio of error to half-width is insensitive to them).
    seed : int
        Query seed of the calibration runs.
    prior_n : int
        Pseudo-observations of a calibrated model pooled with the held-out ratios
        (:func:`shrunk_quantile`), >= 0.
    min_factor : float
        Smallest widening, >= 1: the interval is a little conservative in distribution, since
        source replays under-state how far a genuinely new agent lies from the history (on the
        Verified sources the time-forward and leave-cluster-out replays gave 1.0-1.2).
    max_factor : float
        Largest widening, >= ``min_factor``: the in-distribution width allowance (on the Lite
        folds the held-out quantile reached 1.6 and the fold's targets were then all covered,
        at 1.6 times HSPR's width).
    min_held_out : int
        The held-out ratios raise the factor above ``min_factor``, and the blend weight moves from
        its default, only when there are at least this many: with 10-20 held-out agents the 90 %
        quantile is one outlier (on Pro and Full folds it came out at 2.1-2.4 although HSPR's
        in-distribution coverage there is 0.89-0.91).
    threshold : float
        Source percentile above which a target is reported as unlike the history.
    ranks : tuple of int
        Residual-factor ranks compared with the default configuration on the held-out runs when
        no shipped configuration matches the sources (other settings at their defaults); one
        replaces the default only under the one-standard-error rule (:func:`one_se_choice`).
    blend_weights : tuple of float
        Candidate weights ``w`` of the 4PL p-IRT estimate on HSPR's own queried outcomes in the
        point ``(1 - w) * HSPR + w * p-IRT``, each in [0, 1]; the first is the default, and
        another replaces it only under the one-standard-error rule on the held-out runs.
        Default ``(0.5,)``: the equal-weight average, no choice (module docstring, step 3).
        ``(0.0,)`` turns the blend off.
    log_a_sds : tuple of float
        Candidate sds of the 4PL's log-discrimination prior (as ATLAS's ``log_a_sd_grid``),
        chosen together with the weight; default ``(0.5,)``.
    sided : bool
        Share the widening between the two sides of the interval as the held-out runs miss on
        each side (:func:`side_shares`, :func:`side_multipliers`; with at least ``min_held_out``
        runs, else both sides alike). Off by default: it did not carry over to a time-forward
        split (module docstring, step 2); False widens both half-widths by the same factor.
    select : bool
        On sources with no shipped configuration, run the staged source-only selection
        (:func:`~hspr.methods.hspr.selection.select_config` at ``fraction``, with the node and draw
        counts of ``hspr select --fast``) and use its choice, instead of comparing ``ranks``. Off
        by default: measured on seven shift protocols it was lower on six and higher on Verified's
        newest 20 (docs/shift.md, direction 24), and it costs minutes inside each such fit (the
        selection is then kept in the fit cache: :func:`~hspr.methods.hspr.selection.cached_select_config`).
    fallback : bool
        When the held-out runs of step 2 (at least ``min_held_out``) show the model's point
        clearly worse than the outcomes seen plus the sources' pass rate of every other task
        (:func:`one_se_choice`), report that instead (module docstring, step 6): the history does
        not predict its agents. False keeps the model's point on every bank.
    """

    neighbour_fraction: float = 0.20
    neighbour_quantile: float = 0.10
    max_held_out: int = 40
    forward_fraction: float = 0.15
    strongest_fraction: float = 0.15
    max_above_factor: float = 3.0
    min_strongest: int = 10
    fraction: float = 0.10
    level: float = NOMINAL_LEVEL
    n_nodes: int = 2048
    n_draws: int = 16384
    seed: int = 0
    prior_n: int = 10
    min_factor: float = 1.25
    max_factor: float = 1.30
    min_held_out: int = 30
    threshold: float = 95.0
    ranks: tuple[int, ...] = (1, 2, 4, 8)
    blend_weights: tuple[float, ...] = (0.5,)
    log_a_sds: tuple[float, ...] = (0.5,)
    sided: bool = False
    select: bool = False
    fallback: bool = True

    def __post_init__(self) -> None:
        for name in ("neighbour_fraction", "neighbour_quantile", "forward_fraction", "strongest_fraction", "fraction",
                     "level", "min_factor", "max_factor", "max_above_factor", "threshold", "max_held_out", "prior_n",
                     "min_held_out", "min_strongest", "seed", "n_nodes", "n_draws"):
            value = getattr(self, name)
            if not is_number(value) or not math.isfinite(value):
                raise ValueError(f"{name} must be a finite number, got {value!r}")
        check_count("min_strongest", self.min_strongest)
        if int(self.seed) != self.seed or not 0 <= self.seed <= MAX_RANDOM_STATE:  # -1 was refused only at fit, as if
            raise ValueError(f"seed must be a whole number in 0..{MAX_RANDOM_STATE}, got {self.seed!r} (the seed "
                             "of the calibration replays, not a session's)")  # it were the session's seed
        if not 0 <= self.neighbour_fraction <= 0.5:
            raise ValueError(f"neighbour_fraction must be in [0, 0.5], got {self.neighbour_fraction!r}")
        if not 0 <= self.neighbour_quantile <= 1:
            raise ValueError(f"neighbour_quantile must be in [0, 1], got {self.neighbour_quantile!r}")
        check_count("max_held_out", self.max_held_out, 2)
        if not 0 <= self.forward_fraction <= 0.5:
            raise ValueError(f"forward_fraction must be in [0, 0.5], got {self.forward_fraction!r}")
        if not 0 <= self.strongest_fraction <= 0.5:
            raise ValueError(f"strongest_fraction must be in [0, 0.5], got {self.strongest_fraction!r}")
        if not 0 < self.fraction <= 1:
            raise ValueError(f"fraction must be in (0, 1], got {self.fraction!r}")
        if self.level != NOMINAL_LEVEL:  # {"level": 0.5} was accepted and then clipped to no effect (a hostile trial)
            raise ValueError(f"level must be 0.9, got {self.level!r}: the factor widens HSPR's 90 % interval until "
                             "it covers 90 % of the held-out agents, and every interval hspr reports is a 90 % "
                             "interval")
        check_count("prior_n", self.prior_n, 0)
        check_count("min_held_out", self.min_held_out)
        if not self.min_factor >= 1:
            raise ValueError(f"min_factor must be >= 1, got {self.min_factor!r}")
        if not self.max_factor >= self.min_factor:
            raise ValueError(f"max_factor must be >= min_factor ({self.min_factor}), got {self.max_factor!r}")
        # counts (a re-trial: ranks [1, 2.5] ran rank 2, and n_nodes 3.0 was refused only in the fit, naming the bank)
        ranks = self.ranks if isinstance(self.ranks, list | tuple | np.ndarray) else [self.ranks]
        object.__setattr__(self, "ranks", tuple(check_count("ranks entry", r, 0) for r in ranks))
        for name, most in (("n_nodes", MAX_NODES), ("n_draws", MAX_DRAWS)):
            object.__setattr__(self, name, check_count(name, getattr(self, name)))
            check_size(name, getattr(self, name), most, getattr(ShiftSettings, name))
        if not self.ranks or any(not 0 <= r <= 8 for r in self.ranks):
            raise ValueError(f"ranks must be a non-empty list of integers in 0..8, got {self.ranks!r}")
        if not 0 <= self.threshold <= 100:
            raise ValueError(f"threshold must be in [0, 100], got {self.threshold!r}")
        object.__setattr__(self, "blend_weights", tuple(float(w) for w in self.blend_weights))
        if not self.blend_weights or any(not 0 <= w <= 1 for w in self.blend_weights):
            raise ValueError(f"blend_weights must be a non-empty list of numbers in [0, 1], got {self.blend_weights!r}")
        for name in ("sided", "select", "fallback"):  # numpy's bool too, as every method's flags (params.check_flag)
            object.__setattr__(self, name, check_flag(name, getattr(self, name)))
        object.__setattr__(self, "log_a_sds", tuple(float(v) for v in self.log_a_sds))
        if not self.log_a_sds or any(not v > 0 for v in self.log_a_sds):
            raise ValueError(f"log_a_sds must be a non-empty list of positive numbers, got {self.log_a_sds!r}")


@dataclass(frozen=True, eq=False)
class ShiftCalibration:
    """Result of :func:`leave_cluster_out`.

    Attributes
    ----------
    factor : float
        Interval widening ``c >= 1``.
    ratios : (n_held_out,) array
        ``|S_hat - S| / half-width`` of each held-out agent (unwidened interval, moved with the
        blended point).
    errors : (n_held_out,) array
        Signed errors ``S_hat - S`` of the blended point (0-1 scale).
    distances : (n_held_out,) array
        Nearest-source disagreement of each held-out agent on its queried tasks, against all
        other sources.
    distance_paths : (n_held_out, budget) array or None
        The same on the first n queried tasks of each run, n = 1..budget
        (:func:`nearest_disagreement_path`; ``distances`` is the last column): a target with n
        outcomes is compared with the held-out runs at n (:meth:`percentile`).
    held_out : tuple of str
        The held-out agent ids.
    budget : int
        Calibration budget (tasks).
    config : HSPRConfig or None
        The configuration these runs used.
    hspr_errors : (n_held_out,) array or None
        Signed errors of HSPR's own point (``errors`` when no blend was considered).
    weight : float
        Chosen weight of the 4PL p-IRT estimate in the point (0: HSPR's point).
    log_a_sd : float or None
        Chosen 4PL log-discrimination prior sd (None when the weight is 0).
    blend_table : tuple of (log_a_sd, weight, held-out MAE)
        Every candidate compared, in order.
    above_factor : float
        Interval widening for a target whose point lies above ``source_max``: the 90 %
        split-conformal quantile (:func:`shrunk_quantile`) of the ratios of the strongest
        sources replayed against a fit on the others (``ShiftSettings.strongest_fraction``),
        at least ``factor``, at most ``ShiftSettings.max_above_factor``; ``factor`` when there
        are fewer than ``ShiftSettings.min_strongest`` such runs.
    above_ratios : (n_strongest,) array
        Those runs' ``|S_hat - S| / half-width`` (unwidened, blended point).
    source_max : float
        Highest source score (0-1 scale; on the tasks each source ran, when cells are missing); a
        target estimated above it is better than the whole history.
    strongest : tuple of str
        The ids of the strongest sources replayed for ``above_ratios``, in row order.
    sides : (float, float)
        Multipliers of the factor for the lower and the upper half-width, averaging 1
        (:func:`side_shares`); (1, 1) widens both sides alike.
    fallback : bool
        Whether the point is the outcomes seen plus the sources' pass rate of every other task
        (module docstring, step 6), chosen because the held-out runs found the model's point
        clearly worse; ``errors`` and ``ratios`` are then that point's.
    fallback_maes : (float, float) or ()
        Held-out MAE (0-1 scale) of the model's point and of that pass-rate point, when compared.
    """

    factor: float
    ratios: np.ndarray
    errors: np.ndarray
    distances: np.ndarray
    held_out: tuple[str, ...]
    budget: int
    config: HSPRConfig | None = None
    hspr_errors: np.ndarray | None = None
    weight: float = 0.0
    log_a_sd: float | None = None
    blend_table: tuple[tuple[float, float, float], ...] = ()
    above_factor: float = 1.0
    above_ratios: np.ndarray = field(default_factory=lambda: np.empty(0))
    source_max: float = 1.0
    strongest: tuple[str, ...] = ()
    sides: tuple[float, float] = (1.0, 1.0)
    fallback: bool = False
    fallback_maes: tuple[float, ...] = ()
    distance_paths: np.ndarray | None = None

    @property
    def mae(self) -> float:
        """Mean absolute error of the held-out runs (0-1 scale)."""
        return float(np.abs(self.errors).mean())

    def percentile(self, value: float, n: int | None = None) -> float:
        """Percentile (0-100) of ``value`` among the held-out distances (ties count half): at the
        budget, or with ``n`` (1 <= n <= budget) among the distances on each run's first n
        queried tasks. The statistic moves with n (a source agrees with a target on most of a few
        tasks, on fewer of many), so a target is compared at its own count: a hostile trial found
        30 % of Lite's own agents flagged at 60 outcomes against the distances at 30, where about
        5 % should be.

        Raises
        ------
        ValueError
            For ``n`` outside 1..budget when the paths are kept.
        """
        d = self.distances
        if n is not None and self.distance_paths is not None:
            if not 1 <= n <= self.distance_paths.shape[1]:
                raise ValueError(f"n must be in 1..{self.distance_paths.shape[1]} (the calibration budget), got {n}")
            d = self.distance_paths[:, n - 1]
        return float(100 * ((d < value).sum() + 0.5 * (d == value).sum()) / len(d))


def held_out_rows(values: np.ndarray, agents: tuple[str, ...], max_held_out: int) -> np.ndarray:
    """Row indices to hold out: all rows, or ``max_held_out`` spread evenly over (score, id) order.

    ``values`` (n_sources, n_tasks) 0/1 or pass rates, ``agents`` their ids; returns sorted int indices.
    """
    order = sorted(range(len(agents)), key=lambda i: (values[i].mean(), agents[i]))
    if len(order) <= max_held_out:
        return np.array(sorted(order), dtype=int)
    pick = np.unique(np.round(np.linspace(0, len(order) - 1, max_held_out)).astype(int))
    return np.array(sorted(order[i] for i in pick), dtype=int)


def _replay_held_out(fitted: FittedHSPR, y: np.ndarray, others: np.ndarray, pos: dict, budget: int,
                     seed: int, others_missing: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Run one held-out source row as a target (its missing cells count as unresolved, as a replay
    target's; a pass-rate row tells pass rates).

    Returns ``(point, lower half-width, upper half-width, truth)``, the queried columns and the
    nearest-source disagreement on the first n of them, n = 1..budget (:func:`nearest_disagreement_path`)."""
    sess = fitted.start(budget, seed)
    while not sess.done:
        j = sess.ask()
        sess.tell(j, y[pos[j]])  # Session.tell keeps 0/1 as ints (floats on a bank of trials) and a pass rate as a float
    est = sess.estimate()
    cols = np.array([pos[t] for t in sess.queried], dtype=int)
    run = np.array([est.point, est.point - est.lower, est.upper - est.point, float(y.mean())])
    return run, cols, nearest_disagreement_path(others, cols, y[cols], others_missing)


def _plan_chunks(plan: list, n_jobs: int, max_runs: int | None = None) -> list[list]:
    """``plan``'s runs in jobs: consecutive runs that share one source set (the newest, the strongest) form one
    job, which fits that set once; with ``n_jobs`` > 1 such a group is split into up to ``n_jobs`` jobs (a fit
    each) so the workers share it, and into jobs of at most ``max_runs`` runs when that is given. The runs keep
    their order."""
    groups: list[list] = []
    for run in plan:
        if groups and np.array_equal(run[1], groups[-1][-1][1]):
            groups[-1].append(run)
        else:
            groups.append([run])
    chunks = []
    for g in groups:
        parts = max(n_jobs, 1, -(-len(g) // max_runs) if max_runs else 1)
        bounds = np.linspace(0, len(g), min(parts, len(g)) + 1).round().astype(int)
        chunks += [g[lo:hi] for lo, hi in zip(bounds[:-1], bounds[1:])]
    return chunks


def _held_out_runs(source: ResponseMatrix, runs: Sequence[tuple[int, np.ndarray]], cfgs: Sequence[HSPRConfig],
                   sds: Sequence[float], budget: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Replay held-out source rows ``runs`` (``(row, rows of its source fit)``, all with the same source
    rows) under each configuration; a joblib job of :func:`leave_cluster_out`, one BLAS thread.

    Returns ``runs`` (n_cfgs, n_runs, 4) as :func:`_replay_held_out`'s, the nearest-source disagreements
    on each run's first n queried tasks (n_cfgs, n_runs, budget), the 4PL points on each run's queried
    outcomes (n_cfgs, n_sds, n_runs) and the pass-rate points with their 90 % half-widths (n_cfgs,
    n_runs, 2; :func:`pass_rate_estimate`: the queried outcomes plus every other task at its rate over
    the fit's sources).
    """
    M = np.asarray(source.rates())
    miss = source.missing
    pos = {t: j for j, t in enumerate(source.tasks)}
    keep = runs[0][1]
    out = np.empty((len(cfgs), len(runs), 4))
    dists = np.empty((len(cfgs), len(runs), budget))
    pirt = np.empty((len(cfgs), len(sds), len(runs)))
    flat = np.empty((len(cfgs), len(runs), 2))
    fits: dict = {}  # one source fit per item prior
    with single_thread_blas():
        pirt_models = [pirt_model(source.rows(keep), sd) for sd in sds]
        rate = unresolved_rates(M[keep], None if miss is None else miss[keep])
        for i, (a, _) in enumerate(runs):
            others = np.delete(M, a, axis=0)
            others_miss = None if miss is None else np.delete(miss, a, axis=0)
            for c, cfg in enumerate(cfgs):
                scale = cfg.item_prior_scale
                if scale not in fits:
                    fits[scale] = fit_source(M[keep], missing=None if miss is None else miss[keep], item_prior_scale=scale)
                out[c, i], cols, dists[c, i] = _replay_held_out(FittedHSPR(fits[scale], source.tasks, cfg), M[a], others,
                                                               pos, budget, seed, others_miss)
                for k, model in enumerate(pirt_models):
                    pirt[c, k, i] = pirt_point(model, cols, M[a, cols])
                flat[c, i] = pass_rate_estimate(rate, cols, M[a, cols])
    return out, dists, pirt, flat


def _run_plan(source: ResponseMatrix, plan: Sequence[tuple[int, np.ndarray]], cfgs: Sequence[HSPRConfig],
              sds: Sequence[float], budget: int, seed: int) -> tuple[np.ndarray, ...]:
    """Every held-out run of ``plan`` (``(row, rows of its source fit)``), as :func:`_held_out_runs` returns
    them, in plan order, from joblib jobs (:func:`_plan_chunks`).

    The runs are kept in the fit cache (:func:`hspr.fitcache.cached_result`; its key: the bank, the plan, the
    configurations, the 4PL prior sds, the budget and the seed), so a replay and ``hspr live start`` on the
    same sources calibrate once between them (a scale trial: 6.5 min twice on 200 agents x 2,000 tasks, once
    for the replay and once for the live session; 45 s for all 114 Verified rows). They are deterministic, so
    the cached runs are the ones a new calibration gives, on any number of workers. When they took
    :data:`PROGRESS_AFTER` seconds or more, reading them is said (a warning, naming what they took).

    The finished runs of a calibration that runs are kept in a :class:`~hspr.fitcache.Checkpoint` (a scale
    trial: a calibration on 295 agents x 3,000 tasks ran over 45 minutes, and a stop kept nothing), written
    every :data:`~hspr.fitcache.CHECKPOINT_SECONDS` and when the calibration is stopped (a killed process
    loses the runs since the last write): a calibration of the same runs resumes with them, to the result an
    unstopped one gives. The checkpoint is deleted once the runs are stored
    (:meth:`~hspr.fitcache.Checkpoint.finished`). A calibration that runs over :data:`PROGRESS_AFTER`
    seconds logs its progress (:func:`hspr.progress.log_progress`)."""
    from ...fitcache import cached_result

    digest = source.digest()
    layout = hashlib.sha256()
    for a, keep in plan:
        layout.update(np.asarray([a, len(keep), *keep], dtype=np.int64).tobytes())
    key = {"configs": [c.to_dict() for c in cfgs], "log_a_sds": list(sds), "budget": budget, "seed": seed,
           "plan": layout.hexdigest()}
    # the digest tells a replay's folds apart (a hostile trial: their lines all named the same file)
    what = (f"hspr_robust calibration on {source.source} ({source.n_agents} agents x {source.n_tasks} tasks, digest "
            f"{digest[:12]})")

    def build() -> tuple:
        start = time.perf_counter()
        return (*_plan_runs(source, plan, cfgs, sds, budget, seed, key, what), time.perf_counter() - start)

    runs, cached = cached_result(digest, "hspr_robust calibration", key, tuple, build)
    if cached and runs[-1] >= PROGRESS_AFTER:
        log.warning("%s: its %d held-out runs were read from the fit cache (they took %s)", what, len(plan),
                    duration(runs[-1]))
    return runs[:-1]


def _plan_runs(source: ResponseMatrix, plan: Sequence[tuple[int, np.ndarray]], cfgs: Sequence[HSPRConfig],
               sds: Sequence[float], budget: int, seed: int, key: dict, what: str) -> tuple[np.ndarray, ...]:
    """:func:`_run_plan`'s runs computed, with its checkpoint (``key``) and progress lines (``what``)."""
    from ...fitcache import Checkpoint

    checkpoint = Checkpoint(source.digest(), "hspr_robust calibration runs", key)
    done = checkpoint.load()
    todo = [i for i in range(len(plan)) if i not in done]
    progress = log_progress(log, what, ("remaining " if done else "") + "held-out runs", after=PROGRESS_AFTER)
    chunks = _plan_chunks([(*plan[i], i) for i in todo], effective_n_jobs(None),
                          LARGE_CHUNK if source.n_tasks >= LARGE_TASKS else None)
    jobs = (delayed(_held_out_runs)(source, [(a, keep) for a, keep, _ in chunk], cfgs, sds, budget, seed)
            for chunk in chunks)
    finished = 0
    with resumable(log, what, checkpoint, len(plan), "held-out runs"):
        for chunk, part in zip(chunks, streaming_parallel()(jobs)):
            for k, (_, _, i) in enumerate(chunk):  # one run's share of each array (the runs axis: 2 for pirt, else 1)
                checkpoint.add(i, tuple(p[:, :, k] if q == 2 else p[:, k] for q, p in enumerate(part)))
            finished += len(chunk)
            if progress:
                progress(finished, len(todo))
    return tuple(np.stack([checkpoint.done[i][q] for i in range(len(plan))], axis=2 if q == 2 else 1) for q in range(4))


def pirt_model(source: ResponseMatrix, log_a_sd: float):
    """ATLAS's p-IRT model (4PL bank fitted on ``source``, tabulated on its ability grid)."""
    return FittedATLAS(fit_4pl(source, FourPLSettings(prior_log_a_sd=log_a_sd)), AtlasSettings(log_a_sd_grid=None))


def choose_blend(hspr_points: np.ndarray, pirt_points: np.ndarray, truth: np.ndarray, sds: Sequence[float],
                 weights: Sequence[float], min_held_out: int = 1) -> tuple[int, float, list]:
    """The (log_a_sd, weight) pair of the blended point on held-out source runs.

    ``hspr_points`` (n,), ``pirt_points`` (n_sds, n), ``truth`` (n,). Candidate points are
    ``(1 - w) * hspr + w * pirt``; the first weight (with the first sd) is the default and
    another pair replaces it only under the one-standard-error rule (:func:`one_se_choice`),
    and only with at least ``min_held_out`` runs (as the interval factor: with 10-20 held-out
    agents one agent decides; on the Pro folds, 10-11 runs, the rule chose the pure 4PL on one
    fold and that fold's targets got worse).
    Returns (sd index, weight, [(sd, w, MAE), ...]).
    """
    pairs = [(0, weights[0])] + [(k, w) for k in range(len(sds)) for w in weights
                                 if (k, w) != (0, weights[0]) and not (w == 0 and k > 0)]  # w = 0 needs no sd
    errs = np.array([(1 - w) * hspr_points + w * pirt_points[k] - truth for k, w in pairs])
    best = one_se_choice(errs) if len(truth) >= min_held_out else 0
    table = [(float(sds[k]), float(w), float(np.abs(e).mean())) for (k, w), e in zip(pairs, errs)]
    return pairs[best][0], float(pairs[best][1]), table


def leave_cluster_out(source: ResponseMatrix, configs: Sequence[HSPRConfig],
                      settings: ShiftSettings) -> list[ShiftCalibration]:
    """Shift-mimicking replays of source agents under each configuration (module docstring, step 2).

    Two kinds of held-out runs are pooled: (a) leave-cluster-out, each of at most
    ``max_held_out`` agents with its near neighbours removed; (b) when every id starts with a
    date (``YYYYMMDD_`` or ``YYYY-MM-DD_``), time-forward: the newest ``forward_fraction`` of the sources replayed
    against a fit on the older ones only (newer agents are the usual new user). One source fit
    per held-out agent serves every configuration.

    The held-out runs are joblib jobs (:func:`_plan_chunks`): one process unless the caller sets more with
    ``joblib.parallel_config(n_jobs=...)`` (``hspr live start --workers``); the result is the same on any
    number.

    Parameters
    ----------
    source : ResponseMatrix, shape (n_sources, n_tasks), 0/1 or pass rates; missing cells are left out of
        each fit and of the distances, and count as unresolved in a held-out agent's row (its
        truth), as for a replay target
    configs : sequence of HSPRConfig (nodes and draws are replaced by ``settings``')
    settings : ShiftSettings

    Returns
    -------
    list of ShiftCalibration, one per configuration, in order.

    Raises
    ------
    DataError
        With fewer than 4 source agents (each held-out agent needs 2 or more sources left).
    """
    M = np.asarray(source.rates())  # the 0/1 values, or pass rates over repeated trials
    miss = source.missing  # None when no cell is missing (ResponseMatrix normalises it)
    m, n = M.shape
    if m < 4:
        raise DataError(f"hspr_robust needs at least 4 source agents for its leave-cluster-out calibration, got {m}; "
                        "with 2 or 3, use method hspr (the paper's HSPR; no calibration)")
    budget = max(1, budget_from_fraction(settings.fraction, n))
    cfgs = [c.replace(n_nodes=settings.n_nodes, n_draws=settings.n_draws) for c in configs]
    k_max = min(int(round(settings.neighbour_fraction * (m - 1))), m - 3)
    dist = hamming_distances(M, miss)  # (m, m)
    # near neighbours: closer than the neighbour_quantile of all pairwise distances, at most k_max
    near = np.quantile(dist[np.triu_indices(m, 1)], settings.neighbour_quantile)
    plan = []  # (held-out row, rows of its source fit, name)
    for a in held_out_rows(M, source.agents, settings.max_held_out):
        d = dist[a].copy()
        d[a] = -1.0
        k = min(k_max, int((d[np.arange(m) != a] <= near).sum()))
        plan.append((a, np.setdiff1d(np.arange(m), np.argsort(d, kind="stable")[:k + 1]), source.agents[a]))
    n_new = int(round(settings.forward_fraction * m))
    odd = [a for a in source.agents if not dated([a])]  # ids that start with no calendar date
    if n_new >= 1 and m - n_new >= 2 and not odd:
        new = forward_split(source.agents, n_new)
        old = np.setdiff1d(np.arange(m), new)
        plan += [(a, old, f"{source.agents[a]} (forward)") for a in new]
    elif n_new >= 1 and m - n_new >= 2 and 2 * len(odd) <= m and all(a[:1] in "0123456789" and a[:1] for a in odd):
        # a re-trial: one id of a dated bank with a slip in its date turned the forward runs off without a word (an
        # undated id that starts with no digit, such as terminal-bench's 'ob1-09-10-25', is no slip: nothing said)
        import warnings

        from ...errors import InputWarning

        warnings.warn(f"{source.source}: {len(odd)} of {m} source id(s) do not start with a calendar date (YYYYMMDD_ or "
                      f"YYYY-MM-DD_; e.g. {', '.join(map(repr, odd[:3]))}), so hspr_robust's calibration leaves out its "
                      "time-forward runs (the newest sources against a fit on the older ones): fix those dates to have "
                      "them", InputWarning, stacklevel=2)
    n_main = len(plan)  # the runs above set the factor, the blend and the percentiles; the next ones only above_factor
    # each source's score on the tasks it ran (a missing cell is unknown to the fit, not a failure)
    ran = np.ones_like(M, dtype=bool) if miss is None else ~np.asarray(miss, bool)
    scores = (M * ran).sum(axis=1) / np.maximum(ran.sum(axis=1), 1)
    n_top = int(round(settings.strongest_fraction * m))
    if n_top >= 1 and m - n_top >= 2:
        top = np.array(sorted(range(m), key=lambda i: (-scores[i], source.agents[i]))[:n_top], dtype=int)
        rest = np.setdiff1d(np.arange(m), top)
        plan += [(a, rest, f"{source.agents[a]} (strongest)") for a in np.sort(top)]
    blend = source.trials is None and settings.blend_weights != (0.0,)  # off on pass rates (module docstring, step 3)
    sds = settings.log_a_sds if blend else ()
    runs, dists, pirt, flat = _run_plan(source, [(a, keep) for a, keep, _ in plan], cfgs, sds, budget, settings.seed)
    names = tuple(name for _, _, name in plan[:n_main])
    cals = []
    main = slice(0, n_main)
    for c in range(len(cfgs)):
        hspr_points, truth = runs[c, main, 0], runs[c, main, 3]
        k, w, table = (choose_blend(hspr_points, pirt[c][:, main], truth, sds, settings.blend_weights,
                                    settings.min_held_out)
                       if blend
                       else (None, 0.0, []))
        points = runs[c, :, 0] if k is None else (1 - w) * runs[c, :, 0] + w * pirt[c, k]
        fallback, maes = False, ()
        if settings.fallback and len(truth) >= settings.min_held_out and budget >= MIN_OUTCOMES:
            cand = np.array([points[main] - truth, flat[c, main, 0] - truth])
            fallback, maes = one_se_choice(cand) == 1, tuple(float(v) for v in np.abs(cand).mean(axis=1))
        if fallback:  # the pass-rate point, with its own half-widths and no cap on its factor (step 6)
            points = flat[c, :, 0]
            all_ratios = np.abs(points - runs[c, :, 3]) / np.maximum(flat[c, :, 1], 1e-4)
        else:
            all_ratios = miss_ratios(points, runs[c])
        ratios, top_ratios = all_ratios[main], all_ratios[n_main:]
        factor = settings.min_factor
        if fallback:
            factor = max(shrunk_quantile(ratios, settings.level, settings.prior_n), 1.0)
        elif len(ratios) >= settings.min_held_out:
            factor = float(np.clip(shrunk_quantile(ratios, settings.level, settings.prior_n), settings.min_factor,
                                   settings.max_factor))
        sides = (1.0, 1.0)
        if settings.sided and len(ratios) >= settings.min_held_out:
            sides = side_shares(ratios, points[main] - truth, settings.level, settings.prior_n)
        above = factor
        if len(top_ratios) >= settings.min_strongest:
            above = float(np.clip(shrunk_quantile(top_ratios, settings.level, settings.prior_n), factor,
                                  max(settings.max_above_factor, factor)))
        cals.append(ShiftCalibration(factor, ratios, points[main] - truth, dists[c, main, -1], names, budget, configs[c],
                                     hspr_points - truth, w, None if w == 0 else sds[k], tuple(table),
                                     above, top_ratios, float(scores.max()),
                                     tuple(source.agents[a] for a, _, _ in plan[n_main:]), sides, fallback, maes,
                                     dists[c, main]))
    return cals
