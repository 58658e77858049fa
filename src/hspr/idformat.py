"""Task ids in the form each harness takes, and predictions cut down to them (issue 12).

``hspr live next --format F`` prints the asked task ids so they can be passed straight on:

=========  ==========================================  ==============================================
format     text                                        for
=========  ==========================================  ==============================================
lines      one id per line                             id-list files (OpenHands, Harbor task lists)
space      ids separated by single spaces              swebench ``run_evaluation -i/--instance_ids``
                                                       (argparse ``nargs="+"``, space separated)
csv        ids separated by commas, no spaces          sb-cli ``submit --instance_ids``
                                                       (its callback is ``x.split(',')``)
json       a JSON list                                 scripts
regex      ``^(?:id1|id2)$``, ids escaped              mini-swe-agent ``--filter``
                                                       (``re.match(filter_spec, instance_id)``)
harbor     ``-i id1 -i id2``, each id glob-escaped     ``harbor run -d DATASET ...``
           (``glob.escape``), not shell-quoted         (``-i/--include-task-name``, repeatable; a
                                                       task is kept when ``fnmatch`` matches one)
=========  ==========================================  ==============================================

Sources read: swebench ``swebench/harness/run_evaluation.py`` (the ``-i`` argument), sb-cli
``sb_cli/submit.py`` (``--instance_ids`` callback and ``process_predictions``), mini-swe-agent
``src/minisweagent/run/benchmarks/swebench.py`` (``filter_instances``), Harbor
``src/harbor/cli/jobs.py`` (``start``: ``-i/--include-task-name`` into ``DatasetConfig.task_names``)
and ``src/harbor/models/job/config.py`` (``DatasetConfig._filter_task_ids``: ``fnmatch``; read in
the public fork UniPat-AI/harbor_multiturn). The tests parse each
form with the tool's own rule.

``space`` and ``harbor`` are meant for an unquoted ``$(hspr live next ... --format F)``, where the
shell splits the output at white space and removes no quotes: so ids are not shell-quoted (a
hostile trial: quoted ids reached Harbor with their quotes and matched nothing), and an id with
white space is refused. Quotes, ``$``, ``#`` and the like in an id pass through such a
substitution as they are; only the shell's pathname expansion could still match an escaped glob
pattern (``[*]``) with a file of that name in the current folder (Terminal-Bench task names have
no glob characters).

:func:`subset_predictions` keeps the predictions of the asked tasks in a predictions file of
any of the forms those tools read: JSON Lines (one object with ``instance_id`` per line), a
JSON list of such objects, or a JSON object keyed by instance id (mini-swe-agent ``preds.json``);
as in sb-cli and the swebench harness, a ``.json`` file is JSON and any other is JSON Lines. The
output is written in the form its own name calls for by that rule: a ``.json`` output keeps a
JSON input's form (list or keyed object) and turns JSON Lines into a list; any other name gets
JSON Lines, so the harness reads the cut-down file as it would read the original.
"""

from __future__ import annotations

import glob
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .data.matrix import DataError
from .fileio import json_kind, loads, read_json, read_text, write_text_durable

FORMATS = ("lines", "space", "csv", "json", "regex", "harbor")
#: forms whose text for no task at all matches no task, where empty text would select every task (an empty
#: mini-swe-agent ``--filter``, ``harbor run`` without ``-i``): ``hspr live next`` prints that text when it fails
NOTHING_FORMS = ("regex", "harbor")


def format_ids(ids: Sequence[str], form: str) -> str:
    """The ids as text in ``form`` (one of :data:`FORMATS`), without a final newline.

    Raises
    ------
    ValueError
        For an unknown form, or (space / csv) an id containing the separator.
    """
    ids = list(ids)
    if form == "lines":
        return "\n".join(ids)
    if form in ("space", "csv"):
        sep = " " if form == "space" else ","
        bad = [t for t in ids if sep in t or (form == "space" and t != t.strip())]
        if bad:
            raise ValueError(f"task id(s) {bad} contain the separator of --format {form}; use --format lines or json")
        return sep.join(ids)
    if form == "json":
        return json.dumps(ids)
    if form == "regex":
        return "^(?:" + "|".join(re.escape(t) for t in ids) + ")$" if ids else "^(?!)$"  # nothing matches none
    if form == "harbor":  # Harbor's task names are fnmatch patterns: a '[', '*' or '?' in an id is escaped
        bad = [t for t in ids if t != "".join(t.split())]
        if bad:
            raise ValueError(f"{len(bad)} task id(s) contain white space, which the shell splits in $(...): "
                             f"{bad[:5]}{' ...' if len(bad) > 5 else ''}; list them under task_names in Harbor's job "
                             "configuration instead (--format json)")
        # no ids: a pattern that matches no task (Harbor then stops with "No tasks matched"); no -i at all would
        # run the whole dataset
        return " ".join(f"-i {glob.escape(t)}" for t in ids) if ids else "-i ''"
    raise ValueError(f"unknown id format {form!r}; choose one of {', '.join(FORMATS)}")


def _split_escaped(body: str) -> list[str] | None:
    """``re.escape``-d ids joined by ``|`` back to the ids (a backslash takes the next character as it is)."""
    out, cur, i = [], [], 0
    while i < len(body):
        ch = body[i]
        if ch == "\\":
            if i + 1 == len(body):
                return None
            cur.append(body[i + 1])
            i += 2
            continue
        if ch == "|":
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
        i += 1
    return out + ["".join(cur)]


def _decode(text: str, form: str) -> list[str] | None:
    """The ids ``text`` would be in ``form`` (the inverse of :func:`format_ids`), or None; the caller
    checks the round trip, so a loose decoding here accepts nothing :func:`format_ids` did not write."""
    if form == "lines":
        return text.split("\n") if text else []
    if form in ("space", "csv"):
        return text.split(" " if form == "space" else ",") if text else []
    if form == "json":
        try:
            ids = json.loads(text)
        except ValueError:
            return None
        return ids if isinstance(ids, list) and all(isinstance(t, str) for t in ids) else None
    if form == "regex":
        if text == "^(?!)$":
            return []
        m = re.fullmatch(r"\^\(\?:(.*)\)\$", text, re.S)
        return None if m is None else _split_escaped(m[1])
    if form == "harbor":
        if text == "-i ''":
            return []
        parts = text.split(" ")
        if len(parts) % 2 or any(p != "-i" for p in parts[::2]):
            return None
        return [re.sub(r"\[(.)\]", r"\1", p) for p in parts[1::2]]
    return None


def is_id_text(text: str, known) -> bool:
    """Whether ``text`` is what ``hspr live next --out`` writes: :func:`format_ids` of some ids of
    ``known`` (a set of task ids) in one of :data:`FORMATS`, with or without the final newline, or
    nothing. ``next --out`` replaces only such a file (a hostile trial: it replaced a predictions
    file, a harness CSV and another bank without a word)."""
    text = text[:-1] if text.endswith("\n") else text
    for form in FORMATS:
        ids = _decode(text, form)
        if ids is None or not all(t in known for t in ids):
            continue
        try:
            if format_ids(ids, form) == text:
                return True
        except ValueError:  # an id with the form's separator
            continue
    return False


@dataclass(frozen=True)
class Predictions:
    """A predictions file as read by :func:`read_predictions`.

    Attributes
    ----------
    path : Path
    form : str
        ``'jsonl'`` (JSON Lines), ``'list'`` (a JSON list) or ``'dict'`` (a JSON object keyed by
        instance id).
    records : tuple of (str, object)
        (instance_id, record) in file order: the line's text for JSON Lines, else the object.
    """

    path: Path
    form: str
    records: tuple


def read_predictions(path: str | Path) -> Predictions:
    """Read a predictions file of any form :func:`subset_predictions` takes (module docstring).

    Raises
    ------
    DataError
        For an unreadable file, naming the line or item without an ``instance_id`` string.
    """
    path = Path(path)
    form, recs = _read_predictions(path)
    return Predictions(path, form, tuple(recs))


def _read_predictions(path: Path):
    """(form, records): form 'jsonl', 'list' or 'dict'; records as (instance_id, raw)."""
    text = read_text(path, DataError)
    if path.suffix.lower() == ".json":  # the rule of sb-cli and the swebench harness: .json is JSON, else lines
        data = read_json(path, DataError, text=text)
        if isinstance(data, list):
            return "list", [(_iid(path, r, f"item {i}"), r) for i, r in enumerate(data)]
        if isinstance(data, dict):
            if isinstance(data.get("instance_id"), str):  # one prediction, not an object keyed by id
                raise DataError(f"{path}: holds one prediction object (instance_id {data['instance_id']!r}); a "
                                "predictions file is a JSON list of them, an object keyed by instance id, or JSON "
                                "Lines: wrap it in [ ]")
            bad = next((k for k, v in data.items() if not isinstance(v, dict)), None)
            if bad is not None:
                raise DataError(f"{path}: the value of key {bad!r} is {type(data[bad]).__name__}, not a prediction "
                                "object; an object keyed by instance id maps each id to its prediction")
            other = next((k for k, v in data.items() if v.get("instance_id", k) != k), None)
            if other is not None:  # a trial: the key was matched, the harness would run the inner id
                raise DataError(f"{path}: key {other!r} holds a prediction whose instance_id is "
                                f"{data[other]['instance_id']!r}; an object keyed by instance id needs each key to be "
                                "its prediction's id: fix the key or the instance_id")
            return "dict", list(data.items())
        raise DataError(f"{path}: a predictions file is a JSON list, a JSON object keyed by instance id, or JSON "
                        f"Lines; got {json_kind(data)}")
    recs = []
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rec = loads(line)
        except ValueError as exc:
            raise DataError(f"{path}: line {n} is not JSON ({exc})") from None
        recs.append((_iid(path, rec, f"line {n}"), line))
    return "jsonl", recs


def _iid(path: Path, rec, where: str) -> str:
    if not isinstance(rec, dict) or not isinstance(rec.get("instance_id"), str):
        raise DataError(f"{path}: {where} has no \"instance_id\" string; each prediction needs one")
    return rec["instance_id"]


def subset_predictions(src: str | Path | Predictions, ids: Sequence[str], dest: str | Path) -> list[str]:
    """Write to ``dest`` the predictions of ``src`` whose instance id is in ``ids``, in the form the
    suffix of ``dest`` names (module docstring: ``.json`` is JSON, any other name JSON Lines).
    ``src`` is a file, or one already read by :func:`read_predictions` (``hspr live next`` reads
    it before it asks, so that a bad file leaves the session as it was).

    Returns the ids that ``src`` has no prediction for (the caller reports them).

    Raises
    ------
    DataError
        For an unreadable predictions file, naming the line or item, or two different predictions
        of one asked task.
    """
    dest = Path(dest)
    if Path(getattr(src, "path", src)).resolve() == dest.resolve():
        raise DataError(f"{dest}: the subset would overwrite the predictions file it is cut from; choose another --out")
    read = src if isinstance(src, Predictions) else read_predictions(src)
    src, form, recs = read.path, read.form, read.records
    want = set(ids)
    kept = []
    first: dict[str, object] = {}
    for i, r in recs:
        if i not in want:
            continue
        rec = json.loads(r) if isinstance(r, str) else r  # JSON Lines: compare the records, not their spelling
        if i in first:  # two different predictions of one task: which one ran would be the harness's choice
            if first[i] != rec:
                raise DataError(f"{src}: two different predictions for instance id {i!r}; keep one of them")
            continue  # an identical copy is written once (a trial: 6 lines for '5 of 5')
        first[i] = rec
        kept.append((i, r))
    out_json = dest.suffix.lower() == ".json"
    if form == "jsonl" and not out_json:
        text = "".join(r.rstrip("\n") + "\n" for _, r in kept)
    elif form == "dict" and out_json:
        text = json.dumps(dict(kept), indent=1) + "\n"
    else:  # a list, or records of another form: each with its instance id (a keyed object may leave it out)
        records = [{"instance_id": i, **first[i]} for i, _ in kept]
        text = (json.dumps(records, indent=1) + "\n" if out_json
                else "".join(json.dumps(r) + "\n" for r in records))
    write_text_durable(text, dest)
    have = {i for i, _ in kept}
    return [t for t in ids if t not in have]
