package stdio_test

import (
	"context"
	"encoding/json"
	"io"
	"testing"

	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/stdio"
)

// repeater reads line over and over.
type repeater struct {
	line []byte
	off  int
}

func (r *repeater) Read(p []byte) (int, error) {
	n := copy(p, r.line[r.off:])
	r.off = (r.off + n) % len(r.line)
	return n, nil
}

// BenchmarkEcho is the stdio part of an echo call: one request read, one
// answer written.
func BenchmarkEcho(b *testing.B) {
	in := &repeater{line: []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}` + "\n")}
	c := stdio.New(in, io.Discard)
	defer func() { _ = c.Close() }()
	ctx := context.Background()
	result := json.RawMessage(`{"content":[{"type":"text","text":"hello"}]}`)
	b.ReportAllocs()
	for b.Loop() {
		msg, err := c.Read(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if err := c.Write(ctx, &transport.Response{ID: msg.(*transport.Request).ID, Result: result}); err != nil {
			b.Fatal(err)
		}
	}
}
