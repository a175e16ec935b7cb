"""The JSON API for scripts: `POST /api/runs`, `GET /api/runs/<id>`, its results and test
matrix, datasets.

The endpoints are django-ninja operations on `router` (mounted in `api_urls`), so the
OpenAPI schema at `/api/openapi.json` is built from them. They read the request themselves
and answer plain `JsonResponse`s: the upload goes through the same `UploadForm` as the page,
and its errors keep their own shape. The schema's request bodies and answers are the models
of `api_schemas`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import partial
from typing import Any, Literal, TypeVar

from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.http.response import HttpResponseBase
from ninja import P, QueryEx, Router, Schema

from webapp.benchmarks.selectors import dataset_list
from webapp.runs.domain import schemas
from webapp.runs.forms import UploadForm
from webapp.runs.reads.exports import matrix_json
from webapp.runs.reads.page_cache import (
    FINISHED_SECONDS,
    LIVE_SECONDS,
    LiveEntry,
    key_of,
    live_page,
    run_version,
    shared,
)
from webapp.runs.reads.selectors import (
    get_run_for_user,
    run_counts_and_status,
    run_result_lines,
    run_summary,
)
from webapp.runs.services.intake import (
    RunDetails,
    intake_file,
    intake_start,
    too_large_issue,
    upload_was_too_large,
)
from webapp.runs.services.lifecycle import duplicate_answer
from webapp.runs.upload_checks.files import Issue
from webapp.streaming import StreamedDownload
from webapp.teams.api_auth import TOKEN, TOKEN_OR_SESSION
from webapp.teams.signed_in import SignedInRequest
from webapp.textfields import flag_from_text

router = Router(tags=["runs"])

REFUSALS = {401: schemas.Error, 404: schemas.Error}
"""Answers every endpoint may give: no or a bad token; a run the caller may not see."""

View = TypeVar("View", bound=Callable[..., HttpResponseBase])


def read_on(on: Router, path: str, **options: Any) -> Callable[[View], View]:
    """A GET operation of `on` that answers HEAD too, as Django's `require_GET` views did
    (HEAD stays out of the schema)."""

    def register(view: View) -> View:
        on.get(path, **options)(view)
        on.add_api_operation(path, ["HEAD"], view, auth=options["auth"],
                             include_in_schema=False)
        return view

    return register


def read(path: str, **options: Any) -> Callable[[View], View]:
    """`read_on` this module's router."""
    return read_on(router, path, **options)


def request_body(model: type[Schema], content_type: str = "application/json",
                 ) -> dict[str, object]:
    """An operation's documented request body, from a model of `api_schemas`, for views that
    read the body themselves so that their errors keep the API's own shape."""
    return {"requestBody": {"required": True, "content": {
        content_type: {"schema": model.model_json_schema(ref_template="#/components/schemas/"
                                                                      "{model}")}}}}


def _issues(issues: tuple[Issue, ...] | list[Issue], status: int, message: str) -> JsonResponse:
    return JsonResponse(
        {"error": "invalid_file", "message": message,
         "issues": [issue.to_dict() for issue in issues]},
        status=status,
    )


@router.post(
    "/runs", auth=TOKEN, url_name="runs", operation_id="run_create", summary="Upload a run",
    response={201: schemas.RunCreated, 200: schemas.DryRun,
              400: schemas.InvalidFile | schemas.InvalidRequest,
              409: schemas.Duplicate, 413: schemas.InvalidFile, 401: schemas.Error},
    openapi_extra=request_body(schemas.RunUpload, "multipart/form-data"),
)
def runs_create(request: SignedInRequest) -> HttpResponse:
    """Upload a generations file and start its evaluation. Nothing is stored unless the whole
    file is valid; a 400 lists each problem with its line, column and field. With
    `dry_run=1`, check the file and answer its coverage without creating a run. A file already
    evaluated with the same options is a 409 naming the existing run."""
    form = UploadForm(request.POST, request.FILES, user=request.user, api=True)
    if upload_was_too_large(request):
        return _issues([too_large_issue()], 413, "The file is too large.")
    fields = {} if form.is_valid() else form.errors.get_json_data()
    try:
        # Read here rather than by the form, which the upload page shares.
        dry_run = flag_from_text(request.POST.get("dry_run"))
    except ValidationError as exc:
        fields["dry_run"] = [{"message": message, "code": exc.code or "invalid"}
                             for message in exc.messages]
    if fields:
        return JsonResponse({"error": "invalid_request", "message": "Some fields are invalid.",
                             "fields": fields}, status=400)
    data = form.cleaned_data
    # Unless it is a dry run, the samples go into a staged run as they are read, which is
    # started once the whole file has passed.
    intake = intake_file(user=request.user, uploaded=data["file"], dataset=data["dataset"],
                         sanitize=data["sanitize"], profile=data["profile"],
                         timeout_seconds=data["timeout_seconds"],
                         allow_language_mismatch=data["allow_language_mismatch"],
                         store=None if dry_run else RunDetails(
                             team=data["team"], name=data["name"],
                             model_name=data["model_name"], model_meta=data["model_meta"],
                             visibility=data["visibility"]))
    if intake.duplicate is not None:
        return JsonResponse(duplicate_answer(user=request.user, run=intake.duplicate,
                                             team=data["team"], visibility=data["visibility"]),
                            status=409)
    check = intake.check
    if check is None or not intake.ok:
        intake.discard()
        return _issues(intake.issues, 400, "The file cannot be evaluated; see `issues`.")
    coverage = check.coverage_dict()
    warnings = [issue.to_dict() for issue in check.warnings]
    if dry_run:
        return JsonResponse({"coverage": coverage, "warnings": warnings,
                             "profile": check.options["profile"]})
    try:
        run = intake_start(intake, user=request.user)
    finally:
        intake.discard()  # nothing, once started
    if intake.staged is not None and run.pk != intake.staged.pk:
        # The same file became a run meanwhile (another request): that one stands.
        return JsonResponse(duplicate_answer(user=request.user, run=run, team=data["team"],
                                             visibility=data["visibility"]), status=409)
    return JsonResponse({
        "id": run.pk, "url": run.get_absolute_url(), "api_url": f"/api/runs/{run.pk}",
        "websocket": f"/ws/runs/{run.pk}/", "status": run.status, "coverage": coverage,
        "warnings": warnings, "profile": run.profile_name,
    }, status=201)


@read(
    "/runs/{int:run_id}", auth=TOKEN_OR_SESSION, url_name="run", operation_id="run_read",
    summary="Read a run",
    response={200: schemas.RunSummary, 400: schemas.InvalidRequest, **REFUSALS},
)
def runs_detail(
    request: HttpRequest, run_id: int,
    problems: QueryEx[Literal["0", "1"],
                      P(description="0 leaves out the per-problem scores.")] = "1",
) -> HttpResponse:
    """The run's status, progress, pass@k with 95% intervals, and with `problems` (unless
    `problems=0`) the scores of each problem. Poll it until `status` is finished, failed or
    cancelled."""
    run = get_run_for_user(user=request.user, run_id=run_id)
    include = problems != "0"
    # Who may read it was decided above; the summary itself is the same for every reader,
    # so it is kept in the page cache under the run's version (`webapp.runs.reads.page_cache`).
    key = key_of("api-run", run.pk, run_version(run=run), include)
    draw = partial(run_summary, run=run, include_problems=include)
    if not run.is_active:
        return JsonResponse(shared(key, draw, timeout=FINISHED_SECONDS))

    def answer(live: LiveEntry[dict[str, Any]]) -> JsonResponse:
        # A poller waits on these: never older than the request.
        status, progress = run_counts_and_status(run_id=run.pk)
        if status == live["value"]["status"]:
            return JsonResponse({**live["value"], "progress": progress})
        # The run moved on since its row was read (it finished, say): a summary kept
        # from before would give the new status without the scores that came with it.
        run.refresh_from_db()
        return JsonResponse(run_summary(run=run, include_problems=include))

    # The rest of a run still going's summary (its problems, its unstable count) is at most
    # two `LIVE_SECONDS` old: past one, it is served while it is drawn again after a response.
    answered = live_page(key, draw, answer, stale_seconds=LIVE_SECONDS)
    assert answered is not None  # `answer` always answers
    return answered


@read(
    "/runs/{int:run_id}/results", auth=TOKEN_OR_SESSION, url_name="run_results",
    operation_id="run_results", summary="Per-sample results (JSON Lines)",
    response=REFUSALS,
    openapi_extra={"responses": {"200": {
        "description": "One JSON object per sample, in the file's order.",
        "content": {"application/x-ndjson": {"schema": {"type": "string"}}}}}},
)
def runs_results(request: HttpRequest, run_id: int) -> StreamedDownload:
    """Per-sample results as JSON Lines, in the file's order, like
    `python -m evaluator evaluate --results`."""
    run = get_run_for_user(user=request.user, run_id=run_id)
    lines = (json.dumps(line, ensure_ascii=False) + "\n" for line in run_result_lines(run=run))
    return StreamedDownload(lines, content_type="application/x-ndjson",
                            filename=f"run-{run.pk}-results.jsonl")


@read(
    "/runs/{int:run_id}/matrix", auth=TOKEN_OR_SESSION, url_name="run_matrix",
    operation_id="run_matrix", summary="The problem × sample × test matrix",
    response=REFUSALS,
    openapi_extra={"responses": {"200": {
        "description": "`run` (what was evaluated, and how) and `problems`, each with its "
                       "samples and, for each sample, the outcome of every test.",
        "content": {"application/json": {"schema": {"type": "object", "required": [
            "run", "problems"], "properties": {
                "run": {"type": "object"},
                "problems": {"type": "array", "items": {"type": "object"}}}}}}}}},
)
def runs_matrix(request: HttpRequest, run_id: int) -> StreamedDownload:
    """The run page's `matrix.json` download, for scripts: every sample's status and every
    test's outcome, problem by problem."""
    run = get_run_for_user(user=request.user, run_id=run_id)
    return StreamedDownload(matrix_json(run), content_type="application/json")


@read(
    "/datasets", auth=TOKEN_OR_SESSION, url_name="datasets", operation_id="dataset_list",
    summary="List the datasets", tags=["datasets"],
    response={200: schemas.DatasetList, 401: schemas.Error},
)
def datasets(request: HttpRequest) -> HttpResponse:
    """The datasets a run can be evaluated on; give `key` (or `id`) as an upload's
    `dataset`."""
    return JsonResponse({"datasets": [
        {"id": d.pk, "key": d.key, "name": d.name, "variant": d.variant,
         "language": d.language, "natural_language": d.natural_language,
         "version": d.version, "problems": d.problem_count}
        for d in dataset_list()
    ]})
