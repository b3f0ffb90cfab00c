r"""FaF Fig. 6: linear transferability without label noise, σ = 0 (FaF App. E, §3.3).

Model (FaF §3, App. E): a two-layer linear network (FaF Eq. 9) pretrained by
gradient flow on the population loss of y = β_sᵀx (FaF Eq. 4); its last layer
is refit on n = γd noiseless target samples y = β_tᵀx, β_sᵀβ_t = cos θ, and
compared with the same network trained from scratch (minimum-norm limit). The
transferability is T = E[R_scratch − R_transfer], R = ‖β̂ − β_t‖².

The panels follow the paper's caption of Fig. 6: (a) the surface T(γ, θ) of
FaF Eq. 13 at σ = 0 (n, d → ∞: T = 1 − γ − sin²θ for γ < 1, −sin²θ for γ > 1);
(b) its top view shaded by sign, with the σ → 0 boundary γ = cos²θ of the
γ < 1 negative region and negative transfer everywhere for γ > 1 (a noiseless
scratch model learns β_t exactly once n ≥ d); (c) slices at θ = π/8, π/4, 3π/8
with simulated points (mean ± SD over target draws) and, dashed, the exact
finite-size theory at the simulated d, E R_sc = 1 − n/d (n < d), 0 (n ≥ d),
E R_lt = sin²θ (1 + 1/(n − 2)).

This is the phase diagram of :mod:`transfertheory.figures.phase_diagram` at
σ = 0 with simulation (:func:`~transfertheory.figures.simulation.simulate_slices`),
packaged with the figure-builder conventions: ``faf_fig6.csv`` holds the simulated points with
their theory columns, ``faf_fig6_grid.csv`` the theory grid of panels (a, b).
With σ = 0 the exact risks are finite also at |n − d| ≤ 1, but gradient flow
does not reach its limit there (λ_min(XᵀX/n) → 0), so those n are not simulated.

Build it with ``python -m transfertheory.figures faf_fig6``; see docs/figures.md.
"""
from __future__ import annotations

from dataclasses import replace

from . import faf_fig1_3
from .simulation import SIM_D, SIM_DRAWS, SIM_GAMMAS

__all__ = ["NAME", "SIGMA", "build"]

NAME = "faf_fig6"
SIGMA = 0.0


def build(d=SIM_D, draws=SIM_DRAWS, gammas=SIM_GAMMAS, resolution=200, gamma_max=2.0, seed=0, backend=None,
          progress=None):
    """Simulate and draw FaF Fig. 6 (:func:`.faf_fig1_3.build` of linear transfer at σ = 0, with its own title);
    a :class:`~transfertheory.figures.output.FigureOutput`.

    ``data``: the simulated points (:data:`~transfertheory.figures.simulation.SIM_COLUMNS`); the theory grid of
    panels (a, b) is the extra table ``_grid``.
    """
    output = faf_fig1_3.build("linear", SIGMA, gamma_max, resolution, d, draws, gammas, seed, backend, progress)
    output.figure.suptitle("FaF Fig. 6: linear transferability, σ = 0 (theory n, d → ∞; points: simulation ± SD, "
                           f"dashed: exact d = {d})")
    return replace(output, summary=(f"FaF Fig. 6 (σ = 0): d = {d}, {draws} draws, {gammas} γ points, seed {seed}",
                                    *output.summary))


FIGURE = faf_fig1_3.register_slices(
    NAME, build,
    title="FaF Fig. 6: linear transferability without label noise, σ = 0",
    description="The Fig. 1 layout at σ = 0: (a) the surface of FaF Eq. 13 (T = 1 − γ − sin²θ for γ < 1, −sin²θ "
    "beyond), (b) its sign with the boundary γ = cos²θ and negative transfer everywhere beyond γ = 1 (a noiseless "
    "scratch model learns β_t exactly), (c) slices with gradient-flow simulations (mean ± SD) and the exact theory "
    "at the simulated d (dashed).",
    sources=("FaF Eq. 13", "FaF Fig. 6"),
)
