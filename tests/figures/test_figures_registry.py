"""The figures registry and its command line, the output convention (metadata, stale files), backend errors, layers.

``python -m transfertheory.figures`` runs in-process through ``main([...])`` with ``tmp_path`` as output folder,
building FaF Fig. 2 at its quick profile (about a second); backend errors run as subprocesses, because what they
promise is what a user sees: one line on stderr and exit code 3, no traceback.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import transfertheory
from transfertheory import cli_support
from transfertheory import phase_diagram as cli
from transfertheory.backend import cupy_available
from transfertheory.figures import __main__ as registry_cli
from transfertheory.claims import profiles as claims_profiles
from transfertheory.figures import catalog, gallery, output, registry
from transfertheory.params import PROFILE_NAMES

FAF = ("faf_fig1", "faf_fig2", "faf_fig3", "faf_fig4", "faf_fig5", "faf_fig6", "faf_fig7")
ALL = ("faf_aniso", *FAF, "faf_finetune_depth", "merlin_fig", "mtl_fig1", "tdr_fig")  # every registered figure, sorted by name
TINY_SIM = ["--simulate", "--sim-d", "12", "--sim-draws", "2", "--sim-gammas", "2", "--resolution", "8"]


# --------------------------------------------------------------------------- registry


def test_every_figure_is_registered_once_with_every_profile():
    known = catalog.figures()
    assert tuple(known) == ALL  # sorted by name
    for name, figure in known.items():
        assert figure.name == name and figure.title and figure.description
        assert all(s.startswith(("FaF ", "MeRLin ", "TDR ", "MTL ", "errata")) for s in figure.sources)
        assert tuple(figure.profiles) == PROFILE_NAMES == tuple(claims_profiles.PROFILES)  # one set of sizes
    with pytest.raises(TypeError):
        known["faf_fig2"].profiles["quick"]["d"] = 1  # frozen


def test_registry_refuses_duplicates_unknown_names_and_missing_profiles():
    figure = catalog.get_figure("faf_fig2")
    assert registry.register(figure) is figure  # registering the same record again is harmless
    with pytest.raises(ValueError, match="already registered"):
        registry.register(registry.Figure("faf_fig2", "t", "d", (), figure.build, figure.profiles, paper_sizes="p"))
    with pytest.raises(ValueError, match="figure must be one of"):
        catalog.get_figure("fig99")
    with pytest.raises(ValueError, match="lacks the profiles"):
        registry.Figure("new", "t", "d", (), figure.build, {"quick": {}})
    with pytest.raises(ValueError, match="profiles must be among"):
        registry.Figure("new", "t", "d", (), figure.build, {"quick": {}, "paper": {}, "huge": {}})
    unsized = registry.Figure("new", "t", "d", (), figure.build, {"quick": {"d": 3}, "paper": {"d": 9}},
                              paper_sizes="p")
    assert unsized.profiles["full"] == {"d": 3}  # full falls back to the quick sizes


def test_the_automatic_backend_keeps_figures_where_a_gpu_does_not_pay_on_numpy(monkeypatch, tmp_path):
    known = catalog.figures()
    assert [name for name, f in known.items() if not f.gpu_pays] == ["merlin_fig"]  # measured on an H200
    merlin, faf = known["merlin_fig"], known["faf_fig1"]
    assert merlin.backend_for("cupy", named=False) == "numpy"  # auto found a GPU: MeRLin stays on the host
    assert merlin.backend_for("cupy", named=True) == "cupy"  # a named backend is used as given
    assert faf.backend_for("cupy", named=False) == "cupy"
    assert known["faf_fig5"].backend_for("numpy", named=False) == "numpy"
    seen = []
    monkeypatch.setattr(registry_cli, "check_before_work", lambda args, simulates: "cupy")  # as on a GPU machine
    monkeypatch.setattr(registry_cli, "in_workers",
                        lambda fn, tasks, workers, costs: seen.extend(t[2] for t in tasks)
                        or (r for r in [(0.0, 1, "", None)]))  # the backends; the first figure "fails"
    monkeypatch.delenv("TRANSFERTHEORY_BACKEND", raising=False)
    assert registry_cli.main(["merlin_fig", "faf_fig1", "--out", str(tmp_path)]) == 1
    assert seen == ["numpy", "cupy"]
    seen.clear()
    assert registry_cli.main(["merlin_fig", "--backend", "cupy", "--out", str(tmp_path)]) == 1
    assert seen == ["cupy"]


def test_each_figure_is_one_task_the_longest_last_time_first_printed_in_the_order_asked_for(monkeypatch, tmp_path,
                                                                                              capsys):
    """The CLI hands the workers one task per figure, with its previous build time as its cost (no figures share a
    computation: Fig. 3's flows run at fine-tuning's rtol, Fig. 1's at the default), and prints the figures' lines
    in the order asked for; a figure whose exit code is not 0 stops the run."""
    handed = []

    def fake_workers(function, tasks, workers, costs):
        handed.append(([t[0] for t in tasks], costs))
        yield from [(1.0, 0 if task[0] != "faf_fig5" else 4, f"{task[0]} built\n", None) for task in tasks]

    monkeypatch.setattr(registry_cli, "check_before_work", lambda args, simulates: "numpy")
    monkeypatch.setattr(registry_cli, "in_workers", fake_workers)
    (tmp_path / "faf_fig3.json").write_text(json.dumps({"profile": "quick", "runtime_s": 2.5}), encoding="utf-8")
    (tmp_path / "faf_fig1.json").write_text(json.dumps({"profile": "quick", "runtime_s": 1.5}), encoding="utf-8")
    (tmp_path / "faf_fig2.json").write_text(json.dumps({"profile": "quick", "runtime_s": 9.0}), encoding="utf-8")
    assert registry_cli.main(["faf_fig1", "faf_fig2", "faf_fig3", "--out", str(tmp_path)]) == 0
    assert handed == [(["faf_fig1", "faf_fig2", "faf_fig3"], [1.5, 9.0, 2.5])]
    printed = capsys.readouterr().out
    assert printed.index("faf_fig1 built") < printed.index("faf_fig2 built") < printed.index("faf_fig3 built")
    assert registry_cli.main(["faf_fig5", "faf_fig2", "--out", str(tmp_path)]) == 4
    assert "faf_fig2 built" not in capsys.readouterr().out


def test_list_names_every_figure_with_its_title(capsys):
    assert registry_cli.main(["--list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == list(ALL)
    assert all(catalog.get_figure(line.split()[0]).title in line for line in lines)
    assert registry_cli.main(["--list", "faf_fig5", "faf_fig2"]) == 0  # the named ones, in their order
    assert [line.split()[0] for line in capsys.readouterr().out.splitlines()] == ["faf_fig5", "faf_fig2"]


@pytest.mark.parametrize("args", [[], ["fig99"], ["--all", "faf_fig2"], ["faf_fig2", "--quick", "--paper"],
                                  ["faf_fig2", "--backend", "tpu"], ["faf_fig2", "--format", "svg"]])
def test_registry_usage_errors_exit_2(args, tmp_path, capsys):
    with pytest.raises(SystemExit) as info:
        registry_cli.main([*args, "--out", str(tmp_path)])
    assert info.value.code == 2 and "usage:" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


def test_worker_processes_write_the_files_of_a_serial_run_and_print_in_its_order(tmp_path, capsys):
    outputs = {}
    for workers in ("1", "2"):
        out = tmp_path / workers
        assert registry_cli.main(["mtl_fig1", "faf_fig2", "--workers", workers, "--backend", "numpy",
                                  "--format", "png", "--out", str(out)]) == 0
        printed = capsys.readouterr().out  # in the order asked for, each figure's lines under its heading
        assert printed.index("== mtl_fig1") < printed.index("mtl_fig1: ") < printed.index("== faf_fig2")
        outputs[workers] = {path.name: path for path in out.iterdir()}
    assert sorted(outputs["1"]) == sorted(outputs["2"])
    for name, serial in outputs["1"].items():
        parallel = outputs["2"][name]
        if name.endswith(".json"):
            first, second = (json.loads(path.read_text(encoding="utf-8")) for path in (serial, parallel))
            assert first.pop("runtime_s") > 0 and second.pop("runtime_s") > 0 and first == second
        elif name.endswith(".csv"):  # (the README, made from the JSON files, quotes the runtimes too)
            assert serial.read_bytes() == parallel.read_bytes(), name


def test_quick_build_writes_figure_data_metadata_thumbnail_and_readme(tmp_path, capsys):
    assert registry_cli.main(["faf_fig2", "--quick", "--backend", "numpy", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["README.md", "faf_fig2.csv", "faf_fig2.json", "faf_fig2.pdf", "faf_fig2.png",
                     "faf_fig2_thumb.png"]
    assert "faf_fig2:" in out and "points outside the tolerance" in out
    meta = json.loads((tmp_path / "faf_fig2.json").read_text(encoding="utf-8"))
    table = pd.read_csv(tmp_path / "faf_fig2.csv")
    figure = catalog.get_figure("faf_fig2")
    assert meta["figure"] == "faf_fig2" and meta["title"] == figure.title and meta["profile"] == "quick"
    assert meta["sources"] == list(figure.sources) and meta["version"] == transfertheory.__version__
    assert meta["backend"] == "numpy" and meta["runtime_s"] > 0
    assert meta["device"].startswith("CPU: ") and meta["device"].endswith(f"{os.cpu_count()} cores")
    head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=Path(__file__).resolve().parents[2]).stdout.strip()
    assert meta["commit"] is None if not head else meta["commit"].removesuffix("+changes") == head
    assert meta["parameters"]["d"] == figure.profiles["quick"]["d"] == int(table["d"].iloc[0])
    assert list(meta["columns"]["faf_fig2.csv"]) == list(table.columns)  # every column defined
    assert all(meta["columns"]["faf_fig2.csv"].values())
    agreement = meta["agreement"]
    assert agreement["points"] == len(table) and agreement["outside"] == int((~table["agrees"]).sum())
    assert agreement["draws"] == int(table["n_draws"].sum())
    assert sorted(meta["files"]) == [n for n in names if n != "README.md"]
    from PIL import Image

    thumbnail, full = Image.open(tmp_path / "faf_fig2_thumb.png"), Image.open(tmp_path / "faf_fig2.png")
    assert thumbnail.size == (output.THUMBNAIL_WIDTH, round(full.size[1] * output.THUMBNAIL_WIDTH / full.size[0]))
    # the full-size PNG reduced: its pixels averaged over each thumbnail pixel's footprint
    reduced = np.asarray(full.convert("RGB").resize(thumbnail.size, Image.Resampling.BOX), dtype=float)
    assert np.abs(np.asarray(thumbnail.convert("RGB"), dtype=float) - reduced).mean() < 4
    readme = (tmp_path / "README.md").read_text(encoding="utf-8")
    assert figure.title in readme and "(faf_fig2_thumb.png)](faf_fig2.png)" in readme
    assert "0 of 13 points outside" in readme
    for name in FAF:
        assert f"`{name}`" in readme
    assert "Not built yet: `python -m transfertheory.figures faf_fig5 --quick`" in readme


def test_gallery_links_each_figure_to_its_section(tmp_path):
    text = gallery.render_readme(tmp_path)
    for name in FAF:
        anchor = f"{name}--" + gallery._anchor(catalog.get_figure(name).title)
        assert f"(#{anchor})" in text


# --------------------------------------------------------------------------- output convention


@settings(max_examples=60)
@given(st.lists(st.tuples(st.floats(allow_nan=True, allow_infinity=True), st.integers(-10**12, 10**12), st.booleans(),
                          st.sampled_from(["linear", "fine-tuning", "θ = π/4"]), st.sampled_from([0.5, -0.0, 1e-300])),
                max_size=40))
def test_write_csv_writes_the_text_of_pandas(tmp_path_factory, rows):
    """Floats (NaN, ±inf, −0.0, subnormals), integers, booleans, text and a column of few distinct floats, given as
    arrays: the writer's bytes are pandas' ``to_csv(index=False)``."""
    folder = tmp_path_factory.mktemp("csv")
    frame = pd.DataFrame(rows, columns=["value", "count", "flag", "method", "level"]).astype(
        {"value": float, "count": "int64", "flag": bool, "method": object, "level": float})
    output.write_csv(_arrays(frame), folder / "fast.csv")
    frame.to_csv(folder / "pandas.csv", index=False)
    assert (folder / "fast.csv").read_bytes() == (folder / "pandas.csv").read_bytes()


def _arrays(frame):
    return {name: frame[name].to_numpy() for name in frame}


def test_write_csv_formats_arrays_of_numbers_itself_and_keeps_the_sign_of_zero(tmp_path, monkeypatch):
    frame = pd.DataFrame({"zero": [0.0, -0.0] * 10, "special": [np.nan, np.inf, -np.inf, 1e-300] * 5,
                          "value": np.linspace(-1, 1, 20) ** 3, "n": range(20), "method": ["linear"] * 20})
    expected = frame.to_csv(index=False)
    monkeypatch.setattr(pd.DataFrame, "to_csv", lambda *a, **k: pytest.fail("written by pandas"))
    output.write_csv(_arrays(frame), tmp_path / "fast.csv")
    assert (tmp_path / "fast.csv").read_text(encoding="utf-8") == expected and "-0.0," in expected
    assert ",inf," in expected and ",," in expected


@pytest.mark.parametrize("chunk", [1, 4, 25, 26])
def test_write_csv_in_chunks_writes_the_text_of_pandas(tmp_path, monkeypatch, chunk):
    """Rows are formatted and written a chunk at a time: any chunk size, one dividing the rows or not, gives
    pandas' bytes (a column of few distinct floats, one of distinct ones; NaN, ±inf, −0.0)."""
    monkeypatch.setattr(output, "_CSV_CHUNK_ROWS", chunk)
    values = np.linspace(-1.0, 1.0, 25) ** 3
    values[[3, 17]] = np.nan, -np.inf
    frame = pd.DataFrame({"gamma": np.tile([0.5, -0.0, 2.0, np.nan, np.inf], 5), "value": values,
                          "n": np.arange(25), "method": ["linear"] * 25})
    output.write_csv(_arrays(frame), tmp_path / "fast.csv")
    frame.to_csv(tmp_path / "pandas.csv", index=False)
    assert (tmp_path / "fast.csv").read_bytes() == (tmp_path / "pandas.csv").read_bytes()


@pytest.mark.parametrize("frame", [pd.DataFrame({"x": [0.1, 2.0], "text": pd.array(column, dtype=object)})
                                   for column in (["a,b", "c"], ['say "x"', "y"], ["", "z"], [1.5, None])]
                         + [pd.DataFrame({"only": [float("nan"), 1.0]})],
                         ids=["comma", "quote", "empty", "object-with-none", "one-column-with-nan"])
def test_write_csv_leaves_text_that_needs_quotes_to_pandas(tmp_path, frame):
    output.write_csv(_arrays(frame), tmp_path / "fast.csv")
    frame.to_csv(tmp_path / "pandas.csv", index=False)
    assert (tmp_path / "fast.csv").read_bytes() == (tmp_path / "pandas.csv").read_bytes()


def test_stale_outputs_of_the_same_figure_are_removed(tmp_path, capsys):
    """A redraw without --simulate removes NAME_simulated.csv; a PNG-only redraw removes the PDF; other names stay."""
    other = tmp_path / "phase_diagram_linear_sigma0.2_d25.csv"  # another configuration sharing the prefix
    other.write_text("keep")
    assert cli.main([*TINY_SIM, "--format", "both", "--out", str(tmp_path)]) == 0
    name = "phase_diagram_linear_sigma0.2"
    assert (tmp_path / f"{name}_simulated.csv").is_file() and (tmp_path / f"{name}.pdf").is_file()
    assert cli.main(["--resolution", "8", "--out", str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([f"{name}.csv", f"{name}.json", f"{name}.png",
                                                                 other.name])
    meta = json.loads((tmp_path / f"{name}.json").read_text(encoding="utf-8"))
    assert meta["agreement"] is None and meta["backend"].startswith("numpy (closed forms")
    assert "phase_diagram_linear_sigma0.2_simulated.csv" not in meta["columns"]
    capsys.readouterr()


def test_simulated_metadata_counts_points_outside_the_tolerance(tmp_path, capsys):
    assert cli.main([*TINY_SIM, "--out", str(tmp_path)]) == 0
    name = "phase_diagram_linear_sigma0.2"
    meta = json.loads((tmp_path / f"{name}.json").read_text(encoding="utf-8"))
    points = pd.read_csv(tmp_path / f"{name}_simulated.csv")
    assert meta["agreement"]["outside"] == int((~points["agrees"]).sum())
    assert meta["agreement"]["points"] == len(points) and meta["agreement"]["tolerance"] in capsys.readouterr().out
    assert list(meta["columns"][f"{name}_simulated.csv"]) == list(points.columns)
    assert list(meta["columns"][f"{name}.csv"]) == list(pd.read_csv(tmp_path / f"{name}.csv").columns)
    assert meta["parameters"]["sim_d"] == 12 and meta["parameters"]["seed"] == 0


def test_remove_stale_only_touches_the_names_a_figure_writes(tmp_path):
    for file in ("a.png", "a.pdf", "a.csv", "a.json", "a_thumb.png", "a_grid.csv", "a_b.csv", "ab.png"):
        (tmp_path / file).write_text("")
    removed = output.remove_stale(tmp_path, "a", [tmp_path / "a.png", tmp_path / "a.csv"], ["_grid"])
    assert sorted(p.name for p in removed) == ["a.json", "a.pdf", "a_grid.csv", "a_thumb.png"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.csv", "a.png", "a_b.csv", "ab.png"]


# --------------------------------------------------------------------------- backend


def _run(args, env_backend=None):
    env = dict(os.environ)
    env.pop("TRANSFERTHEORY_BACKEND", None)
    if env_backend is not None:
        env["TRANSFERTHEORY_BACKEND"] = env_backend
    return subprocess.run([sys.executable, "-m", *args], capture_output=True, text=True, env=env, timeout=300)


def _assert_one_line_exit_3(done, *words):
    assert done.returncode == cli_support.EXIT_BACKEND == 3, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in done.stderr
    assert all(word in lines[0] for word in words)


def test_unknown_backend_in_the_environment_is_one_line_and_exit_3(tmp_path):
    done = _run(["transfertheory.phase_diagram", *TINY_SIM, "--out", str(tmp_path)], env_backend="tpu")
    _assert_one_line_exit_3(done, "TRANSFERTHEORY_BACKEND", "'tpu'")
    done = _run(["transfertheory.figures", "faf_fig2", "--out", str(tmp_path)], env_backend="bogus")
    _assert_one_line_exit_3(done, "TRANSFERTHEORY_BACKEND")
    assert not any(tmp_path.iterdir())


@pytest.mark.skipif(cupy_available(), reason="a usable GPU: --backend cupy works here")
def test_cupy_without_a_gpu_is_one_line_and_exit_3(tmp_path):
    done = _run(["transfertheory.figures", "faf_fig2", "--backend", "cupy", "--out", str(tmp_path)])
    _assert_one_line_exit_3(done, "cupy")
    done = _run(["transfertheory.phase_diagram", *TINY_SIM, "--out", str(tmp_path)], env_backend="cupy")
    _assert_one_line_exit_3(done, "cupy")


def test_backend_choice_falls_back_to_the_environment(monkeypatch):
    monkeypatch.setenv("TRANSFERTHEORY_BACKEND", "numpy")
    assert cli_support.resolve_backend(None) == "numpy"
    monkeypatch.setenv("TRANSFERTHEORY_BACKEND", "bogus")
    assert cli_support.resolve_backend("numpy") == "numpy"  # an explicit --backend wins
    with pytest.raises(cli_support.CommandLineError, match="bogus") as info:
        cli_support.resolve_backend(None)
    assert info.value.exit_code == 3


@pytest.mark.slow
def test_all_quick_builds_every_figure_within_the_tolerance(tmp_path, capsys):
    """``--all --quick`` (about a minute on 2 cores) builds every figure; the FaF §3 simulation figures, which
    record their agreement with the exact theory, have no simulated point outside 4·SE + 0.002 and every draw
    converged (the other figures' agreement is checked by their claims)."""
    args = ["--all", "--quick", "--backend", "numpy", "--format", "png", "--out", str(tmp_path)]
    assert registry_cli.main(args) == 0
    capsys.readouterr()
    checked = []
    for name in ALL:
        meta = json.loads((tmp_path / f"{name}.json").read_text(encoding="utf-8"))
        assert (tmp_path / f"{name}.png").is_file() and (tmp_path / f"{name}.csv").is_file()
        agreement = meta["agreement"]
        if agreement is not None:
            checked.append(name)
            assert agreement["outside"] == 0 and agreement["converged_draws"] == agreement["draws"], name
    assert checked == ["faf_fig1", "faf_fig2", "faf_fig3", "faf_fig6", "faf_fig7"]


def test_every_paper_profile_says_how_it_relates_to_the_paper_and_a_paper_build_records_it():
    for name, figure in catalog.figures().items():
        assert len(figure.paper_sizes) > 40, name
        for out in ("figures", "figures/paper", "elsewhere/paper/"):
            assert registry_cli._context(figure, "paper", out) == {"profile": "paper", "paper_sizes": figure.paper_sizes}
        assert registry_cli._context(figure, "quick", "figures") == {"profile": "quick"}
        # another profile built into the paper-size gallery says, in NAME.json, why it stands in for the paper's
        stand_in = registry_cli._context(figure, "full", "figures/paper/")
        assert stand_in == {"profile": "full", "stands_in_for_paper": figure.paper_stand_in
                            or "profile full built in place of the paper profile"}
    with pytest.raises(ValueError, match="lacks paper_sizes"):
        registry.Figure("new", "t", "d", (), print, {"quick": {}, "paper": {}})


def test_faf_fig4_paper_profile_is_faf_app_d2_in_the_packages_time_units():
    """FaF App. D.2 and the Fig. 4 caption: d = 100, m = 1000, m* = 100, 10 teachers × 100 data sets, 1e5 steps at
    rate 0.01·m of losses without the ½: package flow time 2 × 0.01 × 1e5 = 2e3."""
    paper = catalog.get_figure("faf_fig4").profiles["paper"]
    assert {k: paper[k] for k in ("d", "m", "m_star", "teachers", "draws")} == dict(
        d=100, m=1000, m_star=100, teachers=10, draws=100)
    assert paper["max_time"] == paper["pretrain_max_time"] == 2 * 0.01 * 1e5


class _Asked(Exception):
    """Raised by a stub in place of a figure's first simulation, carrying what it was asked to simulate."""


def _ids(spec):
    from transfertheory.sim import get_experiment
    from transfertheory.sweep import point_id

    version = get_experiment(spec.experiment).version
    return sorted(point_id(spec.experiment, version, point, spec.seed) for point in spec.points())


@pytest.mark.parametrize("name", ["faf_fig1", "faf_fig3", "faf_fig6", "faf_fig7", "faf_fig4"])
@pytest.mark.parametrize("profile", ["quick", "paper"])
def test_a_faf_figure_through_a_store_asks_for_exactly_its_named_sweeps_points(name, profile):
    """Through the sweep engine (``figures --paper``, ``--store``), a FaF figure asks for the points of the named sweep
    that declares its sizes — for Fig. 4 its chunks of one teacher × a block of data sets —, the same point ids: the
    figure and ``sweep run NAME`` share a store's points."""
    from transfertheory.figures import simulation
    from transfertheory.sweep import NAMED_SWEEPS, parse_spec

    class Runner:
        def rows(self, spec, label):
            raise _Asked(spec)

    token = simulation.SWEEP_RUNNER.set(Runner())
    try:
        with pytest.raises(_Asked) as asked:
            catalog.get_figure(name).make(profile, backend="numpy", progress=False)
    finally:
        simulation.SWEEP_RUNNER.reset(token)
    figure_ids = _ids(parse_spec(asked.value.args[0], name))
    assert figure_ids == _ids(parse_spec(NAMED_SWEEPS[name], name, profile)) and len(figure_ids) >= 4


@pytest.mark.parametrize("profile", ["quick", "paper"])
def test_the_merlin_and_tdr_figures_run_their_named_sweeps_sizes(profile, monkeypatch):
    """Panel (a) of the MeRLin and TDR figures runs the simulator at the sizes of the named sweep's points (the
    figure's first simulator call, stopped there)."""
    from transfertheory.figures import merlin_fig
    from transfertheory.sim import tdr_study
    from transfertheory.sweep import NAMED_SWEEPS, parse_spec

    def stop(*args, **kwargs):
        raise _Asked(args, kwargs)

    monkeypatch.setattr(merlin_fig, "run_comparison", stop)
    with pytest.raises(_Asked) as asked:
        catalog.get_figure("merlin_fig").make(profile, backend="numpy", progress=False)
    (d, m, k, n_targets, lam, seeds), options = asked.value.args
    points = parse_spec(NAMED_SWEEPS["merlin"], "merlin", profile).points()
    assert sorted(n_targets) == sorted(p["n_t"] for p in points)
    for point in points:
        assert (point["d"], point["m"], point["k"], point["lam"], point["draws"]) == (d, m, k, lam, seeds)
        assert point["restarts"] == options["restarts"]
        assert {key: point[key] for key in ("rtol", "gtol")} == {key: options["flow"][key] for key in ("rtol", "gtol")}
    monkeypatch.setattr(tdr_study, "simulate_transfer", stop)
    with pytest.raises(_Asked) as asked:
        catalog.get_figure("tdr_fig").make(profile, backend="numpy", progress=False)
    points = parse_spec(NAMED_SWEEPS["tdr"], "tdr", profile).points()
    assert list(asked.value.args[0][4]) == [p["width"] for p in points]
    assert {p["draws"] for p in points} == {asked.value.args[1]["draws"]}


def test_faf_fig4s_table_through_the_store_is_the_table_computed_here(tmp_path):
    """The chunks read back from the store, in the figure's order, are the rows of one run, bit for bit, and carry
    the pretraining's report that panel (a) and the boundary table need."""
    import pandas as pd

    from transfertheory.figures import faf_fig4, simulation
    from transfertheory.sim.relu_teacher.summary import pretraining
    from transfertheory.sweep.runner import SweepRunner

    args = dict(d=4, m=8, m_star=4, mus=(0.25, 0.5), ns=(8, 12), teachers=2, draws=2, chunk=1, seed=3,
                backend="numpy", max_time=20.0, pretrain_max_time=20.0, rtol=None, loss_tol=1e-6)
    here, students = faf_fig4._experiment(**args)
    token = simulation.SWEEP_RUNNER.set(SweepRunner(str(tmp_path / "store"), workers=1, progress=False))
    try:
        stored, stored_students = faf_fig4._experiment(**args)
    finally:
        simulation.SWEEP_RUNNER.reset(token)
    assert len(list((tmp_path / "store" / "points").glob("*.parquet"))) == 4  # 2 teachers × 2 blocks of 1
    pd.testing.assert_frame_equal(stored[here.columns].reset_index(drop=True), here.reset_index(drop=True),
                                  check_exact=True, check_dtype=False)
    pd.testing.assert_frame_equal(pretraining(stored), pretraining(here), check_dtype=False)
    assert np.array_equal(stored_students[0.5].W[0], students[0.5].W[0])
