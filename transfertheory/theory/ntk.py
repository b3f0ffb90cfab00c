r"""MTL §4 (App. B.4): exact infinite-width NNGP and NTK kernels of a deep fully connected ReLU network.

Model (MTL §4.3 "NTK and NNGP Kernels", App. A.3; the convention of Neural Tangents'
``stax.serial(*[Dense(w_std, b_std), Relu()] * depth, Dense(w_std, b_std))``): ``depth`` hidden ReLU layers
of width h → ∞ in the NTK parameterization, z¹ = (w_std/√d)W¹x + b_std·b¹,
z^{l+1} = (w_std/√h)W^{l+1}relu(z^l) + b_std·b^{l+1}, all weights and biases N(0, 1), one scalar output
f(x) = z^{depth+1}. He initialization is w_std = √2, b_std = 0. The MTL paper standardizes its inputs to
unit variance per coordinate (‖x‖² = d); this module takes the inputs as given.

The kernels are the pairwise recursion (Lee et al. 2019; Arora et al. 2019; docs/mtl.md)

    Σ⁰(x, x′) = w_std² xᵀx′/d + b_std²,                Θ⁰ = Σ⁰,
    cos ψ = Σ(x, x′)/√(Σ(x, x)Σ(x′, x′)),
    Σ⁺ = (w_std²/2π) √(Σ(x, x)Σ(x′, x′)) (sin ψ + (π − ψ) cos ψ) + b_std²,
    Σ̇⁺ = (w_std²/2π) (π − ψ),                          Θ⁺ = Σ⁺ + Θ·Σ̇⁺,

applied ``depth`` times; the NNGP kernel K = E[f(x)f(x′)] is the last Σ and the NTK
Θ = E[⟨∂f(x)/∂θ, ∂f(x′)/∂θ⟩] the last Θ (θ all weights and biases). With depth = 0 the network is
linear and K = Θ = Σ⁰. At depth 1 with b_std = 0 these are the arc-cosine kernels of degree 1 and 0
(Cho & Saul 2009): K = (w_std⁴/2πd)‖x‖‖x′‖(sin ψ + (π − ψ)cos ψ), ψ the angle between x and x′.

Numerics: the fast path clips cos ψ to [−1, 1] before the arccos, whose absolute error in ψ is ~√ε near
ψ = 0 and π. Pairs whose input angle is that close to 0 or π (|1 − |cos ψ₀|| ≤ 10⁻⁶: the diagonal, duplicated
or near-duplicated inputs, antipodal ones) are recomputed by an equivalent recursion on the non-negative gaps
g∓ = √(Σ(x,x)Σ(x′,x′)) ∓ Σ(x,x′), started from the inputs' unit-vector differences ‖x̂ ∓ x̂′‖² and free of
cancellation (:func:`_pairs_accurate`); other pairs keep |1 − cos ψ| ≥ 10⁻⁶ at every layer in practice
(deep correlations approach 1 only like 1/L²), where the arccos is accurate to ~10⁻¹³. A zero input has
zero covariance with everything (ψ is taken as 0; its Σ⁺ is b_std² whatever ψ is). Large Gram matrices are
computed in row blocks. The array module (NumPy or CuPy) is inferred from the inputs.
"""
from __future__ import annotations

import math

import numpy as np

from .._memory import FLOAT_BYTES, check_memory
from .._validation import Interval, finite_real_array
from ..backend import get_backend
from ..params import Param

__all__ = ["HIDDEN_DEPTH", "W_STD", "B_STD", "relu_kernels", "relu_kernels_at_depths", "relu_kernel_diagonal"]

HIDDEN_DEPTH = Param("depth", Interval(0, np.inf, "left"), integer=True,
                     description="number of hidden ReLU layers of the fully connected network")
W_STD = Param("w_std", Interval(0, np.inf, "neither"), description="weight standard deviation (NTK parameterization)")
B_STD = Param("b_std", Interval(0, np.inf, "left"), description="bias standard deviation")

#: |1 − |cos ψ₀|| below which an input pair goes through the accurate gap recursion (1 − cos ψ ≈ ψ²/2)
_NEAR_COLLINEAR = 1e-6
#: entries of one row block of the pairwise recursion (bounds its working memory to ~10 such arrays)
_BLOCK_ELEMENTS = 2**20


def _inputs(x, name, d=None):
    """``x`` as a finite real 2-D array (n, d) of its own array module; ValueError naming ``name`` otherwise."""
    xp = get_backend(x)
    arr = finite_real_array(x, name, "(n, d)", xp)
    if arr.ndim != 2 or arr.shape[0] < 1 or arr.shape[1] < 1:
        raise ValueError(f"{name} must have shape (n, d) with n, d >= 1, got shape {arr.shape}")
    if d is not None and arr.shape[1] != d:
        raise ValueError(f"{name} must have d = {d} columns like X, got shape {arr.shape}")
    return arr, xp


def _relu_step(xp, sigma, sigma_x, sigma_y, w_var, b_var):
    """One ReLU + Dense layer on the covariances, in place: Σ → Σ⁺; returns Σ̇⁺ and Σ⁺ of both diagonals."""
    root_x, root_y = xp.sqrt(sigma_x), xp.sqrt(sigma_y)
    inv_x, inv_y = (xp.where(root > 0, 1.0 / xp.where(root > 0, root, 1.0), 0.0) for root in (root_x, root_y))
    cos = sigma * inv_x[:, None]
    cos *= inv_y[None, :]
    zero = (root_x[:, None] == 0) | (root_y[None, :] == 0)
    if bool(zero.any()):
        cos[zero] = 1.0
    xp.clip(cos, -1.0, 1.0, out=cos)
    psi = xp.arccos(cos)
    scale = w_var / (2 * math.pi)
    dot = math.pi - psi  # (π − ψ), scaled below
    # Σ⁺ = scale·√(ΣₓΣᵧ)(sin ψ + (π − ψ)cos ψ) + b², sin ψ = √(1 − cos²ψ) for ψ ∈ [0, π]
    sigma[...] = cos
    sigma *= dot
    cos *= cos
    xp.subtract(1.0, cos, out=cos)
    xp.sqrt(cos, out=cos)
    sigma += cos
    sigma *= (scale * root_x)[:, None]
    sigma *= root_y[None, :]
    sigma += b_var
    dot *= scale
    return dot, w_var / 2 * sigma_x + b_var, w_var / 2 * sigma_y + b_var


def _kernels_block(xp, x, y, depths, w_var, b_var):
    """[(K, Θ) at each of the sorted distinct ``depths``] of a row block, from one recursion to the deepest."""
    d = x.shape[1]
    sigma = w_var * (x @ y.T) / d + b_var
    sigma_x = w_var * (x * x).sum(axis=1) / d + b_var
    sigma_y = w_var * (y * y).sum(axis=1) / d + b_var
    theta = sigma.copy()
    kernels = [(sigma.copy(), theta.copy())] if depths[0] == 0 < depths[-1] else []
    for layer in range(1, depths[-1] + 1):
        dot, sigma_x, sigma_y = _relu_step(xp, sigma, sigma_x, sigma_y, w_var, b_var)
        theta *= dot
        theta += sigma
        if layer in depths[:-1]:
            kernels.append((sigma.copy(), theta.copy()))  # the recursion goes on in place
    return kernels + [(sigma, theta)]


def _psi_minus_sin(xp, psi, sin):
    """ψ − sin ψ without cancellation: its Taylor series below ψ = 0.5 (error < 10⁻¹⁶ relative), else direct."""
    p2 = psi * psi
    series = psi * p2 / 6 * (1 - p2 / 20 * (1 - p2 / 42 * (1 - p2 / 72 * (1 - p2 / 110))))
    return xp.where(psi < 0.5, series, psi - sin)


def _bracket(xp, a, c, b_var):
    """√((a + β)(c + β)) − √(ac) − β = β(√a − √c)²/(√((a + β)(c + β)) + √(ac) + β) ≥ 0, elementwise."""
    sa, sc = xp.sqrt(a), xp.sqrt(c)
    denominator = xp.sqrt((a + b_var) * (c + b_var)) + sa * sc + b_var
    return b_var * (sa - sc) ** 2 / xp.where(denominator > 0, denominator, 1.0)


def _pairs_accurate(xp, x, y, depths, w_var, b_var):
    """[(K, Θ) at each of the sorted distinct ``depths`` ≥ 1] of the row pairs (x[k], y[k]), from one recursion on
    the gaps g∓ = √(Σ(x,x)Σ(y,y)) ∓ Σ(x,y) ≥ 0.

    With r = (g₋ + g₊)/2: ψ = 2·atan2(√g₋, √g₊), sin ψ = √(g₋g₊)/r, 1 − cos ψ = g₋/r, and per layer
    (s = w_std²/2π, β = b_std², J = sin ψ + (π − ψ)cos ψ, [·] = :func:`_bracket` of the new diagonals)
    Σ⁺ = s·r·J + β, g₋⁺ = [·] + s·r·((π − ψ)(1 − cos ψ) + ψ − sin ψ), g₊⁺ = [·] + 2β + s·r·(π + J):
    every term is non-negative, so ψ keeps full relative accuracy near 0 and π.
    """
    d = x.shape[1]
    nx, ny = xp.sqrt((x * x).sum(axis=1)), xp.sqrt((y * y).sum(axis=1))
    safe_x, safe_y = xp.where(nx > 0, nx, 1.0), xp.where(ny > 0, ny, 1.0)
    ux, uy = x / safe_x[:, None], y / safe_y[:, None]
    norms = nx * ny
    a, c = w_var * nx**2 / d, w_var * ny**2 / d
    bracket = _bracket(xp, a, c, b_var)
    minus = bracket + w_var / d * norms * ((ux - uy) ** 2).sum(axis=1) / 2
    plus = bracket + 2 * b_var + w_var / d * norms * ((ux + uy) ** 2).sum(axis=1) / 2
    sigma = w_var * (x * y).sum(axis=1) / d + b_var
    sigma_x, sigma_y = a + b_var, c + b_var
    theta = sigma
    scale = w_var / (2 * math.pi)
    kernels = []
    for layer in range(1, depths[-1] + 1):
        root_minus, root_plus = xp.sqrt(minus), xp.sqrt(plus)
        root = (minus + plus) / 2
        safe = xp.where(root > 0, root, 1.0)
        psi = 2 * xp.arctan2(root_minus, root_plus)
        sin = xp.where(root > 0, root_minus * root_plus / safe, 0.0)
        one_minus_cos = xp.where(root > 0, minus / safe, 0.0)
        j = sin + (math.pi - psi) * (1 - one_minus_cos)
        sigma = scale * root * j + b_var
        a, c = w_var / 2 * sigma_x, w_var / 2 * sigma_y
        bracket = _bracket(xp, a, c, b_var)
        minus = bracket + scale * root * ((math.pi - psi) * one_minus_cos + _psi_minus_sin(xp, psi, sin))
        plus = bracket + 2 * b_var + scale * root * (math.pi + j)
        sigma_x, sigma_y = a + b_var, c + b_var
        theta = sigma + theta * (scale * (math.pi - psi))
        if layer in depths:
            kernels.append((sigma, theta))  # every layer makes new arrays: no copy needed
    return kernels


def _refine_near_collinear(xp, x, y, kernels, depths, w_var, b_var):
    """Recompute in place, by :func:`_pairs_accurate`, the pairs whose input angle is within √(2·10⁻⁶) of 0 or π
    (where the arccos of the fast path loses digits) in every (K, Θ) of ``kernels`` at depth ≥ 1 (``depths`` sorted,
    distinct, aligned with ``kernels``): typically the diagonal and duplicated inputs."""
    deep = [(depth, pair) for depth, pair in zip(depths, kernels) if depth > 0]
    if not deep:
        return
    nx, ny = xp.sqrt((x * x).sum(axis=1)), xp.sqrt((y * y).sum(axis=1))
    near = xp.zeros(kernels[0][0].shape, dtype=bool)
    rows = max(1, _BLOCK_ELEMENTS // y.shape[0])
    for start in range(0, x.shape[0], rows):
        stop = min(x.shape[0], start + rows)
        norms = nx[start:stop, None] * ny[None, :]
        near[start:stop] = xp.abs(xp.abs(x[start:stop] @ y.T) - norms) <= _NEAR_COLLINEAR * norms
    i, j = xp.nonzero(near)
    if i.size:
        accurate = _pairs_accurate(xp, x[i], y[j], [depth for depth, _ in deep], w_var, b_var)
        for (_, (nngp, ntk)), (nngp_pairs, ntk_pairs) in zip(deep, accurate):
            nngp[i, j], ntk[i, j] = nngp_pairs, ntk_pairs


def _kernels_at_sorted_depths(x, y, xp, depths, w_var, b_var, what="relu_kernels", sizes=None):
    """[(K, Θ)] at each of the sorted distinct ``depths`` (validated inputs), one recursion per row block; ``what``
    and ``sizes``: the public function and the sizes of its arguments that the memory guard names besides X, Y."""
    dtype = xp.result_type(x.dtype, y.dtype)
    n, m = x.shape[0], y.shape[0]
    # the Grams of every depth, and the masks and refined entries of the near-collinear pass (two more n × m arrays)
    check_memory(FLOAT_BYTES * (2 * len(depths) + 2) * n * m, what=what,
                 params={"len(X)": n, "len(Y)": m, **(sizes or {})}, xp=xp)
    kernels = [(xp.empty((n, m), dtype=dtype), xp.empty((n, m), dtype=dtype)) for _ in depths]
    rows = max(1, _BLOCK_ELEMENTS // m)
    for start in range(0, n, rows):
        stop = min(n, start + rows)
        for (nngp, ntk), (nngp_block, ntk_block) in zip(kernels, _kernels_block(xp, x[start:stop], y, depths,
                                                                                 w_var, b_var)):
            nngp[start:stop], ntk[start:stop] = nngp_block, ntk_block
    _refine_near_collinear(xp, x, y, kernels, depths, w_var, b_var)
    return kernels


def _point_sets(X, Y):
    """(x, y, xp) of validated inputs; y is x when Y is None."""
    x, xp = _inputs(X, "X")
    y = x if Y is None else _inputs(Y, "Y", d=x.shape[1])[0]
    get_backend(x, y)  # X and Y of two array modules: a TypeError
    return x, y, xp


def relu_kernels(X, Y=None, depth=1, w_std=2**0.5, b_std=0.0):
    r"""NNGP K(X, Y) and NTK Θ(X, Y) of the deep ReLU network of the module docstring (MTL §4.3, App. B.4).

    Parameters
    ----------
    X : array (n, d)
        Inputs, real and finite, used as given (MTL standardizes to ‖x‖² = d).
    Y : array (m, d), optional
        Second set; omitted, the Gram matrices of ``X``.
    depth : int >= 0
        Hidden ReLU layers (``stax.serial(*[Dense, Relu()] * depth, Dense)``).
    w_std : float > 0
        Weight standard deviation (√2: He initialization).
    b_std : float >= 0
        Bias standard deviation.

    Returns
    -------
    (nngp, ntk) : two arrays (n, m) of the inputs' array module and floating dtype.
    """
    x, y, xp = _point_sets(X, Y)
    depth = HIDDEN_DEPTH.scalar(depth)
    w_var, b_var = W_STD.scalar(w_std) ** 2, B_STD.scalar(b_std) ** 2
    return _kernels_at_sorted_depths(x, y, xp, [depth], w_var, b_var)[0]


def relu_kernels_at_depths(X, Y=None, depths=(1,), w_std=2**0.5, b_std=0.0):
    r"""[(K, Θ)] at every depth of ``depths`` from one pass of the MTL §4.3 / App. B.4 recursion (module docstring).

    The recursion Σ → Σ⁺, Θ → Θ⁺ is the same at every layer, so the Grams at depths L₁ < L₂ < … are the
    intermediate states of one recursion to max Lₖ: max Lₖ layers instead of ΣLₖ. Each result is the same array,
    bit for bit, as ``relu_kernels(X, Y, depth=Lₖ, w_std=w_std, b_std=b_std)`` (the near-collinear pairs are
    recomputed at each depth by the same accurate recursion). Memory: two n × m arrays per depth.

    Parameters
    ----------
    X, Y, w_std, b_std
        As :func:`relu_kernels`.
    depths : non-empty sequence of distinct ints >= 0
        Hidden ReLU layers, in any order.

    Returns
    -------
    list of (nngp, ntk), one pair of (n, m) arrays per entry of ``depths``, in its order.
    """
    x, y, xp = _point_sets(X, Y)
    values = HIDDEN_DEPTH.sequence(depths, "depths")
    if len(set(values.tolist())) != values.size:
        raise ValueError(f"depths must be distinct, got {depths!r}")
    w_var, b_var = W_STD.scalar(w_std) ** 2, B_STD.scalar(b_std) ** 2
    ordered = sorted(int(v) for v in values)
    computed = _kernels_at_sorted_depths(x, y, xp, ordered, w_var, b_var, what="relu_kernels_at_depths",
                                         sizes={"len(depths)": len(ordered)})
    kernels = dict(zip(ordered, computed))
    return [kernels[int(v)] for v in values]


def relu_kernel_diagonal(X, depth=1, w_std=2**0.5, b_std=0.0):
    r"""(K(x, x), Θ(x, x)) for every row x of ``X`` without the Gram matrix: with ψ = 0 the recursion is
    Σ⁺ = (w_std²/2)Σ + b_std², Σ̇⁺ = w_std²/2 (module docstring). Arrays (n,)."""
    x, xp = _inputs(X, "X")
    depth = HIDDEN_DEPTH.scalar(depth)
    w_var, b_var = W_STD.scalar(w_std) ** 2, B_STD.scalar(b_std) ** 2
    sigma = w_var * (x * x).sum(axis=1) / x.shape[1] + b_var
    theta = sigma.copy()
    for _ in range(depth):
        sigma = w_var / 2 * sigma + b_var
        theta = sigma + theta * (w_var / 2)
    return sigma, theta
