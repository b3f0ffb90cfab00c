"""Every command line behaves the same (transfertheory.cli_support): Ctrl-C, output paths, backend, fast ``-k``.

The command lines run in-process through ``main([...])``; the work they would do is replaced by a function that
raises (KeyboardInterrupt for Ctrl-C, AssertionError where a check must come before any work), so these tests take
a fraction of a second each. One subprocess test shows what a user sees after Ctrl-C.
"""
import gc
import importlib
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import transfertheory
from transfertheory import claims, cli_support, processes, verify
from transfertheory import phase_diagram as phase_cli
from transfertheory.figures import __main__ as registry_cli
from transfertheory.figures import cli as figure_cli
from transfertheory.figures import phase_diagram as figure
from transfertheory.figures import phase_grid

#: every figure command line with arguments that make it cheap (module, argv before --out)
FIGURE_CLIS = [
    ("transfertheory.figures.__main__", ["faf_fig2"]),
    ("transfertheory.phase_diagram", ["--resolution", "8"]),
]
ALL_CLIS = [*(module for module, _ in FIGURE_CLIS), "transfertheory.verify"]


def _main(module):
    return importlib.import_module(module).main


def _forbid_work(monkeypatch, exception):
    """Make the first step of every command line's computation raise ``exception`` (a class)."""
    def refuse(*args, **kwargs):
        raise exception("the command line started computing")

    monkeypatch.setattr(phase_grid, "compute_phase_grid", refuse)
    monkeypatch.setattr(registry_cli, "_build_and_write", refuse)
    monkeypatch.setattr(claims, "run", refuse)


def _files(folder):
    return sorted(str(p.relative_to(folder)) for p in Path(folder).rglob("*"))


# --------------------------------------------------------------------------- Ctrl-C


@pytest.mark.parametrize("module, argv", FIGURE_CLIS + [("transfertheory.verify", ["-k", "faf.eq13.threshold"])],
                         ids=lambda v: v if isinstance(v, str) else None)
def test_ctrl_c_is_one_line_and_exit_130(module, argv, monkeypatch, tmp_path, capsys):
    _forbid_work(monkeypatch, KeyboardInterrupt)
    out = ["--json", str(tmp_path / "v.json")] if module.endswith("verify") else ["--out", str(tmp_path / "out")]
    assert _main(module)([*argv, *out, "--backend", "numpy"]) == cli_support.EXIT_INTERRUPTED == 130
    assert capsys.readouterr().err == "interrupted\n"
    assert _files(tmp_path) == []


def test_ctrl_c_while_writing_keeps_the_earlier_outputs_and_leaves_no_partial_file(monkeypatch, tmp_path, capsys):
    assert phase_cli.main(["--resolution", "8", "--format", "both", "--out", str(tmp_path)]) == 0
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    saved = []

    def savefig_interrupted_at_the_pdf(figure, path, **kwargs):
        if kwargs.get("format") == "pdf":  # the PNG is written; Ctrl-C arrives while the PDF is
            assert saved and saved[0].is_file()
            raise KeyboardInterrupt
        real_savefig(figure, path, **kwargs)
        saved.append(path)

    import matplotlib.figure

    real_savefig = matplotlib.figure.Figure.savefig
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", savefig_interrupted_at_the_pdf)
    assert phase_cli.main(["--resolution", "9", "--format", "both", "--out", str(tmp_path)]) == 130
    assert capsys.readouterr().err.endswith("interrupted\n")
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


def test_exit_process_freezes_the_objects_and_still_flushes_and_runs_the_exit_handlers():
    """A command line's process ends through cli_support.exit_process: its exit status, its buffered output and
    its atexit handlers as with sys.exit, the live objects frozen first (the finalization's collections skip
    them); every command line's ``__main__`` line uses it."""
    code = ("import atexit, gc\nfrom transfertheory import cli_support\n"
            "atexit.register(lambda: print('atexit ran, frozen:', gc.get_freeze_count() > 1000))\n"
            "print('buffered', end='')\ncli_support.exit_process(3)\nprint('not reached')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 3 and done.stdout == "bufferedatexit ran, frozen: True\n", done.stderr
    root = Path(transfertheory.__file__).parent
    for module in ("verify.py", "phase_diagram.py", "figures/__main__.py", "sweep/__main__.py"):
        assert (root / module).read_text().rstrip().splitlines()[-1].endswith("exit_process(main())"), module


def test_ctrl_c_during_a_garbage_collector_callback_is_not_lost(monkeypatch, tmp_path, capsys):
    """Python drops an exception raised inside a gc callback (hypothesis installs one): the interrupt must still
    stop the command, not let it run to the end."""
    raised = []

    def interrupt_once(phase, info):
        if phase == "start" and not raised:
            raised.append(phase)
            signal.raise_signal(signal.SIGINT)  # the handler runs here, inside the callback

    def work_then_finish(*args, **kwargs):  # the grid's computation: returns nothing if the interrupt is lost
        gc.callbacks.append(interrupt_once)
        try:
            gc.collect()
        finally:
            gc.callbacks.remove(interrupt_once)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:  # an interrupt redelivered after the callback lands here
            pass

    monkeypatch.setattr(phase_grid, "compute_phase_grid", work_then_finish)
    monkeypatch.setattr(figure, "phase_diagram_output", lambda *a, **k: pytest.fail("the interrupt was lost"))
    assert phase_cli.main(["--resolution", "8", "--out", str(tmp_path / "out")]) == 130
    assert capsys.readouterr().err.endswith("interrupted\n")


def test_progress_bars_are_closed_when_interrupted(monkeypatch, capsys):
    """A bar left open is drawn again after the CLI's line "interrupted": the simulator's is closed while unwinding."""
    from tqdm import tqdm

    from transfertheory.sim.deep_linear import experiment

    def interrupt(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(experiment, "_flow_rows", interrupt)
    with pytest.raises(KeyboardInterrupt) as interrupted:  # its traceback keeps the frames (and an open bar) alive
        experiment.run_transfer_experiment(d=8, gammas=[0.5], thetas=[1.0], sigma=0.2, draws=2,
                                           methods=("scratch",), seed=0, backend="numpy", progress=True)
    assert interrupted.traceback and not tqdm._instances


def test_staged_files_rename_together_or_not_at_all(tmp_path):
    (tmp_path / "a.txt").write_text("old")
    with pytest.raises(RuntimeError):
        with cli_support.staged_files() as stage:
            stage(tmp_path / "a.txt").write_text("new")
            stage(tmp_path / "sub" / "b.txt").write_text("new")
            raise RuntimeError("failed after writing")
    assert (tmp_path / "a.txt").read_text() == "old" and _files(tmp_path) == ["a.txt", "sub"]
    with cli_support.staged_files() as stage:
        stage(tmp_path / "a.txt").write_text("new")
        stage(tmp_path / "sub" / "b.txt").write_text("new")
    assert _files(tmp_path) == ["a.txt", "sub", "sub/b.txt"] and (tmp_path / "a.txt").read_text() == "new"


def test_staging_a_path_again_returns_its_temporary_path(tmp_path):
    with cli_support.staged_files() as stage:
        stage(tmp_path / "a.txt").write_text("first")
        assert stage(tmp_path / "a.txt").read_text() == "first"  # a later writer reads the staged file
    assert _files(tmp_path) == ["a.txt"] and (tmp_path / "a.txt").read_text() == "first"


def test_ctrl_c_with_worker_processes_prints_one_line(tmp_path):
    """SIGINT to the whole process group, as a terminal sends it: the workers print nothing, the parent one line."""
    env = {**os.environ, "PYTHONPATH": str(Path(transfertheory.__file__).parents[1])}
    command = [sys.executable, "-m", "transfertheory.verify", "-k", "merlin", "--workers", "2", "--no-progress",
               "--json", str(tmp_path / "v.json")]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                               start_new_session=True)
    assert process.stdout.readline().split()[:2] == ["claim", "requires"]  # the header: the workers start now
    time.sleep(1)  # (the first claims take seconds)
    os.killpg(process.pid, signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130 and err == "interrupted\n"
    assert _files(tmp_path) == []


# --------------------------------------------------------------------------- start-up

#: what a ``--help`` must not load: the tables, the plotting and the scientific libraries (each costs 0.1–0.6 s),
#: and the package's heavy layers (the simulators' catalog, the claims, the figure catalog, the sweep engine)
HEAVY_MODULES = ("pandas", "pyarrow", "matplotlib", "scipy", "hypothesis", "ot", "transfertheory.sim.catalog",
                 "transfertheory.claims", "transfertheory.figures.catalog", "transfertheory.sweep.engine")


@pytest.mark.parametrize("module", ["transfertheory.verify", "transfertheory.phase_diagram", "transfertheory.figures",
                                    "transfertheory.sweep"])
def test_help_of_a_command_line_loads_no_heavy_library(module):
    """``python -m MODULE --help`` in a fresh interpreter imports none of :data:`HEAVY_MODULES` (a --help costs the
    interpreter, NumPy and argparse: under 0.3 s of CPU on the 2-core machine, docs/benchmarks.md)."""
    script = ("import json, runpy, sys\n"
              f"sys.argv = [{module!r}, '--help']\n"
              "try:\n"
              f"    runpy.run_module({module!r}, run_name='__main__')\n"
              "except SystemExit as stop:\n"
              "    assert stop.code == 0, stop.code\n"
              f"print(json.dumps([name for name in {HEAVY_MODULES!r} if name in sys.modules]))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          cwd=Path(transfertheory.__file__).parents[1])
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.splitlines()[-1]) == []


# --------------------------------------------------------------------------- output paths, before any work


@pytest.mark.parametrize("module, argv", FIGURE_CLIS, ids=lambda v: v if isinstance(v, str) else None)
def test_out_that_is_a_file_is_refused_before_any_work(module, argv, monkeypatch, tmp_path, capsys):
    _forbid_work(monkeypatch, AssertionError)
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    for out, problem in ((blocker, "exists and is not a folder"), (blocker / "sub", "is a file, not a folder")):
        assert _main(module)([*argv, "--out", str(out)]) == figure_cli.EXIT_UNWRITABLE == 1
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"--out {out}: " in err and problem in err


@pytest.mark.parametrize("flag", ["--json", "--csv"])
def test_verify_checks_its_report_paths_before_any_claim_runs(flag, monkeypatch, tmp_path, capsys):
    _forbid_work(monkeypatch, AssertionError)
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    for path, problem in ((blocker / "v.out", "is a file, not a folder"), (tmp_path, "is a folder, not a file")):
        assert verify.main(["-k", "faf.eq13.threshold", flag, str(path)]) == verify.EXIT_ENVIRONMENT == 3
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"{flag} {path}: " in err and problem in err


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="permissions do not bind root")
def test_a_folder_without_write_permission_is_named(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    assert "cannot create files in" in cli_support.output_folder_problem(locked / "sub")
    assert "cannot create files in" in cli_support.output_file_problem(locked / "v.json")


def test_writable_paths_have_no_problem_and_nothing_is_created(tmp_path):
    assert cli_support.output_folder_problem(tmp_path / "new" / "deeper") is None
    assert cli_support.output_file_problem(tmp_path / "new" / "v.json") is None
    assert _files(tmp_path) == []


# --------------------------------------------------------------------------- backend


@pytest.mark.parametrize("module", ALL_CLIS)
def test_every_cli_takes_backend_and_documents_its_exit_codes(module):
    parser = importlib.import_module(module).build_parser()
    assert parser.parse_args(["--backend", "numpy"]).backend == "numpy"
    assert parser.parse_args(["--backend", " NumPy "]).backend == "numpy"  # read as the variable is
    assert "130 interrupted" in parser.epilog and "3 " in parser.epilog


@pytest.mark.parametrize("module, argv", FIGURE_CLIS + [("transfertheory.verify", ["-k", "faf.eq13.threshold"])],
                         ids=lambda v: v if isinstance(v, str) else None)
def test_unknown_backend_in_the_environment_stops_every_cli_before_any_work(module, argv, monkeypatch, tmp_path,
                                                                           capsys):
    _forbid_work(monkeypatch, AssertionError)
    monkeypatch.setenv("TRANSFERTHEORY_BACKEND", "bogus")
    assert _main(module)([*argv, "--out" if "figures" in module or "phase" in module else "--csv",
                          str(tmp_path / "out")]) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "TRANSFERTHEORY_BACKEND" in err and "'bogus'" in err


@pytest.mark.parametrize("argv, env, expected", [([], None, "numpy"), (["--backend", "strict"], None, "strict"),
                                                 ([], "strict", "strict"), (["--full"], "numpy", "numpy")])
def test_verify_backend_flag_then_variable_then_profile(argv, env, expected, monkeypatch, capsys):
    monkeypatch.delenv("TRANSFERTHEORY_BACKEND", raising=False)
    if env is not None:
        monkeypatch.setenv("TRANSFERTHEORY_BACKEND", env)
    seen = []
    real_run = claims.run
    monkeypatch.setattr(claims, "run", lambda claim, profile, **kw: seen.append(profile) or real_run(claim, profile, **kw))
    assert verify.main(["-k", "faf.eq13.threshold", "--no-progress", *argv]) == 0
    assert [p.backend for p in seen] == [expected] and seen[0].name == ("full" if "--full" in argv else "quick")


# --------------------------------------------------------------------------- benchmark scripts

BENCHMARKS_WITH_BACKEND = ["bench_deep_linear", "bench_ntk", "bench_tdr", "bench_merlin",
                           "bench_relu_teacher"]
BENCHMARKS = [*BENCHMARKS_WITH_BACKEND, "bench_mtl_fig1", "bench_cli", "integrator_accuracy"]


def _benchmark(monkeypatch, name, exception):
    """The script's ``main``, with every timing (the first step of any benchmark's work: wall or process CPU clock)
    raising ``exception``."""
    monkeypatch.syspath_prepend(str(Path(transfertheory.__file__).parents[1] / "benchmarks"))
    module = importlib.import_module(name)

    def refuse():
        raise exception("the benchmark started timing")

    monkeypatch.setattr(time, "perf_counter", refuse)
    monkeypatch.setattr(time, "process_time", refuse)
    return module.main


@pytest.mark.parametrize("name", BENCHMARKS)
def test_ctrl_c_in_a_benchmark_is_one_line_and_exit_130(name, monkeypatch, capsys):
    quick = ["--d", "8", "--draws", "2"] if name == "integrator_accuracy" else ["--quick"]
    assert _benchmark(monkeypatch, name, KeyboardInterrupt)(quick) == 130
    assert capsys.readouterr().err == "interrupted\n"


@pytest.mark.parametrize("name", BENCHMARKS_WITH_BACKEND)
def test_a_benchmark_checks_the_backend_variable_before_any_work(name, monkeypatch, capsys):
    main = _benchmark(monkeypatch, name, AssertionError)
    monkeypatch.setenv("TRANSFERTHEORY_BACKEND", "bogus")
    assert main(["--quick"]) == 3 and "TRANSFERTHEORY_BACKEND" in capsys.readouterr().err
    monkeypatch.delenv("TRANSFERTHEORY_BACKEND")
    with pytest.raises(SystemExit) as exit_info:
        main(["--quick", "--backend", "bogus"])
    assert exit_info.value.code == 2  # argparse: not one of the choices


@pytest.mark.parametrize("name", ["bench_deep_linear", "bench_tdr"])
def test_a_benchmark_checks_its_csv_path_before_any_work(name, monkeypatch, tmp_path, capsys):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    assert _benchmark(monkeypatch, name, AssertionError)(["--quick", "--csv", str(blocker / "b.csv")]) == 1
    assert "cannot write --csv" in capsys.readouterr().err


# --------------------------------------------------------------------------- the README's first command


@pytest.mark.skipif(shutil.which("git") is None or not (Path(transfertheory.__file__).parents[1] / ".git").exists(),
                    reason="needs a git checkout")
def test_the_readme_phase_diagram_leaves_the_checkout_clean():
    """``python -m transfertheory.phase_diagram --noise 0.2`` writes into figures/; git ignores what it writes."""
    root = Path(transfertheory.__file__).parents[1]
    name = phase_cli.output_name("linear", 0.2)
    written = [f"figures/{name}.{ext}" for ext in ("png", "pdf", "csv", "json")] + [f"figures/{name}_simulated.csv"]
    done = subprocess.run(["git", "check-ignore", *written], cwd=root, capture_output=True, text=True)
    assert done.stdout.split() == written


# --------------------------------------------------------------------------- BLAS threads and worker processes


def _blas_threads():
    """The BLAS thread counts of this process, one per BLAS library NumPy loaded."""
    from threadpoolctl import threadpool_info

    return {pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"}


def _square_with_threads_and_process(x):
    return x * x, _blas_threads(), os.getpid()


def test_the_test_session_runs_under_the_serial_thread_policy():
    from transfertheory import threads

    assert _blas_threads() == {threads.SERIAL_THREADS}


def test_running_out_of_memory_is_one_line_and_the_memory_exit_status(capsys):
    def main(argv):
        raise MemoryError

    assert cli_support.entry_point(main)([]) == cli_support.EXIT_MEMORY == 4
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: out of memory:")


def test_an_unexpected_error_is_one_line_naming_the_traceback_file(capsys):
    def main(argv):
        raise ValueError("'yerr' must not contain negative values")

    main.__module__ = "transfertheory.figures.__main__"
    assert cli_support.entry_point(main)([]) == cli_support.EXIT_INTERNAL == 70
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: internal error, ValueError: 'yerr' must not")
    path = Path(err.rsplit("the traceback is in ", 1)[1].rstrip(")\n"))
    assert path.name.startswith("transfertheory.figures-") and "Traceback (most recent call last)" in path.read_text()
    path.unlink()


def test_every_command_line_runs_under_the_serial_thread_policy():
    from transfertheory import threads

    seen = []
    with cli_support.blas_threads(threads.available_cores()):  # what NumPy does without the policy
        assert cli_support.entry_point(lambda argv: seen.append(_blas_threads()) or 0)([]) == 0
    assert seen == [{threads.SERIAL_THREADS}]


@pytest.mark.parametrize("workers", [1, 2, 5])
def test_in_workers_yields_the_serial_results_in_order(workers):
    from transfertheory import threads

    results = list(processes.in_workers(_square_with_threads_and_process, range(4), workers))
    assert [square for square, _, _ in results] == [0, 1, 4, 9]
    used = min(workers, 4)
    expected = threads.threads_per_worker(used)
    assert all(blas == {expected} for _, blas, _ in results)
    pids = {pid for _, _, pid in results}
    assert (pids == {os.getpid()}) == (used == 1) and len(pids) <= used


def test_in_workers_rejects_a_bad_count_before_any_work():
    with pytest.raises(ValueError, match="workers"):
        list(processes.in_workers(_square_with_threads_and_process, range(2), 0))


@pytest.mark.parametrize("module", ["transfertheory.verify", "transfertheory.figures.__main__"])
def test_workers_flag_takes_positive_integers_only(module, capsys):
    parser = importlib.import_module(module).build_parser()
    assert parser.parse_args(["--workers", "3"]).workers == 3
    for bad in ("0", "1.5", "two"):
        with pytest.raises(SystemExit) as exit_info:
            parser.parse_args(["--workers", bad])
        assert exit_info.value.code == 2 and "--workers" in capsys.readouterr().err


def test_the_costliest_tasks_are_handed_out_first_and_the_results_come_in_the_serial_order():
    assert processes.start_order(4, [0.0, 1.0, 3.0, 2.0]) == [2, 3, 1, 0]
    assert processes.start_order(3, [math.inf, 1.0, math.inf]) == [0, 2, 1]  # unknown first, in their order
    assert processes.start_order(3) == [0, 1, 2]
    results = list(processes.in_workers(_square_with_threads_and_process, range(4), 2, costs=[0.0, 1.0, 3.0, 2.0]))
    assert [square for square, _, _ in results] == [0, 1, 4, 9]


def test_start_order_takes_comparable_keys_costliest_first_keeping_the_order_of_equals():
    assert processes.start_order(4, [(0, 2.0), (1, 0), (0, 5.0), (1, 0)]) == [1, 3, 2, 0]
