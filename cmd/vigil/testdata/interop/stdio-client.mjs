// Interop check: drive the vigil binary over stdio with the official
// TypeScript MCP SDK client.
//
// Usage: node stdio-client.mjs /path/to/vigil
//
// Prints one line per step and exits non-zero on the first failure.

import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const TIMEOUT_MS = 30_000;

// Never hang: if anything stalls, fail the whole run.
setTimeout(() => {
  console.error(`FAIL: timed out after ${TIMEOUT_MS}ms`);
  process.exit(1);
}, TIMEOUT_MS).unref();

function step(msg) {
  console.log(`interop: ${msg}`);
}

async function main() {
  const binary = process.argv[2];
  assert.ok(binary, 'usage: node stdio-client.mjs <path-to-vigil-binary>');

  const transport = new StdioClientTransport({
    command: binary,
    args: ['-stdio'],
    stderr: 'inherit',
  });
  const client = new Client({ name: 'vigil-interop', version: '0.0.0' });

  step(`connecting to ${binary} -stdio (initialize)`);
  await client.connect(transport);

  const serverInfo = client.getServerVersion();
  assert.ok(serverInfo, 'server did not report serverInfo');
  assert.equal(serverInfo.name, 'vigil', 'serverInfo.name');
  step(`initialized: server ${serverInfo.name} ${serverInfo.version ?? ''}`.trimEnd());

  const { tools } = await client.listTools();
  assert.ok(Array.isArray(tools), 'tools/list result.tools is not an array');
  step(`tools/list: ${tools.map((t) => t.name).join(', ')}`);
  for (const name of ['echo', 'sleep']) {
    const tool = tools.find((t) => t.name === name);
    assert.ok(tool, `tool ${JSON.stringify(name)} not listed`);
    assert.ok(tool.inputSchema, `tool ${name} has no inputSchema`);
    assert.equal(tool.inputSchema.type, 'object', `tool ${name} inputSchema.type`);
  }
  step('tools/list: echo and sleep present with object input schemas');

  const text = 'hello from typescript';
  const echo = await client.callTool({ name: 'echo', arguments: { text } });
  assert.ok(!echo.isError, `echo returned isError: ${JSON.stringify(echo)}`);
  assert.deepEqual(echo.content, [{ type: 'text', text }], 'echo content');
  step(`tools/call echo: ${JSON.stringify(echo.content)}`);

  const sleep = await client.callTool({ name: 'sleep', arguments: { ms: 10 } });
  assert.ok(!sleep.isError, `sleep returned isError: ${JSON.stringify(sleep)}`);
  assert.ok(Array.isArray(sleep.content), 'sleep content is not an array');
  assert.ok(
    sleep.content.some((c) => c.type === 'text' && typeof c.text === 'string'),
    `sleep returned no text content item: ${JSON.stringify(sleep.content)}`,
  );
  step(`tools/call sleep: ${JSON.stringify(sleep.content)}`);

  await client.close();
  step('closed');
  step('OK');
}

try {
  await main();
  process.exit(0);
} catch (err) {
  console.error('FAIL:', err?.stack ?? err);
  process.exit(1);
}
