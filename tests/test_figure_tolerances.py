"""A figure's headline numbers do not move when its integrator tolerances are tightened 10× (the helper of
tests/tolerance_stability.py): ``merlin_fig`` at a reduced size by default, at its quick profile with ``-m slow``."""
from __future__ import annotations

import math

import pytest

from tolerance_stability import assert_stable_under_tightened_tolerances, tolerance_shifts

from transfertheory.figures import merlin_fig
from transfertheory.sim.merlin import STUDY_TOLERANCES


def test_a_headline_that_follows_gtol_is_caught():
    def headline(rtol, gtol):  # a frequency that drops by 0.3 (≈ 4 combined SE) when gtol is tightened
        return {"success": (0.9 if gtol >= 1e-6 else 0.6, 0.05), "loss": (0.1, 0.0)}

    with pytest.raises(AssertionError, match=r"success: 0\.9 → 0\.6 \(4\.2 SE\)"):
        assert_stable_under_tightened_tolerances(headline, rtol=1e-4, gtol=1e-6)
    assert [name for name, *_ in tolerance_shifts(headline, 1e-4, 1e-6)] == ["success", "loss"]


def test_a_shift_with_no_standard_error_is_zero_or_infinite():
    shifts = dict((name, shift) for name, _, _, shift in tolerance_shifts(
        lambda rtol, gtol: {"same": (1.0, 0.0), "moved": (1.0 + (rtol < 1e-4), 0.0)}, 1e-4, 1e-6))
    assert shifts == {"same": 0.0, "moved": math.inf}


def merlin_headline(**size):
    """``headline(rtol, gtol)`` for :func:`tolerance_shifts`: panel (b)'s success frequency at every n_t (SE: the
    half-width of its 68 % Wilson interval) and panel (a)'s mean target loss of every algorithm and n_t (its SE)."""
    def headline(rtol, gtol):
        out = merlin_fig.build(**size, backend="numpy", rtol=rtol, gtol=gtol)
        success = out.extra[0][1]
        numbers = {f"success n_t={r.n_t}": (r.success, (r.success_high - r.success_low) / 2)
                   for r in success.itertuples()}
        numbers.update({f"loss {r.algorithm} n_t={r.n_t}": (r.loss_mean, r.loss_se) for r in out.data.itertuples()})
        return numbers
    return headline


def test_merlin_fig_headline_is_stable_under_tightened_tolerances_reduced():
    """≈ 15 s on the 2-core machine at a light load (≈ 150 s at a load of 11)."""
    headline = merlin_headline(d=4, k=3, m=2, n_targets=(3,), seeds=2, restarts=2, success_n=(3,), success_seeds=8)
    assert_stable_under_tightened_tolerances(headline, **STUDY_TOLERANCES)


@pytest.mark.slow
def test_merlin_fig_headline_is_stable_under_tightened_tolerances_quick_profile():
    """≈ 300 s on the 2-core machine at a load of 3–11."""
    headline = merlin_headline(**merlin_fig.FIGURE.profiles["quick"])
    assert_stable_under_tightened_tolerances(headline, **STUDY_TOLERANCES)
