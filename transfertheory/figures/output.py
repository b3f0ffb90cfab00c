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

from ..backend import device_description
from ..cli_support import staged_files

__all__ = [
    "FORMATS",
    "THUMBNAIL",
    "DPI",
    "FigureOutput",
    "use_agg",
    "subplots",
    "output_paths",
    "write_csv",
    "metadata_record",
    "write_outputs",
    "remove_stale",
]

FORMATS = {"png": ("png",), "pdf": ("pdf",), "both": ("png", "pdf")}
#: suffix and width in pixels of the small PNG the figures README shows
THUMBNAIL, THUMBNAIL_WIDTH = "_thumb.png", 480
#: the resolution (dots per inch) of the written PNGs
DPI = 150
#: zlib level of the written PNGs (PIL's ``compress_level``; its default is 6, docs/benchmarks.md, "Command lines")
PNG_COMPRESS_LEVEL = 3


@dataclass(frozen=True)
class FigureOutput:
    """What a figure builder returns: the drawing, its data and everything the metadata file needs.

    ``columns`` maps every column of ``data`` to its definition with units; ``extra`` holds further tables
    written as ``NAME{suffix}.csv``, each with its own column definitions; ``agreement`` (simulated figures only)
    the counts of :func:`transfertheory.figures.stats.agreement_record`; ``convergence`` (figures that state on
    their face how many runs of each kind converged) ``{kind: (converged, total, largest final loss)}``, written
    into the metadata as ``convergence``; ``summary`` the console lines. The PNG/PDF show the figure's tight
    bounding box (``savefig(bbox_inches="tight")``).
    """

    figure: Any
    data: Any
    columns: Mapping[str, str]
    parameters: Mapping[str, Any]
    summary: tuple[str, ...] = ()
    extra: tuple[tuple[str, Any, Mapping[str, str]], ...] = ()
    agreement: Mapping[str, Any] | None = None
    convergence: Mapping[str, tuple[int, int, float]] | None = None
    notes: Mapping[str, Any] = field(default_factory=dict)


def use_agg() -> None:
    """Select matplotlib's non-interactive Agg backend (call before pyplot)."""
    import matplotlib

    matplotlib.use("Agg", force=True)


def subplots(*args, **kwargs):
    """``matplotlib.pyplot.subplots(*args, **kwargs)`` on the Agg backend (:func:`use_agg`): (figure, axes)."""
    use_agg()
    import matplotlib.pyplot as plt

    return plt.subplots(*args, **kwargs)


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
    thumbnail.save(path, format="png", dpi=(dpi, dpi), compress_level=PNG_COMPRESS_LEVEL)


def output_paths(name: str, out: str | Path, fmt: str = "both") -> dict[str, Path]:
    """Paths ``{ext: out/NAME.ext}`` for the figure formats and the CSV."""
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {sorted(FORMATS)}, got {fmt!r}")
    out = Path(out)
    return {ext: out / f"{name}.{ext}" for ext in (*FORMATS[fmt], "csv")}


#: characters that make pandas quote a text field
_NEEDS_QUOTES = (",", '"', "\n", "\r")
#: rows formatted and written at a time, so that the text of a large table is never held whole
_CSV_CHUNK_ROWS = 10_000


def _float_fields(values):
    """The CSV fields of float64 ``values`` as pandas writes them: ``repr``, NaN empty (a column of few distinct
    values formatted once per value)."""
    import numpy as np

    distinct, inverse = np.unique(values.view(np.int64), return_inverse=True)  # bits: −0.0 is not 0.0
    if distinct.size > values.size // 4:  # mostly distinct values: each formatted where it stands
        return [repr(x) if x == x else "" for x in values.tolist()]
    text = np.array([repr(x) if x == x else "" for x in distinct.view(np.float64).tolist()], dtype=object)
    return text[inverse.ravel()].tolist()


def _field_writer(values):
    """The function that gives a slice of the column ``values`` as CSV fields, as pandas writes them (float64:
    :func:`_float_fields`; integers, booleans and text: ``str``), or None for another dtype or a text pandas would
    quote."""
    import numpy as np

    if values.dtype == np.float64:
        return _float_fields
    if values.dtype.kind in "iub":
        return lambda part: [str(x) for x in part.tolist()]
    if values.dtype.kind in "OU" and all(_plain(x) for x in set(values.tolist())):
        return lambda part: part.tolist()
    return None


def _plain(text):
    return type(text) is str and text != "" and not any(c in text for c in _NEEDS_QUOTES)


def write_csv(frame, path):
    """Write ``frame`` (a DataFrame, or a mapping of column names to 1-D NumPy arrays of one length) as CSV
    without its index: the text of ``DataFrame.to_csv(path, index=False)``.

    A mapping of two or more columns of numbers and plain text (the phase diagram's command line, which imports no
    pandas) is formatted here, the same bytes, :data:`_CSV_CHUNK_ROWS` rows at a time; anything else is written by
    pandas. Pandas' import and ``to_csv`` would add a second of CPU to the command's two (docs/benchmarks.md, "The
    phase diagram's CSV").
    """
    if isinstance(frame, Mapping):
        import numpy as np

        columns = [np.asarray(values) for values in frame.values()]
        writers = [_field_writer(values) for values in columns]
        if len(columns) > 1 and None not in writers and all(_plain(str(name)) for name in frame):
            with open(path, "w", encoding="utf-8", newline="") as file:
                file.write(",".join(map(str, frame)) + "\n")
                for start in range(0, len(columns[0]), _CSV_CHUNK_ROWS):
                    part = slice(start, start + _CSV_CHUNK_ROWS)
                    fields = [write(values[part]) for write, values in zip(writers, columns)]
                    file.write("\n".join(map(",".join, zip(*fields))) + "\n")
            return
        import pandas as pd

        frame = pd.DataFrame(dict(frame))
    frame.to_csv(path, index=False)


def _json_value(value):
    """Parameters as JSON: NumPy scalars → Python numbers, ±inf/NaN → strings, tuples/arrays → lists."""
    import numpy as np

    if isinstance(value, Mapping):
        return {str(k): _json_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [_json_value(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value if value is None or isinstance(value, (str, int, float)) else str(value)


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
        "device": device_description(backend or "numpy"),
        "commit": source_commit(),
        "runtime_s": None if runtime_s is None else round(float(runtime_s), 2),
        "agreement": None if output.agreement is None else _json_value(dict(output.agreement)),
        "command": " ".join(["python -m " + _entry_module(), *sys.argv[1:]]) if sys.argv else "",
        "files": [Path(f).name for f in files],
    }
    notes = dict(output.notes)
    if output.convergence is not None:
        notes["convergence"] = {kind: dict(converged=done, total=total, loss_max=loss)
                                for kind, (done, total, loss) in output.convergence.items()}
    record.update(_json_value({**notes, **(context or {})}))
    return record


def source_commit():
    """The git commit of the package's source (with ``+changes`` when its files differ from it), or None outside a
    git checkout."""
    import subprocess

    root = Path(__file__).resolve().parents[2]
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no", "--",
                                "transfertheory"], capture_output=True, text=True, timeout=10, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return head + ("+changes" if dirty.strip() else "")


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
    # every format an earlier run may have left behind
    candidates = [out / f"{name}.{ext}" for ext in (*FORMATS["both"], "csv", "json")] + [out / f"{name}{THUMBNAIL}"]
    candidates += [out / f"{name}{suffix}.csv" for suffix in extra_suffixes]
    removed = [path for path in candidates if path.is_file() and path.resolve() not in keep]
    for path in removed:
        path.unlink()
    return removed


def write_outputs(output: FigureOutput, name, out="figures", fmt="both", *, title="", description="", sources=(),
                  backend=None, runtime_s=None, extra_suffixes=(), thumbnail=False, context=None) -> list[Path]:
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
        for ext, path in figure_paths.items():  # the PNG first: the thumbnail is reduced from it
            if ext == "csv":
                write_csv(output.data, stage(path))
            else:
                png = {"pil_kwargs": {"compress_level": PNG_COMPRESS_LEVEL}} if ext == "png" else {}
                output.figure.savefig(stage(path), format=ext, dpi=DPI, bbox_inches="tight", **png)
        for path in thumb_paths:
            png = figure_paths.get("png")
            _write_thumbnail(output.figure, None if png is None else stage(png), stage(path))
        for path, table in extra_paths:
            write_csv(table, stage(path))
        stage(meta_path).write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    remove_stale(out, name, paths, {*extra_suffixes, *(s for s, _, _ in output.extra)})
    return paths
