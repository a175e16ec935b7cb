"""The patched verdicts of a run: the request (a service for the run's owner), and the
worker's side, which runs again the samples of every problem the defect registry patches,
on the patched problem, and stores each such problem's passing count.

Only those samples run: the other problems' verdicts cannot change, since a patch edits
one problem. The work is claimed atomically and held by a heartbeat lease, like a
harness-profile comparison; a second delivery of its task does nothing.
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import replace

from django.conf import settings
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone

from evaluator.records import RunOptions
from webapp.benchmarks.selectors import dataset_problems
from webapp.defects.models import PatchedScoring
from webapp.defects.scores import run_defects, task_number
from webapp.runs.domain.sample_rows import SAMPLE_COLUMNS, stored_sample
from webapp.runs.messaging.dispatch import _send, language_queue
from webapp.runs.models import Run, Sample
from webapp.runs.reads.selectors import run_can_manage
from webapp.runs.worker.engines import engine_lease
from webapp.runs.worker.execution import DatabaseResultCache
from webapp.runs.worker.jobs import job_claim, job_held, job_run

PATCHED_SCORES = "defects.patched_scores"
PROGRESS_EVERY = 25
"""Samples between two progress writes."""


def patched_scoring_request(*, user: User, run: Run) -> PatchedScoring:
    """Ask for the run's patched verdicts; the task is sent on commit.

    Who may: as for re-running the run (its owner, or an owner of its team). Refused for a
    run that has not finished, for one with nothing to patch, and while one is in progress;
    a failed, finished or outdated one is replaced.
    """
    if not run_can_manage(user=user, run=run):
        raise PermissionDenied("Only the run's owner or a team owner can compute its patched "
                               "scores.")
    defects = run_defects(run=run)
    with transaction.atomic():
        locked = Run.objects.select_for_update().select_related("dataset").get(pk=run.pk)
        if locked.status != Run.Status.FINISHED:
            raise ValidationError("Only a finished run's patched scores can be computed.")
        tasks = set(Sample.objects.filter(run=locked).values_list("task_id", flat=True)
                    .distinct())
        patched = sorted((t for t in tasks if t in defects.patched), key=task_number)
        if not patched:
            raise ValidationError("No registry patch applies to this run's problems: its "
                                  "patched scores are its original ones.")
        existing = PatchedScoring.objects.filter(run=locked).first()
        if existing is not None:
            if existing.in_progress:
                raise ValidationError("This run's patched scores are already being computed.")
            # A new row, not the old one reset: a late delivery of the old task finds
            # nothing to claim.
            existing.delete()
        scoring = PatchedScoring.objects.create(
            run=locked, requested_by_id=user.pk, registry_version=defects.registry_version,
            patched_tasks=patched,
            samples_total=Sample.objects.filter(run=locked, task_id__in=patched).count(),
        )
        scoring_id, language = scoring.pk, locked.dataset.language
        transaction.on_commit(lambda: _enqueue(scoring_id, language))
    return scoring


def _enqueue(scoring_id: int, language: str) -> None:
    # To the language's queue: the samples run again need that language's toolchain.
    PatchedScoring.objects.filter(pk=scoring_id).update(dispatched_at=timezone.now())
    if not _send(PATCHED_SCORES, (scoring_id,), queue=language_queue(language)):
        PatchedScoring.objects.filter(
            pk=scoring_id, status=PatchedScoring.Status.QUEUED
        ).update(status=PatchedScoring.Status.FAILED, finished_at=timezone.now(),
                 error="The task queue could not be reached; ask again in a moment.")


def patched_scoring_run(*, scoring_id: int) -> str:
    """Compute requested patched verdicts: "done", "failed" (the reason is stored),
    "skipped" (already taken or finished) or "lost" (the lease was taken over)."""
    job = PatchedScoring.objects.filter(pk=scoring_id)
    claim = job_claim(job, samples_done=0)
    if claim is None:
        return "skipped"
    return job_run(name=f"patched-{scoring_id}", job=job, claim=claim,
                   compute=lambda stop: _compute(scoring_id=scoring_id, claim=claim,
                                                 stop=stop))


def _compute(*, scoring_id: int, claim: str, stop: threading.Event) -> bool:
    scoring = PatchedScoring.objects.select_related("run", "run__dataset").get(pk=scoring_id)
    run = scoring.run
    held = job_held(PatchedScoring.objects.filter(pk=scoring_id), claim)
    problems = dataset_problems(dataset=run.dataset)
    rows = (
        Sample.objects.filter(run=run, task_id__in=scoring.patched_tasks)
        .order_by("position")
        .values_list(*SAMPLE_COLUMNS)
    )
    samples = [stored_sample(values) for values in rows]
    n: Counter[str] = Counter(sample.task_id for sample in samples)
    c: Counter[str] = Counter()
    cache = DatabaseResultCache() if run.use_cache else None
    options = replace(RunOptions.from_dict(run.options), patched=True)
    done = 0
    with engine_lease(backend=settings.EVALUATOR_SANDBOX, workers=settings.EVALUATOR_WORKERS,
                      options=options, cache=cache) as engine:
        for event in engine.evaluate(problems, samples, cancel=stop):
            if event["type"] != "sample_finished":
                continue
            result = event["result"]
            c[result.task_id] += int(result.passed)
            done += 1
            if done % PROGRESS_EVERY == 0:
                held.update(samples_done=done)
    if cache is not None:
        cache.flush()
    if stop.is_set():
        return False
    if done != len(samples):
        raise RuntimeError(f"the engine reported {done} of {len(samples)} samples")
    with transaction.atomic():
        if not held.select_for_update().exists():
            return False
        held.update(
            status=PatchedScoring.Status.DONE, samples_done=done,
            counts={task: [n[task], c[task]] for task in scoring.patched_tasks},
            finished_at=timezone.now(), lease_until=None)
    return True
