"""The suite API: `POST /api/suites`, `GET /api/suites/<id>`, and
`POST /api/suites/<id>/runs`, which takes several files at once or existing run ids.

Plain Django views that authenticate with the API's own credential classes
(`webapp.teams.api_auth`): a token for writes, a token or a browser's session for reads.
They are not operations of the django-ninja API, whose router lives in the runs app; the
runs app must not import this one.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_http_methods

from webapp.query_params import BadQuery, query_ids
from webapp.runs.intake import too_large_issue, upload_was_too_large
from webapp.runs.reports import visible_runs_by_id
from webapp.suites.forms import SuiteForm, SuiteUploadForm, paired_files
from webapp.suites.selectors import get_suite_for_user, suite_summary
from webapp.suites.services import MAX_FILES, suite_attach_runs, suite_create, suite_upload
from webapp.teams.api_auth import (
    TOKEN_REQUIRED,
    TokenAuth,
    Unauthorized,
    unauthorized_answer,
)

View = Callable[..., HttpResponse]


def api_caller(*, allow_session: bool) -> Callable[[View], View]:
    """Let the view run for a caller with a valid token (or, when `allow_session`, a
    signed-in browser); answer the API's 401 and 404 bodies otherwise."""

    def decorate(view: View) -> View:
        @csrf_exempt
        @wraps(view)
        def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            try:
                user = TokenAuth()(request)
            except Unauthorized as exc:
                return unauthorized_answer(exc.message)
            if user is None and not (allow_session and request.user.is_authenticated):
                return unauthorized_answer(TOKEN_REQUIRED)
            try:
                return view(request, *args, **kwargs)
            except Http404:
                return JsonResponse({"error": "not_found", "message": "No such object."},
                                    status=404)

        return wrapper

    return decorate


def _invalid(message: str, **extra: object) -> JsonResponse:
    return JsonResponse({"error": "invalid_request", "message": message, **extra}, status=400)


@api_caller(allow_session=False)
@require_http_methods(["POST"])
def suites_create(request: HttpRequest) -> HttpResponse:
    """Form fields: name, model_name, revision, decoding (JSON object), description, team,
    visibility."""
    form = SuiteForm(request.POST, user=request.user)
    if not form.is_valid():
        return _invalid("Some fields are invalid.", fields=form.errors.get_json_data())
    data = form.cleaned_data
    suite = suite_create(owner=request.user, team=data["team"], name=data["name"],
                         model_name=data["model_name"], revision=data["revision"],
                         decoding=data["decoding"], visibility=data["visibility"],
                         description=data["description"])
    return JsonResponse(suite_summary(user=request.user, suite=suite), status=201)


@api_caller(allow_session=True)
@require_GET
def suites_detail(request: HttpRequest, suite_id: int) -> HttpResponse:
    suite = get_suite_for_user(user=request.user, suite_id=suite_id)
    return JsonResponse(suite_summary(user=request.user, suite=suite))


@api_caller(allow_session=False)
@require_http_methods(["POST"])
def suites_add_runs(request: HttpRequest, suite_id: int) -> HttpResponse:
    """Multipart: repeated `file` and `dataset` (paired in order), plus the options of
    `POST /api/runs` (sanitize, profile, allow_language_mismatch, dry_run); or repeated
    `run` ids of existing runs. All or nothing: one bad file and no run is created."""
    suite = get_suite_for_user(user=request.user, suite_id=suite_id)
    if upload_was_too_large(request):
        return JsonResponse({"error": "invalid_file", "message": too_large_issue().message},
                            status=413)
    try:
        if "run" in request.POST:
            if request.FILES:
                return _invalid("Send either files or `run` ids, not both.")
            ids = query_ids(request.POST, "run", limit=MAX_FILES)
            runs = visible_runs_by_id(user=request.user, ids=ids, parameter="run")
            suite_attach_runs(user=request.user, suite=suite, runs=runs)
            return JsonResponse(suite_summary(user=request.user, suite=suite), status=201)
    except BadQuery as exc:
        return _invalid(f"{exc.name}: {exc.message}.")
    except ValidationError as exc:
        return _invalid(" ".join(exc.messages))
    except PermissionDenied as exc:
        return JsonResponse({"error": "forbidden", "message": str(exc)}, status=403)
    form = SuiteUploadForm(request.POST, api=True)
    files, errors = paired_files(request.POST, request.FILES)
    if not form.is_valid():
        return _invalid("Some fields are invalid.", fields=form.errors.get_json_data())
    if errors:
        return _invalid(" ".join(errors))
    data = form.cleaned_data
    try:
        outcome = suite_upload(user=request.user, suite=suite, files=files,
                               sanitize=data["sanitize"], profile=data["profile"],
                               allow_language_mismatch=data["allow_language_mismatch"],
                               dry_run=data["dry_run"])
    except PermissionDenied as exc:
        return JsonResponse({"error": "forbidden", "message": str(exc)}, status=403)
    body = {"suite": suite.pk, "created": outcome.created, "errors": outcome.errors,
            "files": [item.to_dict() for item in outcome.files]}
    if not outcome.ok:
        body.update(error="invalid_files",
                    message="Nothing was created: fix the files listed under `files` and "
                            "`errors`, then send them all again.")
        return JsonResponse(body, status=400)
    return JsonResponse(body, status=201 if outcome.created else 200)
