r"""Finite-size expectations of the transfer limits under anisotropic inputs, by Monte Carlo (docs/anisotropic.md).

Below n = d the scratch and fine-tuning risks under a general Σ have no closed form at finite size (their
deterministic equivalents in :mod:`.anisotropic` are asymptotic). What a simulation at finite (n, d) must be
compared with is the expectation of the limit points themselves — X⁺y (scratch), the one-feature regression
bβ_s (linear transfer) and X⁺y + c(I − P)β_s (fine-tuning, :func:`~.fine_tuning.fine_tune_limit`) — which
:func:`limit_expectations` averages over Gaussian designs x = z·√λ, paired on the same draws, as
:func:`~.fine_tuning.fine_tune_flow_expectation` does at Σ = I.
"""
from __future__ import annotations

import numpy as np

from .. import params as P
from .._memory import FLOAT_BYTES, check_memory
from .fine_tuning import _gaussian_designs, fine_tune_limit
from .scratch import min_norm_solution
from .spectra import check_spectrum, check_teacher

__all__ = ["limit_expectations"]

_DRAWS = P.DRAWS.with_range(low=2)


def limit_expectations(lam, beta_s, beta_t, n, sigma, draws=2000, seed=0, depth=2):
    r"""Paired Monte Carlo of the limits at size (n, d = len(λ)) for the targets ``beta_t`` (Θ, d).

    Returns ``{"scratch": (mean, se), "linear": …, "finetune": …, "T_linear": …, "T_finetune": …}``, each a pair of
    arrays over Θ: the Σ-norm risks E‖β̂ − β_t‖²_Σ of X⁺y, of bβ_s (b = zᵀy/‖z‖², z = Xβ_s) and of the fine-tuning
    limit with β_pre = β_s, and the paired transferabilities E[R_sc − R]. The designs come from
    ``SeedSequence(seed, (n, d))``, the same for every θ. n ≥ 3 (the one-feature risk needs E‖z‖⁻² < ∞).
    """
    lam = check_spectrum(lam, name="lam")
    bs, bt = check_teacher(beta_s, lam, "beta_s"), np.atleast_2d(check_teacher(beta_t, lam, "beta_t"))
    n, s, draws = P.N.with_range(low=3).scalar(n), P.SIGMA.scalar(sigma), _DRAWS.scalar(draws)
    depth, d = P.DEPTH.scalar(depth), lam.size
    check_memory(FLOAT_BYTES * (8 + len(bt)) * max(4_000_000, n * d), what="limit_expectations",
                 params={"n": n, "d": d, "len(beta_t)": len(bt)})
    samples = {k: [] for k in ("scratch", "linear", "finetune")}
    for X, y in _gaussian_designs(seed, n, d, draws, bt, s, scale=np.sqrt(lam)):  # y: (m, Θ, n)
        z = X @ bs  # (m, 1, n): one z per design
        b = (z * y).sum(-1) / (z * z).sum(-1)
        estimates = {"scratch": min_norm_solution(X, y), "linear": b[..., None] * bs,
                     "finetune": fine_tune_limit(X, y, bs, depth)}
        for key, beta_hat in estimates.items():
            samples[key].append(((beta_hat - bt) ** 2 * lam).sum(-1))
    risks = {k: np.concatenate(v) for k, v in samples.items()}
    risks["T_linear"] = risks["scratch"] - risks["linear"]
    risks["T_finetune"] = risks["scratch"] - risks["finetune"]
    return {k: (v.mean(axis=0), v.std(axis=0, ddof=1) / np.sqrt(draws)) for k, v in risks.items()}
