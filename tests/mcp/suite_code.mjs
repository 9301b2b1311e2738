// The stateful code tools (sandbox_code_run, sandbox_code_context_*; ADR 0019) driven by the
// official TypeScript SDK client against the real server and real kernels, the same for every
// transport (stdio.test.mjs: the REST back end; http.test.mjs: the in-process one): state kept
// between runs in a context, a matplotlib figure in the python template that comes back as an
// MCP image content item (a real PNG) with its chart data as JSON text, a kernel error with
// its traceback, restart and delete. Python needs the `python` template: without it the suite
// skips saying so. The SDK validates every structuredContent against the tool's outputSchema.
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';

import { Server } from './harness.mjs';
import { call, errorCode, ok, skip } from './suite.mjs';

const TEMPLATES = process.env.ASB_TEMPLATES || '/var/lib/agent-sandbox/templates';
const noPython = fs.existsSync(path.join(TEMPLATES, 'python', 'rootfs', 'usr')) ? null
  : `the python template is not built under ${TEMPLATES} (agent-sandbox template build python)`;

export function codeSuite(title, connect) {
describe(title, { skip: skip ?? noPython ?? false, timeout: 600000 }, () => {
  let server;
  let client;
  let sb;
  before(async () => {
    server = new Server();
    await server.start();
    server.keys = [await server.newKey()];
    client = await connect(server, server.keys[0]);
    sb = ok(await call(client, 'sandbox_create', { template: 'python', timeout_seconds: 600 }));
  });
  after(async () => {
    if (sb) await call(client, 'sandbox_destroy', { sandbox_id: sb.id }).catch(() => {});
    await client?.close();
    await server?.close();
  });

  test('a context keeps its state; the last expression is the result text', async () => {
    const ctx = ok(await call(client, 'sandbox_code_context_create',
        { sandbox_id: sb.id, language: 'python' }));
    assert.match(ctx.id, /^ctx_[0-9a-f]{16}$/);
    assert.equal(ctx.state, 'running');
    let r = await call(client, 'sandbox_code_run',
        { sandbox_id: sb.id, context_id: ctx.id, code: 'x = 20\nprint("set")' });
    assert.equal(ok(r).status, 'ok');
    assert.equal(r.structuredContent.stdout, 'set\n');
    r = await call(client, 'sandbox_code_run',
        { sandbox_id: sb.id, context_id: ctx.id, code: 'x * 2 + 2' });
    const s = ok(r);
    assert.equal(s.context_id, ctx.id);
    assert.equal(s.results.find((x) => x.is_main_result).data['text/plain'], '42');
    assert.match(r.content[0].text, /--- result\n42\n/);

    const list = ok(await call(client, 'sandbox_code_context_list', { sandbox_id: sb.id }));
    assert.ok(list.contexts.some((c) => c.id === ctx.id));
    ok(await call(client, 'sandbox_code_context_restart',
        { sandbox_id: sb.id, context_id: ctx.id }));
    const gone = ok(await call(client, 'sandbox_code_run',
        { sandbox_id: sb.id, context_id: ctx.id, code: 'x' }));
    assert.equal(gone.status, 'error', 'a restart forgets x');
    assert.equal(gone.error.name, 'NameError');
    ok(await call(client, 'sandbox_code_context_delete', { sandbox_id: sb.id, context_id: ctx.id }));
    assert.equal(errorCode(await call(client, 'sandbox_code_run',
        { sandbox_id: sb.id, context_id: ctx.id, code: '1' })), 'not_found');
  });

  test('a matplotlib figure comes back as image content and its chart as JSON', async () => {
    const r = await call(client, 'sandbox_code_run', { sandbox_id: sb.id, language: 'python',
      code: "import matplotlib.pyplot as plt\n"
        + "plt.plot([1, 2, 3], [2, 4, 8], label='growth')\n"
        + "plt.title('Growth')\nplt.show()" });
    const s = ok(r);
    assert.equal(s.status, 'ok', JSON.stringify(s));
    assert.equal(s.images, 1);
    const images = r.content.filter((c) => c.type === 'image');
    assert.equal(images.length, 1, JSON.stringify(r.content.map((c) => c.type)));
    assert.equal(images[0].mimeType, 'image/png');
    const png = Buffer.from(images[0].data, 'base64');
    assert.deepEqual([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
    assert.ok(png.length > 1000, 'a real figure, ' + png.length + ' bytes');
    const chart = r.content.find((c) => c.type === 'text' && c.text.startsWith('chart of result'));
    assert.ok(chart, 'a chart text item');
    const data = JSON.parse(chart.text.slice(chart.text.indexOf(': ') + 2));
    assert.equal(data.type, 'line');
    assert.equal(data.title, 'Growth');
  });

  test('a kernel error is a result with its traceback; one-shot run_code is unchanged',
      async () => {
    const r = await call(client, 'sandbox_code_run',
        { sandbox_id: sb.id, code: 'def f():\n    return 1 / 0\nf()' });
    const s = ok(r);
    assert.equal(s.status, 'error');
    assert.equal(s.error.name, 'ZeroDivisionError');
    assert.match(r.content[0].text, /--- error\nZeroDivisionError: division by zero/);
    assert.doesNotMatch(r.content[0].text, /\x1b\[/);
    const once = ok(await call(client, 'sandbox_run_code',
        { sandbox_id: sb.id, language: 'python', code: 'print(6 * 7)' }));
    assert.equal(once.exit_code, 0);
    assert.equal(once.stdout, '42\n');
  });
});
}
