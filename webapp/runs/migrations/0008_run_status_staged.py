"""A run can be staged: stored from a clean upload while its owner reads the confirmation
page, shown nowhere, and queued when the owner starts it.

Only the field's choices change; no table is altered.
"""

from __future__ import annotations

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("runs", "0007_runchange_status"),
    ]

    operations = [
        migrations.AlterField(
            model_name="run",
            name="status",
            field=models.CharField(
                choices=[
                    ("staged", "Awaiting confirmation"),
                    ("queued", "Queued"),
                    ("running", "Running"),
                    ("aggregating", "Computing scores"),
                    ("finished", "Finished"),
                    ("cancelled", "Cancelled"),
                    ("failed", "Failed"),
                ],
                default="queued",
                max_length=12,
            ),
        ),
    ]
