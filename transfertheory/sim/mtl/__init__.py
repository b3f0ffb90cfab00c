"""MTL §4: finite-width deep ReLU networks — empirical kernels (:mod:`.network`) and MTL/ANIL training
(:mod:`.training`) against the infinite-width predictions of MTL Lemma 1 (docs/mtl.md)."""
from . import network
from .network import *  # noqa: F401,F403  (the package exports the module's __all__)

__all__ = list(network.__all__)
from .training import METHODS, TEST_HEADS, TaskData, TrainedNetworks, adapted_predictions, train

__all__ += ["METHODS", "TEST_HEADS", "TaskData", "TrainedNetworks", "train", "adapted_predictions"]
from .experiment import MATCHES, REFERENCES, ROW_KEYS, finite_width_study, kernel_predictions

__all__ += ["REFERENCES", "MATCHES", "ROW_KEYS", "kernel_predictions", "finite_width_study"]
