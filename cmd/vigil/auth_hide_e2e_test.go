package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/wwwauth"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// newScopeIssuer is an authorization server for introspection whose tokens
// are the keys of scopes, each active for resource with its scopes.
func newScopeIssuer(t *testing.T, resource string, scopes map[string]string) *httptest.Server {
	t.Helper()
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/.well-known/oauth-authorization-server":
			_ = json.NewEncoder(w).Encode(map[string]string{"issuer": srv.URL, "introspection_endpoint": srv.URL + "/introspect"})
		case "/introspect":
			tok := r.PostFormValue("token")
			s, ok := scopes[tok]
			if !ok {
				_, _ = io.WriteString(w, `{"active":false}`)
				return
			}
			_ = json.NewEncoder(w).Encode(map[string]any{
				"active": true, "sub": tok, "client_id": "c", "aud": resource, "scope": s, "exp": time.Now().Add(time.Hour).Unix(),
			})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// hideAnswer is an answer of vigil as its client sees it, byte for byte
// (but the Date header).
type hideAnswer struct {
	status int
	header http.Header
	body   []byte
}

func (v *vigilAuth) rawPost(t *testing.T, token, body string, hdr map[string]string) hideAnswer {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, v.url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	for k, val := range hdr {
		req.Header.Set(k, val)
	}
	resp, err := v.hc.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	require.NoError(t, err)
	h := resp.Header.Clone()
	h.Del("Date")
	return hideAnswer{status: resp.StatusCode, header: h, body: b}
}

// The hidden tool is sleep (it needs vigil.slow); sleeq, of the same
// length, is no tool.
const (
	hiddenTool  = "sleep"
	unknownTool = "sleeq"
)

// hideCall is a tools/call of tool in one era: its body and headers.
type hideCall func(tool string) (string, map[string]string)

// hideEras opens, for token, a 2025-11-25 session and a 2026-07-28
// stateless exchange on v, and returns how each calls a tool.
func hideEras(t *testing.T, v *vigilAuth, token string) map[string]hideCall {
	t.Helper()
	init := v.rawPost(t, token, matrixInitialize, nil)
	require.Equal(t, http.StatusOK, init.status, "%s", init.body)
	sid := init.header.Get("Mcp-Session-Id")
	require.NotEmpty(t, sid)
	in := map[string]string{"Mcp-Session-Id": sid, "MCP-Protocol-Version": protocol.Version20251125}
	require.Equal(t, http.StatusAccepted, v.rawPost(t, token, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, in).status)
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"` + protocol.Version20260728 +
		`","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"hide","version":"1"}}`
	return map[string]hideCall{
		protocol.Version20251125: func(tool string) (string, map[string]string) {
			return matrixCall(tool, `{"ms":1}`), in
		},
		protocol.Version20260728: func(tool string) (string, map[string]string) {
			return `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"` + tool + `","arguments":{"ms":1},` + meta + `}}`,
				map[string]string{"MCP-Protocol-Version": protocol.Version20260728, "Mcp-Method": "tools/call", "Mcp-Name": tool}
		},
	}
}

// TestAuthHideTools: vigil with -auth-scopes vigil.read and sleep needing
// vigil.slow. With -auth-hide-tools, in both eras, a call of sleep by a
// token without vigil.slow is answered byte for byte as a call of a tool
// that does not exist, counted as insufficient_scope; a token without
// vigil.read gets the same 403 for both, naming vigil.read alone; a token
// with vigil.slow calls sleep; the metadata does not advertise vigil.slow.
// Without the flag, the 403 step-up challenge names vigil.read vigil.slow.
func TestAuthHideTools(t *testing.T) {
	for _, hide := range []bool{true, false} {
		t.Run(fmt.Sprintf("hide=%v", hide), func(t *testing.T) {
			port := authResource(t)
			as := newScopeIssuer(t, port.resource, map[string]string{
				"reader": "vigil.read", "slow": "vigil.read vigil.slow", "other": "openid",
			})
			extra := []string{"-auth-scopes", "vigil.read", "-auth-tool-scopes", "sleep=vigil.slow"}
			if hide {
				extra = append(extra, "-auth-hide-tools")
			}
			v := startVigilAuth(t, port, as.URL, []string{
				"VIGIL_AUTH_INTROSPECTION_CLIENT_ID=vigil", "VIGIL_AUTH_INTROSPECTION_CLIENT_SECRET=s3cr3t",
			}, extra...)

			resp, err := v.hc.Get(strings.TrimSuffix(v.url, "/mcp") + "/.well-known/oauth-protected-resource/mcp")
			require.NoError(t, err)
			var md protectedResourceMetadata
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&md))
			_ = resp.Body.Close()
			if hide {
				assert.Equal(t, []string{"vigil.read"}, md.ScopesSupported)
			} else {
				assert.Equal(t, []string{"vigil.read", "vigil.slow"}, md.ScopesSupported)
			}

			readerEras := hideEras(t, v, "reader")
			slowEras := hideEras(t, v, "slow")
			for era, call := range readerEras {
				before := v.authFailures(t)
				body, hdr := call(hiddenTool)
				hidden := v.rawPost(t, "reader", body, hdr)
				requireCounted(t, before, v.authFailures(t), "insufficient_scope")
				body, hdr = call(unknownTool)
				before = v.authFailures(t)
				unknown := v.rawPost(t, "reader", body, hdr)
				requireCounted(t, before, v.authFailures(t), "")
				assert.Contains(t, string(unknown.body), `unknown tool: \"sleeq\"`, era)
				if hide {
					assert.Equal(t, unknown.status, hidden.status, era)
					assert.Equal(t, unknown.header, hidden.header, era)
					assert.Equal(t, string(bytes.ReplaceAll(unknown.body, []byte(unknownTool), []byte(hiddenTool))), string(hidden.body), era)
					assert.Empty(t, hidden.header.Values("WWW-Authenticate"), era)
				} else {
					require.Equal(t, http.StatusForbidden, hidden.status, "%s: %s", era, hidden.body)
					_, params, err := wwwauth.Parse(hidden.header.Get("WWW-Authenticate"))
					require.NoError(t, err, era)
					assert.Equal(t, "insufficient_scope", params["error"], era)
					assert.Equal(t, "vigil.read vigil.slow", params["scope"], era)
				}

				// Without vigil.read: the same 403 for both, naming the
				// tool's scope only by default.
				body, hdr = call(hiddenTool)
				noRead := v.rawPost(t, "other", body, hdr)
				require.Equal(t, http.StatusForbidden, noRead.status, era)
				_, params, err := wwwauth.Parse(noRead.header.Get("WWW-Authenticate"))
				require.NoError(t, err, era)
				if hide {
					assert.Equal(t, "vigil.read", params["scope"], era)
					body, hdr = call(unknownTool)
					noReadUnknown := v.rawPost(t, "other", body, hdr)
					assert.Equal(t, noReadUnknown, noRead, era)
				} else {
					assert.Equal(t, "vigil.read vigil.slow", params["scope"], era)
				}

				// With vigil.slow, sleep runs.
				body, hdr = slowEras[era](hiddenTool)
				ok := v.rawPost(t, "slow", body, hdr)
				require.Equal(t, http.StatusOK, ok.status, "%s: %s", era, ok.body)
				assert.Contains(t, string(ok.body), `"result"`, era)
				assert.NotContains(t, string(ok.body), `"error"`, era)
			}
		})
	}
}
