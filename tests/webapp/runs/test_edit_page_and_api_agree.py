"""The run's edit page and `PATCH /api/runs/<id>` check an edit with one schema
(`api_schemas.RunPatch`): the same bad values are refused by both, under the same field
names (the page's `model_name` is the API's `model`) and in the same words, and the same
odd but fine values are stored alike.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from tests.webapp.support import client_for
from webapp.runs.models import Run, RunChange
from webapp.teams.models import Team

GOOD = {"name": "run", "model": "", "team": "lab", "visibility": "team", "model_meta": {}}
"""A whole edit that changes nothing of the run `unstarted_run` makes."""
DEEP_META = json.loads('{"k": ' + "[" * 40 + "]" * 40 + "}")
AT_MOST_200 = "At most 200 characters."
NUL = "NUL characters are not allowed."

REFUSED = {
    "blank name": ({"name": "   "}, {"name": ["A run needs a name."]}),
    "empty name": ({"name": ""}, {"name": ["A run needs a name."]}),
    "long name": ({"name": "x" * 201}, {"name": [AT_MOST_200]}),
    "NUL in the name": ({"name": "a\x00b"}, {"name": [NUL]}),
    "long model": ({"model": "m" * 201}, {"model": [AT_MOST_200]}),
    "NUL in the model": ({"model": "m\x00"}, {"model": [NUL]}),
    "long team": ({"team": "t" * 101}, {"team": ["At most 100 characters."]}),
    "NUL in the team": ({"team": "lab\x00"}, {"team": [NUL]}),
    "no team": ({"team": ""}, {"team": ["You are not a member of that team."]}),
    "a team of others": ({"team": "elsewhere"}, {"team": ["You are not a member of that team."]}),
    "unknown visibility": ({"visibility": "everyone"},
                           {"visibility": ["Choose one of private, team, public."]}),
    "no visibility": ({"visibility": ""},
                      {"visibility": ["Choose one of private, team, public."]}),
    "metadata not an object": ({"model_meta": [1]},
                               {"model_meta": ['Give a JSON object, like {"temperature": 0.8}.']}),
    "NUL in the metadata": ({"model_meta": {"k": "\x00"}}, {"model_meta": [NUL]}),
    "metadata too deep": ({"model_meta": DEEP_META},
                          {"model_meta": ["Nested deeper than 32 levels."]}),
    "three fields at once": ({"name": "", "team": "t" * 101, "visibility": "all"}, {
        "name": ["A run needs a name."], "team": ["At most 100 characters."],
        "visibility": ["Choose one of private, team, public."]}),
}


def _page_post(client: Client, run: Run, edit: dict[str, Any]) -> Any:
    """The edit as the page's form sends it: the metadata typed as JSON."""
    fields = {**edit, "model_name": edit["model"], "model_meta": json.dumps(edit["model_meta"])}
    del fields["model"]
    return client.post(f"/runs/{run.pk}/edit/", fields)


def _page_errors(response: Any) -> dict[str, list[str]]:
    assert response.status_code == 400, response.content[:500]
    errors = response.context["form"].errors
    return {"model" if field == "model_name" else field: list(messages)
            for field, messages in errors.items()}


def _api_patch(client: Client, run: Run, edit: dict[str, Any]) -> Any:
    return client.patch(f"/api/runs/{run.pk}", json.dumps(edit), content_type="application/json")


def _api_errors(response: Any) -> dict[str, list[str]]:
    assert response.status_code == 400, response.content[:500]
    return dict(response.json()["fields"])


@pytest.fixture
def run(unstarted_run) -> Run:
    Team.objects.create(name="Elsewhere", slug="elsewhere")
    return unstarted_run()


@pytest.mark.parametrize(("bad", "expected"), REFUSED.values(), ids=REFUSED.keys())
def test_page_and_api_refuse_the_same_values_in_the_same_words(personas, token_client, run,
                                                               bad, expected):
    edit = {**GOOD, **bad}
    page = _page_errors(_page_post(client_for(personas.owner), run, edit))
    api = _api_errors(_api_patch(token_client(personas.owner), run, edit))
    assert page == expected
    assert api == expected
    assert not RunChange.objects.filter(run=run).exists()
    run.refresh_from_db()
    assert (run.name, run.model_name, run.model_meta, run.team.slug, run.visibility) == (
        "run", "", {}, "lab", "team")


@pytest.mark.parametrize("door", ["page", "api"])
def test_page_and_api_store_trimmed_text_alike(personas, token_client, run, door):
    # Trimmed before it is counted: 200 characters once the spaces are off is not too long.
    edit = {**GOOD, "name": "     " + "x" * 200, "model": "  \u202eRTL\u202c \U0001F600 ",
            "team": " lab ", "visibility": "public", "model_meta": {"t": [0.5, None]}}
    if door == "page":
        response = _page_post(client_for(personas.owner), run, edit)
        assert response.status_code == 302, response.content[:500]
    else:
        response = _api_patch(token_client(personas.owner), run, edit)
        assert response.status_code == 200, response.content[:500]
    run.refresh_from_db()
    assert (run.name, run.model_name, run.model_meta, run.team.slug, run.visibility) == (
        "x" * 200, "\u202eRTL\u202c \U0001F600", {"t": [0.5, None]}, "lab", "public")
    assert sorted(RunChange.objects.filter(run=run).values_list("field", flat=True)) == [
        "model_meta", "model_name", "name", "visibility"]


def test_api_names_what_no_edit_may_change_beside_what_else_is_wrong(personas, token_client,
                                                                     run):
    # The page has no such fields to send: a form reads only its own.
    response = _api_patch(token_client(personas.owner), run, {"owner": "oscar", "name": " "})
    assert _api_errors(response) == {"owner": ["Not a field that can be changed."],
                                     "name": ["A run needs a name."]}
