"""The shapes of the JSON API's requests and answers, from which django-ninja builds the
OpenAPI schema (`/api/openapi.json`).

The views still build their answers as plain dicts (`run_summary`, `duplicate_answer`...);
these models describe them for the schema, and `tests/webapp/runs/test_openapi.py` checks
real answers against it, so a field added to a view and not here fails a test only when it
breaks a declared type. Objects stay open (extra keys allowed) where a view may grow.
`RunPatch` is more than a description: it checks every edit of a run, the page's too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal, get_args

from django.core.exceptions import ValidationError
from ninja import Schema
from pydantic import AfterValidator, BeforeValidator, ConfigDict, Field
from pydantic import ValidationError as PydanticError
from pydantic_core import PydanticCustomError

from webapp.textfields import JSONText, NameText, SlugText, StoredJSONObject

Visibility = Literal["private", "team", "public"]


class Error(Schema):
    """Every refusal: a machine-readable `error` and a sentence for people."""

    error: str = Field(description="unauthorized, not_found, forbidden, invalid_request, "
                                   "invalid_file, duplicate.")
    message: str


class FileIssue(Schema):
    line: int | None = Field(description="1-based line of the file; null for the whole file.")
    column: int | None
    field: str | None
    code: str
    message: str
    severity: str = Field(description="error or warning.")


class InvalidFile(Error):
    issues: list[FileIssue]


class InvalidRequest(Error):
    fields: dict[str, Any] = Field(description="The invalid fields and what is wrong with each.")


class Coverage(Schema):
    tasks_total: int
    tasks_with_samples: int
    missing_tasks: list[str]
    samples_total: int
    min_n: int
    max_n: int
    max_k: int
    unequal_n: bool
    layout: str
    sanitized: int
    language_mismatch: str | None = Field(None, description="The language the generations "
                                          "parse as, when it is not the dataset's and the "
                                          "upload allowed it.")


class RunUpload(Schema):
    """`POST /api/runs`, as `multipart/form-data`."""

    model_config = ConfigDict(json_schema_extra={"examples": [
        {"file": "@samples.jsonl", "dataset": "humaneval/python/en", "model_name": "my-model"}]})

    file: bytes = Field(json_schema_extra={"format": "binary"},
                        description="JSON Lines, plain (.jsonl) or gzip-compressed (.jsonl.gz).")
    dataset: NameText = Field(description="Dataset id; or key, such as "
                                          "humaneval/python/en (its newest version); or "
                                          "key@version.")
    name: NameText = Field("", description="The run's name; the file's name if empty.")
    model_name: NameText = ""
    model_meta: JSONText = Field("", description='A JSON object, like {"temperature": 0.8}.')
    team: SlugText = Field("", description="Slug of one of the caller's teams; the "
                                           "caller's personal team if empty.")
    visibility: Visibility = "team"
    profile: SlugText = Field("", description="Harness profile; the dataset's reference "
                                              "harness if empty (see /profiles/).")
    timeout_seconds: float | None = Field(
        None, description="CPU seconds per program: an override of the profile's own limit, "
                          "recorded as such (the run is then not verified); empty for the "
                          "profile's limit, as the command line uses.")
    sanitize: bool = Field(False, description="Clean up raw model output. Left out: what "
                                              "the dataset's reference harness does (off "
                                              "for every dataset today).")
    allow_language_mismatch: bool = Field(
        False, description="Evaluate even if the generations parse as another language; "
                           "such a run stays off leaderboards until its owner confirms it.")
    dry_run: bool = Field(False, description="Check the file and answer its coverage; "
                                             "create nothing.")


class DryRun(Schema):
    coverage: Coverage
    warnings: list[FileIssue]
    profile: str


class RunCreated(Schema):
    id: int
    url: str = Field(description="The run's page.")
    api_url: str
    websocket: str = Field(description="Live events, for a signed-in browser session.")
    status: str
    coverage: Coverage
    warnings: list[FileIssue]
    profile: str


class DuplicateRun(Schema):
    id: int
    name: str
    url: str
    api_url: str
    team: str
    visibility: Visibility


class Duplicate(Error):
    run: DuplicateRun
    requested: dict[str, str]
    can_edit: bool
    edit: dict[str, Any] | None = Field(None, description="How to share or move the run "
                                                          "instead, when the caller may.")


class PassAtK(Schema):
    k: int
    value: float
    low: float = Field(description="Lower end of the 95% bootstrap interval over problems.")
    high: float


class Progress(Schema):
    done: int
    total: int
    by_status: dict[str, int]


class DatasetRef(Schema):
    id: int
    key: str
    version: str


class ProblemScore(Schema):
    task_id: str
    n: int
    c: int
    counts: dict[str, int]
    pass_at_k: dict[str, float]
    intervals: dict[str, Any]
    top_failure: str


class RunSummary(Schema):
    id: int
    url: str
    name: str
    model: str
    model_meta: dict[str, Any]
    status: Literal["queued", "running", "aggregating", "paused", "finished", "failed",
                    "cancelled"]
    error: str
    visibility: Visibility
    team: str
    on_leaderboards: bool
    verified: dict[str, Any] = Field(description="Whether the run counts as verified, and "
                                                 "which conditions it fails (see the API page).")
    owner: str
    dataset: DatasetRef
    file: dict[str, Any]
    options: dict[str, Any]
    sandbox: str
    harness_version: str
    coverage: dict[str, Any]
    progress: Progress
    unstable: int
    created_at: str
    started_at: str | None
    finished_at: str | None
    pass_at_k: list[PassAtK]
    pass_hat_k: list[PassAtK] = Field(description="pass^k: the chance that all k of k "
                                      "samples pass, C(c,k)/C(n,k), for k = 1..min n, with "
                                      "the same bootstrap intervals as pass_at_k.")
    profile: dict[str, Any]
    profile_comparison: dict[str, Any] | None
    problems: list[ProblemScore] | None = Field(None, description="Absent with ?problems=0.")


NOT_AN_OBJECT = 'Give a JSON object, like {"temperature": 0.8}.'


def _trimmed(value: object) -> object:
    # As the edit page's fields always were; what is not text is left for the type check.
    return value.strip() if isinstance(value, str) else value


def _named(value: str) -> str:
    if not value:
        raise PydanticCustomError("name_required", "A run needs a name.")
    return value


def _json_object(value: object) -> object:
    if not isinstance(value, dict):
        raise PydanticCustomError("not_an_object", NOT_AN_OBJECT)
    return value


# An edit's fields: Annotated applies them in turn, so the text is trimmed before its
# length is counted, as a form counts it.
EditedName = Annotated[NameText, BeforeValidator(_trimmed), AfterValidator(_named)]
EditedModel = Annotated[NameText, BeforeValidator(_trimmed)]
EditedTeam = Annotated[SlugText, BeforeValidator(_trimmed)]
EditedMeta = Annotated[StoredJSONObject, BeforeValidator(_json_object)]


# The one declaration of what an edit may hold, for the API and the edit page alike
# (`run_patch_checked`); whether the editor may join the new team is `run_update`'s to say.
class RunPatch(Schema):
    """`PATCH /api/runs/<id>`: any of these; the others stay as they are. The endpoint
    validates its body with this model, and the run's edit page its fields, so what it
    says here is what both check."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [
        {"visibility": "public", "team": "my-lab"}]})

    visibility: Visibility | None = None
    team: EditedTeam | None = Field(None, description="The new team's slug; you must be a "
                                                      "member.")
    name: EditedName | None = None
    model: EditedModel | None = None
    model_meta: EditedMeta | None = None


EDIT_MESSAGES = {
    "string_too_long": "At most {max_length} characters.",
    "literal_error": f"Choose one of {', '.join(get_args(Visibility))}.",
    "extra_forbidden": "Not a field that can be changed.",
}
"""Pydantic's own refusals of an edit, by type, in the words of the project's messages
(templates over the error's context); the validators above speak for themselves, and a
wrong type (which only the API can send) keeps pydantic's words."""


def run_patch_checked(values: Mapping[str, object]) -> RunPatch:
    """`values` as `RunPatch` holds them, or a `ValidationError` that names everything
    wrong, by field: the API answers it, the edit page shows it beside its fields."""
    try:
        return RunPatch.model_validate(values, strict=True)
    except PydanticError as exc:
        wrong: dict[str, list[str]] = {}
        for error in exc.errors():
            template = EDIT_MESSAGES.get(error["type"])
            message = template.format(**error.get("ctx", {})) if template else error["msg"]
            wrong.setdefault(str(error["loc"][0]) if error["loc"] else "", []).append(message)
        raise ValidationError(wrong) from None


class Change(Schema):
    field: str
    before: str
    after: str
    by: str
    at: str


class RunUpdated(Schema):
    run: RunSummary
    changes: list[Change]


class RunDeleted(Schema):
    id: int
    deleted: Literal[True]
    restorable_until: str | None
    restore_url: str


class RunRestored(Schema):
    id: int
    deleted: Literal[False]
    api_url: str


class RunStatus(Schema):
    id: int
    status: str


class Listing(Schema):
    """`POST /api/runs/<id>/leaderboards`."""

    model_config = ConfigDict(json_schema_extra={"examples": [{"listed": False}]})

    listed: bool = Field(description="false retracts the run from the leaderboards, true puts "
                                     "it back.")
    confirm: bool = Field(False, description="Needed to list a run held back for review "
                                             "(mostly compile errors, or another language).")


class Listed(Schema):
    id: int
    on_leaderboards: bool
    verified: dict[str, Any]


class RunChanges(Schema):
    id: int
    changes: list[Change]


class DatasetItem(Schema):
    id: int
    key: str
    name: str
    variant: str
    language: str
    natural_language: str
    version: str
    problems: int


class DatasetList(Schema):
    datasets: list[DatasetItem]


class PlusDataset(Schema):
    id: int
    key: str


class PlusScore(Schema):
    k: int
    base: PassAtK = Field(description="EvalPlus's base: the plus run's samples on the plus "
                                      "set's base inputs (see the pair's `base_source`).")
    plus: PassAtK
    original: PassAtK = Field(description="The base run's pass@k on its dataset's own "
                                          "tests (HumanEval's check).")
    drop: float = Field(description="Base minus plus pass@k.")


class PlusPair(Schema):
    base_run: int
    plus_run: int
    plus_status: str
    plus_dataset: str
    problems: int = Field(description="Problems both runs scored: the scores are over these.")
    problems_without_plus_tests: int
    base_source: Literal["plus_base_inputs", "original_tests"] = Field(
        description="Where each score's base comes from: plus_base_inputs (EvalPlus's), or "
                    "original_tests for a plus run scored before its base counts were kept.")
    scores: list[PlusScore] = Field(description="Empty until the plus run has finished.")


class PlusScores(Schema):
    id: int
    plus_datasets: list[PlusDataset] = Field(
        description="The imported plus test sets this run can be scored on.")
    pairs: list[PlusPair]
