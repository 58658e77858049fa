"""HSPR behind the ask / tell / estimate protocol (Algorithm 1 of the paper).

``HSPR(config).fit(source)`` runs the source fit (section 1) once; ``start(budget, seed)``
opens a session holding the importance-sampled posterior (sections 2-3), the acquisition
(section 4) and the decision (section 5).
"""

from __future__ import annotations

import warnings

import numpy as np

from ...data.matrix import ResponseMatrix
from ...errors import InputWarning
from ...parallel import physical_memory
from ...session import FittedModel, Method, ScoreEstimate, Session, check_event
from ..orders import midrange_order, uniform_order
from . import acquisition as acq
from .config import HSPRConfig, read_first_hint
from .decision import calibrate, calibration_residual, moved_interval, predictive_draws, predictive_quantiles
from .posterior import (
    P_EPS,
    map_proposal,
    observed_log_likelihood,
    outcome_log_terms,
    predictive_means,
    prior_precision,
    rates,
    sobol_normal,
)
from .source_fit import SourceFit, fit_source


class HSPR(Method):
    """Hierarchical score posterior recovery: the paper's method, as docs/HSPR_SPEC.md specifies it.

    Parameters
    ----------
    config : HSPRConfig or dict, optional
        Defaults: r=2, gamma=4, kappa=1, score acquisition, lambda=0.5, median. A dict is read
        by :meth:`HSPRConfig.from_dict` (ValueError naming an unknown or invalid setting).
    **settings
        Single settings that replace ``config``'s (``HSPR(rank=1)``).

    Raises
    ------
    ValueError
        For a ``config`` that is neither an HSPRConfig nor a dict, or an unknown or invalid
        setting.
    """

    name = "hspr"
    accepts_pass_rates = True

    def __init__(self, config: HSPRConfig | dict | None = None, **settings) -> None:
        if config is not None and not isinstance(config, (HSPRConfig, dict)):  # 5 raised AttributeError at fit, 0 meant defaults
            raise ValueError(f"config must be an HSPRConfig or a dict of its settings, got {type(config).__name__} "
                             f"{config!r}{read_first_hint('config', config)}")
        base = HSPRConfig.from_dict(dict(config)) if isinstance(config, dict) else config or HSPRConfig()
        self.config = base.replace(**settings) if settings else base

    def get_params(self) -> dict:
        """:meth:`HSPRConfig.to_dict` (every setting, JSON values)."""
        return self.config.to_dict()

    @classmethod
    def from_params(cls, params: dict) -> HSPR:
        """From :meth:`get_params` output; raises ValueError naming an unknown or invalid setting."""
        return cls(HSPRConfig.from_dict(dict(params)))

    @property
    def seed_kind(self) -> str:
        """'deterministic' on the Mid-Range query path (the query seed changes nothing), else 'adaptive'."""
        return "deterministic" if self.config.acquisition == "midrange" else "adaptive"

    def fit(self, source: ResponseMatrix) -> FittedHSPR:
        """Fit on the source matrix (n_sources, n_tasks). Missing cells (``source.missing``) are
        left out of the likelihood (:func:`~hspr.methods.hspr.source_fit.fit_source`); a
        complete matrix gives the spec's fit exactly. A bank of pass rates over repeated trials
        (``source.trials``) is fitted on the rates, and a session then takes a task's pass rate
        as its outcome (one fractional outcome per task: a quasi-likelihood that does not treat
        an agent's trials on one task as independent).

        Raises DataError with fewer than 2 source agents (HSPR_SPEC section 1)."""
        fit = fit_source(source.rates(), missing=source.missing, item_prior_scale=self.config.item_prior_scale)
        _warn_memory(source, fit.n_groups, self.config.n_nodes)
        return FittedHSPR(fit, source.tasks, self.config)


#: bytes a session holds per node and signature group at its peak (measured: 169 KB per group at 8,192 nodes, from
#: 1,826 to 7,089 groups, 2026-12-07): the (J, G) node arrays and the acquisition's temporaries
SESSION_BYTES_PER_CELL = 21


def _warn_memory(source: ResponseMatrix, n_groups: int, n_nodes: int) -> None:
    """An :class:`~hspr.errors.InputWarning` when a session on ``n_groups`` signature groups needs more than half the
    machine's memory (a scale trial: 60 agents x 20,000 tasks, each task its own group, took 3.3 GB in every live
    command and in each replay worker, with no word; a larger bank would be killed by the system unsaid). The text
    names the bank's tasks, the same for every fit of one replay (folds, a calibration's held-out sources): one line."""
    total = physical_memory()
    if total is None or SESSION_BYTES_PER_CELL * n_nodes * n_groups <= total / 2:
        return
    most = SESSION_BYTES_PER_CELL * n_nodes * source.n_tasks
    warnings.warn(f"{source.source}: an HSPR session ({n_nodes:,} nodes) on its {source.n_tasks:,} tasks needs up to "
                  f"{most / 1e9:.1f} GB (less where tasks share their source outcomes), against {total / 1e9:.1f} GB "
                  "of memory here, and a replay needs that much in each worker: run on a larger machine, or give a "
                  "--config with fewer n_nodes (a coarser posterior)", InputWarning, stacklevel=3)


class FittedHSPR(FittedModel):
    """HSPR source fit frozen for target inference; sessions share its Sobol points.

    Attributes ``shipped`` ((bank, fold) of the shipped configuration used) and ``selection``
    (the source-only :class:`~hspr.methods.hspr.selection.SelectionResult`) are set by
    ``hspr_auto``'s fit; None otherwise.
    """

    shipped: tuple[str, str] | None = None
    selection = None

    @property
    def nested_budgets(self) -> bool:
        """True: the query path does not depend on the budget, so one path serves every budget of a
        sweep. Not for the ``acquisition="uniform"`` ablation, which draws ``budget`` tasks at once
        (``Generator.choice``): its first B tasks at a larger budget are another sample."""
        return self.config.acquisition != "uniform"

    def __init__(self, fit: SourceFit, tasks: tuple[str, ...], config: HSPRConfig) -> None:
        self.fit_ = fit
        self.tasks = tasks
        self.config = config
        self.x_ = sobol_normal(1 + config.rank, config.n_nodes, config.node_seed)
        #: the posterior before any outcome, the same for every session of this model: filled by
        #: the first session, copied by the later ones (:meth:`HSPRSession._start_posterior`)
        self._prior_state: dict | None = None

    def __getstate__(self) -> dict:
        """Pickled without the prior-posterior arrays (tens of MB, rebuilt by the first session)."""
        state = self.__dict__.copy()
        state["_prior_state"] = None
        return state

    def with_config(self, config: HSPRConfig) -> FittedHSPR:
        """Same source fit under other settings (no refit): used by configuration selection. The
        copy keeps the sources' outcome kind (``binary_outcomes``, ``trials``: its sessions refuse a
        pass rate a bank of T trials cannot give, as this model's do), not ``fitted_settings``
        (the settings a selection chose, which ``config`` replaces).

        Raises ValueError when ``config`` changes ``item_prior_scale``, which needs a new source fit.
        """
        if config.item_prior_scale != self.config.item_prior_scale:
            raise ValueError(f"item_prior_scale {config.item_prior_scale} differs from this fit's "
                             f"{self.config.item_prior_scale}: fit again (HSPR(config).fit(source))")
        out = FittedHSPR(self.fit_, self.tasks, config)
        out.binary_outcomes, out.trials = self.binary_outcomes, self.trials
        return out

    def start(self, budget: int, seed: int = 0) -> HSPRSession:
        return self._session(budget, seed)

    def _session(self, budget: int, seed: int, initial_refresh: bool = True) -> HSPRSession:
        """The session class of this model (variants override it)."""
        return HSPRSession(self, budget, seed, initial_refresh)

    def resume(self, budget: int, seed: int, events, trust_log: bool = False) -> tuple[HSPRSession, list[str]]:
        """:meth:`FittedModel.resume`; a trusted log with at least ``refresh_every`` tells skips the
        session's prior-only posterior (its restore ends in a refresh that replaces it)."""
        events = list(events)
        for i, ev in enumerate(events):
            check_event(ev, i)
        n_tells = sum(ev[0] == "tell" for ev in events)
        lazy = trust_log and n_tells >= self.config.refresh_every
        sess = self._session(budget, seed, initial_refresh=not lazy)
        sess.trials = self.trials  # as start() sets it (a session of a trials bank reopened had none)
        return sess, sess.restore(events, trust_log)


class HSPRSession(Session):
    """One target agent under HSPR (HSPR_SPEC sections 3-5; the module docstring gives the steps).

    Attributes (J importance nodes, G signature groups, d = 1 + rank latent dimensions; node arrays
    in ``HSPRConfig.node_dtype``, float32 by default, column-major)
    ----------
    w : (J,) float64 normalised importance weights of the nodes (section 3)
    Z : (J, d) latent states at the nodes (ability, then residual factors)
    M : (J, G) predictive mean success rate of each group at each node (0-1)
    Vw : (J, G) within-node variance factors of each group's unqueried count (the score rule, Eqs. 10-12)
    conc_m : (J, len(multi)) Beta concentrations A + F of the groups with more than one task
    mu : (J,) predictive mean of the full score at each node (0-1)
    n, s, U : (G,) outcomes told, successes (a pass rate counts its fraction) and tasks still unqueried per group
    multi : indices of the groups with more than one task
    """

    has_prior_estimate = True
    accepts_pass_rates = True
    bounded_by_outcomes = False  # the paper's estimate, as HSPR_SPEC section 5 gives it (hspr_robust bounds its own)
    generic_width_forecast = True  # only where its own forecast meets a singular posterior covariance

    @property
    def adaptive_design(self) -> bool:
        """Whether the next task depends on the outcomes (not on the uniform or mid-range ablation's fixed path)."""
        return self.cfg.acquisition not in ("uniform", "midrange")

    def __init__(self, model: FittedHSPR, budget: int, seed: int, initial_refresh: bool = True) -> None:
        super().__init__(model.tasks, budget, seed)
        if model.binary_outcomes:  # fitted on 0/1 outcomes: a pass rate is a mistake, not a rate
            self.accepts_pass_rates = False
        cfg = self.cfg = model.config
        sf = self.sf = model.fit_
        self.x = model.x_
        self.kappa = cfg.kappa if cfg.group_uncertainty else None
        self.dtype = np.dtype(cfg.node_dtype)
        self.L = np.column_stack([sf.group_a, sf.group_v[:, : cfg.rank]])  # (G, d)
        self.gb = sf.group_b
        self.prec = prior_precision(cfg.rank, cfg.gamma)
        G = sf.n_groups
        self.n = np.zeros(G)
        self.s = np.zeros(G)
        self.U = sf.group_size.astype(float).copy()
        self._obs_g: list[int] = []
        self._obs_prior_s: list[float] = []
        self._obs_prior_f: list[float] = []
        self._obs_y: list[float] = []
        self._deferred: list[tuple[int, int]] | None = None  # tells held back while restore() runs
        self._logged: list[int] | None = None  # logged picks restore() replays instead of choosing
        self.rng = np.random.default_rng(self.seed)
        self._members = np.argsort(sf.labels, kind="stable")
        self._starts = np.concatenate([[0], np.cumsum(sf.group_size)])
        self._cache: tuple[int, ScoreEstimate, tuple[float, float, float]] | None = None
        self.multi = np.flatnonzero(sf.group_size > 1)
        self._multi_pos = np.full(G, -1)
        self._multi_pos[self.multi] = np.arange(len(self.multi))
        self.M: np.ndarray | None = None  # (J, G) predictive means, allocated by the first refresh
        self.Vw: np.ndarray | None = None  # (J, G) within-node variance factors
        self.conc_m: np.ndarray | None = None  # (J, len(multi)) A + F of the multi-task groups
        self._scratch: np.ndarray | None = None  # (J, len(multi)) float64 work buffer of the refresh
        if cfg.acquisition == "uniform":
            self._order = uniform_order(self.n_tasks, self.budget, self.seed)
        elif cfg.acquisition == "midrange":
            self._order = midrange_order(sf.pass_rate)
        self._cumulants: tuple[int, tuple] | None = None
        if initial_refresh:  # False only inside FittedHSPR.resume, whose restore() refreshes
            self._start_posterior(model)

    # -- posterior ------------------------------------------------------------------
    #: the arrays a refresh with no outcome sets (with Z, logw, mu and w it is the whole posterior)
    _PRIOR_ARRAYS = ("Z", "M", "Vw", "conc_m", "logw", "mu", "w")

    def _start_posterior(self, model: FittedHSPR) -> None:
        """The posterior before any outcome: :meth:`_refresh` on the first session of ``model``;
        later sessions copy its arrays (the prior refresh depends only on the model, not on the
        budget or seed), to the bit the same state at a few percent of the cost."""
        shared = getattr(model, "_prior_state", None)
        if shared is None:
            self._refresh()
            model._prior_state = {k: getattr(self, k).copy(order="K") for k in self._PRIOR_ARRAYS}
            return
        for k in self._PRIOR_ARRAYS:
            setattr(self, k, shared[k].copy(order="K"))

    def _refresh(self) -> None:
        """New MAP proposal, nodes and weights from all outcomes so far (Appendix A)."""
        self._cumulants = None
        obs = np.flatnonzero(self.n > 0)
        mu, Sigma = map_proposal(self.L[obs], self.gb[obs], self.n[obs], self.s[obs], self.prec, self.kappa)
        chol = np.linalg.cholesky(Sigma)
        self.Z = mu + self.x @ chol.T
        # log prior - log proposal; shared Gaussian constants cancel on normalisation
        logw = -0.5 * (self.Z**2) @ self.prec + 0.5 * (self.x**2).sum(axis=1)
        # baseline rates p_g(z_j) for every node and group, (J, G), computed in place in buffers
        # kept for the session; for observed groups, where log q enters the weights, q comes
        # from posterior.rates (never as 1 - p), in the node dtype like the rest of the refresh
        if self.M is None:
            # column-major: a tell rewrites one group's column, and the acquisition's products
            # read whole columns
            self.M = np.empty((len(self.Z), len(self.gb)), dtype=self.dtype, order="F")
            self.Vw = np.empty_like(self.M)
        # M = expit(eta) = 1/(1 + exp(-eta)), formed from -eta = Z (-L)' - b (negation is exact, so
        # this equals numerics.expit(eta) to the bit, one pass over the (J, G) array shorter)
        np.matmul(self.Z.astype(self.dtype), -self.L.T.astype(self.dtype), out=self.M)
        self.M -= self.gb.astype(self.dtype)
        eta_obs = self.M[:, obs]  # a copy: the logits of the observed groups, for their exact rates below
        np.negative(eta_obs, out=eta_obs)
        with np.errstate(over="ignore"):  # exp(-eta) = inf gives p = 0, clipped below
            np.exp(self.M, out=self.M)
        self.M += 1
        np.reciprocal(self.M, out=self.M)
        np.clip(self.M, P_EPS, 1 - P_EPS, out=self.M)
        # float64 and clipped: in float32 a rate of 1 - 1e-12 rounds to 1. The (J, multi) float64
        # arrays live in two buffers kept for the session (fresh pages cost as much as the arithmetic)
        if self._scratch is None:
            self._scratch = np.empty((len(self.Z), len(self.multi)), order="F")
            self.conc_m = np.empty_like(self._scratch)
        Pm = self._scratch
        np.copyto(Pm, self.M[:, self.multi])
        np.clip(Pm, P_EPS, 1 - P_EPS, out=Pm)
        if self.kappa is None:
            self.conc_m.fill(np.inf)
        else:  # kappa / (p (1 - p)), in place
            np.subtract(1, Pm, out=self.conc_m)
            self.conc_m *= Pm
            np.divide(self.kappa, self.conc_m, out=self.conc_m)
        if len(obs):
            p, q = rates(eta_obs)  # q to a few ulp where outcomes were seen
            pos = np.searchsorted(obs, np.asarray(self._obs_g))
            logw = logw + observed_log_likelihood(p, q, self.kappa, pos, np.asarray(self._obs_prior_s),
                                                  np.asarray(self._obs_prior_f), np.asarray(self._obs_y))
            m, conc = predictive_means(p, q, self.kappa, self.n[obs], self.s[obs])
            self.M[:, obs] = m
            k = self._multi_pos[obs]
            self.conc_m[:, k[k >= 0]] = conc[:, k >= 0]
        self.logw = logw
        np.subtract(self.dtype.type(1), self.M, out=self.Vw)
        self.Vw *= self.M
        self._scale_multi()
        self.mu = acq.node_scores(self.M, self.U, self.s.sum(), self.n_tasks)
        self._normalise()

    def _rates(self, cols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(p, q) in float64 at every node for the given group columns (:func:`~hspr.methods.hspr.posterior.rates`).

        The refresh instead takes the rates of every observed group at once from the node-dtype
        logits it has just formed (float32 by default: in float64 these (J, G_obs) exponentials
        and logarithms were most of a Full refresh).
        """
        return rates(self.gb[cols][None, :] + self.Z @ self.L[cols].T)

    def _scale_multi(self, g: int | None = None) -> None:
        """Vw[:, g] = m (1 - m) [1 + (U_g - 1)/(A + F + 1)] for the multi-task group ``g`` (singletons: factor 1).

        ``g=None``: every multi-task group, right after a refresh, when Vw already holds m (1 - m);
        the factor is then formed in the session's work buffer.
        """
        if g is None:
            gs = self.multi
            base = self.Vw[:, gs]
            f = np.add(self.conc_m, 1, out=self._scratch)
        else:
            gs = np.array([g])
            Mg = self.M[:, gs]
            base = Mg * (1 - Mg)
            f = self.conc_m[:, self._multi_pos[gs]] + 1
        # base * (1 + (U - 1) / (conc + 1)), the same operations in place on one (J, len(gs)) buffer
        np.divide(self.U[gs] - 1, f, out=f)
        f += 1
        f *= base
        self.Vw[:, gs] = f

    def conc_full(self) -> np.ndarray:
        """A + F for every node and group, (J, G); inf where it cannot matter (singleton groups)."""
        out = np.full(self.M.shape, np.inf)
        out[:, self.multi] = self.conc_m
        return out

    def _normalise(self) -> None:
        w = np.exp(self.logw - self.logw.max())
        self.w = w / w.sum()

    def _update(self, j: int, y: int) -> None:
        if self._deferred is not None:  # inside restore(): the posterior is rebuilt at the end
            self._deferred.append((j, y))
            return
        self._absorb(j, y, len(self.outcomes))

    def _count(self, j: int, y: int) -> tuple[int, float, float]:
        """Add outcome ``y`` of task ``j`` to the group counts; returns (group, prior successes, prior failures)."""
        g = int(self.sf.labels[j])
        ps, pf = self.s[g], self.n[g] - self.s[g]
        self._obs_g.append(g)
        self._obs_prior_s.append(ps)
        self._obs_prior_f.append(pf)
        self._obs_y.append(float(y))
        self.n[g] += 1
        self.s[g] += y
        self.U[g] -= 1
        self._cache = None
        self._cumulants = None
        return g, ps, pf

    def _absorb(self, j: int, y: int, k: int) -> None:
        """Condition on the ``k``-th outcome: a full refresh every ``refresh_every`` outcomes, else
        an incremental reweighting of the nodes (Appendix A)."""
        g, ps, pf = self._count(j, y)
        if k % self.cfg.refresh_every == 0:
            self._refresh()
            return
        cols = np.array([g])
        p, q = self._rates(cols)
        self.logw = self.logw + outcome_log_terms(p, q, self.kappa, np.array([ps]), np.array([pf]),
                                                  np.array([float(y)]))[:, 0]
        m, c = predictive_means(p, q, self.kappa, self.n[cols], self.s[cols])
        # mu_j = (sum s + sum_g U_g m_gj)/N changes only through group g
        self.mu += (y + self.U[g] * m[:, 0] - (self.U[g] + 1) * self.M[:, g]) / self.n_tasks
        self.M[:, g] = m[:, 0]
        if self._multi_pos[g] >= 0:
            self.conc_m[:, self._multi_pos[g]] = c[:, 0]
            self._scale_multi(g)
        else:
            self.Vw[:, g] = m[:, 0] * (1 - m[:, 0])
        self._normalise()

    def restore(self, events, trust_log: bool = False) -> list[str]:
        """:meth:`Session.restore`; with ``trust_log`` the logged asks are taken as chosen.

        Then no acquisition is computed: each logged pick only advances the query RNG exactly
        as :meth:`_pick` would have (one ``integers(n)`` call, n the candidates of its group at
        that moment), and the posterior is rebuilt once at the end: the counts of the outcomes
        up to the last refresh point, one :meth:`_refresh` (which recomputes nodes and weights
        from all counts), then the later outcomes incrementally. The state is the one the
        original session reached, to the bit (a test checks it).
        """
        if not trust_log:
            return super().restore(events)
        n_before = len(self.outcomes)
        self._deferred = []
        try:
            for i, ev in enumerate(events):
                check_event(ev, i)
                if ev[0] == "ask":
                    _, k, logged = ev
                    self._logged = [self._index[t] for t in logged]
                    got = self.ask_batch(k)
                    if got != list(logged):  # the log does not extend the pending tasks: keep it as asked
                        self.set_pending(logged)
                else:
                    self.tell(ev[1], self.logged_outcome(ev[2]))
        finally:
            self._logged = None
            deferred, self._deferred = self._deferred, None
            r = self.cfg.refresh_every
            n_after = n_before + len(deferred)
            last = (n_after // r) * r  # the last refresh point
            split = last - n_before if last > n_before else 0
            if self.M is None and not split:  # an aborted restore of a session resumed without a posterior
                split = len(deferred)
            for j, y in deferred[:split]:
                self._count(j, y)
            if split or self.M is None:
                self._refresh()
            for i, (j, y) in enumerate(deferred[split:]):
                self._absorb(j, y, n_before + split + i + 1)
        return []

    def _logged_picks(self, k: int, exclude: np.ndarray) -> list[int]:
        """The next ``k`` logged tasks not yet excluded, advancing the RNG as :meth:`_pick` does."""
        new = [j for j in dict.fromkeys(self._logged) if not exclude[j]][:k]
        if self.cfg.acquisition in ("score", "latent"):
            exclude = exclude.copy()
            for j in new:
                g = int(self.sf.labels[j])
                members = self._members[self._starts[g]:self._starts[g + 1]]
                self.rng.integers(int(np.count_nonzero(~exclude[members])))
                exclude[j] = True
        return new

    # -- acquisition -----------------------------------------------------------------
    def group_gains(self, pending: np.ndarray | None = None) -> np.ndarray:
        """Acquisition value of each group, shape (G,) (HSPR_SPEC section 4: the score rule's
        ``Cov(S, Y_g)^2 / Var(Y_g)``, Eqs. 10-12 and 23, the expected one-step drop in the full
        score's predictive variance; the latent rule of Eq. 13 for ``acquisition="latent"``).

        ``pending`` (G,) counts tasks already chosen in this batch: each is conditioned on its
        expected outcome per node, which leaves the node means unchanged and removes the task
        from its group's unqueried count (so only the within-node term moves).
        """
        if self.cfg.acquisition == "latent":
            return acq.latent_gains(self.w, self.M, self.Z)
        Vw = self.Vw
        if pending is not None and pending.any():
            gs = np.flatnonzero(pending)
            Vw = Vw.copy(order="K")  # column-major as stored (an audit: a row-major copy tripled a Full batch ask)
            conc = np.full((len(self.w), len(gs)), np.inf)
            k = self._multi_pos[gs]
            conc[:, k >= 0] = self.conc_m[:, k[k >= 0]]
            Vw[:, gs] = acq.within_node_variance(self.M[:, gs], conc + pending[gs], self.U[gs] - pending[gs])
        return acq.score_gains(self.w, self.M, Vw, self.mu, self.n_tasks)

    def _pick(self, gains: np.ndarray, exclude: np.ndarray) -> int:
        avail = np.bincount(self.sf.labels[~exclude], minlength=self.sf.n_groups)
        g = int(np.argmax(np.where(avail > 0, gains, -np.inf)))
        members = self._members[self._starts[g]:self._starts[g + 1]]
        cand = np.sort(members[~exclude[members]])
        return int(cand[self.rng.integers(len(cand))])

    def _select(self, exclude: np.ndarray) -> int:
        picks = self._logged_picks(1, exclude) if self._logged is not None else []
        if picks:
            return picks[0]
        if self.cfg.acquisition in ("uniform", "midrange"):
            return int(self._order[np.flatnonzero(~exclude[self._order])[0]])
        return self._pick(self.group_gains(), exclude)

    def _select_batch(self, k: int, exclude: np.ndarray) -> list[int]:
        if self._logged is not None:
            return self._logged_picks(k, exclude)
        if self.cfg.acquisition in ("uniform", "midrange", "latent") or k == 1:
            return super()._select_batch(k, exclude)
        exclude = exclude.copy()
        pending = np.zeros(self.sf.n_groups)
        np.add.at(pending, self.sf.labels[exclude & ~self._observed], 1)
        out = []
        for _ in range(k):
            j = self._pick(self.group_gains(pending), exclude)
            exclude[j] = True
            pending[self.sf.labels[j]] += 1
            out.append(j)
        return out

    # -- decision ---------------------------------------------------------------------
    def posterior_mean(self) -> float:
        """E[S | D], analytic: sum_j w_j mu_j (0-1 scale); the decision of the posterior-mean
        ablation (``decision='mean'``, HSPR_SPEC section 5; the paper's Eq. 14 uses the median).
        Held within the scores the recorded outcomes allow, so that at full budget it is the exact
        score (the weighted sum alone rounds to within about 1e-11 of it)."""
        return float(np.clip(self.w @ self.mu, *self.outcome_bounds()))

    def score_sd(self) -> float:
        """Posterior sd of the full score, sqrt(Var(S | D)) (0-1 scale; not in the spec:
        :func:`~hspr.methods.hspr.acquisition.score_variance`)."""
        return float(np.sqrt(acq.score_variance(self.w, self.M, self.conc_full(), self.U, self.s.sum(), self.n_tasks)))

    def draws(self) -> np.ndarray:
        """Posterior-predictive draws of S (0-1 scale), shape (n_draws,), on the fixed draw seed
        (Eq. 9, HSPR_SPEC section 5)."""
        return predictive_draws(self.w, self.M, self.conc_m, self.multi, self.U, self.s.sum(), self.n_tasks,
                                self.cfg.n_draws, self.cfg.draw_seed, self.kappa is not None)

    def count_cumulants(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Mean, variance and third cumulant of the unqueried success count at every node, each (J,).

        The same values as :func:`hspr.methods.hspr.decision.count_cumulants`, read off the
        session's running arrays: mean = N mu_j - sum s, variance = Vw @ U (Vw holds the
        per-task beta-binomial variance), and k3 = sum_g U_g Vw_g (1 - 2 m_g) (c + 2 U_g)/(c + 2)
        (c = A + F; c = inf for singletons and without group uncertainty).
        """
        if self._cumulants is not None and self._cumulants[0] == self.n_queried:
            return self._cumulants[1]
        U = self.U
        mean = self.mu * self.n_tasks - self.s.sum()
        Ud = U.astype(self.dtype)
        var = (self.Vw @ Ud).astype(float)
        k3 = var - 2 * ((self.Vw * self.M) @ Ud)
        if self.kappa is not None and len(self.multi):
            live = U[self.multi] > 1
            if live.any():
                cols = self.multi[live]
                Ul = U[cols]
                extra = self.Vw[:, cols] * (1 - 2 * self.M[:, cols]) * (Ul * (2 * Ul - 2) / (self.conc_m[:, live] + 2))
                k3 = k3 + extra.sum(axis=1)
        self._cumulants = (self.n_queried, (mean, var, k3))
        return mean, var, k3

    def quantiles(self, probs) -> np.ndarray:
        """Posterior-predictive quantiles of the full score (0-1 scale), shape (len(probs),)
        (Eqs. 14 and 16's median and the 90 % interval, HSPR_SPEC section 5).

        ``predictive='analytic'``: :func:`~hspr.methods.hspr.decision.predictive_quantiles`;
        ``'draws'``: ``np.quantile`` of :meth:`draws` (the median by ``np.median``, as the spec).
        """
        probs = np.atleast_1d(np.asarray(probs, dtype=float))
        if self.cfg.predictive == "draws":
            d = self.draws()
            q = np.quantile(d, probs)
            q[probs == 0.5] = np.median(d)
            return q
        mean, var, k3 = self.count_cumulants()
        return predictive_quantiles(self.w, mean, var, k3, self.s.sum(), self.n_tasks, int(self.U.sum()), probs)

    def estimate(self) -> ScoreEstimate:
        """Calibrated posterior-predictive median (Eqs. 14-16) with a 90 % credible interval.

        The interval is the 5 % and 95 % predictive quantiles moved by the calibration shift
        ``S_hat - S_.5`` of Eq. 16, so it holds the point, except that an end on the edge of the
        scores the outcomes allow stays there (:func:`~hspr.methods.hspr.decision.moved_interval`);
        both ends lie in that range (the point, kept as the paper's, may not: then the interval
        reaches to it).
        """
        if self._cache is None or self._cache[0] != self.n_queried:
            lo, median, hi = (float(v) for v in self.quantiles([0.05, 0.5, 0.95]))
            mean = self.posterior_mean()
            base = median if self.cfg.decision == "median" else mean
            resid = calibration_residual(self.w, self.M, self.n, self.s)
            point = calibrate(base, resid, self.cfg.lam, self.n_queried, self.n_tasks)
            # the interval moves with the calibration shift of Eq. 16, so it holds its own point
            ends = moved_interval(lo, hi, (point - base,), *self.outcome_bounds())
            est = ScoreEstimate(point=point, mean=mean, median=median, lower=ends[0], upper=ends[1],
                                n_queried=self.n_queried, budget=self.budget)
            self._cache = (self.n_queried, est, (lo, hi, base))
        return self._cache[1]

    def predictive_interval(self) -> tuple[float, float, float]:
        """``(lower, upper, decision)``: the 5 % and 95 % posterior-predictive quantiles of the
        full score before the calibration shift, and the decision's score it shifts (the median,
        or the mean for ``decision='mean'``), 0-1 scale; what :meth:`estimate` moves by ``S_hat -
        decision``, for a subclass that moves them to a point of its own."""
        HSPRSession.estimate(self)  # this class's, not a subclass's (which may call this method)
        return self._cache[2]

    def _variance_forecast(self, r: int) -> tuple[float, float]:
        """Var(S | D) now and its forecast after ``r`` more outcomes (used by :meth:`Session.expected_width`).

        Var(S | D) = B + W: B = Var_w(mu_j), the spread of the node scores (what the latent
        ability z leaves open), W = E_w[Var_j(S)], the outcome noise of the unobserved tasks
        (:meth:`count_cumulants`). The forecast is a Laplace (linearised) design calculation:

        * B is tracked through its part linear in z, beta' Sigma beta (Sigma = Cov_w(z), beta
          the weighted regression of mu_j on the nodes z_j);
        * the r tasks are chosen greedily as the score rule does (each adds Fisher information
          E_w[p_g (1 - p_g)] l_g l_g' to Sigma^-1, l_g the group's loading row, at most U_g per
          group; for the uniform / midrange ablations the average information of an unobserved
          task), giving Sigma_r by rank-one updates;
        * with rho = (U - r) / U of the unobserved tasks left, the forecast is
          rho^2 B (beta' Sigma_r beta) / (beta' Sigma beta) + rho W: the non-linear rest of B
          is assumed to shrink like its linear part (it is second order and in fact shrinks
          faster as the posterior concentrates).

        It ignores what the r outcomes reveal through the group (beta-binomial) effects, so it
        tends to overstate the variance left. Measured on Verified (``benchmarks/width_forecast.py``,
        114 targets, B = 50): realised final width 7.19 pp on average; forecast before any outcome
        8.16 pp (mean absolute error 1.34 pp), after 25 outcomes 7.83 pp (error 0.66 pp).

        Returns
        -------
        (float, float)
            Current and forecast variance of the score (0-1 scale squared).
        """
        w, Z, L, N = self.w, self.Z, self.L, self.n_tasks
        mu = self.mu
        W = float(w @ self.count_cumulants()[1]) / N**2
        mubar = float(w @ mu)
        B = float(w @ (mu - mubar) ** 2)
        U = N - self.n_queried
        rho = (U - r) / U
        Zc = Z - w @ Z
        Sigma = (Zc * w[:, None]).T @ Zc
        cov = Zc.T @ (w * (mu - mubar))
        try:
            beta = np.linalg.solve(Sigma, cov)
        except np.linalg.LinAlgError:
            return B + W, rho**2 * B + rho * W
        B_lin = float(min(cov @ beta, B))
        # h_g = E_w[p_g (1 - p_g)], the expected Bernoulli information weight of a task of group g,
        # p_g(z_j) the baseline rate: Vw holds m (1 - m) for unobserved singletons (m = p there);
        # multi-task groups and observed groups are recomputed from their rates
        h = (w.astype(self.dtype) @ self.Vw).astype(float)
        if len(self.multi):
            Mm = self.M[:, self.multi]
            h[self.multi] = w.astype(self.dtype) @ (Mm * (1 - Mm))
        obs = np.flatnonzero(self.n > 0)
        if len(obs):
            p, q = self._rates(obs)
            h[obs] = w @ (p * q)
        S = Sigma.copy()
        avail = self.U.astype(float).copy()
        if self.cfg.acquisition in ("score", "latent"):
            for _ in range(int(r)):
                SL = L @ S  # (G, d)
                qd = np.einsum("gd,gd->g", SL, L)
                bl = SL @ beta
                gain = np.where(avail > 0, h * bl**2 / (1 + h * qd), -np.inf)
                g = int(np.argmax(gain))
                v = SL[g]
                S = S - h[g] * np.outer(v, v) / (1 + h[g] * qd[g])
                avail[g] -= 1
        else:
            info = (avail * h)[:, None, None] * np.einsum("gd,ge->gde", L, L)
            I_bar = info.sum(axis=0) / max(avail.sum(), 1.0)
            S = np.linalg.inv(np.linalg.inv(Sigma) + r * I_bar)
        shrink = float(beta @ S @ beta) / B_lin if B_lin > 0 else 1.0
        return B + W, rho**2 * B * min(shrink, 1.0) + rho * W

    def effective_sample_size(self) -> float:
        """Kish ESS of the importance weights, 1/sum(w^2)."""
        return float(1.0 / (self.w**2).sum())
