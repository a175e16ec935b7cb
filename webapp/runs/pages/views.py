"""Run pages: the list, upload and confirm, the live run page, its samples and one sample,
scores, exports, cancel and re-run."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache, partial
from typing import Any, TypedDict, TypeVar

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, QueryDict, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from evaluator.records import STATUSES
from webapp.query_params import (
    BadQuery,
    handles_bad_query,
    query_choice,
    query_flag,
    query_ids,
    query_int,
    query_text,
)
from webapp.runs.domain.events import PassAtKValue, SnapshotEvent
from webapp.runs.forms import ConfirmForm, UploadForm
from webapp.runs.models import SAMPLE_STATUSES, Run, RunMetric, Sample
from webapp.runs.reads import exports
from webapp.runs.reads.page_cache import (
    FINISHED_SECONDS,
    LIVE_PART_SECONDS,
    LiveEntry,
    fragment_key,
    key_of,
    live_page,
    read_ahead,
    reading_ahead,
    run_row,
    run_version,
    shared,
)
from webapp.runs.reads.reports import (
    PROBLEM_SHOWS,
    PROBLEM_SORTS,
    SANITIZING_FILTERS,
    FailureBar,
    ProblemTable,
    RunFacts,
    SampleFilters,
    capped,
    check_task_id,
    live_status_counts,
    overlay_candidates,
    problem_table_k,
    run_curves,
    run_facts,
    run_failure_breakdown,
    run_live_config,
    run_problem_table,
    run_reported_ks,
    run_samples,
    run_sanitizing,
    sample_neighbours,
    sample_test_rows,
    samples_url,
    visible_runs_by_id,
)
from webapp.runs.reads.selectors import (
    get_run_for_user,
    run_can_manage,
    run_interruptions,
    run_pass_at_k,
    run_pass_hat_k,
    run_snapshot,
    run_unstable_count,
    visible_runs,
)
from webapp.runs.services.intake import (
    RunDetails,
    StagedUploadRefused,
    intake_cancel,
    intake_confirm,
    intake_file,
    intake_hold,
    too_large_issue,
    upload_was_too_large,
)
from webapp.runs.services.lifecycle import duplicate_offer, run_lifecycle_context
from webapp.runs.services.writes import run_cancel, run_rerun
from webapp.streaming import StreamedDownload
from webapp.teams.selectors import keep_roles
from webapp.teams.signed_in import SignedInRequest

T = TypeVar("T")


def run_list(request: HttpRequest) -> HttpResponse:
    runs = visible_runs(user=request.user).select_related("dataset", "owner", "team")
    page = Paginator(runs, 50).get_page(request.GET.get("page"))
    return render(request, "runs/run_list.html", {"page": page})


@login_required
@require_http_methods(["GET", "POST"])
def upload(request: SignedInRequest) -> HttpResponse:
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
    # The samples are stored as they are read, as a run nobody sees, so that "Start the
    # run" only has to queue it, and any web process can.
    intake = intake_file(user=request.user, uploaded=data["file"], dataset=data["dataset"],
                         sanitize=data["sanitize"], profile=data["profile"],
                         timeout_seconds=data["timeout_seconds"],
                         allow_language_mismatch=data["allow_language_mismatch"],
                         store=RunDetails(team=data["team"], name=data["name"],
                                          model_name=data["model_name"],
                                          model_meta=data["model_meta"],
                                          visibility=data["visibility"]))
    if intake.duplicate is not None:
        return render(request, "runs/upload_duplicate.html", duplicate_offer(
            user=request.user, run=intake.duplicate, team=data["team"],
            visibility=data["visibility"]), status=409)
    # A file that only looks like another language goes to the confirm page, where
    # going on takes a tick (or a click on the matching variant).
    mismatch = intake.check is not None and intake.check.only_language_mismatch
    if (not intake.ok and not mismatch) or intake.check is None or intake.staged is None:
        return render(request, "runs/upload.html",
                      {"form": form, "issues": intake.issues}, status=400)
    check = intake.check
    token = intake_hold(intake, user=request.user)
    return render(request, "runs/upload_confirm.html", {
        "check": check,
        "coverage": check.coverage_dict(),
        "warnings": check.warnings,
        "mismatch": check.errors if mismatch else (),
        "confirm": ConfirmForm(initial={"token": token}),
        "team": data["team"],
        "visibility": data["visibility"],
        "name": data["name"] or check.file_name,
        "model_name": data["model_name"],
    })


@login_required
@require_POST
def upload_confirm(request: SignedInRequest) -> HttpResponse:
    form = ConfirmForm(request.POST)
    if not form.is_valid():
        messages.error(request, "That upload has expired or was already used; upload it again.")
        return redirect("runs:upload")
    try:
        run = intake_confirm(form.cleaned_data["token"], user=request.user,
                             switch_to=str(form.cleaned_data.get("use_dataset") or ""),
                             allow_language_mismatch=form.cleaned_data["allow_language_mismatch"])
    except StagedUploadRefused as refused:
        messages.error(request, str(refused))
        return redirect("runs:upload")
    return redirect(run)


@login_required
@require_POST
def upload_cancel(request: SignedInRequest) -> HttpResponse:
    """The confirm page's Cancel: the staged run is deleted now, not when it expires."""
    form = ConfirmForm(request.POST)
    try:
        if not form.is_valid():
            raise StagedUploadRefused(
                "That upload has expired or was already used; upload it again.")
        intake_cancel(form.cleaned_data["token"], user=request.user)
    except StagedUploadRefused as refused:
        messages.error(request, str(refused))
    else:
        messages.info(request, "The upload was cancelled; nothing of it was kept.")
    return redirect("runs:upload")


MAX_OVERLAYS = 8
PROBLEMS_PER_PAGE = 50
SAMPLES_PER_PAGE = 100
RUN_PARTS = ("run-snapshot", "run-facts", "run-unstable", "run-lifecycle")
"""The entries of a run page keyed by the run's state alone."""
RUN_FRAGMENTS = ("glance", "nav", "sections")
"""The parts `runs/run_detail.html` keeps under the page's key (`{% shared_fragment %}`)."""
REREAD_FIELDS = ("status", "error", "started_at", "finished_at", "recoveries", "recovered_at",
                 "sandbox_backend")
"""What a run still going may have changed since its row was read, that its page shows."""


class RunParts(TypedDict):
    """What a run page is drawn from beside the run's row and the viewer."""

    snapshot: SnapshotEvent
    facts: RunFacts
    unstable: int
    lifecycle: dict[str, Any]


def run_live_parts(*, run: Run) -> RunParts:
    """The parts of a run still going, drawn together so that its page never mixes two
    moments: the snapshot first, whose event number the page resumes from, then the rest."""
    snapshot = run_snapshot(run=run)
    run.refresh_from_db(fields=REREAD_FIELDS)
    return RunParts(snapshot=snapshot, facts=run_facts(run=run),
                    unstable=run_unstable_count(run=run),
                    lifecycle=run_lifecycle_context(run=run))


def run_parts_at_rest(*, run: Run, version: str) -> RunParts:
    keys = {name: key_of(name, run.pk, version) for name in RUN_PARTS}
    read_ahead(keys.values())

    def kept(name: str, draw: Callable[..., T]) -> T:
        return shared(keys[name], partial(draw, run=run), timeout=FINISHED_SECONDS)

    return RunParts(snapshot=kept("run-snapshot", run_snapshot),
                    facts=kept("run-facts", run_facts),
                    unstable=kept("run-unstable", run_unstable_count),
                    lifecycle=kept("run-lifecycle", run_lifecycle_context))


@handles_bad_query
@reading_ahead
def run_detail(request: HttpRequest, run_id: int) -> HttpResponse:
    """The run page. Who may see it and what the viewer may do are decided here on every
    request; the rest is drawn from the shared page cache (`webapp.runs.reads.page_cache`):
    each part the template keeps (`{% shared_fragment %}`) is computed only when it is drawn."""
    keep_roles(request.user)  # its sections each ask what the viewer may do with the run
    run = get_run_for_user(user=request.user, run_id=run_id)
    page = run_page_query(request, run=run)
    version = run_version(run=run)
    if run.is_active:
        def live_answer(live: LiveEntry[RunParts]) -> HttpResponse | None:
            # The page must show nothing older than the event number it resumes from: the
            # run may have been read before that number, so read its state again (events
            # after it then apply on top).
            run.refresh_from_db(fields=REREAD_FIELDS)
            if not run.is_active:
                return None
            return run_page(request, run=run, page=page, parts=live["value"],
                            drawn=(version, live["drawn"]), timeout=LIVE_PART_SECONDS)

        key = key_of("run-live", run.pk, version, page.variant)
        answered = live_page(key, partial(run_live_parts, run=run), live_answer)
        if answered is not None:
            return answered
        # It came to rest since its row was read: its page is a run's at rest, never the
        # live one, whose feed it would not follow.
        run = get_run_for_user(user=request.user, run_id=run_id)
        version = run_version(run=run)
    parts = run_parts_at_rest(run=run, version=version)
    return run_page(request, run=run, page=page, parts=parts,
                    drawn=(version, parts["snapshot"]["seq"]), timeout=FINISHED_SECONDS)


@dataclass(frozen=True)
class RunPageQuery:
    """What the viewer asked of a run page, and may do with the run."""

    params: QueryDict
    overlays: list[Run]
    sort: str
    descending: bool
    show: str
    status: str
    text: str
    page_number: int | None
    picking: bool
    can_manage: bool
    variant: list[object]
    """What the page's parts depend on beside the run's state: the query, the state of its
    overlays and what the viewer may do."""


def run_page_query(request: HttpRequest, *, run: Run) -> RunPageQuery:
    params = request.GET
    overlay_ids = [pk for pk in query_ids(params, "overlay", limit=MAX_OVERLAYS) if pk != run.pk]
    overlays = visible_runs_by_id(user=request.user, ids=overlay_ids, parameter="overlay")
    can_manage = run_can_manage(user=request.user, run=run)
    return RunPageQuery(
        params=params, overlays=overlays,
        sort=query_choice(params, "sort", PROBLEM_SORTS, default="task"),
        descending=query_choice(params, "order", ("asc", "desc"), default="asc") == "desc",
        show=query_choice(params, "show", PROBLEM_SHOWS, default="all"),
        status=query_choice(params, "status", STATUSES),
        text=query_text(params, "q"),
        page_number=query_int(params, "page", default=1, minimum=1),
        # The overlay picker lists the runs the viewer may see: drawn only when asked for
        # (or when overlays are drawn), as its query is a tenth of the page's time.
        picking=bool(overlays) or query_choice(params, "pick", ("overlays",)) == "overlays",
        can_manage=can_manage,
        variant=[sorted(params.lists()), [run_row(overlay) for overlay in overlays],
                 can_manage])


def run_page(request: HttpRequest, *, run: Run, page: RunPageQuery, parts: RunParts,
             drawn: object, timeout: int) -> HttpResponse:
    """The run page drawn from `parts`, whose parts the template keeps are keyed by `drawn`:
    what `parts` were drawn from."""
    overlays, can_manage, picking = page.overlays, page.can_manage, page.picking
    sort, descending, show, status, text, page_number = (
        page.sort, page.descending, page.show, page.status, page.text, page.page_number)
    snapshot = parts["snapshot"]
    page_key = key_of("run-page", run.pk, drawn, page.variant)
    read_ahead([key_of("run-charts", page_key),
                *(fragment_key(name, page_key) for name in RUN_FRAGMENTS)])
    # A run still going shows its rows so far, which the page updates live.
    live_rows = snapshot["problems"] if run.is_active else None

    @cache
    def table() -> ProblemTable:
        live_statuses = (live_status_counts(run=run, up_to_seq=snapshot["seq"])
                         if live_rows is not None and status else None)
        return run_problem_table(run=run, sort=sort, descending=descending, query=text,
                                 show=show, status=status, live=live_rows,
                                 live_statuses=live_statuses)

    @cache
    def pass_hat_k() -> dict[int, list[PassAtKValue]]:
        # Every k at once, for the curves; the table's k are among them (each k is
        # bootstrapped on the same draws, so its numbers do not depend on the others asked).
        return {shown.pk: run_pass_hat_k(run=shown, ks=None) for shown in [run, *overlays]}

    @cache
    def failures() -> list[FailureBar]:
        if not snapshot["progress"]["done"]:
            return []
        return run_failure_breakdown(run=run,
                                     up_to_seq=snapshot["seq"] if run.is_active else None)

    def chart_data() -> dict[str, Any]:
        return {
            "curves": run_curves(runs=[run, *overlays], pass_hat_k=pass_hat_k()),
            "failures": [{"label": bar.label, "count": bar.count, "url": bar.url,
                          "status": bar.status, "error_type": bar.error_type}
                         for bar in failures()],
        }

    reported_ks = set(run_reported_ks(run))
    # Values for the template that are functions are called only by a part it draws.
    return render(request, "runs/run_detail.html", {
        "run": run,
        "page_key": page_key,
        "page_timeout": timeout,
        "facts": parts["facts"],
        "sanitizing": cache(partial(run_sanitizing, run=run)),
        "unstable": parts["unstable"],
        "unstable_url": samples_url(run, unstable="1"),
        "interruptions": run_interruptions(run=run),
        "snapshot": snapshot,
        "log": lambda: reversed(snapshot["log"]),
        "table": table,
        "problem_page": lambda: Paginator(table().rows, PROBLEMS_PER_PAGE).get_page(page_number),
        "table_state": {"sort": sort, "descending": descending, "show": show,
                        "status": status, "q": text},
        "sort_state": f"{sort}:{'desc' if descending else 'asc'}",
        "problem_shows": PROBLEM_SHOWS,
        "statuses": STATUSES,
        "reported": cache(partial(run_pass_at_k, run=run, ks=run_reported_ks(run))),
        "reported_pass_hat": lambda: {point["k"]: point for point in pass_hat_k()[run.pk]
                                      if point["k"] in reported_ks},
        "failures": failures,
        "overlays": overlays,
        "overlay_ids": [o.pk for o in overlays],
        "picking_overlays": picking,
        "overlay_candidates": (overlay_candidates(user=request.user, run=run)
                               if picking else []),
        "chart_data": shared(key_of("run-charts", page_key), chart_data, timeout=timeout),
        "can_manage": can_manage,
        **parts["lifecycle"],
        "live_config": {
            **run_live_config(run=run, snapshot=snapshot, table_k=problem_table_k(run),
                              watching=request.user.is_authenticated),
            "table_filter": {"show": show, "status": status}},
    })


@handles_bad_query
def run_samples_list(request: HttpRequest, run_id: int) -> HttpResponse:
    run = get_run_for_user(user=request.user, run_id=run_id)
    params = request.GET
    error_type = query_text(params, "error_type")
    if len(error_type) > 100:
        raise BadQuery("error_type", "longer than 100 characters")
    filters = SampleFilters(
        status=query_choice(params, "status", SAMPLE_STATUSES),
        error_type=error_type,
        task_id=check_task_id(query_text(params, "task")),
        sanitizing=query_choice(params, "sanitizing", SANITIZING_FILTERS),
        unstable=query_flag(params, "unstable"),
    )
    samples = run_samples(run=run, filters=filters)
    paginator = Paginator(samples, SAMPLES_PER_PAGE)
    number = query_int(params, "page", default=1, minimum=1)
    assert number is not None
    if number > paginator.num_pages:
        raise BadQuery("page", f"there are {paginator.num_pages} page(s)")
    return render(request, "runs/sample_list.html", {
        "run": run, "page": paginator.page(number), "filters": filters,
        "statuses": SAMPLE_STATUSES, "sanitizing_filters": SANITIZING_FILTERS,
    })


def sample_detail(request: HttpRequest, run_id: int, sample_id: int) -> HttpResponse:
    run = get_run_for_user(user=request.user, run_id=run_id)
    sample = get_object_or_404(Sample.objects.select_related("variant"), run=run, pk=sample_id)
    result = sample.result or {}
    previous, following = sample_neighbours(sample=sample)
    return render(request, "runs/sample_detail.html", {
        "run": run, "sample": sample, "result": result,
        "language": run.dataset.language,
        "tests": sample_test_rows(result),
        "stdout": capped(result.get("stdout")),
        "stderr": capped(result.get("stderr")),
        "traceback": capped(result.get("traceback")),
        "sandbox": result.get("sandbox") or {},
        "previous": previous, "following": following,
    })


@handles_bad_query
def run_score(request: HttpRequest, run_id: int, k: int) -> HttpResponse:
    """The permalink of one leaderboard cell: a run's pass@k with its interval and the
    versions that produced it."""
    run = get_run_for_user(user=request.user, run_id=run_id)
    metric = RunMetric.objects.filter(run=run, k=k).first()
    if metric is None:
        raise Http404("This run has no pass@k for that k")
    return render(request, "runs/run_score.html", {
        "run": run, "metric": metric, "facts": run_facts(run=run),
    })


def _download(body: Iterator[str], content_type: str, filename: str) -> StreamingHttpResponse:
    return StreamedDownload(body, content_type=content_type, filename=filename)


@require_GET
def export_matrix_csv(request: HttpRequest, run_id: int) -> StreamingHttpResponse:
    run = get_run_for_user(user=request.user, run_id=run_id)
    return _download(exports.matrix_csv(run), "text/csv; charset=utf-8",
                     exports.export_name(run, "_matrix.csv"))


@require_GET
def export_matrix_json(request: HttpRequest, run_id: int) -> StreamingHttpResponse:
    run = get_run_for_user(user=request.user, run_id=run_id)
    return _download(exports.matrix_json(run), "application/json",
                     exports.export_name(run, "_matrix.json"))


@require_GET
def export_humaneval_results(request: HttpRequest, run_id: int) -> StreamingHttpResponse:
    run = get_run_for_user(user=request.user, run_id=run_id)
    return _download(exports.humaneval_results(run), "application/x-ndjson",
                     exports.export_name(run, "_results.jsonl"))


@login_required
@require_POST
def cancel(request: SignedInRequest, run_id: int) -> HttpResponse:
    run = get_run_for_user(user=request.user, run_id=run_id)
    if run_cancel(user=request.user, run=run):
        messages.success(request, "The run was cancelled.")
    else:
        messages.info(request, "The run had already stopped.")
    return redirect(run)


@login_required
@require_POST
def rerun(request: SignedInRequest, run_id: int) -> HttpResponse:
    run = get_run_for_user(user=request.user, run_id=run_id)
    try:
        # Reusing cached verdicts unless told not to; a value that is neither is refused.
        use_cache = not request.POST.get("use_cache") or query_flag(request.POST, "use_cache")
    except BadQuery as exc:
        messages.error(request, f"Nothing was run again: {exc}.")
        return redirect(run)
    try:
        new = run_rerun(user=request.user, run=run, use_cache=use_cache)
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
        return redirect(run)
    return redirect(new)

