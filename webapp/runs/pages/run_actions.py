"""The buttons on a run's page that ask a service to start something on the run (resume it,
compare its harness profiles, compute its patched scores) and come back to the page with a
message: the service's refusal, or what is now under way."""

from __future__ import annotations

from typing import Protocol

from django.contrib import messages
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError

from webapp.runs.models import Run
from webapp.runs.reads.selectors import get_run_for_user
from webapp.teams.signed_in import SignedInRequest


class RunAction(Protocol):
    """A service that acts on a run for a user, refusing with a `ValidationError`."""

    def __call__(self, *, user: User, run: Run) -> object: ...


def act_on_run(request: SignedInRequest, run_id: int, action: RunAction, *,
               started: str) -> Run:
    """Run `action` on the run (a 404 for whoever may not see it) and leave its refusal or
    `started` as a message for the page the caller redirects to; returns the run."""
    run = get_run_for_user(user=request.user, run_id=run_id)
    try:
        action(user=request.user, run=run)
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
    else:
        messages.success(request, started)
    return run
