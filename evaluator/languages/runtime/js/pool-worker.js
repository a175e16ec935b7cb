'use strict';
// One program of the pool (pool.js), in a worker thread of its own: a V8 isolate and a
// realm of its own (globals, prototypes, module cache), started for this program only and
// ended after it.
//
// At start it tells the pool its thread id (the pool reads the thread's CPU time from
// /proc/self/task/<tid>/stat); it then waits for one message, the program, runs it as
// harness.js would in a process of its own, and lets the thread end when the program's
// event loop is empty. Records go to the pool through a port the program cannot name,
// each prefixed with a nonce the program never sees.

const fs = require('fs');
const path = require('path');
const Module = require('module');
const { Writable } = require('stream');
const { Console } = require('console');
const { parentPort } = require('worker_threads');
const { execute } = require('./harness.js');

const post = parentPort.postMessage.bind(parentPort);
const stringify = JSON.stringify;
const tid = Number(fs.readFileSync('/proc/thread-self/stat', 'utf8').split(' ')[0]);

// The thread's CPU time in clock ticks (utime + stime), read by the thread itself.
function ownTicks() {
  const stat = fs.readFileSync('/proc/thread-self/stat', 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11]) + Number(fields[12]);
}

// When the thread ends on its own, it says how much CPU time it used in all, which the
// pool cannot read once the thread is gone.
process.on('exit', () => {
  try {
    post({ ticks: ownTicks() });
  } catch (err) {
    // The pool keeps its last reading.
  }
});

parentPort.once('message', (job) => {
  const { nonce, allowed, nodeModules } = job;
  const emit = (record) => post(nonce + ' ' + stringify(record));
  // The gate (gate.js) let through only programs that require these modules by a literal
  // name; the program's `require` resolves them as NODE_PATH would and nothing else,
  // and its `module` is a plain object with `exports`.
  const requireFor = (filename) => {
    const real = Module.createRequire(filename);
    const allow = new Set(allowed);
    const programRequire = (name) => {
      if (typeof name !== 'string' || !allow.has(name)) {
        const err = new Error(`Cannot find module '${String(name)}'`);
        err.code = 'MODULE_NOT_FOUND';
        throw err;
      }
      const builtin = name.startsWith('node:') || Module.builtinModules.includes(name);
      return real(builtin ? name : path.join(nodeModules, name));
    };
    return [programRequire, { exports: {}, id: '.', filename, loaded: false, children: [] }];
  };
  // A worker's own stdout is written for it by its event loop, which a program that
  // prints in a loop never lets run: the pool could neither see nor stop the flood.
  // Its console writes each chunk to the pool at once instead (the pool counts them
  // against the output limit), formatted as node's console formats it.
  const sink = (fd) => new Writable({
    decodeStrings: false,
    write(chunk, encoding, done) {
      post({ fd, data: typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8') });
      done();
    },
  });
  globalThis.console = new Console({ stdout: sink(1), stderr: sink(2), colorMode: false });
  // The worker's `process` is the pool's process (exit codes, descriptors, bindings):
  // the gate sends programs that name it to a process of their own, and it is taken off
  // the global object, so that no other path (a sloppy function's `this`) reaches it.
  delete globalThis.process;
  execute({ program: job.program, offset: job.offset, filename: job.filename, emit,
    prepared: job.prepared, requireFor });
});

post({ tid });
