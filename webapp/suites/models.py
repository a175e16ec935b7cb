"""Model suites: one model (name, revision, decoding settings) evaluated on several
variants of the same problems. A suite only groups runs; the runs keep their own owner,
team and visibility, and a viewer sees a suite's runs only as far as `visible_runs` lets
them."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.urls import reverse

from webapp.runs.models import Run
from webapp.teams.models import Team


class Suite(models.Model):
    Visibility = Run.Visibility

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="suites"
    )
    team = models.ForeignKey(Team, on_delete=models.PROTECT, related_name="suites")
    visibility = models.CharField(
        max_length=10, choices=Run.Visibility.choices, default=Run.Visibility.TEAM
    )
    name = models.CharField(max_length=200)
    model_name = models.CharField(max_length=200)
    revision = models.CharField(
        max_length=200, blank=True, help_text="Checkpoint, commit or release of the model."
    )
    decoding = models.JSONField(
        default=dict, blank=True,
        help_text='Decoding settings shared by every run: {"temperature": 0.2, "top_p": 0.95}.',
    )
    description = models.TextField(blank=True)
    runs = models.ManyToManyField(Run, through="SuiteRun", related_name="suites")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"Suite {self.pk}: {self.name}"

    def get_absolute_url(self) -> str:
        return reverse("suites:detail", args=[self.pk])


class SuiteRun(models.Model):
    """A run in a suite: one variant (the run's dataset) of the suite's model."""

    suite = models.ForeignKey(Suite, on_delete=models.CASCADE, related_name="members")
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="suite_members")
    added_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
        related_name="+",
    )
    added_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["suite_id", "pk"]
        constraints = [
            models.UniqueConstraint(fields=["suite", "run"], name="one_membership_per_run"),
        ]

    def __str__(self) -> str:
        return f"run {self.run_id} in suite {self.suite_id}"


# The fidelity pages' proposed defects live in their own module; importing them here is
# what registers the model with the app.
from webapp.suites.fidelity_models import DefectProposal  # noqa: E402, F401
