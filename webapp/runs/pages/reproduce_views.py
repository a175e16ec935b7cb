"""A run's manifest as JSON, and its reproductions: asked for, followed, compared.

Every view fetches the run with `get_run_for_user`, so whoever may not see the run page
gets a 404 here too; asking for a reproduction is further limited to those who may
evaluate (`reproduce.run_can_evaluate`, a 403)."""

from __future__ import annotations

import json

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from webapp.runs.reads.selectors import get_run_for_user
from webapp.runs.services.reproduce import (
    EVALUATE_DENIED,
    active_reproduction,
    get_reproduction_for_user,
    reproduce_refusal,
    reproduction_progress,
    reproduction_report,
    run_reproduce,
)
from webapp.runs.worker.manifests import manifest_export
from webapp.teams.signed_in import SignedInRequest


def _manifest_response(request: HttpRequest, run_id: int) -> HttpResponse:
    run = get_run_for_user(user=request.user, run_id=run_id)
    body = json.dumps(manifest_export(run=run), indent=2, ensure_ascii=False) + "\n"
    response = HttpResponse(body, content_type="application/json; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="run-{run.pk}-manifest.json"'
    return response


@require_GET
def manifest_json(request: HttpRequest, run_id: int) -> HttpResponse:
    return _manifest_response(request, run_id)


def manifest_api(request: HttpRequest, run_id: int) -> HttpResponse:
    """The same document for scripts; `api_urls` mounts it, after the API's own
    authentication (a token, or a signed-in browser's session)."""
    return _manifest_response(request, run_id)


@login_required
@require_http_methods(["GET", "POST"])
def reproduce(request: SignedInRequest, run_id: int) -> HttpResponse:
    """GET explains and asks for confirmation; POST (its button) starts the reproduction."""
    run = get_run_for_user(user=request.user, run_id=run_id)
    refusal = reproduce_refusal(user=request.user, run=run)
    if refusal == EVALUATE_DENIED:
        raise PermissionDenied(refusal)
    if request.method == "GET":
        return render(request, "runs/reproduce_confirm.html", {
            "run": run, "refusal": refusal, "going": active_reproduction(run=run),
        }, status=200 if refusal is None else 409)
    try:
        reproduction = run_reproduce(user=request.user, run=run)
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
        return redirect(run)
    return redirect("runs:reproduction", run.pk, reproduction.pk)


@require_GET
def reproduction(request: HttpRequest, run_id: int, reproduction_id: int) -> HttpResponse:
    original, copy = get_reproduction_for_user(user=request.user, run_id=run_id,
                                               reproduction_id=reproduction_id)
    report = reproduction_report(original=original, reproduction=copy)
    return render(request, "runs/reproduction.html", {
        "run": original, "report": report,
        "progress": reproduction_progress(reproduction=copy),
    })


@require_GET
def reproduction_status(request: HttpRequest, run_id: int, reproduction_id: int) -> HttpResponse:
    _, copy = get_reproduction_for_user(user=request.user, run_id=run_id,
                                        reproduction_id=reproduction_id)
    return JsonResponse(reproduction_progress(reproduction=copy))
