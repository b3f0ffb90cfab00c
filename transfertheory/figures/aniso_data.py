r"""The numbers behind the anisotropic-input figures (docs/anisotropic.md): phase grids under Σ and simulated slices.

* :func:`phase_grid` — T(γ, θ) of one transfer method for a spectrum and a teacher family, as a
  :class:`~.phase_grid.PhaseGrid` (the deterministic equivalents of
  :func:`transfertheory.theory.anisotropic.transfer_grid` at the spectrum's dimension d; θ is the Σ-angle);
* :func:`boundary_grids` — the same for several power-law decays and teacher placements (the boundaries of the
  ``faf_aniso`` figure);
* :func:`simulate_points` — gradient-flow simulations on one θ slice per (decay, placement), each point compared
  with the Monte Carlo expectation of the limit points at the simulated (n, d)
  (:func:`transfertheory.theory.anisotropic_mc.limit_expectations`), beside the deterministic equivalent;
* :func:`slice_theory` — the deterministic equivalent along those slices (the figure's curves).
"""
from __future__ import annotations

import numpy as np

from ..params import D, DEPTH, GAMMA_MAX, LAM, RESOLUTION, SIGMA
from ..theory import anisotropic as A
from ..theory import spectra as S
from . import stats
from .phase_grid import COLUMN_DEFINITIONS, PhaseGrid, grid_axes

__all__ = ["GRID_COLUMN_DEFINITIONS", "POINT_COLUMN_DEFINITIONS", "phase_grid", "teacher_spec",
           "boundary_grids", "simulate_points", "slice_theory"]

#: definitions of the CLI grid's columns (the isotropic grid's, with the Σ-norm risk and the Σ-angle)
GRID_COLUMN_DEFINITIONS = {
    **COLUMN_DEFINITIONS,
    "theta": "transfer angle θ in the Σ inner product, cos θ = β_sᵀΣβ_t for unit-Σ-norm teachers (rad)",
    "transferability": "T = E[R_scratch − R_transfer], R = ‖β̂ − β_t‖²_Σ (units of ‖β_t‖²_Σ = 1; deterministic "
                       "equivalents at the spectrum's d); inf where a risk diverges",
    "risk_scratch": "E R_scratch: deterministic equivalent of the minimum-norm interpolant (HMRT 2022 Thm 2)",
}
#: columns of a :func:`simulate_points` table
POINT_COLUMN_DEFINITIONS = {
    "method": "transfer method (scratch is the paired baseline)",
    "decay": "power-law decay a of the spectrum λ_k ∝ k^(−a), tr Σ = d",
    "placement": "where the teachers sit: coefficients ∝ k^(−b) on the top or the bottom of the spectrum",
    "gamma": "γ = n/d", "n": "target samples", "d": "input dimension",
    "theta": "transfer angle θ in the Σ inner product (rad)", "sigma": "label-noise standard deviation σ",
    "lam": "ridge strength λ of the transfer head (0: none)",
    "transferability_mean": "mean over converged target draws of R_scratch − R_transfer, R = ‖β̂ − β_t‖²_Σ",
    "transferability_sd": "standard deviation over draws (ddof 1)",
    "transferability_se": "standard error of the mean: the error bars",
    "theory_finite": "Monte Carlo expectation of T for the limit points at this n, d (what the simulation is "
                     "compared with)",
    "theory_finite_se": "its Monte Carlo standard error",
    "theory_equivalent": "deterministic equivalent of T at this n, d (asymptotic)",
    "z": "(transferability_mean − theory_finite)/√(SE² + theory_finite_se²)",
    "agrees": f"whether the point is within the tolerance {stats.tolerance(stats.INTEGRATOR_ALLOWANCE)}",
    "n_converged": "target draws whose every run converged", "n_draws": "target draws simulated",
}


def phase_grid(method, sigma, spectrum, teacher="flat", d=400, gamma_max=2.0, resolution=400, lam=0.0, depth=2):
    r"""T(γ, θ) on the phase-diagram axes of :mod:`.phase_grid` (γ = γ_max·k/R, θ ∈ [0, π/2]) for inputs with the
    given spectrum of dimension ``d`` and teachers of the family ``teacher``: a :class:`~.phase_grid.PhaseGrid`
    (``finite_d`` None, ``limit`` "flow"). Every argument is checked before any work."""
    sigma, gamma_max, resolution = SIGMA.scalar(sigma), GAMMA_MAX.scalar(gamma_max), RESOLUTION.scalar(resolution)
    lam, depth, d = LAM.scalar(lam), DEPTH.scalar(depth), D.with_range(low=2).scalar(d)
    gamma, theta = grid_axes(gamma_max, resolution)
    eigen, beta_s, beta_t = S.task(spectrum, teacher, d, theta)
    t, r_sc, r_tr = A.transfer_grid(method, eigen, beta_s, beta_t, gamma * d, sigma, lam, depth)
    return PhaseGrid(gamma, theta, t + 0.0, r_sc, r_tr, method, sigma, lam, None, "flow", depth)


def teacher_spec(exponent, placement):
    """The teacher family of coefficients ∝ k^(−b) on the ``placement`` ("top" / "bottom") of the spectrum."""
    return f"power:{exponent:g}:{placement}"


def boundary_grids(methods, sigma, decays, placements, exponent, d, gamma_max, resolution):
    """``{(method, decay, placement): (γ, θ, T[θ, γ])}`` for power-law spectra ``power:a`` and teachers
    :func:`teacher_spec` (b = ``exponent``)."""
    out = {}
    for a in decays:
        for place in placements:
            for method in methods:
                grid = phase_grid(method, sigma, f"power:{a:g}", teacher_spec(exponent, place), d, gamma_max,
                                  resolution)
                out[method, a, place] = (grid.gamma, grid.theta, grid.transferability)
    return out


def simulate_points(d, draws, gammas, theta, sigma, decays, placements, exponent, seed=0, backend=None,
                    progress=None, mc_draws=2000):
    """Simulated T of linear transfer and fine-tuning on the slice ``theta`` for every (decay, placement): one
    table of :data:`POINT_COLUMN_DEFINITIONS` columns, each point against the Monte Carlo of the limits."""
    import pandas as pd

    from ..theory.anisotropic_mc import limit_expectations
    from .simulation import simulate

    ns = np.unique(np.rint(np.asarray(gammas, float) * d).astype(int))
    frames = []
    for a in decays:
        for place in placements:
            spectrum, teacher = f"power:{a:g}", teacher_spec(exponent, place)
            raw = simulate(("scratch", "linear", "finetune"), d, ns, [theta], sigma, draws, seed=seed,
                           backend=backend, progress=progress, spectrum=spectrum, teacher=teacher)
            lam, beta_s, beta_t = S.task(spectrum, teacher, d, [theta])
            reference = {n: limit_expectations(lam, beta_s, beta_t, n, sigma, mc_draws, seed) for n in ns}
            for method in ("linear", "finetune"):
                table = stats.transferability_stats(raw, method)
                n_rows = table["n"].to_numpy(int)
                mean = np.array([reference[n][f"T_{method}"][0][0] for n in n_rows])
                se = np.array([reference[n][f"T_{method}"][1][0] for n in n_rows])
                table = stats.compare(table, mean, "transferability", se)
                table["theory_equivalent"] = [
                    A.transfer_grid(method, lam, beta_s, beta_t, [float(n)], sigma)[0][0, 0] for n in n_rows]
                table["method"], table["decay"], table["placement"] = method, float(a), place
                frames.append(table[list(POINT_COLUMN_DEFINITIONS)])
    return pd.concat(frames, ignore_index=True)


def slice_theory(points, sigma, theta, exponent, gammas):
    """The deterministic equivalent of T at ``gammas`` on the slice ``theta`` at the simulated d of ``points``
    (:func:`simulate_points`), per (method, decay, placement) of its rows: ``{(method, a, placement): (gammas, T)}``,
    NaN where T is not finite."""
    d = int(points["d"].iloc[0])
    out = {}
    for (method, a, place), _ in points.groupby(["method", "decay", "placement"]):
        lam, beta_s, beta_t = S.task(f"power:{a:g}", teacher_spec(exponent, place), d, [theta])
        t = A.transfer_grid(method, lam, beta_s, beta_t, gammas * d, sigma)[0][0]
        out[method, a, place] = (gammas, np.where(np.isfinite(t), t, np.nan))
    return out
