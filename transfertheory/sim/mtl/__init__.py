"""MTL §4: finite-width deep ReLU networks — empirical kernels (:mod:`.network`) and MTL/ANIL training
(:mod:`.training`) against the infinite-width predictions of MTL Lemma 1 (docs/mtl.md)."""
from .network import (NETWORKS, WIDTH, Forward, NetworkShape, backpropagate, body_gram, empirical_kernels,
                      forward, init_parameters, random_network_kernels)

__all__ = ["WIDTH", "NETWORKS", "NetworkShape", "Forward", "init_parameters", "forward", "backpropagate", "body_gram",
           "empirical_kernels", "random_network_kernels"]
from .training import METHODS, TEST_HEADS, TaskData, TrainedNetworks, adapted_predictions, train

__all__ += ["METHODS", "TEST_HEADS", "TaskData", "TrainedNetworks", "train", "adapted_predictions"]
from .experiment import MATCHES, REFERENCES, ROW_KEYS, finite_width_study, kernel_predictions

__all__ += ["REFERENCES", "MATCHES", "ROW_KEYS", "kernel_predictions", "finite_width_study"]
