r"""FaF Fig. 6: linear transferability without label noise, σ = 0 (FaF App. E, §3.3).

Model (THEORY §A1–A3): a two-layer linear network (FaF Eq. 9) pretrained by
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

This is :mod:`transfertheory.phase_diagram` at σ = 0 with simulation
(:func:`~transfertheory.phase_diagram.simulate_slices`), packaged with the
figure-builder conventions: ``faf_fig6.csv`` holds the simulated points with
their theory columns, ``faf_fig6_grid.csv`` the theory grid of panels (a, b).
With σ = 0 the exact risks are finite also at |n − d| ≤ 1, but gradient flow
does not reach its limit there (λ_min(XᵀX/n) → 0), so those n are not simulated.

Run ``python -m transfertheory.figures.faf_fig6 --help``; see docs/figures.md.
"""
from __future__ import annotations

import argparse
import sys

from .. import phase_diagram as pdg
from . import _simstats

__all__ = ["NAME", "SIGMA", "build", "build_parser", "main"]

NAME = "faf_fig6"
SIGMA = 0.0
DEFAULTS = dict(d=pdg.SIM_D, draws=pdg.SIM_DRAWS, gammas=pdg.SIM_GAMMAS, resolution=200)


def build(d=DEFAULTS["d"], draws=DEFAULTS["draws"], n_gammas=DEFAULTS["gammas"], resolution=DEFAULTS["resolution"],
          gamma_max=2.0, seed=0, backend="auto", progress=None):
    """Simulate and draw FaF Fig. 6; returns ``(fig, points)``, ``points.attrs["grid"]`` the theory grid.

    ``points`` has the columns :data:`transfertheory.phase_diagram.SIM_COLUMNS`.
    """
    grid = pdg.compute_grid("linear", SIGMA, gamma_max, resolution)
    points = pdg.simulate_slices("linear", SIGMA, d, draws, n_gammas, gamma_max, seed=seed, backend=backend,
                                 progress=progress)
    fig = pdg.plot_phase_diagram(grid, "linear", SIGMA, simulated=points)
    fig.suptitle("FaF Fig. 6: linear transferability, σ = 0 (theory n, d → ∞; points: simulation, dashed: exact d = "
                 f"{d})")
    points.attrs["grid"] = grid
    return fig, points


def build_parser():
    """The ``python -m transfertheory.figures.faf_fig6`` argument parser."""
    parser = argparse.ArgumentParser(
        prog="python -m transfertheory.figures.faf_fig6",
        description="FaF Fig. 6: linear transferability of deep linear networks at σ = 0 — surface, sign map and "
        "slices θ = π/8, π/4, 3π/8 with gradient-flow simulations (mean ± SD) and the exact finite-d theory. Writes "
        "faf_fig6.{png,pdf,csv} and faf_fig6_grid.csv, prints the largest |z| against the exact theory.",
    )
    parser.add_argument("--gammas", type=int, default=DEFAULTS["gammas"], metavar="M",
                        help=f"simulated γ points per slice, γ = 2k/M (|n − d| <= 1 skipped; default {DEFAULTS['gammas']})")
    parser.add_argument("--resolution", type=int, default=DEFAULTS["resolution"], metavar="N",
                        help=f"theory grid points per axis, >= 2 (default {DEFAULTS['resolution']})")
    _simstats.add_figure_arguments(parser, d=DEFAULTS["d"], draws=DEFAULTS["draws"])
    return parser


def main(argv=None):
    """Entry point: 0 on success, 1 if the outputs cannot be written; usage errors exit 2 (argparse)."""
    args, d, draws = _simstats.parse_figure_args(build_parser(), argv, d=DEFAULTS["d"], draws=DEFAULTS["draws"],
                                                 minimums=[("--gammas", 1), ("--resolution", 2)])
    fig, points = build(d, draws, args.gammas, args.resolution, seed=args.seed, backend=args.backend)
    lines = [f"FaF Fig. 6 (σ = 0): d = {d}, {draws} draws, {args.gammas} γ points, seed {args.seed}",
             pdg.summary(points.attrs["grid"], "linear", SIGMA), *pdg.simulation_summary(points)]
    return _simstats.write_and_report(fig, points, NAME, args, lines, extra=[("_grid", points.attrs["grid"])])


if __name__ == "__main__":
    sys.exit(main())
