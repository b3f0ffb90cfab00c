r"""``python -m transfertheory.phase_diagram``: transferability phase diagrams (FaF §3, Figs. 1 and 3).

A thin command line over :mod:`transfertheory.figures.phase_diagram` (grid, figure, summary) and
:mod:`transfertheory.figures.simulation` (``--simulate``: gradient-flow points on the slices, FaF Figs. 1c and 3c).
It draws T(γ, θ) = E[R_scratch − R_transfer] for linear transfer (FaF Fig. 1, Eq. 13), fine-tuning (FaF Fig. 3;
by default what gradient flow converges to, with the paper's Eq. 17 boundary overlaid) or ridge linear transfer
(Eqs. 10 and 15), writes the figure, the tidy CSV of the grid and its metadata JSON, and prints a summary.
Fine-tuning's gradient-flow limit depends on the network's depth (``--depth L``, default 2; the summary prints
θ*(L) at γ = ½). ``--spectrum SPEC [--teacher SPEC]`` draws the diagram for anisotropic inputs x ~ N(0, Σ)
(:mod:`transfertheory.figures.faf_aniso`, docs/anisotropic.md).

Exit codes: 0 success, 1 output folder not writable (checked before any work), 2 usage error, 3 array backend
unknown or unusable, 4 the simulation does not fit in memory (``--max-memory``), 130 interrupted (Ctrl-C), 143
SIGTERM, 129 SIGHUP (:mod:`transfertheory.figures.cli`). See docs/phase_diagram.md.
"""
from __future__ import annotations

import argparse
import re
import time

from .cli_support import add_backend_argument, add_memory_argument, entry_point, exit_process
from .figures import cli
from .figures import phase_diagram as figure
from .figures import phase_grid
from .figures.simulation import SIM_D, SIM_DRAWS, SIM_GAMMAS, simulate_slices, simulation_ns, sweep_sizes
from .params import COUNT, D, DEPTH, DRAWS, GAMMA_MAX, LAM, RESOLUTION, SEED, SIGMA
from .theory.spectra import SPECTRUM_SYNTAX, TEACHER_SYNTAX, check_spectrum_text, check_teacher_text, task
from .theory.methods import get_method

__all__ = ["build_parser", "output_name", "main", "NOISE", "RIDGE"]

#: ``--noise`` and ``--lam``: up to 10¹², far beyond any transfer (the closed forms compute σ⁴ and λ-powers, which
#: leave the floating-point range near 10⁷⁷ and would print overflow warnings)
NOISE, RIDGE = SIGMA.with_range(high=1e12, closed="both"), LAM.with_range(high=1e12, closed="both")
#: ``--paper-size``: FaF Fig. 1's simulation size at the paper profile (FaF App. D.1: d = 500, 20 target draws)
PAPER_D, PAPER_DRAWS = (sweep_sizes("faf_fig1", "paper")[key] for key in ("d", "draws"))


def output_name(method, sigma, lam=0.0, finite_d=None, depth=2, spectrum=None, teacher=None):
    """``phase_diagram_{method}_sigma{σ}`` + ``_lam{λ}`` (ridge) + ``_L{L}`` (a depth other than 2) + ``_d{D}``
    (finite d) + ``_spectrum-{SPEC}_teacher-{SPEC}`` (anisotropic inputs; characters other than letters, digits and
    dots become ``-``)."""
    name = f"phase_diagram_{method}_sigma{sigma:g}"
    if method == "ridge":
        name += f"_lam{lam:g}"
    if depth != 2:
        name += f"_L{depth}"
    if finite_d is not None:
        name += f"_d{finite_d}"
    if spectrum is not None:
        name += "".join(f"_{what}-" + re.sub(r"[^A-Za-z0-9.]+", "-", str(spec))[:40]
                        for what, spec in (("spectrum", spectrum), ("teacher", teacher)))
    return name


def build_parser():
    """The ``python -m transfertheory.phase_diagram`` argument parser (flags of docs/phase_diagram.md)."""
    parser = argparse.ArgumentParser(
        prog="python -m transfertheory.phase_diagram",
        description="Transferability phase diagram of deep linear networks (FaF §3): Fig. 1 (linear transfer), "
        "Fig. 3 (fine-tuning) or ridge transfer. Writes the figure, a tidy CSV of the grid and its metadata JSON, "
        "prints a summary.",
        epilog=cli.EPILOG,
    )
    parser.add_argument("--noise", type=NOISE.arg_type(), default=0.2, metavar="SIGMA",
                        help=f"label-noise sd σ in {NOISE.interval} (default 0.2)")
    parser.add_argument("--method", choices=phase_grid.METHODS, default="linear", help="transfer method (default linear)")
    parser.add_argument("--limit", choices=phase_grid.LIMITS, default=None,
                        help="flow: what gradient flow converges to (default); paper: the paper's formulas. They "
                        "differ for fine-tuning only; a --finite-d fine-tuning grid is the paper's Eq. 17")
    parser.add_argument("--lam", type=RIDGE.arg_type(), default=0.0, metavar="LAMBDA",
                        help=f"ridge strength λ in {RIDGE.interval} (ridge only)")
    parser.add_argument("--depth", type=DEPTH.arg_type(), default=None, metavar="L",
                        help="layers L >= 2 of the linear network (fine-tuning only: its gradient-flow limit and "
                        "--simulate depend on L; default 2)")
    parser.add_argument("--finite-d", type=D.with_range(low=3).arg_type(), default=None, metavar="D",
                        help="exact finite-size surface at d = D >= 3, n = round(γD) (default: n, d → ∞)")
    parser.add_argument("--gamma-max", type=GAMMA_MAX.arg_type(), default=2.0, metavar="G",
                        help=f"largest γ = n/d, in {GAMMA_MAX.interval} (default 2)")
    parser.add_argument("--resolution", type=RESOLUTION.arg_type(), default=400, metavar="N",
                        help=f"grid points per axis, an integer in {RESOLUTION.interval} (default 400)")
    aniso = parser.add_argument_group(
        "anisotropic inputs", "x ~ N(0, Σ), Σ = diag(spectrum); θ is the angle in the Σ inner product and the risk "
        "‖β̂ − β_t‖²_Σ; deterministic equivalents at dimension --spectrum-d (docs/anisotropic.md)")
    aniso.add_argument("--spectrum", default=None, metavar="SPEC", help=f"the spectrum: {SPECTRUM_SYNTAX}")
    aniso.add_argument("--teacher", default=None, metavar="SPEC",
                       help=f"where the teachers sit on the spectrum: {TEACHER_SYNTAX} (default flat)")
    aniso.add_argument("--spectrum-d", type=D.with_range(low=2).arg_type(), default=None, metavar="D",
                       help="dimension d of a spectrum family (default 400; given eigenvalues set d themselves)")
    cli.add_output_arguments(parser, fmt="png")
    sim = parser.add_argument_group(
        "simulation", "gradient-flow runs of the deep linear network (L = --depth; α = 1e-5 at L = 2, 10^(−3/(L−2)) "
        "beyond) drawn on the slices (c) as "
        "mean ± SD over target draws, with the exact finite-size theory at the simulated d; writes "
        "NAME_simulated.csv and prints the largest |z| against that theory")
    sim.add_argument("--simulate", action="store_true", help="overlay simulated points (FaF Figs. 1c, 3c)")
    sim.add_argument("--sim-gammas", type=COUNT.arg_type(), default=None, metavar="M",
                     help=f"γ points per slice, γ = γ_max·k/M, k = 1…M (|n − d| <= 1 skipped; default {SIM_GAMMAS})")
    sim.add_argument("--sim-d", type=D.with_range(low=3).arg_type(), default=None, metavar="D",
                     help=f"simulated input dimension d (default {SIM_D}; {PAPER_D} with --paper-size)")
    sim.add_argument("--sim-draws", type=DRAWS.with_range(low=2).arg_type(), default=None, metavar="K",
                     help=f"target draws per point, >= 2 (default {SIM_DRAWS}; {PAPER_DRAWS} with --paper-size)")
    sim.add_argument("--paper-size", action="store_true",
                     help=f"the paper's size (FaF App. D.1): d = {PAPER_D}, {PAPER_DRAWS} draws")
    sim.add_argument("--seed", type=SEED.arg_type(), default=0, help="simulation seed, integer >= 0 (default 0)")
    add_backend_argument(sim)
    add_memory_argument(sim)
    return parser


def _validate_spectrum(parser, args):
    """The anisotropic flags: valid specs, and none of the flags that the diagram under a spectrum lacks."""
    if args.spectrum is None:
        given = [flag for flag, value in (("--teacher", args.teacher), ("--spectrum-d", args.spectrum_d))
                 if value is not None]
        if given:
            parser.error(f"{', '.join(given)} applies with --spectrum only")
        return
    for flag, value in (("--finite-d", args.finite_d), ("--simulate", args.simulate or None),
                        ("--limit paper", args.limit == "paper" or None)):
        if value is not None:
            parser.error(f"{flag} is not available with --spectrum (the diagram under Σ is the gradient-flow limit's "
                         "deterministic equivalent; simulate it with the faf_aniso figure)")
    args.teacher = "flat" if args.teacher is None else args.teacher
    try:
        check_spectrum_text(args.spectrum, "--spectrum")
        check_teacher_text(args.teacher, "--teacher")
    except ValueError as err:
        parser.error(str(err))
    head = args.spectrum.strip().split(":")[0]
    if head not in ("isotropic", "power", "block"):
        count = len([p for p in args.spectrum.split(",") if p.strip()])
        if args.spectrum_d not in (None, count):
            parser.error(f"--spectrum-d {args.spectrum_d} disagrees with the {count} eigenvalues of --spectrum")
        args.spectrum_d = count
    args.spectrum_d = 400 if args.spectrum_d is None else args.spectrum_d
    try:  # what the text alone cannot show: eigenvalues that underflow at d, teachers on one eigenvector
        task(args.spectrum, args.teacher, args.spectrum_d, (0.0,))
    except ValueError as err:
        parser.error(f"--spectrum {args.spectrum} --teacher {args.teacher} at d = {args.spectrum_d}: "
                     + str(err).removeprefix("spectrum: ").removeprefix("teacher: "))


def _validate(parser, args):
    """Checks between flags (each flag's own range is checked by its ``type``); errors exit 2 with the usage line.
    ``--noise -0`` and ``--lam -0`` are 0 (so is every name and record made of them)."""
    args.noise, args.lam = args.noise + 0.0, args.lam + 0.0  # -0.0 + 0.0 is 0.0
    _validate_spectrum(parser, args)
    if args.lam != 0 and args.method != "ridge":
        parser.error("--lam applies to --method ridge only")
    if args.depth is not None and args.method != "finetune":
        parser.error("--depth applies to --method finetune only (the other methods' limits do not depend on L)")
    args.depth = 2 if args.depth is None else args.depth
    if args.limit == "flow" and args.method == "finetune" and args.finite_d is not None:
        parser.error("--limit flow with --finite-d is not available for fine-tuning (its finite-size gradient-flow "
                     "limit is a Monte Carlo); use --limit paper or --simulate")
    given = [flag for flag, value in (("--sim-d", args.sim_d), ("--sim-draws", args.sim_draws),
                                      ("--sim-gammas", args.sim_gammas), ("--paper-size", args.paper_size or None))
             if value is not None]
    if given and not args.simulate:
        parser.error(f"{', '.join(given)} applies with --simulate only")
    args.sim_gammas = SIM_GAMMAS if args.sim_gammas is None else args.sim_gammas
    size = sweep_sizes("faf_fig1", "paper" if args.paper_size else "quick")  # explicit flags win over --paper-size
    args.sim_d = size["d"] if args.sim_d is None else args.sim_d
    args.sim_draws = size["draws"] if args.sim_draws is None else args.sim_draws
    min_n = get_method(args.method).min_n
    if args.simulate and simulation_ns(args.sim_d, args.gamma_max, args.sim_gammas, min_n)[0].size == 0:
        parser.error(f"no simulable n = round(γ_max·d·k/M) >= {min_n} with |n − d| >= 2 "
                     f"(d = {args.sim_d}, M = {args.sim_gammas}, γ_max = {args.gamma_max:g})")


@entry_point
def main(argv=None):
    """Entry point; returns 0, 1 if the outputs cannot be written, or 4 if the simulation does not fit in memory.
    Usage errors exit 2, an unusable backend 3, Ctrl-C 130; the output folder and the backend are checked before
    any work."""
    parser = build_parser()
    args = parser.parse_args(argv)
    _validate(parser, args)
    backend = cli.check_before_work(args, simulates=args.simulate)
    start = time.perf_counter()
    if args.spectrum is not None:
        from .figures import faf_aniso

        output = faf_aniso.phase_output(args.method, args.noise, args.spectrum, args.teacher, args.spectrum_d,
                                        args.gamma_max, args.resolution, args.lam, args.depth)
        return cli.write_and_report(output, output_name(args.method, args.noise, args.lam, None, args.depth,
                                                        args.spectrum, args.teacher), args,
                                    title=f"Transferability phase diagram under Σ = {args.spectrum}",
                                    sources=("FaF Eq. 13",), backend=None,
                                    runtime_s=time.perf_counter() - start)
    grid = phase_grid.compute_phase_grid(args.method, args.noise, args.gamma_max, args.resolution, args.lam, args.finite_d,
                               args.limit, args.depth)
    points, parameters = None, {}
    if args.simulate:
        points = simulate_slices(args.method, args.noise, args.sim_d, args.sim_draws, args.sim_gammas,
                                 args.gamma_max, args.lam, seed=args.seed, backend=backend, depth=args.depth)
        parameters = dict(sim_gammas=args.sim_gammas, seed=args.seed)
    output = figure.phase_diagram_output(grid, args.method, args.noise, args.lam, args.finite_d, points, parameters)
    record, source = get_method(args.method), figure.transferability_source(args.method)
    return cli.write_and_report(output, output_name(args.method, args.noise, args.lam, args.finite_d, args.depth), args,
                                title=f"Transferability phase diagram, {record.label} ({source})",
                                sources=tuple(s for s in (source, record.figure) if s), backend=backend,
                                runtime_s=time.perf_counter() - start, extra_suffixes=("_simulated",))


if __name__ == "__main__":
    exit_process(main())
