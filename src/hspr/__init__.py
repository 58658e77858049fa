"""hspr: recover an agent's full-benchmark score from a small budget of task executions.

Data flow: load a response matrix (:mod:`hspr.data`) -> fit a method on source agents
(:mod:`hspr.methods`) -> ask / tell / estimate sessions (:mod:`hspr.session`) -> replay and
report (:mod:`hspr.replay`, :mod:`hspr.report`).
"""

import typing as _typing

__version__ = "0.1.0"

if _typing.TYPE_CHECKING:  # the names for type checkers and editors; at run time :func:`__getattr__` imports them
    from .data import DataError, ResponseMatrix, load_bank, load_matrix
    from .errors import HsprError, InputWarning, UnknownIdError
    from .methods import get_method, method_names
    from .session import BudgetError, ScoreEstimate

#: public name -> the module that defines it, imported on first use (PEP 562): ``import hspr.cli``
#: (the ``hspr`` command) then loads no numpy or pandas before the command's own error and Ctrl-C
#: handling is in place (a trial: Ctrl-C in the first 0.1 s printed a traceback)
_EXPORTS = {
    "DataError": "data", "ResponseMatrix": "data", "load_bank": "data", "load_matrix": "data",
    "HsprError": "errors", "InputWarning": "errors", "UnknownIdError": "errors",
    "get_method": "methods", "method_names": "methods",
    "BudgetError": "session", "ScoreEstimate": "session",
}

__all__ = ["BudgetError", "DataError", "HsprError", "InputWarning", "ResponseMatrix", "ScoreEstimate", "UnknownIdError",
           "get_method", "load_bank", "load_matrix", "method_names", "__version__"]


def __getattr__(name: str):
    """The public names of :data:`__all__`, each imported from its module on first use, and the
    subpackages and modules (``hspr.data.folds`` after a bare ``import hspr``, as before)."""
    import importlib
    import importlib.util

    if name in _EXPORTS:
        value = getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    elif not name.startswith("_") and importlib.util.find_spec(f"{__name__}.{name}") is not None:
        value = importlib.import_module(f".{name}", __name__)
    else:
        raise AttributeError(f"module 'hspr' has no attribute {name!r}")
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({n for n in globals() if not n.startswith("_")} | set(_EXPORTS) | {"__version__"})
