"""A run that evaluates another run's samples on a plus test set (`webapp.runs.services.plus`)."""

from __future__ import annotations

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("runs", "0010_language_check_part"),
    ]

    operations = [
        migrations.AddField(
            model_name="run",
            name="plus_of",
            field=models.ForeignKey(
                blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL,
                related_name="plus_runs", to="runs.run",
                help_text="The run whose stored samples this one evaluates on a plus test set "
                          "(HumanEval+, HumanEval-X+), to show base beside plus "
                          "(`webapp.runs.services.plus`)."),
        ),
    ]
