'use strict';
// The pool's realm worker (pool.js): one worker thread that runs program after program,
// each in a realm of its own (realm.js), until the pool replaces it.
//
// At start it tells the pool its thread id (the pool reads the thread's CPU time from
// /proc/self/task/<tid>/ to apply each program's CPU limit to what the thread used since
// that program began). For each job it runs the program's body at once, and says the
// program ended once its microtasks are done (a realm has no timers: the gate sends
// programs that use them to a worker of their own), or when it fails as node would.

const fs = require('fs');
const { parentPort } = require('worker_threads');
const { runInRealm } = require('./realm.js');

const post = parentPort.postMessage.bind(parentPort);
const tid = Number(fs.readFileSync('/proc/thread-self/stat', 'utf8').split(' ')[0]);
let current = null;

// A realm's rejected promise nobody handled: node would end the program here.
process.on('unhandledRejection', (reason) => {
  if (current) current.crash(reason);
});
process.on('rejectionHandled', () => {});

parentPort.on('message', (job) => {
  if (!job || typeof job.program !== 'string') return;
  const session = runInRealm(job, post);
  current = session;
  // Microtasks, and node's handling of rejections, run before the next macrotask.
  setImmediate(() => {
    session.end();
    if (current === session) current = null;
  });
});

post({ tid });
