package otelsetup

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOTLPHTTPRetries: an export the collector answers 503 or 429 is
// tried again until it is taken; one answered 400 is not, and its error
// names the status and what the collector said.
func TestOTLPHTTPRetries(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch n := calls.Add(1); {
		case r.URL.Path == "/bad":
			http.Error(w, "malformed", http.StatusBadRequest)
		case n == 1:
			http.Error(w, "busy", http.StatusServiceUnavailable)
		case n == 2:
			http.Error(w, "slow down", http.StatusTooManyRequests)
		}
	}))
	defer srv.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", srv.URL+"/v1/traces")
	c, err := newOTLPHTTP("TRACES", "/v1/traces")
	require.NoError(t, err)
	defer c.close()
	c.retryMin = time.Millisecond
	require.NoError(t, c.export(t.Context(), []byte{}))
	assert.EqualValues(t, 3, calls.Load(), "503, 429, then taken")

	calls.Store(0)
	c.url = srv.URL + "/bad"
	err = c.export(t.Context(), []byte{})
	require.ErrorContains(t, err, "400 Bad Request: malformed")
	assert.EqualValues(t, 1, calls.Load(), "a 400 is not retried")
}
