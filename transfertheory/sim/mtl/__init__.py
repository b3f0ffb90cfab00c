"""MTL §4: finite-width deep ReLU networks — empirical kernels (:mod:`.network`) and MTL/ANIL training
(:mod:`.training`) against the infinite-width predictions of MTL Lemma 1 (docs/mtl.md)."""
from . import experiment, network, training
from .experiment import *  # noqa: F401,F403  (the package exports these modules' __all__)
from .network import *  # noqa: F401,F403
from .training import *  # noqa: F401,F403

__all__ = [*network.__all__, *training.__all__, *experiment.__all__]
