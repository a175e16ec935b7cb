"""Runs record their manifest, and a run can be a reproduction of another."""

from __future__ import annotations

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("runs", "0005_run_lifecycle"),
    ]

    operations = [
        migrations.AddField(
            model_name="run",
            name="manifest",
            field=models.JSONField(
                blank=True, default=dict,
                help_text="What produced its verdicts (`evaluator.manifest`), as the workers "
                "that evaluated it recorded it; empty for runs evaluated before manifests.",
            ),
        ),
        migrations.AddField(
            model_name="run",
            name="reproduction_of",
            field=models.ForeignKey(
                blank=True, null=True, on_delete=django.db.models.deletion.CASCADE,
                related_name="reproductions", to="runs.run",
                help_text="The run this one re-evaluates to check its verdicts; such runs are "
                "kept out of lists and leaderboards (`webapp.runs.services.reproduce`).",
            ),
        ),
    ]
