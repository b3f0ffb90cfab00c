r"""FaF Fig. 4's statistics: the grid and boundary tables of a
:func:`~transfertheory.sim.relu_teacher.experiment.run_transfer_experiment` table.

:func:`summarize` gives, per (μ, n), the mean risks (over teachers × data sets: the mean of the per-teacher means)
and the transferability of the paired (teacher, data set) units, and per μ the boundary of negative transfer:
FaF's n_c(μ) = (A/‖P⊥ f_t*‖²)^{1/ν} and the finite-n boundary
(:func:`~transfertheory.theory.relu.finite_n_boundary`) from the scratch power law A n^{−ν}
(:func:`scratch_power_law`) and the mean ‖P⊥ f_t*‖², and the simulated sign change. Scratch flows that did not
converge are left out of every mean, their paired units out of the transferability
(:func:`without_unconverged_scratch`). Used by the figure (:mod:`transfertheory.figures.faf_fig4`) and by the claim
of the finite-n boundary (:mod:`transfertheory.claims.faf_relu_sim`).

The transferability T(n) = R_scratch(n) − R_linear(n) is measured on (teacher, data set) units; the data sets of
one teacher share its pretrained student and ‖P⊥ f_t*‖², so the units are clustered by teacher. The functions
below locate the n where the mean of T first turns from positive to non-positive (log-linear interpolation), give
the SE of the per-teacher means, and a two-stage bootstrap interval of the sign change (teachers, then data sets
within them), with resamples that have no sign change in the n range counted at the range's end. NaN units (a flow
left out) are left out of every mean.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np  # pandas is imported where tables are built: a --help needs none

from ...theory.relu import finite_n_boundary, power_law_fit
from .experiment import status_counts

__all__ = ["TRANSFER_METHODS", "GRID_COLUMNS", "BOUNDARY_COLUMNS", "summarize", "boundary_table",
           "scratch_power_law", "paired_transferability", "without_unconverged_scratch", "pretraining",
           "convergence_counts", "SIGN_CHANGE_RESAMPLES", "sign_change", "sign_side", "clustered_mean_se",
           "column_mean", "sign_change_with_interval", "last_sign_change", "BoundaryOffsets", "boundary_offsets"]

#: the transfer methods of the figure's tables, each paired with scratch training
TRANSFER_METHODS = ("linear", "linear_minnorm")
#: the grid table's columns (one row per (μ, n)) and their definitions
GRID_COLUMNS = {
    "mu": "fraction μ of target-teacher neurons absent from the source",
    "n": "target samples",
    "scratch_risk": "mean over teachers × data sets of E(f − f_t*)² of the converged scratch flows",
    "scratch_risk_se": "its standard error, over the per-teacher means (units of one teacher share it)",
    "linear_risk": "mean E(f − f_t*)² of linear transfer (gradient flow on the output weights)",
    "minnorm_risk": "mean E(f − f_t*)² of kernel interpolation (min-norm least squares)",
    "transferability": "mean of (R_scratch − R_linear)/Var f_t* over paired (teacher, data set)",
    "transferability_se": "its standard error, over the per-teacher means (units of one teacher share the "
                          "pretrained student and ‖P⊥ f_t*‖²)",
    "transferability_minnorm": "mean of (R_scratch − R_minnorm)/Var f_t*",
    "pperp": "mean ‖P⊥ f_t*‖², P on the pretrained student's features",
    "converged_scratch": "fraction of scratch flows that converged (‖m∇L̂‖ ≤ gtol or FaF's loss ≤ 1e-6) within the "
                         "time budget (the others end at max_time and are left out of the means, marked on the "
                         "figure)",
    "converged_linear": "fraction of linear-transfer flows that met L̂ − min L̂ ≤ 1e-6 within the time budget",
    "scratch_loss_max": "largest final training loss ½n⁻¹Σ(f(xᵢ) − yᵢ)² of the scratch flows",
    "linear_loss_max": "largest final training loss of the linear-transfer flows",
    "runs": "paired (teacher, data set) units",
}
BOUNDARY_COLUMNS = {
    "mu": "fraction μ",
    "pperp": "mean over teachers of ‖P⊥ f_t*‖² (pretrained student)",
    "pperp_se": "its standard error",
    "pperp_fraction": "mean ‖P⊥ f_t*‖²/‖f_t*‖² (pretrained student)",
    "pperp_fraction_se": "its standard error",
    "pperp_source_fraction": "mean ‖P⊥ f_t*‖²/‖f_t*‖², P on the source teacher's features",
    "n_c": "predicted boundary (A/‖P⊥ f_t*‖²)^{1/ν}",
    "n_c_se": "its delta-method standard error (fit and ‖P⊥‖² uncertainty)",
    "n_c_finite": "finite-n boundary: the largest n > m + 1 where A n^{−ν} meets the least-squares transfer risk "
                  "‖P⊥ f_t*‖²(n − 1)/(n − m − 1); NaN when transfer is negative at every n > m + 1",
    "n_c_finite_se": "its delta-method standard error (fit and ‖P⊥‖² uncertainty)",
    "n_c_finite_onset": "the smaller root: transfer negative between m + 1 and it (NaN with n_c_finite)",
    "n_c_largest_n": "the same with ‖P⊥ f_t*‖² replaced by the mean linear-transfer risk at the largest n (diagnostic: "
                     "where the power law meets the transfer risk actually reached)",
    "n_sign_linear": "simulated sign change of the mean transferability (linear); NaN if none in the n range",
    "n_sign_linear_lo": "bootstrap 2.5% quantile (teachers resampled, then data sets within them; a resample "
                        "without a sign change counts as the smallest n if it lies below the range, the largest if above)",
    "n_sign_linear_hi": "bootstrap 97.5% quantile (same censoring)",
    "n_sign_linear_found": "fraction of bootstrap resamples with a sign change inside the n range",
    "n_sign_linear_side": "where a missing sign change lies: below (≤ 0 at every n) or above the n range (> 0 at the "
                          "largest n)",
    "n_sign_minnorm": "simulated sign change for kernel interpolation",
    "n_sign_minnorm_lo": "bootstrap 2.5% quantile (same resampling and censoring)",
    "n_sign_minnorm_hi": "bootstrap 97.5% quantile",
    "n_sign_minnorm_found": "fraction of bootstrap resamples with a sign change inside the n range",
    "pretrain_status": "status counts of the pretraining flows at this μ (one per teacher)",
    "pretrain_loss_ratio": "largest pretrained population loss / its value at initialization over the teachers",
}


def summarize(df, seed=0):
    """(grid table :data:`GRID_COLUMNS`, boundary table :data:`BOUNDARY_COLUMNS`, scratch power law) of an
    experiment with the methods ``scratch`` and :data:`TRANSFER_METHODS`; scratch flows that did not converge are
    left out of the means (:func:`without_unconverged_scratch`). ``seed`` seeds the sign changes' bootstrap."""
    import pandas as pd

    df = without_unconverged_scratch(df)  # (the risks only: ``converged`` counts every flow)
    cells = df.groupby(["method", "mu", "n"])
    converged, loss_max = cells.converged.mean(), cells.loss.max()
    per_teacher = df.groupby(["method", "mu", "n", "teacher"]).risk.mean().groupby(["method", "mu", "n"])
    mean, se = per_teacher.mean(), per_teacher.sem()
    paired = {m: paired_transferability(df, m) for m in TRANSFER_METHODS}
    mus, ns = sorted(df.mu.unique()), sorted(df.n.unique())
    fit = scratch_power_law(df)
    rows = []
    for mu in mus:
        _, teachers, linear = paired["linear"][mu]
        transfer, transfer_se = clustered_mean_se(teachers, linear)
        minnorm = column_mean(paired["linear_minnorm"][mu][2])
        pperp = df[(df.method == "linear") & (df.mu == mu)].groupby("n").pperp.mean()
        for j, n in enumerate(ns):
            rows.append(dict(mu=mu, n=n, scratch_risk=mean["scratch", mu, n], scratch_risk_se=se["scratch", mu, n],
                             linear_risk=mean["linear", mu, n], minnorm_risk=mean["linear_minnorm", mu, n],
                             transferability=transfer[j], transferability_se=transfer_se[j],
                             transferability_minnorm=minnorm[j], pperp=pperp[n],
                             converged_scratch=converged["scratch", mu, n], converged_linear=converged["linear", mu, n],
                             scratch_loss_max=loss_max["scratch", mu, n], linear_loss_max=loss_max["linear", mu, n],
                             runs=linear.shape[0]))
    return pd.DataFrame(rows, columns=list(GRID_COLUMNS)), boundary_table(df, fit, paired, seed), fit


def boundary_table(df, fit, paired, seed=0):
    """The boundary table (:data:`BOUNDARY_COLUMNS`, one row per μ) of an experiment whose unconverged scratch flows
    are left out (:func:`without_unconverged_scratch`), from its scratch power law ``fit`` and its ``paired``
    transferability {method: :func:`paired_transferability`} (``linear`` and, optionally, ``linear_minnorm``: the
    columns of a method not given are NaN); ``seed`` seeds the sign changes' bootstrap."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    pre = pretraining(df)
    norms = df[df.method == "scratch"].groupby("teacher").target_norm_sq.first()
    rows = []
    for mu in sorted(df.mu.unique()):
        teachers = pre[pre.mu == mu].set_index("teacher")
        fraction, source = teachers.pperp / norms, teachers.pperp_source / norms
        pperp, pperp_se = teachers.pperp.mean(), teachers.pperp.sem() if len(teachers) > 1 else 0.0
        n_c, n_c_se = fit.boundary(pperp, pperp_se)
        finite = finite_n_boundary(fit, pperp, int(df.m.iloc[0]), pperp_se)
        reached = df[(df.method == "linear") & (df.mu == mu) & (df.n == df.n.max())].risk.mean()
        row = dict(mu=mu, pperp=pperp, pperp_se=pperp_se, pperp_fraction=fraction.mean(),
                   pperp_fraction_se=fraction.sem() if len(teachers) > 1 else 0.0,
                   pperp_source_fraction=source.mean(), n_c=n_c, n_c_se=n_c_se, n_c_finite=finite.n_c,
                   n_c_finite_se=finite.n_c_se, n_c_finite_onset=finite.n_onset,
                   n_c_largest_n=fit.boundary(reached)[0], pretrain_status=status_counts(teachers.status),
                   pretrain_loss_ratio=float((teachers.loss / teachers.initial_loss).max()))
        for method, units_by_mu in paired.items():
            tag = "minnorm" if method == "linear_minnorm" else method
            ns, unit_teachers, units = units_by_mu[mu]
            (row[f"n_sign_{tag}"], row[f"n_sign_{tag}_lo"], row[f"n_sign_{tag}_hi"],
             row[f"n_sign_{tag}_found"]) = sign_change_with_interval(ns, unit_teachers, units, rng)
            if tag == "linear":
                row["n_sign_linear_side"] = sign_side(column_mean(units))
        rows.append(row)
    return pd.DataFrame(rows, columns=list(BOUNDARY_COLUMNS))


def without_unconverged_scratch(df):
    """The experiment's table with the risks of every scratch flow that did not converge set to NaN: such a flow is
    left out of the scratch means and its paired (teacher, data set) unit out of the transferability (it is counted
    and marked on the figure, not averaged in)."""
    stopped = (df.method == "scratch") & ~df.converged.astype(bool)
    return df.assign(risk=df.risk.mask(stopped), risk_normalized=df.risk_normalized.mask(stopped))


def scratch_power_law(df):
    """:func:`~transfertheory.theory.relu.power_law_fit` of the mean scratch risk per n (the mean of the per-teacher
    means) of an experiment whose unconverged scratch flows are left out (:func:`without_unconverged_scratch`);
    ValueError when fewer than 3 sample sizes have a converged flow."""
    scratch = df[(df.method == "scratch") & (df.mu == df.mu.min())]
    risk = scratch.groupby(["n", "teacher"]).risk.mean().groupby("n").mean()
    fitted = risk.notna().to_numpy()  # an n whose every scratch flow stopped at the budget has no mean
    if fitted.sum() < 3:
        raise ValueError(f"the scratch flows converged at {int(fitted.sum())} of the sample sizes {list(risk.index)}; "
                         "the power-law fit needs 3: raise max_time or take smaller n")
    return power_law_fit(risk.index.to_numpy(float)[fitted], risk.to_numpy()[fitted])


def paired_transferability(df, method):
    """Normalized transferability of ``method`` per μ: dict μ → (ns, teacher of each unit, (units × n) array)."""
    keys = ["mu", "n", "teacher", "draw"]
    scratch = df[df.method == "scratch"].set_index(keys).risk_normalized
    other = df[df.method == method].set_index(keys).risk_normalized
    table = (scratch - other.reindex(scratch.index)).unstack("n")
    return {mu: (np.asarray(part.columns, dtype=float), part.index.get_level_values("teacher").to_numpy(),
                 part.to_numpy()) for mu, part in table.groupby(level="mu")}


def pretraining(df):
    """One row per (μ, teacher) of an experiment's pretraining flows (``mu, teacher, pperp, pperp_source, status,
    converged, loss, initial_loss``), from its linear-transfer rows: the same whether the table was computed here
    or read from a sweep store."""
    rows = df[df.method == "linear"].drop_duplicates(["mu", "teacher"]).sort_values(["mu", "teacher"])
    names = {f"pretrain_{k}": k for k in ("status", "converged", "loss", "initial_loss")}
    return (rows[["mu", "teacher", "pperp", "pperp_source", *names]].rename(columns=names)
            .astype({"converged": bool}).reset_index(drop=True))


def convergence_counts(df):
    """{"pretraining" | "scratch" | "linear": (converged, total, largest final training loss)} of an experiment.

    Scratch flows are counted once: the table repeats them per μ (paired rows).
    """
    flows = {"pretraining": pretraining(df),
             "scratch": df[(df.method == "scratch") & (df.mu == df.mu.min())],
             "linear": df[df.method == "linear"]}
    return {name: (int(table.converged.sum()), len(table), float(table.loss.max())) for name, table in flows.items()}


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
    """One two-stage bootstrap resample of the units ``groups`` (their indices per teacher): the teachers picked
    with replacement, and the unit indices drawn with replacement within each of them."""
    picked = rng.integers(0, len(groups), size=len(groups))
    return picked, [groups[g][rng.integers(0, groups[g].size, size=groups[g].size)] for g in picked]


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
    boot = [_censored_sign_change(ns, column_mean(units[np.concatenate(_cluster_resample(groups, rng)[1])]))
            for _ in range(resamples)]
    values, found = np.array([b[0] for b in boot]), np.array([b[1] for b in boot])
    lo, hi = np.quantile(values, [0.025, 0.975])
    return point, float(lo), float(hi), float(found.mean())


def last_sign_change(ns, values):
    """log-linear interpolated n above which ``values`` (over increasing ``ns``) stay ≤ 0: between the last value > 0
    and the next. NaN when no value is > 0 (the change lies below the range) or the last one is (above it).

    Unlike :func:`sign_change` (the first turn), a dip to ≤ 0 followed by positive values, as noise makes near
    the interpolation threshold, is not taken for the boundary above which transfer is negative.
    """
    values = np.asarray(values, dtype=float)
    positive = np.flatnonzero(values > 0)
    if positive.size == 0 or positive[-1] == len(ns) - 1:
        return float("nan")
    return sign_change(ns[positive[-1]:], values[positive[-1]:])


class BoundaryOffsets(NamedTuple):
    """:func:`boundary_offsets`: the simulated boundary, the predicted ones and the bootstrap SE of their offsets."""

    n_sign: float  #: :func:`last_sign_change` of the mean linear transferability (NaN if none in the n range)
    n_c_finite: float  #: finite-n boundary (:func:`~transfertheory.theory.relu.finite_n_boundary`)
    n_c_finite_se: float  #: its delta-method SE
    n_c: float  #: FaF's (A/‖P⊥ f_t*‖²)^{1/ν}
    n_c_se: float  #: its delta-method SE
    finite_offset_se: float  #: bootstrap SD of log n_sign − log n_c_finite (resamples with a sign change in range)
    paper_offset_se: float  #: bootstrap SD of log n_sign − log n_c
    censored: float  #: fraction of resamples without a sign change in the n range (or without a finite-n root)
    resamples: int


def boundary_offsets(df, m, rng, resamples=SIGN_CHANGE_RESAMPLES):
    """The boundary of negative transfer of a one-μ experiment (scratch and linear transfer; unconverged scratch flows
    left out, :func:`without_unconverged_scratch`) and the offsets log n_sign − log n_c of the simulated boundary from
    the finite-n and FaF's, with their SE from one teacher-clustered two-stage bootstrap of the whole computation:
    each resample (teachers, then data sets within them) refits the scratch power law on its per-teacher mean risks,
    averages its teachers' ‖P⊥ f_t*‖², solves for both boundaries and locates its sign change. The simulated and the
    predicted boundaries come from the same teachers and share their ‖P⊥ f_t*‖² and scratch risks, so the SE of the
    offset is not the two SEs combined as if independent. A resample without a sign change in the n range (or without
    a finite-n root, or a power law) has no offset: it is counted in ``censored`` and left out of the SDs (an SE
    from censored resamples would be cut off at the grid)."""
    (mu,) = df.mu.unique()
    ns, teachers, transfer = paired_transferability(df, "linear")[mu]
    risk = df[df.method == "scratch"].set_index(["teacher", "draw", "n"]).risk.unstack("n").to_numpy()  # same rows
    groups = [np.flatnonzero(teachers == t) for t in np.unique(teachers)]
    group_pperp = pretraining(df).set_index("teacher").pperp.loc[np.unique(teachers)].to_numpy()

    def boundaries(picked, units):
        """(sign change, finite n_c, its SE, FaF's n_c, its SE) of one set of teachers and their units; NaN where
        fewer than 3 sample sizes have a converged scratch flow (no power law)."""
        labels = np.repeat(np.arange(len(picked)), [len(u) for u in units])
        rows = np.concatenate(units)
        scratch_mean = clustered_mean_se(labels, risk[rows])[0]
        fitted = np.isfinite(scratch_mean)
        if fitted.sum() < 3:
            return (np.nan,) * 5
        fit = power_law_fit(ns[fitted], scratch_mean[fitted])
        p, p_se = group_pperp[picked].mean(), group_pperp[picked].std(ddof=1) / np.sqrt(len(picked))
        finite = finite_n_boundary(fit, p, m, p_se)
        return (last_sign_change(ns, clustered_mean_se(labels, transfer[rows])[0]), finite.n_c, finite.n_c_se,
                *fit.boundary(p, p_se))

    point = boundaries(np.arange(len(groups)), groups)
    offsets = []
    for _ in range(resamples):
        sign, finite, _, n_c, _ = boundaries(*_cluster_resample(groups, rng))
        offsets.append((np.log(sign / finite), np.log(sign / n_c)))
    offsets = np.array(offsets)
    kept = np.isfinite(offsets).all(axis=1)
    finite_sd, paper_sd = offsets[kept].std(axis=0, ddof=1) if kept.sum() > 1 else (np.nan, np.nan)
    return BoundaryOffsets(*map(float, point), float(finite_sd), float(paper_sd), float(1 - kept.mean()), resamples)
