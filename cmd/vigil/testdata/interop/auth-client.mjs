// Authorization interop check: the official TypeScript MCP SDK client, with
// its client-credentials auth provider, against a vigil that requires OAuth
// bearer tokens (vigil -http ... -auth-issuer ISSUER -auth-tool-scopes
// sleep=vigil.slow) and a real authorization server (testdata/oidc).
//
// Usage: node auth-client.mjs --url http://127.0.0.1:PORT/mcp --issuer ISSUER \
//          --client-id ID --client-secret SECRET
//
// The flow, each step checked against what went over the wire:
//   1. connect with no token: vigil answers 401 with a WWW-Authenticate
//      challenge naming its Protected Resource Metadata; the SDK fetches it,
//      then the authorization server's metadata, obtains a token (client
//      credentials, resource indicator = vigil's resource, scope vigil.read
//      only) and initializes with it;
//   2. tools/list shows echo but not sleep (sleep needs vigil.slow);
//   3. tools/call echo succeeds;
//   4. tools/call sleep is refused: 403 with error="insufficient_scope". The
//      SDK then tries a step-up by itself; what it did is recorded. (SDK
//      1.32.2 requests the new token with the provider's own configured scope,
//      not the challenge's, so a client-credentials client cannot step up
//      this way: the SDK gives up with "Server returned 403 after trying
//      upscoping".)
//   5. if the SDK's step-up did not succeed, a new provider configured with
//      the larger scope (vigil.read vigil.slow) connects again; then
//      tools/list shows sleep and tools/call sleep succeeds.
//
// Prints one JSON transcript on stdout ({ok, steps, http, ...}); secrets and
// tokens never appear in it. Exit code 0 only when every step went as
// expected; diagnostics go to stderr.

import assert from 'node:assert/strict';
import { parseArgs } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ClientCredentialsProvider } from '@modelcontextprotocol/sdk/client/auth-extensions.js';

const TIMEOUT_MS = 45_000;
const READ_SCOPE = 'vigil.read';
const SLOW_SCOPE = 'vigil.slow';

const { values: args } = parseArgs({
  options: {
    url: { type: 'string' },
    issuer: { type: 'string' },
    'client-id': { type: 'string' },
    'client-secret': { type: 'string' },
  },
  strict: true,
});

const transcript = { ok: false, steps: [], http: [] };

function finish(ok, error) {
  transcript.ok = ok;
  if (error) transcript.error = String(error?.stack ?? error);
  process.stdout.write(`${JSON.stringify(transcript, null, 2)}\n`);
  process.exit(ok ? 0 : 1);
}

// Never hang: if anything stalls, fail the whole run (with the transcript).
setTimeout(() => finish(false, `timed out after ${TIMEOUT_MS}ms`), TIMEOUT_MS).unref();

function step(name, detail) {
  transcript.steps.push({ step: name, ...detail });
  console.error(`auth-client: ${name}: ${JSON.stringify(detail)}`);
}

// recordingFetch records every exchange of the SDK (MCP requests, discovery,
// token requests) without headers that carry secrets or tokens.
async function recordingFetch(input, init) {
  const url = new URL(input instanceof Request ? input.url : String(input));
  const method = (init?.method ?? (input instanceof Request ? input.method : 'GET')).toUpperCase();
  const entry = { method, url: url.href };
  if (init?.body && url.href === tokenEndpoint) {
    const form = new URLSearchParams(String(init.body));
    entry.form = { grant_type: form.get('grant_type'), scope: form.get('scope'), resource: form.get('resource') };
    const auth = new Headers(init.headers).get('authorization') ?? '';
    entry.client_auth = auth.startsWith('Basic ') ? 'basic' : (form.has('client_secret') ? 'post' : 'none');
  }
  if (typeof init?.body === 'string' && url.href === args.url) {
    try {
      const msg = JSON.parse(init.body);
      entry.rpc = msg.method ?? 'response';
      if (msg.method === 'tools/call') entry.tool = msg.params?.name;
    } catch {}
  }
  if (method !== 'GET' && url.href === args.url) {
    entry.bearer = new Headers(init?.headers).has('authorization');
  }
  transcript.http.push(entry);
  const resp = await fetch(input, init);
  entry.status = resp.status;
  const challenge = resp.headers.get('www-authenticate');
  if (challenge) entry.www_authenticate = challenge;
  if (url.href === tokenEndpoint && resp.ok) {
    try {
      const body = await resp.clone().json();
      entry.granted_scope = body.scope ?? null;
      entry.token_type = body.token_type;
    } catch {}
  }
  return resp;
}

let tokenEndpoint; // learnt from the authorization server's metadata

function since(mark) {
  return transcript.http.slice(mark);
}

function challengeParams(header) {
  const out = {};
  for (const m of (header ?? '').matchAll(/([a-z_]+)="([^"]*)"/g)) out[m[1]] = m[2];
  return out;
}

async function connect(name, scope) {
  const provider = new ClientCredentialsProvider({
    clientId: args['client-id'],
    clientSecret: args['client-secret'],
    clientName: `vigil-auth-interop-${name}`,
    scope,
    expectedIssuer: args.issuer,
  });
  const transport = new StreamableHTTPClientTransport(new URL(args.url), { authProvider: provider, fetch: recordingFetch });
  const client = new Client({ name: `vigil-auth-interop-${name}`, version: '0.0.0' });
  const errors = [];
  client.onerror = (err) => errors.push(String(err));
  await client.connect(transport);
  return { client, transport, provider, errors };
}

// checkTokenFlow asserts the SDK's discovery and token request in the
// exchanges, starting at a 401 from vigil, and returns what it saw.
function checkTokenFlow(exchanges, wantScope) {
  const i401 = exchanges.findIndex((e) => e.url === args.url && e.status === 401);
  assert.ok(i401 >= 0, `no 401 from vigil: ${JSON.stringify(exchanges)}`);
  const unauthorized = exchanges[i401];
  assert.equal(unauthorized.bearer, false, 'the first request carried no token');
  assert.match(unauthorized.www_authenticate ?? '', /^Bearer /i, 'the 401 challenge is Bearer');
  const params = challengeParams(unauthorized.www_authenticate);
  assert.ok(params.resource_metadata, `the 401 challenge names resource_metadata: ${unauthorized.www_authenticate}`);
  const rest = exchanges.slice(i401 + 1);
  const prm = rest.find((e) => e.method === 'GET' && e.url === params.resource_metadata);
  assert.ok(prm, `the SDK did not fetch the resource metadata ${params.resource_metadata}`);
  assert.equal(prm.status, 200, 'Protected Resource Metadata status');
  const asMeta = rest.find((e) => e.method === 'GET' && e.url.startsWith(args.issuer) && e.url.includes('/.well-known/') && e.status === 200);
  assert.ok(asMeta, 'the SDK did not fetch the authorization server metadata');
  const token = rest.find((e) => e.url === tokenEndpoint);
  assert.ok(token, 'the SDK made no token request');
  assert.equal(token.status, 200, `token request status: ${JSON.stringify(token)}`);
  assert.equal(token.form.grant_type, 'client_credentials');
  assert.equal(token.client_auth, 'basic', 'client_secret_basic');
  assert.equal(token.form.resource, args.url, 'the resource indicator is vigil\'s resource');
  assert.equal(token.form.scope, wantScope, 'requested scope');
  assert.equal(token.granted_scope, wantScope, 'granted scope');
  const retried = rest.find((e) => e.url === args.url && e.method === 'POST' && e.bearer && e.status === 200);
  assert.ok(retried, 'the SDK did not retry with the token');
  return {
    challenge: unauthorized.www_authenticate,
    resource_metadata: params.resource_metadata,
    authorization_server_metadata: asMeta.url,
    token_request: token.form,
    granted_scope: token.granted_scope,
  };
}

async function main() {
  for (const k of ['url', 'issuer', 'client-id', 'client-secret']) {
    assert.ok(args[k], `usage: node auth-client.mjs --url URL --issuer ISSUER --client-id ID --client-secret SECRET (missing --${k})`);
  }
  transcript.url = args.url;
  transcript.issuer = args.issuer;
  // The token endpoint is read from the metadata the SDK fetches; it is
  // needed up front only to recognise token requests in the record.
  const md = await (await fetch(new URL('/.well-known/oauth-authorization-server', args.issuer))).json();
  tokenEndpoint = md.token_endpoint;

  // 1. Connect with no token: 401, discovery, token with vigil.read only.
  let mark = transcript.http.length;
  const first = await connect('read', READ_SCOPE);
  const flow = checkTokenFlow(since(mark), READ_SCOPE);
  assert.equal(first.client.getServerVersion()?.name, 'vigil', 'serverInfo.name');
  step('connect', { expected: true, ...flow });

  // 2. tools/list: echo, not sleep.
  const { tools } = await first.client.listTools();
  const names = tools.map((t) => t.name);
  assert.ok(names.includes('echo'), `echo not listed: ${names}`);
  assert.ok(!names.includes('sleep'), `sleep listed without ${SLOW_SCOPE}: ${names}`);
  step('tools/list', { expected: true, tools: names });

  // 3. tools/call echo.
  const text = 'hello with a token';
  const echo = await first.client.callTool({ name: 'echo', arguments: { text } });
  assert.deepEqual(echo.content, [{ type: 'text', text }], 'echo result');
  step('tools/call echo', { expected: true, content: echo.content });

  // 4. tools/call sleep with vigil.read only: 403 insufficient_scope; the SDK
  // tries a step-up on its own.
  mark = transcript.http.length;
  let sleepResult;
  let sleepError;
  try {
    sleepResult = await first.client.callTool({ name: 'sleep', arguments: { ms: 1 } });
  } catch (err) {
    sleepError = err;
  }
  const exchanges = since(mark);
  const forbidden = exchanges.find((e) => e.url === args.url && e.tool === 'sleep' && e.status === 403);
  assert.ok(forbidden, `tools/call sleep was not answered 403: ${JSON.stringify(exchanges)}`);
  const challenge = challengeParams(forbidden.www_authenticate);
  assert.match(forbidden.www_authenticate ?? '', /^Bearer /i, 'the 403 challenge is Bearer');
  assert.equal(challenge.error, 'insufficient_scope', `403 challenge: ${forbidden.www_authenticate}`);
  assert.ok((challenge.scope ?? '').split(' ').includes(SLOW_SCOPE), `the 403 challenge's scope names ${SLOW_SCOPE}: ${forbidden.www_authenticate}`);
  const stepUpTokens = exchanges.filter((e) => e.url === tokenEndpoint).map((e) => ({ requested: e.form?.scope, granted: e.granted_scope, status: e.status }));
  const sdkSteppedUp = sleepResult !== undefined && !sleepResult.isError;
  step('tools/call sleep with vigil.read', {
    expected: true,
    status: forbidden.status,
    challenge: forbidden.www_authenticate,
    sdk_step_up: {
      token_requests: stepUpTokens,
      outcome: sdkSteppedUp ? 'succeeded' : `failed: ${sleepError?.message ?? JSON.stringify(sleepResult)}`,
      mcp_statuses: exchanges.filter((e) => e.url === args.url).map((e) => e.status),
    },
  });
  if (!sdkSteppedUp) {
    assert.ok(sleepError, `sleep neither succeeded nor failed: ${JSON.stringify(sleepResult)}`);
  }
  await first.client.close();

  // 5. A token with the larger scope: by the SDK's step-up, or by a new
  // provider configured with it.
  let stepped = first;
  let how = 'sdk step-up';
  if (!sdkSteppedUp) {
    how = 'new ClientCredentialsProvider with the larger scope';
    const wide = `${READ_SCOPE} ${SLOW_SCOPE}`;
    mark = transcript.http.length;
    stepped = await connect('slow', wide);
    const flow2 = checkTokenFlow(since(mark), wide);
    step('connect with vigil.read vigil.slow', { expected: true, ...flow2 });
    const listed = (await stepped.client.listTools()).tools.map((t) => t.name);
    assert.ok(listed.includes('sleep') && listed.includes('echo'), `tools with ${wide}: ${listed}`);
    step('tools/list with vigil.slow', { expected: true, tools: listed });
    const slept = await stepped.client.callTool({ name: 'sleep', arguments: { ms: 1 } });
    assert.ok(!slept.isError, `sleep with ${wide}: ${JSON.stringify(slept)}`);
    step('tools/call sleep with vigil.slow', { expected: true, content: slept.content });
    await stepped.client.close();
  }
  transcript.step_up = how;
  const clientErrors = [...first.errors, ...(stepped === first ? [] : stepped.errors)];
  transcript.client_errors = clientErrors;
  step('closed', { expected: true });
}

try {
  await main();
  finish(true);
} catch (err) {
  console.error('FAIL:', err?.stack ?? err);
  finish(false, err);
}
