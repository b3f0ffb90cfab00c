#!/usr/bin/env python
r"""Benchmark: what the command lines cost — start-up (``--help``), the phase diagram, BLAS threads, worker processes.

Every command runs as a child process and is timed by the operating system's accounting of that child (user +
system CPU seconds, ``resource.getrusage(RUSAGE_CHILDREN)``) and by the wall clock; the commands of a comparison
run in turn (A B A B …) ``--repeats`` times and the medians are printed, with the machine line (cores, 1-minute
load average before and after, the BLAS threads the command lines use, git commit). Three comparisons:

* **start-up** — ``--help`` of every command line (``verify``, ``figures``, ``phase_diagram``, ``sweep``),
  ``phase_diagram --noise 0.2`` (the README's first command, into a temporary folder) and, but with ``--quick``,
  its floor (:data:`FLOOR`: the interpreter, NumPy, the matplotlib modules of its figure, a bare figure of its
  kind drawn by matplotlib alone); with
  ``--before DIR`` (an unpacked earlier version of the repository, e.g. ``git archive REV | tar -x -C DIR``) each
  command but the floor also runs there, in turn with this one, for a paired before/after comparison;
* **BLAS threads** (``--threads-figure NAME``) — one figure's build in a child process under 1 BLAS thread
  against one per core (:func:`transfertheory.threads.blas_threads`), the choice behind
  :data:`transfertheory.threads.SERIAL_THREADS`;
* **worker processes** (``--workers-claims PATTERN``) — ``verify -k PATTERN --workers 1`` against ``--workers
  N`` for N = 2 … cores (``--workers`` of :mod:`transfertheory.cli_support`);
* **the phase diagram's steps** (``--steps``) — where the CPU of ``phase_diagram --noise 0.2`` goes: its steps
  (:data:`PHASE_STEPS`: the imports, the grid, the figure with its legends, the PNG (``savefig``, tight region),
  the CSV, the metadata) one after another in a fresh process, each timed by
  ``time.process_time``, and the interpreter's start and finalization (the child's CPU before its first line and
  after its last), medians of ``--repeats``.

Reference numbers and the conditions they were taken under: docs/benchmarks.md ("Command lines").

Examples::

    python benchmarks/bench_cli.py                                  # start-up of every command line
    python benchmarks/bench_cli.py --threads-figure mtl_fig1 --workers-claims merlin --repeats 3
    python benchmarks/bench_cli.py --quick                          # smoke run (one repeat, no verdict)
    python benchmarks/bench_cli.py --before /tmp/before --repeats 5  # paired against an earlier version
    python benchmarks/bench_cli.py --steps --repeats 5               # where the phase diagram's CPU goes

Exit status: 0 on success, 1 when a timed command fails (one line: the command and its last line of
stderr), 2 on a usage error (argparse), 130 on Ctrl-C.
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from transfertheory import cli_support, threads
from transfertheory._validation import Interval
from transfertheory.params import Param

#: exit status when a timed command fails
EXIT_FAILED = 1
REPEATS = Param("repeats", Interval(1, 100, "both"), integer=True, description="timed repetitions")
ROOT = Path(__file__).resolve().parent.parent
#: every command line of the package (``python -m MODULE``) and the exit status of its ``--help``
CLIS = {"transfertheory.verify": 0, "transfertheory.figures": 0, "transfertheory.phase_diagram": 0,
        "transfertheory.sweep": 0}
#: the floor of the phase diagram's command: the interpreter alone, with NumPy, with NumPy and the matplotlib modules
#: its figure needs (Figure, the Agg canvas; matplotlib registers the 3-D projection on import), and a bare figure of
#: its kind drawn by matplotlib alone (:data:`BARE_FIGURE`)
FLOOR = {"interpreter alone (python -c pass)": "pass",
         "import numpy": "import numpy",
         "import numpy, matplotlib.figure, backend_agg": "import numpy, matplotlib.figure, "
                                                         "matplotlib.backends.backend_agg"}
#: the phase diagram's figure without the package: the same canvas (16 × 5.6 in at 150 dpi), a surface of the same
#: 400 × 400 grid drawn by ``plot_surface`` with 60 × 60 facets, a 400 × 400 image and three curves of 400 points,
#: saved as a PNG with the tight box; no titles, legends, colour bar, CSV or metadata, so a lower bound on any
#: command that writes that figure
BARE_FIGURE = """
import os
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
fig = Figure(figsize=(16, 5.6), dpi=150)
FigureCanvasAgg(fig)
gamma, theta = np.meshgrid(np.linspace(0.005, 2, 400), np.linspace(0, np.pi / 2, 400))
t = np.cos(theta) ** 2 - gamma
fig.add_subplot(1, 3, 1, projection="3d").plot_surface(gamma, theta, t, rcount=60, ccount=60, cmap="RdBu")
fig.add_subplot(1, 3, 2).imshow(np.sign(t), origin="lower", aspect="auto", interpolation="nearest")
ax = fig.add_subplot(1, 3, 3)
for row in (100, 200, 300):
    ax.plot(gamma[0], t[row])
fig.savefig(os.devnull, format="png", bbox_inches="tight")
"""
FLOOR["a bare figure of its kind (BARE_FIGURE)"] = BARE_FIGURE
#: a figure build under a given number of BLAS threads, in a fresh process (argv: figure name, threads)
BUILD_UNDER_THREADS = """
import sys
from transfertheory.figures.catalog import get_figure
from transfertheory.threads import blas_threads
with blas_threads(int(sys.argv[2])):
    get_figure(sys.argv[1]).make("quick", "numpy", False)
"""

#: the steps of ``phase_diagram --noise 0.2`` (what :func:`transfertheory.phase_diagram.main` does, written out), one
#: after another in a fresh process (argv: the output folder), each timed by the process's CPU clock; prints the
#: readings as JSON, the first being the interpreter's start (the CPU before the first line), with the CPU of the
#: garbage collector's passes during the imports and during the rest, and ends as the command does
#: (:func:`transfertheory.cli_support.exit_process`)
PHASE_STEPS = """
import gc, json, sys, time
readings = [("interpreter start", time.process_time())]
collecting = {"started": 0.0, "imports": 0.0, "work": 0.0}  # CPU in the garbage collector's passes
def collector(phase, info):
    if phase == "start":
        collecting["started"] = time.process_time()
    else:
        collecting["work" if len(readings) > 4 else "imports"] += time.process_time() - collecting["started"]
gc.callbacks.append(collector)
def step(name):
    readings.append((name, time.process_time()))
import numpy as np
step("import NumPy")
import matplotlib.figure, matplotlib.backends.backend_agg
step("import matplotlib (Figure, Agg canvas; the 3-D projection)")
import transfertheory.phase_diagram
from transfertheory.figures import output, phase_diagram as figure, phase_grid
from transfertheory.threads import blas_threads
step("import the package (the command line's modules)")
with blas_threads(1):
    grid = phase_grid.compute_phase_grid("linear", 0.2)
    step("the grid: closed forms on 400 x 400 points")
    result = figure.phase_diagram_output(grid, "linear", 0.2)
    step("the figure and its legends")
    result.figure.savefig(sys.argv[1] + "/x.png", dpi=output.DPI, bbox_inches="tight",
                          pil_kwargs={"compress_level": output.PNG_COMPRESS_LEVEL})
    step("the PNG: savefig with the tight region (2400 x 840 pixels)")
    output.write_csv(result.data, sys.argv[1] + "/x.csv")
    step("the CSV (160 000 rows)")
    with open(sys.argv[1] + "/x.json", "w") as file:
        json.dump(output.metadata_record("x", result), file)
    step("the metadata")
gc.callbacks.remove(collector)
print(json.dumps({"steps": readings, "collections": [collecting["imports"], collecting["work"]]}), flush=True)
from transfertheory.cli_support import exit_process
exit_process(0)  # as the command ends
"""


#: variables that would fix the BLAS threads of a child before the package's policy does
BLAS_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def run_child(label, argv, root=ROOT, code=0):
    """(CPU seconds, wall seconds) of one run of ``argv`` (called ``label``) as a child process in the repository
    ``root`` (the package imported from there), without the BLAS variables (as a user runs it: the package's policy
    sets the threads); its output is discarded, and an exit status other than ``code`` is an error."""
    env = {key: value for key, value in os.environ.items() if key not in BLAS_VARIABLES}
    env["PYTHONPATH"] = str(root)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=root, env=env)
    if done.returncode != code:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise cli_support.CommandLineError(f"{label} exited with {done.returncode}: {last}", EXIT_FAILED)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, wall


#: the two lines of :func:`phase_steps` that are parts of the steps above them, not steps
COLLECTIONS = ("  of which garbage collection in the imports", "  of which garbage collection after them")


def phase_steps(repeats, out):
    """{step: median CPU s} of :data:`PHASE_STEPS` over ``repeats`` fresh processes writing into ``out``, with
    the interpreter's finalization (the child's CPU after its last reading), the child's whole CPU, and the CPU of
    the garbage collector's passes within the imports and within the rest (:data:`COLLECTIONS`)."""
    import json

    env = {key: value for key, value in os.environ.items() if key not in BLAS_VARIABLES}
    env["PYTHONPATH"] = str(ROOT)
    runs = []
    for _ in range(repeats):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        done = subprocess.run([sys.executable, "-c", PHASE_STEPS, out], capture_output=True, text=True, cwd=ROOT,
                              env=env)
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["no message"])[-1]
            raise cli_support.CommandLineError(f"the phase diagram's steps exited with {done.returncode}: {last}",
                                               EXIT_FAILED)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        total = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        record = json.loads(done.stdout.splitlines()[-1])
        readings = record["steps"]
        steps = {readings[0][0]: readings[0][1]}
        steps.update({name: now - then for (_, then), (name, now) in zip(readings, readings[1:])})
        steps["interpreter finalization (exit)"] = total - readings[-1][1]
        steps["the whole process"] = total
        steps[COLLECTIONS[0]], steps[COLLECTIONS[1]] = record["collections"]
        runs.append(steps)
    return {name: statistics.median(run[name] for run in runs) for name in runs[0]}


def compare(commands, repeats):
    """{label: (median CPU s, median wall s)} of ``commands`` ({label: argv, or (argv, root, exit status)}), run in
    turn ``repeats`` times."""
    runs = {label: [] for label in commands}
    for _ in range(repeats):
        for label, command in commands.items():
            runs[label].append(run_child(label, *(command if isinstance(command, tuple) else (command,))))
    return {label: (statistics.median(c for c, _ in r), statistics.median(w for _, w in r))
            for label, r in runs.items()}


def _print(title, medians):
    print(f"\n{title}\n{'command':<58} {'CPU s':>8} {'wall s':>8}")
    for label, (cpu, wall) in medians.items():
        print(f"{label:<58} {cpu:8.2f} {wall:8.2f}")


def machine_line():
    """Cores, the 1-minute load average, the command lines' BLAS threads and the git commit."""
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT)
    return (f"machine: {threads.available_cores()} cores, load average {os.getloadavg()[0]:.1f}, BLAS threads of "
            f"the command lines {threads.SERIAL_THREADS}, commit {commit.stdout.strip() or 'unknown'}")


def build_parser():
    epilog = cli_support.exit_status_epilog("0 success", f"{EXIT_FAILED} a timed command failed", "2 usage error")
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=epilog)
    parser.add_argument("--repeats", type=REPEATS.arg_type(), default=5, help="runs of each command (default 5)")
    parser.add_argument("--threads-figure", metavar="NAME", help="compare 1 BLAS thread with one per core on the "
                        "quick build of figure NAME")
    parser.add_argument("--workers-claims", metavar="PATTERN", help="compare verify -k PATTERN with 1 worker and "
                        "with 2 … cores workers")
    parser.add_argument("--quick", action="store_true", help="smoke run: one repeat, two command lines")
    parser.add_argument("--steps", action="store_true", help="also time the steps of phase_diagram --noise 0.2 "
                        "one by one (where its CPU goes)")
    parser.add_argument("--before", metavar="DIR", help="an unpacked earlier version of the repository: run every "
                        "start-up command there too, in turn with this one (paired before/after)")
    return parser


def startup_commands(out, quick=False, before=None):
    """The start-up comparison: {label: (argv, repository, exit status)}, each also in ``before`` if given."""
    python = [sys.executable, "-m"]
    modules = list(CLIS)[:2 if quick else None]
    commands = {f"{module} --help": ([*python, module, "--help"], CLIS[module]) for module in modules}
    commands["transfertheory.phase_diagram --noise 0.2"] = (
        [*python, "transfertheory.phase_diagram", "--noise", "0.2", "--out", out], 0)
    paired = {}
    for label, (argv, code) in commands.items():
        paired[label] = (argv, ROOT, code)
        if before is not None:
            paired[f"{label} (before)"] = (argv, Path(before).resolve(), code)
    if not quick:
        paired.update({f"floor: {label}": ([sys.executable, "-c", code], ROOT, 0) for label, code in FLOOR.items()})
    return paired


@cli_support.entry_point
def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.threads_figure:
        from transfertheory.figures.catalog import figures

        if args.threads_figure not in figures():
            parser.error(f"--threads-figure must be one of {', '.join(figures())}, got {args.threads_figure!r}")
    repeats = 1 if args.quick else args.repeats
    python = [sys.executable, "-m"]
    print(machine_line())
    if args.before is not None and not (Path(args.before) / "transfertheory").is_dir():
        parser.error(f"--before: {args.before} holds no transfertheory package")
    with tempfile.TemporaryDirectory() as out:
        _print(f"start-up, median of {repeats}", compare(startup_commands(out, args.quick, args.before), repeats))
        if args.steps:
            steps = phase_steps(repeats, out)
            print(f"\nphase_diagram --noise 0.2, step by step (CPU s, median of {repeats} processes)")
            for name, cpu in steps.items():
                print(f"{name:<58} {cpu:8.3f}")
    if args.threads_figure:
        commands = {f"{args.threads_figure} build, {n} BLAS thread(s)":
                    [sys.executable, "-c", BUILD_UNDER_THREADS, args.threads_figure, str(n)]
                    for n in sorted({1, threads.available_cores()})}
        _print(f"BLAS threads, median of {repeats}", compare(commands, repeats))
    if args.workers_claims:
        commands = {f"verify -k {args.workers_claims} --workers {n}":
                    [*python, "transfertheory.verify", "-k", args.workers_claims, "--no-progress", "--workers", str(n)]
                    for n in range(1, threads.available_cores() + 1)}
        _print(f"worker processes, median of {repeats}", compare(commands, repeats))
    print(machine_line())
    return 0


if __name__ == "__main__":
    sys.exit(main())
