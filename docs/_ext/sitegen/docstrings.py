"""Docstrings as the site renders them: the package writes ``|z|`` and ``|n − d|`` for absolute values.

The docstrings are written to read well as plain text (``help()``, an editor); in reStructuredText a pair of bars
is a substitution reference, which the package never uses. So, outside ````literal```` spans and grid tables,
every bar is escaped before autodoc parses the docstring: ``|z| ≤ 4`` renders as written.
"""
from __future__ import annotations

import inspect
import re

_LITERAL = re.compile(r"(``.*?``)")
_GRID_BORDER = re.compile(r"^\s*\+[-=+]+\+\s*$")
_GRID_ROW = re.compile(r"^\s*\|.*\|\s*$")


def escape_bars(line: str) -> str:
    """``line`` with every ``|`` outside ````literal```` spans escaped."""
    if "|" not in line:
        return line
    parts = _LITERAL.split(line)
    return "".join(part if index % 2 else re.sub(r"(?<!\\)\|", r"\\|", part) for index, part in enumerate(parts))


def on_process_docstring(app, what, name, obj, options, lines):
    """Sphinx ``autodoc-process-docstring`` handler, in place: escape the bars of every line but a grid table's,
    and drop the docstring a constant inherits from its type (a tuple constant without a ``#:`` comment would
    otherwise show the documentation of ``tuple``)."""
    inherited = inspect.getdoc(type(obj))
    if what in ("data", "attribute") and inherited and "\n".join(lines).strip() == inherited.strip():
        lines[:] = []
        return
    grid = any(_GRID_BORDER.match(line) for line in lines)
    lines[:] = [line if grid and (_GRID_ROW.match(line) or _GRID_BORDER.match(line)) else escape_bars(line)
                for line in lines]
