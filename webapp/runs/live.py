"""The one emitter of live run events, the group name they go to, and the record of durable
events that a reconnecting viewer catches up from."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, TypeVar

from asgiref.sync import async_to_sync
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


def emit_run_event(event: RunEvent) -> None:
    """Send `event` to every websocket watching its run.

    Live events are a convenience on top of the database, which stays the record: a durable
    event that the layer drops is sent again from the database by the consumer, so a layer
    failure is logged, not raised into the evaluation that produced the event.
    """
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        async_to_sync(layer.group_send)(
            run_group(event["run_id"]), {"type": MESSAGE_TYPE, "event": event}
        )
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
