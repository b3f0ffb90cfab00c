"""Inputs and output paths of every command line, checked before work (transfertheory.cli_support).

The memory variable, output paths that are links, FIFOs or named twice, the temporaries a killed run left, errors
that must name their file, the memory guard's refusal in a sweep, and the phase diagram's noise values. The
commands run in-process through ``main([...])``; the work they would do is replaced by a function that fails the
test where a check must come before it.
"""
import concurrent.futures
import errno
import os
import stat
import subprocess
import sys
import warnings

import pytest

from transfertheory import claims, cli_support, phase_diagram, verify
from transfertheory.figures import __main__ as figures_cli
from transfertheory.figures import phase_grid
from transfertheory.sweep import Store
from transfertheory.sweep import __main__ as sweep_cli
from transfertheory.sweep import engine

MEMORY_VAR = "TRANSFERTHEORY_MAX_MEMORY"
TINY_SPEC = 'experiment = "faf_linear"\ndraws = 2\n[fixed]\ngamma = 1.5\nd = 6\n[axes]\ntheta = [0.1, 0.2]\n'


def _forbid_work(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the command line started computing")

    monkeypatch.setattr(phase_grid, "compute_phase_grid", refuse)
    monkeypatch.setattr(figures_cli, "_build_and_write", refuse)
    monkeypatch.setattr(claims, "run", refuse)
    monkeypatch.setattr(engine, "run_tasks", refuse)


def _commands(tmp_path):
    """Every command line that reads the memory variable, with cheap arguments."""
    return [(sweep_cli.main, ["run", "faf_fig1", "--store", str(tmp_path / "store")]),
            (figures_cli.main, ["faf_fig2", "--out", str(tmp_path / "figs"), "--backend", "numpy"]),
            (phase_diagram.main, ["--resolution", "8", "--simulate", "--out", str(tmp_path / "pd")]),
            (verify.main, ["-k", "faf.eq13.threshold", "--json", str(tmp_path / "v.json")])]


# --------------------------------------------------------------------------- TRANSFERTHEORY_MAX_MEMORY


@pytest.mark.parametrize("value", ["-5G", "0", "lots"])
def test_a_bad_memory_variable_is_a_usage_error_before_any_work_in_every_command(value, monkeypatch, tmp_path,
                                                                                  capsys):
    _forbid_work(monkeypatch)
    monkeypatch.setenv(MEMORY_VAR, value)
    for main, argv in _commands(tmp_path):
        assert main(argv) == 2, main.__module__
        err = capsys.readouterr().err
        assert err == (f"error: environment variable {MEMORY_VAR} must be a positive number of bytes or a size such "
                       f"as '64G', got {value!r}\n"), main.__module__
    assert list(tmp_path.iterdir()) == []


def test_help_is_shown_whatever_the_memory_variable(monkeypatch, capsys):
    monkeypatch.setenv(MEMORY_VAR, "lots")
    with pytest.raises(SystemExit) as exit_:
        phase_diagram.main(["--help"])
    assert exit_.value.code == 0 and "--max-memory" in capsys.readouterr().out


def test_the_memory_variable_and_the_flag_share_one_parser_and_message(monkeypatch, capsys):
    with pytest.raises(SystemExit):
        phase_diagram.main(["--max-memory", "lots"])
    flag = capsys.readouterr().err.splitlines()[-1]
    monkeypatch.setenv(MEMORY_VAR, "lots")
    assert phase_diagram.main(["--resolution", "8"]) == 2
    variable = capsys.readouterr().err
    assert flag.split("--max-memory: ")[1] == variable.split(f"{MEMORY_VAR} ")[1].strip()


def test_a_point_refused_by_the_memory_guard_exits_4_and_is_recorded_as_refused(tmp_path, monkeypatch, capsys):
    (tmp_path / "tiny.toml").write_text(TINY_SPEC)
    monkeypatch.setenv(MEMORY_VAR, "1K")
    store = tmp_path / "store"
    assert sweep_cli.main(["run", str(tmp_path / "tiny.toml"), "--store", str(store), "--workers", "1",
                           "--no-progress"]) == 4
    out = capsys.readouterr().out
    records = Store(store).failures()
    assert len(records) == 2 and {r["status"] for r in records.values()} == {engine.REFUSED}
    assert all("MemoryLimitError" in r["error"] for r in records.values())
    assert out.count("\nrefused ") == 2 and "failed 2" not in out


@pytest.mark.parametrize("experiment, fixed", [("tdr", "n = 1000000000000\nwidth = 10"), ("mtl", "tasks = 1000000000")])
def test_a_point_whose_data_does_not_fit_is_refused_not_failed(tmp_path, capsys, experiment, fixed):
    (tmp_path / "big.toml").write_text(f'experiment = "{experiment}"\ndraws = 1\n[fixed]\n{fixed}\n')
    store = tmp_path / "store"
    assert sweep_cli.main(["run", str(tmp_path / "big.toml"), "--store", str(store), "--workers", "1",
                           "--no-progress"]) == cli_support.EXIT_MEMORY
    records = Store(store).failures()
    assert [r["status"] for r in records.values()] == [engine.REFUSED]
    assert f"MemoryLimitError: {experiment}.run(" in next(iter(records.values()))["error"]


def test_sweep_run_max_memory_reaches_the_local_workers_and_refusals_name_it(tmp_path, monkeypatch, capsys):
    from transfertheory import _memory

    monkeypatch.setenv(MEMORY_VAR, "1T")  # the flag overrides it (the teardown restores both variables)
    monkeypatch.setenv(_memory.FLAG_VAR, "")
    # three points on two worker processes
    (tmp_path / "tiny.toml").write_text(TINY_SPEC.replace("[0.1, 0.2]", "[0.1, 0.2, 0.3]"))
    store = tmp_path / "store"
    assert sweep_cli.main(["run", str(tmp_path / "tiny.toml"), "--store", str(store), "--workers", "2",
                           "--max-memory", "1K", "--no-progress"]) == cli_support.EXIT_MEMORY
    records = Store(store).failures()
    assert len(records) == 3 and {r["status"] for r in records.values()} == {engine.REFUSED}
    assert all("the 1 KiB allowed by --max-memory" in r["error"] and r["error"].endswith("or raise --max-memory to "
               "allow more") for r in records.values())


def test_sweep_run_refuses_max_memory_with_a_scheduler_before_any_work(tmp_path, monkeypatch, capsys):
    (tmp_path / "tiny.toml").write_text(TINY_SPEC)
    _forbid_work(monkeypatch)
    assert sweep_cli.main(["run", str(tmp_path / "tiny.toml"), "--store", str(tmp_path / "store"), "--max-memory",
                           "64G", "--scheduler", "tcp://nowhere:8786"]) == 2
    assert "--max-memory does not reach the workers of a Dask cluster" in capsys.readouterr().err
    assert not (tmp_path / "store").exists()


# --------------------------------------------------------------------------- output paths


def test_a_symbolic_link_is_written_through_and_stays_a_link(tmp_path):
    target = tmp_path / "elsewhere" / "report.json"
    target.parent.mkdir()
    target.write_text("old")
    link = tmp_path / "report.json"
    link.symlink_to(target)
    with cli_support.staged_files() as stage:
        stage(link).write_text("new")
    assert link.is_symlink() and target.read_text() == "new"
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["elsewhere", "report.json", "report.json"]


def _fifo(tmp_path):
    """A FIFO in ``tmp_path``: (the path to write, its read end)."""
    os.mkfifo(tmp_path / "pipe")
    return tmp_path / "pipe", os.open(tmp_path / "pipe", os.O_RDONLY | os.O_NONBLOCK)


def _link_to_a_pipe(tmp_path):
    """``/dev/stdout`` with stdout a pipe: a link to ``/proc/PID/fd/N``, itself a link to ``pipe:[…]``, no path to
    stage beside."""
    read_end, write_end = os.pipe()
    os.set_blocking(read_end, False)
    (tmp_path / "stdout").symlink_to(f"/proc/{os.getpid()}/fd/{write_end}")
    return tmp_path / "stdout", read_end


@pytest.mark.parametrize("make", [_fifo, _link_to_a_pipe], ids=["fifo", "link-to-a-pipe"])
def test_a_fifo_or_pipe_is_written_into_and_never_renamed_over(make, tmp_path):
    path, reader = make(tmp_path)
    kind = os.lstat(path).st_mode
    try:
        assert cli_support.output_file_problem(path) is None
        with cli_support.staged_files() as stage:
            with open(stage(path), "w") as fh:
                fh.write("rows\n")
        assert os.read(reader, 100) == b"rows\n"
    finally:
        os.close(reader)
    assert os.lstat(path).st_mode == kind and [p.name for p in tmp_path.iterdir()] == [path.name]


def test_sweep_table_out_through_a_link_keeps_the_link(tmp_path):
    from transfertheory.sweep.store import Store

    Store(tmp_path / "store").create()
    target = tmp_path / "t.csv"
    target.write_text("old")
    (tmp_path / "link.csv").symlink_to(target)
    assert sweep_cli.main(["table", str(tmp_path / "store"), "--out", str(tmp_path / "link.csv")]) == 0
    assert (tmp_path / "link.csv").is_symlink() and target.read_text() != "old"


@pytest.mark.parametrize("through_a_link", [False, True])
def test_two_outputs_naming_one_file_are_refused_before_any_work(through_a_link, monkeypatch, tmp_path, capsys):
    _forbid_work(monkeypatch)
    report = tmp_path / "report"
    other = tmp_path / "link" if through_a_link else report
    if through_a_link:
        other.symlink_to(report)
    assert verify.main(["-k", "faf.eq13.threshold", "--json", str(report), "--csv", str(other)]) == 3
    assert capsys.readouterr().err == f"error: --json and --csv name the same file {other}: give each its own\n"


def _dead_pid():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_temporaries_of_dead_processes_are_removed_and_a_live_ones_kept(tmp_path, capsys):
    name = "phase_diagram_linear_sigma0.2.png"
    dead, live = tmp_path / f".{name}.{_dead_pid()}.tmp", tmp_path / f".{name}.{os.getppid()}.tmp"
    other = tmp_path / f".{name}.json.{_dead_pid()}.tmp"  # not a temporary of this file
    for path in (dead, live, other):
        path.write_text("half-written")
    assert phase_diagram.main(["--resolution", "8", "--out", str(tmp_path)]) == 0
    assert not dead.exists() and live.exists() and other.exists() and (tmp_path / name).is_file()


# --------------------------------------------------------------------------- errors name their file


def test_a_spec_that_is_not_utf8_is_named(tmp_path, capsys):
    spec = tmp_path / "bad.toml"
    spec.write_bytes(b'experiment = "faf_linear"\n# \xff\xfe\n')
    assert sweep_cli.main(["run", str(spec), "--store", str(tmp_path / "s")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {spec}: not UTF-8 text") and err.count("\n") == 1


def test_a_write_error_without_a_file_names_the_file_being_written(tmp_path, monkeypatch, capsys):
    import pandas as pd

    def full(self, path, *args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(pd.DataFrame, "to_csv", full)
    Store(tmp_path / "store").create()
    out = tmp_path / "t.csv"
    assert sweep_cli.main(["table", str(tmp_path / "store"), "--out", str(out)]) == 2
    assert capsys.readouterr().err == f"error: {out}: No space left on device\n"
    assert list(tmp_path.iterdir()) == [tmp_path / "store"]


def test_a_full_disk_in_a_worker_stops_the_sweep_naming_the_store_and_is_no_point_failure(tmp_path):
    store = Store(tmp_path)
    task = engine.plan_points("faf_linear", [{"d": 6, "gamma": 1.5}], 0, store)[0]
    future = concurrent.futures.Future()
    future.set_exception(OSError(errno.ENOSPC, "No space left on device"))
    with pytest.raises(OSError) as error:
        engine._outcome(future, task)
    assert error.value.filename == str(tmp_path) and "No space left on device" in cli_support.os_error_line(
        error.value) and task.pid in str(error.value)
    assert store.failures() == {}


def test_a_dask_scheduler_that_does_not_answer_is_named(tmp_path):
    pytest.importorskip("distributed")
    import dask

    task = engine.plan_points("faf_linear", [{"d": 6, "gamma": 1.5}], 0, Store(tmp_path))[0]
    with dask.config.set({"distributed.comm.timeouts.connect": "1s"}), pytest.raises(OSError) as error:
        list(engine._dask([task], "tcp://127.0.0.1:9"))
    assert "--scheduler tcp://127.0.0.1:9: cannot connect to the Dask scheduler" in str(error.value)


# --------------------------------------------------------------------------- phase diagram noise


def test_minus_zero_noise_and_ridge_names_their_files_with_zero(tmp_path, capsys):
    assert phase_diagram.main(["--noise", "-0", "--method", "ridge", "--lam", "-0", "--resolution", "8",
                               "--out", str(tmp_path)]) == 0
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names and all("-0" not in name for name in names) and "phase_diagram_ridge_sigma0_lam0.png" in names


@pytest.mark.parametrize("flag", ["--noise", "--lam"])
def test_a_huge_noise_or_ridge_is_a_usage_error_without_warnings(flag, tmp_path, capsys):
    argv = [flag, "1e308", "--resolution", "8", "--out", str(tmp_path)] + (["--method", "ridge"] if flag == "--lam"
                                                                          else [])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(SystemExit) as exit_:
            phase_diagram.main(argv)
    assert exit_.value.code == 2
    assert f"argument {flag}: must be in [0, 1e+12], got 1e+308" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_the_estimate_of_short_points_is_not_zero_seconds():
    assert [engine.format_seconds(s) for s in (0.3, 0.004, 4.24, 42, 264)] == ["300 ms", "4 ms", "4.2 s", "42 s",
                                                                              "4.4 min"]
    line = engine._estimate_line(0.3, "median of 5 stored points", 880, 1)
    assert line == "estimated 4.4 min on 1 worker(s) for 880 points (300 ms per point, median of 5 stored points)"


def test_minus_zero_and_zero_are_one_point_of_a_sweep():
    from transfertheory.sweep.store import point_id

    assert point_id("faf_linear", 1, {"sigma": -0.0, "gammas": [0.5, -0.0]}, 0) == \
        point_id("faf_linear", 1, {"sigma": 0.0, "gammas": [0.5, 0.0]}, 0)
    assert point_id("faf_linear", 1, {"sigma": 0.1}, 0) != point_id("faf_linear", 1, {"sigma": 0.0}, 0)


def test_an_integer_beyond_64_bits_is_named_as_such_before_any_work(tmp_path, capsys):
    assert sweep_cli.main(["run", "faf_fig1", "--store", str(tmp_path / "s"), "--set", f"d={2**64}"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --set d: d: an integer must be below 2**64") and err.count("\n") == 1
    assert not (tmp_path / "s" / "points").exists() or not list((tmp_path / "s" / "points").iterdir())
