"""The registered figure of fine-tuning's sign angle θ*(γ, L) against depth (``faf_finetune_depth``): its table is
the theory module's angles, the summary gives θ* at γ = ½ (48.0° at L = 3, σ = 1), the legends sit off the data."""
from __future__ import annotations

import math

import numpy as np

from figure_checks import assert_no_legend_over_data
from transfertheory.figures import faf_finetune_depth as F
from transfertheory.figures import catalog, registry
from transfertheory.theory import transfer


def test_table_is_the_theory_and_falls_with_depth_toward_its_limit():
    out = F.build(sigmas=(0.2, 1.0), gammas=(0.25, 0.5), depths=(2, 3, 4, 64), depths_b=(2, 3))
    table = out.data
    assert list(table.columns) == list(F.COLUMNS) and len(table) == 2 * 2 * 4
    for row in table.itertuples():
        assert math.isclose(row.theta_star_deg, math.degrees(transfer.flow_limit_sign_angle(row.gamma, row.sigma,
                                                                                             row.depth)))
        assert math.isclose(row.theta_star_deep_limit_deg,
                            math.degrees(transfer.flow_limit_sign_angle_deep_limit(row.gamma, row.sigma)))
    for _, part in table.groupby(["sigma", "gamma"]):
        angles = part.sort_values("depth")["theta_star_deg"].to_numpy()
        assert np.all(np.diff(angles) < 0) and angles[-1] > part["theta_star_deep_limit_deg"].iloc[0]
        assert angles[0] < F.PAPER_DEGREES
    expected = "σ = 1: L = 2: 52.2°, L = 3: 48.0°, L = 4: 45.2°, L = 64: 31.6°; L → ∞: 30.0°"
    assert expected in " ".join(out.summary)


def test_registered_with_both_profiles_and_legends_off_the_data():
    figure = catalog.get_figure("faf_finetune_depth")
    assert not figure.simulates and set(figure.profiles) == {"quick", "full", "paper"}
    out = figure.make("quick")
    assert all(ax.get_legend() is not None for ax in out.figure.axes)
    assert_no_legend_over_data(out.figure)
    assert {ax.get_ylabel() for ax in out.figure.axes} == {"θ* (degrees)"}
