"""An uploaded file from its arrival until it becomes a run, shared by the upload page,
`POST /api/runs` and the suites: the one owner of the staged copy.

A file is staged on disk, checked once (`uploads.upload_check`), and then either used at
once (the API, a suite), or held under a signed token while the person confirms (the page).
Holding writes the check beside the staged file (`<name>.check.json`); confirming reads it
back, so the file is neither read nor hashed again. A clean file is also stored as a
staged run while the person reads the page (`services.run_create(staged=True)`); the
token names it, and confirming only starts it (`intake_held_run`), unless the person
switched to another variant, which is a new check of the staged file. The token carries
the size and modification time of both files: a staged file changed after its check is
refused, and so is a token that is forged, expired, another user's, or already used.
Whatever is refused, or used, is discarded here.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.core import signing
from django.core.files.uploadedfile import UploadedFile

from webapp.benchmarks.models import Dataset
from webapp.runs.models import Run
from webapp.runs.selectors import find_duplicate_run
from webapp.runs.uploads import (
    EvaluationOptions,
    HashedUpload,
    Issue,
    UploadCheck,
    check_allowing_language_mismatch,
    check_from_json,
    check_to_json,
    upload_check,
    upload_was_too_large,
)

__all__ = [
    "Intake",
    "StagedUploadRefused",
    "discard_staged",
    "HeldRun",
    "intake_file",
    "intake_held_run",
    "intake_hold",
    "intake_redeem",
    "staging_dir",
    "too_large_issue",
    "upload_was_too_large",
]

STAGING_MAX_AGE = 3600
"""Seconds a held upload may wait for its confirmation."""
_SIGNING_SALT = "webapp.runs.staged-upload"
_CHECK_SUFFIX = ".check.json"


class StagedUploadRefused(Exception):
    """A held upload that cannot be confirmed; the message says why, for the person."""


@dataclass(frozen=True)
class Intake:
    check: UploadCheck | None
    issues: tuple[Issue, ...]
    duplicate: Run | None = None

    @property
    def ok(self) -> bool:
        return self.check is not None and self.check.ok and self.duplicate is None

    def discard(self) -> None:
        """Remove the staged copy (and a held check), if any is left."""
        if self.check is not None:
            discard_staged(self.check.path)


def too_large_issue() -> Issue:
    limit = settings.UPLOAD_MAX_BYTES
    return Issue(None, None, "too_large",
                 f"The file is larger than this server accepts ({limit:,} bytes).")


def intake_file(
    *, user: User, uploaded: UploadedFile[bytes], dataset: Dataset, sanitize: bool,
    profile: str = "", allow_language_mismatch: bool = False,
) -> Intake:
    """Stage and check an uploaded file. On any error the staged copy is already deleted,
    except a language mismatch alone, which the user may still confirm.
    `profile` "" is the dataset's own reference harness."""
    path, sha256, size = _stage(uploaded)
    check = upload_check(path=path, file_name=uploaded.name or path.name, sha256=sha256,
                         size=size, dataset=dataset,
                         options=EvaluationOptions(sanitize=sanitize, profile=profile),
                         allow_language_mismatch=allow_language_mismatch)
    return _settle(user=user, check=check)


def _settle(*, user: User, check: UploadCheck) -> Intake:
    """The intake of a checked file, discarding the staged copy when it cannot go on."""
    if not check.ok:
        intake = Intake(check=check, issues=check.issues)
        if not check.only_language_mismatch:
            intake.discard()
        return intake
    duplicate = find_duplicate_run(user=user, fingerprint=check.fingerprint)
    intake = Intake(check=check, issues=check.issues, duplicate=duplicate)
    if duplicate is not None:
        intake.discard()
    return intake


def intake_hold(intake: Intake, *, user: User, choices: dict[str, Any],
                staged_run: int | None = None) -> str:
    """Keep a checked upload for its confirmation: the token that `intake_redeem` takes.
    `choices` are the person's answers on the upload form (name, team, ...), given back
    by `intake_redeem` as they were; they must be JSON. `staged_run` is the id of the run
    already stored from it, if any (`intake_held_run` gives it back)."""
    check = intake.check
    if check is None:
        raise ValueError("Only a checked upload can be held.")
    sidecar = _sidecar(check.path)
    sidecar.write_text(json.dumps(check_to_json(check)), encoding="utf-8")
    return signing.dumps({
        "user": user.pk, "staged": check.path.name,
        "stat": [_stat(check.path), _stat(sidecar)],
        "sanitize": bool(check.options.get("sanitize")), "choices": choices,
        "run": staged_run,
    }, salt=_SIGNING_SALT, compress=True)


@dataclass(frozen=True)
class HeldRun:
    run_id: int | None
    """The staged run stored at upload, if the file was clean."""
    path: Path
    """The staged file, to discard once the run is started."""


def intake_held_run(token: str, *, user: User) -> HeldRun:
    """What a confirmation token holds, checked (signature, age, user) without reading the
    staged file or its check. Raises `StagedUploadRefused` as `intake_redeem` does."""
    payload = _payload(token, user=user)
    run_id = payload.get("run")
    return HeldRun(run_id=run_id if isinstance(run_id, int) else None,
                   path=staging_dir() / os.path.basename(str(payload.get("staged", ""))))


def _payload(token: str, *, user: User) -> dict[str, Any]:
    try:
        payload: dict[str, Any] = signing.loads(token, salt=_SIGNING_SALT,
                                                 max_age=STAGING_MAX_AGE)
    except signing.SignatureExpired:
        raise StagedUploadRefused(
            "That upload waited more than an hour and has expired; upload it again.") from None
    except signing.BadSignature:
        raise StagedUploadRefused(
            "That upload link is not valid (it was altered); upload the file again.") from None
    if payload.get("user") != user.pk:
        raise StagedUploadRefused(
            "That upload has expired or was already used; upload it again.")
    return payload


def intake_redeem(
    token: str, *, user: User, switch_to: str = "",
    allow_language_mismatch: bool = False,
) -> tuple[Intake, dict[str, Any]]:
    """The held upload that `token` names, with the choices held with it.

    The check made at upload is used as it is, or with its language mismatch allowed.
    Only a switch to the variant the generations look like (the check's `suggested`,
    which the confirm page offers; `switch_to` is its id, any other value is ignored) is
    a new check of the staged file, since that variant's problems and language differ.
    Raises `StagedUploadRefused` (the staged copy discarded)
    for a token that is forged, expired, another user's or already used, a staged file
    changed since its check, or a check that no longer passes.
    """
    payload = _payload(token, user=user)
    path = staging_dir() / os.path.basename(str(payload.get("staged", "")))
    sidecar = _sidecar(path)
    if not path.is_file() or not sidecar.is_file():
        raise StagedUploadRefused(
            "That upload has expired or was already used; upload it again.")
    if payload.get("stat") != [_stat(path), _stat(sidecar)]:
        discard_staged(path)
        raise StagedUploadRefused(
            "The staged file changed after it was checked, so it cannot be trusted; "
            "upload it again.")
    try:
        check = check_from_json(json.loads(sidecar.read_text(encoding="utf-8")), path=path)
    except (Dataset.DoesNotExist, ValueError, KeyError, TypeError):
        discard_staged(path)
        raise StagedUploadRefused(
            "That upload can no longer be used; upload it again.") from None
    choices: dict[str, Any] = payload.get("choices", {})
    if switch_to and check.suggested is not None and switch_to == str(check.suggested.pk):
        check = upload_check(
            path=path, file_name=check.file_name, sha256=check.sha256, size=check.size,
            dataset=check.suggested,
            options=EvaluationOptions(sanitize=bool(payload.get("sanitize"))),
            allow_language_mismatch=allow_language_mismatch)
    elif allow_language_mismatch:
        check = check_allowing_language_mismatch(check)
    intake = _settle(user=user, check=check)
    if intake.duplicate is not None or intake.ok:
        return intake, choices
    intake.discard()
    if check.only_language_mismatch:
        raise StagedUploadRefused(
            "The generations look like another language than the dataset's: tick the box "
            "to evaluate them anyway.")
    raise StagedUploadRefused("The file no longer passes its checks; upload it again.")


# -- the staging folder -------------------------------------------------------------------
def staging_dir() -> Path:
    folder = Path(settings.UPLOAD_DIR) / "staged"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def discard_staged(path: Path) -> None:
    """Remove a staged file and its held check; nothing outside the staging folder."""
    if path.parent == staging_dir():
        path.unlink(missing_ok=True)
        _sidecar(path).unlink(missing_ok=True)


def _stage(uploaded: UploadedFile[bytes]) -> tuple[Path, str, int]:
    """Move an uploaded file into the staging folder; (path, sha256, size)."""
    _sweep_staging()
    suffix = ".jsonl.gz" if (uploaded.name or "").lower().endswith(".gz") else ".jsonl"
    target = staging_dir() / f"{secrets.token_hex(16)}{suffix}"
    if isinstance(uploaded, HashedUpload):
        uploaded.flush()
        # Same folder tree, so a rename: a large upload is not copied. Django's temporary
        # file tolerates its path having moved when it is closed.
        os.replace(uploaded.temporary_file_path(), target)
        return target, uploaded.sha256, target.stat().st_size
    # Another handler's upload (a test's, a suite's file read from disk): hash it while
    # copying.
    digest = hashlib.sha256()
    with target.open("wb") as out:
        for chunk in uploaded.chunks():
            digest.update(chunk)
            out.write(chunk)
    return target, digest.hexdigest(), target.stat().st_size


def _sidecar(path: Path) -> Path:
    return path.with_name(path.name + _CHECK_SUFFIX)


def _stat(path: Path) -> list[int]:
    # Size and modification time in nanoseconds: any write to the file after its check
    # changes them, and reading them costs nothing, unlike hashing the file again.
    stat = path.stat()
    return [stat.st_size, stat.st_mtime_ns]


def _sweep_staging() -> None:
    # Staged files that were never confirmed are removed after a day.
    cutoff = time.time() - 86400
    for path in staging_dir().iterdir():
        try:
            if path.stat().st_mtime < cutoff:
                path.unlink()
        except FileNotFoundError:
            continue
