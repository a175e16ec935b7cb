"""Text that once gave a 500 (issue 23) is refused with a 400, or a form error, that names
the field: lone surrogates, NUL, JSON nested 100,000 deep, and yes/no fields given
something else. The cases run on the test database of the run (SQLite by default), and
`test_hostile_text_on_postgresql` runs this file again on PostgreSQL.

The shared checks themselves (`webapp.textfields`) are tested at the end.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.test import Client

from tests.webapp.support import client_for
from webapp.runs.models import Run
from webapp.suites.models import Suite
from webapp.teams.models import Team
from webapp.textfields import (
    JSON_DEPTH_MAX,
    flag_from_text,
    json_from_text,
    json_object_from_text,
    text_problem,
)

DEEP = 100_000
HOSTILE_JSON = {
    "lone surrogate": '{"a": "\\ud800"}',
    "NUL in a value": '{"a": "\\u0000"}',
    "NUL in a key": '{"\\u0000": 1}',
    "nested 100,000 deep": '{"a": ' + "[" * DEEP + "]" * DEEP + "}",
}
"""The JSON objects typed as text that the probe found, as a client sends them."""

Post = Callable[[str, str], Any]


def _page_errors(response: Any) -> dict[str, Any]:
    assert response.status_code == 400, response.content[:500]
    return dict(response.context["form"].errors)


def _api_errors(response: Any) -> dict[str, Any]:
    assert response.status_code == 400, response.content[:500]
    body = response.json()
    assert body["error"] == "invalid_request", body
    return dict(body["fields"])


@pytest.fixture
def owner_page(personas) -> Client:
    return client_for(personas.owner)


@pytest.fixture
def owner_api(personas, token_client) -> Client:
    return token_client(personas.owner)


@pytest.fixture
def upload_page(owner_page, humaneval, samples_file) -> Callable[..., Any]:
    def post(**fields: str) -> Any:
        with samples_file.open("rb") as handle:
            return owner_page.post("/runs/new/", {
                "file": handle, "dataset": str(humaneval.pk), "name": "r", "model_name": "m",
                "visibility": "team", **fields})

    return post


@pytest.fixture
def upload_api(owner_api, humaneval, samples_file) -> Callable[..., Any]:
    def post(**fields: str) -> Any:
        with samples_file.open("rb") as handle:
            return owner_api.post("/api/runs", {
                "file": handle, "dataset": "humaneval/python/en", **fields})

    return post


def _nothing_made() -> None:
    assert not Run.objects.exists()
    assert not Suite.objects.exists()


# -- JSON typed into a field ----------------------------------------------------------------

@pytest.mark.parametrize("text", HOSTILE_JSON.values(), ids=HOSTILE_JSON.keys())
def test_upload_page_names_the_model_metadata(upload_page, text):
    assert "model_meta" in _page_errors(upload_page(model_meta=text))
    _nothing_made()


@pytest.mark.parametrize("text", HOSTILE_JSON.values(), ids=HOSTILE_JSON.keys())
def test_upload_api_names_the_model_metadata(upload_api, text):
    assert "model_meta" in _api_errors(upload_api(model_meta=text))
    _nothing_made()


@pytest.mark.parametrize("text", HOSTILE_JSON.values(), ids=HOSTILE_JSON.keys())
def test_edit_page_names_the_model_metadata(owner_page, unstarted_run, text):
    run = unstarted_run()
    response = owner_page.post(f"/runs/{run.pk}/edit/", {
        "name": "renamed", "team": "lab", "visibility": "team", "model_meta": text})
    assert "model_meta" in _page_errors(response)
    run.refresh_from_db()
    assert (run.name, run.model_meta) == ("run", {})


@pytest.mark.parametrize("text", HOSTILE_JSON.values(), ids=HOSTILE_JSON.keys())
def test_new_suite_page_names_the_decoding(owner_page, text):
    response = owner_page.post("/suites/new/", {"model_name": "m", "decoding": text})
    assert "decoding" in _page_errors(response)
    _nothing_made()


@pytest.mark.parametrize("text", HOSTILE_JSON.values(), ids=HOSTILE_JSON.keys())
def test_suite_api_names_the_decoding(owner_api, text):
    response = owner_api.post("/api/suites", {"model_name": "m", "decoding": text})
    assert "decoding" in _api_errors(response)
    _nothing_made()


@pytest.mark.parametrize(("text", "why"), [
    ('{"a": NaN}', "not a JSON number"),
    ('{"a": -Infinity}', "not a JSON number"),
    ('{"a": 1e400}', "too large a number"),
    ('{"a": ' + "7" * 5000 + "}", "too many digits"),
])
def test_numbers_no_json_column_holds_are_refused(upload_api, text, why):
    fields = _api_errors(upload_api(model_meta=text))
    assert why in fields["model_meta"][0]["message"]
    _nothing_made()


# -- PATCH /api/runs/<id> ---------------------------------------------------------------------

@pytest.mark.parametrize(("body", "field"), [
    ({"name": "\ud800"}, "name"),
    ({"model": "ok \udfff"}, "model"),
    ({"team": "lab\u0000"}, "team"),
    ({"model_meta": {"k": "\udfff"}}, "model_meta"),
    ({"model_meta": {"\ud800": 1}}, "model_meta"),
    ({"model_meta": {"k": ["\u0000"]}}, "model_meta"),
    ({"model_meta": json.loads('{"k": ' + "[" * 40 + "]" * 40 + "}")}, "model_meta"),
    ({"name": 5}, "name"),
    ({"visibility": "everyone"}, "visibility"),
])
def test_run_patch_names_the_field(owner_api, unstarted_run, body, field):
    run = unstarted_run()
    response = owner_api.patch(f"/api/runs/{run.pk}", json.dumps(body),
                               content_type="application/json")
    assert field in _api_errors(response)
    run.refresh_from_db()
    assert (run.name, run.model_name, run.model_meta, run.team.slug) == ("run", "", {}, "lab")


@pytest.mark.parametrize("body", [
    b'{"model_meta": ' + b"[" * DEEP + b"]" * DEEP + b"}",
    b'{"name": NaN}',
    b'{"name": "x"}\xff',
])
def test_run_patch_refuses_a_body_it_cannot_read(owner_api, unstarted_run, body):
    run = unstarted_run()
    response = owner_api.patch(f"/api/runs/{run.pk}", body, content_type="application/json")
    assert "" in _api_errors(response)


def test_run_patch_still_changes_what_is_fine(owner_api, unstarted_run):
    run = unstarted_run()
    body = {"name": "  \u202eRTL\u202c and \U0001F600  ", "model_meta": {"t": [0.5, None]}}
    response = owner_api.patch(f"/api/runs/{run.pk}", json.dumps(body),
                               content_type="application/json")
    assert response.status_code == 200, response.content
    run.refresh_from_db()
    assert (run.name, run.model_meta) == ("\u202eRTL\u202c and \U0001F600", {"t": [0.5, None]})


# -- search and other query parameters ------------------------------------------------------

@pytest.mark.parametrize("query", ["q=%00", "q=HumanEval%2F%00", "dataset=%00"])
def test_problem_search_names_the_parameter(personas, humaneval, query):
    response = Client().get(f"/problems/?{query}")
    assert response.status_code == 400
    assert query.split("=")[0] in response.content.decode()


@pytest.mark.parametrize("query", ["q=%C2%B2", "q=99999999999999999999999999", "q=%D9%A3",
                                   "q=%ED%A0%80", "q=%E2%80%AEtla"])
def test_problem_search_takes_odd_text(personas, humaneval, query):
    # "²" counts as a digit for str.isdigit but not for int(); the others are a number past
    # any key, an Arabic-Indic three, a surrogate's bytes (read as U+FFFD) and RTL text.
    assert Client().get(f"/problems/?{query}").status_code == 200


@pytest.mark.parametrize("path", ["/runs/{run}/?q=%00", "/runs/{run}/samples/?error_type=%00",
                                  "/leaderboard/?sort=%00"])
def test_other_text_parameters_refuse_nul(owner_page, unstarted_run, path):
    run = unstarted_run()
    assert owner_page.get(path.format(run=run.pk)).status_code == 400


# -- yes/no and choice fields -------------------------------------------------------------------

@pytest.mark.parametrize("field", ["sanitize", "allow_language_mismatch"])
def test_upload_flags_refuse_maybe(upload_page, upload_api, field):
    assert field in _page_errors(upload_page(**{field: "maybe"}))
    assert field in _api_errors(upload_api(**{field: "maybe"}))
    _nothing_made()


def test_dry_run_refuses_maybe(upload_api):
    assert "dry_run" in _api_errors(upload_api(dry_run="maybe"))
    _nothing_made()


@pytest.mark.parametrize(("spelling", "sanitized"), [
    ("on", True), ("1", True), ("true", True), ("YES", True),
    ("", False), ("0", False), ("false", False), ("off", False), ("no", False)])
def test_upload_flags_take_what_browsers_and_scripts_send(upload_api, spelling, sanitized):
    response = upload_api(sanitize=spelling)
    assert response.status_code == 201, response.content
    assert Run.objects.get(pk=response.json()["id"]).options["sanitize"] is sanitized


def test_suite_upload_dry_run_refuses_maybe(owner_api, humaneval, samples_file):
    created = owner_api.post("/api/suites", {"model_name": "m"})
    assert created.status_code == 201, created.content
    with samples_file.open("rb") as handle:
        response = owner_api.post(f"/api/suites/{created.json()['id']}/runs", {
            "file": handle, "dataset": "humaneval/python/en", "dry_run": "maybe"})
    assert "dry_run" in _api_errors(response)
    assert not Run.objects.exists()


def test_suite_upload_names_a_nul_in_a_dataset(owner_api, humaneval, samples_file):
    created = owner_api.post("/api/suites", {"model_name": "m"})
    with samples_file.open("rb") as handle:
        response = owner_api.post(f"/api/suites/{created.json()['id']}/runs", {
            "file": handle, "dataset": "humaneval/python/en\u0000"})
    assert "NUL" in " ".join(_api_errors(response)["file"])


def test_run_read_refuses_an_unknown_problems_value(owner_api, unstarted_run):
    run = unstarted_run()
    response = owner_api.get(f"/api/runs/{run.pk}?problems=maybe")
    assert any("problems" in field for field in _api_errors(response))
    assert owner_api.get(f"/api/runs/{run.pk}?problems=0").status_code == 200


# -- accounts and teams -------------------------------------------------------------------------

def test_sign_up_with_the_longest_username_makes_its_personal_team(db):
    username = "u" * 150
    response = Client().post("/accounts/signup/", {
        "username": username, "password1": "correct-horse-battery",
        "password2": "correct-horse-battery"})
    assert response.status_code == 302, response.content[:500]
    team = Team.objects.get(memberships__user__username=username)
    assert team.personal
    assert len(team.name) <= 100


def test_sign_up_refuses_an_email_longer_than_its_column(db):
    response = Client().post("/accounts/signup/", {
        "username": "newbie", "email": "a" * 60 + "@" + ".".join(["b" * 60] * 4) + ".com",
        "password1": "correct-horse-battery", "password2": "correct-horse-battery"})
    assert "email" in _page_errors(response)


@pytest.mark.parametrize(("path", "fields", "name"), [
    ("/teams/", {"name": "a\u0000b"}, "name"),
    ("/settings/tokens/", {"name": "x" * 101}, "name"),
])
def test_team_and_token_forms_name_the_field(owner_page, path, fields, name):
    response = owner_page.post(path, fields)
    assert name in response.context["form"].errors


# -- the shared checks --------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "problem"), [
    ("plain", None), ("\u202e\u0661\U0001F600\t\r\n", None), ("a\x00", "NUL"),
    ("\ud800", "U+D800"), ("x\udfff", "U+DFFF")])
def test_text_problem(text, problem):
    found = text_problem(text)
    assert (found is None) if problem is None else (problem in str(found))


def test_json_depth_is_counted_outside_strings():
    inside_a_string = '{"a": "' + "[" * 1000 + '"}'
    assert json_object_from_text(inside_a_string) == {"a": "[" * 1000}
    at_the_limit = "[" * (JSON_DEPTH_MAX - 1) + "]" * (JSON_DEPTH_MAX - 1)
    assert json_object_from_text('{"a": ' + at_the_limit + "}")
    with pytest.raises(ValidationError, match="deeper"):
        json_object_from_text('{"a": [' + at_the_limit + "]}")
    with pytest.raises(ValidationError, match="deeper"):
        json_from_text('"\\"' + "[" * 100 + '"' + "[" * 100)


@pytest.mark.parametrize(("text", "value"), [
    ("", False), (None, False), ("on", True), (" 1 ", True), ("TRUE", True), ("no", False)])
def test_flag_spellings(text, value):
    assert flag_from_text(text) is value


@pytest.mark.parametrize("text", ["maybe", "2", "yes please", "\x00"])
def test_flag_refuses_other_text(text):
    with pytest.raises(ValidationError):
        flag_from_text(text)


@pytest.mark.parametrize(("spelling", "ticked"), [("0", False), ("on", True)])
def test_upload_page_redraws_the_box_as_it_was_sent(upload_page, spelling, ticked):
    response = upload_page(sanitize=spelling, model_meta="[1]")
    html = response.content.decode()
    start = html.rindex("<input", 0, html.index('name="sanitize"'))
    box = html[start:html.index(">", start)]
    assert ("checked" in box) is ticked
