package gateway_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/gateway"
	"github.com/vigil-mcp/vigil/internal/testkit"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/server/mcptest"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// TestCompletionForwarded: completion/complete of an upstream prompt's
// argument (prefixed name downstream) and of a template's variable is
// answered by the upstream, with the other arguments it was given.
func TestCompletionForwarded(t *testing.T) {
	u := startUpstream(t, "a")
	complete := func(_ context.Context, req *server.CompleteRequest) ([]string, error) {
		return []string{req.Ref.Type + " " + req.Ref.Name + req.Ref.URI + " " + req.Argument + "=" + req.Value + " dept=" + req.Context["dept"]}, nil
	}
	require.NoError(t, u.srv.AddPrompt(server.Prompt{Name: "team", Arguments: []server.PromptArgument{{Name: "dept"}, {Name: "lead", Complete: complete}}},
		func(context.Context, *server.GetPromptRequest) (*server.GetPromptResult, error) {
			return &server.GetPromptResult{}, nil
		}))
	require.NoError(t, u.srv.AddResourceTemplate(server.ResourceTemplate{
		URITemplate: "a://rooms/{room}{?floor*}", Name: "room",
		Complete: map[string]server.CompleteFunc{"room": complete},
	},
		func(context.Context, *server.ReadResourceRequest) (*server.ReadResourceResult, error) {
			return &server.ReadResourceResult{}, nil
		}))
	b := startUpstream(t, "b")
	c := front(t, gateway.Upstream{Name: "a", URL: u.url}, gateway.Upstream{Name: "b", URL: b.url})

	raw, rpcErr := c.Call("completion/complete", map[string]any{
		"ref":      map[string]string{"type": "ref/prompt", "name": "a_team"},
		"argument": map[string]string{"name": "lead", "value": "Al"}, "context": map[string]any{"arguments": map[string]string{"dept": "ops"}},
	})
	require.Nil(t, rpcErr)
	var res struct{ Completion struct{ Values []string } }
	require.NoError(t, json.Unmarshal(raw, &res))
	assert.Equal(t, []string{"ref/prompt team lead=Al dept=ops"}, res.Completion.Values, "asked upstream under the upstream's own name")

	raw, rpcErr = c.Call("completion/complete", map[string]any{
		"ref":      map[string]string{"type": "ref/resource", "uri": "a://rooms/{room}{?floor*}"},
		"argument": map[string]string{"name": "room", "value": "4"},
	})
	require.Nil(t, rpcErr)
	require.NoError(t, json.Unmarshal(raw, &res))
	assert.Equal(t, []string{"ref/resource a://rooms/{room}{?floor*} room=4 dept="}, res.Completion.Values)
}

// TestLogLevelOfTheClient: the upstream sends every level to the gateway,
// which relays a call's log message only at or above the level its caller
// set: none after logging/setLevel error, the warning after warning.
func TestLogLevelOfTheClient(t *testing.T) {
	testkit.Watchdog(t)
	u := startUpstream(t, "a")
	c := front(t, gateway.Upstream{Name: "a", URL: u.url})
	_, rpcErr := c.Call("logging/setLevel", map[string]string{"level": "error"})
	require.Nil(t, rpcErr)
	c.SendCallTool(5, "log", nil)
	_, isNote := c.Recv().(*transport.Request)
	assert.False(t, isNote, "a warning is below error: the result comes first")
	_, rpcErr = c.Call("logging/setLevel", map[string]string{"level": "warning"})
	require.Nil(t, rpcErr)
	c.SendCallTool(6, "log", nil)
	n, ok := c.Recv().(*transport.Request)
	require.True(t, ok)
	assert.Equal(t, "notifications/message", n.Method)
	assert.Contains(t, string(c.RecvResult(6)), "logged")
}

// TestStatelessCallerAskedAcrossRounds: in front of an upstream of the
// 2025 era, an upstream's sampling request during a stateless 2026-07-28
// call becomes an input_required result; the
// upstream call waits, and the client's retry with the answer resumes it:
// the answer reaches the upstream, and its result the client. A retry
// whose call is gone says so.
func TestStatelessCallerAskedAcrossRounds(t *testing.T) {
	testkit.Watchdog(t)
	u := startUpstream(t, "a")
	u.sampling.Add(1)
	u.only2025.Store(true)
	c := mcptest.Pipe(t, frontServer(t, gateway.Upstream{Name: "a", URL: u.url}))
	meta := map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientCapabilities": map[string]any{"sampling": map[string]any{}},
		"io.modelcontextprotocol/clientInfo":         map[string]string{"name": "t", "version": "1"},
	}
	c.Request(7, "tools/call", map[string]any{"name": "sample", "_meta": meta})
	var first struct {
		ResultType    string `json:"resultType"`
		InputRequests map[string]struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		} `json:"inputRequests"`
		RequestState string `json:"requestState"`
	}
	require.NoError(t, json.Unmarshal(c.RecvResult(7), &first))
	require.Equal(t, "input_required", first.ResultType)
	require.Len(t, first.InputRequests, 1)
	var key string
	for k, q := range first.InputRequests {
		key = k
		assert.Equal(t, "sampling/createMessage", q.Method)
		assert.Contains(t, string(q.Params), `"maxTokens":10`, "the upstream's question as it asked it")
	}
	c.Request(8, "tools/call", map[string]any{
		"name": "sample", "_meta": meta, "requestState": first.RequestState,
		"inputResponses": map[string]any{key: map[string]any{"role": "assistant", "content": map[string]string{"type": "text", "text": "hi"}, "model": "m"}},
	})
	assert.Contains(t, string(c.RecvResult(8)), "sampled by m")

	c.Request(9, "tools/call", map[string]any{
		"name": "sample", "_meta": meta,
		"inputResponses": map[string]any{key: map[string]any{"role": "assistant", "content": map[string]string{"type": "text", "text": "hi"}, "model": "m"}},
	})
	rpcErr := c.RecvError(9)
	assert.Equal(t, int64(protocol.CodeInvalidParams), rpcErr.Code)
	assert.Contains(t, rpcErr.Message, "the call of upstream a that this retry answers is gone")
}

// TestStatelessCallerWithoutCapability: a stateless caller that did not
// declare sampling gets -32021, naming the capability in its data, when
// an upstream of the 2025 era asks for it.
func TestStatelessCallerWithoutCapability(t *testing.T) {
	testkit.Watchdog(t)
	u := startUpstream(t, "a")
	u.sampling.Add(1)
	u.only2025.Store(true)
	c := mcptest.Pipe(t, frontServer(t, gateway.Upstream{Name: "a", URL: u.url}))
	c.Request(7, "tools/call", map[string]any{"name": "sample", "_meta": map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientCapabilities": map[string]any{},
		"io.modelcontextprotocol/clientInfo":         map[string]string{"name": "t", "version": "1"},
	}})
	rpcErr := c.RecvError(7)
	assert.Equal(t, int64(protocol.CodeMissingRequiredClientCapability), rpcErr.Code)
	assert.Contains(t, rpcErr.Message, "sampling")
	assert.JSONEq(t, `{"requiredCapabilities":{"sampling":{}}}`, string(rpcErr.Data))
}

// TestStatelessPromptAskedAcrossRounds: prompts/get of a stateless caller
// whose upstream prompt asks the client is answered input_required too.
func TestStatelessPromptAskedAcrossRounds(t *testing.T) {
	testkit.Watchdog(t)
	u := startUpstream(t, "a")
	require.NoError(t, u.srv.AddPrompt(server.Prompt{Name: "asking"}, func(ctx context.Context, _ *server.GetPromptRequest) (*server.GetPromptResult, error) {
		roots, err := server.ListRoots(ctx)
		if err != nil {
			return nil, err
		}
		return &server.GetPromptResult{Messages: []*server.PromptMessage{{Role: "user", Content: &server.TextContent{Text: roots[0].URI}}}}, nil
	}))
	c := mcptest.Pipe(t, frontServer(t, gateway.Upstream{Name: "a", URL: u.url}))
	meta := map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientCapabilities": map[string]any{"roots": map[string]any{}},
		"io.modelcontextprotocol/clientInfo":         map[string]string{"name": "t", "version": "1"},
	}
	c.Request(1, "prompts/get", map[string]any{"name": "asking", "_meta": meta})
	var first struct {
		InputRequests map[string]struct{ Method string } `json:"inputRequests"`
		RequestState  string                             `json:"requestState"`
	}
	require.NoError(t, json.Unmarshal(c.RecvResult(1), &first))
	require.Len(t, first.InputRequests, 1)
	for key, q := range first.InputRequests {
		assert.Equal(t, "roots/list", q.Method)
		c.Request(2, "prompts/get", map[string]any{
			"name": "asking", "_meta": meta, "requestState": first.RequestState,
			"inputResponses": map[string]any{key: map[string]any{"roots": []map[string]string{{"uri": "file:///srv"}}}},
		})
	}
	assert.Contains(t, string(c.RecvResult(2)), "file:///srv")
}

// TestResourceUpdatesReachSubscribers: a client's resources/subscribe is
// forwarded on its own upstream session, so an update of the resource
// reaches the client.
func TestResourceUpdatesReachSubscribers(t *testing.T) {
	testkit.Watchdog(t)
	u := startUpstream(t, "a")
	c := front(t, gateway.Upstream{Name: "a", URL: u.url})
	_, rpcErr := c.Call("resources/subscribe", map[string]string{"uri": "file:///a/readme"})
	require.Nil(t, rpcErr)
	subscribersListening(u) // subscriptions_test.go: its upstream session, started by the subscription
	u.srv.ResourceUpdated("file:///a/readme")
	n, ok := c.Recv().(*transport.Request)
	require.True(t, ok)
	assert.Equal(t, "notifications/resources/updated", n.Method)
	assert.JSONEq(t, `{"uri":"file:///a/readme"}`, string(n.Params))
}
