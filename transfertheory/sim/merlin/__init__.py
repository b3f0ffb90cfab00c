"""MeRLin §5 simulators: gradient-flow training of the quadratic network f(x) = θᵀ(φᵀx)² (docs/merlin.md).

* :mod:`.losses` — empirical target loss, the ridge inner head (MeRLin Eq. 7), MeRLin's validation loss
  and their gradients;
* :mod:`.training` — the regularized objectives as one batched :class:`Objective` and :func:`train`
  (the package's gradient-flow integrator);
* :mod:`.algorithms` — pre-training, head-only and full fine-tuning, target-only, joint training and MeRLin,
  batched over seeds with random restarts (:class:`Problem`, trained together by :func:`solve`);
* :mod:`.experiment` — :func:`run_comparison`, one tidy row per (algorithm, n_t, seed).
"""
from .algorithms import (MERLIN_RIDGE, MERLIN_SPLITS, OBJECTIVE_TOL, Outcome, Problem, feature_usage, finetune_full,
                         finetune_head, joint, joint_problem, merlin, merlin_problem, merlin_restarts, pretrain,
                         random_splits, solve, target_only, target_only_problem)
from .experiment import ALGORITHMS, RECOVERY_LOSS, ROW_KEYS, run_comparison, target_sets
from .losses import (ValidationSplits, empirical_loss_and_grad, features, meta_validation_loss_and_grad, pad_orders,
                     ridge_head, balanced_split_orders, seed_split_orders, split_orders)
from .training import FLOW_SETTINGS, STUDY_TOLERANCES, Objective, Trained, random_init, stack_objectives, train

__all__ = ["features", "empirical_loss_and_grad", "ridge_head", "meta_validation_loss_and_grad", "ValidationSplits",
           "split_orders", "balanced_split_orders", "seed_split_orders", "pad_orders",
           "Objective", "Trained", "train", "random_init", "stack_objectives", "FLOW_SETTINGS", "STUDY_TOLERANCES",
           "OBJECTIVE_TOL", "Outcome", "Problem", "solve", "pretrain", "finetune_head", "finetune_full",
           "target_only", "target_only_problem", "joint", "joint_problem", "merlin", "merlin_problem",
           "random_splits", "feature_usage", "MERLIN_RIDGE", "MERLIN_SPLITS", "merlin_restarts", "ALGORITHMS",
           "RECOVERY_LOSS", "ROW_KEYS", "run_comparison", "target_sets"]
