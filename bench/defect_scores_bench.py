"""Server time of the defect-aware scores: the run page and the leaderboard, each way.

Builds (once; later calls reuse the database under --work) six finished runs of 164 problems
x 100 samples (16,400 samples each) on HumanEval-X JavaScript from `../shared/datasets/`,
whose problems the defect registry really touches (14 with a registered defect, 4 of them
patched). The verdicts are written straight into the database (nothing is evaluated: the
pages read only stored scores, so synthetic verdicts time the same work), then each run is
scored by the real aggregation step (`run_finalize`), and its patched verdicts are stored
as a finished patched job would have stored them. Pass rates follow per-problem
difficulties shared by every run plus a per-run skill.

Then it times, in-process with Django's test client (routing, queries, the three bootstraps
per run and template rendering; no network), each page: a warm-up request on a fresh
process cache of the scores, then the median and the maximum of --repeats requests. The
first request of a page is the one that computes (later ones reuse the per-process cache
of each run's three ways); it is printed too. The goal is a median under 500 ms.

    python bench/defect_scores_bench.py [--repeats 10] [--work var/defect-scores-bench]
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.common import (  # noqa: E402
    bench_client,
    bench_user,
    load_average,
    page_times,
    shared_dir,
    start_page_bench,
    store_verdicts,
)

TARGET_MS = 500.0
SAMPLES = 100
SOURCE = "datasets/humaneval-x/humaneval_js.jsonl.gz"
PLANS = [("coder-a", 0.00), ("coder-b", 0.05), ("coder-c", -0.10), ("coder-d", 0.03),
         ("coder-e", -0.04), ("coder-f", 0.08)]


def build_runs(source: Path) -> list[Any]:
    import numpy as np
    from django.db import transaction
    from django.utils import timezone

    from evaluator.datasets import load_dataset
    from evaluator.defects import registry_version
    from webapp.benchmarks.models import ProblemVariant
    from webapp.benchmarks.services import dataset_import
    from webapp.defects.models import PatchedScoring
    from webapp.defects.scores import dataset_defects
    from webapp.runs.models import Chunk, Run
    from webapp.runs.worker.aggregation import run_finalize
    from webapp.teams.selectors import default_team

    user = bench_user()
    team = default_team(user=user)
    done = list(Run.objects.filter(owner=user, status=Run.Status.FINISHED).order_by("pk"))
    if len(done) == len(PLANS):
        return done
    dataset = dataset_import(loaded=load_dataset(path=source), source=str(source)).dataset
    variants = list(ProblemVariant.objects.filter(dataset=dataset)
                    .select_related("problem").order_by("problem__number"))
    patched = sorted(dataset_defects(dataset=dataset).patched)
    rng = np.random.default_rng(16_400)
    difficulty = rng.beta(0.8, 0.6, size=len(variants))
    runs = []
    for number, (model, skill) in enumerate(PLANS):
        start = time.perf_counter()
        with transaction.atomic():
            run = Run.objects.create(
                owner=user, team=team, visibility=Run.Visibility.PUBLIC,
                name=f"{model} · {dataset.key}", model_name=model, dataset=dataset,
                file_name=f"{model}.jsonl", file_sha256=f"{number:064x}", file_size=1,
                file_layout="completion", fingerprint=f"defects-{number:056x}",
                harness_version="bench", status=Run.Status.RUNNING,
                samples_total=len(variants) * SAMPLES, done_count=len(variants) * SAMPLES,
                coverage={"min_n": SAMPLES, "max_n": SAMPLES}, started_at=timezone.now())
            chunk = Chunk.objects.create(run=run, index=0, language="js",
                                         sample_count=len(variants) * SAMPLES,
                                         status=Chunk.Status.DONE)
            noise = rng.normal(0.0, 0.1, size=len(variants))
            passed = rng.binomial(SAMPLES, np.clip(difficulty + skill + noise, 0.0, 1.0))
            store_verdicts(run, chunk, variants, passed, SAMPLES, text="  return 0\n",
                           message="AssertionError", results=False)
        if not run_finalize(run_id=run.pk):
            raise SystemExit(f"{run.name}: the aggregation step did not finish it")
        run.refresh_from_db()
        # As a finished patched job stores them: the patched problems' passing counts.
        fixed = rng.binomial(SAMPLES, np.clip(0.6 + skill, 0.0, 1.0), size=len(patched))
        PatchedScoring.objects.create(
            run=run, registry_version=registry_version(), patched_tasks=patched,
            counts={task: [SAMPLES, int(c)] for task, c in zip(patched, fixed, strict=True)},
            status=PatchedScoring.Status.DONE, samples_total=len(patched) * SAMPLES,
            samples_done=len(patched) * SAMPLES, finished_at=timezone.now())
        runs.append(run)
        print(f"  {run.name}: {run.samples_total} samples in "
              f"{time.perf_counter() - start:.1f} s", flush=True)
    return runs


def _figures(first: float, times: list[float]) -> dict[str, float]:
    return {"first_ms": round(first, 1), "median_ms": round(statistics.median(times), 1),
            "max_ms": round(max(times), 1)}


def time_page(client: Any, path: str, repeats: int) -> dict[str, float]:
    from webapp.defects import scores

    scores._scores_cache.clear()
    start = time.perf_counter()
    response = client.get(path)
    first = (time.perf_counter() - start) * 1000
    if response.status_code != 200:
        raise SystemExit(f"{path}: HTTP {response.status_code}")
    _, times = page_times(path, repeats)
    return _figures(first, times)


def time_scores(runs: list[Any], repeats: int) -> dict[str, float]:
    from webapp.defects import scores
    from webapp.runs.reads.selectors import REPORTED_KS

    times = []
    for _ in range(repeats + 1):
        scores._scores_cache.clear()
        start = time.perf_counter()
        scores.runs_three_way(runs=runs, ks=REPORTED_KS)
        times.append((time.perf_counter() - start) * 1000)
    return _figures(times[0], times[1:])


def time_block(run: Any, repeats: int) -> dict[str, float]:
    """The run page's share: its defect-aware block drawn alone, as the page draws it."""
    from django.contrib.auth.models import User
    from django.template.loader import render_to_string
    from django.test import RequestFactory

    from webapp.defects import scores
    from webapp.defects.views import PARTIAL, defect_aware_context

    request = RequestFactory().get(f"/runs/{run.pk}/", {"scores": "excluding"})
    request.user = User.objects.get(username="bench")
    scores._scores_cache.clear()
    times = []
    for _ in range(repeats + 1):
        start = time.perf_counter()
        render_to_string(PARTIAL, defect_aware_context(request=request, run=run),
                         request=request)
        times.append((time.perf_counter() - start) * 1000)
    return _figures(times[0], times[1:])


def main() -> None:
    args = start_page_bench(__doc__.splitlines()[0], work="defect-scores-bench",
                            database="defect-scores.sqlite3")
    source = shared_dir() / SOURCE
    runs = build_runs(source)
    a, b = runs[0], runs[1]
    client = bench_client()
    team = a.team.slug
    pages = {}
    for way in ("original", "patched", "excluding"):
        pages[f"run page, {way}"] = f"/runs/{a.pk}/?scores={way}"
    for way in ("original", "patched", "excluding"):
        pages[f"leaderboard, {way}"] = f"/leaderboard/?scores={way}"
    pages["team leaderboard, excluding"] = f"/teams/{team}/leaderboard/?scores=excluding"
    pages["score permalink, patched"] = f"/runs/{a.pk}/scores/pass-at-1/?scores=patched"
    pages["comparison A vs B, excluding"] = f"/compare/{a.pk}/{b.pk}/?scores=excluding"
    figures = {label: time_page(client, path, args.repeats) for label, path in pages.items()}
    # The three ways alone, computed afresh (no process cache): what a page pays the first
    # time it shows a run, apart from the rest of the page.
    figures["three ways of 1 run, computed"] = time_scores(runs[:1], args.repeats)
    figures["three ways of 6 runs, computed"] = time_scores(runs, args.repeats)
    figures["run page's block alone"] = time_block(a, args.repeats)
    print(f"load average after: {load_average()}")
    print(f"\n{len(runs)} runs of {a.samples_total:,} samples on {a.dataset.key}")
    print(f"{'page':<32}{'first ms':>10}{'median ms':>11}{'max ms':>9}  target (median)")
    failed = []
    for label, result in figures.items():
        ok = result["median_ms"] < TARGET_MS
        if not ok:
            failed.append(label)
        print(f"{label:<32}{result['first_ms']:>10}{result['median_ms']:>11}"
              f"{result['max_ms']:>9}  {'ok' if ok else 'OVER 500 ms'}")
    if failed:
        raise SystemExit(f"over the 500 ms target: {', '.join(failed)}")


if __name__ == "__main__":
    main()
