"""FaF's own protocol (App. D): gradient descent at a fixed rate for a fixed number of steps or to loss 1e-6, as
settings of the integrator's Euler scheme, in the paper's units (its losses have no ½)."""
import numpy as np
import pytest

from transfertheory.sim.gradient_descent import flow_time, paper_gradient_descent
from transfertheory.sim.integrator import FlowSettings, GradientDescent, integrate_gradient_flow
from transfertheory.sim.relu_teacher import paper_init, train_on_samples
from transfertheory.sim.relu_teacher.training import empirical_loss_and_gradients
from transfertheory.theory.relu import random_teacher


def test_a_fixed_learning_rate_is_plain_gradient_descent_on_a_quadratic():
    rng = np.random.default_rng(1)
    A = np.stack([np.diag(rng.uniform(0.1, 2.0, 5)) for _ in range(3)])
    y0 = rng.standard_normal((3, 5))

    def gradient(y, rows):
        g = np.einsum("bij,bj->bi", A[rows], y)
        return g, 0.5 * np.einsum("bi,bi->b", y, g)

    h, steps = 0.3, 37
    result = integrate_gradient_flow(gradient, y0.copy(), FlowSettings(GradientDescent(learning_rate=h),
                                                                       max_steps=steps, gtol=1e-300))
    expected = y0.copy()
    for _ in range(steps):
        expected = expected - h * np.einsum("bij,bj->bi", A, expected)
    np.testing.assert_allclose(result.y, expected, rtol=1e-13, atol=1e-15)
    assert list(result.convergence.status) == ["max_steps"] * 3 and list(result.convergence.steps) == [steps] * 3
    np.testing.assert_allclose(result.convergence.t_final, h * steps, rtol=1e-12)
    with pytest.warns(RuntimeWarning, match="diverged.*or lower learning_rate"):
        unstable = integrate_gradient_flow(gradient, y0.copy(), FlowSettings(GradientDescent(learning_rate=1.5),
                                                                             max_steps=500))
    assert "diverged" in set(unstable.convergence.status)  # rate above 2/λ_max = 1 for some instance
    with pytest.raises(ValueError, match="learning_rate"):
        GradientDescent(learning_rate=-1.0)


def test_paper_units_twice_the_rate_and_half_the_loss_threshold():
    relu = paper_gradient_descent(0.01 * 1000, 10**5, time_scale=1000)  # FaF App. D.2: η = 0.01·m, loss 1e-6 (no ½)
    assert relu.scheme == "euler" and relu.solver.learning_rate == pytest.approx(0.02) and relu.max_steps == 10**5
    assert relu.loss_tol == 5e-7 and 2e3 < relu.max_time < 2e3 * (1 + 1e-5)
    assert flow_time(1e-3, 10**5) == pytest.approx(200.0)  # FaF App. D.1 (deep linear): flow time 200, not 100
    linear = paper_gradient_descent(1e-3, 10**5)  # FaF App. D.1
    assert linear.solver.learning_rate == pytest.approx(2e-3) and linear.max_steps == 10**5
    with pytest.raises(ValueError, match="steps"):
        paper_gradient_descent(0.1, 0)


def test_a_relu_scratch_flow_under_the_protocol_is_the_papers_gradient_descent_step_for_step():
    """Hand-written gradient descent on FaF's loss (1/n)Σ(f − y)² (twice the package's) at η = 0.01·m, on the
    sphere parametrization the package uses (rows v/‖v‖, gradient (1/‖v‖)(I − ŵŵᵀ)∇_w), equals the simulator's
    run under FaF App. D.2's protocol."""
    rng = np.random.default_rng(2)
    d, m, n, steps = 6, 20, 15, 40
    W_t, c_t = random_teacher(4, d, rng)
    X = rng.standard_normal((2, n, d))
    y = (np.maximum(X @ W_t.T, 0.0) @ c_t) / 4
    W0, c0 = paper_init(m, d, rng, batch=(2,))
    c0 = c0 + 0.3  # away from the initial saddle, so that the steps move
    report = train_on_samples(W0, c0, X, y, flow=paper_gradient_descent(0.01 * m, steps, time_scale=m))
    V, c = W0.copy(), c0.copy()
    for _ in range(steps):
        norms = np.linalg.norm(V, axis=-1, keepdims=True)
        _, grad_w, grad_c = empirical_loss_and_gradients(V / norms, c, X, y)
        V, c = V - 0.01 * m * 2 * grad_w / norms, c - 0.01 * m * 2 * grad_c  # FaF's loss: twice the package's
    np.testing.assert_allclose(report.c, c, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(report.W, V / np.linalg.norm(V, axis=-1, keepdims=True), rtol=1e-10, atol=1e-13)
    assert list(report.status) == ["max_steps"] * 2
    np.testing.assert_allclose(report.t_final, 0.02 * steps, rtol=1e-12)


def test_the_deep_linear_protocol_runs_its_steps_or_stops_at_the_papers_loss():
    """FaF App. D.1's protocol on the deep linear simulator: no early verdict (the paper runs its steps whether or
    not the flow could converge); every target run ends at the step budget or at FaF's loss 1e-6 (package 5e-7)."""
    from transfertheory.sim.deep_linear import run_transfer_experiment

    flow = paper_gradient_descent(1e-2, 3000)
    df = run_transfer_experiment(d=8, gammas=[0.5, 1.5], thetas=[0.5], sigma=0.2, draws=2, seed=1, flow=flow,
                                 methods=("scratch", "finetune"), progress=False)
    assert set(df.status) <= {"max_steps", "loss_tol"} and "max_steps" in set(df.status)
    stepped = df[df.status == "max_steps"]
    assert (stepped.steps == 3000).all()
    np.testing.assert_allclose(stepped.t_final, flow_time(1e-2, 3000), rtol=1e-9)
