r"""Finite-n boundary of negative transfer for converged linear transfer (FaF §4, Eq. 21, Fig. 4e).

FaF's heuristic boundary drops the n-dependent term C(n) of Eq. 21, E_lt = C(n) + ‖P⊥ f_t*‖², and solves
A n^{−ν} = ‖P⊥ f_t*‖². Converged linear transfer on the m frozen features of the pretrained student is least
squares of y = f_t*(x) on φ(x) = σ(Wx)/m (unique for n > m). Write f_t* = P f_t* + r, r = P⊥ f_t* uncorrelated
with every feature, E r² = ‖P⊥ f_t*‖². The excess risk over ‖P⊥‖² is rᵀΦ(ΦᵀΦ)⁻¹Σ(ΦᵀΦ)⁻¹Φᵀr, Σ = E φφᵀ; if r
were independent noise and the features Gaussian, its mean would be ‖P⊥‖² E tr(Σ(ΦᵀΦ)⁻¹) = ‖P⊥‖² m/(n − m − 1)
(the mean of an inverse Wishart matrix), whatever Σ and its conditioning (least squares is invariant to an
invertible change of features). So

    R_lt(n) = ‖P⊥ f_t*‖² (n − 1)/(n − m − 1),   n > m + 1,

and transfer is negative where A n^{−ν} < R_lt(n). With h = n − m − 1 > 0, the log-gap
g(h) = log A − ν log(h + m + 1) − log ‖P⊥‖² − log(h + m) + log h tends to −∞ at both ends, and
h(h + m)(h + m + 1) g′(h) = −ν h² + m(1 − ν) h + m(m + 1) has exactly one positive root h*: g rises, then falls.
If g(h*) ≤ 0, transfer is negative at every n > m + 1; otherwise it is positive on (n_on, n_c) and n_c, the
finite-n boundary, is the larger root (n_c < FaF's (A/‖P⊥‖²)^{1/ν}: R_lt > ‖P⊥‖²). Below n = m + 1 the fit
interpolates and no such formula holds. The standard error of log n_c follows from the implicit function
theorem, ∂log n_c/∂θ = −(∂g/∂θ)/(n ∂g/∂n) for θ = (log A, ν, log ‖P⊥‖²), with the fit's covariance and
(se_p/p)² as in :meth:`.power_law.PowerLawFit.boundary`.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ... import params as P
from ..._validation import Interval
from .power_law import _NONNEGATIVE, _POSITIVE, PowerLawFit

__all__ = ["FiniteNBoundary", "least_squares_transfer_risk", "finite_n_boundary"]

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
