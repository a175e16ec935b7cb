"""The status page for administrators, and its JSON twin, which is also a readiness probe:
200 when every required language has a healthy worker, 503 when one has none.

Staff only: anyone else signed in gets 404. The page sends a visitor who is not signed in
to the login page; the JSON answers 401, and takes a staff member's API token too
(`Authorization: Bearer ...`), so that a probe can call it.
"""

from __future__ import annotations

from typing import TypedDict

from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import AnonymousUser, User
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from webapp.health.selectors import Status, status
from webapp.teams.selectors import user_for_token


class CheckJson(TypedDict):
    language: str
    sandbox: str
    backend: str
    ok: bool
    error: str
    hint: str
    checked_at: str
    duration_ms: int
    last_ok_at: str | None


class WorkerJson(TypedDict):
    name: str
    state: str
    """running, stale (not heard from within `stale_after_seconds`) or stopped"""
    sandbox: str
    levels: list[str]
    queues: list[str]
    consuming: list[str]
    languages: list[str]
    started_at: str
    seen_at: str
    note: str
    checks: list[CheckJson]


class LanguageJson(TypedDict):
    language: str
    display_name: str
    required: bool
    ready: bool
    healthy_workers: list[str]
    reason: str


class StatusJson(TypedDict):
    ready: bool
    problems: list[str]
    checked_at: str
    stale_after_seconds: int
    languages: list[LanguageJson]
    workers: list[WorkerJson]


def _require_staff(user: User | AnonymousUser) -> None:
    """The one rule of this app's pages: staff see them, nobody else learns they exist."""
    if not (user.is_authenticated and user.is_active and user.is_staff):
        raise Http404


@login_required
@require_GET
def status_page(request: HttpRequest) -> HttpResponse:
    _require_staff(request.user)
    current = status(languages=_asked_languages(request))
    # Always 200: the readiness verdict is the JSON twin's status code, not the page's.
    return render(request, "health/status.html", {"status": current})


@require_GET
def status_json(request: HttpRequest) -> HttpResponse:
    user: User | AnonymousUser = request.user
    header = request.headers.get("Authorization", "")
    if header:
        scheme, _, secret = header.partition(" ")
        found = user_for_token(secret=secret.strip()) if scheme.lower() == "bearer" else None
        if found is None:
            return _unauthorized("The token is unknown or has been revoked.")
        user = found[0]
    elif not user.is_authenticated:
        return _unauthorized("Sign in, or send a staff member's API token "
                             "(`Authorization: Bearer ...`).")
    _require_staff(user)
    current = status(languages=_asked_languages(request))
    response = JsonResponse(_as_json(current), status=200 if current.ready else 503)
    response["Cache-Control"] = "no-store"
    return response


def _asked_languages(request: HttpRequest) -> list[str] | None:
    names = [name.strip() for value in request.GET.getlist("language")
             for name in value.split(",") if name.strip()]
    return names or None


def _unauthorized(message: str) -> JsonResponse:
    response = JsonResponse({"error": "unauthorized", "message": message}, status=401)
    response["WWW-Authenticate"] = 'Bearer realm="status"'
    return response


def _as_json(current: Status) -> StatusJson:
    workers: list[WorkerJson] = []
    for row in current.workers:
        worker = row.worker
        state = "stopped" if worker.stopped_at else "stale" if row.stale else "running"
        workers.append(WorkerJson(
            name=worker.name, state=state, sandbox=worker.sandbox, levels=list(worker.levels),
            queues=list(worker.queues), consuming=list(worker.consuming),
            languages=list(row.languages), started_at=worker.started_at.isoformat(),
            seen_at=worker.seen_at.isoformat(), note=worker.note,
            checks=[CheckJson(
                language=check.language, sandbox=check.sandbox, backend=check.backend,
                ok=check.ok, error=check.error, hint=check.hint,
                checked_at=check.checked_at.isoformat(), duration_ms=check.duration_ms,
                last_ok_at=check.last_ok_at.isoformat() if check.last_ok_at else None,
            ) for check in row.checks],
        ))
    return StatusJson(
        ready=current.ready, problems=list(current.problems),
        checked_at=current.checked_at.isoformat(),
        stale_after_seconds=int(current.stale_after.total_seconds()),
        languages=[LanguageJson(
            language=item.language, display_name=item.display_name, required=item.required,
            ready=item.ready, healthy_workers=list(item.healthy_workers), reason=item.reason,
        ) for item in current.languages],
        workers=workers,
    )
