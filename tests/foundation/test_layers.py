"""The package's layers point one way (docs/architecture.md, "Layers"): import-linter's contracts in setup.cfg.

backend ← theory ← sim ← sweep ← claims, figures ← command lines; no module imports a command line, a registry
none of the modules that register, CuPy only the backend, the test suite none.
"""
from pathlib import Path

import transfertheory
from importlinter.cli import lint_imports

ROOT = Path(transfertheory.__file__).parents[1]


def test_the_import_contracts_of_setup_cfg_are_kept(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    code = lint_imports(config_filename=str(ROOT / "setup.cfg"), no_cache=True, no_logo=True)
    assert code == 0, capsys.readouterr().out
