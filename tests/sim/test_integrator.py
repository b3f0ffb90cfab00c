"""The batched RKC2 gradient-flow integrator against exact solutions and identities."""
import numpy as np
import pytest

from transfertheory.backend import to_device, to_host
from transfertheory.sim.integrator import (
    DenseStages,
    StageKernel,
    StepRequest,
    integrate_gradient_flow,
    rkc_butcher_rows,
    rkc_coefficients,
    rkc_stability_bound,
)
from transfertheory.sim.integrator.kernels import EPS_DAMPING, tables


def _stability_polynomial(s, z):
    """Apply one s-stage RKC step to y' = λy with hλ = z (exact recursion)."""
    mu, nu, mu_t, gam_t = rkc_coefficients(s)
    y0 = np.ones_like(z)
    prev2, prev1 = y0, y0 + mu_t[1] * z * y0
    for j in range(2, s + 1):
        y = (1 - mu[j] - nu[j]) * y0 + mu[j] * prev1 + nu[j] * prev2 + mu_t[j] * z * prev1 + gam_t[j] * z * y0
        prev2, prev1 = prev1, y
    return prev1


@pytest.mark.parametrize("s", [2, 3, 7, 20, 60])
def test_rkc_is_second_order_consistent(s):
    # P_s(z) = 1 + z + z²/2 + O(z³): compare at small z (Sommeijer et al. 1998, Eq. 2.3)
    z = np.array([1e-3, -1e-3, 2e-3])
    err = np.abs(_stability_polynomial(s, z) - (1 + z + z**2 / 2))
    assert np.all(err < 10 * np.abs(z) ** 3 * s**2)


def _scalar_recursion(s):
    """The Chebyshev recursion of Sommeijer et al. (1998), Eqs. 2.4–2.8, written out for one s in Python floats."""
    w0 = 1.0 + EPS_DAMPING / s**2
    T, dT, ddT = [1.0, w0], [0.0, 1.0], [0.0, 0.0]
    for j in range(2, s + 1):
        T.append(2 * w0 * T[j - 1] - T[j - 2])
        dT.append(2 * T[j - 1] + 2 * w0 * dT[j - 1] - dT[j - 2])
        ddT.append(4 * dT[j - 1] + 2 * w0 * ddT[j - 1] - ddT[j - 2])
    w1 = dT[s] / ddT[s]
    b = [None, None] + [ddT[j] / (dT[j] * dT[j]) for j in range(2, s + 1)]  # x·x, as NumPy squares (pow may differ)
    b[0] = b[1] = b[2]
    mu, nu, mu_t, gam_t = ([0.0] * (s + 1) for _ in range(4))
    mu_t[1] = b[1] * w1
    for j in range(2, s + 1):
        mu[j], nu[j] = 2 * b[j] * w0 / b[j - 1], -b[j] / b[j - 2]
        mu_t[j] = 2 * b[j] * w1 / b[j - 1]
        gam_t[j] = -(1 - b[j - 1] * T[j - 1]) * mu_t[j]
    return np.array([mu, nu, mu_t, gam_t])


def test_coefficient_table_is_bitwise_the_recursion_of_each_stage_count():
    # the shared table is built for all s at once (vectorized over s) and grown in pieces; each of its rows must be
    # exactly the one-s recursion, whatever the other rows and the growth
    table = tables(700)
    table.table(30)
    coefficients = table.table(650)
    for s in (2, 3, 7, 29, 30, 31, 64, 299, 650):
        expected = _scalar_recursion(s)
        np.testing.assert_array_equal(np.stack(rkc_coefficients(s)), expected)
        np.testing.assert_array_equal(coefficients[:, s, : s + 1], expected)
        assert not coefficients[:, s, s + 1:].any()


def test_butcher_rows_are_bitwise_the_tableau_of_each_stage_count_and_give_the_rkc_stages():
    # the rows are built for every s at once; each must be the per-s recursion A[k] = μ_k A[k−1] + ν_k A[k−2]
    # + μ̃_k e_{k−1} + γ̃_k e₀ exactly, and Y_k = Y₀ + hΣ_m A[k, m]F(Y_m) must be the RKC stages on y' = λy
    s_max = 40
    rows = rkc_butcher_rows(tables(400).table(s_max), s_max)
    for s in (2, 3, 9, 25, 40):
        mu, nu, mu_t, gam_t = rkc_coefficients(s)
        A = np.zeros((s + 1, s))
        A[1, 0] = mu_t[1]
        for k in range(2, s + 1):
            A[k, : k - 1] = mu[k] * A[k - 1, : k - 1]
            A[k, : k - 2] += nu[k] * A[k - 2, : k - 2]
            A[k, k - 1] += mu_t[k]
            A[k, 0] += gam_t[k]
        for k in range(1, s + 1):
            np.testing.assert_array_equal(rows[k][s - k], A[k, :k])
        z = -0.4 * rkc_stability_bound(s)  # hλ inside the stability interval
        stages = [1.0]
        for k in range(1, s + 1):
            stages.append(1.0 + z * sum(A[k, m] * stages[m] for m in range(k)))
        np.testing.assert_allclose(stages[-1], _stability_polynomial(s, np.array(z)), rtol=1e-10, atol=1e-12)


def _chebyshev_at_w0(s):
    """w₀ = 1 + ε/s² and T_s(w₀), T_s'(w₀), T_s''(w₀), from NumPy's Chebyshev class (independent of the package)."""
    w0 = 1.0 + EPS_DAMPING / s**2
    T = np.polynomial.Chebyshev.basis(s)
    return w0, T(w0), T.deriv(1)(w0), T.deriv(2)(w0)


@pytest.mark.parametrize("s", [2, 3, 7, 20, 60])
def test_rkc_real_stability_interval(s):
    # Sommeijer et al. (1998) §2: P_s(z) = a_s + b_s·T_s(w₀ + w₁z) with w₁ = T_s'(w₀)/T_s''(w₀),
    # b_s = T_s''(w₀)/T_s'(w₀)², a_s = 1 − b_s·T_s(w₀); stable while w₀ + w₁z ≥ −1, i.e. β(s) = (1 + w₀)/w₁.
    w0, T, dT, ddT = _chebyshev_at_w0(s)
    w1, b = dT / ddT, ddT / dT**2
    a = 1 - b * T
    beta = rkc_stability_bound(s)
    assert beta == pytest.approx((1 + w0) / w1, rel=1e-12)
    z = -np.linspace(0, beta, 2001)
    assert np.max(np.abs(_stability_polynomial(s, z))) <= 1 + 1e-9
    assert abs(_stability_polynomial(s, np.array([-1.3 * beta])))[0] > 1  # and not far beyond it
    assert beta > 0.5 * s**2 - 1  # the stage-count rule's growth
    # Damping of the stiff modes, where x = w₀ + w₁z ∈ [−1, 1] and |T_s(x)| ≤ 1: sup |P_s| = |a_s| + b_s exactly,
    # attained at the extrema x_k = cos(kπ/s) (T_s = ±1). With ε = 2 it is 0.650 at s = 3, 0.603 at s = 7,
    # → 0.591 (what convergence to a steady state needs); Sommeijer et al.'s ε = 2/13 gives 0.95.
    amplitude = abs(a) + b
    stiff = z[w0 + w1 * z <= 1]
    extrema = (np.cos(np.arange(s + 1) * np.pi / s) - w0) / w1
    assert np.max(np.abs(_stability_polynomial(s, extrema))) == pytest.approx(amplitude, rel=1e-9)
    assert np.max(np.abs(_stability_polynomial(s, stiff))) <= amplitude * (1 + 1e-9)
    if s >= 3:
        assert amplitude < 0.66  # strong damping (ε = 2/13 would give ≈ 0.95)


def _quadratic(lams):
    def gradient(y, rows):
        lam = lams[rows]
        return lam * y, 0.5 * np.sum(lam * y * y, axis=1)

    return gradient


def test_trajectory_matches_exact_solution_of_linear_flow(array_backend):
    # L = ½ Σ λ_i y_i²: y(t) = y0·exp(−λt). A stiff spectrum (κ = 1e4) on purpose.
    _, xp = array_backend
    lam = np.logspace(-2, 2, 40)[None, :].repeat(3, axis=0)
    y0 = np.ones((3, 40))
    for rtol in (1e-3, 1e-5):
        res = integrate_gradient_flow(_quadratic(to_device(lam, xp)), to_device(y0, xp), rtol=rtol, atol=1e-12,
                                      gtol=1e-300, max_time=5.0)
        assert np.all(res.status == "max_time") and np.allclose(res.t_final, 5.0)
        exact = y0 * np.exp(-lam * 5.0)
        # global error of a second-order method with local tolerance rtol: a small multiple of rtol
        assert np.max(np.abs(to_host(res.y) - exact)) < 20 * rtol, rtol


def test_converges_and_reports_every_instance(array_backend):
    _, xp = array_backend
    lam = to_device(np.array([[1e-3, 1.0], [1.0, 1.0], [0.5, 2.0]]), xp)
    res = integrate_gradient_flow(_quadratic(lam), to_device(np.ones((3, 2)), xp), gtol=1e-8, max_time=1e3)
    # instance 0 needs t ≈ ln(1e5)/1e-3 ≈ 1.2e4 > max_time: honestly not converged
    assert list(res.status) == ["max_time", "converged", "converged"]
    assert res.grad_norm[0] > 1e-8 and np.all(res.grad_norm[1:] <= 1e-8)
    assert res.t_final[0] == pytest.approx(1e3)
    assert res.converged.tolist() == [False, True, True]


def test_cost_grows_no_faster_than_sqrt_kappa():
    # Explicit Euler at its stability limit needs t·λ_max/2 ∝ κ evaluations to converge
    # (t ∝ 1/λ_min); RKC's stability interval grows like s², so its cost should grow
    # like √κ at most: from κ = 1e3 to 1e5 (100×) it must grow by less than 10×.
    evals = {}
    for k in (3, 5):
        lam = np.logspace(-k, 0, 50)[None, :]
        res = integrate_gradient_flow(_quadratic(lam), np.ones((1, 50)), gtol=1e-8, max_time=1e8)
        assert res.converged[0]
        evals[k] = res.evaluations
        if k == 5:
            assert res.evaluations < res.t_final[0] / 2 / 5  # ≥ 5× fewer than explicit Euler
    assert evals[5] / evals[3] < 10


def test_divergence_is_detected_with_a_hint():
    def gradient(y, rows):
        g = -y * np.where(rows == 1, 5.0, -1.0)[:, None]  # instance 1 ascends: L = −(5/2)y² → −∞? use blow-up
        loss = np.where(rows == 1, np.exp(np.minimum(np.abs(y[:, 0]), 700)), 0.5 * (y * y).sum(1))
        return g, loss

    with pytest.warns(RuntimeWarning, match="diverged.*hint: .* or tighten rtol"):  # RKC2: error-controlled
        res = integrate_gradient_flow(gradient, np.ones((2, 3)), max_time=1e3)
    assert res.status[1] == "diverged" and res.status[0] == "converged"


def test_nan_gradient_is_reported_as_divergence():
    def gradient(y, rows):
        g = y.copy()
        g[rows == 0] = np.nan
        return g, 0.5 * (y * y).sum(1)

    with pytest.warns(RuntimeWarning, match="hint"):
        res = integrate_gradient_flow(gradient, np.ones((2, 3)))
    assert list(res.status) == ["diverged", "converged"]


@pytest.mark.parametrize("kw", [dict(rtol=0), dict(gtol=-1), dict(max_time=np.inf), dict(max_steps=0), dict(max_stages=1),
                                dict(rtol=True), dict(atol=np.array([1e-12, 0.0])), dict(max_steps=2.5),
                                dict(divergence_factor="1e8")])
def test_bad_settings_raise_naming_the_setting(kw):
    (name,) = kw
    with pytest.raises(ValueError, match=f"^{name} must be"):
        integrate_gradient_flow(_quadratic(np.ones((2, 2))), np.ones((2, 2)), **kw)


class _CountingKernel:
    """A stage kernel written against the StageKernel protocol: delegates to the dense kernel and counts calls."""

    def __init__(self, gradient):
        self.dense = DenseStages(gradient)
        self.steps = self.radii = 0

    def __call__(self, step: StepRequest):
        self.steps += 1
        assert np.all(np.diff(step.stages[step.order]) <= 0)  # the order sorts by decreasing stage count
        return self.dense(step)

    def spectral_radius(self, y, carried, rows, state, iterations):
        self.radii += 1
        return self.dense.spectral_radius(y, carried, rows, state, iterations)


def test_a_custom_stage_kernel_plugs_in_through_the_protocol():
    # the documented interface (docs/simulator.md): a kernel object with __call__(StepRequest) and
    # spectral_radius; the integrator uses both, and a delegating kernel reproduces the default run exactly
    lam = np.logspace(-2, 1, 12)[None, :].repeat(2, axis=0) * np.array([[1.0], [3.0]])
    kernel: StageKernel = _CountingKernel(_quadratic(lam))
    custom = integrate_gradient_flow(_quadratic(lam), np.ones((2, 12)), stage_kernel=kernel, gtol=1e-8, max_time=1e4)
    default = integrate_gradient_flow(_quadratic(lam), np.ones((2, 12)), gtol=1e-8, max_time=1e4)
    # one kernel call per batch step: at least the most accepted steps of an instance, at most that plus the rejections
    assert custom.steps.max() <= kernel.steps <= custom.steps.max() + custom.rejected and kernel.radii >= 2
    np.testing.assert_array_equal(custom.y, default.y)
    np.testing.assert_array_equal(custom.steps, default.steps)
    assert custom.evaluations == default.evaluations and list(custom.status) == ["converged", "converged"]


class _ExactRadius:
    """A stage kernel for scheme="euler" on L = ½Σλᵢyᵢ²: the exact ρ = max λ of each instance, times ``scale``."""

    def __init__(self, lam, scale=None):
        self.lam, self.scale, self.calls = lam, scale, 0

    def spectral_radius(self, y, carried, rows, state, iterations):
        self.calls += 1
        rho = self.lam[rows].max(axis=1)
        return rho if self.scale is None else self.scale[rows] * rho, y[:, :1] * 0, 0  # no warm start to carry


def test_euler_scheme_is_gradient_descent_with_step_over_rho(array_backend):
    # y_k = (1 − cλ/λ_max)^k y₀ componentwise: the scheme is gradient descent with learning rate c/λ_max
    _, xp = array_backend
    lam_host = np.array([np.logspace(-1, 0, 6), np.logspace(-2, 0.5, 6)])
    lam = to_device(lam_host, xp)
    kernel = _ExactRadius(lam)
    res = integrate_gradient_flow(_quadratic(lam), to_device(np.ones((2, 6)), xp), scheme="euler", step_fraction=0.9,
                                  gtol=1e-6, max_time=1e6, stage_kernel=kernel)
    assert list(res.status) == ["converged", "converged"]
    rate = 1 - 0.9 * lam_host / lam_host.max(axis=1, keepdims=True)
    for i in range(2):
        k = res.steps[i]
        gradient_norms = [np.linalg.norm(lam_host[i] * rate[i] ** j) for j in (k - 1, k)]
        assert gradient_norms[0] > 1e-6 >= gradient_norms[1]  # stopped at the first step with ‖∇L‖ ≤ gtol
        np.testing.assert_allclose(to_host(res.y)[i], rate[i] ** k, rtol=1e-10, atol=1e-300)
        assert res.t_final[i] == pytest.approx(k * 0.9 / lam_host[i].max(), rel=1e-12)
    assert res.evaluations == 2 + res.steps.sum()  # one evaluation per step and one at the start
    assert kernel.calls >= 2  # ρ̂ refreshed on schedule


def test_euler_scheme_is_independent_of_the_batch_and_reports_budgets():
    lam = np.array([np.logspace(-3, 0, 5), np.logspace(-1, 0, 5), np.logspace(-1, 0, 5)])
    both = integrate_gradient_flow(_quadratic(lam), np.ones((3, 5)), scheme="euler", gtol=1e-6, max_steps=500,
                                   max_time=1e6)
    alone = integrate_gradient_flow(_quadratic(lam[1:2]), np.ones((1, 5)), scheme="euler", gtol=1e-6, max_steps=500,
                                    max_time=1e6)
    assert list(both.status) == ["max_steps", "converged", "converged"]  # κ = 10³ needs ~10⁴ steps
    np.testing.assert_array_equal(both.y[1], alone.y[0])
    assert both.steps[0] == 500 and both.grad_norm[0] > 1e-6


@pytest.mark.parametrize("scheme", ["rkc", "euler"])
def test_loss_tol_stops_each_instance_at_the_first_step_below_it(scheme):
    # Unequal curvatures, so neither scheme lands on the minimum in one step. Each instance stops at the first
    # step whose loss is ≤ loss_tol: rerun with one step less, it is still above (same trajectory, the run is
    # deterministic per instance). The instance that starts below the tolerance stops at t = 0 without a step.
    lam = np.array([[1.0, 0.3], [0.2, 0.05], [1.0, 0.3]])
    y0 = np.array([[1.0, 1.0], [1.0, 1.0], [1e-3, 1e-3]])
    kw = dict(scheme=scheme, gtol=1e-12, max_time=1e4, loss_tol=1e-4)
    res = integrate_gradient_flow(_quadratic(lam), y0, **kw)
    assert list(res.status) == ["loss_tol"] * 3 and res.converged.all()
    assert np.all(res.loss <= 1e-4) and res.steps[2] == 0 and res.t_final[2] == 0.0
    assert np.all(res.steps[:2] >= 3) and res.t_final[0] < res.t_final[1]
    for i in range(2):
        before = integrate_gradient_flow(_quadratic(lam[i:i + 1]), y0[i:i + 1], **kw, max_steps=int(res.steps[i]) - 1)
        assert list(before.status) == ["max_steps"] and before.loss[0] > 1e-4
    if scheme == "rkc":  # the flow's L(t) = ½Σλe^{−2λt} crosses 1e-4 after the slow mode's ln(λ/2e-4)/(2λ)
        slow = lam[:2, 1]
        assert np.all(res.t_final[:2] >= np.log(slow / 2e-4) / (2 * slow) * (1 - 0.05))
    no_rule = integrate_gradient_flow(_quadratic(lam[:1]), y0[:1], scheme=scheme, gtol=1e-12, max_time=5.0)
    assert list(no_rule.status) == ["max_time"] and not no_rule.converged.any()
    with pytest.raises(ValueError, match="loss_tol"):
        integrate_gradient_flow(_quadratic(lam), y0, loss_tol=-1.0)


def test_euler_scheme_reports_an_unstable_step_as_divergence():
    # ρ̂ three times too small: h = 3/λ_max amplifies the stiffest mode by |1 − 3| = 2 per step
    lam = np.array([[0.5, 1.0], [0.5, 1.0]])
    with pytest.warns(RuntimeWarning, match="diverged.*or lower step_fraction"):  # no rtol in this scheme
        res = integrate_gradient_flow(_quadratic(lam), np.ones((2, 2)), scheme="euler",
                                      stage_kernel=_ExactRadius(lam, np.array([1 / 3, 1.0])))
    assert list(res.status) == ["diverged", "converged"]


@pytest.mark.parametrize("kw", [dict(scheme="rk4"), dict(step_fraction=2.0), dict(step_fraction=0.0)])
def test_bad_euler_settings_raise_naming_the_setting(kw):
    (name,) = kw
    with pytest.raises(ValueError, match=f"^{name} must be"):
        integrate_gradient_flow(_quadratic(np.ones((2, 2))), np.ones((2, 2)), **{"scheme": "euler", **kw})
