"""MTL §4: finite-width deep ReLU networks — empirical kernels (:mod:`.network`) and MTL/ANIL training
(:mod:`.training`) against the infinite-width predictions of MTL Lemma 1 (docs/mtl.md)."""
from .network import (WIDTH, Forward, NetworkShape, backpropagate, body_gram, empirical_kernels, forward,
                      init_parameters, random_network_kernels)

__all__ = ["WIDTH", "NetworkShape", "Forward", "init_parameters", "forward", "backpropagate", "body_gram",
           "empirical_kernels", "random_network_kernels"]
