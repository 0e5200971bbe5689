package main

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/vigil-mcp/vigil/server"
)

// Vigil's own fixtures, beyond the conformance suite's: what the TypeScript
// SDK interop test needs (structured output and a validation failure, roots,
// a resource update, log levels), a header-mirrored argument, and "about",
// which sorts first in tools/list and succeeds with {} (a conformance probe
// calls the first listed tool with no arguments).

// structuredIn are the arguments of vigil_structured.
type structuredIn struct {
	A int `json:"a" jsonschema:"the first operand"`
	B int `json:"b" jsonschema:"the second operand"`
}

// structuredOut is the structured result of vigil_structured.
type structuredOut struct {
	Sum     int `json:"sum"`
	Product int `json:"product"`
}

// rootsOut is the structured result of vigil_roots.
type rootsOut struct {
	Roots []server.Root `json:"roots"`
}

// regionSchema mirrors its one argument into the Mcp-Param-Region HTTP
// header (SEP-2243).
const regionSchema = `{"type":"object","properties":{"region":{"type":"string","description":"a region name, mirrored into the Mcp-Param-Region header","x-mcp-header":"Region"}},"required":["region"]}`

// addExtras registers the vigil_* fixtures and "about".
func addExtras(s *server.Server) error {
	return errors.Join(
		addNoArgTool(s, "about", "Describes this server. Takes no arguments.",
			func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
				return server.Text(serverName + " " + version + ": the Vigil MCP conformance fixture server"), nil
			}),
		server.AddTypedTool(s, server.Tool{
			Name:        "vigil_structured",
			Description: "Adds and multiplies two integers; the result is structured content (with an output schema).",
		}, func(_ context.Context, _ *server.CallToolRequest, in structuredIn) (structuredOut, error) {
			return structuredOut{Sum: in.A + in.B, Product: in.A * in.B}, nil
		}),
		server.AddTypedTool(s, server.Tool{
			Name:        "vigil_roots",
			Description: "Asks the client for its roots (roots/list) and returns them as structured content.",
		}, func(ctx context.Context, _ *server.CallToolRequest, _ noArgs) (rootsOut, error) {
			roots, err := server.ListRoots(ctx)
			return rootsOut{Roots: roots}, err
		}),
		addNoArgTool(s, "vigil_touch_resource",
			"Notifies the subscribers of "+watchedURI+" that it was updated (notifications/resources/updated).",
			func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
				s.ResourceUpdated(watchedURI)
				return server.Text("The subscribers of " + watchedURI + " were notified"), nil
			}),
		addNoArgTool(s, "vigil_log_levels",
			"Logs one message at each of the levels debug, info, notice, warning and error; the client receives those at or above its level.",
			func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
				log := server.ClientLogger(ctx)
				log.Debug("a debug message")
				log.Info("an info message")
				log.Log(ctx, server.LevelNotice, "a notice message")
				log.Warn("a warning message")
				log.Error("an error message")
				return server.Text("Logged at debug, info, notice, warning and error"), nil
			}),
		s.AddTool(server.Tool{
			Name:        "vigil_region",
			Description: "Returns its region argument, which HTTP clients mirror into the Mcp-Param-Region header.",
			InputSchema: json.RawMessage(regionSchema),
		}, func(_ context.Context, req *server.CallToolRequest) (*server.CallToolResult, error) {
			var in struct {
				Region *string `json:"region"`
			}
			if err := json.Unmarshal(req.Arguments, &in); err != nil || in.Region == nil {
				return nil, errors.New(`vigil_region needs {"region": string}`)
			}
			return server.Text("Region: " + *in.Region), nil
		}),
	)
}
