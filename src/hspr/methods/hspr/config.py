"""HSPR configuration (HSPR_SPEC sections 2-6)."""

from __future__ import annotations

import numbers
import os
import typing
from dataclasses import asdict, dataclass, fields

import numpy as np

from ...fileio import json_kind
from ...params import as_field_number, is_number

ACQUISITIONS = ("score", "latent", "uniform", "midrange")
DECISIONS = ("median", "mean")
PREDICTIVES = ("analytic", "draws")
NODE_DTYPES = ("float32", "float64")
#: accepted kappa: the selection grid is 0.25-16; far outside [1e-6, 1e6] the concentrations
#: kappa / (p q) and their inverses overflow float32 node arrays
KAPPA_RANGE = (1e-6, 1e6)
#: accepted gamma (prior precision of the latent state): the selection grid is 1-16; a hostile trial's 1e-100
#: (prior sd 1e50) overflowed the float32 node arrays and gave NaN estimates
GAMMA_RANGE = (1e-6, 1e6)
#: item_prior_scale multiplies precisions: beyond 1e6 the items are the prior (a hostile trial's 1e308 broke the
#: source fit's SVD), below 1e-6 the prior is gone
ITEM_PRIOR_SCALE_RANGE = (1e-6, 1e6)
#: bounds of n_nodes and n_draws: at least 16; at most 2**18 nodes (the default is 8,192) and 2**22
#: draws (the default is 131,072), since every step holds (nodes x groups) and (draws x groups) arrays
MIN_SIZE = 16
MAX_NODES = 2 ** 18
MAX_DRAWS = 2 ** 22


def check_size(name: str, value: int, most: int, default: int | None = None) -> None:
    """Raise ValueError unless ``MIN_SIZE <= value <= most``, naming the setting, its range and why
    (``default``: the setting's default to name, HSPRConfig's when None)."""
    allowed = f"allowed: {MIN_SIZE} to {most:,}, i.e. 2**{most.bit_length() - 1}"
    if value < MIN_SIZE:
        raise ValueError(f"{name} must be >= {MIN_SIZE} ({allowed}), got {value:,}: fewer gives an unstable estimate")
    if value > most:
        raise ValueError(f"{name} must be at most {most:,} ({allowed}), got {value:,}: more would need many GiB of "
                         f"memory per step (the default is {default or getattr(HSPRConfig, name):,})")



def is_selection_table(d) -> bool:
    """True for what looks like a table of selections as ``hspr select --record`` writes it (and
    the shipped ``selected_configs.json``): ``{bank: {fold: {"config": ..., "source_digest": ...}}}``
    with text beside it (``generated_by``, a note); an entry may be damaged
    (:func:`check_selection_table` names it)."""
    if not isinstance(d, dict):
        return False
    banks = [v for v in d.values() if isinstance(v, dict)]
    return bool(banks) and any(isinstance(e, dict) and "config" in e for v in banks for e in v.values())


def check_selection_table(d: dict, where: str) -> dict:
    """Return ``d`` when every entry of a table of selections is usable, else raise ValueError
    naming ``where`` (the file), the entry (bank/fold) and what is wrong: a hostile trial saw a bad
    entry fail only when its fold came up, after the other folds' work, without the file's name."""
    seen: dict[str, tuple] = {}  # source digest -> (bank, fold, config) of its first entry
    for bank, folds in d.items():
        if isinstance(folds, str):
            continue  # generated_by, a note
        if not isinstance(folds, dict) or not folds:
            raise ValueError(f"{where}: {bank!r} is not a set of folds {{fold: entry}}; a table of selections "
                             "(hspr select --record) has one per bank label")
        for fold, e in folds.items():
            if not isinstance(e, dict) or not isinstance(e.get("config"), dict) or \
                    not isinstance(e.get("source_digest"), str) or not e["source_digest"].strip():
                raise ValueError(f"{where}: entry {bank}/{fold} needs a 'config' object and a non-empty "
                                 "'source_digest' string (as hspr select --record writes them)")
            try:
                HSPRConfig.from_dict(e["config"])
            except ValueError as exc:
                raise ValueError(f"{where}: entry {bank}/{fold}: {exc}") from None
            first = seen.setdefault(e["source_digest"], (bank, fold, e["config"]))
            if first[2] != e["config"]:  # a hostile trial: the first of two such entries won silently
                raise ValueError(f"{where}: entries {first[0]}/{first[1]} and {bank}/{fold} are selections on the "
                                 "same sources (one source digest) with different configurations; keep one")
    return d


def selection_table(table, where: str) -> dict:
    """A copy of ``table`` when it is a usable table of selections ``{bank: {fold: entry}}``
    (every entry checked by :func:`check_selection_table`), for a method's ``table`` argument: a
    hostile trial's damaged entry failed only in ``fit`` (a bare KeyError), a flat configuration
    found no entry silently, and a later change to the caller's dict changed the method.

    Raises ValueError naming ``where`` (e.g. "hspr_robust table") and the entry.
    """
    import copy

    form = "({bank: {fold: {'config': {...}, 'source_digest': '...'}}})"
    if not isinstance(table, dict):
        raise ValueError(f"{where}: expected a table of selections as `hspr select --record` writes it {form}, got "
                         f"{type(table).__name__} {str(table)[:60]}")
    if any(isinstance(v, dict) and "config" in v for v in table.values()):  # one bank's {fold: entry}, unwrapped
        raise ValueError(f"{where}: this is one bank's entries {{fold: {{'config': ...}}}}; a table maps bank labels "
                         f"to them {form}")
    if table and set(table) <= {"config", "shift"}:
        raise ValueError(f"{where}: this is hspr_robust's settings form {{'config': ..., 'shift': ...}} (one "
                         f"configuration), not a table of selections {form}")
    banks = [v for v in table.values() if isinstance(v, dict)]
    scalar = bool(banks) and all(v and all(not isinstance(e, (dict, list)) and e is not None for e in v.values())
                                 for v in banks)  # {name: {field: value}}: settings, no folds
    if not banks or scalar:
        flat = scalar or any(not isinstance(v, str) for v in table.values())  # strings alone: notes
        raise ValueError(f"{where}: expected a table of selections as `hspr select --record` writes it {form}, got "
                         + ("settings without folds (a table holds one configuration per bank and fold)" if flat
                            else f"no entries ({str(table)[:60]})"))
    # a damaged entry (a list, null, no 'config') is named by check_selection_table
    return copy.deepcopy(check_selection_table(table, where))


def read_first_hint(name: str, value) -> str:
    """``"; a file's settings are read first: <name>=json.load(open(<value>))"`` for a path given where
    settings go, else "" (an API trial passed `hspr select --config-out`'s cfg.json path as ``config``)."""
    return f"; a file's settings are read first: {name}=json.load(open({str(value)!r}))" \
        if isinstance(value, str | os.PathLike) else ""


@dataclass(frozen=True)
class HSPRConfig:
    """Settings of one HSPR run.

    Attributes
    ----------
    rank : int
        r, number of residual factors in the latent state z = (theta, u_1..u_r); 0..8.
    gamma : float
        gamma, prior precision on each u_k (on theta when rank = 0) (Eq. 3), in [1e-6, 1e6].
    kappa : float
        kappa, group concentration scale: c_g = kappa / (p_g (1 - p_g)) (Eqs. 5-6), in [1e-6, 1e6].
    acquisition : {'score', 'latent', 'uniform', 'midrange'}
        Score-variance rule (Eq. 12), latent rule (Eq. 13), or an ablation query path
        (uniform random tasks; tasks by source pass rate nearest 0.5).
    lam : float
        lambda of the calibration (Eq. 16), in [0, 1]; usually 0 or 0.5.
    decision : {'median', 'mean'}
        Posterior-predictive median (Eq. 14) or posterior mean (ablation).
    group_uncertainty : bool
        False: q_g = p_g(z) exactly (kappa -> infinity ablation).
    predictive : {'analytic', 'draws'}
        How the predictive median and 5 %/95 % quantiles are computed: 'analytic' (default)
        from per-node cumulants of the unqueried count (an Edgeworth mixture CDF, no sampling;
        :func:`hspr.methods.hspr.decision.predictive_quantiles`), or 'draws', the spec's
        ``n_draws`` Monte-Carlo draws (section 5). Both give quantiles on the 1/N lattice; they
        agree except where the draws' CDF lies within Monte-Carlo error of the probability.
    item_prior_scale : float
        Multiplies both item-prior precisions of the source item fit (intercept 1 toward the
        zero-inflated-Beta logit, slope 2 toward 1; spec section 1.3), in [1e-6, 1e6]. 1 (default) is the
        spec exactly; smaller lets the items follow the source outcomes more closely. Not part
        of the paper's grid, and no shipped method changes it. Measured 2026-12-02 (4-fold
        replays, 10 %, query seeds 0-2, other settings at their defaults): scale 0.3 moved the
        MAE on Lite / Verified / Full / Pro from 2.22 / 1.68 / 1.05 / 2.23 pp to 2.06 / 1.76 /
        0.86 / 2.06 (0.1: 2.06 / 1.75 / 0.81 / 2.59) and narrowed the intervals (Verified
        coverage 0.89 -> 0.79, Full 0.71 -> 0.59), but no source-only check finds that: on
        hspr_robust's leave-cluster-out replays of each fold's sources, scale 1 had the lowest
        held-out MAE on 14 of 16 folds (Lite by 0.4-0.8 pp) and the one-standard-error rule
        kept it on all 16.
    node_dtype : {'float32', 'float64'}
        Storage of the (nodes x groups) arrays of predictive means and within-node variances,
        the memory-bound part of every step, and the precision of the observed groups' rates and
        likelihood terms at each refresh. 'float32' (default) halves their memory traffic;
        weights, proposal, the single-outcome reweighting between refreshes and the sums of
        log-likelihood terms are float64 (the acquisition's weighted sums over nodes are
        matrix-vector products in the node dtype). ``tests/test_hspr.py`` checks that the query paths equal
        float64's on simulated targets; ``benchmarks/speed_vs_base.py`` compares paths and
        estimates with an older commit.
    n_nodes, n_draws, refresh_every, node_seed, draw_seed
        Importance-sampling nodes (8,192 Sobol points), predictive draws (131,072), proposal
        refresh period (8 outcomes), and their seeds (20261005) (Appendix A; spec sections 3, 5).
        ``n_nodes`` is at most 2**18 and ``n_draws`` at most 2**22 (:data:`MAX_NODES`,
        :data:`MAX_DRAWS`), both at least 16.

    Raises
    ------
    ValueError
        On an out-of-range setting.
    """

    rank: int = 2
    gamma: float = 4.0
    kappa: float = 1.0
    acquisition: str = "score"
    lam: float = 0.5
    decision: str = "median"
    group_uncertainty: bool = True
    predictive: str = "analytic"
    item_prior_scale: float = 1.0
    node_dtype: str = "float32"
    n_nodes: int = 8192
    n_draws: int = 131072
    refresh_every: int = 8
    node_seed: int = 20261005
    draw_seed: int = 20261005

    def __post_init__(self) -> None:
        ints = ("rank", "n_nodes", "n_draws", "refresh_every", "node_seed", "draw_seed")
        for name in ints:
            v = getattr(self, name)
            if not is_number(v, numbers.Integral):
                raise ValueError(f"{name} must be an integer, got {v!r}")
        for name in ("gamma", "kappa", "lam", "item_prior_scale"):
            v = getattr(self, name)
            # plain numbers only (a re-trial: a Fraction, a numbers.Real, reached numpy's isfinite and raised its error)
            if not is_number(v, (int, float, np.integer, np.floating)) or not np.isfinite(v):
                raise ValueError(f"{name} must be a finite number, got {v!r}")
        if not isinstance(self.group_uncertainty, (bool, np.bool_)):
            raise ValueError(f"group_uncertainty must be true or false, got {self.group_uncertainty!r}")
        if not 0 <= self.rank <= 8:
            raise ValueError(f"rank must be an integer in 0..8, got {self.rank!r}")
        if not GAMMA_RANGE[0] <= self.gamma <= GAMMA_RANGE[1]:
            raise ValueError(f"gamma must be in [{GAMMA_RANGE[0]:g}, {GAMMA_RANGE[1]:g}], got {self.gamma!r}")
        if not KAPPA_RANGE[0] <= self.kappa <= KAPPA_RANGE[1]:
            raise ValueError(f"kappa must be in [{KAPPA_RANGE[0]:g}, {KAPPA_RANGE[1]:g}], got {self.kappa!r} "
                             "(for no group uncertainty, the kappa -> infinity limit, set group_uncertainty=False)")
        if not ITEM_PRIOR_SCALE_RANGE[0] <= self.item_prior_scale <= ITEM_PRIOR_SCALE_RANGE[1]:
            raise ValueError(f"item_prior_scale must be in [{ITEM_PRIOR_SCALE_RANGE[0]:g}, "
                             f"{ITEM_PRIOR_SCALE_RANGE[1]:g}], got {self.item_prior_scale!r}")
        if self.acquisition not in ACQUISITIONS:
            raise ValueError(f"acquisition must be one of {ACQUISITIONS}, got {self.acquisition!r}")
        if self.decision not in DECISIONS:
            raise ValueError(f"decision must be one of {DECISIONS}, got {self.decision!r}")
        if self.node_dtype not in NODE_DTYPES:
            raise ValueError(f"node_dtype must be one of {NODE_DTYPES}, got {self.node_dtype!r}")
        if self.predictive not in PREDICTIVES:
            raise ValueError(f"predictive must be one of {PREDICTIVES}, got {self.predictive!r}")
        if not 0 <= self.lam <= 1:
            raise ValueError(f"lam must be in [0, 1], got {self.lam!r}")
        for name, most in (("n_nodes", MAX_NODES), ("n_draws", MAX_DRAWS)):
            check_size(name, getattr(self, name), most)
        if self.refresh_every < 1:
            raise ValueError(f"refresh_every must be >= 1, got {self.refresh_every}")
        if self.node_seed < 0 or self.draw_seed < 0:
            raise ValueError(f"node_seed and draw_seed must be >= 0, got {self.node_seed}, {self.draw_seed}")

    def replace(self, **changes) -> HSPRConfig:
        """A copy with these fields changed; ValueError for an unknown field or a refused value."""
        d = asdict(self)
        unknown = set(changes) - set(d)
        if unknown:
            raise ValueError(f"unknown HSPR setting(s): {sorted(unknown)}")
        d.update(changes)
        return HSPRConfig(**d)

    def to_dict(self) -> dict:
        """Every field as a plain dict (:meth:`from_dict` reads it back)."""
        return asdict(self)

    def changed(self) -> dict:
        """The fields that differ from the defaults, as a plain dict (what ``--config`` takes; {} for
        the defaults): a fit's ``fitted_settings``."""
        default = asdict(HSPRConfig())
        return {k: v for k, v in asdict(self).items() if v != default[k]}

    @classmethod
    def from_dict(cls, d: dict) -> HSPRConfig:
        """From a dict of HSPRConfig fields (missing ones at their defaults); ValueError for
        anything else (an unknown field, a refused value, the whole `hspr select --out` file)."""
        if not isinstance(d, dict):
            raise ValueError(f"expected a JSON object of HSPR settings (e.g. {{\"rank\": 2}}), got {json_kind(d)}")
        names = {f.name for f in fields(cls)}
        unknown = set(d) - names
        if isinstance(d.get("config"), dict) and "stages" in d:  # the whole `hspr select --out` file
            raise ValueError(f"this is the output of `hspr select` (bank {d.get('bank')!r}, fold {d.get('fold')!r}), not "
                             "a config: give the file its --config-out option writes (the chosen settings alone; "
                             "`hspr select ... --config-out cfg.json`), or copy its 'config' object into a file")
        if is_selection_table(d):  # a trial: `--config table.json` got 'unknown HSPR setting(s) [generated_by, ...]'
            raise ValueError("this is a table of selections (`hspr select --record`: one configuration per fold, "
                             "found by the fold's source digest), not one config: `hspr replay --config` takes it "
                             "(runs labelled hspr_auto[table=<file name>]); elsewhere give one configuration, for a new agent the "
                             "--config-out file of `hspr select --fold all`")
        if unknown == {"shift"}:  # a re-trial: the message below spoke of a 'config' object the dict did not hold
            raise ValueError("'shift' is not an HSPR setting: hspr_robust's calibration settings are its own keyword, "
                             "get_method(\"hspr_robust\", config={...}, shift={...}), or, in a --config file given with "
                             "--method(s) hspr_robust, an object beside \"config\": {\"config\": {...}, \"shift\": {...}}")
        if unknown and unknown <= {"config", "shift"}:  # hspr_robust's form, given to hspr (a trial)
            raise ValueError("{\"config\": ..., \"shift\": ...} is the form of hspr_robust's settings (its HSPR "
                             "configuration and its calibration): on the command line give this file with --method(s) "
                             "hspr_robust, or for hspr a file holding the 'config' object alone; in Python they are "
                             "hspr_robust's two keywords, get_method(\"hspr_robust\", **settings), and its keyword "
                             "'config' (like hspr's) takes the HSPR settings themselves")
        if unknown:
            # a hostile trial: the example given here, {"shift": {...}} alone, was then refused as no HSPR setting
            raise ValueError(f"unknown HSPR setting(s) {sorted(unknown)}; known: {sorted(names)} (hspr_robust's shift "
                             "calibration settings go in a --config file given with --method(s) hspr_robust, as "
                             "{\"config\": {}, \"shift\": {\"sided\": false}} (\"config\" holds the HSPR settings), and in Python "
                             "are its keyword shift=: get_method(\"hspr_robust\", shift={...}))")
        hints = typing.get_type_hints(cls)
        return cls(**{k: as_field_number(hints.get(k), v) for k, v in d.items()})

    @classmethod
    def from_json(cls, path) -> HSPRConfig:
        """From a JSON file of HSPRConfig fields.

        Raises
        ------
        FileNotFoundError
            For a missing file (the caller words it: the command line names the option).
        ValueError
            Naming ``path``, when it is not UTF-8 JSON or :meth:`from_dict` refuses it.
        """
        from ...fileio import read_json_file

        d = read_json_file(path)  # ValueError naming the path when not UTF-8 or not JSON
        try:
            return cls.from_dict(d)
        except ValueError as exc:
            raise ValueError(f"{path}: {exc}") from None
