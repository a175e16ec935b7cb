"""One mapping between the evaluator's records and what the database keeps of them
(`webapp.runs.domain.sample_rows`): a sample written as a row reads back as the same sample, a
result stored as JSON reads back as the same result, and a result stored by an older
version reads with the defaults of the fields it lacks."""

from __future__ import annotations

import json

import pytest

from evaluator.records import Sample as EvaluatorSample
from evaluator.records import SampleResult, SandboxInfo
from evaluator.records import TestOutcome as Outcome
from tests.webapp.factories import RunFactory
from webapp.benchmarks.models import Dataset
from webapp.benchmarks.selectors import problem_variant_ids
from webapp.runs.domain.sample_rows import (
    SAMPLE_COLUMNS,
    UPLOADED_COLUMNS,
    new_sample_row,
    result_from_json,
    result_json,
    result_lookup,
    stored_result,
    stored_sample,
    stored_tests,
    uploaded_sample,
)
from webapp.runs.models import Chunk, Run, Sample
from webapp.runs.services.writes import _insert_samples, run_copy

FULL_PROGRAM = '''import math


def has_close_elements(numbers: list[float], threshold: float) -> bool:
    """Tabs\tand a form feed\x0c stay as they are."""
    return any(math.isclose(a, b, abs_tol=threshold)
               for i, a in enumerate(numbers) for b in numbers[i + 1:])


if __name__ == "__main__":
    print(has_close_elements([1.0, 2.0], 0.5))
'''

SAMPLES = [
    EvaluatorSample(task_id="HumanEval/0", index=0, raw="    return True\n",
                    completion="    return True\n", line=1, layout="solution",
                    source_task_id="HumanEval/0"),
    # Right-to-left overrides and isolates, Arabic digits, an emoji outside the BMP, the
    # Unicode line and paragraph separators, a combining accent, CJK.
    EvaluatorSample(task_id="HumanEval/0", index=1,
                    raw="```python\n    return '\u202e\u2066\u0661\u0662\u2069\u202c'\n```",
                    completion="    return '\u202e\u2066\u0661\u0662\u2069\u202c'\n", line=2,
                    layout="solution", sanitized=True,
                    notes=("removed markdown fence", "\U0001F600 \u2028\u2029 e\u0301 \u6f22"),
                    source_task_id=" Python/012\t"),
    EvaluatorSample(task_id="HumanEval/1", index=0, raw=FULL_PROGRAM, completion=FULL_PROGRAM,
                    line=3, layout="solution", is_full_program=True,
                    source_task_id="HumanEval_1_separate_paren_groups"),
]

RESULT = SampleResult(
    task_id="HumanEval/0", completion_id=3, status="failed", program_hash="ab" * 32,
    tests=(
        Outcome(index=0, source="assert f([1.0]) == False", status="passed",
                    duration_ms=0.25, line=4, group="base"),
        Outcome(index=1, source="f([1.0, 1.05], 0.1)", status="failed", expected="True",
                    actual="False", error_type="AssertionError", message="\u0627\u062e\u062a",
                    duration_ms=1.5, line=None, group="plus"),
        Outcome(index=2, source="f([])", status="not_run"),
    ),
    error_type="AssertionError", message="1 of 3 tests failed", traceback="Traceback ...",
    stdout="\U0001F600\n", stderr="", compile_ms=0.0, run_ms=12.5,
    sandbox=SandboxInfo(backend="bwrap", limits={"cpu_seconds": 3.0, "memory_mb": 512},
                        level="standard", chosen="auto: gVisor is not installed"),
    dataset_version="v1", language="python", suspicious=("no test assertion ran",),
    cached=True, test_set="hidden", task_kind="generation", patched=True,
    raw_status="error", profile="evalplus", facts={"exit": 1, "cpu": [0.5, 0.25]},
    attempts=2, unstable=True, first_status="timeout",
)


@pytest.fixture
def run(personas, humaneval: Dataset) -> Run:
    return RunFactory.create(owner=personas.owner, team=personas.team, dataset=humaneval,
                             file_layout="solution")


def store(run: Run, samples: list[EvaluatorSample]) -> None:
    chunk = Chunk.objects.create(run=run, index=0, language="python",
                                 sample_count=len(samples))
    variants = problem_variant_ids(dataset_id=run.dataset_id)
    _insert_samples([new_sample_row(sample, run_id=run.pk, chunk_id=chunk.pk,
                                    variant_id=variants[sample.task_id], position=position)
                     for position, sample in enumerate(samples)])


def read_back(run: Run) -> list[EvaluatorSample]:
    rows = Sample.objects.filter(run=run).order_by("position").values_list(*SAMPLE_COLUMNS)
    return [stored_sample(values, layout=run.file_layout) for values in rows]


def test_a_sample_reads_back_from_its_row_as_it_was_written(run):
    store(run, SAMPLES)
    assert read_back(run) == SAMPLES


def test_a_sample_not_read_from_a_file_is_stored_under_its_aligned_id(run):
    store(run, [EvaluatorSample(task_id="HumanEval/2", index=0, raw="x", completion="x")])
    [sample] = read_back(run)
    assert (sample.source_task_id, sample.given_task_id) == ("HumanEval/2", "HumanEval/2")


def test_a_copied_run_stores_the_same_samples(run, django_capture_on_commit_callbacks):
    store(run, SAMPLES)
    with django_capture_on_commit_callbacks(execute=False):
        copy = run_copy(owner=run.owner, run=run, use_cache=True)
    assert copy.pk != run.pk
    assert read_back(copy) == SAMPLES
    assert list(Sample.objects.filter(run=copy).order_by("position")
                .values_list("position", "status", "result")) == [
        (0, "pending", None), (1, "pending", None), (2, "pending", None)]


def test_a_staged_sample_reads_back_as_its_file_gave_it(run):
    store(run, SAMPLES)
    rows = Sample.objects.filter(run=run).order_by("position").values_list(*UPLOADED_COLUMNS)
    uploaded = [uploaded_sample(values, layout=run.file_layout) for values in rows]
    assert [sample.completion for sample in uploaded] == [sample.raw for sample in SAMPLES]
    assert not any(sample.sanitized or sample.notes for sample in uploaded)
    assert [sample.source_task_id for sample in uploaded] == [
        sample.source_task_id for sample in SAMPLES]


def test_a_result_reads_back_from_its_json_as_it_was_stored():
    assert result_from_json(json.loads(json.dumps(result_json(RESULT)))) == RESULT


def test_a_result_reads_back_from_the_database_as_it_was_stored(run):
    store(run, SAMPLES[:1])
    Sample.objects.filter(run=run).update(status=RESULT.status, result=result_json(RESULT))
    sample = Sample.objects.get(run=run)
    assert stored_result(stored=sample.result, task_id=sample.task_id, index=sample.index,
                         status=sample.status) == RESULT
    assert stored_tests(sample.result) == RESULT.tests


def test_a_result_stored_before_newer_fields_reads_with_their_defaults():
    old = {"task_id": "HumanEval/0", "completion_id": 0, "status": "timeout",
           "program_hash": "cd" * 32, "passed": False, "result": "timed out",
           "retired_field": "no field has this name any more",
           "sandbox": {"backend": "runsc", "limits": {"wall_seconds": 10}},
           "tests": [{"index": 0, "source": "assert f(1) == 2", "status": "timeout"}]}
    result = result_from_json(old)
    assert (result.attempts, result.unstable, result.first_status, result.raw_status) == (
        1, False, None, None)
    assert (result.profile, result.facts, result.suspicious, result.cached) == (
        "strict", {}, (), False)
    assert result.sandbox == SandboxInfo(backend="runsc", limits={"wall_seconds": 10})
    assert result.tests == (Outcome(index=0, source="assert f(1) == 2", status="timeout"),)
    assert (result.tests[0].group, result.tests[0].duration_ms) == ("", 0.0)


def test_a_sample_without_a_kept_result_reads_as_an_empty_one_of_its_status():
    result = stored_result(stored=None, task_id="HumanEval/5", index=2, status="error",
                           program_hash="ef" * 32, message="killed")
    assert (result.task_id, result.completion_id, result.status, result.program_hash,
            result.message, result.tests) == ("HumanEval/5", 2, "error", "ef" * 32, "killed",
                                              ())
    assert stored_tests(None) == stored_tests({}) == ()


def test_nul_characters_are_replaced_before_a_result_is_stored():
    stored = result_json(SampleResult(task_id="HumanEval/0", completion_id=0, status="failed",
                                      program_hash="", stdout="a\x00b",
                                      tests=(Outcome(index=0, source="x", status="failed",
                                                         actual="\x00"),)))
    assert stored["stdout"] == "a\ufffdb"
    assert stored["tests"][0]["actual"] == "\ufffd"


def test_a_lookup_into_the_stored_result_finds_the_samples_it_names(run):
    store(run, SAMPLES)
    first, *others = Sample.objects.filter(run=run).order_by("position")
    Sample.objects.filter(pk=first.pk).update(status="failed", result=result_json(RESULT))
    Sample.objects.filter(pk__in=[sample.pk for sample in others]).update(
        status="passed", result=result_json(SampleResult(
            task_id="HumanEval/1", completion_id=0, status="passed", program_hash="")))
    unstable = Sample.objects.filter(run=run, **{result_lookup("unstable"): True})
    assert list(unstable.values_list("pk", flat=True)) == [first.pk]
