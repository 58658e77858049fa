"""What the commands share besides outputs (:mod:`.outputs`) and the terminal (:mod:`.display`): the command line as
a user runs it again, option checks (seeds, workers, labels), TAB completion, the environment a result records, and
the connection to a dask or ray cluster.

Each check runs before any long computation, so a bad option fails in a second with a message
naming the option, never after an hour of replay or selection.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import MappingProxyType

import click

from ..parallel import BACKENDS, cluster

#: the largest query seed: a results file or a session is JSON, whose readers may hold numbers as doubles
#: (``hspr report`` refuses more)
MAX_SEED = 2 ** 53 - 1


#: pip extra that provides each cluster backend
EXTRAS = MappingProxyType({"dask": "hspr[dask]", "ray": "hspr[ray]"})


class ExistingPath(click.Path):
    """:class:`click.Path` that names a symbolic link to nothing or a loop of links as such (click says the path
    "does not exist"; a hostile trial gave ``--matrix`` a loop of links)."""

    def convert(self, value, param, ctx):
        from ..fileio import dangling_link, dangling_words

        if self.exists and not (self.allow_dash and value == "-") and (link := dangling_link(Path(os.fsdecode(value)))):
            self.fail(dangling_words(link), param, ctx)
        return super().convert(value, param, ctx)


class CliError(click.ClickException):
    """A user error found before the work starts: printed without traceback, exit code 2."""

    exit_code = 2


def command_line() -> str:
    """This command as a user runs it again, written into a results file: ``hspr`` and its arguments,
    quoted for a shell (a path with a space). The same for ``hspr ...`` and ``python -m hspr ...`` (a trial:
    replay recorded the venv's full path of the executable, select ``hspr``)."""
    import shlex

    return shlex.join(["hspr", *sys.argv[1:]])


def argv_text(ctx: click.Context | None, param: click.Parameter | None, value: str | None) -> str | None:
    """A click callback: a command-line argument as the user typed it. Under a C/POSIX locale without
    UTF-8 mode (``LC_ALL=C PYTHONUTF8=0``) Python decodes the command line as ASCII with surrogate escapes,
    so the task id ``tâche_3`` arrives as ``t\\udcc3\\udca2che_3`` and was not found in a bank read as UTF-8
    (a trial); such an argument is decoded as UTF-8 from its bytes, as files are. Others are returned as
    given."""
    if isinstance(value, str) and any("\udc80" <= c <= "\udcff" for c in value):
        try:
            return os.fsencode(value).decode("utf-8")
        except UnicodeError:  # not UTF-8 either: left as typed, and named as such where it is not found
            return value
    return value


#: characters a label of a user's matrix may not hold: '/' marks a shift protocol (verified/bash-only),
#: '[' a variant of a run ([stop 5 pp], [300 tasks]), '|' and line breaks break the report's tables
LABEL_FORBIDDEN = "/[]|\n\r"


def _names_bundled_bank(text: str) -> bool:
    """Whether ``text`` is a bundled bank's name (any letter case, surrounding spaces ignored) or 'all'."""
    from ..data.banks import BANKS

    return text.strip().lower() in (*BANKS, "all")


def label_problem(text: str, reserved: bool = True) -> str | None:
    """Why ``text`` cannot label a user's results, or None: empty, a reserved name (with
    ``reserved``: a bundled bank's name in any letter case, 'all', the report's 'macro' / 'pooled'),
    or a character of :data:`LABEL_FORBIDDEN`."""
    from ..report.inputs import MACRO, POOLED

    if not text.strip():
        return "is empty"
    if reserved and (_names_bundled_bank(text) or text.strip().lower() in (MACRO, POOLED)):
        return "is reserved (a bundled bank, 'all', or a row of the report)"
    bad = sorted({c for c in text if c in LABEL_FORBIDDEN})
    if bad:
        return f"holds {', '.join(map(repr, bad))} ('/' marks a protocol, '[' a run variant)"
    return None


def check_matrix_label(label: str | None, matrix: str | os.PathLike | None = None) -> None:
    """click.BadParameter when the label of a user's matrix could be confused with another result
    (:func:`label_problem`). ``label`` is ``--bank`` given with ``--matrix``; None means the label
    is the file name of ``matrix``, checked the same way."""
    if label is not None and (why := label_problem(label)):
        raise click.BadParameter(f"the label {label!r} {why}; with --matrix, --bank is a label for your results: "
                                 "choose another (or leave --bank out to use the file name)", param_hint="--bank")
    if label is None and matrix is not None and (why := label_problem(Path(matrix).stem)):
        raise click.BadParameter(f"{matrix}: results are labelled by its file name {Path(matrix).stem!r}, which {why}; "
                                 "give a label with --bank LABEL", param_hint="--matrix")


def check_session_bank_label(label: str | None) -> None:
    """click.BadParameter when ``--bank`` given with ``--matrix`` to ``live start`` names a bundled
    bank (any letter case) or 'all': the session would then read as one on that bank. A session is
    never pooled in a report, so other labels are free."""
    if label is not None and _names_bundled_bank(label):
        raise click.BadParameter(f"the label {label!r} names a bundled bank; with --matrix, --bank is a label for your "
                                 "matrix: choose another (or leave --bank out to use the file name)",
                                 param_hint="--bank")


def check_workers(ctx, param, value: int) -> int:
    """click callback: joblib worker count, a positive integer or -1 (all cores).

    Raises
    ------
    click.BadParameter for 0 or below -1, naming the fix.
    """
    if value == 0 or value < -1:
        raise click.BadParameter(f"{value}: give a positive number of workers, or -1 for all cores")
    return value


def environment(methods: Sequence[str] = ()) -> dict:
    """Versions a result depends on (the optimiser-based peers' numbers move with scipy and
    scikit-learn releases), for the ``environment`` field of replay and select outputs; with
    ``methods``, ``method_packages``: each method an installed package registers, with that package
    and its version (a trial: a results file did not say where its method came from)."""
    import platform
    from importlib import metadata

    from ..methods import method_package

    out = {"hspr": __import__("hspr").__version__, "python": platform.python_version(),
           "machine": platform.machine(), "cpus": os.cpu_count()}
    for dist in ("numpy", "scipy", "scikit-learn", "pandas", "joblib"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = None
    out["processor"], out["blas"] = _processor(), _blas()
    theirs = {m: p for m in methods if (p := method_package(m)) is not None}
    return {**out, "method_packages": theirs} if theirs else out


def _processor() -> str | None:
    """The processor's model name (Linux ``/proc/cpuinfo``; else :func:`platform.processor`), None when unknown."""
    import platform

    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip() or None
    except OSError:
        pass
    return platform.processor() or None


def _blas() -> str | None:
    """numpy's BLAS library, its version and the kernels it chose for this processor (threadpoolctl, installed
    with scikit-learn), e.g. 'openblas 0.3.31 (Haswell kernels)'; None when unknown. The kernels decide the last
    bits of sums, which can move an optimiser's stopping point (docs/replay.md, "The same runs elsewhere")."""
    try:
        import numpy  # (loads its BLAS, which threadpoolctl then finds)
        from threadpoolctl import threadpool_info

        libs = [i for i in threadpool_info() if i.get("user_api") == "blas"]
    except Exception:  # pragma: no cover - threadpoolctl missing or failing: the field is informative only
        return None
    if not libs:
        return None
    # numpy's own copy (in its folder or numpy.libs), else the first by path: scipy's wheel brings another, and which
    # of the two threadpoolctl lists first varies (a trial: two identical replays recorded 0.3.30 and 0.3.31, and
    # `hspr report` then warned that their BLAS differed)
    home = os.path.dirname(os.path.realpath(numpy.__file__))
    mine = [i for i in libs if os.path.realpath(str(i.get("filepath", ""))).startswith((home + os.sep, home + ".libs" + os.sep))]
    lib = min(mine or libs, key=lambda i: str(i.get("filepath", "")))
    kernels = f" ({lib['architecture']} kernels)" if lib.get("architecture") else ""
    return f"{lib.get('internal_api')} {lib.get('version')}{kernels}"


def local_workers(workers: int, scheduler: str | None, console) -> int:
    """``workers``, or this machine's core count when more were asked for and no remote cluster
    (``--scheduler``) runs them: more local processes than cores only add start-up and switching
    (1,000 workers made a one-second replay take three minutes). The cap is noted on ``console``."""
    cores = os.cpu_count() or 1
    if scheduler is None and workers > cores:
        console.print(f"note: --workers {workers} is more than this machine's {cores} core(s); using {cores}",
                      highlight=False)
        return cores
    return workers


def check_backend(backend: str | None, scheduler: str | None) -> None:
    """--scheduler needs --backend dask or ray (click.UsageError otherwise)."""
    if scheduler and backend not in ("dask", "ray"):
        raise click.UsageError("--scheduler needs --backend dask or --backend ray (it names that cluster's address)")


def backend_options(f):
    """The --backend and --scheduler options shared by `hspr replay` and `hspr select`."""
    f = click.option("--scheduler", default=None, help="Address of an existing dask scheduler or ray cluster.")(f)
    return click.option("--backend", default=None, type=click.Choice(list(BACKENDS)),
                        help="joblib backend (default loky, local processes). dask / ray need their extras "
                             "(pip install \"hspr[dask]\" or \"hspr[ray]\"); without --scheduler a local cluster "
                             "of --workers is started.")(f)


def completer(words, files: bool = False, comma: bool = False, alone: tuple[str, ...] = (),
              prefer_files: bool = False):
    """A click ``shell_complete`` callback: the ``words`` that start with what is typed, and file
    names too with ``files`` (a bundled bank's name or a matrix file); with ``comma`` each item of
    a comma-separated list (``--methods hspr,uni<TAB>``), leaving out the items already in the list
    and the ``alone`` words (``all``), which stand alone. ``words``: strings, or a callable giving
    them (read when the shell asks). Shell completion: README, "Shell completion".

    In bash, where a word matches, file names are not offered beside it: click's bash script clears
    the words for a file item (a trial: ``hspr bank agents ver<TAB>`` gave ``verified_copy.csv``, and
    ``--targets ba<TAB>`` nothing); typing on past every word (``./``, ``verified_``) gives the files.
    With ``prefer_files`` (an option whose value is usually a file, ``replay --config``) it is the
    other way round in bash: the files while any name starts with what is typed, else the words."""
    def complete(ctx, param, incomplete: str):
        from click.shell_completion import CompletionItem

        head, sep, last = incomplete.rpartition(",") if comma else ("", "", incomplete)
        listed = set(head.split(",")) if head else set()
        out = [] if listed & set(alone) else [  # nothing goes with a word that stands alone
            CompletionItem(head + sep + w) for w in (words() if callable(words) else words)
            if w.startswith(last) and w not in listed and not (listed and w in alone)]
        bash = os.environ.get("_HSPR_COMPLETE", "").startswith("bash")  # click's variable for the `hspr` command
        if bash and out and files and prefer_files and _names_start(incomplete):
            return [CompletionItem(incomplete, type="file")]  # a re-trial: `--config <TAB>` wrote `auto` at once
        return out + ([CompletionItem(incomplete, type="file")] if files and not (out and bash) else [])

    return complete


def _names_start(typed: str) -> bool:
    """Whether a file or folder name starts with ``typed`` (a path as typed, ``~`` expanded; hidden
    names only when ``typed`` names a dot), for shell completion."""
    folder, _, start = os.path.expanduser(typed).rpartition("/")
    try:
        with os.scandir(folder + "/" if folder else (".", "/")[typed.startswith("/")]) as it:
            return any(e.name.startswith(start) and (start.startswith(".") or not e.name.startswith(".")) for e in it)
    except OSError:  # an unreadable or missing folder: no names
        return False


class LazyHelpOption(click.Option):
    """A click option whose help text is made when help is shown (``help_text``, a callable): text
    that imports modules to be written (every method class, for ``--methods``) costs nothing on the
    other runs of the command, shell completion's among them (a trial: 1.3 s per TAB)."""

    def __init__(self, *args, help_text: Callable[[], str], **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._help_text = help_text

    def get_help_record(self, ctx: click.Context):
        self.help = self._help_text()
        return super().get_help_record(ctx)


@contextlib.contextmanager
def connected(backend: str | None, scheduler: str | None, n_workers: int) -> Iterator[str | None]:
    """:func:`hspr.parallel.cluster` with connection failures turned into click errors.

    A missing extra or an unreachable scheduler raises :class:`CliError` (exit 2 with a
    message naming --backend / --scheduler and the fix) before any work starts.
    """
    with contextlib.ExitStack() as stack:
        try:
            name = stack.enter_context(cluster(backend, scheduler, n_workers))
        except ImportError:
            raise CliError(f"--backend {backend} needs its extra: pip install \"{EXTRAS.get(backend, 'hspr')}\"") from None
        except (OSError, TimeoutError, ValueError, RuntimeError, MemoryError) as exc:
            where = f"--scheduler {scheduler}" if scheduler else f"a local {backend} cluster"
            raise CliError(f"could not connect to {where} ({type(exc).__name__}: {exc}); check the address "
                           "(dask: tcp://host:8786; ray: auto or ray://host:10001) and that the cluster runs") from None
        yield name
