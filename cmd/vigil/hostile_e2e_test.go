package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Budgets of the hostile end-to-end tests (issue 41): what one attack may
// add to vigil's resident memory, and the size of the debug page's JSON.
const (
	hostileRSSBudget  = 32 << 20
	hostileJSONBudget = 16 << 20
	hostileMarker     = "bomb-" // every name the attacks make up starts so
)

// hostileName returns a made-up name of n bytes, unique to what and i.
func hostileName(what string, i, n int) string {
	p := hostileMarker + what + "-" + strconv.Itoa(i) + "-"
	return p + strings.Repeat("a", max(n-len(p), 0))
}

// vmRSS returns the resident memory of process pid (VmRSS), in bytes.
func vmRSS(t *testing.T, pid int) int64 {
	t.Helper()
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			require.NoError(t, err)
			return kb << 10
		}
	}
	t.Fatalf("no VmRSS in /proc/%d/status", pid)
	return 0
}

// hostileRig is a vigil process under attack, and a benign client of it.
type hostileRig struct {
	t      *testing.T
	svc    *svcProcess
	hc     *http.Client
	benign *svcClient
	rss0   int64  // VmRSS before the attack
	echoes uint64 // calls of echo answered
}

func newHostileRig(t *testing.T) *hostileRig {
	svc := startService(t, "-http", "127.0.0.1:0")
	hc := &http.Client{Transport: &http.Transport{}, Timeout: 60 * time.Second}
	t.Cleanup(hc.CloseIdleConnections)
	r := &hostileRig{t: t, svc: svc, hc: hc, benign: r0Client(t, hc, svc.base, "benign")}
	r.echo()
	r.page() // the page's structures allocated
	// Benign load first, so that the attack is measured against vigil
	// under load rather than idle: the heap goal then is -gc-headroom
	// (32 MiB, live heap included), and RSS follows it.
	warm := `{"name":"echo","arguments":{"text":"` + strings.Repeat("w", 64<<10) + `"}}`
	for i := range 600 {
		res, err := r.benign.rpc(strconv.Itoa(i), "tools/call", warm)
		require.NoError(t, err)
		require.Nil(t, res.Error)
		r.echoes++
	}
	r.rss0 = vmRSS(t, svc.cmd.Process.Pid)
	return r
}

// r0Client returns a client in a new initialized session.
func r0Client(t *testing.T, hc *http.Client, base, name string) *svcClient {
	t.Helper()
	c := &svcClient{hc: hc, url: base + "/mcp"}
	res, err := c.rpc(`0`, "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"`+name+`","version":"1"}}`)
	require.NoError(t, err)
	require.Nil(t, res.Error)
	require.NoError(t, c.notify("notifications/initialized"))
	return c
}

// echo calls the registered tool echo as the benign client.
func (r *hostileRig) echo() {
	r.t.Helper()
	res, err := r.benign.rpc(`"benign"`, "tools/call", `{"name":"echo","arguments":{"text":"still here"}}`)
	require.NoError(r.t, err)
	require.Nil(r.t, res.Error)
	assert.Contains(r.t, string(res.Result), "still here")
	r.echoes++
}

// page returns the debug page's JSON, and its snapshot.
func (r *hostileRig) page() (debugSnapshot, []byte) {
	r.t.Helper()
	resp, err := r.hc.Get(r.svc.base + "/debug/vigil?format=json&series=1")
	require.NoError(r.t, err)
	defer func() { _ = resp.Body.Close() }()
	const limit = 4 * hostileJSONBudget
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	require.NoError(r.t, err)
	require.Equal(r.t, http.StatusOK, resp.StatusCode)
	require.LessOrEqual(r.t, len(body), limit, "the debug page's JSON is over %d MiB", limit>>20)
	var snap debugSnapshot
	require.NoError(r.t, json.Unmarshal(body, &snap))
	return snap, body
}

// checkRSS requires vigil's resident memory to come back within
// hostileRSSBudget of where it was before the attack, while it serves
// benign requests: the garbage an attack leaves is collected once the
// heap grows again (not while vigil idles), and the runtime returns freed
// memory to the system in the background, so it is given a few seconds;
// memory that is kept never comes back.
func (r *hostileRig) checkRSS(attack string) {
	r.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		grown := vmRSS(r.t, r.svc.cmd.Process.Pid) - r.rss0
		if grown < hostileRSSBudget {
			r.t.Logf("%s: RSS grew by %.1f MiB (from %.1f MiB)", attack, float64(grown)/(1<<20), float64(r.rss0)/(1<<20))
			return
		}
		if time.Now().After(deadline) {
			r.t.Errorf("%s: RSS grew by %.1f MiB (from %.1f MiB), over the budget of %d MiB; the Go heap:\n%s",
				attack, float64(grown)/(1<<20), float64(r.rss0)/(1<<20), hostileRSSBudget>>20, r.heapStats())
			return
		}
		for range 20 { // benign traffic, which lets the collector run
			r.page()
		}
	}
}

// heapStats returns vigil's lines of /metrics about its heap (the Go
// collector serves the heap's live objects, not the MemStats family).
func (r *hostileRig) heapStats() string {
	resp, err := r.hc.Get(r.svc.base + "/metrics")
	if err != nil {
		return err.Error()
	}
	defer func() { _ = resp.Body.Close() }()
	var lines []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if l := sc.Text(); strings.HasPrefix(l, "go_memory_classes_heap_") || strings.HasPrefix(l, "go_gc_gogc_percent ") || strings.HasPrefix(l, "go_gc_gomemlimit_bytes ") {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "\n")
}

// checkPage requires the debug page's JSON within the bound it prints and
// hostileJSONBudget, none of the made-up names among its keys, every
// client text it shows cut, and the registered tool echo counted by name
// (calls of it, before and after the attack).
func (r *hostileRig) checkPage(attack string) {
	r.t.Helper()
	r.echo()
	snap, body := r.page()
	r.t.Logf("%s: debug JSON %d B, printed bound %d B", attack, len(body), snap.Memory.Total)
	assert.Less(r.t, len(body), hostileJSONBudget, attack)
	assert.LessOrEqual(r.t, int64(len(body)), snap.Memory.Total, "%s: the JSON is larger than the bound the page prints", attack)
	var echo *keyRow
	for i, row := range snap.Stats {
		assert.NotContains(r.t, row.Key, hostileMarker, "%s: a made-up name is a key", attack)
		if row.Key == "tools/call echo" {
			echo = &snap.Stats[i]
		}
	}
	if assert.NotNil(r.t, echo, "%s: the registered tool echo is not on the page", attack) {
		assert.Equal(r.t, r.echoes, echo.Total.Requests, "%s: every call of echo counted by name", attack)
	}
	for _, g := range snap.TraceSummary {
		assert.NotContains(r.t, g.Key, hostileMarker, "%s: a made-up name is a trace key", attack)
	}
	const maxText = maxKeptText
	for _, s := range snap.Sessions {
		assert.LessOrEqual(r.t, len(s.Client), 2*maxText+1, attack)
		assert.True(r.t, utf8.ValidString(s.Client))
	}
	for _, a := range snap.Attention {
		assert.LessOrEqual(r.t, len(a.Key), len("tools/call ")+maxText, attack)
		assert.LessOrEqual(r.t, len(a.RequestID), maxText, attack)
		assert.LessOrEqual(r.t, len(a.Detail), 2*maxText, attack)
	}
}

// TestHostileNameBomb replays the name bomb of issue 41 against the built
// vigil with its defaults: requests with unique 1 MB methods (each answered
// -32601, or -32600 where refused at entry), tools/call of unique long tool names, and requests with unique
// long string ids. Each grows vigil's resident memory by less than
// hostileRSSBudget; then the debug page's JSON stays within the bound it
// prints and hostileJSONBudget, and the registered tool echo is still on
// it by name.
func TestHostileNameBomb(t *testing.T) {
	r := newHostileRig(t)
	c := r0Client(t, r.hc, r.svc.base, "attacker")
	const methods, methodBytes = 300, 1 << 20
	for i := range methods {
		// Refused at entry as too long (-32600, HTTP 400), or method not found.
		code := refusedCode(t, c, strconv.Itoa(i), hostileName("method", i, methodBytes), `{}`)
		require.Contains(t, []int64{-32601, -32600}, code)
	}
	r.checkRSS("1 MB methods")
	r.checkPage("1 MB methods")

	const tools, toolBytes = 300, 64 << 10
	for i := range tools {
		// Over the spec's 128 bytes: -32602 before lookup.
		code := refusedCode(t, c, strconv.Itoa(i), "tools/call", `{"name":"`+hostileName("tool", i, toolBytes)+`","arguments":{}}`)
		require.Equal(t, int64(-32602), code)
	}
	r.checkRSS("64 KB tool names")
	r.checkPage("64 KB tool names")

	const ids, idBytes = 300, 64 << 10
	for i := range ids {
		// Over 256 bytes: -32600 at entry, answered with id null.
		code := refusedCode(t, c, `"`+hostileName("id", i, idBytes)+`"`, "tools/call", `{"name":"echo","arguments":{"text":"x"}}`)
		require.Equal(t, int64(-32600), code)
	}
	r.checkRSS("64 KB ids")
	r.checkPage("64 KB ids")
}

// TestHostileInitializeBomb replays the initialize bomb of issue 41
// against the built vigil with its defaults: 100 sessions opened with 3 MB
// of capabilities.experimental and a 60 KB clientInfo.name each. vigil's
// resident memory grows by less than hostileRSSBudget, and the debug
// page, which lists the sessions, shows their client names cut and stays
// within its bound and hostileJSONBudget.
func TestHostileInitializeBomb(t *testing.T) {
	r := newHostileRig(t)
	const sessions, capBytes, nameBytes = 100, 3 << 20, 60 << 10
	blob := strings.Repeat("a", capBytes)
	for i := range sessions {
		c := &svcClient{hc: r.hc, url: r.svc.base + "/mcp"}
		res, err := c.rpc(`0`, "initialize", `{"protocolVersion":"2025-11-25","capabilities":{"experimental":{"bomb":{"blob":"`+blob+
			`"}}},"clientInfo":{"name":"`+hostileName("client", i, nameBytes)+`","version":"1"}}`)
		if err != nil || res.Error != nil {
			continue // refused at entry: as good
		}
		_ = c.notify("notifications/initialized")
	}
	r.checkRSS("initialize bomb")
	r.checkPage("initialize bomb")
}

// refusedCode posts a request that must be refused and returns its JSON-RPC
// error code, whether it was answered in a 200 (after admission) or with an
// HTTP error status (at entry, before the session sees it).
func refusedCode(t *testing.T, c *svcClient, id, method, params string) int64 {
	t.Helper()
	resp, err := c.post(`{"jsonrpc":"2.0","id":` + id + `,"method":"` + method + `","params":` + params + `}`)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	var m svcMessage
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		require.NoError(t, err)
		_, data, ok := strings.Cut(string(b), "data: ")
		require.True(t, ok, "no event in %.200s", b)
		data, _, _ = strings.Cut(data, "\n")
		require.NoError(t, json.Unmarshal([]byte(data), &m))
	} else {
		require.NoError(t, json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&m), "status %d", resp.StatusCode)
	}
	require.NotNil(t, m.Error, "status %d: not refused", resp.StatusCode)
	return m.Error.Code
}
