// Known client bug aiSdkNoCancelNotification: the AI SDK aborts a call
// without sending notifications/cancelled, on every transport; over stdio
// nothing else tells the server, so the call runs to its end. (2025-11-25
// says a client SHOULD send it; 2026-07-28 says a stdio client MUST.) The
// server, vigil -stdio, writes its log on this script's stderr (the
// transport's default): the Go test reads there that the countdown ended
// "ok" after the abort. When the client sends the notification, the log
// says cancelled and the test fails.
//
// Usage: node ai-sdk-stdio-abort.mjs /path/to/vigil 2025-11-25|2026-07-28

import assert from 'node:assert/strict';
import { createMCPClient } from '@ai-sdk/mcp';
import { Experimental_StdioMCPTransport } from '@ai-sdk/mcp/mcp-stdio';
import { MODERN, parseTarget, stepper, watchdog } from './lib.mjs';

watchdog(30_000);
const { target, era } = parseTarget('ai-sdk-stdio-abort');
const step = stepper(`ai-sdk stdio/${era}`);
const client = await createMCPClient({
  transport: new Experimental_StdioMCPTransport({ command: target, args: ['-stdio', '-log-level', 'debug'] }),
  protocolVersionDiscovery: era === MODERN,
});
assert.equal(client.initializeResult.protocolVersion, era);
const controller = new AbortController();
const call = client.callTool({ name: 'countdown', arguments: { from: 100 }, options: { signal: controller.signal } });
setTimeout(() => controller.abort('suite: cancelled'), 100);
await assert.rejects(call);
step('countdown aborted at 100 ms');
// The Go test ends this script's input once vigil logged the call's end.
for await (const _ of process.stdin);
await client.close();
step('OK');
