'use strict';
// Where the pool (pool.js) runs a program: in a realm of the pool's realm worker (the
// cheapest; realm.js), in a worker thread of its own, or in a process of its own
// (harness.js, as before the pool).
//
// A worker shares its process with the pool: `process.exit`, `process.chdir`,
// descriptors, environment, signals and native bindings are the pool's. So the gate is
// conservative: a program is sent to a process of its own when it
//   - does not parse as a script (its compile error is then reported exactly as before);
//   - names `process`, `global`, `globalThis`, `eval`, `Function`, `Atomics`,
//     `SharedArrayBuffer`, `WebAssembly`, `Worker`, `BroadcastChannel`, `MessageChannel`,
//     `MessagePort`, the harness's recorder, or what allocates memory outside V8's heap
//     (`ArrayBuffer`, `Buffer`, `DataView`, `Blob`, the typed arrays), anywhere as a
//     variable;
//   - uses `require` other than as `require('<name>')` with a literal name from ALLOWED,
//     or `module` other than as `module.exports`;
//   - uses `import(...)` or `import.meta`.
// Property names (`x.process`, `{ eval: 1 }`) are not variables and do not count.
//
// A realm has only the language's built-ins, the console methods in CONSOLE, and
// `module.exports`. So, of the programs a worker may run, one goes to a worker of its
// own rather than a realm when it
//   - requires anything (a realm loads no modules);
//   - names one of node's globals that a realm lacks (timers, `queueMicrotask`, `URL`,
//     `TextEncoder`, `structuredClone`, `performance`, ...: computed from node itself),
//     or `FinalizationRegistry` or `WeakRef` (their callbacks and lifetimes would outlive
//     the program; the realm has them removed);
//   - uses `console` other than as `console.<method>(...)` with a method from CONSOLE;
//   - mentions `prepareStackTrace` anywhere (the realm has its own, locked: realm.js);
//   - assigns to a variable it does not declare (see scopeOf).

const vm = require('vm');

const ALLOWED = ['assert', 'node:assert', 'assert/strict', 'node:assert/strict', 'util', 'node:util',
  'js-md5', 'lodash'];
const NAMES = new Set(['process', 'global', 'globalThis', 'eval', 'Function', 'Atomics', 'SharedArrayBuffer',
  'WebAssembly', 'Worker', 'BroadcastChannel', 'MessageChannel', 'MessagePort', '__evaluator__',
  // Memory outside V8's heap, which the worker's heap cap does not bound (a process of
  // its own has the sandbox's memory limit for it).
  'ArrayBuffer', 'Buffer', 'DataView', 'Blob', 'Int8Array', 'Uint8Array', 'Uint8ClampedArray', 'Int16Array',
  'Uint16Array', 'Int32Array', 'Uint32Array', 'Float32Array', 'Float64Array', 'BigInt64Array',
  'BigUint64Array']);
const allowed = new Set(ALLOWED);
const CONSOLE = new Set(['log', 'info', 'debug', 'error', 'warn', 'assert']);
const MODULE_NAMES = ['require', 'module', 'exports', '__filename', '__dirname', 'console'];
const REALM_LACKS = (() => {
  const inRealm = new Set(vm.runInNewContext('Object.getOwnPropertyNames(globalThis)'));
  const lacks = Object.getOwnPropertyNames(globalThis).filter((name) => !inRealm.has(name));
  return new Set([...lacks, 'FinalizationRegistry', 'WeakRef'].filter((name) => !MODULE_NAMES.includes(name)));
})();

// Calls `visit` on each child node of `node` (positions are not nodes).
function visitChildren(node, visit) {
  for (const key of Object.keys(node)) {
    if (key === 'start' || key === 'end' || key === 'loc') continue;
    const child = node[key];
    if (Array.isArray(child)) child.forEach(visit);
    else if (child && typeof child.type === 'string') visit(child);
  }
}

function isAllowedRequire(node) {
  return node.type === 'CallExpression' && node.callee.type === 'Identifier' && node.callee.name === 'require' &&
    node.arguments.length === 1 && node.arguments[0].type === 'Literal' &&
    typeof node.arguments[0].value === 'string' && allowed.has(node.arguments[0].value);
}

function isConsoleMethod(node) {
  return node.type === 'MemberExpression' && !node.computed && node.object.type === 'Identifier' &&
    node.object.name === 'console' && node.property.type === 'Identifier' && CONSOLE.has(node.property.name);
}

function isModuleExports(node) {
  return node.type === 'MemberExpression' && !node.computed && node.object.type === 'Identifier' &&
    node.object.name === 'module' && node.property.type === 'Identifier' && node.property.name === 'exports';
}

// Where `program` runs: { tier: 'process' | 'worker' | 'realm', reason }, the reason
// saying why not in a realm (or a worker).
function classify(program, acorn) {
  let ast;
  try {
    ast = acorn.parse(program, {
      ecmaVersion: 'latest', sourceType: 'script', allowReturnOutsideFunction: true, allowHashBang: true,
    });
  } catch (err) {
    return { tier: 'process', reason: 'it does not parse' };
  }
  let processReason = '';
  let workerReason = program.includes('prepareStackTrace') ? 'it mentions prepareStackTrace' : '';
  const visit = (node) => {
    if (processReason || !node || typeof node.type !== 'string') return;
    if (isAllowedRequire(node)) {
      workerReason = workerReason || `it requires ${node.arguments[0].value}`;
      return;
    }
    if (isModuleExports(node)) return;
    if (isConsoleMethod(node)) return;
    switch (node.type) {
      case 'Identifier':
        if (NAMES.has(node.name) || node.name === 'require' || node.name === 'module') {
          processReason = `it uses \`${node.name}\``;
        } else if (!workerReason && (REALM_LACKS.has(node.name) || node.name === 'console')) {
          workerReason = `it uses \`${node.name}\``;
        }
        return;
      case 'ImportExpression':
        processReason = 'it uses import()';
        return;
      case 'MetaProperty':
        if (node.meta.name === 'import') processReason = 'it uses import.meta';
        return;
      case 'MemberExpression':
        visit(node.object);
        if (node.computed) visit(node.property);
        return;
      case 'Property':
      case 'MethodDefinition':
      case 'PropertyDefinition':
        if (node.computed) visit(node.key);
        // A shorthand property's value is the variable it names.
        visit(node.value);
        return;
      default:
        break;
    }
    visitChildren(node, visit);
  };
  visit(ast);
  if (processReason) return { tier: 'process', reason: processReason };
  if (workerReason) return { tier: 'worker', reason: workerReason };
  const { lexical, undeclared } = scopeOf(ast);
  if (undeclared) return { tier: 'worker', reason: `it assigns to \`${undeclared}\`, which it does not declare` };
  return { tier: 'realm', reason: '', lexical };
}

// The names a pattern (a declaration's or an assignment's target) binds.
function patternNames(node, into) {
  if (!node) return into;
  switch (node.type) {
    case 'Identifier':
      into.push(node.name);
      break;
    case 'ObjectPattern':
      for (const property of node.properties) patternNames(property.type === 'RestElement' ? property : property.value, into);
      break;
    case 'ArrayPattern':
      node.elements.forEach((element) => patternNames(element, into));
      break;
    case 'AssignmentPattern':
      patternNames(node.left, into);
      break;
    case 'RestElement':
      patternNames(node.argument, into);
      break;
    default:
      break; // a member expression: not a variable
  }
  return into;
}

// A realm's globals are reached through node's interceptors, about twenty times slower
// than a variable: realm.js hands the program the built-ins as parameters of its
// function instead, except those it declares with let, const or class at its top level
// (`lexical`: a parameter of that name would not compile). A variable the program
// assigns without declaring it anywhere would be a global, slow in a realm: such a
// program runs in a worker (`undeclared`, the first such name; conservative, since
// declarations are not matched to scopes).
function scopeOf(ast) {
  const declared = new Set(['exports', 'require', 'module', '__filename', '__dirname', 'arguments']);
  const assigned = [];
  const lexical = [];
  for (const statement of ast.body) {
    if (statement.type === 'VariableDeclaration' && statement.kind !== 'var') {
      for (const declarator of statement.declarations) patternNames(declarator.id, lexical);
    } else if (statement.type === 'ClassDeclaration' && statement.id) {
      lexical.push(statement.id.name);
    }
  }
  const visit = (node) => {
    if (!node || typeof node.type !== 'string') return;
    switch (node.type) {
      case 'VariableDeclarator':
        patternNames(node.id, []).forEach((name) => declared.add(name));
        break;
      case 'FunctionDeclaration':
      case 'FunctionExpression':
      case 'ArrowFunctionExpression':
        if (node.id) declared.add(node.id.name);
        for (const param of node.params) patternNames(param, []).forEach((name) => declared.add(name));
        break;
      case 'ClassDeclaration':
      case 'ClassExpression':
        if (node.id) declared.add(node.id.name);
        break;
      case 'CatchClause':
        patternNames(node.param, []).forEach((name) => declared.add(name));
        break;
      case 'AssignmentExpression':
        patternNames(node.left, assigned);
        break;
      case 'UpdateExpression':
        patternNames(node.argument, assigned);
        break;
      case 'ForInStatement':
      case 'ForOfStatement':
        if (node.left.type !== 'VariableDeclaration') patternNames(node.left, assigned);
        break;
      default:
        break;
    }
    visitChildren(node, visit);
  };
  visit(ast);
  return { lexical, undeclared: assigned.find((name) => !declared.has(name)) || '' };
}

// The reason `program` needs a process of its own, or '' when a worker will do.
function needsOwnProcess(program, acorn) {
  const { tier, reason } = classify(program, acorn);
  return tier === 'process' ? reason : '';
}

module.exports = { classify, needsOwnProcess, ALLOWED };
