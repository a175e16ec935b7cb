"""What a finished run's uncached page and API read cost as the run grows (issue 26), in
process: pass^k with its bootstrap intervals, the failure breakdown and the count of
unstable samples, then the run page and `GET /api/runs/<id>` with the cache cleared.

Runs of 100 and 1,000 samples per HumanEval task (16,400 and 164,000) are built straight
into a PostgreSQL database of the bench's own (`tests.webapp.large_run`: verdicts set, no
program run, the scores computed for real) and kept for the next call. Each figure is the
median of --repeats calls: wall time and CPU time of this process (the database's own time
is in the wall time only), then one more call under tracemalloc for the peak of Python's
allocations (numpy's included) and the growth of the process's peak resident set (VmHWM).

    python bench/finished_reads_bench.py [--repeats 5]

Each run is measured twice: "computed", its `RunDigest` removed (a run scored before
digests existed, whose reads compute every figure), then "stored", scored again with it.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.common import bench_client, bench_user, load_average, memory_kb, peak_reset  # noqa: E402

POSTGRES_ADMIN = "postgresql://postgres@127.0.0.1:5432/postgres"
POSTGRES_DB = "workbench_finished_reads_bench"
SIZES = (100, 1000)


def configure(work: Path) -> None:
    """A database and var folder of the bench's own, before Django is imported."""
    import psycopg

    (work / "var" / "staticfiles").mkdir(parents=True, exist_ok=True)
    os.environ["DJANGO_SETTINGS_MODULE"] = "webapp.settings"
    os.environ["WORKBENCH_VAR_DIR"] = str(work / "var")
    os.environ["CELERY_TASK_ALWAYS_EAGER"] = "1"
    os.environ.pop("REDIS_URL", None)
    with psycopg.connect(POSTGRES_ADMIN, autocommit=True) as admin:
        if not admin.execute("SELECT 1 FROM pg_database WHERE datname = %s",
                             (POSTGRES_DB,)).fetchone():
            admin.execute(f'CREATE DATABASE "{POSTGRES_DB}"')
    os.environ["DATABASE_URL"] = POSTGRES_ADMIN.rsplit("/", 1)[0] + f"/{POSTGRES_DB}"


def runs_of_each_size() -> dict[int, Any]:

    from evaluator.datasets import load_dataset
    from tests.webapp.large_run import large_run_create
    from webapp.benchmarks.services import dataset_import
    from webapp.runs.models import Run
    from webapp.teams.selectors import default_team

    user = bench_user()
    dataset = dataset_import(loaded=load_dataset(), source="package:humaneval").dataset
    runs = {}
    for per_task in SIZES:
        name = f"reads n={per_task}"
        run = Run.objects.filter(name=name, status=Run.Status.FINISHED).first()
        if run is None:
            start = time.perf_counter()
            run = large_run_create(owner=user, team=default_team(user=user), dataset=dataset,
                                   per_task=per_task, name=name)
            print(f"  built {name}: {run.samples_total:,} samples in "
                  f"{time.perf_counter() - start:.0f} s; load {load_average()}", flush=True)
        runs[per_task] = run
    return runs


def measure(call: Callable[[], object], repeats: int) -> dict[str, float]:
    """Median wall and CPU milliseconds of `repeats` calls, then the peaks of one more."""
    walls, cpus = [], []
    for _ in range(repeats):
        gc.collect()
        wall, cpu = time.perf_counter(), time.process_time()
        call()
        cpus.append((time.process_time() - cpu) * 1000)
        walls.append((time.perf_counter() - wall) * 1000)
    gc.collect()
    pid = os.getpid()
    start_kb = peak_reset([pid])[pid]
    tracemalloc.start()
    call()
    traced_peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return {"wall_ms": round(statistics.median(walls), 1),
            "cpu_ms": round(statistics.median(cpus), 1),
            "traced_peak_mb": round(traced_peak / 2**20, 2),
            "rss_growth_mb": round(max(memory_kb(pid)[1] - start_kb, 0) / 1024, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--work", default=str(REPO / "var" / "finished-reads-bench"))
    args = parser.parse_args()
    configure(Path(args.work).resolve())

    import django

    django.setup()
    from django.core.cache import cache

    from webapp.runs.models import RunDigest
    from webapp.runs.reads.reports import run_failure_breakdown
    from webapp.runs.reads.selectors import run_pass_hat_k, run_unstable_count
    from webapp.runs.worker.aggregation import _score

    print(f"load average before: {load_average()}", flush=True)
    runs = runs_of_each_size()
    client = bench_client()

    def uncached(path: str) -> Callable[[], object]:
        def get() -> object:
            cache.clear()
            response = client.get(path)
            assert response.status_code == 200, (path, response.status_code)
            return response.content
        return get

    client.get(f"/runs/{runs[SIZES[0]].pk}/")  # imports, templates, connections
    # "computed": the run's digest removed, as for a run scored before digests existed, so
    # every read computes the figures (the way before issue 26's change); "stored": the
    # run scored again, with its digest.
    results: dict[str, dict[str, dict[str, dict[str, float]]]] = {}
    for run in runs.values():
        steps: dict[str, Callable[[], object]] = {
            "run_pass_hat_k(ks=None)": partial(run_pass_hat_k, run=run, ks=None),
            "run_failure_breakdown": partial(run_failure_breakdown, run=run),
            "run_unstable_count": partial(run_unstable_count, run=run),
            "run page, uncached": uncached(f"/runs/{run.pk}/"),
            "API read, uncached": uncached(f"/api/runs/{run.pk}"),
        }
        size = f"{run.samples_total:,}"
        results[size] = {}
        for way in ("computed", "stored"):
            if way == "computed":
                RunDigest.objects.filter(run=run).delete()
            else:
                _score(run_id=run.pk)
            run.refresh_from_db()
            for label, step in steps.items():
                results[size].setdefault(label, {})[way] = measure(step, args.repeats)
            print(f"  measured {size}, {way}; load {load_average()}", flush=True)
    print(f"load average after: {load_average()}")
    print(f"\n{'run':>8} {'step':<26}{'computed: wall/cpu ms':>24}{'MB traced/RSS+':>16}"
          f"{'stored: wall/cpu ms':>24}{'MB traced/RSS+':>16}")
    for size, steps_measured in results.items():
        for label, ways in steps_measured.items():
            row = f"{size:>8} {label:<26}"
            for way in ("computed", "stored"):
                figure = ways[way]
                row += (f"{figure['wall_ms']:>15.1f} / {figure['cpu_ms']:>6.1f}"
                        f"{figure['traced_peak_mb']:>9.2f} / {figure['rss_growth_mb']:>4.1f}")
            print(row)
    print(json.dumps(results))

if __name__ == "__main__":
    main()
