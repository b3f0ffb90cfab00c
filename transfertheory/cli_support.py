r"""Plumbing shared by every command line of the package and by the benchmark scripts.

One mechanism per concern, so that every command line behaves the same:

* **Ctrl-C, SIGTERM, SIGHUP** — :func:`entry_point` wraps a ``main(argv) -> int``: the three signals are answered
  alike (:mod:`transfertheory.processes`): one line on stderr (``interrupted``, ``interrupted (SIGTERM)``,
  ``interrupted (SIGHUP)``), the worker processes stopped, the completed work kept, and the exit status 128 +
  the signal's number (:data:`EXIT_INTERRUPTED` 130, :data:`EXIT_TERMINATED` 143, :data:`EXIT_HANGUP` 129, the
  shell's convention), never a traceback; an interrupt that lands where Python drops exceptions (a
  garbage-collector or weakref callback) is sent again.
* **Memory limit** — :func:`add_memory_argument` adds ``--max-memory SIZE``; :func:`entry_point` checks
  ``TRANSFERTHEORY_MAX_MEMORY`` before the command starts, with the parser of ``--max-memory``
  (:func:`transfertheory._memory.parse_memory`): a bad value is one line and exit status :data:`EXIT_USAGE` (2).
* **Array backend** — :func:`add_backend_argument` adds ``--backend {auto,numpy,cupy}``; without the flag the
  environment variable ``TRANSFERTHEORY_BACKEND`` decides (an unknown flag is argparse's usage error, 2).
  :func:`backend_choice` checks the variable's name before any work and :func:`resolve_backend` loads it; an
  unknown name, or ``cupy`` without a usable GPU, is one line and exit status :data:`EXIT_BACKEND` (3).
* **Output paths** — :func:`require_writable` checks every output folder and file *before* the computation: a
  path that is a file where a folder is needed (or the reverse), or a folder that cannot be written, is one line
  saying what is wrong with which path, and the command's documented exit code (a :class:`CommandLineError`,
  which :func:`entry_point` prints and returns).
  Two outputs naming the same file are refused the same way.
* **Atomic writes** — :func:`staged_files` writes every output under a temporary name in its folder and renames
  them onto their names (``os.replace``) only when all are written: an interrupted or failed run leaves the
  earlier outputs as they were and no half-written file. A symbolic link is written through (its target is
  replaced, the link stays), a FIFO or a device (``/dev/null``) written into directly, never renamed over; the
  temporaries of a process that died (``kill -9``) are removed by the next write of the same file.
* **BLAS threads and worker processes** — :func:`entry_point` runs the command under the package's BLAS thread
  policy (:mod:`transfertheory.threads`: :data:`~transfertheory.threads.SERIAL_THREADS` for one process);
  :func:`add_workers_argument` adds ``--workers N`` (default :func:`~transfertheory.processes.worker_count`: one per
  core), which :func:`~transfertheory.processes.in_workers` maps independent tasks (figures) over: N worker
  processes with ⌊cores / N⌋ BLAS threads each, yielding the results in the serial order (the package's one
  executor, :mod:`transfertheory.processes`, which the sweep engine uses too).
* **Process end** — every command line's ``if __name__ == "__main__"`` line is :func:`exit_process`: ``sys.exit``
  without the finalization's garbage-collector passes over the objects the process leaves (≈ 0.1 s with matplotlib).

This module imports nothing of the package but :mod:`transfertheory.backend` and the foundation modules
:mod:`transfertheory._memory`, :mod:`transfertheory.params`, :mod:`transfertheory.threads` and
:mod:`transfertheory.processes`, so that the
command lines (``verify``, ``phase_diagram``, ``figures``), the figure writers, the sweep store (``process_alive``)
and the benchmarks can all use it.
"""
from __future__ import annotations

import contextlib
import functools
import glob
import os
import signal
import stat
import sys
import tempfile
import threading
from pathlib import Path

from ._memory import ENV_VAR as MEMORY_VAR
from ._memory import MemoryLimitError, parse_memory
from ._memory import arg_type as memory_arg_type
from .backend import (ENV_VAR, EXIT_BACKEND_UNAVAILABLE, BackendUnavailableError, backend_name, backend_names,
                      check_backend_name)
from .backend import resolve_backend as load_array_module
from .params import COUNT, PROFILE_NAMES
from .processes import exit_code_of, interrupt_line, stop_signals_raise
from .threads import SERIAL_THREADS, available_cores, blas_threads

__all__ = [
    "EXIT_BACKEND",
    "EXIT_INTERRUPTED",
    "EXIT_TERMINATED",
    "EXIT_HANGUP",
    "EXIT_MEMORY",
    "EXIT_USAGE",
    "CommandLineError",
    "exit_status_epilog",
    "entry_point",
    "exit_process",
    "add_memory_argument",
    "add_backend_argument",
    "backend_choice",
    "resolve_backend",
    "output_folder_problem",
    "output_file_problem",
    "special_file",
    "require_writable",
    "staged_files",
    "os_error_line",
    "add_profile_arguments",
    "add_workers_argument",
]

EXIT_BACKEND = EXIT_BACKEND_UNAVAILABLE
#: exit status after Ctrl-C: 128 + SIGINT, what a shell reports for a program stopped by it
EXIT_INTERRUPTED = 130
#: exit status after SIGTERM (``kill``, a batch scheduler's cancel, ``docker stop``): 128 + 15
EXIT_TERMINATED = 143
#: exit status after SIGHUP (the terminal closed): 128 + 1
EXIT_HANGUP = 129
#: exit status of a usage error, here a bad ``TRANSFERTHEORY_MAX_MEMORY`` (argparse's, for a bad flag)
EXIT_USAGE = 2
#: exit status when a computation is refused by the memory guard (:class:`transfertheory._memory.MemoryLimitError`)
EXIT_MEMORY = 4
#: exit status of an unexpected error (a bug in the package): sysexits' EX_SOFTWARE
EXIT_INTERNAL = 70


def exit_status_epilog(*codes: str) -> str:
    """An argparse ``epilog`` listing the exit statuses ``codes`` ("0 success", …), those of the stop signals and
    that of an internal error."""
    return "exit status: " + ", ".join([*codes, f"{EXIT_INTERRUPTED} interrupted (Ctrl-C)",
                                        f"{EXIT_TERMINATED} SIGTERM", f"{EXIT_HANGUP} SIGHUP",
                                        f"{EXIT_INTERNAL} internal error"])


class CommandLineError(Exception):
    """A one-line error of a command line: :func:`entry_point` prints ``error: MESSAGE`` and returns ``exit_code``."""

    def __init__(self, message, exit_code):
        super().__init__(message)
        self.exit_code = exit_code


#: seconds after which an interrupt that Python dropped is delivered again
REDELIVERY_DELAY = 0.05


@contextlib.contextmanager
def _dropped_interrupts_redelivered():
    """While the block runs, a KeyboardInterrupt that Python drops — raised inside a garbage-collector or weakref
    callback or a ``__del__``, where it is only printed as "Exception ignored in" (hypothesis, which the claims use,
    installs a gc callback) — is not lost: the signal is sent again :data:`REDELIVERY_DELAY` seconds later."""
    previous = sys.unraisablehook
    pending = []

    def hook(unraisable):
        if not issubclass(unraisable.exc_type, KeyboardInterrupt):
            previous(unraisable)
            return
        signum = getattr(unraisable.exc_value, "signum", signal.SIGINT)
        pending.append(threading.Timer(REDELIVERY_DELAY, os.kill, (os.getpid(), signum)))
        pending[-1].start()

    sys.unraisablehook = hook
    try:
        yield
    finally:
        sys.unraisablehook = previous
        for timer in pending:
            timer.cancel()


def check_memory_variable():
    """Raise :class:`CommandLineError` (exit :data:`EXIT_USAGE`) when ``TRANSFERTHEORY_MAX_MEMORY`` is set to
    anything :func:`~transfertheory._memory.parse_memory` refuses (the parser of ``--max-memory``: ``-5G``, ``0``,
    ``lots``)."""
    if os.environ.get(MEMORY_VAR, "").strip():
        try:
            parse_memory(os.environ[MEMORY_VAR], f"environment variable {MEMORY_VAR}")
        except ValueError as err:
            raise CommandLineError(str(err), EXIT_USAGE) from None


def entry_point(main):
    """Decorate ``main(argv=None) -> int``: it runs with :data:`~transfertheory.threads.SERIAL_THREADS` BLAS
    threads, after :func:`check_memory_variable` (not for ``--help``); Ctrl-C, SIGTERM and SIGHUP print one line
    and return 128 + the signal's number, a :class:`CommandLineError` prints its line and returns its exit code, a
    computation refused by the memory guard, or one that runs out of memory, prints its line and returns
    :data:`EXIT_MEMORY` (never a traceback)."""

    @functools.wraps(main)
    def guarded(argv=None):
        try:
            with stop_signals_raise(), _dropped_interrupts_redelivered(), blas_threads(SERIAL_THREADS):
                if not {"-h", "--help"} & set(sys.argv[1:] if argv is None else argv):
                    check_memory_variable()
                return main(argv)
        except KeyboardInterrupt as stop:
            print(interrupt_line(stop), file=sys.stderr, flush=True)
            return exit_code_of(stop)
        except (CommandLineError, MemoryLimitError) as err:
            print(f"error: {err}", file=sys.stderr)
            return getattr(err, "exit_code", EXIT_MEMORY)  # (a MemoryLimitError has none)
        except MemoryError:  # the machine ran out before an estimate said so: not a bug, and no traceback
            print("error: out of memory: the computation needs more memory than this machine could give it; reduce "
                  "its sizes", file=sys.stderr)
            return EXIT_MEMORY
        except Exception as err:  # a bug: one line, the traceback kept in a file for the report
            print(f"error: internal error, {type(err).__name__}: {err} (a bug in transfertheory; the traceback is in "
                  f"{_traceback_file(main.__module__)})", file=sys.stderr)
            return EXIT_INTERNAL

    return guarded


def _traceback_file(command) -> str:
    """Write the traceback of the exception being handled to a new file in the temporary folder; its path."""
    import traceback

    with tempfile.NamedTemporaryFile("w", prefix=f"{command.removesuffix('.__main__')}-", suffix=".traceback",
                                     delete=False, encoding="utf-8") as out:
        traceback.print_exc(file=out)
    return out.name


def exit_process(code):
    """End a command line's process with exit status ``code``: its ``if __name__ == "__main__"`` line, never a
    function that returns. ``sys.exit(code)`` (the ``atexit`` handlers and the flushing of stdout and stderr run
    as usual) after :func:`gc.freeze`: the objects still alive move to the garbage collector's permanent
    generation, so that the interpreter's finalization no longer walks them in its full collections — with
    matplotlib loaded that walk costs about 0.1 s of CPU, a tenth of the phase diagram (docs/benchmarks.md,
    "Command lines"). Nothing is lost: the memory goes with the process, and ``__del__`` at exit is not
    guaranteed by Python anyway (this package's outputs are closed and renamed before ``main`` returns)."""
    import gc

    gc.freeze()
    sys.exit(code)


def add_memory_argument(parser, what="simulations",
                        over=f"a simulation estimated above it exits with code {EXIT_MEMORY} before it starts"):
    """``--max-memory SIZE`` (bytes, or 512M, 64G, …): the memory limit of this run's ``what``, what happens ``over``
    it (the command applies it with :func:`transfertheory._memory.set_limit`, which sets
    ``TRANSFERTHEORY_MAX_MEMORY``)."""
    parser.add_argument("--max-memory", type=memory_arg_type, default=None, metavar="SIZE",
                        help=f"memory the {what} may use, e.g. 64G (default: ${MEMORY_VAR}, else the memory "
                        f"available); {over}")


def add_backend_argument(parser, help_text="array backend of the simulations"):
    """``--backend {auto,numpy,cupy}``, default None: ``TRANSFERTHEORY_BACKEND``, else the command's default. The name
    is read as the variable is (case and surrounding spaces ignored); another one is a usage error (exit 2)."""
    parser.add_argument("--backend", type=lambda text: text.strip().lower(), choices=backend_names(), default=None,
                        help=f"{help_text} (default: ${ENV_VAR}, else auto = CuPy if a GPU is usable, NumPy "
                        f"otherwise); a backend that cannot be used, or an unknown name in ${ENV_VAR}, exits with code "
                        f"{EXIT_BACKEND}")


def backend_choice(flag):
    """The checked backend name of ``--backend`` (``flag``), else of ``TRANSFERTHEORY_BACKEND``; None if neither
    is set. Nothing is loaded; an unknown name is a :class:`CommandLineError` (one line, exit :data:`EXIT_BACKEND`)."""
    if flag is None and ENV_VAR not in os.environ:
        return None
    try:
        return check_backend_name(flag)
    except ValueError as err:
        raise CommandLineError(str(err), EXIT_BACKEND) from None


def resolve_backend(choice, default=None):
    """Name (``"numpy"``, ``"cupy"``, …) of the backend for ``choice`` (None: ``TRANSFERTHEORY_BACKEND``, else
    ``default``, else auto). An unknown name, or CuPy without a usable GPU, is a :class:`CommandLineError` (one line,
    exit :data:`EXIT_BACKEND`)."""
    if choice is None and ENV_VAR not in os.environ:
        choice = default
    try:
        return backend_name(load_array_module(choice))
    except (ValueError, BackendUnavailableError) as err:
        raise CommandLineError(str(err), EXIT_BACKEND) from None


def _existing_ancestor(path: Path) -> Path:
    """``path`` or its nearest ancestor that exists (as anything)."""
    path = path.absolute()
    return next(p for p in (path, *path.parents) if p.exists())


def _folder_problem(folder: Path) -> str | None:
    """Why files cannot be created in the existing path ``folder``, or None."""
    if not folder.is_dir():
        return f"{folder} is a file, not a folder"
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as err:
        return f"cannot create files in {folder} ({err.strerror or err})"
    return None


def output_folder_problem(path) -> str | None:
    """What prevents writing files into folder ``path`` (created with its parents if missing), or None."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        return "exists and is not a folder"
    return _folder_problem(_existing_ancestor(path))


def special_file(path) -> bool:
    """Whether ``path`` is (or links to) something other than a file or a folder: a FIFO, a device, a terminal, a
    pipe (``/dev/stdout``)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def output_file_problem(path) -> str | None:
    """What prevents writing file ``path`` (its missing parent folders are created; a symbolic link: its target),
    or None."""
    if special_file(path):
        return None  # written into directly
    path = Path(os.path.realpath(path))
    if path.is_dir():
        return "is a folder, not a file"
    return _folder_problem(_existing_ancestor(path.parent))


def require_writable(exit_code, *, folders=(), files=()):
    """Check output ``folders`` and ``files`` — pairs (flag, path), path None for an absent flag — before any work.

    The first problem raises :class:`CommandLineError` ``cannot write FLAG PATH: what is wrong`` with
    ``exit_code`` (which :func:`entry_point` prints and returns); so do two ``files`` that are one file (the same
    path, or links to it).
    """
    checks = [(flag, path, output_folder_problem) for flag, path in folders]
    checks += [(flag, path, output_file_problem) for flag, path in files]
    for flag, path, problem_of in checks:
        problem = None if path is None else problem_of(path)
        if problem:
            raise CommandLineError(f"cannot write {flag} {path}: {problem}", exit_code)
    seen = {}
    for flag, path in files:
        if path is not None:
            real = os.path.realpath(path)
            if real in seen:
                raise CommandLineError(f"{seen[real]} and {flag} name the same file {path}: give each its own",
                                       exit_code)
            seen[real] = flag


def process_alive(pid) -> bool:
    """Whether process ``pid`` runs on this machine (another user's included)."""
    try:
        with contextlib.suppress(PermissionError):  # another user's
            os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _remove_dead_temporaries(path: Path):
    """Remove the temporaries ``.NAME.PID.tmp`` of ``path`` left by processes that no longer run (``kill -9``);
    never one of a running process."""
    for temporary in path.parent.glob(f".{glob.escape(path.name)}.*.tmp"):
        pid = temporary.name[len(path.name) + 2:-len(".tmp")]
        if pid.isdigit() and not process_alive(int(pid)):
            temporary.unlink(missing_ok=True)


def os_error_line(err: OSError) -> str:
    """``PATH: what went wrong`` for an OSError (its message alone when it names no file)."""
    if err.filename is None:
        return str(err.strerror or err)
    return f"{err.filename}: {err.strerror or err}"


@contextlib.contextmanager
def staged_files():
    """Write files atomically, all together: yields ``stage(path) -> temporary path`` (creating the folder).

    Write each output to the temporary path ``stage`` returns (a hidden name ``.NAME.PID.tmp`` in the same folder;
    pass the format explicitly where a writer infers it from the extension). When the block ends normally every
    staged file is renamed onto its path; when it raises (Ctrl-C included) the temporary files are removed and the
    exception goes on, so the paths keep their earlier content (an OSError that names no file is given the last
    staged path). Staging a path again returns its temporary path (a writer may read what an earlier one staged,
    e.g. a thumbnail its full-size PNG). A path that is a symbolic link is staged at its target (the link stays);
    one that is a FIFO or a device is returned as it is, written into directly and never renamed over. Staging a
    path removes the temporaries of it that dead processes left.
    """
    staged = []

    def stage(path):
        path = Path(path)
        if special_file(path):
            return path
        if path.is_symlink():
            path = Path(os.path.realpath(path))
        temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        if (temporary, path) not in staged:
            path.parent.mkdir(parents=True, exist_ok=True)
            _remove_dead_temporaries(path)
            staged.append((temporary, path))
        return temporary

    try:
        yield stage
        while staged:
            temporary, path = staged[0]
            os.replace(temporary, path)
            staged.pop(0)
    except OSError as err:
        if err.filename is None and staged:
            err.filename = str(staged[-1][1])
        raise
    finally:
        for temporary, _ in staged:
            temporary.unlink(missing_ok=True)


def add_profile_arguments(parser, quick, full, paper):
    """``--quick`` (the default), ``--full`` or ``--paper``, one of them: the size profile ``args.profile``; the
    arguments are their help texts."""
    size = parser.add_mutually_exclusive_group()
    for name, text in zip(PROFILE_NAMES, (quick, full, paper)):
        size.add_argument(f"--{name}", dest="profile", action="store_const", const=name, help=text)
    parser.set_defaults(profile=PROFILE_NAMES[0])


def add_workers_argument(parser, what):
    """``--workers N`` (integer >= 1; default None, which :func:`~transfertheory.processes.worker_count` reads as
    one process per core, at most one per task: the tasks cost the same CPU time in a worker as in one process,
    docs/benchmarks.md "Command lines") for a command that runs ``what``."""
    parser.add_argument("--workers", type=COUNT.arg_type(), default=None, metavar="N",
                        help=f"worker processes that run the {what} (default: one per core, {available_cores()} here, "
                        "at most one per task; 1: in this process); each has cores/N BLAS threads, and the results "
                        "are those of a serial run, in its order; more than the tasks are not started, and more than "
                        "the cores print a warning")
