r"""Claim points through the sweep engine: a resumable, parallel or distributed audit (``verify --paper``).

Each point at which a sampling claim (kind ``simulation`` or ``monte-carlo``) is checked in a profile —
:func:`~.registry.points` — is one point of the experiment ``claim_point`` (:data:`EXPERIMENT`), registered here
with :func:`transfertheory.sim.register_experiment`. A point is named by the claim id, the profile, the point's
index among the claim's points, a hash of its parameters and the package version, so a changed strategy or a new
release is a new point, never a silent reuse. Computing it runs :func:`~.registry.check_point` — the same check,
seed and confirmation stage as the in-process audit, so the stored outcome is the one ``verify`` computes without
the engine — and stores one row: the audit status, the measured numbers, and the full
:class:`~.registry.CheckResult` (and a confirmed point's first stage) as JSON. :func:`run_claims` plans the
points of a list of claims, lets a :class:`transfertheory.sweep.runner.SweepRunner` compute those its store
lacks (local worker processes or a Dask cluster; Ctrl-C keeps the completed points) and judges every claim from
its stored rows (:func:`~.registry.judge`).

A claim point's row is not one simulator run: its convergence columns say whether the check produced a result
(``converged``; False for ERROR) and carry the audit status (``status``: PASS, FAIL, …); the convergence of the
check's own simulations enters its verdict, as in the in-process audit. Claims of kind ``exact`` and ``external``
(closed forms) run in the calling process.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import math

import numpy as np
import pandas as pd

from .. import __version__
from .. import params as P
from ..sim import experiments, register_experiment, unregister_experiment
from ..sim.convergence import Convergence, convergence_columns
from ..sim.records import Experiment, Field
from .profiles import PROFILE_NAMES, get_profile
from .registry import CLAIMS, ERROR, CheckResult, Criterion, PointOutcome, check_point, get_claim, judge, points

__all__ = ["EXPERIMENT", "SAMPLING_KINDS", "through_engine", "params_hash", "claim_experiment", "point_table",
           "point_outcome", "run_claims"]

#: name of the registered experiment whose points are claim points
EXPERIMENT = "claim_point"
#: claim kinds whose points run through the engine (the others are closed forms: computed in process)
SAMPLING_KINDS = ("simulation", "monte-carlo")
_INDEX = P.Param("index", P.SEED.interval, integer=True, description="index of the point among the claim's points")
_HASH = P.Param("params_hash", P.SEED.interval, integer=True, description="32-bit hash of the point's parameters")


def through_engine(claim) -> bool:
    """Whether ``claim``'s points run through the sweep engine (a sampling kind, :data:`SAMPLING_KINDS`)."""
    return get_claim(claim).kind in SAMPLING_KINDS


def params_hash(params) -> int:
    """32-bit hash of a point's parameters (canonical JSON): part of a claim point's identity."""
    text = json.dumps(dict(params), sort_keys=True, separators=(",", ":"), default=repr)
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)


def _plain(value):
    """``value`` with NumPy scalars as Python numbers (for JSON)."""
    return value.item() if isinstance(value, np.generic) else value


def _result_json(result: CheckResult | None) -> str:
    return "" if result is None else json.dumps(dataclasses.asdict(result), default=_plain)


def _result(text) -> CheckResult | None:
    if not text:
        return None
    fields = json.loads(text)
    criterion = fields.pop("criterion")
    return CheckResult(**fields, criterion=None if criterion is None else Criterion(**criterion))


def point_table(outcome: PointOutcome) -> pd.DataFrame:
    """The one-row table of a claim point's outcome (module docstring); its seconds are not in it (the store keeps
    the compute time in the file's metadata, so that the row is a pure function of the point)."""
    result = outcome.result
    number = (lambda name: math.nan if result is None or getattr(result, name) is None
              else float(getattr(result, name)))
    record = Convergence.of_length(1, outcome.status != ERROR, outcome.status, math.nan, 0, math.nan)
    return pd.DataFrame({"discrepancy": [number("discrepancy")], "tolerance": [number("tolerance")],
                         "z": [number("z")], "passed": [result is not None and bool(result.passed)],
                         "error": [outcome.error or ""], "result": [_result_json(result)],
                         "first": [_result_json(outcome.first)], **convergence_columns(record)})


def point_outcome(row, params, seconds) -> PointOutcome:
    """The :class:`PointOutcome` a stored row (a mapping: a row of :func:`point_table`) describes."""
    return PointOutcome(dict(params), str(row["status"]), _result(row["result"]), float(seconds),
                        row["error"] or None, _result(row["first"]))


def _simulate(point, seed, backend):
    """Check the claim at its ``index``-th point (``seed`` unused: a claim point draws from the seed its claim id,
    profile and parameters fix, as in the in-process audit; ``backend`` None: the profile's)."""
    claim, profile = get_claim(point["claim"]), get_profile(point["profile"])
    if backend is not None:
        profile = dataclasses.replace(profile, backend=backend)
    chosen = points(claim, profile)
    if point["index"] >= len(chosen) or params_hash(chosen[point["index"]]) != point["params_hash"]:
        raise ValueError(f"claim {claim.id} has no point {point['index']} with parameters hash "
                         f"{point['params_hash']} in profile {profile.name} (its points changed since planning)")
    return point_table(check_point(claim, chosen[point["index"]], profile))


def _example() -> dict:
    """A cheap claim point: the first exact claim without a strategy (its one point, {}), in the quick profile."""
    claim = next(c for c in CLAIMS.values() if c.kind == "exact" and c.strategy is None and "quick" in c.profiles)
    return dict(claim=claim.id, profile="quick", index=0, params_hash=params_hash({}))


def claim_experiment() -> Experiment:
    """The ``claim_point`` experiment, registered with the claims registered now (re-registered when the set of
    claims changed, e.g. a claim a test registers)."""
    ids = tuple(CLAIMS)
    current = experiments().get(EXPERIMENT)
    if current is not None and current.schema["claim"].choices == ids:
        return current
    if current is not None:
        unregister_experiment(EXPERIMENT)
    record = Experiment(
        name=EXPERIMENT, paper="claims registry", version=1,
        description="one point of a registered claim in a profile: its check, status and measured numbers",
        fields=(Field("claim", ids[0], choices=ids), Field("profile", "quick", choices=PROFILE_NAMES),
                Field("index", 0, _INDEX), Field("params_hash", 0, _HASH),
                Field("package", __version__, choices=(__version__,))),
        example=_example(), simulate=_simulate)
    return register_experiment(record)


claim_experiment()


def _planned(claim, profile):
    """(the claim's points, their claim-point parameter dicts), or the ERROR outcome of drawing them."""
    try:
        chosen = points(claim, profile)
    except Exception as err:  # as registry.run: an ERROR row, the audit goes on
        error = PointOutcome({}, ERROR, None, 0.0, f"drawing points failed: {type(err).__name__}: {err}")
        return judge(claim, profile, [error], 0.0)
    return chosen, [dict(claim=claim.id, profile=profile.name, index=k, params_hash=params_hash(p))
                    for k, p in enumerate(chosen)]


def run_claims(selected, profile, runner) -> dict:
    """claim id → :class:`~.registry.Outcome` of every claim of ``selected``, judged from the stored rows of its
    points, which ``runner`` (a :class:`~transfertheory.sweep.runner.SweepRunner`) computes where its store lacks
    them. A point whose computation failed (a worker lost, …) is an ERROR naming the failure."""
    profile = get_profile(profile)
    claim_experiment()
    planned = {claim.id: _planned(get_claim(claim), profile) for claim in selected}
    outcomes = {cid: plan for cid, plan in planned.items() if not isinstance(plan, tuple)}
    todo = [(cid, params, point) for cid, plan in planned.items() if isinstance(plan, tuple)
            for params, point in zip(*plan)]
    stored = runner.results(f"verify --{profile.name}", EXPERIMENT, [point for _, _, point in todo]) if todo else []
    by_claim = {}
    for (cid, params, _), result in zip(todo, stored):
        if result.rows is None:
            outcome = PointOutcome(params, ERROR, None, 0.0, f"sweep engine: {result.error}")
        else:
            outcome = point_outcome(result.rows.iloc[0], params, result.seconds)
        by_claim.setdefault(cid, []).append(outcome)
    for cid, point_outcomes in by_claim.items():
        outcomes[cid] = judge(cid, profile, point_outcomes, sum(o.seconds for o in point_outcomes))
    return outcomes
