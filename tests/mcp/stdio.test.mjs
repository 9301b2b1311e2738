// The MCP server over stdio (`agent-sandbox mcp`, tools over the REST API of a real server)
// driven by the official TypeScript SDK client: the shared tool suite (suite.mjs), then what is
// particular to stdio (templates over REST, a wrong key in the environment).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

import { BIN, Server } from './harness.mjs';
import { askForRevision, call, errorCode, skip, toolSuite } from './suite.mjs';

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

describe('MCP over stdio: templates and keys', { skip: skip ?? false, timeout: 120000 }, () => {
  let server;
  before(async () => {
    server = new Server();
    await server.start();
  });
  after(async () => server?.close());

  test('sandbox_list_templates lists base, or says the server has no templates route', async (t) => {
    const client = await connect(server, server.adminKey);
    try {
      const r = await call(client, 'sandbox_list_templates', {});
      if (r.isError) {
        // The REST API has no GET /v1/templates yet: the tool says so with the server's code.
        assert.equal(errorCode(r), 'not_found');
        assert.match(r.content[0].text, /no \/v1\/templates route/);
        t.skip('the server has no GET /v1/templates route');
        return;
      }
      assert.ok(r.structuredContent.templates.some((x) => x.name === 'base'));
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
