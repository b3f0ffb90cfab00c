"""Tests of the FaF §4 ReLU student–teacher simulator (transfertheory.sim.relu_teacher)."""
import numpy as np

from transfertheory.sim.relu_teacher import INIT_OUTPUT_SCALE, paper_init, pretrain_source
from transfertheory.theory.relu import population_loss, random_teacher


def test_paper_init_on_sphere_with_tiny_outputs():
    W, c = paper_init(7, 4, 0, batch=(2,))
    np.testing.assert_allclose(np.linalg.norm(W, axis=-1), 1.0, rtol=1e-14)
    np.testing.assert_allclose(np.abs(c), INIT_OUTPUT_SCALE)


def test_pretraining_drives_population_loss_near_zero_on_the_sphere():
    # A student wider than its teacher (m = 12 > m* = 3) can represent it exactly; the exact flow must
    # bring the loss from ~‖f*‖²/2 down by many orders and keep every row on the sphere.
    W_star, c_star = random_teacher(3, 4, 1, batch=(2,))
    res = pretrain_source(W_star, c_star, 12, 2, max_time=200.0)
    assert np.all(res.initial_loss > 0.05)
    assert np.all(res.loss < 1e-3 * res.initial_loss), res.loss
    assert np.all(np.isfinite(res.grad_norm)) and np.all(res.status != "diverged")
    assert np.all(res.norm_drift < 1e-3), res.norm_drift  # conserved by the exact flow; integration error only
    np.testing.assert_allclose(np.asarray(population_loss(res.W, res.c, W_star, c_star)), res.loss)
