"""Old module names kept for one release after the paper-named layout: each warns once and re-exports the new module.

``transfertheory.theory.ntk_two_layer`` → :mod:`transfertheory.theory.tdr`,
``transfertheory.sim.ntk_two_layer`` → :mod:`transfertheory.sim.tdr`,
``transfertheory.sim.quadratic`` (and its submodules) → :mod:`transfertheory.sim.merlin`.
The aliases are removed in version 0.3 (docs/architecture.md, "Renamed modules").
"""
from __future__ import annotations

import importlib
import sys
import warnings

#: old dotted name → new dotted name
RENAMED = {
    "transfertheory.theory.ntk_two_layer": "transfertheory.theory.tdr",
    "transfertheory.sim.ntk_two_layer": "transfertheory.sim.tdr",
    "transfertheory.sim.quadratic": "transfertheory.sim.merlin",
}


def alias(old_name: str, submodules: tuple[str, ...] = ()):
    """Warn that ``old_name`` was renamed, register its submodules under the old path and return the new module."""
    new_name = RENAMED[old_name]
    warnings.warn(f"{old_name} was renamed {new_name} (named after its paper); the old name is removed in version 0.3",
                  DeprecationWarning, stacklevel=3)
    module = importlib.import_module(new_name)
    for sub in submodules:
        sys.modules[f"{old_name}.{sub}"] = importlib.import_module(f"{new_name}.{sub}")
    return module
