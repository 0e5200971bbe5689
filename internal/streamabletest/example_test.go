package streamabletest_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/vigil-mcp/vigil/internal/replication"
	"github.com/vigil-mcp/vigil/internal/streamabletest"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/protocol"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// Two replicas of one service share their sessions through a Cluster: a
// session initialized on one is served by the other.
func ExampleCluster() {
	cluster := streamabletest.NewCluster()
	var urls []string
	for _, name := range []string{"a", "b"} {
		srv := server.New()
		h := streamable.New(srv, streamable.WithCluster(replication.Config{Cluster: cluster.Replica(name)}))
		ts := httptest.NewServer(h)
		defer func() { ts.Close(); _ = h.Close(); _ = srv.Close() }()
		urls = append(urls, ts.URL)
	}
	post := func(url, sid, body string) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("MCP-Protocol-Version", protocol.Version20251125)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return resp
	}
	opened := post(urls[0], "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"`+protocol.Version20251125+`","capabilities":{},"clientInfo":{"name":"example","version":"1"}}}`)
	sid := opened.Header.Get("Mcp-Session-Id")
	fmt.Println("initialize on a:", opened.StatusCode)
	fmt.Println("initialized on b:", post(urls[1], sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`).StatusCode)
	fmt.Println("ping on b:", post(urls[1], sid, `{"jsonrpc":"2.0","id":2,"method":"ping"}`).StatusCode)
	fmt.Println("sessions in the cluster:", cluster.Sessions())
	http.DefaultClient.CloseIdleConnections()
	// Output:
	// initialize on a: 200
	// initialized on b: 202
	// ping on b: 200
	// sessions in the cluster: 1
}
