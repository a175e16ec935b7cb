"""The one emitter of live run events, and the group name they go to."""

from __future__ import annotations

import logging

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

from webapp.runs.events import RunEvent

logger = logging.getLogger(__name__)

MESSAGE_TYPE = "run.event"
"""The channel-layer message type; the consumer's `run_event` handler receives it."""


def run_group(run_id: int) -> str:
    return f"run-{run_id}"


def emit_run_event(event: RunEvent) -> None:
    """Send `event` to every websocket watching its run.

    Live events are a convenience on top of the database, which stays the record: a page
    that misses one catches up on reconnect, so a layer failure is logged, not raised into
    the evaluation that produced the event.
    """
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        async_to_sync(layer.group_send)(
            run_group(event["run_id"]), {"type": MESSAGE_TYPE, "event": event}
        )
    except Exception:
        logger.exception("could not emit %s for run %s", event["type"], event["run_id"])
