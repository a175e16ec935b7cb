"""Celery tasks: each takes ids, calls one service, and is safe to run twice."""

from __future__ import annotations

from typing import Any

from celery import Task, shared_task
from celery.signals import task_prerun, worker_process_shutdown
from django.db import transaction

from evaluator.language_check import close_sandboxed_parsers
from webapp.runs.messaging.dispatch import (
    CHECK_LANGUAGE,
    COMPARE_PROFILES,
    EVALUATE_CHUNK,
    EVALUATE_RUN,
    FINALIZE_RUN,
    SWEEP,
    send_finalize,
)
from webapp.runs.services.lifecycle import deleted_runs_purge
from webapp.runs.services.writes import staged_runs_purge
from webapp.runs.upload_checks.language_checks import language_check_part_run
from webapp.runs.worker.aggregation import run_finalize
from webapp.runs.worker.engines import engines_close
from webapp.runs.worker.execution import WORKER_NAME, chunk_evaluate, run_fan_out
from webapp.runs.worker.jobs import CHUNK_TASK_LIMITS
from webapp.runs.worker.profile_comparison import profile_comparison_run
from webapp.runs.worker.recovery import runs_sweep
from webapp.runs.worker.transient import drop_stale_connections


@shared_task(name=EVALUATE_RUN, acks_late=True, soft_time_limit=60, time_limit=90)
def evaluate_run(run_id: int) -> None:
    """Fan a run out into one task per chunk."""
    run_fan_out(run_id=run_id)


@shared_task(name=EVALUATE_CHUNK, bind=True, acks_late=True, max_retries=None,
             **CHUNK_TASK_LIMITS)
def evaluate_chunk(self: Task[[int], str], chunk_id: int) -> str:
    outcome = chunk_evaluate(chunk_id=chunk_id, worker=self.request.hostname or WORKER_NAME)
    if outcome.state == "retry":
        # The database went away mid-chunk; the chunk was given back. Try again after a
        # pause (the sweeper would also send it again, should this message be lost).
        raise self.retry(countdown=outcome.retry_in)
    if outcome.finalize:
        run_id = outcome.run_id
        transaction.on_commit(lambda: send_finalize(run_id=run_id))
    return outcome.state


@shared_task(name=FINALIZE_RUN, acks_late=True, soft_time_limit=600, time_limit=660)
def finalize_run(run_id: int) -> None:
    run_finalize(run_id=run_id)


@shared_task(name=COMPARE_PROFILES, acks_late=True, **CHUNK_TASK_LIMITS)
def compare_profiles(comparison_id: int) -> str:
    """Re-score a finished run under every harness profile."""
    return profile_comparison_run(comparison_id=comparison_id)


@shared_task(name=CHECK_LANGUAGE, bind=True, acks_late=False, soft_time_limit=300,
             time_limit=330)
def check_language_part(self: Task[[int], bool], part_id: int) -> bool:
    """Parse one language's share of an upload's language check in this worker's sandbox.
    Not acknowledged late: a request waits for it only so long, and then gives up."""
    return language_check_part_run(part_id=part_id, worker=self.request.hostname or "")


@shared_task(name=SWEEP, acks_late=False, soft_time_limit=60, time_limit=90)
def sweep() -> None:
    """Send again whatever work was lost, and purge runs deleted long enough ago and
    uploads never confirmed. Beat runs it in its own process (`webapp.runs.worker.beat`), on
    `CELERY_BEAT_SCHEDULE`; sent to a worker, as by hand, it does the same."""
    runs_sweep()
    deleted_runs_purge()
    staged_runs_purge()


@worker_process_shutdown.connect
def _close_engines(**_kwargs: Any) -> None:
    # A pool process exits through os._exit, which skips atexit: close its engines here.
    engines_close()
    close_sandboxed_parsers()


@task_prerun.connect
def _check_connections(task: Task[..., Any] | None = None, **_kwargs: Any) -> None:
    # Connections are kept from task to task (`CELERY_DB_REUSE_MAX`); one that is broken
    # (the server restarted) or too old is closed here, and the task opens a new one.
    if task is not None and not getattr(task.request, "is_eager", False):
        drop_stale_connections()
