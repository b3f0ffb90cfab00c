"""The early verdict ``unreachable`` of the deep-linear flows (sim/deep_linear/verdict.py).

Two checks that can fail: the bound on how far the exact flow can move each coordinate of β is obeyed by an
accurately integrated flow (so the certificate's premise holds), and on a batch of γ = 1 rows — where some
flows converge late and most never do — the verdict stops only rows that end at ``max_time`` without it, while
every row that converges without it converges with it, to the same values.
"""
from __future__ import annotations

import functools
import math

import numpy as np
import pytest

import transfertheory.sim.deep_linear.experiment as experiment
from transfertheory.sim import deep_linear as dl
from transfertheory.sim.deep_linear import verdict
from transfertheory.sim.integrator import CONVERGED_STATUSES, STATUSES


def _rotated_target(arch, n, seed, sigma=0.2):
    """A target loss in the data eigenbasis (diagonal Σ̂) and a start, as the simulator builds them."""
    gen = np.random.default_rng(seed)
    X = gen.standard_normal((n, arch.d))
    beta_t = gen.standard_normal(arch.d) / math.sqrt(arch.d)
    y = X @ beta_t + sigma * gen.standard_normal(n)
    gram, c = (X.T @ X / n)[None], (X.T @ y / n)[None]
    y0 = dl.init_weights(arch, 0.3, [np.random.SeedSequence(seed)], "gaussian")
    lam, _, c_rot, y0_rot = dl.rotate_to_data_eigenbasis(arch, gram, c, y0)
    return dl.LeastSquaresLoss(arch, lam, c_rot, np.array([y @ y / n])), y0_rot


@pytest.mark.parametrize("depth", [2, 3])
def test_the_exact_flow_moves_beta_no_farther_than_the_bound(depth):
    """|β_j(t + τ) − β_j(t)| ≤ R√M̄_j (the certificate's step 2) along an accurately integrated flow, for
    every coordinate, at several horizons τ; the bound is not vacuous (within 10² of the move on the
    coordinate that moves most; measured 2.8–64)."""
    arch = dl.Architecture(12, depth)
    loss, y = _rotated_target(arch, 12, seed=depth)
    rows = np.array([0])
    for tau in (1.0, 10.0, 100.0):
        to_go, reach = verdict.distances(loss, y, rows, np.array([tau]), gtol=0.0)
        flow = dl.train(loss, y, rtol=1e-7, gtol=1e-14, max_time=tau, early_verdict=False)
        assert flow.status[0] in ("max_time", "converged")
        moved = np.abs(dl.end_to_end(arch, flow.y) - dl.end_to_end(arch, y))[0]
        assert (moved <= reach[0]).all()
        assert reach[0][np.argmax(moved)] < 1e2 * moved.max()
        y = flow.y
    assert to_go.shape == reach.shape == (1, arch.d)


def test_an_unreachable_instance_is_reported_and_never_converged():
    """``unreachable`` is a status of its own, outside the convergence criteria (the integrator marks an instance
    converged only for those, FlowResult.convergence)."""
    assert "unreachable" in STATUSES and "unreachable" not in CONVERGED_STATUSES


def _run(early_verdict, **kw):
    original = experiment.train
    experiment.train = functools.partial(original, early_verdict=early_verdict)
    try:
        return dl.run_transfer_experiment(**kw)
    finally:
        experiment.train = original


def test_the_verdict_never_stops_a_flow_that_would_converge():
    """The same γ = 1 batch with and without the verdict: the same rows converge, with the same results
    (equal up to the batch's rounding: an instance's last bits depend on the rest of its batch, which the
    verdict shrinks), and every row stopped as ``unreachable`` ends at ``max_time`` without it."""
    kw = dict(d=40, gammas=[1.0], thetas=[math.pi / 4, 1.2], sigma=0.2, draws=6, seed=1,
              methods=("scratch", "finetune"), backend="numpy", progress=False)
    without, with_verdict = _run(False, **kw), _run(True, **kw)
    stopped = with_verdict.status == "unreachable"
    assert stopped.sum() >= 2 and (without.status[stopped] == "max_time").all()
    assert without.converged.sum() >= 4
    assert not with_verdict.converged[stopped].any()
    np.testing.assert_array_equal(with_verdict.converged, without.converged)
    assert (with_verdict.status[~stopped] == without.status[~stopped]).all()
    ok = without.converged.to_numpy()
    for column in ("risk", "t_final", "grad_norm", "loss"):
        np.testing.assert_allclose(with_verdict.loc[ok, column], without.loc[ok, column], rtol=1e-9)
    np.testing.assert_array_equal(with_verdict.loc[ok, "steps"], without.loc[ok, "steps"])
    late = with_verdict[stopped]
    assert (late.t_final < 1e4).all() and (late.steps > 0).all() and (late.grad_norm > 1e-6).all()
    assert not late.converged.any()
    assert with_verdict.attrs["integrator"]["evaluations"] < without.attrs["integrator"]["evaluations"]
