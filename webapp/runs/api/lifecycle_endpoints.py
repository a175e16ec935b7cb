"""The API's writes to a run after upload, with a token only:

- `PATCH /api/runs/<id>`: a JSON object with any of visibility, team (slug), name, model,
  model_meta; answers the run and the changes made;
- `DELETE /api/runs/<id>`: delete (restorable for `WORKBENCH_DELETED_RUN_DAYS` days);
- `POST /api/runs/<id>/restore`: restore a deleted run;
- `POST /api/runs/<id>/leaderboards` with `{"listed": false}` or `true`: retract, put back
  (`"confirm": true` as well to list a run held back for review);
- `POST /api/runs/<id>/cancel`: stop a queued or running run (what it evaluated stays);
- `POST /api/runs/<id>/resume`: take a cancelled run up again;
- `GET /api/runs/<id>/changes`: the run's history (a session will do, as for other reads);
  it lives here, beside the writes it records.

A run the caller may not see is a 404; one they may see but not manage is a 403 (the API's
handlers of `PermissionDenied` and `ValidationError`, in `api_urls`). They are operations
on the same router as `api`'s reads.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse, JsonResponse

from webapp.runs.api.endpoints import REFUSALS, read, request_body, router
from webapp.runs.domain import schemas
from webapp.runs.models import RunChange
from webapp.runs.reads.selectors import get_run_for_user, run_summary
from webapp.runs.reads.verified import run_verification
from webapp.runs.services.lifecycle import (
    get_deleted_run_for_user,
    restore_deadline,
    run_changes,
    run_delete,
    run_edit_from,
    run_restore,
    run_resume,
    run_set_on_leaderboards,
    run_update,
)
from webapp.runs.services.writes import run_cancel
from webapp.teams.api_auth import TOKEN, TOKEN_OR_SESSION
from webapp.teams.signed_in import SignedInRequest
from webapp.textfields import JSON_DEPTH_MAX, json_parse

EDITABLE = frozenset(schemas.RunPatch.model_fields)
"""What a PATCH may change: `RunPatch`'s fields."""
BODY_LIMIT = 64 * 1024


def _json_body(request: HttpRequest) -> dict[str, Any]:
    if len(request.body) > BODY_LIMIT:
        raise ValidationError("The body is too large.")
    try:
        # Deeper than model_meta may be, so that `RunPatch` can name it; shallow enough
        # that the parser never recurses near Python's limit.
        body = json_parse(request.body.decode("utf-8-sig") or "{}",
                          max_depth=4 * JSON_DEPTH_MAX)
    except UnicodeDecodeError:
        raise ValidationError("The body is not UTF-8.") from None
    except ValidationError as exc:
        raise ValidationError(f"The body: {' '.join(exc.messages)}") from None
    if not isinstance(body, dict):
        raise ValidationError("The body is not a JSON object.")
    return body


def change_json(change: RunChange) -> dict[str, Any]:
    return {"field": change.field, "before": change.before, "after": change.after,
            "by": change.actor_name, "at": change.created_at.isoformat()}


@router.patch(
    "/runs/{int:run_id}", auth=TOKEN, url_name="run", operation_id="run_update",
    summary="Change a run", tags=["lifecycle"],
    response={200: schemas.RunUpdated, 400: schemas.InvalidRequest, 403: schemas.Error,
              **REFUSALS},
    openapi_extra=request_body(schemas.RunPatch),
)
def run_update_api(request: SignedInRequest, run_id: int) -> HttpResponse:
    """Change a run's visibility, team, name, model or model metadata. Only its owner or an
    owner of its team may; everything wrong is named at once and nothing is changed."""
    run = get_run_for_user(user=request.user, run_id=run_id)
    body = _json_body(request)
    changes = run_update(user=request.user, run=run, edit=run_edit_from(values=body))
    return JsonResponse({"run": run_summary(run=run, include_problems=False),
                         "changes": [change_json(change) for change in changes]})


@router.delete(
    "/runs/{int:run_id}", auth=TOKEN, url_name="run", operation_id="run_delete",
    summary="Delete a run", tags=["lifecycle"],
    response={200: schemas.RunDeleted, 403: schemas.Error, **REFUSALS},
)
def run_delete_api(request: SignedInRequest, run_id: int) -> HttpResponse:
    """Delete a run (cancelled first if still going). It can be restored until
    `restorable_until`, then it is purged."""
    run = get_run_for_user(user=request.user, run_id=run_id)
    run_delete(user=request.user, run=run)
    deadline = restore_deadline(run)
    return JsonResponse({"id": run.pk, "deleted": True,
                         "restorable_until": deadline.isoformat() if deadline else None,
                         "restore_url": f"/api/runs/{run.pk}/restore"})


@router.post(
    "/runs/{int:run_id}/restore", auth=TOKEN, url_name="run_restore",
    operation_id="run_restore", summary="Restore a deleted run", tags=["lifecycle"],
    response={200: schemas.RunRestored, 403: schemas.Error, **REFUSALS},
)
def run_restore_api(request: SignedInRequest, run_id: int) -> HttpResponse:
    """Bring back a deleted run as it was."""
    run = get_deleted_run_for_user(user=request.user, run_id=run_id)
    run_restore(user=request.user, run=run)
    return JsonResponse({"id": run.pk, "deleted": False, "api_url": f"/api/runs/{run.pk}"})


@router.post(
    "/runs/{int:run_id}/leaderboards", auth=TOKEN, url_name="run_leaderboards",
    operation_id="run_set_on_leaderboards", summary="Retract from or list on leaderboards",
    tags=["lifecycle"],
    response={200: schemas.Listed, 400: schemas.InvalidRequest, 403: schemas.Error,
              **REFUSALS},
    openapi_extra=request_body(schemas.Listing),
)
def run_leaderboards_api(request: SignedInRequest, run_id: int) -> HttpResponse:
    """Retract a run from the leaderboards, or put it back. A run held for review (most
    samples failed to compile, or uploaded in another language) needs `confirm` too."""
    run = get_run_for_user(user=request.user, run_id=run_id)
    body = _json_body(request)
    listed, confirm = body.get("listed"), body.get("confirm", False)
    if not isinstance(listed, bool):
        raise ValidationError({"listed": "Give true (put back) or false (retract)."})
    if not isinstance(confirm, bool):
        raise ValidationError({"confirm": "Give true or false."})
    run_set_on_leaderboards(user=request.user, run=run, listed=listed, confirm=confirm)
    return JsonResponse({"id": run.pk, "on_leaderboards": run.retracted_at is None,
                         "verified": run_verification(run=run).to_dict()})


@router.post(
    "/runs/{int:run_id}/cancel", auth=TOKEN, url_name="run_cancel", operation_id="run_cancel",
    summary="Cancel a run", tags=["lifecycle"],
    response={200: schemas.RunStatus, 400: schemas.InvalidRequest, 403: schemas.Error,
              **REFUSALS},
)
def run_cancel_api(request: SignedInRequest, run_id: int) -> HttpResponse:
    """Stop a queued or running run: queued work is dropped, running work stops after its
    current sample. What it evaluated is kept, and it can be resumed."""
    run = get_run_for_user(user=request.user, run_id=run_id)
    if not run_cancel(user=request.user, run=run):
        raise ValidationError("The run has already stopped.")
    run.refresh_from_db(fields=["status"])
    return JsonResponse({"id": run.pk, "status": run.status})


@router.post(
    "/runs/{int:run_id}/resume", auth=TOKEN, url_name="run_resume", operation_id="run_resume",
    summary="Resume a cancelled run", tags=["lifecycle"],
    response={200: schemas.RunStatus, 400: schemas.InvalidRequest, 403: schemas.Error,
              **REFUSALS},
)
def run_resume_api(request: SignedInRequest, run_id: int) -> HttpResponse:
    """Take a cancelled run up again: what it evaluated stays, the rest is queued."""
    run = get_run_for_user(user=request.user, run_id=run_id)
    run_resume(user=request.user, run=run)
    return JsonResponse({"id": run.pk, "status": run.status})


@read(
    "/runs/{int:run_id}/changes", auth=TOKEN_OR_SESSION, url_name="run_changes",
    operation_id="run_changes", summary="A run's history", tags=["lifecycle"],
    response={200: schemas.RunChanges, **REFUSALS},
)
def run_changes_api(request: HttpRequest, run_id: int) -> HttpResponse:
    """Every change of visibility, team, name, model, leaderboard status, cancel, resume
    and deletion: who, when, before and after; newest first."""
    run = get_run_for_user(user=request.user, run_id=run_id)
    return JsonResponse({"id": run.pk,
                         "changes": [change_json(change) for change in run_changes(run=run)]})
