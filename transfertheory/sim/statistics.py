r"""Statistics of simulated samples shared by the claims and the figures: a mean with its standard error, the
percentile bootstrap interval of a mean and the Wilson score interval of a frequency.

Why the two intervals (the simulation figures of MeRLin, :mod:`.merlin.experiment`): a mean ± SE bar of positive
values spread over decades reaches below zero (on a log axis: down to the axis edge), and a binomial ± SE bar is
empty at a frequency of 0 or 1. The percentile bootstrap interval of a mean of positive values lies between their
smallest and largest value, and the Wilson score interval of a frequency lies in [0, 1] with a non-zero width at 0
and 1.
"""
from __future__ import annotations

import math

import numpy as np

__all__ = ["mean_se", "bootstrap_mean_interval", "wilson_interval"]


def mean_se(samples):
    """(mean, SE = sample sd/√N) of a 1-D sample (NaNs are not allowed)."""
    samples = np.asarray(samples, dtype=float).ravel()
    if samples.size < 2 or not np.all(np.isfinite(samples)):
        raise ValueError(f"samples must hold >= 2 finite values, got {samples.size} with "
                         f"{int((~np.isfinite(samples)).sum())} non-finite")
    return float(samples.mean()), float(samples.std(ddof=1) / math.sqrt(samples.size))


def _level(level):
    if isinstance(level, bool) or not 0.0 < float(level) < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    return float(level)


def bootstrap_mean_interval(values, level=0.68, resamples=4000, seed=0):
    """(low, high): the percentile bootstrap interval of the mean of ``values`` at coverage ``level``.

    ``values``: 1-D, finite, at least one. Each bound is a mean of resampled values, so both lie in
    [min(values), max(values)]: positive data give a positive lower bound (a bar that a log axis can draw),
    however skewed the values. The default level 0.68 matches ± 1 SE for normally distributed means.
    ``resamples`` (integer ≥ 100) resamples drawn with the generator seeded by ``seed`` (reproducible).
    """
    values = np.asarray(values, dtype=float)
    if values.ndim != 1 or values.size == 0 or not np.isfinite(values).all():
        raise ValueError(f"values must be a non-empty 1-D array of finite numbers, got shape {values.shape}")
    level = _level(level)
    if isinstance(resamples, bool) or int(resamples) != resamples or resamples < 100:
        raise ValueError(f"resamples must be an integer >= 100, got {resamples!r}")
    rng = np.random.default_rng(seed)
    means = values[rng.integers(0, values.size, size=(int(resamples), values.size))].mean(axis=1)
    low, high = np.quantile(means, [(1 - level) / 2, (1 + level) / 2])
    return float(low), float(high)


def wilson_interval(successes, trials, level=0.68):
    """(low, high): the Wilson score interval of a binomial frequency ``successes``/``trials`` at ``level``.

    It lies in [0, 1], contains the frequency, and has a non-zero width at 0 and ``trials`` successes, where the
    binomial ± SE bar √(p(1 − p)/N) is empty (scipy's ``binomtest(...).proportion_ci(method="wilson")``).
    ``successes`` an integer in [0, trials], ``trials`` an integer ≥ 1.
    """
    from scipy.stats import binomtest

    level = _level(level)
    if isinstance(trials, bool) or int(trials) != trials or trials < 1:
        raise ValueError(f"trials must be an integer >= 1, got {trials!r}")
    if isinstance(successes, bool) or int(successes) != successes or not 0 <= successes <= trials:
        raise ValueError(f"successes must be an integer in [0, trials = {trials}], got {successes!r}")
    interval = binomtest(int(successes), int(trials)).proportion_ci(confidence_level=level, method="wilson")
    return float(interval.low), float(interval.high)
