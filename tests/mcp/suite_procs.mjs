// The process, port and code tools (ADR 0010) driven by the official TypeScript SDK
// client against the real server, the same for every transport (stdio.test.mjs and
// http.test.mjs run it): a web server started as a background process, found among the
// listening ports, asked over HTTP through sandbox_port_request and read back in its logs; stdin
// to a `cat`; signal and kill with their exit codes; run_code in three languages, a missing
// interpreter, a timeout; errors as isError; tenancy between two keys; and a secret typed into
// a command that the audit trail keeps only as [REDACTED]. The SDK validates every
// structuredContent against its tool's outputSchema.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';

import { Server } from './harness.mjs';
import { call, errorCode, ok, skip } from './suite.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Calls sandbox_process_output until `pred(result)` holds (at most ~20 s). */
async function outputUntil(client, sandboxId, pid, pred, extra = {}) {
  let last;
  for (let i = 0; i < 40; i++) {
    last = ok(await call(client, 'sandbox_process_output',
        { sandbox_id: sandboxId, pid, wait_seconds: 0.5, ...extra }));
    if (pred(last)) return last;
  }
  assert.fail('condition never held; last: ' + JSON.stringify(last));
}

export function processSuite(title, connect) {
describe(title, { skip: skip ?? false, timeout: 600000 }, () => {
  let server;
  let client;
  let sb;
  before(async () => {
    server = new Server();
    await server.start();
    server.keys = [await server.newKey(), await server.newKey()];
    client = await connect(server, server.keys[0]);
    sb = ok(await call(client, 'sandbox_create', {}));
  });
  after(async () => {
    if (sb) await call(client, 'sandbox_destroy', { sandbox_id: sb.id }).catch(() => {});
    await client?.close();
    await server?.close();
  });

  test('a web server: start, list, port list, HTTP requests, its logs, SIGTERM', async () => {
    const web = ok(await call(client, 'sandbox_process_start', {
      sandbox_id: sb.id, argv: ['python3', '-u', '-m', 'http.server', '8000'], tag: 'web',
    }));
    assert.equal(web.state, 'running');
    assert.equal(web.tag, 'web');
    assert.ok(web.pid > 0);
    const list = ok(await call(client, 'sandbox_process_list', { sandbox_id: sb.id }));
    assert.ok(list.processes.some((p) => p.pid === web.pid && p.state === 'running'));

    let port;
    for (let i = 0; i < 100 && !port; i++) {
      const ports = ok(await call(client, 'sandbox_port_list', { sandbox_id: sb.id }));
      port = ports.ports.find((p) => p.port === 8000);
      if (!port) await sleep(100);
    }
    assert.ok(port, 'port 8000 never listened');
    assert.equal(port.reachable, true);
    assert.equal(port.path, `/v1/sandboxes/${sb.id}/ports/8000/`);

    ok(await call(client, 'sandbox_write_file',
        { sandbox_id: sb.id, path: 'hello.txt', content: 'hi from the sandbox\n' }));
    const got = ok(await call(client, 'sandbox_port_request',
        { sandbox_id: sb.id, port: 8000, path: '/hello.txt?x=1' }));
    assert.equal(got.status, 200);
    assert.equal(got.body, 'hi from the sandbox\n');
    assert.equal(got.encoding, 'utf8');
    assert.match(got.headers['content-type'], /text\/plain/);
    assert.equal(got.path, `/v1/sandboxes/${sb.id}/ports/8000/hello.txt?x=1`);
    // The app's own 404 and 501 are answers, not tool errors.
    const missing = ok(await call(client, 'sandbox_port_request',
        { sandbox_id: sb.id, port: 8000, path: '/nope' }));
    assert.equal(missing.status, 404);
    const post = ok(await call(client, 'sandbox_port_request',
        { sandbox_id: sb.id, port: 8000, method: 'POST', body: '{}',
          headers: { 'Content-Type': 'application/json' } }));
    assert.equal(post.status, 501);
    assert.equal(errorCode(await call(client, 'sandbox_port_request',
        { sandbox_id: sb.id, port: 8001 })), 'unavailable');
    assert.equal(errorCode(await call(client, 'sandbox_port_request',
        { sandbox_id: sb.id, port: 8000, headers: { Authorization: 'Bearer x' } })),
        'invalid_request');

    // Its logs (python's http.server logs each request on stderr), then a tail of them.
    const logs = await outputUntil(client, sb.id, web.pid,
        (o) => o.output.includes('"GET /hello.txt?x=1 HTTP/1.1" 200'));
    assert.equal(logs.process.state, 'running');
    assert.match(logs.output, /"GET \/nope HTTP\/1.1" 404/);
    const tail = ok(await call(client, 'sandbox_process_output',
        { sandbox_id: sb.id, pid: web.pid, tail_bytes: 10 }));
    assert.equal(tail.bytes, 10);
    assert.equal(tail.truncated, true);
    assert.ok(logs.output.endsWith(tail.output), JSON.stringify(tail));

    ok(await call(client, 'sandbox_process_signal',
        { sandbox_id: sb.id, pid: web.pid, signal: 'SIGTERM' }));
    const done = await outputUntil(client, sb.id, web.pid, (o) => o.process.state === 'exited',
        { wait_seconds: 5 });
    assert.equal(done.process.exit_code, 128 + 15);
    assert.equal(errorCode(await call(client, 'sandbox_process_signal',
        { sandbox_id: sb.id, pid: web.pid, signal: 'SIGNOPE' })), 'invalid_request');
  });

  test('stdin: write lines to cat, close it, cat exits 0; wait_seconds returns at the exit',
      async () => {
    const cat = ok(await call(client, 'sandbox_process_start',
        { sandbox_id: sb.id, command: 'cat', stdin: true }));
    assert.equal(cat.stdin_open, true);
    const w = ok(await call(client, 'sandbox_process_stdin',
        { sandbox_id: sb.id, pid: cat.pid, data: 'hello cat\n' }));
    assert.equal(w.bytes, 10);
    await outputUntil(client, sb.id, cat.pid, (o) => o.output === 'hello cat\n');
    ok(await call(client, 'sandbox_process_stdin',
        { sandbox_id: sb.id, pid: cat.pid, data: 'Ynll\n', encoding: 'base64', close: true }));
    const t0 = Date.now();
    const end = ok(await call(client, 'sandbox_process_output',
        { sandbox_id: sb.id, pid: cat.pid, wait_seconds: 30 }));
    assert.ok(Date.now() - t0 < 15000, 'waited ' + (Date.now() - t0) + ' ms past the exit');
    assert.equal(end.output, 'hello cat\nbye');
    assert.equal(end.process.state, 'exited');
    assert.equal(end.process.exit_code, 0);
    assert.equal(errorCode(await call(client, 'sandbox_process_stdin',
        { sandbox_id: sb.id, pid: cat.pid, data: 'x' })), 'conflict');
  });

  test('kill ends the whole tree with 137; unknown pids are not_found', async () => {
    const p = ok(await call(client, 'sandbox_process_start',
        { sandbox_id: sb.id, command: 'sleep 300 & sleep 300; wait' }));
    const k = ok(await call(client, 'sandbox_process_kill', { sandbox_id: sb.id, pid: p.pid }));
    assert.equal(k.state, 'exited');
    assert.equal(k.exit_code, 137);
    const ps = ok(await call(client, 'sandbox_exec',
        { sandbox_id: sb.id, command: 'ps -eo args | grep -c "^sleep 300" || true' }));
    assert.equal(ps.stdout.trim(), '0');
    for (const tool of ['sandbox_process_output', 'sandbox_process_kill']) {
      assert.equal(errorCode(await call(client, tool, { sandbox_id: sb.id, pid: 99999 })),
          'not_found', tool);
    }
    assert.equal(errorCode(await call(client, 'sandbox_process_output',
        { sandbox_id: sb.id, pid: p.pid, tail_bytes: 262145 })), 'invalid_request');
  });

  test('run_code: python, bash, a missing interpreter, a timeout', async () => {
    const py = ok(await call(client, 'sandbox_run_code', { sandbox_id: sb.id, language: 'python',
      code: 'import sys\nprint(sum(range(10)), sys.version_info[0])' }));
    assert.equal(py.exit_code, 0);
    assert.equal(py.stdout, '45 3\n');
    assert.equal(py.language, 'python');
    const sh = ok(await call(client, 'sandbox_run_code',
        { sandbox_id: sb.id, language: 'bash', code: 'x=4\necho $((x*x)) >&2\nexit 5' }));
    assert.equal(sh.exit_code, 5);
    assert.equal(sh.stderr, '16\n');
    // The base template has no node.
    const js = await call(client, 'sandbox_run_code',
        { sandbox_id: sb.id, language: 'javascript', code: 'console.log(1)' });
    assert.equal(errorCode(js), 'not_found');
    assert.match(js.content[0].text, /javascript needs node/);
    const slow = ok(await call(client, 'sandbox_run_code', { sandbox_id: sb.id,
      language: 'python', code: 'import time\ntime.sleep(30)', timeout: 1 }));
    assert.equal(slow.timed_out, true);
    assert.equal(errorCode(await call(client, 'sandbox_run_code',
        { sandbox_id: sb.id, language: 'cobol', code: 'x' })), 'invalid_request');
  });

  test("another key sees none of it: processes, ports and code are not_found", async () => {
    const other = await connect(server, server.keys[1]);
    try {
      const p = ok(await call(client, 'sandbox_process_start',
          { sandbox_id: sb.id, command: 'sleep 60' }));
      for (const [tool, args] of [['sandbox_process_start', { command: 'true' }],
        ['sandbox_process_list', {}], ['sandbox_process_output', { pid: p.pid }],
        ['sandbox_process_stdin', { pid: p.pid, data: 'x' }],
        ['sandbox_process_signal', { pid: p.pid, signal: 'SIGTERM' }],
        ['sandbox_process_kill', { pid: p.pid }], ['sandbox_port_list', {}],
        ['sandbox_port_request', { port: 8000 }],
        ['sandbox_run_code', { language: 'sh', code: 'true' }]]) {
        assert.equal(errorCode(await call(other, tool, { sandbox_id: sb.id, ...args })),
            'not_found', tool);
      }
      const still = ok(await call(client, 'sandbox_process_list', { sandbox_id: sb.id }));
      assert.ok(still.processes.some((x) => x.pid === p.pid && x.state === 'running'));
      ok(await call(client, 'sandbox_process_kill', { sandbox_id: sb.id, pid: p.pid }));
    } finally {
      await other.close();
    }
  });

  test('a secret typed into a command is [REDACTED] in the audit trail', async () => {
    const token = 'ghp_' + 'a1B2c3D4e5'.repeat(4);
    const e = ok(await call(client, 'sandbox_exec', { sandbox_id: sb.id,
      command: `GITHUB_TOKEN=${token} sh -c 'echo \${#GITHUB_TOKEN}'` }));
    assert.equal(e.stdout, '44\n');
    const p = ok(await call(client, 'sandbox_process_start', { sandbox_id: sb.id,
      argv: ['sh', '-c', 'sleep 60', '--password=hunter2hunter2'] }));
    ok(await call(client, 'sandbox_process_kill', { sandbox_id: sb.id, pid: p.pid }));
    const r = await server.rest('GET', '/v1/events?sandbox_id=' + sb.id);
    assert.equal(r.status, 200, JSON.stringify(r.json));
    const text = JSON.stringify(r.json);
    assert.ok(!text.includes(token) && !text.includes('hunter2hunter2'), text);
    const targets = r.json.events.map((ev) => ev.target);
    assert.ok(targets.includes("GITHUB_TOKEN=[REDACTED] sh -c 'echo ${#GITHUB_TOKEN}'"),
        JSON.stringify(targets));
    assert.ok(targets.includes('sh -c \'sleep 60\' --password=[REDACTED]'),
        JSON.stringify(targets));
    const actions = r.json.events.map((ev) => ev.action);
    assert.ok(actions.includes('process.start') && actions.includes('process.kill'),
        JSON.stringify(actions));
  });
});
}
