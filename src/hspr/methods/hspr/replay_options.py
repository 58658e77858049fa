"""The HSPR variants a replay's options describe: ``hspr replay --methods ... --config FILE|auto``
and HSPR's ablation switches, turned into labelled :class:`~hspr.session.Method` objects.

The command line names methods; which of them read a --config file (``hspr``, ``hspr_robust``),
which choose their own settings (``hspr_auto``), and how their runs are labelled
(``hspr[config=my_cfg]``, ``hspr_auto[decision=mean]``) is HSPR's knowledge, kept here so that
no method name appears outside :mod:`hspr.methods`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ...data.matrix import ResponseMatrix
from ...fileio import readable_name
from ...session import Method
from .. import get_method
from .config import HSPRConfig, check_selection_table, is_selection_table
from .selection import unrecorded_folds


def hspr_label(config_path: str | None, changes: dict, table: bool = False) -> str:
    """Method name HSPR's runs carry: 'hspr', or 'hspr[...]' naming the config and ablations.

    Distinct labels let `hspr report` put the default, `--config auto`, a config file and every
    ablation of separate replays side by side, e.g. ``hspr[no-group-uncertainty]``,
    ``hspr[config=my_cfg]``, ``hspr[acquisition=uniform]``. ``--config auto`` runs are the
    registered method ``hspr_auto`` and carry its name (``hspr_auto[decision=mean]`` with an
    ablation), as ``--methods hspr_auto`` runs do; so do runs of a table of selections
    (``table``: ``hspr_auto[table=my_table]``).
    """
    parts = []
    if config_path and config_path != "auto":
        parts.append(f"{'table' if table else 'config'}={readable_name(Path(config_path).stem)}")
    for k, v in changes.items():
        parts.append("no-group-uncertainty" if k == "group_uncertainty" and v is False else f"{k}={v}")
    name = "hspr_auto" if config_path == "auto" or table else "hspr"
    return f"{name}[{','.join(parts)}]" if parts else name


def replay_methods(names: list[str], config_path: str | None, ablations: dict,
                   read_config: Callable[[str], object]) -> dict[str, Method]:
    """Method objects keyed by the name their runs carry (see :func:`hspr_label`): what
    ``hspr replay --methods NAMES [--config FILE | auto] [ablations]`` runs.

    A --config file sets the settings of hspr and of hspr_robust (runs labelled
    ``hspr[config=<name>]``, ``hspr_robust[config=<name>]``), as ``hspr live start --config``
    does; a table of selections (``hspr select --record``) runs hspr_auto with that table, and
    hspr_robust with each fold's entry (``hspr_robust[table=<name>]``).

    ``ablations``: option -> value (None: not given) of the HSPR switches ``acquisition``,
    ``decision``, ``group_uncertainty``. ``read_config(path)`` reads the --config file's JSON (the
    CLI's reader, which checks the path and names the file in its errors); it is called only when
    the options are consistent, so a --config no method takes is refused before its file is read.

    Raises ValueError for a missing or invalid --config file, and for HSPR options given
    without hspr among the methods.
    """
    given = {k: v for k, v in ablations.items() if v is not None}
    file_config = bool(config_path) and config_path != "auto"
    if config_path == "auto" and "hspr" in names and "hspr_auto" in names:
        raise ValueError("--config auto runs hspr with its source-selected settings, labelled hspr_auto, and "
                         "hspr_auto is also in --methods: the two are one method; drop --config auto to compare "
                         "the default hspr with hspr_auto")
    # a config file sets hspr's and hspr_robust's settings (as `hspr live start --config` does: a trial could not
    # backtest its live setup); hspr_auto chooses its own, and so does hspr_robust under --config auto
    takers = ("hspr", "hspr_robust") if file_config else ("hspr",)
    untaken = bool(config_path) and not any(n in names for n in takers)  # --config with no method to take it
    if untaken and (chooser := next((n for n in names if n in ("hspr_auto", "hspr_robust")), None)):
        same = " (--methods hspr_auto is --methods hspr --config auto)" if chooser == "hspr_auto" else ""
        raise ValueError(f"--config {config_path} sets hspr's settings in a replay; {chooser} chooses its own on each "
                         f"fold's sources{same}: drop --config"
                         + ("" if config_path == "auto" else f", or add hspr to run hspr with {config_path}"))
    if given and "hspr" not in names or untaken:
        opts = [f"--{k.replace('_', '-')}" if k != "group_uncertainty" else "--no-group-uncertainty" for k in given]
        opts += ["--config"] if untaken else []  # --config named only when no method takes it
        taken_by, example = "hspr", "hspr,uniform"
        if untaken and file_config and not given:  # a re-trial: 'add hspr' for a file only hspr_robust takes
            try:
                doc = read_config(config_path)
            except Exception:  # noqa: BLE001 (a missing or bad file: the generic advice; adding a method names it)
                doc = None
            if isinstance(doc, dict) and doc and set(doc) <= {"config", "shift"}:
                taken_by, example = "hspr_robust, which takes this file's {\"config\", \"shift\"} form", "hspr_robust,uniform"
            else:
                taken_by = "hspr or hspr_robust (the methods a --config file sets)"
        raise ValueError(f"{', '.join(opts)} set(s) HSPR options, but hspr is not in --methods; add {taken_by} "
                         f"(e.g. --methods {example}){_plugin_config_hint(names)}")
    doc = read_config(config_path) if file_config else None  # the file, read once
    if "hspr" in names and "hspr_robust" in names and isinstance(doc, dict) and doc and set(doc) <= {"config", "shift"}:
        # a hostile trial: hspr's refusal of this form did not say which method refused it, nor that hspr_robust takes it
        raise ValueError(f"--config {config_path} holds hspr_robust's settings ({{\"config\": ..., \"shift\": ...}}), "
                         "which hspr, also in --methods, cannot take: replay hspr_robust alone with this file, or give "
                         "HSPR settings alone (its 'config' object), which set both methods' HSPR configuration")
    table = _checked_table(doc, config_path) if file_config else None
    if table is not None and "hspr_auto" in names:  # a hostile trial: it ignored the table and selected on every fold
        raise ValueError(f"--config {config_path} is a table of selections, which hspr_auto does not read (it finds "
                         "its settings in the shipped table, or selects them on each fold's sources): the table's runs "
                         f"are hspr's, labelled hspr_auto[table={readable_name(Path(config_path).stem)}]; use --methods hspr (or "
                         "hspr_robust) with it, and drop hspr_auto")
    try:
        return _built(names, config_path, given, doc, table, file_config)
    except ValueError as exc:  # a re-trial: a plugin's key in the file was only 'unknown HSPR setting(s)'
        if not (hint := _plugin_config_hint(names)) or "setting" not in str(exc):
            raise
        raise ValueError(f"{exc}{hint}") from None


def _plugin_config_hint(names: list[str]) -> str:
    """How to set the settings of the first method of ``names`` another package registers (a replay's
    --config sets hspr's and hspr_robust's only: a method-writer's trial), or ''."""
    from .. import REGISTRY

    other = next((n for n in names if n not in REGISTRY), None)
    return (f"; a replay's --config does not set the settings of {other!r} (a method of another package): set them "
            f"in Python, replay(..., {{{other!r}: get_method({other!r}, <setting>=...)}}), or in `hspr live start "
            "--config`" if other else "")


def _built(names: list[str], config_path: str | None, given: dict, doc, table, file_config: bool) -> dict:
    """:func:`replay_methods`' methods, once its checks have passed."""
    out = {}
    for n in names:
        if n == "hspr":
            if config_path == "auto":
                out[hspr_label(config_path, given)] = get_method("hspr_auto", overrides=given)
                continue
            if table is not None:  # `hspr select --record`'s table: each fold's config found by its source digest
                out[hspr_label(config_path, given, table=True)] = get_method("hspr_auto", table=table, overrides=given)
                continue
            cfg = _hspr_config(doc, config_path)
            # name only the switches that change something
            changes = {k: v for k, v in given.items() if getattr(cfg, k) != v}
            out[hspr_label(config_path, changes)] = get_method("hspr", config=cfg.replace(**changes))
        elif n == "hspr_robust" and file_config:
            if table is not None:  # each fold's entry found by its source digest, as for hspr_auto
                out[f"hspr_robust[table={readable_name(Path(config_path).stem)}]"] = get_method("hspr_robust", table=table)
                continue
            out[f"hspr_robust[config={readable_name(Path(config_path).stem)}]"] = _robust_from_doc(doc, config_path)
        else:
            out[n] = get_method(n)
    return out


def check_table_covers(config_path: str, table: dict, label: str, mat: ResponseMatrix, folds, matrix_path,
                       names: list[str], subset: bool = False, missing_as_zero: bool = True,
                       other_reading: Callable[[], ResponseMatrix | None] | None = None) -> None:
    """ValueError naming the folds of ``label`` a --config table of selections has no entry for,
    and the command that records them (instead of a selection at the default settings inside
    the replay, or hspr_robust's rank comparison).

    ``folds`` None means the sources are not a fold of a matrix (``--targets``, a ``--split``):
    ``hspr select`` cannot record them. ``subset``: the folds of a ``--tasks`` subset, recorded by
    a selection on a matrix of those tasks. ``names``: the replay's methods (with hspr among them,
    ``--config auto`` is an alternative). ``missing_as_zero``: False adds ``--no-missing-as-zero`` to the
    ``hspr select`` command it suggests (the digest of the sources depends on it). ``other_reading()``:
    the matrix with its missing cells read the other way (None: no missing cells); where the table
    has every fold of that reading, the message says to replay with the other setting (a hostile
    trial: recorded with --no-missing-as-zero, replayed without), and only there (a re-trial: the
    hint came for a fold never recorded)."""
    auto_hint = "hspr" in names

    missing = unrecorded_folds(table, mat, folds)
    if not missing:
        return
    if folds is None:  # a trial was told to run a `select --fold K` that could not help
        raise ValueError(f"--config {config_path} has no selection for the sources of {label} (an entry is found by "
                         "the digest of the sources): a table records selections on the folds of a matrix (hspr "
                         "select --fold K --record), and these sources (the whole matrix with --targets, the rows a "
                         "--split leaves) are no fold; replay them "
                         + ("with --config auto (hspr selects its settings on these sources inside the replay), " if auto_hint
                            else "")
                         + "without --config (hspr_robust compares residual-factor ranks on these sources), or with a "
                         "configuration file chosen without these target rows")
    auto = (", or replay with --config auto instead of the table (hspr selects every fold's settings inside the "
            "replay, slower than --fast)") if auto_hint else ""
    source = f"--matrix {matrix_path}" if matrix_path else f"--bank {label.split('/')[0]}"
    if subset:
        source = "--matrix <a matrix of the --tasks tasks only: select has no --tasks>"
    other = None if subset or other_reading is None else other_reading()
    if other is not None and not unrecorded_folds(table, other, folds):
        flag = "with" if missing_as_zero else "without"
        raise ValueError(f"--config {config_path} has no selection for the sources of fold(s) "
                         f"{', '.join(map(str, missing))} of {label} as replayed here, with its {other.n_missing} missing "
                         f"cell(s) {'counted as unresolved' if missing_as_zero else 'kept missing (--no-missing-as-zero)'}; "
                         f"its entries are for the missing cells read the other way: replay {flag} --no-missing-as-zero")
    raise ValueError(f"--config {config_path} has no selection for the sources of fold(s) "
                     f"{', '.join(map(str, missing))} of {label} (an entry is found by the digest of a fold's sources): "
                     f"record it first, e.g. `hspr select {source} --fold {missing[0]}{'' if missing_as_zero else ' --no-missing-as-zero'}"
                     f" --fast --out "
                     f"sel_{missing[0]}.json --record {config_path}`{auto}")


def _checked_table(doc, config_path: str) -> dict | None:
    """``doc`` when it is a table of selections (``hspr select --record``), every entry checked now,
    not when its fold comes up; else None."""
    return check_selection_table(doc, f"--config {config_path}") if is_selection_table(doc) else None


def _robust_from_doc(doc, config_path: str):
    """hspr_robust with a --config file's settings: HSPRConfig fields, or its own form
    ``{"config": {...}, "shift": {...}}`` as ``hspr live start --config`` takes it (a trial found
    replay refusing it); ValueError naming the file."""
    if isinstance(doc, dict) and doc and set(doc) <= {"config", "shift"}:
        try:
            return get_method("hspr_robust", config=doc.get("config"), shift=doc.get("shift"))
        except ValueError as exc:
            raise ValueError(f"--config {config_path}: {exc}") from None
    return get_method("hspr_robust", config=_hspr_config(doc, config_path))


def _hspr_config(doc, config_path: str | None):
    """The HSPRConfig of a --config file's JSON ``doc`` (default without a file); ValueError naming the file."""
    if not config_path:
        return HSPRConfig()
    try:
        return HSPRConfig.from_dict(doc)
    except ValueError as exc:
        raise ValueError(f"--config {config_path}: {exc}") from None
