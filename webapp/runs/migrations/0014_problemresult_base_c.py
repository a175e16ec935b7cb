"""A plus run's per-problem count of samples that passed every base test (issue 25), so its
base and plus pass@k come from the same samples. Runs scored before have none, and their
pairs show the base run's own score instead, labelled as such (`webapp.runs.services.plus`): nothing
needs filling in."""

from __future__ import annotations

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("runs", "0013_run_digest"),
    ]

    operations = [
        migrations.AddField(
            model_name="problemresult",
            name="base_c",
            field=models.PositiveIntegerField(
                blank=True, null=True,
                help_text="On a plus test set, samples that passed every base test: "
                          "EvalPlus's base column (`metrics_plus.passed_base`). Null where "
                          "the tests are not split into base and plus, or the run was scored "
                          "before these were kept."),
        ),
    ]
