package main

import (
	"encoding/json"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/server"
)

// TestWeatherView: in both eras, a client that declares MCP Apps sees
// vigil_weather with _meta.ui.resourceUri and reads the view back with its
// MIME type and _meta.ui; a client that does not sees a plain tool; the
// call answers text and structured content either way.
func TestWeatherView(t *testing.T) {
	uiCaps := map[string]any{"extensions": map[string]any{server.ExtensionUI: map[string]any{"mimeTypes": []string{server.ViewMIMEType}}}}
	weatherMeta := func(c *fixtureClient) json.RawMessage {
		var res struct {
			Tools []struct {
				Name string          `json:"name"`
				Meta json.RawMessage `json:"_meta"`
			} `json:"tools"`
		}
		require.NoError(t, json.Unmarshal(c.call("tools/list", nil), &res))
		for _, tool := range res.Tools {
			if tool.Name == "vigil_weather" {
				return tool.Meta
			}
		}
		require.Fail(t, "vigil_weather is not listed")
		return nil
	}
	for _, e := range eras() {
		t.Run(e.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := startFixtures(t, e, uiCaps)
				assert.JSONEq(t, `{"ui":{"resourceUri":"ui://vigil-everything/weather"},"ui/resourceUri":"ui://vigil-everything/weather"}`, string(weatherMeta(c)))
				var read struct {
					Contents []struct {
						MIMEType string          `json:"mimeType"`
						Text     string          `json:"text"`
						Meta     json.RawMessage `json:"_meta"`
					} `json:"contents"`
				}
				require.NoError(t, json.Unmarshal(c.call("resources/read", map[string]any{"uri": weatherViewURI}), &read))
				require.Len(t, read.Contents, 1)
				assert.Equal(t, server.ViewMIMEType, read.Contents[0].MIMEType)
				assert.Equal(t, weatherView, read.Contents[0].Text)
				assert.JSONEq(t, `{"ui":{"prefersBorder":true}}`, string(read.Contents[0].Meta))
				c.stop()

				c = startFixtures(t, e, nil)
				assert.Empty(t, weatherMeta(c), "no _meta.ui for a client without the extension")
				res := c.call("tools/call", map[string]any{"name": "vigil_weather", "arguments": map[string]any{"city": "Lyon"}})
				assert.Contains(t, string(res), `"structuredContent":{"city":"Lyon","sky":"sunny","celsius":21}`)
				assert.Contains(t, string(res), `"type":"text"`)
				c.stop()
			})
		})
	}
}
