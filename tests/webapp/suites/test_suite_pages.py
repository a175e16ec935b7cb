"""The suite pages and the suite API: the grid, its parameters, the multi-file upload
through a browser form and through one API request, attaching runs, and who gets a 404."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.webapp.suites.conftest import canonical_records
from tests.webapp.support import WRONG_0, client_for, write_jsonl
from webapp.runs.models import Run
from webapp.suites.models import Suite, SuiteRun
from webapp.suites.services import suite_create, suite_upload

pytestmark = pytest.mark.django_db


@pytest.fixture
def filled_suite(personas, suite, canonical_files, django_capture_on_commit_callbacks) -> Suite:
    with django_capture_on_commit_callbacks(execute=True):
        outcome = suite_upload(user=personas.owner, suite=suite, files=canonical_files())
    assert outcome.created
    return suite


def _files_and_datasets(tmp_path: Path, suite_variants, codes, *, bad: str = ""):
    """Open handles of canonical files for the multipart body, with their dataset keys."""
    handles, keys = [], []
    for code in codes:
        records = canonical_records(suite_variants[code])
        if code == bad:
            records.append({"task_id": "HumanEval/0", "completion": WRONG_0, "oops": 1})
            records.append({"task_id": "HumanEval/0"})
        path = write_jsonl(tmp_path / f"{code}.jsonl", records)
        handles.append(path.open("rb"))
        keys.append(suite_variants[code].key)
    return handles, keys


def test_the_grid_shows_every_problem_and_variant_with_links(personas, filled_suite):
    response = client_for(personas.teammate).get(filled_suite.get_absolute_url())
    assert response.status_code == 200
    html = response.content.decode()
    grid = response.context["grid"]
    assert [column.dataset.natural_language for column in grid.columns] == ["en", "ru", "ar"]
    assert [row.task_id for row in grid.rows] == ["HumanEval/0", "HumanEval/1", "HumanEval/2"]
    for column in grid.columns:
        assert f'href="/runs/{column.run.pk}/samples/?task=HumanEval/0"' in html
    assert 'id="grid-definition"' in html
    assert "highest minus the lowest" in html
    assert 'id="legend"' in html
    assert 'id="all-or-nothing"' not in html
    scores = html.split('id="variant-scores"')[1].split("</section>")[0]
    assert scores.count("[1.0000, 1.0000]") == 3  # pass@1 with its interval, per variant
    if response.context["defect_aware"]:
        assert scores.count('class="defect-aware') == 3
    assert response.context["sort_state"] == "disagreement:desc"
    assert f'href="/suites/{filled_suite.pk}/fidelity/"' in html


def test_grid_parameters_are_checked(personas, filled_suite):
    client = client_for(personas.owner)
    url = filled_suite.get_absolute_url()
    assert client.get(url, {"group": "programming", "sort": "task", "order": "asc"}
                      ).status_code == 200
    first = client.get(url)
    if first.context["defect_aware"]:
        # The three-way scores' choice is part of the permalink, as on the run page.
        assert client.get(url, {"scores": "excluding"}).status_code == 200
        assert client.get(url, {"scores": "best"}).status_code == 400
    for params in ({"sort": "best"}, {"group": "dataset"}, {"order": "up"}, {"colour": "1"}):
        response = client.get(url, params)
        assert response.status_code == 400, params
        assert next(iter(params)) in response.content.decode()


def test_unknown_and_hidden_suites_are_404(personas, filled_suite):
    assert client_for(personas.owner).get("/suites/999999/").status_code == 404
    outsider = client_for(personas.outsider)
    for url in (filled_suite.get_absolute_url(), f"/suites/{filled_suite.pk}/runs/"):
        assert outsider.get(url).status_code == 404
    assert outsider.post(f"/suites/{filled_suite.pk}/runs/attach/",
                         {"run": "1"}).status_code == 404
    assert client_for(None).get(filled_suite.get_absolute_url()).status_code == 404


def test_a_public_suite_shows_only_the_runs_the_viewer_may_see(personas, filled_suite):
    Suite.objects.filter(pk=filled_suite.pk).update(visibility=Run.Visibility.PUBLIC)
    runs = list(filled_suite.runs.order_by("pk"))
    Run.objects.filter(pk=runs[0].pk).update(visibility=Run.Visibility.PUBLIC)
    response = client_for(None).get(filled_suite.get_absolute_url())
    assert response.status_code == 200
    assert [c.run.pk for c in response.context["grid"].columns] == [runs[0].pk]
    for hidden in runs[1:]:
        assert f"/runs/{hidden.pk}/" not in response.content.decode()


def test_the_list_shows_visible_suites_only(personas, filled_suite):
    suite_create(owner=personas.owner, team=personas.team, name="secret", model_name="m",
                 visibility=Run.Visibility.PRIVATE)
    teammate = client_for(personas.teammate).get("/suites/").content.decode()
    assert "alpha suite" in teammate
    assert "secret" not in teammate
    assert "alpha suite" not in client_for(personas.outsider).get("/suites/").content.decode()
    assert client_for(None).get("/suites/", {"page": "x"}).status_code == 400


def test_new_suite_page_creates_a_suite(personas):
    client = client_for(personas.owner)
    assert client.get("/suites/new/").status_code == 200
    response = client.post("/suites/new/", {
        "name": "", "model_name": "beta-3b", "revision": "abc123",
        "decoding": '{"temperature": 0.8}', "team": "lab", "visibility": "team"})
    suite = Suite.objects.get()
    assert response.status_code == 302
    assert response["Location"] == f"/suites/{suite.pk}/runs/"
    assert (suite.name, suite.decoding) == ("beta-3b", {"temperature": 0.8})
    bad = client.post("/suites/new/", {"model_name": "x", "decoding": "[1]", "team": "lab"})
    assert bad.status_code == 400
    assert "JSON object" in bad.content.decode()


def test_upload_page_is_all_or_nothing_and_lists_each_files_problems(
        personas, suite, suite_variants, tmp_path, django_capture_on_commit_callbacks):
    client = client_for(personas.owner)
    page = client.get(f"/suites/{suite.pk}/runs/").content.decode()
    assert 'id="all-or-nothing"' in page
    assert "All or nothing" in page
    assert 'multiple' in page
    assert 'name="file"' in page
    handles, keys = _files_and_datasets(tmp_path, suite_variants, ["en", "ar"], bad="ar")
    response = client.post(f"/suites/{suite.pk}/runs/",
                           {"file": handles, "dataset": keys, "sanitize": ""})
    assert response.status_code == 400
    html = response.content.decode()
    assert "Nothing was created" in html
    assert 'data-file="ar.jsonl"' in html
    assert Run.objects.count() == 0
    handles, keys = _files_and_datasets(tmp_path, suite_variants, ["en", "ar"])
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(f"/suites/{suite.pk}/runs/", {"file": handles, "dataset": keys})
    assert response.status_code == 302, response.content.decode()[:2000]
    assert suite.runs.count() == 2


def test_upload_page_pairs_files_with_datasets(personas, suite, suite_variants, tmp_path):
    client = client_for(personas.owner)
    handles, keys = _files_and_datasets(tmp_path, suite_variants, ["en", "ar"])
    response = client.post(f"/suites/{suite.pk}/runs/", {"file": handles, "dataset": keys[:1]})
    assert response.status_code == 400
    assert "2 file(s) but 1 dataset(s)" in response.content.decode()
    handles, _ = _files_and_datasets(tmp_path, suite_variants, ["en"])
    response = client.post(f"/suites/{suite.pk}/runs/",
                           {"file": handles, "dataset": ["nope/python/xx"]})
    assert response.status_code == 400
    assert "no such dataset" in response.content.decode()
    # A teammate sees the suite but may not add to it.
    handles, keys = _files_and_datasets(tmp_path, suite_variants, ["en"])
    assert client_for(personas.teammate).post(
        f"/suites/{suite.pk}/runs/", {"file": handles, "dataset": keys}).status_code == 403
    assert Run.objects.count() == 0


def test_attach_and_remove_through_the_page(personas, suite, filled_suite):
    other = suite_create(owner=personas.owner, team=personas.team, name="second",
                         model_name="alpha-7b")
    runs = list(filled_suite.runs.order_by("pk"))
    client = client_for(personas.owner)
    response = client.post(f"/suites/{other.pk}/runs/attach/",
                           {"run": [str(runs[0].pk), str(runs[1].pk)]})
    assert response.status_code == 302
    assert set(other.runs.all()) == set(runs[:2])
    # A run the user cannot see is reported like one that does not exist.
    hidden = Run.objects.filter(pk=runs[2].pk)
    hidden.update(visibility=Run.Visibility.PRIVATE, owner=personas.teammate)
    client.post(f"/suites/{other.pk}/runs/attach/", {"run": str(runs[2].pk)})
    assert other.runs.count() == 2
    response = client.post(f"/suites/{other.pk}/runs/{runs[0].pk}/remove/")
    assert response.status_code == 302
    assert set(other.runs.all()) == {runs[1]}
    assert Run.objects.filter(pk=runs[0].pk).exists()


def test_api_creates_a_suite_and_uploads_several_files_in_one_request(
        personas, suite_variants, token_client, tmp_path, django_capture_on_commit_callbacks):
    client = token_client(personas.owner)
    created = client.post("/api/suites", {"model_name": "alpha-7b", "revision": "r1",
                                          "decoding": '{"top_p": 0.95}', "team": "lab"})
    assert created.status_code == 201, created.content
    suite_id = created.json()["id"]
    handles, keys = _files_and_datasets(tmp_path, suite_variants, ["en", "ru", "ar"], bad="ru")
    refused = client.post(f"/api/suites/{suite_id}/runs", {"file": handles, "dataset": keys})
    assert refused.status_code == 400
    body = refused.json()
    assert body["error"] == "invalid_files"
    assert body["created"] is False
    assert [f["ok"] for f in body["files"]] == [True, False, True]
    assert body["files"][1]["issues"][0]["line"] is not None
    assert Run.objects.count() == 0
    handles, keys = _files_and_datasets(tmp_path, suite_variants, ["en", "ru", "ar"])
    with django_capture_on_commit_callbacks(execute=True):
        accepted = client.post(f"/api/suites/{suite_id}/runs",
                               {"file": handles, "dataset": keys})
    assert accepted.status_code == 201, accepted.content
    assert [f["run"]["id"] is not None for f in accepted.json()["files"]] == [True] * 3
    summary = client.get(f"/api/suites/{suite_id}").json()
    assert [r["dataset"] for r in summary["runs"]] == keys
    assert all(r["pass_at_1"]["value"] == 1.0 for r in summary["runs"])


def test_api_refuses_outsiders_and_missing_tokens(personas, filled_suite, token_client):
    url = f"/api/suites/{filled_suite.pk}"
    assert client_for(None).get(url).status_code == 401
    assert client_for(None).post(url + "/runs", {"run": "1"}).status_code == 401
    outsider = token_client(personas.outsider)
    assert outsider.get(url).status_code == 404
    assert outsider.post(url + "/runs", {"run": "1"}).status_code == 404
    assert token_client(personas.owner).get("/api/suites/999999").status_code == 404
    assert token_client(personas.owner).head(url).status_code == 200  # as a plain GET view did
    assert token_client(personas.owner).put(url).status_code == 405
    teammate = token_client(personas.teammate)
    run = filled_suite.runs.first()
    answer = teammate.post(url + "/runs", {"run": str(run.pk)})
    assert answer.status_code == 403
    assert answer.json()["error"] == "forbidden"
    assert SuiteRun.objects.filter(suite=filled_suite).count() == 3


def test_hostile_names_are_escaped(personas, suite_variants, tmp_path):
    name = "<script>alert(1)</script> ‮ نموذج 🧪"
    suite = suite_create(owner=personas.owner, team=personas.team, name=name,
                         model_name="=HYPERLINK(\"x\")", decoding={"<b>": "</b>"})
    client = client_for(personas.owner)
    html = client.get(suite.get_absolute_url()).content.decode()
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&lt;b&gt;" in html
    path = write_jsonl(tmp_path / "<img src=x>.jsonl", [{"task_id": "HumanEval/0"}])
    with path.open("rb") as handle:
        response = client.post(f"/suites/{suite.pk}/runs/",
                               {"file": [handle], "dataset": [suite_variants["en"].key]})
    assert response.status_code == 400
    assert "<img src=x>" not in response.content.decode()


def test_too_many_files_are_refused(personas, suite, suite_variants, tmp_path):
    handles = [write_jsonl(tmp_path / f"f{i}.jsonl", [{"task_id": "HumanEval/0",
                                                       "completion": WRONG_0}]).open("rb")
               for i in range(13)]
    response = client_for(personas.owner).post(
        f"/suites/{suite.pk}/runs/",
        {"file": handles, "dataset": [suite_variants["en"].key] * 13})
    assert response.status_code == 400
    assert "At most 12 files at once; 13 were given." in response.content.decode()
    assert Run.objects.count() == 0
