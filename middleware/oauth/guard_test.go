package oauth_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/wwwauth"
	"github.com/vigil-mcp/vigil/middleware/auth"
	"github.com/vigil-mcp/vigil/middleware/oauth"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/protocol"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

const testResource = "https://mcp.example.com/mcp"

const testMetadataURL = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"

// toolScopes are the scopes of the tools of the guard tests.
var toolScopes = map[string][]string{"deploy": {"deploy"}, "wipe": {"deploy", "admin"}}

// toolServer is a server with a tool of each name of scopes, which needs
// the scopes it maps to.
func toolServer(t testing.TB, scopes map[string][]string) *server.Server {
	t.Helper()
	srv := server.New()
	for name, s := range scopes {
		require.NoError(t, srv.AddTool(server.Tool{Name: name, Scopes: s}, func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
			return server.Text("ok"), nil
		}))
	}
	return srv
}

func newVerifier() *fakeVerifier {
	return &fakeVerifier{
		principals: map[string]*auth.Principal{
			"reader":      {Issuer: "https://as.example.com", Subject: "alice", Scopes: []string{"mcp"}},
			"deployer":    {Issuer: "https://as.example.com", Subject: "alice", Scopes: []string{"mcp", "deploy"}},
			"all":         {Issuer: "https://as.example.com", Subject: "root", Scopes: []string{"mcp", "deploy", "admin"}},
			"no-mcp":      {Issuer: "https://as.example.com", Subject: "bob", Scopes: []string{"deploy"}},
			"a.b-c_d~e+f": {Issuer: "https://as.example.com", Subject: "carol", Scopes: []string{"mcp"}},
		},
		errs: map[string]error{
			"expired":  &oauth.Error{Reason: oauth.ReasonExpired, Description: "token expired"},
			"audience": &oauth.Error{Reason: oauth.ReasonWrongAudience, Description: "token not issued for this resource"},
			"down":     &oauth.Error{Reason: oauth.ReasonVerifierError, Description: "authorization server unreachable", Err: errors.New("dial tcp: connection refused")},
			"broken":   errors.New("some bug"),
		},
	}
}

type guardEnv struct {
	rs       *oauth.ResourceServer
	reg      *prometheus.Registry
	verifier *fakeVerifier
	h        http.Handler
	seen     atomic.Pointer[auth.Principal]
	served   atomic.Int64
	body     atomic.Pointer[string]
}

func newGuard(t *testing.T, mutate ...func(*oauth.Config)) *guardEnv {
	t.Helper()
	e := &guardEnv{reg: prometheus.NewPedanticRegistry(), verifier: newVerifier()}
	cfg := oauth.Config{
		Resource:             testResource,
		AuthorizationServers: []string{"https://as.example.com"},
		Verifier:             e.verifier,
		Scopes:               []string{"mcp"},
		Tools:                toolServer(t, toolScopes),
		Registerer:           e.reg,
	}
	for _, m := range mutate {
		m(&cfg)
	}
	rs, err := oauth.New(cfg)
	require.NoError(t, err)
	e.rs = rs
	e.h = rs.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.served.Add(1)
		if p, ok := auth.PrincipalFromContext(r.Context()); ok {
			e.seen.Store(p)
		}
		b, _ := io.ReadAll(r.Body)
		s := string(b)
		e.body.Store(&s)
		w.WriteHeader(http.StatusOK)
	}))
	return e
}

func (e *guardEnv) failures(t *testing.T) map[string]float64 {
	t.Helper()
	got := map[string]float64{}
	for _, r := range oauth.Reasons() {
		got[r.String()] = testutil.ToFloat64(e.rsCounter(t).WithLabelValues(r.String()))
	}
	return got
}

func (e *guardEnv) rsCounter(t *testing.T) *prometheus.CounterVec {
	t.Helper()
	return vecOf(t, e.reg)
}

func post(body string, hdr map[string][]string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, testResource, strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	for k, vs := range hdr {
		r.Header.Del(k)
		for _, v := range vs {
			r.Header.Add(k, v)
		}
	}
	return r
}

func bearer(tok string) map[string][]string {
	return map[string][]string{"Authorization": {"Bearer " + tok}}
}

const pingBody = `{"jsonrpc":"2.0","id":1,"method":"ping"}`

func callBody(tool string) string {
	return `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"` + tool + `","arguments":{}}}`
}

// The status, challenge and counted reason of every kind of refusal, each
// counted exactly once.
func TestHandlerMatrix(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", (8<<10)+1)
	tests := []struct {
		name   string
		req    func() *http.Request
		status int
		reason oauth.Reason
		params map[string]string // the challenge's, nil: no challenge
	}{
		{
			"no Authorization", func() *http.Request { return post(pingBody, nil) }, 401, oauth.ReasonMissingToken,
			map[string]string{"resource_metadata": testMetadataURL, "scope": "mcp"},
		},
		{
			"Basic scheme", func() *http.Request { return post(pingBody, map[string][]string{"Authorization": {"Basic eDp5"}}) }, 401, oauth.ReasonMissingToken,
			map[string]string{"resource_metadata": testMetadataURL, "scope": "mcp"},
		},
		{
			"empty Bearer", func() *http.Request { return post(pingBody, map[string][]string{"Authorization": {"Bearer "}}) }, 401, oauth.ReasonInvalidToken,
			map[string]string{"error": "invalid_token", "error_description": "empty bearer token", "resource_metadata": testMetadataURL},
		},
		{
			"bad token chars", func() *http.Request { return post(pingBody, bearer("a,b")) }, 401, oauth.ReasonInvalidToken,
			map[string]string{"error": "invalid_token", "error_description": "malformed bearer token", "resource_metadata": testMetadataURL},
		},
		{
			"two Authorization headers", func() *http.Request {
				return post(pingBody, map[string][]string{"Authorization": {"Bearer reader", "Bearer reader"}})
			}, 400, oauth.ReasonInvalidToken,
			map[string]string{"error": "invalid_request", "error_description": "more than one Authorization header", "resource_metadata": testMetadataURL},
		},
		{
			"token in query", func() *http.Request {
				r := post(pingBody, bearer("reader"))
				r.URL.RawQuery = "access_token=reader"
				return r
			}, 400, oauth.ReasonInvalidToken,
			map[string]string{"error": "invalid_request", "error_description": "access tokens are accepted only in the Authorization header", "resource_metadata": testMetadataURL},
		},
		{
			"token in form body", func() *http.Request {
				return post("access_token=reader", map[string][]string{"Content-Type": {"application/x-www-form-urlencoded"}})
			}, 400, oauth.ReasonInvalidToken,
			map[string]string{"error": "invalid_request", "error_description": "form-encoded bodies are refused: access tokens are accepted only in the Authorization header", "resource_metadata": testMetadataURL},
		},
		{
			// Refused unread: a declared length costs no memory.
			"form body with a valid header token and a body that never comes", func() *http.Request {
				r := post("", map[string][]string{"Authorization": {"Bearer all"}, "Content-Type": {"application/x-www-form-urlencoded"}})
				r.Body, r.ContentLength = io.NopCloser(neverReader{}), 4<<20
				return r
			}, 400, oauth.ReasonInvalidToken,
			map[string]string{"error": "invalid_request", "error_description": "form-encoded bodies are refused: access tokens are accepted only in the Authorization header", "resource_metadata": testMetadataURL},
		},
		{
			"oversized token", func() *http.Request { return post(pingBody, bearer(long)) }, 401, oauth.ReasonInvalidToken,
			map[string]string{"error": "invalid_token", "error_description": "bearer token too long", "resource_metadata": testMetadataURL},
		},
		{
			"invalid token", func() *http.Request { return post(pingBody, bearer("nope")) }, 401, oauth.ReasonInvalidToken,
			map[string]string{"error": "invalid_token", "error_description": "unknown token", "resource_metadata": testMetadataURL},
		},
		{
			"expired", func() *http.Request { return post(pingBody, bearer("expired")) }, 401, oauth.ReasonExpired,
			map[string]string{"error": "invalid_token", "error_description": "token expired", "resource_metadata": testMetadataURL},
		},
		{
			"wrong audience", func() *http.Request { return post(pingBody, bearer("audience")) }, 401, oauth.ReasonWrongAudience,
			map[string]string{"error": "invalid_token", "error_description": "token not issued for this resource", "resource_metadata": testMetadataURL},
		},
		{"verifier down", func() *http.Request { return post(pingBody, bearer("down")) }, 503, oauth.ReasonVerifierError, nil},
		{"verifier bug", func() *http.Request { return post(pingBody, bearer("broken")) }, 503, oauth.ReasonVerifierError, nil},
		{
			"missing global scope", func() *http.Request { return post(pingBody, bearer("no-mcp")) }, 403, oauth.ReasonInsufficientScope,
			map[string]string{"error": "insufficient_scope", "scope": "mcp", "error_description": "missing scope: mcp", "resource_metadata": testMetadataURL},
		},
		{
			"missing global scope, scoped tool", func() *http.Request { return post(callBody("wipe"), bearer("no-mcp")) }, 403, oauth.ReasonInsufficientScope,
			map[string]string{"error": "insufficient_scope", "scope": "mcp deploy admin", "error_description": "missing scope: mcp admin", "resource_metadata": testMetadataURL},
		},
		{
			"scoped tool without its scope", func() *http.Request { return post(callBody("deploy"), bearer("reader")) }, 403, oauth.ReasonInsufficientScope,
			map[string]string{"error": "insufficient_scope", "scope": "mcp deploy", "error_description": "missing scope: deploy", "resource_metadata": testMetadataURL},
		},
		{
			"tool needing two scopes, one held", func() *http.Request { return post(callBody("wipe"), bearer("deployer")) }, 403, oauth.ReasonInsufficientScope,
			map[string]string{"error": "insufficient_scope", "scope": "mcp deploy admin", "error_description": "missing scope: admin", "resource_metadata": testMetadataURL},
		},
		{
			"batch with one scoped call", func() *http.Request {
				return post(`[`+pingBody+`,`+callBody("echo")+`,`+callBody("deploy")+`]`, bearer("reader"))
			}, 403, oauth.ReasonInsufficientScope,
			map[string]string{"error": "insufficient_scope", "scope": "mcp deploy", "error_description": "missing scope: deploy", "resource_metadata": testMetadataURL},
		},
		// A member one reading of the body ignores (the transport's exact
		// names, encoding/json's case-insensitive ones) must not hide the
		// tool the other reading calls.
		{
			"scoped tool behind a case-variant name member", func() *http.Request {
				return post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"deploy","NAME":"echo","arguments":{}}}`, bearer("reader"))
			}, 403, oauth.ReasonInsufficientScope,
			map[string]string{"error": "insufficient_scope", "scope": "mcp deploy", "error_description": "missing scope: deploy", "resource_metadata": testMetadataURL},
		},
		{
			"scoped tool behind a case-variant method member", func() *http.Request {
				return post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","Method":"ping","params":{"name":"deploy","arguments":{}}}`, bearer("reader"))
			}, 403, oauth.ReasonInsufficientScope,
			map[string]string{"error": "insufficient_scope", "scope": "mcp deploy", "error_description": "missing scope: deploy", "resource_metadata": testMetadataURL},
		},
		{
			"scoped tool behind a case-variant params member", func() *http.Request {
				return post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"deploy"},"PARAMS":{"name":"echo"}}`, bearer("reader"))
			}, 403, oauth.ReasonInsufficientScope,
			map[string]string{"error": "insufficient_scope", "scope": "mcp deploy", "error_description": "missing scope: deploy", "resource_metadata": testMetadataURL},
		},
		{
			"scoped tool behind a repeated name member", func() *http.Request {
				return post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","name":"deploy","arguments":{}}}`, bearer("reader"))
			}, 403, oauth.ReasonInsufficientScope,
			map[string]string{"error": "insufficient_scope", "scope": "mcp deploy", "error_description": "missing scope: deploy", "resource_metadata": testMetadataURL},
		},
		{
			"scoped tool behind an escaped member name", func() *http.Request {
				return post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"n\u0061me":"deploy","arguments":{}}}`, bearer("reader"))
			}, 403, oauth.ReasonInsufficientScope,
			map[string]string{"error": "insufficient_scope", "scope": "mcp deploy", "error_description": "missing scope: deploy", "resource_metadata": testMetadataURL},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newGuard(t)
			w := httptest.NewRecorder()
			e.h.ServeHTTP(w, tt.req())
			assert.Equal(t, tt.status, w.Code)
			assert.Zero(t, e.served.Load(), "the endpoint must not be reached")

			want := map[string]float64{}
			for _, r := range oauth.Reasons() {
				want[r.String()] = 0
			}
			want[tt.reason.String()] = 1
			assert.Equal(t, want, e.failures(t), "counted exactly once, under its reason")

			ch := w.Header().Get("WWW-Authenticate")
			if tt.params == nil {
				assert.Empty(t, ch)
				assert.Equal(t, "5", w.Header().Get("Retry-After"))
			} else {
				scheme, params, err := wwwauth.Parse(ch)
				require.NoError(t, err, ch)
				assert.Equal(t, "Bearer", scheme)
				assert.Equal(t, tt.params, params)
			}
			assert.Equal(t, "application/json", w.Header().Get("Content-Type"))
			var body struct {
				JSONRPC string          `json:"jsonrpc"`
				ID      json.RawMessage `json:"id"`
				Error   struct {
					Code    int64  `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			require.NoError(t, json.Unmarshal(w.Body.Bytes(), &body), w.Body.String())
			assert.Equal(t, "2.0", body.JSONRPC)
			assert.Equal(t, "null", string(body.ID))
			assert.NotEmpty(t, body.Error.Message)
			if tt.status == http.StatusServiceUnavailable {
				assert.Equal(t, int64(protocol.CodeServerBusy), body.Error.Code)
				assert.NotContains(t, body.Error.Message, "connection refused", "the cause stays in the logs")
			} else {
				assert.Equal(t, int64(protocol.CodeInvalidRequest), body.Error.Code)
			}
			assert.NotContains(t, w.Body.String(), "reader")
		})
	}
}

// Accepted requests reach the endpoint with the principal in their
// context and the body intact, and count nothing.
func TestHandlerPasses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, token, body string
	}{
		{"ping", "reader", pingBody},
		{"unscoped tool", "reader", callBody("echo")},
		{"scoped tool with its scope", "deployer", callBody("deploy")},
		{"fully scoped", "all", callBody("wipe")},
		{"token68 characters", "a.b-c_d~e+f", pingBody},
		{"lowercase scheme", "reader", pingBody},
		{"not JSON: left to the transport", "reader", `{"jsonrpc":`},
		{"batch of allowed calls", "deployer", `[` + callBody("deploy") + `,` + pingBody + `]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newGuard(t)
			hdr := bearer(tt.token)
			if tt.name == "lowercase scheme" {
				hdr = map[string][]string{"Authorization": {"bearer " + tt.token}}
			}
			w := httptest.NewRecorder()
			e.h.ServeHTTP(w, post(tt.body, hdr))
			assert.Equal(t, http.StatusOK, w.Code)
			assert.Equal(t, int64(1), e.served.Load())
			p := e.seen.Load()
			require.NotNil(t, p)
			assert.Equal(t, newVerifier().principals[tt.token].Key(), p.Key())
			assert.Equal(t, tt.body, *e.body.Load(), "the body reaches the endpoint intact")
			for reason, n := range e.failures(t) {
				assert.Zero(t, n, reason)
			}
		})
	}
}

// readRecorder records whether anything read the body.
type readRecorder struct {
	r     io.Reader
	reads atomic.Int64
}

func (b *readRecorder) Read(p []byte) (int, error) {
	b.reads.Add(1)
	return b.r.Read(p)
}

func (*readRecorder) Close() error { return nil }

// A principal holding every tool scope costs no body read in the guard,
// while one lacking a tool scope has its body peeked.
func TestHandlerFullyScopedSkipsBody(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		token string
		reads bool
	}{{"all", false}, {"deployer", true}} {
		e := newGuard(t)
		body := &readRecorder{r: strings.NewReader(callBody("deploy"))}
		r := post("", bearer(tc.token))
		r.Body, r.ContentLength = body, int64(len(callBody("deploy")))
		guarded := e.rs.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			assert.Equal(t, tc.reads, body.reads.Load() > 0, tc.token)
			w.WriteHeader(http.StatusNoContent)
		}))
		w := httptest.NewRecorder()
		guarded.ServeHTTP(w, r)
		assert.Equal(t, http.StatusNoContent, w.Code, tc.token)
	}
}

// A body over MaxBodyBytes that must be read is refused with 413, not
// passed on unchecked.
func TestHandlerBodyTooLarge(t *testing.T) {
	t.Parallel()
	e := newGuard(t, func(c *oauth.Config) { c.MaxBodyBytes = 64 })
	w := httptest.NewRecorder()
	e.h.ServeHTTP(w, post(callBody("deploy")+strings.Repeat(" ", 64), bearer("reader")))
	assert.Equal(t, http.StatusRequestEntityTooLarge, w.Code)
	assert.Zero(t, e.served.Load())
	w = httptest.NewRecorder()
	e.h.ServeHTTP(w, post(callBody("deploy")+strings.Repeat(" ", 64), bearer("all")))
	assert.Equal(t, http.StatusOK, w.Code, "a fully scoped principal's body is not read")
}

// A refused request's log names the reason but never the token.
func TestHandlerLogsNoToken(t *testing.T) {
	t.Parallel()
	var logs strings.Builder
	e := newGuard(t, func(c *oauth.Config) { c.Logger = newTextLogger(&logs) })
	for _, tok := range []string{"expired", "nope-secret-token", "down"} {
		e.h.ServeHTTP(httptest.NewRecorder(), post(pingBody, bearer(tok)))
	}
	e.h.ServeHTTP(httptest.NewRecorder(), post(callBody("deploy"), bearer("reader")))
	out := logs.String()
	assert.Contains(t, out, "reason=expired")
	assert.Contains(t, out, "reason=invalid_token")
	assert.Contains(t, out, "reason=verifier_error")
	assert.Contains(t, out, "reason=insufficient_scope")
	assert.NotContains(t, out, "nope-secret-token")
	assert.NotContains(t, out, "Bearer")
}

func TestNewRejectsBadConfig(t *testing.T) {
	t.Parallel()
	good := func() oauth.Config {
		return oauth.Config{Resource: testResource, AuthorizationServers: []string{"https://as.example.com"}, Verifier: newVerifier()}
	}
	tests := map[string]func(*oauth.Config){
		"no resource":        func(c *oauth.Config) { c.Resource = "" },
		"relative resource":  func(c *oauth.Config) { c.Resource = "/mcp" },
		"fragment":           func(c *oauth.Config) { c.Resource = testResource + "#x" },
		"no issuer":          func(c *oauth.Config) { c.AuthorizationServers = nil },
		"relative issuer":    func(c *oauth.Config) { c.AuthorizationServers = []string{"as"} },
		"no verifier":        func(c *oauth.Config) { c.Verifier = nil },
		"scope with a quote": func(c *oauth.Config) { c.Scopes = []string{`a"b`} },
		"scope with a space": func(c *oauth.Config) { c.Scopes = []string{"a b"} },
	}
	for name, mutate := range tests {
		cfg := good()
		mutate(&cfg)
		_, err := oauth.New(cfg)
		require.Error(t, err, name)
	}
	_, err := oauth.New(good())
	require.NoError(t, err)

	reg := prometheus.NewRegistry()
	cfg := good()
	cfg.Registerer = reg
	_, err = oauth.New(cfg)
	require.NoError(t, err)
	_, err = oauth.New(cfg)
	assert.Error(t, err, "a second registration of the same metric fails")
}

// The reject hook Endpoint hands its Endpoint counts the transport's
// session_principal_mismatch and nothing else.
func TestRejectHook(t *testing.T) {
	t.Parallel()
	e := newGuard(t)
	for _, r := range protocol.RejectReasons() {
		oauth.Rejected(e.rs, r)
	}
	got := e.failures(t)
	assert.InDelta(t, 1, got["session_principal_mismatch"], 0)
	var sum float64
	for _, n := range got {
		sum += n
	}
	assert.InDelta(t, 1, sum, 0)
	assert.Equal(t, protocol.RejectSessionPrincipal.String(), oauth.ReasonSessionPrincipalMismatch.String())
}

// ToolAccess and CallerKey fail closed: a request without a principal (one
// that did not pass the guard: a forged relay, a misconfigured chain,
// stdio) sees no tool, scoped or not, and its caller key is neither a
// principal's nor the anonymous "" of a server without authorization.
// Middleware gives its handler no principal either, not the session's.
func TestToolAccessWithoutPrincipal(t *testing.T) {
	t.Parallel()
	none := &server.Request{}
	assert.False(t, auth.ToolAccess(none, &server.Tool{Name: "deploy", Scopes: []string{"deploy"}}))
	assert.False(t, auth.ToolAccess(none, &server.Tool{Name: "echo"}))
	key := auth.CallerKey(none)
	assert.NotEmpty(t, key)
	for _, p := range newVerifier().principals {
		assert.NotEqual(t, p.Key(), key)
	}
	stale := auth.ContextWithPrincipal(t.Context(), newVerifier().principals["deployer"])
	var saw *auth.Principal
	_, err := auth.Middleware()(func(ctx context.Context, _ *server.Request) (any, error) {
		saw, _ = auth.PrincipalFromContext(ctx)
		return nil, nil
	})(stale, none)
	require.NoError(t, err)
	assert.Nil(t, saw, "the handler sees the principal of the session's context")
	assert.Empty(t, auth.SessionPrincipal(httptest.NewRequest(http.MethodPost, testResource, nil)))
	r := httptest.NewRequest(http.MethodPost, testResource, nil)
	p := newVerifier().principals["reader"]
	r = r.WithContext(auth.ContextWithPrincipal(r.Context(), p))
	assert.Equal(t, p.Key(), auth.SessionPrincipal(r))
}

// neverReader is a body that fails the test if anything reads it.
type neverReader struct{}

func (neverReader) Read([]byte) (int, error) { panic("the body was read") }

// errReader is a body whose read fails.
type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("connection reset") }

// A body that must be read to find its tool is read as it arrives: a large
// declared length that never comes costs no buffer of that size; and a
// body that cannot be read is refused (400), not let through unchecked.
func TestHandlerBodyReadAsItArrives(t *testing.T) {
	e := newGuard(t)
	call := callBody("deploy")
	r := post("", bearer("deployer"))
	r.Body, r.ContentLength = io.NopCloser(strings.NewReader(call)), 4<<20 // declared, never sent
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	w := httptest.NewRecorder()
	e.h.ServeHTTP(w, r)
	runtime.ReadMemStats(&after)
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(1<<20), "bytes allocated for a 4 MiB declared body")
	assert.NotEqual(t, http.StatusRequestEntityTooLarge, w.Code)

	r = post("", bearer("deployer"))
	r.Body, r.ContentLength = io.NopCloser(errReader{}), -1
	w = httptest.NewRecorder()
	e.h.ServeHTTP(w, r)
	assert.Equal(t, http.StatusBadRequest, w.Code, w.Body.String())
}

// A 2026-07-28 request's tool is read from its Mcp-Method and Mcp-Name
// headers (the transport refuses headers that disagree with the body), so
// the guard never reads its body.
func TestHandler2026ReadsHeadersNotBody(t *testing.T) {
	e := newGuard(t)
	for _, tc := range []struct {
		method, name string
		status       int
	}{
		{"tools/call", "deploy", http.StatusForbidden},
		{"tools/call", "echo", http.StatusNoContent},
		{"tools/list", "", http.StatusNoContent},
	} {
		body := &readRecorder{r: strings.NewReader(callBody("deploy"))}
		r := post("", bearer("reader"))
		r.Body, r.ContentLength = body, int64(len(callBody("deploy")))
		r.Header.Set("MCP-Protocol-Version", protocol.Version20260728)
		r.Header.Set("Mcp-Method", tc.method)
		if tc.name != "" {
			r.Header.Set("Mcp-Name", tc.name)
		}
		w := httptest.NewRecorder()
		e.rs.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })).ServeHTTP(w, r)
		assert.Equal(t, tc.status, w.Code, "%s %s", tc.method, tc.name)
		assert.Zero(t, body.reads.Load(), "%s %s: the guard read the body", tc.method, tc.name)
	}
}

// In front of a streamable.Endpoint, the Handler has the Endpoint check the
// tools a 2025 POST calls on the message it decodes: the same 403, counted
// once, for a call and for one whose tool is named only in an escaped
// string; a principal with the scope is served. A message that reaches the
// guarded Endpoint without passing the Handler finds no principal and is
// refused.
func TestHandlerEndpointChecksTools(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	srv := server.New()
	require.NoError(t, srv.AddTool(server.Tool{Name: "deploy", Scopes: []string{"deploy"}},
		func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
			return server.Text("ok"), nil
		}))
	rs, err := oauth.New(oauth.Config{
		Resource: testResource, AuthorizationServers: []string{"https://as.example.com"}, Verifier: newVerifier(),
		Scopes: []string{"mcp"}, Tools: srv, Registerer: reg,
	})
	require.NoError(t, err)
	ep, h := rs.Endpoint(srv, streamable.WithAllowedHosts("mcp.example.com"))
	defer func() { _ = ep.Close() }()
	mcpPost := func(tok, body string) *httptest.ResponseRecorder {
		hdr := map[string][]string{"Accept": {"application/json, text/event-stream"}}
		if tok != "" {
			hdr["Authorization"] = []string{"Bearer " + tok}
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, post(body, hdr))
		return w
	}
	w := mcpPost("reader", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	for _, body := range []string{callBody("deploy"), `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"d\u0065ploy"}}`} {
		w := mcpPost("reader", body)
		require.Equal(t, http.StatusForbidden, w.Code, body)
		assert.Equal(t, `Bearer error="insufficient_scope", scope="mcp deploy", resource_metadata="`+testMetadataURL+`", error_description="missing scope: deploy"`,
			w.Header().Get("WWW-Authenticate"))
	}
	assert.InDelta(t, 2.0, testutil.ToFloat64(vecOf(t, reg).WithLabelValues("insufficient_scope")), 0)
	// With the scope, the call reaches the Endpoint, which asks for a session.
	w = mcpPost("deployer", callBody("deploy"))
	assert.NotEqual(t, http.StatusForbidden, w.Code)
	assert.InDelta(t, 2.0, testutil.ToFloat64(vecOf(t, reg).WithLabelValues("insufficient_scope")), 0)

	// Straight to the Endpoint, past the Handler: no principal, refused.
	w = httptest.NewRecorder()
	ep.ServeHTTP(w, post(callBody("deploy"), map[string][]string{"Accept": {"application/json, text/event-stream"}}))
	assert.Equal(t, http.StatusUnauthorized, w.Code)
}

// vecOf gathers the failure counter of reg.
func vecOf(t *testing.T, reg *prometheus.Registry) *prometheus.CounterVec {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	require.Len(t, mfs, 1)
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "x"}, []string{"reason"})
	for _, m := range mfs[0].GetMetric() {
		vec.WithLabelValues(m.GetLabel()[0].GetValue()).Add(m.GetCounter().GetValue())
	}
	return vec
}

// A token in the query is refused however its parameter name is encoded.
func TestHandlerRefusesEncodedQueryToken(t *testing.T) {
	t.Parallel()
	e := newGuard(t)
	for _, q := range []string{"access%5Ftoken=reader", "access%5ftoken=reader", "%61ccess_token=reader", "x=1&access%5Ftoken=reader", "x=1;access_token=reader"} {
		r := post(pingBody, bearer("reader"))
		r.URL.RawQuery = q
		w := httptest.NewRecorder()
		e.h.ServeHTTP(w, r)
		assert.Equal(t, http.StatusBadRequest, w.Code, q)
		assert.Contains(t, w.Header().Get("WWW-Authenticate"), "invalid_request", q)
	}
	for _, q := range []string{"ACCESS_TOKEN=reader", "access%5Ftokens=reader", "x=access_token", "x=%zz"} {
		r := post(pingBody, bearer("reader"))
		r.URL.RawQuery = q
		w := httptest.NewRecorder()
		e.h.ServeHTTP(w, r)
		assert.Equal(t, http.StatusOK, w.Code, "%s: not an access_token parameter", q)
	}
}

// Refusals a client causes are logged at Debug only, so that a flood of bad
// tokens cannot push the request lines out of an Info log; each is counted.
func TestHandlerRefusalsNotAtInfo(t *testing.T) {
	t.Parallel()
	var logs strings.Builder
	e := newGuard(t, func(c *oauth.Config) {
		c.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	})
	for _, tok := range []string{"expired", "nope", "audience"} {
		e.h.ServeHTTP(httptest.NewRecorder(), post(pingBody, bearer(tok)))
	}
	e.h.ServeHTTP(httptest.NewRecorder(), post(callBody("deploy"), bearer("reader")))
	assert.NotContains(t, logs.String(), "request refused")
	f := e.failures(t)
	for _, reason := range []string{"expired", "invalid_token", "insufficient_scope"} {
		assert.InDelta(t, 1, f[reason], 0, reason)
	}
	e.h.ServeHTTP(httptest.NewRecorder(), post(pingBody, bearer("down")))
	assert.Contains(t, logs.String(), "reason=verifier_error", "the server's own trouble stays at Info")
}

// Config.RequestScopes: a request that needs a scope besides Scopes (a
// gateway endpoint's) is refused 403 without it, the challenge naming
// every scope it needs, with HideTools too; a request without a token
// is challenged with them; a request that needs none, or whose principal
// holds them, passes.
func TestHandlerRequestScopes(t *testing.T) {
	t.Parallel()
	for _, hide := range []bool{false, true} {
		e := newGuard(t, func(c *oauth.Config) {
			c.HideTools = hide
			c.RequestScopes = func(r *http.Request) []string {
				if r.URL.Path == "/mcp/deployers" {
					return []string{"deploy", "mcp"}
				}
				return nil
			}
		})
		at := func(path, token string) *httptest.ResponseRecorder {
			r := post(pingBody, bearer(token))
			if token == "" {
				r.Header.Del("Authorization")
			}
			r.URL.Path = path
			w := httptest.NewRecorder()
			e.h.ServeHTTP(w, r)
			return w
		}
		w := at("/mcp/deployers", "reader")
		assert.Equal(t, http.StatusForbidden, w.Code, "hide %v", hide)
		assert.Equal(t, `Bearer error="insufficient_scope", scope="mcp deploy", resource_metadata="`+e.rs.MetadataURL()+`", error_description="missing scope: deploy"`,
			w.Header().Get("WWW-Authenticate"))
		assert.InDelta(t, 1, e.failures(t)["insufficient_scope"], 0)
		w = at("/mcp/deployers", "")
		assert.Equal(t, http.StatusUnauthorized, w.Code)
		assert.Equal(t, `Bearer scope="mcp deploy", resource_metadata="`+e.rs.MetadataURL()+`"`, w.Header().Get("WWW-Authenticate"))
		assert.Equal(t, http.StatusOK, at("/mcp/deployers", "deployer").Code)
		assert.Equal(t, http.StatusOK, at("/mcp/others", "reader").Code)
		assert.Equal(t, int64(2), e.served.Load())
	}
}
