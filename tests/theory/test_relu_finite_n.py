"""Finite-n boundary of negative transfer (transfertheory.theory.relu.power_law; docs/relu.md, FaF Eq. 21)."""
import numpy as np
import pytest

from transfertheory.theory import relu as R


def _fit(A, nu, cov=((0.0, 0.0), (0.0, 0.0))):
    cov = np.asarray(cov, dtype=float)
    return R.PowerLawFit(A=A, nu=nu, log_A_se=np.sqrt(cov[0, 0]), nu_se=np.sqrt(cov[1, 1]), cov=cov, dof=3,
                         residual_sd=0.0)


def test_least_squares_risk_matches_gaussian_monte_carlo():
    # Least squares on m Gaussian features with an ill-conditioned covariance and an independent residual of
    # variance p: mean risk p (n − 1)/(n − m − 1) (inverse-Wishart mean), 4 SE.
    rng = np.random.default_rng(0)
    m, n, p, reps = 6, 20, 0.3, 20000
    scales = np.logspace(0, -5, m)  # condition number 1e10 of Σ = diag(scales²)
    beta = rng.standard_normal(m)
    X = rng.standard_normal((reps, n, m)) * scales
    y = X @ beta + np.sqrt(p) * rng.standard_normal((reps, n))
    fitted = np.linalg.solve(np.swapaxes(X, 1, 2) @ X, (np.swapaxes(X, 1, 2) @ y[..., None]))[..., 0]
    risk = p + (((fitted - beta) * scales) ** 2).sum(-1)
    z = (risk.mean() - R.least_squares_transfer_risk(p, n, m)) / (risk.std(ddof=1) / np.sqrt(reps))
    assert abs(z) < 4, z


def test_boundary_roots_peak_and_order():
    fit, p, m = _fit(0.5, 1.2), 1e-3, 40
    b = R.finite_n_boundary(fit, p, m)

    def gap(n):
        return np.log(fit.A) - fit.nu * np.log(n) - np.log(R.least_squares_transfer_risk(p, n, m))

    assert abs(gap(b.n_c)) < 1e-9 and abs(gap(b.n_onset)) < 1e-9
    assert m + 1 < b.n_onset < b.n_peak < b.n_c < R.negative_transfer_boundary(p, fit.A, fit.nu)
    assert gap(b.n_peak) > max(gap(b.n_peak * 0.99), gap(b.n_peak * 1.01)) > 0
    assert gap(b.n_c * 1.01) < 0 < gap(b.n_c * 0.99) and gap(b.n_onset * 0.99) < 0 < gap(b.n_onset * 1.01)
    assert not b.negative_everywhere


def test_boundary_tends_to_the_paper_heuristic_for_few_features():
    # m = 1: R_lt = p (n − 1)/(n − 2) → p, so n_c approaches (A/p)^{1/ν} for a boundary at large n.
    fit, p = _fit(1.0, 1.0), 1e-5
    paper = R.negative_transfer_boundary(p, fit.A, fit.nu)
    assert R.finite_n_boundary(fit, p, 1).n_c == pytest.approx(paper, rel=1e-4)


def test_negative_everywhere_when_the_power_law_stays_below():
    b = R.finite_n_boundary(_fit(0.05, 1.2), 1e-2, 40)
    assert b.negative_everywhere and np.isnan(b.n_onset) and b.n_peak > 41


def test_boundary_standard_error_is_the_delta_method():
    cov = np.array([[0.04, 0.006], [0.006, 0.0025]])
    fit, p, p_se, m = _fit(0.5, 1.2, cov), 1e-3, 1e-4, 40
    b = R.finite_n_boundary(fit, p, m, p_se)
    step = 1e-6
    grads = []
    for shift in ((step, 0, 0), (0, step, 0), (0, 0, step)):
        up = R.finite_n_boundary(_fit(0.5 * np.exp(shift[0]), 1.2 + shift[1]), p * np.exp(shift[2]), m).n_c
        down = R.finite_n_boundary(_fit(0.5 * np.exp(-shift[0]), 1.2 - shift[1]), p * np.exp(-shift[2]), m).n_c
        grads.append((np.log(up) - np.log(down)) / (2 * step))
    grads = np.array(grads)
    var = grads[:2] @ cov @ grads[:2] + (grads[2] * p_se / p) ** 2
    assert b.n_c_se == pytest.approx(b.n_c * np.sqrt(var), rel=1e-5)


@pytest.mark.parametrize("call, match", [
    (lambda: R.least_squares_transfer_risk(1e-3, 41, 40), "n must be in"),
    (lambda: R.least_squares_transfer_risk(-1.0, 100, 40), "pperp_sq"),
    (lambda: R.finite_n_boundary(_fit(0.5, 1.2), 0.0, 40), "pperp_sq"),
    (lambda: R.finite_n_boundary(_fit(0.5, 1.2), 1e-3, 0), "m must be"),
    (lambda: R.finite_n_boundary(_fit(0.5, -1.0), 1e-3, 40), "nu must be"),
])
def test_bad_input_names_the_parameter(call, match):
    with pytest.raises(ValueError, match=match):
        call()
