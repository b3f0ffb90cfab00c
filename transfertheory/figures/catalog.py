"""The figure modules that register into :mod:`transfertheory.figures.registry`, imported in one place.

Add a new figure module here (one import); its module calls
:func:`~transfertheory.figures.registry.register` at import time. ``--list`` and ``figures/README.md`` sort the
figures by name.
"""
from . import faf_fig1_3  # noqa: F401  FaF Figs. 1 and 3
from . import faf_fig2  # noqa: F401
from . import faf_fig5  # noqa: F401
from . import faf_fig6  # noqa: F401
from . import faf_fig7  # noqa: F401
from . import faf_finetune_depth  # noqa: F401  θ*(γ, L) of fine-tuning against depth (not in the paper)
from . import tdr_fig  # noqa: F401  TDR §6 by training
from . import faf_fig4  # noqa: F401  FaF Fig. 4 (ReLU student–teacher, by simulation)
from . import merlin_fig  # noqa: F401  MeRLin §5 by training
from . import mtl_fig1  # noqa: F401  MTL Fig. 1 (infinite-width predictors, §5.1 tasks)
