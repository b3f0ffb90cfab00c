"""The figures gallery, generated from the figures registry and the committed quick- and paper-profile outputs.

For every registered figure: a thumbnail in the grid, and a page with the quick-profile image (``figures/NAME.png``)
beside the paper-size one (``figures/paper/NAME.png``), each with its runtime and device, the paper figure or
equations it reproduces, the commands that rebuild it (quick and paper profiles), the parameters, backend and
runtime read from ``figures/NAME.json`` and ``figures/paper/NAME.json``, the agreement of simulated points with
theory, and links to its code. Nothing is simulated: a figure whose files are not committed is listed with the
command that builds it, and one not built at the paper's size yet says so ("not yet run at the paper's size").
"""
from __future__ import annotations

from pathlib import Path

from transfertheory.figures.gallery import (NOT_YET_PAPER, PAPER, format_value, load_metadata, paper_build,
                                           stand_in_note, where_run)
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


def _built(meta: dict, where: str, reason: str = "") -> list[str]:
    return [f"The {where} image is the committed ``{meta.get('profile', '?')}`` build ({rst_escape(where_run(meta))}, "
            f"transfertheory {meta.get('version', '?')}).", "",
            *([f".. note:: Not the paper's sizes: {rst_escape(reason)}.", ""] if reason else []),
            *_parameter_table(f"Parameters of the {where} build", meta.get("parameters", {})), *_agreement(meta)]


def _cell(name: str, folder: Path, meta: dict | None, caption: str, command: str) -> list[str]:
    """One side of a figure's pair: the image and its caption, or what to run when it is not built."""
    lines = ["   .. container:: figure-cell", ""]
    relative = f"{FIGURES_FROM_PAGE}/{folder.name}" if folder.name == PAPER else FIGURES_FROM_PAGE
    if meta is not None and (folder / f"{name}.png").is_file():
        lines += [f"      .. image:: {relative}/{name}.png", f"         :alt: {name}, {caption}",
                  f"         :target: {relative}/{name}.png", "",
                  f"      **{caption}** — {rst_escape(where_run(meta))}.", ""]
    else:
        lines += [f"      **{caption}** — {NOT_YET_PAPER if folder.name == PAPER else 'not built yet'}: "
                  f"``{command}``.", ""]
    return lines


def figure_page(figure, folder: Path) -> str:
    """The page of one registered figure (``folder``: the repository's figures/, paper builds in ``paper/``)."""
    meta = load_metadata(folder / f"{figure.name}.json")
    paper = load_metadata(folder / PAPER / f"{figure.name}.json")
    builder = getattr(figure.build, "func", figure.build)  # a functools.partial names its function in .func
    module = builder.__module__
    quick_command = f"python -m transfertheory.figures {figure.name} --quick"
    paper_command = f"python -m transfertheory.figures {figure.name} --paper --out figures/{PAPER}"
    lines = [*heading(f"``{figure.name}`` — {rst_escape(figure.title)}"), ".. container:: figure-pair", "",
             *_cell(figure.name, folder, meta, "quick profile (CPU-sized)", quick_command),
             *_cell(figure.name, folder / PAPER, paper, paper_build(paper or {"profile": "paper"}), paper_command)]
    lines += [rst_escape(figure.description), "",
              f"**Reproduces:** {rst_escape(', '.join(figure.sources))}.", "",
              "**Rebuild it** (quick: CPU-sized; paper: the paper's sizes, into ``figures/paper/``):", "",
              ".. code-block:: bash", "", f"   {quick_command}", f"   {paper_command}", ""]
    lines += (_built(meta, "quick") if meta is not None
              else ["Not built in this repository yet; the quick command above builds it.", ""])
    lines += (_built(paper, "paper-size", stand_in_note(figure, paper)) if paper is not None
              else [f"Paper's sizes: {NOT_YET_PAPER}; the paper command above builds it.", ""])
    lines += _parameter_table("Parameters of the paper profile", figure.profiles["paper"])
    lines += [f"**Code:** the module :mod:`{module}` (builder :func:`{module}.{builder.__name__}`, with "
              "its source), registered in :mod:`transfertheory.figures.catalog`.", ""]
    return "\n".join(lines)


def gallery_index(folder: Path) -> str:
    """The thumbnail grid of every registered figure."""
    lines = [*heading("Figures gallery"),
             "Every figure of the figures registry (``python -m transfertheory.figures --list``), as committed at "
             "the quick profile, with the paper-size build's time and device where it has been run; click a "
             "thumbnail for the figure beside its paper-size build, its sources, commands and parameters.", "",
             ".. container:: gallery-grid", ""]
    for figure in figures().values():
        thumb = folder / f"{figure.name}{THUMBNAIL}"
        lines += ["   .. container:: gallery-item", ""]
        if thumb.is_file():
            lines += [f"      .. image:: {FIGURES_FROM_PAGE}/{figure.name}{THUMBNAIL}",
                      f"         :target: {figure.name}.html", f"         :alt: {figure.name}", ""]
        paper = load_metadata(folder / PAPER / f"{figure.name}.json")
        at_paper = rst_escape(where_run(paper)) if paper is not None else NOT_YET_PAPER
        lines += [f"      :doc:`{figure.name} <{figure.name}>` — {rst_escape(figure.title)}", "",
                  f"      *Paper's sizes:* {at_paper}.", ""]
    lines += [".. toctree::", "   :hidden:", "", *(f"   {name}" for name in figures()), ""]
    return "\n".join(lines)


def gallery_pages(folder: Path) -> dict[str, str]:
    """``{path under docs/: text}`` of the gallery (``folder``: the repository's figures/)."""
    pages = {"gallery/index.rst": gallery_index(folder)}
    pages.update({f"gallery/{name}.rst": figure_page(figure, folder) for name, figure in figures().items()})
    return pages
