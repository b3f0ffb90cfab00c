"""Smoke tests of the benchmark scripts: they run and print their reports (no timing assertions)."""
import configparser
import importlib.util
import json
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from transfertheory import backend

pytestmark = pytest.mark.meta  # each test runs a benchmark script in a fresh process

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "benchmarks", "bench_deep_linear.py")


def _run(*args, timeout=120, script=SCRIPT):
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    return subprocess.run([sys.executable, script, *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout)


def test_help():
    out = _run("--help")
    assert out.returncode == 0, out.stderr
    for option in ("--d", "--draws", "--steps", "--eta", "--backend", "--seed", "--quick", "--fig1", "--csv"):
        assert option in out.stdout


def test_quick_run_prints_ratio_and_writes_csv(tmp_path):
    csv = tmp_path / "bench.csv"
    out = _run("--quick", "--d", "12", "--draws", "3", "--steps", "300", "--repeat", "1", "--csv", str(csv))
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    assert "ratio baseline/simulator:" in out.stdout
    assert "smoke run" in out.stdout and "target >=" not in out.stdout  # no speed verdict from a smoke run
    assert "identical task vectors and draw seeds in both implementations: yes" in out.stdout
    assert "where the simulator's time goes" in out.stdout
    assert "per instance-evaluation:" in out.stdout and "the floor (target <= 2x)" in out.stdout
    assert csv.exists() and (tmp_path / "bench_summary.csv").exists()


def test_scaling_table_prints_cost_against_the_floor_and_the_exponent(tmp_path):
    csv = tmp_path / "scaling.csv"
    out = _run("--scaling", "8", "16", "--draws", "2", "--csv", str(csv))
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    assert "cost per instance-evaluation against d" in out.stdout
    assert "fitted exponent, cost ∝ d^p over all d (8 … 16): simulator p = " in out.stdout
    table = pd.read_csv(csv)
    assert list(table.d) == [8, 16] and (table.floor_us > 0).all() and (table.evaluations > 0).all()


def test_quick_fig1_path_runs():
    out = _run("--fig1", "--quick", "--d", "8", "--draws", "2", "--fig1-grid", "2")
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    assert "fig1 time:" in out.stdout


@pytest.mark.parametrize("bad", [["--draws", "1"], ["--d", "0"]])
def test_bad_arguments_exit_2(bad):
    assert _run(*bad).returncode == 2


def test_unusable_cupy_backend_is_a_one_line_error():
    if backend.cupy_available():
        pytest.skip("a GPU is available here")
    out = _run("--backend", "cupy", "--quick")
    assert out.returncode == backend.EXIT_BACKEND_UNAVAILABLE
    assert out.stderr.startswith("error: backend 'cupy' requested but unusable") and out.stderr.count("\n") == 1


def test_integrator_accuracy_table():
    out = _run("--d", "8", "--draws", "2", script=os.path.join(ROOT, "benchmarks", "integrator_accuracy.py"))
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    rows = [line for line in out.stdout.splitlines() if line.startswith("| 0.") or line.startswith("| 1e")]
    assert len(rows) == 4  # the reference and three settings


def test_finetune_limit_accuracy_table():
    out = _run("--d", "12", "--draws", "2", "--rtols", "1e-3", "1e-4",
               script=os.path.join(ROOT, "benchmarks", "finetune_limit_accuracy.py"))
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    rows = [line.split("|") for line in out.stdout.splitlines() if line.startswith("| 0.")]
    assert len(rows) == 2 and all(float(row[5]) > 0 for row in rows)  # one per rtol; the largest |error| > 0


def test_mean_statistic_calibration_table():
    script = os.path.join(ROOT, "benchmarks", "mean_statistic_calibration.py")
    out = _run("--d", "12", "--ns", "4", "20", "--draws", "5", "--reps", "50", script=script)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    rows = [line.split("|") for line in out.stdout.splitlines() if line.startswith("| 4 ") or line.startswith("| 20 ")]
    assert len(rows) == 2 and all(0 <= float(row[2]) <= 1 for row in rows)
    assert _run("--method", "scratch", script=script).returncode == 2  # scratch has no T


def test_relu_teacher_benchmark_quick():
    out = _run("--quick", script=os.path.join(ROOT, "benchmarks", "bench_relu_teacher.py"))
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    assert out.stdout.count("ratio sampled/exact") == 4 and "pretrained t = 100" in out.stdout
    assert _run("--d", "0", script=os.path.join(ROOT, "benchmarks", "bench_relu_teacher.py")).returncode == 2


def test_bench_merlin_quick_prints_both_tables():
    script = os.path.join(ROOT, "benchmarks", "bench_merlin.py")
    out = _run("--quick", script=script)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    assert "smoke run" in out.stdout and "| merlin |" in out.stdout and "| S | λ_h |" in out.stdout
    assert _run("--k", "1", script=script).returncode == 2


def test_merlin_stage_cap_counts_every_gradient_call_and_compares_outcomes():
    """The stage-cap study's instruments on a small MeRLin problem: the wrapped objective counts every instance
    the integrator evaluates (its own count, spectral-radius evaluations included), the original method is back
    afterwards, and the outcome comparison names the columns that moved."""
    spec = importlib.util.spec_from_file_location("merlin_stage_cap",
                                                  os.path.join(ROOT, "benchmarks", "merlin_stage_cap.py"))
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    Q = bench.Q
    original = Q.Objective.value_and_grad
    X, y = Q.target_sets(3, 4, 2, 5)
    problem = Q.merlin_problem(X, y, 3, 0.1, 2, 2, 6)
    with bench.counted_calls() as counts:
        trained = Q.train(problem.objective, problem.start, **Q.STUDY_TOLERANCES)
    assert Q.Objective.value_and_grad is original
    assert counts["evaluations"] == trained.evaluations and 0 < counts["calls"] < counts["evaluations"]
    frame = pd.DataFrame({"target_loss": [0.5, 1e-4], **{c: [1, 2] for c in bench.DISCRETE}})
    assert bench.outcome_change(frame, frame) == "same; target loss within 0.0e+00"
    moved = frame.assign(restarts_needed=[1, 3], target_loss=[0.5, 2e-4])
    assert bench.outcome_change(frame, moved) == "changed: restarts_needed 1; target loss within 1.0e+00"


def test_merlin_success_settings_runs_a_small_setting():
    out = _run("--draws", "4", "--restarts", "2", script=os.path.join(ROOT, "benchmarks", "merlin_success_settings.py"))
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    assert "success " in out.stdout and "some restart on e1" in out.stdout


def test_bench_ntk_quick_against_the_per_pair_loop():
    out = _run("--quick", "--reference", "loop", "--loop-pairs", "500", script=os.path.join(ROOT, "benchmarks",
                                                                                          "bench_ntk.py"))
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    assert "ratio reference/relu_kernels:" in out.stdout and "smoke run: no speed verdict" in out.stdout
    relative = float(out.stdout.split("max relative difference")[1].split()[0].rstrip(";"))
    assert relative < 1e-12
    assert _run("--n", "0", script=os.path.join(ROOT, "benchmarks", "bench_ntk.py")).returncode == 2


def _load_bench_ntk():
    spec = importlib.util.spec_from_file_location("bench_ntk", os.path.join(ROOT, "benchmarks", "bench_ntk.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


BROKEN_NEURAL_TANGENTS = "raise AttributeError(\"module 'jax' has no attribute 'linear_util'\")\n"


@pytest.mark.parametrize("failure", ["missing", "incompatible with JAX"])
def test_bench_ntk_fallback_to_the_loop_is_a_warning_naming_the_working_pins(failure, tmp_path, monkeypatch, capsys):
    """Neural Tangents absent, or installed but failing to import (0.6.5 with a current JAX raises AttributeError):
    the benchmark says so on stderr, with the error and the versions that work, before using the per-pair loop."""
    bench_ntk = _load_bench_ntk()
    monkeypatch.setenv("XLA_FLAGS", "")
    for package, init in (("jax", ""), ("neural_tangents", BROKEN_NEURAL_TANGENTS)):  # a stand-in JAX imports
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text(init)
        monkeypatch.setitem(sys.modules, package, None)  # so that the test's imports are undone afterwards
        monkeypatch.delitem(sys.modules, package)
    monkeypatch.syspath_prepend(str(tmp_path))
    if failure == "missing":
        monkeypatch.setitem(sys.modules, "neural_tangents", None)  # `import neural_tangents` raises ModuleNotFoundError
    assert bench_ntk.main(["--quick", "--n", "8", "--depth", "2", "--loop-pairs", "20"]) == 0
    captured = capsys.readouterr()
    warning = captured.err.splitlines()
    assert warning[0].startswith("bench_ntk: WARNING: Neural Tangents cannot be imported (")
    assert ("ModuleNotFoundError" if failure == "missing" else "AttributeError: module 'jax'") in warning[0]
    assert bench_ntk.NEURAL_TANGENTS_PINS in warning[0] and "jax==0.4.30" in bench_ntk.NEURAL_TANGENTS_PINS
    assert warning[1].startswith("bench_ntk: WARNING: falling back to the per-pair loop")
    assert "per-pair loop (plain Python" in captured.out


def test_the_neural_tangents_extra_pins_the_versions_the_benchmark_names():
    config = configparser.ConfigParser()
    config.read(os.path.join(ROOT, "setup.cfg"))
    extra = config["options.extras_require"]["neural-tangents"].split()
    assert extra == _load_bench_ntk().NEURAL_TANGENTS_PINS.split()


def test_bench_ntk_empirical_kernels_against_neural_tangents():
    pytest.importorskip("neural_tangents")
    out = _run("--empirical", "16", "--n", "6", "--depth", "2", "--networks", "2", "--repeats", "1",
               script=os.path.join(ROOT, "benchmarks", "bench_ntk.py"))
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    assert "ratio reference/empirical_kernels:" in out.stdout
    assert float(out.stdout.split("max relative difference")[1].split()[0]) < 1e-12


def test_tdr_benchmark_quick(tmp_path):
    path = tmp_path / "ntk.csv"
    out = _run("--quick", "--csv", str(path), script=os.path.join(ROOT, "benchmarks", "bench_tdr.py"))
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    assert out.stdout.count("ratio GD/trainer") == 2 and path.read_text().startswith("width,")
    bad = _run("--widths", "3", script=os.path.join(ROOT, "benchmarks", "bench_tdr.py"))
    assert bad.returncode == 2


def test_bench_mtl_fig1_quick_batched_equals_the_loop():
    script = os.path.join(ROOT, "benchmarks", "bench_mtl_fig1.py")
    out = _run("--quick", script=script)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    assert "smoke run: no speed verdict" in out.stdout
    row = [line for line in out.stdout.splitlines() if line.startswith("| 2 |")]
    assert len(row) == 1 and float(row[0].split("|")[-2]) < 1e-12
    assert _run("--test-tasks", "0", script=script).returncode == 2


def test_bench_cli_quick_times_the_command_lines_with_the_machine():
    script = os.path.join(ROOT, "benchmarks", "bench_cli.py")
    out = _run("--quick", "--steps", script=script)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    lines = out.stdout.splitlines()
    assert lines[0].startswith("machine: ") and "load average" in lines[0] and "BLAS threads" in lines[0]
    timed = [line.split() for line in lines if line.startswith("transfertheory.")]
    assert [row[0] for row in timed] == ["transfertheory.verify", "transfertheory.figures", "transfertheory.phase_diagram"]
    assert all(float(row[-2]) > 0 and float(row[-1]) > 0 for row in timed)
    steps = lines[lines.index(next(line for line in lines if "step by step" in line)) + 1:-1]
    assert [line.split()[0] for line in steps[:3]] == ["interpreter", "import", "import"]
    assert steps[-4].startswith("interpreter finalization") and steps[-3].startswith("the whole process")
    assert all(line.startswith("  of which garbage collection") for line in steps[-2:])
    cpu = [float(line.split()[-1]) for line in steps]
    # one repeat: the steps add up to the whole process, up to the printed rounding (half a millisecond per number)
    assert all(value >= 0 for value in cpu) and sum(cpu[:-3]) == pytest.approx(cpu[-3], abs=5e-4 * (len(cpu) - 2))
    assert sum(cpu[-2:]) <= cpu[-3]
    assert _run("--repeats", "0", script=script).returncode == 2


def test_claims_cpu_benchmark_prints_the_most_expensive_claims_and_writes_csv(tmp_path):
    csv = tmp_path / "claims.csv"
    out = _run("-k", "faf.eq13", "--top", "2", "--csv", str(csv), script=os.path.join(ROOT, "benchmarks", "bench_claims.py"))
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    assert "machine: " in out.stdout and "s CPU in total; the 2 most expensive:" in out.stdout
    table = pd.read_csv(csv)
    assert list(table.columns) == ["claim", "status", "cpu_s", "wall_s", "points"]
    assert len(table) >= 3 and set(table.status) == {"PASS"} and (table.cpu_s >= 0).all()
    assert _run("-k", "no-such-claim", script=os.path.join(ROOT, "benchmarks", "bench_claims.py")).returncode == 2


def test_pretraining_budget_continues_the_flows_and_the_loss_keeps_falling(tmp_path):
    record = tmp_path / "budget.json"
    out = _run("--d", "6", "--m", "12", "--m-star", "4", "--teachers", "2", "--times", "20", "80", "--json", str(record),
               script=os.path.join(ROOT, "benchmarks", "pretraining_budget.py"))
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    rows = json.loads(record.read_text())["rows"]
    assert [row["t"] for row in rows] == [20.0, 80.0] and len(out.stdout.splitlines()) == 2
    early, late = (np.array(row["ratio"]) for row in rows)
    # gradient flow never raises the loss: the continued flow ends below where the first segment did
    assert early.shape == (2,) and (0 < late).all() and (late < early).all() and (early < 1).all()
