package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/testkit/issuertest"
	"github.com/vigil-mcp/vigil/internal/testkit/redistest"
)

// fwReplica is a vigil -redis replica on a non-loopback address.
type fwReplica struct {
	url     string // its /mcp over a non-loopback address of this host
	replica string // its name among the replicas
}

var replicaLine = regexp.MustCompile(`msg="shared sessions on Redis".* replica=(\S+)`)

// startFWReplica runs vigil -redis with extra flags, guarded by as,
// listening on every address, and returns it reached over ip.
func startFWReplica(t *testing.T, ip, redisURL, resource string, as *issuertest.Issuer, extra ...string) fwReplica {
	t.Helper()
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	require.NoError(t, err)
	_, port, err := net.SplitHostPort(ln.Addr().String())
	require.NoError(t, err)
	require.NoError(t, ln.Close())
	environ := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "OTEL_") || strings.HasPrefix(kv, "VIGIL_")
	})
	environ = append(environ, "VIGIL_REQUEST_STATE_KEY=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", "VIGIL_CLUSTER_KEY="+testClusterKeyB64)
	logs := &urlWatcher{found: make(chan string, 1)}
	args := append([]string{
		"-http", "0.0.0.0:" + port, "-admin-http", "127.0.0.1:0",
		"-redis", redisURL, "-auth-issuer", as.URL, "-auth-resource", resource,
	}, extra...)
	p := startPeer(t, "vigil :"+port, logs, environ, vigilBin, args...)
	select {
	case <-logs.found:
	case err := <-p.exited:
		p.exited <- err
		t.Fatalf("vigil exited before serving: %v\n%s", err, logs.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("vigil did not serve within 30s:\n%s", logs.String())
	}
	m := replicaLine.FindStringSubmatch(logs.String())
	require.NotNil(t, m, "the replica's name in its logs:\n%s", logs.String())
	return fwReplica{url: "http://" + net.JoinHostPort(ip, port) + "/mcp", replica: m[1]}
}

// nonLoopbackIP returns an IPv4 address of this host that is not loopback.
func nonLoopbackIP(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	require.NoError(t, err)
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return n.IP.String()
		}
	}
	t.Skip("this host has no non-loopback IPv4 address to serve vigil on")
	return ""
}

// fwAnswer is a POST's answer: its status and its (last) JSON-RPC message.
type fwAnswer struct {
	status int
	sid    string
	body   string
	msg    struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int64  `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
}

// fwPost POSTs body to url as Host mcp.example.test with token and hdr.
func fwPost(t *testing.T, url, token, body string, hdr map[string]string) fwAnswer {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Host = "mcp.example.test"
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Cookie", "vigil_test=fw-cookie")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	hc := &http.Client{Timeout: 15 * time.Second}
	resp, err := hc.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	require.NoError(t, err)
	a := fwAnswer{status: resp.StatusCode, sid: resp.Header.Get("Mcp-Session-Id"), body: string(raw)}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		var last []byte
		sc := bufio.NewScanner(bytes.NewReader(raw))
		for sc.Scan() {
			if d, ok := bytes.CutPrefix(sc.Bytes(), []byte("data:")); ok {
				last = bytes.TrimSpace(d)
			}
		}
		raw = last
	}
	if a.status == http.StatusOK && len(raw) > 0 {
		require.NoError(t, json.Unmarshal(raw, &a.msg), "%s", raw)
	}
	return a
}

// TestSharedTaskForwardedAuthorized runs the shipped vigil as two replicas
// with -redis on a real redis-server, JWT authorization and a real Host
// name on a non-loopback address, without -allowed-hosts (a load balancer
// in front). Task requests naming the other replica's tasks are forwarded
// to it, in a 2025 session and as 2026-07-28 stateless requests: they pass
// its Host check (they were 403) and its guard, by the principal the
// first replica asserts (the session, bound to it, is found there), and
// are answered as the task's replica answers them itself. All
// the while a subscriber to vigil:* sees no token, no "Bearer", no
// "Authorization", no "Cookie" and, relays being sealed, nothing of the
// requests in any message.
func TestSharedTaskForwardedAuthorized(t *testing.T) {
	if testing.Short() {
		t.Skip("two replicas: skipped with -short")
	}
	ip := nonLoopbackIP(t)
	rs := redistest.Start(t)
	as := issuertest.Start(t)
	const resource = "http://mcp.example.test/mcp"

	sub := rs.Client(t)
	ps := sub.PSubscribe(t.Context(), "vigil:*")
	t.Cleanup(func() { _ = ps.Close() })
	_, err := ps.Receive(t.Context()) // subscribed
	require.NoError(t, err)
	relayed := ps.Channel()

	a := startFWReplica(t, ip, rs.URL(), resource, as)
	b := startFWReplica(t, ip, rs.URL(), resource, as)
	require.NotEqual(t, a.replica, b.replica)
	token := as.Token(t, resource, "bob", "vigil.read")

	// A 2025 session, opened on a; its tasks/get of one of b's tasks goes
	// to b, which finds the session bound to the asserted principal.
	init := fwPost(t, a.url, token, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"fw","version":"1"}}}`, nil)
	require.Equal(t, http.StatusOK, init.status, init.body)
	require.NotEmpty(t, init.sid)
	session := map[string]string{"Mcp-Session-Id": init.sid, "MCP-Protocol-Version": "2025-11-25"}
	ack := fwPost(t, a.url, token, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, session)
	require.Equal(t, http.StatusAccepted, ack.status, ack.body)
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`
	for _, to := range []fwReplica{b, a} {
		from := a
		if to == a {
			from = b
		}
		id := to.replica + ".no-such-task"
		stateless := map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tasks/get", "Mcp-Name": id}
		for _, era := range []struct {
			name, body string
			hdr        map[string]string
		}{
			{"2025 session", fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":%q}}`, id), session},
			{"2026-07-28", fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"taskId":%q,%s}}`, id, meta), stateless},
		} {
			// As the task's replica answers it itself (vigil's tools run no
			// tasks: it does not serve tasks/get, which is all this needs).
			direct := fwPost(t, to.url, token, era.body, era.hdr)
			require.Contains(t, direct.body, "tasks/get", "%s on %s: %s", era.name, to.replica, direct.body)
			r := fwPost(t, from.url, token, era.body, era.hdr)
			assert.Equal(t, direct.status, r.status, "%s on %s, forwarded to %s: %s", era.name, from.replica, to.replica, r.body)
			assert.Equal(t, direct.body, r.body, "%s on %s, forwarded to %s", era.name, from.replica, to.replica)
		}
	}

	// Every message so far, up to a marker published after them.
	const marker = "end of the scan"
	require.NoError(t, sub.Publish(t.Context(), "vigil:test-marker", marker).Err())
	// A replica's own channel, which carries the requests forwarded to it
	// and the answers to those it forwarded: named by the SHA-256 of
	// "replica:" and its name, as a session's by its id's.
	replicaChannel := func(name string) string {
		sum := sha256.Sum256([]byte("vigil session\nreplica:" + name))
		return "vigil:{" + base64.RawURLEncoding.EncodeToString(sum[:]) + "}:r"
	}
	forwards := 0
	for m := range relayed {
		if m.Channel == "vigil:test-marker" && m.Payload == marker {
			break
		}
		for _, secret := range []string{token, "Bearer", "Authorization", "Cookie", "fw-cookie", "mcp.example.test", "tasks/get"} {
			assert.NotContains(t, m.Payload, secret, "a message on %s", m.Channel)
		}
		if m.Channel == replicaChannel(a.replica) || m.Channel == replicaChannel(b.replica) {
			forwards++
		}
	}
	assert.Equal(t, 8, forwards, "each forwarded task request and its answer went through Redis")
}
