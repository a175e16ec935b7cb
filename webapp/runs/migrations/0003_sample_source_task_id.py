"""Keep each sample's task id as the uploaded file wrote it; earlier rows get their task_id."""

from __future__ import annotations

from django.db import migrations, models
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps
from django.db.models import F


def copy_task_id(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    Sample = apps.get_model("runs", "Sample")
    Sample.objects.update(source_task_id=F("task_id"))


class Migration(migrations.Migration):
    dependencies = [
        ("runs", "0002_leases_and_live_events"),
    ]

    operations = [
        migrations.AlterField(
            model_name="sample",
            name="task_id",
            field=models.CharField(help_text="Aligned id, `HumanEval/N`.", max_length=30),
        ),
        migrations.AddField(
            model_name="sample",
            name="source_task_id",
            field=models.TextField(
                default="",
                help_text="The id as the uploaded file wrote it (`CPP/0`, a BabelCode qid), "
                "byte for byte: results and exports carry it as `task_id`.",
            ),
            preserve_default=False,
        ),
        migrations.RunPython(copy_task_id, migrations.RunPython.noop),
    ]
