package oauth_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/vigil-mcp/vigil/middleware/auth"
	"github.com/vigil-mcp/vigil/middleware/oauth"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/protocol"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// Tokens of the exchange tests: the callers' (which vigil verifies and
// must send only to the token endpoint), and the exchanger's credentials.
const (
	xAliceToken   = "alice-subject-token"
	xBobToken     = "bob-subject-token"
	xClientID     = "vigil-exchanger"
	xClientSecret = "exchanger-secret"
)

// seen is one request a test server received.
type seen struct {
	server, method, path string
	header               http.Header
	body                 string
}

// recorder keeps every request the test's servers received, whichever.
type recorder struct {
	mu   sync.Mutex
	reqs []seen
}

func (rec *recorder) wrap(name string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rec.mu.Lock()
		rec.reqs = append(rec.reqs, seen{server: name, method: r.Method, path: r.URL.String(), header: r.Header.Clone(), body: string(b)})
		rec.mu.Unlock()
		r.Body = io.NopCloser(strings.NewReader(string(b)))
		h.ServeHTTP(w, r)
	})
}

// carrying returns where the requests that carry token (in a header, the
// URL or the body) went: "server method path" each.
func (rec *recorder) carrying(token string) []string {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var where []string
	for _, s := range rec.reqs {
		if strings.Contains(fmt.Sprint(s.header), token) || strings.Contains(s.path, token) || strings.Contains(s.body, token) {
			where = append(where, s.server+" "+s.method+" "+s.path)
		}
	}
	return where
}

// exchangeRig is a server behind a ResourceServer with an Exchanger, the
// authorization server's token endpoint (a fake that checks an RFC 8693
// request), and a downstream API the tools call with the exchanged token.
type exchangeRig struct {
	t         *testing.T
	mcp       string // the MCP endpoint's URL
	rec       *recorder
	reg       *prometheus.Registry
	spans     *tracetest.SpanRecorder
	exchanges func() int // the token endpoint's exchanges so far
}

func newExchangeRig(t *testing.T) *exchangeRig {
	t.Helper()
	rec := &recorder{}
	var mu sync.Mutex
	issued := 0
	subjects := map[string]string{xAliceToken: "alice", xBobToken: "bob"}
	as := httptest.NewServer(rec.wrap("as", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		id, secret, ok := r.BasicAuth()
		if r.URL.Path != "/token" || !ok || id != xClientID || secret != xClientSecret || r.ParseForm() != nil ||
			r.PostForm.Get("grant_type") != "urn:ietf:params:oauth:grant-type:token-exchange" ||
			r.PostForm.Get("subject_token_type") != "urn:ietf:params:oauth:token-type:access_token" {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"error":"invalid_request"}`)
			return
		}
		sub, known := subjects[r.PostForm.Get("subject_token")]
		switch {
		case !known:
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"error":"invalid_grant"}`)
			return
		case r.PostForm.Get("audience") != "https://api.example.com":
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"error":"invalid_target","error_description":"unknown audience"}`)
			return
		}
		mu.Lock()
		issued++
		n := issued
		mu.Unlock()
		_ = json.NewEncoder(w).Encode(map[string]any{
			"access_token":      fmt.Sprintf("downstream-%s-%d-%s", sub, n, strings.ReplaceAll(r.PostForm.Get("scope"), " ", "+")),
			"issued_token_type": "urn:ietf:params:oauth:token-type:access_token",
			"token_type":        "Bearer",
			"expires_in":        300,
		})
	})))
	t.Cleanup(as.Close)
	api := httptest.NewServer(rec.wrap("api", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "api saw "+r.Header.Get("Authorization"))
	})))
	t.Cleanup(api.Close)

	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	srv := server.New(server.WithMiddleware(auth.Middleware()))
	reg := prometheus.NewPedanticRegistry()
	rs, err := oauth.New(oauth.Config{
		Resource:             "http://127.0.0.1/mcp",
		AuthorizationServers: []string{as.URL},
		Verifier: &fakeVerifier{principals: map[string]*auth.Principal{
			xAliceToken: {Issuer: as.URL, Subject: "alice", Scopes: []string{"mcp"}, Expiry: time.Now().Add(time.Hour)},
			xBobToken:   {Issuer: as.URL, Subject: "bob", Scopes: []string{"mcp"}, Expiry: time.Now().Add(time.Hour)},
		}},
		Registerer: reg,
	})
	require.NoError(t, err)
	x, err := rs.Exchanger(oauth.ExchangeConfig{Endpoint: as.URL + "/token", ClientID: xClientID, ClientSecret: xClientSecret})
	require.NoError(t, err)

	// call_api exchanges the caller's token for one of audience and
	// calls the API with it, under a span of its own.
	callAPI := func(ctx context.Context, req *server.CallToolRequest) (*server.CallToolResult, error) {
		var in struct {
			Audience string   `json:"audience"`
			Scopes   []string `json:"scopes"`
		}
		if err := json.Unmarshal(req.Arguments, &in); err != nil {
			return nil, err
		}
		ctx, span := tp.Tracer("test").Start(ctx, "call_api")
		defer span.End()
		tok, err := x.Exchange(ctx, in.Audience, in.Scopes...)
		if err != nil {
			return errorText(err), nil
		}
		r, err := http.NewRequestWithContext(ctx, http.MethodGet, api.URL+"/orders", nil)
		if err != nil {
			return nil, err
		}
		r.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			return nil, err
		}
		defer func() { _ = resp.Body.Close() }()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return nil, err
		}
		return server.Text(string(b)), nil
	}
	require.NoError(t, srv.AddTool(server.Tool{Name: "call_api"}, callAPI))
	// elsewhere asks from a context that is not the request's.
	require.NoError(t, srv.AddTool(server.Tool{Name: "elsewhere"}, func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
		_, err := x.Exchange(context.Background(), "https://api.example.com")
		return errorText(err), nil
	}))

	ep, guarded := rs.Endpoint(srv, streamable.WithPrincipal(auth.SessionPrincipal))
	mcp := httptest.NewServer(rec.wrap("mcp", guarded))
	t.Cleanup(func() {
		_ = ep.Close()
		mcp.CloseClientConnections()
		mcp.Close()
		_ = srv.Close()
	})
	return &exchangeRig{t: t, mcp: mcp.URL + "/mcp", rec: rec, reg: reg, spans: spans, exchanges: func() int {
		mu.Lock()
		defer mu.Unlock()
		return issued
	}}
}

// call calls tool as the caller of token (a stateless 2026-07-28 request)
// and returns its text and whether it is an error result.
func (x *exchangeRig) call(token, tool string, args map[string]any) (string, bool) {
	x.t.Helper()
	params, err := json.Marshal(map[string]any{
		"name": tool, "arguments": args,
		"_meta": map[string]any{
			"io.modelcontextprotocol/protocolVersion":    protocol.Version20260728,
			"io.modelcontextprotocol/clientCapabilities": map[string]any{},
			"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "t", "version": "1"},
		},
	})
	require.NoError(x.t, err)
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` + string(params) + `}`
	r, err := http.NewRequestWithContext(x.t.Context(), http.MethodPost, x.mcp, strings.NewReader(body))
	require.NoError(x.t, err)
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	r.Header.Set("Authorization", "Bearer "+token)
	r.Header.Set("MCP-Protocol-Version", protocol.Version20260728)
	r.Header.Set("Mcp-Method", "tools/call")
	r.Header.Set("Mcp-Name", tool)
	resp, err := http.DefaultClient.Do(r)
	require.NoError(x.t, err)
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	require.NoError(x.t, err)
	require.Equal(x.t, http.StatusOK, resp.StatusCode, "%s", b)
	var msg struct {
		Result struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
			IsError bool `json:"isError"`
		} `json:"result"`
	}
	require.NoError(x.t, json.Unmarshal(b, &msg), "%s", b)
	require.Len(x.t, msg.Result.Content, 1, "%s", b)
	return msg.Result.Content[0].Text, msg.Result.IsError
}

func (x *exchangeRig) count(outcome string) int {
	x.t.Helper()
	mfs, err := x.reg.Gather()
	require.NoError(x.t, err)
	for _, mf := range mfs {
		if mf.GetName() != "mcp_server_auth_exchanges_total" {
			continue
		}
		require.Len(x.t, mf.GetMetric(), 5, "every outcome is pre-created")
		for _, m := range mf.GetMetric() {
			if m.GetLabel()[0].GetValue() == outcome {
				return int(m.GetCounter().GetValue())
			}
		}
	}
	x.t.Fatalf("no series for %s", outcome)
	return 0
}

// A tool gets a token for another audience on behalf of its caller: the
// token endpoint gets the caller's token as the subject token, with the
// exchanger's credentials; a second call of the same caller, audience and
// scopes is answered from the cache (one exchange), another caller's or
// other scopes' are exchanged anew. The callers' tokens went to the MCP
// endpoint (they sent them) and to the token endpoint, nowhere else: not
// to the API the tool called. Each exchange is counted and spanned.
func TestExchangeForTool(t *testing.T) {
	t.Parallel()
	x := newExchangeRig(t)
	args := map[string]any{"audience": "https://api.example.com", "scopes": []string{"orders.read"}}

	text, isErr := x.call(xAliceToken, "call_api", args)
	require.False(t, isErr, text)
	assert.Equal(t, "api saw Bearer downstream-alice-1-orders.read", text)
	text, isErr = x.call(xAliceToken, "call_api", args)
	require.False(t, isErr, text)
	assert.Equal(t, "api saw Bearer downstream-alice-1-orders.read", text, "the same token, from the cache")
	assert.Equal(t, 1, x.exchanges(), "the authorization server saw one exchange")

	text, _ = x.call(xBobToken, "call_api", args)
	assert.Equal(t, "api saw Bearer downstream-bob-2-orders.read", text, "another caller: another exchange")
	text, _ = x.call(xAliceToken, "call_api", map[string]any{"audience": "https://api.example.com", "scopes": []string{"orders.read", "orders.write"}})
	assert.Equal(t, "api saw Bearer downstream-alice-3-orders.read+orders.write", text, "other scopes: another exchange")
	assert.Equal(t, 3, x.exchanges())

	for _, tok := range []string{xAliceToken, xBobToken} {
		for _, where := range x.rec.carrying(tok) {
			assert.True(t, where == "mcp POST /mcp" || where == "as POST /token", "%s went to %s", tok, where)
		}
		assert.Contains(t, x.rec.carrying(tok), "as POST /token")
	}
	assert.Empty(t, x.rec.carrying(xClientSecret), "the secret goes in the Authorization header, base64-encoded")

	assert.Equal(t, 3, x.count("exchanged"))
	assert.Equal(t, 1, x.count("cached"))
	var exchangeSpans int
	for _, s := range x.spans.Ended() {
		if s.Name() == "token exchange" {
			exchangeSpans++
			assert.Equal(t, "call_api", parentName(x.spans, s), "a child of the tool's span")
		}
	}
	assert.Equal(t, 4, exchangeSpans, "one span per Exchange, cached or not")
}

// parentName returns the name of s's parent among rec's ended spans.
func parentName(rec *tracetest.SpanRecorder, s sdktrace.ReadOnlySpan) string {
	for _, p := range rec.Ended() {
		if p.SpanContext().SpanID() == s.Parent().SpanID() {
			return p.Name()
		}
	}
	return ""
}

// A refusal of the authorization server reaches the handler as an error
// naming its code, counted as refused; an Exchange outside a verified
// request's context has no subject token and asks nothing.
func TestExchangeRefused(t *testing.T) {
	t.Parallel()
	x := newExchangeRig(t)
	text, isErr := x.call(xAliceToken, "call_api", map[string]any{"audience": "https://elsewhere.example.com"})
	assert.True(t, isErr)
	assert.Contains(t, text, "invalid_target")
	assert.NotContains(t, text, xAliceToken)
	assert.Equal(t, 1, x.count("refused"))

	text, isErr = x.call(xAliceToken, "elsewhere", nil)
	assert.True(t, isErr)
	assert.Contains(t, text, "no subject token")
	assert.Equal(t, 1, x.count("no_subject_token"))
	assert.Equal(t, 0, x.exchanges())
	assert.Equal(t, 0, x.count("exchanged"))
}

// The subject token is sent to the configured token endpoint only: a
// redirect is not followed, whatever its target.
func TestExchangeFollowsNoRedirect(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	target := httptest.NewServer(rec.wrap("target", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"access_token":"stolen","token_type":"Bearer","expires_in":60}`)
	})))
	t.Cleanup(target.Close)
	as := httptest.NewServer(rec.wrap("as", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+"/token", http.StatusTemporaryRedirect)
	})))
	t.Cleanup(as.Close)
	rs, err := oauth.New(oauth.Config{
		Resource: "http://127.0.0.1/mcp", AuthorizationServers: []string{as.URL},
		Verifier: &fakeVerifier{principals: map[string]*auth.Principal{xAliceToken: {Subject: "alice"}}},
	})
	require.NoError(t, err)
	x, err := rs.Exchanger(oauth.ExchangeConfig{Endpoint: as.URL + "/token", ClientID: xClientID, ClientSecret: xClientSecret})
	require.NoError(t, err)
	var got error
	var printed string
	h := rs.Handler(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		_, got = x.Exchange(r.Context(), "https://api.example.com")
		printed = fmt.Sprintf("%v %+v %#v", r.Context(), r.Context(), r.Context())
	}))
	r := httptest.NewRequest(http.MethodGet, "/mcp", nil)
	r.Header.Set("Authorization", "Bearer "+xAliceToken)
	h.ServeHTTP(httptest.NewRecorder(), r)
	require.Error(t, got)
	assert.Contains(t, got.Error(), "status 307")
	assert.Equal(t, []string{"as POST /token"}, rec.carrying(xAliceToken))
	assert.Contains(t, printed, "heldToken", "the token is in the context")
	assert.NotContains(t, printed, xAliceToken, "and printing the context does not show it")
}

// An Exchanger's configuration is checked: an endpoint and a client id
// are required, and the endpoint is https or loopback http.
func TestExchangerConfig(t *testing.T) {
	t.Parallel()
	rs, err := oauth.New(oauth.Config{
		Resource: "http://127.0.0.1/mcp", AuthorizationServers: []string{"https://as.example.com"},
		Verifier: &fakeVerifier{},
	})
	require.NoError(t, err)
	for _, cfg := range []oauth.ExchangeConfig{
		{ClientID: "c"},
		{Endpoint: "https://as.example.com/token"},
		{Endpoint: "http://as.example.com/token", ClientID: "c"},
		{Endpoint: "ftp://as.example.com/token", ClientID: "c"},
		{Endpoint: "https://as.example.com/token#x", ClientID: "c"},
	} {
		_, err := rs.Exchanger(cfg)
		require.Error(t, err, "%+v", cfg)
	}
	_, err = rs.Exchanger(oauth.ExchangeConfig{Endpoint: "https://as.example.com/token", ClientID: "c"})
	require.NoError(t, err)
}

// errorText is a tool result with isError set, holding err's text.
func errorText(err error) *server.CallToolResult {
	r := server.Text(err.Error())
	r.IsError = true
	return r
}
