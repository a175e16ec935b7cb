"""An uploaded file from its arrival until it becomes a run, shared by the upload page,
`POST /api/runs` and the suites.

The file arrives as the request's own temporary file (`uploads.BoundedUploadHandler`) and
is read once, as a stream: checked (`uploads.upload_check`) and, unless the caller only
wants the check (a dry run), written as it is read into a *staged* run
(`services.RunStager`: stored, shown nowhere). On any error the staged run is deleted,
except for a language mismatch alone, which the person may still confirm. Nothing of the
upload is left on the web host when the request ends, so whichever web process receives
the next request can take the next step:

- the API and the suites start the staged run at once (`intake_start`);
- the page holds it under a signed token while the person reads the confirmation page
  (`intake_hold`). Confirming starts it, or, for generations that look like another
  language, makes a new staged run of its samples against the suggested variant first
  (`intake_confirm`); cancelling deletes it (`intake_cancel`). A token is refused when
  it is forged, expired, another user's or already used. A staged run whose token
  expired is purged by the sweeper (`services.staged_runs_purge`).
"""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.core import signing
from django.core.exceptions import PermissionDenied
from django.core.files.uploadedfile import UploadedFile
from django.db.models.functions import Length

from evaluator.records import Sample as ReadSample
from webapp.benchmarks.models import Dataset
from webapp.runs.domain.sample_rows import UPLOADED_COLUMNS, uploaded_sample
from webapp.runs.models import Run, Sample
from webapp.runs.reads.selectors import find_duplicate_run
from webapp.runs.services.writes import (
    STAGE_BATCH_CHARS,
    STAGE_BATCH_ROWS,
    STAGING_MAX_AGE,
    RunStager,
    run_discard_staged,
    run_start_staged,
)
from webapp.runs.upload_checks.files import (
    EvaluationOptions,
    HashedUpload,
    Issue,
    UploadCheck,
    upload_check,
    upload_fingerprint,
    upload_recheck,
    upload_was_too_large,
)
from webapp.teams.models import Team

__all__ = [
    "STAGING_MAX_AGE",
    "Intake",
    "RunDetails",
    "StagedUploadRefused",
    "intake_cancel",
    "intake_confirm",
    "intake_file",
    "intake_hold",
    "intake_start",
    "too_large_issue",
    "upload_was_too_large",
]

_SIGNING_SALT = "webapp.runs.staged-upload"
_EXPIRED = "That upload has expired or was already used; upload it again."


class StagedUploadRefused(Exception):
    """A held upload that cannot be confirmed; the message says why, for the person."""


@dataclass(frozen=True)
class RunDetails:
    """What the run made of an upload is called, and who sees it: the upload form's
    answers, stored with its samples."""

    team: Team
    """The team the run belongs to; its owner must be a member."""
    name: str = ""
    model_name: str = ""
    model_meta: dict[str, Any] | None = None
    visibility: str = Run.Visibility.TEAM


@dataclass(frozen=True)
class Intake:
    check: UploadCheck | None
    issues: tuple[Issue, ...]
    duplicate: Run | None = None
    staged: Run | None = None
    """The staged run holding the samples, when they were stored."""

    @property
    def ok(self) -> bool:
        return self.check is not None and self.check.ok and self.duplicate is None

    def discard(self) -> None:
        """Delete the staged run, unless it was started meanwhile."""
        if self.staged is not None:
            run_discard_staged(owner=self.staged.owner, run_id=self.staged.pk)


def too_large_issue() -> Issue:
    limit = settings.UPLOAD_MAX_BYTES
    return Issue(None, None, "too_large",
                 f"The file is larger than this server accepts ({limit:,} bytes). Split it "
                 "into smaller files, one run each.")


def intake_file(
    *, user: User, uploaded: UploadedFile[bytes], dataset: Dataset, sanitize: bool,
    profile: str = "", timeout_seconds: float | None = None,
    allow_language_mismatch: bool = False, store: RunDetails | None = None,
) -> Intake:
    """Check an uploaded file and, given `store`, write its samples into a staged run as
    they are read. On any error the staged run is already deleted, except a language
    mismatch alone, which the user may still confirm. `profile` "" is the dataset's own
    reference harness; `timeout_seconds` None is its limit."""
    options = EvaluationOptions(sanitize=sanitize, profile=profile,
                                timeout_seconds=timeout_seconds)
    stager = None
    try:
        with _on_disk(uploaded) as (path, sha256, size):
            def check(sink: RunStager | None) -> UploadCheck:
                return upload_check(path=path, file_name=uploaded.name or path.name,
                                    sha256=sha256, size=size, dataset=dataset,
                                    options=options, sink=sink,
                                    allow_language_mismatch=allow_language_mismatch)

            # A file already evaluated is answered with that run once it passes its
            # checks: its samples are not stored again only to be deleted.
            known = store is not None and find_duplicate_run(
                user=user, fingerprint=upload_fingerprint(sha256=sha256, dataset=dataset,
                                                          options=options)) is not None
            stager = None if store is None or known else _stager(user, store)
            checked = check(stager)
            if store is not None and known and checked.only_language_mismatch:
                # Rare: it was evaluated with its mismatch allowed, and the person is asked
                # again first, which needs the samples stored. The parsers' answers are
                # cached, so the second reading costs the reading alone.
                stager = _stager(user, store)
                checked = check(stager)
    except BaseException:
        if stager is not None:
            stager.discard()
        raise
    return _settle(user=user, check=checked, stager=stager)


def _stager(user: User, store: RunDetails) -> RunStager:
    return RunStager(owner=user, team=store.team, name=store.name,
                     model_name=store.model_name, model_meta=store.model_meta,
                     visibility=store.visibility)


def _settle(*, user: User, check: UploadCheck, stager: RunStager | None) -> Intake:
    """The intake of a checked file: its staged run finished when it may go on (or only
    looks like another language), deleted when not."""
    staged = None
    if stager is not None and stager.run is not None:
        if check.ok or check.only_language_mismatch:
            try:
                staged = stager.finish(check)
            except BaseException:
                stager.discard()
                raise
        else:
            stager.discard()
    intake = Intake(check=check, issues=check.issues, staged=staged)
    if not check.ok:
        return intake
    duplicate = find_duplicate_run(user=user, fingerprint=check.fingerprint)
    if duplicate is not None:
        intake.discard()
        return Intake(check=check, issues=check.issues, duplicate=duplicate)
    return intake


def intake_start(intake: Intake, *, user: User) -> Run:
    """Queue the staged run of a checked upload. The run to show: this one, or one of the
    same file, dataset and options that became visible meanwhile (`run_start_staged`)."""
    if intake.staged is None or not intake.ok:
        raise ValueError("Only an upload stored without errors can be started.")
    started = run_start_staged(owner=user, run_id=intake.staged.pk)
    if started is None:
        raise StagedUploadRefused(_EXPIRED)
    return started


# -- held for the person's confirmation ---------------------------------------------------
def intake_hold(intake: Intake, *, user: User) -> str:
    """Keep a checked upload's staged run for its confirmation: the token that
    `intake_confirm` and `intake_cancel` take. It names the run, which holds everything
    else (samples, names, coverage), so any web process can confirm it."""
    check = intake.check
    if check is None or intake.staged is None:
        raise ValueError("Only an upload stored as a staged run can be held.")
    return signing.dumps({
        "user": user.pk, "run": intake.staged.pk,
        "mismatch": check.only_language_mismatch,
        "suggested": check.suggested.pk if check.suggested is not None else None,
        # A switch to another variant is a new check: it keeps the person's own choices.
        "sanitize": bool(check.options.get("sanitize")),
        "timeout": (check.options.get("timeout_seconds")
                    if check.options.get("limit_source") == "user" else None),
    }, salt=_SIGNING_SALT, compress=True)


@dataclass(frozen=True)
class _Held:
    run: Run
    mismatch: bool
    suggested: int | None
    sanitize: bool
    timeout: float | None


def _held(token: str, *, user: User) -> _Held:
    try:
        payload: dict[str, Any] = signing.loads(token, salt=_SIGNING_SALT,
                                                 max_age=STAGING_MAX_AGE)
    except signing.SignatureExpired:
        raise StagedUploadRefused(
            "That upload waited more than an hour and has expired; upload it again.") from None
    except signing.BadSignature:
        raise StagedUploadRefused(
            "That upload link is not valid (it was altered); upload the file again.") from None
    run_id = payload.get("run")
    run = (Run.objects.select_related("dataset", "team")
           .filter(pk=run_id, owner_id=user.pk, status=Run.Status.STAGED).first()
           if payload.get("user") == user.pk and isinstance(run_id, int) else None)
    if run is None:
        raise StagedUploadRefused(_EXPIRED)
    suggested, timeout = payload.get("suggested"), payload.get("timeout")
    return _Held(run=run, mismatch=bool(payload.get("mismatch")),
                 suggested=suggested if isinstance(suggested, int) else None,
                 sanitize=bool(payload.get("sanitize")),
                 timeout=float(timeout) if isinstance(timeout, int | float) else None)


def intake_confirm(token: str, *, user: User, switch_to: str = "",
                   allow_language_mismatch: bool = False) -> Run:
    """Start the staged run that `token` holds; the run to show (it, or a run of the same
    file that became visible meanwhile).

    Generations that look like another language need `allow_language_mismatch`, or a
    switch to the variant the check suggested (`switch_to` is its id; any other value is
    ignored), which checks the staged samples again against that variant, as a new
    staged run. Raises `StagedUploadRefused` for a token that is forged, expired, another
    user's or already used, a mismatch not allowed (the staged run is then deleted), or
    samples that do not pass against the other variant.
    """
    held = _held(token, user=user)
    if switch_to and held.suggested is not None and switch_to == str(held.suggested):
        intake = _switch(held, user=user, allow_language_mismatch=allow_language_mismatch)
        if intake.duplicate is not None:
            return intake.duplicate
        if intake.ok:
            return intake_start(intake, user=user)
        intake.discard()
        if intake.check is not None and intake.check.only_language_mismatch:
            raise StagedUploadRefused(
                "The generations look like another language than the dataset's: tick the "
                "box to evaluate them anyway.")
        raise StagedUploadRefused("The file no longer passes its checks; upload it again.")
    if held.mismatch and not allow_language_mismatch:
        run_discard_staged(owner=user, run_id=held.run.pk)
        raise StagedUploadRefused(
            "The generations look like another language than the dataset's: tick the box "
            "to evaluate them anyway.")
    started = run_start_staged(owner=user, run_id=held.run.pk)
    if started is None:
        raise StagedUploadRefused(_EXPIRED)
    return started


def intake_cancel(token: str, *, user: User) -> None:
    """Delete the staged run that `token` holds, at once. Raises `StagedUploadRefused` as
    `intake_confirm` does (a token already used, say)."""
    held = _held(token, user=user)
    run_discard_staged(owner=user, run_id=held.run.pk)


def _switch(held: _Held, *, user: User, allow_language_mismatch: bool) -> Intake:
    """The held samples checked against the suggested variant, as a new staged run; the
    held run is deleted, whatever the outcome."""
    old = held.run
    dataset = (Dataset.objects.filter(pk=held.suggested).first()
               if held.suggested is not None else None)
    try:
        if dataset is None:
            raise StagedUploadRefused("That upload can no longer be used; upload it again.")
        try:
            stager = RunStager(owner=user, team=old.team, name=old.name,
                               model_name=old.model_name, model_meta=old.model_meta,
                               visibility=old.visibility)
        except PermissionDenied:
            raise StagedUploadRefused(
                "That upload can no longer be used; upload it again.") from None
        try:
            check = upload_recheck(
                samples=_staged_samples(old), file_name=old.file_name, sha256=old.file_sha256,
                size=old.file_size, dataset=dataset,
                options=EvaluationOptions(sanitize=held.sanitize, timeout_seconds=held.timeout),
                allow_language_mismatch=allow_language_mismatch, sink=stager)
        except BaseException:
            stager.discard()
            raise
        return _settle(user=user, check=check, stager=stager)
    finally:
        run_discard_staged(owner=user, run_id=old.pk)


def _staged_samples(run: Run) -> Iterator[ReadSample]:
    """A staged run's samples in the file's order, as read before sanitizing (the new
    check sanitizes for its own problems), in pages of at most `STAGE_BATCH_ROWS` rows
    and `STAGE_BATCH_CHARS` characters (or one row)."""
    rows = Sample.objects.filter(run=run).order_by("position")
    start = 0
    while True:
        sizes = list(rows.filter(position__gte=start)
                     .values_list("position", Length("raw"))
                     [:STAGE_BATCH_ROWS])
        if not sizes:
            return
        # The page ends before the row that would take it past the characters' bound.
        end, chars = sizes[0][0], 0
        for position, size in sizes:
            if chars and chars + size > STAGE_BATCH_CHARS:
                break
            end, chars = position, chars + size
        for values in (rows.filter(position__gte=start, position__lte=end)
                       .values_list(*UPLOADED_COLUMNS)):
            yield uploaded_sample(values, layout=run.file_layout)
        start = end + 1


# -- the uploaded file --------------------------------------------------------------------
@contextmanager
def _on_disk(uploaded: UploadedFile[bytes]) -> Iterator[tuple[Path, str, int]]:
    """The uploaded file as (path, sha256, size). Our upload handler's file is already on
    disk and hashed: it is read where it is, and Django deletes it with the request.
    Another upload (a test's, a suite's file read from disk) is copied to a temporary
    file, hashed on the way, and deleted on leaving."""
    if isinstance(uploaded, HashedUpload):
        uploaded.flush()
        path = Path(uploaded.temporary_file_path())
        yield path, uploaded.sha256, path.stat().st_size
        return
    digest = hashlib.sha256()
    Path(settings.UPLOAD_DIR).mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=settings.UPLOAD_DIR, suffix=".upload") as out:
        for chunk in uploaded.chunks():
            digest.update(chunk)
            out.write(chunk)
        out.flush()
        path = Path(out.name)
        yield path, digest.hexdigest(), path.stat().st_size
