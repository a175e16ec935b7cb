"""Heartbeat leases: how a worker holds a chunk, or a run it is scoring.

The holder renews its lease every sixth of `LEASE_SECONDS`. A worker that dies (killed,
out of memory, its machine gone) stops renewing, and once the lease has passed the sweeper
takes the work back and sends it again: recovery takes seconds, not the length of a task's
time limit. A holder that finds its lease taken over stops, so two workers never go on with
the same chunk for long; if they briefly do, every write is idempotent.

Leases are renewed on threads kept for the process's life (`_Keeper`), each with its own
database connection: a worker that keeps connections (`CONN_MAX_AGE`, PostgreSQL's
default) opens none per chunk.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
from collections.abc import Callable
from datetime import datetime, timedelta

from django.conf import settings
from django.db import DatabaseError, close_old_connections, connection
from django.utils import timezone

logger = logging.getLogger(__name__)

CHECK_SECONDS = 1.0
"""How often the holder looks at the run (a cancel is noticed within this)."""


def lease_seconds() -> float:
    return float(settings.LEASE_SECONDS)


def lease_end(now: datetime | None = None) -> datetime:
    return (now or timezone.now()) + timedelta(seconds=lease_seconds())


class _Keeper(threading.Thread):
    """A thread that renews one lease after another, kept for the process's life: its
    database connection outlives a lease when connections are kept (`CONN_MAX_AGE`)."""

    def __init__(self) -> None:
        super().__init__(name="lease", daemon=True)
        self.leases: queue.SimpleQueue[Heartbeat] = queue.SimpleQueue()

    def run(self) -> None:
        while True:
            heartbeat = self.leases.get()
            try:
                heartbeat.run()
            except Exception:  # the holder's stop is its own; the thread serves the next
                logger.exception("%s: renewing the lease failed", heartbeat.name)
                heartbeat.lost = True
                heartbeat.stop.set()
            finally:
                # Idle again before the holder hears that the lease ended, so the holder's
                # next lease finds this thread (and its connection) waiting.
                with _idle_lock:
                    _idle.append(self)
                heartbeat.ended.set()


_idle: list[_Keeper] = []
"""Keepers with no lease, the latest back last. Made in the process that uses them: a
forked child (a Celery pool process) starts with none, as the parent's threads did not come
along."""
_idle_lock = threading.Lock()


def _keeper() -> _Keeper:
    with _idle_lock:
        if _idle:
            return _idle.pop()
    keeper = _Keeper()
    keeper.start()
    return keeper


def _forget_keepers() -> None:
    global _idle_lock
    _idle.clear()
    _idle_lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_keepers)


class Heartbeat:
    """Renews a lease while work goes on in another thread, and sets `stop` when the work
    must end: the lease was taken over (`lost`), or `should_stop` answered True.

    `renew` returns False when the lease is no longer ours. Database errors are ridden out
    (the connection is reopened), until a whole lease has passed without a renewal: by
    then the sweeper may have given the work to another worker.
    """

    def __init__(self, *, name: str, renew: Callable[[], bool], stop: threading.Event,
                 should_stop: Callable[[], bool] | None = None) -> None:
        self.name = name
        self.renew = renew
        self.should_stop = should_stop
        self.stop = stop
        self.lost = False
        self.finished = threading.Event()
        self.ended = threading.Event()

    def run(self) -> None:
        interval = lease_seconds() / 6
        last_renewal = time.monotonic()
        next_renewal = last_renewal + interval
        try:
            while not self.finished.wait(CHECK_SECONDS if self.should_stop else interval):
                try:
                    if time.monotonic() >= next_renewal:
                        if not self.renew():
                            logger.warning("%s: the lease was taken over; stopping", self.name)
                            self.lost = True
                            self.stop.set()
                            return
                        last_renewal = time.monotonic()
                        next_renewal = last_renewal + interval
                    if self.should_stop is not None and self.should_stop():
                        self.stop.set()
                        return
                except DatabaseError as exc:
                    connection.close()
                    if time.monotonic() - last_renewal > lease_seconds():
                        logger.warning("%s: no renewal for a whole lease (%s); stopping",
                                       self.name, exc)
                        self.lost = True
                        self.stop.set()
                        return
        finally:
            # Kept for the thread's next lease, unless connections are not kept or this one
            # is broken.
            close_old_connections()

    def __enter__(self) -> Heartbeat:
        _keeper().leases.put(self)
        return self

    def __exit__(self, *_exc: object) -> None:
        self.finished.set()
        self.ended.wait(timeout=10)
