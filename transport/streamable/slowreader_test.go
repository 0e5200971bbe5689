package streamable_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// floodTool reports progress with a large message until its context ends;
// started is closed at its first report, ended gets its context's cause.
type floodTool struct {
	started chan struct{}
	ended   chan error
}

func newFloodTool() *floodTool {
	return &floodTool{started: make(chan struct{}), ended: make(chan error, 1)}
}

func (f *floodTool) call(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
	msg := strings.Repeat("x", 32<<10)
	first := true
	for n := 1.0; ctx.Err() == nil; n++ {
		_ = server.ReportProgress(ctx, n, 0, msg)
		if first {
			close(f.started)
			first = false
		}
	}
	f.ended <- context.Cause(ctx)
	return nil, context.Cause(ctx)
}

// dialStalled opens a TCP connection to the test server whose receive
// buffer is small and that the test never reads: a client whose TCP window
// closes.
func dialStalled(t *testing.T, rawURL string) net.Conn {
	t.Helper()
	u, err := url.Parse(rawURL)
	require.NoError(t, err)
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		})
		if err != nil {
			return err
		}
		return serr
	}}
	conn, err := d.DialContext(t.Context(), "tcp", u.Host)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// postRaw writes a POST of body on conn, as a client that reads nothing
// back would.
func postRaw(t *testing.T, conn net.Conn, host, sid, body string) {
	t.Helper()
	req := fmt.Sprintf("POST / HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"+
		"Mcp-Session-Id: %s\r\nMCP-Protocol-Version: %s\r\nContent-Length: %d\r\n\r\n%s", host, sid, rsVersion, len(body), body)
	_, err := io.WriteString(conn, req)
	require.NoError(t, err)
}

// cutRecorder collects the Endpoint's cuts.
func cutRecorder() (chan streamable.StreamCut, streamable.Option) {
	cuts := make(chan streamable.StreamCut, 16)
	return cuts, streamable.WithStreamCutHook(func(c streamable.StreamCut) {
		select {
		case cuts <- c:
		default:
		}
	})
}

// ping posts a ping on the session and asserts its answer.
func (e *rsEnv) ping(sid string) {
	e.t.Helper()
	resp := e.do(e.t.Context(), http.MethodPost, `{"jsonrpc":"2.0","id":"p","method":"ping"}`, rsSession(sid))
	body, err := io.ReadAll(resp.Body)
	require.NoError(e.t, err)
	_ = resp.Body.Close()
	require.Equal(e.t, http.StatusOK, resp.StatusCode, "%s", body)
	require.Contains(e.t, string(body), `"result":{}`)
}

// A client that stops reading an SSE stream (its TCP window closed) while
// the server floods it cannot pin the stream: the write that cannot go
// out fails after the write timeout, the stream ends, the handler is
// cancelled, the cut is counted, and the session goes on serving. With
// and without an event store.
func TestSlowReaderCutByWriteTimeout(t *testing.T) {
	for _, resumable := range []bool{false, true} {
		t.Run(fmt.Sprintf("resumable=%v", resumable), func(t *testing.T) {
			flood := newFloodTool()
			srv := server.New(server.WithProgressInterval(0))
			require.NoError(t, srv.AddTool(server.Tool{Name: "flood", Description: "flood"}, flood.call))
			cuts, hook := cutRecorder()
			opts := []streamable.Option{hook, streamable.WithWriteTimeout(200 * time.Millisecond), streamable.WithResponseMode(streamable.ResponseSSE)}
			if resumable {
				opts = append(opts, streamable.WithEventStore(streamable.NewMemoryEventStore(0, 0)))
			}
			e := newRSEnv(t, srv, opts...)
			sid := e.initialize()

			conn := dialStalled(t, e.ts.URL)
			postRaw(t, conn, strings.TrimPrefix(e.ts.URL, "http://"), sid, rsCall("1", "flood"))
			<-flood.started
			start := time.Now()
			select {
			case c := <-cuts:
				assert.Equal(t, streamable.CutWriteTimeout, c)
				assert.Equal(t, "write_timeout", c.String())
			case <-time.After(30 * time.Second):
				t.Fatal("the stalled stream was not cut")
			}
			assert.Less(t, time.Since(start), 20*time.Second)
			if !resumable {
				// Without an event store the stream's end cancels the call.
				require.Error(t, <-flood.ended)
			}
			e.ping(sid) // the session lives on
		})
	}
}

// The write timeout bounds each write, not the stream: a stream idle for
// longer than it, whose client reads, carries its next event.
func TestWriteTimeoutIsPerWrite(t *testing.T) {
	g := newRSGates()
	cuts, hook := cutRecorder()
	e := newRSEnv(t, rsServer(t, g), hook, streamable.WithWriteTimeout(50*time.Millisecond))
	sid := e.initialize()
	post := e.do(t.Context(), http.MethodPost, rsCall("3", "steps"), rsSession(sid))
	defer func() { _ = post.Body.Close() }()
	sse := rsStream(t, post)
	<-g.started
	assert.Equal(t, "progress 1", summary(t, sse.event()))
	// Idle for more than the write timeout: a timer, not a barrier.
	<-time.After(150 * time.Millisecond)
	close(g.release1)
	assert.Equal(t, "progress 2", summary(t, sse.event()))
	close(g.release2)
	assert.Equal(t, "progress 3", summary(t, sse.event()))
	assert.Equal(t, "result 3 "+rsDone, summary(t, sse.event()))
	sse.end()
	select {
	case c := <-cuts:
		t.Fatalf("cut %v", c)
	default:
	}
}

// A large JSON answer to a client that does not read is bounded by the
// write timeout too: the write fails, is counted, and the session goes on.
func TestSlowReaderOfJSONAnswerCut(t *testing.T) {
	srv := server.New(server.WithMaxResultBytes(0)) // an answer larger than the socket buffers
	require.NoError(t, srv.AddTool(server.Tool{Name: "big", Description: "big"}, func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
		return server.Text(strings.Repeat("x", 8<<20)), nil
	}))
	cuts, hook := cutRecorder()
	e := newRSEnv(t, srv, hook, streamable.WithWriteTimeout(200*time.Millisecond), streamable.WithResponseMode(streamable.ResponseJSON))
	sid := e.initialize()

	conn := dialStalled(t, e.ts.URL)
	postRaw(t, conn, strings.TrimPrefix(e.ts.URL, "http://"), sid, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"big","arguments":{}}}`)
	select {
	case c := <-cuts:
		assert.Equal(t, streamable.CutWriteTimeout, c)
	case <-time.After(30 * time.Second):
		t.Fatal("the unread answer was not cut")
	}
	e.ping(sid)
}
