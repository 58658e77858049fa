"""Settings as plain data: one way to read and rebuild any method's settings (issue 13).

Every :class:`~hspr.session.Method` reports its settings with ``get_params()`` (JSON values:
dicts, lists, numbers, strings, None) and is rebuilt from them with ``from_params(dict)``,
the scikit-learn ``get_params`` convention. Methods whose settings live in a frozen dataclass
(HSPR's :class:`HSPRConfig`, ATLAS's and PTA-IRT's settings) use :func:`plain` and
:func:`build_dataclass` for it.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import typing

import numpy as np

from .fileio import json_kind


def plain(x):
    """``x`` as JSON values: dataclasses and dicts to dicts, tuples to lists, numpy scalars to Python."""
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return {f.name: plain(getattr(x, f.name)) for f in dataclasses.fields(x)}
    if isinstance(x, dict):
        return {k: plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [plain(v) for v in x]
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, np.ndarray):
        return x.tolist()
    return x


def build_dataclass(cls, values: dict, what: str):
    """An instance of dataclass ``cls`` from a dict (nested dataclass fields from nested dicts).

    Fields typed as tuples get tuples back from JSON lists; missing fields take their defaults.

    Raises
    ------
    ValueError
        Naming ``what`` and the unknown setting(s), or a value the dataclass refuses.
    """
    if isinstance(values, cls):
        return values
    if not isinstance(values, dict):
        raise ValueError(f"{what}: expected an object of settings, got {json_kind(values)}")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(values) - set(fields))
    if unknown:
        raise ValueError(f"unknown {what} setting(s) {unknown}; known: {sorted(fields)}")
    hints = typing.get_type_hints(cls)
    kw = {}
    for name, v in values.items():
        t = hints.get(name)
        if dataclasses.is_dataclass(t) and isinstance(v, dict):
            v = build_dataclass(t, v, f"{what}.{name}")
        elif isinstance(v, list) and _is_tuple_type(t):
            v = tuple(tuple(x) if isinstance(x, list) else x for x in v)
        kw[name] = as_field_number(t, v)
    try:
        return cls(**kw)
    except TypeError as exc:
        raise ValueError(f"{what}: {exc}") from None


def settings_with(cls, settings, overrides: dict, what: str):
    """A ``cls`` instance: ``settings`` (an instance, a dict of its fields, or None for the
    defaults) with the fields in ``overrides`` replaced, nested settings given as dicts built as
    :func:`build_dataclass` builds them, so that ``Method(**method.get_params())`` rebuilds a
    method (an API trial got a TypeError from ``dataclasses.replace`` at fit).

    Raises
    ------
    ValueError
        Naming ``what`` and an unknown setting, or a value the dataclass refuses.
    """
    base = cls() if settings is None else build_dataclass(cls, settings, what)
    if not overrides:
        return base
    return build_dataclass(cls, {**{f.name: getattr(base, f.name) for f in dataclasses.fields(cls)}, **overrides}, what)


#: numpy's time spans and dates: a time span subclasses numpy's integers (``np.timedelta64(5).item()`` is the int 5)
TIME_TYPES = (np.timedelta64, np.datetime64)

#: bools subclass int, and numpy's time types its integers: neither is a count, a seed, a setting's number or an outcome
NOT_NUMBERS = (bool, np.bool_, *TIME_TYPES)


def is_number(value, kind: type | tuple[type, ...] = numbers.Real) -> bool:
    """Whether ``value`` is an instance of ``kind`` (``numbers.Real``, ``numbers.Integral``, a tuple of types) given as a
    number: not a bool, a numpy bool, a numpy time span or date (:data:`NOT_NUMBERS`), which the number
    classes take in. Finiteness and range are the caller's to check."""
    return isinstance(value, kind) and not isinstance(value, NOT_NUMBERS)


def check_flag(name: str, value) -> bool:
    """``value`` as a bool: True or False (numpy's too). Raises ValueError for anything else,
    naming ``name``: ``bool("false")`` is True (an API trial ran the opposite setting)."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise ValueError(f"{name} must be true or false, got {value!r}")


def check_positive(name: str, value) -> float:
    """``value`` as a float, finite and > 0 (a prior standard deviation, a scale). Raises
    ValueError naming ``name`` otherwise (0 divided by zero in a source fit; NaN gave another estimate)."""
    if not is_number(value) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return float(value)


def check_count(name: str, value, minimum: int = 1) -> int:
    """``value`` as an int >= ``minimum`` (a rank, a number of folds, strata, draws or trees): a
    whole number, 3.0 too. Raises ValueError naming ``name`` for a bool, a fraction, a string or
    NaN (a code review: ``FAQ(rank=2.7)`` was cut to rank 2 without a word)."""
    if (not is_number(value) or not math.isfinite(value)
            or value != int(value) or value < minimum):
        raise ValueError(f"{name} must be a whole number >= {minimum}, got {value!r}")
    return int(value)


#: the largest seed numpy and scikit-learn accept (``random_state`` in [0, 2**32 - 1])
MAX_RANDOM_STATE = 2**32 - 1


def check_random_state(name: str, value) -> int:
    """``value`` as an int in [0, 2**32 - 1], the range scikit-learn accepts. Raises ValueError
    naming ``name`` otherwise (scikit-learn refused -1 only at estimate, after the agent had run;
    1.5 was cut to 1)."""
    if not is_number(value, numbers.Integral) or not 0 <= value <= MAX_RANDOM_STATE:
        raise ValueError(f"{name} must be a whole number in 0..{MAX_RANDOM_STATE}, got {value!r}")
    return int(value)


def as_field_number(t, v):
    """``v`` as a float when the field's type ``t`` is float and ``v`` a whole number (not a bool), and
    as an int when ``t`` is int and ``v`` a float with no fraction: ``{"kappa": 1}`` and ``{"kappa": 1.0}``
    are one setting, with one settings digest (a re-trial: a report refused them as two experiments),
    and so are ``{"rank": 3}`` and ``{"rank": 3.0}`` (a file written by a tool that writes every number
    with a point, e.g. pandas' ``to_json``, was refused: "rank must be an integer, got 3.0"). Anything
    else is returned as it is (2.5 for an int field is then refused by the field's own check)."""
    if t is float and isinstance(v, numbers.Integral) and not isinstance(v, bool):
        return float(v)
    if (t is int and isinstance(v, (float, np.floating)) and math.isfinite(v) and v == int(v)
            and abs(v) <= 2**53):  # beyond 2**53 a float no longer holds every whole number: the value is not exact
        return int(v)
    return v


def _is_tuple_type(t) -> bool:
    origin = typing.get_origin(t)
    if origin is tuple:
        return True
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        return any(_is_tuple_type(a) for a in typing.get_args(t))
    return False
