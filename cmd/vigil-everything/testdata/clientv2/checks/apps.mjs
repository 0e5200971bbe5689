// MCP Apps (io.modelcontextprotocol/ui, SEP-1865): vigil-everything's
// vigil_weather names the view ui://vigil-everything/weather. A client that
// does not declare the extension gets the tool without _meta.ui and a result
// whose text stands on its own; one that declares it (with the view's MIME
// type) sees the server's extension, the tool's _meta.ui and reads the view
// back with its MIME type and _meta.ui. Both eras, both transports.

import assert from 'node:assert/strict';

const EXT = 'io.modelcontextprotocol/ui';
const MIME = 'text/html;profile=mcp-app';
const VIEW = 'ui://vigil-everything/weather';

async function weather(client) {
  const { tools } = await client.listTools();
  const tool = tools.find((t) => t.name === 'vigil_weather');
  assert.ok(tool, 'vigil_weather is listed');
  return tool;
}

export default [
  {
    name: 'MCP Apps: a client without the extension gets the fallback',
    run: async ({ client, plain }) => {
      const tool = await weather(client);
      assert.equal(tool._meta?.ui, undefined, 'no _meta.ui for a client without the extension');
      const res = plain(await client.callTool({ name: 'vigil_weather', arguments: { city: 'Lyon' } }));
      const want = { city: 'Lyon', sky: 'sunny', celsius: 21 };
      assert.deepEqual(res.structuredContent, want, 'structured result');
      assert.deepEqual(res.content, [{ type: 'text', text: JSON.stringify(want) }], 'the text stands on its own');
    },
  },
  {
    name: 'MCP Apps: a client with the extension sees the view',
    run: async ({ connectOther, capabilities, step }) => {
      const other = await connectOther({ ...capabilities, extensions: { [EXT]: { mimeTypes: [MIME] } } });
      try {
        assert.deepEqual(other.getServerCapabilities()?.extensions?.[EXT], { mimeTypes: [MIME] }, "the server's extension");
        const tool = await weather(other);
        assert.equal(tool._meta?.ui?.resourceUri, VIEW, "the tool's _meta.ui.resourceUri");
        const read = await other.readResource({ uri: VIEW });
        assert.equal(read.contents.length, 1, 'one content');
        const [view] = read.contents;
        assert.equal(view.uri, VIEW);
        assert.equal(view.mimeType, MIME, "the view's MIME type");
        assert.match(view.text, /^<!doctype html>/, 'the HTML');
        assert.equal(view._meta?.ui?.prefersBorder, true, "the view's _meta.ui");
        step(`view ${VIEW}: ${view.text.length} bytes of ${view.mimeType}`);
      } finally {
        await other.close();
      }
    },
  },
];
