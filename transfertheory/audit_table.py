r"""The audit table of ``python -m transfertheory.verify``: records, the width-bound layout, the listing.

One record per claim (:func:`outcome_record`: the JSON / CSV object) and one table row per record: the claim
id, what its check **requires** — the check's own :class:`~transfertheory.claims.Criterion`, e.g. ``|z| ≤ 4``
(agreement within 4 SE), ``z > 4`` (a one-sided test), ``|Δ| ≤ 1e-12`` (an exact identity),
``paper off by |z| > 6`` or ``paper fails by > 0`` (an erratum's demonstration) — the **measured** statistic
of that requirement, whether it **held**, the status and the seconds. Under each row, indented: the claim's
source, and for a claim with an entry in docs/errata.md the entry's category (paper error, slip, remark,
clarification) and its link.

Every line fits a width (:func:`table_width`: the terminal's; at most 100 columns when stdout is not a
terminal; never below :data:`MIN_WIDTH`): long cells wrap after spaces, dots and hyphens, the full text stays
in the JSON record. The column widths depend only on the claim ids, so that rows can be printed one by one as
the claims finish (:class:`AuditTable`). See docs/verify.md.
"""
from __future__ import annotations

import itertools
import math
import shutil
import sys
import textwrap

__all__ = ["COLUMNS", "MIN_WIDTH", "NON_TTY_WIDTH", "AuditTable", "format_listing", "format_notes",
           "outcome_record", "table_width"]

#: the table's columns (the claim's source is on the line below its row)
COLUMNS = ("claim", "requires", "measured", "held", "status", "seconds")
#: the narrowest table (below it, lines may exceed the width) and the width used when stdout is not a terminal
MIN_WIDTH, NON_TTY_WIDTH = 72, 100
_GAP = "  "
_INDENT = "    "
#: columns after the claim id: (header, width, right-aligned)
_ROW_COLUMNS = (("requires", 20, False), ("measured", 9, True), ("held", 4, False), ("status", 15, False),
                ("seconds", 7, True))
#: how a row narrows to fit: (column index, narrowest width), in turn — status (UNEXPECTED-PASS wraps at its
#: hyphen), the claim id to 30, requires (the usual |Δ| ≤ 1.23e-09 still on one line), the claim id (wraps at its
#: dots), requires
_NARROWEST_CLAIM = 16
_NARROWING = ((4, 13), (0, 30), (1, 14), (0, _NARROWEST_CLAIM), (1, 12))
#: the columns of ``--list`` after the claim id (the source takes the rest of the line)
_LIST_COLUMNS = (("expected", 13), ("kind", 11))
_NARROWEST_SOURCE = 24


def table_width(stream=None) -> int:
    """The width to print in: the terminal's columns (``COLUMNS`` overrides), at most :data:`NON_TTY_WIDTH` when
    ``stream`` (default stdout) is not a terminal, at least :data:`MIN_WIDTH`."""
    stream = sys.stdout if stream is None else stream
    columns = shutil.get_terminal_size((NON_TTY_WIDTH, 24)).columns
    if not (hasattr(stream, "isatty") and stream.isatty()):
        columns = min(columns, NON_TTY_WIDTH)
    return max(columns, MIN_WIDTH)


def _number(value):
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)


def outcome_record(outcome):
    """One JSON/CSV object for a claim's :class:`~transfertheory.claims.Outcome` (its worst point's values).

    ``requires``, ``measured`` and ``held``: the worst point's criterion as text, its measured statistic and
    whether it held (empty, None, None for an ERROR).
    """
    from .claims import reproduction

    claim, worst = outcome.claim, outcome.worst
    result = worst.result
    criterion = result.requirement if result else None
    return {
        "claim": claim.id,
        "source": claim.source,
        "method": claim.method or "",
        "kind": claim.kind,
        "statement": claim.statement,
        "profile": outcome.profile,
        "expected": claim.expected,
        "category": claim.category or "",
        "status": outcome.status,
        **{key: _number(getattr(result, key, None)) for key in ("discrepancy", "tolerance", "z", "threshold")},
        "requires": criterion.text if criterion else "",
        "measured": _number(criterion.value) if criterion else None,
        "held": bool(result.passed) if result else None,
        "allowance": claim.allowance,
        "allowance_reason": claim.allowance_reason,
        "points": len(outcome.points),
        "confirmations": sum(p.first is not None for p in outcome.points),
        "seconds": round(outcome.seconds, 3),
        "erratum": claim.erratum_link or "",
        "detail": (result.detail if result else worst.error) or "",
        "params": dict(worst.params),
        "example": reproduction(claim, outcome.failing[0].params, outcome.profile) if outcome.failing else "",
    }


def _wrap(text, width):
    """``text`` in lines of at most ``width`` characters, broken at spaces, else after a dot or a hyphen."""
    lines = []
    for line in textwrap.wrap(text, width, break_long_words=False, break_on_hyphens=False) or [""]:
        while len(line) > width:
            cut = max(line.rfind(".", 0, width), line.rfind("-", 0, width)) + 1 or width
            lines.append(line[:cut])
            line = line[cut:]
        lines.append(line)
    return lines


def _block(cells, widths, right=()):
    """One row whose cells wrap within their columns; the row is as many lines as its tallest cell."""
    wrapped = [_wrap(str(cell), width) for cell, width in zip(cells, widths)]
    return [_GAP.join(p.rjust(w) if k in right else p.ljust(w) for k, (p, w) in enumerate(zip(parts, widths))).rstrip()
            for parts in itertools.zip_longest(*wrapped, fillvalue="")]


def _fit(widths, narrowing, width):
    """Narrow columns, in the order of ``narrowing`` ((index, narrowest width) pairs), until the row fits ``width``."""
    widths = list(widths)
    over = sum(widths) + len(_GAP) * (len(widths) - 1) - width
    for i, narrowest in narrowing:
        cut = min(max(over, 0), max(widths[i] - narrowest, 0))
        widths[i] -= cut
        over -= cut
    return widths


class AuditTable:
    """The audit table for a set of claim ids in ``width`` columns: :meth:`header`, then one :meth:`row` per record
    (printable as each claim finishes: the layout depends only on the ids)."""

    def __init__(self, claim_ids, width):
        claim = max([len(COLUMNS[0]), *map(len, claim_ids)])
        self.width = max(int(width), MIN_WIDTH)
        self.widths = _fit([claim, *(c[1] for c in _ROW_COLUMNS)], _NARROWING, self.width)
        self._right = {k + 1 for k, c in enumerate(_ROW_COLUMNS) if c[2]}

    def header(self) -> str:
        lines = _block(COLUMNS, self.widths, self._right)
        return "\n".join([*lines, _INDENT + "source", _GAP.join("-" * w for w in self.widths)])

    def row(self, record) -> str:
        held = {True: "yes", False: "no", None: "-"}[record["held"]]
        value = record["measured"]
        measured = "-" if value is None else "0" if value == 0 else f"{value:.3g}"
        seconds = f"{record['seconds']:.2f}"
        cells = [record["claim"], record["requires"] or "-", measured, held, record["status"], seconds]
        source = record["source"]
        if record["category"]:
            source = f"{source} — {record['category']}: {record['erratum']}"
        source_lines = [_INDENT + line for line in _wrap(source, self.width - len(_INDENT))]
        return "\n".join([*_block(cells, self.widths, self._right), *source_lines])


def format_listing(selected, width):
    """``--list``: each selected claim's id, expected status, kind of check and source, under a header."""
    width = max(int(width), MIN_WIDTH)
    claim = max([len("claim"), *(len(c.id) for c in selected)])
    fixed = [w for _, w in _LIST_COLUMNS]
    widths = [claim, *fixed, width - claim - sum(fixed) - len(_GAP) * (len(fixed) + 1)]
    if widths[-1] < _NARROWEST_SOURCE:
        widths = _fit([claim, *fixed, _NARROWEST_SOURCE], ((0, _NARROWEST_CLAIM),), width)
    lines = _block(["claim", *(h for h, _ in _LIST_COLUMNS), "source"], widths)
    lines.append(_GAP.join("-" * w for w in widths))
    for c in selected:
        lines += _block([c.id, c.expected, c.kind, c.source], widths)
    return "\n".join(lines)


def format_notes(outcome, profile, width):
    """Lines after the table for ``outcome``: each confirmation stage and each unexpected point with the command
    that reproduces it (the command is never wrapped, so that it can be copied)."""
    from .claims import CONFIRM_FACTOR, reproduction

    lines = []
    for point in outcome.points:
        if point.first is not None:
            second = point.result.z if point.result is not None else None
            lines += ["", *_wrap(f"{outcome.claim.id}: at {dict(point.params)} the first stage was unexpected "
                                 f"(z = {point.first.z:+.2f}); re-checked with {CONFIRM_FACTOR}x the draws: "
                                 f"{point.status}" + (f" (z = {second:+.2f})" if second is not None else ""), width)]
    for point in outcome.failing:
        why = point.error or (point.result.detail if point.result else "")
        lines += ["", *_wrap(f"{outcome.claim.id}: {point.status} at {dict(point.params) or 'its fixed point'} — {why}",
                             width),
                  f"  reproduce: {reproduction(outcome.claim, point.params, profile)}"]
    return lines
