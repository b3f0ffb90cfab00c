r"""Theorem checks for :mod:`transfertheory.theory.linear` (FaF §3; exact finite-size forms derived in docs/linear.md).

Three kinds of check (docs/testing.md):

* exact identities and limits of the closed forms (deterministic);
* the Monte Carlo checks of the finite-size forms against their defining
  expectations are claims of the registry (``transfertheory/claims/faf_linear.py``),
  the record-level ones in ``tests/theory/test_methods.py``;
* bad input: every public function raises ``ValueError`` naming the parameter.

Rotation invariance makes β_s = e₁, β_t = cos θ e₁ + sin θ e₂ WLOG: the rows
of X are isotropic Gaussians, so X and XQ have the same law for any
orthogonal Q, and every risk depends on (β_s, β_t) only through β_sᵀβ_t =
cos θ (both unit vectors).
"""
import math
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import integrate, stats

from transfertheory.theory import linear as L

# --------------------------------------------------------------------------- strategies

thetas = st.floats(0.0, math.pi)


# --------------------------------------------------------------------------- Monte Carlo tests


# --------------------------------------------------------------------------- exact identities: linear transfer


@given(theta=st.floats(0.0, math.pi), sigma=st.floats(0.0, 2.0))
def test_negative_interval_exists_iff_above_the_opening_angle(theta, sigma):
    """Non-empty iff |cos θ| < 1 − σ, i.e. θ ∈ (arccos(1 − σ), π − arccos(1 − σ)) (needs σ < 1)."""
    g_lo, _ = L.negative_transfer_interval(theta, sigma)
    assert math.isnan(g_lo) == (abs(math.cos(theta)) >= 1 - sigma)
    onset = L.negative_transfer_onset_angle(sigma)
    if sigma < 1:
        assert onset == pytest.approx(math.acos(1 - sigma), abs=1e-15)
    else:
        assert math.isnan(onset)


@pytest.mark.parametrize("sigma", [0.05, 0.2, 0.5, 0.9])
def test_negative_interval_opens_as_a_double_root_at_one_minus_sigma(sigma):
    """Just above θ_c = arccos(1 − σ): γ₋ ≈ γ₊ ≈ 1 − σ, width ∝ √(θ − θ_c); empty just below."""
    theta_c = L.negative_transfer_onset_angle(sigma)
    assert math.isnan(L.negative_transfer_interval(theta_c - 1e-9, sigma)[0])
    for eps in (1e-4, 1e-6):
        g_lo, g_hi = L.negative_transfer_interval(theta_c + eps, sigma)
        assert g_lo == pytest.approx(1 - sigma, abs=10 * math.sqrt(eps))
        assert g_hi == pytest.approx(1 - sigma, abs=10 * math.sqrt(eps))
        # width² = disc = ((1−c)² − σ²)((1+c)² − σ²) ≈ 2σ sinθ_c ε · 4(1 − σ) to first order in ε
        width2 = 8 * sigma * (1 - sigma) * math.sin(theta_c) * eps
        assert (g_hi - g_lo) ** 2 == pytest.approx(width2, rel=1e-3 + 10 * eps)


@given(theta=st.floats(0.2, math.pi - 0.2))
def test_noiseless_boundary_is_cos2_to_one(theta):
    """σ → 0: (γ₋, γ₊) → (cos²θ, 1), with γ₋ − cos²θ ≈ σ²cot²θ and 1 − γ₊ ≈ σ²/sin²θ (O(σ²))."""
    c2, s2 = math.cos(theta) ** 2, math.sin(theta) ** 2
    # the roots come through √(a² − 4cos²θ) = sin²θ: rounding ~ ε/sin²θ
    assert L.negative_transfer_interval(theta, 0.0) == pytest.approx((c2, 1.0), abs=1e-14 / s2)
    for sigma in (1e-2, 1e-3):
        g_lo, g_hi = L.negative_transfer_interval(theta, sigma)
        assert (g_lo - c2) / sigma**2 == pytest.approx(c2 / s2, rel=50 * sigma**2 / s2**2, abs=1e-6)
        assert (1 - g_hi) / sigma**2 == pytest.approx(1 / s2, rel=50 * sigma**2 / s2**2)
    # and the σ = 0 surface itself: T = cos²θ − γ for γ < 1
    gamma = np.linspace(0.01, 0.99, 50)
    np.testing.assert_allclose(L.linear_transferability(gamma, theta, 0.0), c2 - gamma, atol=1e-15)


def test_anomalous_positive_transfer_at_orthogonal_tasks():
    """θ = π/2: T_lt > 0 on the band (1 − σ², 1 + σ²) around γ = 1 (FaF §3.3), negative outside."""
    sigma = 0.2
    g_lo, g_hi = L.negative_transfer_interval(math.pi / 2, sigma)
    assert (g_lo, g_hi) == pytest.approx((0.0, 1 - sigma**2))
    assert L.negative_transfer_threshold(math.pi / 2, sigma) == pytest.approx(1 + sigma**2)
    band = np.linspace(1 - sigma**2, 1 + sigma**2, 41)[1:-1]
    assert np.all(L.linear_transferability(band, math.pi / 2, sigma) > 0)


# --------------------------------------------------------------------------- exact identities: ridge (Thm 3.8)


@given(theta=thetas, sigma=st.floats(0.0, 1.5), n=st.integers(3, 500))
def test_ridge_finite_at_zero_lambda_is_linear_transfer(theta, sigma, n):
    assert L.ridge_transfer_risk_finite(theta, sigma, n, 0.0) == pytest.approx(
        L.linear_transfer_risk(theta, sigma, n), rel=1e-14, abs=1e-15
    )
    # Continuity at λ → 0⁺ (quadrature branch against the exact c = 0 branch). For n ≥ 5 the slope at 0
    # is finite (E‖z‖⁻⁴ < ∞), so the gap is ≲ |dR/dλ|·λ; for n = 3, 4 it is O(√λ), O(λ log λ) instead.
    if n >= 5:
        assert L.ridge_transfer_risk_finite(theta, sigma, n, 1e-9) == pytest.approx(
            L.linear_transfer_risk(theta, sigma, n), rel=1e-7
        )


@pytest.mark.parametrize("n, c", [(3, 0.5), (4, 2.0), (7, 1e-3), (30, 15.0), (200, 100.0), (1000, 3000.0)])
def test_chi2_resolvent_moments_against_quad(n, c):
    """The log-space trapezoid against scipy.integrate.quad on the χ²_n density."""
    dist = stats.chi2(n)
    lo, hi = dist.ppf(1e-20), dist.isf(1e-20)  # beyond these the integrands' mass is < 1e-20 · max|f|
    expected = [
        integrate.quad(lambda s, f=f: f(s) * dist.pdf(s), lo, hi, points=[n - 2], epsabs=0, epsrel=1e-12, limit=200)[0]
        for f in (lambda s: s / (s + c), lambda s: s / (s + c) ** 2, lambda s: (s / (s + c)) ** 2)
    ]
    np.testing.assert_allclose(L.chi2_resolvent_moments(n, c), expected, rtol=1e-8)


def test_chi2_resolvent_moments_broadcast_and_exact_zero():
    a, b, cc = L.chi2_resolvent_moments(np.array([[5], [9]]), np.array([0.0, 1.0, 2.0]))
    assert a.shape == b.shape == cc.shape == (2, 3)
    np.testing.assert_allclose(b[:, 0], [1 / 3, 1 / 7], rtol=1e-15)
    assert np.all(a[:, 0] == 1) and np.all(cc[:, 0] == 1)
    assert L.chi2_resolvent_moments(9, 1.0)[1] == pytest.approx(b[1, 1], rel=1e-14)


# --------------------------------------------------------------------------- finite → asymptotic


# --------------------------------------------------------------------------- fine-tuning (Thm 3.9)


@given(n=st.integers(1, 60), d=st.integers(1, 60), theta=thetas, sigma=st.floats(0.0, 1.5))
def test_finite_fine_tuning_is_scratch_minus_transferability(n, d, theta, sigma):
    r_sc, r_ft = L.scratch_risk_finite(n, d, sigma), L.fine_tune_risk_finite_paper(n, d, theta, sigma)
    t_ft = L.fine_tune_transferability_finite_paper(n, d, theta)
    if math.isinf(r_sc):
        assert math.isinf(r_ft) and sigma > 0 and abs(n - d) <= 1
    else:
        assert r_ft == pytest.approx(r_sc - t_ft, abs=1e-12)
    if n >= d:
        assert t_ft == 0 and (r_ft == r_sc or math.isinf(r_sc))


# --------------------------------------------------------------------------- singular points and shapes


@pytest.mark.parametrize(
    "value, expected",
    [
        (lambda: L.scratch_risk(1.0, 0.2), math.inf),
        (lambda: L.scratch_risk(1.0, 0.0), 0.0),  # 0·∞ = 0: no noise, no noise term
        (lambda: L.linear_transferability(1.0, 0.7, 0.2), math.inf),
        (lambda: L.linear_transferability(1.0, 0.7, 0.0), -math.sin(0.7) ** 2),
        (lambda: L.fine_tune_risk(1.0, 0.7, 0.2), math.inf),
        (lambda: L.fine_tune_transferability(1.0, 0.7), 0.0),  # pathwise cancellation
        (lambda: L.scratch_risk_finite(7, 8, 0.2), math.inf),
        (lambda: L.scratch_risk_finite(8, 8, 0.0), 0.0),
        (lambda: L.scratch_risk_finite(7, 8, 0.0), 1 / 8),
        (lambda: L.min_norm_noise_gain(9, 8), math.inf),
        (lambda: L.fine_tune_risk_finite_paper(8, 9, 0.5, 0.1), math.inf),
        (lambda: L.fine_tune_transferability_finite_paper(8, 9, 0.5), -(1 / 9) * (1 - 2 * math.cos(0.5))),
        (lambda: L.negative_transfer_threshold(0.0, 0.2), math.inf),
        (lambda: L.negative_transfer_threshold(math.pi, 0.2), math.inf),
        (lambda: L.negative_transfer_interval(0.3, 0.2)[0], math.nan),
        (lambda: L.negative_transfer_interval(1.2, 1.0)[1], math.nan),
        (lambda: L.negative_transfer_onset_angle(1.0), math.nan),
    ],
)
def test_documented_singular_values(value, expected):
    got = value()
    assert isinstance(got, float)
    if math.isnan(expected):
        assert math.isnan(got)
    else:
        assert got == pytest.approx(expected, rel=1e-14, abs=1e-15)


def test_scalar_in_float_out_and_broadcasting():
    gamma = np.linspace(0.1, 2.0, 7)[:, None]
    theta = np.linspace(0.0, math.pi, 5)[None, :]
    assert L.linear_transferability(gamma, theta, 0.2).shape == (7, 5)
    assert L.fine_tune_transferability(gamma, theta).shape == (7, 5)
    assert L.scratch_risk(gamma, [0.1, 0.2]).shape == (7, 2)
    lo, hi = L.negative_transfer_interval(theta, np.array([[0.1], [0.3]]))
    assert lo.shape == hi.shape == (2, 5)
    n = np.array([5, 10, 20])
    assert L.ridge_transfer_risk_finite(theta.T, 0.2, n, 0.1).shape == (5, 3)
    assert L.scratch_risk_finite(n, 12, 0.2).shape == (3,)
    assert type(L.linear_transfer_risk(0.3, 0.1, 10)) is float
    assert type(L.negative_transfer_interval(1.2, 0.1)[0]) is float


def test_warnings_free_on_singular_grids():
    """The singular points are values: no warning of any kind escapes, and the values are the documented ones."""
    gamma = np.array([0.5, 1.0, 2.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        risks = L.scratch_risk(gamma, np.array([[0.0], [0.2]]))
        fine = L.fine_tune_risk(gamma, 1.0, 0.0)
        finite = L.scratch_risk_finite(np.arange(1, 12), 6, 0.0)
        threshold = L.negative_transfer_threshold(np.array([0.0, 1.0, math.pi]), 0.0)
        corrected = L.fine_tune_transferability_corrected(gamma, 1.0, 0.2)
    np.testing.assert_allclose(risks, [[0.5, 0.0, 0.0], [0.5 + 0.04, math.inf, 0.04]])
    np.testing.assert_allclose(fine, [0.5 * (2 - 2 * math.cos(1.0)), 0.0, 0.0])
    np.testing.assert_allclose(finite, np.clip(1 - np.arange(1, 12) / 6, 0, None))
    np.testing.assert_array_equal(threshold, [math.inf, 1.0, math.inf])
    assert np.all(np.isfinite(corrected)) and np.all(corrected[1:] == 0)


# --------------------------------------------------------------------------- bad input

VALID = {
    L.scratch_risk: dict(gamma=0.5, sigma=0.2),
    L.scratch_risk_finite: dict(n=5, d=10, sigma=0.2),
    L.min_norm_noise_gain: dict(n=5, d=10),
    L.linear_transfer_risk: dict(theta=0.5, sigma=0.2, n=10),
    L.linear_transferability: dict(gamma=0.5, theta=0.5, sigma=0.2),
    L.linear_transferability_finite: dict(n=5, d=10, theta=0.5, sigma=0.2),
    L.negative_transfer_interval: dict(theta=0.5, sigma=0.2),
    L.negative_transfer_threshold: dict(theta=0.5, sigma=0.2),
    L.negative_transfer_onset_angle: dict(sigma=0.2),
    L.ridge_transfer_risk: dict(theta=0.5, lam=0.1),
    L.ridge_transfer_risk_finite: dict(theta=0.5, sigma=0.2, n=10, lam=0.1),
    L.chi2_resolvent_moments: dict(n=10, c=1.0),
    L.fine_tune_risk: dict(gamma=0.5, theta=0.5, sigma=0.2),
    L.fine_tune_risk_finite_paper: dict(n=5, d=10, theta=0.5, sigma=0.2),
    L.fine_tune_transferability: dict(gamma=0.5, theta=0.5),
    L.fine_tune_transferability_finite_paper: dict(n=5, d=10, theta=0.5),
    L.fine_tune_scale: dict(gamma=0.5, sigma=0.2),
    L.fine_tune_risk_corrected: dict(gamma=0.5, theta=0.5, sigma=0.2),
    L.fine_tune_transferability_corrected: dict(gamma=0.5, theta=0.5, sigma=0.2),
}
#: n must exceed 2 where the formula has 1/(n − 2) (or the χ²_n moments it needs).
NEEDS_N3 = {L.linear_transfer_risk, L.linear_transferability_finite, L.ridge_transfer_risk_finite, L.chi2_resolvent_moments}
#: (bad value, the valid range the message must state).
BAD = {
    "gamma": [(0.0, r"\(0, inf\)"), (-1.0, r"\(0, inf\)"), ([0.5, -2.0], r"\(0, inf\)"), (math.nan, "NaN")],
    "theta": [(-0.1, r"\[0, π\]"), (3.2, r"\[0, π\]"), (math.nan, "NaN")],
    "sigma": [(-0.1, r"\[0, inf\)"), (math.inf, r"\[0, inf\)"), (math.nan, "NaN"), ("abc", "real number"),
              (True, "real number")],
    "lam": [(-1e-3, r"\[0, inf\)"), (math.nan, "NaN")],
    "c": [(-1.0, r"\[0, inf\)")],
    "n": [(2.5, "integer"), (0, "integer >= "), (math.nan, "NaN"), (math.inf, "integer"), ("10", "real number"),
          (True, "real number")],
    "d": [(1.5, "integer"), (0, "integer >= 1"), (math.nan, "NaN")],
}


def _bad_cases():
    for func, kwargs in VALID.items():
        for param in kwargs:
            cases = list(BAD[param])
            if param == "n" and func in NEEDS_N3:
                cases.append((2, "integer >= 3"))
            for value, message in cases:
                yield pytest.param(func, {**kwargs, param: value}, param, message, id=f"{func.__name__}-{param}={value}")


@pytest.mark.parametrize("func, kwargs, param, message", list(_bad_cases()))
def test_bad_input_raises_value_error_naming_the_parameter(func, kwargs, param, message):
    with pytest.raises(ValueError, match=rf"^{param} must .*{message}"):
        func(**kwargs)


@pytest.mark.parametrize("func, kwargs", list(VALID.items()), ids=lambda v: getattr(v, "__name__", ""))
def test_valid_reference_inputs_are_accepted(func, kwargs):
    """The VALID table itself is valid (so each bad-input case fails for the one bad parameter)."""
    result = func(**kwargs)
    assert all(isinstance(r, float) for r in (result if isinstance(result, tuple) else (result,)))


def test_bad_input_of_the_per_draw_fine_tuning_functions():
    X, y, beta = np.ones((3, 5)), np.ones(3), np.ones(5)
    with pytest.raises(ValueError, match="X must"):
        L.fine_tune_limit(np.ones(5), y, beta)
    with pytest.raises(ValueError, match="y \\(..., n\\)"):
        L.fine_tune_limit(X, np.ones(4), beta)
    with pytest.raises(ValueError, match="depth must be an integer >= 2"):
        L.fine_tune_limit(X, y, beta, depth=1)
    with pytest.raises(ValueError, match="X must have shape"):
        L.min_norm_solution(np.ones(3), y)
    for bad in ("X", "y", "beta_pre"):
        arrays = dict(X=X.copy(), y=y.copy(), beta_pre=beta.copy())
        arrays[bad].flat[1] = math.nan
        with pytest.raises(ValueError, match=rf"^{bad} must be finite \(no NaN or inf\)"):
            L.fine_tune_limit(**arrays)
    with pytest.raises(ValueError, match=r"^y must be finite"):
        L.min_norm_solution(X, np.array([1.0, math.inf, 0.0]))
    for kwargs, message in [(dict(draws=1), "draws must be an integer >= 2"), (dict(d=1), "d must be an integer >= 2"),
                            (dict(theta=4.0), "theta must be in"), (dict(sigma=-1.0), "sigma must be in")]:
        with pytest.raises(ValueError, match=message):
            L.fine_tune_flow_expectation(**{**dict(n=3, d=6, theta=0.5, sigma=0.2), **kwargs})


