"""The API page for people, `/api/`: every endpoint of the OpenAPI schema with its
parameters, authentication, answers and an example `curl`. It reads the same schema that
`/api/openapi.json` serves, so the page cannot describe another API than the one served."""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from ninja import NinjaAPI

METHODS = ("get", "post", "patch", "delete")
PATH_PARAMETER = re.compile(r"\{[^}]*\}")
"""`{run_id}`, `{suite_id}`...: an example id stands in for each in a `curl` line."""
AUTH_TEXT = {
    "TokenAuth": "token",
    "SessionAuth": "signed-in session",
}


@dataclass
class Parameter:
    name: str
    where: str
    type: str
    required: bool
    description: str


@dataclass(order=True)
class Answer:
    status: str
    shape: str
    fields: list[tuple[str, str, str]] = field(default_factory=list)
    """(name, type, meaning) of the answer's top-level fields, when it is an object."""


@dataclass
class Endpoint:
    method: str
    path: str
    summary: str
    description: str
    auth: list[str]
    parameters: list[Parameter] = field(default_factory=list)
    body_type: str = ""
    responses: list[Answer] = field(default_factory=list)
    curl: str = ""

    @property
    def anchor(self) -> str:
        return self.method.lower() + self.path.replace("/", "-").replace("{", "").replace(
            "}", "")


def _resolve(schema: dict[str, Any], components: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref", "")
    if ref:
        resolved: dict[str, Any] = components.get(ref.rsplit("/", 1)[-1], {})
        return resolved
    return schema


def _type_text(schema: dict[str, Any]) -> str:
    if "$ref" in schema:
        return str(schema["$ref"].rsplit("/", 1)[-1])
    if "anyOf" in schema:
        return " or ".join(_type_text(option) for option in schema["anyOf"])
    if "enum" in schema:
        return " | ".join(json.dumps(value) for value in schema["enum"])
    if schema.get("format") == "binary":
        return "file"
    if schema.get("type") == "array":
        return f"list of {_type_text(schema.get('items', {}))}"
    return str(schema.get("type", "any"))


def _curl(*, base: str, method: str, path: str, body_type: str, example: dict[str, Any],
          session_only: bool) -> str:
    """A command to copy; the token stays a shell variable, so it is double-quoted."""
    words = ["curl"]
    if method != "GET":
        words += ["-X", method]
    if not session_only:
        words.append('-H "Authorization: Bearer $WORKBENCH_TOKEN"')
    if body_type == "multipart/form-data":
        for name, value in example.items():
            words += ["-F", shlex.quote(f"{name}={value}")]
    elif body_type == "application/json":
        words += ["-H", shlex.quote("Content-Type: application/json"),
                  "-d", shlex.quote(json.dumps(example))]
    words.append(shlex.quote(base + PATH_PARAMETER.sub("1", path)))
    return " ".join(words)


def api_endpoints(*, schema: dict[str, Any], base: str) -> list[Endpoint]:
    """The schema's operations as the page lists them, in the schema's order."""
    components = schema.get("components", {}).get("schemas", {})
    endpoints = []
    for path, operations in schema["paths"].items():
        for method in METHODS:
            operation = operations.get(method)
            if operation is None:
                continue
            auth = [AUTH_TEXT.get(name, name) for requirement in operation.get("security", [])
                    for name in requirement]
            endpoint = Endpoint(method=method.upper(), path=path,
                                summary=operation.get("summary", ""),
                                description=operation.get("description", ""), auth=auth)
            for parameter in operation.get("parameters", []):
                endpoint.parameters.append(Parameter(
                    name=parameter["name"], where=parameter["in"],
                    type=_type_text(parameter.get("schema", {})),
                    required=parameter.get("required", False),
                    description=parameter.get("description", "")))
            example: dict[str, Any] = {}
            for content_type, content in operation.get("requestBody", {}).get(
                    "content", {}).items():
                body = _resolve(content.get("schema", {}), components)
                endpoint.body_type = content_type
                example = (body.get("examples") or [{}])[0]
                required = set(body.get("required", ()))
                for name, prop in body.get("properties", {}).items():
                    endpoint.parameters.append(Parameter(
                        name=name, where="body", type=_type_text(prop),
                        required=name in required, description=prop.get("description", "")))
            for status, answer in operation.get("responses", {}).items():
                content = answer.get("content", {})
                shapes = [f"{kind}: {_type_text(value.get('schema', {}))}"
                          for kind, value in content.items()]
                fields = [
                    (name, _type_text(prop), prop.get("description", ""))
                    for value in content.values()
                    for name, prop in _resolve(value.get("schema", {}), components).get(
                        "properties", {}).items()
                ]
                endpoint.responses.append(Answer(
                    str(status), "; ".join(shapes) or answer.get("description", ""), fields))
            endpoint.responses.sort()
            endpoint.curl = _curl(base=base, method=endpoint.method, path=path,
                                  body_type=endpoint.body_type, example=example,
                                  session_only=auth == ["signed-in session"])
            endpoints.append(endpoint)
    return endpoints


def api_page(request: HttpRequest, api: NinjaAPI) -> HttpResponse:
    """The page of `api` (`api_urls` passes the site's one API)."""
    schema = api.get_openapi_schema()
    base = request.build_absolute_uri("/").rstrip("/")
    return render(request, "runs/api.html", {
        "schema": schema, "info": schema["info"],
        "endpoints": api_endpoints(schema=schema, base=base),
        "openapi_url": "/api/openapi.json",
    })
