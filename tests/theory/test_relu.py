r"""Checks of :mod:`transfertheory.theory.relu` (FaF §4, App. C; derivations in docs/relu.md).

Every closed form is compared with an independent computation. The claims registry
(transfertheory/claims/faf_relu.py, run by tests/claims/test_claims.py and ``python -m transfertheory.verify``)
holds four of them at a few points each: the kernel, the projection and the population loss against
Monte Carlo, and the growth of ‖P⊥ f_t*‖² with μ. This module reuses the claims' estimators and adds:

* the arc-cosine kernel against Monte Carlo over 25 hypothesis examples (norms and cosines, u = ±1
  included) and against a quadrature; exact values at u = 1, 0, −1; symmetry, PSD, batching;
* the population loss against the sampled loss over 25 examples; its gradients against central finite
  differences (tolerance from the step, see :func:`assert_gradient_matches`), the sphere gradient
  against finite differences along great circles;
* ‖P f*‖² against K⁻¹ (FaF Eq. 158) where K is well conditioned; singular K; a teacher inside the span;
* ‖P⊥ f_t*‖² nondecreasing in μ for nested ablations (exact);
* the ablated teacher (FaF Eq. 19) and the uniformity of its subsets;
* the power-law fit by the coverage of its intervals on synthetic data, the boundary by its identity.

Monte Carlo comparisons pass when |z| ≤ 4, z = (estimate − theory)/SE; the largest |z| is printed.
"""
import hashlib
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import integrate, stats

from transfertheory.claims.faf_relu import rows_with_cosines, sampled_half_square_error, sampled_kernel
from transfertheory.sim.relu_teacher.network import network_output
from transfertheory.theory import relu as R

#: (|z|, label) of every Monte Carlo comparison of this module
Z_SCORES = []


@pytest.fixture(scope="module", autouse=True)
def _report_largest_z(request):
    """Print the largest Monte Carlo |z| of the module."""
    yield
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    if Z_SCORES and reporter is not None and capture is not None:
        z, label = max(Z_SCORES)
        with capture.global_and_fixture_disabled():
            reporter.write_line(f"\ntest_relu: largest Monte Carlo |z| = {z:.2f} ({label}) "
                                f"over {len(Z_SCORES)} comparisons")


def rng_for(*params):
    """Generator seeded by a hash of the parameters: the same draws for the same hypothesis example."""
    digest = hashlib.sha256(repr(params).encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "little"))


def assert_z(estimate, se, theory, label, threshold=4.0):
    """|estimate − theory| ≤ threshold·SE elementwise; records the largest |z|."""
    estimate, se, theory = np.broadcast_arrays(*map(np.asarray, (estimate, se, theory)))
    z = (estimate - theory) / se
    worst = int(np.argmax(np.abs(z)))
    Z_SCORES.append((float(np.abs(z).flat[worst]), label))
    assert np.all(np.abs(z) <= threshold), (
        f"{label}: estimate {estimate.flat[worst]:.6g} vs theory {theory.flat[worst]:.6g}, z = {z.flat[worst]:.2f}")


# --------------------------------------------------------------------------- the arc-cosine kernel

norms = st.floats(0.05, 5.0)
cosines = st.one_of(st.sampled_from([-1.0, 1.0, 0.0]), st.floats(-1.0, 1.0))


@given(d=st.integers(2, 6), norms_a=st.lists(norms, min_size=3, max_size=3),
       norms_b=st.lists(norms, min_size=3, max_size=3), cos=st.lists(cosines, min_size=3, max_size=3))
def test_kernel_matches_monte_carlo(d, norms_a, norms_b, cos):
    """k(aᵢ, bⱼ) vs the sample mean of σ(aᵢᵀx)σ(bⱼᵀx) over 200 000 x, all 9 pairs (|z| ≤ 4).

    The pairs (aᵢ, bᵢ) have the drawn cosines (±1 and 0 included), the others random angles. Where the
    product vanishes identically (u = −1) the SE is 0 and the kernel must be 0 to rounding.
    """
    rng = rng_for(d, norms_a, norms_b, cos)
    A, B = rows_with_cosines(rng, d, norms_a, norms_b, cos)
    mean, se = sampled_kernel(rng, A, B, 200_000)
    kernel = R.arccos_kernel(A, B)
    degenerate = se == 0
    scale = np.outer(norms_a, norms_b)
    assert np.all(np.abs(kernel[degenerate]) <= 1e-12 * scale[degenerate])
    assert_z(mean[~degenerate], se[~degenerate], kernel[~degenerate], f"kernel d={d}")


@pytest.mark.parametrize("u", [-1.0, -0.999999, -0.7, -0.2, 0.0, 0.3, 0.9, 0.999999, 1.0])
def test_kernel_matches_quadrature(u):
    """k(e₁, b), b = u e₁ + √(1−u²) e₂, vs E[σ(s) σ(us + √(1−u²)t)] for independent s, t ~ N(0, 1) by quadrature.

    The t-integral is done by hand (∫_{t₀}^∞ φ(t)(us + s⊥t) dt = us Φ̄(t₀) + s⊥ φ(t₀), t₀ = −us/s⊥; for
    s⊥ = 0 the inner value is σ(us)), the s-integral over (0, ∞) by adaptive quadrature (smooth integrand):
    an independent route to the same expectation, accurate to 1e-12.
    """
    s_perp = math.sqrt(1 - u * u)

    def inner(s):
        if s_perp == 0:
            return max(u * s, 0.0)
        t0 = -u * s / s_perp
        return u * s * stats.norm.sf(t0) + s_perp * stats.norm.pdf(t0)

    value, error = integrate.quad(lambda s: stats.norm.pdf(s) * s * inner(s), 0, np.inf, epsabs=1e-14, epsrel=1e-13)
    kernel = R.arccos_kernel([[1.0, 0.0]], [[u, s_perp]])[0, 0]
    assert abs(kernel - value) <= 1e-12 + 10 * error


def test_kernel_special_values():
    """u = 1: ‖a‖‖b‖/2; u = 0: ‖a‖‖b‖/2π; u = −1: 0; a zero row: 0 (exact up to rounding)."""
    a = np.array([[0.3, -1.2, 0.5]])
    na = np.linalg.norm(a)
    perp = np.array([[1.2, 0.3, 0.0]])  # ⊥ a
    assert R.arccos_kernel(a, 2.5 * a)[0, 0] == pytest.approx(2.5 * na * na / 2, rel=1e-14)
    assert R.arccos_kernel(a, perp)[0, 0] == pytest.approx(na * np.linalg.norm(perp) / (2 * math.pi), rel=1e-14)
    assert abs(R.arccos_kernel(a, -0.7 * a)[0, 0]) <= 1e-14
    np.testing.assert_array_equal(R.arccos_kernel(np.zeros((2, 3)), a), 0.0)


def test_kernel_symmetric_psd_and_batched():
    """k(A, B) = k(B, A)ᵀ; k(A, A) is PSD; a batch equals the loop over its instances."""
    rng = np.random.default_rng(7)
    A = rng.standard_normal((4, 12, 5)) * rng.uniform(0.1, 3, size=(4, 12, 1))
    B = rng.standard_normal((4, 7, 5))
    np.testing.assert_allclose(R.arccos_kernel(A, B), np.swapaxes(R.arccos_kernel(B, A), -1, -2), rtol=1e-14)
    gram = R.arccos_kernel(A, A)
    eigenvalues = np.linalg.eigvalsh(gram)
    assert np.all(eigenvalues >= -1e-13 * eigenvalues[..., -1:])
    for i in range(4):
        np.testing.assert_allclose(R.arccos_kernel(A[i], B[i]), R.arccos_kernel(A, B)[i], rtol=1e-14)
    np.testing.assert_allclose(R.arccos_kernel(A, B[0]), R.arccos_kernel(A, np.broadcast_to(B[0], B.shape)),
                               rtol=1e-14)


# --------------------------------------------------------------------------- population loss and gradients


def student_and_teacher(rng, m, m_star, d, sphere=True):
    """A student (W, c) with rows on the sphere (or of random norms) and a random teacher (W*, c*)."""
    W = rng.standard_normal((m, d))
    W = W / np.linalg.norm(W, axis=1, keepdims=True) if sphere else W * rng.uniform(0.3, 2, size=(m, 1))
    W_star, c_star = R.random_teacher(m_star, d, rng, output="normal")
    return W, rng.standard_normal(m) * 2, W_star, c_star


@given(m=st.integers(1, 6), m_star=st.integers(1, 5), d=st.integers(1, 6), sphere=st.booleans())
def test_population_loss_matches_sampled_loss(m, m_star, d, sphere):
    """½E(f − f*)² vs ½ mean over 100 000 x of (f(x) − f*(x))² (|z| ≤ 4)."""
    rng = rng_for("loss", m, m_star, d, sphere)
    W, c, W_star, c_star = student_and_teacher(rng, m, m_star, d, sphere)
    half_sq = sampled_half_square_error(rng, W, c, W_star, c_star, 100_000)
    loss = R.population_loss(W, c, W_star, c_star)
    assert_z(half_sq.mean(), half_sq.std(ddof=1) / math.sqrt(half_sq.size), loss, f"population loss m={m} m*={m_star}")


def test_population_loss_identities():
    """L(c = 0) = ½‖f*‖² = ½(‖P f*‖² + ‖P⊥ f*‖²); L = 0 when the student is the teacher; batch = loop."""
    rng = np.random.default_rng(11)
    W, c, W_star, c_star = student_and_teacher(rng, 5, 4, 3)
    inside, outside = R.rkhs_projection_norms(W, W_star, c_star)
    assert 2 * R.population_loss(W, 0 * c, W_star, c_star) == pytest.approx(inside + outside, rel=1e-12)
    assert abs(R.population_loss(W_star, c_star, W_star, c_star)) <= 1e-16
    # a student of 2m* neurons duplicating the teacher's, each with the same output weight, is the teacher
    assert abs(R.population_loss(np.vstack([W_star, W_star]), np.r_[c_star, c_star], W_star, c_star)) <= 1e-16
    Wb, cb = rng.standard_normal((3, 5, 3)), rng.standard_normal((3, 5))
    batched = R.population_loss(Wb, cb, W_star, c_star)
    np.testing.assert_allclose(batched, [R.population_loss(Wb[i], cb[i], W_star, c_star) for i in range(3)],
                               rtol=1e-13)


def central_difference(f, x, h):
    """Central differences of scalar f at every entry of x (a copy is perturbed)."""
    grad = np.zeros_like(x)
    for index in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[index] = h
        grad[index] = (f(x + step) - f(x - step)) / (2 * h)
    return grad


def assert_gradient_matches(f, x, gradient, h=1e-3):
    """The analytic gradient vs central differences, with a tolerance from the step.

    The error of the central difference at step h is C h² + O(h⁴) (f is C³ away from u = ±1) plus rounding
    ~ eps·|f|/h. Richardson: D(h) − D(h/2) = (3/4) C h² + …, so |D(h) − g| must be ≤ (4/3)|D(h) − D(h/2)|;
    we allow twice that plus 100 × the rounding level. A wrong gradient is off by O(1), far above.
    """
    d_h, d_half = central_difference(f, x, h), central_difference(f, x, h / 2)
    rounding = 100 * np.finfo(float).eps * (abs(f(x)) + 1) / h
    tolerance = 2 * (4 / 3) * np.abs(d_h - d_half) + rounding
    assert np.all(np.abs(d_h - gradient) <= tolerance), np.max(np.abs(d_h - gradient) - tolerance)


@given(m=st.integers(1, 5), m_star=st.integers(1, 4), d=st.integers(1, 5), sphere=st.booleans())
def test_gradients_match_finite_differences(m, m_star, d, sphere):
    """∂L/∂c and ∇_W L vs central differences of the exact loss."""
    rng = rng_for("grad", m, m_star, d, sphere)
    W, c, W_star, c_star = student_and_teacher(rng, m, m_star, d, sphere)
    result = R.population_loss_and_gradients(W, c, W_star, c_star)
    assert result.loss == pytest.approx(R.population_loss(W, c, W_star, c_star), rel=1e-14)
    assert_gradient_matches(lambda cc: R.population_loss(W, cc, W_star, c_star), c, result.grad_c)
    assert_gradient_matches(lambda ww: R.population_loss(ww, c, W_star, c_star), W, result.grad_W)


@given(m=st.integers(1, 5), m_star=st.integers(1, 4), d=st.integers(2, 5))
def test_sphere_gradient_is_the_derivative_along_great_circles(m, m_star, d):
    """⟨grad_sphere_i, t⟩ = d/ds L(wᵢ cos s + t sin s)|₀ for unit t ⊥ wᵢ; grad_sphere_i ⊥ wᵢ."""
    rng = rng_for("sphere", m, m_star, d)
    W, c, W_star, c_star = student_and_teacher(rng, m, m_star, d)
    grad = R.population_loss_and_gradients(W, c, W_star, c_star).grad_W_sphere
    np.testing.assert_allclose((grad * W).sum(axis=1), 0.0, atol=1e-15)
    for i in range(m):
        t = rng.standard_normal(d)
        t -= (t @ W[i]) * W[i]
        t /= np.linalg.norm(t)

        def along(s, i=i, t=t):
            moved = W.copy()
            moved[i] = W[i] * np.cos(s[0]) + t * np.sin(s[0])
            return R.population_loss(moved, c, W_star, c_star)

        assert_gradient_matches(along, np.zeros(1), np.array([grad[i] @ t]))


def test_gradients_batched_equal_loop():
    rng = np.random.default_rng(5)
    W = rng.standard_normal((3, 4, 6))
    c = rng.standard_normal((3, 4))
    W_star, c_star = R.random_teacher(5, 6, rng, output="normal")
    batched = R.population_loss_and_gradients(W, c, W_star, c_star)
    for i in range(3):
        single = R.population_loss_and_gradients(W[i], c[i], W_star, c_star)
        for field in ("loss", "grad_c", "grad_W", "grad_W_sphere"):
            np.testing.assert_allclose(getattr(batched, field)[i], getattr(single, field), rtol=1e-13, atol=1e-16)


# --------------------------------------------------------------------------- projections


def test_projection_matches_inverse_formula_when_well_conditioned():
    """FaF Eq. 158 with K⁻¹ (condition number below 1e4): ‖P f*‖² = c*ᵀK̃ᵀK⁻¹K̃c*/m* to 1e-9 relative."""
    rng = np.random.default_rng(3)
    W, _ = R.random_teacher(8, 6, rng)
    W_star, c_star = R.random_teacher(5, 6, rng, output="normal")
    m, m_star = 8, 5
    K = R.arccos_kernel(W, W) / m
    K_tilde = R.arccos_kernel(W, W_star) / math.sqrt(m * m_star)
    K_star = R.arccos_kernel(W_star, W_star) / m_star
    assert np.linalg.cond(K) < 1e4
    inside = c_star @ K_tilde.T @ np.linalg.solve(K, K_tilde @ c_star) / m_star
    result = R.rkhs_projection_norms(W, W_star, c_star)
    assert result.inside == pytest.approx(inside, rel=1e-9)
    assert result.outside == pytest.approx(c_star @ K_star @ c_star / m_star - inside, rel=1e-9)


def test_projection_singular_student_and_contained_teacher():
    """Duplicated student rows (K singular) change nothing; a teacher inside the span has ‖P⊥ f*‖² ≈ 0."""
    rng = np.random.default_rng(4)
    W, _ = R.random_teacher(4, 5, rng)
    W_star, c_star = R.random_teacher(3, 5, rng, output="normal")
    plain = R.rkhs_projection_norms(W, W_star, c_star)
    duplicated = R.rkhs_projection_norms(np.vstack([W, W[:2], 3 * W[:1]]), W_star, c_star)
    np.testing.assert_allclose(duplicated, plain, rtol=1e-9)
    norm_sq = sum(plain)
    contained = R.rkhs_projection_norms(np.vstack([W, W_star]), W_star, c_star)
    assert 0 <= contained.outside <= 1e-12 * norm_sq
    assert contained.inside == pytest.approx(norm_sq, rel=1e-12)
    nothing = R.rkhs_projection_norms(np.zeros((2, 5)), W_star, c_star)
    assert nothing.inside == 0 and nothing.outside == pytest.approx(norm_sq, rel=1e-12)


@pytest.mark.parametrize("output", R.TEACHER_OUTPUTS)
def test_pperp_grows_with_mu_for_nested_ablations(output):
    """Dropping more teacher neurons shrinks the span: ‖P⊥ f_t*‖² is nondecreasing, and 0 at μ = 0."""
    rng = np.random.default_rng(8)
    W_star, c_star = R.random_teacher(12, 6, rng, output=output)
    order = rng.permutation(12)
    outside = [R.rkhs_projection_norms(W_star[np.sort(order[k:])], W_star, c_star).outside for k in range(12)]
    norm_sq = sum(R.rkhs_projection_norms(W_star, W_star, c_star))
    assert outside[0] <= 1e-12 * norm_sq
    assert np.all(np.diff(outside) >= -1e-12 * norm_sq)
    assert outside[-1] > 0.05 * norm_sq


# --------------------------------------------------------------------------- teachers


def test_ablated_teacher_is_eq19():
    """Kept rows are the target's, |A| = round(μm*), and the network f_s* = (1/m_s) Σ c σ equals FaF Eq. 19."""
    rng = np.random.default_rng(1)
    W_star, c_star = R.random_teacher(10, 4, rng, output="normal")
    source = R.ablated_teacher(W_star, c_star, 0.3, rng)
    assert source.W.shape == (7, 4) and source.c.shape == (7,)
    assert np.all(np.diff(source.kept) > 0)
    np.testing.assert_array_equal(source.W, W_star[source.kept])
    np.testing.assert_array_equal(source.c, c_star[source.kept])
    x = rng.standard_normal((50, 4))
    kept_mask = np.isin(np.arange(10), source.kept)
    eq19 = np.maximum(x @ W_star.T, 0.0)[:, kept_mask] @ c_star[kept_mask] / ((1 - 0.3) * 10)
    np.testing.assert_allclose(network_output(source.W, source.c, x), eq19, rtol=1e-13)
    assert R.ablated_teacher(W_star, c_star, 0.0, rng).W.shape == (10, 4)
    assert R.dropped_count(0.24, 10) == 2 and R.dropped_count(0.26, 10) == 3


def test_random_teacher():
    """Rows on the unit sphere; c* = 1 by default, N(0, 1) draws with output="normal"; batch shape leads."""
    W, c = R.random_teacher(7, 4, 0, batch=(2, 3))
    assert W.shape == (2, 3, 7, 4) and c.shape == (2, 3, 7)
    np.testing.assert_allclose(np.linalg.norm(W, axis=-1), 1.0, rtol=1e-15)
    np.testing.assert_array_equal(c, 1.0)
    W_n, c_n = R.random_teacher(7, 4, 0, batch=(2, 3), output="normal")
    assert c_n.std() > 0.3 and np.all(np.linalg.norm(W_n, axis=-1) == pytest.approx(1.0))


def test_ablated_subsets_are_uniform():
    """Each neuron is kept with probability 1 − |A|/m* (frequencies over 20 000 draws, |z| ≤ 4), independently
    per batch instance."""
    rng = np.random.default_rng(2)
    W_star, c_star = R.random_teacher(8, 3, rng)
    source = R.ablated_teacher(W_star, c_star, 0.25, rng)
    draws = R.ablated_teacher(np.broadcast_to(W_star, (20_000, 8, 3)), c_star, 0.25, rng)
    frequency = np.zeros((20_000, 8))
    np.put_along_axis(frequency, draws.kept, 1.0, axis=1)
    p = 6 / 8
    assert_z(frequency.mean(axis=0), math.sqrt(p * (1 - p) / 20_000), p, "ablation inclusion frequency")
    assert source.kept.shape == (6,)


# --------------------------------------------------------------------------- power law and boundary


def test_power_law_fit_exact_on_noiseless_data():
    n = np.array([50.0, 100, 200, 400, 800])
    fit = R.power_law_fit(n, 3.0 * n ** -1.18)
    assert fit.A == pytest.approx(3.0, rel=1e-12) and fit.nu == pytest.approx(1.18, rel=1e-12)
    assert fit.nu_se <= 1e-12 and fit.dof == 3


def test_power_law_fit_intervals_cover():
    """Synthetic risks A n^{−ν} e^{ε}, ε ~ N(0, 0.1²), 8 sizes, 4000 fits: the Student-t 95% intervals of
    log A and ν from the reported SEs cover the truth 95% of the time (binomial |z| ≤ 4)."""
    rng = np.random.default_rng(6)
    n = np.geomspace(100, 1000, 8)
    A, nu, fits = 0.02, 1.18, 4000
    risk = A * n ** -nu * np.exp(0.1 * rng.standard_normal((fits, n.size)))
    fit = R.power_law_fit(n, risk)
    t = stats.t.ppf(0.975, fit.dof)
    se = math.sqrt(0.95 * 0.05 / fits)
    for estimate, truth, err, label in ((np.log(fit.A), math.log(A), fit.log_A_se, "log A"),
                                        (fit.nu, nu, fit.nu_se, "nu")):
        coverage = np.mean(np.abs(estimate - truth) <= t * err)
        assert_z(coverage, se, 0.95, f"power-law interval coverage ({label})")


def test_negative_transfer_boundary():
    """A n_c^{−ν} = ‖P⊥‖²; ‖P⊥‖² = 0 gives n_c = +inf (se +inf); the delta-method SE of log n_c covers."""
    assert R.negative_transfer_boundary(0.01, 2.0, 1.2) ** -1.2 * 2.0 == pytest.approx(0.01, rel=1e-12)
    assert R.negative_transfer_boundary(0.0, 2.0, 1.2) == math.inf
    n = np.geomspace(100, 1000, 8)
    rng = np.random.default_rng(10)
    A, nu, p, fits = 0.02, 1.18, 1e-5, 4000
    fit = R.power_law_fit(n, A * n ** -nu * np.exp(0.05 * rng.standard_normal((fits, n.size))))
    n_c, se = fit.boundary(p)
    truth = R.negative_transfer_boundary(p, A, nu)
    assert fit.boundary(0.0)[1][0] == math.inf
    # log n_c is linear in log A and nearly linear in ν (ν_se/ν ~ 2%): the t interval of log n_c covers 95%
    coverage = np.mean(np.abs(np.log(n_c) - math.log(truth)) <= stats.t.ppf(0.975, fit.dof) * se / n_c)
    assert_z(coverage, math.sqrt(0.95 * 0.05 / fits), 0.95, "boundary interval coverage (delta method)")


# --------------------------------------------------------------------------- the registered claims can fail


@pytest.mark.parametrize("claim, name, wrong", [
    ("faf.eq152-153.arccos-kernel", "arccos_kernel", lambda f: lambda *a: 1.02 * f(*a)),
    ("faf.eq154-159.projection", "rkhs_projection_norms",
     lambda f: lambda *a: R.ProjectionNorms(f(*a).inside, 1.01 * f(*a).outside)),
    ("faf.relu.population-loss", "population_loss", lambda f: lambda *a: 1.02 * f(*a)),
])
@pytest.mark.meta  # a claim's sensitivity to a perturbed formula (docs/testing.md)
def test_claims_fail_on_a_perturbed_formula(monkeypatch, claim, name, wrong):
    """A formula off by 1–2% turns its claim FAIL in the quick profile (the audit would go red)."""
    from transfertheory.claims import registry  # noqa: PLC0415

    assert registry.run(claim, "quick").status == registry.PASS
    monkeypatch.setattr(R, name, wrong(getattr(R, name)))
    assert registry.run(claim, "quick").status == registry.FAIL


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("call, match", [
    (lambda: R.arccos_kernel(np.ones((2, 3)), np.ones((2, 4))), "same number of columns"),
    (lambda: R.arccos_kernel([[np.nan, 1.0]], [[1.0, 1.0]]), "A must be finite"),
    (lambda: R.arccos_kernel(np.ones(3), np.ones((2, 3))), r"A must have shape \(\.\.\., m, d\)"),
    (lambda: R.arccos_kernel("x", np.ones((2, 3))), "A must be a real array"),
    (lambda: R.population_loss(np.ones((2, 3)), np.ones(3), np.ones((1, 3)), np.ones(1)), "c must have shape"),
    (lambda: R.population_loss(np.ones((2, 2, 3)), np.ones((3, 2)), np.ones((1, 3)), np.ones(1)), "batch"),
    (lambda: R.population_loss_and_gradients(np.zeros((2, 3)), np.ones(2), np.ones((1, 3)), np.ones(1)),
     "every row of W must be nonzero"),
    (lambda: R.rkhs_projection_norms(np.ones((2, 3)), np.ones((2, 3)), np.ones(3)), "c_star must have shape"),
    (lambda: R.ablated_teacher(np.ones((4, 3)), np.ones(4), 1.0, 0), r"mu must be in \[0, 1\)"),
    (lambda: R.ablated_teacher(np.ones((4, 3)), np.ones(4), 0.9, 0), "at least one"),
    (lambda: R.ablated_teacher(np.ones((4, 3)), np.ones(4), 0.5, -1), "rng must be"),
    (lambda: R.random_teacher(0, 3, 0), "m_star must be an integer >= 1"),
    (lambda: R.random_teacher(3, 3, 0, output="uniform"), "output must be one of"),
    (lambda: R.power_law_fit([1, 2], [1, 2]), "at least 3"),
    (lambda: R.power_law_fit([1, 2, 3], [1, 0, 2]), r"risk must be in \(0, inf\)"),
    (lambda: R.power_law_fit([2, 2, 2], [1, 1, 2]), "two different"),
    (lambda: R.negative_transfer_boundary(-1, 1, 1), r"pperp_sq must be in \[0, inf\)"),
    (lambda: R.negative_transfer_boundary(1, 1, 0), r"nu must be in \(0, inf\)"),
])
def test_bad_input_names_the_parameter(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# --------------------------------------------------------------------------- GPU


@pytest.mark.gpu
def test_cupy_agrees_with_numpy():
    """Every closed form on CuPy arrays equals its NumPy value (float64, rounding-level tolerance)."""
    import cupy as cp  # noqa: PLC0415  (only with a GPU)

    rng = np.random.default_rng(12)
    W, c = rng.standard_normal((2, 6, 4)), rng.standard_normal((2, 6))
    W_star, c_star = R.random_teacher(5, 4, rng, output="normal")
    on_gpu = [cp.asarray(a) for a in (W, c, W_star, c_star)]
    np.testing.assert_allclose(R.arccos_kernel(on_gpu[0], on_gpu[2]).get(), R.arccos_kernel(W, W_star), rtol=1e-12)
    gpu, cpu = R.population_loss_and_gradients(*on_gpu), R.population_loss_and_gradients(W, c, W_star, c_star)
    for field in ("loss", "grad_c", "grad_W", "grad_W_sphere"):
        np.testing.assert_allclose(getattr(gpu, field).get(), getattr(cpu, field), rtol=1e-10, atol=1e-15)
    gpu_norms = R.rkhs_projection_norms(on_gpu[0], on_gpu[2], on_gpu[3])
    np.testing.assert_allclose([a.get() for a in gpu_norms], R.rkhs_projection_norms(W, W_star, c_star),
                               rtol=1e-9)
    source = R.ablated_teacher(on_gpu[2], on_gpu[3], 0.4, 0)
    np.testing.assert_array_equal(source.W.get(), R.ablated_teacher(W_star, c_star, 0.4, 0).W)
