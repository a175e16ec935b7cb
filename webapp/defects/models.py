"""A run's verdicts with the defect registry's patches applied: asked for by a person,
computed by one task (`services.patched_scoring_run`), held by a heartbeat lease while it
runs, like a harness-profile comparison."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import models

from webapp.runs.models import LeasedJob, Run

QUEUED_PATIENCE = timedelta(minutes=15)
"""A request no worker took within this may be asked for again (its message may be lost):
asking again replaces the row, so a late delivery of the old message finds nothing."""


class PatchedScoring(LeasedJob):
    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Computing"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    run = models.OneToOneField(Run, on_delete=models.CASCADE, related_name="patched_scoring")
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
        related_name="+",
    )
    registry_version = models.CharField(
        max_length=40, help_text="The defect registry's version whose patches were applied."
    )
    patched_tasks = models.JSONField(
        default=list, help_text="The task ids whose samples are run again, patched."
    )
    counts = models.JSONField(
        default=dict, blank=True,
        help_text='{"HumanEval/N": [n, c]}: samples and passes of each patched problem.',
    )
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    samples_total = models.PositiveIntegerField(default=0)
    samples_done = models.PositiveIntegerField(default=0)

    queued_patience = QUEUED_PATIENCE

    def __str__(self) -> str:
        return f"patched scores of run {self.run_id}: {self.status}"
