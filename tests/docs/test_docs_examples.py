"""Every ```python example in README.md and docs/*.md runs, like a doctest session.

The blocks of one Markdown file run in order in one namespace (a later block may use
what an earlier one defined), with a temporary directory as the working directory and
matplotlib on its Agg backend. One test per file (test id = the file name); a failure
names the file, the block number and the Markdown line of the failing statement.

A block is not run only when the line just before its opening fence (blank lines
aside) is ``<!-- example: not run (REASON) -->``; the test then reports REASON as a
warning. Keep that for blocks that need a GPU or the papers' sizes. Fences other than
```python (```bash, plain ```) are not collected. Each file's examples must finish in
seconds; ``FILE_BUDGET_S`` is a generous ceiling that catches a paper-size example.
"""
from __future__ import annotations

import re
import time
import traceback
import warnings
from dataclasses import dataclass
from pathlib import Path

import pytest
from doc_warnings import DocExampleNotRun  # a module the xdist controller can import (tests/)

ROOT = Path(__file__).resolve().parents[2]
FILE_BUDGET_S = 60.0

_OPEN = re.compile(r"^(\s*)```python\s*$")
_FENCE = re.compile(r"^\s*```")
_NOT_RUN = re.compile(r"^\s*<!--\s*example:\s*not run\s*\((?P<reason>.+)\)\s*-->\s*$")




@dataclass(frozen=True)
class Example:
    """One ```python block: its file, 1-based block number, first code line, code, skip reason."""

    path: Path
    number: int
    line: int
    code: str
    not_run: str | None = None

    @property
    def where(self) -> str:
        return f"{_display(self.path)}, example {self.number} (line {self.line})"


def _display(path: Path) -> str:
    try:
        return str(path.relative_to(ROOT))
    except ValueError:
        return str(path)


def collect_examples(path: Path) -> list[Example]:
    """The ```python blocks of a Markdown file, in order (unterminated fence → ValueError)."""
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    examples, i, previous = [], 0, ""
    while i < len(lines):
        opening = _OPEN.match(lines[i])
        if not opening:
            if _FENCE.match(lines[i]):  # another language's block: skip it whole
                i += 1
                while i < len(lines) and not _FENCE.match(lines[i]):
                    i += 1
            if lines[i:i + 1] and lines[i].strip():
                previous = lines[i]
            i += 1
            continue
        indent, start = len(opening.group(1)), i + 1
        end = start
        while end < len(lines) and not _FENCE.match(lines[end]):
            end += 1
        if end == len(lines):
            raise ValueError(f"{_display(Path(path))}: ```python block opened on line {i + 1} is never closed")
        code = "\n".join(line[indent:] if line[:indent].isspace() else line for line in lines[start:end])
        marker = _NOT_RUN.match(previous)
        examples.append(Example(Path(path), len(examples) + 1, start + 1, code, marker and marker["reason"]))
        previous, i = lines[end], end + 1
    return examples


class DocExampleError(AssertionError):
    """A documentation example raised; the message says where."""


def run_examples(examples: list[Example], namespace: dict | None = None) -> list[Example]:
    """Run the blocks in order in one namespace; returns the blocks marked not run.

    Code is compiled under the Markdown file's name with its line numbers, so a
    traceback points into the Markdown file.
    """
    namespace = {"__name__": "__doc_example__"} if namespace is None else namespace
    not_run = []
    for example in examples:
        if example.not_run:
            not_run.append(example)
            continue
        padded = "\n" * (example.line - 1) + example.code
        try:
            exec(compile(padded, str(example.path), "exec"), namespace)
        except BaseException as error:  # noqa: BLE001  (SystemExit from a CLI example included)
            frames = [f for f in traceback.extract_tb(error.__traceback__) if f.filename == str(example.path)]
            line = frames[-1].lineno if frames else example.line
            raise DocExampleError(
                f"{example.where} failed at line {line}: {type(error).__name__}: {error}\n"
                + "".join(traceback.format_exception(error)[-8:])
            ) from error
    return not_run


def documentation_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


@pytest.fixture
def example_session(tmp_path, monkeypatch):
    """Temporary working directory, Agg backend, figures closed afterwards."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.chdir(tmp_path)
    yield tmp_path
    import matplotlib.pyplot as plt

    plt.close("all")


@pytest.mark.meta
@pytest.mark.parametrize("path", documentation_files(), ids=lambda p: p.name)
def test_documentation_examples_run(path, example_session):
    examples = collect_examples(path)
    start = time.perf_counter()
    not_run = run_examples(examples)
    seconds = time.perf_counter() - start
    for example in not_run:
        warnings.warn(f"{example.where} not run: {example.not_run}", DocExampleNotRun, stacklevel=1)
    assert seconds <= FILE_BUDGET_S, (
        f"{_display(path)}: examples took {seconds:.0f} s (budget {FILE_BUDGET_S:.0f} s); shrink them, or mark a "
        "paper-size block <!-- example: not run (reason) -->"
    )


# --- links between the pages --------------------------------------------------------------------------

_LINK = re.compile(r"\]\((?P<target>[^)\s]+)\)")
_ANCHOR = re.compile(r"<a\s+id=\"(?P<id>[^\"]+)\"\s*>")
_HEADING = re.compile(r"^#{1,6}\s+(?P<text>.+?)\s*#*\s*$")


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Explicit ``<a id=...>`` anchors and heading anchors of a Markdown file (outside code fences)."""
    found, seen, fenced = set(), {}, False
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if fenced:
            continue
        found.update(m["id"] for m in _ANCHOR.finditer(line))
        heading = _HEADING.match(line)
        if heading:
            slug = _slug(heading["text"])
            found.add(slug if slug not in seen else f"{slug}-{seen[slug]}")
            seen[slug] = seen.get(slug, 0) + 1
    return found


def broken_links(path: Path) -> list[str]:
    """Relative links of a Markdown file whose file or anchor does not exist (web links are not followed)."""
    broken, fenced = [], False
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if _FENCE.match(line):
            fenced = not fenced
        if fenced:
            continue
        for match in _LINK.finditer(line):
            target = match["target"]
            if re.match(r"^[a-z]+:", target):
                continue
            file_part, _, anchor = target.partition("#")
            linked = Path(path).parent / file_part if file_part else Path(path)
            if not linked.exists():
                broken.append(f"line {number}: {target} (no such file)")
            elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
                broken.append(f"line {number}: {target} (no such anchor in {linked.name})")
    return broken


@pytest.mark.parametrize("path", documentation_files(), ids=lambda p: p.name)
def test_documentation_links_resolve(path):
    broken = broken_links(path)
    assert not broken, f"{_display(path)}: broken links\n" + "\n".join(broken)


def _errata_sections() -> dict[str, str]:
    """Text of errata.md after each explicit anchor, up to the next one."""
    text = (ROOT / "docs" / "errata.md").read_text(encoding="utf-8")
    parts = _ANCHOR.split(text)  # [before, id1, body1, id2, body2, ...]
    return dict(zip(parts[1::2], parts[2::2]))


def _erratum_claims() -> dict[str, str]:
    """claim id → errata anchor, for every registered KNOWN-ERRATUM claim."""
    import transfertheory.claims.catalog  # noqa: F401  (registers the claims)
    from transfertheory.claims.registry import CLAIMS

    return {claim.id: claim.erratum for claim in CLAIMS.values() if claim.erratum is not None}


def test_errata_and_the_claims_registry_link_both_ways():
    """Every anchor of errata.md belongs to a registered erratum claim and vice versa; each section names every
    claim that links to it, and one of them in the "Audit claim: … — run …" line."""
    sections, registered = _errata_sections(), _erratum_claims()
    assert set(sections) == set(registered.values()), "an anchor in errata.md without a claim, or vice versa"
    for claim_id, anchor in registered.items():
        assert f"`{claim_id}`" in sections[anchor], f"docs/errata.md#{anchor} does not name claim {claim_id}"
    for anchor, text in sections.items():
        audit = re.search(r"Audit claim: `([^`]+)` — run `python -m transfertheory\.verify -k ([^`]+)`", text)
        assert audit and audit.group(1) == audit.group(2), f"docs/errata.md#{anchor} has no 'Audit claim' line"
        assert registered.get(audit.group(1)) == anchor, (anchor, audit.group(1))


_CLAIM_ID = re.compile(r"`((?:faf|merlin|tdr|mtl)\.[A-Za-z0-9.\-]*[A-Za-z0-9])`")


def test_claim_ids_named_in_the_documentation_are_registered():
    """A backticked claim id (`faf.eq13`) in README.md or docs/*.md names a registered claim."""
    import transfertheory.claims.catalog  # noqa: F401  (registers the claims)
    from transfertheory.claims.registry import CLAIMS

    unknown = [
        f"{_display(path)}:{number}: {claim_id}"
        for path in documentation_files()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        for claim_id in _CLAIM_ID.findall(line)
        if claim_id not in CLAIMS
    ]
    assert not unknown, "claim ids not in the registry:\n" + "\n".join(unknown)


SETUP_COMMANDS = [
    "pip install -e . && python -m transfertheory.phase_diagram --noise 0.2",
    'pip install -e ".[test]" && python -m pytest',
]


def test_readme_offers_exactly_the_two_setup_commands():
    """The README's shell blocks are the two set-up commands: install + phase diagram, install + tests."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    shell_blocks = re.findall(r"^```(?:bash|sh|console|shell)\s*\n(.*?)^```", text, flags=re.M | re.S)
    assert [block.strip() for block in shell_blocks] == SETUP_COMMANDS


# --- the collector itself, on a synthetic Markdown file ---------------------------------------------------

SYNTHETIC = """\
# Title

```bash
python -m something --that-would-fail
```

```python
x = 2
```

Some text.

<!-- example: not run (needs a GPU) -->

```python
raise RuntimeError("must not run")
```

```
plain fence, not collected = 1/0
```

- item

  ```python
  y = x * 3
  ```

```python
assert y == 6
z = 1 / (y - 6)
```
"""


def test_collector_finds_only_python_blocks_with_their_lines(tmp_path):
    path = tmp_path / "page.md"
    path.write_text(SYNTHETIC, encoding="utf-8")
    examples = collect_examples(path)
    assert [e.number for e in examples] == [1, 2, 3, 4]
    assert [e.line for e in examples] == [8, 16, 26, 30]
    assert [e.not_run for e in examples] == [None, "needs a GPU", None, None]
    assert examples[2].code == "y = x * 3"  # list-item indentation removed


def test_collector_runs_blocks_in_one_namespace_and_a_failing_block_fails(tmp_path):
    path = tmp_path / "page.md"
    path.write_text(SYNTHETIC, encoding="utf-8")
    namespace = {}
    with pytest.raises(DocExampleError) as failure:
        run_examples(collect_examples(path), namespace)
    message = str(failure.value)
    assert "page.md, example 4 (line 30) failed at line 31: ZeroDivisionError" in message
    assert namespace["y"] == 6  # blocks 1 and 3 ran, in order, in one namespace; block 2 (not run) did not


def test_collector_reports_not_run_blocks_and_passes_a_good_file(tmp_path):
    path = tmp_path / "good.md"
    path.write_text(SYNTHETIC.rsplit("```python\nassert", 1)[0], encoding="utf-8")
    not_run = run_examples(collect_examples(path))
    assert [(e.number, e.not_run) for e in not_run] == [(2, "needs a GPU")]


def test_collector_rejects_an_unclosed_block(tmp_path):
    path = tmp_path / "broken.md"
    path.write_text("text\n\n```python\nx = 1\n", encoding="utf-8")
    with pytest.raises(ValueError, match="opened on line 3 is never closed"):
        collect_examples(path)


def test_a_cli_example_that_exits_nonzero_fails(tmp_path):
    path = tmp_path / "cli.md"
    path.write_text("```python\nimport sys\nsys.exit(2)\n```\n", encoding="utf-8")
    with pytest.raises(DocExampleError, match="example 1 \\(line 2\\) failed at line 3: SystemExit: 2"):
        run_examples(collect_examples(path))
