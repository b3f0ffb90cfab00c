"""The :class:`Experiment` record: one simulator as a function from one point's parameters to a tidy table.

An experiment has a ``name``, the ``paper`` (and section) it simulates, a ``version`` (raised when its numbers
change, so that stored results of the old code are not reused), a parameter schema — one :class:`Field` per
parameter, each with its default and its valid range (a :class:`~transfertheory.params.Param`, a set of
choices, or a non-empty sequence of either), among them ``draws``, the number of independent draws — and a small
``example`` point (seconds on a CPU). The schema is the simulator's one declaration of its parameters: the entry
point next to the record validates its own arguments through these fields, and the integrator's settings are
fields too (:func:`flow_fields`, passed on as ``flow=`` / ``pretrain_flow=`` by :func:`flow_arguments`).
``experiment.run(seed=..., backend=..., **point)`` validates the point, checks its memory (a record whose simulator
generates its own data declares the ``memory`` of the whole run, that data included: a point that does not fit is
refused before any of it is drawn), runs the simulator and returns one row per
draw (column ``draw``): the point's parameters as columns (a sequence as comma-joined text), the simulator's own
columns and the shared convergence columns (:mod:`transfertheory.sim.convergence`). The records of the package's
simulators are registered in :mod:`transfertheory.sim.catalog`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Callable, Mapping

import numpy as np  # pandas is imported by run(): a simulator's module imports its record, a --help needs neither

from .. import params as P
from .convergence import normalize_convergence
from .integrator import SCHEMES, SETTING_RANGES, FlowSettings

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Field", "Experiment", "checked", "flow_fields", "flow_arguments"]


@dataclass(frozen=True)
class Field:
    """One parameter of an experiment: ``param`` (numeric range), ``choices`` (allowed strings) or ``text`` (a
    string checked by a callable that raises ValueError, e.g. a spectrum spec), its ``default`` and whether its
    value is a non-empty ``sequence`` of such items, none repeated (a single item is a sequence of one)."""

    name: str
    default: Any
    param: P.Param | None = None
    choices: tuple | None = None
    sequence: bool = False
    description: str = ""
    text: Callable[[str], Any] | None = None
    syntax: str = ""  #: the valid strings of a ``text`` field, in words
    #: added after points of the experiment were stored, its default giving the results of before: left out of
    #: the point's identity while at its default, so that stored points stay valid (:meth:`Experiment.identity`)
    added: bool = False

    def __post_init__(self):
        if sum(x is not None for x in (self.param, self.choices, self.text)) != 1:
            raise ValueError(f"field {self.name!r} needs exactly one of param, choices and text")

    def range_text(self) -> str:
        """The valid values in words (``an integer >= 1``, ``one of ('a', 'b')``), per item for a sequence."""
        item = (self.param.range_text() if self.param is not None else f"one of {self.choices}" if self.choices
                else self.syntax)
        return f"a non-empty list of distinct values, each {item}" if self.sequence else item

    def _item(self, value):
        if self.param is not None:
            return self.param.scalar(value, self.name)
        if self.text is not None:
            if not isinstance(value, str):
                raise ValueError(f"{self.name} must be a string ({self.syntax}), got {value!r}")
            self.text(value)
            return value
        if not isinstance(value, str) or value not in self.choices:
            raise ValueError(f"{self.name} must be one of {self.choices}, got {value!r}")
        return value

    def check(self, value):
        """``value`` validated and normalized (Python int, float or str; a tuple for a sequence), or a ValueError
        naming the field and its range."""
        if not self.sequence:
            return self._item(value)
        items = [value] if isinstance(value, (str, int, float, np.number)) else list(value)
        if not items:
            raise ValueError(f"{self.name} must be {self.range_text()}, got an empty list")
        values = tuple(self._item(v) for v in items)
        P.refuse_repeats(values, self.name)
        return values


def checked(fields: Mapping, **values) -> dict:
    """``values`` validated by the fields of the same names (:meth:`Field.check`, in the order given): how an entry
    point validates its arguments through its experiment's fields."""
    return {name: fields[name].check(value) for name, value in values.items()}


def _column(value):
    return ",".join(map(str, value)) if isinstance(value, tuple) else value


@dataclass(frozen=True)
class Experiment:
    """One registered simulator (module docstring); ``simulate(point, seed, backend) -> DataFrame`` is the thin
    wrapper over its entry point."""

    name: str
    paper: str
    version: int
    fields: tuple
    example: Mapping
    simulate: Callable[..., pd.DataFrame]
    description: str = ""
    #: earlier names of renamed parameters and output columns → today's: a point's identity keeps a parameter's
    #: earlier name, so that points stored before the rename stay valid (:meth:`identity`), and stored rows are read
    #: under today's names (:meth:`stored_columns`)
    renamed: Mapping = field(default_factory=dict)
    #: ``memory(point, on_device) -> (bytes, {parameter: value})``: the peak memory of simulating a full point, the
    #: data the wrapper generates before calling its entry point included, and the sizes it grows with; checked by
    #: :meth:`run` before any work (None: the entry point's own check covers the whole run)
    memory: Callable[[Mapping, bool], tuple] | None = None
    schema: Mapping = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "schema", MappingProxyType({f.name: f for f in self.fields}))
        object.__setattr__(self, "example", MappingProxyType(dict(self.example)))
        object.__setattr__(self, "renamed", MappingProxyType(dict(self.renamed)))
        self.point(**self.example)

    @property
    def draws(self) -> str | None:
        """The field that counts the independent draws: ``draws`` in every simulator, None without one."""
        return "draws" if "draws" in self.schema else None

    def check(self, name, value):
        """One parameter validated (ValueError naming an unknown parameter, or the field and its range)."""
        if name not in self.schema:
            raise ValueError(f"unknown parameter {name!r} of experiment {self.name!r} (parameters: "
                             f"{', '.join(self.schema)})")
        return self.schema[name].check(value)

    def point(self, **values) -> dict:
        """The full point: every field, ``values`` validated over the defaults, in schema order."""
        checked = {name: self.check(name, value) for name, value in values.items()}
        return {name: checked.get(name, f.default) for name, f in self.schema.items()}

    def identity(self, point: Mapping) -> dict:
        """What a full point's id hashes (:func:`~transfertheory.sweep.store.point_id`): its parameters under
        their earliest names (:attr:`renamed`), without the :attr:`Field.added` ones at their defaults."""
        earlier = {new: old for old, new in self.renamed.items()}
        return {earlier.get(name, name): value for name, value in point.items()
                if not (self.schema[name].added and value == self.schema[name].default)}

    def stored_columns(self) -> tuple[dict, dict]:
        """What rows stored before a rename or an addition need to read as today's: (earlier column name → today's,
        today's name of an added parameter → the column value of its default)."""
        return dict(self.renamed), {name: _column(f.default) for name, f in self.schema.items() if f.added}

    def run(self, *, seed=0, backend=None, **values) -> pd.DataFrame:
        """Simulate one point: one row per instance, the point's parameters first, then the simulator's columns
        with the shared convergence columns (``attrs`` cleared: the table is all there is)."""
        import pandas as pd

        from .._memory import check_memory
        from ..backend import resolve_backend
        point = self.point(**values)
        if self.memory is not None:  # refused (MemoryLimitError) above the memory guard's limit, before any work
            xp = resolve_backend(backend)
            estimate, sizes = self.memory(point, xp is not np)
            check_memory(estimate, what=f"{self.name}.run", params=sizes, xp=xp)
        table = normalize_convergence(self.simulate(point, seed=P.SEED.scalar(seed), backend=backend))
        table = table.drop(columns=[c for c in point if c in table.columns]).reset_index(drop=True)
        front = pd.DataFrame({name: [_column(value)] * len(table) for name, value in point.items()})
        out = pd.concat([front, table], axis=1)
        out.attrs = {}
        return out


def _stage_prefix(stage: str) -> str:
    return f"{stage}_" if stage else ""


def flow_fields(flow: FlowSettings, *names, stage="") -> tuple:
    """The fields of an experiment that set the integrator of one training stage: a field per setting in
    ``names`` (``gtol``, ``max_time``, ``rtol``, ``scheme``, …), called as the setting for the main flow and
    ``<stage>_<setting>`` for another stage (``pretrain_max_time``), with ``flow``'s value as its default and the
    integrator's range (:data:`~.integrator.SETTING_RANGES`)."""
    defaults, prefix = flow.as_dict(), _stage_prefix(stage)
    return tuple(Field(prefix + name, defaults[name], choices=SCHEMES) if name == "scheme"
                 else Field(prefix + name, defaults[name], SETTING_RANGES[name]) for name in names)


def flow_arguments(point: Mapping, *stages) -> dict:
    """The entry point's ``flow=`` (and ``<stage>_flow=``) arguments from a point's :func:`flow_fields`: the
    changes by setting name, one mapping per stage (``""``: the main flow)."""
    settings = {*SETTING_RANGES, "scheme"}
    return {f"{_stage_prefix(stage)}flow": {name[len(_stage_prefix(stage)):]: value for name, value in point.items()
                                            if name.startswith(_stage_prefix(stage))
                                            and name[len(_stage_prefix(stage)):] in settings}
            for stage in ("", *stages)}
