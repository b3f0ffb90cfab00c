r"""The claims registry: one record per statement of a paper that the package checks.

A :class:`Claim` names a statement ("FaF Eq. 13", "FaF Thm 3.9"), how it is checked (``kind``: a
simulation of the training process, a Monte Carlo of the defining expectation, an exact identity or
limit, or an external reference) and a check function. A check receives a :class:`Case` (the claim,
the size :class:`~transfertheory.claims.profiles.Profile`, one parameter point and a seed derived
from both) and returns a :class:`CheckResult`: the measured discrepancy, the tolerance it is held
to (or a z-score and its threshold), whether the check's criterion is met, and the :class:`Criterion`
itself (what the audit prints under *requires*: "|z| ≤ 4", "z > 4", "|Δ| ≤ 1e-12", "paper fails by > 0").

Expected outcomes:

* ``PASS`` — the statement holds: criterion met → PASS, otherwise FAIL.
* ``KNOWN-ERRATUM`` — the paper's statement is false under every reasonable reading and the check
  demonstrates it (e.g. the paper's value lies more than 6 SE from the simulation). Demonstrated →
  KNOWN-ERRATUM; not demonstrated → UNEXPECTED-PASS where the measurement agrees with the paper's value
  (the check says so), FAIL otherwise. Both count as unexpected.

A claim with an entry in docs/errata.md names its anchor (``erratum``) and its ``category``
(:data:`CATEGORIES`): ``paper error`` (false under every reasonable reading: expected KNOWN-ERRATUM, and
only it), ``slip`` (a typo-level mistake in a statement or proof whose intended statement is right),
``remark`` (the paper's statement holds as meant; the package adds a finding beside it) or
``clarification`` (an assumption the paper uses without stating it). Slips, remarks and clarifications
are expected to PASS: their checks demonstrate the finding (the literal text's failure, the finite-n
effect, the unstated assumption) and turn red if it stops showing.

An exception inside a check is ERROR. Claims whose parameters come from a hypothesis strategy are
checked at several points (:func:`points`); a claim's outcome is the worst of its points.

Confirmation of statistical failures: a point whose statistical comparison (a result with a z-score)
comes out unexpected is checked again with :data:`CONFIRM_FACTOR` × the draws and fresh ones, and
its status is the second stage's. The 4-SE rule assumes a normal sample mean; the risks of
minimum-norm estimators are strongly right-skewed (skewness 2–5), which makes the t-statistic's
lower tail heavy: at 100 draws P(z < −4) ≈ 0.2–0.4 % instead of 3·10⁻⁵ (docs/verify.md). A false
alarm must then repeat at independent draws (≈ 10⁻⁵), while a real discrepancy doubles its z.
See docs/verify.md for how a module registers a claim.
"""
from __future__ import annotations

import fnmatch
import functools
import hashlib
import math
import time
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Callable, Mapping

import numpy as np

from .. import _registry
from .profiles import PROFILE_NAMES, Profile, get_profile

__all__ = [
    "PASS", "FAIL", "KNOWN_ERRATUM", "UNEXPECTED_PASS", "ERROR", "STATUSES", "UNEXPECTED", "KINDS",
    "Claim", "Case", "Criterion", "CheckResult", "PointOutcome", "Outcome",
    "register", "unregister", "CLAIMS", "get_claim", "select", "points", "check_point", "run", "judge", "reproduction",
    "CONFIRM_FACTOR",
    "PAPER_ERROR", "SLIP", "REMARK", "CLARIFICATION", "CATEGORIES",
]

PASS, FAIL, KNOWN_ERRATUM, UNEXPECTED_PASS, ERROR = "PASS", "FAIL", "KNOWN-ERRATUM", "UNEXPECTED-PASS", "ERROR"
STATUSES = (PASS, KNOWN_ERRATUM, FAIL, UNEXPECTED_PASS, ERROR)
#: statuses that turn the audit red
UNEXPECTED = frozenset({FAIL, UNEXPECTED_PASS, ERROR})
KINDS = ("simulation", "monte-carlo", "exact", "external")
PAPER_ERROR, SLIP, REMARK, CLARIFICATION = "paper error", "slip", "remark", "clarification"
#: categories of an entry of docs/errata.md (module docstring); only a paper error is expected KNOWN-ERRATUM
CATEGORIES = (PAPER_ERROR, SLIP, REMARK, CLARIFICATION)
#: draws of the confirmation stage, relative to the first (module docstring)
CONFIRM_FACTOR = 4


#: relation → +1 for an upper bound (the statistic must stay below), −1 for a lower bound; "" a yes/no statement
_RELATIONS = {"≤": 1, "<": 1, "≥": -1, ">": -1, "": 0}


@dataclass(frozen=True)
class Criterion:
    """What a check requires of the statistic it measured: ``statistic relation bound``.

    :attr:`text` is what the audit prints under *requires* ("|z| ≤ 4", "z > 4", "|Δ| ≤ 1e-12",
    "paper fails by > 0"); ``value`` is the statistic's measured value (None for a yes/no statement,
    whose ``relation`` is empty and whose ``statistic`` is the whole text); ``bound_text`` replaces the
    printed bound where the bound is a formula ("4 SE + 0.002", numerically ``bound``).
    """

    statistic: str
    relation: str = ""
    bound: float = 0.0
    value: float | None = None
    bound_text: str = ""

    def __post_init__(self):
        if self.relation not in _RELATIONS:
            raise ValueError(f"relation must be one of {tuple(_RELATIONS)}, got {self.relation!r}")

    @property
    def text(self) -> str:
        if not self.relation:
            return self.statistic
        return f"{self.statistic} {self.relation} {self.bound_text or f'{self.bound:.3g}'}"

    def edge(self, passed: bool) -> float:
        """How near the measurement is to the bound, in units of the bound: 1 + (signed distance past the bound) /
        |bound| — below 1 inside, 1 on the bound, above 1 outside (a zero bound: 0, 1 or 2; a yes/no statement: 0
        or 2; an infinite value: ±inf). Monotone in the measured value, comparable across criteria: the larger,
        the nearer to failing."""
        if self.value is None or not self.relation:
            return 0.0 if passed else 2.0
        gap = _RELATIONS[self.relation] * (self.value - self.bound)  # > 0: on the failing side
        if not math.isfinite(gap):
            return -math.inf if gap < 0 else math.inf  # nan: not comparable, counted as failing
        if self.bound == 0:
            return 1.0 + (gap > 0) - (gap < 0)
        return 1.0 + gap / abs(self.bound)


@dataclass(frozen=True)
class CheckResult:
    """What one check measured.

    ``discrepancy`` and ``tolerance`` are in the units of the compared quantity. For a PASS claim the
    criterion is normally discrepancy ≤ tolerance; for an erratum claim it is the demonstration
    (normally discrepancy > tolerance: the paper's value is farther than the tolerance).
    ``passed``: the criterion is met. ``z``/``threshold``: the same comparison in standard errors,
    where there is one. ``paper_holds`` (erratum claims only): the measurement agrees with the
    paper's statement (status UNEXPECTED-PASS instead of FAIL when the demonstration fails).
    ``criterion``: the :class:`Criterion` that ``passed`` evaluates, as the comparisons of
    :mod:`~transfertheory.claims.compare` state it; None means discrepancy ≤ tolerance (:attr:`requirement`).
    """

    discrepancy: float
    tolerance: float
    passed: bool
    z: float | None = None
    threshold: float | None = None
    detail: str = ""
    paper_holds: bool = False
    criterion: Criterion | None = None

    @property
    def requirement(self) -> Criterion:
        """:attr:`criterion`, or discrepancy ≤ tolerance where the check did not state one."""
        return self.criterion or Criterion("discrepancy", "≤", self.tolerance, self.discrepancy)

    @property
    def edge(self) -> float:
        """:meth:`Criterion.edge` of :attr:`requirement`: the larger, the nearer to (or past) failing."""
        return self.requirement.edge(self.passed)


@dataclass(frozen=True)
class Claim:
    """A registered statement and its check (see the module docstring).

    ``strategy``: None for a check at fixed parameters, else a function ``profile → hypothesis
    strategy`` of parameter dicts restricted to where the statement applies, or, where the ranges are the same in
    every profile, a dict ``name → hypothesis strategy`` (drawn as ``st.fixed_dictionaries``). ``allowance``: what the
    statement leaves out (finite integration time, finite d, …), added to the statistical tolerance,
    with its ``allowance_reason``. ``slow``: the check takes more than a few seconds even in the
    quick profile (pytest marks it ``slow``). ``method``: the transfer method it concerns, if any.
    ``shares``: the name of a computation the check shares with other claims, computed once per process and cached
    (``verify``'s worker processes run the claims that share one in the same process, so that it is computed once).
    ``erratum`` and ``category``: the anchor of the claim's entry in docs/errata.md and the entry's category
    (:data:`CATEGORIES`), both given or neither; ``expected`` is KNOWN-ERRATUM exactly for a paper error.
    """

    id: str
    source: str
    statement: str
    kind: str
    check: Callable[["Case"], CheckResult] = field(repr=False, compare=False)
    method: str | None = None
    expected: str = PASS
    erratum: str | None = None
    category: str | None = None
    strategy: Callable[[Profile], object] | Mapping | None = field(default=None, repr=False, compare=False)
    allowance: float = 0.0
    allowance_reason: str = "none: the reference is exact"
    profiles: tuple = PROFILE_NAMES
    slow: bool = False
    shares: str | None = None

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {self.kind!r} (claim {self.id})")
        if self.expected not in (PASS, KNOWN_ERRATUM):
            raise ValueError(f"expected must be {PASS!r} or {KNOWN_ERRATUM!r}, got {self.expected!r} (claim {self.id})")
        if (self.category is None) != (self.erratum is None):
            raise ValueError(f"claim {self.id}: an erratum anchor and a category are given together or not at all")
        if self.category is not None and self.category not in CATEGORIES:
            raise ValueError(f"category must be one of {CATEGORIES}, got {self.category!r} (claim {self.id})")
        if (self.expected == KNOWN_ERRATUM) != (self.category == PAPER_ERROR):
            raise ValueError(f"claim {self.id}: expected is {KNOWN_ERRATUM!r} exactly for category {PAPER_ERROR!r}")
        if not self.profiles or not set(self.profiles) <= set(PROFILE_NAMES):
            raise ValueError(f"profiles must be a non-empty subset of {PROFILE_NAMES}, got {self.profiles} "
                             f"(claim {self.id})")
        if not (self.strategy is None or callable(self.strategy) or isinstance(self.strategy, Mapping)):
            raise ValueError(f"strategy must be None, a function profile → strategy or a dict of strategies, got "
                             f"{type(self.strategy).__name__} (claim {self.id})")
        if not (self.allowance >= 0):
            raise ValueError(f"allowance must be >= 0, got {self.allowance} (claim {self.id})")

    @property
    def erratum_link(self) -> str | None:
        return None if self.erratum is None else f"docs/errata.md#{self.erratum}"


@dataclass(frozen=True)
class Case:
    """One evaluation of a claim: the claim, the profile, a parameter point and its seed."""

    claim: Claim
    profile: Profile
    params: Mapping
    seed: int

    @property
    def rng(self) -> np.random.Generator:
        """A fresh generator from :attr:`seed` (the same draws for the same claim and point)."""
        return np.random.default_rng(self.seed)

    @property
    def label(self) -> str:
        """The parameter point as the checks' labels print it: ``name=value`` pairs, floats to 4 digits."""
        return " ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in self.params.items())


_REGISTRY: dict[str, Claim] = {}
#: every registered claim, in registration order (read-only view)
CLAIMS: Mapping[str, Claim] = MappingProxyType(_REGISTRY)


def register(id, *, source, statement, kind, **options):
    """Decorator: register the decorated check function as claim ``id`` (keywords: :class:`Claim`'s fields)."""

    def decorate(check):
        _registry.add(_REGISTRY, id, Claim(id=id, source=source, statement=statement, kind=kind, check=check, **options),
                      "claim")
        return check

    return decorate


def unregister(id) -> None:
    """Remove claim ``id`` (a claim registered for a while, e.g. by a test; ValueError for an unknown id)."""
    _registry.remove(_REGISTRY, id, "claim")


def get_claim(claim) -> Claim:
    """A :class:`Claim` from itself or its id (ValueError for an unknown id)."""
    if isinstance(claim, Claim):
        return claim
    if claim not in _REGISTRY:
        raise ValueError(f"claim must be a registered claim id, got {claim!r}")
    return _REGISTRY[claim]


def claim_matches(pattern, claim) -> bool:
    """Whether ``pattern`` selects ``claim``: a shell-style glob on the id when it has ``*``, ``?`` or ``[``, else a
    case-insensitive substring of the id, the source or the method. An empty pattern or None selects every claim."""
    if not pattern:
        return True
    if any(ch in pattern for ch in "*?["):
        return fnmatch.fnmatchcase(claim.id, pattern)
    return pattern.lower() in " ".join((claim.id, claim.source, claim.method or "")).lower()


def select(pattern=None, profile=None) -> list[Claim]:
    """Claims whose id, source or method matches ``pattern`` (and that run in ``profile``), in order.

    A pattern with ``*``, ``?`` or ``[`` is a shell-style glob on the id; otherwise a case-insensitive
    substring of the id, the source or the method. ``None`` selects all.
    """
    return [claim for claim in _REGISTRY.values()
            if (profile is None or get_profile(profile).name in claim.profiles) and claim_matches(pattern, claim)]


def _stable_int(*parts) -> int:
    return int.from_bytes(hashlib.sha256(repr(parts).encode()).digest()[:8], "little")


@contextmanager
def _without_source_constants():
    """Hypothesis (6.131 on) mixes the numeric literals of the loaded local modules into a small share of its draws,
    so the points of a fixed seed would move whenever the package's source (or the set of imported modules)
    changes; within this block its pool of local constants is empty. A version of hypothesis without the pool has
    nothing to switch off."""
    from hypothesis.internal.conjecture import providers

    original = getattr(providers, "_get_local_constants", None)
    if original is None:
        yield
        return
    providers._get_local_constants = providers.Constants
    providers.CONSTANTS_CACHE.cache.clear()
    try:
        yield
    finally:
        providers._get_local_constants = original
        providers.CONSTANTS_CACHE.cache.clear()


def points(claim, profile, explore=0, seed=None) -> list[dict]:
    """The parameter points at which ``claim`` is checked in ``profile``.

    Without a strategy: one empty point. With one: ``profile.examples`` points drawn by hypothesis's
    generation phase with a seed fixed by the claim id and profile (the same points every run), or,
    with ``explore`` = N > 0, N fresh points from ``seed`` (an integer; printed by the CLI so that the
    draw can be repeated). No shrinking: every drawn point is checked as drawn. The points depend on the strategy
    and the seed only, not on the package's source text (:func:`_without_source_constants`).
    """
    claim, profile = get_claim(claim), get_profile(profile)
    if claim.strategy is None:
        return [{}]
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as fix_seed
    from hypothesis import strategies as st

    drawn = []
    count = int(explore) if explore else profile.examples
    base = _stable_int(claim.id, profile.name) if not explore else (0 if seed is None else int(seed))

    @fix_seed(base)
    @settings(max_examples=count, derandomize=False, database=None, deadline=None, phases=(Phase.generate,),
              suppress_health_check=list(HealthCheck))
    @given(claim.strategy(profile) if callable(claim.strategy) else st.fixed_dictionaries(claim.strategy))
    def collect(point):
        drawn.append(dict(point))

    with _without_source_constants():
        collect()
    return drawn


def _worse(a: CheckResult, b: CheckResult) -> CheckResult:
    """The result that is nearer to (or past) the edge of its criterion (a failing one first)."""
    if a.passed != b.passed:
        return b if a.passed else a
    return a if a.edge >= b.edge else b


def combine(results, before="", after="") -> CheckResult:
    """One result from several sub-checks of a claim: all must pass; the reported one (its numbers and
    criterion) is the worst, the one nearest to failing whatever its criterion. Its detail joins theirs, between
    ``before`` and ``after`` (what the sub-checks share: the sizes, the flows' statuses)."""
    results = list(results)
    return replace(functools.reduce(_worse, results), passed=all(r.passed for r in results),
                   detail=before + "; ".join(r.detail for r in results if r.detail) + after,
                   paper_holds=all(r.paper_holds for r in results))


@dataclass(frozen=True)
class PointOutcome:
    """The status of a claim at one point, with its result (None on ERROR) or the error message.

    ``first``: the first stage's result when a statistical failure was re-checked (module docstring).
    """

    params: Mapping
    status: str
    result: CheckResult | None
    seconds: float
    error: str | None = None
    first: CheckResult | None = None


def _status(claim: Claim, result: CheckResult) -> str:
    if claim.expected == PASS:
        return PASS if result.passed else FAIL
    if result.passed:
        return KNOWN_ERRATUM
    return UNEXPECTED_PASS if result.paper_holds else FAIL


def check_point(claim, params=None, profile="quick") -> PointOutcome:
    """Run ``claim``'s check at one parameter point (a dict; {} for a claim without a strategy).

    An unexpected statistical result is confirmed at :data:`CONFIRM_FACTOR` × the draws (module docstring).
    """
    claim, profile = get_claim(claim), get_profile(profile)
    params = dict(params or {})
    key = (claim.id, profile.name, sorted(params.items()))
    outcome = _evaluate(claim, profile, params, _stable_int(*key))
    if outcome.status in (FAIL, UNEXPECTED_PASS) and outcome.result.z is not None:
        second = _evaluate(claim, profile.enlarged(CONFIRM_FACTOR), params, _stable_int(*key, "confirm"))
        outcome = replace(second, seconds=outcome.seconds + second.seconds, first=outcome.result)
    return outcome


def _evaluate(claim, profile, params, seed) -> PointOutcome:
    start = time.perf_counter()
    try:
        result = claim.check(Case(claim, profile, MappingProxyType(params), seed))
    except Exception as err:  # a broken check is reported, never raised: the audit goes on
        return PointOutcome(params, ERROR, None, time.perf_counter() - start, f"{type(err).__name__}: {err}")
    if not isinstance(result, CheckResult):
        return PointOutcome(params, ERROR, None, time.perf_counter() - start,
                            f"check returned {type(result).__name__}, not CheckResult")
    return PointOutcome(params, _status(claim, result), result, time.perf_counter() - start)


def reproduction(claim, params, profile) -> str:
    """A one-line Python command that re-runs ``claim`` at ``params``."""
    claim, profile = get_claim(claim), get_profile(profile)
    return (f'python -c "from transfertheory.claims import check_point; '
            f"print(check_point({claim.id!r}, {dict(params)!r}, profile={profile.name!r}))\"")


_RANK = {PASS: 0, KNOWN_ERRATUM: 0, FAIL: 2, UNEXPECTED_PASS: 2, ERROR: 3}


def _worse_point(a: PointOutcome, b: PointOutcome) -> PointOutcome:
    """The point of the higher-ranked status; at equal rank the one whose result is worse (:func:`_worse`), else
    the first."""
    if _RANK[a.status] != _RANK[b.status]:
        return b if _RANK[b.status] > _RANK[a.status] else a
    return b if a.result is not None and b.result is not None and _worse(a.result, b.result) is b.result else a


@dataclass(frozen=True)
class Outcome:
    """A claim's outcome in a profile: the worst of its points."""

    claim: Claim
    profile: str
    status: str
    seconds: float
    points: tuple
    worst: PointOutcome

    @property
    def unexpected(self) -> bool:
        return self.status in UNEXPECTED

    @property
    def failing(self) -> list[PointOutcome]:
        return [p for p in self.points if p.status in UNEXPECTED]


def run(claim, profile="quick", explore=0, seed=None) -> Outcome:
    """Check ``claim`` at all its points in ``profile`` (``explore``: N fresh random points instead)."""
    claim, profile = get_claim(claim), get_profile(profile)
    start = time.perf_counter()
    try:
        chosen = points(claim, profile, explore, seed)
    except Exception as err:  # no point to check: the claim is one ERROR point
        outcomes = [PointOutcome({}, ERROR, None, 0.0, f"drawing points failed: {type(err).__name__}: {err}")]
    else:
        outcomes = [check_point(claim, p, profile) for p in chosen]
    return judge(claim, profile, outcomes, time.perf_counter() - start)


def judge(claim, profile, outcomes, seconds) -> Outcome:
    """The :class:`Outcome` of ``claim`` from its :class:`PointOutcome` s (computed here, or read back from the
    sweep engine's store): the worst point, its status the claim's; ``seconds``: the time they took."""
    claim, profile = get_claim(claim), get_profile(profile)
    outcomes = tuple(outcomes)
    worst = functools.reduce(_worse_point, outcomes)
    return Outcome(claim, profile.name, worst.status, seconds, outcomes, worst)
