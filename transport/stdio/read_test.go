package stdio_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/vigil-mcp/vigil/transport/protocol"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/stdio"
)

// readerVariants deliver the same bytes in different chunkings.
var readerVariants = []struct {
	name string
	wrap func(io.Reader) io.Reader
}{
	{name: "whole", wrap: func(r io.Reader) io.Reader { return r }},
	{name: "one byte", wrap: iotest.OneByteReader},
	{name: "half", wrap: iotest.HalfReader},
	{name: "data with EOF", wrap: iotest.DataErrReader},
	{name: "odd chunks", wrap: func(r io.Reader) io.Reader { return &chunkReader{r: r, n: 4093} }},
}

// chunkReader returns at most n bytes per Read.
type chunkReader struct {
	r io.Reader
	n int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(p) > c.n {
		p = p[:c.n]
	}
	return c.r.Read(p)
}

// requireEOF checks the terminal error of a stream that ended: it wraps
// ErrPeerGone and io.EOF, and it is sticky.
func requireEOF(t *testing.T, c *stdio.Conn) {
	t.Helper()
	for range 2 {
		msg, err := c.Read(t.Context())
		require.Error(t, err)
		assert.Nil(t, msg)
		require.ErrorIs(t, err, transport.ErrPeerGone)
		require.ErrorIs(t, err, io.EOF)
		require.NotErrorIs(t, err, transport.ErrClosed)
	}
}

func req(id int64, method string) *transport.Request {
	return &transport.Request{ID: transport.Int64ID(id), Method: method}
}

func line(id int64, method string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q}`, id, method)
}

func TestReadFraming(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		input string
		want  []transport.Message
	}{
		{name: "empty stream"},
		{name: "only blank lines", input: "\n \n\t\r\n  \n"},
		{name: "only a whitespace tail", input: "\n   "},
		{
			name:  "one line",
			input: line(1, "a") + "\n",
			want:  []transport.Message{req(1, "a")},
		},
		{
			name:  "multiple lines",
			input: line(1, "a") + "\n" + line(2, "b") + "\n" + `{"jsonrpc":"2.0","id":3,"result":{}}` + "\n",
			want: []transport.Message{
				req(1, "a"), req(2, "b"),
				&transport.Response{ID: transport.Int64ID(3), Result: rawJSON(`{}`)},
			},
		},
		{
			name:  "blank and whitespace-only lines are skipped",
			input: "\n\n  \n\t \n" + line(1, "a") + "\n \n\n" + line(2, "b") + "\n   \n\t\n",
			want:  []transport.Message{req(1, "a"), req(2, "b")},
		},
		{
			name:  "CRLF line endings",
			input: line(1, "a") + "\r\n" + line(2, "b") + "\r\n\r\n",
			want:  []transport.Message{req(1, "a"), req(2, "b")},
		},
		{
			name:  "whitespace around a frame",
			input: "  \t" + line(1, "a") + " \t\r\n",
			want:  []transport.Message{req(1, "a")},
		},
		{
			name:  "last line without a newline",
			input: line(1, "a") + "\n" + line(2, "b"),
			want:  []transport.Message{req(1, "a"), req(2, "b")},
		},
		{
			name:  "only line without a newline",
			input: line(7, "x"),
			want:  []transport.Message{req(7, "x")},
		},
		{
			name:  "last CRLF line without a newline",
			input: line(1, "a") + "\r\n" + line(2, "b") + "\r",
			want:  []transport.Message{req(1, "a"), req(2, "b")},
		},
		{
			name:  "batch frame",
			input: `[` + line(1, "a") + `,` + line(2, "b") + "]\n",
			want:  []transport.Message{transport.Batch{rawJSON(line(1, "a")), rawJSON(line(2, "b"))}},
		},
	}
	for _, tc := range tests {
		for _, rv := range readerVariants {
			t.Run(tc.name+"/"+rv.name, func(t *testing.T) {
				t.Parallel()
				c := stdio.New(rv.wrap(strings.NewReader(tc.input)), io.Discard)
				for i, want := range tc.want {
					got, err := c.Read(t.Context())
					require.NoError(t, err, "message %d", i)
					assert.Equal(t, want, got, "message %d", i)
				}
				requireEOF(t, c)
			})
		}
	}
}

func rawJSON(s string) []byte { return []byte(s) }

func TestReadDecodeErrorKeepsConnUsable(t *testing.T) {
	t.Parallel()
	input := "not json\n" +
		"\xff\xfe\n" +
		`{"jsonrpc":"1.0","id":5,"method":"m"}` + "\n" +
		`[]` + "\n" +
		line(6, "ok") + "\n"
	c := stdio.New(strings.NewReader(input), io.Discard)
	wantErrs := []struct {
		code protocol.Code
		id   transport.ID
	}{
		{code: protocol.CodeParseError},
		{code: protocol.CodeParseError},
		{code: protocol.CodeInvalidRequest, id: transport.Int64ID(5)},
		{code: protocol.CodeInvalidRequest},
	}
	for i, want := range wantErrs {
		msg, err := c.Read(t.Context())
		require.Error(t, err, "frame %d", i)
		assert.Nil(t, msg)
		de, ok := errors.AsType[*transport.DecodeError](err)
		require.True(t, ok, "frame %d: %v is %T", i, err, err)
		assert.Equal(t, want.code, de.Code, "frame %d", i)
		assert.Equal(t, want.id, de.ID, "frame %d", i)
		require.NotErrorIs(t, err, transport.ErrPeerGone)
		require.NotErrorIs(t, err, transport.ErrClosed)
	}
	got, err := c.Read(t.Context())
	require.NoError(t, err)
	assert.Equal(t, req(6, "ok"), got)
	requireEOF(t, c)
}

func TestReadIgnoresContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	c := stdio.New(strings.NewReader(line(1, "a")+"\n"), io.Discard)
	got, err := c.Read(ctx)
	require.NoError(t, err)
	assert.Equal(t, req(1, "a"), got)
}

// padded returns a valid notification frame of exactly n bytes.
func padded(t *testing.T, n int) string {
	t.Helper()
	const base = `{"jsonrpc":"2.0","method":"pad"}`
	require.GreaterOrEqual(t, n, len(base))
	return base + strings.Repeat(" ", n-len(base))
}

var padMsg = &transport.Request{Method: "pad"}

func requireTooLarge(t *testing.T, c *stdio.Conn, limit int) {
	t.Helper()
	for range 2 { // sticky
		msg, err := c.Read(t.Context())
		require.ErrorIs(t, err, transport.ErrFrameTooLarge)
		assert.Nil(t, msg)
		require.NotErrorIs(t, err, transport.ErrPeerGone)
		require.NotErrorIs(t, err, transport.ErrClosed)
		assert.Equal(t, fmt.Sprintf("stdio: read: transport: frame too large: more than %d bytes", limit), err.Error())
	}
}

func TestReadMaxFrameSize(t *testing.T) {
	t.Parallel()
	type step int
	const (
		wantMsg step = iota
		wantTooLarge
		wantEOF
	)
	tests := []struct {
		name   string
		max    int
		frames func(t *testing.T) string
		steps  []step
	}{
		{
			name:   "exactly max",
			max:    100,
			frames: func(t *testing.T) string { return padded(t, 100) + "\n" + padded(t, 40) + "\n" },
			steps:  []step{wantMsg, wantMsg, wantEOF},
		},
		{
			name:   "exactly max with CRLF",
			max:    100,
			frames: func(t *testing.T) string { return padded(t, 100) + "\r\n" },
			steps:  []step{wantMsg, wantEOF},
		},
		{
			name:   "one below max",
			max:    100,
			frames: func(t *testing.T) string { return padded(t, 99) + "\n" },
			steps:  []step{wantMsg, wantEOF},
		},
		{
			name:   "one over max",
			max:    100,
			frames: func(t *testing.T) string { return padded(t, 101) + "\n" + padded(t, 40) + "\n" },
			steps:  []step{wantTooLarge},
		},
		{
			name:   "frames before the large one are delivered",
			max:    100,
			frames: func(t *testing.T) string { return padded(t, 100) + "\n" + padded(t, 101) + "\n" + padded(t, 40) + "\n" },
			steps:  []step{wantMsg, wantTooLarge},
		},
		{
			name:   "exactly max at EOF without newline",
			max:    100,
			frames: func(t *testing.T) string { return padded(t, 100) },
			steps:  []step{wantMsg, wantEOF},
		},
		{
			name:   "one over max at EOF without newline",
			max:    100,
			frames: func(t *testing.T) string { return padded(t, 101) },
			steps:  []step{wantTooLarge},
		},
		{
			name:   "exactly max beyond the read buffer",
			max:    100_000,
			frames: func(t *testing.T) string { return padded(t, 100_000) + "\n" + padded(t, 100_000) + "\n" },
			steps:  []step{wantMsg, wantMsg, wantEOF},
		},
		{
			name:   "one over max beyond the read buffer",
			max:    100_000,
			frames: func(t *testing.T) string { return padded(t, 100_001) + "\n" },
			steps:  []step{wantTooLarge},
		},
		{
			name:   "one over max beyond the read buffer at EOF",
			max:    100_000,
			frames: func(t *testing.T) string { return padded(t, 100_001) },
			steps:  []step{wantTooLarge},
		},
		{
			name:   "max equal to the read buffer",
			max:    64 << 10,
			frames: func(t *testing.T) string { return padded(t, 64<<10) + "\n" + padded(t, 64<<10+1) + "\n" },
			steps:  []step{wantMsg, wantTooLarge},
		},
	}
	for _, tc := range tests {
		for _, rv := range readerVariants {
			t.Run(tc.name+"/"+rv.name, func(t *testing.T) {
				t.Parallel()
				c := stdio.New(rv.wrap(strings.NewReader(tc.frames(t))), io.Discard, stdio.WithMaxFrameSize(tc.max))
				for i, s := range tc.steps {
					switch s {
					case wantMsg:
						got, err := c.Read(t.Context())
						require.NoError(t, err, "step %d", i)
						assert.Equal(t, padMsg, got, "step %d", i)
					case wantTooLarge:
						requireTooLarge(t, c, tc.max)
					case wantEOF:
						requireEOF(t, c)
					}
				}
			})
		}
	}
}

func TestReadDefaultMaxFrameSize(t *testing.T) {
	t.Parallel()
	require.Equal(t, 4<<20, stdio.DefaultMaxFrameSize)
	input := padded(t, stdio.DefaultMaxFrameSize) + "\n" + padded(t, stdio.DefaultMaxFrameSize+1) + "\n"
	c := stdio.New(strings.NewReader(input), io.Discard)
	got, err := c.Read(t.Context())
	require.NoError(t, err)
	assert.Equal(t, padMsg, got)
	requireTooLarge(t, c, stdio.DefaultMaxFrameSize)
}

func TestWithMaxFrameSize(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		opts  []stdio.Option
		limit int
	}{
		{name: "zero keeps the limit", opts: []stdio.Option{stdio.WithMaxFrameSize(40), stdio.WithMaxFrameSize(0)}, limit: 40},
		{name: "negative keeps the limit", opts: []stdio.Option{stdio.WithMaxFrameSize(40), stdio.WithMaxFrameSize(-1)}, limit: 40},
		{name: "last option wins", opts: []stdio.Option{stdio.WithMaxFrameSize(1000), stdio.WithMaxFrameSize(40)}, limit: 40},
		{name: "last option wins, growing", opts: []stdio.Option{stdio.WithMaxFrameSize(40), stdio.WithMaxFrameSize(41)}, limit: 41},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			input := padded(t, tc.limit) + "\n" + padded(t, tc.limit+1) + "\n"
			c := stdio.New(strings.NewReader(input), io.Discard, tc.opts...)
			got, err := c.Read(t.Context())
			require.NoError(t, err)
			assert.Equal(t, padMsg, got)
			requireTooLarge(t, c, tc.limit)
		})
	}
}

func TestWithMaxFrameSizeZeroMeansDefault(t *testing.T) {
	t.Parallel()
	src := &endlessReader{}
	c := stdio.New(src, io.Discard, stdio.WithMaxFrameSize(0))
	requireTooLarge(t, c, stdio.DefaultMaxFrameSize) // the message names the limit
	assert.Greater(t, src.n, stdio.DefaultMaxFrameSize)
}

// endlessReader yields 'a' forever and counts what it handed out.
type endlessReader struct{ n int }

func (e *endlessReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'a'
	}
	e.n += len(p)
	return len(p), nil
}

func TestReadDoesNotConsumeUnboundedInput(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		max  int // 0: the default
	}{
		{name: "tiny limit", max: 1},
		{name: "small limit", max: 1000},
		{name: "limit one below the read buffer", max: 64<<10 - 1},
		{name: "limit equal to the read buffer", max: 64 << 10},
		{name: "limit one above the read buffer", max: 64<<10 + 1},
		{name: "limit of several buffers", max: 300_000},
		{name: "default limit"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			limit := tc.max
			if limit == 0 {
				limit = stdio.DefaultMaxFrameSize
			}
			src := &endlessReader{}
			c := stdio.New(src, io.Discard, stdio.WithMaxFrameSize(tc.max))
			requireTooLarge(t, c, limit)
			assert.Greater(t, src.n, limit, "the reader must see more than max bytes before refusing")
			assert.Less(t, src.n, limit+128<<10, "the reader consumed %d bytes for a limit of %d", src.n, limit)
		})
	}
}

// bigLine returns a request line of exactly n bytes whose params hold a
// string derived from seed, and the params it carries.
func bigLine(t *testing.T, id int64, n int, seed byte) (string, string) {
	t.Helper()
	head := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"big","params":{"s":"`, id)
	const tail = `"}}`
	fill := n - len(head) - len(tail)
	require.Positive(t, fill)
	var b strings.Builder
	b.Grow(fill)
	for i := range fill {
		b.WriteByte('a' + byte((i*7+int(seed))%26))
	}
	params := `{"s":"` + b.String() + `"}`
	return head + b.String() + tail, params
}

func TestReadReassemblesLargeFrames(t *testing.T) {
	t.Parallel()
	sizes := []struct {
		name string
		n    int
	}{
		{name: "one below the read buffer", n: 64<<10 - 1},
		{name: "equal to the read buffer", n: 64 << 10},
		{name: "one above the read buffer", n: 64<<10 + 1},
		{name: "several buffers", n: 200_003},
	}
	for _, sz := range sizes {
		for _, rv := range readerVariants {
			if rv.name == "one byte" && sz.n > 64<<10+1 {
				continue // slow, and the buffer boundaries are covered
			}
			t.Run(sz.name+"/"+rv.name, func(t *testing.T) {
				t.Parallel()
				l1, p1 := bigLine(t, 1, sz.n, 0)
				l2, p2 := bigLine(t, 2, sz.n+13, 5)
				require.Len(t, l1, sz.n)
				// The last frame has no newline: it is assembled at EOF.
				input := l1 + "\n" + line(3, "small") + "\r\n" + l2
				c := stdio.New(rv.wrap(strings.NewReader(input)), io.Discard)

				m1, err := c.Read(t.Context())
				require.NoError(t, err)
				r1, ok := m1.(*transport.Request)
				require.True(t, ok, "got %T", m1)
				m2, err := c.Read(t.Context())
				require.NoError(t, err)
				m3, err := c.Read(t.Context())
				require.NoError(t, err)
				r3, ok := m3.(*transport.Request)
				require.True(t, ok, "got %T", m3)
				requireEOF(t, c)

				// Compare after all reads: earlier messages must not alias the
				// reader's reused buffers.
				assert.Equal(t, transport.Int64ID(1), r1.ID)
				assert.True(t, bytes.Equal([]byte(p1), r1.Params), "first frame params differ")
				assert.Equal(t, req(3, "small"), m2)
				assert.Equal(t, transport.Int64ID(2), r3.ID)
				assert.True(t, bytes.Equal([]byte(p2), r3.Params), "last frame params differ")
			})
		}
	}
}
