"""The one seeding rule (transfertheory.sim.seeding) inside every simulator: each draw is named by a key path under
the seed, so a point's draws do not depend on the other points, the batch or the order of the call."""
import numpy as np
import pandas as pd
import pytest

from transfertheory.sim import deep_linear, mtl, tdr
from transfertheory.sim import merlin as Q
from transfertheory.sim.seeding import generator
from transfertheory.theory import mtl as MTL


def test_the_empty_key_is_the_seeds_own_stream():
    """generator(seed) draws what default_rng(seed) draws (the data seeds of TDR's task pairs and MTL's problems)."""
    np.testing.assert_array_equal(generator(7).standard_normal(5), np.random.default_rng(7).standard_normal(5))


def test_deep_linear_keeps_its_spawn_keys():
    """FaF §3 drew from SeedSequence(seed, spawn_key=…) before the rule was shared: the same numbers now."""
    def old(seed, *key):
        return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=key))

    beta_s, _, _ = deep_linear.task_vectors(6, np.array([0.3]), 11)
    expected = old(11, 0).standard_normal(6)
    np.testing.assert_array_equal(beta_s, expected / np.linalg.norm(expected))
    X, _ = deep_linear.target_draw(6, 4, np.ones((1, 6)), 0.1, 11, 2, 3)
    np.testing.assert_array_equal(X, old(11, 2, 2, 3).standard_normal((4, 6)))


def test_tdr_networks_do_not_depend_on_the_number_of_draws():
    two, three = (tdr.initial_weights(6, 3, draws, seed=4)[0] for draws in (2, 3))
    np.testing.assert_array_equal(two, three[:2])
    np.testing.assert_array_equal(three[2, :3], generator(4, 6, 2).standard_normal((3, 3)))


def test_merlin_target_sets_and_algorithms_do_not_depend_on_the_rest_of_the_call():
    two, three = (Q.target_sets(5, 4, draws, 9) for draws in (2, 3))
    for a, b in zip(two, three):
        np.testing.assert_array_equal(a, b[:2])
    settings = dict(draws=2, restarts=1, splits=1, seed=9, backend="numpy")
    alone = Q.run_comparison(4, 1, 2, [6], 0.1, algorithms=("joint",), **settings)
    together = Q.run_comparison(4, 1, 2, [4, 6], 0.1, algorithms=("target_only", "joint"), **settings)
    joint = together[(together.algorithm == "joint") & (together.n_t == 6)].reset_index(drop=True)
    np.testing.assert_allclose(joint.target_loss, alone.target_loss, rtol=1e-9, atol=1e-12)


def test_mtl_widths_do_not_depend_on_the_other_widths():
    problem = MTL.synthetic_problem(generator(5), tasks=2, n=3, test_tasks=1, n_support=3, n_query=3, d=4)
    network = MTL.ReluNetwork(1)
    alone = mtl.finite_width_study(problem, network, [8], 1, seed=2, backend="numpy")
    together = mtl.finite_width_study(problem, network, [6, 8], 1, seed=2, backend="numpy")
    pd.testing.assert_frame_equal(together[together.width == 8].reset_index(drop=True), alone)


@pytest.mark.parametrize("key", [(0,), (1, 2), (3, 0, 5)])
def test_a_draw_is_a_pure_function_of_seed_and_key_whatever_came_before(key):
    first = generator(3, *key).standard_normal(4)
    generator(3, 9).standard_normal(100)  # another draw in between changes nothing
    np.testing.assert_array_equal(first, generator(3, *key).standard_normal(4))
