"""The strict CuPy stand-in refuses exactly what CuPy refuses (and computes exactly what NumPy computes)."""
import numpy as np
import pandas as pd
import pytest
import strict_backend

from transfertheory import backend

xp = strict_backend.strict


@pytest.fixture
def a():
    return xp.asarray(np.arange(6.0).reshape(2, 3))


@pytest.mark.parametrize("convert", [np.asarray, np.array, lambda v: pd.DataFrame({"x": v[0]}),
                                     lambda v: np.arange(3.0)[v[0].astype(np.int64)]])
def test_implicit_conversion_to_numpy_raises_type_error(a, convert):
    with pytest.raises(TypeError, match="Implicit conversion"):
        convert(a)


@pytest.mark.parametrize("mix", [lambda v: v + np.ones(3), lambda v: np.ones(3) * v, lambda v: xp.matmul(v, np.ones(3)),
                                 lambda v: np.concatenate([v, np.ones((1, 3))]), lambda v: xp.where(v > 1, v, np.ones(3))])
def test_mixing_with_host_arrays_raises_type_error(a, mix):
    with pytest.raises(TypeError, match="host"):
        mix(a)


def test_non_scalar_host_values_cannot_fill_a_device_slice(a):
    with pytest.raises(ValueError, match="host"):
        a[0] = np.zeros(3)
    a[0] = np.float64(2.0)  # scalars are fine
    a[np.array([1])] = np.full((1, 3), 5.0)  # advanced indices copy host values, as in CuPy
    np.testing.assert_array_equal(backend.to_host(a), [[2, 2, 2], [5, 5, 5]])


def test_allowed_operations_compute_like_numpy(a):
    host = np.arange(6.0).reshape(2, 3)
    assert float(a.sum()) == host.sum() and int(a[1, 2]) == 5  # one-element reads synchronize, as in CuPy
    assert type(np.sum(a)) is strict_backend.StrictArray  # numpy functions dispatch to the device
    np.testing.assert_array_equal(backend.to_host(a[np.array([1, 0])]), host[[1, 0]])  # host index arrays
    w, v = xp.linalg.eigh(xp.asarray(np.diag([2.0, 1.0])))
    np.testing.assert_array_equal(backend.to_host(w), [1.0, 2.0])
    b = a.copy()
    b *= 2.0
    np.testing.assert_array_equal(backend.to_host(b), 2 * host)
    np.testing.assert_array_equal(backend.to_host(a), host)


def test_asarray_of_host_data_copies(a):
    x = np.ones(3)
    dev = xp.asarray(x)
    x[:] = 0.0
    np.testing.assert_array_equal(backend.to_host(dev), np.ones(3))


def test_asarray_of_a_list_of_device_arrays_stays_on_the_device(a):
    stacked = xp.asarray([a[0], a[1]])
    assert type(stacked) is strict_backend.StrictArray
    np.testing.assert_array_equal(backend.to_host(stacked), backend.to_host(a))
    with pytest.raises(TypeError):  # device arrays mixed with host values, as CuPy refuses
        xp.asarray([a[0], np.ones(3)])
