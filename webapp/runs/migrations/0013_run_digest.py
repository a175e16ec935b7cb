"""pass^k, the failure breakdown, the unstable count and the verified check's counts of a
run, stored with its scores
(issue 26). Runs scored before have no digest, and their readers compute the figures as
they did, so nothing needs filling in."""

from __future__ import annotations

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("runs", "0012_problemresult_reported_ks"),
    ]

    operations = [
        migrations.CreateModel(
            name="RunDigest",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True,
                                           serialize=False, verbose_name="ID")),
                ("pass_hat_k", models.JSONField(
                    default=list, help_text="[k, value, low, high] for k = 1..min n: pass^k "
                                            "with its bootstrap interval")),
                ("failures", models.JSONField(
                    default=list, help_text="[status, error type, samples] of the samples "
                                            "that did not pass, most frequent first")),
                ("unstable", models.PositiveIntegerField(
                    default=0, help_text="Samples whose two attempts disagreed "
                                         "(`SampleResult.unstable`).")),
                ("compile_errors", models.PositiveIntegerField(
                    default=0, help_text="Samples that did not compile, as the verified "
                                         "check counts them.")),
                ("suspicious", models.PositiveIntegerField(
                    default=0, help_text="Suspicious samples, as the verified check counts "
                                         "them (`verified.SUSPICIOUS`).")),
                ("run", models.OneToOneField(on_delete=django.db.models.deletion.CASCADE,
                                             related_name="digest", to="runs.run")),
            ],
        ),
    ]
