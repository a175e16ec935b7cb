"""Per-test outcomes of a running sample reach the run page while it runs, and chunks
reuse one long-lived engine per configuration."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.auth import AuthMiddlewareStack
from channels.db import database_sync_to_async
from channels.routing import URLRouter
from django.test import Client

from tests.webapp.support import WebsocketClient
from webapp.runs.routing import websocket_urlpatterns
from webapp.runs.worker import engines, execution
from webapp.runs.worker.execution import run_start
from webapp.runs.worker.tasks import evaluate_run

application = AuthMiddlewareStack(URLRouter(websocket_urlpatterns))


def test_each_test_is_emitted_before_its_sample_finishes(unstarted_run, monkeypatch):
    run = unstarted_run()
    emitted: list[dict[str, Any]] = []
    monkeypatch.setattr(execution, "emit_run_event", emitted.append)
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


@pytest.mark.django_db(transaction=True)
def test_the_websocket_forwards_test_reported_events(personas, unstarted_run,
                                                     monkeypatch):
    run = unstarted_run()
    client = Client()
    client.force_login(personas.owner)
    headers = [(b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode()),
               (b"origin", b"http://localhost")]

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
    kinds = [event["type"] for event in events]
    assert "test_reported" in kinds
    first_test = kinds.index("test_reported")
    sample_id = events[first_test]["sample_id"]
    started = next(i for i, e in enumerate(events) if e["type"] == "sample_started"
                   and e["sample_id"] == sample_id)
    finished = next(i for i, e in enumerate(events) if e["type"] == "sample_finished"
                    and e["entry"]["sample_id"] == sample_id)
    assert started < first_test < finished


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
    assert created[0].config.stream_tests
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
