// The Vercel AI SDK's MCP client (@ai-sdk/mcp) against vigil-everything, as
// an AI SDK app uses it: createMCPClient, client.tools() whose execute calls
// the server, generateText (ai) driving a tool through a mock model, and the
// client's own methods for resources, templates, prompts, completion and
// elicitation. The client has no sampling, roots, progress or logging.
//
// Usage: node ai-sdk.mjs <http://HOST:PORT/mcp | path-to-vigil-everything> 2025-11-25|2026-07-28

import assert from 'node:assert/strict';
import { createMCPClient, ElicitationRequestSchema } from '@ai-sdk/mcp';
import { Experimental_StdioMCPTransport } from '@ai-sdk/mcp/mcp-stdio';
import { generateText, isStepCount } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { ELICITED, ELICITED_TEXT, LEGACY, MODERN, SIMPLE_TEXT, STATIC_TEXT, parseTarget, stepper, text, watchdog } from './lib.mjs';

watchdog(60_000);
const { target, era, kind } = parseTarget('ai-sdk');
const step = stepper(`ai-sdk ${kind}/${era}`);

let sessionId;
let expired = 0;
const client = await createMCPClient({
  transport: kind === 'http'
    ? { type: 'http', url: target, onSessionIdChange: (id) => { sessionId = id; }, onSessionExpired: () => { expired++; } }
    : new Experimental_StdioMCPTransport({ command: target, args: ['-stdio'] }),
  protocolVersionDiscovery: era === MODERN,
  clientName: 'ai-sdk-suite',
  capabilities: { elicitation: {} },
});
try {
  assert.equal(client.initializeResult.protocolVersion, era, 'negotiated era');
  assert.equal(client.serverInfo.name, 'vigil-everything');
  step(`initialized: ${client.initializeResult.protocolVersion}`);

  const listed = await client.listTools();
  const names = listed.tools.map((t) => t.name);
  for (const want of ['test_simple_text', 'test_error_handling', 'vigil_structured', 'test_elicitation']) {
    assert.ok(names.includes(want), `tools/list has ${want}`);
  }
  step(`tools/list: ${names.length} tools`);

  const tools = await client.tools();
  const simple = await tools.test_simple_text.execute({}, { toolCallId: 't1', messages: [] });
  assert.equal(text(simple.content), SIMPLE_TEXT);
  const failed = await tools.test_error_handling.execute({}, { toolCallId: 't2', messages: [] });
  assert.equal(failed.isError, true, 'an error result');
  const structured = await client.callTool({ name: 'vigil_structured', arguments: { a: 6, b: 7 } });
  assert.deepEqual(structured.structuredContent, { sum: 13, product: 42 });
  step('tools/call: text, isError, structured content');

  // An AI SDK app: the model asks for a tool, the SDK runs it on the server.
  let calls = 0;
  const result = await generateText({
    model: new MockLanguageModelV4({
      doGenerate: async () => {
        calls++;
        const usage = { inputTokens: { total: 1, noCache: 1 }, outputTokens: { total: 1, text: 1 } };
        if (calls === 1) {
          return {
            content: [{ type: 'tool-call', toolCallId: 'c1', toolName: 'vigil_structured', input: JSON.stringify({ a: 2, b: 5 }) }],
            finishReason: { unified: 'tool-calls', raw: undefined }, usage, warnings: [],
          };
        }
        return { content: [{ type: 'text', text: 'done' }], finishReason: { unified: 'stop', raw: undefined }, usage, warnings: [] };
      },
    }),
    tools,
    stopWhen: isStepCount(3),
    prompt: 'add 2 and 5',
  });
  const toolResult = result.steps.flatMap((s) => s.toolResults)[0];
  assert.ok(toolResult, 'generateText ran the tool');
  assert.deepEqual(toolResult.output.structuredContent, { sum: 7, product: 10 }, 'the tool result reached the model');
  assert.equal(result.text, 'done');
  step('generateText: a tool call through the mock model');

  const resources = await client.listResources();
  assert.ok(resources.resources.some((r) => r.uri === 'test://static-text'), 'resources/list');
  const read = await client.readResource({ uri: 'test://static-text' });
  assert.equal(read.contents[0].text, STATIC_TEXT);
  const templates = await client.listResourceTemplates();
  assert.ok(templates.resourceTemplates.some((t) => t.uriTemplate === 'test://template/{id}/data'), 'resources/templates/list');
  const templated = await client.readResource({ uri: 'test://template/42/data' });
  assert.match(templated.contents[0].text, /42/);
  step('resources: list, read, templates');

  const prompts = await client.listPrompts();
  assert.ok(prompts.prompts.some((p) => p.name === 'test_prompt_with_arguments'), 'prompts/list');
  const prompt = await client.getPrompt({ name: 'test_prompt_with_arguments', arguments: { arg1: 'x1', arg2: 'y2' } });
  assert.match(text([prompt.messages[0].content]), /x1.*y2|y2.*x1/s);
  step('prompts: list, get');

  const completion = await client.complete({ ref: { type: 'ref/prompt', name: 'test_prompt_with_arguments' }, argument: { name: 'arg1', value: 'test' } });
  assert.deepEqual(completion.completion.values, ['testValue1', 'testValue2']);
  step('completion/complete');

  client.onElicitationRequest(ElicitationRequestSchema, async () => ({ action: 'accept', content: ELICITED }));
  const elicited = await client.callTool({ name: 'test_elicitation', arguments: { message: 'who?' } });
  assert.equal(text(elicited.content), ELICITED_TEXT);
  step('elicitation');

  if (kind === 'http' && era === LEGACY) {
    // Known client bug aiSdkNoResume: test_reconnection ends its POST's
    // stream after the priming event (with retry) and answers on the
    // resumed stream; the client never resumes with Last-Event-ID, so the
    // call waits forever. When fixed, the call answers in about 100 ms
    // and this fails.
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort('suite: known client bug aiSdkNoResume'), 2_000);
    await assert.rejects(client.callTool({ name: 'test_reconnection', options: { signal: controller.signal } }), 'test_reconnection never answers (known client bug aiSdkNoResume)');
    clearTimeout(timer);
    step('test_reconnection: no resumption within 2 s (known client bug aiSdkNoResume)');

    // The session ends on the server (a DELETE out of band, as a restart
    // or an expiry would): the next call fails, and Vigil's 404 is one the
    // client acts on, calling onSessionExpired (a JSON-RPC body there would
    // not be: known client bug aiSdkSessionExpired404, ai-sdk-404.mjs).
    assert.ok(sessionId, 'a session id');
    const del = await fetch(target, { method: 'DELETE', headers: { 'mcp-session-id': sessionId, 'mcp-protocol-version': LEGACY } });
    assert.equal(del.status, 204, 'DELETE of the session');
    await assert.rejects(client.callTool({ name: 'test_simple_text' }));
    assert.equal(expired, 1, 'onSessionExpired is called on the 404 of a session that is gone');
    step('session gone: 404, onSessionExpired called');
  }
} finally {
  await client.close();
}
step('OK');
