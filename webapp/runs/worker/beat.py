"""Celery beat's scheduler, which runs the sweeper itself (`CELERY_BEAT_SCHEDULER`).

Why in beat and not as a task on a queue: the sweeper is what recovers work when workers
are dead, stuck or busy, so it must not depend on a worker being free. Sent to `default`
(served by the same pool as `eval-python`), each sweep waited behind chunks that take
minutes, expired after `SWEEP_SECONDS` and was thrown away; recovery took minutes instead
of a lease plus a sweep. A queue of its own would need a process that always serves it,
one more thing to deploy and to forget. Beat is already exactly one process everywhere
(`bin/serve`, compose, the documented commands), wakes on time, and needs no broker to
look at the database: a pass runs even while Redis restarts, and sends what it must once
the broker is back. A pass is a few indexed queries (`recovery.runs_sweep`), so it does
not hold up the schedule.

Every other entry is sent to the broker as usual.
"""

from __future__ import annotations

import logging
from typing import Any

from celery.beat import PersistentScheduler, ScheduleEntry
from django.conf import settings
from django.db import close_old_connections

from webapp.runs.messaging.dispatch import SWEEP
from webapp.runs.worker.transient import db_retry

logger = logging.getLogger(__name__)

IN_PROCESS = frozenset({SWEEP})
"""The tasks this scheduler runs in its own process instead of sending them."""


class SweepingScheduler(PersistentScheduler):
    """Celery's file-backed scheduler, except that the entries of `IN_PROCESS` are run
    here, at their time, by calling the registered task in this process."""

    def apply_async(self, entry: ScheduleEntry, producer: Any = None, advance: bool = True,
                    **kwargs: Any) -> Any:
        if entry.task is None or entry.task not in IN_PROCESS:
            return super().apply_async(entry, producer=producer, advance=advance, **kwargs)
        if advance:
            self.reserve(entry)
        task = self.app.tasks[entry.task]
        # Outside a worker nobody closes Django's connections around a task: a connection
        # the database dropped would fail every pass after it.
        close_old_connections()
        try:
            db_retry(lambda: task(*(entry.args or ()), **(entry.kwargs or {})),
                     what="sweeping", seconds=float(settings.SWEEP_SECONDS))
        except Exception:
            # The next pass tries again; beat itself must go on.
            logger.exception("the sweep failed")
        finally:
            close_old_connections()
        return None
