r"""The fine-tuning sign angle θ*(γ, L) against the depth L of the network — a result the paper does not have.

FaF Thm 3.9 (Eq. 17) puts the sign change of the fine-tuning transferability at θ = π/3 for every depth. The
gradient-flow limit rescales the carried-over component by c, which solves c^{2L/(L−1)} = (1 − γ)c² +
γ(1 + σ²/(1 − γ)) (docs/errata.md, docs/linear.md), so the sign angle θ* = arccos(c/2) depends on L: it falls with
L toward θ*_∞ = arccos(½√(1 + σ²/(1 − γ))). The angles are
:func:`transfertheory.theory.transfer.flow_limit_sign_angle_by_depth` and
:func:`~transfertheory.theory.transfer.flow_limit_sign_angle_deep_limit`; this module only tabulates and draws them:
(a) θ* against L for a few γ and two noise levels, with the L → ∞ limits and the paper's 60°; (b) θ*(γ) for a few
depths at σ = 1. The claims ``faf.thm3.9.corrected.L3`` and ``.L4`` check the L-layer limit against trained networks.
"""
from __future__ import annotations

import numpy as np

from ..theory import transfer
from .marks import legend_below
from .output import FigureOutput, subplots
from .registry import Figure, register

__all__ = ["NAME", "COLUMNS", "angle_table", "plot", "build", "FIGURE"]

NAME = "faf_finetune_depth"
COLUMNS = {
    "sigma": "label-noise standard deviation σ (label units)",
    "gamma": "γ = n/d, target samples per input dimension (dimensionless)",
    "depth": "number of layers L of the linear network",
    "theta_star_deg": "θ*(γ, L) = arccos(c/2), where the gradient-flow fine-tuning transferability changes sign "
                      "(degrees); 0 where c ≥ 2",
    "theta_star_deep_limit_deg": "θ*_∞(γ) = arccos(½√(1 + σ²/(1 − γ))), the L → ∞ limit (degrees)",
}
#: the paper's sign angle for every depth (FaF Eq. 17: T_ft > 0 iff θ < π/3)
PAPER_DEGREES = 60.0


def angle_table(sigmas, gammas, depths):
    """Tidy table (columns :data:`COLUMNS`) of θ*(γ, L) for every σ, γ < 1 and depth, with each (σ, γ)'s L → ∞
    limit."""
    import pandas as pd

    rows = []
    for sigma in sigmas:
        angles = np.degrees(transfer.flow_limit_sign_angle_by_depth(np.asarray(gammas, float), sigma, depths))
        deep = np.degrees(transfer.flow_limit_sign_angle_deep_limit(np.asarray(gammas, float), sigma))
        rows += [dict(sigma=float(sigma), gamma=float(g), depth=int(L), theta_star_deg=float(angles[i, j]),
                      theta_star_deep_limit_deg=float(deep[j]))
                 for i, L in enumerate(depths) for j, g in enumerate(gammas)]
    return pd.DataFrame(rows, columns=list(COLUMNS))


def _against_depth(ax, table):
    """(a) θ* against L (log axis): solid σ = the largest noise, dashed the others; dotted the L → ∞ limits."""
    sigmas = sorted(table["sigma"].unique())
    styles = {s: ("-" if s == sigmas[-1] else "--") for s in sigmas}
    for j, gamma in enumerate(sorted(table["gamma"].unique())):
        for sigma in sigmas:
            part = table[(table["sigma"] == sigma) & (table["gamma"] == gamma)].sort_values("depth")
            ax.plot(part["depth"], part["theta_star_deg"], styles[sigma], marker="o", ms=3, color=f"C{j}",
                    label=f"γ = {gamma:g}, σ = {sigma:g}")
            ax.axhline(part["theta_star_deep_limit_deg"].iloc[0], color=f"C{j}", ls=":", lw=0.8)
    ax.axhline(PAPER_DEGREES, color="k", lw=1.2, label="paper's Eq. 17: 60° at every L")
    ax.plot([], [], "k:", lw=0.8, label="L → ∞ limit θ*_∞")
    ax.set_xscale("log")
    depths = sorted(table["depth"].unique())
    ax.set_xticks(depths, [str(L) for L in depths])
    ax.minorticks_off()
    ax.set(xlabel="depth L (layers)", ylabel="θ* (degrees)", ylim=(0, 65),
           title="(a) sign angle θ* of fine-tuning against depth")
    return ax


def _against_gamma(ax, sigma, depths):
    """(b) θ*(γ) at noise ``sigma`` for each depth and the L → ∞ limit (closed forms on a fine γ grid)."""
    gamma = np.linspace(1e-3, 1 - 1e-3, 400)
    angles = np.degrees(transfer.flow_limit_sign_angle_by_depth(gamma, sigma, depths))
    for row, depth in zip(angles, depths):
        ax.plot(gamma, row, lw=1.5, label=f"L = {depth}")
    ax.plot(gamma, np.degrees(transfer.flow_limit_sign_angle_deep_limit(gamma, sigma)), "k:", lw=1.2,
            label="L → ∞")
    ax.axhline(PAPER_DEGREES, color="k", lw=1.2, label="paper's Eq. 17")
    ax.set(xlabel="γ = n/d", ylabel="θ* (degrees)", xlim=(0, 1), ylim=(0, 65),
           title=f"(b) θ*(γ) at σ = {sigma:g}: T > 0 below the curve")
    return ax


def plot(table, sigma_b, depths_b):
    """The two panels: (a) from ``table``, (b) at noise ``sigma_b`` for ``depths_b``; returns the Figure."""
    fig, axes = subplots(1, 2, figsize=(12, 5.6))
    _against_depth(axes[0], table)
    _against_gamma(axes[1], sigma_b, depths_b)
    fig.suptitle("Fine-tuning a deep linear network: where transfer changes sign, by depth (gradient-flow limit, "
                 "n, d → ∞)")
    fig.subplots_adjust(left=0.06, right=0.98, bottom=0.3, top=0.88, wspace=0.2)
    legend_below(axes[0], fontsize=7, ncol=3, frameon=False)
    legend_below(axes[1], fontsize=7, ncol=4, frameon=False)
    return fig


def build(sigmas=(0.2, 1.0), gammas=(0.25, 0.5, 0.75), depths=(2, 3, 4, 6, 8, 16, 32, 64), sigma_b=1.0,
          depths_b=(2, 3, 4, 8)):
    """The table over ``sigmas`` × ``gammas`` × ``depths`` and the figure; a
    :class:`~transfertheory.figures.output.FigureOutput`."""
    table = angle_table(sigmas, gammas, depths)
    half = table[np.isclose(table["gamma"], 0.5)]
    lines = [f"θ* at γ = ½, σ = {sigma:g}: "
             + ", ".join(f"L = {int(r.depth)}: {r.theta_star_deg:.1f}°" for r in part.itertuples())
             + f"; L → ∞: {part['theta_star_deep_limit_deg'].iloc[0]:.1f}° (the paper's Eq. 17: 60°)"
             for sigma, part in half.groupby("sigma")]
    parameters = dict(sigmas=list(sigmas), gammas=list(gammas), depths=list(depths), sigma_b=sigma_b,
                      depths_b=list(depths_b))
    return FigureOutput(plot(table, sigma_b, depths_b), table, COLUMNS, parameters, tuple(lines))


FIGURE = register(Figure(
    name=NAME,
    title="Fine-tuning's sign angle θ*(γ, L) against depth (gradient-flow limit; not in the paper)",
    description="Where fine-tuning a deep linear network stops helping: the angle θ* = arccos(c/2) at which the "
    "transferability of the gradient-flow limit changes sign, (a) against the depth L for γ = 0.25, 0.5, 0.75 at "
    "σ = 0.2 and 1, with the L → ∞ limits arccos(½√(1 + σ²/(1 − γ))) dotted, (b) against γ for L = 2, 3, 4, 8 and "
    f"L → ∞ at σ = 1. The paper's Eq. 17 puts the sign change at θ = π/3 = {PAPER_DEGREES:g}° for every depth.",
    sources=("FaF Thm 3.9", "FaF Eq. 17", "errata: fine-tuning limit"),
    build=build,
    profiles={"quick": {}, "paper": dict(depths=(2, 3, 4, 5, 6, 8, 12, 16, 24, 32, 48, 64, 128))},
    paper_sizes="not in the paper (closed forms of the package's corrected Thm 3.9): the paper profile only adds "
    "depths",
    simulates=False,
))
