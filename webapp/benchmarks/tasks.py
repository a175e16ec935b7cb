"""Celery tasks of the benchmarks app: each takes ids, calls one service, and is safe to run
twice."""

from __future__ import annotations

from celery import shared_task

from webapp.benchmarks.catalogue import IMPORT_CATALOGUE_ENTRY, catalogue_job_run


@shared_task(name=IMPORT_CATALOGUE_ENTRY, acks_late=True, soft_time_limit=900, time_limit=960)
def import_catalogue_entry(job_id: int) -> str:
    """Download, check and store one catalogue entry a staff user asked for."""
    return catalogue_job_run(job_id=job_id)
