package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/mcpconv"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// issuePolicy is the policy file of issue 57.
const issuePolicy = `default: 'true'                       # for tools without their own
tools:
  sleep: 'arguments.ms < 1000 || "vigil.slow" in principal.scopes'
  echo: 'principal.subject != "mallory"'
`

// rpcOf returns the JSON-RPC message of an answer's body, JSON or one SSE
// event.
func rpcOf(t *testing.T, body []byte) map[string]any {
	t.Helper()
	if i := bytes.Index(body, []byte("data: ")); i >= 0 && !bytes.HasPrefix(bytes.TrimSpace(body), []byte("{")) {
		body, _, _ = bytes.Cut(body[i+len("data: "):], []byte("\n"))
	}
	var m map[string]any
	require.NoError(t, json.Unmarshal(body, &m), "%s", body)
	return m
}

// policyEras opens, for token, a 2025-11-25 session and a 2026-07-28
// stateless exchange on v, and returns how each sends a request.
func policyEras(t *testing.T, v *vigilAuth, token string) map[string]func(method, params string) map[string]any {
	t.Helper()
	init := v.rawPost(t, token, matrixInitialize, nil)
	require.Equal(t, http.StatusOK, init.status, "%s", init.body)
	sid := init.header.Get("Mcp-Session-Id")
	in := map[string]string{"Mcp-Session-Id": sid, "MCP-Protocol-Version": protocol.Version20251125}
	require.Equal(t, http.StatusAccepted, v.rawPost(t, token, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, in).status)
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"` + protocol.Version20260728 +
		`","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"policy","version":"1"}}`
	send := func(body string, hdr map[string]string) map[string]any {
		a := v.rawPost(t, token, body, hdr)
		m := rpcOf(t, a.body)
		m["http_status"] = a.status
		return m
	}
	return map[string]func(method, params string) map[string]any{
		protocol.Version20251125: func(method, params string) map[string]any {
			return send(`{"jsonrpc":"2.0","id":2,"method":"`+method+`","params":`+params+`}`, in)
		},
		protocol.Version20260728: func(method, params string) map[string]any {
			params = strings.TrimSuffix(params, "}")
			if params != "{" {
				params += ","
			}
			hdr := map[string]string{"MCP-Protocol-Version": protocol.Version20260728, "Mcp-Method": method}
			var p struct{ Name string }
			_ = json.Unmarshal([]byte(params+meta+"}"), &p)
			if p.Name != "" {
				hdr["Mcp-Name"] = p.Name
			}
			return send(`{"jsonrpc":"2.0","id":2,"method":"`+method+`","params":`+params+meta+`}}`, hdr)
		},
	}
}

// listed returns the tool names of a tools/list answer.
func listed(t *testing.T, answer map[string]any) []string {
	t.Helper()
	result, ok := answer["result"].(map[string]any)
	require.True(t, ok, "%v", answer)
	var names []string
	for _, tl := range result["tools"].([]any) {
		names = append(names, tl.(map[string]any)["name"].(string))
	}
	return names
}

// TestAuthPolicy is issue 57's acceptance of -auth-policy, on the vigil
// binary with the real authorization server's keys: in both eras, sleep
// with ms 5000 is refused to a token without vigil.slow and allowed with
// it, and with ms 10 allowed; echo is absent from mallory's tools/list and
// refused to mallory, present and run for others. Each refusal is the
// SEP-2643 denial naming the policy, and each decision is counted
// (mcp_server_policy_decisions_total, every series from the start),
// logged and audited.
func TestAuthPolicy(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "policy.yaml")
	require.NoError(t, os.WriteFile(file, []byte(issuePolicy), 0o600))
	auditFile := filepath.Join(dir, "audit.jsonl")
	port := authResource(t)
	as := startOIDCProvider(t, oidcOptions{Resource: port.resource})
	v := startVigilAuth(t, port, as.Issuer(), nil, "-auth-policy", file, "-audit-log", auditFile)
	key := as.Keys()[0]
	token := func(sub string, scopes ...string) string {
		c := accessClaims(as.Issuer(), v.resource, scopes...)
		c["sub"] = sub
		return key.Sign(t, c)
	}
	decisions := func() map[string]float64 {
		families := svcMetrics(t, v.hc, strings.TrimSuffix(v.url, "/mcp"))
		mf, ok := families[mcpconv.MetricPolicyDecisions]
		require.True(t, ok, "/metrics has no %s", mcpconv.MetricPolicyDecisions)
		out := map[string]float64{}
		for _, m := range mf.GetMetric() {
			var pol, decision string
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "policy":
					pol = l.GetValue()
				case "decision":
					decision = l.GetValue()
				}
			}
			out[pol+" "+decision] = m.GetCounter().GetValue()
		}
		return out
	}
	zero := map[string]float64{"default allow": 0, "default deny": 0, "tools.echo allow": 0, "tools.echo deny": 0, "tools.sleep allow": 0, "tools.sleep deny": 0}
	require.Equal(t, zero, decisions(), "every series from the start")

	alice, slow, mallory := token("alice"), token("bob", "vigil.slow"), token("mallory")
	denied := func(era string, answer map[string]any, pol string) {
		t.Helper()
		status := http.StatusOK // in a 2025 session, the error is the POST's answer
		if era == protocol.Version20260728 {
			status = http.StatusBadRequest // how 2026-07-28 answers every error of the caller's (-32600, -32602, ...)
		}
		assert.Equal(t, status, answer["http_status"])
		e, ok := answer["error"].(map[string]any)
		require.True(t, ok, "want a denial: %v", answer)
		assert.InDelta(t, float64(protocol.CodeInvalidRequest), e["code"], 0)
		assert.Equal(t, fmt.Sprintf("denied by policy %q", pol), e["message"])
		assert.Equal(t, map[string]any{"authorization": map[string]any{"reason": "insufficient_authorization"}, "policy": pol}, e["data"])
	}
	ran := func(answer map[string]any) {
		t.Helper()
		assert.Equal(t, http.StatusOK, answer["http_status"])
		result, ok := answer["result"].(map[string]any)
		require.True(t, ok, "want a result: %v", answer)
		assert.NotEqual(t, true, result["isError"], "%v", answer)
	}
	for _, era := range []string{protocol.Version20251125, protocol.Version20260728} {
		t.Logf("era %s", era)
		a, s, m := policyEras(t, v, alice)[era], policyEras(t, v, slow)[era], policyEras(t, v, mallory)[era]
		denied(era, a("tools/call", `{"name":"sleep","arguments":{"ms":5000}}`), "tools.sleep")
		ran(a("tools/call", `{"name":"sleep","arguments":{"ms":10}}`))
		ran(s("tools/call", `{"name":"sleep","arguments":{"ms":1000}}`)) // not under 1000: allowed by vigil.slow
		assert.Contains(t, listed(t, a("tools/list", `{}`)), "echo")
		assert.NotContains(t, listed(t, m("tools/list", `{}`)), "echo", "echo is absent from mallory's tools/list")
		assert.Contains(t, listed(t, m("tools/list", `{}`)), "sleep")
		denied(era, m("tools/call", `{"name":"echo","arguments":{"text":"hi"}}`), "tools.echo")
		ran(a("tools/call", `{"name":"echo","arguments":{"text":"hi"}}`))
		ran(m("tools/call", `{"name":"countdown","arguments":{"from":0}}`))
	}
	want := map[string]float64{"default allow": 2, "default deny": 0, "tools.echo allow": 2, "tools.echo deny": 2, "tools.sleep allow": 4, "tools.sleep deny": 2}
	require.Equal(t, want, decisions())

	// Logged: one line per denial, naming the policy and who.
	eventually(t, "the denials logged", 10*time.Second, func() error {
		logs := v.logs.String()
		for _, want := range []string{
			`msg="policy: tools/call deny" tool=sleep policy=tools.sleep decision=deny`,
			`msg="policy: tools/call deny" tool=echo policy=tools.echo decision=deny`,
		} {
			if n := strings.Count(logs, want); n != 2 {
				return fmt.Errorf("%d lines %s", n, want)
			}
		}
		if !strings.Contains(logs, "subject=mallory") {
			return errors.New("no subject=mallory")
		}
		return nil
	})
	// Audited: the denied calls' lines name the policy.
	eventually(t, "the denials audited", 10*time.Second, func() error {
		f, err := os.Open(auditFile)
		if err != nil {
			return err
		}
		defer func() { _ = f.Close() }()
		byPolicy := map[string]int{}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var rec struct {
				Subject, Tool, Outcome, Policy string
				Code                           int64
			}
			if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
				return err
			}
			if rec.Policy != "" {
				if rec.Outcome != "error" || rec.Code != int64(protocol.CodeInvalidRequest) || "tools."+rec.Tool != rec.Policy {
					return fmt.Errorf("audit line %s", sc.Bytes())
				}
				byPolicy[rec.Policy+" "+rec.Subject]++
			}
		}
		if want := map[string]int{"tools.sleep alice": 2, "tools.echo mallory": 2}; !assert.ObjectsAreEqual(want, byPolicy) {
			return fmt.Errorf("audited denials %v, want %v", byPolicy, want)
		}
		return nil
	})
	require.NoError(t, v.proc.stop(10*time.Second), "vigil must exit with status 0 after SIGTERM")
}

// TestAuthPolicyBadExpression: an expression that does not compile fails
// the start, naming the file, the line and the position in the
// expression; so do a policy of a tool that does not exist, and the flag
// without -auth-issuer or with -stdio.
func TestAuthPolicyBadExpression(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ file, want string }{
		{"default: 'true'\ntools:\n  sleep: 'arguments.ms < 1000 ||| true'\n", `line 3: policy tools.sleep: ERROR: <input>:1:23: Syntax error`},
		{"tools:\n  echo: 'principal.subjet != \"mallory\"'\n", `line 2: policy tools.echo: ERROR: <input>:1:10: undefined field 'subjet'`},
		{"tools:\n  ech0: 'true'\n", `names unknown tools ["ech0"]`},
		{"tool:\n  echo: 'true'\n", `line 1: unknown key "tool"`},
	} {
		file := filepath.Join(dir, "policy.yaml")
		require.NoError(t, os.WriteFile(file, []byte(c.file), 0o600))
		var stderr bytes.Buffer
		err := run(t.Context(), []string{"-http", "127.0.0.1:0", "-auth-issuer", "https://127.0.0.1:1", "-auth-policy", file}, func(string) string { return "" }, &stderr)
		require.Error(t, err, c.file)
		assert.Contains(t, err.Error(), "-auth-policy "+file)
		assert.Contains(t, err.Error(), c.want)
	}
	err := run(t.Context(), []string{"-http", "127.0.0.1:0", "-auth-policy", filepath.Join(dir, "policy.yaml")}, func(string) string { return "" }, &bytes.Buffer{})
	require.ErrorContains(t, err, "-auth-policy needs -auth-issuer")
	err = run(t.Context(), []string{"-stdio", "-auth-issuer", "https://127.0.0.1:1", "-auth-policy", filepath.Join(dir, "policy.yaml")}, func(string) string { return "" }, &bytes.Buffer{})
	require.ErrorContains(t, err, "-auth-policy applies to HTTP requests")
}
