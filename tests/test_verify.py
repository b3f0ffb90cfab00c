"""``python -m transfertheory.verify``: table, JSON, CSV, ``-k``, ``--explore``, exit codes, and a broken formula."""
import csv
import json
import subprocess
import sys

import pytest

from transfertheory import claims, verify
from transfertheory.theory import linear, methods

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
        assert {"claim", "source", "method", "discrepancy", "tolerance", "status"} <= set(record)
        assert record["status"] == "PASS" and record["discrepancy"] <= record["tolerance"]
    with open(csv_path, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["claim"] for r in rows] == selected and set(verify.COLUMNS) <= set(rows[0])


def test_known_erratum_rows_link_to_the_errata_page(tmp_path, capsys):
    code, out, _ = _run(capsys, "-k", "faf.thm2.2", "--json", str(tmp_path / "v.json"))
    assert code == 0
    line = next(l for l in out.splitlines() if l.startswith("faf.thm2.2.dudley "))
    assert "KNOWN-ERRATUM" in line and line.endswith("docs/errata.md#erratum-dudley")
    records = {r["claim"]: r for r in json.loads((tmp_path / "v.json").read_text(encoding="utf-8"))}
    assert records["faf.thm2.2.kl-constant"]["erratum"] == "docs/errata.md#erratum-kl-constant"
    assert records["faf.thm2.2.kl"]["status"] == "PASS" and records["faf.thm2.2.kl"]["erratum"] == ""


def test_glob_filter_and_list(capsys):
    code, out, _ = _run(capsys, "-k", "faf.eq1[05]", "--list")
    assert code == 0
    assert [line.split()[0] for line in out.splitlines()] == ["faf.eq10", "faf.eq15"]


@pytest.mark.parametrize(
    "argv",
    [["--quick", "--full"], ["--explore", "0"], ["--explore", "x"], ["--seed", "3"], ["--explore", "2", "--seed", "-1"],
     ["-k", "no such claim"], ["--bogus"]],
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
    import builtins

    real_import = builtins.__import__

    def no_claims(name, globals=None, locals=None, fromlist=(), level=0):
        if level == 1 and fromlist and "claims" in fromlist:
            raise ModuleNotFoundError("No module named 'hypothesis'", name="hypothesis")
        return real_import(name, globals, locals, fromlist, level)

    monkeypatch.setattr(builtins, "__import__", no_claims)
    code, _, err = _run(capsys, "-k", CHEAP)
    assert code == 3 and "hypothesis" in err and "transfertheory[test]" in err


def test_a_perturbed_formula_turns_the_audit_red(monkeypatch, tmp_path, capsys):
    """Scale the exact finite-size scratch risk (as the method records call it) by 1.05: the claims built on it
    must FAIL and the exit status be 1."""
    original = methods.scratch_risk_finite
    monkeypatch.setattr(methods, "scratch_risk_finite", lambda *a, **k: 1.05 * original(*a, **k))
    code, out, _ = _run(capsys, "-k", "faf.eq10", "--json", str(tmp_path / "v.json"))
    assert code == 1
    records = {r["claim"]: r for r in json.loads((tmp_path / "v.json").read_text(encoding="utf-8"))}
    assert records["faf.eq10"]["status"] == "FAIL" and records["faf.eq10"]["discrepancy"] > records["faf.eq10"]["tolerance"]
    assert "reproduce: python -c" in out and " FAIL" in out.splitlines()[-1]
    monkeypatch.setattr(methods, "scratch_risk_finite", original)
    assert _run(capsys, "-k", "faf.eq10")[0] == 0


def test_explore_prints_its_seed_and_a_reproducible_failing_point(monkeypatch, tmp_path, capsys):
    original = linear.linear_transfer_risk
    monkeypatch.setattr(linear, "linear_transfer_risk", lambda *a, **k: original(*a, **k) + 0.5)
    code, out, _ = _run(capsys, "-k", "faf.eq12", "--explore", "3", "--seed", "11", "--json", str(tmp_path / "v.json"))
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
