"""Proposed defects: translation-defect candidates a person filed for review, each holding
the exact entry the defect registry (evaluator/defects/registry.json) would record. The
registry itself stays data under version control; a reviewer copies an accepted entry in."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from webapp.benchmarks.models import Dataset, Problem


class DefectProposal(models.Model):
    class Status(models.TextChoices):
        OPEN = "open", "Open"
        ACCEPTED = "accepted", "Accepted"
        REJECTED = "rejected", "Rejected"

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE,
                                related_name="defect_proposals")
    problem = models.ForeignKey(Problem, on_delete=models.CASCADE,
                                related_name="defect_proposals")
    entry = models.JSONField(help_text="The registry entry, in registry.json's shape.")
    evidence = models.JSONField(
        default=dict, help_text="The fidelity evidence when filed: models, rates, p-values.")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.OPEN)
    proposed_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                                    related_name="defect_proposals")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        app_label = "suites"
        ordering = ["-created_at", "-pk"]
        constraints = [
            models.UniqueConstraint(fields=["dataset", "problem"],
                                    condition=models.Q(status="open"),
                                    name="one_open_proposal_per_problem"),
        ]

    def __str__(self) -> str:
        return f"{self.entry.get('id', '?')} ({self.status})"
