"""The ``hspr`` command's entry point: Ctrl-C while the command line interface loads exits with
status 130 and ``interrupted``, as it does while a command runs (:meth:`hspr.cli.LazyGroup.invoke`),
and once the command has finished (its output written, its exit status set) Ctrl-C is ignored.
Without this a hostile trial saw a Python traceback (Ctrl-C in the first 40 ms) or the process
ended by the signal after its output. Python's own start-up (``site``, the first ~30 ms) is
before any of this. Nothing heavy is imported here."""

import signal
import sys


def run() -> None:
    """Load :func:`hspr.cli.main` and run it as ``hspr``; a KeyboardInterrupt outside the command's
    own handler exits 130 with ``interrupted`` on stderr."""
    try:
        from .cli import main

        main(prog_name="hspr")  # click's main always ends in SystemExit with the command's status
    except KeyboardInterrupt:
        sys.stderr.write("\ninterrupted\n")
        sys.exit(130)
    except SystemExit:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # done: the status stands; shutting down is not interrupted
        raise
