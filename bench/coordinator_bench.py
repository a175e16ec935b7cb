"""The coordinator's cost per sample, and the ceiling it puts on a deployment.

Evaluation is made to cost next to nothing (a two-line program per sample, the `none`
backend), so what remains is the coordination: PostgreSQL (results, counters, events),
Redis (the broker and the channel layer), and the Celery workers' own bookkeeping. The
real stack runs on the local PostgreSQL (a database of its own) and Redis (a database of
its own), with --workers Celery processes; a run of --samples samples is uploaded, and
the servers' own counters are read before and after it:

- PostgreSQL: transactions committed and rows inserted/updated/deleted in the run's
  database (`pg_stat_database`), WAL bytes written (`pg_current_wal_lsn`), and the CPU
  time of every `postgres` process (/proc);
- Redis: commands by name (`INFO commandstats`), bytes received, and its CPU time;
- the workers: their CPU time.

From the CPU milliseconds PostgreSQL and Redis spend per sample it prints the ceiling one
core of each would carry (1000 ÷ ms per sample), beside the samples/s measured here, where
the two cores are shared by everything.

    python bench/coordinator_bench.py [--samples 4000] [--workers 4]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import sys
import tempfile
import time
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psycopg  # noqa: E402
import redis  # noqa: E402

from bench.common import load_average  # noqa: E402
from bench.webapp_bench import (  # noqa: E402
    POSTGRES_ADMIN,
    REDIS_URL,
    services_env,
    upload,
    wait_finished,
)
from tests.webapp.services.live_stack import add_user, api  # noqa: E402
from webapp.stack import Stack, free_port  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(match: re.Pattern[str]) -> float:
    """User + system CPU seconds of every live process whose command line matches."""
    total = 0.0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            raw = (entry / "cmdline").read_bytes()
            command = raw.replace(b"\0", b" ").decode(errors="replace")
            if not match.search(command):
                continue
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        total += (int(fields[11]) + int(fields[12])) / TICKS
    return total


POSTGRES = re.compile(r"^postgres[: ]")
REDIS = re.compile(r"redis-server")
WORKERS = re.compile(r"celery -A webapp worker")


def trivial_samples(path: Path, count: int) -> None:
    """`count` distinct two-line programs over HumanEval's 164 problems (distinct, so that
    neither deduplication nor the cache spares any)."""
    with path.open("w", encoding="utf-8") as out:
        for index in range(count):
            task = f"HumanEval/{index % 164}"
            out.write(json.dumps({"task_id": task,
                                  "completion": f"    return None  # {index}\n"}) + "\n")


def postgres_counters(database: str) -> dict[str, float]:
    with psycopg.connect(POSTGRES_ADMIN, autocommit=True) as admin:
        row = admin.execute(
            "SELECT xact_commit, tup_inserted, tup_updated, tup_deleted, "
            "pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0') "
            "FROM pg_stat_database WHERE datname = %s", (database,)).fetchone()
    assert row is not None
    names = ("transactions", "rows_inserted", "rows_updated", "rows_deleted", "wal_bytes")
    return dict(zip(names, (float(value) for value in row), strict=True))


def redis_counters() -> Counter[str]:
    client = redis.Redis.from_url(REDIS_URL)
    counts: Counter[str] = Counter()
    for name, stats in client.info("commandstats").items():
        counts[name.removeprefix("cmdstat_")] = int(stats["calls"])
    counts["bytes_in"] = int(client.info("stats")["total_net_input_bytes"])
    return counts


def snapshot(database: str) -> dict[str, Any]:
    time.sleep(1.5)  # pg_stat_database is updated by each backend at most every second
    return {"postgres": postgres_counters(database), "redis": redis_counters(),
            "cpu": {"postgres": cpu_seconds(POSTGRES), "redis": cpu_seconds(REDIS),
                    "workers": cpu_seconds(WORKERS)}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=4000)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--timeout", type=float, default=3600.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="coordinator-") as scratch:
        work = Path(scratch)
        samples = work / "trivial.jsonl"
        trivial_samples(samples, args.samples)
        env = {"WORKBENCH_VAR_DIR": str(work / "var"), "EVALUATOR_SANDBOX": "none",
               "DJANGO_SECRET_KEY": secrets.token_urlsafe(40), "DATABASE_URL": "",
               "REDIS_URL": ""}
        with services_env(env, "services"):
            database = env["DATABASE_URL"].rsplit("/", 1)[1]
            stack = Stack(env=env, port=free_port(), concurrency=args.workers,
                          log_dir=work / "logs")
            try:
                stack.prepare(static=False)
                token = add_user(stack, "bench", "bench-password-123")
                stack.start()
                warm = work / "warm.jsonl"
                trivial_samples(warm, 4)
                wait_finished(stack, token, [upload(stack, token, warm, "warm-up")],
                              timeout=args.timeout)
                print(f"{args.samples} trivial samples, {args.workers} worker processes, "
                      f"sandbox none; load average {load_average()}", flush=True)
                before = snapshot(database)
                run_id = upload(stack, token, samples, "coordinator")
                wait_finished(stack, token, [run_id], timeout=args.timeout)
                after = snapshot(database)
                _, body = api(stack.url, token, f"/api/runs/{run_id}?problems=0")
            finally:
                stack.stop()
        report(args, before, after, body)


def report(args: argparse.Namespace, before: dict[str, Any], after: dict[str, Any],
           body: dict[str, Any]) -> None:
    n = args.samples
    started = datetime.fromisoformat(body["started_at"])
    finished = datetime.fromisoformat(body["finished_at"])
    seconds = (finished - started).total_seconds()
    print(f"evaluated in {seconds:.1f} s (started → finished, by the database): "
          f"{n / seconds:.0f} samples/s here; load average {load_average()}")
    print("per sample:")
    for name, value in after["postgres"].items():
        print(f"  postgres {name:<14} {(value - before['postgres'][name]) / n:10.2f}")
    commands = after["redis"] - before["redis"]
    received = commands.pop("bytes_in", 0)
    busiest = ", ".join(f"{name} {calls / n:.2f}" for name, calls in commands.most_common(8))
    print(f"  redis    commands       {sum(commands.values()) / n:10.2f}  ({busiest})")
    print(f"  redis    bytes in       {received / n:10.0f}")
    print("CPU ms per sample, and the samples/s one core of it would carry:")
    for name in ("postgres", "redis", "workers"):
        ms = (after["cpu"][name] - before["cpu"][name]) * 1000 / n
        ceiling = f"{1000 / ms:8.0f} samples/s per core" if ms > 0 else ""
        print(f"  {name:<9} {ms:8.2f} ms  {ceiling}")


if __name__ == "__main__":
    main()
