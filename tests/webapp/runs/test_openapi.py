"""The OpenAPI schema at `/api/openapi.json`: valid by a maintained validator, and every real
answer of every endpoint matches what it declares for that status. The API page lists every
endpoint of the same schema with its `curl`."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from openapi_schema_validator import OAS31Validator
from openapi_spec_validator import validate
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from tests.webapp.support import client_for
from webapp.runs.domain.schemas import RunUpload
from webapp.runs.forms import UploadForm
from webapp.runs.models import Run
from webapp.teams.services import token_issue

JSON = "application/json"


@pytest.fixture
def spec(personas) -> dict[str, Any]:
    response = Client().get("/api/openapi.json")
    assert response.status_code == 200
    return response.json()


SPEC_URI = "urn:workbench-openapi"


class Checker:
    """Validates answers against the schema and remembers which operations answered."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.spec = spec
        self.registry: Registry = Registry().with_resource(
            SPEC_URI, Resource.from_contents(spec, default_specification=DRAFT202012))
        self.seen: set[tuple[str, str]] = set()

    def check(self, response: Any, method: str, path: str) -> Any:
        operation = self.spec["paths"][path][method]
        status = str(response.status_code)
        assert status in operation["responses"], (
            f"{method.upper()} {path} answered {status}, which the schema does not declare")
        declared = operation["responses"][status].get("content", {})
        kind = response["Content-Type"].split(";")[0]
        assert kind in declared, f"{method.upper()} {path} {status}: {kind} not declared"
        if kind == "application/json":
            # By reference into the whole document, so that its `#/components/...` resolve.
            pointer = "/".join(part.replace("~", "~0").replace("/", "~1") for part in (
                "", "paths", path, method, "responses", status, "content", kind, "schema"))
            OAS31Validator({"$ref": f"{SPEC_URI}#{quote(pointer)}"},
                           registry=self.registry).validate(json.loads(body_of(response)))
        self.seen.add((method, path))
        return response


def body_of(response: Any) -> bytes:
    """A response's body, streamed (downloads, `webapp.streaming`) or not; read once."""
    if response.streaming:
        if not hasattr(response, "read_body"):
            response.read_body = b"".join(response.streaming_content)
        return bytes(response.read_body)
    return bytes(response.content)


def _token(user) -> Client:
    return Client(HTTP_AUTHORIZATION=f"Bearer {token_issue(user=user, name='t').secret}")


def test_schema_is_valid_openapi(spec):
    validate(spec)
    assert spec["openapi"].startswith("3.1")
    assert {"TokenAuth", "SessionAuth"} <= spec["components"]["securitySchemes"].keys()


def test_upload_fields_of_the_schema_are_the_forms(spec):
    """The multipart body is described by a model beside the form that reads it."""
    assert set(RunUpload.model_fields) == set(UploadForm.base_fields) | {"dry_run"}


def test_every_endpoint_answers_as_the_schema_says(
        spec, personas, humaneval, samples_file, django_capture_on_commit_callbacks):
    api = Checker(spec)
    owner, member, outsider = _token(personas.owner), _token(personas.teammate), _token(
        personas.outsider)
    runs, run_path = "/api/runs", "/api/runs/{run_id}"

    api.check(Client().post(runs, {}), "post", runs)  # 401
    with samples_file.open("rb") as handle:
        api.check(owner.post(runs, {"file": handle, "dataset": "humaneval/python/en",
                                    "dry_run": "1"}), "post", runs)  # 200
    assert api.check(owner.post(runs, {"file": SimpleUploadedFile("x.jsonl", b"{}\n"),
                                       "dataset": "nope"}), "post", runs).status_code == 400
    with samples_file.open("rb") as handle, django_capture_on_commit_callbacks(execute=True):
        created = api.check(owner.post(runs, {"file": handle, "dataset": "humaneval/python/en",
                                              "visibility": "team"}), "post", runs)
    assert created.status_code == 201
    run_id = created.json()["id"]
    with samples_file.open("rb") as handle:
        assert api.check(owner.post(runs, {"file": handle, "dataset": "humaneval/python/en",
                                           "visibility": "public"}),
                         "post", runs).status_code == 409
    broken = samples_file.with_name("broken.jsonl")
    broken.write_bytes(b'{"task_id": "HumanEval/0", "completion": 1}\n')
    with broken.open("rb") as handle:
        assert api.check(owner.post(runs, {"file": handle, "dataset": "humaneval/python/en"}),
                         "post", runs).status_code == 400

    one = f"/api/runs/{run_id}"
    body = api.check(owner.get(one), "get", run_path).json()
    assert body["status"] == Run.Status.FINISHED
    api.check(owner.get(one + "?problems=0"), "get", run_path)
    api.check(outsider.get(one), "get", run_path)  # 404
    api.check(Client().get(one), "get", run_path)  # 401
    api.check(owner.get(one + "/results"), "get", run_path + "/results")
    api.check(outsider.get(one + "/results"), "get", run_path + "/results")
    matrix = json.loads(body_of(api.check(owner.get(one + "/matrix"), "get",
                                          run_path + "/matrix")))
    page_download = client_for(personas.owner).get(f"/runs/{run_id}/export/matrix.json")
    assert matrix == json.loads(page_download.getvalue())
    assert matrix["problems"][0]["samples"]
    api.check(outsider.get(one + "/matrix"), "get", run_path + "/matrix")
    api.check(Client().get(one + "/matrix"), "get", run_path + "/matrix")
    api.check(owner.get("/api/datasets"), "get", "/api/datasets")
    api.check(Client().get("/api/datasets"), "get", "/api/datasets")

    api.check(owner.patch(one, json.dumps({"name": "renamed", "model": "m"}), content_type=JSON),
              "patch", run_path)
    api.check(owner.patch(one, json.dumps({"colour": "red"}), content_type=JSON), "patch", run_path)
    api.check(member.patch(one, json.dumps({"name": "x"}), content_type=JSON), "patch", run_path)
    api.check(outsider.patch(one, json.dumps({"name": "x"}), content_type=JSON), "patch", run_path)

    boards = run_path + "/leaderboards"
    api.check(owner.post(one + "/leaderboards", json.dumps({"listed": False}), content_type=JSON),
              "post", boards)
    api.check(owner.post(one + "/leaderboards", json.dumps({"listed": "no"}), content_type=JSON),
              "post", boards)
    api.check(member.post(one + "/leaderboards", json.dumps({"listed": True}), content_type=JSON),
              "post", boards)
    changes = api.check(owner.get(one + "/changes"), "get", run_path + "/changes").json()
    assert {"leaderboard", "name", "model_name"} <= {c["field"] for c in changes["changes"]}
    api.check(client_for(personas.teammate).get(one + "/changes"), "get",
              run_path + "/changes")

    api.check(owner.post(one + "/cancel"), "post", run_path + "/cancel")  # 400: finished
    api.check(member.post(one + "/cancel"), "post", run_path + "/cancel")  # 403
    api.check(owner.post(one + "/resume"), "post", run_path + "/resume")  # 400: not cancelled
    api.check(outsider.post(one + "/resume"), "post", run_path + "/resume")  # 404
    api.check(member.delete(one), "delete", run_path)  # 403
    api.check(owner.delete(one), "delete", run_path)
    api.check(owner.post(one + "/restore"), "post", run_path + "/restore")
    api.check(owner.post(one + "/restore"), "post", run_path + "/restore")  # 404: not deleted
    api.check(owner.get(one + "/manifest"), "get", run_path + "/manifest")
    api.check(owner.get(one + "/plus"), "get", run_path + "/plus")
    api.check(outsider.get(one + "/plus"), "get", run_path + "/plus")  # 404
    api.check(owner.post(one + "/plus"), "post", run_path + "/plus")  # 400: no plus set here
    api.check(outsider.post(one + "/plus"), "post", run_path + "/plus")  # 404

    suites, suite_path = "/api/suites", "/api/suites/{suite_id}"
    add = suite_path + "/runs"
    api.check(Client().post(suites, {"model_name": "m"}), "post", suites)  # 401
    assert api.check(owner.post(suites, {"model_name": "", "decoding": "[1]"}),
                     "post", suites).status_code == 400
    made = api.check(owner.post(suites, {"model_name": "m-7b", "decoding": '{"n": 1}',
                                         "team": "lab"}), "post", suites)
    assert made.status_code == 201
    mine = f"/api/suites/{made.json()['id']}"
    api.check(owner.get(mine), "get", suite_path)
    api.check(outsider.get(mine), "get", suite_path)  # 404
    api.check(Client().get(mine), "get", suite_path)  # 401
    api.check(Client().post(mine + "/runs", {"run": str(run_id)}), "post", add)  # 401
    api.check(outsider.post(mine + "/runs", {"run": str(run_id)}), "post", add)  # 404
    with samples_file.open("rb") as handle:  # a teammate sees the suite, may not change it
        assert api.check(member.post(mine + "/runs", {"file": handle, "dataset": "humaneval/"
                                                      "python/en", "dry_run": "1"}),
                         "post", add).status_code == 403
    with samples_file.open("rb") as handle:
        assert api.check(owner.post(mine + "/runs", {"file": handle, "dataset": "humaneval/"
                                                     "python/en", "dry_run": "1"}),
                         "post", add).status_code == 200
    with broken.open("rb") as handle:
        refused = api.check(owner.post(mine + "/runs", {
            "file": handle, "dataset": "humaneval/python/en"}), "post", add)
    assert refused.json()["error"] == "invalid_files"
    with samples_file.open("rb") as handle:  # a file with no dataset beside it
        assert api.check(owner.post(mine + "/runs", {"file": handle}),
                         "post", add).json()["fields"]["file"]
    assert api.check(owner.post(mine + "/runs", {"run": "999999"}),
                     "post", add).json()["fields"] == {"run": ["no run 999999"]}
    with samples_file.open("rb") as handle:  # already evaluated: its run joins the suite
        uploaded = api.check(owner.post(mine + "/runs", {
            "file": handle, "dataset": "humaneval/python/en"}), "post", add).json()
    assert [item["run"]["id"] for item in uploaded["files"]] == [run_id]
    again = api.check(owner.post(mine + "/runs", {"run": str(run_id)}), "post", add)
    assert "already has run" in again.json()["message"]
    other = owner.post(suites, {"model_name": "m-7b"}).json()["id"]
    attached = api.check(owner.post(f"/api/suites/{other}/runs", {"run": str(run_id)}),
                         "post", add)
    assert [item["id"] for item in attached.json()["runs"]] == [run_id]

    declared = {(method, path) for path, operations in spec["paths"].items()
                for method in operations}
    assert declared - api.seen == set(), "every operation was called"


def test_api_page_lists_every_endpoint_with_curl(spec, personas):
    page = client_for(personas.owner).get("/api/")
    assert page.status_code == 200
    html = page.content.decode()
    for path, operations in spec["paths"].items():
        for method in operations:
            assert f"{method.upper()} {path}" in html
    assert "curl -X POST -H &quot;Authorization: Bearer $WORKBENCH_TOKEN&quot; -F" in html
    assert "file=@samples.jsonl" in html
    assert 'href="/api/openapi.json"' in html
    home = client_for(personas.owner).get("/").content.decode()
    assert 'href="/api/">API</a>' in home


def test_api_page_needs_no_account(personas):
    assert Client().get("/api/").status_code == 200


def test_reads_answer_head_as_before_and_stay_out_of_the_schema(spec, personas):
    owner = _token(personas.owner)
    assert owner.head("/api/datasets").status_code == 200
    assert Client().head("/api/datasets").status_code == 401
    assert owner.head("/api/runs/999999").status_code == 404
    assert not any("head" in operations for operations in spec["paths"].values())


def test_wrong_method_is_405_and_unknown_run_id_404(personas):
    owner = _token(personas.owner)
    assert owner.put("/api/runs/1").status_code == 405
    assert owner.get("/api/runs/999999").json() == {"error": "not_found",
                                                    "message": "No such object."}
    assert owner.get("/api/runs/abc").status_code == 404
