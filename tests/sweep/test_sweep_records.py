"""The Experiment records of transfertheory.sim: every example runs and returns the shared convergence columns;
the one seeding rule; the one convergence helper."""
import numpy as np
import pandas as pd
import pytest

from transfertheory import params as P
from transfertheory.sim import Experiment, Field, experiments, get_experiment
from transfertheory.sim.convergence import CONVERGENCE_COLUMNS, Convergence, convergence_columns, normalize_convergence
from transfertheory.sim.seeding import derive_seed, generator

RECORDS = experiments()


def test_every_simulator_is_registered():
    assert {"faf_linear", "faf_relu", "merlin", "tdr", "mtl", "faf_surface"} <= set(RECORDS)


@pytest.mark.parametrize("name", sorted(RECORDS))
def test_example_returns_the_points_parameters_and_the_convergence_columns(name):
    record = RECORDS[name]
    table = record.run(seed=3, backend="numpy", **record.example)
    point = record.point(**record.example)
    assert isinstance(table, pd.DataFrame) and len(table) >= 1 and not table.attrs
    assert list(table.columns[:len(point)]) == list(point)
    assert set(CONVERGENCE_COLUMNS) <= set(table.columns)
    assert table["converged"].dtype == bool and table["steps"].dtype == np.int64
    assert table["t_final"].dtype == float and table["grad_norm"].dtype == float
    assert all(isinstance(s, str) for s in table["status"])
    for key, value in point.items():
        expected = ",".join(map(str, value)) if isinstance(value, tuple) else value
        assert (table[key] == expected).all(), key
    pd.testing.assert_frame_equal(table, record.run(seed=3, backend="numpy", **record.example))


@pytest.mark.parametrize("name", ["faf_linear", "tdr"])
def test_the_seed_changes_the_draws(name):
    record = RECORDS[name]
    first = record.run(seed=1, **record.example)
    second = record.run(seed=2, **record.example)
    column = "risk" if name == "faf_linear" else "distance"
    assert not np.allclose(first[column].dropna(), second[column].dropna())


def test_a_point_is_validated_naming_the_parameter():
    record = get_experiment("faf_linear")
    with pytest.raises(ValueError, match=r"gamma must be in \(0, inf\), got -1"):
        record.point(gamma=-1)
    with pytest.raises(ValueError, match="unknown parameter 'gama' of experiment 'faf_linear'"):
        record.point(gama=0.5)
    with pytest.raises(ValueError, match="methods must be one of"):
        record.point(methods=("scratch", "ridge"))
    with pytest.raises(ValueError, match="methods must be a non-empty list"):
        record.point(methods=())
    with pytest.raises(ValueError, match="unknown experiment 'nope'"):
        get_experiment("nope")


def test_a_record_checks_its_own_example():
    with pytest.raises(ValueError, match="x must be in"):
        Experiment("toy", "none", 1, (Field("x", 1.0, P.GAMMA),), {"x": -1.0}, lambda p, seed, backend: None)


def test_convergence_columns_have_one_shape_and_one_set_of_types():
    cols = convergence_columns(Convergence.of_length(3, True, "exact", np.nan, 0, np.nan))
    assert list(cols) == list(CONVERGENCE_COLUMNS)
    assert [cols[c].dtype for c in CONVERGENCE_COLUMNS] == [bool, np.dtype("<U5"), float, np.int64, float]
    assert all(len(v) == 3 for v in cols.values())
    frame = pd.DataFrame(dict(converged=[1, 0], status=["converged", "max_time"], t_final=[1, 2], steps=[3.0, None],
                              grad_norm=[1e-7, 1e-2]))
    out = normalize_convergence(frame)
    assert out["converged"].tolist() == [True, False] and out["steps"].tolist() == [3, 0]
    with pytest.raises(ValueError, match=r"lacks \['grad_norm'\]"):
        normalize_convergence(frame.drop(columns="grad_norm"))


def test_the_seeding_rule_is_a_pure_function_of_seed_and_key():
    a, b = generator(5, 1, 2).standard_normal(4), generator(5, 1, 2).standard_normal(4)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, generator(5, 2, 1).standard_normal(4))
    assert not np.array_equal(a, generator(6, 1, 2).standard_normal(4))
    assert derive_seed(5, 1, 2) == derive_seed(5, 1, 2) != derive_seed(5, 1, 3)
    assert 0 <= derive_seed(0, 2**32 - 1) < 2**32
    with pytest.raises(ValueError, match="key must hold integers >= 0"):
        generator(0, -1)
    with pytest.raises(ValueError, match="seed must be an integer >= 0"):
        derive_seed(-1)
