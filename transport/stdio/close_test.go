package stdio_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/stdio"
)

type readResult struct {
	msg transport.Message
	err error
}

// pipe returns an os.Pipe whose ends are closed when the test ends, whatever
// the test closed itself.
func pipe(t *testing.T) (*os.File, *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = r.Close()
		_ = w.Close()
	})
	return r, w
}

func TestCloseUnblocksBlockedRead(t *testing.T) {
	t.Parallel()
	pr, pw := pipe(t)
	c := stdio.New(pr, io.Discard)
	_, err := pw.WriteString(line(1, "first") + "\n")
	require.NoError(t, err)

	results := make(chan readResult)
	go func() {
		for range 2 {
			msg, err := c.Read(context.Background())
			results <- readResult{msg, err}
		}
	}()
	first := <-results
	require.NoError(t, first.err)
	assert.Equal(t, req(1, "first"), first.msg)

	// The goroutine is now in (or about to enter) a Read that only Close can
	// end: the pipe's write end stays open and silent.
	require.NoError(t, c.Close())
	second := <-results
	require.Error(t, second.err)
	assert.Nil(t, second.msg)
	require.ErrorIs(t, second.err, transport.ErrClosed)
	// os.ErrClosed too when the Read was blocked in the pipe when Close
	// came; a Read that begins after Close fails without touching the pipe.
	// Which of the two it was is the scheduler's choice.
	require.NotErrorIs(t, second.err, transport.ErrPeerGone)

	// Sticky, and Close closed the read end.
	_, err = c.Read(t.Context())
	require.ErrorIs(t, err, transport.ErrClosed)
	require.ErrorIs(t, pr.Close(), os.ErrClosed)
}

func TestCloseUnblocksBlockedWrite(t *testing.T) {
	t.Parallel()
	_, pw := pipe(t)
	c := stdio.New(strings.NewReader(""), pw)
	// Far more than a pipe buffer holds, and nobody reads pr.
	big := &transport.Request{Method: "big", Params: json.RawMessage(`{"s":"` + strings.Repeat("x", 1<<20) + `"}`)}

	done := make(chan error)
	go func() { done <- c.Write(context.Background(), big) }()
	require.NoError(t, c.Close())
	err := <-done
	require.ErrorIs(t, err, transport.ErrClosed)
	require.NotErrorIs(t, err, transport.ErrPeerGone)
	require.ErrorIs(t, pw.Close(), os.ErrClosed, "Close must close the write end")
}

func TestReadAfterClose(t *testing.T) {
	t.Parallel()
	pr, _ := pipe(t)
	c := stdio.New(pr, io.Discard)
	require.NoError(t, c.Close())
	msg, err := c.Read(t.Context())
	assert.Nil(t, msg)
	require.ErrorIs(t, err, transport.ErrClosed)
	require.NotErrorIs(t, err, transport.ErrPeerGone)
}

func TestWriteAfterClose(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		w    func(t *testing.T) (io.Writer, func() string)
	}{
		{
			name: "buffer",
			w: func(*testing.T) (io.Writer, func() string) {
				var buf bytes.Buffer
				return &buf, buf.String
			},
		},
		{
			name: "os pipe",
			w: func(t *testing.T) (io.Writer, func() string) {
				pr, pw := pipe(t)
				return pw, func() string {
					// Close closed pw, so the peer reads everything up to EOF.
					b, err := io.ReadAll(pr)
					require.NoError(t, err)
					return string(b)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w, written := tc.w(t)
			c := stdio.New(strings.NewReader(""), w)
			require.NoError(t, c.Write(t.Context(), req(1, "before")))
			require.NoError(t, c.Close())
			err := c.Write(t.Context(), req(2, "after"))
			require.ErrorIs(t, err, transport.ErrClosed)
			require.NotErrorIs(t, err, transport.ErrPeerGone)
			assert.Equal(t, "stdio: write: transport: closed", err.Error())
			assert.Equal(t, line(1, "before")+"\n", written())
		})
	}
}

func TestWritePeerGone(t *testing.T) {
	t.Parallel()
	pr, pw := pipe(t)
	require.NoError(t, pr.Close()) // the peer goes away first
	c := stdio.New(strings.NewReader(""), pw)
	for range 2 {
		err := c.Write(t.Context(), req(1, "m"))
		require.ErrorIs(t, err, transport.ErrPeerGone)
		require.ErrorIs(t, err, syscall.EPIPE)
		require.NotErrorIs(t, err, transport.ErrClosed)
	}
	require.NoError(t, c.Close())
	err := c.Write(t.Context(), req(2, "m"))
	require.ErrorIs(t, err, transport.ErrClosed, "after Close the local class wins")
	require.NotErrorIs(t, err, transport.ErrPeerGone)
}

func TestReadPeerGone(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		data string
		want []transport.Message
	}{
		{name: "no data"},
		{name: "complete lines", data: line(1, "a") + "\n" + line(2, "b") + "\n", want: []transport.Message{req(1, "a"), req(2, "b")}},
		{name: "unterminated last line", data: line(1, "a") + "\n" + line(2, "b"), want: []transport.Message{req(1, "a"), req(2, "b")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pr, pw := pipe(t)
			_, err := pw.WriteString(tc.data)
			require.NoError(t, err)
			require.NoError(t, pw.Close()) // the peer closes its write end
			c := stdio.New(pr, io.Discard)
			for _, want := range tc.want {
				got, err := c.Read(t.Context())
				require.NoError(t, err)
				assert.Equal(t, want, got)
			}
			requireEOF(t, c)
			require.NoError(t, c.Close())
		})
	}
}

func TestReadPeerGoneWhileBlocked(t *testing.T) {
	t.Parallel()
	pr, pw := pipe(t)
	c := stdio.New(pr, io.Discard)
	results := make(chan readResult)
	go func() {
		msg, err := c.Read(context.Background())
		results <- readResult{msg, err}
	}()
	require.NoError(t, pw.Close())
	res := <-results
	assert.Nil(t, res.msg)
	require.ErrorIs(t, res.err, transport.ErrPeerGone)
	require.ErrorIs(t, res.err, io.EOF)
	require.NoError(t, c.Close())
}

func TestCloseIdempotent(t *testing.T) {
	t.Parallel()
	pr, pw := pipe(t)
	c := stdio.New(pr, pw)
	require.NoError(t, c.Close())
	require.NoError(t, c.Close())
	require.NoError(t, c.Close())
	// Both ends were closed by the first Close.
	require.ErrorIs(t, pr.Close(), os.ErrClosed)
	require.ErrorIs(t, pw.Close(), os.ErrClosed)
}

// countingCloser is a reader and writer that counts Close calls.
type countingCloser struct {
	io.Reader
	io.Writer
	mu     sync.Mutex
	closes int
	err    error
}

func (c *countingCloser) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closes++
	return c.err
}

func (c *countingCloser) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closes
}

func TestCloseClosesASharedStreamOnce(t *testing.T) {
	t.Parallel()
	rw := &countingCloser{Reader: strings.NewReader(""), Writer: io.Discard}
	c := stdio.New(rw, rw)
	require.NoError(t, c.Close())
	require.NoError(t, c.Close())
	assert.Equal(t, 1, rw.count())
}

func TestCloseReportsCloseErrors(t *testing.T) {
	t.Parallel()
	errR, errW := errors.New("close r"), errors.New("close w")
	r := &countingCloser{Reader: strings.NewReader(""), err: errR}
	w := &countingCloser{Writer: io.Discard, err: errW}
	c := stdio.New(r, w)
	err := c.Close()
	require.ErrorIs(t, err, errR)
	require.ErrorIs(t, err, errW)
	require.NoError(t, c.Close(), "only the first Close reports")
	assert.Equal(t, 1, r.count())
	assert.Equal(t, 1, w.count())

	// The Conn is closed even though closing its streams failed.
	require.ErrorIs(t, c.Write(t.Context(), req(1, "m")), transport.ErrClosed)
}

func TestCloseWithoutClosers(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	c := stdio.New(strings.NewReader(line(1, "a")+"\n"), &buf)
	require.NoError(t, c.Close())
	require.NoError(t, c.Close())
	require.ErrorIs(t, c.Write(t.Context(), req(1, "m")), transport.ErrClosed)
	assert.Empty(t, buf.String())
}

// gateWriter blocks every Write until Close, then fails it.
type gateWriter struct {
	entered   chan struct{} // closed when the first Write starts
	enterOnce sync.Once
	release   chan struct{}
	closeOnce sync.Once
}

func newGateWriter() *gateWriter {
	return &gateWriter{entered: make(chan struct{}), release: make(chan struct{})}
}

func (g *gateWriter) Write([]byte) (int, error) {
	g.enterOnce.Do(func() { close(g.entered) })
	<-g.release
	return 0, io.ErrClosedPipe
}

func (g *gateWriter) Close() error {
	g.closeOnce.Do(func() { close(g.release) })
	return nil
}

func TestWriteCancelWhileWaitingForTurn(t *testing.T) {
	t.Parallel()
	gw := newGateWriter()
	c := stdio.New(strings.NewReader(""), gw)

	first := make(chan error)
	go func() { first <- c.Write(context.Background(), req(1, "holder")) }()
	<-gw.entered // the first writer holds the write lock

	// A writer whose context is already done gives up instead of waiting.
	cause := errors.New("caller gave up")
	ctx, cancel := context.WithCancelCause(t.Context())
	cancel(cause)
	err := c.Write(ctx, req(2, "waiter"))
	require.ErrorIs(t, err, cause)
	require.NotErrorIs(t, err, transport.ErrClosed)

	// A writer waiting for its turn gives up when the Conn closes.
	third := make(chan error)
	go func() { third <- c.Write(context.Background(), req(3, "waiter")) }()
	require.NoError(t, c.Close())

	err = <-first
	require.ErrorIs(t, err, transport.ErrClosed, "the blocked write failed because we closed")
	require.ErrorIs(t, err, io.ErrClosedPipe)
	require.NotErrorIs(t, err, transport.ErrPeerGone)
	err = <-third
	require.ErrorIs(t, err, transport.ErrClosed)
	require.NotErrorIs(t, err, transport.ErrPeerGone)
}

func TestReadAfterCloseFails(t *testing.T) {
	t.Parallel()
	pr, pw := pipe(t)
	_, err := pw.WriteString(line(1, "a") + "\n" + line(2, "b") + "\n")
	require.NoError(t, err)
	c := stdio.New(pr, io.Discard)
	got, err := c.Read(t.Context())
	require.NoError(t, err)
	assert.Equal(t, req(1, "a"), got)
	require.NoError(t, c.Close())
	got, err = c.Read(t.Context()) // line 2 is already buffered
	require.ErrorIs(t, err, transport.ErrClosed, "got %v", got)
}
