"""Input validation in the spirit of scikit-learn's ``check_*`` helpers.

Every public closed form and simulator validates its parameters here (usually
through the named ranges of :mod:`transfertheory.params`), so that bad input
raises a :class:`ValueError` that names the parameter and its valid range,
instead of silently returning NaN deep inside a formula.

Accepted values are real numbers and arrays of them (Python ``int``/``float``,
NumPy integer and floating scalars/arrays, nested lists). Rejected, with a
message naming the parameter: booleans (``True`` is not the number 1 here),
strings, ``None``, complex numbers, object arrays, and NaN.

Array parameters of one vectorized function must broadcast together
(:func:`check_broadcast`: the message names each parameter and its shape).
Random draws take an ``rng`` or a ``seed`` as :func:`numpy.random.default_rng`
does: an integer seed ≥ 0, a :class:`numpy.random.Generator` or a
:class:`numpy.random.SeedSequence` (:func:`as_generator`, :func:`root_seed`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Interval", "as_real_array", "finite_real_array", "check_broadcast", "as_generator",
           "root_seed", "scalar_or_array", "one_of"]

_CLOSED = ("both", "left", "right", "neither")


@dataclass(frozen=True)
class Interval:
    """A real interval with open/closed ends, printable as e.g. ``(0, inf)``.

    ``closed`` is ``"both"``, ``"left"``, ``"right"`` or ``"neither"``. An
    infinite end is never attained, whatever ``closed`` says of it: ``[0, inf)``
    and ``Interval(0, inf, "both")`` both exclude ``inf``.
    """

    low: float = -np.inf
    high: float = np.inf
    closed: str = "both"

    def __post_init__(self):
        if self.closed not in _CLOSED:
            raise ValueError(f"closed must be 'both', 'left', 'right' or 'neither', got {self.closed!r}")
        if not self.low <= self.high:
            raise ValueError(f"an interval needs low <= high, got low={self.low!r}, high={self.high!r}")

    @property
    def left_closed(self) -> bool:
        return self.closed in ("both", "left") and np.isfinite(self.low)

    @property
    def right_closed(self) -> bool:
        return self.closed in ("both", "right") and np.isfinite(self.high)

    def contains(self, x) -> np.ndarray:
        """Elementwise membership (NaN is in no interval)."""
        x = np.asarray(x, dtype=float)
        lo_ok = x >= self.low if self.left_closed else x > self.low
        hi_ok = x <= self.high if self.right_closed else x < self.high
        return lo_ok & hi_ok

    def issubset(self, other: "Interval") -> bool:
        """True when every point of this interval lies in ``other``."""
        lo_ok = self.low > other.low or (self.low == other.low and (other.left_closed or not self.left_closed))
        hi_ok = self.high < other.high or (self.high == other.high and (other.right_closed or not self.right_closed))
        return lo_ok and hi_ok

    def __str__(self) -> str:
        def fmt(v):  # (format "g" writes inf and -inf as such)
            return {np.pi: "π", np.pi / 2: "π/2"}.get(v, f"{v:g}")

        left = "[" if self.left_closed else "("
        right = "]" if self.right_closed else ")"
        return f"{left}{fmt(self.low)}, {fmt(self.high)}{right}"


def _holds_bool(value) -> bool:
    """True if a (nested) list or tuple holds a boolean, which NumPy would silently turn into 0.0 or 1.0."""
    if isinstance(value, (list, tuple)):
        return any(_holds_bool(v) for v in value)
    return isinstance(value, (bool, np.bool_))


def _array_or_none(value, xp=np):
    """``xp.asarray(value)``, or None for what makes no array (a ragged nested sequence)."""
    try:
        return xp.asarray(value)
    except (TypeError, ValueError):
        return None


def as_real_array(value, name: str, integer: bool = False) -> np.ndarray:
    """``value`` as a float array; ValueError naming ``name`` for non-numbers (bool, str, None, complex), NaN and
    integers from 2**64 on (whose message suggests a real number's notation unless ``integer``)."""
    arr = _array_or_none(value)
    if arr is not None and arr.dtype == object and any(type(v) is int for v in np.ravel(arr)):
        hint = "" if integer else " (a real number can be written 1e20)"
        raise ValueError(f"{name}: an integer must be below 2**64{hint}, got {value!r}")
    if arr is None or arr.dtype.kind not in "iuf" or _holds_bool(value):
        raise ValueError(f"{name} must be a real number or array of reals, got {value!r}")
    arr = arr.astype(float)
    if np.isnan(arr).any():
        raise ValueError(f"{name} must not be NaN, got {value!r}")
    return arr


def finite_real_array(value, name: str, shape: str, xp=np):
    """``value`` as an array of the array module ``xp`` (NumPy or CuPy; an integer array as float64, a floating
    dtype kept), every entry finite. A ValueError naming ``name`` and the expected ``shape`` (text, e.g. ``(n, d)``)
    for booleans, strings and objects; one naming ``name`` for NaN or inf. The checks run where the array lives:
    only their verdicts travel to the host."""
    arr = _array_or_none(value, xp)
    if arr is None or arr.dtype.kind not in "iuf":
        raise ValueError(f"{name} must be a real array of shape {shape}, got "
                         + (repr(value) if arr is None else f"dtype {arr.dtype}"))
    if arr.dtype.kind != "f":
        arr = arr.astype(np.float64)
    if not bool(xp.isfinite(arr).all()):
        raise ValueError(f"{name} must be finite (no NaN or inf)")
    return arr


def check_broadcast(**arrays) -> None:
    """Raise ValueError naming every parameter and its shape unless ``arrays`` (name → array) broadcast together.

    Called once at the top of a vectorized function on its raw arguments; a value without a shape (a ragged
    list) is left to the parameter's own check.
    """
    shapes = {}
    for name, value in arrays.items():
        try:
            shapes[name] = np.shape(value)
        except ValueError:
            continue
    try:
        np.broadcast_shapes(*shapes.values())
    except ValueError:
        listed = ", ".join(f"{name} {shape}" for name, shape in shapes.items() if shape)
        raise ValueError(f"{', '.join(shapes)} must broadcast together, got shapes {listed}") from None


_SEED_KINDS = "an integer >= 0, a numpy.random.Generator or a numpy.random.SeedSequence"


def _integer_seed(value, name: str) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < 0:
        raise ValueError(f"{name} must be {_SEED_KINDS}, got {value!r}")
    return int(value)


def as_generator(rng, name: str = "rng") -> np.random.Generator:
    """A :class:`numpy.random.Generator` from ``rng``, as :func:`numpy.random.default_rng` makes one.

    ``rng`` is an integer seed ≥ 0, a SeedSequence, or a Generator (returned as it is, so draws continue its
    stream). Anything else — ``None`` (unseeded: not reproducible), floats, booleans, strings — is a ValueError
    naming ``name``.
    """
    if isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, np.random.SeedSequence):
        return np.random.default_rng(rng)
    return np.random.default_rng(_integer_seed(rng, name))


def root_seed(seed, name: str = "seed") -> int:
    """The integer root of a keyed family of streams (``default_rng([seed, …])``) from ``seed``.

    An integer seed ≥ 0 is returned as it is; a SeedSequence gives an integer from its state, a Generator
    draws one (advancing it), so either can stand where NumPy accepts a seed. Anything else is a ValueError
    naming ``name``.
    """
    if isinstance(seed, np.random.SeedSequence):
        return int(seed.generate_state(1, np.uint64)[0])
    if isinstance(seed, np.random.Generator):
        return int(seed.integers(0, 2**63))
    return _integer_seed(seed, name)


def scalar_or_array(result: np.ndarray, *inputs):
    """Return a Python float when every input was a scalar, else the array."""
    if all(np.ndim(x) == 0 for x in inputs):
        return float(result)
    return result


def one_of(value, name: str, choices: tuple):
    """``value`` when it is one of ``choices``; else a ValueError "``name`` must be one of ``choices``, got …"."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}")
    return value
