"""Validation once at the boundary: a public function of the theory checks σ (the label-noise level) once; the
kernels it calls trust their inputs (``validate=False``). Followed through one phase-diagram figure, where every
check of σ is the one check of a distinct public theory call."""
import collections
import sys
from pathlib import Path

import numpy as np
import pytest

import transfertheory
from transfertheory import params as P
from transfertheory.figures import phase_diagram as PD
from transfertheory.figures import phase_grid
from transfertheory.figures.output import use_agg
from transfertheory.theory import linear, methods, transfer

THEORY = str(Path(transfertheory.__file__).parent / "theory")


@pytest.fixture
def sigma_checks(monkeypatch):
    """The outermost theory call (its frame) of every check of a parameter named sigma, in order."""
    calls = []
    original = P.Param.check

    def counting(self, value, name=None):
        if (self.name if name is None else name) == "sigma":
            frame, outermost = sys._getframe(1), None
            while frame is not None:
                if frame.f_code.co_filename.startswith(THEORY):
                    outermost = frame
                frame = frame.f_back
            calls.append((outermost, outermost.f_code.co_name if outermost else None))  # held: ids stay unique
        return original(self, value, name)

    monkeypatch.setattr(P.Param, "check", counting)
    return calls


GAMMA, THETA = np.linspace(0.1, 2.0, 5), np.linspace(0.0, 1.5, 4)[:, None]
PUBLIC_CALLS = {
    "transfer_risks linear": lambda: transfer.transfer_risks("linear", GAMMA, THETA, 0.2),
    "transfer_risks finetune flow": lambda: transfer.transfer_risks("finetune", GAMMA, THETA, 0.2, depth=3),
    "transfer_risks finetune paper": lambda: transfer.transfer_risks("finetune", GAMMA, THETA, 0.2, limit="paper"),
    "transfer_risks ridge": lambda: transfer.transfer_risks("ridge", GAMMA, THETA, 0.2, 0.1),
    "transfer_risks ridge finite": lambda: transfer.transfer_risks("ridge", GAMMA, THETA, 0.2, 0.1, finite_d=32,
                                                                   limit="paper"),
    "opening_angle ridge": lambda: transfer.opening_angle("ridge", 0.2, 0.1),
    "flow_limit_sign_angle": lambda: transfer.flow_limit_sign_angle(GAMMA, 0.2, 2),
    "negative_transfer_interval": lambda: linear.negative_transfer_interval(THETA, 0.2),
    "linear_transferability_finite": lambda: linear.linear_transferability_finite(8, 16, THETA, 0.2),
    "finetune.flow_risk": lambda: methods.get_method("finetune").flow_risk(GAMMA, THETA, 0.2),
    "ridge.paper_transferability_finite": lambda: methods.get_method("ridge").paper_transferability_finite(
        8, 16, THETA, 0.2, 0.1),
}


@pytest.mark.parametrize("name", PUBLIC_CALLS)
def test_a_public_theory_function_checks_sigma_once(sigma_checks, name):
    PUBLIC_CALLS[name]()
    assert len(sigma_checks) == 1


@pytest.mark.parametrize("method", phase_grid.METHODS)
def test_the_phase_diagram_checks_sigma_once_per_theory_call(sigma_checks, method):
    """Walking σ through ``phase_diagram_output``: each check is a distinct public theory call's only one (before
    this rule one figure checked σ 16 times for linear transfer and 36 for fine-tuning, 6 and 12 now)."""
    use_agg()
    import matplotlib.pyplot as plt

    lam = 0.1 if method == "ridge" else 0.0
    grid = phase_grid.compute_phase_grid(method, 0.2, resolution=8, lam=lam)
    sigma_checks.clear()
    plt.close(PD.phase_diagram_output(grid, method, 0.2, lam=lam).figure)
    per_call = collections.Counter(id(frame) for frame, _ in sigma_checks)
    assert sigma_checks and set(per_call.values()) == {1}, collections.Counter(name for _, name in sigma_checks)


def test_bad_sigma_is_still_named_by_the_public_function():
    for call in (lambda: transfer.transfer_risks("linear", 0.5, 0.5, -0.1),
                 lambda: methods.get_method("finetune").flow_transferability(0.5, 0.5, np.nan),
                 lambda: linear.linear_transferability_finite(8, 16, 0.5, -1.0)):
        with pytest.raises(ValueError, match="sigma must"):
            call()
