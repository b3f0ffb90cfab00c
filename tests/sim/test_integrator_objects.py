"""The integrator's objects: solvers, the step-size controller, settings routing, kernel hooks, per-instance
statistics and status messages."""
import dataclasses

import numpy as np
import pytest

from transfertheory.sim import deep_linear as dl
from transfertheory.sim.integrator import (RKC2, SOLVERS, STATUS_MESSAGES, STATUSES, DenseStages, ErrorController,
                                           FlowSettings, FusedDescent, GradientDescent, UnreachableCertificate,
                                           integrate_gradient_flow)
from transfertheory.sim.tdr import initial_weights, train_two_layer
from transfertheory.sim.tdr_kernel import TwoLayerStages


def _counting_quadratic(lam, counts):
    """∇L of L = ½Σλᵢyᵢ² per instance, adding one to ``counts[i]`` for every evaluation of instance i."""

    def gradient(y, rows):
        np.add.at(counts, rows, 1)
        return lam[rows] * y, 0.5 * (lam[rows] * y * y).sum(axis=1)

    return gradient


def _counting_pseudo_huber(a, counts):
    """∇L of L = Σ√(1 + aᵢyᵢ²), counted like :func:`_counting_quadratic`: the curvature grows as the flow nears
    0 from large |y|, so an error-controlled step that grew on the flat part is rejected."""

    def gradient(y, rows):
        np.add.at(counts, rows, 1)
        root = np.sqrt(1 + a[rows] * y * y)
        return a[rows] * y / root, root.sum(axis=1)

    return gradient


@pytest.mark.parametrize("scheme", ["rkc", "euler"])
def test_per_instance_statistics_count_what_each_instance_used(scheme):
    # An independent count: the gradient callable tallies its calls per instance (stages, power iterations, the
    # start), which the dense kernel makes for exactly the instances it integrates.
    counts = np.zeros(3, dtype=np.int64)
    if scheme == "rkc":
        rng = np.random.default_rng(1)
        gradient = _counting_pseudo_huber(10.0 ** rng.uniform(-1, 2, (3, 5)), counts)
        res = integrate_gradient_flow(gradient, rng.uniform(20, 200, (3, 5)), rtol=1e-2, gtol=1e-8, max_time=1e4)
        assert (res.stats.rejected > 0).all()
    else:  # condition numbers 10, 100, 1000: ~κ·ln(1/gtol) steps, the last beyond the step budget
        lam = 10.0 ** np.linspace(0, -np.arange(1, 4), 8, axis=1)
        res = integrate_gradient_flow(_counting_quadratic(lam, counts), np.ones((3, 8)), scheme="euler",
                                      step_fraction=0.9, gtol=1e-6, max_steps=5000)
        assert res.rejected == 0 and list(res.status) == ["converged", "converged", "max_steps"]
    np.testing.assert_array_equal(res.stats.evaluations, counts)
    np.testing.assert_array_equal(res.stats.accepted, res.steps)
    assert res.stats.evaluations.sum() == res.evaluations and res.stats.rejected.sum() == res.rejected
    assert len(set(res.steps)) == 3  # the instances stopped at different steps


def test_statistics_of_the_structured_kernels_add_up_to_their_counts():
    # the low-rank (deep linear, RKC) and two-layer (TDR, Euler and RKC) kernels count their own evaluations;
    # the per-instance statistics must add up to them
    rng = np.random.default_rng(3)
    d, n = 6, 4
    arch = dl.Architecture(d, 3)
    X = rng.standard_normal((n, d))
    y = X @ rng.standard_normal(d)
    loss = dl.LeastSquaresLoss(arch, (X.T @ X / n)[None], np.repeat((X.T @ y / n)[None], 3, axis=0),
                               np.repeat(y @ y / n, 3))
    flows = [dl.train(loss, dl.init_weights(arch, 0.3, [0, 1, 2], "gaussian"), rtol=1e-3, gtol=1e-6, max_time=1e4)]
    w, a = initial_weights(20, 3, 2, seed=1)
    x = rng.standard_normal((5, 3))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    for scheme in ("euler", "rkc"):
        flows.append(train_two_layer(w, a, x, x[:, 0], scheme=scheme, gtol=1e-4)[1])
    for flow in flows:
        assert flow.stats.evaluations.sum() == flow.evaluations
        assert flow.stats.rejected.sum() == flow.rejected
        np.testing.assert_array_equal(flow.stats.accepted, flow.steps)
        assert flow.converged.all()


def test_every_status_has_a_message_and_a_result_gives_one_per_instance():
    assert set(STATUS_MESSAGES) == set(STATUSES)
    lam = np.array([[1.0, 1.0], [1e-4, 1.0]])
    res = integrate_gradient_flow(_counting_quadratic(lam, np.zeros(2, dtype=np.int64)), np.ones((2, 2)),
                                  gtol=1e-6, max_time=100.0)
    assert list(res.status) == ["converged", "max_time"]
    assert list(res.message) == [STATUS_MESSAGES["converged"], STATUS_MESSAGES["max_time"]]
    assert "gtol" in res.message[0] and "max_time" in res.message[1]


def test_controller_is_the_classical_rule_with_its_parameters():
    # safety·err^(−1/(order + 1)) clipped to [min_factor, max_factor], max_factor at err = 0 (computed here from
    # the formula with Python's scalar pow, element by element; NumPy's vectorized pow may differ from it in the
    # last bit on CPUs with SIMD kernels: 1 ulp seen at err = 3, so up to 2 ulp allowed)
    err = np.array([0.0, 1e-9, 0.01, 0.5, 1.0, 3.0, 1e6, np.inf])
    for controller in (ErrorController(), ErrorController(safety=0.9, order=4, min_factor=0.2, max_factor=5.0)):
        expected = [controller.max_factor if e == 0 else
                    min(max(controller.safety * e ** (-1.0 / (controller.order + 1)), controller.min_factor),
                        controller.max_factor) for e in err]
        np.testing.assert_allclose(controller.factor(err), expected, rtol=2 * np.finfo(float).eps, atol=0)


def test_a_controller_object_steers_the_flow_and_keeps_its_accuracy():
    # y(t) = y₀e^{−λt} on a stiff quadratic (κ = 10⁴): a cautious controller (steps grow at most 1.5× per step)
    # takes more steps and is as accurate (global error a small multiple of rtol, as the default's)
    lam = np.logspace(-2, 2, 30)[None, :]
    exact = np.exp(-lam * 5.0)
    runs = {}
    for name, controller in (("default", ErrorController(rtol=1e-4)),
                             ("cautious", ErrorController(rtol=1e-4, safety=0.5, max_factor=1.5))):
        runs[name] = res = integrate_gradient_flow(_counting_quadratic(lam, np.zeros(1, dtype=np.int64)),
                                                   np.ones((1, 30)), FlowSettings(controller=controller),
                                                   atol=1e-12, gtol=1e-300, max_time=5.0)
        assert res.status[0] == "max_time" and np.max(np.abs(res.y - exact)) < 20 * 1e-4, name
    assert runs["cautious"].steps[0] > runs["default"].steps[0]
    same = integrate_gradient_flow(_counting_quadratic(lam, np.zeros(1, dtype=np.int64)), np.ones((1, 30)),
                                   rtol=1e-4, atol=1e-12, gtol=1e-300, max_time=5.0)
    np.testing.assert_array_equal(same.y, runs["default"].y)


def test_settings_route_parameters_to_the_solver_and_the_controller():
    euler = FlowSettings(controller=ErrorController(rtol=1e-3)).updated(scheme="euler", step_fraction=0.5)
    assert euler.solver == GradientDescent(step_fraction=0.5) and euler.rtol == 1e-3 and euler.scheme == "euler"
    back = euler.updated(scheme="rkc", max_stages=30)
    assert back.solver == RKC2(max_stages=30) and back.controller == euler.controller
    assert euler.updated(scheme="euler") == euler and euler.updated(rtol=None) is euler
    assert FlowSettings().updated(solver=GradientDescent(0.3), safety=0.7).as_dict() == dict(
        scheme="euler", step_fraction=0.3, learning_rate=None, rtol=1e-5, safety=0.7, order=2, min_factor=0.1, max_factor=10.0,
        gtol=1e-8, loss_tol=0.0, max_time=1e5, max_steps=200_000, divergence_factor=1e8)
    with pytest.raises(TypeError, match="'step_fraction': not a parameter of the solver RKC2"):
        FlowSettings().updated(step_fraction=0.5)
    with pytest.raises(TypeError, match="'lr': not an integrator setting"):
        FlowSettings().updated(lr=0.5)
    with pytest.raises(TypeError, match="solver must be a Solver"):
        FlowSettings(solver="rkc")
    with pytest.raises(ValueError, match="^rtol must be in"):
        FlowSettings().updated(rtol=-1.0)
    for build, name in ((lambda: RKC2(max_stages=1), "max_stages"), (lambda: GradientDescent(2.0), "step_fraction"),
                        (lambda: ErrorController(safety=0.0), "safety"), (lambda: ErrorController(order=1.5), "order"),
                        (lambda: ErrorController(max_factor=0.5), "max_factor")):
        with pytest.raises(ValueError, match=f"^{name} must be"):
            build()


def test_a_new_scheme_is_one_class():
    # the walk of docs/simulator.md: subclassing Solver with a new name registers it for FlowSettings and the
    # simulators' scheme= choices; here a gradient descent at half the step
    try:
        @dataclasses.dataclass(frozen=True)
        class HalfStepDescent(GradientDescent):
            name = "half-step"
            step_fraction: float = 0.5

        assert SOLVERS["half-step"] is HalfStepDescent
        lam = np.array([[1.0, 4.0]])
        gradient = _counting_quadratic(lam, np.zeros(1, dtype=np.int64))
        new = integrate_gradient_flow(gradient, np.ones((1, 2)), scheme="half-step", gtol=1e-6)
        old = integrate_gradient_flow(gradient, np.ones((1, 2)), scheme="euler", step_fraction=0.5, gtol=1e-6)
        np.testing.assert_array_equal(new.y, old.y)
        assert new.converged[0] and new.steps[0] == old.steps[0]
        assert FlowSettings().updated(scheme="half-step", step_fraction=0.25).solver == HalfStepDescent(0.25)
    finally:
        SOLVERS.pop("half-step", None)


def test_kernel_hooks_are_protocols_the_kernels_implement():
    dense = DenseStages(lambda y, rows: (y, (y * y).sum(axis=1)))
    assert isinstance(dense, DenseStages) and not isinstance(dense, (UnreachableCertificate, FusedDescent))
    arch = dl.Architecture(3, 2)
    loss = dl.LeastSquaresLoss(arch, np.eye(3)[None], np.ones((1, 3)), np.ones(1))
    assert isinstance(dl.LowRankStages(loss), UnreachableCertificate)
    assert isinstance(TwoLayerStages(np.ones((2, 3)), np.ones(2), np.ones((1, 4))), FusedDescent)
