"""The list of datasets, with the catalogue's public datasets not stored yet and the imports
a staff user starts from it. A dataset's page and the problem pages read runs and suites
too, so they live in `webapp.explore`."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from evaluator.datasets import DatasetError
from webapp.benchmarks.catalogue import (
    CatalogueRow,
    catalogue_entry,
    catalogue_import_request,
    catalogue_missing,
    job_in_progress,
)
from webapp.benchmarks.models import CatalogueImport
from webapp.benchmarks.selectors import dataset_list


def datasets(request: HttpRequest) -> HttpResponse:
    try:
        missing, catalogue_error = catalogue_missing(), ""
    except DatasetError as exc:
        missing, catalogue_error = [], str(exc)
    if not request.user.is_staff:
        # Imports and their failures (which name mirrors) are the administrators' business.
        missing = [CatalogueRow(entry=row.entry, job=None) for row in missing]
    return render(request, "benchmarks/dataset_list.html", {
        "datasets": dataset_list(), "missing": missing, "catalogue_error": catalogue_error,
        "importable": [row for row in missing if row.entry.importable],
        "staff": request.user.is_staff,
    })


@require_POST
def catalogue_import(request: HttpRequest) -> HttpResponse:
    if not request.user.is_staff:
        raise PermissionDenied("Only an administrator (a staff user) can add datasets.")
    key = request.POST.get("key", "")
    try:
        job = catalogue_import_request(user=request.user, key=key)
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
        return redirect(reverse("benchmarks:datasets") + "#catalogue")
    messages.success(request, f"Adding {job.key}: the download runs in the background.")
    return redirect(reverse("benchmarks:datasets") + "#catalogue")


@require_GET
def catalogue_import_status(request: HttpRequest, job_id: int) -> HttpResponse:
    """The state of one import, for the page's poller; staff only (others get 404)."""
    job = CatalogueImport.objects.filter(pk=job_id).first()
    if job is None or not request.user.is_staff:
        raise Http404
    entry = catalogue_entry(key=job.key)
    row = CatalogueRow(entry=entry, job=job) if entry is not None else None
    html = render_to_string("benchmarks/_catalogue_state.html",
                            {"row": row, "job": job, "staff": True}, request=request)
    return JsonResponse({
        "status": job.status, "bytes_done": job.bytes_done, "bytes_total": job.bytes_total,
        "percent": job.percent, "error": job.error, "in_progress": job_in_progress(job),
        "html": html,
    })
