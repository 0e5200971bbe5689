// Cuts and kills: one client (ai-sdk, ts-v2 or langchain) connected to
// vigil over Streamable HTTP, driven line by line by the Go test
// (interop/clients/npm_cancel_test.go). It says "get-open" once its
// standalone GET stream is open (2025 era), then "ready". On "call" it
// starts tools/call sleep (60 s) and says "calling"; on "abort" it aborts
// that call the client's own way (an AbortSignal) and says "aborted" with
// the error the client gave. The test kills it with SIGKILL mid-call, or
// ends its input to close it.
//
// Usage: node cut.mjs ai-sdk|ts-v2|langchain http://HOST:PORT/mcp 2025-11-25|2026-07-28

import assert from 'node:assert/strict';
import { createInterface } from 'node:readline';
import { LEGACY, MODERN, watchingFetch } from './lib.mjs';

const [which, url, era] = process.argv.slice(2);
assert.ok([LEGACY, MODERN].includes(era), `era ${era}`);
const say = (line) => process.stdout.write(line + '\n');
const fetch = watchingFetch(() => say('get-open'));
const SLEEP = { name: 'sleep', arguments: { ms: 60_000 } };

// call(signal) starts the sleep call; close() closes the client. Each
// client's package is imported only when it is the one driven: a killed
// process starts twenty times.
let call, close;
switch (which) {
  case 'ai-sdk': {
    const { createMCPClient } = await import('@ai-sdk/mcp');
    const client = await createMCPClient({ transport: { type: 'http', url, fetch }, protocolVersionDiscovery: era === MODERN });
    assert.equal(client.initializeResult.protocolVersion, era);
    call = (signal) => client.callTool({ ...SLEEP, options: { signal } });
    close = () => client.close();
    break;
  }
  case 'ts-v2': {
    const { Client, StreamableHTTPClientTransport } = await import('@modelcontextprotocol/client');
    const client = new Client({ name: 'ts-v2-cut', version: '1' }, {
      versionNegotiation: era === MODERN ? { mode: { pin: MODERN } } : { mode: 'legacy' },
    });
    await client.connect(new StreamableHTTPClientTransport(new URL(url), { fetch }));
    call = (signal) => client.callTool(SLEEP, { signal });
    close = () => client.close();
    break;
  }
  case 'langchain': {
    assert.equal(era, LEGACY);
    const { MultiServerMCPClient } = await import('@langchain/mcp-adapters');
    const client = new MultiServerMCPClient({ mcpServers: { vigil: { transport: 'http', url, fetch } }, throwOnLoadError: true });
    const tools = await client.getTools();
    const sleep = tools.find((t) => t.name.endsWith('sleep'));
    call = (signal) => sleep.invoke(SLEEP.arguments, { signal });
    close = () => client.close();
    break;
  }
  default:
    throw new Error(`unknown client ${which}`);
}
say('ready');

let controller, pending;
for await (const line of createInterface({ input: process.stdin })) {
  if (line === 'call') {
    controller = new AbortController();
    pending = call(controller.signal).then(
      () => 'completed',
      (err) => `aborted ${String(err?.message ?? err).split('\n')[0]}`,
    );
    say('calling');
  } else if (line === 'abort') {
    controller.abort('suite: cancelled');
    say(await pending);
  }
}
await close();
