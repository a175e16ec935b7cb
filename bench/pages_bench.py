"""Weight and server time of the main pages, and their latency under 20 concurrent clients.

Two modes.

In-process (the default): three runs of HumanEval on a database of the bench's own,

  A  100 samples per task (16,400), B the first 50 and C the last 50,

built straight into the database with their verdicts (`tests.webapp.large_run`: no program
is run, the scores are computed for real), or with --evaluate, CodeGen-16B's generations
from `generations/codegen-16b-n100/` evaluated for real (slow). Then, for each main page:
its weight (bytes of HTML plus the static files it loads: scripts, style sheets and the
Plotly bundle its charts fetch) and its server time with Django's test client (routing,
queries, aggregation and rendering, no network): cold (the first request, after the cache
is cleared) and warm (the median and maximum of --repeats more).

    python bench/pages_bench.py [--database sqlite|postgres] [--repeats 10] [--evaluate]

Under load (--clients N): the production stack on PostgreSQL and a Redis server of the
bench's own (uvicorn, a Celery worker with 2 processes, beat), a finished run of
--per-task samples per task built as above, and an evaluation going on (a --running-samples
upload of distinct programs, made public). N clients, each on its own keep-alive connection
and signed in as an account of its own (--viewers one: all as one account, which flatters any
cache kept per viewer), request the run page of the running run, the big run's page, the
leaderboard and `GET /api/runs/<id>` in turn for --duration seconds. Reports p50/p95/max
per page, requests per second and the load average; the goals are run page p95 < 500 ms
and leaderboard p95 < 300 ms.

    python bench/pages_bench.py --clients 20 [--duration 60] [--per-task 100]
                                [--web-processes 1] [--viewers distinct|one]
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import http.client
import json
import math
import os
import re
import shutil
import statistics
import sys
import tempfile
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.common import bench_client, bench_user, load_average, shared_dir, stop_services  # noqa: E402

TARGET_MS = 500.0
POSTGRES_ADMIN = "postgresql://postgres@127.0.0.1:5432/postgres"
POSTGRES_DB = "workbench_pages_bench"


def configure(args: argparse.Namespace) -> None:
    """Environment for Django, before it is imported: a database of our own, eager tasks."""
    work = Path(args.work).resolve()
    work.mkdir(parents=True, exist_ok=True)
    os.environ["DJANGO_SETTINGS_MODULE"] = "webapp.settings"
    os.environ["WORKBENCH_VAR_DIR"] = str(work / "var")
    # Pages are served without static files here; WhiteNoise only wants the folder to exist.
    (work / "var" / "staticfiles").mkdir(parents=True, exist_ok=True)
    os.environ["CELERY_TASK_ALWAYS_EAGER"] = "1"
    os.environ["EVALUATOR_SANDBOX"] = args.sandbox
    os.environ["EVALUATOR_WORKERS"] = str(args.workers)
    os.environ["WORKBENCH_CHUNK_SAMPLES"] = "400"
    os.environ.pop("REDIS_URL", None)
    if args.database == "postgres":
        import psycopg

        with psycopg.connect(POSTGRES_ADMIN, autocommit=True) as admin:
            exists = admin.execute("SELECT 1 FROM pg_database WHERE datname = %s",
                                   (POSTGRES_DB,)).fetchone()
            if not exists:
                admin.execute(f'CREATE DATABASE "{POSTGRES_DB}"')
        os.environ["DATABASE_URL"] = POSTGRES_ADMIN.rsplit("/", 1)[0] + f"/{POSTGRES_DB}"
    else:
        os.environ["DATABASE_URL"] = f"sqlite:///{work / 'pages.sqlite3'}"


def subset(source: Path, target: Path, part: slice) -> Path:
    """The CodeT-layout file with only `part` of each record's samples."""
    with gzip.open(source, "rt") as lines, target.open("w") as out:
        for line in lines:
            record = json.loads(line)
            record["samples"] = record["samples"][part]
            out.write(json.dumps(record) + "\n")
    return target


def build_runs(big: Path, work: Path) -> dict[str, Any]:

    from evaluator.datasets import load_dataset
    from webapp.benchmarks.services import dataset_import
    from webapp.runs.models import Run
    from webapp.runs.services.writes import run_create
    from webapp.runs.upload_checks.files import EvaluationOptions, upload_check
    from webapp.teams.selectors import default_team

    user = bench_user()
    dataset = dataset_import(loaded=load_dataset(), source="package:humaneval").dataset
    team = default_team(user=user)
    plans = [
        ("codegen-16b n=100", "codegen-16b", big, slice(None)),
        ("codegen-16b first 50", "codegen-16b (first 50)", work / "first50.jsonl", slice(0, 50)),
        ("codegen-16b last 50", "codegen-16b (last 50)", work / "last50.jsonl", slice(50, 100)),
    ]
    runs: dict[str, Any] = {"timings": {}}
    for name, model, path, part in plans:
        existing = Run.objects.filter(name=name, status=Run.Status.FINISHED).first()
        if existing is not None:
            runs[name] = existing
            continue
        if part != slice(None):
            subset(big, path, part)
        data = path.read_bytes()
        check = upload_check(path=path, file_name=path.name,
                             sha256=hashlib.sha256(data).hexdigest(), size=len(data),
                             dataset=dataset, options=EvaluationOptions())
        if not check.ok:
            raise SystemExit(f"{path.name}: {check.issues[:3]}")
        start = time.perf_counter()
        # Eager Celery: run_create's on-commit hook evaluates every chunk before returning.
        run = run_create(owner=user, team=team, check=check, name=name, model_name=model,
                         visibility=Run.Visibility.PUBLIC)
        run.refresh_from_db()
        runs["timings"][name] = round(time.perf_counter() - start, 1)
        if run.status != Run.Status.FINISHED:
            raise SystemExit(f"{name} ended {run.status}: {run.error}")
        runs[name] = run
        print(f"  {name}: {run.samples_total} samples, {run.cached_count} from the cache, "
              f"evaluated in {runs['timings'][name]} s", flush=True)
    return runs


def build_runs_directly() -> dict[str, Any]:
    """A, B and C with their verdicts written straight into the database, then scored."""

    from evaluator.datasets import load_dataset
    from tests.webapp.large_run import large_run_create
    from webapp.benchmarks.services import dataset_import
    from webapp.runs.models import Run
    from webapp.teams.selectors import default_team

    user = bench_user()
    dataset = dataset_import(loaded=load_dataset(), source="package:humaneval").dataset
    runs: dict[str, Any] = {"timings": {}}
    for name, per_task in (("codegen-16b n=100", 100), ("codegen-16b first 50", 50),
                           ("codegen-16b last 50", 50)):
        existing = Run.objects.filter(name=name, status=Run.Status.FINISHED).first()
        if existing is None:
            start = time.perf_counter()
            existing = large_run_create(owner=user, team=default_team(user=user),
                                        dataset=dataset, per_task=per_task, name=name)
            runs["timings"][name] = round(time.perf_counter() - start, 1)
        runs[name] = existing
    return runs


def page_assets(html: str) -> list[str]:
    """The static files a page loads: its scripts and style sheets, and the Plotly bundle
    named by a chart's `data-plotly` (fetched by the page's script)."""
    found = re.findall(r'<script[^>]+src="([^"]+)"', html)
    found += re.findall(r'<link[^>]+rel="stylesheet"[^>]+href="([^"]+)"', html)
    found += re.findall(r'<link[^>]+href="([^"]+)"[^>]+rel="stylesheet"', html)
    found += sorted(set(re.findall(r'data-plotly="([^"]+)"', html)))
    return list(dict.fromkeys(path for path in found if path.startswith("/static/")))


def asset_size(url: str) -> int:
    from django.contrib.staticfiles import finders

    name = url.split("?", 1)[0].removeprefix("/static/")
    # A hashed name from the manifest (`name.0123abcd.js`) is looked up without its hash.
    path = finders.find(name) or finders.find(re.sub(r"\.[0-9a-f]{12}(\.\w+)$", r"\1", name))
    return Path(str(path)).stat().st_size if path else 0


def body_of(response: Any) -> bytes:
    if hasattr(response, "streaming_content"):
        return b"".join(response.streaming_content)
    return bytes(response.content)


def time_page(client: Any, path: str, repeats: int) -> dict[str, Any]:
    """Cold (the first request, with the cache cleared) and warm times of one page, and
    its weight."""
    from django.core.cache import cache

    cache.clear()
    start = time.perf_counter()
    response = client.get(path)
    body = body_of(response)
    cold = (time.perf_counter() - start) * 1000
    if response.status_code != 200:
        raise SystemExit(f"{path}: HTTP {response.status_code}")
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        response = client.get(path)
        body_of(response)
        times.append((time.perf_counter() - start) * 1000)
        assert response.status_code == 200, (path, response.status_code)
    assets = page_assets(body.decode(errors="replace")) if b"<html" in body[:500] else []
    sizes = {url: asset_size(url) for url in assets}
    return {"cold_ms": round(cold, 1), "median_ms": round(statistics.median(times), 1),
            "max_ms": round(max(times), 1), "html_bytes": len(body),
            "asset_bytes": sum(sizes.values()),
            "plotly": [url.rsplit("/", 1)[-1] for url in sizes if "/plotly/" in url]}


def in_process(args: argparse.Namespace) -> None:
    configure(args)

    import django

    django.setup()
    from django.db.models import F

    print(f"load average before: {load_average()}", flush=True)
    if args.evaluate:
        big = next((shared_dir() / "generations/codegen-16b-n100").glob("*.jsonl.gz"))
        runs = build_runs(big, Path(args.work))
    else:
        runs = build_runs_directly()
    a, b, c = (runs[name] for name in ("codegen-16b n=100", "codegen-16b first 50",
                                       "codegen-16b last 50"))
    client = bench_client()
    team = a.team.slug
    failing_problem = a.problem_results.filter(c__lt=F("n"), c__gt=0).order_by("problem__number")
    number = failing_problem.values_list("problem__number", flat=True).first() or 0
    pages = {
        "run page": f"/runs/{a.pk}/",
        "run page, 2 overlays": f"/runs/{a.pk}/?overlay={b.pk},{c.pk}",
        "run page, sorted + filtered": f"/runs/{a.pk}/?sort=pass1&order=desc&show=failing",
        # Defect-aware scores (three ways, each with its bootstrap interval): the run page
        # and the leaderboard ranked by each way.
        "run page, scores=excluding": f"/runs/{a.pk}/?scores=excluding",
        "run page, scores=patched": f"/runs/{a.pk}/?scores=patched",
        "comparison (A vs B)": f"/compare/{a.pk}/{b.pk}/",
        "comparison, filtered": f"/compare/{a.pk}/{b.pk}/?differ=1&failures=1",
        "baseline vs 2": f"/compare/baseline/{a.pk}/?with={b.pk},{c.pk}",
        "compare many (3 runs)": f"/compare/many/?runs={a.pk}&runs={b.pk}&runs={c.pk}",
        "side by side": f"/compare/{a.pk}/{b.pk}/problems/{number}/?ws=1&canonical=1",
        "leaderboard (global)": "/leaderboard/",
        "leaderboard (team)": f"/teams/{team}/leaderboard/",
        "leaderboard, scores=excluding": "/leaderboard/?scores=excluding",
        "leaderboard, scores=patched": "/leaderboard/?scores=patched",
        "upload page": "/runs/new/",
        "problem list": "/problems/",
        "problem page": f"/problems/{number}/",
        "sample list (failed)": f"/runs/{a.pk}/samples/?status=failed",
        "sample page": a.samples.filter(status="failed").first().get_absolute_url(),
        "export: results.jsonl": f"/runs/{a.pk}/export/results.jsonl",
        "export: matrix.csv": f"/runs/{a.pk}/export/matrix.csv",
    }
    figures = {label: time_page(client, path, args.repeats if "export" not in label else 3)
               for label, path in pages.items()}
    print(f"load average after: {load_average()}")
    print(f"\nDatabase: {args.database} · runs of {a.samples_total:,}, {b.samples_total:,} and "
          f"{c.samples_total:,} samples · pass@1 of A = "
          f"{a.metrics.get(k=1).value:.4f} · "
          f"{'evaluated' if args.evaluate else 'built directly'}")
    print(f"{'page':<30}{'cold ms':>9}{'warm ms':>9}{'max ms':>9}{'HTML kB':>9}"
          f"{'assets kB':>11}  Plotly bundle   target")
    targets = {"run page", "comparison (A vs B)", "leaderboard (global)", "leaderboard (team)",
               "run page, scores=excluding", "run page, scores=patched",
               "leaderboard, scores=excluding", "leaderboard, scores=patched"}
    failed = []
    for label, result in figures.items():
        verdict = ""
        if label in targets:
            verdict = "ok" if result["median_ms"] < TARGET_MS else "OVER 500 ms"
            if result["median_ms"] >= TARGET_MS:
                failed.append(label)
        print(f"{label:<30}{result['cold_ms']:>9}{result['median_ms']:>9}{result['max_ms']:>9}"
              f"{result['html_bytes'] / 1000:>9.1f}{result['asset_bytes'] / 1000:>11.1f}  "
              f"{', '.join(result['plotly']) or '-':<15} {verdict}")
    print(json.dumps({"database": args.database, "pages": figures,
                      "build_s": runs["timings"]}, indent=None))
    if failed:
        raise SystemExit(f"over the 500 ms target: {', '.join(failed)}")


# -- under load ----------------------------------------------------------------------------

LOAD_GOALS_MS = {"run page (running)": 500.0, "run page (16,400)": 500.0,
                 "leaderboard": 300.0}


@dataclass
class LoadClient:
    """One viewer: a keep-alive connection and a signed-in session."""

    host: str
    cookie: str
    times: dict[str, list[float]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)

    def run(self, pages: dict[str, str], stop: float, offset: int) -> None:
        connection = http.client.HTTPConnection(self.host, timeout=120)
        labels = list(pages)
        turn = offset
        while time.monotonic() < stop:
            label = labels[turn % len(labels)]
            turn += 1
            start = time.perf_counter()
            try:
                connection.request("GET", pages[label], headers={"Cookie": self.cookie})
                response = connection.getresponse()
                response.read()
            except (OSError, http.client.HTTPException) as exc:
                self.errors.append(f"{label}: {type(exc).__name__}: {exc}")
                connection.close()
                connection = http.client.HTTPConnection(self.host, timeout=120)
                continue
            elapsed = (time.perf_counter() - start) * 1000
            if response.status != 200:
                self.errors.append(f"{label}: HTTP {response.status}")
            self.times.setdefault(label, []).append(elapsed)
            if response.getheader("Connection", "").lower() == "close":
                connection.close()
                connection = http.client.HTTPConnection(self.host, timeout=120)
        connection.close()


def cpu_seconds(pids: list[int]) -> float:
    """The user and system CPU time the processes have used so far, from /proc: what the
    web processes spend per request, which the load of a shared machine does not change
    as much as it changes their latency."""
    ticks = 0
    for pid in pids:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        # After "pid (comm) ": state ... utime is the 12th field and stime the 13th.
        fields = stat[stat.rindex(")") + 2:].split()
        ticks += int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(fraction * len(ordered)) - 1))]


def signed_in_cookies(stack: Any, browser_class: Any, *, count: int,
                      password: str) -> list[str]:
    """The session cookies of `count` viewers, each signed in as an account of its own, so
    that nothing one viewer's requests leave in a cache is kept for that viewer alone."""
    names = [f"viewer{i}" for i in range(count)]
    stack.manage("shell", "-c", (
        "from webapp.teams.services import user_sign_up; "
        f"[user_sign_up(username=name, password={password!r}) for name in {names!r}]"))
    cookies = []
    for name in names:
        browser = browser_class(stack.url)
        browser.sign_in(name, password)
        cookies.append("; ".join(f"{c.name}={c.value}" for c in browser.jar))
    return cookies


def patch_run(base: str, token: str, run_id: int, changes: dict[str, Any]) -> tuple[int, Any]:
    """`PATCH /api/runs/<id>` with a JSON body."""
    import urllib.error
    import urllib.request

    request = urllib.request.Request(
        f"{base}/api/runs/{run_id}", data=json.dumps(changes).encode(), method="PATCH",
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:  # noqa: S310
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(errors="replace")


def under_load(args: argparse.Namespace) -> None:
    from bench.live_load import PASSWORD, post_run, write_samples
    from evaluator.datasets import load_dataset
    from tests.webapp.services.live_stack import Browser, add_user, api
    from tests.webapp.services.real_services import (
        PostgresDatabase,
        RedisServer,
        services_stack,
    )
    from webapp.stack import group_members

    work = Path(tempfile.mkdtemp(prefix="pages-load-"))
    database = redis_server = stack = None
    try:
        database = PostgresDatabase()
        redis_server = RedisServer(work / "logs")
        stack = services_stack(work, {
            "DATABASE_URL": database.url, "REDIS_URL": redis_server.url,
            "EVALUATOR_SANDBOX": args.sandbox,
            # uvicorn's --workers defaults to this: web processes behind one socket.
            "WEB_CONCURRENCY": str(args.web_processes),
        }, concurrency=2, chunk_samples=25)
        stack.prepare(static=True)
        token = add_user(stack, "bench", PASSWORD)
        start = time.perf_counter()
        output = stack.manage("shell", "-c", (
            "from tests.webapp.large_run import main; "
            f"main('bench', {args.per_task}, 'codegen-16b n={args.per_task}'); "
            "main('bench', 10, 'smaller model n=10'); main('bench', 5, 'tiny model n=5')"),
            capture=True)
        big = int(output.split()[-3])
        print(f"built runs {output.split()[-3:]} ({args.per_task * 164:,} samples for the big "
              f"one) in {time.perf_counter() - start:.1f} s", flush=True)
        stack.start(timeout=180)
        cookies = signed_in_cookies(stack, Browser, count=args.clients if args.viewers ==
                                    "distinct" else 1, password=PASSWORD)
        problems = load_dataset().problems
        per_task = max(1, args.running_samples // len(problems))
        path = write_samples(work / "running.jsonl", problems, per_task=per_task,
                             tag=f"load-{os.getpid()}-{time.time()}")
        status, created = post_run(stack.url, token, path, "under load")
        if status != 201:
            raise SystemExit(f"upload: HTTP {status} {created}")
        running = int(created["id"])
        # Every viewer may read it, whoever they are signed in as.
        status, answer = patch_run(stack.url, token, running, {"visibility": "public"})
        if status != 200:
            raise SystemExit(f"making the run public: HTTP {status} {answer}")
        # Wait until the evaluation is really going: some samples done.
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            _, body = api(stack.url, token, f"/api/runs/{running}?problems=0")
            if body["progress"]["done"] >= 10:
                break
            time.sleep(0.5)
        done_before = body["progress"]["done"]
        pages = {"run page (running)": f"/runs/{running}/",
                 "run page (16,400)" if args.per_task == 100
                 else f"run page ({args.per_task * 164:,})": f"/runs/{big}/",
                 "leaderboard": "/leaderboard/",
                 "api run": f"/api/runs/{running}"}
        host = urllib.parse.urlsplit(stack.url).netloc
        clients = [LoadClient(host=host, cookie=cookies[i % len(cookies)])
                   for i in range(args.clients)]
        print(f"load average before the clients: {load_average()}; run {running} at "
              f"{done_before}/{body['progress']['total']} samples", flush=True)
        web = group_members(stack.processes["web"].pid)
        web_cpu = cpu_seconds(web)
        stop = time.monotonic() + args.duration
        threads = [threading.Thread(target=c.run, args=(pages, stop, i))
                   for i, c in enumerate(clients)]
        started = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        elapsed = time.perf_counter() - started
        web_cpu = cpu_seconds(web) - web_cpu
        load_after = load_average()
        _, body = api(stack.url, token, f"/api/runs/{running}?problems=0")
        print(f"load average after {elapsed:.0f} s of {args.clients} clients: {load_after}; "
              f"run {running}: {body['status']}, {body['progress']['done'] - done_before:,} "
              f"samples evaluated meanwhile (sandbox policy {args.sandbox})")
        if body["status"] not in ("queued", "running", "aggregating"):
            # Its page was then a finished run's page, drawn anew once, for the rest.
            print(f"NOTE: run {running} came to rest before the load ended, so not every "
                  "'run page (running)' request was of a running run: a larger "
                  "--running-samples keeps it going")
        total = sum(len(c.times.get(label, [])) for c in clients for label in pages)
        print(f"{total:,} requests, {total / elapsed:.1f}/s, {args.web_processes} web "
              f"process{'es' if args.web_processes > 1 else ''}, which used "
              f"{web_cpu * 1000 / max(1, total):.1f} ms of CPU per request "
              f"({web_cpu / elapsed:.0%} of a core)")
        print(f"{'page':<24}{'requests':>9}{'p50 ms':>9}{'p95 ms':>9}{'max ms':>9}  goal")
        results: dict[str, Any] = {}
        for label in pages:
            times = [t for c in clients for t in c.times.get(label, [])]
            if not times:
                print(f"{label:<24} no answer")
                continue
            p50, p95 = percentile(times, 0.5), percentile(times, 0.95)
            goal = LOAD_GOALS_MS.get(label)
            verdict = "" if goal is None else ("ok" if p95 < goal else f"OVER {goal:.0f} ms")
            results[label] = {"n": len(times), "p50": round(p50), "p95": round(p95),
                              "max": round(max(times))}
            print(f"{label:<24}{len(times):>9}{p50:>9.0f}{p95:>9.0f}{max(times):>9.0f}  "
                  f"{verdict}")
        errors = [e for c in clients for e in c.errors]
        if errors:
            print(f"{len(errors)} errors, e.g. {errors[:5]}")
        print(json.dumps({"clients": args.clients, "duration_s": round(elapsed),
                          "load_average": load_after, "pages": results,
                          "web_cpu_ms_per_request": round(web_cpu * 1000 / max(1, total), 1)}))
    finally:
        stop_services(stack=stack, redis_server=redis_server, database=database)
        if args.keep:
            print(f"work folder kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--sandbox", default="auto")
    parser.add_argument("--workers", type=int, default=2, help="evaluator threads")
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--evaluate", action="store_true",
                        help="evaluate CodeGen-16B's generations instead of building the runs")
    parser.add_argument("--work", default=str(REPO / "var" / "pages-bench"),
                        help="where the database and derived files are kept between calls")
    parser.add_argument("--clients", type=int, default=0,
                        help="concurrent clients against a real server (0: in-process)")
    parser.add_argument("--duration", type=float, default=60.0, help="seconds of load")
    parser.add_argument("--per-task", type=int, default=100,
                        help="samples per task of the big finished run (100: 16,400)")
    parser.add_argument("--running-samples", type=int, default=1640,
                        help="samples of the run evaluated during the load")
    parser.add_argument("--viewers", choices=("distinct", "one"), default="distinct",
                        help="under load: each client signed in as its own account (the "
                             "default), or all as one")
    parser.add_argument("--web-processes", type=int, default=1,
                        help="uvicorn worker processes under load (WEB_CONCURRENCY)")
    parser.add_argument("--keep", action="store_true", help="keep the stack's work folder")
    args = parser.parse_args()
    if args.clients:
        under_load(args)
    else:
        in_process(args)


if __name__ == "__main__":
    main()
