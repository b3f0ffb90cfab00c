"""The memory guard (transfertheory._memory): limits, refusals before any work, chunking, honest estimates.

Each simulator's refusal is checked by making its first real work step fail if called (the guard must act at
the public boundary, before allocating), and its estimate against the peak traced by ``tracemalloc`` (NumPy
reports its allocations there) on a small case, after a warm-up call so that lazy imports are not counted.
"""
from __future__ import annotations

import re
import tracemalloc

import numpy as np
import pytest

from transfertheory import _memory
from transfertheory.sim import run_transfer_experiment
from transfertheory.sim.deep_linear import experiment as deep_linear_experiment
from transfertheory.sim.deep_linear.training import TARGET_FLOW

MEMORY_WORDS = ("needs about", "max_memory", _memory.ENV_VAR)


def _forbid(monkeypatch, module, name):
    """Make ``module.name`` raise if called: the guard must refuse before this work starts."""
    def forbidden(*args, **kwargs):
        raise AssertionError(f"{name} was called: the memory guard did not refuse before the work")

    monkeypatch.setattr(module, name, forbidden)


def _traced_peak(function) -> int:
    """Peak bytes traced by tracemalloc while ``function()`` runs (after one warm-up call)."""
    function()
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        function()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _assert_refusal(error: pytest.ExceptionInfo, *names):
    message = str(error.value)
    for word in MEMORY_WORDS + names:
        assert word in message, f"{word!r} missing from: {message}"


# --------------------------------------------------------------------------- the helper


@pytest.mark.parametrize("text, expected", [("64G", 64 * 2**30), ("512 MiB", 512 * 2**20), ("1.5T", int(1.5 * 2**40)),
                                            ("2e9", 2 * 10**9), (4096, 4096), ("100k", 100 * 1024)])
def test_parse_memory_reads_bytes_and_binary_units(text, expected):
    assert _memory.parse_memory(text) == expected


@pytest.mark.parametrize("bad", ["lots", "-1G", 0, -5, True, None, float("nan"), "1X"])
def test_parse_memory_rejects_bad_sizes_naming_the_parameter(bad):
    with pytest.raises(ValueError, match="max_memory must be a positive number of bytes"):
        _memory.parse_memory(bad)


def test_without_an_explicit_limit_the_limit_is_the_memory_available(monkeypatch):
    monkeypatch.delenv(_memory.ENV_VAR, raising=False)
    available, source = _memory.memory_limit(None, np)
    assert source == "available memory" and (available is None or available > 2**20)


def test_off_linux_the_limit_falls_back_to_free_pages_and_then_to_none(monkeypatch):
    def unreadable(*args, **kwargs):
        raise OSError("no /proc here")

    monkeypatch.delenv(_memory.ENV_VAR, raising=False)
    monkeypatch.setattr(_memory, "open", unreadable, raising=False)  # shadows the builtin in the module
    monkeypatch.setattr(_memory.os, "sysconf", {"SC_AVPHYS_PAGES": 1000, "SC_PAGE_SIZE": 4096}.__getitem__)
    assert _memory.memory_limit() == (4096000, "available memory")
    monkeypatch.setattr(_memory.os, "sysconf", unreadable)
    assert _memory.memory_limit() == (None, "available memory")
    assert _memory.check_memory(2**50, what="simulate", params={"d": 2}, max_memory=None) is None  # no limit known


def test_device_arrays_are_held_to_the_free_device_memory(monkeypatch):
    from types import SimpleNamespace

    from transfertheory import backend

    runtime = SimpleNamespace(memGetInfo=lambda: (3 * 2**30, 8 * 2**30))  # (free, total)
    fake_cupy = SimpleNamespace(__name__="cupy", cuda=SimpleNamespace(runtime=runtime),
                                get_default_memory_pool=lambda: SimpleNamespace(free_bytes=lambda: 2**30))
    assert backend.device_free_memory(fake_cupy) == 4 * 2**30
    assert backend.device_free_memory(np) is None
    monkeypatch.delenv(_memory.ENV_VAR, raising=False)
    assert _memory.memory_limit(None, fake_cupy) == (4 * 2**30, "free device memory")
    with pytest.raises(ValueError, match="more than the 4 GiB free device memory"):
        _memory.check_memory(5 * 2**30, what="simulate", params={"d": 2}, xp=fake_cupy)


def test_check_memory_names_parameters_estimate_and_limit():
    with pytest.raises(ValueError) as error:
        _memory.check_memory(3 * 2**40, what="simulate", params={"d": 10**6, "m": 4}, max_memory="1G")
    message = str(error.value)
    assert "simulate(d=1000000, m=4)" in message and "3 TiB" in message and "1 GiB allowed by max_memory" in message
    assert _memory.check_memory(2**20, what="simulate", params={"d": 2}, max_memory="1G") == 2**30


def test_environment_variable_sets_the_limit_and_the_argument_overrides_it(monkeypatch):
    monkeypatch.setenv(_memory.ENV_VAR, "1M")
    assert _memory.memory_limit() == (2**20, _memory.ENV_VAR)
    with pytest.raises(ValueError, match=f"allowed by {_memory.ENV_VAR}"):
        _memory.check_memory(2**21, what="simulate", params={"d": 2})
    assert _memory.check_memory(2**21, what="simulate", params={"d": 2}, max_memory="1G") == 2**30
    monkeypatch.setenv(_memory.ENV_VAR, "a lot")
    with pytest.raises(ValueError, match=f"environment variable {_memory.ENV_VAR} must be a positive"):
        _memory.memory_limit()


def test_a_guarded_entry_point_vouches_for_the_checks_of_its_parts(monkeypatch):
    monkeypatch.setenv(_memory.ENV_VAR, "1M")
    part = dict(what="part", params={"d": 2})

    @_memory.guarded_entry_point
    def entry(max_memory, part_bytes):
        _memory.check_memory(2**19, what="entry", params={"d": 2}, max_memory=max_memory)
        return _memory.check_memory(part_bytes, **part)

    assert entry("4G", 2**30) == 4 * 2**30  # the part is held to the run's 4 GiB, not to the variable's 1 MiB
    with pytest.raises(ValueError, match="part.*4 GiB allowed by max_memory"):
        entry("4G", 2**33)
    with pytest.raises(ValueError, match=f"part.*1 MiB allowed by {_memory.ENV_VAR}"):
        entry(None, 2**30)  # without max_memory the run's limit is the variable's
    with pytest.raises(ValueError, match=f"reduce d, or set {_memory.ENV_VAR} to allow more"):
        _memory.check_memory(2**30, **part)  # outside a run; a function without a max_memory argument


def test_items_per_chunk_fits_the_limit():
    assert _memory.items_per_chunk(10, 100, 50, None) == 50
    assert _memory.items_per_chunk(10, 100, 50, 200) == 10
    assert _memory.items_per_chunk(10, 100, 5, 10**6) == 5
    assert _memory.items_per_chunk(10, 100, 50, 105) == 1


# --------------------------------------------------------------------------- FaF §3: deep linear networks

DEEP_LINEAR = dict(gammas=[0.5], thetas=[1.0], sigma=0.2, backend="numpy", progress=False)


@pytest.mark.parametrize("sizes, names", [(dict(d=16, draws=10**9), ("draws=1000000000",)),
                                          (dict(d=10**6, draws=1), ("d=1000000",))])
def test_deep_linear_refuses_before_any_work(monkeypatch, sizes, names):
    _forbid(monkeypatch, deep_linear_experiment, "pretrain")
    _forbid(monkeypatch, deep_linear_experiment, "task_vectors")
    with pytest.raises(ValueError) as error:
        run_transfer_experiment(**sizes, **DEEP_LINEAR, max_memory="16G")
    _assert_refusal(error, *names, "16 GiB")


def test_deep_linear_chunks_draws_to_fit_and_gives_the_same_table(monkeypatch):
    kwargs = dict(d=8, gammas=[0.5, 1.0], thetas=[0.5, 1.0], sigma=0.2, draws=3, seed=1, backend="numpy",
                  progress=False)
    whole = run_transfer_experiment(**kwargs)
    plan = deep_linear_experiment._plan(8, [0.5, 1.0], [0.5, 1.0], 0.2, 3, 2, 1e-5, deep_linear_experiment.METHODS,
                                        (0.0,), 1, TARGET_FLOW, None, "gaussian", "exact", None, None)
    fixed, per_draw = deep_linear_experiment._memory_estimate(plan)
    sizes = []
    chunk = deep_linear_experiment._chunk
    monkeypatch.setattr(deep_linear_experiment, "_chunk", lambda p, draws, b: sizes.append(len(draws)) or
                        chunk(p, draws, b))
    chunked = run_transfer_experiment(**kwargs, max_memory=int(fixed + 2.5 * per_draw))
    assert sizes == [2, 2, 2]
    np.testing.assert_array_equal(chunked["risk"], whole["risk"])


def test_deep_linear_refuses_a_chunk_size_that_does_not_fit():
    with pytest.raises(ValueError) as error:
        run_transfer_experiment(d=64, draws=100, chunk_size=100, **DEEP_LINEAR, max_memory="20M")
    _assert_refusal(error, "chunk_size=100", "20 MiB")


def test_deep_linear_estimate_is_within_a_factor_three_of_the_traced_peak():
    plan = deep_linear_experiment._plan(64, [0.5, 1.0], [0.5, 1.0], 0.2, 2, 2, 1e-5, deep_linear_experiment.METHODS,
                                        (0.0,), 0, TARGET_FLOW, None, "gaussian", "exact", None, None)
    fixed, per_draw = deep_linear_experiment._memory_estimate(plan)
    estimate = fixed + 4 * per_draw
    peak = _traced_peak(lambda: run_transfer_experiment(d=64, gammas=[0.5, 1.0], thetas=[0.5, 1.0], sigma=0.2,
                                                        draws=2, backend="numpy", progress=False))
    assert peak / 3 <= estimate <= 3 * peak


# --------------------------------------------------------------------------- MeRLin §5: quadratic networks

QUADRATIC = dict(m=3, k=2, lam=0.1, draws=2, restarts=2, splits=2, flow=dict(rtol=1e-3, gtol=1e-5, max_steps=20),
                 backend="numpy")


def test_quadratic_refuses_the_source_loss_at_large_d_before_any_work(monkeypatch):
    from transfertheory.sim.merlin import experiment

    _forbid(monkeypatch, experiment.A, "pretrain")
    _forbid(monkeypatch, experiment, "target_sets")
    with pytest.raises(ValueError) as error:
        experiment.run_comparison(d=10**6, m=4, k=2, n_targets=[4], lam=0.1, draws=2, max_memory="16G")
    _assert_refusal(error, "run_comparison(d=1000000, m=4, draws=2", "16 GiB")


def test_quadratic_estimate_is_within_a_factor_three_of_the_traced_peak():
    from transfertheory.sim.merlin import experiment

    settings = experiment._validate(64, 3, 2, [6, 8], 0.1, 2, experiment.ALGORITHMS, 0.5, 1.0, 1e-2, 2, 2, 0.5, 0)
    estimate = experiment._memory_estimate(settings, experiment.ALGORITHMS)
    peak = _traced_peak(lambda: experiment.run_comparison(d=64, n_targets=[6, 8], **QUADRATIC))
    assert peak / 3 <= estimate <= 3 * peak


# --------------------------------------------------------------------------- TDR §6: wide two-layer networks


def test_tdr_simulator_refuses_huge_widths_before_drawing_weights(monkeypatch):
    from transfertheory.sim import tdr

    _forbid(monkeypatch, tdr, "_initial_weights")
    data = tdr.task_pair("shared-inputs", 0.5, n=8, d=5)
    with pytest.raises(ValueError) as error:
        tdr.simulate_transfer(*data, [10**9], backend="numpy", max_memory="16G")
    _assert_refusal(error, "widths=[1000000000]", "draws=8", "16 GiB")
    with pytest.raises(ValueError) as error:
        tdr.initial_weights(10**9, 5, 8, max_memory="16G")
    _assert_refusal(error, "initial_weights(width=1000000000, d=5, draws=8)")


def test_tdr_estimate_is_within_a_factor_three_of_the_traced_peak():
    from transfertheory.sim import tdr

    data = tdr.task_pair("shared-inputs", 0.5, n=8, d=5)
    estimate = tdr._memory_estimate([64, 4096], 5, 8, 4, "euler", on_device=False)
    peak = _traced_peak(lambda: tdr.simulate_transfer(*data, [64, 4096], draws=4, backend="numpy",
                                                      flow={"max_steps": 30}))
    assert peak / 3 <= estimate <= 3 * peak


# --------------------------------------------------------------------------- MTL §4: finite-width networks


def _mtl_problem():
    from transfertheory.theory import mtl

    return mtl.synthetic_problem(np.random.default_rng(5), tasks=2, n=4, test_tasks=1, n_support=3, n_query=3)


def test_mtl_study_refuses_huge_widths_before_any_work(monkeypatch):
    from transfertheory.sim.mtl import experiment
    from transfertheory.theory import mtl

    _forbid(monkeypatch, experiment, "kernel_predictions")
    _forbid(monkeypatch, experiment, "init_parameters")
    with pytest.raises(ValueError) as error:
        experiment.finite_width_study(_mtl_problem(), mtl.ReluNetwork(1), [10**9], 4, max_memory="16G")
    _assert_refusal(error, "widths=[1000000000], draws=4", "16 GiB")


def test_mtl_estimate_is_within_a_factor_three_of_the_traced_peak():
    from transfertheory.sim.mtl import experiment
    from transfertheory.theory import mtl

    problem = _mtl_problem()
    estimate = experiment._memory_estimate(problem.tasks[0].shape[1], sum(len(x) for x in problem.tasks),
                                           len(problem.tasks), 1, 2048, 2)
    peak = _traced_peak(lambda: experiment.finite_width_study(problem, mtl.ReluNetwork(1), [2048], 2, lam_tau=0.1))
    assert peak / 3 <= estimate <= 3 * peak


# --------------------------------------------------------------------------- FaF §4: ReLU student–teacher networks

RELU_SMALL = dict(d=10, m=100, m_star=10, mus=[0.0, 0.5], ns=[20, 60], teachers=2, draws=2,
                  methods=("scratch", "linear", "linear_minnorm", "finetune"), flow={"max_time": 5.0},
                  pretrain_flow={"max_time": 5.0},
                  backend="numpy")


def test_relu_experiment_refuses_d_and_m_of_a_million_before_any_work(monkeypatch):
    from transfertheory.sim.relu_teacher import experiment

    _forbid(monkeypatch, experiment, "_teachers")
    with pytest.raises(ValueError) as error:
        experiment.run_transfer_experiment(d=10**6, m=10**6, m_star=10, mus=[0.5], ns=[10], backend="numpy",
                                           max_memory="16G")
    _assert_refusal(error, "d=1000000, m=1000000, m_star=10", "16 GiB")


def test_relu_pretraining_and_training_entry_points_refuse_before_drawing(monkeypatch):
    from transfertheory.sim import relu_teacher
    from transfertheory.sim.relu_teacher import training

    _forbid(monkeypatch, training, "paper_init")
    _forbid(monkeypatch, training, "sphere_flow")
    W_star, c_star = np.ones((1, 3, 4)) / 2, np.ones((1, 3))
    X, y = np.ones((1, 5, 4)), np.ones((1, 5))
    calls = [(relu_teacher.pretrain_source, (W_star, c_star, 10**6, np.random.default_rng(0)), "pretrain_source"),
             (relu_teacher.scratch_training, (X, y, 10**9, np.random.default_rng(0)), "scratch_training"),
             (relu_teacher.train_on_samples, (np.ones((2, 10**5, 1)), np.ones((2, 10**5)), X[..., :1], y),
              "train_on_samples")]
    for function, args, name in calls:
        with pytest.raises(ValueError) as error:
            function(*args, max_memory="100M")
        _assert_refusal(error, name, "100 MiB")


def test_relu_experiment_passes_its_limit_on_to_the_flows(monkeypatch):
    from transfertheory.sim.relu_teacher import experiment

    monkeypatch.setenv(_memory.ENV_VAR, "1M")  # far below the run's needs: only the explicit limit lets it run
    with pytest.raises(ValueError, match=f"allowed by {_memory.ENV_VAR}"):
        experiment.run_transfer_experiment(**RELU_SMALL)
    table = experiment.run_transfer_experiment(**RELU_SMALL, max_memory="1G")
    assert len(table) == 4 * 2 * 2 * 2 * 2


def test_relu_estimate_is_within_a_factor_three_of_the_traced_peak():
    from transfertheory.sim.relu_teacher import experiment

    plan = experiment._plan(10, 100, 10, [0.0, 0.5], [20, 60], 2, 2, RELU_SMALL["methods"], 0, "ones",
                            RELU_SMALL["flow"], RELU_SMALL["pretrain_flow"], None)
    peak = _traced_peak(lambda: experiment.run_transfer_experiment(**RELU_SMALL))
    assert peak / 3 <= experiment._memory_estimate(plan) <= 3 * peak


def test_quadratic_algorithms_refuse_before_drawing_and_run_comparison_passes_its_limit_on(monkeypatch):
    from transfertheory.sim import merlin
    from transfertheory.sim.merlin import algorithms

    _forbid(monkeypatch, algorithms, "random_init")
    with pytest.raises(ValueError) as error:
        merlin.pretrain(10**5, 4, 2, 0.1, 2, 6, np.random.default_rng(0), max_memory="1G")
    _assert_refusal(error, "pretrain(instances=12, d=100000, m=4", "1 GiB")
    monkeypatch.undo()
    monkeypatch.setenv(_memory.ENV_VAR, "1K")  # below every flow: only the explicit limit lets the run go on
    table = merlin.run_comparison(d=4, n_targets=[4], **{**QUADRATIC, "max_memory": "1G"})
    assert set(table["algorithm"]) == set(merlin.ALGORITHMS)


# --------------------------------------------------------------------------- closed forms: Grams of user sizes


def test_relu_kernel_grams_refuse_a_million_units_before_forming_them(monkeypatch):
    from transfertheory.theory import relu
    from transfertheory.theory.relu import kernel

    _forbid(monkeypatch, kernel, "_kernel")
    _forbid(monkeypatch, kernel, "_function_gram")
    W, c = np.ones((10**6, 3)), np.ones(10**6)
    for function, args in ((relu.arccos_kernel, (W, W)), (relu.population_loss, (W, c, W[:5], c[:5])),
                           (relu.population_loss_and_gradients, (W, c, W[:5], c[:5])),
                           (relu.rkhs_projection_norms, (W, W[:5], c[:5]))):
        monkeypatch.setenv(_memory.ENV_VAR, "16G")
        with pytest.raises(ValueError) as error:
            function(*args)
        assert f"{function.__name__}(batch=1, rows=100000" in str(error.value)
        assert "TiB of memory, more than the 16 GiB allowed by" in str(error.value)


def _theory_calls():
    from transfertheory.theory import distances, merlin, ntk, tdr
    from transfertheory.theory.fine_tuning import fine_tune_flow_expectation

    unit = np.random.default_rng(0).standard_normal((1000, 3))
    unit /= np.linalg.norm(unit, axis=1, keepdims=True)
    return [("relu_kernels(len(X)=1000, len(Y)=1000)", ntk.relu_kernels, (unit,)),
            ("two_layer_gram(len(X)=1000, len(Y)=1000)", tdr.two_layer_gram, (unit,)),
            ("sample_source(n=1000, d=1000)", merlin.sample_source, (1000, 1000, 2, 0)),
            ("sample_target(n=1000, d=1000)", merlin.sample_target, (1000, 1000, 0)),
            ("population_loss(batch=1, d=300)", merlin.source_loss, (np.ones(4), np.ones((300, 4)), 2)),
            ("wasserstein1_empirical(len(samples_p)=1000, len(samples_q)=1000)", distances.wasserstein1_empirical,
             (unit[:, 0], unit[:, 1])),
            ("fine_tune_flow_expectation(n=10, d=20, len(theta)=1)", fine_tune_flow_expectation, (10, 20, 1.0, 0.2))]


@pytest.mark.parametrize("index", range(7))
def test_closed_forms_refuse_arrays_above_the_limit(monkeypatch, index):
    """Each forms an O(n²) Gram, an n × d sample or a d × d moment array: refused under a 1 MiB limit."""
    expected, function, args = _theory_calls()[index]
    monkeypatch.setenv(_memory.ENV_VAR, "1M")
    with pytest.raises(ValueError) as error:
        function(*args)
    assert str(error.value).startswith(expected + " needs about ")
    assert f"1 MiB allowed by {_memory.ENV_VAR}" in str(error.value)


# --------------------------------------------------------------------------- command lines


def test_figures_cli_refuses_a_simulation_above_max_memory_in_one_line(monkeypatch, tmp_path, capsys):
    from transfertheory.figures.__main__ import main

    monkeypatch.setenv(_memory.ENV_VAR, "1T")  # the flag overrides it (and the test's teardown restores it)
    assert main(["faf_fig2", "--max-memory", "64K", "--backend", "numpy", "--out", str(tmp_path)]) == 4
    error = capsys.readouterr().err
    assert error.startswith("error: faf_fig2: ") and error.count("\n") == 1 and "64 KiB allowed by" in error


def test_phase_diagram_cli_refuses_a_simulation_above_max_memory_in_one_line(monkeypatch, tmp_path, capsys):
    from transfertheory.phase_diagram import main

    monkeypatch.setenv(_memory.ENV_VAR, "1T")
    code = main(["--simulate", "--max-memory", "1M", "--backend", "numpy", "--resolution", "20", "--out",
                 str(tmp_path)])
    error = capsys.readouterr().err
    assert code == 4 and error.startswith("error: run_transfer_experiment(") and error.count("\n") == 1
    assert "the 1 MiB allowed by --max-memory" in error and error.rstrip().endswith("or raise --max-memory to allow more")


def test_a_limit_set_by_a_flag_is_named_by_it_while_the_variable_holds_it(monkeypatch):
    _memory.set_limit(2**20, "--max-memory")
    assert _memory.memory_limit() == (2**20, "--max-memory")
    monkeypatch.setenv(_memory.ENV_VAR, "2M")  # changed since: the variable's own limit
    assert _memory.memory_limit() == (2 * 2**20, _memory.ENV_VAR)


@pytest.mark.parametrize("module", ["transfertheory.figures.__main__", "transfertheory.phase_diagram",
                                    "transfertheory.verify"])
def test_clis_reject_a_bad_max_memory_as_a_usage_error(module, capsys):
    import importlib

    with pytest.raises(SystemExit) as exit_info:
        importlib.import_module(module).main(["--max-memory", "lots"])
    assert exit_info.value.code == 2 and "--max-memory: must be a positive number of bytes" in capsys.readouterr().err


def test_a_closed_form_checked_before_the_entry_points_own_check_does_not_claim_the_run(monkeypatch):
    """simulate_transfer validates its data through two_layer_gram (a small, unchecked Gram) before its own check."""
    from transfertheory.sim import tdr

    _forbid(monkeypatch, tdr, "_initial_weights")
    data = tdr.task_pair("shared-inputs", 0.5, n=8, d=5)
    with pytest.raises(ValueError, match=r"simulate_transfer\(widths=\[1000000000\]"):
        tdr.simulate_transfer(*data, [10**9], backend="numpy")


def test_lower_level_training_entry_points_refuse_before_any_work(monkeypatch):
    from transfertheory.sim import deep_linear, mtl, tdr
    from transfertheory.sim.deep_linear import training
    from transfertheory.sim.mtl import network as mtl_network
    from transfertheory.theory.mtl import ReluNetwork

    for module, name in ((training, "init_weights"), (training, "integrate_gradient_flow"),
                         (mtl_network, "integrate_gradient_flow"), (mtl_network, "init_parameters"),
                         (tdr, "integrate_gradient_flow")):
        _forbid(monkeypatch, module, name)
    shape = mtl_network.NetworkShape(3, 1024, ReluNetwork(2))
    tasks, labels = [np.ones((4, 3))] * 2, [np.ones((4, 1))] * 2
    calls = [("pretrain(d=100000, depth=2)", deep_linear.pretrain,
              (deep_linear.Architecture(10**5), np.ones(10**5), 1e-5), {}),
             ("train(instances=100, parameters=10000)", deep_linear.train, (None, np.zeros((100, 10**4))),
              dict(rtol=1e-3, gtol=1e-6, max_time=1.0)),
             ("train(networks=2, width=1024, depth=2, heads=2)", mtl.train,
              ("mtl", shape, tasks, labels, np.zeros((2, shape.body_size)), np.zeros((2, shape.head_size))), {}),
             ("random_network_kernels(width=65536, depth=2", mtl.random_network_kernels,
              (ReluNetwork(2), np.ones((4, 3)), 2**16, 4, np.random.default_rng(0)), {}),
             ("train_two_layer(networks=2, largest width=300000, n=8)", tdr.train_two_layer,
              (np.ones((2, 3 * 10**5, 5)), np.ones((2, 3 * 10**5)), np.ones((8, 5)) / 5**0.5, np.zeros(8)), {})]
    for expected, function, args, kwargs in calls:
        with pytest.raises(ValueError) as error:
            function(*args, **kwargs, max_memory="100M")
        assert str(error.value).startswith(expected) and "100 MiB allowed by max_memory" in str(error.value)


def test_every_command_line_answers_a_refusal_with_one_line_and_exit_code_four(monkeypatch, tmp_path, capsys):
    """The limit from the variable (no --max-memory given): cli_support.entry_point answers with one line."""
    from transfertheory.figures.__main__ import main

    monkeypatch.setenv(_memory.ENV_VAR, "64K")
    assert main(["faf_fig4", "--out", str(tmp_path), "--backend", "numpy"]) == 4
    error = capsys.readouterr().err
    assert error.startswith("error: ") and "allowed by" in error and error.count("\n") == 1


# --------------------------------------------------------------------------- the data an experiment generates

HUGE = 10**12


@pytest.mark.parametrize("name, sizes, drawer", [
    ("tdr", {"n": HUGE}, ("transfertheory.sim.tdr", "task_pair")),
    ("tdr", {"d": HUGE}, ("transfertheory.sim.tdr", "task_pair")),
    ("mtl", {"n": HUGE}, ("transfertheory.theory.mtl", "synthetic_problem")),
    ("mtl", {"n_support": HUGE}, ("transfertheory.theory.mtl", "synthetic_problem")),
    ("mtl", {"n_query": HUGE}, ("transfertheory.theory.mtl", "synthetic_problem")),
    ("mtl", {"d": HUGE}, ("transfertheory.theory.mtl", "synthetic_problem")),
    ("mtl", {"tasks": 10**5}, ("transfertheory.theory.mtl", "synthetic_problem")),
    ("mtl", {"tasks": 10**9}, ("transfertheory.theory.mtl", "synthetic_problem"))])
def test_experiments_count_the_data_they_generate_and_refuse_before_drawing_it(monkeypatch, name, sizes, drawer):
    import importlib

    from transfertheory.sim import experiments

    _forbid(monkeypatch, importlib.import_module(drawer[0]), drawer[1])
    with pytest.raises(_memory.MemoryLimitError) as error:
        experiments()[name].run(seed=0, backend="numpy", **sizes)
    field, value = next(iter(sizes.items()))
    assert f"{name}.run(" in str(error.value) and f"{field}={value}" in str(error.value)
    assert "needs about" in str(error.value) and _memory.ENV_VAR in str(error.value)


def test_the_data_generators_refuse_huge_sizes_instead_of_numpys_memory_error():
    from transfertheory.sim import tdr
    from transfertheory.theory import mtl

    calls = [(lambda: tdr.task_pair("shared-inputs", 0.5, n=HUGE), "task_pair(n="),
             (lambda: tdr.task_pair("shared-labels", 0.5, d=HUGE), "task_pair(n=8"),
             (lambda: mtl.synthetic_problem(0, tasks=10**9), "synthetic_problem(tasks=1000000000"),
             (lambda: mtl.synthetic_problem(0, n_query=HUGE), "synthetic_problem("),
             (lambda: mtl.synthetic_task(0, HUGE), "synthetic_task(n=")]
    for call, what in calls:
        with pytest.raises(_memory.MemoryLimitError, match=re.escape(what)):
            call()


def test_experiment_estimates_of_their_data_are_within_a_factor_three_of_the_traced_peak():
    from transfertheory.sim import tdr
    from transfertheory.sim.mtl import experiment
    from transfertheory.theory import mtl

    estimate = tdr._task_pair_bytes(20_000, 50)
    assert _traced_peak(lambda: tdr.task_pair("shared-labels", 0.5, n=20_000, d=50)) / 3 <= estimate
    sizes = dict(tasks=20, n=2000, test_tasks=1, n_support=500, n_query=500, d=50)
    peak = _traced_peak(lambda: mtl.synthetic_problem(0, **sizes))
    assert peak / 3 <= mtl._problem_bytes(**sizes) <= 3 * peak
    assert experiment._mtl_memory(dict(experiment.MTL_NETWORKS.point(), **sizes, depth=1), False)[0] > peak


def test_a_chunk_of_pretrainings_skips_the_earlier_students_in_bounded_memory_and_bit_identically():
    from transfertheory.sim.relu_teacher import training as pretraining
    from transfertheory.sim.relu_teacher.network import paper_init

    first, m, d = 2**16, 40, 8  # the skipped students: 168 MB drawn at once
    whole = paper_init(m, d, np.random.default_rng(4), batch=(first + 2,))[0][first:]
    rng = np.random.default_rng(4)
    pretraining._skip_normals(rng, first * m * d)
    assert np.array_equal(paper_init(m, d, rng, batch=(2,))[0], whole)
    W_star, c_star = np.ones((1, 3, d)) / d**0.5, np.ones((1, 3))
    tracemalloc.start()
    try:
        pretraining.pretrain_source(W_star, c_star, m, np.random.default_rng(4), first=first, max_time=1e-6)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 32 * 2**20
