"""Shared pytest configuration: markers, hypothesis profiles, backends, BLAS threads.

The whole session runs under the package's BLAS thread policy (:mod:`transfertheory.threads`:
``SERIAL_THREADS`` threads, as every command line does), so that the tests time and round what users get.
The strict CPU stand-in for CuPy's host/device boundary (:mod:`strict_backend`)
is registered as backend ``"strict"`` for the whole session; the fixture
``array_backend`` runs a test on NumPy, on it and, where a GPU is usable, on
CuPy itself (``xp`` the array module).
"""
import os

import numpy as np
import pytest
import strict_backend
from hypothesis import HealthCheck, settings

from transfertheory import _memory, backend, threads

# Deterministic property tests in CI (same examples every run); a wider
# random search locally with HYPOTHESIS_PROFILE=explore.
settings.register_profile(
    "ci", derandomize=True, deadline=None, max_examples=25, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("explore", deadline=None, max_examples=200, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

strict_backend.register()

#: the claims as tests (``tests/claims/test_claims.py``) and the audit options (``--claims-profile``, ``--audit-json``, …)
pytest_plugins = ["transfertheory.audit_plugin"]


#: markers whose tests run only when the ``-m`` expression names them (``-m slow``, ``-m meta``, ``-m "slow or meta"``)
OPT_IN_MARKERS = ("slow", "meta")


def pytest_collection_modifyitems(config, items):
    selection = config.getoption("-m") or ""
    left_out = [marker for marker in OPT_IN_MARKERS if marker not in selection]
    kept, dropped = [], []
    for item in items:
        (dropped if any(marker in item.keywords for marker in left_out) else kept).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept
    has_gpu = backend.cupy_available()
    skip_gpu = pytest.mark.skip(reason="gpu: CuPy with a usable CUDA device is not available")
    for item in items:
        if "gpu" in item.keywords and not has_gpu:
            item.add_marker(skip_gpu)


@pytest.fixture(scope="session", autouse=True)
def serial_blas_threads():
    """Every test runs with the BLAS threads of the package's serial policy."""
    with threads.blas_threads(threads.SERIAL_THREADS):
        yield


@pytest.fixture(autouse=True)
def memory_limit_stays_in_its_test(monkeypatch):
    """A command line's ``--max-memory`` sets the limit's variables (``transfertheory._memory.set_limit``): each
    test gets them back as they were (an empty one is unset)."""
    for name in (_memory.ENV_VAR, _memory.FLAG_VAR):
        monkeypatch.setenv(name, os.environ.get(name, ""))


@pytest.fixture(params=["numpy", strict_backend.NAME, pytest.param("cupy", marks=pytest.mark.gpu)])
def array_backend(request):
    """(name, array module) of NumPy, the strict CuPy stand-in and (``gpu``-marked) real CuPy: a test using it runs on each."""
    return request.param, backend.resolve_backend(request.param)


@pytest.fixture
def rng():
    return np.random.default_rng(12345)
