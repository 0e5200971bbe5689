// DPoP end to end: the TypeScript MCP SDK v2 client gets a DPoP-bound
// access token (RFC 9449) from the authorization server with the client
// credentials grant, its DpopSession signing the token request, then calls
// vigil's tools presenting the token under the DPoP scheme with a fresh
// proof per request (the SDK's withDpopFromProvider, which the transport
// composes when the auth provider implements dpop()).
//
// Usage: node dpop-client.mjs <mcp URL> <issuer> <client id> <calls> legacy|modern
// with the client secret in OIDC_CLIENT_SECRET; legacy is the 2025
// protocol era (a session, which the replicas share), modern 2026-07-28. It prints one line per
// step, then "result <json>" with the session's key thumbprint and the
// token type, and exits non-zero at the first failure.

import assert from 'node:assert/strict';
import { Client, ClientCredentialsProvider, DpopSession, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const TIMEOUT_MS = 60_000;
setTimeout(() => {
  console.error(`FAIL: timed out after ${TIMEOUT_MS}ms`);
  process.exit(1);
}, TIMEOUT_MS).unref();

const [target, issuer, clientId, callsArg, era] = process.argv.slice(2);
const clientSecret = process.env.OIDC_CLIENT_SECRET;
const calls = Number.parseInt(callsArg ?? '', 10);
if (!target || !issuer || !clientId || !clientSecret || !(calls > 0) || !['legacy', 'modern'].includes(era)) {
  console.error('usage: OIDC_CLIENT_SECRET=… node dpop-client.mjs <mcp URL> <issuer> <client id> <calls> legacy|modern');
  process.exit(2);
}

// A client-credentials provider whose tokens are DPoP-bound to session.
class DpopClientCredentials extends ClientCredentialsProvider {
  constructor(options, session) {
    super(options);
    this.session = session;
  }

  dpop() {
    return this.session;
  }
}

try {
  const session = await DpopSession.create();
  const provider = new DpopClientCredentials({ clientId, clientSecret, expectedIssuer: issuer }, session);
  const transport = new StreamableHTTPClientTransport(new URL(target), { authProvider: provider });
  const client = new Client(
    { name: 'vigil-dpop', version: '0.0.0' },
    { versionNegotiation: era === 'modern' ? { mode: { pin: '2026-07-28' } } : { mode: 'legacy' } },
  );
  await client.connect(transport);
  const protocol = client.getNegotiatedProtocolVersion();
  console.log(`dpop: connected, protocol ${protocol}`);
  const tokens = provider.tokens();
  assert.equal(tokens?.token_type?.toLowerCase(), 'dpop', 'the authorization server issued a DPoP token');
  const { tools } = await client.listTools();
  assert.ok(tools.some((t) => t.name === 'echo'), 'tools/list names echo');
  for (let i = 0; i < calls; i += 1) {
    const text = `dpop ${i}`;
    const result = await client.callTool({ name: 'echo', arguments: { text } });
    assert.equal(result.isError ?? false, false, JSON.stringify(result));
    assert.ok(JSON.stringify(result.content).includes(text), JSON.stringify(result.content));
  }
  console.log(`dpop: ${calls} calls answered`);
  await client.close();
  console.log(`result ${JSON.stringify({ thumbprint: session.thumbprint, tokenType: tokens.token_type, protocol })}`);
} catch (err) {
  console.error(`FAIL: ${err?.stack ?? err}`);
  process.exit(1);
}
