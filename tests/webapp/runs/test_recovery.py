"""Runs recover by themselves: heartbeat leases, the sweeper that takes lost work back and
sends it again, transient database errors ridden out (eager Celery, the `none` sandbox).
The same faults caused for real, with real processes, are in tests/webapp/services/."""

from __future__ import annotations

import threading
import uuid
from datetime import UTC, timedelta

import pytest
from django.db import OperationalError
from django.utils import timezone

from evaluator.records import SampleResult
from webapp.runs.messaging.dispatch import (
    EVALUATE_CHUNK,
    EVALUATE_RUN,
    SWEEP,
    QueuedWork,
    queued_work,
)
from webapp.runs.models import Chunk, Run, RunEvent, Sample
from webapp.runs.services.lifecycle import run_resume
from webapp.runs.services.writes import run_cancel
from webapp.runs.worker import execution, leases, recovery, transient
from webapp.runs.worker.aggregation import run_finalize
from webapp.runs.worker.execution import chunk_evaluate, run_start, sample_record_result
from webapp.runs.worker.leases import Heartbeat
from webapp.runs.worker.recovery import runs_sweep


@pytest.fixture
def queued_run(unstarted_run, settings) -> Run:
    settings.CHUNK_SAMPLES = 2  # two chunks: HumanEval/0 and HumanEval/1
    return unstarted_run("recovery")


@pytest.fixture
def sent(monkeypatch) -> dict[str, list[int]]:
    """What the sweeper sends, instead of sending it; the broker reads as holding nothing."""
    record: dict[str, list[int]] = {"chunks": [], "starts": [], "finalize": []}

    def send_chunks(chunks, *, again):
        assert again, "the sweeper's chunks go ahead of those never started"
        record["chunks"].extend(chunk_id for chunk_id, _ in chunks)
        Chunk.objects.filter(pk__in=[c for c, _ in chunks]).update(dispatched_at=timezone.now())
        return len(chunks)

    monkeypatch.setattr(recovery, "send_chunks", send_chunks)
    monkeypatch.setattr(recovery, "send_run_start",
                        lambda *, run_id: record["starts"].append(run_id) or True)
    monkeypatch.setattr(recovery, "send_finalize",
                        lambda *, run_id: record["finalize"].append(run_id) or True)
    monkeypatch.setattr(recovery, "queued_work", lambda queues, **_: QueuedWork())
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
    # Their messages are still in the broker (waiting, or reserved by a live worker):
    # workers are behind, nothing is lost.
    held = QueuedWork(messages=frozenset((EVALUATE_CHUNK, pk) for pk in chunks))
    monkeypatch.setattr(recovery, "queued_work", lambda queues, **_: held)
    assert runs_sweep().resent_chunks == 0
    # The broker holds only the first: the second's message is gone, and only it goes out.
    held = QueuedWork(messages=frozenset({(EVALUATE_CHUNK, chunks[0]), (EVALUATE_CHUNK, -1)}))
    assert runs_sweep().resent_chunks == 1
    assert sent["chunks"] == chunks[1:]
    # A broker that cannot list its messages (RabbitMQ) but holds some in the queue:
    # everything counts as still there.
    _age(Chunk.objects.all(), dispatched_at=1)
    held = QueuedWork(opaque=frozenset({"eval-python"}))
    assert runs_sweep().resent_chunks == 0
    held = QueuedWork()
    assert runs_sweep().resent_chunks == 2
    assert sent["chunks"] == [chunks[1], *chunks]


def test_a_chunk_taken_back_goes_out_whatever_the_broker_holds(queued_run, sent, monkeypatch):
    run_start(run_id=queued_run.pk)
    held, _ = queued_run.chunks.order_by("index")
    assert execution._claim(held.pk)
    _age(Chunk.objects.filter(pk=held.pk), lease_until=1)
    # Its old message may even still sit in the dead worker's reservations.
    monkeypatch.setattr(recovery, "queued_work",
                        lambda queues, **_: QueuedWork(opaque=frozenset(queues)))
    assert runs_sweep().resent_chunks == 1
    assert sent["chunks"] == [held.pk]


def test_the_sweeper_asks_the_broker_nothing_when_nothing_waits_long(queued_run, sent,
                                                                    monkeypatch):
    run_start(run_id=queued_run.pk)
    Chunk.objects.update(dispatched_at=timezone.now())

    def asked(queues, **_):
        raise AssertionError(f"asked about {queues}")

    monkeypatch.setattr(recovery, "queued_work", asked)
    assert not runs_sweep().anything


# Sent for real, to the broker folder of the test settings: eager Celery leaves send_task be.
@pytest.mark.filterwarnings("ignore::celery.exceptions.AlwaysEagerIgnored")
def test_the_embedded_broker_shows_waiting_messages_and_cannot_see_taken_ones():
    from celery import current_app
    from kombu import Queue

    queue, elsewhere = (f"{name}-{uuid.uuid4().hex[:8]}" for name in ("eval-test", "other"))
    current_app.send_task(EVALUATE_CHUNK, (41,), queue=queue)
    current_app.send_task(EVALUATE_CHUNK, (42,), queue=queue)
    current_app.send_task(EVALUATE_RUN, (7,), queue=elsewhere)
    work = queued_work({queue}, reserved_within=30)
    assert work is not None
    assert work.messages == {(EVALUATE_CHUNK, 41), (EVALUATE_CHUNK, 42)}
    # A worker takes one: the filesystem broker keeps it only in that worker's memory.
    with current_app.connection_for_read() as connection:
        taken = Queue(queue, routing_key=queue)(connection.default_channel).get(no_ack=True)
        assert taken is not None
        remaining = queued_work({queue}, reserved_within=30)
        assert remaining is not None
        assert len(remaining.messages) == 1
        assert remaining.messages < work.messages
        for name in (queue, elsewhere):
            Queue(name, routing_key=name)(connection.default_channel).purge()


def test_a_broker_whose_messages_cannot_be_listed_holds_all_of_a_queue_that_is_not_empty(
    monkeypatch,
):
    from celery import Celery

    from webapp.runs.messaging import dispatch

    app = Celery("opaque", broker="memory://", set_as_current=False)
    monkeypatch.setattr(dispatch, "current_app", app)
    busy, idle = (f"eval-{name}-{uuid.uuid4().hex[:8]}" for name in ("busy", "idle"))
    app.send_task(EVALUATE_CHUNK, (1,), queue=busy)
    work = queued_work({busy, idle}, reserved_within=30)
    assert work == QueuedWork(opaque=frozenset({busy}))
    assert work.holds(EVALUATE_CHUNK, 12345, queue=busy)
    assert not work.holds(EVALUATE_CHUNK, 1, queue=idle)


def test_a_broker_that_cannot_be_asked_gets_nothing_resent(queued_run, sent, monkeypatch):
    run_start(run_id=queued_run.pk)
    _age(Chunk.objects.all(), dispatched_at=1)
    monkeypatch.setattr(recovery, "queued_work", lambda queues, **_: None)
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
    original = execution.sample_results_record
    failures = {"left": 2}

    def flaky(**kwargs):
        if failures["left"]:
            failures["left"] -= 1
            raise OperationalError("server closed the connection unexpectedly")
        return original(**kwargs)

    monkeypatch.setattr(execution, "sample_results_record", flaky)
    run_start(run_id=queued_run.pk)
    for chunk in queued_run.chunks.all():
        assert chunk_evaluate(chunk_id=chunk.pk).state == "done"
    queued_run.refresh_from_db()
    assert queued_run.status == Run.Status.RUNNING, "not failed"
    assert queued_run.done_count == 4
    assert failures["left"] == 0


def test_no_result_is_recorded_once_the_run_is_cancelled(queued_run, personas):
    run_start(run_id=queued_run.pk)
    first, second = queued_run.samples.order_by("position")[:2]
    result = SampleResult(task_id=first.task_id, completion_id=first.index, status="passed",
                          program_hash="h")
    assert sample_record_result(run_id=queued_run.pk, sample_id=first.pk, result=result)
    assert run_cancel(user=personas.owner, run=queued_run)
    cancelled = RunEvent.objects.get(run=queued_run, type="run_finished")
    late = SampleResult(task_id=second.task_id, completion_id=second.index, status="passed",
                        program_hash="h2")

    assert sample_record_result(run_id=queued_run.pk, sample_id=second.pk, result=late) is None

    second.refresh_from_db()
    assert (second.status, second.seq, second.finished_at) == ("pending", None, None)
    queued_run.refresh_from_db()
    assert (queued_run.done_count, queued_run.passed_count) == (1, 1)
    assert queued_run.event_seq == cancelled.seq, "the cancelled event stays the last"


def test_beat_runs_the_sweep_itself_and_sends_nothing(tmp_path, monkeypatch, db):
    from celery import current_app

    from webapp.runs.worker import tasks
    from webapp.runs.worker.beat import SweepingScheduler

    swept: list[bool] = []
    monkeypatch.setattr(tasks, "runs_sweep", lambda: swept.append(True))
    sweep = current_app.tasks[SWEEP]

    def sent(*args, **kwargs):
        raise AssertionError("the sweep was sent to a queue")

    monkeypatch.setattr(sweep, "apply_async", sent)
    scheduler = SweepingScheduler(app=current_app, schedule_filename=str(tmp_path / "beat"))
    try:
        entry = scheduler.schedule["sweep-runs"]
        scheduler.apply_entry(entry, producer=None)
        assert swept == [True]
        # Overdue: beat's own loop runs it the same way.
        scheduler.schedule["sweep-runs"].last_run_at = timezone.now() - timedelta(hours=1)
        scheduler.populate_heap()
        scheduler.tick()
        assert swept == [True, True]
    finally:
        scheduler.close()


# Committed for real: only a write outside a transaction can be tried again.
@pytest.mark.django_db(transaction=True)
def test_a_database_that_stays_away_gives_the_chunk_back_without_failing(queued_run,
                                                                        monkeypatch):
    monkeypatch.setattr(transient, "FIRST_DELAY", 0.01)
    monkeypatch.setattr(transient, "DB_RETRY_SECONDS", 0.05)

    def down(**kwargs):
        raise OperationalError("the database system is shutting down")

    monkeypatch.setattr(execution, "sample_results_record", down)
    monkeypatch.setattr(execution, "db_retry",
                        lambda func, *, what: transient.db_retry(func, what=what, seconds=0.05))
    run_start(run_id=queued_run.pk)
    chunk = queued_run.chunks.first()
    outcome = chunk_evaluate(chunk_id=chunk.pk)
    assert outcome.state == "retry"
    chunk.refresh_from_db()
    assert (chunk.status, chunk.claim, chunk.attempts) == (Chunk.Status.QUEUED, "", 0)
    # The retry is a message this worker holds through its countdown: not lost meanwhile.
    assert chunk.dispatched_at is not None
    assert timezone.now() - chunk.dispatched_at < timedelta(seconds=60)
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
    # Each result recorded as it comes, as for a watched run: results come after the loss.
    monkeypatch.setattr(execution, "UNWATCHED_GATHER_SECONDS", 0.0)
    run = unstarted_run("taken over")
    run_start(run_id=run.pk)
    chunk = run.chunks.get()
    original = execution.sample_results_record
    took_over = threading.Event()

    def record_then_lose(*, run_id, results, **_when):
        events = original(run_id=run_id, results=results[:1])
        if not took_over.is_set():
            # The sweeper gave the chunk to another worker while this one was slow.
            Chunk.objects.filter(pk=chunk.pk).update(claim="someone-else")
            took_over.set()
            stop_seen = threading.Event()
            stop_seen.wait(3)  # let the heartbeat (a renewal each second) notice
        # The rest of the batch was written with it; the results after it are not.
        return events + original(run_id=run_id, results=results[1:])

    monkeypatch.setattr(execution, "sample_results_record", record_then_lose)
    outcome = chunk_evaluate(chunk_id=chunk.pk)
    assert outcome.state == "lost"
    chunk.refresh_from_db()
    assert chunk.status == Chunk.Status.RUNNING, "left to its new holder"
    assert Sample.objects.filter(run=run, status="pending").exists()


@pytest.mark.django_db(transaction=True)
def test_a_chunk_whose_run_stopped_before_its_heartbeat_noticed_is_not_done(
    unstarted_run, personas, settings, monkeypatch
):
    settings.CHUNK_SAMPLES = 100
    run = unstarted_run("stopped unnoticed")
    # The heartbeat never looks: the cancel lands while the chunk records its results.
    monkeypatch.setattr(leases, "CHECK_SECONDS", 3600.0)
    original = execution.sample_results_record

    def record_then_cancel(*, run_id, results, **_when):
        # The cancel lands once the first result is committed: the rest is refused.
        events = original(run_id=run_id, results=results[:1])
        if events:
            run_cancel(user=personas.owner, run=run)
        return events + original(run_id=run_id, results=results[1:])

    monkeypatch.setattr(execution, "sample_results_record", record_then_cancel)
    run_start(run_id=run.pk)
    chunk = run.chunks.get()

    assert chunk_evaluate(chunk_id=chunk.pk).state == "cancelled"

    chunk.refresh_from_db()
    assert chunk.status == Chunk.Status.CANCELLED, "its other results were refused"
    run.refresh_from_db()
    assert (run.done_count, run.chunks_done) == (1, 0)
    assert Sample.objects.filter(run=run, status="pending").count() == run.samples_total - 1
    # Resumed, the chunk evaluates what was refused, and the run finishes whole.
    monkeypatch.setattr(execution, "sample_results_record", original)
    run_resume(user=personas.owner, run=run)
    run.refresh_from_db()
    assert run.status == Run.Status.FINISHED
    assert not Sample.objects.filter(run=run, status="pending").exists()
    assert run.done_count == run.samples_total



def test_a_run_resumed_after_a_restart_says_it_was_interrupted_and_when(
        queued_run, sent, client, personas):
    """`bin/serve` takes back every running chunk at its start (`all_running`): the run page
    says the run was interrupted, when, and why, while it resumes and once it is done."""
    run_start(run_id=queued_run.pk)
    held = queued_run.chunks.order_by("index").first()
    assert execution._claim(held.pk)
    page = f"/runs/{queued_run.pk}/"
    client.force_login(personas.owner)
    assert 'id="recovery-notice" role="status" hidden' in client.get(page).text

    report = runs_sweep(all_running=True)  # what bin/serve runs as it starts

    assert report.taken_back == {queued_run.pk: 1}
    queued_run.refresh_from_db()
    when = f"{queued_run.recovered_at.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC"
    resuming = client.get(page).text
    assert "Interrupted at <time datetime=" in resuming
    assert when in resuming
    assert "The workbench restarted while this run was going" in resuming
    assert "The run is resuming by itself." in resuming

    for chunk in queued_run.chunks.all():
        assert chunk_evaluate(chunk_id=chunk.pk).state == "done"
    queued_run.refresh_from_db()
    if queued_run.status != Run.Status.FINISHED:
        run_finalize(run_id=queued_run.pk)
        queued_run.refresh_from_db()
    assert queued_run.status == Run.Status.FINISHED
    done = client.get(page).text
    assert "This run was interrupted 1 time and resumed by itself, the last at" in done
    assert when in done
    assert 'id="recovery-notice" role="status" hidden' not in done
