"""Argument checks shared by the benchmark scripts: a bad value ends in ``argparse``'s usage
line and one ``error:`` line naming the option (exit 2) before any work, never a traceback.

Run as ``python benchmarks/<script>.py``: Python puts this folder on ``sys.path``, so the scripts
``import _checks``. hspr is imported inside each check: ``speed_vs_base.py`` runs ``bench_hspr.py``
against an older commit's package, which may lack some of these modules.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def seeds(ap: argparse.ArgumentParser, text: str) -> list[int]:
    """``--seeds`` as ``hspr replay`` reads it ('0-4', '0,2'), or ``ap.error``."""
    import click

    from hspr.cli.replay_cmd import parse_seeds

    try:
        return parse_seeds(text)
    except click.BadParameter as exc:
        ap.error(f"--seeds: {exc.message}")


def methods(ap: argparse.ArgumentParser, text: str, option: str = "--methods") -> dict:
    """``--methods`` (comma-separated registered names, spaces ignored, no repeats) as instances."""
    from hspr.methods import REGISTRY, get_method

    names = [n.strip() for n in text.split(",")]
    if any(not n for n in names):
        ap.error(f"{option} {text!r}: an empty name between commas")
    if len(set(names)) < len(names):
        ap.error(f"{option} {text!r}: a method named twice")
    unknown = [n for n in names if n not in REGISTRY]
    if unknown:
        ap.error(f"{option}: unknown {', '.join(map(repr, unknown))}; known: {', '.join(REGISTRY)}")
    try:
        return {n: get_method(n) for n in names}
    except ValueError as exc:  # hspr's HsprError
        ap.error(f"{option}: {exc}")


def choices(ap: argparse.ArgumentParser, option: str, text: str, known) -> list[str]:
    """A comma-separated list of names out of ``known`` (spaces ignored, no repeats), or ``ap.error``."""
    names = [n.strip() for n in text.split(",")]
    bad = [n for n in names if n not in known]
    if bad:
        ap.error(f"{option}: unknown {', '.join(map(repr, bad))}; choose from {', '.join(known)}")
    if len(set(names)) < len(names):
        ap.error(f"{option} {text!r}: a name given twice")
    return names


def banks(ap: argparse.ArgumentParser, option: str, text: str, trials_ok: bool = False) -> list[str]:
    """Bundled bank names for ``option``; unless ``trials_ok``, a bank of repeated trials
    (terminal-bench: success counts of 5 trials) is refused before any work: the script tells
    each cell as a 0/1 outcome (a trial saw it end in a traceback after the fit)."""
    from hspr.data.banks import BANKS, load_bank

    names = choices(ap, option, text, list(BANKS))
    if not trials_ok:
        rates = [n for n in names if getattr(load_bank(n), "trials", None) is not None]
        if rates:
            ap.error(f"{option}: {', '.join(rates)} holds pass rates over repeated trials, and this benchmark tells "
                     "0/1 outcomes; choose from " + ", ".join(n for n in BANKS if n not in rates))
    return names


def at_least(ap: argparse.ArgumentParser, option: str, value: int, low: int) -> int:
    """``value`` if it is at least ``low``, else ``ap.error``."""
    if value < low:
        ap.error(f"{option} {value}: give a whole number >= {low}")
    return value


def workers(ap: argparse.ArgumentParser, value: int) -> int:
    """joblib workers: a positive number, or -1 for all cores (the CLI's rule,
    :func:`hspr.cli.common.check_workers`)."""
    import click

    from hspr.cli.common import check_workers

    try:
        return check_workers(None, None, value)
    except click.BadParameter as exc:
        ap.error(f"--workers {exc.message}")


def fraction(ap: argparse.ArgumentParser, option: str, value: float) -> float:
    """A budget fraction in (0, 1]."""
    if not 0 < value <= 1:
        ap.error(f"{option} {value}: a fraction of the tasks in (0, 1]")
    return value


def out_file(ap: argparse.ArgumentParser, option: str, path: str | None) -> Path | None:
    """An output file that can be written (checked before the work, not after, by the CLI's
    :func:`hspr.cli.outputs.check_output_file`; its missing folders are made by :func:`made` when it
    is written, so a later refused option leaves none behind), or ``ap.error``."""
    import click

    from hspr.cli.outputs import check_output_file

    try:
        out = check_output_file(path, option)
    except click.BadParameter as exc:
        ap.error(f"{option}: {exc.message}")
    return out


def made(path: str | Path) -> Path:
    """``path`` with its missing folders made (a hostile trial: a folder that could be made was not, and
    the write failed after the run; a later one: made before a refused option, it was left behind)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def commit(ap: argparse.ArgumentParser, option: str, ref: str) -> str:
    """A git commit of this checkout (``git rev-parse --verify REF^{commit}``), or ``ap.error`` (a
    trial's unknown commit ended in git's CalledProcessError traceback)."""
    import subprocess

    root = Path(__file__).resolve().parents[1]
    res = subprocess.run(["git", "-C", str(root), "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"],
                         capture_output=True, text=True)
    if res.returncode != 0:
        ap.error(f"{option} {ref}: not a commit of {root} (git log --oneline lists them)")
    return ref


def float_list(ap: argparse.ArgumentParser, option: str, text: str, low: float, high: float) -> list[float]:
    """Comma-separated numbers in [low, high], or ``ap.error`` naming the bad one."""
    out = []
    for part in text.split(","):
        try:
            v = float(part)
        except ValueError:
            ap.error(f"{option}: {part.strip()!r} is not a number (give e.g. 1,0.3,0.1)")
        if not low <= v <= high:
            ap.error(f"{option}: {v:g} is outside [{low:g}, {high:g}]")
        if v in out:  # as the other list options refuse a repeat (a trial: --scales 1,1 ran twice the same)
            ap.error(f"{option}: {v:g} given twice")
        out.append(v)
    return out
