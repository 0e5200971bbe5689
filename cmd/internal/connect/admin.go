package connect

import (
	"encoding/json"
	"errors"
	"log/slog"
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
// A browser's cross-origin POST is refused 403, its cause logged to log
// (net/http's CrossOriginProtection; docs/security.md).
func AdminHandler(of func() *Connector, log *slog.Logger) http.Handler {
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
		err := c.vault.Disconnect(r.Context(), key, up)
		if lives, ok := errors.AsType[*accounts.AccessTokenLivesError](err); ok {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			_, _ = w.Write([]byte("disconnected: " + livesText(lives) + "\n"))
			return
		}
		if err != nil {
			c.log.Warn("connect: admin: disconnect", "upstream", up, "error", err)
			http.Error(w, "disconnected, but the revocation at the authorization server failed", http.StatusBadGateway)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("disconnected\n"))
	})
	return sameOrigin(mux, log)
}

// maxLoggedHeader bounds each header a refusal logs.
const maxLoggedHeader = 256

// logged returns r's header name, cut at maxLoggedHeader bytes.
func logged(r *http.Request, name string) string {
	v := r.Header.Get(name)
	if len(v) > maxLoggedHeader {
		v = v[:maxLoggedHeader]
	}
	return v
}

// sameOrigin serves h the requests net/http's CrossOriginProtection lets
// through, and refuses the others 403, logging the cause.
func sameOrigin(h http.Handler, log *slog.Logger) http.Handler {
	cop := http.NewCrossOriginProtection()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := cop.Check(r); err != nil {
			log.Warn("connect: admin: a cross-origin browser request refused: a web page, not the operator, sent it",
				"method", r.Method, "path", r.URL.Path, "origin", logged(r, "Origin"), "sec_fetch_site", logged(r, "Sec-Fetch-Site"), "cause", err.Error())
			http.Error(w, "refused: a cross-origin request from a browser; the admin endpoints serve the operator's own tools", http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}
