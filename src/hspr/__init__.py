"""hspr: recover an agent's full-benchmark score from a small budget of task executions.

Data flow: load a response matrix (:mod:`hspr.data`) -> fit a method on source agents
(:mod:`hspr.methods`) -> ask / tell / estimate sessions (:mod:`hspr.session`) -> replay and
report (:mod:`hspr.replay`, :mod:`hspr.report`).
"""

__version__ = "0.1.0"

from .data import DataError, ResponseMatrix, load_bank, load_matrix  # noqa: E402
from .errors import HsprError, InputWarning, UnknownIdError  # noqa: E402
from .methods import get_method, method_names  # noqa: E402
from .session import BudgetError, ScoreEstimate  # noqa: E402

__all__ = ["BudgetError", "DataError", "HsprError", "InputWarning", "ResponseMatrix", "ScoreEstimate", "UnknownIdError",
           "get_method", "load_bank", "load_matrix", "method_names", "__version__"]
