"""The coordinator's cost per sample, and the ceiling it puts on a deployment.

Evaluation is made to cost next to nothing (a two-line program per sample, the `none`
backend), so what remains is the coordination: PostgreSQL (results, counters, events),
Redis (the broker and the channel layer), and the Celery workers' own bookkeeping. The
real stack runs on the local PostgreSQL (a database of its own) and Redis (a database of
its own), with --workers Celery processes; a run of --samples samples is uploaded, and
the servers' own counters are read before and after it:

- PostgreSQL: transactions committed, sessions opened, and rows inserted, updated and
  deleted in the run's database (`pg_stat_database`), WAL bytes written
  (`pg_current_wal_lsn`), and the CPU time of the cluster's processes (/proc: the
  postmaster, its live backends, and what its ended backends used, which the kernel adds
  to the postmaster's);
- Redis: commands by name (`INFO commandstats`), bytes received, and its CPU time;
- the workers: their CPU time.

PostgreSQL and Redis are servers of the bench's own (a cluster made by `initdb` on a
spare port, a `redis-server` on another), so that nothing else on the machine (other
databases, other clients, tests running beside it) is counted: WAL, commands and CPU
are server-wide figures. `--shared-servers` uses the machine's own instead (a database and
a Redis database of its own there), where the bench cannot start servers.

From the CPU milliseconds PostgreSQL and Redis spend per sample it prints the ceiling one
core of each would carry (1000 ÷ ms per sample), beside the samples/s measured here, where
the two cores are shared by everything.

    python bench/coordinator_bench.py [--samples 4000] [--workers 4] [--shared-servers]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psycopg  # noqa: E402
import redis  # noqa: E402

from bench.common import load_average  # noqa: E402
from bench.webapp_bench import (  # noqa: E402
    POSTGRES_ADMIN,
    services_env,
    upload,
    wait_finished,
)
from tests.webapp.services.live_stack import add_user, api  # noqa: E402
from webapp.stack import Stack, free_port, process_files, process_stats  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")


def process_cpu(pid: int, *, with_ended_children: bool = False) -> float:
    """User + system CPU seconds of one process; with what its ended (waited-for)
    children used, when asked. 0 for a process that is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    fields = stat[stat.rindex(")") + 2:].split()
    used = int(fields[11]) + int(fields[12])
    if with_ended_children:
        used += int(fields[13]) + int(fields[14])
    return used / TICKS


def cpu_seconds(match: re.Pattern[str], *, with_ended_children: bool = False) -> float:
    """User + system CPU seconds of every live process whose command line matches (and of
    their ended children, when asked)."""
    total = 0.0
    for pid, raw in process_files("cmdline"):
        if match.search(raw.replace(b"\0", b" ").decode(errors="replace")):
            total += process_cpu(pid, with_ended_children=with_ended_children)
    return total


def children(pid: int) -> list[int]:
    return [child for child, fields in process_stats() if int(fields[1]) == pid]


POSTGRES = re.compile(r"^postgres[: ]")
REDIS = re.compile(r"redis-server")
WORKERS = re.compile(r"celery -A webapp worker")


@dataclass
class Servers:
    """Where the bench's PostgreSQL and Redis are, and how to read their CPU time."""

    postgres_admin: str
    redis_url: str
    postmaster: int = 0
    """The bench's own cluster's postmaster; 0 for the shared servers (every `postgres`
    process on the machine is counted then)."""
    redis_pid: int = 0

    def postgres_cpu(self) -> float:
        if not self.postmaster:
            return cpu_seconds(POSTGRES)
        return (process_cpu(self.postmaster, with_ended_children=True)
                + sum(process_cpu(pid) for pid in children(self.postmaster)))

    def redis_cpu(self) -> float:
        return process_cpu(self.redis_pid) if self.redis_pid else cpu_seconds(REDIS)


def quiet(argv: list[str]) -> None:
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, check=True)


@contextlib.contextmanager
def own_servers() -> Iterator[Servers]:
    """A PostgreSQL cluster (`initdb`, trust authentication on 127.0.0.1 and a socket of
    its own, the server's default durability) and a Redis server, each on a spare port,
    removed at the end. As root the cluster runs as the `postgres` user, as initdb asks."""
    binaries = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
    if not binaries or shutil.which("redis-server") is None:
        raise SystemExit("PostgreSQL's initdb or redis-server is not installed: "
                         "use --shared-servers")
    bin_dir = binaries[-1].parent
    root = Path(tempfile.mkdtemp(prefix="coordinator-servers-"))
    root.chmod(0o755)
    data, sockets = root / "pg", root / "run"  # run: its socket and its log
    data.mkdir()
    sockets.mkdir()
    as_owner: list[str] = []
    if os.geteuid() == 0:
        as_owner = ["runuser", "-u", "postgres", "--"]
        shutil.chown(data, "postgres")
        shutil.chown(sockets, "postgres")
    port, redis_port = free_port(), free_port()
    redis_server = None
    try:
        quiet([*as_owner, str(bin_dir / "initdb"), "-D", str(data), "-U", "postgres",
               "-A", "trust", "-E", "UTF8", "--no-sync"])
        quiet([*as_owner, str(bin_dir / "pg_ctl"), "-D", str(data), "-w", "-l",
               str(sockets / "postgres.log"), "-o",
               f"-p {port} -k {sockets} -c listen_addresses=127.0.0.1", "start"])
        postmaster = int((data / "postmaster.pid").read_text().split()[0])
        redis_server = subprocess.Popen(
            ["redis-server", "--port", str(redis_port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no"], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        client = redis.Redis(port=redis_port)
        for _ in range(100):
            try:
                client.ping()
                break
            except redis.exceptions.ConnectionError:
                time.sleep(0.1)
        yield Servers(postgres_admin=f"postgresql://postgres@127.0.0.1:{port}/postgres",
                      redis_url=f"redis://127.0.0.1:{redis_port}/0", postmaster=postmaster,
                      redis_pid=redis_server.pid)
    finally:
        if redis_server is not None:
            redis_server.kill()
            redis_server.wait()
        subprocess.run([*as_owner, str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "fast",
                        "-w", "stop"], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
                       check=False)
        shutil.rmtree(root, ignore_errors=True)


@contextlib.contextmanager
def bench_servers(*, shared: bool, env: dict[str, str]) -> Iterator[Servers]:
    """The servers, with a fresh database and Redis database named in `env`."""
    if shared:
        with services_env(env, "services"):
            yield Servers(postgres_admin=POSTGRES_ADMIN, redis_url=env["REDIS_URL"])
        return
    with own_servers() as servers:
        with psycopg.connect(servers.postgres_admin, autocommit=True) as admin:
            admin.execute('CREATE DATABASE "coordinator"')
        env["DATABASE_URL"] = servers.postgres_admin.rsplit("/", 1)[0] + "/coordinator"
        env["REDIS_URL"] = servers.redis_url
        yield servers


def trivial_samples(path: Path, count: int) -> None:
    """`count` distinct two-line programs over HumanEval's 164 problems (distinct, so that
    neither deduplication nor the cache spares any)."""
    with path.open("w", encoding="utf-8") as out:
        for index in range(count):
            task = f"HumanEval/{index % 164}"
            out.write(json.dumps({"task_id": task,
                                  "completion": f"    return None  # {index}\n"}) + "\n")


def postgres_counters(servers: Servers, database: str) -> dict[str, float]:
    with psycopg.connect(servers.postgres_admin, autocommit=True) as admin:
        row = admin.execute(
            "SELECT xact_commit, sessions, tup_inserted, tup_updated, tup_deleted, "
            "pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0') "
            "FROM pg_stat_database WHERE datname = %s", (database,)).fetchone()
    assert row is not None
    names = ("transactions", "sessions", "rows_inserted", "rows_updated", "rows_deleted",
             "wal_bytes")
    return dict(zip(names, (float(value) for value in row), strict=True))


def redis_counters(servers: Servers) -> Counter[str]:
    client = redis.Redis.from_url(servers.redis_url)
    counts: Counter[str] = Counter()
    for name, stats in client.info("commandstats").items():
        counts[name.removeprefix("cmdstat_")] = int(stats["calls"])
    counts["bytes_in"] = int(client.info("stats")["total_net_input_bytes"])
    return counts


def snapshot(servers: Servers, database: str) -> dict[str, Any]:
    time.sleep(1.5)  # pg_stat_database is updated by each backend at most every second
    return {"postgres": postgres_counters(servers, database),
            "redis": redis_counters(servers),
            "cpu": {"postgres": servers.postgres_cpu(), "redis": servers.redis_cpu(),
                    # With what their ended children used: the programs they ran, and a
                    # pool process that was replaced.
                    "workers": cpu_seconds(WORKERS, with_ended_children=True)}}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=4000)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--timeout", type=float, default=3600.0)
    parser.add_argument("--shared-servers", action="store_true",
                        help="use the machine's PostgreSQL and Redis (their server-wide "
                             "figures then count everything else they serve)")
    return parser


def main() -> None:
    args = build_parser().parse_args()
    with tempfile.TemporaryDirectory(prefix="coordinator-") as scratch:
        work = Path(scratch)
        samples = work / "trivial.jsonl"
        trivial_samples(samples, args.samples)
        env = {"WORKBENCH_VAR_DIR": str(work / "var"), "EVALUATOR_SANDBOX": "none",
               "DJANGO_SECRET_KEY": secrets.token_urlsafe(40), "DATABASE_URL": "",
               "REDIS_URL": ""}
        with bench_servers(shared=args.shared_servers, env=env) as servers:
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
                where = "shared servers" if args.shared_servers else "servers of its own"
                print(f"{args.samples} trivial samples, {args.workers} worker processes, "
                      f"sandbox none, {where}; load average {load_average()}", flush=True)
                before = snapshot(servers, database)
                run_id = upload(stack, token, samples, "coordinator")
                polls = wait_in_database(env["DATABASE_URL"], run_id, timeout=args.timeout)
                after = snapshot(servers, database)
                # The bench's own reads are not the coordinator's: one session, one
                # transaction per poll.
                after["postgres"]["transactions"] -= polls
                after["postgres"]["sessions"] -= 1
                _, body = api(stack.url, token, f"/api/runs/{run_id}?problems=0")
            finally:
                stack.stop()
        report(args, before, after, body)


def wait_in_database(url: str, run_id: int, *, timeout: float) -> int:
    """Wait for the run's end by reading its row once a second, on one connection: polling
    the web app would add a session and its queries to every figure. The number of polls."""
    deadline = time.monotonic() + timeout
    polls = 0
    with psycopg.connect(url, autocommit=True) as connection:
        while time.monotonic() < deadline:
            polls += 1
            row = connection.execute("SELECT status FROM runs_run WHERE id = %s",
                                     (run_id,)).fetchone()
            if row is not None and row[0] in ("finished", "failed", "cancelled"):
                if row[0] != "finished":
                    raise SystemExit(f"run {run_id} ended {row[0]}")
                return polls
            time.sleep(1.0)
    raise SystemExit(f"run {run_id} did not finish within {timeout:.0f} s")


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
