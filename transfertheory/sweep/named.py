"""The named sweeps shipped with the package: the simulations behind each paper figure and claim profile.

Each is a spec mapping (:mod:`.spec`) with a ``quick`` profile (the figures' CPU sizes) and a ``paper`` profile
(the papers' sizes); ``faf_fig4`` also has a ``mid`` profile between them, a CPU size at which its boundary can be
judged (the figure's ``full`` profile), ``mtl`` a ``full`` one. These are where the sizes are declared: the figures
and claims that simulate a named sweep's points read their sizes from it (:func:`named_profile`). The FaF §3 sweeps
simulate the slices of Figs. 1, 3 and 6 and the cells of Fig. 7: γ = n/d at n = round(2dk/8), k = 1…8, without
|n − d| ≤ 1 (where gradient flow does not reach its limit; :func:`simulation_ns`), one point per (γ, θ) with
``draws`` target draws.
"""
from __future__ import annotations

import math

import numpy as np

__all__ = ["NAMED_SWEEPS", "named_sweep", "named_profile", "simulation_ns", "SLICE_THETAS", "SIM_GAMMAS", "GAMMA_MAX",
           "FINE_TUNE_RTOL"]

#: θ of the slices of FaF Figs. 1, 3 and 6 (π/8, π/4, 3π/8)
SLICE_THETAS = (math.pi / 8, math.pi / 4, 3 * math.pi / 8)
#: the γ grid of the FaF §3 sweeps: n = round(GAMMA_MAX·d·k/SIM_GAMMAS), k = 1…SIM_GAMMAS (:func:`simulation_ns`)
SIM_GAMMAS, GAMMA_MAX = 8, 2.0
#: the integrator's rtol of the figures' fine-tuning flows: at the simulator's default 1e-3 a fine-tuned draw's risk
#: lies too near the figures' integrator allowance above its exact limit (docs/figures.md)
FINE_TUNE_RTOL = 1e-4


def simulation_ns(d, gamma_max=GAMMA_MAX, count=SIM_GAMMAS, min_n=1):
    r"""Target sizes n_k = round(γ_max·d·k/count), k = 1…count, split into (kept, skipped).

    Skipped: |n − d| ≤ 1 (E R_sc = +∞ for σ > 0, and gradient flow does not
    reach its limit in any budget since λ_min(XᵀX/n) → 0) and n < ``min_n``
    (the method's smallest n with a finite expected risk). Duplicates are
    dropped. Returns two sorted integer arrays.
    """
    ns = np.unique(np.rint(gamma_max * d * np.arange(1, count + 1) / count).astype(int))
    bad = (np.abs(ns - d) <= 1) | (ns < min_n)
    return ns[~bad], ns[bad]


def _faf_size(d):
    return dict(fixed=dict(d=d), axes=dict(gamma=[int(n) / d for n in simulation_ns(d)[0]]))


_FAF_QUICK, _FAF_PAPER = _faf_size(64), _faf_size(500)


def _faf_slices(description, sigma, methods):
    flow = dict(rtol=FINE_TUNE_RTOL) if "finetune" in methods else {}
    return dict(experiment="faf_linear", description=description, draws=20,
                fixed=dict(sigma=sigma, methods=list(methods), **flow), axes=dict(theta=list(SLICE_THETAS)),
                profiles=dict(quick=_FAF_QUICK, paper=_FAF_PAPER))


NAMED_SWEEPS = {
    "faf_fig1": _faf_slices("FaF Fig. 1 slices: linear transfer vs scratch, σ = 0.2", 0.2, ("scratch", "linear")),
    "faf_fig3": _faf_slices("FaF Fig. 3 slices: fine-tuning vs scratch, σ = 0.2", 0.2, ("scratch", "finetune")),
    "faf_fig6": _faf_slices("FaF Fig. 6 slices: linear transfer vs scratch, σ = 0", 0.0, ("scratch", "linear")),
    "faf_fig7": dict(
        experiment="faf_linear", description="FaF Fig. 7 cells: linear transfer vs scratch over (γ, θ), σ = 0",
        draws=20, fixed=dict(sigma=0.0, methods=["scratch", "linear"]),
        axes=dict(theta=dict(start=0.0, stop=math.pi / 2, num=9)),
        profiles=dict(quick=_faf_size(48), paper=_FAF_PAPER)),
    # one point per chunk of draws: one teacher (its pretraining at every μ, which its data sets share) and a block
    # of its data sets (their scratch flows, shared by every μ); every chunk draws from the root seed draw_seed, so
    # the chunks are the rows of one run of the figure's experiment, bit for bit, and a cluster divides them
    "faf_fig4": dict(
        experiment="faf_relu", description="FaF Fig. 4: ReLU students from ablated teachers over (μ, n), in chunks "
                                           "of one teacher and a block of its data sets",
        fixed=dict(methods=["scratch", "linear", "linear_minnorm"], linear_max_time=1e30, draw_seed=0, teachers=1),
        profiles=dict(
            # a student twice the teacher's width, so that most n exceed the interpolation threshold m + 1 = 17, and
            # n ≤ m·d/2 = 64, where every scratch flow reaches FaF's loss 1e-6 within t = 3e4 (docs/relu.md)
            quick=dict(draws=3, fixed=dict(d=8, m=16, m_star=8, ns=[16, 20, 24, 28, 32, 40, 48, 56, 64],
                                           mus=[0.125, 0.25, 0.375], max_time=3e4, pretrain_max_time=3e4),
                       axes=dict(teacher_start=list(range(4)))),
            # between quick and paper: n ≤ m·d/2 = 256, where every scratch flow meets FaF's loss 1e-6 within
            # t = 3e4, on a μ–n grid that brackets the boundary at μ = 0.125 … 0.375 (docs/relu.md)
            mid=dict(draws=3, fixed=dict(d=16, m=32, m_star=16,
                                         ns=[36, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256],
                                         mus=[0.125, 0.1875, 0.25, 0.3125, 0.375], max_time=3e4,
                                         pretrain_max_time=1e5),
                     axes=dict(teacher_start=list(range(6)))),
            # FaF App. D.2: 10 teachers × 100 data sets (10 chunks of 10 per teacher), 1e5 steps at rate 0.01·m =
            # flow time 2e3 (the package's losses carry a ½, FaF's do not)
            paper=dict(draws=10, fixed=dict(d=100, m=1000, m_star=100, ns=[100, 200, 300, 400, 600, 800, 1000],
                                            mus=[0.2, 0.35, 0.5, 0.65, 0.8], max_time=2e3, pretrain_max_time=2e3),
                       axes=dict(teacher_start=list(range(10)), draw_start=list(range(0, 100, 10)))))),
    "merlin": dict(
        experiment="merlin", description="MeRLin §5: every algorithm against the target size n_t",
        fixed=dict(k=3, lam=0.1, rtol=1e-2, gtol=1e-6),  # sim.merlin.STUDY_TOLERANCES (a test holds them equal)
        profiles=dict(quick=dict(draws=8, fixed=dict(d=12, m=2, restarts=9), axes=dict(n_t=[2, 4, 8, 16, 32])),
                      paper=dict(draws=40, fixed=dict(d=32, m=3, restarts=8),
                                 axes=dict(n_t=[2, 4, 8, 16, 32, 64, 128])))),
    "tdr": dict(
        experiment="tdr", description="TDR §6: fine-tuning and scratch distances against the width",
        fixed=dict(family="shared-inputs", angle=1.0),
        profiles=dict(quick=dict(draws=8, axes=dict(width=[100, 316, 1000, 3162, 10000])),
                      paper=dict(draws=16, axes=dict(width=[100, 316, 1000, 3162, 10000, 31622, 100000])))),
    # the training study of the claims mtl.lemma1.trained-*: paper at depth 2 (GPU recommended: the fresh heads reach
    # G_τ̂ only from h ≈ 4096; the widths stop there because one copy of the R·h² body weights is 8·4096²·8 B ≈ 1.1 GB
    # and the integrator holds several, while h = 16384 would need ≈ 17 GB per copy, docs/mtl.md)
    "mtl": dict(
        experiment="mtl", description="MTL Lemma 1: trained MTL and ANIL networks against the width",
        fixed=dict(lam_tau=0.1, lam_tau_hat=0.3),
        profiles=dict(quick=dict(draws=6, fixed=dict(depth=1), axes=dict(width=[256, 1024, 4096])),
                      full=dict(draws=8, fixed=dict(depth=1), axes=dict(width=[256, 1024, 4096, 16384])),
                      paper=dict(draws=8, fixed=dict(depth=2), axes=dict(width=[1024, 2048, 4096])))),
}


def named_sweep(name) -> dict:
    """The spec mapping of the named sweep ``name``, or a ValueError listing the names."""
    if name not in NAMED_SWEEPS:
        raise ValueError(f"sweep: unknown sweep {name!r} (named sweeps: {', '.join(NAMED_SWEEPS)}; or a .toml file)")
    return NAMED_SWEEPS[name]


def named_profile(name, profile) -> dict:
    """The sizes of the named sweep ``name`` at ``profile``: its ``draws`` and its ``fixed`` and ``axes`` values (as
    written, unvalidated), the profile's over the sweep's, in one mapping — what a figure or claim that simulates its
    points reads."""
    sizes = {}
    for part in (named_sweep(name), named_sweep(name)["profiles"][profile]):
        sizes.update({key: part[key] for key in ("draws",) if key in part}, **part.get("fixed", {}),
                     **part.get("axes", {}))
    return sizes
