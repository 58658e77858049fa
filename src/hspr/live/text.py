"""The text a user types at a live session: an outcome (``hspr live record ID 1``, ``3/5``), ids
that are not in the bank, answered with the one meant (:func:`did_you_mean`), and agent labels
compared with a harness's agent name (:func:`agents_differ`)."""

from __future__ import annotations

import math
import numbers
import re
import shlex
import unicodedata

import numpy as np

from ..errors import brief
from ..journal import LiveSessionError
from ..outcomes import SPELLINGS, is_ambiguous_one, outcome, pass_rate, snap_pass_rate, trial_successes
from ..params import TIME_TYPES


# ---------------------------------------------------------------------- helpers
def parse_outcome(value, trials: int | None = None) -> float:
    """1 / 0 by the outcome vocabulary (:mod:`hspr.outcomes`: resolved/unresolved, 1/0, true/false,
    yes/no, pass/fail, or a bool / number equal to 1 or 0).

    With ``trials`` (a bank of repeated trials) only ``"k/trials"``, the successes of the
    task's trials, returned as the pass rate ``k / trials`` (a word such as ``resolved`` is
    ambiguous there: every trial or one of them), or that pass rate given as a number (as
    :meth:`hspr.session.Session.tell` takes it: ``0.6`` or ``np.float32(0.6)`` for 3/5; an
    integer or boolean 1 is refused there, as by ``tell``: every trial, or one run?).
    A masked value (``np.ma.masked``, a missing outcome) is refused.

    Raises
    ------
    LiveSessionError
        For anything else, naming the value.
    """
    if np.ma.is_masked(value):
        raise LiveSessionError("outcome is masked (a missing outcome); record only the outcomes of tasks that ran")
    if trials is not None:
        if is_ambiguous_one(value, trials):
            # as Session.tell refuses it (a hostile trial: LiveSession.record(task, 1) recorded 5/5)
            raise LiveSessionError(f"outcome {brief(value)} (an integer or boolean) is ambiguous with {trials} trials "
                                   f"per task (every trial, or one run that passed?): give the successes, e.g. "
                                   f"'{trials}/{trials}', or the pass rate as a float ({trials}/{trials} = 1.0)")
        rate = _number(value)
        if rate is not None and 0 <= rate <= 1:  # the API's form, as Session.tell takes it: np.float32(0.6)
            snapped = snap_pass_rate(rate, trials)
            if snapped is not None:
                return snapped
        k, _, t = (value if isinstance(value, str) else "").partition("/")  # a number is a rate, taken above
        successes = trial_successes(k, t, trials)
        if successes is None:
            hint = ""
            if isinstance(value, str):  # the command line's text (a new-user trial: the same message for every form)
                try:
                    x = float(value)
                except ValueError:
                    x = float("nan")
                text = value.strip().lower()
                decimal = not re.fullmatch(r"[+-]?\d+", text, re.ASCII)  # '1.0' is a pass rate, '1' a word's 0/1
                as_rate = snap_pass_rate(x, trials) if math.isfinite(x) and (0 < x < 1 or decimal and 0 <= x <= 1) else None
                percent = re.fullmatch(r"(\d+(?:\.\d+)?)\s*%", text, re.ASCII)
                of = re.fullmatch(r"(\d+)\s*(?:of|out of|/)\s*(\d+)", text, re.ASCII)
                if percent:  # a re-trial: '60%', '3 of 5' and '8/10' got the bare message
                    as_rate = snap_pass_rate(float(percent.group(1)) / 100, trials)
                if outcome(value) is not None and as_rate is None:
                    hint = (f"; a word or 0/1 is ambiguous with {trials} trials per task (every trial, or one?): give "
                            f"the successes, e.g. {trials}/{trials} or 0/{trials}")
                elif as_rate is not None:
                    hint = f"; write the pass rate {value.strip()} as {round(as_rate * trials)}/{trials}"
                elif of and int(of.group(2)) == trials:
                    k_given = int(of.group(1))
                    hint = (f"; write it as {k_given}/{trials}" if k_given <= trials else
                            f"; at most {trials} of the {trials} trials can succeed")
                elif of and int(of.group(2)) != trials:
                    hint = (f"; the bank has {trials} trials per task: record the successes of {trials} trials (re-run "
                            "a trial that errored, so that each task has its full count)")
            raise LiveSessionError(f"outcome {brief(value)} is not k/{trials} with k in 0..{trials} (successes of the "
                                   f"task's {trials} trials)" + ("" if rate is None else
                                                                 f" nor a pass rate k/{trials} (a number)") + hint)
        return pass_rate(successes, trials)
    y = outcome(value)
    if y is None:
        if isinstance(value, str) and value.strip() in ("1/0", "0/1"):  # a re-trial: the spelling list, typed whole
            raise LiveSessionError(f"outcome {brief(value)}: give one of them, 1 (resolved) or 0 (unresolved)")
        raise LiveSessionError(f"outcome {brief(value)} is not one of {SPELLINGS}")
    return y


def _number(value) -> float | None:
    """A finite real number given as a number (a numpy scalar, a 0-d array, a Decimal or Fraction
    too) as a float, else None (text, NaN, anything else)."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if isinstance(value, TIME_TYPES):  # a numpy time span's .item() is an int (a re-trial)
        return None
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, str) or not isinstance(value, numbers.Number) or isinstance(value, complex):
        return None
    try:
        x = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return x if math.isfinite(x) else None


#: characters that start the part of an id after its base (``crack-7z-hash.hard``, ``task-2``, ``a/b``)
SEPARATORS = frozenset("._-/: ")
#: splits an id into its parts and the separators between them (``crack-7z-hash.hard``: crack, -, 7z, -, hash, ., hard)
_PARTS = re.compile(f"([{re.escape(''.join(sorted(SEPARATORS)))}])")


#: dashes a text editor or a web page puts for '-' (U+2010 hyphen to U+2015 horizontal bar, the minus sign, the small
#: and full-width hyphen-minus)
_DASHES = re.compile("[\u2010-\u2015\u2212\ufe58\ufe63\uff0d]")


def look_alike(t: str) -> str:
    """``t`` in compatibility form (NFKC: full-width letters and digits as ASCII, ligatures apart) with every
    Unicode dash written '-': two ids equal here print alike and differ in characters a pasted id brings."""
    return _DASHES.sub("-", unicodedata.normalize("NFKC", t))


#: what a harness's agent name adds to a model's name without naming another model: a snapshot date
#: (``claude-sonnet-4-20250514``, ``gpt-4o-2024-08-06``, ``gemini-2.5-pro-preview-06-05``)
_SNAPSHOT_DATE = re.compile(r"(?<![0-9.])(?:[0-9]{4}-[0-9]{2}-[0-9]{2}|[0-9]{6,8}|(?:0[1-9]|1[0-2])-(?:0[1-9]|[12][0-9]|3[01]))"
                            r"(?![0-9.])")
#: what separates the names within an agent name (Harbor's ``terminus-2 / anthropic/claude-4-sonnet``, a list)
_NAME_BREAK = re.compile(r"[/:,;|@()\[\]+]+")
#: words that name a model's tier: one name that extends another's by one of these (or by a word with a digit,
#: a version) is another model (``gpt-5-mini``, ``claude-sonnet-4-5``); other words (``preview``, ``instruct``,
#: ``chat``, a vendor) are not
_TIER_WORDS = frozenset({"mini", "nano", "micro", "turbo", "pro", "max", "flash", "lite", "plus", "ultra", "haiku", "sonnet",
                         "opus", "small", "medium", "large", "xl", "codex"})


def agents_differ(mine: str, theirs: str) -> bool:
    """Whether two agent labels (a session's ``--agent``, a harness's agent / model name) name two agents.

    Compared by words (runs of letters and digits in compatibility form, letter case aside), snapshot
    dates left out. They differ when the words of neither are all among the other's ('opus-4' and
    'terminus-2 / gpt-5'; 'gpt-4' and 'gpt-4o'), or when a name of one (the text between ``/``, ``:``,
    ``,`` and the like) shares a word other than its first with the other label (or its first, holding a
    digit: 'o3') and holds a word the other lacks that names a version or tier (a word with a digit, or one of :data:`_TIER_WORDS`):
    'gpt-4' and 'gpt-4-turbo' or 'gpt-4.1'; 'terminus-2 gpt-5' and 'terminus-2 / openai/gpt-5-mini';
    'Sonnet 4' and 'anthropic/claude-sonnet-4-5'. A label may name the harness alone ('terminus-2' for
    'terminus-2 / gpt-5', 'Claude Code' for 'claude-code / claude-opus-4-1') or the model alone, in
    other spelling ('Claude 4 Sonnet', 'claude-opus-4-1' for 'claude-code / claude-opus-4-1-20250805',
    'kimi-k2-0905' for 'kimi-k2-0905-preview'). Labels without letters or digits (emoji) differ when
    their text does. A heuristic for a note (:meth:`~hspr.live.session.LiveSession.ingest`), never a refusal: a hostile
    re-trial listed the pairs it tells apart and those it does not.
    """
    def names(text: str) -> list[tuple[str, ...]]:
        text = _SNAPSHOT_DATE.sub(" ", unicodedata.normalize("NFKC", text).casefold())
        return [n for n in (tuple(re.findall(r"[^\W_]+", part)) for part in _NAME_BREAK.split(text)) if n]

    def extends(name: tuple[str, ...], words: set[str]) -> bool:  # a version or tier the other label lacks
        shared = set(name) & words  # more than a vendor's word ('claude' of 'claude-code'); a model's ('o3') will do
        if not (shared - {name[0]} or shared and any(c.isdigit() for c in name[0])):
            return False
        return any(w not in words and (w in _TIER_WORDS or any(c.isdigit() for c in w)) for w in name)
    ours, other = names(mine), names(theirs)
    words_ours, words_other = {w for n in ours for w in n}, {w for n in other for w in n}
    if not words_ours or not words_other:
        return " ".join(mine.casefold().split()) != " ".join(theirs.casefold().split())
    if not (words_ours <= words_other or words_other <= words_ours):
        return True
    return any(extends(n, words_ours) for n in other) or any(extends(n, words_other) for n in ours)


def near_matches(unknown: list[str], known) -> list[tuple[str, str]]:
    """The (unknown id, known id) pairs that :func:`did_you_mean` names, by its rules (the first rule that
    finds any wins); [] when none."""
    def key(t: str) -> str:  # invisible format characters left out (a hostile trial: a bank id ending in U+200B)
        t = unicodedata.normalize("NFC", re.sub(r"\[([*?\[])\]", r"\1", t)).strip().casefold()
        return "".join(c for c in t if unicodedata.category(c) != "Cf")

    fold: dict[str, str] = {}
    twins: set[str] = set()  # ids the bank holds in two spellings ('Task-A', 'task-a')
    for t in known:
        if fold.setdefault(key(t), t) != t:
            twins.add(key(t))
    settled: set[str] = set()  # unknown ids a rule found a twin for: no hint, from that rule or a later one

    def take(pairs) -> list[tuple[str, str]]:
        # a hostile trial: 'TASK-A' was told 'Task-A', the first in column order, of 'Task-A' and 'task-a'; its
        # re-trial: with the twins left out, 'FIX-GIT' was told the neighbour 'fix-git-hooks'
        pairs = list(pairs)
        settled.update(u for u, b in pairs if key(b) in twins)
        return [(u, b) for u, b in pairs if u not in settled]

    def todo() -> list[str]:
        return [u for u in unknown if u not in settled]

    hits = take((u, fold[key(u)]) for u in todo() if key(u) in fold)
    if not hits:  # look-alike characters (a pasted id: a Unicode hyphen for '-', full-width letters)
        alike: dict[str, list[str]] = {}
        for k, t in fold.items():
            alike.setdefault(look_alike(k), []).append(t)
        # two bank ids alike ('fix-git', 'fix\u2010git'): no hint from any rule, as for two spellings (a re-trial: a slip rule
        # then named one of them)
        settled.update(u for u in todo() if len(alike.get(look_alike(key(u)), ())) > 1)
        hits = take((u, alike[look_alike(key(u))][0]) for u in todo() if len(alike.get(look_alike(key(u)), ())) == 1)
    if not hits:  # a re-trial: 'agent_07_beta' (as a file name spells it) for 'agent 07 beta' got no hint
        def sep(t: str) -> str:
            return re.sub(r"[\s_-]+", "_", t)

        seps: dict[str, list[str]] = {}
        for k, t in fold.items():
            seps.setdefault(sep(k), []).append(t)
        hits = take((u, seps[sep(key(u))][0]) for u in todo() if len(seps.get(sep(key(u)), ())) == 1)
    if not hits:  # the id without its benchmark prefix, or with one the bank's ids do not have
        def tail(t: str) -> str:
            return re.split(r"[/:]", t)[-1]

        tails: dict[str, list[str]] = {}
        for k, t in fold.items():
            if tail(k) != k:
                tails.setdefault(tail(k), []).append(t)
        hits = take([(u, tails[key(u)][0]) for u in todo() if len(tails.get(key(u), ())) == 1]
                    + [(u, fold[tail(key(u))]) for u in todo() if tail(key(u)) != key(u) and tail(key(u)) in fold])
    if not hits:  # a number typed without the bank's zero padding (no zero typed: see the docstring)
        def unpadded(t: str) -> str:
            return re.sub(r"[0-9]+", lambda m: m.group().lstrip("0") or "0", t)

        nums: dict[str, list[str]] = {}
        for k, t in fold.items():
            nums.setdefault(unpadded(k), []).append(t)
        hits = take((u, nums[unpadded(key(u))][0]) for u in todo()
                    if not re.search(r"(?<![0-9])0", key(u)) and len(nums.get(unpadded(key(u)), ())) == 1)
    if not hits:  # a typing slip or an id cut short: named only when one bank id fits (a hostile trial was told
        # 'crack-7z-hash' for 'crack-7z-hash.e', 'fix-bug-b1' for 'fix-bug-c1' beside 'fix-bug-a1', and a number cut
        # in its middle ('sympy__sympy-1597' of '...-16597') the other task '...-15976': an outcome recorded there is
        # another task's)
        import difflib

        def digits(t: str) -> str:
            return re.sub(r"\D", "", t)

        by_digits: dict[str, list[str]] = {}
        for k in fold:
            by_digits.setdefault(digits(k), []).append(k)

        def slip(u: str, c: str) -> bool:
            # a slip in the letters of one part: the same separators, one part differs, and that part is alike
            # ('hrad' for 'hard'); not a part of its own ('sanitize-git-repo.easy' is another task than its '.hard',
            # 'fix-bug-c1' than 'fix-bug-a1'; a re-trial), and not an id cut short or run on ('gpt4' of 'gpt4o':
            # the cut rule's, which refuses a cut inside a number; a re-trial)
            if u.startswith(c) or c.startswith(u):
                return False
            a, b = _PARTS.split(u), _PARTS.split(c)
            diff = [(x, y) for x, y in zip(a, b) if x != y]
            return (len(a) == len(b) and len(diff) == 1 and diff[0][0] not in SEPARATORS
                    and difflib.SequenceMatcher(None, *diff[0]).ratio() >= 0.6)

        def fits(u: str) -> set[str]:
            # a slip in the letters only ('task0010' is another task than 'task0005', not a typo), similarity >= 0.85
            same = by_digits.get(digits(u), [])  # all close ones, so that a second slip is never cut off by n
            near = {c for c in difflib.get_close_matches(u, same, max(len(same), 1), 0.85) if slip(u, c)}
            longer = [k for k in fold if k.startswith(u)] if len(u) >= 4 else []  # it cut short
            if longer and (u[-1:].isdigit() or unpadded(u) in nums or any(k[len(u)].isdigit() for k in longer)):
                # an id cut inside a number or just before one ('rag_claude' of 'rag_claude2': a re-trial), or read with
                # other zero padding ('task001' of 'task0001' or 'task0016'), fits as well as any other: none named (a
                # third re-trial: 'claude-4-' was told 'claude-4-sonnet' beside 'claude-4-1-opus')
                return set()
            return near | set(longer[:2])

        hits = take((u, fold[one]) for u in todo()[:20] if len(found := fits(key(u))) == 1 for one in found)
    return hits


def did_you_mean(unknown: list[str], known, hits: list[tuple[str, str]] | None = None) -> str:
    """'; did you mean ...' for unknown ids that equal a bank id up to letter case, surrounding
    white space, Unicode normal form (an 'ä' typed as a + combining diaeresis prints the same as
    the bank's), invisible format characters (a zero-width space, named in the hint) and glob
    escapes (``c[?]``, as ``next --format harbor`` prints ``c?``; a hostile trial);
    failing those, the one bank id that equals it up to look-alike characters (:func:`look_alike`: a
    Unicode hyphen or minus for ``-``, full-width letters, named in the hint: a pasted id);
    failing those, the one bank id that equals it up to its separators (space, ``_``, ``-``
    alike: ``agent_07_beta`` for ``agent 07 beta``); failing those, the one bank id that is the
    unknown id with a prefix ending in ``/`` or ``:`` (``task-016`` for ``mybench/task-016``; a
    new-user trial) or without one; failing those, for an id whose numbers are all written without leading
    zeros, the one bank id with the same numbers zero-padded (``task-017`` for ``task-17``; a new-user trial;
    ``task001`` is more likely ``task0016`` cut short than ``task0001``, so a typed zero gives no such hint);
    failing those, the
    one bank id that fits it as a typing slip in the letters of one of its parts (``difflib``, similarity >=
    0.85 over the id and 0.6 over the part, the same digits and separators: ids differing in a number are
    other tasks, and so are ``sanitize-git-repo.easy`` and ``.hard``) or as that id cut short (the unknown
    id of 4 or more characters starts it, not inside a number nor before one: ``crack-7z-hash.easy`` for
    ``crack-7z-hash.e``; ``gpt4`` is not ``gpt4o`` cut, nor ``claude`` ``claude2``), none when two ids fit,
    when a bank id equals it up to the zero padding of its numbers, or when one extends it through a number
    (then no slip is named either: ``task-12`` may be ``task-123`` cut). An id that one rule finds among ids
    the bank holds in two spellings (``Task-A``, ``task-a``) gets no hint from any rule. At most 3 shown,
    else ''. ``hits``: :func:`near_matches` of the same ids, when the caller has them already (not found again)."""
    if hits is None:
        hits = near_matches(unknown, known)
    if not hits:
        return ""
    if len(unknown) == 1:  # the message names the one unknown id already (a new-user trial: "'x' for 'y'" read oddly)
        u, b = hits[0]
        hidden = sorted({f"U+{ord(c):04X}" for c in b if unicodedata.category(c) == "Cf"})
        if hidden:
            why = f" (it holds the invisible character(s) {', '.join(hidden)}: copy the id from `hspr live next`, or fix it in the bank)"
        elif u != b and unicodedata.normalize("NFC", u) == unicodedata.normalize("NFC", b):
            # a hostile trial: the hint printed as the id typed, with no word why; its re-trial: "copy the id from
            # `hspr live next`" did not help an ingested file
            form = next((f for f in ("NFC", "NFD") if unicodedata.normalize(f, b) == b), None)
            fix = ("the bank's id is in neither form NFC nor NFD: fix it in the bank" if form is None else
                   f"the bank spells this id in form {form}: normalise it to that form, e.g. Python's "
                   f"unicodedata.normalize({form!r}, task_id)")  # this id's: a bank may mix forms (its re-trial)
            why = (" (it prints the same: the two spell an accented letter in different Unicode forms, one character "
                   f"or a letter and a combining mark; {fix})")
        elif look_alike(u).strip().casefold() == look_alike(b).strip().casefold() and (  # found by look_alike, not a slip
                odd := [(c, w) for w, x, y in (("it", u, b), ("the bank's id", b, u)) for c in sorted(
                    {c for c in x if look_alike(c) != c and c not in y}, key=x.index)]):
            # a re-trial: the bank's own id holding the look-alike got no reason, and one both held was blamed
            whose = {w for _, w in odd}
            why = (f" ({' and '.join(sorted(whose, key=len))} hold{'s' if len(whose) == 1 else ''} look-alike characters: "
                   + ", ".join(f"{c!r} (U+{ord(c):04X}) for {look_alike(c)!r}" for c, _ in odd[:3])
                   + (", ..." if len(odd) > 3 else "") + "; text pasted from a web page or an editor may)")
        else:
            why = ""
        return f"; did you mean {b!r}{why}?"
    return "; did you mean " + ", ".join(f"{b!r} (for {u!r})" for u, b in hits[:3]) + (", ..." if len(hits) > 3 else "") + "?"


def task_argument(task: str) -> str:
    """``task`` as the last arguments of an ``hspr live`` command a message gives to run: shell-quoted,
    after ``--`` when it starts with '-' (else click reads it as an option)."""
    return f"{'-- ' if task.startswith('-') else ''}{shlex.quote(task)}"


def random_draws_caveat(method: str) -> str:
    """Why a recorded task the session did not ask matters to ``method``, a method whose estimate
    averages its own random draws (:attr:`hspr.session.Session.random_draws`): the words after the
    task(s) in the note of ``hspr live record`` and of :meth:`LiveSession.ingest`."""
    return (f"{method} averages every recorded task as one of its random draws, so tasks chosen another way (ones the "
            "agent passed, say) can bias its estimate; record the tasks `hspr live next` gives")


#: the fewest rounds a budget may be asked in before :func:`batch_note` speaks, and the round it never speaks for:
#: hspr_robust on SWE-bench Verified's folds (50 tasks, seed 0; docs/live.md, "Task lists up front") gave MAE 1.69
#: pp one task at a time, 1.76 in rounds of 5, 1.84 in rounds of 10, 2.33 in 2 rounds of 25 and 3.45 with all 50
#: asked at once
FEWEST_ROUNDS = 5
SMALL_ROUND = 5


def batch_note(n_waiting: int, budget: int, adaptive: bool, rounds: bool = False) -> str | None:
    """The note ``hspr live next`` prints when a call that asked new tasks leaves ``n_waiting`` tasks
    waiting for their outcomes (all chosen before any of those outcomes was known), more than
    :data:`SMALL_ROUND` and more than a 1/:data:`FEWEST_ROUNDS` share of a ``budget``, for a method whose
    design depends on the outcomes (:attr:`hspr.session.Session.adaptive_design`); None otherwise.
    ``rounds``: the tasks were asked in rounds of ``n_waiting`` (``hspr live simulate --batch K``), now recorded.

    A leaderboard trial asked all 50 of a Verified budget at once and got 34.2 % for an agent of 10.2 %,
    with no word that the whole list had been chosen before any outcome was known.
    """
    cap = max(SMALL_ROUND, budget // FEWEST_ROUNDS)
    if not adaptive or n_waiting <= cap:
        return None
    chosen = (f"each round of {n_waiting} tasks was chosen before any of its outcomes was known" if rounds else
              f"the {n_waiting} tasks waiting for their outcomes were chosen before any of those outcomes was known")
    return (f"{chosen}, so the method cannot adapt to them; its error grows with the size of the rounds (hspr_robust "
            "on SWE-bench Verified's folds, a budget of 50: MAE 1.69 pp one task at a time, 1.84 in rounds of 10, 2.33 "
            f"in rounds of 25, 3.45 with all 50 at once): ask in rounds of at most {cap} tasks (--batch {cap}), "
            "recording each round's outcomes before the next, where you can; docs/live.md, 'Task lists up front'")
