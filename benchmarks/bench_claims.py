"""CPU time of every claim of a ``verify`` profile, one claim after another in this process (one BLAS thread).

``verify --json`` records each claim's wall time, which on a machine shared with other jobs measures the others'
load as much as the claim; this script records the process CPU time (:func:`time.process_time`) of
``transfertheory.claims.run`` for each claim, with its status, wall time and point count, prints the most expensive
first with the total and the machine line (cores, load average), and writes the rows to ``--csv``. The claims' own
seeds are used, so the statuses are those of ``verify`` at the profile.

    python benchmarks/bench_claims.py --profile quick --top 15 --csv claims_cpu.csv
    python benchmarks/bench_claims.py -k faf.relu.sim      # a subset (verify's -k pattern)
"""
from __future__ import annotations

import argparse
import csv
import os
import platform
import time

from transfertheory import cli_support
from transfertheory import claims
from transfertheory.threads import SERIAL_THREADS, blas_threads


def machine_line() -> str:
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return (f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, load average {load}, "
            f"{SERIAL_THREADS} BLAS thread, {time.strftime('%Y-%m-%d %H:%M:%S %Z')}")


def measure(claim_ids, profile):
    """One row per claim: id, status, CPU seconds, wall seconds, points."""
    rows = []
    for claim_id in claim_ids:
        cpu, wall = time.process_time(), time.perf_counter()
        outcome = claims.run(claim_id, profile)
        rows.append(dict(claim=claim_id, status=outcome.status, cpu_s=round(time.process_time() - cpu, 3),
                         wall_s=round(time.perf_counter() - wall, 3), points=len(outcome.points)))
        print(f"  {rows[-1]['cpu_s']:8.2f} s CPU  {rows[-1]['wall_s']:8.2f} s wall  {outcome.status:14s} {claim_id}",
              flush=True)
    return rows


@cli_support.entry_point  # Ctrl-C, SIGTERM: one line and 128 + the signal
def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", default="quick", help="verify's size profile (default quick)")
    parser.add_argument("-k", dest="pattern", default=None, help="only the claims verify -k PATTERN selects")
    parser.add_argument("--top", type=int, default=15, help="rows of the summary, most expensive first (default 15)")
    parser.add_argument("--csv", default=None, help="write every claim's row here")
    args = parser.parse_args(argv)
    ids = [claim.id for claim in claims.select(args.pattern, profile=args.profile)]
    if not ids:
        parser.error(f"no claim matches -k {args.pattern!r} in profile {args.profile}")
    print(f"machine: {machine_line()}")
    with blas_threads(SERIAL_THREADS):
        rows = measure(ids, args.profile)
    print(f"machine after: {machine_line()}")
    total = sum(r["cpu_s"] for r in rows)
    print(f"\n{len(rows)} claims ({args.profile}): {total:.1f} s CPU in total; the {min(args.top, len(rows))} most "
          f"expensive:")
    for r in sorted(rows, key=lambda r: -r["cpu_s"])[:args.top]:
        print(f"| {r['claim']} | {r['cpu_s']:.2f} | {r['status']} |")
    if args.csv:
        with open(args.csv, "w", newline="", encoding="utf-8") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
