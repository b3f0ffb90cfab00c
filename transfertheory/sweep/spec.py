"""Sweep specifications: an experiment × a grid, from a named sweep or a user's TOML file, validated up front.

A spec (a TOML file or a named sweep of :mod:`.named`) has the fields

* ``experiment`` — a name of :func:`transfertheory.sim.experiments` (required);
* ``seed`` — base seed (an integer in [0, 2**64 - 1], default 0), part of every point's identity;
* ``draws`` — independent draws per point (sets the experiment's ``draws`` parameter);
* ``[fixed]`` — parameters held fixed; the others take the experiment's defaults;
* ``[axes]`` — parameters swept: a list of values, or a table ``{start, stop, num}`` (``num`` evenly spaced
  values, both ends included; ``log = true`` for geometric spacing — a boolean, not the text ``"true"``);
* ``[profiles.quick]``, ``[profiles.paper]``, … — the same fields (``draws``, ``fixed``, ``axes``) merged over
  the above when that profile is chosen (every profile is checked whether chosen or not);
* ``description`` — free text.

The grid is the product of the axes in their order, counted before it is built (more than ``max_points``, by
default :data:`MAX_POINTS`, is refused); every value is validated against the experiment's schema before
anything runs, and every error is one line naming the field as the user wrote it (``axes.gamma: gamma must be
in (0, inf), got -1``, ``draws: …``, ``--set sigma: …``).
"""
from __future__ import annotations

import itertools
import math
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

__all__ = ["SweepSpec", "parse_spec", "load_toml", "parse_assignment", "grid_size", "FIELDS", "PROFILE_FIELDS",
           "MAX_POINTS"]

FIELDS = ("experiment", "description", "seed", "draws", "fixed", "axes", "profiles")
PROFILE_FIELDS = ("draws", "fixed", "axes")
#: the largest grid parse_spec builds unless told otherwise (``--max-points``; why: docs/sweeps.md)
MAX_POINTS = 100_000


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
        """Every point of the grid (the experiment's full parameter dict, in schema order, as
        :meth:`~transfertheory.sim.records.Experiment.point` gives it: the values were checked once, by
        :func:`parse_spec`), in axis order."""
        schema = get_experiment(self.experiment).schema
        base = {name: self.fixed.get(name, field.default) for name, field in schema.items()}
        return [{**base, **dict(zip(self.axes, values))}  # (keys already in base keep their schema position)
                for values in itertools.product(*self.axes.values())]

    def size(self) -> int:
        return math.prod(len(v) for v in self.axes.values())


def _table(value, where) -> dict:
    if not isinstance(value, dict):
        raise ValueError(f"{where}: must be a table of name = value, got {value!r}")
    return value


def _unknown(mapping, allowed, where):
    extra = [k for k in mapping if k not in allowed]
    if extra:
        raise ValueError(f"{where}{extra[0]}: unknown field (fields: {', '.join(allowed)})")


def _axis_length(name, value, where="") -> int:
    """How many values axis ``name`` has, from its list or its range's ``num`` (without building it); errors name
    the axis after ``where`` (a profile's ``profiles.NAME.``)."""
    if not isinstance(value, dict):
        return len(value) if isinstance(value, (list, tuple)) else 1
    label = f"{where}axes.{name}"
    _unknown(value, ("start", "stop", "num", "log"), f"{label}.")
    missing = sorted({"start", "stop", "num"} - set(value))
    if missing:
        raise ValueError(f"{label}: a range needs start, stop and num, lacks {', '.join(missing)}")
    if not isinstance(value.get("log", False), bool):
        raise ValueError(f"{label}.log: must be true or false, got {value['log']!r}")
    return P.Param("num", P.Interval(0, np.inf, "left"), integer=True).scalar(value["num"], f"{label}.num")


def _axis_values(name, value) -> list:
    """A list, or the values of a ``{start, stop, num[, log]}`` range (:func:`_axis_length` checked it)."""
    if isinstance(value, dict):
        num = _axis_length(name, value)
        start, stop = (P.Param(k, P.Interval(-np.inf, np.inf, "neither")).scalar(value[k], f"axes.{name}.{k}")
                       for k in ("start", "stop"))
        if value.get("log", False) and (start <= 0 or stop <= 0):
            raise ValueError(f"axes.{name}: a log range needs start and stop > 0, got {start:g} and {stop:g}")
        space = np.geomspace if value.get("log", False) else np.linspace
        return [float(v) for v in space(start, stop, num)] if num else []
    return list(value) if isinstance(value, (list, tuple)) else [value]


def grid_size(axes) -> int:
    """The number of points of the grid of ``axes`` (name → list or range), counted without building it."""
    return math.prod(_axis_length(name, value) for name, value in _table(axes, "axes").items())


def _merged(raw, profile):
    """``raw`` with its ``profiles[profile]`` merged over it (fixed and axes key by key); its profiles' forms were
    checked by :func:`_check_profiles`."""
    if profile is None:
        return raw
    profiles = raw.get("profiles", {})
    if profile not in profiles:
        raise ValueError(f"profile: unknown profile {profile!r} of this sweep (profiles: "
                         f"{', '.join(profiles) or 'none'})")
    chosen = profiles[profile]
    out = {**raw, **{k: v for k, v in chosen.items() if k not in ("fixed", "axes")}}
    for key in ("fixed", "axes"):
        out[key] = {**_table(raw.get(key, {}), key), **chosen.get(key, {})}
    return out


def _check_profiles(raw, record):
    """Every profile of ``raw`` checked, chosen or not: its fields, and the names and values of its ``draws``,
    ``fixed`` and ``axes`` (a range's form, not its values); errors name ``profiles.NAME.…``."""
    for profile, chosen in _table(raw.get("profiles", {}), "profiles").items():
        where = f"profiles.{profile}"
        _unknown(_table(chosen, where), PROFILE_FIELDS, f"{where}.")
        if "draws" in chosen:
            _checked(record, _draws_field(record, f"{where}.draws"), chosen["draws"], f"{where}.draws")
        for key, value in _table(chosen.get("fixed", {}), f"{where}.fixed").items():
            _checked(record, key, value, f"{where}.fixed.{key}")
        for key, value in _table(chosen.get("axes", {}), f"{where}.axes").items():
            if key not in record.schema:
                _checked(record, key, value, f"{where}.axes.{key}")  # an unknown parameter
            _axis_length(key, value, f"{where}.")
            for item in ([] if isinstance(value, dict) else _axis_values(key, value)):
                _checked(record, key, item, f"{where}.axes.{key}")


def parse_spec(raw, name, profile=None, overrides=None, max_points=MAX_POINTS) -> SweepSpec:
    """A :class:`SweepSpec` from the mapping ``raw`` (a parsed TOML file or a named sweep), with ``profile``'s
    fields merged in and ``overrides`` (name → value, from ``--set``: a parameter, ``draws`` or ``seed``) fixing
    parameters (replacing an axis). A grid of more than ``max_points`` points (None: no limit) is refused before
    any of its values is built. Errors name the field as the user wrote it (``draws``, ``--set sigma``)."""
    _unknown(_table(raw, "spec"), FIELDS, "")
    if "experiment" not in raw:
        raise ValueError("experiment: missing (the name of a registered experiment)")
    for key in ("experiment", "description"):
        if key in raw and not isinstance(raw[key], str):
            raise ValueError(f"{key}: must be text, got {raw[key]!r}")
    record = get_experiment(raw["experiment"])
    _check_profiles(raw, record)
    spec = _merged(raw, profile)
    fixed, axes = dict(_table(spec.get("fixed", {}), "fixed")), dict(_table(spec.get("axes", {}), "axes"))
    labels = {key: f"fixed.{key}" for key in fixed}  # parameter → the name the user gave it
    seed, seed_label = spec.get("seed", 0), "seed"
    if "draws" in spec:
        _draws_field(record, "draws")
        if record.draws in fixed:
            raise ValueError(f"draws: also given as fixed.{record.draws} (give one)")
        fixed[record.draws], labels[record.draws] = spec["draws"], "draws"
    for key, value in (overrides or {}).items():
        if key == "seed":
            seed, seed_label = value, "--set seed"
            continue
        if key in FIELDS and key != "draws":
            raise ValueError(f"--set {key}: not settable (--set takes a parameter of {record.name!r}, draws or "
                             f"seed)")
        target = _draws_field(record, f"--set {key}") if key == "draws" else key
        axes.pop(target, None)
        fixed[target], labels[target] = value, f"--set {key}"
    both = sorted(set(fixed) & set(axes))
    if both:
        raise ValueError(f"axes.{both[0]}: also in fixed (a parameter is either fixed or an axis)")
    size = grid_size(axes)
    if max_points is not None and size > max_points:
        raise ValueError(f"axes: the grid has {size} points, more than the limit of {max_points} (a sweep that "
                         f"large should be split; --max-points N raises the limit)")
    checked_fixed = {key: _checked(record, key, value, labels[key]) for key, value in fixed.items()}
    checked_axes = {}
    for key, value in axes.items():
        values = _axis_values(key, value)
        if not values:
            raise ValueError(f"axes.{key}: empty axis (give at least one value)")
        checked_axes[key] = tuple(_checked(record, key, v, f"axes.{key}") for v in values)
    return SweepSpec(name, record.name, _seed(seed, seed_label), checked_fixed, checked_axes, profile)


def _draws_field(record, label):
    if record.draws is None:
        raise ValueError(f"{label}: experiment {record.name!r} has no draws")
    return record.draws


def _seed(value, label) -> int:
    """The base seed: an integer in [0, 2**64 - 1] (a float only when integral, as everywhere in the package)."""
    if isinstance(value, int) and not isinstance(value, bool) and not 0 <= value < 2**64:
        raise ValueError(f"{label}: seed must be an integer in [0, 2**64 - 1], got {value}")
    return P.SEED.scalar(value, label if label == "seed" else f"{label}: seed")


def _checked(record, key, value, label):
    """Parameter ``key`` validated (:meth:`~transfertheory.sim.records.Experiment.check`); errors start with
    ``label``."""
    try:
        return record.check(key, value)
    except ValueError as error:
        raise ValueError(f"{label}: {error}") from None


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
