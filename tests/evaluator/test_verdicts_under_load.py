"""Verdicts that do not depend on how busy the machine is (issue 11).

CPU time decides and the wall clock is only a backstop; a program whose timeout or
memory verdict load may have decided is run once more, alone, and its result says
whether the two attempts agreed. A program that spent its whole CPU budget computing is
not: it would time out on an idle machine too. The programs here really do what the
tests are about: they spin, sleep, allocate, or (under `none`, where a program can reach
the host's files) behave differently on their second attempt. The machine is really
loaded where load is the point. Nothing asserts a duration.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from bench.load_stability import saturated_cpus
from evaluator.datasets import load_dataset
from evaluator.engine import CPU_BUDGET_SPENT, Engine, EngineConfig, MemoryCache, load_may_decide
from evaluator.exclusive import SharedExclusiveLock
from evaluator.records import Problem, RunOptions, Sample, SampleResult
from evaluator.sandbox.base import SandboxLimits, wall_backstop
from tests.backends import require_backend

REPO = Path(__file__).resolve().parents[2]
PROBLEM = Problem(
    dataset="fixture", task_id="HumanEval/0", language="python", natural_language="en",
    prompt='def twice(x: int) -> int:\n    """Twice x."""\n', entry_point="twice",
    canonical_solution="    return 2 * x\n",
    test="\n\ndef check(candidate):\n    assert candidate(2) == 4\n    assert candidate(0) == 0\n",
)
RIGHT = "    return 2 * x\n"
WRONG = "    return x\n"
SPIN = "    while True:\n        pass\n"
HOARD = "    hoard = bytearray(8 * 1024 ** 3)\n    return 2 * x\n"
SLEEP_FOREVER = "    import time\n    time.sleep(10 ** 6)\n"
LIMITS = SandboxLimits(cpu_seconds=1.0, wall_seconds=60.0, memory_mb=256)
"""A CPU limit that ends the spinning programs soon, and a wall clock far away."""
WAITS = SandboxLimits(cpu_seconds=1.0, wall_seconds=2.0, memory_mb=256)
"""A wall-clock backstop that ends the waiting programs soon: a verdict load may decide."""


def wait_then(marker: Path, answer: str = RIGHT) -> str:
    """Waits on its first attempt only, until the wall-clock backstop ends it: it leaves
    `marker` on the host (possible under `none`); an attempt that finds the marker goes
    on to `answer`."""
    return (f"    import os, time\n    if not os.path.exists({str(marker)!r}):\n"
            f"        open({str(marker)!r}, 'w').close()\n"
            "        time.sleep(10 ** 6)\n" + answer)


def busy(index: int, iterations: int = 4_000_000) -> str:
    """A right answer after a fixed amount of computing (a few tenths of a second)."""
    return (f"    n = 0\n    for i in range({iterations}):\n        n += i\n"
            f"    return 2 * x  # {index}\n")


def evaluate(engine: Engine, completions: list[str]) -> list[SampleResult]:
    samples = [Sample(task_id=PROBLEM.task_id, index=i, raw=text, completion=text)
               for i, text in enumerate(completions)]
    found = {event["position"]: event["result"]
             for event in engine.evaluate({PROBLEM.task_id: PROBLEM}, samples)
             if event["type"] == "sample_finished"}
    return [found[i] for i in range(len(completions))]


def engine(limits: SandboxLimits = LIMITS, **config: Any) -> Engine:
    return Engine(EngineConfig(backend="none", options=RunOptions(limits=limits), **config))


# -- CPU time decides ----------------------------------------------------------------------
def test_one_timeout_is_a_cpu_limit_with_a_wall_clock_backstop() -> None:
    limits = SandboxLimits.for_timeout(3.0, memory_mb=512)
    assert limits.cpu_seconds == 3.0
    assert limits.wall_seconds == wall_backstop(3.0) == 14.0
    assert limits.memory_mb == 512


def test_a_program_that_waits_longer_than_its_cpu_limit_passes() -> None:
    sleeps = "    import time\n    time.sleep(2)\n    return 2 * x\n"
    with engine(SandboxLimits.for_timeout(1.0)) as own:
        (result,) = evaluate(own, [sleeps])
    assert result.status == "passed", result.message
    assert result.sandbox is not None
    assert result.sandbox.limits["cpu_seconds"] == 1.0
    assert result.sandbox.limits["wall_seconds"] == wall_backstop(1.0)


def test_a_wall_clock_kill_says_the_backstop_fired() -> None:
    with engine(SandboxLimits(cpu_seconds=30.0, wall_seconds=1.0)) as own:
        (result,) = evaluate(own, [SLEEP_FOREVER])
    assert result.status == "timeout"
    assert "wall-clock backstop" in result.message
    assert (result.attempts, result.unstable) == (2, False)


def test_a_spinning_program_is_stopped_by_its_cpu_limit() -> None:
    with engine() as own:
        (result,) = evaluate(own, [SPIN])
    assert result.status == "timeout"
    assert result.message == "the program exceeded its CPU time limit"


@pytest.mark.parametrize("backend", ["gvisor", "bwrap"])
def test_the_host_measures_the_cpu_the_whole_sandbox_used(backend: str) -> None:
    # gVisor charges a program for time it waited for a CPU, so its timeouts are judged
    # by what the host's accounting saw the sandbox use. A program that sleeps until the
    # wall-clock backstop shows that figure is the host's: almost nothing.
    require_backend(backend)
    if os.geteuid() != 0:
        pytest.skip("the sandbox's cgroup, and with it the host's CPU figure, needs root")
    with Engine(EngineConfig(backend=backend, options=RunOptions(limits=LIMITS))) as own:
        (spin,) = evaluate(own, [SPIN])
    with Engine(EngineConfig(backend=backend, options=RunOptions(limits=WAITS))) as own:
        (sleep,) = evaluate(own, [SLEEP_FOREVER])
    assert spin.status == sleep.status == "timeout"
    assert (spin.facts["killed_for"], sleep.facts["killed_for"]) == ("cpu", "wall")
    assert sleep.facts["sandbox_cpu_ms"] is not None
    assert sleep.facts["sandbox_cpu_ms"] < 0.5 * sleep.facts["cpu_limit_ms"]
    assert spin.facts["sandbox_cpu_ms"] is not None
    assert spin.facts["sandbox_cpu_ms"] > 0
    if spin.attempts == 1:
        # Not run again: the host saw it spend its budget (an idle machine's case).
        assert spin.facts["sandbox_cpu_ms"] >= CPU_BUDGET_SPENT * spin.facts["cpu_limit_ms"]


def test_verdicts_hold_with_every_core_saturated_by_other_processes() -> None:
    # Programs that compute for a few tenths of a second, under a 1 s CPU limit, while
    # one more busy process than there are cores competes with them: each program gets a
    # fraction of a core, and needs several times its CPU time on the wall clock.
    with engine(SandboxLimits.for_timeout(1.0), workers=2, dedup=False) as own, \
            saturated_cpus():
        results = evaluate(own, [busy(i) for i in range(6)] + [WRONG, SPIN])
    assert [r.status for r in results] == ["passed"] * 6 + ["failed", "timeout"]
    assert [r.attempts for r in results[:7]] == [1] * 7
    assert not any(r.unstable for r in results)
    # The spinning program spent its whole budget computing: not run again, unless the
    # ticks billed it early.
    spent_or_retried(results[7])


# -- retried once, alone --------------------------------------------------------------------
def test_a_timeout_on_the_first_attempt_only_is_flagged_unstable(tmp_path: Path) -> None:
    with engine(WAITS) as own:
        (result,) = evaluate(own, [wait_then(tmp_path / "waited")])
    assert (tmp_path / "waited").exists(), "the first attempt did not run"
    assert result.status == "passed"
    assert (result.attempts, result.first_status, result.unstable) == (2, "timeout", True)


def test_a_timeout_that_happens_again_is_kept_and_not_flagged() -> None:
    with engine(WAITS) as own:
        (result,) = evaluate(own, [SLEEP_FOREVER])
    assert (result.status, result.attempts, result.first_status, result.unstable) == (
        "timeout", 2, "timeout", False)


def spent_or_retried(result: SampleResult) -> None:
    """A spinning program's timeout: not run again when it was billed its whole budget.

    The kernel stops it when the CPU time billed by ticks reaches the limit, and its own
    figure is the exact one; with every core busy the two can differ by more than the
    rule's margin, or the wall-clock backstop comes first, and then the program is
    rightly run again. Either way the figures the decision was made on must agree with it.
    """
    assert result.status == "timeout"
    assert not result.unstable
    limit = result.facts["cpu_limit_ms"]
    if result.attempts == 1:
        assert result.first_status is None
        assert result.facts["cpu_ms"] >= CPU_BUDGET_SPENT * limit
    else:
        first = result.facts["first_attempt"]
        assert (result.attempts, result.first_status) == (2, "timeout")
        # Stopped by the wall-clock backstop (a machine so busy that the budget could
        # not be spent in time), or billed early.
        assert first["killed_for"] == "wall" or first["cpu_ms"] < CPU_BUDGET_SPENT * limit


def test_a_program_that_spent_its_cpu_budget_is_not_run_again() -> None:
    with engine() as own:
        (result,) = evaluate(own, [SPIN])
    spent_or_retried(result)


def _timed_out(cpu_ms: float | None, killed_for: str = "cpu",
               sandbox_cpu_ms: float | None = None) -> SampleResult:
    return SampleResult(task_id="HumanEval/0", completion_id=0, status="timeout",
                        program_hash="h", facts={"killed_for": killed_for, "cpu_ms": cpu_ms,
                                                 "sandbox_cpu_ms": sandbox_cpu_ms,
                                                 "cpu_limit_ms": 1000.0})


@pytest.mark.parametrize(("result", "exact", "expected"), [
    (_timed_out(990.0), True, False),        # spent its budget computing
    (_timed_out(700.0), True, True),         # billed early: other processes' ticks
    (_timed_out(990.0), False, True),        # gVisor: waiting was counted as CPU
    (_timed_out(1000.0, sandbox_cpu_ms=231.0), False, True),   # ... and the host saw it
    (_timed_out(1000.0, sandbox_cpu_ms=1040.0), False, False),  # gVisor, really computing
    (_timed_out(990.0, sandbox_cpu_ms=1040.0), True, False),  # exact: the program's own
    (_timed_out(None), True, True),          # nothing measured: retry
    (_timed_out(990.0, "wall"), True, True),  # the wall-clock backstop
    (replace(_timed_out(990.0), status="memory"), True, True),
    (replace(_timed_out(990.0), status="failed"), True, False),
])
def test_which_verdicts_load_may_have_decided(result: SampleResult, exact: bool,
                                              expected: bool) -> None:
    class Backend:
        cpu_time_exact = exact

    assert load_may_decide(result, Backend()) is expected  # type: ignore[arg-type]


def test_running_out_of_memory_is_retried_too() -> None:
    with engine() as own:
        (result,) = evaluate(own, [HOARD])
    assert (result.status, result.attempts, result.first_status, result.unstable) == (
        "memory", 2, "memory", False)


def test_other_verdicts_are_not_retried() -> None:
    with engine() as own:
        results = evaluate(own, [RIGHT, WRONG, "    return undefined_name\n"])
    assert [r.status for r in results] == ["passed", "failed", "error"]
    assert all(r.attempts == 1 and r.first_status is None and not r.unstable for r in results)


def test_no_retry_when_switched_off(tmp_path: Path) -> None:
    with engine(WAITS, retry_limits=False) as own:
        (result,) = evaluate(own, [wait_then(tmp_path / "waited")])
    assert (result.status, result.attempts, result.first_status, result.unstable) == (
        "timeout", 1, None, False)


def test_the_cache_keeps_the_retried_result(tmp_path: Path) -> None:
    cache = MemoryCache()
    program = wait_then(tmp_path / "waited")
    with engine(WAITS, cache=cache) as own:
        evaluate(own, [program])
        (again,) = evaluate(own, [program])
    assert again.cached
    assert (again.status, again.attempts, again.unstable) == ("passed", 2, True)


class WatchedEngine(Engine):
    """Records when each execution of a unit starts and ends, in order."""

    def __init__(self, config: EngineConfig) -> None:
        super().__init__(config)
        self.edges: list[tuple[str, str, int]] = []
        self._calls: Counter[str] = Counter()
        self._edges_lock = threading.Lock()

    def _execute(self, unit: Any, *args: Any, **kwargs: Any) -> SampleResult:
        with self._edges_lock:
            self._calls[unit.key] += 1
            attempt = self._calls[unit.key]
            self.edges.append(("start", unit.key, attempt))
        try:
            return super()._execute(unit, *args, **kwargs)
        finally:
            with self._edges_lock:
                self.edges.append(("end", unit.key, attempt))


def test_a_retry_runs_while_no_other_program_runs() -> None:
    completions = [SLEEP_FOREVER, *(busy(i, 1_500_000) for i in range(16)),
                   SLEEP_FOREVER + "    # 2\n"]
    # The backstop ends the waiting programs; busy ones finish far within it.
    waits = SandboxLimits(cpu_seconds=10.0, wall_seconds=4.0, memory_mb=256)
    config = EngineConfig(backend="none", workers=3, options=RunOptions(limits=waits))
    with WatchedEngine(config) as watched:
        results = evaluate(watched, completions)
    assert [r.status for r in results] == ["timeout"] + ["passed"] * 16 + ["timeout"]
    edges = watched.edges
    running: set[tuple[str, int]] = set()
    most_at_once = 0
    retries = 0
    for position, (edge, key, attempt) in enumerate(edges):
        if edge == "end":
            running.discard((key, attempt))
            continue
        if attempt == 2:
            retries += 1
            assert not running, f"the retry started while {running} ran"
            assert edges[position + 1] == ("end", key, 2), \
                f"something started during the retry: {edges[position:position + 3]}"
        running.add((key, attempt))
        most_at_once = max(most_at_once, len(running))
    # The two waiting programs, and any busy one the machine held up past the backstop.
    assert retries >= 2
    assert [r.attempts for r in (results[0], results[-1])] == [2, 2]
    # The other programs did run side by side: the retry's solitude was not a given.
    assert most_at_once > 1


def test_a_thread_that_shares_the_lock_cannot_also_hold_it_alone() -> None:
    lock = SharedExclusiveLock()
    with lock.shared(), lock.shared(), pytest.raises(RuntimeError), lock.exclusive():
        pass
    with lock.exclusive(), pytest.raises(RuntimeError), lock.shared():
        pass
    # Released as it should be: another thread can hold it alone now.
    done = threading.Event()

    def alone() -> None:
        with lock.exclusive():
            done.set()

    worker = threading.Thread(target=alone)
    worker.start()
    worker.join()
    assert done.is_set()


# -- the command line ---------------------------------------------------------------------
@pytest.fixture
def unstable_samples(tmp_path: Path) -> Path:
    """HumanEval/0: right, right after waiting out the backstop on its first attempt,
    spinning (its whole CPU budget: not run again), wrong."""
    canonical = load_dataset().problems[0].canonical_solution
    rows = [canonical, wait_then(tmp_path / "waited", canonical), SPIN, "    return False\n"]
    path = tmp_path / "samples.jsonl"
    path.write_text("".join(json.dumps({"task_id": "HumanEval/0", "completion": text}) + "\n"
                            for text in rows))
    return path


def spinner_row(row: dict[str, Any]) -> int:
    """Checks the spinning sample's row as `spent_or_retried` does; 1 if it ran again."""
    spent_or_retried(SampleResult(
        task_id=row["task_id"], completion_id=row["completion_id"], status=row["status"],
        program_hash="", facts=row["facts"], attempts=row["attempts"],
        first_status=row["first_status"], unstable=row["unstable"]))
    return int(row["attempts"] == 2)


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evaluator", "evaluate", *args, "--sandbox", "none",
         "--no-cache", "--timeout", "1", "--k", "1"],
        cwd=cwd, capture_output=True, text=True, timeout=300, check=False,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin", "HOME": str(cwd)},
    )


def test_the_summary_counts_unstable_verdicts(unstable_samples: Path, tmp_path: Path) -> None:
    results = tmp_path / "out.jsonl"
    proc = run_cli("--samples", str(unstable_samples), "--results", str(results), "--json",
                   cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    rows = [json.loads(line) for line in results.open()]
    spinner_retried = spinner_row(rows[2])
    assert (summary["retried"], summary["unstable"]) == (1 + spinner_retried, 1)
    assert [(r["status"], r["attempts"], r["first_status"], r["unstable"])
            for r in rows[:2] + rows[3:]] == [
        ("passed", 1, None, False), ("passed", 2, "timeout", True), ("failed", 1, None, False)]
    assert rows[0]["sandbox"]["limits"]["cpu_seconds"] == 1.0
    assert rows[0]["sandbox"]["limits"]["wall_seconds"] == wall_backstop(1.0)


def test_the_text_summary_prints_unstable_and_no_retry_turns_it_off(
    unstable_samples: Path, tmp_path: Path,
) -> None:
    proc = run_cli("--samples", str(unstable_samples), "--results", str(tmp_path / "a.jsonl"),
                   "--no-retry", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    line = next(line for line in proc.stdout.splitlines() if line.startswith("unstable"))
    assert line.split()[:4] == ["unstable", "0", "(of", "0"]
    # Without the retry, the sample that waits only once is a plain timeout.
    rows = [json.loads(line) for line in (tmp_path / "a.jsonl").open()]
    assert [r["status"] for r in rows] == ["passed", "timeout", "timeout", "failed"]
    proc = run_cli("--samples", str(unstable_samples), "--results", str(tmp_path / "b.jsonl"),
                   cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    line = next(line for line in proc.stdout.splitlines() if line.startswith("unstable"))
    # The marker is already there: this time the sample never waits, and the spinning
    # one is not run again (unless the ticks billed it early).
    rows = [json.loads(line) for line in (tmp_path / "b.jsonl").open()]
    assert line.split()[:4] == ["unstable", "0", "(of", str(spinner_row(rows[2]))]
