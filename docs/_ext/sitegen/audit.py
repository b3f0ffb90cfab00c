"""The audit page, generated from the claims registry and the committed ``verify --json`` records.

Every registered claim appears with its id, source, statement (its formulas typeset, :mod:`.mathtext`), kind of
check, what the check requires, and side by side the status each profile's record gives it — the quick profile
(``docs/_data/verify.json``) and the paper's sizes (``docs/_data/verify-paper.json``) — with what it measured,
and for a KNOWN-ERRATUM a link to its erratum. The records are read defensively: missing fields print as "—", a
claim absent from a record is shown as not run, an absent paper-size record as "not yet run at the paper's size",
and an optional ``category`` field is shown next to the status when the record (or the claim) has one.
"""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from transfertheory.claims import CLAIMS, KNOWN_ERRATUM, PASS

from .mathtext import statement_rst
from .text import claim_label, heading, rst_escape

#: the papers, by the prefix of their claim ids, in the order of the page
PAPERS = {"faf": "FaF — Features are fate", "merlin": "MeRLin §5", "tdr": "TDR §6", "mtl": "MTL §4–5"}
NOT_RUN = "not in the record"
#: a paper-size status when there is no paper-size record
NOT_YET_PAPER = "not yet run at the paper's size"
#: the two profiles shown side by side: (key, column title)
PROFILES = (("quick", "quick profile"), ("paper", "paper's sizes"))
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


def _status(claim, row: dict | None, missing: str = NOT_RUN) -> str:
    status = row.get("status") if row else None
    text = f"{_MARKS.get(status, '✘')} **{status}**" if status else missing
    category = (row or {}).get("category") or (getattr(claim, "category", None) if status else None)
    if category:
        text += f" ({rst_escape(category)})"
    measured = (row or {}).get("measured")
    if isinstance(measured, (int, float)) and not isinstance(measured, bool):
        text += f", measured {measured:.3g}"
    if claim.erratum and status:
        text += f"; :ref:`erratum <{claim.erratum}>`"
    return text


def _row(claim, rows: dict[str, dict | None], missing: dict[str, str]) -> list[str]:
    requires = next((row.get("requires") for row in rows.values() if row and row.get("requires")), None)
    check = _cell(claim.kind) + (f"; requires {_cell(requires)}" if requires else "")
    statement = statement_rst(claim.statement) if claim.statement else "—"
    return [f"   * - .. _{claim_label(claim.id)}:", "", f"       ``{claim.id}``",
            f"     - {_cell(claim.source)}", f"     - {statement}", f"     - {check}",
            *(f"     - {_status(claim, rows[key], missing[key])}" for key, _ in PROFILES)]


def _summary(claims, records, missing) -> list[str]:
    lines = [".. list-table:: Claims by paper: statuses at the quick profile and at the paper's sizes",
             "   :header-rows: 1", "", "   * - paper", "     - claims"]
    for _, title in PROFILES:
        lines += [f"     - {title}: PASS", f"     - {title}: KNOWN-ERRATUM", f"     - {title}: other / not run"]
    for paper in dict.fromkeys(paper_of(c.id) for c in claims):
        mine = [c for c in claims if paper_of(c.id) == paper]
        lines += [f"   * - {rst_escape(paper)}", f"     - {len(mine)}"]
        for key, _ in PROFILES:
            if not records[key]:
                lines += ["     - —", "     - —", f"     - {missing[key]}"]
                continue
            counts = Counter((records[key].get(c.id) or {}).get("status", NOT_RUN) for c in mine)
            other = len(mine) - counts[PASS] - counts[KNOWN_ERRATUM]
            lines += [f"     - {counts[PASS]}", f"     - {counts[KNOWN_ERRATUM]}", f"     - {other}"]
    return [*lines, ""]


def audit_page(record_path: Path, paper_path: Path | None = None) -> str:
    """The audit page's text (reStructuredText): the quick record ``record_path`` and, side by side, the
    paper-size record ``paper_path`` (absent or None: every paper-size status reads :data:`NOT_YET_PAPER`)."""
    records = {"quick": load_record(record_path), "paper": load_record(paper_path) if paper_path else {}}
    missing = {"quick": NOT_RUN, "paper": NOT_RUN if records["paper"] else NOT_YET_PAPER}
    claims = list(CLAIMS.values())
    lines = [*heading("Claims audit"),
             f"Every claim of the claims registry ({len(claims)} claims), with the status that the committed "
             "records of ``python -m transfertheory.verify --json`` give it, side by side: at the quick, "
             "CPU-sized profile (``--quick``, ``docs/_data/verify.json``) and at the sizes the papers state "
             "(``--paper``, ``docs/_data/verify-paper.json``). PASS: the check held; KNOWN-ERRATUM: the paper "
             "is wrong there and the check shows it (the erratum is linked); *measured* is the value the check "
             "compares with what it requires. How each kind of check works: :doc:`../verify` and "
             ":doc:`../testing`; the errata: :doc:`../errata`.", ""]
    if not records["quick"]:
        lines += [".. warning:: No quick-profile ``verify --json`` record was found: every quick status reads "
                  f"\"{NOT_RUN}\".", ""]
    if not records["paper"]:
        lines += [".. note:: The audit has not yet run at the paper's sizes (no ``docs/_data/verify-paper.json``): "
                  f"every paper-size status reads \"{NOT_YET_PAPER}\".", ""]
    lines += _summary(claims, records, missing)
    for paper in dict.fromkeys(paper_of(c.id) for c in claims):
        lines += [*heading(paper, "-"), ".. list-table::", "   :header-rows: 1", "   :widths: 13 11 36 14 13 13",
                  "   :class: audit-table", "",
                  "   * - claim", "     - source", "     - statement", "     - check",
                  *(f"     - {title}" for _, title in PROFILES)]
        for claim in claims:
            if paper_of(claim.id) == paper:
                lines += _row(claim, {key: records[key].get(claim.id) for key, _ in PROFILES}, missing)
        lines.append("")
    return "\n".join(lines)


def audit_pages(record_path: Path, paper_path: Path | None = None) -> dict[str, str]:
    """``{path under docs/: text}`` of the audit page."""
    return {"audit/index.rst": audit_page(record_path, paper_path)}
