"""Sphinx configuration of the transfertheory documentation site (docs/site.md tells how it is built)."""
from __future__ import annotations

import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS / "_ext"))

import transfertheory  # noqa: E402
from transfertheory.figures.catalog import figures  # noqa: E402

project = "transfertheory"
author = "the transfertheory authors"
release = version = transfertheory.__version__
root_doc = "index"

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.viewcode",
    "sphinx.ext.mathjax",
    "sphinx-mathjax-offline",  # MathJax 3 from PyPI, copied into _static: the math renders offline
    "sitegen",  # docs/_ext/sitegen.py: the API, CLI, gallery and audit pages, generated at build time
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "_data", "_ext", "_static", "Thumbs.db", ".DS_Store"]

myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_heading_anchors = 4
myst_dmath_double_inline = True

autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"show-inheritance": True}
napoleon_numpy_docstring = True
napoleon_google_docstring = False

# The site's navigation, appended to index.md at build time (docs/index.md stays a plain table on GitHub).
site_toctree = [
    ("Start", ["getting_started", "tutorial_faf", "tutorial_merlin", "tutorial_tdr", "tutorial_mtl"]),
    ("Theory", ["linear", "anisotropic", "relu", "distances", "merlin", "tdr", "mtl", "errata", "glossary"]),
    ("Results", ["gallery/index", "audit/index", "figures", "phase_diagram", "verify", "sweeps"]),
    ("Reference", ["api/index", "cli/index"]),
    ("Development", ["architecture", "simulator", "backend", "testing", "benchmarks", "site"]),
]

html_theme = "pydata_sphinx_theme"
html_title = "transfertheory"
html_static_path = ["_static"]
html_css_files = ["site.css"]
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "header_links_before_dropdown": 8,
    # full width for the audit's tables and for a gallery page's two images side by side (no wildcard: a page
    # matching two patterns is a warning)
    "secondary_sidebar_items": {"**": ["page-toc", "sourcelink"], "audit/index": [],
                                **{f"gallery/{name}": [] for name in figures()}},
}
html_sidebars = {"index": [], "audit/index": []}  # the audit's six-column tables take the whole width
