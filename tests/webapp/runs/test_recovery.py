"""Runs recover by themselves: heartbeat leases, the sweeper that takes lost work back and
sends it again, transient database errors ridden out (eager Celery, the `none` sandbox).
The same faults caused for real, with real processes, are in tests/webapp/services/."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import OperationalError
from django.utils import timezone

from evaluator.records import SampleResult
from webapp.runs import execution, recovery, transient
from webapp.runs.execution import chunk_evaluate, run_start, sample_record_result
from webapp.runs.leases import Heartbeat
from webapp.runs.models import Chunk, Run, RunEvent, Sample
from webapp.runs.recovery import runs_sweep


@pytest.fixture
def queued_run(unstarted_run, settings) -> Run:
    settings.CHUNK_SAMPLES = 2  # two chunks: HumanEval/0 and HumanEval/1
    return unstarted_run("recovery")


@pytest.fixture
def sent(monkeypatch) -> dict[str, list[int]]:
    """What the sweeper sends, instead of sending it; every queue reads as empty."""
    record: dict[str, list[int]] = {"chunks": [], "starts": [], "finalize": []}

    def send_chunks(chunks):
        record["chunks"].extend(chunk_id for chunk_id, _ in chunks)
        Chunk.objects.filter(pk__in=[c for c, _ in chunks]).update(dispatched_at=timezone.now())
        return len(chunks)

    monkeypatch.setattr(recovery, "send_chunks", send_chunks)
    monkeypatch.setattr(recovery, "send_run_start",
                        lambda *, run_id: record["starts"].append(run_id) or True)
    monkeypatch.setattr(recovery, "send_finalize",
                        lambda *, run_id: record["finalize"].append(run_id) or True)
    monkeypatch.setattr(recovery, "queue_waiting", lambda queue: 0)
    return record


def _age(queryset, **seconds_ago: int) -> None:
    long_ago = timezone.now() - timedelta(seconds=3600)
    queryset.update(**{field: long_ago for field in seconds_ago})


def test_a_chunk_whose_lease_passed_is_taken_back_and_sent_again(queued_run, sent):
    run_start(run_id=queued_run.pk)
    held, other = queued_run.chunks.order_by("index")
    assert execution._claim(held.pk)
    assert execution._claim(other.pk)
    # The first holder died: its lease passes unrenewed. The second is alive.
    _age(Chunk.objects.filter(pk=held.pk), lease_until=1)

    report = runs_sweep()

    assert report.taken_back == {queued_run.pk: 1}
    assert sent["chunks"] == [held.pk]
    assert Chunk.objects.get(pk=held.pk).status == Chunk.Status.QUEUED
    assert Chunk.objects.get(pk=other.pk).status == Chunk.Status.RUNNING, "a live lease stays"
    queued_run.refresh_from_db()
    assert queued_run.recoveries == 1
    notice = RunEvent.objects.get(run=queued_run, type="run_recovering")
    assert notice.seq == queued_run.event_seq
    assert "taken back" in notice.payload["message"]
    # The chunk then finishes normally, each sample once.
    assert chunk_evaluate(chunk_id=held.pk).state == "done"
    assert Sample.objects.filter(chunk=held, status="pending").count() == 0


def test_a_sweep_with_nothing_lost_sends_nothing(queued_run, sent):
    run_start(run_id=queued_run.pk)
    for chunk in queued_run.chunks.all():
        execution._claim(chunk.pk)
    assert not runs_sweep().anything
    assert sent == {"chunks": [], "starts": [], "finalize": []}


def test_a_queued_chunk_whose_message_was_lost_is_sent_again(queued_run, sent, monkeypatch):
    run_start(run_id=queued_run.pk)
    chunks = list(queued_run.chunks.order_by("index").values_list("pk", flat=True))
    # Sent a moment ago: not yet suspicious, whatever the queue holds.
    Chunk.objects.update(dispatched_at=timezone.now())
    assert runs_sweep().resent_chunks == 0
    _age(Chunk.objects.all(), dispatched_at=1)
    # Messages still wait in the queue: workers are behind, nothing is lost.
    monkeypatch.setattr(recovery, "queue_waiting", lambda queue: 5)
    assert runs_sweep().resent_chunks == 0
    # The queue is empty, yet the chunks were never claimed: the broker lost them.
    monkeypatch.setattr(recovery, "queue_waiting", lambda queue: 0)
    assert runs_sweep().resent_chunks == 2
    assert sent["chunks"] == chunks


def test_a_broker_that_cannot_be_asked_gets_nothing_resent(queued_run, sent, monkeypatch):
    run_start(run_id=queued_run.pk)
    _age(Chunk.objects.all(), dispatched_at=1)
    monkeypatch.setattr(recovery, "queue_waiting", lambda queue: None)
    assert runs_sweep().resent_chunks == 0


def test_a_run_whose_fan_out_was_lost_is_started_again(queued_run, sent):
    _age(Run.objects.filter(pk=queued_run.pk), dispatched_at=1)
    assert runs_sweep().started_runs == [queued_run.pk]


def test_a_run_with_every_chunk_done_gets_its_scores_sent(queued_run, sent):
    run_start(run_id=queued_run.pk)
    for chunk in queued_run.chunks.all():
        assert chunk_evaluate(chunk_id=chunk.pk).state == "done"
    _age(Run.objects.filter(pk=queued_run.pk), dispatched_at=1)
    assert runs_sweep().finalized_runs == [queued_run.pk]


def test_scoring_whose_process_died_is_done_again(queued_run, sent):
    run_start(run_id=queued_run.pk)
    for chunk in queued_run.chunks.all():
        chunk_evaluate(chunk_id=chunk.pk)
    Run.objects.filter(pk=queued_run.pk).update(status=Run.Status.AGGREGATING)
    _age(Run.objects.filter(pk=queued_run.pk), lease_until=1)
    assert runs_sweep().finalized_runs == [queued_run.pk]
    assert Run.objects.get(pk=queued_run.pk).status == Run.Status.RUNNING


def test_at_start_up_every_running_chunk_is_taken_back(queued_run, sent):
    run_start(run_id=queued_run.pk)
    chunk = queued_run.chunks.first()
    assert execution._claim(chunk.pk)
    assert runs_sweep().taken_back == {}, "its lease is still good"
    assert runs_sweep(all_running=True).taken_back == {queued_run.pk: 1}


def test_a_chunk_lost_again_and_again_fails_the_run_with_a_reason(queued_run):
    run_start(run_id=queued_run.pk)
    chunk = queued_run.chunks.first()
    Chunk.objects.filter(pk=chunk.pk).update(attempts=execution.MAX_CHUNK_ATTEMPTS)
    assert chunk_evaluate(chunk_id=chunk.pk).state == "failed"
    queued_run.refresh_from_db()
    assert queued_run.status == Run.Status.FAILED
    assert "taken back from a lost worker" in queued_run.error


# Committed for real: only a write outside a transaction can be tried again.
@pytest.mark.django_db(transaction=True)
def test_a_dropped_database_connection_is_ridden_out(queued_run, monkeypatch):
    monkeypatch.setattr(transient, "FIRST_DELAY", 0.01)
    original = execution.sample_record_result
    failures = {"left": 2}

    def flaky(**kwargs):
        if failures["left"]:
            failures["left"] -= 1
            raise OperationalError("server closed the connection unexpectedly")
        return original(**kwargs)

    monkeypatch.setattr(execution, "sample_record_result", flaky)
    run_start(run_id=queued_run.pk)
    for chunk in queued_run.chunks.all():
        assert chunk_evaluate(chunk_id=chunk.pk).state == "done"
    queued_run.refresh_from_db()
    assert queued_run.status == Run.Status.RUNNING, "not failed"
    assert queued_run.done_count == 4
    assert failures["left"] == 0


# Committed for real: only a write outside a transaction can be tried again.
@pytest.mark.django_db(transaction=True)
def test_a_database_that_stays_away_gives_the_chunk_back_without_failing(queued_run,
                                                                        monkeypatch):
    monkeypatch.setattr(transient, "FIRST_DELAY", 0.01)
    monkeypatch.setattr(transient, "DB_RETRY_SECONDS", 0.05)

    def down(**kwargs):
        raise OperationalError("the database system is shutting down")

    monkeypatch.setattr(execution, "sample_record_result", down)
    monkeypatch.setattr(execution, "db_retry",
                        lambda func, *, what: transient.db_retry(func, what=what, seconds=0.05))
    run_start(run_id=queued_run.pk)
    chunk = queued_run.chunks.first()
    outcome = chunk_evaluate(chunk_id=chunk.pk)
    assert outcome.state == "retry"
    chunk.refresh_from_db()
    assert (chunk.status, chunk.claim, chunk.attempts) == (Chunk.Status.QUEUED, "", 0)
    queued_run.refresh_from_db()
    assert queued_run.status == Run.Status.RUNNING
    assert queued_run.error == ""


def test_a_result_is_written_once_whatever_is_redelivered(queued_run):
    run_start(run_id=queued_run.pk)
    sample = queued_run.samples.first()
    result = SampleResult(task_id=sample.task_id, completion_id=sample.index, status="passed",
                          program_hash="h")
    first = sample_record_result(run_id=queued_run.pk, sample_id=sample.pk, result=result)
    assert first is not None
    assert sample_record_result(run_id=queued_run.pk, sample_id=sample.pk, result=result) is None
    queued_run.refresh_from_db()
    assert (queued_run.done_count, queued_run.passed_count) == (1, 1)
    assert Sample.objects.get(pk=sample.pk).seq == first["seq"] == queued_run.event_seq


@pytest.mark.django_db(transaction=True)
def test_a_heartbeat_renews_its_lease_and_stops_work_when_it_is_taken_over(settings):
    settings.LEASE_SECONDS = 6  # a renewal every second
    renewals: list[int] = []
    stop = threading.Event()
    owner = {"ours": True}

    def renew() -> bool:
        renewals.append(1)
        if len(renewals) == 2:
            owner["ours"] = False  # another worker took it over meanwhile
        return owner["ours"]

    with Heartbeat(name="test", renew=renew, stop=stop) as heartbeat:
        assert stop.wait(timeout=30), "the heartbeat stops the work"
    assert heartbeat.lost
    assert len(renewals) == 2


@pytest.mark.django_db(transaction=True)
def test_a_chunk_whose_lease_was_taken_over_stops_and_leaves_the_rest(
    unstarted_run, settings, monkeypatch
):
    settings.LEASE_SECONDS = 6
    settings.CHUNK_SAMPLES = 100
    run = unstarted_run("taken over")
    run_start(run_id=run.pk)
    chunk = run.chunks.get()
    original = execution.sample_record_result
    took_over = threading.Event()

    def record_then_lose(**kwargs):
        event = original(**kwargs)
        if not took_over.is_set():
            # The sweeper gave the chunk to another worker while this one was slow.
            Chunk.objects.filter(pk=chunk.pk).update(claim="someone-else")
            took_over.set()
            stop_seen = threading.Event()
            stop_seen.wait(3)  # let the heartbeat (a renewal each second) notice
        return event

    monkeypatch.setattr(execution, "sample_record_result", record_then_lose)
    outcome = chunk_evaluate(chunk_id=chunk.pk)
    assert outcome.state == "lost"
    chunk.refresh_from_db()
    assert chunk.status == Chunk.Status.RUNNING, "left to its new holder"
    assert Sample.objects.filter(run=run, status="pending").exists()
