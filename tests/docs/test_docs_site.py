"""The documentation site's generated pages (docs/_ext/sitegen, docs/site.md), checked without running Sphinx.

The strict Sphinx build runs in CI (``.ci/run``); these tests check what it is built from: every registered figure
and claim, and every public name, has its page; the navigation lists every page of docs/; hand-written pages are
adapted (anchors, claim links) without touching code blocks; every module docstring parses as
reStructuredText once its absolute-value bars are escaped as the build escapes them.
"""
from __future__ import annotations

import importlib
import json
import re
import sys
from pathlib import Path

import pytest

from transfertheory.claims import CLAIMS, KNOWN_ERRATUM
from transfertheory.figures.catalog import figures

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
sys.path.insert(0, str(DOCS / "_ext"))

from sitegen import GENERATED, RECORD, RECORD_PAPER, root_toctree, section_pages, site_markdown  # noqa: E402
from sitegen.api import api_pages, cli_pages, command_modules, exported, home_name, public_modules  # noqa: E402
from sitegen.audit import NOT_RUN, NOT_YET_PAPER, audit_page  # noqa: E402
from sitegen.mathtext import statement_rst  # noqa: E402
from sitegen.docstrings import escape_bars, on_process_docstring  # noqa: E402
from sitegen.gallery import NOT_YET_PAPER as NOT_YET_PAPER_FIGURE, gallery_pages  # noqa: E402
from transfertheory.figures.output import THUMBNAIL  # noqa: E402
from sitegen.text import claim_label  # noqa: E402


def _site_toctree():
    namespace = {"__file__": str(DOCS / "conf.py")}
    source = (DOCS / "conf.py").read_text(encoding="utf-8")
    start = source.index("site_toctree = [")
    exec(source[start:source.index("]\n", start) + 2], namespace)  # the literal alone: conf.py imports sitegen
    return namespace["site_toctree"]


def test_the_navigation_lists_every_page_of_docs_and_only_existing_ones():
    listed = [doc for _, docs in _site_toctree() for doc in docs]
    pages = {path.stem for path in DOCS.glob("*.md")} - {"index"}
    assert sorted(pages - set(listed)) == []
    missing = [doc for doc in listed if "/" not in doc and not (DOCS / f"{doc}.md").is_file()]
    assert missing == []
    assert {doc.split("/")[0] for doc in listed if "/" in doc} == set(GENERATED) - {"sections"}
    assert len(listed) == len(set(listed))


def test_the_gallery_has_a_page_for_every_registered_figure_with_its_image_and_commands():
    pages = gallery_pages(ROOT / "figures")
    for name, figure in figures().items():
        page = pages[f"gallery/{name}.rst"]
        assert f"python -m transfertheory.figures {name} --quick" in page
        assert f"python -m transfertheory.figures {name} --paper" in page
        assert f"../../figures/{name}.png" in page  # the committed quick-profile image
        assert f":doc:`{name} <{name}>`" in pages["gallery/index.rst"]
        meta = json.loads((ROOT / "figures" / f"{name}.json").read_text(encoding="utf-8"))
        assert f"{meta['runtime_s']:.1f} s" in page
        if meta.get("agreement"):
            assert f"{meta['agreement']['outside']} of {meta['agreement']['points']} points" in page


def test_a_figure_without_committed_files_is_listed_with_the_command_that_builds_it(tmp_path):
    pages = gallery_pages(tmp_path)
    name = next(iter(figures()))
    assert "Not built in this repository yet" in pages[f"gallery/{name}.rst"]
    assert ".. image::" not in pages["gallery/index.rst"]


def _fake_build(folder: Path, name: str, profile: str, **extra) -> None:
    """A figure's committed files in ``folder`` as a build writes them: a tiny PNG and its ``NAME.json``."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    (folder / f"{name}{THUMBNAIL}").write_bytes(b"\x89PNG\r\n\x1a\n")
    meta = {"figure": name, "profile": profile, "backend": "numpy", "runtime_s": 1.25, "version": "0", **extra}
    (folder / f"{name}.json").write_text(json.dumps(meta), encoding="utf-8")


def test_each_gallery_page_shows_the_paper_size_build_beside_the_quick_one(tmp_path):
    """A paper-size build in figures/paper/ appears beside the quick one with its runtime and device; a figure
    without one says it has not yet run at the paper's size (the paper builds are not committed yet)."""
    built, other = list(figures())[:2]
    _fake_build(tmp_path, built, "quick")
    _fake_build(tmp_path, other, "quick")
    _fake_build(tmp_path / "paper", built, "paper", runtime_s=30.0, backend="cupy", device="NVIDIA H200")
    pages = gallery_pages(tmp_path)
    page = pages[f"gallery/{built}.rst"]
    assert page.index(f"../../figures/{built}.png") < page.index(f"../../figures/paper/{built}.png")
    assert "**the paper's sizes** — 30.0 s on NVIDIA H200 (cupy)" in page
    assert "**quick profile (CPU-sized)** — 1.2 s, backend numpy" in page
    assert NOT_YET_PAPER_FIGURE not in page
    page = pages[f"gallery/{other}.rst"]
    assert f"../../figures/paper/{other}.png" not in page
    assert f"{NOT_YET_PAPER_FIGURE}: ``python -m transfertheory.figures {other} --paper --out figures/paper``" in page
    index = pages["gallery/index.rst"]
    assert "*Paper's sizes:* 30.0 s on NVIDIA H200 (cupy)." in index and NOT_YET_PAPER_FIGURE in index
    _fake_build(tmp_path / "paper", built, "paper", store_points={"points": 21, "compute_s": 827.7})
    assert ("**the paper's sizes** — 1.2 s, backend numpy, drawn from 21 stored points that took 828 s to compute"
            in gallery_pages(tmp_path)[f"gallery/{built}.rst"])


def test_figures_readme_lists_the_quick_and_the_paper_size_builds(tmp_path):
    """figures/README.md: each figure's quick build and, beside it, its build in paper/ (runtime, device, links),
    or "not yet run at the paper's size"; the paper folder's own README lists no subfolder."""
    from transfertheory.figures import gallery as readme

    built, other = list(figures())[:2]
    _fake_build(tmp_path, built, "quick")
    _fake_build(tmp_path / "paper", built, "paper", runtime_s=30.0, backend="cupy", device="NVIDIA H200")
    text = readme.render_readme(tmp_path)
    assert "| at the paper's sizes |" in text
    assert f"[30.0 s on NVIDIA H200 (cupy)](paper/{built}.png) |" in text
    assert f"- At the paper's sizes: [paper/{built}.png](paper/{built}.png), 30.0 s on NVIDIA H200 (cupy)" in text
    assert (f"- At the paper's sizes: {readme.NOT_YET_PAPER} (`python -m transfertheory.figures {other} --paper "
            "--out figures/paper`).") in text
    own = readme.render_readme(tmp_path / "paper")
    assert "at the paper's sizes" not in own and f"{other} --paper`" in own


def test_the_committed_gallery_readmes_are_what_the_committed_builds_generate():
    """figures/README.md and figures/paper/README.md are generated, never edited: each equals what render_readme
    makes of the committed NAME.json files now (a build that rewrote one folder's JSONs rewrites the other README
    too: `python -m transfertheory.figures` regenerates only its own --out)."""
    from transfertheory.figures.gallery import README, render_readme

    for folder in (ROOT / "figures", ROOT / "figures" / "paper"):
        assert (folder / README).read_text(encoding="utf-8") == render_readme(folder), folder


def test_a_build_into_a_paper_folder_rewrites_the_gallery_readme_above_it(tmp_path, capsys):
    """`figures NAME --out G/paper` rewrites G/README.md too when G is a gallery (it lists the paper builds), and
    leaves a folder without a README alone."""
    from transfertheory.figures.__main__ import main
    from transfertheory.figures.gallery import render_readme

    (tmp_path / "README.md").write_text("stale", encoding="utf-8")
    assert main(["faf_finetune_depth", "--quick", "--format", "png", "--out", str(tmp_path / "paper")]) == 0
    assert (tmp_path / "README.md").read_text(encoding="utf-8") == render_readme(tmp_path)
    assert "](paper/faf_finetune_depth.png)" in render_readme(tmp_path)
    assert f"wrote {tmp_path / 'paper' / 'README.md'}, {tmp_path / 'README.md'}" in capsys.readouterr().out
    alone = tmp_path / "alone"
    assert main(["faf_finetune_depth", "--quick", "--format", "png", "--out", str(alone / "paper")]) == 0
    assert not (alone / "README.md").exists()


def test_a_smaller_profile_in_the_paper_gallery_is_never_called_the_papers_sizes(tmp_path):
    """A build of another profile in figures/paper/ (a paper profile too long for the CPU): both galleries name its
    profile, never "the paper's sizes", and say why it stands in (its NAME.json, else the registry)."""
    from transfertheory.figures import gallery as readme

    name, other = list(figures())[:2]
    for figure in (name, other):
        _fake_build(tmp_path, figure, "quick")
    _fake_build(tmp_path / "paper", name, "full", stands_in_for_paper="too long for two cores")
    _fake_build(tmp_path / "paper", other, "full")
    page = gallery_pages(tmp_path)[f"gallery/{name}.rst"]
    assert "**profile full, standing in for the paper's sizes** — 1.2 s, backend numpy" in page
    assert "**the paper's sizes**" not in page and ".. note:: Not the paper's sizes: too long for two cores." in page
    text = readme.render_readme(tmp_path)
    assert f"- At profile full, standing in for the paper's sizes: [paper/{name}.png]" in text
    assert "Why: too long for two cores." in text and f"](paper/{name}.png) (profile `full`) |" in text
    reason = readme.stand_in_reason(figures()[other], "full")
    assert f"- Not the paper's sizes: {reason}." in readme.render_readme(tmp_path / "paper")
    assert "- Not the paper's sizes: too long for two cores." in readme.render_readme(tmp_path / "paper")
    assert "Not the paper's sizes" not in readme.render_readme(tmp_path)


def test_figures_warns_that_it_rewrites_the_committed_gallery_without_out():
    """``python -m transfertheory.figures NAME`` writes into figures/, over the committed files: --help and
    docs/figures.md say so and name --out."""
    from transfertheory.figures.__main__ import build_parser

    help_text = " ".join(build_parser().format_help().split())
    assert "replacing the gallery files committed there" in help_text and "give --out DIR" in help_text
    assert "**`figures NAME` rewrites the committed gallery.**" in (DOCS / "figures.md").read_text(encoding="utf-8")


def test_the_docs_say_what_pytest_prints_for_slow_tests():
    """The docs called slow tests "deselected" while tests/conftest.py marked them skipped (pytest printed
    SKIPPED): the pages that tell a user what the suite prints must use the word of the mechanism in place —
    skipped, quoting the reason pytest prints, or deselected when conftest deselects them."""
    conftest = (ROOT / "tests" / "conftest.py").read_text(encoding="utf-8")
    skip = re.search(r'pytest\.mark\.skip\(reason="(slow: [^"]+)"\)', conftest)
    assert skip or "pytest_deselected" in conftest, "tests/conftest.py neither skips nor deselects slow tests"
    for page in ("getting_started.md", "testing.md"):
        text = (DOCS / page).read_text(encoding="utf-8")
        says_deselected = re.search(r"slow[^.]*deselected|deselected[^.]*slow", text)
        if skip:
            assert skip.group(1) in text, f"docs/{page} does not quote {skip.group(1)!r}"
            assert not says_deselected, f"docs/{page} calls the skipped slow tests deselected"
        else:
            assert says_deselected, f"docs/{page} does not say slow tests are deselected"


def test_the_readme_quotes_the_suite_time_with_what_a_shared_machine_does_to_it():
    """The README quoted the idle suite time (3 min 31 s) alone; under load it took 9–10 min."""
    text = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    sentence = text[text.index("- **Tests** —"):text.index("- **Sweeps** —")]
    assert "nothing else running" in sentence and "9–10 min" in sentence and "under load" in sentence


def test_the_finite_size_spread_of_c_at_sigma_zero_quoted_in_the_docs_is_the_packages():
    """docs/errata.md said Eq. 142 is "right at σ = 0" and docs/linear.md "c = 1 only for σ = 0": both hold only as
    n, d → ∞. The per-draw c of the gradient-flow limit (``fine_tune_limit``) at d = 100, n = 50, σ = 0 varies
    around 1 — the range the pages now quote, recomputed here from the same draws — and is 1 at θ = 0, where
    ‖Pβ_t‖ = ‖Pβ_s‖ in every draw."""
    import numpy as np

    from transfertheory.theory import linear

    d, n, draws = 100, 50, 2000
    rng = np.random.default_rng(0)
    beta_s = np.eye(d)[0]
    quoted = {}
    for theta in (0.0, np.pi / 2):
        beta_t = np.cos(theta) * np.eye(d)[0] + np.sin(theta) * np.eye(d)[1]
        X = rng.standard_normal((draws, n, d))
        limit = linear.fine_tune_limit(X, X @ beta_t, np.broadcast_to(beta_s, (draws, d)))
        carried = beta_s - linear.min_norm_solution(X, X @ beta_s)  # (I − P)β_s
        c = np.sum(limit * carried, -1) / np.sum(carried**2, -1)
        quoted[theta] = f"{np.percentile(c, 1):.2f}–{np.percentile(c, 99):.2f}"
        if theta == 0.0:
            np.testing.assert_allclose(c, 1.0, atol=1e-12)
    assert quoted[np.pi / 2] == "0.92–1.07"
    errata, page = ((DOCS / name).read_text(encoding="utf-8") for name in ("errata.md", "linear.md"))
    assert "they are right at σ = 0" not in errata and "c = 1 only for σ = 0" not in page
    assert "1st–99th percentiles 0.92–1.07 at θ = π/2" in errata and "0.92–1.07" in page


def test_the_audit_page_lists_every_registered_claim_with_its_recorded_status():
    page = audit_page(DOCS / RECORD)
    record = {row["claim"]: row for row in json.loads((DOCS / RECORD).read_text(encoding="utf-8"))}
    for claim_id, claim in CLAIMS.items():
        assert f".. _{claim_label(claim_id)}:" in page and f"``{claim_id}``" in page
        if claim.expected == KNOWN_ERRATUM:
            assert f":ref:`erratum <{claim.erratum}>`" in page
    assert NOT_RUN not in page, "the committed record lacks a registered claim: regenerate docs/_data/verify.json"
    assert set(record) <= set(CLAIMS)


def _audit_row(page: str, claim_id: str) -> str:
    """The list-table row of one claim on the audit page."""
    row = page[page.index(f".. _{claim_label(claim_id)}:"):]
    return re.split(r"\n   \* - \.\. _|\n\n(?=\S)", row[1:], maxsplit=1)[0]


def test_the_audit_page_reads_the_record_defensively(tmp_path):
    first, second = list(CLAIMS)[:2]
    record = tmp_path / "verify.json"
    record.write_text(json.dumps([{"claim": first, "status": "PASS", "category": "slip", "requires": "|z| ≤ 4"},
                                  {"status": "PASS"}]), encoding="utf-8")
    page = audit_page(record)
    assert "PASS** (slip)" in _audit_row(page, first)
    assert "requires \\|z\\| ≤ 4" in _audit_row(page, first)
    assert NOT_RUN in _audit_row(page, second) and "PASS" not in _audit_row(page, second)
    assert "No quick-profile ``verify --json`` record" in audit_page(tmp_path / "absent.json")


def test_the_audit_page_shows_both_profiles_side_by_side(tmp_path):
    """A paper-size record beside the quick one: each claim's row has both statuses (and measured values); the
    summary counts both. Without the paper-size record every paper status reads "not yet run"."""
    first, second = list(CLAIMS)[:2]
    quick, paper = tmp_path / "verify.json", tmp_path / "verify-paper.json"
    quick.write_text(json.dumps([{"claim": first, "status": "PASS", "measured": 0.5, "profile": "quick"},
                                 {"claim": second, "status": "PASS", "profile": "quick"}]), encoding="utf-8")
    paper.write_text(json.dumps({"claims": [{"claim": first, "status": "FAIL", "measured": 7.25,
                                             "profile": "paper"}]}), encoding="utf-8")
    page = audit_page(quick, paper)
    row = _audit_row(page, first)
    assert row.index("✔ **PASS**, measured 0.5") < row.index("✘ **FAIL**, measured 7.25")
    assert NOT_RUN in _audit_row(page, second) and NOT_YET_PAPER not in page
    assert "paper's sizes: PASS" in page and "     - quick profile\n     - paper's sizes" in page
    absent = audit_page(quick, tmp_path / "no-paper.json")
    assert NOT_YET_PAPER in _audit_row(absent, first) and "not yet run at the paper's sizes" in absent
    assert "FAIL" not in absent
    committed = audit_page(DOCS / RECORD, DOCS / RECORD_PAPER)  # the site's page: paper record or the note
    assert (DOCS / RECORD_PAPER).is_file() == (NOT_YET_PAPER not in committed)


def test_claim_statements_are_typeset_not_shown_as_raw_tex():
    """The audit page showed statements as raw TeX (``e^{−σ²/2}``, ``D_KL``): every TeX-like piece is now a
    ``:math:`` role, so no caret, escaped underscore or brace is left in the prose of any registered claim."""
    assert statement_rst("D_KL(p_f ‖ p_g) = ‖β_f − β_g‖²/(2σ²) for linear tasks") == \
        ":math:`D_{KL}(p_f ‖ p_g) = ‖β_f − β_g‖²/(2σ²)` for linear tasks"
    assert statement_rst("E_{w~N(0,I)}[x_i 1{wᵀx_i ≥ 0}], decays like h^(−1/2).") == \
        r":math:`E_{w\sim N(0,I)}[x_i 1\{wᵀx_i ≥ 0\}]`, decays like :math:`h^{(−1/2)}`."
    assert statement_rst("gives D_KL ≥ δ (a 2 of 2σ²)") == "gives :math:`D_{KL} ≥ δ` (a 2 of 2σ²)"
    assert statement_rst("the bound any_wrong_feature_fit_bound(n, k) holds") == \
        r"the bound ``any_wrong_feature_fit_bound``\ (n, k) holds"
    for claim in CLAIMS.values():
        text = statement_rst(claim.statement)
        prose = re.sub(r"``[^`]*``", "", re.sub(r":math:`[^`]*`", "", text))
        assert not re.search(r"\^|\\_|[{}]", prose), f"{claim.id}: raw TeX left in {prose!r}"
        assert _rst_errors(text) == [], f"{claim.id}: {text}"


def test_every_public_name_of_every_public_module_is_in_the_api_reference():
    pages = api_pages()
    text = "\n".join(pages.values())
    for module in public_modules():
        assert f"api/{module}.rst" in pages
        for name in exported(module):
            assert f"{module}.{name}\n" in text or f".{name}`" in text, f"{module}.{name} is not in the reference"
    assert ".. autofunction:: transfertheory.sim.relu_teacher.experiment.run_transfer_experiment" in text or \
        any(f".. autofunction:: {m}.run_transfer_experiment" in text for m in public_modules())


def test_a_reference_through_a_re_exporting_package_finds_the_one_description():
    assert home_name("transfertheory.sim.integrator.integrate_gradient_flow") == \
        "transfertheory.sim.integrator.flow.integrate_gradient_flow"
    assert home_name("transfertheory.sim.integrator.flow.integrate_gradient_flow") is None  # already home
    assert home_name("transfertheory.sim.integrator.STATUSES") is None  # data: described where exported
    assert home_name("transfertheory.no_such_module.f") is None
    assert home_name(".integrator.flow_state_bytes") is None and home_name("train") is None


def test_the_command_pages_are_the_parsers_help():
    modules = command_modules()
    assert {"transfertheory.verify", "transfertheory.figures.__main__", "transfertheory.phase_diagram"} <= set(modules)
    pages = cli_pages()
    for module in modules:
        parser = importlib.import_module(module).build_parser()
        page = pages[f"cli/{module.removesuffix('.__main__')}.rst"]
        for action in parser._actions:
            for option in action.option_strings:
                assert option in page, f"{module}: {option} is missing from its page"


def test_hand_written_pages_get_site_anchors_and_claim_links_but_code_blocks_stay():
    claim_id = next(iter(CLAIMS))
    text = "\n".join(['<a id="erratum-x"></a>', f"Audit claim `{claim_id}`, not `faf.no-such-claim`.",
                      "```python", f"x = '`{claim_id}`'", '<a id="inside"></a>', "```"])
    adapted = site_markdown(text, CLAIMS, "audit/index.rst").split("\n")
    assert adapted[0] == "(erratum-x)="
    assert f"[`{claim_id}`](audit/index.rst#{claim_label(claim_id)})" in adapted[1]
    assert "`faf.no-such-claim`" in adapted[1]
    assert adapted[2:] == text.split("\n")[2:]
    assert section_pages([("Theory", ["linear"])]) == {"sections/theory.rst": "Theory\n======\n\n.. toctree::\n"
                                                                              "   :maxdepth: 1\n\n   /linear\n"}
    assert "sections/theory" in root_toctree([("Theory", ["linear"])])


def test_docstring_bars_are_escaped_outside_literals_and_grid_tables():
    assert escape_bars("|z| ≤ 4, ``a|b``") == r"\|z\| ≤ 4, ``a|b``"
    table = ["+---+---+", "| a | b |", "+---+---+", "|z| ≤ 4"]
    on_process_docstring(None, "function", "f", len, {}, table)
    assert table == ["+---+---+", "| a | b |", "+---+---+", r"\|z\| ≤ 4"]
    inherited = tuple.__doc__.splitlines()
    on_process_docstring(None, "data", "PROFILES", ("quick",), {}, inherited)
    assert inherited == []


def _rst_errors(text: str) -> list[str]:
    """reStructuredText errors in ``text`` (Sphinx's roles read as literals), as docutils reports them."""
    docutils_core = pytest.importorskip("docutils.core")
    from docutils.parsers.rst import roles

    for role in ("func", "mod", "class", "meth", "attr", "data", "exc", "obj", "math", "doc", "ref"):
        roles.register_generic_role(role, __import__("docutils.nodes").nodes.literal)
    messages = []
    docutils_core.publish_doctree(text, settings_overrides={"report_level": 2, "halt_level": 5,
                                                            "warning_stream": _Collect(messages)})
    return messages


class _Collect:
    def __init__(self, messages):
        self.messages = messages

    def write(self, text):
        if text.strip():
            self.messages.append(text.strip())


@pytest.mark.parametrize("module", public_modules())
def test_every_module_docstring_parses_as_restructuredtext(module):
    import inspect

    doc = inspect.getdoc(importlib.import_module(module)) or ""
    errors = _rst_errors("\n".join(escape_bars(line) for line in doc.splitlines()))
    assert errors == [], f"{module}'s docstring: " + "\n".join(errors)
