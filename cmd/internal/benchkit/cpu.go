package benchkit

import (
	"time"

	"github.com/vigil-mcp/vigil/internal/cputime"
)

// ProcessCPU returns the CPU time, user and system, the calling process
// has used so far: the handler benchmarks report it per request
// ("cpu-ns/op"), which counts what runs beside the benchmark's goroutine
// (the garbage collector, the server's outcome batches) as ns/op does not.
func ProcessCPU() time.Duration { return cputime.Process() }
