package connect

import (
	"encoding/json"
	"net/http"

	"github.com/vigil-mcp/vigil/gateway/accounts"
	"github.com/vigil-mcp/vigil/internal/quota"
)

// AdminHandler serves the operator's view of a user's connections, on
// the admin listener (vigil.WithAdminHandler), the user named by the
// issuer and subject of their tokens:
//
//	GET  /admin/connections?issuer=I&subject=S
//	POST /admin/connections/revoke?issuer=I&subject=S&upstream=U
//
// The first answers {"connections":[{upstream, scopes, expiry,
// obtained}]} (never a token); the second forgets the tokens and revokes
// them at the authorization server, as gateway_disconnect does. of
// returns the Connector, nil until the upstreams are mounted (503).
func AdminHandler(of func() *Connector) http.Handler {
	mux := http.NewServeMux()
	user := func(w http.ResponseWriter, r *http.Request) (*Connector, string) {
		c := of()
		if c == nil {
			http.Error(w, "the upstreams are not mounted yet", http.StatusServiceUnavailable)
			return nil, ""
		}
		q := r.URL.Query()
		iss, sub := q.Get("issuer"), q.Get("subject")
		key := quota.PrincipalKey(iss, sub, "")
		if iss == "" || sub == "" || len(key) > accounts.MaxPrincipalBytes {
			http.Error(w, "issuer= and subject= name the user (together at most 512 bytes)", http.StatusBadRequest)
			return nil, ""
		}
		return c, key
	}
	mux.HandleFunc("GET /admin/connections", func(w http.ResponseWriter, r *http.Request) {
		c, key := user(w, r)
		if c == nil {
			return
		}
		got, err := c.vault.Connections(r.Context(), key)
		if err != nil {
			c.log.Warn("connect: admin: listing connections failed", "error", err)
			http.Error(w, "the connections cannot be read now", http.StatusServiceUnavailable)
			return
		}
		out := struct {
			Connections []connection `json:"connections"`
		}{Connections: []connection{}}
		for _, g := range got {
			out.Connections = append(out.Connections, connection{Upstream: g.Upstream, Scopes: g.Scopes, Expiry: g.Expiry, Obtained: g.Obtained})
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_ = json.NewEncoder(w).Encode(out)
	})
	mux.HandleFunc("POST /admin/connections/revoke", func(w http.ResponseWriter, r *http.Request) {
		c, key := user(w, r)
		if c == nil {
			return
		}
		up := r.URL.Query().Get("upstream")
		if c.ups[up] == nil {
			http.Error(w, "upstream= names none of the upstreams that act as each user", http.StatusNotFound)
			return
		}
		if err := c.vault.Disconnect(r.Context(), key, up); err != nil {
			c.log.Warn("connect: admin: disconnect", "upstream", up, "error", err)
			http.Error(w, "disconnected, but the revocation at the authorization server failed", http.StatusBadGateway)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("disconnected\n"))
	})
	return mux
}
