"""The one emitter of live run events, the group name they go to, and the record of durable
events that a reconnecting viewer catches up from."""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
import threading
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

from asgiref.sync import async_to_sync
from celery.signals import worker_process_init
from channels.layers import get_channel_layer
from django.db import transaction
from django.db.models import F

from webapp.runs.domain.events import DurableEvent, RunEvent, RunFinishedEvent
from webapp.runs.models import Run
from webapp.runs.models import RunEvent as StoredRunEvent
from webapp.runs.reads.selectors import run_counts_and_status, run_pass_at_k

logger = logging.getLogger(__name__)

MESSAGE_TYPE = "run.event"
"""The channel-layer message type; the consumer's `run_event` handler receives it. Its
`events` are one or more events of the run, in the order they were emitted."""

Event = TypeVar("Event", bound=DurableEvent)


def run_group(run_id: int) -> str:
    return f"run-{run_id}"


SEND_SECONDS = 30.0
"""The longest an event may take to reach the channel layer before it is given up (and
logged): the layer's own connect timeout is shorter."""


HOLD_SECONDS = 0.1
"""How long a worker holds an ephemeral event (a sample started, a test reported) so that
it travels with those that follow. Each group message cost Redis two commands even with
nobody watching (channels_redis looks up the group's members first), and a sample sent
one message per event: about 24 commands a sample. Held, a fast sample's started, tests
and finished go as one message; a slow one's tests still show within this delay."""
HOLD_MAX = 200
"""More ephemeral events held for a run than this: they go at once."""


@dataclass
class _Batch:
    """Events of one group, in order, for one group message; `sent` is set once it left,
    for a caller that waits (a durable event's)."""

    group: str
    events: list[RunEvent]
    sent: concurrent.futures.Future[None] | None = None


class _EventLoop:
    """One event loop in a thread of its own, through which a process sends all its events.

    `async_to_sync` in a plain thread runs each call in a new event loop, and the Redis
    channel layer keeps its connections per event loop: every event opened a connection
    of its own (HELLO, SELECT, PING, then the send), about a dozen a sample in a worker.
    One loop keeps one pool. One sender on it sends the batches in the order they were
    made, so events reach the group in the order they were emitted.

    Ephemeral events are held (`HOLD_SECONDS`) and go with the next event of their run; a
    durable event goes at once, with those held before it, and its caller waits until it
    left. Batches that wait for the sender together, for one group, go as one message.
    """

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.loop = asyncio.new_event_loop()
        # Touched on the loop's thread only.
        self.held: dict[str, list[RunEvent]] = {}
        self.timers: dict[str, asyncio.TimerHandle] = {}
        self.outgoing: deque[_Batch] = deque()
        self.sender: asyncio.Task[None] | None = None
        threading.Thread(target=self.loop.run_forever, name="run-events", daemon=True).start()

    def hold(self, group: str, event: RunEvent) -> None:
        """Queue an ephemeral event; returns at once."""
        self.loop.call_soon_threadsafe(self._hold, group, event)

    def send_many(self, group: str, events: list[RunEvent]) -> None:
        """Send `events` of one group in one hand-off to the loop: held, as `hold` does,
        when none is durable; otherwise sent at once, with what is held before them, and
        this returns once they left."""
        if not any("seq" in event for event in events):
            self.loop.call_soon_threadsafe(self._hold_many, group, events)
            return
        sent: concurrent.futures.Future[None] = concurrent.futures.Future()
        self.loop.call_soon_threadsafe(self._release, group, events, sent)
        sent.result(timeout=SEND_SECONDS)

    def _hold(self, group: str, event: RunEvent) -> None:
        self._hold_many(group, [event])

    def _hold_many(self, group: str, events: list[RunEvent]) -> None:
        held = self.held.setdefault(group, [])
        held.extend(events)
        if len(held) > HOLD_MAX:
            self._release(group, [], None)
        elif group not in self.timers:
            self.timers[group] = self.loop.call_later(
                HOLD_SECONDS, self._release, group, [], None)

    def _release(self, group: str, more: list[RunEvent],
                 sent: concurrent.futures.Future[None] | None) -> None:
        timer = self.timers.pop(group, None)
        if timer is not None:
            timer.cancel()
        events = self.held.pop(group, [])
        events.extend(more)
        if not events:
            if sent is not None:
                sent.set_result(None)
            return
        self.outgoing.append(_Batch(group, events, sent))
        if self.sender is None or self.sender.done():
            self.sender = self.loop.create_task(self._send_waiting())

    async def _send_waiting(self) -> None:
        while self.outgoing:
            group = self.outgoing[0].group
            batches: list[_Batch] = []
            while self.outgoing and self.outgoing[0].group == group:
                batches.append(self.outgoing.popleft())
            events = [event for batch in batches for event in batch.events]
            failure: BaseException | None = None
            try:
                await _layer_send(group, events)
            except Exception as exc:
                failure = exc
                if all(batch.sent is None for batch in batches):
                    logger.warning("could not emit %d live events to %s: %s",
                                   len(events), group, exc)
            for batch in batches:
                if batch.sent is not None and not batch.sent.done():
                    if failure is None:
                        batch.sent.set_result(None)
                    else:
                        batch.sent.set_exception(failure)


_own_loop: _EventLoop | None = None


@worker_process_init.connect
def use_own_event_loop(**_: Any) -> None:
    """In each Celery worker process (after the fork: a thread does not survive one), send
    events through a loop of the process's own. Web processes keep `async_to_sync`, which
    inside the server runs on the server's loop."""
    global _own_loop
    _own_loop = _EventLoop()


async def _layer_send(group: str, events: list[RunEvent]) -> None:
    layer = get_channel_layer()
    if layer is not None:
        await layer.group_send(group, {"type": MESSAGE_TYPE, "events": events})


_together = threading.local()


@contextmanager
def emitted_together() -> Iterator[None]:
    """Events that this thread emits inside the block go out at its end, in the order they
    were emitted, with one hand-off to the sender for each run: a worker that records many
    results at once (`execution`) wakes the sender thread once for them, not once an event,
    and waits once for its durable ones to leave. Nested blocks send at the outer one's end."""
    if getattr(_together, "events", None) is not None:
        yield
        return
    _together.events = []
    try:
        yield
    finally:
        events: list[RunEvent] = _together.events
        _together.events = None
        by_run: dict[int, list[RunEvent]] = {}
        for event in events:
            by_run.setdefault(event["run_id"], []).append(event)
        for run_events in by_run.values():
            _emit(run_events)


def emit_run_event(event: RunEvent) -> None:
    """Send `event` to every websocket watching its run (at the end of the enclosing
    `emitted_together` block, when there is one).

    Live events are a convenience on top of the database, which stays the record: a durable
    event that the layer drops is sent again from the database by the consumer, so a layer
    failure is logged, not raised into the evaluation that produced the event.
    """
    waiting: list[RunEvent] | None = getattr(_together, "events", None)
    if waiting is not None:
        waiting.append(event)
    else:
        _emit([event])


def _emit(events: list[RunEvent]) -> None:
    """Send events of one run, in order."""
    first = events[0]
    group = run_group(first["run_id"])
    try:
        if _own_loop is None or _own_loop.pid != os.getpid():
            # A message an event, as they come: no sender here to combine them.
            for event in events:
                async_to_sync(_layer_send)(group, [event])
        elif len(events) == 1 and "seq" not in first:
            _own_loop.hold(group, first)
        else:
            _own_loop.send_many(group, events)
    except Exception as exc:
        # No traceback: while Redis restarts every event would log one.
        kinds = ", ".join(dict.fromkeys(event["type"] for event in events))
        logger.warning("could not emit %s for run %s: %s", kinds, first["run_id"], exc)


def next_event_seq(*, run_id: int, **counters: Any) -> int:
    """Draw the run's next event number, together with any counter updates, inside the
    caller's transaction; the run's row stays locked until it commits, so numbers follow
    commit order and have no gaps."""
    Run.objects.filter(pk=run_id).update(event_seq=F("event_seq") + 1, **counters)
    seq: int = Run.objects.filter(pk=run_id).values_list("event_seq", flat=True).get()
    return seq


def run_event_record(*, run_id: int, make: Callable[[int], Event]) -> Event:
    """Store a run-level durable event under the run's next number and send it once the
    transaction commits (at once when there is no transaction)."""
    with transaction.atomic():
        event = make(next_event_seq(run_id=run_id))
        StoredRunEvent.objects.create(run_id=run_id, seq=event["seq"], type=event["type"],
                                      payload=event)
        transaction.on_commit(lambda: emit_run_event(event))
    return event


def run_finished_record(*, run_id: int) -> RunFinishedEvent:
    """The run's final event (finished, failed or cancelled), with its scores."""
    def make(seq: int) -> RunFinishedEvent:
        run = Run.objects.get(pk=run_id)
        status, progress = run_counts_and_status(run_id=run_id)
        return RunFinishedEvent(type="run_finished", run_id=run_id, seq=seq, status=status,
                                error=run.error, progress=progress,
                                pass_at_k=run_pass_at_k(run=run))

    return run_event_record(run_id=run_id, make=make)
