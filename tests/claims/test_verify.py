"""``python -m transfertheory.verify``: table (requires / measured / held, width, streaming), JSON, CSV, ``-k``,
``--list``, ``--explore``, exit codes, and a broken formula."""
import csv
import json
import re
import subprocess
import sys

import pytest

from transfertheory import audit_plugin, audit_table, claims, verify
from transfertheory.claims import compare
from transfertheory.theory import linear, methods


@pytest.fixture(autouse=True)
def _table_width_of_a_redirected_stdout(monkeypatch):
    """The width a table is printed in follows the terminal: pin it to the width off a terminal (100 columns), so
    that a test's layout does not depend on where pytest runs (a terminal, a pipe, a worker process)."""
    monkeypatch.setenv("COLUMNS", str(audit_table.NON_TTY_WIDTH))

#: cheap claims (exact identities and closed forms): the CLI tests run in a fraction of a second
CHEAP = "faf.eq13"


def _run(capsys, *argv):
    code = verify.main([*argv, "--no-progress"])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_table_json_and_csv(tmp_path, capsys):
    json_path, csv_path = tmp_path / "v.json", tmp_path / "v.csv"
    code, out, _ = _run(capsys, "-k", CHEAP, "--json", str(json_path), "--csv", str(csv_path))
    assert code == 0
    selected = [c.id for c in claims.select(CHEAP)]
    header = out.splitlines()[0].split()
    assert header == list(verify.COLUMNS)
    for claim_id in selected:
        assert any(line.startswith(claim_id + " ") and " PASS " in line for line in out.splitlines())
    assert f"{len(selected)} claims (quick): {len(selected)} PASS, 0 KNOWN-ERRATUM" in out
    records = json.loads(json_path.read_text(encoding="utf-8"))
    assert [r["claim"] for r in records] == selected
    for record in records:
        assert {"claim", "source", "method", "discrepancy", "tolerance", "status", "requires", "measured",
                "held"} <= set(record)
        assert record["status"] == "PASS" and record["discrepancy"] <= record["tolerance"]
        assert record["requires"] and record["held"] is True
    with open(csv_path, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["claim"] for r in rows] == selected and set(verify.COLUMNS) <= set(rows[0])
    assert [r["requires"] for r in rows] == [r["requires"] for r in records] and {r["held"] for r in rows} == {"True"}


def test_known_erratum_rows_link_to_the_errata_page(tmp_path, capsys):
    code, out, _ = _run(capsys, "-k", "faf.thm2.2", "--json", str(tmp_path / "v.json"))
    assert code == 0
    lines = out.splitlines()
    row = next(i for i, l in enumerate(lines) if l.startswith("faf.thm2.2.dudley "))
    assert "paper fails by > 0" in lines[row] and " yes " in lines[row] and "KNOWN-ERRATUM" in lines[row]
    assert lines[row + 1].strip() == ("FaF Thm 2.2 (Dudley half), App. B.1 — paper error: "
                                      "docs/errata.md#erratum-dudley")
    slip = next(i for i, l in enumerate(lines) if l.startswith("faf.thm2.2.kl-constant "))
    assert "PASS" in lines[slip] and lines[slip + 1].strip().endswith("— slip: docs/errata.md#erratum-kl-constant")
    records = {r["claim"]: r for r in json.loads((tmp_path / "v.json").read_text(encoding="utf-8"))}
    assert records["faf.thm2.2.kl-constant"]["erratum"] == "docs/errata.md#erratum-kl-constant"
    assert (records["faf.thm2.2.kl-constant"]["category"], records["faf.thm2.2.dudley"]["category"]) == (
        "slip", "paper error")
    assert records["faf.thm2.2.kl"]["status"] == "PASS" and records["faf.thm2.2.kl"]["erratum"] == ""
    assert records["faf.thm2.2.kl"]["category"] == ""


def test_glob_filter_and_list(capsys):
    """--list runs nothing: its second column is headed "expected" (a claim's expected status, not a result)."""
    code, out, _ = _run(capsys, "-k", "faf.eq1[05]", "--list")
    assert code == 0
    header, rule, *rows = out.splitlines()
    assert header.split() == ["claim", "expected", "kind", "source"] and set(rule) == {"-", " "}
    assert [row.split()[:3] for row in rows] == [["faf.eq10", "PASS", "exact"], ["faf.eq15", "PASS", "exact"]]
    code, out, _ = _run(capsys, "-k", "faf.eq142", "--list")
    assert out.splitlines()[2].split()[:2] == ["faf.eq142", "KNOWN-ERRATUM"]


def _fake_outcome(claim_id, result, status):
    point = claims.PointOutcome({}, status, result, 1.5)
    return claims.Outcome(claims.get_claim(claim_id), "quick", status, 1.5, (point,), point)


def test_a_row_says_what_its_check_requires_and_whether_it_held():
    """A one-sided z = 157 reads "z > 4 … 157 … yes", not "157 vs 4" under PASS; an erratum's demonstration reads
    "paper fails by > 0", not a tolerance of 0; an ERROR has no requirement."""
    cases = [("mtl.lemma3.independent-heads-mc", compare.significant(15.7, 0.1), claims.PASS, "z > 4", "157", "yes"),
             ("faf.thm2.2.dudley", compare.exceeds(0.25), claims.KNOWN_ERRATUM, "paper fails by > 0", "0.25", "yes"),
             ("faf.eq13", compare.agreement(1.05, 0.01, 1.0), claims.FAIL, "|z| ≤ 4", "5", "no"),
             ("faf.eq10", None, claims.ERROR, "-", "-", "-")]
    records = [verify.outcome_record(_fake_outcome(claim_id, result, status)) for claim_id, result, status, *_ in cases]
    assert [(r["requires"], r["held"]) for r in records] == [("z > 4", True), ("paper fails by > 0", True),
                                                              ("|z| ≤ 4", False), ("", None)]
    assert records[0]["measured"] == pytest.approx(157.0)
    table = audit_table.AuditTable([r["claim"] for r in records], 100)
    lines = "\n".join([table.header(), *map(table.row, records)]).splitlines()
    assert lines[0].split() == list(verify.COLUMNS)
    for (claim_id, _, status, requires, measured, held), record in zip(cases, records):
        row = next(line for line in lines if line.startswith(claim_id + " "))
        assert row.split() == [claim_id, *requires.split(), measured, held, status, "1.50"]


@pytest.mark.parametrize("width", [72, 80, 100])
def test_every_line_of_the_table_fits_the_width(width):
    """Every registered claim (the longest ids and sources) as a row: no line is wider than the width, and each
    wrapped id reads back whole from its column."""
    records = [verify.outcome_record(_fake_outcome(claim.id, compare.agreement(1.0, 0.1, 1.0, allowance=0.002),
                                                   claims.PASS)) for claim in claims.CLAIMS.values()]
    table = audit_table.AuditTable([r["claim"] for r in records], width)
    for record in records:
        lines = table.row(record).splitlines()
        assert max(map(len, lines)) <= width
        claim_lines = [line[:table.widths[0]].strip() for line in lines if not line.startswith(" ")]
        assert "".join(claim_lines) == record["claim"]
    assert max(map(len, table.header().splitlines())) <= width


def test_the_width_follows_the_terminal_and_is_at_most_100_when_not_a_tty(monkeypatch):
    class Stream:
        def __init__(self, tty):
            self.tty = tty

        def isatty(self):
            return self.tty

    monkeypatch.setenv("COLUMNS", "160")
    assert audit_table.table_width(Stream(True)) == 160 and audit_table.table_width(Stream(False)) == 100
    monkeypatch.setenv("COLUMNS", "80")
    assert audit_table.table_width(Stream(False)) == 80
    monkeypatch.setenv("COLUMNS", "40")
    assert audit_table.table_width(Stream(True)) == audit_table.MIN_WIDTH


def test_the_cli_output_fits_an_80_column_terminal(monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = _run(capsys, "-k", "faf.thm2.2")
    assert code == 0 and max(map(len, out.splitlines())) <= 80


def test_rows_stream_as_claims_finish_when_stdout_is_not_a_tty(monkeypatch, capsys):
    """Under capsys stdout is not a terminal: the header first, then before each claim a progress line and after
    it its row, each already written when the next claim starts; the summary last. (``--workers 1``: the spy
    must see the claims run in this process.)"""
    written_before = []
    real_run = claims.run

    def spy(claim, *args, **kwargs):
        written_before.append(capsys.readouterr().out)
        return real_run(claim, *args, **kwargs)

    monkeypatch.setattr(claims, "run", spy)
    ids = [c.id for c in claims.select("faf.thm2.2")]
    assert verify.main(["-k", "faf.thm2.2", "--workers", "1"]) == 0
    rest = capsys.readouterr().out
    assert written_before[0].splitlines()[0].split() == list(verify.COLUMNS)
    assert written_before[0].splitlines()[-1] == f"[1/{len(ids)}] {ids[0]} …"
    for i, claim_id in enumerate(ids[:-1]):
        lines = written_before[i + 1].splitlines()
        assert lines[0].startswith(claim_id + " ") and lines[-1] == f"[{i + 2}/{len(ids)}] {ids[i + 1]} …"
    assert rest.startswith(ids[-1] + " ") and f"{len(ids)} claims (quick)" in rest.splitlines()[-1]
    written_before.clear()
    assert verify.main(["-k", "faf.thm2.2", "--no-progress", "--workers", "1"]) == 0
    assert written_before[1].startswith(ids[0] + " ") and "[1/" not in "".join(written_before)


@pytest.mark.parametrize(
    "argv",
    [["--quick", "--full"], ["--explore", "0"], ["--explore", "x"], ["--seed", "3"], ["--explore", "2", "--seed", "-1"],
     ["-k", "no such claim"], ["--bogus"], ["--list", "--json", "l.json"], ["--list", "--csv", "l.csv"]],
)
def test_usage_errors_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        verify.main(argv)
    assert exc.value.code == 2
    assert "error" in capsys.readouterr().err


def test_unwritable_report_exits_3(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    code, _, err = _run(capsys, "-k", "faf.eq13.threshold", "--json", str(blocker / "v.json"))
    assert code == 3 and "cannot write" in err


def test_missing_hypothesis_is_reported_not_raised(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "hypothesis", None)  # as if it were not installed
    code, _, err = _run(capsys, "-k", CHEAP)
    assert code == 3 and "hypothesis" in err and "transfertheory[test]" in err


def test_a_perturbed_formula_turns_the_audit_red(monkeypatch, tmp_path, capsys):
    """Scale the exact finite-size scratch risk (as the method records call it) by 1.05: the claims built on it
    must FAIL and the exit status be 1."""
    original = methods.scratch_risk_finite
    monkeypatch.setattr(methods, "scratch_risk_finite", lambda *a, **k: 1.05 * original(*a, **k))
    # --workers 1: the monkeypatch lives in this process (xdist workers are fresh interpreters)
    code, out, _ = _run(capsys, "-k", "faf.eq10", "--workers", "1", "--json", str(tmp_path / "v.json"))
    assert code == 1
    records = {r["claim"]: r for r in json.loads((tmp_path / "v.json").read_text(encoding="utf-8"))}
    assert records["faf.eq10"]["status"] == "FAIL" and records["faf.eq10"]["discrepancy"] > records["faf.eq10"]["tolerance"]
    assert "reproduce: python -c" in out and " FAIL" in out.splitlines()[-1]
    monkeypatch.setattr(methods, "scratch_risk_finite", original)
    assert _run(capsys, "-k", "faf.eq10", "--workers", "1")[0] == 0


def test_explore_in_worker_processes_uses_the_seed_it_draws_and_prints(tmp_path, capsys):
    """Without --seed, the seed verify draws reaches every worker: the points are those of a serial run with it."""
    code, out, _ = _run(capsys, "-k", "faf.eq10", "--explore", "2", "--workers", "2", "--json", str(tmp_path / "w.json"))
    assert code == 0
    seed = re.search(r"--explore 2 --seed (\d+)", out).group(1)
    assert _run(capsys, "-k", "faf.eq10", "--explore", "2", "--seed", seed, "--workers", "1", "--json",
                str(tmp_path / "s.json"))[0] == 0
    points = [[(r["claim"], r["params"], r["measured"]) for r in json.loads((tmp_path / name).read_text())]
              for name in ("w.json", "s.json")]
    assert points[0] == points[1]


def test_explore_prints_its_seed_and_a_reproducible_failing_point(monkeypatch, tmp_path, capsys):
    original = linear.linear_transfer_risk
    monkeypatch.setattr(linear, "linear_transfer_risk", lambda *a, **k: original(*a, **k) + 0.5)
    code, out, _ = _run(capsys, "-k", "faf.eq12", "--explore", "3", "--seed", "11", "--workers", "1",
                        "--json", str(tmp_path / "v.json"))
    assert code == 1 and "seed 11" in out and "--explore 3 --seed 11" in out
    record = json.loads((tmp_path / "v.json").read_text(encoding="utf-8"))[0]
    assert record["status"] == "FAIL" and record["points"] == 3
    assert record["example"].startswith('python -c "from transfertheory.claims import check_point')
    # the printed point reproduces the failure, and passes once the formula is restored
    assert claims.check_point("faf.eq12", record["params"]).status == "FAIL"
    monkeypatch.setattr(linear, "linear_transfer_risk", original)
    assert claims.check_point("faf.eq12", record["params"]).status == "PASS"


def test_module_entry_point_runs_in_a_fresh_interpreter(tmp_path):
    result = subprocess.run([sys.executable, "-m", "transfertheory.verify", "-k", "faf.eq17", "--no-progress"],
                            capture_output=True, text=True, timeout=300, cwd=tmp_path,
                            env={**__import__("os").environ})
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr and "faf.eq17.finite" in result.stdout


def test_worker_processes_report_what_the_serial_run_reports_in_its_order(tmp_path, capsys, monkeypatch):
    from transfertheory import processes

    monkeypatch.setattr(processes, "available_cores", lambda: 1)  # so that 2 workers are more than the cores
    pattern = "faf.thm2.2"  # exact claims and an erratum, each in a fraction of a second
    reports = []
    for workers in ("1", "2"):
        path = tmp_path / f"v{workers}.json"
        code, out, err = _run(capsys, "-k", pattern, "--workers", workers, "--json", str(path))
        assert code == 0
        assert ("warning: 2 worker processes on 1 cores" in err) == (workers == "2")
        records = json.loads(path.read_text(encoding="utf-8"))
        for record in records:
            assert record.pop("seconds") >= 0
        rows = [line.split()[0] for line in out.splitlines() if line.startswith("faf.")]
        reports.append((records, rows))
    assert reports[0] == reports[1]
    assert [r["claim"] for r in reports[0][0]] == [c.id for c in claims.select(pattern)] == reports[0][1]
    assert len(reports[0][0]) >= 3 and {r["status"] for r in reports[0][0]} == {"PASS", "KNOWN-ERRATUM"}


class _Collected:
    """Plugin object: the items a pytest run collected."""

    items = ()

    def pytest_collection_finish(self, session):
        self.items = list(session.items)


def _collected(*argv):
    """The claim tests ``verify ARGV`` collects (``--list``: collection only), each as (claim id, its markers)."""
    args = verify.build_parser().parse_args([*argv, "--list"])
    collected = _Collected()
    assert pytest.main(verify.pytest_args(args, None), plugins=[collected]) == 0
    return [(item.claim_id, {mark.name: mark.args for mark in item.iter_markers()}) for item in collected.items]


def test_claims_that_share_a_computation_run_in_one_xdist_worker():
    """The MTL training claims share one cached study (``shares``): their tests carry one ``xdist_group`` mark, which
    ``verify --workers N`` (``--dist loadgroup``) sends to one worker, so that the study is computed once; every claim
    is a ``theorem`` test, in the registry's order."""
    collected = _collected("-k", "mtl.lemma1")
    assert [claim_id for claim_id, _ in collected] == [c.id for c in claims.select("mtl.lemma1", "quick")]
    grouped = [claim_id for claim_id, marks in collected if "xdist_group" in marks]
    assert grouped == ["mtl.lemma1.trained-width-rate", "mtl.lemma1.phi-prime-anil-trained",
                       "mtl.lemma1.fresh-test-head"]
    assert {marks["xdist_group"] for claim_id, marks in collected if claim_id in grouped} == {("mtl.training-study",)}
    assert all("theorem" in marks for _, marks in collected)


def test_k_is_pytests_keyword_expression_over_id_source_and_method():
    """``-k`` selects as pytest does, on the claim id, its source and its method; ``and``/``not`` combine them."""
    by_method = [claim_id for claim_id, _ in _collected("-k", "ridge")]
    assert by_method and set(by_method) == {c.id for c in claims.select("ridge", "quick")}
    assert [claim_id for claim_id, _ in _collected("-k", "faf.eq13 and not finite")] == [
        c.id for c in claims.select("faf.eq13", "quick") if "finite" not in c.id + c.source]


def test_worker_processes_start_the_simulations_first():
    """With xdist workers (``verify --workers 2``: ``-n 2 --dist loadgroup``) the claim tests are sorted by kind —
    simulations, Monte Carlo, closed forms — keeping the registry's order within a kind (the table keeps the
    registry's order: :func:`test_worker_processes_report_what_the_serial_run_reports_in_its_order`)."""
    from types import SimpleNamespace

    argv = verify.pytest_args(verify.build_parser().parse_args(["--workers", "2"]), None)
    assert argv[argv.index("-n") + 1] == "2" and argv[argv.index("--dist") + 1] == "loadgroup"
    selected = claims.select("faf.eq1", "quick")
    assert len({c.kind for c in selected}) >= 2  # something to sort
    items = [SimpleNamespace(claim_id=c.id) for c in selected] + [SimpleNamespace()]
    audit_plugin.pytest_collection_modifyitems(SimpleNamespace(getoption=lambda name, default=None: 2), items)
    rank = {kind: audit_plugin.KIND_START_RANK[kind] for kind in claims.KINDS}
    expected = sorted(selected, key=lambda c: rank[c.kind])  # a stable sort
    assert items[0] == SimpleNamespace() and [i.claim_id for i in items[1:]] == [c.id for c in expected]
    assert set(audit_plugin.KIND_START_RANK) == set(claims.KINDS)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the process table from /proc")
def test_sigterm_stops_the_workers_and_the_audit_in_one_line(tmp_path):
    """SIGTERM to ``verify --workers 2`` while the claims run: one line ``interrupted (SIGTERM)`` on stderr, exit 128 + 15, no
    report written, no traceback, and no process of the audit left (the xdist workers are its children)."""
    import os
    import signal
    import time

    report = tmp_path / "v.json"
    process = subprocess.Popen([sys.executable, "-m", "transfertheory.verify", "-k", "faf.thm3", "--workers", "2",
                                "--json", str(report)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and not _children(process.pid):
            time.sleep(0.2)
        workers = _children(process.pid)
        assert workers, "the workers started"
        time.sleep(2.0)  # the workers collect and start the claims
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode == 128 + signal.SIGTERM
    assert err.strip().splitlines() == ["interrupted (SIGTERM)"] and "Traceback" not in out
    assert not report.exists()
    time.sleep(1.0)
    assert [pid for pid in workers if _alive(pid)] == []


def test_a_closed_stdout_stops_the_audit_silently():
    """``verify | head -1``: once the reader has gone the audit stops with exit 128 + SIGPIPE and nothing on stderr
    (no BrokenPipeError traceback, none at the interpreter's last flush)."""
    import signal

    process = subprocess.Popen([sys.executable, "-m", "transfertheory.verify", "-k", "faf.thm2.2", "--workers", "1"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stdout.readline().split() == list(verify.COLUMNS)
    process.stdout.close()
    assert process.wait(timeout=300) == 128 + signal.SIGPIPE and process.stderr.read() == ""


def _children(pid):
    """Process ids of the children of ``pid`` (Linux /proc)."""
    from pathlib import Path

    found = []
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            fields = dict(line.split(":\t", 1) for line in status.read_text().splitlines() if ":\t" in line)
        except OSError:
            continue
        if fields.get("PPid", "").strip() == str(pid):
            found.append(int(status.parent.name))
    return found


def _alive(pid):
    from pathlib import Path

    try:
        return "State:\tZ" not in Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
