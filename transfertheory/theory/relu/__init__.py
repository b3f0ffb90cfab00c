r"""Closed forms of FaF §4: two-layer ReLU student–teacher networks in the mean-field scaling (App. C, D.2).

Model (FaF Eqs. 18–20): x ~ N(0, I_d), σ = ReLU, a student f(x) = (1/m) Σᵢ cᵢ σ(wᵢᵀx) with
‖wᵢ‖ = 1, a target teacher f_t*(x) = (1/m*) Σ_{i≤m*} c*ᵢ σ(w*ᵢᵀx) and a source teacher f_s* that
drops a random fraction μ of the target teacher's neurons. FaF's argument: pretraining on f_s*
sparsifies the student's kernel to the source teacher's features; linear transfer then pays the norm of
f_t* outside that kernel's RKHS, ‖P⊥ f_t*‖² (Eq. 21); transfer turns negative where a scratch power law
A n^{−ν} falls below it.

* :mod:`.kernel` — the arc-cosine kernel (FaF Eqs. 152–153), the exact population loss and its
  Euclidean and Riemannian (sphere) gradients, and ‖P f*‖², ‖P⊥ f*‖² (FaF Eqs. 154–159);
* :mod:`.teachers` — the target teacher (Eq. 20) and the ablated source teacher (Eq. 19);
* :mod:`.power_law` — the scratch power-law fit (Fig. 4c) and the negative-transfer boundary (Fig. 4e), also at
  finite n: least-squares transfer risk ‖P⊥ f_t*‖²(n − 1)/(n − m − 1).

The derivations are in docs/relu.md; the training simulator is :mod:`transfertheory.sim.relu_teacher` and
FaF Fig. 4 is the registered figure ``faf_fig4``.
"""
from . import kernel, power_law, teachers
from .kernel import *  # noqa: F401,F403  (the public API: the three modules' __all__)
from .power_law import *  # noqa: F401,F403
from .teachers import *  # noqa: F401,F403

__all__ = [*kernel.__all__, *teachers.__all__, *power_law.__all__]
