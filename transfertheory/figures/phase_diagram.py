r"""Transferability phase diagrams of deep linear networks (FaF §3, Figs. 1 and 3): grid, figure, summary.

Model (FaF §3): x ~ N(0, I_d), unit source/target vectors with β_sᵀβ_t = cos θ,
labels y = β_tᵀx + ε with ε ~ N(0, σ²), n = γd target samples, a two-layer
linear network pretrained on the source. The transferability
T = E[R_scratch − R_transfer] (T > 0: transfer helps), R = ‖β̂ − β_t‖², is
drawn over the (γ, θ) plane for one transfer method of
:mod:`transfertheory.theory.methods` (linear transfer, FaF Fig. 1, Eq. 13;
fine-tuning, FaF Fig. 3; ridge linear transfer, Eqs. 10 and 15).

``limit="flow"`` (the default) draws what gradient-flow training converges to;
``limit="paper"`` the paper's formulas. They differ for fine-tuning only: the
paper's Eq. 17 changes sign at θ = π/3, gradient flow at θ* = arccos(c/2) < π/3
(docs/errata.md). The fine-tuning figure shades what training does and overlays
the paper's boundary; its gradient-flow limit depends on the depth L of the
network (``depth``, default 2: θ* = 52.2° at L = 2, 48.0° at L = 3 for σ = 1,
γ = ½), the paper's formulas do not. A finite-size grid of fine-tuning (``finite_d``) has no
closed form for the gradient-flow limit and draws the paper's Eq. 17 at that
size, saying so in its title.

The pieces: the grid (:mod:`transfertheory.figures.phase_grid`:
:func:`~.phase_grid.compute_phase_grid`, a :class:`~.phase_grid.PhaseGrid` of NumPy arrays), :func:`plot_phase_diagram` (the
three panels, optionally with simulated points from
:func:`transfertheory.figures.simulation.simulate_slices`), :func:`summary`,
:func:`phase_diagram_output` (all of it as a written figure). The registered
FaF Figs. 1 and 3 are :mod:`transfertheory.figures.faf_fig1_3`; the command
line is :mod:`transfertheory.phase_diagram`.
"""
from __future__ import annotations

import math

import numpy as np

from ..theory import linear, transfer
from ..theory.methods import get_method
from .marks import annotate_convergence, below_drops, errorbar_by_convergence, legend_below
from .output import DPI, FigureOutput
from .phase_grid import COLUMN_DEFINITIONS, THETA_MAX, THETA_TICKS, grid_limit, grid_surface
from .simulation import SIM_COLUMN_DEFINITIONS, SLICE_THETAS, simulation_summary
from .stats import agreement_record

__all__ = [
    "transferability_source",
    "DISPLAY_LIMIT",
    "plot_phase_diagram",
    "grid_opening",
    "summary",
    "phase_diagram_output",
]

#: panel (a) draws the surface where |T| ≤ this (the paper's z-range); the CSV keeps raw values, ±inf included.
DISPLAY_LIMIT = 1.0


# --------------------------------------------------------------------------- figure


def _display(values):
    """``values`` where |T| ≤ DISPLAY_LIMIT, NaN elsewhere (±inf included): panel (a) leaves those facets out."""
    return np.where(np.abs(values) <= DISPLAY_LIMIT, values, np.nan)


#: the paper's equations of each method's transferability (the records carry the equation of the risk)
_TRANSFERABILITY_SOURCE = {"linear": "Eq. 13", "ridge": "Eqs. 10, 15", "finetune": "Eq. 17"}


def transferability_source(method):
    """The paper's equation of ``method``'s transferability T, the quantity the diagram draws, as a source:
    "FaF Eq. 13" for linear transfer (FaF Fig. 1(a) plots "the theoretical transferability surface (13)"; the
    method record's ``source``, Eq. 12, is the equation of the transfer risk alone)."""
    return "FaF " + _TRANSFERABILITY_SOURCE[method]


def _title(method, limit, finite_d, depth=2):
    """What the figure shows, in words: the method, the paper figure, which limit and its equation (and, for
    fine-tuning's gradient-flow limit, the depth L)."""
    record = get_method(method)
    where = f"{record.figure}, " if record.figure else ""
    source = _TRANSFERABILITY_SOURCE[method]
    if method != "finetune":
        return f"{record.label} ({where}{source})"
    if limit == "flow":
        return (f"{record.label}, gradient-flow limit, L = {depth} ({where}corrected {source}; the paper's boundary "
                "dashed)")
    size = " at finite d" if finite_d is not None else ""
    return f"{record.label}, the paper's {source}{size} (not the gradient-flow limit: see errata)"


def _fine_tune_boundaries(sigma, limit, asymptotic_note, depth):
    """Fine-tuning: the gradient-flow sign boundary θ* = arccos(c/2) of an L = ``depth`` network, the paper's
    θ = π/3 (Eq. 17) and γ = 1
    (:func:`_boundaries`' tuples; T = 0 along the boundary of the limit drawn and along γ = 1)."""
    flow_style = dict(ls="-", lw=1.8) if limit == "flow" else dict(ls="--", lw=1.3)
    paper_style = dict(ls="--", lw=1.3) if limit == "flow" else dict(ls="-", lw=1.8)
    gamma = np.linspace(1e-3, 1 - 1e-3, 400)
    return [
        (gamma, transfer.flow_limit_sign_angle(gamma, sigma, depth),
         dict(color="tab:orange", label=f"θ* = arccos(c/2): gradient flow (L = {depth}), T = 0{asymptotic_note}",
              **flow_style),
         limit == "flow"),
        (np.array([0.0, 1.0]), np.full(2, np.pi / 3),
         dict(color="tab:cyan", label=f"θ = π/3: paper's Eq. 17, T = 0{asymptotic_note}", **paper_style),
         limit == "paper"),
        (np.ones(2), np.array([0.0, THETA_MAX]), dict(color="k", lw=1, ls=":", label="γ = 1 (T = 0 for γ ≥ 1)"),
         True),
    ]


def _boundaries(method, sigma, lam, gamma_max, finite_d, limit, depth=2):
    """The analytic n, d → ∞ boundaries of the sign regions on the (γ, θ) plane.

    A list of (γ array, θ array, line style and label, ``on_zero``): ``on_zero`` is True where the drawn surface is
    T = 0 along the curve (the n, d → ∞ boundaries of the limit drawn; not γ = 1 for linear transfer, where the
    scratch risk diverges), so that panel (a) draws it on the surface.
    """
    note = "" if finite_d is None else ", n, d → ∞"
    if method == "finetune":
        return _fine_tune_boundaries(sigma, limit, note, depth)
    theta = np.linspace(1e-3, THETA_MAX, 600)
    theta_eff = transfer.effective_angle(theta, lam)
    g_minus, g_plus = linear.negative_transfer_interval(theta_eff, sigma)
    g_c = linear.negative_transfer_threshold(theta_eff, sigma)
    notes = (["at θ_eff"] if method == "ridge" else []) + ([note.lstrip(", ")] if note else [])
    tag = f" ({', '.join(notes)})" if notes else ""
    beyond = "γ = 1 (E R_sc = ∞)" if sigma > 0 else "γ = 1 (σ = 0: R_sc = 0 beyond)"
    exact = finite_d is None
    return [
        (g_minus, theta, dict(color="tab:cyan", lw=1.5, label=f"γ₋, γ₊: T = 0{tag}"), exact),
        (g_plus, theta, dict(color="tab:cyan", lw=1.5), exact),
        (np.where(g_c <= gamma_max, g_c, np.nan), theta,
         dict(color="tab:green", lw=1.5, label=f"1 + σ²/sin²θ{tag}"), exact),
        (np.ones(2), np.array([0.0, THETA_MAX]), dict(color="k", lw=1, ls=":", label=beyond), False),
    ]


#: panel (a) draws at most this many facets along each axis (``plot_surface``'s ``rcount`` and ``ccount``)
SURFACE_FACETS = 60


def _surface_panel(fig, gamma, theta, t, boundaries):
    """(a) the surface T(γ, θ) from a ≤ 60 × 60 subsample, cut where |T| > DISPLAY_LIMIT (not clipped: a clipped
    pole at γ = 1 draws as a striped wall), with the T = 0 boundaries on it; returns (axes, surface)."""
    from matplotlib.ticker import MaxNLocator

    ax = fig.add_subplot(1, 3, 1, projection="3d")
    surface = ax.plot_surface(*np.meshgrid(gamma, theta), _display(t), rcount=SURFACE_FACETS, ccount=SURFACE_FACETS,
                              cmap="RdBu", vmin=-DISPLAY_LIMIT, vmax=DISPLAY_LIMIT, linewidth=0, antialiased=False)
    for boundary_gamma, boundary_theta, style, on_zero in boundaries:
        if on_zero:
            ax.plot(boundary_gamma, boundary_theta, np.zeros_like(boundary_theta), color="#7fd4ff", lw=1.5,
                    zorder=10)
    ax.set(xlabel="γ", ylabel="θ", zlabel="T", xlim=(0, gamma[-1]), ylim=(0, THETA_MAX),
           zlim=(-DISPLAY_LIMIT, DISPLAY_LIMIT), title="(a) T(γ, θ); light blue: T = 0")
    ax.xaxis.set_major_locator(MaxNLocator(nbins=3, steps=[1, 2, 5, 10]))
    ax.set_yticks([0, np.pi / 4, np.pi / 2], ["0", "π/4", "π/2"])
    ax.set_zticks([-DISPLAY_LIMIT, 0, DISPLAY_LIMIT])
    ax.tick_params(labelsize=8)
    return ax, surface


def _colour_bar(fig, ax, surface):
    """The colour bar of panel (a), added last so that ``fig.axes`` keeps the panels in order (a), (b), (c)."""
    bar = fig.colorbar(surface, ax=ax, shrink=0.5, pad=0.02, location="left")
    bar.set_label(f"T (not drawn where |T| > {DISPLAY_LIMIT:g})", fontsize=8)
    bar.ax.tick_params(labelsize=8)


def _sign_panel(fig, gamma, theta, t, method, boundaries):
    """(b) the sign of T (red < 0, white = 0, blue > 0, grey undefined) with the analytic boundaries; returns the
    axes and its legend entries (drawn under the panel once the layout is final)."""
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch

    ax = fig.add_subplot(1, 3, 2)
    dg, dt = gamma[1] - gamma[0], theta[1] - theta[0]
    sign = np.where(np.isnan(t), 2.0, np.sign(t))
    ax.imshow(sign, origin="lower", aspect="auto", interpolation="nearest", vmin=-1.5, vmax=2.5,
              cmap=ListedColormap(["#d6604d", "white", "#4393c3", "#bdbdbd"]),
              extent=(gamma[0] - dg / 2, gamma[-1] + dg / 2, theta[0] - dt / 2, theta[-1] + dt / 2))
    for boundary_gamma, boundary_theta, style, _ in boundaries:
        ax.plot(boundary_gamma, boundary_theta, **style)
    handles, labels = ax.get_legend_handles_labels()
    if np.isnan(t).any():
        handles.append(Patch(facecolor="#bdbdbd", edgecolor="none"))
        labels.append(f"undefined: n = round(γd) < {get_method(method).min_n}")
    ax.set(xlabel="γ", ylabel="θ", xlim=(gamma[0] - dg / 2, gamma[-1] + dg / 2), ylim=(0, THETA_MAX))
    shades = "red T < 0, blue T > 0" + (", white T = 0" if method == "finetune" else "")
    ax.set_title(f"(b) sign of T: {shades}", fontsize=10)
    ax.set_yticks(*THETA_TICKS)
    return ax, (handles, labels)


def _slices_panel(fig, gamma, method, sigma, lam, finite_d, limit, simulated, depth=2):
    """(c) T at θ = π/8, π/4, 3π/8 (the paper's formula dotted where it differs), simulated points if given, with
    how many simulated draws converged in the title; returns the axes."""
    ax = fig.add_subplot(1, 3, 3)
    colors = {}
    for th, label in zip(SLICE_THETAS, THETA_TICKS[1][1:4]):
        values = transfer.transfer_risks(method, gamma, th, sigma, lam, finite_d, limit, depth)[0]
        (line,) = ax.plot(gamma, np.where(np.isfinite(values), values, np.nan), lw=1.5, label=f"θ = {label}")
        colors[th] = line.get_color()
        if method == "finetune" and limit == "flow":
            paper = transfer.transfer_risks(method, gamma, th, sigma, lam, finite_d, "paper")[0]
            ax.plot(gamma, np.where(np.isfinite(paper), paper, np.nan), lw=1, ls=":", color=line.get_color())
    if method == "finetune" and limit == "flow":
        ax.plot([], [], "k:", lw=1, label="paper's Eq. 17")
    simulates = simulated is not None and len(simulated)
    if simulates:
        _draw_simulated(ax, simulated, colors, method, sigma, lam, gamma[-1])
    ax.axhline(0.0, color="k", lw=0.6)
    ax.set(xlabel="γ", ylabel="T", xlim=(0, gamma[-1]), ylim=(-1.05 * DISPLAY_LIMIT, 1.05 * DISPLAY_LIMIT))
    ax.set_title("(c) slices" + (" (points: simulation ± SD)" if simulates else ""), fontsize=10)
    if simulates and "n_converged" in simulated:
        annotate_convergence(ax, {"target draws": (int(simulated["n_converged"].sum()),
                                                   int(simulated["n_draws"].sum()))})
    return ax


def plot_phase_diagram(grid, method, sigma, lam=0.0, finite_d=None, simulated=None, limit=None):
    r"""FaF Fig. 1 / Fig. 3 layout from a :func:`~.phase_grid.compute_phase_grid` grid; returns
    the Figure, a ``matplotlib.figure.Figure`` at the PNG's resolution
    (:data:`~transfertheory.figures.output.DPI`) on its own Agg canvas (pyplot does not hold it: nothing to close).

    (a) the surface T(γ, θ), downsampled to ≤ 60 × 60 facets and left out where |T| > :data:`DISPLAY_LIMIT`,
    with a colour bar and the T = 0 boundaries drawn on it in light blue (as the paper's); (b) its top view shaded
    by sign (red T < 0, blue T > 0, white T = 0, grey undefined) with the analytic n, d → ∞ boundaries — for
    fine-tuning the gradient-flow boundary θ* solid and the paper's θ = π/3 dashed; (c) slices at θ = π/8, π/4,
    3π/8, evaluated exactly at those angles on the grid's γ values, in the range ±1.05·DISPLAY_LIMIT. The legends
    of (b) and (c) sit under their panels, off the data. ``limit``: as in :func:`~.phase_grid.compute_phase_grid` (default:
    the grid's); the depth L is the grid's.

    ``simulated``: optional DataFrame with columns ``gamma, theta, transferability_mean, transferability_sd``,
    drawn on panel (c) as points with error bars (one colour per θ; a θ equal to a slice's takes its colour); with
    ``n_converged`` and ``n_draws`` columns, (c)'s title says how many draws converged in all.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    limit = grid_limit(method, finite_d, limit or grid.limit)
    gamma, theta, t = grid_surface(grid)
    fig = Figure(figsize=(16, 5.6), dpi=DPI)  # the PNG's: its text laid out once, at the resolution it is drawn at
    FigureCanvasAgg(fig)
    setting = f"σ = {sigma:g}" + (f", λ = {lam:g}" if method == "ridge" else "")
    setting += f", d = {finite_d} (exact)" if finite_d is not None else ", n, d → ∞"
    fig.suptitle(f"Transferability, {_title(method, limit, finite_d, grid.depth)}: {setting}")
    boundaries = _boundaries(method, sigma, lam, gamma[-1], finite_d, limit, grid.depth)
    surface_axes, surface = _surface_panel(fig, gamma, theta, t, boundaries)
    sign_axes, (handles, labels) = _sign_panel(fig, gamma, theta, t, method, boundaries)
    slices_axes = _slices_panel(fig, gamma, method, sigma, lam, finite_d, limit, simulated, grid.depth)
    _colour_bar(fig, surface_axes, surface)
    fig.subplots_adjust(left=0.04, right=0.98, bottom=0.25, top=0.84, wspace=0.3)
    drops = below_drops(sign_axes, slices_axes)  # one layout of both panels
    for ax, entries, drop in zip((sign_axes, slices_axes), ((handles, labels), (None, None)), drops):
        legend_below(ax, *entries, drop=drop, fontsize=8, ncol=2)
    return fig


def _draw_simulated(ax, simulated, colors, method, sigma, lam, gamma_max):
    r"""Simulated points ± SD on the slices panel, with the exact theory at the simulated d when it has a ``d`` column.

    A θ equal to a slice's takes its colour. Points with ``n_converged`` < ``n_draws`` (unconverged draws omitted
    from the mean) are hollow. The exact finite-d theory is a dashed curve where it is a closed form (linear and
    ridge transfer) and crosses at the simulated points (``theory_finite``) for fine-tuning, whose gradient-flow
    limit at finite size is a Monte Carlo.
    """
    for th, pts in simulated.groupby("theta", sort=True):
        match = [c for s, c in colors.items() if math.isclose(s, th, abs_tol=1e-9)]
        color = match[0] if match else None
        complete = pts["n_converged"] == pts["n_draws"] if "n_converged" in pts else np.ones(len(pts), bool)
        color = errorbar_by_convergence(ax, pts["gamma"], pts["transferability_mean"], pts["transferability_sd"],
                                        complete, fmt="o", ms=4, capsize=2, color=color,
                                        label=None if match else f"simulated θ = {th:.3g}")
        if method == "finetune":
            if "theory_finite" in pts:
                ax.plot(pts["gamma"], pts["theory_finite"], "x", ms=6, color=color)
        elif "d" in pts:
            d = int(pts["d"].iloc[0])
            n = np.arange(1, int(gamma_max * d) + 1)
            exact = transfer.transfer_risks(method, n / d, th, sigma, lam, finite_d=d, limit="flow")[0]
            ax.plot(n / d, np.where(np.isfinite(exact), exact, np.nan), ls="--", lw=1, color=color)
    if "d" in simulated:
        d = int(simulated["d"].iloc[0])
        if method == "finetune":
            if "theory_finite" in simulated:
                ax.plot([], [], "kx", ms=6, label=f"gradient-flow limit, d = {d} (Monte Carlo)")
        else:
            ax.plot([], [], "k--", lw=1, label=f"exact, d = {d}")
    if "n_converged" in simulated and (simulated["n_converged"] < simulated["n_draws"]).any():
        ax.plot([], [], "ko", mfc="none", ms=5, label="some draws unconverged")


# --------------------------------------------------------------------------- summary


def _angle(value):
    return "none" if math.isnan(value) else f"{value:.4f} rad ({math.degrees(value):.2f}°)"


def _opening_theory(method, sigma, lam, limit):
    """The summary's theory line for the γ < 1 opening angle: the formula that applies to ``method``."""
    angle = transfer.opening_angle(method, sigma, lam, limit=limit)
    if method == "linear":
        return f"arccos(1 − σ) = {_angle(angle)}"
    if method == "ridge":
        return f"arccos((1 − σ)(1 + λ)/√(1 + 2λ)) = {_angle(angle)}"
    if limit == "paper":
        return f"π/3 (FaF Eq. 17) = {_angle(angle)}"
    return f"inf over γ < 1 of θ*(γ) = arccos(c/2) = {_angle(angle)} (approached only as γ → 1⁻, where c → ∞)"


def _fine_tune_lines(sigma, depth):
    """The summary's lines on fine-tuning's gradient-flow sign angle θ* (σ > 0) for an L = ``depth`` network: θ* at
    a few γ, and θ* at γ = ½ against L = 2, L → ∞ and the paper's π/3."""
    probe = np.array([0.1, 0.5, 0.9])
    angles = ", ".join(f"{_angle(a)} at γ = {g:g}"
                       for g, a in zip(probe, transfer.flow_limit_sign_angle(probe, sigma, depth)))
    half = {name: math.degrees(value) for name, value in (
        ("L", transfer.flow_limit_sign_angle(0.5, sigma, depth)), ("2", transfer.flow_limit_sign_angle(0.5, sigma)),
        ("inf", transfer.flow_limit_sign_angle_deep_limit(0.5, sigma)))}
    return [f"gradient-flow limit, L = {depth}: T changes sign at θ* = arccos(c/2) = {angles}; the paper's Eq. 17 "
            "puts it at π/3 for every γ < 1 (docs/errata.md)",
            f"θ* = {half['L']:.1f}° at γ = ½ for L = {depth} (" + (f"L = 2: {half['2']:.1f}°, " if depth != 2 else "")
            + f"L → ∞: {half['inf']:.1f}°; the paper's Eq. 17: 60.0°)"]


def grid_opening(grid):
    """The smallest grid θ with T < 0 at some γ < 1 (NaN if none): where the grid's γ < 1 negative region opens."""
    gamma, theta, t = grid_surface(grid)
    opens = (np.nan_to_num(t, nan=0.0) < 0) & (gamma[None, :] < 1)
    return float(np.broadcast_to(theta[:, None], opens.shape)[opens].min()) if opens.any() else math.nan


def summary(grid, method, sigma, lam=0.0, finite_d=None, limit=None):
    r"""Short text: share of the grid in negative transfer, the γ < 1 opening angle (grid vs theory).

    The grid's opening angle is the smallest grid θ with T < 0 at some γ < 1; it exceeds the n, d → ∞ value
    (:func:`transfertheory.theory.transfer.opening_angle`) by at most about one θ step plus what the γ step misses
    (the region opens with width ∝ √(θ − θ_open)). Only the formulas of ``method`` are printed; for fine-tuning
    the gradient-flow sign angle θ*(γ) of the grid's depth L at a few γ, and at γ = ½ against
    L = 2, L → ∞ and the paper's π/3.
    """
    limit = grid_limit(method, finite_d, limit or grid.limit)
    gamma, theta, t = grid_surface(grid)  # the [θ, γ] matrix and its axes
    defined = ~np.isnan(t)
    negative = defined & (t < 0)
    size = f"d = {finite_d} (exact)" if finite_d is not None else "n, d → ∞"
    lines = [
        f"{_title(method, limit, finite_d, grid.depth)}, σ = {sigma:g}" + (f", λ = {lam:g}" if method == "ridge" else "")
        + f", {size}",
        f"grid: {np.unique(gamma).size} γ in ({gamma.min():.4g}, {gamma.max():.4g}] × {np.unique(theta).size} θ in "
        "[0, π/2]" + (f"; {int((~defined).sum())} points undefined (NaN)" if not defined.all() else ""),
        f"negative transfer (T < 0): {negative.sum() / max(defined.sum(), 1):.2%} of the defined grid",
        f"γ < 1 negative region opens at θ = {_angle(grid_opening(grid))} on the grid; theory (n, d → ∞): "
        + _opening_theory(method, sigma, lam, limit),
    ]
    if method == "finetune" and sigma > 0:
        lines += _fine_tune_lines(sigma, grid.depth)
    return "\n".join(lines)


# --------------------------------------------------------------------------- the written figure


def phase_diagram_output(grid, method, sigma, lam=0.0, finite_d=None, points=None, parameters=None, primary="grid"):
    """The phase diagram of ``grid`` as a :class:`~transfertheory.figures.output.FigureOutput`.

    Simulated ``points`` of :func:`~transfertheory.figures.simulation.simulate_slices`, when given, are drawn on
    the slices and counted in ``agreement``. ``primary="grid"``: ``data`` is the grid and the
    points the extra table ``_simulated`` (the command line's layout); ``primary="points"``: ``data`` is the
    points and the grid the extra table ``_grid`` (the registered figures': the points are the measured data, the
    grid is closed forms). ``parameters``: further entries of the metadata.
    """
    if primary not in ("grid", "points") or (primary == "points" and points is None):
        raise ValueError(f"primary must be 'grid', or 'points' with simulated points, got {primary!r}")
    fig = plot_phase_diagram(grid, method, sigma, lam, finite_d, simulated=points, limit=grid.limit)
    gamma = grid_surface(grid)[0]
    record = dict(method=method, sigma=sigma, lam=lam, finite_d=finite_d, limit=grid.limit, depth=grid.depth,
                  gamma_max=float(gamma.max()), resolution=int(gamma.size), **(parameters or {}))
    lines = [summary(grid, method, sigma, lam, finite_d, grid.limit)]
    table = grid.columns()
    columns = {c: COLUMN_DEFINITIONS[c] for c in table}
    if points is None:
        return FigureOutput(fig, table, columns, record, tuple(lines))
    record.update(sim_d=int(points["d"].iloc[0]), sim_draws=int(points["n_draws"].max()),
                  slice_thetas=sorted(set(points["theta"])), skipped_n=points.attrs.get("skipped_n", []))
    lines += simulation_summary(points)
    grid_table, point_table = ("_grid", table, columns), ("_simulated", points, SIM_COLUMN_DEFINITIONS)
    (_, data, columns), extra = (grid_table, point_table) if primary == "grid" else (point_table, grid_table)
    return FigureOutput(fig, data, columns, record, tuple(lines), extra=(extra,),
                        agreement=agreement_record(points, "transferability"))
