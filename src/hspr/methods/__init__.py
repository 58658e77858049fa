"""Registry of score-recovery methods by name (lazy imports, so one module's error
does not break the others), and the methods other installed packages register under the
entry-point group ``hspr.methods`` (docs/python-api.md, "Your own method")."""

from __future__ import annotations

import difflib
import functools
import re
import warnings
from collections.abc import Mapping
from importlib import import_module
from types import MappingProxyType

from ..errors import HsprError, UnknownIdError
from ..session import SEEDS_BY_KIND, Method

#: name -> "module:Class"; every class implements hspr.session.Method
REGISTRY: Mapping[str, str] = MappingProxyType({
    "hspr": "hspr.methods.hspr:HSPR",
    "hspr_auto": "hspr.methods.hspr.selection:HSPRAuto",
    "hspr_robust": "hspr.methods.hspr.robust:HSPRRobust",
    "uniform": "hspr.methods.uniform:Uniform",
    "tinybench": "hspr.methods.tinybench:TinyBench",
    "faq": "hspr.methods.faq:FAQ",
    "atlas": "hspr.methods.atlas:ATLAS",
    "pta_irt": "hspr.methods.pta_irt:PTAIRT",
    "stratified": "hspr.methods.stratified:Stratified",
    "rsl": "hspr.methods.rsl:RSL",
    "midrange": "hspr.methods.midrange:MidRange",
    "midrange_ridge": "hspr.methods.midrange:MidRangeRidge",
    "disco": "hspr.methods.disco:DISCO",
    "aipw": "hspr.methods.aipw:AIPW",
})

#: the entry-point group through which an installed package registers methods of its own, which
#: then run by name wherever hspr's do (``hspr replay --methods``, ``hspr live start --method``,
#: :func:`get_method`): in the package's pyproject.toml, ``[project.entry-points."hspr.methods"]``
#: ``my_method = "my_package.module:MyMethod"``
ENTRY_POINT_GROUP = "hspr.methods"

#: a registered name: usable in a comma-separated ``--methods`` list and as a results label
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

#: the method ``hspr live start`` (and :meth:`hspr.live.LiveSession.create`) runs unless told
#: otherwise: the lowest macro MAE of the four shipped banks' folds and the interval that holds
#: up for agents unlike the bank (README, "Live"; shift and first-on-every-bank issues)
LIVE_DEFAULT = "hspr_robust"

#: the methods ``hspr replay`` runs unless told otherwise: the paper's method against uniform sampling
REPLAY_DEFAULT = ("hspr", "uniform")


#: the label ``hspr replay --config auto`` gave its runs until 2026-12-02: ``hspr[auto]`` or
#: ``hspr[auto,<ablations>]``, read as the registered name ``hspr_auto`` (``hspr_auto[<ablations>]``)
_OLD_AUTO_LABEL = re.compile(r"^hspr\[auto(?:,(.+))?\]$")


def current_label(method: str) -> str:
    """A method label as replay writes it today: ``hspr[auto]`` / ``hspr[auto,<ablations>]``
    (``--config auto`` runs until 2026-12-02) become ``hspr_auto`` / ``hspr_auto[<ablations>]``;
    any other label is returned as given. Results files keep old labels; ``hspr report`` reads
    them through this."""
    m = _OLD_AUTO_LABEL.match(method)
    return method if m is None else (f"hspr_auto[{m[1]}]" if m[1] else "hspr_auto")


def _installed() -> dict[str, tuple[str, str]]:
    """The methods installed packages register (:data:`ENTRY_POINT_GROUP`), in name order: name ->
    (``module:Class``, the package's name), or ('', the packages) for a name two packages register,
    which :func:`method_class` refuses; read once per import path (``sys.path``)."""
    import sys

    return dict(_scan(tuple(sys.path)))


@functools.cache
def _scan(path: tuple[str, ...]) -> tuple[tuple[str, tuple[str, str]], ...]:
    """:func:`_installed` for the import path ``path``. An entry whose name is hspr's own, ``all`` or not a
    valid name (:data:`_NAME`) is left out, and a name two packages register is refused (a trial: one was
    used by name order, and uninstalling it switched a live session to the other's method unsaid), each with a
    warning that names the packages (once: the scan is cached, so a command does not repeat it)."""
    from importlib.metadata import entry_points

    out: dict[str, tuple[str, str]] = {}
    clash: dict[str, list[str]] = {}
    for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: (e.name, e.value)):
        dist = getattr(ep.dist, "name", None) or "an installed package"
        if ep.name in REGISTRY or ep.name == "all" or not _NAME.match(ep.name):
            why = ("is hspr's own method" if ep.name in REGISTRY else "is the word for every method" if ep.name == "all"
                   else "is not a name of letters, digits and _")
            warnings.warn(f"{dist}: entry point {ep.name!r} of group {ENTRY_POINT_GROUP!r} {why}: left out (rename it "
                          "in that package's entry points)", stacklevel=4)
        elif ep.name in out and out[ep.name] != (ep.value, dist):
            clash.setdefault(ep.name, [f"{out[ep.name][1]} ({out[ep.name][0]})"]).append(f"{dist} ({ep.value})")
        else:
            out[ep.name] = (ep.value, dist)  # the same package seen twice on the path: one entry
    for name, who in clash.items():
        warnings.warn(f"method {name!r} is registered by {' and '.join(who)}: neither is used; uninstall all but one",
                      stacklevel=4)
        out[name] = ("", " and ".join(who))
    return tuple(out.items())


def registry() -> Mapping[str, str]:
    """Every method that runs by name: hspr's own (:data:`REGISTRY`, in its order), then those installed
    packages register under :data:`ENTRY_POINT_GROUP` (in name order). name -> ``module:Class``; the
    packages are read once per import path (a package installed by this process later is not seen). A
    name two packages register is not in it (:func:`method_class` refuses it, naming both; it was listed
    in ``--help`` and by :func:`method_names`, as a method to choose)."""
    return MappingProxyType({**REGISTRY, **{n: v for n, (v, _) in _installed().items() if v}})


def method_names() -> list[str]:
    """The method names that run by name (:func:`registry`): hspr's own in registry order (``hspr``
    first), then installed packages' methods; :func:`get_method` takes each."""
    return list(registry())


def known_methods_text() -> str:
    """:func:`method_names` as ``--help`` lists them ('Known: ...'), comma-separated, an installed package's method
    that does not load (:func:`describe_methods`' ``loads``: it does not import, build or name a known seed kind)
    marked as such: an extension trial saw an entry whose module failed to import listed as known beside the rest
    (``hspr methods`` says why; naming it gives the error). What such a package prints on import goes to stderr
    (:func:`_loaded`)."""
    broken = {n for n in method_names() if n not in REGISTRY and _loaded(n)[2] is not None}
    return ", ".join(f"{n} (does not load: `hspr methods` says why)" if n in broken else n for n in method_names())


def names_with(flag: str, value: bool = True) -> list[str]:
    """The names of :func:`registry` whose class has the :class:`~hspr.session.Method` flag ``flag``
    (``in_all``, ``accepts_missing``, ``accepts_pass_rates``, ...) equal to ``value``, in registry order. An installed
    package's method that does not load is left out with a warning (its error shows when it is named), as a
    name two packages register is (:func:`registry`; :func:`_scan` warned of it once: a re-trial saw it twice)."""
    out = []
    for name in registry():
        try:
            cls = method_class(name)
        except HsprError as exc:
            warnings.warn(f"{exc}: left out", stacklevel=2)
            continue
        if bool(getattr(cls, flag)) == value:
            out.append(name)
    return out


def method_package(name: str) -> str | None:
    """``'<package> <version>'`` of the installed package that registers method ``name``
    (:data:`ENTRY_POINT_GROUP`), for a results file's ``environment``; None for hspr's own methods and
    unknown names."""
    from importlib.metadata import PackageNotFoundError, version

    value, dist = _installed().get(name, ("", ""))
    if name in REGISTRY or not value:
        return None
    try:
        return f"{dist} {version(dist)}"
    except PackageNotFoundError:
        return dist


def method_class(name: str) -> type[Method]:
    """The class registered as ``name`` (:func:`registry`).

    Raises :class:`~hspr.errors.UnknownIdError` (a KeyError) listing the known names for an unknown
    name, and :class:`~hspr.errors.HsprError` naming the package when an installed package's method
    does not import or is not a :class:`~hspr.session.Method` subclass."""
    if name in REGISTRY:
        mod, cls = REGISTRY[name].split(":")
        return getattr(import_module(mod), cls)
    installed = _installed()
    if name not in installed:
        known = [*REGISTRY, *(n for n, (v, _) in installed.items() if v)]  # not a name two packages register (refused)
        norm = str(name).strip().lower().replace("-", "_")  # an API trial: 'HSPR', 'hspr-robust' got no hint
        close = norm if norm in known else next(iter(difflib.get_close_matches(norm, known, n=1)), None)
        raise UnknownIdError(f"unknown method {name!r}" + (f"; did you mean {close!r}?" if close else "")
                             + f" (known: {', '.join(known)})")
    value, dist = installed[name]
    if not value:
        raise HsprError(f"method {name!r} is registered by {dist} (entry-point group {ENTRY_POINT_GROUP!r}): neither "
                        "is used; uninstall all but one")
    mod, _, attr = value.partition(":")
    where = f"method {name!r} of {dist} ({ENTRY_POINT_GROUP} entry point {value!r})"
    try:
        obj = import_module(mod)
        for part in attr.split(".") if attr else ():
            obj = getattr(obj, part)
    except (Exception, SystemExit) as exc:  # the package's own error: say whose it is (a hostile re-trial: a module
        # that called sys.exit on import ended `hspr methods` and `--methods all` with status 3 and no word)
        raise HsprError(f"{where} does not load: {type(exc).__name__}: {exc}") from None
    if not (isinstance(obj, type) and issubclass(obj, Method)):
        raise HsprError(f"{where} is {obj!r}, not a subclass of hspr.session.Method: point the entry point at the "
                        "method's class (docs/python-api.md, 'Your own method')")
    return obj


#: the longest ``summary`` :func:`describe_methods` gives (a docstring's first paragraph, cut with '…')
SUMMARY_CHARS = 300


def _loaded(name: str) -> tuple[type[Method] | None, str | None, str | None]:
    """(class, its default instance's ``seed_kind``, None) for a method that loads, else (None, None, why not): its
    class does not import, is no :class:`~hspr.session.Method`, two packages register the name, it does not build
    with its default settings, or its ``seed_kind`` is none of :data:`~hspr.session.SEEDS_BY_KIND`. What a package
    prints as it is imported or built goes to stderr: stdout stays a table, JSON or help text (hostile re-trials: a
    print broke `hspr methods --json`'s parse, and landed above `--help`'s `Usage:`)."""
    import contextlib
    import sys

    try:
        with contextlib.redirect_stdout(sys.stderr):
            cls = method_class(name)
            kind = cls().seed_kind  # an instance's: HSPR's depends on its settings (a property of the class)
        if kind not in SEEDS_BY_KIND:  # a hostile re-trial: listed as loading, then refused by replay
            raise HsprError(f"method {name!r} has seed_kind {kind!r}; it must be one of "
                            f"{', '.join(map(repr, SEEDS_BY_KIND))}")
    except (Exception, SystemExit) as exc:  # an installed package's class that does not build with its defaults too
        return None, None, (str(exc) if isinstance(exc, HsprError) else
                            f"method {name!r} does not build with its default settings: {type(exc).__name__}: {exc}")
    return cls, kind, None


def describe_methods() -> list[dict]:
    """One dict per method that runs by name (:func:`registry`, in its order), then per name an installed
    package registers that does not run (two packages register it): what ``hspr methods`` lists.

    Keys: ``name``; ``package`` (``'<package> <version>'`` of the package that registers it, None for
    hspr's own); ``loads`` (False when its class does not import, is no :class:`~hspr.session.Method` or two
    packages register the name, or its ``seed_kind`` is none of :data:`~hspr.session.SEEDS_BY_KIND`); ``error``
    (why not, else None); ``summary`` (the first paragraph of the class's docstring on one line, its reST markup
    (``name``, :func:`name`) as plain text, at most
    :data:`SUMMARY_CHARS` characters, '' without one); ``interval`` (it gives a 90 % interval: ``gives_interval``), ``seed_kind``,
    ``accepts_pass_rates``, ``accepts_missing`` and ``in_all`` (run by ``--methods all``), None where it does
    not load. An extension trial had to read ``--help`` and Python to see that its method was found, by
    which package, and that two broken entries were listed as known.
    """
    names = [*registry(), *(n for n, (v, _) in _installed().items() if not v)]
    out = []
    for name in names:
        row = {"name": name, "package": method_package(name) or (None if name in REGISTRY else _installed()[name][1]),
               "loads": True, "error": None, "summary": "", "interval": None, "seed_kind": None,
               "accepts_pass_rates": None, "accepts_missing": None, "in_all": None}
        cls, kind, error = _loaded(name)
        if error is not None:
            row.update(loads=False, error=error)
        else:
            first = " ".join((cls.__doc__ or "").strip().split("\n\n")[0].split())  # the first paragraph, on one line
            # as plain text: a new-user trial read "(``hspr_robust``)" in `hspr methods`
            first = re.sub(r"(?::[a-z]+:)?`{1,2}~?([^`]+?)`{1,2}", r"\1", first)
            row.update(summary=first if len(first) <= SUMMARY_CHARS else first[:SUMMARY_CHARS - 1] + "…",
                       interval=bool(cls.gives_interval), seed_kind=str(kind),
                       accepts_pass_rates=bool(cls.accepts_pass_rates), accepts_missing=bool(cls.accepts_missing),
                       in_all=bool(cls.in_all))
        out.append(row)
    return out


def get_method(name: str, **params) -> Method:
    """Instantiate a registered method with keyword settings.

    Parameters
    ----------
    name : str
        A registered name (:func:`method_names`), e.g. ``"hspr"``, ``"hspr_robust"``, ``"atlas"``.
    **params
        The method's settings (its ``__init__`` keywords; :meth:`Method.get_params` lists them).

    Returns
    -------
    Method
        Unfitted; ``get_method(name).fit(source)`` gives a :class:`~hspr.session.FittedModel`.

    Raises :class:`~hspr.errors.UnknownIdError` (a KeyError) listing the known names for an
    unknown method, and :class:`~hspr.errors.HsprError` (a ValueError) for a setting the method
    does not take or refuses.
    """
    cls = method_class(name)
    try:
        return cls(**params)
    except TypeError as exc:  # an unknown keyword
        import dataclasses
        import re

        bad = re.search(r"unexpected keyword argument '([^']+)'", str(exc))
        group = next((g for g, kind in cls.setting_groups if bad and bad.group(1) in
                      {f.name for f in dataclasses.fields(kind)}), None)
        hint = f"; {bad.group(1)!r} is a field of {group}: pass {group}={{{bad.group(1)!r}: ...}}" if group else ""
        raise HsprError(f"method {name!r}: {exc}{hint}") from None
    except ValueError as exc:
        if isinstance(exc, HsprError):
            raise
        raise HsprError(f"method {name!r}: {exc}") from None
