"""Server time of the many-runs comparison for 6 runs x 164 problems x 100 samples.

Builds (once; later calls reuse the database under --work) six finished runs on HumanEval
straight into the database: a run row, 100 sample rows per problem with their verdicts, and
the per-problem scores the aggregation step would have stored. Nothing is evaluated: the
page reads only the stored scores, so synthetic verdicts time the same work. Pass rates
follow per-problem difficulties shared by every run plus a per-run skill, and three of the
runs are seeds of one model, so the page draws the seed split too.

Then it times the page in-process with Django's test client (routing, queries, statistics
and template rendering; no network): a warm-up request, then the median and the maximum of
--repeats requests. The goal is a median under 500 ms.

    python bench/compare_many_bench.py [--repeats 10] [--work var/compare-many-bench]
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.common import bench_user, page_times, report_target, start_page_bench, store_verdicts  # noqa: E402

TARGET_MS = 500.0
SAMPLES = 100
PLANS = [  # name, model, seed, skill shift
    ("coder-a seed 0", "coder-a", 0, 0.00),
    ("coder-a seed 1", "coder-a", 1, 0.01),
    ("coder-a seed 2", "coder-a", 2, -0.01),
    ("coder-b", "coder-b", None, 0.05),
    ("coder-c", "coder-c", None, -0.10),
    ("coder-d", "coder-d", None, 0.06),
]


def build_runs() -> list[Any]:
    import numpy as np
    from django.db import transaction

    from evaluator.datasets import load_dataset
    from webapp.benchmarks.models import ProblemVariant
    from webapp.benchmarks.services import dataset_import
    from webapp.runs.models import Chunk, Run
    from webapp.teams.selectors import default_team

    user = bench_user()
    existing = list(Run.objects.filter(owner=user, name__in=[p[0] for p in PLANS],
                                       status=Run.Status.FINISHED).order_by("pk"))
    if len(existing) == len(PLANS):
        return existing
    dataset = dataset_import(loaded=load_dataset(), source="package:humaneval").dataset
    variants = list(ProblemVariant.objects.filter(dataset=dataset).select_related("problem")
                    .order_by("problem__number"))
    rng = np.random.default_rng(164)
    difficulty = rng.beta(0.8, 0.6, size=len(variants))
    runs = []
    for number, (name, model, seed, shift) in enumerate(PLANS):
        start = time.perf_counter()
        with transaction.atomic():
            run = Run.objects.create(
                owner=user, team=default_team(user=user), visibility=Run.Visibility.PUBLIC,
                name=name, model_name=model,
                model_meta={"seed": seed} if seed is not None else {}, dataset=dataset,
                file_name=f"{name}.jsonl", file_sha256=f"{number:064x}", file_size=1,
                file_layout="completion", fingerprint=f"bench-{number:058x}",
                harness_version="bench", status=Run.Status.FINISHED,
                samples_total=len(variants) * SAMPLES, done_count=len(variants) * SAMPLES)
            chunk = Chunk.objects.create(run=run, index=0, language="python",
                                         sample_count=len(variants) * SAMPLES,
                                         status=Chunk.Status.DONE)
            rates = np.clip(difficulty + shift, 0.0, 1.0)
            passed = rng.binomial(SAMPLES, rates)
            store_verdicts(run, chunk, variants, passed, SAMPLES)
            run.passed_count = int(passed.sum())
            run.failed_count = run.samples_total - run.passed_count
            run.save(update_fields=["passed_count", "failed_count"])
        print(f"  {name}: {run.samples_total} samples in {time.perf_counter() - start:.1f} s",
              flush=True)
        runs.append(run)
    return runs


def main() -> None:
    args = start_page_bench(__doc__.splitlines()[0], work="compare-many-bench",
                            database="compare-many.sqlite3")
    runs = build_runs()
    path = "/compare/many/?runs=" + ",".join(str(run.pk) for run in runs)
    _, times = page_times(path, args.repeats)
    median = statistics.median(times)
    print(f"{len(runs)} runs x 164 problems x {SAMPLES} samples · {path}")
    report_target(f"server time: median {median:.1f} ms, max {max(times):.1f} ms over "
                  f"{args.repeats} requests", median, TARGET_MS)


if __name__ == "__main__":
    main()
