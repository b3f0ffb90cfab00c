"""A strict CPU stand-in for CuPy's host/device boundary (test-only backend ``"strict"``).

Its arrays compute exactly like NumPy's (they wrap a NumPy array, so results
are bit-identical), but they refuse what a CuPy array refuses:

* implicit conversion to NumPy — ``numpy.asarray(a)``, ``numpy.array(a)``,
  a DataFrame column, ``host_array[a]`` — raises :class:`TypeError`, like
  ``cupy.ndarray.__array__``;
* mixing with NumPy arrays in arithmetic, ufuncs, ``numpy.*`` functions or the
  module's functions (``xp.matmul(a, host)``) raises :class:`TypeError`, like
  CuPy's functions, which accept only CuPy arrays and scalars;
* ``a[basic_index] = host_array`` with a non-scalar host array raises
  :class:`ValueError` (CuPy's ``fill``); NumPy scalars and 0-d arrays are fine.

and allow what CuPy allows:

* NumPy *index* arrays (``a[numpy_int_array]``, also in assignments with
  advanced indices, whose host values are copied to the device);
* ``xp.asarray(host)`` / ``xp.array(host)`` — an explicit transfer that
  *copies* (a device array never aliases host memory);
* ``float(a)``, ``int(a)``, ``bool(a)`` of one-element arrays, ``a.item()``,
  ``a.tolist()`` and ``a.get()`` (explicit, synchronizing reads);
* ``numpy.f(a)`` for functions CuPy implements dispatches to the device
  (``__array_function__`` / ``__array_ufunc__``) and returns device arrays;
  reductions return 0-d device arrays, not host scalars.

So every host transfer in code run under it must go through
:mod:`transfertheory.backend`; it catches the commonest CuPy bugs without a
GPU. Not modelled: CuPy's asynchronous execution, its lack of some NumPy
functions and its out-of-bounds index wrapping.
"""
from __future__ import annotations

from types import ModuleType

import numpy as np

from transfertheory import backend

NAME = "strict"
_IMPLICIT = ("Implicit conversion to a NumPy array is not allowed (strict CuPy stand-in); "
             "use transfertheory.backend.to_host")
_MIXED = "host (NumPy) array mixed with device arrays (strict CuPy stand-in); use transfertheory.backend.to_device"


class StrictArray(np.lib.mixins.NDArrayOperatorsMixin):
    """A device-like array: NumPy arithmetic, CuPy's boundary."""

    __slots__ = ("_data",)

    def __init__(self, data: np.ndarray):
        self._data = data

    # -- the boundary
    def __array__(self, dtype=None, copy=None):
        raise TypeError(_IMPLICIT)

    def get(self) -> np.ndarray:
        """Explicit copy to the host (``cupy.ndarray.get``)."""
        return self._data.copy()

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return _wrap(getattr(ufunc, method)(*_unwrap(inputs), **_unwrap(kwargs)))

    def __array_function__(self, func, types, args, kwargs):
        return _wrap(func(*_unwrap(args), **_unwrap(kwargs)))

    def __getitem__(self, key):
        return _wrap(self._data[_index(key)])

    def __setitem__(self, key, value):
        key = _index(key)
        if isinstance(value, StrictArray):
            value = value._data
        elif isinstance(value, (np.ndarray, list)) and np.ndim(value) > 0 and not _advanced(key):
            raise ValueError("non-scalar host array assigned to a device slice (strict CuPy stand-in: "
                             "CuPy's fill); use transfertheory.backend.to_device")
        self._data[key] = value

    # -- one-element reads CuPy allows (they synchronize)
    def __float__(self):
        return float(self._data)

    def __int__(self):
        return int(self._data)

    def __bool__(self):
        return bool(self._data)

    def __len__(self):
        return len(self._data)

    def __iter__(self):
        return (_wrap(row) for row in self._data)

    def __repr__(self):
        return f"strict({self._data!r})"

    def __getattr__(self, name):
        if name == "_data" or name.startswith("__"):  # _data not yet set (copy); no __array_interface__ etc.
            raise AttributeError(name)
        value = getattr(self._data, name)
        if callable(value):
            return lambda *args, **kwargs: _wrap(value(*_unwrap(args), **_unwrap(kwargs)))
        return _wrap(value)

    # attributes that must not go through __getattr__'s wrapping
    shape = property(lambda self: self._data.shape)
    dtype = property(lambda self: self._data.dtype)
    ndim = property(lambda self: self._data.ndim)
    size = property(lambda self: self._data.size)


def _wrap(value):
    if isinstance(value, np.ndarray):
        return StrictArray(value)
    if isinstance(value, np.generic):
        return StrictArray(np.asarray(value))
    if isinstance(value, tuple):
        return type(value)(*map(_wrap, value)) if hasattr(value, "_fields") else tuple(map(_wrap, value))
    if isinstance(value, list):
        return [_wrap(v) for v in value]
    return value


def _unwrap(value):
    """Device arrays → their data; host NumPy arrays are refused (CuPy accepts only its arrays and scalars)."""
    if isinstance(value, StrictArray):
        return value._data
    if isinstance(value, np.ndarray):
        raise TypeError(_MIXED)
    if isinstance(value, tuple):
        return tuple(_unwrap(v) for v in value)
    if isinstance(value, list):
        return [_unwrap(v) for v in value]
    if isinstance(value, dict):
        return {k: _unwrap(v) for k, v in value.items()}
    return value


def _index(key):
    """An index may hold device arrays and host index arrays (CuPy copies those to the device)."""
    if isinstance(key, StrictArray):
        return key._data
    if isinstance(key, tuple):
        return tuple(_index(k) for k in key)
    return key


def _advanced(key) -> bool:
    keys = key if isinstance(key, tuple) else (key,)
    return any(isinstance(k, (np.ndarray, list)) for k in keys)


def _transfer(function):
    """``asarray`` / ``array``: host input is copied to the 'device', device input passes."""

    def transfer(obj, *args, **kwargs):
        if isinstance(obj, StrictArray):
            return _wrap(function(obj._data, *args, **kwargs))
        if isinstance(obj, (list, tuple)) and any(isinstance(v, StrictArray) for v in obj):
            if not all(isinstance(v, StrictArray) for v in obj):  # CuPy: device arrays mixed with host values fail
                raise TypeError(_IMPLICIT)
            return _wrap(function([v._data for v in obj], *args, **kwargs))  # a list of device arrays stays there
        return StrictArray(np.array(obj, *args, **kwargs, copy=True))

    return transfer


class StrictModule:
    """The stand-in's array module: NumPy's namespace, every function behind the boundary."""

    def __init__(self, numpy_module: ModuleType = np, name: str = NAME):
        self._np = numpy_module
        self.__name__ = name

    def __getattr__(self, name):
        obj = getattr(self._np, name)
        if isinstance(obj, ModuleType):
            return StrictModule(obj, f"{self.__name__}.{name}")
        if self._np is np and name in ("asarray", "array"):
            return _transfer(obj)
        if isinstance(obj, type) or not callable(obj):
            return obj  # dtypes, constants, np.finfo: shared with NumPy, as in CuPy
        return lambda *args, **kwargs: _wrap(obj(*_unwrap(args), **_unwrap(kwargs)))


strict = StrictModule()


def register() -> None:
    """Register the stand-in as backend ``"strict"`` (idempotent)."""
    backend.register_backend(NAME, strict, StrictArray, StrictArray.get)
