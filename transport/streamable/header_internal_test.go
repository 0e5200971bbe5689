package streamable

import (
	"net/http"
	"testing"
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
		{acceptBoth}, {acceptBothSwapped}, {"application/json,text/event-stream"},
		{"application/json; q=0.9, text/event-stream"}, {"application/json", "text/event-stream"},
		{"*/*"}, {"APPLICATION/JSON, TEXT/EVENT-STREAM"},
		{"application/json"}, {"text/event-stream"}, {"application/json, text/html"}, {""}, nil,
		{acceptBoth, "text/html"}, {"text/html", acceptBoth},
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
