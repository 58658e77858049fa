"""tinyBenchmarks-style anchor points with IRT, p-IRT and gp-IRT estimates (HSPR_SPEC section 8/10).

Source: Polo et al. 2024, "tinyBenchmarks: evaluating LLMs with fewer examples" (ICML 2024),
sections 3.1-3.3, and their released ``tinyBenchmarks`` package:

1. Fit a multidimensional 2PL IRT model on the source agents (MAP, :mod:`hspr.irt.mirt2pl`),
   whitened so the source abilities have mean 0 and identity covariance.
2. Anchor points: KMeans (fixed ``random_state``) with B clusters on the item embeddings
   ``(a_i, b_i)``; each cluster's anchor is the task nearest its centre (medoid) and carries
   weight ``cluster size / N``.
3. The target runs the anchors. Estimators:

   * anchor: ``sum_c w_c * y_anchor(c)`` (the paper's "anchor points" / the package's 'irt');
   * IRT: the mean predicted probability over all N tasks, ability fitted on the outcomes;
   * p-IRT: ``(sum of observed outcomes + sum of predicted probabilities of the others) / N``;
   * gp-IRT: ``lam * anchor + (1 - lam) * p-IRT``.

Port choices (HSPR_SPEC section 10): the mixing weight ``lam`` is chosen per budget on held-out
SOURCE agents, never on target rows: the sources are split into validation folds, the IRT
model is refitted without each fold and the fold's agents are replayed on the refit's own
anchors; ``lam`` minimises their mean absolute error over the grid 0, 0.05, ..., 1. Tasks no
source solved form one big cluster whose single anchor carries a large weight (about half on
Full); which of those identical tasks is the anchor is arbitrary, so by default the validation
error is averaged over that choice (each anchor's outcome redrawn among its twins, the tasks
with identical source columns), which prices in the rare target that solves it. The target
ability is the MAP under the ``N(0, I)`` prior that the whitening makes match the sources, and
predictions are averaged over its Laplace posterior (probit approximation). On a bank of repeated
trials every outcome (the sources' and the target's) is a task's pass rate, a fractional outcome
of the same likelihood, and the anchor estimate averages pass rates.
"""

from __future__ import annotations

import copy
import heapq

import numpy as np
from threadpoolctl import threadpool_limits

from ..data.matrix import DataError, ResponseMatrix
from ..irt.mirt2pl import MIRT2PL, fit_mirt2pl, laplace_posterior, predictive_probs
from ..params import check_count, check_flag, check_positive, check_random_state
from ..session import FittedModel, Method, ScoreEstimate, Session, check_budget

ESTIMATORS = ("gp-irt", "p-irt", "irt", "anchor")
LAMBDA_GRID = np.round(np.linspace(0.0, 1.0, 21), 2)
LAMBDA_GRID.setflags(write=False)  # a module constant (an audit): read-only


class Anchors:
    """Anchor points of one budget: clusters of the item embedding and their medoids.

    Attributes
    ----------
    order : ndarray of int, shape (n_anchors,)
        Anchor task columns in query order (first anchors of clusters by decreasing weight,
        ties by column; then second anchors of clusters that got more than one, ...).
    label : ndarray of int, shape (n_tasks,)
        Cluster of each task.
    weight : ndarray, shape (n_clusters,)
        ``cluster size / n_tasks``; sums to 1.
    fallback : ndarray of int, shape (n_tasks,)
        Every task, by rank inside its cluster (distance to the centre), then decreasing
        cluster weight, then column: the order used once every anchor is observed.
    twin : ndarray of int, shape (n_tasks,)
        Id of each task's distinct embedding row: tasks with the same id (identical source
        columns) are exchangeable, so an anchor is in effect a random draw among its twins.
    """

    def __init__(self, order, label, weight, fallback, twin=None):
        self.twin = twin
        self.order = order
        self.label = label
        self.weight = weight
        self.fallback = fallback

    @property
    def n_clusters(self) -> int:
        """Number of anchor clusters (anchor points)."""
        return len(self.weight)

    def anchor_weights(self) -> np.ndarray:
        """Weight of each anchor in :attr:`order`, shape (n_anchors,); sums to 1 (a cluster
        with several anchors splits its weight evenly)."""
        lab = self.label[self.order]
        per = np.bincount(lab, minlength=self.n_clusters)
        return self.weight[lab] / per[lab]


def anchor_points(embedding: np.ndarray, budget: int, random_state: int = 0) -> Anchors:
    """Choose ``budget`` anchor tasks by KMeans on the item embedding.

    Parameters
    ----------
    embedding : ndarray, shape (n_tasks, n_features)
        Item embedding, e.g. ``MIRT2PL.embedding()`` = ``(a_i, b_i)``.
    budget : int
        Number of anchors, ``1 <= budget <= n_tasks``.
    random_state : int
        KMeans seed (k-means++ initialisation; 4 restarts).

    Returns
    -------
    Anchors

    Raises
    ------
    BudgetError
        For a budget outside ``[1, n_tasks]``.

    Notes
    -----
    KMeans runs on the distinct embedding rows weighted by multiplicity (the same objective as
    on all rows; tasks with identical source columns have identical embeddings). If the budget
    exceeds the number of distinct rows, the clusters are the distinct rows and the extra
    anchors go to the clusters with the most tasks per anchor (a deterministic stratified
    design); at ``budget = n_tasks`` every task is an anchor of weight ``1 / n_tasks``.
    """
    X = np.asarray(embedding, float)
    n = X.shape[0]
    budget = check_budget(budget, n, allow_zero=False)
    Xu, inv, cnt = np.unique(X, axis=0, return_inverse=True, return_counts=True)
    inv = np.asarray(inv).reshape(-1)
    k = min(budget, len(Xu))
    if k == len(Xu):
        lab_u = np.arange(k)
        centres = Xu
    else:
        from sklearn.cluster import KMeans  # imported where fitted: `--help` lists methods without it

        km = KMeans(n_clusters=k, n_init=4, random_state=random_state).fit(Xu, sample_weight=cnt)
        lab_u = km.labels_
        centres = km.cluster_centers_
    label = lab_u[inv]
    # clusters may come out empty only in degenerate cases: relabel to 0..k'-1
    used, label = np.unique(label, return_inverse=True)
    centres = centres[used]
    k = len(used)
    size = np.bincount(label, minlength=k)
    dist = np.linalg.norm(X - centres[label], axis=1)
    # rank of each task inside its cluster: by distance to centre, ties by column index
    idx = np.lexsort((np.arange(n), dist, label))
    rank = np.empty(n, dtype=int)
    start = np.concatenate([[0], np.cumsum(size)[:-1]])
    rank[idx] = np.arange(n) - np.repeat(start, size)
    # anchors per cluster: one each, extras to the most tasks-per-anchor cluster
    n_anch = np.ones(k, dtype=int)
    extra = budget - k
    if extra > 0:
        heap = [(-size[c] / 1.0, c) for c in range(k) if size[c] > 1]
        heapq.heapify(heap)
        while extra > 0 and heap:
            _, c = heapq.heappop(heap)
            n_anch[c] += 1
            extra -= 1
            if n_anch[c] < size[c]:
                heapq.heappush(heap, (-size[c] / n_anch[c], c))
    weight = size / n
    # query order: by rank inside the cluster, then decreasing cluster weight, then column
    key_order = np.lexsort((np.arange(n), -weight[label], rank))
    is_anchor = rank < n_anch[label]
    order = key_order[is_anchor[key_order]]
    return Anchors(order=order.astype(int), label=label.astype(int), weight=weight, fallback=key_order.astype(int),
                   twin=inv.astype(int))


def tiny_estimates(model: MIRT2PL, anchors: Anchors, obs: np.ndarray, y: np.ndarray,
                   average: bool = True, init: np.ndarray | None = None) -> tuple[dict, np.ndarray]:
    """The anchor, IRT and p-IRT estimates of tinyBenchmarks from the observed outcomes (0-1 scale);
    the session mixes in the fourth, gp-IRT (:meth:`TinyBenchSession.estimates`).

    Parameters
    ----------
    model : MIRT2PL fitted on the sources.
    anchors : Anchors of the session's budget.
    obs : ndarray of int, shape (n_obs,)
        Observed task columns (anchors or not: every outcome is used).
    y : ndarray, shape (n_obs,)
        Their 0/1 outcomes (or pass rates).
    average : bool
        Average predictions over the Laplace ability posterior (else plug in the MAP).
    init : ndarray, shape (dim,), optional
        Warm start for the ability MAP.

    Returns
    -------
    estimates : dict with keys 'anchor', 'irt', 'p-irt' (floats in [0, 1])
    theta : ndarray, shape (dim,), the MAP ability.
    """
    obs = np.asarray(obs, dtype=int)
    y = np.asarray(y, dtype=float)
    N = model.n_tasks
    mu, cov = laplace_posterior(model.a[obs], model.b[obs], y, 1.0, init=init)
    p = predictive_probs(model.a, model.b, mu, cov if average else None)
    seen = np.zeros(N, dtype=bool)
    seen[obs] = True
    pirt = (y.sum() + p[~seen].sum()) / N
    irt = float(p.mean())
    # anchor-weighted: cluster mean of the observed outcomes, the IRT mean where none observed
    k = anchors.n_clusters
    n_obs_c = np.bincount(anchors.label[obs], minlength=k)
    s_obs_c = np.bincount(anchors.label[obs], weights=y, minlength=k)
    pred_c = np.bincount(anchors.label, weights=p, minlength=k) / np.maximum(np.bincount(anchors.label, minlength=k), 1)
    ybar = np.where(n_obs_c > 0, s_obs_c / np.maximum(n_obs_c, 1), pred_c)
    anchor = float(np.sum(anchors.weight * ybar))
    return {"anchor": anchor, "irt": irt, "p-irt": float(pirt)}, mu


class TinyBenchSession(Session):
    """Query the anchors of the budget in :attr:`Anchors.order`; estimate with gp-IRT (default).

    Un-asked outcomes are accepted: they enter the ability fit, p-IRT and (inside their cluster)
    the anchor estimate. Once every anchor is observed, further asks follow
    :attr:`Anchors.fallback`.
    """

    has_prior_estimate = False

    def __init__(self, fitted: FittedTinyBench, budget: int, seed: int, model: MIRT2PL, anchors: Anchors,
                 lam: float):
        super().__init__(fitted.tasks, budget, seed)
        self._fitted = fitted
        #: the IRT model (dimension chosen for this budget) and its anchors
        self.model = model
        self.anchors = anchors
        #: gp-IRT mixing weight used by this session
        self.lam = float(lam)

    def _select(self, exclude) -> int:
        free = self.anchors.order[~exclude[self.anchors.order]]
        if len(free):
            return int(free[0])
        fb = self.anchors.fallback
        return int(fb[np.flatnonzero(~exclude[fb])[0]])

    def _update(self, j, y):
        pass

    def estimates(self) -> dict:
        """Every estimate (0-1 scale): 'anchor', 'irt', 'p-irt' and 'gp-irt' (with :attr:`lam`).

        Raises
        ------
        BudgetError
            With no outcomes (tinyBenchmarks has no prior estimate).
        """
        self._require_outcomes()
        obs, y = self.told()
        if len(obs) == self.n_tasks:
            s = float(y.mean())
            return {"anchor": s, "irt": s, "p-irt": s, "gp-irt": s}
        # from the prior's start every call: a warm start from the last call made the estimate depend, by
        # about 1e-16, on how often it was asked for (an API trial)
        est, _ = tiny_estimates(self.model, self.anchors, obs, y, average=self._fitted.average)
        est["gp-irt"] = self.lam * est["anchor"] + (1 - self.lam) * est["p-irt"]
        return est

    def estimate(self) -> ScoreEstimate:
        """The configured estimate (default gp-IRT, 0-1 scale) as the point; no interval
        (tinyBenchmarks gives none). Raises BudgetError with no outcomes."""
        est = self.estimates()
        point = float(np.clip(est[self._fitted.estimator], 0.0, 1.0))
        return ScoreEstimate(point=point, n_queried=self.n_queried, budget=self.budget)


class FittedTinyBench(FittedModel):
    """IRT fits on the sources plus the held-out-source refits used to choose ``lam`` (and the
    dimension, when several are given).

    Attributes
    ----------
    models : dict dim -> MIRT2PL
        IRT model fitted on all sources (whitened), per candidate dimension.
    val_models : dict dim -> list of (MIRT2PL, ndarray)
        Refits without each validation fold of sources, each with the fold's held-out rows,
        shape (n_out, n_tasks).
    lambda_curve_ : dict (budget, dim) -> ndarray, shape (len(LAMBDA_GRID),)
        Validation criterion (mean absolute error, 0-1 scale) over ``LAMBDA_GRID``.
    choice_ : dict budget -> (dim, lam)
        The configuration chosen on the sources for each budget started so far.
    """

    nested_budgets = False

    def __init__(self, tasks: tuple[str, ...], models: dict, val_models: dict, params: TinyBench):
        self.tasks = tasks
        self.models = models
        self.val_models = val_models
        self.params = params
        self._anchors: dict[tuple[int, int], Anchors] = {}
        self.lambda_curve_: dict[tuple[int, int], np.ndarray] = {}
        self.choice_: dict[int, tuple[int, float]] = {}

    @property
    def estimator(self) -> str:
        """The estimator of the method's settings at fit time ('gp-irt', 'p-irt', 'irt' or 'anchor')."""
        return self.params.estimator

    @property
    def average(self) -> bool:
        """Whether the estimate averages over the candidate dimensions (the settings at fit time)."""
        return self.params.average

    @property
    def model(self) -> MIRT2PL:
        """The model of the first candidate dimension."""
        return next(iter(self.models.values()))

    def anchors(self, budget: int, dim: int | None = None) -> Anchors:
        """Anchor points of the fitted model of ``dim`` (default: first candidate) for ``budget`` (cached)."""
        dim = next(iter(self.models)) if dim is None else dim
        if (budget, dim) not in self._anchors:
            with threadpool_limits(1):
                self._anchors[budget, dim] = anchor_points(self.models[dim].embedding(), budget,
                                                           self.params.random_state)
        return self._anchors[budget, dim]

    def choose(self, budget: int) -> tuple[int, float]:
        """``(dim, lam)`` for ``budget``: fixed values, or the held-out-source choice (cached).

        Ties on the validation criterion go to the earlier candidate dimension and the smaller
        ``lam``. Without validation refits (fewer than 3 sources) ``lam`` is 0.5.
        """
        if budget not in self.choice_:
            dims = list(self.models)
            if self.params.lam is not None and len(dims) == 1:
                self.choice_[budget] = (dims[0], float(self.params.lam))
            elif not self.val_models[dims[0]]:
                lam = self.params.lam
                self.choice_[budget] = (dims[0], 0.5 if lam is None else float(lam))
            else:
                best = None
                for d in dims:
                    curve = self._validate(budget, d)
                    if self.params.lam is not None:
                        k = int(np.argmin(np.abs(LAMBDA_GRID - self.params.lam)))
                        crit, lam = curve[k], float(self.params.lam)
                    else:
                        k = int(np.argmin(curve))
                        crit, lam = curve[k], float(LAMBDA_GRID[k])
                    if best is None or crit < best[0] - 1e-12:
                        best = (crit, d, lam)
                self.choice_[budget] = (best[1], best[2])
        return self.choice_[budget]

    def lam(self, budget: int) -> float:
        """gp-IRT mixing weight for ``budget`` (see :meth:`choose`)."""
        return self.choose(budget)[1]

    def _validate(self, budget: int, dim: int) -> np.ndarray:
        """Replay each held-out source on the anchors of the refit without it; return the mean
        absolute error of gp-IRT over ``LAMBDA_GRID``.

        ``lam_rule='expected-mae'`` averages the error over the anchor design: an anchor is one
        task among its twins (tasks with identical source columns, hence identical embeddings,
        of which the medoid rule picks an arbitrary one), so its outcome is redrawn ``n_draws``
        times from the held-out agent's success rate on the twins. The big cluster of tasks no
        source solved is the case that matters: its anchor carries a large weight and an
        unlucky pick swings the anchor estimate by that weight. ``'observed'`` uses the actual
        anchor outcomes only.
        """
        p = self.params
        curves = []
        rng = np.random.default_rng(0)
        with threadpool_limits(1):
            for model, rows in self.val_models[dim]:
                anc = anchor_points(model.embedding(), budget, p.random_state)
                obs = anc.order
                w_anchor = anc.anchor_weights()
                n_twin = np.bincount(anc.twin)
                for row in rows:
                    est, _ = tiny_estimates(model, anc, obs, row[obs], average=p.average)
                    truth = row.mean()
                    d_p = est["p-irt"] - truth
                    if p.lam_rule == "expected-mae":
                        ybar_t = (np.bincount(anc.twin, weights=row) / n_twin)[anc.twin[obs]]
                        draws = rng.random((p.n_draws, len(obs))) < ybar_t
                        d_a = draws.astype(float) @ w_anchor - truth
                        curves.append(np.abs(np.outer(d_a, LAMBDA_GRID) + (1 - LAMBDA_GRID) * d_p).mean(0))
                    else:
                        curves.append(np.abs(LAMBDA_GRID * (est["anchor"] - truth) + (1 - LAMBDA_GRID) * d_p))
        curve = np.mean(curves, axis=0)
        self.lambda_curve_[budget, dim] = curve
        return curve

    def start(self, budget, seed=0):
        """A session querying the anchors of ``budget``.

        Raises
        ------
        BudgetError
            For a budget that is 0 (no prior estimate), negative, fractional or above n_tasks.
        """
        budget = check_budget(budget, len(self.tasks), allow_zero=False)
        dim, lam = self.choose(budget)
        return TinyBenchSession(self, budget, seed, self.models[dim], self.anchors(budget, dim), lam)


class TinyBench(Method):
    """tinyBenchmarks anchor points + IRT / p-IRT / gp-IRT (Polo et al. 2024).

    Parameters
    ----------
    dim : int or tuple of int
        IRT dimension (capped at ``n_sources - 1``), or candidate dimensions chosen per budget
        with ``lam`` on the held-out sources.
    estimator : {'gp-irt', 'p-irt', 'irt', 'anchor'}
        Which estimate is reported as the point; :meth:`TinyBenchSession.estimates` gives all.
    lam : float or None
        gp-IRT mixing weight in [0, 1]; None chooses it per budget on held-out sources.
    lam_rule : {'expected-mae', 'observed'}
        Validation criterion for ``lam`` (see :meth:`FittedTinyBench._validate`).
    n_val_folds : int
        Validation folds of the sources for ``lam`` (leave-one-out with fewer sources).
    n_draws : int
        Anchor-design redraws per held-out agent for ``lam_rule='expected-mae'``.
    average : bool
        Average predictions over the ability posterior (else plug in the MAP ability).
    sd_a, sd_b : float
        IRT prior standard deviations of slopes and difficulties (logits).
    random_state : int
        KMeans seed.

    Raises
    ------
    ValueError
        For an unknown estimator or rule, ``lam`` outside [0, 1], a ``dim`` below 1,
        ``n_val_folds`` below 2 or ``n_draws`` below 1.
    """

    name = "tinybench"
    accepts_missing = False  # needs a complete source matrix (its fit calls require_complete)
    accepts_pass_rates = True
    gives_interval = False  # a point only: no 90 % interval
    seed_kind = "deterministic"

    def __init__(self, dim: int | tuple[int, ...] = (1, 2, 3), estimator: str = "gp-irt", lam: float | None = None,
                 lam_rule: str = "expected-mae", n_val_folds: int = 8, n_draws: int = 256, average: bool = True,
                 sd_a: float = 1.0, sd_b: float = 3.0, random_state: int = 0):
        if estimator not in ESTIMATORS:
            raise ValueError(f"estimator must be one of {ESTIMATORS}, got {estimator!r}")
        if lam is not None and not 0.0 <= lam <= 1.0:
            raise ValueError(f"lam must be in [0, 1] or None, got {lam!r}")
        if lam_rule not in ("expected-mae", "observed"):
            raise ValueError(f"lam_rule must be 'expected-mae' or 'observed', got {lam_rule!r}")
        # entries checked as given (a re-trial: numpy made [True, 2] into [1, 2] first)
        dims = tuple(check_count("dim", d) for d in (dim if isinstance(dim, list | tuple | np.ndarray) else [dim]))
        if not dims:
            raise ValueError("dim must be a whole number >= 1 or a list of them, got an empty list")
        self.dim = dims[0] if len(dims) == 1 else dims
        self.estimator = estimator
        self.lam = lam
        self.lam_rule = lam_rule
        self.n_val_folds = check_count("n_val_folds", n_val_folds, 2)
        self.n_draws = check_count("n_draws", n_draws)
        self.average = check_flag("average", average)
        self.sd_a = check_positive("sd_a", sd_a)
        self.sd_b = check_positive("sd_b", sd_b)
        self.random_state = check_random_state("random_state", random_state)

    def fit(self, source: ResponseMatrix) -> FittedTinyBench:
        """Fit the IRT model on the sources (and the validation refits when ``lam`` is None).

        With fewer than 3 sources no validation is possible and ``lam`` defaults to 0.5.

        Raises
        ------
        DataError
            If ``source`` has missing cells.
        DataError
            With fewer than 2 source agents.
        """
        source.require_complete("tinybench")
        Y = np.asarray(source.rates())  # 0/1, or pass rates over repeated trials
        m = Y.shape[0]
        if m < 2:
            raise DataError(f"tinybench needs at least 2 source agents, got {m}")
        dims = list(dict.fromkeys(int(min(d, m - 1)) for d in np.atleast_1d(self.dim)))
        validate = (self.lam is None or len(dims) > 1) and m >= 3
        models, val = {}, {}
        with threadpool_limits(1):
            for d in dims:
                models[d] = fit_mirt2pl(Y, d, sd_a=self.sd_a, sd_b=self.sd_b)
                val[d] = []
                if validate:
                    perm = np.random.default_rng(0).permutation(m)
                    for out in np.array_split(perm, min(self.n_val_folds, m)):
                        keep = np.setdiff1d(np.arange(m), out)
                        mv = fit_mirt2pl(Y[keep], min(d, len(keep) - 1), sd_a=self.sd_a, sd_b=self.sd_b)
                        val[d].append((mv, Y[out].astype(float)))
        # a copy: the fitted model must not follow later edits of this method object (an audit changed
        # `estimator` after fit and the fitted model's estimates changed with it)
        return FittedTinyBench(source.tasks, models, val, copy.copy(self))
