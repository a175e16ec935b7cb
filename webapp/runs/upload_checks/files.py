"""Generation files on their way in: streamed to disk under a size limit and hashed as they
arrive, then checked.

A file is checked by the evaluator's reader against the chosen dataset's problems, as a
stream: each sample is handed to a `SampleSink` as soon as its line is read (the intake's
staged run), and the check keeps only counters, the issues and the few completions the
language check parses, so checking costs the same memory whatever the file's size. Only
a file without errors can become a run. Nothing here writes to the database or keeps a
file: `intake` decides what becomes of both.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol, cast

from django.conf import settings
from django.core.files.uploadedfile import TemporaryUploadedFile
from django.core.files.uploadhandler import (
    FileUploadHandler,
    StopUpload,
    TemporaryFileUploadHandler,
)
from django.db.models import Case, Count, IntegerField, Q, Value, When
from django.http import HttpRequest

from evaluator.language_check import LanguageCheck, SampleSpread, check_language
from evaluator.languages.registry import display_name
from evaluator.profiles import default_profile, get_profile, run_time_limit
from evaluator.records import HARNESS_VERSION, Problem, Sample
from evaluator.samples import Coverage, FileIssue, HasIssues, SampleReader
from webapp.benchmarks.models import Dataset, ProblemVariant
from webapp.benchmarks.selectors import dataset_problems
from webapp.runs.models import LEGACY_PROFILE
from webapp.runs.upload_checks.language_checks import WorkerParsers

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
    timeout_seconds: float | None = None
    """The uploader's own CPU limit per program, an override of the profile's; None (the
    default) lets the profile decide, as the command line does."""

    def for_dataset(self, dataset: Dataset) -> EvaluationOptions:
        """These options with the profile named: the dataset's default when none was chosen.
        Raises ValueError, listing the profiles, for an unknown name."""
        profile = get_profile(self.profile) if self.profile else default_profile(dataset.name)
        return replace(self, profile=profile.name)

    def to_dict(self, *, language: str = "") -> dict[str, Any]:
        profile = get_profile(self.profile or LEGACY_PROFILE)
        # One rule with the command line (`run_time_limit`): the profile's limit unless the
        # uploader chose one, or the operator set one for every run on purpose.
        if self.timeout_seconds is not None:
            timeout, source = run_time_limit(profile, language, override=self.timeout_seconds)
        else:
            timeout, source = run_time_limit(profile, language,
                                             override=settings.EVALUATOR_TIMEOUT_SECONDS,
                                             override_source="server")
        return {
            # No sandbox here: the worker that runs the samples applies its own policy
            # (EVALUATOR_SANDBOX there), and each result records the backend it got.
            "sanitize": self.sanitize,
            "profile": profile.name,
            "profile_version": profile.version,
            "timeout_seconds": timeout,
            "limit_source": source,
            "memory_mb": settings.EVALUATOR_MEMORY_MB,
            "task": "generation",
            "tests": "hidden",
            "harness_version": HARNESS_VERSION,
        }


@dataclass(frozen=True)
class FileSummary:
    """What a read file held, without its samples (they went to the sink as they came)."""

    layout: str
    coverage: Coverage
    sanitized: int
    """Samples whose text sanitizing changed."""


@dataclass(frozen=True)
class UploadCheck(HasIssues[Issue]):
    """The verdict on one file: its issues, and what it holds when it is usable."""

    path: Path | None
    """The file checked; None for samples checked again from a staged run."""
    file_name: str
    sha256: str
    size: int
    dataset: Dataset
    options: dict[str, Any]
    issues: tuple[Issue, ...] = ()
    summary: FileSummary | None = None
    """Layout and coverage, once the file was read."""
    language: LanguageCheck | None = field(default=None, repr=False)
    """What the generations parse as (`evaluator.language_check`), once the file reads."""
    suggested: Dataset | None = None
    """The variant of the dataset in the language the generations look like, if stored."""

    @property
    def ok(self) -> bool:
        return self.summary is not None and not self.errors

    @property
    def only_language_mismatch(self) -> bool:
        """True when the file is sound but for looking like another language: then it
        may still go on, once the user confirms (`allow_language_mismatch`)."""
        return bool(self.errors) and all(i.code == "wrong_language" for i in self.errors)

    @property
    def fingerprint(self) -> str:
        return run_fingerprint(sha256=self.sha256, dataset=self.dataset, options=self.options)

    def coverage_dict(self) -> dict[str, Any]:
        if self.summary is None:
            return {}
        coverage = self.summary.coverage
        return {
            "tasks_total": coverage.tasks_total,
            "tasks_with_samples": coverage.tasks_with_samples,
            "missing_tasks": list(coverage.missing_tasks),
            "samples_total": coverage.samples_total,
            "min_n": coverage.min_n,
            "max_n": coverage.max_n,
            "max_k": coverage.max_k,
            "unequal_n": coverage.unequal_n,
            "layout": self.summary.layout,
            "sanitized": self.summary.sanitized,
            # Only with `allow_language_mismatch` does such a file get this far; the run is
            # then held off leaderboards until confirmed (`webapp.runs.reads.verified`).
            **({"language_mismatch": self.language.detected}
               if self.language is not None and not self.language.fits
               and self.language.detected else {}),
        }


class SampleSink(Protocol):
    """Where a checked file's samples go as they are read (`services.RunStager`)."""

    def begin(self, check: UploadCheck) -> None:
        """Called once, before the first sample, with what was known before reading."""

    def add(self, sample: Sample) -> None:
        """One sample, in the file's order. Only samples of a file without errors so far
        come here: once an error is found, the file will not be used."""


def has_accepted_suffix(name: str) -> bool:
    return name.lower().endswith(ACCEPTED_SUFFIXES)


def upload_check(
    *, path: Path, file_name: str, sha256: str, size: int, dataset: Dataset,
    options: EvaluationOptions, allow_language_mismatch: bool = False,
    sink: SampleSink | None = None,
) -> UploadCheck:
    """Read and check the file at `path` against `dataset`, handing each sample to `sink`
    as it is read. A file that is not a generation file at all is not read."""
    base = _base(path=path, file_name=file_name, sha256=sha256, size=size, dataset=dataset,
                 options=options)
    if not has_accepted_suffix(file_name):
        return _with(base, Issue(None, None, "bad_extension",
                                 f"{file_name!r} is not a .jsonl or .jsonl.gz file."))
    if size == 0:
        return _with(base, Issue(None, None, "empty_file", "The file is empty: it has no records."))
    problems = dataset_problems(dataset=dataset)
    reader = _reader(problems, sanitize=bool(base.options["sanitize"]))
    samples = reader.read(path, max_line_bytes=MAX_LINE_BYTES,
                          max_expanded_bytes=settings.UPLOAD_MAX_EXPANDED_BYTES)
    return _checked(base, problems, reader, samples, sink=sink,
                    allow_language_mismatch=allow_language_mismatch)


def upload_recheck(
    *, samples: Iterable[Sample], file_name: str, sha256: str, size: int, dataset: Dataset,
    options: EvaluationOptions, allow_language_mismatch: bool = False,
    sink: SampleSink | None = None,
) -> UploadCheck:
    """Check samples read from a file before (a staged run's) against another `dataset`:
    the variant the generations look like. Their ids are resolved again and their text
    sanitized again for its problems, as `upload_check` of the file would."""
    base = _base(path=None, file_name=file_name, sha256=sha256, size=size, dataset=dataset,
                 options=options)
    problems = dataset_problems(dataset=dataset)
    reader = _reader(problems, sanitize=bool(base.options["sanitize"]))
    return _checked(base, problems, reader, reader.reread(samples), sink=sink,
                    allow_language_mismatch=allow_language_mismatch)


def checked_samples(check: UploadCheck) -> Iterator[Sample]:
    """The samples of a checked file, read again as its check read them (for
    `services.run_create`, which stores a file checked without a sink)."""
    if check.path is None:
        raise ValueError("Only a check of a file can read it again.")
    reader = _reader(dataset_problems(dataset=check.dataset),
                     sanitize=bool(check.options["sanitize"]))
    yield from reader.read(check.path, max_line_bytes=MAX_LINE_BYTES,
                           max_expanded_bytes=settings.UPLOAD_MAX_EXPANDED_BYTES)


def upload_fingerprint(*, sha256: str, dataset: Dataset, options: EvaluationOptions) -> str:
    """The fingerprint a check of this file will have (`UploadCheck.fingerprint`), known
    before reading it."""
    resolved = options.for_dataset(dataset).to_dict(language=dataset.language)
    return run_fingerprint(sha256=sha256, dataset=dataset, options=resolved)


def run_fingerprint(*, sha256: str, dataset: Dataset, options: dict[str, Any]) -> str:
    """What finds a repeat: the file, the dataset and the options that decide verdicts."""
    body = json.dumps({"file": sha256, "dataset": dataset.pk, "options": options},
                      sort_keys=True)
    return hashlib.sha256(body.encode()).hexdigest()


def _base(*, path: Path | None, file_name: str, sha256: str, size: int, dataset: Dataset,
          options: EvaluationOptions) -> UploadCheck:
    options = options.for_dataset(dataset)
    return UploadCheck(path=path, file_name=file_name, sha256=sha256, size=size,
                       dataset=dataset, options=options.to_dict(language=dataset.language))


def _reader(problems: Mapping[str, Problem], *, sanitize: bool) -> SampleReader:
    return SampleReader(list(problems.values()), sanitize=sanitize,
                        max_samples_per_task=settings.UPLOAD_MAX_SAMPLES_PER_TASK)


def _checked(
    base: UploadCheck, problems: Mapping[str, Problem], reader: SampleReader,
    samples: Iterable[Sample], *, sink: SampleSink | None, allow_language_mismatch: bool,
) -> UploadCheck:
    spread = SampleSpread()
    unstorable: list[Issue] = []
    sanitized = 0
    begun = False
    for sample in samples:
        # PostgreSQL text cannot hold NUL characters, and no real program needs one.
        if "\x00" in sample.raw:
            if len(unstorable) < reader.max_issues:
                unstorable.append(Issue(
                    sample.line, None, "nul_character",
                    f"Line {sample.line} contains a NUL character (\\u0000), which cannot be "
                    "stored."))
            continue
        sanitized += sample.sanitized
        spread.offer(sample)
        if sink is not None and reader.ok and not unstorable:
            if not begun:
                sink.begin(base)
                begun = True
            sink.add(sample)
    issues = [Issue.of(issue) for issue in reader.issues] + unstorable
    coverage = reader.coverage()
    if reader.ok and not coverage.samples_total:
        issues.append(Issue(None, None, "empty_file", "The file holds no samples."))
    language = suggested = None
    dataset = base.dataset
    if not any(issue.severity == "error" for issue in issues):
        # Parsed by workers of each language, in their sandboxes: never here.
        language = check_language(problems, spread.samples, language=dataset.language,
                                  parse=WorkerParsers())
        suggested = _variant(dataset, language.detected) if language.detected else None
        issues.extend(_language_issues(language, dataset, suggested, allow_language_mismatch))
    else:
        issues = _with_foreign_ids_suggestion(issues, dataset, reader.foreign_language)
    return replace(base, issues=tuple(issues), language=language, suggested=suggested,
                   summary=FileSummary(layout=reader.layout or "unknown", coverage=coverage,
                                       sanitized=sanitized))


def _variant(dataset: Dataset, language: str) -> Dataset | None:
    """The stored dataset in `language` with the same problems as `dataset` (by their
    aligned `HumanEval/N` ids) in the same natural language, of any family: the same name
    and variant first, then the one that shares the most problems, then the newest."""
    problems = ProblemVariant.objects.filter(dataset=dataset).values("problem_id")
    return (Dataset.objects.filter(language=language,
                                   natural_language=dataset.natural_language)
            .exclude(pk=dataset.pk)
            .annotate(shared=Count("variants", filter=Q(variants__problem_id__in=problems)),
                      same_family=Case(When(name=dataset.name, variant=dataset.variant,
                                            then=Value(1)),
                                       default=Value(0), output_field=IntegerField()))
            .filter(shared__gt=0)
            .order_by("-same_family", "-shared", "-imported_at", "-pk").first())


def _with_foreign_ids_suggestion(issues: list[Issue], dataset: Dataset,
                                 language: str | None) -> list[Issue]:
    """The reader's one summary of task ids of another `language` (`CPP/N` against a
    Python dataset: `evaluator.samples`), naming the stored dataset they belong to."""
    if language is None:
        return issues
    variant = _variant(dataset, language)
    advice = (f" Upload the file against {variant.key} (dataset {variant.pk}), which holds "
              "these problems in that language." if variant is not None else
              f" No {display_name(language)} variant of these problems is stored here.")
    return [replace(issue, message=issue.message + advice)
            if issue.code == "language_mismatch" and issue.field in ("task_id", "qid")
            else issue for issue in issues]


def _language_issues(language: LanguageCheck, dataset: Dataset, suggested: Dataset | None,
                     allowed: bool) -> list[Issue]:
    not_done = language.unavailable.get(dataset.language)
    if language.checked == 0 and not_done:
        if not not_done.startswith("no "):
            not_done = (f"the {display_name(dataset.language)} language check is not done: "
                        f"{not_done}")
        return [Issue(None, None, "language_check_not_done",
                      f"{not_done[:1].upper()}{not_done[1:]}.", "warning")]
    if language.checked == 0 and language.undecided:
        return [Issue(None, None, "language_check_not_done",
                      f"The {display_name(dataset.language)} parser stopped at its limits on "
                      f"all {language.undecided} sampled completions: the language check is "
                      "not done.", "warning")]
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
    return replace(base, issues=(issue,))
