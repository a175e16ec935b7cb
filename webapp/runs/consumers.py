"""The websocket of a run page: `ws/runs/<id>/` joins the group `run-<id>`.

On joining, a page that names no `after` gets a snapshot from the database; a page that
reconnects names the last event number it saw (`ws/runs/<id>/?after=<seq>`) and gets exactly
the durable events it missed, rebuilt from the database, then the live ones. Events travel
in number order and each durable event is sent once: one the channel layer dropped (a
Redis restart, a full channel) is noticed by the gap it leaves, or by a periodic look at
the run's last number, and sent from the database.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.conf import settings
from django.db import DatabaseError
from django.http import Http404
from redis.exceptions import RedisError

from webapp.runs.events import with_log_html
from webapp.runs.live import run_group
from webapp.runs.models import Run
from webapp.runs.selectors import get_run_for_user, run_event_seq, run_events_after, run_snapshot

logger = logging.getLogger(__name__)

CLOSE_NOT_ALLOWED = 4403
CLOSE_LAYER_LOST = 1011
CATCH_UP_LIMIT = 5000
"""A viewer that missed more durable events than this gets a snapshot instead."""


class RunConsumer(AsyncJsonWebsocketConsumer):
    """Forwards a run's live events to a browser that may see the run.

    Anonymous users and users who may not see the run are refused before the handshake
    completes.
    """

    group: str | None = None
    run: Run | None = None
    sent_seq = 0
    ended = False
    reconciler: asyncio.Task[None] | None = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        try:
            await super().__call__(scope, receive, send)
        except (RedisError, OSError) as exc:
            if isinstance(exc, RedisError):
                # The channel layer went away (Redis restarting): close the socket; the page
                # reconnects and catches up from the database.
                logger.warning("run websocket closed, the channel layer is unavailable: %r",
                               exc)
                with contextlib.suppress(Exception):
                    await send({"type": "websocket.close", "code": CLOSE_LAYER_LOST})
            # Otherwise the browser had already gone (the server's ClientDisconnected).
        finally:
            if self.reconciler is not None:
                self.reconciler.cancel()
            if self.group is not None:
                # Leave the run's group whatever ended the socket, or its events keep
                # filling this server's inbox.
                with contextlib.suppress(Exception):
                    await self.channel_layer.group_discard(self.group, self.channel_name)

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=CLOSE_NOT_ALLOWED)
            return
        run_id = int(self.scope["url_route"]["kwargs"]["run_id"])
        try:
            self.run = await database_sync_to_async(_visible_run)(user, run_id)
        except Http404:
            await self.close(code=CLOSE_NOT_ALLOWED)
            return
        self.lock = asyncio.Lock()
        self.group = run_group(run_id)
        # Join before reading the database, so that nothing committed after the read is
        # missed; what arrives meanwhile waits in the channel until the catch-up is sent.
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()
        after = _after(self.scope.get("query_string", b""))
        async with self.lock:
            if after is None or not await self._catch_up(after):
                await self._send_snapshot()
        self.reconciler = asyncio.ensure_future(self._reconcile())

    async def disconnect(self, code: int) -> None:
        if self.reconciler is not None:
            self.reconciler.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self.reconciler
        if self.group is not None:
            with contextlib.suppress(Exception):
                await self.channel_layer.group_discard(self.group, self.channel_name)

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        # The page only listens; anything it sends is ignored.
        return

    async def run_event(self, message: dict[str, Any]) -> None:
        event = message["event"]
        seq = event.get("seq")
        if seq is None:
            await self.send_json(event)  # ephemeral: started, a test reported
            return
        async with self.lock:
            if seq <= self.sent_seq:
                return
            if seq > self.sent_seq + 1:
                # Something before it was dropped on the way: send the gap from the database
                # (which holds this event too, since events are sent after their commit).
                await self._catch_up(self.sent_seq)
                if seq <= self.sent_seq:
                    return
            await self._send_durable(with_log_html(event))

    async def run_access(self, message: dict[str, Any]) -> None:
        """The run was deleted, moved or made private: a viewer who may no longer see it is
        disconnected (`lifecycle` sends this)."""
        assert self.run is not None
        try:
            await database_sync_to_async(_visible_run)(self.scope.get("user"), self.run.pk)
        except Http404:
            self.ended = True
            await self.close(code=CLOSE_NOT_ALLOWED)

    async def _send_durable(self, event: dict[str, Any]) -> None:
        """Send a durable event whose log entry is drawn (`with_log_html`)."""
        await self.send_json(event)
        self.sent_seq = event["seq"]
        self.ended = self.ended or event["type"] == "run_finished"

    async def _send_snapshot(self) -> None:
        assert self.run is not None
        snapshot = await database_sync_to_async(_drawn_snapshot)(self.run)
        await self.send_json(snapshot)
        self.sent_seq = snapshot["seq"]
        self.ended = snapshot["status"] not in Run.ACTIVE

    async def _catch_up(self, after: int) -> bool:
        """Send the durable events after `after`; False when too many were missed."""
        assert self.run is not None
        events = await database_sync_to_async(_drawn_events_after)(self.run, after)
        if events is None:
            return False
        self.sent_seq = max(self.sent_seq, after)
        for event in events:
            if event["seq"] > self.sent_seq:
                await self._send_durable(event)
        return True

    async def _reconcile(self) -> None:
        """Now and then, compare the last number sent with the database's: the last events
        of a run (its end, say) may be dropped with no later event to reveal the gap."""
        assert self.run is not None
        while not self.ended:
            await asyncio.sleep(settings.LIVE_RECONCILE_SECONDS)
            try:
                latest = await database_sync_to_async(run_event_seq)(run_id=self.run.pk)
            except DatabaseError as exc:
                # The database is away for a moment; the next look will do.
                logger.warning("run %s: could not compare live events: %s", self.run.pk, exc)
                continue
            if latest > self.sent_seq:
                try:
                    async with self.lock:
                        if not await self._catch_up(self.sent_seq):
                            await self._send_snapshot()
                except Exception as exc:
                    # The socket is gone (the client left while the layer was down, say).
                    logger.info("run %s: live check stopped: %r", self.run.pk, exc)
                    return


def _after(query_string: bytes) -> int | None:
    values = parse_qs(query_string.decode("latin-1")).get("after")
    if not values:
        return None
    try:
        after = int(values[0])
    except ValueError:
        return None
    return after if after >= 0 else None


def _drawn_snapshot(run: Run) -> dict[str, Any]:
    return with_log_html(run_snapshot(run=run))


def _drawn_events_after(run: Run, after: int) -> list[dict[str, Any]] | None:
    # Drawn here, on the database thread, not on the socket's event loop: a catch-up may
    # hold thousands of entries.
    events = run_events_after(run=run, after=after, limit=CATCH_UP_LIMIT)
    return None if events is None else [with_log_html(event) for event in events]


def _visible_run(user: Any, run_id: int) -> Run:
    return get_run_for_user(user=user, run_id=run_id)
