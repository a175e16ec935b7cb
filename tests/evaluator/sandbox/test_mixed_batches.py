"""Hostile samples evaluated in one batch with well-behaved ones get their own verdicts.

A sample's verdict must not depend on its neighbours: each is evaluated alone, on a fresh
engine, and then in mixed batches in several orders on one long-lived engine (one runner
that has run every kind of program before), under every backend that works here (`none`
too, without the fork bomb: see conftest.py). A program that did not finish normally
(it looped, flooded its output, exited before its tests, ran out of memory) is never
`passed`, alone or in company.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest
from sandbox_programs import require_backend

from evaluator.engine import Engine, EngineConfig
from evaluator.records import Problem, RunOptions, Sample
from evaluator.samples import read_samples
from evaluator.sandbox.base import SandboxLimits

OUTPUT_LIMIT = 256 * 1024
LIMITS = SandboxLimits(
    # The CPU limit ends the endless programs; the wall clock is far away, so that a
    # well-behaved program on a busy machine is never cut short. Few processes: a fork
    # bomb's spinning children share the CPU with the one whose CPU time ends it.
    wall_seconds=30.0, cpu_seconds=1.0, memory_mb=256, processes=6,
    output_bytes=OUTPUT_LIMIT, file_size_mb=4, scratch_mb=16,
)
PROBLEM = Problem(
    dataset="fixture", task_id="HumanEval/53", language="python", natural_language="en",
    prompt='def add(x: int, y: int):\n    """Add two numbers x and y"""\n',
    entry_point="add", canonical_solution="    return x + y\n",
    test="\n\ndef check(candidate):\n    assert candidate(0, 1) == 1\n"
         "    assert candidate(5, 7) == 12\n",
)
CORRECT = "    return x + y\n"

# name: (completion, expected status, expected error type)
PROGRAMS: dict[str, tuple[str, str, str | None]] = {
    "good": (CORRECT, "passed", None),
    "wrong": ("    return x - y\n", "failed", "AssertionError"),
    # The sample of the report: a correct `add`, then endless output at module level.
    "endless_output": (CORRECT + "\nwhile True:\n    print('y' * 10000)\n",
                       "error", "OutputLimitExceeded"),
    "endless_loop": (CORRECT + "\nwhile True:\n    pass\n", "timeout", "Timeout"),
    "flood_then_exit_0": (
        CORRECT + f"\nimport os\nos.write(1, b'y' * {2 * OUTPUT_LIMIT})\nos._exit(0)\n",
        "error", "OutputLimitExceeded"),
    # Over the limit on both streams at its very last test, then it ends at once: the
    # excess is still in the pipes when the program is gone.
    "flood_at_the_end_then_pass": (
        "    import os\n    if (x, y) == (5, 7):\n"
        f"        os.write(1, b'y' * {OUTPUT_LIMIT - 16 * 1024})\n"
        "        os.write(2, b'z' * 32768)\n    return x + y\n",
        "error", "OutputLimitExceeded"),
    "os_exit_0_before_tests": (CORRECT + "\nimport os\nos._exit(0)\n", "error", "IncompleteRun"),
    "sys_exit_0_before_tests": (CORRECT + "\nimport sys\nsys.exit(0)\n", "error", "SystemExit"),
    "close_report_channel": (CORRECT + "\nimport os\nos.close(3)\n", "error", "IncompleteRun"),
    # Closing its own output is allowed: the program still finishes, and passes.
    "close_stdout": (CORRECT + "\nimport os\nos.close(1)\nos.close(2)\n", "passed", None),
    "huge_memory": (CORRECT + "\nhoard = bytearray(8 * 1024 ** 3)\n", "memory", "MemoryError"),
    "fork_bomb": (
        CORRECT + "\nimport posix\nwhile True:\n    try:\n        posix.fork()\n"
                  "    except OSError:\n        pass\n",
        "timeout", "Timeout"),
}
WELL_BEHAVED = ("good", "wrong", "close_stdout")
FORK_BOMB = "fork_bomb"
"""Never under `none`, where the program is the host's own process; and in one mixed
order only, as its spinning children make it the slowest program by far."""
BACKENDS = ("none", "bwrap", "gvisor")
SEED = 53


def programs_for(backend: str, *, fork_bomb: bool = True) -> list[str]:
    return [name for name in PROGRAMS
            if name != FORK_BOMB or (fork_bomb and backend != "none")]


def make_engine(backend: str, workers: int = 1) -> Engine:
    return Engine(EngineConfig(backend=backend, workers=workers, dedup=False,
                               options=RunOptions(limits=LIMITS)))


def evaluate(engine: Engine, names: list[str]) -> list[tuple[str, str | None]]:
    # Every sample is a distinct program (a numbered comment), so nothing is shared.
    samples = []
    for index, name in enumerate(names):
        completion = PROGRAMS[name][0] + f"# sample {index}\n"
        samples.append(Sample(task_id=PROBLEM.task_id, index=index, raw=completion,
                              completion=completion))
    results = {e["position"]: e["result"] for e in engine.evaluate({PROBLEM.task_id: PROBLEM},
                                                                   samples)
               if e["type"] == "sample_finished"}
    return [(results[i].status, results[i].error_type) for i in range(len(names))]


@pytest.fixture(scope="module", params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    if name != "none":
        require_backend(name)
    return name


@pytest.fixture(scope="module")
def alone(backend: str) -> dict[str, tuple[str, str | None]]:
    """Each program's verdict when it is the only sample, on a fresh engine."""
    verdicts = {}
    for name in programs_for(backend):
        with make_engine(backend) as engine:
            verdicts[name] = evaluate(engine, [name])[0]
    return verdicts


@pytest.fixture(scope="module")
def seasoned(backend: str) -> Iterator[Engine]:
    """One engine for every mixed batch: its runner has seen all the others."""
    with make_engine(backend) as engine:
        yield engine


def test_each_program_alone_gets_its_verdict(alone: dict[str, tuple[str, str | None]]) -> None:
    expected = {name: PROGRAMS[name][1:] for name in alone}
    assert alone == expected


@pytest.mark.parametrize("order", range(3))
def test_mixed_batches_give_each_sample_its_verdict_alone(
    backend: str, alone: dict[str, tuple[str, str | None]], seasoned: Engine, order: int,
) -> None:
    names = programs_for(backend, fork_bomb=order == 0) + ["good"] * 3 + ["wrong"]
    random.Random(SEED * 10 + order).shuffle(names)
    verdicts = evaluate(seasoned, names)
    differing = [(position, name, verdict, alone[name])
                 for position, (name, verdict) in enumerate(zip(names, verdicts, strict=True))
                 if verdict != alone[name]]
    assert not differing, f"order {names}: (position, sample, in the batch, alone) {differing}"
    passed_hostile = [name for name, (status, _) in zip(names, verdicts, strict=True)
                      if status == "passed" and name not in WELL_BEHAVED]
    assert not passed_hostile


def test_two_workers_share_the_batch_without_changing_verdicts(
    backend: str, alone: dict[str, tuple[str, str | None]],
) -> None:
    names = programs_for(backend, fork_bomb=False) + ["good"] * 4
    random.Random(SEED).shuffle(names)
    with make_engine(backend, workers=2) as engine:
        verdicts = evaluate(engine, names)
    assert [alone[name] for name in names] == verdicts


def test_sanitizing_keeps_an_endless_loop_that_a_sample_wrote(tmp_path: Path) -> None:
    # The report's own path: sanitizing took the loop for test code and removed it, and
    # the program that ran (the canonical one) passed.
    samples_file = tmp_path / "samples.jsonl"
    samples_file.write_text(
        '{"task_id": "HumanEval/53", "completion": "    return x + y\\n\\nwhile True:\\n'
        '    print(\'y\' * 10000)\\n"}\n')
    read = read_samples(samples_file, [PROBLEM], sanitize=True)
    with make_engine("none") as engine:
        results = [e["result"] for e in engine.evaluate({PROBLEM.task_id: PROBLEM},
                                                        list(read.samples))
                   if e["type"] == "sample_finished"]
    assert results[0].status != "passed"
