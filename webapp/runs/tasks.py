"""Celery tasks: each takes ids, calls one service, and is safe to run twice."""

from __future__ import annotations

from typing import Any

from celery import shared_task
from celery.signals import worker_process_shutdown
from django.conf import settings
from django.db import transaction

from webapp.runs.aggregation import run_finalize
from webapp.runs.engines import engines_close
from webapp.runs.execution import chunk_evaluate
from webapp.runs.services import run_start


def language_queue(language: str) -> str:
    """Each language has its queue, so a worker serves only languages it has toolchains for."""
    return f"eval-{language}"


@shared_task(name="runs.evaluate_run", acks_late=True, soft_time_limit=60, time_limit=90)
def evaluate_run(run_id: int) -> None:
    """Fan a run out into one task per chunk."""
    for chunk_id, language in run_start(run_id=run_id):
        evaluate_chunk.apply_async((chunk_id,), queue=language_queue(language))


@shared_task(
    name="runs.evaluate_chunk",
    bind=True,
    acks_late=True,
    max_retries=None,
    soft_time_limit=settings.CHUNK_TIME_LIMIT,
    time_limit=settings.CHUNK_TIME_LIMIT + 30,
)
def evaluate_chunk(self, chunk_id: int) -> str:  # type: ignore[no-untyped-def]
    outcome = chunk_evaluate(chunk_id=chunk_id)
    if outcome.state == "busy":
        # Another delivery of this chunk holds its claim: look again once that claim ends.
        raise self.retry(countdown=outcome.retry_in)
    if outcome.finalize:
        run_id = outcome.run_id
        transaction.on_commit(lambda: finalize_run.delay(run_id))
    return outcome.state


@shared_task(name="runs.finalize_run", acks_late=True, soft_time_limit=600, time_limit=660)
def finalize_run(run_id: int) -> None:
    run_finalize(run_id=run_id)


@worker_process_shutdown.connect
def _close_engines(**_kwargs: Any) -> None:
    # A pool process exits through os._exit, which skips atexit: close its engines here.
    engines_close()
