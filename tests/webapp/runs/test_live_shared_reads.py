"""Many viewers of one run cost one read at a time: viewers who join while a snapshot is
being drawn share the next one, instead of each drawing its own in turn (fifty viewers
joining a busy run one after another waited seconds for theirs)."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.auth import AuthMiddlewareStack
from channels.routing import URLRouter

from tests.webapp.support import WebsocketClient
from webapp.runs.models import Run
from webapp.runs.pages import consumers
from webapp.runs.routing import websocket_urlpatterns

pytestmark = pytest.mark.django_db(transaction=True)

application = AuthMiddlewareStack(URLRouter(websocket_urlpatterns))
LATE_VIEWERS = 3


def test_viewers_who_join_during_a_snapshot_share_the_next_one(unstarted_run, headers,
                                                              monkeypatch):
    run = unstarted_run("shared")
    draws: list[int] = []
    first_drawn = threading.Event()  # holds the first drawing until the others have asked
    original = consumers._drawn_snapshot

    def drawn_snapshot(run_id: int) -> consumers.Drawn:
        draws.append(run_id)
        if len(draws) == 1:
            assert first_drawn.wait(timeout=60), "the late viewers never asked"
        return original(run_id)

    monkeypatch.setattr(consumers, "_drawn_snapshot", drawn_snapshot)
    asking = consumers.SharedReads.get
    asked: list[float] = []

    async def scenario() -> list[dict[str, Any]]:
        all_asked = asyncio.Event()

        async def get(self: consumers.SharedReads[Any], **kwargs: Any) -> Any:
            asked.append(kwargs["since"])
            if len(asked) == 1 + LATE_VIEWERS:
                all_asked.set()
            return await asking(self, **kwargs)

        monkeypatch.setattr(consumers.SharedReads, "get", get)
        viewers = [WebsocketClient(application, f"/ws/runs/{run.pk}/", headers)
                   for _ in range(1 + LATE_VIEWERS)]
        for viewer in viewers:
            # Each joins the run's feed after the first drawing began, which it cannot use.
            connected, _ = await viewer.connect(timeout=30)
            assert connected
        await asyncio.wait_for(all_asked.wait(), timeout=60)
        first_drawn.set()
        snapshots = [await viewer.receive_json_from(timeout=60) for viewer in viewers]
        for viewer in viewers:
            await viewer.disconnect()
        return snapshots

    snapshots = async_to_sync(scenario)()
    assert [snapshot["type"] for snapshot in snapshots] == ["snapshot"] * (1 + LATE_VIEWERS)
    assert all(snapshot["status"] == Run.Status.QUEUED for snapshot in snapshots)
    assert len(draws) == 2, "the late viewers shared one snapshot, drawn after they joined"
