"""Sending a run's work to the broker, and asking the broker what is waiting.

Tasks are sent by name through the Celery app, so that services, execution and the
sweeper can send work without importing the task module (which imports them). Each send
stamps `dispatched_at`: the sweeper re-sends work that was sent long ago and never claimed,
which is how a message the broker lost is noticed.
"""

from __future__ import annotations

import logging

from celery import current_app
from django.utils import timezone
from kombu.exceptions import OperationalError as BrokerError

from webapp.runs.models import Chunk, ProfileComparison, Run

logger = logging.getLogger(__name__)

EVALUATE_RUN = "runs.evaluate_run"
EVALUATE_CHUNK = "runs.evaluate_chunk"
FINALIZE_RUN = "runs.finalize_run"
SWEEP = "runs.sweep"
COMPARE_PROFILES = "runs.compare_profiles"
DEFAULT_QUEUE = "default"


def language_queue(language: str) -> str:
    """Each language has its queue, so a worker serves only languages it has toolchains for."""
    return f"eval-{language}"


def _send(name: str, args: tuple[int, ...], *, queue: str) -> bool:
    """Send a task; False, logged, when the broker cannot be reached (the sweeper sends it
    again later: the database still says the work is to be done)."""
    try:
        current_app.tasks[name].apply_async(
            args, queue=queue,
            retry=True, retry_policy={"max_retries": 2, "interval_start": 0.2,
                                      "interval_step": 0.5, "interval_max": 1.0},
        )
    except (BrokerError, ConnectionError, OSError) as exc:
        logger.warning("could not send %s%s to the broker: %s", name, args, exc)
        return False
    return True


def send_run_start(*, run_id: int) -> bool:
    Run.objects.filter(pk=run_id).update(dispatched_at=timezone.now())
    return _send(EVALUATE_RUN, (run_id,), queue=DEFAULT_QUEUE)


def send_finalize(*, run_id: int) -> bool:
    Run.objects.filter(pk=run_id).update(dispatched_at=timezone.now())
    return _send(FINALIZE_RUN, (run_id,), queue=DEFAULT_QUEUE)


def send_profile_comparison(*, comparison_id: int, language: str) -> bool:
    """To the language's queue: re-scoring runs again the samples whose program a profile
    changes, so it needs that language's toolchain."""
    ProfileComparison.objects.filter(pk=comparison_id).update(dispatched_at=timezone.now())
    return _send(COMPARE_PROFILES, (comparison_id,), queue=language_queue(language))


def send_chunks(chunks: list[tuple[int, str]]) -> int:
    """Send `(chunk id, language)` pairs; the number sent."""
    if not chunks:
        return 0
    Chunk.objects.filter(pk__in=[chunk_id for chunk_id, _ in chunks]).update(
        dispatched_at=timezone.now()
    )
    return sum(
        _send(EVALUATE_CHUNK, (chunk_id,), queue=language_queue(language))
        for chunk_id, language in chunks
    )


def queue_waiting(queue: str) -> int | None:
    """How many messages wait in `queue`, or None when the broker cannot tell right now."""
    try:
        with current_app.connection_for_read() as connection:
            connection.ensure_connection(max_retries=1, timeout=5)
            channel = connection.default_channel
            try:
                # kombu-stubs give the default channel as the StdChannel base, which lacks
                # the queue_declare that every transport's channel has.
                declared = channel.queue_declare(  # type: ignore[attr-defined]
                    queue=queue, passive=True)
            except Exception:
                # A queue that was never declared, or was lost with the broker's memory,
                # holds nothing.
                return 0
            return int(declared.message_count)
    except Exception as exc:
        logger.warning("could not ask the broker about %s: %s", queue, exc)
        return None
