"""The transfer-method records (transfertheory.theory.methods) against independent computations.

* paper_* against the functions of theory.linear they stand for (identity);
* the exact finite forms against Monte Carlo of their defining expectation:
  draw X, ε, build the estimator the theorem describes, average its risk
  (|mean − theory| ≤ 4·SE);
* flow_* of fine-tuning against an independent Monte Carlo of the per-draw
  gradient-flow limit ``fine_tune_limit`` (other draws, other task vectors),
  and against its n, d → ∞ form;
* identities: T = R_scratch − R_method, ridge at λ = 0 = linear, flow = paper
  where gradient flow reaches the paper's limit; validity below min_n.
"""
import dataclasses
import hashlib
import math

import numpy as np
import pytest

from transfertheory.theory import fine_tuning as FT
from transfertheory.theory import linear as L
from transfertheory.theory.methods import (
    METHODS,
    MIN_REFERENCE_DRAWS,
    REFERENCE_DRAWS,
    TRANSFER_METHODS,
    TransferMethod,
    get_method,
    reference_draws,
)

# --------------------------------------------------------------------------- Monte Carlo helpers

REPS = 2000
#: (largest |z|, label) of every non-degenerate Monte Carlo comparison in this module.
Z_SCORES = []


@pytest.fixture(scope="module", autouse=True)
def _report_largest_z(request):
    """Print the largest Monte Carlo |z| of the module."""
    yield
    if Z_SCORES:
        z, label = max(Z_SCORES)
        plugins = request.config.pluginmanager
        reporter, capture = plugins.get_plugin("terminalreporter"), plugins.get_plugin("capturemanager")
        if reporter is not None and capture is not None:
            with capture.global_and_fixture_disabled():
                reporter.write_line(
                    f"\ntest_methods: largest Monte Carlo |z| = {z:.2f} ({label}) over {len(Z_SCORES)} comparisons"
                )


def rng_for(*params):
    """Generator seeded by a hash of the parameters: same draws for the same hypothesis example."""
    digest = hashlib.sha256(repr(params).encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "little"))


def task(theta, d):
    """β_s = e₁, β_t = cos θ e₁ + sin θ e₂ in ℝ^d (WLOG by rotation invariance)."""
    beta_s, beta_t = np.zeros(d), np.zeros(d)
    beta_s[0] = 1.0
    beta_t[0], beta_t[1] = math.cos(theta), math.sin(theta)
    return beta_s, beta_t


def draw(rng, n, d, theta, sigma, reps=REPS):
    """REPS target sets: X (reps, n, d) with N(0, 1) entries, y = Xβ_t + ε, ε ~ N(0, σ²)."""
    beta_s, beta_t = task(theta, d)
    x = rng.standard_normal((reps, n, d))
    y = x @ beta_t + sigma * rng.standard_normal((reps, n))
    return x, y, beta_s, beta_t


def risk(beta_hat, beta_t):
    """R = ‖β̂ − β_t‖² per draw."""
    return ((beta_hat - beta_t) ** 2).sum(axis=-1)


def scratch_estimate(x, y):
    """Minimum-norm least squares β̂ = X⁺y (FaF Thm 3.5)."""
    return (np.linalg.pinv(x) @ y[..., None])[..., 0]


def fine_tune_estimate(x, y, beta_s):
    """β̂ = X⁺y + (I − X⁺X)β_s (FaF Thm 3.9, Eq. 142)."""
    pinv = np.linalg.pinv(x)
    return (pinv @ y[..., None])[..., 0] + beta_s - (pinv @ (x @ beta_s)[..., None])[..., 0]


def linear_transfer_estimate(rng, x, y, beta_s):
    """Min-norm least squares of the last layer on rank-one features Φ = (Xβ_s)vᵀ (FaF Thm 3.4, Eq. 11).

    v is a random vector of random norm: the end-to-end β̂ = β_s vᵀΦ⁺y does not
    depend on it. The rank cut-off 1e-10 removes the rounding-level singular
    values of the (exactly) rank-one Φ.
    """
    d = x.shape[-1]
    v = rng.standard_normal(d) * rng.uniform(0.5, 2.0)
    phi = (x @ beta_s)[..., None] * v
    head = (np.linalg.pinv(phi, rcond=1e-10) @ y[..., None])[..., 0]
    return (head @ v)[:, None] * beta_s


def ridge_transfer_estimate(x, y, beta_s, lam, rng):
    """Ridge head W = (ΦᵀΦ + nλI)⁻¹Φᵀy on balanced rank-one features Φ = (Xβ_s)vᵀ, ‖v‖ = 1 (FaF Eqs. 14, 121)."""
    reps, n, d = x.shape
    v = rng.standard_normal(d)
    v /= np.linalg.norm(v)
    phi = (x @ beta_s)[..., None] * v
    gram = np.swapaxes(phi, -1, -2) @ phi + n * lam * np.eye(d)
    head = np.linalg.solve(gram, (np.swapaxes(phi, -1, -2) @ y[..., None]))[..., 0]
    return (head @ v)[:, None] * beta_s


def assert_mc_agrees(samples, theory, label):
    """|mean − theory| ≤ 4·SE, SE = sample sd/√reps; records |z|.

    When every sample equals the theory up to rounding (SE below 1e-9: σ = 0
    with n ≥ d, or θ = σ = 0) the comparison is |mean − theory| ≤ 1e-9, the
    floating-point allowance of an SVD-based pseudo-inverse.
    """
    samples = np.asarray(samples, dtype=float)
    mean = samples.mean()
    se = samples.std(ddof=1) / math.sqrt(samples.size)
    if se < 1e-9:
        assert abs(mean - theory) <= 1e-9, f"{label}: degenerate MC {mean!r} vs theory {theory!r}"
        return
    z = (mean - theory) / se
    Z_SCORES.append((abs(z), label))
    assert abs(z) <= 4, f"{label}: MC mean {mean:.6g} vs theory {theory:.6g}, z = {z:.2f} (SE {se:.3g})"


GAMMAS = np.array([0.1, 0.5, 0.9, 1.0, 1.3, 3.0])[:, None]
THETAS = np.linspace(0, math.pi, 7)[None, :]
SIGMAS = (0.0, 0.3)


def lam_for(record):
    return 0.4 if record.takes_lambda else 0.0


# --------------------------------------------------------------------------- the records


def test_records_are_frozen_and_complete():
    assert tuple(METHODS) == ("scratch", "linear", "ridge", "finetune")
    assert TRANSFER_METHODS == ("linear", "ridge", "finetune")
    for name, record in METHODS.items():
        assert isinstance(record, TransferMethod) and record.name == name and get_method(name) is record
        assert record.simulator in ("scratch", "linear", "finetune")
        with pytest.raises(dataclasses.FrozenInstanceError):
            record.min_n = 0
    assert [r.name for r in METHODS.values() if r.takes_lambda] == ["ridge"]
    assert METHODS["ridge"].simulator == "linear"  # ridge is linear transfer with λ in the simulator
    assert [r.name for r in METHODS.values() if not r.flow_is_paper] == ["finetune"]
    assert METHODS["finetune"].erratum is not None
    with pytest.raises(TypeError):
        METHODS["new"] = METHODS["linear"]


@pytest.mark.parametrize("bad", ["Linear", "", None, 3])
def test_get_method_names_the_choices(bad):
    with pytest.raises(ValueError, match=r"^method must be one of \('scratch', 'linear', 'ridge', 'finetune'\), got "):
        get_method(bad)


def test_simulator_names_exist_in_the_simulator():
    from transfertheory.sim.deep_linear import run_transfer_experiment

    table = run_transfer_experiment(4, [1.5], [0.3], 0.1, 1, methods=tuple({r.simulator for r in METHODS.values()}),
                                    seed=1)
    assert set(table["method"]) == {r.simulator for r in METHODS.values()}


# --------------------------------------------------------------------------- paper_* are the paper's formulas


def same(got, expected):
    """Identical values, the record's output having the broadcast shape of all its inputs."""
    np.testing.assert_array_equal(got, np.broadcast_to(expected, np.shape(got)))
    assert np.ndim(got) >= np.ndim(expected)


@pytest.mark.parametrize("sigma", SIGMAS)
def test_paper_forms_are_the_linear_module_functions(sigma):
    g, t = GAMMAS, THETAS
    lin, ridge, ft, sc = (METHODS[k] for k in ("linear", "ridge", "finetune", "scratch"))
    r_sc = L.scratch_risk(g, sigma)
    same(sc.paper_risk(g, t, sigma), r_sc)
    same(lin.paper_risk(g, t, sigma), np.sin(t) ** 2)
    same(lin.paper_transferability(g, t, sigma), L.linear_transferability(g, t, sigma))
    same(ridge.paper_risk(g, t, sigma, 0.4), L.ridge_transfer_risk(t, 0.4))
    same(ridge.paper_transferability(g, t, sigma, 0.4), r_sc - L.ridge_transfer_risk(t, 0.4))
    same(ft.paper_risk(g, t, sigma), L.fine_tune_risk(g, t, sigma))
    same(ft.paper_transferability(g, t, sigma), L.fine_tune_transferability(g, t))
    same(ft.flow_risk(g, t, sigma), L.fine_tune_risk_corrected(g, t, sigma))
    same(ft.flow_transferability(g, t, sigma, depth=3), L.fine_tune_transferability_corrected(g, t, sigma, 3))


@pytest.mark.parametrize("sigma", SIGMAS)
def test_paper_finite_forms_are_the_linear_module_functions(sigma):
    n, d, t = np.array([3, 5, 19, 20, 21, 40])[:, None], 20, THETAS
    lin, ridge, ft, sc = (METHODS[k] for k in ("linear", "ridge", "finetune", "scratch"))
    same(sc.paper_risk_finite(n, d, t, sigma), L.scratch_risk_finite(n, d, sigma))
    same(lin.paper_risk_finite(n, d, t, sigma), L.linear_transfer_risk(t, sigma, n))
    same(lin.paper_transferability_finite(n, d, t, sigma), L.linear_transferability_finite(n, d, t, sigma))
    same(ridge.paper_risk_finite(n, d, t, sigma, 0.4), L.ridge_transfer_risk_finite(t, sigma, n, 0.4))
    same(ft.paper_risk_finite(n, d, t, sigma), L.fine_tune_risk_finite_paper(n, d, t, sigma))
    same(ft.paper_transferability_finite(n, d, t, sigma), L.fine_tune_transferability_finite_paper(n, d, t))


# --------------------------------------------------------------------------- identities


@pytest.mark.parametrize("name", list(METHODS))
@pytest.mark.parametrize("sigma", SIGMAS)
def test_transferability_is_scratch_minus_method_risk(name, sigma):
    """T = R_scratch − R_method wherever both risks are finite, in all four flavours."""
    record, scratch, lam = METHODS[name], METHODS["scratch"], lam_for(METHODS[name])
    g, t = GAMMAS, THETAS
    for risk_of, t_of in [("paper_risk", "paper_transferability"), ("flow_risk", "flow_transferability")]:
        r_sc, r = scratch.paper_risk(g, t, sigma), getattr(record, risk_of)(g, t, sigma, lam)
        finite = np.isfinite(r_sc) & np.isfinite(r)
        np.testing.assert_allclose(getattr(record, t_of)(g, t, sigma, lam)[finite], r_sc[finite] - r[finite],
                                   atol=1e-12)
    n, d = np.array([3, 6, 11, 12, 13, 30])[:, None], 12
    r_sc, r = scratch.paper_risk_finite(n, d, t, sigma), record.paper_risk_finite(n, d, t, sigma, lam)
    finite = np.isfinite(r_sc) & np.isfinite(r)
    assert finite.sum() >= 21  # only |n − d| ≤ 1 with σ > 0 is infinite
    np.testing.assert_allclose(record.paper_transferability_finite(n, d, t, sigma, lam)[finite],
                               r_sc[finite] - r[finite], atol=1e-12)


@pytest.mark.parametrize("sigma", SIGMAS)
def test_ridge_at_zero_lambda_is_linear_transfer(sigma):
    lin, ridge = METHODS["linear"], METHODS["ridge"]
    np.testing.assert_allclose(ridge.paper_risk(GAMMAS, THETAS, sigma, 0.0), lin.paper_risk(GAMMAS, THETAS, sigma),
                               atol=1e-15)
    np.testing.assert_allclose(ridge.paper_transferability(GAMMAS, THETAS, sigma),
                               lin.paper_transferability(GAMMAS, THETAS, sigma), atol=1e-15)
    n = np.array([3, 7, 40])[:, None]
    np.testing.assert_allclose(ridge.paper_risk_finite(n, 20, THETAS, sigma),
                               lin.paper_risk_finite(n, 20, THETAS, sigma), rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(ridge.flow_transferability_finite(n, 20, THETAS, sigma)[0],
                               lin.flow_transferability_finite(n, 20, THETAS, sigma)[0], rtol=1e-14, atol=1e-14)


@pytest.mark.parametrize("name", ["scratch", "linear", "ridge"])
def test_flow_is_paper_with_zero_standard_error(name):
    record, lam = METHODS[name], lam_for(METHODS[name])
    same(record.flow_risk(GAMMAS, THETAS, 0.3, lam), record.paper_risk(GAMMAS, THETAS, 0.3, lam))
    np.testing.assert_array_equal(record.flow_transferability(GAMMAS, THETAS, 0.3, lam),
                                  record.paper_transferability(GAMMAS, THETAS, 0.3, lam))
    mean, se = record.flow_risk_finite(10, 20, THETAS, 0.3, lam)
    np.testing.assert_array_equal(mean, record.paper_risk_finite(10, 20, THETAS, 0.3, lam))
    assert np.all(se == 0) and se.shape == mean.shape
    exact = record.paper_transferability_finite(10, 20, 0.5, 0.3, lam)
    assert record.flow_transferability_finite(10, 20, 0.5, 0.3, lam) == (exact, 0.0)


def test_fine_tuning_flow_equals_paper_without_noise_asymptotically():
    ft = METHODS["finetune"]
    np.testing.assert_allclose(ft.flow_risk(GAMMAS, THETAS, 0.0), ft.paper_risk(GAMMAS, THETAS, 0.0), atol=1e-12)
    gap = ft.flow_transferability(0.5, 1.0, 0.3) - ft.paper_transferability(0.5, 1.0, 0.3)
    assert abs(gap) > 1e-3  # ... and differs from it with noise (docs/errata.md)


# --------------------------------------------------------------------------- validity


@pytest.mark.parametrize("name", list(METHODS))
def test_finite_forms_refuse_n_below_min_n(name):
    record, lam = METHODS[name], lam_for(METHODS[name])
    assert math.isfinite(record.paper_risk_finite(record.min_n, 40, 0.5, 0.2, lam))
    for method in ("paper_risk_finite", "paper_transferability_finite", "flow_risk_finite",
                   "flow_transferability_finite"):
        with pytest.raises(ValueError, match=rf"^n must be an integer >= {record.min_n}, got {record.min_n - 1}"):
            getattr(record, method)(record.min_n - 1, 40, 0.5, 0.2, lam)


@pytest.mark.parametrize("name", ["scratch", "linear", "finetune"])
def test_lambda_is_refused_where_the_method_has_none(name):
    with pytest.raises(ValueError, match=rf"^lam must be 0 for method '{name}'"):
        METHODS[name].paper_risk(0.5, 0.5, 0.2, 0.1)
    assert METHODS[name].paper_risk(0.5, 0.5, 0.2, 0.0) == METHODS[name].paper_risk(0.5, 0.5, 0.2)


@pytest.mark.parametrize(
    "method, args, message",
    [
        ("paper_risk", (0.0, 0.5, 0.2), r"^gamma must be in \(0, inf\)"),
        ("flow_risk", (0.5, 4.0, 0.2), r"^theta must be in \[0, π\]"),
        ("paper_transferability", (0.5, 0.5, True), r"^sigma must be a real number"),
        ("paper_risk", (0.5, 0.5, 0.2, -1.0), r"^lam must be in \[0, inf\)"),
        ("paper_risk_finite", ("10", 20, 0.5, 0.2), r"^n must be a real number"),
        ("paper_risk_finite", (10, 0, 0.5, 0.2), r"^d must be an integer >= 1"),
    ],
)
def test_bad_input_names_the_parameter(method, args, message):
    with pytest.raises(ValueError, match=message):
        getattr(METHODS["ridge"], method)(*args)


def test_fine_tuning_monte_carlo_needs_scalar_sizes():
    ft = METHODS["finetune"]
    with pytest.raises(ValueError, match=r"^n must be a single number"):
        ft.flow_transferability_finite([4, 5], 10, 0.5, 0.2)
    with pytest.raises(ValueError, match=r"^depth must be an integer >= 2"):
        ft.flow_risk(0.5, 0.5, 0.2, depth=1)


# --------------------------------------------------------------------------- exact finite forms vs Monte Carlo


def _estimate(name, rng, x, y, beta_s, lam):
    """β̂ of the method's paper limit point, per draw."""
    if name == "scratch":
        return scratch_estimate(x, y)
    if name == "linear":
        return linear_transfer_estimate(rng, x, y, beta_s)
    if name == "ridge":
        return ridge_transfer_estimate(x, y, beta_s, lam, rng)
    return fine_tune_estimate(x, y, beta_s)


#: (n, d, θ, σ): |n − d| ≥ 8 with σ > 0 and n ≥ 9 give every risk a finite 4th moment (tests/theory/test_linear.py)
MC_CASES = [(10, 24, 0.7, 0.3), (30, 12, 1.9, 0.5), (9, 20, 0.3, 0.0), (16, 16, 2.5, 0.0)]


@pytest.mark.parametrize("name", list(METHODS))
@pytest.mark.parametrize("n, d, theta, sigma", MC_CASES)
def test_paper_finite_forms_match_monte_carlo(name, n, d, theta, sigma):
    record, lam = METHODS[name], lam_for(METHODS[name])
    rng = rng_for("record", name, n, d, theta, sigma)
    x, y, beta_s, beta_t = draw(rng, n, d, theta, sigma)
    r_method = risk(_estimate(name, rng, x, y, beta_s, lam), beta_t)
    label = f"{name} n={n} d={d} θ={theta} σ={sigma}"
    assert_mc_agrees(r_method, record.paper_risk_finite(n, d, theta, sigma, lam), f"R {label}")
    gap = risk(scratch_estimate(x, y), beta_t) - r_method
    assert_mc_agrees(gap, record.paper_transferability_finite(n, d, theta, sigma, lam), f"T {label}")


# --------------------------------------------------------------------------- fine-tuning: the gradient-flow limit


def _flow_limit_samples(n, d, theta, sigma, draws, seed):
    """Independent Monte Carlo of the gradient-flow limit: random orthonormal (β_s, β_t) directions, own draws."""
    rng = np.random.default_rng(seed)
    q, _ = np.linalg.qr(rng.standard_normal((d, 2)))
    beta_s, beta_t = q[:, 0], math.cos(theta) * q[:, 0] + math.sin(theta) * q[:, 1]
    x = rng.standard_normal((draws, n, d))
    y = x @ beta_t + sigma * rng.standard_normal((draws, n))
    r_ft = risk(FT.fine_tune_limit(x, y, beta_s), beta_t)
    return r_ft, risk(scratch_estimate(x, y), beta_t) - r_ft


@pytest.mark.parametrize("n, d, theta, sigma, far_from_paper",
                         [(6, 20, 0.4, 0.5, False), (12, 24, 1.2, 1.0, True), (3, 12, 2.0, 0.3, False)])
def test_flow_finite_matches_an_independent_monte_carlo_of_the_limit(n, d, theta, sigma, far_from_paper):
    ft = METHODS["finetune"]
    r_ft, gap = _flow_limit_samples(n, d, theta, sigma, 3000, seed=n * d)
    for (mean, se), samples, what in [(ft.flow_risk_finite(n, d, theta, sigma), r_ft, "R"),
                                      (ft.flow_transferability_finite(n, d, theta, sigma), gap, "T")]:
        se_both = math.hypot(se, samples.std(ddof=1) / math.sqrt(samples.size))
        assert abs(mean - samples.mean()) <= 4 * se_both, f"{what}: {mean} vs {samples.mean()} (SE {se_both:.3g})"
    if far_from_paper:  # with strong noise the c = 1 formula is many SE away: the record does not compare with it
        mean, se = ft.flow_transferability_finite(n, d, theta, sigma)
        assert abs(mean - ft.paper_transferability_finite(n, d, theta, sigma)) > 10 * se


def test_flow_finite_tends_to_the_asymptotic_flow_form():
    """At d = 200, γ = 0.5 the Monte Carlo is within O(1/d) + 4 SE of the n, d → ∞ corrected formula."""
    ft = METHODS["finetune"]
    theta = np.array([0.3, 1.0, 2.0])
    mean, se = ft.flow_transferability_finite(100, 200, theta, 0.5, draws=400)
    limit = ft.flow_transferability(0.5, theta, 0.5)
    assert np.all(np.abs(mean - limit) <= 4 * se + 5 / 200), (mean, limit, se)


def test_flow_finite_exact_cases():
    ft = METHODS["finetune"]
    # n ≥ d: nothing carried over, R_ft = R_sc pathwise, T = 0
    assert ft.flow_risk_finite(30, 12, 0.5, 0.3) == (L.scratch_risk_finite(30, 12, 0.3), 0.0)
    assert ft.flow_transferability_finite(12, 12, [0.5, 1.0], 0.3)[0].tolist() == [0.0, 0.0]
    # d − n = 1 with σ > 0: E R_ft ≥ E‖X⁺ε‖² = +inf; T (noise cancels) stays finite
    assert ft.flow_risk_finite(11, 12, 0.5, 0.3, draws=50) == (math.inf, 0.0)
    assert math.isfinite(ft.flow_transferability_finite(11, 12, 0.5, 0.3, draws=50)[0])


def test_flow_finite_seed_and_default_draws():
    ft = METHODS["finetune"]
    a = ft.flow_transferability_finite(5, 10, 0.5, 0.3, draws=200, seed=1)
    assert a == ft.flow_transferability_finite(5, 10, 0.5, 0.3, draws=200, seed=1)
    assert a != ft.flow_transferability_finite(5, 10, 0.5, 0.3, draws=200, seed=2)
    # the default is reference_draws(n, d), the same draws as passing it explicitly
    assert ft.flow_transferability_finite(5, 10, 0.5, 0.3) == ft.flow_transferability_finite(
        5, 10, 0.5, 0.3, draws=reference_draws(5, 10))


@pytest.mark.parametrize("n, d, expected", [(8, 10, REFERENCE_DRAWS), (64, 64, REFERENCE_DRAWS), (128, 64, 2000),
                                             (64, 256, 1000), (500, 500, MIN_REFERENCE_DRAWS)])
def test_reference_draws_policy(n, d, expected):
    """4000 draws up to n·d = 64², then ∝ 1/(n·d), at least 500."""
    assert reference_draws(n, d) == expected
