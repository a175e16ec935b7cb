"""Riding out transient database errors: a dropped connection, a restarted server.

A worker that loses its database connection in the middle of a run must not turn the run
into `failed`: the write is tried again on a new connection, with backoff. Every write a
worker makes is idempotent (a sample's result is stored only while it is pending), so a
write that was committed just before the connection dropped is harmless to repeat.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TypeVar

from django.db import InterfaceError, OperationalError, close_old_connections, connection

logger = logging.getLogger(__name__)

TRANSIENT_DB_ERRORS: tuple[type[Exception], ...] = (OperationalError, InterfaceError)
DB_RETRY_SECONDS = 120.0
"""How long one write keeps trying before its caller is told (and gives the work back)."""
FIRST_DELAY = 0.2
MAX_DELAY = 5.0

T = TypeVar("T")


def drop_stale_connections() -> None:
    """`close_old_connections()`, but never inside a transaction: a task run eagerly inside
    its caller's transaction (`CELERY_TASK_ALWAYS_EAGER`, a test's) would close the
    connection under it, and the caller's next query would fail."""
    if not connection.in_atomic_block:
        close_old_connections()


def db_retry(func: Callable[[], T], *, what: str, seconds: float = DB_RETRY_SECONDS) -> T:
    """`func()`, tried again on a fresh connection after a transient database error.

    Must be called outside any transaction: only a whole transaction can be repeated.
    """
    deadline = time.monotonic() + seconds
    delay = FIRST_DELAY
    while True:
        try:
            return func()
        except TRANSIENT_DB_ERRORS as exc:
            if connection.in_atomic_block or time.monotonic() + delay > deadline:
                raise
            logger.warning("database error while %s, trying again in %.1f s: %s",
                           what, delay, str(exc).strip().splitlines()[0] if str(exc) else exc)
            connection.close()
            time.sleep(delay)
            delay = min(delay * 2, MAX_DELAY)
