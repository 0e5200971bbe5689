package benchkit

import (
	"syscall"
	"time"
)

// ProcessCPU returns the CPU time, user and system, the calling process
// has used so far: the handler benchmarks report it per request
// ("cpu-ns/op"), which counts what runs beside the benchmark's goroutine
// (the garbage collector, the server's outcome batches) as ns/op does not.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
