package server_test

import (
	"context"
	"encoding/json"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// A relaying handler asks questions of its own: they reach the client
// under its keys, its state comes back sealed in the retry with the
// answers to those keys only, and a state altered, replayed or sent with
// other arguments is refused.
func TestInputRequiredRelayed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		type seen struct {
			responses map[string]json.RawMessage
			state     string
		}
		rounds := make(chan seen, 8)
		h.addTool("relay", func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
			responses, state := server.InputResponses(ctx)
			rounds <- seen{responses, string(state)}
			if len(responses) == 0 {
				return nil, &server.InputRequired{
					Requests: map[string]json.RawMessage{
						"user_name": json.RawMessage(`{"method":"elicitation/create","params":{"message":"Name?"}}`),
						"greeting":  json.RawMessage(`{"method":"sampling/createMessage","params":{"maxTokens":5}}`),
					},
					State: []byte("upstream-state-1"),
				}
			}
			return server.Text("answered " + string(responses["user_name"])), nil
		})
		h.start()
		caps := map[string]any{"elicitation": map[string]any{}, "sampling": map[string]any{}}
		call := func(id int64, args map[string]any, more map[string]any) {
			p := map[string]any{"name": "relay", "arguments": args, "_meta": statelessMeta(caps, nil)}
			for k, v := range more {
				p[k] = v
			}
			h.Request(id, "tools/call", p)
		}
		call(1, map[string]any{"a": 1}, nil)
		var r struct {
			ResultType    string                     `json:"resultType"`
			InputRequests map[string]json.RawMessage `json:"inputRequests"`
			RequestState  string                     `json:"requestState"`
		}
		require.NoError(t, json.Unmarshal(h.RecvResult(1), &r))
		first := <-rounds
		assert.Empty(t, first.responses)
		assert.Empty(t, first.state)
		require.Equal(t, "input_required", r.ResultType)
		assert.JSONEq(t, `{"user_name":{"method":"elicitation/create","params":{"message":"Name?"}},"greeting":{"method":"sampling/createMessage","params":{"maxTokens":5}}}`,
			string(mustJSON(t, r.InputRequests)))
		assert.NotContains(t, r.RequestState, "upstream-state", "the state travels sealed")

		answers := map[string]any{"user_name": map[string]any{"action": "accept"}, "greeting": map[string]any{"role": "assistant"}, "extra": 1}
		// Other arguments: the state is bound to the request.
		call(2, map[string]any{"a": 2}, map[string]any{"inputResponses": answers, "requestState": r.RequestState})
		resp := h.RecvResponse()
		require.NotNil(t, resp.Error)
		assert.Equal(t, int64(protocol.CodeInvalidParams), resp.Error.Code)

		call(3, map[string]any{"a": 1}, map[string]any{"inputResponses": answers, "requestState": r.RequestState})
		text, _ := toolText(t, h.RecvResult(3))
		assert.Equal(t, `answered {"action":"accept"}`, text)
		second := <-rounds
		assert.Equal(t, "upstream-state-1", second.state)
		assert.Len(t, second.responses, 2, "only the keys asked: %v", second.responses)

		// Used once.
		call(4, map[string]any{"a": 1}, map[string]any{"inputResponses": answers, "requestState": r.RequestState})
		resp = h.RecvResponse()
		require.NotNil(t, resp.Error)
		assert.Equal(t, int64(protocol.CodeInvalidParams), resp.Error.Code)

		// Without a requestState, every answer stands, and no state.
		call(5, map[string]any{"a": 1}, map[string]any{"inputResponses": answers})
		h.RecvResult(5)
		third := <-rounds
		assert.Len(t, third.responses, 3)
		assert.Empty(t, third.state)
		finish(t, h)
	})
}

// In a 2025 session an InputRequired cannot be answered: the call fails,
// saying why, and the session goes on.
func TestInputRequiredInSession(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		h.addTool("relay", func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
			return nil, &server.InputRequired{Requests: map[string]json.RawMessage{"k": json.RawMessage(`{"method":"roots/list"}`)}}
		})
		h.start()
		h.Initialize(protocol.Version20251125, nil)
		h.Request(1, "tools/call", map[string]any{"name": "relay", "arguments": map[string]any{}})
		resp := h.RecvResponse()
		require.NotNil(t, resp.Error)
		assert.Equal(t, int64(protocol.CodeInternal), resp.Error.Code)
		h.Request(2, "ping", nil)
		h.RecvResult(2)
		finish(t, h)
	})
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}
