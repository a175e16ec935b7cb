"""Run pages: the list, upload and confirm, the live run page, a sample, cancel and re-run."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from webapp.benchmarks.selectors import dataset_lookup
from webapp.runs.forms import ConfirmForm, UploadForm
from webapp.runs.intake import intake_file, intake_staged, too_large_issue, upload_was_too_large
from webapp.runs.models import Sample
from webapp.runs.selectors import (
    get_run_for_user,
    run_can_manage,
    run_pass_at_k,
    run_problem_results,
    run_snapshot,
    visible_runs,
)
from webapp.runs.services import run_cancel, run_create, run_rerun
from webapp.runs.uploads import discard_staged, file_sha256, staged_payload, staged_token
from webapp.teams.selectors import teams_for_user


def run_list(request: HttpRequest) -> HttpResponse:
    runs = visible_runs(user=request.user).select_related("dataset", "owner", "team")
    page = Paginator(runs, 50).get_page(request.GET.get("page"))
    return render(request, "runs/run_list.html", {"page": page})


@login_required
@require_http_methods(["GET", "POST"])
def upload(request: HttpRequest) -> HttpResponse:
    if request.method == "GET":
        return render(request, "runs/upload.html", {"form": UploadForm(user=request.user)})
    form = UploadForm(request.POST, request.FILES, user=request.user)
    if upload_was_too_large(request):
        return render(request, "runs/upload.html",
                      {"form": UploadForm(user=request.user), "issues": [too_large_issue()]},
                      status=413)
    if not form.is_valid():
        return render(request, "runs/upload.html", {"form": form}, status=400)
    data = form.cleaned_data
    intake = intake_file(user=request.user, uploaded=data["file"], dataset=data["dataset"],
                         sanitize=data["sanitize"])
    if intake.duplicate is not None:
        return render(request, "runs/upload.html",
                      {"form": form, "duplicate": intake.duplicate}, status=409)
    if not intake.ok or intake.check is None:
        return render(request, "runs/upload.html",
                      {"form": form, "issues": intake.issues}, status=400)
    check = intake.check
    token = staged_token({
        "user": request.user.pk, "staged": check.path.name, "file_name": check.file_name,
        "sha256": check.sha256, "size": check.size, "dataset": check.dataset.pk,
        "sanitize": data["sanitize"],
        "name": data["name"], "model_name": data["model_name"], "model_meta": data["model_meta"],
        "team": data["team"].slug, "visibility": data["visibility"],
    })
    return render(request, "runs/upload_confirm.html", {
        "check": check,
        "coverage": check.coverage_dict(),
        "warnings": check.warnings,
        "confirm": ConfirmForm(initial={"token": token}),
        "team": data["team"],
        "visibility": data["visibility"],
        "name": data["name"] or check.file_name,
        "model_name": data["model_name"],
    })


@login_required
@require_POST
def upload_confirm(request: HttpRequest) -> HttpResponse:
    form = ConfirmForm(request.POST)
    payload = staged_payload(form.data.get("token", "")) if form.is_valid() else None
    if payload is None or payload.get("user") != request.user.pk:
        messages.error(request, "That upload has expired or was already used; upload it again.")
        return redirect("runs:upload")
    path = payload["path"]
    dataset = dataset_lookup(reference=str(payload["dataset"]))
    team = teams_for_user(user=request.user).filter(slug=payload["team"]).first()
    if dataset is None or team is None or file_sha256(path) != payload["sha256"]:
        discard_staged(path)
        messages.error(request, "That upload can no longer be used; upload it again.")
        return redirect("runs:upload")
    intake = intake_staged(user=request.user, path=path, file_name=payload["file_name"],
                           sha256=payload["sha256"], size=payload["size"], dataset=dataset,
                           sanitize=payload["sanitize"])
    if intake.duplicate is not None:
        return redirect(intake.duplicate)
    if not intake.ok or intake.check is None:
        messages.error(request, "The file no longer passes its checks; upload it again.")
        return redirect("runs:upload")
    try:
        run = run_create(owner=request.user, team=team, check=intake.check,
                         name=payload["name"], model_name=payload["model_name"],
                         model_meta=payload["model_meta"], visibility=payload["visibility"])
    finally:
        discard_staged(path)
    return redirect(run)


def run_detail(request: HttpRequest, run_id: int) -> HttpResponse:
    run = get_run_for_user(user=request.user, run_id=run_id)
    snapshot = run_snapshot(run=run)
    problems = list(run_problem_results(run=run)) if not run.is_active else []
    metrics = run_pass_at_k(run=run, ks=None)
    return render(request, "runs/run_detail.html", {
        "run": run,
        "snapshot": snapshot,
        "log": reversed(snapshot["log"]),
        "problems": problems,
        "reported": [m for m in metrics if m["k"] in (1, 10, 100)],
        "curve": metrics,
        "can_manage": run_can_manage(user=request.user, run=run),
        "live_config": {
            "run_id": run.pk,
            "ws_path": f"/ws/runs/{run.pk}/",
            "live": run.is_active and request.user.is_authenticated,
            "done": snapshot["progress"]["done"],
        },
    })


def sample_detail(request: HttpRequest, run_id: int, sample_id: int) -> HttpResponse:
    run = get_run_for_user(user=request.user, run_id=run_id)
    sample = get_object_or_404(Sample.objects.select_related("variant"), run=run, pk=sample_id)
    return render(request, "runs/sample_detail.html", {
        "run": run, "sample": sample, "result": sample.result or {},
        "tests": (sample.result or {}).get("tests", []),
    })


@login_required
@require_POST
def cancel(request: HttpRequest, run_id: int) -> HttpResponse:
    run = get_run_for_user(user=request.user, run_id=run_id)
    if run_cancel(user=request.user, run=run):
        messages.success(request, "The run was cancelled.")
    else:
        messages.info(request, "The run had already stopped.")
    return redirect(run)


@login_required
@require_POST
def rerun(request: HttpRequest, run_id: int) -> HttpResponse:
    run = get_run_for_user(user=request.user, run_id=run_id)
    try:
        new = run_rerun(user=request.user, run=run,
                        use_cache=request.POST.get("use_cache", "1") == "1")
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
        return redirect(run)
    return redirect(new)

