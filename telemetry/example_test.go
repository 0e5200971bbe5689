package telemetry_test

import (
	"fmt"

	"github.com/vigil-mcp/vigil/telemetry"
)

// ExampleDurationBuckets prints the bucket boundaries, in seconds, of the
// request and session duration histograms.
func ExampleDurationBuckets() {
	fmt.Println(telemetry.DurationBuckets())
	// Output:
	// [0.01 0.02 0.05 0.1 0.2 0.5 1 2 5 10 30 60 120 300]
}

// ExampleMetricsConfig tunes the metrics of a gateway's server: its two
// upstreams label the request duration, and the histograms are native too.
func ExampleMetricsConfig() {
	mc := telemetry.MetricsConfig{Upstreams: []string{"files", "memory"}, NativeHistograms: true}
	fmt.Println(mc.Upstreams, mc.NativeHistograms)
	// Output:
	// [files memory] true
}
