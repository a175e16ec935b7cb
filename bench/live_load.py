"""The production stack under live load: many websocket viewers, concurrent uploads, and
the heaviest run page, on PostgreSQL + Redis with real processes.

It creates a PostgreSQL database of its own on the local server and starts a Redis server
of its own on a spare port, then uvicorn, a Celery worker (`--concurrency 2`) and Celery
beat, as production runs them. Then, one part at a time, with the load average before and
after each:

1. viewers: a new run of --samples (10 per task: canonical, wrong and raising
   completions, all distinct); once --join-at of it is done (a busy run), N `LiveViewer`s
   (one signed-in session) open its page's socket at once, as pages do (no `after`: a
   snapshot first). Each must get the snapshot, then every durable event after it once,
   without a gap, up to `run_finished`. Reports the latency from opening the socket to the
   snapshot, and from the run's end (`finished_at` in the database, set once its scores
   are stored) to each viewer's `run_finished`, p50/p95/max with the load average; the
   same from the last sample stored (the scoring included); reconnections, and the delay
   from a sample's `finished_at` to a viewer receiving its event;
2. uploads: 10 threads send `POST /api/runs` at once (a barrier), a distinct 164-sample
   file each; every answer must be 201; then the time until the last run has finished;
3. page: the run page, `GET /api/runs/<id>` and `/runs/<id>/samples/` of the biggest run
   (CodeGen-16B's 16,400 samples from ../shared/generations/codegen-16b-n100, evaluated
   first; else the run of part 1), 30 sequential requests each over loopback.

    python bench/live_load.py [--parts viewers,uploads,page] [--viewers 50] [--samples 1000]
                              [--join-at 0.1]
                              [--sandbox auto|none|bwrap|gvisor] [--big-samples N]
                              [--timeout 7200] [--keep]

The stack's logs are under a temporary folder, removed at the end unless --keep; they are
searched for tracebacks and errors before that, and the summary is printed.
"""

from __future__ import annotations

import argparse
import gzip
import http.client
import json
import math
import os
import re
import secrets
import shutil
import signal
import sys
import tempfile
import threading
import time
import urllib.parse
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import pytest  # noqa: E402  (real_services reports a missing server with pytest.skip)

from bench.common import load_average, shared_dir, stop_services  # noqa: E402
from evaluator.datasets import load_dataset  # noqa: E402
from evaluator.records import Problem  # noqa: E402
from tests.webapp.services.live_stack import Browser, LiveViewer, add_user, api  # noqa: E402
from tests.webapp.services.real_services import (  # noqa: E402
    PostgresDatabase,
    RedisServer,
    services_stack,
)
from webapp.stack import ALL_QUEUES, Stack  # noqa: E402

PASSWORD = "live-load-password-123"
DATASET = "humaneval/python/en"
CHUNK_SAMPLES = 25  # the product's default (services_stack's own is a test value)
SAMPLES_PER_TASK = 10
CONCURRENT_UPLOADS = 10
PAGE_REPEATS = 30
# Six canonical, two wrong, two raising in every ten, shifted from one task to the next.
KINDS = ("canonical",) * 6 + ("wrong",) * 2 + ("raising",) * 2


# -- what is uploaded ----------------------------------------------------------------------

def completion(problem: Problem, kind: str, tag: str) -> str:
    # The marker makes every program distinct: nothing is deduplicated or found in the cache.
    marker = f"    _sample = {tag!r}\n"
    if kind == "canonical":
        return marker + problem.canonical_solution
    if kind == "wrong":
        return marker + "    return None\n"
    return marker + "    raise RuntimeError('live-load')\n"


def write_samples(path: Path, problems: Sequence[Problem], *, per_task: int, tag: str,
                  shift: int = 0) -> Path:
    with path.open("w") as out:
        for number, problem in enumerate(problems):
            for index in range(per_task):
                kind = KINDS[(number + index + shift) % len(KINDS)]
                out.write(json.dumps({"task_id": problem.task_id, "completion": completion(
                    problem, kind, f"{tag}-{number}-{index}")}) + "\n")
    return path


def codet_subset(source: Path, target: Path, per_task: int) -> Path:
    """The CodeT-layout file with the first `per_task` samples of each record."""
    with gzip.open(source, "rt") as lines, target.open("w") as out:
        for line in lines:
            record = json.loads(line)
            record["samples"] = record["samples"][:per_task]
            out.write(json.dumps(record) + "\n")
    return target


# -- talking to the stack ------------------------------------------------------------------

def post_run(base: str, token: str, path: Path, name: str, *,
             timeout: float = 900.0) -> tuple[int, Any]:
    """`POST /api/runs` as `live_stack.api` sends it, with a timeout fit for big files."""
    boundary = uuid.uuid4().hex
    fields = {"dataset": DATASET, "name": name, "model_name": "live-load"}
    parts = [f'--{boundary}\r\nContent-Disposition: form-data; name="{key}"\r\n\r\n'
             f"{value}\r\n".encode() for key, value in fields.items()]
    parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="file"; '
                 f'filename="{path.name}"\r\nContent-Type: application/octet-stream\r\n\r\n'
                 .encode() + path.read_bytes() + b"\r\n")
    body = b"".join(parts) + f"--{boundary}--\r\n".encode()
    address = urllib.parse.urlsplit(base)
    connection = http.client.HTTPConnection(address.netloc, timeout=timeout)  # host:port
    try:
        connection.request("POST", "/api/runs", body=body, headers={
            "Authorization": f"Bearer {token}",
            "Content-Type": f"multipart/form-data; boundary={boundary}"})
        response = connection.getresponse()
        text = response.read()
        return response.status, json.loads(text) if text else None
    finally:
        connection.close()


def run_summary(stack: Stack, token: str, run_id: int) -> dict[str, Any]:
    status, body = api(stack.url, token, f"/api/runs/{run_id}?problems=0")
    if status != 200:
        raise RuntimeError(f"GET /api/runs/{run_id}: HTTP {status} {body}")
    return dict(body)


class TimedViewer(LiveViewer):
    """A LiveViewer that notes the wall-clock time each event arrived. Ephemeral events
    (`sample_started`, `test_reported`, `sample_ended`: no `seq`) are only counted, to
    spare memory."""

    def __init__(self, browser: Browser, run_id: int, *, deadline: float) -> None:
        super().__init__(browser, run_id, after=None, deadline=deadline)
        self.received_at: list[float] = []
        self.ephemeral: Counter[str] = Counter()
        self.opened_at: float | None = None

    def run(self) -> None:
        self.opened_at = time.time()  # the first socket is opened at once
        super().run()

    def snapshot(self) -> tuple[dict[str, Any], float] | None:
        """The first snapshot and when it arrived."""
        for event, at in zip(self.events, self.received_at, strict=False):
            if event["type"] == "snapshot":
                return event, at
        return None

    def _receive(self, event: dict[str, Any]) -> None:
        if event["type"] in ("sample_started", "test_reported", "sample_ended"):
            self.ephemeral[event["type"]] += 1
            return
        self.received_at.append(time.time())
        super()._receive(event)

    def finished_at(self) -> float | None:
        for event, at in zip(self.events, self.received_at, strict=False):
            if event["type"] == "run_finished":
                return at
        return None

    def progress(self) -> tuple[int, int] | None:
        """(done, total) of the latest event that tells them."""
        for event in reversed(self.events):
            if event.get("progress"):
                return event["progress"]["done"], event["progress"]["total"]
        return None


def wait_viewers(viewers: Sequence[TimedViewer], *, timeout: float, label: str) -> None:
    """Wait for every viewer's `run_finished`, saying now and then how far the run is."""
    deadline = time.monotonic() + timeout
    for viewer in viewers:
        while not viewer.finished.wait(timeout=min(30.0, max(0.1, deadline - time.monotonic()))):
            if time.monotonic() >= deadline or not viewer.is_alive():
                raise RuntimeError(f"{label}: run {viewer.run_id} was not seen to finish "
                                   f"({viewer.progress()}; errors {viewer.errors[-3:]})")
            # Per run, the furthest any of its viewers has got.
            runs: dict[int, tuple[int, int]] = {}
            for other in viewers:
                runs[other.run_id] = max(runs.get(other.run_id, (0, 0)),
                                         other.progress() or (0, 0))
            ended = len({v.run_id for v in viewers if v.finished.is_set()})
            print(f"  {label}: {ended}/{len(runs)} runs seen finished, "
                  f"{sum(d for d, _ in runs.values()):,}/{sum(t for _, t in runs.values()):,} "
                  f"samples seen done, load {load_average()}", flush=True)
    for viewer in viewers:
        viewer.join(timeout=10)


def finished_times(database: PostgresDatabase, run_id: int) -> dict[int, float]:
    rows = database.query("SELECT id, finished_at FROM runs_sample WHERE run_id = %s", run_id)
    return {int(pk): at.timestamp() for pk, at in rows if isinstance(at, datetime)}


def scoring_waits(database: PostgresDatabase, run_ids: Sequence[int]) -> list[float]:
    """Seconds from each run's last stored sample to the run's end: the wait for
    `finalize_run` on the broker, plus the scoring itself."""
    rows = database.query(
        "SELECT r.finished_at - max(s.finished_at) FROM runs_run r "
        "JOIN runs_sample s ON s.run_id = r.id WHERE r.id = ANY(%s) GROUP BY r.id",
        list(run_ids))
    return [row[0].total_seconds() for row in rows if row[0] is not None]


# -- figures -------------------------------------------------------------------------------

def percentile(values: Sequence[float], fraction: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


def spread(values: Sequence[float], unit: float = 1000.0) -> str:
    """p50 / p95 / max of seconds, in milliseconds by default."""
    if not values:
        return "no values"
    suffix = " ms" if unit == 1000.0 else " s"
    return (f"p50 {percentile(values, 0.5) * unit:,.1f}{suffix}, "
            f"p95 {percentile(values, 0.95) * unit:,.1f}{suffix}, "
            f"max {max(values) * unit:,.1f}{suffix}")


@dataclass
class Report:
    """The figures of every part, for the summary; a failed check makes the exit status 1."""

    rows: list[tuple[str, str, str]] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    def add(self, part: str, what: str, value: str) -> None:
        self.rows.append((part, what, value))
        print(f"  {what}: {value}", flush=True)

    def check(self, ok: bool, message: str) -> None:
        if not ok:
            self.failures.append(message)
            print(f"  CHECK FAILED: {message}", flush=True)


def group_cpu_seconds(pgid: int) -> float:
    """CPU time (user + system) of the live processes in a process group, from /proc."""
    ticks = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            # Fields after the command name (which may hold spaces) start at its ")".
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid:
            ticks += int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


# -- the parts -----------------------------------------------------------------------------

@dataclass
class Bench:
    args: argparse.Namespace
    stack: Stack
    database: PostgresDatabase
    token: str
    browser: Browser
    work: Path
    problems: tuple[Problem, ...]
    report: Report = field(default_factory=Report)
    nonce: str = field(default_factory=lambda: secrets.token_hex(4))
    shared: Path | None = None
    redis_url: str = ""
    viewers_run: int | None = None

    def part(self, name: str, title: str) -> None:
        """Run one part between two readings of the load and of the stack's CPU time."""
        print(f"\n=== {title} ===", flush=True)
        load_before = load_average()
        print(f"  load average before: {load_before}", flush=True)
        groups = {key: process.pid for key, process in self.stack.processes.items()
                  if key in ("web", "worker")}
        cpu = {key: group_cpu_seconds(pgid) for key, pgid in groups.items()}
        # This process too: its viewers are clients that a loaded machine also slows, and
        # the times they note are their own.
        own = sum(os.times()[:2])
        start = time.perf_counter()
        try:
            getattr(self, name)()
        finally:
            elapsed = time.perf_counter() - start
            used = {key: group_cpu_seconds(pgid) - cpu[key] for key, pgid in groups.items()}
            used["bench (the viewers' side)"] = sum(os.times()[:2]) - own
            print(f"  broker queues now: {self.backlog()}", flush=True)
            self.report.add(name, "CPU of the process groups", ", ".join(
                f"{key} {seconds:,.0f} s ({seconds / elapsed:.0%} of one core)"
                for key, seconds in used.items()))
            self.report.add(name, "load average before / after",
                            f"{load_before} / {load_average()} (part took {elapsed:,.0f} s)")

    def backlog(self) -> str:
        """Messages waiting in the broker's queues that hold any."""
        import redis

        try:
            client = redis.Redis.from_url(self.redis_url, socket_timeout=5)
            lengths = {queue: client.llen(queue) for queue in ALL_QUEUES}
        except redis.RedisError as exc:
            return f"unknown ({exc})"
        return ", ".join(f"{q} {n}" for q, n in lengths.items() if n) or "all empty"

    def viewers(self) -> None:
        args, report = self.args, self.report
        tasks = args.samples // SAMPLES_PER_TASK
        path = write_samples(self.work / "viewers.jsonl", self.problems[:tasks],
                             per_task=SAMPLES_PER_TASK, tag=f"{self.nonce}-v")
        start_wall, start = time.time(), time.perf_counter()
        status, created = post_run(self.stack.url, self.token, path, "live-load viewers")
        if status != 201:
            raise RuntimeError(f"upload for the viewers: HTTP {status} {created}")
        run_id = self.viewers_run = int(created["id"])
        print(f"  run {run_id} created in {time.perf_counter() - start:.2f} s", flush=True)
        # A busy run: the viewers come once part of it is done, all at once.
        join_at = max(1, int(args.samples * args.join_at))
        deadline = time.monotonic() + args.timeout
        while (done := int(self.database.query(
                "SELECT done_count FROM runs_run WHERE id = %s", run_id)[0][0])) < join_at:
            if time.monotonic() > deadline:
                raise RuntimeError(f"run {run_id} never reached {join_at} samples done")
            time.sleep(0.1)
        viewers = [TimedViewer(self.browser, run_id, deadline=args.timeout)
                   for _ in range(args.viewers)]
        joining_load = load_average()
        for viewer in viewers:
            viewer.start()
        print(f"  {len(viewers)} viewers opened their sockets at {done:,} samples done, "
              f"load {joining_load}", flush=True)
        wait_viewers(viewers, timeout=args.timeout, label="viewers")
        ending_load = load_average()
        first_seen = min(v.finished_at() or math.inf for v in viewers)
        summary = run_summary(self.stack, self.token, run_id)
        done_at = finished_times(self.database, run_id)
        total = summary["progress"]["total"]
        final_seq, run_finished_at = self.database.query(
            "SELECT event_seq, finished_at FROM runs_run WHERE id = %s", run_id)[0]
        final_seq = int(final_seq)
        sample_seqs = dict(self.database.query(
            "SELECT id, seq FROM runs_sample WHERE run_id = %s", run_id))

        complete = gap_free = 0
        counts, reconnections, errors = [], 0, Counter[str]()
        delays: list[float] = []
        live_delays: list[float] = []
        snapshot_latencies: list[float] = []
        final_latencies: list[float] = []
        # From the last result stored: the run's end as a viewer sees it, scoring included.
        last_stored = max(done_at.values(), default=math.inf)
        since_last_result: list[float] = []
        late_snapshots = 0
        for viewer in viewers:
            snapshot = viewer.snapshot()
            if snapshot is None:
                continue
            first, first_at = snapshot
            assert viewer.opened_at is not None
            snapshot_latencies.append(first_at - viewer.opened_at)
            seen_end = viewer.finished_at()
            if first["status"] in ("finished", "failed", "cancelled"):
                # Its snapshot came after the run's end, and is all it needs.
                late_snapshots += 1
                complete += 1
                gap_free += viewer.durable() == []
                continue
            if seen_end is not None and isinstance(run_finished_at, datetime):
                final_latencies.append(seen_end - run_finished_at.timestamp())
                since_last_result.append(seen_end - last_stored)
            # After its snapshot, each viewer must get exactly the samples finished later.
            expected_ids = {pk for pk, seq in sample_seqs.items()
                            if seq is not None and seq > first["seq"]}
            ids = viewer.finished_sample_ids()
            counts.append(len(ids))
            once = len(ids) == len(set(ids)) and set(ids) == expected_ids
            complete += once and seen_end is not None
            gap_free += [e["seq"] for e in viewer.durable()] == list(
                range(first["seq"] + 1, final_seq + 1))
            reconnections += max(0, viewer.connections - 1)
            errors.update(error.split(":")[0] for error in viewer.errors)
            joined = viewer.received_at[0] if viewer.received_at else math.inf
            for event, at in zip(viewer.events, viewer.received_at, strict=True):
                if event["type"] == "sample_finished":
                    finished = done_at.get(event["entry"]["sample_id"])
                    if finished is not None:
                        delays.append(at - finished)
                        if finished >= joined:
                            live_delays.append(at - finished)

        n = len(viewers)
        report.add("viewers", "run", f"{run_id}: {total:,} samples, status {summary['status']}, "
                   f"sandbox {summary['sandbox'] or '?'}, by status "
                   f"{summary['progress']['by_status']}")
        report.add("viewers", "total run time (upload sent -> first run_finished received)",
                   f"{first_seen - start_wall:,.1f} s")
        if summary["started_at"] and summary["finished_at"]:
            evaluated = (datetime.fromisoformat(summary["finished_at"])
                         - datetime.fromisoformat(summary["started_at"])).total_seconds()
            report.add("viewers", "started_at -> finished_at in the database",
                       f"{evaluated:,.1f} s ({total / evaluated:,.1f} samples/s)")
        report.add("viewers", "last sample stored -> run finished (finalize wait + scoring)",
                   spread(scoring_waits(self.database, [run_id]), unit=1.0))
        report.add("viewers", "socket opened -> first snapshot "
                   f"({len(snapshot_latencies)}/{n} viewers, load {joining_load})",
                   spread(snapshot_latencies))
        report.add("viewers", "run's finished_at -> each viewer's run_finished "
                   f"({len(final_latencies)}/{n} viewers, load {ending_load}; "
                   f"{late_snapshots} got a snapshot of the finished run instead)",
                   spread(final_latencies))
        report.add("viewers", "last sample stored -> each viewer's run_finished "
                   "(the wait for finalize_run and the scoring included)",
                   spread(since_last_result))
        report.add("viewers", "viewers with every sample_finished after their snapshot "
                   "once + run_finished", f"{complete}/{n}")
        report.add("viewers", "sample_finished per viewer (after the snapshot)",
                   f"min {min(counts, default=0):,}, max {max(counts, default=0):,} "
                   f"(of {total:,} in the run)")
        report.add("viewers", f"durable seq gap-free from the snapshot's to {final_seq}",
                   f"{gap_free}/{n}")
        report.add("viewers", "connections opened",
                   f"{sum(v.connections for v in viewers)} for {n} viewers "
                   f"({reconnections} reconnections; errors {dict(errors) or 'none'})")
        ephemeral = {kind: [v.ephemeral[kind] for v in viewers]
                     for kind in ("sample_started", "test_reported", "sample_ended")}
        report.add("viewers", "ephemeral events per viewer (no seq, may be dropped)",
                   "; ".join(f"{kind} min {min(c):,} max {max(c):,}"
                             for kind, c in ephemeral.items()))
        report.add("viewers", f"delay finished_at -> received ({len(delays):,} events)",
                   spread(delays))
        report.add("viewers", f"  of which live, finished after the viewer joined "
                   f"({len(live_delays):,})", spread(live_delays))
        report.check(len(snapshot_latencies) == n,
                     f"{n - len(snapshot_latencies)} viewers got no snapshot")
        report.check(complete == n, f"{n - complete} viewers missed or repeated events")
        report.check(gap_free == n, f"{n - gap_free} viewers saw gaps in the durable numbers")
        report.check(summary["status"] == "finished", f"run {run_id} ended {summary['status']}")

    def uploads(self) -> None:
        report = self.report
        paths = [write_samples(self.work / f"upload-{i}.jsonl", self.problems, per_task=1,
                               tag=f"{self.nonce}-u{i}", shift=i)
                 for i in range(CONCURRENT_UPLOADS)]
        barrier = threading.Barrier(CONCURRENT_UPLOADS)
        results: list[tuple[int, float, Any]] = [(0, 0.0, None)] * CONCURRENT_UPLOADS
        released: list[float] = []

        def send(index: int) -> None:
            barrier.wait()
            released.append(time.time())
            start = time.perf_counter()
            try:
                status, body = post_run(self.stack.url, self.token, paths[index],
                                        f"live-load upload {index}", timeout=300)
            except Exception as exc:
                status, body = 0, f"{type(exc).__name__}: {exc}"
            results[index] = (status, time.perf_counter() - start, body)

        threads = [threading.Thread(target=send, args=(i,)) for i in range(CONCURRENT_UPLOADS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        statuses = Counter(status for status, _, _ in results)
        report.add("uploads", "response statuses",
                   ", ".join(f"{status} x{count}" for status, count in sorted(statuses.items())))
        report.add("uploads", "response time", spread([seconds for _, seconds, _ in results]))
        report.add("uploads", "each (s)", " ".join(f"{s:.2f}" for _, s, _ in results))
        for status, _, body in results:
            if status != 201:
                print(f"  refused: {status} {str(body)[:300]}")
        report.check(statuses == Counter({201: CONCURRENT_UPLOADS}),
                     f"uploads answered {dict(statuses)}, not 201 x{CONCURRENT_UPLOADS}")
        run_ids = [int(body["id"]) for status, _, body in results if status == 201]
        viewers = [TimedViewer(self.browser, run_id, deadline=self.args.timeout)
                   for run_id in run_ids]
        for viewer in viewers:
            viewer.start()
        wait_viewers(viewers, timeout=self.args.timeout, label="uploads")
        summaries = [run_summary(self.stack, self.token, run_id) for run_id in run_ids]
        ended = Counter(summary["status"] for summary in summaries)
        last = max(datetime.fromisoformat(s["finished_at"]).timestamp() for s in summaries)
        report.add("uploads", "runs ended", ", ".join(f"{k} x{v}" for k, v in ended.items())
                   + f" (sandbox {', '.join(sorted({s['sandbox'] for s in summaries}))})")
        report.add("uploads", f"release -> last run finished ({len(run_ids) * 164:,} samples)",
                   f"{last - min(released):,.1f} s (finished_at in the database)")
        report.add("uploads", "last sample stored -> run finished, per run",
                   spread(scoring_waits(self.database, run_ids), unit=1.0))
        report.add("uploads", "release -> last run_finished received",
                   f"{max(v.finished_at() or math.inf for v in viewers) - min(released):,.1f} s")
        report.check(ended == Counter({"finished": len(run_ids)}), f"runs ended {dict(ended)}")

    def page(self) -> None:
        args, report = self.args, self.report
        source = next(iter((self.shared / "generations/codegen-16b-n100").glob("*.jsonl.gz")),
                      None) if self.shared else None
        if source is not None:
            path = source
            if args.big_samples:
                per_task = max(1, args.big_samples // 164)
                path = codet_subset(source, self.work / f"codegen-16b-n{per_task}.jsonl",
                                    per_task)
            start_wall, start = time.time(), time.perf_counter()
            status, created = post_run(self.stack.url, self.token, path, "codegen-16b")
            if status != 201:
                raise RuntimeError(f"upload of {path.name}: HTTP {status} {created}")
            run_id = int(created["id"])
            report.add("page", "upload of the CodeGen-16B file",
                       f"{time.perf_counter() - start:,.1f} s, run {run_id}, "
                       f"{created['coverage']['samples_total']:,} samples")
            viewer = TimedViewer(self.browser, run_id, deadline=args.timeout)
            viewer.start()
            wait_viewers([viewer], timeout=args.timeout, label="big run")
            summary = run_summary(self.stack, self.token, run_id)
            pass1 = next((m["value"] for m in summary["pass_at_k"] if m["k"] == 1), None)
            report.add("page", "big run evaluated",
                       f"{(viewer.finished_at() or math.inf) - start_wall:,.1f} s from upload "
                       f"to run_finished; status {summary['status']}, sandbox "
                       f"{summary['sandbox']}, cached {summary['progress']['cached']:,}, "
                       f"pass@1 {pass1 if pass1 is None else round(pass1, 4)}")
            ids = viewer.finished_sample_ids()
            report.add("page", "last sample stored -> run finished",
                       spread(scoring_waits(self.database, [run_id]), unit=1.0))
            report.add("page", "its one viewer",
                       f"{len(ids):,} sample_finished ({len(set(ids)):,} distinct), "
                       f"{viewer.connections} connections")
            report.check(summary["status"] == "finished", f"big run ended {summary['status']}")
        elif self.viewers_run is not None:
            run_id = self.viewers_run
            report.add("page", "run", f"{run_id}, the run of part 1 (no CodeGen-16B file)")
        else:
            raise RuntimeError("no big file and part 1 did not run: nothing to time")

        summary = run_summary(self.stack, self.token, run_id)
        report.add("page", "run timed", f"{run_id}: {summary['progress']['total']:,} samples")
        cookie = "; ".join(f"{c.name}={c.value}" for c in self.browser.jar)
        sent_timing = False
        for page in (f"/runs/{run_id}/", f"/api/runs/{run_id}", f"/runs/{run_id}/samples/"):
            timings = [timed_get(self.stack.url, page, cookie) for _ in range(PAGE_REPEATS + 1)]
            timings = timings[1:]  # the first warms caches and connections
            statuses = Counter(t.status for t in timings)
            sent_timing = sent_timing or any(t.server_timing for t in timings)
            report.add("page", f"GET {page} ({timings[0].size:,} bytes, {dict(statuses)})",
                       f"headers {spread([t.headers for t in timings])}; "
                       f"body {spread([t.body for t in timings])}")
            report.check(statuses == Counter({200: PAGE_REPEATS}), f"{page}: {dict(statuses)}")
        print("  (server time measured from outside: the app sends no Server-Timing header, so "
              "'headers' is the client's time to the response headers over loopback, "
              "connection set up beforehand, and 'body' the time to the last byte)"
              if not sent_timing else "  (the app sent Server-Timing headers)")


@dataclass
class Timing:
    status: int
    headers: float
    body: float
    size: int
    server_timing: str | None


def timed_get(base: str, path: str, cookie: str) -> Timing:
    """One GET on a fresh connection, timed from the request's first byte (the TCP set-up
    is done before the clock starts)."""
    address = urllib.parse.urlsplit(base)
    connection = http.client.HTTPConnection(address.netloc, timeout=120)  # host:port
    try:
        connection.connect()
        start = time.perf_counter()
        connection.request("GET", path, headers={"Cookie": cookie, "Accept": "text/html"})
        response = connection.getresponse()
        headers = time.perf_counter() - start
        data = response.read()
        body = time.perf_counter() - start
        return Timing(response.status, headers, body, len(data),
                      response.getheader("Server-Timing"))
    finally:
        connection.close()


# -- the stack's logs ----------------------------------------------------------------------

_NOISE = re.compile(r"^\[?\d{4}-\d\d-\d\d[ T][\d:,.]+\]?\s*|\d+")


def summarise_logs(log_dir: Path) -> None:
    """Tracebacks, errors and warnings in each log, grouped by message."""
    print("\n=== The stack's logs ===")
    for log in sorted(log_dir.glob("*.log")):
        lines = log.read_text(errors="replace").splitlines()
        tracebacks: Counter[str] = Counter()
        for index, line in enumerate(lines):
            if line.startswith("Traceback (most recent call last)"):
                # The exception is the first line after the frames that is not indented.
                end = next((later for later in lines[index + 1:index + 400]
                            if later and not later.startswith((" ", "Traceback"))), "?")
                tracebacks[end[:160]] += 1
        levels = {level: Counter(_NOISE.sub("#", line)[:160] for line in lines
                                 if re.search(rf"\b{level}\b", line))
                  for level in ("CRITICAL", "ERROR", "WARNING")}
        print(f"  {log.name}: {len(lines):,} lines, {sum(tracebacks.values())} tracebacks, "
              + ", ".join(f"{sum(c.values())} {level}" for level, c in levels.items()))
        for title, counter in (("traceback", tracebacks), *levels.items()):
            for message, count in counter.most_common(8):
                print(f"    {title} x{count}: {message}")


def print_tails(log_dir: Path) -> None:
    for name in ("web", "worker", "beat"):
        log = log_dir / f"{name}.log"
        if log.exists():
            print(f"\n--- last lines of {log} ---\n"
                  + "\n".join(log.read_text(errors="replace").splitlines()[-40:]),
                  file=sys.stderr)


# -- main ----------------------------------------------------------------------------------

def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", default="viewers,uploads,page")
    parser.add_argument("--viewers", type=int, default=50)
    parser.add_argument("--samples", type=int, default=1000,
                        help="samples of the viewers' run: 10 per task, at most 1,640")
    parser.add_argument("--sandbox", default="auto", choices=("auto", "gvisor", "bwrap", "none"),
                        help="the worker's EVALUATOR_SANDBOX (the product's default is auto)")
    parser.add_argument("--big-samples", type=int, default=0,
                        help="cap the CodeGen-16B run at about N samples (N // 164 per task); "
                             "0: all 16,400")
    parser.add_argument("--join-at", type=float, default=0.1,
                        help="the viewers open their sockets once this fraction of the run "
                             "is done")
    parser.add_argument("--timeout", type=float, default=7200.0,
                        help="seconds any one run may take to finish")
    parser.add_argument("--keep", action="store_true", help="leave the stack's logs")
    args = parser.parse_args()
    unknown = set(args.parts.split(",")) - {"viewers", "uploads", "page"}
    if unknown:
        parser.error(f"unknown parts: {', '.join(sorted(unknown))}")
    if args.samples % SAMPLES_PER_TASK or not 10 <= args.samples <= 1640:
        parser.error("--samples must be a multiple of 10 between 10 and 1640")
    return args


def main() -> None:
    args = parse_args()
    parts = args.parts.split(",")

    def terminate(_signum: int, _frame: object) -> None:
        raise KeyboardInterrupt  # so that `finally` stops the stack and drops the database

    signal.signal(signal.SIGTERM, terminate)
    try:
        shared: Path | None = shared_dir()
    except SystemExit:
        shared = None
    work = Path(tempfile.mkdtemp(prefix="live-load-"))
    log_dir = work / "logs"
    database: PostgresDatabase | None = None
    redis_server: RedisServer | None = None
    stack: Stack | None = None
    report = Report()
    print(f"load average at start: {load_average()}; work folder {work}", flush=True)
    try:
        try:
            database = PostgresDatabase()
            redis_server = RedisServer(log_dir)
        except pytest.skip.Exception as exc:
            raise SystemExit(f"services unavailable: {exc}") from None
        stack = services_stack(work, {
            "DATABASE_URL": database.url, "REDIS_URL": redis_server.url,
            "EVALUATOR_SANDBOX": args.sandbox,
        }, concurrency=2, chunk_samples=CHUNK_SAMPLES)
        started = time.perf_counter()
        stack.prepare(static=True)
        token = add_user(stack, "bench", PASSWORD)
        stack.start(timeout=180)
        browser = Browser(stack.url)
        browser.sign_in("bench", PASSWORD)
        print(f"stack up in {time.perf_counter() - started:.1f} s: {stack.url}, database "
              f"{database.name}, redis {redis_server.url}, sandbox policy {args.sandbox}",
              flush=True)
        bench = Bench(args=args, stack=stack, database=database, token=token, browser=browser,
                      work=work, problems=load_dataset().problems, report=report,
                      shared=shared, redis_url=redis_server.url)
        titles = {
            "viewers": f"viewers: {args.viewers} websocket viewers of a "
                       f"{args.samples:,}-sample run",
            "uploads": f"uploads: {CONCURRENT_UPLOADS} concurrent uploads of 164 samples",
            "page": "page: the heaviest run page",
        }
        for part in ("viewers", "uploads", "page"):
            if part in parts:
                bench.part(part, titles[part])
    except BaseException:
        print_tails(log_dir)
        raise
    finally:
        stop_services(stack=stack, redis_server=redis_server, database=database)
        if log_dir.is_dir():
            summarise_logs(log_dir)
        if args.keep:
            print(f"\nlogs kept in {log_dir}")
        else:
            shutil.rmtree(work, ignore_errors=True)

    print(f"\n=== Summary (sandbox policy {args.sandbox}) ===")
    width = max(len(what) for _, what, _ in report.rows)
    for part, what, value in report.rows:
        print(f"{part:<8} {what:<{width}}  {value}")
    if report.failures:
        print("\nFAILED CHECKS:\n  " + "\n  ".join(report.failures))
        raise SystemExit(1)
    print("\nall checks passed")


if __name__ == "__main__":
    main()
