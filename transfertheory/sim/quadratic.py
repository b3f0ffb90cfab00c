"""Deprecated name of :mod:`transfertheory.sim.merlin` (renamed after its paper; removed in version 0.3)."""
from transfertheory._renamed import alias

_module = alias(__name__, ("algorithms", "experiment", "losses", "training"))
globals().update({name: getattr(_module, name) for name in _module.__all__})
__all__ = list(_module.__all__)
