"""Server time of a suite's page for six runs x 164 problems x 100 samples.

Builds (once; later calls reuse the database under --work) a suite of six finished runs,
one per variant: English, Russian and Arabic Python, and English C++, Java and Go. The
variants are dataset rows made here from the bundled HumanEval (same problems, other keys):
the page reads only the stored per-problem scores, so their text does not matter. Each run
gets 100 sample rows per problem with their verdicts, the per-problem scores and its pass@1
with an interval, as the aggregation step would have stored them. Pass rates follow
per-problem difficulties shared by every variant, shifted per variant, with noise, so the
rows disagree by different amounts.

Then it times the page in-process with Django's test client (routing, queries, the grid and
template rendering; no network): a warm-up request, then the median and the maximum of
--repeats requests for each sort, and the same for the translation-fidelity page of this
suite and of a second one whose Arabic run fails 24 problems every other variant passes
(paired tests of the 15 pairs, Fisher's test per problem, and there the first flagged
problems drawn side by side). The goal is a median under 500 ms for each.

    python bench/suite_bench.py [--repeats 10] [--work var/suite-bench]
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
VARIANTS = [  # dataset name, programming language, natural language, skill shift
    ("humaneval", "python", "en", 0.00),
    ("mhumaneval", "python", "ru", -0.05),
    ("mhumaneval", "python", "ar", -0.12),
    ("humaneval-x", "cpp", "en", -0.08),
    ("humaneval-x", "java", "en", -0.06),
    ("humaneval-x", "go", "en", -0.15),
]
SUITE_NAME = "bench suite"
DEFECT_SUITE_NAME = "bench suite with translation defects"
BROKEN_ARABIC = tuple(range(0, 164, 7))
"""In the defects suite, problems whose Arabic variant almost never passes: 24 flags, so
the fidelity page draws its full set of side-by-side views."""


def _variant_dataset(base: Any, name: str, language: str, natural: str) -> Any:
    """A dataset row with `base`'s problems under another variant's key."""
    from webapp.benchmarks.models import Dataset, ProblemVariant

    key = f"{name}/{language}/{natural}"
    if base.key == key:
        return base
    dataset, created = Dataset.objects.get_or_create(
        name=name, variant="", language=language, natural_language=natural,
        version=f"bench-{base.version}",
        defaults={"layout": base.layout, "key": key, "source": "bench/suite_bench.py",
                  "problem_count": base.problem_count})
    if created:
        ProblemVariant.objects.bulk_create([
            ProblemVariant(problem_id=v.problem_id, dataset=dataset, source_id=v.source_id,
                           entry_point=v.entry_point, prompt=v.prompt, test=v.test,
                           canonical_solution=v.canonical_solution, record=v.record)
            for v in ProblemVariant.objects.filter(dataset=base)
        ])
    return dataset


def build_suite(suite_name: str = SUITE_NAME, broken: tuple[int, ...] = ()) -> Any:
    import numpy as np
    from django.db import transaction

    from evaluator.datasets import load_dataset
    from webapp.benchmarks.models import ProblemVariant
    from webapp.benchmarks.services import dataset_import
    from webapp.runs.models import Chunk, Run, RunMetric
    from webapp.suites.models import Suite, SuiteRun
    from webapp.teams.selectors import default_team

    user = bench_user()
    suite = Suite.objects.filter(owner=user, name=suite_name).first()
    if suite is not None and suite.runs.filter(status=Run.Status.FINISHED).count() == 6:
        return suite
    base = dataset_import(loaded=load_dataset(), source="package:humaneval").dataset
    team = default_team(user=user)
    suite = Suite.objects.create(owner=user, team=team, visibility=Run.Visibility.PUBLIC,
                                 name=suite_name, model_name="coder-a", revision="r1",
                                 decoding={"temperature": 0.8, "n": SAMPLES})
    rng = np.random.default_rng(16_400)
    difficulty = rng.beta(0.8, 0.6, size=base.problem_count)
    if broken:
        difficulty[list(broken)] = np.maximum(difficulty[list(broken)], 0.9)
    for number, (name, language, natural, shift) in enumerate(VARIANTS):
        start = time.perf_counter()
        dataset = _variant_dataset(base, name, language, natural)
        variants = list(ProblemVariant.objects.filter(dataset=dataset)
                        .select_related("problem").order_by("problem__number"))
        with transaction.atomic():
            run = Run.objects.create(
                owner=user, team=team, visibility=Run.Visibility.PUBLIC,
                name=f"coder-a · {dataset.key}", model_name="coder-a", dataset=dataset,
                file_name=f"{name}-{language}-{natural}.jsonl", file_sha256=f"{number:064x}",
                file_size=1, file_layout="completion", fingerprint=f"suite-{number:058x}",
                harness_version="bench", status=Run.Status.FINISHED,
                samples_total=len(variants) * SAMPLES, done_count=len(variants) * SAMPLES)
            chunk = Chunk.objects.create(run=run, index=0, language=language,
                                         sample_count=len(variants) * SAMPLES,
                                         status=Chunk.Status.DONE)
            noise = rng.normal(0.0, 0.1, size=len(variants))
            rates = np.clip(difficulty + shift + noise, 0.0, 1.0)
            if natural == "ar" and broken:
                rates[list(broken)] = np.minimum(rates[list(broken)], 0.02)
            passed = rng.binomial(SAMPLES, rates)
            store_verdicts(run, chunk, variants, passed, SAMPLES)
            rates = passed / SAMPLES
            means = rng.choice(rates, size=(1000, len(rates))).mean(axis=1)
            RunMetric.objects.create(run=run, k=1, value=float(rates.mean()),
                                     low=float(np.quantile(means, 0.025)),
                                     high=float(np.quantile(means, 0.975)),
                                     problems=len(rates))
            run.passed_count = int(passed.sum())
            run.failed_count = run.samples_total - run.passed_count
            run.save(update_fields=["passed_count", "failed_count"])
            SuiteRun.objects.create(suite=suite, run=run, added_by=user)
        print(f"  {dataset.key}: {run.samples_total} samples in "
              f"{time.perf_counter() - start:.1f} s", flush=True)
    return suite


def main() -> None:
    args = start_page_bench(__doc__.splitlines()[0], work="suite-bench",
                            database="suite.sqlite3")
    from django.urls import reverse

    suite = build_suite()
    defects_suite = build_suite(DEFECT_SUITE_NAME, BROKEN_ARABIC)
    base = suite.get_absolute_url()
    worst = 0.0
    # The suite's translation-fidelity page (webapp/suites/fidelity/views.py) is timed too.
    paths = [base + query for query in ("", "?sort=task&order=asc",
                                        "?group=programming&sort=mean")]
    paths += [reverse("fidelity:suite", args=[pk]) for pk in (suite.pk, defects_suite.pk)]
    for path in paths:
        body, times = page_times(path, args.repeats)
        cells = body.count(b'class="cell"')
        median = statistics.median(times)
        worst = max(worst, median)
        print(f"{path}: {cells} cells · server time median {median:.1f} ms, "
              f"max {max(times):.1f} ms over {args.repeats} requests", flush=True)
    report_target(f"6 runs x 164 problems x {SAMPLES} samples · slowest median {worst:.1f} ms",
                  worst, TARGET_MS)


if __name__ == "__main__":
    main()
