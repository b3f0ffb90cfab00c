r"""Which claims a ``-k`` pattern selects, answered from the claim modules' source text, without importing them.

Importing :mod:`transfertheory.claims` imports every claim module and with them SciPy, pandas, hypothesis and the
simulators (seconds on a busy CPU). ``python -m transfertheory.verify -k PATTERN`` first reads the ``@register``
calls of the modules that ``claims/catalog.py`` imports with :mod:`ast` — id, ``source``, ``method`` and
``profiles`` — so that a pattern matching nothing is a usage error at once. :func:`claim_matches` is the one
matching rule, used here and by :func:`transfertheory.claims.select`.

This module imports nothing of the package (it lives outside :mod:`transfertheory.claims` because importing a
submodule of a package runs the package's ``__init__``, which registers every claim).
"""
from __future__ import annotations

import ast
import fnmatch
from dataclasses import dataclass
from pathlib import Path

__all__ = ["IndexedClaim", "claim_matches", "indexed_claims", "select_ids"]

CLAIMS_PACKAGE = Path(__file__).parent / "claims"


@dataclass(frozen=True)
class IndexedClaim:
    """The selection fields of one ``@register`` call; ``profiles`` None: every profile."""

    id: str
    source: str
    method: str | None
    profiles: tuple | None


def claim_matches(pattern, claim_id, source, method) -> bool:
    """Whether ``pattern`` selects a claim: a shell-style glob on the id when it has ``*``, ``?`` or ``[``, else a
    case-insensitive substring of the id, the source or the method. An empty pattern or None selects every claim."""
    if not pattern:
        return True
    if any(ch in pattern for ch in "*?["):
        return fnmatch.fnmatchcase(claim_id, pattern)
    return pattern.lower() in " ".join((claim_id, source, method or "")).lower()


def _catalog_modules():
    """Names of the claim modules ``catalog.py`` imports (``from . import name``), in order."""
    tree = ast.parse((CLAIMS_PACKAGE / "catalog.py").read_text(encoding="utf-8"))
    return [alias.name for node in tree.body if isinstance(node, ast.ImportFrom) and node.level == 1
            and not node.module for alias in node.names]


def _register_calls(tree):
    """The ``register(...)`` calls of a module, in source order."""
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call)
             and getattr(node.func, "id", getattr(node.func, "attr", None)) == "register"]
    return sorted(calls, key=lambda node: (node.lineno, node.col_offset))


def _indexed(call) -> IndexedClaim:
    """The fields of one call; ValueError when one of them is not a literal."""
    keywords = {k.arg: k.value for k in call.keywords}
    if not call.args or "source" not in keywords:
        raise ValueError("register call without a literal id and source")
    fields = [ast.literal_eval(node) for node in (call.args[0], keywords["source"])]
    method, profiles = (ast.literal_eval(keywords[key]) if key in keywords else None for key in ("method", "profiles"))
    if not all(isinstance(f, str) for f in fields) or not isinstance(method, (str, type(None))):
        raise ValueError("register call with a non-string id, source or method")
    return IndexedClaim(*fields, method, None if profiles is None else tuple(profiles))


def indexed_claims() -> list[IndexedClaim] | None:
    """Every claim the catalog registers, read from the source; None when a call cannot be read without running it
    (a computed id, source, method or profiles) — then only importing the claims can tell."""
    found = []
    try:
        for name in _catalog_modules():
            tree = ast.parse((CLAIMS_PACKAGE / f"{name}.py").read_text(encoding="utf-8"))
            found += [_indexed(call) for call in _register_calls(tree)]
    except (OSError, SyntaxError, ValueError):
        return None
    return found


def select_ids(pattern, profile) -> list[str] | None:
    """Ids of the claims ``pattern`` selects in ``profile`` (a name), from the source; None when it cannot tell."""
    index = indexed_claims()
    if index is None:
        return None
    return [c.id for c in index if (c.profiles is None or profile in c.profiles)
            and claim_matches(pattern, c.id, c.source, c.method)]
