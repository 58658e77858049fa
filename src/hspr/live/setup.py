"""What a live session is built from: its bank (bundled or the user's matrix, an agent hidden
to try the loop) and its method, built from the stored settings and fitted through the fit cache
(:mod:`hspr.fitcache`)."""

from __future__ import annotations

import shlex
import stat
import time
import unicodedata
import warnings
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import replace
from pathlib import Path

import numpy as np

from ..data.banks import load_bank
from ..data.io import load_matrix_and_form
from ..data.matrix import ResponseMatrix
from ..errors import HsprError, UnknownIdError, UnreadableFolderWarning, shorten
from ..fitcache import cached_fit, keep_result, kept_result
from ..journal import LiveSessionError
from ..methods import ENTRY_POINT_GROUP, method_class
from ..session import FittedModel, Method, refuse_pass_rates
from ..stopping import WidthBelow
from .text import did_you_mean, near_matches


def load_session_bank(name: str | None, matrix: str | Path | None, missing_as_zero: bool = True,
                      tasks=None) -> ResponseMatrix:
    """The bank a session fits on: a bundled bank by name, or the user's matrix file.

    Missing cells of a matrix are filled with 0 (unresolved, the leaderboard convention)
    when ``missing_as_zero``; otherwise they stay missing (HSPR fits without them, methods that
    cannot refuse them). ``tasks`` (a list of ids)
    cuts the bank to that subset: the score is then over those tasks
    (:meth:`ResponseMatrix.select_tasks`).

    Raises
    ------
    LiveSessionError
        When neither ``name`` nor ``matrix`` is given.
    DataError
        For an unknown bank name, an unreadable matrix, or ``tasks`` not in the bank.
    """
    if matrix is not None:
        m = read_bank_file(matrix)
        m = m if tasks is None else m.select_tasks(tasks)  # then the few-runs warning judges the subset (a trial)
        return m.fill_missing(0) if (m.missing is not None and missing_as_zero) else m
    if name is None:
        raise LiveSessionError("give a bundled bank name or a matrix path")
    m = load_bank(name, missing_as_zero)
    return m if tasks is None else m.select_tasks(tasks)


#: a bank file whose reading took this many seconds or more is kept, parsed, in the fit cache (:func:`read_bank_file`)
BANK_CACHE_SECONDS = 1.0
#: the forms of a bank file whose reader reads that file alone (a header-less matrix.csv also reads the metadata.json
#: beside it, and a folder many files: those are read every time)
ONE_FILE_FORMS = frozenset({"wide_csv", "long_csv", "trials_csv", "jsonl"})


def _file_state(path: str | Path) -> dict | None:
    """What identifies a version of the regular file ``path``: its real path, size, modification and change
    times (ns), inode and device; None for a folder, a missing file or one that cannot be examined."""
    try:
        real = Path(path).resolve()
        st = real.stat()
    except (OSError, RuntimeError):
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    return {"path": str(real), "size": st.st_size, "mtime_ns": st.st_mtime_ns, "ctime_ns": st.st_ctime_ns,
            "inode": st.st_ino, "device": st.st_dev}


def read_bank_file(path: str | Path) -> ResponseMatrix:
    """:func:`~hspr.data.io.load_matrix` of a live session's bank, kept parsed in the fit cache.

    Every live command reads the session's bank again, to check it is unchanged (its digest). A scale trial:
    a long CSV of 2.1 million lines took 17-20 s and 1.9 GB each command (`live start` read it twice), a
    trials CSV of 200 x 2,000 x 5 about 3 s. A bank file of one of :data:`ONE_FILE_FORMS` whose reading took
    :data:`BANK_CACHE_SECONDS` or more is therefore kept, as read, under its version (:func:`_file_state`:
    any write to the file changes its size or its modification or change time, so a changed bank is read
    again, and then refused by the session's digest check as before); the next read of that version is the
    cached matrix, with the warnings its reading gave said again (naming the file as ``path`` names it). A cache
    that cannot be written costs the reading, with a warning.

    Parameters
    ----------
    path : str or Path
        The bank file (or folder, never cached).

    Returns
    -------
    ResponseMatrix
        As :func:`~hspr.data.io.load_matrix` returns it, ``source`` = ``str(path)``.

    Raises
    ------
    DataError
        As :func:`~hspr.data.io.load_matrix`.
    """
    state = _file_state(path)
    if state is not None:
        kept = kept_result("", "bank file", state, tuple, redo="the bank file is read again")
        if kept is not None:
            m, said = kept
            for category, text in said:  # they name the file as the first read was given it (a hostile trial)
                if m.source != str(path) and text.startswith(f"{m.source}: "):
                    text = f"{path}{text[len(m.source):]}"
                warnings.warn(text, category, stacklevel=2)
            return m if m.source == str(path) else replace(m, source=str(path))
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m, form = load_matrix_and_form(path)
    took = time.perf_counter() - start
    said = [(w.category, str(w.message)) for w in caught]
    for category, text in said:
        warnings.warn(text, category, stacklevel=2)
    if state is not None and form in ONE_FILE_FORMS and took >= BANK_CACHE_SECONDS and _file_state(path) == state:
        keep_result("", "bank file", state, (m, said), f"read the bank file {path} again ({took:.0f} s)")
    return m


def _in_target_set(agent: str, mat: ResponseMatrix) -> str:
    """When ``agent`` is a row of a bundled target set scored against the bundled bank ``mat``, how to play it
    live (a trial of the shift flag looked for a bash-only agent in Verified and found no recipe); when no agent
    of ``mat`` is near ``agent`` but one of such a set is (letter case, a slip: :func:`did_you_mean`), that agent
    and the same recipe; else ''."""
    from ..data.banks import TARGET_SETS, load_target_set

    bank = str(mat.source).removeprefix("bank:") if str(mat.source).startswith("bank:") else None
    sets = {name: load_target_set(name).agents for name, info in TARGET_SETS.items() if info.bank == bank}

    def how(name: str, a: str) -> str:
        return (f"add that set's rows to the bank and hide it there (the set's other agents are then sources too): "
                f"`hspr bank build {name} --out {name}.csv`, `hspr bank merge {bank} {name}.csv --out {bank}+{name}.csv`, "
                f"then `hspr live start --matrix {bank}+{name}.csv --hide {a}` with this command's other options but "
                "--bank")  # a re-trial: kept, --bank was refused beside --matrix as a bundled bank's name

    def recipe(name: str, a: str) -> str:
        return (f"it is an agent of the bundled target set {name!r}, scored against {bank} by `hspr replay --bank "
                f"{bank} --targets {name}`. To play it live, " + how(name, shlex.quote(a)))

    for name, agents in sets.items():
        if agent in agents:
            return "; " + recipe(name, agent)
    if near_matches([agent], mat.agents):  # a bank agent is near: did_you_mean's hint, not a target set's
        return ""
    # 'Kimi K2 Instuct' (a slip) got neither hint nor recipe; matched over the whole set, not agent by agent (a
    # re-trial: a letter-case miss of 'GPT-5 mini ...' was also near 'GPT-5 ...' and 'GPT-5 nano ...' by spelling)
    for name, agents in sets.items():
        near = near_matches([agent], agents)
        if near:
            text = recipe(name, near[0][1])
            return f"; did you mean {near[0][1]!r}? " + text[0].upper() + text[1:]
    if starting_with(agent, mat.agents):  # the bank's own agents first (_starting_hint)
        return ""
    for name, agents in sets.items():  # 'devstral' starts two of its ids, so no rule above names one (a trial)
        starts = starting_with(agent, agents)
        if starts:
            return (f"; the bundled target set {name!r} (scored against {bank} by `hspr replay --bank {bank} --targets "
                    f"{name}`) has {_ids(starts, agent)}. To play {'one' if len(starts) > 1 else 'it'} live, "
                    + how(name, "'AGENT'" if len(starts) > 1 else shlex.quote(starts[0])))
    return ""


def starting_with(typed: str, ids) -> list[str]:
    """The ids of ``ids`` (in their order) that start with ``typed``, up to letter case and surrounding white space;
    [] for a blank ``typed``."""
    key = typed.strip().casefold()
    return [a for a in ids if a.casefold().startswith(key)] if key else []


def _ids(ids: list[str], typed: str) -> str:
    """'the agent(s) A, B, C, ..., whose id starts with TYPED' (at most 5 shown) for a hint."""
    shown = ", ".join(map(repr, ids[:5])) + (f", ... ({len(ids)} in all)" if len(ids) > 5 else "")
    return f"the agent{'s' if len(ids) > 1 else ''} {shown}, whose id starts with {typed.strip()!r}"


def _starting_hint(agent: str, ids) -> str:
    """'; the bank has the agent(s) ..., whose id starts with AGENT' when ``agent`` starts some of ``ids``, else ''."""
    starts = starting_with(agent, ids)
    return f"; the bank has {_ids(starts, agent)}" if starts else ""


def hide_agent(mat: ResponseMatrix, agent: str) -> tuple[ResponseMatrix, ResponseMatrix]:
    """Split ``mat`` (shape (n_agents, n_tasks)) into the bank without ``agent``'s row, the session's
    source agents (shape (n_agents - 1, n_tasks)), and that row alone (shape (1, n_tasks)): a trial of
    the loop answers each task from it (:meth:`LiveSession.simulate`) while the fit never sees it
    (a new-user trial hid an agent with ``grep -v``, where a typo hid nothing and scored the agent
    against itself).

    Raises
    ------
    LiveSessionError
        When ``agent`` is not an agent id of ``mat`` (the nearest id named when one is near), or
        hiding it would leave no source agent.
    """
    if not isinstance(agent, str) or not agent.strip():
        raise LiveSessionError(f"the agent to hide must be an agent id of the bank, got {agent!r}")
    name = str(mat.source).removeprefix("bank:")  # a bundled bank's source is 'bank:NAME'
    if agent not in mat.agents:
        raise LiveSessionError(f"no agent {agent!r} to hide in the bank ({name}, {mat.n_agents} agents; `hspr bank "
                               f"agents {shlex.quote(name)}` lists them, as the bank's ResponseMatrix.agents does in "
                               "Python)" + (_in_target_set(agent, mat)
                                                                           or did_you_mean([agent], mat.agents)
                                                                           or _starting_hint(agent, mat.agents)))
    if mat.n_agents < 2:
        raise LiveSessionError(f"agent {agent!r} is the bank's only agent: hiding it would leave no source agent")
    i = mat.agent_index(agent)
    # the source says what was hidden: a method refusing too few sources names the count after hiding (a trial)
    rest = replace(mat.drop_rows([i]), source=f"{mat.source} without the hidden agent {agent}")
    return rest, mat.rows([i])


def _hide_checked(mat: ResponseMatrix, b: dict, where: str) -> tuple[ResponseMatrix, ResponseMatrix]:
    """:func:`hide_agent` for a session's bank header ``b``, refusing a bank whose hidden row is gone or
    changed (LiveSessionError naming ``where``): its outcomes and true score would no longer be those the
    session recorded (a hostile trial: a flipped row went on answering, the true score 11.67 % -> 88.33 %)."""
    agent = b["hidden"]
    ways = ("restore the bank" + (", or point the session at a file that holds it: hspr live relink --matrix FILE"
                                  if b.get("matrix") else "")
            + "; or start a new trial session and carry these outcomes over: hspr live ingest OLD --session NEW")
    if agent not in mat.agents:
        raise LiveSessionError(f"{where}: the session hides agent {agent!r}, which the bank no longer holds "
                               f"(a hand-edited \"hidden\" field, or another bank?); {ways}")
    rest, row = hide_agent(mat, agent)
    if b.get("hidden_digest") not in (None, row.digest()):
        raise LiveSessionError(f"{where}: the row of the hidden agent {agent!r} in the bank changed since the session "
                               f"started, so its outcomes and true score are no longer those the session recorded; {ways}")
    return rest, row


def _changed_bank_cause(caught: list, mat: ResponseMatrix, b: dict) -> str:
    """Why a session's bank read as another one, when the reading says (``""`` otherwise): folders
    below it that could not be read (``caught``: the warnings of the read; a re-trial was told to start
    a new session over a permission), or more agents than at the start (results added since, or a
    folder unreadable then and readable now)."""
    unread = [str(w.message) for w in caught if issubclass(w.category, UnreadableFolderWarning)]
    if unread:
        return "; reading it: " + "; ".join(dict.fromkeys(unread))
    more = mat.n_agents - (b.get("n_agents") or mat.n_agents)
    if more > 0 and mat.n_tasks == b.get("n_tasks"):
        return (f"; it has {more} agent(s) more than when the session started (results added since, or a folder that "
                "could not be read then is readable now)")
    return ""


def _make_method(name: str, settings) -> Method:
    """Method ``name`` built from its settings (None: defaults; a dict of :meth:`Method.get_params`
    values; or a settings object with ``to_dict``, such as :class:`HSPRConfig`)."""
    try:
        cls = method_class(name)
    except UnknownIdError as exc:  # e.g. a session of a package's method, that package since uninstalled
        raise LiveSessionError(f"{exc.args[0]}; a method another package registers (entry-point group "
                               f"{ENTRY_POINT_GROUP!r}) is known only while that package is installed") from None
    if settings is None:
        return cls()
    if hasattr(settings, "to_dict"):
        settings = settings.to_dict()
    refuse_other_hspr_output(settings)  # a trial: hspr_auto and uniform named its bank labels as unknown settings
    return cls.from_params(dict(settings))


def refuse_other_hspr_output(settings, where: str = "--config") -> None:
    """LiveSessionError when ``settings`` (a JSON object read for a session's method) is another hspr output: a table of selections
    (``hspr select --record``), which `hspr replay --config` takes, not a session; ``where`` names it (the option
    and, from the command line, its file: a hostile trial found the message naming no file). A replay's results
    file (a ``runs`` list) is refused as that (a re-trial: it got a long list of unknown HSPR settings)."""
    from ..methods.hspr.config import is_selection_table
    from ..replay import is_results_doc

    if is_results_doc(settings):
        raise LiveSessionError(f"{where} is an `hspr replay` results file, not settings: give a JSON file of the "
                               "method's settings (for HSPR, `hspr select --config-out` writes one)")
    if is_selection_table(settings):
        raise LiveSessionError(f"{where} is a table of selections (hspr select --record: one configuration per fold, "
                               "found by the fold's source digest): a live session takes one configuration (for a "
                               "new agent, the --config-out file of `hspr select --fold all`, chosen on every agent "
                               "of the bank; docs/replay.md); `hspr replay --config` takes the table")


def _method_settings(name: str, config) -> dict:
    """The settings a session file stores for ``name`` built from ``config``: :meth:`Method.get_params`."""
    return _make_method(name, config).get_params()


def changed_settings(name: str, settings: dict) -> dict:
    """The entries of ``settings`` (a session's stored :meth:`Method.get_params`) that differ from
    method ``name``'s defaults, nested keys joined with dots, in sorted order; {} when unknown. A
    group whose default is None (``hspr_robust``'s ``config``: the fold's shipped one, else the
    defaults) is compared with the method built with that group empty (its defaults)."""
    try:
        default = _method_settings(name, None)
    except (TypeError, ValueError):
        return {}
    out: dict = {}

    def walk(mine, base, prefix: str) -> None:
        for k in sorted(set(mine) | set(base)):
            x, y = mine.get(k), base.get(k)
            if isinstance(x, dict) and y is None and not prefix:  # a re-trial: the whole group was listed
                try:
                    y = _method_settings(name, {k: {}}).get(k)
                except (TypeError, ValueError):
                    y = None
            if isinstance(x, dict) and isinstance(y, dict):
                walk(x, y, f"{prefix}{k}.")
            elif x != y:
                out[prefix + k] = x

    if isinstance(settings, dict):
        walk(settings, default, "")
    return out


def check_stop_width(pp: float | None, name: str = "stop width") -> None:
    """Refuse a stop width that is not a finite number in (0, 100] (percentage points); None is allowed.

    The rule is :class:`~hspr.stopping.WidthBelow`'s; this names the value as ``name`` (the
    option or field it came from) and adds what to do instead.

    Raises
    ------
    LiveSessionError
        Naming the value and the fix.
    """
    if pp is None:
        return
    try:
        WidthBelow(float(pp) if isinstance(pp, (np.integer, np.floating)) else pp)
    except ValueError as exc:
        text = str(exc).removeprefix("stop width")
        raise LiveSessionError(f"{name}{text}; leave it out at start, or give 'none' to `next` / `status`, to stop only "
                               "when the budget is spent") from None


#: format characters a label keeps: the zero-width non-joiner and joiner, which Persian spelling and emoji
#: sequences need (a re-trial: 'می‌خواهم' and '👨‍💻' were refused)
_JOINERS = frozenset("\u200c\u200d")

#: the longest agent label a session keeps (an id such as ``20250522_sweagent_claude-4-sonnet`` is 32)
MAX_AGENT_LABEL = 200


def check_agent_label(label, name: str = "--agent") -> str | None:
    """The label of the agent a session scores (``hspr live start --agent``), stripped, or None.

    A label names the agent in the session file, in ``status`` and its ``--json``, and in a
    plot's title (a leaderboard trial scored several agents at once and only the session's path
    told them apart). It is free text: any non-empty line of at most :data:`MAX_AGENT_LABEL`
    characters that shows as it is stored: no control character (a line break, an escape
    sequence), no invisible format character (a zero-width space, a right-to-left override that
    turned a plot's whole title around: a hostile re-trial; the zero-width joiner and non-joiner of
    emoji and Persian are kept) and no line or paragraph separator.

    Raises
    ------
    LiveSessionError
        For a label that is not a string, is empty, holds such a character, or is longer than
        :data:`MAX_AGENT_LABEL` characters (named as ``name``).
    """
    if label is None:
        return None
    if not isinstance(label, str):
        raise LiveSessionError(f"{name} must be a text label such as 'claude-4-sonnet (bash-only)', got "
                               f"{type(label).__name__} {label!r}")
    text = label.strip()
    bad = next((c for c in text if unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") and c not in _JOINERS), None)
    if not text or bad is not None or len(text) > MAX_AGENT_LABEL:
        why = ("is empty" if not text else f"holds the control or invisible character {bad!r} (U+{ord(bad):04X})"
               if bad is not None
               else f"is {len(text)} characters long, more than {MAX_AGENT_LABEL}")
        raise LiveSessionError(f"{name} {shorten(label, 60)!r} {why}: give one line of text naming the agent, e.g. its "
                               "leaderboard id, or leave it out")
    return text


def _check_interval(method: str, stop_width: float | None) -> None:
    """LiveSessionError for a stop width on a method that gives no interval (it could never fire;
    a trial found it accepted, the status saying 'continue (stop width 30 pp)' to the end)."""
    if stop_width is not None and not method_class(method).gives_interval:
        raise LiveSessionError(f"--stop-width {stop_width:g}: method {method!r} gives a point estimate without a 90 % "
                               "interval, so a stop width could never be reached; drop --stop-width (the session runs "
                               "its budget) or choose a method with an interval")


def fit_model(name: str, settings: dict, matrix: ResponseMatrix, use_cache: bool = True,
              announce: Callable[[str], AbstractContextManager] | None = None) -> FittedModel:
    """Fit method ``name`` with ``settings`` on ``matrix`` (all rows).

    Fits are deterministic, so they are kept in the user's cache folder keyed by bank digest,
    method, settings and code (:mod:`hspr.fitcache`): reopening a session does not refit.
    ``use_cache=False`` always refits. ``announce(text)``, a context manager (the CLI's
    spinner), wraps the fit when one runs (not when the cache has it).

    Raises
    ------
    DataError, HsprError
        When the method refuses the matrix (too few agents, pass rates for a 0/1 method), the
        message prefixed with the bank's name and size.
    """
    def fit() -> FittedModel:
        try:
            method = _make_method(name, settings)
            if announce is None:
                return method.fit(matrix)
            refuse_pass_rates(method, matrix)  # before the fit is announced
            # a re-trial: a second --hide refit the bank, where "once per bank" had promised the cache
            with announce(f"fitting {name} on {matrix.n_agents} agents (once per bank, hidden agent and settings, then "
                          "cached)"):
                return method.fit(matrix)
        except ValueError as exc:  # e.g. too few agent rows for the method: name the bank it was fitted on
            if matrix.source in str(exc):
                raise
            kind = type(exc) if isinstance(exc, HsprError) else HsprError  # keeps DataError, UnknownIdError
            raise kind(f"{matrix.source} ({matrix.n_agents} agents x {matrix.n_tasks} tasks): {exc}") from None

    return cached_fit(matrix.digest(), name, settings, matrix.tasks, fit, use_cache)
