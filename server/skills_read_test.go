package server_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport"
)

// skillReadFile is the size of the skill files the read tests serve: a
// binary one, served as base64 (a third larger), and a text one.
const skillReadFile = 1 << 20

// skillReadBudget is what a read of a skill file may allocate, its
// request, response and bookkeeping: a small fraction of the file, which
// is encoded once, at registration.
const skillReadBudget = 32 << 10

// skillReadServer serves one static skill whose file big.bin holds
// skillReadFile random bytes and big.md as many bytes of text (with
// characters JSON escapes), and returns them.
func skillReadServer(t testing.TB, opts ...server.Option) (srv *server.Server, bin, text []byte) {
	t.Helper()
	bin = make([]byte, skillReadFile)
	rng := rand.NewChaCha8([32]byte{})
	_, _ = rng.Read(bin)
	const line = "A \"quoted\" line <of> text.\n"
	text = []byte(strings.Repeat(line, skillReadFile/len(line)+1)[:skillReadFile])
	srv = server.New(opts...)
	require.NoError(t, srv.AddSkill(server.Skill{Path: "big", FS: fstest.MapFS{
		"SKILL.md": {Data: []byte("---\nname: big\ndescription: A skill with large files\n---\n")},
		"big.bin":  {Data: bin},
		"big.md":   {Data: text},
	}}))
	return srv, bin, text
}

// msgConn is the server's end of a connection that hands messages over
// as they are, unencoded, so that what a read allocates is the server's.
// Close is the client hanging up.
type msgConn struct {
	in, out   chan transport.Message
	done      chan struct{}
	closeOnce sync.Once
}

func (c *msgConn) Read(ctx context.Context) (transport.Message, error) {
	select {
	case m := <-c.in:
		return m, nil
	case <-c.done:
		return nil, fmt.Errorf("%w: %w", transport.ErrPeerGone, io.EOF) // the client hung up
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

func (c *msgConn) Write(ctx context.Context, m transport.Message) error {
	select {
	case c.out <- m:
		return nil
	case <-c.done:
		return transport.ErrClosed
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

func (c *msgConn) Close() error {
	c.closeOnce.Do(func() { close(c.done) })
	return nil
}

// skillReader reads a file of the skill big through a msgConn, in a
// 2025-11-25 session or as a stateless 2026-07-28 request.
type skillReader struct {
	conn  *msgConn
	frame string
}

func newSkillReader(t testing.TB, srv *server.Server, stateless bool, file string) *skillReader {
	t.Helper()
	conn := &msgConn{in: make(chan transport.Message), out: make(chan transport.Message), done: make(chan struct{})}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(context.Background(), conn) }()
	t.Cleanup(func() {
		_ = conn.Close()
		assert.NoError(t, <-done)
	})
	r := &skillReader{conn: conn}
	params := map[string]any{"uri": "skill://big/" + file}
	if stateless {
		params["_meta"] = map[string]any{
			"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
			"io.modelcontextprotocol/clientCapabilities": map[string]any{},
		}
	} else {
		r.roundTrip(t, decode(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"reader","version":"1"}}}`))
		conn.in <- decode(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	}
	p, err := json.Marshal(params)
	require.NoError(t, err)
	r.frame = `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":` + string(p) + `}`
	return r
}

func decode(t testing.TB, frame string) transport.Message {
	m, err := transport.DecodeMessage([]byte(frame))
	require.NoError(t, err)
	return m
}

// roundTrip sends m and returns the response.
func (r *skillReader) roundTrip(t testing.TB, m transport.Message) *transport.Response {
	r.conn.in <- m
	resp, ok := (<-r.conn.out).(*transport.Response)
	if !ok || resp.Error != nil {
		t.Fatalf("not a result: %#v", resp)
	}
	return resp
}

// read reads the file, the request decoded as a transport would.
func (r *skillReader) read(t testing.TB) *transport.Response {
	return r.roundTrip(t, decode(t, r.frame))
}

// totalAlloc returns the bytes allocated by the process so far.
func totalAlloc() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.TotalAlloc
}

// A read of a static skill file writes the result encoded at registration:
// it allocates a small fraction of the file, binary or text, in both eras,
// and concurrent reads share the same bytes.
func TestSkillFileReadAllocation(t *testing.T) {
	srv, bin, text := skillReadServer(t)
	for _, file := range []string{"big.bin", "big.md"} {
		for _, stateless := range []bool{false, true} {
			t.Run(file+"/"+map[bool]string{false: "2025", true: "2026"}[stateless], func(t *testing.T) {
				r := newSkillReader(t, srv, stateless, file)
				first := r.read(t)
				var got struct {
					Contents []struct {
						Text *string `json:"text"`
						Blob *string `json:"blob"`
					} `json:"contents"`
				}
				require.NoError(t, json.Unmarshal(first.Result, &got))
				require.Len(t, got.Contents, 1)
				if file == "big.bin" {
					require.NotNil(t, got.Contents[0].Blob)
					assert.Equal(t, base64.StdEncoding.EncodeToString(bin), *got.Contents[0].Blob, "the file's bytes")
				} else {
					require.NotNil(t, got.Contents[0].Text)
					assert.Equal(t, string(text), *got.Contents[0].Text, "the file's text")
				}

				const reads = 8
				before := totalAlloc()
				for range reads {
					r.read(t)
				}
				perRead := (totalAlloc() - before) / reads
				t.Logf("%d bytes allocated per read of a %d-byte skill file (%.4f of the file; budget %d)",
					perRead, skillReadFile, float64(perRead)/skillReadFile, skillReadBudget)
				assert.LessOrEqual(t, perRead, uint64(skillReadBudget), "bytes allocated per read")

				// Reads at once, on connections of their own, share one encoding.
				var wg sync.WaitGroup
				results := make([]json.RawMessage, 4)
				for i := range results {
					ri := newSkillReader(t, srv, stateless, file)
					wg.Go(func() { results[i] = ri.read(t).Result })
				}
				wg.Wait()
				for _, res := range results {
					require.Len(t, res, len(first.Result))
					assert.Same(t, &first.Result[0], &res[0], "the reads share the result's bytes")
				}
			})
		}
	}
}

// BenchmarkSkillFileRead reads a 1 MiB static skill file, and reports the
// bytes allocated per read:
//
//	go test -run '^$' -bench SkillFileRead -benchmem ./server
func BenchmarkSkillFileRead(b *testing.B) {
	for _, stateless := range []bool{false, true} {
		b.Run(map[bool]string{false: "2025", true: "2026"}[stateless], func(b *testing.B) {
			srv, _, _ := skillReadServer(b)
			r := newSkillReader(b, srv, stateless, "big.bin")
			b.ReportAllocs()
			for b.Loop() {
				r.read(b)
			}
		})
	}
}
