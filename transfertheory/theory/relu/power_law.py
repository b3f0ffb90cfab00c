r"""Scratch-risk power law and the predicted boundary of negative transfer (FaF §4, Fig. 4c and 4e).

FaF observes that the scratch-trained ReLU network's risk follows R_sc ≈ A n^{−ν} (ν ≈ 1.18, Fig. 4c),
and that linear transfer pays the out-of-RKHS norm of the target, E_lt ≈ C(n) + ‖P⊥ f_t*‖² (Eq. 21)
with C(n) → 0. Transfer is predicted to turn negative where the two meet:

    A n_c^{−ν} = ‖P⊥ f_t*‖²   ⇔   n_c = (A / ‖P⊥ f_t*‖²)^{1/ν}

(transfer helps for n < n_c, hurts for n > n_c; n_c = +inf when ‖P⊥ f_t*‖² = 0).

The fit is ordinary least squares of log R on log n, solved by the normal equations:
log R = α − ν log n + ε with α = log A. Its covariance is s²(XᵀX)⁻¹ with s² = RSS/(k − 2) for k
points (exact for independent Gaussian ε of equal variance; then (ν̂ − ν)/se is Student-t with k − 2
degrees of freedom). The uncertainty of n_c is the delta method on
log n_c = (α − log p)/ν: ∂/∂α = 1/ν, ∂/∂ν = −log n_c/ν, ∂/∂log p = −1/ν.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ... import params as P
from ..._validation import Interval, scalar_or_array
from .._closed_form import closed_form

__all__ = ["PowerLawFit", "power_law_fit", "negative_transfer_boundary"]

_POSITIVE = Interval(0, np.inf, "neither")
_NONNEGATIVE = Interval(0, np.inf, "left")
_PPERP_SQ = P.Param("pperp_sq", _NONNEGATIVE, description="‖P⊥ f_t*‖², the target outside the features")


@dataclass(frozen=True)
class PowerLawFit:
    """R ≈ A n^{−ν} fitted by least squares of log R on log n (arrays of the batch shape, or floats).

    ``cov`` is the covariance of (log A, ν), shape (..., 2, 2).
    """

    A: object  #: prefactor A = exp(α̂)
    nu: object  #: exponent ν (R decreases with n for ν > 0)
    log_A_se: object  #: standard error of α̂ = log A
    nu_se: object  #: standard error of ν̂
    cov: np.ndarray  #: covariance of (log A, ν)
    dof: int  #: residual degrees of freedom k − 2
    residual_sd: object  #: s = √(RSS/(k − 2)), the scatter of log R about the line

    def boundary(self, pperp_sq, pperp_se=0.0):
        """(n_c, se of n_c): :func:`negative_transfer_boundary` and its delta-method standard error.

        ``pperp_se`` is the standard error of ``pperp_sq`` (e.g. over teachers), independent of the fit.
        """
        n_c = negative_transfer_boundary(pperp_sq, self.A, self.nu)
        p = _PPERP_SQ.check(pperp_sq)
        p_se = P.Param("pperp_se", _NONNEGATIVE).check(pperp_se)
        nu = np.asarray(self.nu, dtype=float)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # n_c = +inf where p = 0: se = +inf
            log_n = np.log(np.asarray(n_c, dtype=float))
            grad = np.stack(np.broadcast_arrays(1.0 / nu, -log_n / nu), axis=-1)
            var_log_n = np.einsum("...i,...ij,...j->...", grad, self.cov, grad)
            var_log_n = var_log_n + np.where(p_se > 0, (p_se / (p * nu)) ** 2, 0.0)
            se = np.where(np.isfinite(n_c), np.asarray(n_c) * np.sqrt(var_log_n), np.inf)
        return n_c, scalar_or_array(se, pperp_sq, pperp_se, self.nu)


def power_law_fit(n, risk) -> PowerLawFit:
    r"""Fit risk ≈ A n^{−ν} by ordinary least squares of log risk on log n (normal equations).

    Parameters
    ----------
    n : array_like, shape (k,)
        Sample sizes, > 0, at least 3 and not all equal.
    risk : array_like, shape (..., k)
        Risks at those n, > 0; leading axes are independent fits.

    Returns
    -------
    PowerLawFit
        Estimates, standard errors and the covariance s²(XᵀX)⁻¹ of (log A, ν), s² = RSS/(k − 2).
    """
    n = P.Param("n", _POSITIVE).check(n)
    risk = P.Param("risk", _POSITIVE).check(risk)
    if n.ndim != 1 or n.size < 3:
        raise ValueError(f"n must be a 1-d array of at least 3 sample sizes, got shape {n.shape}")
    if risk.ndim < 1 or risk.shape[-1] != n.size:
        raise ValueError(f"risk must have shape (..., {n.size}) (one value per n), got shape {risk.shape}")
    if np.ptp(n) == 0:
        raise ValueError("n must hold at least two different sample sizes")
    design = np.stack([np.ones_like(n), -np.log(n)], axis=-1)  # columns: α, ν
    gram_inv = np.linalg.inv(design.T @ design)
    coef = np.log(risk) @ (design @ gram_inv)  # (..., 2) = (α̂, ν̂)
    residual = np.log(risk) - coef @ design.T
    dof = n.size - 2
    s2 = (residual * residual).sum(axis=-1) / dof
    cov = s2[..., None, None] * gram_inv
    out = dict(A=np.exp(coef[..., 0]), nu=coef[..., 1], log_A_se=np.sqrt(cov[..., 0, 0]),
               nu_se=np.sqrt(cov[..., 1, 1]), residual_sd=np.sqrt(s2))
    scalar = risk.ndim == 1
    return PowerLawFit(**{k: float(v) if scalar else v for k, v in out.items()}, cov=cov, dof=dof)


@closed_form(pperp_sq=_PPERP_SQ, A=P.Param("A", _POSITIVE), nu=P.Param("nu", _POSITIVE))
def negative_transfer_boundary(pperp_sq, A, nu):
    r"""n_c = (A / ‖P⊥ f_t*‖²)^{1/ν}: where the scratch power law A n^{−ν} meets ‖P⊥ f_t*‖² (FaF §4, Fig. 4e).

    Parameters
    ----------
    pperp_sq : array_like, >= 0
        ‖P⊥ f_t*‖² (e.g. :func:`rkhs_projection_norms`' ``outside``); 0 gives n_c = +inf.
    A : array_like, > 0
        Power-law prefactor.
    nu : array_like, > 0
        Power-law exponent (a decreasing scratch risk).
    """
    with np.errstate(divide="ignore", over="ignore"):  # p = 0 (or a huge ratio) gives +inf
        return np.exp((np.log(A) - np.log(pperp_sq)) / nu)
