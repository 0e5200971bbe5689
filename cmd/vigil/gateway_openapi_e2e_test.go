package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGatewayOpenAPIUpstream is the REST upstream end to end: vigil
// -upstream 'pets=openapi:FILE' -upstream-header lists the description's
// operations as tools and forwards a call to the API at the
// description's server, with the operator's header and a path value kept
// in its segment, the API's JSON answer as structured content.
func TestGatewayOpenAPIUpstream(t *testing.T) {
	got := make(chan string, 4)
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Method + " " + r.URL.EscapedPath() + " " + r.Header.Get("X-Api-Key")
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":7,"name":"rex"}`)
	}))
	defer api.Close()
	spec := filepath.Join(t.TempDir(), "pets.yaml")
	require.NoError(t, os.WriteFile(spec, []byte(`openapi: 3.0.3
info: {title: pets, version: "1"}
servers: [{url: "`+api.URL+`/v3"}]
paths:
  /pet/{petId}:
    get:
      operationId: getPetById
      parameters: [{name: petId, in: path, required: true, schema: {type: string}}]
      responses:
        "200":
          description: ok
          content: {application/json: {schema: {type: object, properties: {id: {type: integer}, name: {type: string}}}}}
    delete:
      operationId: deletePet
      parameters: [{name: petId, in: path, required: true, schema: {type: string}}]
      responses: {"204": {description: gone}}
`), 0o600))
	svc := startService(t, "-http", "127.0.0.1:0", "-upstream", "pets=openapi:"+spec, "-upstream-header", "pets=X-Api-Key=key-7f3a9c", "-log-level", "debug")
	hc := &http.Client{Timeout: 30 * time.Second}
	defer hc.CloseIdleConnections()
	c := &svcClient{hc: hc, url: svc.base + "/mcp"}
	m, err := c.rpc("1", "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}`)
	require.NoError(t, err)
	require.Nil(t, m.Error)
	require.NoError(t, c.notify("notifications/initialized"))

	m, err = c.rpc("2", "tools/list", `{}`)
	require.NoError(t, err)
	require.Nil(t, m.Error)
	var list struct {
		Tools []struct {
			Name        string
			Annotations map[string]any
		}
	}
	require.NoError(t, json.Unmarshal(m.Result, &list))
	require.Len(t, list.Tools, 2)
	assert.Equal(t, "getPetById", list.Tools[0].Name)
	assert.Equal(t, map[string]any{"readOnlyHint": true}, list.Tools[0].Annotations)
	assert.Equal(t, "deletePet", list.Tools[1].Name)

	m, err = c.rpc("3", "tools/call", `{"name":"getPetById","arguments":{"petId":"a/../b"}}`)
	require.NoError(t, err)
	require.Nil(t, m.Error)
	assert.JSONEq(t, `{"content":[{"type":"text","text":"{\"id\":7,\"name\":\"rex\"}"}],"structuredContent":{"id":7,"name":"rex"}}`, string(m.Result))
	assert.Equal(t, "GET /v3/pet/a%2F..%2Fb key-7f3a9c", <-got)
	assert.NotContains(t, svc.logs.String(), "key-7f3a9c", "the operator's key is not logged, even at debug")
}
