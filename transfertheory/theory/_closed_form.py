"""The boundary of a vectorized closed form: validate its arguments once, then return floats for scalar input.

:func:`closed_form` holds what each public closed form of :mod:`transfertheory.theory` would otherwise repeat:
its array arguments must broadcast together (:func:`~transfertheory._validation.check_broadcast`), each lies in
the range of its :class:`~transfertheory.params.Param` (a ValueError naming the argument), the formula runs on
float arrays, and its result (each of a tuple of results) is a Python float when every array argument was a
scalar (:func:`~transfertheory._validation.scalar_or_array`). An array argument whose rule depends on another
argument, or a stack of vectors (…, d) such as a batch of teachers, has a :class:`Rule`. A closed form that
another one calls with arguments validated already takes ``validate=False`` for that call: the arrays are only
converted to floats and the other arguments passed as they are.
"""
from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..params import Param
from .._validation import check_broadcast, scalar_or_array

__all__ = ["closed_form", "Rule"]


@dataclass(frozen=True)
class Rule:
    """The rule of an array argument that depends on other arguments: ``check(value, name, arguments)`` validates it,
    ``arguments`` holding the arguments by name, those of the rules before it validated (the spectrum a teacher
    lives on, the method record whose λ it is). ``vectors``: the argument is a stack of vectors (…, d), whose
    leading axes (…) broadcast with the other array arguments."""

    check: Callable
    vectors: bool = False


def _leading(value):
    """What the broadcast check and the float-or-array choice see of a stack of vectors: a stand-in of its leading
    axes (the value itself when it has no shape, which its rule then refuses)."""
    try:
        return np.broadcast_to(0.0, np.shape(value)[:-1])
    except ValueError:
        return value


def closed_form(**rules):
    """Decorate ``f(…)`` whose arguments named in ``rules`` are validated at each call (module docstring).

    A rule is a :class:`~transfertheory.params.Param` for an array argument (:meth:`Param.check`, broadcast
    against the other array arguments), a :class:`Rule` for one that depends on others, or a callable
    ``rule(value, name)`` for any other argument, such as a Param's bound
    :meth:`~transfertheory.params.Param.scalar` for a single number (``depth=P.DEPTH.scalar``). Rules run in
    their order, after the broadcast check (which names the arrays in ``f``'s order). The decorated function
    takes the keyword ``validate`` (default True) besides ``f``'s arguments.
    """

    def decorate(f):
        signature = inspect.signature(f)
        arrays = [name for name in signature.parameters if isinstance(rules.get(name), (Param, Rule))]

        @functools.wraps(f)
        def checked(*args, validate=True, **kwargs):
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            given = dict(bound.arguments)
            inputs = {name: _leading(given[name]) if getattr(rules[name], "vectors", False) else given[name]
                      for name in arrays}
            if validate:
                check_broadcast(**inputs)
            for name, rule in rules.items():
                value = given[name]
                if not validate:
                    bound.arguments[name] = np.asarray(value, dtype=float) if name in inputs else value
                elif isinstance(rule, Rule):
                    bound.arguments[name] = rule.check(value, name, bound.arguments)
                else:
                    bound.arguments[name] = rule.check(value, name) if isinstance(rule, Param) else rule(value, name)
            result = f(*bound.args, **bound.kwargs)
            if isinstance(result, tuple):
                return tuple(scalar_or_array(part, *inputs.values()) for part in result)
            return scalar_or_array(result, *inputs.values())

        validate = inspect.Parameter("validate", inspect.Parameter.KEYWORD_ONLY, default=True)
        checked.__signature__ = signature.replace(parameters=[*signature.parameters.values(), validate])
        return checked

    return decorate
