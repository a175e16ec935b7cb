"""A run's verdicts with the defect registry's patches applied."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("runs", "0005_run_lifecycle"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="PatchedScoring",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True,
                                           serialize=False, verbose_name="ID")),
                ("registry_version", models.CharField(
                    help_text="The defect registry's version whose patches were applied.",
                    max_length=40)),
                ("patched_tasks", models.JSONField(
                    default=list,
                    help_text="The task ids whose samples are run again, patched.")),
                ("counts", models.JSONField(
                    blank=True, default=dict,
                    help_text='{"HumanEval/N": [n, c]}: samples and passes of each patched '
                              'problem.')),
                ("status", models.CharField(
                    choices=[("queued", "Queued"), ("running", "Computing"), ("done", "Done"),
                             ("failed", "Failed")],
                    default="queued", max_length=10)),
                ("error", models.TextField(blank=True)),
                ("samples_total", models.PositiveIntegerField(default=0)),
                ("samples_done", models.PositiveIntegerField(default=0)),
                ("claim", models.CharField(
                    blank=True, help_text="Token of the delivery that computes it.",
                    max_length=32)),
                ("lease_until", models.DateTimeField(
                    blank=True, help_text="Renewed by its holder's heartbeat while it runs.",
                    null=True)),
                ("dispatched_at", models.DateTimeField(blank=True, null=True)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("started_at", models.DateTimeField(blank=True, null=True)),
                ("finished_at", models.DateTimeField(blank=True, null=True)),
                ("requested_by", models.ForeignKey(
                    blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL,
                    related_name="+", to=settings.AUTH_USER_MODEL)),
                ("run", models.OneToOneField(
                    on_delete=django.db.models.deletion.CASCADE,
                    related_name="patched_scoring", to="runs.run")),
            ],
        ),
    ]
