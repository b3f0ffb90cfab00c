r"""Marks every figure shares: legends outside the data, and what fraction of the simulated runs converged.

A legend inside an axes hides the points and cells under it, so :func:`legend_below` puts it under the axes' tick
labels and axis label. A simulated figure says on the
figure how many of its runs converged and to what loss: :func:`convergence_text` writes "converged: scratch
18/45, linear 45/45" from counts the simulator's table gives, and :func:`annotate_convergence` adds it to a
panel's title (so it stays in the panel's own space and is part of any layout computation).
"""
from __future__ import annotations

from typing import Mapping

__all__ = ["legend_below", "below_drops", "errorbar_by_convergence", "convergence_text", "left_out_text",
           "annotate_convergence", "title_with_footnote"]

#: gap between the axes (or its tick labels) and a legend outside it, in points
_GAP_POINTS = 4.0


def below_drops(*axes) -> list:
    """For each of ``axes``, the height in pixels of what hangs under its frame (x tick labels, x label): what a
    legend placed ``"below"`` must clear. Each axes' ``get_tightbbox`` lays out its own ticks, labels and aspect:
    the same extents as after a full draw. A figure with a layout engine (constrained layout) is first drawn
    without rendering, so that the engine places the axes (their width sets the ticks); one without is not drawn
    at all (no pass over the other panels, a 3-D surface's facets included). A figure with several legends below
    its panels is laid out once: valid while no layout engine moves the axes in between."""
    figure = axes[0].figure
    renderer = figure.canvas.get_renderer()
    if figure.get_layout_engine() is not None:
        with renderer._draw_disabled():
            figure.draw(renderer)
    drops = []
    for ax in axes:
        lowest = ax.get_tightbbox(renderer).y0  # first: it applies the aspect that sets the frame
        drops.append(ax.get_window_extent(renderer).y0 - lowest)
    return drops


def legend_below(ax, handles=None, labels=None, drop=None, **kwargs):
    """Draw ``ax``'s legend outside its data area, centred under the axes, below its x tick labels and x label (their
    height is measured when this is called, in points — or given as ``drop``, in pixels, from :func:`below_drops` —
    so a later layout change that resizes the axes keeps the legend clear of them); returns the Legend.
    ``handles``/``labels``: as in ``ax.legend`` (default: the axes' labelled artists); ``kwargs`` go to ``ax.legend``
    (``fontsize``, ``ncol``, …). (Beside the axes is ``ax.legend``'s own ``loc="upper left"``,
    ``bbox_to_anchor=(1, 1)``.)
    """
    from matplotlib.transforms import ScaledTranslation

    if handles is None:
        handles, labels = ax.get_legend_handles_labels()
    figure = ax.figure
    drop = below_drops(ax)[0] if drop is None else drop
    gap = ScaledTranslation(0.0, -(drop * 72 / figure.dpi + _GAP_POINTS) / 72, figure.dpi_scale_trans)
    return ax.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0), borderaxespad=0.0,
                     bbox_transform=ax.transAxes + gap, **kwargs)


def errorbar_by_convergence(ax, x, y, yerr, complete, label=None, hollow_label=None, **style):
    """``ax.errorbar`` of the points whose runs all converged (boolean mask ``complete``), then of the others hollow
    (``mfc="none"``, one point larger) in the same colour; ``style``: ``errorbar``'s keywords, ``ms`` among them.
    Returns the colour."""
    color = ax.errorbar(x[complete], y[complete], yerr=yerr[complete], label=label, **style).lines[0].get_color()
    if not complete.all():
        hollow = {**style, "color": color, "mfc": "none", "ms": style["ms"] + 1}
        ax.errorbar(x[~complete], y[~complete], yerr=yerr[~complete], label=hollow_label, **hollow)
    return color


def convergence_text(counts: Mapping[str, tuple[int, int]], detail: str = "") -> str:
    """"converged: scratch 18/45, linear 45/45" from ``{label: (converged, total)}``; ``detail`` is appended
    after a semicolon (e.g. the stopping rule or the loss reached)."""
    if not counts:
        raise ValueError("counts must name at least one method")
    for label, (done, total) in counts.items():
        if not 0 <= done <= total:
            raise ValueError(f"counts[{label!r}] must be (converged, total) with 0 <= converged <= total, "
                             f"got {(done, total)}")
    text = "converged: " + ", ".join(f"{label} {int(done)}/{int(total)}" for label, (done, total) in counts.items())
    return f"{text}; {detail}" if detail else text


def left_out_text(what: str, converged: int, total: int, criterion: str) -> str:
    """:func:`convergence_text` of a figure that leaves its unconverged runs out of every mark: "converged: networks
    118/120; ‖∇L‖ ≤ 1e-5; the 2 unconverged are left out" (``criterion``: the stopping rule or the loss reached)."""
    omitted = "" if converged == total else f"; the {total - converged} unconverged are left out"
    return convergence_text({what: (converged, total)}, criterion + omitted)


def annotate_convergence(ax, counts: Mapping[str, tuple[int, int]], detail: str = ""):
    """Add :func:`convergence_text` as a last line of ``ax``'s title (same font size); returns the text added."""
    text = convergence_text(counts, detail)
    title = ax.get_title()
    ax.set_title(f"{title}\n{text}" if title else text, fontsize=ax.title.get_fontsize())
    return text


def title_with_footnote(fig, title, footnote):
    """Give ``fig`` its ``title`` and a one-line ``footnote`` centred at its foot (8 pt, e.g. the convergence of a
    figure that leaves its unconverged runs out: :func:`left_out_text`), the panels laid out above that line."""
    fig.suptitle(title)
    fig.text(0.5, 0.01, footnote, ha="center", va="bottom", fontsize=8)
    fig.tight_layout(rect=(0, 0.04, 1, 1))
