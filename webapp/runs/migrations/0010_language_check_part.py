"""The language check's parts, which workers of each language parse in their sandboxes
(`webapp.runs.upload_checks.language_checks`)."""

from __future__ import annotations

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("runs", "0009_run_paused_and_canaries"),
    ]

    operations = [
        migrations.CreateModel(
            name="LanguageCheckPart",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True,
                                           serialize=False, verbose_name="ID")),
                ("language", models.CharField(max_length=30)),
                ("sources", models.JSONField(default=list,
                                             help_text="The texts to parse, in order.")),
                ("answers", models.JSONField(
                    blank=True, null=True,
                    help_text="Whether each source parses (null: could not decide); null "
                              "until answered.")),
                ("error", models.TextField(blank=True,
                                           help_text="Why the worker could not parse them.")),
                ("worker", models.CharField(blank=True, max_length=200)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("answered_at", models.DateTimeField(blank=True, null=True)),
            ],
            options={
                "indexes": [models.Index(fields=["created_at"],
                                         name="language_check_part_age")],
            },
        ),
    ]
