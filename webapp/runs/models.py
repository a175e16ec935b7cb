"""Runs, their samples and chunks, their aggregates, and the result cache."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models
from django.urls import reverse

from evaluator.records import STATUSES
from webapp.benchmarks.models import Dataset, Problem, ProblemVariant
from webapp.teams.models import Team

SAMPLE_STATUSES: tuple[str, ...] = ("pending", *STATUSES)


class Run(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        AGGREGATING = "aggregating", "Computing scores"
        FINISHED = "finished", "Finished"
        CANCELLED = "cancelled", "Cancelled"
        FAILED = "failed", "Failed"

    class Visibility(models.TextChoices):
        PRIVATE = "private", "Private: only me"
        TEAM = "team", "Team: members of the team"
        PUBLIC = "public", "Public: everyone"

    ACTIVE = (Status.QUEUED, Status.RUNNING, Status.AGGREGATING)

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="runs"
    )
    team = models.ForeignKey(Team, on_delete=models.PROTECT, related_name="runs")
    visibility = models.CharField(
        max_length=10, choices=Visibility.choices, default=Visibility.TEAM
    )
    name = models.CharField(max_length=200)
    model_name = models.CharField(max_length=200, blank=True)
    model_meta = models.JSONField(default=dict, blank=True)
    dataset = models.ForeignKey(Dataset, on_delete=models.PROTECT, related_name="runs")

    file_name = models.CharField(max_length=255)
    file_sha256 = models.CharField(max_length=64)
    file_size = models.BigIntegerField()
    file_layout = models.CharField(max_length=20)
    options = models.JSONField(
        default=dict, help_text="sanitize, sandbox, limits, task, tests: what decides a verdict."
    )
    fingerprint = models.CharField(
        max_length=64, db_index=True, help_text="Hash of file, dataset and options: finds repeats."
    )
    use_cache = models.BooleanField(default=True)
    rerun_of = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="reruns"
    )
    coverage = models.JSONField(default=dict)
    harness_version = models.CharField(max_length=20)

    status = models.CharField(max_length=12, choices=Status.choices, default=Status.QUEUED)
    error = models.TextField(blank=True)
    samples_total = models.PositiveIntegerField(default=0)
    done_count = models.PositiveIntegerField(default=0)
    passed_count = models.PositiveIntegerField(default=0)
    failed_count = models.PositiveIntegerField(default=0)
    error_count = models.PositiveIntegerField(default=0)
    compile_error_count = models.PositiveIntegerField(default=0)
    timeout_count = models.PositiveIntegerField(default=0)
    memory_count = models.PositiveIntegerField(default=0)
    sandbox_error_count = models.PositiveIntegerField(default=0)
    cached_count = models.PositiveIntegerField(default=0)
    chunks_total = models.PositiveIntegerField(default=0)
    chunks_done = models.PositiveIntegerField(default=0)
    sandbox_backend = models.CharField(max_length=20, blank=True)

    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        indexes = [models.Index(fields=["visibility", "status"])]

    def __str__(self) -> str:
        return f"Run {self.pk}: {self.name}"

    def get_absolute_url(self) -> str:
        return reverse("runs:detail", args=[self.pk])

    @property
    def is_active(self) -> bool:
        return self.status in self.ACTIVE

    @property
    def counts_by_status(self) -> dict[str, int]:
        return {status: getattr(self, f"{status}_count") for status in STATUSES}

    @property
    def progress_fraction(self) -> float:
        return self.done_count / self.samples_total if self.samples_total else 0.0

    @property
    def duration_seconds(self) -> float | None:
        if self.started_at is None:
            return None
        end = self.finished_at
        if end is None:
            return None
        return (end - self.started_at).total_seconds()


class Chunk(models.Model):
    """A slice of a run's samples (whole problems) that one task evaluates."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        CANCELLED = "cancelled", "Cancelled"
        FAILED = "failed", "Failed"

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="chunks")
    index = models.PositiveIntegerField()
    language = models.CharField(max_length=20)
    sample_count = models.PositiveIntegerField()
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    attempts = models.PositiveIntegerField(default=0)
    lease_until = models.DateTimeField(
        null=True, blank=True, help_text="A running chunk whose lease ran out may be re-claimed."
    )
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["run_id", "index"]
        constraints = [
            models.UniqueConstraint(fields=["run", "index"], name="one_chunk_per_index"),
        ]

    def __str__(self) -> str:
        return f"chunk {self.index} of run {self.run_id}"


class Sample(models.Model):
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="samples")
    chunk = models.ForeignKey(Chunk, on_delete=models.CASCADE, related_name="samples")
    variant = models.ForeignKey(ProblemVariant, on_delete=models.PROTECT, related_name="samples")
    task_id = models.CharField(max_length=30)
    index = models.PositiveIntegerField(help_text="completion_id within the task")
    position = models.PositiveIntegerField(help_text="Order in the uploaded file.")
    line = models.PositiveIntegerField()
    raw = models.TextField()
    completion = models.TextField()
    sanitized = models.BooleanField(default=False)
    notes = models.JSONField(default=list, blank=True)
    is_full_program = models.BooleanField(default=False)

    status = models.CharField(max_length=15, default="pending", db_index=True)
    cached = models.BooleanField(default=False)
    program_hash = models.CharField(max_length=64, blank=True)
    error_type = models.CharField(max_length=100, blank=True)
    message = models.TextField(blank=True)
    duration_ms = models.FloatField(default=0.0)
    tests_passed = models.PositiveIntegerField(default=0)
    tests_total = models.PositiveIntegerField(default=0)
    result = models.JSONField(null=True, blank=True, help_text="SampleResult.to_dict()")
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["run_id", "position"]
        constraints = [
            models.UniqueConstraint(fields=["run", "task_id", "index"], name="one_sample_per_id"),
        ]
        indexes = [
            models.Index(fields=["run", "status"]),
            models.Index(fields=["run", "finished_at"]),
        ]

    def __str__(self) -> str:
        return f"{self.task_id} #{self.index} of run {self.run_id}"

    def get_absolute_url(self) -> str:
        return reverse("runs:sample", args=[self.run_id, self.pk])


class ProblemResult(models.Model):
    """A run's score on one problem, computed when the run finishes."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="problem_results")
    problem = models.ForeignKey(Problem, on_delete=models.PROTECT, related_name="results")
    task_id = models.CharField(max_length=30)
    n = models.PositiveIntegerField()
    c = models.PositiveIntegerField()
    counts = models.JSONField(default=dict, help_text="Samples per status.")
    pass_at_k = models.JSONField(default=dict, help_text='{"k": value} for every k <= n')
    intervals = models.JSONField(
        default=dict, help_text='{"k": [low, high]} for the reported k, by binomial bootstrap'
    )
    top_failure = models.CharField(max_length=300, blank=True)

    class Meta:
        ordering = ["run_id", "problem__number"]
        constraints = [
            models.UniqueConstraint(fields=["run", "problem"], name="one_result_per_problem"),
        ]

    def __str__(self) -> str:
        return f"{self.task_id}: {self.c}/{self.n}"

    def pass_at(self, k: int) -> float | None:
        value: Any = self.pass_at_k.get(str(k))
        return float(value) if value is not None else None


class RunMetric(models.Model):
    """pass@k over all problems, with its bootstrap interval, for one k."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="metrics")
    k = models.PositiveIntegerField()
    value = models.FloatField()
    low = models.FloatField()
    high = models.FloatField()
    problems = models.PositiveIntegerField()

    class Meta:
        ordering = ["run_id", "k"]
        constraints = [models.UniqueConstraint(fields=["run", "k"], name="one_metric_per_k")]

    def __str__(self) -> str:
        return f"pass@{self.k} = {self.value:.3f}"


class CachedResult(models.Model):
    """An evaluated program, keyed by the evaluator's cache key (dataset version, problem,
    program hash, harness version, options), so an identical program is not run twice."""

    key = models.CharField(max_length=64, unique=True)
    result = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.key
