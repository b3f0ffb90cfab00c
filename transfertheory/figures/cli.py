r"""Command-line pieces shared by the figure CLIs: the output folder, the array backend, writing and reporting.

Exit codes of every figure CLI (``python -m transfertheory.figures``, ``python -m transfertheory.phase_diagram``,
``python -m transfertheory.figures.faf_figN``), also in each one's ``--help`` (:data:`EPILOG`):

* 0 — success;
* 1 — the output folder cannot be written (``--out`` is a file, or a folder without write permission): checked
  before any computation, one line naming the path and what is wrong with it;
* 2 — usage error (unknown flag, a value out of range: the message names the flag and its range);
* 3 — the array backend cannot be used: ``TRANSFERTHEORY_BACKEND`` names no backend (an unknown ``--backend`` is a
  usage error), or CuPy was
  asked for on a machine without a usable GPU. One line on stderr, no traceback;
* 130 — interrupted (Ctrl-C): one line ``interrupted``; the outputs are written under temporary names and renamed
  only when all are written, so an interrupted run leaves the earlier outputs as they were. SIGTERM and SIGHUP
  are answered the same way, with one line ``interrupted (SIGTERM)`` / ``interrupted (SIGHUP)`` and exit status
  143 / 129; worker processes (``--workers``) are stopped, none is left behind, and the figures already written
  stay. A bad ``TRANSFERTHEORY_MAX_MEMORY`` is a usage error (2), checked before any work.
* 4 — a simulation does not fit in memory: its estimated peak exceeds ``--max-memory`` (``figures`` and
  ``phase_diagram``), else ``TRANSFERTHEORY_MAX_MEMORY``, else the memory available. One line on stderr naming the
  sizes, the estimate and the limit;

The backend is chosen by ``--backend`` when given, else by the environment variable ``TRANSFERTHEORY_BACKEND``,
else ``auto`` (CuPy when a GPU is usable, NumPy otherwise); :func:`resolve_backend` turns the choice into the
name of the backend the simulations will run on, which the metadata records. The mechanisms (interrupt, backend,
output checks, atomic writes) are :mod:`transfertheory.cli_support`'s, shared with ``verify`` and the benchmarks.
"""
from __future__ import annotations

import sys

from .. import cli_support
from .._memory import set_limit
from ..cli_support import EXIT_BACKEND, EXIT_MEMORY, EXIT_USAGE, backend_choice, resolve_backend

__all__ = [
    "EXIT_OK",
    "EXIT_UNWRITABLE",
    "EPILOG",
    "check_before_work",
    "add_output_arguments",
    "write_and_report",
]

EXIT_OK, EXIT_UNWRITABLE = 0, 1
#: the exit statuses of every figure CLI, for its ``--help``
EPILOG = cli_support.exit_status_epilog(
    "0 success", f"{EXIT_UNWRITABLE} output folder not writable (checked before any work)", f"{EXIT_USAGE} usage error",
    f"{EXIT_BACKEND} array backend unknown or unusable", f"{EXIT_MEMORY} a simulation does not fit in memory")


def check_before_work(args, simulates=True):
    """What a figure CLI does before computing anything: check that ``--out`` can be written (else exit 1) and that
    the backend name of ``--backend`` / ``TRANSFERTHEORY_BACKEND`` is known (else exit 3); with ``simulates`` load
    the backend too (CuPy without a usable GPU: exit 3); then apply ``--max-memory``
    (:func:`transfertheory._memory.set_limit`). Returns the backend name when ``simulates``, else None."""
    cli_support.require_writable(EXIT_UNWRITABLE, folders=[("--out", args.out)])
    backend_choice(args.backend)
    backend = resolve_backend(args.backend) if simulates else None
    set_limit(args.max_memory)
    return backend


def add_output_arguments(parser, fmt="both"):
    """``--out DIR`` (default ``figures/``) and ``--format {png,pdf,both}``."""
    from .output import FORMATS

    parser.add_argument("--out", default="figures", metavar="DIR", help="output folder (default figures/)")
    parser.add_argument("--format", choices=sorted(FORMATS), default=fmt, help=f"figure format (default {fmt})")


def write_and_report(output, name, args, *, label="", **labels):
    """Write a :class:`~transfertheory.figures.output.FigureOutput` under ``args.out`` (``args.format``), close its
    figure, print its summary lines and the written paths (after ``label``); returns the exit code (0, or 1 if not
    writable). ``labels``: the keywords of :func:`~transfertheory.figures.output.write_outputs` (title, description,
    sources, backend, runtime_s, extra_suffixes, thumbnail, context; :meth:`Figure.labels` gives the first three).
    A figure built without pyplot (a ``matplotlib.figure.Figure`` on its own canvas) has nothing to close, and
    pyplot is not imported for it."""
    from .output import write_outputs

    try:
        paths = write_outputs(output, name, args.out, args.format, **labels)
    except OSError as err:
        print(f"error: cannot write to {args.out}: {err}", file=sys.stderr)
        return EXIT_UNWRITABLE
    finally:
        pyplot = sys.modules.get("matplotlib.pyplot")  # only a figure pyplot made is held by it
        if pyplot is not None:
            pyplot.close(output.figure)
    print("\n".join(output.summary))
    print(f"{label}wrote " + ", ".join(str(p) for p in paths), flush=True)
    return EXIT_OK
