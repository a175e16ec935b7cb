"""The run websocket with the in-memory channel layer: who may join, the snapshot on
joining, and the live events of an evaluation in order."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.auth import AuthMiddlewareStack
from channels.db import database_sync_to_async
from channels.routing import URLRouter
from django.contrib.auth.models import AnonymousUser
from django.test import Client

from tests.webapp.support import WebsocketClient
from webapp.runs.models import Run
from webapp.runs.routing import websocket_urlpatterns
from webapp.runs.worker.tasks import evaluate_run

pytestmark = pytest.mark.django_db(transaction=True)

application = AuthMiddlewareStack(URLRouter(websocket_urlpatterns))


def _cookie_for(user) -> list[tuple[bytes, bytes]]:
    client = Client()
    client.force_login(user)
    session = client.cookies["sessionid"].value
    return [(b"cookie", f"sessionid={session}".encode()), (b"origin", b"http://localhost")]


async def _connect(run_id: int, headers) -> tuple[WebsocketClient, bool, Any]:
    communicator = WebsocketClient(application, f"/ws/runs/{run_id}/", headers)
    connected, code = await communicator.connect()
    return communicator, connected, code


def test_anonymous_user_is_refused(personas, unstarted_run):
    run = unstarted_run()
    Run.objects.filter(pk=run.pk).update(visibility=Run.Visibility.PUBLIC)

    async def scenario() -> None:
        communicator = WebsocketClient(application, f"/ws/runs/{run.pk}/", [])
        communicator.scope["user"] = AnonymousUser()
        connected, code = await communicator.connect()
        assert not connected
        assert code == 4403

    async_to_sync(scenario)()


def test_outsider_is_refused_like_a_missing_run(personas, unstarted_run):
    run = unstarted_run()

    outsider_headers = _cookie_for(personas.outsider)

    async def scenario() -> None:
        _, connected, code = await _connect(run.pk, outsider_headers)
        assert not connected
        assert code == 4403
        _, connected, missing_code = await _connect(999999, outsider_headers)
        assert not connected
        assert missing_code == code

    async_to_sync(scenario)()


def test_teammate_joins_and_first_gets_a_snapshot(personas, unstarted_run):
    run = unstarted_run()

    teammate_headers = _cookie_for(personas.teammate)

    async def scenario() -> None:
        communicator, connected, _ = await _connect(run.pk, teammate_headers)
        assert connected
        snapshot = await communicator.receive_json_from(timeout=5)
        assert snapshot["type"] == "snapshot"
        assert snapshot["status"] == "queued"
        assert snapshot["progress"] == {"done": 0, "total": 4, "cached": 0, "pass1": None,
                                        "by_status": snapshot["progress"]["by_status"]}
        await communicator.disconnect()

    async_to_sync(scenario)()


def test_events_of_an_evaluation_arrive_in_order(personas, unstarted_run):
    run = unstarted_run()

    owner_headers = _cookie_for(personas.owner)

    async def scenario() -> list[dict[str, Any]]:
        communicator, connected, _ = await _connect(run.pk, owner_headers)
        assert connected
        assert (await communicator.receive_json_from(timeout=5))["type"] == "snapshot"
        await database_sync_to_async(evaluate_run.delay)(run.pk)
        events = []
        while True:
            event = await communicator.receive_json_from(timeout=30)
            events.append(event)
            if event["type"] == "run_finished":
                break
        await communicator.disconnect()
        return events

    events = async_to_sync(scenario)()
    kinds = [event["type"] for event in events]
    assert kinds[0] == "run_status"
    assert kinds[-1] == "run_finished"
    finished = [event for event in events if event["type"] == "sample_finished"]
    assert [event["progress"]["done"] for event in finished] == [1, 2, 3, 4]
    for event in finished:  # each entry comes drawn by the log's template
        assert f'data-sample="{event["entry"]["sample_id"]}"' in event["entry"]["html"]
    started = {e["sample_id"]: i for i, e in enumerate(events) if e["type"] == "sample_started"}
    assert started, "programs that run announce themselves"
    for sample_id, start in started.items():
        assert start < next(i for i, e in enumerate(events) if e["type"] == "sample_finished"
                            and e["entry"]["sample_id"] == sample_id)
    right = next(e for e in finished if e["entry"]["task_id"] == "HumanEval/0"
                 and e["entry"]["completion_id"] == 0)
    assert right["entry"]["status"] == "passed"
    assert right["tests"]
    assert all(test["status"] == "passed" for test in right["tests"])
    wrong = next(e for e in finished if e["entry"]["task_id"] == "HumanEval/0"
                 and e["entry"]["completion_id"] == 1)
    assert wrong["entry"]["first_failure"]["source"].startswith("assert")
    assert events[-1]["status"] == "finished"
    assert events[-1]["pass_at_k"][0] == {**events[-1]["pass_at_k"][0], "k": 1, "value": 0.25}


def test_page_opened_mid_run_catches_up_from_the_database(personas, unstarted_run):
    run = unstarted_run()
    evaluate_run.delay(run.pk)

    owner_headers = _cookie_for(personas.owner)

    async def scenario() -> dict[str, Any]:
        communicator, connected, _ = await _connect(run.pk, owner_headers)
        assert connected
        snapshot = await communicator.receive_json_from(timeout=5)
        await communicator.disconnect()
        return snapshot

    snapshot = async_to_sync(scenario)()
    assert snapshot["status"] == "finished"
    assert snapshot["progress"]["done"] == 4
    assert len(snapshot["log"]) == 4
    assert snapshot["log"][0]["url"].startswith(f"/runs/{run.pk}/samples/")
    assert all('class="log-entry' in entry["html"] for entry in snapshot["log"])
    assert [value["k"] for value in snapshot["pass_at_k"]] == [1], "k of 1, 10 and 100 only"
