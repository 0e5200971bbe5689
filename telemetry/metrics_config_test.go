package telemetry_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/vigil-mcp/vigil/internal/mcpconv"
	"github.com/vigil-mcp/vigil/internal/metrics"
	"github.com/vigil-mcp/vigil/telemetry"
)

// The constants users see are the values the collector uses: written
// here as literals, so that the API names no internal package, and held
// to the collector's by this test.
func TestConstantsAreTheCollectors(t *testing.T) {
	assert.Equal(t, mcpconv.TransportStdio, telemetry.TransportStdio)
	assert.Equal(t, mcpconv.TransportStreamableHTTP, telemetry.TransportStreamableHTTP)
	assert.Equal(t, mcpconv.TransportMemory, telemetry.TransportMemory)
	assert.Equal(t, metrics.DefaultExemplarInterval, telemetry.DefaultExemplarInterval)
	assert.Equal(t, metrics.DefaultMaxNativeBuckets, telemetry.DefaultMaxNativeBuckets)
}
