"""FaF §3 figure simulations through the sweep engine: run into a store, resumed from it, the same table shape."""
import pandas as pd
import pytest

from transfertheory.figures.simulation import SIM_COLUMNS, SWEEP_RUNNER, simulate_slices
from transfertheory.sweep.runner import LEDGER, SweepRunner, default_store
from transfertheory.sweep.store import Store

SLICES = dict(d=8, draws=3, n_gammas=3, gamma_max=2.0, thetas=(0.4, 1.0))


def _through(runner):
    token = SWEEP_RUNNER.set(runner)
    try:
        return simulate_slices("linear", 0.2, **SLICES)
    finally:
        SWEEP_RUNNER.reset(token)


def test_slices_run_through_the_store_and_are_read_back_without_recomputing(tmp_path):
    first = _through(SweepRunner(str(tmp_path), workers=1, progress=False))
    stamps = {p.name: p.stat().st_mtime_ns for p in tmp_path.glob("points/*.parquet")}
    assert len(stamps) == 3 * 2  # n = 5, 11, 16 × two θ: one point each
    assert list(first.columns) == SIM_COLUMNS and (first["n_draws"] == 3).all()
    again = _through(SweepRunner(str(tmp_path), workers=1, progress=False))
    pd.testing.assert_frame_equal(first, again, check_exact=True)
    assert {p.name: p.stat().st_mtime_ns for p in tmp_path.glob("points/*.parquet")} == stamps
    in_process = simulate_slices("linear", 0.2, **SLICES)  # the same points, other draws
    pd.testing.assert_frame_equal(first[["gamma", "theta", "n", "theory_finite"]],
                                  in_process[["gamma", "theta", "n", "theory_finite"]])


def test_a_build_from_the_store_is_told_what_its_points_cost_when_they_were_computed(tmp_path):
    """The ledger (what a figure's NAME.json records as ``store_points``): per rows() call, the points returned and
    the sum of their stored compute seconds — the same whether this run computed them or read them back."""
    ledgers = []
    for _ in range(2):
        ledgers.append([])
        token = LEDGER.set(ledgers[-1])
        try:
            _through(SweepRunner(str(tmp_path), workers=1, progress=False))
        finally:
            LEDGER.reset(token)
    store = Store(str(tmp_path))
    seconds = sum(store.metadata(pid)["seconds"] for pid in store.done())
    assert ledgers[0] == ledgers[1] and ledgers[0][0]["points"] == 6 and len(ledgers[0]) == 1
    assert ledgers[0][0]["compute_s"] == pytest.approx(seconds, rel=1e-12) and seconds > 0
    _through(SweepRunner(str(tmp_path), workers=1, progress=False))  # no ledger set: nothing recorded
    assert len(ledgers[1]) == 1


def test_the_default_store_is_under_the_cache_directory(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert default_store() == tmp_path / "transfertheory" / "sweeps"
