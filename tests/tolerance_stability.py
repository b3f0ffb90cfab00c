"""Whether a figure's headline numbers depend on its integrator tolerances, as a test helper.

A simulation figure draws numbers from gradient flows stopped by the integrator's ``rtol`` (error control) and
``gtol`` (‖∇‖ at which a flow counts as converged). Its numbers are results only if they do not move when the flows
are integrated more accurately. :func:`assert_stable_under_tightened_tolerances` rebuilds the headline numbers with
both tolerances divided by ``factor`` (10) — the same seeds, starts and splits, so the two builds are paired — and
asserts that each number moved by at most ``z`` combined standard errors √(SE₁² + SE₂²).
"""
from __future__ import annotations

import math

__all__ = ["tolerance_shifts", "assert_stable_under_tightened_tolerances"]


def tolerance_shifts(headline, rtol, gtol, factor=10):
    """[(name, value, tightened value, shift in combined SEs)] for every headline number.

    ``headline(rtol=…, gtol=…)`` rebuilds the numbers: a dict name → (value, standard error). A shift with a zero
    combined SE is 0 when the values are equal and infinite otherwise.
    """
    base, tight = headline(rtol=rtol, gtol=gtol), headline(rtol=rtol / factor, gtol=gtol / factor)
    if set(base) != set(tight):
        raise AssertionError(f"the tightened build has other headline numbers: {sorted(base)} vs {sorted(tight)}")
    shifts = []
    for name, (value, se) in base.items():
        tight_value, tight_se = tight[name]
        combined, gap = math.hypot(se, tight_se), abs(tight_value - value)
        shifts.append((name, value, tight_value, gap / combined if combined > 0 else (0.0 if gap == 0 else math.inf)))
    return shifts


def assert_stable_under_tightened_tolerances(headline, rtol, gtol, factor=10, z=2.0):
    """Fail, naming every moved number, when tightening rtol and gtol ``factor``× moves a headline number by more
    than ``z`` combined standard errors (:func:`tolerance_shifts`)."""
    moved = [f"{name}: {value:.4g} → {tight:.4g} ({shift:.1f} SE)"
             for name, value, tight, shift in tolerance_shifts(headline, rtol, gtol, factor) if shift > z]
    assert not moved, (f"headline numbers moved by more than {z} combined SE with rtol {rtol:g} → {rtol / factor:g}, "
                       f"gtol {gtol:g} → {gtol / factor:g}: " + "; ".join(moved))
