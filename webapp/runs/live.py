"""The one emitter of live run events, the group name they go to, and the record of durable
events that a reconnecting viewer catches up from."""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from asgiref.sync import async_to_sync
from celery.signals import worker_process_init
from channels.layers import get_channel_layer
from django.db import transaction
from django.db.models import F

from webapp.runs.events import DurableEvent, RunEvent, RunFinishedEvent
from webapp.runs.models import Run
from webapp.runs.models import RunEvent as StoredRunEvent
from webapp.runs.selectors import run_counts_and_status, run_pass_at_k

logger = logging.getLogger(__name__)

MESSAGE_TYPE = "run.event"
"""The channel-layer message type; the consumer's `run_event` handler receives it."""

Event = TypeVar("Event", bound=DurableEvent)


def run_group(run_id: int) -> str:
    return f"run-{run_id}"


SEND_SECONDS = 30.0
"""The longest an event may take to reach the channel layer before it is given up (and
logged): the layer's own connect timeout is shorter."""


class _EventLoop:
    """One event loop in a thread of its own, through which a process sends all its events.

    `async_to_sync` in a plain thread runs each call in a new event loop, and the Redis
    channel layer keeps its connections per event loop: every event opened a connection
    of its own (HELLO, SELECT, PING, then the send), about a dozen a sample in a worker.
    One loop keeps one pool, and sending in turn keeps the events in order."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, name="run-events", daemon=True).start()

    def run(self, coroutine: Coroutine[Any, Any, None]) -> None:
        future = asyncio.run_coroutine_threadsafe(coroutine, self.loop)
        try:
            future.result(timeout=SEND_SECONDS)
        except BaseException:
            future.cancel()
            raise


_own_loop: _EventLoop | None = None


@worker_process_init.connect
def use_own_event_loop(**_: Any) -> None:
    """In each Celery worker process (after the fork: a thread does not survive one), send
    events through a loop of the process's own. Web processes keep `async_to_sync`, which
    inside the server runs on the server's loop."""
    global _own_loop
    _own_loop = _EventLoop()


def _group_send(group: str, message: dict[str, Any]) -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    if _own_loop is not None and _own_loop.pid == os.getpid():
        _own_loop.run(layer.group_send(group, message))
    else:
        async_to_sync(layer.group_send)(group, message)


def emit_run_event(event: RunEvent) -> None:
    """Send `event` to every websocket watching its run.

    Live events are a convenience on top of the database, which stays the record: a durable
    event that the layer drops is sent again from the database by the consumer, so a layer
    failure is logged, not raised into the evaluation that produced the event.
    """
    try:
        _group_send(run_group(event["run_id"]), {"type": MESSAGE_TYPE, "event": event})
    except Exception as exc:
        # No traceback: while Redis restarts every event would log one.
        logger.warning("could not emit %s for run %s: %s", event["type"], event["run_id"], exc)


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
