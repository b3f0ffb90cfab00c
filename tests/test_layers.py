"""The package's layers point one way (docs/architecture.md), checked on the import statements of every module.

backend ← theory ← sim ← sweep ← figures, claims ← command lines (``phase_diagram``, ``verify``,
``figures.__main__``, ``sweep.__main__``); the shared command-line plumbing (``cli_support``)
imports nothing of the package but the backend, the memory guard and the BLAS thread policy (``threads``, itself on
``params``). theory never imports sim; theory and sim never import the sweep
engine; nothing below the command lines imports one; ``backend.py`` is the only module that
imports CuPy; no package module imports the test suite (its strict CuPy stand-in is registered from tests/).
"""
import ast
from pathlib import Path

import pytest

import transfertheory

PACKAGE = Path(transfertheory.__file__).parent
CLIS = ("transfertheory.phase_diagram", "transfertheory.verify", "transfertheory.figures.__main__",
        "transfertheory.sweep.__main__")


def _imports(path):
    """Absolute names of the modules ``path`` imports (relative imports resolved against its package)."""
    module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def _modules(folder):
    return sorted((PACKAGE / folder).rglob("*.py"))


def _offending(path, forbidden):
    return sorted(n for n in _imports(path) if n.startswith(forbidden))


def test_import_parser_resolves_relative_imports():
    names = _imports(PACKAGE / "figures" / "faf_fig2.py")
    assert "transfertheory.figures.stats" in names and "transfertheory.theory.methods" in names
    assert "transfertheory.backend" in _imports(PACKAGE / "sim" / "integrator" / "flow.py")


@pytest.mark.parametrize("path", _modules("theory"), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_theory_imports_no_simulator_and_nothing_above(path):
    assert not _offending(path, ("transfertheory.sim", "transfertheory.sweep", "transfertheory.figures",
                                 "transfertheory.claims", *CLIS))


@pytest.mark.parametrize("path", _modules("sim"), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_simulators_import_no_sweep_figure_claim_or_command_line(path):
    assert not _offending(path, ("transfertheory.sweep", "transfertheory.figures", "transfertheory.claims", *CLIS))


@pytest.mark.parametrize("path", [p for p in _modules("sweep") if p.name != "__main__.py"],
                         ids=lambda p: str(p.relative_to(PACKAGE)))
def test_sweep_engine_imports_no_figure_claim_or_command_line(path):
    assert not _offending(path, ("transfertheory.figures", "transfertheory.claims", *CLIS))


@pytest.mark.parametrize("path", [p for p in _modules("figures") if p.name != "__main__.py"],
                         ids=lambda p: str(p.relative_to(PACKAGE)))
def test_figures_import_no_command_line_and_no_claim(path):
    assert not _offending(path, ("transfertheory.claims", *CLIS))


@pytest.mark.parametrize("name, allowed", [("cli_support.py", {"backend", "_memory", "threads"}),
                                           ("threads.py", {"params", "_validation"})])
def test_shared_command_line_plumbing_imports_only_the_foundation(name, allowed):
    """Every face imports these (verify, the figure writers, the claims registry): they stay at the bottom
    (cli_support also knows the memory guard's refusal, which itself imports only the backend)."""
    package_imports = {n for n in _imports(PACKAGE / name) if n.startswith("transfertheory.")}
    assert {n.split(".")[1] for n in package_imports} <= allowed


def test_the_memory_guard_imports_only_the_backend():
    package_imports = {n for n in _imports(PACKAGE / "_memory.py") if n.startswith("transfertheory.")}
    assert {n.split(".")[1] for n in package_imports} <= {"backend"}


@pytest.mark.parametrize("path", _modules("claims"), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_claims_import_no_command_line_and_no_figure(path):
    """A claim and a figure that share a computation both call it below them (theory/ or sim/)."""
    assert not _offending(path, CLIS + ("transfertheory.figures",))


@pytest.mark.parametrize("package", ["claims", "figures"])
def test_registries_load_one_way_through_their_catalog(package):
    """registry.py holds the records and imports no module that registers; catalog.py imports those modules."""
    own = {n.split(".")[2] for n in _imports(PACKAGE / package / "registry.py") if n.startswith(f"transfertheory.{package}.")}
    assert own <= {"profiles"}


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_only_the_backend_imports_cupy_and_nothing_imports_the_tests(path):
    names = _imports(path)
    if path.name != "backend.py" or path.parent != PACKAGE:
        assert not any(n == "cupy" or n.startswith("cupy.") for n in names)
    assert not any(n.split(".")[0] in ("tests", "strict_backend", "conftest") for n in names)
