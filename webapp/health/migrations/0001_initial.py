"""Workers as their canaries see them, and the latest canary of each language and level."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True

    dependencies = []

    operations = [
        migrations.CreateModel(
            name="Worker",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True,
                                           serialize=False, verbose_name="ID")),
                ("name", models.CharField(max_length=200, unique=True)),
                ("queues", models.JSONField(default=list,
                                            help_text="The queues it was started with.")),
                ("consuming", models.JSONField(
                    default=list,
                    help_text="The queues it consumes now: a language's queue only while "
                              "that language's canary passes.")),
                ("sandbox", models.CharField(help_text="Its EVALUATOR_SANDBOX setting.",
                                             max_length=20)),
                ("levels", models.JSONField(
                    default=list,
                    help_text="The sandbox levels its last canaries ran under (auto's "
                              "choice).")),
                ("started_at", models.DateTimeField()),
                ("seen_at", models.DateTimeField(
                    help_text="When its canary loop last reported.")),
                ("stopped_at", models.DateTimeField(blank=True, null=True)),
                ("note", models.TextField(
                    blank=True,
                    help_text="A problem of its own, such as a control message it did not "
                              "answer.")),
            ],
            options={
                "ordering": ["name"],
            },
        ),
        migrations.CreateModel(
            name="CanaryCheck",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True,
                                           serialize=False, verbose_name="ID")),
                ("language", models.CharField(max_length=20)),
                ("sandbox", models.CharField(
                    help_text="The level it ran under: standard...", max_length=20)),
                ("backend", models.CharField(blank=True, max_length=20)),
                ("ok", models.BooleanField()),
                ("error", models.TextField(blank=True,
                                           help_text="What went wrong, in plain words.")),
                ("hint", models.TextField(blank=True, help_text="What to do about it.")),
                ("checked_at", models.DateTimeField()),
                ("duration_ms", models.PositiveIntegerField(default=0)),
                ("last_ok_at", models.DateTimeField(blank=True, null=True)),
                ("worker", models.ForeignKey(
                    on_delete=django.db.models.deletion.CASCADE, related_name="checks",
                    to="health.worker")),
            ],
            options={
                "ordering": ["worker__name", "language", "sandbox"],
                "constraints": [models.UniqueConstraint(
                    fields=("worker", "language", "sandbox"),
                    name="one_canary_per_worker_language_level")],
            },
        ),
    ]
