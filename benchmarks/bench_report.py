"""The report of ``bench_deep_linear.py``: agreement with theory, convergence, times, where the time goes.

Times are by ``phase_timer.bench_clock``: process CPU seconds on NumPy, wall seconds on a GPU.

Theory is each method record's ``flow_risk_finite`` (:mod:`transfertheory.theory.methods`): what gradient flow
converges to at the simulated size (fine-tuning: a Monte Carlo of the corrected limit, with its SE).
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from transfertheory.theory.methods import get_method

GTOL = 1e-6  # run_transfer_experiment's default convergence criterion ‖∇L‖ ≤ tol


def flow_theory(method: str, n: int, d: int, theta: float, sigma: float) -> tuple[float, float]:
    """(mean, SE) of the finite-size expected risk of what gradient flow converges to: the method record's
    ``flow_risk_finite`` (exact for scratch and linear transfer, SE 0; for fine-tuning a Monte Carlo of the
    corrected limit, docs/errata.md); +inf at the interpolation peak |n − d| ≤ 1."""
    mean, se = get_method(method).flow_risk_finite(n, d, theta, sigma)
    return float(mean), float(se)


def summarize(tidy: pd.DataFrame, d, theta, sigma):
    rows = []
    for (method, n), grp in tidy.groupby(["method", "n"], sort=False):
        theory, theory_se = flow_theory(method, int(n), d, theta, sigma)
        row = dict(method=method, n=int(n), theory=theory, theory_se=theory_se)
        for impl in ("baseline", "simulator", "limit"):
            r = grp.loc[grp.impl == impl, "risk"].to_numpy()
            mean = float(np.mean(r)) if r.size else np.nan
            se = float(np.std(r, ddof=1) / math.sqrt(r.size)) if r.size > 1 else np.nan
            row[f"{impl}_mean"], row[f"{impl}_se"] = mean, se
            finite = math.isfinite(theory)
            row[f"{impl}_err"] = abs(mean - theory) if finite else np.nan
            row[f"{impl}_z"] = (mean - theory) / math.hypot(se, theory_se) if finite and se > 0 else np.nan
        lim = grp[grp.impl == "limit"].set_index("instance")["risk"]
        for impl in ("baseline", "simulator"):
            sub = grp[grp.impl == impl].set_index("instance")
            row[f"{impl}_gap"] = float(np.mean(np.abs(sub["risk"] - lim.reindex(sub.index))))
        base = grp[grp.impl == "baseline"]
        sim = grp[grp.impl == "simulator"]
        row["baseline_grad_median"] = float(base["grad_norm"].median())
        row["baseline_grad_max"] = float(base["grad_norm"].max())
        row["baseline_frac_loss_lt_1e6"] = float((base["loss"] < 1e-6).mean())
        row["baseline_frac_grad_le_tol"] = float((base["grad_norm"] <= GTOL).mean())
        row["simulator_converged"] = float(sim["converged"].astype(float).mean())
        row["simulator_grad_max"] = float(sim["grad_norm"].max())
        row["simulator_t_final_mean"] = float(sim["t_final"].mean()) if "t_final" in sim else np.nan
        rows.append(row)
    return pd.DataFrame(rows)


def fmt(x, spec=".4f"):
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "—"
    if isinstance(x, float) and math.isinf(x):
        return "+inf"
    if abs(x) >= 1e4:
        return format(x, ".1e")
    return format(x, spec)


def print_report(summary, times, sim_df, timer, args, d, eta, steps, flow_time_gd):
    """The four sections of the report: agreement with theory, convergence, times, the simulator's time."""
    _print_agreement(summary, args, d)
    _print_convergence(summary, sim_df, times, eta, steps, flow_time_gd)
    _print_wall_times(summary, times, timer, args, steps)
    _print_breakdown(times, sim_df, timer)


def _print_agreement(summary, args, d):
    print()
    print("== agreement with finite-size theory of the gradient-flow limit (method records' flow_risk_finite) ==")
    print("mean risk ± SE over instances; err = |mean − theory|; z = (mean − theory)/√(SE² + SE_theory²);")
    print("'limit' = the t→∞, α→0 limit evaluated on the same draws (X⁺y; bβ_s; fine-tuning: the corrected")
    print("limit X⁺y + c(I − P)β_s of docs/errata.md): its deviation from theory is sampling error only.")
    hdr = (f"{'method':9s}{'n':>5s}{'theory':>9s} | {'baseline':>17s}{'err':>8s}{'z':>7s} | "
           f"{'simulator':>17s}{'err':>8s}{'z':>7s} | {'limit':>8s}{'z':>7s}")
    print(hdr)
    print("-" * len(hdr))
    for r in summary.itertuples():
        print(f"{r.method:9s}{r.n:5d}{fmt(r.theory):>9s} | "
              f"{fmt(r.baseline_mean):>8s} ± {fmt(r.baseline_se):<6s}{fmt(r.baseline_err):>8s}{fmt(r.baseline_z, '.2f'):>7s} | "
              f"{fmt(r.simulator_mean):>8s} ± {fmt(r.simulator_se):<6s}{fmt(r.simulator_err):>8s}{fmt(r.simulator_z, '.2f'):>7s} | "
              f"{fmt(r.limit_mean):>8s}{fmt(r.limit_z, '.2f'):>7s}")
    inf_rows = summary[~np.isfinite(summary.theory)]
    if len(inf_rows):
        which = ", ".join(f"{m} n = {n}" for m, n in zip(inf_rows.method, inf_rows.n))
        print(f"{which} (|n − d| ≤ 1): exact expected risk is +inf (σ > 0); these rows are "
              "reported but EXCLUDED from the error comparison.")
    ft_rows = [r for r in summary.itertuples() if r.method == "finetune" and r.n < d]
    if ft_rows:
        finetune = get_method("finetune")
        shifts = ", ".join(f"n = {r.n}: {r.theory - finetune.paper_risk_finite(r.n, d, args.theta, args.sigma):+.4f} "
                           f"(Monte Carlo SE {r.theory_se:.4f})" for r in ft_rows)
        print(f"fine-tuning theory is a Monte Carlo of the corrected gradient-flow limit (docs/errata.md); FaF Eq. 142's "
              f"c = 1 formula would differ by {shifts}.")


def _print_convergence(summary, sim_df, times, eta, steps, flow_time_gd):
    print()
    print("== convergence (fixed-step baseline vs adaptive flow) ==")
    print(f"baseline: {steps} GD steps, η = {eta:g} (flow time {flow_time_gd:g}); "
          "gap = mean |R − R_limit| per instance on the same draws")
    hdr = (f"{'method':9s}{'n':>5s} | {'base ‖∇‖ med':>13s}{'max':>10s}{'‖∇‖≤1e-6':>9s}{'loss<1e-6':>10s}{'gap':>10s} | "
           f"{'sim conv':>9s}{'‖∇‖ max':>10s}{'t_final':>9s}{'gap':>10s}")
    print(hdr)
    print("-" * len(hdr))
    for r in summary.itertuples():
        print(f"{r.method:9s}{r.n:5d} | {r.baseline_grad_median:13.2e}{r.baseline_grad_max:10.2e}"
              f"{r.baseline_frac_grad_le_tol:9.2f}"
              f"{r.baseline_frac_loss_lt_1e6:10.2f}"
              f"{r.baseline_gap:10.2e} | {r.simulator_converged:9.2f}{r.simulator_grad_max:10.2e}"
              f"{fmt(r.simulator_t_final_mean, '.0f'):>9s}{r.simulator_gap:10.2e}")
    unconv = sim_df[~sim_df["converged"].astype(bool)]
    if len(unconv):
        counts = unconv.groupby(["method", "n"])["status"].value_counts()
        print("simulator rows not converged: " + ", ".join(f"{m} n={n} {st}: {c}" for (m, n, st), c in counts.items()))
    print(f"baseline pretraining: ‖∇‖ = {times['pretrain_grad_norm']:.2e}, loss = {times['pretrain_loss']:.2e}; "
          f"simulator pretraining: {sim_df.attrs.get('pretrain')}")
    reached = summary[np.isfinite(summary.theory)]
    frac = float(reached.baseline_frac_grad_le_tol.mean())
    print(f"did the fixed-step baseline reach its limit? ‖∇‖ ≤ {GTOL:g} (the simulator's criterion) in "
          f"{100 * frac:.0f}% of the finite-theory instances: " + ("yes" if frac == 1 else "NO, it stopped at its step limit")
          + "; 'gap' is the resulting risk difference to the limit formula")



def _print_wall_times(summary, times, timer, args, steps):
    print()
    print("== times (same process, same draws; CPU seconds on NumPy, wall seconds on a GPU) ==")
    tb, ts = times["total"], times["simulator"]
    tgt = ", ".join(f"n={n}: {t:.2f}" for n, t in times["target"].items())
    lin = ", ".join(f"n={n}: {t:.2f}" for n, t in times["linear"].items())
    print(f"baseline : {tb:8.2f} s  (pretrain {times['pretrain']:.2f}; scratch+finetune GD {tgt}; linear GD {lin})")
    print(f"simulator: {ts:8.2f} s  (run_transfer_experiment, median of {args.repeat} runs after a first, cold run of "
          f"{times['simulator_cold']:.2f} s; ratio to the cold run {tb / times['simulator_cold']:.1f}x)")
    verdict = ("smoke run: sizes too small for a speed verdict" if args.quick
               else f"target >= 60x: {'met' if tb / ts >= 60 else 'NOT met'}")
    print(f"ratio baseline/simulator: {tb / ts:.1f}x  ({verdict})")
    if "simulator_without_verdict" in times:
        _print_verdict_pairs(times, tb)
    floor, cost = times["floor"], times["per_evaluation"]
    print(f"per instance-evaluation: {1e6 * ts / times['evaluations']:.2f} µs for the whole run ({times['evaluations']} "
          f"evaluations), {1e6 * cost:.2f} µs in the target flows; floor (the two d×d matrix–vector products alone, "
          f"batch {round(times['mean_batch'])} = the flows' mean batch per stage, same run) {1e6 * floor:.2f} µs: "
          f"target flows at {cost / floor:.2f}x the floor (target <= 2x)")
    fin = summary[np.isfinite(summary.theory)]
    # the implementations share their draws, so sampling error cancels in the comparison: a row counts as
    # "equal or better" when the simulator's |err| exceeds the baseline's by at most 0.1 SE
    ok = fin.simulator_err <= fin.baseline_err + 0.1 * fin[["baseline_se", "simulator_se"]].max(axis=1)
    print(f"agreement with theory (the {len(fin)} rows with finite theory): simulator equal (within 0.1 SE) or "
          f"better in {int(ok.sum())}/{len(fin)} rows; sum |err| baseline {fin.baseline_err.sum():.4f}, "
          f"simulator {fin.simulator_err.sum():.4f}; max |z| baseline {np.nanmax(np.abs(fin.baseline_z)):.2f}, "
          f"simulator {np.nanmax(np.abs(fin.simulator_z)):.2f}")
    # decomposition: ratio = (evaluation-count ratio) × (cost-per-evaluation ratio), target flows only
    base_evals = steps * 2 * args.draws * len(times["target"])
    base_t = sum(times["target"].values())
    sim_evals = timer.evals.get("target flows", 0) if timer is not None else 0
    sim_t = timer.excl.get("target flows", 0.0) if timer is not None else 0.0
    if sim_evals and sim_t > 0:
        print(f"target training only (scratch + fine-tune): baseline {base_t:.2f} s for {base_evals} instance-steps "
              f"({1e3 * base_t / base_evals:.4f} ms each); simulator {sim_t:.2f} s for {sim_evals} instance-gradient "
              f"evaluations ({1e3 * sim_t / sim_evals:.4f} ms each): ratio {base_t / sim_t:.1f}x = "
              f"{base_evals / sim_evals:.2f} (fewer evaluations) x {(base_t / base_evals) / (sim_t / sim_evals):.2f} "
              "(cheaper evaluation)")


def _print_verdict_pairs(times, baseline_seconds):
    """The simulator without the early verdict (every unconverged flow to max_time), timed alternately with
    it, and the check that the verdict stopped only rows that do not converge without it."""
    tw, with_df, without_df = times["simulator_without_verdict"], times["with_verdict_df"], times["without_verdict_df"]
    stopped = (with_df.status == "unreachable").to_numpy()
    same_converged = bool((with_df.converged.to_numpy() == without_df.converged.to_numpy()).all())
    only_max_time = bool((without_df.status.to_numpy()[stopped] == "max_time").all())
    print(f"without the early verdict: {tw:8.2f} s (median, runs alternating with the above), ratio "
          f"baseline/simulator {baseline_seconds / tw:.1f}x; paired time ratio without/with the verdict "
          f"{times['verdict_paired_ratio']:.2f}; {int(stopped.sum())} rows stopped as unreachable, all of them "
          f"max_time without the verdict: {'yes' if only_max_time else 'NO'}; the same rows converge with and "
          f"without: {'yes' if same_converged else 'NO'}")


def _print_breakdown(times, sim_df, timer):
    print()
    print("== where the simulator's time goes ==")
    if timer is not None:
        total = times["simulator"]
        accounted = 0.0
        for label, t in sorted(timer.excl.items(), key=lambda kv: -kv[1]):
            ev = timer.evals.get(label, 0)
            extra = f", {ev} instance-gradient evaluations, {1e3 * t / ev:.3f} ms/eval" if ev else ""
            print(f"  {label:28s}{t:8.2f} s  {100 * t / total:5.1f}%{extra}")
            accounted += t
        print(f"  {'other (DataFrame, glue)':28s}{total - accounted:8.2f} s  {100 * (total - accounted) / total:5.1f}%")
        for flow in timer.flows:
            if flow["label"] != "target flows":
                continue
            tail, nb = timer.tail(flow)
            print(f"  target flow batch of {flow['B']} instances: {flow['wall']:.2f} s, {flow['evaluations']} evaluations, "
                  f"max {flow['max_stages']} RKC stages, {flow['rejected']} rejected steps; "
                  f"{nb} instances end unconverged, the last {tail:.2f} s ({100 * tail / max(flow['wall'], 1e-12):.0f}%) "
                  "run only those")
    stats = sim_df.attrs.get("integrator", {})
    print(f"  integrator totals: {stats}")
