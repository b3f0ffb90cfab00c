r"""One immutable record per transfer method of FaF §3: its simulator, its formulas, its validity.

Model (FaF §3.1): x ~ N(0, I_d); unit source and target vectors with
β_sᵀβ_t = cos θ; labels y = β_tᵀx + ε, ε ~ N(0, σ²); n = γd target samples;
an L-layer linear network pretrained on the source (β_s) and then trained on the
target by gradient flow in one of four ways:

========  =======================================  ===============  ==========  ======
name      what is trained on the target            risk (n, d → ∞)  figure      min n
========  =======================================  ===============  ==========  ======
scratch   every layer, from a tiny initialization  FaF Eq. 10       —           1
linear    the last layer, on the frozen features   FaF Eq. 12       FaF Fig. 1  3
ridge     the last layer with an ℓ₂ penalty λ      FaF Eq. 15       FaF Fig. 2  3
finetune  every layer, from the pretrained ones    FaF Eq. 16       FaF Fig. 3  1
========  =======================================  ===============  ==========  ======

The risk is R = ‖β̂ − β_t‖² (label noise excluded), the transferability
T = E[R_scratch − R_method] (T > 0: transfer helps; T ≡ 0 for scratch).

Each :class:`TransferMethod` gives the same quantities in four flavours:

* ``paper_*`` — the paper's n, d → ∞ formula;
* ``paper_*_finite`` — the exact finite-size expectation of the paper's limit
  point (derived in docs/linear.md);
* ``flow_*`` — the n, d → ∞ value for what gradient flow actually converges to;
* ``flow_*_finite`` — its finite-size expectation, ``(mean, se)``: what a
  simulation must be compared with.

The paper and the flow agree for scratch, linear and ridge transfer. For
fine-tuning they differ when σ > 0: the paper's limit (FaF Eq. 142) carries the
pretrained component over unchanged, gradient flow rescales it by c ≠ 1
(docs/errata.md, :mod:`.fine_tuning`); its finite-size expectation has no closed
form and is a Monte Carlo average, whose standard error is ``se``.

In the simulator (:func:`transfertheory.sim.run_transfer_experiment`) ridge
transfer is its ``"linear"`` method with ``ridge=(λ,)``: see
:attr:`TransferMethod.simulator` and :attr:`TransferMethod.takes_lambda`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Callable, Mapping

import numpy as np

from .. import params as P
from .._validation import root_seed, scalar_or_array
from . import fine_tuning as ft
from . import linear as lin
from ._closed_form import Rule, closed_form
from .scratch import scratch_risk, scratch_risk_finite

__all__ = [
    "TransferMethod",
    "Formulas",
    "METHODS",
    "TRANSFER_METHODS",
    "get_method",
    "reference_draws",
    "lam_rule",
    "REFERENCE_DRAWS",
    "MIN_REFERENCE_DRAWS",
]

#: Monte Carlo draws of a finite-size flow expectation up to n·d = 64² (its SE is then ~1/10 of a 20-draw
#: simulated point's)
REFERENCE_DRAWS = 4000
#: the fewest draws :func:`reference_draws` chooses: it bounds the reference's SE at the papers' sizes, where a draw
#: costs most (the CPU time of a reference: docs/benchmarks.md, "Claims")
MIN_REFERENCE_DRAWS = 500


def reference_draws(n, d):
    """Default Monte Carlo draws at size (n, d): :data:`REFERENCE_DRAWS` up to n·d = 64², then fewer in proportion
    to n·d (the cost of one draw), but at least :data:`MIN_REFERENCE_DRAWS`."""
    n, d = P.N.scalar(n), P.D.scalar(d)
    return int(np.clip(REFERENCE_DRAWS * 64**2 / (n * d), MIN_REFERENCE_DRAWS, REFERENCE_DRAWS))


def lam_rule(record):
    """The :class:`~._closed_form.Rule` of λ where the argument named ``record`` gives the transfer method (a name or
    a :class:`TransferMethod`): :meth:`TransferMethod.check_lam` of its record."""
    return Rule(lambda value, name, arguments: get_method(arguments[record]).check_lam(value))


#: the arguments of an n, d → ∞ form of a record (``self``) and of a finite-size one (n ≥ the record's min_n)
_ASYMPTOTIC = dict(gamma=P.GAMMA, theta=P.THETA, sigma=P.SIGMA, lam=lam_rule("self"))
_FINITE = dict(n=Rule(lambda value, name, arguments: P.N.with_range(low=arguments["self"].min_n).check(value, name)),
               d=P.D, theta=P.THETA, sigma=P.SIGMA, lam=lam_rule("self"))


@dataclass(frozen=True)
class Formulas:
    """The formulas behind a :class:`TransferMethod`, called with validated float arrays.

    ``paper_*(gamma, theta, sigma, lam)`` and ``paper_*_finite(n, d, theta, sigma, lam)`` return arrays;
    ``flow_*(gamma, theta, sigma, lam, depth)`` too, ``None`` meaning "the same as ``paper_*``";
    ``flow_finite(n, d, theta, sigma, depth, draws, seed)`` (scalars but θ) returns
    ``((risk_mean, risk_se), (T_mean, T_se))``, ``None`` meaning "exactly ``paper_*_finite``, se = 0".
    """

    paper_risk: Callable
    paper_transferability: Callable
    paper_risk_finite: Callable
    paper_transferability_finite: Callable
    flow_risk: Callable | None = None
    flow_transferability: Callable | None = None
    flow_finite: Callable | None = None


@dataclass(frozen=True)
class TransferMethod:
    """A transfer method of FaF §3: labels, simulator call, formulas and validity (see the module docstring).

    All formula methods validate their input (ValueError naming the parameter and its range), broadcast over
    their arguments and return a float for scalar input. ``lam`` other than 0 is an error unless
    :attr:`takes_lambda`; ``n`` below :attr:`min_n` is an error in the finite forms. The closed forms among them
    take ``validate=False`` for arguments their caller has validated (:func:`~._closed_form.closed_form`).
    """

    name: str  #: "scratch" | "linear" | "ridge" | "finetune"
    label: str  #: human-readable, e.g. "linear transfer"
    figure: str | None  #: the paper's figure of its transferability, e.g. "FaF Fig. 1"
    source: str  #: the paper's equation of its n, d → ∞ risk, e.g. "FaF Eq. 12"
    simulator: str  #: the method name of ``run_transfer_experiment``: "scratch" | "linear" | "finetune"
    takes_lambda: bool  #: True for ridge only (passed to the simulator as ``ridge=(λ,)``)
    min_n: int  #: smallest n with a finite exact expected risk (3 when the risk has E‖z‖⁻² = 1/(n − 2))
    erratum: str | None  #: anchor in docs/errata.md where the paper's formula is not what training does
    formulas: Formulas = field(repr=False, compare=False)

    # ------------------------------------------------------------------ validation

    @property
    def flow_is_paper(self) -> bool:
        """True when gradient flow converges to the paper's limit point (every flavour pair coincides)."""
        return self.formulas.flow_finite is None

    def check_lam(self, lam):
        """``lam`` validated ([0, inf)) and 0 unless :attr:`takes_lambda`; a float array."""
        lm = P.LAM.check(lam)
        if not self.takes_lambda and np.any(lm != 0):
            raise ValueError(f"lam must be 0 for method {self.name!r} (only 'ridge' takes a ridge strength), "
                             f"got {lm[lm != 0].flat[0]:g}")
        return lm

    def _flow(self, flow, paper, gamma, theta, sigma, lam, depth):
        """The n, d → ∞ ``flow`` formula of an L = ``depth`` network (None: the ``paper`` one, which the flow
        reaches), broadcast to all inputs."""
        value = paper(gamma, theta, sigma, lam) if flow is None else flow(gamma, theta, sigma, lam, depth)
        return _full(value, gamma, theta, sigma, lam)

    # ------------------------------------------------------------------ risks

    @closed_form(**_ASYMPTOTIC)
    def paper_risk(self, gamma, theta, sigma, lam=0.0):
        """The paper's n, d → ∞ expected risk (:attr:`source`)."""
        return _full(self.formulas.paper_risk(gamma, theta, sigma, lam), gamma, theta, sigma, lam)

    @closed_form(**_FINITE)
    def paper_risk_finite(self, n, d, theta, sigma, lam=0.0):
        """Exact finite-size expected risk of the paper's limit point (fine-tuning: the c = 1 formula)."""
        return _full(self.formulas.paper_risk_finite(n, d, theta, sigma, lam), n, d, theta, sigma, lam)

    @closed_form(**_ASYMPTOTIC, depth=P.DEPTH.scalar)
    def flow_risk(self, gamma, theta, sigma, lam=0.0, *, depth=2):
        """n, d → ∞ expected risk of the gradient-flow limit of an L = ``depth`` network.

        Equal to :meth:`paper_risk` except for fine-tuning, whose carried-over component is rescaled by c.
        """
        return self._flow(self.formulas.flow_risk, self.formulas.paper_risk, gamma, theta, sigma, lam, depth)

    def flow_risk_finite(self, n, d, theta, sigma, lam=0.0, *, draws=None, seed=0, depth=2):
        """Finite-size expected risk of the gradient-flow limit: ``(mean, se)``.

        Exact closed form with se = 0, except for fine-tuning below n = d: a Monte
        Carlo over ``draws`` designs (default :func:`reference_draws`) with
        generator ``seed``; n, d and σ must then be scalars (θ may be an array).
        """
        return self._flow_finite(n, d, theta, sigma, lam, draws, seed, depth)[0]

    # ------------------------------------------------------------------ transferabilities

    @closed_form(**_ASYMPTOTIC)
    def paper_transferability(self, gamma, theta, sigma, lam=0.0):
        """The paper's n, d → ∞ transferability E[R_scratch − R_method]."""
        return _full(self.formulas.paper_transferability(gamma, theta, sigma, lam), gamma, theta, sigma, lam)

    @closed_form(**_FINITE)
    def paper_transferability_finite(self, n, d, theta, sigma, lam=0.0):
        """Exact finite-size transferability of the paper's limit point."""
        return _full(self.formulas.paper_transferability_finite(n, d, theta, sigma, lam), n, d, theta, sigma, lam)

    @closed_form(**_ASYMPTOTIC, depth=P.DEPTH.scalar)
    def flow_transferability(self, gamma, theta, sigma, lam=0.0, *, depth=2):
        """n, d → ∞ transferability of the gradient-flow limit (= :meth:`paper_transferability` except for
        fine-tuning)."""
        return self._flow(self.formulas.flow_transferability, self.formulas.paper_transferability, gamma, theta, sigma,
                          lam, depth)

    def flow_transferability_finite(self, n, d, theta, sigma, lam=0.0, *, draws=None, seed=0, depth=2):
        """Finite-size transferability of the gradient-flow limit: ``(mean, se)``, as :meth:`flow_risk_finite`.

        The fine-tuning Monte Carlo is paired: R_scratch and R_ft of the same draw.
        """
        return self._flow_finite(n, d, theta, sigma, lam, draws, seed, depth)[1]

    def _flow_finite(self, n, d, theta, sigma, lam, draws, seed, depth):
        """((risk mean, se), (T mean, se)) of the gradient-flow limit at size (n, d)."""
        depth, seed = P.DEPTH.scalar(depth), root_seed(seed)
        if self.formulas.flow_finite is None:
            exact = (self.paper_risk_finite(n, d, theta, sigma, lam),
                     self.paper_transferability_finite(n, d, theta, sigma, lam))
            return tuple((value, scalar_or_array(_full(0.0, value), value)) for value in exact)
        self.check_lam(lam)
        n, d, sigma = P.N.with_range(low=self.min_n).scalar(n), P.D.scalar(d), P.SIGMA.scalar(sigma)
        draws = reference_draws(n, d) if draws is None else draws
        estimates = self.formulas.flow_finite(n, d, P.THETA.check(theta), sigma, depth, draws, seed)
        return tuple(tuple(scalar_or_array(_full(v, theta), theta) for v in pair) for pair in estimates)


def _full(result, *inputs):
    """``result`` as a float array of the broadcast shape of ``result`` and all ``inputs`` (a fresh one if that
    broadcast changes its shape)."""
    shape = np.broadcast_shapes(np.shape(result), *map(np.shape, inputs))
    result = np.asarray(result, dtype=float)
    return result if result.shape == shape else np.array(np.broadcast_to(result, shape))


# --------------------------------------------------------------------------- the formulas of each method


def _zero_transferability(*args):
    """T_scratch = E[R_sc − R_sc] = 0 (pathwise, so also where R_sc = +inf)."""
    return np.zeros(np.broadcast_shapes(*map(np.shape, args)))


def _fine_tune_flow_finite(n, d, theta, sigma, depth, draws, seed):
    """((E R_ft, se), (T_ft, se)) of the gradient-flow limit at size (n, d), per θ.

    Exact where it can be: for n ≥ d nothing is carried over (R_ft = R_sc pathwise, T = 0); for d − n ≤ 1
    with σ > 0, E R_ft = +inf (R_ft ≥ ‖X⁺ε‖², whose mean diverges) while T, whose noise terms cancel, is
    still averaged. Otherwise :func:`~.fine_tuning.fine_tune_flow_expectation`.
    """
    zeros = np.zeros(theta.shape)
    if n >= d:
        return (zeros + scratch_risk_finite(n, d, sigma), zeros), (zeros, zeros)
    (risk, risk_se), gap = ft.fine_tune_flow_expectation(n, d, theta, sigma, draws=draws, seed=seed, depth=depth)
    if sigma > 0 and d - n <= 1:
        risk, risk_se = zeros + np.inf, zeros
    return (risk, risk_se), gap


# The formulas of the table below take validated float arrays, (γ, θ, σ, λ) at n, d → ∞ and (n, d, θ, σ, λ) at
# finite size, and call the closed forms of the other modules with validate=False.
METHODS: Mapping[str, TransferMethod] = MappingProxyType({
    "scratch": TransferMethod(
        name="scratch", label="scratch training", figure=None, source="FaF Eq. 10", simulator="scratch",
        takes_lambda=False, min_n=1, erratum=None,
        formulas=Formulas(
            paper_risk=lambda g, t, s, lam: scratch_risk(g, s, validate=False),
            paper_transferability=_zero_transferability,
            paper_risk_finite=lambda n, d, t, s, lam: scratch_risk_finite(n, d, s, validate=False),
            paper_transferability_finite=_zero_transferability),
    ),
    "linear": TransferMethod(
        name="linear", label="linear transfer", figure="FaF Fig. 1", source="FaF Eq. 12", simulator="linear",
        takes_lambda=False, min_n=3, erratum=None,
        formulas=Formulas(
            paper_risk=lambda g, t, s, lam: np.sin(t) ** 2,  # FaF Eq. 12 as n → ∞
            paper_transferability=lambda g, t, s, lam: lin.linear_transferability(g, t, s, validate=False),
            paper_risk_finite=lambda n, d, t, s, lam: lin.linear_transfer_risk(t, s, n, validate=False),
            paper_transferability_finite=lambda n, d, t, s, lam: lin.linear_transferability_finite(
                n, d, t, s, validate=False)),
    ),
    "ridge": TransferMethod(
        name="ridge", label="ridge linear transfer", figure="FaF Fig. 2", source="FaF Eq. 15", simulator="linear",
        takes_lambda=True, min_n=3, erratum=None,
        formulas=Formulas(
            paper_risk=lambda g, t, s, lam: lin.ridge_transfer_risk(t, lam),
            # FaF Eq. 10 − Eq. 15 (+inf at γ = 1 when σ > 0: only scratch diverges)
            paper_transferability=lambda g, t, s, lam: (scratch_risk(g, s, validate=False)
                                                        - lin.ridge_transfer_risk(t, lam)),
            paper_risk_finite=lambda n, d, t, s, lam: lin.ridge_transfer_risk_finite(t, s, n, lam, validate=False),
            paper_transferability_finite=lambda n, d, t, s, lam: (
                scratch_risk_finite(n, d, s, validate=False)
                - lin.ridge_transfer_risk_finite(t, s, n, lam, validate=False))),
    ),
    "finetune": TransferMethod(
        name="finetune", label="fine-tuning", figure="FaF Fig. 3", source="FaF Eq. 16", simulator="finetune",
        takes_lambda=False, min_n=1, erratum="erratum-finetune-limit",
        formulas=Formulas(
            paper_risk=lambda g, t, s, lam: ft.fine_tune_risk(g, t, s, validate=False),
            paper_transferability=lambda g, t, s, lam: ft.fine_tune_transferability(g, t),
            paper_risk_finite=lambda n, d, t, s, lam: ft.fine_tune_risk_finite_paper(n, d, t, s, validate=False),
            paper_transferability_finite=lambda n, d, t, s, lam: ft.fine_tune_transferability_finite_paper(n, d, t),
            flow_risk=lambda g, t, s, lam, depth: ft.fine_tune_risk_corrected(g, t, s, depth, validate=False),
            flow_transferability=lambda g, t, s, lam, depth: ft.fine_tune_transferability_corrected(
                g, t, s, depth, validate=False),
            flow_finite=_fine_tune_flow_finite),
    ),
})
#: the methods that transfer something from the source (every record but scratch)
TRANSFER_METHODS = ("linear", "ridge", "finetune")


def get_method(name) -> TransferMethod:
    """The record of ``name`` (a :class:`TransferMethod` is returned as is); ValueError listing the names."""
    if isinstance(name, TransferMethod):
        return name
    if isinstance(name, str) and name in METHODS:
        return METHODS[name]
    raise ValueError(f"method must be one of {tuple(METHODS)}, got {name!r}")
