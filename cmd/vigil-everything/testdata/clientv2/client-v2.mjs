// Interop check: drive vigil-everything with the TypeScript MCP SDK v2 client
// (@modelcontextprotocol/client) and its tasks extension
// (@modelcontextprotocol/ext-tasks), in either protocol era.
//
// Usage: node client-v2.mjs http://HOST:PORT/mcp legacy|modern (Streamable HTTP)
//    or: node client-v2.mjs /path/to/vigil-everything legacy|modern (stdio)
//
// The checks are a list of features, one module per area under checks/
// (core.mjs: tools, errors, logging, progress, sampling, elicitation, roots,
// resources, templates, subscriptions, prompts, completion, cancellation,
// tasks; apps.mjs: MCP Apps views; skills.mjs: the skills extension). Every module in checks/ is loaded: to check a new feature, add a
// module whose default export is an array of checks (see checks/core.mjs for
// the shape), and it runs in every transport and era it says it applies to.
// Each check asserts exact results; the script prints one line per step and
// exits non-zero after the first failing check.

import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { createTaskSessionFromClient } from '@modelcontextprotocol/ext-tasks/client';
import { answerElicitation, answerSampling } from '../fixtures.mjs';

const TIMEOUT_MS = 90_000;
const MODERN = '2026-07-28';
// CLIENTV2_SERVER names the server expected (vigil, for vigil-everything
// behind the gateway); CLIENTV2_MODULES, comma-separated, limits the check
// modules loaded (e.g. core.mjs); CLIENTV2_SKIP, comma-separated, names
// checks not to run; CLIENTV2_KEEP_GOING=1 runs every check and fails at the
// end, listing the checks that failed.
const SERVER_INFO = { name: process.env.CLIENTV2_SERVER || 'vigil-everything', version: 'dev' };
const KEEP_GOING = process.env.CLIENTV2_KEEP_GOING === '1';
const SKIP = process.env.CLIENTV2_SKIP?.split(',') ?? [];
const META_SERVER_INFO = 'io.modelcontextprotocol/serverInfo';

// Never hang: if anything stalls, fail the whole run.
setTimeout(() => {
  console.error(`FAIL: timed out after ${TIMEOUT_MS}ms`);
  process.exit(1);
}, TIMEOUT_MS).unref();

const [target, era] = process.argv.slice(2);
if (!target || !['legacy', 'modern'].includes(era)) {
  console.error('usage: node client-v2.mjs <http://HOST:PORT/mcp | path-to-vigil-everything> legacy|modern');
  process.exit(2);
}
const kind = /^https?:\/\//.test(target) ? 'http' : 'stdio';

function step(msg) {
  console.log(`clientv2 ${kind}/${era}: ${msg}`);
}

// deferred returns a promise and the function that resolves it; the promise
// fails if nothing resolves it within ms.
function deferred(what, ms = 5_000) {
  let resolve;
  const promise = new Promise((res, rej) => {
    resolve = res;
    setTimeout(() => rej(new Error(`no ${what} within ${ms}ms`)), ms).unref();
  });
  return { promise, resolve };
}

// plain returns a result as a 2025 client sees it: in the modern era every
// result carries the server's identity in _meta, and the cacheable ones
// (lists, resources/read) vigil-everything's cache hints (ttlMs 0, private);
// both are checked and removed here (the SDK itself strips resultType).
function plain(result) {
  const out = structuredClone(result);
  if ('ttlMs' in out || 'cacheScope' in out) {
    assert.equal(era, 'modern', 'cache hints only in 2026-07-28');
    assert.deepEqual([out.ttlMs, out.cacheScope], [0, 'private'], 'cache hints');
    delete out.ttlMs;
    delete out.cacheScope;
  }
  if (era === 'modern') {
    assert.deepEqual(out._meta?.[META_SERVER_INFO], SERVER_INFO, 'a 2026-07-28 result names the server in _meta');
    delete out._meta[META_SERVER_INFO];
    if (Object.keys(out._meta).length === 0) delete out._meta;
  }
  return out;
}

const info = { name: 'vigil-clientv2-interop', version: '0.0.0' };
const capabilities = { sampling: {}, elicitation: {}, roots: { listChanged: true } };

// The server's questions, answered with fixed values and recorded.
const asked = [];
function newClient(caps = capabilities) {
  const client = new Client(info, {
    capabilities: caps,
    versionNegotiation: era === 'modern' ? { mode: { pin: MODERN } } : { mode: 'legacy' },
  });
  client.setRequestHandler('sampling/createMessage', (req) => {
    asked.push({ method: req.method, params: req.params });
    return answerSampling(req.params);
  });
  client.setRequestHandler('elicitation/create', (req) => {
    asked.push({ method: req.method, params: req.params });
    return answerElicitation(req.params);
  });
  client.setRequestHandler('roots/list', (req) => {
    asked.push({ method: req.method, params: req.params });
    return { roots: [{ uri: 'file:///interop/root', name: 'Interop Root' }] };
  });
  return client;
}

let transport;
function newTransport() {
  return kind === 'http'
    ? new StreamableHTTPClientTransport(new URL(target))
    : new StdioClientTransport({ command: target, args: ['-stdio'], stderr: 'inherit' });
}

// Notifications, by method, as received. notifications/progress is not
// among them: a handler for it would replace the SDK's own, which routes
// progress to the call's onprogress.
const notes = new Map();
function notified(method) {
  if (!notes.has(method)) notes.set(method, []);
  return notes.get(method);
}
// waitFor resolves with the first notification of method that satisfies
// pred, already received or yet to come.
function waitFor(method, pred = () => true, what = method) {
  const seen = notified(method).find(pred);
  if (seen) return Promise.resolve(seen);
  const d = deferred(what);
  waiters.push({ method, pred, resolve: d.resolve });
  return d.promise;
}
const waiters = [];
const NOTIFICATIONS = [
  'notifications/message',
  'notifications/resources/updated',
  'notifications/resources/list_changed',
  'notifications/tools/list_changed',
  'notifications/prompts/list_changed',
];

// rawDispatch sends one JSON-RPC request of ext-tasks' 2026-07-28 task
// traffic straight to the server (the SDK's codecs reject those wire shapes;
// ext-tasks asks its host for this path): over HTTP a POST with the routing
// headers, over stdio a message written on the client's transport whose
// response is taken off the transport before the SDK sees it.
let rawID = 1_000_000;
const rawPending = new Map(); // id → resolve, for stdio
async function rawDispatch(request, options) {
  const msg = { jsonrpc: '2.0', id: rawID++, ...request };
  const reply = kind === 'http' ? await rawPost(msg, options?.signal) : await rawStdio(msg);
  return 'error' in reply ? { kind: 'error', error: reply.error } : { kind: 'result', result: reply.result };
}

async function rawPost(msg, signal) {
  const p = msg.params ?? {};
  const headers = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': MODERN,
    'mcp-method': msg.method,
  };
  if (msg.method === 'tools/call') headers['mcp-name'] = p.name;
  if (msg.method.startsWith('tasks/')) headers['mcp-name'] = p.taskId;
  const res = await fetch(target, { method: 'POST', headers, body: JSON.stringify(msg), signal });
  assert.equal(res.status, 200, `${msg.method}: HTTP ${res.status}`);
  const body = await res.text();
  if (!(res.headers.get('content-type') ?? '').startsWith('text/event-stream')) return JSON.parse(body);
  for (const line of body.split('\n')) {
    if (line.startsWith('data:')) {
      const m = JSON.parse(line.slice(5));
      if (m.id === msg.id) return m;
    }
  }
  assert.fail(`${msg.method}: no response in the event stream`);
}

function rawStdio(msg) {
  const d = deferred(`the response to raw ${msg.method}`, 10_000);
  rawPending.set(msg.id, d.resolve);
  return transport.send(msg).then(() => d.promise);
}

// taskSession returns an ext-tasks session over client, with the raw
// 2026-07-28 path in the modern era. Questions asked by a task go to the
// same answers as the client's handlers.
function taskSession(client) {
  const opts = {
    endpointId: 'vigil-everything',
    onInputRequest: async (req) => {
      asked.push({ kind: req.kind, params: req.params });
      return req.kind === 'elicitation' ? answerElicitation(req.params) : { action: 'decline' };
    },
  };
  if (era === 'modern') {
    Object.assign(opts, {
      rawDispatch,
      v2RequestFraming: { protocolVersion: MODERN, clientInfo: info, clientCapabilities: capabilities },
    });
  }
  return createTaskSessionFromClient(client, opts);
}

async function loadChecks() {
  const dir = new URL('./checks/', import.meta.url);
  const files = (await readdir(dir)).filter((f) => f.endsWith('.mjs')).sort();
  const checks = [];
  const only = process.env.CLIENTV2_MODULES?.split(',');
  for (const f of files) {
    if (only && !only.includes(f)) continue;
    const mod = await import(new URL(f, dir));
    for (const c of mod.default) checks.push({ ...c, module: f });
  }
  return checks;
}

async function main() {
  const checks = await loadChecks();
  transport = newTransport();
  const client = newClient();
  for (const method of NOTIFICATIONS) {
    client.setNotificationHandler(method, (n) => {
      notified(method).push(n.params ?? {});
      for (let i = waiters.length - 1; i >= 0; i--) {
        const w = waiters[i];
        if (w.method === method && w.pred(n.params ?? {})) {
          waiters.splice(i, 1);
          w.resolve(n.params ?? {});
        }
      }
    });
  }
  step(`connecting to ${target}`);
  await client.connect(transport);
  assert.equal(client.getProtocolEra(), era, 'the negotiated era');
  assert.equal(client.getNegotiatedProtocolVersion(), era === 'modern' ? MODERN : '2025-11-25');
  assert.deepEqual(client.getServerVersion(), SERVER_INFO, 'serverInfo');
  step(`connected: ${client.getNegotiatedProtocolVersion()}`);

  // Record what the client sends (to learn the progress token the SDK
  // picks) and what it receives.
  const sent = [];
  const send = transport.send.bind(transport);
  transport.send = (msg, opts) => {
    sent.push(msg);
    return send(msg, opts);
  };
  const received = [];
  const onmessage = transport.onmessage;
  transport.onmessage = (msg, extra) => {
    received.push(msg);
    const raw = rawPending.get(msg.id);
    if (raw && msg.method === undefined) {
      rawPending.delete(msg.id);
      raw(msg);
      return;
    }
    onmessage(msg, extra);
  };

  const ctx = {
    client, era, kind, target, step, plain, asked, sent, received, notified, waitFor, deferred,
    taskSession, serverInfo: SERVER_INFO, capabilities,
    // Another client of the same server, with capabilities of its own, on a
    // transport of its own (a new session over HTTP, a new process over stdio).
    connectOther: async (caps) => {
      const other = newClient(caps);
      await other.connect(newTransport());
      return other;
    },
  };
  let ran = 0;
  const failed = [];
  for (const check of checks) {
    if (check.eras && !check.eras.includes(era)) continue;
    if (check.transports && !check.transports.includes(kind)) continue;
    if (SKIP.includes(check.name)) {
      step(`--- ${check.module}: ${check.name}: skipped (CLIENTV2_SKIP)`);
      continue;
    }
    step(`--- ${check.module}: ${check.name}`);
    try {
      await check.run(ctx);
    } catch (err) {
      err.message = `check "${check.name}" (${check.module}): ${err.message}`;
      if (!KEEP_GOING) throw err;
      step(`FAILED: ${err.message}`);
      failed.push(check.name);
      continue;
    }
    ran++;
  }
  assert.ok(ran > 0, 'no check ran');
  if (failed.length > 0) throw new Error(`${ran} checks passed, ${failed.length} failed: ${failed.join('; ')}`);
  await client.close();
  step(`closed; ${ran} checks passed`);
  step('OK');
}

try {
  await main();
  process.exit(0);
} catch (err) {
  console.error('FAIL:', err?.stack ?? err);
  process.exit(1);
}
