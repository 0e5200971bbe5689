// The core feature checks: everything vigil-everything serves, in both
// protocol eras, over Streamable HTTP and stdio. A check is
//   { name, eras?: ['legacy', 'modern'], transports?: ['http', 'stdio'], run: async (ctx) => {} }
// (eras and transports default to all); ctx is built in ../client-v2.mjs.
// Expected values are the fixtures' exact outputs, as in the v1 harness
// (cmd/vigil/testdata/interop/everything-client.mjs).

import assert from 'node:assert/strict';
import { resultFromTaskOutcome } from '@modelcontextprotocol/ext-tasks/client';
import { calls, gets, JSON_SCHEMA_TOOL, PNG, rounds, STRUCTURED_TOOL, text } from '../../fixtures.mjs';



// The tools the conformance suite calls by name, plus Vigil's own.
const EXPECTED_TOOLS = [
  'about',
  'confirm_delete',
  'failing_job',
  'greet',
  'json_schema_2020_12_tool',
  'multi_input',
  'protocol_error_job',
  'slow_compute',
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
  'test_tool_with_task',
  'test_trigger_prompt_change',
  'test_trigger_tool_change',
  'vigil_log_levels',
  'vigil_region',
  'vigil_roots',
  'vigil_structured',
  'vigil_touch_resource',
];




// logged calls a tool with logging at level: logging/setLevel in a 2025
// session, the request's _meta in 2026-07-28 (which has no setLevel).
async function logged(ctx, name, level) {
  if (ctx.era === 'legacy') {
    await ctx.client.setLoggingLevel(level);
    return ctx.client.callTool({ name, arguments: {} });
  }
  return ctx.client.callTool({ name, arguments: {}, _meta: { 'io.modelcontextprotocol/logLevel': level } });
}

// Lets queued notification handlers run.
const settle = () => new Promise((resolve) => setImmediate(resolve));

export default [
  {
    name: 'capabilities',
    run: async ({ client, era, step }) => {
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
      if (era === 'modern') {
        assert.deepEqual(caps.extensions?.['io.modelcontextprotocol/tasks'], {}, 'the 2026-07-28 tasks extension');
      } else {
        assert.deepEqual(caps.tasks, { list: {}, cancel: {}, requests: { tools: { call: {} } } }, 'the 2025-11-25 tasks capability');
      }
      step(`capabilities: ${Object.keys(caps).sort().join(', ')}`);
    },
  },
  {
    name: 'tools/list',
    run: async ({ client, era, step }) => {
      const { tools } = await client.listTools();
      const names = tools.map((t) => t.name);
      // Tools are listed in the order they were registered: each once, the
      // same order at every listing.
      assert.equal(new Set(names).size, names.length, 'tools/list lists each tool once');
      const again = (await client.listTools()).tools.map((t) => t.name);
      assert.deepEqual(again, names, 'tools/list keeps its order');
      for (const name of EXPECTED_TOOLS) {
        assert.ok(names.includes(name), `tool ${name} is listed`);
      }
      for (const tool of tools) {
        assert.ok(tool.description, `tool ${tool.name} has a description`);
      }
      const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
      assert.deepEqual(byName.json_schema_2020_12_tool, JSON_SCHEMA_TOOL);
      assert.deepEqual(byName.vigil_structured, STRUCTURED_TOOL);
      if (era === 'legacy') {
        // The 2026-07-28 SDK keeps no execution member: there the server
        // alone decides whether a call becomes a task.
        assert.deepEqual(byName.slow_compute.execution, { taskSupport: 'optional' }, 'slow_compute may run as a task');
        assert.deepEqual(byName.failing_job.execution, { taskSupport: 'required' }, 'failing_job must run as a task');
      }
      step(`tools/list: ${tools.length} tools, sorted, each with a description`);
    },
  },
  {
    name: 'tools/call: every content type, structured output, tool errors',
    run: async ({ client, plain, step }) => {
      for (const [name, args, want] of calls) {
        const got = await client.callTool(args === undefined ? { name } : { name, arguments: args });
        assert.deepEqual(plain(got), want, `tools/call ${name} ${JSON.stringify(args)}`);
        step(`tools/call ${name} ${JSON.stringify(args ?? null)}: ${JSON.stringify(want).slice(0, 80)}`);
      }
    },
  },
  {
    name: 'protocol errors',
    run: async ({ client, era, sent, received, step }) => {
      await assert.rejects(client.callTool({ name: 'no_such_tool', arguments: {} }), (err) => {
        assert.equal(err.code, -32602, `unknown tool: ${err.message}`);
        return true;
      });
      step('tools/call no_such_tool: -32602');
      await assert.rejects(client.callTool({ name: 'protocol_error_job', arguments: {} }), (err) => {
        assert.equal(err.code, -32603);
        assert.match(err.message, /protocol_error_job: simulated internal failure/);
        return true;
      });
      step('tools/call protocol_error_job: -32603');
      // The SDK reports a missing resource as its ResourceNotFoundError
      // (code -32602) in both eras: the era's own code is checked on the wire.
      await assert.rejects(client.readResource({ uri: 'test://nope' }, { cacheMode: 'bypass' }), (err) => {
        assert.equal(err.constructor.name, 'ResourceNotFoundError');
        assert.deepEqual(err.data, { uri: 'test://nope' });
        return true;
      });
      const read = sent.findLast((m) => m.method === 'resources/read' && m.params?.uri === 'test://nope');
      const wire = received.find((m) => m.id === read.id && m.error);
      const code = era === 'modern' ? -32602 : -32002;
      assert.deepEqual(wire.error, { code, message: 'Resource not found', data: { uri: 'test://nope' } });
      step(`resources/read test://nope: ${code} with data.uri`);
      await assert.rejects(client.getPrompt({ name: 'no_such_prompt' }), (err) => {
        assert.equal(err.code, -32602, `unknown prompt: ${err.message}`);
        return true;
      });
      step('prompts/get no_such_prompt: -32602');
    },
  },
  {
    name: 'logging',
    run: async (ctx) => {
      const { plain, notified, step } = ctx;
      const logs = notified('notifications/message');
      logs.length = 0;
      assert.deepEqual(plain(await logged(ctx, 'test_tool_with_logging', 'info')), text('Tool with logging executed successfully'));
      await settle();
      assert.deepEqual(logs.splice(0), [
        { level: 'info', data: { message: 'Tool execution started' } },
        { level: 'info', data: { message: 'Tool processing data' } },
        { level: 'info', data: { message: 'Tool execution completed' } },
      ]);
      step('logging at info, test_tool_with_logging: 3 info messages');
      assert.deepEqual(
        plain(await logged(ctx, 'vigil_log_levels', 'warning')),
        text('Logged at debug, info, notice, warning and error'),
      );
      await settle();
      assert.deepEqual(logs.splice(0), [
        { level: 'warning', data: { message: 'a warning message' } },
        { level: 'error', data: { message: 'an error message' } },
      ]);
      step('logging at warning, vigil_log_levels: warning and error only');
    },
  },
  {
    // Over stdio the SDK drops a progress notification read in the same
    // chunk as the response (the last one), so onprogress sees a prefix;
    // the notifications are checked as received on the wire.
    name: 'progress',
    run: async ({ client, plain, sent, received, kind, step }) => {
      const progress = [];
      received.length = 0;
      const got = await client.callTool({ name: 'test_tool_with_progress', arguments: {} }, { onprogress: (p) => progress.push(p) });
      const call = sent.findLast((m) => m.method === 'tools/call' && m.params?.name === 'test_tool_with_progress');
      const token = call.params._meta.progressToken;
      assert.deepEqual(plain(got), text(String(token)));
      const want = [0, 50, 100].map((p) => ({ progress: p, total: 100, message: `Completed step ${p} of 100` }));
      assert.deepEqual(
        received.filter((m) => m.method === 'notifications/progress').map((m) => m.params),
        want.map((p) => ({ ...p, progressToken: token })),
        'progress notifications on the wire',
      );
      assert.deepEqual(progress, want.slice(0, progress.length), 'onprogress sees them in order');
      assert.ok(progress.length >= (kind === 'stdio' ? 2 : 3), `onprogress saw ${progress.length} notifications`);
      step(`test_tool_with_progress: 0, 50, 100 of 100 for token ${token}`);
    },
  },
  {
    name: 'sampling, elicitation and roots',
    run: async ({ client, era, plain, asked, step }) => {
      for (const [name, args, want, wantAsked] of rounds) {
        asked.length = 0;
        const res = await client.callTool({ name, arguments: args });
        assert.deepEqual(plain(res), want, `tools/call ${name}`);
        // In 2026-07-28 the questions of one round come together (a map in
        // the input_required result): their order is not the server's.
        const norm = (list) => {
          const out = list.map(({ method, params }) => ({ method, params: withoutMeta(params) }));
          return era === 'modern' ? out.sort((a, b) => a.method.localeCompare(b.method)) : out;
        };
        assert.deepEqual(norm(asked), norm(wantAsked), `what ${name} asked the client`);
        step(`${name}: ${wantAsked.map((a) => a.method).join(', ')} answered`);
      }
    },
  },
  {
    name: 'resources and templates',
    run: async ({ client, plain, step }) => {
      const STATIC_TEXT = {
        uri: 'test://static-text',
        name: 'static-text',
        title: 'Static Text Resource',
        description: 'A static text resource for testing',
        mimeType: 'text/plain',
      };
      const STATIC_BINARY = {
        uri: 'test://static-binary',
        name: 'static-binary',
        title: 'Static Binary Resource',
        description: 'A static binary resource (image) for testing',
        mimeType: 'image/png',
      };
      const WATCHED = {
        uri: 'test://watched-resource',
        name: 'watched-resource',
        title: 'Watched Resource',
        description: 'A resource whose subscribers are notified of an update each time the vigil_touch_resource tool runs',
        mimeType: 'text/plain',
      };
      const TEMPLATE = {
        uriTemplate: 'test://template/{id}/data',
        name: 'template',
        title: 'Resource Template',
        description: 'A resource template with parameter substitution',
        mimeType: 'application/json',
      };
      const reads = [
        ['test://static-text', { uri: 'test://static-text', mimeType: 'text/plain', text: 'This is the content of the static text resource.' }],
        ['test://static-binary', { uri: 'test://static-binary', mimeType: 'image/png', blob: PNG }],
        [
          'test://template/abc/data',
          { uri: 'test://template/abc/data', mimeType: 'application/json', text: '{"id":"abc","templateTest":true,"data":"Data for ID: abc"}' },
        ],
      ];
      // Other modules check their own schemes (skill://, ui://): this one
      // checks every test:// entry, exactly.
      const listed = plain(await client.listResources());
      assert.deepEqual(Object.keys(listed), ['resources'], 'resources/list: one complete page');
      assert.deepEqual(listed.resources.filter((r) => r.uri.startsWith('test://')).sort((a, b) => (a.uri < b.uri ? -1 : a.uri > b.uri ? 1 : 0)), [STATIC_BINARY, STATIC_TEXT, WATCHED], 'resources/list');
      step('resources/list: the 3 test:// resources');
      const templates = plain(await client.listResourceTemplates());
      assert.deepEqual(Object.keys(templates), ['resourceTemplates'], 'resources/templates/list: one complete page');
      assert.deepEqual(
        templates.resourceTemplates.filter((r) => r.uriTemplate.startsWith('test://')),
        [TEMPLATE],
        'resources/templates/list',
      );
      step('resources/templates/list: test://template/{id}/data');
      for (const [uri, want] of reads) {
        assert.deepEqual(plain(await client.readResource({ uri }, { cacheMode: 'bypass' })), { contents: [want] }, `resources/read ${uri}`);
        step(`resources/read ${uri}`);
      }
    },
  },
  {
    name: 'resource subscription (resources/subscribe)',
    eras: ['legacy'],
    run: async ({ client, plain, waitFor, step }) => {
      assert.deepEqual(await client.subscribeResource({ uri: 'test://watched-resource' }), {});
      const updated = waitFor('notifications/resources/updated', (p) => p.uri === 'test://watched-resource');
      assert.deepEqual(
        plain(await client.callTool({ name: 'vigil_touch_resource', arguments: {} })),
        text('The subscribers of test://watched-resource were notified'),
      );
      assert.equal((await updated).uri, 'test://watched-resource');
      step('resources/subscribe, then notifications/resources/updated');
      assert.deepEqual(await client.unsubscribeResource({ uri: 'test://watched-resource' }), {});
      step('resources/unsubscribe');
    },
  },
  {
    // subscriptions/listen: the notifications arrive on the stream while it
    // is open; once closed, a change reaches only the streams still open.
    name: 'resource subscription (subscriptions/listen)',
    eras: ['modern'],
    run: async ({ client, plain, notified, waitFor, step }) => {
      const touch = async () =>
        assert.deepEqual(
          plain(await client.callTool({ name: 'vigil_touch_resource', arguments: {} })),
          text('The subscribers of test://watched-resource were notified'),
        );
      const first = await client.listen({ resourceSubscriptions: ['test://watched-resource'] });
      assert.deepEqual(first.honoredFilter.resourceSubscriptions, ['test://watched-resource'], 'honored filter');
      const updates = notified('notifications/resources/updated');
      updates.length = 0;
      let updated = waitFor('notifications/resources/updated', (p) => p.uri === 'test://watched-resource');
      await touch();
      await updated;
      step('subscriptions/listen, then notifications/resources/updated');
      await first.close();
      assert.equal(await first.closed, 'local');
      const second = await client.listen({ resourceSubscriptions: ['test://watched-resource'] });
      updates.length = 0;
      updated = waitFor('notifications/resources/updated', (p) => p.uri === 'test://watched-resource');
      await touch();
      await updated;
      await settle();
      assert.equal(updates.length, 1, `one update after the first stream closed, not ${JSON.stringify(updates)}`);
      await second.close();
      step('closed listen streams get nothing more');
    },
  },
  {
    name: 'list_changed (2025 session stream)',
    eras: ['legacy'],
    run: async ({ client, plain, waitFor, step }) => {
      const changed = waitFor('notifications/tools/list_changed');
      assert.deepEqual(plain(await client.callTool({ name: 'test_trigger_tool_change', arguments: {} })), text('The tool list changed'));
      await changed;
      step('test_trigger_tool_change: notifications/tools/list_changed');
    },
  },
  {
    name: 'list_changed (subscriptions/listen)',
    eras: ['modern'],
    run: async ({ client, plain, waitFor, step }) => {
      const sub = await client.listen({ toolsListChanged: true, promptsListChanged: true });
      assert.equal(sub.honoredFilter.toolsListChanged, true);
      assert.equal(sub.honoredFilter.promptsListChanged, true);
      const tools = waitFor('notifications/tools/list_changed');
      assert.deepEqual(plain(await client.callTool({ name: 'test_trigger_tool_change', arguments: {} })), text('The tool list changed'));
      await tools;
      const prompts = waitFor('notifications/prompts/list_changed');
      assert.deepEqual(plain(await client.callTool({ name: 'test_trigger_prompt_change', arguments: {} })), text('The prompt list changed'));
      await prompts;
      await sub.close();
      step('test_trigger_tool_change and test_trigger_prompt_change: list_changed on the listen stream');
    },
  },
  {
    name: 'prompts and completion',
    run: async ({ client, plain, step }) => {
      const { prompts } = plain(await client.listPrompts());
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
      step(`prompts/list: ${prompts.length} prompts`);
      for (const [name, args, messages] of gets) {
        const got = await client.getPrompt(args === undefined ? { name } : { name, arguments: args });
        assert.deepEqual(plain(got), { messages }, `prompts/get ${name}`);
        step(`prompts/get ${name}`);
      }
      assert.deepEqual(
        plain(
          await client.complete({
            ref: { type: 'ref/prompt', name: 'test_prompt_with_arguments' },
            argument: { name: 'arg1', value: 'test' },
          }),
        ),
        { completion: { values: ['testValue1', 'testValue2'], total: 2, hasMore: false } },
      );
      step('completion/complete arg1="test": testValue1, testValue2');
    },
  },
  {
    // The SDK rejects an aborted call with its own error whose code is
    // REQUEST_TIMEOUT and whose message is the abort reason (not an
    // AbortError); the session stays usable.
    name: 'cancellation',
    run: async ({ client, era, kind, plain, sent, step }) => {
      const controller = new AbortController();
      const started = Date.now();
      const call = client.callTool({ name: 'slow_compute', arguments: { seconds: 30 } }, { signal: controller.signal });
      await settle();
      const req = sent.findLast((m) => m.method === 'tools/call' && m.params?.name === 'slow_compute');
      assert.ok(req, 'the call was sent');
      controller.abort('interop: cancelled');
      await assert.rejects(call, (err) => {
        assert.match(String(err.message), /interop: cancelled/);
        return true;
      });
      assert.ok(Date.now() - started < 10_000, 'the abort did not wait for the tool');
      await settle();
      const cancelled = sent.find((m) => m.method === 'notifications/cancelled' && m.params?.requestId === req.id);
      if (era === 'modern' && kind === 'http') {
        // A 2026-07-28 request over HTTP is cancelled by closing its stream.
        assert.ok(!cancelled, 'no notifications/cancelled in a 2026-07-28 HTTP request');
      } else {
        assert.ok(cancelled, 'notifications/cancelled names the request');
      }
      assert.deepEqual(plain(await client.callTool({ name: 'greet', arguments: { name: 'Bo' } })), text('Hello, Bo!'), 'usable after the cancel');
      step(`slow_compute ${req.id} aborted; the session still answers`);
    },
  },
  {
    // ext-tasks drives the task tools in both wire formats: 2025-11-25 tasks
    // through the SDK, 2026-07-28 through the harness's raw path.
    name: 'tasks (ext-tasks)',
    run: runTasks,
  },
];

// withoutMeta drops the _meta the SDK may add to a question's params.
function withoutMeta(params) {
  if (params === undefined || params === null) return params;
  const { _meta, ...rest } = params;
  return rest;
}

// runTasks drives the task tools through ext-tasks. Its default result
// check rejects a 2026-07-28 task result without resultType: before the
// fix of issue 44 every task-backed call here settled as failed.
async function runTasks({ client, era, asked, step, taskSession }) {
  const session = taskSession(client);
  try {
    const outcome = async (name, args, opts) => (await (await session.callTool(name, args, opts)).settle()).outcome;
    // slow_compute's task support is optional: ask for a task.
    const asTask = { task: { preference: 'prefer' } };

    let got = await outcome('slow_compute', { seconds: 0.2 }, asTask);
    assert.ok(got.task?.taskId, `slow_compute ran as a task: ${JSON.stringify(got)}`);
    assert.equal(got.status, 'completed', `slow_compute: ${JSON.stringify(got)}`);
    assert.deepEqual(stripTyped(resultFromTaskOutcome(got), era, got.task), text('Computed for 0.2s'));
    step('slow_compute as a task: completed, "Computed for 0.2s"');

    got = await outcome('failing_job', {});
    if (era === 'modern') {
      // A tool error is a completed task whose result has isError.
      assert.equal(got.status, 'completed', `failing_job: ${JSON.stringify(got)}`);
      assert.deepEqual(stripTyped(got.result, era, got.task), {
        content: [{ type: 'text', text: 'failing_job: the job failed, as it always does' }],
        isError: true,
      });
    } else {
      assert.equal(got.status, 'failed', `failing_job: ${JSON.stringify(got)}`);
      assert.equal(got.task.statusMessage, 'The tool reported an error.');
    }
    step(`failing_job as a task: ${got.status}`);

    if (era === 'modern') {
      got = await outcome('protocol_error_job', {});
      assert.equal(got.status, 'failed');
      assert.equal(got.error.code, -32603);
      assert.match(got.task.statusMessage, /protocol_error_job: simulated internal failure/);
      step('protocol_error_job as a task: failed with -32603');
    }

    asked.length = 0;
    got = await outcome('confirm_delete', { filename: 'a.txt' });
    assert.equal(got.status, 'completed', `confirm_delete: ${JSON.stringify(got)}`);
    assert.deepEqual(stripTyped(got.result, era, got.task), text('Deleted a.txt'));
    assert.equal(asked.length, 1, `one question: ${JSON.stringify(asked)}`);
    assert.equal(asked[0].params.message, 'Delete a.txt?');
    step('confirm_delete as a task: the elicitation answered, "Deleted a.txt"');

    got = await outcome('greet', { name: 'Bo' });
    assert.equal(got.status, 'completed');
    assert.deepEqual(stripTyped(got.result, era), text('Hello, Bo!'));
    step('greet (no task support): an immediate result');

    // Cancel a running task: the server reports it cancelled.
    const execution = await session.callTool('slow_compute', { seconds: 30 }, asTask);
    await execution.cancel();
    const settled = await execution.settle();
    assert.equal(settled.outcome.status, 'cancelled', `after cancel: ${JSON.stringify(settled.outcome)}`);
    step('slow_compute as a task, cancelled: status cancelled');
  } finally {
    await session.close();
  }
}

// stripTyped removes what a task's result carries beyond a plain tool
// result, after checking it: in 2026-07-28, resultType "complete" and the
// server's identity in _meta; in 2025-11-25 (tasks/result), the related
// task in _meta, which must be the task's own.
function stripTyped(result, era, task) {
  const out = structuredClone(result);
  if (era === 'modern') {
    assert.equal(out.resultType, 'complete', `a 2026-07-28 result has resultType "complete": ${JSON.stringify(result)}`);
  } else if (task) {
    assert.deepEqual(out._meta?.['io.modelcontextprotocol/related-task'], { taskId: task.taskId }, 'tasks/result names its task');
    delete out._meta['io.modelcontextprotocol/related-task'];
  }
  delete out.resultType;
  if (out._meta) {
    delete out._meta['io.modelcontextprotocol/serverInfo'];
    if (Object.keys(out._meta).length === 0) delete out._meta;
  }
  return out;
}
