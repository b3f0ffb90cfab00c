r"""Transferability on the (γ, θ) plane and the angles that bound its negative regions (FaF §3.3–3.4, Figs. 1–3).

Model (FaF §3.1): x ~ N(0, I_d); unit source and target vectors with
β_sᵀβ_t = cos θ; labels y = β_tᵀx + ε, ε ~ N(0, σ²); n = γd target samples.
The transferability T = E[R_scratch − R_transfer] of a transfer method
(:mod:`.methods`) is negative (transfer hurts) on regions of the (γ, θ) plane:

* linear transfer (FaF Eq. 13): for γ < 1 on (γ₋, γ₊), which exists for
  θ > arccos(1 − σ), and for γ > 1 beyond 1 + σ²/sin²θ (:mod:`.linear`);
* ridge transfer (FaF Eq. 15): the same regions at the effective angle θ_eff
  (:func:`effective_angle`);
* fine-tuning: for γ < 1 and θ > π/3 in the paper (FaF Eq. 17); under gradient
  flow for θ > θ* = arccos(c/2) (:func:`flow_limit_sign_angle`, docs/errata.md).

Every function here validates its input (:mod:`transfertheory.params`) and
broadcasts (scalar in → float out). ``limit="paper"`` selects the paper's
formulas, ``limit="flow"`` what gradient flow converges to; they differ only for
fine-tuning with σ > 0.
"""
from __future__ import annotations

import functools

import numpy as np

from .. import params as P
from .._validation import check_broadcast, one_of
from ._closed_form import closed_form
from .fine_tuning import fine_tune_scale, fine_tune_scale_deep_limit
from .linear import negative_transfer_onset_angle
from .methods import get_method, lam_rule
from .scratch import scratch_risk, scratch_risk_finite

__all__ = ["LIMITS", "effective_angle", "opening_angle", "flow_limit_sign_angle", "flow_limit_sign_angle_by_depth",
           "flow_limit_sign_angle_deep_limit", "transfer_risks"]

#: the two limits a transfer quantity can describe
LIMITS = ("paper", "flow")


#: the rule of a ``limit`` argument (``rule(value, name)``): one of :data:`LIMITS`
_limit = functools.partial(one_of, choices=LIMITS)


@closed_form(theta=P.THETA, lam=P.LAM)
def effective_angle(theta, lam):
    r"""Angle θ_eff with sin²θ_eff = the n → ∞ ridge risk (FaF Eq. 15): cos θ_eff = |cos θ|·√(1+2λ)/(1+λ).

    Eq. 15 reads 1 − cos²θ(1+2λ)/(1+λ)², so n → ∞ ridge transfer behaves
    exactly like plain linear transfer (Eq. 13) at the angle θ_eff ≥ min(θ, π − θ);
    the negative-transfer boundaries of ridge are those of Eq. 13 at θ_eff.
    θ_eff = θ at λ = 0 (θ ≤ π/2).
    """
    shrink = np.sqrt(1 + 2 * lam) / (1 + lam)
    return np.arccos(np.clip(np.abs(np.cos(theta)) * shrink, 0.0, 1.0))


@closed_form(sigma=P.SIGMA, lam=lam_rule("method"), limit=_limit)
def opening_angle(method, sigma, lam=0.0, limit="flow"):
    r"""θ at which the γ < 1 negative-transfer region opens (n, d → ∞); NaN where it never does.

    * linear: arccos(1 − σ) (FaF §3.3; NaN for σ ≥ 1);
    * ridge: cos θ = (1 − σ)(1 + λ)/√(1 + 2λ), i.e. θ_eff = arccos(1 − σ)
      (:func:`effective_angle`); 0 when that cosine is ≥ 1 (the region is
      then open already at θ = 0); NaN for σ ≥ 1;
    * finetune, ``limit="paper"``: π/3 for every σ (FaF Eq. 17);
    * finetune, ``limit="flow"``: the infimum over γ < 1 of θ*(γ) = arccos(min(c/2, 1))
      (:func:`flow_limit_sign_angle`): π/3 for σ = 0 and 0 for σ > 0, because the
      rescaling c diverges as γ → 1⁻, so just below γ = 1 even aligned tasks
      transfer negatively;
    * scratch: NaN (T ≡ 0).

    ``method`` is a name or a :class:`~.methods.TransferMethod`; ``lam`` only for ridge.
    """
    record = get_method(method)
    if record.name == "scratch":
        return np.full(np.broadcast_shapes(sigma.shape, lam.shape), np.nan)
    if record.name == "finetune":
        return np.where((sigma > 0) & (limit == "flow"), 0.0, np.pi / 3) + 0 * lam
    onset = np.asarray(negative_transfer_onset_angle(sigma, validate=False))
    cos_open = (1 - sigma) * (1 + lam) / np.sqrt(1 + 2 * lam)
    with np.errstate(invalid="ignore"):
        return np.where(np.isnan(onset), np.nan, np.arccos(np.clip(cos_open, -1.0, 1.0)))


@closed_form(gamma=P.GAMMA, sigma=P.SIGMA, depth=P.DEPTH.scalar)
def flow_limit_sign_angle(gamma, sigma, depth=2):
    r"""θ*(γ) = arccos(min(c/2, 1)) where the gradient-flow fine-tuning transferability changes sign.

    FaF Eq. 17 puts the sign change at θ = π/3 for every γ < 1; the actual
    gradient-flow limit rescales the carried-over component by
    c = :func:`~.fine_tuning.fine_tune_scale` (docs/errata.md), so
    T_ft = −(1 − γ)(c² − 2c cos θ) > 0 iff cos θ > c/2. θ* = π/3 at σ = 0,
    θ* < π/3 for σ > 0, and θ* = 0 once c ≥ 2 (γ close to 1). For γ ≥ 1,
    c = 1 and θ* = π/3 formally (T_ft = 0 there).
    """
    c = np.asarray(fine_tune_scale(gamma, sigma, depth, validate=False))
    return np.arccos(np.minimum(c / 2, 1.0))


def flow_limit_sign_angle_by_depth(gamma, sigma, depths):
    r"""θ*(γ, L) of :func:`flow_limit_sign_angle` for every L in ``depths`` (integers ≥ 2): an array of shape
    (len(depths), *broadcast(γ, σ)). θ* decreases with L toward :func:`flow_limit_sign_angle_deep_limit`."""
    check_broadcast(gamma=gamma, sigma=sigma)
    depths = [P.DEPTH.scalar(depth) for depth in np.atleast_1d(depths)]
    if not depths:
        raise ValueError("depths must name at least one depth L >= 2, got none")
    return np.stack([np.asarray(flow_limit_sign_angle(gamma, sigma, depth), float) for depth in depths])


@closed_form(gamma=P.GAMMA, sigma=P.SIGMA)
def flow_limit_sign_angle_deep_limit(gamma, sigma):
    r"""θ*_∞(γ) = arccos(min(c_∞/2, 1)), the L → ∞ limit of :func:`flow_limit_sign_angle`, with
    c_∞ = √(1 + σ²/(1 − γ)) (:func:`~.fine_tuning.fine_tune_scale_deep_limit`): 30° at σ = 1, γ = ½."""
    c = np.asarray(fine_tune_scale_deep_limit(gamma, sigma, validate=False))
    return np.arccos(np.minimum(c / 2, 1.0))


@closed_form(gamma=P.GAMMA, theta=P.THETA, sigma=P.SIGMA, lam=lam_rule("method"), limit=_limit,
             depth=P.DEPTH.scalar)
def transfer_risks(method, gamma, theta, sigma, lam=0.0, finite_d=None, limit="flow", depth=2):
    r"""(T, E R_scratch, E R_transfer) of a transfer method, broadcast over ``gamma``, ``theta`` (and σ, λ).

    n, d → ∞ (``finite_d=None``): the record's ``paper_*`` or ``flow_*`` forms
    (``limit``; ``flow_*`` of an L = ``depth`` network, which matters for fine-tuning only); scratch is FaF
    Eq. 10. At γ = 1 the risks are +inf for σ > 0,
    and so are T_lt and T_ridge, while T_ft is finite (the divergent noise
    cancels pathwise).

    Finite d (an integer ≥ 1): n = round(γd) and the exact finite-size
    expectations (``paper_*_finite``, which are also the flow's for linear and
    ridge transfer). Points with n below the method's ``min_n`` (n = 0 for
    every method; n ≤ 2 for linear and ridge, where E‖z‖⁻² = +inf) are NaN in
    all three outputs. |n − d| ≤ 1 gives +inf risks for σ > 0.
    Fine-tuning with ``limit="flow"`` at finite d has no closed form: a
    ValueError points to the record's Monte Carlo
    (:meth:`~.methods.TransferMethod.flow_transferability_finite`, per n).
    """
    record = get_method(method)
    if finite_d is None:  # validated once here; the record's forms and the scratch risk trust the arrays
        if limit == "paper":
            t = record.paper_transferability(gamma, theta, sigma, lam, validate=False)
            r_tr = record.paper_risk(gamma, theta, sigma, lam, validate=False)
        else:
            t = record.flow_transferability(gamma, theta, sigma, lam, depth=depth, validate=False)
            r_tr = record.flow_risk(gamma, theta, sigma, lam, depth=depth, validate=False)
        r_sc = scratch_risk(gamma, sigma, validate=False)
        return tuple(np.array(v) for v in np.broadcast_arrays(t, r_sc, r_tr))

    if limit == "flow" and not record.flow_is_paper:
        raise ValueError(f"limit='flow' at finite d has no closed form for method {record.name!r}: use "
                         f"get_method({record.name!r}).flow_transferability_finite(n, d, ...) (Monte Carlo) per n")
    d = P.D.scalar(finite_d, name="finite_d")
    n = np.rint(gamma * d)
    valid = n >= record.min_n
    n_ok = np.where(valid, n, record.min_n)
    t = record.paper_transferability_finite(n_ok, d, theta, sigma, lam, validate=False)
    r_tr = record.paper_risk_finite(n_ok, d, theta, sigma, lam, validate=False)
    r_sc = scratch_risk_finite(n_ok, d, sigma, validate=False)
    t, r_sc, r_tr = np.broadcast_arrays(t, r_sc, r_tr)
    mask = np.broadcast_to(~valid, t.shape)
    return tuple(np.where(mask, np.nan, v) for v in (t, r_sc, r_tr))
