r"""Tables of the damped second-order Runge–Kutta–Chebyshev method (RKC2).

Sommeijer, Shampine & Verwer (1998), *J. Comput. Appl. Math.* 88:315: an
s-stage explicit method whose stability polynomial P_s(z) = a_s + b_sT_s(w₀ + w₁z)
(T_s the Chebyshev polynomial of the first kind, w₀ = 1 + ε/s²) is bounded by
one on a real interval [−β(s), 0] of length ∝ s², so a stiff gradient flow
needs only ~√κ gradient evaluations. This module holds the pure functions of
s: the recursion coefficients (:func:`rkc_coefficients`), β(s)
(:func:`rkc_stability_bound`), the stage-count rule and the coefficient table
shared by all integrations (:class:`RKCTables`), and the Butcher rows of one
stage count (:func:`rkc_butcher_matrix`) that factored stage kernels use, also arranged by stage for every
stage count at once (:func:`rkc_butcher_rows`).
"""
from __future__ import annotations

import functools

import numpy as np

__all__ = ["EPS_DAMPING", "rkc_coefficients", "rkc_stability_bound", "RKCTables", "tables", "rkc_butcher_matrix",
           "rkc_butcher_rows"]

# RKC damping ε (w₀ = 1 + ε/s²). Sommeijer et al. use ε = 2/13 (β(s) ≈ 0.653s², |P_s| ≤ 0.95 on the
# stiff part of the interval), tuned for transients. A gradient flow is integrated to its steady state:
# ε = 2 keeps β(s) ≈ 0.537s² but damps every stiff mode by |P_s| ≤ 0.59 per step, so the residue of
# the local errors in stiff modes decays instead of stalling ‖∇L‖ near gtol (docs/simulator.md)
EPS_DAMPING = 2.0


def rkc_coefficients(s: int):
    """Coefficients (μ, ν, μ̃, γ̃) of the s-stage damped RKC2 method, s ≥ 2.

    Chebyshev recursion of Sommeijer et al. (1998), Eqs. 2.4–2.8, with
    w₀ = 1 + ε/s², w₁ = T_s'(w₀)/T_s''(w₀), b_j = T_j''(w₀)/T_j'(w₀)²
    (b₀ = b₁ = b₂). Returns four arrays of length s + 1 (index j).
    """
    if s < 2:
        raise ValueError(f"s must be an integer >= 2, got {s}")
    return tuple(_coefficient_rows(np.array([s]))[:, 0])


def _chebyshev(s: np.ndarray):
    """w₀ = 1 + ε/s² (n,) and T_j(w₀), T_j'(w₀), T_j''(w₀) (n, s_max + 1) of the ascending stage counts ``s``,
    row i zero past j = s[i]: the Chebyshev recursion run once for all counts, step j advancing the counts s ≥ j (a
    suffix) with the floating-point operations of one s's recursion, in its order."""
    n, top = s.size, int(s[-1])
    w0 = 1.0 + EPS_DAMPING / s**2
    T, dT, ddT = np.zeros((3, top + 1, n))  # [j, i]: each step of the recursion reads and writes rows
    T[0], T[1], dT[1] = 1.0, w0, 1.0
    for j in range(2, top + 1):
        a = int(np.searchsorted(s, j))  # the counts s ≥ j
        w = w0[a:]
        T[j, a:] = 2 * w * T[j - 1, a:] - T[j - 2, a:]
        dT[j, a:] = 2 * T[j - 1, a:] + 2 * w * dT[j - 1, a:] - dT[j - 2, a:]
        ddT[j, a:] = 4 * dT[j - 1, a:] + 2 * w * ddT[j - 1, a:] - ddT[j - 2, a:]
    return w0, T.T, dT.T, ddT.T


def _coefficient_rows(stage_counts: np.ndarray) -> np.ndarray:
    """[μ, ν, μ̃, γ̃] of every stage count in ``stage_counts`` (ascending integers ≥ 2): array (4, n, s_max + 1),
    row i zero past j = stage_counts[i].

    The recursion of :func:`rkc_coefficients` run once for all stage counts: step j advances the counts s ≥ j
    (a suffix of the sorted counts) with the same floating-point operations in the same order as the recursion
    of one s, so every row is bitwise that of its own s (tested), at O(s_max) vector operations instead of
    O(s_max²) Python steps for a table of every s ≤ s_max.
    """
    s = np.asarray(stage_counts)
    n, top = s.size, int(s[-1])
    w0, T, dT, ddT = _chebyshev(s)
    rows = np.arange(n)
    w1 = (dT[rows, s] / ddT[rows, s])[:, None]
    inside = np.arange(top + 1) <= s[:, None]  # j ≤ s
    b = np.ones((n, top + 1))  # past s: 1, unused (keeps the quotients below finite)
    np.divide(ddT[:, 2:], dT[:, 2:] ** 2, out=b[:, 2:], where=inside[:, 2:])
    b[:, 0] = b[:, 1] = b[:, 2]
    out = np.zeros((4, n, top + 1))
    mu, nu, mu_t, gam_t = out
    mu_t[:, 1] = b[:, 1] * w1[:, 0]
    mu[:, 2:] = 2 * b[:, 2:] * w0[:, None] / b[:, 1:-1]
    nu[:, 2:] = -b[:, 2:] / b[:, :-2]
    mu_t[:, 2:] = 2 * b[:, 2:] * w1 / b[:, 1:-1]
    gam_t[:, 2:] = -(1 - b[:, 1:-1] * T[:, 1:-1]) * mu_t[:, 2:]
    out[:, ~inside] = 0.0
    return out


def rkc_stability_bound(s):
    """Length β(s) of the real stability interval [−β(s), 0] of s-stage RKC2.

    β(s) = (1 + w₀)·T_s''(w₀)/T_s'(w₀) (≈ 0.537 s² for ε = 2, 0.653 s² for ε = 2/13).
    ``s`` an integer ≥ 2 (returns a float) or an array of them (one recursion for all).
    """
    s_arr = np.asarray(s)
    order = np.argsort(s_arr, axis=None, kind="stable")
    counts = s_arr.reshape(-1)[order]
    w0, _, dT, ddT = _chebyshev(counts)
    rows = np.arange(counts.size)
    beta = np.empty(counts.size)
    beta[order] = (1 + w0) * ddT[rows, counts] / dT[rows, counts]
    return float(beta[0]) if s_arr.ndim == 0 else beta.reshape(s_arr.shape)


class RKCTables:
    """Coefficients and stability bounds of RKC2 for s = 2 … s_max, grown on demand."""

    def __init__(self, max_stages: int):
        self.max_stages = max_stages
        self.beta = np.concatenate([[0.0, 0.0], rkc_stability_bound(np.arange(2, max_stages + 1))])
        self.beta_per_stage2 = rkc_stability_bound(1000) / 1000**2
        self.coeffs = np.zeros((4, 1, 1))

    def stages(self, h_rho: np.ndarray) -> np.ndarray:
        """Stages per instance: RKC's rule s = 1 + ⌈√(1 + hρ/β₁)⌉ with β₁ = lim β(s)/s²
        (one stage of margin for an underestimated ρ), at least the smallest s with
        β(s) ≥ hρ, capped at ``max_stages`` (the caller caps h accordingly)."""
        rule = 1 + np.ceil(np.sqrt(1.0 + h_rho / self.beta_per_stage2)).astype(int)
        needed = np.searchsorted(self.beta, h_rho, side="left")
        return np.clip(np.maximum(rule, needed), 2, self.max_stages)

    def table(self, s_max: int) -> np.ndarray:
        """Array (4, S, S), S > s_max: [μ, ν, μ̃, γ̃][s, j]; rows are computed once and kept."""
        old = self.coeffs.shape[1]
        if old <= s_max:
            size = max(s_max + 1, 2 * old)
            tab = np.zeros((4, size, size))
            tab[:, :old, :old] = self.coeffs
            first = max(2, old)
            tab[:, first:size, :size] = _coefficient_rows(np.arange(first, size))
            self.coeffs = tab
        return self.coeffs


@functools.lru_cache(maxsize=4)
def tables(max_stages: int) -> RKCTables:
    """One table per stage cap, shared by every integration (they are pure functions of s)."""
    return RKCTables(max_stages)


@functools.lru_cache(maxsize=None)
def rkc_butcher_matrix(s: int) -> np.ndarray:
    r"""Stage rows of the s-stage RKC2 Butcher tableau: a read-only host array A of shape (s + 1, s).

    The recursion of :func:`~transfertheory.sim.integrator.dense_stages` is
    affine in the stage gradients, so Y_k = Y₀ + h Σ_{m<k} A[k, m] F(Y_m) with
    A[1] = μ̃₁e₀ and A[k] = μ_k A[k−1] + ν_k A[k−2] + μ̃_k e_{k−1} + γ̃_k e₀
    (row 0 is zero, A[k, m] = 0 for m ≥ k). A kernel that stores the F(Y_m) in
    factored form evaluates any stage from these rows; the entries stay O(1)
    (Chebyshev recursion with w₀ ≈ 1). Computed once per s and kept.
    """
    mu, nu, mu_t, gam_t = rkc_coefficients(s)
    A = np.zeros((s + 1, s))
    A[1, 0] = mu_t[1]
    for k in range(2, s + 1):
        A[k, : k - 1] = mu[k] * A[k - 1, : k - 1]
        A[k, : k - 2] += nu[k] * A[k - 2, : k - 2]
        A[k, k - 1] += mu_t[k]
        A[k, 0] += gam_t[k]
    A.flags.writeable = False
    return A


def rkc_butcher_rows(coefficients: np.ndarray, s_max: int) -> list:
    r"""Row k of the Butcher matrix of every stage count s ≥ k, for k = 0 … ``s_max``: a list R of host arrays
    with R[k][s − k] = A_s[k, :k] (:func:`rkc_butcher_matrix`\ (s)[k]; R[0] is empty), from the coefficient
    table [μ, ν, μ̃, γ̃][s, j] of :meth:`RKCTables.table` (at least ``s_max`` + 1 rows).

    The recursion of :func:`rkc_butcher_matrix`, vectorized over s: the same operations on the same numbers,
    so the entries are bitwise those of the per-s matrices. A kernel whose batch mixes stage counts reads the
    rows of stage k of all its instances with one gather (Σ_k (s_max − k + 1)·k ≈ s_max³/6 numbers).
    """
    mu, nu, mu_t, gam_t = coefficients
    rows = [np.zeros((s_max + 1, 0)), mu_t[1: s_max + 1, 1:2].copy()]  # R[1][s − 1] = μ̃₁(s)
    for k in range(2, s_max + 1):
        s = np.arange(k, s_max + 1)
        new = np.zeros((s.size, k))
        new[:, : k - 1] = mu[s, k, None] * rows[k - 1][1:]
        new[:, : k - 2] += nu[s, k, None] * rows[k - 2][2:, : k - 2]
        new[:, k - 1] += mu_t[s, k]
        new[:, 0] += gam_t[s, k]
        rows.append(new)
    return rows
