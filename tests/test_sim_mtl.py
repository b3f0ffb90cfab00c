"""Finite-width deep ReLU networks (transfertheory.sim.mtl): backpropagation and empirical kernels against
finite differences and explicit Jacobians, the array backend, bad input; MTL/ANIL training."""
import numpy as np
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
