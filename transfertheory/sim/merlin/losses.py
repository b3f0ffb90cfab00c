r"""Losses of the quadratic network on sampled target data, the ridge inner head and MeRLin's validation loss.

Network (MeRLin §5): f(x) = θᵀσ(φᵀx), σ(z) = z², θ ∈ ℝ^m, φ ∈ ℝ^{d×m}; loss (f − y)². With z = Xφ (n × m)
the feature matrix is H = z∘z and f = Hθ. Everything here is batched over a leading axis B (one row per
instance: seed, restart) and runs on the array module of its inputs.

* :func:`empirical_loss_and_grad` — L_D̂(θ, φ) = (1/n)‖Hθ − y‖², ∂/∂θ = (2/n)Hᵀr, ∂/∂φ = (4/n)Xᵀ(r θᵀ ∘ z).
* :func:`ridge_head` — the closed-form inner head θ̂(φ) = argmin_θ (1/n)‖Hθ − y‖² + λ_h‖θ‖²
  = (HᵀH + nλ_hI)⁻¹Hᵀy (MeRLin Eq. 7 / Algorithm 2, written with the loss's 1/n normalization: Eq. 7's λ
  is nλ_h).
* :class:`ValidationSplits` — MeRLin's outer target term (Eq. 2) averaged over S fixed train/validation splits,
  L_val(φ) = (1/S)Σ_s (1/n_v)‖H_v θ̂_s(φ) − y_v‖², and its gradient through the ridge solve (derived in
  docs/merlin.md): with r_v = H_vθ̂ − y_v, g = (2/n_v)H_vᵀr_v, u = M⁻¹g, M = H_trᵀH_tr + n_trλ_hI and
  r_tr = y_tr − H_trθ̂, ∂L/∂H_v = (2/n_v) r_v θ̂ᵀ, ∂L/∂H_tr = r_tr uᵀ − (H_tr u) θ̂ᵀ, and ∂L/∂φ = Xᵀ(2z ∘ ∂L/∂H)
  summed over both; evaluated as the training flows need it: each split as two 0/1 masks over the instance's
  target set (z = Xφ and h_ih_iᵀ once per instance, nothing gathered per split), masked sums in
  the (S, n, b) layout and a batched Cholesky solve of the m × m systems; instances of several n and S share a
  batch (docs/merlin.md, "Cost").
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from functools import cached_property, lru_cache

import numpy as np

from ...backend import get_backend, to_host

__all__ = ["features", "empirical_loss_and_grad", "ridge_head", "ValidationSplits", "split_orders",
           "seed_split_orders", "pad_orders"]


def features(X, phi):
    """(z, H) = (Xφ, (Xφ)∘(Xφ)) for X (..., n, d), φ (..., d, m)."""
    z = X @ phi
    return z, z * z


def empirical_loss_and_grad(theta, phi, X, y, samples=None):
    """(L, ∂L/∂θ, ∂L/∂φ) of L = (1/n)Σᵢ(θᵀ(φᵀxᵢ)² − yᵢ)²; θ (B, m), φ (B, d, m), X (B, n, d), y (B, n).

    ``samples`` (B,): each instance's n when its target set is padded with zero samples (x = 0, y = 0, which
    add nothing to the sum); default X.shape[-2].
    """
    n = X.shape[-2] if samples is None else samples
    scale = 2 / n if samples is None else (2 / n)[:, None]
    z, H = features(X, phi)
    r = (H @ theta[..., None])[..., 0] - y
    loss = (r * r).sum(axis=-1) / n
    grad_theta = scale * (H.swapaxes(-1, -2) @ r[..., None])[..., 0]
    grad_H = (scale * r)[..., :, None] * theta[..., None, :]
    grad_phi = X.swapaxes(-1, -2) @ (2 * z * grad_H)  # through H = (Xφ)²: Xᵀ(2z ∘ ∂L/∂H), (..., d, m)
    return loss, grad_theta, grad_phi


def ridge_head(H, y, ridge):
    """θ̂ = (HᵀH + nλ_hI)⁻¹Hᵀy for H (..., n, m), y (..., n): the minimizer of (1/n)‖Hθ − y‖² + λ_h‖θ‖²."""
    xp = get_backend(H, y)
    normal = H.swapaxes(-1, -2) @ H + H.shape[-2] * ridge * xp.eye(H.shape[-1], dtype=H.dtype)
    return xp.linalg.solve(normal, (H.swapaxes(-1, -2) @ y[..., None]))[..., 0]


def _sum_of_products(pairs):
    """Σ a·b over ``pairs`` (a, b) added left to right, or None when there are none (no addition of a zero)."""
    total = None
    for a, b in pairs:
        total = a * b if total is None else total + a * b
    return total


def _minus(value, total):
    """``value − total``, or ``value`` itself when ``total`` is None (an empty sum)."""
    return value if total is None else value - total


def _cholesky(normal):
    """Lower Cholesky factor of symmetric positive definite m × m matrices given as ``normal[i][j]`` (j ≤ i)
    arrays of one shape (one matrix per entry position); m Python-level steps, batched over the arrays."""
    m = len(normal)
    factor = [[None] * m for _ in range(m)]
    for j in range(m):
        factor[j][j] = _minus(normal[j][j], _sum_of_products((factor[j][p], factor[j][p]) for p in range(j))) ** 0.5
        for i in range(j + 1, m):
            factor[i][j] = _minus(normal[i][j], _sum_of_products((factor[i][p], factor[j][p]) for p in range(j))
                                  ) / factor[j][j]
    return factor


def _cholesky_solve(factor, rhs):
    """x with L Lᵀ x = rhs for the factor of :func:`_cholesky` and rhs a list of m arrays."""
    m = len(factor)
    w = []
    for i in range(m):
        w.append(_minus(rhs[i], _sum_of_products((factor[i][p], w[p]) for p in range(i))) / factor[i][i])
    x = [None] * m
    for i in reversed(range(m)):
        x[i] = _minus(w[i], _sum_of_products((factor[p][i], x[p]) for p in range(i + 1, m))) / factor[i][i]
    return x


@dataclass(frozen=True)
class ValidationSplits:
    """MeRLin's validation term for the training flows: S splits of each instance's target set as 0/1 masks.

    ``X`` (B, n, d), ``y`` (B, n): each instance's target set; ``orders`` (B, S, n): S permutations of its n
    samples, the first ⌊n/2⌋ of each the training half (:func:`split_orders`); an instance with fewer splits
    than S (instances of several split counts in one batch) has rows of −1 after its own (:func:`pad_orders`).
    ``samples`` (B,): each instance's own n_i ≤ n when target sets of several sizes share one batch, padded with
    zero samples placed by :func:`pad_orders`.

    Each split is two masks over the instance's n samples (training half T, validation half V), and every sum
    over a half is a product with them, batched over instances (docs/merlin.md, "Cost"). With the per-sample
    features h_i = (φᵀx_i)²:

    * forward: the masked moments Σ_i T_si (h_ih_iᵀ, y_ih_i) and Σ_i V_si (h_ih_iᵀ, y_ih_i) of every split are
      one product (2S, n) @ (n, m(m+1)/2 + m); the normal matrix M_s = Σ_{i∈tr} h_ih_iᵀ + n_trλ_hI is solved by
      a Cholesky factorization batched over (instance, split), and the validation loss of the split is
      θ̂ᵀQ_Vθ̂ − 2θ̂ᵀc_V + Σ_{i∈v} y_i² (Q_V, c_V the validation moments; its gradient in θ̂,
      g = (2/n_v)(Q_Vθ̂ − c_V), and u = M⁻¹g as in the module docstring);
    * backward: ∂L/∂h_i = A_ih_i − y_ic_i with A_i = Σ_s (2/n_v)V_si θ̂θ̂ᵀ − T_si(uθ̂ᵀ + θ̂uᵀ) and
      c_i = Σ_s (2/n_v)V_si θ̂ − T_si u — one product (n, 2S) @ (2S, m(m+1)/2 + m) — then ∂/∂φ = Xᵀ(2z ∘ ∂L/∂H).

    Padded samples and splits have zero masks and add nothing (an empty split's M is n_trλ_hI, its θ̂ and u zero);
    each instance averages over its own splits. Equal to a direct solve of each split up to rounding (the loss from
    moments: absolute error ~1e-16·Σ_{i∈v} y_i², tested).
    """

    X: object
    y: object
    orders: object
    ridge: float
    samples: object = None

    @cached_property
    def _layout(self):
        """Per instance (first axis) on the data's backend: the masks (B, 2S, n) (training halves, then validation
        halves), their transposes (B, n, 2S), y (B, n), Σ_{i∈v} y_i² per split (B, S), n_trλ_h, 1/n_v and 1/S_i (B,)."""
        xp = get_backend(self.X, self.y)
        orders = np.asarray(self.orders)
        B, S, n = orders.shape
        samples = np.full(B, n) if self.samples is None else np.asarray(self.samples)
        halves = []
        for slots in (orders[..., :n // 2], orders[..., n // 2:]):  # pad_orders keeps each half in its slots
            index = np.where((slots >= 0) & (slots < samples[:, None, None]), slots, n)  # n: padding, dropped
            mask = np.zeros((B, S, n + 1))
            np.put_along_axis(mask, index, 1.0, axis=-1)
            halves.append(mask[..., :n])
        masks = np.concatenate(halves, axis=1)
        y = np.asarray(to_host(self.y))
        n_train = samples // 2
        per_instance = (halves[1] @ (y * y)[..., None])[..., 0], self.ridge * n_train, 1 / (samples - n_train), \
            1 / (orders[..., 0] >= 0).sum(axis=1)
        dtype = self.X.dtype
        return (xp.asarray(masks, dtype=dtype), xp.asarray(np.ascontiguousarray(masks.transpose(0, 2, 1)), dtype=dtype),
                xp.asarray(self.y, dtype=dtype), *(xp.asarray(a, dtype=dtype) for a in per_instance))

    @cached_property
    def _gathered_cache(self) -> dict:
        """The last :data:`_GATHERED_ROWS` row sets' :meth:`_gathered` arrays, by the rows' bytes (insertion order)."""
        return {}

    def _gathered(self, rows):
        """What :meth:`loss_and_grad` needs of the instances ``rows`` besides φ (:meth:`_layout`'s arrays and X).
        It depends on the rows only, and the integrator asks for the same rows at many stages of a step, so the
        last few row sets are kept (the arrays are those computed afresh: the results do not change)."""
        host = rows if isinstance(rows, np.ndarray) else None
        key = None if host is None else (host.dtype.str, host.tobytes())
        cache = self._gathered_cache
        if key in cache:
            return cache[key]
        xp = get_backend(self.X, self.y)
        index = xp.asarray(rows)
        gathered = tuple(xp.take(a, index, axis=0) for a in self._layout + (self.X,))
        if key is not None:
            if len(cache) >= _GATHERED_ROWS:
                del cache[next(iter(cache))]
            cache[key] = gathered
        return gathered

    def loss_and_grad(self, phi, rows):
        """(L_val (b,), ∂L_val/∂φ (b, d, m)) of the instances ``rows`` (device or host index array) at φ (b, d, m).

        Component-major per instance (the m features, their m(m + 1)/2 products and the m right-hand sides along
        axis 1, samples or splits last), so each m × m entry is a (b, n) or (b, S) array."""
        xp = get_backend(phi)
        masks, masks_t, y, y_squares, shift, inv_val, inv_splits, X = self._gathered(rows)
        b, m, S = phi.shape[0], phi.shape[-1], y_squares.shape[1]
        pairs = _pairs(m)
        P = len(pairs)
        z = phi.swapaxes(-1, -2) @ X.swapaxes(-1, -2)  # (b, m, n)
        H = z * z
        features = xp.empty((b, P + m, H.shape[-1]), dtype=H.dtype)
        for k, (i, j) in enumerate(pairs):
            xp.multiply(H[:, i], H[:, j], out=features[:, k])
        xp.multiply(H, y[:, None], out=features[:, P:])
        moments = features @ masks_t  # (b, P + m, 2S): Σ_i T_si, then Σ_i V_si, of h_ih_jᵀ's entries and y_ih_i
        train, valid = moments[..., :S], moments[..., S:]
        normal = [[None] * m for _ in range(m)]
        entry = [[None] * m for _ in range(m)]  # the pair index of (i, j) and of (j, i)
        for k, (i, j) in enumerate(pairs):
            normal[i][j] = train[:, k] + shift[:, None] if i == j else train[:, k]
            entry[i][j] = entry[j][i] = k
        factor = _cholesky(normal)
        head = _cholesky_solve(factor, [train[:, P + p] for p in range(m)])  # θ̂: m arrays (b, S)
        fitted = [_sum_of_products((valid[:, entry[p][q]], head[q]) for q in range(m)) for p in range(m)]  # Q_Vθ̂
        loss = (_sum_of_products((head[p], fitted[p] - 2 * valid[:, P + p]) for p in range(m)) + y_squares).sum(
            axis=1) * inv_val * inv_splits
        scale = 2 * inv_val[:, None]
        u = _cholesky_solve(factor, [scale * (fitted[p] - valid[:, P + p]) for p in range(m)])  # M⁻¹g
        weights = xp.empty((b, P + m, 2 * S), dtype=H.dtype)
        for k, (i, j) in enumerate(pairs):
            xp.negative(u[i] * head[j] + head[i] * u[j], out=weights[:, k, :S])
            xp.multiply(scale, head[i] * head[j], out=weights[:, k, S:])
        for p in range(m):
            xp.negative(u[p], out=weights[:, P + p, :S])
            xp.multiply(scale, head[p], out=weights[:, P + p, S:])
        per_sample = weights @ masks  # (b, P + m, n): the entries of A_i, then c_i
        grad_H = xp.stack([_sum_of_products((per_sample[:, entry[p][q]], H[:, q]) for q in range(m))
                           - y * per_sample[:, P + p] for p in range(m)], axis=1)  # (b, m, n)
        grad_phi = ((2 * inv_splits[:, None, None]) * z * grad_H) @ X  # (b, m, d)
        return loss, grad_phi.swapaxes(-1, -2)


@lru_cache(maxsize=None)
def _pairs(m):
    """The m(m + 1)/2 index pairs (i, j), j ≤ i, of a symmetric m × m matrix's entries."""
    return tuple((i, j) for i in range(m) for j in range(i + 1))


#: row sets whose gathered arrays :class:`ValidationSplits` keeps: a step of the integrator evaluates the
#: gradient of its instances sorted by stage count, then of shrinking prefixes of them (one per distinct count)
_GATHERED_ROWS = 16


def pad_orders(orders, size, splits=None):
    """Orders (B, S, n) of n samples as orders of ``size`` ≥ n slots whose samples n, …, size − 1 are zero padding,
    and, with ``splits`` ≥ S, as ``splits`` orders, the last splits − S of them rows of −1 (no split).

    The training half (first ⌊n/2⌋) fills the first ⌊size/2⌋ slots, followed by padding; the validation half
    the remaining slots, followed by the rest of the padding.
    """
    B, S, n = orders.shape
    half, slots = n // 2, size // 2
    pad = np.broadcast_to(np.arange(n, size), (B, S, size - n))
    padded = np.concatenate([orders[..., :half], pad[..., :slots - half], orders[..., half:], pad[..., slots - half:]],
                            axis=-1)
    if splits is None or splits == S:
        return padded
    return np.concatenate([padded, np.full((B, splits - S, size), -1, dtype=padded.dtype)], axis=1)


def split_orders(batch, n, splits, rng):
    """(batch, S, n) random permutations of n samples (S per instance, drawn on the host from ``rng``)."""
    return np.argsort(rng.random((batch, splits, n)), axis=-1)


def seed_split_orders(seeds, n, splits, rng):
    """(seeds, S', n): the splits of each seed's target set that MeRLin's validation term averages over.

    When there are at most ``splits`` balanced splits (C(n, ⌊n/2⌋) ≤ S) all of them, S' = C(n, ⌊n/2⌋): the
    average is then the expectation over random splits of MeRLin Eq. 70, exactly. Otherwise S' = S random splits
    per seed (:func:`split_orders`), a Monte Carlo estimate of it. The caller shares them among a seed's restarts.
    """
    if math.comb(n, n // 2) <= splits:  # every split with n_tr = ⌊n/2⌋ once, training half first, in sample order
        every = [list(train) + [i for i in range(n) if i not in train]
                 for train in itertools.combinations(range(n), n // 2)]
        return np.broadcast_to(np.array(every), (seeds, len(every), n)).copy()
    return split_orders(seeds, n, splits, rng)
