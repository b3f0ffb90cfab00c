"""The process policy (transfertheory.threads): workers × threads ≤ cores, limits applied inside a block; freed
large arrays reused without new pages."""
import functools
import resource

import numpy as np
import pytest
from threadpoolctl import threadpool_info

from transfertheory import _memory, threads
from transfertheory._memory import _host_available, keep_freed_memory


@pytest.mark.parametrize("workers, cores, expected", [(2, 2, 1), (3, 2, 1), (2, 16, 8), (4, 16, 4), (5, 16, 3),
                                                      (1, 16, threads.SERIAL_THREADS)])
def test_workers_times_threads_never_exceeds_the_cores(workers, cores, expected):
    assert threads.threads_per_worker(workers, cores) == expected
    assert workers * threads.threads_per_worker(workers, cores) <= max(cores, workers)


def test_bad_worker_counts_name_the_parameter():
    with pytest.raises(ValueError, match="workers must be an integer >= 1, got 0"):
        threads.threads_per_worker(0)


def test_the_limit_holds_inside_the_block_only():
    blas = [p for p in threadpool_info() if p["user_api"] == "blas"]
    if not blas:
        pytest.skip("no BLAS library reported by threadpoolctl")
    before = [p["num_threads"] for p in blas]
    with threads.blas_threads(1):
        assert all(p["num_threads"] == 1 for p in threadpool_info() if p["user_api"] == "blas")
    assert [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"] == before


def test_a_freed_large_array_is_reused_without_new_pages():
    """Without the policy glibc maps each 64 MiB array afresh (measured: ≈ 2 000 page faults for the four, against
    none with it); a fault of a 2 MiB huge page still counts once, so fewer than one array's 32 means reuse."""
    if not keep_freed_memory():
        pytest.skip("the C library has no mallopt (not glibc)")
    size = 2**23  # float64: 64 MiB, above the largest size glibc's malloc serves from its heap by default (32 MiB)
    np.ones(size)  # the heap grows to hold one
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(4):
        np.ones(size)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before < 32


def _resident_bytes():
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * resource.getpagesize()


def test_the_memory_guard_gives_kept_memory_back_before_reading_what_is_available():
    """Kept memory would look taken to the guard's next check in the same process (a verify run's later claims)."""
    if not keep_freed_memory():
        pytest.skip("the C library has no mallopt (not glibc)")
    arrays = [np.ones(2**24) for _ in range(2)]  # 2 × 128 MiB on the heap, the later one on top
    arrays.append(np.ones(16))  # a small allocation above them keeps the heap's top from being trimmed on free
    del arrays[:2]
    kept = _resident_bytes()
    _host_available()
    assert kept - _resident_bytes() > 2**27  # at least one of the two arrays' pages went back


def test_without_mallopt_the_policy_is_off_and_the_guard_still_reads_the_available_memory(monkeypatch):
    """A C library without mallopt (macOS, musl): the policy reports False and the guard reads memory as before."""
    monkeypatch.setattr(_memory, "_libc", lambda: None)
    monkeypatch.setattr(_memory, "keep_freed_memory", functools.cache(_memory.keep_freed_memory.__wrapped__))
    assert _memory.keep_freed_memory() is False
    assert _memory._host_available() > 0
