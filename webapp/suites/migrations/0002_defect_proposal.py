from __future__ import annotations

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("benchmarks", "0001_initial"),
        ("suites", "0001_initial"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="DefectProposal",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True,
                                           serialize=False, verbose_name="ID")),
                ("entry", models.JSONField(
                    help_text="The registry entry, in registry.json's shape.")),
                ("evidence", models.JSONField(
                    default=dict,
                    help_text="The fidelity evidence when filed: models, rates, p-values.")),
                ("status", models.CharField(
                    choices=[("open", "Open"), ("accepted", "Accepted"),
                             ("rejected", "Rejected")],
                    default="open", max_length=10)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("dataset", models.ForeignKey(
                    on_delete=django.db.models.deletion.CASCADE,
                    related_name="defect_proposals", to="benchmarks.dataset")),
                ("problem", models.ForeignKey(
                    on_delete=django.db.models.deletion.CASCADE,
                    related_name="defect_proposals", to="benchmarks.problem")),
                ("proposed_by", models.ForeignKey(
                    on_delete=django.db.models.deletion.CASCADE,
                    related_name="defect_proposals", to=settings.AUTH_USER_MODEL)),
            ],
            options={
                "ordering": ["-created_at", "-pk"],
                "constraints": [models.UniqueConstraint(
                    condition=models.Q(("status", "open")), fields=("dataset", "problem"),
                    name="one_open_proposal_per_problem")],
            },
        ),
    ]
