r"""Simulated points for the FaF §3 figures: paired statistics and their comparison with exact theory.

Shared by ``python -m transfertheory.phase_diagram --simulate`` (FaF Figs. 1c, 3c)
and the builders :mod:`.faf_fig2`, :mod:`.faf_fig6`, :mod:`.faf_fig7`. The
simulations are gradient-flow runs of deep linear networks
(:func:`transfertheory.sim.deep_linear.run_transfer_experiment`, imported
lazily: the theory-only paths stay import-light).

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
* z = (mean − theory)/SE against the *exact* finite-size expectation at the
  simulated d and n = round(γd) (:mod:`transfertheory.theory.linear`); a point
  *agrees* when |mean − theory| ≤ 4·SE + :data:`ALLOWANCE`.
"""
from __future__ import annotations

import math

import numpy as np

__all__ = [
    "ALLOWANCE",
    "SIM_METHODS",
    "STAT_COLUMNS",
    "simulation_ns",
    "simulate",
    "finetune_reference",
    "transferability_stats",
    "risk_stats",
    "compare",
    "largest_z",
    "agreement_lines",
    "format_angle",
    "add_size_arguments",
    "resolve_size",
    "add_figure_arguments",
    "parse_figure_args",
    "write_and_report",
]

#: Allowance (absolute, in risk units) for the integrator's error at its default rtol = 1e-3: against rtol = 1e-6 the
#: per-draw risks moved by at most 1.5e-3 (fine-tuning, d = 32), 1.3e-3 (d = 64), 5.6e-4 (d = 100), 2.2e-5 (scratch)
#: (benchmarks/integrator_accuracy.py, docs/simulator.md); a bound on every draw bounds every mean. The exact
#: linear-transfer solve has none. Finite α = 1e-5 enters as O(α²).
ALLOWANCE = 2e-3
#: Monte Carlo draws of :func:`finetune_reference` at d ≲ 64 (its SE is then ~1/10 of a 20-draw simulated point's)
REFERENCE_DRAWS = 4000
#: simulator methods run for each transfer method (the scratch run is the paired baseline)
SIM_METHODS = {"linear": ("scratch", "linear"), "ridge": ("scratch", "linear"), "finetune": ("scratch", "finetune")}
#: columns of a statistics table (before :func:`compare` adds the theory)
STAT_COLUMNS = ["gamma", "theta", "n", "d", "sigma", "lam", "method", "mean", "sd", "se", "n_converged", "n_draws"]


def simulation_ns(d, gamma_max, count, min_n=1):
    r"""Target sizes n_k = round(γ_max·d·k/count), k = 1…count, split into (kept, skipped).

    Skipped: |n − d| ≤ 1 (E R_sc = +∞ for σ > 0, and gradient flow does not
    reach its limit in any budget since λ_min(XᵀX/n) → 0) and n < ``min_n``
    (linear transfer needs n ≥ 3). Duplicates are dropped. Returns two sorted
    integer arrays.
    """
    ns = np.unique(np.rint(gamma_max * d * np.arange(1, count + 1) / count).astype(int))
    bad = (np.abs(ns - d) <= 1) | (ns < min_n)
    return ns[~bad], ns[bad]


def simulate(methods, d, ns, thetas, sigma, draws, ridge=(0.0,), seed=0, backend="auto", progress=None):
    """Raw simulator table (one row per run) of ``methods`` at γ = n/d; ``ridge``: the λ of linear transfer."""
    from ..sim.deep_linear import run_transfer_experiment

    return run_transfer_experiment(
        d, np.asarray(ns, dtype=float) / d, thetas, sigma, draws, methods=methods, ridge=ridge, seed=seed,
        backend=backend, progress=progress,
    )


def finetune_reference(n, d, thetas, sigma, draws=None, seed=0):
    r"""Exact finite-size fine-tuning transferability of the gradient-flow limit, by Monte Carlo: (mean, SE) per θ.

    FaF Eq. 142 (hence the finite-size Eq. 17, ``fine_tune_transferability_finite``) is not the gradient-flow
    limit: the carried-over component is rescaled, β_ft = X⁺y + c(I − P)β_s with a per-draw c
    (:func:`transfertheory.theory.linear.fine_tune_limit`, docs/errata.md); c = 1 only asymptotically at σ = 0.
    The expectation of R_scratch − R_ft has no closed form, so it is averaged over ``draws`` Gaussian designs
    (β_s = e₁, β_t = cos θ e₁ + sin θ e₂ by rotation invariance; common draws for all θ). For n ≥ d nothing
    is carried over and T = 0 exactly (SE 0). Default ``draws``: :data:`REFERENCE_DRAWS` up to n·d = 64², then
    fewer in proportion to the cost (at least 500: ≈ 25 s per n at d = 500 on 2 cores).
    """
    from ..theory import linear

    thetas = np.atleast_1d(np.asarray(thetas, dtype=float))
    if draws is None:
        draws = int(np.clip(REFERENCE_DRAWS * 64**2 / (n * d), 500, REFERENCE_DRAWS))
    if n >= d:
        return np.zeros(thetas.size), np.zeros(thetas.size)
    return linear.fine_tune_flow_expectation(n, d, thetas, sigma, draws=draws, seed=seed)[1]


def _plain(raw):
    """Shallow copy of a simulator table without ``attrs``: they hold arrays (β_s, ν), which pandas' joins compare
    with ``==`` and fail on ("truth value of an array is ambiguous")."""
    out = raw.copy(deep=False)
    out.attrs = {}
    return out


def _describe(keys, values):
    """Mean, SD (ddof 1), SE and counts of ``values`` (NaN = unconverged draw) per group of ``keys``."""
    import pandas as pd

    frame = keys.assign(_v=values)
    grouped = frame.groupby(list(keys.columns), sort=True)["_v"]
    out = grouped.agg(mean="mean", sd=lambda v: v.std(ddof=1), n_converged="count", n_draws="size").reset_index()
    out["se"] = out["sd"] / np.sqrt(out["n_converged"])
    return pd.DataFrame(out)


def _finish(stats, method):
    stats.insert(len(stats.columns), "method", method)
    return stats[STAT_COLUMNS].reset_index(drop=True)


def transferability_stats(raw, method):
    r"""Per (γ, θ, λ) statistics of the paired transferability R_scratch − R_transfer.

    ``raw`` is a :func:`simulate` table; ``method`` is ``linear``, ``ridge``
    (the simulator's ``linear`` rows, one λ per row) or ``finetune``. A draw
    whose scratch or transfer run did not converge (or has a non-finite risk)
    is omitted. Columns :data:`STAT_COLUMNS`.
    """
    keys = ["gamma", "theta", "instance"]
    sim = "finetune" if method == "finetune" else "linear"
    raw = _plain(raw)
    scratch = raw.loc[raw["method"] == "scratch", [*keys, "risk", "converged"]]
    both = raw[raw["method"] == sim].merge(scratch, on=keys, how="left", suffixes=("", "_scratch"),
                                           validate="many_to_one")
    ok = both["converged"].astype(bool) & both["converged_scratch"].astype(bool)
    diff = both["risk_scratch"] - both["risk"]
    diff = diff.where(ok & np.isfinite(diff))
    stats = _describe(both[["gamma", "theta", "lam", "n", "d", "sigma"]], diff)
    return _finish(stats, method)


def risk_stats(raw, method):
    """Per (γ, θ, λ) statistics of the risk of one simulator method (unconverged runs omitted)."""
    raw = _plain(raw)
    rows = raw[raw["method"] == method]
    ok = rows["converged"].astype(bool) & np.isfinite(rows["risk"])
    stats = _describe(rows[["gamma", "theta", "lam", "n", "d", "sigma"]], rows["risk"].where(ok))
    return _finish(stats, method)


def compare(stats, theory, prefix, theory_se=0.0):
    """``stats`` with columns renamed ``{prefix}_mean/sd/se`` and ``theory_finite(_se)``, ``z``, ``agrees`` added.

    ``theory``: the exact finite-size expectation at each row (array); ``theory_se`` its Monte Carlo SE (0 for a
    closed form). With s = √(SE² + theory_se²): z = (mean − theory)/s (±inf when s = 0 and they differ, NaN
    without converged draws); ``agrees`` is |mean − theory| ≤ 4·s + :data:`ALLOWANCE`.
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
    out["agrees"] = np.abs(gap) <= 4 * np.nan_to_num(scale, nan=np.inf) + ALLOWANCE
    return out


def largest_z(table, prefix):
    """Index of the row with the largest |z| among rows farther than :data:`ALLOWANCE` from the theory (None if none).

    Rows within the allowance are left out: their SE can be far below the integrator's error (fine-tuning at
    γ > 1 reaches the same unique minimizer as scratch training, T = 0 pathwise, SE ~ 1e-7), so their z measures
    integration error, not statistics.
    """
    gap = np.abs(table[f"{prefix}_mean"] - table["theory_finite"])
    z = table["z"].abs().where(gap > ALLOWANCE)
    return z.idxmax() if z.notna().any() else None


def agreement_lines(table, prefix, what):
    """Summary lines: draws omitted as unconverged, the largest |z| (with its point), points outside 4·SE + allowance."""
    draws, conv = int(table["n_draws"].sum()), int(table["n_converged"].sum())
    lines = [f"simulation ({what}): {len(table)} points, {conv}/{draws} draws converged"
             + (f" — {draws - conv} unconverged draws omitted (hollow markers)" if conv < draws else "")]
    z = largest_z(table, prefix)
    if z is not None:
        worst = table.loc[z]
        lines.append(
            f"largest |z| = {abs(worst['z']):.2f} (sim − exact finite-size theory, in SE) at γ = {worst['gamma']:.4g} "
            f"(n = {int(worst['n'])}, d = {int(worst['d'])}), θ = {format_angle(worst['theta'])}, λ = {worst['lam']:g}: "
            f"sim {worst[f'{prefix}_mean']:.4g} ± {worst[f'{prefix}_se']:.2g} (SE), theory {worst['theory_finite']:.4g}"
            + (f" ± {worst['theory_finite_se']:.1g} (Monte Carlo)" if worst.get("theory_finite_se", 0) > 0 else "")
        )
    near = np.abs(table[f"{prefix}_mean"] - table["theory_finite"]) <= ALLOWANCE
    hidden = table["z"].abs().where(near)
    if hidden.notna().any() and (z is None or hidden.max() > abs(table.loc[z, "z"])):
        lines.append(f"(not ranked: {int(near.sum())} points within {ALLOWANCE:g} of the theory, |z| up to "
                     f"{hidden.max():.3g}, where the SE is below the integrator's error: T = 0 pathwise, e.g. fine-tuning "
                     "at γ > 1, or σ = 0, θ = 0, γ > 1)")
    bad = int((~table["agrees"]).sum())
    lines.append(f"points outside 4·SE + {ALLOWANCE:g} of the exact theory: {bad} of {len(table)}")
    return lines


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


# --------------------------------------------------------------------------- CLI pieces shared by the builders


def add_size_arguments(parser, *, d, draws, paper_d=500, paper_draws=20, prefix=""):
    """Flags ``--{prefix}d``, ``--{prefix}draws``, ``--paper-size``, ``--seed``, ``--backend`` (size defaults None)."""
    parser.add_argument(f"--{prefix}d", type=int, default=None, metavar="D",
                        help=f"simulated input dimension d >= 3 (default {d}; {paper_d} with --paper-size)")
    parser.add_argument(f"--{prefix}draws", type=int, default=None, metavar="K",
                        help=f"target draws per point, >= 2 (default {draws}; {paper_draws} with --paper-size)")
    parser.add_argument("--paper-size", action="store_true",
                        help=f"the paper's size (FaF App. D.1): d = {paper_d}, {paper_draws} draws")
    parser.add_argument("--seed", type=int, default=0, help="simulation seed (default 0)")
    parser.add_argument("--backend", choices=("auto", "numpy", "cupy"), default="auto",
                        help="array backend of the simulator (default auto: CuPy if a GPU is usable)")


def resolve_size(parser, args, *, d, draws, paper_d=500, paper_draws=20, prefix=""):
    """(d, draws) from the flags of :func:`add_size_arguments`; out-of-range values exit 2 via ``parser.error``."""
    key = prefix.replace("-", "_")
    given_d, given_draws = getattr(args, f"{key}d"), getattr(args, f"{key}draws")
    d = given_d if given_d is not None else paper_d if args.paper_size else d
    draws = given_draws if given_draws is not None else paper_draws if args.paper_size else draws
    if d < 3:
        parser.error(f"--{prefix}d must be >= 3, got {d}")
    if draws < 2:
        parser.error(f"--{prefix}draws must be >= 2 (the SD needs two draws), got {draws}")
    return d, draws


def add_figure_arguments(parser, *, d, draws):
    """The builders' common flags: :func:`add_size_arguments`, ``--out`` and ``--format`` (PNG + PDF by default)."""
    from ._io import FORMATS

    add_size_arguments(parser, d=d, draws=draws)
    parser.add_argument("--out", default="figures", metavar="DIR", help="output folder (default figures/)")
    parser.add_argument("--format", choices=sorted(FORMATS), default="both", help="figure format (default both)")


def parse_figure_args(parser, argv, *, d, draws, minimums=(), positive=()):
    """Parse ``argv``; returns ``(args, d, draws)``. Usage errors (exit 2): a float flag that is NaN or ±inf, a flag
    of ``minimums`` ((flag, smallest) pairs) below its smallest value, a flag of ``positive`` that is <= 0."""
    args = parser.parse_args(argv)
    sizes = resolve_size(parser, args, d=d, draws=draws)
    for name, value in vars(args).items():
        if isinstance(value, float) and not math.isfinite(value):
            parser.error(f"--{name.replace('_', '-')} must be finite, got {value}")
    checks = [(flag, value, value >= smallest, f">= {smallest}") for flag, smallest in minimums
              for value in [getattr(args, flag.lstrip("-").replace("-", "_"))]]
    checks += [(flag, value, value > 0, "> 0") for flag in positive
               for value in [getattr(args, flag.lstrip("-").replace("-", "_"))]]
    for flag, value, ok, bound in checks:
        if not ok:
            parser.error(f"{flag} must be {bound}, got {value}")
    return (args, *sizes)


def write_and_report(fig, table, name, args, lines, extra=()):
    """Save ``fig`` + ``table`` (CSV) as ``name`` under ``args.out`` and close ``fig``; print ``lines`` and the
    paths; exit code 0 or 1.

    ``extra``: (suffix, DataFrame) pairs written as ``name{suffix}.csv`` beside it.
    """
    import sys

    import matplotlib.pyplot as plt

    from ._io import save_figure

    try:
        paths = save_figure(fig, table, name, args.out, args.format)
        for suffix, frame in extra:
            paths.append(paths[-1].with_name(f"{name}{suffix}.csv"))
            frame.to_csv(paths[-1], index=False)
    except OSError as err:
        print(f"error: cannot write to {args.out}: {err}", file=sys.stderr)
        return 1
    finally:
        plt.close(fig)
    print("\n".join(lines))
    print("wrote " + ", ".join(str(p) for p in paths))
    return 0
