r"""The figures registry: one record per reproducible figure, looked up by name.

A figure module registers its figure with one call at import time::

    register(Figure(name="faf_fig2", title=..., description=..., sources=("FaF Eq. 15",),
                    build=build, profiles={"quick": {...}, "paper": {...}}))

``build(**params, backend=..., progress=...)`` is the module's own builder: it takes one profile's parameters as
keywords — and, for a figure that simulates, the array backend name (``"numpy"`` / ``"cupy"``) and whether to
show progress bars — and returns a :class:`~transfertheory.figures.output.FigureOutput`
(:meth:`Figure.make` calls it). The profiles are the size names of both registries
(:data:`transfertheory.params.PROFILE_NAMES`): ``quick`` (CPU-sized: every FaF figure together in a few minutes
on 2 cores), ``full`` (a figure's own CPU size between the two; its ``quick`` parameters when it gives none) and
``paper`` (the paper's sizes).

Loading (the same for the claims registry): this module holds the record, :func:`register` and the storage, and
imports no figure module; :mod:`transfertheory.figures.catalog` imports every module that registers and offers
the look-ups of the complete registry (``figures()``, ``get_figure()``).
"""
from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Callable, Mapping

from .. import _registry
from ..params import PROFILE_NAMES

__all__ = ["REQUIRED_PROFILES", "Figure", "register", "unregister", "registered"]

#: the profiles every figure states; ``full`` defaults to the ``quick`` parameters
REQUIRED_PROFILES = ("quick", "paper")


@dataclass(frozen=True)
class Figure:
    """A registered figure.

    name: file stem and CLI name (``faf_fig1``); title: one line; description: what it shows (a paragraph);
    sources: the equations / figures it reproduces (``"FaF Eq. 13"``); build: ``(**params, backend, progress) ->
    FigureOutput`` (without ``backend`` and ``progress`` when it does not simulate); profiles: ``{"quick": params,
    "paper": params}`` and optionally ``"full"`` (else the quick parameters); simulates: whether ``build`` runs the
    simulator (then the backend matters); gpu_pays: whether CuPy is faster than NumPy at this figure's sizes
    (measured, docs/benchmarks.md). When the backend is left to the automatic choice, a figure with
    ``gpu_pays=False`` runs on NumPy even where a GPU is usable; a backend named by ``--backend`` or ``TRANSFERTHEORY_BACKEND`` is used as given. paper_sizes: how the ``paper`` profile relates to the sizes the paper states
    (the same, where they differ and why, or that the paper states none); a paper-profile build writes it into
    ``NAME.json`` as ``paper_sizes``. paper_stand_in: why the paper-size gallery may hold a smaller profile of
    this figure (a paper profile the CPU cannot finish in a session) and how the paper-size run is completed; a
    build of another profile into a folder named ``paper`` writes it into ``NAME.json`` as ``stands_in_for_paper``
    and the galleries show it beside that build, which they never call the paper's sizes.
    """

    name: str
    title: str
    description: str
    sources: tuple[str, ...]
    build: Callable[..., Any]
    profiles: Mapping[str, Mapping[str, Any]]
    simulates: bool = True
    gpu_pays: bool = True
    paper_sizes: str = ""
    paper_stand_in: str = ""

    def __post_init__(self):
        missing = [p for p in REQUIRED_PROFILES if p not in self.profiles]
        if missing:
            raise ValueError(f"figure {self.name!r} lacks the profiles {missing}")
        unknown = sorted(set(self.profiles) - set(PROFILE_NAMES))
        if unknown:
            raise ValueError(f"figure {self.name!r}: profiles must be among {PROFILE_NAMES}, got {unknown}")
        if not self.paper_sizes:
            raise ValueError(f"figure {self.name!r} lacks paper_sizes (how its paper profile relates to the paper)")
        given = {"full": self.profiles["quick"], **self.profiles}
        frozen = {p: MappingProxyType(dict(given[p])) for p in PROFILE_NAMES}
        object.__setattr__(self, "profiles", MappingProxyType(frozen))
        object.__setattr__(self, "sources", tuple(self.sources))

    def make(self, profile, backend=None, progress=None):
        """Build the figure at a profile's parameters (``"quick"`` / ``"full"`` / ``"paper"``); a ``FigureOutput``."""
        params = dict(self.profiles[profile])
        if self.simulates:
            params.update(backend=backend, progress=progress)
        return self.build(**params)

    def backend_for(self, backend, named):
        """The backend this figure runs on: ``backend`` (the resolved choice), except NumPy when the choice was
        automatic (``named`` False) and a GPU does not pay at this figure's sizes."""
        return backend if named or self.gpu_pays or not self.simulates else "numpy"

    def labels(self):
        """The metadata a figure's outputs carry: title, description, sources (keywords of
        :func:`~transfertheory.figures.output.write_outputs`)."""
        return dict(title=self.title, description=self.description, sources=self.sources)


_FIGURES: dict[str, Figure] = {}


def register(figure: Figure) -> Figure:
    """Add ``figure`` to the registry (ValueError if another figure has its name); returns it."""
    return _registry.add(_FIGURES, figure.name, figure, "figure")


def unregister(name: str) -> None:
    """Remove the figure called ``name`` (one registered for a while, e.g. by a test; ValueError if unknown)."""
    _registry.remove(_FIGURES, name, "figure")


def registered() -> Mapping[str, Figure]:
    """The figures registered so far, sorted by name (the complete set: ``figures.catalog.figures()``)."""
    return MappingProxyType(dict(sorted(_FIGURES.items())))

