package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/cmd/internal/benchkit"
	"github.com/vigil-mcp/vigil/internal/testkit/nginxtest"
	"github.com/vigil-mcp/vigil/internal/testkit/redistest"
)

// The shared-mode chaos test (helpers start with "ch") runs the shipped
// vigil as three replicas with -redis on a real redis-server, behind a real
// nginx doing round robin with no affinity, and a client that checks
// every answer.

// chReplica is one vigil -redis process on a fixed port, which it keeps
// across restarts (the proxy's upstream).
type chReplica struct {
	t     *testing.T
	port  int
	redis string
	dir   string
	gen   int
	cmd   *exec.Cmd
	wait  chan error
	logs  []string // the log file of each process it ran
}

func newCHReplica(t *testing.T, redisURL, dir string) *chReplica {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	r := &chReplica{t: t, port: port, redis: redisURL, dir: dir}
	r.start()
	t.Cleanup(func() { r.stop(syscall.SIGKILL) })
	return r
}

func (r *chReplica) addr() string { return "127.0.0.1:" + strconv.Itoa(r.port) }

// start runs a new process and waits until it is ready.
func (r *chReplica) start() {
	r.t.Helper()
	r.gen++
	logPath := filepath.Join(r.dir, fmt.Sprintf("vigil-%d-%d.log", r.port, r.gen))
	f, err := os.Create(logPath)
	require.NoError(r.t, err)
	cmd := exec.Command(vigilBin, "-http", r.addr(), "-shutdown-grace", "3s", "-redis", r.redis)
	cmd.Env = append(os.Environ(), "VIGIL_REQUEST_STATE_KEY=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", "VIGIL_CLUSTER_KEY="+testClusterKeyB64)
	cmd.Stderr = f
	require.NoError(r.t, cmd.Start())
	r.cmd, r.wait, r.logs = cmd, make(chan error, 1), append(r.logs, logPath)
	go func() { r.wait <- cmd.Wait(); _ = f.Close() }()
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get("http://" + r.addr() + "/readyz")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		require.True(r.t, time.Now().Before(deadline), "replica %d not ready within 20s", r.port)
		time.Sleep(20 * time.Millisecond) // waiting for a process to listen: no event to wait on
	}
}

// stop signals the process and waits for it to exit; SIGTERM must exit 0.
func (r *chReplica) stop(sig syscall.Signal) {
	if r.cmd == nil {
		return
	}
	_ = r.cmd.Process.Signal(sig)
	err := <-r.wait
	if sig == syscall.SIGTERM {
		assert.NoError(r.t, err, "replica %d exit after SIGTERM", r.port)
	}
	r.cmd = nil
}

// scrape returns a counter's sum from the replica's /metrics.
func (r *chReplica) scrape(name string) int64 {
	r.t.Helper()
	resp, err := http.Get("http://" + r.addr() + "/metrics")
	require.NoError(r.t, err)
	defer func() { _ = resp.Body.Close() }()
	n, _, err := benchkit.SumCounter(resp.Body, name)
	require.NoError(r.t, err)
	return n
}

// chClient talks to the proxy.
type chClient struct {
	t    *testing.T
	url  string
	http *http.Client
}

func (c *chClient) post(ctx context.Context, sid, body string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	}
	return c.http.Do(req)
}

func (c *chClient) initialize() string {
	c.t.Helper()
	resp, err := c.post(c.t.Context(), "", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"chaos","version":"1"}}}`)
	require.NoError(c.t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	require.Equal(c.t, http.StatusOK, resp.StatusCode)
	sid := resp.Header.Get("Mcp-Session-Id")
	require.NotEmpty(c.t, sid)
	resp, err = c.post(c.t.Context(), sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	require.NoError(c.t, err)
	_ = resp.Body.Close()
	require.Equal(c.t, http.StatusAccepted, resp.StatusCode)
	return sid
}

// echo calls echo and returns the HTTP status and whether the answer was
// the echo's.
func (c *chClient) echo(sid string, n int) (int, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.post(ctx, sid, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":"e%d"}}}`, n, n))
	if err != nil {
		c.t.Logf("echo %d on %s: %v", n, sid, err)
		return 0, false
	}
	defer func() { _ = resp.Body.Close() }()
	want := []byte(fmt.Sprintf(`"text":"e%d"`, n))
	if resp.Header.Get("Content-Type") != "text/event-stream" {
		body, _ := io.ReadAll(resp.Body)
		ok := bytes.Contains(body, want)
		if !ok {
			c.t.Logf("echo %d on %s: status %d: %s", n, sid, resp.StatusCode, body)
		}
		return resp.StatusCode, ok
	}
	ok := c.follow(ctx, sid, resp.Body, func(data []byte) bool { return bytes.Contains(data, want) })
	if !ok {
		c.t.Logf("echo %d on %s: its SSE answer never came (%v)", n, sid, ctx.Err())
	}
	return resp.StatusCode, ok
}

// follow reads an SSE answer until an event's data satisfies done, resuming
// the stream with Last-Event-ID through the proxy when it ends before, as a
// client does when a replica hands its stream back.
func (c *chClient) follow(ctx context.Context, sid string, body io.Reader, done func([]byte) bool) bool {
	found := false
	last, _ := readEvents(body, "", func(ev chEvent) bool { found = done(ev.data); return !found })
	for !found && last != "" && ctx.Err() == nil {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.url, nil)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		req.Header.Set("Last-Event-ID", last)
		resp, err := c.http.Do(req)
		if err != nil {
			continue
		}
		if resp.StatusCode != http.StatusOK {
			body, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			c.t.Logf("resuming %s after %s: status %d: %s", sid, last, resp.StatusCode, body)
			return false
		}
		last, _ = readEvents(resp.Body, last, func(ev chEvent) bool { found = done(ev.data); return !found })
		_ = resp.Body.Close()
	}
	return found
}

// chEvent is one SSE event.
type chEvent struct {
	id   string
	data []byte
}

// readEvents sends the stream's events with data to out, and returns the
// last event id seen and why it stopped (io.EOF: the stream ended).
func readEvents(body io.Reader, lastID string, out func(chEvent) bool) (string, error) {
	br := bufio.NewReader(body)
	var ev chEvent
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return lastID, err
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "":
			if ev.id != "" {
				lastID = ev.id
			}
			if len(ev.data) > 0 && !out(ev) {
				return lastID, nil
			}
			ev = chEvent{}
		case strings.HasPrefix(line, "id:"):
			ev.id = strings.TrimSpace(line[3:])
		case strings.HasPrefix(line, "data:"):
			ev.data = append(ev.data, strings.TrimSpace(line[5:])...)
		}
	}
}

// chConfirm is one confirm_action call: its elicitation, then its outcome.
type chConfirm struct {
	sid     string
	started chan struct{}        // its POST was answered (the stream began)
	asked   chan json.RawMessage // the elicitation's id
	outcome chan string          // "ok", "lost", or what went wrong
}

// run calls confirm_action and follows its stream to the end, resuming it
// through the proxy whenever it breaks.
func (c *chClient) run(cf *chConfirm) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	resp, err := c.post(ctx, cf.sid, `{"jsonrpc":"2.0","id":"confirm","method":"tools/call","params":{"name":"confirm_action","arguments":{"action":"deploy"}}}`)
	close(cf.started)
	if err != nil {
		cf.outcome <- "post: " + err.Error()
		return
	}
	final := ""
	handle := func(ev chEvent) bool {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(ev.data, &m) != nil {
			return true
		}
		switch {
		case m.Method == "elicitation/create":
			cf.asked <- m.ID
		case m.Error != nil && m.Error.Code == -32000 && strings.Contains(m.Error.Message, "server instance lost"):
			final = "lost"
			return false
		case m.Error != nil:
			final = fmt.Sprintf("error %d %s", m.Error.Code, m.Error.Message)
			return false
		case m.Result != nil && bytes.Contains(m.Result, []byte("confirmed")):
			final = "ok"
			return false
		case m.Result != nil:
			final = "result " + string(m.Result)
			return false
		}
		return true
	}
	last, _ := readEvents(resp.Body, "", handle)
	_ = resp.Body.Close()
	for final == "" && ctx.Err() == nil {
		if last == "" {
			cf.outcome <- "stream broke before its first event id"
			return
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.url, nil)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Mcp-Session-Id", cf.sid)
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		req.Header.Set("Last-Event-ID", last)
		resp, err := c.http.Do(req)
		if err != nil {
			continue
		}
		if resp.StatusCode != http.StatusOK {
			_ = resp.Body.Close()
			cf.outcome <- fmt.Sprintf("resume: status %d", resp.StatusCode)
			return
		}
		last, _ = readEvents(resp.Body, last, handle)
		_ = resp.Body.Close()
	}
	if final == "" {
		final = "never answered"
	}
	cf.outcome <- final
}

// TestChaosSharedReplicas: 50 sessions, each with a call in flight whose
// elicitation waits, spread by nginx over three vigil -redis replicas.
// SIGKILL one replica: every call it ran is answered "server instance lost"
// on its client's resumed stream, counted once by the survivors; every
// other call completes when answered through any replica; every session's
// next call succeeds. Then a rolling restart of all three under load: no
// 404, no failed call, no session lost. The echo calls the client saw
// succeed are exactly those the replicas logged.
func TestChaosSharedReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos test: skipped with -short")
	}
	redis := redistest.Start(t)
	dir := t.TempDir()
	if d := os.Getenv("CHAOS_LOGDIR"); d != "" {
		dir = d // kept, to read the replicas' logs
	}
	var reps []*chReplica
	var upstreams []string
	for range 3 {
		r := newCHReplica(t, redis.URL(), dir)
		reps = append(reps, r)
		upstreams = append(upstreams, r.addr())
	}
	proxy := nginxtest.Start(t, upstreams...)

	// The shared mode's metrics the dashboards and the deploy kit name are
	// those a replica exposes.
	families := exposedFamilies(t.Context(), t, http.DefaultClient, "http://"+reps[0].addr()+"/metrics")
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	var shared int
	for name, where := range referencedMetricNames(t, filepath.Join(root, "dashboards"), filepath.Join(root, "deploy")) {
		if sharedModeMetric(name) {
			shared++
			assert.True(t, families.exposes(name), "%s (in %s) is not a metric of vigil -redis's /metrics", name, where)
		}
	}
	assert.NotZero(t, shared, "the shared mode's metrics are documented")
	c := &chClient{t: t, url: proxy.URL() + "/mcp", http: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}

	const sessions = 50
	confirms := make([]*chConfirm, sessions)
	for i := range confirms {
		confirms[i] = &chConfirm{sid: c.initialize(), started: make(chan struct{}), asked: make(chan json.RawMessage, 1), outcome: make(chan string, 1)}
	}
	// One POST after the other, so that round robin spreads them.
	for _, cf := range confirms {
		go c.run(cf)
		<-cf.started
	}
	ids := make([]json.RawMessage, sessions)
	for i, cf := range confirms {
		select {
		case ids[i] = <-cf.asked:
		case out := <-cf.outcome:
			t.Fatalf("session %d: %s before its elicitation", i, out)
		}
	}

	// Every handler waits for its elicitation's answer: kill one replica.
	victim := reps[1]
	victim.stop(syscall.SIGKILL)

	// The answers, through any replica: a live handler gets its answer;
	// the victim's are lost with it.
	for i, cf := range confirms {
		resp, err := c.post(t.Context(), cf.sid, `{"jsonrpc":"2.0","id":`+string(ids[i])+`,"result":{"action":"accept","content":{"confirm":true}}}`)
		require.NoError(t, err)
		_ = resp.Body.Close()
		require.Equal(t, http.StatusAccepted, resp.StatusCode, "session %d: its answer", i)
	}
	outcomes := map[string]int{}
	for i, cf := range confirms {
		out := <-cf.outcome
		outcomes[out]++
		assert.Contains(t, []string{"ok", "lost"}, out, "session %d", i)
	}
	t.Logf("after SIGKILL of one replica: %v", outcomes)
	assert.Equal(t, sessions, outcomes["ok"]+outcomes["lost"], "every call ended in one outcome")
	assert.Positive(t, outcomes["lost"], "the victim ran some of the calls (round robin)")
	assert.Positive(t, outcomes["ok"])
	lost := reps[0].scrape("mcp_server_requests_lost_total") + reps[2].scrape("mcp_server_requests_lost_total")
	assert.Equal(t, int64(outcomes["lost"]), lost, "the survivors counted each lost call once")

	// Every session goes on.
	var okEcho atomic.Int64
	var n atomic.Int64
	for i, cf := range confirms {
		status, ok := c.echo(cf.sid, int(n.Add(1)))
		require.Equal(t, http.StatusOK, status, "session %d after the kill", i)
		require.True(t, ok, "session %d after the kill", i)
		okEcho.Add(1)
	}

	// A rolling restart of all three under load.
	victim.start()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var failed, notFound atomic.Int64
	for w := range 8 {
		wg.Go(func() {
			for k := w; ; k++ {
				select {
				case <-stop:
					return
				default:
				}
				status, ok := c.echo(confirms[k%sessions].sid, int(n.Add(1)))
				switch {
				case status == http.StatusNotFound:
					notFound.Add(1)
				case !ok:
					failed.Add(1)
				default:
					okEcho.Add(1)
				}
			}
		})
	}
	for _, r := range reps {
		r.stop(syscall.SIGTERM)
		r.start()
	}
	close(stop)
	wg.Wait()
	assert.Zero(t, notFound.Load(), "404s during the rolling restart")
	assert.Zero(t, failed.Load(), "failed calls during the rolling restart")
	for i, cf := range confirms {
		status, ok := c.echo(cf.sid, int(n.Add(1)))
		require.True(t, status == http.StatusOK && ok, "session %d after the rolling restart: %d", i, status)
		okEcho.Add(1)
	}

	// Accounting, against the client's ground truth: every echo it saw
	// answered was logged once, by the replica that answered it.
	for _, r := range reps {
		r.stop(syscall.SIGTERM) // flushes the log
	}
	var logged int64
	for _, r := range reps {
		for _, path := range r.logs {
			if r == victim && path == r.logs[0] {
				continue // killed: no echo ran there, and its log is cut
			}
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			for line := range strings.SplitSeq(string(data), "\n") {
				if strings.Contains(line, "msg=request method=tools/call tool=echo ") && strings.Contains(line, "outcome=ok") {
					logged++
				}
			}
		}
	}
	t.Logf("echo calls: %d answered (client), %d logged (replicas)", okEcho.Load(), logged)
	assert.Equal(t, okEcho.Load(), logged)
	if t.Failed() {
		t.Logf("nginx errors:\n%s", proxy.ErrorLog())
	}
}
