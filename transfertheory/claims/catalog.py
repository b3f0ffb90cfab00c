"""Every module that registers claims, in the papers' order (a new module adds one line here)."""
from . import faf_distances  # noqa: F401  FaF §2.1: Thm 2.2, Eqs. 25–34, Fig. 5
from . import faf_linear  # noqa: F401  FaF §3: Eqs. 10–17 and their finite-size versions, Thm 3.8 at finite n
from . import faf_linear_sim  # noqa: F401  FaF §3 against the gradient-flow simulator: Lemma 3.3, Thms 3.4–3.9
from . import faf_relu  # noqa: F401  FaF §4: arc-cosine kernel, projections (Eqs. 152–159), population loss, Fig. 4d
from . import faf_relu_sim  # noqa: F401  FaF §4 against the ReLU simulator: pretraining and kernel alignment, P⊥ vs μ, Eq. 21
from . import merlin  # noqa: F401  MeRLin §5, App. B: quadratic network, Lemmas 1 and 4, Thms 1–2 closed forms
from . import tdr  # noqa: F401  TDR §6: H∞ Gram matrices, transformed labels, Thms 1–2 (NTK regime, and by training)
from . import mtl  # noqa: F401  MTL §4, App. B: deep ReLU NNGP/NTK, MTL and ANIL kernels (Lemmas 1, 3–5)
from . import merlin_sim  # noqa: F401  MeRLin §5 by training: Lemma 4, Thm 1 (fine-tuning, joint), Thm 2
from . import mtl_sim  # noqa: F401  MTL §4 against random and trained finite-width networks (sim.mtl)
from . import faf_aniso  # noqa: F401  beyond FaF §3: anisotropic inputs (exact, deterministic equivalents, simulator)
