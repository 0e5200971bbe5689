package streamable_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/transport/streamable"
)

// htFuzzStatuses are the statuses a POST may get.
var htFuzzStatuses = map[int]bool{
	http.StatusOK: true, http.StatusAccepted: true, http.StatusBadRequest: true, http.StatusNotFound: true,
	http.StatusConflict: true, http.StatusRequestEntityTooLarge: true, http.StatusUnsupportedMediaType: true,
	http.StatusTooManyRequests: true, http.StatusServiceUnavailable: true,
}

// htFuzzPost serves one POST on h through a recorder.
func htFuzzPost(ctx context.Context, h http.Handler, body []byte, contentType, version, sessionID, method string) *httptest.ResponseRecorder {
	req := httptest.NewRequestWithContext(ctx, http.MethodPost, "http://localhost/mcp", bytes.NewReader(body))
	req.Host = "localhost"
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range map[string]string{"Content-Type": contentType, "MCP-Protocol-Version": version, "Mcp-Session-Id": sessionID, "Mcp-Method": method} {
		if v != "" {
			req.Header.Set(k, v)
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// FuzzPOST posts arbitrary bodies with arbitrary Content-Type,
// MCP-Protocol-Version, Mcp-Session-Id and Mcp-Method headers to one
// Endpoint: it never panics, answers with an expected status, a 202 has no
// body, an unknown session's 404 is plain text, and every other body is
// JSON-RPC (one message, or SSE events that each carry one). The session id "S" names a live, initialized session.
func FuzzPOST(f *testing.F) {
	srv := htServer(f)
	h := streamable.New(srv, streamable.WithMaxSessions(16), streamable.WithMaxBodyBytes(64<<10))
	f.Cleanup(func() {
		_ = h.Close()
		_ = srv.Close()
	})
	rec := htFuzzPost(f.Context(), h, []byte(htInitBody(`{}`)), "application/json", "", "", "")
	require.Equal(f, http.StatusOK, rec.Code, "%s", rec.Body)
	sid := rec.Header().Get("Mcp-Session-Id")
	require.NotEmpty(f, sid)
	rec = htFuzzPost(f.Context(), h, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), "application/json", htVersion, sid, "")
	require.Equal(f, http.StatusAccepted, rec.Code)

	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`), "application/json", htVersion, "S", "")

	f.Fuzz(func(t *testing.T, body []byte, contentType, version, sessionID, method string) {
		if sessionID == "S" {
			sessionID = sid
		}
		// A request that may legitimately wait (subscriptions/listen) ends
		// with its client.
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		defer cancel()
		rec := htFuzzPost(ctx, h, body, contentType, version, sessionID, method)
		res := rec.Result()
		out := rec.Body.Bytes()
		if !htFuzzStatuses[res.StatusCode] {
			t.Fatalf("status %d for %q; body: %s", res.StatusCode, body, out)
		}
		switch ct := res.Header.Get("Content-Type"); {
		case res.StatusCode == http.StatusAccepted:
			if len(out) != 0 {
				t.Fatalf("202 with a body: %s", out)
			}
		case res.StatusCode == http.StatusNotFound && ct == "text/plain; charset=utf-8":
			// An unknown session: plain text, so that clients see the session's
			// end rather than one call refused (refuseUnknownSession).
			if string(out) != "unknown or terminated session\n" {
				t.Fatalf("404 in plain text: %q", out)
			}
		case ct == "text/event-stream":
			if res.StatusCode != http.StatusOK {
				t.Fatalf("SSE with status %d", res.StatusCode)
			}
			sc := bufio.NewScanner(bytes.NewReader(out))
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				if data, ok := bytes.CutPrefix(sc.Bytes(), []byte("data:")); ok && len(bytes.TrimSpace(data)) > 0 && !htFuzzIsMessage(data) {
					t.Fatalf("SSE event data is not a JSON-RPC message: %s", data)
				}
			}
		default:
			if len(out) == 0 {
				if res.StatusCode == http.StatusOK {
					t.Fatalf("200 with an empty body for %q", body)
				}
				return
			}
			if ct != "application/json" {
				t.Fatalf("Content-Type %q; body: %s", ct, out)
			}
			if !htFuzzIsMessage(out) {
				t.Fatalf("body is not a JSON-RPC message: %s", out)
			}
			if res.StatusCode >= 400 && !bytes.Contains(out, []byte(`"error":{"code":`)) {
				t.Fatalf("status %d without a JSON-RPC error: %s", res.StatusCode, out)
			}
		}
	})
}

// htFuzzIsMessage reports whether data is one JSON-RPC 2.0 object.
func htFuzzIsMessage(data []byte) bool {
	var m struct {
		JSONRPC string `json:"jsonrpc"`
	}
	return json.Valid(data) && json.Unmarshal(data, &m) == nil && m.JSONRPC == "2.0"
}
