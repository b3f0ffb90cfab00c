import numpy as np
import pytest

from transfertheory import backend


def test_numpy_backend_explicit_and_env(monkeypatch):
    assert backend.get_array_module("numpy") is np
    monkeypatch.setenv(backend.ENV_VAR, "numpy")
    assert backend.get_array_module() is np


def test_auto_falls_back_to_numpy_without_gpu():
    xp = backend.get_array_module("auto")
    assert xp is np or backend.cupy_available()


def test_bad_backend_name_is_clear(monkeypatch):
    with pytest.raises(ValueError, match="backend must be one of"):
        backend.get_array_module("torch")
    monkeypatch.setenv(backend.ENV_VAR, "tpu")
    with pytest.raises(ValueError, match="TRANSFERTHEORY_BACKEND"):
        backend.get_array_module()


def test_cupy_request_without_gpu_is_a_clear_error():
    if backend.cupy_available():
        pytest.skip("a GPU is available here")
    with pytest.raises(backend.BackendUnavailableError, match="gpu"):
        backend.get_array_module("cupy")


def test_seeded_generator_is_reproducible_and_spawns_independent_streams():
    a = backend.make_rng(7, np).normal((3, 4))
    b = backend.make_rng(7, np).normal((3, 4))
    np.testing.assert_array_equal(a, b)
    c1, c2 = backend.make_rng(7, np).spawn(2)
    assert not np.allclose(c1.normal(5), c2.normal(5))
    u = backend.make_rng(1, np).unit_vector(50)
    assert np.isclose(np.linalg.norm(u), 1.0)


def test_to_host_roundtrip():
    x = np.arange(4.0)
    assert backend.to_host(backend.to_device(x, np)) is not None
    np.testing.assert_array_equal(backend.to_host(x), x)
    assert backend.backend_name(np) == "numpy"
    assert backend.array_module_of(x) is np


@pytest.mark.gpu
def test_cupy_draws_match_numpy_draws():
    cp = backend.get_array_module("cupy")
    g_cpu = backend.make_rng(3, np).normal((5, 5))
    g_gpu = backend.make_rng(3, cp).normal((5, 5))
    np.testing.assert_array_equal(g_cpu, backend.to_host(g_gpu))
