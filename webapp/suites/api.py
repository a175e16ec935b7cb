"""The suite API: `POST /api/suites`, `GET /api/suites/<id>`, and
`POST /api/suites/<id>/runs`, which takes several files at once or existing run ids.

Operations of `router`, which `webapp.runs.api_urls` mounts on the one django-ninja API, so
they share its credentials (a token for writes, a token or a browser's session for reads),
its refusals (401, 403, 404 in the API's shape) and its OpenAPI schema. Like the runs API,
the views read the form themselves and answer plain `JsonResponse`s; `api_schemas`
describes them.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse, JsonResponse
from ninja import Router

from webapp.query_params import BadQuery, query_ids
from webapp.runs.api.endpoints import REFUSALS, read_on, request_body
from webapp.runs.domain import schemas as common
from webapp.runs.reads.reports import visible_runs_by_id
from webapp.runs.services.intake import too_large_issue, upload_was_too_large
from webapp.suites import api_schemas as schemas
from webapp.suites.forms import SuiteForm, SuiteUploadForm, paired_files
from webapp.suites.selectors import get_suite_for_user, suite_summary
from webapp.suites.services import MAX_FILES, suite_attach_runs, suite_create, suite_upload
from webapp.teams.api_auth import TOKEN, TOKEN_OR_SESSION
from webapp.teams.signed_in import SignedInRequest

router = Router(tags=["suites"])

WRITE_REFUSALS = {**REFUSALS, 403: common.Error}
"""A suite the caller may see but not change is a 403 (the API's `PermissionDenied`
handler)."""


def _invalid(message: str, fields: dict[str, Any]) -> JsonResponse:
    return JsonResponse({"error": "invalid_request", "message": message, "fields": fields},
                        status=400)


@router.post(
    "/suites", auth=TOKEN, url_name="suites", operation_id="suite_create",
    summary="Create a suite",
    response={201: schemas.SuiteSummary, 400: common.InvalidRequest, 401: common.Error},
    openapi_extra=request_body(schemas.SuiteCreate, "multipart/form-data"),
)
def suites_create(request: SignedInRequest) -> HttpResponse:
    """A suite gathers one model's runs across the variants of a benchmark (languages,
    translations) and shows them side by side. Upload its runs with
    `POST /api/suites/{suite_id}/runs`."""
    form = SuiteForm(request.POST, user=request.user)
    if not form.is_valid():
        return _invalid("Some fields are invalid.", form.errors.get_json_data())
    data = form.cleaned_data
    suite = suite_create(owner=request.user, team=data["team"], name=data["name"],
                         model_name=data["model_name"], revision=data["revision"],
                         decoding=data["decoding"], visibility=data["visibility"],
                         description=data["description"])
    return JsonResponse(suite_summary(user=request.user, suite=suite), status=201)


@read_on(
    router, "/suites/{int:suite_id}", auth=TOKEN_OR_SESSION, url_name="suite",
    operation_id="suite_read", summary="Read a suite",
    response={200: schemas.SuiteSummary, **REFUSALS},
)
def suites_detail(request: HttpRequest, suite_id: int) -> HttpResponse:
    """The suite and those of its runs the caller may see, each with pass@1 and its
    interval."""
    suite = get_suite_for_user(user=request.user, suite_id=suite_id)
    return JsonResponse(suite_summary(user=request.user, suite=suite))


@router.post(
    "/suites/{int:suite_id}/runs", auth=TOKEN, url_name="suite_runs",
    operation_id="suite_add_runs", summary="Add runs to a suite",
    response={201: schemas.SuiteUploaded | schemas.SuiteSummary, 200: schemas.SuiteUploaded,
              400: schemas.SuiteUploadRefused | common.InvalidRequest,
              413: common.InvalidFile, **WRITE_REFUSALS},
    openapi_extra=request_body(schemas.SuiteRunsUpload, "multipart/form-data"),
)
def suites_add_runs(request: SignedInRequest, suite_id: int) -> HttpResponse:
    """Upload several files at once, each with its `dataset` (paired in order), with the
    options of `POST /api/runs`: all or nothing, one bad file and no run is created (a 400
    lists each file's issues); `dry_run` only checks them (200). Or give `run` ids of
    existing runs to add them (201, the suite)."""
    suite = get_suite_for_user(user=request.user, suite_id=suite_id)
    if upload_was_too_large(request):
        issue = too_large_issue()
        return JsonResponse({"error": "invalid_file", "message": issue.message,
                             "issues": [issue.to_dict()]}, status=413)
    if "run" in request.POST:
        if request.FILES:
            return _invalid("Send either files or `run` ids, not both.",
                            {"run": ["Leave out `run` when sending files."]})
        try:
            ids = query_ids(request.POST, "run", limit=MAX_FILES)
            runs = visible_runs_by_id(user=request.user, ids=ids, parameter="run")
            suite_attach_runs(user=request.user, suite=suite, runs=runs)
        except BadQuery as exc:
            return _invalid(f"{exc.name}: {exc.message}.", {exc.name: [exc.message]})
        except ValidationError as exc:
            return _invalid(" ".join(exc.messages), {"run": exc.messages})
        return JsonResponse(suite_summary(user=request.user, suite=suite), status=201)
    form = SuiteUploadForm(request.POST, api=True)
    files, errors = paired_files(request.POST, request.FILES)
    if not form.is_valid():
        return _invalid("Some fields are invalid.", form.errors.get_json_data())
    if errors:
        return _invalid(" ".join(errors), {"file": errors})
    outcome = suite_upload(user=request.user, suite=suite, files=files, **form.options())
    body = {"suite": suite.pk, "created": outcome.created, "errors": outcome.errors,
            "files": [item.to_dict() for item in outcome.files]}
    if not outcome.ok:
        body.update(error="invalid_files",
                    message="Nothing was created: fix the files listed under `files` and "
                            "`errors`, then send them all again.")
        return JsonResponse(body, status=400)
    return JsonResponse(body, status=201 if outcome.created else 200)
