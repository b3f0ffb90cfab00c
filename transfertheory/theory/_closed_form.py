"""The boundary of a vectorized closed form: validate its arguments once, then return floats for scalar input.

:func:`closed_form` holds what each public closed form of :mod:`transfertheory.theory` would otherwise repeat:
its array arguments must broadcast together (:func:`~transfertheory._validation.check_broadcast`), each lies in
the range of its :class:`~transfertheory.params.Param` (a ValueError naming the argument), the formula runs on
float arrays, and its result (each of a tuple of results) is a Python float when every array argument was a
scalar (:func:`~transfertheory._validation.scalar_or_array`). A closed form that another one calls with arguments
validated already takes ``validate=False`` for that call: the arrays are only converted to floats
(:func:`~transfertheory._validation.trusted`) and the single-number arguments passed as they are.
"""
from __future__ import annotations

import functools
import inspect

import numpy as np

from ..params import Param
from .._validation import check_broadcast, scalar_or_array

__all__ = ["closed_form"]


def closed_form(**rules):
    """Decorate ``f(…)`` whose arguments named in ``rules`` are validated at each call (module docstring).

    A rule is a :class:`~transfertheory.params.Param` for an array argument (:meth:`Param.check`, broadcast
    against the other array arguments) or a Param's bound :meth:`~transfertheory.params.Param.scalar` for a
    single number (``depth=P.DEPTH.scalar``). Rules run in their order, after the broadcast check (which names the
    arrays in ``f``'s order). The decorated
    function takes the keyword ``validate`` (default True) besides ``f``'s arguments.
    """

    def decorate(f):
        signature = inspect.signature(f)
        arrays = [name for name in signature.parameters if isinstance(rules.get(name), Param)]  # in f's order

        @functools.wraps(f)
        def checked(*args, validate=True, **kwargs):
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            given = dict(bound.arguments)
            if validate:
                check_broadcast(**{name: given[name] for name in arrays})
            for name, rule in rules.items():
                if isinstance(rule, Param):
                    bound.arguments[name] = rule.check(given[name], name) if validate else np.asarray(given[name],
                                                                                                     dtype=float)
                elif validate:
                    bound.arguments[name] = rule(given[name], name)
            result = f(*bound.args, **bound.kwargs)
            inputs = [given[name] for name in arrays]
            if isinstance(result, tuple):
                return tuple(scalar_or_array(part, *inputs) for part in result)
            return scalar_or_array(result, *inputs)

        validate = inspect.Parameter("validate", inspect.Parameter.KEYWORD_ONLY, default=True)
        checked.__signature__ = signature.replace(parameters=[*signature.parameters.values(), validate])
        return checked

    return decorate
