"""Finite-width deep ReLU networks (transfertheory.sim.mtl): backpropagation and empirical kernels against
finite differences and explicit Jacobians, the array backend, bad input; MTL/ANIL training."""
import numpy as np
import pandas as pd
import pytest

from transfertheory import backend
from transfertheory.sim import mtl as sim
from transfertheory.sim.mtl.network import outputs
from transfertheory.theory.mtl import ReluNetwork


def _small(depth=3, w_std=1.3, b_std=0.4, width=12, networks=2, seed=0):
    rng = np.random.default_rng(seed)
    shape = sim.NetworkShape(4, width, ReluNetwork(depth, w_std, b_std))
    body, head = sim.init_parameters(shape, networks, rng)
    return shape, body, head, rng.standard_normal((5, 4))


def _jacobian(shape, body, head, x, eps=1e-6):
    """∂f(x)/∂(body, head) (R, n, P) by central differences."""
    def f(b, h):
        return outputs(shape, sim.forward(shape, b, x).features, h)

    params = np.concatenate([body, head], axis=1)
    jac = np.empty((body.shape[0], x.shape[0], params.shape[1]))
    for i in range(params.shape[1]):
        step = np.zeros_like(params)
        step[:, i] = eps
        plus, minus = params + step, params - step
        jac[:, :, i] = (f(plus[:, :shape.body_size], plus[:, shape.body_size:])
                        - f(minus[:, :shape.body_size], minus[:, shape.body_size:])) / (2 * eps)
    return jac


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_backpropagation_and_empirical_ntk_equal_finite_differences(depth):
    shape, body, head, x = _small(depth)
    jac = _jacobian(shape, body, head, x)
    readout, ntk = sim.empirical_kernels(shape, body, head, x)
    np.testing.assert_allclose(ntk, jac @ jac.transpose(0, 2, 1), rtol=1e-7, atol=1e-8)
    head_jac = jac[:, :, shape.body_size:]
    np.testing.assert_allclose(readout, head_jac @ head_jac.transpose(0, 2, 1), rtol=1e-7, atol=1e-8)
    cotangent = np.random.default_rng(1).standard_normal((2, 5))  # Σ g·f through the features
    fwd = sim.forward(shape, body, x)
    grad = sim.backpropagate(shape, body, fwd, shape.readout_scale * cotangent[:, :, None] * head[:, None, :-1])
    np.testing.assert_allclose(grad, np.einsum("rn,rnp->rp", cotangent, jac[:, :, :shape.body_size]),
                               rtol=1e-7, atol=1e-8)


def test_cross_kernels_are_blocks_of_the_joint_gram():
    shape, body, head, x = _small()
    y = np.random.default_rng(3).standard_normal((3, 4))
    joint = sim.empirical_kernels(shape, body, head, np.vstack([x, y]))
    cross = sim.empirical_kernels(shape, body, head, x, y)
    for a, b in zip(joint, cross):
        np.testing.assert_allclose(a[:, :5, 5:], b, rtol=1e-12, atol=1e-12)


def test_random_network_kernels_are_reproducible_and_chunk_independent():
    x = np.random.default_rng(0).standard_normal((3, 4))
    one = sim.random_network_kernels(ReluNetwork(2), x, 16, 5, np.random.default_rng(7), chunk=5)
    again = sim.random_network_kernels(ReluNetwork(2), x, 16, 5, np.random.default_rng(7), chunk=5)
    np.testing.assert_array_equal(one[1], again[1])
    assert one[0].shape == one[1].shape == (5, 3, 3)


def test_the_array_module_follows_the_inputs(array_backend):
    _, xp = array_backend
    shape, body, head, x = _small()
    ref = sim.empirical_kernels(shape, body, head, x)
    dev = sim.empirical_kernels(shape, xp.asarray(body), xp.asarray(head), xp.asarray(x))
    for ours, theirs in zip(dev, ref):
        assert backend.get_backend(ours) is xp
        np.testing.assert_allclose(backend.to_host(ours), theirs, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("call, match", [
    (lambda: sim.NetworkShape(4, 0, ReluNetwork(2)), "width"),
    (lambda: sim.NetworkShape(4, 8, ReluNetwork(0)), "depth"),
    (lambda: sim.NetworkShape(0, 8, ReluNetwork(2)), "d"),
    (lambda: sim.random_network_kernels(ReluNetwork(2), np.ones((2, 3)), 8, 0, np.random.default_rng()), "networks"),
])
def test_bad_input_is_a_value_error(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# --------------------------------------------------------------------------- MTL / ANIL training

from transfertheory.sim.mtl.network import TaskData, _Objective  # noqa: E402


def _tasks(seed=0, tasks=2, n=3, d=3, sizes=None):
    rng = np.random.default_rng(seed)
    sizes = [n] * tasks if sizes is None else sizes
    return [rng.standard_normal((m, d)) for m in sizes], [rng.standard_normal((m, 1)) for m in sizes]


@pytest.mark.parametrize("method, lam_tau, sizes", [("mtl", 0.0, None), ("anil", 0.0, None), ("anil", 0.7, None),
                                                    ("mtl", 0.0, (3, 2, 2)), ("anil", 0.7, (3, 2, 2, 3))])
def test_training_gradients_equal_finite_differences_of_the_loss(method, lam_tau, sizes):
    """MTL's and ANIL's analytic gradients (ANIL: second order, through e^{−λτK̂} — Daleckii–Krein) against
    central differences of the loss, away from the initialization; tasks of one size (ANIL: one stack) and of
    several (ANIL: a stack per run of equal sizes)."""
    rng = np.random.default_rng(1)
    shape = sim.NetworkShape(3, 8, ReluNetwork(2, 1.3, 0.3))
    tasks, labels = _tasks(sizes=sizes)
    body0, head0 = sim.init_parameters(shape, 2, rng)
    data = TaskData.from_tasks(tasks, labels, np)
    objective = _Objective(method, shape, data, lam_tau, 0.3 * outputs(shape, sim.forward(shape, body0, data.x).features,
                                                                      head0))
    state = np.concatenate([body0] + [head0] * objective.n_heads, axis=1)
    state = state + 0.1 * rng.standard_normal(state.shape)
    rows = np.arange(2)
    grad, _ = objective(state, rows)
    numeric = np.empty_like(state)
    for i in range(state.shape[1]):
        step = np.zeros_like(state)
        step[:, i] = 1e-6
        numeric[:, i] = (objective(state + step, rows)[1] - objective(state - step, rows)[1]) / 2e-6
    np.testing.assert_allclose(grad, numeric, atol=1e-7 * np.abs(grad).max())


def test_training_converges_and_reports_each_network():
    shape = sim.NetworkShape(3, 64, ReluNetwork(1))
    tasks, labels = _tasks()
    body0, head0 = sim.init_parameters(shape, 3, np.random.default_rng(2))
    done = sim.train("anil", shape, tasks, labels, body0, head0, lam_tau=0.2)
    assert done.converged.all() and done.loss.max() < 1e-6 * sum((y**2).sum() for y in labels)
    cut = sim.train("mtl", shape, tasks, labels, body0, head0, max_steps=2)
    assert list(cut.status) == ["max_steps"] * 3 and (cut.steps == 2).all()


def test_untrained_networks_predict_only_the_head_adaptation():
    """Outputs are centered at initialization: before training, the test prediction is the head's adaptation on
    the support set alone, K̂(X, X′)T̂(Y′), and 0 without adaptation (λτ̂ = 0)."""
    shape = sim.NetworkShape(3, 16, ReluNetwork(2))
    tasks, labels = _tasks()
    body0, head0 = sim.init_parameters(shape, 2, np.random.default_rng(3))
    untrained = sim.train("anil", shape, tasks, labels, body0, head0, max_steps=1)
    untrained = sim.TrainedNetworks("anil", shape, 0.0, np.concatenate([body0, head0], axis=1), body0, head0,
                                    untrained.convergence, untrained.loss)
    support, y_support, query = tasks[0], labels[0], tasks[1]
    for head in sim.TEST_HEADS:
        f = sim.adapted_predictions(untrained, support, y_support, query, 0.0, head, np.random.default_rng(0))
        np.testing.assert_allclose(f, 0.0, atol=1e-12)
    f = sim.adapted_predictions(untrained, support, y_support, query, 0.4, "initial")
    readout_q = sim.empirical_kernels(shape, body0, head0, query, support)[0]
    readout_s = sim.empirical_kernels(shape, body0, head0, support)[0]
    for r in range(2):
        mu, v = np.linalg.eigh(readout_s[r])
        t = (v * ((1 - np.exp(-0.4 * mu)) / mu)) @ v.T
        np.testing.assert_allclose(f[r], readout_q[r] @ t @ y_support[:, 0], rtol=1e-10)


def test_training_on_the_array_backend_matches_numpy(array_backend):
    _, xp = array_backend
    shape = sim.NetworkShape(3, 16, ReluNetwork(1))
    tasks, labels = _tasks()
    body0, head0 = sim.init_parameters(shape, 2, np.random.default_rng(4))
    ref = sim.train("anil", shape, tasks, labels, body0, head0, lam_tau=0.3, max_steps=20)
    dev = sim.train("anil", shape, tasks, labels, xp.asarray(body0), xp.asarray(head0), lam_tau=0.3, max_steps=20)
    assert backend.get_backend(dev.state) is xp
    np.testing.assert_allclose(backend.to_host(dev.state), ref.state, rtol=1e-9, atol=1e-12)
    f_dev = sim.adapted_predictions(dev, tasks[0], labels[0], tasks[1], 0.3, "trained")
    np.testing.assert_allclose(backend.to_host(f_dev), sim.adapted_predictions(ref, tasks[0], labels[0], tasks[1], 0.3,
                                                                               "trained"), rtol=1e-9)


@pytest.mark.parametrize("call, match", [
    (lambda s, b, h, t, y: sim.train("maml", s, t, y, b, h), "method must be one of"),
    (lambda s, b, h, t, y: sim.train("anil", s, t, y, b, h, lam_tau=-1), "lam_tau"),
    (lambda s, b, h, t, y: sim.train("mtl", s, t, y, b, h, gtol=0), "gtol"),
])
def test_bad_training_input_is_a_value_error(call, match):
    shape = sim.NetworkShape(3, 8, ReluNetwork(1))
    body0, head0 = sim.init_parameters(shape, 1, np.random.default_rng(0))
    tasks, labels = _tasks()
    with pytest.raises(ValueError, match=match):
        call(shape, body0, head0, tasks, labels)


def test_bad_test_head_is_a_value_error():
    shape = sim.NetworkShape(3, 8, ReluNetwork(1))
    body0, head0 = sim.init_parameters(shape, 1, np.random.default_rng(0))
    tasks, labels = _tasks()
    trained = sim.train("mtl", shape, tasks, labels, body0, head0, max_steps=1)
    with pytest.raises(ValueError, match="test_head must be one of"):
        sim.adapted_predictions(trained, tasks[0], labels[0], tasks[1], 0.1, "random")
    with pytest.raises(ValueError, match="needs ANIL"):
        sim.adapted_predictions(trained, tasks[0], labels[0], tasks[1], 0.1, "trained")


@pytest.mark.parametrize("claim", ["mtl.lemma1.trained-width-rate", "mtl.lemma1.phi-prime-anil-trained",
                                   "mtl.lemma1.fresh-test-head"])
def test_training_claims_are_an_error_when_a_network_did_not_converge(monkeypatch, claim):
    from transfertheory.claims import check_point, mtl_sim
    rows = [dict(width=h, depth=1, method=m, test_head="initial", draw=0, reference="mtl", matched=True,
                 distance=0.1, converged=h == 64, status="converged" if h == 64 else "max_steps", t_final=1.0,
                 steps=10, grad_norm=1e-6 if h == 64 else 0.5) for h in (64, 128) for m in ("mtl", "anil")]
    monkeypatch.setattr(mtl_sim, "_training_study", lambda profile_name: pd.DataFrame(rows))
    outcome = check_point(claim, profile="quick")
    assert outcome.status == "ERROR"
    assert "2 trained network(s) did not converge" in outcome.error and "h=128" in outcome.error


def test_bad_labels_and_a_missing_rng_are_value_errors():
    shape = sim.NetworkShape(3, 16, ReluNetwork(1))
    tasks, labels = _tasks()
    body0, head0 = sim.init_parameters(shape, 2, np.random.default_rng(3))
    with pytest.raises(ValueError, match=r"labels\[0\] must have shape \(3,\) or \(3, 1\)"):
        sim.train("mtl", shape, tasks, [np.ones((3, 2)), labels[1]], body0, head0)
    with pytest.raises(ValueError, match=r"labels\[1\] must have shape"):
        sim.train("mtl", shape, tasks, [labels[0], np.ones(4)], body0, head0)
    with pytest.raises(ValueError, match="one label array per task"):
        sim.train("mtl", shape, tasks, labels[:1], body0, head0)
    trained = sim.train("mtl", shape, tasks, labels, body0, head0, max_steps=1)
    support, query = tasks[0], tasks[1]
    with pytest.raises(ValueError, match=r"support_labels\[0\] must have shape"):
        sim.adapted_predictions(trained, support, np.ones((3, 2)), query, 0.3)
    with pytest.raises(ValueError, match="rng must be an integer >= 0, a numpy.random.Generator"):
        sim.adapted_predictions(trained, support, labels[0], query, 0.3, "fresh")
    flat = sim.adapted_predictions(trained, support, labels[0][:, 0], query, 0.3)
    np.testing.assert_array_equal(flat, sim.adapted_predictions(trained, support, labels[0], query, 0.3))


def test_cross_gram_of_a_head_with_itself_is_the_body_part_of_the_ntk():
    from transfertheory.claims.mtl_sim import independent_head_cross_gram
    x = np.random.default_rng(4).standard_normal((3, 4))
    cross = independent_head_cross_gram(ReluNetwork(2), x, 32, 5, np.random.default_rng(7), correlation=1.0)
    shape = sim.NetworkShape(4, 32, ReluNetwork(2))
    body, head = sim.init_parameters(shape, 5, np.random.default_rng(7))
    readout, ntk = sim.empirical_kernels(shape, body, head, x)
    np.testing.assert_allclose(cross, ntk - readout, rtol=1e-12, atol=1e-12)
