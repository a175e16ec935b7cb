"""Server time of the exploration pages for runs of 16,400 samples.

Builds (once; later calls reuse the database under --work) three runs of CodeGen-16B on
HumanEval from `generations/codegen-16b-n100/`, through the services a web upload uses:

  A  all 100 samples per task (16,400), evaluated for real by the evaluator;
  B  the first 50 samples of each task, and C the last 50: the same programs, so their
     verdicts come from the result cache that A filled (still real verdicts).

Then it times, in-process with Django's test client (so the figure is the server's time:
routing, queries, aggregation and template rendering, no network), the run page, the
comparison page, the leaderboards and the other exploration pages: a warm-up request,
then the median and the maximum of --repeats requests.

    python bench/pages_bench.py [--database sqlite|postgres] [--sandbox auto] [--repeats 10]
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.common import load_average, shared_dir  # noqa: E402

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
    from django.contrib.auth.models import User
    from django.core.management import call_command

    from evaluator.datasets import load_dataset
    from webapp.benchmarks.services import dataset_import
    from webapp.runs.models import Run
    from webapp.runs.services import run_create
    from webapp.runs.uploads import EvaluationOptions, upload_check
    from webapp.teams.selectors import default_team
    from webapp.teams.services import user_sign_up

    call_command("migrate", "--no-input", "-v", "0")
    dataset = dataset_import(loaded=load_dataset(), source="package:humaneval").dataset
    user = User.objects.filter(username="bench").first() or user_sign_up(
        username="bench", password="bench-password-123")
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


def time_page(client: Any, path: str, repeats: int) -> dict[str, float]:
    response = client.get(path)  # warm-up: caches, connections, templates
    if response.status_code != 200:
        raise SystemExit(f"{path}: HTTP {response.status_code}")
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        response = client.get(path)
        if hasattr(response, "streaming_content"):
            for _chunk in response.streaming_content:
                pass
        times.append((time.perf_counter() - start) * 1000)
        assert response.status_code == 200, (path, response.status_code)
    return {"median_ms": round(statistics.median(times), 1), "max_ms": round(max(times), 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--sandbox", default="auto")
    parser.add_argument("--workers", type=int, default=2, help="evaluator threads")
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--work", default=str(REPO / "var" / "pages-bench"),
                        help="where the database and derived files are kept between calls")
    args = parser.parse_args()
    shared = shared_dir()
    big = next((shared / "generations/codegen-16b-n100").glob("*.jsonl.gz"))
    configure(args)

    import django

    django.setup()
    from django.contrib.auth.models import User
    from django.test import Client

    print(f"load average before: {load_average()}", flush=True)
    runs = build_runs(big, Path(args.work))
    a, b, c = (runs[name] for name in ("codegen-16b n=100", "codegen-16b first 50",
                                       "codegen-16b last 50"))
    client = Client()
    client.force_login(User.objects.get(username="bench"))
    team = a.team.slug
    failing_problem = a.problem_results.filter(c__lt=100, c__gt=0).order_by("problem__number")
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
        "side by side": f"/compare/{a.pk}/{b.pk}/problems/{number}/?ws=1&canonical=1",
        "leaderboard (global)": "/leaderboard/",
        "leaderboard (team)": f"/teams/{team}/leaderboard/",
        "leaderboard, scores=excluding": "/leaderboard/?scores=excluding",
        "leaderboard, scores=patched": "/leaderboard/?scores=patched",
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
          f"{a.metrics.get(k=1).value:.4f} · sandbox {a.sandbox_backend}")
    print(f"{'page':<30}{'median ms':>12}{'max ms':>10}  target")
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
        print(f"{label:<30}{result['median_ms']:>12}{result['max_ms']:>10}  {verdict}")
    print(json.dumps({"database": args.database, "pages": figures,
                      "evaluation_s": runs["timings"]}, indent=None))
    if failed:
        raise SystemExit(f"over the 500 ms target: {', '.join(failed)}")


if __name__ == "__main__":
    main()
