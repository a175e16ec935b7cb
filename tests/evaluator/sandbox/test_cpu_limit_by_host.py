"""The CPU limit under gVisor is judged by the host's accounting of the whole sandbox.

gVisor charges a program for the time its thread waited for a CPU, so on a busy machine
its own clock ends an endless loop after a fraction of its limit of real CPU. Where the
session can read the sandbox's cgroup, it ends the program itself once the sandbox has
used the limit (`session._CpuWatch`), and the program's rlimit is only a backstop.
Under bwrap the kernel's clock is exact, and the rlimit decides as before.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from sandbox_programs import Sandbox, python

from evaluator.languages.base import judge
from evaluator.sandbox.session import CPU_POLL_MIN, HOST_CPU_MARGIN, _CpuWatch, stop_line

PY_SPIN = """
while True:
    pass
"""

PY_SPIN_IN_TWO = """
# Two processes share the work: each one's own clock sees half of it.
posix.fork()
while True:
    pass
"""

PY_NUMPY_SPIN = """
import numpy
while True:
    numpy.zeros(4).sum()
"""


def host_measures(sandbox: Sandbox) -> bool:
    return sandbox.name == "gvisor" and sandbox.session.cgroup is not None


def assert_cpu_timeout(sandbox: Sandbox, answer: dict[str, Any], cpu_seconds: float) -> None:
    run = answer["steps"][-1]
    assert judge(answer).status == "timeout", (run.get("stderr"), run)
    assert run.get("cpu_timed_out"), run
    if host_measures(sandbox):
        assert run.get("cpu_stopped_by_host"), run
        # Stopped only once the sandbox had really used the limit of the host's CPU.
        assert run["sandbox_cpu_ms"] >= 1000 * cpu_seconds, run
    else:
        assert not run.get("cpu_stopped_by_host"), run


def test_a_loop_ends_when_the_sandbox_has_used_its_cpu_limit(sandbox: Sandbox) -> None:
    # The wall clock is LIMITS', a minute away: only the CPU limit can end this.
    answer = sandbox.python(python(PY_SPIN), cpu_seconds=1)
    assert_cpu_timeout(sandbox, answer, 1)


def test_a_loop_spread_over_two_processes_is_stopped_by_their_sum(sandbox: Sandbox) -> None:
    answer = sandbox.python(python(PY_SPIN_IN_TWO), cpu_seconds=1)
    assert_cpu_timeout(sandbox, answer, 1)
    # The sweep after the job leaves nothing of it running for the next one.
    after = sandbox.python(python("report(ok=True)"))
    assert judge(after).status == "passed"


def test_the_import_of_a_preloaded_module_is_not_the_programs_cpu(sandbox: Sandbox) -> None:
    # The lean runner imports numpy in a fork for this program (its CPU time is not the
    # program's, and the host's clock starts again after it); the loop still ends at its
    # own limit, and the protocol holds for the next job.
    answer = sandbox.python(python(PY_NUMPY_SPIN), cpu_seconds=1)
    assert_cpu_timeout(sandbox, answer, 1)
    after = sandbox.python(python("report(ok=True)"))
    assert judge(after).status == "passed"


def test_a_stop_request_that_comes_after_its_job_stops_nothing(sandbox: Sandbox) -> None:
    # The host may decide to stop a program just as it ends: the request then reaches
    # the runner between jobs, and must not end the next program.
    sandbox.ensure_runner()
    process = sandbox.session.process
    assert process is not None
    assert process.stdin is not None
    process.stdin.write(stop_line(0) * 2)
    process.stdin.flush()
    answer = sandbox.python(python("import time\ntime.sleep(0.5)\nreport(ok=True)"))
    run = answer["steps"][-1]
    assert judge(answer).status == "passed", run
    assert not run.get("cpu_timed_out")


@pytest.mark.parametrize("forged", [
    b'{"stop": "cpu", "epoch": 0, "id": 1}\n',
    b'{"stop": "cpu", "epoch": "0"}\n',
    b'{"stop": "cpu"\n',
    b'["stop"]\n',
])
def test_a_line_that_only_looks_like_a_stop_request_is_a_bad_job(
        sandbox: Sandbox, forged: bytes) -> None:
    # Only the exact request is skipped between jobs; anything else is answered as a job
    # the runner cannot run, and the runner goes on.
    sandbox.ensure_runner()
    process = sandbox.session.process
    assert process is not None
    assert process.stdin is not None
    process.stdin.write(forged)
    process.stdin.flush()
    answer = sandbox.session._read_line(60.0)
    assert "runner_error" in answer
    after = sandbox.python(python("report(ok=True)"))
    assert judge(after).status == "passed"


class FakeCgroup:
    """A cgroup whose CPU counter the test sets."""

    def __init__(self) -> None:
        self.usage_ns = 0

    def cpu_usage_ns(self) -> int:
        return self.usage_ns


def test_the_watch_stops_once_at_the_rlimits_whole_seconds_and_its_margin() -> None:
    cgroup = FakeCgroup()
    stops: list[int] = []
    watch = _CpuWatch(cgroup, 0.5, 0, stops.append)  # type: ignore[arg-type]
    # RLIMIT_CPU counts whole seconds (0.5 s fires at 1 s), and the margin is on top.
    cgroup.usage_ns = int((1 + HOST_CPU_MARGIN) * 1e9) - 1
    watch.check()
    assert stops == []
    cgroup.usage_ns += 1
    watch.check()
    watch.check()
    assert stops == [0]


def test_the_watch_counts_from_where_its_clock_restarted() -> None:
    cgroup = FakeCgroup()
    stops: list[int] = []
    watch = _CpuWatch(cgroup, 1.0, 0, stops.append)  # type: ignore[arg-type]
    cgroup.usage_ns = int(1.2e9)  # the first run, and a preloaded module's import
    watch.check()
    assert stops == [0]
    watch.restart()
    cgroup.usage_ns = int(2.2e9)
    watch.check()
    assert stops == [0]
    cgroup.usage_ns = int(2.4e9)
    watch.check()
    assert stops == [0, 1]


def test_the_watch_waits_no_longer_than_the_budget_could_last() -> None:
    cgroup = FakeCgroup()
    watch = _CpuWatch(cgroup, 3.0, 0, lambda epoch: None)  # type: ignore[arg-type]
    assert watch.wait() <= 1.0
    cgroup.usage_ns = int((3 + HOST_CPU_MARGIN) * 1e9) - 1000
    assert watch.wait() == CPU_POLL_MIN


RUNNER = Path(__file__).resolve().parents[3] / "evaluator/sandbox/runtime/runner.py"


def runner_module() -> ModuleType:
    """runner.py as a module (it is a script of the sandbox: standard library only)."""
    spec = importlib.util.spec_from_file_location("sandbox_runner_under_test", RUNNER)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_stop_for_an_earlier_run_of_the_program_stops_nothing() -> None:
    # A program that imports numpy in the lean runner runs again in a fork that imported
    # it, and the host's clock starts again: a stop the host sent while timing the first
    # run (it may arrive after the restart) must not end the second.
    runner = runner_module()
    read_end, write_end = os.pipe()
    try:
        channel = runner._HostChannel(read_end)
        os.write(write_end, stop_line(0) + b'{"kind": "harness"}\n')
        assert not channel.stop_requested(1)
        os.write(write_end, stop_line(1))
        assert channel.stop_requested(1)
        # Lines that are not stop requests stay for the runner's next job.
        os.close(write_end)
        write_end = -1
        assert list(channel.jobs()) == ['{"kind": "harness"}']
    finally:
        os.close(read_end)
        if write_end >= 0:
            os.close(write_end)


def test_a_late_stop_between_jobs_is_dropped_but_nothing_else() -> None:
    runner = runner_module()
    read_end, write_end = os.pipe()
    try:
        channel = runner._HostChannel(read_end)
        os.write(write_end, stop_line(0) + b"first\n" + stop_line(3) + b"second")
        os.close(write_end)
        write_end = -1
        assert list(channel.jobs()) == ["first", "second"]
    finally:
        os.close(read_end)
        if write_end >= 0:
            os.close(write_end)
