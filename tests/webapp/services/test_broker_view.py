"""What the sweeper asks of a real Redis broker before it sends work again: a message
waiting in its queue, or reserved by a worker (prefetched, not yet acknowledged) a moment
ago, is not lost; one reserved more than a lease ago, whose work nobody claimed, belongs to
a worker that died."""

from __future__ import annotations

import time

import pytest
import redis
from celery import Celery
from kombu import Queue

from webapp.runs.messaging import dispatch
from webapp.runs.messaging.dispatch import (
    EVALUATE_CHUNK,
    FINALIZE_RUN,
    FIRST_SENDING,
    SENT_AGAIN,
    queued_work,
)

pytestmark = pytest.mark.services

LEASE = 30.0


def test_waiting_and_freshly_reserved_messages_count_and_stale_reservations_do_not(
    redis_url, monkeypatch
):
    app = Celery("broker-view", broker=redis_url, set_as_current=False)
    monkeypatch.setattr(dispatch, "current_app", app)
    for chunk_id in (1, 2, 3):
        app.send_task(EVALUATE_CHUNK, (chunk_id,), queue="eval-python")
    app.send_task(FINALIZE_RUN, (9,), queue="default")
    app.send_task(EVALUATE_CHUNK, (99,), queue="eval-cpp")

    with app.connection_for_read() as connection:
        python = Queue("eval-python", routing_key="eval-python")(connection.default_channel)
        # A worker reserves two without acknowledging them: they leave the list for
        # Redis's `unacked` hash.
        first, second = python.get(no_ack=False), python.get(no_ack=False)
        assert first is not None
        assert second is not None
        assert redis.Redis.from_url(redis_url).llen("eval-python") == 1

        work = queued_work({"eval-python", "default"}, reserved_within=LEASE)
        assert work is not None
        assert work.messages == {(EVALUATE_CHUNK, 1), (EVALUATE_CHUNK, 2),
                                 (EVALUATE_CHUNK, 3), (FINALIZE_RUN, 9)}
        assert not work.holds(EVALUATE_CHUNK, 99, queue="eval-cpp"), "not asked about"

        # The first reservation is a lease old: its worker never claimed the chunk, so it
        # is dead, and Redis would hand the message out again only after an hour.
        redis.Redis.from_url(redis_url).zadd(
            "unacked_index", {str(first.delivery_tag): time.time() - LEASE - 1})
        aged = queued_work({"eval-python"}, reserved_within=LEASE)
        assert aged is not None
        (dead,), _kwargs, _embed = first.decode()
        assert aged.messages == {(EVALUATE_CHUNK, chunk_id) for chunk_id in (1, 2, 3)
                                 if chunk_id != dead}

        second.ack()
        first.ack()
        python.purge()


def test_a_chunk_sent_again_is_taken_before_those_never_started(redis_url, monkeypatch):
    app = Celery("broker-order", broker=redis_url, set_as_current=False)
    monkeypatch.setattr(dispatch, "current_app", app)
    for chunk_id in (1, 2):
        app.send_task(EVALUATE_CHUNK, (chunk_id,), queue="eval-python", priority=FIRST_SENDING)
    app.send_task(EVALUATE_CHUNK, (3,), queue="eval-python", priority=SENT_AGAIN)
    work = queued_work({"eval-python"}, reserved_within=LEASE)
    assert work is not None
    assert work.messages == {(EVALUATE_CHUNK, 1), (EVALUATE_CHUNK, 2), (EVALUATE_CHUNK, 3)}
    with app.connection_for_read() as connection:
        python = Queue("eval-python", routing_key="eval-python")(connection.default_channel)
        taken = [python.get(no_ack=True) for _ in range(3)]
    assert [message.decode()[0][0] for message in taken if message is not None] == [3, 1, 2]
