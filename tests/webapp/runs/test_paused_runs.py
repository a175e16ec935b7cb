"""An infrastructure failure pauses a run: no verdict is stored for what the machine failed,
nothing is cached, no score is computed and the leaderboards do not change; the run page
names the cause, and "retry" finishes the run once the cause is fixed."""

from __future__ import annotations

import html
import json
from pathlib import Path

import pytest
from django.test import Client

from evaluator.datasets import load_dataset
from evaluator.languages import js
from tests.polyglot import generations, write_dataset
from tests.webapp.support import client_for, write_jsonl
from webapp.benchmarks.models import Dataset
from webapp.benchmarks.services import dataset_import
from webapp.health.selectors import canary_healthy
from webapp.health.services import canary_run
from webapp.runs.models import CachedResult, Chunk, Run, RunMetric, Sample
from webapp.runs.reads.verified import run_verification
from webapp.runs.worker.execution import WORKER_NAME
from webapp.teams.services import token_issue


@pytest.fixture
def js_dataset(db: None, tmp_path: Path) -> Dataset:
    path = write_dataset(tmp_path, "js")
    return dataset_import(loaded=load_dataset(path=path), source=str(path)).dataset


@pytest.fixture
def broken_node(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """Node.js pointed at a path that does not exist, as a bad deploy would; undone by
    calling the fixture's value (the repair)."""
    js._node.cache_clear()
    monkeypatch.setenv("EVALUATOR_NODE", str(tmp_path / "gone" / "node"))

    def repair() -> None:
        monkeypatch.delenv("EVALUATOR_NODE")
        js._node.cache_clear()

    yield repair
    js._node.cache_clear()


def _api(user) -> Client:
    return Client(HTTP_AUTHORIZATION=f"Bearer {token_issue(user=user, name='t').secret}")


def _upload_js(personas, dataset, tmp_path, capture) -> tuple[Client, Run]:
    path = write_jsonl(tmp_path / "js.jsonl", generations("js", copies=2))
    client = _api(personas.owner)
    with path.open("rb") as handle, capture(execute=True):
        response = client.post("/api/runs", {"file": handle, "dataset": dataset.key,
                                             "team": "lab", "visibility": "team"})
    assert response.status_code == 201, response.content
    return client, Run.objects.get(pk=response.json()["id"])


def _assert_paused_without_verdicts(client: Client, personas, run: Run, cause: str) -> None:
    assert run.status == Run.Status.PAUSED
    assert cause in run.error
    assert "retry" in run.error.lower()
    statuses = set(Sample.objects.filter(run=run).values_list("status", flat=True))
    assert statuses <= {"pending", "sandbox_error"}, statuses
    assert not CachedResult.objects.exists()
    assert not RunMetric.objects.filter(run=run).exists()
    body = client.get(f"/api/runs/{run.pk}").json()
    assert body["status"] == "paused"
    assert body["pass_at_k"] == []
    assert body["verified"]["verified"] is False
    page = html.unescape(client_for(personas.owner).get(f"/runs/{run.pk}/").content.decode())
    assert 'id="retry-button"' in page
    assert cause in page
    board = html.unescape(client_for(personas.owner).get("/teams/lab/leaderboard/")
                          .content.decode())
    assert f'id="cell-{run.pk}-1"' not in board


def _retry_finishes(client: Client, run: Run, capture) -> None:
    with capture(execute=True):
        response = client.post(f"/api/runs/{run.pk}/resume")
    assert response.status_code == 200, response.content
    run.refresh_from_db()
    assert run.status == Run.Status.FINISHED, run.error
    assert run.error == ""
    assert set(Sample.objects.filter(run=run).values_list("status", flat=True)) == {"passed"}
    assert (run.done_count, run.passed_count, run.sandbox_error_count) == (
        run.samples_total, run.samples_total, 0)
    assert run.chunks_done == run.chunks_total == Chunk.objects.filter(run=run).count()
    assert RunMetric.objects.get(run=run, k=1).value == 1.0
    failed = run_verification(run=run).failed
    assert "no_infrastructure_failures" not in failed
    assert "healthy_canaries" not in failed


def test_a_toolchain_broken_before_the_canary_pauses_the_run_and_retry_finishes_it(
        personas, js_dataset, broken_node, tmp_path, django_capture_on_commit_callbacks):
    client, run = _upload_js(personas, js_dataset, tmp_path, django_capture_on_commit_callbacks)
    run.refresh_from_db()
    # The canary that runs before the work names the cause; nothing was run.
    _assert_paused_without_verdicts(client, personas, run, "EVALUATOR_NODE is set to")
    assert not Sample.objects.filter(run=run).exclude(status="pending").exists()
    healthy, reason = canary_healthy(worker=WORKER_NAME, language="js")
    assert not healthy
    assert "JavaScript" in reason
    # Red on the administrators' status page, with the cause.
    personas.owner.is_staff = True
    personas.owner.save(update_fields=["is_staff"])
    status = client_for(personas.owner).get("/status.json?language=js")
    assert status.status_code == 503
    (readiness,) = [i for i in status.json()["languages"] if i["language"] == "js"]
    assert readiness["ready"] is False
    assert "EVALUATOR_NODE" in json.dumps(status.json())

    broken_node()
    _retry_finishes(client, run, django_capture_on_commit_callbacks)
    assert canary_healthy(worker=WORKER_NAME, language="js")[0]


def test_a_toolchain_broken_after_a_passing_canary_pauses_at_the_first_failed_sample(
        personas, js_dataset, tmp_path, monkeypatch, django_capture_on_commit_callbacks):
    # The canary passed; then the machine changed under the worker (a bad deploy).
    assert canary_run(worker=WORKER_NAME, languages=["js"])["js"].ok
    js._node.cache_clear()
    monkeypatch.setenv("EVALUATOR_NODE", str(tmp_path / "gone" / "node"))
    client, run = _upload_js(personas, js_dataset, tmp_path, django_capture_on_commit_callbacks)
    run.refresh_from_db()
    _assert_paused_without_verdicts(client, personas, run, "Node.js is not installed")
    # The first sample the machine failed stopped the run: the rest were not tried.
    assert Sample.objects.filter(run=run, status="sandbox_error").count() >= 1
    assert Sample.objects.filter(run=run, status="pending").exists()

    monkeypatch.delenv("EVALUATOR_NODE")
    js._node.cache_clear()
    _retry_finishes(client, run, django_capture_on_commit_callbacks)


def test_only_a_paused_or_cancelled_run_can_be_retried(personas, js_dataset, tmp_path,
                                                       django_capture_on_commit_callbacks):
    path = write_jsonl(tmp_path / "js.jsonl", generations("js", copies=1))
    client = _api(personas.owner)
    with path.open("rb") as handle, django_capture_on_commit_callbacks(execute=True):
        created = client.post("/api/runs", {"file": handle, "dataset": js_dataset.key,
                                            "team": "lab"}).json()
    assert Run.objects.get(pk=created["id"]).status == Run.Status.FINISHED
    response = client.post(f"/api/runs/{created['id']}/resume")
    assert response.status_code == 400
    assert "paused" in response.content.decode()
