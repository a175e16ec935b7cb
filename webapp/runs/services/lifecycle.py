"""A run after upload: edit (visibility, team, name, model), retract from the leaderboards
and put back (confirming a run held for review), resume after a cancel, delete (soft) and
restore, and the purge of runs deleted long ago. Every change leaves a `RunChange`, as the
cancel does (`services.run_cancel`).

Who may act: whoever `run_can_manage` allows (the run's owner, or an owner of its team).
Callers fetch the run through `get_run_for_user` first, so an outsider gets a 404 before
any of this runs; a viewer who may see the run but not manage it gets `PermissionDenied`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, fields
from datetime import datetime, timedelta
from functools import partial
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.conf import settings
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import F, Q, QuerySet
from django.http import Http404
from django.urls import reverse
from django.utils import timezone
from django.utils.http import urlencode

from evaluator.records import INFRASTRUCTURE_STATUS
from webapp.runs.domain.schemas import run_patch_checked
from webapp.runs.messaging.dispatch import send_run_start
from webapp.runs.messaging.live import run_group
from webapp.runs.models import Chunk, Run, RunChange, Sample
from webapp.runs.reads.selectors import Viewer, forget_run_facts, run_can_manage
from webapp.runs.reads.verified import CONFIRMED, HELD, run_verification
from webapp.runs.services.writes import run_cancel, run_change_record
from webapp.teams.models import Membership, Team

logger = logging.getLogger(__name__)

ACCESS_MESSAGE = "run.access"
"""Channel-layer message telling a run's websockets to check their viewer again."""

MANAGE_DENIED = "Only the run's owner or an owner of its team can change it."
HISTORY_SHOWN = 200
"""The newest changes the run page lists."""


@dataclass(frozen=True)
class RunEdit:
    """The fields to change; None leaves a field as it is. The values are as `RunPatch`
    checks them (`run_edit_from`): `run_update` checks only what needs the database."""

    visibility: str | None = None
    team: str | None = None
    """The new team's slug."""
    name: str | None = None
    model_name: str | None = None
    model_meta: dict[str, Any] | None = None


def _require_manage(*, user: Viewer, run: Run) -> None:
    if not run_can_manage(user=user, run=run):
        raise PermissionDenied(MANAGE_DENIED)


def _meta_text(meta: dict[str, Any]) -> str:
    return json.dumps(meta, sort_keys=True, ensure_ascii=False) if meta else ""


def _notify_access(run_id: int) -> None:
    """Ask the run's open websockets to check their viewer again: one who may no longer
    see the run (made private, moved, deleted) is disconnected."""
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        async_to_sync(layer.group_send)(run_group(run_id), {"type": ACCESS_MESSAGE})
    except Exception as exc:
        # The socket checks again on its next connect; the database is the record.
        logger.warning("could not tell run %s's viewers of an access change: %s", run_id, exc)


def run_edit_from(*, values: Mapping[str, object]) -> RunEdit:
    """The edit that the API's body or the edit page's fields ask for, checked by
    `RunPatch`: `values` and the errors by field use its names (`model`, not `model_name`)."""
    patch = run_patch_checked(values)
    return RunEdit(visibility=patch.visibility, team=patch.team, name=patch.name,
                   model_name=patch.model, model_meta=patch.model_meta)


def _team_to_join(*, user: User, slug: str) -> Team:
    team = None
    if slug:
        team = Team.objects.filter(slug=slug, memberships__user_id=user.pk).first()
    if team is None:
        raise ValidationError({"team": "You are not a member of that team."})
    return team


def _edit_changes(*, user: User, run: Run, edit: RunEdit) -> dict[str, Any]:
    """The fields `edit` changes, in its order, with their new values (the team's object)."""
    asked = {spec.name: getattr(edit, spec.name) for spec in fields(edit)}
    changes = {name: value for name, value in asked.items() if value is not None
               and value != (run.team.slug if name == "team" else getattr(run, name))}
    if "team" in changes:
        # Moving needs membership of the new team; keeping the team needs nothing (its
        # owner may edit a run whose owner has since left it).
        changes["team"] = _team_to_join(user=user, slug=changes["team"])
    return changes


def run_update(*, user: User, run: Run, edit: RunEdit) -> list[RunChange]:
    """Change a run's visibility, team, name or model; the changes recorded. A
    `ValidationError` refuses a team the user is not a member of, and nothing is changed."""
    _require_manage(user=user, run=run)
    changes = _edit_changes(user=user, run=run, edit=edit)
    if not changes:
        return []
    with transaction.atomic():
        locked = Run.objects.select_for_update().select_related("team").get(pk=run.pk)
        recorded: list[RunChange] = []
        for field, value in changes.items():
            if field == "team":
                before, after = locked.team.slug, value.slug
            elif field == "model_meta":
                before, after = _meta_text(locked.model_meta), _meta_text(value)
            else:
                before, after = str(getattr(locked, field)), str(value)
            setattr(locked, field, value)
            recorded.append(RunChange(run=locked, actor=user,
                                      actor_name=user.get_username()[:150], field=field,
                                      before=before, after=after))
        locked.save(update_fields=list(changes))
        RunChange.objects.bulk_create(recorded)
        forget_run_facts(run)
        if {"visibility", "team"} & changes.keys():
            # Its plus scores (`webapp.runs.services.plus`) are seen by whoever sees the run.
            followers = list(Run.objects.filter(plus_of=locked).values_list("pk", flat=True))
            Run.objects.filter(pk__in=followers).update(visibility=locked.visibility,
                                                        team=locked.team)
            for run_id in (run.pk, *followers):
                transaction.on_commit(partial(_notify_access, run_id))
    for field in changes:
        setattr(run, field, getattr(locked, field))
    return recorded


def run_set_on_leaderboards(*, user: User, run: Run, listed: bool,
                            confirm: bool = False) -> bool:
    """Retract a run from the leaderboards (`listed=False`) or put it back; False when it
    already was so. A run held for review (`webapp.runs.reads.verified`) is listed only with
    `confirm`, which leaves its own entry in the history."""
    _require_manage(user=user, run=run)
    if listed:
        verification = run_verification(run=run)
        if verification.held and not confirm:
            raise ValidationError({"confirm": (
                "This run is held for review: " + "; ".join(verification.review.values())
                + ". Confirm to list it anyway.")})
        if confirm and verification.held:
            run_change_record(run=run, actor=user, field=RunChange.Field.LEADERBOARD,
                              before=HELD, after=CONFIRMED)
    with transaction.atomic():
        if listed:
            changed = Run.objects.filter(pk=run.pk, retracted_at__isnull=False).update(
                retracted_at=None)
        else:
            changed = Run.objects.filter(pk=run.pk, retracted_at__isnull=True).update(
                retracted_at=timezone.now())
        if changed:
            run_change_record(run=run, actor=user, field=RunChange.Field.LEADERBOARD,
                    before="retracted" if listed else "listed",
                    after="listed" if listed else "retracted")
    run.refresh_from_db(fields=["retracted_at"])
    return bool(changed)


def run_resume(*, user: User, run: Run) -> None:
    """Take a cancelled run up again, or retry a paused one (`execution.run_pause`): what
    it evaluated stays, the samples the machine failed are run again, the rest is queued."""
    _require_manage(user=user, run=run)
    with transaction.atomic():
        locked = Run.objects.select_for_update().get(pk=run.pk)
        if locked.status not in (Run.Status.CANCELLED, Run.Status.PAUSED):
            raise ValidationError("Only a cancelled or paused run can be resumed.")
        if Chunk.objects.filter(run=run, status=Chunk.Status.RUNNING).exists():
            # Its worker has not yet noticed the cancel; it would mark the chunk cancelled
            # after the resume, and the run would never end.
            raise ValidationError("A worker is still stopping part of this run; "
                                  "try again in a moment.")
        if locked.status == Run.Status.PAUSED:
            _forget_infrastructure_failures(run_id=run.pk)
        Chunk.objects.filter(run=run, status=Chunk.Status.CANCELLED).update(
            status=Chunk.Status.QUEUED, claim="", lease_until=None, dispatched_at=None,
            finished_at=None)
        # Every chunk done (cancelled while its scores were computed): the run is started
        # with nothing to send, and the sweeper computes the scores of such a run.
        Run.objects.filter(pk=run.pk).update(status=Run.Status.QUEUED, finished_at=None,
                                             error="", dispatched_at=None)
        run_change_record(run=run, actor=user, field=RunChange.Field.STATUS,
                          before=locked.status, after=Run.Status.QUEUED)
        transaction.on_commit(lambda: send_run_start(run_id=run.pk))
    run.refresh_from_db(fields=["status", "finished_at", "error"])


def _forget_infrastructure_failures(*, run_id: int) -> None:
    """Make the samples the machine failed pending again, with the run's counts, and queue
    the chunks that hold them (done ones included); inside the caller's transaction."""
    failed = Sample.objects.filter(run_id=run_id, status=INFRASTRUCTURE_STATUS)
    count = failed.count()
    chunk_ids = set(failed.values_list("chunk_id", flat=True))
    failed.update(status="pending", result=None, error_type="", message="", seq=None,
                  cached=False, finished_at=None, tests_passed=0, tests_total=0,
                  duration_ms=0)
    done = Chunk.objects.filter(pk__in=chunk_ids, status=Chunk.Status.DONE)
    reopened = done.update(status=Chunk.Status.CANCELLED)
    Run.objects.filter(pk=run_id).update(
        done_count=F("done_count") - count,
        sandbox_error_count=F("sandbox_error_count") - count,
        chunks_done=F("chunks_done") - reopened,
    )


def restore_deadline(run: Run) -> datetime | None:
    """Until when a deleted run can be restored."""
    if run.deleted_at is None:
        return None
    return run.deleted_at + timedelta(days=settings.DELETED_RUN_DAYS)


def run_delete(*, user: User, run: Run) -> None:
    """Hide a run everywhere; a run still going is cancelled first. It can be restored
    until `restore_deadline`, then the sweeper purges it."""
    _require_manage(user=user, run=run)
    if run.is_active:
        run_cancel(user=user, run=run)
    with transaction.atomic():
        deleted = Run.objects.filter(pk=run.pk, deleted_at__isnull=True).update(
            deleted_at=timezone.now())
        if deleted:
            run_change_record(run=run, actor=user, field=RunChange.Field.DELETED, before="no",
                    after="yes")
            transaction.on_commit(lambda: _notify_access(run.pk))
    run.refresh_from_db(fields=["deleted_at", "status"])


def run_restore(*, user: User, run: Run) -> bool:
    """Bring a deleted run back as it was; False when it was not deleted."""
    _require_manage(user=user, run=run)
    with transaction.atomic():
        restored = Run.objects.filter(pk=run.pk, deleted_at__isnull=False).update(
            deleted_at=None)
        if restored:
            run_change_record(run=run, actor=user, field=RunChange.Field.DELETED, before="yes",
                    after="no")
    run.refresh_from_db(fields=["deleted_at"])
    return bool(restored)


def deleted_runs_for_user(*, user: Viewer) -> QuerySet[Run]:
    """Deleted runs that `user` may restore: their own, and those of teams they own."""
    if not user.is_authenticated:
        return Run.objects.none()
    owned_teams = Membership.objects.filter(
        user_id=user.pk, role=Membership.Role.OWNER).values("team_id")
    return (Run.objects.filter(deleted_at__isnull=False)
            .filter(Q(owner_id=user.pk) | Q(team_id__in=owned_teams))
            .select_related("team", "dataset", "owner").order_by("-deleted_at", "-pk"))


def get_deleted_run_for_user(*, user: Viewer, run_id: int) -> Run:
    """A deleted run that `user` may restore, else a 404 (as for any run one cannot see)."""
    run = deleted_runs_for_user(user=user).filter(pk=run_id).first()
    if run is None:
        raise Http404("No such run")
    return run


def run_changes(*, run: Run) -> QuerySet[RunChange]:
    return RunChange.objects.filter(run=run).order_by("-created_at", "-pk")


def run_lifecycle_context(*, run: Run) -> dict[str, Any]:
    """What the run page's manage panel and history draw."""
    changes = list(run_changes(run=run)[:HISTORY_SHOWN + 1])
    whole = changes if len(changes) <= HISTORY_SHOWN else None
    return {
        "changes": changes[:HISTORY_SHOWN],
        "model_meta_text": json.dumps(run.model_meta, ensure_ascii=False) if run.model_meta
        else "",
        "visibilities": Run.Visibility.choices,
        "verification": run_verification(run=run, changes=whole)
        if run.status == Run.Status.FINISHED else None,
    }


def run_edit_page(*, run: Run, team: Team | None = None, visibility: str = "") -> str:
    """The run's edit page, proposing `team` and `visibility` when given."""
    query = {key: value for key, value in
             (("team", team.slug if team else ""), ("visibility", visibility)) if value}
    url = reverse("runs:edit", args=[run.pk])
    return f"{url}?{urlencode(query)}" if query else url


def duplicate_offer(*, user: Viewer, run: Run, team: Team, visibility: str) -> dict[str, Any]:
    """What the upload page shows for a file already evaluated: the run, what was asked
    for, and a link to share or move it when the user may."""
    can_edit = run_can_manage(user=user, run=run)
    return {
        "duplicate": run, "team": team, "visibility": visibility,
        "visibility_label": Run.Visibility(visibility).label,
        "differs": team.pk != run.team_id or visibility != run.visibility,
        "can_edit": can_edit,
        "edit_url": run_edit_page(run=run, team=team, visibility=visibility) if can_edit
        else "",
    }


def duplicate_answer(*, user: Viewer, run: Run, team: Team, visibility: str) -> dict[str, Any]:
    """The API's 409 for a file already evaluated: the existing run, and how to share or
    move it instead of evaluating the file again."""
    can_edit = run_can_manage(user=user, run=run)
    differs = team.pk != run.team_id or visibility != run.visibility
    answer: dict[str, Any] = {
        "error": "duplicate",
        "message": "This file was already evaluated on this dataset with these options.",
        "run": {"id": run.pk, "name": run.name, "url": run.get_absolute_url(),
                "api_url": f"/api/runs/{run.pk}", "team": run.team.slug,
                "visibility": run.visibility},
        "requested": {"team": team.slug, "visibility": visibility},
        "can_edit": can_edit,
    }
    if can_edit:
        answer["edit"] = {"method": "PATCH", "api_url": f"/api/runs/{run.pk}",
                          "page": run_edit_page(run=run, team=team, visibility=visibility),
                          "body": {"team": team.slug, "visibility": visibility}}
        if differs:
            answer["message"] += (" To share or move it, PATCH its `api_url` with the team "
                                  "and visibility you asked for (see `edit`).")
    elif differs:
        answer["message"] += (f" Only its owner ({run.owner.get_username()}) or an owner of "
                              "its team can share or move it.")
    return answer


def deleted_runs_purge(*, now: datetime | None = None) -> int:
    """Remove for good the runs deleted more than `DELETED_RUN_DAYS` ago; how many.

    Samples, chunks, scores and changes go with their run. The result cache is not touched:
    its entries are keyed by program, not by run, and other runs reuse them.
    """
    cutoff = (now or timezone.now()) - timedelta(days=settings.DELETED_RUN_DAYS)
    purged = 0
    for run_id in Run.objects.filter(deleted_at__lt=cutoff).values_list("pk", flat=True):
        with transaction.atomic():
            # Locked and checked again: a restore that committed meanwhile wins.
            run = Run.objects.select_for_update().filter(
                pk=run_id, deleted_at__lt=cutoff).first()
            if run is None:
                continue
            run.delete()
            purged += 1
    if purged:
        logger.info("purged %d run(s) deleted before %s", purged, cutoff.isoformat())
    return purged
