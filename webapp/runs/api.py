"""The JSON API for scripts: `POST /api/runs`, `GET /api/runs/<id>`, its results, datasets."""

from __future__ import annotations

import json
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.http import require_GET, require_http_methods

from webapp.benchmarks.selectors import dataset_list
from webapp.runs.forms import UploadForm
from webapp.runs.intake import intake_file, too_large_issue, upload_was_too_large
from webapp.runs.lifecycle import duplicate_answer
from webapp.runs.selectors import get_run_for_user, run_result_lines, run_summary
from webapp.runs.services import run_create
from webapp.runs.uploads import discard_staged
from webapp.teams.api_auth import api_auth


def _issues(issues: Any, status: int, message: str) -> JsonResponse:
    return JsonResponse(
        {"error": "invalid_file", "message": message,
         "issues": [issue.to_dict() for issue in issues]},
        status=status,
    )


@api_auth(allow_session=False)
@require_http_methods(["POST"])
def runs_create(request: HttpRequest) -> HttpResponse:
    """Multipart form: file, dataset, name, model_name, model_meta (JSON), team, visibility,
    sanitize, profile (the dataset's reference harness if absent); `dry_run=1` checks the file
    and returns its coverage without creating a run."""
    form = UploadForm(request.POST, request.FILES, user=request.user, api=True)
    if upload_was_too_large(request):
        return _issues([too_large_issue()], 413, "The file is too large.")
    if not form.is_valid():
        return JsonResponse({"error": "invalid_request", "message": "Some fields are invalid.",
                             "fields": form.errors.get_json_data()}, status=400)
    data = form.cleaned_data
    intake = intake_file(user=request.user, uploaded=data["file"], dataset=data["dataset"],
                         sanitize=data["sanitize"], profile=data["profile"],
                         allow_language_mismatch=data["allow_language_mismatch"])
    if intake.duplicate is not None:
        return JsonResponse(duplicate_answer(user=request.user, run=intake.duplicate,
                                             team=data["team"], visibility=data["visibility"]),
                            status=409)
    check = intake.check
    if check is None or not intake.ok:
        if check is not None:
            discard_staged(check.path)
        return _issues(intake.issues, 400, "The file cannot be evaluated; see `issues`.")
    coverage = check.coverage_dict()
    warnings = [issue.to_dict() for issue in check.warnings]
    if request.POST.get("dry_run") in ("1", "true", "yes"):
        discard_staged(check.path)
        return JsonResponse({"coverage": coverage, "warnings": warnings,
                             "profile": check.options["profile"]})
    try:
        run = run_create(owner=request.user, team=data["team"], check=check, name=data["name"],
                         model_name=data["model_name"], model_meta=data["model_meta"],
                         visibility=data["visibility"])
    finally:
        discard_staged(check.path)
    return JsonResponse({
        "id": run.pk, "url": run.get_absolute_url(), "api_url": f"/api/runs/{run.pk}",
        "websocket": f"/ws/runs/{run.pk}/", "status": run.status, "coverage": coverage,
        "warnings": warnings, "profile": run.profile_name,
    }, status=201)


@api_auth(allow_session=True)
@require_GET
def runs_detail(request: HttpRequest, run_id: int) -> HttpResponse:
    run = get_run_for_user(user=request.user, run_id=run_id)
    problems = request.GET.get("problems", "1") != "0"
    return JsonResponse(run_summary(run=run, include_problems=problems))


@api_auth(allow_session=True)
@require_GET
def runs_results(request: HttpRequest, run_id: int) -> HttpResponse:
    """Per-sample results as JSON Lines, in the file's order."""
    run = get_run_for_user(user=request.user, run_id=run_id)
    # Built whole rather than streamed: under ASGI Django would buffer a synchronous stream
    # anyway, and one line per sample stays small beside the run itself.
    lines = run_result_lines(run=run)
    body = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
    response = HttpResponse(body, content_type="application/x-ndjson")
    response["Content-Disposition"] = f'attachment; filename="run-{run.pk}-results.jsonl"'
    return response


@api_auth(allow_session=True)
@require_GET
def datasets(request: HttpRequest) -> HttpResponse:
    return JsonResponse({"datasets": [
        {"id": d.pk, "key": d.key, "name": d.name, "variant": d.variant,
         "language": d.language, "natural_language": d.natural_language,
         "version": d.version, "problems": d.problem_count}
        for d in dataset_list()
    ]})
