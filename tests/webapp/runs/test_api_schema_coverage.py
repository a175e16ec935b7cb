"""Nothing under `/api/` escapes the OpenAPI schema: every URL the site serves there, and
every operation of every django-ninja router in an `api*.py` module of an app, is a path of
`/api/openapi.json`, and the document is valid OpenAPI 3."""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver
from ninja import Router
from openapi_spec_validator import validate

import webapp

NOT_OPERATIONS = {"api/", "api/openapi.json"}
"""The API page for people and the schema itself."""
CONVERTER = re.compile(r"<(?:\w+:)?(\w+)>")
NINJA_CONVERTER = re.compile(r"\{(?:\w+:)?(\w+)\}")


@pytest.fixture
def spec(db: None) -> dict[str, Any]:
    response = Client().get("/api/openapi.json")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/json")
    return response.json()


def _routes(patterns: list[URLPattern | URLResolver], prefix: str = "") -> Iterator[str]:
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            yield from _routes(pattern.url_patterns, prefix + str(pattern.pattern))
        else:
            yield prefix + str(pattern.pattern)


def _as_schema_path(route: str) -> str:
    """`api/runs/<int:run_id>` as the schema writes it: `/api/runs/{run_id}`."""
    return "/" + CONVERTER.sub(r"{\1}", route)


def _api_routers() -> Iterator[tuple[str, Router]]:
    root = Path(webapp.__file__).parent
    # An app's API is a module (suites/api.py) or a package of them (runs/api/).
    for module_path in sorted([*root.glob("*/api*.py"), *root.glob("*/api/*.py")]):
        name = ".".join(module_path.relative_to(root.parent).with_suffix("").parts)
        module = importlib.import_module(name)
        for value in vars(module).values():
            if isinstance(value, Router):
                yield name, value


def test_schema_is_valid_openapi_3(spec):
    validate(spec)  # raises with the first error it finds
    assert spec["openapi"].startswith("3.")
    assert spec["paths"]
    for operations in spec["paths"].values():
        for operation in operations.values():
            assert operation["responses"], operation["operationId"]
            assert operation.get("security"), f"{operation['operationId']} names no credential"


def test_every_url_under_api_is_in_the_schema(spec):
    routes = {route for route in _routes(get_resolver().url_patterns)
              if route.startswith("api/")}
    assert {"api/runs", "api/suites", "api/suites/<int:suite_id>/runs"} <= routes
    missing = {_as_schema_path(route) for route in routes - NOT_OPERATIONS} - set(spec["paths"])
    assert missing == set(), "served under /api/ but not in /api/openapi.json"


def test_every_router_of_an_api_module_is_mounted(spec):
    routers = list(_api_routers())
    assert {name for name, _ in routers} >= {"webapp.runs.api.endpoints", "webapp.suites.api"}
    for name, router in routers:
        for route, operations in router.path_operations.items():
            path = "/api" + NINJA_CONVERTER.sub(r"{\1}", route)
            assert path in spec["paths"], f"{name}: {route} is not in the schema"
            documented = set(spec["paths"][path])
            declared = {method.lower() for operation in operations.operations
                        for method in operation.methods
                        if operation.include_in_schema}
            assert declared <= documented, f"{name}: {route}"


def test_api_page_lists_the_suite_endpoints(spec, personas):
    html = Client().get("/api/").content.decode()
    for line in ("POST /api/suites", "GET /api/suites/{suite_id}",
                 "POST /api/suites/{suite_id}/runs"):
        assert line in html
    # The example command has a real id where the path has a parameter.
    assert "/api/suites/1/runs" in html
