"""Instances of different sizes in one integration (RaggedBatch + BlockwiseStages): each instance's result is
the one a separate integration of its block gives — same states, times, steps, statuses — for both schemes, on
every backend; and the ragged helpers' indexing."""
import numpy as np
import pytest

from transfertheory.backend import get_backend, to_device, to_host
from transfertheory.sim.integrator import BlockwiseStages, DenseStages, RaggedBatch, integrate_gradient_flow, solvers
from transfertheory.sim.integrator.ragged import put, row_norms, take

SIZES, COUNTS = (3, 7, 12), (2, 3, 2)


def _quadratic(lam):
    """L = ½Σλᵢyᵢ² per instance; ``rows`` index the block's instances."""

    def gradient(y, rows):
        return lam[rows] * y, 0.5 * (lam[rows] * y * y).sum(axis=1)

    return gradient


def _problem(xp):
    """Per block: λ (spectra from well to badly conditioned, so that some instances run out of budget) and y₀."""
    rng = np.random.default_rng(7)
    decades = np.linspace(0.3, 3.5, sum(COUNTS))  # λ_min = 10^−decades: t ≈ 40 … 5·10⁴ to converge
    lams = [10.0 ** (-decades[start:start + c, None] * np.linspace(1, 0, P)[None, :])
            for P, c, start in zip(SIZES, COUNTS, np.cumsum((0,) + COUNTS))]
    y0s = [rng.standard_normal((c, P)) for P, c in zip(SIZES, COUNTS)]
    return [to_device(v, xp) for v in lams], [to_device(v, xp) for v in y0s]


def _assert_is_separate(ragged, separate):
    """Per instance, the ragged integration's result is its block's separate integration's, bit for bit."""
    for name in ("t_final", "steps", "grad_norm", "loss", "status", "residual"):
        np.testing.assert_array_equal(getattr(ragged, name), np.concatenate([getattr(r, name) for r in separate]),
                                      err_msg=name)
    for block, alone in zip(ragged.y.blocks, separate, strict=True):
        np.testing.assert_array_equal(to_host(block), to_host(alone.y))
    assert ragged.rejected == sum(r.rejected for r in separate)
    for name in ("accepted", "rejected"):
        np.testing.assert_array_equal(getattr(ragged.stats, name),
                                      np.concatenate([getattr(r.stats, name) for r in separate]), err_msg=name)


@pytest.mark.parametrize("scheme", ["rkc", "euler"])
def test_a_ragged_integration_is_the_separate_integrations_of_its_blocks(array_backend, scheme):
    _, xp = array_backend
    lams, y0s = _problem(xp)
    atol = np.linspace(1e-9, 1e-7, sum(COUNTS))  # per instance: a block must receive its own slice
    settings = dict(scheme=scheme, gtol=1e-6, max_time=300.0, max_steps=3000, rtol=1e-3)
    kernels = [DenseStages(_quadratic(lam)) for lam in lams]
    joint = BlockwiseStages(kernels, COUNTS)
    ragged = integrate_gradient_flow(joint.gradient, RaggedBatch(tuple(y0s)), stage_kernel=joint, atol=atol,
                                     **settings)
    separate = [integrate_gradient_flow(k.gradient, y0, stage_kernel=DenseStages(_quadratic(lam)),
                                        atol=atol[start:start + y0.shape[0]], **settings)
                for k, y0, lam, start in zip(kernels, y0s, lams, np.cumsum((0,) + COUNTS))]
    assert isinstance(ragged.y, RaggedBatch) and len(ragged.y) == sum(COUNTS)
    assert set(ragged.status) >= {"converged", "max_time"}  # instances of both outcomes
    _assert_is_separate(ragged, separate)
    assert ragged.evaluations == sum(r.evaluations for r in separate)
    np.testing.assert_array_equal(ragged.stats.evaluations, np.concatenate([r.stats.evaluations for r in separate]))


def _pseudo_huber(scale):
    """L = Σ√(1 + aᵢyᵢ²): the curvature aᵢ(1 + aᵢyᵢ²)^(−3/2) grows as the flow approaches 0 from large |y|, so
    RKC rejects steps late in the integration (not only the first, where nothing is carried yet)."""

    def gradient(y, rows):
        a = scale[rows]
        root = (1 + a * y * y) ** 0.5
        return a * y / root, root.sum(axis=1)

    return gradient


@pytest.mark.parametrize("scheme", ["rkc", "euler"])
def test_rejections_residual_guard_and_a_middle_block_finishing_first(array_backend, scheme, monkeypatch):
    """The restore paths of a rejected step (carried gradients, ragged warm starts), a residual guard that
    receives ragged states with *global* rows, a middle block that converges while the others run on (RKC) or
    alone (Euler): still each block's separate integration, bit for bit."""
    _, xp = array_backend
    rng = np.random.default_rng(1)
    sizes, counts = (2, 5, 3), (3, 2, 2)
    scales = [10.0 ** rng.uniform(-1, 2, (c, P)) for P, c in zip(sizes, counts)]
    y0s = [rng.uniform(20, 200, (c, P)) * (1e-9 if g == 1 else 1.0) for g, (P, c) in enumerate(zip(sizes, counts))]
    weights = np.linspace(1.0, 2.0, sum(counts))  # per instance, indexed by the residual's rows

    def residual_of(weight):
        return lambda y, rows: to_device(weight[rows], xp) * row_norms(y) * 1e-3

    later = []
    original = solvers.RKC2._keep_rejected
    monkeypatch.setattr(solvers.RKC2, "_keep_rejected", staticmethod(lambda state, out, rej, *before: (
        later.append(rej.size if state.carried is not None else 0), original(state, out, rej, *before))[1]))
    solver = solvers.RKC2() if scheme == "rkc" else solvers.GradientDescent(step_fraction=0.9)
    settings = dict(solver=solver, gtol=1e-8, max_time=1e4, max_steps=2000, rtol=1e-2)
    blocks = [DenseStages(_pseudo_huber(to_device(a, xp))) for a in scales]
    joint = BlockwiseStages(blocks, counts)
    ragged = integrate_gradient_flow(joint.gradient, RaggedBatch(tuple(to_device(y, xp) for y in y0s)),
                                     stage_kernel=joint, residual=residual_of(weights), **settings)
    later_ragged = sum(later)
    separate = [integrate_gradient_flow(_pseudo_huber(to_device(a, xp)), to_device(y0, xp),
                                        residual=residual_of(weights[start:start + len(y0)]), **settings)
                for a, y0, start in zip(scales, y0s, np.cumsum((0,) + counts))]
    if scheme == "rkc":
        assert later_ragged > 0  # rejections after the first step happened (and were restored)
        assert ragged.steps[3:5].max() < ragged.steps.max()  # block 1 (instances 3, 4) finished first
    else:  # a step 0.9/ρ̂ with ρ̂ from where the curvature is small jumps to max_time: the outer blocks stop there
        assert list(ragged.status) == ["max_time"] * 3 + ["converged"] * 2 + ["max_time"] * 2
    # Evaluation counts are not compared here: after a rejection at a batch's first step (nothing carried yet)
    # the whole working set recomputes its gradient at the next step, so the count depends on the batch (the
    # states do not); rejections and accepted steps are per instance (compared).
    _assert_is_separate(ragged, separate)


def test_take_and_put_address_instances_across_blocks(array_backend):
    _, xp = array_backend
    blocks = tuple(to_device(np.arange(c * P, dtype=float).reshape(c, P) + 100 * g, xp)
                   for g, (P, c) in enumerate(zip(SIZES, COUNTS)))
    batch = RaggedBatch(blocks)
    assert len(batch) == 7 and batch.offsets.tolist() == [0, 2, 5, 7]
    picked = take(batch, np.array([1, 2, 6]))
    assert picked.counts.tolist() == [1, 1, 1]
    np.testing.assert_array_equal(to_host(picked.blocks[1]), to_host(blocks[1])[:1])
    target = RaggedBatch(tuple(xp.zeros_like(b) for b in blocks))
    put(target, np.array([1, 2, 6]), picked)
    norms = to_host(row_norms(target))
    assert np.flatnonzero(norms).tolist() == [1, 2, 6]
    np.testing.assert_allclose(norms[[1, 2, 6]], to_host(row_norms(picked)), rtol=1e-15)


def test_ragged_states_need_a_kernel_that_handles_them():
    lams, y0s = _problem(np)
    with pytest.raises(ValueError, match="stage_kernel"):
        integrate_gradient_flow(lambda y, rows: None, RaggedBatch(tuple(y0s)), scheme="euler")
    with pytest.raises(ValueError, match="one kernel per block"):
        BlockwiseStages([DenseStages(_quadratic(lams[0]))], COUNTS)
    with pytest.raises(ValueError, match="2-D"):
        RaggedBatch((np.zeros(3),))
    wrong = BlockwiseStages([DenseStages(_quadratic(lam)) for lam in lams], (3, 2, 2))  # the batch has (2, 3, 2)
    with pytest.raises(ValueError, match="counts do not match"):
        integrate_gradient_flow(wrong.gradient, RaggedBatch(tuple(y0s)), stage_kernel=wrong, scheme="euler")
    with pytest.raises(ValueError, match="blocks"):
        wrong.gradient(RaggedBatch(tuple(y0s[:2])), np.arange(5))


class _SortedAnswer:
    """A dense stage kernel that answers in its request's sorted order (``StepOutcome.order``), like the deep
    linear networks' kernel: the integrator's working set follows that order."""

    def __init__(self, dense):
        self.dense, self.gradient, self.spectral_radius = dense, dense.gradient, dense.spectral_radius
        self.permuted = 0

    def __call__(self, step):
        out, order = self.dense(step), step.order
        self.permuted += int(not np.array_equal(order, np.arange(order.size)))
        dev = get_backend(out.y).asarray(order)
        return out._replace(y=out.y[dev], grad=None if out.grad is None else out.grad[dev], error=out.error[dev],
                            loss=out.loss[dev], grad_norm=out.grad_norm[dev], order=order)


def test_a_kernel_answering_in_its_own_order_changes_nothing(array_backend):
    """StepOutcome.order: the same states, times, steps, statuses and evaluations, bit for bit, through
    rejections and instances finishing in between — for plain states, and inside BlockwiseStages (which puts
    a block kernel's answer back in the block's order)."""
    _, xp = array_backend
    rng = np.random.default_rng(3)
    scales = 10.0 ** rng.uniform(-1, 2, (6, 4))
    y0 = rng.uniform(20, 200, (6, 4))
    settings = dict(gtol=1e-8, max_time=1e4, max_steps=300, rtol=1e-2)
    grad = _pseudo_huber(to_device(scales, xp))
    plain = integrate_gradient_flow(grad, to_device(y0, xp), **settings)
    kernel = _SortedAnswer(DenseStages(grad))
    sorted_answer = integrate_gradient_flow(grad, to_device(y0, xp), stage_kernel=kernel, **settings)
    assert kernel.permuted > 0 and plain.rejected > 0
    for name in ("t_final", "steps", "grad_norm", "loss", "status", "y"):
        np.testing.assert_array_equal(to_host(getattr(sorted_answer, name)), to_host(getattr(plain, name)), name)
    assert sorted_answer.evaluations == plain.evaluations and sorted_answer.rejected == plain.rejected
    blocks = BlockwiseStages([_SortedAnswer(DenseStages(_pseudo_huber(to_device(a, xp)))) for a in
                              (scales[:2, :3], scales[2:])], (2, 4))
    ragged = integrate_gradient_flow(blocks.gradient, RaggedBatch((to_device(y0[:2, :3], xp), to_device(y0[2:], xp))),
                                     stage_kernel=blocks, **settings)
    separate = [integrate_gradient_flow(_pseudo_huber(to_device(a, xp)), to_device(y, xp), **settings)
                for a, y in ((scales[:2, :3], y0[:2, :3]), (scales[2:], y0[2:]))]
    _assert_is_separate(ragged, separate)
