package benchservice_test

import (
	"fmt"

	"github.com/vigil-mcp/vigil/cmd/vigil-bench/internal/benchservice"
)

// The paired figure of a run: each vigil round over the floor round just
// before it, their median, and a 95% confidence interval of that median.
func ExampleMedianInterval() {
	floor := []float64{20000, 21000, 25000, 19000, 22000, 24000, 23000, 20000, 21000, 22000, 26000, 18000, 21000, 24000, 23000}
	vigil := []float64{17400, 17000, 21700, 16000, 19100, 20200, 20000, 17600, 17400, 19400, 21300, 15500, 18500, 20200, 19300}
	paired := benchservice.PairedRatios(floor, vigil)
	lo, hi, ok := benchservice.MedianInterval(paired, 0.95)
	fmt.Printf("median %.2f, interval %.2f-%.2f (%v)\n", benchservice.Median(paired), lo, hi, ok)
	// Output:
	// median 0.86, interval 0.84-0.87 (true)
}
