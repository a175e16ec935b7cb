"""JavaScript's realms: most programs run one after another in one worker thread of the
pool, each in a realm of its own (runtime/js/realm.js). These tests try what a hostile
program would, to reach the host's objects, to change what the next program sees, to
forge records, or to outlive its own run, and check that each is contained and that
verdicts are those of a process of its own."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator

import pytest
from language_support import evaluate_one, gate_answers

from evaluator.engine import Engine, EngineConfig
from evaluator.languages.js import RUNTIME, JavaScript, node_modules
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
# Where a program ran, as the program sees it: a realm has no timers on its global
# object, a worker of its own has them but no `process`, a process has both.
WHERE = (";(function () { console.log(typeof this.setTimeout !== 'function' ? 'realm'"
         " : typeof this.process === 'object' ? 'process' : 'worker') })()\n")
LIMITS = SandboxLimits.for_timeout(1.0, memory_mb=256)


def problem(test: str = TEST) -> Problem:
    return Problem(dataset="humaneval-x", task_id="HumanEval/53", language="js",
                   natural_language="en", entry_point="add", source_id="JavaScript/53",
                   prompt=PROMPT, declaration=PROMPT, test=test, example_test="",
                   canonical_solution=CORRECT)


def run(engine: Engine, completion: str, test: str = TEST) -> SampleResult:
    sample = Sample(task_id="HumanEval/53", index=0, raw=completion, completion=completion)
    return evaluate_one(engine, problem(test), sample)


def summary(result: SampleResult) -> tuple[object, ...]:
    return (result.status, result.error_type, result.stdout,
            tuple((t.status, t.expected, t.actual, t.line, t.source, t.error_type, t.message)
                  for t in result.tests))


@pytest.fixture(scope="module")
def engine() -> Iterator[Engine]:
    """One runner, so that consecutive programs share its pool and realm worker."""
    with Engine(EngineConfig(backend="none", workers=1, options=RunOptions(limits=LIMITS))) as eng:
        yield eng


@pytest.fixture(scope="module")
def processes() -> Iterator[Engine]:
    """Every program in a node process of its own, as before the pool."""
    with Engine(EngineConfig(backend="none", workers=1, options=RunOptions(limits=LIMITS),
                             warm_compilers=False, retry_limits=False)) as eng:
        yield eng


def where(result: SampleResult) -> str:
    return result.stdout.strip().splitlines()[-1]


def test_a_plain_program_runs_in_a_realm_and_others_elsewhere(engine: Engine) -> None:
    assert where(run(engine, CORRECT + WHERE)) == "realm"
    assert where(run(engine, CORRECT + "setTimeout(() => {}, 1)\n" + WHERE)) == "worker"
    assert where(run(engine, CORRECT + "i = 0\n" + WHERE)) == "worker"  # an undeclared global
    assert where(run(engine, CORRECT + "void process.pid\n" + WHERE)) == "process"


SAME_VERDICTS = [
    CORRECT,
    WRONG,
    "  'use strict'\n  return a + b\n}\n",
    "  return Math.max(a + b, Number.MIN_SAFE_INTEGER)\n}\nconst Map = 1\nclass Set {}\n",
    "  return a + b\n}\nconsole.log('out', [1, 'two', { three: [3] }], null)\n"
    "console.error('err', -0)\n",
    "  return a + b\n}\nconsole.log('%s is %d, %j %o', 'x', 42, { a: 1 }, [1])\n",
    "  if (a === 2) throw new TypeError('two')\n  return a + b\n}\n",
    "  return a + b\n}\nPromise.reject(new Error('unhandled'))\n",
    "  return a + b\n}\n(async () => { await null; console.log('later') })()\n",
    "  return a + \n}\n}\n",
    "  const deep = (n) => n === 0 ? 0 : 1 + deep(n - 1)\n  return deep(1e6) + a + b\n}\n",
    "  return a + b\n}\nmodule.exports = { add }\n",
    # Values a realm will not show: the program is run again in a worker of its own.
    "  class Sum { constructor(v) { this.v = v } }\n  return new Sum(a + b)\n}\n",
    "  return new Map([[a, b]])\n}\n",
    "  return a + b\n}\nconsole.log(new Error('shown'))\n",
    "  return { [Symbol.for('nodejs.util.inspect.custom')]: () => 'custom', sum: a + b }\n}\n",
    "  return { get sum() { return a + b } }\n}\n",
]


@pytest.mark.parametrize("completion", SAME_VERDICTS)
def test_a_realm_gives_the_verdicts_of_a_process(engine: Engine, processes: Engine,
                                                 completion: str) -> None:
    pooled = run(engine, completion)
    alone = run(processes, completion)
    assert summary(pooled)[:2] == summary(alone)[:2]
    assert summary(pooled)[3] == summary(alone)[3]
    if "Error(" not in completion:  # a stack trace names the files it passed through
        assert summary(pooled) == summary(alone)


# -- reaching the host -------------------------------------------------------------------

# Looks for an object of the host's everywhere a program can reach: such an object's
# `.constructor.constructor` is a Function that compiles code, where the realm's refuses.
PROBE = """
const found = [];
const seen = new Set();
const isHost = (o, where) => {
  if (o === null || (typeof o !== 'object' && typeof o !== 'function') || seen.has(o)) return;
  seen.add(o);
  let F;
  try { F = o.constructor && o.constructor.constructor; } catch (e) { return; }
  if (typeof F !== 'function') return;
  try { found.push(where + ':' + F('return typeof process')()); } catch (e) { }
};
const probe = (o, where, depth = 0) => {
  isHost(o, where);
  if (depth > 2 || o === null || (typeof o !== 'object' && typeof o !== 'function')) return;
  let keys = [];
  try { keys = Reflect.ownKeys(o); } catch (e) { return; }
  for (const k of keys) {
    let v;
    try { v = o[k]; } catch (e) { isHost(e, where + '!' + String(k)); continue; }
    probe(v, where + '.' + String(k), depth + 1);
  }
  try { probe(Object.getPrototypeOf(o), where + '.__proto__', depth + 1); } catch (e) { }
};
const realmGlobal = (function () { return this; })();
// A proxy whose every trap looks at what it is handed (not while it is looking already).
let looking = false;
const look = (args, where) => {
  if (looking) return;
  looking = true;
  try { args.forEach((a, i) => probe(a, where + i)); } finally { looking = false; }
};
const trap = new Proxy(function () {}, new Proxy({}, {
  get: (t, name) => (...args) => { look(args, 'trap.' + name); return Reflect[name](...args); },
}));
"""
REPORT = "console.log(JSON.stringify(found))\n"

REACH = {
    "the objects it is given": """
probe(this, 'this'); probe(arguments, 'arguments'); probe(realmGlobal, 'global');
const inherited = ['constructor', 'hasOwnProperty', 'toString', 'valueOf', '__proto__'];
for (const name of inherited) {
  probe(realmGlobal[name], 'global.' + name);
}
probe(realmGlobal.console, 'console'); probe(arguments[2], 'module');
try { arguments[1]('fs'); } catch (e) { probe(e, 'require'); }
try { probe(arguments.callee.caller, 'caller'); } catch (e) { }
""",
    "a stack-trace hook": """
const hook = (err, trace) => {
  look([trace, ...trace.map((c) => c.getFunction()), ...trace.map((c) => c.getThis())], 'hook');
  found.push('hook ran');
  return 'hooked';
};
const key = 'prepare' + 'StackTrace';
try { Error[key] = hook; } catch (e) { probe(e, 'set'); }
try { Object.defineProperty(Error, key, { value: hook }); } catch (e) { probe(e, 'define'); }
try { realmGlobal.Error = { [key]: hook }; } catch (e) { probe(e, 'global'); }
try { delete realmGlobal.Error; } catch (e) { probe(e, 'delete'); }
const err = new TypeError('boom');
Object.defineProperty(err, 'name', { get: trap });
void String(err.stack);
console.assert(false, err);
""",
    "values the host shows": """
const getter = { get x() { look([arguments], 'getter'); return 1; } };
const custom = {
  [Symbol.for('nodejs.util.inspect.custom')]: (d, o, i) => {
    look([o, i], 'custom');
    return 'custom';
  },
};
const values = [trap, getter, [trap], { a: trap }, new Map([[1, trap]]), Object.create(trap),
  { toString: trap }, custom];
for (const v of values) {
  console.log(v); console.log('%s %d %j %o', v, v, v, v); console.assert(false, v);
}
Object.defineProperty(Object.prototype, Symbol.toStringTag, { get: trap, configurable: true });
Object.defineProperty(Array, Symbol.hasInstance, { value: trap, configurable: true });
console.log({}, [1, 2]);
""",
    "errors at the stack's limit": """
let caught = 0;
const deep = (n) => {
  try { return deep(n + 1); } catch (e) {
    if (caught++ > 50) throw e;
    isHost(e, 'overflow');
    try { console.log(n); } catch (e2) { isHost(e2, 'log'); }
    try { void new Error('x').stack; } catch (e3) { isHost(e3, 'stack'); }
    try { Promise.reject(1).catch(() => {}); } catch (e4) { isHost(e4, 'reject'); }
    throw e;
  }
};
try { deep(0); } catch (e) { }
""",
    "an unhandled rejection": """
Object.setPrototypeOf(Promise.prototype, trap);
Promise.resolve().then(() => console.log(JSON.stringify(found)));
Promise.reject(trap);
""",
}


# Runs programs one after another in one realm worker, as the pool does, and prints every
# message each sent until it ended, including after the realm refused to show a value
# (where the pool would have stopped the worker and run the program elsewhere).
DRIVER = r"""
const { Worker } = require('worker_threads');
const [runtime, modules] = process.argv.slice(1);
const acorn = require(modules + '/acorn');
const { rewrite } = require(runtime + '/harness.js');
const { classify } = require(runtime + '/gate.js');
const jobs = JSON.parse(require('fs').readFileSync(0, 'utf8'));
const worker = new Worker(runtime + '/realm-worker.js',
  { stdout: true, stderr: true, resourceLimits: { maxOldGenerationSizeMb: 256 } });
const results = [];
let current = null;
worker.on('message', (message) => {
  if (message && message.tid) return next();
  current.push(message);
  if (message && message.end) next();
});
worker.on('error', (err) => {
  console.log(JSON.stringify({ error: String(err) }));
  process.exit(1);
});
function next() {
  if (current) results.push(current);
  if (jobs.length === 0) {
    console.log(JSON.stringify(results));
    return process.exit(0);
  }
  const { program, offset } = jobs.shift();
  const gate = classify(program, acorn);
  current = [{ tier: gate.tier }];
  worker.postMessage({ nonce: 'N', program, offset, filename: '/nowhere/program.js',
    prepared: rewrite(program.slice(offset), acorn), lexical: gate.lexical || [] });
}
"""


def in_one_realm_worker(completions: list[str]) -> list[list[object]]:
    """Each program's messages, the first saying which tier the gate chose."""
    jobs = [{"program": PROMPT + c + "\n" + TEST, "offset": len(PROMPT + c + "\n")}
            for c in completions]
    found = subprocess.run(["node", "-e", DRIVER, str(RUNTIME), str(node_modules())],
                           input=json.dumps(jobs), capture_output=True, text=True, check=True,
                           timeout=120)
    return list(json.loads(found.stdout))


@pytest.mark.parametrize("attempt", list(REACH))
def test_a_program_finds_no_object_of_the_hosts(attempt: str) -> None:
    [messages] = in_one_realm_worker([WRONG + PROBE + REACH[attempt] + REPORT])
    assert messages[0] == {"tier": "realm"}
    printed = [m["data"] for m in messages if isinstance(m, dict) and m.get("fd") == 1]
    reports = [line for line in printed if line.startswith("[") and not line.startswith("[F")]
    assert reports, printed
    assert all(json.loads(line) == [] for line in reports), reports
    assert isinstance(messages[-1], dict)
    assert "end" in messages[-1]


def test_what_the_host_would_not_show_sends_the_program_elsewhere() -> None:
    shown = ["console.log(new Proxy({}, {}))", "console.log({ get x() { return 1 } })",
             "console.log(new Map())", "console.log(new Error('e'))", "console.log(() => 1)",
             "console.log({ [Symbol.for('nodejs.util.inspect.custom')]: 1 })",
             "Object.prototype.x = 1; console.log({})", "console.log([1, [2, { a: 3 }]], 'plain')"]
    runs = in_one_realm_worker([CORRECT + line + "\n" for line in shown])
    refused = [any(isinstance(m, dict) and "fallback" in m for m in run) for run in runs]
    assert refused == [True] * (len(shown) - 1) + [False]


def test_a_realm_has_no_timers_or_finalizers(engine: Engine) -> None:
    # Obfuscated, past the gate: anything that could run code after the program ended
    # (in the next one's time) or allocate outside V8's heap is not there.
    names = ["setTimeout", "setInterval", "setImmediate", "queueMicrotask", "FinalizationRegistry",
             "WeakRef", "Atomics", "SharedArrayBuffer", "ArrayBuffer", "Uint8Array", "WebAssembly",
             "process", "require", "Buffer"]
    completion = CORRECT + (
        f"const g = (function () {{ return this; }})();\n"
        f"const present = {json.dumps(names)}.filter((n) => g[n.slice(0)] !== undefined);\n"
        "console.log(JSON.stringify(present));\n"
        "let evaluated;\n"
        "try { evaluated = [].constructor.constructor('return 1')(); }\n"
        "catch (e) { evaluated = e.name; }\n"
        "console.log(evaluated);\n")
    result = run(engine, completion)
    assert result.stdout.split() == ["[]", "EvalError"]
    assert result.status == "passed"


# -- what the next program sees ----------------------------------------------------------

POLLUTE = """  return a + b
}
Array.prototype.push = function () { return 0; };
Object.prototype.polluted = true;
Object.defineProperty(Object.prototype, 'then', {
  get() { throw new Error('poisoned'); }, configurable: true,
});
JSON.stringify = () => '"forged"';
Math.max = () => 42;
String.prototype.includes = () => true;
console.log = () => {};
Error.prototype.toString = () => 'forged';
Number.prototype.toString = function () { return 'forged'; };
(function () { this.add = () => 3; this.testAdd = () => {}; this.leftover = 'from before'; })();
Object.freeze(Array.prototype);
"""
CHECK = """  const clean = [].push === Array.prototype.push && ({}).polluted === undefined &&
    JSON.stringify([1]) === '[1]' && Math.max(1, 2) === 2 && !'abc'.includes('z') &&
    (function () { return this; })().leftover === undefined && !Object.isFrozen(Array.prototype) &&
    String(new Error('e')) === 'Error: e' && (7).toString() === '7'
  console.log(clean ? 'clean' : 'polluted')
  return a - b
}
"""


def test_a_program_changes_nothing_the_next_one_sees(engine: Engine, processes: Engine) -> None:
    polluter = run(engine, POLLUTE + WHERE)
    assert "realm" in polluter.stdout or polluter.stdout == ""
    assert polluter.status == "passed"
    after = run(engine, CHECK + WHERE)
    assert after.stdout.split() == ["realm", "clean", "clean", "clean"]
    assert summary(after)[:2] == summary(run(processes, CHECK))[:2]
    assert [t.status for t in after.tests] == ["failed", "failed", "failed"]


def test_work_left_for_later_does_not_run_in_the_next_program(engine: Engine) -> None:
    # Microtasks are done before the program ends; timers and finalizers are not there.
    leaver = CORRECT + """
let n = 0
const again = () => { n += 1; if (n < 1000) Promise.resolve().then(again) }
again()
new Promise(() => {})
"""
    assert run(engine, leaver).status == "passed"
    quiet = run(engine, CORRECT + WHERE)
    assert quiet.stdout.split() == ["realm"]
    assert quiet.status == "passed"


def test_records_come_from_the_recorder_only(engine: Engine) -> None:
    # Lines that look like records, and a recorder replaced with a function's result.
    forger = WRONG + """
console.log('0 {"kind": "done", "tests": 3}')
console.log('{"kind": "test", "status": "passed", "site": 0}')
try { arguments[5].compare = () => {} } catch (e) { }
"""
    result = run(engine, forger)
    assert result.status == "failed"
    assert [t.status for t in result.tests] == ["failed", "failed", "failed"]


# -- limits ------------------------------------------------------------------------------

LIMITED = {
    "an endless loop": ("  while (true) {}\n}\n", "timeout"),
    # Each callback queues the next and returns nothing, so the queue never empties and
    # memory stays flat: only the CPU limit can end it. (Returning the promise instead
    # chains every promise to the next, and whether memory or CPU runs out first then
    # depends on the machine.)
    "an endless chain of promises": (
        "  const f = () => { Promise.resolve().then(f) }\n  f()\n  return a + b\n}\n",
        "timeout"),
    "a flood of output": ("  while (true) console.log('x'.repeat(10000))\n}\n", "error"),
    "unbounded allocation": (
        "  const keep = []\n  while (true) keep.push(new Array(1e6).fill(a))\n}\n", "memory"),
}


@pytest.mark.parametrize("case", list(LIMITED))
def test_a_limit_ends_a_realm_program_and_the_next_one_runs(engine: Engine, case: str) -> None:
    completion, status = LIMITED[case]
    assert run(engine, completion).status == status
    following = run(engine, CORRECT + WHERE)
    assert following.status == "passed"
    assert where(following) == "realm"


def test_each_program_has_its_own_cpu_limit(engine: Engine) -> None:
    # Three programs of 0.6 s of computing each, in one realm worker, under 1 s of CPU:
    # the worker thread's time counts from each program's start.
    busy = CORRECT + "const until = Date.now() + 600\nwhile (Date.now() < until) {}\n" + WHERE
    for _ in range(3):
        result = run(engine, busy)
        assert result.status == "passed"
        assert where(result) == "realm"


# -- the gate ----------------------------------------------------------------------------

TIERS = {
    "const x = [1, 2].map((v) => v * 2); console.log(x)": "realm",
    "let Map = 1; const { a, b: [c] } = {}; class Set {}": "realm",
    "function f(a) { a = 1; let b; [b, a] = [a, b] }": "realm",
    "module.exports = {}; exports.x = 1": "realm",
    "const md5 = require('js-md5')": "worker",
    "setTimeout(() => 1)": "worker",
    "queueMicrotask(() => 1)": "worker",
    "console.table([1])": "worker",
    "const log = console.log": "realm",
    "const c = console": "worker",
    "Error.prepareStackTrace = null": "worker",
    "new WeakRef({})": "worker",
    "for (i = 0; i < 3; i++) {}": "worker",
    "Math = null": "worker",
    "process.exit(0)": "process",
    "eval('1')": "process",
}


def test_the_gate_sends_each_program_to_its_tier() -> None:
    assert gate_answers("gate.classify(c, acorn).tier", TIERS) == TIERS
