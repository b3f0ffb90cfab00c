"""What a reader checks by eye on a figure, as test helpers: no legend covers plotted data.

:func:`legend_collisions` draws a matplotlib figure and lists every legend whose box (in display coordinates,
pixels) covers something plotted on any 2-D axes of the figure: a line segment (a line crossing the box counts,
not only its vertices), a marker, an error bar or filled area, an image or a mesh (a heat map's cells). Colour
bars and the legend's own artists are not data. 3-D axes are skipped (their projected artists have no stable
display path).
"""
from __future__ import annotations

import numpy as np
from matplotlib.collections import Collection, QuadMesh
from matplotlib.image import AxesImage
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

__all__ = ["legend_collisions", "assert_no_legend_over_data"]


def _legends(fig):
    legends = [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
    return legends + list(fig.legends)


def _data_axes(fig):
    return [ax for ax in fig.axes if ax.name != "3d" and ax.get_label() != "<colorbar>"]


def _line_hits(line, box):
    if not line.get_visible() or len(line.get_xydata()) == 0:
        return False
    path = line.get_transform().transform_path(line.get_path()).cleaned(remove_nans=True)
    points = path.vertices[np.isfinite(path.vertices).all(axis=1)]
    marker = line.get_marker() not in (None, "", " ", "None", "none")
    pad = line.get_markersize() / 2 * line.figure.dpi / 72 if marker else 0.0
    if marker and points.size and box.padded(pad).count_contains(points):
        return True
    drawn = line.get_linestyle() not in ("None", "none", "", " ")
    return drawn and len(path.vertices) > 1 and path.intersects_bbox(box, filled=False)


def _collection_hits(collection, box):
    if not collection.get_visible():
        return False
    offsets = collection.get_offsets()
    if len(offsets) and not isinstance(collection, QuadMesh):
        shown = collection.get_offset_transform().transform(np.asarray(offsets, dtype=float))
        if box.count_contains(shown[np.isfinite(shown).all(axis=1)]):
            return True
    transform = collection.get_transform()
    return any(transform.transform_path(path).intersects_bbox(box, filled=True)
               for path in collection.get_paths() if len(path.vertices))


def _artist_hits(artist, box, renderer):
    if isinstance(artist, Line2D):
        return _line_hits(artist, box)
    if isinstance(artist, Collection):
        return _collection_hits(artist, box)
    if isinstance(artist, AxesImage):
        return artist.get_visible() and artist.get_window_extent(renderer).overlaps(box)
    if isinstance(artist, Patch) and artist.get_visible():
        return artist.get_transform().transform_path(artist.get_path()).intersects_bbox(box, filled=True)
    return False


def legend_collisions(fig):
    """Draw ``fig``; the list of (legend's first label, axes title, artist) where a legend box covers plotted data."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    found = []
    for legend in _legends(fig):
        box = legend.get_window_extent(renderer)
        label = legend.get_texts()[0].get_text() if legend.get_texts() else ""
        for ax in _data_axes(fig):
            artists = ax.lines + ax.collections + ax.images + [p for p in ax.patches]
            for artist in artists:
                if _artist_hits(artist, box, renderer):
                    found.append((label, ax.get_title(), artist))
    return found


def assert_no_legend_over_data(fig):
    """Fail with the colliding legends and artists if any legend box covers plotted data."""
    collisions = legend_collisions(fig)
    assert not collisions, "legend over data: " + "; ".join(f"legend {lab!r} covers {art!r} in {title!r}"
                                                            for lab, title, art in collisions)
