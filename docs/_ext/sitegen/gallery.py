"""The figures gallery, generated from the figures registry and the committed quick-profile outputs.

For every registered figure: a thumbnail in the grid, and a page with the image, the paper figure or equations it
reproduces, the commands that rebuild it (quick and paper profiles), the parameters, backend and runtime read
from ``figures/NAME.json``, the agreement of simulated points with theory, and links to its code. Nothing is
simulated: a figure whose files are not committed is listed with the command that builds it.
"""
from __future__ import annotations

from pathlib import Path

from transfertheory.figures.gallery import format_value, load_metadata
from transfertheory.figures.output import THUMBNAIL
from transfertheory.figures.catalog import figures

from .text import heading, rst_escape

#: how a generated gallery page reaches the repository's figures/ folder
FIGURES_FROM_PAGE = "../../figures"


def _parameter_table(title: str, params) -> list[str]:
    rows = [f"   * - ``{key}``\n     - {rst_escape(format_value(value))}" for key, value in params.items()]
    if not rows:
        return [f"{title}: none.", ""]
    return [f".. list-table:: {title}", "   :header-rows: 1", "", "   * - parameter", "     - value", *rows, ""]


def _agreement(meta: dict) -> list[str]:
    agreement = meta.get("agreement")
    if not agreement:
        return ["This figure compares no simulated points with a closed form point by point "
                "(see its description).", ""]
    return [f"Simulation against exact theory: {agreement.get('outside')} of {agreement.get('points')} points "
            f"outside {rst_escape(agreement.get('tolerance', '?'))}; largest \\|z\\| = "
            f"{agreement.get('largest_abs_z')}; {agreement.get('converged_draws')}/{agreement.get('draws')} "
            "draws converged.", ""]


def _built(figure, meta: dict) -> list[str]:
    runtime = meta.get("runtime_s")
    timing = f", {runtime:.1f} s" if isinstance(runtime, (int, float)) else ""
    return [f"The image is the committed ``{meta.get('profile', '?')}`` build (backend {meta.get('backend', '?')}"
            f"{timing}, transfertheory {meta.get('version', '?')}).", "",
            *_parameter_table("Parameters of this build", meta.get("parameters", {})), *_agreement(meta)]


def figure_page(figure, folder: Path) -> str:
    """The page of one registered figure."""
    meta = load_metadata(folder / f"{figure.name}.json")
    builder = getattr(figure.build, "func", figure.build)  # a functools.partial names its function in .func
    module = builder.__module__
    lines = [*heading(f"``{figure.name}`` — {rst_escape(figure.title)}")]
    if meta is not None and (folder / f"{figure.name}.png").is_file():
        lines += [f".. image:: {FIGURES_FROM_PAGE}/{figure.name}.png", f"   :alt: {figure.name}", ""]
    lines += [rst_escape(figure.description), "",
              f"**Reproduces:** {rst_escape(', '.join(figure.sources))}.", "",
              "**Rebuild it** (quick: CPU-sized, the committed image; paper: the paper's sizes):", "",
              ".. code-block:: bash", "",
              f"   python -m transfertheory.figures {figure.name} --quick",
              f"   python -m transfertheory.figures {figure.name} --paper", ""]
    lines += (_built(figure, meta) if meta is not None
              else ["Not built in this repository yet; the quick command above builds it.", ""])
    lines += _parameter_table("Parameters of the paper profile", figure.profiles["paper"])
    lines += [f"**Code:** the module :mod:`{module}` (builder :func:`{module}.{builder.__name__}`, with "
              "its source), registered in :mod:`transfertheory.figures.catalog`.", ""]
    return "\n".join(lines)


def gallery_index(folder: Path) -> str:
    """The thumbnail grid of every registered figure."""
    lines = [*heading("Figures gallery"),
             "Every figure of the figures registry (``python -m transfertheory.figures --list``), as committed at "
             "the quick profile; click a thumbnail for the figure, its sources, commands and parameters.", "",
             ".. container:: gallery-grid", ""]
    for figure in figures().values():
        thumb = folder / f"{figure.name}{THUMBNAIL}"
        lines += ["   .. container:: gallery-item", ""]
        if thumb.is_file():
            lines += [f"      .. image:: {FIGURES_FROM_PAGE}/{figure.name}{THUMBNAIL}",
                      f"         :target: {figure.name}.html", f"         :alt: {figure.name}", ""]
        lines += [f"      :doc:`{figure.name} <{figure.name}>` — {rst_escape(figure.title)}", ""]
    lines += [".. toctree::", "   :hidden:", "", *(f"   {name}" for name in figures()), ""]
    return "\n".join(lines)


def gallery_pages(folder: Path) -> dict[str, str]:
    """``{path under docs/: text}`` of the gallery (``folder``: the repository's figures/)."""
    pages = {"gallery/index.rst": gallery_index(folder)}
    pages.update({f"gallery/{name}.rst": figure_page(figure, folder) for name, figure in figures().items()})
    return pages
