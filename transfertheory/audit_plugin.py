r"""The claims as pytest tests, and the audit table: the pytest plugin behind ``python -m transfertheory.verify``.

Every claim of the registry (:mod:`transfertheory.claims`) in the selected size profile is one test: a
:class:`ClaimItem` that runs the claim at all its points (:func:`transfertheory.claims.run`) and fails when its status
is unexpected (FAIL, UNEXPECTED-PASS, ERROR; a KNOWN-ERRATUM claim passes when the erratum is demonstrated). A test
module asks for them with one line, ``test_claims = ClaimTests()`` (``tests/claims/test_claims.py`` does; so does this
module, which ``verify`` collects); the items carry the marker ``theorem`` (and ``slow`` for a slow claim), the
claim's source and method as keywords (``-k ridge``), and the mark ``xdist_group`` of a shared computation
(``--dist loadgroup`` runs the claims that share one in the same worker).

Each item reports its claim's audit record (:func:`~transfertheory.audit_table.outcome_record`) and notes in its
``user_properties``, so that they reach the controlling process under pytest-xdist. With ``--audit`` the plugin
prints the audit table there — the header once the claims are collected, each row as soon as the claim and those
before it have finished, the notes and the totals at the end — and ``--audit-json`` / ``--audit-csv`` write the
records (the docs site reads the JSON). Options (group "claims audit"): ``--claims-profile``, ``--claims-explore N``
(with hypothesis's own ``--hypothesis-seed``), ``--claims-backend``, ``--claims-glob``, and ``--claims-store`` /
``--claims-scheduler`` / ``--claims-engine-workers`` (the sampling claims' points through the sweep engine,
:mod:`transfertheory.claims.sweep_points`, before the tests run). See docs/verify.md.
"""
from __future__ import annotations

import contextlib
import fnmatch
import json
import os
import random
import sys
import time
from dataclasses import replace

import pytest

from . import audit_table, cli_support, threads
from .params import PROFILE_NAMES

__all__ = ["ClaimTests", "ClaimItem", "ClaimFailure", "RECORD", "NOTES"]

#: names of the user properties that carry a claim's audit record and its note lines
RECORD, NOTES = "claim_record", "claim_notes"
#: with worker processes, the claims start by kind: simulations (the longest, 1.5 s on average in the quick
#: audit), then Monte Carlo, then closed forms, so that the longest do not start last (docs/benchmarks.md)
KIND_START_RANK = {"simulation": 0, "monte-carlo": 1, "exact": 2, "external": 2}


class ClaimTests:
    """Put ``test_claims = ClaimTests()`` in a test module: pytest collects one :class:`ClaimItem` per claim."""


class ClaimFailure(Exception):
    """A claim's status is unexpected (its message: the status, the expected one and why)."""


def pytest_addoption(parser):
    group = parser.getgroup("claims", "claims audit (transfertheory.claims; docs/verify.md)")
    group.addoption("--claims-profile", choices=PROFILE_NAMES, default="quick",
                    help="size profile of the claim tests (default quick)")
    group.addoption("--claims-explore", type=int, default=0, metavar="N",
                    help="check each claim with a strategy at N fresh random points (seed: --hypothesis-seed)")
    group.addoption("--claims-backend", default=None, metavar="NAME", help="array backend of the simulation claims")
    group.addoption("--claims-glob", default=None, metavar="GLOB", help="only claims whose id matches GLOB")
    group.addoption("--claims-store", default=None, metavar="DIR",
                    help="sampling claims' points through the sweep engine, stored in DIR (no xdist workers)")
    group.addoption("--claims-scheduler", default=None, metavar="ADDRESS", help="the engine's Dask cluster")
    group.addoption("--claims-engine-workers", type=int, default=None, metavar="N", help="the engine's processes")
    group.addoption("--audit", action="store_true", help="print the audit table of the claim tests")
    group.addoption("--audit-json", default=None, metavar="PATH", help="write the claims' audit records as JSON")
    group.addoption("--audit-csv", default=None, metavar="PATH", help="write the claims' audit records as CSV")
    group.addoption("--audit-width", type=int, default=None, metavar="COLUMNS", help="width of the audit table")
    group.addoption("--audit-progress", choices=("none", "lines", "bar"), default="none",
                    help="progress of the audit: none, a line before each claim, or a bar on stderr")


def _is_worker(config) -> bool:
    return hasattr(config, "workerinput")


def pytest_configure(config):
    for line in ("theorem: a paper's claim, generated from the claims registry (transfertheory.claims)",
                 "slow: paper-sized or long-running checks", "xdist_group(name): run in the same xdist worker"):
        config.addinivalue_line("markers", line)
    if config.getoption("claims_explore") < 0:
        raise pytest.UsageError(f"--claims-explore must be >= 0, got {config.getoption('claims_explore')}")
    _quiet_dropped_interrupts(config)
    seed = config.getoption("hypothesis_seed", None)
    if _is_worker(config) and seed is None:  # the seed the controller drew (pytest_configure_node)
        seed = config.option.hypothesis_seed = config.workerinput.get("hypothesis_seed")
    if config.getoption("claims_explore") and seed is None and not _is_worker(config):
        # one seed for the run, handed to the workers, printed so that it can be repeated
        config.option.hypothesis_seed = str(random.SystemRandom().randrange(2**32))
    elif config.getoption("claims_explore") and not str(seed).isdigit():
        raise pytest.UsageError(f"--hypothesis-seed must be an integer >= 0 with --claims-explore, got {seed!r}")
    if not _is_worker(config) and (config.getoption("audit") or config.getoption("audit_json")
                                   or config.getoption("audit_csv")):
        config.pluginmanager.register(AuditReport(config), "transfertheory-audit-report")


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """pytest-xdist: each worker gets the run's ``--hypothesis-seed`` (a worker parses the command line again, so a
    seed drawn by the controller for ``--claims-explore`` would not reach it otherwise)."""
    node.workerinput["hypothesis_seed"] = node.config.getoption("hypothesis_seed", None)


def _profile(config):
    from . import claims

    profile = claims.get_profile(config.getoption("claims_profile"))
    backend = config.getoption("claims_backend")
    return profile if backend is None else replace(profile, backend=backend)


def _explore(config):
    """(points per claim, seed) of ``--claims-explore``; (0, None) for the profile's fixed points."""
    count = config.getoption("claims_explore")
    return (count, int(config.getoption("hypothesis_seed"))) if count else (0, None)


def _quiet_dropped_interrupts(config):
    """In an audit's xdist worker, a Ctrl-C that Python drops (raised in a garbage-collector callback, e.g.
    hypothesis's) is not printed: the parent, interrupted too, stops the workers and prints the one line."""
    if not (_is_worker(config) and config.getoption("audit")):
        return
    previous = sys.unraisablehook

    def hook(unraisable):
        if not issubclass(unraisable.exc_type, KeyboardInterrupt):
            previous(unraisable)

    sys.unraisablehook = hook


def _worker_threads(config):
    """In an audit's xdist worker, the BLAS threads of one of N workers (⌊cores / N⌋, :mod:`transfertheory.threads`);
    elsewhere the process's own setting (a command line's, or the test suite's)."""
    if not (_is_worker(config) and config.getoption("audit")):
        return contextlib.nullcontext()
    return threads.blas_threads(threads.threads_per_worker(config.workerinput["workercount"]))


def pytest_pycollect_makeitem(collector, name, obj):
    if isinstance(obj, ClaimTests):
        return ClaimCollector.from_parent(collector, name=name)
    return None


class ClaimCollector(pytest.Collector):
    """The claims of the profile, in the registry's order, one :class:`ClaimItem` each."""

    def collect(self):
        from . import claims

        profile, glob = self.config.getoption("claims_profile"), self.config.getoption("claims_glob")
        for claim in claims.select(profile=profile):
            if glob is None or fnmatch.fnmatchcase(claim.id, glob):
                yield ClaimItem.from_parent(self, name=claim.id, claim_id=claim.id)


class ClaimItem(pytest.Item):
    """One claim: passes when its status is the expected one."""

    def __init__(self, *, claim_id, **kwargs):
        super().__init__(**kwargs)
        from . import claims

        claim = claims.get_claim(claim_id)
        self.claim_id = claim_id
        self.add_marker(pytest.mark.theorem)
        if claim.slow:
            self.add_marker(pytest.mark.slow)
        if claim.shares is not None:
            self.add_marker(pytest.mark.xdist_group(claim.shares))
        self.extra_keyword_matches.update(filter(None, (claim.source, claim.method)))

    def runtest(self):
        """Run the claim (or read its outcome from the sweep engine's store), report its record, fail if unexpected."""
        from . import claims

        config = self.config
        profile = _profile(config)
        outcome = config.stash.get(_STORED, {}).get(self.claim_id)
        if outcome is None:
            count, seed = _explore(config)
            with _worker_threads(config):
                outcome = claims.run(self.claim_id, profile, explore=count, seed=seed)
        record = json.loads(json.dumps(audit_table.outcome_record(outcome)))  # plain types: through xdist
        width = config.getoption("audit_width") or audit_table.table_width()
        self.user_properties += [(RECORD, record), (NOTES, audit_table.format_notes(outcome, profile.name, width))]
        if outcome.unexpected:
            claim = outcome.claim
            raise ClaimFailure(f"{claim.id} ({claim.source}): {outcome.status}, expected {claim.expected} — "
                               f"{record['detail']}" + (f"\nreproduce: {record['example']}" if record["example"] else ""))

    def repr_failure(self, excinfo, style=None):
        """An unexpected status as its one message; anything else as pytest reports it."""
        if isinstance(excinfo.value, ClaimFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style)

    def reportinfo(self):
        """Where the test is: the module that holds ``ClaimTests()``, and the claim."""
        return self.path, None, f"claim {self.claim_id}"


def pytest_collection_modifyitems(config, items):
    """With worker processes, the simulation claims first (:data:`KIND_START_RANK`); the table keeps the registry's
    order."""
    if config.getoption("numprocesses", None):
        items.sort(key=_start_rank)


def _start_rank(item) -> int:
    """:data:`KIND_START_RANK` of a claim test's claim; -1 (first) for any other test."""
    from . import claims

    claim_id = getattr(item, "claim_id", None)
    return -1 if claim_id is None else KIND_START_RANK[claims.get_claim(claim_id).kind]


_STORED = pytest.StashKey[dict]()


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session):
    """``--claims-store``: the sampling claims' outcomes from the sweep engine, before any test runs."""
    config = session.config
    store = config.getoption("claims_store")
    if store is None or _is_worker(config) or config.option.collectonly:
        return
    if config.getoption("numprocesses", None):
        raise pytest.UsageError("--claims-store runs the points on the sweep engine's workers: not with -n")
    from .claims import sweep_points
    from .sweep.runner import SweepRunner

    chosen = [item.claim_id for item in session.items if isinstance(item, ClaimItem)]
    sampling = [sweep_points.get_claim(claim_id) for claim_id in chosen if sweep_points.through_engine(claim_id)]
    _emit(config, f"{len(sampling)} simulation and Monte Carlo claims through the sweep engine, store {store} "
                  f"(resumable; the other {len(chosen) - len(sampling)} in this process)")
    profile = _profile(config)
    runner = SweepRunner(store, workers=config.getoption("claims_engine_workers"),
                         scheduler=config.getoption("claims_scheduler"), backend=config.getoption("claims_backend"),
                         progress=config.getoption("audit_progress") == "bar")
    with _output(config):
        config.stash[_STORED] = sweep_points.run_claims(sampling, profile, runner)


def _output(config):
    """A context in which what is printed reaches the terminal (pytest's capture suspended, where it runs)."""
    capture = config.pluginmanager.getplugin("capturemanager")
    return capture.global_and_fixture_disabled() if capture is not None else contextlib.nullcontext()


#: set when stdout was closed by its reader (``verify | head``): the audit stops, silently (``verify`` exits 141)
STDOUT_CLOSED = pytest.StashKey[bool]()


def _emit(config, text, bar=None):
    """Print ``text`` on stdout now (above the progress bar, if one is shown). When the reader of stdout has gone, the
    run stops as on Ctrl-C, with stdout sent to the null device (so that the interpreter's last flush is silent)."""
    reporter = config.pluginmanager.getplugin("terminalreporter")  # under plain pytest: a line of its own
    if reporter is not None:
        reporter.ensure_newline()
    with _output(config):
        try:
            if bar is not None:
                bar.write(text, file=sys.stdout)
            else:
                print(text)
            sys.stdout.flush()
        except BrokenPipeError:
            config.stash[STDOUT_CLOSED] = True
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            raise KeyboardInterrupt from None


def _claim_id(nodeid) -> str:
    """The claim id of a claim test's node id (xdist appends ``@group`` to a grouped test's)."""
    return nodeid.split("::")[-1].split("@")[0]


class AuditReport:
    """The audit in the controlling process: table rows in the registry's order as the claims finish, the notes,
    the totals, and the JSON / CSV records."""

    def __init__(self, config):
        self.config = config
        self.print_table = config.getoption("audit")
        self.width = config.getoption("audit_width") or audit_table.table_width()
        self.ids, self.records, self.notes, self.next = None, {}, {}, 0
        self.table, self.bar, self.interrupted = None, None, False
        self.start = time.perf_counter()  # (the totals' time: with --claims-store, the engine's run included)

    def _begin(self, nodeids):
        if self.ids is not None:
            return
        self.ids = [_claim_id(n) for n in nodeids if "::" in n]
        if not self.print_table or not self.ids or self.config.option.collectonly:
            return
        count, seed = _explore(self.config)
        if count:
            _emit(self.config, f"exploring {count} random points per claim with a strategy, seed {seed} "
                               f"(repeat with --explore {count} --seed {seed})")
        if self.config.getoption("audit_progress") == "bar":
            from tqdm.auto import tqdm

            self.bar = tqdm(total=len(self.ids), desc=f"verify --{self.config.getoption('claims_profile')}",
                            unit="claim", file=sys.stderr, leave=False)
        self.table = audit_table.AuditTable(self.ids, self.width)
        self._print(self.table.header())
        self._progress()

    def _print(self, text):
        _emit(self.config, text, self.bar)

    def _progress(self):
        if self.next < len(self.ids) and self.config.getoption("audit_progress") == "lines":
            self._print(f"[{self.next + 1}/{len(self.ids)}] {self.ids[self.next]} …")  # before the claim runs
        if self.bar is not None and self.next < len(self.ids):
            self.bar.set_postfix_str(self.ids[self.next])

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session):
        if self.config.option.collectonly and self.print_table:
            from . import claims

            chosen = [claims.get_claim(item.claim_id) for item in session.items if isinstance(item, ClaimItem)]
            if chosen:
                _emit(self.config, audit_table.format_listing(chosen, self.width))
        self._begin([item.nodeid for item in session.items if isinstance(item, ClaimItem)])

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node, ids):
        self._begin(ids)

    def pytest_runtest_logreport(self, report):
        properties = dict(report.user_properties)
        claim_id = _claim_id(report.nodeid)
        if RECORD in properties:
            self.records[claim_id], self.notes[claim_id] = properties[RECORD], properties[NOTES]
        elif report.failed and claim_id not in self.records and self.ids is not None and claim_id in self.ids:
            self.records[claim_id], self.notes[claim_id] = _error_record(self.config, claim_id, report), []
        while self.ids is not None and self.next < len(self.ids) and self.ids[self.next] in self.records:
            if self.table is not None:
                self._print(self.table.row(self.records[self.ids[self.next]]))
            self.next += 1
            if self.bar is not None:
                self.bar.update()
            self._progress()

    def pytest_keyboard_interrupt(self, excinfo):
        self.interrupted = True

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session, exitstatus):
        if self.bar is not None:
            self.bar.close()
        if self.interrupted or not self.ids or self.config.option.collectonly:
            return
        records = [self.records[claim_id] for claim_id in self.ids if claim_id in self.records]
        if self.table is not None:
            for claim_id in self.ids:
                for line in self.notes.get(claim_id, ()):
                    _emit(self.config, line)
            _emit(self.config, _totals_line(records, self.config.getoption("claims_profile"),
                                            time.perf_counter() - self.start))
        try:
            _write(records, self.config.getoption("audit_json"), self.config.getoption("audit_csv"))
        except OSError as err:
            print(f"error: cannot write the report: {err}", file=sys.stderr)
            self.config.stash[WRITE_FAILED] = True


#: set when the JSON or CSV report could not be written (``verify`` exits 3)
WRITE_FAILED = pytest.StashKey[bool]()


def _error_record(config, claim_id, report):
    """The record of a claim test that failed without reporting its outcome (an error outside the check)."""
    from . import claims

    why = (report.longreprtext.strip().splitlines() or ["the test failed outside the check"])[-1]
    error = claims.PointOutcome({}, claims.ERROR, None, report.duration, why)
    outcome = claims.judge(claim_id, config.getoption("claims_profile"), (error,), report.duration)
    return json.loads(json.dumps(audit_table.outcome_record(outcome), default=str))


def _totals_line(records, profile, elapsed) -> str:
    """The audit's last line, after a blank one: "101 claims (quick): 93 PASS, 8 KNOWN-ERRATUM; 229 points in 40.0 s"
    (a status no claim has is left out, but PASS and KNOWN-ERRATUM)."""
    from .claims import KNOWN_ERRATUM, PASS, STATUSES

    counts = {s: sum(r["status"] == s for r in records) for s in STATUSES}
    return (f"\n{len(records)} claims ({profile}): "
            + ", ".join(f"{counts[s]} {s}" for s in STATUSES if counts[s] or s in (PASS, KNOWN_ERRATUM))
            + f"; {sum(r['points'] for r in records)} points in {elapsed:.1f} s")


def _write(records, json_path, csv_path):
    """The records as JSON (a list of objects) and CSV (one row each, ``params`` as JSON), written atomically."""
    with cli_support.staged_files() as stage:
        if json_path:
            stage(json_path).write_text(json.dumps(records, indent=1, ensure_ascii=False), encoding="utf-8")
        if csv_path:
            import pandas as pd

            table = pd.DataFrame(records, columns=list(records[0]) if records else list(audit_table.COLUMNS))
            table["params"] = [json.dumps(r["params"]) for r in records]
            table.to_csv(stage(csv_path), index=False, lineterminator="\r\n")


#: verify collects the claims from this module
test_claims = ClaimTests()
