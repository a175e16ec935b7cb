"""A worker as its canaries see it, and the latest canary of each of its languages under
each sandbox level it offers."""

from __future__ import annotations

from django.db import models


class Worker(models.Model):
    """One Celery worker node (`worker-8000@host`), recorded by its canary loop."""

    name = models.CharField(max_length=200, unique=True)
    queues = models.JSONField(default=list, help_text="The queues it was started with.")
    consuming = models.JSONField(
        default=list, help_text="The queues it consumes now: a language's queue only while "
        "that language's canary passes.")
    sandbox = models.CharField(max_length=20, help_text="Its EVALUATOR_SANDBOX setting.")
    levels = models.JSONField(
        default=list, help_text="The sandbox levels its last canaries ran under (auto's choice).")
    started_at = models.DateTimeField()
    seen_at = models.DateTimeField(help_text="When its canary loop last reported.")
    stopped_at = models.DateTimeField(null=True, blank=True)
    note = models.TextField(blank=True, help_text="A problem of its own, such as a control "
                            "message it did not answer.")

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class CanaryCheck(models.Model):
    """The latest canary of one language under one sandbox level on one worker."""

    worker = models.ForeignKey(Worker, on_delete=models.CASCADE, related_name="checks")
    language = models.CharField(max_length=20)
    sandbox = models.CharField(max_length=20, help_text="The level it ran under: standard...")
    backend = models.CharField(max_length=20, blank=True)
    ok = models.BooleanField()
    error = models.TextField(blank=True, help_text="What went wrong, in plain words.")
    hint = models.TextField(blank=True, help_text="What to do about it.")
    checked_at = models.DateTimeField()
    duration_ms = models.PositiveIntegerField(default=0)
    last_ok_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["worker__name", "language", "sandbox"]
        constraints = [
            models.UniqueConstraint(fields=["worker", "language", "sandbox"],
                                    name="one_canary_per_worker_language_level"),
        ]

    def __str__(self) -> str:
        return f"{self.language} on {self.worker} ({self.sandbox}): {'ok' if self.ok else 'FAILED'}"
