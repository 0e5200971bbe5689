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
