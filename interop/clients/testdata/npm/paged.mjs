// Pagination against a server whose lists come two items a page (five of
// each: item0 ... item4; interop/clients/paged_test.go): the AI SDK's
// listTools page by page and tools() over every page, in both eras; in the
// 2025 era LangChain's getTools (every page) and its listResources and
// listResourceTemplates, which read the first page only (known client bug
// langchainFirstPageOnly: when fixed, they list five and this fails).
//
// Usage: node paged.mjs http://HOST:PORT/mcp 2025-11-25|2026-07-28

import assert from 'node:assert/strict';
import { createMCPClient } from '@ai-sdk/mcp';
import { MultiServerMCPClient } from '@langchain/mcp-adapters';
import { LEGACY, MODERN, parseTarget, stepper, watchdog } from './lib.mjs';

watchdog(60_000);
const { target, era } = parseTarget('paged');
const step = stepper(`paged ${era}`);
const ALL = ['item0', 'item1', 'item2', 'item3', 'item4'];

const ai = await createMCPClient({ transport: { type: 'http', url: target }, protocolVersionDiscovery: era === MODERN });
try {
  const names = [];
  let cursor;
  let pages = 0;
  do {
    const page = await ai.listTools({ params: cursor ? { cursor } : {} });
    assert.ok(page.tools.length <= 2, 'a page holds two');
    names.push(...page.tools.map((t) => t.name));
    cursor = page.nextCursor;
    pages++;
  } while (cursor);
  assert.deepEqual(names.sort(), ALL);
  assert.equal(pages, 3);
  assert.deepEqual(Object.keys(await ai.tools()).sort(), ALL, 'tools() reads every page');
  const resources = await ai.listResources();
  assert.equal(resources.resources.length, 2, 'listResources is one page');
  assert.ok(resources.nextCursor, 'with a cursor');
  const rest = await ai.listResources({ params: { cursor: resources.nextCursor } });
  assert.equal(rest.resources.length, 2);
  step('ai-sdk: listTools, three pages; tools() all five; listResources by cursor');
} finally {
  await ai.close();
}

if (era === LEGACY) {
  const lc = new MultiServerMCPClient({ mcpServers: { paged: { transport: 'http', url: target } }, throwOnLoadError: true });
  try {
    const tools = await lc.getTools();
    assert.deepEqual(tools.map((t) => t.name.replace(/^mcp__paged__/, '')).sort(), ALL, 'getTools reads every page');
    const resources = await lc.listResources('paged');
    const templates = await lc.listResourceTemplates('paged');
    // Known client bug langchainFirstPageOnly: the first page only.
    assert.deepEqual(resources.paged.map((r) => r.name), ['item0', 'item1'], 'listResources: the first page only (known client bug)');
    assert.deepEqual(templates.paged.map((r) => r.name), ['item0', 'item1'], 'listResourceTemplates: the first page only (known client bug)');
    step('langchain: getTools all five; listResources and listResourceTemplates the first page only (known client bug langchainFirstPageOnly)');
  } finally {
    await lc.close();
  }
}
step('OK');
