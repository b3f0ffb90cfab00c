r"""TDR §6: Gram-matrix (NTK-regime) quantities of fine-tuning a wide two-layer ReLU network.

Model (TDR §6.1, "Towards understanding the transferability of deep representations"):
f(x) = (1/√m) aᵀσ(Wᵀx), σ = ReLU, a_r ∈ {±1} fixed, w_r(0) ~ N(0, κ²I), inputs ‖x‖ = 1, labels
|y| ≤ 1, loss L = ½‖y − f(X)‖², W trained by gradient descent, first on the pretraining set
(X_P, y_P) — giving W(P) — then on the target set (X_Q, y_Q) — giving W(Q). In the m → ∞, κ → 0
regime the network is its linearization around W(0) and everything is governed by the Gram matrices

    H∞_ij = E_{w~N(0,I)}[x_iᵀx_j 1{wᵀx_i ≥ 0, wᵀx_j ≥ 0}] = x_iᵀx_j (π − θ_ij)/(2π)   (TDR §6.1)

(θ_ij the angle between x_i and x_j) of one set (H_P, H_Q) or across two sets (H_PQ). Computed here:

* :func:`two_layer_gram` — H∞ (and the cross Gram H_PQ);
* :func:`transformed_labels` — y_{P→Q} = H_PQᵀ H_P⁻¹ y_P (TDR §6.1);
* :func:`finetune_distance_bound` — √((y_Q − y_{P→Q})ᵀ H_Q⁻¹ (y_Q − y_{P→Q})), the leading term of
  ‖W(Q) − W(P)‖_F (TDR Thm 2, Eq. 2);
* :func:`scratch_distance` — √(y_Qᵀ H_Q⁻¹ y_Q), the limit of ‖W(Q) − W(0)‖_F from scratch (Arora et
  al. 2019; TDR §6.3 prints it without the square root — an erratum, docs/tdr.md);
* :func:`gradient_norm_change` — the leading terms of TDR Thm 1 (Eq. 1);
* :func:`transfer_summary` — all of them with λ_min(H_P), λ_min(H_Q).

Numerics (docs/tdr.md, "Numerics"): the angle is computed as θ = 2·atan2(‖x_i − x_j‖, ‖x_i + x_j‖),
accurate for near-duplicate and near-antipodal pairs where arccos(x_iᵀx_j) loses half the digits.
Solves use the symmetric eigendecomposition (:class:`GramSolve`), no jitter; eigenvalues at or below
n·ε·λ_max are the numerical null space. A quadratic form vᵀH⁻¹v whose v has a component above √ε·‖v‖
in that null space is ``+inf`` (exactly duplicated inputs with different labels: no finite weight
change interpolates them); a solve H⁻¹b with such a b is a ValueError (the interpolant does not
exist). Functions infer the array module (NumPy or CuPy) from their inputs and return Python floats
for scalars.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._memory import FLOAT_BYTES, check_memory
from ..backend import get_backend, stacked_eigh, to_host
from .ntk import _inputs as _points

__all__ = [
    "UNIT_NORM_TOLERANCE",
    "two_layer_gram",
    "GramSolve",
    "gram_solve",
    "transformed_labels",
    "finetune_distance_bound",
    "scratch_distance",
    "GradientNormChange",
    "gradient_norm_change",
    "TransferSummary",
    "transfer_summary",
]

#: inputs must satisfy |‖x‖ − 1| ≤ this (TDR §6.1 assumes ‖x‖ = 1; float32 rounding passes)
UNIT_NORM_TOLERANCE = 1e-6
#: rows of the pairwise-angle computation per block (bounds its memory to ~block·n·d floats)
_BLOCK_ELEMENTS = 2**22


# --------------------------------------------------------------------------- validation


def _inputs(x, name):
    """``x`` as a 2-D array (n, d) of unit rows; ValueError naming ``name`` otherwise."""
    arr, xp = _points(x, name)
    if xp is np:  # (float64 on the host; a device array keeps its floating dtype)
        arr = arr.astype(float, copy=False)
    norms = np.linalg.norm(to_host(arr).astype(float), axis=1)
    bad = np.abs(norms - 1) > UNIT_NORM_TOLERANCE
    if bad.any():
        i = int(np.argmax(bad))
        raise ValueError(f"{name} rows must have unit norm (|‖x‖ − 1| <= {UNIT_NORM_TOLERANCE:g}; TDR §6.1), "
                         f"got ‖{name}[{i}]‖ = {norms[i]:.10g}")
    return arr


def _labels(y, n, name, inputs_name):
    """``y`` as a 1-D array of n labels in [−1, 1]; ValueError naming ``name`` otherwise."""
    xp = get_backend(y)
    host = np.asarray(to_host(y)) if xp is not np else np.asarray(y)
    if host.dtype.kind not in "iuf" or host.dtype == bool:
        raise ValueError(f"{name} must be a real array of shape (n,), got dtype {host.dtype}")
    if host.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},) to match {inputs_name}, got shape {host.shape}")
    if not np.all(np.isfinite(host)) or np.any(np.abs(host) > 1):
        bad = host[~(np.abs(host) <= 1)].flat[0]
        raise ValueError(f"{name} must be in [-1, 1] (TDR §6.1: |y| <= 1), got {bad:g}")
    if xp is np:
        return host.astype(float, copy=False)
    return y if y.dtype.kind == "f" else y.astype(float)


def _same_dimension(x, y, x_name, y_name):
    if x.shape[1] != y.shape[1]:
        raise ValueError(f"{x_name} and {y_name} must have the same input dimension d, "
                         f"got {x.shape[1]} and {y.shape[1]}")


# --------------------------------------------------------------------------- Gram matrices


def _gram_unchecked(x, y):
    """H∞ between the rows of x and y (unit rows), angle by the atan2 formula, in blocks of rows."""
    xp = get_backend(x, y)
    # the blocks and their concatenation, and the eigendecomposition callers take of it (two more)
    check_memory(FLOAT_BYTES * 4 * x.shape[0] * y.shape[0], what="two_layer_gram", xp=xp,
                 params={"len(X)": x.shape[0], "len(Y)": y.shape[0]})
    rows = max(1, _BLOCK_ELEMENTS // max(1, y.shape[0] * x.shape[1]))
    blocks = []
    for start in range(0, x.shape[0], rows):
        xb = x[start:start + rows, None, :]
        minus = xp.linalg.norm(xb - y[None, :, :], axis=-1)
        plus = xp.linalg.norm(xb + y[None, :, :], axis=-1)
        angle = 2 * xp.arctan2(minus, plus)
        blocks.append(xp.cos(angle) * (math.pi - angle) / (2 * math.pi))
    return xp.concatenate(blocks, axis=0)


def two_layer_gram(X, Y=None):
    r"""TDR's Gram matrix H∞ of unit-norm inputs (§6.1): x_iᵀy_j (π − θ_ij)/(2π).

    H∞_ij = E_{w~N(0,I)}[x_iᵀy_j 1{wᵀx_i ≥ 0, wᵀy_j ≥ 0}]: the probability that a Gaussian half-space
    contains both unit vectors is (π − θ_ij)/(2π), θ_ij = angle(x_i, y_j). With ``Y=None`` this is
    H_P (or H_Q) of one set; with ``Y`` the cross Gram H_PQ (rows: X, columns: Y).

    Parameters
    ----------
    X : array (n, d) with unit rows
    Y : array (n', d) with unit rows, optional

    Returns
    -------
    array (n, n') of the array module of the inputs; the diagonal of H∞(X) is exactly 1/2.
    """
    X = _inputs(X, "X")
    Y = X if Y is None else _inputs(Y, "Y")
    _same_dimension(X, Y, "X", "Y")
    return _gram_unchecked(X, Y)


@dataclass(frozen=True)
class GramSolve:
    """The eigendecomposition H = V diag(λ) Vᵀ of a symmetric positive semi-definite Gram matrix.

    ``cutoff`` = n·ε·λ_max: eigenvalues at or below it are the numerical null space (module docstring).
    ``lambda_min`` (λ_P or λ_Q of TDR §6.1, clipped at 0) is what the paper's width and κ conditions
    depend on; ``condition_number`` is λ_max/λ_min (inf when λ_min ≤ cutoff).
    """

    eigenvalues: object
    eigenvectors: object
    cutoff: float

    @property
    def lambda_min(self) -> float:
        return max(float(self.eigenvalues[0]), 0.0)

    @property
    def condition_number(self) -> float:
        lam_max = float(self.eigenvalues[-1])
        return math.inf if self.lambda_min <= self.cutoff else lam_max / self.lambda_min

    def _split(self, v):
        coefficients = self.eigenvectors.T @ v
        kept = self.eigenvalues > self.cutoff
        null = coefficients[~kept]
        null_norm = float((null**2).sum()) ** 0.5 if null.size else 0.0
        total = float((v**2).sum()) ** 0.5
        return coefficients, kept, null_norm > math.sqrt(np.finfo(self.eigenvalues.dtype).eps) * total

    def quadratic_form(self, v) -> float:
        """vᵀH⁻¹v; ``+inf`` when v has a component in the numerical null space (module docstring)."""
        coefficients, kept, outside = self._split(v)
        if outside:
            return math.inf
        return float((coefficients[kept] ** 2 / self.eigenvalues[kept]).sum())

    def solve(self, b, name="b"):
        """H⁻¹b (the pseudo-inverse solution); ValueError naming ``name`` when b leaves the range of H."""
        coefficients, kept, outside = self._split(b)
        if outside:
            raise ValueError(f"{name} has a component in the null space of a singular Gram matrix "
                             f"(λ_min = {self.lambda_min:.3g} <= cutoff {self.cutoff:.3g}: duplicated inputs with "
                             "different labels), so no interpolant exists")
        xp = get_backend(self.eigenvectors)
        scaled = xp.where(kept, coefficients / xp.where(kept, self.eigenvalues, 1.0), 0.0)
        return self.eigenvectors @ scaled


def _decompose(gram) -> GramSolve:
    eigenvalues, eigenvectors = stacked_eigh(gram)
    cutoff = gram.shape[0] * np.finfo(gram.dtype).eps * max(float(eigenvalues[-1]), 0.0)
    return GramSolve(eigenvalues, eigenvectors, cutoff)


def gram_solve(X) -> GramSolve:
    """The :class:`GramSolve` of H∞(X) (validated inputs); its ``lambda_min`` is TDR's λ_P or λ_Q."""
    return _decompose(two_layer_gram(X))


# --------------------------------------------------------------------------- TDR §6 quantities


def _pair(X_P, y_P, X_Q, y_Q=None):
    X_P, X_Q = _inputs(X_P, "X_P"), _inputs(X_Q, "X_Q")
    _same_dimension(X_P, X_Q, "X_P", "X_Q")
    y_P = _labels(y_P, X_P.shape[0], "y_P", "X_P")
    y_Q = None if y_Q is None else _labels(y_Q, X_Q.shape[0], "y_Q", "X_Q")
    return X_P, y_P, X_Q, y_Q


def _transformed(X_P, y_P, X_Q, solve_P):
    return _gram_unchecked(X_P, X_Q).T @ solve_P.solve(y_P, "y_P")


def transformed_labels(X_P, y_P, X_Q):
    r"""y_{P→Q} = H_PQᵀ H_P⁻¹ y_P (TDR §6.1): the pretrained labeling function read on the target inputs.

    In the linearized (m → ∞, κ → 0) network these are the pretrained network's predictions
    u_Q(P) on X_Q (TDR App. C.1; docs/tdr.md). Returns an array (n_Q,).
    """
    X_P, y_P, X_Q, _ = _pair(X_P, y_P, X_Q)
    return _transformed(X_P, y_P, X_Q, _decompose(_gram_unchecked(X_P, X_P)))


def finetune_distance_bound(X_P, y_P, X_Q, y_Q) -> float:
    r"""√((y_Q − y_{P→Q})ᵀ H_Q⁻¹ (y_Q − y_{P→Q})): the leading term of ‖W(Q) − W(P)‖_F (TDR Thm 2, Eq. 2).

    ``+inf`` when H_Q is singular and the residual leaves its range (module docstring).
    """
    return transfer_summary(X_P, y_P, X_Q, y_Q).finetune_distance


def scratch_distance(X_Q, y_Q) -> float:
    r"""√(y_Qᵀ H_Q⁻¹ y_Q): the limit of ‖W(Q) − W(0)‖_F when training on Q from scratch.

    Arora et al. (2019); TDR §6.3 prints y_Qᵀ H_Q⁻¹ y_Q without the square root, which is wrong
    (it scales quadratically in the labels; the weight change scales linearly — docs/tdr.md).
    """
    X_Q = _inputs(X_Q, "X_Q")
    y_Q = _labels(y_Q, X_Q.shape[0], "y_Q", "X_Q")
    return math.sqrt(_decompose(_gram_unchecked(X_Q, X_Q)).quadratic_form(y_Q))


@dataclass(frozen=True)
class GradientNormChange:
    r"""The leading terms of TDR Thm 1 (Eq. 1), X¹ = σ(WᵀX_Q) the hidden activations on the target set.

    ``at_init`` = ‖∂L(W(0))/∂X¹‖² → ‖y_Q‖² (u_Q(0) = O(κ) → 0); ``change`` = −y_Qᵀy_Q +
    ‖y_Q − y_{P→Q}‖², the terms Eq. 1 adds; ``fine_tuned`` = at_init + change = ‖y_Q − y_{P→Q}‖²,
    the leading value of ‖∂L(W(P))/∂X¹‖². (‖∂L/∂X¹‖²_F = ‖u − y‖² exactly, since aᵀa = m.)
    """

    at_init: float
    fine_tuned: float
    change: float


def gradient_norm_change(X_P, y_P, X_Q, y_Q) -> GradientNormChange:
    """TDR Thm 1's leading terms (see :class:`GradientNormChange`)."""
    return transfer_summary(X_P, y_P, X_Q, y_Q).gradient


@dataclass(frozen=True)
class TransferSummary:
    """Every TDR §6 quantity of one (P, Q) pair, with the conditioning of both Gram matrices.

    ``transformed_labels``: y_{P→Q} (array of the inputs' module); ``finetune_distance``: TDR Thm 2's
    leading term; ``scratch_distance``: √(y_QᵀH_Q⁻¹y_Q); ``gradient``: TDR Thm 1's leading terms;
    ``lambda_P``, ``lambda_Q``: λ_min(H_P), λ_min(H_Q) (TDR §6.1's λ_P, λ_Q).
    """

    transformed_labels: object
    finetune_distance: float
    scratch_distance: float
    gradient: GradientNormChange
    lambda_P: float
    lambda_Q: float


def transfer_summary(X_P, y_P, X_Q, y_Q) -> TransferSummary:
    """All TDR §6 quantities of the pair (X_P, y_P) → (X_Q, y_Q) (one Gram decomposition per set)."""
    X_P, y_P, X_Q, y_Q = _pair(X_P, y_P, X_Q, y_Q)
    solve_P = _decompose(_gram_unchecked(X_P, X_P))
    solve_Q = _decompose(_gram_unchecked(X_Q, X_Q))
    y_PQ = _transformed(X_P, y_P, X_Q, solve_P)
    residual = y_Q - y_PQ
    at_init = float((y_Q**2).sum())
    fine_tuned = float((residual**2).sum())
    return TransferSummary(
        transformed_labels=y_PQ,
        finetune_distance=math.sqrt(solve_Q.quadratic_form(residual)),
        scratch_distance=math.sqrt(solve_Q.quadratic_form(y_Q)),
        gradient=GradientNormChange(at_init=at_init, fine_tuned=fine_tuned, change=fine_tuned - at_init),
        lambda_P=solve_P.lambda_min,
        lambda_Q=solve_Q.lambda_min,
    )
