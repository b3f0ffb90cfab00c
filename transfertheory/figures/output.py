r"""Figure output: PNG / PDF, the CSV of the plotted data and a metadata file that makes the CSV self-explanatory.

Every figure ``NAME`` is written into one folder as

* ``NAME.png`` and/or ``NAME.pdf`` (``fmt``: ``png``, ``pdf`` or ``both``);
* ``NAME.csv`` — the tidy data behind the figure, and optional extra tables
  ``NAME{suffix}.csv`` (e.g. ``_simulated``, ``_grid``);
* ``NAME.json`` — the metadata (:func:`metadata_record`): what the figure is,
  its parameters, the definition and unit of every CSV column, the package
  version, the array backend, the runtime, the agreement counts of simulated
  points with theory, and the command line.

A figure's outputs are written together: files of the same ``NAME`` that the
current run does not write (a ``NAME_simulated.csv`` left from an earlier run
with ``--simulate``, a ``NAME.pdf`` from an earlier ``--format both``) are
removed, so the folder never shows a CSV beside a figure drawn from other data.
"""
from __future__ import annotations

import json
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from ..cli_support import staged_files

__all__ = [
    "FORMATS",
    "THUMBNAIL",
    "DPI",
    "FigureOutput",
    "use_agg",
    "layout_boxes",
    "tight_bbox",
    "output_paths",
    "write_csv",
    "save_figure",
    "metadata_record",
    "write_outputs",
    "remove_stale",
]

FORMATS = {"png": ("png",), "pdf": ("pdf",), "both": ("png", "pdf")}
#: every figure format an earlier run may have left behind
_ALL_FORMATS = ("png", "pdf")
#: suffix and width in pixels of the small PNG the figures README shows
THUMBNAIL, THUMBNAIL_WIDTH = "_thumb.png", 480
#: the resolution (dots per inch) of the written PNGs; a figure created at it is laid out, measured and drawn on one
#: renderer (its text measured once), and its PNG cut from that drawing (:func:`tight_bbox`)
DPI = 150
#: zlib level of a PNG cut from the drawn canvas (:func:`_save_png`): an opaque figure written as RGB at level 3
#: encodes in half the time of matplotlib's RGBA at level 6 (PIL's default), in a file of about the same size
PNG_COMPRESS_LEVEL = 3


@dataclass(frozen=True)
class FigureOutput:
    """What a figure builder returns: the drawing, its data and everything the metadata file needs.

    ``columns`` maps every column of ``data`` to its definition with units; ``extra`` holds further tables
    written as ``NAME{suffix}.csv``, each with its own column definitions; ``agreement`` (simulated figures only)
    the counts of :func:`transfertheory.figures.stats.agreement_record`; ``summary`` the console lines.
    ``bbox_inches``: the region of the figure its PNG/PDF show — ``"tight"`` (measured by ``savefig``, one more
    layout pass per file) or the :func:`tight_bbox` a builder measured once its layout was final.
    """

    figure: Any
    data: Any
    columns: Mapping[str, str]
    parameters: Mapping[str, Any]
    summary: tuple[str, ...] = ()
    extra: tuple[tuple[str, Any, Mapping[str, str]], ...] = ()
    agreement: Mapping[str, Any] | None = None
    notes: Mapping[str, Any] = field(default_factory=dict)
    bbox_inches: Any = "tight"


def use_agg() -> None:
    """Select matplotlib's non-interactive Agg backend (call before pyplot)."""
    import matplotlib

    matplotlib.use("Agg", force=True)


def layout_boxes(fig):
    """``{artist: its tight bounding box in pixels}`` of everything :meth:`Figure.get_tightbbox` measures: the
    figure's visible artists that take part in the layout (its title, …) but its axes, then each visible axes, all
    laid out on the figure's own canvas without drawing it. A builder that places further marks from them (legends
    under panels, whose drop is the panel's box) passes them, with the boxes of what it added, to
    :func:`tight_bbox`: the figure is then laid out once instead of twice."""
    renderer = fig.canvas.get_renderer()
    artists = [a for a in fig.get_children() if a not in fig.axes and a.get_visible() and a.get_in_layout()]
    return {a: a.get_tightbbox(renderer) for a in artists + [ax for ax in fig.axes if ax.get_visible()]}


def tight_bbox(fig, boxes=None):
    """The region ``savefig(bbox_inches="tight")`` writes: the tight bounding box of ``fig`` (inches), padded by
    ``rcParams["savefig.pad_inches"]``, measured on the figure's own canvas (an Agg canvas) without drawing it (each
    artist lays itself out), then widened to whole pixels at the figure's dpi (by less than a pixel on each side);
    nothing may be added or moved afterwards. Passed to ``savefig`` it saves the layout pass ``"tight"`` costs for
    every file written; a PNG at the figure's dpi is then cut from one drawing of the whole figure
    (:func:`write_outputs`).

    ``boxes``: the pixel boxes the figure's tight box is the union of, already measured — :func:`layout_boxes`
    plus the boxes of the artists added to its axes since (their legends: an axes' tight box is the union of its
    own and its children's) — instead of measuring the whole figure again; the union keeps what
    :meth:`Figure.get_tightbbox` keeps (finite, not empty)."""
    import math

    import matplotlib as mpl
    from matplotlib.transforms import Bbox

    if boxes is None:
        box = fig.get_tightbbox(fig.canvas.get_renderer())
    else:
        box = Bbox.union([b for b in boxes if b is not None and math.isfinite(b.width) and math.isfinite(b.height)
                          and (b.width != 0 or b.height != 0)]).transformed(fig.dpi_scale_trans.inverted())
    box = box.padded(mpl.rcParams["savefig.pad_inches"])
    dpi = fig.dpi
    return Bbox.from_extents(math.floor(box.x0 * dpi) / dpi, math.floor(box.y0 * dpi) / dpi,
                             math.ceil(box.x1 * dpi) / dpi, math.ceil(box.y1 * dpi) / dpi)


def _pixel_box(fig, dpi, bbox_inches):
    """``bbox_inches`` as whole pixels ``(left, top, right, bottom)`` of the drawn figure, rows counted from the top,
    when a PNG at ``dpi`` can be cut from a drawing of the whole figure exactly as ``savefig`` would draw it: a
    measured box (:func:`tight_bbox`) on whole pixels inside the figure, the figure at ``dpi``, drawn on its own
    canvas, the default colours of ``savefig``. None otherwise."""
    import matplotlib as mpl
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.transforms import Bbox

    if (not isinstance(bbox_inches, Bbox) or fig.dpi != dpi or type(fig.canvas) is not FigureCanvasAgg
            or mpl.rcParams["savefig.transparent"] or mpl.rcParams["savefig.facecolor"] != "auto"
            or mpl.rcParams["savefig.edgecolor"] != "auto"):
        return None
    width, height = fig.canvas.get_width_height()
    x0, y0, x1, y1 = (round(v * dpi) for v in bbox_inches.extents)
    if not (0 <= x0 < x1 <= width and 0 <= y0 < y1 <= height) or any(
            abs(v * dpi - round(v * dpi)) > 1e-6 for v in bbox_inches.extents):
        return None
    return x0, height - y1, x1, height - y0


def _save_png(fig, path, dpi, bbox_inches):
    """Write ``fig`` as a PNG: cut from one drawing of the whole figure on its canvas (the renderer that laid it
    out, its text already measured) when :func:`_pixel_box` allows, the pixels ``savefig`` draws for that region,
    encoded by :func:`_encode_png`; else by ``savefig``."""
    box = _pixel_box(fig, dpi, bbox_inches)
    if box is None:
        fig.savefig(path, format="png", dpi=dpi, bbox_inches=bbox_inches)
        return
    import numpy as np

    left, top, right, bottom = box
    fig.canvas.draw()
    _encode_png(np.asarray(fig.canvas.buffer_rgba())[top:bottom, left:right], path, dpi)


def _encode_png(rgba, path, dpi):
    """Write the pixels ``rgba`` (rows × columns × 4 bytes, a view of the canvas) as the PNG ``path`` with
    matplotlib's metadata (``Software``, the ``dpi``): RGB when every pixel is opaque (an opaque figure's; the same
    image, a quarter fewer bytes to compress), else RGBA; zlib level :data:`PNG_COMPRESS_LEVEL`."""
    from PIL import Image

    image = Image.fromarray(rgba)
    if (rgba[..., 3] == 255).all():
        image = image.convert("RGB")
    image.save(path, format="png", pnginfo=_png_info(), dpi=(dpi, dpi), compress_level=PNG_COMPRESS_LEVEL)


def _png_info():
    """The text chunks of the PNGs written by PIL here: matplotlib's ``Software`` entry, as ``savefig`` writes it."""
    import matplotlib as mpl
    from PIL import PngImagePlugin

    info = PngImagePlugin.PngInfo()
    info.add_text("Software", f"Matplotlib version{mpl.__version__}, https://matplotlib.org/")
    return info


def _write_thumbnail(fig, png, path):
    """Write the gallery's thumbnail ``path``, :data:`THUMBNAIL_WIDTH` pixels wide: the figure's PNG ``png``
    (already written) reduced by PIL's Lanczos filter, as gallery builders such as sphinx-gallery do — the picture
    the thumbnail links to, in a few milliseconds instead of a second drawing of the figure at a small dpi (which
    re-lays out a constrained-layout figure); drawn by ``savefig`` at that dpi when no PNG was written."""
    if png is None:
        fig.savefig(path, format="png", dpi=THUMBNAIL_WIDTH / fig.get_figwidth())
        return
    from PIL import Image

    with Image.open(png) as image:
        width, height = image.size
        size = (THUMBNAIL_WIDTH, max(1, round(height * THUMBNAIL_WIDTH / width)))
        thumbnail = image.resize(size, Image.Resampling.LANCZOS, reducing_gap=3.0)
        dpi = image.info.get("dpi", (DPI, DPI))[0] * THUMBNAIL_WIDTH / width
    thumbnail.save(path, format="png", pnginfo=_png_info(), dpi=(dpi, dpi), compress_level=PNG_COMPRESS_LEVEL)


def output_paths(name: str, out: str | Path, fmt: str = "both") -> dict[str, Path]:
    """Paths ``{ext: out/NAME.ext}`` for the figure formats and the CSV."""
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {sorted(FORMATS)}, got {fmt!r}")
    out = Path(out)
    return {ext: out / f"{name}.{ext}" for ext in (*FORMATS[fmt], "csv")}


#: characters that make pandas quote a text field (the fast path of :func:`write_csv` leaves such tables to pandas)
_NEEDS_QUOTES = (",", '"', "\n", "\r")


#: rows formatted and written at a time: the text of a 160 000-row table is never held whole (its strings would be
#: ~60 MB of fresh memory, whose page faults cost as much system time as the writing)
_CSV_CHUNK_ROWS = 10_000


def _column_fields(values):
    """A function ``(start, stop) → the CSV fields of rows start … stop − 1`` of one column, as pandas writes them
    (float64: ``repr``, NaN empty; integers, booleans and text: ``str``), or None for any other column or a text
    that pandas would quote. A column of few distinct floats is formatted once per value."""
    import numpy as np

    if values.dtype == np.float64:
        distinct, inverse = np.unique(values.view(np.int64), return_inverse=True)  # bits: −0.0 is not 0.0
        if distinct.size > values.size // 4:
            return lambda start, stop: [repr(x) if x == x else "" for x in values[start:stop].tolist()]
        text = np.array([repr(x) if x == x else "" for x in distinct.view(np.float64).tolist()], dtype=object)
        inverse = inverse.ravel()
        return lambda start, stop: text[inverse[start:stop]].tolist()
    if values.dtype.kind in "iub":
        return lambda start, stop: [str(x) for x in values[start:stop].tolist()]
    if values.dtype.kind in "OU" and all(type(x) is str and x and not any(c in x for c in _NEEDS_QUOTES)
                                         for x in set(values.tolist())):
        return lambda start, stop: values[start:stop].tolist()
    return None


def write_csv(frame, path):
    """Write ``frame`` as CSV without its index, the text of ``frame.to_csv(path, index=False)``.

    ``frame``: a DataFrame, or a mapping of column names to 1-D NumPy arrays of one length (written as the
    DataFrame of that mapping would be, without importing pandas when the fast path applies). Tables of numbers
    (the phase diagram's 160 000-row grid) are formatted here, several times faster than pandas, byte for byte the
    same, :data:`_CSV_CHUNK_ROWS` rows at a time; a table with another kind of column (text, categories, dates) is
    written by pandas itself.
    """
    import numpy as np

    if isinstance(frame, Mapping):
        names, columns = list(frame), [np.asarray(values) for values in frame.values()]
    else:
        names, columns = list(frame.columns), [frame[name].to_numpy() for name in frame.columns]
    fields = [_column_fields(values) for values in columns]
    # (one column: pandas quotes an empty row, "")
    if len(names) < 2 or None in fields or any(not str(name) or c in str(name) for name in names
                                               for c in _NEEDS_QUOTES):
        if isinstance(frame, Mapping):
            import pandas as pd

            frame = pd.DataFrame(dict(frame))
        frame.to_csv(path, index=False)
        return
    rows = len(columns[0])
    with open(path, "w", encoding="utf-8", newline="") as file:
        file.write(",".join(str(name) for name in names) + "\n")
        for start in range(0, rows, _CSV_CHUNK_ROWS):
            stop = min(start + _CSV_CHUNK_ROWS, rows)
            lines = map(",".join, zip(*(column(start, stop) for column in fields)))
            file.write("\n".join(lines) + "\n")


def _write_figure_files(stage, fig, data, paths, dpi, bbox_inches="tight"):
    """Write ``fig`` and ``data`` to the staged ``paths`` of :func:`output_paths` (``stage``: of ``staged_files``)."""
    for ext, path in paths.items():
        if ext == "csv":
            write_csv(data, stage(path))
        elif ext == "png":
            _save_png(fig, stage(path), dpi, bbox_inches)
        else:
            fig.savefig(stage(path), format=ext, dpi=dpi, bbox_inches=bbox_inches)


def save_figure(fig, data, name: str, out: str | Path = "figures", fmt: str = "both", dpi: int = DPI) -> list[Path]:
    """Write ``fig`` (PNG/PDF per ``fmt``) and ``data`` (a DataFrame) as CSV; returns the paths. Creates ``out``.

    The files are written under temporary names and renamed together (an interrupted call leaves none half-written).
    """
    paths = output_paths(name, out, fmt)
    with staged_files() as stage:
        _write_figure_files(stage, fig, data, paths, dpi)
    return list(paths.values())


def _json_value(value):
    """Parameters as JSON: NumPy scalars → Python numbers, ±inf/NaN → strings, tuples/arrays → lists."""
    import numpy as np

    if isinstance(value, Mapping):
        return {str(k): _json_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [_json_value(v) for v in value]
    if isinstance(value, (np.bool_, bool)):
        return bool(value)
    if isinstance(value, (np.integer, int)):
        return int(value)
    if isinstance(value, (np.floating, float)):
        value = float(value)
        return value if math.isfinite(value) else str(value)
    return value if value is None or isinstance(value, str) else str(value)


def metadata_record(name, output: FigureOutput, *, title="", description="", sources=(), backend=None,
                    runtime_s=None, files=(), context=None):
    """The content of ``NAME.json``: figure, parameters, column definitions, version, backend, runtime, agreement.

    ``backend`` is the array backend the simulations ran on (``"numpy"`` / ``"cupy"``), or None for a figure
    of closed forms only (they are evaluated with NumPy).
    """
    from .. import __version__

    tables = {f"{name}.csv": dict(output.columns)}
    tables.update({f"{name}{suffix}.csv": dict(columns) for suffix, _, columns in output.extra})
    record = {
        "figure": name,
        "title": title,
        "description": description,
        "sources": list(sources),
        "parameters": _json_value(dict(output.parameters)),
        "columns": tables,
        "package": "transfertheory",
        "version": __version__,
        "backend": backend if backend is not None else "numpy (closed forms only)",
        "runtime_s": None if runtime_s is None else round(float(runtime_s), 2),
        "agreement": None if output.agreement is None else _json_value(dict(output.agreement)),
        "command": " ".join(["python -m " + _entry_module(), *sys.argv[1:]]) if sys.argv else "",
        "files": [Path(f).name for f in files],
    }
    record.update(_json_value({**output.notes, **(context or {})}))
    return record


def _entry_module():
    """The module name of the running program (``python -m X``), or the script path."""
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    if spec is not None and spec.name:
        return spec.name.removesuffix(".__main__")
    return sys.argv[0] if sys.argv else "python"


def remove_stale(out: str | Path, name: str, keep, extra_suffixes=()) -> list[Path]:
    """Delete ``NAME.{png,pdf,csv,json}`` and ``NAME{suffix}.csv`` in ``out`` that are not in ``keep``.

    Only the file names a figure of this ``NAME`` can write are considered (so another configuration whose
    name merely starts with ``NAME`` is never touched). Returns the removed paths.
    """
    out = Path(out)
    keep = {Path(p).resolve() for p in keep}
    candidates = [out / f"{name}.{ext}" for ext in (*_ALL_FORMATS, "csv", "json")] + [out / f"{name}{THUMBNAIL}"]
    candidates += [out / f"{name}{suffix}.csv" for suffix in extra_suffixes]
    removed = []
    for path in candidates:
        if path.is_file() and path.resolve() not in keep:
            path.unlink()
            removed.append(path)
    return removed


def write_outputs(output: FigureOutput, name, out="figures", fmt="both", *, title="", description="", sources=(),
                  backend=None, runtime_s=None, extra_suffixes=(), thumbnail=False, context=None,
                  dpi=DPI) -> list[Path]:
    """Write figure, CSV(s) and ``NAME.json`` into ``out``, remove stale siblings; returns the written paths.

    ``extra_suffixes``: every suffix of an extra table this figure *can* write (those not written now are stale).
    ``thumbnail``: also write ``NAME_thumb.png``, :data:`THUMBNAIL_WIDTH` pixels wide (the gallery's).
    ``context``: further metadata fields (e.g. the registry profile). Raises :class:`OSError` when ``out`` cannot
    be written. Every file is written under a temporary name and they are renamed together at the end, so an
    interrupted or failed call leaves the earlier outputs as they were and no half-written file.
    """
    out = Path(out)
    figure_paths = output_paths(name, out, fmt)
    thumb_paths = [out / f"{name}{THUMBNAIL}"] if thumbnail else []
    extra_paths = [(out / f"{name}{suffix}.csv", table) for suffix, table, _ in output.extra]
    meta_path = out / f"{name}.json"
    paths = [*figure_paths.values(), *thumb_paths, *(path for path, _ in extra_paths), meta_path]
    record = metadata_record(name, output, title=title, description=description, sources=sources, backend=backend,
                             runtime_s=runtime_s, files=paths, context=context)
    with staged_files() as stage:
        _write_figure_files(stage, output.figure, output.data, figure_paths, dpi, output.bbox_inches)
        for path in thumb_paths:
            png = figure_paths.get("png")
            _write_thumbnail(output.figure, None if png is None else stage(png), stage(path))
        for path, table in extra_paths:
            write_csv(table, stage(path))
        stage(meta_path).write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    remove_stale(out, name, paths, {*extra_suffixes, *(s for s, _, _ in output.extra)})
    return paths
