"""A figure's headline numbers do not move when its integrator tolerances are tightened 10× (the helper of
tests/tolerance_stability.py): ``merlin_fig`` and ``faf_fig4`` at a reduced size with ``-m meta``, at their quick
profiles with ``-m slow``."""
from __future__ import annotations

import math

import numpy as np
import pytest

from tolerance_stability import assert_stable_under_tightened_tolerances, tolerance_shifts

from transfertheory.figures import faf_fig4, merlin_fig
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


@pytest.mark.meta
def test_merlin_fig_headline_is_stable_under_tightened_tolerances_reduced():
    """≈ 15 s on the 2-core machine at a light load (≈ 150 s at a load of 11)."""
    headline = merlin_headline(d=4, k=3, m=2, n_targets=(3,), draws=2, restarts=2, success_n=(3,), success_draws=8)
    assert_stable_under_tightened_tolerances(headline, **STUDY_TOLERANCES)


@pytest.mark.slow
def test_merlin_fig_headline_is_stable_under_tightened_tolerances_quick_profile():
    """≈ 300 s on the 2-core machine at a load of 3–11."""
    headline = merlin_headline(**merlin_fig.FIGURE.profiles["quick"])
    assert_stable_under_tightened_tolerances(headline, **STUDY_TOLERANCES)


def faf_fig4_headline(**size):
    """``headline(rtol, gtol)`` for :func:`tolerance_shifts` of FaF Fig. 4: ``gtol`` is the scratch flows' stopping
    rule (FaF's loss ≤ loss_tol, 1e-6 in the figure; their gradient criterion is never the one that stops them),
    ``rtol`` their integrator tolerance; the flow-time budget is scaled with the rule. The numbers: panel (e)'s transferability at every (μ, n) (mean ± clustered
    SE, whose sign the figure reads), the scratch risk of panel (c) at every n, and the finite-n boundary ± SE."""
    def headline(rtol, gtol):
        # the budget is not a tolerance: it grows with the rule, so that the tightened flows meet it too
        budget = size["max_time"] * FAF_FIG4_TOLERANCES["gtol"] / gtol
        out = faf_fig4.build(**{**size, "max_time": budget}, backend="numpy", rtol=rtol, loss_tol=gtol)
        grid, boundary = out.data, out.extra[0][1]
        assert (grid.converged_scratch == 1).all()  # every flow met the (tightened) rule: nothing left out
        numbers = {f"transferability mu={r.mu:g} n={r.n}": (r.transferability, r.transferability_se)
                   for r in grid.itertuples()}
        numbers.update({f"scratch risk n={r.n}": (r.scratch_risk, r.scratch_risk_se)
                        for r in grid[grid.mu == grid.mu.min()].itertuples()})
        numbers.update({f"finite-n n_c mu={r.mu:g}": (r.n_c_finite, r.n_c_finite_se) for r in boundary.itertuples()
                        if np.isfinite(r.n_c_finite)})
        return numbers
    return headline


#: the scratch flows' integrator tolerance (train_on_samples' default) and FaF's loss rule, as the figure runs them
FAF_FIG4_TOLERANCES = dict(rtol=3e-2, gtol=1e-6)


@pytest.mark.meta
def test_faf_fig4_headline_is_stable_under_tightened_tolerances_reduced():
    """The quick profile's d, m, m*, budgets and μ = 0.125 at 2 teachers × 2 data sets and 4 n ≤ 40 (where the
    tightened rule is met within 10× the budget; 11 s CPU, largest shift 0.65 SE at rtol 3e-2 → 3e-3)."""
    size = dict(faf_fig4.FIGURE.profiles["quick"], mus=(0.125,), ns=(20, 24, 32, 40), teachers=2, draws=2)
    assert_stable_under_tightened_tolerances(faf_fig4_headline(**size), **FAF_FIG4_TOLERANCES)


@pytest.mark.slow
def test_faf_fig4_headline_is_stable_under_tightened_tolerances_quick_profile():
    """The committed quick profile (194 s CPU and largest shift 1.01 SE at rtol 1e-2 → 1e-3, docs/relu.md)."""
    headline = faf_fig4_headline(**faf_fig4.FIGURE.profiles["quick"])
    assert_stable_under_tightened_tolerances(headline, **FAF_FIG4_TOLERANCES)
