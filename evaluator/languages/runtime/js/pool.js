'use strict';
// The JavaScript pool: one long-lived node process in the sandbox that runs each program
// in a fresh worker thread (pool-worker.js) instead of starting node for each one.
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
// Limits keep their meaning: CPU time is the worker thread's own (read from
// /proc/self/task/<tid>/stat), and the worker is terminated when it reaches the limit as
// RLIMIT_CPU would have ended a process; the wall clock is a backstop; V8's heap is
// capped as --max-old-space-size caps it; stdout and stderr together are capped.
// The test code's rewrite (acorn) is done once per distinct test text.

const fs = require('fs');
const path = require('path');
const crypto = require('crypto');
const { Worker } = require('worker_threads');

const nodeModules = path.resolve(process.argv[2] || path.join(__dirname, 'node_modules'));
const acorn = require(path.join(nodeModules, 'acorn'));
const { rewrite, errorMessage } = require('./harness.js');
const { needsOwnProcess, ALLOWED } = require('./gate.js');

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

// -- workers ---------------------------------------------------------------------------

function startWorker(heapMb) {
  const worker = new Worker(path.join(__dirname, 'pool-worker.js'), {
    stdout: true, stderr: true, stdin: false,
    resourceLimits: { maxOldGenerationSizeMb: heapMb, stackSizeMb: STACK_MB },
  });
  const slot = { worker, heapMb, tid: null, listener: null, early: [] };
  worker.on('message', (message) => {
    if (slot.tid === null && message && typeof message === 'object' && Number.isInteger(message.tid)) {
      slot.tid = message.tid;
    } else if (slot.listener) {
      slot.listener(message);
    } else {
      slot.early.push(message);
    }
  });
  // Until a program runs in it, an error or exit only means it is no longer usable.
  slot.idleError = () => { slot.broken = true; };
  worker.on('error', slot.idleError);
  worker.on('exit', slot.idleError);
  return slot;
}

// A worker is started ahead of each program, so that its start overlaps the runner's
// work between programs.
let spare = null;

function takeWorker(heapMb) {
  let slot = spare;
  spare = null;
  if (!slot || slot.heapMb !== heapMb || slot.broken) {
    if (slot) slot.worker.terminate();
    slot = startWorker(heapMb);
  }
  slot.worker.off('error', slot.idleError);
  slot.worker.off('exit', slot.idleError);
  return slot;
}

function threadCpuMs(tid) {
  try {
    const stat = fs.readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // utime and stime are the 14th and 15th fields, the 12th and 13th after the name.
    return (Number(fields[11]) + Number(fields[12])) * CLOCK_TICK_MS;
  } catch (err) {
    return null;
  }
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

function runProgram(request) {
  const limits = request.limits || {};
  const heapMb = Math.max(64, Math.floor(Number(limits.memory_mb) || 1024));
  const cpuLimitMs = Math.max(1, Math.ceil(Number(limits.cpu_seconds) || 10)) * 1000;
  const wallMs = (Number(limits.wall_seconds) || 10) * 1000;
  const outputLimit = Number(limits.output_bytes) || 8 * 1024 * 1024;
  const program = String(request.program);
  const offset = Number(request.offset);
  const nonce = crypto.randomBytes(16).toString('hex');
  const prefix = nonce + ' ';
  const slot = takeWorker(heapMb);
  const { worker } = slot;
  const started = process.hrtime.bigint();
  const stdout = new Capture();
  const stderr = new Capture();
  const records = [];
  let reportBytes = 0;
  let forged = 0;
  let cpuMs = 0;
  let stopped = null; // why the pool ended the program: 'cpu', 'wall', 'output'
  let oom = false;
  let exitCode = null;

  return new Promise((resolve) => {
    let streamsOpen = 2;
    let exited = false;
    let finished = false;
    const finish = () => {
      if (finished || !exited || streamsOpen > 0) return;
      finished = true;
      clearInterval(poll);
      clearTimeout(wall);
      clearTimeout(grace);
      clearTimeout(drain);
      // The CPU limit as the kernel applies it to a process: a program whose thread used
      // it all before the pool could stop it (its timers ran late on a busy machine) has
      // the verdict RLIMIT_CPU would have given it, whatever it did after.
      if (!stopped && cpuMs >= cpuLimitMs) {
        stopped = 'cpu';
        exitCode = null;
      }
      const step = {
        name: 'run', exit_code: exitCode, signal: null, timed_out: stopped === 'wall',
        output_exceeded: stopped === 'output', wall_ms: Number(process.hrtime.bigint() - started) / 1e6,
        cpu_ms: cpuMs, max_rss_kb: null, stdout: stdout.text(), stderr: stderr.text(),
      };
      if (slot.tid === null && !stopped) {
        // The worker never started (no thread, say): the pool's failure, not the program's.
        resolve({ status: 3, note: 'a worker thread did not start', result: null });
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
      worker.terminate();
      grace = setTimeout(forceFinish, TERMINATE_GRACE_MS);
    };
    const sample = () => {
      if (slot.tid === null) return;
      const used = threadCpuMs(slot.tid);
      if (used !== null) cpuMs = used;
      if (cpuMs >= cpuLimitMs) stop('cpu');
    };
    const poll = setInterval(sample, CPU_POLL_MS);
    const wall = setTimeout(() => stop('wall'), wallMs);
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
    const receive = (message) => {
      if (message && typeof message === 'object' && Number.isInteger(message.ticks)) {
        cpuMs = Math.max(cpuMs, message.ticks * CLOCK_TICK_MS);
        return;
      }
      if (message && typeof message === 'object' && (message.fd === 1 || message.fd === 2) &&
          typeof message.data === 'string') {
        (message.fd === 1 ? stdout : stderr).add(Buffer.from(message.data, 'utf8'));
        if (stdout.total + stderr.total > outputLimit) stop('output');
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
    slot.listener = receive;
    slot.early.splice(0).forEach(receive);
    for (const [stream, capture] of [[worker.stdout, stdout], [worker.stderr, stderr]]) {
      stream.on('data', (chunk) => {
        capture.add(chunk);
        if (stdout.total + stderr.total > outputLimit) stop('output');
      });
      stream.on('end', () => { streamsOpen -= 1; finish(); });
      stream.on('error', () => {});
    }
    worker.on('error', (err) => {
      if (err && err.code === 'ERR_WORKER_OUT_OF_MEMORY') {
        oom = true;
        stderr.add(Buffer.from('FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory\n'));
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
    });
    worker.on('exit', (code) => {
      sample();
      exited = true;
      exitCode = stopped ? null : code;
      if (!stopped && oom) exitCode = null;
      // The streams end shortly after; give them a moment, no more.
      drain = setTimeout(() => { streamsOpen = 0; finish(); }, TERMINATE_GRACE_MS);
      finish();
    });
    worker.postMessage({
      nonce, program, offset, filename: path.join(process.cwd(), PROGRAM_FILE),
      prepared: rewriteOnce(program.slice(offset)), allowed: ALLOWED, nodeModules,
    });
    // Started now, it is ready by the time the next program comes.
    spare = startWorker(heapMb);
  }).then((outcome) => {
    // A worker stopped for a limit may not end at once: the answer does not wait for it,
    // and the runner replaces the pool (status 2).
    if (outcome.status >= 2 && spare) {
      spare.worker.terminate();
      spare = null;
    }
    return outcome;
  });
}

async function handle(request) {
  const reason = needsOwnProcess(String(request.program), acorn);
  if (reason) return [1, reason, ''];
  const outcome = await runProgram(request);
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
  spare = startWorker(1024);
}

main();
