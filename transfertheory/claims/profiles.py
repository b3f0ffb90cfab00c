r"""Size profiles of the claims audit: ``quick`` (CPU, seconds per claim), ``full``, ``paper`` (GPU recommended).

A check reads the sizes it needs from the profile: the range of d its strategy draws from for
simulations, the target draws per simulated point, the repetitions of a Monte Carlo of a defining
expectation, and how many hypothesis points a claim with a strategy is checked at.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from ..params import PROFILE_NAMES

__all__ = ["Profile", "PROFILES", "PROFILE_NAMES", "get_profile"]


@dataclass(frozen=True)
class Profile:
    """Sizes of one audit profile.

    ``examples``: points per claim that has a strategy; ``sim_d``: (smallest, largest) input dimension
    of simulation claims; ``sim_draws``: target draws per simulated point; ``mc_reps``: repetitions of
    a Monte Carlo of a defining expectation (n, d ≤ 40); ``reference_draws``: draws of a Monte Carlo
    reference (the fine-tuning gradient-flow limit), None for the method's own size policy;
    ``backend``: the simulator's array backend; ``scale``: how many times the draws of the named profile this
    one carries (:meth:`enlarged`: the registry's confirmation stage), for checks whose other sizes grow with it.
    """

    name: str
    examples: int
    sim_d: tuple
    sim_draws: int
    mc_reps: int
    reference_draws: int | None
    backend: str
    description: str
    scale: int = 1

    def enlarged(self, factor: int) -> "Profile":
        """The same profile with ``factor`` × the draws, repetitions and reference draws (same points) and scale."""
        return replace(self, sim_draws=self.sim_draws * factor, mc_reps=self.mc_reps * factor,
                       reference_draws=None if self.reference_draws is None else self.reference_draws * factor,
                       scale=self.scale * factor)


#: one :class:`Profile` per name of :data:`transfertheory.params.PROFILE_NAMES`, in that order
PROFILES = {
    "quick": Profile("quick", examples=3, sim_d=(16, 32), sim_draws=100, mc_reps=2000, reference_draws=4000,
                     backend="numpy", description="CI size: d <= 32, 100 draws, 3 points per claim (CPU, seconds each)"),
    "full": Profile("full", examples=6, sim_d=(64, 100), sim_draws=100, mc_reps=4000, reference_draws=None,
                    backend="auto", description="d = 64-100, 100 draws, 6 points per claim (minutes on a CPU)"),
    "paper": Profile("paper", examples=2, sim_d=(500, 500), sim_draws=20, mc_reps=8000, reference_draws=None,
                     backend="auto", description="the paper's size: d = 500, 20 draws (FaF App. D.1; GPU recommended)"),
}


def get_profile(profile) -> Profile:
    """A :class:`Profile` from itself or its name (ValueError for an unknown name)."""
    if isinstance(profile, Profile):
        return profile
    if profile not in PROFILES:
        raise ValueError(f"profile must be one of {PROFILE_NAMES}, got {profile!r}")
    return PROFILES[profile]
