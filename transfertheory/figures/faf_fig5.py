r"""FaF Fig. 5: transferability is not predicted by task distances (FaF §2.1, App. E).

Model (FaF §2.1, §3): x ~ N(0, I_d), source β_s = e₁ (unit), targets
β_t = a·(cos θ e₁ + sin θ e₂) over a grid of angles θ and norms a, labels
y = β_tᵀx + ε, ε ~ N(0, σ²), n target samples. For every target
:func:`transfertheory.theory.distance_study.compute_points` computes

* the exact finite-size linear transferability T = E R_sc − E R_lt of the FaF
  deep linear model for a target of norm a
  (:func:`transfertheory.theory.distances.scaled_target_transferability_finite`);
* D_KL(p_s ‖ p_t) (FaF Eq. 34), exact;
* W₁ between the empirical measures of ``samples`` joint draws (x, y) ∈ ℝ^{d+1}
  of each task, by exact optimal transport (POT), as in the paper's Fig. 5b;
* the Gaussian W₂ (Bures closed form) and the Dudley lower / upper bounds.

This module plots T against D_KL and against W₁ and reports Spearman rank
correlations of T with every distance: a distance that *predicted* transfer would make T a
decreasing function of it (ρ = −1). The empirical W₁ uses common random
numbers — one source sample, and one (x, ε) sample reused for every target —
so that its variation across targets is not sampling noise. In d + 1
dimensions the empirical W₁ carries a large positive bias: the W₁ of two
independent samples of the *same* law (the "W₁ floor", computed with the
same samples and drawn as a shaded band on the W₁ axis), as the values near
527 in the paper's Fig. 5b show.

Build it with ``python -m transfertheory.figures faf_fig5``; see docs/distances.md.
"""
from __future__ import annotations


import numpy as np

from ..theory.distance_study import DEFAULT_NORMS, DISTANCES, compute_points, spearman_table
from .marks import legend_below
from .output import FigureOutput, subplots
from .registry import Figure, register

__all__ = ["NAME", "COLUMN_DEFINITIONS", "plot", "build"]

NAME = "faf_fig5"
#: definitions (with units) of the CSV columns, one row per target
COLUMN_DEFINITIONS = {
    "theta": "angle θ between β_s = e₁ and the target direction (rad)",
    "norm": "target norm a = ‖β_t‖",
    "d": "input dimension d",
    "n": "target samples n",
    "sigma": "label-noise standard deviation σ (label units)",
    "samples": "joint draws (x, y) per task for the empirical W₁",
    "risk_scratch": "exact E R_scratch = E‖β̂ − β_t‖² at n, d for this target (label units²)",
    "risk_transfer": "exact E R_transfer of linear transfer (label units²)",
    "transferability": "T = risk_scratch − risk_transfer (label units²)",
    "kl": "D_KL(p_s ‖ p_t) of the joint laws of (x, y), FaF Eq. 34 (nats)",
    "w1_empirical": "W₁ between the empirical measures of the samples in ℝ^{d+1} (Euclidean cost, label units)",
    "w2_gaussian": "W₂ between the Gaussian joint laws, Bures closed form (label units)",
    "dudley_lower": "lower bound on the Dudley metric γ_β(p_s, p_t) ≤ 2 (FaF Eqs. 25–27)",
    "dudley_upper": "upper bound on the Dudley metric: min(2, W₂, √(2 D_KL))",
}
SPEARMAN_COLUMNS = {
    "distance": "distance column of faf_fig5.csv",
    "label": "its name on the figure",
    "spearman_rho": "Spearman rank correlation of T with the distance (−1: closer tasks always transfer better)",
    "p_value": "two-sided p-value of ρ = 0",
}
#: T scales like ‖β_t‖²: the y-axis is symlog, linear below this |T| (display only; the CSV keeps raw values)
SYMLOG_LINTHRESH = 0.1


def plot(points, spearman):
    """Two panels: T against D_KL (a) and against empirical W₁ (b), one colour per target norm.

    Panel (b) starts at W₁ = 0 and shades [0, floor] (``points.attrs["w1_floor"]``): the W₁ two samples of the
    *same* law already have, so the reader sees how little of each W₁ value depends on the target; an inset zooms
    on the values above the floor.
    """
    from matplotlib import colormaps

    rho = dict(zip(spearman["distance"], spearman["spearman_rho"]))
    first = points.iloc[0]
    fig, axes = subplots(1, 2, figsize=(11, 5.4), sharey=True, layout="constrained")
    floor = points.attrs["w1_floor"]
    axes[1].axvspan(0, floor, color="#e0e0e0", lw=0, zorder=0,
                    label=f"sampling-bias floor: W₁ of two samples of one law = {floor:.3g}")
    axes[1].set_xlim(0, 1.02 * points["w1_empirical"].max())
    zoom = axes[1].inset_axes([0.07, 0.3, 0.6, 0.6])
    colours = colormaps["viridis"](np.linspace(0, 0.9, points["norm"].nunique()))
    for ax, column in ((axes[0], "kl"), (axes[1], "w1_empirical"), (zoom, "w1_empirical")):
        for colour, (norm, group) in zip(colours, points.groupby("norm")):
            group = group.sort_values("theta")
            ax.plot(group[column], group["transferability"], "o-", color=colour, ms=4 if ax is not zoom else 2.5,
                    lw=1, label=f"‖β_t‖ = {norm:g}")
        ax.axhline(0, color="grey", lw=0.8, ls="--")
        ax.set_yscale("symlog", linthresh=SYMLOG_LINTHRESH)
    for panel, (ax, column) in enumerate(zip(axes, ("kl", "w1_empirical"))):
        ax.set(xlabel=DISTANCES[column], title=f"({'ab'[panel]}) Spearman ρ(T, ·) = {rho[column]:+.2f}")
    zoom.set_ylim(axes[1].get_ylim())
    zoom.axvline(floor, color="k", lw=0.8, ls=":")
    zoom.set_title("zoom: W₁ above the floor (dotted)", fontsize=7)
    zoom.tick_params(labelsize=6)
    axes[0].set_ylabel("transferability T (linear transfer, exact)")
    legend_below(axes[0], fontsize=8, ncol=3, title="θ from 0 to π along each line", title_fontsize=8)
    legend_below(axes[1], axes[1].patches[:1], [axes[1].patches[0].get_label()], fontsize=8)
    fig.suptitle(f"FaF Fig. 5: T vs task distances — d = {int(first['d'])}, n = {int(first['n'])}, "
                 f"σ = {first['sigma']:g}, {int(first['samples'])} samples per task for W₁")
    return fig


def _summary(points, spearman, seed):
    first = points.iloc[0]
    lines = [f"FaF Fig. 5: d = {int(first['d'])}, n = {int(first['n'])}, sigma = {first['sigma']:g}, "
             f"{len(points)} targets, {int(first['samples'])} samples per task, seed {seed}",
             f"W1 floor (empirical W1 between two samples of the source law itself): {points.attrs['w1_floor']:.4g}",
             "Spearman correlation of T with each distance (rho = -1 would mean 'closer tasks transfer better'):"]
    lines += [f"  {row.distance:14s} rho = {row.spearman_rho:+.3f}  (p = {row.p_value:.2g})"
              for row in spearman.itertuples()]
    return tuple(lines)


def build(d=50, n=25, sigma=0.2, samples=300, angles=9, norms=DEFAULT_NORMS, seed=0):
    """Compute the points (``angles`` θ in [0, π] × ``norms``) and draw FaF Fig. 5.

    Returns a :class:`~transfertheory.figures.output.FigureOutput`: ``data`` one row per target, the Spearman
    table as the extra ``_spearman`` CSV.
    """
    points = compute_points(d, n, sigma, samples, np.linspace(0, np.pi, angles), norms, seed)
    spearman = spearman_table(points)
    parameters = dict(d=d, n=n, sigma=sigma, samples=samples, angles=angles, norms=norms, seed=seed)
    return FigureOutput(plot(points, spearman), points, COLUMN_DEFINITIONS, parameters,
                        _summary(points, spearman, seed), extra=(("_spearman", spearman, SPEARMAN_COLUMNS),),
                        notes={"w1_floor": points.attrs["w1_floor"]})


FIGURE = register(Figure(
    name=NAME,
    title="FaF Fig. 5: transferability is not predicted by task distances",
    description="Exact linear transferability T of a family of targets (angles θ ∈ [0, π] × norms a) against "
    "D_KL(p_s‖p_t) (a) and the empirical W₁ of samples of the two tasks (b), one line per norm, with Spearman "
    "correlations of T with five distances: a distance that predicted transfer would make T decreasing in it. "
    "The W₁ axis shades its sampling-bias floor (W₁ of two samples of the same law).",
    sources=("FaF Eq. 13", "FaF Eq. 34", "FaF Fig. 5"),
    build=build,
    profiles={"quick": dict(d=50, n=25, samples=300), "paper": dict(d=50, n=25, samples=1000)},
    paper_sizes="the paper states no sizes for Fig. 5 (d, n, the targets and the samples of the empirical W₁ are "
    "not given); the package's: d = 50, n = 25, 1000 samples per task for W₁",
    simulates=False,
))
