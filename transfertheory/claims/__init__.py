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
from . import profiles, registry
from .profiles import *  # noqa: F401,F403  (the public API: the two modules' __all__)
from .registry import *  # noqa: F401,F403
from . import catalog  # noqa: E402,F401  (registers every claim)

__all__ = [*profiles.__all__, *registry.__all__]
