package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/vocab"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// initFrame is an initialize request of id 1 with the given members of
// capabilities and clientInfo.
func initFrame(t testing.TB, caps, info map[string]any) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{
		"protocolVersion": protocol.Version20251125, "capabilities": caps, "clientInfo": info,
	}})
	require.NoError(t, err)
	return b
}

// An initialize over the params cap is refused before anything is kept (the
// session can still initialize); one under it keeps only the bounded form
// of clientInfo and of the experimental and extension capabilities.
func TestInitializeBombKeepsBoundedState(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t).start()
		h.SendFrame(initFrame(t, map[string]any{"experimental": map[string]any{"x": strings.Repeat("a", 3<<20)}},
			map[string]any{"name": strings.Repeat("n", 60<<10), "version": "1"}))
		e := h.RecvError(1)
		assert.Equal(t, int64(protocol.CodeInvalidParams), e.Code)
		assert.Contains(t, e.Message, "65536")
		sessions := h.srv.Sessions()
		require.Len(t, sessions, 1)
		assert.Empty(t, sessions[0].ClientInfo().Name, "nothing kept of a refused initialize")

		experimental := map[string]any{}
		for i := range 20 {
			experimental[fmt.Sprintf("k%02d", i)] = strings.Repeat("v", 1000)
		}
		experimental["small"] = map[string]any{"on": true}
		experimental[strings.Repeat("K", 200)] = true
		extensions := map[string]any{server.ExtensionTasks: map[string]any{}}
		long := strings.Repeat("é", 5000) // 2 bytes each: a cut must not split one
		h.SendFrame(initFrame(t, map[string]any{"experimental": experimental, "extensions": extensions, "roots": map[string]any{"listChanged": true}},
			map[string]any{"name": long, "title": long, "version": long}))
		require.NotNil(t, h.RecvResult(1))

		ss := h.srv.Sessions()[0]
		info := ss.ClientInfo()
		for _, s := range []string{info.Name, info.Title, info.Version} {
			assert.True(t, utf8.ValidString(s))
			assert.LessOrEqual(t, len(s), 256)
			assert.Greater(t, len(s), 250)
		}
		caps := ss.ClientCapabilities()
		require.NotNil(t, caps.Roots)
		assert.True(t, caps.Roots.ListChanged, "the typed capabilities are kept whole")
		assert.Contains(t, caps.Extensions, server.ExtensionTasks)
		assert.Len(t, caps.Experimental, 16)
		raw, err := json.Marshal(caps)
		require.NoError(t, err)
		assert.Less(t, len(raw), 16*(128+256+8)+512, "the kept capabilities are bounded")
		for k, v := range caps.Experimental {
			assert.LessOrEqual(t, len(k), 128)
			b, err := json.Marshal(v)
			require.NoError(t, err)
			assert.True(t, len(b) <= 256 || string(b) == "{}", "%s: %d bytes kept", k, len(b))
		}
		// The sorted first 16 keys: k00..k15, each value too large, kept as {}.
		assert.Equal(t, map[string]any{}, caps.Experimental["k00"])
		require.NoError(t, h.Close())
		require.NoError(t, h.Wait())
	})
}

// A small client's capabilities are kept exactly as sent.
func TestInitializeKeepsSmallCapabilities(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t).start()
		experimental := map[string]any{"feature": map[string]any{"level": float64(3), "modes": []any{"a", "b"}}}
		h.SendFrame(initFrame(t, map[string]any{"experimental": experimental}, map[string]any{"name": "client", "version": "1.2"}))
		require.NotNil(t, h.RecvResult(1))
		ss := h.srv.Sessions()[0]
		assert.Equal(t, experimental, ss.ClientCapabilities().Experimental)
		assert.Equal(t, server.Implementation{Name: "client", Version: "1.2"}, ss.ClientInfo())
		require.NoError(t, h.Close())
		require.NoError(t, h.Wait())
	})
}

// The names of a name bomb are refused before the handler, the middleware
// or a table sees them; the bounds' own lengths are served; the session
// goes on.
func TestNameBombRefusedAtAdmission(t *testing.T) {
	null, id3 := transport.ID{}, transport.Int64ID(3)
	name128 := strings.Repeat("t", 128)
	cases := []struct {
		name     string
		frame    string
		wantID   transport.ID
		wantCode protocol.Code
	}{
		{"method of 1 MiB", `{"jsonrpc":"2.0","id":3,"method":"` + strings.Repeat("m", 1<<20) + `"}`, id3, protocol.CodeInvalidRequest},
		{"string id of 257 bytes", `{"jsonrpc":"2.0","id":"` + strings.Repeat("i", 257) + `","method":"ping"}`, null, protocol.CodeInvalidRequest},
		{"tool name of 129 bytes", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"` + strings.Repeat("t", 129) + `"}}`, id3, protocol.CodeInvalidParams},
		{"tool name of 1 MiB", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"` + strings.Repeat("t", 1<<20) + `"}}`, id3, protocol.CodeInvalidParams},
		{"prompt name of 1025 bytes", `{"jsonrpc":"2.0","id":3,"method":"prompts/get","params":{"name":"` + strings.Repeat("p", 1025) + `"}}`, id3, protocol.CodeInvalidParams},
		{"read uri of 2049 bytes", `{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"test://` + strings.Repeat("u", 2042) + `"}}`, id3, protocol.CodeInvalidParams},
		{"subscribe uri of 2049 bytes", `{"jsonrpc":"2.0","id":3,"method":"resources/subscribe","params":{"uri":"test://` + strings.Repeat("u", 2042) + `"}}`, id3, protocol.CodeInvalidParams},
		{"progress token of 257 bytes", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"` + name128 + `","_meta":{"progressToken":"` + strings.Repeat("p", 255) + `"}}}`, id3, protocol.CodeInvalidParams},
		{"cursor of 4097 bytes", `{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"cursor":"` + strings.Repeat("c", 4097) + `"}}`, id3, protocol.CodeInvalidParams},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var mu sync.Mutex
				var seen []string // names the middleware saw
				h := newHarness(t, server.WithMiddleware(func(next server.Handler) server.Handler {
					return func(ctx context.Context, req *server.Request) (any, error) {
						mu.Lock()
						seen = append(seen, req.Method+" "+req.Name+req.URI)
						mu.Unlock()
						return next(ctx, req)
					}
				}))
				ran := 0
				h.addTool(name128, func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
					ran++
					return server.Text("ok"), nil
				})
				h.start()
				h.Initialize(protocol.Version20251125, nil)
				h.SendFrame([]byte(tc.frame))
				resp := h.RecvResponse()
				require.Equal(t, tc.wantID, resp.ID)
				require.NotNil(t, resp.Error, "want an error, got %s", resp.Result)
				assert.Equal(t, int64(tc.wantCode), resp.Error.Code)
				assert.Less(t, len(resp.Error.Message), 200, "the answer does not echo the bytes")
				assert.Zero(t, ran)
				mu.Lock()
				for _, s := range seen {
					assert.Less(t, len(s), 300, "the middleware saw a long name")
				}
				mu.Unlock()
				h.obs.mu.Lock()
				rejected := append([]protocol.Code(nil), h.obs.rejected...)
				h.obs.mu.Unlock()
				if tc.wantCode == protocol.CodeInvalidRequest || !strings.Contains(tc.name, "progress") && !strings.Contains(tc.name, "cursor") {
					assert.Contains(t, rejected, tc.wantCode, "the refusal is counted")
				}
				// The bounds themselves are served.
				h.Request(4, "tools/call", map[string]any{"name": name128, "_meta": map[string]any{"progressToken": strings.Repeat("p", 254)}})
				text, isErr := toolText(t, h.RecvResult(4))
				assert.False(t, isErr)
				assert.Equal(t, "ok", text)
				h.Send(&transport.Request{ID: transport.StringID(strings.Repeat("i", 256)), Method: "ping"})
				assert.NotNil(t, h.RecvResponse().Result)
				require.NoError(t, h.Close())
				require.NoError(t, h.Wait())
			})
		})
	}
}

// A session's subscriptions are bounded in number and in URI bytes; an
// unsubscribe makes room again.
func TestSubscriptionsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		require.NoError(t, h.srv.AddResourceTemplate(server.ResourceTemplate{URITemplate: "test://{name}", Name: "any"},
			func(context.Context, *server.ReadResourceRequest) (*server.ReadResourceResult, error) {
				return nil, nil
			}))
		h.start()
		h.Initialize(protocol.Version20251125, nil)
		id := int64(10)
		subscribe := func(uri string) *transport.Response {
			id++
			h.Request(id, "resources/subscribe", map[string]any{"uri": uri})
			return h.RecvResponse()
		}
		for i := range 1024 {
			require.Nil(t, subscribe(fmt.Sprintf("test://r%d", i)).Error)
		}
		resp := subscribe("test://one-more")
		require.NotNil(t, resp.Error)
		assert.Equal(t, int64(protocol.CodeInvalidParams), resp.Error.Code)
		assert.Nil(t, subscribe("test://r7").Error, "a subscription held is no new one")
		assert.Len(t, h.srv.Sessions()[0].Subscriptions(), 1024)
		id++
		h.Request(id, "resources/unsubscribe", map[string]any{"uri": "test://r7"})
		require.Nil(t, h.RecvResponse().Error)
		assert.Nil(t, subscribe("test://one-more").Error)
		for i := range 1024 {
			id++
			h.Request(id, "resources/unsubscribe", map[string]any{"uri": fmt.Sprintf("test://r%d", i)})
			require.Nil(t, h.RecvResponse().Error)
		}
		// In bytes: 2,000-byte URIs, 64 KiB in all.
		n := 0
		for ; n < 100; n++ {
			if resp := subscribe(fmt.Sprintf("test://%04d%s", n, strings.Repeat("u", 1989))); resp.Error != nil {
				break
			}
		}
		assert.Equal(t, ((64<<10)-len("test://one-more"))/2000, n, "the URI bytes stop the subscriptions")
		total := 0
		for _, u := range h.srv.Sessions()[0].Subscriptions() {
			total += len(u)
		}
		assert.LessOrEqual(t, total, 64<<10)
		require.NoError(t, h.Close())
		require.NoError(t, h.Wait())
	})
}

// The reason of notifications/cancelled becomes the request's cancel cause
// cut to its bound; an invalid log level is not echoed whole.
func TestClientTextsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		causes := make(chan error, 1)
		h.addTool("wait", func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
			<-ctx.Done()
			causes <- context.Cause(ctx)
			return nil, ctx.Err()
		})
		h.start()
		h.Initialize(protocol.Version20251125, nil)
		h.SendCallTool(2, "wait", nil)
		synctest.Wait() // the handler waits
		h.Cancel(2, strings.Repeat("r", 1<<20))
		cause := <-causes
		require.ErrorIs(t, cause, server.ErrClientCancel)
		assert.Less(t, len(cause.Error()), 256+100)

		h.Request(3, "logging/setLevel", map[string]any{"level": strings.Repeat("x", 1<<20)})
		e := h.RecvError(3)
		assert.Equal(t, int64(protocol.CodeInvalidParams), e.Code)
		assert.Less(t, len(e.Message), 200)

		// A stateless request naming a long protocol version.
		meta := meta2026(nil)
		meta[vocab.MetaProtocolVersion] = strings.Repeat("v", 1<<20)
		h2 := newHarness(t).start()
		h2.Request(4, "tools/list", map[string]any{"_meta": meta})
		e = h2.RecvError(4)
		assert.Equal(t, int64(protocol.CodeUnsupportedProtocolVersion), e.Code)
		assert.Less(t, len(e.Message), 400)
		assert.Less(t, len(e.Data), 600)
		require.NoError(t, h2.Close())
		require.NoError(t, h2.Wait())
		require.NoError(t, h.Close())
		require.NoError(t, h.Wait())
	})
}
