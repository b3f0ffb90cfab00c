r"""FaF Fig. 7: linear transferability at σ = 0, theory against simulation as heat maps over (θ, γ) (FaF App. E).

Model (FaF §3, App. E, as FaF Fig. 6 in :mod:`.faf_fig1_3`): two-layer linear network pretrained
on y = β_sᵀx, last layer refit on n = γd noiseless target samples
y = β_tᵀx (β_sᵀβ_t = cos θ), compared with training from scratch;
T = E[R_scratch − R_transfer], R = ‖β̂ − β_t‖².

The paper's caption (text truncated in the extraction) reads: "(a) Identical to
Fig. 6(b), but shaded according to the value of the transferability. (b)
Results of numerical simulations with L = 2, d = 500"; both panels have θ on
the x axis, γ on the y axis and the colour scale [−1, 1]. Here:

* (a) theory: the exact finite-size T at the simulated d (FaF Eqs. 10, 12 at
  finite size:
  E R_sc = 1 − n/d for n < d, 0 for n ≥ d; E R_lt = sin²θ(1 + 1/(n − 2))),
  on the simulation's (θ, γ) cells, with the n, d → ∞ boundary γ = cos²θ
  (FaF §3.3, σ → 0) and γ = 1 drawn;
* (b) simulation: mean over target draws of the paired R_scratch − R_transfer
  (gradient flow, :func:`transfertheory.figures.simulation.simulate_slices` on a θ grid);
* (c) z = (simulation − exact theory)/SE per cell, clipped to ±4 — the
  verification the paper shows only by eye. Cells within the integrator
  allowance of the theory (dotted, light green: θ = 0 with γ > 1, where both
  models learn β_t exactly and the SE is ~1e-8) are not coloured by z, which
  there measures integration error.

Reading (c): all θ of one γ row share the target draws, and at σ = 0 the
transfer risk is sin²θ·(1 + ξ) with the same random ξ = (zᵀw)²/‖z‖⁴ for every θ
(z = Xβ_s, w = Xν), while the scratch risk does not depend on θ for γ > 1 — so
the z of a row are nearly one random variable, not independent cells: one row
at |z| ≈ 3 among a dozen is not a discrepancy.

Cells with |n − d| ≤ 1 are not simulated (gradient flow does not reach its limit
there) and are grey in every panel; cells with unconverged draws are hatched.
The CSV has one row per simulated cell with both theory columns
(``theory_finite``, ``theory_asymptotic`` = FaF Eq. 13 at σ = 0).

Build it with ``python -m transfertheory.figures faf_fig7``; see docs/figures.md.
"""
from __future__ import annotations


import numpy as np

from ..sweep.named import named_profile
from ..theory import linear
from . import stats
from .marks import annotate_convergence, legend_below
from .output import FigureOutput, subplots
from .phase_diagram import DISPLAY_LIMIT
from .registry import Figure, register
from .simulation import SIM_COLUMN_DEFINITIONS, simulate_slices, simulation_summary, sweep_sizes

__all__ = ["NAME", "build", "plot"]

NAME = "faf_fig7"


def _sizes(profile):
    """The figure's sizes at ``profile``: its named sweep's (:func:`~.simulation.sweep_sizes`, θ points)."""
    return dict(sweep_sizes(NAME, profile), thetas=named_profile(NAME, profile)["theta"]["num"])


DEFAULTS = dict(_sizes("quick"), sigma=0.0)
Z_LIMIT = 4.0


def _edges(centers):
    """Cell edges around sorted ``centers`` (midpoints; the outer cells symmetric)."""
    c = np.asarray(centers, float)
    if c.size == 1:
        return np.array([c[0] - 0.5, c[0] + 0.5])
    mid = (c[1:] + c[:-1]) / 2
    return np.concatenate([[2 * c[0] - mid[0]], mid, [2 * c[-1] - mid[-1]]])


def _cells(points, skipped_n, column):
    """(θ axis, γ axis, values[γ, θ]) over simulated and skipped n (skipped rows NaN)."""
    gamma = np.union1d(points["gamma"], np.asarray(skipped_n, float) / int(points["d"].iloc[0]))
    cells = points.pivot(index="gamma", columns="theta", values=column).reindex(gamma)
    return cells.columns.to_numpy(float), gamma, cells.to_numpy(float)


def plot(points):
    """Three heat maps over (θ, γ): (a) exact theory, (b) simulation mean, (c) z, clipped to ±4."""
    fig, axes = subplots(1, 3, figsize=(15, 5.4), sharey=True, layout="constrained")  # (pyplot on Agg)
    import matplotlib.pyplot as plt

    first = points.iloc[0]
    d, sigma = int(first["d"]), float(first["sigma"])
    skipped = points.attrs.get("skipped_n", [])
    panels = (
        ("theory_finite", f"(a) theory, exact d = {d}", "RdBu", DISPLAY_LIMIT),
        ("transferability_mean", f"(b) simulation, mean of {int(points['n_draws'].max())} draws", "RdBu",
         DISPLAY_LIMIT),
        ("z", "(c) z = (simulation − theory)/SE", "PuOr", Z_LIMIT),
    )
    theta, gamma, incomplete = _cells(points, skipped, "n_converged")
    _, _, draws = _cells(points, skipped, "n_draws")
    incomplete = incomplete < draws
    gap = points.assign(gap=(points["transferability_mean"] - points["theory_finite"]).abs())
    allowance = points.attrs["allowance"]
    near = _cells(gap, skipped, "gap")[2] <= allowance
    te, ge = _edges(theta), _edges(gamma)

    def mark(ax, cells, **style):
        for gi, ti in zip(*np.nonzero(cells)):
            ax.add_patch(plt.Rectangle((te[ti], ge[gi]), te[ti + 1] - te[ti], ge[gi + 1] - ge[gi], lw=0, **style))

    for ax, (column, title, cmap, limit) in zip(axes, panels):
        _, _, values = _cells(points, skipped, column)
        cmap = plt.get_cmap(cmap).with_extremes(bad="#bdbdbd")
        mesh = ax.pcolormesh(te, ge, np.clip(values, -limit, limit), cmap=cmap, vmin=-limit, vmax=limit)
        fig.colorbar(mesh, ax=ax, fraction=0.046, pad=0.03)
        mark(ax, incomplete, fill=False, hatch="//")
        th = np.linspace(0, np.pi / 2, 200)
        g_minus, _ = linear.negative_transfer_interval(th, sigma)
        ax.plot(th, g_minus, color="tab:cyan", lw=1.2, label="γ₋(θ) (n, d → ∞; = cos²θ at σ = 0)")
        ax.axhline(1.0, color="k", lw=0.8, ls=":", label="γ = 1")
        ax.set(xlabel="θ", title=title, xlim=(te[0], te[-1]), ylim=(ge[0], ge[-1]))
        ax.set_xticks([0, np.pi / 6, np.pi / 3, np.pi / 2], ["0", "π/6", "π/3", "π/2"])
    # z of cells within the integrator allowance measures integration error (T = 0 pathwise), not statistics
    mark(axes[2], near, facecolor="#e5f5e0", hatch="..", label=f"|sim − theory| ≤ {allowance:g}")
    axes[0].set_ylabel("γ = n/d")
    annotate_convergence(axes[1], {"target draws": (int(points["n_converged"].sum()), int(points["n_draws"].sum()))})
    note = f"; grey: n = {', '.join(map(str, skipped))} not simulated" if skipped else ""
    fig.suptitle(f"FaF Fig. 7: linear transferability, σ = {sigma:g}, theory vs simulation (L = 2, d = {d}){note}")
    handles, labels = axes[0].get_legend_handles_labels()
    if incomplete.any():
        handles.append(plt.Rectangle((0, 0), 0, 0, fill=False, hatch="//"))
        labels.append("some draws unconverged (left out of the mean)")
    legend_below(axes[0], handles, labels, fontsize=8)
    if near.any():
        legend_below(axes[2], axes[2].patches[-1:], [axes[2].patches[-1].get_label()], fontsize=8)
    return fig


def build(d=DEFAULTS["d"], draws=DEFAULTS["draws"], gammas=DEFAULTS["gammas"], thetas=DEFAULTS["thetas"],
          sigma=DEFAULTS["sigma"], gamma_max=2.0, seed=0, backend=None, progress=None):
    """Simulate T on a (gammas × thetas) grid, θ ∈ [0, π/2], and draw FaF Fig. 7.

    Returns a :class:`~transfertheory.figures.output.FigureOutput`; ``data`` has
    :data:`~transfertheory.figures.simulation.SIM_COLUMNS`, one row per simulated cell.
    """
    points = simulate_slices("linear", sigma, d, draws, gammas, gamma_max, thetas=np.linspace(0.0, np.pi / 2, thetas),
                             seed=seed, backend=backend, progress=progress)
    parameters = dict(sigma=sigma, d=d, draws=draws, gammas=gammas, thetas=thetas, gamma_max=gamma_max, seed=seed,
                      skipped_n=points.attrs["skipped_n"])
    lines = (f"FaF Fig. 7: σ = {sigma:g}, d = {d}, {draws} draws, {gammas} γ × {thetas} θ cells, seed {seed}",
             *simulation_summary(points))
    return FigureOutput(plot(points), points, SIM_COLUMN_DEFINITIONS, parameters, lines,
                        agreement=stats.agreement_record(points, "transferability"))


FIGURE = register(Figure(
    name=NAME,
    title="FaF Fig. 7: linear transferability at σ = 0, theory vs simulation heat maps",
    description="Heat maps over (θ, γ): (a) the exact finite-d transferability, with the n, d → ∞ boundary "
    "γ = cos²θ and γ = 1; (b) the gradient-flow simulation (mean over target draws); (c) z = (simulation − "
    "theory)/SE, clipped to ±4 — the check the paper leaves to the eye. Rows |n − d| ≤ 1 are not simulated (grey).",
    sources=("FaF Eq. 13", "FaF Fig. 7"),
    build=build,
    profiles={profile: _sizes(profile) for profile in ("quick", "paper")},
    paper_sizes="the paper's (FaF Fig. 7 caption, App. D.1): d = 500, L = 2, 20 target draws per cell; the (γ, θ) "
    "grid is the package's (8 γ × 9 θ; the paper does not list its own), and training runs to the gradient-flow "
    "limit where the paper stops gradient descent at 1e5 steps of η = 1e-3 or loss 1e-6 (flow time 200 in the "
    "package's units, whose losses carry a ½)",
))
