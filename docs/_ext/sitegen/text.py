"""Small text helpers shared by the generated pages: reStructuredText escaping and anchors."""
from __future__ import annotations

import re

_RST_SPECIAL = re.compile(r"([\\`*_|])")


def rst_escape(text: str) -> str:
    """``text`` as literal reStructuredText prose (markup characters escaped, newlines folded)."""
    return _RST_SPECIAL.sub(r"\\\1", " ".join(str(text).split()))


def heading(title: str, underline: str = "=") -> list[str]:
    """A reStructuredText section title."""
    return [title, underline * max(len(title), 3), ""]


def claim_label(claim_id: str) -> str:
    """The cross-reference label of a claim's row on the audit page (``faf.eq13`` → ``claim-faf-eq13``)."""
    return "claim-" + re.sub(r"[^a-z0-9]+", "-", claim_id.lower()).strip("-")


def literal_block(text: str) -> list[str]:
    """A reStructuredText literal block holding ``text`` verbatim."""
    return ["::", "", *("   " + line if line else "" for line in text.splitlines()), ""]
