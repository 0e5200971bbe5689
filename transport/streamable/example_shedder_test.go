package streamable_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// overloaded is a Shedder that finds the process overloaded: it sheds
// every request asked about.
type overloaded struct{}

func (overloaded) Shed(context.Context) bool { return true }

// An Endpoint whose server has a Shedder (server.WithShedder) asks it
// before a request reaches a session, and answers the requests it sheds
// at once with 503 and Retry-After; initialize is never shed. A service
// gives the server transport.NewShedder(target), which sheds only while
// requests wait longer than target to be read, and its http.Server the
// ConnContext that lets it see that wait.
func ExampleNew_shedder() {
	srv := server.New(server.WithShedder(overloaded{}))
	defer func() { _ = srv.Close() }()
	h := streamable.New(srv)
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
	var answer struct {
		Error struct {
			Code    int
			Message string
			Data    struct {
				RetryAfterSeconds int
			}
		}
	}
	if err := json.Unmarshal(w.Body.Bytes(), &answer); err != nil {
		fmt.Println(err)
		return
	}
	e := answer.Error
	fmt.Println("tools/list:", w.Code, e.Code, e.Message)
	// The wait is 1 to 3 seconds at random, so that clients sent away
	// together come back apart; the header and the error say the same.
	wait := strconv.Itoa(e.Data.RetryAfterSeconds)
	fmt.Println("Retry-After agrees:", w.Header().Get("Retry-After") == wait, "1 to 3 s:", e.Data.RetryAfterSeconds >= 1 && e.Data.RetryAfterSeconds <= 3)
	// Output:
	// initialize: 200
	// tools/list: 503 -32000 server overloaded: retry later
	// Retry-After agrees: true 1 to 3 s: true
}
