package main

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/memory"
)

// demoSession serves the demo tools on an in-memory pipe, initialized by a
// client without capabilities, and returns the client's end.
func demoSession(t *testing.T) *memory.Conn {
	t.Helper()
	return demoSessionWith(t, `{}`)
}

// demoSessionWith is demoSession with the client capabilities caps (JSON).
func demoSessionWith(t *testing.T, caps string) *memory.Conn {
	t.Helper()
	client := demoServe(t)
	demoWrite(t, client, &transport.Request{
		ID: transport.Int64ID(0), Method: "initialize",
		Params: json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":` + caps + `,"clientInfo":{"name":"t","version":"1"}}`),
	})
	resp, ok := demoRead(t, client).(*transport.Response)
	require.True(t, ok)
	require.Nil(t, resp.Error)
	demoWrite(t, client, &transport.Request{Method: "notifications/initialized"})
	return client
}

// demoServe serves the demo tools on an in-memory pipe, not initialized
// (for 2026-07-28 stateless requests), and returns the client's end.
func demoServe(t *testing.T) *memory.Conn {
	t.Helper()
	timer := time.AfterFunc(60*time.Second, func() { panic(t.Name() + ": hung for 60s") })
	t.Cleanup(func() { timer.Stop() })
	srv := server.New()
	require.NoError(t, addDemoTools(srv, nil))
	client, conn := memory.NewPair()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(context.Background(), conn) }()
	t.Cleanup(func() {
		_ = client.Close()
		assert.NoError(t, <-served)
	})
	return client
}

func demoWrite(t *testing.T, c *memory.Conn, m transport.Message) {
	t.Helper()
	require.NoError(t, c.Write(t.Context(), m))
}

func demoRead(t *testing.T, c *memory.Conn) transport.Message {
	t.Helper()
	m, err := c.Read(t.Context())
	require.NoError(t, err)
	return m
}

// countdown reports progress i of from at every step, with the count left
// as the message, in order, then returns "liftoff".
func TestCountdownReportsEveryStep(t *testing.T) {
	client := demoSession(t)
	demoWrite(t, client, &transport.Request{
		ID: transport.Int64ID(1), Method: "tools/call",
		Params: json.RawMessage(`{"name":"countdown","arguments":{"from":5},"_meta":{"progressToken":"launch"}}`),
	})
	for i := 1; i <= 5; i++ {
		n, ok := demoRead(t, client).(*transport.Request)
		require.True(t, ok, "progress %d", i)
		assert.Equal(t, "notifications/progress", n.Method)
		assert.JSONEq(t, `{"progressToken":"launch","progress":`+strconv.Itoa(i)+`,"total":5,"message":"`+strconv.Itoa(5-i)+` left"}`, string(n.Params))
	}
	resp, ok := demoRead(t, client).(*transport.Response)
	require.True(t, ok)
	assert.Equal(t, transport.Int64ID(1), resp.ID)
	require.Nil(t, resp.Error)
	assert.JSONEq(t, `{"content":[{"type":"text","text":"liftoff"}]}`, string(resp.Result))
}

// countdown's arguments are validated against its schema before it runs:
// those outside it get a tool error naming the problem, and "from": 0
// lifts off at once.
func TestCountdownArguments(t *testing.T) {
	refused := func(problem string) string {
		text, _ := json.Marshal(`invalid arguments for tool "countdown": ` + problem)
		return `{"content":[{"type":"text","text":` + string(text) + `}],"isError":true}`
	}
	tests := []struct {
		name string
		args string
		want string
	}{
		{"zero", `{"from":0}`, `{"content":[{"type":"text","text":"liftoff"}]}`},
		{"above 100", `{"from":101}`, refused(`/from: maximum: 101 is greater than 100`)},
		{"negative", `{"from":-1}`, refused(`/from: minimum: -1 is less than 0`)},
		{"missing", `{}`, refused(`required: missing property "from"`)},
		{"not an integer", `{"from":1.5}`, refused(`/from: type: 1.5 has type "number", want "integer"`)},
		{"a string", `{"from":"3"}`, refused(`/from: type: "3" has type "string", want "integer"`)},
		{"an extra member", `{"from":3,"step":2}`, refused(`additionalProperties: unexpected property "step"`)},
	}
	client := demoSession(t)
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.JSONEq(t, tt.want, string(demoCall(t, client, int64(10+i), "countdown", tt.args)))
		})
	}
}

// echo returns its text argument, decoded: the arguments it reads in place
// must give what json.Unmarshal would. Anything else its schema refuses
// before it runs.
func TestEchoArguments(t *testing.T) {
	refused := func(problem string) string {
		text, _ := json.Marshal(`invalid arguments for tool "echo": ` + problem)
		return `{"content":[{"type":"text","text":` + string(text) + `}],"isError":true}`
	}
	tests := []struct {
		name string
		args string
		want string
	}{
		{"text", `{"text":"hello"}`, `{"content":[{"type":"text","text":"hello"}]}`},
		{"escapes", `{"text":"a\"b\u00e9\n"}`, `{"content":[{"type":"text","text":"a\"b\u00e9\n"}]}`},
		{"spaces", ` { "text" : "" } `, `{"content":[{"type":"text","text":""}]}`},
		{"an extra member", `{ "other" : [1, {"text":"no"}] , "text" : "" }`, refused(`additionalProperties: unexpected property "other"`)},
		{"repeated, last wins", `{"text":"first","text":"last"}`, `{"content":[{"type":"text","text":"last"}]}`},
		{"escaped name", `{"te\u0078t":"x"}`, `{"content":[{"type":"text","text":"x"}]}`},
		{"missing", `{}`, refused(`required: missing property "text"`)},
		{"null", `{"text":null}`, refused(`/text: type: null has type "null", want "string"`)},
		{"a number", `{"text":5}`, refused(`/text: type: 5 has type "number", want "string"`)},
		{"an object", `{"text":{"text":"x"}}`, refused(`/text: type: {"text":"x"} has type "object", want "string"`)},
	}
	client := demoSession(t)
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.JSONEq(t, tt.want, string(demoCall(t, client, int64(10+i), "echo", tt.args)))
		})
	}
}

// The demo tools are listed, by name, countdown with its input schema.
func TestDemoToolsListed(t *testing.T) {
	client := demoSession(t)
	demoWrite(t, client, &transport.Request{ID: transport.Int64ID(1), Method: "tools/list"})
	resp, ok := demoRead(t, client).(*transport.Response)
	require.True(t, ok)
	var res struct {
		Tools []struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"inputSchema"`
		} `json:"tools"`
	}
	require.NoError(t, json.Unmarshal(resp.Result, &res))
	names := make([]string, 0, len(res.Tools))
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		if tool.Name == "countdown" {
			assert.JSONEq(t, `{"type":"object","properties":{"from":{"type":"integer","minimum":0,"maximum":100,"description":"where to start counting down"}},"required":["from"],"additionalProperties":false}`, string(tool.InputSchema))
		}
	}
	assert.Equal(t, []string{"echo", "sleep", "countdown", "convert_temperature", "confirm_action"}, names, "in the order registered")
}
