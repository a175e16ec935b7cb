"""`manage.py digest_backfill` gives a run scored before digests existed the digest its
scoring would have stored (issue 26): its readers answer as before, now from one row; it is
safe to run twice and beside a scoring that stores a newer digest; a run it cannot do is
reported and skipped."""

from __future__ import annotations

import io
from typing import Any

import pytest
from django.core.cache import cache
from django.core.management import CommandError, call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from evaluator.records import SampleResult, Status
from tests.webapp.large_run import large_run_create
from tests.webapp.support import client_for
from webapp.benchmarks.models import Dataset
from webapp.runs.models import Run, RunDigest, Sample
from webapp.runs.reads.reports import run_failure_breakdown
from webapp.runs.reads.selectors import run_pass_hat_k, run_unstable_count
from webapp.runs.reads.verified import run_verification
from webapp.runs.worker import aggregation
from webapp.runs.worker.aggregation import _score, run_finalize, scored_run_digest

PER_TASK = 4
DIGEST_FIELDS = ("pk", "run_id", "pass_hat_k", "failures", "unstable", "compile_errors",
                 "suspicious")


def mark(run: Run, *, shift: int = 0) -> None:
    """Give some samples what the digest counts besides verdicts: an unstable timeout, a
    compile error, a suspicious failure; `shift` picks others."""
    changed = []
    for sample in Sample.objects.filter(run=run).order_by("pk").only("pk", "task_id", "index"):
        turn = (sample.pk + shift) % 9
        status: Status
        if turn == 0:
            status, error_type = "timeout", ""
        elif turn == 1:
            status, error_type = "compile_error", "SyntaxError"
        elif turn == 2:
            status, error_type = "failed", "AssertionError"
        else:
            continue
        sample.status, sample.error_type = status, error_type
        sample.result = SampleResult(
            task_id=sample.task_id, completion_id=sample.index, status=status,
            program_hash="", unstable=turn == 0,
            suspicious=("no test ran",) if turn == 2 else ()).to_dict()
        changed.append(sample)
    Sample.objects.bulk_update(changed, ["status", "error_type", "result"])


def scored_run(personas, dataset: Dataset, name: str) -> Run:
    run = large_run_create(owner=personas.owner, team=personas.team, dataset=dataset,
                           per_task=PER_TASK, name=name)
    mark(run)
    _score(run_id=run.pk)
    run.refresh_from_db()
    return run


@pytest.fixture
def old_run(personas, humaneval: Dataset) -> Run:
    return scored_run(personas, humaneval, "old")


def answers(run: Run, personas) -> dict[str, Any]:
    """What every reader of a finished run's digest answers."""
    cache.clear()
    return {
        "pass_hat_k": run_pass_hat_k(run=run, ks=None),
        "failures": run_failure_breakdown(run=run),
        "unstable": run_unstable_count(run=run),
        "verification": run_verification(run=run),
        "api": client_for(personas.owner).get(f"/api/runs/{run.pk}").json(),
    }


def digest_rows() -> list[tuple[Any, ...]]:
    return list(RunDigest.objects.order_by("run_id").values_list(*DIGEST_FIELDS))


def backfill(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("digest_backfill", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_a_backfilled_run_reads_as_it_did_when_scored(old_run, personas):
    scored = RunDigest.objects.get(run=old_run)
    when_scored = answers(old_run, personas)
    assert when_scored["unstable"] > 0
    RunDigest.objects.filter(run=old_run).delete()  # a run scored before digests existed
    assert answers(old_run, personas) == when_scored

    out, err = backfill()

    assert f"run {old_run.pk}: stored" in err
    assert out.startswith("Digests stored: 1; skipped: 0; failed: 0;")
    backfilled = RunDigest.objects.get(run=old_run)
    assert [getattr(backfilled, field) for field in DIGEST_FIELDS[2:]] == [
        getattr(scored, field) for field in DIGEST_FIELDS[2:]]
    assert backfilled.compile_errors > 0
    assert backfilled.suspicious > backfilled.unstable > 0
    assert answers(old_run, personas) == when_scored
    # Read from the digest now: no scan of the run's samples.
    with CaptureQueriesContext(connection) as queries:
        run_failure_breakdown(run=old_run)
        run_unstable_count(run=old_run)
        run_verification(run=old_run)
    assert not [q for q in queries.captured_queries if '"runs_sample"' in q["sql"]]


def test_running_it_twice_changes_nothing(old_run, personas, humaneval):
    other = scored_run(personas, humaneval, "other")
    RunDigest.objects.all().delete()
    backfill("--batch-size", "1")  # a query of run ids a run
    first = digest_rows()
    assert [row[1] for row in first] == [old_run.pk, other.pk]

    out, err = backfill()
    assert out.startswith("Digests stored: 0; skipped: 0; failed: 0;")
    assert digest_rows() == first

    out, err = backfill(str(old_run.pk), str(other.pk))
    assert err.count("has a digest already") == 2
    assert out.startswith("Digests stored: 0; skipped: 2; failed: 0;")
    assert digest_rows() == first

    # Computed again in place: the same rows, the same figures.
    out, _err = backfill("--all")
    assert out.startswith("Digests stored: 2; skipped: 0; failed: 0;")
    assert digest_rows() == first


def test_an_unknown_run_id_is_a_clear_error_and_nothing_is_done(old_run):
    RunDigest.objects.filter(run=old_run).delete()
    with pytest.raises(CommandError, match=r"^no run with id 987654: nothing was done$"):
        backfill(str(old_run.pk), "987654")
    assert not RunDigest.objects.filter(run=old_run).exists()


def test_a_run_not_finished_is_skipped_with_its_reason(old_run, personas, humaneval):
    running = large_run_create(owner=personas.owner, team=personas.team, dataset=humaneval,
                               per_task=PER_TASK, name="still going",
                               status=Run.Status.RUNNING)
    RunDigest.objects.filter(run=old_run).delete()

    out, err = backfill(str(running.pk), str(old_run.pk))

    assert f"run {running.pk}: not finished (it is running)" in err
    assert f"run {old_run.pk}: stored" in err
    assert out.startswith("Digests stored: 1; skipped: 1; failed: 0;")
    assert not RunDigest.objects.filter(run=running).exists()
    # Left out of the runs without a digest: they are the finished ones.
    assert backfill("--count")[0] == "Finished runs without a digest: 0\n"


@pytest.mark.parametrize("args", [(), ("--all",)], ids=["lacking", "all"])
def test_a_digest_stored_by_scoring_the_run_again_meanwhile_stands(old_run, monkeypatch,
                                                                   args):
    """The run resumed and scored again (its samples changed) between the backfill's
    computing and storing: the digest its scoring stored is the newer, and stays."""
    if not args:
        RunDigest.objects.filter(run=old_run).delete()
    computed: list[RunDigest] = []

    def scored_again_meanwhile(*, run: Run) -> RunDigest:
        digest = scored_run_digest(run=run)
        computed.append(digest)
        mark(run, shift=4)
        Run.objects.filter(pk=run.pk).update(status=Run.Status.RUNNING)
        assert run_finalize(run_id=run.pk)
        return digest

    monkeypatch.setattr(aggregation, "scored_run_digest", scored_again_meanwhile)
    out, err = backfill(*args)

    assert f"run {old_run.pk}: scored again meanwhile" in err
    assert out.startswith("Digests stored: 0; skipped: 1; failed: 0;")
    newer = RunDigest.objects.get(run=old_run)
    recomputed = scored_run_digest(run=old_run)
    figures = [getattr(newer, field) for field in DIGEST_FIELDS[2:]]
    assert figures == [getattr(recomputed, field) for field in DIGEST_FIELDS[2:]]
    assert figures != [getattr(computed[0], field) for field in DIGEST_FIELDS[2:]]


def test_a_run_deleted_or_failing_is_reported_and_the_others_are_done(old_run, personas,
                                                                       humaneval, monkeypatch):
    doomed = scored_run(personas, humaneval, "doomed")
    broken = scored_run(personas, humaneval, "broken")
    RunDigest.objects.all().delete()

    def deleted_or_failing(*, run: Run) -> RunDigest:
        if run.pk == broken.pk:
            raise RuntimeError("a bad row")
        digest = scored_run_digest(run=run)
        if run.pk == doomed.pk:
            Run.objects.filter(pk=doomed.pk).delete()  # purged while computing
        return digest

    monkeypatch.setattr(aggregation, "scored_run_digest", deleted_or_failing)
    with pytest.raises(CommandError, match="1 run"):
        call_command("digest_backfill", stdout=(out := io.StringIO()),
                     stderr=(err := io.StringIO()))

    assert f"run {doomed.pk}: deleted meanwhile" in err.getvalue()
    assert f"run {broken.pk}: failed: RuntimeError: a bad row" in err.getvalue()
    assert out.getvalue().startswith("Digests stored: 1; skipped: 1; failed: 1;")
    assert list(RunDigest.objects.values_list("run_id", flat=True)) == [old_run.pk]


def test_count_says_how_many_finished_runs_lack_a_digest(old_run, personas, humaneval):
    scored_run(personas, humaneval, "new")
    assert backfill("--count")[0] == "Finished runs without a digest: 0\n"
    RunDigest.objects.filter(run=old_run).delete()
    assert backfill("--count")[0] == "Finished runs without a digest: 1\n"
    assert not RunDigest.objects.filter(run=old_run).exists()  # counted, not computed
