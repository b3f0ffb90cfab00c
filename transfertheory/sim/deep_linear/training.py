r"""Gradient-flow training of deep linear networks: :func:`train` and pretraining (FaF Lemma 3.3, Thm 3.4).

:func:`train` runs the package integrator on a loss of
:mod:`~transfertheory.sim.deep_linear.losses` — factored stages (:class:`~transfertheory.sim.deep_linear.stages.LowRankStages`) and the
saddle guard ‖∇_βL‖ ≤ gtol for losses of the end-to-end vector, dense stages
otherwise. :func:`pretrain` trains one network on the population source loss
(FaF Eq. 4) from W_l(0) = αW̄_l and reports the structure of its features.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..._memory import FLOAT_BYTES, check_memory, guarded_entry_point
from ..._validation import as_generator
from ...backend import get_backend, resolve_backend, to_device, to_host
from ..integrator import ErrorController, FlowResult, FlowSettings, flow_state_bytes, integrate_gradient_flow
from .losses import EndToEndLoss, PopulationLoss
from .network import (
    Architecture,
    assumption22_margin,
    conserved_imbalance,
    end_to_end,
    feature_matrix,
    imbalance_drift,
    init_weights,
)
from .stages import LowRankStages

__all__ = ["train", "PretrainResult", "pretrain", "TARGET_FLOW", "PRETRAIN_FLOW"]

#: the integrator settings of the target flows (scratch, fine-tuning, linear transfer by flow) of
#: :func:`~transfertheory.sim.deep_linear.experiment.run_transfer_experiment`: rtol 1e-3 (fine-tuning's error at it
#: grows with θ, docs/simulator.md; its consumers run tighter), gtol 1e-6 on ‖∇L‖ and ‖∇_βL‖, flow time 1e4
TARGET_FLOW = FlowSettings(controller=ErrorController(rtol=1e-3), gtol=1e-6, max_time=1e4)
#: the settings of :func:`pretrain`, tighter than the target flows' because every transfer method starts from its
#: weights (see :func:`pretrain`)
PRETRAIN_FLOW = FlowSettings(controller=ErrorController(rtol=1e-4), gtol=1e-8, max_time=1e4)


@guarded_entry_point
def train(loss, y0, flow: FlowSettings = TARGET_FLOW, *, progress=None, max_memory=None, early_verdict=True,
          **settings) -> FlowResult:
    """Gradient flow of ``loss`` from ``y0`` with the package integrator at ``flow`` (keyword ``settings`` —
    ``rtol``, ``gtol``, ``max_time``, … — override it, :meth:`~..integrator.FlowSettings.updated`).

    Absolute tolerance per instance from its initial scale, 10⁻²·rtol·RMS(y0ᵢ).
    For losses of the end-to-end vector: low-rank stages, and convergence
    needs ‖∇_βL‖ ≤ gtol as well as ‖∇L‖ ≤ gtol (no false convergence at the
    saddle W = 0, where ‖∇L‖ = O(α^{L−1})); dense stages otherwise. ``max_memory``: the memory guard's limit
    (bytes or ``"64G"``); a flow whose states (:func:`~..integrator.flow_state_bytes`) exceed it is refused.
    ``early_verdict``: for losses of the end-to-end vector, stop the instances that provably cannot converge
    before ``max_time`` with status ``unreachable`` (:func:`.stages.unreachable`) instead of integrating them to the budget;
    off under gradient descent at a fixed rate (``flow.solver.learning_rate``, a paper's protocol: its steps are run
    whether or not the flow could converge, :mod:`transfertheory.sim.gradient_descent`).
    """
    check_memory(flow_state_bytes(*y0.shape), what="train", max_memory=max_memory,
                 params={"instances": y0.shape[0], "parameters": y0.shape[1]})
    flow = flow.updated(**settings)
    xp = get_backend(y0)
    atol = flow.rtol * 1e-2 * np.maximum(to_host(xp.sqrt(xp.mean(y0 * y0, axis=1))), 1e-12)
    structured = isinstance(loss, EndToEndLoss)
    early_verdict = early_verdict and getattr(flow.solver, "learning_rate", None) is None
    return integrate_gradient_flow(loss, y0, flow, atol=atol, progress=progress,
                                   stage_kernel=LowRankStages(loss, early_verdict) if structured else None,
                                   residual=loss.residual if structured else None)


@dataclass
class PretrainResult:
    """Pretrained network and the structure checks of FaF Lemma 3.3 / Thm 3.4.

    Attributes: ``weights`` (1, P) backend array; ``beta`` end-to-end vector;
    ``flow`` the :class:`FlowResult`; ``feature_singular_values`` of
    F = W₁⋯W_{L−1} (descending); ``v_norm`` = σ₁(F)/‖β_s‖ (the ‖v‖ of
    F = β_s vᵀ); ``imbalance_drift`` (Eq. 35 error, relative);
    ``assumption22_margin`` of the initialization (divided by α²);
    ``init_imbalance`` = Σ_l ‖D_l(0)‖_F + the absolute drift (the scale of
    the residue that gradient flow never removes).
    """

    arch: Architecture
    weights: object
    beta: np.ndarray
    flow: FlowResult
    feature_singular_values: np.ndarray
    v_norm: float
    imbalance_drift: float
    assumption22_margin: float
    init_imbalance: float
    alpha: float

    @property
    def singular_value_ratio(self) -> float:
        """σ₂/σ₁ of the feature matrix (→ 0 as α → 0, FaF Thm 3.4)."""
        s = self.feature_singular_values
        return float(s[1] / s[0]) if s.size > 1 else 0.0

    def summary(self) -> dict:
        return {
            **self.flow.convergence.row(0),
            "sv_ratio": self.singular_value_ratio,
            "v_norm": self.v_norm,
            "imbalance_drift": self.imbalance_drift,
            "assumption22_margin": self.assumption22_margin,
        }


@guarded_entry_point
def pretrain(arch: Architecture, beta_s, alpha: float, *, seed=0, init="gaussian", flow: FlowSettings = PRETRAIN_FLOW,
             backend=None, max_memory=None, spectrum=None, **settings) -> PretrainResult:
    r"""Gradient flow on the population source loss from W_l(0) = αW̄_l (FaF Lemma 3.3, Thm 3.4).

    ``beta_s`` a host vector; ``backend`` a backend name (None: ``TRANSFERTHEORY_BACKEND``, default auto);
    ``seed`` draws the initial weights (an integer ≥ 0, a SeedSequence, or a Generator whose stream is used;
    :func:`~transfertheory.sim.deep_linear.experiment.run_transfer_experiment` passes
    ``sim.seeding.generator(seed, 1)``).
    ``flow``: the integrator's settings (:data:`PRETRAIN_FLOW`; keyword ``settings`` such as ``rtol``, ``gtol``
    override it). Tolerances are tighter than the target flows' because every transfer
    method starts from these weights: at d = 100 the pretrained weights
    (rtol = 1e-4, ‖∇L‖ and ‖β − β_s‖ ≤ gtol = 1e-8) are within 1.3e-9 of an
    rtol = 1e-6, gtol = 1e-10 run. (gtol must sit above the integrator's
    error floor: at rtol = 1e-4 the flow cannot get ‖∇L‖ below ~1e-9.) ``max_memory``: the memory guard's
    limit; the flow of the (L − 1)d² + d weights and the d × d SVD of the features are refused before any draw
    when they exceed it. ``spectrum``: eigenvalues (d,) of a diagonal input covariance Σ, the source loss then
    ½(β − β_s)ᵀΣ(β − β_s) (docs/anisotropic.md); None: Σ = I.
    """
    flow = flow.updated(**settings)
    xp = resolve_backend(backend)
    check_memory(flow_state_bytes(1, arch.n_params) + FLOAT_BYTES * 3 * arch.d**2, what="pretrain", xp=xp,
                 max_memory=max_memory, params={"d": arch.d, "depth": arch.depth})
    beta_s = to_device(np.asarray(beta_s, dtype=np.float64), xp)
    y0 = to_device(init_weights(arch, alpha, [as_generator(seed, "seed")], init), xp)
    result = train(PopulationLoss(arch, beta_s[None, :], spectrum), y0, flow)
    svals = to_host(xp.linalg.svd(feature_matrix(arch, result.y)[0], compute_uv=False))
    D0, D1 = conserved_imbalance(arch, y0), conserved_imbalance(arch, result.y)
    imbalance = sum(float(to_host(xp.linalg.norm(a[0]) + xp.linalg.norm(b[0] - a[0]))) for a, b in zip(D0, D1))
    return PretrainResult(
        arch=arch,
        weights=result.y,
        beta=to_host(end_to_end(arch, result.y)[0]),
        flow=result,
        feature_singular_values=svals,
        v_norm=float(svals[0] / to_host(xp.linalg.norm(beta_s))),
        imbalance_drift=float(to_host(imbalance_drift(arch, y0, result.y))[0]),
        assumption22_margin=float(to_host(assumption22_margin(arch, y0))[0]) / alpha**2,
        init_imbalance=imbalance,
        alpha=alpha,
    )
