"""Heartbeat leases: how a worker holds a chunk, or a run it is scoring.

The holder renews its lease every sixth of `LEASE_SECONDS`. A worker that dies (killed,
out of memory, its machine gone) stops renewing, and once the lease has passed the sweeper
takes the work back and sends it again: recovery takes seconds, not the length of a task's
time limit. A holder that finds its lease taken over stops, so two workers never go on with
the same chunk for long; if they briefly do, every write is idempotent.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import datetime, timedelta

from django.conf import settings
from django.db import DatabaseError, connection
from django.utils import timezone

logger = logging.getLogger(__name__)

CHECK_SECONDS = 1.0
"""How often the holder looks at the run (a cancel is noticed within this)."""


def lease_seconds() -> float:
    return float(settings.LEASE_SECONDS)


def lease_end(now: datetime | None = None) -> datetime:
    return (now or timezone.now()) + timedelta(seconds=lease_seconds())


class Heartbeat(threading.Thread):
    """Renews a lease while work goes on in another thread, and sets `stop` when the work
    must end: the lease was taken over (`lost`), or `should_stop` answered True.

    `renew` returns False when the lease is no longer ours. Database errors are ridden out
    (the connection is reopened), until a whole lease has passed without a renewal: by
    then the sweeper may have given the work to another worker.
    """

    def __init__(self, *, name: str, renew: Callable[[], bool], stop: threading.Event,
                 should_stop: Callable[[], bool] | None = None) -> None:
        super().__init__(daemon=True, name=name)
        self.renew = renew
        self.should_stop = should_stop
        self.stop = stop
        self.lost = False
        self.finished = threading.Event()

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
            connection.close()

    def __enter__(self) -> Heartbeat:
        self.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.finished.set()
        self.join(timeout=10)
