#!/usr/bin/env python3
"""Grows a history that `ridge history import` made to RUNS runs by copying its runs in SQL.

    history_scale_db.py DB RUNS

The first N runs (ids 1..N, as import numbered them) are copied until the file holds RUNS runs:
copy k of run i is commit "r<k>-<commit>", N*k minutes later, with a new content hash and every
sample times a uniform factor in [0.99, 1.01]. Importing 10,000 runs of 100 records through the CLI
takes about 10 CPU-minutes; this takes about a minute, and the file is what import would have
written (same tables, same record JSON; each record's samples as one records.samples_ms BLOB of
little-endian float64, each copy's jittered).
Schema version 2 only (ridge's history_schema_version). Only for the scale benchmark
(bench/history_scale.sh).
"""
import random
import sqlite3
import struct
import sys


def jitter(blob):
    """The samples of one records.samples_ms BLOB, each times its own factor in [0.99, 1.01]."""
    n = len(blob) // 8
    values = struct.unpack(f"<{n}d", blob)
    return struct.pack(f"<{n}d", *(v * (1 + 0.01 * (2 * random.random() - 1)) for v in values))


def main():
    db, target = sys.argv[1], int(sys.argv[2])
    c = sqlite3.connect(db)
    version = c.execute("PRAGMA user_version").fetchone()[0]
    if version != 2:
        sys.exit(f"{db}: schema version {version}; this script copies version 2 files (records, record_json)")
    c.create_function("jitter", 1, jitter, deterministic=False)
    n = c.execute("SELECT count(*) FROM runs").fetchone()[0]
    if c.execute("SELECT max(id) FROM runs").fetchone()[0] != n:
        sys.exit(f"{db}: run ids are not 1..{n}; start from a fresh import")
    records = c.execute("SELECT count(*) FROM records").fetchone()[0]
    if c.execute("SELECT max(id) FROM records").fetchone()[0] != records:
        sys.exit(f"{db}: record ids are not 1..{records}; start from a fresh import")
    copy = 1
    while n * (copy + 1) <= target:
        with c:
            c.execute(
                "INSERT INTO runs (id, content_hash, commit_sha, branch, run_time_utc, added_utc, machine, gpu, gpu_uuid, "
                "driver_version, ridge_version, ridge_build, source, context_json) "
                "SELECT id + ?1 * ?2, printf('%016x', random() & 0x7fffffffffffffff), 'r' || ?1 || '-' || commit_sha, branch, "
                "strftime('%Y-%m-%dT%H:%M:%SZ', run_time_utc, '+' || (?1 * ?2) || ' minutes'), added_utc, machine, gpu, "
                "gpu_uuid, driver_version, ridge_version, ridge_build, source, context_json FROM runs WHERE id <= ?2",
                (copy, n))
            c.execute(
                "INSERT INTO records (id, run_id, position, name, method, dtype, params_json, verification, "
                "gate_informational, gate_min_threshold, median_ms, sm_mhz_start, sm_mhz_end, samples_ms, extra_json) "
                "SELECT id + ?1 * ?3, run_id + ?1 * ?2, position, name, method, dtype, params_json, verification, "
                "gate_informational, gate_min_threshold, median_ms, sm_mhz_start, sm_mhz_end, jitter(samples_ms), "
                "extra_json FROM records WHERE id <= ?3",
                (copy, n, records))
            c.execute(
                "INSERT INTO record_json (record_id, record_json) SELECT record_id + ?1 * ?2, record_json "
                "FROM record_json WHERE record_id <= ?2",
                (copy, records))
        copy += 1
    print(f"{db}: {c.execute('SELECT count(*) FROM runs').fetchone()[0]} runs")


if __name__ == "__main__":
    main()
