"""bench/plus_speed.py: counting the processes a program's tests run in, and (with
../shared) its smallest real run."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from bench.plus_speed import JobCount, Row, drop_last_line, one_process_per_program
from tests.conftest import REPO_ROOT


def _row(samples: int, jobs: JobCount) -> Row:
    return Row("cpp", "plus", samples, samples, 10 * samples, 1.0, jobs, "")


def test_counts_the_steps_that_ran_each_program_but_not_its_compile_steps() -> None:
    jobs = JobCount()
    jobs.add_execution({"steps": [{"name": "compile"}, {"name": "run"}]})
    jobs.add_execution({"steps": [{"name": "run"}]})
    jobs.add_execution(None)  # a sandbox failure ran nothing
    for kind in ("service", "command", "command"):
        jobs.add_job({"kind": kind})
    assert jobs.executions == 2
    assert jobs.run_processes == {1: 2}
    assert jobs.sandbox_jobs == {"command": 2, "service": 1}
    assert one_process_per_program([_row(2, jobs)])


def test_a_program_whose_tests_ran_in_two_processes_is_caught() -> None:
    jobs = JobCount()
    jobs.add_execution({"steps": [{"name": "run"}, {"name": "run-more"}]})
    assert not one_process_per_program([_row(1, jobs)])
    # A sample whose program was never run is caught too.
    single = JobCount()
    single.add_execution({"steps": [{"name": "run"}]})
    assert not one_process_per_program([_row(2, single)])



def test_a_program_that_did_not_compile_ran_in_no_process_and_is_no_exception() -> None:
    jobs = JobCount()
    jobs.add_execution({"steps": [{"name": "run"}]})
    jobs.add_execution({"steps": [{"name": "compile"}]})
    assert jobs.run_processes == {1: 1, 0: 1}
    assert one_process_per_program([_row(2, jobs)])
    # But a row where nothing ran at all shows nothing about processes.
    none = JobCount()
    none.add_execution({"steps": [{"name": "compile"}]})
    assert not one_process_per_program([_row(1, none)])


def test_counting_wraps_the_engine_only_until_undone() -> None:
    from bench.plus_speed import counting_runs
    from evaluator.engine import Engine
    from evaluator.sandbox.session import RunnerSession

    before = (Engine._build_and_run, RunnerSession.run)
    undo = counting_runs(JobCount())
    assert (Engine._build_and_run, RunnerSession.run) != before
    undo()
    assert (Engine._build_and_run, RunnerSession.run) == before


def test_broken_variant_drops_the_last_line_and_skips_one_liners() -> None:
    assert drop_last_line("    x = 1;\n    return x;\n}\n") == "    x = 1;\n    return x;\n"
    assert drop_last_line("    return 1\n") == ""


@pytest.mark.slow
def test_the_smallest_run_measures_both_sets_in_one_process_each(shared_dir: Path) -> None:
    done = subprocess.run(
        [sys.executable, "bench/plus_speed.py", "--languages", "python", "--problems", "2"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=600, check=False,
        env={"WORKBENCH_SHARED": str(shared_dir), "PATH": "/usr/bin:/bin",
             "HOME": str(Path.home())})
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    base = re.search(r"^python  base +2 +2 +(\d+) ", done.stdout, re.M)
    plus = re.search(r"^python  plus +2 +2 +(\d+) .* runs 2/2 samples", done.stdout, re.M)
    assert base, done.stdout
    assert plus, done.stdout
    # HumanEval+ Mini's inputs for HumanEval/0 and /1 outnumber HumanEval's asserts.
    assert int(plus.group(1)) > int(base.group(1))
    assert "every program ran all its tests in one process: yes" in done.stdout
