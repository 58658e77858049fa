"""``hspr methods``: the methods that run by name, hspr's own and those installed packages register."""

from __future__ import annotations

import json

import click


def register(group: click.Group) -> None:
    """Add ``methods`` (:func:`hspr.methods.describe_methods` as a table or JSON) to the CLI ``group``."""
    group.add_command(methods_cmd)


@click.command("methods")
@click.option("--json", "as_json", is_flag=True,
              help="Print a JSON list (one object per method) for scripts: name, package, loads, error, summary, "
                   "interval, seed_kind, accepts_pass_rates, accepts_missing, in_all.")
def methods_cmd(as_json: bool) -> None:
    """List the methods that run by name (--methods, live start --method): hspr's own, then those installed
    packages register (docs/python-api.md, 'Your own method'), with the package, whether each loads, and what
    it gives.

    \b
    interval  a 90 % interval (else a point only: no stop width, no coverage)
    seeds     what replay's seeds vary: sampling (random draws, 10 seeds), adaptive
              (tie-breaks, 5), deterministic (1 seed)
    rates     takes pass rates over repeated trials (Terminal-Bench), not only 0/1
    all       run by `--methods all`
    """
    from rich.table import Table
    from rich.text import Text

    from ..methods import describe_methods
    from .bank import NARROW
    from .display import console as make_console

    rows = describe_methods()  # a package's prints go to stderr (hspr.methods._loaded): stdout is the table or JSON
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    console = make_console()

    def yes(v) -> str:
        return "-" if v is None else "yes" if v else "no"

    def what(r) -> Text:  # the error names the method and says it does not load
        return Text(r["summary"]) if r["loads"] else Text(r["error"], style="bold")

    cols = ("method", "from", "interval", "seeds", "rates", "all")
    cells = [[r["name"], r["package"] or "hspr", yes(r["interval"]), r["seed_kind"] or "-", yes(r["accepts_pass_rates"]),
              yes(r["in_all"])] for r in rows]
    # the one-line columns, their borders and 30 for the text: narrower, a table would crop the text (a re-trial at 80
    # columns lost words of every line) or squash its columns into ellipses (at 60)
    needed = sum(max(len(h), *(len(c[k]) for c in cells)) + 3 for k, h in enumerate(cols)) + 4 + 30
    if console.width < max(NARROW, needed):
        import textwrap

        def lines(text: str, indent: str, then: str) -> str:  # wrapped lines indented under their first (a new-user
            # trial: the terminal's wrap put them at column 0, where they read as the next method)
            return textwrap.fill(text, max(console.width, 40), initial_indent=indent, subsequent_indent=then,
                                 break_on_hyphens=False)  # 'Mid-Range', 'leave-cluster-out' kept whole (a re-trial)

        for r in rows:
            console.print(Text(lines(f"{r['name']} (from {r['package'] or 'hspr'}): interval {yes(r['interval'])}, seeds "
                                     f"{r['seed_kind'] or '-'}, rates {yes(r['accepts_pass_rates'])}, all "
                                     f"{yes(r['in_all'])}", "", "    ")), soft_wrap=True)
            text = what(r)
            console.print(Text(lines(text.plain, "  ", "  "), style=text.style), soft_wrap=True)
    else:
        table = Table(title="Methods")
        for col in cols:
            table.add_column(col, no_wrap=True)
        table.add_column("what it is", ratio=1, min_width=30)
        for r, c in zip(rows, cells):
            table.add_row(*map(Text, c), what(r))
        console.print(table)
    broken = [r["name"] for r in rows if not r["loads"]]
    if broken:
        click.echo(f"note: {len(broken)} method(s) do not load and cannot run: {', '.join(broken)} (the reasons are "
                   "above; fix or uninstall the package that registers each)", err=True)
