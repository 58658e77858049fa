"""Response matrices: load, validate, bundled banks, folds."""

from .banks import BANK_ORDER, BANKS, load_bank
from .folds import bank_folds, make_folds
from .io import load_matrix
from .matrix import DataError, ResponseMatrix

__all__ = ["BANK_ORDER", "BANKS", "DataError", "ResponseMatrix", "bank_folds", "load_bank", "load_matrix", "make_folds"]
