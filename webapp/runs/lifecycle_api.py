"""The API's writes to a run after upload, with a token only (`api_auth`):

- `PATCH /api/runs/<id>`: a JSON object with any of visibility, team (slug), name, model,
  model_meta; answers the run and the changes made;
- `DELETE /api/runs/<id>`: delete (restorable for `WORKBENCH_DELETED_RUN_DAYS` days);
- `POST /api/runs/<id>/restore`: restore a deleted run;
- `POST /api/runs/<id>/leaderboards` with `{"listed": false}` or `true`: retract, put back;
- `GET /api/runs/<id>/changes`: the run's history (a session will do, as for other reads).

A run the caller may not see is a 404; one they may see but not manage is a 403.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import wraps
from typing import Any

from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST

from webapp.runs import api
from webapp.runs.lifecycle import (
    RunEdit,
    get_deleted_run_for_user,
    restore_deadline,
    run_changes,
    run_delete,
    run_restore,
    run_set_on_leaderboards,
    run_update,
)
from webapp.runs.models import RunChange
from webapp.runs.selectors import get_run_for_user, run_summary
from webapp.teams.api_auth import api_auth

EDITABLE = {"visibility", "team", "name", "model", "model_meta"}
BODY_LIMIT = 64 * 1024

View = Callable[..., HttpResponse]


def _refusals(view: View) -> View:
    """A permission refusal or bad input as a JSON answer, like the API's other errors."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        try:
            return view(request, *args, **kwargs)
        except PermissionDenied as exc:
            return JsonResponse({"error": "forbidden", "message": str(exc)}, status=403)
        except ValidationError as exc:
            fields = exc.message_dict if hasattr(exc, "error_dict") else {"": exc.messages}
            return JsonResponse({"error": "invalid_request", "message": "Nothing was changed.",
                                 "fields": fields}, status=400)

    return wrapper


def _json_body(request: HttpRequest) -> dict[str, Any]:
    if len(request.body) > BODY_LIMIT:
        raise ValidationError("The body is too large.")
    try:
        body = json.loads(request.body or b"{}")
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise ValidationError("The body is not a JSON object.") from None
    if not isinstance(body, dict):
        raise ValidationError("The body is not a JSON object.")
    return body


def change_json(change: RunChange) -> dict[str, Any]:
    return {"field": change.field, "before": change.before, "after": change.after,
            "by": change.actor_name, "at": change.created_at.isoformat()}


def _edit_from(body: dict[str, Any]) -> RunEdit:
    unknown = sorted(set(body) - EDITABLE)
    if unknown:
        raise ValidationError({field: "Not a field that can be changed." for field in unknown})
    wrong = {field: "Give a string." for field in ("visibility", "team", "name", "model")
             if field in body and not isinstance(body[field], str)}
    if wrong:
        raise ValidationError(wrong)
    return RunEdit(visibility=body.get("visibility"), team=body.get("team"),
                   name=body.get("name"), model_name=body.get("model"),
                   model_meta=body.get("model_meta"))


@api_auth(allow_session=False)
@_refusals
def _update(request: HttpRequest, run_id: int) -> HttpResponse:
    run = get_run_for_user(user=request.user, run_id=run_id)
    body = _json_body(request)
    changes = run_update(user=request.user, run=run, edit=_edit_from(body))
    return JsonResponse({"run": run_summary(run=run, include_problems=False),
                         "changes": [change_json(change) for change in changes]})


@api_auth(allow_session=False)
@_refusals
def _delete(request: HttpRequest, run_id: int) -> HttpResponse:
    run = get_run_for_user(user=request.user, run_id=run_id)
    run_delete(user=request.user, run=run)
    deadline = restore_deadline(run)
    return JsonResponse({"id": run.pk, "deleted": True,
                         "restorable_until": deadline.isoformat() if deadline else None,
                         "restore_url": f"/api/runs/{run.pk}/restore"})


@csrf_exempt
def run_item(request: HttpRequest, run_id: int) -> HttpResponse:
    """`/api/runs/<id>`: GET reads (`api.runs_detail`), PATCH edits, DELETE deletes."""
    if request.method in ("GET", "HEAD"):
        return api.runs_detail(request, run_id)
    if request.method == "PATCH":
        return _update(request, run_id)
    if request.method == "DELETE":
        return _delete(request, run_id)
    return HttpResponseNotAllowed(["GET", "PATCH", "DELETE"])


@api_auth(allow_session=False)
@require_POST
@_refusals
def run_restore_api(request: HttpRequest, run_id: int) -> HttpResponse:
    run = get_deleted_run_for_user(user=request.user, run_id=run_id)
    run_restore(user=request.user, run=run)
    return JsonResponse({"id": run.pk, "deleted": False, "api_url": f"/api/runs/{run.pk}"})


@api_auth(allow_session=False)
@require_POST
@_refusals
def run_leaderboards_api(request: HttpRequest, run_id: int) -> HttpResponse:
    run = get_run_for_user(user=request.user, run_id=run_id)
    listed = _json_body(request).get("listed")
    if not isinstance(listed, bool):
        raise ValidationError({"listed": "Give true (put back) or false (retract)."})
    run_set_on_leaderboards(user=request.user, run=run, listed=listed)
    return JsonResponse({"id": run.pk, "on_leaderboards": run.retracted_at is None})


@api_auth(allow_session=True)
@require_GET
def run_changes_api(request: HttpRequest, run_id: int) -> HttpResponse:
    run = get_run_for_user(user=request.user, run_id=run_id)
    return JsonResponse({"id": run.pk,
                         "changes": [change_json(change) for change in run_changes(run=run)]})
