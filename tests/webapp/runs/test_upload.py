"""Uploading a generations file, by the page and by `POST /api/runs`: the happy path, and
every kind of bad input, each with a clear message and nothing stored."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from tests.webapp.support import (
    RIGHT_0,
    client_for,
    files_left_by_uploads,
    small_samples,
    write_jsonl,
)
from webapp.runs.models import Chunk, Run, Sample
from webapp.runs.services.writes import plan_chunks
from webapp.runs.upload_checks.files import MAX_LINE_BYTES


def assert_nothing_stored() -> None:
    assert Run.objects.count() == 0
    assert Sample.objects.count() == 0
    assert Chunk.objects.count() == 0
    assert files_left_by_uploads() == []


def page_upload(client: Client, path: Path, dataset_id: int, **extra: Any) -> Any:
    with path.open("rb") as handle:
        return client.post("/runs/new/", {"file": handle, "dataset": str(dataset_id),
                                          "name": "my run", "model_name": "m",
                                          "visibility": "team", **extra})


def api_upload(client: Client, path: Path, dataset: str, **extra: Any) -> Any:
    with path.open("rb") as handle:
        return client.post("/api/runs", {"file": handle, "dataset": dataset, "name": "api run",
                                         **extra})


# -- the happy path ---------------------------------------------------------------------------
def test_page_upload_shows_coverage_then_creates_and_evaluates_the_run(
    personas, humaneval, samples_file, django_capture_on_commit_callbacks
):
    client = client_for(personas.owner)
    response = page_upload(client, samples_file, humaneval.pk, team="lab")
    assert response.status_code == 200
    assert response.templates[0].name == "runs/upload_confirm.html"
    coverage = response.context["coverage"]
    assert coverage["tasks_with_samples"] == 2
    assert coverage["samples_total"] == 4
    assert coverage["max_k"] == 2
    # Stored already, so that starting it is quick, but not queued and shown nowhere.
    staged = Run.objects.get()
    assert (staged.status, staged.samples_total) == (Run.Status.STAGED, 4)
    assert client.get(f"/runs/{staged.pk}/").status_code == 404
    assert client.get(f"/api/runs/{staged.pk}").status_code == 404
    assert f"/runs/{staged.pk}/" not in client.get("/runs/").content.decode()

    token = response.context["confirm"].initial["token"]
    with django_capture_on_commit_callbacks(execute=True):
        confirmed = client.post("/runs/new/confirm/", {"token": token})
    run = Run.objects.get()
    assert run.pk == staged.pk
    assert confirmed.status_code == 302
    assert confirmed["Location"] == f"/runs/{run.pk}/"
    assert run.team == personas.team
    assert run.samples_total == 4
    run.refresh_from_db()
    assert run.status == Run.Status.FINISHED
    assert (run.passed_count, run.failed_count, run.error_count) == (1, 1, 2)
    assert files_left_by_uploads() == []

    page = client.get(f"/runs/{run.pk}/")
    assert page.status_code == 200
    assert b"HumanEval/0" in page.content


def test_confirm_token_cannot_be_used_twice(personas, humaneval, samples_file,
                                            django_capture_on_commit_callbacks):
    client = client_for(personas.owner)
    token = page_upload(client, samples_file, humaneval.pk).context["confirm"].initial["token"]
    with django_capture_on_commit_callbacks(execute=True):
        client.post("/runs/new/confirm/", {"token": token})
    again = client.post("/runs/new/confirm/", {"token": token})
    assert again.status_code == 302
    assert again["Location"] == "/runs/new/"
    assert Run.objects.count() == 1


def test_forged_confirm_token_is_refused(personas, humaneval):
    client = client_for(personas.owner)
    response = client.post("/runs/new/confirm/", {"token": "forged:token"})
    assert response.status_code == 302
    assert_nothing_stored()


def test_api_upload_creates_the_run(personas, humaneval, samples_file, token_client,
                                    django_capture_on_commit_callbacks):
    client = token_client(personas.owner)
    with django_capture_on_commit_callbacks(execute=True):
        response = api_upload(client, samples_file, "humaneval/python/en",
                              model_name="m", model_meta='{"temperature": 0.8}')
    assert response.status_code == 201, response.content
    body = response.json()
    run = Run.objects.get(pk=body["id"])
    assert body["coverage"]["samples_total"] == 4
    assert body["websocket"] == f"/ws/runs/{run.pk}/"
    assert run.model_meta == {"temperature": 0.8}
    assert run.team.personal, "without a team, a run goes to the personal team"
    assert Sample.objects.filter(run=run).count() == 4


def test_api_dry_run_checks_without_storing(personas, humaneval, samples_file, token_client):
    response = api_upload(token_client(personas.owner), samples_file, str(humaneval.pk),
                          dry_run="1")
    assert response.status_code == 200
    assert response.json()["coverage"]["max_k"] == 2
    assert_nothing_stored()


def test_gzip_upload_is_accepted(personas, humaneval, tmp_path, token_client):
    path = write_jsonl(tmp_path / "samples.jsonl.gz", small_samples(), compress=True)
    response = api_upload(token_client(personas.owner), path, "humaneval/python/en")
    assert response.status_code == 201, response.content


# -- bad input --------------------------------------------------------------------------------
def _truncated_gzip(path: Path) -> Path:
    data = gzip.compress("".join(json.dumps(r) + "\n" for r in small_samples() * 50).encode())
    path.write_bytes(data[: len(data) // 2])
    return path


BAD_FILES: dict[str, tuple[str, Callable[[Path], Path], str, int | None]] = {
    # name: (file name, writer, expected issue code, expected line)
    "not_jsonl": ("samples.jsonl",
                  lambda p: (p.write_text('{"task_id": "HumanEval/0", "completion": "x"}\n'
                                          "this is not json\n"), p)[1],
                  "bad_json", 2),
    "truncated_gzip": ("samples.jsonl.gz", _truncated_gzip, "corrupt_gzip", None),
    "binary": ("samples.jsonl",
               lambda p: (p.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4), p)[1],
               "not_utf8", 1),
    "empty": ("samples.jsonl", lambda p: (p.write_bytes(b""), p)[1], "empty_file", None),
    "unknown_task_id": ("samples.jsonl",
                        lambda p: write_jsonl(p, [{"task_id": "HumanEval/0", "completion": RIGHT_0},
                                                  {"task_id": "HumanEval/999", "completion": "x"}]),
                        "unknown_task", 2),
    "cpp_for_python": ("samples.jsonl",
                       lambda p: write_jsonl(p, [{"task_id": "CPP/0",
                                                  "generation": "    return false;\n}"}]),
                       "language_mismatch", 1),
    "wrong_extension": ("samples.txt",
                        lambda p: write_jsonl(p, small_samples()), "bad_extension", None),
    "nul_character": ("samples.jsonl",
                      lambda p: write_jsonl(p, [{"task_id": "HumanEval/0",
                                                 "completion": "    return\u0000 1\n"}]),
                      "nul_character", 1),
    # JSON can spell a lone surrogate, which is no character: it cannot be stored or shown.
    "lone_surrogate_in_completion": ("samples.jsonl",
                                     lambda p: write_jsonl(p, [
                                         {"task_id": "HumanEval/0", "completion": RIGHT_0},
                                         {"task_id": "HumanEval/0",
                                          "completion": "    return True  # \ud83d\n"}]),
                                     "lone_surrogate", 2),
    "lone_surrogate_in_task_id": ("samples.jsonl.gz",
                                  lambda p: write_jsonl(p, [{"task_id": "HumanEval/0\udc00",
                                                             "completion": RIGHT_0}],
                                                        compress=True),
                                  "lone_surrogate", 1),
    "line_too_long": ("samples.jsonl",
                      lambda p: write_jsonl(p, [{"task_id": "HumanEval/0",
                                                 "completion": "#" * MAX_LINE_BYTES}]),
                      "line_too_long", 1),
}


@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_page_rejects_bad_file_with_its_line_and_stores_nothing(case, personas, humaneval,
                                                                tmp_path):
    name, writer, code, line = BAD_FILES[case]
    path = writer(tmp_path / name)
    response = page_upload(client_for(personas.owner), path, humaneval.pk)
    assert response.status_code == 400
    issues = response.context["issues"]
    matching = [issue for issue in issues if issue.code == code]
    assert matching, [issue.code for issue in issues]
    if line is not None:
        assert matching[0].line == line
        assert f"Line {line}" in matching[0].message or matching[0].code == "nul_character"
    assert b"Nothing was stored" in response.content
    assert_nothing_stored()


@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_api_rejects_bad_file_with_its_line_and_stores_nothing(case, personas, humaneval,
                                                               tmp_path, token_client):
    name, writer, code, line = BAD_FILES[case]
    path = writer(tmp_path / name)
    response = api_upload(token_client(personas.owner), path, "humaneval/python/en")
    assert response.status_code == 400
    body = response.json()
    assert body["error"] == "invalid_file"
    matching = [issue for issue in body["issues"] if issue["code"] == code]
    assert matching, body
    if line is not None:
        assert matching[0]["line"] == line
    assert_nothing_stored()


def test_file_over_the_size_limit_is_refused(personas, humaneval, samples_file, settings,
                                             token_client):
    settings.UPLOAD_MAX_BYTES = 64
    page = page_upload(client_for(personas.owner), samples_file, humaneval.pk)
    assert page.status_code == 413
    assert b"larger than this server accepts" in page.content
    api = api_upload(token_client(personas.owner), samples_file, "humaneval/python/en")
    assert api.status_code == 413
    assert api.json()["issues"][0]["code"] == "too_large"
    assert_nothing_stored()


def test_gzip_that_expands_past_the_limit_is_refused(personas, humaneval, tmp_path, settings,
                                                     token_client):
    settings.UPLOAD_MAX_EXPANDED_BYTES = 1000
    path = write_jsonl(tmp_path / "bomb.jsonl.gz", small_samples() * 20, compress=True)
    response = api_upload(token_client(personas.owner), path, "humaneval/python/en")
    assert response.status_code == 400
    assert response.json()["issues"][0]["code"] == "too_large"
    assert_nothing_stored()


def test_a_task_past_its_sample_limit_is_refused_and_what_was_stored_is_deleted(
        personas, humaneval, tmp_path, settings, token_client, monkeypatch):
    settings.UPLOAD_MAX_SAMPLES_PER_TASK = 30
    monkeypatch.setattr("webapp.runs.services.writes.STAGE_BATCH_ROWS", 4)  # rows were stored
    path = write_jsonl(tmp_path / "many.jsonl", [
        {"task_id": "HumanEval/0", "completion": f"    return {i}\n"} for i in range(100)])
    response = api_upload(token_client(personas.owner), path, "humaneval/python/en")
    assert response.status_code == 400
    (issue,) = response.json()["issues"]
    assert issue["code"] == "too_large"
    assert issue["message"].startswith("Line 31: more than 30 samples of HumanEval/0")
    assert "at most 30 samples per task, one run each" in issue["message"]
    assert_nothing_stored()


def test_an_error_after_stored_batches_leaves_nothing(personas, humaneval, tmp_path,
                                                      token_client, monkeypatch):
    monkeypatch.setattr("webapp.runs.services.writes.STAGE_BATCH_ROWS", 3)
    lines = [json.dumps({"task_id": f"HumanEval/{i % 7}", "completion": "    return 1\n"})
             for i in range(40)]
    path = tmp_path / "late.jsonl"
    path.write_text("\n".join([*lines, "{broken"]) + "\n")
    response = api_upload(token_client(personas.owner), path, "humaneval/python/en")
    assert response.status_code == 400
    assert [issue["line"] for issue in response.json()["issues"]] == [41]
    assert_nothing_stored()


def test_samples_stored_in_batches_keep_the_files_order_and_whole_task_chunks(
        personas, humaneval, tmp_path, token_client, settings, monkeypatch):
    """Tasks interleaved (each task's samples spread over the file): the chunks a task is
    given as it first comes are not the plan's, which only the end of the file tells."""
    settings.CHUNK_SAMPLES = 5
    monkeypatch.setattr("webapp.runs.services.writes.STAGE_BATCH_ROWS", 7)
    monkeypatch.setattr("webapp.runs.services.writes.STAGE_BATCH_CHARS", 300)
    counts = {f"HumanEval/{n}": 1 + n % 4 * 3 for n in range(9)}  # 1, 4, 7 or 10 each
    records = [{"task_id": task, "completion": f"    return {i}  # {task}\n"}
               for i in range(10) for task, count in counts.items() if i < count]
    path = write_jsonl(tmp_path / "interleaved.jsonl", records)
    response = api_upload(token_client(personas.owner), path, "humaneval/python/en")
    assert response.status_code == 201, response.content
    run = Run.objects.get(pk=response.json()["id"])
    rows = list(Sample.objects.filter(run=run).order_by("position")
                .values_list("position", "line", "task_id", "raw", "chunk__index"))
    assert [(p, line, t, raw) for p, line, t, raw, _ in rows] == [
        (i, i + 1, r["task_id"], r["completion"]) for i, r in enumerate(records)]
    plan = plan_chunks(counts.items(), target=5)
    assert {task: chunk for _p, _l, task, _r, chunk in rows} == {
        task: i for i, tasks in enumerate(plan) for task in tasks}
    chunks = list(Chunk.objects.filter(run=run).order_by("index")
                  .values_list("index", "sample_count"))
    assert chunks == [(i, sum(counts[t] for t in tasks)) for i, tasks in enumerate(plan)]
    assert (run.samples_total, run.chunks_total) == (len(records), len(plan))


def test_duplicate_upload_links_to_the_existing_run(personas, humaneval, samples_file,
                                                    token_client):
    client = token_client(personas.owner)
    first = api_upload(client, samples_file, "humaneval/python/en")
    assert first.status_code == 201
    again = api_upload(client, samples_file, "humaneval/python/en")
    assert again.status_code == 409
    assert again.json()["run"]["url"] == f"/runs/{first.json()['id']}/"
    page = page_upload(client_for(personas.owner), samples_file, humaneval.pk)
    assert page.status_code == 409
    assert f'href="/runs/{first.json()["id"]}/"'.encode() in page.content
    assert Run.objects.count() == 1
    assert Sample.objects.count() == 4


def test_a_duplicate_is_not_stored_again(personas, humaneval, samples_file, token_client,
                                         monkeypatch):
    client = token_client(personas.owner)
    assert api_upload(client, samples_file, "humaneval/python/en").status_code == 201

    def refuse(*_args: Any, **_kwargs: Any) -> None:
        raise AssertionError("the samples of a duplicate were stored")

    monkeypatch.setattr("webapp.runs.services.writes._insert_samples", refuse)
    assert api_upload(client, samples_file, "humaneval/python/en").status_code == 409
    assert page_upload(client_for(personas.owner), samples_file, humaneval.pk,
                       team="lab").status_code == 409
    assert Run.objects.count() == 1


def test_same_file_with_other_options_is_not_a_duplicate(personas, humaneval, samples_file,
                                                         token_client):
    client = token_client(personas.owner)
    assert api_upload(client, samples_file, "humaneval/python/en").status_code == 201
    other = api_upload(client, samples_file, "humaneval/python/en", sanitize="true")
    assert other.status_code == 201
    assert Run.objects.count() == 2


def test_duplicate_of_an_invisible_run_is_not_revealed(personas, humaneval, samples_file,
                                                       token_client):
    assert api_upload(token_client(personas.owner), samples_file,
                      "humaneval/python/en").status_code == 201
    response = api_upload(token_client(personas.outsider), samples_file, "humaneval/python/en")
    assert response.status_code == 201, "an outsider cannot learn of the owner's run"


def test_upload_page_needs_csrf_token(personas, humaneval, samples_file):
    client = Client(enforce_csrf_checks=True)
    client.force_login(personas.owner)
    response = page_upload(client, samples_file, humaneval.pk)
    assert response.status_code == 403
    assert_nothing_stored()


def test_upload_page_needs_sign_in(humaneval, samples_file):
    response = page_upload(Client(), samples_file, humaneval.pk)
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")
    assert_nothing_stored()


def test_upload_to_a_team_the_user_is_not_in_is_refused(personas, humaneval, samples_file,
                                                        token_client):
    response = api_upload(token_client(personas.outsider), samples_file, "humaneval/python/en",
                          team="lab")
    assert response.status_code == 400
    assert "team" in response.json()["fields"]
    assert_nothing_stored()


def test_unknown_dataset_is_refused(personas, humaneval, samples_file, token_client):
    response = api_upload(token_client(personas.owner), samples_file, "nope/python/en")
    assert response.status_code == 400
    assert "dataset" in response.json()["fields"]
    assert_nothing_stored()


def test_bad_model_metadata_is_refused(personas, humaneval, samples_file, token_client):
    response = api_upload(token_client(personas.owner), samples_file, "humaneval/python/en",
                          model_meta="[1, 2]")
    assert response.status_code == 400
    assert "model_meta" in response.json()["fields"]
    assert_nothing_stored()


def test_failed_run_creation_leaves_nothing(personas, humaneval, samples_file, token_client,
                                            monkeypatch):
    def explode(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("disk full")

    monkeypatch.setattr("webapp.runs.services.writes._insert_samples", explode)
    with pytest.raises(RuntimeError):
        api_upload(token_client(personas.owner), samples_file, "humaneval/python/en")
    assert_nothing_stored()


@pytest.mark.parametrize("text", [
    "\u202e\u2066 reversed \u2069\u202c",  # right-to-left override and isolates
    "\U0001F600 \u2028\u2029",  # an emoji (a surrogate pair in JSON) and line separators
    "x" * (1024 * 1024),  # a single line of over a megabyte
])
def test_odd_but_valid_text_is_accepted_and_stored_as_is(personas, humaneval, tmp_path,
                                                         token_client, text):
    completion = f"    return False  # {text}\n"
    path = write_jsonl(tmp_path / "samples.jsonl", [{"task_id": "HumanEval/0",
                                                     "completion": completion}])
    response = api_upload(token_client(personas.owner), path, "humaneval/python/en",
                          sanitize="false")
    assert response.status_code == 201, response.content
    assert Sample.objects.get(run_id=response.json()["id"]).raw == completion
    page = page_upload(client_for(personas.teammate), path, humaneval.pk, sanitize="")
    assert page.status_code == 200


def test_lone_surrogate_made_by_the_program_is_stored_escaped(
    personas, humaneval, tmp_path, token_client, django_capture_on_commit_callbacks
):
    path = write_jsonl(tmp_path / "samples.jsonl", [
        {"task_id": "HumanEval/0", "completion": "    raise ValueError('bad \\ud800')\n"}])
    with django_capture_on_commit_callbacks(execute=True):
        response = api_upload(token_client(personas.owner), path, "humaneval/python/en")
    assert response.status_code == 201, response.content
    run = Run.objects.get(pk=response.json()["id"])
    assert run.status == Run.Status.FINISHED, run.error
    sample = run.samples.get()
    assert sample.message == "bad \\ud800"
    page = client_for(personas.owner).get(f"/runs/{run.pk}/samples/{sample.pk}/")
    assert page.status_code == 200
    assert "bad \\ud800" in page.content.decode()


def test_stored_samples_are_what_the_model_would_store(
    personas, humaneval, token_client, tmp_path, django_capture_on_commit_callbacks,
):
    # run_create inserts samples with one executemany instead of a model object each: every
    # column must read back as a bulk_create of the same values would have stored it
    # (defaults, JSON, NULLs), odd text included.
    records = [
        {"task_id": "HumanEval/0", "completion": "```python\n    return True\n```"},  # notes
        {"task_id": "HumanEval/1", "completion": "    return ['\u202e', '\u0661', '\ud7ff']\n"},
        {"task_id": "HumanEval/0", "completion": "    return 'x' * 3\n"},
    ]
    path = write_jsonl(tmp_path / "odd.jsonl", records)
    client = token_client(personas.owner)
    with path.open("rb") as handle, django_capture_on_commit_callbacks(execute=False):
        response = client.post("/api/runs", {"file": handle, "dataset": "humaneval/python/en",
                                              "sanitize": "true"})
    assert response.status_code == 201, response.content
    run = Run.objects.get(pk=response.json()["id"])
    # Plain dicts, so the loop below may pick fields by name.
    stored: list[dict[str, Any]] = [
        dict(row) for row in Sample.objects.filter(run=run).order_by("position").values()]
    assert [row["position"] for row in stored] == [0, 1, 2]
    # The same values through the model, into a copy of the run.
    twin = Run.objects.get(pk=run.pk)
    twin.pk = None
    twin.fingerprint = "twin"
    twin.save()
    given = ("chunk_id", "variant_id", "task_id", "source_task_id", "index", "position",
             "line", "raw", "completion", "sanitized", "notes", "is_full_program")
    Sample.objects.bulk_create(Sample(run=twin, **{name: row[name] for name in given})
                               for row in stored)
    expected = list(Sample.objects.filter(run=twin).order_by("position").values())
    for mine, model in zip(stored, expected, strict=True):
        assert {k: v for k, v in mine.items() if k not in ("id", "run_id")} == {
            k: v for k, v in model.items() if k not in ("id", "run_id")}
    assert stored[0]["notes"]
    assert stored[0]["sanitized"]
    assert Sample.objects.filter(run=run, result__isnull=True, finished_at__isnull=True,
                                 seq__isnull=True, status="pending").count() == 3
