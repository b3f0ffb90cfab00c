"""The one rule of the package's registries (simulators, claims, figures): a name names one record.

:func:`add` puts a record under its name (registering the same record again is harmless; another record under a
taken name is a ValueError); :func:`remove` takes it out (ValueError for an unknown name). Each registry keeps its
own storage (docs/architecture.md, "The registries").
"""
from __future__ import annotations

from typing import Any, MutableMapping

__all__ = ["add", "remove"]


def add(storage: MutableMapping[str, Any], name: str, record, what: str):
    """Store ``record`` under ``name`` in ``storage`` and return it; ``what`` names the kind in the error."""
    known = storage.get(name)
    if known is not None and known is not record:
        raise ValueError(f"a {what} named {name!r} is already registered")
    storage[name] = record
    return record


def remove(storage: MutableMapping[str, Any], name: str, what: str) -> None:
    """Take the record called ``name`` out of ``storage`` (ValueError naming ``what`` if there is none)."""
    if storage.pop(name, None) is None:
        raise ValueError(f"no {what} named {name!r} is registered")
