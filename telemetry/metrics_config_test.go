package telemetry_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/vigil-mcp/vigil/internal/mcpconv"
	"github.com/vigil-mcp/vigil/internal/metrics"
	"github.com/vigil-mcp/vigil/telemetry"
)

// The constants users see are the values the collector uses: written
// here as literals, so that the API names no internal package, and held
// to the collector's by this test, as are the defaults MetricsConfig's
// doc states (one exemplar a second, 160 native buckets).
func TestConstantsAreTheCollectors(t *testing.T) {
	assert.Equal(t, mcpconv.TransportStdio, telemetry.TransportStdio)
	assert.Equal(t, mcpconv.TransportStreamableHTTP, telemetry.TransportStreamableHTTP)
	assert.Equal(t, mcpconv.TransportMemory, telemetry.TransportMemory)
	assert.Equal(t, time.Second, metrics.DefaultExemplarInterval)
	assert.Equal(t, 160, metrics.DefaultMaxNativeBuckets)
}
