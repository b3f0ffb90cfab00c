"""Ctrl-C, SIGTERM and SIGHUP are answered alike by every command line (transfertheory.processes, cli_support).

Each command runs in a subprocess in its own session; the test records the processes it starts (through /proc),
sends the signal, and checks what a user and a batch scheduler see: one line on stderr, exit status 128 + the
signal's number, the completed work kept, no temporary file and no process left behind.
"""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import transfertheory

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads processes from /proc")

ROOT = Path(transfertheory.__file__).parents[1]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def _stat(pid):
    """(state, parent pid, start time) of process ``pid``, or None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text.rsplit(")", 1)[1].split()
    return fields[0], int(fields[1]), fields[19]


def _descendants(root):
    """{(pid, start time)} of the running descendants of process ``root``."""
    parents = {}
    for entry in os.listdir("/proc"):
        stat = _stat(entry) if entry.isdigit() else None
        if stat is not None and stat[0] != "Z":
            parents[int(entry)] = (stat[1], stat[2])
    found, frontier = set(), {root}
    while frontier:
        children = {pid for pid, (parent, _) in parents.items() if parent in frontier}
        found |= {(pid, parents[pid][1]) for pid in children}
        frontier = children
    return found


def _survivors(processes_seen, wait=5.0):
    """The processes of ``processes_seen`` still running after up to ``wait`` seconds."""
    deadline = time.monotonic() + wait
    while True:
        alive = {(pid, start) for pid, start in processes_seen
                 if (stat := _stat(pid)) is not None and stat[2] == start and stat[0] != "Z"}
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.1)


def _watch(process, until, timeout=120):
    """Record the descendants of ``process`` until ``until()`` holds (and at least one worker was seen)."""
    seen, deadline = set(), time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None:
        seen |= _descendants(process.pid)
        if until() and seen:
            return seen
        time.sleep(0.05)
    raise AssertionError(f"the command did not reach the point to signal (exit {process.poll()})")


def _default_stop_signals():
    """In the child: the stop signals at their defaults, as a terminal's command gets them (a suite run under
    ``nohup`` would otherwise hand its ignored SIGHUP on, which the command rightly keeps ignoring)."""
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)


def _start(args, tmp_path):
    return subprocess.Popen([sys.executable, "-m", *args], cwd=tmp_path, env=ENV, start_new_session=True,
                            preexec_fn=_default_stop_signals,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def _finish(process, timeout=60):
    try:
        return process.communicate(timeout=timeout)[1]
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)


SLOW_SPEC = ('experiment = "faf_linear"\ndraws = 40\n[fixed]\ngamma = 1.5\n'
             '[axes]\nd = [6, 500, 501]\n')  # a quick point, then two slow ones


@pytest.mark.parametrize("signum, group", [(signal.SIGTERM, False), (signal.SIGINT, True), (signal.SIGHUP, True)],
                         ids=["SIGTERM-to-the-process", "SIGINT-to-the-group", "SIGHUP-to-the-group"])
def test_a_signal_to_sweep_run_stops_its_workers_keeps_the_points_and_leaves_nothing(signum, group, tmp_path):
    """The signal to the run process alone (``kill PID``), or to its whole process group as a terminal sends Ctrl-C
    and its hang-up: it stops its two workers at once (their points take a minute), prints one line (no
    resource_tracker warning), keeps the quick point and leaves no process and no temporary file."""
    (tmp_path / "slow.toml").write_text(SLOW_SPEC)
    store = tmp_path / "store"
    process = _start(["transfertheory.sweep", "run", "slow.toml", "--store", str(store), "--workers", "2",
                      "--no-progress"], tmp_path)
    started = []
    seen = _watch(process, lambda: list(store.glob("points/*.parquet")) and (started or started.append(time.monotonic()))
                  and time.monotonic() - started[0] > 3)  # the workers have the two slow points
    (os.killpg if group else os.kill)(process.pid, signum)
    err = _finish(process)
    assert process.returncode == 128 + signum
    assert err == ("interrupted\n" if signum == signal.SIGINT else f"interrupted ({signum.name})\n")
    assert len(list(store.glob("points/*.parquet"))) == 1
    assert not list(store.rglob("*.tmp"))
    assert len(seen) >= 2 and not _survivors(seen)


def test_sigterm_to_the_process_group_of_figures_with_workers_leaves_no_process(tmp_path):
    """``kill -TERM -PGID`` (a batch scheduler's cancel) while two forked workers build figures: the figure already
    written stays, the one being built leaves no file and no temporary, no worker survives to write later."""
    out = tmp_path / "out"
    process = _start(["transfertheory.figures", "faf_fig2", "faf_fig4", "--workers", "2", "--out", str(out)],
                     tmp_path)
    seen = _watch(process, lambda: (out / "faf_fig2.json").is_file())
    time.sleep(0.5)
    seen |= _descendants(process.pid)
    os.killpg(process.pid, signal.SIGTERM)
    err = _finish(process)
    assert process.returncode == 143 and err == "interrupted (SIGTERM)\n"
    assert not _survivors(seen)
    time.sleep(1)  # an orphaned worker would write faf_fig4 now
    names = sorted(p.name for p in out.iterdir())
    assert "faf_fig2.png" in names and not [n for n in names if n.startswith(("faf_fig4", "."))]


def test_sigterm_to_verify_with_workers_is_one_line_and_leaves_no_process(tmp_path):
    """``kill PID`` while two workers check claims: no BrokenPipeError, no worker left, no report written."""
    process = subprocess.Popen([sys.executable, "-m", "transfertheory.verify", "-k", "merlin", "--workers", "2",
                                "--no-progress", "--json", str(tmp_path / "v.json")], cwd=tmp_path, env=ENV,
                               start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stdout.readline().split()[:2] == ["claim", "requires"]  # the header: the workers start now
    seen = _watch(process, lambda: len(_descendants(process.pid)) >= 2)
    time.sleep(1)
    seen |= _descendants(process.pid)
    process.send_signal(signal.SIGTERM)
    err = _finish(process)
    assert process.returncode == 143 and err == "interrupted (SIGTERM)\n"
    assert not _survivors(seen) and [p.name for p in tmp_path.iterdir() if p.name != ".hypothesis"] == []


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=lambda s: s.name)
def test_a_signal_to_a_command_without_workers_is_one_line(signum, tmp_path):
    """What a user sees: the signal during a run prints one line (no traceback), no output files."""
    command = [sys.executable, "-c", "import sys, time; from transfertheory.figures import phase_grid; "
               "phase_grid.compute_phase_grid = lambda *a, **k: (print('working', flush=True), time.sleep(60)); "
               "from transfertheory import phase_diagram; sys.exit(phase_diagram.main())", "--resolution", "8",
               "--out", str(tmp_path / "out")]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV,
                               preexec_fn=_default_stop_signals)
    assert process.stdout.readline() == "working\n"
    process.send_signal(signum)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 128 + signum
    assert err == ("interrupted\n" if signum == signal.SIGINT else f"interrupted ({signum.name})\n")
    assert list(tmp_path.iterdir()) == []


def test_a_signal_that_was_ignored_stays_ignored():
    """``nohup`` ignores SIGHUP: the command line keeps ignoring it."""
    from transfertheory import processes

    previous, before = signal.signal(signal.SIGHUP, signal.SIG_IGN), signal.getsignal(signal.SIGTERM)
    try:
        with processes.stop_signals_raise():
            assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
            assert signal.getsignal(signal.SIGTERM) is processes._raise_interrupted
        assert signal.getsignal(signal.SIGTERM) is before  # the earlier handler is back
    finally:
        signal.signal(signal.SIGHUP, previous)


def test_the_exit_status_and_line_follow_the_signal():
    from transfertheory import processes

    assert [processes.exit_code_of(processes.Interrupted(s)) for s in processes.STOP_SIGNALS] == [130, 143, 129]
    assert processes.exit_code_of(KeyboardInterrupt()) == 130
    assert processes.interrupt_line(KeyboardInterrupt()) == "interrupted"
    assert processes.interrupt_line(processes.Interrupted(signal.SIGHUP)) == "interrupted (SIGHUP)"


def _pid(_):
    return os.getpid()


def test_workers_are_capped_at_the_tasks_and_more_than_the_cores_is_a_warning(capsys):
    from transfertheory import processes

    import multiprocessing

    seen = []
    for _, future in processes.completed_in_workers(_pid, range(3), 1000):
        seen.append(len(multiprocessing.active_children()))
        future.result()
    assert max(seen) <= 3
    err = capsys.readouterr().err
    if processes.available_cores() < 3:
        assert err.startswith("warning: 3 worker processes on") and err.count("\n") == 1
    else:
        assert err == ""


def test_sweep_run_starts_no_more_workers_than_points(tmp_path, monkeypatch):
    from transfertheory.sweep import engine
    from transfertheory.sweep.spec import parse_spec

    used = []
    monkeypatch.setattr(engine, "_local", lambda tasks, workers: used.append(workers) or map(engine.compute_point,
                                                                                             tasks))
    spec = parse_spec({"experiment": "faf_linear", "draws": 2, "fixed": {"gamma": 1.5, "d": 6},
                       "axes": {"theta": [0.1, 0.2, 0.3]}}, "three")
    lines = []
    engine.run_sweep(spec, tmp_path / "s", workers=1000, progress=False, echo=lines.append)
    assert used == [3] and "3 to run on 3 worker(s)" in lines[0]
