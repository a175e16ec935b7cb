"""The web path against the command line: the same file, the same limits, the same number
of programs at once, from upload to a finished run against `python -m evaluator evaluate`.

Both run with their defaults, which are the product: the sandbox `auto` picks, the dataset
profile's limits, and one program per core (the CLI's `--workers`, the web worker's
processes). Neither has a result cache to draw on. The web app starts on a fresh database
each time, and stores each result in its cache as it goes, by default; the CLI runs twice,
with its own default cache in a new file (stored as it goes, found empty), and with
`--no-cache` (nothing stored), as earlier runs of this bench did. They take turns, the CLI
first, then the web app in each set-up asked for: embedded (SQLite and a filesystem
broker, `make run`'s) and services (PostgreSQL + Redis). The web clock starts at the
upload and stops at the moment the API gives as the run's `finished_at` (asked once a
second); the stack is started and warmed with a small run before it, and its workers'
start-up canaries have all run, as on a server a researcher uploads to.

Then where the time went, for both paths: the lanes (programs at once) times the wall
time, split into the programs' own run time (timeouts apart: on CodeGen's file they are
most of it), the time between programs, and, on the web path, lanes idle between chunks
and at the end; with a writable cgroup v2 (root on Linux), the CPU seconds each path's
processes used, programs included, and what the web worker's canaries ran meanwhile.

    python bench/web_vs_cli.py [--modes embedded,services] [--cli default,no-cache]
                               [--per-task 20] [--file PATH]

The file defaults to CodeGen-16B's generations (../shared/generations/codegen-16b-n100,
100 per task); --per-task keeps the first N of each task (0 keeps all 16,400).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import gzip
import heapq
import json
import os
import secrets
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import load_average, shared_dir, timed  # noqa: E402
from bench.webapp_bench import services_env, upload, wait_finished  # noqa: E402
from tests.webapp.services.live_stack import add_user, api  # noqa: E402
from webapp.stack import Stack, free_port  # noqa: E402

GOAL = 1.15
"""The web path may cost at most this much more than the CLI (issue 26)."""
CODEGEN = ("generations/codegen-16b-n100/"
           "HumanEval_codegen16B_temp0.8_topp0.95_num100_max300_code_solution.jsonl.gz")


def sample_file(source: Path, per_task: int, work: Path) -> tuple[Path, Path, int]:
    """The first `per_task` samples of each task of `source` (all with 0), as .jsonl in
    the file's own layout (CodeT's lines hold a task's samples as a list), and a warm-up
    file of one sample."""
    kept: dict[str, int] = defaultdict(int)
    out, warm = work / "samples.jsonl", work / "warm.jsonl"
    opener = gzip.open if source.suffix == ".gz" else open
    count = 0
    with opener(source, "rt", encoding="utf-8") as lines, \
            out.open("w", encoding="utf-8") as sink:
        for line in lines:
            if not line.strip():
                continue
            record = json.loads(line)
            if "samples" in record:  # CodeT: {prompt, samples: [...]}
                if per_task:
                    record["samples"] = record["samples"][:per_task]
                count += len(record["samples"])
            else:
                if per_task and kept[record["task_id"]] >= per_task:
                    continue
                kept[record["task_id"]] += 1
                count += 1
            if count and not warm.exists():
                first = dict(record, samples=record["samples"][:1]) if "samples" in record \
                    else record
                warm.write_text(json.dumps(first) + "\n", encoding="utf-8")
            sink.write(json.dumps(record) + "\n")
    return out, warm, count


POLL_SECONDS = 1.0
"""How often the bench asks the API whether the run finished, as a script that waits for
one would; the time is the run's own `finished_at`, so asking less often loses nothing.
Four times a second, the web process and PostgreSQL spent about 12 CPU seconds of a
16,400-sample run answering."""

LANES = os.cpu_count() or 2
"""Programs at once on both paths: the CLI's default `--workers`, and the web worker's
processes (one program each), as `make run` starts them."""


class CpuGroups:
    """CPU seconds of process trees, from cgroup v2: this process moves into a group of its
    own before it starts a path, so everything that path starts (programs in their
    sandboxes too) is counted there. None of it without a writable cgroup v2 hierarchy."""

    def __init__(self) -> None:
        self.root: Path | None = None
        mount = next((line.split()[1] for line in Path("/proc/mounts").read_text().splitlines()
                      if line.split()[2:3] == ["cgroup2"]), None)
        if mount is None:
            return
        root = Path(mount) / f"web-vs-cli-{os.getpid()}"
        try:
            root.mkdir()
            self._enter(root, "bench")
        except OSError:
            with contextlib.suppress(OSError):
                root.rmdir()
            return
        self.root, self.home = root, Path(mount)

    def _enter(self, root: Path, name: str) -> None:
        group = root / name
        group.mkdir(exist_ok=True)
        (group / "cgroup.procs").write_text(str(os.getpid()))

    def enter(self, name: str) -> None:
        """What this process starts from now on is counted as `name`."""
        if self.root is not None:
            self._enter(self.root, name)

    def seconds(self, name: str) -> float | None:
        if self.root is None:
            return None
        for line in (self.root / name / "cpu.stat").read_text().splitlines():
            key, _, value = line.partition(" ")
            if key == "usage_usec":
                return int(value) / 1e6
        return None

    def close(self) -> None:
        if self.root is None:
            return
        with contextlib.suppress(OSError):
            (self.home / "cgroup.procs").write_text(str(os.getpid()))
        for group in self.root.iterdir():
            if group.is_dir():
                with contextlib.suppress(OSError):
                    group.rmdir()
        with contextlib.suppress(OSError):
            self.root.rmdir()


CLI_CACHES = {"default": "its default result cache, in a new file",
              "no-cache": "--no-cache"}
"""How the CLI runs: with the result cache it keeps by default (in a new file, so that
nothing is found in it), as the web app keeps its own, or with none at all."""


def run_cli(samples: Path, work: Path, cpu: CpuGroups, cache: str) -> dict[str, Any]:
    results = work / f"cli-{cache}-results.jsonl"
    cpu.enter(f"cli-{cache}")
    store = ["--no-cache"] if cache == "no-cache" else ["--cache", str(work / "cli-cache.db")]
    seconds, proc = timed([sys.executable, "-m", "evaluator", "evaluate", "--samples",
                           str(samples), *store, "--json", "--results", str(results)])
    cpu.enter("bench")
    summary = json.loads(proc.stdout)
    with results.open(encoding="utf-8") as lines:
        programs = program_times(
            (record["status"], ((record.get("compile_ms") or 0) + (record.get("run_ms") or 0))
             / 1000, int(record.get("attempts") or 1))
            for record in map(json.loads, lines))
    return {"seconds": round(seconds, 1), "pass@1": summary["pass_at_k"]["pass@1"]["value"],
            "sandbox": summary["sandbox_level"], "statuses": summary["statuses"],
            "lanes": lanes_cli(seconds, programs), "cpu": cpu.seconds(f"cli-{cache}")}


def program_times(results: Iterable[tuple[str, float, int]]) -> dict[str, float]:
    """Seconds of the programs' own run time, with the timeouts' apart, from (status,
    seconds, attempts) of each sample."""
    totals = {"programs": 0.0, "timeouts": 0.0, "timeout_count": 0, "retried": 0}
    for status, seconds, attempts in results:
        totals["programs"] += seconds
        if status == "timeout":
            totals["timeouts"] += seconds
            totals["timeout_count"] += 1
        totals["retried"] += attempts > 1
    return totals


def lanes_cli(wall: float, programs: dict[str, float]) -> dict[str, float]:
    return {**programs, "lane_seconds": LANES * wall,
            "between": LANES * wall - programs["programs"]}


def lanes_web(span: float, run_started: dt.datetime,
              chunks: list[tuple[dt.datetime, dt.datetime, dt.datetime]],
              programs: dict[str, float]) -> dict[str, float]:
    """Where the web worker's lane time went between the run's start and its end (`span`
    seconds): `chunks` holds each chunk's (claimed, its first program started, done), and
    the lanes are rebuilt by giving each chunk, in the order claimed, to the lane free
    first. A chunk's start is its claim up to its first program; its end, everything after
    its last program (recording, the manifest, the chunk's own row)."""
    free = [run_started] * LANES
    idle = starting = 0.0
    for claimed, first, done in sorted(chunks):
        lane_free = heapq.heappop(free)
        idle += max(0.0, (claimed - lane_free).total_seconds())
        starting += max(0.0, (first - claimed).total_seconds())
        heapq.heappush(free, max(done, lane_free))
    run_end = run_started + dt.timedelta(seconds=span)
    tail = sum(max(0.0, (run_end - lane_free).total_seconds()) for lane_free in free)
    busy = LANES * span - idle - tail
    return {**programs, "lane_seconds": LANES * span, "idle_between_chunks": idle,
            "idle_at_end": tail, "chunk_start": starting,
            "between": busy - starting - programs["programs"]}


def run_lanes(run_id: int) -> dict[str, Any]:
    """The lane figures of run `run_id`, read from the web app's database (run in a process
    with Django set up: `manage.py shell`)."""
    from webapp.runs.models import Chunk, Run, Sample

    run = Run.objects.get(pk=run_id)
    if run.started_at is None or run.finished_at is None:
        raise ValueError(f"run {run_id} has not finished")
    first: dict[int, dt.datetime] = {}
    samples = []
    for chunk, finished, status, duration, result in (
            Sample.objects.filter(run=run, finished_at__isnull=False).order_by("finished_at")
            .values_list("chunk", "finished_at", "status", "duration_ms", "result").iterator()):
        if finished is not None:  # the filter's, for the type checker
            first.setdefault(chunk, finished - dt.timedelta(milliseconds=duration))
        samples.append((status, duration / 1000, int((result or {}).get("attempts") or 1)))
    chunks = [(started, first[pk], finished) for pk, started, finished in
              Chunk.objects.filter(run=run).values_list("pk", "started_at", "finished_at")
              if pk in first and started is not None and finished is not None]
    span = (run.finished_at - run.started_at).total_seconds()
    return {"lanes": lanes_web(span, run.started_at, chunks, program_times(samples)),
            "run_span": span}


def run_web(mode: str, samples: Path, warm: Path, work: Path, cpu: CpuGroups, *,
            timeout: float) -> dict[str, Any]:
    var = work / f"var-{mode}"
    env = {"WORKBENCH_VAR_DIR": str(var), "DJANGO_SECRET_KEY": secrets.token_urlsafe(40),
           "DATABASE_URL": "", "REDIS_URL": ""}
    with services_env(env, mode):
        return _time_upload(env, mode, samples, warm, work, cpu, timeout=timeout)


def _time_upload(env: dict[str, str], mode: str, samples: Path, warm: Path, work: Path,
                 cpu: CpuGroups, *, timeout: float) -> dict[str, Any]:
    stack = Stack(env=env, port=free_port(), concurrency=LANES, log_dir=work / f"logs-{mode}")
    try:
        stack.prepare(static=False)
        # Staff, to read the workers' canaries on the status page.
        token = add_user(stack, "bench", "bench-password-123", staff=True)
        cpu.enter(f"web-{mode}")
        stack.start()
        cpu.enter("bench")
        wait_finished(stack, token, [upload(stack, token, warm, "warm-up")], timeout=timeout)
        wait_canaries(stack, token, timeout=timeout)
        before = cpu.seconds(f"web-{mode}")
        started = dt.datetime.now(dt.UTC)
        run_id = upload(stack, token, samples, "timed")
        wait_finished(stack, token, [run_id], timeout=timeout, every=POLL_SECONDS)
        after = cpu.seconds(f"web-{mode}")
        _, body = api(stack.url, token, f"/api/runs/{run_id}?problems=0")
        # From the upload's start to the moment the run finished, on this machine's clock.
        seconds = (dt.datetime.fromisoformat(body["finished_at"]) - started).total_seconds()
        figures = json.loads(stack.manage(
            "shell", "-c", f"import json; from bench.web_vs_cli import run_lanes; "
                           f"print(json.dumps(run_lanes({run_id})))",
            capture=True).strip().splitlines()[-1])
        return {"seconds": round(seconds, 1), "pass@1": body["pass_at_k"][0]["value"],
                "sandbox": body["sandbox"], "statuses": body["progress"]["by_status"],
                **figures, "cpu": None if before is None or after is None else after - before,
                "canaries": canaries_since(stack, token, started)}
    finally:
        stack.stop()


def _status(stack: Stack, token: str) -> dict[str, Any]:
    _, body = api(stack.url, token, "/status.json")
    status: dict[str, Any] = body
    return status


def wait_canaries(stack: Stack, token: str, *, timeout: float) -> None:
    """Until every worker has run the canary of each language it serves once: what a worker
    does when it starts, and has long done on a server that has been up a while."""
    deadline = time.monotonic() + timeout
    while True:
        workers = _status(stack, token)["workers"]
        if workers and all({check["language"] for check in worker["checks"]}
                           >= set(worker["languages"]) for worker in workers):
            return
        if time.monotonic() > deadline:
            raise SystemExit(f"the workers' start-up canaries did not finish within "
                             f"{timeout:.0f} s")
        time.sleep(0.5)


def canaries_since(stack: Stack, token: str, moment: dt.datetime) -> list[str]:
    """The canaries whose latest check ran after `moment`, as "language (seconds)"."""
    return [f"{check['language']} ({check['duration_ms'] / 1000:.1f} s)"
            for worker in _status(stack, token)["workers"] for check in worker["checks"]
            if dt.datetime.fromisoformat(check["checked_at"]) >= moment]


def breakdown(clis: dict[str, dict[str, Any]], webs: dict[str, dict[str, Any]]
              ) -> Iterator[str]:
    """The table of where each path's lane time went, in seconds."""
    paths = {**{f"CLI {cache}": cli for cache, cli in clis.items()},
             **{f"web {mode}": web for mode, web in webs.items()}}
    rows = [("lane time (lanes × wall)", "lane_seconds"),
            ("programs' own run time", "programs"),
            ("  of which timeouts", "timeouts"),
            ("between programs, chunk ends", "between"),
            ("chunks: claimed → first program", "chunk_start"),
            ("lanes idle between chunks", "idle_between_chunks"),
            ("lanes idle at the end", "idle_at_end")]
    yield f"{'lane seconds (' + str(LANES) + ' lanes)':32}" + "".join(
        f"{name:>16}" for name in paths)
    for label, key in rows:
        cells = [path["lanes"].get(key) for path in paths.values()]
        yield f"{label:32}" + "".join(f"{'-' if c is None else f'{c:.1f}':>16}" for c in cells)
    counts = [f"{p['lanes']['timeout_count']} / {p['lanes']['retried']}" for p in paths.values()]
    yield f"{'timeouts / retried samples':32}" + "".join(f"{c:>16}" for c in counts)
    cpus = [p.get("cpu") for p in paths.values()]
    yield f"{'CPU seconds, programs included':32}" + "".join(
        f"{'not measured' if c is None else f'{c:.1f}':>16}" for c in cpus)
    for mode, web in webs.items():
        yield (f"web {mode}: run started → finished {web['run_span']:.1f} s; canaries run "
               f"during it: {', '.join(web['canaries']) or 'none'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modes", default="embedded,services")
    parser.add_argument("--cli", default="default,no-cache",
                        help="how the CLI runs, in turn: " + "; ".join(
                            f"{name}: {what}" for name, what in CLI_CACHES.items()))
    parser.add_argument("--per-task", type=int, default=20)
    parser.add_argument("--file", type=Path, default=None)
    parser.add_argument("--timeout", type=float, default=7200.0)
    args = parser.parse_args()
    caches = args.cli.split(",")
    if not caches or set(caches) - set(CLI_CACHES):
        parser.error(f"--cli takes some of {', '.join(CLI_CACHES)}")
    source = args.file or shared_dir() / CODEGEN
    cpu = CpuGroups()
    try:
        with tempfile.TemporaryDirectory(prefix="web-vs-cli-") as scratch:
            work = Path(scratch)
            samples, warm, count = sample_file(source, args.per_task, work)
            print(f"{count} samples from {source.name}; load average {load_average()}",
                  flush=True)
            clis = {}
            for cache in caches:
                cli = clis[cache] = run_cli(samples, work, cpu, cache)
                print(f"cli {cache:<9}{cli['seconds']:8.1f} s  pass@1 {cli['pass@1']:.4f}  "
                      f"sandbox {cli['sandbox']}  load {load_average()}", flush=True)
            webs = {}
            for mode in args.modes.split(","):
                web = webs[mode] = run_web(mode, samples, warm, work, cpu,
                                           timeout=args.timeout)
                ratios = "  ".join(f"{web['seconds'] / cli['seconds']:.2f}× the CLI ({cache})"
                                   for cache, cli in clis.items())
                first = next(iter(clis.values()))
                same = "same pass@1" if abs(web["pass@1"] - first["pass@1"]) < 1e-9 else \
                    f"pass@1 DIFFERS ({web['pass@1']:.4f})"
                print(f"web {mode:<9}{web['seconds']:8.1f} s  {ratios}  (goal ≤ {GOAL}×)  "
                      f"{same}  sandbox {web['sandbox']}  load {load_average()}", flush=True)
            print("\n".join(breakdown(clis, webs)), flush=True)
    finally:
        cpu.close()


if __name__ == "__main__":
    main()
