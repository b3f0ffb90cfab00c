"""MeRLin §5 closed forms (transfertheory.theory.merlin): what the claims registry does not cover.

The claims (transfertheory/claims/merlin.py) check the formulas against enumeration, Monte Carlo and numerical
minimization; here: the moment tensor, the samplers' law, gradients, batching, backends, singular points and
bad input.
"""
import itertools
import math
import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from transfertheory.theory import merlin as M


def _enumerate(d, k):
    """(x, y, probability) of every outcome of the law, written out from its definition."""
    out = []
    for y in (0, 1):
        for x in itertools.product(*[[0] if y == 0 else [-1, 1]] * k, *[[-1, 0, 1]] * (d - k)):
            out.append((np.array(x, float), y, (1 / 3 if y == 0 else 2 / 3 * 0.5 ** k) / 3 ** (d - k)))
    return out


def test_sampler_frequencies_match_the_law():
    """Each cell of (y, x₁, x₂, x₃) at d = 3, k = 2 within 4.5 binomial SE of its exact probability."""
    n = 60_000
    x, y = M.sample_source(n, 3, 2, np.random.default_rng(3))
    for xv, yv, p in _enumerate(3, 2):
        freq = np.mean(np.all(x == xv, axis=1) & (y == yv))
        assert abs(freq - p) <= 4.5 * math.sqrt(p * (1 - p) / n), (xv, yv, freq, p)
    xt, yt = M.sample_target(1000, 5, 7)
    assert np.array_equal(yt, xt[:, 0] ** 2) and set(np.unique(xt)) <= {-1.0, 0.0, 1.0}


@given(st.integers(1, 6), st.integers(1, 4), st.integers(0, 10 ** 6))
def test_gradients_match_finite_differences(d, m, seed):
    rng = np.random.default_rng(seed)
    k = int(rng.integers(1, d + 1))
    theta, phi = rng.normal(size=m), rng.normal(size=(d, m))
    _, dtheta, dphi = M.population_loss_and_grad(theta, phi, k)
    h = 1e-6
    for i in range(m):
        e = np.zeros(m)
        e[i] = h
        fd = (M.population_loss(theta + e, phi, k) - M.population_loss(theta - e, phi, k)) / (2 * h)
        assert fd == pytest.approx(dtheta[i], rel=1e-5, abs=1e-5)
    a, i = int(rng.integers(d)), int(rng.integers(m))
    E = np.zeros((d, m))
    E[a, i] = h
    fd = (M.population_loss(theta, phi + E, k) - M.population_loss(theta, phi - E, k)) / (2 * h)
    assert fd == pytest.approx(dphi[a, i], rel=1e-5, abs=1e-5)


def test_population_loss_is_batched_and_invariant():
    rng = np.random.default_rng(0)
    theta, phi = rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 3, 5, 4))
    batch, dtheta, dphi = M.population_loss_and_grad(theta, phi, 2)
    assert batch.shape == (2, 3) and dtheta.shape == theta.shape and dphi.shape == phi.shape
    for b, c in itertools.product(range(2), range(3)):
        assert batch[b, c] == pytest.approx(M.source_loss(theta[b, c], phi[b, c], 2), rel=1e-13)
    # neuron permutation and φᵢ → −φᵢ leave f unchanged; a zero network has loss E y² = 2/3
    perm = [2, 0, 3, 1]
    assert M.target_loss(theta[0, 0, perm], -phi[0, 0][:, perm]) == pytest.approx(M.target_loss(theta[0, 0], phi[0, 0]))
    assert M.population_loss(np.zeros(3), np.zeros((4, 3)), 3) == pytest.approx(2 / 3)
    assert M.target_loss([1.0], np.eye(4)[:, [0]]) == 0.0  # the target's ground truth


def test_lemma4_threshold_and_paper_condition():
    lam_c = M.SOURCE_SCALE_THRESHOLD
    assert lam_c == pytest.approx(2 ** (1 / 3) / 3)
    # at the threshold the positive critical point μ = 1/2 ties with μ = 0 (value 2/3) and is critical
    assert M.source_scale_objective(0.5, lam_c) == pytest.approx(2 / 3, abs=1e-15)
    assert M.optimal_source_scale(lam_c) == pytest.approx(M.SOURCE_SCALE_JUMP, abs=1e-9)
    assert M.optimal_source_scale(lam_c * (1 - 1e-9)) >= 0.5 and M.optimal_source_scale(lam_c * (1 + 1e-9)) == 0
    # the paper's sufficient condition L(1) < L(0) holds exactly for λ < 2^{5/3}/9 ≈ 0.353, so λ < 0.1 suffices
    assert M.source_scale_objective(1.0, 2 ** (5 / 3) / 9) == pytest.approx(2 / 3)
    lam = np.linspace(1e-4, 0.41, 50)
    mu = M.optimal_source_scale(lam)
    assert np.all(np.diff(mu) < 0) and np.all(mu > 0.5) and np.all(mu < 1)


@given(st.floats(1e-4, 0.419))
def test_optimal_source_scale_is_a_critical_point(lam):
    mu = M.optimal_source_scale(lam)
    derivative = 2 * lam / 2 ** (2 / 3) * mu ** (-1 / 3) + 4 / 3 * (mu - 1)
    assert abs(derivative) < 1e-10
    theta, phi = M.source_minimizer(lam, 5, 3, 4, 3, sign=-1, neuron=2)
    assert theta[2] == pytest.approx((mu / 2) ** (1 / 3)) and phi[2, 2] == pytest.approx(-math.sqrt(2) * theta[2])
    assert np.count_nonzero(phi) == 1 and np.count_nonzero(theta) == 1


def test_optimal_scale_singular_points():
    assert M.optimal_scale(1.0, 0.0) == 0.0  # no fit term: μ = 0
    assert M.optimal_scale(0.0, 1.0) == pytest.approx(1.0)  # no penalty: μ = 1
    assert M.optimal_scale(3 * 2 ** (-4 / 3), 1.0) == pytest.approx(0.5)  # the tie a = 2^{-4/3}


def test_joint_bound_properties():
    lam, alpha, eps = 0.2, np.linspace(0, 1, 11), np.linspace(0, 2 / 3, 11)
    grid = M.joint_training_lower_bound(lam, alpha[:, None], eps[None, :])
    assert np.all(np.diff(grid, axis=0) <= 1e-15) and np.all(np.diff(grid, axis=1) < 0)
    # α = 1: no source term, ε = 2/3: no target term
    assert M.joint_training_lower_bound(lam, 1.0, 2 / 3) == 0.0
    # tight at λ → 0 through a shared feature e₁ (docs/merlin.md): the bound equals 3λ/2^{1/3} + O(λ²)
    assert M.joint_training_lower_bound(1e-6, 0.0, 0.0) == pytest.approx(3e-6 / 2 ** (1 / 3), rel=1e-5)


def test_head_loss_and_fit_probability_values():
    assert M.finetune_head_loss(M.FINETUNE_HEAD_ARGMIN) == pytest.approx(10 / 27)
    assert M.finetune_head_loss(0.0) == pytest.approx(2 / 3)  # ϕ_pre = 0 (Eq. 51)
    assert M.finetune_failure_probability(np.array([2, 4])) == pytest.approx([0.5, 0.75])
    n = np.arange(1, 400)
    exact, bound = M.wrong_feature_fit_probability(n), M.wrong_feature_fit_bound(n)
    assert exact[0] == pytest.approx(7 / 9) and bound[0] == pytest.approx(2 / 3)
    assert np.all(exact[1:] <= bound[1:])  # one feature's two events together exceed (2/3)ⁿ only at n = 1
    assert M.merlin_sample_size(2, 0.5) == math.ceil(18 * math.log(4))
    assert M.merlin_sample_size(10 ** 9, 0.5) == math.ceil(3 * math.log(4e9))


@pytest.mark.parametrize("call, message", [
    (lambda: M.sample_source(5, 3, 1, 0), "k must be an integer >= 2, got 1"),
    (lambda: M.sample_source(5, 3, 4, 0), "k must be an integer in [2, d]"),
    (lambda: M.sample_target(0, 3, 0), "n must be an integer >= 1"),
    (lambda: M.population_loss(np.ones(2), np.ones((3, 3)), 1), "same m"),
    (lambda: M.population_loss(np.ones(2), np.ones((3, 2)), 4), "k must be an integer in [1, d]"),
    (lambda: M.population_loss([np.nan], np.ones((3, 1)), 1), "finite"),
    (lambda: M.optimal_source_scale(0.0), "lam must be in (0, inf)"),
    (lambda: M.joint_training_lower_bound(0.1, 0.5, 0.7), "eps must be in [0, 0.666667]"),
    (lambda: M.joint_training_lower_bound(0.1, 1.5, 0.1), "alpha must be in [0, 1]"),
    (lambda: M.wrong_feature_fit_probability(0), "n must be an integer >= 1"),
    (lambda: M.merlin_sample_size(3, 1.0), "xi must be in (0, 1)"),
    (lambda: M.source_minimizer(0.1, 4, 2, 3, 4), "j must be an integer in [1, k]"),
    (lambda: M.source_minimizer(0.1, 4, 2, 3, 1, sign=2), "sign must be 1 or -1"),
])
def test_bad_input_names_the_parameter(call, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        call()


@pytest.mark.gpu
def test_cupy_matches_numpy():
    import cupy as cp

    rng = np.random.default_rng(1)
    theta, phi = rng.normal(size=(7, 3)), rng.normal(size=(7, 6, 3))
    host = M.population_loss_and_grad(theta, phi, 2)
    device = M.population_loss_and_grad(cp.asarray(theta), cp.asarray(phi), 2)
    for h, g in zip(host, device):
        assert isinstance(g, cp.ndarray)
        np.testing.assert_allclose(cp.asnumpy(g), h, rtol=1e-12)


def test_any_wrong_fit_and_lemma2_inputs():
    # n = 1: x₁ = 0 lets γ = 0 fit; otherwise some x_j ≠ 0 among k − 1 features: 1 − (2/3)·3^{−(k−1)}
    for k in (2, 3, 7):
        assert M.any_wrong_feature_fit_probability(1, k) == pytest.approx(1 - 2 / 3 * 3.0 ** (1 - k), rel=1e-13)
    assert M.any_wrong_feature_fit_probability(400, 10 ** 6) < 1e-60
    theta_s, theta_t, phi = M.joint_training_construction(0.1, 0.5, np.zeros(4))
    assert not theta_t.any() and not phi[:, 1].any() and theta_s[0] > 0
    assert M.joint_training_construction_value(0.1, 0.5, 0.0) < M.joint_training_construction_value(0.1, 0.5, 1.0)
    with pytest.raises(ValueError, match=re.escape("feature must be a finite vector of shape (d,)")):
        M.joint_training_construction(0.1, 0.5, np.ones((2, 2)))
    with pytest.raises(ValueError, match=re.escape("k must be an integer >= 2, got 1")):
        M.any_wrong_feature_fit_probability(3, 1)
