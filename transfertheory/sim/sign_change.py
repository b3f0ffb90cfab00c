r"""Where a mean over sample sizes changes sign, with a teacher-clustered bootstrap interval (FaF Fig. 4e).

FaF §4's transferability T(n) = R_scratch(n) − R_linear(n) is measured on (teacher, data set) units; the data sets of
one teacher share its pretrained student and ‖P⊥ f_t*‖², so the units are clustered by teacher. These functions
locate the n where the mean of T first turns from positive to non-positive (log-linear interpolation), give the
SE of the per-teacher means, and a two-stage bootstrap interval of the sign change (teachers, then data sets within
them), with resamples that have no sign change in the n range counted at the range's end. NaN units (a flow left
out) are left out of every mean. Used by the figure (:mod:`transfertheory.figures.faf_fig4`) and by the claim of the finite-n boundary (:mod:`transfertheory.claims.faf_relu_sim`).
"""
from __future__ import annotations

import numpy as np

__all__ = ["SIGN_CHANGE_RESAMPLES", "sign_change", "sign_side", "clustered_mean_se", "column_mean",
           "sign_change_with_interval"]

#: bootstrap resamples of (teacher, data set) units for a sign change's interval (FaF Fig. 4's boundary)
SIGN_CHANGE_RESAMPLES = 400


def sign_change(ns, values):
    """log-linear interpolated n where ``values`` (over increasing ``ns``) first turns from > 0 to ≤ 0.

    NaN when it never does: ``sign_side`` tells whether the values are ≤ 0 at every n (the change lies below the
    range) or > 0 from their first positive value on (above it).
    """
    for k in range(len(ns) - 1):
        if values[k] > 0 >= values[k + 1]:
            frac = values[k] / (values[k] - values[k + 1])
            return float(np.exp(np.log(ns[k]) + frac * (np.log(ns[k + 1]) - np.log(ns[k]))))
    return float("nan")


def sign_side(values) -> str:
    """Where a missing sign change lies: "below" (≤ 0 at every n), "above" (> 0 from its first positive value to the
    largest n: negative values before it, e.g. at the interpolation threshold n ≈ m, are not the boundary) or ""
    (found)."""
    values = np.asarray(values)
    if np.isfinite(sign_change(np.arange(1, values.size + 1), values)):
        return ""
    return "below" if np.all(values <= 0) else "above"


def clustered_mean_se(teachers, values):
    """(mean, SE) over units clustered by teacher, along axis 0: the SE of the mean of the per-teacher means.

    Units of one teacher share its pretrained student and ‖P⊥ f_t*‖², so they are not independent; the per-teacher
    means are. With equally many data sets per teacher the mean equals the unit mean. SE NaN for one teacher. NaN
    values (units left out, e.g. an unconverged flow) are left out of their teacher's mean, a teacher with none out of
    the mean over teachers.
    """
    values = np.asarray(values, dtype=float)
    labels = np.unique(teachers)
    means = np.stack([column_mean(values[teachers == t]) for t in labels])
    mean, count = column_mean(means), np.sum(~np.isnan(means), axis=0)  # a teacher without units is left out
    with np.errstate(invalid="ignore", divide="ignore"):
        se = np.sqrt(np.nansum((means - mean) ** 2, axis=0) / (count - 1)) / np.sqrt(count)
    return mean, np.where(count > 1, se, np.nan)


def column_mean(values):
    """Mean along axis 0 without the NaN values (NaN, without a warning, where every value is NaN)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.nansum(values, axis=0) / np.sum(~np.isnan(values), axis=0)


def _cluster_resample(groups, rng):
    """Unit indices of one two-stage bootstrap resample: teachers with replacement, then data sets within each."""
    picked = rng.integers(0, len(groups), size=len(groups))
    return np.concatenate([groups[g][rng.integers(0, groups[g].size, size=groups[g].size)] for g in picked])


def _censored_sign_change(ns, values):
    """:func:`sign_change`, with a missing change counted as ns[0] (below the range) or ns[−1] (above it)."""
    found = sign_change(ns, values)
    if np.isfinite(found):
        return found, True
    return (float(ns[0]) if sign_side(values) == "below" else float(ns[-1])), False


def sign_change_with_interval(ns, teachers, units, rng, resamples=SIGN_CHANGE_RESAMPLES):
    """Sign change of the unit mean (units × n array ``units`` over increasing ``ns``; NaN units left out of the
    means), its teacher-clustered two-stage bootstrap 95% interval (censored resamples included) and the fraction of
    resamples with a sign change in the n range."""
    point = sign_change(ns, column_mean(units))
    groups = [np.flatnonzero(teachers == t) for t in np.unique(teachers)]
    boot = [_censored_sign_change(ns, column_mean(units[_cluster_resample(groups, rng)])) for _ in range(resamples)]
    values, found = np.array([b[0] for b in boot]), np.array([b[1] for b in boot])
    lo, hi = np.quantile(values, [0.025, 0.975])
    return point, float(lo), float(hi), float(found.mean())
