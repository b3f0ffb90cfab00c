"""What a reader of FaF's figures sees: convergence stated on FaF Fig. 4, every axis labelled, no legend over data.

FaF Fig. 4 is built at a tiny size with a target budget short enough that some scratch flows stop at it, so the
marks for unconverged flows (hollow points in (c), hatched cells in (e)), their exclusion from the means and the
counts on the panels are exercised; the counts are checked against the simulator's table. The legend check (``figure_checks``) runs on
FaF Figs. 2, 4, 5 and 7 here (Figs. 1, 3 and 6, the phase diagrams, in ``test_phase_diagram.py``); Fig. 2 at its
quick size, where its legends used to cover error bars.
"""
import numpy as np
import pandas as pd
import pytest

from figure_checks import assert_no_legend_over_data
from transfertheory.figures import faf_fig2, faf_fig4, faf_fig5, faf_fig7
from transfertheory.figures.output import use_agg
from transfertheory.sim.relu_teacher import run_transfer_experiment
from transfertheory.sim.relu_teacher.summary import TRANSFER_METHODS, convergence_counts, summarize

# the target budget leaves 3 of 4 scratch flows unconverged at n = 12, 2 at n = 16 and all at n = 32 (whose point then
# has no mean: left out of the power-law fit)
TINY = dict(d=4, m=12, m_star=4, mus=(0.25, 0.5), ns=(8, 12, 16, 32), teachers=2, draws=2)
BUDGETS = dict(max_time=1e3, pretrain_max_time=3e4)


@pytest.fixture(scope="module")
def fig4():
    use_agg()
    import matplotlib.pyplot as plt

    output = faf_fig4.build(**TINY, **BUDGETS, backend="numpy")
    yield output
    plt.close(output.figure)


def _panel(fig, prefix):
    return next(ax for ax in fig.axes if ax.get_title().startswith(prefix))


@pytest.fixture(scope="module")
def tiny_table():
    sizes = {k: v for k, v in TINY.items() if k != "draws"}
    return run_transfer_experiment(**sizes, draws=TINY["draws"], methods=("scratch",) + TRANSFER_METHODS,
                                   seed=0, backend="numpy", flow={"max_time": BUDGETS["max_time"]},
                                   pretrain_flow={"max_time": BUDGETS["pretrain_max_time"]})


def test_fig4_leaves_the_unconverged_scratch_flows_out_of_the_means(tiny_table):
    df = tiny_table
    grid, _, _ = summarize(df)
    keys = ["mu", "n", "teacher", "draw"]
    scratch = df[df.method == "scratch"].set_index(keys)
    kept = scratch[scratch.converged.astype(bool)]
    risk = kept.risk.groupby(["mu", "n", "teacher"]).mean().groupby(["mu", "n"]).mean()
    paired = (kept.risk_normalized - df[df.method == "linear"].set_index(keys).risk_normalized.reindex(kept.index))
    transfer = paired.groupby(["mu", "n", "teacher"]).mean().groupby(["mu", "n"]).mean()
    for row in grid.itertuples():
        expected = (risk.get((row.mu, row.n), np.nan), transfer.get((row.mu, row.n), np.nan))
        np.testing.assert_allclose((row.scratch_risk, row.transferability), expected, rtol=1e-12)
    assert grid.scratch_risk.isna().any() and grid.scratch_risk.notna().any()  # n = 32: every flow left out


def test_fig4_counts_each_flow_once_and_the_largest_loss_reached(tiny_table):
    df = tiny_table
    counts = convergence_counts(df)
    units = TINY["teachers"] * TINY["draws"]
    scratch = df[(df.method == "scratch") & (df.mu == TINY["mus"][0])]
    assert counts["scratch"] == (int(scratch.converged.sum()), len(TINY["ns"]) * units, scratch.loss.max())
    linear = df[df.method == "linear"]
    assert counts["linear"][1] == len(TINY["mus"]) * len(TINY["ns"]) * units
    pre = pd.DataFrame(df.attrs["pretrain"])
    assert counts["pretraining"] == (int(pre.converged.sum()), len(pre), pre.loss.max())
    assert counts["linear"][0] == int(linear.converged.sum()) and 0 < counts["scratch"][0] < counts["scratch"][1]


def test_fig4_states_on_the_figure_how_many_flows_converged_and_to_what_loss(fig4):
    counts = fig4.convergence
    fig = fig4.figure
    pre_done, pre_total, pre_loss = counts["pretraining"]
    assert f"pretraining to loss 1e-6 {pre_done}/{pre_total}; loss ≤ {pre_loss:.1e}" in _panel(fig, "(a)").get_title()
    scratch_title = _panel(fig, "(c)").get_title()
    assert f"scratch {counts['scratch'][0]}/{counts['scratch'][1]}" in scratch_title
    assert f"loss ≤ {counts['scratch'][2]:.0e}" in scratch_title
    transfer_title = _panel(fig, "(e)").get_title()
    assert f"linear {counts['linear'][0]}/{counts['linear'][1]}" in transfer_title
    assert "run to L̂ − min L̂ ≤ 1e-6" in transfer_title and counts["linear"][0] == counts["linear"][1]
    for column in ("converged_scratch", "converged_linear", "scratch_loss_max", "linear_loss_max"):
        assert column in fig4.columns and fig4.data[column].notna().all()


def test_fig4_marks_every_point_and_cell_that_holds_a_flow_stopped_at_the_budget(fig4):
    grid, fig = fig4.data, fig4.figure
    incomplete = grid[grid.converged_scratch < 1]
    assert 0 < len(incomplete) < len(grid)  # the tiny budget leaves some scratch flows unconverged, not all
    scratch_axes = _panel(fig, "(c)")
    hollow = [c for c in scratch_axes.containers if c.lines[0].get_markerfacecolor() == "none"]
    assert len(hollow) == 1
    hollow_n = hollow[0].lines[0].get_xdata()
    expected_n = grid[(grid.mu == grid.mu.min()) & (grid.converged_scratch < 1)].n
    np.testing.assert_array_equal(np.sort(hollow_n), np.sort(expected_n))
    hatched = [p for p in _panel(fig, "(e)").patches if p.get_hatch() and p.get_width() > 0]
    assert len(hatched) == len(incomplete)


def test_fig4_draws_the_finite_n_boundary_beside_the_paper_heuristic(fig4):
    # The boundary table's finite-n column is finite_n_boundary of the figure's fit and mean ‖P⊥‖², and (e) draws it.
    from transfertheory.theory.relu import finite_n_boundary, power_law_fit

    grid, boundary = fig4.data, fig4.extra[0][1]
    scratch = grid[(grid.mu == grid.mu.min()) & grid.scratch_risk.notna()]  # n = 32: no converged flow, no point
    fit = power_law_fit(scratch.n.to_numpy(float), scratch.scratch_risk.to_numpy())
    for row in boundary.itertuples():
        expected = finite_n_boundary(fit, row.pperp, TINY["m"], row.pperp_se)
        np.testing.assert_allclose([row.n_c_finite, row.n_c_finite_onset], [expected.n_c, expected.n_onset])
        assert np.isnan(row.n_c_finite) or row.n_c_finite < row.n_c
    labels = _panel(fig4.figure, "(e)").get_legend_handles_labels()[1]
    assert any(label.startswith("finite-n n_c") for label in labels)
    assert any(label.startswith("predicted n_c") for label in labels)


def test_fig4_labels_every_axis_and_keeps_its_legends_off_the_data(fig4):
    fig = fig4.figure
    for ax in fig.axes:
        if ax.get_label() == "<colorbar>":
            assert ax.get_ylabel(), "colour bar without a label"
        else:
            assert ax.get_xlabel() and ax.get_ylabel(), f"unlabelled axis in {ax.get_title()!r}"
    assert_no_legend_over_data(fig)


@pytest.mark.parametrize("name, build", [
    ("faf_fig2", lambda: faf_fig2.build(d=64, draws=20, backend="numpy")),  # the quick size
    ("faf_fig5", lambda: faf_fig5.build(d=12, n=6, samples=40, angles=5)),
    ("faf_fig7", lambda: faf_fig7.build(d=12, draws=3, gammas=4, thetas=4, backend="numpy")),
])
def test_faf_figures_keep_their_legends_off_the_data(name, build):
    """FaF Figs. 2, 5, 7: legends used to sit on error bars (2b), lines (5a), the W₁ floor (5b), heat-map cells
    (7a, 7c)."""
    use_agg()
    import matplotlib.pyplot as plt

    fig = build().figure
    try:
        assert [ax for ax in fig.axes if ax.get_legend() is not None], f"{name} has no legend to check"
        assert_no_legend_over_data(fig)
    finally:
        plt.close(fig)


@pytest.mark.parametrize("build", [
    lambda: faf_fig2.build(d=16, draws=3, lams=4, backend="numpy"),
    lambda: faf_fig7.build(d=12, draws=3, gammas=4, thetas=4, backend="numpy"),
])
def test_simulated_faf_figures_say_how_many_draws_converged(build):
    use_agg()
    import matplotlib.pyplot as plt

    output = build()
    try:
        table = output.data
        note = f"converged: target draws {int(table['n_converged'].sum())}/{int(table['n_draws'].sum())}"
        assert any(note in ax.get_title() for ax in output.figure.axes)
    finally:
        plt.close(output.figure)
