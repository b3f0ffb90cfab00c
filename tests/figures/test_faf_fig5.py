"""FaF Fig. 5: the study (``transfertheory.theory.distance_study``) and the figure (``python -m transfertheory.figures faf_fig5``)."""
import numpy as np
import pandas as pd
import pytest

from transfertheory.figures import faf_fig5
from transfertheory.theory import distance_study
from transfertheory.theory import distances as D

COLUMNS = {"theta", "norm", "d", "n", "sigma", "samples", "risk_scratch", "risk_transfer", "transferability",
           *distance_study.DISTANCES}


def test_build_writes_figure_csv_and_correlations(tmp_path):
    output = faf_fig5.build(d=10, n=5, samples=40, angles=5, norms=(0.5, 1, 2))
    points, (suffix, spearman, _) = output.data, output.extra[0]
    assert set(points.columns) == COLUMNS == set(faf_fig5.COLUMN_DEFINITIONS)
    assert len(points) == 5 * 3
    assert list(spearman["distance"]) == list(distance_study.DISTANCES)
    assert spearman["spearman_rho"].between(-1, 1).all()
    assert any("Spearman" in line for line in output.summary)
    import matplotlib.pyplot as plt

    plt.close(output.figure)


def test_points_are_the_closed_forms_and_reproducible():
    kwargs = dict(d=12, n=6, sigma=0.3, samples=30, thetas=np.linspace(0, np.pi, 4), norms=(0.5, 2.0), seed=3)
    points = distance_study.compute_points(**kwargs)
    bs, bt = np.eye(12)[0], np.zeros((len(points), 12))
    bt[:, 0] = points["norm"] * np.cos(points["theta"])
    bt[:, 1] = points["norm"] * np.sin(points["theta"])
    np.testing.assert_allclose(points["kl"], np.sum((bt - bs) ** 2, axis=1) / (2 * 0.3**2))
    for row in points.itertuples():
        assert row.transferability == pytest.approx(
            D.scaled_target_transferability_finite(6, 12, row.theta, 0.3, row.norm), rel=1e-12)
        assert row.transferability == pytest.approx(row.risk_scratch - row.risk_transfer, rel=1e-12, abs=1e-12)
        assert row.dudley_lower <= row.dudley_upper <= 2.0
    pd.testing.assert_frame_equal(points, distance_study.compute_points(**kwargs))
    assert not points["w1_empirical"].equals(distance_study.compute_points(**{**kwargs, "seed": 4})["w1_empirical"])


def test_transferability_is_not_a_decreasing_function_of_kl_or_w1():
    """FaF §2.1 / Fig. 5 at the default settings: there are pairs of targets where the *farther* target
    (in D_KL, and in empirical W₁) transfers *better*, including a far target with positive T and a near
    one with negative T."""
    output = faf_fig5.build()
    points, (suffix, spearman, _) = output.data, output.extra[0]
    t = points["transferability"].to_numpy()
    for column in ("kl", "w1_empirical"):
        dist = points[column].to_numpy()
        farther_and_better = (dist[:, None] > dist[None, :]) & (t[:, None] > t[None, :])
        assert farther_and_better.any(), column
    far = points[(points["norm"] == 4.0) & (points["theta"] == 0.0)].iloc[0]
    near = points[(points["norm"] == 1.0) & np.isclose(points["theta"], np.pi / 2)].iloc[0]
    assert far["kl"] > near["kl"] and far["w1_empirical"] > near["w1_empirical"]
    assert far["transferability"] > 0 > near["transferability"]
    rho = spearman.set_index("distance")["spearman_rho"]
    assert (rho > -0.9).all()  # far from the ρ = −1 of a distance that predicted transfer
    assert suffix == "_spearman"
    # panel (b) starts at W₁ = 0 and shades the sampling-bias floor, the W₁ of the source law against itself
    panel = output.figure.axes[1]
    floor = points.attrs["w1_floor"]
    assert floor == points.loc[(points["norm"] == 1.0) & (points["theta"] == 0.0), "w1_empirical"].iloc[0]
    assert panel.get_xlim()[0] == 0 and panel.patches[0].get_x() == 0
    assert panel.patches[0].get_width() == pytest.approx(floor)
    assert "sampling-bias floor" in panel.get_legend().get_texts()[0].get_text()
    import matplotlib.pyplot as plt

    plt.close(output.figure)


def test_spearman_of_a_constant_column_is_nan():
    """With unit-norm targets the cos(y)/2 Dudley bound is 0 for all of them: no ranks to correlate."""
    points = distance_study.compute_points(d=6, n=3, samples=5, thetas=np.linspace(0, np.pi, 5), norms=(1.0,))
    rho = distance_study.spearman_table(points).set_index("distance")["spearman_rho"]
    assert np.isnan(rho["dudley_lower"])
    assert np.isfinite(rho["kl"])
