// Interop check: drive the vigil-everything fixture server, over stdio or HTTP, with
// the official TypeScript MCP SDK client, in a 2025-11-25 session.
//
// Usage: node everything-client.mjs /path/to/vigil-everything (over stdio)
//    or: node everything-client.mjs http://HOST:PORT/mcp (Streamable HTTP)
//
// Exercises tools (every content type, structured output, a validation
// failure, a tool error), resources (read, template, subscribe and an update
// notification), prompts, completion, logging at a chosen level, progress,
// sampling, elicitation and roots round trips (this script answers them),
// list_changed, and the MCP Apps metadata a host that declares the extension
// sees. Every step asserts the exact result. Prints one line per
// step and exits non-zero on the first failure.

import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
  LoggingMessageNotificationSchema,
  ResourceUpdatedNotificationSchema,
  ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { answerElicitation, answerSampling, calls, gets, JSON_SCHEMA_TOOL, PNG, rounds, STRUCTURED_TOOL, text } from '../../../vigil-everything/testdata/fixtures.mjs';

const TIMEOUT_MS = 30_000;

// Never hang: if anything stalls, fail the whole run.
setTimeout(() => {
  console.error(`FAIL: timed out after ${TIMEOUT_MS}ms`);
  process.exit(1);
}, TIMEOUT_MS).unref();

function step(msg) {
  console.log(`everything: ${msg}`);
}

// Lets queued notification handlers run.
const settle = () => new Promise((resolve) => setImmediate(resolve));

// deferred returns a promise and the function that resolves it; the promise
// fails if nothing resolves it within 5s.
function deferred(what) {
  let resolve;
  const promise = new Promise((res, rej) => {
    resolve = res;
    setTimeout(() => rej(new Error(`no ${what} within 5s`)), 5_000).unref();
  });
  return { promise, resolve };
}



// The tools the conformance suite calls by name, plus Vigil's own.
const EXPECTED_TOOLS = [
  'about',
  'json_schema_2020_12_tool',
  'test_audio_content',
  'test_elicitation',
  'test_elicitation_sep1034_defaults',
  'test_elicitation_sep1330_enums',
  'test_embedded_resource',
  'test_error_handling',
  'test_image_content',
  'test_input_required_result_capabilities',
  'test_input_required_result_elicitation',
  'test_input_required_result_list_roots',
  'test_input_required_result_multi_round',
  'test_input_required_result_multiple_inputs',
  'test_input_required_result_request_state',
  'test_input_required_result_sampling',
  'test_input_required_result_tampered_state',
  'test_logging_tool',
  'test_missing_capability',
  'test_multiple_content_types',
  'test_sampling',
  'test_simple_text',
  'test_streaming_elicitation',
  'test_tool_with_logging',
  'test_tool_with_progress',
  'test_trigger_prompt_change',
  'test_trigger_tool_change',
  'vigil_log_levels',
  'vigil_region',
  'vigil_roots',
  'vigil_structured',
  'vigil_touch_resource',
];

async function main() {
  // A binary to run over stdio, or the URL of a running server (over
  // Streamable HTTP, such as replicas behind a load balancer).
  const target = process.argv[2];
  assert.ok(target, 'usage: node everything-client.mjs <path-to-vigil-everything-binary | http://HOST:PORT/mcp>');

  const newTransport = () =>
    /^https?:\/\//.test(target)
      ? new StreamableHTTPClientTransport(new URL(target))
      : new StdioClientTransport({ command: target, args: ['-stdio'], stderr: 'inherit' });
  const transport = newTransport();
  const client = new Client(
    { name: 'vigil-everything-interop', version: '0.0.0' },
    { capabilities: { sampling: {}, elicitation: {}, roots: { listChanged: true } } },
  );

  // The server's questions, answered with fixed values and recorded.
  const asked = [];
  client.setRequestHandler(CreateMessageRequestSchema, (req) => {
    asked.push({ method: req.method, params: req.params });
    return answerSampling(req.params);
  });
  client.setRequestHandler(ElicitRequestSchema, (req) => {
    asked.push({ method: req.method, params: req.params });
    return answerElicitation(req.params);
  });
  client.setRequestHandler(ListRootsRequestSchema, (req) => {
    asked.push({ method: req.method, params: req.params });
    return { roots: [{ uri: 'file:///interop/root', name: 'Interop Root' }] };
  });
  const logs = [];
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => logs.push(n.params));
  const resourceUpdated = deferred('notifications/resources/updated');
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => resourceUpdated.resolve(n.params));
  const toolsChanged = deferred('notifications/tools/list_changed');
  client.setNotificationHandler(ToolListChangedNotificationSchema, (n) => toolsChanged.resolve(n.params ?? {}));

  step(`connecting to ${target} (initialize)`);
  await client.connect(transport);

  // Record what the client sends (to learn the progress token the SDK
  // picks) and what it receives (see the progress step).
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
    onmessage(msg, extra);
  };

  assert.deepEqual(client.getServerVersion(), { name: 'vigil-everything', version: 'dev' }, 'serverInfo');
  const caps = client.getServerCapabilities();
  assert.deepEqual(
    {
      tools: caps.tools,
      resources: caps.resources,
      prompts: caps.prompts,
      logging: caps.logging,
      completions: caps.completions,
    },
    {
      tools: { listChanged: true },
      resources: { subscribe: true, listChanged: true },
      prompts: { listChanged: true },
      logging: {},
      completions: {},
    },
    'server capabilities',
  );
  step(`initialized: ${JSON.stringify(client.getServerVersion())}`);

  // Tools.
  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name);
  // Tools are listed in the order they were registered: each once, the
  // same order at every listing.
  assert.equal(new Set(names).size, names.length, 'tools/list lists each tool once');
  assert.deepEqual((await client.listTools()).tools.map((t) => t.name), names, 'tools/list keeps its order');
  assert.ok(names.includes('about'), 'about is listed');
  for (const name of EXPECTED_TOOLS) {
    assert.ok(names.includes(name), `tool ${name} is listed`);
  }
  for (const tool of tools) {
    assert.ok(tool.description, `tool ${tool.name} has a description`);
  }
  const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
  assert.deepEqual(byName.json_schema_2020_12_tool, JSON_SCHEMA_TOOL);
  assert.deepEqual(byName.vigil_structured, STRUCTURED_TOOL);
  // This client declares no MCP Apps extension: the tool with a view is a
  // plain tool for it, without _meta.ui.
  assert.ok(byName.vigil_weather, 'vigil_weather is listed');
  assert.equal(byName.vigil_weather._meta?.ui, undefined, 'no _meta.ui without the extension');
  step(`tools/list: ${tools.length} tools, sorted, each with a description`);

  for (const [name, args, want] of calls) {
    const got = await client.callTool(args === undefined ? { name } : { name, arguments: args });
    assert.deepEqual(got, want, `tools/call ${name} ${JSON.stringify(args)}`);
    step(`tools/call ${name} ${JSON.stringify(args ?? null)}: ${JSON.stringify(got).slice(0, 100)}`);
  }

  // Resources.
  const STATIC_TEXT = {
    uri: 'test://static-text',
    name: 'static-text',
    title: 'Static Text Resource',
    description: 'A static text resource for testing',
    mimeType: 'text/plain',
  };
  // The server lists resources in the order they were registered; the
  // expectation below is the set, in URI order.
  const byURI = (l) => ({ ...l, resources: [...l.resources].sort((a, b) => (a.uri < b.uri ? -1 : a.uri > b.uri ? 1 : 0)) });
  assert.deepEqual(byURI(await client.listResources()), {
    resources: [
      // The sample skills' SKILL.md (the skills extension).
      {
        uri: 'skill://acme/billing/refunds/SKILL.md',
        name: 'refunds',
        description: 'Process customer refund requests per company policy',
        mimeType: 'text/markdown',
        size: 278,
      },
      {
        uri: 'skill://pdf-processing/SKILL.md',
        name: 'pdf-processing',
        description: 'Extract, fill, and assemble PDF documents',
        mimeType: 'text/markdown',
        size: 198,
      },
      {
        uri: 'test://static-binary',
        name: 'static-binary',
        title: 'Static Binary Resource',
        description: 'A static binary resource (image) for testing',
        mimeType: 'image/png',
      },
      STATIC_TEXT,
      {
        uri: 'test://watched-resource',
        name: 'watched-resource',
        title: 'Watched Resource',
        description: 'A resource whose subscribers are notified of an update each time the vigil_touch_resource tool runs',
        mimeType: 'text/plain',
      },
      {
        uri: 'ui://vigil-everything/weather',
        name: 'weather-view',
        title: 'Weather view',
        description: 'The MCP Apps view of vigil_weather',
        mimeType: 'text/html;profile=mcp-app',
        size: 559,
        _meta: { ui: { prefersBorder: true } },
      },
    ],
  });
  step('resources/list: 4 resources (one an MCP Apps view) and 2 skills');
  const [view] = (await client.readResource({ uri: 'ui://vigil-everything/weather' })).contents;
  assert.equal(view.mimeType, 'text/html;profile=mcp-app');
  assert.deepEqual(view._meta, { ui: { prefersBorder: true } });
  assert.match(view.text, /^<!doctype html>/);
  step('resources/read ui://vigil-everything/weather: the view, with its MIME type and _meta.ui');
  assert.deepEqual(await client.listResourceTemplates(), {
    resourceTemplates: [
      {
        uriTemplate: 'test://template/{id}/data',
        name: 'template',
        title: 'Resource Template',
        description: 'A resource template with parameter substitution',
        mimeType: 'application/json',
      },
    ],
  });
  step('resources/templates/list: test://template/{id}/data');
  const reads = [
    ['test://static-text', { uri: 'test://static-text', mimeType: 'text/plain', text: 'This is the content of the static text resource.' }],
    ['test://static-binary', { uri: 'test://static-binary', mimeType: 'image/png', blob: PNG }],
    [
      'test://template/abc/data',
      { uri: 'test://template/abc/data', mimeType: 'application/json', text: '{"id":"abc","templateTest":true,"data":"Data for ID: abc"}' },
    ],
  ];
  for (const [uri, want] of reads) {
    assert.deepEqual(await client.readResource({ uri }), { contents: [want] }, `resources/read ${uri}`);
    step(`resources/read ${uri}`);
  }
  await assert.rejects(client.readResource({ uri: 'test://nope' }), (err) => {
    assert.equal(err.code, -32002);
    assert.deepEqual(err.data, { uri: 'test://nope' });
    return true;
  });
  step('resources/read test://nope: -32002 with data.uri');

  assert.deepEqual(await client.subscribeResource({ uri: 'test://watched-resource' }), {});
  assert.deepEqual(
    await client.callTool({ name: 'vigil_touch_resource', arguments: {} }),
    text('The subscribers of test://watched-resource were notified'),
  );
  assert.deepEqual(await resourceUpdated.promise, { uri: 'test://watched-resource' });
  step('resources/subscribe, then notifications/resources/updated');
  assert.deepEqual(await client.unsubscribeResource({ uri: 'test://watched-resource' }), {});
  step('resources/unsubscribe');

  // Prompts and completion.
  const { prompts } = await client.listPrompts();
  for (const name of [
    'test_input_required_result_prompt',
    'test_prompt_with_arguments',
    'test_prompt_with_embedded_resource',
    'test_prompt_with_image',
    'test_simple_prompt',
  ]) {
    const p = prompts.find((x) => x.name === name);
    assert.ok(p, `prompt ${name} is listed`);
    assert.ok(p.description, `prompt ${name} has a description`);
  }
  assert.deepEqual(
    prompts.find((x) => x.name === 'test_prompt_with_arguments'),
    {
      name: 'test_prompt_with_arguments',
      title: 'Prompt With Arguments',
      description: 'A prompt with required arguments',
      arguments: [
        { name: 'arg1', description: 'First test argument', required: true },
        { name: 'arg2', description: 'Second test argument', required: true },
      ],
    },
  );
  step(`prompts/list: ${prompts.map((p) => p.name).join(', ')}`);
  for (const [name, args, messages] of gets) {
    const got = await client.getPrompt(args === undefined ? { name } : { name, arguments: args });
    assert.deepEqual(got, { messages }, `prompts/get ${name}`);
    step(`prompts/get ${name}`);
  }
  assert.deepEqual(
    await client.complete({
      ref: { type: 'ref/prompt', name: 'test_prompt_with_arguments' },
      argument: { name: 'arg1', value: 'test' },
    }),
    { completion: { values: ['testValue1', 'testValue2'], total: 2, hasMore: false } },
  );
  step('completion/complete arg1="test": testValue1, testValue2');

  // Logging at a chosen level.
  await client.setLoggingLevel('info');
  assert.deepEqual(
    await client.callTool({ name: 'test_tool_with_logging', arguments: {} }),
    text('Tool with logging executed successfully'),
  );
  await settle();
  assert.deepEqual(logs.splice(0), [
    { level: 'info', data: { message: 'Tool execution started' } },
    { level: 'info', data: { message: 'Tool processing data' } },
    { level: 'info', data: { message: 'Tool execution completed' } },
  ]);
  step('logging/setLevel info, test_tool_with_logging: 3 info messages');
  await client.setLoggingLevel('warning');
  assert.deepEqual(
    await client.callTool({ name: 'vigil_log_levels', arguments: {} }),
    text('Logged at debug, info, notice, warning and error'),
  );
  await settle();
  assert.deepEqual(logs.splice(0), [
    { level: 'warning', data: { message: 'a warning message' } },
    { level: 'error', data: { message: 'an error message' } },
  ]);
  step('logging/setLevel warning, vigil_log_levels: warning and error only');

  // Progress. The SDK runs notification handlers in a microtask but
  // resolves a response at once, dropping the request's progress handler:
  // a progress notification read in the same chunk as the response (the
  // final one, over stdio) never reaches onprogress. So the notifications
  // are checked as received, and onprogress gets a prefix of them.
  const progress = [];
  received.length = 0;
  const got = await client.callTool({ name: 'test_tool_with_progress', arguments: {} }, undefined, {
    onprogress: (p) => progress.push(p),
  });
  const call = sent.findLast((m) => m.method === 'tools/call' && m.params?.name === 'test_tool_with_progress');
  const token = call.params._meta.progressToken;
  assert.deepEqual(got, text(String(token)));
  const wantProgress = [0, 50, 100].map((p) => ({ progress: p, total: 100, message: `Completed step ${p} of 100` }));
  assert.deepEqual(
    received.map((m) => [m.method, m.params]),
    [
      ...wantProgress.map((p) => ['notifications/progress', { progressToken: token, ...p }]),
      [undefined, undefined], // the response
    ],
  );
  assert.deepEqual(progress, wantProgress.slice(0, progress.length));
  assert.ok(progress.length >= 2, `onprogress saw ${progress.length} notifications`);
  step(`test_tool_with_progress: 0, 50, 100 of 100 for token ${token}`);

  // Sampling, elicitation and roots round trips (the rounds are vigil-everything's, shared with the v2 harness).
  for (const [name, args, want, wantAsked] of rounds) {
    asked.length = 0;
    const res = await client.callTool({ name, arguments: args });
    assert.deepEqual(res, want, `tools/call ${name}`);
    assert.deepEqual(asked, wantAsked, `what ${name} asked the client`);
    step(`${name}: ${wantAsked.map((a) => a.method).join(', ')} answered; ${JSON.stringify(res).slice(0, 100)}`);
  }

  // list_changed.
  assert.deepEqual(await client.callTool({ name: 'test_trigger_tool_change', arguments: {} }), text('The tool list changed'));
  assert.deepEqual(await toolsChanged.promise, {});
  step('test_trigger_tool_change: notifications/tools/list_changed');

  await client.close();
  step('closed');

  // MCP Apps: a host that declares io.modelcontextprotocol/ui (in a session
  // of its own) sees the server's extension and vigil_weather's view in
  // _meta.ui, which the client above, declaring nothing, did not.
  const UI = 'io.modelcontextprotocol/ui';
  const VIEW = 'ui://vigil-everything/weather';
  const host = new Client(
    { name: 'vigil-everything-interop-host', version: '0.0.0' },
    { capabilities: { extensions: { [UI]: { mimeTypes: ['text/html;profile=mcp-app'] } } } },
  );
  await host.connect(newTransport());
  assert.deepEqual(host.getServerCapabilities().extensions?.[UI], { mimeTypes: ['text/html;profile=mcp-app'] });
  const hostTools = Object.fromEntries((await host.listTools()).tools.map((t) => [t.name, t]));
  assert.deepEqual(hostTools.vigil_weather._meta, { ui: { resourceUri: VIEW }, 'ui/resourceUri': VIEW });
  const weather = await host.callTool({ name: 'vigil_weather', arguments: { city: 'Lyon' } });
  assert.deepEqual(weather.structuredContent, { city: 'Lyon', sky: 'sunny', celsius: 21 });
  assert.equal(weather.content[0].type, 'text', 'text for the model beside the view');
  await host.close();
  step(`MCP Apps host: extension declared both ways; vigil_weather names ${VIEW}`);
  step('OK');
}

try {
  await main();
  process.exit(0);
} catch (err) {
  console.error('FAIL:', err?.stack ?? err);
  process.exit(1);
}
