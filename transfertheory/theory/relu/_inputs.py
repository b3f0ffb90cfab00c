"""Validation of the weight arrays of a two-layer ReLU network (hidden rows W, output weights c).

Arrays stay on their device: the array module is the one owning the inputs
(:func:`transfertheory.backend.get_backend`); only the scalar results of the
checks (finite? nonzero rows?) travel to the host. Integer input becomes float64;
a floating dtype is kept.
"""
from __future__ import annotations

import numpy as np

from ..._validation import finite_real_array

__all__ = ["weights", "output_weights", "nonzero_rows"]


def weights(W, name, xp):
    """Hidden weights of shape (..., m, d), m, d >= 1: rows are the neurons' weight vectors."""
    arr = finite_real_array(W, name, "(..., m, d)", xp)
    if arr.ndim < 2 or arr.shape[-1] < 1 or arr.shape[-2] < 1:
        raise ValueError(f"{name} must have shape (..., m, d) with m, d >= 1, got shape {arr.shape}")
    return arr


def output_weights(c, W, name, w_name, xp):
    """Output weights of shape (..., m) matching hidden weights ``W`` of shape (..., m, d)."""
    arr = finite_real_array(c, name, "(..., m)", xp)
    if arr.ndim < 1 or arr.shape[-1] != W.shape[-2]:
        raise ValueError(f"{name} must have shape (..., m) with m = {W.shape[-2]} (the rows of {w_name}), "
                         f"got shape {arr.shape}")
    try:
        np.broadcast_shapes(arr.shape[:-1], W.shape[:-2])
    except ValueError:
        raise ValueError(f"the leading (batch) axes of {name} {arr.shape[:-1]} and {w_name} {W.shape[:-2]} "
                         "do not broadcast") from None
    return arr


def nonzero_rows(W, name, xp):
    """Raise ValueError when a row of ``W`` is zero (where σ(wᵀx) has no gradient in w)."""
    norms = xp.linalg.norm(W, axis=-1)
    if bool((norms == 0).any()):
        raise ValueError(f"every row of {name} must be nonzero (the gradient of E[σ(wᵀx)·] in w is undefined "
                         "at w = 0)")
