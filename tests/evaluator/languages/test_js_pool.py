"""JavaScript's pool: programs run in worker threads of one long-lived node, with the
verdicts a process of their own gives, and nothing one program does reaches another's."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest
from language_support import evaluate_one, gate_answers

from evaluator.engine import Engine, EngineConfig
from evaluator.languages.base import CompileService
from evaluator.languages.js import JavaScript
from evaluator.records import Problem, RunOptions, Sample, SampleResult
from evaluator.sandbox.base import SandboxLimits

JS = JavaScript()
pytestmark = pytest.mark.skipif(JS.available() is not None, reason=f"node: {JS.available()}")

PROMPT = "const add = (a, b) => {\n"
TEST = """const testAdd = () => {
  console.assert(add(1, 2) === 3)
  console.assert(add(2, 2) === 4)
  console.assert(add(-1, 1) === 0)
}
testAdd()
"""
CORRECT = "  return a + b\n}\n"
WRONG = "  return a - b\n}\n"
# In a worker of the pool the global object has no `process`; in a process of its own
# it has. A sloppy function's `this` is the global object.
WHERE = "(function () { console.log(typeof this.process === 'object' ? 'process' : 'worker') })()\n"


def problem(test: str = TEST) -> Problem:
    return Problem(dataset="humaneval-x", task_id="HumanEval/53", language="js",
                   natural_language="en", entry_point="add", source_id="JavaScript/53",
                   prompt=PROMPT, declaration=PROMPT, test=test, example_test="",
                   canonical_solution=CORRECT)


def run(engine: Engine, completion: str, test: str = TEST) -> SampleResult:
    sample = Sample(task_id="HumanEval/53", index=0, raw=completion, completion=completion)
    return evaluate_one(engine, problem(test), sample)


def summary(result: SampleResult) -> tuple[object, ...]:
    return (result.status, result.error_type,
            tuple((t.status, t.expected, t.actual, t.line, t.source) for t in result.tests))


LIMITS = SandboxLimits.for_timeout(1.0, memory_mb=256)
"""One second of CPU time, and the wall clock only as a backstop (8 s), as users run."""


@pytest.fixture(scope="module")
def engine() -> Iterator[Engine]:
    with Engine(EngineConfig(backend="none", workers=2, options=RunOptions(limits=LIMITS))) as eng:
        yield eng


@pytest.fixture(scope="module")
def processes() -> Iterator[Engine]:
    """An engine without services: every program in a node process of its own."""
    with Engine(EngineConfig(backend="none", workers=1, options=RunOptions(limits=LIMITS),
                             warm_compilers=False, retry_limits=False)) as eng:
        yield eng


def test_programs_run_in_the_pool_and_gated_ones_in_a_process(engine: Engine) -> None:
    pooled = run(engine, CORRECT + WHERE)
    assert pooled.status == "passed"
    assert pooled.stdout.strip() == "worker"
    gated = run(engine, CORRECT + "void process.pid;\n" + WHERE)
    assert gated.status == "passed"
    assert gated.stdout.strip() == "process"


SAME_VERDICTS = [
    CORRECT,
    WRONG,
    "  if (a === 2) throw new TypeError('two')\n  return a + b\n}\n",
    "  return a + b\n}\nthrow new Error('after the function')\n",
    "  return a + \n}\n}\n",
    "  console.log('debug', [1, {a: 2}]); console.error('err')\n  return a + b\n}\n",
    "  return a + b\n}\nsetTimeout(() => { throw new Error('late') }, 5)\n",
    "  return a + b\n}\nPromise.reject(new Error('unhandled'))\n",
    "  const md5 = require('js-md5'); const _ = require('lodash')\n"
    "  return _.isEqual([md5('a')], ['0cc175b9c0f1b6a831c399e269772661']) ? a + b : 0\n}\n",
    "  const deep = (n) => n === 0 ? 0 : 1 + deep(n - 1)\n  return deep(1e6) + a + b\n}\n",
    "  return a + b\n}\nmodule.exports = { add }\n",
]


@pytest.mark.parametrize("completion", SAME_VERDICTS)
def test_the_pool_gives_the_verdicts_of_a_process(engine: Engine, processes: Engine,
                                                  completion: str) -> None:
    pooled = run(engine, completion)
    alone = run(processes, completion)
    assert summary(pooled) == summary(alone)


NODE_ASSERT_TEST = """const assert = require('node:assert');
function test() {
  let candidate = add;
  assert.deepEqual(candidate(1, 2), 3);
  assert.deepEqual(candidate(2, 2), 5);
}
test();
"""


def test_node_assert_tests_keep_their_records(engine: Engine, processes: Engine) -> None:
    pooled = run(engine, CORRECT + WHERE, NODE_ASSERT_TEST)
    assert pooled.stdout.strip() == "worker"
    assert [t.status for t in pooled.tests] == ["passed", "failed"]
    assert pooled.tests[1].expected == "5"
    assert pooled.tests[1].actual == "4"
    assert summary(pooled) == summary(run(processes, CORRECT, NODE_ASSERT_TEST))


# -- limits and hostile programs ---------------------------------------------------------


def test_an_endless_loop_is_stopped_by_its_cpu_time(engine: Engine) -> None:
    result = run(engine, "  while (true) {}\n}\n")
    assert result.status == "timeout"
    assert result.message == "the program exceeded its CPU time limit"
    assert run(engine, CORRECT).status == "passed"


def test_waiting_is_not_cpu_time(engine: Engine) -> None:
    # Two seconds of waiting under a one-second CPU limit.
    result = run(engine, CORRECT + "setTimeout(() => console.log('woke'), 2000)\n")
    assert result.status == "passed"
    assert result.stdout.strip() == "woke"


def test_flooding_output_is_stopped(engine: Engine) -> None:
    result = run(engine, "  while (true) console.log('x'.repeat(10000))\n}\n")
    assert result.status == "error"
    assert result.error_type == "OutputLimitExceeded"
    assert run(engine, CORRECT).status == "passed"


def test_unbounded_allocation_is_a_memory_verdict(engine: Engine) -> None:
    result = run(engine, "  const keep = []\n  while (true) keep.push(new Array(1e6).fill(a))\n}\n")
    assert result.status == "memory"
    assert run(engine, WRONG).status == "failed"
    assert run(engine, CORRECT).status == "passed"


ESCAPES = """  const found = []
  const tries = {
    thisProcess: () => (function () { return this.process })(),
    functionProcess: () => (() => {}).constructor('return this')().process,
    thisRequire: () => (function () { return this.require || this.module })(),
    moduleRequire: () => module.require,
  }
  for (const [name, get] of Object.entries(tries)) {
    try { if (get()) found.push(name) } catch (err) { }
  }
  console.log(JSON.stringify(found))
  return a - b
}
"""


def test_a_program_reaches_neither_process_nor_the_pool(engine: Engine) -> None:
    # `module` sends this one to a process of its own; without it, the worker's global
    # object has no process to find.
    result = run(engine, ESCAPES.replace("module.require", "undefined"))
    assert set(result.stdout.split()) == {"[]"}
    assert result.status == "failed"


FORGERIES = [
    # The recorder is frozen: replacing its checks changes nothing.
    "  return a - b\n}\ntry { arguments[5].compare = () => {} } catch (e) { }\n",
    "  return a - b\n}\ntry { __evaluator__.compare = () => {} } catch (e) { }\n",
    # Lines that look like records, on stdout and stderr.
    "  return a - b\n}\nconsole.log('0 {\"kind\": \"done\", \"tests\": 3}')\n"
    "console.error('{\"kind\": \"test\", \"status\": \"passed\"}')\n",
]


@pytest.mark.parametrize("completion", FORGERIES)
def test_forged_results_do_not_pass(engine: Engine, completion: str) -> None:
    result = run(engine, completion)
    assert result.status in ("failed", "error")
    assert run(engine, CORRECT).status == "passed"


def test_a_failing_pool_falls_back_to_a_process(monkeypatch: pytest.MonkeyPatch) -> None:
    broken = CompileService(name="js-pool", argv=("node", "-e", "process.exit(7)"),
                            extra_processes=48)
    monkeypatch.setattr(JavaScript, "compile_service",
                        lambda self, limits: (setattr(self, "_pool_wait", 600.0), broken)[1])
    with Engine(EngineConfig(backend="none", workers=1, options=RunOptions(limits=LIMITS))) as eng:
        passed = run(eng, CORRECT + WHERE)
        failed = run(eng, WRONG)
    assert passed.status == "passed"
    assert passed.stdout.strip() == "process"
    assert failed.status == "failed"


def test_a_pool_failure_is_not_held_against_it_when_the_program_fails_alike(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # A program that takes the pool down (V8 aborting, say) and then ends by a limit in
    # a process of its own too is the program's doing: the engine keeps using the pool.
    broken = CompileService(name="js-pool", argv=("node", "-e", "process.exit(7)"),
                            extra_processes=48)
    monkeypatch.setattr(JavaScript, "compile_service",
                        lambda self, limits: (setattr(self, "_pool_wait", 600.0), broken)[1])
    with Engine(EngineConfig(backend="none", workers=1, options=RunOptions(limits=LIMITS),
                             retry_limits=False)) as eng:
        for _ in range(3):
            assert run(eng, "  while (true) {}\n}\n").status == "timeout"
        assert eng._service_failures.get("js-pool", 0) == 0
        assert run(eng, CORRECT).status == "passed"
        assert eng._service_failures.get("js-pool", 0) == 1


def test_a_long_wall_limit_runs_in_a_process() -> None:
    options = RunOptions(limits=SandboxLimits(wall_seconds=900, cpu_seconds=2, memory_mb=256))
    with Engine(EngineConfig(backend="none", workers=1, options=options)) as eng:
        result = run(eng, CORRECT + WHERE)
    assert result.status == "passed"
    assert result.stdout.strip() == "process"


# -- the gate ----------------------------------------------------------------------------


GATE_CASES = {
    "const x = [1, 2].map((v) => v * 2)": "",
    "const md5 = require('js-md5')": "",
    "const _ = require(\"lodash\"); module.exports = _": "",
    "const o = { process: 1, eval: 2 }; o.process + o.eval": "",
    "process.exit(0)": "it uses `process`",
    "const { exit } = process": "it uses `process`",
    "require('fs')": "it uses `require`",
    "const r = require; r('lodash')": "it uses `require`",
    "require('lo' + 'dash')": "it uses `require`",
    "module.require('fs')": "it uses `module`",
    "globalThis['pro' + 'cess']": "it uses `globalThis`",
    "eval('1')": "it uses `eval`",
    "new Function('return 1')": "it uses `Function`",
    "import('fs')": "it uses import()",
    "const o = { [process]: 1 }": "it uses `process`",
    "function f( {": "it does not parse",
    "const big = new Uint8Array(1 << 30)": "it uses `Uint8Array`",
}


def test_the_gate() -> None:
    assert gate_answers("gate.needsOwnProcess(c, acorn)", GATE_CASES) == GATE_CASES


def test_the_pool_answers_the_limits_it_was_given() -> None:
    request = JS.prepare(problem(), Sample(task_id="HumanEval/53", index=0, raw=CORRECT,
                                           completion=CORRECT),
                         replace(RunOptions(), limits=SandboxLimits(memory_mb=300)))
    assert request.context["pool"]["limits"]["memory_mb"] == 300
    assert request.context["pool"]["offset"] == len(PROMPT + CORRECT + "\n")
