"""What a reader sees in the TDR, MTL and MeRLin figures: every drawn series told apart, every panel of the paper
present, intervals a log axis can draw, legends off the data, the convergence of the runs stated on the figure
(the intervals they use: tests/sim/test_statistics.py)."""
from __future__ import annotations

import re

import numpy as np
import pytest

from figure_checks import assert_no_legend_over_data

from transfertheory.figures import marks, merlin_fig, mtl_fig1, tdr_fig
from transfertheory.figures.output import metadata_record

@pytest.fixture(scope="module")
def tdr():
    return tdr_fig.build(widths=(16, 64), draws=2, similarity_width=64, angles=2, backend="numpy")


@pytest.fixture(scope="module")
def mtl():
    return mtl_fig1.build(depths=(1, 2, 4, 8), lam_taus=(0.0, 0.3), runs=2, test_tasks=2)


@pytest.fixture(scope="module")
def merlin():
    return merlin_fig.build(d=6, k=3, m=2, n_targets=(2, 4), draws=4, restarts=2, success_n=(2, 4),
                            success_draws=5, backend="numpy")


def _figure_text(out):
    return " ".join(text.get_text() for text in out.figure.texts)


# --------------------------------------------------------------------------- figures/marks.py


def test_left_out_text_says_how_many_converged_and_that_the_rest_are_left_out():
    assert marks.left_out_text("networks", 8, 8, "‖∇L‖ ≤ 1e-5") == "converged: networks 8/8; ‖∇L‖ ≤ 1e-5"
    assert "the 2 unconverged are left out" in marks.left_out_text("networks", 6, 8, "‖∇L‖ ≤ 1e-5")
    with pytest.raises(ValueError, match="converged"):
        marks.left_out_text("networks", 9, 8, "")


# --------------------------------------------------------------------------- tdr_fig


def test_tdr_fitted_lines_each_have_the_colour_of_their_points_and_differ(tdr):
    ax = tdr.figure.axes[0]
    fits = [line for line in ax.get_lines() if line.get_linestyle() == ":"]
    points = [line for line in ax.get_lines() if line.get_linestyle() == "None"]
    assert len(fits) == len(points) == len(tdr_fig.GAP_COLUMNS)
    fit_colors = [line.get_color() for line in fits]
    assert len(set(fit_colors)) == len(fits) and fit_colors == [line.get_color() for line in points]


def test_tdr_similarity_panels_show_a_width_of_the_width_panel(tdr):
    widths = set(tdr.data["width"])
    for ax in tdr.figure.axes[1:]:
        (shown,) = re.findall(r"m = (\d+)", ax.get_title())
        assert int(shown) in widths
    with pytest.raises(ValueError, match="similarity_width"):
        tdr_fig.build(widths=(16, 64), draws=2, similarity_width=32, angles=2, backend="numpy")


def test_tdr_difference_panel_shows_the_fine_tuning_distance_minus_its_bound(tdr):
    similarity = tdr.extra[0][1]
    ax = tdr.figure.axes[2]
    drawn = np.concatenate([np.asarray(line.get_ydata(), float) for line in ax.get_lines() if line.get_marker() == "o"])
    np.testing.assert_allclose(np.sort(drawn), np.sort(similarity["finetune_mean"] - similarity["finetune_bound"]))


def test_tdr_states_its_convergence_on_the_figure_and_records_the_same_counts(tdr):
    networks = 2 * (len(tdr.data) + len(tdr.extra[0][1]))
    assert f"converged: networks {networks}/{networks}" in _figure_text(tdr)
    assert (tdr.data["final_loss_max"] < 1e-6).all()
    loss = max(tdr.data["final_loss_max"].max(), tdr.extra[0][1]["final_loss_max"].max())
    assert f"largest final training loss {loss:.1g}" in _figure_text(tdr)
    record = metadata_record("tdr_fig", tdr)["convergence"]
    assert record == {"networks": {"converged": networks, "total": networks, "loss_max": loss}}


def test_tdr_legends_keep_off_the_data(tdr):
    assert_no_legend_over_data(tdr.figure)


# --------------------------------------------------------------------------- mtl_fig1


def test_mtl_has_the_papers_three_panels(mtl):
    assert len(mtl.figure.axes) == 3
    assert set(mtl.data["panel"]) == {"depth", "inner_lam_tau", "lam_tau"}
    inner = mtl.data[mtl.data["panel"] == "inner_lam_tau"]
    assert (inner["lam_tau_hat"] == mtl_fig1.FIXED_LAM_TAU_HAT).all() and inner["lam_tau"].nunique() == 2


def test_mtl_training_lam_tau_panel_is_flat_as_the_cancellation_says(mtl):
    inner = mtl.data[mtl.data["panel"] == "inner_lam_tau"]
    assert set(inner["variant"]) == set(mtl_fig1.MTL.ANIL_VARIANTS)
    for _, rows in inner.groupby("variant"):
        assert rows["gap_mean"].to_numpy() == pytest.approx(rows["gap_mean"].iloc[0], rel=1e-6)


def test_mtl_panel_against_the_papers_trend_says_so_on_the_figure(mtl):
    both = mtl.data[(mtl.data["panel"] == "lam_tau") & (mtl.data["variant"] == "derivation")]
    assert both["gap_mean"].iloc[-1] < both["gap_mean"].iloc[0]  # falls where the paper's rises
    note = " ".join(text.get_text() for text in mtl.figure.axes[2].texts)
    assert "paper" in note and "rising" in note and "errata" in note


def test_mtl_legends_keep_off_the_data(mtl):
    assert_no_legend_over_data(mtl.figure)


# --------------------------------------------------------------------------- merlin_fig


def test_merlin_loss_intervals_are_positive_and_bracket_the_mean(merlin):
    losses = merlin.data
    assert (losses["loss_low"] > 0).all()
    assert (losses["loss_low"] <= losses["loss_mean"]).all() and (losses["loss_mean"] <= losses["loss_high"]).all()
    ax = merlin.figure.axes[0]
    ax.figure.canvas.draw()
    assert ax.get_ylim()[0] > 0 and ax.get_ylim()[0] <= losses["loss_low"].min()


def test_merlin_success_intervals_lie_in_the_unit_interval(merlin):
    success = merlin.extra[0][1]
    assert ((0 <= success["success_low"]) & (success["success_low"] <= success["success"])
            & (success["success"] <= success["success_high"]) & (success["success_high"] <= 1)).all()
    assert (success["success_high"] > success["success_low"]).all()


def test_merlin_states_its_convergence_on_the_figure(merlin):
    runs = int(merlin.data["seeds"].sum() + merlin.extra[0][1]["seeds"].sum())
    assert re.search(rf"converged: kept flows \d+/{runs}", _figure_text(merlin))


def test_merlin_legends_keep_off_the_data(merlin):
    assert_no_legend_over_data(merlin.figure)
