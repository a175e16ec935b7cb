"""A sample's run and its status are no longer indexed alone: the unique constraint and the
three indexes of `Sample.Meta` all lead with the run, and no query reads samples by status
across runs. Each result writes its sample's row anew in every index of the table (its
status, number and finish are indexed), so the two (three on PostgreSQL, whose text
index has a twin for LIKE) cost every result and served nothing.

The indexes are dropped by name, not by altering the fields as Django would: on SQLite
that rebuilds the whole table, and on PostgreSQL it drops and re-adds the foreign key,
checking every row again."""

from __future__ import annotations

import django.db.models.deletion
from django.db import migrations, models
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps

DROPPED = ("runs_sample_run_id_96ad9181", "runs_sample_status_823bc7eb")
"""The names Django gave the two indexes (`0001_initial`), the same on every database."""


def drop(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    names = [*DROPPED]
    if schema_editor.connection.vendor == "postgresql":
        names.append("runs_sample_status_823bc7eb_like")
    for name in names:
        schema_editor.execute(f"DROP INDEX IF EXISTS {schema_editor.quote_name(name)}")


def restore(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    quote = schema_editor.quote_name
    table = quote("runs_sample")
    run, status = DROPPED
    schema_editor.execute(f"CREATE INDEX {quote(run)} ON {table} ({quote('run_id')})")
    schema_editor.execute(f"CREATE INDEX {quote(status)} ON {table} ({quote('status')})")
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"CREATE INDEX {quote(status + '_like')} ON {table} "
                              f"({quote('status')} varchar_pattern_ops)")


class Migration(migrations.Migration):

    dependencies = [
        ("runs", "0015_run_watched_until"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunPython(drop, restore)],
            state_operations=[
                migrations.AlterField(
                    model_name="sample",
                    name="run",
                    field=models.ForeignKey(db_index=False,
                                            on_delete=django.db.models.deletion.CASCADE,
                                            related_name="samples", to="runs.run"),
                ),
                migrations.AlterField(
                    model_name="sample",
                    name="status",
                    field=models.CharField(default="pending", max_length=15),
                ),
            ],
        ),
    ]
