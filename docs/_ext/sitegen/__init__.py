"""Sphinx extension of the transfertheory site: pages generated from the code at build time.

On ``builder-inited`` it writes, under docs/ (git-ignored folders, rewritten only where their text changed):

* ``api/`` — the API reference, one ``automodule`` page per public module (:mod:`.api`);
* ``cli/`` — every ``python -m`` command's ``--help``, from its own argparse parser (:mod:`.api`);
* ``gallery/`` — the figures registry with the committed quick- and paper-profile images and metadata
  (:mod:`.gallery`);
* ``audit/`` — the claims registry with the committed ``verify --json`` records of both profiles (:mod:`.audit`);
* ``sections/`` — one page per navigation section of ``site_toctree`` (conf.py).

On ``source-read`` it makes the hand-written Markdown pages site-ready without changing how GitHub shows them:
the root page gets the navigation (``site_toctree`` in conf.py: one generated page per section, under
``sections/``), an HTML anchor line ``<a id="X"></a>`` becomes the MyST target ``(X)=``, and a backticked registered claim id
becomes a link to the claim's row on the audit page. A display equation with the paper's ``\\tag{N}`` is typeset
as an ``equation`` environment (:func:`tagged_equation`). Docstrings are read as plain text: their ``|z|`` bars are
escaped before autodoc parses them (:mod:`.docstrings`). A reference to a class or function through a package
that re-exports it resolves to its one description (``missing-reference``, :func:`.api.home_name`).
"""
from __future__ import annotations

import re
from pathlib import Path

from .api import api_pages, cli_pages, home_name
from .audit import audit_pages
from .docstrings import on_process_docstring
from .gallery import gallery_pages
from .text import claim_label

#: folders under docs/ that the build writes (listed in .gitignore)
GENERATED = ("api", "cli", "gallery", "audit", "sections")
#: the committed claims-audit records the audit page reads, relative to docs/: quick profile and paper's sizes
RECORD = "_data/verify.json"
RECORD_PAPER = "_data/verify-paper.json"

_ANCHOR = re.compile(r'^<a id="(?P<id>[^"]+)"></a>\s*$', re.MULTILINE)
_FENCE = re.compile(r"^\s*(```|~~~)")
_CLAIM_SPAN = re.compile(r"(?<!\[)`(?P<id>[a-z][\w.\-]*)`")


def generated_pages(docs: Path) -> dict[str, str]:
    """Every generated page, ``{path relative to docs/: text}``."""
    repository = docs.parent
    pages = {}
    pages.update(api_pages())
    pages.update(cli_pages())
    pages.update(gallery_pages(repository / "figures"))
    pages.update(audit_pages(docs / RECORD, docs / RECORD_PAPER))
    return pages


def write_pages(docs: Path, pages: dict[str, str]) -> list[Path]:
    """Write ``pages`` under ``docs``, touching only files whose text changed, and delete stale generated files;
    returns the files written."""
    written = []
    for relative, text in pages.items():
        path = docs / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            written.append(path)
    for folder in GENERATED:
        for path in (docs / folder).glob("*.rst"):
            if path.relative_to(docs).as_posix() not in pages:
                path.unlink()
    return written


def site_markdown(text: str, claim_ids, audit_path: str) -> str:
    """A hand-written page as the site reads it: HTML anchors as MyST targets, claim ids linked to the audit.

    Fenced code is left alone; ``audit_path`` is the audit page's document name as seen from the page."""
    lines, fenced = [], False
    for line in text.split("\n"):
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            line = _ANCHOR.sub(lambda m: f"({m.group('id')})=", line)
            line = _CLAIM_SPAN.sub(lambda m: _claim_link(m, claim_ids, audit_path), line)
        lines.append(line)
    return "\n".join(lines)


def _claim_link(match, claim_ids, audit_path):
    claim_id = match.group("id")
    if claim_id not in claim_ids:
        return match.group(0)
    return f"[`{claim_id}`]({audit_path}#{claim_label(claim_id)})"


def tagged_equation(latex: str) -> str | None:
    """A display equation carrying the paper's number (``\\tag{13}``) as an ``equation`` environment, or None.

    Sphinx wraps a multi-line ``$$ … $$`` in ``split``, where MathJax refuses ``\\tag``; an ``equation``
    environment, passed through unwrapped, keeps the paper's number next to any ``cases`` or line breaks."""
    if "\\tag{" not in latex:
        return None
    return "\\begin{equation}\n" + latex.strip() + "\n\\end{equation}"


def _on_doctree_read(app, doctree):
    from docutils import nodes

    for block in list(doctree.findall(nodes.math_block)):
        equation = None if block.get("nowrap") else tagged_equation(block.astext())
        if equation is not None:
            block.children = [nodes.Text(equation)]
            block["nowrap"] = True


def _on_missing_reference(app, env, node, contnode):
    """Resolve a Python reference through a re-exporting package to the one description of the object."""
    if node.get("refdomain") != "py":
        return None
    home = home_name(node["reftarget"])
    if home is None:
        return None
    return env.get_domain("py").resolve_xref(env, node["refdoc"], app.builder, node["reftype"], home, node,
                                             contnode)


def _on_builder_inited(app):
    pages = generated_pages(Path(app.srcdir))
    pages.update(section_pages(app.config.site_toctree))
    write_pages(Path(app.srcdir), pages)


def section_name(caption: str) -> str:
    """The document name of a navigation section's page (``"Theory"`` → ``sections/theory``)."""
    return "sections/" + re.sub(r"[^a-z0-9]+", "-", caption.lower()).strip("-")


def section_pages(sections) -> dict[str, str]:
    """One page per ``(caption, [document, …])`` navigation section, listing its documents (the theme shows the
    sections in its header and a section's documents in its sidebar)."""
    pages = {}
    for caption, documents in sections:
        entries = [f"   /{document}" for document in documents]
        pages[section_name(caption) + ".rst"] = "\n".join(
            [caption, "=" * max(len(caption), 3), "", ".. toctree::", "   :maxdepth: 1", "", *entries, ""])
    return pages


def root_toctree(sections) -> str:
    """The hidden MyST toctree of the section pages, appended to the root page."""
    return "\n".join(["", "```{toctree}", ":hidden:", "", *(section_name(c) for c, _ in sections), "```", ""])


def _on_source_read(app, docname, source):
    if docname.split("/")[0] in GENERATED:
        return
    if docname == app.config.root_doc:
        source[0] += root_toctree(app.config.site_toctree)
    from transfertheory.claims import CLAIMS

    depth = docname.count("/")
    source[0] = site_markdown(source[0], CLAIMS, "../" * depth + "audit/index.rst")


def setup(app):
    """Register the generators with Sphinx."""
    app.add_config_value("site_toctree", [], "env")
    app.connect("builder-inited", _on_builder_inited)
    app.connect("source-read", _on_source_read)
    app.connect("doctree-read", _on_doctree_read)
    app.connect("autodoc-process-docstring", on_process_docstring)
    app.connect("missing-reference", _on_missing_reference)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
