"""One seeding rule: every random draw of a simulation point comes from ``SeedSequence(seed, spawn_key=key)``.

A *key* is a path of non-negative integers naming what is drawn (e.g. the point's hash, then the draw's index),
so the draws of a point are a pure function of (seed, key) — not of the order in which points or draws are
computed, nor of the process that computes them. The sweep engine (:mod:`transfertheory.sweep`) derives each
point's seed from the hash of its parameters with :func:`derive_seed`; that is what makes a resumed sweep
bit-identical to an uninterrupted one.
"""
from __future__ import annotations

import numpy as np

from .. import params as P

__all__ = ["generator", "derive_seed"]


def _sequence(seed, key) -> np.random.SeedSequence:
    seed = P.SEED.scalar(seed)
    spawn_key = tuple(int(k) for k in key)
    if any(k < 0 for k in spawn_key):
        raise ValueError(f"key must hold integers >= 0, got {spawn_key}")
    return np.random.SeedSequence(seed, spawn_key=spawn_key)


def generator(seed, *key) -> np.random.Generator:
    """The generator of the draw named ``key`` (integers ≥ 0) under ``seed`` (integer ≥ 0)."""
    return np.random.default_rng(_sequence(seed, key))


def derive_seed(seed, *key) -> int:
    """An integer seed in [0, 2³²) for the sub-computation named ``key`` under ``seed`` (for entry points that
    take an integer seed)."""
    return int(_sequence(seed, key).generate_state(1, np.uint32)[0])
