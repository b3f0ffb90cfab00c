"""Bad input to the public Python API: one table of (function, bad argument) rows, each a ValueError or TypeError
whose message names the parameter, raised before any work.

Four classes of bad input, each generated over every public function it applies to:

* NaN and ±inf for a real parameter of a closed form (every range of ``transfertheory.params`` excludes them);
* array arguments of one vectorized closed form that do not broadcast together: the message names each
  parameter and its shape;
* empty sequences (grids, widths, sizes) given to a simulator, and NaN / inf for its real settings;
* ``rng`` / ``seed`` arguments that are not an integer seed >= 0, a ``numpy.random.Generator`` or a
  ``SeedSequence`` (what ``numpy.random.default_rng`` accepts, less ``None``).

The acceptance side of the last class (an int seed, a Generator and a SeedSequence all work, and equal seeds
give equal draws) is tested at the end.
"""
from __future__ import annotations

import inspect
import itertools
import math

import numpy as np
import pytest

from transfertheory.sim import tdr as tdr_sim
from transfertheory.sim import deep_linear
from transfertheory.sim import run_transfer_experiment as deep_linear_experiment
from transfertheory.sim.mtl import NetworkShape, finite_width_study, init_parameters
from transfertheory.sim.merlin import run_comparison, target_sets
from transfertheory.sim.relu_teacher import run_transfer_experiment as relu_experiment
from transfertheory.sim.relu_teacher import teacher_samples
from transfertheory.sim.seeding import derive_seed, generator
from transfertheory.theory import distances, fine_tuning, linear, merlin, methods, mtl, scratch, transfer
from transfertheory.theory.relu import ablated_teacher, negative_transfer_boundary, random_teacher

# --------------------------------------------------------------------------- closed forms

#: a valid value of every real parameter of the vectorized closed forms below
VALID = dict(gamma=0.5, theta=1.0, sigma=0.2, lam=0.1, n=10, d=20, norm=1.5, c=0.5, mu=1.0, penalty=1.0, fit=1.0,
             alpha=0.5, eps=0.1, feature_norm=1.0, pperp_sq=0.5, A=1.0, nu=0.5, k=3)

#: every public vectorized closed form of transfertheory.theory with two or more array parameters
VECTORIZED = [
    linear.linear_transfer_risk, linear.linear_transferability, linear.linear_transferability_finite,
    linear.negative_transfer_interval, linear.negative_transfer_threshold, linear.ridge_transfer_risk,
    linear.chi2_resolvent_moments, linear.ridge_transfer_risk_finite,
    scratch.scratch_risk, scratch.min_norm_noise_gain, scratch.scratch_risk_finite,
    fine_tuning.fine_tune_risk, fine_tuning.fine_tune_transferability, fine_tuning.fine_tune_risk_finite_paper,
    fine_tuning.fine_tune_transferability_finite_paper, fine_tuning.fine_tune_scale,
    fine_tuning.fine_tune_risk_corrected, fine_tuning.fine_tune_transferability_corrected,
    transfer.effective_angle, transfer.flow_limit_sign_angle,
    distances.scaled_target_scratch_risk, distances.scaled_target_scratch_risk_finite,
    distances.scaled_target_linear_transfer_risk, distances.scaled_target_transferability,
    distances.scaled_target_transferability_finite,
    merlin.scale_objective, merlin.optimal_scale, merlin.source_scale_objective, merlin.joint_training_lower_bound,
    merlin.joint_training_construction_value, merlin.joint_training_guaranteed_loss,
    merlin.any_wrong_feature_fit_bound,
    negative_transfer_boundary,
]

#: the method records' vectorized forms (lam only for ridge)
METHOD_FORMS = ("paper_risk", "paper_transferability", "flow_risk", "flow_transferability", "paper_risk_finite",
                "paper_transferability_finite")


def _array_parameters(function):
    return [p.name for p in inspect.signature(function).parameters.values()
            if p.name in VALID and p.kind is not p.KEYWORD_ONLY and p.default is p.empty]


def _closed_forms():
    """(id, function, valid keyword arguments) of every vectorized closed form and method form."""
    for function in VECTORIZED:
        yield function.__qualname__, function, {name: VALID[name] for name in _array_parameters(function)}
    for record in methods.METHODS.values():
        for form in METHOD_FORMS:
            function = getattr(record, form)
            names = [p for p in _array_parameters(function) if p != "lam"]
            arguments = {name: VALID[name] for name in names}
            if record.takes_lambda:
                arguments["lam"] = VALID["lam"]
            yield f"{record.name}.{form}", function, arguments
    yield "transfer_risks", lambda **kw: transfer.transfer_risks("ridge", **kw), dict(
        gamma=0.5, theta=1.0, sigma=0.2, lam=0.1)
    yield "opening_angle", lambda **kw: transfer.opening_angle("ridge", **kw), dict(sigma=0.2, lam=0.1)


def _nonfinite_rows():
    for name, function, arguments in _closed_forms():
        for parameter, value in itertools.product(arguments, (math.nan, math.inf, -math.inf)):
            yield pytest.param(function, {**arguments, parameter: value}, (parameter,),
                               id=f"{name}-{parameter}={value}")


def _broadcast_rows():
    for name, function, arguments in _closed_forms():
        for first, second in itertools.combinations(arguments, 2):
            bad = {**arguments, first: [arguments[first]] * 2, second: [arguments[second]] * 3}
            yield pytest.param(function, bad, (first, second, "(2,)", "(3,)"), id=f"{name}-{first}(2)-{second}(3)")


# --------------------------------------------------------------------------- simulators and samplers

_TASKS = tdr_sim.task_pair("shared-inputs", 0.3)
_FEW_SHOT = mtl.synthetic_problem(np.random.default_rng(0), tasks=2, n=3, test_tasks=1, n_support=2, n_query=2, d=3)
_RELU = mtl.ReluNetwork(depth=1)
_TEACHER_W, _TEACHER_C = random_teacher(4, 3, 0)

#: (id, function, keyword arguments that are valid) of each simulator entry point and sampler
SIMULATORS = {
    "deep_linear": (deep_linear_experiment, dict(d=4, gammas=[1.0], thetas=[0.5], sigma=0.1, draws=1,
                                                 methods=("scratch",), backend="numpy")),
    "relu_teacher": (relu_experiment, dict(d=3, m=4, m_star=2, mus=[0.5], ns=[4], backend="numpy")),
    "quadratic": (run_comparison, dict(d=4, m=2, k=2, n_targets=[4], lam=0.1, draws=1, restarts=1,
                                       algorithms=("target_only",), backend="numpy")),
    "tdr": (lambda **kw: tdr_sim.simulate_transfer(*_TASKS, **kw), dict(widths=[4], draws=1, backend="numpy")),
    "tdr_task_pair": (tdr_sim.task_pair, dict(family="shared-inputs", angle=0.3)),
    "tdr_initial_weights": (tdr_sim.initial_weights, dict(width=4, d=3, draws=1)),
    "tdr_width_rate": (tdr_sim.width_rate, dict(widths=[10, 100], values=[1.0, 0.1])),
    "mtl_study": (lambda **kw: finite_width_study(_FEW_SHOT, _RELU, **kw), dict(widths=[8], draws=1,
                                                                                 backend="numpy")),
    "mtl_problem": (mtl.synthetic_problem, dict(rng=0, tasks=2, n=3, test_tasks=1, n_support=2, n_query=2, d=3)),
    "mtl_task": (mtl.synthetic_task, dict(rng=0, n=3, d=3)),
    "merlin_source": (merlin.sample_source, dict(n=4, d=4, k=2, rng=0)),
    "merlin_target": (merlin.sample_target, dict(n=4, d=4, rng=0)),
    "mtl_init_parameters": (init_parameters, dict(shape=NetworkShape(3, 4, _RELU), networks=1, rng=0)),
    "relu_teacher_samples": (lambda **kw: teacher_samples(_TEACHER_W[None], _TEACHER_C[None], **kw),
                             dict(n=3, rng=0)),
    "relu_random_teacher": (random_teacher, dict(m_star=4, d=3, rng=0)),
    "relu_ablated_teacher": (lambda **kw: ablated_teacher(_TEACHER_W, _TEACHER_C, **kw), dict(mu=0.5, rng=0)),
    "deep_linear_task_vectors": (deep_linear.task_vectors, dict(d=3, thetas=np.array([0.5]), seed=0)),
    "deep_linear_target_draw": (deep_linear.target_draw, dict(d=3, n=2, beta_t=np.ones((1, 3)), sigma=0.1, seed=0,
                                                              gamma_index=0, draw=0)),
    "deep_linear_pretrain": (deep_linear.pretrain, dict(arch=deep_linear.Architecture(3, 2), beta_s=np.ones(3) / 3**0.5,
                                                        alpha=0.1, backend="numpy")),
    "seeding_generator": (lambda **kw: generator(kw["seed"], 0, 1), dict(seed=0)),
    "seeding_derive_seed": (lambda **kw: derive_seed(kw["seed"], 0, 1), dict(seed=0)),
    "quadratic_target_sets": (target_sets, dict(n_t=3, d=4, draws=1, seed=0)),
    "linear.flow_risk_finite": (methods.METHODS["linear"].flow_risk_finite, dict(n=4, d=6, theta=0.5, sigma=0.1)),
    "fine_tune_flow_expectation": (fine_tuning.fine_tune_flow_expectation,
                                   dict(n=4, d=6, theta=0.5, sigma=0.1, draws=2)),
    "finetune.flow_transferability_finite": (methods.METHODS["finetune"].flow_transferability_finite,
                                             dict(n=4, d=6, theta=0.5, sigma=0.1, draws=2)),
}

#: (simulator, parameter, bad value): empty sequences, NaN / inf settings; ``stage.setting`` is one integrator
#: setting in a stage's ``flow=`` mapping (the message names the setting)
SIMULATOR_BAD = [
    ("deep_linear", "gammas", []), ("deep_linear", "thetas", []), ("deep_linear", "ridge", []),
    ("deep_linear", "sigma", math.nan), ("deep_linear", "flow.gtol", math.nan),
    ("deep_linear", "flow.max_time", math.inf),
    ("deep_linear", "pretrain_flow.rtol", math.nan), ("deep_linear", "draws", 0),
    ("relu_teacher", "mus", []), ("relu_teacher", "ns", []), ("relu_teacher", "flow.max_time", math.nan),
    ("relu_teacher", "flow.rtol", math.nan), ("relu_teacher", "pretrain_flow.loss_tol", math.nan),
    ("relu_teacher", "linear_flow.max_time", 0.0), ("relu_teacher", "draws", 0), ("relu_teacher", "draw_start", -1),
    ("quadratic", "n_targets", []), ("quadratic", "lam", math.nan), ("quadratic", "alpha", math.nan),
    ("quadratic", "rho", math.inf), ("quadratic", "ridge", math.nan), ("quadratic", "init_scale", math.nan),
    ("quadratic", "init_scale", 0.0), ("quadratic", "draws", 0), ("quadratic", "flow", 1e-3),
    ("tdr", "widths", []), ("tdr", "kappa", math.nan), ("tdr", "draws", 0), ("tdr", "flow", "rkc"),
    ("tdr_task_pair", "angle", math.nan), ("tdr_task_pair", "angle", math.inf), ("tdr_task_pair", "angle", "0.3"),
    ("tdr_task_pair", "n", 0), ("tdr_task_pair", "d", 1), ("tdr_task_pair", "n", 2.5),
    ("tdr_initial_weights", "d", 0), ("tdr_initial_weights", "kappa", math.nan),
    ("tdr_width_rate", "widths", []), ("tdr_width_rate", "values", [1.0]), ("tdr_width_rate", "values", [1.0, -1.0]),
    ("tdr_width_rate", "values", [1.0, math.nan]), ("tdr_width_rate", "widths", [10, 10]),
    ("mtl_study", "widths", []), ("mtl_study", "draws", 0), ("mtl_study", "lam_tau", math.nan),
    ("mtl_study", "lam_tau_hat", math.inf), ("mtl_study", "widths", [0]), ("mtl_study", "flow", [1e-3]),
    ("mtl_problem", "n", 0), ("mtl_problem", "d", 0),
]

#: (simulator, grid or list parameter, the repeated item): one row per value, so a repeat is refused, naming it
SIMULATOR_REPEATED = [
    ("deep_linear", "gammas", 1.0), ("deep_linear", "thetas", 0.5), ("deep_linear", "ridge", 0.0),
    ("deep_linear", "methods", "scratch"), ("relu_teacher", "mus", 0.5), ("relu_teacher", "ns", 4),
    ("relu_teacher", "methods", "linear"), ("quadratic", "n_targets", 4), ("quadratic", "algorithms", "joint"),
    ("tdr", "widths", 4), ("mtl_study", "widths", 8),
]

#: (simulator, integrator setting, bad value) of the entry points' ``flow=`` mappings: the error names the setting
SIMULATOR_FLOW_BAD = [
    ("quadratic", "rtol", math.nan), ("quadratic", "max_step", 10),
    ("tdr", "step_fraction", math.nan), ("tdr", "rtol", math.nan), ("tdr", "gtol", math.inf),
    ("tdr", "max_time", math.nan), ("tdr", "max_steps", 0), ("tdr", "scheme", "adam"),
    ("mtl_study", "rtol", math.nan),
]

#: an rng / seed that is neither an integer >= 0, a Generator nor a SeedSequence
BAD_SEEDS = [-1, 1.5, "0", True, None]

#: (simulator, name of its seed or rng parameter)
SEEDED = [("deep_linear", "seed"), ("relu_teacher", "seed"), ("quadratic", "seed"), ("tdr", "seed"),
          ("tdr_task_pair", "seed"), ("tdr_initial_weights", "seed"), ("mtl_study", "seed"), ("mtl_problem", "rng"),
          ("mtl_task", "rng"), ("merlin_source", "rng"), ("merlin_target", "rng"), ("mtl_init_parameters", "rng"),
          ("relu_teacher_samples", "rng"), ("relu_random_teacher", "rng"),
          ("relu_ablated_teacher", "rng"), ("fine_tune_flow_expectation", "seed"),
          ("finetune.flow_transferability_finite", "seed"), ("linear.flow_risk_finite", "seed"),
          ("deep_linear_task_vectors", "seed"), ("deep_linear_target_draw", "seed"), ("deep_linear_pretrain", "seed"),
          ("seeding_generator", "seed"), ("seeding_derive_seed", "seed"), ("quadratic_target_sets", "seed")]


def _simulator_rows():
    for simulator, parameter, value in SIMULATOR_BAD:
        function, arguments = SIMULATORS[simulator]
        stage, _, setting = parameter.rpartition(".")
        yield pytest.param(function, {**arguments, **({stage: {setting: value}} if stage else {parameter: value})},
                           (setting,),
                           id=f"{simulator}-{parameter}={value!r}")
    for simulator, setting, value in SIMULATOR_FLOW_BAD:
        function, arguments = SIMULATORS[simulator]
        yield pytest.param(function, {**arguments, "flow": {setting: value}}, (setting,),
                           id=f"{simulator}-flow-{setting}={value!r}")
    for simulator, parameter, item in SIMULATOR_REPEATED:
        function, arguments = SIMULATORS[simulator]
        yield pytest.param(function, {**arguments, parameter: [item, item]},
                           (parameter, "must not repeat", f"{item!r} twice"), id=f"{simulator}-{parameter}-repeated")
    for (simulator, parameter), value in itertools.product(SEEDED, BAD_SEEDS):
        function, arguments = SIMULATORS[simulator]
        yield pytest.param(function, {**arguments, parameter: value}, (parameter,),
                           id=f"{simulator}-{parameter}={value!r}")


#: array arguments of the public closed forms: (id, function, arguments, names the message must hold)
ARRAY_BAD = [
    ("standardize_inputs-nan", mtl.standardize_inputs, dict(x=[[np.nan, 1.0]]), ("x",)),
    ("standardize_inputs-empty", mtl.standardize_inputs, dict(x=np.zeros((0, 2))), ("x",)),
    ("standardize_inputs-zero-row", mtl.standardize_inputs, dict(x=[[0.0, 0.0], [1.0, 2.0]]), ("x",)),
    ("adaptation_operator-not-square", mtl.adaptation_operator, dict(k=np.ones((2, 3)), lam_tau=0.1), ("k",)),
    ("symmetric_exp-vector", mtl.symmetric_exp, dict(k=np.ones(3), lam_tau=0.1), ("k",)),
    ("min_norm_solution-rows", scratch.min_norm_solution, dict(X=np.eye(4, 3), y=np.zeros(3)), ("y", "(3,)")),
]


def _array_rows():
    for name, function, arguments, named in ARRAY_BAD:
        yield pytest.param(function, arguments, named, id=name)


# --------------------------------------------------------------------------- the new user's report

REPORTED = [
    pytest.param(tdr_sim.task_pair, dict(family="shared-inputs", angle=math.nan), ("angle",),
                 id="reported-task_pair-nan-angle"),
    pytest.param(lambda **kw: tdr_sim.simulate_transfer(*_TASKS, **kw), dict(widths=[]), ("widths",),
                 id="reported-simulate_transfer-no-widths"),
    pytest.param(linear.linear_transferability, dict(gamma=[0.5, 1.5], theta=[1, 0.5, 0.2], sigma=0.2),
                 ("gamma", "theta", "(2,)", "(3,)"), id="reported-linear_transferability-broadcast"),
]


@pytest.mark.parametrize("simulator", SIMULATORS)
def test_the_rows_start_from_valid_arguments(simulator):
    """Each simulator row changes one argument of a call that runs, so its error is that argument's."""
    function, arguments = SIMULATORS[simulator]
    function(**arguments)


@pytest.mark.parametrize("function, arguments, named", [*REPORTED, *_nonfinite_rows(), *_broadcast_rows(),
                                                        *_simulator_rows(), *_array_rows()])
def test_bad_input_is_an_error_naming_the_parameter(function, arguments, named):
    with pytest.raises((ValueError, TypeError)) as error:
        function(**arguments)
    message = str(error.value)
    for word in named:
        assert word in message, f"{word!r} not named in {message!r}"
    assert "weights and signs" not in message and "operands could not be broadcast" not in message


# --------------------------------------------------------------------------- seeds that are accepted


def test_synthetic_problem_takes_an_int_seed_a_generator_or_a_seed_sequence():
    """The reported ``synthetic_problem(0)``: the same draws as default_rng(0) gives, from each kind of seed."""
    problems = [mtl.synthetic_problem(rng, tasks=2, test_tasks=1)
                for rng in (0, np.random.default_rng(0), np.random.SeedSequence(0), np.int64(0))]
    for other in problems[1:]:
        for field in ("tasks", "labels", "support", "query"):
            for a, b in zip(getattr(problems[0], field), getattr(other, field)):
                np.testing.assert_array_equal(a, b)


def test_a_generator_stream_continues_across_calls():
    """A Generator passed as rng is used, not re-seeded: two calls on one Generator draw different tasks."""
    rng = np.random.default_rng(1)
    first, second = mtl.synthetic_task(rng, 3, 3), mtl.synthetic_task(rng, 3, 3)
    assert not np.array_equal(first[0], second[0])


@pytest.mark.parametrize("seed_kind", ["generator", "seed_sequence"])
def test_a_seed_parameter_takes_a_generator_or_seed_sequence(seed_kind):
    """A keyed ``seed`` (the root of default_rng([seed, …]) streams) also takes what default_rng takes: equal
    Generators (or SeedSequences) give equal draws, and the draws are those of one integer root."""
    make = {"generator": np.random.default_rng, "seed_sequence": np.random.SeedSequence}[seed_kind]
    first = tdr_sim.task_pair("shared-labels", 0.4, seed=make(5))
    second = tdr_sim.task_pair("shared-labels", 0.4, seed=make(5))
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)
    weights = [tdr_sim.initial_weights(4, 3, 2, seed=make(5))[0] for _ in range(2)]
    np.testing.assert_array_equal(*weights)


def test_a_ragged_list_is_named_by_its_own_check_not_by_the_broadcast_check():
    with pytest.raises(ValueError, match="theta must be a real number or array of reals"):
        linear.linear_transferability(0.5, [[1.0], [1.0, 2.0]], 0.2)


def test_arrays_that_broadcast_still_broadcast():
    values = linear.linear_transferability([[0.5], [1.5]], [1.0, 0.5, 0.2], 0.2)
    assert values.shape == (2, 3)
    assert values[1, 2] == linear.linear_transferability(1.5, 0.2, 0.2)
