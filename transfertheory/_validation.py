"""Input validation in the spirit of scikit-learn's ``check_*`` helpers.

Every public closed form validates its parameters here, so that bad input
raises a :class:`ValueError` that names the parameter and its valid range,
instead of silently returning NaN deep inside a formula.
"""
from __future__ import annotations

import numpy as np

__all__ = ["Interval", "check_param", "check_integer_param", "scalar_or_array"]


class Interval:
    """A real interval with open/closed ends, printable as e.g. ``(0, inf)``."""

    def __init__(self, low=-np.inf, high=np.inf, closed="both"):
        if closed not in ("both", "left", "right", "neither"):
            raise ValueError(f"closed must be 'both', 'left', 'right' or 'neither', got {closed!r}")
        self.low, self.high, self.closed = low, high, closed

    def contains(self, x: np.ndarray) -> np.ndarray:
        lo_ok = x >= self.low if self.closed in ("both", "left") else x > self.low
        hi_ok = x <= self.high if self.closed in ("both", "right") else x < self.high
        return lo_ok & hi_ok

    def __str__(self) -> str:
        def fmt(v):
            if v == np.pi:
                return "π"
            return "inf" if v == np.inf else "-inf" if v == -np.inf else f"{v:g}"

        left = "[" if self.closed in ("both", "left") else "("
        right = "]" if self.closed in ("both", "right") else ")"
        return f"{left}{fmt(self.low)}, {fmt(self.high)}{right}"


def check_param(value, name: str, interval: Interval | None = None) -> np.ndarray:
    """Convert ``value`` to a float array and check it lies in ``interval``.

    Raises
    ------
    ValueError
        If ``value`` is not numeric, contains NaN, or leaves ``interval``.
    """
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a real number or array of reals, got {value!r}") from None
    if np.isnan(arr).any():
        raise ValueError(f"{name} must not be NaN")
    if interval is not None:
        bad = ~interval.contains(arr)
        if bad.any():
            example = arr[bad].flat[0]
            raise ValueError(f"{name} must be in {interval}, got {example:g}")
    return arr


def check_integer_param(value, name: str, minimum: int) -> np.ndarray:
    """Like :func:`check_param` for integer-valued parameters (n, d) ≥ ``minimum``."""
    arr = check_param(value, name)
    if not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)):
        raise ValueError(f"{name} must be an integer (or array of integers), got {value!r}")
    if np.any(arr < minimum):
        raise ValueError(f"{name} must be an integer >= {minimum}, got {arr[arr < minimum].flat[0]:g}")
    return arr


def scalar_or_array(result: np.ndarray, *inputs):
    """Return a Python float when every input was a scalar, else the array."""
    if all(np.ndim(x) == 0 for x in inputs):
        return float(result)
    return result
