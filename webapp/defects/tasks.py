"""Celery tasks of defect-aware scores: each takes ids, calls one service, and is safe to run
twice."""

from __future__ import annotations

from celery import shared_task

from webapp.defects.services import PATCHED_SCORES, patched_scoring_run
from webapp.runs.worker.jobs import CHUNK_TASK_LIMITS


@shared_task(name=PATCHED_SCORES, acks_late=True, **CHUNK_TASK_LIMITS)
def patched_scores(scoring_id: int) -> str:
    """Run again, patched, the samples of the problems the defect registry patches."""
    return patched_scoring_run(scoring_id=scoring_id)
