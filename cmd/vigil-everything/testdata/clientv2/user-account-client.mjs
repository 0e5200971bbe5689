// Each user's own account upstream, from a real client: the TypeScript MCP
// SDK v2 client calls a tool of vigil's -upstream-auth NAME=user upstream
// with the user's gateway token; the gateway asks the user to open a link,
// which the test completes in a scripted browser; then the client's call
// runs as the user.
//
// Usage: node user-account-client.mjs <mcp URL> <tool> legacy|modern error|url
// with the user's gateway token in GATEWAY_TOKEN. error: the client
// declares no url elicitation: its call rejects with the SDK's
// UrlElicitationRequiredError (-32042), the script prints "link <url>",
// waits for a line on stdin (the test completed the flow), and calls
// again. url: the client declares the elicitation url capability and
// handles elicitation/create itself: it prints "link <url>", waits for the
// line, and accepts; the SDK then goes on (legacy: the server's call
// waits for the flow; modern: the SDK retries with the requestState). It
// prints "result <text>" of the call that succeeded, "complete <id>" for
// each notifications/elicitation/complete, and exits non-zero at the
// first failure.

import assert from 'node:assert/strict';
import { createInterface } from 'node:readline';
import { Client, StreamableHTTPClientTransport, UrlElicitationRequiredError } from '@modelcontextprotocol/client';

const TIMEOUT_MS = 60_000;
setTimeout(() => {
  console.error(`FAIL: timed out after ${TIMEOUT_MS}ms`);
  process.exit(1);
}, TIMEOUT_MS).unref();

const [target, tool, era, mode] = process.argv.slice(2);
const token = process.env.GATEWAY_TOKEN;
if (!target || !tool || !token || !['legacy', 'modern'].includes(era) || !['error', 'url'].includes(mode)) {
  console.error('usage: GATEWAY_TOKEN=… node user-account-client.mjs <mcp URL> <tool> legacy|modern error|url');
  process.exit(2);
}

// The lines the test writes on stdin, one per completed flow.
const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
async function userDone() {
  const { done } = await lines.next();
  assert.equal(done, false, 'stdin closed before the user completed the flow');
}

try {
  const client = new Client(
    { name: 'vigil-user-account', version: '0.0.0' },
    {
      capabilities: mode === 'url' ? { elicitation: { url: {} } } : {},
      versionNegotiation: era === 'modern' ? { mode: { pin: '2026-07-28' } } : { mode: 'legacy' },
    },
  );
  let asked = 0;
  if (mode === 'url') {
    client.setRequestHandler('elicitation/create', async (req) => {
      assert.equal(req.params.mode, 'url', JSON.stringify(req.params));
      asked += 1;
      console.log(`link ${req.params.url}`);
      await userDone();
      return { action: 'accept' };
    });
  }
  client.setNotificationHandler('notifications/elicitation/complete', (n) => {
    console.log(`complete ${n.params.elicitationId}`);
  });
  const transport = new StreamableHTTPClientTransport(new URL(target), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  await client.connect(transport);
  console.log(`connected, protocol ${client.getNegotiatedProtocolVersion()}`);

  let result;
  try {
    result = await client.callTool({ name: tool, arguments: {} });
  } catch (err) {
    assert.equal(mode, 'error', `a client that handles url elicitation got ${err?.stack ?? err}`);
    assert.ok(err instanceof UrlElicitationRequiredError, `want UrlElicitationRequiredError, got ${err?.stack ?? err}`);
    assert.equal(err.code, -32042);
    assert.equal(err.elicitations.length, 1, JSON.stringify(err.elicitations));
    assert.equal(err.elicitations[0].mode, 'url');
    asked += 1;
    console.log(`link ${err.elicitations[0].url}`);
    await userDone();
    result = await client.callTool({ name: tool, arguments: {} });
  }
  assert.equal(asked, 1, 'asked once');
  assert.equal(result.isError ?? false, false, JSON.stringify(result));
  console.log(`result ${result.content[0].text}`);
  await client.close();
  process.exit(0); // stdin, which the test keeps open, holds the event loop
} catch (err) {
  console.error(`FAIL: ${err?.stack ?? err}`);
  process.exit(1);
}
