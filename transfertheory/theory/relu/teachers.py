r"""Teacher networks of the ablated-transfer setup (FaF §4, Eqs. 19–20).

The target teacher f_t*(x) = (1/m*) Σ_{i≤m*} c*ᵢ σ(w*ᵢᵀx) (FaF Eq. 20) has hidden weights on the unit
sphere S^{d−1}. The source teacher drops a uniformly random subset A of |A| = μm* of its neurons:
f_s*(x) = (1/((1 − μ)m*)) Σ_{i∉A} c*ᵢ σ(w*ᵢᵀx) (FaF Eq. 19). μ ∈ [0, 1) is the fraction of target
features absent from the source ("excess target features").

When μm* is not an integer, |A| = round(μm*) and the source keeps the mean-field normalisation of
its own width, 1/(m* − |A|); this is FaF Eq. 19 whenever μm* is an integer.

FaF does not state the teacher's output weights. :func:`random_teacher` sets c*ᵢ = 1 by default
(hidden rows uniform on the sphere, as in FaF §4 and App. D.2): at the paper's size (d = m* = 100) this
gives ‖P⊥ f_t*‖²/‖f_t*‖² ≈ 0.005, 0.016, 0.05 at μ = 0.25, 0.5, 0.75 with P the projection on the source
teacher's features, the scale of FaF Fig. 4d (0–0.04), while c*ᵢ ~ N(0, 1) (``output="normal"``) gives
≈ 0.13, 0.28, 0.47 (docs/relu.md).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ... import params as P
from ...backend import get_backend, to_device
from ..._validation import Interval, as_generator, one_of
from .kernel import _output_weights, _weights

__all__ = ["MU", "M_STAR", "TEACHER_OUTPUTS", "AblatedTeacher", "ablated_teacher", "random_teacher", "dropped_count"]

#: fraction μ of the target teacher's neurons absent from the source teacher (FaF Eq. 19)
MU = P.Param("mu", Interval(0, 1, "left"), description="fraction μ of target-teacher neurons ablated from the source")
#: laws of the teacher's output weights offered by :func:`random_teacher` (c*ᵢ = 1, or N(0, 1) draws)
TEACHER_OUTPUTS = ("ones", "normal")
#: width m* of the target teacher (FaF Eq. 20)
M_STAR = P.Param("m_star", Interval(1, np.inf, "left"), integer=True, description="width m* of the target teacher")


def dropped_count(mu, m_star) -> int:
    """|A| = round(μ m*), the number of neurons the source teacher drops; ValueError unless 0 ≤ |A| ≤ m* − 1."""
    mu, m_star = MU.scalar(mu), M_STAR.scalar(m_star)
    dropped = int(round(mu * m_star))
    if dropped > m_star - 1:
        raise ValueError(f"mu must leave at least one of the m* = {m_star} teacher neurons (round(mu·m*) <= "
                         f"{m_star - 1}), got mu = {mu:g}")
    return dropped


@dataclass(frozen=True)
class AblatedTeacher:
    """The source teacher f_s*(x) = (1/m_s) Σᵢ cᵢ σ(wᵢᵀx) of FaF Eq. 19, with m_s = m* − |A| neurons."""

    W: Any  #: hidden weights of the kept neurons, shape (..., m_s, d)
    c: Any  #: their output weights c*ᵢ (unchanged), shape (..., m_s)
    kept: np.ndarray  #: indices i ∉ A of the kept neurons in the target teacher, increasing, shape (..., m_s)


def ablated_teacher(W_star, c_star, mu, rng) -> AblatedTeacher:
    r"""The source teacher of FaF Eq. 19: the target teacher (FaF Eq. 20) without a random subset A of its neurons.

    A is uniformly random of size round(μ m*), drawn independently for every instance of the batch.
    The kept neurons keep their weights; the mean-field factor becomes 1/(m* − |A|) (= 1/((1 − μ)m*)
    when μm* is an integer), which a network of m* − |A| neurons carries by itself.

    Parameters
    ----------
    W_star : array_like, shape (..., m*, d)
        Hidden weights of the target teacher.
    c_star : array_like, shape (..., m*)
        Its output weights (batch axes must equal those of ``W_star`` after broadcasting).
    mu : float in [0, 1)
        Fraction of neurons dropped; round(μm*) must leave at least one.
    rng : int seed >= 0, numpy.random.Generator or SeedSequence
        Source of the random subsets (drawn on the host).
    """
    xp = get_backend(W_star, c_star)
    W_star = _weights(W_star, "W_star", xp)
    c_star = _output_weights(c_star, W_star, "c_star", "W_star", xp)
    m_star = W_star.shape[-2]
    dropped = dropped_count(mu, m_star)
    batch = tuple(np.broadcast_shapes(W_star.shape[:-2], c_star.shape[:-1]))
    generator = as_generator(rng)
    ranks = np.argsort(generator.random(batch + (m_star,)), axis=-1)  # a uniform permutation per instance
    kept = np.sort(ranks[..., dropped:], axis=-1)
    index = to_device(kept, xp)
    W_b = xp.broadcast_to(W_star, batch + W_star.shape[-2:])
    c_b = xp.broadcast_to(c_star, batch + (m_star,))
    return AblatedTeacher(W=xp.take_along_axis(W_b, index[..., None], axis=-2),
                          c=xp.take_along_axis(c_b, index, axis=-1), kept=kept)


def random_teacher(m_star, d, rng, batch=(), output="ones"):
    r"""A target teacher of FaF Eq. 20: rows w*ᵢ uniform on S^{d−1}; output weights c*ᵢ = 1 or c*ᵢ ~ N(0, 1).

    Parameters
    ----------
    m_star, d : int >= 1
        Teacher width and input dimension.
    rng : int seed >= 0, numpy.random.Generator or SeedSequence
        Drawn on the host (:func:`transfertheory.backend.to_device` places the result on a device).
    batch : tuple of int
        Leading batch shape (independent teachers).
    output : {"ones", "normal"}
        c*ᵢ = 1 (default; see the module docstring) or independent N(0, 1).

    Returns
    -------
    (W_star, c_star) of shapes batch + (m*, d) and batch + (m*,), NumPy arrays
    """
    m_star, d = M_STAR.scalar(m_star), P.D.scalar(d)
    batch = tuple(P.N.scalar(b, "batch") for b in batch)
    one_of(output, "output", TEACHER_OUTPUTS)
    generator = as_generator(rng)
    W = generator.standard_normal(batch + (m_star, d))
    W /= np.linalg.norm(W, axis=-1, keepdims=True)
    c = generator.standard_normal(batch + (m_star,)) if output == "normal" else np.ones(batch + (m_star,))
    return W, c
