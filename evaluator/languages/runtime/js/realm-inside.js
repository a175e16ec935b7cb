'use strict';
// Runs inside each program's realm, before the program (realm.js compiles it there, as
// it compiles recorder.js): it gives the realm the console, the recorder and the module
// objects a program sees, all made here, in the realm, so that none of them leads back
// to the host's objects (whose `.constructor.constructor` would be the host's Function).
//
// The host's functions it is handed are kept in this file's closures, which the program
// cannot name, and are only called through wrappers that drop whatever the host throws
// (a stack overflow at the boundary is the host's RangeError) and check that what comes
// back is a string or a number. The code is strict, so a program's function called from
// here sees no `caller` or `arguments` of ours.

const intrinsics = {
  apply: Reflect.apply,
  defineProperty: Object.defineProperty,
  freeze: Object.freeze,
  parse: JSON.parse,
  errorToString: Error.prototype.toString,
  join: Array.prototype.join,
  match: String.prototype.match,
  slice: String.prototype.slice,
  toString: String,
  Error,
};

const UNINSPECTABLE = '<uninspectable value>';

// The objects whose properties the host's util.inspect reads when it shows a plain
// array or object: the host checks they are as V8 made them before it shows one.
function inspected() {
  return [Object.prototype, Array.prototype, Object, Array, Function.prototype];
}

// What the host records for an unhandled rejection (as node prints the reason).
function describe(reason) {
  const { apply, slice, toString } = intrinsics;
  try {
    const text = reason && reason.stack ? reason.stack : reason;
    return apply(slice, toString(text), [0, 8000]);
  } catch (err) {
    return '<unprintable error>';
  }
}

// Locks the stack-trace hook node consults (`Error.prepareStackTrace` on this realm's
// global `Error`) to a function of this realm that formats as node's default does. Node
// would otherwise hand a program's hook the frames as an array made in whichever realm
// first read `.stack`, and read an error's name and message with host code.
function lockStackTraces() {
  const { apply, defineProperty, errorToString, join, Error: RealmError } = intrinsics;
  const prepareStackTrace = (error, trace) => {
    const head = apply(errorToString, error, []);
    return trace.length === 0 ? head : `${head}\n    at ${apply(join, trace, ['\n    at '])}`;
  };
  defineProperty(RealmError, 'prepareStackTrace', {
    value: prepareStackTrace, writable: false, enumerable: false, configurable: false,
  });
  defineProperty(globalThis, 'Error', {
    value: RealmError, writable: false, enumerable: false, configurable: false,
  });
}

// What a realm goes without (the gate sends programs that name them elsewhere): memory
// outside V8's heap, which the worker's heap cap would not bound, and callbacks or
// waits that could outlive the program and run in the next one's time.
const REMOVED = ['ArrayBuffer', 'SharedArrayBuffer', 'DataView', 'Atomics', 'WebAssembly', 'FinalizationRegistry',
  'WeakRef', 'Int8Array', 'Uint8Array', 'Uint8ClampedArray', 'Int16Array', 'Uint16Array', 'Int32Array',
  'Uint32Array', 'Float32Array', 'Float64Array', 'BigInt64Array', 'BigUint64Array'];

// Made by setUp for run: the program's recorder and console.
let prepared = null;

// Readies the realm for the program, before any of its code runs: removes what a realm
// goes without, locks the stack-trace hook, and makes the recorder and the console.
function setUp(host, recorderModule, sitesJson, testFirstLine) {
  const { apply, freeze, parse, match, toString, Error: RealmError } = intrinsics;
  const { makeRecorder, cap, errorType, errorMessage } = recorderModule;
  const { show: hostShow, format: hostFormat, write: hostWrite, emit: hostEmit, now: hostNow } = host;
  const show = (value) => {
    try {
      const text = hostShow(value);
      if (typeof text === 'string') return text;
    } catch (err) {
      // The host's error stays here.
    }
    return UNINSPECTABLE;
  };
  const format = (args) => {
    try {
      const text = hostFormat(args);
      if (typeof text === 'string') return text;
    } catch (err) {
      // As above.
    }
    return UNINSPECTABLE;
  };
  const now = () => {
    try {
      const time = hostNow();
      if (typeof time === 'number') return time;
    } catch (err) {
      // As above.
    }
    return 0;
  };
  const emit = (record) => {
    try {
      hostEmit(record);
    } catch (err) {
      // As above.
    }
  };
  const write = (fd, args) => {
    try {
      hostWrite(fd, args);
    } catch (err) {
      // As above.
    }
  };

  for (const name of REMOVED) delete globalThis[name];
  lockStackTraces();
  const recorder = freeze(makeRecorder(parse(sitesJson), emit, show, now));
  // The console methods the gate lets a program in a realm use, each writing at once.
  const console = {
    log: (...args) => write(1, args),
    info: (...args) => write(1, args),
    debug: (...args) => write(1, args),
    error: (...args) => write(2, args),
    warn: (...args) => write(2, args),
    // An assertion the rewrite did not reach (called through an alias, say) still counts.
    assert: (value, ...rest) => {
      if (value) return;
      const at = apply(match, toString(new RealmError().stack), [/program\.js:(\d+)/]);
      emit({
        kind: 'test', index: recorder.count(), site: -1, status: 'failed', error_type: 'AssertionError',
        message: cap(rest.length ? format(rest) : 'Assertion failed'),
        line: at ? Number(at[1]) - testFirstLine + 1 : null, source: 'console.assert(...)',
      });
    },
  };
  intrinsics.defineProperty(globalThis, 'console', {
    value: console, writable: true, enumerable: false, configurable: true,
  });
  prepared = { recorder, emit, errorType, errorMessage };
}

// Runs `compiled` (the program: a function of the CommonJS wrapper's parameters, the
// recorder, and then the globals named in `globals`, handed over as variables) and
// returns how many test records it made before its body returned.
function run(compiled, filename, dirname, globals) {
  const { apply, toString, Error: RealmError } = intrinsics;
  const { recorder, emit, errorType, errorMessage } = prepared;
  const require = (name) => {
    const err = new RealmError(`Cannot find module '${toString(name)}'`);
    err.code = 'MODULE_NOT_FOUND';
    throw err;
  };
  const mod = { exports: {}, id: '.', filename, loaded: false, children: [] };
  const args = [mod.exports, require, mod, filename, dirname, recorder];
  for (let i = 0; i < globals.length; i++) args[args.length] = globalThis[globals[i]];
  try {
    apply(compiled, mod.exports, args);
  } catch (err) {
    emit({
      kind: 'exception', where: 'program', error_type: errorType(err), message: errorMessage(err),
      traceback: describe(err),
    });
  }
  return recorder.count();
}

module.exports = { setUp, run, describe, inspected, REMOVED };
