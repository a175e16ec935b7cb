"""A problem's stored pass@k keeps the reported k only (issue 26); rows from before are cut
down to them. Nothing is lost: any k is computed from the row's n and c
(`webapp.runs.domain.problem_scores`), so going back needs no data either."""

from __future__ import annotations

from django.db import migrations, models
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps

KEPT = {"1", "10", "100"}
"""`problem_scores.REPORTED_KS` as this migration found it: a migration keeps its own."""
BATCH = 500


def keep_reported_ks(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    ProblemResult = apps.get_model("runs", "ProblemResult")
    # The ids first, then a batch at a time: SQLite does not isolate a read from the
    # writes of its own connection, so the table is not written while a cursor reads it.
    ids = list(ProblemResult.objects.order_by("pk").values_list("pk", flat=True))
    for start in range(0, len(ids), BATCH):
        changed = []
        for row in ProblemResult.objects.filter(pk__in=ids[start:start + BATCH]).only(
            "pk", "pass_at_k"
        ):
            kept = {k: v for k, v in row.pass_at_k.items() if k in KEPT}
            if len(kept) != len(row.pass_at_k):
                row.pass_at_k = kept
                changed.append(row)
        ProblemResult.objects.bulk_update(changed, ["pass_at_k"])


class Migration(migrations.Migration):

    dependencies = [
        ("runs", "0011_run_plus_of"),
    ]

    operations = [
        migrations.AlterField(
            model_name="problemresult",
            name="pass_at_k",
            field=models.JSONField(
                default=dict,
                help_text='{"k": value} for the reported k <= n (1, 10, 100); any other k is '
                          'computed from n and c'),
        ),
        migrations.RunPython(keep_reported_ks, migrations.RunPython.noop),
    ]
