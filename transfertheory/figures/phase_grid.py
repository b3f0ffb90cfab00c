r"""The (γ, θ) grid of a transferability phase diagram (FaF §3, Figs. 1 and 3): closed forms on a grid, as arrays.

T = E[R_scratch − R_transfer] (T > 0: transfer helps), R = ‖β̂ − β_t‖², at n = γd target samples and angle θ
between the unit source and target vectors, for one transfer method of :mod:`transfertheory.theory.methods`
(linear transfer, FaF Eq. 13; fine-tuning, FaF Eq. 17 or its gradient-flow limit; ridge, Eqs. 10 and 15),
evaluated by :func:`transfertheory.theory.transfer.transfer_risks`.

:func:`compute_phase_grid` returns a :class:`PhaseGrid` (axes and value matrices, NumPy only: the command line's
path, which never imports pandas); its :meth:`~PhaseGrid.columns` are the tidy table (one row per (θ, γ),
θ-major), which :func:`transfertheory.figures.output.write_csv` writes as pandas would (a DataFrame:
``pandas.DataFrame(grid.columns())``). The figure and the summary are :mod:`transfertheory.figures.phase_diagram`.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..params import D, DEPTH, GAMMA_MAX, LAM, RESOLUTION, SIGMA
from ..theory import transfer

__all__ = [
    "METHODS",
    "LIMITS",
    "COLUMNS",
    "COLUMN_DEFINITIONS",
    "THETA_MAX",
    "THETA_TICKS",
    "PhaseGrid",
    "grid_limit",
    "grid_axes",
    "compute_phase_grid",
    "grid_surface",
]

#: transfer methods with a phase diagram (the records of :mod:`transfertheory.theory.methods`)
METHODS = ("linear", "finetune", "ridge")
LIMITS = ("flow", "paper")
#: definitions (with units) of the tidy grid's columns; ``lam`` (ridge) and ``n``, ``d`` (finite d) when present
COLUMN_DEFINITIONS = {
    "gamma": "γ = n/d, target samples per input dimension (dimensionless)",
    "theta": "angle θ between the unit source and target vectors (rad)",
    "sigma": "label-noise standard deviation σ (label units)",
    "method": "transfer method",
    "transferability": "T = E[R_scratch − R_transfer], R = ‖β̂ − β_t‖² (units of ‖β_t‖² = 1); inf where a risk "
                       "diverges, empty where undefined",
    "risk_scratch": "E R_scratch, training from scratch (FaF Eq. 10 or its exact finite-size form)",
    "risk_transfer": "E R_transfer of the method",
    "lam": "ridge strength λ (FaF Eq. 14)",
    "n": "target samples n = round(γd)",
    "d": "input dimension d of the finite-size grid",
}
#: the tidy CSV's fixed columns; finite-d grids add ``n``, ``d``, ridge adds ``lam``
COLUMNS = ["gamma", "theta", "sigma", "method", "transferability", "risk_scratch", "risk_transfer"]
THETA_MAX = np.pi / 2
#: the θ axis' ticks and their labels (the diagrams' y axes)
THETA_TICKS = ([0, np.pi / 8, np.pi / 4, 3 * np.pi / 8, np.pi / 2], ["0", "π/8", "π/4", "3π/8", "π/2"])


def grid_limit(method, finite_d=None, limit=None):
    """The limit a grid draws: ``limit`` if given, else ``"flow"`` — except a finite-d fine-tuning grid, ``"paper"``.

    The gradient-flow limit of fine-tuning at finite size is known only by Monte Carlo (one per n), so a finite-d
    fine-tuning grid draws the paper's exact finite-size Eq. 17; asking for ``limit="flow"`` there is a ValueError.
    """
    if limit is not None and limit not in LIMITS:
        raise ValueError(f"limit must be one of {LIMITS}, got {limit!r}")
    if method == "finetune" and finite_d is not None:
        if limit == "flow":
            raise ValueError("limit='flow' with finite_d is not available for fine-tuning (Monte Carlo only: use "
                             "TransferMethod.flow_transferability_finite per n)")
        return "paper"
    return limit or "flow"


def grid_axes(gamma_max, resolution):
    """γ = γ_max·k/R, k = 1…R (γ = 1 lands exactly on the grid when γ_max·k = R); θ ∈ [0, π/2]."""
    gamma = gamma_max * np.arange(1, resolution + 1) / resolution
    theta = np.linspace(0.0, THETA_MAX, resolution)
    return gamma, theta


@dataclass(frozen=True)
class PhaseGrid:
    """A phase-diagram grid: the axes ``gamma`` (γ, length R) and ``theta`` (θ, length R), the values
    ``transferability``, ``risk_scratch``, ``risk_transfer`` (each broadcastable to R × R, indexed [θ, γ]) and the
    setting they were computed at.
    """

    gamma: np.ndarray
    theta: np.ndarray
    transferability: np.ndarray
    risk_scratch: np.ndarray
    risk_transfer: np.ndarray
    method: str
    sigma: float
    lam: float
    finite_d: int | None
    limit: str
    depth: int

    def columns(self):
        """The tidy table as ``{column: 1-D array}``, one row per (θ, γ), θ-major: :data:`COLUMNS`, plus ``lam``
        (ridge) and ``n``, ``d`` (finite d)."""
        shape = (self.theta.size, self.gamma.size)

        def tidy(values):  # a scalar, a row, a column or a matrix, as one column of the table
            return np.broadcast_to(values, shape).ravel()

        cols = {
            "gamma": tidy(self.gamma[None, :]),
            "theta": tidy(self.theta[:, None]),
            "sigma": tidy(self.sigma),
            "method": tidy(np.array(self.method, dtype=object)),  # (np.full: 20× slower on objects)
            "transferability": tidy(self.transferability),
            "risk_scratch": tidy(self.risk_scratch),
            "risk_transfer": tidy(self.risk_transfer),
        }
        if self.method == "ridge":
            cols["lam"] = tidy(self.lam)
        if self.finite_d is not None:
            cols["n"] = tidy(np.rint(self.gamma * self.finite_d)[None, :]).astype(int)
            cols["d"] = tidy(self.finite_d)
        return cols


def compute_phase_grid(method, sigma, gamma_max=2.0, resolution=400, lam=0.0, finite_d=None, limit=None, depth=2):
    r"""The transferability on a resolution × resolution (γ, θ) grid as a :class:`PhaseGrid` (NumPy only).

    Values: :func:`transfertheory.theory.transfer.transfer_risks` at :func:`grid_limit` (±inf kept: they are the
    theory's values at the singular points; NaN where n < the method's smallest n), for an L = ``depth`` network
    (integer ≥ 2; it changes fine-tuning's gradient-flow limit only). Every argument is checked (ValueError naming
    it) before any work.
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    sigma = SIGMA.scalar(sigma)
    gamma_max = GAMMA_MAX.scalar(gamma_max)
    resolution = RESOLUTION.scalar(resolution)
    lam = LAM.scalar(lam)
    depth = DEPTH.scalar(depth)
    if finite_d is not None:
        finite_d = D.with_range(low=3).scalar(finite_d, "finite_d")
    if method != "ridge" and lam != 0:
        raise ValueError(f"lam applies to method 'ridge' only, got lam={lam:g} for method {method!r}")
    limit = grid_limit(method, finite_d, limit)
    gamma, theta = grid_axes(gamma_max, resolution)
    t, r_sc, r_tr = transfer.transfer_risks(method, gamma[None, :], theta[:, None], sigma, lam, finite_d, limit,
                                            depth)
    t = t + 0.0  # −0.0 (T_ft = 0 for γ ≥ 1) → 0.0
    return PhaseGrid(gamma, theta, t, r_sc, r_tr, method, sigma, lam, finite_d, limit, depth)


def grid_surface(grid, column="transferability"):
    """(γ axis, θ axis, values[θ, γ]) of a :class:`PhaseGrid`."""
    return grid.gamma, grid.theta, np.broadcast_to(getattr(grid, column), (grid.theta.size, grid.gamma.size))
