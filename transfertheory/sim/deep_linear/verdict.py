r"""A certificate that a deep-linear gradient flow cannot converge before its time budget ends.

The γ = 1 rows of FaF §3 (n = d) have a smallest curvature of the data ~1/d²: along that eigendirection the
end-to-end vector must travel far, and most of these flows cannot reach ‖∇_βL‖ ≤ gtol inside the default
budget. :func:`unreachable` proves it for an instance, from its current state alone, so that the integrator can
stop it (status ``unreachable``) instead of integrating to ``max_time``.

The bound, for a loss L(β) = ½βᵀdiag(λ)β − ĉᵀβ + const (the target loss in the data eigenbasis) or
½‖β − β_s‖² (λ = 1), with g = ∇_βL and θ all weights:

1. Path length. Along the exact flow ∫‖θ̇‖ ds ≤ √((T − t)∫‖θ̇‖² ds) = √((T − t)(L(t) − L(T))) ≤ R,
   R = √((T − t)(L(t) − L*)), and L(t) − L* = ½Σ_{λ_j>0} g_j²/λ_j exactly. So until T every layer stays within
   R of its current Frobenius norm: ‖W_k(s)‖_F ≤ ‖W_k(t)‖_F + R.
2. Speed of one coordinate of β. β̇ = −Mg with M = Σ_l J_lJ_lᵀ (J_l = ∂β/∂W_l), so by Cauchy–Schwarz
   |β̇_j| ≤ √M_jj ‖θ̇‖, and M_jj = Σ_l ‖r_l‖²‖(W₁⋯W_{l−1})ᵀe_j‖² (r_l = W_{l+1}⋯W_L; FaF Eq. 39) is at most
   M̄_j = Π_{k≥2}a_k + (‖e_jᵀW₁‖ + R)² Σ_{l≥2} Π_{k≥2, k≠l} a_k with a_k = (‖W_k‖_F + R)². Hence
   |β_j(T) − β_j(t)| ≤ R√M̄_j.
3. Distance still to go. Convergence needs ‖g‖ ≤ gtol, so |λ_jβ_j(T) − ĉ_j| ≤ gtol: β_j must still move by
   at least (|g_j(t)| − gtol)/λ_j.

If some j needs more than :data:`MARGIN` times the reachable R√M̄_j, the instance cannot converge before T.
The statement is about the exact flow from the current state; the margin, 25 %, is room for the integrator's
deviation from it (its risks move by ≤ 4·10⁻³ relative even at rtol = 10⁻², docs/simulator.md, "Tolerance vs
risk"). A margin of 2 stopped 27 of the benchmark's 38 unconverged γ = 1 rows at a median t = 6 200; 1.25
stops 36 at t = 2 300, and on seven batches with and without the verdict (rtol 10⁻⁴ … 10⁻², depths 2–4)
stopped no row that converges without it (docs/benchmarks.md, "early verdict"). Losses with a non-diagonal
Gram matrix get no verdict.
"""
from __future__ import annotations

import math

import numpy as np

from ...backend import to_host
from .network import end_to_end

__all__ = ["unreachable", "distances", "MARGIN"]

#: the distance still to go must exceed the reachable distance by this factor (room for integration error)
MARGIN = 1.25


def unreachable(loss, y, rows, t_remaining, gtol: float) -> np.ndarray:
    """Host bool (b,): instances ``rows`` at states ``y`` (b, P) that provably cannot reach ‖∇_βL‖ ≤ ``gtol``
    within the flow time ``t_remaining`` (b,) (module docstring); all False when ``loss`` has no diagonal
    curvature (:meth:`~.losses.EndToEndLoss.curvatures` is None)."""
    bounds = distances(loss, y, rows, t_remaining, gtol)
    if bounds is None:
        return np.zeros(y.shape[0], dtype=bool)
    to_go, reach = bounds
    return to_host(loss.xp.any(to_go > MARGIN * reach, axis=1))


def distances(loss, y, rows, t_remaining, gtol: float):
    """(to_go, reach), each (b, d): per coordinate j of β, the distance (|g_j| − gtol)⁺/λ_j it must still
    move to converge and the bound R√M̄_j on how far the exact flow can move it in ``t_remaining`` (module
    docstring, steps 1–3); None when ``loss`` has no diagonal curvature."""
    lam = loss.curvatures(rows)
    if lam is None:
        return None
    xp, arch = loss.xp, loss.arch
    mats, w_last = arch.layers(y)
    g = loss.beta_gradient(end_to_end(arch, y), rows, with_loss=False)
    curved = lam > 0
    inverse = xp.where(curved, 1.0 / xp.where(curved, lam, 1.0), 0.0)
    excess = 0.5 * xp.sum(g * g * inverse, axis=1)  # L(t) − L*
    radius = xp.sqrt(xp.maximum(xp.asarray(t_remaining, dtype=y.dtype), 0.0) * excess)
    to_go = xp.maximum(xp.abs(g) - gtol, 0.0) * inverse
    a = [(xp.sqrt(xp.sum(W * W, axis=(1, 2))) + radius) ** 2 for W in mats[1:]]
    a.append((xp.sqrt(xp.sum(w_last * w_last, axis=1)) + radius) ** 2)
    one = xp.ones_like(radius)
    first_layer_term = math.prod(a, start=one)
    others = sum(math.prod(a[:l] + a[l + 1:], start=one) for l in range(len(a)))
    rows_w1 = xp.sqrt(xp.sum(mats[0] * mats[0], axis=2))  # ‖e_jᵀW₁‖, (b, d)
    m_bar = first_layer_term[:, None] + (rows_w1 + radius[:, None]) ** 2 * others[:, None]
    return to_go, radius[:, None] * xp.sqrt(m_bar)
