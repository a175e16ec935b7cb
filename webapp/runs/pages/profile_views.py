"""Harness profile pages: every profile point by point, and a run's "Compare harness
profiles" (ask for it, and follow it while it runs)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.views.decorators.http import require_GET, require_POST

from evaluator.profiles import PROFILES
from webapp.runs.models import Run
from webapp.runs.pages.run_actions import act_on_run
from webapp.runs.reads.profile_reports import profile_entries, run_profiles_section
from webapp.runs.reads.selectors import Viewer, get_run_for_user, run_can_manage
from webapp.runs.worker.profile_comparison import profile_comparison_request
from webapp.teams.signed_in import SignedInRequest

SECTION_TEMPLATE = "runs/_profiles.html"


@require_GET
def profiles(request: HttpRequest) -> HttpResponse:
    return render(request, "runs/profiles.html", {"entries": profile_entries()})


def profiles_section_context(*, user: Viewer, run: Run) -> dict[str, Any]:
    """What `_profiles.html` draws, on the run page and in its status answers."""
    section = run_profiles_section(run=run)
    comparison = section.comparison
    can_manage = run_can_manage(user=user, run=run)
    return {
        "run": run,
        "section": section,
        "can_compare": (can_manage and run.status == Run.Status.FINISHED
                        and (comparison is None or not comparison.in_progress)),
        "profile_count": len(PROFILES),
    }


@require_GET
def run_profiles_status(request: HttpRequest, run_id: int) -> HttpResponse:
    """The comparison's state, with the section drawn again: the run page polls it while a
    comparison is queued or running."""
    run = get_run_for_user(user=request.user, run_id=run_id)
    context = profiles_section_context(user=request.user, run=run)
    section = context["section"]
    comparison = section.comparison
    return JsonResponse({
        "status": section.status,
        "in_progress": section.in_progress,
        "profiles_done": comparison.profiles_done if comparison else 0,
        "profiles_total": comparison.profiles_total if comparison else 0,
        "error": comparison.error if comparison else "",
        "html": render_to_string(SECTION_TEMPLATE, context, request=request),
    })


@login_required
@require_POST
def run_profiles_compare(request: SignedInRequest, run_id: int) -> HttpResponse:
    run = act_on_run(request, run_id, profile_comparison_request,
                     started="The harness profiles are being compared; the section below "
                             "follows it.")
    return redirect(f"{run.get_absolute_url()}#harness-profiles")
