// LangChain's MCP adapters (@langchain/mcp-adapters, the TypeScript SDK v1
// client under them) against vigil-everything, as a LangChain app uses them:
// MultiServerMCPClient.getTools(), tool.invoke, LangGraph's ToolNode, the
// adapters' resources and templates, logging (setLoggingLevel and the
// onMessage hook) and progress (the onProgress hook); prompts and completion
// through the client the adapters hold. 2025 era only: the SDK v1 under the
// adapters speaks no 2026-07-28.
//
// Usage: node langchain.mjs <http://HOST:PORT/mcp | path-to-vigil-everything> 2025-11-25

import assert from 'node:assert/strict';
import { AIMessage } from '@langchain/core/messages';
import { ToolNode } from '@langchain/langgraph/prebuilt';
import { MultiServerMCPClient } from '@langchain/mcp-adapters';
import { LEGACY, SIMPLE_TEXT, STATIC_TEXT, parseTarget, stepper, watchdog } from './lib.mjs';

watchdog(60_000);
const { target, era, kind } = parseTarget('langchain');
assert.equal(era, LEGACY, 'LangChain speaks the 2025 era only');
const step = stepper(`langchain ${kind}/${era}`);

const progress = [];
const logs = [];
const client = new MultiServerMCPClient({
  mcpServers: {
    vigil: kind === 'http' ? { transport: 'http', url: target } : { transport: 'stdio', command: target, args: ['-stdio'] },
  },
  throwOnLoadError: true,
  onProgress: (p) => progress.push(p.progress),
  onMessage: (m) => logs.push(m.level),
});

// asText turns what a LangChain tool returns into its text.
function asText(out) {
  if (typeof out === 'string') return out;
  if (Array.isArray(out)) return out.map(asText).join('');
  if (out?.type === 'text') return out.text;
  if (out?.content !== undefined) return asText(out.content);
  return JSON.stringify(out);
}

try {
  const tools = await client.getTools();
  const byName = Object.fromEntries(tools.map((t) => [t.name.replace(/^mcp__vigil__/, ''), t]));
  for (const want of ['test_simple_text', 'test_error_handling', 'vigil_structured', 'test_tool_with_progress', 'vigil_log_levels']) {
    assert.ok(byName[want], `getTools has ${want}`);
  }
  step(`getTools: ${tools.length} tools`);

  assert.equal(asText(await byName.test_simple_text.invoke({})), SIMPLE_TEXT);
  await assert.rejects(byName.test_error_handling.invoke({}), /intentionally returns an error/, 'an error result is a ToolException');
  assert.match(asText(await byName.vigil_structured.invoke({ a: 6, b: 7 })), /13/);
  step('tool.invoke: text, error, structured');

  // Known client bug langchainConditionalSchema: the adapters simplify the
  // input schema for the model and merge the required lists of then and
  // else, so arguments valid under the 2020-12 conditional are refused
  // before they reach the server. When fixed, the call answers and this
  // fails.
  const valid = { name: 'Ada', contactMethod: 'phone', phone: '555' };
  await assert.rejects(byName.json_schema_2020_12_tool.invoke(valid), /email|schema|Received tool input did not match/i,
    'valid arguments refused client-side (known client bug langchainConditionalSchema)');
  step('json_schema_2020_12_tool: valid arguments refused client-side (known client bug langchainConditionalSchema)');

  // A LangGraph agent's tool step: the model's tool call, run by ToolNode.
  const node = new ToolNode(tools);
  const out = await node.invoke({
    messages: [new AIMessage({ content: '', tool_calls: [{ id: 'c1', name: byName.vigil_structured.name, args: { a: 2, b: 5 } }] })],
  });
  assert.equal(out.messages.length, 1);
  assert.match(asText(out.messages[0].content), /"sum":\s*7/);
  step('ToolNode: a tool call');

  const before = progress.length;
  assert.equal(asText(await byName.test_tool_with_progress.invoke({})).length > 0, true);
  // Known client bug langchainStdioLastProgress: the last notification is
  // lost when it shares a read with the result (seen over stdio; over HTTP
  // the two may share a read too).
  const got = progress.slice(before);
  if (got.length === 2) {
    assert.deepEqual(got, [0, 50], 'progress (the last one lost: known client bug)');
    step('progress: 0, 50 (100 lost with the result: known client bug langchainStdioLastProgress)');
  } else {
    assert.deepEqual(got, [0, 50, 100], 'progress');
    step('progress: 0, 50, 100');
  }

  await client.setLoggingLevel('vigil', 'warning');
  await byName.vigil_log_levels.invoke({});
  for (let i = 0; i < 100 && logs.length < 2; i++) await new Promise((r) => setTimeout(r, 20));
  assert.deepEqual(logs, ['warning', 'error'], 'log notifications at or above warning');
  step('logging: warning, error');

  const resources = await client.listResources('vigil');
  assert.ok(resources.vigil.some((r) => r.uri === 'test://static-text'), 'listResources');
  const read = await client.readResource('vigil', 'test://static-text');
  assert.equal(read[0].text, STATIC_TEXT);
  const templates = await client.listResourceTemplates('vigil');
  assert.ok(templates.vigil.some((t) => t.uriTemplate === 'test://template/{id}/data'), 'listResourceTemplates');
  step('resources: list, read, templates');

  const sdk = await client.getClient('vigil');
  const prompt = await sdk.getPrompt({ name: 'test_prompt_with_arguments', arguments: { arg1: 'x1', arg2: 'y2' } });
  assert.match(prompt.messages[0].content.text, /x1/);
  const completion = await sdk.complete({ ref: { type: 'ref/prompt', name: 'test_prompt_with_arguments' }, argument: { name: 'arg1', value: 'test' } });
  assert.deepEqual(completion.completion.values, ['testValue1', 'testValue2']);
  step('prompts and completion (through the SDK client)');
} finally {
  await client.close();
}
step('OK');
