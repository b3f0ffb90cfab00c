"""Memory guard: refuse a computation whose estimated peak memory exceeds what is available, before allocating.

Every public simulator (and the heavy closed forms and Monte Carlo helpers) estimates its peak memory from its
arguments — the arrays it will allocate: data, Gram matrices, the integrator's batch of states and stage
buffers — and calls :func:`check_memory` once, at its public boundary, before any work. A computation over
too much memory then fails in milliseconds with a :class:`ValueError` naming the parameters, the estimate and
the memory available, instead of swapping the machine or ending in NumPy's "Unable to allocate" traceback.
Where the work is a batch of independent instances, the simulator instead chunks it
(:func:`items_per_chunk`) and refuses only what does not fit one chunk at a time.

The limit, first match:

1. the explicit argument ``max_memory=`` of the entry point (bytes, or a string such as ``"64G"``);
2. the environment variable ``TRANSFERTHEORY_MAX_MEMORY`` (same syntax; the CLIs' ``--max-memory`` sets it);
3. the memory available now: for device (CuPy) arrays the device's free memory
   (:func:`transfertheory.backend.device_free_memory`), for host arrays ``MemAvailable`` of ``/proc/meminfo``
   (Linux), else the free physical pages (``os.sysconf``); where neither can be read, no limit.

An explicit limit larger than the machine's memory is honoured: it is how a user with swap, or who knows
better than the estimate, lets a run proceed.

The heap. glibc's malloc returns an array of more than 32 MiB to the system when it is freed and maps fresh pages
for the next one, which the kernel zeroes page by page: a simulator that allocates states of hundreds of MB per
gradient evaluation then spends as much time in the kernel as in its arithmetic. :func:`keep_freed_memory` has
malloc serve such arrays from its heap and keep what is freed for the next ones (the same results, a peak memory
about 5 % higher, about half the CPU time of the MTL training study: docs/benchmarks.md, "The heap"); the guard gives what the
process keeps back to the system before it reads ``MemAvailable``, so kept memory is never counted as taken.
"""
from __future__ import annotations

import argparse
import contextlib
import ctypes
import functools
import math
import os
import re
from contextvars import ContextVar
from types import SimpleNamespace

from .backend import device_free_memory

__all__ = ["ENV_VAR", "FLAG_VAR", "ALWAYS_FITS", "NO_ARGUMENT", "FLOAT_BYTES", "MemoryLimitError", "parse_memory", "arg_type",
           "set_limit", "memory_limit", "check_memory", "items_per_chunk", "format_bytes", "guarded_entry_point",
           "keep_freed_memory"]

ENV_VAR = "TRANSFERTHEORY_MAX_MEMORY"
#: set with :data:`ENV_VAR` by :func:`set_limit`: the flag the limit came from (the refusal names it; the worker
#: processes inherit both)
FLAG_VAR = "TRANSFERTHEORY_MAX_MEMORY_FLAG"
#: without an explicit limit, an estimate up to this many bytes is not checked against the machine (it always
#: fits; the check then costs no read of /proc/meminfo, so kernels called at every step can afford it)
ALWAYS_FITS = 64 * 2**20
#: bytes of one float64, the dtype of every simulator array
FLOAT_BYTES = 8
_UNITS = {"": 1, "B": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
#: mallopt's parameters (glibc's malloc.h) and the largest free top of the heap kept (mallopt takes an int)
_M_TRIM_THRESHOLD, _M_MMAP_MAX, _KEPT_TOP = -1, -4, 2**31 - 1
_SIZE = re.compile(r"^\s*(\d+(?:\.\d*)?(?:e\d+)?)\s*([KMGT]?)(?:I?B)?\s*$", re.IGNORECASE)


def parse_memory(value, name: str = "max_memory") -> int:
    """Bytes from an int/float (bytes) or a string ``"512M"``, ``"64G"``, ``"1.5TiB"``, ``"2e9"`` (binary units).

    Raises ValueError naming ``name`` for anything else, zero or a negative size.
    """
    size = None
    if isinstance(value, str):
        match = _SIZE.match(value)
        if match is not None:
            size = float(match.group(1)) * _UNITS[match.group(2).upper()]
    elif not isinstance(value, bool):
        with contextlib.suppress(TypeError, ValueError):
            size = float(value)
    if size is None or not math.isfinite(size) or size <= 0:
        raise ValueError(f"{name} must be a positive number of bytes or a size such as '64G', got {value!r}")
    return int(size)


class MemoryLimitError(ValueError):
    """A computation refused because its estimated peak memory exceeds the limit (a ValueError: bad sizes)."""


def arg_type(text: str) -> int:
    """argparse ``type=`` of a ``--max-memory SIZE`` flag: bytes, or ``argparse.ArgumentTypeError`` (exit 2)."""
    try:
        return parse_memory(text, "--max-memory")
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err).removeprefix("--max-memory ")) from None


def set_limit(size: int | None, flag: str = "--max-memory") -> None:
    """Make ``size`` bytes the limit of every check in this process and its workers, given by the command line's
    ``flag`` (it sets ``TRANSFERTHEORY_MAX_MEMORY``, and :data:`FLAG_VAR` so that a refusal names the flag); None
    leaves the limit as it is."""
    if size is not None:
        os.environ[ENV_VAR], os.environ[FLAG_VAR] = str(int(size)), f"{flag} {int(size)}"


def format_bytes(size: float) -> str:
    """``"7.3 TiB"``: a byte count in binary units, three significant digits."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024:
            return f"{size:.3g} {unit}"
        size /= 1024
    return f"{size:.3g} PiB"


@functools.cache
def _libc():
    """The C library's ``mallopt`` and ``malloc_trim`` (glibc), or None where it has none of them."""
    try:
        libc = ctypes.CDLL(None)
        functions = libc.mallopt, libc.malloc_trim
    except (OSError, AttributeError):  # pragma: no cover - macOS, Windows
        return None
    for function in functions:
        function.restype = ctypes.c_int
    return functions


@functools.cache
def keep_freed_memory() -> bool:
    """For the rest of the process, have glibc's malloc serve large arrays from its heap (no ``mmap``) and keep
    freed memory (the heap's free top is trimmed past 2 GiB only); True where applied, False elsewhere (no glibc).
    :func:`transfertheory.threads.blas_threads` applies it."""
    functions = _libc()
    if functions is None:  # pragma: no cover - not glibc
        return False
    mallopt = functions[0]
    return bool(mallopt(ctypes.c_int(_M_MMAP_MAX), ctypes.c_int(0))) and bool(
        mallopt(ctypes.c_int(_M_TRIM_THRESHOLD), ctypes.c_int(_KEPT_TOP)))


def _host_available() -> int | None:
    """MemAvailable of /proc/meminfo (after giving back the freed memory the process keeps), else the free
    physical pages, else None."""
    if keep_freed_memory.cache_info().currsize and keep_freed_memory():  # applied: free the heap's pages to the system
        _libc()[1](ctypes.c_size_t(0))
    with contextlib.suppress(OSError, ValueError, IndexError), open("/proc/meminfo") as meminfo:
        for line in meminfo:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    with contextlib.suppress(AttributeError, ValueError, OSError):
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    return None


def memory_limit(max_memory=None, xp=None) -> tuple[int | None, str]:
    """(limit in bytes or None, where it comes from): ``max_memory``, else the variable, else what is available."""
    if max_memory is not None:
        return parse_memory(max_memory), "max_memory"
    if os.environ.get(ENV_VAR, "").strip():
        return parse_memory(os.environ[ENV_VAR], f"environment variable {ENV_VAR}"), _variable_source()
    device = None if xp is None else device_free_memory(xp)
    if device is not None:
        return device, "free device memory"
    return _host_available(), "available memory"


def _variable_source() -> str:
    """Where the variable's limit comes from: the flag :func:`set_limit` recorded with the value the variable still
    holds, else the variable."""
    flag, _, size = os.environ.get(FLAG_VAR, "").partition(" ")
    return flag if size and size == os.environ[ENV_VAR].strip() else ENV_VAR


#: ``max_memory`` of :func:`check_memory` for a function without that argument (only the variable overrides)
NO_ARGUMENT = object()


#: the memory check of the guarded entry point's call now running: done yet (``checked``), and against which
#: ``limit`` from which ``source``
_RUN: ContextVar[SimpleNamespace | None] = ContextVar("transfertheory_memory_run", default=None)


def guarded_entry_point(function):
    """Decorator of a public entry point whose own :func:`check_memory` (the first one made with a ``max_memory``
    argument) covers its whole run: the later checks of the functions it calls (flows, kernels) then use that
    run's limit (its ``max_memory``, which may exceed what the variable or the machine would allow) instead of
    reading their own. Nested entry points join the outermost run."""
    @functools.wraps(function)
    def run(*args, **kwargs):
        token = _RUN.set(SimpleNamespace(checked=False, limit=None, source=None)) if _RUN.get() is None else None
        try:
            return function(*args, **kwargs)
        finally:
            if token is not None:
                _RUN.reset(token)

    return run


def check_memory(estimate_bytes: float, *, what: str, params: dict, max_memory=NO_ARGUMENT,
                 xp=None) -> int | None:
    """Raise :class:`MemoryLimitError` (a ValueError) when ``estimate_bytes`` exceeds the limit
    (:func:`memory_limit`); return the limit.

    ``what`` names the computation (``"run_transfer_experiment"``), ``params`` the arguments the estimate grows
    with (printed as ``name=value``). The message names them, the estimate, the limit and how to override it.
    Without an explicit limit, estimates up to :data:`ALWAYS_FITS` pass unchecked (returning None). A function
    without a ``max_memory`` argument leaves it out (:data:`NO_ARGUMENT`): its message names only the variable.
    Inside a :func:`guarded_entry_point`, the first check made with a ``max_memory`` argument is the run's (the
    entry point's own); later ones without an explicit limit use the run's limit (none when the run's estimate
    passed unchecked).
    """
    has_argument = max_memory is not NO_ARGUMENT
    max_memory = max_memory if has_argument else None
    run = _RUN.get()
    if run is not None and run.checked and max_memory is None:  # a part of a run checked as a whole
        limit, source = run.limit, run.source
    elif max_memory is None and estimate_bytes <= ALWAYS_FITS and not os.environ.get(ENV_VAR, "").strip():
        limit, source = None, None
    else:
        limit, source = memory_limit(max_memory, xp)
    if limit is not None and estimate_bytes > limit:
        shown = ", ".join(f"{name}={value}" for name, value in params.items())
        override = f"pass max_memory= (or set {ENV_VAR})" if has_argument else f"set {ENV_VAR}"
        override = f"raise {source}" if source.startswith("--") else override
        given = source not in ("free device memory", "available memory")
        raise MemoryLimitError(
            f"{what}({shown}) needs about {format_bytes(estimate_bytes)} of memory, more than the "
            f"{format_bytes(limit)} {'allowed by ' + source if given else source}; "
            f"reduce {', '.join(params)}, or {override} to allow more")
    if run is not None and not run.checked and has_argument:  # the entry point's own check (it takes max_memory)
        run.checked, run.limit, run.source = True, limit, source
    return limit


def items_per_chunk(per_item_bytes: float, fixed_bytes: float, items: int, limit: int | None) -> int:
    """How many of ``items`` independent work items to process at once so that
    ``fixed_bytes + chunk·per_item_bytes`` stays within ``limit`` (all of them when there is no limit);
    at least 1 (the caller has checked that one item fits)."""
    if limit is None or per_item_bytes <= 0:
        return items
    return int(max(1, min(items, (limit - fixed_bytes) // per_item_bytes)))
