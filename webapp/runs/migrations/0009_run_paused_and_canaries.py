"""Runs pause on an infrastructure failure, and record where no canary vouched for a
worker's language; the runs already stored are judged again by the same rules.

- Every stored run was evaluated before workers ran canaries, so each records that gap,
  and none keeps the "verified" mark on that ground alone (`webapp.runs.reads.verified`).
- A stored result that the machine caused rather than the program is no verdict: the
  JavaScript harness not found in the sandbox (a checkout under /tmp hidden by the
  sandbox's scratch), or a runtime folder bwrap could not reach (a private checkout).
  Such samples become `sandbox_error`, the run's counts follow, and a finished run with
  any is paused, off every leaderboard, until its owner retries it.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations, models

PRE_CANARY = {"worker": "", "language": "",
              "reason": "evaluated before workers checked their languages with canaries"}
SIGNATURES = (
    ("Cannot find module", "/evaluator/languages/runtime/"),
    ("Can't find source path", "/evaluator/languages/runtime/"),
)
"""(both parts must occur in a result's stderr or message) for an infrastructure failure
stored as a verdict."""


def _is_infrastructure(result: dict[str, Any], message: str) -> bool:
    text = f"{result.get('stderr') or ''}\n{result.get('message') or ''}\n{message}"
    return any(all(part in text for part in signature) for signature in SIGNATURES)


def judge_again(apps: Any, schema_editor: Any) -> None:
    run_model = apps.get_model("runs", "Run")
    sample_model = apps.get_model("runs", "Sample")
    run_model.objects.exclude(status="staged").update(canary_gaps=[PRE_CANARY])
    moved: dict[int, dict[str, int]] = {}
    # A harness that never started ended its program before any test: IncompleteRun.
    candidates = (sample_model.objects.filter(status="error", error_type="IncompleteRun")
                  .values_list("pk", "run_id", "status", "result", "message"))
    for pk, run_id, status, result, message in candidates.iterator(chunk_size=500):
        if not _is_infrastructure(result or {}, message or ""):
            continue
        result = {**(result or {}), "status": "sandbox_error",
                  "error_type": "HarnessDidNotStart",
                  "message": "infrastructure failure: the test harness did not start "
                             "(judged again by migration runs.0009)"}
        sample_model.objects.filter(pk=pk).update(
            status="sandbox_error", error_type="HarnessDidNotStart",
            message=result["message"], result=result)
        counts = moved.setdefault(run_id, {})
        counts[status] = counts.get(status, 0) + 1
    for run_id, counts in moved.items():
        run = run_model.objects.get(pk=run_id)
        for status, count in counts.items():
            setattr(run, f"{status}_count", max(0, getattr(run, f"{status}_count") - count))
        run.sandbox_error_count += sum(counts.values())
        if run.status == "finished":
            run.status = "paused"
            run.error = (f"{sum(counts.values())} sample(s) were judged again: the machine "
                         "failed them (the test harness did not start), so they are not "
                         "verdicts. Retry the run once the cause is fixed.")
        run.save()


class Migration(migrations.Migration):

    dependencies = [
        ("runs", "0008_run_status_staged"),
    ]

    operations = [
        migrations.AddField(
            model_name="run",
            name="canary_gaps",
            field=models.JSONField(
                blank=True, default=list,
                help_text="Where a chunk ran without a healthy canary of its language on its "
                "worker: [{worker, language, reason}]; empty when every chunk had one.",
            ),
        ),
        migrations.AlterField(
            model_name="run",
            name="error",
            field=models.TextField(
                blank=True,
                help_text="Why it failed, or why it is paused (an infrastructure failure).",
            ),
        ),
        migrations.AlterField(
            model_name="run",
            name="status",
            field=models.CharField(
                choices=[
                    ("staged", "Awaiting confirmation"),
                    ("queued", "Queued"),
                    ("running", "Running"),
                    ("aggregating", "Computing scores"),
                    ("finished", "Finished"),
                    ("cancelled", "Cancelled"),
                    ("failed", "Failed"),
                    ("paused", "Paused: the machine failed"),
                ],
                default="queued",
                max_length=12,
            ),
        ),
        migrations.RunPython(judge_again, migrations.RunPython.noop),
    ]
