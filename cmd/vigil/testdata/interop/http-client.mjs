// Interop check: drive a running vigil over Streamable HTTP with the
// official TypeScript MCP SDK client.
//
// Usage: node http-client.mjs http://127.0.0.1:PORT/mcp
//
// Prints one line per step and exits non-zero on the first failure.

import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

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
  const endpoint = process.argv[2];
  assert.ok(endpoint, 'usage: node http-client.mjs <MCP URL>');
  const url = new URL(endpoint);

  const transport = new StreamableHTTPClientTransport(url);
  const errors = [];
  const client = new Client({ name: 'vigil-interop-http', version: '0.0.0' });
  client.onerror = (err) => errors.push(err);

  step(`connecting to ${url} (initialize)`);
  await client.connect(transport);
  const serverInfo = client.getServerVersion();
  assert.ok(serverInfo, 'server did not report serverInfo');
  assert.equal(serverInfo.name, 'vigil', 'serverInfo.name');
  const sessionId = transport.sessionId;
  assert.ok(sessionId, 'no Mcp-Session-Id issued');
  assert.match(sessionId, /^[\x21-\x7E]{22,}$/, 'session id: visible ASCII, at least 22 characters');
  step(`initialized: server ${serverInfo.name} ${serverInfo.version ?? ''}, session ${sessionId}`);

  const { tools } = await client.listTools();
  assert.ok(Array.isArray(tools), 'tools/list result.tools is not an array');
  for (const name of ['echo', 'sleep', 'countdown']) {
    const tool = tools.find((t) => t.name === name);
    assert.ok(tool, `tool ${JSON.stringify(name)} not listed`);
    assert.equal(tool.inputSchema?.type, 'object', `tool ${name} inputSchema.type`);
  }
  step(`tools/list: ${tools.map((t) => t.name).join(', ')}`);

  const text = 'hello over HTTP';
  const echo = await client.callTool({ name: 'echo', arguments: { text } });
  assert.deepEqual(echo, { content: [{ type: 'text', text }] }, 'echo result');
  step(`tools/call echo: ${JSON.stringify(echo.content)}`);

  const from = 5;
  const progress = [];
  let resultSeen = false;
  const countdown = await client.callTool({ name: 'countdown', arguments: { from } }, undefined, {
    onprogress: (p) => {
      assert.ok(!resultSeen, 'progress after the result');
      progress.push(p);
    },
  });
  resultSeen = true;
  assert.deepEqual(countdown.content, [{ type: 'text', text: 'liftoff' }], 'countdown content');
  assert.ok(!countdown.isError, `countdown returned isError: ${JSON.stringify(countdown)}`);
  assert.ok(progress.length >= 3, `want >= 3 progress events before the result, got ${JSON.stringify(progress)}`);
  progress.forEach((p, i) => {
    assert.equal(p.total, from, `progress[${i}].total`);
    assert.equal(p.message, `${from - p.progress} left`, `progress[${i}].message`);
    if (i > 0) {
      assert.ok(p.progress > progress[i - 1].progress, `progress not increasing: ${JSON.stringify(progress)}`);
    }
  });
  step(`tools/call countdown: ${progress.length} progress events (${progress.map((p) => p.progress).join(', ')}), then ${JSON.stringify(countdown.content)}`);

  await transport.terminateSession();
  assert.equal(transport.sessionId, undefined, 'terminateSession kept the session id');
  step(`DELETE: session ${sessionId} terminated`);

  // The old session id is gone: the server answers 404.
  const stale = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-session-id': sessionId,
      'mcp-protocol-version': transport.protocolVersion ?? '2025-11-25',
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 99, method: 'ping' }),
  });
  assert.equal(stale.status, 404, 'a request on the terminated session');
  // Plain text, no JSON-RPC error: clients that find one in a 404 take it
  // for one call refused and never learn the session ended (docs/http.md).
  assert.match(stale.headers.get('content-type') ?? '', /^text\/plain/, 'the 404 body is plain text');
  assert.equal((await stale.text()).trim(), 'unknown or terminated session');
  step('terminated session answers 404');

  await client.close();
  assert.deepEqual(errors.map(String), [], 'client reported errors');
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
