"""A finished sample whose full result was not stored (its `result` is null) still reads as
what its row says: for the run page's log and for re-judging the run under a profile."""

from __future__ import annotations

from evaluator.records import SampleResult
from webapp.benchmarks.selectors import dataset_problems
from webapp.runs.models import Sample
from webapp.runs.reads.selectors import sample_result
from webapp.runs.worker.execution import sample_record_result
from webapp.runs.worker.profile_comparison import _stored_results


def _finished_without_result(run_id: int) -> Sample:
    sample = Sample.objects.filter(run_id=run_id).order_by("position").first()
    assert sample is not None
    sample_record_result(run_id=run_id, sample_id=sample.pk, result=SampleResult(
        task_id=sample.task_id, completion_id=sample.index, status="failed",
        program_hash="f" * 64, message="wrong answer"))
    Sample.objects.filter(pk=sample.pk).update(result=None)
    sample.refresh_from_db()
    return sample


def test_the_log_reads_a_sample_from_its_row(unstarted_run):
    sample = _finished_without_result(unstarted_run("no result").pk)
    result = sample_result(sample)
    assert (result.task_id, result.completion_id, result.status, result.program_hash,
            result.message) == (sample.task_id, sample.index, "failed", "f" * 64,
                                "wrong answer")


def test_rescoring_reads_a_sample_from_its_row(unstarted_run):
    run = unstarted_run("no result")
    sample = _finished_without_result(run.pk)
    _, results = _stored_results(run=run, problems=dataset_problems(dataset=run.dataset))
    (result,) = results
    assert (result.task_id, result.status, result.program_hash, result.message) == (
        sample.task_id, "failed", "f" * 64, "wrong answer")
