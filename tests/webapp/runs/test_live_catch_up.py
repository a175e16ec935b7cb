"""Live viewers miss nothing: every durable event has a number, a viewer that reconnects
gets exactly what it missed from the database, and events the channel layer drops are sent
again (the in-memory layer here; the Redis layer, a killed Redis and a restarted web server
are in tests/webapp/services/)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.auth import AuthMiddlewareStack
from channels.db import database_sync_to_async
from channels.routing import URLRouter
from django.conf import settings
from django.test import Client

from tests.webapp.support import WebsocketClient
from webapp.runs.domain.events import with_log_html
from webapp.runs.messaging import live, watching
from webapp.runs.models import Run
from webapp.runs.pages import consumers
from webapp.runs.reads.selectors import run_events_after
from webapp.runs.routing import websocket_urlpatterns
from webapp.runs.worker import execution
from webapp.runs.worker.tasks import evaluate_run

pytestmark = pytest.mark.django_db(transaction=True)

application = AuthMiddlewareStack(URLRouter(websocket_urlpatterns))


@pytest.fixture
def run(unstarted_run) -> Run:
    return unstarted_run("live")


def _as_json(value: Any) -> Any:
    return json.loads(json.dumps(value))


def _capture(monkeypatch, *, drop=lambda event: False) -> list[dict[str, Any]]:
    """Every event emitted, in order; `drop` says which ones the layer loses. The run counts
    as watched, as by an open page: nobody watching, a sample's events are not sent."""
    monkeypatch.setattr(watching, "run_watched", lambda **_: True)
    emitted: list[dict[str, Any]] = []
    original = live.emit_run_event

    def emit(event):
        emitted.append(_as_json(event))
        if not drop(event):
            original(event)

    monkeypatch.setattr(live, "emit_run_event", emit)
    monkeypatch.setattr(execution, "emit_run_event", emit)
    return emitted


def _durable(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [event for event in events if "seq" in event and event["type"] != "snapshot"]


def _as_sent(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Emitted events as a page receives them: with their log entries drawn."""
    return [_as_json(with_log_html(event)) for event in events]


def test_durable_events_are_numbered_without_gaps_and_rebuilt_exactly(run, monkeypatch):
    emitted = _capture(monkeypatch)
    evaluate_run.delay(run.pk)
    durable = _durable(emitted)
    assert [event["seq"] for event in durable] == list(range(1, len(durable) + 1))
    kinds = [event["type"] for event in durable]
    assert kinds[0] == "run_status"
    assert kinds[-1] == "run_finished"
    assert kinds.count("sample_finished") == 4
    run.refresh_from_db()
    assert run.event_seq == len(durable)
    # What a viewer that saw the first k events gets on reconnecting: exactly the rest, as
    # they were sent live, progress included.
    for k in range(len(durable) + 1):
        assert _as_json(run_events_after(run=run, after=k, limit=1000)) == durable[k:], k
    assert run_events_after(run=run, after=0, limit=2) is None, "too many: a snapshot instead"
    assert run_events_after(run=run, after=len(durable) + 5, limit=1000) is None


async def _collect(communicator: WebsocketClient, *, until_finished: bool = True,
                   timeout: float = 30) -> list[dict[str, Any]]:
    events = []
    while True:
        event = await communicator.receive_json_from(timeout=timeout)
        events.append(event)
        if event["type"] == "run_finished" or (
            event["type"] == "snapshot" and event["status"] not in Run.ACTIVE
        ):
            return events
        if not until_finished and event["type"] == "snapshot":
            return events


def test_a_viewer_that_reconnects_gets_exactly_what_it_missed(run, headers, monkeypatch):
    emitted = _capture(monkeypatch)
    evaluate_run.delay(run.pk)
    durable = _durable(emitted)
    seen = 3  # the viewer saw events 1..3, then its connection dropped

    async def scenario() -> list[dict[str, Any]]:
        communicator = WebsocketClient(application, f"/ws/runs/{run.pk}/", headers,
                                       query_string=f"after={seen}".encode())
        connected, _ = await communicator.connect()
        assert connected
        events = await _collect(communicator)
        await communicator.disconnect()
        return events

    received = async_to_sync(scenario)()
    assert received == _as_sent(durable[seen:]), "no snapshot, no duplicate, nothing missing"


def test_events_the_layer_drops_are_sent_from_the_database(run, headers, monkeypatch):
    dropped: list[int] = []

    def drop(event) -> bool:
        # The layer loses every second sample_finished (a Redis restart, a full channel).
        if event["type"] == "sample_finished" and event["seq"] % 2 == 0:
            dropped.append(event["seq"])
            return True
        return False

    emitted = _capture(monkeypatch, drop=drop)

    async def scenario() -> list[dict[str, Any]]:
        communicator = WebsocketClient(application, f"/ws/runs/{run.pk}/", headers)
        connected, _ = await communicator.connect()
        assert connected
        snapshot = await communicator.receive_json_from(timeout=5)
        assert snapshot["type"] == "snapshot"
        await database_sync_to_async(evaluate_run.delay)(run.pk)
        events = await _collect(communicator)
        await communicator.disconnect()
        return events

    received = _durable(async_to_sync(scenario)())
    assert dropped, "the test dropped something"
    assert received == _as_sent(_durable(emitted)), "every durable event, in order, once"


def test_a_dropped_last_event_is_sent_by_the_periodic_check(run, headers, monkeypatch):
    monkeypatch.setattr(settings, "LIVE_RECONCILE_SECONDS", 0.2)
    emitted = _capture(monkeypatch, drop=lambda event: event["type"] == "run_finished")

    async def scenario() -> list[dict[str, Any]]:
        communicator = WebsocketClient(application, f"/ws/runs/{run.pk}/", headers)
        connected, _ = await communicator.connect()
        assert connected
        await communicator.receive_json_from(timeout=5)
        await database_sync_to_async(evaluate_run.delay)(run.pk)
        events = await _collect(communicator)
        await communicator.disconnect()
        return events

    received = _durable(async_to_sync(scenario)())
    assert received[-1]["type"] == "run_finished"
    assert received == _as_sent(_durable(emitted))


def test_a_viewer_far_behind_gets_a_snapshot(run, headers, monkeypatch):
    _capture(monkeypatch)
    evaluate_run.delay(run.pk)
    monkeypatch.setattr(consumers, "CATCH_UP_LIMIT", 1)

    async def scenario() -> dict[str, Any]:
        communicator = WebsocketClient(application, f"/ws/runs/{run.pk}/", headers,
                                       query_string=b"after=0")
        connected, _ = await communicator.connect()
        assert connected
        first = await communicator.receive_json_from(timeout=5)
        await communicator.disconnect()
        return first

    first = async_to_sync(scenario)()
    assert first["type"] == "snapshot"
    assert first["status"] == "finished"
    assert first["seq"] == Run.objects.get(pk=run.pk).event_seq


@pytest.mark.parametrize("after", [b"after=-1", b"after=x", b"after=", b"other=1"])
def test_a_bad_after_gets_a_snapshot(run, headers, after):
    async def scenario() -> dict[str, Any]:
        communicator = WebsocketClient(application, f"/ws/runs/{run.pk}/", headers,
                                       query_string=after)
        connected, _ = await communicator.connect()
        assert connected
        first = await communicator.receive_json_from(timeout=5)
        await communicator.disconnect()
        return first

    assert async_to_sync(scenario)()["type"] == "snapshot"


def test_the_page_shows_nothing_older_than_the_number_it_resumes_from(run, personas,
                                                                       monkeypatch):
    """The run starts between the page reading the run and reading the event number: the
    page must not show `queued` while resuming after the `run_status` event."""
    from webapp.runs.pages import views
    from webapp.runs.reads.selectors import run_snapshot as original
    from webapp.runs.worker.execution import run_start

    def start_first(*, run):
        run_start(run_id=run.pk)
        return original(run=run)

    monkeypatch.setattr(views, "run_snapshot", start_first)
    client = Client()
    client.force_login(personas.owner)
    page = client.get(f"/runs/{run.pk}/").content.decode()
    config = json.loads(page.split('id="run-live-config" type="application/json">')[1]
                        .split("</script>")[0])
    assert config["seq"] == 1, "the run_status event is behind the page"
    assert 'id="run-status">Running<' in page


def test_a_late_copy_of_a_sample_sent_from_the_database_says_the_sample_ended(
        run, headers, monkeypatch):
    """The layer delays a sample_finished past later events: the viewer gets it from the
    database when the gap shows, and when the late copy arrives it is told `sample_ended`
    (its `sample_started` may have come after the copy from the database), not the event
    again."""
    send_live = live.emit_run_event
    held: list[Any] = []

    def hold(event) -> bool:
        if event["type"] == "sample_finished" and not held:
            held.append(event)
            return True
        return False

    emitted = _capture(monkeypatch, drop=hold)

    async def scenario() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        communicator = WebsocketClient(application, f"/ws/runs/{run.pk}/", headers)
        connected, _ = await communicator.connect()
        assert connected
        assert (await communicator.receive_json_from(timeout=5))["type"] == "snapshot"
        await database_sync_to_async(evaluate_run.delay)(run.pk)
        events = await _collect(communicator)
        await database_sync_to_async(send_live)(held[0])  # the late copy
        # The evaluation ran before the viewer read anything, so the catch-up from the
        # database overtook the run's ephemeral events: they come after run_finished here,
        # as they did to the pages that showed ghost rows.
        # So did the live copies of the samples, each now a `sample_ended`.
        later = [await communicator.receive_json_from(timeout=5)]
        while later[-1].get("sample_id") != held[0]["entry"]["sample_id"] or (
                later[-1]["type"] != "sample_ended"):
            later.append(await communicator.receive_json_from(timeout=5))
        await communicator.disconnect()
        return events, later

    events, later = async_to_sync(scenario)()
    assert held, "the test delayed a sample"
    assert _durable(events) == _as_sent(_durable(emitted)), "each durable event once, in order"
    assert later[-1] == {"type": "sample_ended", "run_id": run.pk,
                         "sample_id": held[0]["entry"]["sample_id"]}
    assert {event["type"] for event in later} <= {
        "sample_started", "test_reported", "sample_ended"}, "nothing durable twice"
    # Only the late copy: the others, which came ahead of it, waited for it and were then
    # found in the database's catch-up, after every event that was ahead of them in the
    # channel (their `sample_started` among them).
    ended = [event["sample_id"] for event in events + later if event["type"] == "sample_ended"]
    assert ended == [held[0]["entry"]["sample_id"]]
