"""theory.mtl: bad input, singular points, matrix functions, backends (identities and rates are claims)."""
import math

import numpy as np
import pytest
import scipy.linalg
from hypothesis import given, settings, strategies as st

from transfertheory import backend
from transfertheory.claims.mtl import literal_eq16
from transfertheory.theory import mtl as MTL


def _data(seed=0, tasks=3, n=2, d=4, depth=3):
    rng = np.random.default_rng(seed)
    sets = [rng.standard_normal((n, d)) for _ in range(tasks)]
    support, query = rng.standard_normal((3, d)), rng.standard_normal((2, d))
    tk = MTL.task_kernels(MTL.ReluNetwork(depth), sets, support, query)
    labels = [rng.standard_normal((n, 1)) for _ in range(tasks)]
    return sets, support, query, tk, labels, rng.standard_normal((3, 1))


@pytest.mark.parametrize("call, match", [
    (lambda tk, y, ys: MTL.mtl_predictions(tk, y, ys, -0.1), r"lam_tau_hat must be in \[0, inf\)"),
    (lambda tk, y, ys: MTL.anil_predictions(tk, y, ys, 0.1, 0.1, "lemma"), "variant must be one of"),
    (lambda tk, y, ys: MTL.literal_anil_predictions(tk, y, ys, -0.1, 0.1), r"lam_tau must be in \[0, inf\)"),
    (lambda tk, y, ys: MTL.mtl_predictions(tk, y[:-1], ys, 0.1), "labels must hold one array per task"),
    (lambda tk, y, ys: MTL.mtl_predictions(tk, y, np.ones((3, 2)), 0.1), "support_labels must have 1 output"),
    (lambda tk, y, ys: MTL.ReluNetwork(-1), "depth must be an integer >= 0"),
    (lambda tk, y, ys: MTL.task_kernels(MTL.ReluNetwork(1), []), "tasks must hold at least one array"),
    (lambda tk, y, ys: MTL.task_kernels(MTL.ReluNetwork(1), [np.ones(3)]), r"tasks\[0\] must be a 2-D array"),
    (lambda tk, y, ys: MTL.task_kernels_at_depths([2, 2], [np.ones((2, 3))]), "depths must be distinct"),
    (lambda tk, y, ys: MTL.task_kernels_at_depths([1], []), "tasks must hold at least one array"),
])
def test_bad_input_is_a_value_error(call, match):
    _, _, _, tk, labels, y_support = _data()
    with pytest.raises(ValueError, match=match):
        call(tk, labels, y_support)


@pytest.mark.parametrize("b_std", [0.0, 0.3])
def test_task_kernels_at_depths_equal_task_kernels_per_depth(b_std):
    sets, support, query, _, _, _ = _data(seed=2)
    sets[1][0] = -sets[0][1]  # an antipodal pair across tasks, and a duplicate in the query set
    query = np.vstack([query, sets[2][:1]])
    depths = [16, 1, 4]
    for depth, tk in zip(depths, MTL.task_kernels_at_depths(depths, sets, support, query, b_std=b_std)):
        alone = MTL.task_kernels(MTL.ReluNetwork(depth, b_std=b_std), sets, support, query)
        np.testing.assert_array_equal(tk.nngp, alone.nngp)
        np.testing.assert_array_equal(tk.ntk, alone.ntk)
        assert (tk.sizes, tk.n_support, tk.n_query) == (alone.sizes, alone.n_support, alone.n_query)


def test_duplicated_training_inputs_make_the_kernels_singular():
    """A point repeated within a task makes Θ and Φ_MTL singular; repeated across tasks only Θ (the heads differ,
    so Φ_MTL = Θ − K + blockdiag K keeps full rank)."""
    x = np.random.default_rng(1).standard_normal((2, 3))
    within = MTL.task_kernels(MTL.ReluNetwork(2), [x[[0, 0]], x[1:]], x[:1], x[:1])
    with pytest.raises(ValueError, match="Phi_MTL is singular"):
        MTL.mtl_predictions(within, [np.ones((2, 1)), np.zeros((1, 1))], np.ones((1, 1)), 0.0)
    across = MTL.task_kernels(MTL.ReluNetwork(2), [x, x.copy()], x[:1], x[:1])
    with pytest.raises(ValueError, match="Theta is singular"):
        MTL.kernel_inverse_gap(across)
    assert np.all(np.isfinite(MTL.mtl_predictions(across, [np.ones((2, 1)), np.zeros((2, 1))], np.ones((1, 1)), 0.0)))


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 6), lam_tau=st.floats(0.0, 5.0), seed=st.integers(0, 2**31))
def test_matrix_functions_match_scipy(n, lam_tau, seed):
    a = np.random.default_rng(seed).standard_normal((n, n + 2))
    k = a @ a.T / n
    np.testing.assert_allclose(MTL.symmetric_exp(k, lam_tau), scipy.linalg.expm(-lam_tau * k), atol=1e-12)
    reference = np.linalg.solve(k, np.eye(n) - scipy.linalg.expm(-lam_tau * k))
    scale = max(1.0, lam_tau)
    np.testing.assert_allclose(MTL.adaptation_operator(k, lam_tau), reference,
                               atol=1e-9 * scale * np.linalg.cond(k))


def test_adaptation_operator_at_a_singular_kernel_is_the_limit():
    """T = K⁻¹(I − e^{−sK}) → s on the null space of K (documented value); T = 0 at s = 0."""
    v = np.array([[1.0], [1.0]]) / math.sqrt(2)
    k = 3.0 * v @ v.T  # rank one: eigenvalues 3 and 0
    t = MTL.adaptation_operator(k, 0.5)
    expected = (1 - math.exp(-1.5)) / 3 * v @ v.T + 0.5 * (np.eye(2) - v @ v.T)
    np.testing.assert_allclose(t, expected, atol=1e-15)
    np.testing.assert_array_equal(MTL.adaptation_operator(k, 0.0), 0.0)


def test_long_adaptation_interpolates_the_support_set():
    """λτ̂ → ∞: G_τ̂(X′, X′, Y′) = (I − e^{−λτ̂K})Y′ → Y′ (the adapted head fits the support labels)."""
    _, support, _, tk, _, y_support = _data()
    k_ss = tk.block("nngp", "support", "support")
    np.testing.assert_allclose(MTL.adapted_outputs(k_ss, k_ss, y_support, 1e4), y_support, atol=1e-10)


def test_shapes_and_multi_output_labels():
    sets, _, _, tk, _, _ = _data(tasks=2, n=3)
    rng = np.random.default_rng(3)
    labels = [rng.standard_normal((3, 2)) for _ in sets]
    y_support = rng.standard_normal((3, 2))
    assert MTL.mtl_kernel(tk).shape == MTL.anil_kernel(tk, 0.2).shape == (6, 6)
    assert MTL.mtl_test_kernel(tk, 0.2).shape == MTL.anil_test_kernel(tk, 0.1, 0.2).shape == (2, 6)
    both = MTL.anil_predictions(tk, labels, y_support, 0.1, 0.2)
    assert both.shape == (2, 2)
    first = MTL.anil_predictions(tk, [y[:, :1] for y in labels], y_support[:, :1], 0.1, 0.2)
    np.testing.assert_allclose(both[:, :1], first, rtol=1e-12)


def test_the_array_module_follows_the_inputs(array_backend):
    _, xp = array_backend
    sets, support, query, tk, labels, y_support = _data()
    dev = MTL.task_kernels(MTL.ReluNetwork(3), [xp.asarray(s) for s in sets], xp.asarray(support), xp.asarray(query))
    dev_labels, dev_support = [xp.asarray(y) for y in labels], xp.asarray(y_support)
    for ours, ref in [
        (MTL.mtl_predictions(dev, dev_labels, dev_support, 0.3), MTL.mtl_predictions(tk, labels, y_support, 0.3)),
        (MTL.anil_predictions(dev, dev_labels, dev_support, 0.2, 0.3, "statement"),
         MTL.anil_predictions(tk, labels, y_support, 0.2, 0.3, "statement")),
        (MTL.anil_kernel(dev, 0.2), MTL.anil_kernel(tk, 0.2)),
    ]:
        assert backend.get_backend(ours) is xp
        np.testing.assert_allclose(backend.to_host(ours), ref, rtol=1e-10, atol=1e-12)
    assert MTL.kernel_inverse_gap(dev) == pytest.approx(MTL.kernel_inverse_gap(tk), rel=1e-10)
    problem = MTL.synthetic_problem(np.random.default_rng(3), tasks=3, n=2, test_tasks=3, n_support=2, n_query=2)
    nngp, ntk = MTL.ReluNetwork(2).kernels(problem.points())
    batch = problem.test_task_batch(xp.asarray(nngp), xp.asarray(ntk))
    dev_labels = [xp.asarray(y) for y in problem.labels]
    for variant in MTL.ANIL_VARIANTS:
        ours = MTL.anil_predictions(batch, dev_labels, xp.asarray(np.stack(problem.support_labels)), 0.2, 0.3, variant)
        assert backend.get_backend(ours) is xp
        ref = MTL.anil_predictions(problem.test_task_batch(nngp, ntk), problem.labels,
                                   np.stack(problem.support_labels), 0.2, 0.3, variant)
        np.testing.assert_allclose(backend.to_host(ours), ref, rtol=1e-10, atol=1e-12)


def test_synthetic_problem_has_the_paper_shapes_and_standardized_inputs():
    problem = MTL.synthetic_problem(np.random.default_rng(0))
    assert len(problem.tasks) == len(problem.labels) == 20 and len(problem.support) == len(problem.query) == 20
    assert all(x.shape == (10, 10) and y.shape == (10, 1) for x, y in zip(problem.tasks, problem.labels))
    assert all(s.shape == (5, 10) and q.shape == (10, 10) for s, q in zip(problem.support, problem.query))
    np.testing.assert_allclose((problem.points() ** 2).sum(axis=1), 10.0, rtol=1e-12)
    assert problem.points().shape == (200 + 20 * 15, 10)


def test_synthetic_labels_follow_the_task_law():
    """y = ν‖x − μ‖² with x ~ N(μ, ν²I): E[y] = ν³d; over many tasks ν ~ Unif(1.3, 1.6), E[ν³] = (1.6⁴ − 1.3⁴)/(4·0.3)."""
    rng = np.random.default_rng(1)
    labels = np.concatenate([MTL.synthetic_task(rng, 50, 10)[1].ravel() for _ in range(400)])
    expected = 10 * (1.6**4 - 1.3**4) / (4 * 0.3)
    assert abs(labels.mean() - expected) < 4 * labels.std() / np.sqrt(400)  # tasks dominate the variance


def test_test_task_kernels_slice_the_joint_gram():
    problem = MTL.synthetic_problem(np.random.default_rng(2), tasks=3, n=4, test_tasks=3, n_support=2, n_query=3)
    network = MTL.ReluNetwork(3)
    nngp, ntk = network.kernels(problem.points())
    sliced = problem.test_task_kernels(nngp, ntk, 2)
    direct = MTL.task_kernels(network, problem.tasks, problem.support[2], problem.query[2])
    np.testing.assert_allclose(sliced.ntk, direct.ntk, rtol=1e-13)
    np.testing.assert_allclose(sliced.nngp, direct.nngp, rtol=1e-13)
    assert sliced.sizes == direct.sizes and (sliced.n_support, sliced.n_query) == (2, 3)


@pytest.mark.parametrize("kwargs, match", [(dict(tasks=0), "tasks"), (dict(n=0), "n"), (dict(n_query=1.5), "n_query"),
                                           (dict(d=0), "d")])
def test_synthetic_problem_rejects_bad_sizes(kwargs, match):
    with pytest.raises(ValueError, match=match):
        MTL.synthetic_problem(np.random.default_rng(0), **kwargs)


def test_mtl_fig1_table_matches_direct_predictions():
    """MTL Fig. 1's gaps (Grams sliced per test task) equal the predictions computed task by task."""
    from transfertheory.theory import mtl_gaps
    problem = MTL.synthetic_problem(np.random.default_rng([0, 0]), test_tasks=2)
    gaps = mtl_gaps.prediction_gaps(problem, 3, 0.2)
    tk = MTL.task_kernels(MTL.ReluNetwork(3), problem.tasks, problem.support[1], problem.query[1])
    f_mtl = MTL.mtl_predictions(tk, problem.labels, problem.support_labels[1], 0.2)
    f_anil = MTL.anil_predictions(tk, problem.labels, problem.support_labels[1], 0.2, 0.2, "statement")
    assert gaps["statement"][1] == pytest.approx(np.linalg.norm(f_anil - f_mtl), rel=1e-9)
    table = mtl_gaps.gap_table(depths=(2, 4), lam_taus=(0.0, 0.1), runs=2, test_tasks=2)
    assert list(table.columns) == list(mtl_gaps.COLUMNS) and len(table) == 12  # 2 depths + 2 × 2 λτ, 2 variants
    assert (table["gap_mean"] > 0).all() and set(table["variant"]) == set(MTL.ANIL_VARIANTS)
    first = table[(table["panel"] == "depth") & (table["depth"] == 2) & (table["variant"] == "derivation")]
    direct = mtl_gaps.prediction_gaps(MTL.synthetic_problem(np.random.default_rng([0, 0]), test_tasks=2), 2, 0.0)
    direct_other = mtl_gaps.prediction_gaps(MTL.synthetic_problem(np.random.default_rng([0, 1]), test_tasks=2), 2, 0.0)
    expected = np.mean([direct["derivation"], direct_other["derivation"]])
    assert float(first["gap_mean"].iloc[0]) == pytest.approx(expected, rel=1e-12)


def test_matrix_functions_of_a_stack_equal_those_of_each_matrix():
    a = np.random.default_rng(4).standard_normal((5, 4, 6))
    stack = a @ a.swapaxes(1, 2) / 4
    for fn in (MTL.symmetric_exp, MTL.adaptation_operator):
        batched = fn(stack, 0.7)
        np.testing.assert_allclose(batched, [fn(k, 0.7) for k in stack], rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("lam_tau", [0.0, 0.1, 0.5, 2.0])
def test_batched_test_tasks_equal_the_per_task_predictions(lam_tau):
    """TestTaskBatch (every test task at once) against TaskKernels sliced per test task, all three predictors."""
    problem = MTL.synthetic_problem(np.random.default_rng(6), tasks=4, n=3, test_tasks=5, n_support=3, n_query=4)
    nngp, ntk = MTL.ReluNetwork(4).kernels(problem.points())
    batch = problem.test_task_batch(nngp, ntk)
    support_labels = np.stack(problem.support_labels)
    batched = {"mtl": MTL.mtl_predictions(batch, problem.labels, support_labels, lam_tau)}
    for variant in MTL.ANIL_VARIANTS:
        batched[variant] = MTL.anil_predictions(batch, problem.labels, support_labels, lam_tau, lam_tau, variant)
    for test in range(5):
        tk = problem.test_task_kernels(nngp, ntk, test)
        y_support = problem.support_labels[test]
        single = {"mtl": MTL.mtl_predictions(tk, problem.labels, y_support, lam_tau)}
        for variant in MTL.ANIL_VARIANTS:
            single[variant] = MTL.anil_predictions(tk, problem.labels, y_support, lam_tau, lam_tau, variant)
        for name, value in single.items():
            assert batched[name].shape == (5, 4, 1)
            np.testing.assert_allclose(batched[name][test], value, rtol=1e-12, atol=1e-12 * np.abs(value).max())
    assert MTL.anil_test_kernel(batch, 0.2, lam_tau).shape == MTL.mtl_test_kernel(batch, lam_tau).shape == (5, 4, 12)


@pytest.mark.parametrize("lam_tau", [0.0, 0.1, 0.5, 1.0])
@pytest.mark.parametrize("variant", MTL.ANIL_VARIANTS)
def test_anil_predictions_equal_the_literal_eq16(lam_tau, variant):
    """F_ANIL = G_τ̂ + Φ′_ANIL Φ_ANIL⁻¹[𝒴 − G_τ] assembled literally (a dense solve with Φ_ANIL = DΘD, G_τ by
    expm) equals anil_predictions (which cancels D) within the literal form's rounding, 500·ε·cond(Φ_ANIL)·max|F|."""
    sets, _, _, tk, labels, y_support = _data(tasks=3, n=3)
    literal, tol = literal_eq16(tk, labels, y_support, lam_tau, 0.3, variant)
    ours = MTL.anil_predictions(tk, labels, y_support, lam_tau, 0.3, variant)
    np.testing.assert_allclose(ours, literal, rtol=0, atol=tol)
    # the package's literal form (its D by eigendecomposition) against this one (D by scipy's expm)
    np.testing.assert_allclose(MTL.literal_anil_predictions(tk, labels, y_support, lam_tau, 0.3, variant), literal,
                               rtol=0, atol=tol)


def test_test_task_batch_needs_equal_test_task_sizes():
    problem = MTL.synthetic_problem(np.random.default_rng(2), tasks=2, n=3, test_tasks=2, n_support=2, n_query=3)
    uneven = MTL.FewShotProblem(problem.tasks, problem.labels, (problem.support[0], problem.support[1][:1]),
                                (problem.support_labels[0], problem.support_labels[1][:1]), problem.query,
                                problem.query_labels)
    nngp, ntk = MTL.ReluNetwork(2).kernels(uneven.points())
    with pytest.raises(ValueError, match="test tasks must have equal sizes"):
        uneven.test_task_batch(nngp, ntk)
