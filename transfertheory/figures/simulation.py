r"""Simulated points of the FaF §3 figures: which n to simulate, the simulator call, slices against exact theory.

The simulations are gradient-flow runs of the FaF deep linear network (L = 2 by
default, any depth L ≥ 2 on request; initialization scale :func:`simulation_alpha`;
:func:`transfertheory.sim.deep_linear.run_transfer_experiment`, imported lazily so
that theory-only figures stay import-light). For each transfer method the record of :mod:`transfertheory.theory.methods` says which
simulator methods run (scratch, the paired baseline, and ``record.simulator``),
whether λ is passed (ridge), the smallest n with a finite expected risk, and
which expectation a simulation is compared with:
``record.flow_transferability_finite`` — the exact finite-size expectation of
what gradient flow converges to (a closed form, or for fine-tuning a Monte
Carlo of the corrected limit, whose SE enters the comparison).
"""
from __future__ import annotations

import contextvars

import numpy as np

from ..params import DEPTH
from ..sweep.named import FINE_TUNE_RTOL, GAMMA_MAX, SIM_GAMMAS, SLICE_THETAS, named_profile, simulation_ns
from ..theory.methods import get_method
from . import stats

__all__ = [
    "SLICE_THETAS",
    "SIM_D",
    "SIM_DRAWS",
    "SIM_GAMMAS",
    "SIM_COLUMNS",
    "SIM_COLUMN_DEFINITIONS",
    "simulation_ns",
    "sweep_sizes",
    "simulation_alpha",
    "simulate",
    "SWEEP_RUNNER",
    "PAPER_SIZES",
    "simulate_slices",
    "simulation_summary",
    "LAMBDA_SEED_KEY",
    "lambda_seed",
    "simulate_per_lambda",
]

#: how the paper profile of FaF Figs. 1, 3 and 6 relates to the paper (a figure's ``paper_sizes``)
PAPER_SIZES = ("the paper's (FaF App. D.1, captions): d = 500, L = 2, 20 target draws per point; the γ points are the "
    "package's (8 per slice with n = round(2dk/8), no n with |n − d| ≤ 1; the paper does not list its own), and "
    "training runs to the gradient-flow limit where the paper stops gradient descent at 1e5 steps of η = 1e-3 or "
    "loss 1e-6 (flow time 200 in the package's units, whose losses carry a ½)")


def sweep_sizes(name, profile):
    """The simulation sizes of a FaF §3 figure at ``profile`` (keywords of its ``build``), declared in the named
    sweep ``name`` (:mod:`transfertheory.sweep.named`): d, target draws, the γ points and the largest γ."""
    sizes = named_profile(name, profile)
    return dict(d=sizes["d"], draws=sizes["draws"], gammas=SIM_GAMMAS, gamma_max=GAMMA_MAX)


#: default simulation size of the slices: FaF Fig. 1's quick size (d = 64, 20 target draws, 8 γ points)
SIM_D, SIM_DRAWS = (sweep_sizes("faf_fig1", "quick")[key] for key in ("d", "draws"))
#: columns of a :func:`simulate_slices` table, with their definitions (all risks in units of ‖β_t‖² = 1)
SIM_COLUMN_DEFINITIONS = {
    "gamma": "γ = n/d, target samples per input dimension (dimensionless)",
    "theta": "angle θ between the unit source and target vectors (rad)",
    "n": "target samples n = round(γd)",
    "d": "input dimension d",
    "sigma": "label-noise standard deviation σ (label units)",
    "lam": "ridge strength λ of the transfer head (FaF Eq. 14; 0 without ridge)",
    "method": "transfer method (scratch is the paired baseline)",
    "transferability_mean": "mean over converged target draws of R_scratch − R_transfer, R = ‖β̂ − β_t‖² "
                            "(dimensionless, units of ‖β_t‖²)",
    "transferability_sd": "standard deviation over draws (ddof 1): the error bars",
    "transferability_se": "standard error of the mean, SD/√(converged draws)",
    "theory_finite": "exact expectation of T at this n, d for the gradient-flow limit (what the simulation is "
                     "compared with)",
    "theory_finite_se": "Monte Carlo standard error of theory_finite (0 for a closed form)",
    "theory_paper_finite": "the paper's formula at this n, d (differs from theory_finite for fine-tuning only)",
    "theory_asymptotic": "n, d → ∞ limit of T at this γ, θ for the gradient-flow limit",
    "theory_paper_asymptotic": "the paper's n, d → ∞ formula at this γ, θ",
    "z": "(transferability_mean − theory_finite)/√(SE² + theory_finite_se²)",
    "agrees": f"whether the point is within the tolerance {stats.tolerance(stats.INTEGRATOR_ALLOWANCE)}",
    "n_converged": "target draws whose every run converged (the others are left out of the mean)",
    "n_draws": "target draws simulated",
}
SIM_COLUMNS = list(SIM_COLUMN_DEFINITIONS)


#: where :func:`simulate` runs: None (default) in this process; a :class:`transfertheory.sweep.runner.SweepRunner`
#: through the sweep engine, one point per (γ, θ) kept in its store (``python -m transfertheory.figures --paper``)
SWEEP_RUNNER = contextvars.ContextVar("sweep_runner", default=None)


def simulation_alpha(depth):
    """Initialization scale α of an L-layer simulation: FaF App. D.1's 1e-5 at L = 2; 10^(−3/(L − 2)) for L ≥ 3.

    From α, gradient flow leaves the saddle at the origin after a time ~ α^(2−L) (L ≥ 3), so at App. D.1's α a deeper
    network never converges within the simulator's default ``max_time`` = 1e4; this α keeps that time ~ 10³
    (L = 3: 1e-3, L = 4: 0.032), at the price of an O(α) offset from the α → 0 limit that grows with L.
    """
    depth = DEPTH.scalar(depth)
    return 1e-5 if depth == 2 else 10.0 ** (-3.0 / (depth - 2))


def _sweep_rows(runner, methods, d, ns, thetas, sigma, draws, lam, seed, depth, inputs, flow):
    """:func:`simulate` through the sweep engine: the ``faf_linear`` experiment, one point per (γ, θ); ``inputs``:
    its ``spectrum`` and ``teacher`` fields when given, ``flow`` its integrator fields."""
    axes = dict(gamma=[int(n) / d for n in ns], theta=[float(t) for t in thetas])
    fixed = dict(d=int(d), sigma=float(sigma), draws=int(draws), methods=list(methods), lam=float(lam),
                 depth=int(depth), alpha=simulation_alpha(depth), **inputs, **flow)
    return runner.rows(dict(experiment="faf_linear", seed=int(seed), fixed=fixed, axes=axes), f"faf_linear d={d}")


def simulate(methods, d, ns, thetas, sigma, draws, ridge=(0.0,), seed=0, backend=None, progress=None, depth=2,
             spectrum=None, teacher=None):
    """Raw simulator table (one row per run) of simulator ``methods`` at γ = n/d for an L = ``depth`` network;
    ``ridge``: λ of linear transfer; ``spectrum``, ``teacher``: anisotropic inputs (text specs of
    :mod:`transfertheory.theory.spectra`; None: isotropic inputs, the random teacher draw). A run with fine-tuning
    integrates its flows at :data:`~transfertheory.sweep.named.FINE_TUNE_RTOL`, any other at the simulator's
    default tolerance.

    With a :data:`SWEEP_RUNNER` set and a single λ, the points run through the sweep engine: each (γ, θ) point
    draws from its own seed, so the numbers are statistically, not bitwise, those of the in-process run (several
    λ stay in process: they share their target draws there).
    """
    runner = SWEEP_RUNNER.get()
    inputs = {k: v for k, v in (("spectrum", spectrum), ("teacher", teacher)) if v is not None}
    flow = dict(rtol=FINE_TUNE_RTOL) if "finetune" in methods else {}
    if runner is not None and len(ridge) == 1:
        return _sweep_rows(runner, methods, d, ns, thetas, sigma, draws, ridge[0], seed, depth, inputs, flow)
    from ..sim.deep_linear import run_transfer_experiment

    return run_transfer_experiment(
        d, np.asarray(ns, dtype=float) / d, thetas, sigma, draws, depth=depth, alpha=simulation_alpha(depth),
        methods=methods, ridge=ridge, seed=seed, backend=backend, progress=progress, flow=flow, **inputs,
    )


def _flow_reference(record, table, d, sigma, lam, seed, depth):
    """(mean, SE) of ``record.flow_transferability_finite`` for every row of ``table``, one call per n."""
    mean, se = np.empty(len(table)), np.empty(len(table))
    for n, rows in table.groupby("n").groups.items():
        at = table.index.get_indexer(rows)
        m, s = record.flow_transferability_finite(int(n), d, table["theta"].to_numpy()[at], sigma, lam, seed=seed,
                                                  depth=depth)
        mean[at], se[at] = m, s
    return mean, se


def simulate_slices(method, sigma, d=SIM_D, draws=SIM_DRAWS, n_gammas=SIM_GAMMAS, gamma_max=2.0, lam=0.0,
                    thetas=SLICE_THETAS, seed=0, backend=None, progress=None, depth=2):
    r"""Simulated transferability at γ = γ_max·k/n_gammas on the angles ``thetas``, against exact theory at d.

    Gradient-flow runs at n = round(γ_max·d·k/n_gammas), k = 1…n_gammas, skipping |n − d| ≤ 1 and
    n < ``record.min_n`` (:func:`simulation_ns`). Per (γ, θ): mean, SD and SE over ``draws`` target draws of the
    paired difference R_scratch − R_transfer (:func:`~transfertheory.figures.stats.transferability_stats`),
    compared (:func:`~transfertheory.figures.stats.compare`) with ``record.flow_transferability_finite`` — for
    fine-tuning a Monte Carlo of the gradient-flow limit, since the paper's Eq. 17 is not that limit (its value
    stays in ``theory_paper_finite``). ``depth``: the network's number of layers L (≥ 2), which the gradient-flow
    limit of fine-tuning depends on. Columns :data:`SIM_COLUMNS`; ``attrs["skipped_n"]`` lists the skipped n,
    ``attrs["depth"]`` the depth.
    """
    record = get_method(method)
    lam = float(lam) if record.takes_lambda else 0.0
    ns, skipped = simulation_ns(d, gamma_max, n_gammas, min_n=record.min_n)
    if ns.size == 0:
        raise ValueError(f"no simulable n on the γ grid (d = {d}, {n_gammas} points up to γ = {gamma_max:g})")
    # the transfer runs and their paired scratch baseline at the same draws (rtol: fine-tuning's when it is one)
    raw = simulate(("scratch", record.simulator), d, ns, thetas, sigma, draws, (lam,), seed, backend, progress, depth)
    table = stats.transferability_stats(raw, method)
    theory, theory_se = _flow_reference(record, table, d, sigma, lam, seed, depth)
    table = stats.compare(table, theory, "transferability", theory_se)
    n, theta, gamma = table["n"].to_numpy(), table["theta"].to_numpy(), table["gamma"].to_numpy()
    table["theory_paper_finite"] = record.paper_transferability_finite(n, d, theta, sigma, lam) + 0.0  # −0 → 0
    table["theory_asymptotic"] = record.flow_transferability(gamma, theta, sigma, lam, depth=depth) + 0.0
    table["theory_paper_asymptotic"] = record.paper_transferability(gamma, theta, sigma, lam) + 0.0
    table = table[SIM_COLUMNS]
    table.attrs["skipped_n"] = [int(k) for k in skipped]
    table.attrs["depth"] = depth
    return table


def simulation_summary(table):
    """Summary lines of :func:`simulate_slices`: skipped n, convergence, the largest |z|, points outside."""
    skipped = table.attrs.get("skipped_n", [])
    lines = stats.agreement_lines(table, "transferability", f"d = {int(table['d'].iloc[0])}, "
                                  f"{int(table['n_draws'].max())} draws per point, error bars ±SD")
    if skipped:
        lines.insert(1, f"not simulated: n = {', '.join(map(str, skipped))} (|n − d| ≤ 1 or n too small)")
    return lines


#: first key of the per-λ seeds of :func:`lambda_seed` (no other draw of the figures' simulations uses it)
LAMBDA_SEED_KEY = 5


def lambda_seed(seed, lam):
    """The seed of the simulation at ridge strength λ ≥ 0: :func:`~transfertheory.sim.seeding.derive_seed` of
    ``seed`` under the key (:data:`LAMBDA_SEED_KEY`, the bits of λ as a float64) — a pure function of (seed, λ),
    so a λ's draws do not depend on the other λ of the grid, and two different λ never share their draws."""
    from ..sim.seeding import derive_seed

    bits = int(np.float64(float(lam) + 0.0).view(np.uint64))  # + 0.0: −0 and 0 are one λ
    return derive_seed(seed, LAMBDA_SEED_KEY, bits)


def simulate_per_lambda(methods, d, ns, thetas, sigma, draws, lams, seed=0, backend=None, progress=None, depth=2):
    """:func:`simulate` once per λ in ``lams``, each from its own seed :func:`lambda_seed` (its own task vectors,
    pretrained network and target draws): the λ points are statistically independent, unlike one call with
    ``ridge=lams``, where every λ refits the same draws and the points' errors are correlated (all on one side
    of the theory). Returns the raw tables concatenated, with a column ``seed`` (each λ's seed)."""
    import pandas as pd

    frames = []
    for lam in lams:
        point_seed = lambda_seed(seed, lam)
        raw = simulate(methods, d, ns, thetas, sigma, draws, (float(lam),), point_seed, backend, progress, depth)
        frames.append(stats._plain(raw).assign(seed=point_seed))  # without attrs, which pd.concat would compare
    return pd.concat(frames, ignore_index=True)
