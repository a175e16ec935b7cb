"""Sending a run's work to the broker, and asking the broker what is waiting.

Tasks are sent by name through the Celery app, so that services, execution and the
sweeper can send work without importing the task module (which imports them). Each send
stamps `dispatched_at`: the sweeper re-sends work that was sent long ago, never claimed, and
of which the broker holds no message (`queued_work`): that is how a lost message is noticed.
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import time
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
CHECK_LANGUAGE = "runs.check_language_part"
DEFAULT_QUEUE = "default"
FIRST_SENDING = 3
SENT_AGAIN = 0
"""Chunk message priorities. Redis serves the lower number first, so a chunk the sweeper
sends again (taken back from a dead worker, or its message lost) is claimed at the next
free slot instead of behind every chunk queued since: it has waited its turn once. The
filesystem broker, and RabbitMQ without priority queues, ignore them."""


def language_queue(language: str) -> str:
    """Each language has its queue, so a worker serves only languages it has toolchains for."""
    return f"eval-{language}"


def _send(name: str, args: tuple[int, ...], *, queue: str, priority: int | None = None) -> bool:
    """Send a task; False, logged, when the broker cannot be reached (the sweeper sends it
    again later: the database still says the work is to be done)."""
    extra: dict[str, Any] = {} if priority is None else {"priority": priority}
    try:
        current_app.tasks[name].apply_async(
            args, queue=queue, **extra,
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


def send_language_check(*, part_id: int, language: str) -> bool:
    """To the language's queue, whose workers have its parser; first in line there (someone
    waits on the upload page), as a chunk sent again is."""
    return _send(CHECK_LANGUAGE, (part_id,), queue=language_queue(language),
                 priority=SENT_AGAIN)


def send_chunks(chunks: list[tuple[int, str]], *, again: bool = False) -> int:
    """Send `(chunk id, language)` pairs, `again` by the sweeper; the number sent. A chunk
    that could not be sent is marked never sent, so that the sweeper sends it as soon as
    the broker is back rather than a lease later."""
    if not chunks:
        return 0
    Chunk.objects.filter(pk__in=[chunk_id for chunk_id, _ in chunks]).update(
        dispatched_at=timezone.now()
    )
    priority = SENT_AGAIN if again else FIRST_SENDING
    unsent = [chunk_id for chunk_id, language in chunks
              if not _send(EVALUATE_CHUNK, (chunk_id,), queue=language_queue(language),
                           priority=priority)]
    if unsent:
        Chunk.objects.filter(pk__in=unsent, status=Chunk.Status.QUEUED).update(
            dispatched_at=None)
    return len(chunks) - len(unsent)


@dataclass(frozen=True)
class QueuedWork:
    """What the broker holds for the queues asked about: the (task name, id) of every
    message waiting in them or reserved by a live worker.

    A worker reserves a message before it runs it (prefetch, or a retry's countdown); the
    message then leaves the queue, but its work is not lost. Redis keeps a reserved
    message in its `unacked` hash with the time it was taken; one taken more than a lease
    ago whose work is still unclaimed belongs to a worker that died (Redis hands it out
    again only after its visibility timeout, an hour), so it does not count. The embedded
    filesystem broker keeps reservations in the worker's memory only: nothing to see, and
    nothing survives the worker. A broker whose messages cannot be listed (RabbitMQ) is
    `opaque` for each queue that holds any: everything counts as still there.
    """

    messages: frozenset[tuple[str, int]] = frozenset()
    opaque: frozenset[str] = frozenset()

    def holds(self, task: str, object_id: int, *, queue: str) -> bool:
        return queue in self.opaque or (task, object_id) in self.messages


def queued_work(queues: Collection[str], *, reserved_within: float) -> QueuedWork | None:
    """What waits in `queues` or was reserved less than `reserved_within` seconds ago; None
    when the broker cannot tell right now."""
    try:
        with current_app.connection_for_read() as connection:
            connection.ensure_connection(max_retries=1, timeout=5)
            channel: Any = connection.default_channel
            driver = connection.transport.driver_type
            if driver == "redis":
                return _redis_work(channel, queues, reserved_within=reserved_within)
            if driver == "filesystem":
                return _filesystem_work(channel, queues)
            return QueuedWork(opaque=frozenset(
                queue for queue in queues if _message_count(connection, queue)))
    except Exception as exc:
        logger.warning("could not ask the broker about %s: %s", ", ".join(queues), exc)
        return None


def _redis_work(channel: Any, queues: Collection[str], *, reserved_within: float) -> QueuedWork:
    # kombu's own key names: a queue is one list per priority step. The lists are read
    # before the reservations: a message taken meanwhile is then seen in one or the other.
    found: set[tuple[str, int]] = set()
    with channel.conn_or_acquire() as client:
        for queue in queues:
            for priority in channel.priority_steps:
                for raw in client.lrange(channel._q_for_pri(queue, priority), 0, -1):
                    found |= _identify(json.loads(raw))
        fresh = client.zrangebyscore(channel.unacked_index_key,
                                     time.time() - reserved_within, "+inf")
        for raw in client.hmget(channel.unacked_key, fresh) if fresh else []:
            if raw is not None:
                payload, _exchange, routing_key = json.loads(raw)
                if routing_key in queues:
                    found |= _identify(payload)
    return QueuedWork(messages=frozenset(found))


def _filesystem_work(channel: Any, queues: Collection[str]) -> QueuedWork:
    folder = Path(channel.data_folder_in)
    found: set[tuple[str, int]] = set()
    for path in folder.iterdir():
        # kombu names each message file `<time>_<uuid>.<queue>.msg`.
        if path.name.partition(".")[2].removesuffix(".msg") not in queues:
            continue
        try:
            found |= _identify(json.loads(path.read_bytes()))
        except FileNotFoundError:
            continue  # taken by a worker meanwhile
    return QueuedWork(messages=frozenset(found))


def _identify(payload: Any) -> set[tuple[str, int]]:
    """{(task name, first argument)} of one of our Celery messages (protocol 2); nothing
    for any other message."""
    try:
        task = payload["headers"]["task"]
        body = payload["body"]
        if payload["properties"].get("body_encoding") == "base64":
            body = base64.b64decode(body)
        args = json.loads(body)[0]
    except (KeyError, TypeError, ValueError, IndexError, AttributeError):
        return set()
    if isinstance(task, str) and args and isinstance(args[0], int):
        return {(task, args[0])}
    return set()


def _message_count(connection: Any, queue: str) -> int:
    # A channel each: AMQP closes the channel on which a missing queue was asked about.
    channel = connection.channel()
    try:
        return int(channel.queue_declare(queue=queue, passive=True).message_count)
    except Exception:
        # A queue that was never declared, or was lost with the broker's memory,
        # holds nothing.
        return 0
    finally:
        with contextlib.suppress(Exception):
            channel.close()
