"""MeRLin §5 simulators: gradient-flow training of the quadratic network f(x) = θᵀ(φᵀx)² (docs/merlin.md).

* :mod:`.losses` — empirical target loss, the ridge inner head (MeRLin Eq. 7), MeRLin's validation loss
  and their gradients;
* :mod:`.algorithms` — the regularized objectives as one batched :class:`Objective` and :func:`train` (the
  package's gradient-flow integrator); pre-training, head-only and full fine-tuning, target-only, joint training
  and MeRLin, batched over seeds with random restarts (:class:`Problem`, trained together by :func:`solve`);
* :mod:`.experiment` — :func:`run_comparison`, one tidy row per (algorithm, n_t, seed), and the figure's
  statistics of those rows.
"""
from . import algorithms, experiment, losses
from .algorithms import *  # noqa: F401,F403  (the package exports these modules' __all__)
from .experiment import *  # noqa: F401,F403
from .losses import *  # noqa: F401,F403

__all__ = [*losses.__all__, *algorithms.__all__, *experiment.__all__]
