"""The backend layer: names and the environment variable, inference from arrays, host/device transfers."""
import numpy as np
import pytest
import strict_backend

from transfertheory import backend

STRICT = strict_backend.NAME


def test_explicit_name_and_environment_variable(monkeypatch):
    monkeypatch.delenv(backend.ENV_VAR, raising=False)
    assert backend.resolve_backend("numpy") is np
    assert backend.resolve_backend(" NumPy ") is np  # names are case- and space-insensitive
    monkeypatch.setenv(backend.ENV_VAR, STRICT)
    assert backend.resolve_backend() is strict_backend.strict  # None reads the variable
    assert backend.resolve_backend("numpy") is np  # an explicit choice wins over the variable


def test_auto_is_numpy_exactly_when_no_gpu_is_usable(monkeypatch):
    monkeypatch.delenv(backend.ENV_VAR, raising=False)
    expected = "cupy" if backend.cupy_available() else "numpy"
    assert backend.backend_name(backend.resolve_backend("auto")) == expected
    assert backend.backend_name(backend.resolve_backend()) == expected  # the variable's default is auto


@pytest.mark.parametrize("bad", ["torch", "", "bogus"])
def test_unknown_name_names_the_argument_or_the_variable(monkeypatch, bad):
    monkeypatch.delenv(backend.ENV_VAR, raising=False)
    with pytest.raises(ValueError, match=r"backend must be one of \('auto', 'numpy', 'cupy', 'strict'\)"):
        backend.resolve_backend(bad)
    monkeypatch.setenv(backend.ENV_VAR, bad)
    with pytest.raises(ValueError, match=f"environment variable {backend.ENV_VAR} must be one of"):
        backend.resolve_backend()


@pytest.mark.parametrize("bad", [True, 1, 0.5])
def test_non_string_name_is_rejected(bad):
    with pytest.raises(ValueError, match="backend must be one of"):
        backend.resolve_backend(bad)


def test_cupy_request_without_gpu_is_a_one_line_error(monkeypatch):
    if backend.cupy_available():
        pytest.skip("a GPU is available here")
    with pytest.raises(backend.BackendUnavailableError, match="gpu") as info:
        backend.resolve_backend("cupy")
    assert "\n" not in str(info.value)
    monkeypatch.setenv(backend.ENV_VAR, "cupy")  # the variable is honoured, not silently replaced by NumPy
    with pytest.raises(backend.BackendUnavailableError):
        backend.resolve_backend()


def test_get_backend_infers_the_module_and_refuses_mixing(array_backend):
    name, xp = array_backend
    a = xp.asarray(np.arange(3.0))
    assert backend.get_backend(a) is xp and backend.get_backend(a, 2.0, None, np.float64(1.0)) is xp
    assert backend.get_backend() is np and backend.get_backend(np.ones(2), 3) is np
    assert backend.backend_name(xp) == name
    if name != "numpy":
        with pytest.raises(TypeError, match="host"):
            backend.get_backend(a, np.ones(3))


def test_to_host_and_to_device_round_trip_copies(array_backend):
    name, xp = array_backend
    x = np.arange(4.0)
    dev = backend.to_device(x, xp)
    assert backend.get_backend(dev) is xp
    assert backend.get_backend(backend.to_device(x, like=dev)) is xp
    host = backend.to_host(dev)
    assert type(host) is np.ndarray
    np.testing.assert_array_equal(host, x)
    if name != "numpy":  # a device array never aliases host memory
        x[0] = 7.0
        assert backend.to_host(dev)[0] == 0.0


def test_registered_names_are_listed_and_built_in_names_protected():
    assert backend.backend_names() == backend.BACKENDS + (STRICT,)
    with pytest.raises(ValueError, match="built in"):
        backend.register_backend("numpy", np, np.ndarray, np.asarray)


@pytest.mark.parametrize("order", [5, backend.BATCHED_EIGH_MAX_ORDER + 8])
def test_stacked_eigh_is_numpys_on_every_backend(array_backend, order):
    """Below and above the batched-solver order (a device backend decomposes larger stacks matrix by matrix):
    eigenvalues equal NumPy's to rounding, eigenvectors orthonormal and reconstructing each matrix, for a
    2-D matrix and a (2, 3, n, n) stack, and eigvalsh the same eigenvalues."""
    _, xp = array_backend
    rng = np.random.default_rng(order)
    a = rng.standard_normal((2, 3, order, order))
    a = a + a.swapaxes(-1, -2)
    for host in (a, a[1, 2]):
        w, v = backend.stacked_eigh(backend.to_device(host, xp))
        w, v = backend.to_host(w), backend.to_host(v)
        reference = np.linalg.eigvalsh(host)
        scale = np.abs(reference).max()
        assert w.shape == host.shape[:-1] and v.shape == host.shape
        np.testing.assert_allclose(w, reference, atol=1e-12 * scale)
        np.testing.assert_allclose((v * w[..., None, :]) @ v.swapaxes(-1, -2), host, atol=1e-12 * scale)
        np.testing.assert_allclose(v.swapaxes(-1, -2) @ v, np.broadcast_to(np.eye(order), v.shape), atol=1e-12)
        only = backend.to_host(backend.stacked_eigvalsh(backend.to_device(host, xp)))
        np.testing.assert_allclose(only, reference, atol=1e-12 * scale)
