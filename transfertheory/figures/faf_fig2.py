r"""FaF Fig. 2: ridge linear transfer risk against the ridge strength λ at γ = 0.5 (FaF §3.3.1, Thm 3.8).

Model (THEORY §A4): a two-layer linear network pretrained by gradient flow on
the population source loss collapses to rank-one features β_s vᵀ (FaF Thm 3.4);
its last layer is then refit on n = γd target samples (x, y = β_tᵀx + ε),
β_sᵀβ_t = cos θ, ε ~ N(0, σ²), with the ridge objective of FaF Eq. 14,
(1/2n)‖ΦW − y‖² + (λ/2)‖W‖². The risk is R = ‖β̂ − β_t‖². Drawn against λ:

* FaF Eq. 15 (n → ∞): R = 1 − cos²θ (1 + 2λ)/(1 + λ)², strictly increasing, λ* = 0;
* the exact finite-n expectation (:func:`transfertheory.theory.linear.ridge_transfer_risk_finite`),
  which lies (sin²θ + σ²)/(n − 2) above Eq. 15 at λ = 0 and *decreases* there,
  with slope −2n(sin²θ + σ²)/((n − 2)(n − 4)): at finite n a small λ > 0 helps,
  by O(1/n²);
* simulated points: :func:`transfertheory.sim.deep_linear.run_transfer_experiment`
  with ``methods=("linear",)`` and every λ on the same target draws; mean ± SD
  over draws (the paper's error bars).

Panel (b) shows the same curves minus Eq. 15 (points ± SE), where the finite-n
offset and its decay with λ are visible. The caption of FaF Fig. 2 gives only
γ = 0.5 and 20 draws; θ = π/8 is inferred from its axis (R(0) ≈ sin²θ ≈ 0.15,
R(0.6) ≈ 0.27) and σ = 0.2 is taken from Fig. 1's setup.

Run ``python -m transfertheory.figures.faf_fig2 --help``; see docs/figures.md.
"""
from __future__ import annotations

import argparse
import math
import sys

import numpy as np

from ..theory import linear
from . import _simstats
from ._io import use_agg

__all__ = ["NAME", "COLUMNS", "simulate_points", "plot", "build", "build_parser", "main"]

NAME = "faf_fig2"
DEFAULTS = dict(d=64, draws=20, gamma=0.5, theta=math.pi / 8, sigma=0.2, lam_max=0.6, lams=13)
#: CSV columns: one row per simulated λ
COLUMNS = ["lam", "gamma", "n", "d", "theta", "sigma", "risk_mean", "risk_sd", "risk_se", "theory_eq15",
           "theory_finite", "theory_finite_se", "z", "agrees", "n_converged", "n_draws"]


def simulate_points(d, draws, gamma, theta, sigma, lams, seed=0, backend="auto", progress=None):
    """Simulated ridge-transfer risk per λ (mean, SD, SE) with Eq. 15 and the exact finite-n theory; :data:`COLUMNS`.

    All λ share the pretrained network and the target draws (the simulator solves the ridge head exactly, Eq. 14).
    """
    raw = _simstats.simulate(("linear",), d, [round(gamma * d)], [theta], sigma, draws, tuple(lams), seed, backend,
                             progress)
    stats = _simstats.risk_stats(raw, "linear")
    table = _simstats.compare(stats, linear.ridge_transfer_risk_finite(theta, sigma, stats["n"], stats["lam"]),
                              "risk")
    table["theory_eq15"] = linear.ridge_transfer_risk(theta, table["lam"])
    return table[COLUMNS]


def finite_minimum(theta, sigma, n, lam_max, points=601):
    """(λ*, R(λ*), R(0)) of the exact finite-n ridge risk on a grid of ``points`` λ in [0, λ_max]."""
    lam = np.linspace(0.0, lam_max, points)
    risk = linear.ridge_transfer_risk_finite(theta, sigma, n, lam)
    k = int(np.argmin(risk))
    return float(lam[k]), float(risk[k]), float(risk[0])


def plot(table, lam_max):
    """(a) risk vs λ: Eq. 15, exact finite n (dashed), simulation ± SD; (b) the same minus Eq. 15, simulation ± SE."""
    use_agg()
    import matplotlib.pyplot as plt

    first = table.iloc[0]
    theta, sigma, n, d = float(first["theta"]), float(first["sigma"]), int(first["n"]), int(first["d"])
    lam = np.linspace(0.0, lam_max, 301)
    eq15 = linear.ridge_transfer_risk(theta, lam)
    exact = linear.ridge_transfer_risk_finite(theta, sigma, n, lam)
    complete = (table["n_converged"] == table["n_draws"]).to_numpy()
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for ax, base, base_pts, err, what in (
        (axes[0], 0.0, 0.0, table["risk_sd"], "± SD"),
        (axes[1], eq15, table["theory_eq15"], table["risk_se"], "± SE"),
    ):
        ax.plot(lam, eq15 - base, "k-", lw=1.5, label="theory, n → ∞ (Eq. 15)")
        ax.plot(lam, exact - base, "C3--", lw=1.5, label=f"theory, exact n = {n}")
        y = table["risk_mean"] - base_pts
        ax.errorbar(table["lam"][complete], y[complete], yerr=err[complete], fmt="o", ms=4, capsize=2, color="C0",
                    label=f"simulation {what} (d = {d}, {int(table['n_draws'].max())} draws)")
        if not complete.all():
            ax.errorbar(table["lam"][~complete], y[~complete], yerr=err[~complete], fmt="o", mfc="none", ms=5,
                        capsize=2, color="C0", label="some draws unconverged")
        ax.set(xlabel="λ", xlim=(-0.02 * lam_max, 1.02 * lam_max))
        ax.legend(fontsize=8)
    lam_star, r_star, r0 = finite_minimum(theta, sigma, n, lam_max)
    axes[0].set(ylabel="linear transfer risk R_lt^λ", title="(a) risk vs ridge strength")
    axes[1].axhline(0.0, color="k", lw=0.6)
    axes[1].set(ylabel="R_lt^λ − Eq. 15",
                title=f"(b) finite-n excess; exact minimum at λ* = {lam_star:.3g} ({r_star - r0:+.2g} vs λ = 0)")
    fig.suptitle(f"FaF Fig. 2: ridge linear transfer, γ = {n / d:g} (n = {n}), θ = {_simstats.format_angle(theta)}, "
                 f"σ = {sigma:g}")
    fig.tight_layout()
    return fig


def build(d=DEFAULTS["d"], draws=DEFAULTS["draws"], gamma=DEFAULTS["gamma"], theta=DEFAULTS["theta"],
          sigma=DEFAULTS["sigma"], lams=None, seed=0, backend="auto", progress=None):
    """Simulate and draw FaF Fig. 2; returns ``(fig, table)`` (``table``: :data:`COLUMNS`, one row per λ)."""
    lams = np.linspace(0.0, DEFAULTS["lam_max"], DEFAULTS["lams"]) if lams is None else np.asarray(lams, float)
    table = simulate_points(d, draws, gamma, theta, sigma, lams, seed, backend, progress)
    return plot(table, float(lams.max()) if lams.max() > 0 else DEFAULTS["lam_max"]), table


def build_parser():
    """The ``python -m transfertheory.figures.faf_fig2`` argument parser."""
    parser = argparse.ArgumentParser(
        prog="python -m transfertheory.figures.faf_fig2",
        description="FaF Fig. 2: ridge linear-transfer risk of a deep linear network against λ at γ = 0.5 — Eq. 15 "
        "(n → ∞), the exact finite-n risk and gradient-flow simulations (mean ± SD over target draws). Writes "
        "faf_fig2.{png,pdf,csv}, prints the largest |z| of simulation against the exact theory.",
    )
    parser.add_argument("--gamma", type=float, default=DEFAULTS["gamma"], help="n/d (default 0.5); n = round(γd) >= 3")
    parser.add_argument("--theta", type=float, default=DEFAULTS["theta"],
                        help="source–target angle in [0, π] (default π/8, inferred from the paper's axis)")
    parser.add_argument("--noise", type=float, default=DEFAULTS["sigma"], metavar="SIGMA",
                        help="label-noise sd σ >= 0 (default 0.2)")
    parser.add_argument("--lam-max", type=float, default=DEFAULTS["lam_max"], help="largest λ (default 0.6)")
    parser.add_argument("--lams", type=int, default=DEFAULTS["lams"], help="λ points in [0, λ_max], >= 2 (default 13)")
    _simstats.add_figure_arguments(parser, d=DEFAULTS["d"], draws=DEFAULTS["draws"])
    return parser


def main(argv=None):
    """Entry point: 0 on success, 1 if the outputs cannot be written; usage errors exit 2 (argparse)."""
    parser = build_parser()
    args, d, draws = _simstats.parse_figure_args(parser, argv, d=DEFAULTS["d"], draws=DEFAULTS["draws"],
                                                 minimums=[("--lams", 2), ("--noise", 0), ("--theta", 0)],
                                                 positive=["--gamma", "--lam-max"])
    if args.theta > math.pi:
        parser.error(f"--theta must be in [0, π], got {args.theta}")
    n = round(args.gamma * d)
    if n < 3:
        parser.error(f"n = round(γd) must be >= 3 (E‖z‖⁻² is infinite below), got n = {n}")
    lams = np.linspace(0.0, args.lam_max, args.lams)
    fig, table = build(d, draws, args.gamma, args.theta, args.noise, lams, args.seed, args.backend)
    lam_star, r_star, r0 = finite_minimum(args.theta, args.noise, n, args.lam_max)
    lines = [
        f"FaF Fig. 2: ridge linear transfer, d = {d}, n = {n}, θ = {args.theta:.4g}, σ = {args.noise:g}, "
        f"{draws} draws, λ in [0, {args.lam_max:g}] ({args.lams} points), seed {args.seed}",
        f"exact finite-n risk: R(0) = {r0:.6g}, minimum R = {r_star:.6g} at λ* = {lam_star:.4g} "
        f"(Eq. 15 has λ* = 0; slope at 0 = {-2 * n * (math.sin(args.theta) ** 2 + args.noise**2) / ((n - 2) * (n - 4)):.4g}"
        f" for n > 4)" if n > 4 else f"exact finite-n risk: R(0) = {r0:.6g}",
        *_simstats.agreement_lines(table, "risk", f"d = {d}, {draws} draws per λ, error bars ±SD"),
    ]
    return _simstats.write_and_report(fig, table, NAME, args, lines)


if __name__ == "__main__":
    sys.exit(main())
