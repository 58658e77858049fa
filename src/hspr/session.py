"""The ask / tell / estimate protocol that HSPR and every peer method implement.

Data flow (the Optuna ask/tell pattern): ``method.fit(source)`` returns a fitted model;
``model.start(budget, seed)`` returns a :class:`Session`; the caller owns the expensive task
execution: it asks which task to run, runs it, and tells the outcome. The replay harness is
just a caller that answers from an archived row; the live CLI answers from the SWE-bench
harness. Neither special-cases a method.
"""

from __future__ import annotations

import contextlib
import copy
import decimal
import functools
import inspect
import math
import numbers
import traceback
import warnings
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType

import numpy as np

from .data.matrix import DataError, ResponseMatrix
from .errors import HsprError, MethodError, UnaskedTaskWarning, UnknownIdError, brief
from .outcomes import SPELLINGS, describe_outcome, is_ambiguous_one, is_whole_outcome, snap_pass_rate
from .params import NOT_NUMBERS, is_number
from .shift_report import ShiftReport


class BudgetError(HsprError):
    """Raised for a budget that is not a whole number in [0, n_tasks], when it is spent (``ask``), or
    for an estimate before any outcome from a method without a prior estimate."""


#: the level of the interval every method reports by default, and the one replay and report measure (coverage,
#: width): 90 % (HSPR_SPEC section 7)
NOMINAL_LEVEL = 0.90

#: how far (0-1 scale) a :class:`ScoreEstimate`'s lower end may lie above its upper end by rounding before the
#: ends are taken for swapped (below it, the lower end is set to the upper)
SWAP_TOLERANCE = 1e-12

#: a method's ``seed_kind`` -> the query seeds ``hspr replay`` runs it on by default: 10 random draws of tasks
#: (``sampling``), 5 paths whose seeds break ties (``adaptive``), or one path (``deterministic``)
SEEDS_BY_KIND = MappingProxyType({"sampling": tuple(range(10)), "adaptive": tuple(range(5)), "deterministic": (0,)})


@dataclass(frozen=True)
class ScoreEstimate:
    """A full-bank score estimate; every value on the 0-1 scale.

    Attributes
    ----------
    point : float
        The method's reported estimate (for HSPR the calibrated posterior-predictive median,
        Eq. 16: the median shifted by the calibration offset, so it can differ from ``median``).
        Every method but the paper's HSPR keeps it (and the interval) within the range the
        recorded outcomes leave the score (:meth:`Session.outcome_bounds`); ``hspr``, kept exactly
        as specified, can report a point below the successes already seen (e.g. 0.0 after 3
        successes of 500 tasks): ``estimate.within(*session.outcome_bounds())`` clips it.
    mean, median : float or None
        Posterior(-predictive) mean and median where the method has a posterior, else None.
    lower, upper : float or None
        Credible (or confidence) interval at ``level`` (90 % unless the method's settings say
        otherwise) where the method has one, else None.
    n_queried : int
        Distinct outcomes the estimate conditions on.
    budget : int
        The session's budget. Both are whole numbers, 0 or more (a numpy integer or ``10.0`` is kept as an int;
        text, ``2.5``, a negative number or None raise :class:`~hspr.errors.HsprError`).
    level : float
        Nominal coverage of ``lower``, ``upper`` (default 0.90; ATLAS, PTA-IRT, DISCO and the
        ridge map take a ``level`` setting).
    shift : ShiftReport or None
        Shift diagnostic, for methods that compute one.
    widened : bool
        Set, not given: True when the interval was given without the point and extended to reach
        it (below); kept by :meth:`within`, computed anew by :func:`dataclasses.replace`. A replay
        record says so (``interval_widened``) and the report counts such runs per method (an
        extension trial: 84 of 84 repairs of a method of one's own went unsaid).

    Notes
    -----
    The point always lies inside its own interval: an interval given without the point is
    extended to reach it (``lower = min(lower, point)``, ``upper = max(upper, point)``).
    """

    point: float
    mean: float | None = None
    median: float | None = None
    lower: float | None = None
    upper: float | None = None
    n_queried: int = 0
    budget: int = 0
    level: float = NOMINAL_LEVEL
    shift: ShiftReport | None = None
    widened: bool = field(default=False, init=False, compare=False)

    def within(self, lo: float, hi: float) -> ScoreEstimate:
        """This estimate with point, mean, median and interval bounds clipped to ``[lo, hi]``
        (0-1 scale, ``lo <= hi``): the range the recorded outcomes leave the full score
        (:meth:`Session.outcome_bounds`). The truth lies in it, so a clipped value is never
        farther from the truth, and an interval that held the truth still holds it.

        Raises ValueError when ``lo > hi`` (every value would be clipped to ``hi``)."""
        if not lo <= hi:
            raise ValueError(f"within(lo, hi) needs lo <= hi, got lo={lo!r}, hi={hi!r}")

        def clip(v):
            return None if v is None else min(max(v, lo), hi)

        out = replace(self, point=clip(self.point), mean=clip(self.mean), median=clip(self.median),
                      lower=clip(self.lower), upper=clip(self.upper))
        object.__setattr__(out, "widened", self.widened)  # clipping keeps the order: the flag is this one's
        return out

    def __post_init__(self) -> None:
        for name in ("point", "mean", "median", "lower", "upper"):  # plain floats, whatever numpy gave
            value = getattr(self, name)
            if isinstance(value, np.ndarray) and value.ndim == 0:
                value = value[()]  # its numpy scalar (a time span's .item() is an int: a re-trial)
            if value is None and name == "point" or value is not None and (
                    isinstance(value, NOT_NUMBERS) or not isinstance(value, (numbers.Real, decimal.Decimal))):
                # a method-writer's trial: an array of one value (a model's predict) gave numpy's TypeError
                what = (f"an array of shape {value.shape}" if isinstance(value, np.ndarray)
                        else f"{type(value).__name__} {brief(value)}")
                raise HsprError(f"ScoreEstimate: {name} must be a number (0-1 scale){'' if name == 'point' else ' or None'},"
                                f" got {what}" + (": give float(x[0]) for an array of one value"
                                                  if isinstance(value, np.ndarray) and value.size == 1 else ""))
            if value is not None:
                try:
                    object.__setattr__(self, name, float(value))
                except OverflowError:  # a re-trial: 10**400 raised it bare; any finite float outside [-1, 2] is refused below
                    raise HsprError(f"ScoreEstimate: {name} must be a number on the 0-1 scale, got {type(value).__name__} "
                                    f"{brief(value)}, too large for a float") from None
        for name in ("n_queried", "budget"):  # counts (an extension trial: an n_queried of another type was accepted)
            count = whole_number(getattr(self, name))
            if count is None or count < 0:
                raise HsprError(f"ScoreEstimate: {name} must be a whole number of tasks, 0 or more, got "
                                f"{type(getattr(self, name)).__name__} {brief(getattr(self, name))}")
            object.__setattr__(self, name, count)
        if not is_number(self.level) or not 0 < self.level < 1:
            raise HsprError(f"ScoreEstimate: level must be the interval's level in (0, 1), e.g. 0.9, got {self.level!r}")
        # a method-writer's trial: one end alone was kept (coverage '-'), and swapped ends became a zero-width interval
        if (self.lower is None) != (self.upper is None):
            raise HsprError(f"ScoreEstimate: an interval needs both ends or neither, got lower={self.lower!r}, "
                            f"upper={self.upper!r}")
        if self.lower is not None and self.lower > self.upper:
            if self.lower - self.upper > SWAP_TOLERANCE:
                raise HsprError(f"ScoreEstimate: lower {self.lower!r} is above upper {self.upper!r}: are the ends swapped?")
            object.__setattr__(self, "lower", self.upper)  # a rounding's crossing (a re-trial: 0.30000000000000004 > 0.3)
        if self.lower is not None and not self.lower <= self.point <= self.upper:
            object.__setattr__(self, "widened", True)
        if self.lower is not None and self.lower > self.point:
            object.__setattr__(self, "lower", float(self.point))
        if self.upper is not None and self.upper < self.point:
            object.__setattr__(self, "upper", float(self.point))

    @property
    def width(self) -> float | None:
        """Width of the credible interval (0-1 scale) or None."""
        if self.lower is None or self.upper is None:
            return None
        return self.upper - self.lower

    def to_dict(self) -> dict:
        """Plain JSON-ready dict: point, mean, median, lower and upper on the 0-1 scale (``scale``
        says so), the interval's ``level`` (None without an interval), ``widened`` (:attr:`widened`),
        ``n_queried``, ``budget`` and ``shift`` (:meth:`ShiftReport.to_dict`, or None)."""
        return {
            "point": self.point,
            "mean": self.mean,
            "median": self.median,
            "lower": self.lower,
            "upper": self.upper,
            "level": None if self.width is None else self.level,  # no interval, no level
            "scale": "0-1",  # point .. upper are shares of the bank's tasks, not pp (a trial: beside *_pp keys)
            "widened": self.widened,  # the interval missed its point and was extended to it (as a replay record says)
            "n_queried": self.n_queried,
            "budget": self.budget,
            "shift": None if self.shift is None else self.shift.to_dict(),
        }


def check_event(ev, i: int) -> None:
    """HsprError unless ``ev`` is an event :meth:`Session.restore` takes: ``("ask", k, tasks)`` or
    ``("tell", task, outcome)`` (event ``i`` of the log; another type was applied as a tell)."""
    if not isinstance(ev, (tuple, list)) or len(ev) != 3 or ev[0] not in ("ask", "tell") \
            or (ev[0] == "ask" and not _ask_event(ev[1], ev[2])):
        raise HsprError(f"event {i} of the log is {brief(ev, 60)}; events are ('ask', k, [task ids]) and "
                        "('tell', task id, outcome), an ask listing at most k ids")


def _ask_event(k, tasks) -> bool:
    """Whether ``(k, tasks)`` can be a logged ask: ``tasks`` a list of at most ``k`` ids (fewer when
    the budget had less left). An API trial: ``("ask", 1, None)`` raised a TypeError and an ask of 1
    logged with 3 ids left 3 tasks pending."""
    n = whole_number(k)
    return (n is not None and n >= 1 and isinstance(tasks, (list, tuple)) and len(tasks) <= n
            and all(isinstance(t, str) for t in tasks))


def whole_number(x) -> int | None:
    """``x`` as an int when it is a whole number given as a number: an int of any size, a float
    or numpy scalar (``5.0``), a 0-d array (``np.array(5)``), a ``Decimal('5')`` or
    ``Fraction(10, 2)``; None for anything else (bools, text, NaN, inf, ``2.5``, a ``Decimal`` above 1e100,
    a numpy time span or date: ``np.timedelta64(5)`` is not 5 tasks)."""
    if isinstance(x, np.ndarray) and x.ndim == 0:
        x = x[()]
    if isinstance(x, np.generic) and not isinstance(x, NOT_NUMBERS):  # a re-trial: .item() of a unitless time
        # span is the int 5
        x = x.item()
    if isinstance(x, NOT_NUMBERS) or not isinstance(x, (numbers.Real, decimal.Decimal)):
        return None
    if isinstance(x, numbers.Integral):
        return int(x)
    if isinstance(x, decimal.Decimal) and (not x.is_finite() or x.adjusted() > 100):  # 1e1000000: minutes to int()
        return None
    try:  # NaN and inf of any float type (a re-trial: numpy's longdouble gave int()'s ValueError)
        return int(x) if x == int(x) else None
    except (ValueError, OverflowError):
        return None


def check_budget(budget, n_tasks: int, allow_zero: bool = True) -> int:
    """Validate a budget (a whole number of distinct tasks, 0 <= budget <= n_tasks).

    Raises
    ------
    BudgetError
        If ``budget`` is not an integer (floats with a fractional part, bools and strings are
        refused), is negative, exceeds ``n_tasks``, or is 0 where the method has no prior estimate.
    """
    b = whole_number(budget)
    if b is None:
        fraction = isinstance(budget, (float, np.floating)) and math.isfinite(budget)
        raise BudgetError(f"budget must be a whole number of tasks, got {brief(budget)}"
                          + ("; to give a fraction of the bank use round(fraction * n_tasks)" if fraction else ""))
    if b < 0:
        raise BudgetError(f"budget must be >= 0, got {brief(b)}")
    if b > n_tasks:
        raise BudgetError(f"budget {brief(b)} exceeds the {n_tasks} tasks in the bank")
    if b == 0 and not allow_zero:
        raise BudgetError("budget 0: this method has no prior estimate; give a budget of at least 1 task")
    return b


def feasible_bounds(n_success: float, n_observed: int, n_tasks: int) -> tuple[float, float]:
    """The full scores still possible after ``n_observed`` outcomes summing to ``n_success``
    (successes, or pass rates summed) on a bank of ``n_tasks`` tasks.

    Returns ``(s/N, (s + (N - n))/N)`` on the 0-1 scale (Eq. 2 of the paper: the observed part is
    exact); the whole numbers are subtracted first, so that at full budget both ends are the same
    float (``(s + N) - N`` rounds away from ``s`` for a sum of pass rates: a trial found the upper end
    below the lower one and every estimate refused).
    """
    return n_success / n_tasks, (n_success + (n_tasks - n_observed)) / n_tasks


def finite_real(x: numbers.Real) -> bool:
    """Whether real number ``x`` is finite; an int of any size is (``math.isfinite`` would turn
    ``10**400`` into a float and overflow)."""
    return isinstance(x, numbers.Integral) or math.isfinite(x)


def check_seed(seed) -> int:
    """Validate a session seed (a whole number >= 0; numpy integers too) and return it as an int.

    Raises
    ------
    HsprError
        For None, a bool, a float, a string, a numpy time span (a subclass of numpy's integers) or a
        negative number.
    """
    if not is_number(seed, numbers.Integral) or seed < 0:
        raise HsprError(f"seed must be a whole number >= 0, got {seed!r} (a fixed seed gives the same asks and "
                        "estimate on every run; replays use 0, 1, 2, ...)")
    return int(seed)


def budget_from_fraction(fraction: float, n_tasks: int) -> int:
    """``B = round(f * N)`` (HSPR_SPEC section 7); raises BudgetError outside (0, 1].

    Python's ``round`` on the floating-point product, as the spec's reference: a product of exactly
    one half goes to the even integer (0.05 x 730 = 36.5 -> 36 on Pro, 0.1 x 25 = 2.5 -> 2, 0.1 x 35
    = 3.5 -> 4). Kept so that budgets, and every published table, match the spec's (a hostile
    trial read 2 and 4 as inconsistent). BudgetError also for a fraction that is not a number (a string such
    as '0.1', None: an API trial got a bare TypeError) and for ``n_tasks`` that is not a whole number >= 1."""
    if not is_number(fraction):
        raise BudgetError(f"budget fraction must be a number in (0, 1], got {fraction!r}"
                          + (f"; give float({fraction!r})" if isinstance(fraction, str) else ""))
    if not is_number(n_tasks, numbers.Integral) or n_tasks < 1:
        raise BudgetError(f"n_tasks must be a whole number >= 1 (the bank's tasks), got {n_tasks!r}")
    if not 0 < fraction <= 1:
        raise BudgetError(f"budget fraction must be in (0, 1], got {fraction}")
    return int(round(fraction * n_tasks))


@contextlib.contextmanager
def _method_code(obj, step: str):
    """Run ``step`` of a method's own code (``fit``, ``start``, ``_select``, ``_update``, ``estimate``). An
    exception raised in the code of a class outside hspr (a method of one's own: an installed package's, or a
    script's) becomes an :class:`~hspr.errors.HsprError` naming the class, the step, the error and the line
    that raised it, which the command line shows as a message, where it printed a traceback naming no method
    (a method-writer's trial). An error hspr's own code raises, or an HsprError, passes unchanged."""
    try:
        yield
    except HsprError:
        raise
    except Exception as exc:
        cls = type(obj)
        own = cls.__module__.partition(".")[0]
        frames = [(f, line, f.f_globals.get("__name__", "").partition(".")[0])
                  for f, line in traceback.walk_tb(exc.__traceback__)]
        if own == "hspr" or not frames or frames[-1][2] == "hspr":
            raise
        mine = [(f, line) for f, line, top in frames if top == own]
        at = f" at {mine[-1][0].f_code.co_filename}:{mine[-1][1]}" if mine else ""
        raise HsprError(f"{cls.__module__}.{cls.__qualname__}.{step} raised {type(exc).__name__}: {exc}{at} (in that "
                        "method's own code, not hspr's)") from exc


def _bounded_estimate(estimate):
    """``Session.estimate`` kept within :meth:`Session.outcome_bounds` when the session is
    :attr:`~Session.bounded_by_outcomes`; a subclass's estimate that calls ``super().estimate()``
    is bounded once, on its own result (the inner call is left as the parent computes it)."""
    def bounded(self) -> ScoreEstimate:
        if self.__dict__.get("_estimating"):
            return estimate(self)
        self._estimating = True
        try:
            with _method_code(self, "estimate()"):
                est = estimate(self)
        finally:
            self._estimating = False
        if not isinstance(est, ScoreEstimate):  # a method-writer's trial: an AttributeError from inside this wrapper
            raise MethodError(f"{type(self).__name__}.estimate() must return a ScoreEstimate (hspr.session.ScoreEstimate"
                              f"(point=..., lower=..., upper=..., n_queried=..., budget=...)), got {type(est).__name__}")
        # a method-writer's trial: 45 for 45 % was clipped to 100 % without a word. The point is a score, in [0, 1];
        # an interval's end may overshoot a little (a normal approximation's does) and is clipped, but not beyond
        # [-1, 2], which is another scale. NaN is refused where the estimate is read, with its own message.
        if defined_outside_hspr(self) and any(  # hspr's own sessions skip it: every estimate of a replay comes here
                isinstance(v, numbers.Real) and not math.isnan(v) and not lo - 1e-9 <= v <= hi + 1e-9
                for v, lo, hi in ((est.point, 0, 1), (est.lower, -1, 2), (est.upper, -1, 2))):  # inf too (a re-trial)
            raise MethodError(f"{type(self).__name__}.estimate() gave {est.point!r} [{est.lower!r}, {est.upper!r}]: "
                              "scores are on the 0-1 scale (0.45 for 45 %), the point inside it and an interval's ends "
                              "finite, in [-1, 2]")
        return est.within(*self.outcome_bounds()) if self.bounded_by_outcomes else est
    return bounded


def defined_outside_hspr(obj) -> bool:
    """True when ``obj``'s class is defined outside hspr (a method of one's own, an installed package's or a
    script's): the protocol's checks of a method writer's mistakes apply to it, and its errors are its own."""
    return type(obj).__module__.partition(".")[0] != "hspr"


def _checked_tell(tell):
    """``Session.tell`` of a class outside hspr, checked to have recorded the outcome: a method-writer's
    trial overrode ``tell`` without calling ``super().tell``, and replay asked for ever (its loop waits
    for the outcomes to count) while ``hspr live record`` said "recorded"."""
    def checked(self, task_id, outcome, *args, **kwargs):
        out = tell(self, task_id, outcome, *args, **kwargs)
        if not defined_outside_hspr(self):
            return out
        j = self._index.get(task_id) if isinstance(task_id, str) else None
        if j is not None and not self._observed[j]:
            raise MethodError(f"{type(self).__name__}.tell did not record the outcome of {task_id!r}: an override "
                              "of tell must call super().tell(task_id, outcome), which records it and calls _update")
        return out
    return checked


def _wrap_once(cls, attr: str, make) -> None:
    """Replace ``cls.<attr>``, when ``cls`` defines it, by ``make(original)`` (kept as its
    ``__wrapped__``, with its name and docstring, or the base class's docstring when it has none,
    so ``help()`` shows the protocol's); a method wrapped already is left alone."""
    fn = cls.__dict__.get(attr)
    if fn is None or getattr(fn, "_hspr_checked", False):
        return
    wrapped = functools.wraps(fn)(make(fn))
    if wrapped.__doc__ is None:  # (not getattr(None, "__doc__"): None has a docstring on Python 3.13)
        wrapped.__doc__ = next((f.__doc__ for b in cls.__mro__[1:] if (f := b.__dict__.get(attr)) is not None and f.__doc__),
                               None)
    wrapped._hspr_checked = True
    setattr(cls, attr, wrapped)


class Session(ABC):
    """One evaluation of one target agent under a budget.

    Subclasses implement :meth:`_select` (choose the next task index), :meth:`_update`
    (absorb an outcome) and :meth:`estimate`. This base class keeps the bookkeeping
    (queried ids in order, pending asks, budget) identical for every method.

    Attributes
    ----------
    tasks : tuple of str, length n_tasks
        The bank's task ids, in the fitted model's column order.
    budget : int
        Outcomes to tell, in [0, n_tasks].
    seed : int
        The session's query seed.
    queried : list of str
        Task ids told so far, in telling order (asked or not).
    outcomes : list of int or float
        Their outcomes, aligned with ``queried``: 0/1, or pass rates in [0, 1] on a bank of
        repeated trials.
    """

    #: whether the method gives an estimate with zero outcomes (a prior estimate)
    has_prior_estimate: bool = False
    #: whether an outcome may be a pass rate in [0, 1] (repeated trials), not only 0 or 1
    accepts_pass_rates: bool = False
    #: the bank's trials per task when the model was fitted on repeated trials (set by
    #: :meth:`FittedModel.start`): a pass rate is then successes / trials, and another is refused
    trials: int | None = None
    #: whether :meth:`estimate` is kept within :meth:`outcome_bounds`, the range the recorded outcomes
    #: leave the full score (s resolved and u unresolved of N tasks: [s/N, (N-u)/N]); False only for
    #: the paper's HSPR, whose output is the spec's (HSPR_SPEC section 5 clips to [0, 1] only)
    bounded_by_outcomes: bool = True
    #: whether the estimate depends on how each asked task was drawn, computed from the outcomes
    #: before it (a design-based, inverse-probability-weighted estimate): then an outcome cannot
    #: be corrected once tasks were asked after it (:meth:`hspr.live.LiveSession.record`)
    design_depends_on_outcomes: bool = False
    #: whether :meth:`expected_width`'s generic rule (a simple random sample's variance) stands in when
    #: :meth:`_variance_forecast` gives none: True for the sampling methods, whose interval is one, and
    #: HSPR (a singular posterior covariance); otherwise there is no forecast (a trial: ATLAS's rule
    #: said 62.9 pp before any outcome and 7.1 pp after one, for an interval that reached 10.1 pp at
    #: task 12 and 7.4 pp at task 25; RSL, DISCO, PTA-IRT, FAQ and Mid-Range + ridge were as far off)
    generic_width_forecast: bool = False
    #: whether the estimate treats every told task as one of the session's own random draws (uniform and
    #: stratified sampling's means): a task told that it did not ask is then warned of, once
    #: (:class:`~hspr.errors.UnaskedTaskWarning`; an API trial told 10 tasks an agent passed, and uniform
    #: sampling said 100 % for a 41.7 % agent). The model-based methods condition on any told task, and FAQ's
    #: and AIPW's design-based terms count it as a known outcome outside their random draws.
    random_draws: bool = False
    #: a warning every ``hspr live`` status of this method carries, for a point that is not an
    #: estimate of the full score (Mid-Range's raw mean); None for the others
    caveat: str | None = None
    #: whether the next task depends on the outcomes told so far (HSPR, ATLAS, FAQ): a batch, chosen before its
    #: outcomes are known, then asks other tasks than one at a time would, and a large one costs accuracy
    #: (``hspr live next`` says so: :func:`hspr.live.text.batch_note`)
    adaptive_design: bool = False

    def __init_subclass__(cls, **kwargs) -> None:
        """Keep every subclass's own :meth:`estimate` within :meth:`outcome_bounds` when
        :attr:`bounded_by_outcomes` (:func:`_bounded_estimate`)."""
        super().__init_subclass__(**kwargs)
        _wrap_once(cls, "estimate", _bounded_estimate)
        _wrap_once(cls, "tell", _checked_tell)

    def __init__(self, tasks: tuple[str, ...], budget: int, seed: int) -> None:
        self.tasks = tasks
        self.n_tasks = len(tasks)
        self.budget = check_budget(budget, self.n_tasks)
        self.seed = check_seed(seed)
        self._index = {t: j for j, t in enumerate(tasks)}
        self.queried: list[str] = []
        self.outcomes: list[int] = []
        self._observed = np.zeros(self.n_tasks, dtype=bool)
        self._pending: list[int] = []

    def __copy__(self) -> Session:
        """A copy that goes on independently: ``copy.copy(session)`` is :func:`copy.deepcopy`
        except for the fitted model (read-only, shared as :meth:`FittedModel.start` shares it).

        A shallow copy would share the lists of queried tasks and outcomes but not the
        posterior state, so telling one session would change the other's record and not its
        estimate (an API trial: a wrong estimate from the original after telling the copy).
        """
        shared = {id(v): v for v in vars(self).values() if isinstance(v, FittedModel)}
        return copy.deepcopy(self, shared)

    # -- protocol -----------------------------------------------------------------
    def ask(self) -> str:
        """Return the id of the next task to run.

        Asking again before telling returns the same (pending) task. Raises BudgetError once
        ``budget`` outcomes have been told (a task told without being asked counts too; tasks
        asked and still pending then stay in :attr:`pending`).
        """
        return self.ask_batch(1)[0]

    def ask_batch(self, k: int = 1) -> list[str]:
        """Return ``k`` distinct tasks to run in parallel (fewer if the budget has less left).

        Tasks asked earlier and not yet told stay pending and are returned first, so calling
        again before telling anything returns the same tasks; new ones are chosen jointly by
        :meth:`_select_batch`. Raises BudgetError when nothing is left of the budget and
        :class:`~hspr.errors.HsprError` (a ValueError) for ``k < 1`` or not a whole number.
        """
        n = whole_number(k)
        if n is None or n < 1:
            raise HsprError(f"batch size must be a whole number >= 1, got {brief(k)}")
        left = self.budget - len(self.queried)
        if left <= 0:
            raise BudgetError(f"budget of {self.budget} tasks is spent; call estimate()")
        k = min(n, left)
        if len(self._pending) < k:
            exclude = self._observed.copy()
            exclude[self._pending] = True
            # named as the method writer wrote it: the default _select_batch calls _select (a method-writer's trial)
            own_batch = type(self)._select_batch is not Session._select_batch
            with _method_code(self, "_select_batch()" if own_batch else "_select()"):
                picks = self._select_batch(k - len(self._pending), exclude)
            new = [self._column_index(j) for j in picks]
            if len(new) != k - len(self._pending):  # a method-writer's trial: 4 of 5 was told as a spent budget
                raise MethodError(f"{type(self).__name__}._select_batch returned {len(new)} task(s) where "
                                  f"{k - len(self._pending)} were asked for: it must return exactly k column indices")
            if len(set(new)) != len(new) or exclude[new].any():
                raise MethodError(f"{type(self).__name__} selected an observed, pending or repeated task: "
                                  f"{[self.tasks[j] for j in new if exclude[j]] or 'a task twice'}; a selection "
                                  "must skip the columns its exclude mask marks True")
            self._pending.extend(new)
        return [self.tasks[j] for j in self._pending[:k]]

    @property
    def pending(self) -> list[str]:
        """Tasks asked and not yet told, in the order they were asked."""
        return [self.tasks[j] for j in self._pending]

    def tell(self, task_id: str, outcome: float) -> None:
        """Record the outcome (1 resolved / 0 unresolved) of ``task_id``; for a session that
        :attr:`accepts_pass_rates`, also a pass rate in [0, 1] (successes / trials). On a bank of
        T > 1 trials per task (:attr:`trials`) the outcome is that pass rate, a float such as 1.0
        for T/T: an integer or boolean 1 (``1``, ``True``: every trial, or one run?) is refused, as
        `hspr live record` refuses ``1`` and ``resolved`` there.

        Any task of the bank may be told, also one that was not asked (it is conditioned on
        like the others; a session that averages its own random draws, :attr:`random_draws`, warns
        once with :class:`~hspr.errors.UnaskedTaskWarning`), also once the budget is spent (an extra
        outcome is information too).
        The estimate from a given set of outcomes does not depend on the order they were told,
        up to rounding: HSPR's float32 node weights accumulate in telling order (API trials
        measured 7e-6 on the 0-1 scale over 3 orders of 30 Verified outcomes, and 2.4e-5, 0.0024 pp,
        on 12 outcomes of a 40-task simulated bank).
        Raises :class:`~hspr.errors.UnknownIdError` (a KeyError) for an id not in the bank or not a
        string, and
        :class:`~hspr.errors.HsprError` (a ValueError) for an outcome out of range (non-binary
        for the other sessions), an integer or boolean 1 on a bank of repeated trials, or a task
        told twice.
        """
        if not isinstance(task_id, str):
            hint = f"; give str({task_id!r}), the id {str(task_id)!r}" if str(task_id) in self._index else ""
            raise UnknownIdError(f"a task id is a string, got {type(task_id).__name__} {task_id!r}{hint}")
        if task_id not in self._index:
            import difflib

            close = difflib.get_close_matches(str(task_id), self.tasks, n=1)
            raise UnknownIdError(f"task id {task_id!r} is not in the bank ({self.n_tasks} tasks)"
                                 + (f"; did you mean {close[0]!r}?" if close else ""))
        if np.ma.is_masked(outcome):  # a masked cell is a missing outcome; its .item() would read as 0
            raise HsprError(f"outcome for {task_id!r} is masked (a missing outcome); tell only the outcomes of "
                            "tasks that ran")
        if isinstance(outcome, np.ndarray) and outcome.ndim == 0:  # np.array(1), a 0-d slice of an array
            outcome = outcome[()]  # its numpy scalar (a time span's .item() is an int: a re-trial)
        if is_ambiguous_one(outcome, self.trials):
            # as `hspr live record` refuses '1' and 'resolved' there (a trial: tell(t, 1) was 5/5 silently);
            # an integer 0 is the pass rate 0 whichever it meant
            t = self.trials
            raise HsprError(f"outcome for {task_id!r} is {brief(outcome)} (an integer or boolean) on a bank of {t} "
                            f"trials per task: every trial, or one run that passed? Tell the pass rate as a float, "
                            f"successes / {t} (e.g. {t}/{t} = 1.0, 1/{t} = {1 / t:g}), with all {t} trials run")
        if isinstance(outcome, (bool, np.bool_)):
            outcome = int(outcome)
        elif isinstance(outcome, decimal.Decimal) and outcome.is_finite():  # a Number, not a numbers.Real
            outcome = float(outcome)
        number = is_number(outcome)  # 'resolved', '3/5', None: the CLI's forms are not the API's (nor a time span)
        if not number or outcome not in (0, 1):
            if not (self.accepts_pass_rates and number and 0 <= outcome <= 1):
                if number and not finite_real(outcome):  # NaN: a missing cell, not a badly spelled pass rate
                    why = " (not a finite number: a missing outcome? tell only the outcomes of tasks that ran)"
                elif number and 10 <= outcome <= 100:  # an API trial told 100 for resolved: no word of percentages
                    why = ("; a percentage? outcomes are on the 0-1 scale: 1 for resolved, 0 for unresolved"
                           + (" (a pass rate as a share: 60 % is 0.6)" if self.accepts_pass_rates else ""))
                elif self.accepts_pass_rates:  # e.g. '3/5' or (3, 5) for 3 of 5 trials
                    why = "; tell a pass rate as one number, successes / trials (0.6 for 3 of 5 trials)"
                elif isinstance(outcome, str):
                    why = f"; hspr.outcomes.outcome() reads the words `hspr live record` takes ({SPELLINGS})"
                elif number and 0 <= outcome <= 1 and type(self).accepts_pass_rates:
                    why = ("; pass rates need a model fitted on a bank of repeated trials (ResponseMatrix.trials), "
                           "and this one was fitted on 0/1 outcomes")
                else:
                    why = ""
                raise HsprError(f"outcome for {task_id!r} must be 0 or 1"
                                f"{' or a pass rate in [0, 1]' if self.accepts_pass_rates else ''}, got "
                                f"{'' if number else type(outcome).__name__ + ' '}{brief(outcome)}{why}")
            outcome = float(outcome)
            if self.trials is not None:  # a bank of T trials: successes / T, exactly (a float32 0.6 too)
                rate = snap_pass_rate(outcome, self.trials)
                if rate is None:
                    raise HsprError(f"outcome for {task_id!r} is {brief(outcome)}, not a pass rate over the bank's "
                                    f"{self.trials} trials (successes / {self.trials}: "
                                    f"{', '.join(f'{i / self.trials:g}' for i in range(min(self.trials, 5) + 1))}"
                                    f"{', ...' if self.trials > 5 else ''})")
                outcome = float(rate)
        elif self.trials is not None:  # a pass rate 0.0 or 1.0: kept a float, so `outcomes` can be told again
            outcome = float(outcome)
        else:
            outcome = int(outcome)
        j = self._index[task_id]
        if self._observed[j]:
            told = self.outcomes[self.queried.index(task_id)]
            told = describe_outcome(told, self.trials) if self.trials is not None else repr(told)
            raise HsprError(f"task {task_id!r} was already recorded (as {told}); "
                            "an outcome cannot be changed in a session: start a new one and tell the right outcomes "
                            "(`hspr live record --correct` does that for a live session)")
        if self.random_draws and j not in self._pending and not getattr(self, "_told_unasked", False):
            self._told_unasked = True  # once per session; a task told from a restored log was said when first told
            if not getattr(self, "_restoring", False):
                warnings.warn(UnaskedTaskWarning(
                    f"task {task_id!r} was not asked by this session: its estimate stands on the session's own random "
                    "draws of tasks, so outcomes of tasks chosen another way (the ones the agent passed, say) can bias "
                    "it; tell the tasks ask() gives (the model-based methods, hspr_robust among them, condition on any "
                    "told task; faq and aipw count it as known). Said once per session"), stacklevel=2)
        self._observed[j] = True
        self.queried.append(task_id)
        self.outcomes.append(outcome)
        if j in self._pending:
            self._pending.remove(j)
        with _method_code(self, "_update()"):
            self._update(j, outcome)

    def set_pending(self, task_ids) -> None:
        """Make ``task_ids`` the pending tasks, in this order (e.g. what a log says the user was told to run).

        Raises
        ------
        KeyError
            For an id not in the bank.
        ValueError
            For a repeated id, an id already told, or more pending tasks than the budget has left.
        """
        if isinstance(task_ids, (str, bytes)) or not isinstance(task_ids, Iterable):  # 't020' would be t, 0, 2, 0
            raise HsprError(f"pending tasks are a list of task ids, got {brief(task_ids)}; for one task write "
                            f"[{brief(task_ids)}]")
        ids = list(task_ids)
        unknown = [t for t in ids if not isinstance(t, str) or t not in self._index]
        if unknown:
            raise UnknownIdError(f"task id(s) {unknown} are not in the bank ({self.n_tasks} tasks)")
        cols = [self._index[t] for t in ids]
        if len(set(cols)) != len(cols):
            raise HsprError(f"pending tasks {ids} repeat an id")
        told = [t for t, j in zip(ids, cols) if self._observed[j]]
        if told:
            raise HsprError(f"task(s) {told} were already recorded and cannot be pending")
        if len(cols) > self.budget - len(self.queried):
            raise HsprError(f"{len(cols)} pending tasks exceed the {self.budget - len(self.queried)} left of the budget")
        self._pending = cols

    def restore(self, events, trust_log: bool = False) -> list[str]:
        """Bring the session to the state a logged sequence of asks and tells describes.

        Parameters
        ----------
        events : iterable of tuples
            ``("ask", k, tasks)``: a call ``ask_batch(k)`` that returned ``tasks`` (ids);
            ``("tell", task, outcome)``: a :meth:`tell`. In the order they happened.
        trust_log : bool
            The log was written by this version of the code, so its asks are the ones this
            session would make: methods may then skip re-choosing them (HSPR restores its
            posterior with one refresh and only advances its random state). The result is the
            same state either way.

        Returns
        -------
        list of str
            One warning per replayed ask that chose other tasks than logged (the logged ones are
            kept as the pending tasks: they are what the user was told to run).

        Raises
        ------
        KeyError, ValueError
            For an event this session cannot take (unknown task, repeated tell, spent budget),
            or one of another shape (HsprError, naming it).
        """
        notes = []
        with self._logged_tells():
            for i, ev in enumerate(events):
                check_event(ev, i)
                if ev[0] == "ask":
                    _, k, logged = ev
                    got = self.ask_batch(k)
                    if got != list(logged):
                        self.set_pending(logged)
                        notes.append(f"replaying event {i} (an ask of {k} task(s)) chose {got} where the log has "
                                     f"{list(logged)}")
                else:
                    self.tell(ev[1], self.logged_outcome(ev[2]))
        return notes

    @contextlib.contextmanager
    def _logged_tells(self):
        """Tells replayed from a log already accepted (:meth:`restore`, :func:`trajectory`'s events): a task not
        asked among them was said when first told, so :class:`~hspr.errors.UnaskedTaskWarning` is not repeated."""
        self._restoring = True
        try:
            yield
        finally:
            self._restoring = False

    def logged_outcome(self, outcome):
        """An outcome as a log gives it, for :meth:`tell`: on a bank of repeated trials a log's ``1``
        (a live session file's T/T) is the pass rate 1.0, which :meth:`tell` takes (an integer 1 it
        refuses from a caller, as ambiguous); other outcomes unchanged."""
        if self.trials is not None and is_whole_outcome(outcome):
            return float(outcome)
        return outcome

    @property
    def n_queried(self) -> int:
        """Outcomes told so far (``len(queried)``)."""
        return len(self.queried)

    def told(self) -> tuple[np.ndarray, np.ndarray]:
        """Bank column indices (B,) of the tasks told so far, in telling order, and their outcomes
        (B,) as floats (0/1, or pass rates for repeated trials)."""
        return np.array([self._index[t] for t in self.queried], dtype=int), np.asarray(self.outcomes, dtype=float)

    def expected_width(self, est: ScoreEstimate | None = None) -> float | None:
        """Forecast 90 % interval width once the rest of the budget is spent (0-1 scale).

        Generic rule: the variance of a mean of a simple random sample without replacement,
        (1 - n/N) / n, from the n outcomes seen to the B of the whole budget: the current width
        times sqrt(((1 - B/N) / B) / ((1 - n/N) / n)) (with no outcome yet, the current width
        times sqrt(rho), rho the share of the unobserved tasks still unobserved after the budget).
        Methods with a posterior override :meth:`_variance_forecast`; only sessions with
        :attr:`generic_width_forecast` use the generic rule, the others have no forecast. A trial found
        the rule used before, the current width times sqrt(rho) alone (learning nothing from the
        outcomes to come), forecast 73 pp for a uniform sample that reached 49 pp at its budget.

        Parameters
        ----------
        est : ScoreEstimate, optional
            The current estimate (computed if None).

        Returns
        -------
        float or None
            None without an interval; the current width when the budget is spent; 0 when every
            task is seen.
        """
        if est is None:
            try:
                est = self.estimate()
            except BudgetError:
                return None
        if est.width is None:
            return None
        U = self.n_tasks - self.n_queried
        r = min(max(self.budget - self.n_queried, 0), U)
        if U <= 0:
            return 0.0
        if r == 0:
            return float(est.width)
        try:
            forecast = self._variance_forecast(r)
        except np.linalg.LinAlgError:  # a singular posterior covariance: the generic rule
            forecast = None
        if forecast is None:
            if not self.generic_width_forecast:
                return None
            n, B, N = self.n_queried, self.n_queried + r, self.n_tasks
            if n == 0:
                return float(est.width * np.sqrt((U - r) / U))
            return float(est.width * np.sqrt(((1 - B / N) / B) / ((1 - n / N) / n)))
        V, V_after = forecast
        return 0.0 if V <= 0 else float(est.width * np.sqrt(max(V_after, 0.0) / V))

    def _variance_forecast(self, r: int) -> tuple[float, float] | None:
        """(Var(S | D) now, its forecast after ``r`` more outcomes), or None for the generic rule."""
        return None

    @property
    def done(self) -> bool:
        """True once the budget's worth of outcomes was told (more may still be told)."""
        return len(self.queried) >= self.budget

    @abstractmethod
    def _select(self, exclude: np.ndarray) -> int:
        """Column index of the next task; ``exclude`` (bool, shape (n_tasks,)) marks tasks
        observed or pending, which must not be chosen."""

    def _select_batch(self, k: int, exclude: np.ndarray) -> list[int]:
        """Choose ``k`` tasks jointly. Default: repeated :meth:`_select`, excluding each pick;
        adaptive methods override it to condition on the picks' expected outcomes."""
        exclude = exclude.copy()
        out = []
        for _ in range(k):
            j = self._column_index(self._select(exclude))
            exclude[j] = True
            out.append(j)
        return out

    def _column_index(self, j) -> int:
        """``j``, a task column a :meth:`_select` chose, as an int; :class:`~hspr.errors.MethodError` (a
        RuntimeError) unless it is a whole number in [0, n_tasks) (a method-writer's trial: -1 was asked for
        ever, 303 of 300 and a task id raised numpy's errors)."""
        n = whole_number(j)
        if n is None or not 0 <= n < self.n_tasks:
            hint = (f" (a task id: return its column, self.tasks.index({j!r}))" if isinstance(j, str) and j in self._index
                    else "")
            raise MethodError(f"{type(self).__name__}._select must return a column index in 0..{self.n_tasks - 1}, "
                              f"got {brief(j)}{hint}")
        return n

    @abstractmethod
    def _update(self, j: int, y: int) -> None:
        """Absorb outcome ``y`` of task column ``j`` (already recorded by the base class)."""

    @abstractmethod
    def estimate(self) -> ScoreEstimate:
        """The current estimate of the full score (0-1 scale), from the outcomes told so far.

        Raises BudgetError before any outcome for a method without a prior estimate
        (:attr:`has_prior_estimate` False: tell at least one outcome first).
        """

    def outcome_bounds(self) -> tuple[float, float]:
        """``(lo, hi)``, the range (0-1 scale) the full score must lie in given the recorded
        outcomes: every recorded task counts its outcome (0/1, or a pass rate), every other task
        0 for ``lo`` and 1 for ``hi``. ``(0, 1)`` with no outcomes; one value at full budget.

        The sum does not depend on the telling order (an API trial: at full budget on a bank of
        repeated trials, two orders gave scores one unit in the last place apart): on such a bank
        the successes are counted as integers and divided once, as
        :meth:`~hspr.data.matrix.ResponseMatrix.scores` divides them, else the pass rates are
        summed exactly (:func:`math.fsum`)."""
        n = len(self.outcomes)
        if self.trials is not None and n:
            t, big = self.trials, self.trials * self.n_tasks
            k = int(np.rint(np.asarray(self.outcomes, dtype=float) * t).sum())
            return k / big, (k + t * (self.n_tasks - n)) / big
        return feasible_bounds(math.fsum(self.outcomes), n, self.n_tasks)

    def _require_outcomes(self) -> None:
        """For a subclass's :meth:`estimate`: :class:`BudgetError` when no outcome was told and the session has
        no prior estimate (:attr:`has_prior_estimate` False), which callers (``hspr live status``, a replay at
        budget 0) read as "no estimate yet"."""
        if not self.queried and not self.has_prior_estimate:
            raise BudgetError(f"{type(self).__name__}: no outcomes yet and the method has no prior estimate: "
                              "tell at least one outcome first")


def trajectory(model: FittedModel, budget: int, seed: int, outcomes) -> list[dict]:
    """The estimate after each outcome, replayed on a fresh session: the path of a live run or a replay.

    Parameters
    ----------
    model : FittedModel
    budget, seed : the session's
    outcomes : iterable of (task id, outcome) in the order they were told, or of the events of
        :meth:`Session.restore` (``("ask", k, tasks)`` and ``("tell", task, outcome)``): with the
        asks, a method whose estimate depends on how each task was drawn (FAQ) gives the path
        its session gave; without them every outcome counts as one it did not ask for

    Returns
    -------
    list of dict
        ``n`` (outcomes so far), ``task`` (the last one; None at n = 0), ``point``, ``lower``,
        ``upper`` (0-1 scale; None without an interval), one per step; n = 0 only for methods
        with a prior estimate.

    Raises
    ------
    HsprError
        For an item that is neither a (task id, outcome) pair nor an event (naming its position), and
        whatever :meth:`Session.tell` raises for an unknown task, a repeated one or a bad outcome.
    """
    sess = model.start(budget, seed)
    out = []

    def add(task):
        est = sess.estimate()
        out.append({"n": sess.n_queried, "task": task, "point": est.point, "lower": est.lower, "upper": est.upper})

    if sess.has_prior_estimate:
        add(None)
    for i, item in enumerate(outcomes):
        if isinstance(item, np.ndarray):  # a row of np.array(pairs, dtype=object) or DataFrame.values (a re-trial)
            item = tuple(item.tolist())
        if isinstance(item, (tuple, list)) and len(item) == 3:
            check_event(item, i)
            if item[0] == "ask":
                sess.restore([item])
                continue
        elif not isinstance(item, (tuple, list)) or len(item) != 2:
            raise HsprError(f"outcome {i} is {brief(item, 60)}; give (task id, outcome) pairs, or the events of "
                            "Session.restore: ('ask', k, [task ids]) and ('tell', task id, outcome)")
        task, y = item[1:] if len(item) == 3 else item
        with sess._logged_tells() if len(item) == 3 else contextlib.nullcontext():  # a pair is a new tell
            sess.tell(task, sess.logged_outcome(y))  # a live session's 5/5 is logged as 1
        add(task)
    return out


class FixedOrderSession(Session):
    """A session whose query order is fixed when it starts (non-adaptive methods).

    It asks the first task of ``order`` that is neither observed nor pending, and keeps the
    told columns in ``self._cols`` (in the order told, including un-asked tasks). Subclasses
    implement only :meth:`estimate`.

    Parameters
    ----------
    order : int array
        Column indices in query order; it must list at least the budget's tasks.
    """

    def __init__(self, tasks: tuple[str, ...], budget: int, seed: int, order: np.ndarray) -> None:
        super().__init__(tasks, budget, seed)
        self._order = np.asarray(order, dtype=int)
        self._cols: list[int] = []

    def _select(self, exclude: np.ndarray) -> int:
        return int(self._order[np.flatnonzero(~exclude[self._order])[0]])

    def _update(self, j: int, y: int) -> None:
        self._cols.append(int(j))


def pass_rate_methods() -> list[str]:
    """Registered methods whose ``fit`` takes a bank of pass rates (``Method.accepts_pass_rates``)."""
    from .methods import names_with  # the registry imports this module

    return names_with("accepts_pass_rates")


def refuse_pass_rates(method: Method, source: ResponseMatrix) -> None:
    """DataError when ``method`` takes one 0/1 outcome per cell and ``source`` holds pass rates over
    repeated trials, naming the methods that take them (listed only then: listing imports every method)."""
    if not method.accepts_pass_rates and source.trials is not None:
        try:
            source.require_binary(method.name, pass_rate_methods())
        except DataError as exc:
            if not defined_outside_hspr(method):
                raise
            # a method-writer's trial: how a method of one's own says it takes pass rates was not said
            raise DataError(f"{exc} (A method of your own that handles pass rates in [0, 1] says so with "
                            f"accepts_pass_rates = True on its Method class.)") from None


def _checked_fit(fit):
    """``Method.fit`` wrapped with the checks every method shares (see :class:`Method`, Notes)."""
    def checked_fit(self, source, *args, **kw):
        if not isinstance(source, ResponseMatrix):
            raise DataError(f"{self.name}.fit takes a ResponseMatrix, got {type(source).__name__}: build one with "
                            "ResponseMatrix.from_dataframe(df) (one row per agent, one column per task id) or "
                            "hspr.load_matrix(path)")
        refuse_pass_rates(self, source)
        if source.missing is not None and source.missing.all():  # an API trial: fitted on no outcome at all
            raise DataError(f"{source.source}: every cell of the source matrix is missing ({source.n_agents} agents x "
                            f"{source.n_tasks} tasks): {self.name} has no outcome to fit on; give at least one")
        # sorted ids: the same fit, asks and estimates for the same data in any row or column order;
        # not with extra inputs indexed by the caller's rows or columns (a method's per-task features)
        extra = any(a is not None for a in args) or any(v is not None for v in kw.values())
        if not defined_outside_hspr(self):
            # settings changed after the method was built are checked as they were then (an audit: faq.eps = 5.0 was
            # fitted), and the model is fitted on that checked copy, so it does not follow later edits of this object
            try:
                self = type(self).from_params(self.get_params())
            except ValueError as exc:  # as get_method says it (an HsprError is one)
                raise exc if isinstance(exc, HsprError) else HsprError(f"method {self.name!r}: {exc}") from None
            except (TypeError, AttributeError) as exc:  # a re-trial: hspr's config set to None gave an AttributeError
                raise HsprError(f"method {self.name!r}: its settings cannot be read ({exc}); a setting changed after it "
                                f"was built is refused: build it again with get_method({self.name!r}, ...)") from None
        with _method_code(self, "fit()"):
            model = fit(self, source if extra else source.canonical(), *args, **kw)
        if not isinstance(model, FittedModel):  # a method-writer's trial: replay failed on None.nested_budgets
            raise MethodError(f"{type(self).__name__}.fit() must return a FittedModel (hspr.session.FittedModel), got "
                              f"{type(model).__name__}")
        model.binary_outcomes = source.trials is None
        model.trials = source.trials
        return model
    return checked_fit


class FittedModel(ABC):
    """A method fitted on source agents; starts sessions for target agents.

    Attributes
    ----------
    tasks : tuple of str
        Task ids of the source matrix, in column order: sorted by id, since :meth:`Method.fit`
        fits on :meth:`~hspr.data.matrix.ResponseMatrix.canonical` (unless it was given inputs
        indexed by the caller's columns, such as per-task features).
    binary_outcomes : bool
        Whether the sources hold 0/1 outcomes only; then sessions refuse a pass rate.
    nested_budgets : bool
        True when the query path does not depend on the budget, so one session at the largest
        budget serves every smaller one (replay checkpoints).
    """

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)

        def checked(start):
            def checked_start(self, budget: int, seed: int = 0, *args, **kw) -> Session:
                seed = check_seed(seed)  # before a session seeds its generator
                with _method_code(self, "start()"):
                    sess = start(self, budget, seed, *args, **kw)
                if isinstance(sess, Session) and self.trials is not None:
                    sess.trials = self.trials
                    sess.accepts_pass_rates = True  # fitted on pass rates: a target's outcomes are pass rates too
                return sess
            return checked_start

        _wrap_once(cls, "start", checked)

    tasks: tuple[str, ...]
    nested_budgets: bool = False
    #: set by :meth:`Method.fit`: True when the sources hold one 0/1 outcome per cell (no
    #: ``trials``), so a session refuses a pass rate as an outcome (False: not known, or pass rates)
    binary_outcomes: bool = False
    #: set by :meth:`Method.fit`: the sources' trials per task (``ResponseMatrix.trials``), or None;
    #: a session then takes a pass rate only as successes / trials
    trials: int | None = None
    #: the settings the fit itself chose on the sources (``hspr_auto``, ``hspr_robust``), as a
    #: JSON-ready dict of those that differ from the defaults (what ``--config`` takes), or None when the
    #: fit chose none; replay writes it into each run's record (a trial could not tell which settings
    #: produced ``hspr_auto``'s numbers)
    fitted_settings: dict | None = None

    @abstractmethod
    def start(self, budget: int, seed: int = 0) -> Session:
        """A new session for one target agent.

        Parameters
        ----------
        budget : int
            Tasks to run: a whole number of distinct tasks in 0..n_tasks (a fraction f of the bank
            is ``budget_from_fraction(f, n_tasks)``). Outcomes told beyond it are still used.
        seed : int
            Seed of the session's random choices (>= 0): the same seed gives the same asks for
            the same outcomes.

        Raises
        ------
        BudgetError
            For a budget that is not a whole number in range (0 too, for a method with no prior
            estimate).
        HsprError
            For a seed that is not a whole number >= 0 (checked for every method).
        """

    def resume(self, budget: int, seed: int, events, trust_log: bool = False) -> tuple[Session, list[str]]:
        """A session in the state a logged sequence of asks and tells describes (:meth:`Session.restore`).

        Returns the session and the restore warnings. Methods may override it to skip work that
        the restore makes redundant (HSPR skips its prior-only posterior).
        """
        sess = self.start(budget, seed)
        return sess, sess.restore(events, trust_log)


class Method(ABC):
    """A score-recovery method; ``fit`` learns from the source response matrix.

    Every method is built from keyword settings and reports them with :meth:`get_params`;
    :meth:`from_params` rebuilds it from that dict (the scikit-learn convention), so a live
    session, a results file or the CLI can store and restore any method the same way.

    Attributes
    ----------
    name : str
        Registered name.
    seed_kind : {'sampling', 'adaptive', 'deterministic'}
        Replay's default seeds: 10, 5 or 1 path (a property where it depends on the settings);
        'sampling' unless a subclass says otherwise.
    accepts_pass_rates : bool
        Whether ``fit`` takes a bank of pass rates over repeated trials
        (``ResponseMatrix.trials``) and its sessions take a pass rate in [0, 1] as an outcome.
        For the others ``fit`` raises DataError on such a bank (checked here, for every method).
    accepts_missing : bool
        Whether ``fit`` takes a source matrix with missing cells (``ResponseMatrix.missing``,
        ``--no-missing-as-zero``); for the others it raises DataError naming the first one, and
        ``hspr replay`` refuses the pair before any run.
    in_all : bool
        Whether ``--methods all`` runs it; False for a method that is another one under other
        settings (``hspr_auto`` is ``hspr`` under ``--config auto``).
    setting_groups : tuple of (str, dataclass type)
        Keywords that take a dict of a settings dataclass's fields (``hspr_robust``'s ``config``
        and ``shift``): a field given as a keyword of its own is pointed to its group.
    parallel_fit : bool
        Whether ``fit`` runs joblib jobs, on as many processes as ``joblib.parallel_config(n_jobs=...)``
        gives around it (``hspr live start --workers``), to the same result on any number.

    Notes
    -----
    Every ``fit`` is wrapped here: it refuses anything but a
    :class:`~hspr.data.matrix.ResponseMatrix` (DataError naming ``from_dataframe``) and a matrix
    whose every cell is missing (DataError), rebuilds one of hspr's methods from its
    :meth:`get_params` (a setting changed after it was built raises the error building it would; the
    fitted model does not follow later edits of the method object), fits on the
    matrix sorted by agent and task id (the same result for the same data in any row or column
    order; not when ``fit`` takes extra inputs indexed by the caller's rows or columns), and marks
    the fitted model's :attr:`FittedModel.binary_outcomes`.
    """

    name: str = "method"
    #: False for a method whose estimates carry no interval (a stop width could never fire)
    gives_interval: bool = True
    accepts_pass_rates: bool = False
    accepts_missing: bool = True
    in_all: bool = True
    setting_groups: tuple = ()
    parallel_fit: bool = False

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        _wrap_once(cls, "fit", _checked_fit)

    #: what replay's seeds vary (a key of :data:`SEEDS_BY_KIND`): ``sampling``, ``adaptive`` or ``deterministic``
    seed_kind: str = "sampling"

    def get_params(self) -> dict:
        """The method's settings as JSON values: each ``__init__`` keyword, read from the
        attribute of the same name (methods with a settings dataclass override this)."""
        from .params import plain

        sig = inspect.signature(type(self).__init__)
        return {k: plain(getattr(self, k)) for k, p in sig.parameters.items()
                if k != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}

    def settings_for(self, sources: Sequence[ResponseMatrix]) -> dict:
        """The settings that decide this method's runs on ``sources`` (the source matrices of a
        replay's folds): :meth:`get_params` (the default). A method whose settings hold a lookup
        keyed by source matrix (``hspr_auto``'s and ``hspr_robust``'s table of selections) gives only
        what those sources use, so that ``hspr replay``'s settings digest (:func:`hspr.replay.settings_digest`)
        does not change when the table gains entries for other banks (a re-trial: ``hspr report``
        refused two replays of one table as two experiments)."""
        return self.get_params()

    @classmethod
    def from_params(cls, params: dict) -> Method:
        """Build the method from :meth:`get_params` output (missing settings take defaults).

        Raises
        ------
        ValueError
            Naming an unknown setting, or a value the method refuses.
        """
        if not isinstance(params, dict):
            raise HsprError(f"{cls.name}: expected an object of settings, got {type(params).__name__}")
        sig = inspect.signature(cls.__init__)
        known = [k for k, p in sig.parameters.items() if k != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
        unknown = sorted(set(params) - set(known))
        if unknown and not known:  # a trial: 'known: []'
            raise HsprError(f"method {cls.name!r} takes no settings, got {unknown}: drop the settings (--config)")
        if unknown:
            raise HsprError(f"unknown {cls.name} setting(s) {unknown}; known: {known}")
        try:
            return cls(**params)
        except TypeError as exc:
            raise HsprError(f"{cls.name}: {exc}") from None

    @abstractmethod
    def fit(self, source: ResponseMatrix) -> FittedModel:
        """Fit on source agents (shape (n_sources, n_tasks)); returns a fitted model."""

    def start(self, budget: int = 0, seed: int = 0) -> Session:
        """Not on an unfitted method: raises HsprError saying to call :meth:`fit` first (an API trial got
        Python's AttributeError); sessions start from the fitted model, ``method.fit(bank).start(budget)``."""
        raise HsprError(f"{self.name} is not fitted: sessions start from the fitted model, "
                        f"get_method({self.name!r}).fit(bank).start(budget, seed)")

