r"""FaF Fig. 2: ridge linear transfer risk against the ridge strength λ at γ = 0.5 (FaF §3.3.1, Thm 3.8).

Model (FaF §3.3.1): a two-layer linear network pretrained by gradient flow on
the population source loss collapses to rank-one features β_s vᵀ (FaF Thm 3.4);
its last layer is then refit on n = γd target samples (x, y = β_tᵀx + ε),
β_sᵀβ_t = cos θ, ε ~ N(0, σ²), with the ridge objective of FaF Eq. 14,
(1/2n)‖ΦW − y‖² + (λ/2)‖W‖². The risk is R = ‖β̂ − β_t‖². Drawn against λ:

* FaF Eq. 15 (n → ∞): R = 1 − cos²θ (1 + 2λ)/(1 + λ)², strictly increasing, λ* = 0;
* the exact finite-n expectation (``get_method("ridge").paper_risk_finite``, :mod:`transfertheory.theory.methods`),
  which lies (sin²θ + σ²)/(n − 2) above Eq. 15 at λ = 0 and *decreases* there,
  with slope −2n(sin²θ + σ²)/((n − 2)(n − 4)): at finite n a small λ > 0 helps,
  by O(1/n²);
* simulated points: :func:`transfertheory.sim.deep_linear.run_transfer_experiment`
  with ``methods=("linear",)``, each λ from its own seed
  (:func:`~transfertheory.figures.simulation.simulate_per_lambda`: its own task
  vectors, pretrained network and target draws, the seed a pure function of the
  figure's seed and λ, listed in the CSV column ``seed``); mean ± SD over draws
  (the paper's error bars). The points are independent: refitting one set of
  draws at every λ would put all 13 points on the same side of the curve (their
  errors correlated), which reads as a bias that is not there.

Panel (b) shows the same curves minus Eq. 15 (points ± SE), where the finite-n
offset and its decay with λ are visible. The caption of FaF Fig. 2 gives only
γ = 0.5 and 20 draws; θ = π/8 is inferred from its axis (R(0) ≈ sin²θ ≈ 0.15,
R(0.6) ≈ 0.27) and σ = 0.2 is taken from Fig. 1's setup.

Build it with ``python -m transfertheory.figures faf_fig2``; see docs/figures.md.
"""
from __future__ import annotations

import math

import numpy as np

from ..sim.deep_linear import LINEAR_RISK_ALLOWANCE
from ..theory.methods import get_method
from . import stats
from .marks import annotate_convergence, errorbar_by_convergence, legend_below
from .output import FigureOutput, subplots
from .registry import Figure, register
from .simulation import simulate_per_lambda

__all__ = ["NAME", "COLUMNS", "COLUMN_DEFINITIONS", "simulate_points", "finite_minimum", "plot", "build"]

NAME = "faf_fig2"
#: the largest ridge strength drawn by default (and the λ axis of a grid without a positive λ)
LAM_MAX = 0.6
RIDGE = get_method("ridge")
#: CSV columns (one row per simulated λ) and their definitions; risks in units of ‖β_t‖² = 1
COLUMN_DEFINITIONS = {
    "lam": "ridge strength λ of the transfer head (FaF Eq. 14)",
    "gamma": "γ = n/d (dimensionless)",
    "n": "target samples n = round(γd)",
    "d": "input dimension d",
    "theta": "angle θ between the unit source and target vectors (rad)",
    "sigma": "label-noise standard deviation σ (label units)",
    "risk_mean": "mean over converged target draws of the ridge linear-transfer risk ‖β̂ − β_t‖² (units of ‖β_t‖²)",
    "risk_sd": "standard deviation over draws (ddof 1): the error bars of panel (a)",
    "risk_se": "standard error of the mean: the error bars of panel (b)",
    "theory_eq15": "FaF Eq. 15, the n → ∞ risk 1 − cos²θ(1 + 2λ)/(1 + λ)²",
    "theory_finite": "exact expected risk at this n (what the simulation is compared with)",
    "theory_finite_se": "its standard error (0: a closed form)",
    "z": "(risk_mean − theory_finite)/risk_se",
    "agrees": f"whether the point is within the tolerance {stats.tolerance(LINEAR_RISK_ALLOWANCE)}",
    "n_converged": "target draws whose run converged",
    "n_draws": "target draws simulated",
    "seed": "seed of this λ's draws (its own: the points are independent), derived from the figure's seed and λ",
}
COLUMNS = list(COLUMN_DEFINITIONS)
#: the axis name of the ridge risk (mathtext)
RISK_LABEL = r"$R_{\mathrm{lt}}^{\lambda}$"


def simulate_points(d, draws, gamma, theta, sigma, lams, seed=0, backend=None, progress=None):
    """Simulated ridge-transfer risk per λ (mean, SD, SE) with Eq. 15 and the exact finite-n theory; :data:`COLUMNS`.

    Each λ draws its own data from its own seed (:func:`~transfertheory.figures.simulation.simulate_per_lambda`),
    so the points' errors are independent; the simulator solves the ridge head exactly (Eq. 14).
    """
    n = round(gamma * d)
    raw = simulate_per_lambda((RIDGE.simulator,), d, [n], [theta], sigma, draws, lams, seed, backend, progress)
    table = stats.risk_stats(raw, RIDGE.simulator)
    table["seed"] = table["lam"].map(raw.groupby("lam")["seed"].first())
    table = stats.compare(table, RIDGE.paper_risk_finite(table["n"].to_numpy(), d, theta, sigma,
                                                          table["lam"].to_numpy()), "risk")
    table["theory_eq15"] = RIDGE.paper_risk(n / d, theta, sigma, table["lam"].to_numpy())
    return table[COLUMNS]


def finite_minimum(theta, sigma, n, d, lam_max, points=601):
    """(λ*, R(λ*), R(0)) of the exact finite-n ridge risk on a grid of ``points`` λ in [0, λ_max]."""
    lam = np.linspace(0.0, lam_max, points)
    risk = RIDGE.paper_risk_finite(n, d, theta, sigma, lam)
    k = int(np.argmin(risk))
    return float(lam[k]), float(risk[k]), float(risk[0])


def plot(table, lam_max):
    """(a) risk vs λ: Eq. 15, exact finite n (dashed), simulation ± SD; (b) the same minus Eq. 15, simulation ± SE."""
    first = table.iloc[0]
    theta, sigma, n, d = float(first["theta"]), float(first["sigma"]), int(first["n"]), int(first["d"])
    lam = np.linspace(0.0, lam_max, 301)
    eq15 = RIDGE.paper_risk(n / d, theta, sigma, lam)
    exact = RIDGE.paper_risk_finite(n, d, theta, sigma, lam)
    complete = (table["n_converged"] == table["n_draws"]).to_numpy()
    fig, axes = subplots(1, 2, figsize=(11, 5.0), layout="constrained")
    for ax, base, base_pts, err, what in (
        (axes[0], 0.0, 0.0, table["risk_sd"], "± SD"),
        (axes[1], eq15, table["theory_eq15"], table["risk_se"], "± SE"),
    ):
        ax.plot(lam, eq15 - base, "k-", lw=1.5, label="theory, n → ∞ (Eq. 15)")
        ax.plot(lam, exact - base, "C3--", lw=1.5, label=f"theory, exact n = {n}")
        y = table["risk_mean"] - base_pts
        errorbar_by_convergence(ax, table["lam"], y, err, complete, fmt="o", ms=4, capsize=2, color="C0",
                                label=f"simulation {what} (d = {d}, {int(table['n_draws'].max())} independent "
                                "draws per λ)", hollow_label="some draws unconverged")
        ax.set(xlabel=r"ridge strength $\lambda$", xlim=(-0.02 * lam_max, 1.02 * lam_max))
    lam_star, r_star, r0 = finite_minimum(theta, sigma, n, d, lam_max)
    axes[0].set(ylabel=f"linear transfer risk {RISK_LABEL}", title="(a) risk vs ridge strength")
    axes[1].axhline(0.0, color="k", lw=0.6)
    axes[1].set(ylabel=f"{RISK_LABEL} − Eq. 15",
                title=f"(b) finite-n excess\nexact minimum at λ* = {lam_star:.3g} ({r_star - r0:+.2g} vs λ = 0)")
    annotate_convergence(axes[0], {"target draws": (int(table["n_converged"].sum()), int(table["n_draws"].sum()))})
    fig.suptitle(f"FaF Fig. 2: ridge linear transfer, γ = {n / d:g} (n = {n}), θ = {stats.format_angle(theta)}, "
                 f"σ = {sigma:g}")
    for ax in axes:
        legend_below(ax, fontsize=8, ncol=2)
    return fig


def _summary(table, lam_max, seed):
    first = table.iloc[0]
    theta, sigma, n, d = float(first["theta"]), float(first["sigma"]), int(first["n"]), int(first["d"])
    draws = int(table["n_draws"].max())
    lam_star, r_star, r0 = finite_minimum(theta, sigma, n, d, lam_max)
    head = (f"FaF Fig. 2: ridge linear transfer, d = {d}, n = {n}, θ = {theta:.4g}, σ = {sigma:g}, {draws} draws, "
            f"λ in [0, {lam_max:g}] ({len(table)} points), seed {seed}")
    if n > 4:
        slope = -2 * n * (math.sin(theta) ** 2 + sigma**2) / ((n - 2) * (n - 4))
        exact = (f"exact finite-n risk: R(0) = {r0:.6g}, minimum R = {r_star:.6g} at λ* = {lam_star:.4g} "
                 f"(Eq. 15 has λ* = 0; slope at 0 = {slope:.4g} for n > 4)")
    else:
        exact = f"exact finite-n risk: R(0) = {r0:.6g}"
    return (head, exact, *stats.agreement_lines(table, "risk", f"d = {d}, {draws} independent draws per λ (own seed "
                                                                "each), error bars ±SD"))


def build(d=64, draws=20, gamma=0.5, theta=math.pi / 8, sigma=0.2, lam_max=LAM_MAX, lams=13, seed=0, backend=None,
          progress=None):
    """Simulate and draw FaF Fig. 2 at ``lams`` λ in [0, ``lam_max``] (or the λ values given as a sequence).

    Returns a :class:`~transfertheory.figures.output.FigureOutput`; its ``data`` has :data:`COLUMNS`, one row per λ.
    """
    grid = np.linspace(0.0, lam_max, lams) if np.ndim(lams) == 0 else np.asarray(lams, float)
    table = simulate_points(d, draws, gamma, theta, sigma, grid, seed, backend, progress)
    shown = float(grid.max()) if grid.max() > 0 else LAM_MAX
    parameters = dict(d=d, draws=draws, gamma=gamma, n=round(gamma * d), theta=theta, sigma=sigma, lams=grid,
                      seed=seed)
    return FigureOutput(plot(table, shown), table, COLUMN_DEFINITIONS, parameters, _summary(table, shown, seed),
                        agreement=stats.agreement_record(table, "risk"))


FIGURE = register(Figure(
    name=NAME,
    title="FaF Fig. 2: ridge linear-transfer risk against the ridge strength λ, γ = 0.5",
    description="Risk of ridge linear transfer (last layer refit with FaF Eq. 14's penalty on the rank-one "
    "pretrained features) against λ: (a) Eq. 15 (n → ∞), the exact finite-n risk (dashed) and gradient-flow "
    "simulations (mean ± SD, each λ on its own independent draws); (b) the same minus Eq. 15 (± SE), where the finite-n excess and its decrease with a "
    "small λ are visible. θ = π/8 and σ = 0.2 are inferred (the caption gives γ = 0.5 and 20 draws only).",
    sources=("FaF Eq. 14", "FaF Eq. 15", "FaF Thm 3.8", "FaF Fig. 2"),
    build=build,
    profiles={"quick": dict(d=64, draws=20), "paper": dict(d=500, draws=20)},
    paper_sizes="the paper's (FaF Fig. 2 caption, App. D.1): γ = 0.5, d = 500, 20 target draws per λ; θ, σ and the "
    "λ grid are not stated and are inferred from the axes (θ = π/8, σ = 0.2)",
))
