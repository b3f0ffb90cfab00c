"""End-to-end tests of ``python -m transfertheory.phase_diagram`` (FaF Figs. 1 and 3).

The CLI runs in-process through ``main([...])`` with ``tmp_path`` as output
folder (plus one subprocess run for the module entry point and exit codes).
Grids are small (resolution ≤ 80) to keep the file at a few seconds.
"""
import math
import re
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from transfertheory import phase_diagram as pdg
from transfertheory.theory import linear as L


def run(args, tmp_path, capsys):
    """main() with --out tmp_path; returns (exit code, stdout)."""
    code = pdg.main([*args, "--out", str(tmp_path)])
    return code, capsys.readouterr().out


# --------------------------------------------------------------------------- end to end


def test_default_run_writes_png_and_tidy_csv(tmp_path, capsys):
    code, out = run(["--noise", "0.2", "--resolution", "40"], tmp_path, capsys)
    assert code == 0
    name = "phase_diagram_linear_sigma0.2"
    png, csv = tmp_path / f"{name}.png", tmp_path / f"{name}.csv"
    assert sorted(tmp_path.iterdir()) == [csv, png]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    grid = pd.read_csv(csv)
    assert list(grid.columns) == pdg.COLUMNS
    assert len(grid) == 40 * 40
    assert set(grid["method"]) == {"linear"} and set(grid["sigma"]) == {0.2}
    assert grid["gamma"].min() > 0 and grid["gamma"].max() == 2.0
    assert grid["theta"].min() == 0.0 and grid["theta"].max() == pytest.approx(math.pi / 2)
    # γ = 1 is on the grid (2·20/40): the risk and T are +inf there, kept in the CSV
    at_one = grid[grid["gamma"] == 1.0]
    assert len(at_one) == 40 and np.all(np.isposinf(at_one["transferability"]))
    assert np.all(np.isposinf(at_one["risk_scratch"]))
    assert "wrote" in out and str(csv) in out


def test_csv_round_trips_the_grid_exactly(tmp_path, capsys):
    """The CSV (written through the fast categorical path) holds exactly compute_grid's numbers."""
    code, _ = run(["--method", "finetune", "--noise", "0.3", "--finite-d", "12", "--resolution", "30"], tmp_path, capsys)
    assert code == 0
    grid = pdg.compute_grid("finetune", 0.3, resolution=30, finite_d=12)
    written = pd.read_csv(tmp_path / "phase_diagram_finetune_sigma0.3_d12.csv")
    assert list(written.columns) == [*pdg.COLUMNS, "n", "d"]
    for col in grid.columns:
        if col == "method":
            assert (written[col] == grid[col]).all()
        else:
            np.testing.assert_array_equal(written[col].to_numpy(dtype=float), grid[col].to_numpy(dtype=float))


@pytest.mark.parametrize(
    "fmt, suffixes", [("png", {".png", ".csv"}), ("pdf", {".pdf", ".csv"}), ("both", {".png", ".pdf", ".csv"})]
)
def test_formats(fmt, suffixes, tmp_path, capsys):
    code, _ = run(["--resolution", "12", "--format", fmt], tmp_path, capsys)
    assert code == 0
    assert {p.suffix for p in tmp_path.iterdir()} == suffixes
    if ".pdf" in suffixes:
        assert next(tmp_path.glob("*.pdf")).read_bytes()[:5] == b"%PDF-"


@pytest.mark.parametrize(
    "args, name, extra",
    [
        (["--method", "finetune"], "phase_diagram_finetune_sigma0.2", []),
        (["--method", "ridge", "--lam", "0.5", "--noise", "0.1"], "phase_diagram_ridge_sigma0.1_lam0.5", ["lam"]),
        (["--finite-d", "25", "--noise", "0"], "phase_diagram_linear_sigma0_d25", ["n", "d"]),
        (["--method", "ridge", "--lam", "0.2", "--finite-d", "30"], "phase_diagram_ridge_sigma0.2_lam0.2_d30", ["lam", "n", "d"]),
    ],
)
def test_methods_and_file_names(args, name, extra, tmp_path, capsys):
    code, out = run([*args, "--resolution", "24", "--gamma-max", "3"], tmp_path, capsys)
    assert code == 0
    grid = pd.read_csv(tmp_path / f"{name}.csv")
    assert list(grid.columns) == pdg.COLUMNS + extra
    assert grid["gamma"].max() == 3.0
    assert (tmp_path / f"{name}.png").is_file()
    assert "negative transfer" in out


# --------------------------------------------------------------------------- the numbers


def test_grid_values_are_the_closed_forms():
    grid = pdg.compute_grid("linear", 0.2, resolution=17)
    np.testing.assert_array_equal(
        grid["transferability"], L.linear_transferability(grid["gamma"].to_numpy(), grid["theta"].to_numpy(), 0.2)
    )
    np.testing.assert_array_equal(grid["risk_scratch"], L.scratch_risk(grid["gamma"].to_numpy(), 0.2))
    np.testing.assert_array_equal(grid["risk_transfer"], np.sin(grid["theta"].to_numpy()) ** 2)
    ft = pdg.compute_grid("finetune", 0.2, resolution=17)
    np.testing.assert_array_equal(
        ft["transferability"], L.fine_tune_transferability(ft["gamma"].to_numpy(), ft["theta"].to_numpy()) + 0.0
    )
    # T_ft = 0 at γ = 1 although both risks are +inf (pathwise cancellation)
    ft = pdg.compute_grid("finetune", 0.2, resolution=20)
    one = ft[ft["gamma"] == 1.0]
    assert np.all(one["transferability"] == 0) and np.all(np.isposinf(one["risk_transfer"]))


def test_ridge_at_zero_lambda_is_linear_transfer():
    lin, ridge = pdg.compute_grid("linear", 0.3, resolution=21), pdg.compute_grid("ridge", 0.3, resolution=21, lam=0.0)
    np.testing.assert_allclose(ridge["transferability"], lin["transferability"], rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("lam", [0.1, 1.0])
def test_ridge_boundaries_follow_the_effective_angle(lam):
    """Eq. 15 = sin²θ_eff, so ridge T vanishes on Eq. 13's boundaries at θ_eff (what panel (b) draws)."""
    theta = np.linspace(0.05, math.pi / 2, 9)
    assert np.allclose(L.ridge_transfer_risk(theta, lam), np.sin(pdg.effective_angle(theta, lam)) ** 2, atol=1e-14)
    sigma = 0.2
    g_c = L.negative_transfer_threshold(pdg.effective_angle(theta, lam), sigma)
    t, _, _ = pdg.evaluate("ridge", g_c, theta, sigma, lam)
    assert np.all(np.abs(t) < 1e-12)


def test_finite_d_grid_approaches_the_limit():
    """Away from γ = 1 the exact d = 20000 surface is within O(1/d) of the n, d → ∞ one."""
    for method in ("linear", "finetune"):
        exact = pdg.compute_grid(method, 0.2, resolution=41, finite_d=20000)
        limit = pdg.compute_grid(method, 0.2, resolution=41)
        far = np.abs(exact["gamma"] - 1) > 0.1
        gap = np.abs(exact["transferability"] - limit["transferability"])[far]
        assert gap.max() < 2e-3


def test_finite_d_undefined_points_are_nan():
    """n = round(γd) ≤ 2: linear/ridge transfer outside the formula's domain (NaN); n = d: T_lt = +inf."""
    grid = pdg.compute_grid("linear", 0.2, gamma_max=2.0, resolution=40, finite_d=20)  # γ = k/20 → n = k
    small = grid[grid["n"] <= 2]
    assert len(small) == 2 * 40 and small[["transferability", "risk_transfer"]].isna().all().all()
    assert np.all(np.isposinf(grid.loc[grid["n"].isin([19, 20, 21]), "transferability"]))
    assert grid.loc[grid["n"] >= 3, "transferability"].notna().all()
    ft = pdg.compute_grid("finetune", 0.2, gamma_max=2.0, resolution=40, finite_d=20)
    assert ft["transferability"].notna().all()  # fine-tuning is defined for every n ≥ 1
    tiny = pdg.compute_grid("finetune", 0.2, gamma_max=0.1, resolution=10, finite_d=3)  # γd < 0.5 → n = 0
    assert tiny.loc[tiny["n"] == 0, "transferability"].isna().all()


def _opening(out):
    grid_value, theory = re.search(r"opens at θ = ([\d.]+) rad .* theory \(n, d → ∞\): ([\d.]+) rad", out).groups()
    return float(grid_value), float(theory)


@pytest.mark.parametrize("sigma", [0.1, 0.2, 0.5])
def test_summary_opening_angle_is_arccos_one_minus_sigma(sigma, tmp_path, capsys):
    """Grid opening angle ∈ [arccos(1−σ), arccos(1−σ) + Δθ + Δγ²/(8σ(1−σ)sinθ_c)] (the region's width grows as √)."""
    res = 80
    code, out = run(["--noise", str(sigma), "--resolution", str(res)], tmp_path, capsys)
    assert code == 0
    theta_c = math.acos(1 - sigma)
    grid_open, theory = _opening(out)
    assert theory == pytest.approx(theta_c, abs=1e-4)
    assert f"arccos(1 − σ) = {theta_c:.4f} rad" in out
    d_theta, d_gamma = (math.pi / 2) / (res - 1), 2.0 / res
    slack = d_theta + d_gamma**2 / (8 * sigma * (1 - sigma) * math.sin(theta_c)) + 1e-4  # + print rounding
    assert theta_c - 1e-4 <= grid_open <= theta_c + slack
    grid = pdg.compute_grid("linear", sigma, resolution=res)
    share = float(re.search(r"T < 0\): ([\d.]+)%", out).group(1)) / 100
    assert share == pytest.approx((grid["transferability"] < 0).mean(), abs=1e-4)


def test_summary_for_fine_tuning_opens_at_pi_over_3(tmp_path, capsys):
    res = 61
    code, out = run(["--method", "finetune", "--resolution", str(res)], tmp_path, capsys)
    assert code == 0
    grid_open, theory = _opening(out)
    assert theory == pytest.approx(math.pi / 3, abs=1e-4)
    assert math.pi / 3 - 1e-4 <= grid_open <= math.pi / 3 + (math.pi / 2) / (res - 1) + 1e-4


def test_no_opening_when_noise_exceeds_one(tmp_path, capsys):
    code, out = run(["--noise", "1.2", "--resolution", "30"], tmp_path, capsys)
    assert code == 0
    assert "opens at θ = none on the grid; theory (n, d → ∞): none" in out


def test_opening_angle_for_ridge():
    """Ridge: cos θ_open = (1−σ)(1+λ)/√(1+2λ); the grid agrees, and λ > 0 widens the negative region."""
    sigma, lam = 0.2, 0.3
    expected = math.acos((1 - sigma) * (1 + lam) / math.sqrt(1 + 2 * lam))
    assert pdg.opening_angle("ridge", sigma, lam) == pytest.approx(expected)
    assert pdg.opening_angle("ridge", sigma, 0.0) == pytest.approx(math.acos(1 - sigma))
    assert expected < math.acos(1 - sigma)
    assert pdg.opening_angle("ridge", 0.05, 5.0) == 0.0  # open already at θ = 0
    grid = pdg.compute_grid("ridge", sigma, resolution=120, lam=lam)
    neg = grid[(grid["gamma"] < 1) & (grid["transferability"] < 0)]
    assert expected <= neg["theta"].min() <= expected + (math.pi / 2) / 119 + 1e-3


# --------------------------------------------------------------------------- figure


def test_plot_overlays_simulated_points():
    import matplotlib.pyplot as plt

    grid = pdg.compute_grid("linear", 0.2, resolution=30)
    sims = pd.DataFrame(
        {
            "gamma": [0.25, 0.5, 1.5, 0.5],
            "theta": [math.pi / 8, math.pi / 8, math.pi / 4, 1.0],
            "transferability_mean": [0.5, 0.3, -0.4, 0.1],
            "transferability_sd": [0.05, 0.05, 0.02, 0.1],
        }
    )
    fig = pdg.plot_phase_diagram(grid, "linear", 0.2, simulated=sims)
    try:
        slices = fig.axes[2]
        assert len(slices.containers) == 3  # one error-bar group per simulated θ
        colors = [line.get_color() for line in slices.get_lines()[:3]]
        assert slices.containers[0].lines[0].get_color() == colors[0]  # θ = π/8 points take the π/8 colour
        assert "simulated θ = 1" in [t.get_text() for t in slices.get_legend().get_texts()]
    finally:
        plt.close(fig)


def test_plot_handles_infinite_and_undefined_values():
    import matplotlib.pyplot as plt

    grid = pdg.compute_grid("linear", 0.2, resolution=20, finite_d=10)
    assert grid["transferability"].isna().any() and np.isposinf(grid["transferability"]).any()
    fig = pdg.plot_phase_diagram(grid, "linear", 0.2, finite_d=10)
    try:
        fig.canvas.draw()
    finally:
        plt.close(fig)


# --------------------------------------------------------------------------- usage errors


@pytest.mark.parametrize(
    "args",
    [
        ["--noise", "-0.1"],
        ["--noise", "nan"],
        ["--noise", "abc"],
        ["--resolution", "1"],
        ["--resolution", "2.5"],
        ["--method", "ridge", "--lam", "-0.1"],
        ["--lam", "0.1"],  # λ without --method ridge
        ["--finite-d", "2"],
        ["--gamma-max", "0"],
        ["--gamma-max", "inf"],
        ["--method", "bogus"],
        ["--format", "jpg"],
        ["--bogus"],
    ],
)
def test_bad_flags_are_usage_errors(args, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        pdg.main([*args, "--out", str(tmp_path)])
    assert exit_info.value.code == 2
    assert "usage:" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(resolution=1), "resolution"),
        (dict(gamma_max=-1.0), "gamma_max"),
        (dict(finite_d=2), "finite_d"),
        (dict(lam=0.1), "lam applies"),
        (dict(method="bogus"), "method"),
        (dict(sigma=-0.1), "sigma"),
    ],
)
def test_compute_grid_rejects_bad_arguments(kwargs, message):
    args = dict(method="linear", sigma=0.2, resolution=8) | kwargs
    with pytest.raises(ValueError, match=message):
        pdg.compute_grid(**args)


def test_unwritable_output_returns_1(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    assert pdg.main(["--resolution", "8", "--out", str(blocker / "sub")]) == 1
    assert "cannot write" in capsys.readouterr().err


def test_module_entry_point_exit_codes():
    ok = subprocess.run([sys.executable, "-m", "transfertheory.phase_diagram", "--help"], capture_output=True, text=True)
    assert ok.returncode == 0
    for flag in ("--noise", "--method", "--lam", "--finite-d", "--gamma-max", "--resolution", "--out", "--format"):
        assert flag in ok.stdout
    bad = subprocess.run(
        [sys.executable, "-m", "transfertheory.phase_diagram", "--noise", "-1"], capture_output=True, text=True
    )
    assert bad.returncode == 2 and "--noise must be >= 0" in bad.stderr


def test_help_lists_the_simulation_flags():
    """--simulate and its options (exercised end to end in tests/test_figures_sim.py)."""
    text = pdg.build_parser().format_help()
    for flag in ("--simulate", "--sim-d", "--sim-draws", "--sim-gammas", "--paper-size", "--seed", "--backend"):
        assert flag in text


def test_non_simulating_cli_does_not_import_the_simulator(tmp_path):
    """The theory-only CLI stays import-light: the simulator loads only with --simulate."""
    code = ("import sys; from transfertheory import phase_diagram as p; "
            f"p.main(['--resolution', '8', '--out', {str(tmp_path)!r}]); "
            "print('transfertheory.sim.deep_linear' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip().splitlines()[-1] == "False"


@pytest.mark.parametrize("sigma", [0.2, 1.0])
def test_flow_limit_sign_angle_is_where_corrected_fine_tuning_transferability_vanishes(sigma):
    gamma = np.array([0.1, 0.5, 0.8])
    angle = pdg.flow_limit_sign_angle(gamma, sigma)
    assert np.all(angle < np.pi / 3)  # σ > 0 moves the sign change below Eq. 17's π/3 (docs/errata.md)
    t = L.fine_tune_transferability_corrected(gamma, angle, sigma)
    np.testing.assert_allclose(t, 0.0, atol=1e-12)
    np.testing.assert_allclose(pdg.flow_limit_sign_angle(gamma, 0.0), np.pi / 3)
    text = pdg.summary(pdg.compute_grid("finetune", sigma, resolution=20), "finetune", sigma)
    assert "θ* = arccos(c/2)" in text
