"""Task distances (FaF §2.1, App. B.1; FaF Assumption 2.1): each formula against an independent computation.

Statistical checks: |MC mean − formula| ≤ K·SE (+ a stated allowance, 0 unless said), with SE the
sample standard deviation of the Monte Carlo estimator divided by √N. Seeds are derived from the
parameters, so every example is reproducible.
"""
import zlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from scipy.linalg import sqrtm

from transfertheory.theory import distances as D
from transfertheory.theory import linear

K = 4.0  # standard errors allowed in every Monte Carlo comparison


def seed_of(*params) -> int:
    """A deterministic seed from the test parameters."""
    return zlib.crc32(np.asarray(params, dtype=float).tobytes())


def assert_mc(draws, expected, allowance=0.0):
    """Check a Monte Carlo mean against ``expected`` within K·SE + allowance; returns z."""
    draws = np.asarray(draws, dtype=float)
    mean, se = draws.mean(), draws.std(ddof=1) / np.sqrt(draws.size)
    z = (mean - expected) / se if se > 0 else 0.0
    print(f"MC z = {z:+.3f} (mean {mean:.6g}, expected {expected:.6g}, SE {se:.3g})")
    assert abs(mean - expected) <= K * se + allowance, f"z = {z:.2f}"
    return z


def unit_pair(d, theta):
    """β_s = e₁ and a unit β_t at angle θ to it, in ℝ^d."""
    bs = np.zeros(d)
    bs[0] = 1.0
    bt = np.zeros(d)
    bt[0], bt[1] = np.cos(theta), np.sin(theta)
    return bs, bt


# --------------------------------------------------------------------------- KL


def test_kl_divergence_in_a_nonlinear_orthonormal_basis_matches_monte_carlo():
    """Eq. 30/34 for f, g in the normalized Hermite basis He_k/√k! of L²(N(0,1))."""
    rng = np.random.default_rng(7)
    alpha_f, alpha_g, sigma = np.array([0.3, -0.5, 0.8, 0.2]), np.array([0.1, 0.4, 0.0, -0.6]), 0.7
    x = rng.standard_normal(50_000)
    basis = np.stack([np.polynomial.hermite_e.hermeval(x, np.eye(4)[k]) / np.sqrt(np.prod(range(1, k + 1)))
                      for k in range(4)], axis=-1)
    f, g = basis @ alpha_f, basis @ alpha_g
    y = f + sigma * rng.standard_normal(x.size)
    llr = ((y - g) ** 2 - (y - f) ** 2) / (2 * sigma**2)
    assert_mc(llr, D.kl_divergence(alpha_f, alpha_g, sigma))


@given(theta=st.floats(0, np.pi), sigma=st.floats(0.05, 3.0))
def test_kl_unit_vectors_at_angle(theta, sigma):
    bs, bt = unit_pair(3, theta)
    assert D.kl_linear_gaussian(bs, bt, sigma) == pytest.approx((1 - np.cos(theta)) / sigma**2, abs=1e-12)


def test_kl_and_dudley_vectorize_over_stacks():
    rng = np.random.default_rng(1)
    bf, bg, sigma = rng.standard_normal((4, 1, 5)), rng.standard_normal((3, 5)), np.array([[0.5], [1.0], [2.0], [0.3]])
    for fn in (D.kl_linear_gaussian, D.dudley_lower_bound, D.dudley_upper_bound):
        out = fn(bf, bg, sigma)
        assert out.shape == (4, 3)
        for i in range(4):
            for j in range(3):
                assert out[i, j] == pytest.approx(fn(bf[i, 0], bg[j], float(sigma[i, 0])), rel=1e-10, abs=1e-12)


# --------------------------------------------------------------------------- Dudley metric


@given(
    d=st.integers(1, 6),
    sigma=st.floats(0.05, 3.0),
    norm_f=st.floats(0.0, 10.0),
    norm_g=st.floats(0.0, 10.0),
    theta=st.floats(0, np.pi),
)
def test_dudley_bounds_are_ordered_and_upper_bound_is_the_minimum_of_its_terms(d, sigma, norm_f, norm_g, theta):
    d = max(d, 2)
    bs, bt = unit_pair(d, theta)
    bf, bg = norm_f * bs, norm_g * bt
    lower, upper = D.dudley_lower_bound(bf, bg, sigma), D.dudley_upper_bound(bf, bg, sigma)
    assert 0 <= lower <= upper + 1e-12
    w2 = D.wasserstein2_gaussian(D.joint_covariance(bf, sigma), D.joint_covariance(bg, sigma))
    pinsker = np.linalg.norm(bf - bg) / sigma
    assert upper == pytest.approx(min(2.0, w2, pinsker), rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("lip", [0.02, 0.3, 0.9])
def test_ramp_test_function_expectation_matches_monte_carlo(lip):
    """E h_L under p_f, h_L = −M + min(2M, L|y|), M = 1 − L: closed form (via E min(c, |y|)) vs MC."""
    rng = np.random.default_rng(seed_of(lip))
    beta, sigma, n = np.array([0.8, -1.1, 0.3]), 0.4, 40_000
    x = rng.standard_normal((n, 3))
    y = x @ beta + sigma * rng.standard_normal(n)
    m = 1 - lip
    h = -m + np.minimum(2 * m, lip * np.abs(y))
    s = np.sqrt(beta @ beta + sigma**2)
    assert_mc(h, -m + lip * D._mean_min_abs(2 * m / lip, s))


@given(norm_f=st.floats(0.0, 3.0), norm_g=st.floats(0.0, 1e3), sigma=st.floats(0.05, 2.0))
@settings(max_examples=10)
def test_ramp_lower_bound_is_the_grid_maximum_and_below_the_upper_bound(norm_f, norm_g, sigma):
    """Against quadrature of E min(c, |y|), and sandwiched by the upper bound."""
    from scipy.integrate import quad

    bf, bg = norm_f * np.eye(2)[0], norm_g * np.eye(2)[1]
    s_f, s_g = np.hypot(norm_f, sigma), np.hypot(norm_g, sigma)

    def mean_min_abs(c, s):
        body = quad(lambda y: y * stats.norm.pdf(y, scale=s), 0, c, limit=200)[0]
        tail = quad(lambda y: c * stats.norm.pdf(y, scale=s), c, np.inf, limit=200)[0]
        return 2 * (body + tail)

    grid = D.RAMP_LIPSCHITZ[::40]  # a sub-grid: its maximum is also a valid lower bound, ≤ the full one
    by_quad = max(lip * abs(mean_min_abs(2 * (1 - lip) / lip, s_f) - mean_min_abs(2 * (1 - lip) / lip, s_g))
                  for lip in grid)
    ramp = D.dudley_lower_bound_ramp(bf, bg, sigma)
    assert ramp >= by_quad - 1e-7
    assert ramp <= D.dudley_upper_bound(bf, bg, sigma) + 1e-9


# --------------------------------------------------------------------------- joint law and W2


@given(d=st.integers(1, 6), sigma=st.floats(0.01, 3.0), scale=st.floats(0, 5))
def test_joint_covariance_is_the_covariance_of_the_linear_map(d, sigma, scale):
    """(x, y) = L (x, ε) with L = [[I, 0], [βᵀ, σ]], so Σ = L Lᵀ exactly."""
    beta = scale * np.random.default_rng(seed_of(d, sigma, scale)).standard_normal(d)
    lmap = np.zeros((d + 1, d + 1))
    lmap[:d, :d] = np.eye(d)
    lmap[d, :d], lmap[d, d] = beta, sigma
    np.testing.assert_allclose(D.joint_covariance(beta, sigma), lmap @ lmap.T, atol=1e-12)


def random_spd(rng, k):
    a = rng.standard_normal((k, k))
    return a @ a.T + 0.1 * np.eye(k)


@given(k=st.integers(1, 6), seed=st.integers(0, 2**16))
def test_w2_matches_bures_formula_with_scipy_sqrtm(k, seed):
    rng = np.random.default_rng(seed)
    cp, cq = random_spd(rng, k), random_spd(rng, k)
    mp, mq = rng.standard_normal(k), rng.standard_normal(k)
    rp = sqrtm(cp)
    w2sq = np.sum((mp - mq) ** 2) + np.trace(cp) + np.trace(cq) - 2 * np.trace(sqrtm(rp @ cq @ rp)).real
    assert D.wasserstein2_gaussian(cp, cq, mp, mq) == pytest.approx(np.sqrt(w2sq), rel=1e-8, abs=1e-8)


@given(m1=st.floats(-3, 3), m2=st.floats(-3, 3), s1=st.floats(0.01, 3), s2=st.floats(0.01, 3))
def test_w2_one_dimensional_exact(m1, m2, s1, s2):
    w2 = D.wasserstein2_gaussian([[s1**2]], [[s2**2]], [m1], [m2])
    assert w2 == pytest.approx(np.hypot(m1 - m2, s1 - s2), rel=1e-9, abs=1e-9)


def test_w2_one_dimensional_against_sampling_the_quantile_coupling():
    """In 1-D the monotone (quantile) coupling is optimal: W₂² = E_U (F_p⁻¹(U) − F_q⁻¹(U))², U ~ U(0,1)."""
    rng = np.random.default_rng(3)
    (m1, s1), (m2, s2) = (0.4, 1.3), (-0.5, 0.6)
    u = rng.uniform(size=50_000)
    draws = (stats.norm.ppf(u, m1, s1) - stats.norm.ppf(u, m2, s2)) ** 2
    assert_mc(draws, D.wasserstein2_gaussian([[s1**2]], [[s2**2]], [m1], [m2]) ** 2)


def test_w2_commuting_singular_and_batched():
    # commuting covariances: W₂² = Σ (√a_i − √b_i)²
    a, b = np.array([1.0, 4.0, 0.25]), np.array([9.0, 1.0, 0.0])
    assert D.wasserstein2_gaussian(np.diag(a), np.diag(b)) == pytest.approx(
        np.sqrt(np.sum((np.sqrt(a) - np.sqrt(b)) ** 2)), rel=1e-10)
    # singular: two degenerate lines at right angles
    assert D.wasserstein2_gaussian(np.diag([1.0, 0.0]), np.diag([0.0, 1.0])) == pytest.approx(np.sqrt(2), rel=1e-10)
    assert D.wasserstein2_gaussian(np.eye(3), np.eye(3)) == 0.0
    # a stack of joint laws equals the loop
    betas = np.random.default_rng(2).standard_normal((5, 4))
    cov = D.joint_covariance(betas, 0.3)
    out = D.wasserstein2_gaussian(cov, cov[0])
    assert out.shape == (5,)
    # equal laws: W₂ = 0 up to the round-off √(k·ε·(tr Σ_p + tr Σ_q)) of the cancellation (docstring)
    roundoff = np.sqrt(5 * np.finfo(float).eps * 2 * np.trace(cov[0]))
    assert out[0] <= 10 * roundoff
    for i in range(5):
        assert out[i] == pytest.approx(D.wasserstein2_gaussian(cov[i], cov[0]), rel=1e-12)


# --------------------------------------------------------------------------- empirical W1


@given(n_p=st.integers(1, 40), n_q=st.integers(1, 40), seed=st.integers(0, 2**16))
def test_w1_empirical_matches_scipy_in_one_dimension(n_p, n_q, seed):
    rng = np.random.default_rng(seed)
    xp, xq = rng.standard_normal(n_p), 0.5 + 2 * rng.standard_normal(n_q)
    assert D.wasserstein1_empirical(xp, xq) == pytest.approx(stats.wasserstein_distance(xp, xq), rel=1e-9, abs=1e-12)
    assert D.wasserstein1_empirical(xp[:, None], xq[:, None]) == pytest.approx(D.wasserstein1_empirical(xp, xq))


def test_w1_empirical_of_a_translate_is_the_shift_length():
    """Exact in any dimension: the shift coupling gives ≤ ‖v‖, the 1-Lipschitz h = ⟨v/‖v‖, ·⟩ gives ≥ ‖v‖."""
    rng = np.random.default_rng(4)
    x, v = rng.standard_normal((60, 7)), rng.standard_normal(7)
    assert D.wasserstein1_empirical(x, x + v) == pytest.approx(np.linalg.norm(v), rel=1e-10)


def _gaussian_w1_1d(m1, s1, m2, s2):
    """W₁ of two 1-D normals, ∫₀¹ |F_p⁻¹(u) − F_q⁻¹(u)| du, by quadrature in u."""
    from scipy.integrate import quad

    return quad(lambda u: abs(stats.norm.ppf(u, m1, s1) - stats.norm.ppf(u, m2, s2)), 0, 1, limit=200)[0]


def test_w1_empirical_is_consistent_with_the_population_w1_of_two_gaussians():
    """Mean of R independent empirical W₁ values vs the exact W₁ (1-D Gaussians).

    Lower side (Jensen; W₁ jointly convex, E P̂ = P): E W₁(P̂, Q̂) ≥ W₁(P, Q).
    Upper side (triangle inequality and Bobkov & Ledoux 2019, Thm 3.5:
    E W₁(P̂_N, P) ≤ J₁(P)/√N, J₁ = ∫ √(F(1 − F)) dx = s·J₁(N(0, 1))):
    E W₁(P̂, Q̂) ≤ W₁(P, Q) + (J₁(P) + J₁(Q))/√N — that sum is the allowance.
    """
    from scipy.integrate import quad

    rng = np.random.default_rng(5)
    (m1, s1), (m2, s2), n, reps = (0.0, 1.0), (0.7, 1.5), 200, 200
    draws = [D.wasserstein1_empirical(rng.normal(m1, s1, n), rng.normal(m2, s2, n)) for _ in range(reps)]
    exact = _gaussian_w1_1d(m1, s1, m2, s2)
    j1 = quad(lambda x: np.sqrt(stats.norm.cdf(x) * stats.norm.sf(x)), -np.inf, np.inf)[0]
    mean, se = np.mean(draws), np.std(draws, ddof=1) / np.sqrt(reps)
    assert mean >= exact - K * se
    assert mean <= exact + (s1 + s2) * j1 / np.sqrt(n) + K * se
    # and W₁ ≤ W₂ for the populations
    assert exact <= D.wasserstein2_gaussian([[s1**2]], [[s2**2]], [m1], [m2]) + 1e-9


def test_w1_empirical_of_joint_laws_respects_population_lower_bounds():
    """For joint laws of linear tasks in d + 1 dimensions: E W₁(P̂, Q̂) ≥ W₁(p_f, p_g) (Jensen) ≥
    |E|y_f| − E|y_g|| = √(2/π)|s_f − s_g| (h = |y| is 1-Lipschitz) and ≥ the Dudley lower bound."""
    rng = np.random.default_rng(6)
    d, sigma, n, reps = 5, 0.3, 150, 30
    bs, bt = unit_pair(d, np.pi / 3)
    bt = 3.0 * bt

    def sample(beta):
        x = rng.standard_normal((n, d))
        return np.column_stack([x, x @ beta + sigma * rng.standard_normal(n)])

    draws = [D.wasserstein1_empirical(sample(bs), sample(bt)) for _ in range(reps)]
    mean, se = np.mean(draws), np.std(draws, ddof=1) / np.sqrt(reps)
    s_f, s_g = np.hypot(1, sigma), np.hypot(3, sigma)
    assert mean >= np.sqrt(2 / np.pi) * abs(s_f - s_g) - K * se
    assert mean >= D.dudley_lower_bound(bs, bt, sigma) - K * se


# --------------------------------------------------------------------------- far targets


def test_far_target_and_proof_scale():
    beta = np.array([0.6, 0.8, 0.0])
    np.testing.assert_allclose(D.far_target(beta, 2.5), 2.5 * beta)
    np.testing.assert_allclose(D.far_target(beta, [1.0, -2.0]), [beta, -2 * beta])
    a = D.dudley_proof_scale(beta, 3.0, 0.2)
    g = D.far_target(beta, a)
    # the proof's choice makes ‖f‖² + ‖g‖² = max(2δe^{σ²/2}, 2‖f‖² − 2δe^{σ²/2}) ≥ 2δe^{σ²/2}
    assert beta @ beta + g @ g == pytest.approx(2 * 3.0 * np.exp(0.02))


@given(theta=st.floats(0, np.pi), sigma=st.floats(0.0, 1.0), norm=st.floats(0.1, 10.0), gamma=st.floats(0.1, 3.0))
def test_scaled_target_formulas_reduce_to_unit_target_and_expand_correctly(theta, sigma, norm, gamma):
    n, d = 40, 97
    assert D.scaled_target_transferability_finite(n, d, theta, sigma, 1.0) == pytest.approx(
        linear.linear_transferability_finite(n, d, theta, sigma), rel=1e-12, abs=1e-12)
    # expanded forms (the FaF §3 risks with β_t of norm a)
    s2 = np.sin(theta) ** 2
    assert D.scaled_target_linear_transfer_risk(theta, sigma, n, norm) == pytest.approx(
        norm**2 * s2 + (sigma**2 + norm**2 * s2) / (n - 2), rel=1e-12, abs=1e-12)
    assert D.scaled_target_scratch_risk_finite(n, d, sigma, norm) == pytest.approx(
        norm**2 * (1 - n / d) + sigma**2 * n / (d - n - 1), rel=1e-12)
    if abs(gamma - 1) > 1e-3:
        expected = norm**2 * max(1 - gamma, 0) + sigma**2 * (gamma / (1 - gamma) if gamma < 1 else 1 / (gamma - 1))
        assert D.scaled_target_scratch_risk(gamma, sigma, norm) == pytest.approx(expected, rel=1e-12, abs=1e-12)
        assert D.scaled_target_transferability(gamma, theta, sigma, norm) == pytest.approx(
            expected - norm**2 * s2, rel=1e-10, abs=1e-10)


# --------------------------------------------------------------------------- errata (FaF Thm 2.2)


@given(
    d=st.integers(2, 6),
    sigma=st.floats(0.01, 3.0),
    norm_g=st.floats(0.0, 1e4),
    theta=st.floats(0, np.pi),
)
def test_erratum_dudley_metric_is_at_most_two(d, sigma, norm_g, theta):
    """γ_β ≤ 2‖h‖_∞ ≤ 2 for every pair of laws: the upper bound never exceeds 2, however far the target."""
    bs, bt = unit_pair(d, theta)
    assert D.dudley_upper_bound(bs, norm_g * bt, sigma) <= 2.0
    assert D.dudley_lower_bound(bs, norm_g * bt, sigma) <= np.exp(-(sigma**2) / 2) / 2


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: D.kl_linear_gaussian([1.0, 0.0], [1.0, 0.0, 0.0], 1.0), "same dimension"),
        (lambda: D.kl_linear_gaussian([1.0, 0.0], [1.0, 0.0], 0.0), r"sigma must be in \(0, inf\)"),
        (lambda: D.kl_divergence([1.0], [0.0], -1.0), "sigma"),
        (lambda: D.kl_divergence(1.0, 0.0, 1.0), "non-empty vector"),
        (lambda: D.kl_linear_gaussian(np.ones((2, 3)), np.ones((4, 3)), 1.0), "must broadcast together"),
        (lambda: D.kl_divergence(np.ones((2, 3)), np.ones(3), [1.0, 1.0, 1.0]), r"sigma \(3,\)"),
        (lambda: D.kl_linear_gaussian([np.nan, 0.0], [1.0, 0.0], 1.0), "beta_f"),
        (lambda: D.dudley_lower_bound([1.0], [1.0, 2.0], 1.0), "same dimension"),
        (lambda: D.dudley_upper_bound([1.0], [2.0], -0.5), "sigma"),
        (lambda: D.joint_covariance([1.0, 2.0], 0.0), "sigma"),
        (lambda: D.wasserstein2_gaussian(np.eye(2), np.eye(3)), "same size"),
        (lambda: D.wasserstein2_gaussian(np.ones((2, 3)), np.eye(2)), "square"),
        (lambda: D.wasserstein2_gaussian([[1.0, 0.5], [0.0, 1.0]], np.eye(2)), "symmetric"),
        (lambda: D.wasserstein2_gaussian(np.diag([1.0, -1.0]), np.eye(2)), "positive semi-definite"),
        (lambda: D.wasserstein2_gaussian(np.eye(2), np.eye(2), mean_p=[0.0, 0.0, 1.0]), "mean_p must have dimension 2"),
        (lambda: D.wasserstein1_empirical(np.empty((0, 2)), np.ones((3, 2))), "samples_p must be a non-empty"),
        (lambda: D.wasserstein1_empirical(np.ones(3), []), "samples_q must be a non-empty"),
        (lambda: D.wasserstein1_empirical(np.ones((3, 2)), np.ones((3, 4))), "same dimension"),
        (lambda: D.wasserstein1_empirical(np.ones((3, 2, 2)), np.ones((3, 2))), "shape"),
        (lambda: D.wasserstein1_empirical([1.0, np.inf], [0.0]), "samples_p"),
        (lambda: D.far_target([1.0, 0.0], np.nan), "scale"),
        (lambda: D.dudley_proof_scale([0.0, 0.0], 1.0, 1.0), "non-zero"),
        (lambda: D.dudley_proof_scale([1.0, 0.0], 0.0, 1.0), "delta"),
        (lambda: D.scaled_target_transferability_finite(10, 20, 0.5, 0.1, 0.0), r"norm must be in \(0, inf\)"),
        (lambda: D.scaled_target_transferability_finite(10, 20, 0.5, -0.1, 1.0), "sigma"),
        (lambda: D.scaled_target_linear_transfer_risk(4.0, 0.1, 10, 1.0), "theta"),
    ],
)
def test_bad_input_raises_a_clear_value_error(call, match):
    with pytest.raises(ValueError, match=match):
        call()
