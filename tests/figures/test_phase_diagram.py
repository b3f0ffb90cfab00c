"""``python -m transfertheory.phase_diagram`` and the phase-diagram figure module (FaF Figs. 1 and 3).

The CLI runs in-process through ``main([...])`` with ``tmp_path`` as output
folder (plus subprocess runs for the module entry point and exit codes).
Grids are small (resolution ≤ 80) to keep the file at a few seconds. The grid
is checked against the method records' closed forms (wiring), the summary's
opening angles against their geometric bounds on the grid.
"""
import json
import math
import re
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from transfertheory import phase_diagram as cli
from transfertheory.figures import phase_diagram as pdg
from transfertheory.figures import phase_grid as pg
from transfertheory.theory import linear as L
from transfertheory.theory import transfer
from transfertheory.theory.methods import get_method


def run(args, tmp_path, capsys):
    """main() with --out tmp_path; returns (exit code, stdout)."""
    code = cli.main([*args, "--out", str(tmp_path)])
    return code, capsys.readouterr().out


def _frame(*args, **kwargs):
    """The tidy grid of compute_phase_grid(*args, **kwargs) as a DataFrame."""
    return pd.DataFrame(pg.compute_phase_grid(*args, **kwargs).columns())


# --------------------------------------------------------------------------- end to end


def test_default_run_writes_png_and_tidy_csv(tmp_path, capsys):
    code, out = run(["--noise", "0.2", "--resolution", "40"], tmp_path, capsys)
    assert code == 0
    name = "phase_diagram_linear_sigma0.2"
    png, csv, meta = tmp_path / f"{name}.png", tmp_path / f"{name}.csv", tmp_path / f"{name}.json"
    assert sorted(tmp_path.iterdir()) == [csv, meta, png]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    grid = pd.read_csv(csv)
    assert list(grid.columns) == pg.COLUMNS
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
    """The CSV (written through the fast categorical path) holds exactly the grid's numbers."""
    code, _ = run(["--method", "finetune", "--noise", "0.3", "--finite-d", "12", "--resolution", "30"], tmp_path, capsys)
    assert code == 0
    grid = _frame("finetune", 0.3, resolution=30, finite_d=12)
    written = pd.read_csv(tmp_path / "phase_diagram_finetune_sigma0.3_d12.csv")
    assert list(written.columns) == [*pg.COLUMNS, "n", "d"]
    for col in grid.columns:
        if col == "method":
            assert (written[col] == grid[col]).all()
        else:
            np.testing.assert_array_equal(written[col].to_numpy(dtype=float), grid[col].to_numpy(dtype=float))


@pytest.mark.parametrize("method, options", [
    ("linear", {}), ("ridge", dict(lam=0.5)), ("finetune", dict(finite_d=12)), ("finetune", dict(depth=3)),
])
def test_array_grid_writes_the_dataframe_csv_byte_for_byte(method, options, tmp_path):
    """The command line's pandas-free grid (PhaseGrid, columns written from arrays) gives the same CSV bytes as its
    tidy DataFrame written by pandas itself."""
    from transfertheory.figures.output import write_csv

    arrays = pg.compute_phase_grid(method, 0.3, resolution=25, **options)
    frame = pd.DataFrame(arrays.columns())
    write_csv(arrays.columns(), tmp_path / "arrays.csv")
    frame.to_csv(tmp_path / "pandas.csv", index=False)
    assert (tmp_path / "arrays.csv").read_bytes() == (tmp_path / "pandas.csv").read_bytes()
    assert list(arrays.columns()) == list(frame.columns)


def test_command_line_imports_neither_pandas_nor_pyplot(tmp_path):
    """The README's first command draws on a bare Agg canvas from NumPy arrays: the start-up cost of pandas and
    pyplot is not paid."""
    code = ("import sys; from transfertheory import phase_diagram as cli; "
            f"code = cli.main(['--resolution', '20', '--out', {str(tmp_path)!r}]); "
            "print(code, sorted(m for m in ('pandas', 'matplotlib.pyplot') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines()[-1] == "0 []"


def test_legends_below_the_panels_are_inside_the_written_region(tmp_path):
    """The legends placed under panels (b) and (c) are inside the PNG: savefig's tight region includes them."""
    from PIL import Image

    from transfertheory.figures import output as out

    result = pdg.phase_diagram_output(pg.compute_phase_grid("finetune", 0.2, resolution=20), "finetune", 0.2)
    fig = result.figure
    out.write_outputs(result, "x", tmp_path, "png")
    legends = [ax.get_legend() for ax in fig.axes if ax.get_legend()]
    lowest = min(legend.get_window_extent().y0 for legend in legends)
    tight = fig.get_tightbbox(fig.canvas.get_renderer()).padded(0.1)
    assert len(legends) == 2 and lowest / fig.dpi > tight.y0
    width, height = Image.open(tmp_path / "x.png").size  # savefig rounds the region to whole pixels
    assert abs(width - tight.width * out.DPI) <= 1 and abs(height - tight.height * out.DPI) <= 1


@pytest.mark.parametrize(
    "fmt, suffixes",
    [("png", {".png", ".csv", ".json"}), ("pdf", {".pdf", ".csv", ".json"}), ("both", {".png", ".pdf", ".csv", ".json"})]
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
    assert list(grid.columns) == pg.COLUMNS + extra
    assert grid["gamma"].max() == 3.0
    assert (tmp_path / f"{name}.png").is_file()
    assert "negative transfer" in out


# --------------------------------------------------------------------------- the numbers


def test_grid_values_are_the_closed_forms():
    grid = _frame("linear", 0.2, resolution=17)
    gamma, theta = grid["gamma"].to_numpy(), grid["theta"].to_numpy()
    np.testing.assert_array_equal(grid["transferability"], L.linear_transferability(gamma, theta, 0.2))
    np.testing.assert_array_equal(grid["risk_transfer"], np.sin(theta) ** 2)
    assert pg.compute_phase_grid("linear", 0.2, resolution=17).limit == "flow"
    # fine-tuning: gradient flow by default (corrected rescaling c), the paper's Eq. 17 on request
    finetune = get_method("finetune")
    ft = _frame("finetune", 0.2, resolution=17)
    np.testing.assert_array_equal(ft["transferability"], finetune.flow_transferability(gamma, theta, 0.2) + 0.0)
    paper = _frame("finetune", 0.2, resolution=17, limit="paper")
    np.testing.assert_array_equal(paper["transferability"], finetune.paper_transferability(gamma, theta, 0.2) + 0.0)
    assert np.abs(ft["transferability"] - paper["transferability"]).max() > 0.01
    # T_ft = 0 at γ = 1 although both risks are +inf (pathwise cancellation)
    ft = _frame("finetune", 0.2, resolution=20)
    one = ft[ft["gamma"] == 1.0]
    assert np.all(one["transferability"] == 0) and np.all(np.isposinf(one["risk_transfer"]))


def test_finite_d_fine_tuning_draws_the_paper_formula_and_says_so():
    """The finite-size gradient-flow limit of fine-tuning is a Monte Carlo, so a finite-d grid is Eq. 17."""
    grid = pg.compute_phase_grid("finetune", 0.2, resolution=12, finite_d=20)
    assert grid.limit == "paper"
    with pytest.raises(ValueError, match="limit='flow'"):
        pg.compute_phase_grid("finetune", 0.2, resolution=12, finite_d=20, limit="flow")
    assert "not the gradient-flow limit" in pdg.summary(grid, "finetune", 0.2, finite_d=20)


def test_ridge_at_zero_lambda_is_linear_transfer():
    lin = _frame("linear", 0.3, resolution=21)
    ridge = _frame("ridge", 0.3, resolution=21, lam=0.0)
    np.testing.assert_allclose(ridge["transferability"], lin["transferability"], rtol=1e-12, atol=1e-14)


def test_finite_d_grid_approaches_the_limit():
    """Away from γ = 1 the exact d = 20000 surface is within O(1/d) of the n, d → ∞ one (paper's formulas)."""
    for method in ("linear", "finetune"):
        exact = _frame(method, 0.2, resolution=41, finite_d=20000)
        limit = _frame(method, 0.2, resolution=41, limit="paper")
        far = np.abs(exact["gamma"] - 1) > 0.1
        gap = np.abs(exact["transferability"] - limit["transferability"])[far]
        assert gap.max() < 2e-3


def test_finite_d_undefined_points_are_nan():
    """n = round(γd) ≤ 2: linear/ridge transfer outside the formula's domain (NaN); n = d: T_lt = +inf."""
    grid = _frame("linear", 0.2, resolution=40, finite_d=20)  # γ = k/20 → n = k
    small = grid[grid["n"] <= 2]
    assert len(small) == 2 * 40 and small[["transferability", "risk_transfer"]].isna().all().all()
    assert np.all(np.isposinf(grid.loc[grid["n"].isin([19, 20, 21]), "transferability"]))
    assert grid.loc[grid["n"] >= 3, "transferability"].notna().all()
    ft = _frame("finetune", 0.2, resolution=40, finite_d=20)
    assert ft["transferability"].notna().all()  # fine-tuning is defined for every n ≥ 1
    tiny = _frame("finetune", 0.2, gamma_max=0.1, resolution=10, finite_d=3)  # γd < ½: n = 0
    assert tiny.loc[tiny["n"] == 0, "transferability"].isna().all()


def _opening(out):
    grid_value, theory = re.search(r"opens at θ = ([\d.]+) rad .* theory \(n, d → ∞\): .*?([\d.]+) rad", out).groups()
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
    grid = _frame("linear", sigma, resolution=res)
    share = float(re.search(r"T < 0\): ([\d.]+)%", out).group(1)) / 100
    assert share == pytest.approx((grid["transferability"] < 0).mean(), abs=1e-4)


def test_summary_for_fine_tuning_prints_only_its_own_angles(tmp_path, capsys):
    """Paper limit: opens at π/3 (Eq. 17). Gradient flow: θ*(γ) = arccos(c/2) < π/3, printed at three γ; the
    linear-transfer angle arccos(1 − σ) is not printed."""
    res = 61
    code, out = run(["--method", "finetune", "--limit", "paper", "--resolution", str(res)], tmp_path, capsys)
    assert code == 0
    grid_open, theory = _opening(out)
    assert theory == pytest.approx(math.pi / 3, abs=1e-4)
    assert math.pi / 3 - 1e-4 <= grid_open <= math.pi / 3 + (math.pi / 2) / (res - 1) + 1e-4
    code, out = run(["--method", "finetune", "--resolution", str(res)], tmp_path, capsys)
    assert code == 0 and "arccos(1 − σ)" not in out and "linear-transfer" not in out
    angles = [float(a) for a in re.findall(r"([\d.]+) rad \([\d.]+°\) at γ = ", out)]
    np.testing.assert_allclose(angles, transfer.flow_limit_sign_angle(np.array([0.1, 0.5, 0.9]), 0.2), atol=1e-4)
    assert max(angles) < math.pi / 3
    # on the grid the flow's negative region starts no lower than the smallest θ* up to the grid's largest γ < 1
    grid = _frame("finetune", 0.2, resolution=res)
    gammas = np.unique(grid["gamma"])
    floor = transfer.flow_limit_sign_angle(gammas[gammas < 1].max(), 0.2)
    assert _opening(out)[0] >= floor - 1e-4


def test_fine_tuning_at_depth_three_prints_theta_star_and_draws_the_deeper_limit(tmp_path, capsys):
    """--depth L: the gradient-flow limit of an L-layer network (θ* = 48.0° at σ = 1, γ = ½ for L = 3, 52.2° for
    L = 2, 30.0° as L → ∞), in the grid, the summary, the metadata and the file name."""
    code, out = run(["--method", "finetune", "--noise", "1", "--depth", "3", "--resolution", "41"], tmp_path, capsys)
    assert code == 0
    assert "θ* = 48.0° at γ = ½ for L = 3 (L = 2: 52.2°, L → ∞: 30.0°; the paper's Eq. 17: 60.0°)" in out
    angles = [float(a) for a in re.findall(r"([\d.]+) rad \([\d.]+°\) at γ = ", out)]
    np.testing.assert_allclose(angles, transfer.flow_limit_sign_angle(np.array([0.1, 0.5, 0.9]), 1.0, 3), atol=1e-4)
    name = "phase_diagram_finetune_sigma1_L3"
    assert json.loads((tmp_path / f"{name}.json").read_text(encoding="utf-8"))["parameters"]["depth"] == 3
    grid = pd.read_csv(tmp_path / f"{name}.csv")
    expected = get_method("finetune").flow_transferability(grid["gamma"], grid["theta"], 1.0, depth=3)
    np.testing.assert_allclose(grid["transferability"], expected, rtol=1e-12, atol=1e-12)
    assert not np.allclose(grid["transferability"], get_method("finetune").flow_transferability(
        grid["gamma"], grid["theta"], 1.0, depth=2))


def test_depth_changes_only_fine_tuning_s_gradient_flow_grid():
    for method, limit in (("linear", None), ("finetune", "paper")):
        two, three = (_frame(method, 1.0, resolution=9, limit=limit, depth=depth) for depth in (2, 3))
        pd.testing.assert_frame_equal(two, three)
    assert pg.compute_phase_grid("finetune", 1.0, resolution=9, depth=4).depth == 4


def test_no_opening_when_noise_exceeds_one(tmp_path, capsys):
    code, out = run(["--noise", "1.2", "--resolution", "30"], tmp_path, capsys)
    assert code == 0
    assert "opens at θ = none on the grid; theory (n, d → ∞): arccos(1 − σ) = none" in out


def test_opening_angle_on_a_ridge_grid():
    """Ridge: the grid's negative region opens at the theory's cos θ_open = (1−σ)(1+λ)/√(1+2λ)."""
    sigma, lam = 0.2, 0.3
    expected = math.acos((1 - sigma) * (1 + lam) / math.sqrt(1 + 2 * lam))
    grid = pg.compute_phase_grid("ridge", sigma, resolution=120, lam=lam)
    frame = pd.DataFrame(grid.columns())
    neg = frame[(frame["gamma"] < 1) & (frame["transferability"] < 0)]
    assert expected <= neg["theta"].min() <= expected + (math.pi / 2) / 119 + 1e-3
    assert "arccos((1 − σ)(1 + λ)/√(1 + 2λ))" in pdg.summary(grid, "ridge", sigma, lam)


# --------------------------------------------------------------------------- figure


def test_plot_overlays_simulated_points():
    import matplotlib.pyplot as plt

    grid = pg.compute_phase_grid("linear", 0.2, resolution=30)
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


def test_plot_handles_infinite_and_undefined_values_and_names_the_grey_band():
    import matplotlib.pyplot as plt

    grid = pg.compute_phase_grid("linear", 0.2, resolution=20, finite_d=10)
    assert np.isnan(grid.transferability).any() and np.isposinf(grid.transferability).any()
    fig = pdg.plot_phase_diagram(grid, "linear", 0.2, finite_d=10)
    try:
        fig.canvas.draw()
        labels = [t.get_text() for t in fig.axes[1].get_legend().get_texts()]
        assert "undefined: n = round(γd) < 3" in labels
    finally:
        plt.close(fig)


def test_panel_a_has_a_colour_bar():
    import matplotlib.pyplot as plt

    fig = pdg.plot_phase_diagram(pg.compute_phase_grid("linear", 0.2, resolution=20), "linear", 0.2)
    try:
        bars = [ax for ax in fig.axes if ax.get_label() == "<colorbar>"]
        assert len(bars) == 1 and bars[0].get_ylabel().startswith("T (not drawn where |T| > 1")
    finally:
        plt.close(fig)


def test_fine_tuning_figure_shades_gradient_flow_and_overlays_the_paper():
    """Panel (b) is the sign of the flow transferability; the legend names both boundaries, the title says which."""
    import matplotlib.pyplot as plt

    grid = pg.compute_phase_grid("finetune", 0.5, resolution=40)
    fig = pdg.plot_phase_diagram(grid, "finetune", 0.5)
    try:
        labels = [t.get_text() for t in fig.axes[1].get_legend().get_texts()]
        assert any(label.startswith("θ* = arccos(c/2): gradient flow") for label in labels)
        assert any(label.startswith("θ = π/3: paper's Eq. 17") for label in labels)
        assert "gradient-flow limit" in fig._suptitle.get_text()
        image = fig.axes[1].get_images()[0].get_array()
        np.testing.assert_array_equal(image, np.sign(pg.grid_surface(grid)[2]))
    finally:
        plt.close(fig)


def _slice_points(method):
    """Simulated points on every slice and at γ up to 1.75, where a legend in a corner of (c) used to sit."""
    gammas = [0.25, 0.5, 0.75, 1.25, 1.5, 1.75]
    rows = [dict(gamma=g, theta=th, d=16, n_converged=20, n_draws=20, transferability_sd=0.03,
                 transferability_mean=float(transfer.transfer_risks(method, g, th, 0.2)[0]))
            for th in (math.pi / 8, math.pi / 4, 3 * math.pi / 8) for g in gammas]
    return pd.DataFrame(rows)


@pytest.mark.parametrize("method", ["linear", "finetune"])
def test_legends_leave_every_plotted_point_line_and_cell_visible(method):
    """FaF Figs. 1 and 3: no legend box covers the sign map of (b), its boundaries, or a slice or point of (c)."""
    import matplotlib.pyplot as plt

    from figure_checks import assert_no_legend_over_data

    fig = pdg.plot_phase_diagram(pg.compute_phase_grid(method, 0.2, resolution=60), method, 0.2,
                                 simulated=_slice_points(method))
    try:
        assert len([ax for ax in fig.axes if ax.get_legend() is not None]) == 2
        assert_no_legend_over_data(fig)
    finally:
        plt.close(fig)


def test_slices_panel_says_how_many_simulated_draws_converged():
    import matplotlib.pyplot as plt

    points = _slice_points("linear").assign(n_converged=[20] * 17 + [18])
    fig = pdg.plot_phase_diagram(pg.compute_phase_grid("linear", 0.2, resolution=30), "linear", 0.2, simulated=points)
    try:
        assert fig.axes[2].get_title().endswith("\nconverged: target draws 358/360")
    finally:
        plt.close(fig)


def test_panel_a_leaves_out_the_pole_instead_of_clipping_it_into_a_wall():
    """Near γ = 1 the linear-transfer surface diverges; facets beyond ±1 are left out, none is flattened onto ±1."""
    import matplotlib.pyplot as plt

    grid = pg.compute_phase_grid("linear", 0.2, resolution=60)
    assert (np.abs(grid.transferability) > pdg.DISPLAY_LIMIT).sum() > 60  # the pole crosses the display range
    fig = pdg.plot_phase_diagram(grid, "linear", 0.2)
    try:
        facets = np.asarray(fig.axes[0].collections[0].get_array(), dtype=float)
        assert facets.size > 0 and np.abs(facets).max() < pdg.DISPLAY_LIMIT - 1e-3
    finally:
        plt.close(fig)


@pytest.mark.parametrize("method", ["linear", "finetune"])
def test_panel_a_draws_the_zero_transfer_boundaries_on_the_surface(method):
    """As in the paper's Figs. 1(a) and 3(a): light-blue T = 0 lines on the surface, where T is indeed 0."""
    import matplotlib.pyplot as plt

    fig = pdg.plot_phase_diagram(pg.compute_phase_grid(method, 0.2, resolution=40), method, 0.2)
    try:
        lines = [line.get_data_3d() for line in fig.axes[0].get_lines()]
        assert len(lines) >= 2
        for gamma, theta, z in lines:
            assert np.all(z == 0)
            inside = np.isfinite(gamma) & (gamma > 1e-2) & (gamma < 2) & (np.abs(gamma - 1) > 1e-6) & (theta > 1e-2)
            values = transfer.transfer_risks(method, gamma[inside], theta[inside], 0.2)[0]
            np.testing.assert_allclose(values, 0.0, atol=1e-6)
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
        ["--resolution", "100000000"],  # would allocate petabytes: bounded by params.RESOLUTION
        ["--limit", "flow", "--method", "finetune", "--finite-d", "20"],
        ["--method", "ridge", "--lam", "-0.1"],
        ["--lam", "0.1"],  # λ without --method ridge
        ["--depth", "3"],  # depth without --method finetune: linear transfer does not depend on it
        ["--method", "finetune", "--depth", "1"],
        ["--method", "finetune", "--depth", "2.5"],
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
        cli.main([*args, "--out", str(tmp_path)])
    assert exit_info.value.code == 2
    assert "usage:" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(resolution=1), "resolution"),
        (dict(resolution=10**8), "resolution"),
        (dict(gamma_max=-1.0), "gamma_max"),
        (dict(finite_d=2), "finite_d"),
        (dict(lam=0.1), "lam applies"),
        (dict(method="bogus"), "method"),
        (dict(sigma=-0.1), "sigma"),
        (dict(depth=1), "depth"),
    ],
)
def test_compute_phase_grid_rejects_bad_arguments(kwargs, message):
    args = dict(method="linear", sigma=0.2, resolution=8) | kwargs
    with pytest.raises(ValueError, match=message):
        pg.compute_phase_grid(**args)


def test_unwritable_output_returns_1(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    assert cli.main(["--resolution", "8", "--out", str(blocker / "sub")]) == 1
    assert "cannot write" in capsys.readouterr().err


def test_module_entry_point_exit_codes():
    ok = subprocess.run([sys.executable, "-m", "transfertheory.phase_diagram", "--help"], capture_output=True, text=True)
    assert ok.returncode == 0
    for flag in ("--noise", "--method", "--lam", "--finite-d", "--gamma-max", "--resolution", "--out", "--format"):
        assert flag in ok.stdout
    bad = subprocess.run(
        [sys.executable, "-m", "transfertheory.phase_diagram", "--noise", "-1"], capture_output=True, text=True
    )
    assert bad.returncode == 2 and "argument --noise: must be in [0, 1e+12], got -1" in bad.stderr


def test_help_lists_the_simulation_flags():
    """--simulate and its options (exercised end to end in tests/figures/test_figures_sim.py)."""
    text = cli.build_parser().format_help()
    for flag in ("--simulate", "--sim-d", "--sim-draws", "--sim-gammas", "--paper-size", "--seed", "--backend"):
        assert flag in text


def test_non_simulating_cli_does_not_import_the_simulator(tmp_path):
    """The theory-only CLI stays import-light: no module of the simulators (not even the integrator that
    ``transfertheory.sim`` loads) loads
    without --simulate."""
    code = ("import sys; from transfertheory import phase_diagram as p; "
            f"p.main(['--resolution', '8', '--out', {str(tmp_path)!r}]); "
            "print(sorted(m for m in sys.modules if m.split('.')[:2] == ['transfertheory', 'sim']))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip().splitlines()[-1] == "[]"


def test_simulated_fine_tuning_at_depth_three_converges_and_trains_three_layers(tmp_path, capsys):
    """--depth 3 --simulate trains three-layer networks at the depth's initialization scale (App. D.1's α = 1e-5
    would leave them on the saddle past max_time): every draw converges, the metadata and points carry L = 3."""
    from transfertheory.figures.simulation import simulation_alpha

    assert (simulation_alpha(2), simulation_alpha(3)) == (1e-5, 1e-3) and math.isclose(simulation_alpha(4), 10**-1.5)
    code, out = run(["--method", "finetune", "--noise", "1", "--depth", "3", "--simulate", "--sim-d", "12",
                     "--sim-draws", "3", "--sim-gammas", "2", "--resolution", "8"], tmp_path, capsys)
    assert code == 0
    points = pd.read_csv(tmp_path / "phase_diagram_finetune_sigma1_L3_simulated.csv")
    assert (points["n_converged"] == points["n_draws"]).all()
    np.testing.assert_allclose(points["theory_asymptotic"], get_method("finetune").flow_transferability(
        points["gamma"], points["theta"], 1.0, depth=3) + 0.0)
