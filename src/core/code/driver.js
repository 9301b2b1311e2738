// agent-sandbox code-context driver for JavaScript (ADR 0019). It speaks the same JSON lines
// as driver.py (see there): one request per line on stdin, events on stdout. The context is one
// `vm` context kept for the driver's life, so globals, `var`/`let`/`const` declarations and
// functions persist between executions; `require` and `process` are the driver's own. The value
// of the last expression becomes the main result (text/plain by util.inspect, plus
// application/json for plain data); a returned Promise is awaited. `display(value)` adds a
// result, and `display({"text/html": ...}, {raw: true})` a MIME bundle. SIGINT interrupts a
// running execution (vm's breakOnSigint); timeout_ms bounds it (vm's timeout). The server hands
// this source over as the first line of stdin (a JSON string) to a `node -e` bootstrap that
// runs it as the body of a function of `require`.
'use strict';
const fs = require('fs');
const util = require('util');
const vm = require('vm');
const {Worker} = require('worker_threads');

const args = {};
for (let i = 1; i + 1 < process.argv.length; i++) {
  if (process.argv[i].startsWith('--')) args[process.argv[i]] = process.argv[i + 1];
}
const cwd = args['--cwd'] || '/workspace';
const capDefault = Number(args['--max-output-bytes'] || 1048576);

// Flow control, as in driver.py: at most WINDOW bytes of stdout the server has not acknowledged
// ({"op": "ack", "bytes": N} on stdin), restarted with each execution; after STALL_MS without an
// acknowledgement it is off until the next one. A worker thread reads stdin with blocking reads
// and counts acknowledgements in shared memory, so emit() can wait (Atomics.wait) even while a
// synchronous loop of user code holds this thread.
const WINDOW = 64 * 1024;
const STALL_MS = 10000;
const acked = new Int32Array(new SharedArrayBuffer(4));
let sent = 0;
let stalled = false;

function resetWindow() {
  sent = 0;
  stalled = false;
  Atomics.store(acked, 0, 0);
}

function emit(obj) {
  const data = Buffer.from(JSON.stringify(obj) + '\n', 'utf8');
  let off = 0;
  while (off < data.length) {
    const seen = Atomics.load(acked, 0);
    const room = stalled ? data.length - off : WINDOW - (sent - seen);
    if (room <= 0) {
      if (Atomics.wait(acked, 0, seen, STALL_MS) === 'timed-out' &&
          Atomics.load(acked, 0) === seen) {
        stalled = true;
      }
      continue;
    }
    const n = Math.min(room, data.length - off);
    fs.writeSync(1, data, off, n);
    off += n;
    sent += n;
  }
}

try {
  process.chdir(cwd);
} catch (e) {
  emit({type: 'fatal', message: 'cwd ' + cwd + ' is not a directory in the sandbox'});
  process.exit(3);
}

// The running execution: {id, left, truncated, cut: Set of names, dropped}. stdout, stderr and
// results share `left` (the server's one output budget); a result that does not fit is left out.
let current = null;

function write(name, text) {
  if (!current) return;
  const data = Buffer.from(String(text), 'utf8');
  let keep = data;
  if (data.length > current.left) {
    current.truncated = true;
    current.cut.add(name);
    keep = data.subarray(0, Math.max(current.left, 0));
  }
  current.left -= keep.length;
  if (keep.length) emit({type: name, id: current.id, data: keep.toString('utf8')});
}

function isPlainData(v) {
  if (v === null || typeof v !== 'object') return false;
  const proto = Object.getPrototypeOf(v);
  // Plain objects of the context's own realm have a prototype whose prototype is null.
  return Array.isArray(v) || proto === null || Object.getPrototypeOf(proto) === null;
}

function bundleOf(value) {
  const data = {'text/plain': util.inspect(value, {depth: 6, breakLength: 100})};
  if (isPlainData(value)) {
    try {
      data['application/json'] = JSON.parse(JSON.stringify(value));
    } catch (e) { /* cycles, BigInt: text only */ }
  }
  return data;
}

// Emits a result if it fits in what is left of the output budget, else counts it as dropped.
function emitResult(isMain, data) {
  let size = 0;
  for (const v of Object.values(data || {})) {
    size += Buffer.byteLength(typeof v === 'string' ? v : String(JSON.stringify(v)), 'utf8');
  }
  if (size > current.left) {
    current.truncated = true;
    current.cut.add('results');
    current.dropped += 1;
    return;
  }
  current.left -= size;
  emit({type: 'result', id: current.id, is_main_result: isMain, data});
}

function display(value, options) {
  if (!current) return;
  emitResult(false, options && options.raw ? value : bundleOf(value));
}

const sandboxConsole = {};
for (const [method, stream] of [['log', 'stdout'], ['info', 'stdout'], ['debug', 'stdout'],
  ['error', 'stderr'], ['warn', 'stderr'], ['trace', 'stderr']]) {
  sandboxConsole[method] = (...a) => write(stream, util.format(...a) + '\n');
}
sandboxConsole.dir = (v) => write('stdout', util.inspect(v) + '\n');
sandboxConsole.table = (v) => write('stdout', util.inspect(v) + '\n');

const context = vm.createContext({
  console: sandboxConsole, require, process, Buffer, display, setTimeout, clearTimeout,
  setInterval, clearInterval, setImmediate, clearImmediate, URL, URLSearchParams,
  TextEncoder, TextDecoder, fetch: globalThis.fetch, structuredClone, queueMicrotask,
});
context.global = context;
context.globalThis = context;

let count = 0;

function errorEvent(id, e) {
  const name = e && e.name ? String(e.name) : 'Error';
  const value = e && e.message !== undefined ? String(e.message) : String(e);
  // The driver's own frames (vm, this file) say nothing about the user's code.
  const stack = e && e.stack ? String(e.stack).split('\n').filter(
      (l) => !/\(node:|\(\/tmp\/\.agent-sandbox\/|driver\.js|at node:/.test(l)) : [];
  return {type: 'error', id, name, value, traceback: stack};
}

async function execute(req) {
  const id = req.id;
  const timeoutMs = Number(req.timeout_ms || 0);
  const started = Date.now();
  current = {id, left: Number(req.max_output_bytes || capDefault), truncated: false,
    cut: new Set(), dropped: 0};
  count += 1;
  // This execution's environment, put back as it was when it ends.
  const env = req.env && typeof req.env === 'object' ? req.env : {};
  const saved = new Map();
  for (const [k, v] of Object.entries(env)) {
    saved.set(k, Object.prototype.hasOwnProperty.call(process.env, k) ? process.env[k] : undefined);
    process.env[k] = String(v);
  }
  let status = 'ok';
  let timedOut = false;
  const options = {filename: 'cell' + count + '.js', breakOnSigint: true, displayErrors: false};
  if (timeoutMs > 0) options.timeout = timeoutMs;
  try {
    let value = new vm.Script(String(req.code || ''), options).runInContext(context, options);
    if (value && typeof value.then === 'function') {
      const left = timeoutMs > 0 ? Math.max(timeoutMs - (Date.now() - started), 1) : 0;
      let timer = null;
      const deadline = left > 0 ? new Promise((_, reject) => {
        timer = setTimeout(() => reject(Object.assign(new Error('Script execution timed out.'),
            {code: 'ERR_SCRIPT_EXECUTION_TIMEOUT'})), left);
      }) : null;
      try {
        value = await (deadline ? Promise.race([value, deadline]) : value);
      } finally {
        if (timer) clearTimeout(timer);
      }
    }
    if (value !== undefined) {
      emitResult(true, bundleOf(value));
    }
  } catch (e) {
    if (e && e.code === 'ERR_SCRIPT_EXECUTION_TIMEOUT') {
      timedOut = true;
      status = 'timeout';
      e.name = 'TimeoutError';
    } else {
      status = 'error';
    }
    emit(errorEvent(id, e));
  }
  for (const [k, v] of saved) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
  const {truncated, cut, dropped} = current;
  current = null;
  emit({type: 'end', id, status, execution_count: count, duration_ms: Date.now() - started,
    timed_out: timedOut, truncated, truncated_outputs: [...cut].sort(),
    dropped_results: dropped});
}

// SIGINT outside vm's breakOnSigint window (e.g. while awaiting a Promise) is not fatal.
process.on('SIGINT', () => {});
process.on('uncaughtException', (e) => {
  if (current) write('stderr', 'Uncaught ' + (e && e.stack ? e.stack : String(e)) + '\n');
});
process.on('unhandledRejection', (e) => {
  if (current) write('stderr', 'Unhandled rejection: ' + (e && e.stack ? e.stack : e) + '\n');
});

const queue = [];
let busy = false;
async function pump() {
  if (busy) return;
  busy = true;
  while (queue.length) {
    resetWindow();
    await execute(queue.shift());
  }
  busy = false;
}

const STDIN_READER = `
const {parentPort, workerData} = require('worker_threads');
const fs = require('fs');
const {StringDecoder} = require('string_decoder');
const acked = workerData.acked;
const decoder = new StringDecoder('utf8');
const chunk = Buffer.alloc(65536);
let buf = '';
for (;;) {
  let n = 0;
  try {
    n = fs.readSync(0, chunk, 0, chunk.length, null);
  } catch (e) {
    if (e.code === 'EAGAIN') { Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 5); continue; }
    break;
  }
  if (n === 0) break;
  buf += decoder.write(chunk.subarray(0, n));
  let nl;
  while ((nl = buf.indexOf('\\n')) >= 0) {
    const line = buf.slice(0, nl);
    buf = buf.slice(nl + 1);
    let req;
    try { req = JSON.parse(line); } catch (e) { continue; }
    if (!req || typeof req !== 'object') continue;
    if (req.op === 'ack') {
      Atomics.add(acked, 0, Number(req.bytes) | 0);
      Atomics.notify(acked, 0);
    } else if (req.op === 'execute') {
      parentPort.postMessage(req);
    }
  }
}
parentPort.postMessage(null);
`;

emit({type: 'ready', language: 'javascript', pid: process.pid});
const reader = new Worker(STDIN_READER, {eval: true, workerData: {acked}});
reader.on('message', (req) => {
  if (req === null) process.exit(0);
  queue.push(req);
  pump();
});
