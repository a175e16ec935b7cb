"""A worker's language queues, and asking a worker to start or stop consuming one.

The worker is asked through Celery's remote control, addressed to its node name, so that
any process can ask: the worker's own canary loop, a task in its pool, or `manage.py
canary`. The worker's consumer carries the change out in its own thread, and keeps it
across reconnections to the broker.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from celery import current_app

from evaluator.languages.registry import canonical_name

logger = logging.getLogger(__name__)

QUEUE_PREFIX = "eval-"
CONTROL_TIMEOUT = 10.0
"""Seconds to wait for the worker's answer to a control message."""


def language_queue(language: str) -> str:
    """The queue of a language's work; the same name as `webapp.runs.messaging.dispatch` sends to
    (this app sits below runs, so it cannot import it; a test keeps the two equal)."""
    return f"{QUEUE_PREFIX}{language}"


def queue_language(queue: str) -> str | None:
    """The language whose work `queue` holds, or None for any other queue."""
    if not queue.startswith(QUEUE_PREFIX):
        return None
    return canonical_name(queue.removeprefix(QUEUE_PREFIX))


def served_languages(queues: Iterable[str]) -> list[str]:
    """The languages among `queues`, in their order."""
    found = (queue_language(queue) for queue in queues)
    return list(dict.fromkeys(language for language in found if language is not None))


def queue_consume(*, worker: str, queue: str) -> bool:
    """Ask `worker` to consume `queue`; False when it did not answer."""
    return _answered(worker, current_app.control.add_consumer(
        queue, destination=[worker], reply=True, timeout=CONTROL_TIMEOUT))


def queue_release(*, worker: str, queue: str) -> bool:
    """Ask `worker` to stop consuming `queue`, leaving its messages to other workers; False
    when it did not answer."""
    return _answered(worker, current_app.control.cancel_consumer(
        queue, destination=[worker], reply=True, timeout=CONTROL_TIMEOUT))


def _answered(worker: str, replies: list[dict[str, object]] | None) -> bool:
    answered = any(worker in reply for reply in replies or ())
    if not answered:
        logger.warning("worker %s did not answer a control message", worker)
    return answered
