'use strict';
// Runs one HumanEval-family JavaScript program and reports each assertion on its own.
//
//   node harness.js program.js <offset of the test code in program.js>
//
// (or, in the pool, `pool.js`, through `execute` in a worker thread of its own; a
// program the pool runs in a realm uses this file's rewrite and recorder.js, realm.js.)
//
// The test code is parsed with acorn and each assertion in it is rewritten into a call
// of a recorder (recorder.js) that evaluates the assertion's operands inside try/catch, records
// passed / failed / error with the expected and actual values, and never throws:
//   console.assert(a === b, msg)  -> compare(site, () => (a), () => (b), "===", ...)
//   console.assert(x)             -> truthy(site, () => (x), ...)
//   assert.deepEqual(a, b)        -> method(site, () => (assert), "deepEqual", () => [a, b])
//   assert(x)                     -> func(site, () => (assert), () => [x])
//   if (!compare(x, v)) throw ... -> unless(site, () => (!compare(x, v)), () => [x, v])
// console.assert only prints when it fails and never changes the exit status, so the
// verdict never comes from the exit status or from what the program prints: it comes
// from these records, sent on the private report pipe the runner opened, each line
// prefixed with the run's nonce, which the program never sees. Line numbers are kept:
// every rewrite keeps the newlines of the code it replaces.
//
// The program runs as a CommonJS module would (same wrapper parameters, sloppy mode),
// with one extra parameter, `__evaluator__`, through which the rewritten tests reach
// the recorder.

const fs = require('fs');
const path = require('path');
const util = require('util');
const vm = require('vm');
const Module = require('module');
const { performance } = require('perf_hooks');
const { VALUE_CAP, cap, errorType, errorMessage, makeRecorder } = require('./recorder.js');

const RECORDER = '__evaluator__';

const NONCE_FD = 4;

// Under the runner (`node harness.js ...`), records go to the private report pipe, each
// line prefixed with the run's nonce. The launcher script hands the nonce over on fd 4,
// so that it is not in the environment the program could read (/proc/self/environ).
// Only under the runner: it closes every descriptor above 3, so fd 4 can only be the
// launcher's; elsewhere fd 4 may be anything, even a pipe that never ends.
function openReport() {
  const reportFd = Number(process.env.EVALUATOR_REPORT_FD);
  let nonce = process.env.EVALUATOR_NONCE || '';
  delete process.env.EVALUATOR_REPORT_FD;
  delete process.env.EVALUATOR_NONCE;
  if (reportFd > 2) {
    try {
      const handed = fs.readFileSync(NONCE_FD, 'utf8').trim();
      if (handed) nonce = handed;
      fs.closeSync(NONCE_FD);
    } catch (err) {
      // Not started through the launcher.
    }
  }
  const writeSync = fs.writeSync;
  const stringify = JSON.stringify;
  return (record) => {
    if (!(reportFd > 2)) return;
    const line = nonce + ' ' + stringify(record) + '\n';
    try {
      writeSync(reportFd, line);
    } catch (err) {
      // The pipe is gone: the runner has stopped listening, nothing left to tell.
    }
  };
}

function show(value) {
  try {
    return cap(util.inspect(value, { depth: 4, breakLength: Infinity, maxArrayLength: 100, maxStringLength: VALUE_CAP }));
  } catch (err) {
    return '<uninspectable value>';
  }
}

// -- finding and rewriting the assertions ------------------------------------------

const ASSERT_METHODS = new Set([
  'ok', 'equal', 'notEqual', 'deepEqual', 'notDeepEqual', 'deepStrictEqual', 'notDeepStrictEqual',
  'strictEqual', 'notStrictEqual', 'throws', 'doesNotThrow', 'rejects', 'doesNotReject', 'match',
  'doesNotMatch', 'fail', 'ifError',
]);
const COMPARISONS = new Set(['===', '==', '!==', '!=']);

function isConsoleAssert(callee) {
  return callee.type === 'MemberExpression' && !callee.computed &&
    callee.object.type === 'Identifier' && callee.object.name === 'console' &&
    callee.property.type === 'Identifier' && callee.property.name === 'assert';
}

function isAssertMethod(callee) {
  return callee.type === 'MemberExpression' && !callee.computed &&
    callee.object.type === 'Identifier' && callee.object.name === 'assert' &&
    callee.property.type === 'Identifier' && ASSERT_METHODS.has(callee.property.name);
}

function throwsOnly(statement) {
  if (statement.type === 'ThrowStatement') return true;
  return statement.type === 'BlockStatement' && statement.body.length === 1 &&
    statement.body[0].type === 'ThrowStatement';
}

function isPlainOperand(node) {
  return node.type === 'Identifier' || node.type === 'Literal';
}

function findSites(ast) {
  const sites = [];
  const visit = (node) => {
    if (!node || typeof node.type !== 'string') return;
    if (node.type === 'CallExpression' && (isConsoleAssert(node.callee) || isAssertMethod(node.callee) ||
        (node.callee.type === 'Identifier' && node.callee.name === 'assert'))) {
      sites.push(node);
      return;
    }
    if (node.type === 'IfStatement' && !node.alternate && throwsOnly(node.consequent)) {
      sites.push(node);
      return;
    }
    for (const key of Object.keys(node)) {
      if (key === 'loc' || key === 'range') continue;
      const child = node[key];
      if (Array.isArray(child)) child.forEach(visit);
      else if (child && typeof child.type === 'string') visit(child);
    }
  };
  visit(ast);
  return sites;
}

function rewrite(test, acorn) {
  const ast = acorn.parse(test, {
    ecmaVersion: 'latest', sourceType: 'script', locations: true, allowReturnOutsideFunction: true,
    allowHashBang: true,
  });
  const nodes = findSites(ast);
  const text = (node) => test.slice(node.start, node.end);
  const sites = [];
  const edits = [];
  for (const node of nodes) {
    const site = sites.length;
    sites.push({ line: node.loc.start.line, source: text(node).trim() });
    let replacement;
    if (node.type === 'IfStatement') {
      const cond = node.test;
      let values = 'null';
      if (cond.type === 'UnaryExpression' && cond.operator === '!' && cond.argument.type === 'CallExpression' &&
          cond.argument.arguments.length === 2 && cond.argument.arguments.every(isPlainOperand)) {
        // HumanEval-XL: `if (!compare(actual, expected)) throw ...`
        const [actual, expected] = cond.argument.arguments;
        values = `() => [${text(actual)}, ${text(expected)}]`;
      }
      replacement = `${RECORDER}.unless(${site}, () => (${text(cond)}), ${values});`;
    } else if (isConsoleAssert(node.callee)) {
      const [cond, ...rest] = node.arguments;
      const message = rest.length ? `() => [${rest.map(text).join(', ')}]` : 'null';
      if (cond && cond.type === 'BinaryExpression' && COMPARISONS.has(cond.operator)) {
        replacement = `${RECORDER}.compare(${site}, () => (${text(cond.left)}), () => (${text(cond.right)}), ` +
          `${JSON.stringify(cond.operator)}, ${message})`;
      } else {
        replacement = `${RECORDER}.truthy(${site}, () => (${cond ? text(cond) : 'undefined'}), ${message})`;
      }
    } else if (node.callee.type === 'MemberExpression') {
      replacement = `${RECORDER}.method(${site}, () => (${text(node.callee.object)}), ` +
        `${JSON.stringify(node.callee.property.name)}, () => [${node.arguments.map(text).join(', ')}])`;
    } else {
      replacement = `${RECORDER}.func(${site}, () => (${text(node.callee)}), () => [${node.arguments.map(text).join(', ')}])`;
    }
    // Keep the line count of the replaced code, so later line numbers do not move.
    const lost = (text(node).match(/\n/g) || []).length - (replacement.match(/\n/g) || []).length;
    if (lost > 0) {
      replacement = node.type === 'IfStatement'
        ? replacement + '\n'.repeat(lost)
        : replacement.slice(0, -1) + '\n'.repeat(lost) + ')';
    }
    edits.push([node.start, node.end, replacement]);
  }
  groupTopLevel(ast, nodes, sites, edits);
  edits.sort((a, b) => b[0] - a[0] || b[1] - a[1]);
  let out = test;
  for (const [start, end, replacement] of edits) out = out.slice(0, start) + replacement + out.slice(end);
  return { source: out, sites };
}

// HumanEval-XL's tests are top-level statements: `var x0 = f(...); ... if (!compare(x0, v0)) throw`.
// A call of the code under test that throws would end the script; each run of `var` and
// expression statements up to its check is wrapped in try/catch, so that throw becomes that
// check's error and the checks after it still run. `var` keeps its scope inside a block.
function groupTopLevel(ast, nodes, sites, edits) {
  const checks = new Set(nodes.filter((n) => n.type === 'IfStatement'));
  let pending = [];
  for (const statement of ast.body) {
    if (checks.has(statement)) {
      if (pending.length) {
        const site = nodes.indexOf(statement);
        edits.push([pending[0].start, pending[0].start, 'try { ']);
        edits.push([statement.end, statement.end, ` } catch (err) { ${RECORDER}.error(${site}, err); }`]);
      }
      pending = [];
    } else if (statement.type === 'ExpressionStatement' ||
        (statement.type === 'VariableDeclaration' && statement.kind === 'var')) {
      pending.push(statement);
    } else {
      // let, const, functions and classes would change scope inside a block: left alone.
      pending = [];
    }
  }
}

// -- running -----------------------------------------------------------------------

function syntaxErrorLine(err, filename) {
  const match = String(err && err.stack).match(new RegExp(filename.replace(/[.*+?^${}()|[\]\\]/g, '\\$&') + ':(\\d+)'));
  return match ? Number(match[1]) : null;
}

// Runs `program`, whose test code starts at `offset`, reporting through `emit`. `prepared`
// is the test's rewrite when the caller already has it (the pool keeps one per test);
// `requireFor` makes the program's `require` and `module` (the pool hands out narrower
// ones than a process of its own has).
function execute({ program, offset, filename, emit, prepared, requireFor }) {
  const head = program.slice(0, offset);
  const test = program.slice(offset);
  const suspicious = [];
  let source = program;
  let sites = [];
  try {
    const rewritten = prepared || rewrite(test, require('acorn'));
    if (rewritten.error) throw new Error(rewritten.error);
    source = head + rewritten.source;
    sites = rewritten.sites;
  } catch (err) {
    suspicious.push(`tests could not be split (${errorMessage(err)}); console.assert failures are counted ` +
      'and an exception fails the whole program');
  }
  const recorder = Object.freeze(makeRecorder(sites, emit, show, () => performance.now()));
  const testFirstLine = (head.match(/\n/g) || []).length + 1;
  // An assertion the rewrite did not reach (called through an alias, say) still counts.
  console.assert = (value, ...rest) => {
    if (value) return;
    const at = String(new Error().stack).match(/program\.js:(\d+)/);
    emit({
      kind: 'test', index: recorder.count(), site: -1, status: 'failed', error_type: 'AssertionError',
      message: cap(rest.length ? util.format(...rest) : 'Assertion failed'),
      line: at ? Number(at[1]) - testFirstLine + 1 : null, source: 'console.assert(...)',
    });
  };
  emit({ kind: 'plan', sites });
  let compiled;
  try {
    compiled = vm.compileFunction(source, ['exports', 'require', 'module', '__filename', '__dirname', RECORDER],
      { filename });
  } catch (err) {
    emit({ kind: 'compile_error', error_type: errorType(err), message: errorMessage(err),
      line: syntaxErrorLine(err, filename) });
    return;
  }
  const [localRequire, mod] = requireFor(filename);
  try {
    compiled.call(mod.exports, mod.exports, localRequire, mod, filename, path.dirname(filename), recorder);
  } catch (err) {
    emit({
      kind: 'exception', where: 'program', error_type: errorType(err), message: errorMessage(err),
      traceback: String(err && err.stack ? err.stack : err).slice(0, 8000),
    });
  }
  emit({ kind: 'done', tests: recorder.count(), suspicious });
}

function processRequire(filename) {
  const mod = new Module(filename, null);
  mod.filename = filename;
  mod.paths = Module._nodeModulePaths(path.dirname(filename));
  return [Module.createRequire(filename), mod];
}

function main() {
  const emit = openReport();
  const filename = path.resolve(process.argv[2]);
  const offset = Number(process.argv[3]);
  const program = fs.readFileSync(filename, 'utf8');
  execute({ program, offset, filename, emit, prepared: null, requireFor: processRequire });
}

if (require.main === module) {
  main();
} else {
  module.exports = { execute, rewrite, errorMessage, syntaxErrorLine, RECORDER };
}
