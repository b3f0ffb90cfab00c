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

**Finite n** (not in FaF; :func:`finite_n_boundary`). FaF's heuristic boundary drops the n-dependent term C(n) of
Eq. 21, E_lt = C(n) + ‖P⊥ f_t*‖², and solves A n^{−ν} = ‖P⊥ f_t*‖². Converged linear transfer on the m frozen
features of the pretrained student is least squares of y = f_t*(x) on φ(x) = σ(Wx)/m (unique for n > m). Write
f_t* = P f_t* + r, r = P⊥ f_t* uncorrelated with every feature, E r² = ‖P⊥ f_t*‖². The excess risk over ‖P⊥‖²
is rᵀΦ(ΦᵀΦ)⁻¹Σ(ΦᵀΦ)⁻¹Φᵀr, Σ = E φφᵀ; if r were independent noise and the features Gaussian, its mean would be
‖P⊥‖² E tr(Σ(ΦᵀΦ)⁻¹) = ‖P⊥‖² m/(n − m − 1) (the mean of an inverse Wishart matrix), whatever Σ and its
conditioning (least squares is invariant to an invertible change of features). So

    R_lt(n) = ‖P⊥ f_t*‖² (n − 1)/(n − m − 1),   n > m + 1,

and transfer is negative where A n^{−ν} < R_lt(n). With h = n − m − 1 > 0, the log-gap
g(h) = log A − ν log(h + m + 1) − log ‖P⊥‖² − log(h + m) + log h tends to −∞ at both ends, and
h(h + m)(h + m + 1) g′(h) = −ν h² + m(1 − ν) h + m(m + 1) has exactly one positive root h*: g rises, then falls.
If g(h*) ≤ 0, transfer is negative at every n > m + 1; otherwise it is positive on (n_on, n_c) and n_c, the
finite-n boundary, is the larger root (n_c < FaF's (A/‖P⊥‖²)^{1/ν}: R_lt > ‖P⊥‖²). Below n = m + 1 the fit
interpolates and no such formula holds. The standard error of log n_c follows from the implicit function
theorem, ∂log n_c/∂θ = −(∂g/∂θ)/(n ∂g/∂n) for θ = (log A, ν, log ‖P⊥‖²), with the fit's covariance and
(se_p/p)² as in :meth:`PowerLawFit.boundary`.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ... import params as P
from ..._validation import Interval, scalar_or_array
from .._closed_form import closed_form

__all__ = ["PowerLawFit", "power_law_fit", "negative_transfer_boundary", "FiniteNBoundary",
           "least_squares_transfer_risk", "finite_n_boundary"]

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


_WIDTH = P.Param("m", Interval(1, np.inf, "left"), integer=True, description="student width (features)")


def least_squares_transfer_risk(pperp_sq, n, m):
    """R_lt(n) = ‖P⊥ f_t*‖² (n − 1)/(n − m − 1): the mean risk of least squares on m features, n > m + 1."""
    p = P.Param("pperp_sq", _NONNEGATIVE).check(pperp_sq)
    m = _WIDTH.scalar(m)
    n = P.Param("n", Interval(m + 1, np.inf, "neither")).check(n)
    return p * (n - 1) / (n - m - 1)


@dataclass(frozen=True)
class FiniteNBoundary:
    """Where A n^{−ν} meets :func:`least_squares_transfer_risk`: NaN for both roots when it never exceeds it."""

    n_c: float  #: the finite-n boundary: transfer negative above it
    n_c_se: float  #: its standard error (implicit-function delta method)
    n_onset: float  #: the lower root: transfer negative between m + 1 and it
    n_peak: float  #: where the gap log A n^{−ν} − log R_lt is largest (h* + m + 1)

    @property
    def negative_everywhere(self) -> bool:
        """Transfer is negative at every n > m + 1."""
        return bool(np.isnan(self.n_c))


def finite_n_boundary(fit: PowerLawFit, pperp_sq, m, pperp_se=0.0) -> FiniteNBoundary:
    """The finite-n boundary of negative transfer for a scalar power-law fit, ‖P⊥ f_t*‖² > 0 and width m."""
    p = P.Param("pperp_sq", _POSITIVE).scalar(pperp_sq)
    p_se = P.Param("pperp_se", _NONNEGATIVE).scalar(pperp_se)
    m = _WIDTH.scalar(m)
    log_a, nu = np.log(float(fit.A)), P.Param("nu", _POSITIVE).scalar(fit.nu)

    def gap(h):
        return log_a - nu * np.log(h + m + 1) - np.log(p) - np.log(h + m) + np.log(h)

    from scipy.optimize import brentq  # (SciPy on first use: not for ``python -m transfertheory.figures.faf_fig4 --help``)

    h_peak = (m * (1 - nu) + np.sqrt((m * (1 - nu)) ** 2 + 4 * nu * m * (m + 1))) / (2 * nu)
    if gap(h_peak) <= 0:
        return FiniteNBoundary(np.nan, np.nan, np.nan, h_peak + m + 1)
    low, high = h_peak, 2 * h_peak
    while gap(high) > 0:
        low, high = high, 2 * high
    h_c = brentq(gap, low, high, xtol=1e-12 * high, rtol=1e-14)
    tiny = h_peak
    while gap(tiny) > 0:
        tiny /= 2
    h_on = brentq(gap, tiny, h_peak, xtol=1e-14 * h_peak, rtol=1e-14)
    n_c = h_c + m + 1
    slope = -nu / n_c - 1 / (n_c - 1) + 1 / h_c  # ∂g/∂n at n_c (< 0)
    grad = -np.array([1.0, -np.log(n_c)]) / (n_c * slope)  # ∂log n_c / ∂(log A, ν)
    var = float(grad @ np.asarray(fit.cov, dtype=float) @ grad) + (p_se / (p * n_c * slope)) ** 2
    return FiniteNBoundary(float(n_c), float(n_c * np.sqrt(var)), float(h_on + m + 1), float(h_peak + m + 1))
