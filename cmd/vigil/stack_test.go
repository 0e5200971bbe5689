package main

import (
	"bufio"
	"bytes"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/cmd/internal/benchkit"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// stackProbe names the protocol era a re-run of this test binary probes
// (see TestRequestFitsTheStartingStack).
const stackProbe = "VIGIL_STACK_PROBE"

// startingStack is the stack a goroutine starts with (the runtime's
// fixed starting size, with GODEBUG=adaptivestackstart=0).
const startingStack = 8 << 10

// stackMargin is the stack left free under an echo call: the room a
// change to the request path may take before it needs a stack copy.
const stackMargin = 1 << 10

// TestRequestFitsTheStartingStack checks that a tools/call echo, served
// by the shipped endpoint on a net/http connection's goroutine, fits in
// the stack that goroutine starts with, with stackMargin to spare.
//
// A request path that needs more makes the goroutine copy its stack to
// one twice the size, and the garbage collector halves every idle
// goroutine's stack again: with thousands of keep-alive connections, each
// doing a few requests between collections, nearly every request paid
// two stack copies, and the service served under half the floor's
// requests per second (docs/perf/ROUNDS.md). The probe runs in a child
// process whose goroutines may not grow past the starting stack
// (debug.SetMaxStack): a request that would grow it crashes the child,
// which prints where. The probe also waits for the calls' log lines,
// written once their outcomes are recorded on a goroutine of the outcome
// batches, under the same limit: the stack that goroutine grows to before
// it records (server's recordingStack) must hold the recording.
func TestRequestFitsTheStartingStack(t *testing.T) {
	if era := os.Getenv(stackProbe); era != "" {
		probeStack(t, era == "2026")
		return
	}
	probe := os.Args[0]
	if builtWith("-race") {
		// The race detector's instrumentation makes every frame larger,
		// and the budget is the service's: probe a build without it.
		probe = filepath.Join(t.TempDir(), "vigil.test")
		out, err := exec.CommandContext(t.Context(), "go", "test", "-c", "-o", probe, ".").CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	for _, era := range []string{"2025", "2026"} {
		t.Run(era, func(t *testing.T) {
			cmd := exec.CommandContext(t.Context(), probe, "-test.run=^TestRequestFitsTheStartingStack$", "-test.count=1")
			cmd.Env = append(os.Environ(), stackProbe+"="+era, "GODEBUG=adaptivestackstart=0")
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "the echo call outgrew the starting stack less %d bytes:\n%s", stackMargin, out)
		})
	}
}

// probeStack serves echo calls on connections whose goroutines start
// with the fixed starting stack, each call under a frame of stackMargin
// bytes, with every goroutine's stack limited to that starting size.
func probeStack(t *testing.T, stateless bool) {
	logged := &lineSignal{want: []byte(`method=tools/call`), seen: make(chan struct{}, 8)}
	h, _ := newServiceHandler(t, logged)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		underMargin(func() { h.ServeHTTP(w, r) })
	}))
	defer srv.Close()
	header := http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"}}
	post := func(conn net.Conn, body []byte) *http.Response {
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/mcp", bytes.NewReader(body))
		require.NoError(t, err)
		req.Header = header.Clone()
		require.NoError(t, req.Write(conn))
		resp, err := http.ReadResponse(bufio.NewReader(conn), req)
		require.NoError(t, err)
		return resp
	}
	dial := func() net.Conn {
		conn, err := net.Dial("tcp", srv.Listener.Addr().String())
		require.NoError(t, err)
		return conn
	}
	if !stateless {
		conn := dial()
		resp := post(conn, []byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"`+protocol.Version20250618+`","capabilities":{},"clientInfo":{"name":"probe","version":"1"}}}`))
		require.Equal(t, http.StatusOK, resp.StatusCode)
		benchkit.SetEchoHeaders(header, false, resp.Header.Get("Mcp-Session-Id"))
		require.Equal(t, http.StatusAccepted, post(conn, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)).StatusCode)
		_ = conn.Close()
	} else {
		benchkit.SetEchoHeaders(header, true, "")
	}
	grow(startingStack) // this goroutine's own reads and writes stay clear of the limit
	defer debug.SetMaxStack(debug.SetMaxStack(startingStack))
	conn := dial() // a new connection: a new goroutine, on the starting stack
	defer func() { _ = conn.Close() }()
	for id := 1; id <= 3; id++ {
		resp := post(conn, benchkit.AppendEchoCall(nil, id, stateless))
		var body bytes.Buffer
		_, err := body.ReadFrom(resp.Body)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body.Bytes())
		require.Contains(t, body.String(), string(benchkit.EchoAnswer), "call %s", strconv.Itoa(id))
	}
	for range 3 { // the calls' outcomes, recorded under the limit
		select {
		case <-logged.seen:
		case <-t.Context().Done():
			t.Fatal("the calls' log lines were never written")
		}
	}
}

// lineSignal is a log's destination that signals seen once for each line
// written that contains want, up to seen's capacity: past it the log's
// writer goes on rather than wait for a reader.
type lineSignal struct {
	want []byte
	seen chan struct{}
}

func (w *lineSignal) Write(p []byte) (int, error) {
	for line := range bytes.Lines(p) {
		if bytes.Contains(line, w.want) {
			select {
			case w.seen <- struct{}{}:
			default:
			}
		}
	}
	return len(p), nil
}

// builtWith reports whether this binary was built with the boolean build
// flag (such as -race).
func builtWith(flag string) bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == flag {
			return s.Value == "true"
		}
	}
	return false
}

// underMargin calls f under a frame of stackMargin bytes.
//
//go:noinline
func underMargin(f func()) {
	var pad [stackMargin]byte
	f()
	keep(pad[:])
}

// grow makes the calling goroutine's stack hold at least n more bytes.
//
//go:noinline
func grow(n int) {
	var pad [1 << 10]byte
	if n > len(pad) {
		grow(n - len(pad))
	}
	keep(pad[:])
}

//go:noinline
func keep([]byte) {}
