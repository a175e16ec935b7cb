"""The evalplus profile's limit on a whole program, by its inputs: EvalPlus gives each of
its two runs (base inputs, then plus inputs) the sum of their limits, at most 60 s, + 1 s;
our program runs both groups in one process, under the sum of the two, in CPU seconds,
and on the wall clock only a little more, so a program that sleeps is stopped about when
EvalPlus would stop it.

Programs here really run, under the `none` backend: the rule, not the sandbox, is under
test (test_profiles.py runs the per-input limits under every backend).
"""

from __future__ import annotations

from dataclasses import replace

from evaluator.engine import Engine, EngineConfig
from evaluator.languages.registry import get_language
from evaluator.profiles import get_profile
from evaluator.records import CallCase, Problem, RunOptions, Sample, SampleResult
from evaluator.records import TestOutcome as Outcome
from evaluator.sandbox.base import SandboxLimits

FIXED = 1.0
"""The run's own CPU limit in these tests (8 s of wall time): under what the inputs' rule
gives."""


def _problem(base: int, plus: int) -> Problem:
    # HumanEval+'s shape: the expected outputs come from the canonical solution.
    return Problem(
        dataset="humanevalplus", task_id="HumanEval/0", language="python",
        natural_language="en", prompt='def add(a, b):\n    """Add two numbers."""\n',
        entry_point="add", canonical_solution="    return a + b\n", test="",
        call_cases=tuple(CallCase(index=i, args=(i, 1), group="base" if i < base else "plus")
                         for i in range(base + plus)))


# Right on every input, and about 0.25 s of CPU on each plus input: within each input's
# 1 s, but 1.25 s in all, past the run's fixed limit.
SLOW_ON_EACH_PLUS_INPUT = (
    "    if a >= 2:\n        import time\n        _end = time.process_time() + 0.25\n"
    "        while time.process_time() < _end:\n            pass\n"
    "    return a + b\n")
# Sleeps on its first input far longer than any limit here: only the wall clock ends it.
SLEEPS = "    import time\n    time.sleep(600)\n    return a + b\n"


def _options(source: str = "profile") -> RunOptions:
    return RunOptions(limits=SandboxLimits.for_timeout(FIXED, memory_mb=512),
                      profile="evalplus", limit_source=source)


def _run(problem: Problem, completion: str, options: RunOptions) -> SampleResult:
    sample = Sample(task_id=problem.task_id, index=0, raw=completion, completion=completion)
    # No retry: the rule is under test, not the verdict's stability under load.
    config = EngineConfig(backend="none", workers=1, options=options, retry_limits=False)
    with Engine(config) as engine:
        (result,) = [e["result"] for e in engine.evaluate({problem.task_id: problem}, [sample])
                     if e["type"] == "sample_finished"]
    return result


def test_the_program_limit_is_the_sum_of_each_groups_capped_input_limits():
    evalplus = get_profile("evalplus")
    # HumanEval+'s usual task: a few base inputs, hundreds of plus inputs (capped at 60).
    assert evalplus.program_time_limits(_problem(3, 500)) == (3 + 1 + 60 + 1,
                                                              65 + 2 + 5)
    assert evalplus.program_time_limits(_problem(2, 10)) == (14, 14 + 2 + 5)
    # Only inputs carry the rule: a program judged by asserts keeps the fixed limit.
    assert evalplus.program_time_limits(replace(_problem(0, 0), call_cases=())) is None
    assert get_profile("strict").program_time_limits(_problem(3, 500)) is None


def test_a_task_with_many_inputs_each_within_its_limit_passes():
    result = _run(_problem(2, 5), SLOW_ON_EACH_PLUS_INPUT, _options())
    assert result.status == "passed", (result.status, result.message)
    assert [t.status for t in result.tests] == ["passed"] * 7
    assert result.facts["cpu_ms"] > FIXED * 1000
    assert result.facts["cpu_limit_ms"] == 9_000
    assert result.facts["limit_rule"] == "evalplus 2"
    assert result.sandbox is not None
    assert result.sandbox.limits["wall_seconds"] == 16


def test_a_limit_the_user_chose_stands():
    result = _run(_problem(2, 5), SLOW_ON_EACH_PLUS_INPUT, _options(source="user"))
    assert result.status == "timeout"
    assert result.facts["cpu_limit_ms"] == FIXED * 1000
    assert "limit_rule" not in result.facts


def test_a_program_that_sleeps_is_stopped_within_the_bound():
    # (2 + 1) + (1 + 1) s of CPU, + 1 s per group + 5 s on the wall clock, more than the
    # run's own 8 s; a run with a larger limit of its own would keep that.
    result = _run(_problem(2, 1), SLEEPS, _options())
    assert result.status == "timeout"
    assert result.facts["killed_for"] == "wall"
    assert result.sandbox is not None
    assert result.sandbox.limits["wall_seconds"] == 12
    # Stopped by that bound, not by the end of its sleep.
    assert result.facts["wall_ms"] < 600_000
    larger = replace(_options(), limits=SandboxLimits.for_timeout(30, memory_mb=512))
    prepared = get_language("python").prepare(
        _problem(2, 1), Sample(task_id="HumanEval/0", index=0, raw=SLEEPS, completion=SLEEPS),
        larger)
    assert prepared.job["limits"]["cpu_seconds"] == 30
    assert prepared.job["limits"]["wall_seconds"] == 95


def _judged(cpu_s: float, *, limit_s: float, rule: str | None,
            killed_for: str | None = None) -> SampleResult:
    facts = {"cpu_ms": cpu_s * 1000, "cpu_limit_ms": limit_s * 1000, "exit_code": 0,
             "finished": killed_for is None, "killed_for": killed_for}
    if rule:
        facts["limit_rule"] = rule
    return SampleResult(task_id="HumanEval/0", completion_id=0,
                        status="passed" if killed_for is None else "timeout",
                        program_hash="x", language="python", profile="evalplus", facts=facts,
                        tests=(Outcome(index=0, source="add(0, 1)", status="passed",
                                           group="base"),))


def test_rejudging_holds_a_result_to_the_limit_its_inputs_gave_it():
    evalplus = get_profile("evalplus")
    # 30 s of CPU is past the fixed 20 s, within the 65 s its inputs gave it.
    assert evalplus.rejudge(_judged(30, limit_s=65, rule="evalplus 2")).status == "passed"
    assert evalplus.rejudge(_judged(30, limit_s=65, rule=None)).status == "timeout"
    assert evalplus.rejudge(_judged(30, limit_s=65, rule="evalplus 1")).status == "timeout"


def test_a_result_stopped_under_the_old_fixed_limit_is_run_again():
    evalplus = get_profile("evalplus")
    old = _judged(20, limit_s=20, rule=None, killed_for="cpu")
    assert "sum of its inputs' limits" in (evalplus.needs_execution(old) or "")
    current = _judged(65, limit_s=65, rule="evalplus 2", killed_for="cpu")
    assert evalplus.needs_execution(current) is None


def test_the_job_carries_the_limit_and_its_hash_depends_on_it():
    python = get_language("python")
    problem = _problem(2, 10)
    sample = Sample(task_id=problem.task_id, index=0, raw="    return a + b\n",
                    completion="    return a + b\n")
    by_inputs = python.prepare(problem, sample, _options())
    chosen = python.prepare(problem, sample, _options(source="user"))
    assert by_inputs.job["limits"]["cpu_seconds"] == 14
    assert by_inputs.job["limits"]["wall_seconds"] == 21
    assert chosen.job["limits"]["cpu_seconds"] == FIXED
    assert by_inputs.program_hash != chosen.program_hash
