"""Sweep specifications: an experiment × a grid, from a named sweep or a user's TOML file, validated up front.

A spec (a TOML file or a named sweep of :mod:`.named`) has the fields

* ``experiment`` — a name of :func:`transfertheory.sim.experiments` (required);
* ``seed`` — base seed (integer ≥ 0, default 0), part of every point's identity;
* ``draws`` — independent draws per point (sets the experiment's draws field, e.g. ``instances``);
* ``[fixed]`` — parameters held fixed; the others take the experiment's defaults;
* ``[axes]`` — parameters swept: a list of values, or a table ``{start, stop, num}`` (``num`` evenly spaced
  values, both ends included; ``log = true`` for geometric spacing);
* ``[profiles.quick]``, ``[profiles.paper]``, … — the same fields (``draws``, ``fixed``, ``axes``) merged over
  the above when that profile is chosen;
* ``description`` — free text.

The grid is the product of the axes in their order; every point is validated against the experiment's schema
before anything runs, and every error is one line naming the field (``axes.gamma: gamma must be in (0, inf),
got -1``).
"""
from __future__ import annotations

import itertools
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import params as P
from ..sim import get_experiment

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

__all__ = ["SweepSpec", "parse_spec", "load_toml", "parse_assignment", "FIELDS", "PROFILE_FIELDS"]

FIELDS = ("experiment", "description", "seed", "draws", "fixed", "axes", "profiles")
PROFILE_FIELDS = ("draws", "fixed", "axes")
_RANGE_KEYS = {"start", "stop", "num", "log"}


@dataclass(frozen=True)
class SweepSpec:
    """A validated sweep: ``experiment`` name, base ``seed``, ``fixed`` values and ``axes`` (name → tuple of
    values), every value already checked against the experiment's schema; ``name`` labels it."""

    name: str
    experiment: str
    seed: int
    fixed: dict
    axes: dict
    profile: str | None = None

    def points(self) -> list:
        """Every point of the grid (the experiment's full parameter dict), in axis order."""
        record = get_experiment(self.experiment)
        names = list(self.axes)
        return [record.point(**self.fixed, **dict(zip(names, values)))
                for values in itertools.product(*(self.axes[n] for n in names))]

    def size(self) -> int:
        return int(np.prod([len(v) for v in self.axes.values()], dtype=np.int64))


def _table(value, where) -> dict:
    if not isinstance(value, dict):
        raise ValueError(f"{where}: must be a table of name = value, got {value!r}")
    return value


def _unknown(mapping, allowed, where):
    extra = [k for k in mapping if k not in allowed]
    if extra:
        raise ValueError(f"{where}{extra[0]}: unknown field (fields: {', '.join(allowed)})")


def _axis_values(name, value) -> list:
    """A list, or the values of a ``{start, stop, num[, log]}`` range."""
    if isinstance(value, dict):
        _unknown(value, ("start", "stop", "num", "log"), f"axes.{name}.")
        missing = sorted({"start", "stop", "num"} - set(value))
        if missing:
            raise ValueError(f"axes.{name}: a range needs start, stop and num, lacks {', '.join(missing)}")
        num = P.Param("num", P.Interval(0, np.inf, "left"), integer=True).scalar(value["num"], f"axes.{name}.num")
        start, stop = (P.Param(k, P.Interval(-np.inf, np.inf, "neither")).scalar(value[k], f"axes.{name}.{k}")
                       for k in ("start", "stop"))
        if value.get("log", False) and (start <= 0 or stop <= 0):
            raise ValueError(f"axes.{name}: a log range needs start and stop > 0, got {start:g} and {stop:g}")
        space = np.geomspace if value.get("log", False) else np.linspace
        return [float(v) for v in space(start, stop, num)] if num else []
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _merged(raw, profile, where):
    """``raw`` with its ``profiles[profile]`` merged over it (fixed and axes key by key)."""
    profiles = _table(raw.get("profiles", {}), f"{where}profiles")
    if profile is None:
        return raw
    if profile not in profiles:
        raise ValueError(f"profile: unknown profile {profile!r} of this sweep (profiles: "
                         f"{', '.join(profiles) or 'none'})")
    chosen = _table(profiles[profile], f"profiles.{profile}")
    _unknown(chosen, PROFILE_FIELDS, f"profiles.{profile}.")
    out = {**raw, **{k: v for k, v in chosen.items() if k not in ("fixed", "axes")}}
    for key in ("fixed", "axes"):
        out[key] = {**_table(raw.get(key, {}), key), **_table(chosen.get(key, {}), f"profiles.{profile}.{key}")}
    return out


def parse_spec(raw, name, profile=None, overrides=None) -> SweepSpec:
    """A :class:`SweepSpec` from the mapping ``raw`` (a parsed TOML file or a named sweep), with ``profile``'s
    fields merged in and ``overrides`` (name → value, from ``--set``) fixing parameters (replacing an axis)."""
    _unknown(_table(raw, "spec"), FIELDS, "")
    if "experiment" not in raw:
        raise ValueError("experiment: missing (the name of a registered experiment)")
    record = get_experiment(raw["experiment"])
    spec = _merged(raw, profile, "")
    fixed, axes = dict(_table(spec.get("fixed", {}), "fixed")), dict(_table(spec.get("axes", {}), "axes"))
    if "draws" in spec:
        if record.draws is None:
            raise ValueError(f"draws: experiment {record.name!r} has no draws")
        fixed[record.draws] = spec["draws"]
    for key, value in (overrides or {}).items():
        axes.pop(key, None)
        fixed[key] = value
    both = sorted(set(fixed) & set(axes))
    if both:
        raise ValueError(f"axes.{both[0]}: also in fixed (a parameter is either fixed or an axis)")
    checked_fixed = {}
    for key, value in fixed.items():
        checked_fixed[key] = _checked(record, key, value, "fixed")
    checked_axes = {}
    for key, value in axes.items():
        values = _axis_values(key, value)
        if not values:
            raise ValueError(f"axes.{key}: empty axis (give at least one value)")
        checked_axes[key] = tuple(_checked(record, key, v, "axes") for v in values)
    seed = P.SEED.scalar(spec.get("seed", 0), "seed")
    return SweepSpec(name, record.name, seed, checked_fixed, checked_axes, profile)


def _checked(record, key, value, where):
    try:
        return record.check(key, value)
    except ValueError as error:
        raise ValueError(f"{where}.{key}: {error}") from None


def load_toml(path) -> dict:
    """The mapping of a TOML spec file; a one-line ValueError for an unreadable file or a syntax error."""
    path = Path(path)
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise ValueError(f"{path}: cannot read ({error.strerror})") from None
    except UnicodeDecodeError as error:
        raise ValueError(f"{path}: not UTF-8 text (byte {error.start}: {error.reason})") from None
    except tomllib.TOMLDecodeError as error:
        raise ValueError(f"{path}: TOML syntax error: {error}") from None


def parse_assignment(text) -> tuple:
    """``KEY=VALUE`` of ``--set`` as (key, value): VALUE read as a TOML value (``0.5``, ``[1, 2]``,
    ``"linear"``), else as text."""
    key, sep, value = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise ValueError(f"--set: expected KEY=VALUE, got {text!r}")
    try:
        return key, tomllib.loads(f"value = {value.strip()}")["value"]
    except tomllib.TOMLDecodeError:
        return key, value.strip()
