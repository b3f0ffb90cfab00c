r"""The figures registry: one record per reproducible figure, looked up by name.

A figure module registers its figure with one call at import time::

    register(Figure(name="faf_fig2", title=..., description=..., sources=("FaF Eq. 15",),
                    build=build, profiles={"quick": {...}, "paper": {...}}))

``build(**params, backend=..., progress=...)`` is the module's own builder: it takes one profile's parameters as
keywords — and, for a figure that simulates, the array backend name (``"numpy"`` / ``"cupy"``) and whether to
show progress bars — and returns a :class:`~transfertheory.figures.output.FigureOutput`
(:meth:`Figure.make` calls it). The profiles are the sizes the registry CLI offers:
``quick`` (CPU-sized: every FaF figure together in a few minutes on 2 cores) and ``paper`` (the paper's sizes).

The modules that register are imported in one place, :mod:`transfertheory.figures.catalog`; :func:`figures` and
:func:`get_figure` import it on first use, so this module imports no figure module and there is no import cycle.
"""
from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Callable, Mapping

__all__ = ["PROFILES", "Figure", "register", "figures", "get_figure"]

PROFILES = ("quick", "paper")


@dataclass(frozen=True)
class Figure:
    """A registered figure.

    name: file stem and CLI name (``faf_fig1``); title: one line; description: what it shows (a paragraph);
    sources: the equations / figures it reproduces (``"FaF Eq. 13"``); build: ``(**params, backend, progress) ->
    FigureOutput`` (without ``backend`` and ``progress`` when it does not simulate); profiles: ``{"quick": params, "paper": params}``; simulates: whether ``build`` runs the
    simulator (then the backend matters); extra_suffixes: every ``NAME{suffix}.csv`` the figure can write.
    """

    name: str
    title: str
    description: str
    sources: tuple[str, ...]
    build: Callable[..., Any]
    profiles: Mapping[str, Mapping[str, Any]]
    simulates: bool = True
    extra_suffixes: tuple[str, ...] = ()

    def __post_init__(self):
        missing = [p for p in PROFILES if p not in self.profiles]
        if missing:
            raise ValueError(f"figure {self.name!r} lacks the profiles {missing}")
        frozen = {p: MappingProxyType(dict(v)) for p, v in self.profiles.items()}
        object.__setattr__(self, "profiles", MappingProxyType(frozen))
        object.__setattr__(self, "sources", tuple(self.sources))

    def make(self, profile, backend=None, progress=None):
        """Build the figure at a profile's parameters (``"quick"`` / ``"paper"``); a ``FigureOutput``."""
        params = dict(self.profiles[profile])
        if self.simulates:
            params.update(backend=backend, progress=progress)
        return self.build(**params)

    def labels(self):
        """The metadata a figure's outputs carry: title, description, sources, extra CSV suffixes (keywords of
        :func:`~transfertheory.figures.output.write_outputs`)."""
        return dict(title=self.title, description=self.description, sources=self.sources,
                    extra_suffixes=self.extra_suffixes)


_FIGURES: dict[str, Figure] = {}


def register(figure: Figure) -> Figure:
    """Add ``figure`` to the registry (ValueError if another figure has its name); returns it."""
    known = _FIGURES.get(figure.name)
    if known is not None and known is not figure:
        raise ValueError(f"a figure named {figure.name!r} is already registered")
    _FIGURES[figure.name] = figure
    return figure


def figures() -> Mapping[str, Figure]:
    """Every registered figure, sorted by name (imports the catalog on first use)."""
    from . import catalog  # noqa: F401  (registers the figures)

    return MappingProxyType(dict(sorted(_FIGURES.items())))


def get_figure(name: str) -> Figure:
    """The figure called ``name``; ValueError listing the known names otherwise."""
    known = figures()
    if name not in known:
        raise ValueError(f"figure must be one of {tuple(known)}, got {name!r}")
    return known[name]
