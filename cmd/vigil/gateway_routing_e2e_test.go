package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/testkit/routingtest"
	"github.com/vigil-mcp/vigil/server/mcptest"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// The routing repro of issue 67 with -auth-issuer, as filed: alice calls a
// stdio upstream and cancels, bob calls next; the upstream ignores the
// cancel and logs about, and asks about, alice's call. Bob must get none
// of it, his answer must never go upstream as hers, and his call reaches
// the upstream only once hers has ended there (one principal at a time).
// gateway/routing_test.go has each variant, with and without a principal.

// routingUpstreamEnv makes the test binary the repro's stdio upstream.
const routingUpstreamEnv = "ROUTING_E2E_UPSTREAM"

// The texts of alice's and bob's calls.
const (
	aliceSecret = "A-SECRET-4711"
	bobOwn      = "B-OWN-0815"
)

// routingLog is vigil's output (-log-format json): its URL, and the
// upstream's stderr lines it logs, for a test to wait for.
type routingLog struct {
	mu      sync.Mutex
	all     bytes.Buffer
	partial []byte
	url     string
	said    []string
	grew    chan struct{} // closed, and made again, when something is found
}

func (w *routingLog) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.all.Write(p)
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			break
		}
		var r struct {
			Msg  string `json:"msg"`
			URL  string `json:"url"`
			Line string `json:"line"`
		}
		if json.Unmarshal(w.partial[:i], &r) == nil {
			switch r.Msg {
			case "serving MCP":
				w.url = r.URL
			case "upstream stderr":
				w.said = append(w.said, r.Line)
			}
			close(w.grew)
			w.grew = make(chan struct{})
		}
		w.partial = w.partial[i+1:]
	}
	return len(p), nil
}

func (w *routingLog) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.all.String()
}

// await waits for what found finds (not ""), by vigil's output so far.
func (w *routingLog) await(t *testing.T, what string, found func() string) string {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		w.mu.Lock()
		s, grew := found(), w.grew
		w.mu.Unlock()
		if s != "" {
			return s
		}
		select {
		case <-grew:
		case <-deadline:
			t.Fatalf("vigil never logged %s:\n%s", what, w.String())
		}
	}
}

// awaitSaid waits for an upstream stderr line that starts with one of
// prefixes.
func (w *routingLog) awaitSaid(t *testing.T, prefixes ...string) string {
	t.Helper()
	return w.await(t, fmt.Sprintf("%q", prefixes), func() string {
		for _, l := range w.said {
			for _, p := range prefixes {
				if strings.HasPrefix(l, p) {
					return l
				}
			}
		}
		return ""
	})
}

// saidSoFar returns the upstream's stderr lines so far.
func (w *routingLog) saidSoFar() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.said)
}

// routingTransport sends a caller's bearer token and, for a stateless
// 2026-07-28 caller, the headers each of its POSTs needs.
type routingTransport struct {
	token     string
	stateless bool
	base      http.RoundTripper
}

func (rt routingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+rt.token)
	if rt.stateless && req.Body != nil {
		body, err := io.ReadAll(req.Body)
		if err != nil {
			return nil, err
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		var m struct {
			Method string `json:"method"`
			Params struct {
				Name string `json:"name"`
			} `json:"params"`
		}
		_ = json.Unmarshal(body, &m)
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		if m.Method != "" {
			req.Header.Set("Mcp-Method", m.Method)
		}
		if m.Method == "tools/call" {
			req.Header.Set("Mcp-Name", m.Params.Name)
		}
	}
	return rt.base.RoundTrip(req)
}

// TestGatewayRoutingAuthorized: vigil -auth-issuer, alice and bob: with
// -upstream-shared (2025 sessions) and by default (stateless 2026-07-28
// callers in front of the 2025 upstream), bob hears nothing of alice's
// cancelled call, answers only his own question, and his call goes
// upstream once hers has ended there.
func TestGatewayRoutingAuthorized(t *testing.T) {
	for _, shared := range []bool{true, false} {
		t.Run(map[bool]string{true: "shared", false: "stateless"}[shared], func(t *testing.T) {
			routingRepro(t, shared)
		})
	}
}

// routingRepro drives the repro through vigil with shared or stateless
// callers and checks what bob got and what the upstream got.
func routingRepro(t *testing.T, shared bool) {
	version := protocol.Version20260728 // stateless callers' calls carry it
	if shared {
		version = "" // 2025 sessions
	}
	port := authResource(t)
	as := newScopeIssuer(t, port.resource, map[string]string{"alice-token": "vigil.read", "bob-token": "vigil.read"})
	environ := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "OTEL_") || strings.HasPrefix(kv, "VIGIL_")
	})
	environ = append(environ, "VIGIL_AUTH_INTROSPECTION_CLIENT_ID=vigil", "VIGIL_AUTH_INTROSPECTION_CLIENT_SECRET=s3cr3t")
	args := []string{
		"-http", port.addr, "-log-format", "json", "-auth-issuer", as.URL,
		"-upstream", "r=" + os.Args[0] + " '-test.run=^$'",
		"-upstream-env", "r=" + routingUpstreamEnv + "=1", "-upstream-env", "r=GORACE=atexit_sleep_ms=0",
	}
	if shared {
		args = append(args, "-upstream-shared")
	}
	require.NoError(t, port.ln.Close())
	logs := &routingLog{grew: make(chan struct{})}
	startPeer(t, "vigil", logs, environ, vigilBin, args...)
	url := logs.await(t, "its URL", func() string { return logs.url })
	hc := &http.Client{Transport: &http.Transport{}, Timeout: 30 * time.Second}
	t.Cleanup(hc.CloseIdleConnections)
	// vigil serves before its upstream is ready (at most 1 s after start):
	// the repro starts once the upstream's tool is served.
	svcEventually(t, "/readyz 200", 30*time.Second, func() (bool, error) {
		resp, err := hc.Get(strings.TrimSuffix(url, "/mcp") + "/readyz")
		if err != nil {
			return false, err
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	caller := func(who string) *mcptest.Client {
		conn := streamable.Dial(streamable.ClientConfig{URL: url, Client: &http.Client{Transport: routingTransport{token: who + "-token", stateless: !shared, base: hc.Transport}}})
		if !shared {
			return mcptest.NewClient(t, conn)
		}
		c := mcptest.NewClient(t, conn, mcptest.WithClientInfo(who, "1"), mcptest.WithCapabilities(map[string]any{"elicitation": map[string]any{}}))
		c.Initialize("", nil)
		_, rpcErr := c.Call("logging/setLevel", map[string]any{"level": "debug"})
		require.Nil(t, rpcErr)
		return c
	}

	// Alice calls; the upstream works on it, and she hears so. She
	// cancels; the upstream hears it, and goes on.
	alice := caller("alice")
	alice.Request(1, "tools/call", routingtest.Params(version, "alice", aliceSecret, true))
	logs.awaitSaid(t, "call "+aliceSecret)
	n := alice.RecvRequest()
	require.Equal(t, "notifications/message", n.Method)
	require.Contains(t, string(n.Params), "working on "+aliceSecret)
	alice.Cancel(1, "enough")
	logs.awaitSaid(t, "cancelled ")

	// Bob calls, declining every question, until his call ends.
	bob := caller("bob")
	bob.Request(10, "tools/call", routingtest.Params(version, "bob", bobOwn, false))
	heard, result, err := routingtest.Listen(jsonCaller{bob}, 10, version, "bob", bobOwn)
	require.NoError(t, err)
	t.Logf("bob heard: %q", heard)
	assert.Equal(t, bobOwn+": decline", result, "bob's call completes with his own answer")
	for _, h := range heard {
		assert.NotContains(t, h, aliceSecret, "bob was told of alice's call")
	}
	assert.Contains(t, strings.Join(heard, "\n"), "please confirm: "+bobOwn, "bob's own question reached him")
	if shared {
		assert.Contains(t, strings.Join(heard, "\n"), "working on "+bobOwn, "bob's own log line reached him")
	}
	fate := logs.awaitSaid(t, "answer "+aliceSecret+" ", "refused "+aliceSecret+" ")
	assert.True(t, strings.HasPrefix(fate, "refused "), "alice's question went unanswered, not answered by bob: %q", fate)
	logs.awaitSaid(t, "answer "+bobOwn+" ")
	said := logs.saidSoFar()
	assert.Contains(t, said, "answer "+bobOwn+" decline", "bob's answer went to his question")
	bobCalled := slices.IndexFunc(said, func(l string) bool { return strings.HasPrefix(l, "call "+bobOwn+" ") }) // "call TEXT PID"
	assert.Less(t, slices.Index(said, fate), bobCalled, "bob's call went upstream once alice's had ended: %q", said)
}

// jsonCaller is an mcptest client as routingtest.Listen reads and answers.
type jsonCaller struct{ *mcptest.Client }

func (c jsonCaller) Next() []byte { b, _ := transport.AppendMessage(nil, c.Recv()); return b }

func (c jsonCaller) Answer(msg []byte) { m, _ := transport.DecodeMessage(msg); c.Send(m) }
