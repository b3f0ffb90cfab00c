"""The sweep store: a directory of Parquet files, one per completed point, written atomically.

Layout of ``STORE/``::

    <point_id>.parquet                the rows of one completed point
    _sweep/manifest.json              every point a sweep has asked this store for: point_id → experiment, parameters
    _sweep/failed/<point_id>.json     a point that raised: experiment, parameters, seed, the error's last line
    _sweep/logs/<point_id>.log        its full traceback

``pandas.read_parquet(STORE)`` reads every point's rows (pyarrow skips names starting with ``_`` and ``.``; the
columns are those of the first file, so mix experiments or method sets in one store only if you read it with
:meth:`Store.table`, which takes the union). A point's compute time is kept in its file's key–value metadata
(``transfertheory`` key), not in its rows, so the rows are a pure function of the point.

A point's file is written under a temporary name (``.<point_id>.<pid>.<random>.tmp``, never matched by
``*.parquet``) and renamed onto its final name (``os.replace``, atomic on one filesystem): a file under its final
name is always complete, a killed writer leaves only a temporary file (removed by :meth:`Store.clean`), and two
writers of the same point (a rescheduled Dask task) leave one file. ``point_id`` is the hash of the experiment's
name, its version, the point's full parameters and the base seed (:func:`point_id`), so a changed parameter or a
new code version is a new point.
"""
from __future__ import annotations

import hashlib
import json
import os
import uuid
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

__all__ = ["Store", "point_id"]

_META = "transfertheory"


def point_id(experiment, version, point, seed) -> str:
    """16 hex digits of SHA-256 over (experiment name, version, parameters, base seed) as canonical JSON."""
    text = json.dumps([experiment, int(version), point, int(seed)], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _atomic_write(path: Path, write):
    tmp = path.parent / f".{path.stem}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp"
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


class Store:
    """The store at ``root`` (created on first write); see the module docstring."""

    def __init__(self, root):
        self.root = Path(root)
        self.points = self.root
        self.failed, self.logs = self.root / "_sweep" / "failed", self.root / "_sweep" / "logs"

    # ------------------------------------------------------------------ writing (workers)

    def write_point(self, pid, table: pd.DataFrame, metadata: dict):
        """Store the rows of point ``pid`` atomically, with ``metadata`` (JSON) in the file's key–value metadata,
        and drop its failure record, if any."""
        self.points.mkdir(parents=True, exist_ok=True)
        arrow = pa.Table.from_pandas(table, preserve_index=False)
        arrow = arrow.replace_schema_metadata({**(arrow.schema.metadata or {}), _META: json.dumps(metadata)})
        _atomic_write(self.points / f"{pid}.parquet", lambda tmp: pq.write_table(arrow, tmp))
        (self.failed / f"{pid}.json").unlink(missing_ok=True)

    def write_failure(self, pid, record: dict, traceback_text: str):
        """Record that point ``pid`` raised: ``record`` as JSON, the traceback in ``logs/``."""
        self.failed.mkdir(parents=True, exist_ok=True)
        self.logs.mkdir(parents=True, exist_ok=True)
        log = self.logs / f"{pid}.log"
        _atomic_write(log, lambda tmp: tmp.write_text(traceback_text, encoding="utf-8"))
        body = json.dumps({**record, "log": str(log)}, indent=1, default=str)
        _atomic_write(self.failed / f"{pid}.json", lambda tmp: tmp.write_text(body, encoding="utf-8"))

    def add_to_manifest(self, entries: dict):
        """Merge ``entries`` (point_id → description) into ``manifest.json`` (written by the client only)."""
        self.failed.parent.mkdir(parents=True, exist_ok=True)
        manifest = {**self.manifest(), **entries}
        body = json.dumps(manifest, sort_keys=True, default=str)
        _atomic_write(self.failed.parent / "manifest.json", lambda tmp: tmp.write_text(body, encoding="utf-8"))

    def clean(self) -> int:
        """Remove the temporary files of killed writers; how many."""
        stale = [p for folder in (self.points, self.failed, self.logs) if folder.is_dir() for p in folder.glob(".*.tmp")]
        for path in stale:
            path.unlink(missing_ok=True)
        return len(stale)

    # ------------------------------------------------------------------ reading

    def manifest(self) -> dict:
        path = self.failed.parent / "manifest.json"
        return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}

    def done(self) -> set:
        """point_ids with a completed file."""
        return {p.stem for p in self.points.glob("*.parquet")} if self.points.is_dir() else set()

    def failures(self) -> dict:
        """point_id → failure record of the points whose last attempt raised."""
        if not self.failed.is_dir():
            return {}
        return {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in self.failed.glob("*.json")}

    def has(self, pid) -> bool:
        return (self.points / f"{pid}.parquet").is_file()

    def table(self, ids=None) -> pd.DataFrame:
        """The tidy table of the completed points (``ids``: only those), sorted by point_id then row."""
        ids = sorted(self.done() if ids is None else set(ids) & self.done())
        frames = [pd.read_parquet(self.points / f"{pid}.parquet") for pid in ids]
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    def metadata(self, pid) -> dict:
        """The key–value metadata written with point ``pid`` (its compute seconds, worker, …)."""
        meta = pq.read_schema(self.points / f"{pid}.parquet").metadata or {}
        return json.loads(meta.get(_META.encode(), b"{}"))

    def seconds(self, experiment) -> list:
        """Compute seconds of the stored points of ``experiment`` (for estimates)."""
        return [m["seconds"] for m in map(self.metadata, sorted(self.done()))
                if m.get("experiment") == experiment and "seconds" in m]
