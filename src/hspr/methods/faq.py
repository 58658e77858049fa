"""FAQ-style factorized active querying with a prediction-powered (AIPW) estimate (HSPR_SPEC section 8).

Source: Wu, Nair and Candès (2026), "Efficient Evaluation of LLM Performance with Statistical
Guarantees" (Factorized Active Querying, FAQ), which builds on active inference (Zrnic and
Candès 2024) and prediction-powered inference (Angelopoulos et al. 2023). The port:

1. Source fit: a logistic factor model ``P(Y_si = 1) = sigmoid(a_i . z_s - b_i)`` of rank
   ``r <= n_sources - 1`` (MAP, :mod:`hspr.irt.mirt2pl`), with the source factors whitened so
   the Gaussian prior of a new agent's factor, fitted to the source factors, is ``N(0, I)``.
2. Target: Laplace posterior of its factor ``z`` after every outcome; predictions
   ``f_i = E[sigmoid(a_i . z - b_i) | data]`` (probit approximation).
3. Queries without replacement, drawn at random (query seed) from
   ``q_t(i) ∝ (1 - eps - beta) * sqrt(f_i (1 - f_i)) / Σ + beta * info_i / Σ + eps / |R_t|``
   over the unqueried tasks ``R_t``: the variance-reduction (Neyman) term of active inference,
   an active-learning term ``info_i = f_i (1 - f_i) a_iᵀ Cov(z) a_i`` (expected information on the
   factor), and a uniform floor that keeps every inverse-probability weight bounded.
4. Estimate (finite-population AIPW / PPI with the model as predictor): each query t gives an
   unbiased estimate of the score, conditionally on the past,
   ``S_t = (Σ_{i ∉ R_t} y_i + Σ_{i ∈ R_t} f_t(i) + (y_{i_t} - f_t(i_t)) / q_t(i_t)) / N``
   (model prediction for the unqueried tasks, corrected by the inverse-probability-weighted
   residual of the queried one, predicted before it was seen). The reported point combines them
   with predictable weights ``∝ 1 / V_t``, ``V_t = Σ_R f(1-f)/q - Σ_R f(1-f)`` (the model's
   variance of ``N S_t``), so it stays unbiased; its 90 % interval is the normal interval of the
   martingale average. With no query yet, the estimate is the model's (source-prior)
   prediction; at full budget, the exact score.

On a bank of repeated trials the source fit, the factor posterior and the AIPW terms take each
task's pass rate as its outcome (a fractional outcome of the same likelihood, as HSPR does); the
model variances ``f (1 - f)`` are then those of one trial, an upper bound on a pass rate's.

``ScoreEstimate.mean`` carries the pure model (posterior-predictive) estimate
``(Σ observed + Σ_unobserved f) / N`` for comparison.
"""

from __future__ import annotations

import numpy as np
from threadpoolctl import threadpool_limits

from ..data.matrix import DataError, ResponseMatrix
from ..irt.mirt2pl import MIRT2PL, fit_mirt2pl, laplace_posterior, predictive_probs
from ..numerics import Z90
from ..params import check_count, check_positive
from ..session import FittedModel, Method, ScoreEstimate, Session


class FAQSession(Session):
    """Adaptive random queries and the AIPW estimate of :mod:`hspr.methods.faq`.

    Un-asked outcomes are accepted: they update the factor posterior and count as exactly known
    in every later AIPW term (they carry no inverse-probability term of their own).
    """

    has_prior_estimate = True
    adaptive_design = True
    design_depends_on_outcomes = True  # each AIPW term uses the draw probability of its ask

    def __init__(self, fitted: FittedFAQ, budget: int, seed: int):
        super().__init__(fitted.tasks, budget, seed)
        self._f = fitted
        self._rng = np.random.default_rng(self.seed)
        r = fitted.model.dim
        self._mu = np.zeros(r)
        self._cov = np.eye(r)
        self._p = fitted.prior_probs.copy()
        self._yfull = np.zeros(self.n_tasks)
        # per random query: task, q, f, sum of f over R_t, tasks outside R_t, V_t
        self._steps: list[tuple[int, float, float, float, np.ndarray, float]] = []

    # -- queries -----------------------------------------------------------------
    def _select(self, exclude) -> int:
        return self._select_batch(1, exclude)[0]

    def _select_batch(self, k, exclude) -> list[int]:
        """Draw ``k`` tasks without replacement from ``q_t``; later picks of a batch see the
        earlier ones as excluded (their outcomes are not known yet, the posterior is unchanged)."""
        exclude = exclude.copy()
        out = []
        a = self._f.model.a
        for _ in range(k):
            R = np.flatnonzero(~exclude)
            f = self._p[R]
            v = f * (1 - f)
            q = self._policy(v, a[R])
            u = self._rng.random()
            pos = int(min(np.searchsorted(np.cumsum(q), u * q.sum(), side="right"), len(R) - 1))
            j = int(R[pos])
            # model variance of N * S_t; exactly 0 only when one task was left (the term is exact)
            V = max(float(np.sum(v / q) - np.sum(v)), 1e-12) if len(R) > 1 else 0.0
            self._steps.append((j, float(q[pos]), float(f[pos]), float(f.sum()), exclude.copy(), V))
            exclude[j] = True
            out.append(j)
        return out

    def _policy(self, v: np.ndarray, a_R: np.ndarray) -> np.ndarray:
        n = len(v)
        eps, beta = self._f.eps, self._f.beta
        q = np.full(n, eps / n)
        s = np.sqrt(v)
        rest = 1.0 - eps
        if beta > 0:
            info = v * np.einsum("ij,jk,ik->i", a_R, self._cov, a_R)
            if info.sum() > 0:
                q += beta * info / info.sum()
                rest -= beta
        q += rest * (s / s.sum() if s.sum() > 0 else 1.0 / n)
        return q / q.sum()

    def _update(self, j, y):
        self._yfull[j] = y
        model = self._f.model
        obs = np.flatnonzero(self._observed)
        self._mu, self._cov = laplace_posterior(model.a[obs], model.b[obs], self._yfull[obs], 1.0, init=self._mu)
        self._p = predictive_probs(model.a, model.b, self._mu, self._cov)

    # -- estimates ---------------------------------------------------------------
    def model_estimate(self) -> tuple[float, float]:
        """Posterior-predictive mean of the score and its variance (0-1 scale).

        Variance: Bernoulli noise of the unobserved tasks plus the factor uncertainty by the
        delta method, ``(Σ_U f(1-f) + gᵀ Cov(z) g) / N²`` with ``g = Σ_U f(1-f) a_i``.
        """
        seen = self._observed
        p = self._p
        un = ~seen
        N = self.n_tasks
        mean = (self._yfull[seen].sum() + p[un].sum()) / N
        v = p[un] * (1 - p[un])
        g = v @ self._f.model.a[un]
        var = (v.sum() + g @ self._cov @ g) / N**2
        return float(mean), float(var)

    def aipw_terms(self) -> tuple[np.ndarray, np.ndarray]:
        """Per-query AIPW estimates ``S_t`` and their model variances ``V_t / N²`` (0-1 scale),
        for the random queries whose outcome (and every outcome outside ``R_t``) is known."""
        seen = self._observed
        N = self.n_tasks
        if not self._steps:
            return np.empty(0), np.empty(0)
        j, q, f, sum_r, v = (np.array(c) for c in zip(*((t[0], t[1], t[2], t[3], t[5]) for t in self._steps)))
        E = np.stack([t[4] for t in self._steps])  # (n_steps, N): the tasks outside each step's R_t
        ok = seen[j] & ~(E & ~seen).any(axis=1)
        S = (np.where(E, self._yfull, 0.0).sum(axis=1) + sum_r + (self._yfull[j] - f) / q) / N
        return S[ok], v[ok] / N**2

    def estimate(self) -> ScoreEstimate:
        """AIPW point (model prediction corrected by weighted residuals) with a 90 % interval;
        the prior prediction with no outcomes; the exact score once every task is observed.
        ``mean`` is the model's own posterior-predictive mean, before the AIPW correction (an API
        trial read it as the point's mean: the two differ by that correction); ``median`` is None."""
        self._require_outcomes()
        N, n = self.n_tasks, self.n_queried
        s_obs = float(self._yfull[self._observed].sum())
        if n == N:
            s = s_obs / N
            return ScoreEstimate(point=s, mean=s, median=s, lower=s, upper=s, n_queried=n, budget=self.budget)
        lo_f, hi_f = s_obs / N, (s_obs + N - n) / N
        m_mean, m_var = self.model_estimate()
        S, V = self.aipw_terms()
        if len(S) == 0 or self._f.estimator == "model":
            point, var = m_mean, m_var
        elif (V <= 0).any():  # a query drawn from a single remaining task: that term is exact
            point, var = float(S[V <= 0][-1]), 0.0
        else:
            w = (1.0 / V) / np.sum(1.0 / V)
            point = float(w @ S)
            var_model = float(np.sum(w**2 * V))
            if len(S) >= 10:
                sw2 = float(np.sum(w**2))
                var_emp = float(np.sum(w**2 * (S - point) ** 2)) / max(1.0 - sw2, 1e-6)
                var = max(var_emp, var_model) if self._f.interval == "max" else var_emp
            else:
                var = var_model
        point = float(np.clip(point, lo_f, hi_f))
        half = Z90 * np.sqrt(max(var, 0.0))
        return ScoreEstimate(point=point, mean=float(np.clip(m_mean, lo_f, hi_f)), median=None,
                             lower=float(max(lo_f, point - half)), upper=float(min(hi_f, point + half)),
                             n_queried=n, budget=self.budget)


class FittedFAQ(FittedModel):
    """Factor model fitted on the sources; starts :class:`FAQSession` s.

    Attributes
    ----------
    model : MIRT2PL
        Rank-r logistic factor model, whitened source factors.
    prior_probs : ndarray, shape (n_tasks,)
        Source-prior predictive probabilities (0-1) of a new agent.
    """

    nested_budgets = True  # the query path does not depend on the budget

    def __init__(self, tasks, model: MIRT2PL, eps, beta, estimator, interval):
        self.tasks = tasks
        self.model = model
        self.eps = eps
        self.beta = beta
        self.estimator = estimator
        self.interval = interval
        self.prior_probs = predictive_probs(model.a, model.b, np.zeros(model.dim), np.eye(model.dim))

    def start(self, budget, seed=0):
        return FAQSession(self, budget, seed)


class FAQ(Method):
    """FAQ port: logistic factor model, Bayesian factor update, active queries, AIPW estimate.

    Parameters
    ----------
    rank : int
        Factor rank (capped at ``n_sources - 1``).
    eps : float
        Uniform share of the query distribution, in (0, 1]; bounds the weights ``1/q``.
    beta : float
        Share of the active-learning (factor information) term, ``eps + beta <= 1``.
    estimator : {'aipw', 'model'}
        Reported point: the prediction-powered AIPW estimate (default) or the pure model
        posterior-predictive mean (also given as ``ScoreEstimate.mean`` either way).
    interval : {'max', 'empirical'}
        Variance of the AIPW average: the larger of the empirical and model-based variances
        (default) or the empirical one alone.
    sd_a, sd_b : float
        Prior standard deviations of loadings and difficulties in the source fit.

    Raises
    ------
    ValueError
        For parameters outside their ranges.
    """

    name = "faq"
    accepts_missing = False  # needs a complete source matrix (its fit calls require_complete)
    accepts_pass_rates = True
    seed_kind = "adaptive"

    def __init__(self, rank: int = 3, eps: float = 0.1, beta: float = 0.0, estimator: str = "aipw",
                 interval: str = "max", sd_a: float = 1.0, sd_b: float = 3.0):
        if not 0 < eps <= 1 or not 0 <= beta <= 1 - eps:
            raise ValueError(f"need 0 < eps <= 1 and 0 <= beta <= 1 - eps, got eps={eps}, beta={beta}")
        if estimator not in ("aipw", "model"):
            raise ValueError(f"estimator must be 'aipw' or 'model', got {estimator!r}")
        if interval not in ("max", "empirical"):
            raise ValueError(f"interval must be 'max' or 'empirical', got {interval!r}")
        self.rank = check_count("rank", rank)
        self.eps = float(eps)
        self.beta = float(beta)
        self.estimator = estimator
        self.interval = interval
        self.sd_a = check_positive("sd_a", sd_a)
        self.sd_b = check_positive("sd_b", sd_b)

    def fit(self, source: ResponseMatrix) -> FittedFAQ:
        """Fit the factor model on the sources.

        Raises
        ------
        DataError
            If ``source`` has missing cells.
        DataError
            With fewer than 2 source agents.
        """
        source.require_complete("faq")
        Y = np.asarray(source.rates())  # 0/1, or pass rates over repeated trials
        if Y.shape[0] < 2:
            raise DataError(f"faq needs at least 2 source agents, got {Y.shape[0]}")
        with threadpool_limits(1):
            model = fit_mirt2pl(Y, min(self.rank, Y.shape[0] - 1), sd_a=self.sd_a, sd_b=self.sd_b)
        return FittedFAQ(source.tasks, model, self.eps, self.beta, self.estimator, self.interval)
