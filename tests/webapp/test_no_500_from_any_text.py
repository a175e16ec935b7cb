"""No text gives a 500. Hypothesis throws arbitrary Unicode (lone surrogates, NUL, control
and right-to-left characters, huge strings) and arbitrary JSON (NaN, huge numbers, deep
nesting) at every field of the forms and the API that take text, and every answer must be
below 500: a refusal names the field (`test_hostile_text`), and what is accepted is stored
and shown again without error.

The fields come from the forms themselves, so a field added later is thrown at too.
Surrogates reach a form as the bytes a hostile client would send (Django reads them as
U+FFFD) and reach the JSON API as `\\ud800` escapes.

PostgreSQL refuses more than SQLite (NUL in text and JSON, lone surrogates in JSON, text
longer than its column), so these run on PostgreSQL only: on another database they skip,
and `test_hostile_text_on_postgresql` runs this file on a database of its own. Examples are
bounded and derandomized, so CI sees the same ones every time; each one runs in a savepoint
that is rolled back, so every example starts from the same data.
"""

from __future__ import annotations

import html
import json
import operator
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast
from urllib.parse import urlencode

import pytest
from django import forms
from django.contrib.auth.forms import AuthenticationForm, UsernameField
from django.db import connection, transaction
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evaluator.profiles import PROFILES
from tests.webapp.support import client_for, small_samples
from webapp.benchmarks.models import Dataset
from webapp.runs.api.lifecycle_endpoints import EDITABLE
from webapp.runs.forms import RunEditForm, UploadForm
from webapp.runs.models import Run
from webapp.runs.reads.reports import PROBLEM_SHOWS, PROBLEM_SORTS
from webapp.suites.forms import SuiteForm, SuiteUploadForm
from webapp.suites.models import Suite
from webapp.teams.forms import MemberForm, SignUpForm, TeamForm, TokenForm
from webapp.textfields import FlagField

if connection.vendor != "postgresql":
    pytest.skip("these properties run on PostgreSQL: test_hostile_text_on_postgresql runs "
                "them there (start PostgreSQL on 127.0.0.1:5432 if it skips too)",
                allow_module_level=True)

EXAMPLES = settings(
    max_examples=50, derandomize=True, deadline=None, database=None, print_blob=False,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                           HealthCheck.data_too_large, HealthCheck.large_base_example],
)
"""Bounded and the same on every run; no deadline, since the machine may be busy."""
CHEAP = settings(EXAMPLES, max_examples=80)
"""For endpoints that store nothing big: no file is checked."""
FEW = settings(EXAMPLES, max_examples=20)
"""For each of several forms or pages that share a test."""
BOUNDARY = "hostile-text-boundary-5c0d1e"
AnyForm = type[forms.Form] | type[forms.ModelForm[Any]]

# -- what is thrown -----------------------------------------------------------------------------

ANY_CHARACTER = st.characters(exclude_categories=())
"""Every code point, lone surrogates and NUL included."""
STORABLE_CHARACTER = st.characters(exclude_categories=["Cs"], exclude_characters=["\x00"])
NASTY = st.sampled_from([
    "\x00", "\ud800", "\udfff", "\udbff\udc00", "\u202e", "\u200f", "\u2066", "\u2069",
    "\ufeff", "\ufffd", "\r\n", "\x1b[31m", "\x7f", "\u0085", "\u2028", "²", "٣", "%00",
    "'", '"', "\\", "<script>", "{{ x }}", "{% x %}", "HumanEval/", "@", "\U0001F600",
])
HOSTILE_TEXT = st.one_of(
    # A NUL or a lone surrogate in otherwise ordinary text: what a database or an encoder
    # fails on, as common as the rest (arbitrary text holds one in a few hundred).
    st.builds("{}{}{}".format, st.text(STORABLE_CHARACTER, max_size=10),
              st.sampled_from(["\x00", "\ud800", "\udfff", "\udbff"]),
              st.text(STORABLE_CHARACTER, max_size=10)),
    st.text(ANY_CHARACTER, max_size=40),
    st.lists(NASTY | st.text(ANY_CHARACTER, max_size=4), max_size=8).map("".join),
    # Huge: far past every field's limit (the request itself stays under Django's 2 MB).
    st.builds(operator.mul, st.text(ANY_CHARACTER, min_size=1, max_size=2),
              st.integers(1, 120_000)),
)
ODD_BUT_STORABLE = st.one_of(
    st.text(STORABLE_CHARACTER, min_size=1, max_size=60),
    st.lists(NASTY.filter(lambda text: "\x00" not in text and not any(
        0xD800 <= ord(c) <= 0xDFFF for c in text)), min_size=1, max_size=6).map("".join),
)
# A surrogate is one code point in 500: NASTY makes the ones that matter common.
SHORT_HOSTILE = NASTY | st.text(ANY_CHARACTER, max_size=12)
JSON_LEAF = st.none() | st.booleans() | st.integers() | st.floats() | SHORT_HOSTILE
JSON_VALUE = st.recursive(
    JSON_LEAF,
    lambda children: (st.lists(children, max_size=4)
                      | st.dictionaries(SHORT_HOSTILE, children, max_size=4)),
    max_leaves=16,
)
DEPTH = st.integers(1, 100_000)
JSON_TEXT = st.one_of(
    # json.dumps writes a surrogate as an escape and NaN as NaN, as a careless client would.
    st.dictionaries(SHORT_HOSTILE, JSON_VALUE, max_size=4).map(json.dumps),
    JSON_VALUE.map(json.dumps),
    DEPTH.map(lambda n: '{"a": ' + "[" * n + "]" * n + "}"),
    DEPTH.map(lambda n: '{"a": ' + "[" * n),
    st.sampled_from(['{"a": NaN}', '{"a": -Infinity}', '{"a": 1e999}',
                     '{"a": ' + "9" * 5000 + "}", '{"a": "\\ud800"}', '{"\\u0000": 0}']),
    HOSTILE_TEXT,
)


STORABLE_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(STORABLE_CHARACTER, max_size=12),
    lambda children: (st.lists(children, max_size=3)
                      | st.dictionaries(st.text(STORABLE_CHARACTER, max_size=8), children,
                                        max_size=3)),
    max_leaves=10,
)
STORABLE_JSON_OBJECT = st.dictionaries(st.text(STORABLE_CHARACTER, max_size=8), STORABLE_JSON,
                                       max_size=4)


def _either(valid: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(valid, HOSTILE_TEXT)


@dataclass
class World:
    """The data every example starts from: the personas' team, HumanEval, a run of the
    owner's and a suite of theirs, and a client of each kind."""

    dataset: Dataset
    run: Run
    suite: Suite
    page: Client
    api: Client
    visitor: Client
    samples: bytes


@pytest.fixture
def world(personas, humaneval, unstarted_run, token_client, tmp_path: Path) -> World:
    owner_api = token_client(personas.owner)
    created = owner_api.post("/api/suites", {"model_name": "suite model"})
    assert created.status_code == 201, created.content
    samples = "".join(json.dumps(record) + "\n" for record in small_samples()).encode()
    return World(dataset=humaneval, run=unstarted_run(), page=client_for(personas.owner),
                 api=owner_api, visitor=Client(), samples=samples,
                 suite=Suite.objects.get(pk=created.json()["id"]))


@contextmanager
def rolled_back() -> Iterator[None]:
    """One example's writes, undone: the next example starts from the same data, and a
    database error cannot poison the examples after it."""
    with transaction.atomic():
        yield
        transaction.set_rollback(True)


def multipart(fields: dict[str, str | list[str]], files: dict[str, bytes] | None = None,
              ) -> bytes:
    """A form as a hostile client sends it: text encoded as UTF-8, lone surrogates and all
    (Django's own encoder refuses them)."""
    parts: list[bytes] = []
    for name, values in fields.items():
        for value in [values] if isinstance(values, str) else values:
            parts.append(f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="{name}"'
                          "\r\n\r\n".encode() + value.encode("utf-8", "surrogatepass")
                          + b"\r\n")
    for name, content in (files or {}).items():
        parts.append(f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="{name}"; '
                     'filename="samples.jsonl"\r\nContent-Type: application/octet-stream'
                     "\r\n\r\n".encode() + content + b"\r\n")
    return b"".join(parts) + f"--{BOUNDARY}--\r\n".encode()


def post_form(client: Client, path: str, fields: dict[str, Any],
              files: dict[str, bytes] | None = None) -> Any:
    return client.post(path, multipart(fields, files),
                       content_type=f"multipart/form-data; boundary={BOUNDARY}")


def get_query(client: Client, path: str, params: dict[str, str]) -> Any:
    query = urlencode({key.encode("utf-8", "surrogatepass"): value.encode("utf-8",
                                                                          "surrogatepass")
                       for key, value in params.items()})
    return client.get(f"{path}?{query}" if query else path)


def below_500(response: Any) -> Any:
    assert response.status_code < 500, response.content[:300]
    return response


# -- the fields of a form, from the form -------------------------------------------------------

def valid_values(name: str, field: forms.Field, world: World) -> st.SearchStrategy[str]:
    """What one field takes: odd text included, which must then be stored and shown."""
    if isinstance(field, FlagField):
        return st.sampled_from(["", "on", "1", "0", "true", "no"])
    if isinstance(field, forms.ChoiceField):
        return st.sampled_from([str(value) for value, _ in cast(Any, field.choices)])
    if isinstance(field, forms.FloatField):
        return st.sampled_from(["", "1", "0.5", "600"])
    if isinstance(field, forms.EmailField):
        return st.sampled_from(["", "someone@example.com"])
    if name in ("model_meta", "decoding"):
        return st.one_of(st.just(""), STORABLE_JSON_OBJECT.map(
            lambda value: json.dumps(value, ensure_ascii=False)))
    if name == "dataset":
        return st.sampled_from([str(world.dataset.pk), world.dataset.key,
                                f"{world.dataset.key}@{world.dataset.version}"])
    if name == "team":
        return st.sampled_from(["lab"] if field.required else ["", "lab"])
    if name == "profile":
        return st.sampled_from(["", *PROFILES])
    if isinstance(field, UsernameField):  # a new account's name, or a sign-in's
        return st.from_regex(r"[\w.@+-]{1,150}", fullmatch=True) | at_the_limit("ü", field)
    if name == "username":
        return st.sampled_from(["oscar", "tom"]) | ODD_BUT_STORABLE
    if name.startswith("password"):
        return st.just("correct-horse-battery") | ODD_BUT_STORABLE.map("horse-{}".format)
    odd = ODD_BUT_STORABLE.filter(str.strip) if field.required else ODD_BUT_STORABLE
    return odd | at_the_limit("ش", field)


def at_the_limit(character: str, field: forms.Field) -> st.SearchStrategy[str]:
    """As long as the field allows, in a character of two UTF-8 bytes: where a column too
    short for what the form accepts fails."""
    limit = getattr(field, "max_length", None)
    return st.just(character * limit) if limit else st.nothing()


def hostile_values(name: str, field: forms.Field) -> st.SearchStrategy[str]:
    if isinstance(field, forms.FloatField):
        return st.sampled_from(["nan", "inf", "-1", "1e400", "1" * 400]) | HOSTILE_TEXT
    if name in ("model_meta", "decoding"):
        return JSON_TEXT
    return HOSTILE_TEXT


def form_data(form: AnyForm, world: World, *, leave_out: tuple[str, ...] = (),
              extra: dict[str, forms.Field] | None = None,
              ) -> st.SearchStrategy[dict[str, str]]:
    """The form's fields (and `extra`, which the view reads itself), by
    `valid_or_one_hostile`."""
    fields = {name: field for name, field in form.base_fields.items() if name not in leave_out}
    fields.update(extra or {})
    valid = {name: valid_values(name, field, world) for name, field in fields.items()}
    hostile = {name: hostile_values(name, field) for name, field in fields.items()}
    return valid_or_one_hostile(valid, hostile)


def valid_or_one_hostile(valid: dict[str, st.SearchStrategy[str]],
                         hostile: dict[str, st.SearchStrategy[str]],
                         ) -> st.SearchStrategy[dict[str, str]]:
    """All fields valid, so that odd text goes all the way; all but one, which then meets
    every later step; or all hostile, so that each field's own check meets it."""
    return st.one_of(
        st.fixed_dictionaries(valid),
        st.sampled_from(sorted(valid)).flatmap(
            lambda chosen: st.fixed_dictionaries({**valid, chosen: hostile[chosen]})),
        st.fixed_dictionaries(hostile),
    )


# -- the properties ------------------------------------------------------------------------------

TOKEN = re.compile(r'name="token" value="([^"]+)"')


@EXAMPLES
@given(data=st.data())
def test_upload_page(world, data):
    fields = data.draw(form_data(UploadForm, world, leave_out=("file",)))
    with rolled_back():
        response = below_500(post_form(world.page, "/runs/new/", fields,
                                       {"file": world.samples}))
        held = TOKEN.search(response.content.decode()) if response.status_code == 200 else None
        if held is not None:
            # "Start the run": the held choices become the run, whose page shows them.
            started = below_500(world.page.post("/runs/new/confirm/",
                                                {"token": html.unescape(held.group(1))}))
            below_500(world.page.get(started["Location"]))


@EXAMPLES
@given(data=st.data())
def test_upload_api(world, data):
    fields = data.draw(form_data(UploadForm, world, leave_out=("file",),
                                 extra={"dry_run": FlagField()}))
    with rolled_back():
        response = below_500(post_form(world.api, "/api/runs", fields,
                                       {"file": world.samples}))
        if response.status_code == 201:
            run_id = response.json()["id"]
            below_500(world.page.get(f"/runs/{run_id}/"))
            below_500(world.api.get(f"/api/runs/{run_id}"))


STORABLE_PATCH = st.fixed_dictionaries({}, optional={
    "name": ODD_BUT_STORABLE, "model": ODD_BUT_STORABLE, "model_meta": STORABLE_JSON_OBJECT,
    "team": st.just("lab"), "visibility": st.sampled_from(["private", "team", "public"])})
PATCH_VALUES = st.one_of(JSON_VALUE, ODD_BUT_STORABLE, HOSTILE_TEXT,
                         st.sampled_from(["lab", "public", "team", "private"]))
PATCH_BODIES = st.one_of(
    STORABLE_PATCH.map(json.dumps),
    STORABLE_PATCH.flatmap(lambda body: st.fixed_dictionaries(
        {**{key: st.just(value) for key, value in body.items()},
         "name": HOSTILE_TEXT})).map(json.dumps),
    st.dictionaries(st.sampled_from(sorted(EDITABLE)), PATCH_VALUES).map(json.dumps),
    st.dictionaries(SHORT_HOSTILE, JSON_VALUE, max_size=3).map(json.dumps),
    DEPTH.map(lambda n: '{"model_meta": ' + '{"a": ' * n + "1" + "}" * n + "}"),
    JSON_TEXT,
)


@CHEAP
@given(body=st.one_of(PATCH_BODIES.map(lambda text: text.encode("utf-8", "surrogatepass")),
                      st.binary(max_size=64)))
def test_run_patch(world, body):
    with rolled_back():
        response = below_500(world.api.patch(f"/api/runs/{world.run.pk}", body,
                                             content_type="application/json"))
        if response.status_code == 200:
            below_500(world.page.get(f"/runs/{world.run.pk}/"))
            below_500(world.page.get(f"/runs/{world.run.pk}/edit/"))


@CHEAP
@given(data=st.data())
def test_run_edit_page(world, data):
    fields = data.draw(form_data(RunEditForm, world))
    with rolled_back():
        response = below_500(post_form(world.page, f"/runs/{world.run.pk}/edit/", fields))
        if response.status_code == 302:
            below_500(world.page.get(f"/runs/{world.run.pk}/"))
            below_500(world.api.get(f"/api/runs/{world.run.pk}/changes"))


@CHEAP
@given(data=st.data(), by_api=st.booleans())
def test_new_suite(world, data, by_api):
    fields = data.draw(form_data(SuiteForm, world))
    with rolled_back():
        if by_api:
            response = below_500(post_form(world.api, "/api/suites", fields))
            created = response.json().get("id") if response.status_code == 201 else None
        else:
            response = below_500(post_form(world.page, "/suites/new/", fields))
            created = (Suite.objects.exclude(pk=world.suite.pk).values_list("pk", flat=True)
                       .first() if response.status_code == 302 else None)
        if created is not None:
            below_500(world.page.get(f"/suites/{created}/"))
            below_500(world.api.get(f"/api/suites/{created}"))


@EXAMPLES
@given(data=st.data(), datasets=st.one_of(
    st.just(["humaneval/python/en"]),
    st.lists(_either(st.just("humaneval/python/en")), max_size=2)))
def test_suite_upload_api(world, data, datasets):
    fields: dict[str, Any] = data.draw(form_data(SuiteUploadForm, world))
    fields["dataset"] = datasets
    with rolled_back():
        response = below_500(post_form(world.api, f"/api/suites/{world.suite.pk}/runs",
                                       fields, {"file": world.samples} if datasets else None))
        if response.status_code == 201:
            below_500(world.page.get(f"/suites/{world.suite.pk}/"))


TEAM_FORMS: list[tuple[str, AnyForm, str]] = [
    ("/accounts/signup/", SignUpForm, "visitor"),
    ("/accounts/login/", AuthenticationForm, "visitor"),
    ("/teams/", TeamForm, "page"),
    ("/teams/lab/members/", MemberForm, "page"),
    ("/settings/tokens/", TokenForm, "page"),
]


@pytest.mark.parametrize(("path", "form", "who"), TEAM_FORMS, ids=[p for p, _, _ in TEAM_FORMS])
@FEW
@given(data=st.data(), same_passwords=st.booleans())
def test_account_and_team_forms(world, path, form, who, data, same_passwords):
    fields = data.draw(form_data(form, world))
    if same_passwords and "password1" in fields:
        fields["password2"] = fields["password1"]
    with rolled_back():
        client: Client = getattr(world, who)
        below_500(post_form(client, path, fields))
        below_500(client.get("/teams/" if who == "page" else "/"))


SEARCH_PAGES: dict[str, dict[str, st.SearchStrategy[str]]] = {
    "/problems/": {"q": ODD_BUT_STORABLE | st.sampled_from(["HumanEval/2", "0", "has_close"]),
                   "dataset": st.just("humaneval"), "language": st.just("python"),
                   "nl": st.just("en"), "runs": st.just("{run}")},
    "/runs/{run}/": {"q": ODD_BUT_STORABLE, "sort": st.sampled_from(PROBLEM_SORTS),
                     "order": st.sampled_from(["asc", "desc"]),
                     "show": st.sampled_from(PROBLEM_SHOWS)},
    "/runs/{run}/samples/": {"error_type": ODD_BUT_STORABLE | st.just("-"),
                             "task": st.just("HumanEval/0")},
    "/leaderboard/": {"sort": st.just("model") | ODD_BUT_STORABLE,
                      "order": st.sampled_from(["asc", "desc"])},
    "/api/runs/{run}": {"problems": st.sampled_from(["0", "1"])},
}


@pytest.mark.parametrize("page", sorted(SEARCH_PAGES))
@FEW
@given(data=st.data())
def test_search_and_query_parameters(world, page, data):
    known = SEARCH_PAGES[page]
    params = data.draw(valid_or_one_hostile(known, dict.fromkeys(known, HOSTILE_TEXT))
                       | st.dictionaries(HOSTILE_TEXT, HOSTILE_TEXT, max_size=2))
    params = {key: value.replace("{run}", str(world.run.pk)) for key, value in params.items()}
    with rolled_back():
        below_500(get_query(world.page, page.format(run=world.run.pk), params))
