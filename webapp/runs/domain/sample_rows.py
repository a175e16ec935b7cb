"""A sample as the database keeps it: the `Sample` row of an evaluator `records.Sample`,
and the JSON of its `records.SampleResult`.

Every write of a new sample (an upload's, a copied run's) and every read of one for the
evaluator (a chunk's job, a rescoring, a staged upload checked again) goes through here,
as does every read of a stored result: the rest of the app handles records, not rows and
JSON keys.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, cast

from evaluator.records import Sample as EvaluatorSample
from evaluator.records import SampleResult, Status, TestOutcome

NEW_SAMPLE_COLUMNS = ("run_id", "chunk_id", "variant_id", "task_id", "source_task_id", "index",
                      "position", "line", "raw", "completion", "sanitized", "notes",
                      "is_full_program")
"""The columns (attnames) a new `Sample` row is given; the others take their defaults (a
pending sample)."""

NewSampleRow = tuple[int, int, int, str, str, int, int, int, str, str, bool, list[str], bool]
"""A new row's values, in `NEW_SAMPLE_COLUMNS`' order. A tuple, not a model object: an
insert of many samples builds no object per sample (`services._insert_samples`)."""


def new_sample_row(sample: EvaluatorSample, *, run_id: int, chunk_id: int, variant_id: int,
                   position: int) -> NewSampleRow:
    """The row that stores `sample` as the `position`-th sample of a run, in a chunk."""
    # What the user's file wrote is what results give back: a sample not read from a file
    # has no id of its own, and stands under its aligned one.
    return (run_id, chunk_id, variant_id, sample.task_id, sample.given_task_id, sample.index,
            position, sample.line, sample.raw, sample.completion, sample.sanitized,
            list(sample.notes), sample.is_full_program)


SAMPLE_COLUMNS = ("task_id", "source_task_id", "index", "line", "raw", "completion",
                  "sanitized", "notes", "is_full_program")
"""The columns that hold a `records.Sample`, in the order `stored_sample` takes them."""

StoredSampleValues = tuple[str, str, int, int, str, str, bool, list[str], bool]
"""A row's `SAMPLE_COLUMNS`, as `values_list(*SAMPLE_COLUMNS)` gives them."""


def stored_sample(values: StoredSampleValues, *,
                  layout: str = "completion") -> EvaluatorSample:
    """The sample a row of `SAMPLE_COLUMNS` stores. The layout is the run's
    (`Run.file_layout`), not the row's: the evaluator judges a sample without it."""
    task_id, source_task_id, index, line, raw, completion, sanitized, notes, full = values
    return EvaluatorSample(task_id=task_id, index=index, raw=raw, completion=completion,
                           line=line, layout=layout, is_full_program=full,
                           sanitized=sanitized, notes=tuple(notes),
                           source_task_id=source_task_id)


UPLOADED_COLUMNS = ("task_id", "source_task_id", "index", "line", "raw", "is_full_program")
"""The columns that hold a sample as its file gave it, before any sanitizing."""

UploadedSampleValues = tuple[str, str, int, int, str, bool]


def uploaded_sample(values: UploadedSampleValues, *, layout: str) -> EvaluatorSample:
    """The sample a row of `UPLOADED_COLUMNS` stores, as read before sanitizing: its text
    is the file's (what a new check of a staged upload sanitizes for its own problems)."""
    task_id, source_task_id, index, line, raw, full = values
    return EvaluatorSample(task_id=task_id, index=index, raw=raw, completion=raw, line=line,
                           layout=layout, is_full_program=full,
                           source_task_id=source_task_id)


def storable(value: Any) -> Any:
    """`value` with NUL characters replaced: PostgreSQL text and JSON cannot hold them, and a
    program's output may contain anything."""
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd")
    if isinstance(value, dict):
        return {key: storable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [storable(item) for item in value]
    return value


def result_json(result: SampleResult) -> dict[str, Any]:
    """The JSON a result is stored as (`Sample.result`, `CachedResult.result`)."""
    return cast(dict[str, Any], storable(result.to_dict()))


def result_from_json(stored: Mapping[str, Any]) -> SampleResult:
    """The result stored as `stored`; a key a result stored by an older version lacks
    takes its field's default, a key no field has any more is passed over."""
    return SampleResult.from_dict(dict(stored))


def stored_result(*, stored: Mapping[str, Any] | None, task_id: str, index: int, status: str,
                  program_hash: str = "", message: str = "") -> SampleResult:
    """A finished sample's result, from its row: the stored JSON, or, when none was kept,
    an empty result of the row's status."""
    if stored:
        return result_from_json(stored)
    # A finished sample's status is one of STATUSES (only a pending one is not).
    return SampleResult(task_id=task_id, completion_id=index, status=cast(Status, status),
                        program_hash=program_hash, message=message)


def stored_tests(stored: Mapping[str, Any] | None) -> tuple[TestOutcome, ...]:
    """The per-test outcomes of a stored result; none when no result was kept."""
    return result_from_json(stored).tests if stored else ()


ResultKey = Literal["raw_status", "first_status", "unstable", "suspicious", "sandbox"]
"""The result's fields that queries look into."""


def result_lookup(key: ResultKey) -> str:
    """The ORM path of a field inside the stored result (`result__unstable`), for the
    queries that filter or count on it in the database instead of reading every result."""
    if key not in SampleResult.__dataclass_fields__:
        raise ValueError(f"SampleResult has no field {key!r}")
    return f"result__{key}"
