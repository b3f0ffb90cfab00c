"""The sweep engine: specs validated before anything runs, the Parquet store, resume after SIGKILL, failures and
--retry-failed, the command line (docs/sweeps.md)."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from transfertheory import params as P
from transfertheory.sim import Experiment, Field, experiments
from transfertheory.sim import catalog
from transfertheory.sim.convergence import Convergence, convergence_columns
from transfertheory.sim.seeding import generator
from transfertheory.sweep import NAMED_SWEEPS, Store, parse_spec, point_id, run_sweep
from transfertheory.sweep.__main__ import main
from transfertheory.sweep.engine import Task, compute_point, plan

ROOT = Path(__file__).resolve().parents[2]

# 12 FaF §3 points of a fraction of a second each: long enough to be killed in the middle
LINEAR_TOML = """
experiment = "faf_linear"
draws = 2
[fixed]
d = 6
sigma = 0.3
methods = ["scratch", "linear", "finetune"]
[axes]
gamma = [0.5, 1.5, 2.0]
theta = { start = 0.2, stop = 1.4, num = 4 }
"""


def _write(path, text):
    path.write_text(text, encoding="utf-8")
    return path


def _spec(text, tmp_path, **kwargs):
    from transfertheory.sweep import load_toml

    return parse_spec(load_toml(_write(tmp_path / "spec.toml", text)), "spec", **kwargs)


# --------------------------------------------------------------------------- a toy experiment that can fail


def _toy(point, seed, backend):
    if point["x"] in FLAKY:
        FLAKY.discard(point["x"])
        raise RuntimeError(f"flaky point x = {point['x']}")
    values = generator(seed).standard_normal(point["draws"])
    return pd.DataFrame({"instance": np.arange(point["draws"]), "value": values,
                         **convergence_columns(Convergence.of_length(point["draws"], True, "exact", np.nan, 0,
                                                                     np.nan))})


FLAKY = set()
TOY = Experiment("toy", "none", 1, (Field("x", 1.0, P.GAMMA), Field("draws", 2, P.DRAWS)), {"x": 1.0}, _toy)


@pytest.fixture
def toy(monkeypatch):
    monkeypatch.setitem(catalog._REGISTRY, "toy", TOY)
    FLAKY.clear()
    return parse_spec(dict(experiment="toy", draws=3, axes=dict(x=[0.5, 1.0, 2.0, 4.0])), "toy")


def test_a_failing_point_is_recorded_the_sweep_goes_on_and_retry_failed_reruns_only_it(toy, tmp_path):
    FLAKY.add(2.0)
    report = run_sweep(toy, tmp_path, workers=1, progress=False, echo=lambda line: None)
    assert (report.total, report.done, report.failed, report.computed) == (4, 3, 1, 4)
    store = Store(tmp_path)
    (record,) = store.failures().values()
    assert record["error"] == "RuntimeError: flaky point x = 2.0" and record["point"] == {"x": 2.0, "draws": 3}
    assert "Traceback" in Path(record["log"]).read_text() and "flaky point" in Path(record["log"]).read_text()
    stamps = {p.name: p.stat().st_mtime_ns for p in (tmp_path / "points").glob("*.parquet")}
    again = run_sweep(toy, tmp_path, workers=1, progress=False, echo=lambda line: None)
    assert (again.done, again.failed, again.computed) == (3, 1, 0)  # a plain rerun leaves the failure alone
    retried = run_sweep(toy, tmp_path, workers=1, retry_failed=True, progress=False, echo=lambda line: None)
    assert (retried.done, retried.failed, retried.computed) == (4, 0, 1) and not store.failures()
    assert not Path(record["log"]).exists() and not list(store.logs.iterdir())  # the stored point's log went with it
    assert {p.name: p.stat().st_mtime_ns for p in (tmp_path / "points").glob("*.parquet") if p.name in stamps} == stamps


def test_status_names_manifest_entries_of_unknown_experiments(toy, tmp_path, capsys):
    run_sweep(toy, tmp_path, workers=1, progress=False, echo=lambda line: None)
    store = Store(tmp_path)
    store.add_to_manifest({"0123456789abcdef": dict(experiment="nope", point={}, seed=0)})
    assert main(["status", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "4 done / 5 total, 0 failed, 1 not run" in out
    assert out.splitlines()[-1] == ("  1 manifest entry not run by sweep run: experiment(s) 'nope' not in sweep list "
                                    "(a claim's point is computed by verify --store; remove any other from "
                                    "_sweep/manifest.json)")


def test_rows_carry_point_id_seed_backend_and_version_and_are_the_same_in_any_order(toy, tmp_path):
    run_sweep(toy, tmp_path / "a", workers=1, progress=False, echo=lambda line: None)
    reverse = parse_spec(dict(experiment="toy", draws=3, axes=dict(x=[4.0, 2.0, 1.0, 0.5])), "toy")
    run_sweep(reverse, tmp_path / "b", workers=1, progress=False, echo=lambda line: None)
    a, b = Store(tmp_path / "a").table(), Store(tmp_path / "b").table()
    pd.testing.assert_frame_equal(a, b)
    assert len(a) == 12 and a["point_id"].nunique() == 4 and a["seed"].nunique() == 4
    assert (a["backend"] == "numpy").all() and (a["package_version"] == "0.1.0").all()
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "a" / "points").sort_values(["point_id", "instance"])
                                  .reset_index(drop=True), a)


def test_point_id_changes_with_parameters_version_and_seed():
    base = point_id("toy", 1, {"x": 1.0}, 0)
    assert base == point_id("toy", 1, {"x": 1.0}, 0)
    assert len({base, point_id("toy", 2, {"x": 1.0}, 0), point_id("toy", 1, {"x": 1.5}, 0),
                point_id("toy", 1, {"x": 1.0}, 1), point_id("other", 1, {"x": 1.0}, 0)}) == 5


def test_a_stored_point_is_not_recomputed_and_partial_files_are_never_read(toy, tmp_path):
    (task,) = plan(parse_spec(dict(experiment="toy", fixed=dict(x=1.0)), "toy"), Store(tmp_path))
    assert compute_point(task)[1] == "done"
    stored = tmp_path / "points" / f"{task.pid}.parquet"
    stamp = stored.stat().st_mtime_ns
    FLAKY.add(1.0)  # would raise if it ran again
    assert compute_point(task) == (task.pid, "stored", 0.0, None) and stored.stat().st_mtime_ns == stamp
    partial = tmp_path / "points" / f".{task.pid}.123.abcd.tmp"
    partial.write_bytes(b"PAR1 half a file")
    store = Store(tmp_path)
    assert store.done() == {task.pid} and len(store.table()) == 2 and len(pd.read_parquet(tmp_path / "points")) == 2
    assert store.clean() == 1 and not partial.exists()


def _killed_mid_run(spec_path, store):
    """Run the CLI on ``spec_path`` in its own process group and SIGKILL it once two points are stored."""
    proc = subprocess.Popen([sys.executable, "-m", "transfertheory.sweep", "run", str(spec_path), "--store", str(store),
                             "--workers", "1", "--no-progress"], cwd=ROOT, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while len(list(store.glob("points/*.parquet"))) < 2 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    return len(list(store.glob("points/*.parquet")))


def test_a_sweep_killed_with_sigkill_and_rerun_equals_an_uninterrupted_one(tmp_path):
    spec_path = _write(tmp_path / "linear.toml", LINEAR_TOML)
    killed = tmp_path / "killed"
    stored_at_kill = _killed_mid_run(spec_path, killed)
    assert 2 <= stored_at_kill < 12, "the sweep must be killed in the middle"
    assert main(["run", str(spec_path), "--store", str(killed), "--workers", "1", "--no-progress"]) == 0
    spec = parse_spec(parse_spec.__globals__["load_toml"](spec_path), "linear")
    reference = run_sweep(spec, tmp_path / "whole", workers=1, progress=False, echo=lambda line: None)
    assert reference.done == 12
    resumed, whole = Store(killed).table(), Store(tmp_path / "whole").table()
    assert not resumed.duplicated(["point_id", "method", "draw"]).any()
    pd.testing.assert_frame_equal(resumed, whole, check_exact=True)
    assert not list(killed.glob("points/.*.tmp"))  # the rerun cleaned what the killed writer left


def test_two_local_workers_give_the_rows_of_one(tmp_path):
    spec = _spec(LINEAR_TOML, tmp_path, overrides={"theta": 0.5})
    assert run_sweep(spec, tmp_path / "two", workers=2, progress=False, echo=lambda line: None).done == 3
    run_sweep(spec, tmp_path / "one", workers=1, progress=False, echo=lambda line: None)
    pd.testing.assert_frame_equal(Store(tmp_path / "two").table(), Store(tmp_path / "one").table(), check_exact=True)


# --------------------------------------------------------------------------- bad specs: one line, nothing runs


@pytest.mark.parametrize("text, message", [
    ('experiment = "nope"\n', "experiment: unknown experiment 'nope'"),
    ('experiment = "faf_linear"\n[axes]\ngamma = [0.5, -1]\n', r"axes.gamma: gamma must be in (0, inf), got -1"),
    ('experiment = "faf_linear"\n[axes]\ngamma = []\n', "axes.gamma: empty axis"),
    ('experiment = "faf_linear"\n[axes]\ngamma = { start = 0.5, stop = 1, num = 0 }\n', "axes.gamma: empty axis"),
    ('experiment = "faf_linear"\n[axes]\ngamma = [0.5,\n', "TOML syntax error"),
    ('experiment = "faf_linear"\n[axis]\ngamma = [0.5]\n', "axis: unknown field"),
    ('experiment = "faf_linear"\n[fixed]\ngama = 0.5\n', "fixed.gama: unknown parameter 'gama'"),
    ('experiment = "faf_linear"\n[fixed]\nmethods = ["ridge"]\n', "fixed.methods: methods must be one of"),
    ('experiment = "faf_linear"\n[axes]\ntheta = { start = 0, stop = 1 }\n', "axes.theta: a range needs start"),
    ('experiment = "faf_linear"\ndraws = 0\n', "draws: draws must be an integer >= 1, got 0"),
    ('experiment = "faf_linear"\n[fixed]\ngamma = 0.5\n[axes]\ngamma = [1.0]\n', "axes.gamma: also in fixed"),
    # a profile is checked whether it is chosen or not
    ('experiment = "faf_surface"\n[profiles.paper]\nfixd = { d = 5 }\n', "profiles.paper.fixd: unknown field"),
    ('experiment = "faf_linear"\n[profiles.paper]\naxes = { gama = [1] }\n',
     "profiles.paper.axes.gama: unknown parameter 'gama'"),
    ('experiment = "faf_linear"\n[profiles.paper]\nfixed = { d = -5 }\n', "profiles.paper.fixed.d: d must be"),
    ('experiment = "faf_linear"\n[profiles.paper]\ndraws = 0\n', "profiles.paper.draws: draws must be an integer"),
    ('experiment = "faf_linear"\n[profiles.paper]\naxes = { theta = { start = 0, num = 2 } }\n',
     "profiles.paper.axes.theta: a range needs start"),
    ('experiment = "faf_linear"\n[profiles.paper]\naxes = { gamma = [0.5, -1] }\n',
     "profiles.paper.axes.gamma: gamma must be in (0, inf), got -1"),
])
def test_a_bad_spec_is_one_line_naming_the_field_before_anything_runs(tmp_path, capsys, text, message):
    store = tmp_path / "store"
    code = main(["run", str(_write(tmp_path / "bad.toml", text)), "--store", str(store)])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: ") and err.count("\n") == 1 and message in err
    assert not store.exists()


@pytest.mark.parametrize("argv, message", [
    (["run", "faf_fig99", "--store", "S"], "unknown sweep 'faf_fig99'"),
    (["run", "faf_fig1", "--store", "S", "--profile", "huge"], "profile: unknown profile 'huge'"),
    (["run", "faf_fig1", "--store", "S", "--set", "sigma=-0.5"], "--set sigma: sigma must be in [0, inf)"),
    (["run", "faf_fig1", "--store", "S", "--set", "sigma"], "--set: expected KEY=VALUE"),
    (["status", "no/such/store"], "no store at no/such/store"),
])
def test_cli_usage_errors_exit_2_with_one_line(tmp_path, capsys, monkeypatch, argv, message):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and not (tmp_path / "S").exists()


def test_cli_run_status_table_and_exit_code_1_on_failure(tmp_path, capsys):
    spec = _write(tmp_path / "s.toml", 'experiment = "faf_linear"\ndraws = 1\n[fixed]\nd = 8\n'
                  '[axes]\ngamma = [0.25, 0.5]\n')  # n = 2 < 3 for linear transfer: that point raises
    store = tmp_path / "store"
    assert main(["run", str(spec), "--store", str(store), "--workers", "1", "--no-progress"]) == 1
    out = capsys.readouterr().out
    assert "2 points, 0 in the store" in out and "estimated" in out and "1/2 points done, 1 failed" in out
    assert "n must be" in out or "n = round" in out
    assert main(["status", str(store)]) == 0
    assert "1 done / 2 total, 1 failed, 0 not run" in capsys.readouterr().out
    assert main(["table", str(store), "--out", str(tmp_path / "t.csv")]) == 0
    table = pd.read_csv(tmp_path / "t.csv")
    assert len(table) == 2 and set(table["gamma"]) == {0.5}
    assert main(["table", str(store), "--out", str(tmp_path / "t.json")]) == 2


def test_the_time_estimate_comes_from_completed_points_only(tmp_path):
    """A new store has no estimate; a failed point's time says nothing of a completed one's."""
    spec = _spec('experiment = "faf_linear"\ndraws = 1\n[fixed]\nd = 8\n[axes]\ngamma = [0.25, 0.5]\n', tmp_path)
    lines = []  # γ = 0.25: n = 2 < 3 for linear transfer, that point fails
    report = run_sweep(spec, tmp_path / "store", workers=1, progress=False, echo=lines.append)
    assert (report.done, report.failed) == (1, 1)
    assert lines[1] == "estimated time: unknown (no timed point in the store yet: see the progress bar's ETA)"
    lines.clear()
    run_sweep(spec, tmp_path / "store", workers=1, retry_failed=True, progress=False, echo=lines.append)
    assert lines[1].startswith("estimated ") and lines[1].endswith(" per point, median of 1 stored points)")


def test_the_progress_bar_is_drawn_only_on_a_terminal_unless_asked_for(toy, tmp_path, capsys):
    """stderr is not a terminal here (captured, as when redirected to a file): by default no bar — neither while
    points run nor the empty bar of a run with nothing left to do — while ``progress=True`` still draws one."""
    spec = _write(tmp_path / "toy.toml", 'experiment = "toy"\ndraws = 2\n[axes]\nx = [0.5, 1.0]\n')
    for _ in range(2):  # the second run finds every point stored
        assert main(["run", str(spec), "--store", str(tmp_path / "cli"), "--workers", "1"]) == 0
        assert capsys.readouterr().err == ""
    for _ in range(2):
        run_sweep(toy, tmp_path / "api", workers=1, echo=lambda line: None)
        assert capsys.readouterr().err == ""
    run_sweep(toy, tmp_path / "api", workers=1, progress=True, echo=lambda line: None)
    assert "point" in capsys.readouterr().err


def test_list_names_every_experiment_and_named_sweep_with_sizes(capsys):
    assert main(["list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(experiments()) + len(NAMED_SWEEPS)
    assert any(line.startswith("sweep      faf_fig1") and "quick 21 points, paper 21 points" in line for line in lines)


@pytest.mark.parametrize("name", sorted(NAMED_SWEEPS))
def test_every_named_sweep_has_valid_quick_and_paper_profiles(name):
    for profile in ("quick", "paper"):
        spec = parse_spec(NAMED_SWEEPS[name], name, profile)
        assert len(spec.points()) == spec.size() >= 3


def test_interrupt_exits_130_and_keeps_completed_points(toy, tmp_path, monkeypatch, capsys):
    import transfertheory.sweep.engine as cli  # the command line imports run_sweep from it when it runs

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt
    monkeypatch.setattr(cli, "run_sweep", interrupted)
    assert main(["run", "faf_fig1", "--store", str(tmp_path)]) == 130
    assert capsys.readouterr().err == "interrupted\n"


def test_the_backend_variable_is_checked_like_every_command_line_before_anything_runs(tmp_path, capsys,
                                                                                      monkeypatch):
    import transfertheory.sweep.engine as cli

    monkeypatch.setenv("TRANSFERTHEORY_BACKEND", "bogus")
    monkeypatch.setattr(cli, "run_sweep", lambda *a, **k: pytest.fail("a point ran"))
    assert main(["run", "faf_fig1", "--store", str(tmp_path / "s")]) == 3
    assert "bogus" in capsys.readouterr().err and not (tmp_path / "s").exists()


def test_unwritable_store_and_table_out_are_refused_before_any_work(tmp_path, capsys, monkeypatch):
    import transfertheory.sweep.engine as cli

    monkeypatch.setattr(cli, "run_sweep", lambda *a, **k: pytest.fail("a point ran"))
    afile = tmp_path / "afile"
    afile.write_text("x")
    assert main(["run", "faf_fig1", "--store", str(afile)]) == 2
    assert "cannot write --store" in capsys.readouterr().err
    monkeypatch.setattr(Store, "table", lambda self: pytest.fail("the store was read"))
    Store(tmp_path / "store").create()
    (tmp_path / "folder.csv").mkdir()
    for out in (tmp_path / "folder.csv", afile / "t.csv"):  # a folder; under a file
        assert main(["table", str(tmp_path / "store"), "--out", str(out)]) == 2
        assert "cannot write --out" in capsys.readouterr().err


def test_the_documented_spec_parses_with_and_without_its_profile(tmp_path):
    text = (ROOT / "docs" / "sweeps.md").read_text(encoding="utf-8")
    block = text.split("```toml\n", 1)[1].split("```", 1)[0]
    base = _spec(block, tmp_path)
    paper = _spec(block, tmp_path, profile="paper")
    assert base.size() == paper.size() == 12
    assert (base.fixed["d"], base.fixed["draws"]) == (32, 10)
    assert (paper.fixed["d"], paper.fixed["draws"], paper.fixed["sigma"]) == (500, 20, 0.2)
    assert paper.axes["theta"] == (0.2, 0.8, 1.4)


def test_an_unusable_backend_is_exit_3_before_anything_runs(tmp_path, capsys, monkeypatch):
    from transfertheory import backend

    if backend.cupy_available():
        pytest.skip("CuPy is usable here")
    assert main(["run", "faf_fig1", "--store", str(tmp_path / "s"), "--backend", "cupy"]) == 3
    assert capsys.readouterr().err.count("\n") == 1 and not (tmp_path / "s").exists()


def test_an_interrupted_local_run_stops_its_worker_processes_at_once(tmp_path):
    """SIGINT to the run process alone, while its workers compute points of a minute: it exits 130 at once."""
    spec_path = _write(tmp_path / "slow.toml", 'experiment = "faf_linear"\ndraws = 40\n[fixed]\ngamma = 1.5\n'
                       '[axes]\nd = [6, 500, 501]\n')  # a quick point, then two slow ones
    store = tmp_path / "store"
    proc = subprocess.Popen([sys.executable, "-m", "transfertheory.sweep", "run", str(spec_path), "--store",
                             str(store), "--workers", "2", "--no-progress"], cwd=ROOT, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not list(store.glob("points/*.parquet")) and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(2)  # the workers have the two slow points
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130 and err.startswith("interrupted\n")
    assert len(list(store.glob("points/*.parquet"))) == 1


def test_the_merlin_sweep_integrates_with_the_figure_and_claims_tolerances():
    from transfertheory.sim.merlin import STUDY_TOLERANCES
    from transfertheory.sweep.named import NAMED_SWEEPS

    fixed = NAMED_SWEEPS["merlin"]["fixed"]
    assert {key: fixed[key] for key in STUDY_TOLERANCES} == STUDY_TOLERANCES


def test_the_faf_fig4_sweeps_chunks_are_the_figures_experiment_rows_bit_identical(tmp_path):
    """The named sweep faf_fig4 splits the figure's run into chunks of one teacher (and at the paper size blocks of
    its data sets) drawn from the figure's seed: its table holds the rows of the figure's own experiment, exactly."""
    from transfertheory.figures.catalog import get_figure
    from transfertheory.sim.relu_teacher import ROW_KEYS, run_transfer_experiment

    spec = parse_spec(NAMED_SWEEPS["faf_fig4"], "faf_fig4", profile="quick")
    assert spec.size() == 4  # one point per teacher
    run_sweep(spec, tmp_path / "fig4", workers=1, progress=False, echo=lambda line: None, backend="numpy")
    chunks = Store(tmp_path / "fig4").table()
    p = dict(get_figure("faf_fig4").profiles["quick"])
    whole = run_transfer_experiment(p["d"], p["m"], p["m_star"], p["mus"], p["ns"], teachers=p["teachers"],
                                    draws=p["draws"], methods=("scratch", "linear", "linear_minnorm"),
                                    flow={"max_time": p["max_time"]},
                                    pretrain_flow={"max_time": p["pretrain_max_time"]},
                                    linear_flow={"max_time": 1e30}, backend="numpy", seed=0)
    columns = [c for c in whole.columns if c not in ("mu", "d", "m", "m_star")]  # point parameters are text there
    chunks = chunks.assign(mu=chunks["mu"].astype(float)).sort_values(list(ROW_KEYS), ignore_index=True)
    pd.testing.assert_frame_equal(chunks[columns + ["mu"]], whole[columns + ["mu"]], check_exact=True,
                                  check_dtype=False)
    paper = parse_spec(NAMED_SWEEPS["faf_fig4"], "faf_fig4", profile="paper")
    assert paper.size() == 100 and {p["draws"] for p in paper.points()} == {10}
