"""Array backend: the one module that knows about CuPy.

Every numerical routine in :mod:`transfertheory` is written once against an
*array module* ``xp`` (NumPy or CuPy) obtained from :func:`get_array_module`,
in the spirit of POT's backend layer. This module

* chooses the array module (``TRANSFERTHEORY_BACKEND=auto|numpy|cupy``;
  ``auto`` = CuPy when a usable CUDA device exists, else NumPy),
* moves arrays between host and device (:func:`to_host`, :func:`to_device`),
* creates seeded random generators (:func:`make_rng`) whose draws are made on
  the host with NumPy's PCG64 and then copied to the device, so that a seed
  defines the *same* experiment on every backend (CPU and GPU runs of one seed
  differ only by floating-point rounding).

No other module imports ``cupy``.
"""
from __future__ import annotations

import functools
import os
from types import ModuleType

import numpy as np

__all__ = [
    "BACKENDS",
    "BackendUnavailableError",
    "get_array_module",
    "array_module_of",
    "backend_name",
    "cupy_available",
    "to_host",
    "to_device",
    "make_rng",
    "SeededGenerator",
]

BACKENDS = ("auto", "numpy", "cupy")
ENV_VAR = "TRANSFERTHEORY_BACKEND"


class BackendUnavailableError(RuntimeError):
    """Raised when the CuPy backend is requested but no usable GPU exists."""


@functools.lru_cache(maxsize=1)
def _load_cupy() -> tuple[ModuleType | None, str]:
    """Import CuPy and check that a CUDA device can run a kernel.

    Returns ``(cupy or None, reason)``; the reason explains a failure.
    """
    try:
        import cupy  # noqa: PLC0415  (the only cupy import in the package)
    except Exception as exc:  # ImportError, or a broken CUDA install
        return None, f"CuPy is not importable ({type(exc).__name__}: {exc})"
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            return None, "CuPy is installed but no CUDA device is visible"
        float(cupy.arange(3.0).sum())  # compiles and runs a kernel
    except Exception as exc:
        return None, f"CuPy cannot use a CUDA device ({type(exc).__name__}: {exc})"
    return cupy, "ok"


def cupy_available() -> bool:
    """True when CuPy imports and can run a kernel on a CUDA device."""
    return _load_cupy()[0] is not None


def _requested(backend: str | None) -> str:
    name = (backend if backend is not None else os.environ.get(ENV_VAR, "auto")).strip().lower()
    if name not in BACKENDS:
        source = "backend" if backend is not None else f"environment variable {ENV_VAR}"
        raise ValueError(f"{source} must be one of {BACKENDS}, got {name!r}")
    return name


def get_array_module(backend: str | None = None) -> ModuleType:
    """Return the array module (``numpy`` or ``cupy``) for ``backend``.

    Parameters
    ----------
    backend : {"auto", "numpy", "cupy"} or None
        ``None`` reads ``TRANSFERTHEORY_BACKEND`` (default ``"auto"``).
        ``"auto"`` picks CuPy when a usable GPU exists, else NumPy.

    Raises
    ------
    BackendUnavailableError
        ``"cupy"`` was requested but CuPy cannot run on this machine.
    """
    name = _requested(backend)
    if name == "numpy":
        return np
    cupy, reason = _load_cupy()
    if cupy is not None:
        return cupy
    if name == "cupy":
        raise BackendUnavailableError(
            f"backend 'cupy' requested but unusable: {reason}. Install the 'gpu' extra "
            f"on a machine with a CUDA GPU, or use backend='numpy' / {ENV_VAR}=numpy."
        )
    return np


def array_module_of(*arrays) -> ModuleType:
    """The array module owning ``arrays`` (CuPy if any is a CuPy array)."""
    cupy = _load_cupy()[0] if any(type(a).__module__.startswith("cupy") for a in arrays) else None
    return cupy if cupy is not None else np


def backend_name(xp: ModuleType) -> str:
    """``"numpy"`` or ``"cupy"`` for an array module."""
    return "cupy" if xp.__name__.startswith("cupy") else "numpy"


def to_host(array):
    """Copy ``array`` to a NumPy array on the host (no copy if already NumPy)."""
    if type(array).__module__.startswith("cupy"):
        return array.get()
    return np.asarray(array)


def to_device(array, xp: ModuleType):
    """Place a host array on the device of array module ``xp``."""
    return xp.asarray(array)


class SeededGenerator:
    """A seeded random generator that produces arrays of module ``xp``.

    Draws come from NumPy's PCG64 on the host and are copied to the device, so
    the same seed gives the same numbers on NumPy and CuPy. Use
    :meth:`spawn` for independent child streams (e.g. one per chunk of work).
    """

    def __init__(self, seed, xp: ModuleType = np, dtype=np.float64):
        self.xp = xp
        self.dtype = np.dtype(dtype)
        self._seed_seq = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
        self.host = np.random.Generator(np.random.PCG64(self._seed_seq))

    def spawn(self, n: int) -> list["SeededGenerator"]:
        """``n`` statistically independent child generators."""
        return [SeededGenerator(s, self.xp, self.dtype) for s in self._seed_seq.spawn(n)]

    def normal(self, size, scale=1.0):
        """Gaussian draws N(0, scale²) of shape ``size`` on the device."""
        return self.xp.asarray(self.host.normal(0.0, scale, size=size).astype(self.dtype, copy=False))

    def unit_vector(self, d: int):
        """A uniformly random unit vector in ℝ^d on the device."""
        v = self.host.standard_normal(d)
        return self.xp.asarray((v / np.linalg.norm(v)).astype(self.dtype, copy=False))


def make_rng(seed=0, xp: ModuleType | None = None, dtype=np.float64) -> SeededGenerator:
    """Seeded generator for array module ``xp`` (default: the active backend)."""
    return SeededGenerator(seed, get_array_module() if xp is None else xp, dtype)
