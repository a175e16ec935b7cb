"""Defect-aware scores of a run: its status answer (polled by the run page while the patched
verdicts are computed) and the "compute" button."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect
from django.template.loader import render_to_string
from django.views.decorators.http import require_GET, require_POST

from webapp.defects.scores import SCORES_PARAM, WAYS, query_scores, run_three_way
from webapp.defects.services import patched_scoring_request
from webapp.query_params import handles_bad_query
from webapp.runs.models import Run
from webapp.runs.pages.run_actions import act_on_run
from webapp.runs.reads.reports import run_reported_ks
from webapp.runs.reads.selectors import get_run_for_user, run_can_manage
from webapp.teams.signed_in import SignedInRequest

PARTIAL = "runs/_defect_aware.html"
COMPUTE_PARTIAL = "runs/_defect_aware_compute.html"
"""The viewer's own part of `PARTIAL`, which it includes."""


def defect_aware_context(*, request: HttpRequest, run: Run, compact: bool = False
                         ) -> dict[str, Any]:
    """What `_defect_aware.html` draws: the three ways, the reader's choice (`?scores=`),
    and whether the reader may start the patched computation."""
    three = run_three_way(run=run, ks=run_reported_ks(run)) if not run.is_active else None
    patched = three.way("patched") if three else None
    return {
        "run": run,
        "three": three,
        "scores": query_scores(request.GET),
        "compact": compact,
        "in_progress": bool(patched and patched.state in ("queued", "running")),
        "can_compute": (patched is not None and patched.state in ("not_computed", "failed")
                        and run_can_manage(user=request.user, run=run)),
        "request": request,
    }


@require_GET
@handles_bad_query
def run_defect_scores_status(request: HttpRequest, run_id: int) -> HttpResponse:
    run = get_run_for_user(user=request.user, run_id=run_id)
    context = defect_aware_context(request=request, run=run)
    three = context["three"]
    patched = three.way("patched") if three else None
    return JsonResponse({
        "patched": patched.state if patched else "",
        "in_progress": context["in_progress"],
        "done": patched.progress[0] if patched else 0,
        "total": patched.progress[1] if patched else 0,
        "html": render_to_string(PARTIAL, context, request=request),
    })


@login_required
@require_POST
def run_patched_compute(request: SignedInRequest, run_id: int) -> HttpResponse:
    run = act_on_run(request, run_id, patched_scoring_request,
                     started="The patched problems' samples are being run again; the scores "
                             "below follow it.")
    scores = request.POST.get(SCORES_PARAM, "")
    suffix = f"?{SCORES_PARAM}={scores}" if scores in WAYS and scores != "original" else ""
    return redirect(f"{run.get_absolute_url()}{suffix}#defect-aware")
