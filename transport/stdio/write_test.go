package stdio_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/stdio"
)

func TestWriteOneLine(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		msg  transport.Message
		want string
	}{
		{
			name: "compact request is written as is",
			msg:  &transport.Request{ID: transport.Int64ID(1), Method: "ping"},
			want: `{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		},
		{
			name: "indented params are compacted",
			msg: &transport.Request{
				ID: transport.Int64ID(1), Method: "m",
				Params: json.RawMessage("{\n  \"a\": 1,\n  \"b\": [\n    1,\n    2\n  ]\n}"),
			},
			want: `{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":1,"b":[1,2]}}`,
		},
		{
			name: "CRLF-indented result is compacted",
			msg:  &transport.Response{ID: transport.StringID("r"), Result: json.RawMessage("[\r\n  1,\r\n  \"x y\"\r\n]")},
			want: `{"jsonrpc":"2.0","id":"r","result":[1,"x y"]}`,
		},
		{
			name: "lone CRs are compacted",
			msg:  &transport.Response{ID: transport.Int64ID(3), Result: json.RawMessage("{\"content\":\r\r[]\r}")},
			want: `{"jsonrpc":"2.0","id":3,"result":{"content":[]}}`,
		},
		{
			name: "indented error data is compacted, escaped newlines stay",
			msg: &transport.Response{ID: transport.Int64ID(2), Error: &transport.Error{
				Code: -1, Message: "line1\nline2", Data: json.RawMessage("{\n\t\"k\": \"v\\n w\"\n}"),
			}},
			want: `{"jsonrpc":"2.0","id":2,"error":{"code":-1,"message":"line1\nline2","data":{"k":"v\n w"}}}`,
		},
		{
			name: "strings with newlines are escaped, not compacted",
			msg:  &transport.Request{Method: "a\nb", Params: json.RawMessage(`{"s": "c\nd"}`)},
			want: `{"jsonrpc":"2.0","method":"a\nb","params":{"s": "c\nd"}}`,
		},
		{
			name: "indented response batch is compacted",
			msg: transport.ResponseBatch{
				{ID: transport.Int64ID(1), Result: json.RawMessage("{\n}")},
				{ID: transport.Int64ID(2), Result: json.RawMessage("[\n1\n]")},
			},
			want: `[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","id":2,"result":[1]}]`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			c := stdio.New(strings.NewReader(""), &buf)
			require.NoError(t, c.Write(t.Context(), tc.msg))
			out := buf.String()
			assert.Equal(t, tc.want+"\n", out)
			assert.Equal(t, 1, strings.Count(out, "\n"), "exactly one newline")
			assert.True(t, strings.HasSuffix(out, "\n"))
			_, err := transport.DecodeMessage([]byte(out))
			require.NoError(t, err)

			// The same bytes read back through a stdio Conn.
			got, err := stdio.New(strings.NewReader(out), io.Discard).Read(t.Context())
			require.NoError(t, err)
			want, err := transport.DecodeMessage([]byte(tc.want))
			require.NoError(t, err)
			assert.Equal(t, want, got)
		})
	}
}

func TestWriteSequence(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	c := stdio.New(strings.NewReader(""), &buf)
	require.NoError(t, c.Write(t.Context(), req(1, "a")))
	require.NoError(t, c.Write(t.Context(), &transport.Request{Method: "n", Params: json.RawMessage("{\n}")}))
	require.NoError(t, c.Write(t.Context(), req(2, "b")))
	assert.Equal(t,
		line(1, "a")+"\n"+`{"jsonrpc":"2.0","method":"n","params":{}}`+"\n"+line(2, "b")+"\n",
		buf.String())
}

func TestWriteErrorsWriteNothing(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		msg     transport.Message
		wantErr string
	}{
		{
			name:    "invalid raw JSON with a newline",
			msg:     &transport.Request{ID: transport.Int64ID(1), Method: "m", Params: json.RawMessage("{\n\"a\":")},
			wantErr: "stdio: write: invalid JSON in message",
		},
		{name: "empty response batch", msg: transport.ResponseBatch{}, wantErr: "transport: empty response batch"},
		{
			name:    "response with neither result nor error",
			msg:     &transport.Response{ID: transport.Int64ID(1)},
			wantErr: "transport: response has neither result nor error",
		},
		{name: "read-side batch", msg: transport.Batch{json.RawMessage(`{}`)}, wantErr: "transport: cannot encode transport.Batch"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			c := stdio.New(strings.NewReader(""), &buf)
			err := c.Write(t.Context(), tc.msg)
			require.ErrorContains(t, err, tc.wantErr)
			require.NotErrorIs(t, err, transport.ErrClosed)
			require.NotErrorIs(t, err, transport.ErrPeerGone)
			assert.Empty(t, buf.String())

			// Not terminal: the next message goes out whole.
			require.NoError(t, c.Write(t.Context(), req(2, "next")))
			assert.Equal(t, line(2, "next")+"\n", buf.String())
		})
	}
}

// splitWriter hands each Write to the buffer in two halves with a yield in
// between, so that unserialised writers would interleave.
type splitWriter struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (w *splitWriter) Write(p []byte) (int, error) {
	half := len(p) / 2
	w.mu.Lock()
	w.buf.Write(p[:half])
	w.mu.Unlock()
	runtime.Gosched()
	w.mu.Lock()
	w.buf.Write(p[half:])
	w.mu.Unlock()
	return len(p), nil
}

func TestWriteConcurrency(t *testing.T) {
	t.Parallel()
	const writers, perWriter = 50, 20
	w := &splitWriter{}
	c := stdio.New(strings.NewReader(""), w)

	params := func(g, i int) string {
		return fmt.Sprintf("{\n  \"g\": %d,\n  \"i\": %d,\n  \"pad\": %q\n}", g, i, strings.Repeat("x", (g*perWriter+i)%97))
	}
	start := make(chan struct{})
	errs := make(chan error, writers*perWriter)
	var wg sync.WaitGroup
	for g := range writers {
		wg.Go(func() {
			<-start
			for i := range perWriter {
				errs <- c.Write(t.Context(), &transport.Request{
					ID:     transport.Int64ID(int64(g*perWriter + i)),
					Method: "concurrent",
					Params: json.RawMessage(params(g, i)),
				})
			}
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}

	out := w.buf.String()
	require.True(t, strings.HasSuffix(out, "\n"))
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	require.Len(t, lines, writers*perWriter)
	seen := make(map[transport.ID]bool)
	for _, l := range lines {
		msg, err := transport.DecodeMessage([]byte(l))
		require.NoError(t, err, "line %q", l)
		r, ok := msg.(*transport.Request)
		require.True(t, ok, "line %q", l)
		require.False(t, seen[r.ID], "duplicate id %v", r.ID)
		seen[r.ID] = true
		n, err := json.Marshal(r.ID)
		require.NoError(t, err)
		var id int
		require.NoError(t, json.Unmarshal(n, &id))
		var want bytes.Buffer
		require.NoError(t, json.Compact(&want, []byte(params(id/perWriter, id%perWriter))))
		assert.Equal(t, want.String(), string(r.Params))
	}
	assert.Len(t, seen, writers*perWriter)
}

func TestPipeConcurrency(t *testing.T) {
	t.Parallel()
	const writers, perWriter = 10, 50
	pr, pw := io.Pipe()
	src := stdio.New(strings.NewReader(""), pw)
	dst := stdio.New(pr, io.Discard)

	errs := make(chan error, writers*perWriter)
	var wg sync.WaitGroup
	for g := range writers {
		wg.Go(func() {
			for i := range perWriter {
				errs <- src.Write(t.Context(), req(int64(g*perWriter+i), "m"))
			}
		})
	}
	seen := make(map[transport.ID]bool)
	for range writers * perWriter {
		msg, err := dst.Read(t.Context())
		require.NoError(t, err)
		r, ok := msg.(*transport.Request)
		require.True(t, ok)
		assert.False(t, seen[r.ID], "duplicate id %v", r.ID)
		seen[r.ID] = true
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	assert.Len(t, seen, writers*perWriter)

	// Closing the writing side ends the reading side's stream.
	require.NoError(t, src.Close())
	requireEOF(t, dst)
	require.NoError(t, dst.Close())
}
