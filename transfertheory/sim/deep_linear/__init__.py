r"""Gradient-flow simulator of transfer learning in deep linear networks (FaF §3).

Model: f(x) = xᵀW₁W₂⋯W_L with W_l ∈ ℝ^{d×d} (l < L), W_L ∈ ℝ^d, end-to-end
vector β = W₁⋯W_L, x ~ N(0, I_d). Pretraining runs gradient flow on the
population loss ½‖β − β_s‖² (FaF Eq. 4); the target task has n = γd samples
and loss (1/2n)‖y − Xβ‖² (Eq. 5). Compared methods:

* ``scratch`` — gradient flow from W_l(0) = αW̄_l on the target (Thm 3.5/3.6);
* ``linear`` — frozen pretrained features Φ = XW₁⋯W_{L−1}, last layer solved
  exactly (minimum-norm least squares, or ridge with the (1/2n, λ/2)
  normalization of Eq. 14), or by gradient flow on W_L (Thm 3.7/3.8);
* ``finetune`` — gradient flow on all layers from the pretrained weights
  (Thm 3.9).

Modules, by responsibility:

* :mod:`.network` — the packed batch of networks, the rank-one gradient
  chains (FaF Eq. 39), the conserved imbalance (Eq. 35), initializations;
* :mod:`.losses` — source and target losses, the data-eigenbasis rotation;
* :mod:`.stages` — :class:`LowRankStages`, the factored RKC stage kernel;
* :mod:`.training` — :func:`train` and :func:`pretrain`;
* :mod:`.transfer` — the exact linear-transfer solve on pretrained features;
* :mod:`.experiment` — :func:`run_transfer_experiment`, the whole pipeline.

Cost per gradient evaluation is O(L·d²) per instance; the data enter only
through Σ̂ = XᵀX/n and ĉ = Xᵀy/n; the target flows run in the eigenbasis of
Σ̂ (an exact change of variables) and the stages keep the rank-one gradients
factored, so a stage costs two d×d matrix–vector products per layer. Each
instance's result is independent of the rest of its batch, bit for bit.
"""
from . import draws, losses, network, stages, transfer
from .draws import *  # noqa: F401,F403  (the package exports these modules' __all__)
from .experiment import COLUMNS, LINEAR_RISK_ALLOWANCE, METHODS, ROW_KEYS, run_transfer_experiment
from .losses import *  # noqa: F401,F403
from .network import *  # noqa: F401,F403
from .stages import *  # noqa: F401,F403
from .training import PretrainResult, pretrain, train
from .transfer import *  # noqa: F401,F403

__all__ = [*network.__all__, *losses.__all__, *stages.__all__, "train", "PretrainResult", "pretrain",
           *transfer.__all__, "run_transfer_experiment", *draws.__all__, "METHODS", "ROW_KEYS", "COLUMNS",
           "LINEAR_RISK_ALLOWANCE"]
