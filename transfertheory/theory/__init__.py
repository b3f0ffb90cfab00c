"""Closed-form predictions of the transfer-learning papers (pure, vectorized NumPy).

* :mod:`.linear` — FaF §3, deep linear networks (imported here);
* :mod:`.distances` — FaF §2.1, task distances (``from transfertheory.theory import distances``;
  not imported eagerly because it loads POT).
"""
from . import linear
from .linear import *  # noqa: F401,F403  (the public contract of FaF §3)

__all__ = list(linear.__all__)
