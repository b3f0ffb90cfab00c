r"""Input covariances and teachers for transfer with anisotropic inputs (docs/anisotropic.md).

Model: inputs x ~ N(0, Σ), Σ = diag(λ₁, …, λ_d) (diagonal without loss of generality: a rotation of the
inputs goes into the teachers, whose coefficients are then those in Σ's eigenbasis). Teachers are
normalised in the Σ-norm ‖β‖_Σ = √(βᵀΣβ), the standard deviation of the noiseless label βᵀx, so that σ
keeps its meaning of a noise-to-signal ratio; the transfer angle θ is the angle in the Σ inner product,
cos θ = ⟨β_s, β_t⟩_Σ = β_sᵀΣβ_t for unit-Σ-norm teachers. At Σ = I all of this is FaF §3's convention.

Spectra (:func:`spectrum`): ``isotropic`` (λ_k = 1); ``power:A`` (λ_k ∝ k^(−A), A ≥ 0); ``block:F:H``
(a two-block, "spiked" spectrum: the first round(F·d) eigenvalues H times the others, 0 < F < 1, H > 0);
or the eigenvalues themselves (a sequence, or their text ``1.5,1,0.5``). Families are normalised to
tr Σ = d (mean eigenvalue 1, as at Σ = I) and sorted in decreasing order; given eigenvalues are kept as
they are, in their order.

Teachers (:func:`teacher_pair`): the source β_s has the coefficient profile p of its family — ``flat``
(p_k = 1), ``power:B`` or ``power:B:top`` (p_k = k^(−B): weight on the top of the spectrum) or
``power:B:bottom`` (p_k = (d + 1 − k)^(−B): weight on the bottom) — or the given coefficients. The second
direction ν is the Σ-orthogonal part of the same profile with alternating signs, p_k·(−1)^(k+1), so the
target β_t(θ) = cos θ β_s + sin θ ν sits on the same part of the spectrum as the source. Both are unit in
the Σ-norm.

Every function validates its input before any work: a non-positive or non-finite eigenvalue, a spectrum of
the wrong length and a teacher of zero Σ-norm are ValueErrors naming the parameter.
"""
from __future__ import annotations

import numpy as np

from .. import params as P

__all__ = ["SPECTRUM_SYNTAX", "TEACHER_SYNTAX", "spectrum", "check_spectrum", "check_teacher", "sigma_norm",
           "teacher_profile", "teacher_pair", "task", "check_spectrum_text", "check_teacher_text"]

#: the text forms of a spectrum (docs/anisotropic.md)
SPECTRUM_SYNTAX = "isotropic | power:A (A >= 0) | block:F:H (0 < F < 1, H > 0) | eigenvalues such as 2,1,0.5"
#: the text forms of a teacher family
TEACHER_SYNTAX = "flat | power:B | power:B:top | power:B:bottom (B >= 0)"

_D = P.D.with_range(low=2)


def _number(text, what, name):
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{name}: {what} must be a number, got {text!r}") from None
    if not np.isfinite(value):
        raise ValueError(f"{name}: {what} must be finite, got {text!r}")
    return value


def _floats(value, name, what):
    """``value`` as a float array; a ValueError "``name`` must be ``what``" when it does not hold numbers."""
    try:
        return np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be {what}, got {value!r}") from None


def check_spectrum(values, d=None, name="spectrum") -> np.ndarray:
    """``values`` as a 1-D float array of positive, finite eigenvalues (of length ``d`` when given)."""
    arr = _floats(values, name, "a sequence of positive eigenvalues")
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D sequence of eigenvalues, got shape {arr.shape}")
    if d is not None and arr.size != d:
        raise ValueError(f"{name} must have d = {d} eigenvalues, got {arr.size}")
    bad = ~np.isfinite(arr) | (arr <= 0)
    if bad.any():
        raise ValueError(f"{name}: every eigenvalue must be positive and finite, got {arr[bad][0]:g} "
                         f"at index {int(np.flatnonzero(bad)[0])}")
    return arr


def _normalised(values):
    return values * (values.size / values.sum())


def spectrum(spec, d=None, name="spectrum") -> np.ndarray:
    """The eigenvalues of Σ from ``spec`` (:data:`SPECTRUM_SYNTAX`, or a sequence of eigenvalues).

    A family needs ``d`` (an integer ≥ 2); given eigenvalues must number ``d`` when ``d`` is given.
    """
    if not isinstance(spec, str):
        return check_spectrum(spec, d, name)
    text = spec.strip()
    head, *args = text.split(":")
    if head in ("isotropic", "power", "block"):
        if d is None:
            raise ValueError(f"{name}: the family {head!r} needs the dimension d")
        values = _family(head, args, _D.scalar(d), name)
        if values is None:
            raise ValueError(f"{name} must be {SPECTRUM_SYNTAX}, got {spec!r}")
        if not (values >= np.finfo(float).tiny).all():  # underflow to 0 or to subnormals, which lose their digits
            raise ValueError(f"{name}: {text} at d = {values.size} has eigenvalues below the smallest normal float "
                             f"(from index {int(np.argmin(values >= np.finfo(float).tiny))}); make it less extreme")
        return values
    parts = [p for p in text.split(",") if p.strip()]
    if len(parts) < 2:
        raise ValueError(f"{name} must be {SPECTRUM_SYNTAX}, got {spec!r}")
    return check_spectrum([_number(p, "an eigenvalue", name) for p in parts], d, name)


def _family(head, args, d, name):
    """The normalised eigenvalues of the family ``head`` with the parameters ``args`` at dimension d; None when the
    parameters do not fit the family's syntax."""
    k = np.arange(1, d + 1, dtype=float)
    if head == "isotropic" and not args:
        return np.ones(d)
    if head == "power" and len(args) == 1:
        a = _number(args[0], "the decay A of power:A", name)
        if a < 0:
            raise ValueError(f"{name}: the decay A of power:A must be >= 0, got {a:g}")
        return _normalised(k ** (-a))
    if head == "block" and len(args) == 2:
        f = _number(args[0], "the fraction F of block:F:H", name)
        h = _number(args[1], "the ratio H of block:F:H", name)
        if not 0 < f < 1 or h <= 0:
            raise ValueError(f"{name}: block:F:H needs 0 < F < 1 and H > 0, got F = {f:g}, H = {h:g}")
        top = min(max(int(round(f * d)), 1), d - 1)
        return _normalised(np.where(k <= top, h, 1.0))
    return None


def sigma_norm(beta, lam):
    """‖β‖_Σ = √(βᵀΣβ) over the last axis, Σ = diag(``lam``)."""
    beta = np.asarray(beta, float)
    return np.sqrt(np.sum(lam * beta * beta, axis=-1))


def check_teacher(beta, lam, name="beta") -> np.ndarray:
    """``beta`` (…, d) as a finite float array of non-zero Σ-norm, d = len(``lam``)."""
    arr = _floats(beta, name, "an array of teacher coefficients")
    if arr.ndim == 0 or arr.shape[-1] != lam.size:
        raise ValueError(f"{name} must have d = {lam.size} coefficients (last axis), got shape {arr.shape}")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} must be finite (no NaN or inf)")
    if np.any(sigma_norm(arr, lam) == 0):
        raise ValueError(f"{name} has zero Σ-norm (βᵀΣβ = 0): a teacher must carry signal")
    return arr


def teacher_profile(spec, d, name="teacher") -> np.ndarray:
    """The coefficient profile p (d,) of a teacher family (:data:`TEACHER_SYNTAX`), before normalisation."""
    d = _D.scalar(d)
    k = np.arange(1, d + 1, dtype=float)
    head, *args = str(spec).strip().split(":")
    if head == "flat" and not args:
        return np.ones(d)
    if head == "power" and len(args) in (1, 2) and (len(args) == 1 or args[1] in ("top", "bottom")):
        b = _number(args[0], "the exponent B of power:B", name)
        if b < 0:
            raise ValueError(f"{name}: the exponent B of power:B must be >= 0, got {b:g}")
        return (k if len(args) == 1 or args[1] == "top" else k[::-1]) ** (-b)
    raise ValueError(f"{name} must be {TEACHER_SYNTAX}, got {spec!r}")


def teacher_pair(spec, lam, thetas, name="teacher"):
    """(β_s (d,), ν (d,), β_t (Θ, d)) of a teacher family on the spectrum ``lam`` (module docstring).

    β_s is the profile normalised to ‖β_s‖_Σ = 1; ν is the Σ-orthogonal part of the profile with alternating
    signs, normalised; β_t(θ) = cos θ β_s + sin θ ν, so ⟨β_s, β_t⟩_Σ = cos θ and ‖β_t‖_Σ = 1. ``spec`` may also be
    the source's coefficients (a sequence of length d).
    """
    lam = check_spectrum(lam)
    t = P.THETA.sequence(thetas, "thetas")
    if isinstance(spec, str):
        p = teacher_profile(spec, lam.size, name)
    else:
        p = check_teacher(spec, lam, name)
        if p.ndim != 1:
            raise ValueError(f"{name} must be one vector of d = {lam.size} coefficients, got shape {p.shape}")
    beta_s = p / sigma_norm(p, lam)
    alt = beta_s * np.where(np.arange(lam.size) % 2 == 0, 1.0, -1.0)
    nu = alt - np.sum(lam * alt * beta_s) * beta_s
    size = sigma_norm(nu, lam)
    if size <= 1e-8 * sigma_norm(alt, lam):
        raise ValueError(f"{name}: the source has no Σ-orthogonal second direction of its profile (it lies on "
                         f"one eigenvector of Σ): choose another teacher family or a milder spectrum, or give the "
                         f"target explicitly")
    nu = nu / size
    return beta_s, nu, np.cos(t)[:, None] * beta_s + np.sin(t)[:, None] * nu


def task(spec, teacher, d, thetas):
    """(λ (d,), β_s (d,), β_t (Θ, d)): the eigenvalues of the spectrum ``spec`` at dimension d (:func:`spectrum`)
    and the teachers of the family ``teacher`` on it at the Σ-angles ``thetas`` (:func:`teacher_pair`)."""
    lam = spectrum(spec, d)
    beta_s, _, beta_t = teacher_pair(teacher, lam, thetas)
    return lam, beta_s, beta_t


def check_spectrum_text(text, name="spectrum"):
    """ValueError naming ``name`` unless ``text`` is a valid spectrum spec (:data:`SPECTRUM_SYNTAX`); a family's
    parameters are checked without its dimension, given eigenvalues in full. Returns ``text``."""
    head = str(text).strip().split(":")[0]
    spectrum(text, 2 if head in ("isotropic", "power", "block") else None, name)
    return text


def check_teacher_text(text, name="teacher"):
    """ValueError naming ``name`` unless ``text`` is a teacher family (:data:`TEACHER_SYNTAX`). Returns ``text``."""
    teacher_profile(text, 2, name)
    return text
