"""The sweep store under real use (docs/sweeps.md, "The store"): only its own point files are counted or merged,
damaged files are reported and recomputed, a manifest that is not an object is one line naming it, runs sharing a
store (also of different specs, one of them killed) compute every point exactly once, and the grid is counted
before it is built."""
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from transfertheory.sweep import parse_spec, run_sweep
from transfertheory.sweep.__main__ import main
from transfertheory.sim import get_experiment
from transfertheory.sweep.engine import format_seconds, plan_points
from transfertheory.sweep.store import Store, read_store

from test_sweep import LINEAR_TOML

ROOT = Path(__file__).resolve().parents[2]

# test_sweep's 12 FaF §3 points of a fraction of a second each (d = 6), without fine-tuning: a run of them can be
# killed in the middle
SPEC_A = LINEAR_TOML.replace('methods = ["scratch", "linear", "finetune"]', 'methods = ["scratch", "linear"]')
assert SPEC_A != LINEAR_TOML, "test_sweep.LINEAR_TOML changed: update SPEC_A"
# the same grid at γ = 1.5, 2.0 (8 points shared with SPEC_A) and 2.5, 3.0 (8 points of its own)
SPEC_B = SPEC_A.replace("gamma = [0.5, 1.5, 2.0]", "gamma = [1.5, 2.0, 2.5, 3.0]")
SURFACE = 'experiment = "faf_surface"\n[axes]\ngamma = [0.5, 1.5, 2.0]\ntheta = [0.3, 0.9]\n'


def _write(path, text):
    path.write_text(text, encoding="utf-8")
    return path


def _cli(argv):
    """``python -m transfertheory.sweep ARGV`` in a process of its own (its own process group)."""
    return subprocess.Popen([sys.executable, "-m", "transfertheory.sweep", *map(str, argv)], cwd=ROOT,
                            start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _run(spec, store, *extra):
    return main(["run", str(spec), "--store", str(store), "--workers", "1", "--no-progress", *extra])


def _status(store, capsys):
    capsys.readouterr()
    code = main(["status", str(store)])
    return code, capsys.readouterr()


def _counts(line):
    """(done, total, failed, not run) of status's first line."""
    done, total, failed, not_run = map(int, re.search(r"(\d+) done / (\d+) total, (\d+) failed, (\d+) not run",
                                                      line).groups())
    return done, total, failed, not_run


@pytest.fixture
def surface(tmp_path, capsys):
    """A store holding the 6 points of a faf_surface grid (one row each), and its table."""
    spec, store = _write(tmp_path / "surface.toml", SURFACE), tmp_path / "store"
    assert _run(spec, store) == 0
    capsys.readouterr()
    return spec, store, read_store(store)


# --------------------------------------------------------------------------- 1, 2: only its own points


def test_table_out_into_the_store_is_refused(surface, capsys):
    spec, store, table = surface
    for out in (store / "all.parquet", store / "points" / "all.parquet", store / "_sweep" / "t.csv"):
        assert main(["table", str(store), "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "inside the store" in err and not out.exists()
    assert _counts(_status(store, capsys)[1].out)[:2] == (6, 6)


def test_table_out_to_a_fifo_is_the_csv_and_the_count_goes_to_stderr(surface, capsys, tmp_path):
    import threading

    spec, store, table = surface
    fifo, received = tmp_path / "pipe", []
    os.mkfifo(fifo)
    reader = threading.Thread(target=lambda: received.append(pd.read_csv(fifo)))
    reader.start()
    assert main(["table", str(store), "--out", str(fifo)]) == 0
    reader.join(timeout=30)
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.startswith("6 rows of 6 points -> ")
    pd.testing.assert_frame_equal(received[0], pd.read_csv(io.StringIO(table.to_csv(index=False))))
    assert fifo.exists() and not fifo.is_file()  # written into, never renamed over


def test_foreign_parquet_files_are_reported_never_counted_nor_merged_and_integers_stay_integer(surface, capsys):
    spec, store, table = surface
    foreign = pd.DataFrame({"x": [1.0, 2.0]})
    foreign.to_parquet(store / "mine.parquet")  # where a user writes a file first: in the store's folder
    assert _counts(_status(store, capsys)[1].out) == (6, 6, 0, 0)
    placed = [store / "mine.parquet", store / "points" / "mine.parquet", store / "points" / "0123456789abcdef.parquet"]
    for path in placed[1:]:
        foreign.to_parquet(path)
    # a point file under another point's name: its metadata names the other point
    some, other = sorted((store / "points").glob("*.parquet"))[:2]
    wrong = store / "points" / "fedcba9876543210.parquet"
    wrong.write_bytes(some.read_bytes())
    placed.append(wrong)
    code, out = _status(store, capsys)
    assert code == 0 and _counts(out.out) == (6, 6, 0, 0)
    for path in placed:
        assert f"ignored {path}" in out.out
    merged = read_store(store)
    pd.testing.assert_frame_equal(merged, table)
    assert merged["seed"].dtype.kind == "i" and merged["version"].dtype.kind == "i"
    capsys.readouterr()
    assert main(["table", str(store)]) == 0
    printed = capsys.readouterr()
    assert "4 damaged or foreign file(s)" in printed.err
    assert pd.read_csv(pd.io.common.StringIO(printed.out))["point_id"].tolist() == table["point_id"].tolist()


def test_a_store_of_two_experiments_keeps_integer_columns_integer(surface, capsys):
    spec, store, surface_rows = surface
    one = _write(store.parent / "one.toml", SPEC_A.replace("gamma = [0.5, 1.5, 2.0]", "gamma = [1.5]")
                 .replace("num = 4", "num = 1"))
    assert _run(one, store) == 0
    table = read_store(store)
    assert len(table) == len(surface_rows) + 4 and table["point_id"].nunique() == 7
    assert table["seed"].dtype == "int64" and table["draw"].dtype == "Int64"  # surface rows: <NA>
    assert table["draw"].isna().sum() == len(surface_rows)
    assert table["converged"].dtype == "bool"


# --------------------------------------------------------------------------- 3: damaged point files


def test_a_truncated_point_file_is_reported_damaged_then_quarantined_and_recomputed(surface, capsys):
    spec, store, table = surface
    victim = sorted((store / "points").glob("*.parquet"))[2]
    whole = victim.read_bytes()
    victim.write_bytes(whole[:len(whole) // 2])
    code, out = _status(store, capsys)
    assert code == 0 and _counts(out.out) == (5, 6, 0, 1)
    assert f"damaged {victim}: damaged: unreadable Parquet" in out.out
    assert len(read_store(store)) == 5  # never read
    assert _run(spec, store) == 0
    printed = capsys.readouterr().out
    assert f"quarantined {victim}" in printed and "1 to run" in printed
    (kept,) = (store / "_sweep" / "quarantine").iterdir()
    assert kept.read_bytes() == whole[:len(whole) // 2]
    pd.testing.assert_frame_equal(read_store(store), table)


# --------------------------------------------------------------------------- 4: the store's own records


@pytest.mark.parametrize("text, what", [("[1, 2]", "a JSON list, not an object"), ('{"a": ', "damaged manifest"),
                                        ("\xff\xfe", "damaged manifest")])
def test_a_manifest_that_is_not_a_json_object_is_one_line_naming_it(surface, capsys, text, what):
    spec, store, _ = surface
    manifest = store / "_sweep" / "manifest.json"
    manifest.write_bytes(text.encode("latin-1"))
    for argv in (["status", str(store)], ["run", str(spec), "--store", str(store), "--workers", "1"]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith(f"error: {manifest}: ") and what in err


def test_a_damaged_failure_record_is_one_line_naming_it(surface, capsys):
    spec, store, _ = surface
    record = store / "_sweep" / "failed" / "0123456789abcdef.json"
    record.parent.mkdir(parents=True)
    record.write_text('{"point": 1}')
    assert main(["status", str(store)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(record) in err


# --------------------------------------------------------------------------- 16: not a store


def test_status_and_table_of_a_folder_that_is_not_a_store_say_so(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("mine")
    for folder in (tmp_path, Path("/etc")):
        for command in ("status", "table"):
            assert main([command, str(folder)]) == 2
            err = capsys.readouterr().err
            assert err.count("\n") == 1 and f"{folder} is not a sweep store" in err


def test_run_refuses_a_folder_that_is_neither_a_store_nor_empty(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("mine")
    spec = _write(tmp_path.parent / f"{tmp_path.name}.toml", SURFACE)
    assert _run(spec, tmp_path) == 2
    assert "neither a sweep store nor empty" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_run_refuses_a_store_inside_a_store(surface, capsys):
    spec, store, _ = surface
    for inner in (store / "points" / "inner", store / "_sweep" / "inner", store / "inner"):
        assert _run(spec, inner) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"is inside the store {store}" in err and not inner.exists()


def test_a_folder_without_the_store_marker_is_refused_and_left_as_it_is(surface, capsys):
    spec, store, _ = surface
    (store / "_sweep" / "store.json").unlink()  # as development versions before 0.1.0 left a store:
    for path in sorted((store / "points").glob("*.parquet")):  # no marker, the point files directly in STORE/
        path.rename(store / path.name)
    (store / "points").rmdir()
    before = sorted((p, p.stat().st_mtime_ns) for p in store.rglob("*"))
    code, out = _status(store, capsys)
    assert code == 2 and out.err.count("\n") == 1 and "is not a sweep store (no _sweep/store.json" in out.err
    assert _run(spec, store) == 2
    assert "is neither a sweep store nor empty" in capsys.readouterr().err
    assert sorted((p, p.stat().st_mtime_ns) for p in store.rglob("*")) == before


def test_points_stored_before_a_parameter_was_added_or_renamed_keep_their_ids(tmp_path):
    """The committed paper-size store was written before faf_linear had ``spectrum`` and ``teacher``, under its
    parameters' earlier names: today's plan finds every point there (none recomputed), and its rows read under
    today's names, an added parameter at its default."""
    store = tmp_path / "store"
    shutil.copytree(ROOT / "figures" / "paper" / "stores" / "figs-paper", store)
    Store(store).prepare()
    manifest = json.loads((store / "_sweep" / "manifest.json").read_text())
    done = Store(store).done()  # once: it reads every point's identity
    stored = {pid: entry for pid, entry in manifest.items() if pid in done}
    # rows written before faf_linear had a spectrum, under its parameters' earlier names
    earlier = [path for path in (store / "points").glob("*.parquet")
               if "instances" in pq.read_schema(path).names and "spectrum" not in pq.read_schema(path).names]
    assert len(stored) >= 100 and len(earlier) >= 100
    for pid, entry in stored.items():
        record = get_experiment(entry["experiment"])
        point = record.point(**{record.renamed.get(k, k): v for k, v in entry["point"].items()})
        assert plan_points(record.name, [point], entry["seed"], Store(store))[0].pid == pid
    table = read_store(store)
    assert set(get_experiment("faf_linear").schema) <= set(table.columns) and "instances" not in table.columns
    before = table[table["point_id"].isin([path.stem for path in earlier])]
    assert (before["spectrum"] == "isotropic").all() and (before["teacher"] == "random").all()


# --------------------------------------------------------------------------- 11, 13, 16: specs


def test_a_huge_grid_is_refused_at_once_before_it_is_built(tmp_path):
    spec = _write(tmp_path / "huge.toml", 'experiment = "faf_surface"\n[axes]\ngamma = { start = 0.1, stop = 2, '
                  'num = 10000 }\ntheta = { start = 0.1, stop = 1, num = 1000 }\n')
    start = time.monotonic()
    proc = _cli(["run", spec, "--store", tmp_path / "s"])
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 2 and time.monotonic() - start < 30
    assert "10000000 points, more than the limit of 100000" in err and "--max-points" in err
    assert not (tmp_path / "s").exists()


@pytest.mark.parametrize("name", ["faf_fig4", "faf_fig7", "merlin", "mtl"])
def test_the_grids_points_are_the_experiments_validated_points(name):
    """SweepSpec.points builds the points from the values parse_spec checked; the record's own validation of each
    point gives the same dicts, keys in the same order."""
    from transfertheory.sim import get_experiment
    from transfertheory.sweep import NAMED_SWEEPS

    for profile in NAMED_SWEEPS[name]["profiles"]:
        spec = parse_spec(NAMED_SWEEPS[name], name, profile)
        record = get_experiment(spec.experiment)
        for point in spec.points():
            again = record.point(**point)
            assert point == again and list(point) == list(again)


def test_the_grid_size_is_the_first_line_and_max_points_is_checked(tmp_path, capsys):
    spec = _write(tmp_path / "s.toml", SURFACE)
    assert _run(spec, tmp_path / "s") == 0
    assert capsys.readouterr().out.startswith("s: 6 points in the grid")
    assert _run(spec, tmp_path / "t", "--max-points", "5") == 2
    assert "6 points, more than the limit of 5" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        _run(spec, tmp_path / "t", "--max-points", "0")


def test_the_command_lines_default_max_points_is_the_spec_limit():
    from transfertheory.sweep import __main__ as sweep_cli
    from transfertheory.sweep.spec import MAX_POINTS

    assert sweep_cli.build_parser().parse_args(["run", "x", "--store", "s"]).max_points == MAX_POINTS


@pytest.mark.parametrize("raw, overrides, message", [
    (dict(axes=dict(gamma=dict(start=1, stop=2, num=3, log="false"))), {}, "axes.gamma.log: must be true or false"),
    (dict(draws="ten"), {}, "draws: draws must be"),
    (dict(draws=0), {}, "draws: draws must be an integer >= 1, got 0"),
    ({}, dict(draws="ten"), "--set draws: draws must be"),
    (dict(draws=3, fixed=dict(draws=2)), {}, "draws: also given as fixed.draws"),
    (dict(seed=2**64), {}, "seed: seed must be an integer in [0, 2**64 - 1], got 18446744073709551616"),
    ({}, dict(seed=-1), "--set seed: seed must be an integer in [0, 2**64 - 1], got -1"),
    ({}, dict(sigma=-1), "--set sigma: sigma must be in [0, inf)"),
    ({}, dict(axes=1), "--set axes: not settable"),
    (dict(description=3), {}, "description: must be text"),
])
def test_spec_types_are_checked_strictly_in_the_users_own_field_names(raw, overrides, message):
    with pytest.raises(ValueError) as error:
        parse_spec(dict(experiment="faf_linear", **raw), "s", overrides=overrides)
    assert str(error.value).startswith(message) and "fixed.draws:" not in str(error.value)


def test_set_works_for_draws_and_seed(tmp_path):
    spec = parse_spec(dict(experiment="faf_linear", draws=3), "s", overrides=dict(draws=20, seed=7))
    assert (spec.fixed["draws"], spec.seed) == (20, 7)
    assert parse_spec(dict(experiment="faf_linear"), "s", overrides=dict(seed=2**64 - 1)).seed == 2**64 - 1
    toml = _write(tmp_path / "one.toml", SPEC_A.replace("gamma = [0.5, 1.5, 2.0]", "gamma = [1.5]")
                  .replace("num = 4", "num = 1"))
    assert _run(toml, tmp_path / "s", "--set", "draws=1", "--set", "seed=3") == 0
    rows = read_store(tmp_path / "s")
    assert len(rows) == 2 and set(rows["draw"]) == {0}  # two methods × one draw


@pytest.mark.parametrize("seconds, text", [(0.0004, "0.40 ms"), (0.0042, "4.2 ms"), (0.042, "42 ms"),
                                           (0.42, "420 ms"), (4.2, "4.2 s"), (42, "42 s"), (300, "5.0 min")])
def test_small_times_are_not_printed_as_zero_seconds(seconds, text):
    assert format_seconds(seconds) == text


# --------------------------------------------------------------------------- 5: runs sharing a store


def _wait(procs, timeout=240):
    outs = []
    for proc in procs:
        try:
            outs.append(proc.communicate(timeout=timeout))
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
    return outs


def _computed(out):
    return int(re.search(r"(\d+) attempted in this run", out).group(1))


def _writers(store):
    """point_id → the process id that wrote it (from each point file's metadata)."""
    found = Store(store)
    return {pid: found.metadata(pid).get("pid") for pid in found.done()}


def test_two_runs_started_together_compute_each_point_exactly_once(tmp_path):
    spec, store = _write(tmp_path / "a.toml", SPEC_A), tmp_path / "store"
    procs = [_cli(["run", spec, "--store", store, "--workers", "1", "--no-progress"]) for _ in range(2)]
    outs = _wait(procs)
    assert [p.returncode for p in procs] == [0, 0], outs
    assert all(err == "" for _, err in outs), outs
    assert sum(_computed(out) for out, _ in outs) == 12  # today: 24, each run computes every point
    assert all("12/12 points done" in out for out, _ in outs)
    assert set(_writers(store).values()) <= {p.pid for p in procs} and len(_writers(store)) == 12
    assert not list(store.glob("points/.*.tmp")) and not list(store.glob("_sweep/claims/*"))


def test_the_done_test_foreign_truncated_duplicate_files_and_two_specs_sharing_a_store_one_killed(tmp_path,
                                                                                                    capsys):
    """Foreign, truncated and duplicate files in a store; runs of two specs share it and one is killed; then
    status, table and the documented loaders agree, every point exactly once."""
    spec_a, spec_b, store = _write(tmp_path / "a.toml", SPEC_A), _write(tmp_path / "b.toml", SPEC_B), tmp_path / "s"
    assert _run(spec_a, store, "--set", "theta=0.2") == 0  # three points of A's grid stored first
    points = sorted((store / "points").glob("*.parquet"))
    assert len(points) == 3
    points[0].write_bytes(points[0].read_bytes()[:100])  # truncated under its final name
    (store / "points" / f"{points[1].stem} (copy).parquet").write_bytes(points[1].read_bytes())  # duplicates
    (store / points[1].name).write_bytes(points[1].read_bytes())
    pd.DataFrame({"seed": [1, 2], "x": [0.5, 1.5]}).to_parquet(store / "points" / "extra.parquet")  # foreign
    pd.DataFrame({"seed": [3]}).to_parquet(store / "mine.parquet")
    (store / "notes.txt").write_text("mine")
    capsys.readouterr()

    killed = _cli(["run", spec_a, "--store", store, "--workers", "1", "--no-progress"])
    other = _cli(["run", spec_b, "--store", store, "--workers", "2", "--no-progress"])
    deadline = time.monotonic() + 120
    while len(_writers(store)) < 8 and killed.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    os.killpg(killed.pid, signal.SIGKILL)
    killed.wait()
    assert killed.returncode == -signal.SIGKILL and len(_writers(store)) < 20  # killed in the middle
    (out_b, err_b), = _wait([other])
    assert other.returncode == 0 and err_b == "" and "16/16 points done" in out_b, (out_b, err_b)
    assert _run(spec_a, store) == 0  # the third run finishes the rest of A
    third = capsys.readouterr().out
    assert "12/12 points done" in third

    # every point exactly once: 12 of A, 16 of B, 8 of them shared
    expected = {t.pid for spec in (spec_a, spec_b) for t in _plan(spec)}
    assert len(expected) == 20
    code, out = _status(store, capsys)
    assert code == 0 and _counts(out.out) == (20, 20, 0, 0)
    assert f"ignored {store / points[1].name}" in out.out and f"ignored {store / 'mine.parquet'}" in out.out
    assert "  damaged " not in out.out and f"{store / 'points'}/" not in out.out
    table = read_store(store)
    assert set(table["point_id"]) == expected and table.groupby("point_id").size().eq(4).all()
    assert not table.duplicated(["point_id", "method", "draw"]).any()
    assert main(["table", str(store), "--out", str(tmp_path / "t.parquet")]) == 0
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "t.parquet"), table)
    raw = pd.read_parquet(store / "points").sort_values(["point_id", "method", "draw"]).reset_index(drop=True)
    pd.testing.assert_frame_equal(raw, table.sort_values(["point_id", "method", "draw"]).reset_index(drop=True))
    quarantined = {p.name.split(".parquet")[0] for p in (store / "_sweep" / "quarantine").iterdir()}
    assert quarantined == {points[0].stem, f"{points[1].stem} (copy)", "extra"}
    assert not list(store.glob("points/.*.tmp")) and not list(store.glob("_sweep/claims/*"))
    assert not any(Store(store).failures())


def _plan(spec_path):
    from transfertheory.sweep import load_toml
    from transfertheory.sweep.engine import plan

    return plan(parse_spec(load_toml(spec_path), spec_path.stem), Store(spec_path.parent / "unused"))


def test_a_stale_temporary_of_a_dead_writer_is_removed_a_live_writers_is_kept(surface):
    spec, store, _ = surface
    s = Store(store)
    dead = store / "points" / ".0123456789abcdef.999999.abcd1234.tmp"
    dead.write_bytes(b"half")
    live = store / "points" / ".fedcba9876543210.1.abcd1234.tmp"
    live.write_bytes(b"half")
    with s.claim("fedcba9876543210") as held:
        assert held is True
        other = _cli_python(f"from transfertheory.sweep.store import Store; print(Store({str(store)!r}).clean())")
        assert other == "1"
        assert live.exists() and not dead.exists()
    assert s.clean() == 1 and not live.exists()


def _cli_python(code):
    """Run ``code`` in another Python process (another holder of claims); its stdout."""
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True,
                          timeout=120).stdout.strip()


def _run_while_another_process_holds(tmp_path, index, seconds, then="pass"):
    """run_sweep of a 3-point grid while another process holds the claim of its point ``index`` for ``seconds``,
    then runs ``then`` (with ``s``, the store, and ``PID``, the point's id) and exits: (that point's id, the
    report, the lines echoed, the run's wall time)."""
    spec = parse_spec(dict(experiment="faf_surface", axes=dict(gamma=[0.5, 1.5, 2.0])), "s")
    store = Store(tmp_path)
    store.create()
    pid = _plan_spec(spec, store)[index].pid
    holder = subprocess.Popen([sys.executable, "-c", f"import time; from transfertheory.sweep import Store\n"
                               f"s = Store({str(tmp_path)!r})\nwith s.claim({pid!r}):\n print('held', flush=True)\n"
                               f" time.sleep({seconds})\n {then.replace('PID', repr(pid))}"], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "held\n"
        assert store.scan().claimed == [pid]
        lines, start = [], time.monotonic()
        report = run_sweep(spec, tmp_path, workers=1, progress=False, echo=lines.append)
        return pid, report, lines, time.monotonic() - start
    finally:
        holder.kill()
        holder.wait()


def test_a_point_another_process_holds_is_skipped_then_waited_for_and_taken_over_when_it_dies(tmp_path):
    pid, report, lines, waited = _run_while_another_process_holds(tmp_path, 0, 4)
    assert (report.done, report.computed) == (3, 3) and waited > 1
    assert "1 point(s) held by another run: waiting for them" in lines
    assert lines[-2] == "estimated time: unknown (no timed point in the store yet: see the progress bar's ETA)"


def test_a_point_that_failed_in_the_run_holding_it_is_reported_failed_not_computed_again(tmp_path):
    pid, report, lines, _ = _run_while_another_process_holds(
        tmp_path, 1, 3, "s.write_failure(PID, dict(error='RuntimeError: there'), 'tb')")
    assert (report.done, report.failed, report.computed) == (2, 1, 2)
    assert Store(tmp_path).failures()[pid]["error"] == "RuntimeError: there"


def _plan_spec(spec, store):
    from transfertheory.sweep.engine import plan

    return plan(spec, store)


@pytest.mark.parametrize("command", ["figures", "verify"])
def test_figures_and_verify_refuse_a_store_folder_holding_other_files_in_one_line(tmp_path, capsys, command):
    from transfertheory.figures.__main__ import main as figures_main
    from transfertheory.verify import main as verify_main

    (tmp_path / "notes.txt").write_text("mine")
    if command == "figures":
        code = figures_main(["faf_fig1", "--store", str(tmp_path), "--out", str(tmp_path.parent / "figs")])
    else:
        code = verify_main(["-k", "faf.eq13.finite", "--store", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2 and err == f"error: --store: {tmp_path} is neither a sweep store nor empty: give a new or " \
                                 f"empty folder\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_without_file_locks_a_temporary_is_stale_only_if_its_writer_on_this_host_is_dead(surface, monkeypatch):
    from transfertheory.sweep import claims

    spec, store, table = surface
    monkeypatch.setattr(claims, "fcntl", None)  # a filesystem or platform without flock
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True).stdout.strip()  # a process id that has just exited
    names = {"dead": f".0123456789abcdef.{dead}.abcd1234.{claims.HOST}.tmp",
             "live": f".0123456789abcdef.{os.getpid()}.abcd1234.{claims.HOST}.tmp",
             "elsewhere": f".0123456789abcdef.{dead}.abcd1234.other-host.example.tmp"}
    for name in names.values():
        (store / "points" / name).write_bytes(b"half")
    assert Store(store).clean() == 1
    assert sorted(p.name for p in (store / "points").glob(".*.tmp")) == sorted([names["live"], names["elsewhere"]])
    assert _run(spec, store) == 0  # unclaimed, the run still works
    pd.testing.assert_frame_equal(read_store(store), table)
