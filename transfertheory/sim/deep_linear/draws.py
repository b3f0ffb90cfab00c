"""The draws of the FaF §3 experiment: the task vectors and the target data sets, each from its own spawn key of
the run's seed (:func:`transfertheory.sim.seeding.generator`), so that other implementations (benchmarks, the
anisotropic claims) reproduce the tasks and data of
:func:`~transfertheory.sim.deep_linear.experiment.run_transfer_experiment` exactly."""
from __future__ import annotations

import numpy as np

from ..._validation import root_seed
from ...theory.spectra import sigma_norm, teacher_pair
from ..seeding import generator

__all__ = ["task_vectors", "target_draw"]


def task_vectors(d: int, thetas, seed, spectrum=None, teacher=None):
    """Unit β_s, unit ν ⊥ β_s and β_t(θ) = cos θ β_s + sin θ ν (Θ, d), drawn from spawn key (0,) of ``seed``.

    The draw :func:`run_transfer_experiment` uses; public so that other implementations (benchmarks)
    can reproduce the same tasks. With a ``spectrum`` (eigenvalues of a diagonal Σ) the same draw is
    normalised and orthogonalised in the Σ inner product; a ``teacher`` family
    (:func:`~transfertheory.theory.spectra.teacher_pair`) replaces the draw (docs/anisotropic.md).
    """
    if teacher is not None:
        return teacher_pair(teacher, np.ones(d) if spectrum is None else spectrum, thetas)
    gen = generator(root_seed(seed), 0)
    beta_s = gen.standard_normal(d)
    nu = gen.standard_normal(d)
    if spectrum is not None:
        beta_s /= sigma_norm(beta_s, spectrum)
        nu -= np.sum(spectrum * nu * beta_s) * beta_s
        nu /= sigma_norm(nu, spectrum)
    else:
        beta_s /= np.linalg.norm(beta_s)
        nu -= (nu @ beta_s) * beta_s
        nu /= np.linalg.norm(nu)
    return beta_s, nu, np.cos(thetas)[:, None] * beta_s + np.sin(thetas)[:, None] * nu


def target_draw(d: int, n: int, beta_t, sigma: float, seed, gamma_index: int, draw: int, spectrum=None):
    """(X, Y) of the target draw (γ index, draw) of ``seed``: spawn key (2, γ index, draw).

    X (n, d) first, then ε (n,); Y = Xβ_tᵀ + ε for every row of ``beta_t`` (Θ, d), shape (n, Θ). With a
    ``spectrum`` λ (d,) the rows are x = z·√λ for the same draws z (x ~ N(0, diag λ)).
    """
    gen = generator(root_seed(seed), 2, gamma_index, draw)
    X = gen.standard_normal((n, d))
    if spectrum is not None:
        X = X * np.sqrt(spectrum)
    eps = sigma * gen.standard_normal(n)
    return X, X @ beta_t.T + eps[:, None]
