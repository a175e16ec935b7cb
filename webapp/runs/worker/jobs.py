"""Background jobs that a person asks for about a finished run (a harness-profile
comparison, the patched verdicts of the defect registry), each one row held by a heartbeat
lease while one worker computes it.

The row has `status` (queued, running, done, failed), `claim`, `lease_until`, `started_at`,
`finished_at` and `error`. A delivery claims it atomically: a queued row, or a running one
whose holder stopped renewing its lease. Only the holder of the current claim may write
the outcome, so a second delivery, or a late one, changes nothing.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable
from typing import Any, TypedDict

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db.models import Q, QuerySet
from django.utils import timezone

from evaluator.records import cap_text
from webapp.runs.worker.execution import storable
from webapp.runs.worker.leases import Heartbeat, lease_end
from webapp.runs.worker.transient import drop_stale_connections

logger = logging.getLogger(__name__)

ERROR_LENGTH = 5000


class TaskLimits(TypedDict):
    soft_time_limit: int
    time_limit: int


CHUNK_TASK_LIMITS = TaskLimits(soft_time_limit=settings.CHUNK_TIME_LIMIT,
                               time_limit=settings.CHUNK_TIME_LIMIT + 30)
"""The time limits of a task that may work as long as a chunk (a chunk, a job): the soft
limit raises inside the task (`job_run` stores why), the hard one ends the worker process
30 s later."""


def job_claim(job: QuerySet[Any], **reset: Any) -> str | None:
    """Claim the job `job` selects (one row, by pk): its new claim token, or None when it
    is finished, failed, or held under a lease that has not passed. `reset` are more
    fields to set on a claim (progress counters)."""
    token = uuid.uuid4().hex
    now = timezone.now()
    claimed = job.filter(Q(status="queued") | Q(status="running", lease_until__lt=now)).update(
        status="running", claim=token, lease_until=lease_end(now), started_at=now, error="",
        **reset)
    return token if claimed else None


def job_held(job: QuerySet[Any], claim: str) -> QuerySet[Any]:
    """The job, only while `claim` still holds it: an update through it is a no-op for a
    delivery whose lease was taken over."""
    return job.filter(claim=claim, status="running")


def job_run(*, name: str, job: QuerySet[Any], claim: str,
            compute: Callable[[threading.Event], bool]) -> str:
    """Run `compute` on a claimed job with its lease renewed by a heartbeat: "done" when it
    stored the outcome, "lost" when the lease was taken over (or it returned False),
    "failed" when it raised (the reason is stored on the job). `compute` gets an event
    that is set when the lease is lost, and should stop then."""
    stop = threading.Event()

    def renew() -> bool:
        return bool(job_held(job, claim).update(lease_until=lease_end()))

    try:
        with Heartbeat(name=name, renew=renew, stop=stop):
            stored = compute(stop)
    except Exception as exc:
        logger.exception("the job %s failed", name)
        drop_stale_connections()
        if isinstance(exc, SoftTimeLimitExceeded):
            reason = ("It took longer than the task's time limit "
                      f"({settings.CHUNK_TIME_LIMIT} s, WORKBENCH_CHUNK_TIME_LIMIT).")
        else:
            reason = f"{type(exc).__name__}: {exc}"
        failed = job_held(job, claim).update(
            status="failed", error=storable(cap_text(reason, ERROR_LENGTH)),
            finished_at=timezone.now(), lease_until=None)
        return "failed" if failed else "lost"
    return "done" if stored else "lost"
