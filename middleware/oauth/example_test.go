package oauth_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/vigil-mcp/vigil/middleware/auth"
	"github.com/vigil-mcp/vigil/middleware/oauth"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// staticVerifier stands in for the JWT or introspection verifier of a real
// deployment: it knows one token.
type staticVerifier struct{}

func (staticVerifier) Verify(_ context.Context, token string) (*auth.Principal, error) {
	if token != "good-token" {
		return nil, &oauth.Error{Reason: oauth.ReasonInvalidToken, Description: "unknown token"}
	}
	return &auth.Principal{Issuer: "https://oauth.example.com", Subject: "alice", Scopes: []string{"mcp"}}, nil
}

// ExampleNew protects a Streamable HTTP endpoint: every request needs the
// scope mcp, and the deploy tool also needs deploy, so that alice neither
// sees it in tools/list nor may call it (403 insufficient_scope).
func ExampleNew() {
	srv := server.New(
		server.WithMiddleware(auth.Middleware()),
		server.WithToolAccess(auth.ToolAccess),
	)
	_ = srv.AddTool(server.Tool{Name: "deploy", Scopes: []string{"deploy"}},
		func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
			p, _ := auth.PrincipalFromContext(ctx)
			return server.Text("deployed by " + p.Subject), nil
		})

	rs, err := oauth.New(oauth.Config{
		Resource:             "http://127.0.0.1:8080/mcp",
		AuthorizationServers: []string{"https://oauth.example.com"},
		Verifier:             staticVerifier{}, // oauth.NewVerifier(...) in production
		Scopes:               []string{"mcp"},
		Tools:                srv,
	})
	if err != nil {
		panic(err)
	}
	ep, guarded := rs.Endpoint(srv)
	defer func() { _ = ep.Close(); _ = srv.Close() }()
	mux := http.NewServeMux()
	mux.Handle("/mcp", guarded)
	for p, h := range rs.MetadataHandlers() {
		mux.Handle(p, h)
	}

	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"deploy"}}`
	for _, token := range []string{"", "bad-token", "good-token"} {
		r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:8080/mcp", strings.NewReader(call))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		if token != "" {
			r.Header.Set("Authorization", "Bearer "+token)
		}
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, r)
		fmt.Println(w.Code, w.Header().Get("WWW-Authenticate"))
	}
	// Output:
	// 401 Bearer scope="mcp", resource_metadata="http://127.0.0.1:8080/.well-known/oauth-protected-resource/mcp"
	// 401 Bearer error="invalid_token", resource_metadata="http://127.0.0.1:8080/.well-known/oauth-protected-resource/mcp", error_description="unknown token"
	// 403 Bearer error="insufficient_scope", scope="mcp deploy", resource_metadata="http://127.0.0.1:8080/.well-known/oauth-protected-resource/mcp", error_description="missing scope: deploy"
}

// A protected handler served from an http.Server whose ConnContext is
// streamable.ConnContext (as vigil.Service's is): its connections each
// remember the last token verified on them, and a client
// that keeps its connection open and sends the same token with every
// request has it recognized by comparison (with the package's JWT and
// introspection verifiers; staticVerifier stands in for them here).
func Example_connectionMemo() {
	rs, err := oauth.New(oauth.Config{
		Resource:             "http://127.0.0.1:8080/mcp",
		AuthorizationServers: []string{"https://oauth.example.com"},
		Verifier:             staticVerifier{},
	})
	if err != nil {
		panic(err)
	}
	h := rs.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, _ := auth.PrincipalFromContext(r.Context())
		_, _ = fmt.Fprint(w, p.Subject)
	}))
	hs := httptest.NewUnstartedServer(h)
	hs.Config.ConnContext = streamable.ConnContext
	hs.Start()
	defer hs.Close()

	for range 2 { // one keep-alive connection
		req, _ := http.NewRequest(http.MethodPost, hs.URL+"/mcp", strings.NewReader(`{}`))
		req.Header.Set("Authorization", "Bearer good-token")
		resp, err := hs.Client().Do(req)
		if err != nil {
			panic(err)
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		fmt.Println(resp.StatusCode, string(body))
	}
	// Output:
	// 200 alice
	// 200 alice
}
