package oauth_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/vigil-mcp/vigil/middleware/oauth"
)

// ExampleResourceServer_Exchanger gets a handler a token for another
// service on behalf of its caller (RFC 8693 token exchange). The handler
// never sees the caller's token: Exchange finds it in the request's
// context, where the resource server keeps it once it has an Exchanger,
// and sends it to the token endpoint only. A second Exchange for the same
// caller, audience and scopes is answered from the cache.
func ExampleResourceServer_Exchanger() {
	exchanges := 0
	as := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The authorization server's token endpoint (a real one checks
		// the subject token and the client, and puts act in the token).
		exchanges++
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `{"access_token":"orders-token-for-%s","token_type":"Bearer","expires_in":300}`, r.PostFormValue("audience"))
	}))
	defer as.Close()

	rs, err := oauth.New(oauth.Config{
		Resource:             "http://127.0.0.1:8080/mcp",
		AuthorizationServers: []string{as.URL},
		Verifier:             staticVerifier{},
	})
	if err != nil {
		panic(err)
	}
	x, err := rs.Exchanger(oauth.ExchangeConfig{Endpoint: as.URL + "/token", ClientID: "vigil", ClientSecret: "s3cret"})
	if err != nil {
		panic(err)
	}
	// A handler behind rs; an MCP tool handler calls Exchange with its
	// ctx alike.
	h := rs.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, err := x.Exchange(r.Context(), "orders", "orders.read")
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		fmt.Println("calling the orders service with", tok)
	}))
	for range 2 {
		r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
		r.Header.Set("Authorization", "Bearer good-token")
		h.ServeHTTP(httptest.NewRecorder(), r)
	}
	fmt.Println("exchanges:", exchanges)
	// Output:
	// calling the orders service with orders-token-for-orders
	// calling the orders service with orders-token-for-orders
	// exchanges: 1
}
