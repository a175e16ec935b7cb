"""Datasets, problems aligned by `HumanEval/N`, and each problem's variants.

A `Dataset` row is one imported file: one version of one variant (natural language ×
programming language) of a benchmark. A `Problem` is one HumanEval number, shared by every
dataset; a `ProblemVariant` is that problem as one dataset states it.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.urls import reverse


class Dataset(models.Model):
    name = models.CharField(max_length=50, help_text="humaneval, humaneval-x, mhumaneval, ...")
    variant = models.CharField(max_length=30, blank=True, help_text="mini, expert, ...")
    language = models.CharField(max_length=20, help_text="Programming language.")
    natural_language = models.CharField(max_length=10, help_text="ISO 639-1 code.")
    version = models.CharField(max_length=64, help_text="Content hash of the source file.")
    layout = models.CharField(max_length=30)
    key = models.CharField(max_length=120, help_text="name/language/natural_language[/variant]")
    source = models.CharField(max_length=500)
    problem_count = models.PositiveIntegerField(default=0)
    imported_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name", "language", "natural_language", "variant", "-imported_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["name", "variant", "language", "natural_language", "version"],
                name="one_row_per_dataset_version",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.key} @ {self.version}"

    def get_absolute_url(self) -> str:
        return reverse("benchmarks:dataset", args=[self.pk])


class Problem(models.Model):
    """One task, `HumanEval/<number>`, in every dataset that has it."""

    number = models.PositiveIntegerField(unique=True)
    task_id = models.CharField(max_length=30, unique=True)

    class Meta:
        ordering = ["number"]

    def __str__(self) -> str:
        return self.task_id

    def get_absolute_url(self) -> str:
        return reverse("benchmarks:problem", args=[self.number])


class ProblemVariant(models.Model):
    problem = models.ForeignKey(Problem, on_delete=models.CASCADE, related_name="variants")
    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="variants")
    source_id = models.CharField(max_length=200, blank=True)
    entry_point = models.CharField(max_length=200)
    prompt = models.TextField()
    canonical_solution = models.TextField(blank=True)
    test = models.TextField(blank=True)
    record = models.TextField(
        help_text="The evaluator's Problem as JSON, as loaded; workers run from it."
    )

    class Meta:
        ordering = ["dataset_id", "problem__number"]
        constraints = [
            models.UniqueConstraint(
                fields=["dataset", "problem"], name="one_variant_per_dataset_problem"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.problem.task_id} in {self.dataset.key}"


class CatalogueImport(models.Model):
    """One download and import of a catalogue entry, asked for on the Datasets page and done
    by one background task (`catalogue.catalogue_job_run`); its progress is polled."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Waiting for a worker"
        RUNNING = "running", "Downloading"
        DONE = "done", "Imported"
        FAILED = "failed", "Failed"

    key = models.CharField(max_length=120, help_text="The catalogue entry's key.")
    sha256 = models.CharField(max_length=64, help_text="The entry's pinned hash when asked.")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    bytes_done = models.PositiveBigIntegerField(default=0)
    bytes_total = models.PositiveBigIntegerField(default=0)
    error = models.TextField(blank=True)
    dataset = models.ForeignKey(
        Dataset, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
        related_name="+",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(
        auto_now=True, help_text="Touched by every progress write: a stale one has stopped."
    )
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"catalogue import of {self.key}: {self.status}"

    @property
    def percent(self) -> int:
        if not self.bytes_total:
            return 0
        return min(100, round(100 * self.bytes_done / self.bytes_total))
