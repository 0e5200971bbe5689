// A real OAuth 2.1 authorization server for vigil's authorization tests:
// oidc-provider 9.13.3 (OpenID Certified), configured for a resource server
// reached with the client credentials grant and RFC 8707 resource indicators.
//
// Usage (run with Node 22, see cmd/vigil/oidc_provider_test.go):
//
//   node provider.mjs --port 0 --resource http://127.0.0.1:8080/mcp \
//     --client-id c --client-secret s [--client-id c2 --client-secret s2 ...] \
//     [--introspector-id vigil --introspector-secret vs] \
//     [--scopes vigil.read,vigil.slow] [--token-format jwt|opaque] \
//     [--access-token-ttl 600] [--jwks private-jwks.json] [--exit-on-stdin-close] \
//     [--other-resource http://127.0.0.1:9/other ...] [--test-endpoints] \
//     [--exchanger-id vigil-exchanger --exchanger-secret xs]
//     [--host 127.0.0.2] [--accounts alice,bob]
//     [--web-client-id w --web-client-secret ws --redirect-uri URI ...]
//
// Secrets may instead come from the environment: OIDC_CLIENT_SECRET (one
// client), OIDC_INTROSPECTOR_SECRET and OIDC_EXCHANGER_SECRET.
//
// It listens on 127.0.0.1 (port 0 picks a free port; the issuer is then
// http://127.0.0.1:<the port chosen>, with no trailing slash) and prints one
// line, "ready <issuer>", on stdout once it accepts connections. Requests are
// logged on stderr. It exits with status 0 on SIGTERM or SIGINT, and, with
// --exit-on-stdin-close, when its stdin reaches end of file (so a parent that
// dies without signalling does not leave it running).
//
// What it serves:
//   - discovery at /.well-known/openid-configuration and
//     /.well-known/oauth-authorization-server; keys at /jwks;
//   - POST /token, grant_type=client_credentials, client authentication
//     client_secret_basic (or client_secret_post); scope is a subset of
//     --scopes; resource, if given, must equal --resource (invalid_target
//     otherwise) and defaults to it. The access token's aud is the resource,
//     its sub and client_id the client, its scope the granted scopes, its
//     lifetime --access-token-ttl seconds. --token-format jwt (the default)
//     issues RS256 JWTs signed with the FIRST key of --jwks (kid in the
//     header); opaque issues reference tokens, kept in memory (they do not
//     survive a restart) and readable only by introspection;
//   - with a DPoP proof (RFC 9449) on the token request, a DPoP-bound token:
//     token_type DPoP, and cnf.jkt (the proof key's thumbprint) in the JWT
//     and in its introspection;
//   - POST /token/introspection (RFC 7662), client authentication as above;
//   - POST /token/revocation (RFC 7009), client authentication as above;
//   - with --other-resource (repeatable), tokens also for those resources
//     (resource=<it>, which becomes their aud), for tests of a token issued
//     for another resource server;
//   - with --test-endpoints, GET /test/introspections: {"count": n}, the
//     number of POST /token/introspection requests received since start
//     (counted on arrival, before they are answered);
//   - with --exchanger-id (and --jwks), POST /token with
//     grant_type=urn:ietf:params:oauth:grant-type:token-exchange (RFC 8693),
//     for that client only (the resource server's exchange credentials):
//     subject_token is an access token of this provider for --resource (an
//     RS256 JWT, verified), subject_token_type
//     urn:ietf:params:oauth:token-type:access_token, audience one of
//     --other-resource or --resource (invalid_target otherwise), scope (optional) a
//     subset of the subject token's (invalid_scope otherwise; default its
//     scope). The answer (RFC 8693 §2.2.1) is an RS256 JWT access token
//     (typ at+jwt) with the subject token's sub, aud the audience, client_id
//     the exchanger, the scope, and act {"sub": <exchanger>} with the subject
//     token's own act nested in it (RFC 8693 §4.1), for --access-token-ttl
//     seconds; token_type Bearer, issued_token_type access_token;
//     that client may also get tokens of its own by client credentials;
//   - with --test-endpoints and --exchanger-id, GET /test/exchanges:
//     {"count": n}, the tokens issued by exchange since start; and POST
//     /test/seen with a JSON body {"token": t}: {"requests": ["POST /token",
//     ...]}, the method and path of every request received since start
//     whose URL, headers or parsed body held t (the test's own /test
//     requests excepted).
//
// Who may introspect what (oidc-provider's rules, and this configuration's):
//   - JWT access tokens are never introspected: oidc-provider refuses any
//     structured token at the introspection endpoint (400
//     unsupported_token_type, "Structured JWT Tokens cannot be introspected").
//     A resource server introspects only opaque tokens (--token-format
//     opaque).
//   - The caller must authenticate as a registered client. oidc-provider's
//     default policy then lets any confidential client read any token's
//     introspection (a public client only its own). This configuration
//     narrows it (features.introspection.allowedPolicy): the introspector
//     client (--introspector-id, the resource server's own credentials) may
//     introspect every token; any other client only the tokens issued to
//     itself. A token the caller may not see answers {"active": false}, as
//     an unknown, expired or revoked one does.
//   - An active answer carries aud (the resource), scope, client_id, iss,
//     exp, iat, jti and token_type "Bearer", but NO sub for a
//     client-credentials token: oidc-provider takes sub from the token's
//     account, which such a token has not (its JWT form says sub = client_id),
//     so a resource server should fall back to client_id.
//
// JWT access tokens follow RFC 9068: header typ "at+jwt", alg RS256, kid;
// claims iss, aud (one string), sub = client_id, client_id, scope (absent
// when none was granted), iat, exp, jti.
//
// Users and the authorization code flow (--accounts, --web-client-id):
//   - --accounts names the users who may sign in (no password: the test
//     types the name). GET /interaction/<uid> is the login page, a form
//     with one field, login, posted to /interaction/<uid>/login; a name
//     not in --accounts is refused (403). Consent is given at once, for
//     every scope and resource asked (the next GET /interaction/<uid>).
//     The ID token's sub and the access token's sub are the name.
//   - each --web-client-id (with its --web-client-secret and
//     --redirect-uri, in order) is a confidential client of the
//     authorization code flow, PKCE S256 required, client_secret_basic,
//     that gets a refresh token with each code (rotated on use) and may
//     also use client credentials (its own token, sub = its id);
//     authorization responses carry iss (RFC 9207);
//   - --host is the loopback address it listens on (default 127.0.0.1):
//     two providers on two addresses keep their browser cookies apart;
//   - with --revoke-grant, revoking an access token (POST
//     /token/revocation) revokes its grant, its refresh token included:
//     a user revoking the application at her provider.
//
// Keys: --jwks names a JSON file holding a private JWKS ({"keys": [...]},
// RSA keys with kid, n, e, d, p, q, dp, dq, qi). /jwks publishes their public
// halves in the same order; tokens are signed with the first. Restart the
// provider on the same port with [new, old] and then [new] to test a key
// rotation. Without --jwks oidc-provider uses its development keys.

import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import process from 'node:process';
import { parseArgs } from 'node:util';

import { createLocalJWKSet, importJWK, jwtVerify, SignJWT } from 'jose';
import Provider, { errors } from 'oidc-provider';

const { values: args } = parseArgs({
  options: {
    port: { type: 'string', default: '0' },
    resource: { type: 'string' },
    'client-id': { type: 'string', multiple: true, default: [] },
    'client-secret': { type: 'string', multiple: true, default: [] },
    'introspector-id': { type: 'string' },
    'introspector-secret': { type: 'string' },
    scopes: { type: 'string', default: 'vigil.read,vigil.slow' },
    'token-format': { type: 'string', default: 'jwt' },
    'access-token-ttl': { type: 'string', default: '600' },
    jwks: { type: 'string' },
    'exit-on-stdin-close': { type: 'boolean', default: false },
    'other-resource': { type: 'string', multiple: true, default: [] },
    'test-endpoints': { type: 'boolean', default: false },
    'exchanger-id': { type: 'string' },
    'exchanger-secret': { type: 'string' },
    host: { type: 'string', default: '127.0.0.1' },
    accounts: { type: 'string', default: '' },
    'web-client-id': { type: 'string', multiple: true, default: [] },
    'web-client-secret': { type: 'string', multiple: true, default: [] },
    'redirect-uri': { type: 'string', multiple: true, default: [] },
    'revoke-grant': { type: 'boolean', default: false },
  },
  strict: true,
});

function fail(msg) {
  console.error(`provider: ${msg}`);
  process.exit(2);
}

const resource = args.resource;
if (!resource) fail('--resource is required');
try {
  new URL(resource); // eslint-disable-line no-new
} catch {
  fail(`--resource ${JSON.stringify(resource)} is not a URL`);
}
const otherResources = args['other-resource'];
for (const r of otherResources) {
  try {
    new URL(r); // eslint-disable-line no-new
  } catch {
    fail(`--other-resource ${JSON.stringify(r)} is not a URL`);
  }
}
const scopes = args.scopes.split(/[,\s]+/).filter(Boolean);
if (!['jwt', 'opaque'].includes(args['token-format'])) fail('--token-format must be jwt or opaque');
const ttl = Number.parseInt(args['access-token-ttl'], 10);
if (!(ttl > 0)) fail('--access-token-ttl must be a positive number of seconds');
const port = Number.parseInt(args.port, 10);
if (!(port >= 0 && port < 65536)) fail('--port must be a TCP port (0: any free port)');

const ids = args['client-id'];
const secrets = args['client-secret'].length > 0 || ids.length !== 1
  ? args['client-secret']
  : [process.env.OIDC_CLIENT_SECRET];
if (ids.length === 0) fail('at least one --client-id is required');
if (secrets.length !== ids.length || secrets.some((s) => !s)) {
  fail('every --client-id needs its --client-secret (or OIDC_CLIENT_SECRET for a single client)');
}
const clients = ids.map((id, i) => ({
  client_id: id,
  client_secret: secrets[i],
  grant_types: ['client_credentials'],
  redirect_uris: [],
  response_types: [],
  scope: scopes.join(' '),
}));
const introspector = args['introspector-id'];
if (introspector) {
  const secret = args['introspector-secret'] ?? process.env.OIDC_INTROSPECTOR_SECRET;
  if (!secret) fail('--introspector-id needs --introspector-secret (or OIDC_INTROSPECTOR_SECRET)');
  if (ids.includes(introspector)) fail('--introspector-id must differ from every --client-id');
  clients.push({
    client_id: introspector,
    client_secret: secret,
    // It only introspects: it may obtain no token.
    grant_types: [],
    redirect_uris: [],
    response_types: [],
  });
}

const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';
const exchanger = args['exchanger-id'];
if (exchanger) {
  const secret = args['exchanger-secret'] ?? process.env.OIDC_EXCHANGER_SECRET;
  if (!secret) fail('--exchanger-id needs --exchanger-secret (or OIDC_EXCHANGER_SECRET)');
  if (ids.includes(exchanger) || exchanger === introspector) fail('--exchanger-id must differ from every other client');
  if (!args.jwks) fail('--exchanger-id needs --jwks (the exchanged tokens are signed with its first key)');
  clients.push({
    client_id: exchanger,
    client_secret: secret,
    // It exchanges tokens, and gets its own for what it sends on no
    // caller's behalf (vigil -upstream-auth NAME=token_exchange).
    grant_types: [TOKEN_EXCHANGE, 'client_credentials'],
    redirect_uris: [],
    response_types: [],
    scope: scopes.join(' '),
  });
}

const accounts = args.accounts.split(',').filter(Boolean);
const webIds = args['web-client-id'];
if (args['web-client-secret'].length !== webIds.length || args['redirect-uri'].length !== webIds.length) {
  fail('every --web-client-id needs its --web-client-secret and --redirect-uri');
}
webIds.forEach((id, i) => {
  if (clients.some((c) => c.client_id === id)) fail(`--web-client-id ${id} is registered already`);
  clients.push({
    client_id: id,
    client_secret: args['web-client-secret'][i],
    grant_types: ['authorization_code', 'refresh_token', 'client_credentials'],
    redirect_uris: [args['redirect-uri'][i]],
    response_types: ['code'],
    token_endpoint_auth_method: 'client_secret_basic',
    scope: ['openid', ...scopes].join(' '),
  });
});

let jwks;
if (args.jwks) {
  try {
    jwks = JSON.parse(fs.readFileSync(args.jwks, 'utf8'));
  } catch (err) {
    fail(`--jwks ${args.jwks}: ${err.message}`);
  }
  if (!Array.isArray(jwks?.keys) || jwks.keys.length === 0) fail(`--jwks ${args.jwks}: no keys`);
}

// The issuer needs the port, so listen first (port 0 is resolved by the
// kernel), then build the provider and hand it the server's requests.
const server = http.createServer();
server.on('error', (err) => fail(`listen 127.0.0.1:${port}: ${err.message}`));
await new Promise((resolve) => server.listen(port, args.host, resolve));
const issuer = `http://${args.host}:${server.address().port}`;

const provider = new Provider(issuer, {
  clients,
  scopes: ['openid', ...scopes],
  findAccount: (ctx, id) => (accounts.includes(id) ? { accountId: id, claims: () => ({ sub: id }) } : undefined),
  issueRefreshToken: (ctx, client) => client.grantTypeAllowed('refresh_token'),
  // --revoke-grant: revoking an access token revokes its whole grant (its
  // refresh token too), as a user's revocation of an application at her
  // provider does; oidc-provider's default revokes that token only.
  ...(args['revoke-grant'] ? { revokeGrantPolicy: () => true } : {}),
  pkce: { required: () => true },
  ...(jwks ? { jwks } : {}),
  // Fixed, so that nothing is random but the tokens; nothing here uses cookies.
  cookies: { keys: ['vigil-test-cookie-key'] },
  ttl: { ClientCredentials: ttl, AccessToken: ttl },
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    // RFC 9449: a token request with a DPoP proof gets a DPoP-bound token
    // (token_type DPoP, cnf.jkt in the JWT and in introspection). On by
    // default in oidc-provider 9; said here because the DPoP tests rely on it.
    dPoP: { enabled: true },
    introspection: {
      enabled: true,
      allowedPolicy: (ctx, client, token) => client.clientId === introspector || client.clientId === token.clientId,
    },
    revocation: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => resource,
      useGrantedResource: () => true,
      getResourceServerInfo: (ctx, indicator) => {
        if (indicator !== resource && !otherResources.includes(indicator)) {
          throw new errors.InvalidTarget(`unknown resource ${indicator}; this server knows ${resource}`);
        }
        return {
          scope: scopes.join(' '),
          audience: indicator,
          accessTokenTTL: ttl,
          accessTokenFormat: args['token-format'],
          ...(args['token-format'] === 'jwt' ? { jwt: { sign: { alg: 'RS256' } } } : {}),
        };
      },
    },
  },
});

provider.on('server_error', (ctx, err) => console.error('provider: server_error', err));
// Every request, with what it carried (URL, headers, parsed body), for
// POST /test/seen.
const received = [];
function parsedBody(ctx) {
  try {
    return JSON.stringify(ctx.oidc?.body ?? {});
  } catch {
    return '{}';
  }
}
provider.use(async (ctx, next) => {
  await next();
  console.error(`provider: ${ctx.method} ${ctx.path} ${ctx.status}`);
  if (exchanger && args['test-endpoints']) {
    received.push({
      what: `${ctx.method} ${ctx.path}`,
      carried: `${ctx.url}\n${JSON.stringify(ctx.headers)}\n${parsedBody(ctx)}`,
    });
  }
});

let exchanges = 0;
if (exchanger) {
  const signing = jwks.keys[0];
  const privateKey = await importJWK(signing, 'RS256');
  const publicKeys = createLocalJWKSet({
    keys: jwks.keys.map(({ kty, kid, n, e }) => ({ kty, kid, n, e, alg: 'RS256', use: 'sig' })),
  });
  provider.registerGrantType(TOKEN_EXCHANGE, async (ctx) => {
    const { client, params } = ctx.oidc;
    if (client.clientId !== exchanger) throw new errors.UnauthorizedClient('only the exchanger may exchange tokens');
    if (params.subject_token_type !== ACCESS_TOKEN_TYPE) throw new errors.InvalidRequest('subject_token_type must be an access token');
    let subject;
    try {
      ({ payload: subject } = await jwtVerify(params.subject_token ?? '', publicKeys, { issuer, audience: resource }));
    } catch {
      throw new errors.InvalidGrant('subject_token is not a valid access token of this server for its resource');
    }
    const audience = params.audience;
    if (!audience || (audience !== resource && !otherResources.includes(audience))) {
      throw new errors.InvalidTarget(`unknown audience ${audience}`);
    }
    const held = (subject.scope ?? '').split(' ').filter(Boolean);
    const asked = params.scope ? params.scope.split(' ').filter(Boolean) : held;
    if (asked.some((sc) => !held.includes(sc))) throw new errors.InvalidScope('scope exceeds the subject token\'s', params.scope);
    const act = { sub: client.clientId, ...(subject.act ? { act: subject.act } : {}) };
    const now = Math.floor(Date.now() / 1000);
    const token = await new SignJWT({ client_id: client.clientId, act, ...(asked.length ? { scope: asked.join(' ') } : {}) })
      .setProtectedHeader({ alg: 'RS256', kid: signing.kid, typ: 'at+jwt' })
      .setIssuer(issuer)
      .setSubject(subject.sub)
      .setAudience(audience)
      .setIssuedAt(now)
      .setExpirationTime(now + ttl)
      .setJti(randomUUID())
      .sign(privateKey);
    exchanges += 1;
    ctx.body = {
      access_token: token,
      issued_token_type: ACCESS_TOKEN_TYPE,
      token_type: 'Bearer',
      expires_in: ttl,
      ...(asked.length ? { scope: asked.join(' ') } : {}),
    };
  }, ['subject_token', 'subject_token_type', 'audience', 'scope', 'requested_token_type']);
}

server.removeAllListeners('error');
const callback = provider.callback();
let introspections = 0;
server.on('request', (req, res) => {
  const path = new URL(req.url, issuer).pathname;
  if (req.method === 'POST' && path === '/token/introspection') introspections += 1;
  if (args['test-endpoints'] && req.method === 'GET' && path === '/test/introspections') {
    res.writeHead(200, { 'Content-Type': 'application/json', 'Cache-Control': 'no-store' });
    res.end(JSON.stringify({ count: introspections }));
    return;
  }
  if (args['test-endpoints'] && exchanger && req.method === 'GET' && path === '/test/exchanges') {
    res.writeHead(200, { 'Content-Type': 'application/json', 'Cache-Control': 'no-store' });
    res.end(JSON.stringify({ count: exchanges }));
    return;
  }
  if (args['test-endpoints'] && exchanger && req.method === 'POST' && path === '/test/seen') {
    let body = '';
    req.on('data', (chunk) => { body += chunk; });
    req.on('end', () => {
      const { token } = JSON.parse(body || '{}');
      const requests = token ? received.filter((r) => r.carried.includes(token)).map((r) => r.what) : [];
      res.writeHead(200, { 'Content-Type': 'application/json', 'Cache-Control': 'no-store' });
      res.end(JSON.stringify({ requests }));
    });
    return;
  }
  if (accounts.length > 0 && path.startsWith('/interaction/')) {
    interaction(req, res, path).catch((err) => {
      console.error('provider: interaction', err);
      if (!res.headersSent) {
        res.writeHead(400, { 'Content-Type': 'text/plain' });
        res.end('interaction failed\n');
      }
    });
    return;
  }
  callback(req, res);
});

// interaction serves the login page and its form, and gives consent.
async function interaction(req, res, path) {
  const details = await provider.interactionDetails(req, res);
  const { uid, prompt, params, session } = details;
  if (req.method === 'POST' && path === `/interaction/${uid}/login`) {
    let body = '';
    for await (const chunk of req) {
      body += chunk;
      if (body.length > 4096) break;
    }
    const login = new URLSearchParams(body).get('login') ?? '';
    if (!accounts.includes(login)) {
      res.writeHead(403, { 'Content-Type': 'text/plain' });
      res.end('unknown user\n');
      return;
    }
    await provider.interactionFinished(req, res, { login: { accountId: login } }, { mergeWithLastSubmission: false });
    return;
  }
  if (req.method !== 'GET' || path !== `/interaction/${uid}`) {
    res.writeHead(404);
    res.end();
    return;
  }
  if (prompt.name === 'login') {
    res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8', 'Cache-Control': 'no-store' });
    res.end(`<!doctype html><title>Sign in</title><form method="post" action="/interaction/${uid}/login">`
      + '<input name="login" autofocus><button type="submit">Sign in</button></form>\n');
    return;
  }
  const grant = details.grantId
    ? await provider.Grant.find(details.grantId)
    : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
  const d = prompt.details;
  if (d.missingOIDCScope) grant.addOIDCScope(d.missingOIDCScope.join(' '));
  if (d.missingOIDCClaims) grant.addOIDCClaims(d.missingOIDCClaims);
  for (const [indicator, sc] of Object.entries(d.missingResourceScopes ?? {})) grant.addResourceScope(indicator, sc.join(' '));
  const grantId = await grant.save();
  await provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
}

let stopping = false;
function stop(why) {
  if (stopping) return;
  stopping = true;
  console.error(`provider: stopping (${why})`);
  server.close(() => process.exit(0));
  server.closeAllConnections();
  // Never linger: exit even if a connection refuses to close.
  setTimeout(() => process.exit(0), 2000).unref();
}
process.on('SIGTERM', () => stop('SIGTERM'));
process.on('SIGINT', () => stop('SIGINT'));
if (args['exit-on-stdin-close']) {
  process.stdin.on('end', () => stop('stdin closed'));
  process.stdin.on('error', () => stop('stdin error'));
  process.stdin.resume();
}

console.log(`ready ${issuer}`);
