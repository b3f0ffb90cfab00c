"""The documentation agrees with the code: its command lines parse, its profile sizes are the real ones.

* Every ``python -m transfertheory…`` and ``python benchmarks/….py`` command line of README.md and docs/*.md (in
  a ```bash block, or a backticked span) is parsed by the real argparse parser of that command, and a figure
  named in a ``python -m transfertheory.figures`` command is registered; a backticked ``NAME --flag …`` with a
  registered figure NAME is read as ``python -m transfertheory.figures NAME --flag …``. Nothing is run: the
  parser's ``parse_args`` is intercepted.
* Every line that quotes the sizes of a claims-audit profile (``N points per claim``, ``N draws``, ``d = a–b``)
  quotes those of ``transfertheory.claims.profiles.PROFILES``.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.util
import io
import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from transfertheory.claims.profiles import PROFILES
from transfertheory.figures.catalog import figures

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

_COMMAND = re.compile(r"python -m transfertheory[\w.]*(?: [^`#\n]*)?|python benchmarks/\w+\.py(?: [^`#\n]*)?")
_SHELL_FENCE = re.compile(r"^\s*```(?:bash|sh|shell|console)\s*$")
_FENCE = re.compile(r"^\s*```")
_SPAN = re.compile(r"`([^`\n]+)`")


@dataclass(frozen=True)
class Command:
    """One command line quoted in a Markdown file."""

    path: Path
    line: int
    text: str

    def __str__(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}: {self.text}"


def _registry_shorthand(span: str) -> str | None:
    """``faf_fig6 --paper`` → the registry command it abbreviates (a registered name followed by a flag)."""
    words = span.split()
    if len(words) > 1 and words[0] in figures() and words[1].startswith("--"):
        return f"python -m transfertheory.figures {span}"
    return None


def quoted_commands(path: Path) -> list[Command]:
    """The command lines of a Markdown file: in shell blocks (comments dropped) and in backticked spans."""
    commands, shell, fenced = [], False, False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if _FENCE.match(line):
            fenced, shell = not fenced, (not fenced) and bool(_SHELL_FENCE.match(line))
            continue
        if fenced:
            if shell:
                commands += [Command(path, number, m.group(0).strip()) for m in _COMMAND.finditer(line)]
            continue
        for span in _SPAN.findall(line):
            command = span if _COMMAND.fullmatch(span) else _registry_shorthand(span)
            if command:
                commands.append(Command(path, number, command))
    return commands


class _Parsed(BaseException):
    """Raised by the intercepted ``parse_args`` with the namespace (BaseException: no ``except Exception`` eats it)."""

    def __init__(self, namespace):
        super().__init__()
        self.namespace = namespace


def _entry_point(words: list[str]):
    """(main function, arguments) of ``python -m MODULE …`` or ``python benchmarks/SCRIPT.py …``."""
    if words[1] == "-m":
        module = importlib.import_module(words[2])
        if not hasattr(module, "main"):  # a package: python -m runs its __main__
            module = importlib.import_module(words[2] + ".__main__")
        return module.main, words[3:]
    script = ROOT / words[1]
    spec = importlib.util.spec_from_file_location(f"_docs_{script.stem}", script)
    module = importlib.util.module_from_spec(spec)
    if str(script.parent) not in sys.path:
        sys.path.insert(0, str(script.parent))  # the benchmarks import their sibling bench_report
    spec.loader.exec_module(module)
    return module.main, words[2:]


def parse_command(text: str, monkeypatch) -> argparse.Namespace:
    """The namespace the command's own parser makes of its arguments; SystemExit with argparse's message if none."""
    main, argv = _entry_point(shlex.split(text))
    original = argparse.ArgumentParser.parse_args

    def intercepted(parser, args=None, namespace=None):
        raise _Parsed(original(parser, args, namespace))

    with monkeypatch.context() as patch:
        patch.setattr(argparse.ArgumentParser, "parse_args", intercepted)
        try:
            main(argv)
        except _Parsed as parsed:
            return parsed.namespace
    raise AssertionError(f"{text}: main() returned without parsing its arguments")


def _all_commands() -> list[Command]:
    return [command for path in DOCUMENTS for command in quoted_commands(path)]


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: p.name)
def test_every_quoted_command_line_parses_with_its_real_parser(path, monkeypatch):
    failures = []
    for command in quoted_commands(path):
        stderr = io.StringIO()
        try:
            with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
                namespace = parse_command(command.text, monkeypatch)
        except SystemExit as exit_:
            if exit_.code == 0:  # --help
                continue
            failures.append(f"{command}\n    {stderr.getvalue().strip().splitlines()[-1]}")
            continue
        unknown = [name for name in getattr(namespace, "names", []) or [] if "figures" in command.text
                   and name not in figures()]
        if unknown:
            failures.append(f"{command}\n    unknown figure(s) {unknown}")
    assert not failures, "command lines that do not parse:\n" + "\n".join(failures)


def test_the_command_collector_sees_blocks_spans_and_figure_shorthands():
    found = {command.text for command in _all_commands()}
    assert "python -m transfertheory.verify -k faf.thm3" in found  # verify.md's bash block, comment dropped
    assert "python -m transfertheory.figures --list" in found  # a backticked span
    assert "python benchmarks/bench_ntk.py --reference loop" in found
    assert _registry_shorthand("faf_fig6 --paper") == "python -m transfertheory.figures faf_fig6 --paper"
    assert _registry_shorthand("faf_fig6") is None and _registry_shorthand("--paper") is None


def test_a_flag_the_parser_does_not_know_is_reported(monkeypatch):
    with pytest.raises(SystemExit), contextlib.redirect_stderr(io.StringIO()):
        parse_command("python -m transfertheory.figures faf_fig6 --paper-size", monkeypatch)
    assert parse_command("python -m transfertheory.figures faf_fig6 --paper", monkeypatch).profile == "paper"


# --- the claims audit's profiles ------------------------------------------------------------------------

_PROFILE = re.compile(r"`(?:--)?(?P<name>quick|full|paper)`"
                      r"|transfertheory\.verify [^#\n]*--(?P<flag>quick|full|paper)\b")
_POINTS = re.compile(r"(\d+) points per claim")
_DRAWS = re.compile(r"(\d+) (?:target )?draws")
_REPETITIONS = re.compile(r"(\d+) repetitions")
_DIMENSION = re.compile(r"d (?:= (\d+)[–-](\d+)|∈ \[(\d+), (\d+)\])")


def _sizes(text: str, profile) -> list[tuple[object, object]]:
    """(quoted, actual) for the sizes quoted in free text about ``profile``."""
    pairs = [(int(m), profile.examples) for m in _POINTS.findall(text)]
    pairs += [(int(m), profile.sim_draws) for m in _DRAWS.findall(text)]
    pairs += [(int(m), profile.mc_reps) for m in _REPETITIONS.findall(text)]
    for match in _DIMENSION.finditer(text):
        pairs.append((tuple(int(v) for v in match.groups() if v is not None), profile.sim_d))
    return pairs


def _table_sizes(header: list[str], cells: list[str], profile) -> list[tuple[object, object]]:
    """(quoted, actual) for a table row about ``profile`` whose header names a size ("points per claim", "Monte
    Carlo …") and whose cell gives the bare number."""
    pairs = []
    for title, cell in zip(header, cells):
        number = re.fullmatch(r"\s*(\d+)\s*", cell)
        if number and "points per claim" in title:
            pairs.append((int(number.group(1)), profile.examples))
        elif number and "Monte Carlo" in title:
            pairs.append((int(number.group(1)), profile.mc_reps))
    return pairs


def profile_quotes() -> list[tuple[str, str, object, object]]:
    """(where, profile, quoted value, the profile's value) for each size quoted about a claims-audit profile.

    A line is about a profile when it names one in backticks (or is a ``verify --PROFILE`` command) and speaks of
    claims, or is a table row that starts
    with a profile under a header that speaks of claims or of the profile (the first profile named is the one the
    line describes, as in a table row or a command with its comment)."""
    quotes = []
    for path in DOCUMENTS:
        header: list[str] = []
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            cells = line.strip().strip("|").split("|") if line.lstrip().startswith("|") else []
            named = _PROFILE.search(line)
            row = bool(cells) and named is not None and named.start() < line.index("|", line.index("|") + 1)
            if cells and not named and not set(line.strip()) <= set("|-: "):
                header = cells
            if not named or not ("claim" in line or (row and "profile" in " ".join(header))):
                continue
            profile = PROFILES[named["name"] or named["flag"]]
            pairs = _sizes(line, profile) + (_table_sizes(header, cells, profile) if row else [])
            quotes += [(f"{path.relative_to(ROOT)}:{number}", profile.name, quoted, actual) for quoted, actual in pairs]
    return quotes


def test_profile_sizes_quoted_in_the_docs_are_those_of_the_code():
    quotes = profile_quotes()
    wrong = [f"{where}: `{name}` quoted {quoted}, the code has {actual}" for where, name, quoted, actual in quotes
             if quoted != actual]
    assert not wrong, "profile sizes that disagree with transfertheory/claims/profiles.py:\n" + "\n".join(wrong)
    described = {(where.split(":")[0], name) for where, name, _, _ in quotes}
    for page in ("docs/verify.md", "docs/testing.md"):  # the two pages that tabulate the profiles
        assert {(page, name) for name in PROFILES} <= described, f"{page} no longer quotes every profile's sizes"


def test_profile_descriptions_in_the_code_agree_with_the_profiles():
    """The one-line description that ``verify --help`` and the audit print quotes the profile's own sizes."""
    for profile in PROFILES.values():
        points = [int(v) for v in _POINTS.findall(profile.description)]
        draws = [int(v) for v in _DRAWS.findall(profile.description)]
        assert points in ([], [profile.examples]) and draws == [profile.sim_draws], profile


# --- the glossary ------------------------------------------------------------------------------------------

#: glossary anchor → how the term is written in the pages
GLOSSARY_TERMS = {
    "rkc": r"\bRKC",
    "allowance": r"\b[Aa]llowances?\b",
    "flow-limit": r"flow limit",
    "phi-prime-anil": r"Φ′_ANIL",
    "lambda-tau": r"λτ",
    "known-erratum": r"KNOWN-ERRATUM",
}


def first_uses(path: Path) -> dict[str, tuple[int, str]]:
    """glossary anchor → (line number, line) of the term's first use in a page, outside code blocks."""
    found, fenced = {}, False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if fenced:
            continue
        for anchor, term in GLOSSARY_TERMS.items():
            if anchor not in found and re.search(term, line):
                found[anchor] = (number, line)
    return found


def test_the_glossary_defines_every_term_and_the_index_links_it():
    glossary = (ROOT / "docs" / "glossary.md").read_text(encoding="utf-8")
    for anchor in GLOSSARY_TERMS:
        assert f'<a id="{anchor}"></a>' in glossary, anchor
    assert "](glossary.md)" in (ROOT / "docs" / "index.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("path", [p for p in DOCUMENTS if p.name != "glossary.md"], ids=lambda p: p.name)
def test_each_glossary_term_links_the_glossary_where_a_page_first_uses_it(path):
    prefix = "docs/" if path.name == "README.md" else ""
    unlinked = [f"{path.relative_to(ROOT)}:{number}: {anchor}" for anchor, (number, line) in first_uses(path).items()
                if f"]({prefix}glossary.md#{anchor})" not in line]
    assert not unlinked, "first uses of a glossary term without a link to docs/glossary.md:\n" + "\n".join(unlinked)


# --- runnable examples ------------------------------------------------------------------------------------

#: the pages that document a module of the package: each shows it in a ```python example that the docs
#: examples test runs (tests/docs/test_docs_examples.py)
MODULE_PAGES = ("distances.md", "linear.md", "merlin.md", "mtl.md", "phase_diagram.md", "relu.md", "simulator.md",
                "tdr.md", "figures.md", "verify.md", "architecture.md")


@pytest.mark.parametrize("name", MODULE_PAGES)
def test_every_module_page_has_a_runnable_python_example(name):
    from test_docs_examples import collect_examples

    run = [example for example in collect_examples(ROOT / "docs" / name) if not example.not_run]
    assert run, f"docs/{name} has no ```python example that runs"


# --- times and agreement counts quoted from the figures' metadata ---------------------------------------------


def _measured_section() -> str:
    text = (ROOT / "docs" / "figures.md").read_text(encoding="utf-8")
    start = text.index("## Measured")
    return text[start:text.index("\n## ", start + 1)]


def test_figure_build_times_and_agreement_quoted_in_figures_md_are_those_of_the_committed_metadata():
    """docs/figures.md's "Measured" section quotes each figure's build time as ``runtime_s`` of figures/NAME.json
    (2 decimals), and for a simulated FaF figure its points and largest |z| as the JSON's agreement record."""
    import json

    section, wrong = _measured_section(), []
    for name in figures():
        record = json.loads((ROOT / "figures" / f"{name}.json").read_text(encoding="utf-8"))
        quoted = re.search(rf"`{name}`[^`]*?(\d+\.\d+) s", section)
        expected = f"{record['runtime_s']:.2f}"
        if not quoted or quoted.group(1) != expected:
            wrong.append(f"{name}: build {quoted and quoted.group(1)} s, figures/{name}.json has runtime_s {expected}")
        row = re.search(rf"^\| `{name}` \|.*$", section, flags=re.M)
        agreement = record.get("agreement")
        if row and agreement:
            cells = [cell.strip() for cell in row.group(0).strip("|").split("|")]
            largest = float(cells[4].split()[0])  # quoted to 2 decimals
            if cells[3] != str(agreement["points"]) or abs(largest - agreement["largest_abs_z"]) > 0.005 + 1e-9 \
                    or cells[5] != str(agreement["outside"]):
                wrong.append(f"{name}: row {cells[3:]} vs agreement {agreement}")
    assert not wrong, "docs/figures.md disagrees with figures/*.json:\n" + "\n".join(wrong)


_TIME = re.compile(r"\d\s(?:s|min|ms)\b")


def test_every_page_that_quotes_a_time_links_the_conditions_of_the_timings():
    """A time means little without its machine and load: a page that quotes one links docs/benchmarks.md#timings."""
    missing = []
    for path in DOCUMENTS:
        text = path.read_text(encoding="utf-8")
        link = "(docs/benchmarks.md#timings)" if path.name == "README.md" else (
            "(#timings)" if path.name == "benchmarks.md" else "(benchmarks.md#timings)")
        prose = re.sub(r"```.*?```", "", text, flags=re.S)
        if _TIME.search(prose) and link not in text:
            missing.append(str(path.relative_to(ROOT)))
    assert not missing, "pages with times but no link to the timing conditions:\n" + "\n".join(missing)


_FIGURE_SIZES = {  # how figures.md's "size" column writes a quick-profile parameter
    "resolution": re.compile(r"grid (\d+)²"), "d": re.compile(r"\bd = (\d+)"), "draws": re.compile(r"(\d+) draws"),
    "n": re.compile(r"\bn = (\d+)"), "samples": re.compile(r"(\d+) samples"), "gammas": re.compile(r"(\d+) γ ×"),
    "thetas": re.compile(r"× (\d+) θ"),
}


def test_figure_sizes_quoted_in_figures_md_are_the_quick_profiles_of_the_registry():
    wrong, checked = [], 0
    for name, figure in figures().items():
        row = re.search(rf"^\| `{name}` \| ([^|]+) \|", _measured_section(), flags=re.M)
        if not row:
            continue
        for parameter, pattern in _FIGURE_SIZES.items():
            quoted = pattern.search(row.group(1))
            if quoted and parameter in figure.profiles["quick"]:
                checked += 1
                if int(quoted.group(1)) != figure.profiles["quick"][parameter]:
                    wrong.append(f"{name}: {parameter} = {quoted.group(1)}, quick profile "
                                 f"{figure.profiles['quick'][parameter]}")
    assert checked >= 12 and not wrong, f"{checked} sizes checked; disagreeing with the registry: {wrong}"
