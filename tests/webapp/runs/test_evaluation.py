"""Background evaluation: chunk claims, retries and duplicates, the result cache, cancel,
re-run and the final scores (eager Celery, the `none` sandbox)."""

from __future__ import annotations

import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from evaluator.engine import Engine
from evaluator.records import SampleResult
from tests.webapp.support import RIGHT_0, WRONG_0, write_jsonl
from webapp.runs.models import CachedResult, Chunk, ProblemResult, Run, RunMetric, Sample
from webapp.runs.services.writes import plan_chunks, run_cancel, run_create, run_rerun
from webapp.runs.upload_checks.files import EvaluationOptions, upload_check
from webapp.runs.worker import execution, leases
from webapp.runs.worker.aggregation import run_finalize
from webapp.runs.worker.execution import chunk_evaluate, run_start, sample_record_result


def _queued_run(personas, humaneval, path: Path, *, name: str = "run") -> Run:
    check = upload_check(path=path, file_name=path.name, sha256=name * 8, size=path.stat().st_size,
                         dataset=humaneval, options=EvaluationOptions())
    assert check.ok, check.issues
    # Not inside on_commit capture: the run stays queued until a test starts it.
    return run_create(owner=personas.owner, team=personas.team, check=check, name=name)


@pytest.fixture
def queued_run(personas, humaneval, samples_file) -> Run:
    return _queued_run(personas, humaneval, samples_file)


def test_plan_chunks_keeps_tasks_whole():
    sizes = [("a", 10), ("b", 10), ("c", 30), ("d", 1)]
    assert plan_chunks(sizes, target=20) == [["a", "b"], ["c"], ["d"]]
    assert plan_chunks(sizes, target=1) == [["a"], ["b"], ["c"], ["d"]]


def test_run_is_created_queued_with_samples_and_chunks(queued_run, settings):
    assert queued_run.status == Run.Status.QUEUED
    assert queued_run.samples.count() == 4
    assert queued_run.chunks.count() == queued_run.chunks_total >= 1
    assert set(queued_run.samples.values_list("status", flat=True)) == {"pending"}


def test_chunk_is_claimed_once(queued_run):
    run_start(run_id=queued_run.pk)
    chunk = queued_run.chunks.first()
    claim = execution._claim(chunk.pk)
    assert claim
    assert execution._claim(chunk.pk) is None, "a second claim of a running chunk fails"
    chunk.refresh_from_db()
    assert chunk.claim == claim
    assert chunk.worker


def test_duplicate_delivery_of_a_held_chunk_does_nothing(queued_run):
    # The holder's heartbeat keeps its lease; should it die, the sweeper sends the chunk
    # again, so a duplicate delivery neither waits nor retries.
    run_start(run_id=queued_run.pk)
    chunk = queued_run.chunks.first()
    assert execution._claim(chunk.pk)
    outcome = chunk_evaluate(chunk_id=chunk.pk)
    assert outcome.state == "busy"
    assert not Sample.objects.filter(chunk=chunk).exclude(status="pending").exists()


def test_expired_claim_is_taken_over_and_finishes_only_pending_samples(queued_run, settings):
    settings.CHUNK_SAMPLES = 100
    run_start(run_id=queued_run.pk)
    chunk = queued_run.chunks.get()
    assert execution._claim(chunk.pk)
    # The first worker recorded one sample, then died.
    first = queued_run.samples.order_by("position").first()
    sample_record_result(run_id=queued_run.pk, sample_id=first.pk, result=SampleResult(
        task_id=first.task_id, completion_id=first.index, status="passed", program_hash="x"))
    Chunk.objects.filter(pk=chunk.pk).update(lease_until=timezone.now() - timedelta(seconds=1))
    outcome = chunk_evaluate(chunk_id=chunk.pk)
    assert outcome.state == "done"
    assert outcome.finalize
    queued_run.refresh_from_db()
    assert queued_run.done_count == 4, "each sample is counted once"
    assert Chunk.objects.get(pk=chunk.pk).attempts == 2


def test_evaluating_a_chunk_twice_counts_each_sample_once(queued_run):
    run_start(run_id=queued_run.pk)
    for chunk in queued_run.chunks.all():
        assert chunk_evaluate(chunk_id=chunk.pk).state == "done"
        assert chunk_evaluate(chunk_id=chunk.pk).state == "skipped"
    queued_run.refresh_from_db()
    assert queued_run.done_count == 4
    assert sum(queued_run.counts_by_status.values()) == 4


def test_recording_a_result_twice_is_a_no_op(queued_run):
    sample = queued_run.samples.first()
    result = SampleResult(task_id=sample.task_id, completion_id=sample.index, status="failed",
                          program_hash="h")
    assert sample_record_result(run_id=queued_run.pk, sample_id=sample.pk, result=result)
    assert sample_record_result(run_id=queued_run.pk, sample_id=sample.pk, result=result) is None
    queued_run.refresh_from_db()
    assert (queued_run.done_count, queued_run.failed_count) == (1, 1)


def test_result_with_nul_characters_is_stored(queued_run):
    sample = queued_run.samples.first()
    result = SampleResult(task_id=sample.task_id, completion_id=sample.index, status="error",
                          program_hash="h", stdout="a\x00b", message="bad\x00")
    assert sample_record_result(run_id=queued_run.pk, sample_id=sample.pk, result=result)
    sample.refresh_from_db()
    assert sample.result["stdout"] == "a\ufffdb"


def test_whole_run_finishes_with_scores(queued_run, django_capture_on_commit_callbacks):
    from webapp.runs.worker.tasks import evaluate_run

    with django_capture_on_commit_callbacks(execute=True):
        evaluate_run.delay(queued_run.pk)
    queued_run.refresh_from_db()
    assert queued_run.status == Run.Status.FINISHED
    assert queued_run.finished_at is not None
    assert queued_run.chunks_done == queued_run.chunks_total
    assert list(RunMetric.objects.filter(run=queued_run).values_list("k", flat=True)) == [1, 2]
    pass1 = RunMetric.objects.get(run=queued_run, k=1)
    assert pass1.value == pytest.approx(0.25)
    first = ProblemResult.objects.get(run=queued_run, task_id="HumanEval/0")
    assert (first.n, first.c) == (2, 1)
    assert first.pass_at_k == {"1": 0.5}, "n = 2 allows pass@1 only of the reported k"
    assert first.pass_at(2) == pytest.approx(1.0)
    assert first.intervals["1"][0] <= 0.5 <= first.intervals["1"][1]
    sample = queued_run.samples.get(task_id="HumanEval/0", index=0)
    assert sample.status == "passed"
    assert sample.tests_total == sample.tests_passed > 0


def test_finalize_is_claimed_once(queued_run, django_capture_on_commit_callbacks):
    from webapp.runs.worker.tasks import evaluate_run

    with django_capture_on_commit_callbacks(execute=True):
        evaluate_run.delay(queued_run.pk)
    assert run_finalize(run_id=queued_run.pk) is False
    assert RunMetric.objects.filter(run=queued_run).count() == 2


def test_identical_programs_hit_the_result_cache(personas, humaneval, tmp_path,
                                                 django_capture_on_commit_callbacks):
    from webapp.runs.worker.tasks import evaluate_run

    first = _queued_run(personas, humaneval, write_jsonl(tmp_path / "a.jsonl", [
        {"task_id": "HumanEval/0", "completion": RIGHT_0},
        {"task_id": "HumanEval/0", "completion": WRONG_0}]), name="a")
    with django_capture_on_commit_callbacks(execute=True):
        evaluate_run.delay(first.pk)
    assert CachedResult.objects.count() == 2
    second = _queued_run(personas, humaneval, write_jsonl(tmp_path / "b.jsonl", [
        {"task_id": "HumanEval/0", "completion": WRONG_0},
        {"task_id": "HumanEval/0", "completion": RIGHT_0}]), name="b")
    with django_capture_on_commit_callbacks(execute=True):
        evaluate_run.delay(second.pk)
    second.refresh_from_db()
    assert second.cached_count == 2
    assert second.passed_count == 1
    assert CachedResult.objects.count() == 2
    assert set(second.samples.values_list("cached", flat=True)) == {True}


def test_run_without_cache_executes_again(queued_run, personas,
                                          django_capture_on_commit_callbacks):
    from webapp.runs.worker.tasks import evaluate_run

    with django_capture_on_commit_callbacks(execute=True):
        evaluate_run.delay(queued_run.pk)
    with django_capture_on_commit_callbacks(execute=True):
        again = run_rerun(user=personas.owner, run=queued_run, use_cache=False)
    again.refresh_from_db()
    assert again.status == Run.Status.FINISHED
    assert again.rerun_of == queued_run
    # Within one chunk the second copy of an identical program is a dedup hit, not a cache hit.
    assert again.cached_count == 1
    assert again.passed_count == 1


def test_rerun_reuses_the_cache(queued_run, personas, django_capture_on_commit_callbacks):
    from webapp.runs.worker.tasks import evaluate_run

    with django_capture_on_commit_callbacks(execute=True):
        evaluate_run.delay(queued_run.pk)
    with django_capture_on_commit_callbacks(execute=True):
        again = run_rerun(user=personas.owner, run=queued_run)
    again.refresh_from_db()
    assert again.cached_count == 4
    assert Sample.objects.filter(run=again).count() == 4


def test_rerun_of_an_active_run_is_refused(queued_run, personas):
    from django.core.exceptions import ValidationError

    with pytest.raises(ValidationError):
        run_rerun(user=personas.owner, run=queued_run)


def test_cancel_drops_queued_chunks(queued_run, personas, django_capture_on_commit_callbacks):
    run_start(run_id=queued_run.pk)
    with django_capture_on_commit_callbacks(execute=True):
        assert run_cancel(user=personas.owner, run=queued_run)
    assert not run_cancel(user=personas.owner, run=queued_run), "cancelling twice is a no-op"
    assert set(queued_run.chunks.values_list("status", flat=True)) == {"cancelled"}
    assert chunk_evaluate(chunk_id=queued_run.chunks.first().pk).state == "skipped"
    queued_run.refresh_from_db()
    assert queued_run.status == Run.Status.CANCELLED
    assert queued_run.done_count == 0


@pytest.mark.django_db(transaction=True)
def test_cancel_stops_a_running_chunk(personas, humaneval, samples_file, monkeypatch):
    # Committed for real, so the cancel watcher's own connection sees the change; the run
    # is not enqueued, and is cancelled as soon as its first sample finishes.
    monkeypatch.setattr("webapp.runs.services.writes._enqueue_start", lambda run_id: None)
    queued_run = _queued_run(personas, humaneval, samples_file)
    monkeypatch.setattr(leases, "CHECK_SECONDS", 0.01)
    original = execution.sample_results_record

    def record_then_cancel(*, run_id, results, **_when):
        # The cancel lands once the batch's first result is committed: the rest is refused.
        events = original(run_id=run_id, results=results[:1])
        Run.objects.filter(pk=queued_run.pk).update(status=Run.Status.CANCELLED)
        time.sleep(leases.CHECK_SECONDS * 5)  # long enough for the heartbeat to see it
        return events + original(run_id=run_id, results=results[1:])

    monkeypatch.setattr(execution, "sample_results_record", record_then_cancel)
    run_start(run_id=queued_run.pk)
    chunk = queued_run.chunks.first()
    assert chunk is not None
    outcome = chunk_evaluate(chunk_id=chunk.pk)
    assert outcome.state == "cancelled"
    assert Sample.objects.filter(run=queued_run, status="pending").exists()


def test_a_broken_sandbox_fails_the_run_with_its_reason(queued_run, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("no sandbox here")

    # Chunks lease long-lived engines (webapp.runs.worker.engines); patch the class they use.
    monkeypatch.setattr(Engine, "evaluate", broken)
    run_start(run_id=queued_run.pk)
    outcome = chunk_evaluate(chunk_id=queued_run.chunks.first().pk)
    assert outcome.state == "failed"
    queued_run.refresh_from_db()
    assert queued_run.status == Run.Status.FAILED
    assert "no sandbox here" in queued_run.error


def test_starting_twice_enqueues_only_queued_chunks(queued_run):
    first = run_start(run_id=queued_run.pk)
    assert len(first) == queued_run.chunks_total
    execution._claim(first[0][0])
    second = run_start(run_id=queued_run.pk)
    assert len(second) == len(first) - 1
