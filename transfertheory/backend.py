"""Array backend: the one module that knows about CuPy.

Numerical code in :mod:`transfertheory` is written once against an *array
module* ``xp`` (NumPy, CuPy, or a registered stand-in), in the spirit of POT's
backend layer:

* **Entry points** (``run_transfer_experiment``, the CLIs) take a backend
  *name* and turn it into a module with :func:`resolve_backend`: ``"numpy"``,
  ``"cupy"``, ``"auto"`` (CuPy when a usable CUDA device exists, else NumPy)
  or a registered name; ``None`` reads the environment variable
  ``TRANSFERTHEORY_BACKEND`` (default ``"auto"``). An unknown name is a
  :class:`ValueError` naming the argument or the variable; ``"cupy"`` without
  a usable GPU is a :class:`BackendUnavailableError` whose message is one line.
* **Inside** the simulators the module is inferred from the arrays themselves
  with :func:`get_backend` (no ``xp`` argument is threaded through); mixing
  host (NumPy) and device arrays is an error there, as it is in CuPy.
* Every host/device transfer goes through :func:`to_host` and
  :func:`to_device`.
* Random draws are made on the host with NumPy's PCG64, by the seeding rule of
  :mod:`transfertheory.sim.seeding`, and copied to the device with
  :func:`to_device`, so a seed defines the *same* experiment on every backend.

A test-only backend can be registered with :func:`register_backend` (the test
suite registers a strict CPU stand-in for CuPy's host/device boundary); this
module never imports it. No other module imports ``cupy``.
"""
from __future__ import annotations

import contextlib
import functools
import os
from dataclasses import dataclass
from types import ModuleType
from typing import Callable

import numpy as np

__all__ = [
    "BACKENDS",
    "ENV_VAR",
    "EXIT_BACKEND_UNAVAILABLE",
    "BackendUnavailableError",
    "ArrayBackend",
    "register_backend",
    "unregister_backend",
    "backend_names",
    "check_backend_name",
    "resolve_backend",
    "get_backend",
    "backend_name",
    "cupy_available",
    "device_description",
    "device_free_memory",
    "to_host",
    "to_device",
    "BATCHED_EIGH_MAX_ORDER",
    "stacked_eigh",
    "stacked_eigvalsh",
]

BACKENDS = ("auto", "numpy", "cupy")  # the built-in names; registered backends add theirs
ENV_VAR = "TRANSFERTHEORY_BACKEND"
#: Exit status of a command-line tool whose requested backend cannot run on this machine
#: (:class:`BackendUnavailableError`; 0 success, 1 output not writable, 2 usage error).
EXIT_BACKEND_UNAVAILABLE = 3


class BackendUnavailableError(RuntimeError):
    """Raised when the CuPy backend is requested but no usable GPU exists (one-line message)."""


@dataclass(frozen=True)
class ArrayBackend:
    """A device backend: its array module, its array type and the copy of an array to the host."""

    name: str
    module: object
    array_type: type
    to_host: Callable[[object], np.ndarray]


_REGISTERED: dict[str, ArrayBackend] = {}


def register_backend(name: str, module, array_type: type, to_host: Callable[[object], np.ndarray]) -> ArrayBackend:
    """Make a device backend known by ``name`` (e.g. a test stand-in); returns its record."""
    if name in BACKENDS:
        raise ValueError(f"backend name {name!r} is built in")
    _REGISTERED[name] = ArrayBackend(name, module, array_type, to_host)
    return _REGISTERED[name]


def unregister_backend(name: str) -> None:
    """Forget a backend registered with :func:`register_backend` (no error if unknown)."""
    _REGISTERED.pop(name, None)


def backend_names() -> tuple[str, ...]:
    """Every name :func:`resolve_backend` accepts: the built-in ones, then the registered ones."""
    return BACKENDS + tuple(_REGISTERED)


@functools.lru_cache(maxsize=1)
def _load_cupy() -> tuple[ModuleType | None, str]:
    """Import CuPy and check that a CUDA device can run a kernel.

    Returns ``(cupy or None, reason)``; the reason explains a failure in one line.
    """
    try:
        import cupy  # noqa: PLC0415  (the only cupy import in the package)
    except Exception as exc:  # ImportError, or a broken CUDA install
        return None, f"CuPy is not importable ({type(exc).__name__}: {_one_line(exc)})"
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            return None, "CuPy is installed but no CUDA device is visible"
        float(cupy.arange(3.0).sum())  # compiles and runs a kernel
    except Exception as exc:
        return None, f"CuPy cannot use a CUDA device ({type(exc).__name__}: {_one_line(exc)})"
    return cupy, "ok"


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= 200 else text[:197] + "..."


def cupy_available() -> bool:
    """True when CuPy imports and can run a kernel on a CUDA device."""
    return _load_cupy()[0] is not None


def device_description(name: str) -> str:
    """The machine a backend ``name`` (``"numpy"`` or ``"cupy"``) computes on, in words, for a result's record:
    the GPU's name for CuPy, else the CPU's model and its core count (Linux ``/proc/cpuinfo``, else
    ``platform.processor()``)."""
    if name == "cupy" and cupy_available():
        cupy = _load_cupy()[0]
        device = cupy.cuda.Device()
        return f"GPU: {cupy.cuda.runtime.getDeviceProperties(device.id)['name'].decode()}"
    import platform

    model = platform.processor() or "unknown CPU"
    with contextlib.suppress(OSError, StopIteration), open("/proc/cpuinfo", encoding="utf-8") as info:
        model = next(line.split(":", 1)[1].strip() for line in info if line.startswith("model name"))
    return f"CPU: {model}, {os.cpu_count()} cores"


def check_backend_name(name: str | None = None) -> str:
    """The normalized backend name for ``name`` (None: ``TRANSFERTHEORY_BACKEND``, default ``"auto"``), without
    loading any backend; an unknown name is a :class:`ValueError` naming the argument or the variable."""
    source = "backend" if name is not None else f"environment variable {ENV_VAR}"
    raw = name if name is not None else os.environ.get(ENV_VAR, "auto")
    key = raw.strip().lower() if isinstance(raw, str) else None
    if key not in backend_names():
        raise ValueError(f"{source} must be one of {backend_names()}, got {raw!r}")
    return key


def resolve_backend(name: str | None = None):
    """The array module for a backend name, for entry points.

    Parameters
    ----------
    name : {"auto", "numpy", "cupy"}, a registered name, or None
        ``None`` reads ``TRANSFERTHEORY_BACKEND`` (default ``"auto"``).
        ``"auto"`` picks CuPy when a usable GPU exists, else NumPy.

    Raises
    ------
    ValueError
        ``name`` (or the environment variable) is not a known backend.
    BackendUnavailableError
        ``"cupy"`` was requested but CuPy cannot run on this machine.
    """
    key = check_backend_name(name)
    if key == "numpy":
        return np
    if key in _REGISTERED:
        return _REGISTERED[key].module
    cupy, reason = _load_cupy()
    if cupy is not None:
        return cupy
    if key == "cupy":
        raise BackendUnavailableError(
            f"backend 'cupy' requested but unusable: {reason}. Install the 'gpu' extra on a machine with a "
            f"CUDA GPU, or use backend 'numpy' ({ENV_VAR}=numpy)."
        )
    return np


def _device_backend(array) -> ArrayBackend | None:
    """The device backend owning ``array``, or None for host objects (NumPy arrays, scalars, None)."""
    kind = type(array)
    if kind is np.ndarray:  # the common case first: a plain NumPy array is a host array
        return None
    for record in _REGISTERED.values():
        if issubclass(kind, record.array_type):
            return record
    if kind.__module__.startswith("cupy"):
        return ArrayBackend("cupy", _load_cupy()[0], kind, lambda a: a.get())
    return None


def get_backend(*arrays):
    """The array module owning ``arrays`` (NumPy, CuPy or a registered backend).

    Host objects — NumPy arrays and scalars, Python numbers, None — belong to
    every backend's host side: with only those the answer is NumPy. Device
    arrays decide the module; a NumPy array mixed with device arrays, or
    arrays of two device backends, raise :class:`TypeError` (CuPy would fail
    later, at the first operation that mixes them).
    """
    found = None
    host_array = False
    for a in arrays:
        record = _device_backend(a)
        if record is None:
            host_array |= isinstance(a, np.ndarray)
        elif found is None:
            found = record
        elif record.name != found.name:
            raise TypeError(f"arrays of two device backends mixed: {found.name} and {record.name}")
    if found is None:
        return np
    if host_array:
        raise TypeError(f"host (NumPy) arrays mixed with {found.name} device arrays: move them with "
                        "transfertheory.backend.to_device first")
    return found.module


def _module_name(obj) -> str | None:
    """The backend name of ``obj`` if it is an array module (NumPy, CuPy or a registered one), else None."""
    if obj is np:
        return "numpy"
    for record in _REGISTERED.values():
        if obj is record.module:
            return record.name
    return "cupy" if getattr(obj, "__name__", "").startswith("cupy") else None


def backend_name(xp) -> str:
    """The name of an array module: ``"numpy"``, ``"cupy"`` or a registered name."""
    name = _module_name(xp)
    if name is None:
        raise ValueError(f"not an array module of a known backend: {xp!r}")
    return name


def device_free_memory(xp) -> int | None:
    """Bytes of device memory free for arrays of the module ``xp`` (CuPy: the device's free memory plus the
    free blocks of CuPy's memory pool); None for host modules (NumPy, registered stand-ins) or if unreadable."""
    if _module_name(xp) != "cupy":
        return None
    try:
        free, _total = xp.cuda.runtime.memGetInfo()
        return int(free) + int(xp.get_default_memory_pool().free_bytes())
    except Exception:  # a driver without memGetInfo: no device limit known
        return None


def to_host(array) -> np.ndarray:
    """Copy a device array to a NumPy array on the host; host input is returned as a NumPy array."""
    record = _device_backend(array)
    return np.asarray(array) if record is None else record.to_host(array)


def to_device(array, like):
    """Place a host array on the backend of ``like`` (an array of that backend, or its array module)."""
    xp = like if _module_name(like) is not None else get_backend(like)
    return xp.asarray(array)


#: largest matrix order of a stack that a device backend decomposes in one batched call (:func:`stacked_eigh`)
BATCHED_EIGH_MAX_ORDER = 32


def _stacked_symmetric(a, eigenvectors):
    """``eigh``/``eigvalsh`` of a symmetric matrix or stack (…, n, n) on the backend of ``a``."""
    xp = get_backend(a)
    solve = xp.linalg.eigh if eigenvectors else xp.linalg.eigvalsh
    if xp is np or a.ndim == 2 or a.shape[-1] <= BATCHED_EIGH_MAX_ORDER or a.size == 0:
        return solve(a)
    parts = [solve(matrix) for matrix in a.reshape(-1, *a.shape[-2:])]
    if not eigenvectors:
        return xp.stack(parts).reshape(a.shape[:-1])
    return xp.stack([w for w, _ in parts]).reshape(a.shape[:-1]), xp.stack([v for _, v in parts]).reshape(a.shape)


def stacked_eigh(a):
    """(eigenvalues ascending, eigenvectors) of a symmetric matrix or a stack (…, n, n), as ``numpy.linalg.eigh``.

    NumPy decomposes a stack matrix by matrix with LAPACK. CuPy sends every stack to cuSOLVER's batched Jacobi
    solver (``syevjBatched``), which is made for small matrices (n ≤ 32) and does not report a failure to
    converge; on a device backend a stack of larger matrices is therefore decomposed one matrix at a time by
    the 2-D solver (divide and conquer, ``syevd``), and smaller ones in one batched call. Same results as NumPy
    to rounding; the NumPy path is ``numpy.linalg.eigh`` itself.
    """
    return _stacked_symmetric(a, True)


def stacked_eigvalsh(a):
    """The eigenvalues (ascending) of a symmetric matrix or a stack (…, n, n), as ``numpy.linalg.eigvalsh``;
    on a device backend by the rule of :func:`stacked_eigh`."""
    return _stacked_symmetric(a, False)
