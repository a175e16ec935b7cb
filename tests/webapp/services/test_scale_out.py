"""Scale-out: two workers with different queues stand in for two machines, one serving
Python (and the fan-out and scoring queue), the other the compiled languages. Runs in both
groups finish, each chunk evaluated by the worker whose queues hold its language."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaluator.languages import get_language
from tests.webapp.services.live_stack import add_user, api
from tests.webapp.services.real_services import PostgresDatabase, services_stack
from tests.webapp.support import write_jsonl
from webapp.stack import ALL_QUEUES

pytestmark = [pytest.mark.services, pytest.mark.slow]

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "datasets"
PYTHON_QUEUES = ("default", "eval-python")
COMPILED_QUEUES = tuple(q for q in ALL_QUEUES if q not in PYTHON_QUEUES)


def test_two_workers_with_different_queues_finish_runs_of_both_groups(tmp_path, redis_url):
    missing = get_language("rust").available()
    if missing is not None:
        pytest.skip(f"Rust is not available here: {missing}")
    database = PostgresDatabase()
    stack = services_stack(tmp_path, {"DATABASE_URL": database.url, "REDIS_URL": redis_url},
                           concurrency=1, chunk_samples=1)
    try:
        stack.prepare(static=False)
        rust = FIXTURES / "humaneval_x" / "humaneval_rust.jsonl"
        stack.manage("import_dataset", str(rust))
        token = add_user(stack, "owner", "a-long-test-password")
        stack.start_worker("worker-python", PYTHON_QUEUES)
        stack.start_worker("worker-compiled", COMPILED_QUEUES)
        stack.start_beat()
        stack.start_web()
        stack.wait_ready(timeout=120)

        _, datasets = api(stack.url, token, "/api/datasets")
        rust_key = next(d["key"] for d in datasets["datasets"] if d["language"] == "rust")
        rust_samples = write_jsonl(tmp_path / "rust.jsonl", [
            {"task_id": row["task_id"], "generation": row["canonical_solution"]}
            for row in map(json.loads, rust.read_text().splitlines())
        ])
        python_samples = write_jsonl(tmp_path / "python.jsonl", [
            {"task_id": "HumanEval/0", "completion": "    return False\n"},
            {"task_id": "HumanEval/2", "completion": "    return number % 1.0\n"},
        ])
        runs = {}
        for language, samples, key in (("python", python_samples, "humaneval/python/en"),
                                       ("rust", rust_samples, rust_key)):
            status, created = api(stack.url, token, "/api/runs", file=samples,
                                  fields={"dataset": key, "name": language})
            assert status == 201, created
            runs[language] = created["id"]

        for language, run_id in runs.items():
            assert database.wait_finished(run_id, timeout=600) == "finished", language
        workers = {
            language: {row[0].split("@")[0].rsplit("-", 1)[0] for row in database.query(
                "SELECT worker FROM runs_chunk WHERE run_id = %s", run_id)}
            for language, run_id in runs.items()
        }
        assert workers == {"python": {"worker-python"}, "rust": {"worker-compiled"}}
        (passed,), = database.query("SELECT passed_count FROM runs_run WHERE id = %s",
                                    runs["rust"])
        assert passed == 2, "the canonical Rust solutions pass"
    finally:
        stack.stop()
        database.drop()
