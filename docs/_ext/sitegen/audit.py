"""The audit page, generated from the claims registry and the committed ``verify --json`` record.

Every registered claim appears with its id, source, statement, kind of check, what the check requires, the
status the record gives it (PASS / KNOWN-ERRATUM / …) and — for a KNOWN-ERRATUM — a link to its erratum. The
record is read defensively: missing fields print as "—", a claim absent from it is shown as not run, and an
optional ``category`` field is shown next to the status when the record (or the claim) has one.
"""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from transfertheory.claims import CLAIMS, KNOWN_ERRATUM, PASS

from .text import claim_label, heading, rst_escape

#: the papers, by the prefix of their claim ids, in the order of the page
PAPERS = {"faf": "FaF — Features are fate", "merlin": "MeRLin §5", "tdr": "TDR §6", "mtl": "MTL §4–5"}
NOT_RUN = "not in the record"
_MARKS = {PASS: "✔", KNOWN_ERRATUM: "⚑"}


def load_record(path: Path) -> dict[str, dict]:
    """``{claim id: record}`` of a ``verify --json`` file; empty when the file is absent or unreadable."""
    try:
        rows = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    rows = rows.get("claims", []) if isinstance(rows, dict) else rows
    return {row["claim"]: row for row in rows if isinstance(row, dict) and "claim" in row}


def paper_of(claim_id: str) -> str:
    """The paper a claim id belongs to (its prefix; an unknown prefix is its own paper)."""
    prefix = claim_id.split(".", 1)[0]
    return PAPERS.get(prefix, prefix)


def _cell(value) -> str:
    return "—" if value in (None, "") else rst_escape(value)


def _status(claim, row: dict | None) -> str:
    status = row.get("status") if row else None
    text = f"{_MARKS.get(status, '✘')} **{status}**" if status else NOT_RUN
    category = (row or {}).get("category") or getattr(claim, "category", None)
    if category:
        text += f" ({rst_escape(category)})"
    if claim.erratum:
        text += f"; :ref:`erratum <{claim.erratum}>`"
    return text


def _row(claim, row: dict | None) -> list[str]:
    requires = (row or {}).get("requires")
    measured = (row or {}).get("measured")
    check = _cell(claim.kind) + (f"; requires {_cell(requires)}" if requires else "")
    if isinstance(measured, (int, float)):
        check += f", measured {measured:.3g}"
    return [f"   * - .. _{claim_label(claim.id)}:", "", f"       ``{claim.id}``",
            f"     - {_cell(claim.source)}", f"     - {_cell(claim.statement)}", f"     - {check}",
            f"     - {_status(claim, row)}"]


def _summary(claims, record) -> list[str]:
    lines = [".. list-table:: Claims by paper", "   :header-rows: 1", "",
             "   * - paper", "     - claims", "     - PASS", "     - KNOWN-ERRATUM", "     - other / not run"]
    for paper in dict.fromkeys(paper_of(c.id) for c in claims):
        mine = [c for c in claims if paper_of(c.id) == paper]
        counts = Counter((record.get(c.id) or {}).get("status", NOT_RUN) for c in mine)
        other = len(mine) - counts[PASS] - counts[KNOWN_ERRATUM]
        lines += [f"   * - {rst_escape(paper)}", f"     - {len(mine)}", f"     - {counts[PASS]}",
                  f"     - {counts[KNOWN_ERRATUM]}", f"     - {other}"]
    return [*lines, ""]


def audit_page(record_path: Path) -> str:
    """The audit page's text (reStructuredText)."""
    record = load_record(record_path)
    claims = list(CLAIMS.values())
    profiles = sorted({row.get("profile") for row in record.values() if row.get("profile")})
    lines = [*heading("Claims audit"),
             f"Every claim of the claims registry ({len(claims)} claims), with the status that the committed "
             f"record of ``python -m transfertheory.verify {' '.join('--' + p for p in profiles) or '--quick'}"
             " --json`` gives it. PASS: the check held; KNOWN-ERRATUM: the paper is wrong there and the check "
             "shows it (the erratum is linked). How each kind of check works: :doc:`../verify` and "
             ":doc:`../testing`; the errata: :doc:`../errata`.", ""]
    if not record:
        lines += [".. warning:: No ``verify --json`` record was found: every status reads "
                  f"\"{NOT_RUN}\".", ""]
    lines += _summary(claims, record)
    for paper in dict.fromkeys(paper_of(c.id) for c in claims):
        lines += [*heading(paper, "-"), ".. list-table::", "   :header-rows: 1", "   :widths: 15 13 37 20 15",
                  "   :class: audit-table", "",
                  "   * - claim", "     - source", "     - statement", "     - check", "     - status"]
        for claim in claims:
            if paper_of(claim.id) == paper:
                lines += _row(claim, record.get(claim.id))
        lines.append("")
    return "\n".join(lines)


def audit_pages(record_path: Path) -> dict[str, str]:
    """``{path under docs/: text}`` of the audit page."""
    return {"audit/index.rst": audit_page(record_path)}
