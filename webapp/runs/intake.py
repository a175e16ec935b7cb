"""The steps an uploaded file goes through before it may become a run, shared by the upload
page and `POST /api/runs`: size limit, staging on disk, the evaluator's check, duplicates."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.files.uploadedfile import UploadedFile
from django.http import HttpRequest

from webapp.benchmarks.models import Dataset
from webapp.runs.models import Run
from webapp.runs.selectors import find_duplicate_run
from webapp.runs.uploads import (
    EvaluationOptions,
    Issue,
    UploadCheck,
    discard_staged,
    stage_uploaded_file,
    upload_check,
)


@dataclass(frozen=True)
class Intake:
    check: UploadCheck | None
    issues: tuple[Issue, ...]
    duplicate: Run | None = None

    @property
    def ok(self) -> bool:
        return self.check is not None and self.check.ok and self.duplicate is None


def too_large_issue() -> Issue:
    limit = settings.UPLOAD_MAX_BYTES
    return Issue(None, None, "too_large",
                 f"The file is larger than this server accepts ({limit:,} bytes).")


def upload_was_too_large(request: HttpRequest) -> bool:
    return bool(getattr(request, "upload_too_large", False))


def intake_file(
    *, user: AbstractBaseUser, uploaded: UploadedFile, dataset: Dataset, sanitize: bool,
    profile: str = "", allow_language_mismatch: bool = False,
) -> Intake:
    """Stage and check an uploaded file. On any error the staged copy is already deleted,
    except a language mismatch alone, which the user may still confirm.
    `profile` "" is the dataset's own reference harness."""
    path, sha256, size = stage_uploaded_file(uploaded)
    return intake_staged(user=user, path=path, file_name=uploaded.name or path.name,
                         sha256=sha256, size=size, dataset=dataset, sanitize=sanitize,
                         profile=profile, allow_language_mismatch=allow_language_mismatch)


def intake_staged(
    *, user: AbstractBaseUser, path: Path, file_name: str, sha256: str, size: int,
    dataset: Dataset, sanitize: bool, profile: str = "", allow_language_mismatch: bool = False,
) -> Intake:
    check = upload_check(path=path, file_name=file_name, sha256=sha256, size=size,
                         dataset=dataset,
                         options=EvaluationOptions(sanitize=sanitize, profile=profile),
                         allow_language_mismatch=allow_language_mismatch)
    if not check.ok:
        if not check.only_language_mismatch:
            discard_staged(path)
        return Intake(check=check, issues=check.issues)
    duplicate = find_duplicate_run(user=user, fingerprint=check.fingerprint)
    if duplicate is not None:
        discard_staged(path)
        return Intake(check=check, issues=check.issues, duplicate=duplicate)
    return Intake(check=check, issues=check.issues)
