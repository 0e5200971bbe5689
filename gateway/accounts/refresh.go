package accounts

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"golang.org/x/oauth2"
)

// Refresh failure reasons, the label of the failures' metric.
const (
	reasonRefused     = "refused"     // invalid_grant: authorize again
	reasonExpired     = "expired"     // expired without a refresh token
	reasonMoved       = "moved"       // the upstream's client names another endpoint or resource
	reasonRejected    = "rejected"    // another OAuth error (a misconfigured client)
	reasonUnavailable = "unavailable" // no answer, or a 5xx
	reasonStore       = "store"       // the refreshed entry could not be stored
)

var refreshReasons = []string{reasonRefused, reasonExpired, reasonMoved, reasonRejected, reasonUnavailable, reasonStore}

// refresh refreshes e, the entry of (principal, upstream) at version,
// under the Store's lease, stores the result and returns its access
// token; refused when an upstream refused e's access token, which a
// failed refresh then does not return.
func (v *Vault) refresh(ctx context.Context, principal, upstream string, c *Client, e *entry, version uint64, refused bool) (secret, error) {
	if e.refresh == "" {
		return v.forget(ctx, principal, upstream, version, reasonExpired, "expired, without a refresh token")
	}
	if e.tokenURL != c.TokenURL || e.resource != c.Resource {
		return v.forget(ctx, principal, upstream, version, reasonMoved, "was authorized at another token endpoint or for another resource")
	}
	rctx, cancel := context.WithTimeout(ctx, refreshBudget)
	defer cancel()
	rctx = context.WithValue(rctx, oauth2.HTTPClient, v.resourceClient(c.Resource))
	conf := oauth2.Config{
		ClientID: c.ClientID, ClientSecret: c.ClientSecret, Scopes: c.Scopes,
		Endpoint: oauth2.Endpoint{TokenURL: c.TokenURL, AuthStyle: c.AuthStyle},
	}
	now := v.now()
	tok, err := conf.TokenSource(rctx, &oauth2.Token{RefreshToken: string(e.refresh)}).Token()
	if err != nil {
		reason, why := classify(err)
		if reason == reasonRefused {
			return v.forget(ctx, principal, upstream, version, reason, "refused the refresh token")
		}
		v.metrics.failed(upstream, reason)
		v.logger.Warn("accounts: a refresh failed", "upstream", upstream, "reason", reason, "detail", why)
		if now.Before(e.expiry) && !refused {
			return e.access, nil // still valid: the next call tries again
		}
		return "", fmt.Errorf("accounts: refreshing the token of %s: %s", upstream, why)
	}
	if tok.AccessToken == "" {
		v.metrics.failed(upstream, reasonRejected)
		return "", fmt.Errorf("accounts: refreshing the token of %s: the answer has no access token", upstream)
	}
	n := &entry{
		access: secret(tok.AccessToken), refresh: secret(tok.RefreshToken), tokenType: tok.Type(),
		expiry: expiry(tok, now), issued: now, obtained: e.obtained, scopes: e.scopes,
		tokenURL: e.tokenURL, resource: e.resource,
	}
	if s, ok := tok.Extra("scope").(string); ok && s != "" {
		n.scopes = strings.Fields(s)
	}
	if err := n.check(); err != nil {
		v.metrics.failed(upstream, reasonRejected)
		return "", err
	}
	stored, err := v.store.Put(ctx, principal, upstream, n.encode(), version, v.max, n.ttl(now))
	switch {
	case err != nil:
		// The refresh token the authorization server rotated is lost:
		// the next refresh may be refused, and the user authorizes
		// again.
		v.metrics.failed(upstream, reasonStore)
		v.logger.Warn("accounts: a refreshed token could not be stored", "upstream", upstream, "error", err)
	case !stored:
		// A newer authorization replaced the entry meanwhile: it stays.
		v.logger.Info("accounts: the entry changed during its refresh: the newer one stays", "upstream", upstream)
	}
	v.metrics.refreshed(upstream)
	v.logger.Debug("accounts: refreshed", "upstream", upstream, "entry", n)
	return n.access, nil
}

// oauthCode matches an RFC 6749 error code worth repeating: the
// authorization server's bytes are not echoed otherwise.
var oauthCode = regexp.MustCompile(`^[a-z_]{1,40}$`)

// classify returns the failure reason of a refresh's err and a
// description of it that holds no byte of the answer's body.
func classify(err error) (reason, why string) {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		status := 0
		if re.Response != nil {
			status = re.Response.StatusCode
		}
		code := re.ErrorCode
		if !oauthCode.MatchString(code) {
			code = "no error code"
		}
		switch {
		case re.ErrorCode == "invalid_grant":
			return reasonRefused, "invalid_grant"
		case status >= 500 || status == http.StatusTooManyRequests:
			return reasonUnavailable, fmt.Sprintf("the authorization server answered %d (%s)", status, code)
		default:
			return reasonRejected, fmt.Sprintf("the authorization server answered %d (%s)", status, code)
		}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return reasonUnavailable, "the authorization server did not answer in time"
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return reasonUnavailable, "the authorization server did not answer: " + ue.Err.Error()
	}
	return reasonUnavailable, "the authorization server's answer is not a token"
}

// resourceClient returns the HTTP client of a refresh, which adds the
// RFC 8707 resource to the request's form (x/oauth2 sends no parameter of
// its own with a refresh).
func (v *Vault) resourceClient(resource string) *http.Client {
	if resource == "" {
		return v.http
	}
	hc := *v.http
	base := hc.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	hc.Transport = resourceTransport{base: base, resource: resource}
	return &hc
}

// resourceTransport adds resource to the form of each POST it sends.
type resourceTransport struct {
	base     http.RoundTripper
	resource string
}

// maxFormBytes bounds the refresh form read back to add the resource.
const maxFormBytes = 64 << 10

func (t resourceTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method != http.MethodPost || r.Body == nil {
		return t.base.RoundTrip(r)
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, maxFormBytes+1))
	_ = r.Body.Close()
	if err != nil || len(b) > maxFormBytes {
		return nil, errors.New("accounts: the refresh form cannot be read")
	}
	form, err := url.ParseQuery(string(b))
	if err != nil {
		return nil, errors.New("accounts: the refresh form does not parse")
	}
	form.Set("resource", t.resource)
	body := form.Encode()
	r = r.Clone(r.Context())
	r.Body = io.NopCloser(strings.NewReader(body))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(body)), nil }
	r.ContentLength = int64(len(body))
	return t.base.RoundTrip(r)
}
