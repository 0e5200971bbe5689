package vigil_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil"
	"github.com/vigil-mcp/vigil/server"
)

// metricsAtStartMaxBytes bounds /metrics of the README's first program at
// start, in either exposition format: one scrape of a small server stays
// small, its help text one sentence a metric (docs/operations.md has the
// rest).
const metricsAtStartMaxBytes = 40 << 10

// TestMetricsAtStartAreSmall builds the README's first program (a service
// with one typed tool) and reads /metrics as Prometheus and as curl do,
// before any request: each is under metricsAtStartMaxBytes.
func TestMetricsAtStartAreSmall(t *testing.T) {
	svc := vigil.New("weather", "1.0.0")
	require.NoError(t, svc.Err())
	require.NoError(t, server.AddTypedTool(svc.Server, server.Tool{Name: "forecast"}, func(_ context.Context, _ *server.CallToolRequest, in struct {
		City string `json:"city" jsonschema:"the city to forecast"`
	},
	) (string, error) {
		return "sunny in " + in.City, nil
	}))
	svc.Endpoint() // serving HTTP makes the series of its transport
	t.Cleanup(func() { _ = svc.Shutdown(context.Background()) })
	for _, accept := range []string{"", "application/openmetrics-text; version=1.0.0; charset=utf-8"} {
		req := httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/metrics", nil)
		req.Host = "127.0.0.1:9090"
		req.Header.Set("Accept", accept)
		rec := httptest.NewRecorder()
		svc.AdminHandler().ServeHTTP(rec, req)
		require.Equal(t, http.StatusOK, rec.Code)
		body, err := io.ReadAll(rec.Body)
		require.NoError(t, err)
		t.Logf("Accept %q: %d bytes", accept, len(body))
		assert.Less(t, len(body), metricsAtStartMaxBytes, "/metrics at start (Accept %q)", accept)
	}
}
