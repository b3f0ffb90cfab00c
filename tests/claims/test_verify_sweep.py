"""``verify --paper`` / ``--store``: the sampling claims' points through the sweep engine — stopped by Ctrl-C and
resumed without recomputing a stored point, the table of an uninterrupted run; an unwritable store refused before
any work; a Dask cluster; a real claim in spawned worker processes gives the in-process audit's numbers.

Small registered test claims (two points each in the paper profile) keep the engine tests fast: the paper's sizes
are not run here."""
import json

import numpy as np
import pytest
from hypothesis import strategies as st

from transfertheory import audit_table, claims, verify
from transfertheory.claims import sweep_points

IDS = ("test.verify-sweep.a", "test.verify-sweep.b")
PATTERN = "test.verify-sweep.*"
CALLS = []  # parameters of every check run, in order
INTERRUPT_AT = []  # the check call (1-based) that raises KeyboardInterrupt, if any


def _mean_is_zero(case):
    """z of the mean of 200 standard normal draws (seeded by the case): |z| ≤ 4."""
    CALLS.append(dict(case.params))
    if INTERRUPT_AT and len(CALLS) == INTERRUPT_AT[0]:
        raise KeyboardInterrupt
    sample = case.rng.normal(case.params["mu"] * 0.0, 1.0, 200)
    z = float(sample.mean() / (sample.std(ddof=1) / np.sqrt(sample.size)))
    return claims.CheckResult(abs(z), 4.0, abs(z) <= 4.0, z=z, threshold=4.0,
                              criterion=claims.Criterion("|z|", "≤", 4.0, abs(z)))


@pytest.fixture(autouse=True)
def test_claims(monkeypatch):
    """The two test claims registered; COLUMNS pinned as in test_verify."""
    monkeypatch.setenv("COLUMNS", str(audit_table.NON_TTY_WIDTH))
    for claim_id in IDS:
        claims.register(claim_id, source="test", statement="a sample mean is near zero", kind="simulation",
                        strategy=lambda profile: st.fixed_dictionaries({"mu": st.floats(0.0, 1.0)}))(_mean_is_zero)
    CALLS.clear()
    INTERRUPT_AT.clear()
    yield
    for claim_id in IDS:
        claims.unregister(claim_id)
    sweep_points.claim_experiment()  # the experiment's claim choices as before


def _records(path):
    """The JSON report without the seconds (a resumed run reports each point's original compute time)."""
    return [{k: v for k, v in record.items() if k != "seconds"} for record in json.loads(path.read_text())]


def _verify(capsys, *argv):
    code = verify.main(["--paper", "-k", PATTERN, "--workers", "1", "--no-progress", *argv])
    return code, capsys.readouterr()


def test_an_interrupted_audit_resumes_without_recomputing_and_gives_the_uninterrupted_table(tmp_path, capsys):
    store, whole = tmp_path / "store", tmp_path / "whole"
    INTERRUPT_AT.append(3)
    code, out = _verify(capsys, "--store", str(store))
    assert code == 130 and out.err.strip().splitlines()[-1] == "interrupted"
    assert len(list(store.glob("points/*.parquet"))) == 2  # the two points computed before Ctrl-C are kept
    INTERRUPT_AT.clear()
    CALLS.clear()
    code, out = _verify(capsys, "--store", str(store), "--json", str(tmp_path / "resumed.json"))
    assert code == 0 and len(CALLS) == 2, "only the two points the store lacked are computed"
    assert "4 points, 2 in the store" in out.out
    resumed_calls = list(CALLS)
    CALLS.clear()
    code, _ = _verify(capsys, "--store", str(store), "--json", str(tmp_path / "again.json"))
    assert code == 0 and CALLS == []
    code, _ = _verify(capsys, "--store", str(whole), "--json", str(tmp_path / "whole.json"))
    assert code == 0 and len(CALLS) == 4 and CALLS[2:] == resumed_calls
    whole_records = _records(tmp_path / "whole.json")
    assert [r["claim"] for r in whole_records] == list(IDS) and all(r["status"] == "PASS" for r in whole_records)
    assert _records(tmp_path / "resumed.json") == whole_records == _records(tmp_path / "again.json")


def test_the_stored_outcome_is_the_in_process_one(tmp_path, capsys):
    code, _ = _verify(capsys, "--store", str(tmp_path / "store"), "--json", str(tmp_path / "stored.json"))
    assert code == 0
    in_process = [claims.run(claim_id, "paper") for claim_id in IDS]
    assert [r["measured"] for r in _records(tmp_path / "stored.json")] == [
        verify.outcome_record(o)["measured"] for o in in_process]


def test_an_unwritable_store_is_one_line_before_any_work(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    code, out = _verify(capsys, "--store", str(blocker))
    assert code == verify.EXIT_ENVIRONMENT and CALLS == [] and out.out == ""
    assert out.err.strip() == f"error: cannot write --store {blocker}: exists and is not a folder"


def test_explore_runs_in_process_only(capsys):
    with pytest.raises(SystemExit) as stop:
        verify.main(["--explore", "2", "--store", "somewhere", "-k", PATTERN])
    assert stop.value.code == verify.EXIT_USAGE and "--explore" in capsys.readouterr().err


def test_the_default_store_of_paper_is_under_the_cache_directory(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    code, out = _verify(capsys)
    assert code == 0 and f"store {tmp_path / 'transfertheory' / 'sweeps'}" in out.out
    assert len(list((tmp_path / "transfertheory" / "sweeps").glob("points/*.parquet"))) == 4


def test_a_dask_cluster_gives_the_local_table(tmp_path, capsys):
    distributed = pytest.importorskip("distributed")
    code, _ = _verify(capsys, "--store", str(tmp_path / "local"), "--json", str(tmp_path / "local.json"))
    assert code == 0
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0",
                                  silence_logs=50) as cluster:  # threads: the test claims are registered here only
        code, _ = _verify(capsys, "--store", str(tmp_path / "dask"), "--scheduler", cluster.scheduler_address,
                          "--json", str(tmp_path / "dask.json"))
    assert code == 0
    assert _records(tmp_path / "dask.json") == _records(tmp_path / "local.json")


def test_a_real_claim_in_spawned_workers_gives_the_in_process_numbers(tmp_path, capsys):
    """Two spawned worker processes import the claims (the task names the module that registers claim_point)."""
    claim = "faf.thm3.7"
    assert verify.main(["-k", claim, "--no-progress", "--json", str(tmp_path / "here.json")]) == 0
    assert verify.main(["-k", claim, "--no-progress", "--store", str(tmp_path / "store"), "--workers", "2",
                        "--json", str(tmp_path / "engine.json")]) == 0
    capsys.readouterr()
    assert _records(tmp_path / "engine.json") == _records(tmp_path / "here.json")
