"""The modules renamed after their papers keep their old names for one release, with a DeprecationWarning."""
import importlib
import sys

import pytest

from transfertheory._renamed import RENAMED


@pytest.mark.parametrize("old, new", sorted(RENAMED.items()))
def test_old_name_warns_and_exports_the_same_objects(old, new):
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=f"{old} was renamed {new}"):
        legacy = importlib.import_module(old)
    current = importlib.import_module(new)
    assert legacy.__all__ and all(getattr(legacy, name) is getattr(current, name) for name in current.__all__)


def test_old_submodule_paths_resolve_to_the_new_modules():
    for name in [m for m in sys.modules if m.startswith("transfertheory.sim.quadratic")]:
        sys.modules.pop(name)
    with pytest.warns(DeprecationWarning):
        from transfertheory.sim.quadratic.training import train
    from transfertheory.sim.merlin.training import train as current
    assert train is current
