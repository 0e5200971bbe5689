package oauth

import (
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
)

// checkTransport refuses raw, a URL this server fetches from the
// authorization server (issuer, jwks_uri, introspection_endpoint), unless
// it is https, or http on a loopback host, or allowHTTP. what names the URL
// in the error.
func checkTransport(what, raw string, allowHTTP bool) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("auth: %s: %w", what, err)
	}
	if u.Scheme == "https" || (u.Scheme == "http" && (allowHTTP || loopbackHost(u.Hostname()))) {
		return nil
	}
	if u.Scheme == "http" {
		return fmt.Errorf("auth: %s %q is plain http on a non-loopback host: anyone on the path could swap the keys "+
			"or read the client secret; use https (AllowInsecureHTTP, -auth-insecure-http, allows it for tests)", what, raw)
	}
	return fmt.Errorf("auth: %s %q is not an https URL", what, raw)
}

// loopbackHost reports whether host (a URL's Hostname) is localhost or a
// loopback address.
func loopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.Unmap().IsLoopback()
}

// guardRedirects returns a copy of c (nil: a client with the default
// timeout) that refuses a redirect to a URL checkTransport refuses, so that
// an https endpoint cannot hand the fetch over to plain http.
func guardRedirects(c *http.Client, allowHTTP bool) *http.Client {
	if c == nil {
		c = &http.Client{Timeout: defaultHTTPTimeout}
	}
	g := *c
	next := c.CheckRedirect
	g.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if err := checkTransport("redirect", req.URL.String(), allowHTTP); err != nil {
			return err
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
	return &g
}
