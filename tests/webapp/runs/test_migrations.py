"""Data migrations of the runs app."""

from __future__ import annotations

import importlib

import pytest
from django.apps import apps as django_apps
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from tests.webapp.support import client_for
from webapp.benchmarks.models import Dataset
from webapp.runs.models import ProfileComparison, ProfileScore, Run, Sample


def test_source_task_id_migration_copies_task_id_into_existing_rows(
    personas, humaneval, samples_file, token_client, django_capture_on_commit_callbacks
):
    client = token_client(personas.owner)
    with samples_file.open("rb") as handle, django_capture_on_commit_callbacks(execute=True):
        response = client.post("/api/runs", {"file": handle, "dataset": "humaneval/python/en"})
    assert response.status_code == 201, response.content
    run_id = response.json()["id"]
    # Rows from before the field existed: the migration added it empty.
    Sample.objects.filter(run_id=run_id).update(source_task_id="")
    migration = importlib.import_module("webapp.runs.migrations.0003_sample_source_task_id")
    migration.copy_task_id(django_apps, None)
    assert list(Sample.objects.filter(run_id=run_id).values_list("source_task_id", "task_id")) == [
        ("HumanEval/0", "HumanEval/0"), ("HumanEval/0", "HumanEval/0"),
        ("HumanEval/1", "HumanEval/1"), ("HumanEval/1", "HumanEval/1")]
    lines = client_for(personas.owner).get(f"/api/runs/{run_id}/results").getvalue().splitlines()
    assert [line.split(b",")[0] for line in lines] == [b'{"task_id": "HumanEval/0"'] * 2 + [
        b'{"task_id": "HumanEval/1"'] * 2


@pytest.mark.django_db(transaction=True)
def test_profile_comparison_migration_adds_its_tables_and_keeps_runs_from_before(personas):
    before, after = [("runs", "0003_sample_source_task_id")], [("runs", "0004_profile_comparison")]
    dataset = Dataset.objects.create(name="humaneval", language="python", natural_language="en",
                                     version="v1", layout="humaneval", key="humaneval/python/en",
                                     source="test")
    executor = MigrationExecutor(connection)
    try:
        executor.migrate(before)
        assert "runs_profilecomparison" not in connection.introspection.table_names()
        old_apps = executor.loader.project_state(before).apps
        old_run = old_apps.get_model("runs", "Run").objects.create(
            owner_id=personas.owner.pk, team_id=personas.team.pk, name="from before profiles",
            dataset_id=dataset.pk, file_name="a.jsonl", file_sha256="0" * 64, file_size=1,
            file_layout="completion", options={"sanitize": False, "timeout_seconds": 10.0},
            fingerprint="0" * 64, harness_version="1", status="finished",
        )
        executor = MigrationExecutor(connection)
        executor.migrate(after)
        # Deferred: columns of later migrations are not there yet.
        run = Run.objects.defer("retracted_at", "deleted_at", "manifest", "reproduction_of",
                                "canary_gaps", "plus_of", "watched_until").get(pk=old_run.pk)
        # Nothing names its profile: the strict rules judged it, and the page says so.
        assert (run.profile_name, run.profile_recorded) == ("strict", False)
        comparison = ProfileComparison.objects.create(run=run, baseline=run.profile_name)
        ProfileScore.objects.create(comparison=comparison, profile="strict", version="1")
        assert run.profile_comparison.scores.count() == 1
        executor = MigrationExecutor(connection)
        executor.migrate(before)
        assert "runs_profilecomparison" not in connection.introspection.table_names()
        assert "runs_profilescore" not in connection.introspection.table_names()
    finally:
        executor = MigrationExecutor(connection)
        executor.loader.build_graph()
        executor.migrate(executor.loader.graph.leaf_nodes())
    assert Run.objects.filter(pk=old_run.pk).exists()


NODE_MISSING = ("node:internal/modules/cjs/loader:1143\n  throw err;\n\nError: Cannot find "
                "module '/tmp/wb/evaluator/languages/runtime/js/harness.js'\n")


def test_stored_runs_are_judged_again_by_the_pause_migration(
    personas, humaneval, samples_file, token_client, django_capture_on_commit_callbacks
):
    client = token_client(personas.owner)
    with samples_file.open("rb") as handle, django_capture_on_commit_callbacks(execute=True):
        response = client.post("/api/runs", {"file": handle, "dataset": "humaneval/python/en"})
    run = Run.objects.get(pk=response.json()["id"])
    assert run.status == Run.Status.FINISHED
    # As a checkout under /tmp stored them: the harness never started, yet a verdict.
    broken = Sample.objects.filter(run=run).order_by("position")[:2]
    for sample in broken:
        result = {**(sample.result or {}), "status": "error", "error_type": "IncompleteRun",
                  "stderr": NODE_MISSING}
        Sample.objects.filter(pk=sample.pk).update(status="error", error_type="IncompleteRun",
                                                   result=result)
    errors_before = Sample.objects.filter(run=run, status="error").count()
    Run.objects.filter(pk=run.pk).update(error_count=errors_before, passed_count=0,
                                         failed_count=run.done_count - errors_before)
    # A sample that ended early by its own doing stays a verdict.
    Sample.objects.filter(run=run).exclude(pk__in=[s.pk for s in broken]).update(
        status="error", error_type="IncompleteRun")
    migration = importlib.import_module("webapp.runs.migrations.0009_run_paused_and_canaries")
    migration.judge_again(django_apps, None)
    run.refresh_from_db()
    assert run.status == Run.Status.PAUSED
    assert "judged again" in run.error
    assert run.sandbox_error_count == 2
    assert run.error_count == errors_before - 2
    assert Sample.objects.filter(run=run, status="sandbox_error").count() == 2
    assert Sample.objects.filter(run=run, status="error").count() == run.samples_total - 2
    assert run.canary_gaps
    assert "before workers checked" in run.canary_gaps[0]["reason"]


def _sample_indexes() -> dict[str, tuple[str, ...]]:
    """The indexes of the samples' table (the primary key's apart), by name: their columns."""
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(cursor, Sample._meta.db_table)
    return {name: tuple(found["columns"]) for name, found in constraints.items()
            if (found["index"] or found["unique"]) and not found["primary_key"]}


@pytest.mark.django_db(transaction=True)
def test_no_index_of_a_sample_is_the_leading_part_of_another_and_the_migration_goes_both_ways():
    """Each result writes its sample anew in every index of the table: an index whose
    columns lead another's serves nothing that one does not, and costs every result."""
    def redundant(indexes: dict[str, tuple[str, ...]]) -> list[str]:
        return sorted(name for name, columns in indexes.items()
                      if any(other[:len(columns)] == columns and other_name != name
                             for other_name, other in indexes.items()))

    now = _sample_indexes()
    assert redundant(now) == [], now
    assert ("run_id", "task_id", "index") in now.values(), "the constraint still leads with run"
    before = [("runs", "0015_run_watched_until")]
    after = [("runs", "0016_sample_indexes_led_by_run")]
    executor = MigrationExecutor(connection)
    try:
        executor.migrate(before)
        restored = _sample_indexes()
        assert {("run_id",), ("status",)} <= set(restored.values())
        assert redundant(restored) != []
        executor = MigrationExecutor(connection)
        executor.migrate(after)
        assert _sample_indexes() == now
    finally:
        executor = MigrationExecutor(connection)
        executor.loader.build_graph()
        executor.migrate(executor.loader.graph.leaf_nodes())
