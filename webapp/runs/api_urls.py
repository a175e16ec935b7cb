"""The JSON API under `/api/`: django-ninja serves the operations of `api.endpoints.router`
(with `api.lifecycle_endpoints`'s) and of the suites app's router, and builds
`/api/openapi.json` from them; `/api/` itself is the page for people (`api.docs_page`).

This module is where the site's one API is put together, so it is the only place in the runs
app that names another app: the suites app builds on runs, never the other way round, and
its router is mounted here by its import path.

The error answers are the API's own shape, `{"error": ..., "message": ...}`, whatever
raised them; ninja's defaults (`{"detail": ...}`) never reach a client.
"""

from __future__ import annotations

from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.urls import path
from ninja import NinjaAPI
from ninja.errors import AuthenticationError
from ninja.errors import ValidationError as SchemaError

# Importing lifecycle_endpoints registers the writes on `router`.
from webapp.runs.api import docs_page, lifecycle_endpoints  # noqa: F401
from webapp.runs.api.endpoints import REFUSALS, read, router
from webapp.runs.pages import plus_views, reproduce_views  # noqa: F401
from webapp.teams.api_auth import (
    TOKEN_OR_SESSION,
    TOKEN_REQUIRED,
    Unauthorized,
    unauthorized_answer,
)

API_DESCRIPTION = (
    "Upload generation files, follow their evaluation and read the scores. Send a token made "
    "on the Tokens page as `Authorization: Bearer <token>`; reads also accept the session of "
    "a signed-in browser. A run the caller may not see is a 404; one they may see but not "
    "change is a 403."
)



@read(
    "/runs/{int:run_id}/manifest", auth=TOKEN_OR_SESSION, url_name="run_manifest",
    operation_id="run_manifest", summary="What produced a run's verdicts", response=REFUSALS,
    openapi_extra={"responses": {"200": {
        "description": "The run's manifest: evaluator, harness, sandbox, toolchains, files.",
        "content": {"application/json": {"schema": {"type": "object"}}}}}},
)
def run_manifest(request: HttpRequest, run_id: int) -> HttpResponse:
    """The manifest of the run (see the run page), to reproduce its verdicts elsewhere."""
    return reproduce_views.manifest_api(request, run_id)


workbench_api = NinjaAPI(
    title="Workbench API", version="1", description=API_DESCRIPTION,
    urls_namespace="api", docs_url=None, openapi_url="/openapi.json",
)
workbench_api.add_router("", router)
workbench_api.add_router("", "webapp.suites.api.router")


@workbench_api.exception_handler(Unauthorized)
def _unauthorized(request: HttpRequest, exc: Unauthorized) -> HttpResponse:
    return unauthorized_answer(exc.message)


@workbench_api.exception_handler(AuthenticationError)
def _no_credentials(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
    return unauthorized_answer(TOKEN_REQUIRED)


@workbench_api.exception_handler(Http404)
def _not_found(request: HttpRequest, exc: Http404) -> HttpResponse:
    return JsonResponse({"error": "not_found", "message": "No such object."}, status=404)


@workbench_api.exception_handler(PermissionDenied)
def _forbidden(request: HttpRequest, exc: PermissionDenied) -> HttpResponse:
    return JsonResponse({"error": "forbidden", "message": str(exc)}, status=403)


@workbench_api.exception_handler(ValidationError)
def _invalid(request: HttpRequest, exc: ValidationError) -> HttpResponse:
    fields = exc.message_dict if hasattr(exc, "error_dict") else {"": exc.messages}
    return JsonResponse({"error": "invalid_request", "message": "Nothing was changed.",
                         "fields": fields}, status=400)


@workbench_api.exception_handler(SchemaError)
def _bad_parameter(request: HttpRequest, exc: SchemaError) -> HttpResponse:
    fields = {".".join(str(part) for part in error["loc"]): error["msg"]
              for error in exc.errors}
    return JsonResponse({"error": "invalid_request", "message": "Some parameters are invalid.",
                         "fields": fields}, status=400)


app_name = "api"
urlpatterns = [
    # The page is handed the API it describes, so that docs_page need not import this module.
    path("", docs_page.api_page, {"api": workbench_api}, name="docs"),
    *workbench_api.urls[0],
]
