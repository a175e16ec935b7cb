"""The websocket of a run page: `ws/runs/<id>/` joins the group `run-<id>`.

On joining, a page that names no `after` gets a snapshot from the database; a page that
reconnects names the last event number it saw (`ws/runs/<id>/?after=<seq>`) and gets exactly
the durable events it missed, rebuilt from the database, then the live ones. Events travel
in number order and each durable event is sent once: one the channel layer dropped (a
Redis restart, a full channel) is noticed by the gap it leaves, or by a periodic look at
the run's last number, and sent from the database.

Many viewers of one run cost little more than one. A web process joins the run's group
once, whatever the number of its viewers (`RunFeed`), so each event crosses the channel
layer once per process, not once per viewer; viewers that join while a snapshot is being
drawn share the next one drawn after they joined, and those that miss events share their
catch-up (`SharedReads`); and a live event is drawn and encoded once per process. The
database reads run on the event loop's pool of threads, not on the one thread channels
gives every database call of a process. While the channel layer is away, a viewer is
accepted and closed at once with CLOSE_TRY_AGAIN, which the page understands and retries;
only a viewer who may not see the run gets CLOSE_NOT_ALLOWED.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.conf import settings
from django.db import DatabaseError
from django.http import Http404
from redis.exceptions import RedisError

from webapp.runs.domain.events import SampleEndedEvent, with_log_html
from webapp.runs.messaging.live import MESSAGE_TYPE, run_group
from webapp.runs.messaging.watching import run_watch
from webapp.runs.models import Run
from webapp.runs.reads.selectors import (
    get_run_for_user,
    run_event_seq,
    run_events_after,
    run_snapshot,
)
from webapp.runs.services.lifecycle import ACCESS_MESSAGE

logger = logging.getLogger(__name__)

CLOSE_NOT_ALLOWED = 4403
CLOSE_TRY_AGAIN = 1013
"""The channel layer is away (Redis restarting): the page says so and connects again. 1013
is the WebSocket code for "try again later"; a refusal before the handshake would reach
the browser as HTTP 403, which means "not allowed"."""
DRAWN_EVENTS_KEPT = 512
GAP_WAIT_SECONDS = 0.5
"""How long a durable event that came ahead of its turn waits for those before it, before
they are sent from the database. Several workers emit their events in their own order
after their commits, so a later number often arrives a moment before an earlier one; a
trip to the database for each such gap, per viewer, delayed every viewer by seconds."""
AHEAD_MAX = 200
"""More events ahead of their turn than this: the gap is filled at once."""
CATCH_UP_LIMIT = 5000
"""A viewer that missed more durable events than this gets a snapshot instead."""
INBOX_MAX = 2000
"""Messages waiting for one viewer beyond this are dropped for it, as a full channel would
drop them: its durable events come again from the database."""
LOST = "feed.lost"
"""The message a viewer gets when its process's feed of the run lost the channel layer."""
BEHIND = "feed.behind"
"""The message a viewer gets when the run's last number is past the last it was sent, and
the events up to it did not reach this process's feed."""

Result = TypeVar("Result")


def _off_thread(read: Callable[..., Result]) -> Callable[..., Awaitable[Result]]:
    """`read`, run on a thread of the loop's pool. By default channels runs every
    `database_sync_to_async` call of a process through one thread, each with a new
    database connection: 50 viewers joining a run queued their reads behind one another,
    and the last waited seconds. These reads depend on no other call's thread, and each
    closes its own connection (`webapp.websocket_auth` does the same for the user)."""
    return database_sync_to_async(read, thread_sensitive=False)


@dataclass
class _Read(Generic[Result]):
    """One read of `SharedReads`: from which number, and when it began (not yet: inf)."""

    after: int
    began: float = math.inf
    result: asyncio.Future[Result] | None = None


@dataclass
class SharedReads(Generic[Result]):
    """One kind of read of a run's state, shared by the run's viewers in this process.

    A viewer needs a read begun after a moment of its own (when it joined the run's feed,
    or noticed a gap), from a number at most its own `after`. It shares the latest read
    that fits; else, while a read is under way, the next one, begun when that one ends and
    from the lowest number its viewers asked for; else a new one. One read at a time per
    run, however many viewers: fifty viewers who joined a busy run one after another each
    missed the snapshot begun before them and drew their own, in turn, seconds apart.
    """

    read: Callable[[int], Result]
    latest: _Read[Result] | None = None
    pending: _Read[Result] | None = None
    tasks: set[asyncio.Future[Result]] = field(default_factory=set)

    async def get(self, *, since: float, after: int = 0) -> Result:
        latest = self.latest
        chosen: _Read[Result] | None
        if latest is not None and latest.began >= since and latest.after <= after:
            chosen = latest
        elif latest is not None and latest.result is not None and not latest.result.done():
            chosen = self.pending
            if chosen is None:
                chosen = self._begin(_Read(after), previous=latest.result)
            chosen.after = min(chosen.after, after)
        else:
            chosen = self._begin(_Read(after), previous=None)
        assert chosen.result is not None
        # Shielded: a viewer that leaves does not cancel the read the others wait for.
        return await asyncio.shield(chosen.result)

    def _begin(self, read: _Read[Result], *, previous: asyncio.Future[Result] | None,
               ) -> _Read[Result]:
        if previous is None:
            read.began = time.monotonic()
            self.latest = read
        else:
            self.pending = read
        read.result = asyncio.ensure_future(self._run(read, previous))
        self.tasks.add(read.result)
        read.result.add_done_callback(self.tasks.discard)
        return read

    async def _run(self, read: _Read[Result], previous: asyncio.Future[Result] | None,
                   ) -> Result:
        if previous is not None:
            await asyncio.wait([previous])  # its outcome is for its own viewers
            self.pending = None
            read.began = time.monotonic()
            self.latest = read
        return await _off_thread(self.read)(read.after)


class RunFeed:
    """A run's group messages for the viewers of the run in this web process.

    The process joins the group on one channel of its own and hands each message to every
    viewer's inbox; the channel layer carries each event once per process instead of once
    per viewer, which is what kept 50 viewers of a busy run seconds behind.
    """

    def __init__(self, layer: Any, group: str, run_id: int) -> None:
        self.layer = layer
        self.group = group
        self.run_id = run_id
        self.loop = asyncio.get_running_loop()
        self.channel = ""
        self.viewers: set[RunConsumer] = set()
        self.seen_seq = 0
        """The highest event number that reached this feed."""
        self.snapshots = SharedReads(lambda _after: _drawn_snapshot(run_id))
        self.catch_ups = SharedReads(lambda after: _drawn_events_after(run_id, after))
        self.closed = False
        self.pump: asyncio.Task[None] | None = None
        self.watch: asyncio.Task[None] | None = None
        self.ready: asyncio.Future[None] = asyncio.ensure_future(self._join())

    async def _join(self) -> None:
        self.channel = await self.layer.new_channel()
        await self.layer.group_add(self.group, self.channel)
        self.pump = asyncio.ensure_future(self._pump())
        self.watch = asyncio.ensure_future(self._watch())
        await self._mark_watched()

    async def _mark_watched(self) -> None:
        """Tell the run's workers that someone watches, so they stream each test as it runs
        (`webapp.runs.messaging.watching`); the mark outlives two missed renewals."""
        try:
            await _off_thread(run_watch)(run_id=self.run_id)
        except DatabaseError as exc:
            # The next look renews it; meanwhile the page gets results, not each test.
            logger.warning("run %s: could not mark it watched: %s", self.run_id, exc)

    async def _watch(self) -> None:
        """Now and then, one look per process (not per viewer) at the run's last number: the
        last events of a run (its end, say) may be dropped with no later event to reveal
        the gap, and a viewer that was sent less catches up.

        Only events that never reached this feed, or that a viewer's full inbox dropped,
        count as missed: those in a viewer's inbox are on their way, and taking them for
        missed sent every viewer of a busy run to the database at each look."""
        while True:
            await asyncio.sleep(settings.LIVE_RECONCILE_SECONDS)
            if all(viewer.ended for viewer in self.viewers):
                continue
            await self._mark_watched()
            dropped = {viewer for viewer in self.viewers if viewer.inbox_dropped}
            for viewer in dropped:
                viewer.inbox_dropped = False
            try:
                latest = await _off_thread(run_event_seq)(run_id=self.run_id)
            except DatabaseError as exc:
                # The database is away for a moment; the next look will do.
                logger.warning("run %s: could not compare live events: %s", self.run_id, exc)
                for viewer in dropped:
                    viewer.inbox_dropped = True
                continue
            if self.seen_seq < latest:
                # Committed just before the look, it may still be on its way, like a gap.
                await asyncio.sleep(GAP_WAIT_SECONDS)
            for viewer in list(self.viewers):
                if (not viewer.ended and viewer.sent_seq < latest
                        and (self.seen_seq < latest or viewer in dropped)):
                    viewer.inbox.put_nowait({"type": BEHIND, "seq": latest})

    async def _pump(self) -> None:
        try:
            while True:
                message = await self.layer.receive(self.channel)
                if message.get("type") == MESSAGE_TYPE:
                    seqs = [event.get("seq") for event in _events_of(message)]
                    self.seen_seq = max([self.seen_seq, *(s for s in seqs if isinstance(s, int))])
                for viewer in list(self.viewers):
                    if viewer.inbox.qsize() < INBOX_MAX:
                        viewer.inbox.put_nowait(message)
                    else:
                        viewer.inbox_dropped = True
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            # The layer went away: every viewer here is told to try again.
            logger.warning("the live feed of %s lost the channel layer: %r", self.group, exc)
            self._close()
            for viewer in list(self.viewers):
                viewer.inbox.put_nowait({"type": LOST})

    def _close(self) -> None:
        self.closed = True
        if self.watch is not None:
            self.watch.cancel()
        key = (id(asyncio.get_running_loop()), self.group)
        if _feeds.get(key) is self:
            del _feeds[key]

    async def leave(self, viewer: RunConsumer) -> None:
        self.viewers.discard(viewer)
        if self.viewers or self.closed:
            return
        self._close()
        if self.pump is not None:
            self.pump.cancel()
        if self.ready.done() and not self.ready.cancelled() and self.ready.exception() is None:
            with contextlib.suppress(Exception):
                await self.layer.group_discard(self.group, self.channel)


_feeds: dict[tuple[int, str], RunFeed] = {}
"""(event loop, group) -> the feed of the group's viewers in this process."""


async def join_feed(layer: Any, run_id: int, viewer: RunConsumer) -> RunFeed:
    """Add `viewer` to this process's feed of the run, joining the run's group first if no
    viewer here has; every message sent to the group after this returns reaches the
    viewer."""
    group = run_group(run_id)
    while True:
        loop = asyncio.get_running_loop()
        key = (id(loop), group)
        feed = _feeds.get(key)
        if feed is not None and (feed.loop is not loop or feed.layer is not layer
                                 or (feed.pump is not None and feed.pump.done())):
            # Left by a loop that is gone (a new one may reuse its id) or a feed that died:
            # never handed to a viewer.
            del _feeds[key]
            feed = None
        if feed is None:
            feed = _feeds[key] = RunFeed(layer, group, run_id)
        feed.viewers.add(viewer)
        try:
            # Shielded: a viewer that leaves does not cancel the join the others wait for.
            await asyncio.shield(feed.ready)
        except BaseException:
            feed.viewers.discard(viewer)
            if feed.ready.done():
                feed._close()  # joining failed: the next viewer tries again
            raise
        if not feed.closed:
            return feed
        feed.viewers.discard(viewer)  # it lost the layer meanwhile: a new one


class RunConsumer(AsyncJsonWebsocketConsumer):
    """Forwards a run's live events to a browser that may see the run.

    Anonymous users and users who may not see the run are refused before the handshake
    completes.
    """

    group: str | None = None
    run: Run | None = None
    sent_seq = 0
    ended = False
    accepted = False
    inbox_dropped = False
    gap_timer: asyncio.Task[None] | None = None
    frame: list[str] | None = None
    """While `run_event` handles a message: the events to send, encoded, in order."""
    reader: asyncio.Task[None] | None = None
    feed: RunFeed | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        try:
            await super().__call__(scope, receive, send)
        except (RedisError, OSError) as exc:
            if isinstance(exc, RedisError) or not self.accepted:
                # The channel layer went away (Redis restarting): close the socket; the page
                # reconnects and catches up from the database. Accepted first when it was
                # not yet, or the server would answer the handshake with 403.
                logger.warning("run websocket closed, the channel layer is unavailable: %r",
                               exc)
                with contextlib.suppress(Exception):
                    if not self.accepted:
                        await send({"type": "websocket.accept"})
                    await send({"type": "websocket.close", "code": CLOSE_TRY_AGAIN})
            # Otherwise the browser had already gone (the server's ClientDisconnected).
        finally:
            for task in (self.gap_timer, self.reader):
                if task is not None:
                    task.cancel()
            if self.feed is not None:
                # Leave the run's feed whatever ended the socket, or its events keep
                # filling this viewer's inbox.
                with contextlib.suppress(Exception):
                    await self.feed.leave(self)

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=CLOSE_NOT_ALLOWED)
            return
        run_id = int(self.scope["url_route"]["kwargs"]["run_id"])
        try:
            self.run = await _off_thread(_visible_run)(user, run_id)
        except Http404:
            await self.close(code=CLOSE_NOT_ALLOWED)
            return
        self.lock = asyncio.Lock()
        self.ahead: dict[int, dict[str, Any]] = {}
        self.group = run_group(run_id)
        # Join before reading the database, so that nothing committed after the read is
        # missed; what arrives meanwhile waits in the inbox until the catch-up is sent (the
        # reader waits for the lock).
        self.feed = await join_feed(self.channel_layer, run_id, self)
        joined = time.monotonic()
        await self.accept()
        self.accepted = True
        self.reader = asyncio.ensure_future(self._read_inbox())
        after = _after(self.scope.get("query_string", b""))
        async with self.lock:
            if after is None or not await self._catch_up(after):
                await self._send_snapshot(joined=joined)

    async def disconnect(self, code: int) -> None:
        for task in (self.gap_timer, self.reader):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        if self.feed is not None:
            with contextlib.suppress(Exception):
                await self.feed.leave(self)

    async def _read_inbox(self) -> None:
        """Handle what the run's feed hands this viewer, in order."""
        handlers = {MESSAGE_TYPE: self.run_event, ACCESS_MESSAGE: self.run_access}
        try:
            while True:
                message = await self.inbox.get()
                if message["type"] == LOST:
                    self.ended = True
                    await self.close(code=CLOSE_TRY_AGAIN)
                    return
                if message["type"] == BEHIND:
                    await self._catch_up_to(message["seq"])
                    continue
                handler = handlers.get(message["type"])
                if handler is not None:
                    await handler(message)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            # The socket is gone (the client left, say).
            logger.info("run websocket: live events stopped: %r", exc)

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        # The page only listens; anything it sends is ignored.
        return

    async def run_event(self, message: dict[str, Any]) -> None:
        """The events of one message reach the page in one frame (`_send_frame`): a
        worker's sample is one message, and a websocket send per event per viewer was most
        of a web process's work with 50 viewers of a busy run."""
        async with self.lock:
            self.frame = []
            encoded = _ephemeral_texts(message)
            try:
                for event in _events_of(message):
                    await self._forward(event, encoded)
            finally:
                texts, self.frame = self.frame, None
            await self._send_frame(texts)

    async def _forward(self, event: dict[str, Any], encoded: dict[int, str]) -> None:
        """`encoded`: the message's ephemeral events' texts (`_ephemeral_texts`)."""
        seq = event.get("seq")
        if seq is None:
            await self._send_text(encoded[id(event)])  # started, a test reported
            return
        if seq <= self.sent_seq:
            if event["type"] == "sample_finished":
                # Sent already, from the database (a snapshot or a catch-up), perhaps
                # before this sample's `sample_started` was forwarded: the page is told
                # again that it ended, so that no row stays "running".
                await self._send_text(json.dumps(SampleEndedEvent(
                    type="sample_ended", run_id=event["run_id"],
                    sample_id=event["entry"]["sample_id"])))
            return
        if seq > self.sent_seq + 1:
            # Ahead of its turn: those before it are most likely a moment behind.
            self.ahead[seq] = event
            if len(self.ahead) > AHEAD_MAX:
                await self._fill_gap()
            elif self.gap_timer is None:
                self.gap_timer = asyncio.ensure_future(self._wait_for_gap())
            return
        await self._send_live(event)
        await self._send_ahead()

    async def _send_text(self, text: str) -> None:
        """Send one encoded event now, or add it to the frame being made (`run_event`)."""
        if self.frame is not None:
            self.frame.append(text)
        else:
            await self.send(text_data=text)

    async def _send_frame(self, texts: list[str]) -> None:
        """One event as it is; several as `{"type": "events", "events": [...]}`, which the
        page takes apart in order."""
        if len(texts) == 1:
            await self.send(text_data=texts[0])
        elif texts:
            await self.send(text_data='{"type": "events", "events": [' + ", ".join(texts)
                            + "]}")

    async def _send_live(self, event: dict[str, Any]) -> None:
        drawn, text = _drawn_live_event(event)
        await self._send_text(text)
        self._note_sent(drawn)

    async def _send_ahead(self) -> None:
        """Send the events that came ahead of their turn and now have it; forget those that
        were sent meanwhile from the database."""
        while self.sent_seq + 1 in self.ahead:
            await self._send_live(self.ahead.pop(self.sent_seq + 1))
        for seq in [seq for seq in self.ahead if seq <= self.sent_seq]:
            del self.ahead[seq]
        if not self.ahead and self.gap_timer is not None:
            self.gap_timer.cancel()
            self.gap_timer = None
        elif self.ahead and self.gap_timer is None:
            self.gap_timer = asyncio.ensure_future(self._wait_for_gap())

    async def _wait_for_gap(self) -> None:
        await asyncio.sleep(GAP_WAIT_SECONDS)
        self.gap_timer = None  # from here on, nothing cancels it
        try:
            async with self.lock:
                if self.ahead:
                    await self._fill_gap()
        except Exception as exc:
            # The socket is gone (the client left while the layer was down, say).
            logger.info("run websocket: could not fill a gap in the live events: %r", exc)

    async def _fill_gap(self) -> None:
        """Events before those ahead of their turn were dropped on the way (a Redis restart, a
        full channel): send them from the database, which holds those ahead too, since
        events are sent after their commit."""
        if not await self._catch_up(self.sent_seq):
            await self._send_snapshot()
        await self._send_ahead()

    async def run_access(self, message: dict[str, Any]) -> None:
        """The run was deleted, moved or made private: a viewer who may no longer see it is
        disconnected (`lifecycle` sends this)."""
        assert self.run is not None
        try:
            await _off_thread(_visible_run)(self.scope.get("user"), self.run.pk)
        except Http404:
            self.ended = True
            await self.close(code=CLOSE_NOT_ALLOWED)

    async def _send_durable(self, event: dict[str, Any]) -> None:
        """Send a durable event whose log entry is drawn (`with_log_html`)."""
        await self._send_text(json.dumps(event))
        self._note_sent(event)

    def _note_sent(self, event: dict[str, Any]) -> None:
        self.sent_seq = event["seq"]
        self.ended = self.ended or event["type"] == "run_finished"

    async def _send_snapshot(self, *, joined: float | None = None) -> None:
        """Send the state in the database; `joined`, when this socket joined the run's
        group, lets it share a snapshot drawn for another viewer since then.

        Begun after the viewer joined the run's group, a snapshot reads the run's event
        number after the join, so every later event reaches the viewer live, as with a
        snapshot of its own."""
        assert self.feed is not None
        seq, status, text = await self.feed.snapshots.get(since=joined or time.monotonic())
        await self._send_text(text)
        self.sent_seq = seq
        self.ended = status not in Run.ACTIVE

    async def _catch_up(self, after: int) -> bool:
        """Send the durable events after `after`; False when too many were missed, or when
        `after` is a number the run never reached.

        The events may come from a read shared with viewers that asked from further back.
        Begun after this call, it holds every event up to the run's number when it was
        read; a viewer is in the run's feed already, so whatever is numbered later reaches
        it live, or is asked for again as a gap."""
        assert self.feed is not None
        latest, events = await self.feed.catch_ups.get(since=time.monotonic(), after=after)
        if events is None or after > latest:
            return False
        self.sent_seq = max(self.sent_seq, after)
        for event in events:
            if event["seq"] > self.sent_seq:
                await self._send_durable(event)
        return True

    async def _catch_up_to(self, latest: int) -> None:
        """The feed saw the run's number at `latest`: send from the database what this
        viewer was not sent, unless the events it held meanwhile got it there."""
        async with self.lock:
            if self.sent_seq < latest and not self.ended:
                if not await self._catch_up(self.sent_seq):
                    await self._send_snapshot()
                await self._send_ahead()


def _events_of(message: dict[str, Any]) -> list[dict[str, Any]]:
    """The events of a `run.event` message, in order: a worker sends several in one
    (`live.HOLD_SECONDS`); a single `event` is what an older process sends."""
    events = message.get("events")
    if isinstance(events, list):
        return events
    return [message["event"]] if "event" in message else []


def _after(query_string: bytes) -> int | None:
    values = parse_qs(query_string.decode("latin-1")).get("after")
    if not values:
        return None
    try:
        after = int(values[0])
    except ValueError:
        return None
    return after if after >= 0 else None


Drawn = tuple[int, str, str]
"""A snapshot as sent: its number, the run's status in it, and its JSON text."""

_drawn_events: OrderedDict[tuple[int, int], tuple[dict[str, Any], dict[str, Any], str]] = (
    OrderedDict())
"""(run id, seq) -> a live durable event as received, as drawn, and encoded, for the other
viewers of the run."""


def _drawn_snapshot(run_id: int) -> Drawn:
    snapshot = with_log_html(run_snapshot(run=Run.objects.get(pk=run_id)))
    return snapshot["seq"], snapshot["status"], json.dumps(snapshot)


ENCODED = "_encoded_ephemeral"
"""Where a message keeps its ephemeral events' JSON texts, by `id(event)`."""


def _ephemeral_texts(message: dict[str, Any]) -> dict[int, str]:
    """The JSON text of each ephemeral event of `message`, encoded by its first viewer and
    kept in the message itself, which the feed hands every viewer of its run in this
    process: the texts last exactly as long as a viewer still has the message to send.
    A process-wide cache of the last 512 events was no use to the viewers that fall a few
    thousand test events behind on a busy run, and encoding again per viewer kept them
    there (a fifth of the event loop with 50 viewers)."""
    texts = message.get(ENCODED)
    if texts is None:
        texts = message[ENCODED] = {id(event): json.dumps(event)
                                    for event in _events_of(message) if event.get("seq") is None}
    return texts


def _drawn_live_event(event: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """A durable live event as sent to the page, drawn and encoded once for every viewer
    of the run in this process (they all receive the same event)."""
    key = (int(event["run_id"]), int(event["seq"]))
    kept = _drawn_events.get(key)
    # Compared, not trusted: far cheaper than drawing, and safe whatever reuses a number.
    if kept is None or (kept[0] is not event and kept[0] != event):
        drawn = with_log_html(event)
        kept = _drawn_events[key] = (event, drawn, json.dumps(drawn))
        while len(_drawn_events) > DRAWN_EVENTS_KEPT:
            _drawn_events.popitem(last=False)
    return kept[1], kept[2]


CaughtUp = tuple[int, list[dict[str, Any]] | None]
"""A catch-up as read: the run's last number before the read, and its durable events after
the number asked for, drawn (None when more than CATCH_UP_LIMIT)."""


def _drawn_events_after(run_id: int, after: int) -> CaughtUp:
    # Drawn here, on a thread, not on the socket's event loop: a catch-up may hold
    # thousands of entries.
    run = Run.objects.get(pk=run_id)
    latest = run_event_seq(run_id=run_id)
    events = run_events_after(run=run, after=after, limit=CATCH_UP_LIMIT)
    return latest, None if events is None else [with_log_html(event) for event in events]


def _visible_run(user: Any, run_id: int) -> Run:
    return get_run_for_user(user=user, run_id=run_id)
