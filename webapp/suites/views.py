"""Suite pages: the list, a new suite, the grid, uploading several files into a suite,
adding existing runs and taking one out. Every suite goes through `get_suite_for_user`,
every run through `visible_runs`."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.template import TemplateDoesNotExist, engines
from django.template.backends.django import DjangoTemplates
from django.template.loader import get_template
from django.urls import NoReverseMatch, reverse
from django.views.decorators.http import require_http_methods, require_POST

from webapp.benchmarks.selectors import variant_candidates
from webapp.query_params import BadQuery, handles_bad_query, query_choice, query_ids, query_int
from webapp.runs.reads.reports import visible_runs_by_id
from webapp.runs.services.intake import too_large_issue, upload_was_too_large
from webapp.suites.forms import SuiteForm, SuiteUploadForm, dataset_choices, paired_files
from webapp.suites.plus_drops import suite_plus_drops
from webapp.suites.selectors import (
    GRID_SORTS,
    GROUPINGS,
    colour_legend,
    get_suite_for_user,
    suite_attach_candidates,
    suite_can_manage,
    suite_grid,
    suite_runs,
    visible_suites,
)
from webapp.suites.services import (
    MAX_FILES,
    file_variant,
    suite_attach_runs,
    suite_create,
    suite_remove_run,
    suite_upload,
)
from webapp.teams.signed_in import SignedInRequest

SUITES_PER_PAGE = 50
DETECT_HEAD_MAX_BYTES = 1 << 20
"""The most of a file the upload page may send for its variant to be detected (it sends
256 KiB); only the first records of it are read."""
DEFECT_AWARE_PARTIAL = "runs/_defect_aware.html"
"""The three-way scores of a run (original, patched, without defective problems), drawn
by the defects app's `defect_aware_scores` tag when that app is installed."""


@handles_bad_query
def suite_list(request: HttpRequest) -> HttpResponse:
    suites = visible_suites(user=request.user).select_related("owner", "team")
    paginator = Paginator(suites, SUITES_PER_PAGE)
    number = query_int(request.GET, "page", default=1, minimum=1)
    assert number is not None
    if number > paginator.num_pages:
        raise BadQuery("page", f"there are {paginator.num_pages} page(s)")
    return render(request, "suites/suite_list.html", {"page": paginator.page(number)})


@login_required
@require_http_methods(["GET", "POST"])
def suite_new(request: SignedInRequest) -> HttpResponse:
    if request.method == "GET":
        return render(request, "suites/suite_new.html", {"form": SuiteForm(user=request.user)})
    form = SuiteForm(request.POST, user=request.user)
    if not form.is_valid():
        return render(request, "suites/suite_new.html", {"form": form}, status=400)
    data = form.cleaned_data
    suite = suite_create(owner=request.user, team=data["team"], name=data["name"],
                         model_name=data["model_name"], revision=data["revision"],
                         decoding=data["decoding"], visibility=data["visibility"],
                         description=data["description"])
    messages.success(request, "The suite is made: upload its files, or add runs you have.")
    return redirect("suites:upload", suite_id=suite.pk)


def _fidelity_url(suite_id: int) -> str:
    """The translation-fidelity page of the suite, once that page exists."""
    try:
        return reverse("fidelity:suite", args=[suite_id])
    except NoReverseMatch:
        return ""


@handles_bad_query
def suite_detail(request: HttpRequest, suite_id: int) -> HttpResponse:
    suite = get_suite_for_user(user=request.user, suite_id=suite_id)
    params = request.GET
    grouping = query_choice(params, "group", GROUPINGS, default="natural")
    sort = query_choice(params, "sort", GRID_SORTS, default="disagreement")
    default_order = "asc" if sort == "task" else "desc"
    descending = query_choice(params, "order", ("asc", "desc"), default=default_order) == "desc"
    runs = suite_runs(user=request.user, suite=suite)
    grid = suite_grid(runs=runs, grouping=grouping, sort=sort, descending=descending)
    can_manage = suite_can_manage(user=request.user, suite=suite)
    plus_drops = suite_plus_drops(user=request.user, runs=runs)
    return render(request, "suites/suite_detail.html", {
        "plus_drops": plus_drops,
        "plus_drop_groups": [
            ("Programming language", plus_drops.by_language, "plus-drop-languages"),
            ("Natural language", plus_drops.by_natural_language, "plus-drop-natural")],
        "suite": suite,
        "grid": grid,
        "legend": colour_legend(),
        "sort_state": f"{sort}:{'desc' if descending else 'asc'}",
        "groupings": GROUPINGS,
        "can_manage": can_manage,
        "unfinished": [run for run in runs if run.status != run.Status.FINISHED],
        "fidelity_url": _fidelity_url(suite.pk),
        "defect_aware": _has_defect_aware_partial(),
        "candidates": (suite_attach_candidates(user=request.user, suite=suite)
                       if can_manage else []),
    })


def _has_defect_aware_partial() -> bool:
    try:
        get_template(DEFECT_AWARE_PARTIAL)
    except TemplateDoesNotExist:
        return False
    backend = engines["django"]
    return (isinstance(backend, DjangoTemplates)
            and "defect_scores" in backend.engine.template_libraries)


def _upload_page(request: HttpRequest, suite_id: int, *, form: SuiteUploadForm | None = None,
                 outcome: object = None, errors: list[str] | None = None,
                 status: int = 200) -> HttpResponse:
    suite = get_suite_for_user(user=request.user, suite_id=suite_id)
    return render(request, "suites/suite_upload.html", {
        "suite": suite, "form": form or SuiteUploadForm(), "datasets": dataset_choices(),
        "outcome": outcome, "errors": errors or [], "max_files": MAX_FILES,
        "runs": suite_runs(user=request.user, suite=suite),
        "can_manage": suite_can_manage(user=request.user, suite=suite),
        "candidates": suite_attach_candidates(user=request.user, suite=suite),
    }, status=status)


@login_required
@require_http_methods(["GET", "POST"])
def upload(request: SignedInRequest, suite_id: int) -> HttpResponse:
    suite = get_suite_for_user(user=request.user, suite_id=suite_id)
    if not suite_can_manage(user=request.user, suite=suite):
        raise PermissionDenied("Only the suite's owner or an owner of its team can add to it.")
    if request.method == "GET":
        return _upload_page(request, suite_id)
    if upload_was_too_large(request):
        return _upload_page(request, suite_id, errors=[too_large_issue().message],
                            status=413)
    form = SuiteUploadForm(request.POST)
    files, errors = paired_files(request.POST, request.FILES)
    if not form.is_valid() or errors:
        return _upload_page(request, suite_id, form=form, errors=errors, status=400)
    outcome = suite_upload(user=request.user, suite=suite, files=files, **form.options())
    if not outcome.ok:
        return _upload_page(request, suite_id, form=form, outcome=outcome, status=400)
    if not outcome.created:
        return _upload_page(request, suite_id, form=form, outcome=outcome)
    messages.success(request, f"{len(outcome.files)} file(s) added to the suite; the runs "
                     "are evaluated in the background and the grid fills in as they finish.")
    return redirect(suite)


@login_required
@require_POST
def detect(request: SignedInRequest, suite_id: int) -> HttpResponse:
    """The variant the head of a chosen file points to, for the upload page to preselect:
    the page sends the file's first bytes (`head`) and its `name`."""
    suite = get_suite_for_user(user=request.user, suite_id=suite_id)
    if not suite_can_manage(user=request.user, suite=suite):
        raise PermissionDenied("Only the suite's owner or an owner of its team can add to it.")
    head = request.FILES.get("head")
    if head is None or (head.size or 0) > DETECT_HEAD_MAX_BYTES:
        return JsonResponse({"error": "Send the file's first bytes, at most "
                                      f"{DETECT_HEAD_MAX_BYTES:,}, as `head`."}, status=400)
    name = request.POST.get("name", "")[:300]
    detection = file_variant(uploaded=head, candidates=variant_candidates(), file_name=name)
    return JsonResponse({"key": detection.key, "reason": detection.reason,
                         "fitting": list(detection.fitting),
                         "lines": detection.evidence.lines})


@login_required
@require_POST
def attach(request: SignedInRequest, suite_id: int) -> HttpResponse:
    suite = get_suite_for_user(user=request.user, suite_id=suite_id)
    try:
        ids = query_ids(request.POST, "run", limit=MAX_FILES)
        runs = visible_runs_by_id(user=request.user, ids=ids, parameter="run")
        added = suite_attach_runs(user=request.user, suite=suite, runs=runs)
    except BadQuery as exc:
        messages.error(request, f"Could not add the runs: {exc.message}.")
        return redirect("suites:upload", suite_id=suite.pk)
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
        return redirect("suites:upload", suite_id=suite.pk)
    messages.success(request, f"{added} run(s) added to the suite.")
    return redirect(suite)


@login_required
@require_POST
def remove(request: SignedInRequest, suite_id: int, run_id: int) -> HttpResponse:
    suite = get_suite_for_user(user=request.user, suite_id=suite_id)
    if suite_remove_run(user=request.user, suite=suite, run_id=run_id):
        messages.success(request, f"Run {run_id} was taken out of the suite; the run itself "
                         "is unchanged.")
    else:
        messages.info(request, f"Run {run_id} was not in the suite.")
    return redirect("suites:upload", suite_id=suite.pk)
