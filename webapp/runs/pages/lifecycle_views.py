"""Pages that change a run after upload: edit, retract and put back, delete with
confirmation, the deleted runs and their restore, and the confirmation before a cancel.
Each fetches the run with `get_run_for_user` (a 404 for whoever may not see it) and leaves
the decision to act to `webapp.runs.services.lifecycle` (a 403 for a viewer who may not
manage it)."""

from __future__ import annotations

import json

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from webapp.query_params import BadQuery, query_flag
from webapp.runs.forms import RunEditForm
from webapp.runs.models import Run
from webapp.runs.pages import views
from webapp.runs.pages.run_actions import act_on_run
from webapp.runs.reads.selectors import get_run_for_user, run_can_manage
from webapp.runs.services.lifecycle import (
    MANAGE_DENIED,
    deleted_runs_for_user,
    get_deleted_run_for_user,
    restore_deadline,
    run_delete,
    run_restore,
    run_resume,
    run_set_on_leaderboards,
    run_update,
)
from webapp.teams.signed_in import SignedInRequest


def _managed_run(request: HttpRequest, run_id: int) -> Run:
    run = get_run_for_user(user=request.user, run_id=run_id)
    if not run_can_manage(user=request.user, run=run):
        raise PermissionDenied(MANAGE_DENIED)
    return run


def _initial(run: Run, request: HttpRequest) -> dict[str, object]:
    """The run's values; the duplicate-upload page may propose another team or visibility."""
    initial: dict[str, object] = {
        "name": run.name, "model_name": run.model_name,
        "model_meta": json.dumps(run.model_meta, ensure_ascii=False) if run.model_meta else "",
        "team": run.team.slug, "visibility": run.visibility,
    }
    for field in ("team", "visibility"):
        proposed = request.GET.get(field, "")
        if proposed and len(proposed) <= 100:
            initial[field] = proposed
    return initial


@login_required
@require_http_methods(["GET", "POST"])
def run_edit(request: SignedInRequest, run_id: int) -> HttpResponse:
    run = _managed_run(request, run_id)
    if request.method == "GET":
        form = RunEditForm(initial=_initial(run, request), user=request.user, run=run)
        return render(request, "runs/run_edit.html", {"run": run, "form": form})
    form = RunEditForm(request.POST, user=request.user, run=run)
    edit = form.edit if form.is_valid() else None
    if edit is not None:
        try:
            changes = run_update(user=request.user, run=run, edit=edit)
        except ValidationError as exc:
            for field, errors in exc.message_dict.items():
                form.add_error(field if field in form.fields else None, errors)
        else:
            count = len(changes)
            messages.success(request, f"Saved {count} change{'s' if count != 1 else ''}."
                             if count else "Nothing was changed.")
            return redirect(run)
    return render(request, "runs/run_edit.html", {"run": run, "form": form}, status=400)


@login_required
@require_POST
def run_leaderboards(request: SignedInRequest, run_id: int) -> HttpResponse:
    """`listed=1` puts the run back on the leaderboards, `listed=0` retracts it; `confirm=1`
    lists a run held for review."""
    run = get_run_for_user(user=request.user, run_id=run_id)
    listed = request.POST.get("listed")
    if listed not in ("0", "1"):
        messages.error(request, "Say listed=1 (put back) or listed=0 (retract).")
        return redirect(run)
    try:
        confirm = query_flag(request.POST, "confirm")
    except BadQuery as exc:
        messages.error(request, f"Nothing changed: {exc}.")
        return redirect(run)
    try:
        changed = run_set_on_leaderboards(user=request.user, run=run, listed=listed == "1",
                                          confirm=confirm)
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
        return redirect(run)
    if confirm:
        messages.success(request, "Confirmed: the run stands on the leaderboards.")
    elif changed:
        messages.success(request, "The run is back on the leaderboards." if listed == "1"
                         else "The run was retracted from the leaderboards.")
    return redirect(run)


@login_required
@require_http_methods(["GET", "POST"])
def run_delete_confirm(request: SignedInRequest, run_id: int) -> HttpResponse:
    """GET asks for confirmation; POST (the confirmation's button) deletes."""
    run = _managed_run(request, run_id)
    if request.method == "GET":
        return render(request, "runs/run_delete.html",
                      {"run": run, "days": settings.DELETED_RUN_DAYS})
    run_delete(user=request.user, run=run)
    deadline = restore_deadline(run)
    messages.success(request, f"“{run.name}” was deleted. You can restore it until "
                     f"{deadline:%Y-%m-%d %H:%M} UTC." if deadline else "Deleted.")
    return redirect("runs:deleted")


@login_required
def deleted_list(request: SignedInRequest) -> HttpResponse:
    runs = [(run, restore_deadline(run)) for run in deleted_runs_for_user(user=request.user)]
    return render(request, "runs/deleted_list.html", {"runs": runs})


@login_required
@require_POST
def run_restore_view(request: SignedInRequest, run_id: int) -> HttpResponse:
    run = get_deleted_run_for_user(user=request.user, run_id=run_id)
    if run_restore(user=request.user, run=run):
        messages.success(request, f"“{run.name}” was restored.")
    return redirect(run)


@login_required
@require_http_methods(["GET", "POST"])
def cancel(request: SignedInRequest, run_id: int) -> HttpResponse:
    """GET asks for confirmation; POST cancels (`views.cancel`)."""
    if request.method == "POST":
        return views.cancel(request, run_id)
    run = _managed_run(request, run_id)
    if not run.is_active:
        messages.info(request, "The run has already stopped.")
        return redirect(run)
    return render(request, "runs/run_cancel.html", {"run": run})


@login_required
@require_POST
def resume(request: SignedInRequest, run_id: int) -> HttpResponse:
    run = act_on_run(request, run_id, run_resume,
                     started="The run is resuming: what it had evaluated is kept.")
    return redirect(run)
