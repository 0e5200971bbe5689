// Known client bug aiSdkSessionExpired404, checked against a stand-in
// server on loopback (not Vigil, whose 404 is plain text so that this
// client acts on it): a 404 for an expired session whose body is a JSON-RPC
// error is handed to the call as that error, and onSessionExpired is never
// called; the same 404 with a plain-text body is acted on. When the client
// is fixed, the JSON-RPC body also reaches onSessionExpired and this fails.
//
// Usage: node ai-sdk-404.mjs

import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { createMCPClient } from '@ai-sdk/mcp';
import { stepper, watchdog } from './lib.mjs';

watchdog(30_000);
const step = stepper('ai-sdk 404');

// serve answers initialize with a session, accepts notifications, has no
// GET stream, and answers any other request of that session 404 with body.
function serve(body, contentType) {
  const server = createServer(async (req, res) => {
    if (req.method !== 'POST') {
      res.writeHead(405).end();
      return;
    }
    let raw = '';
    for await (const chunk of req) raw += chunk;
    const msg = JSON.parse(raw);
    if (msg.method === 'initialize') {
      res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 'gone-soon' });
      res.end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: { protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo: { name: 'stand-in', version: '1' } } }));
    } else if (msg.id === undefined) {
      res.writeHead(202).end();
    } else {
      res.writeHead(404, { 'content-type': contentType });
      res.end(body(msg.id));
    }
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

for (const [name, body, contentType, want] of [
  ['JSON-RPC body', (id) => JSON.stringify({ jsonrpc: '2.0', id, error: { code: -32001, message: 'Session not found' } }), 'application/json', 0],
  ['plain-text body', () => 'session not found', 'text/plain', 1],
]) {
  const server = await serve(body, contentType);
  let expired = 0;
  const client = await createMCPClient({
    transport: { type: 'http', url: `http://127.0.0.1:${server.address().port}/mcp`, onSessionExpired: () => { expired++; } },
    protocolVersionDiscovery: false,
  });
  await assert.rejects(client.callTool({ name: 'any' }));
  assert.equal(expired, want, `${name}: onSessionExpired calls${want === 0 ? ' (known client bug aiSdkSessionExpired404)' : ''}`);
  step(`404 with a ${name}: onSessionExpired called ${expired} time(s)`);
  await client.close();
  server.close();
}
step('OK');
