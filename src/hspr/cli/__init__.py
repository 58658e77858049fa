"""The ``hspr`` command line: a thin layer that parses arguments, calls the library, prints.

Each sub-module owns a group of commands and exposes ``register(group)``.
"""

from __future__ import annotations

from types import MappingProxyType

import click

from .. import __version__
from ..errors import HsprError  # here, not in invoke: Ctrl-C while it loaded there was click's "Aborted!" (a trial)
from .meta import SuggestingGroup, restore_help

#: command name -> the sub-module that registers it; imported only when the command runs, so
#: ``hspr live status`` does not pay for the replay and report stack (click's lazy-group pattern)
LAZY_COMMANDS = MappingProxyType({"banks": "bank", "bank": "bank", "replay": "replay_cmd", "report": "report",
                                  "select": "select", "live": "live", "cache": "cache", "methods": "methods_cmd"})


def echo_no_task(raw: tuple[str, ...]) -> None:
    """For a refused command line that looks like ``live next`` in a form whose empty output selects
    every task (``--format harbor``: ``harbor run`` with no ``-i``; ``regex``: an empty mini-swe-agent
    ``--filter``), print that form's no-task text on stdout (a new-user trial and a hostile trial:
    ``harbor run -d X $(hspr live next --sesion s.hspr --format harbor)`` ran every task).

    Forgiving of typing slips, as the text is harmless where it is not needed, but only there: the
    first word that reads as an hspr command is ``live`` or close to it (``lve``; or ``next``, the
    group left out); the first word after it that reads as a live command is ``next`` or close to it
    (``nxt``, ``nest``; ``ngest`` is ``ingest``); and the value of the last ``--format``-like option
    (``--form``, ``--fmt``, ``-f``, ``-fharbor``) begins or is close to a form's name (``har``,
    ``Harbor``, ``harbour``). Nothing with ``--out`` (its file gets the ids) or ``--json`` (its JSON
    object), or in another form (``--format lines``: a ``while read`` loop would take ``-i`` for an id).
    """
    import difflib

    from ..idformat import NOTHING_FORMS, format_ids

    def best(word: str, names, cutoff: float) -> str | None:
        hits = difflib.get_close_matches(word, names, n=1, cutoff=cutoff)
        return hits[0] if hits else None

    words = [w for a in raw for w in a.lower().split("=", 1)]
    if any(w.startswith(("--ou", "--json")) or w == "-o" for w in words):
        return
    # the words that may be commands: not options, nor values that are file names (next.hspr, jobs/harbor)
    plain = [w for w in words if not w.startswith("-") and not {".", "/", "\\"} & set(w)]
    # the group: the first word that reads as an hspr command, or `next` with the group left out
    at, group = next(((i, b) for i, w in enumerate(plain) if (b := best(w, [*LAZY_COMMANDS, "next"], 0.75))),
                     (0, None))
    if group not in ("live", "next"):
        return
    if group == "live":  # its command: the first word that reads as a live command (`nxt`, `nest`; `ngest` is ingest)
        command = next((w if w in LIVE_COMMANDS else "next" if best(w, ["next"], 0.75) else b
                        for w in plain[at + 1:] if (b := best(w, LIVE_COMMANDS, 0.6))), None)
        if command != "next":
            return
    # the form: the value of the last --format-like option (--format, --form, --fmt, -f)
    # (-fharbor: the value attached to the short option; a session never sits in an attached -f value,
    # which click reads as short options)
    words = [part for w in words for part in ((w[:2], w[2:]) if w.startswith("-f") and len(w) > 2 else (w,))]
    values = [value for opt, value in zip(words, words[1:]) if opt.startswith("-")
              and ("format".startswith(opt.lstrip("-") or "?") or best(opt.lstrip("-"), ["format"], 0.6))]
    # a form's name begun (`har`, `re`) or mistyped (`harbour`)
    form = (next((f for f in NOTHING_FORMS if len(values[-1]) >= 2 and f.startswith(values[-1])), None)
            or best(values[-1], NOTHING_FORMS, 0.7)) if values else None
    if form is not None:
        click.echo(format_ids([], form))


def echo_refused(raw: tuple[str, ...], exc: click.UsageError) -> None:
    """On stdout, for a command line click refuses: with ``--json`` anywhere in it (the command's, or
    one put before the command, ``hspr --json live status``), the JSON object ``{"ok": false, "error":
    ...}`` a script reads for any refusal; otherwise :func:`echo_no_task`'s text where it applies."""
    if "--json" in raw:
        from .meta import echo_json_error

        message = exc.format_message()
        command = next((i for i, w in enumerate(raw) if not w.startswith("-")), len(raw))
        if raw.index("--json") < command:  # a re-trial: 'No such option --json. Did you mean --version?'
            message += " (--json is an option of each command: put it after the command, e.g. hspr live status --json)"
        echo_json_error(message)
    else:
        echo_no_task(raw)


#: the commands of ``hspr live`` (for :func:`echo_no_task`'s reading of a mistyped command line)
LIVE_COMMANDS = ("start", "next", "record", "withdraw", "ingest", "simulate", "plot", "status", "relink")


def _json_error(ctx: click.Context, message: str) -> None:
    """With ``--json`` on the command line, the JSON error object on stdout for an error that reached
    :meth:`LazyGroup.invoke` (a re-trial: `hspr bank agents <a 300-character name> --json` printed no
    object; the live commands print theirs before exiting, so it comes once)."""
    if "--json" in ctx.meta.get("hspr_args", ()):
        from .meta import echo_json_error  # click only: this runs on Ctrl-C, perhaps while numpy is half loaded

        echo_json_error(message)


class LazyGroup(SuggestingGroup):
    """A click group whose sub-commands are registered when first looked up."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(LAZY_COMMANDS))

    def invoke(self, ctx: click.Context):
        """Run the command; any :class:`~hspr.errors.HsprError` it lets through becomes
        ``error: <message>`` on stderr and exit status 2 (the one place the CLI does this).

        The command runs with one BLAS thread: parallelism comes from joblib workers (each also
        one thread), HSPR's products are too small to gain from more, and on a machine whose
        cores are busy (an evaluation harness running beside ``hspr live``) OpenBLAS threads
        competing for them made an HSPR run about 3x slower. One thread also makes the
        floating-point sums the same on every machine.
        """
        import warnings

        def show(message, category, filename, lineno, file=None, line=None):
            # a warning about the user's input reads as one line, not as a source location; each once per command
            # (a re-trial: a folder read twice by `live ingest` said its unreadable subfolder twice)
            from .meta import say_warning

            say_warning(str(message))

        try:
            from ..parallel import one_blas_thread  # here: Ctrl-C while threadpoolctl loads is an interrupt too (a trial)

            with one_blas_thread(), warnings.catch_warnings():
                warnings.showwarning = show
                # a warning is a `warning:` line, also under PYTHONWARNINGS=error (a trial: the fit cache's and
                # matplotlib's warnings ended the command in a traceback, after a fit); other categories
                # (DeprecationWarning, ...) keep the filters the user set
                warnings.simplefilter("default", UserWarning)
                return super().invoke(ctx)
        except click.UsageError as exc:
            echo_refused(ctx.meta.get("hspr_args", ()), exc)
            raise
        except HsprError as exc:
            from .meta import saved_note

            message = f"{exc}{saved_note()}"
            _json_error(ctx, message)
            click.echo(f"error: {message}", err=True)
            ctx.exit(2)
        except BrokenPipeError:  # `hspr bank agents verified | head`: the reader stopped reading, not an error
            import sys

            from .meta import to_null_device

            to_null_device(sys.stdout)  # no second error at exit
            ctx.exit(0)
        except OSError as exc:  # full disk, lost permission, vanished folder: no traceback
            from .meta import saved_note
            from .outputs import os_error_message

            message = f"{os_error_message(exc)}{saved_note()}"
            _json_error(ctx, message)
            click.echo(f"error: {message}", err=True)
            ctx.exit(2)
        except KeyboardInterrupt as exc:  # Ctrl-C: exit 130 (128 + SIGINT, as a shell reports it); it was click's 1,
            # "Aborted!"; SIGTERM / SIGHUP (hspr._entry.Terminated) likewise, 143 / 129
            from .._entry import exit_status, interrupted_word
            from .meta import interrupt_message  # click only (numpy may be half loaded: a trial's ImportError)

            text = interrupt_message(ctx.meta, interrupted_word(exc))
            _json_error(ctx, text)  # a script reading stdout gets its object (a re-trial)
            click.echo(f"\n{text}", err=True)
            ctx.exit(exit_status(exc))

    def make_context(self, info_name, args, parent=None, **extra) -> click.Context:
        """Click's context, with Ctrl-C while the command line is read (the command's modules load)
        exiting 130 and ``interrupted``, as in :meth:`invoke` (it was click's "Aborted!" and 1)."""
        try:
            return super().make_context(info_name, args, parent, **extra)
        except KeyboardInterrupt as exc:
            from .._entry import exit_status, interrupted_word

            click.echo(f"\n{interrupted_word(exc)}", err=True)
            raise click.exceptions.Exit(exit_status(exc)) from None
        except BrokenPipeError:  # `hspr --help | true`: as in a command, not an error (a scripting trial: click's 1)
            import sys

            from .meta import to_null_device

            to_null_device(sys.stdout)
            raise click.exceptions.Exit(0) from None
        except OSError as exc:  # `hspr --help > /dev/full`: the error line, not a traceback
            from .outputs import os_error_message

            click.echo(f"error: {os_error_message(exc)}", err=True)
            raise click.exceptions.Exit(2) from None

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        """Keep the raw arguments in ``ctx.meta`` (seen by :meth:`invoke` when a sub-command's
        option is refused), then parse as click does."""
        ctx.meta["hspr_args"] = tuple(args)
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as exc:  # `hspr --bogus live next --format harbor` (click has consumed `args` by now)
            echo_refused(ctx.meta["hspr_args"], exc)
            raise

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in self.commands and name in LAZY_COMMANDS:
            mod = __import__(f"{__name__}.{LAZY_COMMANDS[name]}", fromlist=["register"])
            mod.register(self)
        return super().get_command(ctx, name)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="hspr")
def main() -> None:
    """hspr: estimate an agent's full-benchmark score (e.g. SWE-bench resolve rate) from a small
    budget of adaptively chosen task executions.

    \b
    Replay (backtest on archived response matrices):
      hspr replay --bank verified --methods hspr,uniform --budget 0.10 --seeds 0
    Live (a real new agent, one task at a time):
      hspr live start --bank verified --budget 50 --session run.hspr
      hspr live next --session run.hspr --format space
    Bundled banks:
      hspr banks
    """


restore_help(main)  # under python -OO the group's own description too
