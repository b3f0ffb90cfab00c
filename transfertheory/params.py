r"""One source of valid parameter ranges, shared by the closed forms, the simulators and the CLIs.

Each model parameter is a :class:`Param`: a name, an :class:`~transfertheory._validation.Interval`
and whether it is an integer. The same record validates

* arrays passed to a closed form or a simulator (:meth:`Param.check`, :meth:`Param.scalar`):
  a :class:`ValueError` that names the parameter and its range, e.g.
  ``gamma must be in (0, inf), got -1``;
* command-line flags (:meth:`Param.arg_type` as argparse's ``type=``): an
  :class:`argparse.ArgumentTypeError`, so that argparse prints
  ``argument --noise: must be in [0, inf), got -1`` and exits with status 2.

Booleans, strings, ``None`` and NaN are rejected wherever a number is expected.
A narrower range for one use (θ ∈ [0, π/2] on a phase diagram) is
:meth:`Param.with_range`.

The model (FaF §3): x ~ N(0, I_d), unit source and target vectors at angle θ,
labels y = β_tᵀx + ε with ε ~ N(0, σ²), n = γd target samples, an L-layer
linear network initialized at scale α; a transfer head may carry a ridge
penalty λ (FaF Eq. 14).
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass, replace

import numpy as np

from ._validation import Interval, as_real_array

__all__ = [
    "Param",
    "refuse_repeats",
    "Interval",
    "GAMMA",
    "THETA",
    "SIGMA",
    "LAM",
    "ALPHA",
    "N",
    "D",
    "DEPTH",
    "DRAWS",
    "RESOLUTION",
    "GAMMA_MAX",
    "SEED",
    "WIDTH",
    "COUNT",
    "GTOL",
    "LOSS_TOL",
    "PROFILE_NAMES",
]


def refuse_repeats(values, name: str) -> None:
    """ValueError naming ``name`` and the value when ``values`` (a grid or a list of names: one table row per
    value) gives one value twice: its rows would repeat a key."""
    seen = set()
    for v in values:
        if v in seen:
            raise ValueError(f"{name} must not repeat a value (one row per value), got {v!r} twice in "
                             f"{list(values)!r}")
        seen.add(v)


@dataclass(frozen=True)
class Param:
    """A named parameter with its valid range (see the module docstring).

    ``interval`` is the set of valid values; for an integer parameter its ends
    are the smallest and largest valid integers (closed), ``inf`` for none.
    """

    name: str
    interval: Interval
    integer: bool = False
    description: str = ""

    def __post_init__(self):
        if self.integer and not (self.interval.left_closed or self.interval.low == -np.inf):
            raise ValueError(f"integer parameter {self.name!r} needs a closed lower end, got {self.interval}")

    # ------------------------------------------------------------------ validation

    def range_text(self) -> str:
        """The valid range in words: ``in (0, inf)``, ``an integer >= 1``, ``an integer in [2, 4000]``."""
        if not self.integer:
            return f"in {self.interval}"
        if self.interval.high == np.inf:
            return f"an integer >= {self.interval.low:g}"
        return f"an integer in {self.interval}"

    def _fail(self, name, bad):
        integral = self.integer and np.isfinite(bad) and bad == round(bad)
        return f"{name} must be {self.range_text()}, got {int(bad) if integral else format(bad, 'g')}"

    def check(self, value, name=None) -> np.ndarray:
        """``value`` as a float array, every element in range (integral for an integer parameter).

        Raises
        ------
        ValueError
            Naming ``name`` (default: :attr:`name`) and the range, for booleans,
            strings, ``None``, NaN, non-integers where an integer is needed, and
            values out of range.
        """
        name = self.name if name is None else name
        arr = as_real_array(value, name, self.integer)
        if self.integer:
            bad = ~np.isfinite(arr) | (arr != np.round(np.where(np.isfinite(arr), arr, 0.0)))
            if bad.any():
                raise ValueError(self._fail(name, arr[bad].flat[0]))
        bad = ~self.interval.contains(arr)
        if bad.any():
            raise ValueError(self._fail(name, arr[bad].flat[0]))
        return arr

    def scalar(self, value, name=None):
        """:meth:`check` a single value; returns a Python ``int`` (integer parameter) or ``float``."""
        name = self.name if name is None else name
        arr = self.check(value, name)
        if arr.ndim != 0:
            raise ValueError(f"{name} must be a single number, got an array of shape {arr.shape}")
        if self.integer:
            # an int beyond 2**53 is range-checked as a float but returned exactly
            return int(value) if isinstance(value, (int, np.integer)) else int(arr)
        return float(arr)

    def sequence(self, value, name=None, distinct=False) -> np.ndarray:
        """:meth:`check` a non-empty 1-D sequence (a scalar is a sequence of one); returns a float array.

        For the grids and lists of a simulation (``gammas``, ``widths``, ``ns`` …): an empty or nested
        sequence is a ValueError naming ``name`` before any work; so is, with ``distinct`` (a grid, one row per
        value), a value given twice (:func:`refuse_repeats`).
        """
        name = self.name if name is None else name
        arr = np.atleast_1d(self.check(value, name))
        if arr.size == 0 or arr.ndim != 1:
            raise ValueError(f"{name} must be a non-empty sequence of numbers, each {self.range_text()}, "
                             f"got {value!r}")
        if distinct:
            refuse_repeats(arr.astype(int).tolist() if self.integer else arr.tolist(), name)
        return arr

    def arg_type(self):
        """A callable for argparse's ``type=``: parses the flag's text and validates it.

        Raises :class:`argparse.ArgumentTypeError` with text such as
        ``must be in (0, inf), got -1`` (argparse prefixes the flag and exits 2).
        """

        def parse(text):
            try:
                value = int(text) if self.integer else float(text)
            except ValueError:
                kind = "an integer" if self.integer else "a real number"
                raise argparse.ArgumentTypeError(f"must be {kind}, got {text!r}") from None
            try:
                return self.scalar(value)
            except ValueError as err:
                raise argparse.ArgumentTypeError(str(err).removeprefix(f"{self.name} ")) from None

        parse.__name__ = self.name
        return parse

    def with_range(self, low=None, high=None, closed=None) -> "Param":
        """A copy on a narrower range, e.g. ``THETA.with_range(high=np.pi / 2)`` for θ ∈ [0, π/2].

        Unspecified ends and ``closed`` are kept. Raises ValueError if the new
        range is not inside the old one.
        """
        old = self.interval
        new = Interval(old.low if low is None else low, old.high if high is None else high,
                       old.closed if closed is None else closed)
        if not new.issubset(old):
            raise ValueError(f"with_range must narrow {self.name}'s range {old}, got {new}")
        return replace(self, interval=new)


_REAL_POSITIVE = Interval(0, np.inf, "neither")
_REAL_NONNEG = Interval(0, np.inf, "left")


def _integer_at_least(low):
    return Interval(low, np.inf, "left")


GAMMA = Param("gamma", _REAL_POSITIVE, description="samples per dimension γ = n/d")
THETA = Param("theta", Interval(0, np.pi, "both"), description="angle θ between source and target vectors (radians)")
SIGMA = Param("sigma", _REAL_NONNEG, description="label-noise standard deviation σ")
LAM = Param("lam", _REAL_NONNEG, description="ridge strength λ of the transfer head (FaF Eq. 14)")
ALPHA = Param("alpha", _REAL_POSITIVE, description="initialization scale α of the deep linear network")
N = Param("n", _integer_at_least(1), integer=True, description="number of target samples")
D = Param("d", _integer_at_least(1), integer=True, description="input dimension")
DEPTH = Param("depth", _integer_at_least(2), integer=True, description="number of layers L of the linear network")
DRAWS = Param("draws", _integer_at_least(1), integer=True, description="Monte Carlo or simulation draws")
RESOLUTION = Param("resolution", Interval(2, 4000, "both"), integer=True,
                   description="grid points per axis (4000² points already take ~0.1 GB per array)")
GAMMA_MAX = Param("gamma_max", Interval(0, 100, "right"), description="largest γ of a grid")
SEED = Param("seed", _integer_at_least(0), integer=True, description="seed of the random generator")
WIDTH = Param("width", _integer_at_least(1), integer=True, description="hidden width of a network (neurons per layer)")
#: a count of things — worker processes, BLAS threads, grid points, simulated γ values: ``--workers``, ``--max-points``,
#: ``--sim-gammas`` (a message names the flag or, with ``scalar(value, name)``, the argument)
COUNT = Param("count", _integer_at_least(1), integer=True, description="a number of things, at least one")
GTOL = Param("gtol", _REAL_POSITIVE, description="convergence threshold on the gradient norm")
LOSS_TOL = Param("loss_tol", _REAL_NONNEG, description="stopping threshold on the loss")

#: the size profiles of both registries (claims: ``transfertheory.claims.profiles``; figures:
#: ``transfertheory.figures.registry``), smallest first: CPU seconds, CPU minutes, the papers' sizes
PROFILE_NAMES = ("quick", "full", "paper")
