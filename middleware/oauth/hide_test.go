package oauth_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/wwwauth"
	"github.com/vigil-mcp/vigil/middleware/oauth"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// hiddenName and unknownName are a tool the callers below may not call and
// a name no tool has, of the same length.
const (
	hiddenName  = "deploy"
	unknownName = "nosuch"
)

// sameAnswer asserts that a call of the hidden tool and a call of the
// unknown one were answered alike: status, headers (but Date) and body,
// once the unknown name is replaced by the hidden one.
func sameAnswer(t *testing.T, hidden, unknown rawReply, what string) {
	t.Helper()
	assert.Equal(t, unknown.status, hidden.status, what)
	assert.Equal(t, unknown.header, hidden.header, what)
	assert.Equal(t, string(bytes.ReplaceAll(unknown.body, []byte(unknownName), []byte(hiddenName))), string(hidden.body), what)
}

// hideEra is how a test speaks one era of the protocol to the e2e rig.
type hideEra struct {
	name string
	// open returns the headers of token's requests (a session for 2025).
	open func(t *testing.T, e *e2e, token string) map[string]string
	// call returns the body and extra headers of a tools/call of tool.
	call func(tool string) (string, map[string]string)
}

const stateless2026Meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"` + protocol.Version20260728 +
	`","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"e2e","version":"1"}}`

var hideEras = []hideEra{{
	name: protocol.Version20251125,
	open: func(t *testing.T, e *e2e, token string) map[string]string {
		t.Helper()
		init := e.post(token, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"`+protocol.Version20251125+
			`","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}`, nil)
		require.Equal(t, http.StatusOK, init.status)
		sid := init.header.Get("Mcp-Session-Id")
		require.NotEmpty(t, sid)
		in := map[string]string{"Mcp-Session-Id": sid, "MCP-Protocol-Version": protocol.Version20251125}
		require.Equal(t, http.StatusAccepted, e.post(token, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, in).status)
		return in
	},
	call: func(tool string) (string, map[string]string) {
		return `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"` + tool + `","arguments":{}}}`, nil
	},
}, {
	name: protocol.Version20260728,
	open: func(*testing.T, *e2e, string) map[string]string {
		return map[string]string{"MCP-Protocol-Version": protocol.Version20260728}
	},
	call: func(tool string) (string, map[string]string) {
		return `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"` + tool + `","arguments":{},` + stateless2026Meta + `}}`,
			map[string]string{"Mcp-Method": "tools/call", "Mcp-Name": tool}
	},
}}

// merged returns the headers of a and b, b's winning.
func merged(a, b map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// With HideTools, in both eras, a call of a tool the principal lacks a
// scope for is answered byte for byte as a call of an unknown tool
// (-32602, no challenge), and counted as insufficient_scope; a principal
// lacking a scope every request needs gets the same 403 for both, naming
// that scope alone; a principal with the tool's scope still calls it; the
// metadata does not advertise tool scopes.
func TestHideToolsAnswersAsUnknown(t *testing.T) {
	t.Parallel()
	for _, era := range hideEras {
		t.Run(era.name, func(t *testing.T) {
			t.Parallel()
			e := newE2E(t, func(c *oauth.Config) { c.HideTools = true })
			in := era.open(t, e, "x1")

			list := e.post("x1", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{`+stateless2026Meta+`}}`,
				merged(in, map[string]string{"Mcp-Method": "tools/list"}))
			require.Equal(t, http.StatusOK, list.status)
			assert.Equal(t, []string{"whoami"}, toolNames(t, list.msg.Result))

			body, hdr := era.call(hiddenName)
			hidden := e.raw("x1", body, merged(in, hdr))
			assert.InDelta(t, 1, e.failures(oauth.ReasonInsufficientScope), 0, "the hidden call is counted")
			body, hdr = era.call(unknownName)
			unknown := e.raw("x1", body, merged(in, hdr))
			assert.InDelta(t, 1, e.failures(oauth.ReasonInsufficientScope), 0, "an unknown tool is no refusal of the guard")
			sameAnswer(t, hidden, unknown, "hidden vs unknown tool")
			assert.NotEqual(t, http.StatusForbidden, hidden.status, "%s", hidden.body) // 200, or 400 in 2026-07-28
			assert.Empty(t, hidden.header.Values("WWW-Authenticate"))
			assert.Contains(t, string(hidden.body), `"code":-32602`)
			assert.Contains(t, string(hidden.body), `unknown tool: \"deploy\"`)

			// Lacking the scope every request needs: the same 403, which
			// names no tool scope.
			body, hdr = era.call(hiddenName)
			hidden = e.raw("no-mcp", body, merged(in, hdr))
			body, hdr = era.call(unknownName)
			unknown = e.raw("no-mcp", body, merged(in, hdr))
			sameAnswer(t, hidden, unknown, "no mcp scope")
			require.Equal(t, http.StatusForbidden, hidden.status)
			_, params, err := wwwauth.Parse(hidden.header.Get("WWW-Authenticate"))
			require.NoError(t, err)
			assert.Equal(t, "mcp", params["scope"])
			assert.NotContains(t, string(hidden.body), hiddenName)

			// A principal holding the tool's scope calls it.
			yin := era.open(t, e, "y")
			body, hdr = era.call(hiddenName)
			ok := e.post("y", body, merged(yin, hdr))
			require.Equal(t, http.StatusOK, ok.status)
			require.Nil(t, ok.msg.Error)
			assert.Equal(t, "bob", callText(t, ok.msg.Result))
		})
	}
	t.Run("metadata", func(t *testing.T) {
		t.Parallel()
		for hide, want := range map[bool][]string{false: {"mcp", "deploy"}, true: {"mcp"}} {
			e := newE2E(t, func(c *oauth.Config) { c.HideTools = hide })
			resp, err := http.Get(e.url + "/.well-known/oauth-protected-resource/mcp")
			require.NoError(t, err)
			var md resourceMetadata
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&md))
			_ = resp.Body.Close()
			assert.Equal(t, want, md.ScopesSupported, "HideTools %v", hide)
		}
	})
}

// A 2025 batch is refused by the Endpoint whatever it calls: with
// HideTools, a batch calling a hidden tool gets that refusal too, not the
// 403 that would name the tool's scope, and is not counted as an
// authorization failure.
func TestHideToolsBatch(t *testing.T) {
	t.Parallel()
	e := newE2E(t, func(c *oauth.Config) { c.HideTools = true })
	in := hideEras[0].open(t, e, "x1")
	batch := func(tool string) string {
		return `[{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"` + tool + `"}}]`
	}
	hidden := e.raw("x1", batch(hiddenName), in)
	unknown := e.raw("x1", batch(unknownName), in)
	sameAnswer(t, hidden, unknown, "batch")
	assert.Equal(t, http.StatusBadRequest, hidden.status)
	assert.Zero(t, e.failures(oauth.ReasonInsufficientScope))
}

// Without HideTools (the default), in both eras, a call of a tool the
// principal lacks a scope for gets the step-up challenge: 403
// insufficient_scope naming every scope the call needs, while an unknown
// tool gets -32602.
func TestStepUpByDefault(t *testing.T) {
	t.Parallel()
	for _, era := range hideEras {
		t.Run(era.name, func(t *testing.T) {
			t.Parallel()
			e := newE2E(t)
			in := era.open(t, e, "x1")
			body, hdr := era.call(hiddenName)
			denied := e.raw("x1", body, merged(in, hdr))
			require.Equal(t, http.StatusForbidden, denied.status, "%s", denied.body)
			_, params, err := wwwauth.Parse(denied.header.Get("WWW-Authenticate"))
			require.NoError(t, err)
			assert.Equal(t, "insufficient_scope", params["error"])
			assert.Equal(t, "mcp deploy", params["scope"])
			assert.InDelta(t, 1, e.failures(oauth.ReasonInsufficientScope), 0)

			body, hdr = era.call(unknownName)
			unknown := e.post("x1", body, merged(in, hdr))
			require.NotEqual(t, http.StatusForbidden, unknown.status)
			require.NotNil(t, unknown.msg.Error)
			assert.Equal(t, int64(protocol.CodeInvalidParams), unknown.msg.Error.Code)
			assert.InDelta(t, 1, e.failures(oauth.ReasonInsufficientScope), 0)
		})
	}
}

// In front of a handler other than a streamable.Endpoint, HideTools lets a
// call of a tool the principal may not call through, with its principal,
// for the server to answer as unknown, and counts it once per request,
// batches included; a principal lacking the scope every request needs is
// refused 403 naming that scope alone, without its body being read; a
// 2026-07-28 call is judged by its headers.
func TestHideToolsGuard(t *testing.T) {
	t.Parallel()
	e := newGuard(t, func(c *oauth.Config) { c.HideTools = true })
	for _, body := range []string{
		callBody("deploy"),
		`[` + callBody("deploy") + `,` + callBody("wipe") + `,` + pingBody + `]`,
	} {
		w := httptest.NewRecorder()
		e.h.ServeHTTP(w, post(body, bearer("reader")))
		assert.Equal(t, http.StatusOK, w.Code, body)
		assert.Equal(t, body, *e.body.Load(), "the body is passed on whole")
		require.NotNil(t, e.seen.Load())
		assert.Equal(t, "alice", e.seen.Load().Subject)
	}
	assert.InDelta(t, 2, e.failures(t)["insufficient_scope"], 0)

	r := post("", bearer("no-mcp"))
	r.Body, r.ContentLength = io.NopCloser(neverReader{}), int64(len(callBody("deploy")))
	w := httptest.NewRecorder()
	e.h.ServeHTTP(w, r)
	require.Equal(t, http.StatusForbidden, w.Code)
	_, params, err := wwwauth.Parse(w.Header().Get("WWW-Authenticate"))
	require.NoError(t, err)
	assert.Equal(t, "mcp", params["scope"])
	assert.InDelta(t, 3, e.failures(t)["insufficient_scope"], 0)

	r = post("", bearer("reader"))
	r.Body, r.ContentLength = io.NopCloser(neverReader{}), int64(len(callBody("deploy")))
	r.Header.Set("MCP-Protocol-Version", protocol.Version20260728)
	r.Header.Set("Mcp-Method", "tools/call")
	r.Header.Set("Mcp-Name", "deploy")
	served := e.served.Load()
	w = httptest.NewRecorder()
	e.rs.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		e.served.Add(1)
		w.WriteHeader(http.StatusNoContent)
	})).ServeHTTP(w, r)
	assert.Equal(t, http.StatusNoContent, w.Code)
	assert.Equal(t, served+1, e.served.Load())
	assert.InDelta(t, 4, e.failures(t)["insufficient_scope"], 0)
}
