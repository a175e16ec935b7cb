"""The run page's "Score on plus tests" button, and the API's read and write of a run's
base-beside-plus scores (`webapp.runs.services.plus`).

Every view fetches the run with `get_run_for_user` (an outsider gets a 404); asking for a
plus score is further limited to those who may evaluate the run (a 403)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from webapp.runs.api.endpoints import REFUSALS, read, router
from webapp.runs.domain import schemas
from webapp.runs.models import Run
from webapp.runs.reads.selectors import get_run_for_user
from webapp.runs.services.plus import (
    plus_datasets,
    plus_pair_json,
    run_plus_pairs,
    run_score_on_plus,
)
from webapp.teams.api_auth import TOKEN, TOKEN_OR_SESSION
from webapp.teams.signed_in import SignedInRequest


def _dataset_id(value: object) -> int | None:
    """The `dataset` a request names (an id), None when it names none."""
    if value in (None, ""):
        return None
    if isinstance(value, bool) or not str(value).isdigit():
        raise ValidationError({"dataset": f"Give a dataset id, not {str(value)[:40]!r}."})
    return int(str(value))


@login_required
@require_POST
def score_on_plus(request: SignedInRequest, run_id: int) -> HttpResponse:
    run = get_run_for_user(user=request.user, run_id=run_id)
    try:
        plus, made = run_score_on_plus(user=request.user, run=run,
                                       dataset_id=_dataset_id(request.POST.get("dataset")))
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
        return redirect(run)
    if not made:
        messages.info(request, f"Run {plus.pk} already scores these samples on "
                               f"{plus.dataset.key}.")
    return redirect(f"{run.get_absolute_url()}#plus-scores")


def _answer(request: HttpRequest, run: Run, status: int = 200) -> JsonResponse:
    return JsonResponse({
        "id": run.pk,
        "plus_datasets": [{"id": d.pk, "key": d.key} for d in plus_datasets(dataset=run.dataset)],
        "pairs": [plus_pair_json(pair) for pair in run_plus_pairs(user=request.user, run=run)],
    }, status=status)


@read(
    "/runs/{int:run_id}/plus", auth=TOKEN_OR_SESSION, url_name="run_plus",
    operation_id="run_plus", summary="Base beside plus pass@k", tags=["plus"],
    response={200: schemas.PlusScores, **REFUSALS},
)
def run_plus_api(request: HttpRequest, run_id: int) -> HttpResponse:
    """The run's pass@k on its base tests beside its pass@k on each plus test set it was
    scored on, with 95% bootstrap intervals and the drop, over the problems both scored;
    for a plus run, its pair with its base run. `scores` is empty until the plus run has
    finished."""
    return _answer(request, get_run_for_user(user=request.user, run_id=run_id))


@router.post(
    "/runs/{int:run_id}/plus", auth=TOKEN, url_name="run_plus_create",
    operation_id="run_plus_create", summary="Score a run on plus tests", tags=["plus"],
    response={201: schemas.PlusScores, 200: schemas.PlusScores, 400: schemas.InvalidRequest,
              403: schemas.Error, **REFUSALS},
)
def run_plus_create_api(request: SignedInRequest, run_id: int) -> HttpResponse:
    """Evaluate the run's stored samples on a plus test set (form field or query `dataset`,
    an id from `plus_datasets`; the newest by default), as a new run linked to this one,
    with its owner and visibility; 200 with the plus run that stands already, if any."""
    run = get_run_for_user(user=request.user, run_id=run_id)
    given = request.POST.get("dataset", request.GET.get("dataset"))
    _, made = run_score_on_plus(user=request.user, run=run, dataset_id=_dataset_id(given))
    return _answer(request, run, status=201 if made else 200)
