package vigil_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/vigil-mcp/vigil"
	"github.com/vigil-mcp/vigil/server"
)

// A service with one typed tool, mounted on servers of one's own (here
// httptest's; ListenAndServe makes its own): a client calls the tool, and
// the live page counts the call and keeps its trace, in the page's ring
// since OTEL_* names no exporter.
func Example() {
	svc := vigil.New("weather", "1.0.0")
	_ = server.AddTypedTool(svc.Server, server.Tool{Name: "forecast", Description: "Tomorrow's weather."},
		func(_ context.Context, _ *server.CallToolRequest, in struct {
			City string `json:"city"`
		},
		) (string, error) {
			return "sunny in " + in.City, nil
		})
	mcp := httptest.NewServer(svc.Endpoint())
	admin := httptest.NewServer(svc.AdminHandler())
	defer admin.Close()
	defer mcp.Close()

	session := ""
	post := func(body string) string {
		req, _ := http.NewRequest(http.MethodPost, mcp.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
			req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err.Error()
		}
		defer func() { _ = resp.Body.Close() }()
		if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
			session = id
		}
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"example","version":"1"}}}`)
	post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	answer := post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"forecast","arguments":{"city":"Lyon"}}}`)
	fmt.Println(strings.Contains(answer, "sunny in Lyon"))

	resp, err := http.Get(admin.URL + "/debug/vigil?format=json")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = resp.Body.Close() }()
	var view struct {
		Stats []struct {
			Key   string `json:"key"`
			Total struct {
				Requests uint64 `json:"requests"`
			} `json:"since_start"`
		} `json:"stats"`
		TracesKept int `json:"traces_kept_count"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&view); err != nil {
		fmt.Println(err)
		return
	}
	for _, row := range view.Stats {
		if row.Total.Requests > 0 {
			fmt.Printf("%s: %d\n", row.Key, row.Total.Requests)
		}
	}
	fmt.Println("kept traces:", view.TracesKept)
	fmt.Println(svc.Shutdown(context.Background()))
	// Output:
	// true
	// initialize: 1
	// tools/call forecast: 1
	// kept traces: 3
	// <nil>
}
