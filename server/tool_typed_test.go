package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/testkit"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/memory"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

type geo struct {
	Lat float64 `json:"lat"`
	Lon float64 `json:"lon"`
}

// forecastIn has required and optional fields, descriptions, a nested
// struct (by value and by pointer), a slice and a map.
type forecastIn struct {
	City   string            `json:"city" jsonschema:"the city to forecast"`
	Days   int               `json:"days,omitempty" jsonschema:"how many days; 1 when absent"`
	Where  geo               `json:"where"`
	Near   *geo              `json:"near,omitempty"`
	Tags   []string          `json:"tags,omitempty"`
	Labels map[string]string `json:"labels,omitempty"`
}

type forecastOut struct {
	City    string    `json:"city"`
	Highs   []float64 `json:"highs"`
	Summary string    `json:"summary,omitempty"`
}

const forecastInSchema = `{
	"type": "object",
	"properties": {
		"city": {"type": "string", "description": "the city to forecast"},
		"days": {"type": "integer", "description": "how many days; 1 when absent"},
		"where": {
			"type": "object",
			"properties": {"lat": {"type": "number"}, "lon": {"type": "number"}},
			"required": ["lat", "lon"],
			"additionalProperties": false
		},
		"near": {
			"type": ["null", "object"],
			"properties": {"lat": {"type": "number"}, "lon": {"type": "number"}},
			"required": ["lat", "lon"],
			"additionalProperties": false
		},
		"tags": {"type": ["null", "array"], "items": {"type": "string"}},
		"labels": {"type": "object", "additionalProperties": {"type": "string"}}
	},
	"required": ["city", "where"],
	"additionalProperties": false
}`

const forecastOutSchema = `{
	"type": "object",
	"properties": {
		"city": {"type": "string"},
		"highs": {"type": ["null", "array"], "items": {"type": "number"}},
		"summary": {"type": "string"}
	},
	"required": ["city", "highs"],
	"additionalProperties": false
}`

// listedTool returns the tools/list entry of the named tool, reading the
// list with request id.
func listedTool(h *harness, id int64, name string) json.RawMessage {
	h.Request(id, "tools/list", nil)
	var list struct {
		Tools []json.RawMessage `json:"tools"`
	}
	require.NoError(h.t, json.Unmarshal(h.RecvResult(id), &list))
	for _, raw := range list.Tools {
		var t struct{ Name string }
		require.NoError(h.t, json.Unmarshal(raw, &t))
		if t.Name == name {
			return raw
		}
	}
	require.Failf(h.t, "tool not listed", "%s", name)
	return nil
}

// toolsStart starts an initialized session; register tools first.
func toolsStart(h *harness) {
	h.start()
	h.Initialize(protocol.Version20251125, nil)
}

func toolsStop(h *harness) {
	require.NoError(h.t, h.Close())
	require.NoError(h.t, h.Wait())
}

func forecast(_ context.Context, _ *server.CallToolRequest, in forecastIn) (forecastOut, error) {
	highs := make([]float64, max(in.Days, 1))
	for i := range highs {
		highs[i] = 20 + float64(i)
	}
	return forecastOut{City: in.City, Highs: highs}, nil
}

func TestTypedToolListing(t *testing.T) {
	testkit.Watchdog(t)
	h := newHarness(t)
	yes := true
	require.NoError(t, server.AddTypedTool(h.srv, server.Tool{
		Name:        "forecast",
		Title:       "Forecast",
		Description: "Daily highs.",
		Icons:       []server.Icon{{Src: "https://example.com/sun.png", MIMEType: "image/png"}},
		Annotations: &server.ToolAnnotations{ReadOnlyHint: &yes},
		Execution:   &server.ToolExecution{TaskSupport: "optional"},
		Meta:        server.Meta{"example.com/team": "weather"},
	}, forecast))
	toolsStart(h)
	assert.JSONEq(t, `{
		"name": "forecast",
		"title": "Forecast",
		"description": "Daily highs.",
		"icons": [{"src": "https://example.com/sun.png", "mimeType": "image/png"}],
		"inputSchema": `+forecastInSchema+`,
		"outputSchema": `+forecastOutSchema+`,
		"annotations": {"readOnlyHint": true},
		"execution": {"taskSupport": "optional"},
		"_meta": {"example.com/team": "weather"}
	}`, string(listedTool(h, 2, "forecast")))
	toolsStop(h)
}

func TestTypedToolInferredSchemas(t *testing.T) {
	type described struct {
		Query string `json:"query" jsonschema:"what to look for"`
		Limit *int   `json:"limit,omitzero"`
	}
	tests := []struct {
		name   string
		add    func(*server.Server) error
		input  string
		output string // "" when none is declared
	}{
		{
			name: "no arguments",
			add: func(s *server.Server) error {
				return server.AddTypedTool(s, server.Tool{Name: "t"}, func(context.Context, *server.CallToolRequest, struct{}) (string, error) {
					return "", nil
				})
			},
			input: `{"type":"object","additionalProperties":false}`,
		},
		{
			name: "pointer to struct, description tag, omitzero",
			add: func(s *server.Server) error {
				return server.AddTypedTool(s, server.Tool{Name: "t"}, func(context.Context, *server.CallToolRequest, *described) (*described, error) {
					return nil, nil
				})
			},
			input:  `{"type":"object","properties":{"query":{"type":"string","description":"what to look for"},"limit":{"type":["null","integer"]}},"required":["query"],"additionalProperties":false}`,
			output: `{"type":"object","properties":{"query":{"type":"string","description":"what to look for"},"limit":{"type":["null","integer"]}},"required":["query"],"additionalProperties":false}`,
		},
		{
			name: "map input, JSON output",
			add: func(s *server.Server) error {
				return server.AddTypedTool(s, server.Tool{Name: "t"}, func(context.Context, *server.CallToolRequest, map[string]int) ([]int, error) {
					return nil, nil
				})
			},
			input: `{"type":"object","additionalProperties":{"type":"integer"}}`,
		},
		{
			name: "explicit schemas are listed as given",
			add: func(s *server.Server) error {
				return server.AddTypedTool(s, server.Tool{
					Name:         "t",
					InputSchema:  json.RawMessage(`{"type":"object","properties":{"unit":{"enum":["C","F"]}}}`),
					OutputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer","minimum":0}}}`),
				}, func(context.Context, *server.CallToolRequest, map[string]any) (*server.CallToolResult, error) {
					return nil, nil
				})
			},
			input:  `{"type":"object","properties":{"unit":{"enum":["C","F"]}}}`,
			output: `{"type":"object","properties":{"n":{"type":"integer","minimum":0}}}`,
		},
		{
			name: "CallToolResult output declares nothing",
			add: func(s *server.Server) error {
				return server.AddTypedTool(s, server.Tool{Name: "t"}, func(context.Context, *server.CallToolRequest, struct{}) (*server.CallToolResult, error) {
					return nil, nil
				})
			},
			input: `{"type":"object","additionalProperties":false}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			testkit.Watchdog(t)
			h := newHarness(t)
			require.NoError(t, tt.add(h.srv))
			toolsStart(h)
			var tool struct {
				InputSchema  json.RawMessage `json:"inputSchema"`
				OutputSchema json.RawMessage `json:"outputSchema"`
			}
			require.NoError(t, json.Unmarshal(listedTool(h, 2, "t"), &tool))
			assert.Equal(t, tt.input, string(tool.InputSchema))
			assert.Equal(t, tt.output, string(tool.OutputSchema))
			toolsStop(h)
		})
	}
}

func TestAddTypedToolErrors(t *testing.T) {
	noop := func(context.Context, *server.CallToolRequest, struct{}) (string, error) { return "", nil }
	tests := []struct {
		name string
		add  func(*server.Server) error
		want string
	}{
		{
			name: "invalid name",
			add:  func(s *server.Server) error { return server.AddTypedTool(s, server.Tool{Name: "get weather"}, noop) },
			want: `mcp: invalid tool name "get weather": use 1-128 characters from [A-Za-z0-9_.-]`,
		},
		{
			name: "nil handler",
			add: func(s *server.Server) error {
				return server.AddTypedTool[struct{}, string](s, server.Tool{Name: "t"}, nil)
			},
			want: `mcp: tool "t": nil handler`,
		},
		{
			name: "string input",
			add: func(s *server.Server) error {
				return server.AddTypedTool(s, server.Tool{Name: "t"}, func(context.Context, *server.CallToolRequest, string) (string, error) {
					return "", nil
				})
			},
			want: `mcp: tool "t": input: string is not a struct or map, so its JSON form is not an object`,
		},
		{
			name: "any input without a schema",
			add: func(s *server.Server) error {
				return server.AddTypedTool(s, server.Tool{Name: "t"}, func(context.Context, *server.CallToolRequest, any) (string, error) {
					return "", nil
				})
			},
			want: `mcp: tool "t": input: interface {} is not a struct or map, so its JSON form is not an object`,
		},
		{
			name: "slice input with a schema",
			add: func(s *server.Server) error {
				return server.AddTypedTool(s, server.Tool{Name: "t", InputSchema: json.RawMessage(`{"type":"object"}`)},
					func(context.Context, *server.CallToolRequest, []int) (string, error) { return "", nil })
			},
			want: `mcp: tool "t": input: []int cannot hold a JSON object: use a struct, a map or any`,
		},
		{
			name: "uninferable input field",
			add: func(s *server.Server) error {
				return server.AddTypedTool(s, server.Tool{Name: "t"}, func(context.Context, *server.CallToolRequest, struct{ C chan int }) (string, error) {
					return "", nil
				})
			},
			want: `mcp: tool "t": input: ForType(struct { C chan int }): type chan int is unsupported by jsonschema`,
		},
		{
			name: "explicit input schema not an object schema",
			add: func(s *server.Server) error {
				return server.AddTypedTool(s, server.Tool{Name: "t", InputSchema: json.RawMessage(`{"type":"string"}`)}, noop)
			},
			want: `mcp: tool "t": input: schema must have "type": "object"`,
		},
		{
			name: "explicit input schema not JSON Schema",
			add: func(s *server.Server) error {
				return server.AddTypedTool(s, server.Tool{Name: "t", InputSchema: json.RawMessage(`{"type":"object","required":"a"}`)}, noop)
			},
			want: `mcp: tool "t": input: invalid JSON Schema: json: cannot unmarshal string into Go struct field .schemaWithoutMethods.required of type []string`,
		},
		{
			name: "explicit input schema with a bad pattern",
			add: func(s *server.Server) error {
				return server.AddTypedTool(s, server.Tool{Name: "t", InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"pattern":"("}}}`)}, noop)
			},
			want: "mcp: tool \"t\": input: invalid JSON Schema: jsonschema.Schema: <anonymous schema>: pattern: error parsing regexp: missing closing ): `(`",
		},
		{
			name: "unsupported dialect",
			add: func(s *server.Server) error {
				return server.AddTypedTool(s, server.Tool{Name: "t", InputSchema: json.RawMessage(`{"$schema":"http://json-schema.org/draft-04/schema#","type":"object"}`)}, noop)
			},
			want: `mcp: tool "t": input: unsupported $schema "http://json-schema.org/draft-04/schema#": use draft 2020-12 (the default) or draft-07`,
		},
		{
			name: "output schema for a string result",
			add: func(s *server.Server) error {
				return server.AddTypedTool(s, server.Tool{Name: "t", OutputSchema: json.RawMessage(`{"type":"object"}`)}, noop)
			},
			want: `mcp: tool "t": output: an output schema needs a struct or *CallToolResult result, not string`,
		},
		{
			name: "struct output that is not an object",
			add: func(s *server.Server) error {
				return server.AddTypedTool(s, server.Tool{Name: "t"}, func(context.Context, *server.CallToolRequest, struct{}) (time.Time, error) {
					return time.Time{}, nil
				})
			},
			want: `mcp: tool "t": output: time.Time does not encode as a JSON object: its schema is {"type":"string"}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := server.New()
			err := tt.add(s)
			if tt.want == "" {
				require.NoError(t, err)
				return
			}
			require.EqualError(t, err, tt.want)
			assert.Empty(t, s.ToolNames())
		})
	}
}

// toolCall sends tools/call with raw arguments and returns the raw
// result.
func toolCall(h *harness, id int64, name, args string) string {
	h.SendCallTool(id, name, args)
	return string(h.RecvResult(id))
}

func TestTypedToolInvalidArguments(t *testing.T) {
	tests := []struct {
		name string
		args string
		want string
	}{
		{
			name: "wrong type",
			args: `{"city":5,"where":{"lat":1,"lon":2}}`,
			want: `invalid arguments for tool "forecast": /city: type: 5 has type "number", want "string"`,
		},
		{
			name: "missing required",
			args: `{"where":{"lat":1,"lon":2}}`,
			want: `invalid arguments for tool "forecast": required: missing property "city"`,
		},
		{
			name: "no arguments at all",
			args: `null`,
			want: `invalid arguments for tool "forecast": required: missing properties "city", "where"`,
		},
		{
			name: "additional property",
			args: `{"city":"Oslo","where":{"lat":1,"lon":2},"verbose":true}`,
			want: `invalid arguments for tool "forecast": additionalProperties: unexpected property "verbose"`,
		},
		{
			name: "name differing only in case",
			args: `{"City":"Oslo","city":"Oslo","where":{"lat":1,"lon":2}}`,
			want: `invalid arguments for tool "forecast": additionalProperties: unexpected property "City"`,
		},
		{
			name: "nested wrong type",
			args: `{"city":"Oslo","where":{"lat":"north","lon":2}}`,
			want: `invalid arguments for tool "forecast": /where/lat: type: "north" has type "string", want "number"`,
		},
		{
			name: "fraction for an integer",
			args: `{"city":"Oslo","where":{"lat":1,"lon":2},"days":1.5}`,
			want: `invalid arguments for tool "forecast": /days: type: 1.5 has type "number", want "integer"`,
		},
		{
			name: "valid by the schema, too big for Go",
			args: `{"city":"Oslo","where":{"lat":1,"lon":2},"days":1e30}`,
			want: `invalid arguments for tool "forecast": json: cannot unmarshal number 1e30 into Go struct field forecastIn.days of type int`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			testkit.Watchdog(t)
			h := newHarness(t)
			var called atomic.Int64
			require.NoError(t, server.AddTypedTool(h.srv, server.Tool{Name: "forecast"},
				func(ctx context.Context, req *server.CallToolRequest, in forecastIn) (forecastOut, error) {
					called.Add(1)
					return forecast(ctx, req, in)
				}))
			toolsStart(h)
			text, isError := toolText(t, rawJSON(toolCall(h, 2, "forecast", tt.args)))
			assert.True(t, isError)
			assert.Equal(t, tt.want, text)
			assert.Zero(t, called.Load())
			// The session still serves, and valid arguments reach the handler.
			text, isError = toolText(t, rawJSON(toolCall(h, 3, "forecast", `{"city":"Oslo","where":{"lat":1,"lon":2}}`)))
			assert.False(t, isError)
			assert.JSONEq(t, `{"city":"Oslo","highs":[20]}`, text)
			assert.Equal(t, int64(1), called.Load())
			toolsStop(h)
		})
	}
}

func TestTypedToolExplicitInputSchema(t *testing.T) {
	testkit.Watchdog(t)
	h := newHarness(t)
	var got atomic.Value
	require.NoError(t, server.AddTypedTool(h.srv, server.Tool{
		Name:        "convert",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"unit":{"enum":["C","F"]},"value":{"type":"number"}},"required":["unit","value"]}`),
	}, func(_ context.Context, _ *server.CallToolRequest, in any) (string, error) {
		got.Store(in)
		return "ok", nil
	}))
	toolsStart(h)
	text, isError := toolText(t, rawJSON(toolCall(h, 2, "convert", `{"unit":"K","value":3}`)))
	assert.True(t, isError)
	assert.Equal(t, `invalid arguments for tool "convert": /unit: enum: "K" is not one of ["C","F"]`, text)
	assert.Nil(t, got.Load())

	text, isError = toolText(t, rawJSON(toolCall(h, 3, "convert", `{"unit":"C","value":3,"extra":true}`)))
	assert.False(t, isError)
	assert.Equal(t, "ok", text)
	assert.Equal(t, map[string]any{"unit": "C", "value": 3.0, "extra": true}, got.Load())
	toolsStop(h)
}

func TestTypedToolStructuredResult(t *testing.T) {
	testkit.Watchdog(t)
	h := newHarness(t)
	var gotName string
	var gotArgs json.RawMessage
	require.NoError(t, server.AddTypedTool(h.srv, server.Tool{Name: "forecast"},
		func(ctx context.Context, req *server.CallToolRequest, in forecastIn) (*forecastOut, error) {
			gotName, gotArgs = req.Name, req.Arguments
			out, err := forecast(ctx, req, in)
			return &out, err
		}))
	toolsStart(h)
	args := `{"city":"Oslo","days":2,"where":{"lat":59.9,"lon":10.7},"near":{"lat":1,"lon":2},"tags":["x"],"labels":{"k":"v"}}`
	assert.JSONEq(t,
		`{"content":[{"type":"text","text":"{\"city\":\"Oslo\",\"highs\":[20,21]}"}],"structuredContent":{"city":"Oslo","highs":[20,21]}}`,
		toolCall(h, 2, "forecast", args))
	assert.Equal(t, "forecast", gotName)
	assert.JSONEq(t, args, string(gotArgs))
	toolsStop(h)
}

func TestTypedToolOutputViolatesSchema(t *testing.T) {
	type withMap struct {
		Counts map[string]int `json:"counts"` // nil encodes as null, which the schema refuses
	}
	tests := []struct {
		name string
		add  func(*server.Server) error
	}{
		{
			name: "nil map in a required field",
			add: func(s *server.Server) error {
				return server.AddTypedTool(s, server.Tool{Name: "t"}, func(context.Context, *server.CallToolRequest, struct{}) (withMap, error) {
					return withMap{}, nil
				})
			},
		},
		{
			name: "nil pointer",
			add: func(s *server.Server) error {
				return server.AddTypedTool(s, server.Tool{Name: "t"}, func(context.Context, *server.CallToolRequest, struct{}) (*forecastOut, error) {
					return nil, nil
				})
			},
		},
		{
			name: "explicit output schema",
			add: func(s *server.Server) error {
				return server.AddTypedTool(s, server.Tool{Name: "t", OutputSchema: json.RawMessage(`{"type":"object","properties":{"highs":{"type":"array","maxItems":1}}}`)},
					func(context.Context, *server.CallToolRequest, struct{}) (forecastOut, error) {
						return forecastOut{Highs: []float64{1, 2}}, nil
					})
			},
		},
		{
			name: "result without structured content",
			add: func(s *server.Server) error {
				return server.AddTypedTool(s, server.Tool{Name: "t", OutputSchema: json.RawMessage(`{"type":"object"}`)},
					func(context.Context, *server.CallToolRequest, struct{}) (*server.CallToolResult, error) {
						return server.Text("no structure"), nil
					})
			},
		},
		{
			name: "nonconforming structured content in a result",
			add: func(s *server.Server) error {
				return server.AddTypedTool(s, server.Tool{Name: "t", OutputSchema: json.RawMessage(`{"type":"object","required":["n"]}`)},
					func(context.Context, *server.CallToolRequest, struct{}) (*server.CallToolResult, error) {
						return &server.CallToolResult{StructuredContent: map[string]int{"m": 1}}, nil
					})
			},
		},
		{
			name: "unencodable value",
			add: func(s *server.Server) error {
				return server.AddTypedTool(s, server.Tool{Name: "t"}, func(context.Context, *server.CallToolRequest, struct{}) (any, error) {
					return func() {}, nil
				})
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			testkit.Watchdog(t)
			h := newHarness(t)
			require.NoError(t, tt.add(h.srv))
			toolsStart(h)
			h.SendCallTool(2, "t", `{}`)
			resp := h.RecvResponse()
			require.NotNil(t, resp.Error, "result: %s", resp.Result)
			assert.Equal(t, &transport.Error{Code: int64(protocol.CodeInternal), Message: "internal error"}, resp.Error)
			assert.Equal(t, 1, h.logs.count(slog.LevelError))
			h.Request(3, "ping", nil)
			h.RecvResult(3)
			toolsStop(h)
		})
	}
}

func TestTypedToolCallToolResultOut(t *testing.T) {
	testkit.Watchdog(t)
	h := newHarness(t)
	require.NoError(t, server.AddTypedTool(h.srv, server.Tool{Name: "free"},
		func(_ context.Context, _ *server.CallToolRequest, in struct {
			Fail bool `json:"fail"`
		},
		) (*server.CallToolResult, error) {
			if in.Fail {
				return &server.CallToolResult{Content: []server.Content{&server.TextContent{Text: "no"}}, IsError: true}, nil
			}
			return &server.CallToolResult{
				Content:           []server.Content{&server.ImageContent{Data: []byte{1, 2}, MIMEType: "image/png"}},
				StructuredContent: map[string]int{"n": 1},
				Meta:              server.Meta{"k": "v"},
			}, nil
		}))
	require.NoError(t, server.AddTypedTool(h.srv, server.Tool{Name: "declared", OutputSchema: json.RawMessage(`{"type":"object","required":["n"]}`)},
		func(_ context.Context, _ *server.CallToolRequest, in struct {
			Fail bool `json:"fail"`
		},
		) (*server.CallToolResult, error) {
			if in.Fail {
				return &server.CallToolResult{Content: []server.Content{&server.TextContent{Text: "failed"}}, IsError: true}, nil
			}
			return &server.CallToolResult{Content: []server.Content{}, StructuredContent: map[string]int{"n": 1}}, nil
		}))
	toolsStart(h)
	assert.JSONEq(t, `{"content":[{"type":"image","data":"AQI=","mimeType":"image/png"}],"structuredContent":{"n":1},"_meta":{"k":"v"}}`,
		toolCall(h, 2, "free", `{"fail":false}`))
	assert.JSONEq(t, `{"content":[{"type":"text","text":"no"}],"isError":true}`, toolCall(h, 3, "free", `{"fail":true}`))
	assert.JSONEq(t, `{"content":[],"structuredContent":{"n":1}}`, toolCall(h, 4, "declared", `{"fail":false}`))
	// An error result need not conform to the output schema.
	assert.JSONEq(t, `{"content":[{"type":"text","text":"failed"}],"isError":true}`, toolCall(h, 5, "declared", `{"fail":true}`))
	assert.Zero(t, h.logs.count(slog.LevelError))
	toolsStop(h)
}

func TestTypedToolOtherOutputs(t *testing.T) {
	type label string
	tests := []struct {
		name string
		add  func(*server.Server) error
		want string
	}{
		{
			name: "string is text",
			add: func(s *server.Server) error {
				return server.AddTypedTool(s, server.Tool{Name: "t"}, func(context.Context, *server.CallToolRequest, struct{}) (string, error) {
					return "plain \"text\"", nil
				})
			},
			want: `{"content":[{"type":"text","text":"plain \"text\""}]}`,
		},
		{
			name: "named string type is text",
			add: func(s *server.Server) error {
				return server.AddTypedTool(s, server.Tool{Name: "t"}, func(context.Context, *server.CallToolRequest, struct{}) (label, error) {
					return "hot", nil
				})
			},
			want: `{"content":[{"type":"text","text":"hot"}]}`,
		},
		{
			name: "slice is JSON text",
			add: func(s *server.Server) error {
				return server.AddTypedTool(s, server.Tool{Name: "t"}, func(context.Context, *server.CallToolRequest, struct{}) ([]int, error) {
					return []int{1, 2}, nil
				})
			},
			want: `{"content":[{"type":"text","text":"[1,2]"}]}`,
		},
		{
			name: "map is JSON text",
			add: func(s *server.Server) error {
				return server.AddTypedTool(s, server.Tool{Name: "t"}, func(context.Context, *server.CallToolRequest, struct{}) (map[string]bool, error) {
					return map[string]bool{"ok": true}, nil
				})
			},
			want: `{"content":[{"type":"text","text":"{\"ok\":true}"}]}`,
		},
		{
			name: "any holding a string is JSON text",
			add: func(s *server.Server) error {
				return server.AddTypedTool(s, server.Tool{Name: "t"}, func(context.Context, *server.CallToolRequest, struct{}) (any, error) {
					return "s", nil
				})
			},
			want: `{"content":[{"type":"text","text":"\"s\""}]}`,
		},
		{
			name: "empty struct is an empty object",
			add: func(s *server.Server) error {
				return server.AddTypedTool(s, server.Tool{Name: "t"}, func(context.Context, *server.CallToolRequest, struct{}) (struct{}, error) {
					return struct{}{}, nil
				})
			},
			want: `{"content":[{"type":"text","text":"{}"}],"structuredContent":{}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			testkit.Watchdog(t)
			h := newHarness(t)
			require.NoError(t, tt.add(h.srv))
			toolsStart(h)
			assert.Equal(t, tt.want, toolCall(h, 2, "t", `{}`))
			toolsStop(h)
		})
	}
}

func TestTypedToolHandlerErrors(t *testing.T) {
	testkit.Watchdog(t)
	h := newHarness(t)
	require.NoError(t, server.AddTypedTool(h.srv, server.Tool{Name: "fail"},
		func(_ context.Context, _ *server.CallToolRequest, in struct {
			Protocol bool `json:"protocol"`
		},
		) (forecastOut, error) {
			if in.Protocol {
				return forecastOut{City: "ignored"}, server.Errorf(protocol.CodeInvalidParams, "no such city")
			}
			return forecastOut{City: "ignored"}, errors.New("weather service unavailable")
		}))
	toolsStart(h)
	assert.JSONEq(t, `{"content":[{"type":"text","text":"weather service unavailable"}],"isError":true}`,
		toolCall(h, 2, "fail", `{"protocol":false}`))
	h.SendCallTool(3, "fail", `{"protocol":true}`)
	resp := h.RecvResponse()
	assert.Equal(t, &transport.Error{Code: int64(protocol.CodeInvalidParams), Message: "no such city"}, resp.Error)
	toolsStop(h)
}

// The schemas are inferred and resolved once, at registration: a call
// costs far fewer allocations than compiling them does. The bound is
// measured, not guessed: half of what registering the typed tool costs
// beyond registering a raw tool with the same input schema.
func TestTypedToolSchemasCompiledOnce(t *testing.T) {
	testkit.Watchdog(t)
	register := func(s *server.Server) error {
		return server.AddTypedTool(s, server.Tool{Name: "forecast"}, forecast)
	}
	registerRaw := func(s *server.Server) error {
		return s.AddTool(server.Tool{Name: "forecast", InputSchema: json.RawMessage(forecastInSchema)},
			func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
				return server.Text("x"), nil
			})
	}
	compile := testing.AllocsPerRun(20, func() { require.NoError(t, register(server.New())) }) -
		testing.AllocsPerRun(20, func() { require.NoError(t, registerRaw(server.New())) })

	perCall := func(register func(*server.Server) error) float64 {
		h := newHarness(t)
		require.NoError(t, register(h.srv))
		toolsStart(h)
		ctx := context.Background()
		frame := []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"forecast","arguments":{"city":"Oslo","where":{"lat":1,"lon":2}}}}`)
		client, ok := h.Conn().(*memory.Conn)
		require.True(t, ok)
		n := testing.AllocsPerRun(50, func() {
			require.NoError(t, client.WriteFrame(ctx, frame))
			_, err := client.Read(ctx)
			require.NoError(t, err)
		})
		toolsStop(h)
		return n
	}
	typed, raw := perCall(register), perCall(registerRaw)
	t.Logf("compile: %.0f allocs; call: typed %.0f, raw %.0f", compile, typed, raw)
	require.Greater(t, compile, 0.0)
	assert.Less(t, typed-raw, compile/2)
}

func TestTypedToolPointerInput(t *testing.T) {
	type opts struct {
		Verbose bool `json:"verbose,omitempty"`
	}
	testkit.Watchdog(t)
	h := newHarness(t)
	require.NoError(t, server.AddTypedTool(h.srv, server.Tool{Name: "t"},
		func(_ context.Context, _ *server.CallToolRequest, in *opts) (string, error) {
			if in == nil {
				return "nil", nil
			}
			if in.Verbose {
				return "verbose", nil
			}
			return "quiet", nil
		}))
	toolsStart(h)
	assert.JSONEq(t, `{"content":[{"type":"text","text":"quiet"}]}`, toolCall(h, 2, "t", `null`))
	assert.JSONEq(t, `{"content":[{"type":"text","text":"verbose"}]}`, toolCall(h, 3, "t", `{"verbose":true}`))
	toolsStop(h)
}
