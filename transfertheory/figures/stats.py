r"""Statistics of simulated points and their comparison with exact finite-size theory (FaF §3 figures).

Conventions (FaF Figs. 1–3, 6: "error bars represent the standard deviation
over 20 draws of the target set"):

* transferability per draw is the paired difference R_scratch − R_transfer of
  the same target draw (same X, ε, β_t); the point is its mean over draws, the
  error bar its SD (ddof = 1), and SE = SD/√(draws) is what the comparison with
  theory uses;
* a draw counts only if every run entering it converged (``converged`` column);
  unconverged draws — near γ = 1 gradient flow has not reached its limit — are
  omitted from the mean and counted in ``n_converged`` < ``n_draws``; plots mark
  such points (hollow markers) and the summaries say how many;
* z = (mean − theory)/s against the *exact* finite-size expectation at the
  simulated d and n = round(γd), s = √(SE² + SE_theory²) (the theory's own SE is
  non-zero only for a Monte Carlo reference); a point *agrees* when
  |mean − theory| ≤ 4·s + allowance.

Why 4·s + allowance: 4 SE would make |z| > 4 a 6e-5 event per point for a normal
mean, but the per-draw risks are right-skewed (the minimum-norm noise term has
only |n − d|/2 + ½ finite moments; a linear or ridge risk is its floor plus a
nearly χ²₁ excess), so a low mean of 20 draws comes with a low SD and z has
heavier tails: measured on the exact limits, 8e-4 to 5e-3 per point for the
transferabilities of FaF Fig. 1's slices and up to 2.6 % for Fig. 2's ridge
risks (docs/figures.md). The count of points outside is a screen for gross
disagreement; the calibrated comparison of these expectations is the claims'
(``faf.thm3.6``–``faf.thm3.9.corrected``: every draw against its own limit, the
formula against 4000 draws of that limit). The allowance
bounds what the computation that produced the number adds on top of the
statistics, and follows that computation: a table of :func:`risk_stats` or
:func:`transferability_stats` records its own in ``attrs["allowance"]``, which
:func:`compare` and the agreement summaries read — the integrator's
:data:`INTEGRATOR_ALLOWANCE` for anything with an integrated run in it (scratch
and fine-tuning risks, every paired transferability, whose scratch part is
integrated), the exact solve's
:data:`~transfertheory.sim.deep_linear.LINEAR_RISK_ALLOWANCE` (1e-8) for a
linear-transfer or ridge risk the simulator solved exactly (``status``
"exact"), where the integrator's 2e-3 would hide errors of several per cent in
small risks.

The intervals of the MeRLin simulation figure (a mean's percentile bootstrap interval, a frequency's Wilson
interval) are :mod:`transfertheory.sim.statistics`'s.

The boundaries of FaF Fig. 4 (where a mean transferability curve changes sign, with a teacher-clustered bootstrap
interval) are :mod:`transfertheory.sim.relu_teacher.summary`'s.
"""
from __future__ import annotations

import math

import numpy as np

__all__ = [
    "INTEGRATOR_ALLOWANCE",
    "Z_BAND",
    "STAT_COLUMNS",
    "transferability_stats",
    "risk_stats",
    "compare",
    "largest_z",
    "agreement_lines",
    "agreement_record",
    "tolerance",
    "format_angle",
]


#: Allowance (absolute, in risk units) for the integrator's error per draw, scratch at its default rtol = 1e-3 and
#: fine-tuning at :data:`~transfertheory.sweep.named.FINE_TUNE_RTOL`, with a margin of ≥ 4 against the exact limit at
#: the figures' points (docs/figures.md, "Tolerance"); a bound on every draw bounds every mean; the finite
#: initialization α = 1e-5 enters as O(α²).
INTEGRATOR_ALLOWANCE = 2e-3
#: the statistical part of the tolerance, in standard errors
Z_BAND = 4.0
#: columns of a statistics table (before :func:`compare` adds the theory)
STAT_COLUMNS = ["gamma", "theta", "n", "d", "sigma", "lam", "method", "mean", "sd", "se", "n_converged", "n_draws"]


def tolerance(allowance):
    """The tolerance with ``allowance``, in words (column definitions, summaries and metadata)."""
    return f"|sim − theory| ≤ {Z_BAND:g}·SE + {allowance:g}"


def _plain(raw):
    """Shallow copy of a simulator table without ``attrs``: they hold arrays (β_s, ν), which pandas' joins compare
    with ``==`` and fail on ("truth value of an array is ambiguous")."""
    out = raw.copy(deep=False)
    out.attrs = {}
    return out


def _describe(rows, values, method, allowance):
    """Mean, SD (ddof 1), SE and counts of ``values`` (NaN = unconverged draw) per (γ, θ, λ) point of ``rows``, as
    the statistics of ``method``: columns :data:`STAT_COLUMNS`, ``attrs["allowance"]`` the ``allowance``."""
    keys = rows[["gamma", "theta", "lam", "n", "d", "sigma"]]
    grouped = keys.assign(_v=values).groupby(list(keys.columns), sort=True)["_v"]
    out = grouped.agg(mean="mean", sd=lambda v: v.std(ddof=1), n_converged="count", n_draws="size").reset_index()
    out["se"] = out["sd"] / np.sqrt(out["n_converged"])
    out["method"] = method
    out = out[STAT_COLUMNS].reset_index(drop=True)
    out.attrs["allowance"] = allowance
    return out


def transferability_stats(raw, method):
    r"""Per (γ, θ, λ) statistics of the paired transferability R_scratch − R_transfer.

    ``raw`` is a simulator table (:func:`transfertheory.figures.simulation.simulate`); ``method`` a transfer
    method of :mod:`transfertheory.theory.methods`, whose ``simulator`` rows are paired with the scratch rows of
    the same draw (ridge: the simulator's ``linear`` rows, one λ per row). A draw whose scratch or transfer run
    did not converge (or has a non-finite risk) is omitted. Columns :data:`STAT_COLUMNS`; the allowance is
    :data:`INTEGRATOR_ALLOWANCE` (the scratch part is integrated).
    """
    from ..theory.methods import get_method

    keys = ["gamma", "theta", "draw"]
    sim = get_method(method).simulator
    raw = _plain(raw)
    scratch = raw.loc[raw["method"] == "scratch", [*keys, "risk", "converged"]]
    both = raw[raw["method"] == sim].merge(scratch, on=keys, how="left", suffixes=("", "_scratch"),
                                           validate="many_to_one")
    ok = both["converged"].astype(bool) & both["converged_scratch"].astype(bool)
    diff = both["risk_scratch"] - both["risk"]
    diff = diff.where(ok & np.isfinite(diff))
    return _describe(both, diff, method, INTEGRATOR_ALLOWANCE)


def risk_stats(raw, method):
    """Per (γ, θ, λ) statistics of the risk of one simulator method (unconverged runs omitted); the allowance is
    the exact solve's when every row was solved exactly (``status`` "exact": linear transfer and ridge), else the
    integrator's."""
    from ..sim.deep_linear import LINEAR_RISK_ALLOWANCE

    raw = _plain(raw)
    rows = raw[raw["method"] == method]
    ok = rows["converged"].astype(bool) & np.isfinite(rows["risk"])
    exact = (rows["status"] == "exact").all()
    return _describe(rows, rows["risk"].where(ok), method, LINEAR_RISK_ALLOWANCE if exact else INTEGRATOR_ALLOWANCE)


def compare(stats, theory, prefix, theory_se=0.0):
    """``stats`` with columns renamed ``{prefix}_mean/sd/se`` and ``theory_finite(_se)``, ``z``, ``agrees`` added.

    ``theory``: the exact finite-size expectation at each row (array); ``theory_se`` its Monte Carlo SE (0 for a
    closed form). With s = √(SE² + theory_se²): z = (mean − theory)/s (±inf when s = 0 and they differ, NaN
    without converged draws); ``agrees`` is |mean − theory| ≤ 4·s + ``stats.attrs["allowance"]`` (kept in the
    result's ``attrs``).
    """
    out = stats.rename(columns={c: f"{prefix}_{c}" for c in ("mean", "sd", "se")})
    mean = out[f"{prefix}_mean"].to_numpy(float)
    theory = np.asarray(theory, dtype=float)
    theory_se = np.broadcast_to(np.asarray(theory_se, dtype=float), theory.shape)
    scale = np.hypot(out[f"{prefix}_se"].to_numpy(float), theory_se)
    gap = mean - theory
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(gap == 0, 0.0, gap / scale)
    out["theory_finite"] = theory
    out["theory_finite_se"] = theory_se
    out["z"] = np.where(np.isnan(gap), np.nan, z)
    out["agrees"] = np.abs(gap) <= Z_BAND * np.nan_to_num(scale, nan=np.inf) + stats.attrs["allowance"]
    return out


def largest_z(table, prefix):
    """Index of the row with the largest |z| among rows farther than the table's allowance from the theory (None if
    none).

    Rows within the allowance are left out: their SE can be far below the integrator's error (fine-tuning at
    γ > 1 reaches the same unique minimizer as scratch training, T = 0 pathwise, SE ~ 1e-7), so their z measures
    integration error, not statistics.
    """
    gap = np.abs(table[f"{prefix}_mean"] - table["theory_finite"])
    z = table["z"].abs().where(gap > table.attrs["allowance"])
    return z.idxmax() if z.notna().any() else None


def agreement_lines(table, prefix, what):
    """Summary lines: draws omitted as unconverged, the largest |z| (with its point), points outside the table's
    :func:`tolerance`."""
    draws, conv = int(table["n_draws"].sum()), int(table["n_converged"].sum())
    lines = [f"simulation ({what}): {len(table)} points, {conv}/{draws} draws converged"
             + (f" — {draws - conv} unconverged draws omitted (hollow markers)" if conv < draws else "")]
    z = largest_z(table, prefix)
    if z is not None:
        worst = table.loc[z]
        lines.append(
            f"largest |z| = {abs(worst['z']):.2f} (sim − exact finite-size theory, in SE) at γ = {worst['gamma']:.4g} "
            f"(n = {int(worst['n'])}, d = {int(worst['d'])}), θ = {format_angle(worst['theta'])}, "
            f"λ = {worst['lam']:g}: "
            f"sim {worst[f'{prefix}_mean']:.4g} ± {worst[f'{prefix}_se']:.2g} (SE), theory {worst['theory_finite']:.4g}"
            + (f" ± {worst['theory_finite_se']:.1g} (Monte Carlo)" if worst.get("theory_finite_se", 0) > 0 else "")
        )
    allowance = table.attrs["allowance"]
    near = np.abs(table[f"{prefix}_mean"] - table["theory_finite"]) <= allowance
    hidden = table["z"].abs().where(near)
    if hidden.notna().any() and (z is None or hidden.max() > abs(table.loc[z, "z"])):
        lines.append(f"(not ranked: {int(near.sum())} points within the allowance {allowance:g} of the theory, |z| up "
                     f"to {hidden.max():.3g}: there the error the allowance bounds can exceed the SE, e.g. T = 0 pathwise for "
                     "fine-tuning at γ > 1 or σ = 0, θ = 0, γ > 1)")
    bad = int((~table["agrees"]).sum())
    lines.append(f"points outside the tolerance {tolerance(allowance)} (exact theory at the simulated size): {bad} of "
                 f"{len(table)}")
    return lines


def agreement_record(table, prefix):
    """Counts for a figure's metadata: points, draws, converged draws, points outside the tolerance, largest |z|."""
    z = largest_z(table, prefix)
    return {
        "tolerance": tolerance(table.attrs["allowance"]),
        "points": int(len(table)),
        "outside": int((~table["agrees"].astype(bool)).sum()),
        "draws": int(table["n_draws"].sum()),
        "converged_draws": int(table["n_converged"].sum()),
        "largest_abs_z": None if z is None else round(float(abs(table.loc[z, "z"])), 3),
    }


def format_angle(theta):
    """θ as a multiple of π/16 when it is one (π/8, 3π/16, π/4, …; 0 as "0"), else 3 significant digits."""
    k = theta / (math.pi / 16)
    if abs(k - round(k)) < 1e-9:
        if round(k) == 0:
            return "0"
        num, den = round(k), 16
        g = math.gcd(num, den)
        num, den = num // g, den // g
        return f"{'' if num == 1 else num}π" + ("" if den == 1 else f"/{den}")
    return f"{theta:.3g}"
