r"""MeRLin §5 and App. B: a two-layer quadratic network with one transferable and k − 1 source-specific features.

Model (MeRLin §5, "Models"): f_{θ,φ}(x) = θᵀσ(φᵀx), σ(z) = z² elementwise, φ = [φ₁ … φ_m] ∈ ℝ^{d×m},
θ ∈ ℝ^m, squared loss ℓ = (f − y)² (no ½). Then f(x) = xᵀAx with A = Σᵢ θᵢφᵢφᵢᵀ (MeRLin Eq. 8), so every
loss is a degree-4 polynomial of x.

Data (MeRLin §5, "Source/Target distribution"): the source law D_s (2 ≤ k ≤ d) is a mixture of two
components with independent coordinates: w.p. 1/3, y = 0 and x_i = 0 for i ≤ k; w.p. 2/3, y = 1 and
x_i ∈ {±1} uniform for i ≤ k; in both, x_i ∈ {−1, 0, 1} uniform for i > k. The target law D_t is the
k = 1 case (y = x₁²). Here ``k = 1`` always means the target law.

Exact population loss (docs/merlin.md, derivation): in a component c with coordinate second and fourth
moments s, q and constant label y_c, odd moments vanish and
E[(xᵀAx)²] = (tr SA)² + 2 tr(SASA) + Σ_a A_aa²(q_a − 3s_a²), S = diag(s), so
L(A) = Σ_c w_c [(tr S_cA − y_c)² + 2 tr(S_cAS_cA) + Σ_a A_aa²(q_ca − 3s_ca²)],
with gradient G = ∂L/∂A, ∂L/∂θᵢ = φᵢᵀGφᵢ, ∂L/∂φᵢ = 2θᵢGφᵢ.

Closed forms of the theorems:

* Lemma 4: the regularized source loss L_Ds + λ(‖θ‖² + ‖φ‖²_F) is minimized by 0 or by one neuron
  θᵢ = (μ*/2)^{1/3}, φᵢ = ±√2 θᵢ e_j (j ≤ k), μ* = argmin_μ (3λ/2^{2/3})|μ|^{2/3} + (2/3)(μ − 1)²
  (:func:`optimal_source_scale`, :func:`source_minimizer`); μ* > 0 iff λ < 2^{1/3}/3
  (:data:`SOURCE_SCALE_THRESHOLD`; the paper states the sufficient λ < 0.1).
* Theorem 1, fine-tuning (Eqs. 51–54): the head on a wrong feature e_j has target loss
  (2/3)γ² − (8/9)γ + 2/3 ≥ 10/27 (:func:`finetune_head_loss`), which happens w.p. 1 − 1/k
  (:func:`finetune_failure_probability`).
* Theorem 1, joint training (Lemma 1): :func:`joint_training_lower_bound`; with Lemma 2, the target loss every
  global minimizer must reach (:func:`joint_training_guaranteed_loss`).
* Theorem 2: a wrong feature fits n target samples exactly w.p. (5/9)ⁿ + (1/3)ⁿ − (1/9)ⁿ
  (:func:`wrong_feature_fit_probability`, which exceeds (2/3)ⁿ at n = 1 only: the paper bounds each of the two
  events it unites by (2/3)ⁿ, :func:`wrong_feature_fit_bound`, and their union over the k − 1 features by
  k(2/3)ⁿ, :func:`any_wrong_feature_fit_bound`, which holds for every n), and the sample size of the proof
  (:func:`merlin_sample_size`).

The population losses are vectorized over leading batch axes of (θ, φ) and run on the array module of
their inputs (NumPy or CuPy); scalar parameters are validated on the host.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from .. import params as P
from .._memory import FLOAT_BYTES, check_memory
from .._validation import Interval, as_generator
from ..backend import get_backend
from ._closed_form import closed_form

__all__ = [
    "Mixture", "mixture", "sample_source", "sample_target",
    "population_loss", "population_loss_and_grad", "PopulationLoss", "population_loss_terms", "source_loss",
    "target_loss", "regularized_source_loss",
    "scale_objective", "optimal_scale", "optimal_source_scale", "source_scale_objective", "source_minimizer",
    "SOURCE_SCALE_THRESHOLD", "SOURCE_SCALE_JUMP",
    "finetune_head_loss", "FINETUNE_HEAD_MIN", "FINETUNE_HEAD_ARGMIN", "finetune_failure_probability",
    "joint_training_lower_bound", "joint_training_construction", "joint_training_construction_value",
    "joint_training_guaranteed_loss",
    "wrong_feature_fit_probability", "wrong_feature_fit_bound", "any_wrong_feature_fit_probability",
    "any_wrong_feature_fit_bound", "merlin_sample_size",
    "LABEL_ZERO_PROBABILITY",
]

#: P(y = 0) under both laws: the component where the first k coordinates vanish
LABEL_ZERO_PROBABILITY = 1.0 / 3.0
#: Lemma 4: μ* > 0 iff λ < 2^{1/3}/3 ≈ 0.420 (derived in docs/merlin.md; the paper states λ < 0.1)
SOURCE_SCALE_THRESHOLD = 2.0 ** (1.0 / 3.0) / 3.0
#: μ* jumps from 0 to 1/2 at the threshold (the positive minimizer is ≥ 1/2 whenever it beats 0)
SOURCE_SCALE_JUMP = 0.5
#: Thm 1: min_γ (2/3)γ² − (8/9)γ + 2/3 and its argmin
FINETUNE_HEAD_MIN = 10.0 / 27.0
FINETUNE_HEAD_ARGMIN = 2.0 / 3.0

K_PARAM = P.Param("k", Interval(1, np.inf, "left"), integer=True,
                  description="number of label-carrying coordinates (k = 1: the target law)")
SOURCE_K = K_PARAM.with_range(low=2)
LAM_POS = P.Param("lam", Interval(0, np.inf, "neither"), description="ℓ₂ regularization strength λ")
ALPHA_JOINT = P.Param("alpha", Interval(0, 1, "both"), description="target weight α of joint training")
EPS = P.Param("eps", Interval(0, 2.0 / 3.0, "both"), description="target population loss ε (Lemma 1)")
XI = P.Param("xi", Interval(0, 1, "neither"), description="failure probability ξ of Theorem 2")
GAMMA_HEAD = P.Param("gamma", Interval(-np.inf, np.inf, "neither"), description="fine-tuned head γ")
COEF = P.Param("coefficient", Interval(0, np.inf, "left"), description="coefficient of a scale objective")
SOURCE_SCALE = P.Param("mu", Interval(-np.inf, np.inf, "neither"), description="scale μ = tr A of the source predictor")
FEATURE_NORM = P.Param("feature_norm", Interval(0, np.inf, "left"), description="‖φ̂_t‖ of Lemma 2")


# --------------------------------------------------------------------------- the data laws


@dataclass(frozen=True)
class Mixture:
    """The law with k label-carrying coordinates as a mixture of product laws (MeRLin §5).

    Component c has weight ``weights[c]``, label ``labels[c]`` and coordinate moments
    ``second[c, a]`` = E[x_a²], ``fourth[c, a]`` = E[x_a⁴]; odd moments vanish.
    """

    d: int
    k: int
    weights: tuple
    labels: tuple
    second: np.ndarray
    fourth: np.ndarray


def mixture(d, k) -> Mixture:
    """The mixture of :class:`Mixture` for dimension d and k label-carrying coordinates (k = 1: target)."""
    d = P.D.scalar(d)
    k = K_PARAM.scalar(k)
    if k > d:
        raise ValueError(f"k must be an integer in [1, d] = [1, {d}], got {k}")
    free = np.full(d - k, 2.0 / 3.0)  # x ∈ {−1, 0, 1} uniform: E x² = E x⁴ = 2/3
    off = np.concatenate([np.zeros(k), free])
    on = np.concatenate([np.ones(k), free])
    second = np.stack([off, on])
    return Mixture(d, k, (LABEL_ZERO_PROBABILITY, 1 - LABEL_ZERO_PROBABILITY), (0.0, 1.0), second, second.copy())


def _sample(n, d, k, rng, what):
    # the integer draw and its float copy
    check_memory(FLOAT_BYTES * 2 * n * d, what=what, params={"n": n, "d": d})
    gen = as_generator(rng)
    y = (gen.random(n) >= LABEL_ZERO_PROBABILITY).astype(float)
    x = gen.integers(-1, 2, size=(n, d)).astype(float)
    x[:, :k] = gen.choice([-1.0, 1.0], size=(n, k)) * y[:, None]
    return x, y


def sample_source(n, d, k, rng):
    """n draws (x of shape (n, d), y of shape (n,)) from the source law D_s, 2 ≤ k ≤ d (MeRLin §5), on the host
    (:func:`transfertheory.backend.to_device` moves them).

    ``rng``: an integer seed ≥ 0, a NumPy Generator or SeedSequence.
    """
    n, d, k = P.N.scalar(n), P.D.scalar(d), SOURCE_K.scalar(k)
    if k > d:
        raise ValueError(f"k must be an integer in [2, d] = [2, {d}], got {k}")
    return _sample(n, d, k, rng, "sample_source")


def sample_target(n, d, rng):
    """n draws (x, y) from the target law D_t: the source law with k = 1, y = x₁² (MeRLin §5)."""
    return _sample(P.N.scalar(n), P.D.scalar(d), 1, rng, "sample_target")


# --------------------------------------------------------------------------- population losses


def _check_network(theta, phi):
    xp = get_backend(theta, phi)
    theta, phi = xp.asarray(theta, dtype=float), xp.asarray(phi, dtype=float)
    if phi.ndim < 2 or theta.ndim < 1 or theta.shape[-1] != phi.shape[-1]:
        raise ValueError(f"theta must have shape (..., m) and phi shape (..., d, m) with the same m, got "
                         f"theta {theta.shape} and phi {phi.shape}")
    if not (bool(xp.isfinite(theta).all()) and bool(xp.isfinite(phi).all())):
        raise ValueError("theta and phi must be finite")
    return xp, theta, phi


@dataclass(frozen=True)
class PopulationLoss:
    """The exact population loss of one law as a validated-once callable (no input checks per call).

    Summing the moment formula over the C = 2 components c (weights w_c, labels y_c, moments s_c, q_c):
    L(A) = Σ_c w_c (tr S_cA − y_c)² + 2⟨P, A∘A⟩ + ⟨e, diag(A)²⟩ with P = Σ_c w_c s_c s_cᵀ and
    e = Σ_c w_c (q_c − 3s_c²), and G = ∂L/∂A = 4P∘A + diag(2Σ_c w_c (tr S_cA − y_c) s_c + 2e∘diag(A)).
    Built by :func:`population_loss_terms`; the simulators call :meth:`loss_and_grad` at every gradient
    evaluation, :func:`population_loss_and_grad` is the validating public entry.
    """

    d: int
    k: int
    weights: np.ndarray  # (C,)
    labels: np.ndarray  # (C,)
    second: np.ndarray  # (C, d): s_c
    pair: np.ndarray  # (d, d): Σ_c w_c s_c s_cᵀ
    excess: np.ndarray  # (d,): Σ_c w_c (q_c − 3 s_c²)
    _on_device: dict = field(default_factory=dict, compare=False, repr=False)

    def _constants(self, xp):
        """The constants as arrays of ``xp`` (converted once per array module)."""
        constants = self._on_device.get(xp.__name__)
        if constants is None:
            constants = self._on_device[xp.__name__] = tuple(
                xp.asarray(a) for a in (self.weights, self.labels, self.second.T, self.pair, self.excess))
        return constants

    def loss_and_grad(self, theta, phi, grad=True):
        """(L (B,), ∂L/∂θ (B, m), ∂L/∂φ (B, d, m)) for θ (B, m), φ (B, d, m) of one array module (unchecked)."""
        xp = get_backend(theta, phi)
        weights, labels, second_t, pair, excess = self._constants(xp)
        A = (phi * theta[..., None, :]) @ phi.swapaxes(-1, -2)
        diag = xp.diagonal(A, axis1=-2, axis2=-1)
        residual = diag @ second_t - labels  # (B, C): tr S_cA − y_c
        loss = ((residual * residual) @ weights + 2 * (pair * A * A).sum(axis=(-2, -1))
                + (diag * diag) @ excess)
        if not grad:
            return loss, None, None
        G = 4 * pair * A
        diagonal_part = 2 * ((residual * weights) @ second_t.T + excess * diag)
        G_phi = G @ phi + diagonal_part[..., :, None] * phi  # (G + diag(·))φ without forming diag(·)
        return loss, (phi * G_phi).sum(axis=-2), 2 * G_phi * theta[..., None, :]


@lru_cache(maxsize=128)
def population_loss_terms(d, k) -> PopulationLoss:
    """The :class:`PopulationLoss` of the law with k label-carrying coordinates in dimension d (k = 1: D_t)."""
    law = mixture(d, k)
    weights, second = np.asarray(law.weights), law.second
    return PopulationLoss(law.d, law.k, weights, np.asarray(law.labels), second,
                          np.einsum("c,ca,cb->ab", weights, second, second),
                          weights @ (law.fourth - 3 * second ** 2))


def population_loss(theta, phi, k):
    """Exact E[(θᵀ(φᵀx)² − y)²] under the law with k label-carrying coordinates (k = 1: D_t), no sampling.

    theta (..., m), phi (..., d, m) with common batch axes; returns shape (...) (a float for one network).
    """
    return population_loss_and_grad(theta, phi, k, grad=False)[0]


def population_loss_and_grad(theta, phi, k, grad=True):
    """(loss, ∂loss/∂θ, ∂loss/∂φ) of :func:`population_loss` (gradients None with ``grad=False``)."""
    xp, theta, phi = _check_network(theta, phi)
    d, batch = phi.shape[-2], math.prod(phi.shape[:-2])  # four (d, d) arrays per network: A, A∘A, P∘A∘A, G
    check_memory(FLOAT_BYTES * (4 * batch + 1) * d * d, what="population_loss", params={"batch": batch, "d": d}, xp=xp)
    loss, dtheta, dphi = population_loss_terms(phi.shape[-2], K_PARAM.scalar(k)).loss_and_grad(theta, phi, grad)
    if loss.ndim == 0:
        loss = float(loss)
    return loss, dtheta, dphi


def source_loss(theta, phi, k):
    """L_Ds(θ, φ): :func:`population_loss` under the source law, 2 ≤ k ≤ d."""
    SOURCE_K.scalar(k)
    return population_loss(theta, phi, k)


def target_loss(theta, phi):
    """L_Dt(θ, φ): :func:`population_loss` under the target law (k = 1)."""
    return population_loss(theta, phi, 1)


def regularized_source_loss(theta, phi, k, lam):
    """L^λ_Ds = L_Ds + λ(‖θ‖² + ‖φ‖²_F) (MeRLin §5, "Regularization"; Lemma 4)."""
    lam = LAM_POS.scalar(lam)
    xp, theta, phi = _check_network(theta, phi)
    value = source_loss(theta, phi, k) + lam * ((theta ** 2).sum(axis=-1) + (phi ** 2).sum(axis=(-2, -1)))
    return float(value) if np.ndim(value) == 0 else value


# --------------------------------------------------------------------------- Lemma 4 and Lemma 1: the scale problem


@closed_form(mu=SOURCE_SCALE, penalty=COEF, fit=COEF)
def scale_objective(mu, penalty, fit):
    """penalty·|μ|^{2/3} + fit·(μ − 1)²: Lemma 4 (penalty = 3λ/2^{2/3}, fit = 2/3) and Lemma 1."""
    return penalty * np.abs(mu) ** (2 / 3) + fit * (mu - 1) ** 2


def _largest_root(a):
    """Largest root t ∈ [4^{-1/3}, 1] of t⁴ − t + a = 0 for 0 ≤ a ≤ 3·4^{-4/3} (Newton from 1: convex, monotone)."""
    t = np.ones_like(a)
    for _ in range(200):
        step = (t ** 4 - t + a) / (4 * t ** 3 - 1)
        t = t - step
        if np.all(np.abs(step) <= 1e-15 * t):
            break
    return t


@closed_form(penalty=COEF, fit=COEF)
def optimal_scale(penalty, fit):
    """argmin_μ penalty·|μ|^{2/3} + fit·(μ − 1)² (both coefficients ≥ 0).

    A positive critical point has t = μ^{1/3} solving t⁴ − t + a = 0, a = penalty/(3·fit); its value is
    fit·(1 − t³(2t³ − 1)), below the value fit at μ = 0 iff μ > 1/2, i.e. iff a < 2^{-4/3}.
    Returns 0 for a > 2^{-4/3} (and fit = 0), the larger root otherwise (1/2 at the tie a = 2^{-4/3}).
    """
    penalty, fit = np.broadcast_arrays(penalty, fit)
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where(fit > 0, penalty / (3 * np.where(fit > 0, fit, 1.0)), np.inf)
    positive = a <= 2.0 ** (-4.0 / 3.0)
    t = _largest_root(np.where(positive, a, 0.0))
    return np.where(positive, t ** 3, 0.0)


@closed_form(mu=SOURCE_SCALE, lam=LAM_POS)
def source_scale_objective(mu, lam):
    """Lemma 4's L(μ) = (3λ/2^{2/3})|μ|^{2/3} + (2/3)(μ − 1)², the minimum of L^λ_Ds at scale tr A = μ."""
    return scale_objective(mu, 3 * lam / 2 ** (2 / 3), 2 / 3, validate=False)


@closed_form(lam=LAM_POS)
def optimal_source_scale(lam):
    """μ* of Lemma 4: 0 for λ > 2^{1/3}/3, the largest root ≥ 1/2 below (1/2 at the threshold)."""
    return np.asarray(optimal_scale(3 * lam / 2 ** (2 / 3), 2 / 3, validate=False))


def source_minimizer(lam, d, m, k, j, sign=1, neuron=0):
    """A minimizer (θ (m,), φ (d, m)) of L^λ_Ds from Lemma 4: neuron ``neuron`` carries
    θ = (μ*/2)^{1/3}, φ = sign·√2·θ·e_j (j is 1-based, 1 ≤ j ≤ k); all other neurons are 0."""
    mu = optimal_source_scale(lam)
    d, m, k, j = P.D.scalar(d), P.N.scalar(m, "m"), SOURCE_K.scalar(k), P.N.scalar(j, "j")
    if k > d:
        raise ValueError(f"k must be an integer in [2, d] = [2, {d}], got {k}")
    if j > k:
        raise ValueError(f"j must be an integer in [1, k] = [1, {k}], got {j}")
    if sign not in (1, -1):
        raise ValueError(f"sign must be 1 or -1, got {sign!r}")
    if not (isinstance(neuron, (int, np.integer)) and 0 <= neuron < m):
        raise ValueError(f"neuron must be an integer in [0, m) = [0, {m}), got {neuron!r}")
    theta, phi = np.zeros(m), np.zeros((d, m))
    theta[neuron] = (mu / 2) ** (1 / 3)
    phi[j - 1, neuron] = sign * math.sqrt(2) * theta[neuron]
    return theta, phi


@closed_form(lam=LAM_POS, alpha=ALPHA_JOINT, eps=EPS)
def joint_training_lower_bound(lam, alpha, eps):
    """Lemma 1: every (θ_s, θ_t, φ) with target population loss ≤ ε ≤ 2/3 has
    L^λ_joint ≥ min_μ[(3λ/2^{4/3})|μ|^{2/3} + (2/3)(1 − α)(μ − 1)²] + (3λ/2^{4/3})(1 − √(3ε/2))^{2/3}."""
    penalty, source_part = _joint_source_part(lam, alpha, 4 / 3)
    return source_part + penalty * np.abs(1 - np.sqrt(1.5 * eps)) ** (2 / 3)


def _joint_source_part(lam, alpha, power):
    """(P, S) of Lemmas 1 and 2: the penalty P = 3λ/2^power and S = min_μ P|μ|^{2/3} + (2/3)(1 − α)(μ − 1)²."""
    penalty, fit = 3 * lam / 2 ** power, 2 / 3 * (1 - alpha)
    return penalty, np.asarray(scale_objective(optimal_scale(penalty, fit), penalty, fit))


def joint_training_construction(lam, alpha, feature, m=2):
    """Lemma 2's joint-training solution (θ_s, θ_t, φ) for a target feature φ̂_t ∈ ℝ^d that fits the target
    samples (⟨φ̂_t, x_i⟩ = x_i1): neuron 1 carries the source, θ_s1 = (μ*/2)^{1/3}, φ₁ = (√2μ*)^{1/3}e₁,
    μ* = argmin (3λ/2^{2/3})|μ|^{2/3} + (2/3)(1 − α)(μ − 1)²; neuron 2 the target, φ₂ = 2^{1/6}φ̂_t/‖φ̂_t‖^{1/3},
    θ_t2 = ‖φ̂_t‖^{2/3}/2^{1/3}. Its empirical target loss is 0. φ̂_t = 0 (every sample has x₁ = 0, so every
    label is 0) leaves the target neuron at 0, the limit of the construction."""
    lam, alpha = LAM_POS.scalar(lam), ALPHA_JOINT.scalar(alpha)
    feature = np.asarray(feature, dtype=float)
    norm = float(np.linalg.norm(feature)) if feature.ndim == 1 else np.nan
    if not np.isfinite(norm):
        raise ValueError(f"feature must be a finite vector of shape (d,), got shape {feature.shape}")
    m = P.N.with_range(low=2).scalar(m, "m")
    mu = float(optimal_scale(3 * lam / 2 ** (2 / 3), 2 / 3 * (1 - alpha)))
    theta_s, theta_t, phi = np.zeros(m), np.zeros(m), np.zeros((feature.size, m))
    theta_s[0], phi[0, 0] = (mu / 2) ** (1 / 3), (math.sqrt(2) * mu) ** (1 / 3)
    if norm > 0:
        theta_t[1], phi[:, 1] = norm ** (2 / 3) / 2 ** (1 / 3), 2 ** (1 / 6) * feature / norm ** (1 / 3)
    return theta_s, theta_t, phi


@closed_form(lam=LAM_POS, alpha=ALPHA_JOINT, feature_norm=FEATURE_NORM)
def joint_training_construction_value(lam, alpha, feature_norm):
    """Lemma 2 (Eq. 26): L^λ_joint of :func:`joint_training_construction` =
    min_μ[(3λ/2^{2/3})|μ|^{2/3} + (2/3)(1 − α)(μ − 1)²] + (3λ/2^{2/3})‖φ̂_t‖^{4/3}."""
    penalty, source_part = _joint_source_part(lam, alpha, 2 / 3)
    return source_part + penalty * feature_norm ** (4 / 3)


@closed_form(lam=LAM_POS, alpha=ALPHA_JOINT, feature_norm=FEATURE_NORM)
def joint_training_guaranteed_loss(lam, alpha, feature_norm):
    """Theorem 1 (joint training) from Lemmas 1 and 2: the target population loss ε* that every global
    minimizer of L^λ_joint must reach when a feature φ̂_t of norm ``feature_norm`` fits the target samples.

    Lemma 2 gives a point of value C = :func:`joint_training_construction_value`; Lemma 1 says a point with target
    loss ≤ ε costs at least B(ε) = S + P(1 − √(3ε/2))^{2/3}, P = 3λ/2^{4/3}, decreasing in ε. So the minimizer's loss
    is ≥ ε* with B(ε*) = C: with r = (C − S)/P, ε* = (2/3)(1 − r^{3/2})² for 0 < r < 1, 0 for r ≥ 1 (no guarantee)
    and 2/3 for r ≤ 0 (every ε ≤ 2/3 is excluded).
    """
    penalty, source_part = _joint_source_part(lam, alpha, 4 / 3)
    ratio = (np.asarray(joint_training_construction_value(lam, alpha, feature_norm)) - source_part) / penalty
    return 2 / 3 * (1 - np.clip(ratio, 0.0, 1.0) ** 1.5) ** 2


# --------------------------------------------------------------------------- Theorem 1: fine-tuning


@closed_form(gamma=GAMMA_HEAD)
def finetune_head_loss(gamma):
    """Target loss of the head γ·x_j² on a wrong feature j ≠ 1: E[(γx_j² − x₁²)²] = (2/3)γ² − (8/9)γ + 2/3
    (MeRLin Eqs. 52–54; E x_j⁴ = 2/3, E x_j²x₁² = 4/9, E x₁⁴ = 2/3). Minimum 10/27 at γ = 2/3."""
    return 2 / 3 * gamma ** 2 - 8 / 9 * gamma + 2 / 3


@closed_form(k=SOURCE_K)
def finetune_failure_probability(k):
    """1 − 1/k: pre-training picks the feature e_j with j uniform on [k] (the source law is symmetric in
    x₁ … x_k), and every j ≠ 1 leaves target loss ≥ 10/27 (Theorem 1, fine-tuning)."""
    return 1 - 1 / k


# --------------------------------------------------------------------------- Theorem 2: MeRLin


@closed_form(n=P.N)
def wrong_feature_fit_probability(n):
    """P(some head γ fits γ·x_j² = x₁² on n target samples), j ≠ 1: (5/9)ⁿ + (1/3)ⁿ − (1/9)ⁿ.

    A fit with a sample x₁ ≠ 0 forces γ = 1 and x_j² = x₁² on every sample (per sample 1/9 + 4/9 = 5/9);
    with x₁ = 0 on every sample γ = 0 fits (1/3 per sample); both: x₁ = x_j = 0 throughout (1/9).
    """
    return (5 / 9) ** n + (1 / 3) ** n - (1 / 9) ** n


@closed_form(n=P.N)
def wrong_feature_fit_bound(n):
    """(2/3)ⁿ, the paper's bound on each event of its union bound (proof of Thm 2, App. B.2): x_j² = x₁² on every
    sample ((5/9)ⁿ), or x₁ = 0 on every sample ((1/3)ⁿ). One feature fits when either happens, so
    :func:`wrong_feature_fit_probability` (the union of two such events) exceeds it at n = 1 (7/9), not after."""
    return (2 / 3) ** n


def any_wrong_feature_fit_probability(n, k):
    """P(some wrong feature e_j, 2 ≤ j ≤ k, fits n target samples exactly): the event that MeRLin's validation
    loss cannot tell e_j from e₁ (proof of Thm 2). Given z samples with x₁ = 0: z = n lets every feature fit
    (γ = 0); otherwise the features fit independently, each w.p. (1/3)^z(2/3)^{n−z}:
    (1/3)ⁿ + Σ_{z<n} C(n, z)(1/3)^z(2/3)^{n−z}[1 − (1 − (1/3)^z(2/3)^{n−z})^{k−1}]."""
    n, k = P.N.scalar(n), SOURCE_K.scalar(k)
    z = np.arange(n)
    log_weight = (np.array([math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) for i in z])
                  + z * math.log(1 / 3) + (n - z) * math.log(2 / 3))
    fit_one = np.exp(z * math.log(1 / 3) + (n - z) * math.log(2 / 3))
    return float((1 / 3) ** n + np.sum(np.exp(log_weight) * -np.expm1((k - 1) * np.log1p(-fit_one))))


@closed_form(n=P.N, k=SOURCE_K)
def any_wrong_feature_fit_bound(n, k):
    """The paper's union bound k(2/3)ⁿ on :func:`any_wrong_feature_fit_probability` (proof of Thm 2)."""
    return k * (2 / 3) ** n


def merlin_sample_size(k, xi):
    """Smallest n_t with n_t ≥ 18 log(2/ξ) and n_t ≥ 3 log(2k/ξ) (proof of Thm 2: a Hoeffding bound
    exp(−n/18) ≤ ξ/2 on "half the samples have x₁ = 0", and k(2/3)ⁿ ≤ ξ/2 on a wrong feature fitting)."""
    k, xi = SOURCE_K.scalar(k), XI.scalar(xi)
    need = max(18 * math.log(2 / xi), 3 * math.log(2 * k / xi))
    return max(1, math.ceil(need))
