"""The ``hspr`` command's entry point: Ctrl-C while the command line interface loads exits with
status 130 and ``interrupted``, as it does while a command runs (:meth:`hspr.cli.LazyGroup.invoke`),
and once the command has finished (its output written, its exit status set) Ctrl-C is ignored.
Without this a hostile trial saw a Python traceback (Ctrl-C in the first 40 ms) or the process
ended by the signal after its output. SIGTERM and SIGHUP (``timeout``, a cancelled CI job, a closed
terminal) are handled as Ctrl-C is, exiting 128 + the signal's number (a trial: they ended the
process with no word, also after a change was saved), unless the process was started ignoring them
(``nohup``: a trial's replay under nohup ended when its terminal closed). Python's own start-up
(``site``, the first ~30 ms) is before any of this. Nothing heavy is imported here."""

import atexit
import contextlib
import io
import os
import signal
import sys


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised where the command is, so that it ends as an interrupt does (its
    change, if saved, said; nothing half-written: the session journal is interrupt-safe)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def exit_status(exc: KeyboardInterrupt) -> int:
    """128 + the signal's number: 130 for Ctrl-C, 143 for SIGTERM, 129 for SIGHUP (as a shell reports it)."""
    return 128 + getattr(exc, "signum", signal.SIGINT)


def ending_on_interrupt() -> bool:
    """Whether an interrupt (Ctrl-C, SIGTERM, SIGHUP) is already ending the command: a KeyboardInterrupt is being
    handled, or is behind the exception being handled (click's Exit, the SystemExit carrying its status)."""
    exc, seen = sys.exc_info()[1], 0
    while exc is not None and seen < 100:
        if isinstance(exc, KeyboardInterrupt):
            return True
        exc, seen = exc.__context__, seen + 1
    return False


def interrupted_word(exc: KeyboardInterrupt) -> str:
    """``interrupted`` for Ctrl-C, ``terminated (SIGTERM)`` / ``terminated (SIGHUP)`` for the others."""
    signum = getattr(exc, "signum", None)
    return "interrupted" if signum is None else f"terminated ({signal.Signals(signum).name})"


def ended_anyway(signum: int) -> str:
    """What a command that ran to its end says of a SIGTERM / SIGHUP (``signum``) that came too late to stop it:
    one Python swallowed, or one as the process shut down."""
    return f"{interrupted_word(Terminated(signum))} as the command ended: its work is complete\n"


class NullAtStart(io.TextIOWrapper):
    """A standard stream the process was started without (``>&-``), given the null device by
    :func:`open_closed_streams`: whatever is written to it is lost (:func:`started_closed`)."""


def started_closed(name: str) -> bool:
    """Whether standard stream ``name`` ('stdin', 'stdout', 'stderr') was closed when the process started and
    holds the null device: a command asked to write its output to ``/dev/stdout`` would then lose it."""
    return isinstance(getattr(sys, name, None), NullAtStart)


def open_closed_streams() -> None:
    """Give each standard stream the process was started without (``hspr replay ... >&-``; Python
    then sets ``sys.stdout`` to None) the null device, on its own descriptor number (0, 1, 2) and
    inheritable, so the command does its work as with its output thrown away and its input empty: a
    hostile trial saw replay, report and select end in a traceback, and with workers (joblib flushes
    both streams as a worker starts; a worker without stderr exits at once) nothing was written. Its
    re-trial: with stdin closed too, the null device took descriptor 0 and stderr stayed closed in
    the workers, and a results file could take descriptor 1. A descriptor something else holds by now
    is left to it (the stream then gets the null device on a descriptor of its own)."""
    for fd, name, mode in ((0, "stdin", "r"), (1, "stdout", "w"), (2, "stderr", "w")):
        if getattr(sys, name) is not None:
            continue
        null = os.open(os.devnull, os.O_RDWR)
        try:
            os.fstat(fd)
        except OSError:  # closed: the null device takes its number (dup2 makes it inheritable)
            os.dup2(null, fd)
            os.close(null)
            null = fd
        os.set_inheritable(null, True)
        raw = io.FileIO(null, mode, closefd=null != fd)
        setattr(sys, name, NullAtStart(io.BufferedReader(raw) if mode == "r" else io.BufferedWriter(raw), encoding="utf-8"))


def _escape_any(exc: UnicodeError) -> tuple[bytes, int]:
    """Codec error handler ``hspr-escape`` (:func:`encode_any_text`): a lone surrogate from an undecodable
    byte of a file name (``surrogateescape``) is written as that byte, any other character the encoding lacks
    as its backslash escape (``\\u03c4``)."""
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    out = bytearray()
    for ch in exc.object[exc.start:exc.end]:
        code = ord(ch)
        out += bytes([code - 0xDC00]) if 0xDC80 <= code <= 0xDCFF else ch.encode("ascii", "backslashreplace")
    return bytes(out), exc.end


def encode_any_text() -> None:
    """Let stdout and stderr write any text: where their encoding would refuse a character (an ASCII
    locale, ``PYTHONIOENCODING=ascii`` or ``PYTHONUTF8=0 LC_ALL=C`` refusing the table's τ, or a file name
    that is no UTF-8 under ``PYTHONIOENCODING=utf-8``; trials saw each end in a traceback), a file name's
    undecodable byte is written back as it was (as ``surrogateescape`` does) and any other character as
    its backslash escape (``\\u03c4``). stderr's own handler (``backslashreplace``) is replaced too: a re-trial saw
    a file name's byte written there as the text ``\\udce9``, which no one can paste. A stream with another handler
    (``replace``, ``ignore``), or that is no text file, is left as it is."""
    import codecs

    codecs.register_error("hspr-escape", _escape_any)
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if (getattr(stream, "errors", None) not in ("strict", "surrogateescape", "backslashreplace")
                or not hasattr(stream, "reconfigure")):
            continue
        with contextlib.suppress(OSError, ValueError):
            stream.reconfigure(errors="hspr-escape")


def to_null_device(stream) -> None:
    """Point ``stream``'s file descriptor (stdout, stderr) at the null device: after its reader has
    stopped reading (a closed pipe) or its disk is full, later writes, and Python's flush at exit,
    raise no second error."""
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, stream.fileno())
    os.close(null)


class _StderrThatNeverFails(io.TextIOWrapper):
    """stderr whose writes cannot end the command: once a write or flush fails (the pipe's reader has
    gone, a full disk), its descriptor is pointed at the null device and the command goes on. stderr
    holds progress bars, warnings and the error line, never the result: a re-trial saw `hspr replay
    ... 2>&1 | head -c 10` exit 0 without writing its results (a progress bar's write raised the broken
    pipe), and `2>/dev/full` exit 1 with nothing written."""

    def _to_null(self) -> None:
        to_null_device(self)
        with contextlib.suppress(OSError):
            super().flush()  # what the failed write left in the buffer goes to the null device

    def write(self, text: str) -> int:
        try:
            return super().write(text)
        except OSError:
            self._to_null()
            return len(text)

    def flush(self) -> None:
        try:
            super().flush()
        except OSError:
            self._to_null()


def guard_stderr() -> None:
    """Replace ``sys.stderr`` by a :class:`_StderrThatNeverFails` on the same descriptor (a stream that
    is no plain text file, e.g. a test's capture, is left as it is)."""
    err = sys.stderr
    if type(err) is io.TextIOWrapper:
        guarded = _StderrThatNeverFails(err.buffer, encoding=err.encoding, errors=err.errors,
                                        line_buffering=err.line_buffering, write_through=err.write_through)
        guarded.replaced = err  # kept alive: collected, it would close the buffer the two share
        sys.stderr = guarded


def run() -> None:
    """Load :func:`hspr.cli.main` and run it as ``hspr``; a KeyboardInterrupt (or SIGTERM / SIGHUP) outside
    the command's own handler exits 128 + the signal's number with ``interrupted`` (``terminated``) on stderr."""
    received: list[int] = []  # the signals this process was sent, for one Python swallowed (below)
    ended_by: list[int] = []  # the exit status of an interrupt that ended the command: it stands (below)

    def end_now(*_) -> None:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(ended_by[0])

    # registered first, so run last: once the exit's clean-up (loky's workers stopped, multiprocessing's) is done, an
    # interrupted command ends with its status, not in Python's finalisation, where a signal's default action is back
    atexit.register(lambda: ended_by and end_now())

    def terminate(signum, frame) -> None:
        received.append(signum)
        if ending_on_interrupt():  # a second signal while the first one's interrupt ends the command: the first
            return  # decides the word and the status (a trial: "terminated (SIGTERM)", then SIGHUP's 129)
        raise Terminated(signum)

    def interrupt(signum, frame) -> None:  # Python's own Ctrl-C handler, but a Ctrl-C after SIGTERM changes nothing
        if not ending_on_interrupt():
            raise KeyboardInterrupt

    def send_again(exc: KeyboardInterrupt) -> None:
        # raised where Python cannot pass it on (a callback of the import lock: a trial's SIGTERM printed
        # "Exception ignored in ..." and the command ran on to exit 0; a test's SIGTERM 2 s into a loaded machine's
        # start-up let a replay run on for minutes): the signal is sent again 50 ms later, to land in the command
        # itself (and, should the command end first, it is said when it ends, below)
        import threading

        again = threading.Timer(0.05, os.kill, (os.getpid(), getattr(exc, "signum", signal.SIGINT)))
        again.daemon = True
        again.start()

    def unraisable(hook_args) -> None:
        if isinstance(hook_args.exc_value, KeyboardInterrupt):
            send_again(hook_args.exc_value)
        else:
            sys.__unraisablehook__(hook_args)

    def printed(kind, value, tb) -> None:
        # printed and dropped by a compiled module (Cython's unraisable path prints it in full first: a test's SIGHUP
        # during scipy.stats' import left scipy's traceback above 'terminated (SIGHUP)'); run() catches any other
        if isinstance(value, KeyboardInterrupt):
            send_again(value)
        else:
            sys.__excepthook__(kind, value, tb)

    for sig in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(sig) is not signal.SIG_IGN:  # nohup's choice stands
            signal.signal(sig, terminate)
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # not where it is ignored (`cmd &`)
        signal.signal(signal.SIGINT, interrupt)
    sys.unraisablehook = unraisable
    sys.excepthook = printed
    open_closed_streams()
    encode_any_text()
    guard_stderr()
    try:
        from .cli import main

        main(prog_name="hspr")  # click's main always ends in SystemExit with the command's status
    except KeyboardInterrupt as exc:
        sys.stderr.write(f"\n{interrupted_word(exc)}\n")
        sys.exit(exit_status(exc))
    except SystemExit as done:
        if ending_on_interrupt() and isinstance(done.code, int):
            ended_by.append(done.code)

        status = done.code  # the except clause's name is gone once the clause ends, before a late signal

        def ended_late(signum, frame) -> None:
            # a kill as a finished command shuts down (loky's workers stopped): it ends the process at once, saying
            # so when the command had succeeded (a re-trial: a `live withdraw` that had saved and printed its change
            # died of the SIGTERM, status -15, without a word); a failed command's status and message stand
            if status in (0, None):
                with contextlib.suppress(Exception):
                    sys.stderr.write(ended_anyway(signum))
                    sys.stderr.flush()
                os._exit(128 + signum)
            os._exit(status if isinstance(status, int) else 1)

        def settle() -> None:
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # done: the status stands; shutting down is not interrupted
            for sig in (signal.SIGTERM, signal.SIGHUP):
                if signal.getsignal(sig) is not signal.SIG_IGN:
                    # ... but a kill still ends it: at once, with the interrupt's status after an interrupt (a trial:
                    # SIGHUP 0.1 s after SIGTERM, as loky's workers were stopped, made 143 into 129)
                    signal.signal(sig, end_now if ended_by else ended_late)

        try:
            settle()
        except KeyboardInterrupt:  # one arriving here, as the command ended (a re-trial: a traceback): it ended
            settle()
        if received and done.code in (0, None):  # a signal Python swallowed: the command ran to its end
            sys.stderr.write(ended_anyway(received[0]))
            sys.exit(exit_status(Terminated(received[0])))
        raise
