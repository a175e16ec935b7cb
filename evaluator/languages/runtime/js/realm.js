'use strict';
// One program in a realm of its own, inside a worker thread that runs many programs one
// after another (realm-worker.js; the pool, pool.js, watches its limits).
//
// A realm (`vm.createContext`) has its own globals and built-ins, so one program's
// changes to them cannot reach the next; unlike a worker thread of its own it costs
// about a millisecond. It shares the worker's isolate with the host code here, though,
// so it must never be handed an object of the host's: any such object's
// `.constructor.constructor` is the host's Function, which compiles code outside the
// realm. So:
//   - the realm's global object is backed by an object without a prototype (a plain
//     `{}` would lend the realm the host's Object.prototype);
//   - code generation from strings is off in the realm, so what the gate (gate.js) read
//     is all the code that runs there;
//   - the console, the recorder and the module objects are made inside the realm
//     (realm-inside.js, recorder.js), and reach the host only through the functions
//     below, which take primitives, or values they check first;
//   - the host never calls, reads or converts a value of the program's unless it is
//     plain data: no proxy, no getter, no function, no object but plain arrays and
//     objects, and the realm's built-ins that util.inspect consults as V8 made them.
//     Anything else makes the pool run the program again in a worker of its own
//     (`fallback`), where the verdict is the same as ever.
// The OS sandbox around the pool stays the security boundary; what the realm keeps is
// that one program cannot change another's verdict or the pool's records.

const fs = require('fs');
const path = require('path');
const util = require('util');
const vm = require('vm');
const { performance } = require('perf_hooks');
const { VALUE_CAP, cap, errorType, errorMessage } = require('./recorder.js');
const { syntaxErrorLine, RECORDER } = require('./harness.js');
const { REMOVED } = require('./realm-inside.js');

const PARAMS = ['exports', 'require', 'module', '__filename', '__dirname', RECORDER];
const SHOW = { depth: 4, breakLength: Infinity, maxArrayLength: 100, maxStringLength: VALUE_CAP };
const UNINSPECTABLE = '<uninspectable value>';
// Plain data larger than this is not checked; the program runs in a worker instead.
const SCAN_LIMIT = 10000;
const RECORD_KINDS = new Set(['test', 'exception']);
const { types } = util;
// The realm's globals the program gets as variables (gate.js, scopeOf, says why): its
// built-ins and the console, less what the realm goes without and what the gate keeps
// programs from naming at all.
const GLOBALS = vm.runInNewContext('Object.getOwnPropertyNames(globalThis)')
  .filter((name) => !REMOVED.includes(name) && !['eval', 'Function', 'globalThis'].includes(name));

// The files compiled into each realm, each as a CommonJS module of that realm: compiled
// once, run in each realm.
function realmModule(file) {
  const filename = path.join(__dirname, file);
  const text = fs.readFileSync(filename, 'utf8');
  return new vm.Script(`(function (module) {${text}\nreturn module.exports;\n})({ exports: {} })`, { filename });
}

const RECORDER_MODULE = realmModule('recorder.js');
const INSIDE_MODULE = realmModule('realm-inside.js');

// -- what the host may show --------------------------------------------------------------

function isPrimitive(value) {
  return value === null || (typeof value !== 'object' && typeof value !== 'function');
}

function isExotic(value) {
  return types.isMap(value) || types.isSet(value) || types.isWeakMap(value) || types.isWeakSet(value) ||
    types.isDate(value) || types.isRegExp(value) || types.isNativeError(value) || types.isBoxedPrimitive(value) ||
    types.isPromise(value) || types.isTypedArray(value) || types.isAnyArrayBuffer(value) ||
    types.isDataView(value) || types.isMapIterator(value) || types.isSetIterator(value) ||
    types.isGeneratorObject(value) || types.isModuleNamespaceObject(value) || types.isExternal(value);
}

function ownDescriptors(object) {
  return Reflect.ownKeys(object).map((key) => [key, Object.getOwnPropertyDescriptor(object, key)]);
}

function sameDescriptor(a, b) {
  return !!a && !!b && Object.is(a.value, b.value) && a.get === b.get && a.set === b.set &&
    a.writable === b.writable && a.enumerable === b.enumerable && a.configurable === b.configurable;
}

// The realm's built-ins that util.inspect reads when it shows a plain array or object
// (constructor names, Symbol.toStringTag, Symbol.hasInstance), as they were before the
// program ran. None of them is a proxy, so reading their descriptors runs no code.
class Builtins {
  constructor(objects) {
    this.objects = objects;
    this.prototypes = objects.map((object) => Object.getPrototypeOf(object));
    this.descriptors = objects.map(ownDescriptors);
    [this.objectPrototype, this.arrayPrototype] = objects;
  }

  intact() {
    for (let i = 0; i < this.objects.length; i++) {
      const object = this.objects[i];
      if (Object.getPrototypeOf(object) !== this.prototypes[i]) return false;
      const keys = Reflect.ownKeys(object);
      const before = this.descriptors[i];
      if (keys.length !== before.length) return false;
      for (let k = 0; k < keys.length; k++) {
        if (keys[k] !== before[k][0]) return false;
        if (!sameDescriptor(Object.getOwnPropertyDescriptor(object, keys[k]), before[k][1])) return false;
      }
    }
    return true;
  }
}

// Whether `value` is plain data: primitives, and arrays and objects (prototype the
// realm's Array.prototype, Object.prototype or none) of plain data, with data
// properties only. Only functions that run no code of the program's are used here:
// proxies are refused before anything else is asked of them.
function isPlainData(value, builtins) {
  if (isPrimitive(value)) return true;
  if (!builtins.intact()) return false;
  const seen = new Set();
  const pending = [value];
  let budget = SCAN_LIMIT;
  while (pending.length > 0) {
    const item = pending.pop();
    if (isPrimitive(item)) continue;
    if (typeof item === 'function' || types.isProxy(item)) return false;
    if (seen.has(item)) continue;
    seen.add(item);
    if (isExotic(item)) return false;
    const prototype = Object.getPrototypeOf(item);
    if (Array.isArray(item)) {
      if (prototype !== builtins.arrayPrototype) return false;
      const length = Object.getOwnPropertyDescriptor(item, 'length');
      if (!length || !(length.value <= budget)) return false;
    } else if (prototype !== builtins.objectPrototype && prototype !== null) {
      return false;
    }
    const keys = Reflect.ownKeys(item);
    budget -= keys.length + 1;
    if (budget < 0) return false;
    for (const key of keys) {
      if (key === util.inspect.custom) return false;
      const descriptor = Object.getOwnPropertyDescriptor(item, key);
      if (!descriptor || !('value' in descriptor)) return false;
      pending.push(descriptor.value);
    }
  }
  return true;
}

// The elements of an argument list the realm's console made (a rest parameter).
function argumentList(args) {
  if (isPrimitive(args) || types.isProxy(args) || !Array.isArray(args)) return null;
  const length = Object.getOwnPropertyDescriptor(args, 'length');
  if (!length || !(length.value <= 1000)) return null;
  const list = [];
  for (let i = 0; i < length.value; i++) {
    const element = Object.getOwnPropertyDescriptor(args, i);
    if (!element || !('value' in element)) return null;
    list.push(element.value);
  }
  return list;
}

// A record the realm's recorder made, as a host object of primitives.
function copyRecord(record) {
  if (isPrimitive(record) || typeof record === 'function' || types.isProxy(record)) return null;
  const copy = {};
  for (const key of Reflect.ownKeys(record)) {
    if (typeof key !== 'string') continue;
    const descriptor = Object.getOwnPropertyDescriptor(record, key);
    if (!descriptor || !('value' in descriptor)) continue;
    const { value } = descriptor;
    if (value === null || typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') {
      copy[key] = value;
    }
  }
  return RECORD_KINDS.has(copy.kind) ? copy : null;
}

// -- one program -------------------------------------------------------------------------

// Runs the program's body now; the caller ends the session (`end`) once the program's
// microtasks are done. `send` hands a message to the pool: output as { fd, data },
// records as strings prefixed with the nonce, { fallback: why } when the program must
// run again in a worker of its own, and at the end { end: true, exitCode }.
function runInRealm(job, send) {
  const { nonce, program, offset, filename, prepared } = job;
  let open = true;
  let exitCode = 0;
  let fallback = '';
  const record = (value) => {
    if (open) send(nonce + ' ' + JSON.stringify(value));
  };
  const refuse = (why) => {
    if (!fallback) {
      fallback = why;
      send({ fallback: why });
    }
  };

  const context = vm.createContext(Object.create(null), { codeGeneration: { strings: false, wasm: false } });
  const recorderModule = RECORDER_MODULE.runInContext(context);
  const inside = INSIDE_MODULE.runInContext(context);
  const builtins = new Builtins(argumentList(inside.inspected()));

  const format = (args) => {
    const list = argumentList(args);
    if (!open || list === null) return '';
    if (!list.every((value) => isPlainData(value, builtins))) {
      refuse('it prints a value that is not plain data');
      return '';
    }
    try {
      return util.format(...list);
    } catch (err) {
      return UNINSPECTABLE;
    }
  };
  const host = {
    show(value) {
      if (!open) return '';
      if (!isPlainData(value, builtins)) {
        refuse('a value its tests show is not plain data');
        return '';
      }
      try {
        return cap(util.inspect(value, SHOW));
      } catch (err) {
        return UNINSPECTABLE;
      }
    },
    format,
    write(fd, args) {
      const text = format(args);
      if (open && (fd === 1 || fd === 2)) send({ fd, data: text + '\n' });
    },
    emit(value) {
      const copy = copyRecord(value);
      if (copy) record(copy);
    },
    now: () => performance.now(),
  };

  const head = program.slice(0, offset);
  const suspicious = [];
  let source = program;
  let sites = [];
  if (prepared && !prepared.error) {
    source = head + prepared.source;
    sites = prepared.sites;
  } else {
    const why = prepared ? prepared.error : 'no rewrite';
    suspicious.push(`tests could not be split (${why}); console.assert failures are counted ` +
      'and an exception fails the whole program');
  }
  const testFirstLine = (head.match(/\n/g) || []).length + 1;
  record({ kind: 'plan', sites });

  const session = {
    get fallback() {
      return fallback;
    },
    // An unhandled rejection ends the program as it ends node: exit status 1.
    crash(reason) {
      if (!open) return;
      let text = '<unprintable error>';
      try {
        const described = inside.describe(reason);
        if (typeof described === 'string') text = described;
      } catch (err) {
        // Whatever it threw is the program's: left alone.
      }
      send({ fd: 2, data: `Uncaught ${text}\n` });
      exitCode = 1;
      session.end();
    },
    end() {
      if (!open) return;
      open = false;
      send({ end: true, exitCode });
    },
  };

  inside.setUp(host, recorderModule, JSON.stringify(sites), testFirstLine);
  const lexical = new Set(job.lexical || []);
  const globals = GLOBALS.filter((name) => !lexical.has(name));
  let compiled;
  try {
    compiled = vm.compileFunction(source, PARAMS.concat(globals), { filename, parsingContext: context });
  } catch (err) {
    // No code of the program's has run: the realm is as setUp left it.
    record({ kind: 'compile_error', error_type: errorType(err), message: errorMessage(err),
      line: syntaxErrorLine(err, filename) });
    return session;
  }
  let tests;
  try {
    tests = inside.run(compiled, filename, path.dirname(filename), globals);
  } catch (err) {
    // Thrown by the program while its own error was being described (a getter, say):
    // node would end there, with status 1. The value is the program's: left alone.
    send({ fd: 2, data: 'Uncaught exception while reporting an exception\n' });
    exitCode = 1;
    session.end();
    return session;
  }
  record({ kind: 'done', tests: typeof tests === 'number' ? tests : 0, suspicious });
  return session;
}

module.exports = { runInRealm, isPlainData };
