package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/transport/protocol"
)

// The byte budget's acceptance (issue 56, N2): what a vigil under
// GOMEMLIMIT=256MiB, the limit the k8s manifest ships, may reach in
// resident memory while callers hold slow calls with large arguments.
const (
	bytesRSSBudget = 400 << 20
	bytesCalls     = 256
	bytesArg       = 3 << 20
)

// bigAction is the action of every held call: bytesArg bytes, shared.
var bigAction = bytes.Repeat([]byte("a"), bytesArg)

// loopbackClient returns an HTTP client whose connections come from
// address from (127.0.0.2, ...): another caller, as vigil counts callers
// without authorization (by IP address).
func loopbackClient(t *testing.T, from string) *http.Client {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	hc := &http.Client{Transport: &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: bytesCalls}}
	t.Cleanup(hc.CloseIdleConnections)
	return hc
}

// elicitingClient returns a client in a new initialized session that
// declares the elicitation capability.
func elicitingClient(t *testing.T, hc *http.Client, base string) *svcClient {
	t.Helper()
	c := &svcClient{hc: hc, url: base + "/mcp"}
	res, err := c.rpc(`0`, "initialize", `{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{"form":{}}},"clientInfo":{"name":"holder","version":"1"}}`)
	require.NoError(t, err)
	require.Nil(t, res.Error)
	require.NoError(t, c.notify("notifications/initialized"))
	return c
}

// heldCalls is the outcome of calls an attacker holds open.
type heldCalls struct {
	held, refused429, refused503, other atomic.Int64
	refusedShare                        atomic.Int64 // answered -32000 by the tool-share quota
	retryAfter                          atomic.Bool  // every refusal said Retry-After
	quotaBytes                          atomic.Bool  // a 429 named the bytes quota
}

// holdConfirm calls confirm_action with an action of bytesArg bytes in
// session c and, once vigil asks the user (elicitation/create on the
// call's stream), holds the call unanswered until ctx ends. done is
// called once the call is held or refused.
func holdConfirm(ctx context.Context, c *svcClient, i int, out *heldCalls, done func()) {
	defer func() {
		if done != nil {
			done()
		}
	}()
	head := `{"jsonrpc":"2.0","id":` + strconv.Itoa(i) + `,"method":"tools/call","params":{"name":"confirm_action","arguments":{"action":"`
	const tail = `"}}}`
	body := io.MultiReader(strings.NewReader(head), bytes.NewReader(bigAction), strings.NewReader(tail))
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, body)
	if err != nil {
		out.other.Add(1)
		return
	}
	req.ContentLength = int64(len(head) + len(bigAction) + len(tail))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", c.session)
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	resp, err := c.hc.Do(req)
	if err != nil {
		out.other.Add(1)
		return
	}
	defer func() { _ = resp.Body.Close() }()
	switch resp.StatusCode {
	case http.StatusOK:
		if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
			if bytes.Contains(b, []byte(`"quota":"tool_share"`)) {
				out.refusedShare.Add(1) // a caller holds half of a tool's slots
			} else {
				out.other.Add(1)
			}
			return
		}
	case http.StatusTooManyRequests, http.StatusServiceUnavailable:
		if resp.Header.Get("Retry-After") == "" {
			out.retryAfter.Store(false)
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		if resp.StatusCode == http.StatusTooManyRequests {
			out.refused429.Add(1)
			if bytes.Contains(b, []byte(`"quota":"bytes"`)) {
				out.quotaBytes.Store(true)
			}
		} else {
			out.refused503.Add(1)
		}
		return
	default:
		out.other.Add(1)
		return
	}
	// The elicitation's method comes before its params, in the first
	// bytes; the call is held once its event is read whole (written: the
	// server holds the call, not the event).
	buf := make([]byte, 64<<10)
	var seen []byte
	asked := false
	for {
		n, err := resp.Body.Read(buf)
		seen = append(seen, buf[:n]...)
		asked = asked || bytes.Contains(seen, []byte(`"elicitation/create"`))
		if asked && bytes.HasSuffix(seen, []byte("\n\n")) {
			break
		}
		if err != nil {
			out.other.Add(1)
			return
		}
		seen = seen[len(seen)-min(len(seen), 64):]
	}
	out.held.Add(1)
	done()
	done = nil
	_, _ = io.Copy(io.Discard, resp.Body) // until ctx ends the call
}

// peakRSS samples pid's VmRSS until stop is closed and returns the most.
func peakRSS(pid int, stop <-chan struct{}) <-chan int64 {
	peak := make(chan int64, 1)
	go func() {
		var most int64
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			most = max(most, readRSS(pid))
			select {
			case <-stop:
				peak <- most
				return
			case <-tick.C:
			}
		}
	}()
	return peak
}

// readRSS returns the VmRSS of process pid, in bytes; 0 if it cannot be
// read (the caller's vmRSS, on the test's goroutine, fails the test then).
func readRSS(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// bytesRun is what bytesAttack saw.
type bytesRun struct {
	out         heldCalls
	rss0, peak  int64 // vigil's RSS before the attack, and its most while the calls were held
	echo        svcMessage
	echoErr     error
	echoRetries int // of the echo, refused at the memory budget
}

// bytesAttack starts vigil under GOMEMLIMIT=256MiB, the limit the k8s
// manifest ships, and has the callers at addrs (127.0.0.x) hold bytesCalls
// calls of confirm_action with an action of bytesArg bytes, spread over
// four sessions each, their elicitations left unanswered. While they are
// held, a caller at 127.0.0.2 calls echo.
func bytesAttack(t *testing.T, addrs ...string) *bytesRun {
	t.Helper()
	if testing.Short() {
		t.Skip("sends 768 MiB")
	}
	t.Setenv("GOMEMLIMIT", "256MiB")
	svc := startService(t, "-http", "127.0.0.1:0")
	pid := svc.cmd.Process.Pid
	other := &svcClient{hc: loopbackClient(t, "127.0.0.2"), url: svc.base + "/mcp"}
	res, err := other.rpc(`0`, "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"other","version":"1"}}`)
	require.NoError(t, err)
	require.Nil(t, res.Error)
	require.NoError(t, other.notify("notifications/initialized"))
	run := &bytesRun{rss0: vmRSS(t, pid)}

	const sessions = 4 // per caller, each within the per-session limit
	var clients []*svcClient
	for _, addr := range addrs {
		hc := loopbackClient(t, addr)
		for range sessions {
			clients = append(clients, elicitingClient(t, hc, svc.base))
		}
	}
	stop := make(chan struct{})
	peak := peakRSS(pid, stop)
	ctx, release := context.WithCancel(t.Context())
	run.out.retryAfter.Store(true)
	var settled, ended sync.WaitGroup
	for i := range bytesCalls {
		settled.Add(1)
		ended.Add(1)
		go func() {
			defer ended.Done()
			holdConfirm(ctx, clients[i%len(clients)], 100+i, &run.out, settled.Done)
		}()
	}
	settled.Wait() // every call held or refused
	for try := 0; ; try++ {
		// A client honoring Retry-After: the last event vigil wrote may
		// count until its write returned.
		run.echo, run.echoErr = other.rpc(`1`, "tools/call", `{"name":"echo","arguments":{"text":"still served"}}`)
		if run.echoErr == nil || !strings.Contains(run.echoErr.Error(), protocol.RejectMemoryBudget.Message()) || try == 3 {
			break
		}
		run.echoRetries++
		time.Sleep(time.Second)
	}
	close(stop)
	run.peak = <-peak
	release()
	ended.Wait()
	out := &run.out
	t.Logf("from %.0f MiB: peak RSS %.0f MiB with %d calls held, %d refused 429, %d refused 503, %d refused by the tool share, %d otherwise; echo retried %d times",
		float64(run.rss0)/(1<<20), float64(run.peak)/(1<<20), out.held.Load(), out.refused429.Load(), out.refused503.Load(), out.refusedShare.Load(), out.other.Load(), run.echoRetries)
	assert.Less(t, run.peak, int64(bytesRSSBudget), "peak RSS over %d MiB", bytesRSSBudget>>20)
	assert.Positive(t, out.held.Load(), "no call admitted")
	assert.True(t, out.retryAfter.Load(), "a refusal without Retry-After")
	assert.Zero(t, out.other.Load(), "calls neither held nor refused")
	return run
}

// TestBytesBudgetFromTheOperatorsLimit is TestBytesOneCallerHoldsLargeCalls
// with the collector running often from the start (GOGC=10), as a loaded
// machine makes it: the memory budget is an eighth of GOMEMLIMIT, not of
// the lower limit the collector's tuner sets after a collection. Read
// from a tuned limit (the tuner started before the endpoint took its
// budget), it held one 3 MiB call, refused the other 255 with 503 and the
// other caller's echo too.
func TestBytesBudgetFromTheOperatorsLimit(t *testing.T) {
	t.Setenv("GOGC", "10")
	run := bytesAttack(t, "127.0.0.1")
	require.NoError(t, run.echoErr, "another caller is not served")
	assert.Positive(t, run.out.refused429.Load(), "the caller's byte quota refuses before the process's budget")
	assert.Greater(t, run.out.held.Load(), int64(1), "the budget holds more than one call")
}

// TestBytesOneCallerHoldsLargeCalls is the acceptance of the byte budget
// (issue 56, N2): under GOMEMLIMIT=256MiB one caller sends 256 calls of
// confirm_action with a 3 MiB action each and leaves their elicitations
// unanswered. vigil refuses what the caller's byte quota cannot hold (429
// with Retry-After, naming the bytes quota), its resident memory stays
// under 400 MiB while the calls are held, and another caller (another
// address) is still served.
func TestBytesOneCallerHoldsLargeCalls(t *testing.T) {
	run := bytesAttack(t, "127.0.0.1")
	require.NoError(t, run.echoErr, "another caller is not served")
	require.Nil(t, run.echo.Error)
	assert.Contains(t, string(run.echo.Result), "still served")
	assert.Positive(t, run.out.refused429.Load(), "no call refused by the caller's byte quota")
	assert.True(t, run.out.quotaBytes.Load(), "no 429 names the bytes quota")
}

// TestBytesManyCallersHoldLargeCalls is the same attack from eight
// callers (eight addresses), each within its byte quota: the process's
// memory budget (an eighth of GOMEMLIMIT) refuses what they hold together
// past it, with 503 and Retry-After, the resident memory stays under the
// manifest's limit of 256 MiB, and a small request of another caller,
// which fits the budget, is served.
func TestBytesManyCallersHoldLargeCalls(t *testing.T) {
	var addrs []string
	for i := range 8 {
		addrs = append(addrs, "127.0.0."+strconv.Itoa(10+i))
	}
	run := bytesAttack(t, addrs...)
	require.NoError(t, run.echoErr, "a small request within the budget is not served")
	require.Nil(t, run.echo.Error)
	assert.Positive(t, run.out.refused503.Load(), "no call refused by the memory budget")
	assert.Less(t, run.peak, int64(256<<20), "peak RSS over the manifest's limit")
}
