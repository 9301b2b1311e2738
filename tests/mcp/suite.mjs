// The MCP tools driven by the official TypeScript SDK client against the real server, the same
// for every transport (ADR 0010): tools and their schemas, a full round trip, a binary
// file round trip, errors as isError, tenancy between two keys, progress and cancellation of a
// long exec. The SDK validates every structuredContent against the tool's outputSchema, so each
// successful call also checks the schemas. stdio.test.mjs and http.test.mjs run it with their
// transport's connect(server, key, protocolVersion?).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';

import { Server, missingPrerequisite } from './harness.mjs';

export const skip = missingPrerequisite();
export const TOOLS = ['sandbox_create', 'sandbox_list', 'sandbox_list_templates', 'sandbox_exec',
  'sandbox_read_file', 'sandbox_write_file', 'sandbox_list_files', 'sandbox_snapshot',
  'sandbox_rollback', 'sandbox_fork', 'sandbox_fork_running', 'sandbox_destroy', 'sandbox_pause', 'sandbox_resume',
  'sandbox_process_start',
  'sandbox_process_list', 'sandbox_process_output', 'sandbox_process_stdin',
  'sandbox_process_signal', 'sandbox_process_kill', 'sandbox_port_list', 'sandbox_port_request',
  'sandbox_watch_files', 'sandbox_run_code', 'sandbox_code_run', 'sandbox_code_context_create',
  'sandbox_code_context_list', 'sandbox_code_context_restart', 'sandbox_code_context_delete'];

export async function call(client, name, args, options) {
  return client.callTool({ name, arguments: args }, undefined, options);
}

export function ok(r) {
  assert.ok(!r.isError, 'tool failed: ' + JSON.stringify(r.content));
  assert.equal(r.content[0].type, 'text');
  return r.structuredContent;
}

export function errorCode(r) {
  assert.equal(r.isError, true, 'expected an error, got ' + JSON.stringify(r));
  return r.content[0].text.split(':')[0];
}

/** Makes a client send `protocolVersion` in initialize, the way an older client would. */
export function askForRevision(transport, protocolVersion) {
  if (!protocolVersion) return;
  const orig = transport.send.bind(transport);
  transport.send = (msg, opts) => {
    if (msg.method === 'initialize') msg.params.protocolVersion = protocolVersion;
    return orig(msg, opts);
  };
}

export function toolSuite(title, connect) {
describe(title, { skip: skip ?? false, timeout: 600000 }, () => {
  let server;
  let client;
  before(async () => {
    server = new Server();
    await server.start();
    server.keys = [await server.newKey()];
    client = await connect(server, server.keys[0]);
  });
  after(async () => {
    await client?.close();
    await server?.close();
  });

  test('initialize: revision, instructions, tools with input and output schemas', async () => {
    assert.equal(client.getServerVersion().name, 'agent-sandbox');
    assert.match(client.getInstructions(), /\/workspace/);
    assert.match(client.getInstructions(), /snapshot/);
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name), TOOLS);
    for (const t of tools) {
      assert.equal(t.inputSchema.type, 'object', t.name);
      assert.equal(t.outputSchema.type, 'object', t.name);
      assert.ok(t.description.length > 10, t.name);
    }
    await client.ping();
  });

  test('an older client gets the revision it asks for', async () => {
    const old = await connect(server, server.keys[0], '2025-03-26');
    try {
      const { tools } = await old.listTools();
      assert.equal(tools.length, TOOLS.length);
    } finally {
      await old.close();
    }
  });

  test('full round trip: create, write, exec, read, snapshot, overwrite, rollback, fork, list, '
      + 'destroy', async () => {
    const sb = ok(await call(client, 'sandbox_create', {}));
    assert.match(sb.id, /^sb_[0-9a-f]{16}$/);
    assert.equal(sb.status, 'running');
    const w = ok(await call(client, 'sandbox_write_file',
        { sandbox_id: sb.id, path: 'hello.txt', content: 'version one\n' }));
    assert.equal(w.path, '/workspace/hello.txt');
    assert.equal(w.size, 12);
    const e = ok(await call(client, 'sandbox_exec',
        { sandbox_id: sb.id, command: 'cat hello.txt; echo oops >&2; exit 3' }));
    assert.equal(e.exit_code, 3);
    assert.equal(e.stdout, 'version one\n');
    assert.equal(e.stderr, 'oops\n');
    assert.equal(e.timed_out, false);
    assert.deepEqual([e.oom_killed, e.pids_limited], [false, false]);  // the REST result's fields
    const snap = ok(await call(client, 'sandbox_snapshot', { sandbox_id: sb.id, name: 'v1' }));
    assert.ok(snap.id);
    ok(await call(client, 'sandbox_write_file',
        { sandbox_id: sb.id, path: '/workspace/hello.txt', content: 'version two\n' }));
    assert.equal(ok(await call(client, 'sandbox_read_file',
        { sandbox_id: sb.id, path: 'hello.txt' })).content, 'version two\n');
    ok(await call(client, 'sandbox_rollback', { sandbox_id: sb.id, snapshot_id: snap.id }));
    const back = ok(await call(client, 'sandbox_read_file', { sandbox_id: sb.id, path: 'hello.txt' }));
    assert.equal(back.content, 'version one\n');
    assert.equal(back.encoding, 'utf8');
    const fork = ok(await call(client, 'sandbox_fork', { snapshot_id: snap.id }));
    assert.notEqual(fork.id, sb.id);
    assert.equal(ok(await call(client, 'sandbox_read_file',
        { sandbox_id: fork.id, path: 'hello.txt' })).content, 'version one\n');
    // A running sandbox forked: its children have its workspace as it is now, each its own.
    const kids = ok(await call(client, 'sandbox_fork_running',
        { sandbox_id: sb.id, count: 2, timeout_seconds: 120 }));
    assert.equal(kids.forks.length, 2, JSON.stringify(kids));
    for (const k of kids.forks) {
      assert.equal(k.memory, false);
      assert.equal(ok(await call(client, 'sandbox_read_file',
          { sandbox_id: k.sandbox.id, path: 'hello.txt' })).content, 'version one\n');
      ok(await call(client, 'sandbox_destroy', { sandbox_id: k.sandbox.id }));
    }
    assert.equal(errorCode(await call(client, 'sandbox_fork_running',
        { sandbox_id: sb.id, count: 0 })), 'invalid_request');
    const files = ok(await call(client, 'sandbox_list_files', { sandbox_id: sb.id }));
    assert.ok(files.entries.some((f) => f.path === '/workspace/hello.txt'), JSON.stringify(files));
    // Pause and resume (ADR 0024): nothing runs in between, and it goes on after.
    assert.equal(ok(await call(client, 'sandbox_pause', { sandbox_id: fork.id })).status, 'paused');
    assert.equal(errorCode(await call(client, 'sandbox_exec',
        { sandbox_id: fork.id, command: 'true' })), 'conflict');
    assert.equal(errorCode(await call(client, 'sandbox_pause', { sandbox_id: fork.id })),
        'conflict');
    const resumed = ok(await call(client, 'sandbox_resume',
        { sandbox_id: fork.id, timeout_seconds: 120 }));
    assert.equal(resumed.status, 'running');
    assert.equal(ok(await call(client, 'sandbox_exec',
        { sandbox_id: fork.id, command: 'echo back' })).stdout, 'back\n');
    // keep_memory: false keeps only the files; the resume starts it afresh with them.
    const filesOnly = ok(await call(client, 'sandbox_pause',
        { sandbox_id: fork.id, keep_memory: false }));
    assert.deepEqual([filesOnly.status, filesOnly.paused_memory], ['paused', false]);
    assert.equal(errorCode(await call(client, 'sandbox_pause',
        { sandbox_id: fork.id, keep_memory: 'no' })), 'invalid_request');
    ok(await call(client, 'sandbox_resume', { sandbox_id: fork.id }));
    assert.equal(ok(await call(client, 'sandbox_read_file',
        { sandbox_id: fork.id, path: 'hello.txt' })).content, 'version one\n');
    const autoFilesOnly = ok(await call(client, 'sandbox_create',
        { auto_pause: true, auto_pause_keep_memory: false, auto_resume: true }));
    assert.deepEqual([autoFilesOnly.auto_pause, autoFilesOnly.auto_pause_keep_memory,
      autoFilesOnly.auto_resume], [true, false, true]);
    ok(await call(client, 'sandbox_destroy', { sandbox_id: autoFilesOnly.id }));
    const list = ok(await call(client, 'sandbox_list', {}));
    const ids = list.sandboxes.map((s) => s.id);
    assert.ok(ids.includes(sb.id) && ids.includes(fork.id));
    for (const id of [sb.id, fork.id]) {
      assert.equal(ok(await call(client, 'sandbox_destroy', { sandbox_id: id })).destroyed, true);
    }
    const gone = ok(await call(client, 'sandbox_list', {}));
    assert.ok(!gone.sandboxes.some((s) => s.id === sb.id));
    assert.equal(errorCode(await call(client, 'sandbox_exec',
        { sandbox_id: sb.id, command: 'true' })), 'not_found');
  });

  test('sandbox_watch_files reports what a process changes; bad paths are errors', async () => {
    const sb = ok(await call(client, 'sandbox_create', {}));
    try {
      ok(await call(client, 'sandbox_exec', { sandbox_id: sb.id, command: 'mkdir -p w; echo f > file' }));
      // Armed at once, well before the process's first write.
      ok(await call(client, 'sandbox_process_start', {
        sandbox_id: sb.id,
        command: 'sleep 1.5; echo hi > w/a.txt; mkdir w/sub; echo deep > w/sub/b.txt; rm w/a.txt',
      }));
      const r = ok(await call(client, 'sandbox_watch_files',
          { sandbox_id: sb.id, path: 'w', recursive: true, wait_seconds: 5 }));
      assert.equal(r.path, '/workspace/w');
      assert.equal(r.ended, false);
      const seen = r.events.map((e) => `${e.type} ${e.path}`);
      for (const want of ['create /workspace/w/a.txt', 'write /workspace/w/a.txt',
        'create /workspace/w/sub', 'create /workspace/w/sub/b.txt', 'remove /workspace/w/a.txt']) {
        assert.ok(seen.includes(want), `${want} not in ${JSON.stringify(seen)}`);
      }
      assert.equal(r.events.find((e) => e.path === '/workspace/w/sub').dir, true);
      // max_events 1 waits for the next change only; wait 0 arms, checks and returns.
      const quiet = ok(await call(client, 'sandbox_watch_files',
          { sandbox_id: sb.id, path: 'w', wait_seconds: 0 }));
      assert.deepEqual(quiet.events, []);
      assert.equal(errorCode(await call(client, 'sandbox_watch_files',
          { sandbox_id: sb.id, path: 'missing', wait_seconds: 0 })), 'not_found');
      assert.equal(errorCode(await call(client, 'sandbox_watch_files',
          { sandbox_id: sb.id, path: 'file', wait_seconds: 0 })), 'invalid_request');
      assert.equal(errorCode(await call(client, 'sandbox_watch_files',
          { sandbox_id: sb.id, wait_seconds: 61 })), 'invalid_request');
    } finally {
      await call(client, 'sandbox_destroy', { sandbox_id: sb.id });
    }
  });

  test('binary files round trip as base64 with an explicit encoding', async () => {
    const sb = ok(await call(client, 'sandbox_create', {}));
    const bytes = Buffer.concat([Buffer.from([0, 0xff, 0xfe, 0x80, 0x0a]), crypto.randomBytes(4096)]);
    const w = ok(await call(client, 'sandbox_write_file', {
      sandbox_id: sb.id, path: 'blob.bin', content: bytes.toString('base64'), encoding: 'base64',
    }));
    assert.equal(w.size, bytes.length);
    const r = ok(await call(client, 'sandbox_read_file', { sandbox_id: sb.id, path: 'blob.bin' }));
    assert.equal(r.encoding, 'base64');
    assert.equal(r.size, bytes.length);
    assert.ok(Buffer.from(r.content, 'base64').equals(bytes));
    const sum = ok(await call(client, 'sandbox_exec', { sandbox_id: sb.id, command: 'sha256sum blob.bin' }));
    assert.equal(sum.stdout.split(' ')[0], crypto.createHash('sha256').update(bytes).digest('hex'));
    ok(await call(client, 'sandbox_destroy', { sandbox_id: sb.id }));
  });

  test('failures are isError results carrying the error code', async () => {
    assert.equal(errorCode(await call(client, 'sandbox_read_file',
        { sandbox_id: 'sb_0000000000000000', path: 'x' })), 'not_found');
    const sb = ok(await call(client, 'sandbox_create', {}));
    try {
      assert.equal(errorCode(await call(client, 'sandbox_read_file',
          { sandbox_id: sb.id, path: 'no/such/file' })), 'not_found');
      assert.equal(errorCode(await call(client, 'sandbox_write_file',
          { sandbox_id: sb.id, path: 'x', content: '***', encoding: 'base64' })), 'invalid_request');
      assert.equal(errorCode(await call(client, 'sandbox_read_file',
          { sandbox_id: sb.id, path: '../../etc/passwd' })), 'invalid_request');
      assert.equal(errorCode(await call(client, 'sandbox_create', { memory_mb: 1 })),
          'invalid_request');
      const t = ok(await call(client, 'sandbox_exec',
          { sandbox_id: sb.id, command: 'sleep 30', timeout: 1 }));
      assert.equal(t.timed_out, true);
    } finally {
      ok(await call(client, 'sandbox_destroy', { sandbox_id: sb.id }));
    }
    // The memory limit's kill is told as the REST result tells it (oom_killed), and in the text.
    const small = ok(await call(client, 'sandbox_create', { memory_mb: 128 }));
    try {
      const res = await call(client, 'sandbox_exec', { sandbox_id: small.id, timeout: 30,
        command: "python3 -c 'a = []\nwhile True: a.append(bytearray(1 << 20))'" });
      const bomb = ok(res);
      assert.equal(bomb.oom_killed, true, JSON.stringify(bomb).slice(0, 300));
      assert.equal(bomb.exit_code, 137);
      assert.match(res.content[0].text, /memory limit killed a process/);
    } finally {
      ok(await call(client, 'sandbox_destroy', { sandbox_id: small.id }));
    }
    // An unknown tool is a protocol error, not a tool result.
    await assert.rejects(call(client, 'no_such_tool', {}), /unknown tool/);
  });

  test('large output is cut at 256 KiB with the full size; the exec timeout is honoured',
      async () => {
    const sb = ok(await call(client, 'sandbox_create', {}));
    try {
      const big = await call(client, 'sandbox_exec',
          { sandbox_id: sb.id, command: 'head -c 300000 /dev/zero | tr "\\0" a' });
      const e = ok(big);
      assert.equal(e.truncated, true);
      assert.equal(e.stdout_bytes, 300000);
      assert.equal(e.stdout.length, 256 * 1024);
      assert.match(big.content[0].text, /stdout 300000 bytes/);
      const t0 = Date.now();
      const t = ok(await call(client, 'sandbox_exec',
          { sandbox_id: sb.id, command: 'sleep 30', timeout: 1.5 }));
      assert.equal(t.timed_out, true);
      assert.ok(Date.now() - t0 < 15000, 'took ' + (Date.now() - t0) + ' ms');
    } finally {
      ok(await call(client, 'sandbox_destroy', { sandbox_id: sb.id }));
    }
  });

  test("a second key cannot see or touch the first key's sandbox", async () => {
    const other = await connect(server, (server.keys[1] = await server.newKey()));
    const sb = ok(await call(client, 'sandbox_create', {}));
    try {
      const list = ok(await call(other, 'sandbox_list', {}));
      assert.ok(!list.sandboxes.some((s) => s.id === sb.id));
      for (const [tool, args] of [['sandbox_exec', { command: 'true' }],
        ['sandbox_read_file', { path: 'x' }], ['sandbox_write_file', { path: 'x', content: 'y' }],
        ['sandbox_list_files', {}], ['sandbox_snapshot', {}], ['sandbox_destroy', {}]]) {
        assert.equal(errorCode(await call(other, tool, { sandbox_id: sb.id, ...args })),
            'not_found', tool);
      }
      ok(await call(client, 'sandbox_exec', { sandbox_id: sb.id, command: 'true' }));
    } finally {
      await other.close();
      ok(await call(client, 'sandbox_destroy', { sandbox_id: sb.id }));
    }
  });

  test('a long exec reports progress and is killed when cancelled', async () => {
    const sb = ok(await call(client, 'sandbox_create', {}));
    try {
      const progress = [];
      ok(await call(client, 'sandbox_exec',
          { sandbox_id: sb.id, command: 'for i in 1 2 3; do echo tick $i; sleep 0.3; done' },
          { onprogress: (p) => progress.push(p) }));
      assert.ok(progress.length >= 3, JSON.stringify(progress));
      assert.ok(progress.every((p, i) => i === 0 || p.progress > progress[i - 1].progress));
      assert.match(progress[0].message, /tick 1/);

      const ac = new AbortController();
      const running = call(client, 'sandbox_exec',
          { sandbox_id: sb.id, command: 'echo $$ > pid; exec sleep 60' }, { signal: ac.signal });
      // Wait until the command has started, then cancel.
      for (let i = 0; i < 100; i++) {
        const r = await call(client, 'sandbox_read_file', { sandbox_id: sb.id, path: 'pid' });
        if (!r.isError && r.structuredContent.content.trim()) break;
        await new Promise((res) => setTimeout(res, 100));
      }
      ac.abort('test cancels');
      await assert.rejects(running);
      // The command dies within a few keepalive periods (1 s in this server).
      let alive = true;
      for (let i = 0; i < 50 && alive; i++) {
        await new Promise((res) => setTimeout(res, 200));
        const k = ok(await call(client, 'sandbox_exec',
            { sandbox_id: sb.id, command: 'kill -0 $(cat pid) 2>/dev/null && echo alive || echo dead' }));
        alive = k.stdout.trim() === 'alive';
      }
      assert.equal(alive, false, 'the cancelled command still runs');
    } finally {
      ok(await call(client, 'sandbox_destroy', { sandbox_id: sb.id }));
    }
  });
});
}
