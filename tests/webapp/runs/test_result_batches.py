"""Results recorded together: the results a worker has ready at once go into one transaction
(`execution.sample_results_record`), with the same guarantees as one at a time: each sample
counted once, event numbers in commit order with no gaps, nothing after a cancel. The file
runs again on PostgreSQL (`test_result_batches_on_postgresql.py`)."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import OperationalError, connection, connections
from django.test.utils import CaptureQueriesContext

from evaluator.records import SampleResult, Status
from evaluator.records import TestOutcome as Outcome
from tests.webapp.support import WRONG_0, write_jsonl
from webapp.runs.models import Run, RunEvent, Sample
from webapp.runs.services.writes import run_cancel
from webapp.runs.worker import execution
from webapp.runs.worker.execution import chunk_evaluate, run_start, sample_results_record


def _result(sample: Sample, status: Status = "passed", *, cached: bool = False) -> SampleResult:
    tests = (Outcome(index=0, source="assert f()", status="passed"),
             Outcome(index=1, source="assert g()",
                     status="passed" if status == "passed" else "failed"))
    return SampleResult(task_id=sample.task_id, completion_id=sample.index, status=status,
                        program_hash=f"h{sample.pk}", cached=cached, tests=tests)


@pytest.fixture
def started(unstarted_run) -> Run:
    run = unstarted_run("batches")
    run_start(run_id=run.pk)
    run.refresh_from_db()
    return run


def _samples(run: Run) -> list[Sample]:
    return list(run.samples.order_by("position"))


def test_a_batch_is_one_statement_for_the_run_and_one_a_sample(started):
    samples = _samples(started)
    before = started.event_seq
    results = [(samples[0].pk, _result(samples[0])),
               (samples[1].pk, _result(samples[1], "failed")),
               (samples[2].pk, _result(samples[2], "error", cached=True))]

    with CaptureQueriesContext(connection) as queries:
        events = sample_results_record(run_id=started.pk, results=results)

    writes = [q["sql"] for q in queries.captured_queries if q["sql"].startswith("UPDATE")]
    assert len(writes) == 1 + len(results), writes
    assert [event["seq"] for event in events] == [before + 1, before + 2, before + 3]
    assert [event["entry"]["sample_id"] for event in events] == [s.pk for s in samples[:3]]
    assert [event["progress"]["done"] for event in events] == [1, 2, 3]
    assert events[-1]["progress"]["by_status"]["failed"] == 1
    assert events[-1]["progress"]["cached"] == 1
    started.refresh_from_db()
    assert started.event_seq == before + 3
    assert (started.done_count, started.passed_count, started.failed_count,
            started.error_count, started.cached_count) == (3, 1, 1, 1, 1)
    stored = Sample.objects.get(pk=samples[1].pk)
    assert (stored.status, stored.seq, stored.tests_passed, stored.tests_total) == (
        "failed", before + 2, 1, 2)
    assert stored.result is not None
    assert stored.result["program_hash"] == f"h{samples[1].pk}"
    assert stored.finished_at is not None


def test_a_sample_already_recorded_in_a_batch_takes_no_number_and_no_count(started):
    first, second, third, *_ = _samples(started)
    [earlier] = sample_results_record(run_id=started.pk, results=[(second.pk, _result(second))])

    events = sample_results_record(run_id=started.pk, results=[
        (first.pk, _result(first, "failed")),
        (second.pk, _result(second, "failed")),  # delivered again: already has its result
        (third.pk, _result(third, "timeout")),
    ])

    assert [event["entry"]["sample_id"] for event in events] == [first.pk, third.pk]
    assert [event["seq"] for event in events] == [earlier["seq"] + 1, earlier["seq"] + 2]
    assert [event["progress"]["done"] for event in events] == [2, 3]
    started.refresh_from_db()
    assert started.event_seq == earlier["seq"] + 2, "no gap where the duplicate was"
    assert (started.done_count, started.passed_count, started.failed_count,
            started.timeout_count) == (3, 1, 1, 1)
    second.refresh_from_db()
    assert (second.status, second.seq) == ("passed", earlier["seq"]), "written once"


def test_a_whole_batch_of_samples_already_recorded_changes_nothing(started):
    first, second, *_ = _samples(started)
    results = [(first.pk, _result(first)), (second.pk, _result(second))]
    assert len(sample_results_record(run_id=started.pk, results=results)) == 2
    started.refresh_from_db()
    seq = started.event_seq

    assert sample_results_record(run_id=started.pk, results=results) == []

    started.refresh_from_db()
    assert (started.event_seq, started.done_count, started.passed_count) == (seq, 2, 2)


def test_a_batch_for_a_stopped_run_records_nothing(started, personas):
    samples = _samples(started)
    assert run_cancel(user=personas.owner, run=started)
    started.refresh_from_db()
    seq = started.event_seq

    assert sample_results_record(run_id=started.pk, results=[
        (sample.pk, _result(sample)) for sample in samples]) == []

    started.refresh_from_db()
    assert (started.event_seq, started.done_count) == (seq, 0)
    assert set(started.samples.values_list("status", flat=True)) == {"pending"}


def test_a_batch_with_a_status_that_is_not_one_is_refused_whole(started):
    first, second, *_ = _samples(started)
    seq = started.event_seq
    bad = SampleResult(task_id=second.task_id, completion_id=second.index, status="passed",
                       program_hash="h")
    object.__setattr__(bad, "status", "exploded")
    with pytest.raises(ValueError, match="exploded"):
        sample_results_record(run_id=started.pk, results=[(first.pk, _result(first)),
                                                          (second.pk, bad)])
    started.refresh_from_db()
    assert (started.event_seq, started.done_count) == (seq, 0)
    assert set(started.samples.values_list("status", flat=True)) == {"pending"}


@pytest.mark.django_db(transaction=True)
def test_a_cancel_during_a_batch_waits_for_it_and_comes_after_it(unstarted_run, personas,
                                                                 monkeypatch):
    # Committed for real: the cancel comes from another connection, as from the web.
    run = unstarted_run("cancelled during a batch")
    run_start(run_id=run.pk)
    samples = _samples(run)
    original = execution._store_result
    cancelled: list[bool] = []

    def cancel() -> None:
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    cancelled.append(run_cancel(user=personas.owner,
                                                run=Run.objects.get(pk=run.pk)))
                    return
                except OperationalError:
                    # The test's SQLite is in memory, where a writer that finds the
                    # database locked is refused at once instead of waiting out the busy
                    # timeout as the file's writers do: wait here instead. PostgreSQL
                    # waits for the run's row by itself.
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.05)
        finally:
            connections.close_all()

    canceller = threading.Thread(target=cancel)

    def store_and_cancel(cursor, **kwargs):
        if canceller.ident is None:
            canceller.start()
            time.sleep(0.5)  # the cancel waits for the run's row (or SQLite's write lock)
        return original(cursor, **kwargs)

    monkeypatch.setattr(execution, "_store_result", store_and_cancel)
    events = sample_results_record(run_id=run.pk, results=[
        (sample.pk, _result(sample)) for sample in samples[:3]])
    canceller.join(timeout=60)
    monkeypatch.setattr(execution, "_store_result", original)

    assert cancelled == [True]
    assert [event["seq"] for event in events] == [2, 3, 4], "run_status was 1"
    finished = RunEvent.objects.get(run=run, type="run_finished")
    assert finished.seq == 5, "the cancel's event comes right after the batch it waited for"
    assert finished.payload["progress"]["done"] == 3
    late = sample_results_record(run_id=run.pk, results=[(samples[3].pk,
                                                          _result(samples[3]))])
    assert late == []
    run.refresh_from_db()
    assert (run.status, run.event_seq, run.done_count) == (Run.Status.CANCELLED, 5, 3)


@pytest.mark.django_db(transaction=True)
def test_results_ready_together_are_recorded_together(unstarted_run, tmp_path, monkeypatch):
    """A chunk whose results come from the cache has them all at once: they are written in
    fewer transactions than samples, each counted once, numbered in order."""
    path = write_jsonl(tmp_path / "many.jsonl", [
        {"task_id": f"HumanEval/{n % 2}", "completion": f"{WRONG_0}    # {n}\n"}
        for n in range(40)])
    first = unstarted_run("fills the cache", path)
    run_start(run_id=first.pk)
    for chunk in first.chunks.all():
        assert chunk_evaluate(chunk_id=chunk.pk).state == "done"
    calls: list[int] = []
    original = execution.sample_results_record

    def counting(*, run_id, results, **when):
        calls.append(len(results))
        return original(run_id=run_id, results=results, **when)

    monkeypatch.setattr(execution, "sample_results_record", counting)
    run = unstarted_run("served from the cache", path)
    run_start(run_id=run.pk)
    seq = Run.objects.get(pk=run.pk).event_seq
    for chunk in run.chunks.all():
        assert chunk_evaluate(chunk_id=chunk.pk).state == "done"

    run.refresh_from_db()
    assert sum(calls) == run.samples_total == run.done_count == run.cached_count == 40
    assert len(calls) < run.samples_total / 2, calls
    assert sorted(run.samples.values_list("seq", flat=True)) == list(range(seq + 1, seq + 41))
    assert run.event_seq == seq + 40


@pytest.mark.django_db(transaction=True)
def test_an_unwatched_chunk_records_its_results_together_each_with_its_own_finish(
        unstarted_run, tmp_path, monkeypatch):
    """With nobody watching, the results that finish within the gather window of one
    another are recorded in one transaction; each sample keeps the moment its program
    finished, not the moment the batch was written."""
    path = write_jsonl(tmp_path / "unwatched.jsonl", [
        {"task_id": "HumanEval/0", "completion": f"{WRONG_0}    # {n}\n"} for n in range(12)])
    # A window no chunk outlasts: the chunk's end closes the batch.
    monkeypatch.setattr(execution, "UNWATCHED_GATHER_SECONDS", 3600.0)
    calls: list[tuple[int, list[object]]] = []
    original = execution.sample_results_record

    def counting(*, run_id, results, finished_at=None):
        calls.append((len(results), list(finished_at or [])))
        return original(run_id=run_id, results=results, finished_at=finished_at)

    monkeypatch.setattr(execution, "sample_results_record", counting)
    run = unstarted_run("unwatched", path)
    run_start(run_id=run.pk)
    [chunk] = run.chunks.all()
    assert chunk_evaluate(chunk_id=chunk.pk).state == "done"

    [(count, moments)] = calls
    assert count == 12
    stored = list(run.samples.order_by("seq").values_list("finished_at", flat=True))
    assert stored == moments, "each sample's finish is the moment the engine gave it"
    assert stored == sorted(stored)
    assert len(set(stored)) == 12, "not one moment for the whole batch"
    chunk.refresh_from_db()
    assert chunk.finished_at is not None
    assert stored[-1] <= chunk.finished_at


def _events(*steps):
    """An engine's event stream: each step is an event to yield, or a callable to run."""
    for step in steps:
        if callable(step):
            step()
        else:
            yield step


def _event(position: int) -> dict[str, object]:
    return {"type": "sample_started", "position": position}


def test_a_watched_run_gets_each_result_as_it_comes():
    first_taken = threading.Event()
    events = execution._EngineEvents(stop=threading.Event())
    events.start(_events(_event(0), lambda: first_taken.wait(60), _event(1)))
    batches = []
    for batch in events.batches(gather=lambda: 0.0):
        batches.append([event.get("position") for event, _ in batch])
        first_taken.set()
    events.finish()
    assert batches == [[0], [1]]


def test_an_unwatched_batch_gathers_and_answers_the_engines_reads_meanwhile():
    events = execution._EngineEvents(stop=threading.Event())
    answers: list[str] = []
    events.start(_events(
        _event(0),
        # The engine asks the recording thread for a cache read while the batch gathers:
        # were it kept waiting for the window's end, the batch would close on event 0.
        lambda: answers.append(events.ask(lambda: "read on the recording thread")),
        _event(1)))
    batches = [[event.get("position") for event, _ in batch]
               for batch in events.batches(gather=lambda: 3600.0)]
    events.finish()
    assert answers == ["read on the recording thread"]
    assert batches == [[0, 1]]
