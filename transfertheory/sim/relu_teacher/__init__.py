r"""FaF §4 ReLU student–teacher simulator: pretraining, target training and the transfer experiment.

Model (FaF Eqs. 18–20): a mean-field two-layer network f(x) = (1/m) Σᵢ cᵢ σ(wᵢᵀx), σ = ReLU, hidden rows
on the unit sphere, trained against teachers f*(x) = (1/m*) Σⱼ c*ⱼ σ(w*ⱼᵀx) with x ~ N(0, I_d). The
source task is learned on the exact population loss, the target task on n noiseless samples.

* :mod:`.network` — the network, FaF's initialization, the gradient flow on the product of spheres
  (package integrator, time rescaled by m, FaF's stopping rule), features, kernels, samples;
* :mod:`.training` — source pretraining on the exact population loss; scratch training, fine-tuning (empirical
  loss) and linear transfer;
* :mod:`.experiment` — :func:`run_transfer_experiment`, the tidy table of FaF §4's ablated transfer;
* :mod:`.summary` — FaF Fig. 4's statistics of that table (:func:`.summary.summarize`): mean risks,
  transferability, the power law, the predicted boundaries and the simulated sign change with its teacher-clustered
  bootstrap interval (imported from the module: it is not re-exported here).

docs/relu.md documents the model, the derivations and what is measured.
"""
from . import experiment, training
from .experiment import *  # noqa: F401,F403  (the package exports these modules' __all__)
from .network import (INIT_OUTPUT_SCALE, FlowReport, feature_kernel, features, kernel_distance, network_output,
                      paper_init, sphere_flow, target_norm_sq, target_variance, teacher_samples)
from .training import *  # noqa: F401,F403

__all__ = ["INIT_OUTPUT_SCALE", "FlowReport", "feature_kernel", "features", "kernel_distance", "network_output",
           "paper_init", "sphere_flow", "target_norm_sq", "target_variance", "teacher_samples",
           *training.__all__, *experiment.__all__]
