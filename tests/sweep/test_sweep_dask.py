"""The sweep engine on a Dask LocalCluster of worker processes: the rows of a local run, also when a worker is
killed in the middle of the sweep (Dask reschedules its points; nothing lost, nothing duplicated)."""
import os
import signal
import threading
import time

import pandas as pd
import pytest

distributed = pytest.importorskip("distributed")

from transfertheory.sweep import Store, parse_spec, run_sweep  # noqa: E402

SPEC = dict(experiment="faf_linear", draws=2, fixed=dict(d=6, sigma=0.3, methods=["scratch", "linear", "finetune"]),
            axes=dict(gamma=[0.5, 1.5], theta=[0.2, 0.8, 1.4]))


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    store = tmp_path_factory.mktemp("reference")
    run_sweep(parse_spec(SPEC, "dask"), store, workers=1, progress=False, echo=lambda line: None)
    return Store(store).table()


@pytest.fixture
def cluster():
    with distributed.LocalCluster(n_workers=3, threads_per_worker=1, processes=True, dashboard_address=":0",
                                  silence_logs=50) as local:
        yield local


def _kill_one_worker_after_two_points(cluster, store, killed):
    with distributed.Client(cluster.scheduler_address) as client:
        pids = client.run(os.getpid)
        deadline = time.monotonic() + 60
        while len(list(store.glob("points/*.parquet"))) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        os.kill(next(iter(pids.values())), signal.SIGKILL)
        killed.append(len(list(store.glob("points/*.parquet"))))


def test_dask_workers_give_the_rows_of_a_local_run_even_when_one_is_killed(cluster, reference, tmp_path):
    store, killed = tmp_path / "store", []
    killer = threading.Thread(target=_kill_one_worker_after_two_points, args=(cluster, store, killed))
    killer.start()
    report = run_sweep(parse_spec(SPEC, "dask"), store, scheduler=cluster.scheduler_address, progress=False,
                       echo=lambda line: None)
    killer.join()
    assert killed and killed[0] < 6, "the worker must be killed in the middle of the sweep"
    assert (report.done, report.failed) == (6, 0)
    table = Store(store).table()
    assert not table.duplicated(["point_id", "method", "draw"]).any()
    pd.testing.assert_frame_equal(table, reference, check_exact=True)
