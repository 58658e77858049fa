"""HSPR: hierarchical score posterior recovery (seeds/000; HSPR_SPEC sections 1-6)."""

from .config import HSPRConfig
from .method import HSPR, FittedHSPR, HSPRSession

__all__ = ["HSPR", "FittedHSPR", "HSPRConfig", "HSPRSession"]
