"""A run's cancel and resume are kept in its history: the `status` kind of change.

Only the field's choices change; no table is altered.
"""

from __future__ import annotations

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("runs", "0006_run_manifest"),
    ]

    operations = [
        migrations.AlterField(
            model_name="runchange",
            name="field",
            field=models.CharField(
                choices=[
                    ("visibility", "Visibility"),
                    ("team", "Team"),
                    ("name", "Name"),
                    ("model_name", "Model"),
                    ("model_meta", "Model metadata"),
                    ("leaderboard", "Leaderboards"),
                    ("deleted", "Deleted"),
                    ("status", "Status (cancel, resume)"),
                ],
                max_length=20,
            ),
        ),
    ]
