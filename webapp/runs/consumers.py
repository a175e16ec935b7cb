"""The websocket of a run page: `ws/runs/<id>/` joins the group `run-<id>`."""

from __future__ import annotations

from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.http import Http404

from webapp.runs.events import SnapshotEvent
from webapp.runs.live import run_group
from webapp.runs.models import Run
from webapp.runs.selectors import get_run_for_user, run_snapshot

CLOSE_NOT_ALLOWED = 4403


class RunConsumer(AsyncJsonWebsocketConsumer):  # type: ignore[misc]
    """Forwards a run's live events to a browser that may see the run.

    Anonymous users and users who may not see the run are refused before the handshake
    completes. On joining, the consumer first sends a snapshot from the database, so a page
    opened mid-run catches up; events emitted meanwhile are queued and follow it.
    """

    group: str | None = None

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=CLOSE_NOT_ALLOWED)
            return
        run_id = int(self.scope["url_route"]["kwargs"]["run_id"])
        try:
            run = await database_sync_to_async(_visible_run)(user, run_id)
        except Http404:
            await self.close(code=CLOSE_NOT_ALLOWED)
            return
        self.group = run_group(run.pk)
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()
        snapshot: SnapshotEvent = await database_sync_to_async(_snapshot)(run)
        await self.send_json(snapshot)

    async def disconnect(self, code: int) -> None:
        if self.group is not None:
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        # The page only listens; anything it sends is ignored.
        return

    async def run_event(self, message: dict[str, Any]) -> None:
        await self.send_json(message["event"])


def _visible_run(user: Any, run_id: int) -> Run:
    return get_run_for_user(user=user, run_id=run_id)


def _snapshot(run: Run) -> SnapshotEvent:
    return run_snapshot(run=run)
