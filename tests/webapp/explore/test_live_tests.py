"""Per-test outcomes of a running sample reach the run page while it runs (while someone
watches it: nobody else is sent them), and chunks reuse one long-lived engine per
configuration."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.auth import AuthMiddlewareStack
from channels.db import database_sync_to_async
from channels.routing import URLRouter

from evaluator.engine import Engine
from tests.webapp.support import RIGHT_0, WebsocketClient, write_jsonl
from webapp.runs.messaging import watching
from webapp.runs.messaging.watching import WatchCheck, run_watch, run_watched
from webapp.runs.models import Run
from webapp.runs.routing import websocket_urlpatterns
from webapp.runs.worker import engines, execution
from webapp.runs.worker.execution import run_start
from webapp.runs.worker.tasks import evaluate_run

application = AuthMiddlewareStack(URLRouter(websocket_urlpatterns))


def test_each_test_is_emitted_before_its_sample_finishes(unstarted_run, monkeypatch):
    run = unstarted_run()
    emitted: list[dict[str, Any]] = []
    monkeypatch.setattr(execution, "emit_run_event", emitted.append)
    run_watch(run_id=run.pk)
    run_start(run_id=run.pk)
    for chunk in run.chunks.all():
        assert execution.chunk_evaluate(chunk_id=chunk.pk).state == "done"
    reported = [e for e in emitted if e["type"] == "test_reported"]
    assert reported, "a running program reports its tests"
    for event in reported:
        assert set(event) == {"type", "run_id", "sample_id", "task_id", "completion_id", "test"}
        assert set(event["test"]) == {"index", "status", "source", "duration_ms", "message"}
        position = emitted.index(event)
        finished = next(i for i, e in enumerate(emitted) if e["type"] == "sample_finished"
                        and e["entry"]["sample_id"] == event["sample_id"])
        assert position < finished
    right = run.samples.get(task_id="HumanEval/0", index=0)
    statuses = [e["test"]["status"] for e in reported if e["sample_id"] == right.pk]
    assert statuses == ["passed"] * right.tests_total


def test_nobody_watching_gets_results_and_no_live_event_of_a_sample(unstarted_run,
                                                                     monkeypatch):
    run = unstarted_run()
    emitted: list[dict[str, Any]] = []
    monkeypatch.setattr(execution, "emit_run_event", emitted.append)
    run_start(run_id=run.pk)
    for chunk in run.chunks.all():
        assert execution.chunk_evaluate(chunk_id=chunk.pk).state == "done"
    assert emitted == [], "nobody watches: no start, test or result of a sample is sent"
    assert not run.samples.filter(status="pending").exists()
    # What a page opened later reads from the database: each result with its tests, and
    # the numbers of the durable events it was not sent, without a gap.
    right = run.samples.get(task_id="HumanEval/0", index=0)
    assert [t["status"] for t in right.result["tests"]] == ["passed"] * right.tests_total
    seqs = sorted(run.samples.values_list("seq", flat=True))
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))


def test_a_viewer_who_comes_mid_chunk_gets_the_next_programs_tests(unstarted_run, tmp_path,
                                                                  monkeypatch, settings):
    settings.CHUNK_SAMPLES = 100  # one chunk: the viewer comes while it is evaluated
    # Thirty programs, each its own (a comment apart), so none is a duplicate of another.
    path = write_jsonl(tmp_path / "thirty.jsonl", [
        {"task_id": "HumanEval/0", "completion": f"{RIGHT_0}\n    # {index}\n"}
        for index in range(30)])
    run = unstarted_run(path=path)
    emitted: list[dict[str, Any]] = []
    monkeypatch.setattr(execution, "emit_run_event", emitted.append)
    record = execution.sample_results_record
    recorded: list[list[int]] = []  # the batches, as written

    # One program at a time, each started once the result before it is recorded, as on a
    # machine that keeps up: however busy this one is, programs start after the page opens
    # (without it, a recorder that lagged found every program started before it).
    settings.EVALUATOR_WORKERS = 1
    turns = threading.Semaphore(1)
    execute = Engine._execute

    def in_turn(self: Engine, *args: Any, **kwargs: Any) -> Any:
        turns.acquire(timeout=60)
        return execute(self, *args, **kwargs)

    monkeypatch.setattr(Engine, "_execute", in_turn)

    def record_then_open_the_page(**kwargs: Any) -> Any:
        events = record(**kwargs)
        recorded.append([event["entry"]["sample_id"] for event in events])
        run_watch(run_id=run.pk)  # the page opens after the first results
        for _ in events:
            turns.release()
        return events

    monkeypatch.setattr(execution, "sample_results_record", record_then_open_the_page)
    monkeypatch.setattr(watching, "CHECK_SECONDS", 0.0)
    # Unwatched results recorded as they come, not half a second together: otherwise the
    # thirty could all finish within the first batch's window, before the page opens.
    monkeypatch.setattr(execution, "UNWATCHED_GATHER_SECONDS", 0.0)
    run_start(run_id=run.pk)
    (chunk,) = run.chunks.all()
    assert execution.chunk_evaluate(chunk_id=chunk.pk).state == "done"
    sent = {e["entry"]["sample_id"] for e in emitted if e["type"] == "sample_finished"}
    first, *later = recorded
    assert len(first) == 1, "one program at a time: one result in the first batch"
    assert later, "results came after the page opened"
    assert not set(first) & sent, "the first results came before anyone watched"
    assert {sample for batch in later for sample in batch} <= sent, \
        "once watched, every result is sent"
    assert any(e["type"] == "test_reported" for e in emitted), \
        "once watched, the programs that start next stream their tests"


def test_a_watch_lasts_three_renewals_and_only_for_a_run_still_running(unstarted_run,
                                                                       settings):
    settings.LIVE_RECONCILE_SECONDS = 10.0
    run = unstarted_run()
    assert not run_watched(run_id=run.pk)
    run_watch(run_id=run.pk)
    run.refresh_from_db()
    assert run.watched_until is not None
    left = (run.watched_until - run.created_at).total_seconds()
    assert 25 < left < 3600, "about three reconcile periods from now"
    assert run_watched(run_id=run.pk)
    Run.objects.filter(pk=run.pk).update(watched_until=None, status=Run.Status.FINISHED)
    run_watch(run_id=run.pk)
    assert not run_watched(run_id=run.pk), "a finished run has nothing left to stream"


def test_the_worker_asks_whether_anyone_watches_at_most_once_a_second(unstarted_run,
                                                                       monkeypatch):
    from django.db import DatabaseError

    run = unstarted_run()
    now = [100.0]
    asked: list[int] = []
    real = watching.run_watched

    def counted(*, run_id: int) -> bool:
        asked.append(run_id)
        return real(run_id=run_id)

    monkeypatch.setattr(watching, "run_watched", counted)
    check = WatchCheck(run_id=run.pk, clock=lambda: now[0])
    assert check() is False
    run_watch(run_id=run.pk)
    now[0] += watching.CHECK_SECONDS / 2
    assert check() is False, "asked again only after CHECK_SECONDS"
    now[0] += watching.CHECK_SECONDS
    assert check() is True
    assert len(asked) == 2

    def failing(*, run_id: int) -> bool:
        raise DatabaseError("the database went away")

    monkeypatch.setattr(watching, "run_watched", failing)
    now[0] += watching.CHECK_SECONDS
    assert check() is True, "a failed read keeps the last answer"


@pytest.mark.django_db(transaction=True)
def test_the_websocket_forwards_test_reported_events(headers, unstarted_run, monkeypatch):
    run = unstarted_run()

    async def scenario() -> list[dict[str, Any]]:
        communicator = WebsocketClient(application, f"/ws/runs/{run.pk}/", headers)
        connected, _ = await communicator.connect()
        assert connected
        assert (await communicator.receive_json_from(timeout=5))["type"] == "snapshot"
        await database_sync_to_async(evaluate_run.delay)(run.pk)
        events: list[dict[str, Any]] = []
        while not events or events[-1]["type"] != "run_finished":
            events.append(await communicator.receive_json_from(timeout=30))
        await communicator.disconnect()
        return events

    events = async_to_sync(scenario)()
    run.refresh_from_db()
    assert run.watched_until is not None, "the viewer's feed marked the run watched"
    kinds = [event["type"] for event in events]
    assert "test_reported" in kinds
    first_test = kinds.index("test_reported")
    sample_id = events[first_test]["sample_id"]
    started = next(i for i, e in enumerate(events) if e["type"] == "sample_started"
                   and e["sample_id"] == sample_id)
    finished = next(i for i, e in enumerate(events) if e["type"] == "sample_finished"
                    and e["entry"]["sample_id"] == sample_id)
    assert started < first_test < finished


@pytest.mark.django_db(transaction=True)
def test_an_open_page_keeps_renewing_its_mark_and_a_closed_one_lets_it_lapse(
        headers, unstarted_run, settings):
    import asyncio

    settings.LIVE_RECONCILE_SECONDS = 0.05
    run = unstarted_run()
    cleared = Run.objects.filter(pk=run.pk)

    async def renewed() -> bool:
        # The mark is taken away while the page is open: the feed's next look puts it back.
        await database_sync_to_async(cleared.update)(watched_until=None)
        for _ in range(200):
            if await database_sync_to_async(run_watched)(run_id=run.pk):
                return True
            await asyncio.sleep(0.05)
        return False

    async def scenario() -> tuple[bool, bool]:
        communicator = WebsocketClient(application, f"/ws/runs/{run.pk}/", headers)
        connected, _ = await communicator.connect()
        assert connected
        assert (await communicator.receive_json_from(timeout=5))["type"] == "snapshot"
        while_open = await renewed()
        await communicator.disconnect()
        await database_sync_to_async(cleared.update)(watched_until=None)
        await asyncio.sleep(0.3)  # several of the feed's periods: nobody renews it now
        return while_open, await database_sync_to_async(run_watched)(run_id=run.pk)

    while_open, after_closing = async_to_sync(scenario)()
    assert while_open, "an open page renews the mark"
    assert not after_closing, "a closed page renews nothing"


def test_chunks_lease_one_engine_per_configuration(unstarted_run, monkeypatch, settings):
    settings.CHUNK_SAMPLES = 1
    engines.engines_close()
    created: list[Any] = []
    original = engines._new_engine

    def counting(key: engines.EngineKey) -> Any:
        engine = original(key)
        created.append(engine)
        return engine

    monkeypatch.setattr(engines, "_new_engine", counting)
    run = unstarted_run()
    assert run.chunks.count() == 2
    run_start(run_id=run.pk)
    for chunk in run.chunks.all():
        assert execution.chunk_evaluate(chunk_id=chunk.pk).state == "done"
    assert len(created) == 1, "the second chunk reused the first chunk's engine"
    assert not created[0].config.stream_tests, "a chunk's streaming ends with its lease"
    assert created[0].config.cache is None, "a chunk's cache is detached after its lease"
    assert engines.engines_open() == 1
    engines.engines_close()
    assert engines.engines_open() == 0
    assert created[0]._pool is None, "closing shuts the engine's threads down"


def test_an_engine_whose_evaluation_failed_is_not_reused(monkeypatch):
    from evaluator.records import RunOptions

    engines.engines_close()
    with pytest.raises(RuntimeError), engines.engine_lease(
        backend="none", workers=1, options=RunOptions(), cache=None
    ) as broken:
        raise RuntimeError("sandbox fell over")
    with engines.engine_lease(backend="none", workers=1, options=RunOptions(),
                              cache=None) as fresh:
        assert fresh is not broken
    engines.engines_close()
