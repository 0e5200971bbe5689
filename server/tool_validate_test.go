package server_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/serverhook"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// sleepSchema is cmd/vigil's sleep tool's input schema, written by hand.
const sleepSchema = `{"type":"object","properties":{"ms":{"type":"integer","minimum":0,"description":"how long to wait"}},"required":["ms"],"additionalProperties":false}`

// argsProbe registers tools whose handlers count their calls, and sees, for
// each tools/call, whether its outcome refused the arguments.
type argsProbe struct {
	calls   atomic.Int64
	refused chan bool // Outcome.InvalidArguments of each tools/call, in order
}

func newArgsProbe() *argsProbe { return &argsProbe{refused: make(chan bool, 64)} }

func (p *argsProbe) middleware(next server.Handler) server.Handler {
	return func(ctx context.Context, req *server.Request) (any, error) {
		if req.Method == "tools/call" {
			serverhook.Of[server.Outcome](ctx).AfterDone(func(out server.Outcome) { p.refused <- out.InvalidArguments() })
		}
		return next(ctx, req)
	}
}

func (p *argsProbe) handler(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
	p.calls.Add(1)
	return server.Text("slept"), nil
}

type sleepIn struct {
	MS int `json:"ms"`
}

// call sends a tools/call of name with raw arguments (absent when args is
// empty) in the given era and returns the result's text and isError.
func call(h *harness, era string, id int64, name, args string) (string, bool) {
	params := map[string]any{"name": name}
	if args != "" {
		params["arguments"] = json.RawMessage(args)
	}
	if era == "2026-07-28" {
		h.v2(id, "tools/call", nil, params)
	} else {
		h.Request(id, "tools/call", params)
	}
	return toolText(h.t, h.RecvResult(id))
}

// Every tool's arguments are validated against its input schema before its
// handler runs, raw tools (hand-written schema) and typed tools (inferred),
// in a 2025 session and in 2026-07-28 requests: a failure is a tool error
// naming the member (its JSON Pointer in the arguments) and the keyword,
// the handler is not called, and the outcome says the arguments were
// refused.
func TestToolArgumentsValidated(t *testing.T) {
	tests := []struct {
		name, args, want string
		rawOnly          bool // the inferred schema has no minimum
	}{
		{"extra member", `{"ms":10,"pad":"xx"}`, `additionalProperties: unexpected property "pad"`, false},
		{"wrong type", `{"ms":"10"}`, `/ms: type: "10" has type "string", want "integer"`, false},
		{"fraction for an integer", `{"ms":1.5}`, `/ms: type: 1.5 has type "number", want "integer"`, false},
		{"null for an integer", `{"ms":null}`, `/ms: type: null has type "null", want "integer"`, false},
		{"below the minimum", `{"ms":-1}`, `/ms: minimum: -1 is less than 0`, true},
		{"missing required member", `{}`, `required: missing property "ms"`, false},
		{"null arguments, validated as {}", `null`, `required: missing property "ms"`, false},
		{"absent arguments, validated as {}", ``, `required: missing property "ms"`, false},
	}
	for _, era := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(era, func(t *testing.T) {
			p := newArgsProbe()
			h := newHarness(t, server.WithMiddleware(p.middleware))
			require.NoError(t, h.srv.AddTool(server.Tool{Name: "sleep", InputSchema: json.RawMessage(sleepSchema)}, p.handler))
			require.NoError(t, server.AddTypedTool(h.srv, server.Tool{Name: "typed_sleep"},
				func(ctx context.Context, req *server.CallToolRequest, _ sleepIn) (string, error) {
					_, err := p.handler(ctx, req)
					return "slept", err
				}))
			h.start()
			if era == "2025-11-25" {
				h.Initialize(protocol.Version20251125, nil)
			}
			id := int64(10)
			for _, tool := range []string{"sleep", "typed_sleep"} {
				for _, tt := range tests {
					if tt.rawOnly && tool != "sleep" {
						continue
					}
					id++
					text, isError := call(h, era, id, tool, tt.args)
					assert.True(t, isError, "%s %s", tool, tt.name)
					assert.Equal(t, `invalid arguments for tool "`+tool+`": `+tt.want, text, "%s %s", tool, tt.name)
					assert.True(t, <-p.refused, "%s %s: Outcome.InvalidArguments", tool, tt.name)
				}
				id++
				text, isError := call(h, era, id, tool, `{"ms":5}`)
				assert.False(t, isError)
				assert.Equal(t, "slept", text)
				assert.False(t, <-p.refused)
			}
			assert.Equal(t, int64(2), p.calls.Load(), "only the valid calls reached the handlers")
			toolsStop(h)
		})
	}
}

// Arguments that are not an object are refused as before, as invalid
// params, whatever the schema.
func TestToolArgumentsNotAnObject(t *testing.T) {
	p := newArgsProbe()
	h := newHarness(t)
	require.NoError(t, h.srv.AddTool(server.Tool{Name: "sleep", InputSchema: json.RawMessage(sleepSchema)}, p.handler))
	toolsStart(h)
	for i, args := range []string{`[1]`, `"ms"`, `7`} {
		id := int64(2 + i)
		h.Request(id, "tools/call", map[string]any{"name": "sleep", "arguments": json.RawMessage(args)})
		assert.Equal(t, int64(protocol.CodeInvalidParams), h.RecvError(id).Code, args)
	}
	assert.Zero(t, p.calls.Load())
	toolsStop(h)
}

// The text of the tool error is bounded: it quotes the client's value,
// which is not echoed back whole, but cut (on a character boundary, and
// saying so) to leave room for the rule it broke.
func TestToolArgumentsErrorBounded(t *testing.T) {
	p := newArgsProbe()
	h := newHarness(t)
	require.NoError(t, h.srv.AddTool(server.Tool{Name: "sleep", InputSchema: json.RawMessage(sleepSchema)}, p.handler))
	toolsStart(h)
	big := strings.Repeat("é", 1<<19) // 1 MiB
	text, isError := call(h, "2025-11-25", 2, "sleep", `{"ms":"`+big+`"}`)
	assert.True(t, isError)
	assert.LessOrEqual(t, len(text), 512)
	assert.Equal(t, `invalid arguments for tool "sleep": /ms: type: "`+strings.Repeat("é", 30)+`… has type "string", want "integer"`, text)
	assert.Zero(t, p.calls.Load())
	toolsStop(h)
}

// A schema that constrains nothing lets every object through, and an
// input schema that cannot be compiled, or that breaks the meta-schema of
// its draft, fails the registration, with the reason, instead of
// validating nothing (or loosely).
func TestToolInputSchemaCompiledAtRegistration(t *testing.T) {
	srv := server.New()
	for _, tt := range []struct{ schema, want string }{
		{`{"type":"string"}`, `mcp: tool "t": input schema: schema must have "type": "object"`},
		{`{"properties":{}}`, `mcp: tool "t": input schema: schema must have "type": "object"`},
		{`{"type":"object","properties":{"x":{"$ref":"#/$defs/missing"}}}`, `mcp: tool "t": input schema: invalid JSON Schema: `},
		{`{"type":"object","properties":{"x":{"type":"integer","pattern":"("}}}`, `mcp: tool "t": input schema: invalid JSON Schema: `},
		{`{"type":"object","$schema":"http://json-schema.org/draft-04/schema#"}`, `mcp: tool "t": input schema: unsupported $schema`},
		// the meta-schema's verdict, named as arguments' are
		{`{"type":"object","properties":{"a":{"type":"strin"}}}`, `mcp: tool "t": input schema: invalid JSON Schema: it breaks the JSON Schema meta-schema: /properties/a/type: anyOf: "strin" matches none of the 2 alternatives`},
		{`{"type":"object","required":["a","a"]}`, `mcp: tool "t": input schema: invalid JSON Schema: it breaks the JSON Schema meta-schema: /required: uniqueItems: items 0 and 1 are equal`},
		{`{"type":"object","properties":{"a":{"minLength":-1}}}`, `mcp: tool "t": input schema: invalid JSON Schema: it breaks the JSON Schema meta-schema: /properties/a/minLength: minimum: -1 is less than 0`},
		{`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"a":{"multipleOf":0}}}`, `mcp: tool "t": input schema: invalid JSON Schema: it breaks the JSON Schema meta-schema: /properties/a/multipleOf: exclusiveMinimum: 0 is not greater than 0`},
	} {
		err := srv.AddTool(server.Tool{Name: "t", InputSchema: json.RawMessage(tt.schema)}, newArgsProbe().handler)
		require.Error(t, err, tt.schema)
		assert.True(t, strings.HasPrefix(err.Error(), tt.want), "%s: %v", tt.schema, err)
	}
	assert.Empty(t, srv.ToolNames())

	p := newArgsProbe()
	h := newHarness(t)
	require.NoError(t, h.srv.AddTool(server.Tool{Name: "free"}, p.handler))
	require.NoError(t, h.srv.AddTool(server.Tool{Name: "described", InputSchema: json.RawMessage(`{"type":"object","description":"anything"}`)}, p.handler))
	toolsStart(h)
	for i, tool := range []string{"free", "described"} {
		text, isError := call(h, "2025-11-25", int64(2+i), tool, `{"anything":[1,{"x":null}]}`)
		assert.False(t, isError, tool)
		assert.Equal(t, "slept", text)
	}
	assert.Equal(t, int64(2), p.calls.Load())
	toolsStop(h)
}

// A tool registered with UncheckedArguments keeps an input schema the
// server cannot compile, listed as it is, and its handler gets every
// object of arguments.
func TestToolUncheckedArguments(t *testing.T) {
	const draft04 = `{"type":"object","$schema":"http://json-schema.org/draft-04/schema#","properties":{"n":{"type":"integer"}},"required":["n"]}`
	p := newArgsProbe()
	h := newHarness(t)
	require.Error(t, h.srv.AddTool(server.Tool{Name: "old", InputSchema: json.RawMessage(draft04)}, p.handler))
	require.NoError(t, h.srv.AddTool(server.Tool{Name: "old", InputSchema: json.RawMessage(draft04), UncheckedArguments: true}, p.handler))
	toolsStart(h)
	h.Request(2, "tools/list", nil)
	assert.Contains(t, string(h.RecvResult(2)), `"$schema":"http://json-schema.org/draft-04/schema#"`)
	text, isError := call(h, "2025-11-25", 3, "old", `{"n":"not a number"}`)
	assert.False(t, isError)
	assert.Equal(t, "slept", text)
	assert.Equal(t, int64(1), p.calls.Load())
	toolsStop(h)
}

// A call run as a task is validated too, once, before the handler: in
// 2025 the task fails with the tool error (tasks/result answers it); in the
// 2026-07-28 extension the task completes with it; a deferred tool answers
// it at once, as a plain call.
func TestToolArgumentsValidatedInTasks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newArgsProbe()
		h := newHarness(t)
		tool := taskTool("sleep", server.TaskSupportOptional)
		tool.InputSchema = json.RawMessage(sleepSchema)
		require.NoError(t, h.srv.AddTool(tool, p.handler))
		tool.Name, tool.Execution = "deferred", &server.ToolExecution{TaskSupport: server.TaskSupportOptional, Deferred: true}
		require.NoError(t, h.srv.AddTool(tool, p.handler))
		first := h.start()
		h.Initialize(protocol.Version20251125, nil)
		const want = `invalid arguments for tool "sleep": additionalProperties: unexpected property "pad"`
		bad := json.RawMessage(`{"ms":10,"pad":"xx"}`)

		h.Request(2, "tools/call", map[string]any{"name": "sleep", "arguments": bad, "task": map[string]any{}})
		created, _ := h.resultOf(2)
		id := decodeTask(t, created).Task.TaskID
		synctest.Wait()
		h.Request(3, "tasks/result", map[string]any{"taskId": id})
		result, _ := h.resultOf(3)
		text, isError := toolText(t, result)
		assert.True(t, isError)
		assert.Equal(t, want, text)
		h.Request(4, "tasks/get", map[string]any{"taskId": id})
		got, _ := h.resultOf(4)
		assert.Equal(t, "failed", decodeTask(t, got).Status)

		caps := extCaps(nil)
		h = h.second() // 2026-07-28 requests, without a session
		h.v2(5, "tools/call", caps, map[string]any{"name": "sleep", "arguments": bad})
		id = decodeTask(t, h.RecvResult(5)).TaskID
		synctest.Wait()
		h.v2(6, "tasks/get", caps, map[string]any{"taskId": id})
		got = h.RecvResult(6)
		assert.Equal(t, "completed", decodeTask(t, got).Status)
		text, isError = toolText(t, decodeTask(t, got).Result)
		assert.True(t, isError)
		assert.Equal(t, want, text)

		h.v2(7, "tools/call", caps, map[string]any{"name": "deferred", "arguments": bad})
		text, isError = toolText(t, h.RecvResult(7))
		assert.True(t, isError)
		assert.Equal(t, `invalid arguments for tool "deferred": additionalProperties: unexpected property "pad"`, text)

		assert.Zero(t, p.calls.Load(), "no handler ran")
		toolsStop(h)
		toolsStop(first)
		require.NoError(t, h.srv.Close())
	})
}
