r"""Transferability phase diagrams of deep linear networks (FaF §3, Figs. 1 and 3).

Model (THEORY §A): x ~ N(0, I_d), unit source/target vectors with
β_sᵀβ_t = cos θ, labels y = β_tᵀx + ε with ε ~ N(0, σ²), n = γd target
samples. The transferability T = E[R_scratch − R_transfer] (T > 0: transfer
helps) is drawn over the (γ, θ) plane for one of three transfer methods:

* ``linear``   — retrain the last layer on the rank-one pretrained features,
  FaF Eq. 13 (FaF Fig. 1);
* ``finetune`` — train every layer from the pretrained weights, FaF Eq. 17
  (FaF Fig. 3);
* ``ridge``    — last layer with an ℓ₂ penalty λ, FaF Eq. 15 against Eq. 10.

By default the n, d → ∞ closed forms are used; ``--finite-d D`` draws the exact
finite-size expectations at d = D, n = round(γD) instead
(:mod:`transfertheory.theory.linear`).

``--simulate`` adds gradient-flow simulations of the deep linear network
(:func:`simulate_slices`, FaF Figs. 1c and 3c): paired mean ± SD over target
draws on the slices, the exact finite-size theory at the simulated d dashed,
a second CSV with z-scores against it (docs/figures.md). The simulator is
imported only on that path.

Run ``python -m transfertheory.phase_diagram --help``; see docs/phase_diagram.md.
The pieces (:func:`compute_grid`, :func:`plot_phase_diagram`, :func:`summary`,
:func:`simulate_slices`) are reusable: :func:`plot_phase_diagram` overlays
simulated points on the slices when given them.
"""
from __future__ import annotations

import argparse
import math
import sys

import numpy as np

from .figures import FORMATS, _simstats, use_agg
from .theory import linear

__all__ = [
    "METHODS",
    "COLUMNS",
    "SLICE_THETAS",
    "build_parser",
    "compute_grid",
    "evaluate",
    "effective_angle",
    "opening_angle",
    "plot_phase_diagram",
    "summary",
    "simulate_slices",
    "simulation_summary",
    "SIM_COLUMNS",
    "output_name",
    "main",
]

METHODS = ("linear", "finetune", "ridge")
#: The tidy CSV's fixed columns (FaF Fig. 1 data); finite-d grids add ``n``, ``d``, ridge adds ``lam``.
COLUMNS = ["gamma", "theta", "sigma", "method", "transferability", "risk_scratch", "risk_transfer"]
#: θ of the slices in panel (c), as in FaF Figs. 1c and 3c.
SLICE_THETAS = (np.pi / 8, np.pi / 4, 3 * np.pi / 8)
THETA_MAX = np.pi / 2
#: --simulate defaults (about half a minute on a 2-core CPU, docs/phase_diagram.md); --paper-size: d = 500, 20 draws
SIM_D, SIM_DRAWS, SIM_GAMMAS = 64, 20, 8
#: columns of the ``*_simulated.csv`` table written by ``--simulate``
SIM_COLUMNS = ["gamma", "theta", "n", "d", "sigma", "lam", "method", "transferability_mean", "transferability_sd",
               "transferability_se", "theory_finite", "theory_finite_se", "theory_paper_finite", "theory_asymptotic",
               "z", "agrees", "n_converged", "n_draws"]
#: |T| is clipped to this for display only (the paper's z-range); the CSV keeps raw values, ±inf included.
DISPLAY_LIMIT = 1.0
_TITLES = {
    "linear": "linear transfer (FaF Fig. 1, Eq. 13)",
    "finetune": "fine-tuning (FaF Fig. 3, Eq. 17)",
    "ridge": "ridge linear transfer (FaF Eqs. 10, 15)",
}


# --------------------------------------------------------------------------- theory on a grid


def effective_angle(theta, lam):
    r"""Angle θ_eff with sin²θ_eff = ridge risk (FaF Eq. 15): cos θ_eff = |cos θ|·√(1+2λ)/(1+λ).

    Eq. 15 reads 1 − cos²θ(1+2λ)/(1+λ)², so n → ∞ ridge transfer behaves
    exactly like plain linear transfer (Eq. 13) at the angle θ_eff ≥ θ; the
    negative-transfer boundaries of ridge are those of Eq. 13 at θ_eff.
    θ_eff = θ at λ = 0 (θ ≤ π/2).
    """
    lam = np.asarray(lam, dtype=float)
    shrink = np.sqrt(1 + 2 * lam) / (1 + lam)
    return np.arccos(np.clip(np.abs(np.cos(theta)) * shrink, 0.0, 1.0))


def opening_angle(method, sigma, lam=0.0):
    r"""θ at which the γ < 1 negative-transfer region opens (n, d → ∞); NaN if it never does.

    * linear: arccos(1 − σ) (FaF §3.3; needs σ < 1);
    * ridge: cos θ = (1 − σ)(1 + λ)/√(1 + 2λ), i.e. θ_eff = arccos(1 − σ)
      (:func:`effective_angle`); 0 when that cosine is ≥ 1 (the region is
      then open already at θ = 0); NaN for σ ≥ 1;
    * finetune: π/3, independent of σ (FaF Eq. 17).
    """
    if method == "finetune":
        return float(np.pi / 3)
    onset = linear.negative_transfer_onset_angle(sigma)
    if method == "linear" or math.isnan(onset):
        return onset
    cos_open = (1 - sigma) * (1 + lam) / math.sqrt(1 + 2 * lam)
    return 0.0 if cos_open >= 1 else math.acos(cos_open)


def flow_limit_sign_angle(gamma, sigma):
    r"""θ*(γ) = arccos(min(c/2, 1)) where the gradient-flow fine-tuning transferability changes sign.

    FaF Eq. 17 puts the sign change at θ = π/3 for every γ < 1; the actual
    gradient-flow limit rescales the carried-over component by
    c = :func:`~transfertheory.theory.linear.fine_tune_scale` (docs/errata.md),
    so T_ft > 0 iff cos θ > c/2. θ* < π/3 for σ > 0 and → 0 as γ → 1.
    """
    c = np.asarray(linear.fine_tune_scale(gamma, sigma))
    return np.arccos(np.minimum(c / 2, 1.0))


def evaluate(method, gamma, theta, sigma, lam=0.0, finite_d=None):
    r"""(T, E R_scratch, E R_transfer) broadcast over ``gamma`` and ``theta``.

    n, d → ∞ (``finite_d=None``): scratch FaF Eq. 10; linear transfer
    sin²θ (Eq. 12 as n → ∞) and T = Eq. 13; ridge transfer Eq. 15 and
    T = Eq. 10 − Eq. 15; fine-tuning Eqs. 16–17. At γ = 1 the risks are
    +inf for σ > 0 and so is T_lt, while T_ft = 0 (the divergent noise
    cancels pathwise).

    Finite d: n = round(γd) and the exact expectations of THEORY §A1–A5.
    Points outside a formula's domain are NaN: n = 0 (no data) for every
    method, n ≤ 2 for linear and ridge transfer (E‖z‖⁻² = +inf for
    χ²_{1,2}; the ridge moments are implemented for n ≥ 3). |n − d| ≤ 1
    gives +inf risks for σ > 0 (T_lt = +inf, T_ft finite).
    """
    gamma = np.asarray(gamma, dtype=float)
    theta = np.asarray(theta, dtype=float)
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if finite_d is None:
        r_sc = linear.scratch_risk(gamma, sigma)
        if method == "finetune":
            r_tr = linear.fine_tune_risk(gamma, theta, sigma)
            t = linear.fine_tune_transferability(gamma, theta)
        elif method == "linear":
            r_tr = np.sin(theta) ** 2  # Eq. 12 as n → ∞
            t = linear.linear_transferability(gamma, theta, sigma)
        else:
            r_tr = linear.ridge_transfer_risk(theta, lam)
            t = r_sc - r_tr
        return tuple(np.broadcast_arrays(t, r_sc, r_tr))

    d = int(finite_d)
    n = np.rint(gamma * d)
    valid = n >= (1 if method == "finetune" else 3)
    n_ok = np.where(valid, n, 3.0)
    r_sc = linear.scratch_risk_finite(n_ok, d, sigma)
    if method == "finetune":
        r_tr = linear.fine_tune_risk_finite(n_ok, d, theta, sigma)
        t = linear.fine_tune_transferability_finite(n_ok, d, theta)
    else:
        if method == "linear":
            r_tr = linear.linear_transfer_risk(theta, sigma, n_ok)
        else:
            r_tr = linear.ridge_transfer_risk_finite(theta, sigma, n_ok, lam)
        t = r_sc - r_tr  # r_tr is finite for n >= 3, so no inf − inf
    t, r_sc, r_tr = np.broadcast_arrays(t, r_sc, r_tr)
    mask = np.broadcast_to(~valid, t.shape)
    return tuple(np.where(mask, np.nan, v) for v in (t, r_sc, r_tr))


def _axes(gamma_max, resolution):
    """γ = γ_max·k/R, k = 1…R (γ = 1 lands exactly on the grid when γ_max·k = R); θ ∈ [0, π/2]."""
    gamma = gamma_max * np.arange(1, resolution + 1) / resolution
    theta = np.linspace(0.0, THETA_MAX, resolution)
    return gamma, theta


def compute_grid(method, sigma, gamma_max=2.0, resolution=400, lam=0.0, finite_d=None):
    r"""Tidy DataFrame of the transferability on a resolution × resolution (γ, θ) grid.

    Columns :data:`COLUMNS`, plus ``lam`` for ridge and ``n``, ``d`` for a
    finite-d grid; one row per (θ, γ), θ-major. Values as in :func:`evaluate`
    (±inf kept: they are the theory's values at the singular points).
    """
    import pandas as pd

    if not (isinstance(resolution, (int, np.integer)) and resolution >= 2):
        raise ValueError(f"resolution must be an integer >= 2, got {resolution!r}")
    if not (math.isfinite(gamma_max) and gamma_max > 0):
        raise ValueError(f"gamma_max must be in (0, inf), got {gamma_max!r}")
    if finite_d is not None and not (isinstance(finite_d, (int, np.integer)) and finite_d >= 3):
        raise ValueError(f"finite_d must be None or an integer >= 3, got {finite_d!r}")
    if method != "ridge" and lam != 0:
        raise ValueError(f"lam applies to method 'ridge' only, got lam={lam} for method {method!r}")
    gamma, theta = _axes(gamma_max, resolution)
    t, r_sc, r_tr = evaluate(method, gamma[None, :], theta[:, None], sigma, lam, finite_d)
    t = t + 0.0  # −0.0 (T_ft = 0 for γ ≥ 1) → 0.0
    shape = t.shape
    cols = {
        "gamma": np.broadcast_to(gamma[None, :], shape).ravel(),
        "theta": np.broadcast_to(theta[:, None], shape).ravel(),
        "sigma": np.full(t.size, float(sigma)),
        "method": np.full(t.size, method, dtype=object),
        "transferability": t.ravel(),
        "risk_scratch": r_sc.ravel(),
        "risk_transfer": r_tr.ravel(),
    }
    if method == "ridge":
        cols["lam"] = np.full(t.size, float(lam))
    if finite_d is not None:
        cols["n"] = np.broadcast_to(np.rint(gamma * finite_d)[None, :], shape).ravel().astype(int)
        cols["d"] = np.full(t.size, int(finite_d))
    return pd.DataFrame(cols)


def _csv_frame(grid_df):
    """``grid_df`` with low-cardinality float columns pre-formatted: same CSV text, written faster.

    Float → text conversion dominates writing a 160 000-row CSV. Columns such as
    γ, θ, σ and (n, d → ∞) the scratch/transfer risks take ≤ resolution
    distinct values, so each distinct value is formatted once, as pandas
    itself would (``str`` of the float, NaN as an empty field), and the column
    becomes a categorical over those strings. ``compute_grid`` has already
    turned −0.0 into 0.0, so distinct values have distinct text.
    """
    import pandas as pd

    out = {}
    for col in grid_df.columns:
        values = grid_df[col].to_numpy()
        if values.dtype.kind == "f":
            uniq, inverse = np.unique(values, return_inverse=True)
            if uniq.size <= values.size // 4:
                text = uniq.astype(str).astype(object)
                text[np.isnan(uniq)] = ""
                values = pd.Categorical.from_codes(inverse.ravel(), categories=text)
        out[col] = values
    return pd.DataFrame(out)


def _matrix(grid_df, column="transferability"):
    """(γ axis, θ axis, values[θ, γ]) recovered from a tidy grid in any row order."""
    gamma, gi = np.unique(grid_df["gamma"].to_numpy(), return_inverse=True)
    theta, ti = np.unique(grid_df["theta"].to_numpy(), return_inverse=True)
    values = np.full((theta.size, gamma.size), np.nan)
    values[ti, gi] = grid_df[column].to_numpy(dtype=float)
    return gamma, theta, values


# --------------------------------------------------------------------------- figure


def _display(values):
    """Clip to ±DISPLAY_LIMIT for drawing (+inf → the top of the range); NaN stays NaN."""
    return np.clip(values, -DISPLAY_LIMIT, DISPLAY_LIMIT)


def _draw_boundaries(ax, method, sigma, lam, gamma_max, finite_d):
    """Analytic n, d → ∞ boundaries of the negative regions on the top view (γ on x, θ on y)."""
    limit = [] if finite_d is None else ["n, d → ∞"]
    if method == "finetune":
        ax.plot([0, 1], [np.pi / 3] * 2, color="tab:cyan", lw=1.5, label=f"θ = π/3 ({', '.join(['T_ft = 0', *limit])})")
        if sigma > 0:
            gamma = np.linspace(1e-3, 1 - 1e-3, 400)
            ax.plot(gamma, flow_limit_sign_angle(gamma, sigma), color="tab:orange", lw=1.5, ls="--",
                    label="θ* = arccos(c/2): gradient-flow limit (errata)")
        ax.axvline(1.0, color="k", lw=1, ls=":", label="γ = 1 (T_ft = 0 for γ ≥ 1)")
        return
    theta = np.linspace(1e-3, THETA_MAX, 600)
    theta_eff = effective_angle(theta, lam)
    g_minus, g_plus = linear.negative_transfer_interval(theta_eff, sigma)
    g_c = linear.negative_transfer_threshold(theta_eff, sigma)
    notes = (["at θ_eff"] if method == "ridge" else []) + limit
    tag = f" ({', '.join(notes)})" if notes else ""
    ax.plot(g_minus, theta, color="tab:cyan", lw=1.5, label=f"γ₋, γ₊{tag}")
    ax.plot(g_plus, theta, color="tab:cyan", lw=1.5)
    ax.plot(np.where(g_c <= gamma_max, g_c, np.nan), theta, color="tab:green", lw=1.5, label=f"1 + σ²/sin²θ{tag}")
    ax.axvline(1.0, color="k", lw=1, ls=":", label="γ = 1 (E R_sc = ∞)" if sigma > 0 else "γ = 1 (σ = 0: R_sc = 0 beyond)")


def plot_phase_diagram(grid_df, method, sigma, lam=0.0, finite_d=None, simulated=None):
    r"""FaF Fig. 1 / Fig. 3 layout from a :func:`compute_grid` table; returns the Figure.

    (a) the surface T(γ, θ), downsampled to ≤ 60 × 60 facets; (b) its top
    view shaded by sign (red T < 0, blue T > 0, white T = 0, grey undefined)
    with the analytic n, d → ∞ boundaries; (c) slices at θ = π/8, π/4, 3π/8,
    evaluated exactly at those angles on the grid's γ values. Values are
    clipped to ±:data:`DISPLAY_LIMIT` for display only.

    ``simulated``: optional DataFrame with columns ``gamma, theta,
    transferability_mean, transferability_sd``, drawn on panel (c) as points
    with error bars (one colour per θ; a θ equal to a slice's takes its colour).
    """
    use_agg()
    import matplotlib.pyplot as plt
    from matplotlib.colors import ListedColormap

    gamma, theta, t = _matrix(grid_df)
    fig = plt.figure(figsize=(15, 4.6))
    setting = f"σ = {sigma:g}" + (f", λ = {lam:g}" if method == "ridge" else "")
    setting += f", d = {finite_d} (exact)" if finite_d is not None else ", n, d → ∞"
    fig.suptitle(f"Transferability, {_TITLES[method]}: {setting}")

    ax = fig.add_subplot(1, 3, 1, projection="3d")
    gg, tt = np.meshgrid(gamma, theta)
    ax.plot_surface(
        gg, tt, _display(t), rcount=60, ccount=60, cmap="RdBu", vmin=-DISPLAY_LIMIT, vmax=DISPLAY_LIMIT,
        linewidth=0, antialiased=False,
    )
    ax.set(xlabel="γ", ylabel="θ", zlabel="T", zlim=(-DISPLAY_LIMIT, DISPLAY_LIMIT), title="(a)")
    ax.set_yticks([0, np.pi / 6, np.pi / 3, np.pi / 2], ["0", "π/6", "π/3", "π/2"])

    ax = fig.add_subplot(1, 3, 2)
    dg, dt = gamma[1] - gamma[0], theta[1] - theta[0]
    sign = np.where(np.isnan(t), 2.0, np.sign(t))
    ax.imshow(
        sign, origin="lower", aspect="auto", interpolation="nearest", vmin=-1.5, vmax=2.5,
        cmap=ListedColormap(["#d6604d", "white", "#4393c3", "#bdbdbd"]),
        extent=(gamma[0] - dg / 2, gamma[-1] + dg / 2, theta[0] - dt / 2, theta[-1] + dt / 2),
    )
    _draw_boundaries(ax, method, sigma, lam, gamma[-1], finite_d)
    ax.set(xlabel="γ", ylabel="θ", xlim=(gamma[0] - dg / 2, gamma[-1] + dg / 2), ylim=(0, THETA_MAX))
    ax.set_title("(b) sign of T: red < 0, blue > 0" + (", white = 0" if method == "finetune" else ""))
    ax.set_yticks([0, np.pi / 6, np.pi / 3, np.pi / 2], ["0", "π/6", "π/3", "π/2"])
    ax.legend(loc="upper right", fontsize=7, framealpha=0.8)

    ax = fig.add_subplot(1, 3, 3)
    labels = ("π/8", "π/4", "3π/8")
    colors = {}
    for th, label in zip(SLICE_THETAS, labels):
        values, _, _ = evaluate(method, gamma, th, sigma, lam, finite_d)
        (line,) = ax.plot(gamma, np.where(np.isfinite(values), values, np.nan), lw=1.5, label=f"θ = {label}")
        colors[th] = line.get_color()
    if simulated is not None and len(simulated):
        _draw_simulated(ax, simulated, colors, method, sigma, lam, gamma[-1])
    ax.axhline(0.0, color="k", lw=0.6)
    ax.set(xlabel="γ", ylabel="T", xlim=(0, gamma[-1]), ylim=(-1.05 * DISPLAY_LIMIT, 1.05 * DISPLAY_LIMIT))
    ax.set_title("(c) slices" + (" (points: simulation)" if simulated is not None and len(simulated) else ""))
    ax.legend(loc="lower right", fontsize=8)
    fig.subplots_adjust(left=0.03, right=0.98, bottom=0.12, top=0.86, wspace=0.28)
    return fig


def _draw_simulated(ax, simulated, colors, method, sigma, lam, gamma_max):
    r"""Simulated points ± SD on the slices panel; dashed exact finite-d theory when ``simulated`` has a ``d`` column.

    A θ equal to a slice's takes its colour. Points with ``n_converged`` < ``n_draws`` (unconverged draws omitted
    from the mean) are hollow; points without any converged draw cannot be drawn (the summary counts them).
    """
    for th, pts in simulated.groupby("theta", sort=True):
        match = [c for s, c in colors.items() if math.isclose(s, th, abs_tol=1e-9)]
        color = match[0] if match else None
        complete = pts["n_converged"] == pts["n_draws"] if "n_converged" in pts else np.ones(len(pts), bool)
        bars = ax.errorbar(
            pts["gamma"][complete], pts["transferability_mean"][complete], yerr=pts["transferability_sd"][complete],
            fmt="o", ms=4, capsize=2, color=color, label=None if match else f"simulated θ = {th:.3g}",
        )
        color = bars.lines[0].get_color()
        if not complete.all():
            ax.errorbar(
                pts["gamma"][~complete], pts["transferability_mean"][~complete],
                yerr=pts["transferability_sd"][~complete], fmt="o", ms=5, mfc="none", capsize=2, color=color,
            )
        if "d" in pts:
            d = int(pts["d"].iloc[0])
            n = np.arange(1, int(gamma_max * d) + 1)
            exact, _, _ = evaluate(method, n / d, th, sigma, lam, finite_d=d)
            ax.plot(n / d, np.where(np.isfinite(exact), exact, np.nan), ls="--", lw=1, color=color)
        if method == "finetune" and "theory_finite" in pts:
            ax.plot(pts["gamma"], pts["theory_finite"], "x", ms=6, color=color)
    if "d" in simulated:
        what = "Eq. 17" if method == "finetune" else "exact"
        ax.plot([], [], "k--", lw=1, label=f"{what}, d = {int(simulated['d'].iloc[0])}")
    if method == "finetune" and "theory_finite" in simulated:
        ax.plot([], [], "kx", ms=6, label="gradient-flow limit (MC)")
    if "n_converged" in simulated and (simulated["n_converged"] < simulated["n_draws"]).any():
        ax.plot([], [], "ko", mfc="none", ms=5, label="some draws unconverged")


# --------------------------------------------------------------------------- summary


def summary(grid_df, method, sigma, lam=0.0, finite_d=None):
    r"""Short text: share of the grid in negative transfer, the γ < 1 opening angle (grid vs theory), arccos(1 − σ).

    The grid's opening angle is the smallest grid θ with T < 0 at some γ < 1;
    it exceeds the n, d → ∞ value (:func:`opening_angle`) by at most about one
    θ step plus what the γ step misses (the region opens with width
    ∝ √(θ − θ_open)).
    """
    t = grid_df["transferability"].to_numpy(dtype=float)
    gamma = grid_df["gamma"].to_numpy()
    theta = grid_df["theta"].to_numpy()
    defined = ~np.isnan(t)
    negative = defined & (t < 0)
    n_gamma, n_theta = np.unique(gamma).size, np.unique(theta).size
    opens = negative & (gamma < 1)
    grid_open = float(theta[opens].min()) if opens.any() else math.nan
    theory_open = opening_angle(method, sigma, lam)
    onset = linear.negative_transfer_onset_angle(sigma)
    size = f"d = {finite_d} (exact)" if finite_d is not None else "n, d → ∞"
    lines = [
        f"{_TITLES[method]}, σ = {sigma:g}" + (f", λ = {lam:g}" if method == "ridge" else "") + f", {size}",
        f"grid: {n_gamma} γ in ({gamma.min():.4g}, {gamma.max():.4g}] × {n_theta} θ in [0, π/2]"
        + (f"; {int((~defined).sum())} points undefined (NaN)" if not defined.all() else ""),
        f"negative transfer (T < 0): {negative.sum() / max(defined.sum(), 1):.2%} of the defined grid",
        f"γ < 1 negative region opens at θ = {_angle(grid_open)} on the grid; theory (n, d → ∞): {_angle(theory_open)}",
        f"arccos(1 − σ) = {_angle(onset)}" + ("" if method == "linear" else " (the linear-transfer opening angle)"),
    ]
    if method == "finetune" and sigma > 0:
        probe = np.array([0.1, 0.5, 0.9])
        angles = ", ".join(f"{_angle(a)} at γ = {g:g}" for g, a in zip(probe, flow_limit_sign_angle(probe, sigma)))
        lines.append(f"gradient-flow limit (docs/errata.md): T_ft changes sign at θ* = arccos(c/2) = {angles}, not π/3")
    return "\n".join(lines)


def _angle(value):
    return "none" if math.isnan(value) else f"{value:.4f} rad ({math.degrees(value):.2f}°)"


# --------------------------------------------------------------------------- simulation


def _min_n(method):
    """Smallest n with a finite exact transfer risk: 3 for linear/ridge transfer (E‖z‖⁻²), 1 for fine-tuning."""
    return 1 if method == "finetune" else 3


def simulate_slices(method, sigma, d=SIM_D, draws=SIM_DRAWS, n_gammas=SIM_GAMMAS, gamma_max=2.0, lam=0.0,
                    thetas=SLICE_THETAS, seed=0, backend="auto", progress=None):
    r"""Simulated transferability on the slices, against the exact finite-size theory at the simulated d.

    Gradient-flow runs of the FaF deep linear model (L = 2, α = 1e-5;
    :mod:`transfertheory.sim.deep_linear`) at n = round(γ_max·d·k/n_gammas),
    k = 1…n_gammas, skipping |n − d| ≤ 1 (and n < 3 for linear/ridge transfer):
    there the exact risk is +inf for σ > 0 and gradient flow does not reach its
    limit. Per (γ, θ): mean, SD and SE over ``draws`` target draws of the paired
    difference R_scratch − R_transfer (:func:`~transfertheory.figures._simstats.transferability_stats`);
    ``theory_paper_finite`` = :func:`evaluate` at ``finite_d=d`` (the paper's formula at finite size) and
    ``theory_asymptotic`` its n, d → ∞ value; ``theory_finite`` = the exact expectation of the gradient-flow
    limit — the same as ``theory_paper_finite`` for linear and ridge transfer, a Monte Carlo
    (:func:`~transfertheory.figures._simstats.finetune_reference`, SE in ``theory_finite_se``) for fine-tuning,
    whose limit is not FaF Eq. 142 (docs/errata.md); z and ``agrees`` against it
    (:func:`~transfertheory.figures._simstats.compare`).
    Columns :data:`SIM_COLUMNS`; ``attrs["skipped_n"]`` lists the skipped n.
    """
    ns, skipped = _simstats.simulation_ns(d, gamma_max, n_gammas, min_n=_min_n(method))
    if ns.size == 0:
        raise ValueError(f"no simulable n on the γ grid (d = {d}, {n_gammas} points up to γ = {gamma_max:g})")
    raw = _simstats.simulate(_simstats.SIM_METHODS[method], d, ns, thetas, sigma, draws, (lam,), seed, backend,
                             progress)
    stats = _simstats.transferability_stats(raw, method)
    paper = evaluate(method, stats["gamma"], stats["theta"], sigma, lam, finite_d=d)[0] + 0.0  # −0.0 → 0.0
    if method == "finetune":  # Eq. 17 is not the gradient-flow limit (docs/errata.md): Monte Carlo of the true one
        theory, theory_se = np.empty(len(stats)), np.empty(len(stats))
        for n, rows in stats.groupby("n").groups.items():
            at = stats.index.get_indexer(rows)
            theory[at], theory_se[at] = _simstats.finetune_reference(int(n), d, stats["theta"].iloc[at], sigma,
                                                                     seed=seed)
    else:
        theory, theory_se = paper, 0.0
    table = _simstats.compare(stats, theory, "transferability", theory_se)
    table["theory_paper_finite"] = paper
    table["theory_asymptotic"] = evaluate(method, table["gamma"], table["theta"], sigma, lam)[0] + 0.0
    table = table[SIM_COLUMNS]
    table.attrs["skipped_n"] = [int(n) for n in skipped]
    return table


def simulation_summary(table):
    """Summary lines of :func:`simulate_slices`: skipped n, convergence, the largest |z| against exact theory."""
    skipped = table.attrs.get("skipped_n", [])
    lines = _simstats.agreement_lines(table, "transferability", f"d = {int(table['d'].iloc[0])}, "
                                      f"{int(table['n_draws'].max())} draws per point, error bars ±SD")
    if skipped:
        lines.insert(1, f"not simulated: n = {', '.join(map(str, skipped))} (|n − d| ≤ 1 or n too small)")
    return lines


# --------------------------------------------------------------------------- CLI


def output_name(method, sigma, lam=0.0, finite_d=None):
    """``phase_diagram_{method}_sigma{σ}`` + ``_lam{λ}`` (ridge) + ``_d{D}`` (finite d)."""
    name = f"phase_diagram_{method}_sigma{sigma:g}"
    if method == "ridge":
        name += f"_lam{lam:g}"
    if finite_d is not None:
        name += f"_d{finite_d}"
    return name


def build_parser():
    """The ``python -m transfertheory.phase_diagram`` argument parser (flags of docs/phase_diagram.md)."""
    parser = argparse.ArgumentParser(
        prog="python -m transfertheory.phase_diagram",
        description="Transferability phase diagram of deep linear networks (FaF §3): "
        "Fig. 1 (linear transfer), Fig. 3 (fine-tuning) or ridge transfer. Writes the figure and a tidy CSV "
        "of the grid, prints a summary.",
    )
    parser.add_argument("--noise", type=float, default=0.2, metavar="SIGMA", help="label-noise sd σ >= 0 (default 0.2)")
    parser.add_argument("--method", choices=METHODS, default="linear", help="transfer method (default linear)")
    parser.add_argument("--lam", type=float, default=0.0, metavar="LAMBDA", help="ridge strength λ >= 0 (ridge only)")
    parser.add_argument(
        "--finite-d", type=int, default=None, metavar="D",
        help="exact finite-size surface at d = D >= 3, n = round(γD) (default: n, d → ∞)",
    )
    parser.add_argument("--gamma-max", type=float, default=2.0, metavar="G", help="largest γ = n/d (default 2)")
    parser.add_argument("--resolution", type=int, default=400, metavar="N", help="grid points per axis, >= 2 (default 400)")
    parser.add_argument("--out", default="figures", metavar="DIR", help="output folder (default figures/)")
    parser.add_argument("--format", choices=sorted(FORMATS), default="png", help="figure format (default png)")
    sim = parser.add_argument_group(
        "simulation", "gradient-flow runs of the deep linear network (L = 2, α = 1e-5) drawn on the slices (c) as "
        "mean ± SD over target draws, with the exact finite-size theory at the simulated d dashed; writes "
        "NAME_simulated.csv and prints the largest |z| against that theory")
    sim.add_argument("--simulate", action="store_true", help="overlay simulated points (FaF Figs. 1c, 3c)")
    sim.add_argument("--sim-gammas", type=int, default=None, metavar="M",
                     help=f"γ points per slice, γ = γ_max·k/M, k = 1…M (|n − d| <= 1 skipped; default {SIM_GAMMAS})")
    _simstats.add_size_arguments(sim, d=SIM_D, draws=SIM_DRAWS, prefix="sim-")
    return parser


def _validate(parser, args):
    """Range checks argparse cannot express; errors exit 2 with the usage line."""
    for flag, value in (("--noise", args.noise), ("--lam", args.lam), ("--gamma-max", args.gamma_max)):
        if not math.isfinite(value):
            parser.error(f"{flag} must be finite, got {value}")
    if args.noise < 0:
        parser.error(f"--noise must be >= 0, got {args.noise:g}")
    if args.lam < 0:
        parser.error(f"--lam must be >= 0, got {args.lam:g}")
    if args.lam != 0 and args.method != "ridge":
        parser.error("--lam applies to --method ridge only")
    if args.gamma_max <= 0:
        parser.error(f"--gamma-max must be > 0, got {args.gamma_max:g}")
    if args.resolution < 2:
        parser.error(f"--resolution must be >= 2, got {args.resolution}")
    if args.finite_d is not None and args.finite_d < 3:
        parser.error(f"--finite-d must be >= 3, got {args.finite_d}")
    given = [flag for flag, value in (("--sim-d", args.sim_d), ("--sim-draws", args.sim_draws),
                                      ("--sim-gammas", args.sim_gammas), ("--paper-size", args.paper_size or None))
             if value is not None]
    if given and not args.simulate:
        parser.error(f"{', '.join(given)} applies with --simulate only")
    args.sim_gammas = SIM_GAMMAS if args.sim_gammas is None else args.sim_gammas
    args.sim_d, args.sim_draws = _simstats.resolve_size(parser, args, d=SIM_D, draws=SIM_DRAWS, prefix="sim-")
    if args.sim_gammas < 1:
        parser.error(f"--sim-gammas must be >= 1, got {args.sim_gammas}")
    min_n = _min_n(args.method)
    if args.simulate and _simstats.simulation_ns(args.sim_d, args.gamma_max, args.sim_gammas, min_n)[0].size == 0:
        parser.error(f"no simulable n = round(γ_max·d·k/M) >= {min_n} with |n − d| >= 2 "
                     f"(d = {args.sim_d}, M = {args.sim_gammas}, γ_max = {args.gamma_max:g})")


def main(argv=None):
    """Entry point: 0 on success, 1 if the outputs cannot be written; usage errors exit 2 (argparse)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    _validate(parser, args)
    grid = compute_grid(args.method, args.noise, args.gamma_max, args.resolution, args.lam, args.finite_d)
    sims = None
    if args.simulate:
        sims = simulate_slices(args.method, args.noise, args.sim_d, args.sim_draws, args.sim_gammas, args.gamma_max,
                               args.lam, seed=args.seed, backend=args.backend)
    fig = plot_phase_diagram(grid, args.method, args.noise, args.lam, args.finite_d, simulated=sims)
    name = output_name(args.method, args.noise, args.lam, args.finite_d)
    lines = [summary(grid, args.method, args.noise, args.lam, args.finite_d)]
    if sims is not None:
        lines += simulation_summary(sims)
    extra = [] if sims is None else [("_simulated", sims)]
    return _simstats.write_and_report(fig, _csv_frame(grid), name, args, lines, extra)


if __name__ == "__main__":
    sys.exit(main())
