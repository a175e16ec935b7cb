"""Translation-fidelity pages: a suite's, any chosen runs', and filing a dataset's
translation-defect candidate into the review queue. Runs go through `visible_runs`, suites
through `get_suite_for_user`; the review queue shows a person their own proposals, and
staff every proposal."""

from __future__ import annotations

import json
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from evaluator.defects import KINDS
from evaluator.defects import TEXT_FIELDS as DETECT_FIELDS
from webapp.benchmarks.models import Dataset, ProblemVariant
from webapp.query_params import BadQuery, handles_bad_query, query_ids, query_int
from webapp.runs.models import Run
from webapp.runs.reads.reports import finished_runs, visible_runs_by_id
from webapp.suites.fidelity.analysis import Fidelity, task_number
from webapp.suites.fidelity.selectors import (
    MAX_RUNS,
    CannotAnalyse,
    RunsFidelity,
    candidate_for,
    flag_details,
    runs_fidelity,
)
from webapp.suites.fidelity.services import (
    DEFAULT_KIND,
    EntryChanged,
    ProposalDraft,
    ProposalError,
    defect_proposal_create,
    defect_proposal_review,
    entry_digest,
    proposal_entry,
)
from webapp.suites.fidelity_models import DefectProposal
from webapp.suites.selectors import get_suite_for_user, suite_runs
from webapp.teams.signed_in import SignedInRequest


def _chart(fidelity: Fidelity) -> dict[str, Any]:
    """The pairs' differences with their intervals, for a Plotly forest plot."""
    rows = []
    for pair in fidelity.pairs:
        a, b = fidelity.variants[pair.a], fidelity.variants[pair.b]
        rows.append({"label": f"{a.label} − {b.label}", "diff": round(pair.diff, 6),
                     "low": round(pair.low, 6), "high": round(pair.high, 6),
                     "p": pair.p_holm, "significant": pair.significant})
    return {"pairs": rows, "alpha": fidelity.alpha}


def _page(request: HttpRequest, *, title: str, runs: list[Run], suite: Any = None,
          chosen: list[int] | None = None) -> HttpResponse:
    focus = query_int(request.GET, "problem", default=None, maximum=10**6)
    context: dict[str, Any] = {"title": title, "suite": suite, "chosen": chosen or [],
                               "max_runs": MAX_RUNS, "result": None, "error": ""}
    if suite is None:
        context["pickable"] = finished_runs(user=request.user, limit=200)
    if suite is None and not chosen:
        return render(request, "suites/fidelity.html", context)
    try:
        result: RunsFidelity = runs_fidelity(runs=runs)
    except CannotAnalyse as exc:
        context["error"] = str(exc)
        return render(request, "suites/fidelity.html", context, status=400 if chosen else 200)
    fidelity = result.fidelity
    if focus is None:
        details = flag_details(fidelity=fidelity)
    else:
        details = flag_details(fidelity=fidelity, task_id=f"HumanEval/{focus}")
        if not details:
            raise BadQuery("problem", f"HumanEval/{focus} is not flagged here")
    run_of = {run.pk: run for run in result.runs}
    context.update({
        "result": result, "fidelity": fidelity,
        "variants": [(variant, run_of.get(variant.run_id or 0), count) for variant, count in
                     zip(fidelity.variants, fidelity.flags_by_variant(), strict=True)],
        "pairs": [(pair, fidelity.variants[pair.a], fidelity.variants[pair.b])
                  for pair in fidelity.pairs],
        "flags": [(flag, fidelity.variants[flag.variant], fidelity.variants[flag.reference],
                   task_number(flag.task_id)) for flag in fidelity.flags],
        "details": details, "focus": focus, "focused": focus is not None,
        "chart": _chart(fidelity),
    })
    return render(request, "suites/fidelity.html", context)


@handles_bad_query
def suite_fidelity(request: HttpRequest, suite_id: int) -> HttpResponse:
    suite = get_suite_for_user(user=request.user, suite_id=suite_id)
    return _page(request, title=f"Translation fidelity · {suite.name}", suite=suite,
                 runs=suite_runs(user=request.user, suite=suite))


@handles_bad_query
def runs_fidelity_page(request: HttpRequest) -> HttpResponse:
    """`?runs=1,2,3`: runs of one model on several variants, chosen by hand. An id the user
    may not see is refused like an unknown one (a 400 naming it)."""
    ids = query_ids(request.GET, "runs", limit=MAX_RUNS)
    runs = visible_runs_by_id(user=request.user, ids=ids, parameter="runs")
    return _page(request, title="Translation fidelity of chosen runs", runs=runs, chosen=ids)


# -- filing a candidate ----------------------------------------------------------------------
def _draft(post: Any) -> ProposalDraft:
    return ProposalDraft(kind=str(post.get("kind", DEFAULT_KIND)),
                         defect=str(post.get("defect", "")),
                         detect_field=str(post.get("detect_field", "")),
                         detect_contains=str(post.get("detect_contains", "")))


@login_required
@require_http_methods(["GET", "POST"])
def propose_defect(request: SignedInRequest, dataset_id: int, number: int) -> HttpResponse:
    """GET: the form. POST `preview`: the exact registry entry, to confirm. POST `confirm`:
    files it. The candidate is computed again on every step from what the user may see,
    so a hand-made POST cannot file a problem that is not a candidate."""
    dataset = get_object_or_404(Dataset, pk=dataset_id)
    variant = ProblemVariant.objects.filter(dataset=dataset, problem__number=number
                                            ).select_related("problem", "dataset").first()
    if variant is None:
        raise Http404("No such problem in this dataset")
    candidate = candidate_for(user=request.user, dataset=dataset, task_id=variant.problem.task_id)
    if candidate is None:
        raise Http404("Not a translation-defect candidate in the suites you can see")
    draft = _draft(request.POST) if request.method == "POST" else ProposalDraft(
        kind=DEFAULT_KIND, defect="")
    context: dict[str, Any] = {"dataset": dataset, "variant": variant, "candidate": candidate,
                               "draft": draft, "kinds": sorted(KINDS),
                               "detect_fields": DETECT_FIELDS, "entry_json": "", "error": ""}
    if request.method == "POST":
        try:
            if request.POST.get("action") == "confirm":
                proposal = defect_proposal_create(
                    user=request.user, dataset=dataset, variant=variant, candidate=candidate,
                    draft=draft, previewed=str(request.POST.get("previewed", "")))
                messages.success(request, f"Filed {proposal.entry['id']} for review.")
                return redirect("fidelity:queue")
            entry = proposal_entry(dataset=dataset, variant=variant, candidate=candidate,
                                   draft=draft)
            context.update(entry_json=json.dumps(entry, indent=1, ensure_ascii=False),
                           previewed=entry_digest(entry))
        except EntryChanged as exc:
            context.update(error=str(exc), previewed=entry_digest(exc.entry),
                           entry_json=json.dumps(exc.entry, indent=1, ensure_ascii=False))
            return render(request, "suites/fidelity_propose.html", context, status=409)
        except ProposalError as exc:
            context["error"] = str(exc)
            return render(request, "suites/fidelity_propose.html", context, status=400)
    return render(request, "suites/fidelity_propose.html", context)


@login_required
def proposal_queue(request: SignedInRequest) -> HttpResponse:
    proposals = DefectProposal.objects.select_related("dataset", "problem", "proposed_by")
    if not request.user.is_staff:
        proposals = proposals.filter(proposed_by=request.user)
    rows = [(proposal, json.dumps(proposal.entry, indent=1, ensure_ascii=False))
            for proposal in proposals[:200]]
    return render(request, "suites/fidelity_queue.html",
                  {"rows": rows, "everyone": request.user.is_staff,
                   "statuses": DefectProposal.Status.choices})


@login_required
@require_POST
def proposal_review(request: SignedInRequest, proposal_id: int) -> HttpResponse:
    """Staff only; anyone else gets a 404, as for a proposal that does not exist."""
    if not request.user.is_staff:
        raise Http404("No such proposal")
    proposal = get_object_or_404(DefectProposal, pk=proposal_id)
    try:
        defect_proposal_review(user=request.user, proposal=proposal,
                               status=str(request.POST.get("status", "")))
    except ProposalError as exc:
        return HttpResponseBadRequest(str(exc))
    messages.success(request, f"{proposal.entry.get('id')} is now {proposal.status}.")
    return redirect("fidelity:queue")
