// The MCP server over stdio (`agent-sandbox mcp`, tools over the REST API of a real server)
// driven by the official TypeScript SDK client: the shared tool suite (suite.mjs), then what is
// particular to stdio (templates over REST, a wrong key in the environment).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

import { BIN, Server } from './harness.mjs';
import { askForRevision, call, errorCode, skip, toolSuite } from './suite.mjs';
import { processSuite } from './suite_procs.mjs';
import { codeSuite } from './suite_code.mjs';

async function connect(server, key, protocolVersion) {
  const transport = new StdioClientTransport({
    command: BIN,
    args: ['mcp'],
    env: { ...process.env, AGENT_SANDBOX_URL: server.url, AGENT_SANDBOX_API_KEY: key },
    stderr: 'inherit',
  });
  const client = new Client({ name: 'asb-mcp-test', version: '1.0.0' });
  askForRevision(transport, protocolVersion);
  await client.connect(transport);
  return client;
}

toolSuite('MCP over stdio', connect);
processSuite('MCP over stdio: processes, ports, code', connect);
codeSuite('MCP over stdio: stateful code contexts', connect);

describe('MCP over stdio: templates and keys', { skip: skip ?? false, timeout: 120000 }, () => {
  let server;
  before(async () => {
    server = new Server();
    await server.start();
  });
  after(async () => server?.close());

  test('sandbox_list_templates lists the server\'s templates (GET /v1/templates)', async () => {
    const client = await connect(server, server.adminKey);
    try {
      const r = await call(client, 'sandbox_list_templates', {});
      assert.ok(!r.isError, JSON.stringify(r.content));
      const base = r.structuredContent.templates.find((x) => x.name === 'base');
      assert.ok(base, JSON.stringify(r.structuredContent));
      assert.ok(Array.isArray(base.tools));
    } finally {
      await client.close();
    }
  });

  test('a wrong API key makes every tool fail with unauthorized', async () => {
    const client = await connect(server, 'asb_' + '0'.repeat(48));
    try {
      assert.equal(errorCode(await call(client, 'sandbox_list', {})), 'unauthorized');
      assert.equal(errorCode(await call(client, 'sandbox_create', {})), 'unauthorized');
    } finally {
      await client.close();
    }
  });
});
