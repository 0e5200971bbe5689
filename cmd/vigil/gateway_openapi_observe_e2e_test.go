package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGatewayOpenAPIObserved is what vigil tells of a REST upstream's
// call: the audit log's line, as any tools/call's; the live page's line
// of the upstream, its state, REST API and its tool count; and the
// call's HTTP client span among /debug/vigil's traces, named by the
// operation's method and path template, whose trace context the API got.
func TestGatewayOpenAPIObserved(t *testing.T) {
	traceparents := make(chan string, 4)
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		traceparents <- r.Header.Get("Traceparent")
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":7}`)
	}))
	defer api.Close()
	dir := t.TempDir()
	spec, audit := filepath.Join(dir, "pets.yaml"), filepath.Join(dir, "audit.jsonl")
	require.NoError(t, os.WriteFile(spec, []byte(`openapi: 3.0.3
info: {title: pets, version: "1"}
servers: [{url: "`+api.URL+`/v3"}]
paths:
  /pet/{petId}:
    get:
      operationId: getPetById
      parameters: [{name: petId, in: path, required: true, schema: {type: string}}]
      responses: {"200": {description: ok}}
    delete:
      operationId: deletePet
      parameters: [{name: petId, in: path, required: true, schema: {type: string}}]
      responses: {"204": {description: gone}}
`), 0o600))
	svc := startService(t, "-http", "127.0.0.1:0", "-upstream", "pets=openapi:"+spec, "-audit-log", audit)
	hc := &http.Client{Timeout: 30 * time.Second}
	defer hc.CloseIdleConnections()
	c := &svcClient{hc: hc, url: svc.base + "/mcp"}
	m, err := c.rpc("1", "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}`)
	require.NoError(t, err)
	require.Nil(t, m.Error)
	require.NoError(t, c.notify("notifications/initialized"))
	m, err = c.rpc("2", "tools/call", `{"name":"getPetById","arguments":{"petId":"7"}}`)
	require.NoError(t, err)
	require.Nil(t, m.Error)
	traceparent := <-traceparents
	require.NotEmpty(t, traceparent, "the API gets the trace context")

	var line map[string]any
	svcEventually(t, "the call's audit line", 10*time.Second, func() (bool, error) {
		b, err := os.ReadFile(audit)
		if err != nil || !strings.Contains(string(b), "getPetById") {
			return false, err
		}
		return true, json.Unmarshal([]byte(strings.TrimSpace(string(b))), &line)
	})
	assert.Equal(t, "getPetById", line["tool"])
	assert.Equal(t, "ok", line["outcome"])
	assert.Equal(t, []any{"petId"}, line["arguments"])

	html := debugBody(t, hc, svc.base+"/debug/vigil?refresh=0")
	assert.Contains(t, html, "upstream pets: ready · REST API · tools 2 · starts")

	var snap struct {
		Traces []struct {
			Spans []struct {
				Name       string            `json:"name"`
				Attributes map[string]string `json:"attributes"`
			} `json:"spans"`
		} `json:"traces"`
	}
	require.NoError(t, json.Unmarshal([]byte(debugBody(t, hc, svc.base+"/debug/vigil?format=json")), &snap))
	found := false
	for _, tr := range snap.Traces {
		for _, s := range tr.Spans {
			if s.Name == "GET /pet/{petId}" {
				found = true
				assert.Equal(t, "200", s.Attributes["http.response.status_code"])
				assert.Equal(t, api.URL+"/v3/pet/7", s.Attributes["url.full"])
			}
		}
	}
	assert.True(t, found, "the REST call's span is on the live page: %s", html)
}
