package server_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/memory"
)

type echoIn struct {
	Text string `json:"text"`
}

type echoOut struct {
	Text string `json:"text"`
}

// benchToolCall measures one tools/call round trip of the "echo" tool over
// the memory transport: the client writes a pre-encoded frame and decodes
// the answer. The same id every time: each call is answered before the next
// is sent.
func benchToolCall(b *testing.B, srv *server.Server) {
	client, srvEnd := memory.NewPair()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(context.Background(), srvEnd) }()
	ctx := context.Background()
	require.NoError(b, client.WriteFrame(ctx, []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"b","version":"1"}}}`)))
	_, err := client.Read(ctx)
	require.NoError(b, err)
	call := []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}`)

	b.ReportAllocs()
	for b.Loop() {
		if err := client.WriteFrame(ctx, call); err != nil {
			b.Fatal(err)
		}
		m, err := client.Read(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if resp, ok := m.(*transport.Response); !ok || resp.Error != nil {
			b.Fatalf("unexpected answer %#v", m)
		}
	}
	b.StopTimer()
	require.NoError(b, client.Close())
	require.NoError(b, <-served)
}

// BenchmarkToolCallRaw is the echo tool on the raw API: the handler decodes
// its arguments and returns text.
func BenchmarkToolCallRaw(b *testing.B) {
	srv := server.New()
	require.NoError(b, srv.AddTool(server.Tool{
		Name:        "echo",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"],"additionalProperties":false}`),
	}, func(_ context.Context, req *server.CallToolRequest) (*server.CallToolResult, error) {
		var in echoIn
		if err := json.Unmarshal(req.Arguments, &in); err != nil {
			return nil, err
		}
		return server.Text(in.Text), nil
	}))
	benchToolCall(b, srv)
}

// BenchmarkToolCallTyped is the same tool on AddTypedTool: validation
// against the input schema, decoding, and a structured result validated
// against the output schema and mirrored as text.
func BenchmarkToolCallTyped(b *testing.B) {
	srv := server.New()
	require.NoError(b, server.AddTypedTool(srv, server.Tool{Name: "echo"},
		func(_ context.Context, _ *server.CallToolRequest, in echoIn) (echoOut, error) {
			return echoOut(in), nil
		}))
	benchToolCall(b, srv)
}

// BenchmarkToolCallValidation is the typed echo of BenchmarkToolCallTyped
// with three input schemas: trivial ({"type":"object"}, nothing to
// validate: the baseline), inferred from echoIn (validated by the plan,
// the fast path, as most schemas are), and the same with a pattern (which
// the plan leaves to the validator: decoding into values, then its walk).
// echoOut's structured content is validated on every call, by the
// validator.
func BenchmarkToolCallValidation(b *testing.B) {
	for _, bb := range []struct{ name, schema string }{
		{"trivial", `{"type":"object"}`},
		{"plan", ``},
		{"jsonschema", `{"type":"object","properties":{"text":{"type":"string","pattern":"^"}},"required":["text"],"additionalProperties":false}`},
	} {
		b.Run(bb.name, func(b *testing.B) {
			srv := server.New()
			require.NoError(b, server.AddTypedTool(srv, server.Tool{Name: "echo", InputSchema: json.RawMessage(bb.schema)},
				func(_ context.Context, _ *server.CallToolRequest, in echoIn) (echoOut, error) {
					return echoOut(in), nil
				}))
			benchToolCall(b, srv)
		})
	}
}
