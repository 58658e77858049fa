"""What a command has said and saved so far, kept in click's context: the ``warning:`` lines said
once each, the change already saved before an error or Ctrl-C, and the ``--json`` error object
that carries both. Only click (and :mod:`hspr._entry`, standard library only) is imported here:
the error and Ctrl-C handlers of :class:`hspr.cli.LazyGroup` use it while numpy may be half
loaded (a trial: Ctrl-C during numpy's import, then the handler's own import of numpy, gave an
ImportError traceback)."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from types import MappingProxyType

import click

from .._entry import to_null_device

#: ``click.Context.meta`` key: what a command has already saved, for an error or interrupt after it
SAVED_KEY = "hspr_saved"


def note_saved(what: str, shown_by: str | None = "`hspr live status`", kept: bool = False) -> None:
    """Record, for the error handlers, that ``what`` is saved (e.g. "hello-world's outcome is recorded in
    run.hspr"), and the command that shows it (None: none to name, e.g. a bank file written): a failure
    after it (stdout unwritable, Ctrl-C) then says so. A hostile trial: an outcome saved before a
    full-disk stdout was reported as an error alone, exit 2, and the user believed nothing was recorded.
    ``kept``: ``what`` is the work an interrupt cut short, kept by the interrupt (an interrupted replay's
    finished runs), so the interrupt's message is "interrupted; <what>", not "after the change was saved"."""
    ctx = click.get_current_context(silent=True)
    if ctx is not None:
        ctx.meta[SAVED_KEY] = what
        ctx.meta[SAVED_KEY + "_shown_by"] = shown_by
        ctx.meta[SAVED_KEY + "_kept"] = kept


#: ``click.Context.meta`` key: the session file a command opened to change, for an interrupt before any change is saved
SESSION_KEY = "hspr_session"


#: ``click.Context.meta`` key: a copy of standard input kept beside the session (``hspr live ingest -``), named by an
#: interrupt that leaves the session unchanged (a re-trial: the copy was left unsaid)
PIPED_KEY = "hspr_piped_copy"


def interrupt_message(meta: dict, word: str) -> str:
    """What an interrupted command says (``word``: 'interrupted', 'terminated (SIGTERM)', ...), from the notes in a
    click context's ``meta``: what it had saved (:func:`note_saved`: "after the change was saved: ...", or, for work
    the interrupt kept, "; ..."), else that the session it opened is unchanged (:func:`note_session`), naming a copy
    of standard input kept beside it (:data:`PIPED_KEY`)."""
    saved, piped = meta.get(SAVED_KEY), (f"; what was piped in is kept as {meta[PIPED_KEY]}" if meta.get(PIPED_KEY) else "")
    if meta.get(SESSION_KEY) and SAVED_KEY not in meta:
        return f"{word}: the session {meta[SESSION_KEY]} is unchanged{piped}"
    if not saved:
        return word + piped
    return f"{word}; {saved}" if meta.get(SAVED_KEY + "_kept") else f"{word} after the change was saved: {saved}"


def saved_note() -> str:
    """The clause an error message ends with when the command had saved something before failing, else ''."""
    ctx = click.get_current_context(silent=True)
    what = None if ctx is None else ctx.meta.get(SAVED_KEY)
    shown_by = None if ctx is None else ctx.meta.get(SAVED_KEY + "_shown_by")
    return f" (the change itself was saved: {what}{f'; {shown_by} shows it' if shown_by else ''})" if what else ""


def note_session(path) -> None:
    """Record, for the interrupt handler, that this command opened the session at ``path``: an interrupt before
    :func:`note_saved` then says the file is unchanged (a new-user trial: an interrupted ``ingest`` that saved
    nothing said only "interrupted"). The session's writes hold interrupts until their note is made
    (:meth:`hspr.live.LiveSession._transaction`), so no note means nothing was written."""
    ctx = click.get_current_context(silent=True)
    if ctx is not None:
        ctx.meta[SESSION_KEY] = str(path)


#: ``ctx.meta`` key (root context): the warnings said by the command so far, in order (a dict used as an ordered set)
SAID_KEY = "hspr_warnings_said"


def say_warning(text: str) -> None:
    """Print ``warning: <text>`` on stderr, once per command: a folder walked more than once (its
    form, then its results) raises its warnings again (a re-trial saw one 4 times). Outside a click
    command it prints every time."""
    ctx = click.get_current_context(silent=True)
    said = ctx.find_root().meta.setdefault(SAID_KEY, {}) if ctx is not None else {}
    if text not in said:
        said[text] = None
        click.echo(f"warning: {text}", err=True)


def warnings_said() -> list[str]:
    """The warnings :func:`say_warning` printed so far in this command, in order (for a ``--json``
    object's ``warnings``)."""
    ctx = click.get_current_context(silent=True)
    return list(ctx.find_root().meta.get(SAID_KEY, {})) if ctx is not None else []


def json_error(message: str) -> str:
    """The JSON object a ``--json`` command prints on stdout when it fails: ``{"ok": false, "error":
    message}``, with ``"warnings"``, the warnings said on stderr before it (:func:`say_warning`, in
    order), when there were any: a script reading only stdout gets what explains the error (a trial:
    an unreadable folder's warning reached stderr only)."""
    import json

    said = warnings_said()
    return json.dumps({"ok": False, "error": message} | ({"warnings": said} if said else {}))


def echo_json_error(message: str) -> None:
    """Print :func:`json_error`'s object for ``message`` on stdout. Where stdout cannot take it (a full
    disk, a closed pipe) stdout is pointed at the null device and the command goes on to its
    ``error:`` line on stderr, which says the same: a hostile trial's ``live record --json >
    /dev/full`` saved the outcome, then ended in a chained traceback that lost the saved-change note."""
    try:
        click.echo(json_error(message))
    except OSError:
        to_null_device(sys.stdout)


def restore_help(cmd: click.Command) -> click.Command:
    """Give ``cmd`` its docstring as help text under ``python -OO`` (``PYTHONOPTIMIZE=2``), which strips
    docstrings and with them click's help texts (a trial: `hspr --help` listed its commands with no words,
    and each command's `--help` had no description). The docstring is read from the callback's source
    file; a command given ``help=``, or one whose source cannot be read, is left as it is. Returns ``cmd``."""
    if sys.flags.optimize < 2 or cmd.help is not None or cmd.callback is None:
        return cmd
    import ast
    import inspect

    fn = inspect.unwrap(cmd.callback)
    code = getattr(fn, "__code__", None)
    try:
        with open(inspect.getsourcefile(fn), encoding="utf-8") as fh:
            tree = ast.parse(fh.read())
    except (OSError, TypeError, SyntaxError, ValueError):
        return cmd
    for node in ast.walk(tree):  # the def of that name starting (with its decorators) on the callback's first line
        if (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == fn.__name__ and code is not None
                and min([node.lineno] + [d.lineno for d in node.decorator_list]) == code.co_firstlineno):
            cmd.help = ast.get_docstring(node, clean=False)
            break
    return cmd


class SuggestingGroup(click.Group):
    """A click group that answers an unknown sub-command with the one meant: its usual other name
    (``synonyms``: ``hspr bank check`` -> ``validate``; a trial got only "No such command 'check'") or the
    closest by spelling (``hspr repaly`` got no suggestion either), in click's words ("Did you mean ...")."""

    synonyms: Mapping[str, str] = MappingProxyType({})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        cmd = super().get_command(ctx, name)
        return None if cmd is None else restore_help(cmd)

    def resolve_command(self, ctx: click.Context, args: list[str]):
        name = args[0] if args else None
        if name and not name.startswith("-") and self.get_command(ctx, name) is None:
            import difflib

            # also the closest by spelling: click's own suggestion misses the lazily registered commands of `hspr`
            meant = self.synonyms.get(name) or next(iter(difflib.get_close_matches(name, self.list_commands(ctx), 1)),
                                                   None)
            if meant:
                raise click.UsageError(f"No such command {name!r}. Did you mean {meant!r}?", ctx)
        return super().resolve_command(ctx, args)
