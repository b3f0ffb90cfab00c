"""Headless figure output: PNG / PDF plus the CSV of the plotted data."""
from __future__ import annotations

from pathlib import Path

FORMATS = {"png": ("png",), "pdf": ("pdf",), "both": ("png", "pdf")}


def use_agg() -> None:
    """Select matplotlib's non-interactive Agg backend (call before pyplot)."""
    import matplotlib

    matplotlib.use("Agg", force=True)


def output_paths(name: str, out: str | Path, fmt: str = "both") -> dict[str, Path]:
    """Paths ``{ext: out/NAME.ext}`` for the figure formats and the CSV."""
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {sorted(FORMATS)}, got {fmt!r}")
    out = Path(out)
    return {ext: out / f"{name}.{ext}" for ext in (*FORMATS[fmt], "csv")}


def save_figure(fig, data, name: str, out: str | Path = "figures", fmt: str = "both", dpi: int = 150) -> list[Path]:
    """Write ``fig`` (PNG/PDF per ``fmt``) and ``data`` (a DataFrame) as CSV.

    Returns the written paths. Creates ``out`` if needed.
    """
    paths = output_paths(name, out, fmt)
    Path(out).mkdir(parents=True, exist_ok=True)
    for ext, path in paths.items():
        if ext == "csv":
            data.to_csv(path, index=False)
        else:
            fig.savefig(path, dpi=dpi, bbox_inches="tight")
    return list(paths.values())
