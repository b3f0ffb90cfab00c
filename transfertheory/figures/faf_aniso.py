r"""Transfer with anisotropic inputs (not in the paper; docs/anisotropic.md): the numbers and drawings of the
``faf_aniso`` figure and of the phase diagram under a spectrum (``python -m transfertheory.phase_diagram
--spectrum …``).

The numbers (the deterministic equivalents of :func:`transfertheory.theory.anisotropic.transfer_grid` at the
spectrum's dimension d, θ the Σ-angle):

* :func:`phase_grid` — T(γ, θ) of one transfer method for a spectrum and a teacher family, as a
  :class:`~.phase_grid.PhaseGrid`;
* :func:`boundary_grids` — the same for several power-law decays and teacher placements (the boundaries of the
  ``faf_aniso`` figure);
* :func:`simulate_points` — gradient-flow simulations on one θ slice per (decay, placement), each point compared
  with the Monte Carlo expectation of the limit points at the simulated (n, d)
  (:func:`transfertheory.theory.anisotropic.limit_expectations`), beside the deterministic equivalent;
* :func:`slice_theory` — the deterministic equivalent along those slices (the figure's curves).

The drawings:

* ``faf_aniso`` — how the phase boundary T = 0 of linear transfer and of fine-tuning moves with the decay a of a
  power-law spectrum λ_k ∝ k^(−a) and with where the teachers sit on it (coefficients ∝ k^(−b) on the top or the
  bottom of the spectrum): (a), (b) the boundaries on the (γ, θ) plane (deterministic equivalents, θ the
  Σ-angle); (c), (d) simulated slices at one θ (mean ± SE of the paired R_scratch − R_transfer) against the
  deterministic equivalent at the simulated d (curves) and the Monte Carlo of the limit points (agreement).
* :func:`phase_output` — the transferability diagram of one method under one spectrum and teacher family: (a)
  the sign of T with its T = 0 boundary and FaF's isotropic boundary dashed; (b) slices at θ = π/8, π/4, 3π/8.
"""
from __future__ import annotations

import math

import numpy as np

from ..params import D, DEPTH, GAMMA_MAX, LAM, RESOLUTION, SIGMA
from ..theory import anisotropic as A
from ..theory import spectra as S
from . import stats
from .marks import annotate_convergence, legend_below
from .output import FigureOutput, subplots
from .phase_diagram import grid_opening
from .phase_grid import COLUMN_DEFINITIONS, THETA_MAX, THETA_TICKS, PhaseGrid, grid_axes, grid_surface
from .registry import Figure, register

__all__ = ["NAME", "GRID_COLUMN_DEFINITIONS", "POINT_COLUMN_DEFINITIONS", "phase_grid", "teacher_spec",
           "boundary_grids", "simulate_points", "slice_theory", "build", "plot", "phase_output", "FIGURE"]

NAME = "faf_aniso"
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

    from ..theory.anisotropic import limit_expectations
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


# --------------------------------------------------------------------------- the drawings

_PLACEMENT_STYLE = {"top": "-", "bottom": "--"}
_LABELS = {"linear": "linear transfer", "finetune": "fine-tuning (gradient-flow limit)", "ridge": "ridge transfer"}


def _zero_contour(ax, gamma, theta, t, **style):
    """The T = 0 line of T[θ, γ] (non-finite values left out)."""
    values = np.where(np.isfinite(t), t, np.nan)
    if np.nanmin(values) < 0 < np.nanmax(values):
        ax.contour(gamma, theta, values, levels=[0.0], **style)


def _boundary_panel(ax, grids, method, decays, placements, colours, title):
    for a in decays:
        for place in placements:
            gamma, theta, t = grids[method, a, place]
            if method == "finetune":  # T ≡ 0 for γ ≥ 1 (nothing is carried over): no boundary there
                t = np.where(gamma[None, :] < 1, t, np.nan)
            _zero_contour(ax, gamma, theta, t, colors=[colours[a]], linestyles=[_PLACEMENT_STYLE[place]],
                          linewidths=1.5)
    for a in decays:
        ax.plot([], [], color=colours[a], label=f"a = {a:g}")
    for place in placements:
        ax.plot([], [], "k", ls=_PLACEMENT_STYLE[place], label=f"teachers on the {place}")
    ax.axvline(1.0, color="k", lw=0.6, ls=":")
    ax.set(xlabel="γ = n/d", ylabel="Σ-angle θ", ylim=(0, THETA_MAX), title=title)
    ax.set_yticks(*THETA_TICKS)


def _slice_panel(ax, points, method, decays, colours, theory, title):
    part = points[points["method"] == method]
    for a in decays:
        for place, rows in part[part["decay"] == a].groupby("placement"):
            gamma, values = theory[method, a, place]
            ax.plot(gamma, values, color=colours[a], ls=_PLACEMENT_STYLE[place], lw=1.2)
            ax.errorbar(rows["gamma"], rows["transferability_mean"], yerr=rows["transferability_se"], fmt="o",
                        ms=4, capsize=2, color=colours[a], mfc="white" if place == "bottom" else None,
                        label=f"a = {a:g}, teachers on the {place}")
    ax.axhline(0.0, color="k", lw=0.6)
    ax.axvline(1.0, color="k", lw=0.6, ls=":")
    ax.set(xlabel="γ = n/d", ylabel="T = E[R_scratch − R_transfer]", title=title)
    annotate_convergence(ax, {"target draws": (int(part["n_converged"].sum()), int(part["n_draws"].sum()))})
    low, high = ax.get_ylim()
    ax.set_ylim(max(low, -1.05), min(high, 1.05))


def plot(grids, points, theory, decays, sim_decays, placements, sigma, theta, b):
    """(a), (b) boundaries per decay and placement; (c), (d) simulated slices with the equivalents (module doc)."""
    fig, axes = subplots(2, 2, figsize=(12, 10), layout="constrained")
    colours = {a: f"C{j}" for j, a in enumerate(sorted({*decays, *sim_decays}))}
    _boundary_panel(axes[0, 0], grids, "linear", decays, placements, colours, "(a) linear transfer: T = 0")
    _boundary_panel(axes[0, 1], grids, "finetune", decays, placements, colours, "(b) fine-tuning: T = 0")
    d, draws = int(points["d"].iloc[0]), int(points["n_draws"].max())
    for ax, method, tag in ((axes[1, 0], "linear", "(c)"), (axes[1, 1], "finetune", "(d)")):
        _slice_panel(ax, points, method, sim_decays, colours, theory,
                     f"{tag} {method} at θ = {stats.format_angle(theta)}: simulation ± SE\n(d = {d}, {draws} draws; "
                     f"lines: deterministic equivalent at d = {d})")
    for ax in axes.ravel():
        legend_below(ax, fontsize=8, ncol=2)
    fig.suptitle(f"Transfer with anisotropic inputs: spectrum λ_k ∝ k^(−a), teachers ∝ k^(−{b:g}) on the top or the "
                 f"bottom, σ = {sigma:g}")
    return fig


def build(decays=(0.0, 0.75, 1.5), sim_decays=(0.0, 1.5), placements=("top", "bottom"), b=1.0, sigma=0.2,
          theory_d=200, resolution=121, gamma_max=2.0, d=32, draws=20, gammas=(0.3125, 0.5, 0.6875, 1.375, 2.0),
          theta=math.pi / 4, mc_draws=1000, seed=0, backend=None, progress=None):
    """Simulate and draw ``faf_aniso`` (module docstring); ``data`` is the simulated points, one row per
    (method, decay, placement, γ), each against the Monte Carlo of the limit points."""
    grids = boundary_grids(("linear", "finetune"), sigma, decays, placements, b, theory_d, gamma_max, resolution)
    points = simulate_points(d, draws, gammas, theta, sigma, sim_decays, placements, b, seed, backend, progress,
                                  mc_draws)
    curve = np.linspace(gamma_max / 200, gamma_max, 200)
    fig = plot(grids, points, slice_theory(points, sigma, theta, b, curve), decays, sim_decays, placements, sigma,
               theta, b)
    parameters = dict(decays=list(decays), sim_decays=list(sim_decays), placements=list(placements), b=b,
                      sigma=sigma, theory_d=theory_d, resolution=resolution, gamma_max=gamma_max, d=d, draws=draws,
                      gammas=list(gammas), theta=theta, mc_draws=mc_draws, seed=seed)
    lines = (f"faf_aniso: boundaries for a in {list(decays)} (deterministic equivalents, d = {theory_d}); "
             f"simulated slice θ = {theta:.4g} at d = {d}, {draws} draws, a in {list(sim_decays)}",
             *stats.agreement_lines(points, "transferability", f"d = {d}, {draws} draws, against the Monte Carlo "
                                                                 f"of the limit points ({mc_draws} draws)"))
    return FigureOutput(fig, points, POINT_COLUMN_DEFINITIONS, parameters, lines,
                        agreement=stats.agreement_record(points, "transferability"))


FIGURE = register(Figure(
    name=NAME,
    title="Transfer with anisotropic inputs: phase boundaries against the spectral decay and the teachers' place",
    description="Not in the paper. Inputs x ~ N(0, Σ) with a power-law spectrum λ_k ∝ k^(−a) (tr Σ = d); source "
    "and target teachers with coefficients ∝ k^(−b) on the top or the bottom of the spectrum, at Σ-angle θ; risk "
    "‖β̂ − β_t‖²_Σ. (a), (b) the T = 0 boundaries of linear transfer and fine-tuning on the (γ, θ) plane from the "
    "deterministic equivalents (HMRT 2022); a = 0 is FaF's isotropic diagram. (c), (d) gradient-flow simulations on "
    "one θ slice (mean ± SE) with the deterministic equivalent at the simulated d; the agreement counts compare each "
    "point with the Monte Carlo expectation of the limit points at the simulated size.",
    sources=("FaF Eq. 13", "FaF Thm 3.9"),
    build=build,
    profiles={"quick": dict(),
              "paper": dict(decays=(0.0, 0.5, 1.0, 1.5, 2.0), sim_decays=(0.0, 1.0, 2.0), theory_d=500,
                            resolution=241, d=100, gammas=(0.31, 0.5, 0.69, 1.38, 2.0), mc_draws=2000)},
    paper_sizes="not in any paper (the package's extension of FaF §3 to anisotropic inputs): the paper profile uses "
    "FaF §3's sizes where they apply (d = 100 simulations, L = 2) with more decays and Monte Carlo draws than the "
    "quick one",
))


# --------------------------------------------------------------------------- the command line's diagram


def _phase_figure(grid, iso, method, sigma, spectrum, teacher, d):
    gamma, theta, t = grid_surface(grid)
    fig, (ax_sign, ax_slices) = subplots(1, 2, figsize=(12, 5.2), layout="constrained")
    ax_sign.pcolormesh(gamma, theta, np.sign(t), cmap="RdBu", vmin=-1.5, vmax=1.5, shading="nearest")
    _zero_contour(ax_sign, gamma, theta, t, colors=["k"], linewidths=1.5)
    _zero_contour(ax_sign, *grid_surface(iso), colors=["0.4"], linestyles=["--"], linewidths=1.2)
    ax_sign.plot([], [], "k", label="T = 0 under Σ")
    ax_sign.plot([], [], color="0.4", ls="--", label="T = 0 at Σ = I (FaF)")
    ax_sign.set(xlabel="γ = n/d", ylabel="Σ-angle θ", title="(a) sign of T (red: negative transfer)")
    ax_sign.set_yticks(*THETA_TICKS)
    for j, (th, label) in enumerate(zip(THETA_TICKS[0][1:4], THETA_TICKS[1][1:4])):
        k = int(np.argmin(np.abs(theta - th)))
        ax_slices.plot(gamma, np.where(np.isfinite(t[k]), t[k], np.nan), color=f"C{j}", label=f"θ = {label}")
        iso_t = grid_surface(iso)[2][k]
        ax_slices.plot(gamma, np.where(np.isfinite(iso_t), iso_t, np.nan), color=f"C{j}", ls=":", lw=1)
    ax_slices.plot([], [], "k:", lw=1, label="Σ = I (FaF)")
    ax_slices.axhline(0.0, color="k", lw=0.6)
    ax_slices.set(xlabel="γ = n/d", ylabel="T", ylim=(-1.05, 1.05), title="(b) slices")
    for ax in (ax_sign, ax_slices):
        legend_below(ax, fontsize=8, ncol=2)
    fig.suptitle(f"Transferability, {_LABELS[method]}: spectrum {spectrum}, teachers {teacher}, σ = {sigma:g}, "
                 f"d = {d} (deterministic equivalents)")
    return fig


def phase_output(method, sigma, spectrum, teacher="flat", d=400, gamma_max=2.0, resolution=400, lam=0.0, depth=2):
    """The command line's diagram under a spectrum: a :class:`~.output.FigureOutput` whose data is the tidy grid
    (:data:`~.aniso_GRID_COLUMN_DEFINITIONS`)."""
    grid = phase_grid(method, sigma, spectrum, teacher, d, gamma_max, resolution, lam, depth)
    iso = phase_grid(method, sigma, "isotropic", "flat", d, gamma_max, resolution, lam, depth)
    negative = lambda g: float(np.mean(np.nan_to_num(grid_surface(g)[2], nan=0.0) < 0))  # noqa: E731
    angle = lambda v: "none" if math.isnan(v) else f"{math.degrees(v):.2f}°"  # noqa: E731
    lines = (f"{_LABELS[method]} under spectrum {spectrum}, teachers {teacher}, σ = {sigma:g}"
             + (f", λ = {lam:g}" if method == "ridge" else "") + f", d = {d} (deterministic equivalents)",
             f"negative transfer (T < 0): {negative(grid):.2%} of the grid (Σ = I: {negative(iso):.2%})",
             f"γ < 1 negative region opens at θ = {angle(grid_opening(grid))} (Σ = I: {angle(grid_opening(iso))})")
    parameters = dict(method=method, sigma=sigma, spectrum=str(spectrum), teacher=str(teacher), d=d, lam=lam,
                      depth=depth, gamma_max=gamma_max, resolution=resolution, limit="flow")
    table = grid.columns()
    return FigureOutput(_phase_figure(grid, iso, method, sigma, spectrum, teacher, d), table,
                        {c: GRID_COLUMN_DEFINITIONS[c] for c in table}, parameters, lines)

