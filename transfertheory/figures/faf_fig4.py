r"""FaF Fig. 4: linear transfer in two-layer ReLU student–teacher networks (FaF §4, App. D.2), by simulation.

Model (FaF Eqs. 18–21, docs/relu.md): students f(x) = (1/m) Σᵢ cᵢ σ(wᵢᵀx) with rows on the sphere, pretrained
on the exact population loss of a source teacher lacking a fraction μ of the target teacher's m* neurons, then
trained on n noiseless target samples (:func:`transfertheory.sim.relu_teacher.run_transfer_experiment`). The
tables are :func:`transfertheory.sim.relu_teacher.summary.summarize`'s; this module draws them. Panels:

- (a, b) Gram matrices of the pretrained student's feature kernel and of the source teacher's, on probe inputs
  (the experiment's first teacher at the middle μ);
- (c) scratch risk E(f − f_t*)² against n (mean over teachers × data sets ± SE of the per-teacher means) with the power law A n^{−ν}
  fitted by least squares of log(mean risk) on log n (:func:`transfertheory.theory.relu.power_law_fit`);
- (d) ‖P⊥ f_t*‖²/‖f_t*‖² against μ, P on the pretrained student's features (Eq. 21) and on the source teacher's;
- (e) transferability (R_scratch − R_linear)/Var f_t* over (μ, n), with FaF's predicted boundary
  n_c(μ) = (A/‖P⊥ f_t*‖²)^{1/ν} (circles), the finite-n boundary where A n^{−ν} meets the least-squares transfer
  risk ‖P⊥ f_t*‖²(n − 1)/(n − m − 1) (diamonds; :func:`transfertheory.theory.relu.finite_n_boundary`) and the
  simulated sign change (crosses: log-linear interpolation of
  the n where the mean transferability first turns from positive to non-positive; in the boundary table its
  95% interval from a two-stage bootstrap — teachers, then data sets within them, because the data sets of one
  teacher share its pretrained student — with resamples that have no sign change in the n range counted at
  the range's end and their fraction reported).

Convergence, on the figure and in the tables: panel (a)'s title gives how many pretraining flows met FaF's loss
1e-6 and the largest pretrained loss; (c) and (e) how many scratch and linear flows converged (FaF's rule
loss ≤ 1e-6, or ‖m∇L̂‖ ≤ gtol) and the largest training loss of the others, which stopped at the time budget and
are left out of the means (their paired units out of the transferability) *with a mark*: hollow points in (c),
hatched cells in (e) where a scratch flow of the point or cell stopped at the budget. The profiles' budgets let
every scratch flow meet FaF's rule (their n stay below the m·d degrees of freedom of the student, where the
flow interpolates; docs/relu.md). The linear-transfer flow is solved in closed form and
run until L̂ − min L̂ ≤ 1e-6 (FaF's rule on the part of the loss the flow can remove: for n > m the loss cannot
fall below the least-squares minimum ≈ ½‖P⊥ f_t*‖²(1 − m/n) ≫ 1e-6), with a budget of 1e30 that costs no more than
FaF's 1e3. The grid table gives the converged
fractions and the largest training losses per (μ, n), the boundary table the pretraining statuses and
loss/initial per μ, the summary lines the status counts. Scratch flows do not depend on μ: the table repeats
them per μ (paired rows), and the counts on the figure count each flow once.

``linear`` is FaF's procedure run to convergence (gradient flow on the output weights from the pretrained ones);
the boundary table also gives the sign change of kernel interpolation (``linear_minnorm``: the same limit from
c = 0; for n > m the two coincide).

Built by the figures command, ``python -m transfertheory.figures faf_fig4 [--quick | --full | --paper]``: the
quick size (seconds), the full CPU size (a few minutes on 2 cores) or FaF's (App. D.2, on a GPU); other sizes are
keywords of :func:`build`. Run as a module, this one prints a line naming that command and exits 2.
"""
from __future__ import annotations


import numpy as np  # pandas is imported where tables are built: a --help needs none

from ..backend import to_host
from ..sim.relu_teacher import ROW_KEYS, feature_kernel, run_transfer_experiment, status_counts
from ..sim.relu_teacher.summary import (BOUNDARY_COLUMNS, GRID_COLUMNS, TRANSFER_METHODS, convergence_counts,
                                        pretraining, summarize)
from ..sim.seeding import generator
from ..sweep.named import named_profile
from .marks import annotate_convergence, errorbar_by_convergence, legend_below
from .output import FigureOutput, use_agg
from .registry import Figure, register
from .simulation import SWEEP_RUNNER

NAME = "faf_fig4"
#: flow-time budget of linear transfer: its flow is closed-form (any budget costs the same), and this one lets every
#: flow meet L̂ − min L̂ ≤ 1e-6 (:func:`transfertheory.sim.relu_teacher.linear_transfer_flow`)
LINEAR_MAX_TIME = 1e30
GRAM_PROBES = 40  #: probe inputs of panels (a, b)
HEAT_LINEAR_RANGE = 1e-3  #: panel (e)'s colour scale is linear within ±this transferability, logarithmic beyond
def gram_panels(student, source, d, seed):
    """(K_student, K_source) on GRAM_PROBES Gaussian probes (key (7,), sorted by the source teacher's output) of a
    pretrained student's rows and its source teacher (W, c): host arrays."""
    probes = generator(seed, 7).standard_normal((GRAM_PROBES, d))
    W_source, c_source = source
    probes = probes[np.argsort(np.maximum(probes @ W_source.T, 0.0) @ c_source)]
    return np.asarray(to_host(feature_kernel(student, probes))), feature_kernel(W_source, probes)


def _gram_panels(fig, spec, grams, gram_mu, counts, kernel_gap):
    """(a, b): the two Gram matrices, the pretraining's convergence in (a), the gap between them in (b)."""
    vmax = max(float(g.max()) for g in grams)
    titles = (f"(a) pretrained student kernel, μ = {gram_mu:g}",
              f"(b) source teacher kernel; gap to (a) {kernel_gap:.2f}\n(student rows with output weight ≈ 0 "
              "stay unaligned)")
    axes = []
    for k, (gram, title) in enumerate(zip(grams, titles)):
        ax = fig.add_subplot(spec[k, 0])
        image = ax.imshow(gram, vmin=0, vmax=vmax, cmap="viridis")
        ax.set(title=title, xticks=[], yticks=[], xlabel="probe input x′ (sorted by f_s*)",
               ylabel="probe input x (sorted by f_s*)")
        ax.title.set_fontsize(9)
        fig.colorbar(image, ax=ax, fraction=0.046, label="K(x, x′)")
        axes.append(ax)
    done, total, loss = counts["pretraining"]
    annotate_convergence(axes[0], {"pretraining to loss 1e-6": (done, total)}, f"loss ≤ {loss:.1e}")


def _scratch_panel(ax, grid, fit, counts, max_time):
    """(c) the scratch risk against n; points with a flow stopped at the time budget hollow."""
    scratch = grid[grid.mu == grid.mu.min()]
    errorbar_by_convergence(ax, scratch.n, scratch.scratch_risk, scratch.scratch_risk_se,
                            scratch.converged_scratch.to_numpy() == 1.0, "scratch, every flow converged (mean ± SE)",
                            f"scratch, some flows stopped at t = {max_time:g} (left out)", fmt="o", ms=6, color="tab:blue")
    ax.loglog(scratch.n, fit.A * scratch.n.to_numpy(float) ** -fit.nu, "k--",
              label=f"fit A n^(−ν), ν = {fit.nu:.2f} ± {fit.nu_se:.2f}")
    ax.set(xlabel="n", ylabel="R_sc = E(f − f_t*)²", title="(c) scratch risk", xticks=scratch.n.to_numpy(float),
           xticklabels=[str(int(n)) for n in scratch.n])
    ax.tick_params(axis="x", labelrotation=45)  # FaF's n grid crowds its last labels on the log axis
    ax.minorticks_off()
    done, total, loss = counts["scratch"]
    annotate_convergence(ax, {"scratch": (done, total)}, f"the rest: loss ≤ {loss:.0e}" if done < total else "")


def _transfer_panel(fig, ax, grid, boundary, counts, max_time, m):
    """(e) the transferability heat map with the paper's and the finite-n predicted boundary and the simulated sign
    change; the interpolation threshold n = m + 1; cells holding a scratch flow stopped at the time budget hatched.
    Returns the axes and its legend entries."""
    from matplotlib.colors import SymLogNorm
    from matplotlib.patches import Patch, Rectangle

    heat = grid.pivot(index="n", columns="mu", values="transferability")
    complete = grid.pivot(index="n", columns="mu", values="converged_scratch").to_numpy() == 1.0
    limit = float(np.nanmax(np.abs(heat.to_numpy())))
    mus, ns = heat.columns.to_numpy(float), heat.index.to_numpy(float)
    # symmetric log scale: converged least squares near n = m (and with nearly collinear features) reaches risks
    # 10⁴× the target variance, which a linear scale would let wash out every other cell
    image = ax.pcolormesh(np.arange(len(mus) + 1), np.arange(len(ns) + 1), heat.to_numpy(), cmap="RdBu",
                          norm=SymLogNorm(linthresh=HEAT_LINEAR_RANGE, vmin=-limit, vmax=limit))
    fig.colorbar(image, ax=ax, label="(R_sc − R_lt)/Var f_t*")
    for row, col in zip(*np.nonzero(~complete)):
        ax.add_patch(Rectangle((col, row), 1, 1, fill=False, hatch="//", edgecolor="0.45", lw=0))

    def grid_y(n):  # position of n on the heat map's log-spaced rows
        return np.interp(np.log(n), np.log(ns), np.arange(len(ns)) + 0.5, left=np.nan, right=np.nan)

    x = np.arange(len(mus)) + 0.5
    predicted = boundary.n_c.to_numpy(float)
    above = [f"{mu:g}" for mu, n_c in zip(mus, predicted) if n_c > ns[-1]]  # off the heat map
    beyond = f";\nabove n = {ns[-1]:g} at μ = {', '.join(above)}" if above else ""
    ax.plot(x, grid_y(predicted), "o", mfc="lightgray", mec="k", ms=9,
            label=f"predicted n_c (A n^−ν = ‖P⊥ f_t*‖²{beyond})")
    finite = boundary.n_c_finite.to_numpy(float)
    negative = [f"{mu:g}" for mu, n_c in zip(mus, finite) if np.isnan(n_c)]
    none = f";\nnone at μ = {', '.join(negative)}: negative at every n > m + 1" if negative else ""
    ax.plot(x, grid_y(finite), "D", mfc="gold", mec="k", ms=8,
            label=f"finite-n n_c (A n^−ν = ‖P⊥‖²(n − 1)/(n − m − 1){none})")
    ax.plot(x, grid_y(boundary.n_sign_linear.to_numpy(float)), "kx", ms=9, mew=2, label="simulated sign change")
    if ns[0] < m + 1 < ns[-1]:
        ax.axhline(grid_y(m + 1), color="k", ls=":", lw=1, label=f"n = m + 1 = {m + 1} (interpolation threshold)")
    ax.set(xticks=x, xticklabels=[f"{mu:g}" for mu in mus], yticks=np.arange(len(ns)) + 0.5,
           yticklabels=[f"{int(n)}" for n in ns], xlabel="μ", ylabel="n", title="(e) transferability")
    counted = {method: counts[method][:2] for method in ("scratch", "linear")}
    annotate_convergence(ax, counted, f"the rest stopped at t = {max_time:g}"
                         if counted["scratch"][0] < counted["scratch"][1] else "")
    ax.set_title(f"{ax.get_title()}\n(linear: output-weight flow run to L̂ − min L̂ ≤ 1e-6)")
    handles, labels = ax.get_legend_handles_labels()
    if not complete.all():
        handles.append(Patch(fill=False, hatch="//", edgecolor="0.45", lw=0))
        labels.append(f"a scratch flow stopped at t = {max_time:g} (left out)")
    return ax, (handles, labels)


def plot(grams, grid, boundary, fit, gram_mu, counts, max_time, kernel_gap, m):
    """The five panels; ``counts``: :func:`~transfertheory.sim.relu_teacher.summary.convergence_counts`, ``kernel_gap``: the
    relative Frobenius gap of the two Gram matrices. Legends sit under their panels, off the data."""
    use_agg()
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(15, 9), layout="constrained")
    spec = fig.add_gridspec(2, 3, width_ratios=(1, 1.1, 1.4))
    _gram_panels(fig, spec, grams, gram_mu, counts, kernel_gap)
    scratch_axes = fig.add_subplot(spec[0, 1])
    _scratch_panel(scratch_axes, grid, fit, counts, max_time)
    rkhs_axes = fig.add_subplot(spec[1, 1])
    rkhs_axes.errorbar(boundary.mu, boundary.pperp_fraction, yerr=boundary.pperp_fraction_se, fmt="o-",
                       label="P on the pretrained student")
    rkhs_axes.plot(boundary.mu, boundary.pperp_source_fraction, "s--", label="P on the source teacher")
    rkhs_axes.set(xlabel="μ", ylabel="‖P⊥ f_t*‖² / ‖f_t*‖²", title="(d) out-of-RKHS norm")
    transfer_axes, transfer_legend = _transfer_panel(fig, fig.add_subplot(spec[:, 2]), grid, boundary, counts,
                                                     max_time, m)
    fig.suptitle("FaF Fig. 4: linear transfer in two-layer ReLU student–teacher networks")
    for ax in (scratch_axes, rkhs_axes):
        legend_below(ax, fontsize=8)
    legend_below(transfer_axes, *transfer_legend, fontsize=8)
    return fig


def _experiment(d, m, m_star, mus, ns, teachers, draws, chunk, seed, backend, max_time, pretrain_max_time,
                rtol, loss_tol):
    """The experiment's table and, for panels (a, b), the pretrained students of its first teacher by μ. With a
    figure command's store (``--paper``, ``--store``; :data:`~.simulation.SWEEP_RUNNER`) it runs through the sweep
    engine in chunks of one teacher × ``chunk`` data sets (the named sweep ``faf_fig4``'s points: resumable, spread
    over workers or a cluster, rows bit-identical to one run), the students from a one-teacher run; else here."""
    flows = dict(flow=dict(max_time=max_time, rtol=rtol, loss_tol=loss_tol),
                 pretrain_flow=dict(max_time=pretrain_max_time, loss_tol=loss_tol),
                 linear_flow=dict(max_time=LINEAR_MAX_TIME))
    methods = ("scratch",) + TRANSFER_METHODS
    runner = SWEEP_RUNNER.get()
    if runner is None or rtol is not None:  # (the experiment's record has no rtol field)
        df = run_transfer_experiment(d, m, m_star, mus, ns, teachers=teachers, draws=draws, methods=methods,
                                     seed=seed, backend=backend, **flows)
        return df, df.attrs["students"]
    chunk = min(chunk or draws, draws)
    spec = dict(experiment="faf_relu", draws=chunk,
                fixed=dict(d=d, m=m, m_star=m_star, mus=list(mus), ns=list(ns), methods=list(methods), draw_seed=seed,
                           teachers=1, max_time=max_time, pretrain_max_time=pretrain_max_time,
                           linear_max_time=LINEAR_MAX_TIME, loss_tol=loss_tol, pretrain_loss_tol=loss_tol),
                axes=dict(teacher_start=list(range(teachers)), draw_start=list(range(0, draws, chunk))))
    df = runner.rows(spec, f"faf_relu d={d}").sort_values(list(ROW_KEYS), ignore_index=True)
    first = run_transfer_experiment(d, m, m_star, mus, ns[:1], teachers=1, draws=1, methods=("linear",), seed=seed,
                                    backend=backend, **flows)
    return df, first.attrs["students"]


def build(d, m, m_star, mus, ns, teachers, draws, max_time=1e3, pretrain_max_time=1e3, seed=0, backend=None,
          progress=None, rtol=None, loss_tol=1e-6, chunk=None):
    """Run the experiment, summarize it and draw the five panels; a :class:`~.output.FigureOutput`.

    ``max_time`` is the budget of the scratch flows; the linear-transfer flows, solved in closed form, run to
    :data:`LINEAR_MAX_TIME`, so that each meets L̂ − min L̂ ≤ 1e-6. ``rtol`` (the scratch flows' integrator
    tolerance; None: the simulator's) and ``loss_tol`` (FaF's stopping rule) are there to check that the figure's
    numbers do not depend on them (tests/figures/test_figure_tolerances.py).
    """
    if list(ns) != sorted(set(ns)) or len(ns) < 3:  # beyond the simulator's checks: for the fit and the sign change
        raise ValueError(f"ns must be at least 3 strictly increasing sample sizes (the power-law fit needs them), "
                         f"got {list(ns)}")
    df, students = _experiment(d, m, m_star, mus, ns, teachers, draws, chunk, seed, backend, max_time,
                               pretrain_max_time, rtol, loss_tol)
    grid, boundary, fit = summarize(df, seed)
    gram_mu = float(mus[len(mus) // 2])
    student = students[gram_mu]  # the experiment's first teacher at the middle μ (panels a, b)
    grams = gram_panels(student.W[0], (student.W_source[0], student.c_source[0]), d, seed)
    kernel_gap = float(np.linalg.norm(grams[0] - grams[1]) / np.linalg.norm(grams[1]))
    pre = pretraining(df)
    counts = convergence_counts(df)
    lines = [f"FaF Fig. 4 at d = {d}, m = {m}, m* = {m_star}: {teachers} teachers × {draws} data sets, "
             f"n ∈ {list(ns)}, μ ∈ {list(mus)}",
             f"(a, b) relative Frobenius gap of the Gram matrices at μ = {gram_mu:g} (teacher 0): {kernel_gap:.3f}",
             f"(c) scratch power law: ν = {fit.nu:.3f} ± {fit.nu_se:.3f}, A = {fit.A:.3g} (FaF: ν ≈ 1.18 at d = 100)",
             f"pretraining flows (t ≤ {pretrain_max_time:g}): {status_counts(pre.status)}; loss ≤ "
             f"{counts['pretraining'][2]:.2g}, loss/initial ≤ {(pre.loss / pre.initial_loss).max():.2g}",
             f"scratch flows converged (FaF's rule or gtol) within t = {max_time:g}: {counts['scratch'][0]} of "
             f"{counts['scratch'][1]}; largest final training loss {counts['scratch'][2]:.2g}",
             f"linear flows converged (L̂ − min L̂ ≤ 1e-6) within t = {LINEAR_MAX_TIME:g}: {counts['linear'][0]} of "
             f"{counts['linear'][1]}; largest final training loss {counts['linear'][2]:.2g} (the least-squares "
             "minimum for n > m)",
             "scratch flows stopped at max_time are left out of the means (with their paired units), marked on the "
             "figure (hollow in (c), hatched in (e))"]
    for row in boundary.itertuples():
        found = (f"{row.n_sign_linear:.3g}" if not row.n_sign_linear_side
                 else f"{row.n_sign_linear_side} the n range")
        finite = ("negative at every n > m + 1" if np.isnan(row.n_c_finite)
                  else f"{row.n_c_finite:.3g} ± {row.n_c_finite_se:.2g} (onset {row.n_c_finite_onset:.3g})")
        lines.append(f"(e) μ = {row.mu:g}: predicted n_c = {row.n_c:.3g} ± {row.n_c_se:.2g} (paper), finite-n "
                     f"{finite}; simulated sign change "
                     f"{found} (teacher-clustered bootstrap 95% [{row.n_sign_linear_lo:.3g}, "
                     f"{row.n_sign_linear_hi:.3g}], sign change in {row.n_sign_linear_found:.0%} of resamples) "
                     f"(linear), {row.n_sign_minnorm:.3g} (kernel interpolation); with the transfer risk reached at "
                     f"the largest n instead of ‖P⊥‖²: {row.n_c_largest_n:.3g}; pretraining {row.pretrain_status}")
    parameters = dict(d=d, m=m, m_star=m_star, mus=list(mus), ns=list(ns), teachers=teachers, draws=draws,
                      max_time=max_time, pretrain_max_time=pretrain_max_time, seed=seed)
    figure = plot(grams, grid, boundary, fit, gram_mu, counts, max_time, kernel_gap, m)
    return FigureOutput(figure, grid, GRID_COLUMNS, parameters, tuple(lines),
                        extra=(("_boundary", boundary, BOUNDARY_COLUMNS),),
                        convergence=counts, notes=dict(nu=fit.nu, nu_se=fit.nu_se, A=fit.A, kernel_gap=kernel_gap))


def _sizes(profile):
    """The figure's sizes at the named sweep ``faf_fig4``'s ``profile`` (:mod:`transfertheory.sweep.named`, where
    they are declared): the whole run of its points, one teacher and a block of data sets each."""
    s = named_profile(NAME, profile)
    return dict(d=s["d"], m=s["m"], m_star=s["m_star"], mus=tuple(s["mus"]), ns=tuple(s["ns"]),
                teachers=len(s["teacher_start"]), draws=s["draws"] * len(s.get("draw_start", [0])), chunk=s["draws"],
                max_time=s["max_time"], pretrain_max_time=s["pretrain_max_time"])


FIGURE = register(Figure(
    name=NAME,
    title="FaF Fig. 4: linear transfer in two-layer ReLU student–teacher networks",
    description="(a, b) Gram matrices of the pretrained student's kernel and of the source teacher's; (c) scratch "
    "risk against n with the fitted power law; (d) ‖P⊥ f_t*‖²/‖f_t*‖² against μ; (e) transferability normalized by "
    "the target variance over (μ, n), with the boundary predicted from the power law and ‖P⊥ f_t*‖² (circles), the "
    "finite-n boundary where the power law meets the least-squares transfer risk ‖P⊥ f_t*‖²(n − 1)/(n − m − 1) "
    "(diamonds) and the simulated sign change (crosses); linear transfer runs to convergence. The panels say how many "
    "pretraining, scratch and linear-transfer flows converged (every one at the quick profile) and the loss the others "
    "reached; a scratch flow stopped at its time budget is left out of the means and its point (c) or cell (e) is "
    "hollow / hatched.",
    sources=("FaF Fig. 4", "FaF Eq. 21", "FaF §4"),
    build=build,
    profiles={"quick": _sizes("quick"), "full": _sizes("mid"), "paper": _sizes("paper")},
    paper_sizes="the paper's (FaF App. D.2, Fig. 4 caption): d = 100, m = 1000, m* = 100, σ = 0, 10 teacher draws × "
    "100 data realizations, FaF's budget (1e5 steps at learning rate 0.01·m: flow time 2e3 in the package's units, "
    "whose losses carry a ½) and stopping rule (loss ≤ 1e-6); the μ and n grids are not listed in the text and are "
    "read from the axes of Fig. 4(c–e) (μ 0.2–0.8, n 100–1000). Scratch flows follow gradient flow (adaptive RKC), "
    "the paper's gradient descent being its Euler discretization; linear transfer is the flow solved exactly",
    paper_stand_in="a smaller profile built into figures/paper stands in for the paper-size build, which takes hours "
    "of a CPU (about 3·10¹⁴ flops, docs/benchmarks.md) and is resumed from its store "
    "(`python -m transfertheory.figures faf_fig4 --paper --out figures/paper --store figures/paper/stores/figs-paper`)",
))

