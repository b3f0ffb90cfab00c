"""The complete figures registry: every figure module imported in one place, and the look-ups over them.

Add a new figure module here (one import); its module calls
:func:`~transfertheory.figures.registry.register` at import time. ``--list`` and ``figures/README.md`` sort the
figures by name. The registry module imports no figure module, so the imports run one way: catalog → figure
modules → registry (the claims registry loads the same way, through ``claims/catalog.py``).
"""
from typing import Mapping

from . import faf_fig1_3  # noqa: F401  FaF Figs. 1, 3 and 6
from . import faf_fig2  # noqa: F401
from . import faf_fig5  # noqa: F401
from . import faf_fig7  # noqa: F401
from . import faf_finetune_depth  # noqa: F401  θ*(γ, L) of fine-tuning against depth (not in the paper)
from . import faf_aniso  # noqa: F401  transfer with anisotropic inputs (not in the paper)
from . import tdr_fig  # noqa: F401  TDR §6 by training
from . import faf_fig4  # noqa: F401  FaF Fig. 4 (ReLU student–teacher, by simulation)
from . import merlin_fig  # noqa: F401  MeRLin §5 by training
from . import mtl_fig1  # noqa: F401  MTL Fig. 1 (infinite-width predictors, §5.1 tasks)

from .registry import Figure, registered

__all__ = ["figures", "get_figure"]


def figures() -> Mapping[str, Figure]:
    """Every registered figure, sorted by name."""
    return registered()


def get_figure(name: str) -> Figure:
    """The figure called ``name``; ValueError listing the known names otherwise."""
    known = figures()
    if name not in known:
        raise ValueError(f"figure must be one of {tuple(known)}, got {name!r}")
    return known[name]
