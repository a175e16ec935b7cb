"""Writes to suites: create one, upload several generation files into it at once, attach
runs that already exist, and take a run out.

A suite holds at most one run per variant (dataset key): the grid has one column per
variant, and two runs of one model on one variant would make a cell ambiguous.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction

from evaluator.samples import HasIssues
from evaluator.sanitize import sanitize_by_default
from evaluator.variant_detection import (
    Candidate,
    Detection,
    Evidence,
    detect_variant,
    read_evidence,
)
from webapp.benchmarks.models import Dataset
from webapp.benchmarks.selectors import variant_candidates
from webapp.runs.models import Run
from webapp.runs.services.intake import Intake, RunDetails, intake_file, intake_start
from webapp.runs.upload_checks.files import Issue
from webapp.suites.models import Suite, SuiteRun
from webapp.suites.selectors import suite_can_manage
from webapp.teams.models import Membership, Team

MAX_FILES = 12
"""Files one upload may carry: two natural languages short of every pairing we hold."""


def suite_create(
    *, owner: User, team: Team, name: str, model_name: str, revision: str = "",
    decoding: dict[str, Any] | None = None, visibility: str = Run.Visibility.TEAM,
    description: str = "",
) -> Suite:
    if not Membership.objects.filter(team=team, user_id=owner.pk).exists():
        raise PermissionDenied("You are not a member of that team.")
    if visibility not in Run.Visibility.values:
        raise ValidationError(f"Unknown visibility {visibility!r}.")
    if not model_name.strip():
        raise ValidationError("A suite needs the model's name.")
    return Suite.objects.create(
        owner=owner, team=team, visibility=visibility,
        name=name.strip()[:200] or model_name.strip()[:200],
        model_name=model_name.strip()[:200], revision=revision.strip()[:200],
        decoding=decoding or {}, description=description.strip(),
    )


def _require_manager(*, user: User, suite: Suite) -> None:
    if not suite_can_manage(user=user, suite=suite):
        raise PermissionDenied("Only the suite's owner or an owner of its team can change it.")


def _taken_variants(suite: Suite) -> dict[str, int]:
    """Dataset key -> id of the suite's run on it (deleted runs included: restoring one
    must not give the suite two runs on a variant)."""
    return dict(Run.objects.filter(suite_members__suite=suite)
                .values_list("dataset__key", "pk"))


def _check_variants(*, suite: Suite, datasets: Sequence[Dataset]) -> list[str]:
    """Why these datasets cannot all join the suite: each message names the variant."""
    taken = _taken_variants(suite)
    errors: list[str] = []
    seen: set[str] = set()
    for dataset in datasets:
        if dataset.key in seen:
            errors.append(f"{dataset.key} is given twice; a suite has one run per variant.")
        elif dataset.key in taken:
            errors.append(f"The suite already has run {taken[dataset.key]} on {dataset.key}; "
                          "take it out of the suite first to replace it.")
        seen.add(dataset.key)
    return errors


def suite_attach_runs(*, user: User, suite: Suite, runs: Sequence[Run]) -> int:
    """Add runs the user may see (the caller found them through `visible_runs`); how many
    were added. All or none: any conflict raises `ValidationError` listing every one."""
    _require_manager(user=user, suite=suite)
    if not runs:
        raise ValidationError("Choose at least one run to add.")
    errors = _check_variants(suite=suite, datasets=[run.dataset for run in runs])
    if errors:
        raise ValidationError(errors)
    with transaction.atomic():
        SuiteRun.objects.bulk_create(
            [SuiteRun(suite=suite, run=run, added_by=user) for run in runs])
        suite.save(update_fields=["updated_at"])
    return len(runs)


def suite_remove_run(*, user: User, suite: Suite, run_id: int) -> bool:
    """Take a run out of the suite (the run itself stays); False if it was not in it."""
    _require_manager(user=user, suite=suite)
    removed, _ = SuiteRun.objects.filter(suite=suite, run_id=run_id).delete()
    if removed:
        suite.save(update_fields=["updated_at"])
    return bool(removed)


# -- several files at once ---------------------------------------------------------------------
@dataclass(frozen=True)
class SuiteFile:
    """One file of a multi-file upload and the variant it was generated for."""

    uploaded: UploadedFile[bytes]
    dataset: Dataset


@dataclass
class FileOutcome(HasIssues[Issue]):
    """What became of one file: its issues (empty when it is fine), the existing run it
    duplicates (attached instead of evaluating the file again), or the run made of it."""

    file_name: str
    dataset: Dataset
    issues: tuple[Issue, ...] = ()
    coverage: dict[str, Any] = field(default_factory=dict)
    duplicate: Run | None = None
    run: Run | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "file": self.file_name, "dataset": self.dataset.key, "ok": not self.errors,
            "issues": [issue.to_dict() for issue in self.errors],
            "warnings": [issue.to_dict() for issue in self.warnings],
            "coverage": self.coverage,
            "duplicate_of": self.duplicate.pk if self.duplicate else None,
            "run": ({"id": self.run.pk, "url": self.run.get_absolute_url(),
                     "api_url": f"/api/runs/{self.run.pk}", "status": self.run.status}
                    if self.run else None),
        }


@dataclass
class SuiteUpload:
    files: list[FileOutcome]
    errors: list[str] = field(default_factory=list)
    """Problems of the upload as a whole (a variant given twice, too many files)."""
    created: bool = False

    @property
    def ok(self) -> bool:
        return not self.errors and not any(outcome.errors for outcome in self.files)


def file_variant(*, uploaded: UploadedFile[bytes], candidates: Sequence[Candidate],
                 file_name: str = "") -> Detection:
    """The stored variant the head of `uploaded` points to (`evaluator.variant_detection`),
    read a line at a time and no further than its first `DETECTION_LINES` records."""
    handle = uploaded.file
    if handle is None:
        evidence = Evidence()
    else:
        handle.seek(0)
        try:
            evidence = read_evidence(handle)
        finally:
            handle.seek(0)
    return detect_variant(evidence, candidates, file_name=file_name or uploaded.name or "")


def _variant_issue(item: SuiteFile, candidates: Sequence[Candidate]) -> Issue | None:
    """An error when the content of the file contradicts the variant chosen for it."""
    detection = file_variant(uploaded=item.uploaded, candidates=candidates)
    problem = detection.mismatch(item.dataset.key)
    if not problem:
        return None
    return Issue(None, "dataset", "variant_mismatch",
                 f"{problem} Choose {detection.key} for this file, or confirm that it should "
                 f"run on {item.dataset.key} as chosen.")


def _run_meta(suite: Suite) -> dict[str, Any]:
    meta: dict[str, Any] = {"suite": suite.pk}
    if suite.revision:
        meta["revision"] = suite.revision
    if suite.decoding:
        meta["decoding"] = suite.decoding
    return meta


def suite_upload(
    *, user: User, suite: Suite, files: Sequence[SuiteFile],
    sanitize: bool | None = None, profile: str = "", allow_language_mismatch: bool = False,
    dry_run: bool = False, confirm_variants: bool = False,
) -> SuiteUpload:
    """Check every file exactly as a single upload is checked (`intake_file`, which stores
    each file's samples as a staged run while it reads it, unless `dry_run`), then either
    start a run of each (in the suite's team, with its visibility and model) and add them
    all to the suite, or, when any file or the set has an error, delete every staged run.

    A file already evaluated on its variant is not evaluated again: the existing run is
    added instead. `sanitize` None is each dataset's reference harness's own choice. A file
    whose first lines point to another stored variant than the one chosen for it (its ids,
    layout, code or prompts: `file_variant`) is an error unless `confirm_variants`.
    """
    _require_manager(user=user, suite=suite)
    upload = SuiteUpload(files=[])
    if not files:
        upload.errors.append("Choose at least one file.")
        return upload
    if len(files) > MAX_FILES:
        upload.errors.append(f"At most {MAX_FILES} files at once; {len(files)} were given.")
        return upload
    upload.errors.extend(_check_variants(suite=suite, datasets=[f.dataset for f in files]))
    mismatches: dict[int, Issue] = {}
    if not confirm_variants:
        candidates = variant_candidates()
        mismatches = {id(item): issue for item in files
                      if (issue := _variant_issue(item, candidates)) is not None}
    intakes: list[Intake] = []
    try:
        for item in files:
            if id(item) in mismatches:
                # Checked against a variant it was not written for, its every line would
                # only repeat the same mistake: the one issue says it all.
                upload.files.append(FileOutcome(file_name=item.uploaded.name or "",
                                                dataset=item.dataset,
                                                issues=(mismatches[id(item)],)))
                continue
            clean = (sanitize_by_default(item.dataset.layout) if sanitize is None
                     else sanitize)
            # A set that already has an error will not be created: the rest is only checked.
            store = None if dry_run or mismatches or not upload.ok else RunDetails(
                team=suite.team, name=f"{suite.name} · {item.dataset.key}"[:200],
                model_name=suite.model_name, model_meta=_run_meta(suite),
                visibility=suite.visibility)
            intake = intake_file(user=user, uploaded=item.uploaded, dataset=item.dataset,
                                 sanitize=clean, profile=profile,
                                 allow_language_mismatch=allow_language_mismatch, store=store)
            intakes.append(intake)
            check = intake.check
            upload.files.append(FileOutcome(
                file_name=item.uploaded.name or "", dataset=item.dataset, issues=intake.issues,
                coverage=check.coverage_dict() if check is not None else {},
                duplicate=intake.duplicate,
            ))
        if not upload.ok or dry_run:
            return upload
        with transaction.atomic():
            for outcome, intake in zip(upload.files, intakes, strict=True):
                if outcome.duplicate is not None:
                    outcome.run = outcome.duplicate
                    continue
                outcome.run = intake_start(intake, user=user)
            SuiteRun.objects.bulk_create([
                SuiteRun(suite=suite, run=outcome.run, added_by=user)
                for outcome in upload.files if outcome.run is not None
            ])
            suite.save(update_fields=["updated_at"])
        upload.created = True
        return upload
    finally:
        # Every staged run that was not started goes, whatever happened: a refused set
        # must leave nothing behind.
        for intake in intakes:
            intake.discard()
