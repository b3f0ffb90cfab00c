"""Transfer with anisotropic inputs (transfertheory.theory.anisotropic, .spectra; docs/anisotropic.md).

* the Σ = I reduction: every new formula equals the isotropic one of theory.linear / fine_tuning to rounding;
* the exact formulas (linear and ridge transfer at finite n, least squares above d) against Monte Carlo of
  their defining expectations; the deterministic equivalents against Monte Carlo within their measured
  finite-size allowance (the claims faf.aniso.* do the same at hypothesis-drawn points);
* validation at the boundary: bad spectra and teachers are ValueErrors naming the parameter.
"""
import math
import os

import numpy as np
import pytest

from transfertheory import theory as T
from transfertheory.theory import anisotropic as A
from transfertheory.theory import fine_tuning as FT
from transfertheory.theory import linear as L
from transfertheory.theory import spectra as S

THETAS = np.array([0.0, 0.3, 1.0, math.pi / 2, 2.5])


def _iso(d=120, teacher="flat"):
    lam = np.ones(d)
    beta_s, _, beta_t = S.teacher_pair(teacher, lam, THETAS)
    return lam, beta_s, beta_t


# --------------------------------------------------------------------------- Σ = I reduction (identities)


@pytest.mark.parametrize("teacher", ["flat", "power:1", "power:2:bottom"])
@pytest.mark.parametrize("n", [12, 60, 100, 119, 120, 121, 200])
@pytest.mark.parametrize("sigma", [0.0, 0.2, 1.0])
def test_scratch_reduces_to_faf_eq10(teacher, n, sigma):
    lam, _, beta_t = _iso(teacher=teacher)
    np.testing.assert_allclose(A.scratch_risk(lam, beta_t, n, sigma), T.scratch_risk(n / 120, sigma), rtol=1e-13)


@pytest.mark.parametrize("n", [3, 9, 60, 500])
def test_transfer_risks_reduce_to_faf_eqs_12_15(n):
    lam, beta_s, beta_t = _iso()
    np.testing.assert_allclose(A.linear_transfer_risk(lam, beta_s, beta_t, 0.3, n),
                               L.linear_transfer_risk(THETAS, 0.3, n), rtol=1e-13, atol=1e-15)
    for ridge in (0.0, 0.05, 0.7):
        np.testing.assert_allclose(A.ridge_transfer_risk(lam, beta_s, beta_t, 0.3, n, ridge),
                                   L.ridge_transfer_risk_finite(THETAS, 0.3, n, ridge), rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(A.ridge_transfer_risk_limit(lam, beta_s, beta_t, ridge),
                                   L.ridge_transfer_risk(THETAS, ridge), rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("depth", [2, 3, 5])
@pytest.mark.parametrize("n", [10, 60, 110, 120, 150])
def test_fine_tuning_reduces_to_the_corrected_limit(depth, n):
    lam, beta_s, beta_t = _iso()
    gamma = n / 120
    np.testing.assert_allclose(A.fine_tune_scale(lam, beta_s, beta_t, n, 0.7, depth),
                               np.full(THETAS.shape, FT.fine_tune_scale(gamma, 0.7, depth)), rtol=1e-13)
    np.testing.assert_allclose(A.fine_tune_risk(lam, beta_s, beta_t, n, 0.7, depth),
                               FT.fine_tune_risk_corrected(gamma, THETAS, 0.7, depth), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(A.fine_tune_transferability(lam, beta_s, beta_t, n, 0.7, depth),
                               FT.fine_tune_transferability_corrected(gamma, THETAS, 0.7, depth), rtol=1e-12,
                               atol=1e-14)


def test_exact_scratch_reduces_to_the_finite_formula():
    lam = S.spectrum("power:1.5", 30)
    n = np.array([30, 31, 32, 40, 90])
    np.testing.assert_array_equal(A.scratch_risk_exact(lam, n, 0.4), T.scratch_risk_finite(n, 30, 0.4))


def test_ridge_equivalent_at_identity_is_marchenko_pastur():
    """At Σ = I, κ(1 − d/(n(1 + κ))) = λ is a quadratic: κ = [λ + q − 1 + √((λ + q − 1)² + 4λ)]/2, q = d/n."""
    d, n, ridge = 80, np.array([20.0, 60.0, 120.0]), 0.3
    q = d / n
    kappa = (ridge + q - 1 + np.sqrt((ridge + q - 1) ** 2 + 4 * ridge)) / 2
    np.testing.assert_allclose(A.effective_regularization(np.ones(d), n, ridge), kappa, rtol=1e-12)


# --------------------------------------------------------------------------- spectra and teachers


def test_families_are_normalised_and_ordered():
    for spec in ("isotropic", "power:0", "power:1.5", "block:0.25:8"):
        lam = S.spectrum(spec, 40)
        assert lam.sum() == pytest.approx(40) and np.all(np.diff(lam) <= 1e-12)
    np.testing.assert_allclose(S.spectrum("power:1", 4), 4 * np.array([1, 1 / 2, 1 / 3, 1 / 4]) / (25 / 12))
    np.testing.assert_array_equal(S.spectrum("2,1,0.5"), [2, 1, 0.5])
    lam = S.spectrum("power:1", 40)
    beta_s, nu, beta_t = S.teacher_pair("power:1:bottom", lam, THETAS)
    ss, st, tt, theta = A.geometry(lam, beta_s, beta_t)
    np.testing.assert_allclose([ss, *tt], 1.0, rtol=1e-12)
    np.testing.assert_allclose(theta, np.minimum(THETAS, math.pi), atol=1e-7)
    assert abs(beta_s[-1]) > abs(beta_s[0])  # bottom-aligned: weight on the small eigenvalues
    task = S.task("power:1", "power:1:bottom", 40, THETAS)  # the spectrum and its teachers in one call
    for got, want in zip(task, (lam, beta_s, beta_t)):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("call, message", [
    (lambda: S.spectrum([1.0, 0.0, 2.0]), "spectrum: every eigenvalue must be positive"),
    (lambda: S.spectrum([1.0, -1.0]), "spectrum: every eigenvalue must be positive"),
    (lambda: S.spectrum([1.0, 2.0], d=3), "spectrum must have d = 3 eigenvalues, got 2"),
    (lambda: S.spectrum("power:-1", 10), "the decay A of power:A must be >= 0"),
    (lambda: S.spectrum("powr:1", 10), "spectrum must be isotropic"),
    (lambda: S.spectrum("block:1.5:2", 10), "block:F:H needs 0 < F < 1"),
    (lambda: S.teacher_pair("power:x", np.ones(4), [0.1]), "the exponent B of power:B must be a number"),
    (lambda: S.teacher_pair("sideways", np.ones(4), [0.1]), "teacher must be flat"),
    (lambda: S.spectrum("power:200", 400), "power:200 at d = 400 has eigenvalues below the smallest normal float"),
    (lambda: S.task("power:100", "flat", 400, [0.1]), "teacher: the source has no Σ-orthogonal second direction"),
    (lambda: A.scratch_risk(np.ones(3), np.zeros(3), 2, 0.1), "beta_t has zero Σ-norm"),
    (lambda: A.scratch_risk(np.ones(3), np.ones(4), 2, 0.1), "beta_t must have d = 3 coefficients"),
    (lambda: A.scratch_risk([1.0, np.nan], np.ones(2), 2, 0.1), "lam: every eigenvalue must be positive"),
    (lambda: A.linear_transfer_risk(np.ones(3), np.ones(3), np.ones(3), 0.1, 2), "n must be an integer >= 3"),
    (lambda: A.scratch_risk_exact(np.ones(5), 4, 0.1), "n must be >= d = 5"),
    (lambda: A.linear_transfer_risk(np.ones(3), np.ones((2, 3)), np.ones(3), [0.1] * 3, 5),
     "beta_s, beta_t, sigma, n must broadcast together, got shapes beta_s (2,), sigma (3,)"),
])
def test_bad_input_is_a_named_error(call, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        call()


def test_transfer_grid_refuses_a_grid_above_the_memory_limit_before_any_work(monkeypatch):
    from transfertheory import _memory

    lam, beta_s, beta_t = S.task("power:1", "flat", 1000, np.linspace(0, 1.5, 50))
    n = np.linspace(10.0, 2000.0, 100)
    monkeypatch.setenv(_memory.ENV_VAR, str(8 * (3 * 100 + 50 + 2) * 1000 - 1))  # one byte below the estimate
    monkeypatch.setattr(A, "_kappa", lambda *args: pytest.fail("work started before the memory check"))
    with pytest.raises(_memory.MemoryLimitError, match=r"transfer_grid\(n=100, beta_t=50, d=1000\) needs about"):
        A.transfer_grid("linear", lam, beta_s, beta_t, n, 0.2)
    monkeypatch.undo()  # no limit: the same grid runs
    assert A.transfer_grid("linear", lam, beta_s, beta_t, n, 0.2)[0].shape == (50, 100)


# --------------------------------------------------------------------------- Monte Carlo


def _draw(rng, lam, beta_t, n, sigma, reps):
    X = rng.standard_normal((reps, n, lam.size)) * np.sqrt(lam)
    return X, X @ beta_t + sigma * rng.standard_normal((reps, n))


def _sigma_risk(beta_hat, beta_t, lam):
    return ((beta_hat - beta_t) ** 2 * lam).sum(-1)


def _within(sample, reference):
    mean, se = sample.mean(), sample.std(ddof=1) / math.sqrt(sample.size)
    assert abs(mean - reference) <= 4 * se, (mean, se, reference)


@pytest.mark.parametrize("spec, teacher, n, sigma, ridge", [
    ("power:1.5", "power:1", 12, 0.3, 0.0), ("block:0.25:6", "power:1:bottom", 20, 0.0, 0.0),
    ("power:0.7", "flat", 15, 1.0, 0.4), ("block:0.5:3", "power:0.5", 30, 0.5, 0.1)])
def test_one_feature_regression_is_exact(spec, teacher, n, sigma, ridge):
    """Linear (ridge) transfer on the feature β_s vᵀ, ‖v‖ = ‖β_s‖^{−1/2} (L = 2): the head solved directly."""
    rng = np.random.default_rng(5)
    lam = S.spectrum(spec, 10)
    beta_s, _, beta_t = S.teacher_pair(teacher, lam, [1.1])
    X, y = _draw(rng, lam, beta_t[0], n, sigma, 20000)
    z = X @ beta_s
    v_norm2 = 1 / np.linalg.norm(beta_s)
    b = (z * y).sum(-1) / ((z * z).sum(-1) + n * ridge / v_norm2)
    risk = _sigma_risk(b[:, None] * beta_s, beta_t[0], lam)
    _within(risk, A.ridge_transfer_risk(lam, beta_s, beta_t[0], sigma, n, ridge))


def test_least_squares_above_d_is_exact_for_any_sigma():
    rng = np.random.default_rng(6)
    lam = S.spectrum("power:2", 8)
    _, _, beta_t = S.teacher_pair("flat", lam, [0.4])
    X, y = _draw(rng, lam, beta_t[0], 24, 0.5, 20000)
    risk = _sigma_risk((np.linalg.pinv(X) @ y[..., None])[..., 0], beta_t[0], lam)
    _within(risk, A.scratch_risk_exact(lam, 24, 0.5))


@pytest.mark.parametrize("spec, teacher, n, sigma", [
    ("power:1", "power:1", 32, 0.3), ("block:0.1:5", "flat", 40, 0.0), ("power:0.5", "power:1:bottom", 20, 0.7)])
def test_deterministic_equivalents_are_the_large_size_limit(spec, teacher, n, sigma):
    """The equivalents' statement, with no allowance: at fixed families and n/d the Monte Carlo mean minus the
    equivalent (scratch risk, E R_ft, T_ft) vanishes as (n, d) grow — the claims' size-ladder check (the gaps at
    (n, d) × 1, 2, 4 fitted as a + b·d^(−p), the best limit within 4 SE of 0) passes."""
    from transfertheory import claims

    point = {"spectrum": spec, "teacher": teacher, "theta": 1.0, "sigma": sigma, "d": 64, "n": n}
    for claim_id in ("faf.aniso.scratch", "faf.aniso.finetune"):
        outcome = claims.check_point(claim_id, point, "quick")
        assert outcome.status == claims.PASS, outcome.result.detail


# --------------------------------------------------------------------------- the simulator and the sweep experiment

from transfertheory.sim import get_experiment  # noqa: E402
from transfertheory.sim.deep_linear import run_transfer_experiment  # noqa: E402

_RUN = dict(d=8, gammas=[0.5, 1.5], thetas=[0.3, 1.2], sigma=0.3, draws=2,
            methods=("scratch", "linear", "finetune"), ridge=(0.0, 0.2), seed=3, backend="numpy", progress=False)


def test_isotropic_spectrum_is_the_default_run_bit_for_bit():
    """``spectrum="isotropic"`` and the sweep's default point take the isotropic path unchanged (the default run
    was also compared with the code before anisotropic inputs existed: identical tables and attrs)."""
    default = run_transfer_experiment(**_RUN)
    import pandas as pd

    pd.testing.assert_frame_equal(default, run_transfer_experiment(**_RUN, spectrum="isotropic"), check_exact=True)
    record = get_experiment("faf_linear")
    point = dict(d=8, gamma=0.5, theta=0.4, draws=2, methods=("scratch", "linear"))
    assert record.point(**point)["spectrum"] == "isotropic" and record.point(**point)["teacher"] == "random"
    table = record.run(seed=5, **point)
    direct = run_transfer_experiment(8, [0.5], [0.4], 0.2, 2, methods=("scratch", "linear"), seed=5, progress=False)
    np.testing.assert_array_equal(np.sort(table["risk"].to_numpy()), np.sort(direct["risk"].to_numpy()))


def test_the_sweep_fields_default_names_are_accepted_and_recorded():
    default = run_transfer_experiment(**_RUN)
    assert (default.attrs["spectrum"], default.attrs["teacher"]) == ("isotropic", "random")
    named = run_transfer_experiment(**_RUN, spectrum="isotropic", teacher="random")
    import pandas as pd

    pd.testing.assert_frame_equal(default, named, check_exact=True)
    family = run_transfer_experiment(**_RUN, teacher="flat")
    assert (family.attrs["spectrum"], family.attrs["teacher"]) == ("isotropic", "flat")


def test_explicit_identity_spectrum_agrees_with_the_isotropic_run():
    """The Σ code path at Σ = I (eigenvalues given as ones) agrees with the isotropic run to the integrator's
    rounding (the Σ-normalisation of the drawn teachers rounds differently)."""
    default = run_transfer_experiment(**_RUN)
    ones = run_transfer_experiment(**_RUN, spectrum=np.ones(8))
    np.testing.assert_allclose(ones["risk"], default["risk"], rtol=1e-6, atol=1e-9)
    assert ones.attrs["spectrum"] == (1.0,) * 8


@pytest.mark.parametrize("options, message", [
    (dict(spectrum=[1.0] * 7 + [0.0]), "spectrum: every eigenvalue must be positive"),
    (dict(spectrum=[1.0] * 7), "spectrum must have d = 8 eigenvalues, got 7"),
    (dict(spectrum="power:x"), "the decay A of power:A must be a number"),
    (dict(teacher=np.zeros(8)), "teacher has zero Σ-norm"),
    (dict(teacher="power:1:middle"), "teacher must be flat"),
])
def test_simulator_refuses_bad_spectra_and_teachers_before_any_work(options, message, monkeypatch):
    from transfertheory.sim.deep_linear import experiment

    def no_work(*args, **kwargs):
        raise AssertionError("pretraining started before validation")

    monkeypatch.setattr(experiment, "pretrain", no_work)
    with pytest.raises(ValueError, match=message):
        run_transfer_experiment(**_RUN, **options)


def test_sweep_experiment_validates_spectrum_and_teacher():
    record = get_experiment("faf_linear")
    with pytest.raises(ValueError, match="spectrum: the decay A of power:A must be >= 0"):
        record.point(spectrum="power:-2")
    with pytest.raises(ValueError, match="teacher must be flat"):
        record.point(teacher="upside-down")
    table = record.run(d=8, gamma=2.0, theta=0.5, draws=2, spectrum="power:1", teacher="power:1:bottom")
    assert table["converged"].all() and (table["spectrum"] == "power:1").all()


@pytest.mark.parametrize("method", ["linear", "ridge", "finetune"])
def test_transfer_grid_is_the_pointwise_formulas_and_faf_at_identity(method):
    from transfertheory.theory.transfer import transfer_risks

    ridge = 0.3 if method == "ridge" else 0.0
    d, thetas = 60, np.linspace(0, math.pi / 2, 7)
    n = np.array([6.0, 30.0, 59.0, 60.0, 75.0, 120.0])
    lam = S.spectrum("power:1.2", d)
    beta_s, _, beta_t = S.teacher_pair("power:0.8:bottom", lam, thetas)
    t, r_sc, r_tr = A.transfer_grid(method, lam, beta_s, beta_t, n, 0.4, ridge, depth=3)
    np.testing.assert_allclose(r_sc, A.scratch_risk(lam, beta_t[:, None, :], n[None, :], 0.4), rtol=1e-12)
    if method == "finetune":
        np.testing.assert_allclose(t, A.fine_tune_transferability(lam, beta_s, beta_t[:, None, :], n[None, :], 0.4, 3),
                                   rtol=1e-10, atol=1e-13)
    else:
        limit = A.ridge_transfer_risk_limit(lam, beta_s, beta_t, ridge, depth=3)
        np.testing.assert_allclose(r_tr, np.broadcast_to(limit[:, None], r_tr.shape), rtol=1e-13)
    iso = np.ones(d)
    beta_s, _, beta_t = S.teacher_pair("flat", iso, thetas)
    grid = A.transfer_grid(method, iso, beta_s, beta_t, n, 0.4, ridge, depth=3)
    faf = transfer_risks(method, n[None, :] / d, thetas[:, None], 0.4, ridge, limit="flow", depth=3)
    for ours, theirs in zip(grid, faf):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-14)


# --------------------------------------------------------------------------- the command line and the figure


def test_phase_diagram_under_a_spectrum_writes_the_grid(tmp_path, capsys):
    import pandas as pd

    from transfertheory import phase_diagram as cli

    args = ["--noise", "0.2", "--spectrum", "power:1.5", "--teacher", "power:1.0", "--resolution", "24",
            "--spectrum-d", "60", "--out", str(tmp_path)]
    assert cli.main(args) == 0
    out = capsys.readouterr().out
    assert "under spectrum power:1.5, teachers power:1.0" in out and "Σ = I:" in out
    stem = str(tmp_path / "phase_diagram_linear_sigma0.2_spectrum-power-1.5_teacher-power-1.0")
    table = pd.read_csv(stem + ".csv")
    lam = S.spectrum("power:1.5", 60)
    theta = np.sort(table["theta"].unique())
    beta_s, _, beta_t = S.teacher_pair("power:1.0", lam, theta)
    gamma = np.sort(table["gamma"].unique())
    expected = A.transfer_grid("linear", lam, beta_s, beta_t, gamma * 60, 0.2)[0]
    got = table.pivot(index="theta", columns="gamma", values="transferability").to_numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    assert all(os.path.exists(stem + suffix) for suffix in (".png", ".json"))


@pytest.mark.parametrize("args, message", [
    (["--spectrum", "power:-1"], "--spectrum: the decay A of power:A must be >= 0"),
    (["--spectrum", "1,0,2"], "--spectrum: every eigenvalue must be positive"),
    (["--spectrum", "power:1", "--teacher", "sideways"], "--teacher must be flat"),
    (["--teacher", "flat"], "--teacher applies with --spectrum only"),
    (["--spectrum", "power:1", "--finite-d", "20"], "--finite-d is not available with --spectrum"),
    (["--spectrum", "2,1", "--spectrum-d", "5"], "--spectrum-d 5 disagrees with the 2 eigenvalues"),
    (["--spectrum", "power:200"], "--spectrum power:200 --teacher flat at d = 400: power:200 at d = 400 has "
                                  "eigenvalues below the smallest normal float"),
    (["--spectrum", "power:100"], "at d = 400: the source has no Σ-orthogonal second direction"),
])
def test_phase_diagram_refuses_bad_specs_in_one_line(args, message, tmp_path, capsys):
    from transfertheory import phase_diagram as cli

    with pytest.raises(SystemExit) as exit_:
        cli.main([*args, "--out", str(tmp_path)])
    assert exit_.value.code == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert message in last and "Traceback" not in last


def test_faf_aniso_figure_is_registered_with_both_profiles():
    from transfertheory.figures.catalog import get_figure

    figure = get_figure("faf_aniso")
    assert set(figure.profiles) >= {"quick", "paper"} and figure.simulates
    assert figure.profiles["paper"]["d"] > figure.profiles["quick"].get("d", 32)


def test_fine_tuning_equivalent_claim_holds_where_the_scratch_scaled_allowance_failed():
    """``verify --explore`` drew this point (β_t ≈ −β_s, teachers on the top of a steep spectrum, σ = 0), where the
    fine-tuning risk is 3.5× the scratch risk: the allowance relative to the scratch risk alone failed it
    (z = +15.9 after confirmation); relative to the larger risk it holds (measured C ≈ 2.0 < 3)."""
    from transfertheory import claims

    point = {"theta": 3.043109138286672, "d": 28, "n": 12, "teacher": "power:1.234:top", "sigma": 0.0,
             "spectrum": "power:1.234"}
    outcome = claims.check_point(claims.get_claim("faf.aniso.finetune"), point, "quick")
    assert outcome.status == claims.PASS, outcome.result.detail
