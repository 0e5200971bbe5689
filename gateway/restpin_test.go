package gateway_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/gateway"
	"github.com/vigil-mcp/vigil/internal/testkit"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/server/mcptest"
)

// pinnedREST mounts the OpenAPI description as the upstream pets, pinned
// as file says, with lock (nil: none), its audit log to audit (nil:
// none).
func pinnedREST(t *testing.T, api, description, file string, lock []byte, audit *logSink) (*mcptest.Client, *gateway.Gateway) {
	t.Helper()
	cat, err := gateway.ParseCatalog([]byte(file))
	require.NoError(t, err)
	if lock != nil {
		cat, err = cat.WithLock(lock)
		require.NoError(t, err)
	}
	srv := server.New()
	gc := gateway.Config{Upstreams: []gateway.Upstream{{Name: "pets", OpenAPI: []byte(description), URL: api}}, Catalog: cat, Logger: slog.New(slog.DiscardHandler)}
	if audit != nil {
		gc.AuditLog = audit
	}
	g, err := gateway.Mount(t.Context(), srv, gc)
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = g.Close(), srv.Close() })
	return mcptest.Connect(t, srv), g
}

// TestOpenAPIPin checks the catalog lock of an OpenAPI upstream: it holds
// the description's digest in each tool's definition; a description
// changed between two starts in what no tool's definition shows (the
// operation's path) is a changed tool: under warn served, logged to the
// audit log and on the live page; under hold withheld, neither listed
// nor callable; the same description again is no change.
func TestOpenAPIPin(t *testing.T) {
	testkit.Watchdog(t)
	seen := make(chan string, 10)
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- r.Method + " " + r.URL.Path
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{}`))
	}))
	t.Cleanup(api.Close)
	const warn, hold = "upstreams:\n  pets:\n    pin: warn\n", "upstreams:\n  pets:\n    pin: hold\n"
	before := petsDescription
	after := strings.Replace(petsDescription, `"/pets/{petId}"`, `"/admin/pets/{petId}"`, 1) // a rug pull no tool definition shows
	require.NotEqual(t, before, after)

	_, g := pinnedREST(t, api.URL, before, warn, nil, nil)
	lock := g.Lock()
	sum := sha256.Sum256([]byte(before))
	assert.Contains(t, string(lock), `"openapi": "sha256:`+hex.EncodeToString(sum[:])+`"`, "the lock holds the description's digest")

	audit := newLogSink()
	_, g = pinnedREST(t, api.URL, before, warn, lock, audit)
	assert.Empty(t, g.Upstreams()[0].PinChanges, "the same description: no change")
	assert.Empty(t, audit.all())

	c, g := pinnedREST(t, api.URL, after, warn, lock, audit)
	assert.Equal(t, []string{"getPet"}, g.Upstreams()[0].PinChanges, "a changed description is a changed tool")
	audit.await(t, "catalog_pin_change", 1)
	var line struct{ Tool, Change, Decision string }
	require.NoError(t, json.Unmarshal([]byte(audit.all()[0]), &line))
	assert.Equal(t, struct{ Tool, Change, Decision string }{"getPet", "changed", "served"}, line)
	require.False(t, c.CallTool("getPet", map[string]any{"petId": "rex"}).IsError, "warn serves it")
	assert.Equal(t, "GET /admin/pets/rex", <-seen)

	c, _ = pinnedREST(t, api.URL, after, hold, lock, nil)
	_, ok := description(c, "getPet")
	assert.False(t, ok, "hold withholds it, though its definition's text and schemas are the approved ones")
	_, rpcErr := c.Call("tools/call", map[string]any{"name": "getPet", "arguments": map[string]any{"petId": "rex"}})
	require.NotNil(t, rpcErr)
	assert.Contains(t, rpcErr.Message, "unknown tool")
	select {
	case r := <-seen:
		t.Fatalf("a withheld tool reached the API: %s", r)
	default:
	}

	c, _ = pinnedREST(t, api.URL, before, hold, lock, nil)
	_, ok = description(c, "getPet")
	assert.True(t, ok, "the approved description is served under hold")
}
