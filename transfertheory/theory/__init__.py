"""Closed-form predictions of the transfer-learning papers (pure, vectorized NumPy)."""
from . import linear
from .linear import *  # noqa: F401,F403  (the public contract of FaF §3)

__all__ = list(linear.__all__)
