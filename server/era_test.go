package server_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/vocab"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// meta2026 is the _meta of a stateless request.
func meta2026(caps any) map[string]any {
	if caps == nil {
		caps = map[string]any{}
	}
	return map[string]any{
		vocab.MetaProtocolVersion:    protocol.Version20260728,
		vocab.MetaClientCapabilities: caps,
		vocab.MetaClientInfo:         map[string]any{"name": "modern", "version": "1"},
	}
}

// greeter asks the client for a name (an elicitation) and greets it; in a
// 2025 session the same code does a server-to-client request.
func greeter(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
	var answer struct {
		Action  string         `json:"action"`
		Content map[string]any `json:"content"`
	}
	err := server.CallClient(ctx, "elicitation/create", map[string]any{
		"message":         "Who are you?",
		"requestedSchema": map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}},
	}, &answer)
	if err != nil {
		return nil, err
	}
	return server.Text(fmt.Sprintf("hello, %v (%s)", answer.Content["name"], answer.Action)), nil
}

type resultFields struct {
	ResultType    string                     `json:"resultType"`
	InputRequests map[string]json.RawMessage `json:"inputRequests"`
	RequestState  string                     `json:"requestState"`
	Meta          map[string]json.RawMessage `json:"_meta"`
	Content       []struct {
		Text string `json:"text"`
	} `json:"content"`
}

func decodeResult(t *testing.T, raw json.RawMessage) resultFields {
	var r resultFields
	require.NoError(t, json.Unmarshal(raw, &r))
	return r
}

func TestStatelessRequestsWithoutInitialize(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, server.WithImplementation("vigil-test", "2.0"), server.WithInstructions("hi"))
		h.addTool("echo", func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
			return server.Text("ok"), nil
		})
		h.start()

		h.Request(1, "tools/list", map[string]any{"_meta": meta2026(nil)})
		r := decodeResult(t, h.RecvResult(1))
		assert.Equal(t, "complete", r.ResultType)
		assert.JSONEq(t, `{"name":"vigil-test","version":"2.0"}`, string(r.Meta[vocab.MetaServerInfo]))

		h.Request(2, "server/discover", map[string]any{"_meta": meta2026(nil)})
		var d struct {
			ResultType        string          `json:"resultType"`
			SupportedVersions []string        `json:"supportedVersions"`
			Capabilities      json.RawMessage `json:"capabilities"`
			Instructions      string          `json:"instructions"`
		}
		require.NoError(t, json.Unmarshal(h.RecvResult(2), &d))
		assert.Equal(t, "complete", d.ResultType)
		assert.Equal(t, []string{"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}, d.SupportedVersions)
		assert.JSONEq(t, `{"tools":{"listChanged":true},"logging":{}}`, string(d.Capabilities))
		assert.Equal(t, "hi", d.Instructions)

		// Bad stateless requests.
		h.Request(3, "tools/list", map[string]any{"_meta": map[string]any{vocab.MetaProtocolVersion: "2026-07-28"}})
		assert.Equal(t, int64(protocol.CodeInvalidParams), h.RecvError(3).Code, "clientCapabilities is required")
		h.Request(4, "tools/list", map[string]any{"_meta": map[string]any{vocab.MetaProtocolVersion: "2099-01-01", vocab.MetaClientCapabilities: map[string]any{}}})
		resp := h.RecvResponse()
		require.NotNil(t, resp.Error)
		assert.Equal(t, int64(protocol.CodeUnsupportedProtocolVersion), resp.Error.Code)
		assert.JSONEq(t, `{"supported":["2026-07-28","2025-11-25","2025-06-18","2025-03-26","2024-11-05"],"requested":"2099-01-01"}`, string(resp.Error.Data))
		h.Request(5, "ping", map[string]any{"_meta": meta2026(nil)})
		assert.Equal(t, int64(protocol.CodeMethodNotFound), h.RecvError(5).Code, "ping was removed in 2026-07-28")
		// Without _meta, a request before initialize is still refused.
		h.Request(6, "tools/list", nil)
		assert.Equal(t, int64(protocol.CodeInvalidRequest), h.RecvError(6).Code)

		require.NoError(t, h.Close())
		require.NoError(t, h.Wait())
	})
}

func TestMultiRoundTripElicitation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		h.addTool("greet", greeter)
		h.start()
		caps := map[string]any{"elicitation": map[string]any{}}
		call := func(id int64, extra map[string]any) {
			params := map[string]any{"name": "greet", "arguments": map[string]any{"lang": "en"}, "_meta": meta2026(caps)}
			for k, v := range extra {
				params[k] = v
			}
			h.Request(id, "tools/call", params)
		}

		call(1, nil)
		r := decodeResult(t, h.RecvResult(1))
		require.Equal(t, "input_required", r.ResultType)
		require.Len(t, r.InputRequests, 1)
		ask := r.InputRequests["elicitation-create-0"]
		assert.JSONEq(t, `{"method":"elicitation/create","params":{"message":"Who are you?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}}}}}`, string(ask))
		require.NotEmpty(t, r.RequestState)

		answers := map[string]any{"elicitation-create-0": map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}}
		call(2, map[string]any{"inputResponses": answers, "requestState": r.RequestState})
		done := decodeResult(t, h.RecvResult(2))
		assert.Equal(t, "complete", done.ResultType)
		require.Len(t, done.Content, 1)
		assert.Equal(t, "hello, Ada (accept)", done.Content[0].Text)

		// A tampered state is refused, whichever part is altered.
		st := r.RequestState
		for i, bad := range []string{flip(st), flip(st[:8]) + st[8:], st[:len(st)-8] + flip(st[len(st)-8:]), st[:len(st)-1], st + "AA", "garbage", ""} {
			id := int64(10 + i)
			call(id, map[string]any{"inputResponses": answers, "requestState": bad})
			assert.Equal(t, int64(protocol.CodeInvalidParams), h.RecvError(id).Code, "state %q", bad)
		}
		// A genuine state replayed with other arguments is refused too.
		h.Request(20, "tools/call", map[string]any{
			"name": "greet", "arguments": map[string]any{"lang": "fr"},
			"_meta": meta2026(caps), "inputResponses": answers, "requestState": r.RequestState,
		})
		assert.Equal(t, int64(protocol.CodeInvalidParams), h.RecvError(20).Code)

		// Without the capability: -32021 naming what is required.
		h.Request(21, "tools/call", map[string]any{"name": "greet", "_meta": meta2026(nil)})
		resp := h.RecvResponse()
		require.NotNil(t, resp.Error)
		assert.Equal(t, int64(protocol.CodeMissingRequiredClientCapability), resp.Error.Code)
		assert.JSONEq(t, `{"requiredCapabilities":{"elicitation":{}}}`, string(resp.Error.Data))

		require.NoError(t, h.Close())
		require.NoError(t, h.Wait())
	})
}

// flip changes one character of s.
func flip(s string) string {
	b := []byte(s)
	if b[len(b)/2] == 'A' {
		b[len(b)/2] = 'B'
	} else {
		b[len(b)/2] = 'A'
	}
	return string(b)
}

// askWhoAndWhat asks the client two questions, one round each, and answers
// with both replies.
func askWhoAndWhat(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
	var who, what struct {
		Content map[string]any `json:"content"`
	}
	if err := server.CallClient(ctx, "elicitation/create", map[string]any{"message": "who?"}, &who); err != nil {
		return nil, err
	}
	if err := server.CallClient(ctx, "elicitation/create", map[string]any{"message": "what?"}, &what); err != nil {
		return nil, err
	}
	return server.Text(fmt.Sprintf("%v will %v", who.Content["v"], what.Content["v"])), nil
}

// Two calls to the client in one handler take two rounds; the state carries
// the first answer, so the last retry only answers the second question.
func TestMultiRoundTripTwoQuestions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		h.addTool("plan", askWhoAndWhat)
		h.start()
		caps := map[string]any{"elicitation": map[string]any{}}
		h.Request(1, "tools/call", map[string]any{"name": "plan", "_meta": meta2026(caps)})
		r1 := decodeResult(t, h.RecvResult(1))
		require.Contains(t, r1.InputRequests, "elicitation-create-0")

		h.Request(2, "tools/call", map[string]any{
			"name": "plan", "_meta": meta2026(caps), "requestState": r1.RequestState,
			"inputResponses": map[string]any{"elicitation-create-0": map[string]any{"action": "accept", "content": map[string]any{"v": "Ada"}}},
		})
		r2 := decodeResult(t, h.RecvResult(2))
		require.Equal(t, "input_required", r2.ResultType)
		require.Len(t, r2.InputRequests, 1)
		require.Contains(t, r2.InputRequests, "elicitation-create-1")

		h.Request(3, "tools/call", map[string]any{
			"name": "plan", "_meta": meta2026(caps), "requestState": r2.RequestState,
			"inputResponses": map[string]any{"elicitation-create-1": map[string]any{"action": "accept", "content": map[string]any{"v": "compute"}}},
		})
		r3 := decodeResult(t, h.RecvResult(3))
		assert.Equal(t, "complete", r3.ResultType)
		assert.Equal(t, "Ada will compute", r3.Content[0].Text)
		require.NoError(t, h.Close())
		require.NoError(t, h.Wait())
	})
}

func TestRequestStateExpires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, server.WithRequestStateTTL(time.Minute))
		h.addTool("greet", greeter)
		h.start()
		caps := map[string]any{"elicitation": map[string]any{}}
		h.Request(1, "tools/call", map[string]any{"name": "greet", "_meta": meta2026(caps)})
		r := decodeResult(t, h.RecvResult(1))
		time.Sleep(2 * time.Minute) // fake time
		h.Request(2, "tools/call", map[string]any{
			"name": "greet", "_meta": meta2026(caps), "requestState": r.RequestState,
			"inputResponses": map[string]any{"elicitation-create-0": map[string]any{"action": "decline"}},
		})
		assert.Equal(t, int64(protocol.CodeInvalidParams), h.RecvError(2).Code)
		require.NoError(t, h.Close())
		require.NoError(t, h.Wait())
	})
}

// The same handler in a 2025 session sends a real elicitation/create.
func TestSameHandlerInSessionEra(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		h.addTool("greet", greeter)
		h.start()
		h.Initialize(protocol.Version20251125, map[string]any{"elicitation": map[string]any{}})
		h.SendCallTool(2, "greet", `{}`)
		out, ok := h.Recv().(*transport.Request)
		require.True(t, ok)
		assert.Equal(t, "elicitation/create", out.Method)
		h.Send(&transport.Response{ID: out.ID, Result: json.RawMessage(`{"action":"accept","content":{"name":"Grace"}}`)})
		text, _ := toolText(t, h.RecvResult(2))
		assert.Equal(t, "hello, Grace (accept)", text)
		require.NoError(t, h.Close())
		require.NoError(t, h.Wait())
	})
}

// A requestState is bound to the caller it was issued to: replayed by
// another caller (another key of WithCallerKey), it is refused as invalid,
// while its own caller retries with it.
func TestRequestStateBoundToCaller(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, server.WithCallerKey(func(req *server.Request) string { return req.ClientInfo.Name }))
		h.addTool("greet", greeter)
		h.start()
		caps := map[string]any{"elicitation": map[string]any{}}
		as := func(caller string) map[string]any {
			m := meta2026(caps)
			m[vocab.MetaClientInfo] = map[string]any{"name": caller, "version": "1"}
			return m
		}
		h.Request(1, "tools/call", map[string]any{"name": "greet", "_meta": as("alice")})
		state := decodeResult(t, h.RecvResult(1)).RequestState
		retry := func(id int64, caller string) {
			h.Request(id, "tools/call", map[string]any{
				"name": "greet", "_meta": as(caller), "requestState": state,
				"inputResponses": map[string]any{"elicitation-create-0": map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}},
			})
		}
		for i, other := range []string{"mallory", "", "alice\x00", "alic"} {
			retry(int64(10+i), other)
			e := h.RecvError(int64(10 + i))
			assert.Equal(t, int64(protocol.CodeInvalidParams), e.Code, "caller %q", other)
			assert.Contains(t, e.Message, "invalid requestState")
		}
		retry(2, "alice")
		assert.Equal(t, "hello, Ada (accept)", decodeResult(t, h.RecvResult(2)).Content[0].Text)
		require.NoError(t, h.Close())
		require.NoError(t, h.Wait())
	})
}

// A requestState is accepted once: replayed after its retry, by its own
// caller or (without a caller key, as without authorization) by anyone, it
// is refused as invalid, though it has not expired; a state of the same
// request issued again is accepted.
func TestRequestStateSingleUse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		h.addTool("greet", greeter)
		h.start()
		caps := map[string]any{"elicitation": map[string]any{}}
		first := func(id int64) string {
			h.Request(id, "tools/call", map[string]any{"name": "greet", "_meta": meta2026(caps)})
			return decodeResult(t, h.RecvResult(id)).RequestState
		}
		retry := func(id int64, state, name string) {
			h.Request(id, "tools/call", map[string]any{
				"name": "greet", "_meta": meta2026(caps), "requestState": state,
				"inputResponses": map[string]any{"elicitation-create-0": map[string]any{"action": "accept", "content": map[string]any{"name": name}}},
			})
		}
		state := first(1)
		retry(2, state, "Ada")
		assert.Equal(t, "hello, Ada (accept)", decodeResult(t, h.RecvResult(2)).Content[0].Text)
		for i, name := range []string{"Ada", "Mallory"} {
			retry(int64(10+i), state, name)
			e := h.RecvError(int64(10 + i))
			assert.Equal(t, int64(protocol.CodeInvalidParams), e.Code, "replay %d", i)
			assert.Contains(t, e.Message, "used already")
		}
		again := first(3)
		require.NotEqual(t, state, again, "each state is sealed afresh")
		retry(4, again, "Ada")
		assert.Equal(t, "hello, Ada (accept)", decodeResult(t, h.RecvResult(4)).Content[0].Text)
		require.NoError(t, h.Close())
		require.NoError(t, h.Wait())
	})
}

// With WithUsedRequestStates, the states used are recorded where the
// replicas share them: a digest for the state's remaining TTL; a state
// used elsewhere is refused as invalid, and a store that cannot tell
// refuses the retry as busy.
func TestRequestStateUsedShared(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		used := map[string]time.Duration{}
		var fail bool
		h := newHarness(t, server.WithUsedRequestStates(func(_ context.Context, digest string, ttl time.Duration) (bool, error) {
			mu.Lock()
			defer mu.Unlock()
			if fail {
				return false, errors.New("store down")
			}
			_, seen := used[digest]
			used[digest] = ttl
			return !seen, nil
		}))
		h.addTool("greet", greeter)
		h.start()
		caps := map[string]any{"elicitation": map[string]any{}}
		first := func(id int64) string {
			h.Request(id, "tools/call", map[string]any{"name": "greet", "_meta": meta2026(caps)})
			return decodeResult(t, h.RecvResult(id)).RequestState
		}
		retry := func(id int64, state string) {
			h.Request(id, "tools/call", map[string]any{
				"name": "greet", "_meta": meta2026(caps), "requestState": state,
				"inputResponses": map[string]any{"elicitation-create-0": map[string]any{"action": "decline"}},
			})
		}
		state := first(1)
		retry(2, state)
		h.RecvResult(2)
		mu.Lock()
		require.Len(t, used, 1)
		for digest, ttl := range used {
			assert.Len(t, digest, 32, "hex of 16 bytes")
			assert.NotContains(t, state, digest)
			assert.Equal(t, 10*time.Minute+time.Second, ttl, "the state's TTL, rounded up")
		}
		mu.Unlock()
		retry(3, state)
		assert.Equal(t, int64(protocol.CodeInvalidParams), h.RecvError(3).Code, "used already")

		mu.Lock()
		fail = true
		mu.Unlock()
		retry(4, first(5))
		assert.Equal(t, int64(protocol.CodeServerBusy), h.RecvError(4).Code)
		require.NoError(t, h.Close())
		require.NoError(t, h.Wait())
	})
}

// The answers a requestState carries are sealed: neither the token nor its
// base64 decoding holds them in clear.
func TestRequestStateIsSealed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		h.addTool("plan", askWhoAndWhat)
		h.start()
		caps := map[string]any{"elicitation": map[string]any{}}
		const marker = "secret-answer-7f3a"
		h.Request(1, "tools/call", map[string]any{"name": "plan", "_meta": meta2026(caps)})
		r1 := decodeResult(t, h.RecvResult(1))
		h.Request(2, "tools/call", map[string]any{
			"name": "plan", "_meta": meta2026(caps), "requestState": r1.RequestState,
			"inputResponses": map[string]any{"elicitation-create-0": map[string]any{"action": "accept", "content": map[string]any{"v": marker}}},
		})
		r2 := decodeResult(t, h.RecvResult(2))
		require.Equal(t, "input_required", r2.ResultType)
		raw, err := base64.RawURLEncoding.DecodeString(r2.RequestState)
		require.NoError(t, err, "a requestState is base64url")
		assert.NotContains(t, string(raw), marker)
		assert.NotContains(t, string(raw), "elicitation-create", "nor the keys of the answers")
		assert.NotContains(t, r2.RequestState, base64.RawURLEncoding.EncodeToString([]byte(marker))[:16])

		// The sealed answer still reaches the handler on the last round.
		h.Request(3, "tools/call", map[string]any{
			"name": "plan", "_meta": meta2026(caps), "requestState": r2.RequestState,
			"inputResponses": map[string]any{"elicitation-create-1": map[string]any{"action": "accept", "content": map[string]any{"v": "compute"}}},
		})
		assert.Equal(t, marker+" will compute", decodeResult(t, h.RecvResult(3)).Content[0].Text)
		require.NoError(t, h.Close())
		require.NoError(t, h.Wait())
	})
}

// By default a requestState is good for 10 minutes.
func TestRequestStateDefaultTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		h.addTool("greet", greeter)
		h.start()
		caps := map[string]any{"elicitation": map[string]any{}}
		h.Request(1, "tools/call", map[string]any{"name": "greet", "_meta": meta2026(caps)})
		state := decodeResult(t, h.RecvResult(1)).RequestState
		retry := func(id int64) {
			h.Request(id, "tools/call", map[string]any{
				"name": "greet", "_meta": meta2026(caps), "requestState": state,
				"inputResponses": map[string]any{"elicitation-create-0": map[string]any{"action": "decline"}},
			})
		}
		time.Sleep(9 * time.Minute) // fake time
		retry(2)
		assert.Equal(t, "complete", decodeResult(t, h.RecvResult(2)).ResultType)
		time.Sleep(2 * time.Minute) // fake time: 11 minutes after it was issued
		retry(3)
		assert.Equal(t, int64(protocol.CodeInvalidParams), h.RecvError(3).Code)
		require.NoError(t, h.Close())
		require.NoError(t, h.Wait())
	})
}

// Two servers with one shared key accept each other's states: replicas.
func TestRequestStateKeySharedAcrossReplicas(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		key := []byte("0123456789abcdef0123456789abcdef")
		a := newHarness(t, server.WithRequestStateKey(key))
		b := newHarness(t, server.WithRequestStateKey(key))
		c := newHarness(t) // its own random key
		for _, h := range []*harness{a, b, c} {
			h.addTool("greet", greeter)
			h.start()
		}
		caps := map[string]any{"elicitation": map[string]any{}}
		a.Request(1, "tools/call", map[string]any{"name": "greet", "_meta": meta2026(caps)})
		state := decodeResult(t, a.RecvResult(1)).RequestState
		retry := map[string]any{
			"name": "greet", "_meta": meta2026(caps), "requestState": state,
			"inputResponses": map[string]any{"elicitation-create-0": map[string]any{"action": "accept", "content": map[string]any{"name": "Lin"}}},
		}
		b.Request(2, "tools/call", retry)
		assert.Equal(t, "hello, Lin (accept)", decodeResult(t, b.RecvResult(2)).Content[0].Text)
		c.Request(2, "tools/call", retry)
		assert.Equal(t, int64(protocol.CodeInvalidParams), c.RecvError(2).Code)
		for _, h := range []*harness{a, b, c} {
			require.NoError(t, h.Close())
			require.NoError(t, h.Wait())
		}
	})
}

// Cacheable 2026 results carry cache hints; others do not.
func TestStatelessCacheHints(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, server.WithCacheHints(90*time.Second, "public"))
		h.addTool("echo", func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
			return server.Text("ok"), nil
		})
		h.start()
		type hints struct {
			TTL   *int64  `json:"ttlMs"`
			Scope *string `json:"cacheScope"`
		}
		for i, method := range []string{"tools/list", "server/discover"} {
			id := int64(i + 1)
			h.Request(id, method, map[string]any{"_meta": meta2026(nil)})
			var got hints
			require.NoError(t, json.Unmarshal(h.RecvResult(id), &got))
			require.NotNil(t, got.TTL, method)
			require.NotNil(t, got.Scope, method)
			assert.Equal(t, int64(90000), *got.TTL)
			assert.Equal(t, "public", *got.Scope)
		}
		h.Request(3, "tools/call", map[string]any{"name": "echo", "_meta": meta2026(nil)})
		var got hints
		require.NoError(t, json.Unmarshal(h.RecvResult(3), &got))
		assert.Nil(t, got.TTL, "tools/call results are not cacheable")
		require.NoError(t, h.Close())
		require.NoError(t, h.Wait())
	})
}

// Named input keys, and a retry that brings answers without any state.
func TestInputKeyAndStatelessRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		h.addTool("named", func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
			var answer struct {
				Content map[string]any `json:"content"`
			}
			if err := server.CallClient(server.ContextWithInputKey(ctx, "user_name"), "elicitation/create", map[string]any{"message": "name?"}, &answer); err != nil {
				return nil, err
			}
			return server.Text(fmt.Sprintf("Hello, %v!", answer.Content["name"])), nil
		})
		h.start()
		caps := map[string]any{"elicitation": map[string]any{}}
		h.Request(1, "tools/call", map[string]any{"name": "named", "_meta": meta2026(caps)})
		r := decodeResult(t, h.RecvResult(1))
		require.Contains(t, r.InputRequests, "user_name")

		h.Request(2, "tools/call", map[string]any{"name": "named", "_meta": meta2026(caps), "inputResponses": map[string]any{
			"user_name": map[string]any{"action": "accept", "content": map[string]any{"name": "Alice"}},
			"unknown":   map[string]any{"ignored": true},
		}})
		assert.Equal(t, "Hello, Alice!", decodeResult(t, h.RecvResult(2)).Content[0].Text)

		// An answer that does not decode is not a completion.
		h.Request(3, "tools/call", map[string]any{"name": "named", "_meta": meta2026(caps), "inputResponses": map[string]any{"user_name": 12345}})
		text, isErr := toolText(t, h.RecvResult(3))
		assert.True(t, isErr, text)
		require.NoError(t, h.Close())
		require.NoError(t, h.Wait())
	})
}
