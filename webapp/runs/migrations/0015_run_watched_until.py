"""When a run's live page was last open: its workers stream each test as it runs only while
someone watches (`webapp.runs.messaging.watching`). Null, as for every earlier run, means
nobody is watching."""

from __future__ import annotations

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("runs", "0014_problemresult_base_c"),
    ]

    operations = [
        migrations.AddField(
            model_name="run",
            name="watched_until",
            field=models.DateTimeField(
                blank=True, null=True,
                help_text="Someone has its live page open until at least then (renewed while "
                          "they do): only then do its workers stream each test as it runs."),
        ),
    ]
