package connect

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// cookiePrefix names the cookie that binds a flow to the browser that
// opened its link: one per flow (its id follows), so that two flows of
// one browser do not clash. On an https gateway it takes the __Host-
// prefix (hostPrefix), which a browser accepts only Secure, for Path=/
// and without Domain: a sibling host cannot set it (cookie tossing).
const (
	cookiePrefix = "vigil-connect-"
	hostPrefix   = "__Host-"
)

// cookie returns the name and path of flow id's cookie.
func (c *Connector) cookie(id string) (name, path string) {
	if u, err := url.Parse(c.baseURL()); err == nil && u.Scheme == "https" {
		return hostPrefix + cookiePrefix + id, "/"
	}
	return cookiePrefix + id, "/connect/"
}

// The pages' texts: fixed, so that nothing a request carries is echoed.
const (
	pageGone     = "This link is not valid: it expired, was used, or was never made. Call the tool again for a new one."
	pageBadState = "This sign-in is not valid: it was used already, expired, or was started in another browser. Open the link again."
	pageOther    = "You signed in as someone else than the user this link was made for. Nothing was stored."
	pageDenied   = "The authorization was not given. Nothing was stored."
	pageFailed   = "The authorization could not be completed. Nothing was stored. Call the tool again for a new link."
	pageDone     = "Your account is connected. You can close this page and return to your client."
	pageAway     = "The gateway cannot reach its store of authorizations now. Try again in a moment."
)

// Handler serves the gateway's pages: GET /connect/{id} (the link),
// /connect/signin (the identity provider's redirect) and
// /connect/callback (the upstream's authorization server's redirect).
func (c *Connector) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /connect/signin", c.signedIn)
	mux.HandleFunc("GET /connect/callback", c.callback)
	mux.HandleFunc("GET /connect/{id}", c.open)
	return mux
}

// page answers status with the fixed text msg.
func page(w http.ResponseWriter, status int, msg string) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'")
	w.WriteHeader(status)
	_, _ = w.Write([]byte("<!doctype html><meta charset=utf-8><title>vigil</title><p>" + msg + "</p>\n"))
}

// redirect sends the browser to where, an authorization endpoint the
// operator configured or discovered (never a URL a request names).
func redirect(w http.ResponseWriter, r *http.Request, where string) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	http.Redirect(w, r, where, http.StatusFound)
}

// secure reports whether the gateway's cookies need HTTPS: unless its
// own URL is plain http on a loopback host.
func (c *Connector) secure() bool {
	u, err := url.Parse(c.baseURL())
	if err != nil || u.Scheme != "http" {
		return true
	}
	switch u.Hostname() {
	case "127.0.0.1", "::1", "localhost":
		return false
	}
	return true
}

// open is the link: it starts the browser's sign-in at the gateway's
// identity provider, bound to the browser by a cookie.
func (c *Connector) open(w http.ResponseWriter, r *http.Request) {
	a, err := c.flows.signIn(r.Context(), r.PathValue("id"), c.cfg.Now())
	if err != nil {
		c.away(w, err)
		return
	}
	if a == nil {
		page(w, http.StatusGone, pageGone)
		return
	}
	name, path := c.cookie(a.f.id)
	http.SetCookie(w, &http.Cookie{
		Name: name, Value: a.cookie, Path: path, MaxAge: int(c.cfg.TTL / time.Second),
		HttpOnly: true, Secure: c.secure(), SameSite: http.SameSiteLaxMode,
	})
	cfg := c.signIn
	cfg.RedirectURL = c.baseURL() + "/connect/signin"
	redirect(w, r, cfg.AuthCodeURL(a.state, oauth2.S256ChallengeOption(a.verifier), oidc.Nonce(a.nonce)))
}

// attemptOf returns the attempt of r's state, forgotten (a state is used
// once), when r comes from the browser it is bound to; else it answers
// and returns nil.
func (c *Connector) attemptOf(w http.ResponseWriter, r *http.Request, upstream bool) *attempt {
	a, err := c.flows.take(r.Context(), r.URL.Query().Get("state"), c.cfg.Now())
	if err != nil {
		c.away(w, err)
		return nil
	}
	if a == nil || a.upstream != upstream {
		page(w, http.StatusBadRequest, pageBadState)
		return nil
	}
	name, _ := c.cookie(a.f.id)
	cookie, err := r.Cookie(name)
	if err != nil || !a.cookieMatches(cookie.Value) {
		c.events.WithLabelValues(a.f.upstream, "refused").Inc()
		page(w, http.StatusForbidden, pageBadState)
		return nil
	}
	return a
}

// away answers that the flows' store failed (err, logged).
func (c *Connector) away(w http.ResponseWriter, err error) {
	c.log.Warn("connect: the flows' store failed", "error", err)
	page(w, http.StatusServiceUnavailable, pageAway)
}

// signedIn is the identity provider's redirect: the ID token's subject
// must be the principal the link was made for; then the upstream's
// authorization starts.
func (c *Connector) signedIn(w http.ResponseWriter, r *http.Request) {
	a := c.attemptOf(w, r, false)
	if a == nil {
		return
	}
	f, q := a.f, r.URL.Query()
	refuse := func(status int, msg, why string) {
		c.events.WithLabelValues(f.upstream, "refused").Inc()
		c.log.Info("connect: a sign-in refused", "upstream", f.upstream, "why", why)
		page(w, status, msg)
	}
	if q.Get("error") != "" || q.Get("code") == "" {
		refuse(http.StatusForbidden, pageDenied, "the identity provider answered an error")
		return
	}
	ctx, cancel := context.WithTimeout(c.secureCtx, 30*time.Second)
	defer cancel()
	cfg := c.signIn
	cfg.RedirectURL = c.baseURL() + "/connect/signin"
	tok, err := cfg.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(a.verifier))
	if err != nil {
		refuse(http.StatusForbidden, pageFailed, "the identity provider refused the code")
		return
	}
	raw, _ := tok.Extra("id_token").(string)
	idt, err := c.idToken.Verify(ctx, raw)
	switch {
	case err != nil:
		refuse(http.StatusForbidden, pageFailed, "no valid ID token")
		return
	case idt.Nonce != a.nonce:
		refuse(http.StatusForbidden, pageFailed, "the ID token's nonce is not the sign-in's")
		return
	case idt.Issuer != f.issuer || idt.Subject != f.sub:
		refuse(http.StatusForbidden, pageOther, "signed in as another user than the link's")
		return
	}
	next, err := c.flows.authorize(r.Context(), a, c.cfg.Now())
	if err != nil {
		c.away(w, err)
		return
	}
	if next == nil {
		page(w, http.StatusGone, pageGone)
		return
	}
	up := c.ups[f.upstream]
	ucfg := up.oauth
	ucfg.RedirectURL = c.baseURL() + "/connect/callback"
	redirect(w, r, ucfg.AuthCodeURL(next.state, oauth2.S256ChallengeOption(next.verifier), oauth2.SetAuthURLParam("resource", up.Resource)))
}

// callback is the upstream's authorization server's redirect: the code,
// from the issuer expected, exchanged and stored in the vault.
func (c *Connector) callback(w http.ResponseWriter, r *http.Request) {
	a := c.attemptOf(w, r, true)
	if a == nil {
		return
	}
	f, q := a.f, r.URL.Query()
	up := c.ups[f.upstream]
	fail := func(msg, why string) {
		c.log.Info("connect: an authorization refused", "upstream", f.upstream, "why", why)
		c.flows.end(r.Context(), f, "refused")
		page(w, http.StatusForbidden, msg)
	}
	// RFC 9207: the response names its issuer when the server says it
	// does; any iss given must be the one this flow went to (mix-up).
	if iss := q.Get("iss"); (up.as.AuthorizationResponseIssParameterSupported && iss == "") || (iss != "" && iss != up.as.Issuer) {
		fail(pageFailed, "the authorization response's iss is not the upstream's authorization server")
		return
	}
	if q.Get("error") != "" || q.Get("code") == "" {
		fail(pageDenied, "the authorization server answered an error")
		return
	}
	ctx, cancel := context.WithTimeout(c.secureCtx, 30*time.Second)
	defer cancel()
	ucfg := up.oauth
	ucfg.RedirectURL = c.baseURL() + "/connect/callback"
	tok, err := ucfg.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(a.verifier), oauth2.SetAuthURLParam("resource", up.Resource))
	if err != nil {
		fail(pageFailed, "the authorization server refused the code")
		return
	}
	if err := c.vault.Save(ctx, f.principal, f.upstream, tok); err != nil {
		c.log.Warn("connect: the vault did not store the tokens", "upstream", f.upstream, "error", err)
		fail(pageFailed, "the vault refused the tokens")
		return
	}
	c.flows.end(r.Context(), f, "completed")
	c.log.Info("connect: an upstream authorized", "upstream", f.upstream)
	if f.session != nil && !f.waiting.Load() {
		nctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = f.session.Notify(nctx, "notifications/elicitation/complete", map[string]string{"elicitationId": f.elicitation})
	}
	page(w, http.StatusOK, pageDone)
}
