r"""FaF Fig. 5's study: transferability and task distances over a family of targets (FaF §2.1, App. E).

Source β_s = e₁ (unit), targets β_t = a·(cos θ e₁ + sin θ e₂) over a grid of angles θ and norms a, in the FaF
linear model (x ~ N(0, I_d), y = β_tᵀx + ε, ε ~ N(0, σ²), n target samples). For every target
:func:`compute_points` tabulates the exact finite-size transferability T of linear transfer and every distance of
:mod:`transfertheory.theory.distances` (D_KL, FaF Eq. 34; Gaussian W₂; the Dudley bounds; the empirical W₁ of
``samples`` joint draws per task, with common random numbers across targets), and :func:`spearman_table` the rank
correlation of T with each distance: a distance that predicted transfer would make T decreasing in it (ρ = −1).
The figure ``faf_fig5`` draws these tables; the claim ``faf.fig5.no-correlation`` checks them.
"""
from __future__ import annotations

import numpy as np

from .._validation import root_seed
from . import distances

__all__ = ["DISTANCES", "DEFAULT_NORMS", "target_family", "compute_points", "spearman_table"]

#: distance columns of the CSV, with their plot / report labels
DISTANCES = {
    "kl": "D_KL(p_s‖p_t)",
    "w1_empirical": "W₁ (empirical)",
    "w2_gaussian": "W₂ (Gaussian, exact)",
    "dudley_lower": "Dudley lower bound",
    "dudley_upper": "Dudley upper bound",
}
DEFAULT_NORMS = (0.25, 0.5, 1.0, 2.0, 4.0)


def target_family(d, thetas, norms):
    r"""Source β_s = e₁ and targets β_t = a(cos θ e₁ + sin θ e₂) for every (θ, a); returns (β_s, table, betas)."""
    theta, norm = (a.ravel() for a in np.meshgrid(np.asarray(thetas, float), np.asarray(norms, float), indexing="ij"))
    beta_s = np.zeros(d)
    beta_s[0] = 1.0
    betas = np.zeros((theta.size, d))
    betas[:, 0] = norm * np.cos(theta)
    betas[:, 1] = norm * np.sin(theta)
    import pandas as pd

    return beta_s, pd.DataFrame({"theta": theta, "norm": norm}), betas


def compute_points(d=50, n=25, sigma=0.2, samples=300, thetas=None, norms=DEFAULT_NORMS, seed=0):
    r"""The table behind FaF Fig. 5: T and every distance for each target of :func:`target_family`.

    ``attrs["w1_floor"]`` is the empirical W₁ between the source sample and a target sample of the source law
    itself (β_t = β_s, the same target draws): the sampling bias every W₁ value carries.

    Parameters
    ----------
    d : int >= 2
        Input dimension.
    n : int >= 3
        Target samples (T is +inf when |n − d| ≤ 1: the scratch risk diverges).
    sigma : float > 0
        Label-noise sd.
    samples : int >= 1
        Draws per task for the empirical W₁.
    thetas : array_like, optional
        Angles in [0, π] (default 9 values from 0 to π).
    norms : array_like of floats > 0
        Target norms a.
    seed : int ≥ 0, numpy Generator or SeedSequence
        Seed of the W₁ samples: the source's from ``SeedSequence(seed, spawn_key=(0,))``, the targets' from key
        ``(1,)`` (the package's seeding rule, :mod:`transfertheory.sim.seeding`).
    """
    thetas = np.linspace(0, np.pi, 9) if thetas is None else np.asarray(thetas, float)
    beta_s, table, betas = target_family(d, thetas, norms)
    theta, norm = table["theta"].to_numpy(), table["norm"].to_numpy()
    table["d"], table["n"], table["sigma"], table["samples"] = d, n, sigma, samples
    table["risk_scratch"] = distances.scaled_target_scratch_risk_finite(n, d, sigma, norm)
    table["risk_transfer"] = distances.scaled_target_linear_transfer_risk(theta, sigma, n, norm)
    table["transferability"] = distances.scaled_target_transferability_finite(n, d, theta, sigma, norm)
    table["kl"] = distances.kl_linear_gaussian(beta_s, betas, sigma)
    cov_s = distances.joint_covariance(beta_s, sigma)
    table["w2_gaussian"] = distances.wasserstein2_gaussian(cov_s, distances.joint_covariance(betas, sigma))
    table["dudley_lower"] = distances.dudley_lower_bound(beta_s, betas, sigma)
    table["dudley_upper"] = distances.dudley_upper_bound(beta_s, betas, sigma)
    root = root_seed(seed)
    source_rng, target_rng = (np.random.default_rng(np.random.SeedSequence(root, spawn_key=(k,))) for k in (0, 1))

    def joint_sample(rng):
        x = rng.standard_normal((samples, d))
        return x, sigma * rng.standard_normal(samples)

    xs, es = joint_sample(source_rng)
    xt, et = joint_sample(target_rng)  # common random numbers across targets
    source = np.column_stack([xs, xs @ beta_s + es])
    table["w1_empirical"] = [distances.wasserstein1_empirical(source, np.column_stack([xt, xt @ b + et]))
                             for b in betas]
    table.attrs["w1_floor"] = distances.wasserstein1_empirical(source, np.column_stack([xt, xt @ beta_s + et]))
    return table


def spearman_table(points):
    """Spearman rank correlation (and two-sided p-value) of T with each distance column.

    A column that is constant up to round-off (relative spread ≤ 1e-9, e.g. the cos(y)/2 Dudley
    bound when every target has unit norm) gets NaN: its ranks would only order round-off errors.
    """
    import pandas as pd
    from scipy import stats

    rows = []
    for column, label in DISTANCES.items():
        values = points[column].to_numpy()
        if np.ptp(values) <= 1e-9 * max(1.0, np.abs(values).max()):
            rho = p = np.nan
        else:
            rho, p = stats.spearmanr(points["transferability"], values)
        rows.append({"distance": column, "label": label, "spearman_rho": float(rho), "p_value": float(p)})
    return pd.DataFrame(rows)
