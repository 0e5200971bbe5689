// A REST upstream's tools called through vigil by a real client: the
// TypeScript MCP SDK v2 client lists vigil's tools and calls the ones the
// test names, in one era.
//
// Usage: node openapi-client.mjs <mcp URL> legacy|modern < calls.json
// where calls.json is a JSON array of {"name", "arguments"}. It prints one
// JSON line per step: {"protocol"} once connected, {"tools"} (the whole
// list, every page), then {"name", "result"} or {"name", "error": {code,
// message}} per call, in order; it exits non-zero at the first failure
// that is not an answer (a transport error).

import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const TIMEOUT_MS = 120_000;
setTimeout(() => {
  console.error(`FAIL: timed out after ${TIMEOUT_MS}ms`);
  process.exit(1);
}, TIMEOUT_MS).unref();

const [target, era] = process.argv.slice(2);
if (!target || !['legacy', 'modern'].includes(era)) {
  console.error('usage: node openapi-client.mjs <mcp URL> legacy|modern < calls.json');
  process.exit(2);
}

let input = '';
for await (const chunk of process.stdin) input += chunk;
const calls = JSON.parse(input);

try {
  const client = new Client(
    { name: 'vigil-openapi', version: '0.0.0' },
    { capabilities: {}, versionNegotiation: era === 'modern' ? { mode: { pin: '2026-07-28' } } : { mode: 'legacy' } },
  );
  await client.connect(new StreamableHTTPClientTransport(new URL(target)));
  console.log(JSON.stringify({ protocol: client.getNegotiatedProtocolVersion() }));
  const tools = [];
  let cursor;
  do {
    const page = await client.listTools(cursor ? { cursor } : {});
    tools.push(...page.tools);
    cursor = page.nextCursor;
  } while (cursor);
  console.log(JSON.stringify({ tools }));
  for (const c of calls) {
    try {
      const result = await client.callTool({ name: c.name, arguments: c.arguments });
      console.log(JSON.stringify({ name: c.name, result }));
    } catch (err) {
      if (typeof err?.code !== 'number') throw err;
      console.log(JSON.stringify({ name: c.name, error: { code: err.code, message: err.message } }));
    }
  }
  await client.close();
  process.exit(0);
} catch (err) {
  console.error(`FAIL: ${err?.stack ?? err}`);
  process.exit(1);
}
