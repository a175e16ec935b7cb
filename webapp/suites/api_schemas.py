"""The shapes of the suite API's requests and answers, for the OpenAPI schema.

As in `webapp.runs.domain.schemas`, the views build their answers as dicts (`suite_summary`,
`FileOutcome.to_dict`); these models describe them, and `tests/webapp/runs/test_openapi.py`
checks real answers against the schema. Refusals share the runs API's shapes.
"""

from __future__ import annotations

from typing import Any, Literal

from ninja import Schema
from pydantic import ConfigDict, Field

from webapp.runs.domain.schemas import Error, FileIssue, Visibility
from webapp.textfields import JSONText, LongText, NameText, SlugText


class SuiteCreate(Schema):
    """`POST /api/suites`, as form fields (`multipart/form-data`)."""

    model_config = ConfigDict(json_schema_extra={"examples": [
        {"model_name": "my-model-7b", "revision": "r1", "decoding": '{"temperature": 0.2}'}]})

    model_name: NameText = Field(description="The model every run of the suite comes from.")
    name: NameText = Field("", description="The suite's name; the model's name if empty.")
    revision: NameText = Field("", description="The model's checkpoint, commit or "
                                               "release.")
    decoding: JSONText = Field("", description='A JSON object, like {"temperature": 0.2, '
                                               '"n": 20}.')
    description: LongText = ""
    team: SlugText = Field("", description="Slug of one of the caller's teams; the "
                                           "caller's personal team if empty.")
    visibility: Visibility = Field("team", description="Runs uploaded into the suite get the "
                                                       "suite's team and visibility.")


class SuiteRunsUpload(Schema):
    """`POST /api/suites/<id>/runs`, as `multipart/form-data`: files with their datasets, or
    the ids of runs that already exist, not both."""

    model_config = ConfigDict(json_schema_extra={"examples": [
        {"file": "@en.jsonl", "dataset": "humaneval/python/en"}]})

    file: list[bytes] = Field(
        default_factory=list, json_schema_extra={"items": {"type": "string",
                                                           "format": "binary"}},
        description="Repeated: JSON Lines files, plain or gzip-compressed.")
    dataset: list[NameText] = Field(default_factory=list, description="Repeated: the dataset "
                                    "of each file (key or id), in the files' order.")
    run: list[int] = Field(default_factory=list, description="Repeated: ids of existing runs "
                                                             "to add instead of files.")
    profile: SlugText = Field("", description="Harness profile for every file; each "
                                              "dataset's reference harness if empty.")
    sanitize: bool = Field(False, description="Clean up raw model output; each dataset's "
                                              "reference harness decides if left out.")
    allow_language_mismatch: bool = Field(
        False, description="Evaluate a file even when most of its sampled completions parse "
                           "as another programming language than its dataset's.")
    dry_run: bool = Field(False, description="Check the files and answer their coverage; "
                                             "create nothing.")
    confirm_variants: bool = Field(
        False, description="Keep each file's `dataset` even when the file's first records "
                           "(task ids, layout, code language, prompt language) point to "
                           "another stored dataset; without it such a file is refused with "
                           "the issue code `variant_mismatch`.")


class Interval(Schema):
    value: float
    low: float = Field(description="Lower end of the 95% bootstrap interval over problems.")
    high: float


class SuiteRun(Schema):
    id: int
    url: str
    api_url: str
    dataset: str
    status: str
    pass_at_1: Interval | None = Field(description="Null until the run has finished.")


class SuiteSummary(Schema):
    id: int
    url: str = Field(description="The suite's page.")
    name: str
    model: str
    revision: str
    decoding: dict[str, Any]
    visibility: Visibility
    team: str
    owner: str
    runs: list[SuiteRun] = Field(description="The suite's runs the caller may see.")


class CreatedRun(Schema):
    id: int
    url: str
    api_url: str
    status: str


class FileOutcome(Schema):
    file: str
    dataset: str
    ok: bool
    issues: list[FileIssue]
    warnings: list[FileIssue]
    coverage: dict[str, Any] = Field(description="As `coverage` of `POST /api/runs`; empty "
                                                 "when the file cannot be read.")
    duplicate_of: int | None = Field(description="The run this file was already evaluated "
                                                 "as; it is added to the suite instead.")
    run: CreatedRun | None


class SuiteUploaded(Schema):
    suite: int
    created: bool = Field(description="false for a dry run.")
    errors: list[str]
    files: list[FileOutcome]


class SuiteUploadRefused(Error):
    suite: int
    created: Literal[False]
    errors: list[str] = Field(description="Problems of the upload as a whole.")
    files: list[FileOutcome]
