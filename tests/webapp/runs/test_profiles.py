"""Harness profiles in the web app: the upload's choice and its default per dataset, the
profiles page, "Compare harness profiles" on a run page (a Celery task, eager here, that
really runs programs in the `none` sandbox), the sample page's verdicts per profile, and
who may ask for what."""

from __future__ import annotations

import re
import shutil
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from evaluator.datasets import load_dataset
from evaluator.profiles import PROFILES
from tests.webapp.factories import RunFactory
from tests.webapp.support import CRASH_1, RIGHT_0, client_for, files_left_by_uploads, write_jsonl
from webapp.benchmarks.services import dataset_import
from webapp.runs.messaging.dispatch import QueuedWork
from webapp.runs.models import ProfileComparison, ProfileScore, Run, RunMetric, Sample
from webapp.runs.worker import profile_comparison as rescoring
from webapp.runs.worker import recovery
from webapp.runs.worker.recovery import runs_sweep
from webapp.runs.worker.tasks import compare_profiles

# Right, then a top-level line that fails when the module is run: bigcode's stop sequence
# "\nprint" and CodeGeeX's cut at the first line that is not indented both remove it.
RIGHT_THEN_JUNK = RIGHT_0 + "print(undefined_junk)\n"


def _upload(client, path: Path, capture, **fields) -> Run:
    with path.open("rb") as handle, capture(execute=True):
        response = client.post("/api/runs", {"file": handle, "dataset": "humaneval/python/en",
                                             "team": "lab", **fields})
    assert response.status_code == 201, response.content
    run = Run.objects.get(pk=response.json()["id"])
    assert run.status == Run.Status.FINISHED, run.error
    return run


def _compare(client, run: Run, capture):
    with capture(execute=True):
        response = client.post(f"/runs/{run.pk}/profiles/compare/")
    assert response.status_code == 302, response.content
    return response


@pytest.fixture
def junk_run(personas, humaneval, tmp_path, token_client,
             django_capture_on_commit_callbacks) -> Run:
    path = write_jsonl(tmp_path / "junk.jsonl", [
        {"task_id": "HumanEval/0", "completion": RIGHT_0},
        {"task_id": "HumanEval/0", "completion": RIGHT_THEN_JUNK},
        {"task_id": "HumanEval/1", "completion": CRASH_1},
        {"task_id": "HumanEval/1", "completion": CRASH_1},
    ])
    return _upload(token_client(personas.owner), path, django_capture_on_commit_callbacks)


# -- upload ----------------------------------------------------------------------------------
def test_upload_defaults_to_the_datasets_own_reference_harness(
    personas, humaneval, humaneval_x_python, tmp_path, token_client,
    django_capture_on_commit_callbacks,
):
    client = token_client(personas.owner)
    path = write_jsonl(tmp_path / "a.jsonl", [{"task_id": "HumanEval/0", "completion": RIGHT_0}])
    run = _upload(client, path, django_capture_on_commit_callbacks)
    assert run.options["profile"] == "humaneval"
    assert run.profile_name == "humaneval"
    assert (Sample.objects.get(run=run).result or {}).get("profile") == "humaneval"
    x_path = write_jsonl(tmp_path / "x.jsonl", [{"task_id": "Python/0", "generation": RIGHT_0}])
    with x_path.open("rb") as handle, django_capture_on_commit_callbacks(execute=True):
        response = client.post("/api/runs", {"file": handle,
                                             "dataset": humaneval_x_python.key})
    assert response.status_code == 201, response.content
    assert response.json()["profile"] == "codegeex"
    x_run = Run.objects.get(pk=response.json()["id"])
    assert x_run.options["profile"] == "codegeex"
    assert (Sample.objects.get(run=x_run).result or {}).get("profile") == "codegeex"


def test_upload_takes_the_profile_asked_for(personas, humaneval, tmp_path, token_client,
                                            django_capture_on_commit_callbacks):
    path = write_jsonl(tmp_path / "a.jsonl", [{"task_id": "HumanEval/0", "completion": RIGHT_0}])
    run = _upload(token_client(personas.owner), path, django_capture_on_commit_callbacks,
                  profile="multipl-e")
    assert run.options["profile"] == "multipl-e"
    # MultiPL-E gives a program 15 s: the run never stops one sooner than its profile would.
    assert run.options["timeout_seconds"] >= 15


def test_the_same_file_under_another_profile_is_not_a_duplicate(
    personas, humaneval, tmp_path, token_client, django_capture_on_commit_callbacks,
):
    client = token_client(personas.owner)
    path = write_jsonl(tmp_path / "a.jsonl", [{"task_id": "HumanEval/0", "completion": RIGHT_0}])
    _upload(client, path, django_capture_on_commit_callbacks)
    with path.open("rb") as handle:
        again = client.post("/api/runs", {"file": handle, "dataset": "humaneval/python/en"})
    assert again.status_code == 409
    _upload(client, path, django_capture_on_commit_callbacks, profile="strict")
    assert Run.objects.count() == 2


def test_unknown_profile_is_refused_with_the_list_of_profiles(personas, humaneval, samples_file,
                                                              token_client):
    with samples_file.open("rb") as handle:
        response = token_client(personas.owner).post(
            "/api/runs", {"file": handle, "dataset": "humaneval/python/en",
                          "profile": "human-eval-ish"})
    assert response.status_code == 400
    (error,) = response.json()["fields"]["profile"]
    assert "Unknown harness profile 'human-eval-ish'" in error["message"]
    assert ", ".join(PROFILES) in error["message"]
    with samples_file.open("rb") as handle:
        page = client_for(personas.owner).post("/runs/new/", {
            "file": handle, "dataset": str(humaneval.pk), "visibility": "team",
            "profile": "nope"})
    assert page.status_code == 400
    assert "Unknown harness profile &#x27;nope&#x27;; choose one of" in page.content.decode()
    assert Run.objects.count() == 0
    assert files_left_by_uploads() == []


def test_upload_form_offers_the_profiles_and_says_which_is_the_default(personas, humaneval):
    page = client_for(personas.owner).get("/runs/new/").content.decode()
    assert 'name="profile"' in page
    assert "The dataset&#x27;s own reference harness (default)" in page
    for profile in PROFILES.values():
        assert f'<option value="{profile.name}">' in page
    assert "humaneval → <strong>humaneval</strong> (openai/human-eval, reference-exact)" in page
    assert "any other dataset → <strong>strict</strong>" in page
    assert 'href="/profiles/"' in page


def test_upload_page_keeps_the_profile_through_the_confirmation(personas, humaneval,
                                                                samples_file):
    client = client_for(personas.owner)
    with samples_file.open("rb") as handle:
        response = client.post("/runs/new/", {"file": handle, "dataset": str(humaneval.pk),
                                              "visibility": "team", "profile": "bigcode"})
    assert response.status_code == 200
    page = response.content.decode()
    assert re.search(r'id="confirm-profile"><a href="/profiles/#profile-bigcode">bigcode 1', page)
    token = response.context["confirm"].initial["token"]
    confirmed = client.post("/runs/new/confirm/", {"token": token})
    assert confirmed.status_code == 302
    assert Run.objects.get().options["profile"] == "bigcode"


# -- the profiles page -----------------------------------------------------------------------
def test_profiles_page_shows_every_profile_point_by_point(db):
    page = client_for(None).get("/profiles/")
    assert page.status_code == 200
    text = page.content.decode()
    assert "<title>Harness profiles" in text
    for profile in PROFILES.values():
        assert f'id="profile-{profile.name}"' in text
        assert f'href="#profile-{profile.name}"' in text
        for point in profile.points:
            # Escaped as the page escapes it.
            assert point.text.replace("'", "&#x27;").replace('"', "&quot;")[:60] in text
    codegeex = text[text.index('id="profile-codegeex"'):text.index('id="profile-evalplus"')]
    assert "The default for humaneval-x" in codegeex
    assert "without <code>-ea</code>" in codegeex


# -- comparing a run's profiles end to end ---------------------------------------------------
def test_compare_shows_pass_at_k_per_profile_and_the_problems_that_depend_on_it(
    personas, junk_run, django_capture_on_commit_callbacks,
):
    owner = client_for(personas.owner)
    before = owner.get(junk_run.get_absolute_url()).content.decode()
    assert 'id="compare-profiles-form"' in before
    assert "Judged under" in before
    assert "humaneval 1" in before
    response = _compare(owner, junk_run, django_capture_on_commit_callbacks)
    assert response["Location"].endswith("#harness-profiles")

    comparison = ProfileComparison.objects.get(run=junk_run)
    assert comparison.status == ProfileComparison.Status.DONE, comparison.error
    assert comparison.baseline == "humaneval"
    scores = {s.profile: s for s in comparison.scores.all()}
    assert set(scores) == set(PROFILES)
    pass1 = {name: score.pass_at_k[0]["value"] for name, score in scores.items()}
    # HumanEval/0: one of two passes as written, both once the junk line is cut.
    assert pass1["humaneval"] == 0.25
    assert pass1["strict"] == 0.25
    assert pass1["bigcode"] == 0.5
    assert pass1["codegeex"] == 0.5
    # The run's own profile gives its headline numbers exactly, interval included.
    headline = RunMetric.objects.get(run=junk_run, k=1)
    own = scores["humaneval"].pass_at_k[0]
    assert (own["value"], own["low"], own["high"]) == pytest.approx(
        (headline.value, headline.low, headline.high))
    # Only the sample whose text bigcode cuts was run again; the rest were re-judged.
    assert (scores["bigcode"].executed, scores["bigcode"].rejudged) == (1, 3)
    assert "post-processing" in next(iter(scores["bigcode"].reasons))
    assert scores["strict"].executed == 0
    assert scores["bigcode"].changed == 1
    assert scores["strict"].changed == 0
    (dependent,) = comparison.dependent
    assert dependent["task_id"] == "HumanEval/0"
    assert dependent["passed"]["bigcode"] == 2
    assert dependent["passed"]["humaneval"] == 1
    assert "undefined_junk" in dependent["reason"]

    page = owner.get(junk_run.get_absolute_url()).content.decode()
    start = page.index('id="harness-profiles"')
    section = page[start:page.index("</section>", start)]
    assert 'id="profile-scores"' in section
    bigcode_row = section[section.index('id="profile-row-bigcode"'):]
    assert "0.5000" in bigcode_row[:bigcode_row.index("</tr>")]
    humaneval_row = section[section.index('id="profile-row-humaneval"'):]
    humaneval_row = humaneval_row[:humaneval_row.index("</tr>")]
    assert "0.2500" in humaneval_row
    assert "this run's profile: its headline numbers" in humaneval_row
    assert re.search(r'id="profile-dependent-count"><strong>1</strong> problem gets', section)
    link = f'<a href="/runs/{junk_run.pk}/samples/?task=HumanEval%2F0">HumanEval/0</a>'
    assert link in section
    assert "passes under" in section
    assert "undefined_junk" in section

    body = owner.get(f"/api/runs/{junk_run.pk}").json()
    assert body["profile"]["name"] == "humaneval"
    assert body["profile"]["recorded"] is True
    api = body["profile_comparison"]
    assert api["status"] == "done"
    by_name = {p["name"]: p for p in api["profiles"]}
    assert by_name["bigcode"]["pass_at_k"][0]["value"] == 0.5
    assert by_name["humaneval"]["is_run_profile"] is True
    assert [d["task_id"] for d in api["dependent_problems"]] == ["HumanEval/0"]


@pytest.mark.skipif(shutil.which("g++") is None,
                    reason="g++ is not installed: the C++ comparison needs a C++ compiler")
def test_cpp_exit_zero_passes_under_multipl_e_and_is_an_error_under_strict(
    personas, fixtures_dir, tmp_path, token_client, django_capture_on_commit_callbacks,
):
    source = fixtures_dir / "datasets" / "multipl_e" / "humaneval-cpp.jsonl"
    dataset = dataset_import(loaded=load_dataset(path=source), source=str(source)).dataset
    # MultiPL-E's tests close the function themselves.
    path = write_jsonl(tmp_path / "cpp.jsonl", [
        {"task_id": "HumanEval_23_strlen", "completion": "    return string.size();\n"},
        {"task_id": "HumanEval_23_strlen", "completion": "    exit(0);\n"},
        {"task_id": "HumanEval_53_add", "completion": "    return x + y;\n"},
        {"task_id": "HumanEval_53_add", "completion": "    return x + y;\n"},
    ])
    client = token_client(personas.owner)
    with path.open("rb") as handle, django_capture_on_commit_callbacks(execute=True):
        response = client.post("/api/runs", {"file": handle, "dataset": dataset.key})
    assert response.status_code == 201, response.content
    run = Run.objects.get(pk=response.json()["id"])
    assert run.status == Run.Status.FINISHED, run.error
    assert run.profile_name == "multipl-e"
    assert run.passed_count == 4, list(run.samples.values_list("status", "message"))
    _compare(client_for(personas.owner), run, django_capture_on_commit_callbacks)
    comparison = ProfileComparison.objects.get(run=run)
    assert comparison.status == "done", comparison.error
    scores = {s.profile: s for s in comparison.scores.all()}
    assert scores["multipl-e"].pass_at_k[0]["value"] == 1.0
    assert scores["codegeex"].pass_at_k[0]["value"] == 1.0
    assert scores["strict"].pass_at_k[0]["value"] == 0.75
    assert all(score.executed == 0 for score in scores.values()), "C++ text is shared"
    (dependent,) = comparison.dependent
    assert dependent["task_id"] == "HumanEval/23"
    page = client_for(personas.owner).get(run.get_absolute_url()).content.decode()
    assert "0.7500" in page
    assert "1.0000" in page
    assert "passes under multipl-e, error under" in page


def test_sample_page_says_which_profile_judged_it_and_the_verdict_under_the_others(
    personas, junk_run,
):
    sample = junk_run.samples.get(task_id="HumanEval/0", index=1)
    assert sample.status == "error"
    page = client_for(personas.owner).get(sample.get_absolute_url()).content.decode()
    assert re.search(r'id="sample-profile"><a href="/profiles/#profile-humaneval">humaneval</a>'
                     r" judged it", page)

    def row(name: str) -> str:
        start = page.index(f'id="sample-profile-{name}"')
        return page[start:page.index("</tr>", start)]

    assert "judged it" in row("humaneval")
    assert "status-error" in row("strict")
    assert "status-error" in row("multipl-e")
    # bigcode runs another program for it (its stop sequence cuts the junk line).
    assert "not decidable from the stored facts" in row("bigcode")
    assert "post-processing changes this text" in row("bigcode")


# -- the task --------------------------------------------------------------------------------
def test_the_task_delivered_twice_stores_one_result(personas, junk_run,
                                                    django_capture_on_commit_callbacks):
    _compare(client_for(personas.owner), junk_run, django_capture_on_commit_callbacks)
    comparison = ProfileComparison.objects.get(run=junk_run)
    assert comparison.status == "done"
    assert compare_profiles(comparison.pk) == "skipped"
    assert compare_profiles.delay(comparison.pk).get() == "skipped"
    assert ProfileScore.objects.filter(comparison__run=junk_run).count() == len(PROFILES)
    assert ProfileComparison.objects.count() == 1


def test_a_delivery_while_another_holds_the_comparison_does_nothing(personas, junk_run):
    comparison = rescoring.profile_comparison_request(user=personas.owner, run=junk_run)
    claim = rescoring._claim(comparison.pk)
    assert claim
    assert compare_profiles(comparison.pk) == "skipped"
    assert not ProfileScore.objects.exists()
    comparison.refresh_from_db()
    assert (comparison.status, comparison.claim) == ("running", claim)


def test_a_comparison_whose_worker_died_is_taken_back_by_the_sweeper(personas, junk_run,
                                                                    monkeypatch):
    comparison = rescoring.profile_comparison_request(user=personas.owner, run=junk_run)
    assert rescoring._claim(comparison.pk)
    monkeypatch.setattr(recovery, "queued_work", lambda queues, **_: QueuedWork())
    assert runs_sweep().resent_comparisons == [], "its holder's lease is still running"
    ProfileComparison.objects.filter(pk=comparison.pk).update(
        lease_until=timezone.now() - timedelta(seconds=1))
    # Eager Celery: the comparison is sent again and computed at once.
    assert runs_sweep().resent_comparisons == [comparison.pk]
    comparison.refresh_from_db()
    assert comparison.status == "done"
    assert comparison.scores.count() == len(PROFILES)
    assert runs_sweep().resent_comparisons == []


def test_a_failed_comparison_says_why_and_can_be_asked_again(
    personas, junk_run, monkeypatch, django_capture_on_commit_callbacks,
):
    def broken(*args, **kwargs):
        raise RuntimeError("no sandbox here")

    monkeypatch.setattr(rescoring, "rescore", broken)
    owner = client_for(personas.owner)
    _compare(owner, junk_run, django_capture_on_commit_callbacks)
    failed = ProfileComparison.objects.get(run=junk_run)
    assert failed.status == "failed"
    assert "RuntimeError: no sandbox here" in failed.error
    page = owner.get(junk_run.get_absolute_url()).content.decode()
    assert re.search(r'id="profile-error" class="error" role="alert">[^<]*no sandbox here', page)
    assert "Compare harness profiles again" in page
    assert owner.get(f"/api/runs/{junk_run.pk}").json()["profile_comparison"]["status"] == (
        "failed")

    monkeypatch.undo()
    _compare(owner, junk_run, django_capture_on_commit_callbacks)
    again = ProfileComparison.objects.get(run=junk_run)
    assert again.pk != failed.pk
    assert again.status == "done"
    assert again.scores.count() == len(PROFILES)


def test_status_endpoint_gives_the_state_and_the_section(personas, junk_run):
    owner = client_for(personas.owner)
    empty = owner.get(f"/runs/{junk_run.pk}/profiles/").json()
    assert (empty["status"], empty["in_progress"]) == ("none", False)
    assert "Compare harness profiles" in empty["html"]
    # Sent to the broker, not yet taken by a worker: the page keeps polling.
    comparison = rescoring.profile_comparison_request(user=personas.owner, run=junk_run)
    ProfileComparison.objects.filter(pk=comparison.pk).update(dispatched_at=junk_run.created_at)
    queued = owner.get(f"/runs/{junk_run.pk}/profiles/").json()
    assert (queued["status"], queued["in_progress"]) == ("queued", True)
    assert 'id="profile-progress"' in queued["html"]
    assert 'data-in-progress="1"' in queued["html"]
    assert "compare-profiles-form" not in queued["html"], "no second request while queued"


# -- who may, and when -----------------------------------------------------------------------
def test_outsider_gets_404_from_the_profile_endpoints(personas, junk_run):
    outsider = client_for(personas.outsider)
    assert outsider.post(f"/runs/{junk_run.pk}/profiles/compare/").status_code == 404
    assert outsider.get(f"/runs/{junk_run.pk}/profiles/").status_code == 404
    assert not ProfileComparison.objects.exists()


def test_teammate_may_look_but_not_ask_and_a_team_owner_may(personas, humaneval,
                                                            django_capture_on_commit_callbacks):
    mine = RunFactory.create(owner=personas.owner, team=personas.team, dataset=humaneval,
                             options={"profile": "humaneval"})
    teammate = client_for(personas.teammate)
    assert teammate.post(f"/runs/{mine.pk}/profiles/compare/").status_code == 403
    assert teammate.get(f"/runs/{mine.pk}/profiles/").status_code == 200
    page = teammate.get(mine.get_absolute_url()).content.decode()
    assert 'id="harness-profiles"' in page
    assert "compare-profiles-form" not in page
    assert not ProfileComparison.objects.exists()
    theirs = RunFactory.create(owner=personas.teammate, team=personas.team, dataset=humaneval)
    with django_capture_on_commit_callbacks(execute=True):
        response = client_for(personas.owner).post(f"/runs/{theirs.pk}/profiles/compare/")
    assert response.status_code == 302
    assert ProfileComparison.objects.get(run=theirs).status == "done"


def test_anonymous_visitor_is_sent_to_sign_in(personas, humaneval):
    run = RunFactory.create(owner=personas.owner, team=personas.team, dataset=humaneval,
                            visibility=Run.Visibility.PUBLIC)
    response = client_for(None).post(f"/runs/{run.pk}/profiles/compare/")
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")
    page = client_for(None).get(run.get_absolute_url()).content.decode()
    assert "compare-profiles-form" not in page


@pytest.mark.parametrize("status", [Run.Status.QUEUED, Run.Status.RUNNING,
                                    Run.Status.AGGREGATING])
def test_a_run_still_going_is_refused_with_a_clear_message(personas, humaneval, status):
    run = RunFactory.create(owner=personas.owner, team=personas.team, dataset=humaneval,
                            status=status)
    response = client_for(personas.owner).post(f"/runs/{run.pk}/profiles/compare/", follow=True)
    assert response.status_code == 200
    assert "The run is still going: its harness profiles can be compared once it has finished" in (
        response.content.decode())
    assert not ProfileComparison.objects.exists()


def test_a_cancelled_run_is_refused(personas, humaneval):
    run = RunFactory.create(owner=personas.owner, team=personas.team, dataset=humaneval,
                            status=Run.Status.CANCELLED)
    response = client_for(personas.owner).post(f"/runs/{run.pk}/profiles/compare/", follow=True)
    assert "only a finished run&#x27;s harness profiles can be compared" in (
        response.content.decode())
    assert not ProfileComparison.objects.exists()


def test_a_second_request_while_one_is_in_progress_is_refused(personas, junk_run):
    first = rescoring.profile_comparison_request(user=personas.owner, run=junk_run)
    assert rescoring._claim(first.pk)
    response = client_for(personas.owner).post(f"/runs/{junk_run.pk}/profiles/compare/",
                                               follow=True)
    assert "already being compared" in response.content.decode()
    assert ProfileComparison.objects.get().pk == first.pk


# -- runs from before profiles ---------------------------------------------------------------
def test_a_run_from_before_profiles_is_shown_as_strict_and_can_be_compared(
    personas, junk_run, django_capture_on_commit_callbacks,
):
    # What such a run stored: no profile in its options, no profile or facts in its results.
    options = {k: v for k, v in junk_run.options.items() if not k.startswith("profile")}
    Run.objects.filter(pk=junk_run.pk).update(options=options)
    for sample in Sample.objects.filter(run=junk_run):
        assert sample.result is not None
        legacy = {k: v for k, v in sample.result.items() if k not in ("profile", "facts")}
        Sample.objects.filter(pk=sample.pk).update(result=legacy)
    junk_run.refresh_from_db()
    owner = client_for(personas.owner)
    page = owner.get(junk_run.get_absolute_url()).content.decode()
    assert "made before profiles" in page
    assert "the strict rules are what judged it" in page
    assert owner.get(f"/api/runs/{junk_run.pk}").json()["profile"] == {
        "name": "strict", "version": "1", "title": PROFILES["strict"].title,
        "recorded": False, "url": "/profiles/#profile-strict"}
    sample = junk_run.samples.get(task_id="HumanEval/0", index=1)
    sample_page = owner.get(sample.get_absolute_url()).content.decode()
    assert "evaluated before profiles, by the strict rules" in sample_page
    assert "the result records no execution facts" in sample_page

    _compare(owner, junk_run, django_capture_on_commit_callbacks)
    comparison = ProfileComparison.objects.get(run=junk_run)
    assert comparison.status == "done", comparison.error
    assert comparison.baseline == "strict"
    scores = {s.profile: s for s in comparison.scores.all()}
    # Without recorded facts every sample is run again under every other profile.
    assert scores["humaneval"].executed == 4
    assert scores["strict"].pass_at_k[0]["value"] == 0.25
    assert scores["bigcode"].pass_at_k[0]["value"] == 0.5


def test_a_run_under_an_earlier_version_of_a_profile_is_not_shown_today_s_rules(personas,
                                                                                   humaneval):
    """evalplus 2 gave each group of inputs its own limit; a run judged by evalplus 1 must
    not read as judged by version 2, nor show version 2's points as its own."""
    today = PROFILES["evalplus"]
    run = RunFactory.create(owner=personas.owner, team=personas.team, dataset=humaneval,
                            options={"profile": "evalplus", "profile_version": "1"})
    owner = client_for(personas.owner)
    page = owner.get(run.get_absolute_url()).content.decode()
    assert "evalplus 1" in page
    assert f"an earlier version of evalplus {today.version}" in page
    assert today.points
    assert not any(point.text in page for point in today.points if point.aspect == "limits")
    profile = owner.get(f"/api/runs/{run.pk}").json()["profile"]
    assert (profile["name"], profile["version"]) == ("evalplus", "1")
    current = RunFactory.create(owner=personas.owner, team=personas.team, dataset=humaneval,
                                options={"profile": "evalplus",
                                         "profile_version": today.version})
    page = owner.get(current.get_absolute_url()).content.decode()
    assert f"evalplus {today.version}" in page
    assert "an earlier version" not in page


def test_a_run_under_a_profile_this_server_no_longer_knows_still_shows(personas, humaneval):
    run = RunFactory.create(owner=personas.owner, team=personas.team, dataset=humaneval,
                            options={"profile": "retired", "profile_version": "3"})
    owner = client_for(personas.owner)
    page = owner.get(run.get_absolute_url())
    assert page.status_code == 200
    assert "retired 3" in page.content.decode()
    assert owner.get(f"/api/runs/{run.pk}").json()["profile"]["name"] == "retired"
    response = owner.post(f"/runs/{run.pk}/profiles/compare/", follow=True)
    assert "a profile this server no longer knows" in response.content.decode()
    assert not ProfileComparison.objects.exists()
