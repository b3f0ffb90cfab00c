r"""FaF's own training protocol (App. D): full-batch gradient descent at a fixed learning rate for a fixed number
of steps or until the training loss reaches 1e-6, as integrator settings of the package's simulators.

The package's simulators follow gradient flow to its limit (adaptive RKC); the paper approximates that flow by
gradient descent and stops it after its budget, so near the interpolation threshold (γ ≈ 1, n ≈ m) its points are
finite where the flow's limit is not. :func:`paper_gradient_descent` turns the paper's learning rate, steps and
loss threshold into :class:`~.integrator.FlowSettings` of the integrator's Euler scheme at a fixed step — the same
integrator, statuses and convergence record — that a simulator takes as its ``flow`` /
``pretrain_flow``.

Units. FaF Eqs. 4–5 have no ½ in the losses; the package's losses do (L = ½E(f − y)²), so a paper step
θ ← θ − η∇L_FaF is θ ← θ − 2η∇L in the package's loss: package flow time 2η per step (and 2η·steps in all), and
the paper's threshold L_FaF ≤ 1e-6 is L ≤ 5e-7 in the package's loss. A simulator whose flow rescales time
(the ReLU networks of FaF §4 integrate dθ/dt = −m∇L, so that FaF's learning rate 0.01·m is a step of 0.02)
passes its factor as ``time_scale``. FaF App. D.1 (deep linear networks) is ``paper_gradient_descent(1e-3, 10**5)``
(flow time 200 in the package's units); App. D.2 (two-layer ReLU networks of width m) is
``paper_gradient_descent(0.01 * m, 10**5, time_scale=m)`` (a step of 0.02, flow time 2e3).
"""
from __future__ import annotations

from .. import params as P
from .integrator import FlowSettings, count, positive

__all__ = ["paper_gradient_descent", "flow_time"]

_RATE = positive("learning_rate", "the paper's learning rate η")
_STEPS = count("steps", "gradient-descent steps")
_SCALE = positive("time_scale", "the simulator's time rescaling")
#: the package's loss is half the paper's (FaF Eqs. 4–5 have no ½)
LOSS_RATIO = 0.5


def flow_time(learning_rate, steps, time_scale=1.0) -> float:
    """The package's flow time of ``steps`` steps of gradient descent at the paper's ``learning_rate``: 2η·steps
    (the package's losses carry a ½), divided by the simulator's ``time_scale``."""
    return 2.0 * _RATE.scalar(learning_rate) * _STEPS.scalar(steps) / _SCALE.scalar(time_scale)


def paper_gradient_descent(learning_rate, steps, *, loss_tol=1e-6, time_scale=1.0,
                           base: FlowSettings = FlowSettings()) -> FlowSettings:
    """Integrator settings of the paper's protocol: ``steps`` steps of full-batch gradient descent at the paper's
    ``learning_rate`` η (Euler at the fixed step 2η/``time_scale`` in the package's time), stopping early once the
    paper's training loss is ≤ ``loss_tol`` (the package's loss ≤ ``loss_tol``/2; 0: never). ``base`` gives the
    other settings (``gtol``, ``divergence_factor``). An instance ends with status ``max_steps`` after its steps,
    ``loss_tol`` at the threshold, ``diverged`` at an unstable rate; its ``t_final`` is in the package's time
    (:func:`flow_time` of the steps it took)."""
    h = flow_time(learning_rate, 1, time_scale)
    steps = _STEPS.scalar(steps)
    # the budget in time lies beyond the steps' (their sum carries rounding): the steps end the run
    return base.updated(scheme="euler", learning_rate=h, max_steps=steps, max_time=h * steps * (1 + 1e-6),
                        loss_tol=LOSS_RATIO * P.LOSS_TOL.scalar(loss_tol))
