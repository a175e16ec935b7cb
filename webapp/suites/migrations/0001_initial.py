from __future__ import annotations

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
        ("runs", "0005_run_lifecycle"),
        ("teams", "0001_initial"),
    ]

    operations = [
        migrations.CreateModel(
            name="Suite",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False,
                                           verbose_name="ID")),
                ("visibility", models.CharField(
                    choices=[("private", "Private: only me"),
                             ("team", "Team: members of the team"),
                             ("public", "Public: everyone")],
                    default="team", max_length=10)),
                ("name", models.CharField(max_length=200)),
                ("model_name", models.CharField(max_length=200)),
                ("revision", models.CharField(
                    blank=True, help_text="Checkpoint, commit or release of the model.",
                    max_length=200)),
                ("decoding", models.JSONField(
                    blank=True, default=dict,
                    help_text='Decoding settings shared by every run: {"temperature": 0.2, '
                              '"top_p": 0.95}.')),
                ("description", models.TextField(blank=True)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("updated_at", models.DateTimeField(auto_now=True)),
                ("owner", models.ForeignKey(on_delete=django.db.models.deletion.PROTECT,
                                            related_name="suites",
                                            to=settings.AUTH_USER_MODEL)),
                ("team", models.ForeignKey(on_delete=django.db.models.deletion.PROTECT,
                                           related_name="suites", to="teams.team")),
            ],
            options={"ordering": ["-created_at", "-pk"]},
        ),
        migrations.CreateModel(
            name="SuiteRun",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False,
                                           verbose_name="ID")),
                ("added_at", models.DateTimeField(auto_now_add=True)),
                ("added_by", models.ForeignKey(
                    blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL,
                    related_name="+", to=settings.AUTH_USER_MODEL)),
                ("run", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE,
                                          related_name="suite_members", to="runs.run")),
                ("suite", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE,
                                            related_name="members", to="suites.suite")),
            ],
            options={"ordering": ["suite_id", "pk"]},
        ),
        migrations.AddField(
            model_name="suite",
            name="runs",
            field=models.ManyToManyField(related_name="suites", through="suites.SuiteRun",
                                         to="runs.run"),
        ),
        migrations.AddConstraint(
            model_name="suiterun",
            constraint=models.UniqueConstraint(fields=("suite", "run"),
                                               name="one_membership_per_run"),
        ),
    ]
