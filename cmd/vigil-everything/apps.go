package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/vigil-mcp/vigil/server"
)

// weatherViewURI is the MCP Apps view of vigil_weather.
const weatherViewURI = "ui://vigil-everything/weather"

// weatherView is the page of weatherViewURI: it shows the tool's result,
// which the host posts to it as ui/notifications/tool-result.
const weatherView = `<!doctype html>
<html><head><meta charset="utf-8"><title>Weather</title></head>
<body><p id="sky">Waiting for the forecast…</p>
<script>
window.addEventListener("message", (e) => {
  const m = e.data;
  if (m && m.method === "ui/notifications/tool-result" && m.params.structuredContent) {
    const w = m.params.structuredContent;
    document.getElementById("sky").textContent = w.city + ": " + w.sky + ", " + w.celsius + " °C";
  }
});
window.parent.postMessage({jsonrpc: "2.0", id: 1, method: "ui/initialize", params: {}}, "*");
</script></body></html>
`

// weatherIn are the arguments of vigil_weather.
type weatherIn struct {
	City string `json:"city" jsonschema:"a city name"`
}

// weatherOut is the structured result of vigil_weather.
type weatherOut struct {
	City    string `json:"city"`
	Sky     string `json:"sky"`
	Celsius int    `json:"celsius"`
}

// addApps registers an MCP Apps view and vigil_weather, the tool that
// names it: clients that declare io.modelcontextprotocol/ui see its
// _meta.ui; others get the same tool, whose text stands on its own.
func addApps(s *server.Server) error {
	border := true
	return errors.Join(
		s.AddView(server.View{
			URI: weatherViewURI, Name: "weather-view", Title: "Weather view",
			Description: "The MCP Apps view of vigil_weather", HTML: []byte(weatherView),
			UI: server.ViewUI{PrefersBorder: &border},
		}),
		server.AddTypedTool(s, server.Tool{
			Name:        "vigil_weather",
			Description: "Returns a (made-up) forecast for a city, shown by an MCP Apps view where the client supports it.",
			UI:          &server.ToolUI{ResourceURI: weatherViewURI},
		}, func(_ context.Context, _ *server.CallToolRequest, in weatherIn) (weatherOut, error) {
			if in.City == "" {
				return weatherOut{}, fmt.Errorf("city is required")
			}
			return weatherOut{City: in.City, Sky: "sunny", Celsius: 21}, nil
		}),
	)
}
