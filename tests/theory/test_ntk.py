"""theory.ntk: bad input, shapes, backends, blocks, the depth-1 arc-cosine identities, Neural Tangents.

The Monte Carlo checks against finite-width random networks are claims (transfertheory/claims/mtl.py).
"""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from transfertheory import backend
from transfertheory.theory import ntk
from transfertheory.theory.ntk import relu_kernel_diagonal, relu_kernels, relu_kernels_at_depths


@pytest.mark.parametrize("kwargs, match", [
    (dict(X=np.ones(3)), "X must have shape"),
    (dict(X=np.ones((2, 3)), Y=np.ones((2, 4))), "Y must have d = 3"),
    (dict(X=np.array([[1.0, np.nan]])), "X must be finite"),
    (dict(X=np.array([["a"]])), "X must be a real array"),
    (dict(X=np.ones((2, 3)), depth=-1), r"depth must be an integer >= 0"),
    (dict(X=np.ones((2, 3)), depth=1.5), r"depth must be an integer"),
    (dict(X=np.ones((2, 3)), w_std=0.0), r"w_std must be in \(0, inf\)"),
    (dict(X=np.ones((2, 3)), b_std=-1.0), r"b_std must be in \[0, inf\)"),
])
def test_bad_input_is_a_value_error_naming_the_parameter(kwargs, match):
    with pytest.raises(ValueError, match=match):
        relu_kernels(**kwargs)


def _arccos_kernels(x, y, w_std):
    """Depth 1, b_std = 0: K and Θ from the arc-cosine kernels of degree 1 and 0 (Cho & Saul 2009), written
    independently of the recursion: ψ from atan2 of the cross product norm and the inner product."""
    d = x.shape[1]
    nx, ny = np.linalg.norm(x, axis=1)[:, None], np.linalg.norm(y, axis=1)[None, :]
    inner = x @ y.T
    cross = np.sqrt(np.maximum((nx * ny) ** 2 - inner**2, 0.0))
    psi = np.arctan2(cross, inner)
    k1 = nx * ny * (np.sin(psi) + (math.pi - psi) * np.cos(psi)) / math.pi  # degree-1 arc-cosine kernel
    k0 = 1 - psi / math.pi  # degree-0
    nngp = w_std**4 / (2 * d) * k1
    ntk_ = nngp + w_std**4 / (2 * d) * inner * k0
    return nngp, ntk_


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 6), m=st.integers(1, 6), d=st.integers(1, 6), w_std=st.floats(0.3, 3.0),
       seed=st.integers(0, 2**31))
def test_depth_one_is_the_arc_cosine_pair(n, m, d, w_std, seed):
    rng = np.random.default_rng(seed)
    x, y = rng.standard_normal((n, d)) * rng.uniform(0.1, 3, (n, 1)), rng.standard_normal((m, d))
    nngp, theta = relu_kernels(x, y, depth=1, w_std=w_std)
    ref_nngp, ref_theta = _arccos_kernels(x, y, w_std)
    scale = w_std**4 * np.outer(np.linalg.norm(x, axis=1), np.linalg.norm(y, axis=1)) / d
    assert np.all(np.abs(nngp - ref_nngp) <= 1e-12 * scale)
    assert np.all(np.abs(theta - ref_theta) <= 1e-12 * scale)  # d = 1: every pair collinear or antipodal


@settings(max_examples=20, deadline=None)
@given(n=st.integers(1, 7), d=st.integers(1, 5), depth=st.integers(0, 12), w_std=st.floats(0.3, 3.0),
       b_std=st.floats(0.0, 2.0), seed=st.integers(0, 2**31))
def test_gram_is_symmetric_psd_with_the_diagonal_recursion(n, d, depth, w_std, b_std, seed):
    x = np.random.default_rng(seed).standard_normal((n, d))
    nngp, theta = relu_kernels(x, depth=depth, w_std=w_std, b_std=b_std)
    assert nngp.shape == theta.shape == (n, n)
    np.testing.assert_allclose(nngp, nngp.T, rtol=1e-13, atol=1e-15 * np.abs(nngp).max())
    np.testing.assert_allclose(theta, theta.T, rtol=1e-13, atol=1e-15 * np.abs(theta).max())
    k_diag, t_diag = relu_kernel_diagonal(x, depth=depth, w_std=w_std, b_std=b_std)
    np.testing.assert_allclose(np.diag(nngp), k_diag, rtol=1e-13, atol=0)
    np.testing.assert_allclose(np.diag(theta), t_diag, rtol=1e-13, atol=0)
    for gram in (nngp, theta):  # PSD up to rounding; Θ − K is PSD too (it is a sum of Gram matrices)
        assert np.linalg.eigvalsh(gram)[0] >= -1e-12 * np.abs(gram).max()
    assert np.linalg.eigvalsh(theta - nngp)[0] >= -1e-12 * np.abs(theta).max()
    # the cross form on the same set equals the Gram (the diagonal then goes through the clipped arccos)
    cross_nngp, cross_theta = relu_kernels(x, x.copy(), depth=depth, w_std=w_std, b_std=b_std)
    np.testing.assert_allclose(cross_nngp, nngp, rtol=1e-12, atol=1e-12 * np.abs(nngp).max())
    np.testing.assert_allclose(cross_theta, theta, rtol=1e-12, atol=1e-12 * np.abs(theta).max())


def test_depth_zero_is_the_linear_kernel():
    x = np.random.default_rng(0).standard_normal((4, 3))
    nngp, theta = relu_kernels(x, depth=0, w_std=1.5, b_std=0.5)
    np.testing.assert_allclose(nngp, 2.25 * x @ x.T / 3 + 0.25, rtol=1e-15)
    np.testing.assert_array_equal(nngp, theta)


def test_row_blocks_give_the_unblocked_values(monkeypatch):
    x = np.random.default_rng(1).standard_normal((37, 4))
    whole = relu_kernels(x, depth=4, b_std=0.3)
    monkeypatch.setattr(ntk, "_BLOCK_ELEMENTS", 37 * 5)  # blocks of 5 rows, the last of 2
    blocked = relu_kernels(x, depth=4, b_std=0.3)
    for a, b in zip(whole, blocked):  # the same formulas; BLAS may round a block's products differently
        np.testing.assert_allclose(a, b, rtol=1e-14, atol=0)


def test_zero_input_and_coincident_and_antipodal_pairs():
    x = np.array([[0.0, 0.0], [1.0, 2.0], [1.0, 2.0], [-1.0, -2.0]])
    nngp, theta = relu_kernels(x, depth=3)
    assert np.all(np.isfinite(nngp)) and np.all(np.isfinite(theta))
    np.testing.assert_array_equal(nngp[0], 0.0)  # b_std = 0: a zero input has zero covariance
    np.testing.assert_allclose(nngp[1, 2], nngp[1, 1], rtol=1e-14)
    np.testing.assert_allclose(theta[1, 2], theta[1, 1], rtol=1e-14)
    # antipodal at depth 1: ψ = π, so Σ¹ = 0 and Σ̇¹ = 0; deeper layers see zero correlation
    k1, t1 = relu_kernels(x[1:2], x[3:4], depth=1)
    assert abs(k1[0, 0]) <= 1e-15 and abs(t1[0, 0]) <= 1e-15


def _collinear_inputs(seed):
    """Random rows with a zero row, an exact duplicate, a rescaled copy, an antipode and near-(anti)duplicates
    (offsets 1e-9: the near-collinear refinement), and a second set sharing some of those directions."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((9, 3))
    x[1], x[2], x[3], x[4] = 0.0, x[0], 2.5 * x[0], -x[5]
    x[6] = x[5] + 1e-9 * rng.standard_normal(3)
    x[7] = -x[8] + 1e-9 * rng.standard_normal(3)
    y = rng.standard_normal((5, 3))
    y[0], y[1], y[2] = x[0], -3.0 * x[5], x[8] * (1 + 1e-10)
    return x, y


@pytest.mark.parametrize("blocked", [False, True])
@pytest.mark.parametrize("w_std, b_std", [(2**0.5, 0.0), (1.3, 0.4)])
@pytest.mark.parametrize("cross", [False, True])
def test_kernels_at_depths_equal_one_call_per_depth_bit_for_bit(cross, w_std, b_std, blocked, monkeypatch):
    x, y = _collinear_inputs(5)
    second = y if cross else None
    if blocked:
        monkeypatch.setattr(ntk, "_BLOCK_ELEMENTS", 4 * x.shape[0])  # a few rows per block, the last shorter
    depths = [7, 0, 1, 40, 3]  # any order, depth 0 (no refinement) included
    together = relu_kernels_at_depths(x, second, depths=depths, w_std=w_std, b_std=b_std)
    assert len(together) == len(depths)
    for depth, (nngp, theta) in zip(depths, together):
        alone = relu_kernels(x, second, depth=depth, w_std=w_std, b_std=b_std)
        np.testing.assert_array_equal(nngp, alone[0], err_msg=f"NNGP at depth {depth}")
        np.testing.assert_array_equal(theta, alone[1], err_msg=f"NTK at depth {depth}")


def test_kernels_at_depths_give_separate_arrays():
    x, _ = _collinear_inputs(6)
    (k1, t1), (k2, t2) = relu_kernels_at_depths(x, depths=[2, 5])
    reference = relu_kernels(x, depth=5)
    k1[...], t1[...] = np.nan, np.nan
    np.testing.assert_array_equal(k2, reference[0])
    np.testing.assert_array_equal(t2, reference[1])


@pytest.mark.parametrize("depths, match", [
    ([], "depths must be a non-empty sequence"),
    ([3, 1, 3], "depths must be distinct"),
    ([2, -1], r"depths must be an integer >= 0"),
    ([1.5], r"depths must be an integer >= 0"),
    ([[1, 2]], "depths must be a non-empty sequence"),
    ("deep", "depths must be a real number"),
])
def test_kernels_at_depths_reject_bad_depths(depths, match):
    with pytest.raises(ValueError, match=match):
        relu_kernels_at_depths(np.ones((2, 3)), depths=depths)


@pytest.mark.parametrize("sign", [1.0, -1.0])
@pytest.mark.parametrize("offset", [1e-4, 1e-7, 1e-10, 1e-13, 0.0])
def test_near_duplicate_and_near_antipodal_pairs_are_accurate(offset, sign):
    """Against the same recursion in 50-digit arithmetic (mpmath) for a pair at distance ``offset``."""
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 50
    rng = np.random.default_rng(4)
    x = rng.standard_normal((1, 4))
    y = sign * x + offset * rng.standard_normal((1, 4))
    w, b, depth = 2**0.5, 0.3, 6
    xs, ys = [mpmath.mpf(float(v)) for v in x[0]], [mpmath.mpf(float(v)) for v in y[0]]
    def dot(u, v):
        return sum(p * q for p, q in zip(u, v))
    sxx, syy, sxy = (w**2 * dot(u, v) / 4 + b**2 for u, v in ((xs, xs), (ys, ys), (xs, ys)))
    theta = sxy
    for _ in range(depth):
        psi = mpmath.acos(sxy / mpmath.sqrt(sxx * syy))
        new = w**2 / (2 * mpmath.pi) * mpmath.sqrt(sxx * syy) * (mpmath.sin(psi) + (mpmath.pi - psi) * mpmath.cos(psi))
        theta = new + b**2 + theta * w**2 / (2 * mpmath.pi) * (mpmath.pi - psi)
        sxy, sxx, syy = new + b**2, w**2 / 2 * sxx + b**2, w**2 / 2 * syy + b**2
    nngp, ntk_ = relu_kernels(x, y, depth=depth, w_std=w, b_std=b)
    assert abs(nngp[0, 0] - float(sxy)) <= 1e-14 * float(sxx)
    assert abs(ntk_[0, 0] - float(theta)) <= 1e-13 * float(theta) + 1e-14 * float(sxx)


def test_float32_inputs_give_float32_kernels():
    x = np.random.default_rng(2).standard_normal((5, 3)).astype(np.float32)
    nngp, theta = relu_kernels(x, depth=2)
    assert nngp.dtype == theta.dtype == np.float32
    ref = relu_kernels(x.astype(float), depth=2)
    np.testing.assert_allclose(theta, ref[1], rtol=1e-5)


def test_the_array_module_follows_the_inputs(array_backend):
    name, xp = array_backend
    x = np.random.default_rng(3).standard_normal((6, 4))
    ref = relu_kernels(x, x[:3], depth=3, b_std=0.2)
    out = relu_kernels(xp.asarray(x), xp.asarray(x[:3]), depth=3, b_std=0.2)
    diag = relu_kernel_diagonal(xp.asarray(x), depth=3)
    for a, b in zip(out, ref):
        assert backend.get_backend(a) is xp
        np.testing.assert_allclose(backend.to_host(a), b, rtol=1e-14)
    assert backend.get_backend(diag[0]) is xp
    gram = relu_kernels(xp.asarray(x), depth=3)
    np.testing.assert_allclose(backend.to_host(gram[1]), relu_kernels(x, depth=3)[1], rtol=1e-14)


@pytest.mark.parametrize("depth, w_std, b_std", [(0, 1.0, 0.5), (1, 2**0.5, 0.0), (3, 1.3, 0.4), (10, 2**0.5, 0.0),
                                                 (20, 2**0.5, 0.1)])
def test_neural_tangents_analytic_kernels(depth, w_std, b_std):
    """Neural Tangents' stax analytic kernels (an optional, independent implementation) to float precision
    (measured max relative difference 3.6e-15 over these cases)."""
    pytest.importorskip("neural_tangents")
    import jax
    jax.config.update("jax_enable_x64", True)
    from neural_tangents import stax
    rng = np.random.default_rng(depth)
    x, y = rng.standard_normal((12, 7)), rng.standard_normal((9, 7))
    layers = [stax.Dense(1, W_std=w_std, b_std=b_std), stax.Relu()] * depth
    kernel_fn = stax.serial(*layers, stax.Dense(1, W_std=w_std, b_std=b_std))[2]
    for second in (y, None):
        reference = kernel_fn(x, second, ("nngp", "ntk"))
        ours = relu_kernels(x, second, depth=depth, w_std=w_std, b_std=b_std)
        for a, b in zip(ours, (reference.nngp, reference.ntk)):
            b = np.asarray(b)
            assert np.abs(a - b).max() <= 1e-13 * np.abs(b).max()
