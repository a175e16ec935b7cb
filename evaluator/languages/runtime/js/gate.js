'use strict';
// Which programs the pool (pool.js) may run in a worker thread, and which need a process
// of their own (harness.js, as before the pool). A worker shares its process with the
// pool: `process.exit`, `process.chdir`, descriptors, environment, signals and native
// bindings are the pool's. So the gate is conservative: a program is sent to a process
// of its own when it
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

function isAllowedRequire(node) {
  return node.type === 'CallExpression' && node.callee.type === 'Identifier' && node.callee.name === 'require' &&
    node.arguments.length === 1 && node.arguments[0].type === 'Literal' &&
    typeof node.arguments[0].value === 'string' && allowed.has(node.arguments[0].value);
}

function isModuleExports(node) {
  return node.type === 'MemberExpression' && !node.computed && node.object.type === 'Identifier' &&
    node.object.name === 'module' && node.property.type === 'Identifier' && node.property.name === 'exports';
}

// The reason `program` needs a process of its own, or '' when a worker will do.
function needsOwnProcess(program, acorn) {
  let ast;
  try {
    ast = acorn.parse(program, {
      ecmaVersion: 'latest', sourceType: 'script', allowReturnOutsideFunction: true, allowHashBang: true,
    });
  } catch (err) {
    return 'it does not parse';
  }
  let reason = '';
  const visit = (node) => {
    if (reason || !node || typeof node.type !== 'string') return;
    if (isAllowedRequire(node)) return;
    if (isModuleExports(node)) return;
    switch (node.type) {
      case 'Identifier':
        if (NAMES.has(node.name) || node.name === 'require' || node.name === 'module') {
          reason = `it uses \`${node.name}\``;
        }
        return;
      case 'ImportExpression':
        reason = 'it uses import()';
        return;
      case 'MetaProperty':
        if (node.meta.name === 'import') reason = 'it uses import.meta';
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
    for (const key of Object.keys(node)) {
      if (key === 'start' || key === 'end' || key === 'loc') continue;
      const child = node[key];
      if (Array.isArray(child)) child.forEach(visit);
      else if (child && typeof child.type === 'string') visit(child);
    }
  };
  visit(ast);
  return reason;
}

module.exports = { needsOwnProcess, ALLOWED };
