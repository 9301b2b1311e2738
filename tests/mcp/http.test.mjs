// MCP over Streamable HTTP at /mcp on the real server (tools over the SandboxManager in-process)
// driven by the official TypeScript SDK client (StreamableHTTPClientTransport): the shared tool
// suite (suite.mjs), then the transport's own rules (MCP spec 2025-06-18 basic/transports):
// 401 without a key, sessions (Mcp-Session-Id: 400 without, 404 unknown/another key's/after
// DELETE), MCP-Protocol-Version, Origin (DNS rebinding), Accept and Content-Type, batching only
// in 2025-03-26, GET 405, templates from the core catalog, and a client that disconnects
// mid-exec cancelling the command.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from
  '@modelcontextprotocol/sdk/client/streamableHttp.js';

import { Server } from './harness.mjs';
import { TOOLS, askForRevision, call, errorCode, ok, skip, toolSuite } from './suite.mjs';
import { processSuite } from './suite_procs.mjs';
import { codeSuite } from './suite_code.mjs';

async function connect(server, key, protocolVersion) {
  const transport = new StreamableHTTPClientTransport(new URL(server.url + '/mcp'), {
    requestInit: { headers: { Authorization: 'Bearer ' + key } },
  });
  const client = new Client({ name: 'asb-mcp-test', version: '1.0.0' });
  askForRevision(transport, protocolVersion);
  await client.connect(transport);
  return client;
}

toolSuite('MCP over Streamable HTTP', connect);
processSuite('MCP over Streamable HTTP: processes, ports, code', connect);
codeSuite('MCP over Streamable HTTP: stateful code contexts', connect);

const INIT = (version = '2025-06-18') => ({
  jsonrpc: '2.0', id: 1, method: 'initialize',
  params: { protocolVersion: version, capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
});

/** One raw POST /mcp; returns {status, headers, text, json}. */
async function post(server, body, { key = server.adminKey, session, headers = {}, signal } = {}) {
  const h = {
    'Content-Type': 'application/json',
    Accept: 'application/json, text/event-stream',
    ...headers,
  };
  if (key) h.Authorization = 'Bearer ' + key;
  if (session) h['Mcp-Session-Id'] = session;
  const r = await fetch(server.url + '/mcp', {
    method: 'POST', headers: h, body: typeof body === 'string' ? body : JSON.stringify(body),
    signal,
  });
  const text = await r.text();
  let json = null;
  try { json = JSON.parse(text); } catch {}
  return { status: r.status, headers: r.headers, text, json };
}

/** initialize + notifications/initialized; returns the session id. */
async function open(server, key = server.adminKey, version = '2025-06-18') {
  const r = await post(server, INIT(version), { key });
  assert.equal(r.status, 200, r.text);
  const session = r.headers.get('mcp-session-id');
  assert.match(session, /^[\x21-\x7e]+$/);
  const n = await post(server, { jsonrpc: '2.0', method: 'notifications/initialized' },
      { key, session });
  assert.equal(n.status, 202);
  return session;
}

describe('MCP over Streamable HTTP: transport rules', { skip: skip ?? false, timeout: 300000 },
    () => {
  let server;
  before(async () => {
    server = new Server();
    await server.start();
    server.keys = [await server.newKey()];
  });
  after(async () => server?.close());

  test('no key or a wrong key: 401 with WWW-Authenticate: Bearer; the SDK client fails',
      async () => {
    for (const key of [null, 'asb_' + '0'.repeat(48)]) {
      const r = await post(server, INIT(), { key });
      assert.equal(r.status, 401);
      assert.equal(r.headers.get('www-authenticate'), 'Bearer');
      assert.equal(r.json.error.code, 'unauthorized');
    }
    await assert.rejects(connect(server, 'asb_' + '1'.repeat(48)));
  });

  test('sessions: id issued at initialize, required after, 404 when unknown or ended', async () => {
    const s = await open(server);
    const ping = { jsonrpc: '2.0', id: 2, method: 'ping' };
    const okPing = await post(server, ping, { session: s });
    assert.equal(okPing.status, 200);
    assert.deepEqual(okPing.json, { jsonrpc: '2.0', id: 2, result: {} });
    assert.equal((await post(server, ping)).status, 400);
    assert.equal((await post(server, ping, { session: 'mcp_nosuchsession' })).status, 404);
    // Another key cannot use the session.
    assert.equal((await post(server, ping, { key: server.keys[0], session: s })).status, 404);
    // initialize again on a session is refused; a new one is made without the header.
    assert.equal((await post(server, INIT(), { session: s })).status, 400);
    const del = await fetch(server.url + '/mcp', {
      method: 'DELETE', headers: { Authorization: 'Bearer ' + server.adminKey, 'Mcp-Session-Id': s },
    });
    assert.equal(del.status, 204);
    assert.equal((await post(server, ping, { session: s })).status, 404);
    const del2 = await fetch(server.url + '/mcp', {
      method: 'DELETE', headers: { Authorization: 'Bearer ' + server.adminKey, 'Mcp-Session-Id': s },
    });
    assert.equal(del2.status, 404);
  });

  test('MCP-Protocol-Version, Accept, Content-Type, Origin, GET', async () => {
    const s = await open(server);
    const ping = { jsonrpc: '2.0', id: 3, method: 'ping' };
    assert.equal((await post(server, ping, { session: s,
      headers: { 'MCP-Protocol-Version': '2025-06-18' } })).status, 200);
    assert.equal((await post(server, ping, { session: s,
      headers: { 'MCP-Protocol-Version': '1999-01-01' } })).status, 400);
    assert.equal((await post(server, ping, { session: s,
      headers: { Accept: 'application/json' } })).status, 406);
    assert.equal((await post(server, ping, { session: s,
      headers: { 'Content-Type': 'text/plain' } })).status, 415);
    assert.equal((await post(server, '{"jsonrpc":', { session: s })).json.error.code, -32700);
    // DNS rebinding: a page whose name now resolves to this host sends its own Origin.
    assert.equal((await post(server, ping, { session: s,
      headers: { Origin: 'http://evil.example:8080' } })).status, 403);
    assert.equal((await post(server, ping, { session: s,
      headers: { Origin: 'http://localhost:5173' } })).status, 200);
    const get = await fetch(server.url + '/mcp', {
      headers: { Authorization: 'Bearer ' + server.adminKey, Accept: 'text/event-stream',
        'Mcp-Session-Id': s },
    });
    assert.equal(get.status, 405);
  });

  test('batches: refused in 2025-06-18, answered in 2025-03-26', async () => {
    const batch = [{ jsonrpc: '2.0', id: 10, method: 'ping' },
      { jsonrpc: '2.0', id: 11, method: 'tools/list' },
      { jsonrpc: '2.0', method: 'notifications/initialized' }];
    const s6 = await open(server);
    const r6 = await post(server, batch, { session: s6 });
    assert.equal(r6.status, 400);
    assert.equal(r6.json.error.code, -32600);
    const s3 = await open(server, server.adminKey, '2025-03-26');
    const r3 = await post(server, batch, { session: s3 });
    assert.equal(r3.status, 200, r3.text);
    assert.deepEqual(r3.json.map((m) => m.id), [10, 11]);
    assert.equal(r3.json[1].result.tools.length, TOOLS.length);
    // initialize must not be part of a batch.
    assert.equal((await post(server, [INIT('2025-03-26')])).status, 400);
  });

  test('sandbox_list_templates lists the core catalog as GET /v1/templates does', async () => {
    const client = await connect(server, server.adminKey);
    try {
      const t = ok(await call(client, 'sandbox_list_templates', {}));
      assert.ok(t.templates.some((x) => x.name === 'base'), JSON.stringify(t));
      const rest = await server.rest('GET', '/v1/templates');
      assert.equal(rest.status, 200);
      assert.deepEqual(t, rest.json);
    } finally {
      await client.close();
    }
  });

  test('tool calls are in the audit trail with the key, as REST actions are', async () => {
    const client = await connect(server, server.keys[0]);
    let sb;
    try {
      sb = ok(await call(client, 'sandbox_create', {}));
      ok(await call(client, 'sandbox_exec', { sandbox_id: sb.id, command: 'exit 7' }));
      ok(await call(client, 'sandbox_write_file', { sandbox_id: sb.id, path: 'a', content: 'b' }));
      ok(await call(client, 'sandbox_destroy', { sandbox_id: sb.id }));
    } finally {
      await client.close();
    }
    const r = await server.rest('GET', '/v1/events?order=asc&sandbox_id=' + sb.id, undefined, server.keys[0]);
    assert.equal(r.status, 200, JSON.stringify(r.json));
    const mine = r.json.events.filter((e) => e.request_id.startsWith('mcp_'));
    assert.deepEqual(mine.map((e) => e.action),
        ['sandbox.create', 'exec', 'file.write', 'sandbox.destroy'], JSON.stringify(r.json));
    const exec = mine[1];
    assert.equal(exec.exit_code, 7);
    assert.equal(exec.target, 'exit 7');
    assert.ok(mine.every((e) => e.key_id && e.key_id === mine[0].key_id && e.result === 'ok'));
  });

  test("a key's max_sandboxes holds over MCP: at the limit passes, one more is refused",
      async () => {
    const r = await server.rest('POST', '/v1/keys', { name: 'mcp-quota', max_sandboxes: 2 });
    assert.equal(r.status, 201, JSON.stringify(r.json));
    (server.keys ||= []).push(r.json.key);
    const client = await connect(server, r.json.key);
    try {
      const all = [];
      for (let i = 0; i < 3; i++) all.push(await call(client, 'sandbox_create', {}));
      const made = all.filter((x) => !x.isError).map((x) => x.structuredContent.id);
      assert.equal(made.length, 2, JSON.stringify(all.map((x) => x.content[0].text)));
      assert.equal(errorCode(all.find((x) => x.isError)), 'limit_exceeded');
      for (const id of made) ok(await call(client, 'sandbox_destroy', { sandbox_id: id }));
      ok(await call(client, 'sandbox_destroy', {
        sandbox_id: ok(await call(client, 'sandbox_create', {})).id }));
    } finally {
      await client.close();
    }
  });

  test('a client that disconnects mid-exec cancels the command', async () => {
    const client = await connect(server, server.adminKey);
    const sb = ok(await call(client, 'sandbox_create', {}));
    try {
      const s = await open(server);
      const ac = new AbortController();
      const running = post(server, {
        jsonrpc: '2.0', id: 5, method: 'tools/call',
        params: { name: 'sandbox_exec',
          arguments: { sandbox_id: sb.id, command: 'echo $$ > pid; exec sleep 60' } },
      }, { session: s, signal: ac.signal });
      for (let i = 0; i < 100; i++) {
        const r = await call(client, 'sandbox_read_file', { sandbox_id: sb.id, path: 'pid' });
        if (!r.isError && r.structuredContent.content.trim()) break;
        await new Promise((res) => setTimeout(res, 100));
      }
      ac.abort();
      await assert.rejects(running);
      let alive = true;
      for (let i = 0; i < 50 && alive; i++) {
        await new Promise((res) => setTimeout(res, 200));
        const k = ok(await call(client, 'sandbox_exec', { sandbox_id: sb.id,
          command: 'kill -0 $(cat pid) 2>/dev/null && echo alive || echo dead' }));
        alive = k.stdout.trim() === 'alive';
      }
      assert.equal(alive, false, 'the command of the vanished client still runs');
    } finally {
      ok(await call(client, 'sandbox_destroy', { sandbox_id: sb.id }));
      await client.close();
    }
  });
});
