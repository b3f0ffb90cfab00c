"""The theorem tests, generated from the claims registry (one test per claim of the quick profile), and the registry's
own semantics (status mapping, reproducible points, records).

The tests are the pytest plugin's (:mod:`transfertheory.audit_plugin`, registered in conftest.py); ``python -m
transfertheory.verify`` runs the same tests with the audit table. They are marked ``theorem``: the default run
leaves them to the audit (setup.cfg), ``python -m pytest -m theorem`` runs only them.
"""
import math
import re

import numpy as np
import pytest
from hypothesis import strategies as st

from transfertheory import claims
from transfertheory.audit_plugin import ClaimTests
from transfertheory.claims import compare
from transfertheory.claims.registry import Claim, CheckResult, combine

QUICK = claims.get_profile("quick")

#: one test per registered claim (``--claims-profile`` chooses the profile; a claim is as bad as its worst point)
test_claims = ClaimTests()


# --------------------------------------------------------------------------- the records

#: the claims that docs/errata.md links to: their anchors and categories (only a paper error is KNOWN-ERRATUM)
ERRATA = {
    "faf.thm2.2.dudley": ("erratum-dudley", claims.PAPER_ERROR),
    "faf.eq27-28": ("erratum-eq27-28", claims.PAPER_ERROR),
    "faf.thm2.2.kl-constant": ("erratum-kl-constant", claims.SLIP),
    "faf.thm3.9.eq17": ("erratum-finetune-limit", claims.PAPER_ERROR),
    "faf.thm3.8.finite-n": ("erratum-ridge-finite-n", claims.REMARK),
    "faf.appD1.assumption22": ("erratum-assumption22", claims.REMARK),
    "merlin.thm2.bound-2-3": ("erratum-merlin-fit-bound", claims.REMARK),
    "tdr.thm2.scratch-sqrt": ("erratum-tdr-scratch-sqrt", claims.PAPER_ERROR),
    "mtl.lemma1.phi-prime-anil-inconsistent": ("erratum-mtl-phi-prime-anil", claims.SLIP),
    "mtl.lemma4.ntk-remainder-log": ("erratum-mtl-ntk-remainder", claims.SLIP),
    "mtl.lemma1.fresh-test-head": ("erratum-mtl-fresh-test-head", claims.CLARIFICATION),
    "mtl.fig1.lam-tau-trend": ("erratum-mtl-fig1-lam-tau", claims.PAPER_ERROR),
    "mtl.lemma1.phi-prime-mtl-last-line": ("erratum-mtl-phi-prime-mtl-last-line", claims.PAPER_ERROR),
}
#: claim-id prefix → how the claim's source names its paper
PAPERS = {"faf": "FaF", "merlin": "MeRLin", "tdr": "TDR", "mtl": "MTL"}


def test_erratum_claims_carry_their_anchors_and_categories():
    for claim_id, (anchor, category) in ERRATA.items():
        claim = claims.get_claim(claim_id)
        assert (claim.erratum, claim.category) == (anchor, category), claim_id
    anchors = {anchor: category for anchor, category in ERRATA.values()}
    for claim in claims.CLAIMS.values():
        assert (claim.expected == claims.KNOWN_ERRATUM) == (claim.category == claims.PAPER_ERROR), claim.id
        if claim.erratum:
            assert anchors.get(claim.erratum) == claim.category, claim.id


def test_every_faf_statement_of_the_package_is_registered_and_every_claim_is_well_formed():
    required = {"faf.eq10", "faf.eq10.finite", "faf.eq12", "faf.eq13", "faf.eq15", "faf.eq15.finite", "faf.eq16",
                "faf.eq17", "faf.lemma3.3", "faf.thm3.4", "faf.thm3.5", "faf.thm3.6", "faf.thm3.7", "faf.thm3.8",
                "faf.thm3.9.corrected", "faf.thm2.2.kl", "faf.fig5.no-correlation", *ERRATA}
    assert required <= set(claims.CLAIMS)
    for claim in claims.CLAIMS.values():
        paper = claim.id.split(".")[0]
        assert paper in PAPERS and re.fullmatch(r"[a-z]+\.[A-Za-z0-9.\-]+", claim.id), claim.id
        assert claim.source.startswith(PAPERS[paper]) and claim.statement and claim.kind in claims.KINDS
        assert claim.allowance == 0 or claim.allowance_reason.strip(), claim.id



# --------------------------------------------------------------------------- registry semantics


def _claim(check, expected=claims.PASS, strategy=None):
    erratum = "erratum-test" if expected == claims.KNOWN_ERRATUM else None
    category = claims.PAPER_ERROR if erratum else None
    return Claim("test.claim", "FaF test", "a statement", "exact", check, expected=expected, erratum=erratum,
                 category=category, strategy=strategy)


def _result(passed, paper_holds=False):
    return CheckResult(1.0, 2.0 if passed else 0.5, passed, paper_holds=paper_holds)


@pytest.mark.parametrize(
    "expected, result, status",
    [
        (claims.PASS, _result(True), claims.PASS),
        (claims.PASS, _result(False), claims.FAIL),
        (claims.KNOWN_ERRATUM, _result(True), claims.KNOWN_ERRATUM),
        (claims.KNOWN_ERRATUM, _result(False), claims.FAIL),
        (claims.KNOWN_ERRATUM, _result(False, paper_holds=True), claims.UNEXPECTED_PASS),
    ],
)
def test_status_of_a_check(expected, result, status):
    outcome = claims.check_point(_claim(lambda case: result, expected), {}, QUICK)
    assert outcome.status == status and outcome.result is result


def test_a_statistical_failure_is_confirmed_with_more_draws():
    """First stage unexpected → re-checked at CONFIRM_FACTOR × the draws; the second stage decides."""

    def flaky(case):  # fails at the profile's draws only: a false alarm
        z = 5.0 if case.profile.sim_draws == QUICK.sim_draws else 1.0
        return CheckResult(z, 4.0, z <= 4, z=z, threshold=4.0)

    outcome = claims.check_point(_claim(flaky), {}, QUICK)
    assert outcome.status == claims.PASS and outcome.first.z == 5.0 and outcome.result.z == 1.0

    def broken(case):  # a real discrepancy: its z grows with the draws
        z = 5.0 * (case.profile.sim_draws / QUICK.sim_draws) ** 0.5
        return CheckResult(z, 4.0, False, z=z, threshold=4.0)

    outcome = claims.check_point(_claim(broken), {}, QUICK)
    assert outcome.status == claims.FAIL and outcome.result.z == pytest.approx(10.0) and outcome.first.z == 5.0
    exact = claims.check_point(_claim(lambda case: _result(False)), {}, QUICK)  # no z: nothing to confirm
    assert exact.status == claims.FAIL and exact.first is None


def test_an_exception_in_a_check_is_an_error_not_a_crash():
    def broken(case):
        raise ZeroDivisionError("boom")

    outcome = claims.run(_claim(broken), QUICK)
    assert outcome.status == claims.ERROR and outcome.unexpected and "ZeroDivisionError: boom" in outcome.worst.error
    assert claims.check_point(_claim(lambda case: 1.0), {}, QUICK).status == claims.ERROR  # not a CheckResult


def test_points_are_reproducible_and_explore_draws_fresh_ones():
    claim = _claim(lambda case: _result(True), strategy=lambda p: st.fixed_dictionaries({"x": st.floats(0, 1)}))
    fixed = claims.points(claim, QUICK)
    assert len(fixed) == QUICK.examples and fixed == claims.points(claim, QUICK)
    explored = claims.points(claim, QUICK, explore=7, seed=3)
    assert len(explored) == 7 and explored == claims.points(claim, QUICK, explore=7, seed=3)
    assert explored != claims.points(claim, QUICK, explore=7, seed=4)
    assert claims.points(_claim(lambda case: _result(True)), QUICK) == [{}]


def test_a_dict_strategy_draws_the_points_of_its_fixed_dictionaries():
    """A strategy given as a dict name → strategy is drawn as st.fixed_dictionaries of it: the same points."""
    fields = {"x": st.floats(0, 1), "n": st.integers(1, 9)}
    as_dict = _claim(lambda case: _result(True), strategy=fields)
    as_function = _claim(lambda case: _result(True), strategy=lambda p: st.fixed_dictionaries(fields))
    assert claims.points(as_dict, QUICK) == claims.points(as_function, QUICK)
    assert claims.points(as_dict, QUICK, explore=5, seed=2) == claims.points(as_function, QUICK, explore=5, seed=2)


def test_fixed_points_do_not_depend_on_the_source_text(tmp_path, monkeypatch):
    """Hypothesis mixes numeric literals of the loaded local modules into its draws; a claim's fixed points must not
    move when a module with new literals is imported (as when the package gains a module)."""
    with_strategy = [c for c in claims.select(profile=QUICK) if c.strategy is not None]
    before = {c.id: claims.points(c, QUICK) for c in with_strategy}
    literals = ", ".join(f"{0.05 + 0.9 * k / 499:.17g}" for k in range(500)) + ", " + ", ".join(map(str, range(2, 500)))
    (tmp_path / "_fresh_literals.py").write_text(f"VALUES = [{literals}]\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    __import__("_fresh_literals")
    assert {c.id: claims.points(c, QUICK) for c in with_strategy} == before


def test_a_claim_is_as_bad_as_its_worst_point():
    strategy = lambda p: st.fixed_dictionaries({"x": st.floats(0, 1)})  # noqa: E731
    claim = _claim(lambda case: _result(case.params["x"] < 0.5), strategy=strategy)
    outcome = claims.run(claim, QUICK, explore=20, seed=1)
    assert outcome.status == claims.FAIL and outcome.worst.params["x"] >= 0.5
    assert all(p.params["x"] >= 0.5 for p in outcome.failing) and len(outcome.points) == 20


def test_case_seed_depends_on_the_point_and_fixes_the_draws():
    seen = []
    claim = _claim(lambda case: seen.append((case.seed, case.rng.standard_normal())) or _result(True))
    for params in ({"a": 1}, {"a": 1}, {"a": 2}):
        claims.check_point(claim, params, QUICK)
    assert seen[0] == seen[1] and seen[0][0] != seen[2][0]


def test_bad_records_and_lookups_raise_value_errors():
    with pytest.raises(ValueError, match="kind must be"):
        Claim("x", "FaF", "s", "guess", lambda c: None)
    with pytest.raises(ValueError, match="erratum anchor and a category"):
        Claim("x", "FaF", "s", "exact", lambda c: None, expected=claims.KNOWN_ERRATUM, erratum="erratum-x")
    with pytest.raises(ValueError, match="exactly for category 'paper error'"):
        Claim("x", "FaF", "s", "exact", lambda c: None, expected=claims.KNOWN_ERRATUM)
    with pytest.raises(ValueError, match="category must be one of"):
        Claim("x", "FaF", "s", "exact", lambda c: None, erratum="erratum-x", category="typo")
    with pytest.raises(ValueError, match="exactly for category 'paper error'"):
        Claim("x", "FaF", "s", "exact", lambda c: None, erratum="erratum-x", category=claims.SLIP,
              expected=claims.KNOWN_ERRATUM)
    with pytest.raises(ValueError, match="exactly for category 'paper error'"):
        Claim("x", "FaF", "s", "exact", lambda c: None, erratum="erratum-x", category=claims.PAPER_ERROR)
    with pytest.raises(ValueError, match="expected must be"):
        Claim("x", "FaF", "s", "exact", lambda c: None, expected="FAIL")
    with pytest.raises(ValueError, match="profiles must be"):
        Claim("x", "FaF", "s", "exact", lambda c: None, profiles=("huge",))
    with pytest.raises(ValueError, match="strategy must be None, a function"):
        Claim("x", "FaF", "s", "exact", lambda c: None, strategy=[st.floats(0, 1)])
    with pytest.raises(ValueError, match="claim must be a registered claim id"):
        claims.get_claim("faf.nothing")
    with pytest.raises(ValueError, match="profile must be one of"):
        claims.get_profile("huge")
    with pytest.raises(ValueError, match="already registered"):
        claims.register("faf.eq10", source="FaF", statement="s", kind="exact")(lambda case: None)


def test_select_by_substring_glob_and_method():
    assert [c.id for c in claims.select("faf.eq10")] == ["faf.eq10.finite", "faf.eq10"]
    assert {c.id for c in claims.select("faf.thm3.9.*")} == {
        "faf.thm3.9.corrected", "faf.thm3.9.eq17", "faf.thm3.9.limit", "faf.thm3.9.corrected.large-d",
        "faf.thm3.9.corrected.sigma0", "faf.thm3.9.corrected.L3", "faf.thm3.9.corrected.L4"}
    assert all(c.method == "ridge" or "ridge" in c.id for c in claims.select("ridge"))
    assert claims.select("no such claim") == []


def test_comparisons():
    ok = compare.agreement(1.03, 0.01, 1.0, allowance=0.0)
    assert ok.passed and ok.z == pytest.approx(3.0) and ok.tolerance == pytest.approx(0.04 + 2e-9)
    bad = compare.agreement(1.05, 0.01, 1.0)
    assert not bad.passed and bad.z == pytest.approx(5.0)
    assert compare.agreement(1.05, 0.01, 1.0, allowance=0.02).passed
    combined = compare.agreement(1.0, 0.03, 1.0, reference_se=0.04)
    assert combined.tolerance == pytest.approx(4 * 0.05 + 2e-9)
    refuted = compare.refutation(0.0, 0.1, 0.7)
    assert refuted.passed and refuted.z == pytest.approx(-7.0)
    weak = compare.refutation(0.0, 0.1, 0.5)
    assert not weak.passed and not weak.paper_holds
    assert compare.refutation(0.0, 0.1, 0.3).paper_holds
    assert compare.mean_se([1.0, 3.0]) == (2.0, 1.0)
    with pytest.raises(ValueError, match="samples must"):
        compare.mean_se([1.0, math.nan])
    worst = combine([compare.within(1.0, 1.0, 0.1), compare.within(1.05, 1.0, 0.1)])
    assert worst.passed and worst.discrepancy == pytest.approx(0.05)
    assert not combine([compare.holds(True), compare.holds(False)]).passed


@pytest.mark.parametrize(
    "result, requires, value, held",
    [
        (compare.agreement(1.03, 0.01, 1.0), "|z| ≤ 4", 3.0, True),
        (compare.agreement(1.05, 0.01, 1.0, allowance=0.02), "|Δ| ≤ 4 SE + 0.02", 0.05, True),
        (compare.refutation(0.0, 0.1, 0.7), "paper off by |z| > 6", 7.0, True),
        (compare.refutation(0.0, 0.1, 0.7, allowance=0.2), "paper off by |Δ| > 6 SE + 0.2", 0.7, False),
        (compare.significant(15.7, 0.1), "z > 4", 157.0, True),
        (compare.significant(-0.5, 0.1, two_sided=True), "|z| > 4", 5.0, True),
        (compare.not_above(0.5, 0.1), "z ≤ 4", 5.0, False),
        (compare.within(1.05, 1.0, 0.1), "|Δ| ≤ 0.1", 0.05, True),
        (compare.holds(False), "holds", None, False),
        (compare.exceeds(0.25, 0.0), "paper fails by > 0", 0.25, True),
        (CheckResult(0.3, 0.5, True), "discrepancy ≤ 0.5", 0.3, True),
    ],
)
def test_each_comparison_states_its_criterion(result, requires, value, held):
    """What the audit prints under requires, measured and held comes from the comparison itself."""
    criterion = result.requirement
    assert criterion.text == requires and result.passed is held
    assert criterion.value == (None if value is None else pytest.approx(value))


def test_combine_reports_the_sub_check_nearest_to_failing_whatever_its_criterion():
    """A comfortable one-sided z = 157 (> 4) is not the worst of a claim whose agreement sits at |z| = 3; for an
    erratum a spread of 1e-9 (≤ 1e-6) is farther from failing than a demonstration at z = 5 (> 4)."""
    worst = combine([compare.agreement(1.03, 0.01, 1.0), compare.exceeds(157.0, 4.0)])
    assert worst.passed and worst.discrepancy == pytest.approx(0.03) and worst.requirement.text == "|z| ≤ 4"
    worst = combine([compare.within(1e-9, 0.0, 1e-6), compare.exceeds(5.0, 4.0)])
    assert worst.passed and worst.discrepancy == 5.0
    edges = [compare.not_above(mean, 1.0).edge for mean in (-math.inf, -100.0, -4.0, 0.0, 3.9, 4.0, 50.0, math.inf)]
    assert edges == sorted(edges) and edges[5] == 1.0  # monotone in the measured value, 1 on the bound
    failing = combine([compare.exceeds(157.0, 4.0), compare.holds(False)])
    assert not failing.passed and failing.requirement.text == "holds"
    with pytest.raises(ValueError, match="relation must be"):
        claims.Criterion("z", "=", 4.0, 1.0)


def test_every_profile_is_consistent():
    for name, profile in claims.PROFILES.items():
        assert profile.name == name and profile.examples >= 1 and profile.sim_d[0] <= profile.sim_d[1]
        assert profile.sim_draws >= 2 and profile.mc_reps >= 100
    assert np.all([claims.PROFILES[n].sim_d[1] >= claims.PROFILES["quick"].sim_d[1] for n in claims.PROFILE_NAMES])


@pytest.mark.meta  # a claim's sensitivity to a perturbed formula (docs/testing.md)
def test_the_merlin_union_bound_check_fails_when_the_bound_is_scaled_down(monkeypatch):
    """merlin.thm2.bound-2-3 checks the paper's union bound k(2/3)ⁿ over its k events; the bound holds with a
    margin of 17 % at n = 1 (union/bound = 0.83 at k = 64), so a bound scaled by ¾ must fail the check."""
    from transfertheory.theory import merlin

    assert claims.check_point("merlin.thm2.bound-2-3", {}, QUICK).status == claims.PASS
    paper_bound = merlin.any_wrong_feature_fit_bound
    monkeypatch.setattr(merlin, "any_wrong_feature_fit_bound", lambda n, k: 0.75 * paper_bound(n, k))
    outcome = claims.check_point("merlin.thm2.bound-2-3", {}, QUICK)
    assert outcome.status == claims.FAIL and outcome.result.discrepancy > 1


@pytest.mark.parametrize("profile", claims.PROFILES)
def test_the_finite_fine_tuning_claims_check_points_where_fine_tuning_carries_something(profile):
    """Eq. 16 at n ≥ d, σ = 0 or θ = 0 is another method's risk or 0, and Eq. 17 at n ≥ d is 0 pathwise: the points
    of every profile lie where the paper's formula has content of its own."""
    assert all(p["n"] < p["d"] and p["sigma"] > 0 and p["theta"] > 0 for p in claims.points("faf.eq16.finite", profile))
    assert all(p["n"] < p["d"] for p in claims.points("faf.eq17.finite", profile))


@pytest.mark.meta  # a claim's sensitivity to a perturbed formula (docs/testing.md)
def test_the_finite_fine_tuning_risk_claim_fails_when_eq_16_is_off_by_five_percent(monkeypatch):
    from transfertheory.theory import methods

    exact = methods.TransferMethod.paper_risk_finite

    def off(self, *args, **kwargs):
        value = exact(self, *args, **kwargs)
        return 1.05 * value if self.name == "finetune" else value

    monkeypatch.setattr(methods.TransferMethod, "paper_risk_finite", off)
    assert claims.run("faf.eq16.finite", "quick").status == claims.FAIL


#: a mid-range point of the anisotropic equivalents' strategies: a spiked spectrum, n/d = 1/2, noise; its risk has a
#: non-zero large-size limit (teachers on the top of a power law have a risk that vanishes as d grows, and with it any
#: error proportional to the risk: docs/anisotropic.md)
_ANISO_POINT = {"spectrum": "block:0.3:3", "teacher": "flat", "theta": 1.0, "sigma": 0.5, "d": 64, "n": 32}


def _scaled(function, factor):
    return lambda *args, **kwargs: factor * function(*args, **kwargs)


@pytest.mark.parametrize("claim_id, name, params", [
    ("faf.aniso.scratch", "scratch_risk", _ANISO_POINT),
    ("faf.aniso.ridge", "ridge_risk", {**_ANISO_POINT, "ridge": 0.1}),
    ("faf.aniso.ridge", "_kappa", {**_ANISO_POINT, "sigma": 1.0, "ridge": 0.1}),  # κ × 1.05: the equivalent − 4.8 %
    ("faf.aniso.finetune", "fine_tune_risk", _ANISO_POINT),
])
@pytest.mark.meta  # a claim's sensitivity to a perturbed formula (docs/testing.md)
def test_the_anisotropic_equivalent_claims_fail_when_the_equivalent_is_five_percent_off(claim_id, name, params,
                                                                                        monkeypatch):
    """The deterministic-equivalent claims hold the fitted limit of mean − equivalent over the size ladder to 0 with
    no allowance: they pass at a representative point and FAIL there with the equivalent (or its κ) × 1.05 (a
    constant error, which no decay of the gap absorbs)."""
    from transfertheory.theory import anisotropic

    assert claims.check_point(claim_id, params, QUICK).status == claims.PASS
    monkeypatch.setattr(anisotropic, name, _scaled(getattr(anisotropic, name), 1.05))
    assert claims.check_point(claim_id, params, QUICK).status == claims.FAIL


@pytest.mark.parametrize("claim_id", ["faf.thm3.4", "faf.aniso.rank-one"])
@pytest.mark.meta  # a claim's sensitivity to a perturbed formula (docs/testing.md)
def test_the_rank_one_claims_fail_when_the_residue_goes_as_a_power_of_alpha_other_than_one(claim_id, monkeypatch):
    """σ₂/σ₁ ∝ α⁰·⁹ (one decade of α shrinks it 7.9×) must fail the slope check."""
    from transfertheory.sim.deep_linear import PretrainResult

    exact = PretrainResult.singular_value_ratio
    monkeypatch.setattr(PretrainResult, "singular_value_ratio", property(lambda self: exact.fget(self) ** 0.9))
    assert claims.run(claim_id, "quick").status == claims.FAIL


@pytest.mark.meta  # a claim's sensitivity to a perturbed formula (docs/testing.md)
def test_the_depth_claims_fail_when_the_network_trained_is_two_layers_deep(monkeypatch):
    """faf.thm3.9.corrected.L3 holds an L = 3 simulation to the L = 3 corrected limit and away from L = 2's: the same
    check fed a two-layer network's fine-tuning (everything else equal) must FAIL."""
    from transfertheory.claims import faf_linear_sim

    simulate = faf_linear_sim._simulate
    monkeypatch.setattr(faf_linear_sim, "_simulate",
                        lambda case, methods, **kw: simulate(case, methods, **{**kw, "depth": 2}))
    claim = claims.get_claim("faf.thm3.9.corrected.L3")
    result = claim.check(claims.Case(claim, claims.get_profile(QUICK), {}, seed=0))  # one stage: no confirmation
    assert not result.passed


def _two_layer_exponent(limit):
    return lambda X, y, beta_pre, depth=2: limit(X, y, beta_pre, depth=2)


def _transferability_scaled(risks, factor):
    def scaled(*args, **kwargs):
        scratch, fine_tuned = risks(*args, **kwargs)
        return scratch, scratch - factor * (scratch - fine_tuned)
    return scaled


@pytest.mark.parametrize("depth", [3, 4])
@pytest.mark.parametrize("perturbed", ["two-layer exponent", "T x 1.5"])
@pytest.mark.meta  # a claim's sensitivity to a perturbed formula (docs/testing.md)
def test_the_depth_claims_fail_when_the_per_draw_limit_is_wrong(depth, perturbed, monkeypatch):
    """faf.thm3.9.corrected.L3/.L4 hold every simulated draw's fine-tuned risk to the same draw's L-layer limit within
    the per-draw allowance (1.3e-3, 2.2e-3): they PASS, and FAIL on the per-draw check when the limit's c takes the
    L = 2 exponent c⁴ (largest per-draw gap measured 1.10, 1.75) or its paired T is × 1.5 (0.59, 0.77)."""
    from transfertheory.claims import faf_linear_sim

    claim_id = f"faf.thm3.9.corrected.L{depth}"
    allowance = claims.get_claim(claim_id).allowance
    assert claims.check_point(claim_id, {}, QUICK).status == claims.PASS
    if perturbed == "two-layer exponent":
        monkeypatch.setattr(faf_linear_sim, "fine_tune_limit", _two_layer_exponent(faf_linear_sim.fine_tune_limit))
    else:
        monkeypatch.setattr(faf_linear_sim, "_limit_risks", _transferability_scaled(faf_linear_sim._limit_risks, 1.5))
    outcome = claims.check_point(claim_id, {}, QUICK)
    assert outcome.status == claims.FAIL
    assert outcome.result.criterion.statistic == "|Δ|" and outcome.result.discrepancy > 10 * allowance


@pytest.mark.parametrize("profile", claims.PROFILE_NAMES)
def test_the_mtl_training_claims_train_the_networks_of_the_named_sweep_mtl(profile, monkeypatch):
    """The training study of the mtl.lemma1.trained-* claims runs at the sizes of the named sweep ``mtl``'s points
    (its simulator call, stopped there)."""
    from transfertheory.claims import mtl_sim
    from transfertheory.sweep import NAMED_SWEEPS, parse_spec

    def stop(problem, network, widths, networks, lam_tau, lam_tau_hat, seed):
        raise RuntimeError(network.depth, list(widths), networks, lam_tau, lam_tau_hat)

    monkeypatch.setattr(mtl_sim, "finite_width_study", stop)
    with pytest.raises(RuntimeError) as asked:
        mtl_sim._training_study.__wrapped__(profile)
    points = parse_spec(NAMED_SWEEPS["mtl"], "mtl", profile).points()
    assert asked.value.args[1] == [point["width"] for point in points]
    assert {(p["depth"], p["draws"], p["lam_tau"], p["lam_tau_hat"]) for p in points} == {
        tuple(asked.value.args[i] for i in (0, 2, 3, 4))}


def test_the_finite_n_boundary_claim_simulates_at_the_named_sweep_faf_fig4s_mid_size(monkeypatch):
    """The claim faf.relu.sim.finite-n-boundary runs the figure's experiment at the size of the named sweep
    faf_fig4's ``mid`` profile (its simulator call at the ``full`` profile, stopped there)."""
    from transfertheory.claims import faf_relu_sim
    from transfertheory.sim import get_experiment
    from transfertheory.sweep import NAMED_SWEEPS, parse_spec

    def stop(d, m, m_star, mus, ns, **kwargs):
        raise RuntimeError(dict(d=d, m=m, m_star=m_star, mus=list(mus), ns=tuple(ns), **kwargs))

    monkeypatch.setattr(faf_relu_sim, "run_transfer_experiment", stop)
    claim = claims.get_claim("faf.relu.sim.finite-n-boundary")
    with pytest.raises(RuntimeError) as asked:
        faf_relu_sim._finite_n_boundary(claims.Case(claim, claims.get_profile("full"), {}, seed=0))
    asked = asked.value.args[0]
    point = parse_spec(NAMED_SWEEPS["faf_fig4"], "faf_fig4", "mid").points()[0]
    keys = ("d", "m", "m_star", "ns", "draws")
    assert {key: asked[key] for key in keys} == {key: point[key] for key in keys}
    assert {stage: asked[f"{stage}flow"]["max_time"] for stage in ("", "pretrain_", "linear_")} == {
        stage: point[f"{stage}max_time"] for stage in ("", "pretrain_", "linear_")}
    assert len(asked["mus"]) == 1 and asked["mus"][0] in point["mus"]


def test_the_fitted_exponent_with_the_one_over_h_term_recovers_the_exponent_of_a_corrected_power_law():
    """log v = c − ½·log h + b/h: the plain log-log line is tilted by the 1/h term, the fit with it returns −1/2 to
    rounding (the fit of the rate claims mtl.ntk.fluctuation-rate and mtl.ntk.width-rate)."""
    from transfertheory.claims.mtl_sim import RATE_WIDTHS, fitted_exponent

    log_values = 1.3 - 0.5 * np.log(RATE_WIDTHS) + 4.0 / RATE_WIDTHS
    se = np.full(len(RATE_WIDTHS), 0.01)
    assert fitted_exponent(RATE_WIDTHS, log_values, se, correction=True)[0] == pytest.approx(-0.5, abs=1e-12)
    assert fitted_exponent(RATE_WIDTHS, log_values, se)[0] < -0.5 - 0.01


def _kernels_converging_like(power):
    """random_network_kernels whose deviations from the infinite-width kernels are rescaled by (h/32)^(power + ½):
    distances and fluctuations ∝ h^power, their 1/h corrections unchanged."""
    from transfertheory.claims import mtl_sim

    exact = mtl_sim.random_network_kernels

    def rescaled(network, x, width, networks, rng, **kwargs):
        (nngp, ntk), (k, t) = network.kernels(x), exact(network, x, width, networks, rng, **kwargs)
        factor = (width / 32) ** (power + 0.5)
        return nngp + factor * (k - nngp), ntk + factor * (t - ntk)

    return rescaled


@pytest.mark.parametrize("claim_id", ["mtl.ntk.fluctuation-rate", "mtl.ntk.width-rate"])
@pytest.mark.parametrize("power, passes", [(-1 / 2, True), (-1 / 3, False), (-2 / 3, False)])
@pytest.mark.meta  # a claim's sensitivity to a perturbed formula (docs/testing.md)
def test_the_mtl_width_rate_claims_tell_h_to_the_minus_half_from_a_third_and_two_thirds(claim_id, power, passes,
                                                                                        monkeypatch):
    """The kernels' fluctuation and distance fitted as c + s·log h + b/h, s = −1/2 within 4 SE and no allowance:
    they pass at the truth and FAIL with deviations that decay like h^(−1/3) or h^(−2/3) (one stage, seed 0)."""
    from transfertheory.claims import mtl_sim

    monkeypatch.setattr(mtl_sim, "random_network_kernels", _kernels_converging_like(power))
    claim = claims.get_claim(claim_id)
    assert claim.allowance == 0
    assert claim.check(claims.Case(claim, QUICK, {}, seed=0)).passed == passes


def _times(function, factor, column):
    """``function`` of the depths with its values (``column``: that column of them) × ``factor``(depths)."""
    def scaled(depths, *args, **kwargs):
        values = function(depths, *args, **kwargs).copy()
        scale = factor(np.asarray(depths, dtype=float))
        if column is None:
            return values * scale
        values[:, column] *= scale
        return values

    return scaled


@pytest.mark.parametrize("claim_id, name, column", [("mtl.lemma5.inverse-gap-rate", "_depth_structure", 2),
                                                    ("mtl.thm1.depth-rate", "_prediction_gap", None)])
@pytest.mark.parametrize("factor", [lambda L: L ** -0.5, lambda L: L ** 0.5, np.log], ids=["L^-0.5", "L^0.5", "log L"])
@pytest.mark.meta  # a claim's sensitivity to a perturbed formula (docs/testing.md)
def test_the_mtl_depth_rate_claims_fail_when_the_exponent_is_half_a_unit_off_or_carries_a_log(claim_id, name, column,
                                                                                              factor, monkeypatch):
    """Two-sided: the local exponent at L = 512 → 1024 is the rate (−2, −1) within the movement of the local exponents
    over the doublings from L = 128; the depth values × L^(∓½) (exponents −2.5 / −1.5 and −1.5 / −0.5) and × log L
    (a log factor: local exponent off by 1/log L ≈ 0.15, the movement ≈ 0.05) FAIL, and the record carries the
    measured deviation."""
    from transfertheory.claims import mtl

    claim = claims.get_claim(claim_id)
    truth = claim.check(claims.Case(claim, QUICK, {}, seed=0))
    assert truth.passed and 0 < truth.discrepancy < truth.tolerance
    perturbed = _times(getattr(mtl, name), factor, column)
    monkeypatch.setattr(mtl, name, perturbed)
    assert not claim.check(claims.Case(claim, QUICK, {}, seed=0)).passed


@pytest.mark.meta  # a claim's sensitivity to a perturbed formula (docs/testing.md)
def test_the_mtl_fig1_erratum_claim_fails_when_the_lemmas_gap_grows_with_lam_tau(monkeypatch):
    """mtl.fig1.lam-tau-trend shows, with λτ̂ = λτ, a decrease of the gap > 4 SE for either Φ′_ANIL; a Lemma's gap that
    grows with λτ (× (1 + λτ), the paper's trend) makes the check fail (the claim would no longer be an erratum)."""
    from transfertheory.claims import mtl

    exact = mtl._fig1_gaps
    monkeypatch.setattr(mtl, "_fig1_gaps", lambda run, lam_tau, lam_tau_hat, variant, **kw: exact(
        run, lam_tau, lam_tau_hat, variant, **kw) * (1 + lam_tau if variant == "statement" else 1))
    claim = claims.get_claim("mtl.fig1.lam-tau-trend")
    assert not claim.check(claims.Case(claim, QUICK, {}, seed=0)).passed
