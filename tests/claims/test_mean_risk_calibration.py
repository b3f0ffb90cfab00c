"""The statistic of the FaF §3 mean-risk simulation claims (faf.thm3.6–3.9) at the corner where its per-draw risks are
most skewed: the linear-transfer risk sin²θ + (σ² + sin²θ)χ²₁/χ²ₙ at n = 9, whose t-statistic's law depends on n
only. No gradient flow: the claims compare the record's expectation with a Monte Carlo of the gradient-flow limit,
and this runs that Monte Carlo (:func:`~transfertheory.claims.faf_linear_sim._limit_risks`) many times."""
import numpy as np

from transfertheory import claims
from transfertheory.claims.faf_linear_sim import _limit_risks
from transfertheory.sim.statistics import mean_se
from transfertheory.theory.methods import METHODS

QUICK = claims.get_profile("quick")


def _z(sample, reference):
    mean, se = mean_se(sample)
    return (mean - reference) / se


def test_the_limit_monte_carlo_of_the_linear_risk_is_calibrated_where_a_mean_of_100_draws_is_not():
    """400 Monte Carlos of ``reference_draws`` (4000) draws each at n = 9, d = 17, θ = 0, σ = 1: |z| > 2.5 (normal
    1.24 %, 5 of 400) at most 10 times (measured: 4). The same draws in 16 000 means of 100 (the trained draws alone,
    the claims' statistic before) have z < −3 2.3 % of the time (normal 0.13 %) and |z| > 2.5 4.4 %: such a
    statistic would fail the first check (17.5 of 400 expected, P(≤ 10) ≈ 4 %)."""
    n, d, theta, sigma, reps, draws = 9, 17, 0.0, 1.0, 400, QUICK.reference_draws
    rng = np.random.default_rng(20261129)
    beta_s, beta_t = np.eye(2, d)  # θ = 0: β_t = β_s
    reference = METHODS["linear"].flow_risk_finite(n, d, theta, sigma)[0]
    risks = np.empty((reps, draws))
    for rep in range(reps):
        X = rng.standard_normal((draws, n, d))
        y = X @ beta_s + sigma * rng.standard_normal((draws, n))
        risks[rep] = _limit_risks(X, y, beta_s, beta_s, "linear", 0.0)[1]
    z = np.array([_z(sample, reference) for sample in risks])
    assert np.sum(np.abs(z) > 2.5) <= 10, np.sort(z)[:10]
    z_100 = np.array([_z(sample, reference) for sample in risks.reshape(-1, 100)])
    assert np.mean(z_100 < -3) > 0.01 and np.mean(z_100 > 3) < 0.0013
