r"""The claims registry: the papers' statements, each with the check that holds the package to it.

``python -m transfertheory.verify`` runs them (docs/verify.md); ``tests/claims/test_claims.py`` generates the
``theorem`` tests from the same records. Public API:

* :class:`Claim`, :func:`register` — a record and the decorator that registers a check function;
* :class:`CheckResult`, :class:`Criterion` — what a check measured, and what it requires (printed by the audit);
* :data:`CLAIMS` (ordered, read-only), :func:`get_claim`, :func:`select` — look-ups;
* :func:`points`, :func:`check_point`, :func:`run` — evaluation (statuses PASS, KNOWN-ERRATUM,
  FAIL, UNEXPECTED-PASS, ERROR);
* :data:`PROFILES` (``quick``, ``full``, ``paper``);
* :data:`CATEGORIES` — of a claim's entry in docs/errata.md: paper error, slip, remark, clarification.
"""
from .profiles import PROFILE_NAMES, PROFILES, Profile, get_profile
from .registry import (
    CATEGORIES, CLAIMS, CLARIFICATION, CONFIRM_FACTOR, ERROR, FAIL, KINDS, KNOWN_ERRATUM, PAPER_ERROR, PASS, REMARK,
    SLIP, STATUSES, UNEXPECTED, UNEXPECTED_PASS,
    Case, CheckResult, Claim, Criterion, Outcome, PointOutcome, check_point, get_claim, judge, points, register,
    reproduction, run, select, unregister,
)
from . import catalog  # noqa: E402,F401  (registers every claim)

__all__ = [
    "CLAIMS", "CONFIRM_FACTOR", "Claim", "Case", "CheckResult", "Criterion", "Outcome", "PointOutcome", "Profile",
    "PROFILES", "PROFILE_NAMES",
    "PASS", "FAIL", "KNOWN_ERRATUM", "UNEXPECTED_PASS", "ERROR", "STATUSES", "UNEXPECTED", "KINDS",
    "CATEGORIES", "PAPER_ERROR", "SLIP", "REMARK", "CLARIFICATION",
    "register", "unregister", "get_claim", "select", "points", "check_point", "run", "judge", "reproduction", "get_profile",
]
