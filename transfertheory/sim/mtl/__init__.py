"""MTL §4: finite-width deep ReLU networks — empirical kernels and MTL/ANIL training (:mod:`.network`) — against
the infinite-width predictions of MTL Lemma 1 (:mod:`.experiment`, docs/mtl.md)."""
from . import experiment, network
from .experiment import *  # noqa: F401,F403  (the package exports these modules' __all__)
from .network import *  # noqa: F401,F403

__all__ = [*network.__all__, *experiment.__all__]
