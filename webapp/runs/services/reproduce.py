"""Reproduce a run: evaluate its stored samples again on this server, then list every
verdict that moved and every manifest field that differs.

A reproduction is a run of its own (`Run.reproduction_of`), made by `services.run_copy`
like a re-run, without the result cache. Being a run, it takes the evaluation's whole
path: chunks on the per-language queues, leases and recovery, live progress, scores. The
original's samples, results and scores are never written. `selectors.visible_runs` leaves
reproductions out of lists, leaderboards and comparisons, so a number on a leaderboard
is still the original's; a reproduction is reached only from its original's page.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404
from django.urls import reverse

from evaluator.manifest import ManifestDifference, manifest_differences
from webapp.runs.domain.events import PassAtKValue
from webapp.runs.models import Run, Sample
from webapp.runs.reads.reports import run_reported_ks
from webapp.runs.reads.selectors import HAS_REPRODUCTIONS, Viewer, get_run_for_user, run_pass_at_k
from webapp.runs.services.writes import run_copy
from webapp.teams.selectors import role_in_team

CHANGES_SHOWN = 2000
"""Changed verdicts listed on the page; the counts by old and new status cover them all."""
EVALUATE_DENIED = "Only the run's owner and the members of its team can reproduce it."


def run_can_evaluate(*, user: Viewer, run: Run) -> bool:
    """Whether `user` may have the run evaluated again: its owner or a member of its team
    (a reproduction changes nothing of the run, so team owners are not needed)."""
    if not user.is_authenticated:
        return False
    if run.owner_id == user.pk:
        return True
    return role_in_team(user=user, team_id=run.team_id) is not None


def reproduce_refusal(*, user: Viewer, run: Run) -> str | None:
    """Why `user` may not reproduce `run` now, or None."""
    if not run_can_evaluate(user=user, run=run):
        return EVALUATE_DENIED
    if run.reproduction_of_id is not None:
        return "This run is itself a reproduction; reproduce the original run instead."
    if run.status != Run.Status.FINISHED:
        return ("Only a finished run can be reproduced: its verdicts are what a "
                "reproduction compares with.")
    return None


def active_reproduction(*, run: Run) -> Run | None:
    return run.reproductions.filter(status__in=Run.ACTIVE).order_by("-pk").first()


def run_reproduce(*, user: User, run: Run) -> Run:
    """Start a reproduction of `run`, or return the one already under way."""
    refusal = reproduce_refusal(user=user, run=run)
    if refusal == EVALUATE_DENIED:
        raise PermissionDenied(refusal)
    if refusal is not None:
        raise ValidationError(refusal)
    going = active_reproduction(run=run)
    if going is not None:
        return going
    # Without the cache: a verdict read back from it would not be evaluated again.
    return run_copy(owner=user, run=run, use_cache=False, reproduction_of=run)


def run_reproductions(*, run: Run) -> list[Run]:
    if not getattr(run, HAS_REPRODUCTIONS, True):
        return []  # known from the run's row (`get_run_for_user`): most runs have none
    return list(run.reproductions.filter(deleted_at__isnull=True).order_by("-pk"))


def get_reproduction_for_user(*, user: Viewer, run_id: int, reproduction_id: int
                              ) -> tuple[Run, Run]:
    """(original, reproduction), each visible to `user`, else a 404."""
    original = get_run_for_user(user=user, run_id=run_id)
    reproduction = get_run_for_user(user=user, run_id=reproduction_id)
    if reproduction.reproduction_of_id != original.pk:
        raise Http404("No such reproduction")
    return original, reproduction


@dataclass(frozen=True)
class VerdictChange:
    task_id: str
    index: int
    old_status: str
    new_status: str
    old_sample_id: int
    new_sample_id: int
    old_url: str
    new_url: str


@dataclass(frozen=True)
class ScoreChange:
    k: int
    old: PassAtKValue
    new: PassAtKValue

    @property
    def moved(self) -> bool:
        return self.old["value"] != self.new["value"]


@dataclass
class ReproductionReport:
    original: Run
    reproduction: Run
    total: int
    compared: int
    """Samples with a verdict in both runs."""
    changes: list[VerdictChange] = field(default_factory=list)
    differences: list[ManifestDifference] = field(default_factory=list)
    original_has_manifest: bool = True
    scores: list[ScoreChange] = field(default_factory=list)
    """pass@k of both runs, for each k both have (the reproduction's once it finished)."""

    @property
    def finished(self) -> bool:
        return not self.reproduction.is_active

    @property
    def reproduced(self) -> bool:
        return (self.reproduction.status == Run.Status.FINISHED and not self.changes
                and self.compared == self.total)

    @property
    def shown(self) -> str:
        """The `slice` of changes the page lists."""
        return f":{CHANGES_SHOWN}"

    @property
    def hidden(self) -> int:
        return max(len(self.changes) - CHANGES_SHOWN, 0)

    @property
    def counts(self) -> dict[tuple[str, str], int]:
        """How many samples moved from each verdict to each other one."""
        moves: dict[tuple[str, str], int] = {}
        for change in self.changes:
            key = (change.old_status, change.new_status)
            moves[key] = moves.get(key, 0) + 1
        return dict(sorted(moves.items(), key=lambda item: -item[1]))


def _verdicts(run: Run) -> dict[tuple[str, int], tuple[str, int]]:
    return {(task_id, index): (status, pk) for task_id, index, status, pk in
            Sample.objects.filter(run=run).values_list("task_id", "index", "status", "pk")}


def _task_order(key: tuple[str, int]) -> tuple[str, int, int]:
    head, _, number = key[0].rpartition("/")
    return (head, int(number) if number.isdigit() else -1, key[1])


def reproduction_report(*, original: Run, reproduction: Run) -> ReproductionReport:
    """Every sample whose verdict differs between the two runs (task order), and every
    manifest field that differs. Samples still pending in the reproduction are not
    compared yet."""
    before, after = _verdicts(original), _verdicts(reproduction)
    changes: list[VerdictChange] = []
    compared = 0
    for key in sorted(before.keys() & after.keys(), key=_task_order):
        (old_status, old_pk), (new_status, new_pk) = before[key], after[key]
        if new_status == "pending" or old_status == "pending":
            continue
        compared += 1
        if old_status != new_status:
            changes.append(VerdictChange(
                task_id=key[0], index=key[1], old_status=old_status, new_status=new_status,
                old_sample_id=old_pk, new_sample_id=new_pk,
                old_url=reverse("runs:sample", args=[original.pk, old_pk]),
                new_url=reverse("runs:sample", args=[reproduction.pk, new_pk]),
            ))
    differences = (manifest_differences(original.manifest, reproduction.manifest)
                   if reproduction.manifest else [])
    ks = run_reported_ks(original)
    new_scores = {score["k"]: score for score in run_pass_at_k(run=reproduction, ks=ks)}
    scores = [ScoreChange(k=score["k"], old=score, new=new_scores[score["k"]])
              for score in run_pass_at_k(run=original, ks=ks) if score["k"] in new_scores]
    return ReproductionReport(
        original=original, reproduction=reproduction, total=len(before), compared=compared,
        changes=changes, differences=differences,
        original_has_manifest=bool(original.manifest), scores=scores,
    )


def reproduction_progress(*, reproduction: Run) -> dict[str, Any]:
    """What the report page's script polls while the reproduction runs."""
    return {"status": reproduction.status, "done": reproduction.done_count,
            "total": reproduction.samples_total, "active": reproduction.is_active}
