r"""FaF Figs. 1, 3 and 6 in the registry: the phase diagrams of linear transfer and fine-tuning with simulated slices.

FaF §3.3–3.4: the transferability T(γ, θ) = E[R_scratch − R_transfer] of a deep
linear network at σ = 0.2 — (a) the n, d → ∞ surface, (b) its sign with the
analytic boundaries, (c) slices θ = π/8, π/4, 3π/8 with gradient-flow simulations
(mean ± SD over target draws) against the exact theory at the simulated d. The
drawing is :mod:`transfertheory.figures.phase_diagram`; fine-tuning (Fig. 3) is
shaded by what gradient flow converges to, the paper's Eq. 17 overlaid
(docs/errata.md). ``NAME.csv`` holds the simulated points, ``NAME_grid.csv`` the
theory grid. Any method or σ: ``python -m transfertheory.phase_diagram``. Fig. 3's flows (its scratch baseline too) run at
fine-tuning's rtol (:data:`~transfertheory.sweep.named.FINE_TUNE_RTOL`), so the two figures share no runs.

FaF Fig. 6 (App. E) is the Fig. 1 layout at σ = 0 (:func:`build_fig6`): (a) the surface of FaF Eq. 13
(T = 1 − γ − sin²θ for γ < 1, −sin²θ for γ > 1), (b) its sign with the σ → 0 boundary γ = cos²θ of the γ < 1
negative region and negative transfer everywhere for γ > 1 (a noiseless scratch model learns β_t exactly once
n ≥ d), (c) the slices with the exact finite-size theory at the simulated d, E R_sc = 1 − n/d (n < d), 0 (n ≥ d),
E R_lt = sin²θ (1 + 1/(n − 2)). With σ = 0 the exact risks are finite also at |n − d| ≤ 1, but gradient flow
does not reach its limit there (λ_min(XᵀX/n) → 0), so those n are not simulated.

Build them with ``python -m transfertheory.figures faf_fig1 faf_fig3 faf_fig6``; see docs/figures.md.
"""
from __future__ import annotations

import functools
from dataclasses import replace

from .phase_diagram import phase_diagram_output
from .phase_grid import compute_phase_grid
from .registry import Figure, register
from .simulation import PAPER_SIZES, SIM_D, SIM_DRAWS, SIM_GAMMAS, simulate_slices, sweep_sizes

__all__ = ["build", "build_fig6", "register_slices", "FIGURE_1", "FIGURE_3", "FIGURE_6"]


def build(method, sigma=0.2, gamma_max=2.0, resolution=200, d=64, draws=20, gammas=8, seed=0, backend=None,
          progress=None, depth=2):
    """FaF Fig. 1 (``linear``) or Fig. 3 (``finetune``) with simulated slices: :func:`phase_diagram_output`, the
    simulated points as ``data`` and the theory grid as the extra ``_grid`` table. ``depth``: the layers L of the
    network (the registered profiles use the paper's L = 2; fine-tuning's gradient-flow limit depends on it)."""
    grid = compute_phase_grid(method, sigma, gamma_max, resolution, depth=depth)
    points = simulate_slices(method, sigma, d, draws, gammas, gamma_max, seed=seed, backend=backend,
                             progress=progress, depth=depth)
    return phase_diagram_output(grid, method, sigma, points=points, parameters=dict(sim_gammas=gammas, seed=seed),
                                primary="points")


def register_slices(name, build, fixed=None, **labels):
    """Register the figure ``name``: a phase diagram with simulated slices drawn by ``build``, its simulation sizes
    those of the named sweep ``name``, the theory grid's resolution its own (200 quick, 400 paper), ``fixed`` the
    further parameters of every profile (e.g. σ); ``labels``: the other fields of the :class:`.registry.Figure` (title,
    description, sources). Its points are the data, the theory grid the extra ``_grid`` table."""
    profiles = {profile: dict(**(fixed or {}), resolution=resolution, **sweep_sizes(name, profile))
                for profile, resolution in (("quick", 200), ("paper", 400))}
    return register(Figure(name=name, build=build, profiles=profiles, paper_sizes=PAPER_SIZES, **labels))


FIGURE_1 = register_slices(
    "faf_fig1", functools.partial(build, "linear"), dict(sigma=0.2),
    title="FaF Fig. 1: linear transferability phase diagram, σ = 0.2",
    description="Transferability T = E[R_scratch − R_transfer] of linear transfer (last layer retrained on the "
    "pretrained rank-one features) over (γ, θ): (a) the n, d → ∞ surface, (b) its sign with the boundaries γ₋, γ₊ "
    "and 1 + σ²/sin²θ, (c) slices θ = π/8, π/4, 3π/8 with gradient-flow simulations (mean ± SD over target draws) "
    "and, dashed, the exact theory at the simulated d.",
    sources=("FaF Eq. 10", "FaF Eq. 12", "FaF Eq. 13", "FaF Fig. 1"),
)
FIGURE_3 = register_slices(
    "faf_fig3", functools.partial(build, "finetune"), dict(sigma=0.2),
    title="FaF Fig. 3: fine-tuning transferability phase diagram (gradient-flow limit), σ = 0.2",
    description="Transferability of fine-tuning (every layer trained from the pretrained weights) over (γ, θ), "
    "shaded by what gradient flow converges to: the sign changes at θ* = arccos(c/2) < π/3 (corrected FaF "
    "Thm 3.9), the paper's Eq. 17 boundary θ = π/3 is dashed and its slices dotted. Slices carry gradient-flow "
    "simulations (mean ± SD) and crosses at the Monte Carlo of the exact finite-d gradient-flow limit.",
    sources=("FaF Eq. 10", "FaF Eq. 16", "FaF Eq. 17", "FaF Fig. 3", "errata: fine-tuning limit"),
)


def build_fig6(d=SIM_D, draws=SIM_DRAWS, gammas=SIM_GAMMAS, resolution=200, gamma_max=2.0, seed=0, backend=None,
               progress=None):
    """Simulate and draw FaF Fig. 6 (:func:`build` of linear transfer at σ = 0, with its own title); a
    :class:`~transfertheory.figures.output.FigureOutput`.

    ``data``: the simulated points (:data:`~transfertheory.figures.simulation.SIM_COLUMNS`); the theory grid of
    panels (a, b) is the extra table ``_grid``.
    """
    output = build("linear", 0.0, gamma_max, resolution, d, draws, gammas, seed, backend, progress)
    output.figure.suptitle("FaF Fig. 6: linear transferability, σ = 0 (theory n, d → ∞; points: simulation ± SD, "
                           f"dashed: exact d = {d})")
    return replace(output, summary=(f"FaF Fig. 6 (σ = 0): d = {d}, {draws} draws, {gammas} γ points, seed {seed}",
                                    *output.summary))


FIGURE_6 = register_slices(
    "faf_fig6", build_fig6,
    title="FaF Fig. 6: linear transferability without label noise, σ = 0",
    description="The Fig. 1 layout at σ = 0: (a) the surface of FaF Eq. 13 (T = 1 − γ − sin²θ for γ < 1, −sin²θ "
    "beyond), (b) its sign with the boundary γ = cos²θ and negative transfer everywhere beyond γ = 1 (a noiseless "
    "scratch model learns β_t exactly), (c) slices with gradient-flow simulations (mean ± SD) and the exact theory "
    "at the simulated d (dashed).",
    sources=("FaF Eq. 13", "FaF Fig. 6"),
)
