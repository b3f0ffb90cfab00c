"""The figures' shared marks (:mod:`transfertheory.figures.marks`) and the legend check of ``figure_checks``.

The check must catch a legend over data — a line crossing the legend box with no vertex inside it, a marker, a
heat-map cell — and pass a legend that :func:`legend_below` put under the axes.
"""
import numpy as np
import pytest

from figure_checks import assert_no_legend_over_data, legend_collisions
from transfertheory.figures.marks import (annotate_convergence, below_drops, convergence_text,
                                         errorbar_by_convergence, legend_below, title_with_footnote)
from transfertheory.figures.output import use_agg


@pytest.fixture
def plt():
    use_agg()
    import matplotlib.pyplot as pyplot

    yield pyplot
    pyplot.close("all")


def test_the_check_sees_a_line_crossing_the_legend_box_without_a_vertex_inside(plt):
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0.5, 0.5], label="a horizontal line: two vertices, both outside any legend")
    ax.legend(loc="center")
    assert len(legend_collisions(fig)) == 1


def test_the_check_sees_markers_and_heat_map_cells_under_a_legend(plt):
    fig, (left, right) = plt.subplots(1, 2)
    left.plot([0.5], [0.5], "o", label="one point")
    left.legend(loc="center")
    right.pcolormesh(np.arange(4), np.arange(4), np.ones((3, 3)))
    right.plot([], [], label="nothing")
    right.legend(loc="upper right")
    covered = {title for _, title, _ in legend_collisions(fig)}
    assert len(legend_collisions(fig)) == 2 and covered == {""}


def test_legend_below_leaves_the_data_visible(plt):
    fig, ax = plt.subplots()
    ax.pcolormesh(np.arange(4), np.arange(4), np.ones((3, 3)))
    ax.plot(np.linspace(0, 3, 50), np.linspace(0, 3, 50), label="diagonal")
    ax.set(xlabel="x label", ylabel="y")
    fig.subplots_adjust(right=0.7, bottom=0.3)
    legend = legend_below(ax, fontsize=8)
    assert legend is ax.get_legend()
    assert_no_legend_over_data(fig)
    assert legend.get_window_extent().y1 <= ax.xaxis.label.get_window_extent().y0


def test_below_drops_measured_before_any_draw_are_what_a_full_draw_measures(plt):
    """The drop under each axes (tick labels, rotated or two-line x labels, an image's equal aspect that shrinks the
    frame, a colour bar, a 3-D panel beside them) measured before the figure is drawn equals the drop after a full
    render, so a legend placed with it lands on the same pixel."""
    fig = plt.figure(figsize=(12, 3))
    fig.add_subplot(1, 4, 1, projection="3d").plot_surface(*np.meshgrid(np.arange(3.0), np.arange(3.0)),
                                                           np.ones((3, 3)))
    axes = [fig.add_subplot(1, 4, k + 2) for k in range(3)]
    for k, ax in enumerate(axes):
        ax.plot([0, 10 ** k], [0, 1], label="line")
        ax.set_xlabel("two\nlines" if k == 1 else "x")
        ax.tick_params(axis="x", labelrotation=45 * (k == 2))
    fig.colorbar(axes[0].imshow(np.ones((2, 4)), extent=(0, 40, 0, 1), aspect="equal"), ax=axes[0])
    drops = below_drops(*axes)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    assert drops == [ax.get_window_extent(renderer).y0 - ax.get_tightbbox(renderer).y0 for ax in axes]
    assert drops[1] > drops[0] and drops[2] > drops[0] > 0


def test_below_drops_of_a_constrained_figure_are_those_after_the_engine_placed_the_axes(plt):
    """Under constrained layout the engine sets each axes' width (and so its ticks) when the figure is drawn: the
    drops are measured after it ran, as a full draw measures them."""
    fig, axes = plt.subplots(1, 2, figsize=(6, 2.5), layout="constrained")
    for ax in axes:
        ax.plot(np.linspace(0, 1234.5, 5), np.arange(5.0))
        ax.set_xlabel("a long x label that the engine makes room for")
    drops = below_drops(*axes)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    assert drops == [ax.get_window_extent(renderer).y0 - ax.get_tightbbox(renderer).y0 for ax in axes]


def test_convergence_text_and_title_line(plt):
    assert convergence_text({"scratch": (18, 45), "linear": (45, 45)}) == "converged: scratch 18/45, linear 45/45"
    assert convergence_text({"x": (0, 3)}, "loss ≤ 1e-6") == "converged: x 0/3; loss ≤ 1e-6"
    fig, ax = plt.subplots()
    ax.set_title("(c) risk")
    annotate_convergence(ax, {"scratch": (2, 9)})
    assert ax.get_title() == "(c) risk\nconverged: scratch 2/9"


@pytest.mark.parametrize("counts", [{}, {"x": (4, 3)}, {"x": (-1, 3)}])
def test_convergence_text_refuses_impossible_counts(counts):
    with pytest.raises(ValueError, match="counts"):
        convergence_text(counts)


def test_errorbar_by_convergence_draws_the_unconverged_points_hollow_in_the_same_colour(plt):
    fig, ax = plt.subplots()
    x, err = np.array([1.0, 2.0, 3.0]), np.full(3, 0.1)
    color = errorbar_by_convergence(ax, x, x**2, err, np.array([True, False, True]), fmt="o", ms=4, label="sim",
                                    hollow_label="some draws unconverged")
    filled, hollow = (container.lines[0] for container in ax.containers)
    assert filled.get_xdata().tolist() == [1.0, 3.0] and hollow.get_xdata().tolist() == [2.0]
    assert hollow.get_markerfacecolor() == "none" and (filled.get_markersize(), hollow.get_markersize()) == (4, 5)
    assert filled.get_color() == hollow.get_color() == color
    assert ax.get_legend_handles_labels()[1] == ["sim", "some draws unconverged"]
    errorbar_by_convergence(ax, x, x, err, np.ones(3, bool), fmt="s", ms=4)  # all converged: nothing hollow
    assert len(ax.containers) == 3


def test_title_with_footnote_keeps_the_panels_above_the_footnote(plt):
    fig, axes = plt.subplots(1, 2)
    title_with_footnote(fig, "a title", "converged: networks 3/4; the 1 unconverged are left out")
    note = fig.texts[-1]
    assert fig._suptitle.get_text() == "a title" and note.get_text().startswith("converged: networks 3/4")
    renderer = fig.canvas.get_renderer()
    top_of_note = note.get_window_extent(renderer).y1
    assert all(ax.get_tightbbox(renderer).y0 > top_of_note for ax in axes)

