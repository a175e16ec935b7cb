"""Harness profiles: each names whose rules judge, every result records it, and a run is
re-judged under another profile from its recorded facts, running again only what differs.

Programs here really run (under the `none` backend: the rules, not the sandbox, are under
test; the sandbox tests run every backend). Where a case needs a toolchain that is not
installed, it is skipped with the reason.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from evaluator.engine import Engine, EngineConfig
from evaluator.profiles import (
    BIGCODE_STOP,
    PROFILES,
    default_profile,
    get_profile,
    run_facts,
)
from evaluator.records import CallCase, Problem, RunOptions, Sample, SampleResult
from evaluator.rescoring import compare, rescore
from evaluator.sandbox.base import SandboxLimits
from tests.backends import require_backend

ROOT = Path(__file__).resolve().parents[2]
LIMITS = SandboxLimits(wall_seconds=60, cpu_seconds=10, memory_mb=512)

ADD = Problem(
    dataset="toy", task_id="HumanEval/0", language="python", natural_language="en",
    prompt='def add(a, b):\n    """Add two numbers."""\n', entry_point="add",
    canonical_solution="    return a + b\n",
    test="\n\ndef check(candidate):\n    assert candidate(1, 2) == 3\n"
         "    assert candidate(0, 0) == 0\n",
)
PROBLEMS = {ADD.task_id: ADD}

RIGHT = "    return a + b\n"
# Right, then a top-level line that fails: bigcode's stop sequence "\nif" cuts it off.
RIGHT_THEN_JUNK = "    return a + b\n\nif True:\n    raise ValueError('junk after the function')\n"
# Right, but slow: about 4 s of CPU before the tests run.
SLOW = ("    return a + b\n\nimport time\n_end = time.process_time() + 4\n"
        "while time.process_time() < _end:\n    pass\n")


def _sample(completion: str, index: int = 0) -> Sample:
    return Sample(task_id=ADD.task_id, index=index, raw=completion, completion=completion)


def _evaluate(samples: list[Sample], profile: str,
              problems: dict[str, Problem] = PROBLEMS) -> list[SampleResult]:
    with _engine(profile) as engine:
        found = {e["position"]: e["result"] for e in engine.evaluate(problems, samples)
                 if e["type"] == "sample_finished"}
    return [found[i] for i in range(len(samples))]


def _engine(profile: str) -> Engine:
    return Engine(EngineConfig(backend="none", workers=1,
                               options=RunOptions(limits=LIMITS, profile=profile)))


def test_every_result_records_its_profile_and_the_facts_of_its_execution():
    (result,) = _evaluate([_sample(RIGHT)], "humaneval")
    assert result.status == "passed"
    assert result.profile == "humaneval"
    assert result.facts["exit_code"] == 0
    assert result.facts["finished"] is True
    assert result.facts["cpu_limit_ms"] == LIMITS.cpu_seconds * 1000
    assert result.facts["cpu_ms"] is not None
    assert SampleResult.from_dict(json.loads(json.dumps(result.to_dict()))) == result


def test_each_dataset_defaults_to_its_own_reference_harness():
    assert default_profile("humaneval").name == "humaneval"
    assert default_profile("humaneval-x").name == "codegeex"
    assert default_profile("humanevalplus").name == "evalplus"
    assert default_profile("multipl-e").name == "multipl-e"
    # A dataset whose reference harness we do not reproduce is judged by our own rules.
    assert default_profile("mera-ruhumaneval").name == "strict"


def test_every_profile_is_documented_point_by_point():
    for profile in PROFILES.values():
        aspects = {point.aspect for point in profile.points}
        assert {"limits", "flags", "pass", "post-processing"} <= aspects, profile.name
        assert profile.reference
        assert profile.version
    with pytest.raises(ValueError, match="unknown harness profile 'nope'"):
        get_profile("nope")


def test_a_shorter_limit_is_judged_from_the_cpu_time_without_running_again():
    samples = [_sample(RIGHT, 0), _sample(SLOW, 1)]
    strict = _evaluate(samples, "strict")
    assert [r.status for r in strict] == ["passed", "passed"]
    assert strict[1].facts["cpu_ms"] > 3000

    def must_not_run(_profile):
        raise AssertionError("nothing needs to run again for a shorter limit")

    rescored = rescore(samples, strict, PROBLEMS, get_profile("humaneval"), must_not_run)
    assert rescored.executed == 0
    assert rescored.rejudged == 2
    assert [r.status for r in rescored.results] == ["passed", "timeout"]
    assert "3 s limit" in rescored.results[1].message
    assert all(r.profile == "humaneval" for r in rescored.results)
    # Judged directly under humaneval, the verdicts are the same.
    assert [r.status for r in _evaluate(samples, "humaneval")] == ["passed", "timeout"]


def test_a_longer_limit_than_the_run_was_stopped_at_needs_a_new_execution():
    stopped = SampleResult(task_id=ADD.task_id, completion_id=0, status="timeout",
                           program_hash="x", language="python",
                           facts={"killed_for": "cpu", "cpu_limit_ms": 10000.0,
                                  "cpu_ms": 10000.0})
    assert "before this profile's 15 s limit" in (
        get_profile("multipl-e").needs_execution(stopped) or "")
    assert get_profile("humaneval").needs_execution(stopped) is None
    assert get_profile("humaneval").rejudge(stopped).status == "timeout"
    legacy = SampleResult(task_id=ADD.task_id, completion_id=0, status="passed",
                          program_hash="x")
    assert "no execution facts" in (get_profile("codegeex").needs_execution(legacy) or "")


def test_post_processing_runs_again_only_the_samples_whose_text_it_changes():
    samples = [_sample(RIGHT, 0), _sample(RIGHT_THEN_JUNK, 1)]
    humaneval = _evaluate(samples, "humaneval")
    assert [r.status for r in humaneval] == ["passed", "error"]
    runs: list[str] = []

    def engine_for(profile):
        runs.append(profile.name)
        return _engine(profile.name)

    bigcode = rescore(samples, humaneval, PROBLEMS, get_profile("bigcode"), engine_for)
    assert runs == ["bigcode"]
    assert bigcode.executed == 1
    assert bigcode.rejudged == 1
    assert "post-processing" in next(iter(bigcode.reasons))
    assert [r.status for r in bigcode.results] == ["passed", "passed"]
    comparison = compare([
        rescore(samples, humaneval, PROBLEMS, get_profile("humaneval"), engine_for),
        bigcode,
    ])
    assert comparison.pass_at_1 == {"humaneval": 0.5, "bigcode": 1.0}
    (dependent,) = comparison.dependent
    assert dependent.task_id == ADD.task_id
    assert dependent.passed == {"humaneval": 1, "bigcode": 2}
    assert "passes under bigcode, error under humaneval" in dependent.reason
    assert "junk after the function" in dependent.reason


def test_bigcode_cuts_at_its_stop_sequences_and_only_in_python():
    bigcode = get_profile("bigcode")
    for stop in BIGCODE_STOP:
        assert bigcode.prepare_text(f"    return 1{stop} rest", "python") == "    return 1"
    assert bigcode.prepare_text("    # a comment\n    return 1\n", "python") == (
        "    # a comment\n    return 1\n")
    assert bigcode.prepare_text("  return 1;\n}\nif (x) {}", "js") == "  return 1;\n}\nif (x) {}"


def test_codegeex_cuts_python_at_the_first_line_that_is_not_indented():
    codegeex = get_profile("codegeex")
    text = "    x = 1\n\n    return x\nprint('after')\n    more\n"
    assert codegeex.prepare_text(text, "python") == "    x = 1\n\n    return x\n"
    # The first line counts too: a completion that re-emits the function is cut to nothing.
    assert codegeex.prepare_text("def add(a, b):\n    return a + b\n", "python") == ""
    assert codegeex.prepare_text("    return 1\n", "python") == "    return 1\n"
    assert codegeex.prepare_text("    return 1", "python") == "    return 1"


def test_exit_zero_rules_pass_an_early_exit_that_our_rules_call_an_error():
    facts = run_facts({"steps": [{"name": "run", "exit_code": 0, "stdout": "",
                                  "stderr": "", "cpu_ms": 3.0, "wall_ms": 4.0}],
                       "records": []}, 10.0)
    early = SampleResult(task_id="HumanEval/0", completion_id=0, status="error",
                         error_type="IncompleteRun", program_hash="x", language="cpp",
                         message="the program ended (exit status 0) before its tests "
                                 "finished", facts=facts)
    assert get_profile("codegeex").rejudge(early).status == "passed"
    assert get_profile("multipl-e").rejudge(early).status == "passed"
    assert get_profile("strict").rejudge(early).status == "error"
    # Re-judging is idempotent and reversible: the strict verdict is kept in the facts.
    back = get_profile("strict").rejudge(get_profile("codegeex").rejudge(early))
    assert (back.status, back.error_type, back.message) == (
        early.status, early.error_type, early.message)


def test_codegeex_fails_javascript_that_writes_output():
    facts = run_facts({"steps": [{"name": "run", "exit_code": 0, "stdout": "debug\n",
                                  "stderr": "", "cpu_ms": 3.0}],
                       "records": [{"kind": "done"}]}, 10.0)
    chatty = SampleResult(task_id="HumanEval/0", completion_id=0, status="passed",
                          program_hash="x", language="js", facts=facts)
    judged = get_profile("codegeex").rejudge(chatty)
    assert (judged.status, judged.error_type) == ("failed", "WroteOutput")
    assert get_profile("multipl-e").rejudge(chatty).status == "passed"
    cpp = get_profile("codegeex").rejudge(SampleResult(
        task_id="HumanEval/0", completion_id=0, status="passed", program_hash="x",
        language="cpp", facts=facts))
    assert cpp.status == "passed"


def test_an_exception_our_harness_caught_is_an_exit_status_of_one():
    """Our Python harness catches what escapes the program to report it, and exits 0
    itself; the program alone would have exited 1 (a SystemExit(0) would not)."""
    samples = [_sample("    return a + b\n\nundefined_name\n", 0),
               _sample("    return a + b\n\nimport sys\nsys.exit(0)\n", 1)]
    strict = _evaluate(samples, "strict")
    assert strict[0].facts["exit_code"] == 0
    assert strict[0].facts["uncaught"]["error_type"] == "NameError"
    multipl_e = [get_profile("multipl-e").rejudge(r).status for r in strict]
    assert multipl_e == ["error", "passed"]
    assert [r.status for r in _evaluate(samples, "multipl-e")] == ["error", "passed"]


def test_a_failing_test_is_never_passed_by_an_exit_status_rule():
    from evaluator.records import TestOutcome

    facts = run_facts({"steps": [{"name": "run", "exit_code": 0, "stdout": "",
                                  "stderr": ""}], "records": []}, 10.0)
    failing = SampleResult(task_id="HumanEval/0", completion_id=0, status="failed",
                           program_hash="x", language="cpp", facts=facts,
                           tests=(TestOutcome(index=0, source="f(1) == 2", status="failed"),))
    assert get_profile("codegeex").rejudge(failing).status == "failed"


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed")
def test_cpp_exit_zero_before_the_tests_under_strict_and_codegeex():
    problem = Problem(
        dataset="humaneval-x", task_id="HumanEval/0", language="cpp", natural_language="en",
        prompt="#include<stdio.h>\nint add(int a, int b){\n", entry_point="add",
        canonical_solution="    return a + b;\n}\n",
        test="#undef NDEBUG\n#include<assert.h>\nint main(){\n    assert (add(1, 2) == 3);\n}\n",
    )
    problems = {problem.task_id: problem}
    samples = [Sample(task_id=problem.task_id, index=0, raw="", completion=text)
               for text in ("    return a + b;\n}\n", "    exit(0);\n}\n")]
    strict = _evaluate(samples, "strict", problems)
    assert [r.status for r in strict] == ["passed", "error"]

    def must_not_run(_profile):
        raise AssertionError("the same C++ program runs under both profiles")

    codegeex = rescore(samples, strict, problems, get_profile("codegeex"), must_not_run)
    assert [r.status for r in codegeex.results] == ["passed", "passed"]
    assert [r.status for r in _evaluate(samples, "codegeex", problems)] == [
        "passed", "passed"]


def _java_available() -> bool:
    from evaluator.languages import get_language

    return get_language("java").available() is None


@pytest.mark.skipif(not _java_available(), reason="no JDK here")
def test_java_runs_without_ea_under_codegeex_only_when_an_assert_is_there_to_skip():
    from evaluator.languages import get_language

    problem = Problem(
        dataset="humaneval-x", task_id="HumanEval/0", language="java", natural_language="en",
        prompt="import java.util.*;\n\nclass Solution {\n    public int add(int a, int b) {\n",
        entry_point="add", canonical_solution="        return a + b;\n    }\n}\n",
        test="public class Main {\n    public static void main(String[] args) {\n"
             "        Solution s = new Solution();\n"
             "        if (s.add(1, 2) != 3) {\n            throw new AssertionError();\n"
             "        }\n    }\n}\n",
    )
    java = get_language("java")
    plain = Sample(task_id=problem.task_id, index=0, raw="",
                   completion="        return a + b;\n    }\n}\n")
    asserting = Sample(task_id=problem.task_id, index=1, raw="",
                       completion="        assert a < 0;\n        return a + b;\n    }\n}\n")

    def digest(sample, profile):
        return java.prepare(problem, sample, RunOptions(profile=profile)).program_hash

    assert digest(plain, "strict") == digest(plain, "codegeex")
    assert digest(asserting, "strict") != digest(asserting, "codegeex")
    problems = {problem.task_id: problem}
    assert [r.status for r in _evaluate([plain, asserting], "strict", problems)] == [
        "passed", "error"]
    assert [r.status for r in _evaluate([plain, asserting], "codegeex", problems)] == [
        "passed", "passed"]


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "evaluator", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=600, check=False)


def test_the_cli_lists_the_profiles_and_refuses_an_unknown_one(tmp_path):
    listed = _cli("profiles")
    assert listed.returncode == 0, listed.stderr
    for name in PROFILES:
        assert f"\n{name} " in f"\n{listed.stdout}"
    refused = _cli("evaluate", "--samples", str(tmp_path / "x.jsonl"), "--profile", "nope")
    assert refused.returncode == 2
    assert "invalid choice: 'nope'" in refused.stderr


def test_the_cli_compares_the_profiles_on_a_file(tmp_path):
    samples = tmp_path / "samples.jsonl"
    samples.write_text("".join(json.dumps({"task_id": "HumanEval/0", "completion": c}) + "\n"
                               for c in ("    return sum(numbers)\n",)), encoding="utf-8")
    done = _cli("profiles", "--samples", str(samples), "--sandbox", "none", "--no-cache",
                "--workers", "1", "--compare", "humaneval,bigcode,strict", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["baseline"] == "humaneval"
    assert [p["name"] for p in report["profiles"]] == ["humaneval", "bigcode", "strict"]
    assert all(p["rejudged"] + p["executed_again"] == 1 for p in report["profiles"])


# -- EvalPlus's per-input time limits ------------------------------------------------------

# HumanEval+'s shape: the expected outputs come from the canonical solution.
ADD_PLUS = Problem(
    dataset="humanevalplus", task_id="HumanEval/0", language="python", natural_language="en",
    prompt=ADD.prompt, entry_point="add", canonical_solution="    return a + b\n", test="",
    call_cases=tuple(CallCase(index=i, args=(i, 1), group="base" if i < 2 else "plus")
                     for i in range(3)),
)
# Right on every input, but about 1.5 s of CPU on the last one, and it tries to swallow
# whatever interrupts it.
SLOW_ON_ONE_INPUT = (
    "    if a == 2:\n        import time\n        _end = time.process_time() + 1.5\n"
    "        while time.process_time() < _end:\n            try:\n                pass\n"
    "            except Exception:\n                pass\n"
    "    return a + b\n")


@pytest.mark.parametrize("backend", ["none", "bwrap", "gvisor"])
def test_evalplus_limits_each_input_to_4x_the_canonical_solution_and_at_least_1s(backend):
    # The per-input limit is a CPU-time alarm inside the program: every sandbox must
    # deliver it.
    if backend != "none":
        require_backend(backend)
    sample = _sample(SLOW_ON_ONE_INPUT)
    options = RunOptions(limits=LIMITS, profile="evalplus")
    with Engine(EngineConfig(backend=backend, workers=1, options=options)) as engine:
        (evalplus,) = [e["result"] for e in engine.evaluate({ADD_PLUS.task_id: ADD_PLUS},
                                                            [sample])
                       if e["type"] == "sample_finished"]
    assert evalplus.status == "timeout"
    assert evalplus.error_type == "InputTimeout"
    assert [t.status for t in evalplus.tests] == ["passed", "passed", "timeout"]
    assert "at least 1 s" in (evalplus.tests[2].message or "")
    # Without per-input limits, 1.5 s is well within the program's own limit.
    (strict,) = _evaluate([sample], "strict", {ADD_PLUS.task_id: ADD_PLUS})
    assert strict.status == "passed"


def test_a_fast_candidate_passes_under_evalplus_input_limits():
    (result,) = _evaluate([_sample(RIGHT)], "evalplus", {ADD_PLUS.task_id: ADD_PLUS})
    assert result.status == "passed"
    assert [t.status for t in result.tests] == ["passed"] * 3


def test_rescoring_into_evalplus_runs_call_case_programs_again():
    sample = _sample(SLOW_ON_ONE_INPUT)
    problems = {ADD_PLUS.task_id: ADD_PLUS}
    (strict,) = _evaluate([sample], "strict", problems)
    rescored = rescore([sample], [strict], problems, get_profile("evalplus"),
                       lambda profile: _engine(profile.name))
    assert rescored.executed == 1
    assert list(rescored.reasons) == ["evalplus limits each input's time"]
    assert rescored.results[0].status == "timeout"
