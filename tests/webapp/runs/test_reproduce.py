"""Reproducibility: the manifest the worker records, its JSON export (who may read it), and
"Reproduce", which evaluates a run's samples again and lists what changed (eager Celery:
the same tasks, services and engine a worker runs, in this process)."""

from __future__ import annotations

import hashlib
import json
import socket
import sys

import pytest
from django.test import Client

from evaluator.records import HARNESS_VERSION
from evaluator.sandbox.backends import get_backend
from evaluator.sandbox.base import SandboxError
from tests.webapp.factories import RunFactory
from tests.webapp.runs.test_access import VISIBILITY_RULES
from tests.webapp.support import RIGHT_0, WRONG_0, client_for, write_jsonl
from webapp.runs.models import Run, Sample
from webapp.runs.reads.selectors import visible_runs
from webapp.runs.services.reproduce import reproduction_report

HOST_ONLY_0 = (
    "    import socket\n"
    "    if socket.gethostname() == 'sandbox':\n"
    "        return False\n" + RIGHT_0
)
"""Right on the host, wrong inside bubblewrap, which names its host `sandbox`: a verdict
that the server's sandbox decides."""


def _evaluated(client: Client, path, capture, *, visibility: str = "team") -> Run:
    with path.open("rb") as handle, capture(execute=True):
        response = client.post("/api/runs", {"file": handle, "dataset": "humaneval/python/en",
                                             "team": "lab", "visibility": visibility})
    assert response.status_code == 201, response.content
    run = Run.objects.get(pk=response.json()["id"])
    assert run.status == Run.Status.FINISHED, run.error
    return run


@pytest.fixture
def finished_run(personas, humaneval, samples_file, token_client,
                 django_capture_on_commit_callbacks) -> Run:
    return _evaluated(token_client(personas.owner), samples_file,
                      django_capture_on_commit_callbacks)


def _reproduce(client: Client, run: Run, capture) -> Run:
    with capture(execute=True):
        response = client.post(f"/runs/{run.pk}/reproduce/")
    assert response.status_code == 302, response.content
    copy = Run.objects.get(reproduction_of=run)
    assert response["Location"] == f"/runs/{run.pk}/reproductions/{copy.pk}/"
    return copy


def test_the_worker_records_the_manifest(finished_run):
    manifest = finished_run.manifest
    assert manifest["schema"] == 1
    assert manifest["generation"] == {"name": finished_run.file_name,
                                      "sha256": finished_run.file_sha256}
    assert manifest["dataset"] == {"key": "humaneval/python/en",
                                   "content_hash": finished_run.dataset.version}
    assert manifest["harness"]["version"] == HARNESS_VERSION
    assert manifest["harness"]["profile"] == finished_run.profile_name
    assert manifest["sandbox"]["backend"] == "none"
    assert manifest["toolchains"]["python"]["version"] == f"Python {sys.version.split()[0]}"
    assert manifest["limits"]["run"]["cpu_seconds"] == finished_run.options["timeout_seconds"]
    assert "mixed" not in manifest, "every chunk ran on the same worker"


def test_run_page_shows_the_manifest(personas, finished_run):
    page = client_for(personas.owner).get(f"/runs/{finished_run.pk}/").content.decode()
    assert 'id="manifest-table"' in page
    assert finished_run.manifest["toolchains"]["python"]["version"] in page
    # Long hashes are abbreviated, and the copy button carries them whole.
    assert f'data-copy="{finished_run.file_sha256}"' in page
    assert f">{finished_run.file_sha256[:12]}…<" in page
    assert 'id="reproduce-link"' in page
    # Two identical programs: the second reused the first's result, and the page says so.
    assert finished_run.cached_count == 1
    assert 'id="manifest-cached"' in page


def test_manifest_export_is_one_json_download(personas, finished_run):
    response = client_for(personas.teammate).get(f"/runs/{finished_run.pk}/manifest.json")
    assert response.status_code == 200
    assert response["Content-Disposition"] == (
        f'attachment; filename="run-{finished_run.pk}-manifest.json"')
    body = json.loads(response.content)
    assert body["run"]["id"] == finished_run.pk
    assert body["manifest"] == finished_run.manifest


def test_manifest_export_through_the_api(personas, finished_run, token_client):
    response = token_client(personas.owner).get(f"/api/runs/{finished_run.pk}/manifest")
    assert response.status_code == 200
    assert json.loads(response.content)["manifest"] == finished_run.manifest
    assert token_client(personas.outsider).get(
        f"/api/runs/{finished_run.pk}/manifest").status_code == 404
    assert Client().get(f"/api/runs/{finished_run.pk}/manifest").status_code == 401
    bad = Client(HTTP_AUTHORIZATION="Bearer not-a-token")
    assert bad.get(f"/api/runs/{finished_run.pk}/manifest").status_code == 401
    assert token_client(personas.owner).get("/api/runs/999999/manifest").status_code == 404


@pytest.mark.parametrize(("visibility", "viewer", "expected"), VISIBILITY_RULES)
def test_manifest_export_follows_the_run_page(visibility, viewer, expected, personas, humaneval):
    run = RunFactory.create(owner=personas.owner, team=personas.team, dataset=humaneval,
                            visibility=visibility)
    client = Client() if viewer == "anonymous" else client_for(getattr(personas, viewer))
    assert client.get(f"/runs/{run.pk}/").status_code == expected
    answer = client.get(f"/runs/{run.pk}/manifest.json")
    assert answer.status_code == expected
    if expected == 200:
        assert json.loads(answer.content)["manifest"] is None, "nothing recorded yet"


def test_unknown_ids_are_404(personas, finished_run):
    owner = client_for(personas.owner)
    assert owner.get("/runs/999999/manifest.json").status_code == 404
    assert owner.get("/runs/999999/reproduce/").status_code == 404
    assert owner.post("/runs/999999/reproduce/").status_code == 404
    assert owner.get(f"/runs/{finished_run.pk}/reproductions/999999/").status_code == 404
    # A run that is not a reproduction of this one is not found as one.
    other = RunFactory.create(owner=personas.owner, team=personas.team,
                              dataset=finished_run.dataset)
    assert owner.get(f"/runs/{finished_run.pk}/reproductions/{other.pk}/").status_code == 404


def test_reproduction_with_nothing_changed(personas, finished_run,
                                           django_capture_on_commit_callbacks):
    before = list(Sample.objects.filter(run=finished_run).values_list("pk", "status", "result"))
    owner = client_for(personas.owner)
    copy = _reproduce(owner, finished_run, django_capture_on_commit_callbacks)
    copy.refresh_from_db()
    assert copy.status == Run.Status.FINISHED
    # Evaluated again, not read back from the cache; only the second of the two identical
    # programs counts as cached, being a duplicate within its chunk.
    assert not copy.use_cache
    assert copy.cached_count == 1
    assert copy.manifest["generation"] == finished_run.manifest["generation"]
    report = reproduction_report(original=finished_run, reproduction=copy)
    assert (report.changes, report.differences, report.compared) == ([], [], 4)
    assert report.reproduced
    assert report.scores
    assert not any(score.moved for score in report.scores)
    page = owner.get(f"/runs/{finished_run.pk}/reproductions/{copy.pk}/").content.decode()
    assert "All 4 verdicts reproduced." in page
    assert 'id="manifest-same"' in page
    # The original is untouched, and the reproduction stays off lists and leaderboards.
    after = list(Sample.objects.filter(run=finished_run).values_list("pk", "status", "result"))
    assert after == before
    assert list(visible_runs(user=personas.owner)) == [finished_run]
    board = owner.get("/teams/lab/leaderboard/").content.decode()
    assert f"/runs/{finished_run.pk}/" in board
    for page_url in ("/", "/teams/lab/", "/teams/lab/leaderboard/"):
        assert f"/runs/{copy.pk}/" not in owner.get(page_url).content.decode(), page_url
    run_page = owner.get(f"/runs/{finished_run.pk}/").content.decode()
    assert f"/runs/{finished_run.pk}/reproductions/{copy.pk}/" in run_page
    assert 'id="reproduction-note"' in owner.get(f"/runs/{copy.pk}/").content.decode()


def test_reproduction_lists_the_verdicts_the_sandbox_changed(
        personas, humaneval, tmp_path, token_client, settings,
        django_capture_on_commit_callbacks):
    if socket.gethostname() == "sandbox":
        pytest.skip("this machine is called `sandbox`, like bubblewrap's")
    try:
        get_backend("bwrap")
    except SandboxError as exc:
        pytest.skip(f"bubblewrap does not work here: {exc}")
    path = write_jsonl(tmp_path / "host.jsonl", [
        {"task_id": "HumanEval/0", "completion": HOST_ONLY_0},
        {"task_id": "HumanEval/0", "completion": WRONG_0},
    ])
    original = _evaluated(token_client(personas.owner), path, django_capture_on_commit_callbacks)
    assert original.passed_count == 1
    # The server now isolates programs with bubblewrap.
    settings.EVALUATOR_SANDBOX = "standard"
    teammate = client_for(personas.teammate)
    copy = _reproduce(teammate, original, django_capture_on_commit_callbacks)
    report = reproduction_report(original=original, reproduction=copy)
    assert [(c.task_id, c.index, c.old_status, c.new_status) for c in report.changes] == [
        ("HumanEval/0", 0, "passed", "failed")]
    fields = {d.field: (d.old, d.new) for d in report.differences}
    assert fields["sandbox.backend"] == ("none", "bwrap")
    assert fields["sandbox.level"] == ("none", "standard")
    assert fields["sandbox.version"][1].startswith("bubblewrap ")
    assert "toolchains.python.path" in fields
    page = teammate.get(f"/runs/{original.pk}/reproductions/{copy.pk}/").content.decode()
    assert "1 of 2</strong> verdicts changed" in page
    changed = copy.samples.get(task_id="HumanEval/0", index=0)
    assert f"/runs/{copy.pk}/samples/{changed.pk}/" in page
    assert "<code>sandbox.backend</code>" in page
    # The number it moved: pass@1 went from one sample in two to none.
    pass1 = report.scores[0]
    assert (pass1.k, pass1.old["value"], pass1.new["value"]) == (1, 0.5, 0.0)
    assert 'id="score-table"' in page
    paired = f"/compare/{original.pk}/{copy.pk}/"
    assert paired in page
    assert teammate.get(paired).status_code == 200
    original.refresh_from_db()
    assert original.passed_count == 1, "the original's verdicts stay as they were"


def test_who_may_reproduce(personas, finished_run, django_capture_on_commit_callbacks):
    url = f"/runs/{finished_run.pk}/reproduce/"
    assert client_for(personas.outsider).post(url).status_code == 404
    assert client_for(personas.outsider).get(url).status_code == 404
    anonymous = Client().post(url)
    assert anonymous.status_code == 302
    assert "/accounts/login/" in anonymous["Location"]
    assert not Run.objects.filter(reproduction_of=finished_run).exists()
    # A public run is visible to all, but only its team may have it evaluated again.
    Run.objects.filter(pk=finished_run.pk).update(visibility=Run.Visibility.PUBLIC)
    assert client_for(personas.outsider).post(url).status_code == 403
    assert 'id="reproduce-link"' not in client_for(personas.outsider).get(
        f"/runs/{finished_run.pk}/").content.decode()
    confirm = client_for(personas.teammate).get(url)
    assert confirm.status_code == 200
    assert 'id="confirm-reproduce"' in confirm.content.decode()
    assert not Run.objects.filter(reproduction_of=finished_run).exists(), "GET only asks"


def test_reproduce_needs_the_csrf_token(personas, finished_run):
    client = Client(enforce_csrf_checks=True)
    client.force_login(personas.owner)
    assert client.post(f"/runs/{finished_run.pk}/reproduce/").status_code == 403
    assert not Run.objects.filter(reproduction_of=finished_run).exists()


def test_unfinished_runs_and_reproductions_are_not_reproduced(
        personas, finished_run, unstarted_run, django_capture_on_commit_callbacks):
    owner = client_for(personas.owner)
    queued = unstarted_run("queued")
    refused = owner.get(f"/runs/{queued.pk}/reproduce/")
    assert refused.status_code == 409
    assert "Only a finished run" in refused.content.decode()
    assert owner.post(f"/runs/{queued.pk}/reproduce/").status_code == 302
    assert not Run.objects.filter(reproduction_of=queued).exists()
    copy = _reproduce(owner, finished_run, django_capture_on_commit_callbacks)
    assert owner.get(f"/runs/{copy.pk}/reproduce/").status_code == 409
    assert not Run.objects.filter(reproduction_of=copy).exists()


def test_progress_while_the_reproduction_runs(personas, finished_run, monkeypatch):
    # Not sent to the workers: the reproduction stays queued, as while it waits for one.
    monkeypatch.setattr("webapp.runs.services.writes._enqueue_start", lambda run_id: None)
    owner = client_for(personas.owner)
    owner.post(f"/runs/{finished_run.pk}/reproduce/")
    copy = Run.objects.get(reproduction_of=finished_run)
    status = owner.get(f"/runs/{finished_run.pk}/reproductions/{copy.pk}/status.json").json()
    assert status == {"status": "queued", "done": 0, "total": 4, "active": True}
    page = owner.get(f"/runs/{finished_run.pk}/reproductions/{copy.pk}/").content.decode()
    assert 'id="reproduction-progress"' in page
    assert "All 4 verdicts reproduced" not in page
    # Asking again follows the one under way instead of starting another.
    owner.post(f"/runs/{finished_run.pk}/reproduce/")
    assert Run.objects.filter(reproduction_of=finished_run).count() == 1
    assert client_for(personas.outsider).get(
        f"/runs/{finished_run.pk}/reproductions/{copy.pk}/status.json").status_code == 404


def test_manifest_file_hash_is_the_uploaded_files(finished_run, samples_file):
    assert finished_run.manifest["generation"]["sha256"] == hashlib.sha256(
        samples_file.read_bytes()).hexdigest()


def test_reproducing_a_run_from_before_manifests(personas, finished_run,
                                                 django_capture_on_commit_callbacks):
    Run.objects.filter(pk=finished_run.pk).update(manifest={})
    finished_run.refresh_from_db()
    owner = client_for(personas.owner)
    assert 'id="manifest-empty"' in owner.get(f"/runs/{finished_run.pk}/").content.decode()
    copy = _reproduce(owner, finished_run, django_capture_on_commit_callbacks)
    report = reproduction_report(original=finished_run, reproduction=copy)
    assert report.reproduced, "the verdicts are compared all the same"
    assert not report.original_has_manifest
    assert {d.old for d in report.differences} == {None}
    assert "sandbox.backend" in {d.field for d in report.differences}
    page = owner.get(f"/runs/{finished_run.pk}/reproductions/{copy.pk}/").content.decode()
    assert 'id="no-original-manifest"' in page


@pytest.mark.django_db(transaction=True)
def test_runs_from_before_the_migration_get_an_empty_manifest(personas, humaneval):
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    before, after = [("runs", "0005_run_lifecycle")], [("runs", "0006_run_manifest")]
    executor = MigrationExecutor(connection)
    try:
        executor.migrate(before)
        old_apps = executor.loader.project_state(before).apps
        old_run = old_apps.get_model("runs", "Run").objects.create(
            owner_id=personas.owner.pk, team_id=personas.team.pk, name="from before manifests",
            dataset_id=humaneval.pk, file_name="a.jsonl", file_sha256="0" * 64, file_size=1,
            file_layout="completion", options={}, fingerprint="0" * 64, harness_version="1",
            status="finished",
        )
        executor = MigrationExecutor(connection)
        executor.migrate(after)
        new_apps = executor.loader.project_state(after).apps
        run = new_apps.get_model("runs", "Run").objects.get(pk=old_run.pk)
        assert (run.manifest, run.reproduction_of_id) == ({}, None)
    finally:
        executor = MigrationExecutor(connection)
        executor.loader.build_graph()
        executor.migrate(executor.loader.graph.leaf_nodes())


def test_workers_that_differ_are_shown(personas, finished_run):
    manifest = {**finished_run.manifest,
                "mixed": {"toolchains.python.version": ["Python 3.11.2", "Python 3.12.1"]}}
    Run.objects.filter(pk=finished_run.pk).update(manifest=manifest)
    page = client_for(personas.owner).get(f"/runs/{finished_run.pk}/").content.decode()
    assert 'id="manifest-mixed"' in page
    assert "<code>Python 3.12.1</code>" in page


def test_odd_file_names_stay_text(personas, finished_run):
    name = '<b>نموذج</b> "=1+2" \u202etxt.jsonl'
    manifest = {**finished_run.manifest,
                "generation": {**finished_run.manifest["generation"], "name": name}}
    Run.objects.filter(pk=finished_run.pk).update(file_name=name, manifest=manifest)
    owner = client_for(personas.owner)
    page = owner.get(f"/runs/{finished_run.pk}/").content.decode()
    assert "<b>نموذج</b>" not in page
    assert "&lt;b&gt;نموذج&lt;/b&gt;" in page
    response = owner.get(f"/runs/{finished_run.pk}/manifest.json")
    assert response["Content-Disposition"] == (
        f'attachment; filename="run-{finished_run.pk}-manifest.json"')
    assert json.loads(response.content)["manifest"]["generation"]["name"] == name


def test_a_manifest_that_cannot_be_built_fails_nothing(
        personas, humaneval, samples_file, token_client, monkeypatch,
        django_capture_on_commit_callbacks):
    def broken(**kwargs):
        raise RuntimeError("no version here")

    monkeypatch.setattr("webapp.runs.worker.manifests.build_manifest", broken)
    run = _evaluated(token_client(personas.owner), samples_file,
                     django_capture_on_commit_callbacks)
    assert run.done_count == 4
    assert "no version here" in run.manifest["error"]
    page = client_for(personas.owner).get(f"/runs/{run.pk}/").content.decode()
    assert "RuntimeError: no version here" in page
