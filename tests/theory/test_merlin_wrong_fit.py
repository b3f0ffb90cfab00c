"""The wrong-fit check of MeRLin Thm 2 (claim ``merlin.sim.thm2.wrong-fit``, transfertheory/claims/merlin_sim.py):
its fit test must not count a feature that vanishes on the target data as fitting (a scale-free least-squares
head did, with heads ~1e28, on the seeds where x₂ = 0 on every sample; the paper profile then FAILED)."""
import numpy as np
import pytest

from transfertheory import claims
from transfertheory.claims import merlin_sim as C


def test_head_fits_needs_a_feature_that_carries_the_labels():
    y = np.array([[1.0, 0.0, 1.0]])
    carried = 1.18 * y[..., None]                      # the e₂ feature (√2θ)²x₂² where x₂² = y
    vanishing = 1e-28 * y[..., None]                   # stray coordinates shrunk to ~1e-14 by the regularizer
    assert C.head_fits(carried, y).all()
    assert not C.head_fits(vanishing, y).any()         # least squares would fit it with a head ~1e28
    assert C.head_fits(vanishing, np.zeros_like(y)).all()  # x₁ = 0 on every sample: the zero head fits


def _target_set(x1, x2, x3):
    x1, x2, x3 = (np.array(v, dtype=float) for v in (x1, x2, x3))
    return np.stack([x1, x2, x3, np.zeros_like(x1)], axis=-1), x1 ** 2


def test_e2_vanishing_on_the_data_does_not_fit_and_a_fitting_e2_ties_with_e1():
    sets = [_target_set([1, 0, -1], [0, 0, 0], [-1, 0, 1]),   # x₂ = 0, x₃² = y: e₂ cannot fit (data condition false)
            _target_set([1, -1, 0], [-1, 1, 0], [0, 1, 1]),   # x₂² = x₁² on every sample: e₂ fits
            _target_set([0, 0, 0], [1, -1, 0], [1, 0, 1])]    # x₁ = 0 on every sample: the zero head fits
    X, y = (np.stack(v) for v in zip(*sets))
    fits, stays, gap = C.wrong_feature_runs(X, y, np.random.default_rng(0))
    assert stays.all()
    assert fits.tolist() == [False, True, True]
    assert np.abs(gap[fits]).max() <= 1e-4
    assert gap[0] > 0.1                                # e₁ fits seed 0, e₂ does not: its validation loss is larger


@pytest.mark.slow
def test_wrong_fit_claim_holds_at_the_paper_profile():
    outcome = claims.check_point("merlin.sim.thm2.wrong-fit", {}, "paper")
    assert outcome.status == claims.PASS, outcome.result.detail
