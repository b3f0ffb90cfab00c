"""Transfer quantities on the (γ, θ) plane (transfertheory.theory.transfer) against independent computations.

* ``transfer_risks(limit="paper")`` against the closed forms of theory.linear
  composed by hand;
  ``limit="flow"`` for fine-tuning against the corrected closed forms;
* the angles against their defining property: the sign of T on either side,
  found by scanning the formulas themselves.
"""
import math

import numpy as np
import pytest

from transfertheory.theory import linear as L
from transfertheory.theory import transfer as T
from transfertheory.theory.methods import METHODS

GAMMA = np.linspace(0.02, 2.0, 100)[None, :]  # contains γ = 1 exactly
THETA = np.linspace(0.0, math.pi / 2, 41)[:, None]



def _paper_by_hand(method, gamma, theta, sigma, lam, finite_d):
    """(T, R_sc, R_transfer) composed from the theory.linear functions, n = round(γd) at finite d."""
    if finite_d is None:
        r_sc = L.scratch_risk(gamma, sigma)
        r_tr = {"linear": np.sin(theta) ** 2, "ridge": L.ridge_transfer_risk(theta, lam),
                "finetune": L.fine_tune_risk(gamma, theta, sigma)}[method]
        t = L.fine_tune_transferability(gamma, theta) if method == "finetune" else r_sc - r_tr
        return np.broadcast_arrays(t, r_sc, r_tr)
    n = np.rint(gamma * finite_d)
    ok = n >= (1 if method == "finetune" else 3)
    n = np.where(ok, n, 3)
    r_sc = L.scratch_risk_finite(n, finite_d, sigma)
    if method == "finetune":  # T from its own formula: R_sc − R_ft is inf − inf at |n − d| ≤ 1
        r_tr = L.fine_tune_risk_finite_paper(n, finite_d, theta, sigma)
        t = L.fine_tune_transferability_finite_paper(n, finite_d, theta)
    else:
        r_tr = (L.linear_transfer_risk(theta, sigma, n) if method == "linear"
                else L.ridge_transfer_risk_finite(theta, sigma, n, lam))
        t = r_sc - r_tr
    return tuple(np.where(ok, v, np.nan) for v in np.broadcast_arrays(t, r_sc, r_tr))


@pytest.mark.parametrize("method, lam", [("linear", 0.0), ("finetune", 0.0), ("ridge", 0.0), ("ridge", 0.7)])
@pytest.mark.parametrize("sigma", [0.0, 0.2, 1.3])
@pytest.mark.parametrize("finite_d", [None, 3, 20, 57])
def test_paper_limit_is_the_closed_forms(method, lam, sigma, finite_d):
    assert 1.0 in GAMMA
    expected = _paper_by_hand(method, GAMMA, THETA, sigma, lam, finite_d)
    got = T.transfer_risks(method, GAMMA, THETA, sigma, lam, finite_d, limit="paper")
    for a, b in zip(got, expected):
        np.testing.assert_allclose(a, b, rtol=1e-15, atol=1e-15)


@pytest.mark.parametrize("sigma", [0.0, 0.2, 1.3])
def test_flow_limit_of_fine_tuning_is_the_corrected_formula(sigma):
    t, r_sc, r_ft = T.transfer_risks("finetune", GAMMA, THETA, sigma)
    np.testing.assert_array_equal(t, L.fine_tune_transferability_corrected(GAMMA, THETA, sigma))
    np.testing.assert_array_equal(r_ft, L.fine_tune_risk_corrected(GAMMA, THETA, sigma))
    np.testing.assert_array_equal(r_sc, np.broadcast_to(L.scratch_risk(GAMMA, sigma), t.shape))


@pytest.mark.parametrize("method, lam", [("linear", 0.0), ("ridge", 0.4)])
@pytest.mark.parametrize("finite_d", [None, 30])
def test_flow_equals_paper_for_linear_and_ridge(method, lam, finite_d):
    flow = T.transfer_risks(method, GAMMA, THETA, 0.3, lam, finite_d)
    paper = T.transfer_risks(method, GAMMA, THETA, 0.3, lam, finite_d, limit="paper")
    for a, b in zip(flow, paper):
        np.testing.assert_array_equal(a, b)


def test_finite_d_below_min_n_is_nan_everywhere():
    gamma = np.array([0.01, 0.05, 0.1, 0.5])  # d = 20: n = 0, 1, 2, 10
    for method, nan_count in [("linear", 3), ("ridge", 3), ("finetune", 1)]:
        for values in T.transfer_risks(method, gamma, 0.4, 0.2, finite_d=20, limit="paper"):
            assert np.isnan(values).sum() == nan_count and np.all(np.isfinite(values[nan_count:]))


def test_scalar_in_float_out():
    out = T.transfer_risks("linear", 0.5, 0.3, 0.2)
    assert all(type(v) is float for v in out)
    assert out == (L.linear_transferability(0.5, 0.3, 0.2), L.scratch_risk(0.5, 0.2), math.sin(0.3) ** 2)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(method="finetune", finite_d=20), r"^limit='flow' at finite d has no closed form for method 'finetune'"),
        (dict(method="linear", limit="exact"), r"^limit must be one of \('paper', 'flow'\), got 'exact'"),
        (dict(method="lin"), r"^method must be one of"),
        (dict(method="linear", finite_d=0), r"^finite_d must be an integer >= 1, got 0"),
        (dict(method="linear", finite_d=True), r"^finite_d must be a real number"),
        (dict(method="linear", lam=0.1), r"^lam must be 0 for method 'linear'"),
        (dict(method="linear", theta=4.0), r"^theta must be in \[0, π\]"),
    ],
)
def test_transfer_risks_bad_input(kwargs, message):
    args = {**dict(gamma=0.5, theta=0.3, sigma=0.2), **kwargs}
    with pytest.raises(ValueError, match=message):
        T.transfer_risks(**args)


# --------------------------------------------------------------------------- angles


@pytest.mark.parametrize("theta", np.linspace(0, math.pi, 9))
@pytest.mark.parametrize("lam", [0.0, 0.3, 5.0])
def test_effective_angle_reproduces_the_ridge_risk(theta, lam):
    """sin²θ_eff = FaF Eq. 15, so ridge T (n, d → ∞) = linear T at θ_eff."""
    eff = T.effective_angle(theta, lam)
    assert math.sin(eff) ** 2 == pytest.approx(L.ridge_transfer_risk(theta, lam), abs=1e-14)
    ridge = METHODS["ridge"].paper_transferability(GAMMA, theta, 0.2, lam)
    np.testing.assert_allclose(ridge, L.linear_transferability(GAMMA, eff, 0.2), atol=1e-14)
    if theta <= math.pi / 2 and lam == 0:
        assert eff == pytest.approx(theta, abs=1e-7)  # arccos near 1 loses half the digits


def _first_negative_theta(method, sigma, lam, limit, thetas):
    """Smallest θ of ``thetas`` with T < 0 at some γ < 1 of a fine γ scan (NaN if none)."""
    gamma = np.concatenate([np.linspace(1e-3, 0.999, 4000), 1 - np.logspace(-3, -9, 200)])[None, :]
    t = T.transfer_risks(method, gamma, thetas[:, None], sigma, lam, limit=limit)[0]
    negative = (t < 0).any(axis=1)
    return thetas[negative.argmax()] if negative.any() else math.nan


@pytest.mark.parametrize(
    "method, sigma, lam, limit",
    [("linear", 0.2, 0.0, "flow"), ("linear", 0.7, 0.0, "flow"), ("ridge", 0.2, 0.5, "flow"),
     ("ridge", 0.05, 3.0, "flow"), ("finetune", 0.3, 0.0, "paper"), ("finetune", 0.0, 0.0, "flow"),
     ("finetune", 0.3, 0.0, "flow")],
)
def test_opening_angle_is_where_the_negative_region_appears(method, sigma, lam, limit):
    expected = T.opening_angle(method, sigma, lam, limit=limit)
    thetas = np.linspace(0.0, math.pi / 2, 1571)  # step 1e-3
    found = _first_negative_theta(method, sigma, lam, limit, thetas)
    # the region opens with width ∝ √(θ − θ_open), so the scan may lag by a few steps
    assert expected - 1e-9 <= found <= expected + 0.01, (expected, found)


def test_opening_angle_special_values():
    assert math.isnan(T.opening_angle("linear", 1.0)) and math.isnan(T.opening_angle("ridge", 1.5, 0.2))
    assert math.isnan(T.opening_angle("scratch", 0.2))
    assert T.opening_angle("ridge", 0.05, 3.0) == 0.0  # cos θ_open ≥ 1: open from θ = 0
    assert T.opening_angle("finetune", 0.3, limit="paper") == pytest.approx(math.pi / 3)
    np.testing.assert_allclose(T.opening_angle("linear", [0.1, 0.5]), np.arccos([0.9, 0.5]))
    with pytest.raises(ValueError, match="limit must be"):
        T.opening_angle("linear", 0.2, limit="asymptotic")


@pytest.mark.parametrize("sigma", [0.0, 0.2, 0.8])
@pytest.mark.parametrize("depth", [2, 3])
def test_flow_sign_angle_is_the_zero_of_the_flow_transferability(sigma, depth):
    gamma = np.array([0.1, 0.4, 0.7, 0.95])
    star = T.flow_limit_sign_angle(gamma, sigma, depth)
    ft = METHODS["finetune"]
    crosses = L.fine_tune_scale(gamma, sigma, depth) < 2  # else T < 0 for every θ and θ* = 0
    assert np.all(star[~crosses] == 0) and np.all(ft.flow_transferability(gamma[~crosses], 0.0, sigma, depth=depth) < 0)
    g, s = gamma[crosses], star[crosses]
    np.testing.assert_allclose(ft.flow_transferability(g, s, sigma, depth=depth), 0.0, atol=1e-12)
    assert np.all(ft.flow_transferability(g, s - 1e-3, sigma, depth=depth) > 0)
    assert np.all(ft.flow_transferability(g, s + 1e-3, sigma, depth=depth) < 0)
    if sigma == 0:
        np.testing.assert_allclose(star, math.pi / 3, atol=1e-12)
    else:
        assert np.all(star < math.pi / 3)


@pytest.mark.parametrize("sigma", [0.2, 1.0])
def test_sign_angle_decreases_with_depth_toward_its_deep_limit(sigma):
    """θ*(γ, L) falls with L toward θ*_∞ = arccos(½√(1 + σ²/(1 − γ))) (the L → ∞ root of c's equation): at
    L = 10⁴ within 10⁻³ rad of it; 30° at σ = 1, γ = ½ (c_∞ = √3), and the by-depth table is the per-depth angle."""
    gamma = np.array([0.1, 0.3, 0.5, 0.7])
    depths = [2, 3, 4, 8, 32]
    table = T.flow_limit_sign_angle_by_depth(gamma, sigma, depths)
    assert table.shape == (len(depths), gamma.size)
    for row, depth in zip(table, depths):
        np.testing.assert_array_equal(row, T.flow_limit_sign_angle(gamma, sigma, depth))
    deep = T.flow_limit_sign_angle_deep_limit(gamma, sigma)
    positive = table[0] > 0
    assert np.all(np.diff(table[:, positive], axis=0) < 0) and np.all(table[-1] >= deep - 1e-12)
    np.testing.assert_allclose(T.flow_limit_sign_angle(gamma, sigma, 10_000), deep, atol=1e-3)
    assert math.degrees(T.flow_limit_sign_angle_deep_limit(0.5, 1.0)) == pytest.approx(30.0, abs=1e-12)
    with pytest.raises(ValueError, match="depth"):
        T.flow_limit_sign_angle_by_depth(gamma, sigma, [2, 1])
