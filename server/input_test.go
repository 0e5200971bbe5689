package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/testkit"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
	"github.com/vigil-mcp/vigil/transport/stdio"
)

// Bad input is answered per JSON-RPC 2.0 and the session keeps serving.
func TestBadInputIsAnsweredAndSessionSurvives(t *testing.T) {
	null := transport.ID{}
	id := transport.Int64ID(3)
	cases := []struct {
		name       string
		version    string // "" means: do not initialize first
		frame      string
		wantID     transport.ID
		wantCode   protocol.Code
		noResponse bool
	}{
		{name: "invalid JSON", version: "2025-11-25", frame: `{"jsonrpc":"2.0","id":3,`, wantID: null, wantCode: protocol.CodeParseError},
		{name: "invalid UTF-8", version: "2025-11-25", frame: "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\",\"params\":{\"x\":\"\xff\xfe\"}}", wantID: null, wantCode: protocol.CodeParseError},
		{name: "batch on 2025-06-18", version: "2025-06-18", frame: `[{"jsonrpc":"2.0","id":3,"method":"ping"}]`, wantID: null, wantCode: protocol.CodeInvalidRequest},
		{name: "batch on 2025-11-25", version: "2025-11-25", frame: `[{"jsonrpc":"2.0","id":3,"method":"ping"}]`, wantID: null, wantCode: protocol.CodeInvalidRequest},
		{name: "batch before initialize", frame: `[{"jsonrpc":"2.0","id":3,"method":"ping"}]`, wantID: null, wantCode: protocol.CodeInvalidRequest},
		{name: "missing jsonrpc", version: "2025-11-25", frame: `{"id":3,"method":"ping"}`, wantID: id, wantCode: protocol.CodeInvalidRequest},
		{name: "wrong jsonrpc", version: "2025-11-25", frame: `{"jsonrpc":"1.0","id":3,"method":"ping"}`, wantID: id, wantCode: protocol.CodeInvalidRequest},
		{name: "null id", version: "2025-11-25", frame: `{"jsonrpc":"2.0","id":null,"method":"ping"}`, wantID: null, wantCode: protocol.CodeInvalidRequest},
		{name: "fractional id", version: "2025-11-25", frame: `{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, wantID: null, wantCode: protocol.CodeInvalidRequest},
		{name: "not an object", version: "2025-11-25", frame: `42`, wantID: null, wantCode: protocol.CodeInvalidRequest},
		{name: "params not structured", version: "2025-11-25", frame: `{"jsonrpc":"2.0","id":3,"method":"ping","params":"x"}`, wantID: id, wantCode: protocol.CodeInvalidRequest},
		{name: "unknown method", version: "2025-11-25", frame: `{"jsonrpc":"2.0","id":3,"method":"no/such"}`, wantID: id, wantCode: protocol.CodeMethodNotFound},
		{name: "tools/call name not a string", version: "2025-11-25", frame: `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":5}}`, wantID: id, wantCode: protocol.CodeInvalidParams},
		{name: "tools/call without name", version: "2025-11-25", frame: `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{}}`, wantID: id, wantCode: protocol.CodeInvalidParams},
		{name: "tools/call arguments not an object", version: "2025-11-25", frame: `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":[1]}}`, wantID: id, wantCode: protocol.CodeInvalidParams},
		{name: "unknown tool", version: "2025-11-25", frame: `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"nope"}}`, wantID: id, wantCode: protocol.CodeInvalidParams},
		{name: "request before initialize", frame: `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`, wantID: id, wantCode: protocol.CodeInvalidRequest},
		{name: "initialize with bad params", frame: `{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":7}}`, wantID: id, wantCode: protocol.CodeInvalidParams},
		{name: "second initialize", version: "2025-11-25", frame: `{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`, wantID: id, wantCode: protocol.CodeInvalidRequest},
		{name: "unknown notification", version: "2025-11-25", frame: `{"jsonrpc":"2.0","method":"notifications/whatever"}`, noResponse: true},
		{name: "response to nothing", version: "2025-11-25", frame: `{"jsonrpc":"2.0","id":77,"result":{}}`, noResponse: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t)
				h.addTool("echo", func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
					return server.Text("x"), nil
				})
				h.start()
				if tc.version != "" {
					h.Initialize(tc.version, nil)
				}
				h.SendFrame([]byte(tc.frame))
				if !tc.noResponse {
					resp := h.RecvResponse()
					require.Equal(t, tc.wantID, resp.ID)
					require.NotNil(t, resp.Error, "want an error response, got %s", resp.Result)
					assert.Equal(t, int64(tc.wantCode), resp.Error.Code)
				}
				// The session still serves.
				h.Request(100, "ping", nil)
				assert.JSONEq(t, `{}`, string(h.RecvResult(100)))
				require.NoError(t, h.Close())
				require.NoError(t, h.Wait())
			})
		})
	}
}

// Protocol versions up to 2025-03-26 accept batches: each element is
// answered on its own, malformed ones included, in one array.
func TestBatchOnLegacyVersion(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t).start()
		h.Initialize(protocol.Version20250326, nil)
		h.SendFrame([]byte(`[{"jsonrpc":"2.0","id":"a","method":"ping"},{"jsonrpc":"2.0","method":"notifications/x"},{"jsonrpc":"2.0","id":"b","method":"nope"},{"bad":true}]`))
		batch, ok := h.Recv().(transport.Batch)
		require.True(t, ok, "want a batch answer")
		codes := map[string]int64{}
		for _, raw := range batch {
			m, err := transport.DecodeMessage(raw)
			require.NoError(t, err)
			resp := m.(*transport.Response)
			code := int64(0)
			if resp.Error != nil {
				code = resp.Error.Code
			}
			codes[string(rawJSON(resp.ID))] = code
		}
		assert.Equal(t, map[string]int64{`"a"`: 0, `"b"`: int64(protocol.CodeMethodNotFound), "null": int64(protocol.CodeInvalidRequest)}, codes)
		require.NoError(t, h.Close())
		require.NoError(t, h.Wait())
	})
}

// infinite yields endless bytes without a newline and counts them.
type infinite struct{ n int }

func (r *infinite) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'a'
	}
	r.n += len(p)
	return len(p), nil
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *syncBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// A frame over the size limit gets an error and ends the session cleanly,
// without reading unbounded input.
func TestOversizedFrameEndsSessionCleanly(t *testing.T) {
	testkit.Watchdog(t)
	const limit = 1 << 20
	in, out := &infinite{}, &syncBuffer{}
	h := newHarness(t)
	err := h.srv.Serve(context.Background(), stdio.New(in, out, stdio.WithMaxFrameSize(limit)))
	require.ErrorIs(t, err, transport.ErrFrameTooLarge)
	require.ErrorIs(t, err, server.ErrTransportClose)
	assert.Less(t, in.n, limit+256<<10, "read far past the limit")
	var resp struct {
		ID    json.RawMessage `json:"id"`
		Error struct {
			Code int64 `json:"code"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal(out.b.Bytes(), &resp))
	assert.Equal(t, "null", string(resp.ID))
	assert.Equal(t, int64(protocol.CodeInvalidRequest), resp.Error.Code)
}
