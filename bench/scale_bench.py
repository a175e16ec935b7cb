"""Linear as runs grow (issue 26): each step of a run of 16,400 samples against one of 164,000.

The smaller run is CodeGen-16B's file (`generations/codegen-16b-n100/`, 100 samples per
HumanEval task); the larger is the same file with each task's samples repeated 10 times
(1,000 per task, the upload limit's default). The evaluator runs identical programs once
per run (dedup by hash) and keeps a result cache, and a warm-up run of the same programs
(the smaller file, gzipped so that it is not refused as a duplicate) fills that cache
before the clock starts. So neither timed run executes a program, and what is measured is
what grows with the number of samples: the overhead, the subject of the issue.

The real stack runs (`webapp.stack`, as `make run` starts it: uvicorn and a Celery worker
with --workers processes; beat is stopped, see `bench`) on the embedded defaults (SQLite,
filesystem broker) or, with `--database postgres`, on a fresh PostgreSQL database and
Redis. For each run:

- upload: `POST /api/runs` with `dry_run=1` (the file received, hashed and validated);
- staging: the real `POST /api/runs` (received, validated, and its rows in the database);
- evaluation overhead: from the POST's answer until the API says finished (fan-out,
  claims, cache look-ups, result writes, events and the scores; no program is run);
- aggregation: the run's scores with their bootstrap intervals computed again
  (`aggregation._score`) in a `manage.py shell` process of its own;
- the run page, `GET /api/runs/<id>`, every export (the page's matrix.csv, matrix.json and
  results.jsonl, the API's results and matrix) and the two-run comparison page (against a
  run of the same size built straight into the database, `tests.webapp.large_run`),
  fetched from a fresh web process over HTTP on this machine: the time is the client's,
  an upper bound of the server's. A page is drawn first for the other run (the process's
  own first request), then timed for this one (uncached), then --repeats times more
  ("again": the median, from the page cache where it keeps the page); downloads once.

With --built there is no worker and no evaluation (minutes for the warm-up and the larger
run's overhead on a busy machine): the files are uploaded (and their runs stay queued), and
the later steps are measured on runs of the same sizes built straight into the database.

Memory is that of the process doing the step (the web process, the worker's processes,
the aggregating process), each started afresh for the step (a process keeps what its
allocator freed, and a later step would reuse it unseen): its peak resident set (VmHWM)
and the growth of that peak over its resident set when the step began. A growth that
follows the run's size means the step holds the whole run in memory.

    python bench/scale_bench.py [--database sqlite|postgres] [--per-task 100] [--factor 10]
                                [--workers 2] [--repeats 3] [--sandbox auto]

A first try: `--per-task 5` (820 against 8,200 samples).

    python bench/scale_bench.py --built    # all but the evaluation, in a few minutes
    python bench/scale_bench.py --steps matrix.json,api-matrix    # some steps only
"""

from __future__ import annotations

import argparse
import gzip
import http.client
import json
import secrets
import signal
import statistics
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import (  # noqa: E402
    load_average,
    memory_kb,
    peak_reset,
    shared_dir,
)
from bench.webapp_bench import services_env, wait_finished  # noqa: E402
from tests.webapp.services.live_stack import Browser, add_user, api  # noqa: E402
from webapp.stack import Stack, free_port, group_members  # noqa: E402

CODEGEN = ("generations/codegen-16b-n100/"
           "HumanEval_codegen16B_temp0.8_topp0.95_num100_max300_code_solution.jsonl.gz")
DATASET = "humaneval/python/en"
PASSWORD = "bench-password-123"
PAGE_GOAL_S = 1.0
RATIO_GOAL = 10.0
REDIS_URL = "redis://127.0.0.1:6379/13"
"""The bench's own Redis database: another bench's services mode flushes and shares
`webapp_bench`'s (15), and its workers would take this stack's tasks."""

AGGREGATE = """
import json, os, time
from bench.common import memory_kb, peak_reset
from webapp.runs.worker.aggregation import _score
start_kb = peak_reset([os.getpid()])[os.getpid()]
start = time.perf_counter()
_score(run_id={run_id})
seconds = time.perf_counter() - start
print(json.dumps({{"seconds": seconds, "start_kb": start_kb,
                  "peak_kb": memory_kb(os.getpid())[1]}}))
"""
"""Run by `manage.py shell -c` in the stack's environment: the scores of one run, timed,
with the process's peak memory."""

DOWNLOADS = (
    ("run-page", "run page", "/runs/{run}/", True),
    ("api-read", "API read", "/api/runs/{run}", True),
    ("matrix.csv", "export matrix.csv", "/runs/{run}/export/matrix.csv", False),
    ("matrix.json", "export matrix.json", "/runs/{run}/export/matrix.json", False),
    ("results.jsonl", "export results.jsonl", "/runs/{run}/export/results.jsonl", False),
    ("api-results", "API results", "/api/runs/{run}/results", False),
    ("api-matrix", "API matrix", "/api/runs/{run}/matrix", False),
    ("compare", "compare page", "/compare/{run}/{partner}/", True),
)
"""What is fetched of a finished run: step, label, path, and whether it is a page (timed
--repeats times, with the 1 s goal) rather than a download (once)."""
STEPS = ("upload", "staging", "evaluation", "aggregation", *(step for step, *_ in DOWNLOADS))


def chosen_steps(names: str, *, built: bool) -> frozenset[str]:
    """The steps to measure, from a comma-separated list of STEPS ("all": every one).
    Evaluation needs its run staged, so it brings staging; --built drops it. Without
    evaluation the later steps are measured on runs built straight into the database."""
    steps = set(STEPS) if names.strip() == "all" else {
        name.strip() for name in names.split(",") if name.strip()}
    if unknown := steps - set(STEPS):
        raise ValueError(f"unknown steps {', '.join(sorted(unknown))}: "
                         f"choose from {', '.join(STEPS)}")
    if not steps:
        raise ValueError("no steps chosen")
    if built:
        steps.discard("evaluation")
    if "evaluation" in steps:
        steps.add("staging")
    return frozenset(steps)


@dataclass(frozen=True)
class Figure:
    seconds: float
    peak_mb: float
    growth_mb: float


def announce(label: str, figure: Figure) -> Figure:
    """Print a step's figure as soon as it is measured, with the load average then: a
    bench stopped before its table still leaves what it measured."""
    print(f"  {label:<38}{figure.seconds:10.3f} s {figure.peak_mb:8.0f} MB "
          f"(+{figure.growth_mb:.0f}); load {load_average()}", flush=True)
    return figure


class Peaks:
    """The peak memory of some processes from now on (see `bench.common.peak_reset`)."""

    def __init__(self, pids: list[int]) -> None:
        self.start = peak_reset(pids)

    def figure(self, seconds: float, label: str) -> Figure:
        peaks = {pid: memory_kb(pid)[1] for pid in self.start}
        growth = max((peaks[pid] - rss for pid, rss in self.start.items()), default=0)
        growth = max(growth, 0)  # a peak read just after the reset can trail the RSS
        return announce(label, Figure(seconds, max(peaks.values(), default=0) / 1024,
                                      growth / 1024))


def write_files(source: Path, per_task: int, factor: int,
                work: Path) -> tuple[dict[str, Path], int]:
    """The smaller file (the first `per_task` samples of each task of CodeT's layout),
    the larger (each task's samples `factor` times), and the warm-up (the smaller, gzipped:
    the same programs in a file of another hash); a primer for each of the timed runs (a
    distinct cached sample of each of two tasks); and the smaller file's sample count."""
    files = {"small": work / "small.jsonl", "large": work / "large.jsonl",
             "warm": work / "warm.jsonl.gz"}
    count = 0
    primers: list[dict[str, Any]] = []
    with gzip.open(source, "rt", encoding="utf-8") as lines, \
            files["small"].open("w", encoding="utf-8") as small, \
            files["large"].open("w", encoding="utf-8") as large, \
            gzip.open(files["warm"], "wt", encoding="utf-8") as warm:
        for line in lines:
            record = json.loads(line)
            record["samples"] = record["samples"][:per_task]
            small.write(json.dumps(record) + "\n")
            warm.write(json.dumps(record) + "\n")
            large.write(json.dumps(dict(record, samples=record["samples"] * factor)) + "\n")
            count += len(record["samples"])
            primers.append(record)
    for offset, size in enumerate(("small", "large")):
        files[f"prime-{size}"] = work / f"prime-{size}.jsonl"
        files[f"prime-{size}"].write_text("".join(
            json.dumps(dict(record, samples=record["samples"][offset:offset + 1])) + "\n"
            for record in primers[:2]), encoding="utf-8")
    return files, count


def post_file(stack: Stack, token: str, path: Path, *, name: str, dry_run: bool,
              timeout: float) -> tuple[int, dict[str, Any]]:
    """`POST /api/runs` with the file streamed from disk (the bench holds none of it)."""
    boundary = uuid.uuid4().hex
    fields = {"dataset": DATASET, "name": name, **({"dry_run": "1"} if dry_run else {})}
    head = "".join(f'--{boundary}\r\nContent-Disposition: form-data; name="{key}"\r\n\r\n'
                   f"{value}\r\n" for key, value in fields.items())
    head += (f'--{boundary}\r\nContent-Disposition: form-data; name="file"; '
             f'filename="{path.name}"\r\nContent-Type: application/octet-stream\r\n\r\n')
    tail = f"\r\n--{boundary}--\r\n".encode()
    connection = http.client.HTTPConnection(urllib.parse.urlsplit(stack.url).netloc,
                                            timeout=timeout)
    try:
        connection.putrequest("POST", "/api/runs")
        connection.putheader("Authorization", f"Bearer {token}")
        connection.putheader("Content-Type", f"multipart/form-data; boundary={boundary}")
        connection.putheader("Content-Length",
                             str(len(head.encode()) + path.stat().st_size + len(tail)))
        connection.endheaders()
        connection.send(head.encode())
        with path.open("rb") as body:
            connection.send(body)
        connection.send(tail)
        response = connection.getresponse()
        return response.status, json.loads(response.read() or b"{}")
    finally:
        connection.close()


def fetch(browser: Browser, path: str, *, timeout: float) -> float:
    """Seconds to GET `path` with the browser's session, read to the end in blocks."""
    start = time.perf_counter()
    try:
        with browser.opener.open(browser.base + path, timeout=timeout) as response:
            while response.read(1 << 20):
                pass
    except urllib.error.HTTPError as exc:
        raise SystemExit(f"GET {path}: HTTP {exc.code}") from exc
    return time.perf_counter() - start


def restart(stack: Stack, name: str, *, timeout: float = 180.0) -> int:
    """Start the stack's `name` process (web or worker) afresh, and wait until it serves; its
    pid. A process that has served a big request keeps the memory its allocator freed, and
    the next step would reuse it unseen: each measured step gets a fresh process."""
    process = stack.processes.pop(name)
    process.terminate()
    process.wait(timeout=timeout)
    if name == "web":
        stack.start_web()
        stack.wait_ready(timeout=timeout)
        return stack.processes[name].pid
    log = (stack.log_dir or Path()) / f"{name}.log"
    ready = log.read_text(errors="replace").count(" ready.")
    stack.start_worker(name)
    deadline = time.monotonic() + timeout
    while log.read_text(errors="replace").count(" ready.") <= ready:
        if time.monotonic() > deadline:
            raise SystemExit(f"the restarted {name} was not ready within {timeout:.0f} s")
        time.sleep(0.2)
    return stack.processes[name].pid


def stop(stack: Stack, name: str) -> None:
    process = stack.processes.pop(name)
    process.terminate()
    process.wait(timeout=60)


def measure_intake(stack: Stack, token: str, path: Path, primer: Path, *, name: str,
                   steps: frozenset[str], timeout: float,
                   ) -> tuple[int | None, dict[str, Figure], Peaks]:
    """Upload and staging of one file, as far as `steps` ask; the run's id (None unless
    staged), the figures, and the peaks of the worker, started afresh before the run was
    queued and primed with a run of two samples (each pool process builds its engine once:
    the sandbox's calibration and runners)."""
    figures = {}
    if "upload" in steps:
        peaks = Peaks([restart(stack, "web")])
        start = time.perf_counter()
        status, body = post_file(stack, token, path, name=name, dry_run=True,
                                 timeout=timeout)
        if status != 200:
            raise SystemExit(f"dry run of {path.name}: HTTP {status} {str(body)[:500]}")
        label = "upload (dry run: receive + validate)"
        figures[label] = peaks.figure(time.perf_counter() - start, label)
    if "staging" not in steps:
        return None, figures, Peaks([])
    peaks = Peaks([restart(stack, "web")])
    pool = []
    if "worker" in stack.processes:
        pool = group_members(restart(stack, "worker"))
        evaluate(stack, token, primer, timeout=timeout)
    workers = Peaks(pool)
    start = time.perf_counter()
    status, body = post_file(stack, token, path, name=name, dry_run=False, timeout=timeout)
    if status != 201:
        raise SystemExit(f"upload of {path.name}: HTTP {status} {str(body)[:500]}")
    label = "staging (POST: + rows in the DB)"
    figures[label] = peaks.figure(time.perf_counter() - start, label)
    return int(body["id"]), figures, workers


def measure_aggregation(stack: Stack, run_id: int) -> Figure:
    output = stack.manage("shell", "-c", AGGREGATE.format(run_id=run_id), capture=True)
    done = json.loads(output.strip().splitlines()[-1])
    return announce("aggregation (bootstrap intervals)",
                    Figure(done["seconds"], done["peak_kb"] / 1024,
                           (done["peak_kb"] - done["start_kb"]) / 1024))


def measure_downloads(stack: Stack, browser: Browser, run_id: int, partner: int, *,
                      steps: frozenset[str], repeats: int, timeout: float,
                      ) -> dict[str, Figure]:
    """Each page and download of DOWNLOADS among `steps` on a fresh web process. A page is
    first drawn for the partner run (the process's own first request: imports, templates),
    then timed for the run, uncached, then `repeats` times more (from the page cache, where
    it keeps the page): two rows."""
    figures = {}
    for step, label, template, page in DOWNLOADS:
        if step not in steps:
            continue
        path = template.format(run=run_id, partner=partner)
        pid = restart(stack, "web")
        if page:
            fetch(browser, template.format(run=partner, partner=run_id), timeout=timeout)
        peaks = Peaks([pid])
        figures[label] = peaks.figure(fetch(browser, path, timeout=timeout), label)
        if page:
            times = [fetch(browser, path, timeout=timeout) for _ in range(repeats)]
            figures[f"{label}, again"] = peaks.figure(statistics.median(times),
                                                      f"{label}, again")
    return figures


def built_run(stack: Stack, per_task: int, name: str) -> int:
    """A finished run of `per_task` samples per task, built straight into the database
    (`tests.webapp.large_run`)."""
    output = stack.manage("shell", "-c", (
        "from tests.webapp.large_run import main; "
        f"main('bench', {per_task}, {name!r})"), capture=True)
    return int(output.split()[-1])


def measure_run(stack: Stack, token: str, browser: Browser, path: Path, primer: Path, *,
                per_task: int, steps: frozenset[str], args: argparse.Namespace,
                ) -> dict[str, Figure]:
    print(f"{path.stem} ({per_task} per task); load {load_average()}", flush=True)
    run_id, figures, workers = measure_intake(stack, token, path, primer, name=path.stem,
                                              steps=steps, timeout=args.run_timeout)
    downloads = steps & {step for step, *_ in DOWNLOADS}
    if "evaluation" in steps and run_id is not None:
        seconds = wait_finished(stack, token, [run_id], timeout=args.run_timeout)
        label = "evaluation overhead (worker)"
        figures[label] = workers.figure(seconds, label)
    elif "aggregation" in steps or downloads:
        # An uploaded run stays queued (no worker is running); the rest is measured on a
        # run of the same size built with its verdicts.
        run_id = built_run(stack, per_task, f"built n={per_task}")
    else:
        return figures
    _, summary = api(stack.url, token, f"/api/runs/{run_id}?problems=0")
    progress = summary["progress"]
    print(f"  run {run_id}: {progress['total']:,} samples, {progress['cached']:,} from the "
          f"cache; load {load_average()}", flush=True)
    if "aggregation" in steps:
        figures["aggregation (bootstrap intervals)"] = measure_aggregation(stack, run_id)
    if downloads:
        # The partner: the compare page's other run, and each page's first request.
        pages = {step for step, *_, page in DOWNLOADS if page}
        partner = (built_run(stack, per_task, f"partner n={per_task}") if downloads & pages
                   else run_id)
        figures.update(measure_downloads(stack, browser, run_id, partner, steps=downloads,
                                         repeats=args.repeats, timeout=args.run_timeout))
    return figures


def evaluate(stack: Stack, token: str, path: Path, *, timeout: float) -> float:
    """Upload a file and wait until its run is finished; the seconds it took."""
    start = time.perf_counter()
    status, body = post_file(stack, token, path, name=path.stem, dry_run=False,
                             timeout=timeout)
    if status != 201:
        raise SystemExit(f"upload of {path.name}: HTTP {status} {str(body)[:500]}")
    wait_finished(stack, token, [int(body["id"])], timeout=timeout)
    return time.perf_counter() - start


def bench(args: argparse.Namespace, steps: frozenset[str], files: dict[str, Path], work: Path,
          ) -> dict[str, dict[str, Figure]]:
    env = {"WORKBENCH_VAR_DIR": str(work / "var"), "EVALUATOR_SANDBOX": args.sandbox,
           "DJANGO_SECRET_KEY": secrets.token_urlsafe(40), "DATABASE_URL": "", "REDIS_URL": ""}
    mode = "services" if args.database == "postgres" else "embedded"
    with services_env(env, mode, redis_url=REDIS_URL):
        stack = Stack(env=env, port=free_port(), concurrency=args.workers,
                      log_dir=work / "logs")
        try:
            stack.prepare(static=True)
            token = add_user(stack, "bench", PASSWORD)
            stack.start(timeout=180)
            browser = Browser(stack.url)
            browser.sign_in("bench", PASSWORD)
            # Beat's sweeper would take over a built run whose scoring outlasts its lease
            # on a busy machine; nothing here needs it.
            stop(stack, "beat")
            if "evaluation" not in steps:
                stop(stack, "worker")
            else:
                # The programs evaluated once, for real: the timed runs find them cached.
                seconds = evaluate(stack, token, files["warm"], timeout=args.run_timeout)
                print(f"warm-up (the programs evaluated for real): {seconds:.1f} s; "
                      f"load {load_average()}", flush=True)
            return {size: measure_run(stack, token, browser, files[size],
                                      files[f"prime-{size}"], steps=steps, args=args,
                                      per_task=args.per_task * (args.factor if size == "large"
                                                                else 1))
                    for size in ("small", "large")}
        finally:
            stack.stop()


def ratio(large: float, small: float) -> str:
    return f"{large / small:.1f}×" if small > 0.001 else "-"


def print_table(results: dict[str, dict[str, Figure]], small_n: int, large_n: int) -> None:
    pages = {label for _, label, _, page in DOWNLOADS if page}
    print(f"\n{'step':<38}{f'{small_n:,}: s':>12}{'MB (+growth)':>15}"
          f"{f'{large_n:,}: s':>12}{'MB (+growth)':>15}{'time':>8}{'growth':>8}  goal")
    for label, small in results["small"].items():
        large = results["large"][label]
        time_ratio = large.seconds / small.seconds if small.seconds else 0.0
        misses = [f"time over {RATIO_GOAL:.0f}×"] if time_ratio > RATIO_GOAL else []
        if label in pages and large.seconds >= PAGE_GOAL_S:
            misses.append(f"over {PAGE_GOAL_S:.0f} s")
        print(f"{label:<38}{small.seconds:>12.3f}"
              f"{f'{small.peak_mb:.0f} (+{small.growth_mb:.0f})':>15}{large.seconds:>12.3f}"
              f"{f'{large.peak_mb:.0f} (+{large.growth_mb:.0f})':>15}"
              f"{ratio(large.seconds, small.seconds):>8}"
              f"{ratio(large.growth_mb, small.growth_mb) if small.growth_mb >= 1 else '-':>8}"
              f"  {', '.join(misses) or 'ok'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database", choices=("sqlite", "postgres"), default="sqlite",
                        help="sqlite: the embedded defaults; postgres: PostgreSQL + Redis")
    parser.add_argument("--per-task", type=int, default=100,
                        help="samples per task of the smaller run (100: 16,400)")
    parser.add_argument("--factor", type=int, default=10, help="the larger run's multiple")
    parser.add_argument("--workers", type=int, default=2, help="Celery worker processes")
    parser.add_argument("--repeats", type=int, default=3, help="timed requests per page")
    parser.add_argument("--sandbox", default="auto")
    parser.add_argument("--built", action="store_true",
                        help="no worker and no evaluation: the files are uploaded, and the "
                             "later steps measured on runs built straight into the database")
    parser.add_argument("--steps", default="all",
                        help="the steps to measure, comma-separated, of: " + ", ".join(STEPS)
                             + " (evaluation brings staging; without evaluation the later "
                               "steps are measured on runs built straight into the database)")
    parser.add_argument("--run-timeout", type=float, default=7200.0,
                        help="seconds allowed for one upload, evaluation or download")
    args = parser.parse_args()
    # Stopped by `kill` or `timeout`, it still stops the stack it started (`bench`'s finally).
    signal.signal(signal.SIGTERM, lambda _signum, _frame: sys.exit(143))
    if not 1 <= args.per_task <= 100 or args.factor < 2:
        parser.error("--per-task is 1 to 100 (the file's samples per task), --factor ≥ 2")
    try:
        steps = chosen_steps(args.steps, built=args.built)
    except ValueError as exc:
        parser.error(str(exc))
    with tempfile.TemporaryDirectory(prefix="scale-bench-") as folder:
        work = Path(folder)
        files, count = write_files(shared_dir() / CODEGEN, args.per_task, args.factor, work)
        print(f"{args.database}: {count:,} against {count * args.factor:,} samples; "
              f"load {load_average()}", flush=True)
        results = bench(args, steps, files, work)
    print(f"load average after: {load_average()}")
    print_table(results, count, count * args.factor)
    print(json.dumps({size: {label: vars(figure) for label, figure in figures.items()}
                      for size, figures in results.items()}))


if __name__ == "__main__":
    main()
