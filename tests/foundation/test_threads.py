"""The BLAS thread policy (transfertheory.threads): workers × threads ≤ cores, limits applied inside a block."""
import pytest
from threadpoolctl import threadpool_info

from transfertheory import threads


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
