"""A finished run's pass^k, failure breakdown, unstable count and the verified check's counts
are stored when it is scored (issue 26): read without a bootstrap or a scan of its samples,
the same figures as computing them gives, and scored again with the run, never left from
before."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from evaluator.records import SampleResult, Status
from tests.webapp.large_run import large_run_create
from tests.webapp.support import client_for
from webapp.benchmarks.models import Dataset
from webapp.runs.models import Run, RunDigest, Sample
from webapp.runs.reads import selectors
from webapp.runs.reads.reports import counted_failures, run_failure_breakdown
from webapp.runs.reads.selectors import (
    computed_pass_hat_k,
    counted_unstable_samples,
    run_pass_hat_k,
    run_unstable_count,
)
from webapp.runs.worker.aggregation import _score, run_finalize

PER_TASK = 12


def vary(run: Run, *, shift: int) -> None:
    """Give each problem its own n (5 to 12) and some samples a verdict and error type of
    their own, some of them unstable; `shift` picks another pattern."""
    samples = list(Sample.objects.filter(run=run).only("pk", "task_id", "index"))
    dropped, changed = [], []
    for sample in samples:
        task = int(sample.task_id.rsplit("/", 1)[1])
        if sample.index >= 5 + (task * 5 + shift) % 8:
            dropped.append(sample.pk)
            continue
        turn = (task * 3 + sample.index + shift) % 13
        status: Status
        if turn == 0:
            status, error_type = "timeout", ""
        elif turn == 1:
            status, error_type = "error", f"Error{shift % 3}"
        elif turn == 2:
            status, error_type = "passed", ""
        else:
            continue
        sample.status, sample.error_type = status, error_type
        sample.result = (SampleResult(task_id=sample.task_id, completion_id=sample.index,
                                      status=status, program_hash="", unstable=True).to_dict()
                         if turn != 1 else None)
        changed.append(sample)
    Sample.objects.filter(pk__in=dropped).delete()
    Sample.objects.bulk_update(changed, ["status", "error_type", "result"])


@pytest.fixture
def varied_run(personas, humaneval: Dataset) -> Run:
    """Every HumanEval problem, with varied n, c, failures and unstable samples, scored."""
    run = large_run_create(owner=personas.owner, team=personas.team, dataset=humaneval,
                           per_task=PER_TASK, name="varied")
    vary(run, shift=0)
    _score(run_id=run.pk)
    run.refresh_from_db()
    return run


def figures(run: Run) -> dict[str, Any]:
    return {"pass_hat_k": run_pass_hat_k(run=run, ks=None),
            "failures": [(bar.status, bar.error_type, bar.count, bar.url)
                         for bar in run_failure_breakdown(run=run)],
            "unstable": run_unstable_count(run=run)}


def computed(run: Run) -> dict[str, Any]:
    """The figures as every read computed them before they were stored."""
    bars = run_failure_breakdown(run=run, up_to_seq=10**9)  # a bound: always counted
    return {"pass_hat_k": computed_pass_hat_k(run=run, ks=None),
            "failures": [(bar.status, bar.error_type, bar.count, bar.url) for bar in bars],
            "unstable": counted_unstable_samples(run=run)}


def test_stored_figures_are_the_computed_ones_to_the_last_digit(varied_run):
    run = varied_run
    assert RunDigest.objects.filter(run=run).exists()
    stored, expected = figures(run), computed(run)
    assert stored == expected
    # A run that tells something: n from 5 up, pass^k falling with k, several failure
    # kinds, some samples unstable.
    assert [point["k"] for point in stored["pass_hat_k"]] == [1, 2, 3, 4, 5]
    values = [point["value"] for point in stored["pass_hat_k"]]
    assert values == sorted(values, reverse=True)
    assert values[0] > values[-1] > 0
    assert len(stored["failures"]) >= 5
    assert [bar[:3] for bar in stored["failures"]] == counted_failures(run=run)
    assert stored["unstable"] == Sample.objects.filter(
        run=run, result__unstable=True).count() > 0


def test_a_finished_run_is_read_without_a_bootstrap_or_its_samples(varied_run, monkeypatch):
    def no_bootstrap(*args: object, **kwargs: object) -> None:
        raise AssertionError("pass^k bootstrapped on a read")

    monkeypatch.setattr(selectors, "curve_points", no_bootstrap)
    with CaptureQueriesContext(connection) as queries:
        figures(varied_run)
    assert len(queries) == 3
    assert not [q["sql"] for q in queries if "runs_sample" in q["sql"]]


def test_the_api_and_the_run_page_show_the_stored_figures(personas, varied_run):
    expected = computed(varied_run)
    summary = client_for(personas.owner).get(f"/api/runs/{varied_run.pk}").json()
    assert summary["pass_hat_k"] == expected["pass_hat_k"]
    assert summary["unstable"] == expected["unstable"]
    body = client_for(personas.owner).get(f"/runs/{varied_run.pk}/").content.decode()
    for status, error_type, count, _url in expected["failures"][:3]:
        assert f'"status": "{status}", "error_type": "{error_type}"' in body
        assert f'"count": {count}' in body


def test_scoring_the_run_again_replaces_the_stored_figures(varied_run):
    """A cancelled run resumed, or a paused one retried, is scored again when its chunks
    are done: its digest must follow its samples, not keep the first scoring's."""
    run = varied_run
    before = figures(run)
    vary(run, shift=5)
    Run.objects.filter(pk=run.pk).update(status=Run.Status.RUNNING)
    assert run_finalize(run_id=run.pk)
    run.refresh_from_db()
    assert run.status == Run.Status.FINISHED
    assert RunDigest.objects.filter(run=run).count() == 1
    after = figures(run)
    assert after == computed(run)
    for figure in ("pass_hat_k", "failures", "unstable"):
        assert after[figure] != before[figure], figure


def test_a_run_still_going_counts_its_samples(varied_run):
    run = varied_run
    vary(run, shift=5)  # after the scores: the digest is now behind the samples
    Run.objects.filter(pk=run.pk).update(status=Run.Status.RUNNING)
    run.refresh_from_db()
    digest = RunDigest.objects.get(run=run)
    unstable = run_unstable_count(run=run)
    assert unstable == counted_unstable_samples(run=run) != digest.unstable
    bars = [(bar.status, bar.error_type, bar.count) for bar in run_failure_breakdown(run=run)]
    assert bars == counted_failures(run=run) != [tuple(row) for row in digest.failures]


def test_a_run_scored_before_the_digest_existed_computes_its_figures(varied_run):
    expected = computed(varied_run)
    RunDigest.objects.filter(run=varied_run).delete()
    assert figures(varied_run) == expected


def test_a_few_k_keep_their_own_bootstrap(varied_run):
    # Asked for a few k, pass^k is bootstrapped over those k, as before the digest: its last
    # digits may differ from the stored curve's, which summed every k at once.
    for ks in ((1,), (1, 2), (2, 5), (3, 99)):
        assert run_pass_hat_k(run=varied_run, ks=ks) == computed_pass_hat_k(
            run=varied_run, ks=ks)


def spoil(run: Run, *, every: int) -> None:
    """Make every `every`-th sample fail to compile, and the one after it suspicious."""
    samples = list(Sample.objects.filter(run=run).order_by("pk").only("pk", "task_id", "index"))
    changed = []
    for position, sample in enumerate(samples):
        if position % every == 0:
            sample.status, sample.error_type, sample.result = "compile_error", "", None
        elif position % every == 1:
            sample.status, sample.error_type = "failed", "AssertionError"
            sample.result = SampleResult(
                task_id=sample.task_id, completion_id=sample.index, status="failed",
                program_hash="", suspicious=("wrote to a file",)).to_dict()
        else:
            continue
        changed.append(sample)
    Sample.objects.bulk_update(changed, ["status", "error_type", "result"])


def test_the_verified_checks_counts_are_stored_and_read_without_the_samples(varied_run):
    from webapp.runs.reads.verified import counted_verification, run_verification

    run = varied_run
    spoil(run, every=9)
    Run.objects.filter(pk=run.pk).update(status=Run.Status.RUNNING)
    assert run_finalize(run_id=run.pk)
    run.refresh_from_db()
    digest = RunDigest.objects.get(run=run)
    counted = counted_verification([run.pk])[run.pk]
    assert (digest.compile_errors, digest.suspicious) == counted
    assert counted[0] > 0, "compile errors are counted"
    assert counted[1] > counted[0], "suspicious samples are counted"
    with CaptureQueriesContext(connection) as queries:
        verification = run_verification(run=run)
    assert not [q for q in queries.captured_queries if '"runs_sample"' in q["sql"]]
    # The same answer as counting the samples gives (a run without a digest).
    RunDigest.objects.filter(run=run).delete()
    assert run_verification(run=run) == verification

    # Scored again after its samples changed, the stored counts follow them.
    _score(run_id=run.pk)
    spoil(run, every=5)
    Run.objects.filter(pk=run.pk).update(status=Run.Status.RUNNING)
    assert run_finalize(run_id=run.pk)
    digest = RunDigest.objects.get(run=run)
    assert (digest.compile_errors, digest.suspicious) == counted_verification([run.pk])[run.pk]
    assert (digest.compile_errors, digest.suspicious) != counted


def test_a_run_still_going_has_its_verification_counted(varied_run):
    from webapp.runs.reads.verified import counted_verification, runs_verification

    run = varied_run
    spoil(run, every=7)  # after the scores: the digest is behind the samples
    Run.objects.filter(pk=run.pk).update(status=Run.Status.RUNNING)
    run.refresh_from_db()
    with CaptureQueriesContext(connection) as queries:
        runs_verification(runs=[run])
    assert [q for q in queries.captured_queries if '"runs_sample"' in q["sql"]]
    assert counted_verification([run.pk])[run.pk] != (
        RunDigest.objects.get(run=run).compile_errors, RunDigest.objects.get(run=run).suspicious)
