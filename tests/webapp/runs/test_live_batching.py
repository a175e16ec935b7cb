"""A worker's live events travel in few group messages: ephemeral events are held a moment
and go with the next event of their run, a durable event goes at once with those held
before it, and the page still receives each event on its own, in order. On the production
Redis layer, with the emitter's own event loop as a Celery worker process has it."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
import redis
from asgiref.sync import async_to_sync
from channels.auth import AuthMiddlewareStack
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from channels.routing import URLRouter
from django.utils.module_loading import import_string

from tests.webapp.support import WebsocketClient
from webapp.runs.domain.events import with_log_html
from webapp.runs.messaging import live
from webapp.runs.messaging.live import MESSAGE_TYPE, run_group
from webapp.runs.pages import consumers
from webapp.runs.routing import websocket_urlpatterns
from webapp.runs.worker import execution
from webapp.runs.worker.tasks import evaluate_run
from webapp.settings import redis_channel_layer

RUN_ID = 424242


def _redis_url() -> str:
    url = os.environ.get("WORKBENCH_TEST_REDIS", "redis://127.0.0.1:6379/14")
    try:
        redis.Redis.from_url(url, socket_connect_timeout=3).ping()
    except redis.RedisError as exc:
        if os.environ.get("WORKBENCH_REQUIRE_SERVICES"):
            pytest.fail(f"Redis is not reachable at {url} ({exc})")
        pytest.skip(f"Redis is not reachable at {url}")
    return url


def _layer(url: str) -> Any:
    config = redis_channel_layer(url)
    return import_string(config["BACKEND"])(**config["CONFIG"])


@pytest.fixture
def layers(monkeypatch) -> Iterator[tuple[Any, Any]]:
    """(the web process's layer, the worker's): the worker emits through an event loop of
    its own (`live.use_own_event_loop`), as after a Celery fork."""
    url = _redis_url()
    web, worker = _layer(url), _layer(url)
    monkeypatch.setattr(live, "get_channel_layer", lambda: worker)
    monkeypatch.setattr(live, "_own_loop", live._EventLoop())
    yield web, worker
    asyncio.run(web.flush())


def _started(sample_id: int, run_id: int = RUN_ID) -> Any:
    return {"type": "sample_started", "run_id": run_id, "sample_id": sample_id,
            "task_id": "HumanEval/0", "completion_id": sample_id}


def _test(sample_id: int, index: int) -> Any:
    return {"type": "test_reported", "run_id": RUN_ID, "sample_id": sample_id,
            "task_id": "HumanEval/0", "completion_id": sample_id,
            "test": {"index": index, "status": "passed", "source": "assert f(1) == 1",
                     "duration_ms": 0.1, "message": None}}


def _finished(sample_id: int, seq: int, run_id: int = RUN_ID) -> Any:
    # Only what the emitter and the group care about: a durable event has a `seq`.
    return {"type": "sample_finished", "run_id": run_id, "seq": seq, "sample_id": sample_id}


async def _messages(web: Any, channel: str, count: int) -> list[dict[str, Any]]:
    return [await asyncio.wait_for(web.receive(channel), 10) for _ in range(count)]


async def _events_until(web: Any, channel: str, last: str) -> list[dict[str, Any]]:
    """The events of the messages `channel` receives, up to the first of type `last`."""
    events: list[dict[str, Any]] = []
    while not events or events[-1]["type"] != last:
        message = await asyncio.wait_for(web.receive(channel), 10)
        assert message["type"] == MESSAGE_TYPE
        events += message["events"]
    return events


async def _member(web: Any) -> str:
    channel = await web.new_channel()
    await web.group_add(run_group(RUN_ID), channel)
    return channel


async def _waiting(web: Any, channel: str) -> int:
    key = web.prefix + web.non_local_name(channel)
    return int(await web.connection(web.consistent_hash(channel)).zcard(key))


def test_a_sample_s_events_go_as_one_message_in_order(layers, monkeypatch):
    web, _ = layers
    # However slowly this machine runs the test, nothing leaves before the durable event.
    monkeypatch.setattr(live, "HOLD_SECONDS", 60.0)

    async def scenario() -> tuple[int, list[dict[str, Any]]]:
        channel = await _member(web)
        events = [_started(1), _test(1, 0), _test(1, 1), _test(1, 2), _finished(1, 7)]
        for event in events:
            await asyncio.to_thread(live.emit_run_event, event)  # as the worker's thread
        # A durable emit returns once its message is in Redis.
        waiting = await _waiting(web, channel)
        return waiting, await _messages(web, channel, 1)

    waiting, [message] = asyncio.run(scenario())
    assert waiting == 1, "one group message for the whole sample"
    assert message["type"] == MESSAGE_TYPE
    assert [(e["type"], e.get("test", {}).get("index")) for e in message["events"]] == [
        ("sample_started", None), ("test_reported", 0), ("test_reported", 1),
        ("test_reported", 2), ("sample_finished", None)]


def test_a_held_event_goes_by_itself_when_nothing_follows(layers):
    """A slow program's started and first tests show while it still runs."""
    web, _ = layers

    async def scenario() -> list[dict[str, Any]]:
        channel = await _member(web)
        await asyncio.to_thread(live.emit_run_event, _started(2))
        await asyncio.to_thread(live.emit_run_event, _test(2, 0))
        return await _events_until(web, channel, "test_reported")

    events = asyncio.run(scenario())
    assert [e["type"] for e in events] == ["sample_started", "test_reported"]


def test_events_of_two_runs_keep_their_own_order(layers):
    web, _ = layers
    other = RUN_ID + 1

    async def scenario() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        mine, theirs = await _member(web), await web.new_channel()
        await web.group_add(run_group(other), theirs)
        await asyncio.to_thread(live.emit_run_event, _started(3))
        await asyncio.to_thread(live.emit_run_event, _started(4, other))
        await asyncio.to_thread(live.emit_run_event, _finished(3, 8))
        await asyncio.to_thread(live.emit_run_event, _finished(4, 2, other))
        return (await _events_until(web, mine, "sample_finished"),
                await _events_until(web, theirs, "sample_finished"))

    mine, theirs = asyncio.run(scenario())
    assert [(e["type"], e["sample_id"]) for e in mine] == [
        ("sample_started", 3), ("sample_finished", 3)]
    assert [(e["type"], e["sample_id"]) for e in theirs] == [
        ("sample_started", 4), ("sample_finished", 4)]


def test_a_durable_emit_that_cannot_reach_the_layer_is_logged_not_raised(
        monkeypatch, caplog):
    """The database stays the record: the evaluation goes on (the consumer sends the
    event from the database)."""

    class Broken:
        async def group_send(self, group: str, message: dict[str, Any]) -> None:
            raise ConnectionError("Redis is restarting")

    monkeypatch.setattr(live, "get_channel_layer", Broken)
    monkeypatch.setattr(live, "_own_loop", live._EventLoop())
    live.emit_run_event(_started(5))
    live.emit_run_event(_finished(5, 9))
    assert "could not emit sample_finished" in caplog.text
    assert "Redis is restarting" in caplog.text


def test_the_feed_hands_each_event_of_a_message_on_its_own():
    message = {"type": MESSAGE_TYPE, "events": [_started(6), _finished(6, 3)]}
    assert consumers._events_of(message) == message["events"]
    single = {"type": MESSAGE_TYPE, "event": _finished(6, 3)}
    assert consumers._events_of(single) == [single["event"]], "an older worker's message"


def test_a_message_s_ephemeral_events_are_encoded_once_for_all_its_viewers(monkeypatch):
    """The feed hands every viewer in the process the same message, and a viewer may be
    thousands of events behind the first: the texts stay with the message, not in a cache
    of recent events that the viewers behind had outrun."""
    encoded: list[Any] = []

    def dumps(value: Any, **options: Any) -> str:
        encoded.append(value)
        return json.dumps(value, **options)

    monkeypatch.setattr(consumers, "json", SimpleNamespace(dumps=dumps, loads=json.loads))
    message = {"type": MESSAGE_TYPE, "events": [_started(6), _finished(6, 3), _started(7)]}
    first = consumers._ephemeral_texts(message)
    for sample in range(100, 2_100):  # the messages the first viewer sends meanwhile
        consumers._ephemeral_texts({"type": MESSAGE_TYPE, "events": [_started(sample)]})
    assert consumers._ephemeral_texts(message) is first
    started = [event for event in message["events"] if "seq" not in event]
    assert sum(1 for value in encoded if any(value is event for event in started)) == 2
    assert [json.loads(first[id(event)]) for event in started] == started


@pytest.mark.django_db(transaction=True)
def test_a_message_of_several_events_reaches_the_page_as_one_frame(
        unstarted_run, headers, monkeypatch):
    """A whole evaluation's events in one group message: the page gets them in one frame,
    each durable event drawn as the page receives it, in order, once."""
    run = unstarted_run("live")
    emitted: list[Any] = []
    # The layer carries nothing while the run is evaluated; its events go afterwards.
    monkeypatch.setattr(live, "emit_run_event", emitted.append)
    monkeypatch.setattr(execution, "emit_run_event", emitted.append)
    application = AuthMiddlewareStack(URLRouter(websocket_urlpatterns))

    async def scenario() -> dict[str, Any]:
        communicator = WebsocketClient(application, f"/ws/runs/{run.pk}/", headers)
        connected, _ = await communicator.connect()
        assert connected
        assert (await communicator.receive_json_from(timeout=5))["seq"] == 0
        await database_sync_to_async(evaluate_run.delay)(run.pk)
        layer = get_channel_layer()
        assert layer is not None
        await layer.group_send(run_group(run.pk), {
            "type": MESSAGE_TYPE, "events": json.loads(json.dumps(emitted))})
        frame: dict[str, Any] = await communicator.receive_json_from(timeout=10)
        await communicator.disconnect()
        return frame

    frame = async_to_sync(scenario)()
    assert frame["type"] == "events"
    kinds = [event["type"] for event in frame["events"]]
    assert kinds[0] == "run_status"
    assert kinds[-1] == "run_finished"
    assert "sample_started" in kinds
    assert "sample_finished" in kinds
    assert frame["events"] == json.loads(json.dumps([with_log_html(e) for e in emitted]))
    durable = [event["seq"] for event in frame["events"] if "seq" in event]
    assert durable == list(range(1, len(durable) + 1))
