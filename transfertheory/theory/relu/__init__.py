r"""Closed forms of FaF §4: two-layer ReLU student–teacher networks in the mean-field scaling (App. C, D.2).

Model (FaF Eqs. 18–20): x ~ N(0, I_d), σ = ReLU, a student f(x) = (1/m) Σᵢ cᵢ σ(wᵢᵀx) with
‖wᵢ‖ = 1, a target teacher f_t*(x) = (1/m*) Σ_{i≤m*} c*ᵢ σ(w*ᵢᵀx) and a source teacher f_s* that
drops a random fraction μ of the target teacher's neurons. FaF's argument: pretraining on f_s*
sparsifies the student's kernel to the source teacher's features; linear transfer then pays the norm of
f_t* outside that kernel's RKHS, ‖P⊥ f_t*‖² (Eq. 21); transfer turns negative where a scratch power law
A n^{−ν} falls below it.

* :mod:`.kernel` — the arc-cosine kernel (FaF Eqs. 152–153), the exact population loss and its
  Euclidean and Riemannian (sphere) gradients;
* :mod:`.projection` — ‖P f*‖² and ‖P⊥ f*‖² (FaF Eqs. 154–159);
* :mod:`.teachers` — the target teacher (Eq. 20) and the ablated source teacher (Eq. 19);
* :mod:`.power_law` — the scratch power-law fit (Fig. 4c) and the negative-transfer boundary (Fig. 4e);
* :mod:`.finite_n` — the boundary at finite n: least-squares transfer risk ‖P⊥ f_t*‖²(n − 1)/(n − m − 1).

The derivations are in docs/relu.md; the training simulator is :mod:`transfertheory.sim.relu_teacher` and
FaF Fig. 4 is the registered figure ``faf_fig4``.
"""
from .kernel import PopulationLossGradients, arccos_kernel, population_loss, population_loss_and_gradients
from .power_law import PowerLawFit, negative_transfer_boundary, power_law_fit
from .finite_n import FiniteNBoundary, finite_n_boundary, least_squares_transfer_risk
from .projection import ProjectionNorms, rkhs_projection_norms
from .teachers import M_STAR, MU, TEACHER_OUTPUTS, AblatedTeacher, ablated_teacher, dropped_count, random_teacher

__all__ = [
    "arccos_kernel",
    "population_loss",
    "population_loss_and_gradients",
    "PopulationLossGradients",
    "rkhs_projection_norms",
    "ProjectionNorms",
    "MU",
    "M_STAR",
    "TEACHER_OUTPUTS",
    "AblatedTeacher",
    "ablated_teacher",
    "dropped_count",
    "random_teacher",
    "power_law_fit",
    "PowerLawFit",
    "negative_transfer_boundary",
    "FiniteNBoundary",
    "finite_n_boundary",
    "least_squares_transfer_risk",
]
