// The official `e2b` SDK (npm, pinned in package-lock.json), unmodified, against the real
// `agent-sandbox serve` and real sandboxes (docs/e2b.md). Configuration is what docs/e2b.md
// tells a user to set: E2B_API_URL and E2B_SANDBOX_URL at our server, E2B_API_KEY one of our
// keys. Every SDK call the compatibility covers is driven here, plus tenancy (two keys), the
// sandbox being the same one in /v1, and hostile Connect requests that must get Connect errors.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { Sandbox, CommandExitError, NotFoundError, TimeoutError, AuthenticationError,
  RateLimitError, SandboxError } from 'e2b';
import { Sandbox as CodeInterpreter } from '@e2b/code-interpreter';
import { Server, missingPrerequisite } from '../mcp/harness.mjs';

// `?? false`: node's test runner skips a test whose skip option is null, failures hidden.
const skip = missingPrerequisite() ?? false;
const TEMPLATES = process.env.ASB_TEMPLATES || '/var/lib/agent-sandbox/templates';
const noPython = skip || (fs.existsSync(path.join(TEMPLATES, 'python', 'rootfs', 'usr')) ? false
  : `the python template is not built under ${TEMPLATES} (agent-sandbox template build python)`);
let server, keyA, keyB, sbx;
// The server's uplink: one end of a veth pair whose other end lies in a network namespace of
// this suite's own, with nothing in it. E2B creates are networked by default (docs/e2b.md), and
// the server rejects whatever would leave by another interface than its uplink, so no packet of
// a sandbox here reaches a real network; DNS goes to a closed loopback port.
const UPLINK = `asbe2b${process.pid % 100000}`;
let uplinkMade = false;

function useKey(key) {
  process.env.E2B_API_KEY = key;
}

/** A raw call to the server's sandbox-traffic surface, as the SDK sends it. */
async function envd(path, { id = sbx.sandboxId, token = sbx.envdAccessToken, body, type,
  method = 'POST', headers = {} } = {}) {
  const h = { 'E2b-Sandbox-Id': id, 'E2b-Sandbox-Port': '49983', ...headers };
  if (token !== null) h['X-Access-Token'] = token;  // null: send none
  if (type) h['Content-Type'] = type;
  const r = await fetch(server.url + path, { method, headers: h, body,
    signal: AbortSignal.timeout(10000) });
  const buf = Buffer.from(await r.arrayBuffer());
  return { status: r.status, type: r.headers.get('content-type') || '', buf, text: buf.toString() };
}

/** Starts, in sandbox `s`, an HTTP server on 127.0.0.1:8001 that answers with the request's
 * headers. */
async function startHeaderEcho(s) {
  await s.files.write('echo.py', [
    'import http.server as h',
    'class H(h.BaseHTTPRequestHandler):',
    '    def do_GET(self):',
    '        b = str(self.headers).encode()',
    '        self.send_response(200); self.end_headers(); self.wfile.write(b)',
    "h.HTTPServer(('127.0.0.1', 8001), H).serve_forever()"].join('\n'));
  await s.commands.run('python3 /workspace/echo.py', { background: true });
}

/** Polls `done` every 50 ms for up to 10 s; returns its last answer. */
async function until(done) {
  for (let i = 0; i < 200 && !done(); i++) await new Promise((r) => setTimeout(r, 50));
  return done();
}

function envelope(json, flags = 0) {
  const payload = Buffer.from(json);
  const head = Buffer.alloc(5);
  head[0] = flags;
  head.writeUInt32BE(payload.length, 1);
  return Buffer.concat([head, payload]);
}

before(async () => {
  if (skip) return;
  execFileSync('ip', ['netns', 'add', UPLINK]);
  uplinkMade = true;
  execFileSync('ip', ['link', 'add', UPLINK, 'type', 'veth', 'peer', 'name', 'up0', 'netns',
    UPLINK]);
  execFileSync('ip', ['link', 'set', UPLINK, 'up']);
  // Metrics history every second, so getMetrics' windows have samples within a test's time.
  server = await new Server({ env: {
    AGENT_SANDBOX_METRICS_INTERVAL_SECONDS: '1',
    AGENT_SANDBOX_NETWORK_UPLINK: UPLINK,
    AGENT_SANDBOX_NETWORK_SUBNET: `10.216.${process.pid % 200}.0/24`,
    AGENT_SANDBOX_DNS_UPSTREAM: '127.0.0.1:9',
  } }).start();
  keyA = await server.newKey();
  keyB = await server.newKey();
  server.keys = [keyA, keyB];
  process.env.E2B_API_URL = server.url;
  process.env.E2B_SANDBOX_URL = server.url;
  useKey(keyA);
  sbx = await Sandbox.create({ metadata: { suite: 'e2b', run: String(process.pid) },
    envs: { FROM_CREATE: 'yes' }, timeoutMs: 300_000 });
});

after(async () => {
  if (server) await server.close();
  if (uplinkMade) {
    execFileSync('ip', ['link', 'del', UPLINK], { stdio: 'ignore' });  // (gone with the netns)
    execFileSync('ip', ['netns', 'del', UPLINK]);
  }
});

test('the quick start of the e2b README runs as written', { skip }, async () => {
  const sandbox = await Sandbox.create();
  try {
    const result = await sandbox.commands.run('echo "Hello from E2B!"');
    assert.equal(result.stdout, 'Hello from E2B!\n');
    assert.equal(result.exitCode, 0);
  } finally {
    await sandbox.kill();
  }
});

test('create answers what the SDK needs, and the sandbox is the same one in /v1', { skip },
  async () => {
    assert.match(sbx.sandboxId, /^sb_[0-9a-f]{16}$/);
    assert.match(sbx.envdAccessToken, /^e2bt_[0-9a-f]{64}$/);
    const v1 = await server.rest('GET', '/v1/sandboxes/' + sbx.sandboxId, undefined, keyA);
    assert.equal(v1.status, 200);
    assert.equal(v1.json.status, 'running');
    const info = await sbx.getInfo();
    assert.equal(info.sandboxId, sbx.sandboxId);
    assert.equal(info.templateId, 'base');
    assert.deepEqual(info.metadata, { suite: 'e2b', run: String(process.pid) });
    assert.equal(await sbx.isRunning(), true);
  });

// A warm pool (docs/adr/0027-warm-pools.md) serves E2B's creates too: the SDK's create asks for
// network (E2B's default) and passes envs, metadata and a timeout, all of which the claim sets.
test('Sandbox.create with envs takes a warm pool\'s sandbox and its commands see them', { skip },
  async () => {
    const pool = async () => (await server.rest('GET', '/v1/pools')).json.pools
      .find((p) => p.template === 'base' && p.network) ?? {};
    assert.equal((await server.rest('PUT', '/v1/pools/base', { size: 1, network: true })).status,
      200);
    try {
      for (let i = 0; i < 400 && (await pool()).ready !== 1; i++) {
        await new Promise((r) => setTimeout(r, 50));
      }
      const before = await pool();
      assert.equal(before.ready, 1);
      const s = await Sandbox.create({ envs: { POOLED: 'yes' }, metadata: { from: 'pool' },
        timeoutMs: 120_000 });
      try {
        assert.equal((await pool()).hits, before.hits + 1);
        assert.equal((await s.commands.run('echo $POOLED')).stdout, 'yes\n');
        assert.deepEqual((await s.getInfo()).metadata, { from: 'pool' });
      } finally {
        await s.kill();
      }
    } finally {
      await server.rest('PUT', '/v1/pools/base', { size: 0, network: true });
    }
  });

test('commands.run: stdout, stderr, exit codes, envs, cwd and users', { skip }, async () => {
  const r = await sbx.commands.run('echo out; echo err >&2');
  assert.equal(r.stdout, 'out\n');
  assert.equal(r.stderr, 'err\n');
  await assert.rejects(sbx.commands.run('echo partial; exit 3'), (e) => {
    assert.ok(e instanceof CommandExitError, String(e));
    assert.equal(e.exitCode, 3);
    assert.equal(e.stdout, 'partial\n');
    // The message envd sends (Go's Wait error), which E2B code logs and matches on.
    assert.equal(e.error, 'exit status 3');
    assert.equal(e.message, 'exit status 3');
    return true;
  });
  const env = await sbx.commands.run('echo "$FROM_CREATE $FROM_RUN"', { envs: { FROM_RUN: 'too' } });
  assert.equal(env.stdout, 'yes too\n');
  const cwd = await sbx.commands.run('pwd', { cwd: '/tmp' });
  assert.equal(cwd.stdout, '/tmp\n');
  assert.equal((await sbx.commands.run('id -u')).stdout, '1000\n');
  assert.equal((await sbx.commands.run('id -u', { user: 'root' })).stdout, '0\n');
  await assert.rejects(sbx.commands.run('true', { user: 'mallory' }));
  // What E2B's base template has and its users' code assumes: sudo without a password, and
  // `python` (ADR 0028).
  assert.equal((await sbx.commands.run('sudo whoami; sudo -u sandbox id -u')).stdout,
    'root\n1000\n');
  assert.match((await sbx.commands.run('python --version')).stdout, /^Python 3\./);
  const chunks = [];
  await sbx.commands.run('for i in 1 2 3; do echo line$i; done; echo e >&2', {
    onStdout: (d) => chunks.push('o:' + d), onStderr: (d) => chunks.push('e:' + d) });
  assert.equal(chunks.filter((c) => c.startsWith('o:')).join('').replace(/o:/g, ''),
    'line1\nline2\nline3\n');
  assert.ok(chunks.includes('e:e\n'), JSON.stringify(chunks));
  // Binary and non-UTF-8 output survive (bytes travel as base64 in the Connect JSON).
  const bin = await sbx.commands.run("printf 'caf\\303\\251'");
  assert.equal(bin.stdout, 'café');
  await assert.rejects(sbx.commands.run('/nonexistent/prog'), (e) => e.exitCode === 127);
});

test('a command past its timeoutMs is killed', { skip }, async () => {
  const t0 = Date.now();
  await assert.rejects(sbx.commands.run('sleep 30; echo never', { timeoutMs: 1500 }),
    (e) => e instanceof TimeoutError || /deadline|timeout/i.test(String(e)));
  assert.ok(Date.now() - t0 < 10000, 'the timeout ended the call');
  // Nothing of it is left running.
  let left = [];
  for (let i = 0; i < 50; i++) {
    left = (await sbx.commands.list()).filter((p) => p.args.join(' ').includes('sleep 30'));
    if (left.length === 0) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.deepEqual(left, []);
});

test('a sandbox killed during commands.run ends it as E2B says: killed or end of life', { skip },
  async () => {
    const doomed = await Sandbox.create();
    const running = doomed.commands.run('echo started; sleep 60', { onStdout: () => {} });
    const outcome = running.then(() => null, (e) => e);
    await new Promise((r) => setTimeout(r, 500));
    await doomed.kill();
    const e = await outcome;
    assert.ok(e instanceof TimeoutError, String(e));
    assert.match(e.message, /killed or reached its end of life/);
  });

test('background commands: list, connect, stdin, kill', { skip }, async () => {
  const bg = await sbx.commands.run('for i in $(seq 1 600); do echo tick$i; sleep 0.1; done',
    { background: true, timeoutMs: 0 });
  assert.ok(bg.pid > 0);
  const listed = await sbx.commands.list();
  assert.ok(listed.some((p) => p.pid === bg.pid && p.cmd === '/bin/bash'), JSON.stringify(listed));

  const seen = [];
  const attached = await sbx.commands.connect(bg.pid, { onStdout: (d) => seen.push(d), timeoutMs: 0 });
  for (let i = 0; i < 50 && !seen.join('').includes('tick'); i++) {
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.match(seen.join(''), /tick\d+/);
  await attached.disconnect();

  assert.equal(await sbx.commands.kill(bg.pid), true);
  await assert.rejects(bg.wait());
  assert.ok(!(await sbx.commands.list()).some((p) => p.pid === bg.pid));
  assert.equal(await sbx.commands.kill(bg.pid), false);

  const cat = await sbx.commands.run('cat', { background: true, stdin: true });
  await sbx.commands.sendStdin(cat.pid, 'hello stdin\n');
  await sbx.commands.closeStdin(cat.pid);
  const done = await cat.wait();
  assert.equal(done.stdout, 'hello stdin\n');
});

test('pty: create, input, resize, kill', { skip }, async () => {
  let out = '';
  const dec = new TextDecoder();
  const pty = await sbx.pty.create({ cols: 80, rows: 24, onData: (d) => (out += dec.decode(d)),
    timeoutMs: 0 });
  await sbx.pty.sendInput(pty.pid, new TextEncoder().encode('stty size; echo pty-$((6*7))\n'));
  for (let i = 0; i < 100 && !out.includes('pty-42'); i++) await new Promise((r) => setTimeout(r, 100));
  assert.match(out, /24 80/);
  assert.match(out, /pty-42/);
  await sbx.pty.resize(pty.pid, { cols: 100, rows: 30 });
  await sbx.pty.sendInput(pty.pid, new TextEncoder().encode('stty size\n'));
  for (let i = 0; i < 100 && !out.includes('30 100'); i++) await new Promise((r) => setTimeout(r, 100));
  assert.match(out, /30 100/);
  assert.equal(await sbx.pty.kill(pty.pid), true);
});

test('files: write, read, list, exists, makeDir, rename, remove, getInfo', { skip }, async () => {
  // Every path an answer shows reads as E2B's home, /home/user (our /workspace).
  const w = await sbx.files.write('/workspace/e2b/hello.txt', 'hello e2b');
  assert.equal(w.path, '/home/user/e2b/hello.txt');
  assert.equal(await sbx.files.read('/workspace/e2b/hello.txt'), 'hello e2b');
  // Relative paths start in the workspace, the sandbox's home.
  await sbx.files.write('rel.txt', 'relative');
  assert.equal(await sbx.files.read('/workspace/rel.txt'), 'relative');
  assert.equal((await sbx.commands.run('cat /workspace/rel.txt')).stdout, 'relative');
  // E2B's home, /home/user, names the workspace in file and cwd arguments, and commands start
  // there with $HOME and `pwd` saying so, as on E2B.
  const home = await sbx.files.write('/home/user/home.txt', 'at home');
  assert.equal(home.path, '/home/user/home.txt');
  assert.equal(await sbx.files.read('/home/user/home.txt'), 'at home');
  assert.equal((await sbx.commands.run('pwd; cat home.txt', { cwd: '/home/user' })).stdout,
    '/home/user\nat home');
  assert.equal((await sbx.commands.run('pwd; echo $HOME ~; cat home.txt')).stdout,
    '/home/user\n/home/user /home/user\nat home');
  assert.equal((await sbx.commands.run('mkdir -p sub && cd sub && pwd')).stdout,
    '/home/user/sub\n');
  assert.equal((await sbx.commands.run('pwd', { cwd: '/home/user/e2b' })).stdout,
    '/home/user/e2b\n');
  assert.equal((await sbx.commands.run('pwd', { cwd: '/tmp' })).stdout, '/tmp\n');
  // root keeps its own environment: E2B's home is the sandbox user's.
  assert.notEqual((await sbx.commands.run('echo $HOME', { user: 'root' })).stdout, '/home/user\n');
  const homeInfo = await sbx.files.getInfo('/home/user');
  assert.deepEqual([homeInfo.name, homeInfo.path, homeInfo.type], ['user', '/home/user', 'dir']);
  await assert.rejects(sbx.files.write('/home/userx/no.txt', 'x'));
  // Bytes, and several files at once.
  const bytes = new Uint8Array([0, 1, 2, 254, 255]);
  await sbx.files.write([{ path: '/workspace/e2b/a.bin', data: bytes.buffer },
    { path: '/workspace/e2b/b.txt', data: 'bee' }]);
  assert.deepEqual(await sbx.files.read('/workspace/e2b/a.bin', { format: 'bytes' }), bytes);
  // envd 0.5.7: raw octet-stream uploads, gzip-compressed ones, and streamed ones.
  const big = 'compress me '.repeat(50000);
  await sbx.files.write('/workspace/e2b/gz.txt', big, { gzip: true });
  assert.equal(await sbx.files.read('/workspace/e2b/gz.txt'), big);
  await sbx.files.write('/workspace/e2b/raw.txt', 'raw', { useOctetStream: true });
  assert.equal(await sbx.files.read('/workspace/e2b/raw.txt'), 'raw');
  const streamed = new ReadableStream({
    start(c) {
      c.enqueue(new TextEncoder().encode('streamed '));
      c.enqueue(new TextEncoder().encode('upload'));
      c.close();
    },
  });
  await sbx.files.write('/workspace/e2b/streamed.txt', streamed);
  assert.equal(await sbx.files.read('/workspace/e2b/streamed.txt'), 'streamed upload');
  // envd 0.6.2: file metadata, kept with the file (its user.e2b.* xattrs), in every EntryInfo.
  const tagged = await sbx.files.write('/workspace/e2b/tagged.txt', 'tagged',
    { metadata: { owner: 'agent-7', stage: 'draft' } });
  assert.deepEqual(tagged.metadata, { owner: 'agent-7', stage: 'draft' });
  assert.deepEqual((await sbx.files.getInfo('/workspace/e2b/tagged.txt')).metadata,
    { owner: 'agent-7', stage: 'draft' });
  const listed = (await sbx.files.list('/workspace/e2b')).find((e) => e.name === 'tagged.txt');
  assert.deepEqual(listed.metadata, { owner: 'agent-7', stage: 'draft' });
  await sbx.files.write('/workspace/e2b/tagged.txt', 'again', { metadata: { stage: 'final' },
    useOctetStream: true });  // a new file replaces the old, metadata and all
  assert.deepEqual((await sbx.files.getInfo('/workspace/e2b/tagged.txt')).metadata,
    { stage: 'final' });
  assert.equal((await sbx.files.getInfo('/workspace/e2b/b.txt')).metadata, undefined);
  await assert.rejects(sbx.files.write('/workspace/e2b/t2.txt', 'x',
    { metadata: { big: 'v'.repeat(2000) } }), /metadata/);
  await sbx.commands.run('rm /workspace/e2b/tagged.txt');
  await sbx.commands.run('rm /workspace/e2b/gz.txt /workspace/e2b/raw.txt /workspace/e2b/streamed.txt');
  assert.equal(await sbx.files.read('/workspace/e2b/b.txt'), 'bee');
  const names = (await sbx.files.list('/workspace/e2b')).map((e) => e.name).sort();
  assert.deepEqual(names, ['a.bin', 'b.txt', 'hello.txt']);
  assert.equal(await sbx.files.makeDir('/workspace/e2b/sub/deeper'), true);
  assert.equal(await sbx.files.makeDir('/workspace/e2b/sub/deeper'), false);
  const deep = (await sbx.files.list('/workspace/e2b', { depth: 2 })).map((e) => e.path).sort();
  assert.ok(deep.includes('/home/user/e2b/sub/deeper'), JSON.stringify(deep));
  assert.ok(!(await sbx.files.list('/workspace/e2b')).some((e) => e.name === 'deeper'));
  const info = await sbx.files.getInfo('/workspace/e2b/hello.txt');
  assert.equal(info.type, 'file');
  assert.equal(info.size, 9);
  assert.equal((await sbx.files.getInfo('/workspace/e2b/sub')).type, 'dir');
  const moved = await sbx.files.rename('/workspace/e2b/hello.txt', '/workspace/e2b/moved.txt');
  assert.equal(moved.path, '/home/user/e2b/moved.txt');
  assert.equal(await sbx.files.exists('/workspace/e2b/hello.txt'), false);
  assert.equal(await sbx.files.exists('/workspace/e2b/moved.txt'), true);
  // getInfo of a symlink: its target absolute, as envd resolves it, relative or not.
  await sbx.commands.run('cd /workspace/e2b && ln -s moved.txt rel-link && ln -s ../e2b/./moved.txt up-link && ln -s /etc/hostname abs-link');
  for (const [name, want] of [['rel-link', '/home/user/e2b/moved.txt'],
    ['up-link', '/home/user/e2b/moved.txt'], ['abs-link', '/etc/hostname']]) {
    const link = await sbx.files.getInfo('/workspace/e2b/' + name);
    assert.equal(link.type, 'symlink', name);
    assert.equal(link.symlinkTarget, want, name);
  }
  await sbx.files.remove('/workspace/e2b/sub');
  assert.equal(await sbx.files.exists('/workspace/e2b/sub'), false);
  // envd removes like rm -rf: a path already gone is no error.
  await sbx.files.remove('/workspace/e2b/sub');
  await sbx.files.remove('/workspace/e2b/never-was/deeper');
  await assert.rejects(sbx.files.read('/workspace/e2b/nope.txt'), NotFoundError);
  await assert.rejects(sbx.files.getInfo('/workspace/e2b/nope.txt'), NotFoundError);
});

test('files.watchDir reports changes, recursive or not', { skip }, async () => {
  await sbx.files.makeDir('/home/user/watched/sub');
  const events = [];
  const handle = await sbx.files.watchDir('/home/user/watched', (e) => events.push(e),
    { recursive: true });
  // Armed when watchDir returns: every change after it is reported, names relative to it.
  await sbx.files.write('/home/user/watched/a.txt', 'one');
  await sbx.files.makeDir('/home/user/watched/new');
  await sbx.files.write('/home/user/watched/new/b.txt', 'two');
  await sbx.files.rename('/home/user/watched/a.txt', '/home/user/watched/c.txt');
  await sbx.commands.run('chmod 600 /home/user/watched/c.txt');
  await sbx.files.remove('/home/user/watched/c.txt');
  const seen = () => events.map((e) => `${e.type} ${e.name}`);
  assert.ok(await until(() => seen().includes('remove c.txt')), JSON.stringify(seen()));
  // (new/b.txt may be written before the watch of `new` exists: then the watch's first look
  // at `new` reports it as created, and its write is not seen.)
  for (const want of ['create a.txt', 'write a.txt', 'create new', 'create new/b.txt',
    'rename a.txt', 'create c.txt', 'chmod c.txt', 'remove c.txt']) {
    assert.ok(seen().includes(want), `${want} not in ${JSON.stringify(seen())}`);
  }
  // The SDK's own write over an existing file is a write, as envd reports it: a program that
  // uploads and then waits for "write" sees it.
  const writesBefore = seen().filter((x) => x === 'write new/b.txt').length;
  await sbx.files.write('/home/user/watched/new/b.txt', 'three');
  assert.ok(await until(() => seen().filter((x) => x === 'write new/b.txt').length ===
    writesBefore + 1), JSON.stringify(seen()));
  assert.equal(seen().filter((x) => x === 'create new/b.txt').length, 1, JSON.stringify(seen()));
  await handle.stop();

  const flat = [];
  const top = await sbx.files.watchDir('/workspace/watched', (e) => flat.push(e));
  await sbx.files.write('/workspace/watched/sub/deep.txt', 'below: not reported');
  await sbx.files.write('/workspace/watched/top.txt', 'reported');
  assert.ok(await until(() => flat.some((e) => e.name === 'top.txt')), JSON.stringify(flat));
  assert.ok(!flat.some((e) => e.name.includes('deep')), JSON.stringify(flat));
  await top.stop();
  await assert.rejects(sbx.files.watchDir('/workspace/no-such-dir', () => {}), NotFoundError);

  // envd 0.6.3's includeEntry: create, write and chmod events carry the entry (E2B's paths,
  // metadata and all); removals and events of a watch without it carry none.
  const withEntry = [];
  const ew = await sbx.files.watchDir('/home/user/watched', (e) => withEntry.push(e),
    { includeEntry: true, allowNetworkMounts: true });
  await sbx.files.write('/home/user/watched/e.txt', 'entry!', { metadata: { stage: 'draft' } });
  await sbx.commands.run('chmod 640 /home/user/watched/e.txt');
  await sbx.files.remove('/home/user/watched/e.txt');
  assert.ok(await until(() => withEntry.some((e) => e.type === 'remove')),
    JSON.stringify(withEntry));
  await ew.stop();
  const written = withEntry.find((e) => e.type === 'write' && e.entry);
  assert.ok(written, JSON.stringify(withEntry));
  assert.deepEqual([written.entry.path, written.entry.name, written.entry.type, written.entry.size],
    ['/home/user/watched/e.txt', 'e.txt', 'file', 6]);
  assert.deepEqual(written.entry.metadata, { stage: 'draft' });
  const chmodded = withEntry.find((e) => e.type === 'chmod' && e.entry);
  assert.ok(chmodded, JSON.stringify(withEntry));
  assert.equal(chmodded.entry.mode & 0o777, 0o640);
  assert.equal(withEntry.find((e) => e.type === 'remove').entry, undefined);
  assert.ok(flat.every((e) => e.entry === undefined), JSON.stringify(flat));
});

test('CreateWatcher, GetWatcherEvents, RemoveWatcher (the Python SDK\'s watch) are per sandbox',
  { skip }, async () => {
    const unary = (method, msg, opts = {}) => envd('/filesystem.Filesystem/' + method,
      { type: 'application/json', body: JSON.stringify(msg), ...opts });
    await sbx.files.makeDir('/workspace/polled');
    const made = await unary('CreateWatcher', { path: '/home/user/polled', recursive: false });
    assert.equal(made.status, 200, made.text);
    const watcherId = JSON.parse(made.text).watcherId;
    assert.match(watcherId, /^w_[0-9a-f]{32}$/);
    await sbx.files.write('/workspace/polled/p.txt', 'polled');
    const got = [];
    const created = () => got.some((e) => e.name === 'p.txt' && e.type === 'EVENT_TYPE_CREATE');
    for (let i = 0; i < 100 && !created(); i++) {
      const r = await unary('GetWatcherEvents', { watcherId });
      assert.equal(r.status, 200, r.text);
      got.push(...JSON.parse(r.text).events);
      if (!created()) await new Promise((res) => setTimeout(res, 100));
    }
    assert.ok(created(), JSON.stringify(got));
    // Another sandbox, with its own valid token, cannot reach this one's watcher.
    const other = await Sandbox.create();
    try {
      const foreign = await unary('GetWatcherEvents', { watcherId },
        { id: other.sandboxId, token: other.envdAccessToken });
      assert.equal(foreign.status, 404, foreign.text);
      assert.equal(JSON.parse(foreign.text).code, 'not_found');
    } finally {
      await other.kill();
    }
    assert.equal((await unary('RemoveWatcher', { watcherId })).status, 200);
    const gone = await unary('GetWatcherEvents', { watcherId });
    assert.equal(gone.status, 404);
    assert.equal((await unary('CreateWatcher', { path: '/workspace/nope' })).status, 404);
    assert.equal(JSON.parse((await unary('GetWatcherEvents', {})).text).code, 'invalid_argument');
  });

test('signed file URLs: downloadUrl and uploadUrl work with no header; a bad one is 401', { skip },
  async () => {
    await sbx.files.write('signed.txt', 'signed content');
    // E2B_SANDBOX_URL points here, so the URL names no sandbox: its signature does.
    const down = await sbx.downloadUrl('signed.txt');
    assert.ok(down.startsWith(server.url + '/files?'), down);
    let r = await fetch(down);
    assert.equal(r.status, 200);
    assert.equal(await r.text(), 'signed content');
    const expiring = await sbx.downloadUrl('signed.txt', { useSignatureExpiration: 60 });
    assert.equal(await (await fetch(expiring)).text(), 'signed content');
    const up = await sbx.uploadUrl('uploaded.txt');
    const form = new FormData();
    form.append('file', new Blob(['via a signed url']), 'uploaded.txt');
    r = await fetch(up, { method: 'POST', body: form });
    assert.equal(r.status, 200, await r.text());
    assert.equal(await sbx.files.read('uploaded.txt'), 'via a signed url');
    // The host form (<port>-<id>.<domain>) takes the same signature.
    const u = new URL(down);
    const status = await new Promise((resolve, reject) => {
      http.get({ host: '127.0.0.1', port: u.port, path: '/files' + u.search,
        headers: { Host: `49983-${sbx.sandboxId}.localhost:${u.port}` } },
      (res) => { res.resume(); res.on('end', () => resolve(res.statusCode)); }).on('error', reject);
    });
    assert.equal(status, 200);
    // A forged, altered, expired or wrong-operation signature opens nothing.
    const bad = [
      down.replace(/signature=[^&]+/, 'signature=v1_' + 'A'.repeat(43)),
      down.replace('signed.txt', 'uploaded.txt'),
      expiring.replace(/signature_expiration=\d+/, 'signature_expiration=1000'),
      up,  // a write signature used for a read
      server.url + '/files?path=signed.txt',
    ];
    for (const url of bad) {
      r = await fetch(url);
      assert.equal(r.status, 401, url);
    }
  });

test('a symlink never leads a file call out of the sandbox', { skip }, async () => {
  await sbx.commands.run('ln -sf /etc /workspace/etc-link; ln -sf / /workspace/root-link');
  // A read through it is refused or shows the sandbox's own /etc, never the host's.
  const got = await sbx.files.read('/workspace/root-link/etc/hostname').catch((e) => e);
  if (typeof got === 'string') {
    assert.equal(got, (await sbx.commands.run('cat /etc/hostname')).stdout);
  } else {
    assert.ok(got instanceof Error && !/\/var\/lib|errno/i.test(got.message), String(got));
  }
  await assert.rejects(sbx.files.write('/workspace/etc-link/passwd', 'x'));
});

test('secure: false is refused with the reason, never silently ignored', { skip }, async () => {
  // E2B's API takes `secure` on create (the e2b 2.x JS SDK no longer sends it; older SDKs and
  // direct API users do): false would be an envd without its access token.
  const create = (secure) => fetch(server.url + '/sandboxes', {
    method: 'POST',
    headers: { 'X-API-Key': process.env.E2B_API_KEY, 'Content-Type': 'application/json' },
    body: JSON.stringify({ templateID: 'base', timeout: 60, secure }),
  });
  const refused = await create(false);
  assert.equal(refused.status, 400);
  assert.match((await refused.json()).message, /secure: false is not offered/);
  const bad = await create('yes');
  assert.equal(bad.status, 400);
  const ok = await create(true);
  assert.equal(ok.status, 201);
  const made = await ok.json();
  assert.ok(made.envdAccessToken, JSON.stringify(made));
  await Sandbox.kill(made.sandboxID);
});

test('file calls reach the whole sandbox as its user, as envd\'s do', { skip }, async () => {
  // Relative paths start in the home (/workspace); absolute ones go anywhere the user may.
  const osRelease = await sbx.files.read('/etc/os-release');
  assert.match(osRelease, /^PRETTY_NAME=|ID=/m);
  const info = await sbx.files.write('/tmp/e2b-abs/x.txt', 'in tmp');
  assert.equal(info.path, '/tmp/e2b-abs/x.txt');
  assert.equal((await sbx.commands.run('cat /tmp/e2b-abs/x.txt; stat -c %U /tmp/e2b-abs/x.txt'))
    .stdout, 'in tmp' + 'sandbox\n');
  const listed = await sbx.files.list('/tmp/e2b-abs');
  assert.deepEqual(listed.map((e) => e.path), ['/tmp/e2b-abs/x.txt']);
  assert.equal(await sbx.files.exists('/etc/os-release'), true);
  await assert.rejects(sbx.files.read('/tmp/e2b-abs/missing'), NotFoundError);
  // The read-only root refuses a write; nothing is written.
  await assert.rejects(sbx.files.write('/usr/e2b-x', 'no'));
  assert.equal(await sbx.files.exists('/usr/e2b-x'), false);
});

test('network on E2B\'s terms: internet by default, allowOut over denyOut, updateNetwork',
  { skip }, async () => {
    // (Enforcement on a test internet: tests/e2e/test_network.py, test_e2b_egress_rules.)
    assert.equal((await sbx.getInfo()).allowInternetAccess, true);
    const s = await Sandbox.create({ timeoutMs: 120_000, network: {
      allowOut: ['api.example.test', '192.0.2.7'], denyOut: ({ allTraffic }) => [allTraffic] } });
    try {
      let info = await s.getInfo();
      assert.equal(info.allowInternetAccess, true);
      assert.deepEqual(info.network.allowOut, ['api.example.test', '192.0.2.7/32']);
      assert.deepEqual(info.network.denyOut, ['0.0.0.0/0']);
      // Only the allowed name resolves; a direct connection elsewhere is refused at once.
      const probe = await s.commands.run(
        'getent hosts other.example.test || echo unresolved; ' +
        'timeout 5 bash -c "exec 3<>/dev/tcp/198.51.100.1/80" 2>/dev/null && echo open || ' +
        'echo refused');
      assert.equal(probe.stdout, 'unresolved\nrefused\n');
      await s.updateNetwork({ allowInternetAccess: false });
      info = await s.getInfo();
      assert.equal(info.allowInternetAccess, false);
      assert.deepEqual(info.network.denyOut, ['0.0.0.0/0']);
      // The update replaces every rule: nothing said is everything allowed.
      await s.updateNetwork({});
      info = await s.getInfo();
      assert.equal(info.allowInternetAccess, true);
      assert.deepEqual([info.network.allowOut, info.network.denyOut], [undefined, undefined]);
      // An allowed address carved out of a denied range.
      await s.updateNetwork({ allowOut: ['10.1.2.3'], denyOut: ['10.0.0.0/8'] });
      assert.equal((await s.getInfo()).network.denyOut.length, 24);
      await assert.rejects(s.updateNetwork({ denyOut: ['example.test'] }),
        (e) => e.statusCode === 400 && /deny rules take IP addresses/.test(e.message));
    } finally {
      await s.kill();
    }
    const off = await Sandbox.create({ allowInternetAccess: false, timeoutMs: 60_000 });
    try {
      assert.equal((await off.getInfo()).allowInternetAccess, false);
      const r = await off.commands.run('getent hosts example.test || echo unresolved');
      assert.equal(r.stdout, 'unresolved\n');
    } finally {
      await off.kill();
    }
    for (const [network, says] of [
      [{ egressProxy: { address: 'proxy.example.test:1080' } }, 'network.egressProxy'],
      [{ rules: { 'a.example.test': [{ transform: { headers: { A: 'b' } } }] },
        allowOut: ['a.example.test'] }, 'network.rules'],
      [{ allowOut: ['10.0.0.0/8:443'] }, 'allowOut[0]']]) {
      await assert.rejects(Sandbox.create({ network }),
        (e) => e.statusCode === 400 && e.message.includes(says), says);
    }
  });

test('list, connect, setTimeout and kill through the control plane', { skip }, async () => {
  const mine = await Sandbox.list({ query: { metadata: { suite: 'e2b' } } }).nextItems();
  assert.deepEqual(mine.map((s) => s.sandboxId), [sbx.sandboxId]);
  assert.deepEqual(await Sandbox.list({ query: { metadata: { suite: 'other' } } }).nextItems(), []);
  // Newest first, as E2B's API lists; order=asc the other way; an unknown order is refused.
  const later = await Sandbox.create('base', { metadata: { suite: 'order' } });
  try {
    const ids = async (q) => {
      const r = await fetch(`${process.env.E2B_API_URL}/v2/sandboxes${q}`,
        { headers: { 'X-API-Key': process.env.E2B_API_KEY } });
      assert.equal(r.status, 200, q);
      return (await r.json()).map((x) => x.sandboxID).filter((id) => id === sbx.sandboxId || id === later.sandboxId);
    };
    assert.deepEqual(await ids(''), [later.sandboxId, sbx.sandboxId]);
    assert.deepEqual(await ids('?order=desc'), [later.sandboxId, sbx.sandboxId]);
    assert.deepEqual(await ids('?order=asc'), [sbx.sandboxId, later.sandboxId]);
    const bad = await fetch(`${process.env.E2B_API_URL}/v2/sandboxes?order=up`,
      { headers: { 'X-API-Key': process.env.E2B_API_KEY } });
    assert.equal(bad.status, 400);
  } finally {
    await later.kill();
  }
  const again = await Sandbox.connect(sbx.sandboxId);
  assert.equal((await again.commands.run('echo reconnected')).stdout, 'reconnected\n');
  // The history, then one sample taken now: a busy loop shows as CPU use, memory and disk
  // within the limits.
  const busy = await sbx.commands.run('timeout 5 sh -c "while :; do :; done"', { background: true });
  await new Promise((r) => setTimeout(r, 2500));
  const all = await sbx.getMetrics();
  await sbx.commands.kill(busy.pid);
  assert.ok(all.length >= 3, JSON.stringify(all));  // samples every second, and one now
  const times = all.map((x) => x.timestamp.getTime());
  assert.deepEqual(times, [...times].sort((p, q) => p - q));
  const m = all.at(-1);
  // A window: only the samples within it; one before the sandbox existed has none.
  const from = new Date(times.at(-2));
  const windowed = await sbx.getMetrics({ start: from });
  assert.ok(windowed.length >= 1 && windowed.every((x) => x.timestamp.getTime() >= times.at(-2) - 1000),
    JSON.stringify(windowed));
  assert.deepEqual(await sbx.getMetrics({ start: new Date(Date.now() - 3600_000),
    end: new Date(Date.now() - 3000_000) }), []);
  assert.ok(m.cpuUsedPct > 20 && m.cpuUsedPct <= 100, JSON.stringify(m));
  assert.ok(m.cpuCount >= 1);
  assert.ok(m.memUsed > 0 && m.memUsed <= m.memTotal, JSON.stringify(m));
  assert.ok(m.diskTotal > 0 && m.diskUsed <= m.diskTotal, JSON.stringify(m));
  assert.ok(Math.abs(m.timestamp.getTime() - Date.now()) < 60_000);
  const before = (await sbx.getInfo()).endAt.getTime();
  await sbx.setTimeout(600_000);
  assert.ok((await sbx.getInfo()).endAt.getTime() > before);

  const doomed = await Sandbox.create();
  await doomed.kill();
  assert.equal(await doomed.isRunning(), false);
  await assert.rejects(Sandbox.connect(doomed.sandboxId), NotFoundError);
  const v1 = await server.rest('GET', '/v1/sandboxes/' + doomed.sandboxId, undefined, keyA);
  assert.equal(v1.status, 404);
});

test('pause, list by state, connect resumes; autoPause pauses at the timeout', { skip },
  async () => {
    const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
    const s = await Sandbox.create({ timeoutMs: 120_000, metadata: { suite: 'pause' } });
    try {
      await s.files.write('kept.txt', 'kept');
      await s.commands.run('while :; do date +%s%N >> /home/user/ticks; sleep 0.02; done',
        { background: true });
      await sleep(300);
      assert.equal(await s.pause(), true);
      assert.equal(await s.pause(), false);  // already paused: the SDK's false
      const info = await s.getInfo();
      assert.equal(info.state, 'paused');
      assert.deepEqual(info.lifecycle, { onTimeout: 'kill', autoResume: false });
      assert.equal(await s.isRunning(), false);
      await assert.rejects(s.commands.run('true'));
      const ids = async (state) => (await Sandbox.list({ query: { metadata: { suite: 'pause' },
        ...(state ? { state } : {}) } }).nextItems()).map((x) => x.sandboxId);
      assert.deepEqual(await ids(['paused']), [s.sandboxId]);
      assert.deepEqual(await ids(['running']), []);
      assert.deepEqual(await ids(), [s.sandboxId]);  // both by default
      const v1 = await server.rest('GET', '/v1/sandboxes/' + s.sandboxId, undefined, keyA);
      assert.equal(v1.json.status, 'paused');
      await sleep(1200);

      const back = await Sandbox.connect(s.sandboxId, { timeoutMs: 200_000 });
      const running = await back.getInfo();
      assert.equal(running.state, 'running');
      assert.ok(Math.abs(running.endAt.getTime() - (Date.now() + 200_000)) < 20_000,
        String(running.endAt));
      await sleep(300);
      const ticks = (await back.files.read('ticks')).trim().split('\n').map(Number);
      let gap = 0;
      for (let i = 1; i < ticks.length; i++) gap = Math.max(gap, ticks[i] - ticks[i - 1]);
      assert.ok(gap / 1e9 >= 1.1, `the loop ran while paused (longest gap ${gap / 1e9} s)`);
      assert.ok(ticks.at(-1) / 1e6 > Date.now() - 1000, 'the loop did not go on');
      assert.equal(await back.files.read('kept.txt'), 'kept');
      // Connecting to a running sandbox does not resume anything and keeps it running.
      assert.equal((await (await Sandbox.connect(s.sandboxId)).commands.run('echo on')).stdout,
        'on\n');
      // Raw bodies: a timeout past our longest is the longest (not an overflow that changes
      // nothing), and E2B's options of the wrong type are 400s in E2B's error shape.
      const api = async (method, p, body) => {
        const r = await fetch(server.url + p, { method, headers: { 'X-API-KEY': keyA,
          'Content-Type': 'application/json' }, body: body === undefined ? undefined : body });
        return { status: r.status, json: await r.json().catch(() => null) };
      };
      const endBefore = (await back.getInfo()).endAt.getTime();
      const far = await api('POST', `/v2/sandboxes/${s.sandboxId}/connect`,
        '{"timeout": 9223372036854775807}');
      assert.equal(far.status, 200, JSON.stringify(far));
      assert.ok((await back.getInfo()).endAt.getTime() > endBefore, 'connect did not extend it');
      // An empty ?state= is no filter (both states), not a filter that matches nothing.
      const listed = await api('GET',
        `/v2/sandboxes?state=&metadata=${encodeURIComponent('suite=pause')}`);
      assert.deepEqual(listed.json.map((x) => x.sandboxID), [s.sandboxId]);
      for (const [p, body] of [[`/sandboxes/${s.sandboxId}/pause`, '{"memory": "no"}'],
        [`/sandboxes/${s.sandboxId}/pause`, '{"memory": 0}'],
        ['/v2/sandboxes', '{"templateID": "base", "autoResume": true}'],
        ['/v2/sandboxes', '{"templateID": "base", "autoResume": {"enabled": "true"}}'],
        ['/v2/sandboxes', '{"templateID": "base", "autoPauseMemory": "false"}']]) {
        const r = await api('POST', p, body);
        assert.equal(r.status, 400, `${p} ${body}: ${JSON.stringify(r)}`);
        assert.equal(r.json.code, 400);
      }
    } finally {
      await s.kill();
    }
    // autoResume: a paused sandbox's commands and files resume it, and are served.
    const wakes = await Sandbox.create({ lifecycle: { onTimeout: 'pause', autoResume: true } });
    try {
      assert.deepEqual((await wakes.getInfo()).lifecycle, { onTimeout: 'pause', autoResume: true });
      await wakes.files.write('woke.txt', 'kept');
      assert.equal(await wakes.pause(), true);
      assert.equal((await wakes.getInfo()).state, 'paused');
      const [a, b] = await Promise.all([wakes.commands.run('cat woke.txt'),
        wakes.files.read('woke.txt')]);  // two at once resume it once
      assert.equal(a.stdout, 'kept');
      assert.equal(b, 'kept');
      assert.equal((await wakes.getInfo()).state, 'running');
      const v1 = await server.rest('GET', '/v1/sandboxes/' + wakes.sandboxId, undefined, keyA);
      assert.equal(v1.json.auto_resume, true);
    } finally {
      await wakes.kill();
    }

    const auto = await Sandbox.create({ timeoutMs: 1000, lifecycle: { onTimeout: 'pause' } });
    try {
      assert.equal((await auto.getInfo()).lifecycle.onTimeout, 'pause');
      await auto.files.write('note.txt', 'still here');
      let state = 'running';
      for (let i = 0; i < 80 && state !== 'paused'; i++) {
        await sleep(100);
        state = (await auto.getInfo()).state;
      }
      assert.equal(state, 'paused', 'autoPause did not pause at the timeout');
      const resumed = await Sandbox.connect(auto.sandboxId, { timeoutMs: 60_000 });
      assert.equal(await resumed.files.read('note.txt'), 'still here');
    } finally {
      await auto.kill();
    }
  });

test('pause({ keepMemory: false }) keeps only the files; connect starts it afresh', { skip },
  async () => {
    const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
    const s = await Sandbox.create({ timeoutMs: 120_000 });
    try {
      await s.files.write('kept.txt', 'kept');
      await s.commands.run('sleep 1000', { background: true });
      assert.equal(await s.pause({ keepMemory: false }), true);
      assert.equal(await s.pause({ keepMemory: false }), false);  // already paused
      assert.equal((await s.getInfo()).state, 'paused');
      const v1 = await server.rest('GET', '/v1/sandboxes/' + s.sandboxId, undefined, keyA);
      assert.equal(v1.json.paused_memory, false);
      const back = await Sandbox.connect(s.sandboxId);
      assert.equal((await back.getInfo()).state, 'running');
      assert.equal(await back.files.read('kept.txt'), 'kept');
      assert.equal((await back.commands.run('pgrep -c sleep || true')).stdout, '0\n');
      // onResume: 'reboot' of a sandbox paused with its memory: what ran does not run on.
      await back.commands.run('sleep 1000', { background: true });
      assert.equal(await back.pause(), true);
      const rebooted = await Sandbox.connect(s.sandboxId, { onResume: 'reboot' });
      assert.equal((await rebooted.commands.run('pgrep -c sleep || true')).stdout, '0\n');
      assert.equal(await rebooted.files.read('kept.txt'), 'kept');
    } finally {
      await s.kill();
    }
    // onTimeout: { action: 'pause', keepMemory: false }: the timeout keeps only the files.
    const auto = await Sandbox.create({ timeoutMs: 1000,
      lifecycle: { onTimeout: { action: 'pause', keepMemory: false } } });
    try {
      await auto.files.write('note.txt', 'still here');
      let state = 'running';
      for (let i = 0; i < 100 && state !== 'paused'; i++) {
        await sleep(100);
        state = (await auto.getInfo()).state;
      }
      assert.equal(state, 'paused', 'autoPause did not pause at the timeout');
      const v1 = await server.rest('GET', '/v1/sandboxes/' + auto.sandboxId, undefined, keyA);
      assert.equal(v1.json.paused_memory, false);
      assert.equal(v1.json.auto_pause_keep_memory, false);
      const resumed = await Sandbox.connect(auto.sandboxId, { timeoutMs: 60_000 });
      assert.equal(await resumed.files.read('note.txt'), 'still here');
    } finally {
      await auto.kill();
    }
  });

test('Sandbox.list: newest first, order, startedAfter and template filters', { skip }, async () => {
  const a = await Sandbox.create({ metadata: { suite: 'list' } });
  await new Promise((r) => setTimeout(r, 20));
  const b = await Sandbox.create({ metadata: { suite: 'list' } });
  try {
    const ids = async (opts = {}) => (await Sandbox.list({ ...opts,
      query: { metadata: { suite: 'list' }, ...(opts.query ?? {}) } }).nextItems())
      .map((x) => x.sandboxId);
    assert.deepEqual(await ids(), [b.sandboxId, a.sandboxId]);  // newest first
    assert.deepEqual(await ids({ order: 'asc' }), [a.sandboxId, b.sandboxId]);
    const bStarted = (await b.getInfo()).startedAt;
    assert.deepEqual(await ids({ query: { startedAfter: bStarted } }), [b.sandboxId]);
    assert.deepEqual(await ids({ query: { template: 'base' } }), [b.sandboxId, a.sandboxId]);
    assert.deepEqual(await ids({ query: { template: 'no-such-template' } }), []);
    await assert.rejects(ids({ order: 'sideways' }),
      (e) => e instanceof SandboxError && /order/.test(e.message));
  } finally {
    await a.kill();
    await b.kill();
  }
});

test('fork: children with the state at the fork, count, the static form, errors', { skip },
  async () => {
    const parent = await Sandbox.create({ metadata: { suite: 'fork' }, envs: { ROLE: 'parent' } });
    const made = [];
    const keep = (k) => {
      assert.ok(k instanceof Sandbox, String(k));
      made.push(k);
      return k;
    };
    try {
      await parent.files.write('/workspace/state.txt', 'at-fork');
      const [one] = await parent.fork();
      keep(one);
      assert.notEqual(one.sandboxId, parent.sandboxId);
      assert.equal(await one.files.read('/workspace/state.txt'), 'at-fork');
      assert.equal((await one.commands.run('echo $ROLE')).stdout, 'parent\n');
      assert.deepEqual((await one.getInfo()).metadata, { suite: 'fork' });
      const two = await parent.fork({ count: 2, timeoutMs: 120_000 });
      assert.equal(two.length, 2);
      two.forEach(keep);
      // Each its own copy; the parent runs on with its own.
      await parent.files.write('/workspace/state.txt', 'later');
      await two[0].files.write('/workspace/state.txt', 'mine');
      assert.equal(await two[1].files.read('/workspace/state.txt'), 'at-fork');
      assert.equal(await parent.files.read('/workspace/state.txt'), 'later');
      assert.ok((await two[1].getInfo()).endAt.getTime() - Date.now() <= 121_000);
      const [st] = await Sandbox.fork(parent.sandboxId);
      keep(st);
      assert.equal(await st.files.read('/workspace/state.txt'), 'later');
      await assert.rejects(parent.fork({ count: 0 }),
        (e) => e instanceof SandboxError && e.statusCode === 400 && /count/.test(e.message));
      const doomed = await Sandbox.create();
      await doomed.kill();
      await assert.rejects(Sandbox.fork(doomed.sandboxId), NotFoundError);
      useKey(keyB);
      try {
        await assert.rejects(Sandbox.fork(parent.sandboxId), NotFoundError);  // not B's
      } finally {
        useKey(keyA);
      }
    } finally {
      for (const k of made) await k.kill().catch(() => {});
      await parent.kill();
    }
    // A key's own sandbox quota: the fork that fits is made, the other is its RateLimitError.
    const r = await server.rest('POST', '/v1/keys', { name: 'fork-quota', max_sandboxes: 2 });
    assert.equal(r.status, 201, JSON.stringify(r));
    server.keys.push(r.json.key);
    useKey(r.json.key);
    try {
      const p = await Sandbox.create();
      try {
        const [a, b] = await p.fork({ count: 2 });
        assert.ok(a instanceof Sandbox, String(a));
        assert.ok(b instanceof RateLimitError, String(b));
        await a.kill();
      } finally {
        await p.kill();
      }
    } finally {
      useKey(keyA);
    }
  });

test('snapshots: create, boot from by id and by name, list, page, delete twice', { skip },
  async () => {
    const src = await Sandbox.create({ metadata: { suite: 'snap' } });
    const booted = [];
    const boot = async (idOrName, opts) => {
      const b = await Sandbox.create(idOrName, opts);
      booted.push(b);
      return b;
    };
    const made = [];
    try {
      await src.files.write('/workspace/state.txt', 'v1');
      const s1 = await src.createSnapshot({ name: 'e2e-snap' });
      made.push(s1.snapshotId);
      assert.match(s1.snapshotId, /^snap_/);
      assert.deepEqual(s1.names, ['e2e-snap']);
      await src.files.write('/workspace/state.txt', 'v2');
      const s2 = await src.createSnapshot({ name: 'e2e-snap' });  // a new version of the name
      made.push(s2.snapshotId);
      const s3 = await Sandbox.createSnapshot(src.sandboxId);  // the static form, no name
      made.push(s3.snapshotId);
      assert.deepEqual(s3.names, []);
      // Several sandboxes from one snapshot, each with its files; a name boots its newest.
      const a = await boot(s1.snapshotId, { envs: { FROM: 'snap' }, timeoutMs: 120_000 });
      const b = await boot(s1.snapshotId);
      assert.equal(await a.files.read('/workspace/state.txt'), 'v1');
      assert.equal(await b.files.read('/workspace/state.txt'), 'v1');
      assert.equal((await a.commands.run('echo $FROM')).stdout, 'snap\n');
      await a.files.write('/workspace/state.txt', 'a');
      assert.equal(await b.files.read('/workspace/state.txt'), 'v1');
      const byName = await boot('e2e-snap');
      assert.equal(await byName.files.read('/workspace/state.txt'), 'v2');
      // Lists: all, by sandbox, by name; newest first, paged.
      const ids = (xs) => xs.map((x) => x.snapshotId);
      const all = await Sandbox.listSnapshots().nextItems();
      assert.deepEqual(ids(all).filter((x) => made.includes(x)), [...made].reverse());
      assert.deepEqual(ids(await src.listSnapshots().nextItems()), [...made].reverse());
      assert.deepEqual(ids(await Sandbox.listSnapshots({ name: 'e2e-snap' }).nextItems()),
        [s2.snapshotId, s1.snapshotId]);
      const pager = Sandbox.listSnapshots({ sandboxId: src.sandboxId, limit: 2 });
      const first = await pager.nextItems();
      assert.equal(first.length, 2);
      assert.equal(pager.hasNext, true);
      assert.deepEqual(ids(await pager.nextItems()), [s1.snapshotId]);
      assert.equal(pager.hasNext, false);
      // The same snapshots under /v1, with their names and the name filter.
      const v1 = await server.rest('GET', '/v1/snapshots?name=e2e-snap', undefined, keyA);
      assert.deepEqual(v1.json.snapshots.map((x) => x.id), [s1.snapshotId, s2.snapshotId]);
      // Another tenant sees, boots and deletes none of them.
      useKey(keyB);
      try {
        assert.deepEqual(ids(await Sandbox.listSnapshots().nextItems()).filter((x) => made.includes(x)), []);
        await assert.rejects(Sandbox.create(s1.snapshotId));
        assert.equal(await Sandbox.deleteSnapshot(s1.snapshotId), false);
      } finally {
        useKey(keyA);
      }
      // Delete: true, then false; a deleted one boots nothing.
      assert.equal(await Sandbox.deleteSnapshot(s3.snapshotId), true);
      assert.equal(await Sandbox.deleteSnapshot(s3.snapshotId), false);
      assert.equal(await Sandbox.deleteSnapshot('base'), false);
      await assert.rejects(Sandbox.create(s3.snapshotId));
    } finally {
      for (const x of booted) await x.kill().catch(() => {});
      for (const id of made) await Sandbox.deleteSnapshot(id).catch(() => {});
      await src.kill();
    }
  });

test('two keys see none of each other\'s sandboxes', { skip }, async () => {
  useKey(keyB);
  try {
    const theirs = await Sandbox.list().nextItems();
    assert.ok(!theirs.some((s) => s.sandboxId === sbx.sandboxId));
    await assert.rejects(Sandbox.connect(sbx.sandboxId), NotFoundError);
    await assert.rejects(Sandbox.kill(sbx.sandboxId).then((ok) => {
      if (!ok) throw new NotFoundError('not found');
    }), NotFoundError);
    await assert.rejects(Sandbox.getInfo(sbx.sandboxId), NotFoundError);
    await assert.rejects(Sandbox.pause(sbx.sandboxId), NotFoundError);
  } finally {
    useKey(keyA);
  }
  assert.equal((await sbx.getInfo()).state, 'running');  // B's pause reached nothing
  // The sandbox traffic needs this sandbox's token: none, another's, or a forged one opens nothing.
  const other = await Sandbox.create();
  try {
    for (const token of [null, '', other.envdAccessToken, 'e2bt_' + '0'.repeat(64)]) {
      const r = await envd('/filesystem.Filesystem/Stat', { token, type: 'application/json',
        body: JSON.stringify({ path: '/workspace' }) });
      assert.equal(r.status, 401, r.text);
      assert.equal(JSON.parse(r.text).code, 'unauthenticated');
    }
    // An unknown sandbox looks the same as one without the right token.
    const unknown = await envd('/health', { id: 'sb_0123456789abcdef', method: 'GET' });
    assert.equal(unknown.status, 401);
  } finally {
    await other.kill();
  }
  // A wrong API key on the control plane.
  useKey('asb_' + '0'.repeat(48));
  try {
    await assert.rejects(Sandbox.list().nextItems(), AuthenticationError);
  } finally {
    useKey(keyA);
  }
});

test('the <port>-<id>.<domain> host form reaches envd, for E2B\'s ports only', { skip }, async () => {
  const port = new URL(server.url).port;
  const get = (host, headers = {}) => new Promise((resolve, reject) => {
    http.get({ host: '127.0.0.1', port, path: '/health', headers: { Host: host, ...headers } },
      (res) => { res.resume(); res.on('end', () => resolve(res.statusCode)); }).on('error', reject);
  });
  const domain = `localhost:${port}`;  // the server's preview domain by default
  const token = { 'X-Access-Token': sbx.envdAccessToken };
  // As the SDK builds it (the id as it is) and in DNS's form (sb-).
  assert.equal(await get(`49983-${sbx.sandboxId}.${domain}`, token), 204);
  assert.equal(await get(`49983-${sbx.sandboxId.replace('_', '-')}.${domain}`, token), 204);
  assert.equal(await get(`49983-${sbx.sandboxId}.${domain}`), 401);
  // Another port is a preview host: it wants a preview token, and an envd token is not one.
  assert.equal(await get(`8000-${sbx.sandboxId.replace('_', '-')}.${domain}`, token), 401);
});

test('sandbox.getHost(port) reaches a server in the sandbox with the traffic token', { skip },
  async () => {
    const port = new URL(server.url).port;
    const s = await Sandbox.create();
    try {
      await s.files.write('site/index.html', 'hello from the sandbox');
      await s.commands.run('cd /workspace/site && python3 -m http.server 8000 --bind 127.0.0.1',
        { background: true });
      const host = s.getHost(8000);
      assert.equal(host, `8000-${s.sandboxId}.localhost:${port}`);  // the server's domain
      const get = (headers = {}) => new Promise((resolve, reject) => {
        http.get({ host: '127.0.0.1', port, path: '/index.html', headers: { Host: host, ...headers } },
          (res) => {
            let body = '';
            res.on('data', (c) => { body += c; });
            res.on('end', () => resolve({ status: res.statusCode, body }));
          }).on('error', reject);
      });
      let r = { status: 0 };
      for (let i = 0; i < 100 && r.status !== 200; i++) {
        r = await get({ 'E2B-Traffic-Access-Token': s.trafficAccessToken });
        if (r.status !== 200) await new Promise((res) => setTimeout(res, 100));
      }
      assert.equal(r.status, 200, JSON.stringify(r));
      assert.equal(r.body, 'hello from the sandbox');
      // The token opens the host and goes no further: the app never sees it.
      await startHeaderEcho(s);
      const echoHost = s.getHost(8001);
      let seen = { status: 0 };
      for (let i = 0; i < 100 && seen.status !== 200; i++) {
        seen = await new Promise((resolve, reject) => {
          http.get({ host: '127.0.0.1', port, path: '/', headers: { Host: echoHost,
            'E2B-Traffic-Access-Token': s.trafficAccessToken,
            'X-Access-Token': s.envdAccessToken } }, (res) => {
            let body = '';
            res.on('data', (c) => { body += c; });
            res.on('end', () => resolve({ status: res.statusCode, body }));
          }).on('error', reject);
        });
        if (seen.status !== 200) await new Promise((res) => setTimeout(res, 100));
      }
      assert.equal(seen.status, 200, JSON.stringify(seen));
      assert.ok(!seen.body.includes(s.trafficAccessToken), seen.body);
      assert.ok(!/e2b-traffic-access-token|x-access-token/i.test(seen.body), seen.body);
      // The two tokens do different jobs: the traffic token never opens envd, and envd's
      // access token never opens the sandbox's ports.
      assert.notEqual(s.trafficAccessToken, s.envdAccessToken);
      const envdWithTraffic = await envd('/filesystem.Filesystem/ListDir', { id: s.sandboxId,
        token: null, type: 'application/json', body: JSON.stringify({ path: '/workspace' }),
        headers: { 'E2B-Traffic-Access-Token': s.trafficAccessToken } });
      assert.equal(envdWithTraffic.status, 401, envdWithTraffic.text);
      assert.equal((await get({ 'E2B-Traffic-Access-Token': s.envdAccessToken })).status, 401);
      // Without a token, with another sandbox's, or a forged one: nothing.
      assert.equal((await get()).status, 401);
      assert.equal((await get({ 'E2B-Traffic-Access-Token': sbx.trafficAccessToken })).status, 401);
      assert.equal((await get({ 'E2B-Traffic-Access-Token': 'e2bt_' + '0'.repeat(64) })).status,
        401);
    } finally {
      await s.kill();
    }
  });

test('allowPublicTraffic: true opens the ports without a token; maskRequestHost is their Host',
  { skip }, async () => {
    const port = new URL(server.url).port;
    const s = await Sandbox.create({ timeoutMs: 120_000,
      network: { allowPublicTraffic: true, maskRequestHost: 'app.localhost:${PORT}' } });
    try {
      const info = await s.getInfo();
      assert.equal(info.network.allowPublicTraffic, true);
      assert.equal(info.network.maskRequestHost, 'app.localhost:${PORT}');
      await startHeaderEcho(s);
      const get = (host) => new Promise((resolve, reject) => {
        http.get({ host: '127.0.0.1', port, path: '/', headers: { Host: host } }, (res) => {
          let body = '';
          res.on('data', (c) => { body += c; });
          res.on('end', () => resolve({ status: res.statusCode, body }));
        }).on('error', reject);
      });
      let seen = { status: 0 };
      for (let i = 0; i < 100 && seen.status !== 200; i++) {
        seen = await get(s.getHost(8001));  // no token at all
        if (seen.status !== 200) await new Promise((res) => setTimeout(res, 100));
      }
      assert.equal(seen.status, 200, JSON.stringify(seen));
      assert.match(seen.body, /^Host: app\.localhost:8001$/m);
      // /v1's ports proxy sends the same Host; envd stays behind its own token.
      const v1 = await fetch(`${server.url}/v1/sandboxes/${s.sandboxId}/ports/8001/`,
        { headers: { Authorization: `Bearer ${keyA}` } });
      assert.match(await v1.text(), /^Host: app\.localhost:8001$/m);
      const envdOpen = await envd('/filesystem.Filesystem/ListDir', { id: s.sandboxId,
        token: null, type: 'application/json', body: JSON.stringify({ path: '/workspace' }) });
      assert.equal(envdOpen.status, 401, envdOpen.text);
      // The suite's own sandbox keeps its ports private (the default here).
      assert.equal((await sbx.getInfo()).network.allowPublicTraffic, false);
      assert.equal((await get(sbx.getHost(8001))).status, 401);
    } finally {
      await s.kill();
    }
    await assert.rejects(Sandbox.create({ network: { maskRequestHost: 'evil\r\nX: y' } }),
      (e) => e.statusCode === 400 && /mask_request_host/.test(e.message));
  });

test('bad Connect requests get Connect errors, never hangs', { skip }, async () => {
  const cases = [
    // [what, path, content type, body, HTTP status, Connect code]
    ['wrong content type', '/filesystem.Filesystem/Stat', 'text/plain', '{"path":"/"}', 400,
      'invalid_argument'],
    ['not JSON', '/filesystem.Filesystem/Stat', 'application/json', '{"path":', 400,
      'invalid_argument'],
    ['not an object', '/process.Process/List', 'application/json', '[1]', 400, 'invalid_argument'],
    ['unknown method', '/process.Process/Nope', 'application/json', '{}', 501, 'unimplemented'],
    ['oversized', '/filesystem.Filesystem/Stat', 'application/json',
      JSON.stringify({ path: 'x'.repeat((1 << 20) + 1) }), 429, 'resource_exhausted'],
    ['unknown pid', '/process.Process/SendSignal', 'application/json',
      '{"process":{"pid":999999},"signal":"SIGNAL_SIGKILL"}', 404, 'not_found'],
  ];
  for (const [what, path, type, body, status, code] of cases) {
    const r = await envd(path, { type, body });
    assert.equal(r.status, status, `${what}: ${r.text}`);
    assert.equal(JSON.parse(r.text).code, code, what);
  }
  // Streams answer 200 with the error in the end-of-stream message.
  const streamCases = [
    ['short envelope', Buffer.from([0, 0, 0])],
    ['length beyond the body', Buffer.concat([Buffer.from([0, 0, 0, 1, 0]), Buffer.from('{}')])],
    ['compressed', envelope('{}', 1)],
    ['no process', envelope('{}')],
  ];
  streamCases.push(['no path', envelope('{}')]);
  for (const [what, body] of streamCases) {
    const call = what === 'no process' ? '/process.Process/Start'
      : what === 'no path' ? '/filesystem.Filesystem/WatchDir'
      : ['/process.Process/Start', '/filesystem.Filesystem/WatchDir'][body.length % 2];
    const r = await envd(call, { type: 'application/connect+json', body });
    assert.equal(r.status, 200, what);
    assert.equal(r.type, 'application/connect+json', what);
    assert.equal(r.buf[0], 2, `${what}: the answer is one end-of-stream message`);
    const end = JSON.parse(r.buf.subarray(5).toString());
    assert.ok(end.error && end.error.code, `${what}: ${r.text}`);
  }
  // A body that says gzip and is not, and an encoding we do not speak: 400, never a write.
  for (const enc of ['gzip', 'br']) {
    const r = await envd('/files?path=/workspace/enc.txt', { type: 'application/octet-stream',
      body: 'not compressed', headers: { 'Content-Encoding': enc } });
    assert.equal(r.status, 400, `${enc}: ${r.text}`);
    assert.equal(JSON.parse(r.text).code, 400);
  }
  assert.equal((await sbx.commands.run('test -e /workspace/enc.txt || echo none')).stdout,
    'none\n');
  const wrongMethod = await envd('/process.Process/List', { method: 'GET' });
  assert.equal(wrongMethod.status, 405);
  // The server is fine after all that.
  assert.equal((await sbx.commands.run('echo still')).stdout, 'still\n');
  const health = await envd('/health', { method: 'GET' });
  assert.equal(health.status, 204);
});

test('@e2b/code-interpreter: runCode with results, errors, logs and contexts', { skip: noPython },
  async () => {
    // The README's quick start, as written.
    const sandbox = await CodeInterpreter.create();
    try {
      const execution = await sandbox.runCode('x = 1\nx += 1\nx');
      assert.equal(execution.text, '2');
      assert.equal(execution.executionCount > 0, true);
      // E2B's interpreter template runs JavaScript too (Node is in our python template).
      const js = await sandbox.runCode('const a = [1, 2, 3]; a.reduce((x, y) => x + y)',
        { language: 'js' });
      assert.equal(js.error, undefined, JSON.stringify(js.error));
      assert.equal(js.text, '6');
      // A language we have no interpreter for is named with the ones we have.
      const r = await envd('/execute', { id: sandbox.sandboxId, token: sandbox.envdAccessToken,
        type: 'application/json', body: JSON.stringify({ code: '1 + 1', language: 'r' }),
        headers: { 'E2b-Sandbox-Port': '49999' } });
      assert.equal(r.status, 400, r.text);
      assert.match(r.text, /must be \\"python\\", \\"javascript\\" or \\"bash\\"/);
      // A template without Node says so, with the template that has it (it used to fail as
      // "process N has no open stdin"). (The SDK shows only the status; the body says it.)
      const bare = await CodeInterpreter.create('base');
      try {
        await assert.rejects(bare.runCode('1 + 1', { language: 'js' }), /409 Conflict/);
        const raw = await envd('/execute', { id: bare.sandboxId, token: bare.envdAccessToken,
          type: 'application/json', body: JSON.stringify({ code: '1 + 1', language: 'js' }),
          headers: { 'E2b-Sandbox-Port': '49999' } });
        assert.equal(raw.status, 409, raw.text);
        assert.match(raw.text,
          /javascript code contexts need node in the sandbox; create it from the \\"node\\" template/);
      } finally {
        await bare.kill();
      }

      const logs = [];
      const e = await sandbox.runCode('import sys\nprint("out")\nprint("err", file=sys.stderr)',
        { onStdout: (m) => logs.push('o:' + m.line), onStderr: (m) => logs.push('e:' + m.line) });
      assert.deepEqual(e.logs.stdout, ['out\n']);
      assert.deepEqual(e.logs.stderr, ['err\n']);
      assert.deepEqual(logs.sort(), ['e:err\n', 'o:out\n']);

      const err = await sandbox.runCode('1 / 0');
      assert.equal(err.error.name, 'ZeroDivisionError');
      assert.match(err.error.traceback, /ZeroDivisionError/);

      const html = await sandbox.runCode(
        'from IPython.display import HTML, display\ndisplay(HTML("<b>hi</b>"))\n42');
      assert.ok(html.results.some((r) => r.html === '<b>hi</b>'), JSON.stringify(html.results));
      assert.equal(html.results.find((r) => r.isMainResult).text, '42');

      // State lives in a context; a new context starts clean; contexts list and go away.
      const ctx = await sandbox.createCodeContext({ cwd: '/tmp' });
      assert.match(ctx.id, /^ctx_/);
      await sandbox.runCode('y = 7', { context: ctx });
      assert.equal((await sandbox.runCode('y * 6', { context: ctx })).text, '42');
      assert.equal((await sandbox.runCode('import os; os.getcwd()', { context: ctx })).text, "'/tmp'");
      assert.equal((await sandbox.runCode('y')).error.name, 'NameError');
      assert.ok((await sandbox.listCodeContexts()).some((c) => c.id === ctx.id));
      await sandbox.restartCodeContext(ctx);
      assert.equal((await sandbox.runCode('y', { context: ctx })).error.name, 'NameError');
      await sandbox.removeCodeContext(ctx);
      assert.ok(!(await sandbox.listCodeContexts()).some((c) => c.id === ctx.id));
      // envs of one run: set for it, gone after it.
      const withEnv = await sandbox.runCode('import os; os.environ["RUN_ONLY"]',
        { envs: { RUN_ONLY: 'just this once' } });
      assert.equal(withEnv.text, "'just this once'");
      assert.equal((await sandbox.runCode('import os; os.environ.get("RUN_ONLY")')).text,
        undefined);
    } finally {
      await sandbox.kill();
    }
  });
