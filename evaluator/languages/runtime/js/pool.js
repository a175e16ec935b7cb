'use strict';
// The JavaScript pool: one long-lived node process in the sandbox that runs programs
// without starting node for each one.
//
//   node pool.js <node_modules directory>
//
// It speaks the runner's service protocol (runner.py, `_Service`): frames of an int32
// count of items, then each item as an int32 length and its bytes, on stdin and stdout.
// A request is one item, a JSON object: the program, the offset of its test code and its
// limits. The answer is three items: a status, a note, and a JSON object with the run
// step (as the runner would have measured a process) and the program's records.
//   status 0: the program ran;
//   status 1: the program needs a process of its own (gate.js; the note says why);
//   status 2: the program ran and ended abnormally (a limit, a crash): the runner ends
//             this pool after answering, and the next program gets a fresh one;
//   status 3: the pool itself failed (the program runs in a process of its own).
//
// Where a program runs (gate.js decides):
//   - in a realm (realm.js) of the realm worker, a worker thread that runs program after
//     program, each in a fresh realm: about a millisecond per program. The realm worker
//     is replaced after anything unusual (a limit, an unhandled rejection, a value the
//     realm will not show) and after REALM_PROGRAMS programs;
//   - in a worker thread of its own (pool-worker.js), started for that program and ended
//     after it, for programs that require modules or use node's timers and the like; a
//     realm that meets a value it will not show hands its program over to one (the
//     realm's run is discarded);
//   - or, status 1, in a process of its own.
//
// Limits keep their meaning: CPU time is the worker thread's own (read from
// /proc/self/task/<tid>/), counted from the program's start in the realm worker, and the
// worker is terminated when it reaches the limit as RLIMIT_CPU would have ended a
// process; the wall clock is a backstop; V8's heap is capped as --max-old-space-size
// caps it; stdout and stderr together are capped.
// The test code's rewrite (acorn) is done once per distinct test text.

const fs = require('fs');
const path = require('path');
const crypto = require('crypto');
const { Worker } = require('worker_threads');

const nodeModules = path.resolve(process.argv[2] || path.join(__dirname, 'node_modules'));
const acorn = require(path.join(nodeModules, 'acorn'));
const { rewrite, errorMessage } = require('./harness.js');
const { classify, ALLOWED } = require('./gate.js');

const STORED_OUTPUT = 64 * 1024;
const REPORT_LIMIT = 32 * 1024 * 1024;
const CPU_POLL_MS = 20;
const TERMINATE_GRACE_MS = 2000;
const CLOCK_TICK_MS = 10; // USER_HZ is 100 on Linux
// The V8 stack a program has on node's main thread (984 KB, --stack-size), as a worker's
// stack size: node gives a worker's V8 this size less a 192 KB reserve. Measured so that
// recursion stops at the same depth in both, to within a few frames.
const STACK_MB = 1.1653;
const PROGRAM_FILE = 'program.js';
const TEST_CACHE = 64;
// Programs one realm worker runs before it is replaced: what the realms leave behind
// (code caches, a fragmented heap) stays bounded.
const REALM_PROGRAMS = 500;
const DEFAULT_HEAP_MB = 1024;
const REALM_WORKER = 'realm-worker.js';
const OWN_WORKER = 'pool-worker.js';

const rewrites = new Map();

function rewriteOnce(test) {
  let done = rewrites.get(test);
  if (done === undefined) {
    try {
      done = rewrite(test, acorn);
    } catch (err) {
      done = { error: errorMessage(err) };
    }
    if (rewrites.size >= TEST_CACHE) rewrites.delete(rewrites.keys().next().value);
    rewrites.set(test, done);
  }
  return done;
}

// -- a thread's CPU time -----------------------------------------------------------------

// schedstat counts nanoseconds; stat, where schedstat is missing, clock ticks.
const SCHEDSTAT = fs.existsSync('/proc/thread-self/schedstat');

function threadCpuMs(tid) {
  try {
    if (SCHEDSTAT) {
      const stat = fs.readFileSync(`/proc/self/task/${tid}/schedstat`, 'utf8');
      return Number(stat.slice(0, stat.indexOf(' '))) / 1e6;
    }
    const stat = fs.readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // utime and stime are the 14th and 15th fields, the 12th and 13th after the name.
    return (Number(fields[11]) + Number(fields[12])) * CLOCK_TICK_MS;
  } catch (err) {
    return null;
  }
}

// -- workers ---------------------------------------------------------------------------

function startWorker(file, heapMb) {
  const worker = new Worker(path.join(__dirname, file), {
    stdout: true, stderr: true, stdin: false,
    resourceLimits: { maxOldGenerationSizeMb: heapMb, stackSizeMb: STACK_MB },
  });
  const inRealm = file === REALM_WORKER;
  const slot = { worker, heapMb, tid: null, listener: null, output: null, early: [], programs: 0, broken: false };
  slot.ready = new Promise((resolve) => {
    slot.started = resolve;
  });
  worker.on('message', (message) => {
    if (slot.tid === null && message && typeof message === 'object' && Number.isInteger(message.tid)) {
      slot.tid = message.tid;
      slot.started();
    } else if (slot.listener) {
      slot.listener(message);
    } else if (!inRealm) {
      slot.early.push(message);
    }
    // A realm worker's message outside a program's run belongs to no program.
  });
  // What the worker's own streams carry (node's warnings; in a worker of its own, what
  // the program's console wrote last) goes to the program running, if any.
  worker.stdout.on('data', (chunk) => slot.output && slot.output(1, chunk));
  worker.stderr.on('data', (chunk) => slot.output && slot.output(2, chunk));
  // While no program runs in it, an error or exit only means it is no longer usable.
  slot.idleError = () => {
    slot.broken = true;
    slot.started();
  };
  worker.on('error', slot.idleError);
  worker.on('exit', slot.idleError);
  return slot;
}

function retire(slot) {
  if (!slot) return;
  slot.broken = true;
  slot.worker.terminate();
}

// A worker of its own is started ahead of the next program of that kind, so that its
// start overlaps the runner's work between programs.
let spare = null;
// The realm worker, kept between programs.
let realm = null;

function takeWorker(heapMb) {
  let slot = spare;
  spare = null;
  if (!slot || slot.heapMb !== heapMb || slot.broken) {
    retire(slot);
    slot = startWorker(OWN_WORKER, heapMb);
  }
  slot.worker.off('error', slot.idleError);
  slot.worker.off('exit', slot.idleError);
  return slot;
}

function takeRealm(heapMb) {
  if (!realm || realm.heapMb !== heapMb || realm.broken) {
    retire(realm);
    realm = startWorker(REALM_WORKER, heapMb);
  }
  return realm;
}

class Capture {
  constructor() {
    this.kept = [];
    this.size = 0;
    this.total = 0;
  }

  add(chunk) {
    this.total += chunk.length;
    const room = STORED_OUTPUT - this.size;
    if (room > 0) {
      const part = chunk.length > room ? chunk.subarray(0, room) : chunk;
      this.kept.push(part);
      this.size += part.length;
    }
  }

  text() {
    let text = Buffer.concat(this.kept).toString('utf8');
    if (this.total > this.size) text += `\n… [${this.total - this.size} more bytes not kept]`;
    return text;
  }
}

// -- one program -----------------------------------------------------------------------

function limitsOf(request) {
  const limits = request.limits || {};
  return {
    heapMb: Math.max(64, Math.floor(Number(limits.memory_mb) || DEFAULT_HEAP_MB)),
    cpuMs: Math.max(1, Math.ceil(Number(limits.cpu_seconds) || 10)) * 1000,
    wallMs: (Number(limits.wall_seconds) || 10) * 1000,
    outputBytes: Number(limits.output_bytes) || 8 * 1024 * 1024,
  };
}

// Runs one program in `slot`'s worker and watches it. `inRealm`: the slot is the realm
// worker, which says when the program ended ({ end }) and stays; otherwise the worker
// is the program's own and the program ends when the worker does. The outcome:
// { status, result } as handle() answers it, or { fallback } when the realm refused.
function watch(slot, request, inRealm, lexical = []) {
  const limits = limitsOf(request);
  const program = String(request.program);
  const offset = Number(request.offset);
  const nonce = crypto.randomBytes(16).toString('hex');
  const prefix = nonce + ' ';
  const { worker } = slot;
  const started = process.hrtime.bigint();
  const cpuBase = inRealm ? threadCpuMs(slot.tid) : 0;
  const stdout = new Capture();
  const stderr = new Capture();
  const records = [];
  let reportBytes = 0;
  let forged = 0;
  let cpuMs = 0;
  let stopped = null; // why the pool ended the program: 'cpu', 'wall', 'output'
  let oom = false;
  let crashed = false; // the worker failed in a way no program of its own could cause
  let fallback = '';
  let exitCode = null;

  return new Promise((resolve) => {
    // Output of the worker's own streams (node's warnings; in a worker of its own, what
    // the program's console wrote after all); the realm's console writes by message.
    let streamsOpen = inRealm ? 0 : 2;
    let exited = false;
    let finished = false;
    const output = (fd, chunk) => {
      if (finished) return;
      (fd === 1 ? stdout : stderr).add(chunk);
      if (stdout.total + stderr.total > limits.outputBytes) stop('output');
    };
    const cleanUp = () => {
      clearInterval(poll);
      clearTimeout(wall);
      clearTimeout(grace);
      clearTimeout(drain);
      slot.listener = null;
      slot.output = null;
      worker.off('error', onError);
      worker.off('exit', onExit);
    };
    const finish = () => {
      if (finished || !exited || streamsOpen > 0) return;
      finished = true;
      cleanUp();
      if (fallback) {
        resolve({ fallback });
        return;
      }
      // The CPU limit as the kernel applies it to a process: a program whose thread used
      // it all before the pool could stop it (its timers ran late on a busy machine) has
      // the verdict RLIMIT_CPU would have given it, whatever it did after.
      if (!stopped && cpuMs >= limits.cpuMs) {
        stopped = 'cpu';
        exitCode = null;
      }
      const step = {
        name: 'run', exit_code: exitCode, signal: null, timed_out: stopped === 'wall',
        output_exceeded: stopped === 'output', wall_ms: Number(process.hrtime.bigint() - started) / 1e6,
        cpu_ms: cpuMs, max_rss_kb: null, stdout: stdout.text(), stderr: stderr.text(),
      };
      if (crashed || (slot.tid === null && !stopped)) {
        // The worker failed or never started: the pool's failure, not the program's.
        resolve({ status: 3, note: crashed ? 'the realm worker failed' : 'a worker thread did not start' });
        return;
      }
      if (stopped === 'cpu') step.cpu_timed_out = true;
      if (oom) step.oom_killed = true;
      // An uncaught exception ends only its own thread (exit status 1); anything else
      // unusual may have left the pool in a state the next program must not inherit.
      const abnormal = stopped !== null || oom || (exitCode !== 0 && exitCode !== 1);
      resolve({ status: abnormal ? 2 : 0, result: { steps: [step], records, forged_lines: forged } });
    };
    const stop = (why) => {
      if (stopped || exited) return;
      stopped = why;
      slot.broken = true;
      worker.terminate();
      grace = setTimeout(forceFinish, TERMINATE_GRACE_MS);
    };
    const sample = () => {
      if (slot.tid === null) return;
      const used = threadCpuMs(slot.tid);
      if (used !== null) cpuMs = Math.max(cpuMs, used - cpuBase);
      if (cpuMs >= limits.cpuMs) stop('cpu');
    };
    const poll = setInterval(sample, CPU_POLL_MS);
    const wall = setTimeout(() => stop('wall'), limits.wallMs);
    // A worker that does not end once terminated (it should) leaves the pool unusable:
    // answer anyway; status 2 has the runner end the pool.
    let grace = null;
    let drain = null;
    const forceFinish = () => {
      exited = true;
      streamsOpen = 0;
      if (!stopped) stopped = 'wall';
      finish();
    };
    const ended = (code) => {
      exited = true;
      exitCode = stopped ? null : code;
      if (!stopped && oom) exitCode = null;
    };
    const receive = (message) => {
      if (finished) return;
      if (message && typeof message === 'object') {
        if (!inRealm && Number.isInteger(message.ticks)) {
          cpuMs = Math.max(cpuMs, message.ticks * CLOCK_TICK_MS);
        } else if ((message.fd === 1 || message.fd === 2) && typeof message.data === 'string') {
          output(message.fd, Buffer.from(message.data, 'utf8'));
        } else if (inRealm && typeof message.fallback === 'string') {
          // The realm's run is discarded: the program runs again in a worker of its own.
          fallback = message.fallback || 'the realm refused it';
          slot.broken = true;
          worker.terminate();
          ended(null);
          finish();
        } else if (inRealm && message.end === true) {
          sample();
          ended(message.exitCode === 0 ? 0 : 1);
          if (exitCode !== 0) slot.broken = true;
          finish();
        } else {
          forged += 1;
        }
        return;
      }
      if (typeof message !== 'string' || !message.startsWith(prefix)) {
        forged += 1;
        return;
      }
      reportBytes += message.length;
      if (reportBytes > REPORT_LIMIT) return;
      let record;
      try {
        record = JSON.parse(message.slice(prefix.length));
      } catch (err) {
        forged += 1;
        return;
      }
      if (record && typeof record === 'object' && !Array.isArray(record)) {
        records.push(record);
        if (record.kind === 'done') sample();
      } else {
        forged += 1;
      }
    };
    const onError = (err) => {
      if (err && err.code === 'ERR_WORKER_OUT_OF_MEMORY') {
        oom = true;
        stderr.add(Buffer.from('FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory\n'));
        return;
      }
      if (inRealm) {
        // Nothing a program does in a realm throws in the realm worker itself.
        crashed = true;
        return;
      }
      // What node prints for an uncaught exception, and its exit status.
      let text;
      try {
        text = err && err.stack ? String(err.stack) : String(err);
      } catch (e) {
        text = '<unprintable error>';
      }
      stderr.add(Buffer.from(`Uncaught ${text}\n`));
    };
    const onExit = (code) => {
      slot.broken = true;
      if (finished) return;
      sample();
      ended(code);
      if (inRealm && !stopped && !oom) crashed = true;
      // The streams end shortly after; give them a moment, no more.
      drain = setTimeout(() => {
        streamsOpen = 0;
        finish();
      }, TERMINATE_GRACE_MS);
      finish();
    };
    slot.listener = receive;
    slot.output = output;
    if (!inRealm) {
      for (const stream of [worker.stdout, worker.stderr]) {
        stream.on('end', () => {
          streamsOpen -= 1;
          finish();
        });
        stream.on('error', () => {});
      }
    }
    worker.on('error', onError);
    worker.on('exit', onExit);
    slot.early.splice(0).forEach(receive);
    slot.programs += 1;
    worker.postMessage({
      nonce, program, offset, filename: path.join(process.cwd(), PROGRAM_FILE),
      prepared: rewriteOnce(program.slice(offset)), allowed: ALLOWED, nodeModules, lexical,
    });
    if (!inRealm) {
      // Started now, it is ready by the time the next program of this kind comes.
      spare = startWorker(OWN_WORKER, limits.heapMb);
    }
  }).then((outcome) => {
    // A worker stopped for a limit may not end at once: the answer does not wait for it,
    // and the runner replaces the pool (status 2).
    if (outcome.status >= 2 && spare) {
      retire(spare);
      spare = null;
    }
    return outcome;
  });
}

async function runInRealm(request, lexical) {
  const slot = takeRealm(limitsOf(request).heapMb);
  await slot.ready;
  if (slot.broken || slot.tid === null) return { status: 3, note: 'the realm worker did not start' };
  // Its CPU limit counts from the thread's CPU time now, which must be readable.
  if (threadCpuMs(slot.tid) === null) return { status: 3, note: "the realm worker's CPU time is unreadable" };
  const outcome = await watch(slot, request, true, lexical);
  if (slot.broken || slot.programs >= REALM_PROGRAMS) {
    retire(slot);
    // The next program's realm worker starts while the runner handles this answer.
    // (After status 2 or 3 the runner ends the whole pool.)
    if (!(outcome.status >= 2)) realm = startWorker(REALM_WORKER, slot.heapMb);
  }
  return outcome;
}

async function runInWorker(request) {
  const slot = takeWorker(limitsOf(request).heapMb);
  return watch(slot, request, false);
}

async function handle(request) {
  const { tier, reason, lexical } = classify(String(request.program), acorn);
  if (tier === 'process') return [1, reason, ''];
  let outcome = tier === 'realm' ? await runInRealm(request, lexical) : null;
  if (!outcome || outcome.fallback) outcome = await runInWorker(request);
  if (outcome.status === 3) return [3, `the pool failed: ${outcome.note}`, ''];
  return [outcome.status, '', JSON.stringify(outcome.result)];
}

// -- the frame protocol ----------------------------------------------------------------

function frame(items) {
  const parts = [];
  const count = Buffer.alloc(4);
  count.writeInt32BE(items.length);
  parts.push(count);
  for (const item of items) {
    const data = Buffer.from(String(item), 'utf8');
    const length = Buffer.alloc(4);
    length.writeInt32BE(data.length);
    parts.push(length, data);
  }
  return Buffer.concat(parts);
}

function writeAll(data) {
  let offset = 0;
  while (offset < data.length) {
    try {
      offset += fs.writeSync(1, data, offset);
    } catch (err) {
      if (err.code !== 'EAGAIN') throw err;
    }
  }
}

// The items of the first complete frame in `buffer` and its length, or null.
function readFrame(buffer) {
  if (buffer.length < 4) return null;
  const count = buffer.readInt32BE(0);
  let offset = 4;
  const items = [];
  for (let i = 0; i < count; i++) {
    if (buffer.length < offset + 4) return null;
    const length = buffer.readInt32BE(offset);
    offset += 4;
    if (buffer.length < offset + length) return null;
    items.push(buffer.subarray(offset, offset + length).toString('utf8'));
    offset += length;
  }
  return { items, length: offset };
}

function main() {
  let pending = Buffer.alloc(0);
  let busy = false;
  const next = async () => {
    if (busy) return;
    const found = readFrame(pending);
    if (!found) return;
    pending = pending.subarray(found.length);
    busy = true;
    let answer;
    try {
      answer = await handle(JSON.parse(found.items[0]));
    } catch (err) {
      answer = [3, `the pool failed: ${errorMessage(err)}`, ''];
    }
    writeAll(frame(answer));
    busy = false;
    next();
  };
  process.stdin.on('data', (chunk) => {
    pending = Buffer.concat([pending, chunk]);
    next();
  });
  process.stdin.on('end', () => process.exit(0));
  realm = startWorker(REALM_WORKER, DEFAULT_HEAP_MB);
}

main();
