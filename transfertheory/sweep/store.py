"""The sweep store: a directory holding one Parquet file per completed point, and nothing it did not write counted.

Layout of ``STORE/``::

    points/<point_id>.parquet         the rows of one completed point (only the store writes here)
    _sweep/store.json                 what marks the folder as a store: its format and version
    _sweep/manifest.json              every point a sweep has asked this store for: point_id → experiment, parameters
    _sweep/failed/<point_id>.json     a point that raised: experiment, parameters, seed, the error's last line
    _sweep/logs/<point_id>.log        its full traceback
    _sweep/claims/<name>.claim        a point (or the manifest) being written by a live process (:mod:`.claims`)
    _sweep/quarantine/                damaged or foreign files found under ``points/``, moved aside, bytes kept

A point file is recognised by its name (``points/<16 hex digits>.parquet``) *and* by the key–value metadata it
carries (``transfertheory`` key: the point file format, the store version, its point_id — equal to the name —,
experiment, compute seconds …); its rows must carry the same point_id. Anything else — a file a user wrote,
a copy, a truncated file — is never counted nor merged: :meth:`Store.scan` reports it (``sweep status``), and
the next run moves what lies in ``points/`` into the quarantine and recomputes the point. :func:`read_store`
(= :meth:`Store.table`) is the loader that only ever returns the store's own points; ``pandas.read_parquet(
STORE / "points")`` reads the same rows as long as ``status`` reports nothing foreign or damaged there.

A point's file is written under a temporary name (``.<point_id>.<pid>.<random>.<host>.tmp``) and renamed onto
its final name (``os.replace``, atomic on one filesystem), under the point's claim: a file under its final name
is always complete, and two runs sharing the store never compute one point twice (the second waits for the
first, then finds the point stored). ``point_id`` is the hash of the experiment's name, its version, the point's
full parameters and the base seed (:func:`point_id`), so a changed parameter or a new code version is a new
point.
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from . import claims as C

__all__ = ["Store", "StoreScan", "point_id", "read_store", "NotAStoreError", "STORE_VERSION"]

_META = "transfertheory"
STORE_FORMAT, POINT_FORMAT, STORE_VERSION = "transfertheory sweep store", "transfertheory sweep point", 2
_POINT_NAME = re.compile(r"^[0-9a-f]{16}\.parquet$")


def point_id(experiment, version, point, seed) -> str:
    """16 hex digits of SHA-256 over (experiment name, version, parameters, base seed) as canonical JSON."""
    text = json.dumps([experiment, int(version), _signless_zeros(point), int(seed)], sort_keys=True,
                      separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _signless_zeros(value):
    """``value`` with every float -0.0 made 0.0 (one point, one id: ``sigma = -0`` is ``sigma = 0``)."""
    if isinstance(value, float):
        return value + 0.0
    if isinstance(value, dict):
        return {k: _signless_zeros(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_signless_zeros(v) for v in value]
    return value


def _upgraded(rows: pa.Table) -> pa.Table:
    """The rows of a point stored before a parameter of its experiment was renamed or added
    (:meth:`~transfertheory.sim.records.Experiment.stored_columns`) under today's names, an added parameter's
    column holding its default; any other rows as they are."""
    from ..sim.catalog import experiments

    names = pc.unique(rows["experiment"]).to_pylist() if "experiment" in rows.column_names else []
    record = experiments().get(names[0]) if len(names) == 1 else None
    renamed, added = record.stored_columns() if record else ({}, {})
    rows = rows.rename_columns([renamed[c] if c in renamed and renamed[c] not in rows.column_names else c
                                for c in rows.column_names])
    for name, default in added.items():
        if name not in rows.column_names:
            rows = rows.append_column(name, pa.array([default] * rows.num_rows))
    return rows


def _read_identity(path: Path, stat_key):
    """(metadata, why not a point file or None) of ``path``, read from its Parquet footer; ``stat_key`` (inode, size,
    modification and change times) keys a store's cache of the answers (:meth:`Store._inspect`)."""
    if not path.is_file():
        return None, "foreign: not a regular file"
    try:
        schema = pq.read_schema(path)
    except (pa.ArrowException, OSError) as error:
        return None, f"damaged: unreadable Parquet ({str(error).splitlines()[0]})"
    meta = None
    with contextlib.suppress(UnicodeDecodeError, json.JSONDecodeError):
        meta = json.loads((schema.metadata or {}).get(_META.encode(), b"null"))
    if not isinstance(meta, dict):
        return None, "foreign: not written by the sweep store (no transfertheory metadata)"
    return meta, None


class NotAStoreError(ValueError):
    """A folder that is not a sweep store (or one written by a newer version)."""


def read_store(path) -> pd.DataFrame:
    """The tidy table of every completed point of the store at ``path`` — the store's own point files only, each
    once (:meth:`Store.table`); a :class:`NotAStoreError` naming ``path`` if it is not a store."""
    return Store(path).require().table()


@dataclass
class StoreScan:
    """What a store holds: ``done`` (point_id → path of each valid point file), ``damaged`` and ``foreign``
    (path → why), ``temporary`` (files being written, or left by a killed writer) and ``claimed`` (names a live
    process is writing now)."""

    done: dict = field(default_factory=dict)
    damaged: dict = field(default_factory=dict)
    foreign: dict = field(default_factory=dict)
    temporary: list = field(default_factory=list)
    claimed: list = field(default_factory=list)


def _json_file(path: Path, kind):
    """The JSON object in ``path`` (a store file), or a ValueError naming it."""
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"{path}: damaged {kind} ({error}); move it aside and run again") from None
    if not isinstance(value, dict):
        raise ValueError(f"{path}: damaged {kind} (a JSON {type(value).__name__}, not an object); move it aside and "
                         f"run again")
    return value


class Store:
    """The store at ``root`` (created by :meth:`prepare`); see the module docstring."""

    def __init__(self, root):
        self.root = Path(root)
        self.points = self.root / "points"
        self.meta = self.root / "_sweep"
        self.failed, self.logs = self.meta / "failed", self.meta / "logs"
        self.claims, self.quarantine = self.meta / "claims", self.meta / "quarantine"
        self._read_identity = functools.cache(_read_identity)  # each file's footer read once while it is unchanged

    # ------------------------------------------------------------------ what the folder is

    def is_store(self) -> bool:
        return (self.meta / "store.json").is_file()

    def require(self) -> "Store":
        """This store; a :class:`NotAStoreError` (one line naming the folder) unless ``root`` is a store of this
        version."""
        if not self.root.is_dir():
            raise NotAStoreError(f"no store at {self.root}")
        if not self.is_store():
            raise NotAStoreError(f"{self.root} is not a sweep store (no _sweep/store.json; `python -m "
                                 f"transfertheory.sweep run SPEC --store DIR` creates one)")
        marker = self.meta / "store.json"
        found = _json_file(marker, "store marker")
        if found.get("format") != STORE_FORMAT or not isinstance(found.get("version"), int):
            raise NotAStoreError(f"{marker}: not a sweep store marker ({found!r})")
        if found["version"] > STORE_VERSION:
            raise NotAStoreError(f"{self.root}: a store of version {found['version']}, written by a newer "
                                 f"transfertheory (this one reads up to {STORE_VERSION})")
        return self

    def check_usable(self):
        """A :class:`NotAStoreError` unless ``root`` is a store of this version, or an empty or absent folder
        outside any store: a folder holding other things (a typo in ``--store`` would fill it with points) is
        refused; writes nothing."""
        # (a run creating the store at this moment has made points/ or _sweep/ and not yet its marker)
        if self.root.is_dir() and not self.is_store() and any(p.name not in ("points", "_sweep")
                                                              for p in self.root.iterdir()):
            raise NotAStoreError(f"{self.root} is neither a sweep store nor empty: give a new or empty folder")
        if self.is_store():
            self.require()
        outer = next((p for p in self.root.resolve().parents if Store(p).is_store()), None)
        if outer is not None:
            raise NotAStoreError(f"{self.root} is inside the store {outer}, which holds only its own files")

    def create(self):
        """Make ``root`` a store (:meth:`check_usable` first)."""
        self.check_usable()
        self.points.mkdir(parents=True, exist_ok=True)
        marker = self.meta / "store.json"
        if not marker.is_file():
            body = json.dumps(dict(format=STORE_FORMAT, version=STORE_VERSION))
            with C.claim(self.claims, "store", wait=True):
                self._atomic_write(marker, lambda tmp: tmp.write_text(body, encoding="utf-8"))

    # ------------------------------------------------------------------ writing

    def claim(self, name, wait=False):
        """:func:`.claims.claim` of ``name`` (a point id, ``manifest``) in this store."""
        return C.claim(self.claims, name, wait)

    @staticmethod
    def _atomic_write(path: Path, write):
        """``write(temporary path)``, then the temporary renamed onto ``path`` (its folder created if missing)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = C.temporary_name(path)
        try:
            write(tmp)
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)

    def write_point(self, pid, table: pd.DataFrame, metadata: dict):
        """Store the rows of point ``pid`` atomically (the caller holds its claim), with ``metadata`` (JSON) and
        the point file's identity in the file's key–value metadata, and drop its failure record and log, if any."""
        arrow = pa.Table.from_pandas(table, preserve_index=False)
        identity = dict(format=POINT_FORMAT, store_version=STORE_VERSION, point_id=pid)
        arrow = arrow.replace_schema_metadata({**(arrow.schema.metadata or {}),
                                               _META: json.dumps({**metadata, **identity})})
        self._atomic_write(self.points / f"{pid}.parquet", lambda tmp: pq.write_table(arrow, tmp))
        (self.failed / f"{pid}.json").unlink(missing_ok=True)
        (self.logs / f"{pid}.log").unlink(missing_ok=True)

    def write_failure(self, pid, record: dict, traceback_text: str):
        """Record that point ``pid`` raised (the caller holds its claim): ``record`` as JSON, the traceback in
        ``logs/``."""
        log = self.logs / f"{pid}.log"
        self._atomic_write(log, lambda tmp: tmp.write_text(traceback_text, encoding="utf-8"))
        body = json.dumps({**record, "log": str(log)}, indent=1, default=str)
        self._atomic_write(self.failed / f"{pid}.json", lambda tmp: tmp.write_text(body, encoding="utf-8"))

    def record_lost(self, pid, record: dict, traceback_text: str) -> bool:
        """Record the failure of a point whose writer died, unless another live run is writing it now or it is
        stored meanwhile; whether it was recorded."""
        with self.claim(pid) as held:
            if held is False or self.has(pid):
                return False
            self.write_failure(pid, record, traceback_text)
            return True

    def add_to_manifest(self, entries: dict):
        """Merge ``entries`` (point_id → description) into ``manifest.json`` (under its claim: two runs adding
        their points at once keep both)."""
        with self.claim("manifest", wait=True):
            body = json.dumps({**self.manifest(), **entries}, sort_keys=True, default=str)
            self._atomic_write(self.meta / "manifest.json", lambda tmp: tmp.write_text(body, encoding="utf-8"))

    def quarantine_file(self, path: Path) -> Path:
        """Move ``path`` (a damaged or foreign file under ``points/``) into ``_sweep/quarantine/``, bytes kept."""
        self.quarantine.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
        target = self.quarantine / f"{path.name}.{stamp}.{os.getpid()}.{time.time_ns() % 10**9}"
        os.replace(path, target)
        return target

    def quarantine_point(self, pid):
        """Quarantine what lies under point ``pid``'s final name if it is not a valid point file (the caller
        holds its claim); the quarantined path, or None."""
        path = self.points / f"{pid}.parquet"
        if path.exists() and self._why_not(path) is not None:
            return self.quarantine_file(path)

    def prepare(self) -> list:
        """Ready the store for a run (:meth:`create`), then tidy what dead writers and users left: remove stale
        temporary files and claims and quarantine every damaged or foreign file under ``points/``, each under its
        claim (a live writer's files are left alone). One line per thing done, for the run to print."""
        self.create()
        found, lines = self.scan(), []
        stale = self.clean(found.temporary)
        if stale:
            lines.append(f"removed {stale} temporary file(s) left by killed writers")
        for path, why in {**found.damaged, **found.foreign}.items():
            if path.parent == self.points:
                with self.claim(path.stem) as held:
                    if held is not False and path.exists() and self._why_not(path) is not None:
                        lines.append(f"quarantined {path} ({why}) -> {self.quarantine_file(path)}")
        return lines

    def clean(self, temporaries=None) -> int:
        """Remove the temporary files and claims dead writers left (never a live writer's); how many files.
        ``temporaries``: those of a :meth:`scan` just made (None: scan now)."""
        removed = 0
        for path in self.scan().temporary if temporaries is None else temporaries:
            name = C.temporary_owner(path)[0]
            with self.claim(name) as held:  # a dead writer's claim is free: take it, so no one starts meanwhile
                if held or (held is None and C.temporary_is_stale(path)):
                    path.unlink(missing_ok=True)
                    removed += 1
        for path in sorted(self.claims.glob("*.claim")) if self.claims.is_dir() else ():
            with self.claim(path.stem):  # a claim file left by a killed holder: removed when let go
                pass
        return removed

    # ------------------------------------------------------------------ recognising point files

    def _inspect(self, path: Path):
        """(metadata, why not a point file or None) of ``path`` (:func:`_read_identity`)."""
        try:
            stat = path.stat()
        except FileNotFoundError:
            return None, "removed"
        return self._read_identity(path, (stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns))

    def _why_not(self, path: Path):
        """Why ``path`` is not a point file of this store (None: it is one)."""
        meta, why = self._inspect(path)
        if why is not None:
            return why
        pid = path.name[:-len(".parquet")]
        if meta.get("format") != POINT_FORMAT or meta.get("point_id") != pid:
            return (f"foreign: its metadata names point {meta.get('point_id')!r}, not {pid!r}"
                    if meta.get("format") == POINT_FORMAT else "foreign: not a point file of the sweep store")
        return None

    def scan(self) -> StoreScan:
        """Every file of the store, classified (:class:`StoreScan`); reads each point file's footer once."""
        found = StoreScan()
        if self.points.is_dir():
            for path in sorted(self.points.iterdir()):
                if path.name.startswith(".") and path.name.endswith(".tmp"):
                    found.temporary.append(path)
                elif not _POINT_NAME.match(path.name):
                    found.foreign[path] = "foreign: not a point file name"
                else:
                    why = self._why_not(path)
                    if why is None:
                        found.done[path.stem] = path
                    else:
                        (found.damaged if why.startswith("damaged") else found.foreign)[path] = why
        if self.root.is_dir():
            for path in sorted(self.root.iterdir()):
                if path.name in ("points", "_sweep"):
                    continue
                if path.name.startswith(".") and path.name.endswith(".tmp"):
                    found.temporary.append(path)
                else:
                    found.foreign[path] = "foreign: not written by the sweep store (never read)"
        for folder in (self.failed, self.logs, self.meta):  # (the glob of a missing folder is empty)
            found.temporary += sorted(folder.glob(".*.tmp"))
        found.claimed = sorted(p.stem for p in self.claims.glob("*.claim") if C.is_claimed(p))
        return found

    # ------------------------------------------------------------------ reading

    def manifest(self) -> dict:
        path = self.meta / "manifest.json"
        return _json_file(path, "manifest") if path.is_file() else {}

    def done(self) -> set:
        """point_ids with a valid point file (in ``points/``)."""
        return {p.stem for p in self.points.glob("*.parquet") if _POINT_NAME.match(p.name) and self._why_not(p) is None}

    def failures(self) -> dict:
        """point_id → failure record of the points whose last attempt raised."""
        records = {p.stem: _json_file(p, "failure record") for p in self.failed.glob("*.json")}
        for path, record in ((self.failed / f"{pid}.json", r) for pid, r in records.items()):
            if not isinstance(record.get("error"), str):
                raise ValueError(f"{path}: damaged failure record (no error line); move it aside and run again")
        return records

    def failure_time(self, pid):
        """When point ``pid``'s failure record was written (epoch seconds), or None."""
        with contextlib.suppress(FileNotFoundError):
            return (self.failed / f"{pid}.json").stat().st_mtime
        return None

    def has(self, pid) -> bool:
        """Whether point ``pid`` has a valid point file."""
        return self._why_not(self.points / f"{pid}.parquet") is None  # (a missing file is "removed")

    def _rows(self, pid) -> pa.Table:
        path = self.points / f"{pid}.parquet"
        rows = pq.read_table(path)
        if "point_id" not in rows.column_names or pc.all(pc.equal(rows["point_id"], pid), skip_nulls=False).as_py() \
                is not True:
            raise ValueError(f"{path}: its rows do not all carry point_id {pid}; move it aside and run again")
        return _upgraded(rows)

    def table(self, ids=None) -> pd.DataFrame:
        """The tidy table of the completed points (``ids``: only those), sorted by point_id then row; the union
        of their columns, an integer or boolean column that some points lack as a nullable one (``Int64``)."""
        done = self.done()
        ids = sorted(done if ids is None else set(ids) & done)
        tables = [self._rows(pid) for pid in ids]
        if not tables:
            return pd.DataFrame()
        first = tables[0].schema
        if all(t.schema.equals(first, check_metadata=False) for t in tables):  # one experiment: one Arrow table
            return pa.concat_tables([t.replace_schema_metadata(first.metadata) for t in tables]).to_pandas()
        frames = [t.to_pandas() for t in tables]
        columns = set.intersection(*(set(f.columns) for f in frames))
        frames = [f.astype({c: {"i": "Int64", "u": "UInt64", "b": "boolean"}[f[c].dtype.kind] for c in f.columns
                            if c not in columns and f[c].dtype.kind in "iub"}) for f in frames]
        return pd.concat(frames, ignore_index=True)

    def metadata(self, pid) -> dict:
        """The key–value metadata written with point ``pid`` (its compute seconds, worker, …)."""
        meta, why = self._inspect(self.points / f"{pid}.parquet")
        return meta if why is None else {}

    def seconds(self, experiment) -> list:
        """Compute seconds of the stored points of ``experiment`` (for estimates)."""
        return [m["seconds"] for m in map(self.metadata, sorted(self.done()))
                if m.get("experiment") == experiment and "seconds" in m]
