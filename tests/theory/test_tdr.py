"""TDR §6 closed forms (transfertheory.theory.tdr): what the tdr.* claims do not cover.

Bad input, exact identities (interpolation, scaling), the stable solve at near-duplicate inputs
against the exact 2×2 inverse, the documented values at exactly singular Grams, and CuPy.
"""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from transfertheory.backend import cupy_available, resolve_backend, to_host
from transfertheory.theory import tdr as NTK


def _sphere(rng, n, d):
    x = rng.standard_normal((n, d))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _pair_at_angle(rng, d, delta):
    """Two unit vectors at angle delta (exactly representable construction)."""
    x = _sphere(rng, 1, d)[0]
    e = rng.standard_normal(d)
    e -= (e @ x) * x
    e /= np.linalg.norm(e)
    return np.stack([x, math.cos(delta) * x + math.sin(delta) * e])


@pytest.fixture
def data():
    rng = np.random.default_rng(3)
    x_p, x_q = _sphere(rng, 7, 5), _sphere(rng, 5, 5)
    return x_p, x_p[:, 0], x_q, 0.6 * x_q[:, 0] + 0.8 * x_q[:, 1]


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("bad, match", [
    (np.ones((3, 2)), r"X rows must have unit norm"),
    (np.array([1.0, 0.0]), r"X must have shape \(n, d\)"),
    (np.array([[np.nan, 1.0]]), r"X must be finite"),
    (np.array([[True, False]]), r"X must be a real array"),
    (np.zeros((0, 3)), r"X must have shape \(n, d\) with n, d >= 1"),
])
def test_gram_rejects_bad_inputs(bad, match):
    with pytest.raises(ValueError, match=match):
        NTK.two_layer_gram(bad)


def test_functions_reject_bad_labels_and_shapes(data):
    x_p, y_p, x_q, y_q = data
    with pytest.raises(ValueError, match=r"y_P must be in \[-1, 1\].*got 1.5"):
        NTK.transformed_labels(x_p, np.full(len(x_p), 1.5), x_q)
    with pytest.raises(ValueError, match=r"y_Q must have shape \(5,\) to match X_Q"):
        NTK.finetune_distance_bound(x_p, y_p, x_q, y_q[:-1])
    with pytest.raises(ValueError, match=r"X_P and X_Q must have the same input dimension d, got 5 and 4"):
        NTK.transformed_labels(x_p, y_p, _sphere(np.random.default_rng(0), 3, 4))
    with pytest.raises(ValueError, match=r"X_Q rows must have unit norm"):
        NTK.scratch_distance(2 * x_q, y_q)
    with pytest.raises(ValueError, match=r"y_Q must be in \[-1, 1\]"):
        NTK.scratch_distance(x_q, np.where(np.arange(5) == 2, np.nan, y_q))
    with pytest.raises(ValueError, match=r"X and Y must have the same input dimension"):
        NTK.two_layer_gram(x_p, _sphere(np.random.default_rng(0), 3, 4))


# --------------------------------------------------------------------------- the Gram matrix


def test_gram_matches_the_arccos_formula_and_its_symmetries(data):
    x_p, _, x_q, _ = data
    h = NTK.two_layer_gram(x_p)
    c = np.clip(x_p @ x_q.T, -1, 1)
    np.testing.assert_allclose(NTK.two_layer_gram(x_p, x_q), c * (np.pi - np.arccos(c)) / (2 * np.pi), atol=1e-12)
    np.testing.assert_array_equal(np.diag(h), 0.5)
    np.testing.assert_allclose(h, h.T, atol=0)
    np.testing.assert_allclose(NTK.two_layer_gram(x_q, x_p), NTK.two_layer_gram(x_p, x_q).T, atol=1e-15)
    assert np.linalg.eigvalsh(h)[0] > 0
    assert NTK.two_layer_gram(x_p[:1], -x_p[:1])[0, 0] == 0.0  # antipodal: no common half-space


@pytest.mark.parametrize("delta", [1e-3, 1e-7, 1e-11])
def test_near_duplicates_are_solved_to_the_exact_two_by_two_inverse(delta):
    """H = [[a, b], [b, a]], a = 1/2, b = cos δ (π − δ)/(2π): a − b = (2π sin²(δ/2) + δ cos δ)/(2π) (no
    cancellation), yᵀH⁻¹y = (a(y₁ − y₂)² + 2(a − b)y₁y₂)/((a − b)(a + b)); λ_min = a − b ≈ δ/(2π)."""
    x = _pair_at_angle(np.random.default_rng(1), 4, delta)
    a, b = 0.5, math.cos(delta) * (math.pi - delta) / (2 * math.pi)
    a_minus_b = (2 * math.pi * math.sin(delta / 2) ** 2 + delta * math.cos(delta)) / (2 * math.pi)
    solve = NTK.gram_solve(x)
    assert solve.lambda_min == pytest.approx(a_minus_b, rel=1e-6)
    for y1, y2 in [(0.5, 0.3), (0.9, -0.2), (0.4, 0.4)]:
        exact = (a * (y1 - y2) ** 2 + 2 * a_minus_b * y1 * y2) / (a_minus_b * (a + b))
        # eigen-solve accuracy ~ ε·cond(H) relative (cond ≈ π/δ)
        assert NTK.scratch_distance(x, np.array([y1, y2])) ** 2 == pytest.approx(exact, rel=max(1e-12, 50e-16 / delta))


def test_exact_duplicates_have_documented_values():
    x = np.repeat(_sphere(np.random.default_rng(2), 1, 3), 2, axis=0)
    solve = NTK.gram_solve(x)
    assert solve.lambda_min == 0.0 and solve.condition_number == math.inf
    # consistent labels: the pseudo-inverse value equals the single point's y²/(1/2)
    assert NTK.scratch_distance(x, np.array([0.3, 0.3])) == pytest.approx(math.sqrt(2) * 0.3, rel=1e-12)
    assert NTK.scratch_distance(x, np.array([0.3, 0.2])) == math.inf
    with pytest.raises(ValueError, match=r"y_P has a component in the null space"):
        NTK.transformed_labels(x, np.array([0.3, 0.2]), x[:1])
    np.testing.assert_allclose(NTK.transformed_labels(x, np.array([0.3, 0.3]), x[:1]), [0.3], rtol=1e-12)


# --------------------------------------------------------------------------- exact identities


_SETS = st.fixed_dictionaries({"n": st.integers(1, 8), "d": st.integers(2, 6), "seed": st.integers(0, 2**32 - 1),
                               "scale": st.floats(0.05, 1.0)})


@settings(max_examples=25, deadline=None)
@given(_SETS)
def test_transfer_to_the_pretraining_inputs_is_exact(p):
    """Q = P: y_{P→Q} = H_P H_P⁻¹ y_P = y_P (kernel interpolation), so with y_Q = y_P the fine-tuning
    distance is 0 and Thm 1's change is −‖y_Q‖² + 0; the scratch distance is linear in the labels."""
    rng = np.random.default_rng(p["seed"])
    x = _sphere(rng, p["n"], p["d"])
    y = rng.uniform(-1, 1, p["n"])
    if NTK.gram_solve(x).condition_number > 1e8:
        return
    summary = NTK.transfer_summary(x, y, x, y)
    np.testing.assert_allclose(summary.transformed_labels, y, atol=1e-8)
    assert summary.finetune_distance <= 1e-6
    assert summary.gradient.change == pytest.approx(-float(y @ y), abs=1e-10)
    assert summary.gradient.at_init == pytest.approx(float(y @ y))
    assert NTK.scratch_distance(x, p["scale"] * y) == pytest.approx(p["scale"] * summary.scratch_distance, rel=1e-10)


def test_summary_agrees_with_the_single_functions(data):
    x_p, y_p, x_q, y_q = data
    s = NTK.transfer_summary(x_p, y_p, x_q, y_q)
    np.testing.assert_allclose(s.transformed_labels, NTK.transformed_labels(x_p, y_p, x_q), atol=0)
    assert s.finetune_distance == NTK.finetune_distance_bound(x_p, y_p, x_q, y_q)
    assert s.scratch_distance == NTK.scratch_distance(x_q, y_q)
    r = y_q - s.transformed_labels
    h_q, h_p, h_pq = NTK.two_layer_gram(x_q), NTK.two_layer_gram(x_p), NTK.two_layer_gram(x_p, x_q)
    np.testing.assert_allclose(s.transformed_labels, h_pq.T @ np.linalg.solve(h_p, y_p), atol=1e-12)
    assert s.finetune_distance == pytest.approx(math.sqrt(r @ np.linalg.solve(h_q, r)), rel=1e-10)
    assert s.gradient == NTK.gradient_norm_change(x_p, y_p, x_q, y_q)
    assert s.lambda_P == pytest.approx(np.linalg.eigvalsh(h_p)[0], rel=1e-10)
    assert s.lambda_Q == pytest.approx(np.linalg.eigvalsh(h_q)[0], rel=1e-10)


@pytest.mark.skipif(not cupy_available(), reason="CuPy with a CUDA device is not available")
def test_cupy_inputs_give_the_numpy_values(data):
    cp = resolve_backend("cupy")
    x_p, y_p, x_q, y_q = data
    s_gpu = NTK.transfer_summary(cp.asarray(x_p), cp.asarray(y_p), cp.asarray(x_q), cp.asarray(y_q))
    s_cpu = NTK.transfer_summary(x_p, y_p, x_q, y_q)
    assert type(s_gpu.transformed_labels).__module__.startswith("cupy")
    np.testing.assert_allclose(to_host(s_gpu.transformed_labels), s_cpu.transformed_labels, atol=1e-10)
    assert s_gpu.finetune_distance == pytest.approx(s_cpu.finetune_distance, rel=1e-9)
    assert s_gpu.scratch_distance == pytest.approx(s_cpu.scratch_distance, rel=1e-9)
