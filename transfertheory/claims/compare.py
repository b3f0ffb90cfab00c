r"""Comparisons that checks return: agreement within k·SE + allowance, a paper's value refuted, one-sided
z-tests, exact bounds. Each states its criterion (:class:`~transfertheory.claims.registry.Criterion`), which
the audit prints under *requires*: ``|z| ≤ 4`` (agreement), ``paper off by |z| > 6`` (refutation),
``z > 4`` / ``|z| > 4`` (:func:`significant`), ``z ≤ 4`` (:func:`not_above`), ``|Δ| ≤ tol`` (:func:`within`),
``holds`` (:func:`holds`), ``paper fails by > margin`` (:func:`exceeds`).

The 4-SE rule (docs/testing.md): a statistical comparison passes when
|measured − reference| ≤ 4·s + allowance, s = √(SE² + SE_ref²) (the reference's own SE when it is
itself a Monte Carlo), z = (measured − reference)/s. Under the null |z| > 4 has probability 6·10⁻⁵.
An erratum is demonstrated when the paper's value is more than 6·s + allowance from the measurement.
A rounding allowance of 1e-9·(1 + |reference|) — the accuracy of an SVD pseudo-inverse — covers the
degenerate points where every sample equals the reference up to rounding (SE ≈ 0: σ = 0 with n ≥ d,
or θ = σ = 0).
"""
from __future__ import annotations

import math

import numpy as np

from ..sim.statistics import mean_se
from .registry import CheckResult, Criterion

__all__ = ["Z_THRESHOLD", "ERRATUM_Z", "ROUNDING", "mean_se", "agreement", "mc_agreement", "refutation",
           "significant", "not_above", "within", "holds", "exceeds", "weighted_line"]

Z_THRESHOLD = 4.0
ERRATUM_Z = 6.0
ROUNDING = 1e-9


def _z(gap, scale):
    if scale > 0:
        return gap / scale
    return 0.0 if gap == 0 else math.copysign(math.inf, gap)


def _k_se_criterion(prefix, relation, passed, z, threshold, gap, tol, allowance, rounding=0.0):
    """``|z| relation threshold`` where that is exactly the test (no allowance, and the rounding term does not
    decide it); otherwise ``|Δ| relation k SE + allowance + rounding``, numerically ``tol``."""
    in_z = abs(z) <= threshold if relation == "≤" else abs(z) > threshold
    if allowance == 0 and in_z == passed:
        return Criterion(f"{prefix}|z|", relation, threshold, abs(z))
    return Criterion(f"{prefix}|Δ|", relation, tol, abs(gap),
                     bound_text=f"{threshold:g} SE + {allowance + rounding:.2g}")


def agreement(measured, se, reference, *, reference_se=0.0, allowance=0.0, threshold=Z_THRESHOLD, label=""):
    """|measured − reference| ≤ threshold·s + allowance (+ rounding), s = √(se² + reference_se²)."""
    scale = math.hypot(se, reference_se)
    gap = float(measured) - float(reference)
    rounding = ROUNDING * (1 + abs(float(reference)))
    tol = threshold * scale + allowance + rounding
    z = 0.0 if abs(gap) <= rounding else _z(gap, scale)  # equal up to rounding: no statistics to report
    detail = (f"{label}: measured {measured:.6g} ± {se:.2g}, reference {reference:.6g}"
              + (f" ± {reference_se:.2g}" if reference_se else "") + f", z = {z:+.2f}")
    passed = abs(gap) <= tol
    return CheckResult(abs(gap), tol, passed, z, threshold, detail,
                       criterion=_k_se_criterion("", "≤", passed, z, threshold, gap, tol, allowance, rounding))


def mc_agreement(samples, reference, *, allowance=0.0, label=""):
    """:func:`agreement` of a sample mean (SE from the sample) with an exact reference."""
    mean, se = mean_se(samples)
    return agreement(mean, se, reference, allowance=allowance, label=label)


def refutation(measured, se, paper_value, *, paper_se=0.0, allowance=0.0, threshold=ERRATUM_Z, label=""):
    """The paper's value lies more than threshold·s + allowance from the measurement (an erratum demonstrated).

    ``paper_holds`` is set when the measurement agrees with the paper's value by the 4-SE rule.
    """
    scale = math.hypot(se, paper_se)
    gap = float(measured) - float(paper_value)
    tol = threshold * scale + allowance
    z = _z(gap, scale)
    detail = f"{label}: measured {measured:.6g} ± {se:.2g}, paper {paper_value:.6g}, z = {z:+.2f}"
    passed = abs(gap) > tol
    return CheckResult(abs(gap), tol, passed, z, threshold, detail,
                       paper_holds=abs(gap) <= Z_THRESHOLD * scale + allowance,
                       criterion=_k_se_criterion("paper off by ", ">", passed, z, threshold, gap, tol, allowance))


def significant(mean, se, threshold=Z_THRESHOLD, *, two_sided=False, label=""):
    """A significance test: z = mean/se > threshold (one-sided; ``two_sided``: |z| > threshold, a mean ≠ 0).

    ``mean`` is the quantity whose sign the statement fixes (a paired difference, a distance to a reference).
    ``discrepancy``/``tolerance`` are z (|z|) and the threshold.
    """
    z = _z(float(mean), float(se))
    statistic = abs(z) if two_sided else z
    return CheckResult(statistic, float(threshold), bool(statistic > threshold), z, float(threshold),
                       f"{label}: z = {z:+.2f}",
                       criterion=Criterion("|z|" if two_sided else "z", ">", float(threshold), statistic))


def not_above(mean, se, threshold=Z_THRESHOLD, label=""):
    """A one-sided z-test: ``mean`` is not above 0 by more than ``threshold`` SE (z = mean/se ≤ threshold)."""
    z = _z(float(mean), float(se))
    return CheckResult(z, float(threshold), bool(z <= threshold), z, float(threshold), f"{label}: z = {z:+.2f}",
                       criterion=Criterion("z", "≤", float(threshold), z))


def within(value, reference, tolerance, label=""):
    """A deterministic comparison |value − reference| ≤ tolerance."""
    gap = abs(float(value) - float(reference))
    return CheckResult(gap, float(tolerance), bool(gap <= tolerance),
                       detail=f"{label}: {value:.10g} vs {reference:.10g} (tolerance {tolerance:.2g})",
                       criterion=Criterion("|Δ|", "≤", float(tolerance), gap))


def holds(condition, label=""):
    """A deterministic yes/no statement (discrepancy 0 if it holds, 1 if not; tolerance 0)."""
    condition = bool(condition)
    return CheckResult(0.0 if condition else 1.0, 0.0, condition,
                       detail=f"{label}: {'holds' if condition else 'fails'}", criterion=Criterion("holds"))


def exceeds(amount, margin=0.0, label="", paper_holds=False):
    """A demonstration by an exact inequality: ``amount`` (how far the paper's statement fails) > ``margin``."""
    return CheckResult(float(amount), float(margin), bool(amount > margin),
                       detail=f"{label}: {amount:.6g} > {margin:g}", paper_holds=paper_holds,
                       criterion=Criterion("paper fails by", ">", float(margin), float(amount)))


def weighted_line(x, values, se, *terms):
    """(slope, intercept) and their covariance of the weighted least-squares line through (x, values), weights 1/se²;
    each of ``terms`` (arrays like x) adds a column to the fit, its coefficient after the intercept's."""
    design = np.vstack([np.asarray(x, dtype=float), np.ones(len(x)), *(np.asarray(t, dtype=float) for t in terms)]).T
    weights = 1 / np.asarray(se, dtype=float) ** 2
    cov = np.linalg.inv(design.T @ (design * weights[:, None]))
    return cov @ design.T @ (weights * np.asarray(values, dtype=float)), cov
