"""The ``hspr`` command line: a thin layer that parses arguments, calls the library, prints.

Each sub-module owns a group of commands and exposes ``register(group)``.
"""

from __future__ import annotations

import click

from .. import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="hspr")
def main() -> None:
    """hspr: estimate an agent's full-benchmark score (e.g. SWE-bench resolve rate) from a small
    budget of adaptively chosen task executions.

    \b
    Replay (backtest on archived response matrices):
      hspr replay --bank verified --methods hspr,uniform --budget 0.10 --seeds 0
    Bundled banks:
      hspr banks
    """


def _register_all() -> None:
    from . import bank, replay_cmd

    for mod in (bank, replay_cmd):
        mod.register(main)
    for optional in ("live", "report", "select"):
        try:
            mod = __import__(f"{__name__}.{optional}", fromlist=["register"])
        except ModuleNotFoundError as exc:  # not built yet in this version
            if exc.name != f"{__name__}.{optional}":
                raise
            continue
        mod.register(main)


_register_all()
