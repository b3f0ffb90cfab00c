"""The intervals of :mod:`transfertheory.sim.statistics` (the MeRLin figure's bars): the bootstrap interval of a
mean and the Wilson interval of a frequency; ``mean_se`` is tested with the claims' comparisons."""
from __future__ import annotations

import numpy as np
import pytest

from transfertheory.sim import statistics


def test_bootstrap_interval_of_skewed_positive_values_is_positive_and_brackets_the_mean():
    losses = np.array([8e-5, 7e-5, 9e-5, 8e-5, 0.59, 8e-5, 7.5e-5, 8.5e-5])  # one failed seed of eight
    low, high = statistics.bootstrap_mean_interval(losses)
    assert 0 < losses.min() <= low < losses.mean() < high <= losses.max()
    assert statistics.bootstrap_mean_interval(losses) == (low, high)  # seeded: reproducible


def test_bootstrap_interval_of_normal_values_is_the_mean_plus_minus_one_standard_error():
    values = np.random.default_rng(1).normal(3.0, 2.0, 400)
    low, high = statistics.bootstrap_mean_interval(values)
    se = values.std(ddof=1) / np.sqrt(values.size)
    assert (high - low) / 2 == pytest.approx(se, rel=0.1)  # bootstrap noise at 4000 resamples: ~2 %
    assert (low + high) / 2 == pytest.approx(values.mean(), abs=0.1 * se)


@pytest.mark.parametrize("kwargs, match", [(dict(values=[]), "values"), (dict(values=[1.0, np.nan]), "values"),
                                           (dict(values=[[1.0]]), "values"), (dict(values=[1.0], level=1.0), "level"),
                                           (dict(values=[1.0], resamples=10), "resamples")])
def test_bootstrap_interval_rejects_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        statistics.bootstrap_mean_interval(**kwargs)


def test_wilson_interval_stays_in_the_unit_interval_and_is_not_empty_at_zero_and_all():
    assert statistics.wilson_interval(0, 10, level=0.95) == pytest.approx((0.0, 3.8415 / 13.8415), abs=1e-4)
    low, high = statistics.wilson_interval(30, 30)
    assert 0 < low < high == 1.0
    low, high = statistics.wilson_interval(14, 30)
    assert low < 14 / 30 < high


@pytest.mark.parametrize("trials", [5, 8, 9, 11, 12, 13, 19, 40])
def test_wilson_interval_contains_the_frequency_at_zero_and_all_successes(trials):
    """At 0 or all successes the interval's end is the frequency itself; rounding must not put it past it (a
    negative error bar stopped MeRLin's paper-size figure after 15 minutes: 9 of 9 successes)."""
    for successes in (0, trials):
        low, high = statistics.wilson_interval(successes, trials)
        assert low <= successes / trials <= high


@pytest.mark.parametrize("args, match", [((3, 2), "successes"), ((-1, 2), "successes"), ((1, 0), "trials"),
                                         ((1.5, 2), "successes")])
def test_wilson_interval_rejects_bad_counts(args, match):
    with pytest.raises(ValueError, match=match):
        statistics.wilson_interval(*args)
