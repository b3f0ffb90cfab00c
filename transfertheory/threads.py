"""The process policy of a computing block: BLAS threads (worker processes × threads per worker ≤ cores) and a
heap that keeps the memory of freed large arrays.

NumPy's BLAS starts one thread per core in every process; two such processes on a 2-core machine
oversubscribe it and run several times slower than one. :func:`threads_per_worker` gives each of ``workers``
processes ⌊cores / workers⌋ threads (at least 1), and :func:`blas_threads` applies a limit for the duration of a
block (threadpoolctl, which works after NumPy is imported, unlike the ``OMP_NUM_THREADS`` variables). The sweep
engine (:mod:`transfertheory.sweep`) applies it in every worker; :data:`SERIAL_THREADS` is the setting of one
process, for the command lines that run serially (the measurement behind it: docs/benchmarks.md, "BLAS threads").

:func:`blas_threads` also has the process keep the memory of the large arrays it frees for its next ones
(:func:`transfertheory._memory.keep_freed_memory`): every command line, worker and audit process computes inside
such a block; importing the package changes nothing.
"""
from __future__ import annotations

import contextlib
import os

from . import params as P
from ._memory import keep_freed_memory

__all__ = ["available_cores", "threads_per_worker", "blas_threads", "SERIAL_THREADS"]

#: BLAS threads of a single process (docs/benchmarks.md, "BLAS threads"); None would leave the library's default
#: (one thread per core)
SERIAL_THREADS = 1


def available_cores() -> int:
    """Cores this process may run on (its CPU affinity where the system reports it)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - macOS, Windows
        return os.cpu_count() or 1


def threads_per_worker(workers, cores=None) -> int:
    """BLAS threads for each of ``workers`` processes: ⌊cores / workers⌋ (at least 1), so that workers × threads
    ≤ cores; a single process gets :data:`SERIAL_THREADS` (all cores where that is None)."""
    workers = P.COUNT.scalar(workers, "workers")
    cores = available_cores() if cores is None else P.COUNT.scalar(cores, "cores")
    if workers == 1 and SERIAL_THREADS is not None:
        return min(SERIAL_THREADS, cores)
    return max(1, cores // workers)


@contextlib.contextmanager
def blas_threads(threads):
    """Limit the BLAS libraries of this process to ``threads`` (None: leave them alone) inside the block; the process
    keeps freed memory from then on (:func:`keep_freed_memory`)."""
    keep_freed_memory()
    from threadpoolctl import threadpool_limits

    # (threadpoolctl leaves the libraries alone when ``limits`` is None)
    with threadpool_limits(limits=None if threads is None else P.COUNT.scalar(threads, "threads"), user_api="blas"):
        yield

