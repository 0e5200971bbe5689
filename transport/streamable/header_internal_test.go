package streamable

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"

	"github.com/vigil-mcp/vigil/transport"
)

// headerValue looks keys up as they are: each must be in the form net/http
// stores the headers it reads in, or a request's header would go unseen.
func TestHeaderKeysAreCanonical(t *testing.T) {
	for _, key := range []string{headerSessionID, headerProtocolVersion, headerMethod, headerName, headerContentType, headerAccept, headerOrigin} {
		if got := http.CanonicalHeaderKey(key); got != key {
			t.Errorf("%q is not canonical: net/http stores it as %q", key, got)
		}
	}
}

func TestHeaderValueIsGet(t *testing.T) {
	h := http.Header{}
	h.Set("MCP-Protocol-Version", "2026-07-28") // as a client spells it
	h.Add("mcp-session-id", "first")
	h.Add("Mcp-Session-Id", "second")
	for _, key := range []string{headerProtocolVersion, headerSessionID, headerOrigin} {
		if got, want := headerValue(h, key), h.Get(key); got != want {
			t.Errorf("headerValue(%q) = %q, Get = %q", key, got, want)
		}
	}
	if got := headerValue(h, headerSessionID); got != "first" {
		t.Errorf("headerValue(%q) = %q, want the first value", headerSessionID, got)
	}
}

// acceptsPostAnswers answers as the two accepts checks it stands for, for
// the header values it recognizes without parsing and for the others.
func TestAcceptsPostAnswers(t *testing.T) {
	for _, values := range [][]string{
		{acceptBoth},
		{acceptBothSwapped},
		{"application/json,text/event-stream"},
		{"application/json; q=0.9, text/event-stream"},
		{"application/json", "text/event-stream"},
		{"*/*"},
		{"APPLICATION/JSON, TEXT/EVENT-STREAM"},
		{"application/json"},
		{"text/event-stream"},
		{"application/json, text/html"},
		{""},
		nil,
		{acceptBoth, "text/html"},
		{"text/html", acceptBoth},
	} {
		r, err := http.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", nil)
		if err != nil {
			t.Fatal(err)
		}
		r.Header[headerAccept] = values
		want := accepts(r, "application/json") && accepts(r, "text/event-stream")
		if got := acceptsPostAnswers(r); got != want {
			t.Errorf("Accept %q: acceptsPostAnswers %v, accepts both %v", values, got, want)
		}
	}
}

// requestOn is a request for host, arriving on a listener at local.
func requestOn(t *testing.T, local, host, origin string) *http.Request {
	t.Helper()
	r, err := http.NewRequest(http.MethodPost, "http://"+host+"/mcp", nil)
	if err != nil {
		t.Fatal(err)
	}
	r.Host = host
	if origin != "" {
		r.Header.Set("Origin", origin)
	}
	return r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, &net.TCPAddr{IP: net.ParseIP(local), Port: 8080}))
}

// A host is remembered only when its name alone allowed it: a host allowed
// because the listener is not on loopback stays refused on loopback.
func TestHostAllowedRemembersNamesOnly(t *testing.T) {
	h := New(nil)
	for _, c := range []struct {
		local, host, origin string
		want                bool
	}{
		{"127.0.0.1", "localhost:8080", "", true},
		{"127.0.0.1", "localhost:8080", "", true}, // remembered
		{"127.0.0.1", "evil.example:8080", "", false},
		{"10.0.0.1", "evil.example:8080", "", true}, // a public listener: not by its name
		{"127.0.0.1", "evil.example:8080", "", false},
		{"127.0.0.1", "localhost:8080", "", true},
		{"127.0.0.1", "localhost:8080", "http://localhost:3000", true},
		{"127.0.0.1", "localhost:8080", "http://evil.example", false},
		{"10.0.0.1", "localhost:8080", "http://evil.example", false},      // Origin is checked on every listener
		{"10.0.0.1", "mcp.example:8080", "http://mcp.example:8080", true}, // same origin
		{"10.0.0.1", "mcp.example:8080", "http://MCP.example:8080", true},
		{"10.0.0.1", "mcp.example:8080", "http://mcp.example:9090", false},
		{"127.0.0.1", "localhost:8080", "http://evil.example", false},
		{"127.0.0.1", "localhost:8080", "http://localhost:3000", true},
	} {
		r := requestOn(t, c.local, c.host, c.origin)
		if got := h.hostAllowed(r) && h.originAllowed(r); got != c.want {
			t.Errorf("on %s, Host %s, Origin %q: allowed %v, want %v", c.local, c.host, c.origin, got, c.want)
		}
	}

	listed := New(nil, WithAllowedHosts("api.example"))
	for _, c := range []struct {
		host string
		want bool
	}{{"api.example:443", true}, {"api.example:443", true}, {"other.example", false}, {"API.EXAMPLE", true}, {"other.example", false}} {
		if got := listed.hostAllowed(requestOn(t, "10.0.0.1", c.host, "")); got != c.want {
			t.Errorf("listed, Host %s: allowed %v, want %v", c.host, got, c.want)
		}
	}
}

// errAnswered reads, to errors.Is and as text, as the wrapping of
// transport.ErrPeerGone and io.EOF it stands for, alone or wrapped.
func TestErrAnsweredIs(t *testing.T) {
	wrapped := fmt.Errorf("streamable: read: %w: %w", transport.ErrPeerGone, io.EOF)
	if errAnswered.Error() != wrapped.Error() {
		t.Errorf("errAnswered says %q, want %q", errAnswered, wrapped)
	}
	for _, err := range []error{errAnswered, fmt.Errorf("session: %w", errAnswered), errors.Join(errors.New("x"), errAnswered)} {
		for _, target := range []error{transport.ErrPeerGone, io.EOF, transport.ErrClosed, transport.ErrStreamGone, errors.New("other")} {
			if got, want := errors.Is(err, target), errors.Is(wrapped, target); got != want {
				t.Errorf("errors.Is(%v, %v) = %v, want %v", err, target, got, want)
			}
		}
	}
}
