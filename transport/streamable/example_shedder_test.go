package streamable_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// overloaded is a Shedder that finds the process overloaded: it sheds
// every request asked about.
type overloaded struct{}

func (overloaded) Shed() bool { return true }

// An Endpoint given a Shedder answers the requests it sheds at once with
// 503 and Retry-After; initialize is never shed. A service gives it
// transport.NewShedder(target), which sheds only while the Go scheduler is
// saturated.
func ExampleWithShedder() {
	srv := server.New()
	defer func() { _ = srv.Close() }()
	h := streamable.New(srv, streamable.WithShedder(overloaded{}))
	defer func() { _ = h.Close() }()

	post := func(sid, body string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, "http://localhost/mcp", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		if sid != "" {
			r.Header.Set("Mcp-Session-Id", sid)
			r.Header.Set("MCP-Protocol-Version", "2025-11-25")
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	w := post("", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`)
	fmt.Println("initialize:", w.Code)
	sid := w.Header().Get("Mcp-Session-Id")
	post(sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	w = post(sid, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	fmt.Println("tools/list:", w.Code, "Retry-After", w.Header().Get("Retry-After"))
	fmt.Print(w.Body.String())
	// Output:
	// initialize: 200
	// tools/list: 503 Retry-After 1
	// {"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"server overloaded: retry later","data":{"retryAfterSeconds":1}}}
}
